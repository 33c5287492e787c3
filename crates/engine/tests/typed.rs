//! Typed keys and values (`multiverse::typed`): the key encoding sorts as
//! the values do and round-trips, damaged bytes give `Error::Decode` and
//! never a panic, and typed tables work under every protocol.

use multiverse::typed::{AsValue, TypedKey, Value};
use multiverse::{
    AccessSet, Database, Error, IndexKind, Isolation, Key, Options, Protocol, TableDefinition, TxnOptions,
};
use proptest::prelude::*;
use std::fmt::Debug;

fn enc<K: TypedKey>(k: &K) -> Vec<u8> {
    let mut v = Vec::new();
    k.encode_key(&mut v);
    v
}

fn enc_value<V: Value>(v: &V) -> Vec<u8> {
    let mut out = Vec::new();
    v.encode_value(&mut out).unwrap();
    out
}

/// Strings over a small alphabet, so that ties, shared prefixes and
/// prefixes of each other are common: NUL, U+0001, 'a', U+00FF (bytes
/// C3 BF) and the last code point (F4 8F BF BF).
fn string() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!['\0', '\u{1}', 'a', '\u{FF}', '\u{10FFFF}']), 0..5)
        .prop_map(|c| c.into_iter().collect())
}

/// Byte strings rich in 0x00 and 0xFF.
fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop_oneof![Just(0u8), Just(0xFF), Just(1), Just(0xFE), any::<u8>()], 0..5)
}

/// Integers near zero (ties, sign changes) and anywhere.
fn int64() -> impl Strategy<Value = i64> {
    prop_oneof![-3i64..3, Just(i64::MIN), Just(i64::MAX), any::<i64>()]
}

/// The encodings of `a` and `b` compare as `a` and `b` do, and each
/// decodes back to itself.
fn check_order<K: TypedKey + Ord + Debug>(a: &K, b: &K) -> Result<(), TestCaseError> {
    let (ea, eb) = (enc(a), enc(b));
    prop_assert_eq!(ea.cmp(&eb), a.cmp(b), "{:?} {:?}: {:?} {:?}", a, b, ea, eb);
    prop_assert_eq!(&K::decode_key(&ea).unwrap(), a);
    prop_assert_eq!(&K::decode_key(&eb).unwrap(), b);
    Ok(())
}

/// Decoding `bytes` does not panic, and what decodes encodes back to the
/// same bytes (the encoding is canonical).
fn check_decode<K: TypedKey + Debug>(bytes: &[u8]) -> Result<(), TestCaseError> {
    match K::decode_key(bytes) {
        Ok(k) => prop_assert_eq!(enc(&k), bytes, "{:?}", k),
        Err(e) => prop_assert!(matches!(e, Error::Decode { .. }), "{:?}", e),
    }
    Ok(())
}

/// Damaged forms of `bytes`: one byte changed, cut short, one byte added.
fn damaged(bytes: &[u8], at: prop::sample::Index, b: u8) -> Vec<Vec<u8>> {
    let mut out = vec![];
    if !bytes.is_empty() {
        let i = at.index(bytes.len());
        let mut x = bytes.to_vec();
        x[i] = b;
        out.push(x);
        out.push(bytes[..i].to_vec());
    }
    let mut x = bytes.to_vec();
    x.insert(at.index(bytes.len() + 1), b);
    out.push(x);
    out
}

type Mixed3 = (i64, String, u32);
type Mixed3b = (Vec<u8>, i8, bool);
type Mixed6 = (u16, i128, Vec<u8>, bool, String, i32);
type Flat = (Vec<u8>, String, String, i128, Vec<u8>, bool);

fn mixed3() -> impl Strategy<Value = Mixed3> {
    (int64(), string(), prop_oneof![0u32..3, any::<u32>()])
}
fn mixed3b() -> impl Strategy<Value = Mixed3b> {
    (bytes(), any::<i8>(), any::<bool>())
}
fn mixed6() -> impl Strategy<Value = Mixed6> {
    (0u16..3, prop_oneof![-2i128..2, any::<i128>()], bytes(), any::<bool>(), string(), -2i32..2)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn key_encoding_sorts_as_the_values(
        a in mixed3(), b in mixed3(),
        c in mixed3b(), d in mixed3b(),
        e in mixed6(), f in mixed6(),
        g in (string(), string()), h in (string(), string()),
        i in (bytes(),), j in (bytes(),),
    ) {
        check_order(&a, &b)?;
        check_order(&c, &d)?;
        check_order(&e, &f)?;
        check_order(&g, &h)?;
        check_order(&i, &j)?;
        check_order(&a.0, &b.0)?;
        check_order(&(a.1.clone(), a.0), &(b.1.clone(), b.0))?;
        check_order(&(c.0.clone(), ()), &(d.0.clone(), ()))?;
        check_order(&(a.2 as u8, a.2 as u64, a.2 as u128, a.0 as i16, [a.2 as u8; 3]),
                    &(b.2 as u8, b.2 as u64, b.2 as u128, b.0 as i16, [b.2 as u8; 3]))?;
    }

    #[test]
    fn damaged_keys_give_errors_not_panics(
        a in mixed6(), at in any::<prop::sample::Index>(), x in any::<u8>(),
        raw in prop::collection::vec(prop_oneof![Just(0u8), Just(0xFF), Just(1), any::<u8>()], 0..40),
    ) {
        for bad in damaged(&enc(&a), at, x).iter().chain([&raw]) {
            check_decode::<Mixed6>(bad)?;
            check_decode::<Mixed3>(bad)?;
            check_decode::<Mixed3b>(bad)?;
            check_decode::<(String,)>(bad)?;
            check_decode::<Vec<u8>>(bad)?;
            check_decode::<(bool, u64)>(bad)?;
        }
    }

    #[test]
    fn values_round_trip_and_damaged_values_give_errors(
        a in mixed6(), b in mixed3b(), s in string(), at in any::<prop::sample::Index>(), x in any::<u8>(),
    ) {
        let v = (a.clone(), b.clone());
        let flat = (a.2.clone(), s.clone(), a.4.clone(), a.1, b.0.clone(), b.2);
        prop_assert_eq!(<(Mixed6, Mixed3b)>::decode_value(&enc_value(&v)).unwrap(), v.clone());
        prop_assert_eq!(Flat::decode_value(&enc_value(&flat)).unwrap(), flat.clone());
        prop_assert_eq!(String::decode_value(&enc_value(&s)).unwrap(), s.clone());
        // Borrowed forms encode as the owned value.
        let mut borrowed = Vec::new();
        AsValue::<Flat>::encode_value(
            &(&a.2[..], s.as_str(), &a.4, a.1, &b.0, b.2), &mut borrowed).unwrap();
        prop_assert_eq!(borrowed, enc_value(&flat));
        for bad in damaged(&enc_value(&flat), at, x) {
            if let Err(e) = Flat::decode_value(&bad) {
                prop_assert!(matches!(e, Error::Decode { .. }), "{:?}", e);
            }
            let _ = <(Mixed6, Mixed3b)>::decode_value(&bad);
        }
    }
}

/// The examples of the issue, by hand: negatives before positives, a
/// string before its extensions, NUL inside a part.
#[test]
fn tuple_keys_sort_as_tuples() {
    let mut keys =
        vec![(1u32, 2u32, 7i64), (1, 2, -5), (1, 3, -9), (0, 9, i64::MAX), (1, 2, 0), (1, 2, i64::MIN), (2, 0, -1)];
    let mut by_bytes = keys.clone();
    by_bytes.sort_by_key(enc);
    keys.sort();
    assert_eq!(by_bytes, keys);

    let s = |a: &str, n: u8| (a.to_string(), n);
    let mut keys = vec![s("ab", 0), s("a", 9), s("a\0", 0), s("a\0\0", 1), s("", 5), s("a\u{FF}", 0), s("a", 1)];
    let mut by_bytes = keys.clone();
    by_bytes.sort_by_key(enc);
    keys.sort();
    assert_eq!(by_bytes, keys);
}

/// A database of protocol `p` with an ordered table of tuple keys and a
/// hash table of string keys.
const ORDERS: TableDefinition<(u32, u32, i64), (u64, String)> = TableDefinition::new("orders");
const NAMES: TableDefinition<String, Vec<u8>> = TableDefinition::new("names");

/// Every protocol: inserts, reads, updates, puts, deletes and scans
/// through typed tables, and an ordered range over `(warehouse, district,
/// number)` keys that comes back in tuple order.
#[test]
fn typed_tables_under_every_protocol() {
    for p in Protocol::ALL {
        let db = Database::new(Options { protocol: p, ..Options::default() }).unwrap();
        let iso = p.strongest();
        let orders = ORDERS.create(&db, IndexKind::Ordered).unwrap();
        let names = NAMES.create(&db, IndexKind::Hash { capacity: 64 }).unwrap();
        let numbers = [7i64, -5, 0, i64::MIN, 3, -1, i64::MAX];
        db.run(iso, |t| {
            for (i, &n) in numbers.iter().enumerate() {
                orders.insert(t, (1, 2, n), (i as u64, format!("o{n}")))?;
                orders.insert(t, (1, 3, n), (i as u64, "other district"))?;
            }
            orders.insert(t, (0, 2, 1), (0, ""))?;
            names.insert(t, "ann", b"\0\xFF")?;
            names.insert(t, "a\0b", vec![1])
        })
        .unwrap();
        db.sync_commits().unwrap(); // POMVCC shows a commit at its next tick

        let mut t = db.begin(iso).unwrap();
        assert_eq!(orders.get(&mut t, (1, 2, -5)).unwrap(), Some((1, "o-5".to_string())), "{p}");
        assert_eq!(orders.get(&mut t, (1, 2, 4)).unwrap(), None, "{p}");
        assert_eq!(names.get(&mut t, "ann").unwrap(), Some(vec![0, 0xFF]), "{p}");
        assert_eq!(names.get(&mut t, "a\0b").unwrap(), Some(vec![1]), "{p}");
        assert_eq!(names.get(&mut t, "a").unwrap(), None, "{p}");
        // The range of district (1, 2), bounds included, in tuple order.
        let mut seen = vec![];
        orders
            .range(&mut t, (1u32, 2u32, i64::MIN)..=(1, 2, i64::MAX), |(w, d, n), (_, s)| {
                assert_eq!((w, d, s), (1, 2, format!("o{n}")));
                seen.push(n);
                true
            })
            .unwrap();
        let mut want = numbers.to_vec();
        want.sort();
        assert_eq!(seen, want, "{p}");
        // The same district through its prefix; a range that stops early.
        let mut by_prefix = vec![];
        orders
            .prefix(&mut t, (1u32, 2u32), |k, _| {
                by_prefix.push(k.2);
                true
            })
            .unwrap();
        assert_eq!(by_prefix, want, "{p}");
        let mut first = vec![];
        orders
            .range(&mut t, (1u32, 2u32, -5i64)..(1, 3, 0), |k, _| {
                first.push(k);
                first.len() < 3
            })
            .unwrap();
        assert_eq!(first, [(1, 2, -5), (1, 2, -1), (1, 2, 0)], "{p}");
        let mut all = 0;
        names
            .all(&mut t, |_, _| {
                all += 1;
                true
            })
            .unwrap();
        assert_eq!(all, 2, "{p}");
        // The iterator forms: forward, backward, under a prefix, stopped early.
        let fwd: Vec<i64> = orders
            .iter(&mut t, (1u32, 2u32, i64::MIN)..=(1, 2, i64::MAX))
            .unwrap()
            .map(|r| {
                r.map(|(k, (_, s))| {
                    assert_eq!(s, format!("o{}", k.2));
                    k.2
                })
            })
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(fwd, want, "{p}");
        let back: Vec<i64> = orders
            .iter_prefix(&mut t, (1u32, 2u32))
            .unwrap()
            .rev()
            .map(|r| r.map(|(k, _)| k.2))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back, want.iter().rev().copied().collect::<Vec<_>>(), "{p}");
        let first: Vec<_> = orders.iter(&mut t, (1u32, 2u32, -5i64)..).unwrap().take(3).map(|r| r.unwrap().0).collect();
        assert_eq!(first, [(1, 2, -5), (1, 2, -1), (1, 2, 0)], "{p}");
        assert!(matches!(names.iter(&mut t, .."z"), Err(Error::Unsupported(_))), "{p}");
        t.commit().unwrap();

        db.run(iso, |t| {
            orders.update(t, (1, 2, -5), (10, "updated"))?;
            orders.delete(t, (1, 2, 7))?;
            orders.put(t, (1, 2, 100), (11, "new"))?;
            orders.put(t, (1, 2, 0), &(12, "put".to_string()))?;
            names.delete(t, "ann")
        })
        .unwrap();
        db.sync_commits().unwrap();
        let mut t = db.begin(iso).unwrap();
        assert_eq!(orders.get(&mut t, (1, 2, -5)).unwrap(), Some((10, "updated".to_string())), "{p}");
        assert_eq!(orders.get(&mut t, (1, 2, 7)).unwrap(), None, "{p}");
        assert_eq!(orders.get(&mut t, (1, 2, 0)).unwrap(), Some((12, "put".to_string())), "{p}");
        let mut seen = vec![];
        orders
            .prefix(&mut t, (1u32, 2u32), |k, v| {
                seen.push((k.2, v.0));
                true
            })
            .unwrap();
        assert_eq!(seen, [(i64::MIN, 3), (-5, 10), (-1, 5), (0, 12), (3, 4), (100, 11), (i64::MAX, 6)], "{p}");
        assert_eq!(names.get(&mut t, "ann").unwrap(), None, "{p}");
        assert_eq!(orders.delete(&mut t, (9, 9, 9)), Err(Error::KeyNotFound), "{p}");
        assert_eq!(orders.update(&mut t, (9, 9, 9), (0, "")), Err(Error::KeyNotFound), "{p}");
        t.commit().unwrap();

        // Declared accesses (BOHM, ordered 2PL) name keys through `key`.
        let k = orders.key((1u32, 3u32, 0i64)).unwrap();
        let access = AccessSet { reads: vec![(orders.id(), k.clone())], writes: vec![(orders.id(), k)] };
        let opts = TxnOptions { access: Some(&access), ..TxnOptions::new(iso) };
        db.run_with(opts, Default::default(), |t| {
            let (n, s) = orders.get(t, (1, 3, 0))?.unwrap();
            orders.update(t, (1, 3, 0), (n + 1, s))
        })
        .unwrap();
        db.sync_commits().unwrap();
        let got = db.run(iso, |t| orders.get(t, (1, 3, 0))).unwrap();
        assert_eq!(got, Some((3, "other district".to_string())), "{p}");
    }
}

/// Bytes written through the raw API that do not decode as the table's
/// types give `Error::Decode` from reads and scans; a key whose encoding
/// is too long gives `Error::KeyTooLarge`; the transaction stays usable.
#[test]
fn bad_stored_bytes_and_long_keys_give_typed_errors() {
    const T: TableDefinition<(u32, String), u64> = TableDefinition::new("t");
    let db = Database::new(Options::default()).unwrap();
    let t = T.create(&db, IndexKind::Ordered).unwrap();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    t.insert(&mut x, (1, "a"), 5).unwrap();
    // A value of 3 bytes where a u64 is expected.
    x.insert(t.id(), t.key((1u32, "b")).unwrap(), b"abc").unwrap();
    assert!(matches!(t.get(&mut x, (1, "b")), Err(Error::Decode { .. })));
    let e = t.get(&mut x, (1, "b")).unwrap_err();
    assert!(e.to_string().contains("u64"), "{e}");
    // A key that is not a (u32, String).
    x.insert(t.id(), Key::from(u64::MAX), 1u64.to_le_bytes()).unwrap();
    let mut seen = vec![];
    let r = t.all(&mut x, |k, v| {
        seen.push((k, v));
        true
    });
    assert!(matches!(r, Err(Error::Decode { .. })), "{r:?}");
    assert_eq!(seen, [((1, "a".to_string()), 5)]);
    let r = t.range(&mut x, (2u32, String::new()).., |_, _| true);
    assert!(matches!(r, Err(Error::Decode { .. })), "{r:?}");
    // The iterator hands each row that does not decode on as an error, and
    // goes on with the next.
    let rows: Vec<_> = t.iter(&mut x, ..).unwrap().collect();
    assert!(matches!(rows[..], [Ok(_), Err(Error::Decode { .. }), Err(Error::Decode { .. })]), "{rows:?}");
    // Too long a key.
    let long = "x".repeat(multiverse::KEY_MAX);
    assert!(matches!(t.insert(&mut x, (1, &long), 1), Err(Error::KeyTooLarge { .. })));
    assert!(matches!(t.get(&mut x, (1, long.as_str())), Err(Error::KeyTooLarge { .. })));
    assert!(matches!(
        t.range(&mut x, (0u32, long.clone())..(1, String::new()), |_, _| true),
        Err(Error::KeyTooLarge { .. })
    ));
    assert_eq!(t.get(&mut x, (1, "a")).unwrap(), Some(5));
    x.commit().unwrap();
}

/// `Serde<T>` values round-trip through a table, damaged ones give
/// `Error::Decode`. Built by `cargo test --workspace` (crates/bench turns
/// the feature on for its tests) or `--features serde`.
#[cfg(feature = "serde")]
#[test]
fn serde_values_round_trip() {
    use multiverse::typed::Serde;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
    enum Kind {
        Retail,
        Business { vat: String },
    }
    #[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
    struct Customer {
        name: String,
        balance: i64,
        kind: Kind,
        note: Option<Vec<u8>>,
    }
    const C: TableDefinition<(u32, i16), Serde<Customer>> = TableDefinition::new("customers");

    for p in Protocol::ALL {
        let db = Database::new(Options { protocol: p, ..Options::default() }).unwrap();
        let c = C.create(&db, IndexKind::Ordered).unwrap();
        let ann = Customer { name: "Ann".into(), balance: -20, kind: Kind::Retail, note: None };
        let bob = Customer {
            name: "Bob\0".into(),
            balance: i64::MAX,
            kind: Kind::Business { vat: "X1".into() },
            note: Some(vec![0, 0xFF]),
        };
        db.run(p.strongest(), |t| {
            c.insert(t, (1, -1), Serde(&ann))?;
            let b = Serde(bob.clone());
            c.insert(t, (1, 1), &b)
        })
        .unwrap();
        db.sync_commits().unwrap();
        let mut all = vec![];
        db.run(p.strongest(), |t| {
            all.clear();
            c.all(t, |k, v| {
                all.push((k, v.0));
                true
            })
        })
        .unwrap();
        assert_eq!(all, [((1, -1), ann.clone()), ((1, 1), bob.clone())], "{p}");
    }

    let mut bytes = Vec::new();
    Serde(Customer { name: "Ann".into(), balance: 1, kind: Kind::Retail, note: None })
        .encode_value(&mut bytes)
        .unwrap();
    assert!(matches!(Serde::<Customer>::decode_value(&bytes[..bytes.len() - 1]), Err(Error::Decode { .. })));
    bytes.push(0);
    assert!(matches!(Serde::<Customer>::decode_value(&bytes), Err(Error::Decode { .. })));
    assert!(matches!(Serde::<Customer>::decode_value(&[0xFF; 3]), Err(Error::Decode { .. })));
}

/// `TypedTable::get_for_update` decodes as `get` does and claims the row
/// as `Transaction::get_for_update` does: a concurrent writer of it
/// conflicts; refused in a read-only transaction.
#[test]
fn typed_get_for_update_claims_the_row() {
    const STOCK: TableDefinition<(u32, String), (u64, bool)> = TableDefinition::new("stock");
    for p in [Protocol::MvOcc, Protocol::Silo, Protocol::OneVLock] {
        let db = Database::new(Options {
            protocol: p,
            lock_timeout: std::time::Duration::from_millis(1),
            ..Options::default()
        })
        .unwrap();
        let stock = STOCK.create(&db, IndexKind::Ordered).unwrap();
        let iso = p.strongest();
        db.run(iso, |t| stock.insert(t, (1, "nut"), (10, true))).unwrap();
        let mut a = db.begin(iso).unwrap();
        assert_eq!(stock.get_for_update(&mut a, (1, "nut")).unwrap(), Some((10, true)), "{p}");
        assert_eq!(stock.get_for_update(&mut a, (1, "bolt")).unwrap(), None, "{p}");
        assert_eq!(stock.get_for_update_with(&mut a, (1, "nut"), |b| b.len()).unwrap(), Some(9), "{p}");
        // Another writer of the claimed row: one of the two fails (the
        // other writer at once under mv-occ and 1v-lock; under Silo the
        // claim is checked at commit, and the reader loses).
        let mut b = db.begin(iso).unwrap();
        let other = stock.update(&mut b, (1, "nut"), (0, false)).and_then(|()| b.commit().map(drop));
        let mine = stock.update(&mut a, (1, "nut"), (9, true)).and_then(|()| a.commit().map(drop));
        assert!(other.is_err() != mine.is_err(), "{p}: {other:?} {mine:?}");
        assert_eq!(other.is_err(), p != Protocol::Silo, "{p}");
        let want = if mine.is_ok() { (9, true) } else { (0, false) };
        assert_eq!(db.run(iso, |t| stock.get(t, (1, "nut"))).unwrap(), Some(want), "{p}");
        let mut r = db.begin_with(TxnOptions { read_only: true, ..TxnOptions::new(iso) }).unwrap();
        assert!(matches!(stock.get_for_update(&mut r, (1, "nut")), Err(Error::InvalidArgument(_))), "{p}");
    }
}
