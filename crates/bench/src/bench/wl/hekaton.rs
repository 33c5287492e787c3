//! `--workload hekaton`: the workloads of section 5 of the Hekaton paper.

use super::super::{check_memory, measure, Ctx, Measurement};
use super::Given;
use multiverse::Database;
use multiverse_workloads::{Hekaton, HekatonConfig};

/// Flags of the hekaton workload.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct Flags {
    /// hekaton: reads per transaction (R) [default: 10].
    #[arg(long, value_name = "R", help_heading = "Workload hekaton")]
    pub reads: Option<u32>,
    /// hekaton: writes (updates) per transaction (W) [default: 2].
    #[arg(long, value_name = "W", help_heading = "Workload hekaton")]
    pub writes: Option<u32>,
    /// hekaton: do not issue prefetch hints for a transaction's rows.
    #[arg(long, help_heading = "Workload hekaton")]
    pub no_prefetch: bool,
}

impl Given for Flags {
    fn given(&self) -> Vec<&'static str> {
        let mut g = Vec::new();
        if self.reads.is_some() {
            g.push("--reads");
        }
        if self.writes.is_some() {
            g.push("--writes");
        }
        if self.no_prefetch {
            g.push("--no-prefetch");
        }
        g
    }
}

/// Runs the hekaton workload.
pub fn run(f: &Flags, c: &Ctx, db: &Database) -> Result<Measurement, String> {
    super::refuse_common(c, "hekaton", true, false)?;
    let d = HekatonConfig::default();
    let cfg = HekatonConfig {
        rows: c.rows.unwrap_or(d.rows),
        reads: f.reads.unwrap_or(d.reads),
        writes: f.writes.unwrap_or(d.writes),
        prefetch: !f.no_prefetch,
    };
    cfg.validate()?;
    check_memory(cfg.rows)?;
    let w = Hekaton::setup(db, cfg)?;
    measure(db, &w, c)
}
