//! One measured run of a workload already set up in a database: record the
//! workload in the data directory (durable runs), load, checkpoint, run,
//! and check the workload's consistency; the [`Measurement`] of it all.

use super::harness::{self, RunConfig};
use super::{ceiling, check_bytes, sys, Ctx, Host, LogMeasure, Measurement};
use multiverse::{Database, Protocol};
use multiverse_workloads::Workload;
use std::time::Duration;

/// Loads `w` (already set up in `db`), runs it once, and checks the
/// workload's consistency conditions.
pub(crate) fn measure<H: Host, W: Workload>(db: &H, w: &W, c: &Ctx) -> Result<Measurement, String> {
    db.measure_with(w, c, None)
}

/// [`measure`]; with `ceiling` (`--protocol none`: the workload's one
/// table, and how to check the copy afterwards) the run goes to a no-CC
/// copy of that table made after the load.
pub(crate) fn measure_with<W: Workload>(
    db: &Database,
    w: &W,
    c: &Ctx,
    ceiling: Option<(multiverse::TableId, ceiling::Check)>,
) -> Result<Measurement, String> {
    debug_assert_eq!(ceiling.is_some(), c.ceiling.is_some(), "the workload passes its table for --protocol none");
    let est = w.estimated_bytes();
    if est > 0 {
        check_bytes(est, &format!("workload {}", w.name()))?;
    }
    if let (Some(dir), true) = (&db.options().data_dir, db.durability() != multiverse::Durability::None) {
        // What `multiverse recover` needs to rebuild the schema and check it.
        crate::datadir::record_workload(dir, w.name(), &w.params())?;
    }
    let load = harness::load(db, w, c.threads, c.show, c.rss_before)?;
    // The run's transactions see every loaded row (POMVCC: not a given).
    db.sync_commits().map_err(|e| e.to_string())?;
    if db.durability() != multiverse::Durability::None {
        // The loaded rows become durable as a checkpoint, not as log records.
        db.checkpoint().map_err(|e| format!("checkpoint after loading: {e}"))?;
        if let Some(dir) = &db.options().data_dir {
            // From here on `multiverse recover` checks the invariants.
            crate::datadir::record_loaded(dir)?;
        }
    }
    let copy = match (&ceiling, c.ceiling) {
        (Some((table, _)), Some(kind)) => Some(ceiling::Copy::make(kind, db, *table, w.load_size())?),
        _ => None,
    };
    let prefault = if c.prefault > 0 {
        check_bytes(c.prefault, "--prefault")?;
        Some((c.prefault, sys::prefault(c.prefault)))
    } else {
        None
    };
    db.set_recording(c.record);
    let cfg = RunConfig {
        threads: c.threads,
        duration: Duration::from_secs_f64(c.duration),
        warmup: Duration::from_secs_f64(c.warmup),
        pin: c.pin,
        breakdown: c.breakdown,
        retry: c.retry,
        isolation: c.isolation,
        mode: c.mode,
        seed: c.seed,
        show_progress: c.show,
    };
    let (faults_before, rss_before_run) = (sys::minor_faults(), sys::rss_bytes());
    let before = db.stats();
    let ts_before = before.timestamp_increments;
    multiverse::research::breakdown::set_enabled(c.breakdown);
    let run = match c.bohm {
        Some(b) => harness::run_bohm(db, w, cfg, b),
        None => harness::run(db, w, cfg, copy.as_ref().zip(ceiling.as_ref()).map(|(t, c)| t.target(c.0))),
    };
    multiverse::research::breakdown::set_enabled(false);
    // The history is the run's: the checks below run at other levels
    // (`multiverse check` without --isolation takes the history's one level).
    db.set_recording(false);
    let run = run?;
    let run_faults = sys::minor_faults().saturating_sub(faults_before);
    let run_rss_growth = sys::rss_bytes() as i64 - rss_before_run as i64;
    let stats_end = db.stats();
    // From the end of the warm-up: per committed transaction, both counts
    // cover the same time.
    let timestamp_increments = stats_end.timestamp_increments - run.ts_at_measure.unwrap_or(ts_before);
    let log = (db.durability() != multiverse::Durability::None).then(|| LogMeasure {
        durability: db.durability(),
        streams: db.options().log_streams,
        bytes: stats_end.log_bytes - before.log_bytes,
        records: stats_end.log_records - before.log_records,
        syncs: stats_end.log_syncs - before.log_syncs,
        checkpoints: stats_end.checkpoints - before.checkpoints,
    });
    // The check sees every committed transaction (POMVCC: not a given).
    db.sync_commits().map_err(|e| e.to_string())?;
    let consistency = match (&copy, &ceiling) {
        (Some(t), Some((_, check))) => t.check(check, w.load_size()),
        _ => w.check_consistency(db),
    }
    .map_err(|e| format!("{} consistency check failed: {e}", w.name()))?;
    let ssn_base = matches!(c.protocol, Protocol::Ssn | Protocol::Ssi).then(|| db.options().ssn_base);
    Ok(Measurement {
        protocol: c.protocol,
        ssn_base,
        safe_snapshot: db.options().safe_snapshot_interval,
        read_mostly_age: db.options().ssn_read_mostly_age,
        isolation: c.isolation,
        mode: c.mode,
        ordered_map: db.options().ordered_map,
        workload: w.name(),
        params: w.params(),
        threads: c.threads,
        duration_requested: c.duration,
        seed: c.seed,
        load,
        prefault,
        run,
        stats_end,
        timestamp_increments,
        log,
        peak_rss: sys::peak_rss_bytes(),
        run_faults,
        run_rss_growth,
        consistency,
        bohm: c.bohm,
        pin: c.pin,
        retry: c.retry,
        ceiling: c.ceiling,
        peer: None,
    })
}
