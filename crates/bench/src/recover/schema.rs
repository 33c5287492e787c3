//! The schema of a recorded workload: its tables, created as `bench`
//! creates them from the parameters the workload file records, and the
//! check of the rows the workload's invariants imply
//! ([`Workload::check_state`]).

use crate::bench::{check_bytes, EST_BYTES_PER_ROW};
use crate::datadir::{quote, Recorded};
use multiverse::Database;
use multiverse_workloads::{hekaton, sibench, smallbank, tatp, tpcc, tpce, ycsb, Kind, StateCheck, Workload};

/// A workload's check of the recovered rows.
pub(crate) type Check = Box<dyn FnOnce(&Database) -> Result<StateCheck, String>>;

/// A recorded workload's schema, created in a database.
pub(crate) struct Schema {
    /// The check of the recovered rows.
    pub(crate) check: Check,
    /// Rows the initial load writes.
    pub(crate) load_size: u64,
}

/// Creates the recorded workload's tables in `db` (no rows) and returns its
/// check. The memory the data set needs is checked first, as `bench`
/// checks it before it creates the tables and before it loads (see
/// `bench::wl`): a workload file with absurd numbers is refused instead of
/// dying in the allocator.
pub(crate) fn create_schema(db: &Database, r: &Recorded) -> Result<Schema, String> {
    fn schema<W: Workload + 'static>(w: W) -> Result<Schema, String> {
        // As `bench::measure` checks before loading.
        let est = w.estimated_bytes();
        if est > 0 {
            check_bytes(est, &format!("workload {}", w.name()))?;
        }
        let load_size = w.load_size();
        Ok(Schema { check: Box::new(move |db| w.check_state(db)), load_size })
    }
    let at = |e: String| format!("{}: {e}", r.path.display());
    let Some(kind) = Kind::find(&r.workload) else {
        return Err(at(format!(
            "unknown workload '{}' (known workloads: {})",
            quote(&r.workload),
            Kind::names().join(", ")
        )));
    };
    match kind {
        Kind::Hekaton => {
            let d = hekaton::HekatonConfig::default();
            let cfg = hekaton::HekatonConfig {
                rows: r.need("rows")?,
                reads: r.get("reads", d.reads)?,
                writes: r.get("writes", d.writes)?,
                prefetch: d.prefetch,
            };
            cfg.validate().map_err(at)?;
            check_bytes(cfg.rows.saturating_mul(EST_BYTES_PER_ROW), &r.shown("rows"))?;
            schema(hekaton::Hekaton::setup(db, cfg).map_err(at)?)
        }
        Kind::Ycsb => {
            let d = ycsb::YcsbConfig::default();
            let cfg = ycsb::YcsbConfig {
                rows: r.need("rows")?,
                value_bytes: r.need("value_bytes")?,
                theta: r.get("theta", d.theta)?,
                scan_records: r.get("scan_records", d.scan_records)?,
                mix: r.mix(ycsb::TYPES, d.mix)?,
                write_pct: r.get("write_pct", d.write_pct)?,
                // A run with repeats may have fewer rows than a transaction's keys.
                allow_repeats: r.get("allow_repeats", d.allow_repeats)?,
                ..d
            };
            cfg.validate().map_err(at)?;
            check_bytes(cfg.estimated_bytes(), &format!("{} (value_bytes={})", r.shown("rows"), cfg.value_bytes))?;
            schema(ycsb::Ycsb::setup(db, cfg).map_err(at)?)
        }
        Kind::SmallBank => {
            let d = smallbank::SmallBankConfig::default();
            let cfg = smallbank::SmallBankConfig {
                customers: r.need("customers")?,
                spin_us: r.get("spin_us", d.spin_us)?,
                mix: r.mix(smallbank::TYPES, d.mix)?,
            };
            cfg.validate().map_err(at)?;
            // Three rows per customer, as bench estimates them.
            check_bytes(cfg.customers.saturating_mul(3 * 128), &r.shown("customers"))?;
            schema(smallbank::SmallBank::setup(db, cfg).map_err(at)?)
        }
        Kind::Tatp => {
            let cfg =
                tatp::TatpConfig { subscribers: r.need("subscribers")?, mix: r.mix(tatp::TYPES, tatp::default_mix())? };
            cfg.validate().map_err(at)?;
            // 9.75 rows per subscriber, as bench estimates them.
            let rows = cfg.subscribers.saturating_mul(39) / 4;
            check_bytes(rows.saturating_mul(tatp::EST_BYTES_PER_ROW), &r.shown("subscribers"))?;
            schema(tatp::Tatp::setup(db, cfg).map_err(at)?)
        }
        Kind::Tpcc => {
            let cfg = tpcc::TpccConfig {
                warehouses: r.need("warehouses")?,
                mix: r.mix(tpcc::TYPES, tpcc::default_mix())?,
                random_warehouse: r.get("random_warehouse", false)?,
                skip_inserts: r.get("skip_inserts", false)?,
            };
            cfg.validate().map_err(at)?;
            check_bytes((cfg.warehouses as u64).saturating_mul(tpcc::EST_BYTES_PER_WAREHOUSE), &r.shown("warehouses"))?;
            schema(tpcc::Tpcc::setup(db, cfg).map_err(at)?)
        }
        Kind::Tpce | Kind::Tpceh => {
            let heterogeneous = kind == Kind::Tpceh;
            let d = if heterogeneous { tpce::TpceConfig::tpceh() } else { tpce::TpceConfig::default() };
            let cfg = tpce::TpceConfig {
                customers: r.need("customers")?,
                trade_days: r.get("trade_days", d.trade_days)?,
                mix: r.mix(tpce::TYPES, d.mix.clone())?,
                asset_eval_fraction: r.get("asset_eval_fraction", d.asset_eval_fraction)?,
                heterogeneous,
            };
            cfg.validate().map_err(at)?;
            check_bytes(cfg.estimated_bytes(), &r.shown("customers"))?;
            schema(tpce::Tpce::setup(db, cfg).map_err(at)?)
        }
        Kind::Sibench => {
            let cfg = sibench::SibenchConfig { rows: r.need("rows")?, ..sibench::SibenchConfig::default() };
            cfg.validate().map_err(at)?;
            check_bytes(cfg.rows.saturating_mul(EST_BYTES_PER_ROW), &r.shown("rows"))?;
            schema(sibench::Sibench::setup(db, cfg).map_err(at)?)
        }
        Kind::Predicate | Kind::ListAppend => {
            Err(at(format!("workload {kind} runs in memory only, so no data directory holds it")))
        }
    }
}
