//! `--workload tpcc`: TPC-C, its TPC-CC variant and the NewOrder-only modes.

use super::super::{measure, Ctx, Host, Measurement};
use super::Given;

use multiverse_workloads::tpcc::{Tpcc, TpccConfig, EST_BYTES_PER_WAREHOUSE, MAX_WAREHOUSES, TYPES};
use multiverse_workloads::{Kind, Mix};

fn parse_warehouses(s: &str) -> Result<u32, String> {
    crate::bench::refuse_negative(s, "a number of warehouses")?;
    let n: u32 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of warehouses"))?;
    if n == 0 {
        return Err("must be at least 1".into());
    }
    if n > MAX_WAREHOUSES {
        return Err(format!("at most {MAX_WAREHOUSES}"));
    }
    Ok(n)
}

/// Flags of the tpcc workload.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct Flags {
    /// tpcc: warehouses; each worker's home warehouse is its thread number
    /// modulo this [default: the number of threads].
    #[arg(long, value_name = "N", value_parser = parse_warehouses, help_heading = "Workload tpcc")]
    pub warehouses: Option<u32>,
    /// tpcc: TPC-CC (SSN paper, section 8.1): every transaction picks a
    /// random warehouse instead of its worker's home warehouse.
    #[arg(long, help_heading = "Workload tpcc")]
    pub tpcc_cc: bool,
    /// tpcc: write no ORDER, NEW_ORDER, ORDER_LINE or HISTORY rows, as the
    /// DBx1000 testbed does (for side-by-side numbers; new-order and payment
    /// only).
    #[arg(long, help_heading = "Workload tpcc")]
    pub tpcc_no_inserts: bool,
}

impl Given for Flags {
    fn given(&self) -> Vec<&'static str> {
        let mut g = Vec::new();
        if self.warehouses.is_some() {
            g.push("--warehouses");
        }
        if self.tpcc_cc {
            g.push("--tpcc-cc");
        }
        if self.tpcc_no_inserts {
            g.push("--tpcc-no-inserts");
        }
        g
    }
}

/// Runs the tpcc workload.
pub fn run<H: Host>(f: &Flags, c: &Ctx, db: &H) -> Result<Measurement, String> {
    super::refuse_common(c, Kind::Tpcc, false, true)?;
    let cfg = TpccConfig {
        warehouses: f.warehouses.unwrap_or_else(|| (c.threads as u32).clamp(1, MAX_WAREHOUSES)),
        mix: match &c.mix {
            Some(m) => Mix::parse(TYPES, m)?,
            None => TpccConfig::default().mix,
        },
        random_warehouse: f.tpcc_cc,
        skip_inserts: f.tpcc_no_inserts,
    };
    cfg.validate()?;
    super::super::check_bytes(
        (cfg.warehouses as u64).saturating_mul(EST_BYTES_PER_WAREHOUSE),
        &format!("--warehouses {}", cfg.warehouses),
    )?;
    let w = Tpcc::setup(db, cfg)?;
    measure(db, &w, c)
}
