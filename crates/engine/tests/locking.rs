//! Single-version locking (Hekaton VLDB 2011 section 5, `1v-lock`) and
//! ordered 2PL (BOHM section 4, `2pl-ordered`): operations, blocking, the
//! deadlock detection (`deadlock`) and the `lock-timeout` abort, read committed never seeing
//! uncommitted data, key-range locks on ordered scans, record replacement
//! under a waiting scan, and bounded memory.

use multiverse::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn open_with(protocol: Protocol, timeout: Duration) -> (Database, TableId, TableId) {
    let db = Database::new(Options { protocol, lock_timeout: timeout, ..Options::default() }).unwrap();
    let h = db.create_table(TableSpec::hash("h", 64)).unwrap().table();
    let o = db.create_table(TableSpec::ordered("o")).unwrap();
    (db, h, o)
}

fn open() -> (Database, TableId, TableId) {
    open_with(Protocol::OneVLock, Duration::from_millis(200))
}

fn u(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

/// A 1V database with a 20-s lock timeout, deadlock checks every
/// `deadlock_interval`, and an empty hash table.
fn one_v(deadlock_interval: Duration) -> (Database, TableId) {
    let db = Database::new(Options {
        protocol: Protocol::OneVLock,
        lock_timeout: Duration::from_secs(20),
        deadlock_interval,
        ..Options::default()
    })
    .unwrap();
    let h = db.create_table(TableSpec::hash("h", 64)).unwrap().table();
    (db, h)
}

fn get(db: &Database, t: TableId, k: u64) -> Option<u64> {
    db.run(Isolation::Serializable, |x| x.get(t, Key::from(k)))
        .unwrap()
        .map(|v| u64::from_le_bytes(v.try_into().unwrap()))
}

#[test]
fn levels_offered() {
    assert_eq!(
        Protocol::OneVLock.isolation_levels(),
        &[Isolation::ReadCommitted, Isolation::RepeatableRead, Isolation::Serializable]
    );
    assert_eq!(Protocol::TwoPlOrdered.isolation_levels(), &[Isolation::Serializable]);
    let (db, _, _) = open();
    assert!(matches!(db.begin(Isolation::Snapshot), Err(Error::InvalidIsolation { .. })));
}

#[test]
fn operations_and_own_writes() {
    for p in [Protocol::OneVLock, Protocol::TwoPlOrdered] {
        let (db, h, o) = open_with(p, Duration::from_millis(200));
        for t in [h, o] {
            db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"one")).unwrap();
            let mut x = db.begin(Isolation::Serializable).unwrap();
            assert_eq!(x.insert(t, Key::from(1), b"dup"), Err(Error::DuplicateKey));
            assert_eq!(x.update(t, Key::from(9), b"nine"), Err(Error::KeyNotFound));
            x.update(t, Key::from(1), b"uno").unwrap();
            assert_eq!(x.get(t, Key::from(1)).unwrap().as_deref(), Some(&b"uno"[..]));
            // Another length: replaced by a new record at commit.
            x.update(t, Key::from(1), b"a longer value").unwrap();
            x.insert(t, Key::from(2), b"two").unwrap();
            x.delete(t, Key::from(2)).unwrap();
            assert_eq!(x.get(t, Key::from(2)).unwrap(), None);
            x.insert(t, Key::from(2), b"deux").unwrap();
            let mut seen = Vec::new();
            x.scan(db.primary(t), .., None, |k, v| {
                seen.push((k.clone(), v.to_vec()));
                true
            })
            .unwrap();
            seen.sort();
            assert_eq!(seen, vec![(Key::from(1), b"a longer value".to_vec()), (Key::from(2), b"deux".to_vec())]);
            x.commit().unwrap();
            let mut x = db.begin(Isolation::Serializable).unwrap();
            assert_eq!(x.get(t, Key::from(1)).unwrap().as_deref(), Some(&b"a longer value"[..]));
            assert_eq!(x.get(t, Key::from(2)).unwrap().as_deref(), Some(&b"deux"[..]));
            x.delete(t, Key::from(1)).unwrap();
            x.commit().unwrap();
            let mut x = db.begin(Isolation::Serializable).unwrap();
            assert_eq!(x.get(t, Key::from(1)).unwrap(), None);
            x.abort();
        }
    }
}

/// A writer's X lock blocks a reader; the reader gets the committed value
/// once the writer commits, never the uncommitted one. Read committed too.
#[test]
fn a_write_lock_blocks_readers_until_commit() {
    let (db, h, _) = open_with(Protocol::OneVLock, Duration::from_secs(5));
    db.run(Isolation::ReadCommitted, |x| x.insert(h, Key::from(1), u(10))).unwrap();
    for iso in [Isolation::ReadCommitted, Isolation::RepeatableRead, Isolation::Serializable] {
        let mut w = db.begin(Isolation::ReadCommitted).unwrap();
        w.update(h, Key::from(1), u(11)).unwrap();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let r = s.spawn(|| {
                let mut r = db.begin(iso).unwrap();
                let v = r.get(h, Key::from(1)).unwrap().unwrap();
                r.commit().unwrap();
                (done.load(Ordering::SeqCst), v)
            });
            std::thread::sleep(Duration::from_millis(50));
            done.store(true, Ordering::SeqCst);
            w.commit().unwrap();
            let (after, v) = r.join().unwrap();
            assert!(after, "{iso}: the reader waited for the writer");
            assert_eq!(v, u(11).to_vec(), "{iso}: the committed value");
        });
        db.run(Isolation::ReadCommitted, |x| x.update(h, Key::from(1), u(10))).unwrap();
    }
}

/// Read committed, hammered: writers keep both rows of a pair equal and
/// roll half their transactions back after writing; a reader at read
/// committed must only ever see committed values (never an odd one).
#[test]
fn read_committed_never_returns_uncommitted_data() {
    let (db, h, o) = open_with(Protocol::OneVLock, Duration::from_millis(50));
    for t in [h, o] {
        db.run(Isolation::ReadCommitted, |x| x.insert(t, Key::from(1), u(0))).unwrap();
    }
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let t = if n % 2 == 0 { h } else { o };
                let Ok(mut x) = db.begin(Isolation::ReadCommitted) else { continue };
                // Odd values are written and always rolled back.
                if x.update(t, Key::from(1), u(2 * n + 1)).is_ok() {
                    x.abort();
                }
                let _ = db.run(Isolation::ReadCommitted, |x| x.update(t, Key::from(1), u(2 * n)));
            }
        });
        let deadline = Instant::now() + Duration::from_millis(300);
        let mut reads = 0;
        while Instant::now() < deadline {
            for t in [h, o] {
                let mut x = db.begin(Isolation::ReadCommitted).unwrap();
                if let Ok(Some(v)) = x.get(t, Key::from(1)) {
                    assert_eq!(u64::from_le_bytes(v.try_into().unwrap()) % 2, 0, "an uncommitted value was read");
                    reads += 1;
                }
                x.scan(db.primary(t), .., None, |_, v| {
                    assert_eq!(v[0] % 2, 0, "a scan read an uncommitted value");
                    true
                })
                .unwrap_or(());
                let _ = x.commit();
            }
        }
        stop.store(true, Ordering::Relaxed);
        assert!(reads > 10);
    });
}

/// Two transactions each hold a lock the other wants: a deadlock. The
/// detector finds it well before the timeout, and the younger transaction
/// (the larger id) aborts with `deadlock`; the older one commits.
#[test]
fn deadlocks_are_detected_and_the_younger_aborts() {
    let (db, h, _) = open_with(Protocol::OneVLock, Duration::from_secs(10));
    db.run(Isolation::Serializable, |x| {
        x.insert(h, Key::from(1), u(1))?;
        x.insert(h, Key::from(2), u(2))
    })
    .unwrap();
    let barrier = std::sync::Barrier::new(2);
    let started = Instant::now();
    let mut outcomes: Vec<(u64, Result<()>)> = std::thread::scope(|s| {
        let hs: Vec<_> = [(1u64, 2u64), (2, 1)]
            .into_iter()
            .map(|(a, b)| {
                let (db, barrier) = (&db, &barrier);
                s.spawn(move || {
                    let mut x = db.begin(Isolation::Serializable).unwrap();
                    let id = x.id();
                    let r = (|| {
                        x.update(h, Key::from(a), u(10))?;
                        barrier.wait();
                        x.update(h, Key::from(b), u(20))?;
                        x.commit().map(|_| ())
                    })();
                    (id, r)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(started.elapsed() < Duration::from_secs(5), "found long before the 10-s timeout");
    outcomes.sort_by_key(|o| o.0);
    assert_eq!(outcomes[0].1, Ok(()), "the older commits: {outcomes:?}");
    assert_eq!(outcomes[1].1, Err(Error::Aborted(AbortReason::Deadlock)), "the younger is chosen: {outcomes:?}");
    assert_eq!(db.stats().aborts[AbortReason::Deadlock], 1);
    assert_eq!(db.stats().aborts[AbortReason::LockTimeout], 0);
}

/// A deadlock is broken by the first of its members to find it, not at the
/// victim's own next check. The younger transaction waits first: its first
/// check, when its spin ends, finds no cycle, and its next comes a whole
/// interval (2 s) later. The older closes the cycle a quarter interval on;
/// its own first check finds it, chooses the younger and tells it, and the
/// younger aborts with `deadlock` then.
#[test]
fn the_first_member_to_find_a_deadlock_breaks_it() {
    let interval = Duration::from_secs(2);
    let (db, h) = one_v(interval);
    db.run(Isolation::Serializable, |x| (1..=2).try_for_each(|k| x.insert(h, Key::from(k), u(k)))).unwrap();
    let mut a = db.begin(Isolation::Serializable).unwrap();
    a.update(h, Key::from(1), u(10)).unwrap();
    let mut b = db.begin(Isolation::Serializable).unwrap();
    b.update(h, Key::from(2), u(20)).unwrap();
    // The older holds `mine` (written `own`), the younger `theirs`.
    let (mut older, mut younger, (mine, own), theirs) =
        if a.id() < b.id() { (a, b, (1, 10), 2) } else { (b, a, (2, 20), 1) };
    let (r, waited, r_older) = std::thread::scope(|s| {
        let younger = s.spawn(move || {
            let asked = Instant::now();
            // Waits for the older's X lock.
            let r = younger.update(h, Key::from(mine), u(200));
            (r, asked.elapsed())
        });
        std::thread::sleep(interval / 4);
        // Waits for the younger's X lock: the cycle closes.
        let r_older = older.update(h, Key::from(theirs), u(100)).and_then(|_| older.commit().map(|_| ()));
        let (r, waited) = younger.join().unwrap();
        (r, waited, r_older)
    });
    assert_eq!(r, Err(Error::Aborted(AbortReason::Deadlock)), "the younger is chosen");
    assert!(waited < interval * 5 / 8, "told at the older's check, not at its own 2 s on: {waited:?}");
    assert_eq!(r_older, Ok(()), "the older commits");
    assert_eq!(get(&db, h, mine), Some(own));
    assert_eq!(get(&db, h, theirs), Some(100));
    assert_eq!(db.stats().aborts[AbortReason::Deadlock], 1);
}

/// A deadlock's victim is the youngest member, except that a member whose
/// thread's last transaction was itself a deadlock victim is spared: its
/// retry, younger than everyone, would otherwise be chosen again and again.
/// Two threads deadlock twice; the first cycle's victim retries on its own
/// thread (its slot, which remembers the loss) with a larger id than the
/// other thread's new transaction, and the second cycle chooses the other.
#[test]
fn a_retried_deadlock_victim_is_spared_by_the_next_cycle() {
    let (db, h) = one_v(Duration::from_secs(10));
    db.run(Isolation::Serializable, |x| (1..=2).try_for_each(|k| x.insert(h, Key::from(k), u(k)))).unwrap();
    let started = Instant::now();
    let both = std::sync::Barrier::new(2);
    // Each round, on each thread: take `own`, meet, then want `other` (the
    // second thread a little later, closing the cycle). Returns the
    // transaction's id and how it ended.
    let round = |own: u64, other: u64, closes: bool| {
        let mut t = db.begin(Isolation::Serializable).unwrap();
        let id = t.id();
        t.update(h, Key::from(own), u(own * 10)).unwrap();
        both.wait();
        if closes {
            std::thread::sleep(Duration::from_millis(100));
        }
        let r = t.update(h, Key::from(other), u(other * 100)).and_then(|_| t.commit().map(|_| ()));
        both.wait();
        (id, r)
    };
    let ((p1, p2), (q1, q2)) = std::thread::scope(|s| {
        let p = s.spawn(|| (round(1, 2, false), round(1, 2, false)));
        let q = s.spawn(|| (round(2, 1, true), round(2, 1, true)));
        (p.join().unwrap(), q.join().unwrap())
    });
    let deadlock = Err(Error::Aborted(AbortReason::Deadlock));
    // First cycle: the youngest is chosen.
    let p_lost = p1.0 > q1.0;
    let (v1, s1) = if p_lost { (&p1, &q1) } else { (&q1, &p1) };
    assert_eq!(v1.1, deadlock, "the younger is chosen: {p1:?} {q1:?}");
    assert_eq!(s1.1, Ok(()), "the older commits: {p1:?} {q1:?}");
    // Second cycle: the victim's thread retried with the larger id ...
    let (retry, other) = if p_lost { (p2, q2) } else { (q2, p2) };
    assert!(retry.0 > other.0, "the retry is the younger: {retry:?} {other:?}");
    // ... and is spared.
    assert_eq!(retry.1, Ok(()), "the retried victim commits: {retry:?} {other:?}");
    assert_eq!(other.1, deadlock, "the other is chosen: {retry:?} {other:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "both found long before the 10-s check");
    assert_eq!(db.stats().aborts[AbortReason::Deadlock], 2);
}

/// Two readers of a row that both upgrade are deadlocked with certainty:
/// the second to ask aborts with `deadlock` at once, long before the
/// detector's first check (10 s here), and the first upgrades and commits.
#[test]
fn a_second_upgrader_of_one_key_aborts_at_once() {
    let (db, h) = one_v(Duration::from_secs(10));
    db.run(Isolation::Serializable, |x| x.insert(h, Key::from(1), u(1))).unwrap();
    let k = Key::from(1);
    let mut t1 = db.begin(Isolation::Serializable).unwrap();
    let mut t2 = db.begin(Isolation::Serializable).unwrap();
    t1.get(h, &k).unwrap(); // T1: S on the row
    t2.get(h, &k).unwrap(); // T2: S on the row
    let started = Instant::now();
    let r1 = std::thread::scope(|s| {
        let h1 = s.spawn(|| {
            // Waits for T2's S lock, marking the word.
            t1.update(h, &k, u(10))?;
            t1.commit().map(|_| ())
        });
        std::thread::sleep(Duration::from_millis(100));
        let r2 = t2.update(h, &k, u(20));
        assert_eq!(r2, Err(Error::Aborted(AbortReason::Deadlock)), "the second upgrader gives way");
        drop(t2);
        h1.join().unwrap()
    });
    assert_eq!(r1, Ok(()));
    assert!(started.elapsed() < Duration::from_secs(5), "at once, not at the 10-s detector: {:?}", started.elapsed());
    assert_eq!(get(&db, h, 1), Some(10));
    assert_eq!(db.stats().aborts[AbortReason::Deadlock], 1);
}

/// A waiting upgrade keeps new readers out of its key (its mark on the word),
/// and the detector knows it: T1 waits to upgrade b behind T2's S lock, T3
/// (holding c) asks for S on b and waits behind T1's mark, T2 asks for c.
/// Without the reader-behind-writer edge this cycle has no edge out of T3
/// and would last until the timeout; with it, one of the three is chosen
/// at once.
#[test]
fn a_reader_behind_a_waiting_writer_is_in_the_deadlock_graph() {
    let (db, h, _) = open_with(Protocol::OneVLock, Duration::from_secs(10));
    db.run(Isolation::Serializable, |x| (1..=3).try_for_each(|k| x.insert(h, Key::from(k), u(k)))).unwrap();
    let (b, c) = (Key::from(2), Key::from(3));
    let mut t1 = db.begin(Isolation::Serializable).unwrap();
    let mut t2 = db.begin(Isolation::Serializable).unwrap();
    let mut t3 = db.begin(Isolation::Serializable).unwrap();
    t1.get(h, &b).unwrap(); // T1: S on b
    t2.get(h, &b).unwrap(); // T2: S on b
    t3.update(h, &c, u(30)).unwrap(); // T3: X on c
    let started = Instant::now();
    let pause = || std::thread::sleep(Duration::from_millis(100));
    let (r1, r2, r3) = std::thread::scope(|s| {
        let h1 = s.spawn(|| {
            // Upgrades: waits for T2's S lock on b, marking b.
            t1.update(h, &b, u(10))?;
            t1.commit().map(|_| ())
        });
        pause();
        let h3 = s.spawn(|| {
            // A new reader of b: waits behind T1's mark.
            t3.get(h, &b)?;
            t3.commit().map(|_| ())
        });
        pause();
        let h2 = s.spawn(|| {
            // Waits for T3's X lock on c: the cycle closes.
            t2.update(h, &c, u(20))?;
            t2.commit().map(|_| ())
        });
        (h1.join().unwrap(), h2.join().unwrap(), h3.join().unwrap())
    });
    assert!(started.elapsed() < Duration::from_secs(5), "found long before the 10-s timeout");
    // One of the cycle is chosen (the youngest: ids are drawn at a
    // transaction's first operation, so T1, T2 or T3 by the timing); the
    // others commit.
    let dead = Err(Error::Aborted(AbortReason::Deadlock));
    let outcomes = [&r1, &r2, &r3];
    assert_eq!(outcomes.iter().filter(|r| ***r == dead).count(), 1, "{outcomes:?}");
    assert!(outcomes.iter().all(|r| **r == dead || r.is_ok()), "{outcomes:?}");
    assert_eq!(db.stats().aborts[AbortReason::LockTimeout], 0);
    assert_eq!(get(&db, h, 2), Some(if r1.is_ok() { 10 } else { 2 }));
    assert_eq!(
        get(&db, h, 3),
        Some(if r2.is_ok() {
            20
        } else if r3.is_ok() {
            30
        } else {
            3
        })
    );
}

/// A deadlock through key-range locks: each serializable scan locks the
/// whole table, and each then inserts into the other's range.
#[test]
fn range_lock_deadlocks_are_detected() {
    let (db, h, _) = open_with(Protocol::OneVLock, Duration::from_secs(10));
    let barrier = std::sync::Barrier::new(2);
    let outcomes: Vec<Result<()>> = std::thread::scope(|s| {
        let hs: Vec<_> = [3u64, 4]
            .into_iter()
            .map(|k| {
                let (db, barrier) = (&db, &barrier);
                s.spawn(move || {
                    let mut x = db.begin(Isolation::Serializable).unwrap();
                    x.scan(db.primary(h), .., None, |_, _| true)?;
                    barrier.wait();
                    x.insert(h, Key::from(k), u(k))?;
                    x.commit().map(|_| ())
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1, "{outcomes:?}");
    assert!(outcomes.contains(&Err(Error::Aborted(AbortReason::Deadlock))), "{outcomes:?}");
}

/// A long holder: a waiter gives up after the timeout, whatever it waits for.
#[test]
fn a_wait_behind_a_long_holder_times_out() {
    let (db, h, _) = open_with(Protocol::OneVLock, Duration::from_millis(30));
    db.run(Isolation::Serializable, |x| x.insert(h, Key::from(1), u(1))).unwrap();
    let mut reader = db.begin(Isolation::RepeatableRead).unwrap();
    reader.get(h, Key::from(1)).unwrap();
    let started = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut w = db.begin(Isolation::ReadCommitted).unwrap();
            assert_eq!(w.update(h, Key::from(1), u(2)), Err(Error::Aborted(AbortReason::LockTimeout)));
            assert!(started.elapsed() >= Duration::from_millis(30));
            assert!(matches!(w.get(h, Key::from(1)), Err(Error::TransactionClosed(Some(AbortReason::LockTimeout)))));
        });
    });
    reader.commit().unwrap();
    assert_eq!(get(&db, h, 1), Some(1));
}

/// Serializable range scans of an ordered index lock the range: an insert
/// into it waits for the scanner (no phantom); one outside it does not.
/// Below serializable there is no key-range lock.
#[test]
fn key_range_locks_keep_phantoms_out() {
    let (db, _, o) = open_with(Protocol::OneVLock, Duration::from_secs(5));
    db.run(Isolation::Serializable, |x| {
        for k in [10, 20, 30] {
            x.insert(o, Key::from(k), u(k))?;
        }
        Ok(())
    })
    .unwrap();
    let count = |x: &mut Transaction<'_>| {
        let mut n = 0;
        x.scan(db.primary(o), Key::from(10)..=Key::from(20), None, |_, _| {
            n += 1;
            true
        })
        .unwrap();
        n
    };
    let mut scanner = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(count(&mut scanner), 2);
    let inserted = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        let flag = inserted.clone();
        let db = &db;
        let t = s.spawn(move || {
            // Outside the range: no wait.
            db.run(Isolation::Serializable, |x| x.insert(o, Key::from(25), u(25))).unwrap();
            db.run(Isolation::Serializable, |x| x.insert(o, Key::from(15), u(15))).unwrap();
            flag.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(100));
        assert!(!inserted.load(Ordering::SeqCst), "the insert into the locked range waits");
        assert_eq!(count(&mut scanner), 2, "no phantom");
        scanner.commit().unwrap();
        t.join().unwrap();
    });
    assert!(inserted.load(Ordering::SeqCst));
    assert_eq!(get(&db, o, 15), Some(15));
    // Repeatable read: no range lock, the insert goes through at once.
    let mut rr = db.begin(Isolation::RepeatableRead).unwrap();
    let mut n = 0;
    rr.scan(db.primary(o), Key::from(10)..=Key::from(20), None, |_, _| {
        n += 1;
        true
    })
    .unwrap();
    assert_eq!(n, 3);
    db.run(Isolation::Serializable, |x| x.insert(o, Key::from(12), u(12))).unwrap();
    rr.commit().unwrap();
}

/// A scan that waits on a row whose writer replaces its record (the value
/// changes length) reads the new record, once, in a hash index and an
/// ordered one.
#[test]
fn a_scan_waiting_on_a_replaced_record_reads_its_successor() {
    let (db, h, o) = open_with(Protocol::OneVLock, Duration::from_secs(5));
    for t in [h, o] {
        db.run(Isolation::Serializable, |x| {
            for k in 0..8 {
                x.insert(t, Key::from(k), b"short")?;
            }
            Ok(())
        })
        .unwrap();
        let mut w = db.begin(Isolation::Serializable).unwrap();
        w.update(t, Key::from(3), b"a much longer value").unwrap();
        std::thread::scope(|s| {
            let db = &db;
            let r = s.spawn(move || {
                let mut x = db.begin(Isolation::Serializable).unwrap();
                let mut rows = Vec::new();
                x.scan(db.primary(t), .., None, |k, v| {
                    rows.push((k.clone(), v.to_vec()));
                    true
                })
                .unwrap();
                x.commit().unwrap();
                rows
            });
            std::thread::sleep(Duration::from_millis(50));
            w.commit().unwrap();
            let mut rows = r.join().unwrap();
            rows.sort();
            assert_eq!(rows.len(), 8, "every row once: {rows:?}");
            assert_eq!(rows[3], (Key::from(3), b"a much longer value".to_vec()));
        });
    }
}

/// A scan with long read locks passes the records its keys' deletes and
/// replacements retired (still linked until the collector unlinks them)
/// once it has settled each key under its lock: every row is read once,
/// as its latest record holds it, our own writes included, in either
/// direction.
#[test]
fn a_scan_over_retired_records_reads_each_row_once() {
    let (db, h, o) = open_with(Protocol::OneVLock, Duration::from_secs(5));
    for t in [h, o] {
        db.run(Isolation::Serializable, |x| {
            for k in 0..8 {
                x.insert(t, Key::from(k), u(k))?;
            }
            Ok(())
        })
        .unwrap();
        // Values of another length replace the record; deletes retire it.
        for round in 0..40u64 {
            db.run(Isolation::Serializable, |x| {
                let (long, short) = ([round as u8; 12], u(round));
                x.update(t, Key::from(2), if round % 2 == 0 { &long[..] } else { &short[..] })?;
                x.delete(t, Key::from(5))?;
                x.insert(t, Key::from(5), u(100 + round))
            })
            .unwrap();
        }
        for level in [Isolation::RepeatableRead, Isolation::Serializable] {
            // A hash index is scanned whole, in one direction only.
            let dirs: &[bool] = if t == o { &[false, true] } else { &[false] };
            for rev in dirs {
                let mut x = db.begin(level).unwrap();
                x.update(t, Key::from(6), b"our own, longer value").unwrap();
                let mut rows = Vec::new();
                if *rev {
                    rows = x.range(t, ..).unwrap().rev().map(|r| r.unwrap()).collect();
                } else {
                    x.scan(db.primary(t), .., None, |k, v| {
                        rows.push((k.clone(), v.to_vec()));
                        true
                    })
                    .unwrap();
                }
                x.abort();
                rows.sort();
                let keys: Vec<Key> = rows.iter().map(|r| r.0.clone()).collect();
                assert_eq!(keys, (0..8).map(Key::from).collect::<Vec<_>>(), "{level:?} rev={rev}");
                assert_eq!(rows[2].1, u(39).to_vec());
                assert_eq!(rows[5].1, u(139).to_vec());
                assert_eq!(rows[6].1, b"our own, longer value".to_vec());
            }
        }
    }
}

/// A secondary index: lookups lock the secondary key, so an insert of a row
/// under that key waits for a serializable reader who found nothing.
#[test]
fn secondary_lookups_lock_their_key() {
    let db = Database::new(Options { protocol: Protocol::OneVLock, ..Options::default() }).unwrap();
    let spec = TableSpec::hash("t", 64).secondary("by_value", IndexKind::Hash { capacity: 64 }, |_, v| {
        Key::from(u64::from_le_bytes(v[..8].try_into().unwrap()))
    });
    let t = db.create_table(spec).unwrap();
    let by = db.index(t, "by_value").unwrap();
    db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), u(7))).unwrap();
    let mut r = db.begin(Isolation::Serializable).unwrap();
    let mut n = 0;
    r.get_by(by, Key::from(8), |_, _| {
        n += 1;
        true
    })
    .unwrap();
    assert_eq!(n, 0);
    let mut w = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(w.insert(t, Key::from(2), u(8)), Err(Error::Aborted(AbortReason::LockTimeout)));
    // Moving row 1 to value 8 also needs the key's lock.
    let mut w = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(w.update(t, Key::from(1), u(8)), Err(Error::Aborted(AbortReason::LockTimeout)));
    r.commit().unwrap();
    db.run(Isolation::Serializable, |x| x.update(t, Key::from(1), u(8))).unwrap();
    let mut rows = Vec::new();
    db.run(Isolation::Serializable, |x| {
        rows.clear();
        x.get_by(by, Key::from(8), |k, _| {
            rows.push(k.clone());
            true
        })
    })
    .unwrap();
    assert_eq!(rows, vec![Key::from(1)]);
}

/// Replaced and deleted records are freed: memory stays bounded.
#[test]
fn retired_records_are_freed() {
    let (db, h, _) = open();
    db.run(Isolation::ReadCommitted, |x| x.insert(h, Key::from(1), b"x")).unwrap();
    for i in 0..2000u32 {
        let v = vec![b'v'; 1 + (i % 7) as usize];
        db.run(Isolation::ReadCommitted, |x| x.update(h, Key::from(1), &v)).unwrap();
        db.run(Isolation::ReadCommitted, |x| x.insert(h, Key::from(2), b"y")).unwrap();
        db.run(Isolation::ReadCommitted, |x| x.delete(h, Key::from(2))).unwrap();
    }
    db.collect_garbage();
    let alive = db.stats().versions_alive;
    assert!(alive < 300, "{alive} records alive");
}

/// Under key locks a retired record waits for no reader's snapshot, so the
/// collector takes it soon, without a call to `collect_garbage`: a key
/// deleted and inserted again and again keeps a short chain.
#[test]
fn retired_records_are_collected_soon_under_key_locks() {
    let (db, _, o) = open();
    let mut most = 0;
    for i in 0..2000u64 {
        db.run(Isolation::Serializable, |x| x.insert(o, Key::from(1), u(i))).unwrap();
        db.run(Isolation::Serializable, |x| x.delete(o, Key::from(1))).unwrap();
        most = most.max(db.stats().versions_alive);
    }
    assert!(most <= 40, "at most {most} records alive");
}

/// Ordered 2PL takes a declaration's locks at begin: a second transaction
/// that declares a write of the same key waits at begin, and starts once
/// the first commits.
#[test]
fn ordered_2pl_locks_at_begin() {
    let (db, h, _) = open_with(Protocol::TwoPlOrdered, Duration::from_millis(10));
    db.run(Isolation::Serializable, |x| x.insert(h, Key::from(1), u(1))).unwrap();
    let access = AccessSet { reads: vec![(h, Key::from(1))], writes: vec![(h, Key::from(1))] };
    let opts = TxnOptions { access: Some(&access), ..TxnOptions::new(Isolation::Serializable) };
    let mut a = db.begin_with(opts).unwrap();
    let started = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (db, started, access) = (&db, &started, &access);
        let b = s.spawn(move || {
            let opts = TxnOptions { access: Some(access), ..TxnOptions::new(Isolation::Serializable) };
            // Longer than the lock timeout: declared locks wait without limit.
            let mut b = db.begin_with(opts).unwrap();
            started.store(true, Ordering::SeqCst);
            let v = b.get(h, Key::from(1)).unwrap().unwrap();
            b.update(h, Key::from(1), u(u64::from_le_bytes(v.try_into().unwrap()) + 1)).unwrap();
            b.commit().unwrap();
        });
        std::thread::sleep(Duration::from_millis(60));
        assert!(!started.load(Ordering::SeqCst), "b waits at begin");
        let v = a.get(h, Key::from(1)).unwrap().unwrap();
        a.update(h, Key::from(1), u(u64::from_le_bytes(v.try_into().unwrap()) + 1)).unwrap();
        a.commit().unwrap();
        b.join().unwrap();
    });
    assert_eq!(get(&db, h, 1), Some(3));
    assert_eq!(db.stats().aborted(), 0);
}
