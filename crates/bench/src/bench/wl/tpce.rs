//! `--workload tpce` and `--workload tpceh`: TPC-E and the SSN paper's
//! TPC-EH (TPC-E with Asset-Eval), section 8.1.

use super::super::{measure, Ctx, Host, Measurement};
use super::Given;

use multiverse_workloads::tpce::{Tpce, TpceConfig, MAX_TRADE_DAYS, TYPES};
use multiverse_workloads::{Kind, Mix};
use std::num::NonZeroU64;

fn parse_trade_days(s: &str) -> Result<u32, String> {
    crate::bench::refuse_negative(s, "a number of days")?;
    let n: u32 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of days"))?;
    if n == 0 || n > MAX_TRADE_DAYS {
        return Err(format!("out of range: must be 1 to {MAX_TRADE_DAYS}"));
    }
    Ok(n)
}

fn parse_fraction(s: &str) -> Result<f64, String> {
    let f: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a fraction"))?;
    if !(f.is_finite() && f > 0.0 && f <= 1.0) {
        return Err("out of range: must be above 0 and at most 1".into());
    }
    Ok(f)
}

/// Flags of the tpce and tpceh workloads (their scale, `--customers`, is
/// shared with smallbank's flag of that name).
#[derive(clap::Args, Debug, Clone, Default)]
#[group(skip)]
pub struct Flags {
    /// tpce, tpceh: working days of initial trades (57.6 trades per customer
    /// and day; the SSN paper: 10) [default: 10].
    #[arg(long, value_name = "N", value_parser = parse_trade_days, help_heading = "Workload tpce, tpceh")]
    pub trade_days: Option<u32>,
    /// tpceh: the fraction of all customer accounts each Asset-Eval values
    /// (the SSN paper: 0.2) [default: 0.2].
    #[arg(long, value_name = "F", value_parser = parse_fraction, help_heading = "Workload tpce, tpceh")]
    pub asset_eval_fraction: Option<f64>,
}

impl Given for Flags {
    fn given(&self) -> Vec<&'static str> {
        let mut g = Vec::new();
        if self.trade_days.is_some() {
            g.push("--trade-days");
        }
        if self.asset_eval_fraction.is_some() {
            g.push("--asset-eval-fraction");
        }
        g
    }
}

/// Runs the tpce (`heterogeneous` false) or tpceh workload with
/// `customers` (`--customers`) customers.
pub fn run<H: Host>(
    f: &Flags,
    customers: Option<NonZeroU64>,
    heterogeneous: bool,
    c: &Ctx,
    db: &H,
) -> Result<Measurement, String> {
    let kind = if heterogeneous { Kind::Tpceh } else { Kind::Tpce };
    super::refuse_common(c, kind, false, true)?;
    let d = if heterogeneous { TpceConfig::tpceh() } else { TpceConfig::default() };
    let cfg = TpceConfig {
        customers: customers.map_or(d.customers, NonZeroU64::get),
        trade_days: f.trade_days.unwrap_or(d.trade_days),
        mix: match &c.mix {
            Some(m) => Mix::parse(TYPES, m)?,
            None => d.mix.clone(),
        },
        asset_eval_fraction: f.asset_eval_fraction.unwrap_or(d.asset_eval_fraction),
        heterogeneous,
    };
    cfg.validate()?;
    super::super::check_bytes(cfg.estimated_bytes(), &format!("--customers {}", cfg.customers))?;
    let w = Tpce::setup(db, cfg)?;
    measure(db, &w, c)
}
