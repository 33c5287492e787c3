//! Typed errors: every failure a user can cause has its own `Error` variant,
//! and whether the transaction survives it is well defined.

use multiverse::*;

fn db() -> (Database, TableId) {
    let db = Database::new(Options::default()).unwrap();
    let t = db.create_table(TableSpec::hash("t", 16)).unwrap().table();
    db.run(Isolation::Snapshot, |x| x.insert(t, Key::from(1), b"one")).unwrap();
    (db, t)
}

/// A database whose tables 0..=2 exist, to obtain handles the first one lacks
/// (handles cannot be forged outside the crate).
fn foreign_handles() -> (Database, TableId, IndexId) {
    fn sk(pk: &Key, _: &[u8]) -> Key {
        pk.clone()
    }
    let other = Database::new(Options::default()).unwrap();
    other.create_table(TableSpec::hash("a", 16)).unwrap();
    other.create_table(TableSpec::hash("b", 16)).unwrap();
    let c = other.create_table(TableSpec::hash("c", 16).secondary("s1", IndexKind::Ordered, sk)).unwrap().table();
    let s1 = other.index(c, "s1").unwrap();
    (other, c, s1)
}

/// Unknown table by name, and a handle from another database (whose table
/// number this database does not have, here: a handle of another database
/// is refused whatever its number).
#[test]
fn unknown_table_by_name_and_by_id() {
    let (db, _) = db();
    assert_eq!(db.table("nope"), Err(Error::UnknownTable("nope".into())));
    let (_other, foreign, _) = foreign_handles();
    assert!(matches!(db.index(foreign, "primary"), Err(Error::ForeignHandle(_))));
    let mut x = db.begin(Isolation::Serializable).unwrap();
    assert!(matches!(x.get(foreign, Key::from(1)), Err(Error::ForeignHandle(_))));
    assert!(matches!(x.insert(foreign, Key::from(1), b"v"), Err(Error::ForeignHandle(_))));
    assert!(matches!(x.update(foreign, Key::from(1), b"v"), Err(Error::ForeignHandle(_))));
    assert!(matches!(x.delete(foreign, Key::from(1)), Err(Error::ForeignHandle(_))));
    assert!(matches!(x.scan(db.primary(foreign), .., None, |_, _| true), Err(Error::ForeignHandle(_))));
    // Prefetch hints ignore what they cannot use: a foreign table, a
    // missing key, an ordered table.
    let t = db.table("t").unwrap();
    let o = db.create_table(TableSpec::ordered("o")).unwrap();
    x.prefetch(foreign, &[Key::from(1)]);
    x.prefetch_many(&[(t, &[Key::from(1), Key::from(99)]), (foreign, &[Key::from(1)]), (o, &[Key::from(1)]), (t, &[])]);
    // Not an abort: the transaction goes on.
    assert_eq!(x.get(db.table("t").unwrap(), Key::from(1)).unwrap().as_deref(), Some(&b"one"[..]));
    x.commit().unwrap();
    assert_eq!(db.table_names(), vec!["t".to_string(), "o".to_string()]);
}

/// Unknown index by name, and an index number the table lacks.
#[test]
fn unknown_index_by_name_and_number() {
    let (db, t) = db();
    assert!(matches!(db.index(t, "nope"), Err(Error::UnknownIndex(s)) if s.contains("nope")));
    // Table #2 exists in `db` once we create three tables; index #1 does not.
    db.create_table(TableSpec::hash("u", 16)).unwrap();
    db.create_table(TableSpec::hash("w", 16)).unwrap();
    let (_other, _, s1) = foreign_handles();
    let mut x = db.begin(Isolation::Snapshot).unwrap();
    // Another database's index is refused as such.
    assert!(matches!(x.get_by(s1, Key::from(1), |_, _| true), Err(Error::ForeignHandle(_))));
    // An index number this database's table lacks.
    let missing = IndexId::from_raw(db.table("w").unwrap(), 1);
    assert!(matches!(x.get_by(missing, Key::from(1), |_, _| true), Err(Error::UnknownIndex(_))));
    assert!(matches!(x.scan(missing, .., None, |_, _| true), Err(Error::UnknownIndex(_))));
    x.commit().unwrap();
}

/// Duplicate table names and invalid schemas are refused.
#[test]
fn invalid_schemas_are_refused() {
    fn sk(pk: &Key, _: &[u8]) -> Key {
        pk.clone()
    }
    let (db, _) = db();
    assert_eq!(db.create_table(TableSpec::hash("t", 4)), Err(Error::TableExists("t".into())));
    assert!(matches!(db.create_table(TableSpec::hash("", 4)), Err(Error::InvalidArgument(_))));
    let dup = TableSpec::ordered("d").secondary("s", IndexKind::Ordered, sk).secondary("s", IndexKind::Ordered, sk);
    assert!(matches!(db.create_table(dup), Err(Error::InvalidArgument(_))));
    let prim = TableSpec::ordered("p").secondary("primary", IndexKind::Ordered, sk);
    assert!(matches!(db.create_table(prim), Err(Error::InvalidArgument(_))));
    for prefix in [0, multiverse::KEY_MAX + 1] {
        let e = db.create_table(TableSpec::ordered_grouped("g", prefix)).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains(&format!("prefix of 1 to {} bytes", multiverse::KEY_MAX))),
            "{e}"
        );
        let sec = TableSpec::hash("g", 4).secondary("s", IndexKind::OrderedGrouped { prefix }, sk);
        assert!(matches!(db.create_table(sec), Err(Error::InvalidArgument(_))));
    }
    let mut many = TableSpec::ordered("m");
    for i in 0..16 {
        many = many.secondary(&format!("s{i}"), IndexKind::Hash { capacity: 4 }, sk);
    }
    assert!(matches!(db.create_table(many), Err(Error::InvalidArgument(_))));
    // The failed creations used no name: they can be created properly now.
    db.create_table(TableSpec::ordered("d")).unwrap();
}

/// Duplicate key on insert; the transaction stays usable. The same on an
/// ordered primary index, where the refused insert leaves nothing behind.
#[test]
fn duplicate_key_keeps_transaction_open() {
    let odb = Database::new(Options::default()).unwrap();
    for spec in [TableSpec::ordered("o"), TableSpec::ordered_grouped("g", 4)] {
        let o = odb.create_table(spec).unwrap();
        let before = odb.stats().versions_alive;
        odb.run(Isolation::Snapshot, |x| x.insert(o, Key::from(1), b"one")).unwrap();
        for iso in Isolation::ALL {
            let mut x = odb.begin(iso).unwrap();
            assert_eq!(x.insert(o, Key::from(1), b"again"), Err(Error::DuplicateKey));
            x.insert(o, Key::from(100 + iso as u64), b"ok").unwrap();
            x.commit().unwrap();
        }
        let mut rows = vec![];
        odb.run(Isolation::Snapshot, |x| {
            rows.clear();
            x.scan(odb.primary(o), .., None, |k, v| {
                rows.push((k.to_u64().unwrap(), v.to_vec()));
                true
            })
        })
        .unwrap();
        assert_eq!(rows.len(), 1 + Isolation::ALL.len());
        assert_eq!(rows[0], (1, b"one".to_vec()), "the refused inserts left no version");
        assert_eq!(odb.stats().versions_alive, before + rows.len() as u64, "{rows:?}");
    }
    let (db, t) = db();
    for iso in Isolation::ALL {
        let mut x = db.begin(iso).unwrap();
        assert_eq!(x.insert(t, Key::from(1), b"again"), Err(Error::DuplicateKey));
        assert_eq!(x.abort_reason(), None);
        x.insert(t, Key::from(100 + iso as u64), b"ok").unwrap();
        x.commit().unwrap();
    }
    // Inside `run`, a non-transient error is returned at once and rolled back.
    let mut calls = 0;
    let r = db.run(Isolation::Serializable, |x| {
        calls += 1;
        x.insert(t, Key::from(2), b"two")?;
        x.insert(t, Key::from(1), b"dup")
    });
    assert_eq!(r, Err(Error::DuplicateKey));
    assert_eq!(calls, 1, "not retried");
    let mut y = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(y.get(t, Key::from(2)).unwrap(), None, "rolled back");
}

/// Update, update_with and delete of a missing key: KeyNotFound, not an abort.
#[test]
fn missing_key_on_update_and_delete() {
    let (db, t) = db();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(x.update(t, Key::from(7), b"v"), Err(Error::KeyNotFound));
    assert_eq!(x.update_with(t, Key::from(7), |_, n| n.push(1)), Err(Error::KeyNotFound));
    assert_eq!(x.delete(t, Key::from(7)), Err(Error::KeyNotFound));
    x.delete(t, Key::from(1)).unwrap();
    assert_eq!(x.delete(t, Key::from(1)), Err(Error::KeyNotFound), "deleted by me");
    assert_eq!(x.update(t, Key::from(1), b"v"), Err(Error::KeyNotFound));
    x.commit().unwrap();
}

/// Values beyond `max_value_size`, on insert, update, put and update_with.
#[test]
fn value_too_large() {
    let db = Database::new(Options { max_value_size: 16, ..Options::default() }).unwrap();
    let t = db.create_table(TableSpec::hash("t", 16)).unwrap();
    let big = [7u8; 17];
    let mut x = db.begin(Isolation::Snapshot).unwrap();
    x.insert(t, Key::from(1), [0; 16]).unwrap();
    let e = Error::ValueTooLarge { len: 17, max: 16 };
    assert_eq!(x.insert(t, Key::from(2), big), Err(e.clone()));
    assert_eq!(x.update(t, Key::from(1), big), Err(e.clone()));
    assert_eq!(x.put(t, Key::from(3), big), Err(e.clone()));
    assert_eq!(x.update_with(t, Key::from(1), |_, n| n.extend_from_slice(&big)), Err(e));
    assert_eq!(x.get(t, Key::from(1)).unwrap(), Some(vec![0; 16]), "nothing changed");
    x.commit().unwrap();
    assert!(matches!(
        Database::new(Options { max_value_size: u32::MAX as usize + 1, ..Options::default() }).err(),
        Some(Error::InvalidArgument(_))
    ));
}

/// Keys beyond KEY_MAX bytes.
#[test]
fn key_too_large() {
    assert_eq!(Key::from_bytes(&[1; KEY_MAX + 1]).err(), Some(Error::KeyTooLarge { len: KEY_MAX + 1, max: KEY_MAX }));
    assert!(Key::from_bytes(&[1; KEY_MAX]).is_ok());
    // Past the inline size is fine; past the maximum is not.
    assert_eq!(Key::builder().u64(1).u64(2).u64(3).u64(4).u8(5).build().map(|k| k.len()), Ok(33));
    let full = Key::builder().bytes(&[2; KEY_MAX - 4]).u32(7);
    assert_eq!(full.clone().build().map(|k| k.len()), Ok(KEY_MAX));
    assert_eq!(full.u8(5).build().err(), Some(Error::KeyTooLarge { len: KEY_MAX + 1, max: KEY_MAX }));
}

/// Every operation after an abort reports TransactionClosed with the reason.
#[test]
fn operations_after_abort_report_transaction_closed() {
    let (db, t) = db();
    let mut a = db.begin(Isolation::Snapshot).unwrap();
    let mut b = db.begin(Isolation::Snapshot).unwrap();
    a.update(t, Key::from(1), b"a").unwrap();
    assert_eq!(b.update(t, Key::from(1), b"b"), Err(Error::Aborted(AbortReason::WriteConflict)));
    let closed = Err(Error::TransactionClosed(Some(AbortReason::WriteConflict)));
    assert_eq!(b.get(t, Key::from(1)).map(|_| ()), closed);
    assert_eq!(b.insert(t, Key::from(5), b"x"), closed);
    assert_eq!(b.update(t, Key::from(1), b"x"), closed);
    assert_eq!(b.update_with(t, Key::from(1), |_, _| ()), closed);
    assert_eq!(b.delete(t, Key::from(1)), closed);
    assert_eq!(b.put(t, Key::from(1), b"x"), closed);
    assert_eq!(b.get_by(db.primary(t), Key::from(1), |_, _| true), closed);
    assert_eq!(b.scan(db.primary(t), .., None, |_, _| true), closed);
    assert_eq!(b.commit().map(|_| ()), closed);
    a.commit().unwrap();
    let e = Error::TransactionClosed(Some(AbortReason::WriteConflict));
    assert_eq!(e.abort_reason(), Some(AbortReason::WriteConflict));
    assert!(!e.is_transient(), "retrying the closed transaction itself cannot help");
    assert!(Error::Aborted(AbortReason::WriteConflict).is_transient());
    assert!(!Error::Aborted(AbortReason::User).is_transient());
    assert!(!e.to_string().is_empty());
}

/// Writes in a read-only transaction are refused.
#[test]
fn writes_in_read_only_transaction_are_refused() {
    let (db, t) = db();
    let mut x = db.begin_with(TxnOptions { read_only: true, ..TxnOptions::new(Isolation::Serializable) }).unwrap();
    assert!(matches!(x.insert(t, Key::from(2), b"v"), Err(Error::InvalidArgument(_))));
    assert!(matches!(x.update(t, Key::from(1), b"v"), Err(Error::InvalidArgument(_))));
    assert!(matches!(x.delete(t, Key::from(1)), Err(Error::InvalidArgument(_))));
    assert_eq!(x.get(t, Key::from(1)).unwrap().as_deref(), Some(&b"one"[..]));
    x.commit().unwrap();
}

/// Every protocol opens; a level the protocol lacks is refused at begin, and
/// unknown protocol and level names are refused when parsed.
#[test]
fn every_protocol_opens_and_bad_names_are_refused() {
    for p in Protocol::ALL {
        let r = Database::new(Options { protocol: p, ..Options::default() });
        assert!(r.is_ok(), "{p}");
    }
    // POMVCC offers Table VII's levels: read committed, snapshot, serializable.
    let po = Database::new(Options { protocol: Protocol::Pomvcc, ..Options::default() }).unwrap();
    assert!(matches!(po.begin(Isolation::RepeatableRead).err(), Some(Error::InvalidIsolation { .. })));
    assert_eq!("silo".parse::<Protocol>(), Ok(Protocol::Silo));
    assert!(matches!("nope".parse::<Protocol>(), Err(Error::Parse(_))));
    assert!(matches!("nope".parse::<Isolation>(), Err(Error::Parse(_))));
    assert_eq!("si".parse::<Isolation>(), Ok(Isolation::Snapshot));
}

/// More open transactions than `max_transactions` are refused; a finished
/// transaction frees its slot. Zero or too many slots are invalid options.
#[test]
fn too_many_transactions() {
    let db = Database::new(Options { max_transactions: 2, ..Options::default() }).unwrap();
    let a = db.begin(Isolation::Snapshot).unwrap();
    let b = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(db.begin(Isolation::Snapshot).err(), Some(Error::TooManyTransactions(2)));
    assert_eq!(db.stats().open_transactions, 2);
    a.commit().unwrap();
    let c = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(db.begin(Isolation::Snapshot).err(), Some(Error::TooManyTransactions(2)));
    drop(b);
    drop(c);
    assert_eq!(db.stats().open_transactions, 0);
    // `run` does not retry it (it is not an abort).
    let _hold = (db.begin(Isolation::Snapshot).unwrap(), db.begin(Isolation::Snapshot).unwrap());
    assert_eq!(db.run(Isolation::Snapshot, |_| Ok(())).err(), Some(Error::TooManyTransactions(2)));
    for n in [0, 4097] {
        assert!(matches!(
            Database::new(Options { max_transactions: n, ..Options::default() }).err(),
            Some(Error::InvalidArgument(_))
        ));
    }
}

/// `run_with` retries transient aborts up to `max_attempts` times and then
/// returns the last abort; a success on a later attempt is returned as such.
#[test]
fn run_with_retries_transient_aborts_up_to_the_limit() {
    let (db, t) = db();
    let policy = RetryPolicy {
        max_attempts: 3,
        initial_backoff: std::time::Duration::from_micros(1),
        max_backoff: std::time::Duration::from_micros(10),
    };
    let mut holder = db.begin(Isolation::Snapshot).unwrap();
    holder.update(t, Key::from(1), b"held").unwrap();
    let mut calls = 0;
    let r = db.run_with(TxnOptions::new(Isolation::Snapshot), policy, |x| {
        calls += 1;
        x.update(t, Key::from(1), b"mine")
    });
    assert_eq!(r, Err(Error::Aborted(AbortReason::WriteConflict)));
    assert_eq!(calls, 3);
    // Release the row on the second attempt: the third one succeeds.
    let mut holder = Some(holder);
    let mut calls = 0;
    let r = db.run_with(TxnOptions::new(Isolation::Snapshot), policy, |x| {
        calls += 1;
        if calls == 2 {
            holder.take().unwrap().abort();
        }
        x.update(t, Key::from(1), b"mine")
    });
    assert_eq!(r, Ok(()));
    assert_eq!(calls, 2, "the second attempt began before the holder aborted and still saw the row updatable");
    assert_eq!(db.stats().aborts[AbortReason::WriteConflict], 4);
}

/// A database holds at most MAX_TABLES tables.
#[test]
fn too_many_tables() {
    let db = Database::new(Options::default()).unwrap();
    for i in 0..MAX_TABLES {
        db.create_table(TableSpec::hash(&format!("t{i}"), 1)).unwrap();
    }
    assert!(matches!(db.create_table(TableSpec::hash("one-more", 1)), Err(Error::InvalidArgument(_))));
    assert_eq!(db.table_names().len(), MAX_TABLES);
}
