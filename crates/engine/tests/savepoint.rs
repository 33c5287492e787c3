//! Savepoints (`Transaction::savepoint`, `Transaction::rollback_to`) under
//! every protocol and level: the writes since a savepoint are undone, those
//! before it kept, nested savepoints released by a rollback past them, the
//! rolled-back writes' locks given up where the protocol's rules allow
//! (multi-version), and what can refuse a savepoint refuses it.

use multiverse::*;
use std::time::{Duration, Instant};

fn dbs() -> impl Iterator<Item = (Protocol, Isolation)> {
    Protocol::ALL.into_iter().flat_map(|p| p.isolation_levels().iter().map(move |&i| (p, i)))
}

fn open(p: Protocol) -> Database {
    Database::new(Options { protocol: p, ..Options::default() }).unwrap()
}

/// Rows 0..4 = "0".."3" in a hash and an ordered table.
fn tables(db: &Database) -> [TableId; 2] {
    let h = db.create_table(TableSpec::hash("h", 64)).unwrap().table();
    let o = db.create_table(TableSpec::ordered("o")).unwrap();
    db.run(Isolation::Serializable, |x| {
        for t in [h, o] {
            for k in 0..4u64 {
                x.insert(t, Key::from(k), k.to_string().as_bytes())?;
            }
        }
        Ok(())
    })
    .unwrap();
    db.sync_commits().unwrap(); // POMVCC shows a commit at its next tick
    [h, o]
}

fn rows(x: &mut Transaction<'_>, t: TableId) -> Vec<(u64, String)> {
    (0..8u64).filter_map(|k| x.get(t, Key::from(k)).unwrap().map(|v| (k, String::from_utf8(v).unwrap()))).collect()
}

fn want(v: &[(u64, &str)]) -> Vec<(u64, String)> {
    v.iter().map(|(k, s)| (*k, s.to_string())).collect()
}

#[test]
fn a_rollback_undoes_the_writes_since_the_savepoint_and_keeps_the_rest() {
    for (p, iso) in dbs() {
        let db = open(p);
        for t in tables(&db) {
            let mut x = db.begin(iso).unwrap();
            x.update(t, Key::from(0), b"before").unwrap();
            x.insert(t, Key::from(4), b"before").unwrap();
            let sp = x.savepoint().unwrap();
            x.update(t, Key::from(0), b"after").unwrap(); // our own version again
            x.update(t, Key::from(1), b"after").unwrap();
            x.delete(t, Key::from(2)).unwrap();
            x.delete(t, Key::from(4)).unwrap(); // our own insert
            x.insert(t, Key::from(5), b"after").unwrap();
            x.insert(t, Key::from(6), b"after").unwrap();
            x.delete(t, Key::from(6)).unwrap();
            x.rollback_to(&sp).unwrap();
            let expect = want(&[(0, "before"), (1, "1"), (2, "2"), (3, "3"), (4, "before")]);
            assert_eq!(rows(&mut x, t), expect, "{p:?} {iso:?}: inside");
            // Writing the same keys again after the rollback.
            x.update(t, Key::from(1), b"again").unwrap();
            x.insert(t, Key::from(5), b"again").unwrap();
            x.commit().unwrap_or_else(|e| panic!("{p:?} {iso:?}: {e}"));
            db.sync_commits().unwrap();
            let expect = want(&[(0, "before"), (1, "again"), (2, "2"), (3, "3"), (4, "before"), (5, "again")]);
            let got = db.run(p.strongest(), |y| Ok(rows(y, t))).unwrap();
            assert_eq!(got, expect, "{p:?} {iso:?}: committed");
            // Back to the start for the next level.
            db.run(Isolation::Serializable, |y| {
                y.update(t, Key::from(0), b"0")?;
                y.update(t, Key::from(1), b"1")?;
                y.delete(t, Key::from(4))?;
                y.delete(t, Key::from(5))
            })
            .unwrap();
            db.sync_commits().unwrap();
        }
    }
}

/// Reads, since the savepoint, of the transaction's own rolled-back
/// writes do not fail its commit: what they read no longer exists, and the
/// rows under those keys are read again (MV/O once kept them in its
/// ReadSet and failed read validation on every try).
#[test]
fn reads_of_rolled_back_writes_do_not_fail_the_commit() {
    for (p, iso) in dbs() {
        let db = open(p);
        for t in tables(&db) {
            let mut x = db.begin(iso).unwrap();
            x.insert(t, Key::from(4), b"before").unwrap();
            x.update(t, Key::from(3), b"before").unwrap();
            let sp = x.savepoint().unwrap();
            x.update(t, Key::from(0), b"after").unwrap();
            x.insert(t, Key::from(5), b"after").unwrap();
            x.update(t, Key::from(4), b"after").unwrap();
            x.update(t, Key::from(3), b"after").unwrap();
            for k in [0, 5, 4, 3] {
                assert_eq!(x.get(t, Key::from(k)).unwrap().as_deref(), Some(&b"after"[..]), "{p:?} {iso:?}");
            }
            assert_eq!(x.insert(t, Key::from(5), b"twice"), Err(Error::DuplicateKey), "{p:?} {iso:?}");
            assert_eq!(x.insert(t, Key::from(4), b"twice"), Err(Error::DuplicateKey), "{p:?} {iso:?}");
            x.rollback_to(&sp).unwrap();
            let expect = want(&[(0, "0"), (1, "1"), (2, "2"), (3, "before"), (4, "before")]);
            assert_eq!(rows(&mut x, t), expect, "{p:?} {iso:?}");
            x.commit().unwrap_or_else(|e| panic!("{p:?} {iso:?}: {e}"));
            db.run(Isolation::Serializable, |y| {
                y.update(t, Key::from(3), b"3")?;
                y.delete(t, Key::from(4))
            })
            .unwrap();
            db.sync_commits().unwrap();
        }
    }
}

#[test]
fn nested_savepoints_and_repeated_rollbacks() {
    for (p, iso) in dbs() {
        let db = open(p);
        let [t, _] = tables(&db);
        let mut x = db.begin(iso).unwrap();
        let sp1 = x.savepoint().unwrap();
        x.update(t, Key::from(0), b"a").unwrap();
        let sp2 = x.savepoint().unwrap();
        x.update(t, Key::from(1), b"b").unwrap();
        x.rollback_to(&sp2).unwrap();
        assert_eq!(x.get(t, Key::from(0)).unwrap().unwrap(), b"a");
        assert_eq!(x.get(t, Key::from(1)).unwrap().unwrap(), b"1");
        // A savepoint stays usable after a rollback to it.
        x.update(t, Key::from(1), b"c").unwrap();
        x.rollback_to(&sp2).unwrap();
        assert_eq!(x.get(t, Key::from(1)).unwrap().unwrap(), b"1");
        x.rollback_to(&sp1).unwrap();
        assert_eq!(x.get(t, Key::from(0)).unwrap().unwrap(), b"0");
        // sp2 was released by the rollback past it.
        assert!(matches!(x.rollback_to(&sp2), Err(Error::InvalidArgument(_))), "{p:?}");
        // A savepoint of another transaction is refused.
        x.commit().unwrap();
        let mut y = db.begin(iso).unwrap();
        assert!(matches!(y.rollback_to(&sp1), Err(Error::InvalidArgument(_))), "{p:?}");
        y.commit().unwrap();
    }
}

/// Multi-version: the rolled-back update's write lock is given up, so a
/// concurrent writer of that row no longer meets a write-write conflict.
#[test]
fn a_rolled_back_update_releases_its_write_lock() {
    for p in [Protocol::MvOcc, Protocol::MvLock, Protocol::MvMixed, Protocol::Ssn, Protocol::Ssi, Protocol::Pomvcc] {
        let db =
            Database::new(Options { protocol: p, pomvcc_interval: Duration::from_secs(3600), ..Options::default() })
                .unwrap();
        let [t, _] = tables(&db);
        let iso = p.isolation_levels()[0];
        let mut x = db.begin(iso).unwrap();
        let sp = x.savepoint().unwrap();
        x.update(t, Key::from(3), b"x").unwrap();
        x.rollback_to(&sp).unwrap();
        let mut y = db.begin(iso).unwrap();
        y.update(t, Key::from(3), b"y").unwrap_or_else(|e| panic!("{p:?}: {e}"));
        y.commit().unwrap();
        x.commit().unwrap();
    }
}

/// MV/L: an update that a reader's read lock made wait (a wait-for
/// dependency, section 4.2.1), rolled back, no longer waits for the reader:
/// the writer commits while the reader is still open. (The reader runs at
/// repeatable read: a serializable one also locks the bucket it looked in,
/// and a writer that linked a version into it waits for the reader's
/// precommit, section 4.2.2, rolled back or not: see the module docs.)
#[test]
fn mv_lock_a_rolled_back_update_stops_waiting_for_readers() {
    for p in [Protocol::MvLock, Protocol::MvMixed] {
        let db = open(p);
        let [t, _] = tables(&db);
        let mut reader = db.begin(Isolation::RepeatableRead).unwrap();
        assert_eq!(reader.get(t, Key::from(2)).unwrap().unwrap(), b"2");
        let mut w =
            db.begin_with(TxnOptions { mode: Mode::Pessimistic, ..TxnOptions::new(Isolation::Snapshot) }).unwrap();
        let sp = w.savepoint().unwrap();
        w.update(t, Key::from(2), b"w").unwrap();
        w.rollback_to(&sp).unwrap();
        w.update(t, Key::from(3), b"w").unwrap();
        let started = Instant::now();
        w.commit().unwrap_or_else(|e| panic!("{p:?}: {e}"));
        assert!(started.elapsed() < Duration::from_secs(1), "{p:?}: the commit waited for the reader");
        // The reader's lock was never broken: its read is still valid.
        assert_eq!(reader.get(t, Key::from(2)).unwrap().unwrap(), b"2");
        reader.commit().unwrap();
    }
}

#[test]
fn what_cannot_roll_back_part_of_itself_refuses_a_savepoint() {
    let db = open(Protocol::Pomvcc);
    let mut x = db.begin_with(TxnOptions { mode: Mode::Optimistic, ..TxnOptions::new(Isolation::Snapshot) }).unwrap();
    assert!(matches!(x.savepoint(), Err(Error::Unsupported(_))));
    // The transaction goes on.
    x.commit().unwrap();
}
