use multiverse::*;

fn db() -> (Database, TableId) {
    let db = Database::new(Options::default()).unwrap();
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap().table();
    (db, t)
}

#[test]
fn insert_get_update_delete() {
    let (db, t) = db();
    for iso in Isolation::ALL {
        let k = Key::from(iso as u64);
        let mut x = db.begin(iso).unwrap();
        x.insert(t, k.clone(), b"a").unwrap();
        assert_eq!(x.get(t, &k).unwrap().as_deref(), Some(&b"a"[..]));
        x.update(t, &k, b"b").unwrap();
        assert_eq!(x.get(t, &k).unwrap().as_deref(), Some(&b"b"[..]));
        assert_eq!(x.insert(t, k.clone(), b"c"), Err(Error::DuplicateKey));
        x.commit().unwrap();
        let mut y = db.begin(iso).unwrap();
        assert_eq!(y.get(t, &k).unwrap().as_deref(), Some(&b"b"[..]));
        y.delete(t, &k).unwrap();
        assert_eq!(y.get(t, &k).unwrap(), None);
        assert_eq!(y.delete(t, &k), Err(Error::KeyNotFound));
        y.commit().unwrap();
        let mut z = db.begin(iso).unwrap();
        assert_eq!(z.get(t, &k).unwrap(), None);
        z.insert(t, k.clone(), b"again").unwrap();
        z.commit().unwrap();
    }
    assert_eq!(db.stats().committed, 12);
}

#[test]
fn first_writer_wins() {
    let (db, t) = db();
    db.run(Isolation::Snapshot, |x| x.insert(t, Key::from(1), b"0")).unwrap();
    let mut a = db.begin(Isolation::Snapshot).unwrap();
    let mut b = db.begin(Isolation::Snapshot).unwrap();
    a.update(t, Key::from(1), b"a").unwrap();
    assert_eq!(b.update(t, Key::from(1), b"b"), Err(Error::Aborted(AbortReason::WriteConflict)));
    assert_eq!(b.get(t, Key::from(1)), Err(Error::TransactionClosed(Some(AbortReason::WriteConflict))));
    a.commit().unwrap();
}

#[test]
fn modify_edits_a_copy_in_place_and_conflicts_like_an_update() {
    let (db, t) = db();
    let k = Key::from(7u64);
    db.run(Isolation::Snapshot, |x| x.insert(t, k.clone(), b"abcd")).unwrap();
    for iso in Isolation::ALL {
        let mut x = db.begin(iso).unwrap();
        x.modify(t, &k, |v| {
            assert_eq!(v.len(), 4);
            v[0] = v[0].wrapping_add(1);
        })
        .unwrap();
        // Its own write is visible to it, and modified again on top.
        x.modify(t, &k, |v| v[3] = b'!').unwrap();
        assert_eq!(x.get(t, &k).unwrap().as_deref(), Some(&[v0(iso), b'b', b'c', b'!'][..]));
        x.commit().unwrap();
    }
    assert_eq!(db.run(Isolation::Snapshot, |x| x.get(t, &k)).unwrap().as_deref(), Some(&b"ebc!"[..]));
    let missing = Key::from(8u64);
    let mut x = db.begin(Isolation::Snapshot).unwrap();
    let mut called = false;
    assert_eq!(x.modify(t, &missing, |_| called = true), Err(Error::KeyNotFound));
    assert!(!called, "no row, no call");
    drop(x);
    // First writer wins: the second modifier of the same row aborts, and
    // its unpublished copy leaves no trace.
    let mut a = db.begin(Isolation::Snapshot).unwrap();
    let mut b = db.begin(Isolation::Snapshot).unwrap();
    a.modify(t, &k, |v| v[1] = b'A').unwrap();
    let e = b.modify(t, &k, |v| v[1] = b'B').unwrap_err();
    assert_eq!(e.abort_reason(), Some(AbortReason::WriteConflict), "{e:?}");
    a.commit().unwrap();
    assert_eq!(db.run(Isolation::Snapshot, |x| x.get(t, &k)).unwrap().as_deref(), Some(&b"eAc!"[..]));
}

/// The first byte after one modify per level, levels in the order of `Isolation::ALL`.
fn v0(iso: Isolation) -> u8 {
    b'a' + 1 + Isolation::ALL.iter().position(|&l| l == iso).unwrap() as u8
}

/// A transaction may move between threads but is used by one at a time;
/// the database is shared. Checked at compile time, and once at run time
/// by committing a transaction on another thread than the one that began it.
#[test]
fn a_transaction_is_send_and_the_database_sync() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Transaction<'static>>();
    sync::<Database>();
    for p in Protocol::ALL {
        let db = Database::new(Options { protocol: p, ..Options::default() }).unwrap();
        let t = db.create_table(TableSpec::hash("t", 16)).unwrap();
        let mut x = db.begin(p.strongest()).unwrap();
        x.insert(t, Key::from(1u64), b"v").unwrap();
        std::thread::scope(|s| s.spawn(move || x.commit().unwrap()).join().unwrap());
        db.sync_commits().unwrap(); // POMVCC shows a commit at its next tick
        assert_eq!(db.run(p.strongest(), |x| x.get(t, Key::from(1u64))).unwrap(), Some(b"v".to_vec()), "{p}");
    }
}
