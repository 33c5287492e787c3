//! `--workload smallbank` (not built yet).

use super::super::{Ctx, Measurement};
use super::Given;
use multiverse::Database;

/// Flags of the smallbank workload.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct Flags {}

impl Given for Flags {
    fn given(&self) -> Vec<&'static str> {
        Vec::new()
    }
}

/// Runs the smallbank workload.
pub fn run(_f: &Flags, _c: &Ctx, _db: &Database) -> Result<Measurement, String> {
    Err("workload smallbank is not built yet".into())
}
