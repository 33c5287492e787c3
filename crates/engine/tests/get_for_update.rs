//! Read intent (`Transaction::get_for_update`) under every protocol and
//! level: it reads what `get` reads, a read-modify-write through it
//! commits, a read for update never followed by a write leaves the row
//! readable and writable by others after the commit or the abort, and two
//! transactions reading one key for update meet at the read: under the
//! multi-version protocols the second gets a write conflict there (not at
//! its commit), under the locking ones and Silo it waits.

use multiverse::*;
use std::time::Duration;

fn dbs() -> impl Iterator<Item = (Protocol, Isolation)> {
    Protocol::ALL.into_iter().flat_map(|p| p.isolation_levels().iter().map(move |&i| (p, i)))
}

fn open(p: Protocol) -> Database {
    Database::new(Options { protocol: p, lock_timeout: Duration::from_millis(50), ..Options::default() }).unwrap()
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

fn k(n: u64) -> Key {
    Key::from(n)
}

/// Every row of `t`, by a full scan of its primary index.
fn scan(db: &Database, x: &mut Transaction<'_>, t: TableId) -> Vec<(Key, Vec<u8>)> {
    let mut rows = Vec::new();
    x.scan(db.primary(t), .., None, |k, v| {
        rows.push((k.clone(), v.to_vec()));
        true
    })
    .unwrap();
    rows.sort();
    rows
}

fn committed(db: &Database, p: Protocol, t: TableId, key: u64) -> Option<Vec<u8>> {
    db.sync_commits().unwrap();
    db.run(p.strongest(), |y| y.get(t, k(key))).unwrap()
}

/// The protocols where `get_for_update` claims the row early (multi-version
/// with pessimistic writes): a second claimant conflicts at once.
fn claims_conflict(p: Protocol) -> bool {
    matches!(
        p,
        Protocol::MvOcc | Protocol::MvLock | Protocol::MvMixed | Protocol::Ssn | Protocol::Ssi | Protocol::Pomvcc
    )
}

#[test]
fn get_for_update_reads_what_get_reads() {
    for (p, iso) in dbs() {
        let db = open(p);
        for t in tables(&db) {
            let mut x = db.begin(iso).unwrap();
            let before = scan(&db, &mut x, t);
            for n in 0..6u64 {
                let a = x.get_for_update(t, k(n)).unwrap();
                let b = x.get(t, k(n)).unwrap();
                assert_eq!(a, b, "{p:?} {iso:?}: key {n}");
                assert_eq!(a, (n < 4).then(|| n.to_string().into_bytes()), "{p:?} {iso:?}: key {n}");
                // Twice: the claim taken already.
                assert_eq!(x.get_for_update(t, k(n)).unwrap(), a, "{p:?} {iso:?}: key {n} again");
            }
            let got = x.get_for_update_with(t, k(2), |v| v.len()).unwrap();
            assert_eq!(got, Some(1), "{p:?} {iso:?}");
            // Our claims stay ours to see, in scans and against inserts.
            assert_eq!(scan(&db, &mut x, t), before, "{p:?} {iso:?}: scan after claims");
            assert!(
                matches!(x.insert(t, k(1), b"dup"), Err(Error::DuplicateKey)),
                "{p:?} {iso:?}: insert of a claimed key"
            );
            x.commit().unwrap_or_else(|e| panic!("{p:?} {iso:?}: {e}"));
        }
    }
}

#[test]
fn a_read_modify_write_through_get_for_update_commits() {
    for (p, iso) in dbs() {
        let db = open(p);
        for t in tables(&db) {
            let mut x = db.begin(iso).unwrap();
            let v = x.get_for_update(t, k(0)).unwrap().unwrap();
            x.update(t, k(0), [v.as_slice(), b"+"].concat()).unwrap();
            x.get_for_update(t, k(1)).unwrap().unwrap();
            x.update_with(t, k(1), |old, new| {
                new.extend_from_slice(old);
                new.push(b'*');
            })
            .unwrap();
            x.get_for_update(t, k(2)).unwrap().unwrap();
            x.delete(t, k(2)).unwrap();
            // Read for update after our own write: our new version.
            x.get_for_update(t, k(3)).unwrap().unwrap();
            x.update(t, k(3), b"3a").unwrap();
            assert_eq!(x.get_for_update(t, k(3)).unwrap().as_deref(), Some(&b"3a"[..]), "{p:?} {iso:?}");
            x.update(t, k(3), b"3b").unwrap();
            x.commit().unwrap_or_else(|e| panic!("{p:?} {iso:?}: {e}"));
            assert_eq!(committed(&db, p, t, 0).as_deref(), Some(&b"0+"[..]), "{p:?} {iso:?}");
            assert_eq!(committed(&db, p, t, 1).as_deref(), Some(&b"1*"[..]), "{p:?} {iso:?}");
            assert_eq!(committed(&db, p, t, 2), None, "{p:?} {iso:?}");
            assert_eq!(committed(&db, p, t, 3).as_deref(), Some(&b"3b"[..]), "{p:?} {iso:?}");
        }
    }
}

#[test]
fn a_read_for_update_never_written_leaves_the_row_to_others() {
    for (p, iso) in dbs() {
        let db = open(p);
        for t in tables(&db) {
            for end in ["commit", "commit-with-a-write", "abort", "drop"] {
                let mut x = db.begin(iso).unwrap();
                x.get_for_update(t, k(0)).unwrap().unwrap();
                if end == "commit-with-a-write" {
                    // An end timestamp is drawn: the released claim must not
                    // hide the row from readers after it.
                    x.update(t, k(1), b"w").unwrap();
                }
                match end {
                    "abort" => x.abort(),
                    "drop" => drop(x),
                    _ => {
                        x.commit().unwrap_or_else(|e| panic!("{p:?} {iso:?} {end}: {e}"));
                    }
                }
                assert_eq!(committed(&db, p, t, 0).as_deref(), Some(&b"0"[..]), "{p:?} {iso:?} {end}: read after");
                db.run(iso, |y| {
                    y.get_for_update(t, k(0))?;
                    y.update(t, k(0), b"0")
                })
                .unwrap_or_else(|e| panic!("{p:?} {iso:?} {end}: write after: {e}"));
                db.sync_commits().unwrap();
                let mut y = db.begin(iso).unwrap();
                y.update(t, k(0), b"0").unwrap_or_else(|e| panic!("{p:?} {iso:?} {end}: plain write after: {e}"));
                y.commit().unwrap();
                db.run(Isolation::Serializable, |y| y.update(t, k(1), b"1")).unwrap();
                db.sync_commits().unwrap();
            }
        }
    }
}

#[test]
fn a_read_for_update_beside_an_open_writer_is_released_cleanly() {
    // Another transaction still running beside a committed claimant must
    // still see (and, once alone, write) the row.
    for (p, iso) in dbs().filter(|(p, _)| claims_conflict(*p)) {
        let db = open(p);
        let [t, _] = tables(&db);
        let mut y = db.begin(iso).unwrap();
        let mut x = db.begin(iso).unwrap();
        x.get_for_update(t, k(0)).unwrap();
        x.update(t, k(1), b"w").unwrap();
        x.commit().unwrap();
        db.sync_commits().unwrap();
        assert_eq!(y.get(t, k(0)).unwrap().as_deref(), Some(&b"0"[..]), "{p:?} {iso:?}");
        let z = db.run(iso, |z| z.get(t, k(0))).unwrap();
        assert_eq!(z.as_deref(), Some(&b"0"[..]), "{p:?} {iso:?}");
        y.update(t, k(0), b"y").unwrap_or_else(|e| panic!("{p:?} {iso:?}: {e}"));
        let _ = y.commit();
    }
}

#[test]
fn a_second_read_for_update_conflicts_at_once_under_the_multi_version_protocols() {
    for (p, iso) in dbs().filter(|(p, _)| claims_conflict(*p)) {
        let db = open(p);
        let [t, _] = tables(&db);
        let mut x = db.begin(iso).unwrap();
        let mut y = db.begin(iso).unwrap();
        x.get_for_update(t, k(0)).unwrap().unwrap();
        match y.get_for_update(t, k(0)) {
            Err(Error::Aborted(AbortReason::WriteConflict)) => {}
            r => panic!("{p:?} {iso:?}: the second read for update: {r:?}"),
        }
        // A plain writer conflicts too.
        let mut z = db.begin(iso).unwrap();
        match z.update(t, k(0), b"z") {
            Err(Error::Aborted(AbortReason::WriteConflict)) => {}
            r => panic!("{p:?} {iso:?}: a writer beside the claim: {r:?}"),
        }
        x.update(t, k(0), b"x").unwrap();
        x.commit().unwrap_or_else(|e| panic!("{p:?} {iso:?}: {e}"));
        assert_eq!(committed(&db, p, t, 0).as_deref(), Some(&b"x"[..]), "{p:?} {iso:?}");
    }
}

#[test]
fn pomvcc_optimistic_reads_for_update_as_plain_reads() {
    let db = open(Protocol::Pomvcc);
    let [t, _] = tables(&db);
    let opt = TxnOptions { mode: Mode::Optimistic, ..TxnOptions::new(Isolation::Serializable) };
    let mut x = db.begin_with(opt).unwrap();
    let mut y = db.begin_with(opt).unwrap();
    x.get_for_update(t, k(0)).unwrap().unwrap();
    y.get_for_update(t, k(0)).unwrap().unwrap();
    x.update(t, k(0), b"x").unwrap();
    x.commit().unwrap();
    drop(y);
}

/// The single-version protocols that wait: 1V, ordered 2PL (without a
/// declaration it locks as 1V does) and Silo's claims.
fn waits(p: Protocol) -> bool {
    matches!(p, Protocol::OneVLock | Protocol::TwoPlOrdered | Protocol::Silo)
}

#[test]
fn a_second_read_for_update_waits_under_locking_and_silo() {
    for (p, iso) in dbs().filter(|(p, _)| waits(*p)) {
        let db = open(p);
        let [t, _] = tables(&db);
        // In one thread the wait can only end in the lock timeout.
        let mut x = db.begin(iso).unwrap();
        let mut y = db.begin(iso).unwrap();
        x.get_for_update(t, k(0)).unwrap().unwrap();
        match y.get_for_update(t, k(0)) {
            Err(Error::Aborted(AbortReason::LockTimeout)) => {}
            r => panic!("{p:?} {iso:?}: the second read for update: {r:?}"),
        }
        x.abort();
        // In two: the second waits for the first to commit, then reads its
        // write and commits its own on top (no abort).
        let mut x = db.begin(iso).unwrap();
        let v = x.get_for_update(t, k(0)).unwrap().unwrap();
        std::thread::scope(|s| {
            let y = s.spawn(|| {
                let mut y = db.begin(iso).unwrap();
                let v = y.get_for_update(t, k(0)).unwrap().unwrap();
                y.update(t, k(0), [v.as_slice(), b"y"].concat()).unwrap();
                y.commit().unwrap_or_else(|e| panic!("{p:?} {iso:?}: the waiter: {e}"));
                v
            });
            std::thread::sleep(Duration::from_millis(10));
            x.update(t, k(0), [v.as_slice(), b"x"].concat()).unwrap();
            x.commit().unwrap();
            assert_eq!(y.join().unwrap(), b"0x", "{p:?} {iso:?}: the waiter read the first's write");
        });
        assert_eq!(committed(&db, p, t, 0).as_deref(), Some(&b"0xy"[..]), "{p:?} {iso:?}");
    }
}

#[test]
fn crossed_reads_for_update_abort_one_and_let_the_other_through() {
    for (p, iso) in dbs().filter(|(p, _)| waits(*p)) {
        let db =
            Database::new(Options { protocol: p, lock_timeout: Duration::from_secs(5), ..Options::default() }).unwrap();
        let [t, _] = tables(&db);
        let mut x = db.begin(iso).unwrap();
        let mut y = db.begin(iso).unwrap();
        x.get_for_update(t, k(0)).unwrap();
        y.get_for_update(t, k(1)).unwrap();
        std::thread::scope(|s| {
            let xs = s.spawn(move || {
                // Waits for y's claim or lock on 1.
                x.get_for_update(t, k(1))?;
                x.update(t, k(1), b"x")?;
                x.commit().map(|_| ())
            });
            std::thread::sleep(Duration::from_millis(20));
            let r = y.get_for_update(t, k(0));
            // The cycle is broken long before the 5-s timeout: the second
            // waiter (Silo: never waits for a waiter) or the youngest of
            // the cycle (1V: the deadlock detector) aborts.
            match r {
                Err(Error::Aborted(AbortReason::Deadlock)) => {
                    drop(y);
                    xs.join().unwrap().unwrap_or_else(|e| panic!("{p:?} {iso:?}: x: {e}"));
                }
                Ok(_) => {
                    // x was the victim.
                    let rx = xs.join().unwrap();
                    assert!(matches!(rx, Err(Error::Aborted(AbortReason::Deadlock))), "{p:?} {iso:?}: {rx:?}");
                    y.commit().unwrap();
                }
                r => panic!("{p:?} {iso:?}: {r:?}"),
            }
        });
    }
}

#[test]
fn a_savepoint_keeps_claims_and_a_rolled_back_write_gives_its_claim_back() {
    for (p, iso) in dbs().filter(|(p, _)| claims_conflict(*p)) {
        let db = open(p);
        let [t, _] = tables(&db);
        let mut x = db.begin(iso).unwrap();
        x.get_for_update(t, k(0)).unwrap();
        let sp = x.savepoint().unwrap();
        x.update(t, k(0), b"a").unwrap();
        x.get_for_update(t, k(1)).unwrap();
        x.rollback_to(&sp).unwrap();
        // Both claims kept: our view is the committed rows, others conflict.
        assert_eq!(x.get(t, k(0)).unwrap().as_deref(), Some(&b"0"[..]), "{p:?} {iso:?}");
        assert_eq!(x.get(t, k(1)).unwrap().as_deref(), Some(&b"1"[..]), "{p:?} {iso:?}");
        for n in [0, 1] {
            let mut y = db.begin(iso).unwrap();
            let r = y.update(t, k(n), b"y");
            assert!(matches!(r, Err(Error::Aborted(AbortReason::WriteConflict))), "{p:?} {iso:?}: key {n}: {r:?}");
        }
        x.update(t, k(0), b"b").unwrap();
        x.commit().unwrap_or_else(|e| panic!("{p:?} {iso:?}: {e}"));
        assert_eq!(committed(&db, p, t, 0).as_deref(), Some(&b"b"[..]), "{p:?} {iso:?}");
        assert_eq!(committed(&db, p, t, 1).as_deref(), Some(&b"1"[..]), "{p:?} {iso:?}");
        db.run(iso, |y| y.update(t, k(1), b"y")).unwrap_or_else(|e| panic!("{p:?} {iso:?}: {e}"));
    }
}

#[test]
fn a_read_only_transaction_refuses_get_for_update() {
    for p in Protocol::ALL {
        let db = open(p);
        let [t, _] = tables(&db);
        let mut x = db.begin_with(TxnOptions { read_only: true, ..TxnOptions::new(p.strongest()) }).unwrap();
        assert!(matches!(x.get_for_update(t, k(0)), Err(Error::InvalidArgument(_))), "{p:?}");
    }
}
