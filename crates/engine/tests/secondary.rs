//! Non-unique secondary indexes (Hekaton VLDB 2011 section 2.1: "a table can
//! have many indexes", every version is linked into every index). A row's
//! secondary key is derived from its value by a `KeyFn`; updates that change
//! it leave the old version under the old key and the new one under the new
//! key, and visibility decides which one a reader sees.

mod common;

use multiverse::*;
use std::collections::BTreeSet;

/// Row value: `[category, payload...]`.
fn row(cat: u8, payload: u64) -> Vec<u8> {
    let mut v = vec![cat];
    v.extend_from_slice(&payload.to_le_bytes());
    v
}

/// The secondary key: the category byte.
fn category(_pk: &Key, v: &[u8]) -> Key {
    Key::from(v[0] as u64)
}

/// Hash, ordered, and ordered grouped by 7 bytes (all categories in one
/// group), 8 bytes (a group per category) and 32 (longer than the keys).
const KINDS: [IndexKind; 5] = [
    IndexKind::Hash { capacity: 16 },
    IndexKind::Ordered,
    IndexKind::OrderedGrouped { prefix: 7 },
    IndexKind::OrderedGrouped { prefix: 8 },
    IndexKind::OrderedGrouped { prefix: 32 },
];

/// How the table is laid out besides its secondary index: an ordered
/// primary index or a hash one, and the map under the ordered indexes.
type Layout = (bool, OrderedMap);

/// A table (hash or ordered primary, per `ordered_primary`) with secondary
/// index "cat" of `kind`, holding pks 0..12 with category pk % 3.
fn setup(kind: IndexKind, (ordered_primary, map): Layout) -> (Database, TableId, IndexId) {
    let db = Database::new(Options::new().ordered_map(map)).unwrap();
    let spec = if ordered_primary { TableSpec::ordered("items") } else { TableSpec::hash("items", 64).into() };
    let t = db.create_table(spec.secondary("cat", kind, category)).unwrap();
    let ix = db.index(t, "cat").unwrap();
    assert_eq!(ix.table(), t);
    db.run(Isolation::Serializable, |x| {
        for pk in 0..12u64 {
            x.insert(t, Key::from(pk), row((pk % 3) as u8, pk))?;
        }
        Ok(())
    })
    .unwrap();
    (db, t, ix)
}

/// Every index kind with every layout, over both ordered maps.
fn configs() -> impl Iterator<Item = (IndexKind, Layout)> {
    let layouts = [false, true].into_iter().flat_map(|o| [OrderedMap::SkipList, OrderedMap::BTree].map(|m| (o, m)));
    KINDS.into_iter().flat_map(move |k| layouts.clone().map(move |l| (k, l)))
}

/// Primary keys of the rows with category `cat`, through get_by.
fn by_cat(x: &mut Transaction<'_>, ix: IndexId, cat: u64) -> BTreeSet<u64> {
    let mut s = BTreeSet::new();
    x.get_by(ix, Key::from(cat), |pk, v| {
        assert_eq!(v[0] as u64, cat, "get_by returned a row of another key");
        assert!(s.insert(pk.to_u64().unwrap()), "a row was returned twice");
        true
    })
    .unwrap();
    s
}

fn set(v: &[u64]) -> BTreeSet<u64> {
    v.iter().copied().collect()
}

/// get_by returns exactly the visible rows carrying the secondary key.
#[test]
fn get_by_returns_all_rows_with_the_secondary_key() {
    for (kind, op) in configs() {
        let (db, _, ix) = setup(kind, op);
        let mut x = db.begin(Isolation::Snapshot).unwrap();
        assert_eq!(by_cat(&mut x, ix, 0), set(&[0, 3, 6, 9]));
        assert_eq!(by_cat(&mut x, ix, 1), set(&[1, 4, 7, 10]));
        assert_eq!(by_cat(&mut x, ix, 2), set(&[2, 5, 8, 11]));
        assert!(by_cat(&mut x, ix, 3).is_empty());
    }
}

/// An update that changes the secondary key moves the row between keys for
/// transactions that begin afterwards, while a snapshot taken before the
/// update still finds it under its old key (as of its begin time); deletes
/// and inserts likewise.
#[test]
fn secondary_key_changes_are_seen_as_of_begin_time() {
    for (kind, op) in configs() {
        let (db, t, ix) = setup(kind, op);
        let mut before = db.begin(Isolation::Snapshot).unwrap();
        db.run(Isolation::Serializable, |x| {
            x.update(t, Key::from(4), row(2, 4))?; // 1 -> 2
            x.update_with(t, Key::from(0), |o, n| {
                n.extend_from_slice(&row(1, u64::from_le_bytes(o[1..].try_into().unwrap())))
            })?; // 0 -> 1
            x.delete(t, Key::from(7))?; // leaves 1
            x.insert(t, Key::from(20), row(0, 20)) // joins 0
        })
        .unwrap();
        let mut after = db.begin(Isolation::Snapshot).unwrap();
        assert_eq!(by_cat(&mut after, ix, 0), set(&[3, 6, 9, 20]));
        assert_eq!(by_cat(&mut after, ix, 1), set(&[0, 1, 10]));
        assert_eq!(by_cat(&mut after, ix, 2), set(&[2, 4, 5, 8, 11]));
        assert_eq!(by_cat(&mut before, ix, 0), set(&[0, 3, 6, 9]), "{kind:?}");
        assert_eq!(by_cat(&mut before, ix, 1), set(&[1, 4, 7, 10]));
        assert_eq!(by_cat(&mut before, ix, 2), set(&[2, 5, 8, 11]));
        // Updating again without changing the key keeps one row per pk.
        db.run(Isolation::Snapshot, |x| x.update(t, Key::from(4), row(2, 44))).unwrap();
        let mut latest = db.begin(Isolation::ReadCommitted).unwrap();
        assert_eq!(by_cat(&mut latest, ix, 2), set(&[2, 4, 5, 8, 11]));
    }
}

/// A transaction sees its own uncommitted secondary-key changes; others do
/// not (Table 1: Active creator; Table 2: Active updater).
#[test]
fn own_uncommitted_secondary_changes_visible_only_to_self() {
    for (kind, op) in configs() {
        let (db, t, ix) = setup(kind, op);
        let mut w = db.begin(Isolation::Snapshot).unwrap();
        w.update(t, Key::from(1), row(0, 1)).unwrap();
        assert_eq!(by_cat(&mut w, ix, 0), set(&[0, 1, 3, 6, 9]));
        assert_eq!(by_cat(&mut w, ix, 1), set(&[4, 7, 10]));
        for iso in Isolation::ALL {
            let mut r = db.begin(iso).unwrap();
            assert_eq!(by_cat(&mut r, ix, 0), set(&[0, 3, 6, 9]), "{iso}");
            assert_eq!(by_cat(&mut r, ix, 1), set(&[1, 4, 7, 10]), "{iso}");
        }
        w.abort();
        let mut r = db.begin(Isolation::Snapshot).unwrap();
        assert_eq!(by_cat(&mut r, ix, 1), set(&[1, 4, 7, 10]), "rolled back");
    }
}

/// Range scans over a secondary index: an ordered index delivers rows in
/// (secondary key) order within the range; a hash index is scanned whole and
/// filtered by the range. Both respect the residual filter.
#[test]
fn scan_over_secondary_index_respects_range_and_filter() {
    for (kind, op) in configs() {
        let (db, t, ix) = setup(kind, op);
        db.run(Isolation::Snapshot, |x| x.update(t, Key::from(3), row(2, 3))).unwrap();
        let mut x = db.begin(Isolation::Snapshot).unwrap();
        let mut got = vec![];
        x.scan(ix, Key::from(1)..=Key::from(2), None, |pk, v| {
            got.push((v[0], pk.to_u64().unwrap()));
            true
        })
        .unwrap();
        if kind != (IndexKind::Hash { capacity: 16 }) {
            assert!(got.windows(2).all(|w| w[0] <= w[1]), "ordered by (category, pk): {got:?}");
        }
        got.sort();
        let want: Vec<(u8, u64)> = vec![(1, 1), (1, 4), (1, 7), (1, 10), (2, 2), (2, 3), (2, 5), (2, 8), (2, 11)];
        assert_eq!(got, want, "{kind:?}");
        let odd: Filter = std::sync::Arc::new(|pk: &Key, _v: &[u8]| pk.to_u64().unwrap() % 2 == 1);
        let mut n = 0;
        x.scan(ix, Key::from(2)..Key::from(3), Some(&odd), |pk, v| {
            assert_eq!(v[0], 2);
            assert_eq!(pk.to_u64().unwrap() % 2, 1);
            n += 1;
            true
        })
        .unwrap();
        assert_eq!(n, 3, "odd pks of category 2: 3, 5 and 11 ({kind:?})");
    }
}

/// Serializable get_by is a scan of one secondary key: a concurrent committed
/// insert (or update) that adds a row under that key is a phantom; one that
/// adds a row under another key is not. Repeatable read commits either way.
#[test]
fn get_by_then_concurrent_insert_under_same_key_is_phantom() {
    for (kind, op) in configs() {
        for (new_cat, phantom) in [(1u8, true), (2u8, false)] {
            for iso in [Isolation::RepeatableRead, Isolation::Serializable] {
                let (db, t, ix) = setup(kind, op);
                let mut x = db.begin(iso).unwrap();
                assert_eq!(by_cat(&mut x, ix, 1).len(), 4);
                db.run(Isolation::Snapshot, |y| y.insert(t, Key::from(30), row(new_cat, 30))).unwrap();
                x.insert(t, Key::from(99), row(0, 99)).unwrap();
                let r = x.commit().map(|_| ());
                if phantom && iso == Isolation::Serializable {
                    assert_eq!(r, Err(Error::Aborted(AbortReason::Phantom)), "{kind:?}");
                } else {
                    assert_eq!(r, Ok(()), "{kind:?} {iso} cat {new_cat}");
                }
            }
        }
    }
}

/// A serializable range scan over a secondary index, then a concurrent update
/// that moves a row into the range: phantom.
#[test]
fn secondary_range_scan_then_row_moved_into_range_is_phantom() {
    for (kind, op) in configs() {
        let (db, t, ix) = setup(kind, op);
        let mut x = db.begin(Isolation::Serializable).unwrap();
        x.scan(ix, Key::from(2)..=Key::from(2), None, |_, _| true).unwrap();
        db.run(Isolation::Snapshot, |y| y.update(t, Key::from(0), row(2, 0))).unwrap();
        x.insert(t, Key::from(99), row(0, 99)).unwrap();
        assert_eq!(x.commit().map(|_| ()), Err(Error::Aborted(AbortReason::Phantom)), "{kind:?}");
    }
}

/// Read validation covers rows read through a secondary index.
#[test]
fn row_read_by_get_by_then_updated_fails_read_validation() {
    for (kind, op) in configs() {
        let (db, t, ix) = setup(kind, op);
        let mut x = db.begin(Isolation::RepeatableRead).unwrap();
        by_cat(&mut x, ix, 0);
        db.run(Isolation::Snapshot, |y| y.update(t, Key::from(6), row(0, 600))).unwrap();
        x.insert(t, Key::from(99), row(1, 99)).unwrap();
        assert_eq!(x.commit().map(|_| ()), Err(Error::Aborted(AbortReason::ReadValidation)), "{kind:?}");
    }
}

/// Several secondary indexes on one table, plus index lookup by name:
/// "primary" names the primary index, and get_by on it is a point lookup.
#[test]
fn several_secondary_indexes_and_index_names() {
    fn parity(pk: &Key, _v: &[u8]) -> Key {
        Key::from(pk.to_u64().unwrap() % 2)
    }
    let db = Database::new(Options::default()).unwrap();
    let t = db
        .create_table(
            TableSpec::ordered("items").secondary("cat", IndexKind::Hash { capacity: 8 }, category).secondary(
                "parity",
                IndexKind::Ordered,
                parity,
            ),
        )
        .unwrap();
    db.run(Isolation::Snapshot, |x| {
        for pk in 0..12u64 {
            x.insert(t, Key::from(pk), row((pk % 3) as u8, pk))?;
        }
        Ok(())
    })
    .unwrap();
    let (cat, par) = (db.index(t, "cat").unwrap(), db.index(t, "parity").unwrap());
    assert_eq!(db.index(t, "primary").unwrap(), db.primary(t));
    let mut x = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(by_cat(&mut x, cat, 0), set(&[0, 3, 6, 9]));
    let mut odd = BTreeSet::new();
    x.get_by(par, Key::from(1), |pk, _| odd.insert(pk.to_u64().unwrap())).unwrap();
    assert_eq!(odd, set(&[1, 3, 5, 7, 9, 11]));
    let mut n = 0;
    x.get_by(db.primary(t), Key::from(5), |pk, v| {
        assert_eq!(pk, &Key::from(5));
        assert_eq!(v, &row(2, 5)[..]);
        n += 1;
        true
    })
    .unwrap();
    assert_eq!(n, 1);
    x.commit().unwrap();
}

/// get_by stops when the callback returns false.
#[test]
fn get_by_and_scan_stop_when_callback_returns_false() {
    for (kind, op) in configs() {
        let (db, _, ix) = setup(kind, op);
        let mut x = db.begin(Isolation::Snapshot).unwrap();
        let mut n = 0;
        x.get_by(ix, Key::from(0), |_, _| {
            n += 1;
            false
        })
        .unwrap();
        assert_eq!(n, 1);
        let mut m = 0;
        x.scan(ix, .., None, |_, _| {
            m += 1;
            m < 3
        })
        .unwrap();
        assert_eq!(m, 3);
    }
}

/// Updates that keep a row's keys splice the new version in after the old
/// one (no index search); updates that change its category move it. With
/// writers doing both, garbage collection unlinking concurrently and
/// readers checking every snapshot, every row is seen exactly once through
/// each index, in its category, and collection leaves one version per row.
#[test]
fn in_place_updates_race_with_collection_and_readers() {
    use rand::{Rng, SeedableRng};
    const ROWS: u64 = 24;
    // Up to MULTIVERSE_STRESS times the rounds, for at most that many
    // seconds per kind: on the hash index (three keys, so three chains
    // holding every version not yet collected) a round costs more the
    // longer the run: 10x the rounds took 230 s, 3x took 11 s.
    for kind in KINDS {
        let rounds = common::Rounds::new(20_000, 1);
        let db = Database::new(Options::default()).unwrap();
        let t = db.create_table(TableSpec::ordered("items").secondary("cat", kind, category)).unwrap();
        let ix = db.index(t, "cat").unwrap();
        db.run(Isolation::Serializable, |x| (0..ROWS).try_for_each(|pk| x.insert(t, Key::from(pk), row(0, 0))))
            .unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let writers: Vec<_> = (0..2u64)
                .map(|w| {
                    let (db, rounds) = (&db, &rounds);
                    s.spawn(move || {
                        let mut rng = rand::rngs::SmallRng::seed_from_u64(w);
                        let mut i = 0;
                        while rounds.go_on(i) {
                            i += 1;
                            let pk = Key::from(rng.gen_range(0..ROWS));
                            let moved = rng.gen_range(0..4) == 0;
                            let _ = db.run(Isolation::Snapshot, |x| {
                                if moved {
                                    x.update_with(t, &pk, |o, n| {
                                        n.extend_from_slice(o);
                                        n[0] = (o[0] + 1) % 3;
                                    })
                                } else {
                                    x.modify(t, &pk, |v| v[1] = v[1].wrapping_add(1))
                                }
                            });
                        }
                    })
                })
                .collect();
            let (db, stop) = (&db, &stop);
            s.spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    db.collect_garbage();
                }
            });
            let reader = s.spawn(move || {
                let mut checks = 0;
                while checks < 50 || !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    checks += 1;
                    let mut x = db.begin(Isolation::Snapshot).unwrap();
                    let mut cats = [0u8; ROWS as usize];
                    let mut seen = 0;
                    x.scan(db.primary(t), .., None, |pk, v| {
                        cats[pk.to_u64().unwrap() as usize] = v[0];
                        seen += 1;
                        true
                    })
                    .unwrap();
                    assert_eq!(seen, ROWS, "{kind:?}: the primary index showed {seen} rows");
                    let mut total = 0;
                    for c in 0..3u64 {
                        for pk in by_cat(&mut x, ix, c) {
                            assert_eq!(cats[pk as usize] as u64, c, "{kind:?}: row {pk} in the wrong category");
                            total += 1;
                        }
                    }
                    assert_eq!(total, ROWS, "{kind:?}: the secondary index showed {total} rows");
                    x.commit().unwrap();
                }
            });
            for h in writers {
                h.join().unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            reader.join().unwrap();
        });
        for _ in 0..3 {
            db.collect_garbage();
        }
        assert_eq!(db.stats().versions_alive, ROWS, "{kind:?}: one version per row after collection");
    }
}
