//! Each workload's flags and runner: one module per workload.
//!
//! A module has a `Flags` struct (its own command-line flags, flattened into
//! `BenchArgs`; every field an `Option` or a `bool` so that "given" can be
//! told from "default") implementing [`Given`], and a
//! `run<H: Host>(&Flags, &Ctx, &H) -> Result<Measurement, String>` that builds
//! the workload's configuration (defaults from its specification), sets its
//! tables up and calls [`super::measure`]. `dispatch` picks the module of
//! the workload that runs.

use multiverse_workloads::Kind;

pub mod hekaton;
pub mod list_append;
pub mod predicate;
pub mod sibench;
pub mod smallbank;
pub mod tatp;
pub mod tpcc;
pub mod tpce;
pub mod ycsb;

/// Which of a workload's flags were given on the command line.
pub trait Given {
    /// The names of the given flags, as typed (`--theta`).
    fn given(&self) -> Vec<&'static str>;
}

/// `--rows` and `--mix` for a workload without a main table or without types.
pub fn refuse_common(c: &super::Ctx, workload: Kind, rows: bool, mix: bool) -> Result<(), String> {
    if !rows && c.rows.is_some() {
        return Err(format!("--rows does not apply to workload {workload}"));
    }
    if !mix && c.mix.is_some() {
        return Err(format!("--mix does not apply to workload {workload}"));
    }
    Ok(())
}
