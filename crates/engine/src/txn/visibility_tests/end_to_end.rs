//! Whole transactions of a `Database`: section 2.7 against a writer held in the Preparing state, and the GC watermark.

use super::{db3, deps_of, get, FakeWriter};
use crate::error::AbortReason;
use crate::key::Key;
use crate::sync::atomic::{AtomicBool, Ordering};
use crate::txn::table::Peek;
use crate::{Database, Error, Isolation, Options, TableId, TableSpec};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// Section 2.7 end to end: whole transactions against a held-Preparing writer
// ---------------------------------------------------------------------------

/// Section 2.7: a transaction that speculatively read a Preparing writer's
/// version waits at commit until the writer commits, then commits itself.
#[test]
fn dependency_resolved_by_commit_lets_dependent_commit_after_waiting() {
    let (db, t) = db3();
    let f = FakeWriter::prepare(&db, t, 1, Some(b"new"));
    let mut x = db.begin(Isolation::Serializable).unwrap();
    assert!(x.begin_ts() > f.end_ts);
    assert_eq!(get(&mut x, t, 1).unwrap().as_deref(), Some(&b"new"[..]), "speculative read");
    assert_eq!(deps_of(&db, x.id()), 1);
    x.update(t, Key::from(2), b"x2").unwrap();
    let reported = AtomicBool::new(false);
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(30));
            reported.store(true, Ordering::SeqCst);
            f.commit();
        });
        x.commit()
    });
    assert!(r.is_ok(), "{r:?}");
    assert!(reported.load(Ordering::SeqCst), "commit waited for the dependency");
    let mut y = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(get(&mut y, t, 1).unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(get(&mut y, t, 2).unwrap().as_deref(), Some(&b"x2"[..]));
}

/// Section 2.7: the writer aborts, so the speculative reader's commit fails
/// with CommitDependency (read-only: the wait happens without validation).
#[test]
fn dependency_resolved_by_abort_fails_dependent_commit() {
    let (db, t) = db3();
    let f = FakeWriter::prepare(&db, t, 1, Some(b"new"));
    let mut x = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(get(&mut x, t, 1).unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(deps_of(&db, x.id()), 1);
    f.abort();
    assert_eq!(x.commit(), Err(Error::Aborted(AbortReason::CommitDependency)));
    assert_eq!(db.stats().aborts[AbortReason::CommitDependency], 1);
    let mut y = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(get(&mut y, t, 1).unwrap().as_deref(), Some(&b"v1"[..]));
}

/// Runs `op` while another thread, after a short delay, commits or aborts
/// the held-Preparing writer `f` (which `op` may wait for).
fn resolve_later<R>(f: FakeWriter<'_>, commit: bool, op: impl FnOnce() -> R) -> R {
    std::thread::scope(|s| {
        s.spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            if commit {
                f.commit()
            } else {
                f.abort()
            }
        });
        op()
    })
}

/// Table 2 end to end: a Preparing delete with TS < RT is speculatively
/// ignored, which registers a commit dependency. A lookup that then finds
/// nothing waits for its dependencies before reporting the absence (see
/// `settle_speculation`): when the deleter aborts, the lookup itself fails
/// with CommitDependency and the transaction is closed afterwards.
#[test]
fn speculative_ignore_then_abort_fails_the_lookup() {
    let (db, t) = db3();
    let f = FakeWriter::prepare(&db, t, 2, None);
    let mut x = db.begin(Isolation::ReadCommitted).unwrap();
    let r = resolve_later(f, false, || get(&mut x, t, 2));
    assert_eq!(r, Err(Error::Aborted(AbortReason::CommitDependency)));
    assert_eq!(get(&mut x, t, 3), Err(Error::TransactionClosed(Some(AbortReason::CommitDependency))));
    assert_eq!(x.commit(), Err(Error::TransactionClosed(Some(AbortReason::CommitDependency))));
    let mut y = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(get(&mut y, t, 2).unwrap().as_deref(), Some(&b"v2"[..]), "the delete was undone");
}

/// As above, but the deleter commits: the lookup waits for it and then
/// reports the row absent, and the reader commits.
#[test]
fn speculative_ignore_then_commit_reports_absence() {
    let (db, t) = db3();
    let f = FakeWriter::prepare(&db, t, 2, None);
    let mut x = db.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(resolve_later(f, true, || get(&mut x, t, 2)).unwrap(), None, "deleted");
    assert_eq!(deps_of(&db, x.id()), 0, "the dependency was settled before the answer");
    assert_eq!(get(&mut x, t, 3).unwrap().as_deref(), Some(&b"v3"[..]));
    assert!(x.commit().is_ok());
}

/// A reader that began before the writer's end timestamp is not affected
/// (Table 1/2 with TS > RT): no dependency, commits regardless of the writer.
#[test]
fn reader_older_than_preparing_writer_takes_no_dependency() {
    let (db, t) = db3();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    let f = FakeWriter::prepare(&db, t, 1, Some(b"new"));
    assert_eq!(get(&mut x, t, 1).unwrap().as_deref(), Some(&b"v1"[..]));
    assert_eq!(deps_of(&db, x.id()), 0);
    f.abort();
    assert!(x.commit().is_ok());
}

/// Starts T1 on its own thread (transactions belong to their thread): T1
/// speculatively reads key 1 (written by the held-Preparing fake writer),
/// updates key 2 to "t1" and commits. Returns once T1 is Preparing, which
/// means it is waiting on the fake writer.
fn spawn_t1_waiting_in_preparing<'s>(
    s: &'s std::thread::Scope<'s, '_>,
    db: &'s Database,
    t: TableId,
    iso: Isolation,
) -> std::thread::ScopedJoinHandle<'s, Result<crate::CommitInfo, Error>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = s.spawn(move || {
        let mut t1 = db.begin(iso).unwrap();
        assert_eq!(get(&mut t1, t, 1).unwrap().as_deref(), Some(&b"f1"[..]), "speculative read of F");
        t1.update(t, Key::from(2), b"t1").unwrap();
        tx.send(t1.id()).unwrap();
        t1.commit()
    });
    let t1_id = rx.recv().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !matches!(db.txns.peek(t1_id), Peek::Preparing(_)) {
        assert!(Instant::now() < deadline, "T1 never reached Preparing");
        std::thread::yield_now();
    }
    h
}

/// Cascading aborts (section 2.7): F (Preparing) ← T1 (reads F's version,
/// writes key 2, then waits in Preparing) ← T2 (reads T1's version of key 2).
/// F aborts: T1's commit fails with CommitDependency, which in turn aborts
/// T2's commit with CommitDependency; nothing of T1 or T2 survives.
#[test]
fn cascading_abort_through_a_waiting_dependent() {
    let (db, t) = db3();
    let f = FakeWriter::prepare(&db, t, 1, Some(b"f1"));
    let (r1, r2) = std::thread::scope(|s| {
        let h = spawn_t1_waiting_in_preparing(s, &db, t, Isolation::Snapshot);
        let mut t2 = db.begin(Isolation::Snapshot).unwrap();
        assert_eq!(get(&mut t2, t, 2).unwrap().as_deref(), Some(&b"t1"[..]), "speculative read of T1");
        assert_eq!(deps_of(&db, t2.id()), 1);
        t2.update(t, Key::from(3), b"t2").unwrap();
        f.abort();
        let r1 = h.join().unwrap();
        (r1, t2.commit())
    });
    assert_eq!(r1, Err(Error::Aborted(AbortReason::CommitDependency)));
    assert_eq!(r2, Err(Error::Aborted(AbortReason::CommitDependency)));
    let mut y = db.begin(Isolation::Snapshot).unwrap();
    for k in 1..=3 {
        assert_eq!(get(&mut y, t, k).unwrap(), Some(format!("v{k}").into_bytes()));
    }
    assert_eq!(db.stats().aborts[AbortReason::CommitDependency], 2);
}

/// The same chain with F committing: every dependent commits, in order.
#[test]
fn dependency_chain_commits_when_root_commits() {
    let (db, t) = db3();
    let f = FakeWriter::prepare(&db, t, 1, Some(b"f1"));
    let (r1, r2) = std::thread::scope(|s| {
        let h = spawn_t1_waiting_in_preparing(s, &db, t, Isolation::Serializable);
        let mut t2 = db.begin(Isolation::Serializable).unwrap();
        assert_eq!(get(&mut t2, t, 2).unwrap().as_deref(), Some(&b"t1"[..]));
        t2.update(t, Key::from(3), b"t2").unwrap();
        f.commit();
        let r1 = h.join().unwrap();
        (r1, t2.commit())
    });
    let (c1, c2) = (r1.unwrap(), r2.unwrap());
    assert!(c1.commit_ts < c2.commit_ts);
    let mut y = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(get(&mut y, t, 1).unwrap().as_deref(), Some(&b"f1"[..]));
    assert_eq!(get(&mut y, t, 2).unwrap().as_deref(), Some(&b"t1"[..]));
    assert_eq!(get(&mut y, t, 3).unwrap().as_deref(), Some(&b"t2"[..]));
}

/// Section 2.7 and a scan: a scanner speculatively reads the new version of
/// key 1 by a Preparing writer F, which then aborts; F's undo (section 3.3)
/// makes the version it replaced latest again, and the rest of the scan
/// reaches it. The scanner must not hand on key 1 twice (F's version, then
/// the old one): it settles its dependency on F before delivering F's
/// version, and fails with CommitDependency instead. (In the stress runs
/// the writer is itself a dependent, still Preparing, of a transaction that
/// aborted: SSI aborts many Preparing transactions.)
#[test]
fn a_scan_never_hands_on_a_key_twice_when_its_dependency_aborts() {
    for spec in [TableSpec::hash("t", 64).into(), TableSpec::ordered("t")] {
        let db = Database::new(Options::default()).unwrap();
        let t = db.create_table(spec).unwrap();
        db.run(Isolation::Serializable, |x| {
            for k in 1..=3u64 {
                x.insert(t, Key::from(k), format!("v{k}").as_bytes())?;
            }
            Ok(())
        })
        .unwrap();
        // F's new version of key 1 precedes the old one in its chain.
        let f = FakeWriter::prepare(&db, t, 1, Some(b"f1"));
        let mut x = db.begin(Isolation::Snapshot).unwrap();
        let aborted = AtomicBool::new(false);
        let mut seen = Vec::new();
        let r = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                f.abort();
                aborted.store(true, Ordering::SeqCst);
            });
            x.scan(db.primary(t), .., None, |k, v| {
                if *k == Key::from(1) {
                    // Hold the scan on key 1 until F has aborted.
                    let deadline = Instant::now() + Duration::from_secs(10);
                    while !aborted.load(Ordering::SeqCst) && Instant::now() < deadline {
                        std::thread::yield_now();
                    }
                }
                seen.push((k.clone(), v.to_vec()));
                true
            })
        });
        let ones: Vec<_> = seen.iter().filter(|(k, _)| *k == Key::from(1)).collect();
        assert!(ones.len() <= 1, "key 1 handed on twice: {ones:?}");
        assert!(ones.iter().all(|(_, v)| v == b"v1"), "a value of the aborted F was handed on: {ones:?}");
        assert_eq!(r, Err(Error::Aborted(AbortReason::CommitDependency)));
        let mut y = db.begin(Isolation::Snapshot).unwrap();
        assert_eq!(get(&mut y, t, 1).unwrap().as_deref(), Some(&b"v1"[..]), "F was undone");
    }
}

/// The GC watermark is the smallest begin timestamp of an open transaction
/// (or the clock when none is open).
#[test]
fn watermark_tracks_oldest_open_transaction() {
    let db = Database::new(Options::default()).unwrap();
    assert_eq!(db.watermark(), db.clock());
    let a = db.begin(Isolation::Snapshot).unwrap();
    let b = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(db.watermark(), a.begin_ts());
    drop(a);
    assert_eq!(db.watermark(), b.begin_ts());
    drop(b);
    assert_eq!(db.watermark(), db.clock());
}
