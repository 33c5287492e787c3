//! `multiverse bench` and the default comparison.

/// Arguments of `multiverse bench`.
#[derive(clap::Args)]
pub struct BenchArgs {}

/// `multiverse bench`.
pub fn run(_a: BenchArgs) -> Result<(), String> {
    Err("bench: not yet implemented".into())
}

/// `multiverse` with no arguments.
pub fn default_comparison() -> Result<(), String> {
    Err("not yet implemented".into())
}
