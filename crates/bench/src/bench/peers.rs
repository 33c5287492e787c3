//! `bench --protocol surrealmx|rocksdb-optimistic|rocksdb-pessimistic|fjall|redb|sqlite`:
//! the workload runs on another embedded store (`multiverse-peers`)
//! through the same harness, load, consistency check and report as a
//! Multiverse protocol.
//!
//! What a store cannot do is refused in one line before anything runs: a
//! level it does not offer (naming those it does), `--durability async`
//! (a store is in memory or synced per commit), and the flags that belong
//! to Multiverse's protocols or engine (`--mode`, `--base`, BOHM's
//! pipeline, SSN's options, faults, the time breakdown, the log's streams
//! and checkpoints), and `--history`, which needs Multiverse's history
//! recorder. `--verify` checks a store as a black box: on the list-append
//! workload, whose values name their writers, the point reads and writes
//! each committed transaction observed are recorded and checked by
//! `multiverse_check::check_observed`; on the predicate workload, whose
//! count rows then also list the tags of their range's toggles, the scans,
//! lookups, inserts and deletes too, checked by
//! `multiverse_check::check_observed_ranges` (other workloads are refused).

use super::harness::{self, RunConfig};
use super::{check_bytes, dispatch, parse_pin, sys, BenchArgs, Ctx, Host, Measurement, PeerRun};
use multiverse::{Isolation, Mode, Protocol, Stats};
use multiverse_check::{Limits, ObservedRange, ObservedRanges, ObservedTxn};
use multiverse_peers::{Durability, KvStore, Observed, Peer, PeerFn, PeerOptions};
use multiverse_workloads::{GuardedRanges, Kind, Workload};
use std::time::Duration;

/// Whether `name` is another store's (compiled in or not).
pub(crate) fn is_peer(name: &str) -> bool {
    multiverse_peers::feature_of(name).is_some()
}

/// The level a store runs at: `--isolation` if it offers it, else its strongest.
pub(crate) fn resolve_level(name: &str, flag: Option<&str>) -> Result<(Isolation, &'static [Isolation]), String> {
    let levels = multiverse_peers::levels_of(name).ok_or_else(|| not_built(name))?;
    let level = match flag {
        None => *levels.last().expect("a store offers a level"),
        Some(s) => {
            let l: Isolation = s.parse().map_err(|e: multiverse::Error| e.to_string())?;
            if !levels.contains(&l) {
                return Err(level_refused(name, l, levels));
            }
            l
        }
    };
    Ok((level, levels))
}

/// The one-line refusal of a level the store `name` does not offer.
pub(crate) fn level_refused(name: &str, level: Isolation, levels: &[Isolation]) -> String {
    let offered: Vec<&str> = levels.iter().map(|l| l.name()).collect();
    format!("store {name} does not offer {}; it offers {}", level.name(), offered.join(", "))
}

/// The one-line error of a store whose feature is not compiled in.
fn not_built(name: &str) -> String {
    format!(
        "store {name} is not compiled in: build with `cargo build --release --features peers` (or the feature peer-{})",
        multiverse_peers::feature_of(name).unwrap_or(name)
    )
}

/// Refuses the flags a store cannot honour.
fn refuse(a: &BenchArgs, name: &str, workload: Kind) -> Result<(), String> {
    let given = [
        ("--mode", a.mode.is_some()),
        ("--base", a.base.is_some()),
        ("--safe-snapshot-us", a.safe_snapshot_us.is_some()),
        ("--read-mostly-age", a.read_mostly_age.is_some()),
        ("--cc-threads", a.cc_threads.is_some()),
        ("--exec-threads", a.exec_threads.is_some()),
        ("--batch-size", a.batch_size != 1000),
        ("--fault", a.fault.is_some()),
        ("--breakdown", a.breakdown),
        ("--log-streams", a.log_streams.is_some()),
        ("--checkpoint-every", a.checkpoint_every.is_some()),
        ("--checkpoint-log-mb", a.checkpoint_log_mb.is_some()),
        ("--history", a.history.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
        let why = match *flag {
            "--history" => "it needs Multiverse's history recorder",
            "--breakdown" => "it times Multiverse's engine",
            _ => "it is a setting of Multiverse's protocols or log",
        };
        return Err(format!("{flag} does not apply to store {name} ({why})"));
    }
    if a.verify && !workload.values_name_writers() {
        return Err(format!(
            "--verify on store {name} checks workloads list-append and predicate (their values name their writers: a \
             store is a black box, without versions to record); {workload} needs Multiverse's history recorder"
        ));
    }
    if workload.in_memory_only() && a.durability != "none" {
        return Err(format!("workload {workload} runs in memory only (no --durability)"));
    }
    Ok(())
}

/// Opens the store of `a.protocol` and runs the workload on it once.
/// The outer error is a refusal before anything ran.
pub(crate) fn run_args(a: &BenchArgs, show: bool) -> Result<Result<Measurement, String>, String> {
    let name = a.protocol.as_str();
    let workload = Kind::parse(&a.workload)?;
    dispatch::refuse_foreign_flags(a, workload)?;
    refuse(a, name, workload)?;
    let (isolation, levels) = resolve_level(name, a.isolation.as_deref())?;
    let name = multiverse_peers::names().iter().copied().find(|n| *n == name).expect("a peer's name");
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let durability = match (a.durability.as_str(), &a.data_dir) {
        ("none", None) => Durability::None,
        ("none", Some(_)) => return Err("--data-dir needs --durability sync".into()),
        ("sync", Some(dir)) => {
            if std::fs::read_dir(dir).is_ok_and(|mut e| e.next().is_some()) {
                return Err(format!("--data-dir {}: not empty (bench opens a new store there)", dir.display()));
            }
            Durability::Sync
        }
        ("sync", None) => return Err("--durability sync: give the store's directory with --data-dir".into()),
        (d, _) => return Err(format!("--durability {d}: store {name} runs with none or sync")),
    };
    let opts = PeerOptions { durability, dir: a.data_dir.clone(), threads, lock_timeout: None };
    let ctx = Ctx {
        // Not used: `peer` says what runs.
        protocol: Protocol::MvOcc,
        isolation,
        mode: Mode::Default,
        threads,
        duration: a.duration,
        seed: a.seed,
        show,
        record: a.verify,
        rss_before: sys::rss_bytes(),
        rows: a.rows,
        mix: a.mix.clone(),
        prefault: a.prefault.unwrap_or(0),
        warmup: a.warmup.unwrap_or((a.duration / 10.0).min(5.0)),
        pin: parse_pin(a.pin.as_deref())?,
        breakdown: false,
        retry: super::retry_of(a),
        bohm: None,
        ceiling: None,
        peer: Some((name, levels)),
    };
    multiverse_peers::with_peer(name, &opts, Runner { a, ctx: &ctx, workload }).map_err(|e| {
        if e.contains("not compiled in") {
            not_built(name)
        } else {
            e
        }
    })
}

/// Runs the workload on an open store.
struct Runner<'a> {
    a: &'a BenchArgs,
    ctx: &'a Ctx,
    workload: Kind,
}

impl PeerFn for Runner<'_> {
    type Output = Result<Measurement, String>;

    fn call<K: KvStore>(self, peer: &Peer<K>) -> Self::Output {
        dispatch::run(self.a, self.workload, self.ctx, peer)
    }
}

impl<K: KvStore> Host for Peer<K> {
    fn measure_with<W: Workload>(
        &self,
        w: &W,
        c: &Ctx,
        ceiling: Option<(multiverse::TableId, super::ceiling::Check)>,
    ) -> Result<Measurement, String> {
        debug_assert!(ceiling.is_none(), "the ceiling runs on a Multiverse database");
        let est = w.estimated_bytes();
        if est > 0 {
            check_bytes(est, &format!("workload {}", w.name()))?;
        }
        let mut load = harness::load(self, w, c.threads, c.show, c.rss_before)?;
        load.files = self.memory_files_bytes();
        let prefault = if c.prefault > 0 {
            check_bytes(c.prefault, "--prefault")?;
            Some((c.prefault, sys::prefault(c.prefault)))
        } else {
            None
        };
        let cfg = RunConfig {
            threads: c.threads,
            duration: Duration::from_secs_f64(c.duration),
            warmup: Duration::from_secs_f64(c.warmup),
            pin: c.pin,
            breakdown: false,
            retry: c.retry,
            isolation: c.isolation,
            mode: c.mode,
            seed: c.seed,
            show_progress: c.show,
        };
        let (faults_before, rss_before_run) = (sys::minor_faults(), sys::rss_bytes());
        // Recorded from the run's first transaction: the load's inserts are
        // where the lists begin.
        self.set_recording(c.record);
        let run = harness::run(self, w, cfg, None);
        self.set_recording(false);
        let run = run?;
        let run_faults = sys::minor_faults().saturating_sub(faults_before);
        let run_rss_growth = sys::rss_bytes() as i64 - rss_before_run as i64;
        let consistency =
            w.check_consistency(self).map_err(|e| format!("{} consistency check failed: {e}", w.name()))?;
        let verified = c.record.then(|| verify(self.take_recorded(), c.isolation, w.guarded_ranges()));
        Ok(Measurement {
            protocol: c.protocol,
            ssn_base: None,
            safe_snapshot: None,
            read_mostly_age: None,
            isolation: c.isolation,
            mode: Mode::Default,
            ordered_map: multiverse::OrderedMap::default(),
            workload: w.name(),
            params: w.params(),
            threads: c.threads,
            duration_requested: c.duration,
            seed: c.seed,
            load,
            prefault,
            run,
            stats_end: Stats::default(),
            timestamp_increments: 0,
            log: None,
            peak_rss: sys::peak_rss_bytes(),
            run_faults,
            run_rss_growth,
            consistency,
            bohm: None,
            pin: c.pin,
            retry: c.retry,
            ceiling: None,
            peer: Some(PeerRun {
                name: self.name(),
                describe: self.kv().describe(),
                durability: self.durability(),
                verified,
            }),
        })
    }
}

/// Checks what the committed transactions observed against `level`, with
/// the scans of the workload's guarded ranges if it keeps them: `Ok` with
/// the verdict's text, or `Err` with it when something forbidden at that
/// level was found.
fn verify(observed: Vec<Vec<Observed>>, level: Isolation, ranges: Option<GuardedRanges>) -> Result<String, String> {
    let txns: Vec<ObservedTxn> = observed
        .into_iter()
        .enumerate()
        .map(|(i, ops)| ObservedTxn { id: i as u64 + 1, committed: true, ops })
        .collect();
    let report = match ranges {
        None => multiverse_check::check_observed(&txns, level),
        Some(g) => {
            let layout = ObservedRanges {
                table: g.rows,
                ranges: g
                    .ranges
                    .into_iter()
                    .map(|(lo, hi, table, key)| ObservedRange { lo, hi, guard: (table, key) })
                    .collect(),
                guard_prefix: g.guard_prefix,
                initial: g.initial,
            };
            multiverse_check::check_observed_ranges(&txns, &layout, level, &Limits::default())
        }
    };
    let text = format!("verify: {report}");
    if report.ok() {
        Ok(text)
    } else {
        Err(text)
    }
}
