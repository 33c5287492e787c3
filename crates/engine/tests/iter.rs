//! Iterator scans (`Transaction::range` and `Transaction::prefix`) under
//! every protocol and level: order both ways, bounds, both ends at once,
//! batch boundaries inside groups of equal secondary keys, early stops that
//! claim only what they walked, and hash indexes refused.

use multiverse::*;
use std::ops::Bound;

/// Every protocol at every level it offers, over both ordered maps.
fn dbs() -> impl Iterator<Item = ((Protocol, OrderedMap), Isolation)> {
    let maps = [OrderedMap::SkipList, OrderedMap::BTree];
    Protocol::ALL
        .into_iter()
        .flat_map(move |p| maps.into_iter().flat_map(move |m| p.isolation_levels().iter().map(move |&i| ((p, m), i))))
}

fn open((p, map): (Protocol, OrderedMap)) -> Database {
    Database::new(Options { protocol: p, ordered_map: map, ..Options::default() }).unwrap()
}

/// Keys 0, 2, 4, ..., 2(n-1) with value = the key as 8 LE bytes.
fn fill(db: &Database, spec: impl Into<TableSpec>, n: u64) -> TableId {
    let spec: TableSpec = spec.into();
    let t = db.create_table(spec).unwrap();
    db.run(Isolation::Serializable, |x| (0..n).try_for_each(|k| x.insert(t, Key::from(2 * k), (2 * k).to_le_bytes())))
        .unwrap();
    db.sync_commits().unwrap(); // POMVCC shows a commit at its next tick
    t
}

fn keys(r: impl Iterator<Item = Result<(Key, Vec<u8>)>>) -> Vec<u64> {
    r.map(|row| {
        let (k, v) = row.unwrap();
        assert_eq!(v, k.to_u64().unwrap().to_le_bytes(), "a row's value is not its own");
        k.to_u64().unwrap()
    })
    .collect()
}

fn expect(lo: Bound<u64>, hi: Bound<u64>, n: u64) -> Vec<u64> {
    (0..n).map(|k| 2 * k).filter(|k| (lo, hi).contains_key(k)).collect()
}

trait Contains {
    fn contains_key(&self, k: &u64) -> bool;
}
impl Contains for (Bound<u64>, Bound<u64>) {
    fn contains_key(&self, k: &u64) -> bool {
        std::ops::RangeBounds::contains(self, k)
    }
}

fn kb(b: Bound<u64>) -> Bound<Key> {
    b.map(Key::from)
}

#[test]
fn range_walks_in_order_both_ways_under_every_protocol() {
    const N: u64 = 700; // several batches (1, 2, 4, ..., 256, 256)
    let bounds = [
        (Bound::Unbounded, Bound::Unbounded),
        (Bound::Included(10), Bound::Excluded(600)),
        (Bound::Excluded(10), Bound::Included(600)),
        (Bound::Included(11), Bound::Included(11)),
        (Bound::Included(600), Bound::Included(10)),
        (Bound::Unbounded, Bound::Included(0)),
        (Bound::Included(2 * N - 2), Bound::Unbounded),
    ];
    for (p, iso) in dbs() {
        let db = open(p);
        let t = fill(&db, TableSpec::ordered("t"), N);
        let ix = db.primary(t);
        let mut x = db.begin(iso).unwrap();
        for (lo, hi) in bounds {
            let want = expect(lo, hi, N);
            let got = keys(x.range(ix, (kb(lo), kb(hi))).unwrap());
            assert_eq!(got, want, "{p:?} {iso:?} forward {lo:?}..{hi:?}");
            let mut back = keys(x.range(ix, (kb(lo), kb(hi))).unwrap().rev());
            back.reverse();
            assert_eq!(back, want, "{p:?} {iso:?} reverse {lo:?}..{hi:?}");
        }
        x.commit().unwrap();
    }
}

#[test]
fn both_ends_at_once_hand_every_row_once() {
    const N: u64 = 300;
    for (p, iso) in dbs() {
        let db = open(p);
        let t = fill(&db, TableSpec::ordered("t"), N);
        let ix = db.primary(t);
        let mut x = db.begin(iso).unwrap();
        // Patterns of front (true) and back (false) steps.
        for pattern in [&[true, false][..], &[true, true, true, false], &[false, false, true]] {
            let mut r = x.range(ix, ..).unwrap();
            let (mut front, mut back) = (Vec::new(), Vec::new());
            for i in 0.. {
                let step = if pattern[i % pattern.len()] { r.next() } else { r.next_back() };
                match step {
                    None => break,
                    Some(row) => {
                        let k = row.unwrap().0.to_u64().unwrap();
                        if pattern[i % pattern.len()] {
                            front.push(k)
                        } else {
                            back.push(k)
                        }
                    }
                }
            }
            assert!(r.next().is_none() && r.next_back().is_none(), "{p:?}: not fused");
            back.reverse();
            front.extend(back);
            assert_eq!(front, expect(Bound::Unbounded, Bound::Unbounded, N), "{p:?} {iso:?} {pattern:?}");
        }
        x.commit().unwrap();
    }
}

#[test]
fn prefix_takes_the_keys_that_start_with_it() {
    for (p, iso) in dbs() {
        let db = open(p);
        let t = db.create_table(TableSpec::ordered("orders")).unwrap();
        let key = |d: u32, o: u32| Key::builder().u32(d).u32(o).build().unwrap();
        db.run(Isolation::Serializable, |x| {
            for d in [0, 1, 2, u32::MAX] {
                for o in 0..40 {
                    x.insert(t, key(d, o), o.to_le_bytes())?;
                }
            }
            Ok(())
        })
        .unwrap();
        db.sync_commits().unwrap();
        let mut x = db.begin(iso).unwrap();
        for d in [0, 1, 2, u32::MAX] {
            let prefix = Key::builder().u32(d).build().unwrap();
            let got: Vec<Key> = x.prefix(db.primary(t), &prefix).unwrap().map(|r| r.unwrap().0).collect();
            assert_eq!(got, (0..40).map(|o| key(d, o)).collect::<Vec<_>>(), "{p:?} {iso:?} district {d}");
            let last = x.prefix(db.primary(t), &prefix).unwrap().next_back().unwrap().unwrap();
            assert_eq!(last.0, key(d, 39));
        }
        // The empty prefix is every key.
        assert_eq!(x.prefix(db.primary(t), &Key::EMPTY).unwrap().count(), 160);
        x.commit().unwrap();
    }
}

/// The secondary key: the first byte of the value.
fn category(_pk: &Key, v: &[u8]) -> Key {
    Key::from(v[0] as u64)
}

#[test]
fn batches_resume_inside_groups_of_equal_secondary_keys() {
    // 5 categories of 90 rows each: batch boundaries fall inside groups.
    for kind in [IndexKind::Ordered, IndexKind::OrderedGrouped { prefix: 8 }] {
        for (p, iso) in dbs() {
            let db = open(p);
            let t = db.create_table(TableSpec::hash("items", 1024).secondary("cat", kind, category)).unwrap();
            let ix = db.index(t, "cat").unwrap();
            db.run(Isolation::Serializable, |x| {
                (0..450u64).try_for_each(|pk| x.insert(t, Key::from(pk), [(pk * 7 % 5) as u8]))
            })
            .unwrap();
            db.sync_commits().unwrap();
            let mut want: Vec<(u64, u64)> = (0..450u64).map(|pk| (pk * 7 % 5, pk)).collect();
            want.sort();
            let mut x = db.begin(iso).unwrap();
            let pos = |row: Result<(Key, Vec<u8>)>| {
                let (pk, v) = row.unwrap();
                (v[0] as u64, pk.to_u64().unwrap())
            };
            let got: Vec<_> = x.range(ix, ..).unwrap().map(pos).collect();
            assert_eq!(got, want, "{p:?} {iso:?} {kind:?} forward");
            let mut got: Vec<_> = x.range(ix, ..).unwrap().rev().map(pos).collect();
            got.reverse();
            assert_eq!(got, want, "{p:?} {iso:?} {kind:?} reverse");
            // Both ends, alternately.
            let mut r = x.range(ix, Key::from(1)..=Key::from(3)).unwrap();
            let (mut front, mut back) = (Vec::new(), Vec::new());
            while let Some(row) = r.next() {
                front.push(pos(row));
                match r.next_back() {
                    Some(row) => back.push(pos(row)),
                    None => break,
                }
            }
            back.reverse();
            front.extend(back);
            let mid: Vec<_> = want.iter().copied().filter(|(c, _)| (1..=3).contains(c)).collect();
            assert_eq!(front, mid, "{p:?} {iso:?} {kind:?} both ends");
            drop(r);
            x.commit().unwrap_or_else(|e| panic!("{p:?} {iso:?} {kind:?}: {e}"));
        }
    }
}

#[test]
fn a_hash_index_is_refused_and_the_transaction_goes_on() {
    for (p, iso) in dbs() {
        let db = open(p);
        let t = fill(&db, TableSpec::hash("t", 64), 10);
        let mut x = db.begin(iso).unwrap();
        match x.range(db.primary(t), ..) {
            Err(Error::Unsupported(m)) => assert!(m.contains("hash index"), "{m}"),
            Err(e) => panic!("{p:?}: {e}"),
            Ok(_) => panic!("{p:?}: a hash index iterated"),
        }
        assert!(x.get(t, Key::from(2)).unwrap().is_some());
        x.commit().unwrap();
    }
}

/// The first rows of a range, from a function: the iterator outlives the
/// call that made it while the transaction lives.
fn first_rows<'t, 'db>(x: &'t mut Transaction<'db>, ix: IndexId) -> impl Iterator<Item = u64> + use<'t, 'db> {
    x.range(ix, Key::from(100)..).unwrap().map(|r| r.unwrap().0.to_u64().unwrap()).take(3)
}

#[test]
fn an_iterator_can_be_returned_and_stopped_early() {
    for (p, iso) in dbs() {
        let db = open(p);
        let t = fill(&db, TableSpec::ordered("t"), 200);
        let mut x = db.begin(iso).unwrap();
        assert_eq!(first_rows(&mut x, db.primary(t)).collect::<Vec<_>>(), [100, 102, 104]);
        x.update(t, Key::from(100), 100u64.to_le_bytes()).unwrap();
        x.commit().unwrap();
    }
}

/// Serializable: an iterator stopped after a few rows claims the rows its
/// batches walked, not the rest of the range. A key inserted (and
/// committed) far past them, by another transaction, neither waits for a
/// range lock nor makes the reader's commit fail as a phantom.
#[test]
fn an_early_stop_claims_only_what_was_walked() {
    for p in Protocol::ALL {
        if !p.isolation_levels().contains(&Isolation::Serializable) {
            continue;
        }
        let db = Database::new(Options {
            protocol: p,
            lock_timeout: std::time::Duration::from_secs(5),
            ..Options::default()
        })
        .unwrap();
        let t = fill(&db, TableSpec::ordered("t"), 1000);
        let ix = db.primary(t);
        let mut x = db.begin(Isolation::Serializable).unwrap();
        let got: Vec<u64> = x.range(ix, ..).unwrap().take(3).map(|r| r.unwrap().0.to_u64().unwrap()).collect();
        assert_eq!(got, [0, 2, 4]);
        let got: Vec<u64> = x.range(ix, ..).unwrap().rev().take(2).map(|r| r.unwrap().0.to_u64().unwrap()).collect();
        assert_eq!(got, [1998, 1996]);
        x.update(t, Key::from(0), 0u64.to_le_bytes()).unwrap();
        if p != Protocol::Bohm {
            // BOHM runs one interactive transaction at a time.
            let started = std::time::Instant::now();
            std::thread::scope(|s| {
                s.spawn(|| {
                    db.run(Isolation::Serializable, |y| y.insert(t, Key::from(1001), 1001u64.to_le_bytes())).unwrap();
                });
            });
            assert!(started.elapsed() < std::time::Duration::from_secs(2), "{p:?}: the insert waited for the reader");
        }
        x.commit().unwrap_or_else(|e| panic!("{p:?}: the reader failed ({e}) over a key it never walked"));
    }
}
