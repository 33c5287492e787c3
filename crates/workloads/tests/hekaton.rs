//! The Hekaton section 5.1 workload on tiny databases: loading, the
//! transaction logic (reads, then updates with fresh payloads), retries, and
//! the invariants that must hold after concurrent runs.

use multiverse::{AccessSet, Database, Isolation, Key, Options, TxnOptions};
use multiverse_workloads::hekaton::{decode_payload, payload, PAYLOAD};
use multiverse_workloads::{load_parallel, run_txn, AbortCounts, Hekaton, HekatonConfig, Worker, Workload};
use std::collections::HashMap;

fn cfg(rows: u64, reads: u32, writes: u32) -> HekatonConfig {
    HekatonConfig { rows, reads, writes, prefetch: true }
}

/// A database with the workload's table loaded by `parts` concurrent loaders.
fn loaded(c: HekatonConfig, parts: usize) -> (Database, Hekaton) {
    let db = Database::new(Options::default()).unwrap();
    let w = Hekaton::setup(&db, c).unwrap();
    assert_eq!(load_parallel(&db, &w, parts).unwrap(), c.rows, "progress reports every loaded row");
    (db, w)
}

/// Every row's decoded payload, read in one snapshot transaction.
fn table_state(db: &Database, w: &Hekaton) -> Vec<(u64, u64, u64)> {
    let mut t = db.begin(Isolation::Snapshot).unwrap();
    let rows = (0..w.config().rows)
        .map(|k| {
            let v = t.get(w.table(), Key::from_u64(k)).unwrap().unwrap_or_else(|| panic!("row {k} missing"));
            assert_eq!(v.len(), PAYLOAD);
            decode_payload(&v).unwrap()
        })
        .collect();
    t.commit().unwrap();
    rows
}

#[test]
fn load_inserts_every_row_once() {
    let c = cfg(1000, 10, 2);
    let (db, w) = loaded(c, 3);
    for (k, (key, thread, seq)) in table_state(&db, &w).into_iter().enumerate() {
        assert_eq!((key, thread, seq), (k as u64, 0, 0));
    }
    let mut t = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(t.get(w.table(), Key::from_u64(1000)).unwrap(), None, "keys are 0..N");
    t.commit().unwrap();
    assert_eq!(db.stats().versions_alive, 1000);
    assert_eq!(w.load_size(), 1000);
}

#[test]
fn transactions_read_then_update_distinct_rows() {
    let c = cfg(1000, 10, 2);
    let (db, w) = loaded(c, 2);
    let mut k = w.worker(0, 42);
    let mut access = AccessSet::default();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..200 {
        k.next_txn();
        let keys = k.keys().to_vec();
        assert_eq!(keys.len(), 12);
        assert!(keys.iter().all(|&x| x < 1000));
        let distinct: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(distinct.len(), 12, "rows of one transaction are distinct: {keys:?}");
        seen.extend(keys.iter().copied());
        k.declare(&mut access);
        let r: Vec<_> = access.reads.iter().map(|(_, k)| k.to_u64().unwrap()).collect();
        let wr: Vec<_> = access.writes.iter().map(|(_, k)| k.to_u64().unwrap()).collect();
        assert_eq!((&r[..], &wr[..]), (&keys[..10], &keys[10..]));
        assert!(access.reads.iter().chain(&access.writes).all(|(t, _)| *t == w.table()));
    }
    assert!(seen.len() > 800, "keys spread over the table ({} distinct)", seen.len());
    // Same seed and thread, same sequence; another thread, another one.
    let (mut a, mut b, mut c2) = (w.worker(3, 7), w.worker(3, 7), w.worker(4, 7));
    a.next_txn();
    b.next_txn();
    c2.next_txn();
    assert_eq!(a.keys(), b.keys());
    assert_ne!(a.keys(), c2.keys());
    drop(db);
}

#[test]
fn sequential_runs_update_exactly_the_drawn_rows() {
    for iso in Isolation::ALL {
        let c = cfg(1000, 10, 2);
        let (db, w) = loaded(c, 2);
        let mut worker = w.worker(0, 1);
        let mut model: HashMap<u64, (u64, u64)> = HashMap::new();
        let mut aborts = AbortCounts::default();
        for _ in 0..300 {
            worker.next_txn();
            run_txn(&db, &mut worker, TxnOptions::new(iso), &mut aborts).unwrap();
            for &k in &worker.keys()[10..] {
                model.insert(k, (1, worker.seq()));
            }
        }
        assert_eq!(aborts.total(), 0, "no concurrency, no aborts at {iso}");
        assert_eq!(db.stats().committed, 300 + 1000u64.div_ceil(1024).max(2));
        for (k, (key, thread, seq)) in table_state(&db, &w).into_iter().enumerate() {
            assert_eq!(key, k as u64);
            let want = model.get(&(k as u64)).copied().unwrap_or((0, 0));
            assert_eq!((thread, seq), want, "row {k} at {iso}");
        }
        assert!(model.len() > 350, "600 updates landed on about 450 distinct rows");
        assert_ne!(worker.checksum(), 0, "reads saw the rows' key fields");
    }
}

#[test]
fn reads_only_and_empty_transactions_commit() {
    for (r, wr) in [(5, 0), (0, 0), (0, 3)] {
        let (db, w) = loaded(cfg(100, r, wr), 1);
        let mut worker = w.worker(0, 9);
        let mut aborts = AbortCounts::default();
        for _ in 0..50 {
            worker.next_txn();
            run_txn(&db, &mut worker, TxnOptions::new(Isolation::Serializable), &mut aborts).unwrap();
        }
        let updated = table_state(&db, &w).iter().filter(|(_, t, _)| *t != 0).count();
        assert_eq!(updated == 0, wr == 0, "R={r} W={wr}: {updated} rows updated");
    }
}

/// What each writer transaction `(thread + 1, seq)` wrote: its rows.
type Writes = HashMap<(u64, u64), Vec<u64>>;

/// Runs `threads` workers, `txns` transactions each, at `iso`; checks every
/// row ends with a payload some committed transaction wrote to that row.
fn concurrent(iso: Isolation, rows: u64, threads: usize, txns: u64) -> AbortCounts {
    let (db, w) = loaded(cfg(rows, 4, 2), threads);
    let results: Vec<(AbortCounts, Writes)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                let (db, w) = (&db, &w);
                s.spawn(move || {
                    let mut worker = w.worker(i, 5);
                    let mut aborts = AbortCounts::default();
                    let mut wrote = HashMap::new();
                    for _ in 0..txns {
                        worker.next_txn();
                        run_txn(db, &mut worker, TxnOptions::new(iso), &mut aborts).unwrap();
                        wrote.insert((i as u64 + 1, worker.seq()), worker.keys()[4..].to_vec());
                    }
                    (aborts, wrote)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut aborts = AbortCounts::default();
    let mut wrote = HashMap::new();
    for (a, m) in results {
        aborts.merge(&a);
        wrote.extend(m);
    }
    let st = db.stats();
    assert_eq!(st.aborted(), aborts.total(), "every abort was counted by the driver");
    assert_eq!(st.committed, threads as u64 * txns + rows.div_ceil(1024).max(threads as u64));
    for (k, (key, thread, seq)) in table_state(&db, &w).into_iter().enumerate() {
        assert_eq!(key, k as u64, "row {k} holds another row's payload");
        if thread != 0 {
            let keys = wrote.get(&(thread, seq)).unwrap_or_else(|| panic!("row {k}: unknown writer {thread}/{seq}"));
            assert!(keys.contains(&(k as u64)), "row {k} written by a transaction that did not write it");
        }
    }
    aborts
}

#[test]
fn concurrent_snapshot_and_serializable_runs_keep_rows_intact() {
    // 20 rows, 2 threads: heavy contention, so aborts happen and are retried.
    for iso in [Isolation::Snapshot, Isolation::RepeatableRead, Isolation::Serializable] {
        let a = concurrent(iso, 20, 2, 400);
        assert_eq!(a.0[multiverse::AbortReason::User], 0);
    }
}

/// Read committed under contention: a regression test for a read time fixed
/// at "the end of time" (engine commit 4852a1f), with which a reader that
/// found a row's new version uncommitted and then its old version already
/// ended saw no version at all, and the workload reported the row missing.
#[test]
fn concurrent_read_committed_runs_keep_rows_intact() {
    concurrent(Isolation::ReadCommitted, 6, 2, 20_000);
}

#[test]
fn payloads_encode_writer_and_row() {
    assert_eq!(decode_payload(&payload(12, 3, 4)), Some((12, 3, 4)));
    let mut bad = payload(1, 1, 1).to_vec();
    bad.push(0);
    assert_eq!(decode_payload(&bad), None);
}

#[test]
fn setup_refuses_impossible_configurations() {
    let db = Database::new(Options::default()).unwrap();
    let e = Hekaton::setup(&db, cfg(3, 2, 2)).unwrap_err();
    assert!(e.contains("only 3"), "{e}");
    assert!(Hekaton::setup(&db, cfg(0, 0, 0)).is_err());
    Hekaton::setup(&db, cfg(4, 2, 2)).unwrap();
    let e = Hekaton::setup(&db, cfg(4, 2, 2)).unwrap_err();
    assert!(e.contains("already exists"), "{e}");
}
