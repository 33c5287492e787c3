//! Garbage collection (Hekaton VLDB 2011 sections 2.3 and 2.4, step 5): old
//! versions are reclaimed once no open or future transaction can see them,
//! and not before.

use multiverse::*;

const ROWS: u64 = 8;

fn u(v: &[u8]) -> u64 {
    u64::from_le_bytes(v.try_into().expect("8-byte value"))
}

fn open(spec: impl Into<TableSpec>) -> (Database, TableId) {
    let spec: TableSpec = spec.into();
    let db = Database::new(Options::default()).unwrap();
    let t = db.create_table(spec).unwrap();
    db.run(Isolation::Serializable, |x| {
        for k in 0..ROWS {
            x.insert(t, Key::from(k), k.to_le_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    (db, t)
}

/// `n` single-row update transactions, round-robin over the rows.
fn churn(db: &Database, t: TableId, n: u64, base: u64) {
    for i in 0..n {
        db.run(Isolation::Snapshot, |x| x.update(t, Key::from(i % ROWS), (base + i).to_le_bytes())).unwrap();
    }
}

/// Draws a timestamp (a committed no-op transaction), moving the clock.
fn advance_clock(db: &Database) {
    db.run(Isolation::Snapshot, |_| Ok(())).unwrap();
}

fn snapshot_values(x: &mut Transaction<'_>, t: TableId) -> Vec<Option<u64>> {
    (0..ROWS).map(|k| x.get(t, Key::from(k)).unwrap().map(|v| u(&v))).collect()
}

/// After heavy churn, `collect_garbage` brings the live version count back to
/// one version per row and empties the garbage queues.
#[test]
fn collect_garbage_after_churn_leaves_one_version_per_row() {
    for spec in [TableSpec::hash("h", 16).into(), TableSpec::ordered("o")] {
        let (db, t) = open(spec);
        churn(&db, t, 5_000, 1_000);
        let before = db.stats();
        assert!(before.versions_alive <= 5_000 + ROWS);
        db.collect_garbage();
        let s = db.stats();
        assert_eq!(s.versions_alive, ROWS, "{s:?}");
        assert_eq!(s.garbage_pending, 0);
        // The table still reads right.
        let mut x = db.begin(Isolation::Snapshot).unwrap();
        let last: Vec<_> = (0..ROWS).map(|k| Some(1_000 + 5_000 - ROWS + k)).collect();
        assert_eq!(snapshot_values(&mut x, t), last);
    }
}

/// Cooperative collection (section 2.3: "handled cooperatively by all
/// threads"): committing transactions collect on their own, so the number of
/// live versions stays bounded during churn without any explicit call.
#[test]
fn cooperative_collection_bounds_versions_during_churn() {
    let (db, t) = open(TableSpec::hash("h", 16));
    churn(&db, t, 20_000, 0);
    let s = db.stats();
    assert!(s.versions_alive < 2_000, "no cooperative collection happened: {s:?}");
}

/// Deleted rows and the new versions of aborted transactions are garbage too.
#[test]
fn deletes_and_aborted_inserts_are_reclaimed() {
    for spec in [TableSpec::hash("h", 16).into(), TableSpec::ordered("o")] {
        let (db, t) = open(spec);
        for round in 0..200u64 {
            db.run(Isolation::Serializable, |x| {
                for k in 100..110 {
                    x.insert(t, Key::from(k), round.to_le_bytes())?;
                }
                Ok(())
            })
            .unwrap();
            db.run(Isolation::Serializable, |x| {
                for k in 100..110 {
                    x.delete(t, Key::from(k))?;
                }
                Ok(())
            })
            .unwrap();
            let mut x = db.begin(Isolation::Snapshot).unwrap();
            x.insert(t, Key::from(500), b"never").unwrap();
            x.update(t, Key::from(0), b"never").unwrap();
            x.abort();
        }
        db.collect_garbage();
        // The last aborted transaction's two versions may wait for the clock
        // to move (see `aborted_versions_reclaimable_before_the_clock_moves`).
        assert!(db.stats().versions_alive <= ROWS + 2, "{:?}", db.stats());
        advance_clock(&db);
        db.collect_garbage();
        let s = db.stats();
        assert_eq!(s.versions_alive, ROWS, "{s:?}");
        assert_eq!(s.garbage_pending, 0);
        let mut x = db.begin(Isolation::Snapshot).unwrap();
        let mut n = 0;
        x.scan(db.primary(t), .., None, |_, _| {
            n += 1;
            true
        })
        .unwrap();
        assert_eq!(n, ROWS);
        assert_eq!(x.get(t, Key::from(0)).unwrap().map(|v| u(&v)), Some(0));
    }
}

/// A reader held open across churn still reads its snapshot exactly — also
/// after explicit collections — because the versions it can see are kept
/// while it is open; once it ends they are reclaimed.
#[test]
fn long_reader_keeps_its_snapshot_and_releases_it_when_done() {
    for iso in [Isolation::Snapshot, Isolation::RepeatableRead, Isolation::Serializable] {
        let (db, t) = open(TableSpec::hash("h", 16));
        churn(&db, t, 100, 500);
        let mut reader = db.begin(iso).unwrap();
        let snap = snapshot_values(&mut reader, t);
        assert!(snap.iter().all(|v| v.is_some()));
        for round in 0..5 {
            churn(&db, t, 1_000, 10_000 * (round + 1));
            db.collect_garbage();
            assert_eq!(snapshot_values(&mut reader, t), snap, "{iso}: the snapshot changed under the reader");
            let mut n = 0;
            reader
                .scan(db.primary(t), .., None, |k, v| {
                    assert_eq!(Some(u(v)), snap[k.to_u64().unwrap() as usize]);
                    n += 1;
                    true
                })
                .unwrap();
            assert_eq!(n, ROWS);
        }
        let held = db.stats().versions_alive;
        assert!(held >= 2 * ROWS, "{iso}: the reader's versions and the latest ones are both alive: {held}");
        reader.commit().unwrap();
        db.collect_garbage();
        let s = db.stats();
        assert_eq!(s.versions_alive, ROWS, "{iso}: released after the reader ended: {s:?}");
    }
}

/// A serializable writer held open across churn validates against the
/// versions it read: they must still exist (kept by the watermark) so that
/// validation can see they were replaced, and it fails with ReadValidation.
#[test]
fn held_open_writer_validates_against_kept_versions() {
    let (db, t) = open(TableSpec::ordered("o"));
    let mut w = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(w.get(t, Key::from(1)).unwrap().map(|v| u(&v)), Some(1));
    churn(&db, t, 2_000, 100);
    db.collect_garbage();
    w.update(t, Key::from(100), b"x").unwrap_err(); // absent: KeyNotFound, recorded as a scan
    w.insert(t, Key::from(100), b"x").unwrap();
    assert_eq!(w.commit(), Err(Error::Aborted(AbortReason::ReadValidation)));
    advance_clock(&db);
    db.collect_garbage();
    assert_eq!(db.stats().versions_alive, ROWS);
}

/// Versions still needed by an open transaction are never reclaimed, while
/// those that ended before the oldest open transaction began are (the oldest
/// open begin timestamp is the watermark).
#[test]
fn watermark_follows_the_oldest_open_transaction() {
    let (db, t) = open(TableSpec::hash("h", 16));
    let mut old = db.begin(Isolation::Snapshot).unwrap();
    let old_snap = snapshot_values(&mut old, t);
    churn(&db, t, 800, 0);
    db.collect_garbage();
    let held = db.stats().versions_alive;
    assert!(held >= 800 + ROWS, "the old transaction holds everything after its begin: {held}");
    let mut young = db.begin(Isolation::Snapshot).unwrap();
    let young_snap = snapshot_values(&mut young, t);
    churn(&db, t, 800, 5_000);
    db.collect_garbage();
    assert!(db.stats().versions_alive >= 1_600 + ROWS, "both snapshots are held");
    assert_eq!(snapshot_values(&mut old, t), old_snap);
    old.commit().unwrap();
    db.collect_garbage();
    // Only the young snapshot's versions and later ones remain: the first
    // churn's versions (all ended before the young transaction began,
    // except the ones it sees) are gone.
    let alive = db.stats().versions_alive;
    assert!((800 + ROWS..=800 + 2 * ROWS).contains(&alive), "{alive}");
    assert_eq!(snapshot_values(&mut young, t), young_snap);
    young.commit().unwrap();
    db.collect_garbage();
    assert_eq!(db.stats().versions_alive, ROWS);
}

/// The stamp of an aborted transaction's garbage is the clock at its abort,
/// and reclamation needs `stamp < watermark`; with no transaction open the
/// watermark is the clock itself, so the garbage of the last abort cannot be
/// reclaimed until some later transaction draws a timestamp, although no
/// open or future transaction can see it (`collect_garbage` promises to
/// reclaim "every version no open or future transaction can see").
#[test]
fn aborted_versions_reclaimable_before_the_clock_moves() {
    let (db, t) = open(TableSpec::hash("h", 16));
    let mut x = db.begin(Isolation::Snapshot).unwrap();
    x.insert(t, Key::from(100), b"gone").unwrap();
    x.update(t, Key::from(0), b"gone").unwrap();
    x.abort();
    db.collect_garbage();
    let s = db.stats();
    assert_eq!(s.versions_alive, ROWS, "{s:?}");
    assert_eq!(s.garbage_pending, 0, "{s:?}");
}

/// Secondary indexes: every version is linked into every index, and
/// collection unlinks it from all of them (no stale entries are found
/// through the secondary index afterwards), over either ordered map.
#[test]
fn collection_unlinks_from_secondary_indexes() {
    fn bucket(_pk: &Key, v: &[u8]) -> Key {
        Key::from(u64::from_le_bytes(v.try_into().unwrap()) % 4)
    }
    let ordered = [IndexKind::Ordered, IndexKind::OrderedGrouped { prefix: 8 }];
    let kinds = ordered.into_iter().flat_map(|k| [OrderedMap::SkipList, OrderedMap::BTree].map(|m| (k, m)));
    for (kind, map) in [(IndexKind::Hash { capacity: 16 }, OrderedMap::SkipList)].into_iter().chain(kinds) {
        let db = Database::new(Options::new().ordered_map(map)).unwrap();
        let t = db.create_table(TableSpec::hash("h", 16).secondary("mod4", kind, bucket)).unwrap().table();
        let ix = db.index(t, "mod4").unwrap();
        db.run(Isolation::Snapshot, |x| {
            for k in 0..ROWS {
                x.insert(t, Key::from(k), k.to_le_bytes())?;
            }
            Ok(())
        })
        .unwrap();
        churn(&db, t, 3_000, 7);
        db.collect_garbage();
        assert_eq!(db.stats().versions_alive, ROWS);
        let mut x = db.begin(Isolation::Snapshot).unwrap();
        let mut total = 0;
        for b in 0..4u64 {
            x.get_by(ix, Key::from(b), |_, v| {
                assert_eq!(u(v) % 4, b);
                total += 1;
                true
            })
            .unwrap();
        }
        assert_eq!(total, ROWS);
    }
}

/// Unlinked versions are freed, not only unlinked: once epochs pass, later
/// collections empty the ready lists (the memory is given back by the
/// collecting thread, see gc.rs).
#[test]
fn unlinked_versions_are_freed_by_later_collections() {
    let (db, t) = open(TableSpec::hash("h", 16));
    churn(&db, t, 2_000, 1_000);
    db.collect_garbage();
    let s = db.stats();
    assert_eq!(s.garbage_pending, 0);
    // A full collection steps the epoch and frees what it unlinked, unless
    // a thread is pinned meanwhile: the other tests of this file run beside
    // it and hold pins of their own (a release build ran 1,000 rounds
    // inside one of them). Each pinned flush may advance the global epoch;
    // each `collect_garbage` frees what has become ready. Bounded by time.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while db.stats().garbage_unfreed > 0 {
        crossbeam_epoch::pin().flush();
        db.collect_garbage();
        assert!(std::time::Instant::now() < deadline, "unlinked versions never freed: {:?}", db.stats());
        std::thread::yield_now();
    }
    assert_eq!(db.stats().versions_alive, ROWS);
}

/// A backlog of garbage on a hot row (a reader held the watermark back
/// while it was updated over and over) is reclaimed in time linear in the
/// backlog, through hash primary and secondary indexes. The queue is oldest
/// first and a hash chain newest first, so unlinking the backlog a version
/// at a time walked past the rest of it every time: the bank test's final
/// collection at `MULTIVERSE_STRESS=100` ran for over 20 minutes. Here that is 1.8
/// billion steps (the hash table's collection took 3 s in the test build
/// without the sweep, 10 ms with it). The last case sweeps an ordered
/// primary index too (smaller: an ordered chain is oldest first, so there
/// each update walks the backlog instead).
#[test]
fn a_backlog_on_a_hot_row_is_reclaimed_in_linear_time() {
    fn parity(_pk: &Key, v: &[u8]) -> Key {
        Key::from(u64::from(v[0] % 2))
    }
    for (name, spec, updates) in [
        ("hash", TableSpec::hash("h", 16).into(), 60_000u64),
        (
            "hash, hash secondary",
            TableSpec::hash("s", 16).secondary("parity", IndexKind::Hash { capacity: 4 }, parity).into(),
            60_000,
        ),
        (
            "ordered, hash secondary",
            TableSpec::ordered("o").secondary("parity", IndexKind::Hash { capacity: 4 }, parity),
            8_000,
        ),
    ] {
        let (db, t) = open(spec);
        let mut reader = db.begin(Isolation::Snapshot).unwrap();
        let snap = snapshot_values(&mut reader, t);
        for i in 0..updates {
            db.run(Isolation::Snapshot, |x| x.update(t, Key::from(0), (1_000 + i).to_le_bytes())).unwrap();
        }
        assert_eq!(snapshot_values(&mut reader, t), snap, "{name}: the reader's snapshot is kept");
        assert!(db.stats().versions_alive >= updates, "{name}: the reader held the backlog");
        reader.commit().unwrap();
        let start = std::time::Instant::now();
        assert!(db.collect_garbage() >= updates as usize, "{name}: the backlog was reclaimed");
        let took = start.elapsed();
        assert_eq!(db.stats().versions_alive, ROWS, "{name}: one version per row is left");
        assert!(took < std::time::Duration::from_secs(2), "{name}: reclaiming {updates} versions took {took:?}");
        let mut x = db.begin(Isolation::Serializable).unwrap();
        assert_eq!(x.get(t, Key::from(0)).unwrap().map(|v| u(&v)), Some(1_000 + updates - 1), "{name}");
        assert_eq!(snapshot_values(&mut x, t)[1..], snap[1..], "{name}: the other rows are untouched");
        if name.contains("secondary") {
            let ix = db.index(t, "parity").unwrap();
            let mut rows = 0;
            x.get_by(ix, Key::from((1_000 + updates - 1) % 256 % 2), |pk, _| {
                rows += u64::from(pk.to_u64() == Some(0));
                true
            })
            .unwrap();
            assert_eq!(rows, 1, "{name}: the row is found once through the secondary index");
        }
        x.commit().unwrap();
    }
}

/// A backlog on a hot row released a little at a time (readers that began
/// one after another end one after another, as descheduled transactions do
/// when threads outnumber cores) is not walked again for each little part:
/// the cooperative collections wait until enough of it is collectable to
/// pay for the walk. Before, every commit walked the hot row's chain of
/// 80,000 versions (nine times: eight versions a few at a time, then a
/// sweep of its budget) to free a few dozen of them: 1.1 s in the test
/// build here, against 45 ms now.
#[test]
fn a_backlog_released_in_small_steps_is_not_walked_for_each_step() {
    use std::sync::mpsc::channel;
    const STEPS: u64 = 200;
    const PER_STEP: u64 = 400;
    let (db, t) = open(TableSpec::hash("h", 16));
    // The readers live on a thread of their own, so that this thread's
    // updates keep one transaction slot, and so one garbage queue.
    let (to_readers, orders) = channel::<bool>();
    let (done, wait) = channel::<()>();
    std::thread::scope(|sc| {
        let db = &db;
        sc.spawn(move || {
            let mut open = std::collections::VecDeque::new();
            for begin in orders {
                if begin {
                    let mut r = db.begin(Isolation::Snapshot).unwrap();
                    assert!(r.get(t, Key::from(0)).unwrap().is_some());
                    open.push_back(r);
                } else {
                    open.pop_front().unwrap().commit().unwrap();
                }
                done.send(()).unwrap();
            }
        });
        for s in 0..STEPS {
            to_readers.send(true).unwrap();
            wait.recv().unwrap();
            for i in 0..PER_STEP {
                db.run(Isolation::Snapshot, |x| x.update(t, Key::from(0), (s * PER_STEP + i).to_le_bytes())).unwrap();
            }
        }
        assert!(db.stats().versions_alive >= STEPS * PER_STEP, "the readers held the backlog");
        let start = std::time::Instant::now();
        for s in 0..STEPS {
            to_readers.send(false).unwrap();
            wait.recv().unwrap();
            // Commits that collect cooperatively, on the other rows.
            for i in 0..10u64 {
                db.run(Isolation::Snapshot, |x| x.update(t, Key::from(1 + i % (ROWS - 1)), s.to_le_bytes())).unwrap();
            }
        }
        let took = start.elapsed();
        assert!(took < std::time::Duration::from_millis(500), "releasing the backlog in {STEPS} steps took {took:?}");
        let alive = db.stats().versions_alive;
        assert!(
            alive < STEPS * PER_STEP / 2,
            "the cooperative collections took the backlog as it was released: {alive}"
        );
        drop(to_readers);
    });
    db.collect_garbage();
    assert_eq!(db.stats().versions_alive, ROWS, "the backlog was reclaimed in the end");
    let mut x = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(x.get(t, Key::from(0)).unwrap().map(|v| u(&v)), Some(STEPS * PER_STEP - 1));
    x.commit().unwrap();
}

/// A transaction collects at its end without holding the watermark for
/// itself: once committed (or rolled back) it reads nothing again, so the
/// versions it has just replaced are collectable by its own collection.
/// Before, its begin timestamp stayed in the watermark until the slot was
/// closed, and a collection (which, with more threads than cores, may be
/// descheduled in the middle of a long sweep) held back every collection,
/// its own included.
#[test]
fn a_committing_transaction_does_not_hold_back_its_own_collection() {
    const N: u64 = 200;
    let db = Database::new(Options::default()).unwrap();
    let t = db.create_table(TableSpec::hash("wide", N as usize)).unwrap();
    db.run(Isolation::Serializable, |x| (0..N).try_for_each(|k| x.insert(t, Key::from(k), k.to_le_bytes()))).unwrap();
    assert_eq!(db.stats().garbage_pending, 0);
    // One transaction replaces N versions: its commit queues them, over the
    // collection threshold, and collects at once.
    db.run(Isolation::Snapshot, |x| (0..N).try_for_each(|k| x.update(t, Key::from(k), (k + 1).to_le_bytes()))).unwrap();
    let s = db.stats();
    assert!(s.garbage_pending < N, "the commit's own collection took none of its garbage: {s:?}");
    let mut x = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(x.get(t, Key::from(N - 1)).unwrap().map(|v| u(&v)), Some(N));
    x.commit().unwrap();
}
