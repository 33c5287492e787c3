//! `--workload tatp` (not built yet).

use super::super::{Ctx, Measurement};
use super::Given;
use multiverse::Database;

/// Flags of the tatp workload.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct Flags {}

impl Given for Flags {
    fn given(&self) -> Vec<&'static str> {
        Vec::new()
    }
}

/// Runs the tatp workload.
pub fn run(_f: &Flags, _c: &Ctx, _db: &Database) -> Result<Measurement, String> {
    Err("workload tatp is not built yet".into())
}
