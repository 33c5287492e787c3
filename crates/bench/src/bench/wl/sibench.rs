//! `--workload sibench`: SIBENCH as in section 7.2 of the SSN paper
//! (`multiverse_workloads::sibench`): one table of `--rows` records (default
//! 1,000); update transactions of `--sibench-accesses` accesses (default
//! 8-12), the last `--sibench-writes` of them writes (a count or a
//! percentage, default 25%); the first `--sibench-query-threads` threads
//! (default 0) run read-only queries of `--sibench-query-accesses` reads
//! (default 100-200).

use super::super::{check_memory, measure, Ctx, Host, Measurement};
use super::Given;

use multiverse_workloads::sibench::{parse_range, Sibench, SibenchConfig, Writes};
use multiverse_workloads::Kind;

/// Flags of the sibench workload, boxed: `BenchArgs` is a variant of the
/// command enum and must stay small (clippy's `large_enum_variant`).
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct Flags {
    /// The flags.
    #[command(flatten)]
    pub f: Box<SibenchFlags>,
}

/// The sibench flags themselves.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct SibenchFlags {
    /// sibench: accesses per update transaction, MIN-MAX or N, uniformly
    /// random in the range [default: 8-12].
    #[arg(long, value_name = "RANGE", help_heading = "Workload sibench")]
    pub sibench_accesses: Option<String>,
    /// sibench: how many of an update transaction's accesses are writes (the
    /// last ones): a count M or a percentage P% [default: 25%].
    #[arg(long, value_name = "M|P%", help_heading = "Workload sibench")]
    pub sibench_writes: Option<String>,
    /// sibench: threads in the read-only query group (the first ones) [default: 0].
    #[arg(long, value_name = "K", help_heading = "Workload sibench", value_parser = crate::bench::parse_usize)]
    pub sibench_query_threads: Option<usize>,
    /// sibench: reads per query, MIN-MAX or N [default: 100-200].
    #[arg(long, value_name = "RANGE", help_heading = "Workload sibench")]
    pub sibench_query_accesses: Option<String>,
}

impl Given for Flags {
    fn given(&self) -> Vec<&'static str> {
        let f = &self.f;
        let mut g = Vec::new();
        if f.sibench_accesses.is_some() {
            g.push("--sibench-accesses");
        }
        if f.sibench_writes.is_some() {
            g.push("--sibench-writes");
        }
        if f.sibench_query_threads.is_some() {
            g.push("--sibench-query-threads");
        }
        if f.sibench_query_accesses.is_some() {
            g.push("--sibench-query-accesses");
        }
        g
    }
}

/// Runs the sibench workload.
pub fn run<H: Host>(f: &Flags, c: &Ctx, db: &H) -> Result<Measurement, String> {
    let f = &f.f;
    super::refuse_common(c, Kind::Sibench, true, false)?;
    let d = SibenchConfig::default();
    let range = |flag: &str, s: &Option<String>, def| match s {
        Some(s) => parse_range(s).map_err(|e| format!("{flag}: {e}")),
        None => Ok(def),
    };
    let cfg = SibenchConfig {
        rows: c.rows.unwrap_or(d.rows),
        accesses: range("--sibench-accesses", &f.sibench_accesses, d.accesses)?,
        writes: match &f.sibench_writes {
            Some(s) => Writes::parse(s).map_err(|e| format!("--sibench-writes: {e}"))?,
            None => d.writes,
        },
        query_threads: f.sibench_query_threads.unwrap_or(d.query_threads),
        query_accesses: range("--sibench-query-accesses", &f.sibench_query_accesses, d.query_accesses)?,
    };
    if cfg.query_threads > c.threads {
        return Err(format!("--sibench-query-threads {} is more than --threads {}", cfg.query_threads, c.threads));
    }
    if cfg.query_threads == 0 && f.sibench_query_accesses.is_some() {
        return Err("--sibench-query-accesses applies to the query group: add --sibench-query-threads K".into());
    }
    cfg.validate()?;
    check_memory(cfg.rows)?;
    let w = Sibench::setup(db, cfg)?;
    measure(db, &w, c)
}
