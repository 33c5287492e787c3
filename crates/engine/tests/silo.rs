//! Silo OCC (SOSP 2013, section 4) on the single-version store: operations,
//! the abort reasons of its commit protocol, record replacement, and
//! bounded memory.

use multiverse::*;
use std::time::{Duration, Instant};

fn open() -> (Database, TableId) {
    let db = Database::new(Options { protocol: Protocol::Silo, ..Options::default() }).unwrap();
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap().table();
    (db, t)
}

fn get(db: &Database, t: TableId, k: u64) -> Option<Vec<u8>> {
    db.run(Isolation::Serializable, |x| x.get(t, Key::from(k))).unwrap()
}

#[test]
fn only_serializable_is_offered() {
    let (db, _) = open();
    assert!(matches!(db.begin(Isolation::Snapshot), Err(Error::InvalidIsolation { .. })));
    assert_eq!(Protocol::Silo.isolation_levels(), &[Isolation::Serializable]);
}

#[test]
fn insert_update_delete_and_reinsert() {
    let (db, t) = open();
    db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"one")).unwrap();
    assert_eq!(get(&db, t, 1).as_deref(), Some(&b"one"[..]));
    // Same length: in place. Longer: a new record replaces the old.
    db.run(Isolation::Serializable, |x| x.update(t, Key::from(1), b"uno")).unwrap();
    assert_eq!(get(&db, t, 1).as_deref(), Some(&b"uno"[..]));
    db.run(Isolation::Serializable, |x| x.update(t, Key::from(1), b"a longer value")).unwrap();
    assert_eq!(get(&db, t, 1).as_deref(), Some(&b"a longer value"[..]));
    db.run(Isolation::Serializable, |x| x.delete(t, Key::from(1))).unwrap();
    assert_eq!(get(&db, t, 1), None);
    db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"again")).unwrap();
    assert_eq!(get(&db, t, 1).as_deref(), Some(&b"again"[..]));
    // Errors that leave the transaction usable.
    let mut x = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(x.insert(t, Key::from(1), b"dup"), Err(Error::DuplicateKey));
    assert_eq!(x.update(t, Key::from(9), b"nine"), Err(Error::KeyNotFound));
    x.insert(t, Key::from(9), b"nine").unwrap();
    x.commit().unwrap();
    assert_eq!(get(&db, t, 9).as_deref(), Some(&b"nine"[..]));
}

#[test]
fn a_transaction_reads_its_own_writes() {
    let (db, t) = open();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    x.insert(t, Key::from(1), b"a").unwrap();
    assert_eq!(x.get(t, Key::from(1)).unwrap().as_deref(), Some(&b"a"[..]));
    x.update(t, Key::from(1), b"bb").unwrap();
    assert_eq!(x.get(t, Key::from(1)).unwrap().as_deref(), Some(&b"bb"[..]));
    x.delete(t, Key::from(1)).unwrap();
    assert_eq!(x.get(t, Key::from(1)).unwrap(), None);
    x.insert(t, Key::from(1), b"c").unwrap();
    let mut seen = Vec::new();
    x.scan(db.primary(t), .., None, |k, v| {
        seen.push((k.u64_at(0).unwrap(), v.to_vec()));
        true
    })
    .unwrap();
    assert_eq!(seen, vec![(1, b"c".to_vec())]);
    x.commit().unwrap();
    assert_eq!(get(&db, t, 1).as_deref(), Some(&b"c"[..]));
    // Nobody saw the uncommitted row meanwhile, and an abort leaves nothing.
    let mut y = db.begin(Isolation::Serializable).unwrap();
    y.insert(t, Key::from(2), b"x").unwrap();
    assert_eq!(get(&db, t, 2), None);
    y.abort();
    assert_eq!(get(&db, t, 2), None);
}

#[test]
fn a_changed_read_fails_validation() {
    let (db, t) = open();
    db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"10")).unwrap();
    let mut a = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(a.get(t, Key::from(1)).unwrap().as_deref(), Some(&b"10"[..]));
    db.run(Isolation::Serializable, |x| x.update(t, Key::from(1), b"11")).unwrap();
    a.insert(t, Key::from(2), b"20").unwrap();
    assert_eq!(a.commit().unwrap_err(), Error::Aborted(AbortReason::ReadValidation));
    assert_eq!(get(&db, t, 2), None, "the aborted insert left no row");
}

#[test]
fn a_row_that_appears_after_a_miss_is_a_phantom() {
    let (db, t) = open();
    let mut a = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(a.get(t, Key::from(5)).unwrap(), None);
    db.run(Isolation::Serializable, |x| x.insert(t, Key::from(5), b"5")).unwrap();
    a.insert(t, Key::from(6), b"6").unwrap();
    assert_eq!(a.commit().unwrap_err(), Error::Aborted(AbortReason::Phantom));
    // Also when the row came and went again before the commit.
    let mut b = db.begin(Isolation::Serializable).unwrap();
    let mut n = 0;
    b.scan(db.primary(t), .., None, |_, _| {
        n += 1;
        true
    })
    .unwrap();
    assert_eq!(n, 1);
    db.run(Isolation::Serializable, |x| x.insert(t, Key::from(7), b"7")).unwrap();
    db.run(Isolation::Serializable, |x| x.delete(t, Key::from(7))).unwrap();
    b.insert(t, Key::from(8), b"8").unwrap();
    assert_eq!(b.commit().unwrap_err(), Error::Aborted(AbortReason::Phantom));
}

#[test]
fn an_insert_in_progress_blocks_a_second_inserter() {
    let (db, t) = open();
    let mut a = db.begin(Isolation::Serializable).unwrap();
    a.insert(t, Key::from(1), b"a").unwrap();
    let mut b = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(b.insert(t, Key::from(1), b"b"), Err(Error::Aborted(AbortReason::WriteConflict)));
    a.commit().unwrap();
    assert_eq!(get(&db, t, 1).as_deref(), Some(&b"a"[..]));
}

#[test]
fn a_secondary_key_change_moves_the_row() {
    let db = Database::new(Options { protocol: Protocol::Silo, ..Options::default() }).unwrap();
    fn first_byte(_: &Key, v: &[u8]) -> Key {
        Key::from(v[0] as u64)
    }
    let t = db
        .create_table(TableSpec::hash("t", 64).secondary("by_first", IndexKind::Hash { capacity: 64 }, first_byte))
        .unwrap();
    let ix = db.index(t, "by_first").unwrap();
    db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), [3, 0])).unwrap();
    db.run(Isolation::Serializable, |x| x.update(t, Key::from(1), [4, 0])).unwrap();
    let rows = |b: u64| {
        db.run(Isolation::Serializable, |x| {
            let mut n = Vec::new();
            x.get_by(ix, Key::from(b), |k, v| {
                n.push((k.u64_at(0).unwrap(), v.to_vec()));
                true
            })?;
            Ok(n)
        })
        .unwrap()
    };
    assert_eq!(rows(3), vec![]);
    assert_eq!(rows(4), vec![(1, vec![4, 0])]);
}

#[test]
fn concurrent_increments_are_not_lost() {
    let (db, t) = open();
    db.run(Isolation::Serializable, |x| x.insert(t, Key::from(0), 0u64.to_le_bytes())).unwrap();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..5_000 {
                    db.run(Isolation::Serializable, |x| {
                        x.modify(t, Key::from(0), |v| {
                            let n = u64::from_le_bytes(v[..8].try_into().unwrap());
                            v.copy_from_slice(&(n + 1).to_le_bytes());
                        })
                    })
                    .unwrap();
                }
            });
        }
    });
    assert_eq!(get(&db, t, 0).unwrap(), 10_000u64.to_le_bytes());
}

/// Deleted and replaced records are freed once every transaction that
/// was open when they were retired has ended (the epoch moves every 40 ms).
#[test]
fn retired_records_are_freed() {
    let (db, t) = open();
    let start = Instant::now();
    let mut i = 0u64;
    while start.elapsed() < Duration::from_millis(300) {
        let k = Key::from(i % 8);
        db.run(Isolation::Serializable, |x| match x.delete(t, &k) {
            Err(Error::KeyNotFound) => x.insert(t, k.clone(), i.to_le_bytes()),
            r => r,
        })
        .unwrap();
        i += 1;
    }
    assert!(i > 1_000, "only {i} transactions");
    // Let the epoch move past every retirement, then collect.
    std::thread::sleep(Duration::from_millis(100));
    for _ in 0..200 {
        db.run(Isolation::Serializable, |x| x.get(t, Key::from(0)).map(|_| ())).unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    for _ in 0..200 {
        db.run(Isolation::Serializable, |x| x.get(t, Key::from(0)).map(|_| ())).unwrap();
    }
    db.collect_garbage();
    let s = db.stats();
    assert!(s.versions_alive <= 8, "{s:?} after {i} transactions");
}

/// A row moved to a new record (a value of another length) never looks
/// missing to a concurrent lookup: the writer links the new record before
/// it retires the old, and a walk that met the old one retired walks
/// again. Without that, `update_with` answered `KeyNotFound` for a row that
/// always existed (the campaign's list-append run, seed
/// 16455540040125181858). Under the same protocols, 1V's lookups share it.
/// A row that moves faster than a walk can follow (eight walks, each
/// meeting a record retired since the walk before) aborts the reader: an
/// abort may happen, a wrong "no row" never (`MULTIVERSE_STRESS=100` met
/// it three times in 50 s of moves when the lookup still reported none
/// then).
#[test]
fn a_moving_row_is_never_missing() {
    let stress: u64 = std::env::var("MULTIVERSE_STRESS").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    for protocol in [Protocol::Silo, Protocol::OneVLock] {
        let db = Database::new(Options { protocol, ..Options::default() }).unwrap();
        // One bucket and many rows: a walk to key 7 (linked first, so
        // last in the chain) is long, which widens the window.
        let t = db.create_table(TableSpec::hash("t", 1)).unwrap();
        db.run(Isolation::Serializable, |x| x.insert(t, Key::from(7), b"a")).unwrap();
        for k in 100..400u64 {
            db.run(Isolation::Serializable, |x| x.insert(t, Key::from(k), b"filler")).unwrap();
        }
        let stop = std::sync::atomic::AtomicBool::new(false);
        let missing = std::sync::atomic::AtomicU64::new(0);
        let deadline = Instant::now() + Duration::from_millis(500 * stress);
        std::thread::scope(|s| {
            // The writer: values of 1..=64 bytes in turn, each a move.
            s.spawn(|| {
                let mut n = 0usize;
                while Instant::now() < deadline {
                    n = n % 64 + 1;
                    let v = vec![b'x'; n];
                    db.run(Isolation::Serializable, |x| x.update(t, Key::from(7), &v)).unwrap();
                }
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            });
            s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let mut x = db.begin(Isolation::Serializable).unwrap();
                    if let Ok(None) = x.get(t, Key::from(7)) {
                        missing.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    drop(x);
                }
            });
        });
        assert_eq!(missing.into_inner(), 0, "{protocol}: lookups found no record of a row that always existed");
    }
}

/// The same with a collector unlinking the row's old records meanwhile.
/// A lookup that met the row's last record retired (moved past it) used to
/// walk again only if the walk met more retired records than the one
/// before; the collector unlinking older ones between the two walks kept
/// that count from rising, and `get` answered "no row" for a row that
/// always existed (24 of 97 million reads in a minute of a release build;
/// here about once in 10 to 20 s of Silo: `MULTIVERSE_STRESS=20`). A
/// lookup of the row finds it (or aborts); `update` never answers
/// `KeyNotFound`.
#[test]
fn a_moving_row_is_never_missing_while_the_collector_runs() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
    let stress: u64 = std::env::var("MULTIVERSE_STRESS").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let k = Key::from(7u64);
    for protocol in [Protocol::Silo, Protocol::OneVLock] {
        let db = Database::new(Options { protocol, ..Options::default() }).unwrap();
        let t = db.create_table(TableSpec::hash("t", 1)).unwrap();
        db.run(Isolation::Serializable, |x| x.insert(t, k.clone(), b"a")).unwrap();
        let stop = AtomicBool::new(false);
        let (missing, not_found, reads) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
        let deadline = Instant::now() + Duration::from_millis(1000 * stress);
        std::thread::scope(|s| {
            // The writer: values of one and two bytes in turn, each a move.
            s.spawn(|| {
                let mut n = 0u64;
                while Instant::now() < deadline {
                    n += 1;
                    let v: &[u8] = if n % 2 == 0 { b"a" } else { b"bb" };
                    match db.run(Isolation::Serializable, |x| x.update(t, &k, v)) {
                        Err(Error::KeyNotFound) => _ = not_found.fetch_add(1, Relaxed),
                        r => r.unwrap(),
                    }
                }
                stop.store(true, Relaxed);
            });
            // The collector, all along.
            s.spawn(|| {
                while !stop.load(Relaxed) {
                    db.collect_garbage();
                }
            });
            // Two readers, and a writer that never commits (its update
            // looks the key up as a read does).
            for _ in 0..2 {
                s.spawn(|| {
                    while !stop.load(Relaxed) {
                        let mut x = db.begin(Isolation::Serializable).unwrap();
                        if let Ok(None) = x.get(t, &k) {
                            missing.fetch_add(1, Relaxed);
                        }
                        reads.fetch_add(1, Relaxed);
                    }
                });
            }
            s.spawn(|| {
                while !stop.load(Relaxed) {
                    let mut x = db.begin(Isolation::Serializable).unwrap();
                    if let Err(Error::KeyNotFound) = x.update(t, &k, b"ccc") {
                        not_found.fetch_add(1, Relaxed);
                    }
                    reads.fetch_add(1, Relaxed);
                }
            });
        });
        let (missing, not_found, reads) = (missing.into_inner(), not_found.into_inner(), reads.into_inner());
        eprintln!("{protocol}: {reads} lookups, {missing} gets and {not_found} updates found no row");
        assert!(reads > 0, "{protocol}: no lookups ran");
        assert_eq!(
            (missing, not_found),
            (0, 0),
            "{protocol}: of {reads} lookups, (gets that found no row, updates that found no row)"
        );
    }
}

/// A scan hands every row of its range on once, however the rows move
/// under it: a Silo walk that met a record replaced while it read it
/// started over and handed the rows before it on a second time (the
/// verification campaign's predicate workload saw a committed scan count
/// 4 rows of a range holding 2, seed 2618). Now such a scan aborts (a retry
/// reads again); a scan that commits has seen each key once, in order.
#[test]
fn a_scan_hands_each_row_once_while_rows_move() {
    let stress: u64 = std::env::var("MULTIVERSE_STRESS").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    for protocol in [Protocol::Silo, Protocol::OneVLock] {
        let db = Database::new(Options { protocol, ..Options::default() }).unwrap();
        let t = db.create_table(TableSpec::ordered("t")).unwrap();
        const ROWS: u64 = 16;
        for k in 0..ROWS {
            db.run(Isolation::Serializable, |x| x.insert(t, Key::from(k), b"a")).unwrap();
        }
        let stop = std::sync::atomic::AtomicBool::new(false);
        let (wrong, scans) = (std::sync::atomic::AtomicU64::new(0), std::sync::atomic::AtomicU64::new(0));
        let deadline = Instant::now() + Duration::from_millis(500 * stress);
        std::thread::scope(|s| {
            // The writer: every row in turn, values of 1..=64 bytes, each a move.
            s.spawn(|| {
                let mut n = 0usize;
                while Instant::now() < deadline {
                    n = n % 64 + 1;
                    let v = vec![b'x'; n];
                    let k = Key::from(n as u64 % ROWS);
                    db.run(Isolation::Serializable, |x| x.update(t, &k, &v)).unwrap();
                    if n % 4 == 0 {
                        // A pause now and then, in which a scan can commit
                        // (without it a debug build's Silo scans all abort).
                        std::thread::sleep(Duration::from_micros(100));
                    }
                }
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            });
            s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let mut x = db.begin(Isolation::Serializable).unwrap();
                    let mut keys = Vec::new();
                    let r = x.scan(db.primary(t), .., None, |k, _| {
                        keys.push(k.clone());
                        true
                    });
                    // Silo reads optimistically: a scan may see a moving
                    // row's old record retired and miss the new one, which
                    // its commit then finds (a phantom) — only a committed
                    // scan must have seen every key once.
                    if r.is_ok() && x.commit().is_ok() {
                        scans.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let want: Vec<Key> = (0..ROWS).map(Key::from).collect();
                        if keys != want && wrong.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 3 {
                            eprintln!(
                                "{protocol}: a scan handed on {:?}",
                                keys.iter().map(|k| k.to_u64()).collect::<Vec<_>>()
                            );
                        }
                    }
                }
            });
        });
        assert!(scans.into_inner() > 0, "{protocol}: no scan committed");
        assert_eq!(
            wrong.into_inner(),
            0,
            "{protocol}: committed scans handed on rows other than each key once, in order"
        );
    }
}

/// A row whose new value no longer fits moves to a new record (section
/// 4.5); until the old record is unlinked, both sit at the row's key in
/// the ordered index. A range read that stops at that row (an iterator
/// between batches, a scan whose callback stops) must not count the old
/// record it did not walk as a phantom: a reader alone used to abort at
/// every attempt.
#[test]
fn a_scan_stopped_at_a_moved_row_commits() {
    use multiverse::{Database, Isolation, Options, Protocol, TableSpec};
    let db = Database::new(Options { protocol: Protocol::Silo, ..Options::default() }).unwrap();
    let t = db.create_table(TableSpec::ordered("n")).unwrap();
    db.run(Isolation::Serializable, |x| {
        [1u64, 2, 300, 70_000].into_iter().try_for_each(|k| x.insert(t, k, k.to_le_bytes()))
    })
    .unwrap();
    // 300 moves: its new value is longer than the record holds.
    db.run(Isolation::Serializable, |x| x.update(t, 300, "three hundred")).unwrap();
    for _ in 0..3 {
        let mut x = db.begin(Isolation::Serializable).unwrap();
        assert_eq!(x.range(t, 1..=70_000).unwrap().count(), 4);
        x.commit().unwrap();
        // A scan whose callback stops at the moved row.
        let mut x = db.begin(Isolation::Serializable).unwrap();
        let mut n = 0;
        x.scan(t, 1.., None, |k, _| {
            n += 1;
            k.to_u64() != Some(300)
        })
        .unwrap();
        assert_eq!(n, 3);
        x.commit().unwrap();
    }
}
