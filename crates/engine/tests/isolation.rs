//! Isolation-level behaviour of MV/O through the public API (Hekaton VLDB
//! 2011 sections 2, 2.6, 3.1–3.4): first-writer-wins, read validation,
//! phantom detection, and the anomalies each lower level permits.
//!
//! Every schedule here is interleaved by hand on one thread, so each outcome
//! is deterministic.

use multiverse::*;
use std::sync::Arc;

const ALL: [Isolation; 4] = Isolation::ALL;
const VALIDATING: [Isolation; 2] = [Isolation::RepeatableRead, Isolation::Serializable];
const NON_VALIDATING: [Isolation; 2] = [Isolation::ReadCommitted, Isolation::Snapshot];

fn k(n: u64) -> Key {
    Key::from(n)
}

fn val(x: u64) -> [u8; 8] {
    x.to_le_bytes()
}

fn num(v: &[u8]) -> u64 {
    u64::from_le_bytes(v.try_into().expect("8-byte value"))
}

/// A database with a hash table "t" (keys 1..=10, value = key) and an empty
/// "log" table that transactions write to so that they take the validating
/// commit path (a transaction that wrote nothing is serialized at its begin
/// timestamp and needs no validation).
fn setup() -> (Database, TableId, TableId) {
    let db = Database::new(Options::default()).unwrap();
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap().table();
    let log = db.create_table(TableSpec::hash("log", 64)).unwrap().table();
    db.run(Isolation::Serializable, |x| {
        for i in 1..=10 {
            x.insert(t, k(i), val(i))?;
        }
        Ok(())
    })
    .unwrap();
    (db, t, log)
}

/// Makes `x` a writer: inserts a unique row into the log table.
fn write_log(x: &mut Transaction<'_>, log: TableId) {
    let key = k(x.begin_ts());
    x.insert(log, key, b"w").unwrap();
}

fn read(db: &Database, t: TableId, key: u64) -> Option<u64> {
    let mut x = db.begin(Isolation::Snapshot).unwrap();
    let v = x.get(t, k(key)).unwrap().map(|v| num(&v));
    x.commit().unwrap();
    v
}

fn aborted(r: AbortReason) -> Result<(), Error> {
    Err(Error::Aborted(r))
}

// ---------------------------------------------------------------------------
// Section 2.6: first-writer-wins
// ---------------------------------------------------------------------------

/// Section 2.6: of two updaters of one row the second aborts with
/// WriteConflict and is closed; once the first aborts, the row is updatable
/// again, also by a transaction that was already open during the conflict.
#[test]
fn first_writer_wins_and_row_updatable_again_after_first_aborts() {
    for iso in ALL {
        let (db, t, _) = setup();
        let mut first = db.begin(iso).unwrap();
        let mut bystander = db.begin(iso).unwrap();
        first.update(t, k(1), val(100)).unwrap();
        let mut second = db.begin(iso).unwrap();
        assert_eq!(second.update(t, k(1), val(200)), aborted(AbortReason::WriteConflict), "{iso}");
        assert_eq!(second.abort_reason(), Some(AbortReason::WriteConflict));
        assert_eq!(second.get(t, k(1)), Err(Error::TransactionClosed(Some(AbortReason::WriteConflict))));
        assert_eq!(second.commit(), Err(Error::TransactionClosed(Some(AbortReason::WriteConflict))));
        first.abort();
        bystander.update(t, k(1), val(300)).unwrap();
        bystander.commit().unwrap();
        assert_eq!(read(&db, t, 1), Some(300), "{iso}");
        let mut later = db.begin(iso).unwrap();
        later.update(t, k(1), val(400)).unwrap();
        later.commit().unwrap();
        assert_eq!(read(&db, t, 1), Some(400), "{iso}");
    }
}

/// Section 2.6: deletes take the same write lock as updates; every mix of
/// delete and update on one row lets only the first writer proceed.
#[test]
fn first_writer_wins_between_deletes_and_updates() {
    type Op = fn(&mut Transaction<'_>, TableId) -> Result<(), Error>;
    let upd: Op = |x, t| x.update(t, k(5), val(0));
    let del: Op = |x, t| x.delete(t, k(5));
    let uw: Op = |x, t| x.update_with(t, k(5), |o, n| n.extend_from_slice(o));
    for (a, b) in [(upd, del), (del, upd), (del, del), (uw, upd), (upd, uw)] {
        let (db, t, _) = setup();
        let mut x = db.begin(Isolation::Snapshot).unwrap();
        let mut y = db.begin(Isolation::Snapshot).unwrap();
        a(&mut x, t).unwrap();
        assert_eq!(b(&mut y, t), aborted(AbortReason::WriteConflict));
        x.commit().unwrap();
    }
}

/// No lost update above read committed: a row changed by a transaction that
/// committed after my begin is no longer the latest version, so updating it
/// is a write-write conflict (section 2.6: "updatable only if latest").
#[test]
fn update_of_row_committed_after_my_begin_is_write_conflict_above_read_committed() {
    for iso in [Isolation::Snapshot, Isolation::RepeatableRead, Isolation::Serializable] {
        let (db, t, _) = setup();
        let mut late = db.begin(iso).unwrap();
        db.run(iso, |x| x.update(t, k(2), val(20))).unwrap();
        assert_eq!(late.update(t, k(2), val(99)), aborted(AbortReason::WriteConflict), "{iso}");
        let mut late = db.begin(iso).unwrap();
        db.run(iso, |x| x.update(t, k(3), val(30))).unwrap();
        let r = late.update_with(t, k(3), |o, n| n.extend_from_slice(&val(num(o) + 1)));
        assert_eq!(r, aborted(AbortReason::WriteConflict), "{iso}");
        assert_eq!(read(&db, t, 2), Some(20));
        assert_eq!(read(&db, t, 3), Some(30));
    }
}

/// Read committed updates the latest committed version ("now"), so the same
/// schedule succeeds there; update_with read-modify-writes that latest value.
#[test]
fn read_committed_updates_latest_committed_version() {
    let (db, t, _) = setup();
    let mut x = db.begin(Isolation::ReadCommitted).unwrap();
    db.run(Isolation::Snapshot, |y| y.update(t, k(2), val(20))).unwrap();
    x.update_with(t, k(2), |o, n| n.extend_from_slice(&val(num(o) + 1))).unwrap();
    x.commit().unwrap();
    assert_eq!(read(&db, t, 2), Some(21), "update_with used the latest value, nothing lost");
}

/// Two concurrent inserts of one key: the second aborts with WriteConflict
/// while the first is open; an insert of a key inserted by a transaction that
/// committed after my begin (invisible to me) is also a conflict, not a
/// duplicate; after the first inserter aborts, the key can be inserted.
#[test]
fn concurrent_inserts_of_one_key_conflict() {
    for iso in ALL {
        let (db, t, _) = setup();
        let mut a = db.begin(iso).unwrap();
        let mut b = db.begin(iso).unwrap();
        let mut c = db.begin(iso).unwrap();
        a.insert(t, k(50), b"a").unwrap();
        assert_eq!(b.insert(t, k(50), b"b"), aborted(AbortReason::WriteConflict), "{iso}");
        a.abort();
        c.insert(t, k(50), b"c").unwrap();
        let mut d = db.begin(iso).unwrap();
        c.commit().unwrap();
        let r = d.insert(t, k(50), b"d");
        if iso == Isolation::ReadCommitted {
            assert_eq!(r, Err(Error::DuplicateKey), "read committed sees the committed row");
        } else {
            assert_eq!(r, aborted(AbortReason::WriteConflict), "{iso}");
        }
        let mut x = db.begin(iso).unwrap();
        assert_eq!(x.get(t, k(50)).unwrap().as_deref(), Some(&b"c"[..]));
    }
}

// ---------------------------------------------------------------------------
// Section 3.2: read validation (read stability)
// ---------------------------------------------------------------------------

/// Figure 3, V2: at repeatable read and serializable, a row read and then
/// replaced by a concurrent committed transaction fails read validation; at
/// snapshot and read committed the same schedule commits.
#[test]
fn read_row_updated_by_concurrent_commit_fails_read_validation() {
    for iso in ALL {
        let (db, t, log) = setup();
        let mut x = db.begin(iso).unwrap();
        assert_eq!(x.get(t, k(4)).unwrap().map(|v| num(&v)), Some(4));
        db.run(Isolation::Snapshot, |y| y.update(t, k(4), val(44))).unwrap();
        write_log(&mut x, log);
        let r = x.commit().map(|_| ());
        if VALIDATING.contains(&iso) {
            assert_eq!(r, aborted(AbortReason::ReadValidation), "{iso}");
            assert_eq!(db.stats().aborts[AbortReason::ReadValidation], 1);
        } else {
            assert_eq!(r, Ok(()), "{iso}");
        }
    }
}

/// Read validation also covers deletes, and rows read by a scan or get_by.
#[test]
fn read_validation_covers_deletes_and_scanned_rows() {
    for iso in VALIDATING {
        // A read row deleted concurrently.
        let (db, t, log) = setup();
        let mut x = db.begin(iso).unwrap();
        x.get(t, k(6)).unwrap().unwrap();
        db.run(Isolation::Snapshot, |y| y.delete(t, k(6))).unwrap();
        write_log(&mut x, log);
        assert_eq!(x.commit().map(|_| ()), aborted(AbortReason::ReadValidation), "{iso}");

        // A row read by a full scan, updated concurrently.
        let (db, t, log) = setup();
        let mut x = db.begin(iso).unwrap();
        let mut n = 0;
        x.scan(db.primary(t), .., None, |_, _| {
            n += 1;
            true
        })
        .unwrap();
        assert_eq!(n, 10);
        db.run(Isolation::Snapshot, |y| y.update(t, k(9), val(0))).unwrap();
        write_log(&mut x, log);
        assert_eq!(x.commit().map(|_| ()), aborted(AbortReason::ReadValidation), "{iso}");

        // A row read through get_by on the primary index.
        let (db, t, log) = setup();
        let mut x = db.begin(iso).unwrap();
        x.get_by(db.primary(t), k(3), |_, _| true).unwrap();
        db.run(Isolation::Snapshot, |y| y.update(t, k(3), val(0))).unwrap();
        write_log(&mut x, log);
        assert_eq!(x.commit().map(|_| ()), aborted(AbortReason::ReadValidation), "{iso}");
    }
}

/// A row the transaction read and then updated or deleted itself passes
/// validation (its own write lock kept everyone else out).
#[test]
fn read_then_own_update_or_delete_passes_validation() {
    for iso in VALIDATING {
        let (db, t, _) = setup();
        let mut x = db.begin(iso).unwrap();
        x.get(t, k(1)).unwrap().unwrap();
        x.get(t, k(2)).unwrap().unwrap();
        x.update(t, k(1), val(11)).unwrap();
        x.delete(t, k(2)).unwrap();
        x.commit().unwrap();
        assert_eq!(read(&db, t, 1), Some(11));
        assert_eq!(read(&db, t, 2), None);
    }
}

/// Rows read but changed only by a transaction that is still active, or that
/// aborted, stay valid (Table 2: Active and Aborted updaters leave V visible).
#[test]
fn uncommitted_or_aborted_concurrent_updates_do_not_fail_validation() {
    for iso in VALIDATING {
        let (db, t, log) = setup();
        let mut x = db.begin(iso).unwrap();
        x.get(t, k(1)).unwrap().unwrap();
        x.get(t, k(2)).unwrap().unwrap();
        let mut active = db.begin(Isolation::Snapshot).unwrap();
        active.update(t, k(1), val(0)).unwrap();
        let mut gone = db.begin(Isolation::Snapshot).unwrap();
        gone.update(t, k(2), val(0)).unwrap();
        gone.abort();
        write_log(&mut x, log);
        x.commit().unwrap();
        active.commit().unwrap();
    }
}

/// Write skew (two transactions each read both rows and write a different
/// one) is allowed by snapshot isolation and prevented by validation: at
/// repeatable read and serializable the second committer fails.
#[test]
fn write_skew_allowed_at_snapshot_prevented_by_validation() {
    for iso in ALL {
        let (db, t, _) = setup();
        let mut a = db.begin(iso).unwrap();
        let mut b = db.begin(iso).unwrap();
        let sum =
            |x: &mut Transaction<'_>| num(&x.get(t, k(1)).unwrap().unwrap()) + num(&x.get(t, k(2)).unwrap().unwrap());
        assert_eq!(sum(&mut a), 3);
        assert_eq!(sum(&mut b), 3);
        a.update(t, k(1), val(0)).unwrap();
        b.update(t, k(2), val(0)).unwrap();
        a.commit().unwrap();
        let r = b.commit().map(|_| ());
        match iso {
            Isolation::ReadCommitted | Isolation::Snapshot => assert_eq!(r, Ok(()), "{iso}"),
            _ => assert_eq!(r, aborted(AbortReason::ReadValidation), "{iso}"),
        }
    }
}

/// A transaction that wrote nothing is serialized at its begin timestamp
/// (section 3.4, read-only transactions): no validation, commit_ts = begin.
#[test]
fn read_only_transaction_commits_at_begin_timestamp_without_validation() {
    for iso in ALL {
        let (db, t, _) = setup();
        let mut x = db.begin(iso).unwrap();
        x.get(t, k(1)).unwrap().unwrap();
        assert_eq!(x.get(t, k(77)).unwrap(), None);
        db.run(Isolation::Snapshot, |y| {
            y.update(t, k(1), val(0))?;
            y.insert(t, k(77), b"p")
        })
        .unwrap();
        let begin = x.begin_ts();
        let info = x.commit().unwrap();
        assert_eq!(info, CommitInfo { commit_ts: begin, writes: 0 }, "{iso}");
    }
}

// ---------------------------------------------------------------------------
// Section 3.2: phantom detection
// ---------------------------------------------------------------------------

fn even_filter() -> Filter {
    Arc::new(|_k: &Key, v: &[u8]| num(v) % 2 == 0)
}

/// Figure 3, V4 on a hash index: a serializable full scan with a residual
/// Filter, then a concurrent committed insert that satisfies the filter,
/// makes the scanner's commit fail with Phantom; repeatable read commits.
#[test]
fn hash_scan_with_filter_then_concurrent_matching_insert_is_phantom() {
    for iso in [Isolation::RepeatableRead, Isolation::Serializable] {
        let (db, t, log) = setup();
        let mut x = db.begin(iso).unwrap();
        let mut seen = vec![];
        x.scan(db.primary(t), .., Some(&even_filter()), |key, v| {
            assert_eq!(num(v) % 2, 0, "the filter is applied");
            seen.push(key.to_u64().unwrap());
            true
        })
        .unwrap();
        seen.sort();
        assert_eq!(seen, vec![2, 4, 6, 8, 10]);
        db.run(Isolation::Snapshot, |y| y.insert(t, k(12), val(12))).unwrap();
        write_log(&mut x, log);
        let r = x.commit().map(|_| ());
        if iso == Isolation::Serializable {
            assert_eq!(r, aborted(AbortReason::Phantom));
            assert_eq!(db.stats().aborts[AbortReason::Phantom], 1);
        } else {
            assert_eq!(r, Ok(()), "repeatable read does not detect phantoms");
        }
    }
}

/// No false phantoms: concurrent inserts that fail the filter, or fall
/// outside the scanned key range, do not abort a serializable scanner.
#[test]
fn hash_scan_ignores_inserts_outside_filter_or_range() {
    let (db, t, log) = setup();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    x.scan(db.primary(t), .., Some(&even_filter()), |_, _| true).unwrap();
    x.scan(db.primary(t), k(1)..=k(10), None, |_, _| true).unwrap();
    db.run(Isolation::Snapshot, |y| {
        y.insert(t, k(11), val(11))?; // odd: fails the filter; outside 1..=10
        y.insert(t, k(13), val(13))
    })
    .unwrap();
    write_log(&mut x, log);
    x.commit().unwrap();
}

/// A concurrent update that changes a row so that it newly satisfies the
/// scan's filter is a phantom too (a version that came into existence during
/// the scanner's lifetime and is visible at its end).
#[test]
fn update_moving_row_into_filter_is_phantom() {
    let (db, t, log) = setup();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    x.scan(db.primary(t), .., Some(&even_filter()), |_, _| true).unwrap();
    db.run(Isolation::Snapshot, |y| y.update(t, k(3), val(30))).unwrap();
    write_log(&mut x, log);
    assert_eq!(x.commit().map(|_| ()), aborted(AbortReason::Phantom));
}

/// A concurrent insert that committed *and* was deleted again before the
/// scanner's end is not visible at the end: no phantom (Figure 3, V3).
#[test]
fn insert_deleted_again_before_end_is_not_a_phantom() {
    let (db, t, log) = setup();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    x.scan(db.primary(t), .., None, |_, _| true).unwrap();
    db.run(Isolation::Snapshot, |y| y.insert(t, k(20), val(20))).unwrap();
    db.run(Isolation::Snapshot, |y| y.delete(t, k(20))).unwrap();
    write_log(&mut x, log);
    x.commit().unwrap();
}

/// The scanner's own inserts into its scanned range are not phantoms.
#[test]
fn own_insert_into_scanned_range_is_not_a_phantom() {
    let (db, t, _) = setup();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    x.scan(db.primary(t), .., None, |_, _| true).unwrap();
    x.insert(t, k(30), val(30)).unwrap();
    x.update(t, k(2), val(22)).unwrap();
    x.commit().unwrap();
}

fn ordered_setup() -> (Database, TableId, TableId) {
    let db = Database::new(Options::default()).unwrap();
    let t = db.create_table(TableSpec::ordered("o")).unwrap();
    let log = db.create_table(TableSpec::hash("log", 64)).unwrap().table();
    db.run(Isolation::Serializable, |x| {
        for i in [10, 20, 30, 40] {
            x.insert(t, k(i), val(i))?;
        }
        Ok(())
    })
    .unwrap();
    (db, t, log)
}

/// Figure 3, V4 on an ordered index: a serializable range scan [15, 35)
/// followed by a concurrent committed insert of 25 fails with Phantom;
/// repeatable read commits the same schedule.
#[test]
fn ordered_range_scan_then_concurrent_insert_in_range_is_phantom() {
    for iso in [Isolation::RepeatableRead, Isolation::Serializable] {
        let (db, t, log) = ordered_setup();
        let mut x = db.begin(iso).unwrap();
        let mut seen = vec![];
        x.scan(db.primary(t), k(15)..k(35), None, |key, _| {
            seen.push(key.to_u64().unwrap());
            true
        })
        .unwrap();
        assert_eq!(seen, vec![20, 30], "in key order, bounds respected");
        db.run(Isolation::Snapshot, |y| y.insert(t, k(25), val(25))).unwrap();
        write_log(&mut x, log);
        let r = x.commit().map(|_| ());
        if iso == Isolation::Serializable {
            assert_eq!(r, aborted(AbortReason::Phantom));
        } else {
            assert_eq!(r, Ok(()));
        }
    }
}

/// Inserts just outside the range bounds (including an excluded upper bound
/// and an excluded lower bound) are not phantoms of an ordered range scan.
#[test]
fn ordered_range_scan_ignores_inserts_outside_bounds() {
    use std::ops::Bound::{Excluded, Included};
    let (db, t, log) = ordered_setup();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    x.scan(db.primary(t), k(15)..k(35), None, |_, _| true).unwrap();
    x.scan(db.primary(t), (Excluded(k(50)), Included(k(60))), None, |_, _| true).unwrap();
    db.run(Isolation::Snapshot, |y| {
        for i in [5, 35, 36, 50, 61] {
            y.insert(t, k(i), val(i))?;
        }
        Ok(())
    })
    .unwrap();
    write_log(&mut x, log);
    x.commit().unwrap();
}

/// A serializable read of an absent key (get, update or delete reporting
/// KeyNotFound) followed by a concurrent committed insert of that key is a
/// phantom; at repeatable read it commits.
#[test]
fn absent_key_read_then_concurrent_insert_is_phantom() {
    type Probe = fn(&mut Transaction<'_>, TableId);
    let probes: [Probe; 3] = [
        |x, t| assert_eq!(x.get(t, k(42)).unwrap(), None),
        |x, t| assert_eq!(x.update(t, k(42), b"u"), Err(Error::KeyNotFound)),
        |x, t| assert_eq!(x.delete(t, k(42)), Err(Error::KeyNotFound)),
    ];
    for probe in probes {
        for iso in [Isolation::RepeatableRead, Isolation::Serializable] {
            let (db, t, log) = setup();
            let mut x = db.begin(iso).unwrap();
            probe(&mut x, t);
            db.run(Isolation::Snapshot, |y| y.insert(t, k(42), b"new")).unwrap();
            write_log(&mut x, log);
            let r = x.commit().map(|_| ());
            if iso == Isolation::Serializable {
                assert_eq!(r, aborted(AbortReason::Phantom));
            } else {
                assert_eq!(r, Ok(()));
            }
        }
    }
}

/// Same on an ordered table, and with the transaction then trying to insert
/// the key itself: the concurrent committed insert is invisible to it, so
/// its own insert is a write conflict (not a duplicate, not a lost insert).
#[test]
fn absent_key_then_insert_after_concurrent_insert_conflicts() {
    let (db, t, _) = ordered_setup();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(x.get(t, k(25)).unwrap(), None);
    db.run(Isolation::Snapshot, |y| y.insert(t, k(25), b"y")).unwrap();
    assert_eq!(x.insert(t, k(25), b"x"), aborted(AbortReason::WriteConflict));
    let mut z = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(z.get(t, k(25)).unwrap().as_deref(), Some(&b"y"[..]));
}

/// An absent-key read followed by the transaction's own insert of that key
/// is not a phantom.
#[test]
fn absent_key_then_own_insert_commits() {
    let (db, t, _) = setup();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(x.get(t, k(42)).unwrap(), None);
    x.insert(t, k(42), val(42)).unwrap();
    x.commit().unwrap();
    assert_eq!(read(&db, t, 42), Some(42));
}

/// A DuplicateKey error tells a serializable transaction that the key exists;
/// that observation must be validated like any read. Here T learns "key 5
/// exists" from DuplicateKey and records it in row 1; U reads row 1 (old),
/// deletes key 5 and commits first. T's commit must fail (no serial order
/// explains both), just as it does when T learns the same through `get`.
#[test]
fn duplicate_key_observation_is_validated_at_serializable() {
    let (db, t, _) = setup();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(x.insert(t, k(5), b"again"), Err(Error::DuplicateKey));
    x.update(t, k(1), b"key 5 exists").unwrap();
    let mut u = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(u.get(t, k(1)).unwrap().map(|v| num(&v)), Some(1));
    u.delete(t, k(5)).unwrap();
    u.commit().unwrap();
    assert_eq!(x.commit().map(|_| ()), aborted(AbortReason::ReadValidation));
}

/// The control for the test above: the same schedule with `get` instead of
/// the failed insert is caught by read validation.
#[test]
fn existence_read_by_get_is_validated_at_serializable() {
    let (db, t, _) = setup();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    assert!(x.get(t, k(5)).unwrap().is_some());
    x.update(t, k(1), b"key 5 exists").unwrap();
    let mut u = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(u.get(t, k(1)).unwrap().map(|v| num(&v)), Some(1));
    u.delete(t, k(5)).unwrap();
    u.commit().unwrap();
    assert_eq!(x.commit().map(|_| ()), aborted(AbortReason::ReadValidation));
}

// ---------------------------------------------------------------------------
// Sections 2 and 3.4: what each level reads
// ---------------------------------------------------------------------------

/// No level ever reads uncommitted data (Table 1: an Active creator's version
/// is invisible; Table 2: an Active updater's old version stays visible).
#[test]
fn no_level_reads_uncommitted_data() {
    for iso in ALL {
        let (db, t, _) = setup();
        let mut w = db.begin(Isolation::Snapshot).unwrap();
        w.update(t, k(1), val(100)).unwrap();
        w.delete(t, k(2)).unwrap();
        w.insert(t, k(60), val(60)).unwrap();
        let mut x = db.begin(iso).unwrap();
        assert_eq!(x.get(t, k(1)).unwrap().map(|v| num(&v)), Some(1), "{iso}");
        assert_eq!(x.get(t, k(2)).unwrap().map(|v| num(&v)), Some(2), "{iso}");
        assert_eq!(x.get(t, k(60)).unwrap(), None, "{iso}");
        let mut n = 0;
        x.scan(db.primary(t), .., None, |_, _| {
            n += 1;
            true
        })
        .unwrap();
        assert_eq!(n, 10, "{iso}");
        w.abort();
    }
}

/// Snapshot and above read as of the begin timestamp (repeatable reads, no
/// new rows); read committed reads the latest committed state on each read.
#[test]
fn read_committed_sees_new_commits_snapshot_does_not() {
    for iso in ALL {
        let (db, t, _) = setup();
        let mut x = db.begin(iso).unwrap();
        assert_eq!(x.get(t, k(1)).unwrap().map(|v| num(&v)), Some(1));
        assert_eq!(x.get(t, k(70)).unwrap(), None);
        db.run(Isolation::Snapshot, |y| {
            y.update(t, k(1), val(111))?;
            y.insert(t, k(70), val(70))?;
            y.delete(t, k(2))
        })
        .unwrap();
        let (v1, v70, v2) = (
            x.get(t, k(1)).unwrap().map(|v| num(&v)),
            x.get(t, k(70)).unwrap().map(|v| num(&v)),
            x.get(t, k(2)).unwrap().map(|v| num(&v)),
        );
        if iso == Isolation::ReadCommitted {
            assert_eq!((v1, v70, v2), (Some(111), Some(70), None));
        } else {
            assert_eq!((v1, v70, v2), (Some(1), None, Some(2)), "{iso}");
        }
    }
}

/// Read committed permits a lost update when the value is read with `get` and
/// written back with `update` (no read stability): a documented property of
/// the level, and why the bank test uses `update_with` there.
#[test]
fn read_committed_get_then_update_can_lose_an_update() {
    let (db, t, _) = setup();
    let mut x = db.begin(Isolation::ReadCommitted).unwrap();
    let v = num(&x.get(t, k(1)).unwrap().unwrap());
    db.run(Isolation::Snapshot, |y| y.update(t, k(1), val(50))).unwrap();
    x.update(t, k(1), val(v + 1)).unwrap();
    x.commit().unwrap();
    assert_eq!(read(&db, t, 1), Some(2), "the concurrent +49 is overwritten");
}

/// Reads see the transaction's own writes at every level, and successive
/// writes to one key by one transaction compose (insert/update/delete/reinsert).
#[test]
fn own_writes_are_visible_and_compose() {
    for iso in ALL {
        let (db, t, _) = setup();
        let mut x = db.begin(iso).unwrap();
        x.insert(t, k(80), val(1)).unwrap();
        x.update(t, k(80), val(2)).unwrap();
        assert_eq!(x.get(t, k(80)).unwrap().map(|v| num(&v)), Some(2));
        x.delete(t, k(80)).unwrap();
        assert_eq!(x.get(t, k(80)).unwrap(), None);
        x.insert(t, k(80), val(3)).unwrap();
        x.delete(t, k(1)).unwrap();
        x.insert(t, k(1), val(10)).unwrap();
        assert_eq!(x.insert(t, k(1), val(11)), Err(Error::DuplicateKey));
        x.put(t, k(2), val(20)).unwrap();
        x.put(t, k(81), val(81)).unwrap();
        let mut n = 0;
        x.scan(db.primary(t), .., None, |_, _| {
            n += 1;
            true
        })
        .unwrap();
        assert_eq!(n, 12, "{iso}: 10 rows + 80 + 81, each seen once");
        let info = x.commit().unwrap();
        assert!(info.writes >= 6);
        assert_eq!(read(&db, t, 80), Some(3), "{iso}");
        assert_eq!(read(&db, t, 1), Some(10));
        assert_eq!(read(&db, t, 2), Some(20));
        assert_eq!(read(&db, t, 81), Some(81));
    }
}

/// An aborted or dropped transaction leaves nothing behind (section 3.3
/// postprocessing), and is counted by reason.
#[test]
fn aborted_and_dropped_transactions_leave_no_trace() {
    let (db, t, _) = setup();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    x.insert(t, k(90), b"x").unwrap();
    x.update(t, k(1), val(0)).unwrap();
    x.delete(t, k(2)).unwrap();
    x.abort();
    {
        let mut y = db.begin(Isolation::Snapshot).unwrap();
        y.insert(t, k(91), b"y").unwrap();
        y.delete(t, k(3)).unwrap();
    }
    assert_eq!(read(&db, t, 90), None);
    assert_eq!(read(&db, t, 91), None);
    assert_eq!(read(&db, t, 1), Some(1));
    assert_eq!(read(&db, t, 2), Some(2));
    assert_eq!(read(&db, t, 3), Some(3));
    let s = db.stats();
    assert_eq!(s.aborts[AbortReason::User], 2);
    assert_eq!(s.open_transactions, 0);
    // The rows are writable again.
    db.run(Isolation::Serializable, |z| {
        z.update(t, k(1), val(5))?;
        z.insert(t, k(90), b"z")
    })
    .unwrap();
}

/// Commit timestamps follow commit order and exceed begin timestamps; the
/// clock only moves forward.
#[test]
fn commit_timestamps_are_ordered() {
    let (db, t, _) = setup();
    let mut last = 0;
    for i in 0..20u64 {
        let mut x = db.begin(Isolation::Serializable).unwrap();
        let b = x.begin_ts();
        x.update(t, k(1 + i % 10), val(i)).unwrap();
        let info = x.commit().unwrap();
        assert!(info.commit_ts > b);
        assert!(info.commit_ts > last);
        assert_eq!(info.writes, 1);
        last = info.commit_ts;
    }
    assert!(db.clock() > last);
    for iso in NON_VALIDATING {
        let x = db.begin(iso).unwrap();
        assert!(x.begin_ts() > last);
    }
}
