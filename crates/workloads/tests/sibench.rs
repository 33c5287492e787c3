//! SIBENCH (SSN paper section 7.2) on tiny databases: the access generator,
//! each transaction's exact reads and writes, the TIDs and write counts left
//! in the records, the query group, and concurrent runs.

mod common;

use common::{spy_run, Spy};
use multiverse::{AbortReason, AccessSet, Database, Isolation, Key, Options, TxnOptions};
use multiverse_workloads::sibench::{
    decode, split_tid, tid, value, Sibench, SibenchConfig, Writes, QUERY, TYPES, UPDATE,
};
use multiverse_workloads::{run_txn, AbortCounts, Worker, Workload};
use std::collections::HashMap;

fn cfg(rows: u64, accesses: (u32, u32), writes: Writes, query_threads: usize) -> SibenchConfig {
    SibenchConfig { rows, accesses, writes, query_threads, query_accesses: (20, 30) }
}

fn loaded(c: SibenchConfig, parts: usize) -> (Database, Sibench) {
    let db = Database::new(Options::default()).unwrap();
    let w = Sibench::setup(&db, c).unwrap();
    std::thread::scope(|s| {
        for p in 0..parts {
            let (db, w) = (&db, &w);
            s.spawn(move || w.load(db, p, parts, &|_: u64| {}).unwrap());
        }
    });
    (db, w)
}

/// Every record's (tid, writes).
fn state(db: &Database, w: &Sibench) -> Vec<(u64, u64)> {
    let mut t = db.begin(Isolation::Snapshot).unwrap();
    let v = (0..w.config().rows)
        .map(|k| {
            let v = t.get(w.table(), Key::from_u64(k)).unwrap().unwrap_or_else(|| panic!("record {k} missing"));
            decode(&v).unwrap_or_else(|| panic!("record {k} is not 16 bytes"))
        })
        .collect();
    t.commit().unwrap();
    v
}

#[test]
fn load_leaves_every_record_unwritten() {
    let (db, w) = loaded(cfg(1000, (8, 12), Writes::Pct(25.0), 0), 3);
    assert_eq!(state(&db, &w), vec![(0, 0); 1000]);
    assert_eq!(db.stats().versions_alive, 1000);
    assert_eq!(w.txn_types(), ["update"], "no query group");
    assert_eq!(w.load_size(), 1000);
    let ok = w.check_consistency(&db).unwrap();
    assert!(ok.contains("1000 records") && ok.contains("the 0 committed writes"), "{ok}");
}

#[test]
fn accesses_are_uniform_in_the_range_and_the_last_m_write() {
    let (_db, w) = loaded(cfg(50, (8, 12), Writes::Pct(25.0), 0), 1);
    let mut k = w.worker(0, 1);
    let mut sizes = HashMap::new();
    let mut repeats = 0;
    for _ in 0..2000 {
        k.next_txn();
        assert_eq!(k.txn_type(), UPDATE);
        let n = k.keys().len();
        assert!((8..=12).contains(&n), "{n} accesses");
        assert_eq!(k.writes(), [2, 2, 3, 3, 3][n - 8], "25% of {n}, rounded");
        assert!(k.keys().iter().all(|&x| x < 50));
        let mut d = k.keys().to_vec();
        d.sort_unstable();
        d.dedup();
        repeats += (d.len() < n) as u32;
        *sizes.entry(n).or_insert(0u32) += 1;
    }
    // Each size about 400 times of 2000.
    assert!(sizes.values().all(|&c| (300..500).contains(&c)), "{sizes:?}");
    assert!(repeats > 800, "records may repeat within a transaction (50 records): {repeats}");
    // A count of writes, capped by the accesses.
    let (_db, w) = loaded(cfg(50, (1, 4), Writes::Count(3), 0), 1);
    let mut k = w.worker(0, 1);
    for _ in 0..100 {
        k.next_txn();
        assert_eq!(k.writes(), k.keys().len().min(3));
    }
}

#[test]
fn transactions_read_then_write_exactly_their_accesses() {
    for iso in Isolation::ALL {
        let (db, w) = loaded(cfg(40, (4, 16), Writes::Pct(50.0), 0), 2);
        let mut k = w.worker(2, 3);
        let mut want = vec![(0u64, 0u64); 40];
        let mut committed = 0;
        for _ in 0..300 {
            k.next_txn();
            let (r, wr) = spy_run("sibench", &db, &mut k, iso);
            let m = k.writes();
            let keys = k.keys();
            assert_eq!((&r[..], &wr[..]), (&keys[..keys.len() - m], &keys[keys.len() - m..]));
            for &x in &wr {
                want[x as usize] = (k.tid(), want[x as usize].1 + 1);
            }
            committed += m as u64;
        }
        assert_eq!(state(&db, &w), want, "at {iso}");
        assert_eq!(k.committed_writes(), committed);
        assert_eq!(split_tid(k.tid()), (3, 300), "thread 2, transaction 300");
        k.finish();
        w.check_consistency(&db).unwrap();
    }
}

#[test]
fn repeated_overwrites_in_one_transaction_all_count() {
    // One record, every access a write: each transaction writes it 3 times.
    let (db, w) = loaded(cfg(1, (3, 3), Writes::Count(3), 0), 1);
    let mut k = w.worker(0, 4);
    let mut aborts = AbortCounts::default();
    for _ in 0..10 {
        k.next_txn();
        assert_eq!(k.keys(), [0, 0, 0]);
        run_txn(&db, &mut k, TxnOptions::new(Isolation::Serializable), &mut aborts).unwrap();
    }
    assert_eq!(state(&db, &w), vec![(tid(0, 10), 30)]);
    k.finish();
    assert_eq!(w.committed_writes(), 30);
    w.check_consistency(&db).unwrap();
    let mut a = AccessSet::default();
    k.declare(&mut a);
    assert_eq!((a.reads.len(), a.writes.len()), (0, 1), "declared without repeats");
}

#[test]
fn reads_see_the_last_writers_tid() {
    let (db, w) = loaded(cfg(1, (2, 2), Writes::Count(1), 0), 1);
    let mut k = w.worker(0, 5);
    let mut aborts = AbortCounts::default();
    // Each transaction reads record 0 (the previous transaction's TID), then writes it.
    let mut sum = 0u64;
    for i in 1..=5u64 {
        k.next_txn();
        run_txn(&db, &mut k, TxnOptions::new(Isolation::Snapshot), &mut aborts).unwrap();
        sum += if i == 1 { 0 } else { tid(0, i - 1) };
        assert_eq!(k.checksum(), sum);
    }
    drop((db, w));
}

#[test]
fn the_query_group_reads_only() {
    let (db, w) = loaded(cfg(100, (8, 12), Writes::Pct(25.0), 2), 1);
    assert_eq!(w.txn_types(), TYPES);
    let mut a = AccessSet::default();
    for thread in 0..3 {
        let mut k = w.worker(thread, 6);
        for _ in 0..20 {
            k.next_txn();
            let opts = k.options(TxnOptions::new(Isolation::ReadCommitted));
            if thread < 2 {
                assert_eq!(k.txn_type(), QUERY);
                assert!(opts.read_only);
                assert!((20..=30).contains(&k.keys().len()));
                assert_eq!(k.writes(), 0);
            } else {
                assert_eq!(k.txn_type(), UPDATE);
                assert!(!opts.read_only);
            }
            let mut t = db.begin_with(opts).unwrap();
            let mut spy = Spy::new("sibench", &mut t);
            k.execute(&mut spy).unwrap();
            assert_eq!(spy.reads.len() + spy.writes.len(), k.keys().len());
            t.commit().unwrap();
            k.committed();
            k.declare(&mut a);
            let mut reads: Vec<u64> = k.keys()[..k.keys().len() - k.writes()].to_vec();
            reads.sort_unstable();
            reads.dedup();
            let declared: Vec<u64> = a.reads.iter().map(|(_, x)| x.to_u64().unwrap()).collect();
            assert_eq!(declared, reads);
        }
        k.finish();
    }
    w.check_consistency(&db).unwrap();
}

#[test]
fn concurrent_groups_keep_tids_and_counts_exact() {
    for iso in [Isolation::ReadCommitted, Isolation::Snapshot, Isolation::Serializable] {
        // 30 records, two updaters and a query thread: heavy contention.
        let (db, w) = loaded(cfg(30, (4, 8), Writes::Pct(50.0), 1), 3);
        let per_type: Vec<(usize, u64, AbortCounts)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3)
                .map(|i| {
                    let (db, w) = (&db, &w);
                    s.spawn(move || {
                        let mut k = w.worker(i, 7);
                        let mut aborts = AbortCounts::default();
                        for _ in 0..400 {
                            k.next_txn();
                            run_txn(db, &mut k, TxnOptions::new(iso), &mut aborts).unwrap();
                        }
                        let ty = k.txn_type();
                        let writes = k.committed_writes();
                        k.finish();
                        (ty, writes, aborts)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(per_type[0].0, QUERY);
        assert_eq!(per_type[0].1, 0, "queries do not write");
        // Read-only: nothing to validate (a commit dependency on a writer
        // that then aborts is the only way a query can fail under MV/O).
        let q = per_type[0].2;
        assert_eq!(q.total(), q.0[AbortReason::CommitDependency], "{q:?}");
        let written: u64 = per_type.iter().map(|p| p.1).sum();
        assert!(written > 800, "{written} writes");
        let st = state(&db, &w);
        assert_eq!(st.iter().map(|s| s.1).sum::<u64>(), written, "at {iso}");
        for (k, (t, n)) in st.into_iter().enumerate() {
            let (th, seq) = split_tid(t);
            assert!(n == 0 || (th == 2 || th == 3) && (1..=400).contains(&seq), "record {k}: {th}/{seq}");
        }
        w.check_consistency(&db).unwrap();
    }
}

#[test]
fn the_consistency_check_catches_foreign_tids_and_lost_writes() {
    let (db, w) = loaded(cfg(20, (4, 4), Writes::Count(2), 0), 1);
    let mut k = w.worker(0, 8);
    let mut aborts = AbortCounts::default();
    for _ in 0..10 {
        k.next_txn();
        run_txn(&db, &mut k, TxnOptions::new(Isolation::Snapshot), &mut aborts).unwrap();
    }
    k.finish();
    w.check_consistency(&db).unwrap();
    // A TID of a thread that never ran.
    let key = Key::from_u64(0);
    let (_, n) = state(&db, &w)[0];
    db.run(Isolation::Snapshot, |t| t.update(w.table(), &key, value(tid(5, 1), n.max(1)))).unwrap();
    let e = w.check_consistency(&db).unwrap_err();
    assert!(e.contains("record 0") && e.contains("no such writer"), "{e}");
    // A transaction number the thread never reached.
    db.run(Isolation::Snapshot, |t| t.update(w.table(), &key, value(tid(0, 11), n.max(1)))).unwrap();
    assert!(w.check_consistency(&db).unwrap_err().contains("no such writer"));
    // A lost write.
    db.run(Isolation::Snapshot, |t| t.update(w.table(), &key, value(tid(0, 10), n + 1))).unwrap();
    let e = w.check_consistency(&db).unwrap_err();
    assert!(e.contains("add up to 21") && e.contains("20 writes committed"), "{e}");
}

#[test]
fn setup_refuses_bad_configurations() {
    let db = Database::new(Options::default()).unwrap();
    assert!(Sibench::setup(&db, cfg(0, (8, 12), Writes::Count(1), 0)).is_err());
    let e = Sibench::setup(&db, cfg(10, (9, 8), Writes::Count(1), 0)).unwrap_err();
    assert!(e.contains("--sibench-accesses 9-8"), "{e}");
    let e = Sibench::setup(&db, cfg(10, (1, 8), Writes::Pct(101.0), 0)).unwrap_err();
    assert!(e.contains("--sibench-writes"), "{e}");
    let d = SibenchConfig::default();
    assert_eq!(
        (d.rows, d.accesses, d.writes, d.query_threads, d.query_accesses),
        (1000, (8, 12), Writes::Pct(25.0), 0, (100, 200))
    );
}
