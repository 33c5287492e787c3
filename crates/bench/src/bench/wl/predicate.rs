//! `--workload predicate`: range reads while others insert and delete inside
//! the ranges (`multiverse_workloads::predicate`), made for `--verify`: its
//! histories hold predicate anti-dependencies. `--predicate-ranges` ranges
//! (default 4) of `--predicate-range-rows` slots (default 8), the types
//! `scan`, `toggle` and `scan-write` in `--mix` (default
//! `scan:25,toggle:25,scan-write:50`). BOHM and ordered 2PL, which cannot
//! declare a range, read a range slot by slot.

use super::super::{measure, parse_count, Ctx, Host, Measurement};
use super::Given;
use multiverse::Isolation;
use multiverse_workloads::predicate::{Predicate, PredicateConfig, TYPES};
use multiverse_workloads::{Kind, Mix};

/// Flags of the predicate workload, boxed: `BenchArgs` is a variant of the
/// command enum and must stay small (clippy's `large_enum_variant`).
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct Flags {
    /// The flags.
    #[command(flatten)]
    pub f: Box<PredicateFlags>,
}

/// The predicate flags themselves.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct PredicateFlags {
    /// predicate: key ranges, each with a count row [default: 4].
    #[arg(long, value_name = "N", help_heading = "Workload predicate", value_parser = parse_count)]
    pub predicate_ranges: Option<u64>,
    /// predicate: slots per range; the load fills every other one [default: 8].
    #[arg(long, value_name = "N", help_heading = "Workload predicate", value_parser = parse_count)]
    pub predicate_range_rows: Option<u64>,
}

impl Given for Flags {
    fn given(&self) -> Vec<&'static str> {
        let mut g = Vec::new();
        if self.f.predicate_ranges.is_some() {
            g.push("--predicate-ranges");
        }
        if self.f.predicate_range_rows.is_some() {
            g.push("--predicate-range-rows");
        }
        g
    }
}

/// Runs the predicate workload.
pub fn run<H: Host>(f: &Flags, c: &Ctx, db: &H) -> Result<Measurement, String> {
    super::refuse_common(c, Kind::Predicate, false, true)?;
    let d = PredicateConfig::default();
    let cfg = PredicateConfig {
        ranges: f.f.predicate_ranges.unwrap_or(d.ranges),
        range_rows: f.f.predicate_range_rows.unwrap_or(d.range_rows),
        mix: match &c.mix {
            Some(m) => Mix::parse(TYPES, m)?,
            None => d.mix,
        },
        range_scans: c.peer.is_some() || !c.protocol.uses_declarations(),
        consistent_reads: c.isolation != Isolation::ReadCommitted,
        // `--verify` on another store: the count rows order the toggles.
        tagged_counts: c.peer.is_some() && c.record,
    };
    cfg.validate()?;
    let w = Predicate::setup(db, cfg)?;
    measure(db, &w, c)
}
