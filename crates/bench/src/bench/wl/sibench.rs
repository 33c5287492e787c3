//! `--workload sibench` (not built yet).

use super::super::{Ctx, Measurement};
use super::Given;
use multiverse::Database;

/// Flags of the sibench workload.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct Flags {}

impl Given for Flags {
    fn given(&self) -> Vec<&'static str> {
        Vec::new()
    }
}

/// Runs the sibench workload.
pub fn run(_f: &Flags, _c: &Ctx, _db: &Database) -> Result<Measurement, String> {
    Err("workload sibench is not built yet".into())
}
