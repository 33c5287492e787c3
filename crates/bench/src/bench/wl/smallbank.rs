//! `--workload smallbank`: SmallBank as in the BOHM paper, section 4.3.

use super::super::{measure, parse_count, Ctx, Host, Measurement};
use super::Given;

use multiverse_workloads::smallbank::{SmallBank, SmallBankConfig, TYPES};
use multiverse_workloads::{Kind, Mix};
use std::num::NonZeroU64;

/// A count of at least 1 (kept small: `BenchArgs` is moved around whole).
fn parse_customers(s: &str) -> Result<NonZeroU64, String> {
    NonZeroU64::new(parse_count(s)?).ok_or_else(|| "must be at least 1".to_string())
}

/// Flags of the smallbank workload.
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct Flags {
    /// smallbank: customers (rows of Savings and of Checking); the paper uses
    /// 50 (high contention) and 100,000 (low) [default: 100000]. tpce,
    /// tpceh: customers, TPC-E's scale (the SSN paper: 500,000) [default: 1000].
    #[arg(long, value_name = "N", value_parser = parse_customers, help_heading = "Workload smallbank")]
    pub customers: Option<NonZeroU64>,
    /// smallbank: microseconds each transaction spins before it commits (the
    /// paper: 50) [default: 0].
    #[arg(long, value_name = "US", help_heading = "Workload smallbank", value_parser = clap::value_parser!(u32))]
    pub spin_us: Option<u32>,
}

impl Given for Flags {
    fn given(&self) -> Vec<&'static str> {
        let mut g = Vec::new();
        if self.customers.is_some() {
            g.push("--customers");
        }
        if self.spin_us.is_some() {
            g.push("--spin-us");
        }
        g
    }
}

/// Runs the smallbank workload.
pub fn run<H: Host>(f: &Flags, c: &Ctx, db: &H) -> Result<Measurement, String> {
    super::refuse_common(c, Kind::SmallBank, false, true)?;
    let d = SmallBankConfig::default();
    let cfg = SmallBankConfig {
        customers: f.customers.map_or(d.customers, NonZeroU64::get),
        spin_us: f.spin_us.map_or(d.spin_us, u64::from),
        mix: match &c.mix {
            Some(m) => Mix::parse(TYPES, m)?,
            None => d.mix,
        },
    };
    cfg.validate()?;
    // Before the tables (and their bucket arrays) exist: three rows per customer.
    super::super::check_bytes(cfg.customers.saturating_mul(3 * 128), &format!("--customers {}", cfg.customers))?;
    let w = SmallBank::setup(db, cfg)?;
    measure(db, &w, c)
}
