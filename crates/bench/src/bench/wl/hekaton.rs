//! `--workload hekaton`: the workloads of section 5 of the Hekaton paper.
//!
//! Section 5.1 (homogeneous): `--reads R --writes W --rows N`. Section
//! 5.2.1 (short read-only transactions): `--mix update:X,read-only:Y`.
//! Section 5.2.2 (long readers): `--long-readers K` makes the first `K`
//! threads run serializable read-only transactions over `--long-read-pct`
//! percent of the table (default 10) while the others run the mix.

use super::super::{check_memory, measure, Ctx, Host, Measurement};
use super::Given;
use multiverse::Isolation;
use multiverse_workloads::hekaton::{Heterogeneous, MIX_TYPES};
use multiverse_workloads::{Hekaton, HekatonConfig, Kind, Mix};

/// Flags of the hekaton workload.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct Flags {
    /// hekaton: reads per transaction (R) [default: 10].
    #[arg(long, value_name = "R", help_heading = "Workload hekaton", value_parser = clap::value_parser!(u32))]
    pub reads: Option<u32>,
    /// hekaton: writes (updates) per transaction (W) [default: 2].
    #[arg(long, value_name = "W", help_heading = "Workload hekaton", value_parser = clap::value_parser!(u32))]
    pub writes: Option<u32>,
    /// hekaton: do not issue prefetch hints for a transaction's rows.
    #[arg(long, help_heading = "Workload hekaton")]
    pub no_prefetch: bool,
    /// Section 5.2.2's flags, boxed: `BenchArgs` is a variant of the
    /// command enum and must stay small (clippy's `large_enum_variant`).
    #[command(flatten)]
    pub long: Box<LongFlags>,
}

/// Flags of the hekaton workload's long readers.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct LongFlags {
    /// hekaton: the first K threads run long serializable read-only
    /// transactions (section 5.2.2) [default: 0].
    #[arg(long, value_name = "K", help_heading = "Workload hekaton", value_parser = crate::bench::parse_usize)]
    pub long_readers: Option<usize>,
    /// hekaton: percentage of the table each long reader reads [default: 10].
    #[arg(long, value_name = "P", help_heading = "Workload hekaton", allow_negative_numbers = true)]
    pub long_read_pct: Option<f64>,
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
        if self.long.long_readers.is_some() {
            g.push("--long-readers");
        }
        if self.long.long_read_pct.is_some() {
            g.push("--long-read-pct");
        }
        g
    }
}

/// Parses the hekaton `--mix` (types `update` and `read-only`).
fn parse_mix(s: &str) -> Result<Mix, String> {
    Mix::parse(MIX_TYPES, s).map_err(|e| {
        if s.contains("long-read") {
            format!("{e}; long readers are threads, not a share: use --long-readers K")
        } else {
            e
        }
    })
}

/// Runs the hekaton workload.
pub fn run<H: Host>(f: &Flags, c: &Ctx, db: &H) -> Result<Measurement, String> {
    super::refuse_common(c, Kind::Hekaton, true, true)?;
    let d = HekatonConfig::default();
    let cfg = HekatonConfig {
        rows: c.rows.unwrap_or(d.rows),
        reads: f.reads.unwrap_or(d.reads),
        writes: f.writes.unwrap_or(d.writes),
        prefetch: !f.no_prefetch,
    };
    if cfg.reads == 0 && cfg.writes == 0 {
        return Err("--reads 0 --writes 0: a transaction must do at least one operation (a read or a write)".into());
    }
    cfg.validate()?;
    let dh = Heterogeneous::default();
    let het = Heterogeneous {
        mix: c.mix.as_deref().map(parse_mix).transpose()?.unwrap_or(dh.mix),
        long_readers: f.long.long_readers.unwrap_or(0),
        long_read_pct: f.long.long_read_pct.unwrap_or(dh.long_read_pct),
    };
    het.validate()?;
    if het.long_readers > c.threads {
        return Err(format!("--long-readers {} is more than --threads {}", het.long_readers, c.threads));
    }
    if het.long_readers == 0 && f.long.long_read_pct.is_some() {
        return Err("--long-read-pct applies to long readers: add --long-readers K".into());
    }
    if het.long_readers > 0 && !c.offers(Isolation::Serializable) {
        return Err(format!("long readers run serializable, which {} does not offer", c.runs()));
    }
    check_memory(cfg.rows)?;
    let w = Hekaton::setup_with(db, cfg, het)?;
    if c.ceiling.is_some() {
        return db.measure_with(&w, c, Some((w.table(), crate::bench::ceiling::HEKATON_CHECK)));
    }
    measure(db, &w, c)
}
