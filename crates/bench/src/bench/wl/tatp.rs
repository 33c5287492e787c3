//! `--workload tatp`: TATP as in the Hekaton paper, section 5.3.

use super::super::{measure, parse_count, Ctx, Host, Measurement};
use super::Given;

use multiverse_workloads::tatp::{Tatp, TatpConfig, EST_BYTES_PER_ROW, TYPES};
use multiverse_workloads::{Kind, Mix};
use std::num::NonZeroU64;

/// A count of at least 1 (kept small: `BenchArgs` is moved around whole).
fn parse_subscribers(s: &str) -> Result<NonZeroU64, String> {
    NonZeroU64::new(parse_count(s)?).ok_or_else(|| "must be at least 1".to_string())
}

/// Flags of the tatp workload.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct Flags {
    /// tatp: subscribers (P), about 9.75 rows each; the Hekaton paper used
    /// 20M [default: 1000000].
    #[arg(long, value_name = "N", value_parser = parse_subscribers, help_heading = "Workload tatp")]
    pub subscribers: Option<NonZeroU64>,
}

impl Given for Flags {
    fn given(&self) -> Vec<&'static str> {
        let mut g = Vec::new();
        if self.subscribers.is_some() {
            g.push("--subscribers");
        }
        g
    }
}

/// Runs the tatp workload.
pub fn run<H: Host>(f: &Flags, c: &Ctx, db: &H) -> Result<Measurement, String> {
    super::refuse_common(c, Kind::Tatp, false, true)?;
    let d = TatpConfig::default();
    let cfg = TatpConfig {
        subscribers: f.subscribers.map_or(d.subscribers, NonZeroU64::get),
        mix: match &c.mix {
            Some(m) => Mix::parse(TYPES, m)?,
            None => d.mix,
        },
    };
    cfg.validate()?;
    // Before the population is counted: a rough size (9.75 rows per
    // subscriber), so an impossible --subscribers fails at once.
    let rows = cfg.subscribers.saturating_mul(39) / 4;
    super::super::check_bytes(rows.saturating_mul(EST_BYTES_PER_ROW), &format!("--subscribers {}", cfg.subscribers))?;
    let w = Tatp::setup(db, cfg)?;
    measure(db, &w, c)
}
