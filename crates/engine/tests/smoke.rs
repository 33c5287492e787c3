use multiverse::*;

fn db() -> (Database, TableId) {
    let db = Database::new(Options::default()).unwrap();
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    (db, t)
}

#[test]
fn insert_get_update_delete() {
    let (db, t) = db();
    for iso in Isolation::ALL {
        let k = Key::from(iso as u64);
        let mut x = db.begin(iso).unwrap();
        x.insert(t, k, b"a").unwrap();
        assert_eq!(x.get(t, &k).unwrap().as_deref(), Some(&b"a"[..]));
        x.update(t, &k, b"b").unwrap();
        assert_eq!(x.get(t, &k).unwrap().as_deref(), Some(&b"b"[..]));
        assert_eq!(x.insert(t, k, b"c"), Err(Error::DuplicateKey));
        x.commit().unwrap();
        let mut y = db.begin(iso).unwrap();
        assert_eq!(y.get(t, &k).unwrap().as_deref(), Some(&b"b"[..]));
        y.delete(t, &k).unwrap();
        assert_eq!(y.get(t, &k).unwrap(), None);
        assert_eq!(y.delete(t, &k), Err(Error::KeyNotFound));
        y.commit().unwrap();
        let mut z = db.begin(iso).unwrap();
        assert_eq!(z.get(t, &k).unwrap(), None);
        z.insert(t, k, b"again").unwrap();
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
    a.update(t, &Key::from(1), b"a").unwrap();
    assert_eq!(b.update(t, &Key::from(1), b"b"), Err(Error::Aborted(AbortReason::WriteConflict)));
    assert_eq!(b.get(t, &Key::from(1)), Err(Error::TransactionClosed(Some(AbortReason::WriteConflict))));
    a.commit().unwrap();
}
