//! Randomized concurrency tests of the lock-free pieces (hash index chains,
//! ordered-index slots, version words) driven through tables: concurrent
//! inserts, deletes (and so GC unlinks), updates and reads must never lose or
//! duplicate a row.
//!
//! Each test runs for a fraction of a second by default; `MULTIVERSE_STRESS=<n>`
//! multiplies the work.

mod common;

use common::{stress, RaiseOnDrop};
use multiverse::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

fn policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 100_000,
        initial_backoff: Duration::from_micros(1),
        max_backoff: Duration::from_micros(200),
    }
}

fn u(v: &[u8]) -> u64 {
    u64::from_le_bytes(v.try_into().expect("8-byte value"))
}

/// A read-committed point read of a row that always exists (it is only ever
/// updated) must find it, however its updater's commit interleaves with the
/// read: every committed state holds exactly one version of the row, so the
/// latest committed state must yield exactly one (section 2.2: "at most one
/// version of a record is visible to a read" — and for a live row, one is).
#[test]
fn read_committed_never_misses_a_row_that_always_exists() {
    for spec in [TableSpec::hash("t", 16).into(), TableSpec::ordered("t")] {
        let db = Database::new(Options::default()).unwrap();
        let t = db.create_table(spec).unwrap();
        db.run(Isolation::Snapshot, |x| x.insert(t, Key::from(1), 0u64.to_le_bytes())).unwrap();
        let done = AtomicBool::new(false);
        let misses = AtomicU64::new(0);
        let reads = 1_000_000 * stress();
        let deadline = std::time::Instant::now() + Duration::from_secs(2 * stress());
        std::thread::scope(|s| {
            let _stop = RaiseOnDrop(&done);
            s.spawn(|| {
                let mut i = 0u64;
                while !done.load(Ordering::Acquire) {
                    i += 1;
                    db.run(Isolation::Snapshot, |x| x.update(t, Key::from(1), i.to_le_bytes())).unwrap();
                }
            });
            let mut x = db.begin(Isolation::ReadCommitted).unwrap();
            for i in 0..reads {
                if x.get(t, Key::from(1)).unwrap().is_none() {
                    misses.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                if std::time::Instant::now() > deadline {
                    break;
                }
                if i % 64 == 0 {
                    x.commit().unwrap();
                    x = db.begin(Isolation::ReadCommitted).unwrap();
                }
            }
            x.commit().unwrap();
        });
        assert_eq!(misses.load(Ordering::Relaxed), 0, "read-committed reads missed an existing row");
    }
}

/// Every thread owns a disjoint set of keys and applies random inserts,
/// deletes and updates to them (committing each), keeping a model. Meanwhile
/// a set of stable rows is never touched, a scanner repeatedly takes snapshot
/// scans and checks that every stable row is present exactly once and no
/// key appears twice (and, for ordered tables, that keys are ascending), and
/// garbage collection unlinks dead versions concurrently. At the end the
/// table equals the union of the models.
fn randomized_disjoint_ops(spec: impl Into<TableSpec>, ordered: bool) {
    let spec: TableSpec = spec.into();
    const THREADS: u64 = 3;
    const KEYS_PER_THREAD: u64 = 64;
    const STABLE: std::ops::Range<u64> = 10_000..10_040;
    let ops = 5_000 * stress();
    let db = Database::new(Options::default()).unwrap();
    let t = db.create_table(spec).unwrap();
    db.run(Isolation::Serializable, |x| {
        for k in STABLE {
            x.insert(t, Key::from(k), k.to_le_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    let done = AtomicBool::new(false);
    let scans = AtomicU64::new(0);
    let models: Vec<BTreeMap<u64, u64>> = std::thread::scope(|s| {
        let _stop = RaiseOnDrop(&done);
        let workers: Vec<_> = (0..THREADS)
            .map(|w| {
                let db = &db;
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(77 + w);
                    let mut model = BTreeMap::new();
                    let iso = Isolation::ALL[(w % 4) as usize];
                    for i in 0..ops {
                        let key = rng.gen_range(0..KEYS_PER_THREAD) * THREADS + w;
                        let present = model.contains_key(&key);
                        let mut x = db.begin(iso).unwrap();
                        let change = if present && rng.gen_bool(0.5) {
                            x.delete(t, Key::from(key)).unwrap();
                            None
                        } else if present {
                            x.update(t, Key::from(key), i.to_le_bytes()).unwrap();
                            Some(i)
                        } else {
                            assert_eq!(x.get(t, Key::from(key)).unwrap(), None, "deleted key {key} still visible");
                            x.insert(t, Key::from(key), i.to_le_bytes()).unwrap();
                            Some(i)
                        };
                        // An occasional abort exercises unlinking of aborted versions.
                        if rng.gen_ratio(1, 16) {
                            x.abort();
                            continue;
                        }
                        x.commit().unwrap();
                        match change {
                            Some(v) => model.insert(key, v),
                            None => model.remove(&key),
                        };
                    }
                    model
                })
            })
            .collect();
        s.spawn(|| {
            while !done.load(Ordering::Acquire) {
                db.collect_garbage();
                std::thread::yield_now();
            }
        });
        s.spawn(|| {
            let mut n = 0;
            while !done.load(Ordering::Acquire) || n < 20 {
                let mut x = db.begin(Isolation::Snapshot).unwrap();
                let mut seen = Vec::new();
                x.scan(db.primary(t), .., None, |k, _| {
                    seen.push(k.to_u64().unwrap());
                    true
                })
                .unwrap();
                x.commit().unwrap();
                if ordered {
                    assert!(seen.windows(2).all(|w| w[0] < w[1]), "ordered scan out of order or duplicated");
                }
                seen.sort_unstable();
                let before = seen.len();
                seen.dedup();
                assert_eq!(before, seen.len(), "a snapshot scan returned a key twice");
                for k in STABLE {
                    assert!(seen.binary_search(&k).is_ok(), "stable row {k} lost from a scan");
                }
                n += 1;
            }
            scans.store(n, Ordering::Relaxed);
        });
        workers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(scans.load(Ordering::Relaxed) >= 20);
    let mut expect: BTreeMap<u64, u64> = models.into_iter().flatten().collect();
    for k in STABLE {
        expect.insert(k, k);
    }
    let mut x = db.begin(Isolation::Snapshot).unwrap();
    let mut got = BTreeMap::new();
    x.scan(db.primary(t), .., None, |k, v| {
        assert!(got.insert(k.to_u64().unwrap(), u(v)).is_none());
        true
    })
    .unwrap();
    for (&k, &v) in &expect {
        assert_eq!(x.get(t, Key::from(k)).unwrap().map(|b| u(&b)), Some(v), "key {k}");
    }
    assert_eq!(got, expect);
    x.commit().unwrap();
    db.collect_garbage();
    assert_eq!(db.stats().versions_alive, expect.len() as u64, "only live rows remain after GC");
}

/// Randomized concurrent operations on a hash-index table with 16 buckets
/// (long chains shared by many keys: concurrent head CASes and unlinks).
#[test]
fn randomized_ops_on_hash_index_lose_nothing() {
    randomized_disjoint_ops(TableSpec::hash("h", 16), false);
}

/// The same on an ordered-index table (skip-list slots retired and recreated
/// as keys are deleted, collected and reinserted).
#[test]
fn randomized_ops_on_ordered_index_lose_nothing() {
    randomized_disjoint_ops(TableSpec::ordered("o"), true);
}

/// Threads race to insert or delete keys from one small shared set (real
/// insert/insert and insert/delete conflicts), keeping a count row in step in
/// the same transaction. Exactly one of two racing inserters may win, so at
/// the end the count equals the number of present keys.
fn shared_insert_delete(spec: impl Into<TableSpec>, iso: Isolation) {
    let spec: TableSpec = spec.into();
    const SHARED: u64 = 8;
    const COUNT_KEY: u64 = 1_000_000;
    let ops = 2_000 * stress();
    let db = Database::new(Options::default()).unwrap();
    let t = db.create_table(spec).unwrap();
    db.run(iso, |x| x.insert(t, Key::from(COUNT_KEY), 0u64.to_le_bytes())).unwrap();
    std::thread::scope(|s| {
        for w in 0..3u64 {
            let db = &db;
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(5 + w);
                for _ in 0..ops {
                    let key = Key::from(rng.gen_range(0..SHARED));
                    db.run_with(TxnOptions::new(iso), policy(), |x| {
                        let delta: i64 = if x.get(t, &key)?.is_some() {
                            x.delete(t, &key)?;
                            -1
                        } else {
                            x.insert(t, key.clone(), b"present")?;
                            1
                        };
                        x.update_with(t, Key::from(COUNT_KEY), |o, n| {
                            n.extend_from_slice(&((u(o) as i64 + delta) as u64).to_le_bytes())
                        })
                    })
                    .unwrap_or_else(|e| panic!("{iso}: gave up: {e}"));
                }
            });
        }
        s.spawn(|| {
            for _ in 0..200 {
                db.collect_garbage();
                std::thread::sleep(Duration::from_micros(300));
            }
        });
    });
    let mut x = db.begin(Isolation::Serializable).unwrap();
    let count = u(&x.get(t, Key::from(COUNT_KEY)).unwrap().unwrap());
    let present = (0..SHARED).filter(|&k| x.get(t, Key::from(k)).unwrap().is_some()).count() as u64;
    assert_eq!(count, present, "{iso}: the count row disagrees with the rows present");
}

/// Insert/delete races on a hash table at snapshot isolation.
#[test]
fn racing_inserts_and_deletes_keep_count_consistent_hash_snapshot() {
    shared_insert_delete(TableSpec::hash("h", 16), Isolation::Snapshot);
}

/// Insert/delete races on an ordered table at serializable isolation.
#[test]
fn racing_inserts_and_deletes_keep_count_consistent_ordered_serializable() {
    shared_insert_delete(TableSpec::ordered("o"), Isolation::Serializable);
}

/// Two threads insert the same fresh key at the same moment, round after
/// round, with nothing else shared: exactly one of them may commit (the
/// later-linked inserter sees the earlier one when it re-walks the chain
/// from its own version), and exactly one row with that key is left.
fn same_key_insert_race(spec: impl Into<TableSpec>, iso: Isolation) {
    let spec: TableSpec = spec.into();
    let rounds = 1_000 * stress();
    let db = Database::new(Options::default()).unwrap();
    let t = db.create_table(spec).unwrap();
    let start = std::sync::Barrier::new(2);
    let won: Vec<Vec<bool>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (db, start) = (&db, &start);
                s.spawn(move || {
                    (0..rounds)
                        .map(|r| {
                            start.wait();
                            let Ok(mut x) = db.begin(iso) else { return false };
                            x.insert(t, Key::from(r), b"mine").is_ok() && x.commit().is_ok()
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // One scan counts every key's rows (a range scan per round walks the
    // whole of a hash table: rounds² steps, over 150 s at MULTIVERSE_STRESS=100).
    let mut rows = vec![0u32; rounds as usize];
    let mut x = db.begin(Isolation::Serializable).unwrap();
    x.scan(db.primary(t), .., None, |k, _| {
        let r = k.to_u64().expect("the race inserts u64 keys");
        rows[usize::try_from(r).expect("a round's key")] += 1;
        true
    })
    .unwrap();
    x.commit().unwrap();
    for r in 0..rounds {
        let winners = won[0][r as usize] as u32 + won[1][r as usize] as u32;
        assert!(winners <= 1, "{iso}: round {r}: both inserters committed");
        let rows = rows[r as usize];
        assert_eq!(rows, winners, "{iso}: round {r}: {rows} rows for {winners} committed inserts");
    }
}

#[test]
fn same_key_inserts_race_to_one_winner_hash() {
    for iso in [Isolation::ReadCommitted, Isolation::Snapshot] {
        same_key_insert_race(TableSpec::hash("h", 1024), iso);
    }
}

#[test]
fn same_key_inserts_race_to_one_winner_ordered() {
    for iso in [Isolation::Snapshot, Isolation::Serializable] {
        same_key_insert_race(TableSpec::ordered("o"), iso);
    }
}

/// The same races on an ordered table grouped by the first 7 key bytes
/// (groups of 256 neighbouring keys, created as the races go).
#[test]
fn same_key_inserts_race_to_one_winner_grouped() {
    for iso in [Isolation::ReadCommitted, Isolation::Serializable] {
        same_key_insert_race(TableSpec::ordered_grouped("g", 7), iso);
    }
}

#[test]
fn randomized_ops_on_grouped_ordered_index_lose_nothing() {
    randomized_disjoint_ops(TableSpec::ordered_grouped("g", 7), true);
}
