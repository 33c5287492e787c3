//! The embedding API's argument rules, under every protocol: keys from
//! ordinary types (one rule, owned or borrowed), values as any byte-like
//! type, ranges on a table handle, and handles that cannot cross databases.

use multiverse::{Database, Error, IndexKind, Isolation, Key, Options, Protocol, TableId, TableSpec};

fn db(p: Protocol) -> Database {
    Database::new(Options { protocol: p, ..Options::default() }).unwrap()
}

/// String keys and values go in as `&str`/`String`, come back in byte
/// order, and every key form finds the same row.
#[test]
fn string_keys_round_trip_in_order() {
    for p in Protocol::ALL {
        let db = db(p);
        let t = db.create_table(TableSpec::ordered("fruit")).unwrap();
        let words = ["pear", "apple", "fig", "banana", "apples", ""];
        db.run(Isolation::Serializable, |x| {
            for w in words {
                x.insert(t, w, w.to_uppercase())?;
            }
            Ok(())
        })
        .unwrap();
        // POMVCC shows a commit to the next transaction only once asked to.
        db.sync_commits().unwrap();
        let mut x = db.begin(Isolation::Serializable).unwrap();
        let all: Vec<(Key, Vec<u8>)> = x.range(t, ..).unwrap().map(|r| r.unwrap()).collect();
        let mut want: Vec<&str> = words.to_vec();
        want.sort();
        let got: Vec<&[u8]> = all.iter().map(|(k, _)| k.as_bytes()).collect();
        assert_eq!(got, want.iter().map(|w| w.as_bytes()).collect::<Vec<_>>(), "{p:?}");
        for (k, v) in &all {
            assert_eq!(v, &k.as_bytes().to_ascii_uppercase(), "{p:?}");
        }
        // Every form of the key "fig" reaches the same row.
        let fig = Key::from_bytes(b"fig").unwrap();
        let want = Some(b"FIG".to_vec());
        assert_eq!(x.get(t, "fig").unwrap(), want, "{p:?}");
        assert_eq!(x.get(t, String::from("fig")).unwrap(), want);
        assert_eq!(x.get(t, String::from("fig")).unwrap(), want);
        assert_eq!(x.get(t, b"fig").unwrap(), want);
        assert_eq!(x.get(t, &b"fig"[..]).unwrap(), want);
        assert_eq!(x.get(t, b"fig".to_vec()).unwrap(), want);
        assert_eq!(x.get(t, &fig).unwrap(), want);
        assert_eq!(x.get(t, fig.clone()).unwrap(), want);
        // Ranges of strings, and a prefix.
        let keys = |r: multiverse::Range| {
            r.map(|kv| String::from_utf8(kv.unwrap().0.as_bytes().to_vec()).unwrap()).collect::<Vec<_>>()
        };
        assert_eq!(keys(x.range(t, "apple".."fig").unwrap()), ["apple", "apples", "banana"], "{p:?}");
        assert_eq!(keys(x.range(t, "b"..="fig").unwrap()), ["banana", "fig"], "{p:?}");
        assert_eq!(keys(x.prefix(t, "apple").unwrap()), ["apple", "apples"], "{p:?}");
        let back: Vec<Key> = x.range(t, "fig"..).unwrap().rev().map(|kv| kv.unwrap().0).collect();
        assert_eq!(back, [Key::try_from("pear").unwrap(), Key::try_from("fig").unwrap()], "{p:?}");
        x.commit().unwrap();
    }
}

/// Integer keys (`u64`, literals included) sort as numbers; values may be
/// arrays, vectors, strings or slices; `update`, `put`, `delete`,
/// `update_with` and `modify` take the same key forms.
#[test]
fn integer_keys_and_every_value_form() {
    for p in Protocol::ALL {
        let db = db(p);
        let t = db.create_table(TableSpec::ordered("n")).unwrap();
        db.run(Isolation::Serializable, |x| {
            for k in [300u64, 2, 70_000, 1] {
                x.insert(t, k, k.to_le_bytes())?;
            }
            Ok(())
        })
        .unwrap();
        db.sync_commits().unwrap();
        db.run(Isolation::Serializable, |x| {
            x.update(t, 2, "two")?;
            x.put(t, 5, vec![5u8])?;
            x.put(t, Key::from(300), &b"three hundred"[..])?;
            x.update_with(t, Key::from(1), |old, new| {
                new.extend_from_slice(old);
                new.push(b'!')
            })?;
            x.modify(t, 70_000u64, |v| v[0] = 0xEE)?;
            x.delete(t, 5)
        })
        .unwrap();
        db.sync_commits().unwrap();
        let mut x = db.begin(Isolation::Serializable).unwrap();
        let keys: Vec<u64> = x.range(t, 1..=70_000).unwrap().map(|r| r.unwrap().0.to_u64().unwrap()).collect();
        assert_eq!(keys, [1, 2, 300, 70_000], "{p:?}");
        assert_eq!(x.get(t, 2).unwrap().as_deref(), Some(&b"two"[..]));
        assert_eq!(x.get(t, 300).unwrap().as_deref(), Some(&b"three hundred"[..]));
        assert_eq!(x.get(t, 1).unwrap().unwrap()[8], b'!');
        assert_eq!(x.get(t, 70_000).unwrap().unwrap()[0], 0xEE);
        assert_eq!(x.get(t, 5).unwrap(), None);
        x.commit().unwrap_or_else(|e| panic!("{p:?}: {e}"));
    }
}

/// An oversize key is a typed error and leaves the transaction open.
#[test]
fn an_oversize_key_is_refused_and_the_transaction_goes_on() {
    let db = db(Protocol::MvOcc);
    let t = db.create_table(TableSpec::ordered("t")).unwrap();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    let long = "k".repeat(multiverse::KEY_MAX + 1);
    assert!(matches!(x.insert(t, long.as_str(), "v"), Err(Error::KeyTooLarge { .. })));
    assert!(matches!(x.get(t, &long), Err(Error::KeyTooLarge { .. })));
    assert!(matches!(x.range(t, long.as_str()..), Err(Error::KeyTooLarge { .. })));
    x.insert(t, "short", "v").unwrap();
    x.commit().unwrap();
}

/// A table or index handle of one database, given to another that has a
/// table of the same number (and name), is refused under every protocol:
/// point operations, scans, ranges, and secondary-index lookups. Nothing is
/// read from or written to the other database's table.
#[test]
fn handles_cannot_cross_databases() {
    for p in Protocol::ALL {
        let (a, b) = (db(p), db(p));
        let spec =
            || TableSpec::ordered("t").secondary("by_value", IndexKind::Ordered, |_, v| Key::from_bytes(v).unwrap());
        let ta = a.create_table(spec()).unwrap();
        let tb = b.create_table(spec()).unwrap();
        assert_eq!(ta.raw(), tb.raw());
        assert_ne!(ta, tb);
        b.run(Isolation::Serializable, |x| x.insert(tb, 1, "b's row")).unwrap();
        b.sync_commits().unwrap();
        let foreign = |r: Result<(), Error>| matches!(r, Err(Error::ForeignHandle(_)));
        let mut x = a.begin(Isolation::Serializable).unwrap();
        assert!(foreign(x.get(tb, 1).map(drop)), "{p:?}");
        assert!(foreign(x.insert(tb, 2, "x")), "{p:?}");
        assert!(foreign(x.update(tb, 1, "x")), "{p:?}");
        assert!(foreign(x.delete(tb, 1)), "{p:?}");
        assert!(foreign(x.range(tb, ..).map(drop)), "{p:?}");
        assert!(foreign(x.scan(tb, .., None, |_, _| true)), "{p:?}");
        let ix = b.index(tb, "by_value").unwrap();
        assert!(foreign(x.get_by(ix, "b's row", |_, _| true)), "{p:?}");
        // A handle of no database (`TableId::from_raw`) is refused too.
        assert!(foreign(x.get(TableId::from_raw(0), 1).map(drop)), "{p:?}");
        // The database's own handle still works, and the transaction commits.
        x.insert(ta, 1, "a's row").unwrap();
        x.commit().unwrap();
        a.sync_commits().unwrap();
        assert_eq!(b.run(Isolation::Serializable, |x| x.get(tb, 1)).unwrap().as_deref(), Some(&b"b's row"[..]));
        assert_eq!(a.run(Isolation::Serializable, |x| x.get(ta, 1)).unwrap().as_deref(), Some(&b"a's row"[..]));
        // Database-level calls on a foreign handle fail as well.
        assert!(matches!(a.index(tb, "by_value"), Err(Error::ForeignHandle(_))), "{p:?}");
    }
}
