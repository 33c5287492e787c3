//! The engine's `metrics` feature: a recording recorder (written here, a
//! map from each metric's name and labels to its value) is installed while
//! a database is created, and its counters must follow what the database
//! counts itself (`Database::stats`): commits, aborts by reason, for
//! several protocols; garbage collection, memory, the log and checkpoints.
//!
//! Each test installs its recorder as the thread's local recorder around
//! `Database::new`/`open` only: the database registers its handles then
//! and keeps them, so tests running side by side do not see each other's
//! counts.

use metrics::{Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use multiverse::protocol::bohm::{Config, Done, ExecTxn, Feed, Next, Procedure};
use multiverse::{
    AbortReason, AccessSet, Database, Durability, Error, Isolation, Key as RowKey, Options, Protocol, TableId,
    TableSpec,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Every sample of a histogram.
#[derive(Default)]
struct Samples(Mutex<Vec<f64>>);

impl HistogramFn for Samples {
    fn record(&self, value: f64) {
        self.0.lock().unwrap().push(value);
    }
}

/// A recorder that keeps every metric, by `name{label=value,...}` (labels
/// in the order given).
#[derive(Default)]
struct Recording {
    counters: Mutex<BTreeMap<String, Arc<AtomicU64>>>,
    gauges: Mutex<BTreeMap<String, Arc<AtomicU64>>>,
    histograms: Mutex<BTreeMap<String, Arc<Samples>>>,
}

fn name(key: &Key) -> String {
    let labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Recorder for Recording {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.counters.lock().unwrap().entry(name(key)).or_default().clone())
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.gauges.lock().unwrap().entry(name(key)).or_default().clone())
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.histograms.lock().unwrap().entry(name(key)).or_default().clone())
    }
}

impl Recording {
    /// A counter's value (0 if never registered).
    fn counter(&self, name: &str) -> u64 {
        self.counters.lock().unwrap().get(name).map_or(0, |c| c.load(Ordering::Relaxed))
    }

    fn gauge(&self, name: &str) -> Option<f64> {
        self.gauges.lock().unwrap().get(name).map(|g| f64::from_bits(g.load(Ordering::Relaxed)))
    }

    /// A histogram's samples.
    fn samples(&self, name: &str) -> Vec<f64> {
        self.histograms.lock().unwrap().get(name).map_or(Vec::new(), |h| h.0.lock().unwrap().clone())
    }

    /// Commits and aborts by reason must be what the database counted.
    fn assert_matches(&self, db: &Database) {
        let p = db.protocol().name();
        let s = db.stats();
        assert_eq!(self.counter(&format!("multiverse_commits_total{{protocol={p}}}")), s.committed, "{p}: commits");
        for (r, n) in s.aborts_by_reason() {
            let got = self.counter(&format!("multiverse_aborts_total{{protocol={p},reason={}}}", r.name()));
            assert_eq!(got, n, "{p}: aborts for {r}");
        }
        let committed =
            self.samples(&format!("multiverse_transaction_duration_seconds{{protocol={p},outcome=committed}}"));
        let aborted = self.samples(&format!("multiverse_transaction_duration_seconds{{protocol={p},outcome=aborted}}"));
        assert_eq!(committed.len() as u64, s.committed, "{p}: one duration per commit");
        assert_eq!(aborted.len() as u64, s.aborted(), "{p}: one duration per abort");
        assert!(committed.iter().chain(&aborted).all(|d| *d >= 0.0 && *d < 60.0), "{p}: durations in seconds");
    }

    fn aborts(&self, p: Protocol, r: AbortReason) -> u64 {
        self.counter(&format!("multiverse_aborts_total{{protocol={},reason={}}}", p.name(), r.name()))
    }
}

/// A database of `protocol` whose metrics go to a new recorder.
fn db_with(opts: Options) -> (Database, Arc<Recording>) {
    let rec = Arc::new(Recording::default());
    let db = metrics::with_local_recorder(&*rec, || Database::new(opts)).unwrap();
    (db, rec)
}

fn val(n: u64) -> [u8; 8] {
    n.to_le_bytes()
}

/// POMVCC makes a commit visible to later transactions once its commit
/// timestamp closes: `sync_commits` closes it (with a read-only commit of
/// its own, returned). A no-op elsewhere.
fn sync(db: &Database) -> u64 {
    u64::from(db.sync_commits().unwrap().is_some())
}

/// Commits, a user abort, a dropped transaction, and (for the optimistic
/// protocols) a read-validation abort: t1 reads k1, t2 updates k1 and
/// commits, t1 writes k2 and fails its commit. Returns the commits of
/// `sync`.
fn run_mix(db: &Database, t: TableId, optimistic: bool) -> u64 {
    db.run(Isolation::Serializable, |tx| {
        for k in 0..10 {
            tx.insert(t, RowKey::from(k), val(k))?;
        }
        Ok(())
    })
    .unwrap();
    let mut synced = sync(db);
    let iso = db.protocol().strongest();
    for k in 0..5 {
        let mut tx = db.begin(iso).unwrap();
        tx.update(t, RowKey::from(k), val(k + 100)).unwrap();
        tx.commit().unwrap();
    }
    let mut tx = db.begin(iso).unwrap();
    tx.get(t, RowKey::from(7)).unwrap();
    tx.abort();
    {
        let mut tx = db.begin(iso).unwrap();
        tx.update(t, RowKey::from(8), val(0)).unwrap();
        // Dropped while active: a user abort.
    }
    synced += sync(db);
    if optimistic {
        let mut t1 = db.begin(iso).unwrap();
        t1.get(t, RowKey::from(1)).unwrap();
        let mut t2 = db.begin(iso).unwrap();
        t2.update(t, RowKey::from(1), val(1)).unwrap();
        t2.commit().unwrap();
        t1.update(t, RowKey::from(2), val(2)).unwrap();
        assert_eq!(t1.commit().unwrap_err(), Error::Aborted(AbortReason::ReadValidation));
    }
    let mut tx = db.begin(iso).unwrap();
    assert!(tx.get(t, RowKey::from(0)).unwrap().is_some());
    tx.commit().unwrap();
    synced
}

#[test]
fn commits_and_aborts_follow_the_statistics() {
    for (protocol, optimistic) in [
        (Protocol::MvOcc, true),
        (Protocol::Silo, true),
        (Protocol::Ssn, false),
        (Protocol::Pomvcc, true),
        (Protocol::OneVLock, false),
        (Protocol::MvLock, false),
        (Protocol::Bohm, false),
    ] {
        let (db, rec) = db_with(Options { protocol, ..Options::default() });
        let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
        let synced = run_mix(&db, t.table(), optimistic);
        rec.assert_matches(&db);
        let s = db.stats();
        // The loader, five updates, the optimistic pair's t2, the last
        // reader, and POMVCC's syncs.
        let commits = 1 + 5 + u64::from(optimistic) + 1 + synced;
        assert_eq!(s.committed, commits, "{protocol}");
        assert_eq!(rec.aborts(protocol, AbortReason::User), 2, "{protocol}");
        assert_eq!(rec.aborts(protocol, AbortReason::ReadValidation), u64::from(optimistic), "{protocol}");
        // One duration per successful `commit` call (`run` commits too).
        let calls = rec.samples(&format!("multiverse_commit_duration_seconds{{protocol={}}}", protocol.name()));
        assert_eq!(calls.len() as u64, commits, "{protocol}");
    }
}

#[test]
fn a_write_conflict_is_counted_with_its_reason() {
    let (db, rec) = db_with(Options { protocol: Protocol::MvOcc, ..Options::default() });
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    db.run(Isolation::Serializable, |tx| tx.insert(t, RowKey::from(1), val(1))).unwrap();
    let mut t1 = db.begin(Isolation::Snapshot).unwrap();
    let mut t2 = db.begin(Isolation::Snapshot).unwrap();
    t1.update(t, RowKey::from(1), val(2)).unwrap();
    assert_eq!(t2.update(t, RowKey::from(1), val(3)).unwrap_err(), Error::Aborted(AbortReason::WriteConflict));
    t1.commit().unwrap();
    drop(t2);
    assert_eq!(rec.aborts(Protocol::MvOcc, AbortReason::WriteConflict), 1);
    assert_eq!(rec.aborts(Protocol::MvOcc, AbortReason::User), 0, "a closed transaction's drop counts nothing");
    rec.assert_matches(&db);
}

#[test]
fn a_database_made_without_a_recorder_counts_nowhere() {
    let db = Database::new(Options::default()).unwrap();
    let rec = Recording::default();
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    metrics::with_local_recorder(&rec, || {
        db.run(Isolation::Serializable, |tx| tx.insert(t, RowKey::from(1), val(1))).unwrap();
    });
    assert!(rec.counters.lock().unwrap().is_empty(), "handles are registered when the database is made");
}

/// Adds 1 to its key, or fails (an abort of the procedure's own).
struct Step {
    t: TableId,
    key: u64,
    fail: bool,
}

impl Procedure for Step {
    type Error = Error;
    fn declare(&self, a: &mut AccessSet) {
        a.reads.clear();
        a.writes.clear();
        a.writes.push((self.t, RowKey::from(self.key)));
    }
    fn run(&mut self, tx: &mut ExecTxn<'_>) -> Result<(), Error> {
        if self.fail {
            return Err(Error::InvalidArgument("asked to fail".into()));
        }
        tx.modify(self.t, RowKey::from(self.key), |v| {
            let n = u64::from_le_bytes(v[..8].try_into().unwrap()) + 1;
            v[..8].copy_from_slice(&n.to_le_bytes());
        })
    }
}

struct Steps(Vec<Step>);

impl Feed<Step> for Steps {
    fn next(&mut self, _idle: bool) -> Next<Step> {
        self.0.pop().map_or(Next::Stop, Next::Txn)
    }
    fn done(&mut self, _: Done<Step>) {}
}

#[test]
fn the_bohm_pipeline_counts_per_batch() {
    let (db, rec) = db_with(Options { protocol: Protocol::Bohm, ..Options::default() });
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    db.run(Isolation::Serializable, |tx| {
        for k in 0..4 {
            tx.insert(t, RowKey::from(k), val(0))?;
        }
        Ok(())
    })
    .unwrap();
    let steps = (0..100).map(|i| Step { t: t.into(), key: i % 4, fail: i % 10 == 3 }).collect();
    let cfg = Config { cc_threads: 2, exec_threads: 2, batch_size: 7, batches_in_flight: 3 };
    db.bohm_run(cfg, Steps(steps)).unwrap();
    assert_eq!(db.stats().committed, 1 + 90);
    assert_eq!(rec.aborts(Protocol::Bohm, AbortReason::User), 10);
    rec.assert_matches(&db);
}

#[test]
fn garbage_collection_and_memory() {
    let opts = Options { protocol: Protocol::MvOcc, memory_limit: Some(64 << 20), ..Options::default() };
    let (db, rec) = db_with(opts);
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    db.run(Isolation::Serializable, |tx| tx.insert(t, RowKey::from(1), [0u8; 100])).unwrap();
    for i in 0..500u64 {
        db.run(Isolation::Serializable, |tx| tx.update(t, RowKey::from(1), [i as u8; 100])).unwrap();
    }
    let before = rec.counter("multiverse_gc_versions_reclaimed_total{protocol=mv-occ}");
    let n = db.collect_garbage() as u64;
    assert!(n > 0);
    let reclaimed = rec.counter("multiverse_gc_versions_reclaimed_total{protocol=mv-occ}");
    assert_eq!(reclaimed, before + n);
    assert!(rec.counter("multiverse_gc_collections_total{protocol=mv-occ}") >= 1);
    // Set by each collection that reclaimed something; nothing ran since.
    assert_eq!(rec.gauge("multiverse_memory_used_bytes{protocol=mv-occ}"), Some(db.stats().memory_used as f64));
}

#[test]
fn the_log_and_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        protocol: Protocol::Silo,
        data_dir: Some(dir.path().to_path_buf()),
        durability: Durability::Sync,
        ..Options::default()
    };
    let rec = Arc::new(Recording::default());
    let schema = |db: &Database| db.create_table(TableSpec::hash("t", 64)).map(|_| ());
    let (db, _) = metrics::with_local_recorder(&*rec, || Database::open_with(opts, schema)).unwrap();
    let t = db.table("t").unwrap();
    for k in 0..20 {
        db.run(Isolation::Serializable, |tx| tx.insert(t, RowKey::from(k), val(k))).unwrap();
    }
    // Under sync durability each commit waited for its round: every
    // round that holds one has been counted.
    let flushes = rec.counter("multiverse_wal_flushes_total{protocol=silo}");
    assert!(flushes >= 1 && flushes <= db.stats().log_syncs, "{flushes} {:?}", db.stats());
    assert!(rec.counter("multiverse_wal_bytes_total{protocol=silo}") > db.stats().log_bytes / 2);
    assert!(!rec.samples("multiverse_wal_flush_duration_seconds{protocol=silo}").is_empty());
    db.checkpoint().unwrap();
    assert_eq!(rec.counter("multiverse_checkpoints_total{protocol=silo}"), db.stats().checkpoints);
    assert_eq!(rec.samples("multiverse_checkpoint_duration_seconds{protocol=silo}").len(), 1);
    rec.assert_matches(&db);
}
