//! Hash index growth through the whole engine, under every protocol: a
//! table declared for 16 keys takes 10,000 rows while readers look up the
//! rows already committed; every row stays found, a full scan delivers each
//! once, and the index grew (but under BOHM, whose rows live in its own
//! store).

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::table::IndexImpl;
use crate::{Database, Key, Options, Protocol, TableId, TableSpec};

const ROWS: u64 = 10_000;
const BATCH: u64 = 50;

fn buckets(db: &Database, t: TableId) -> usize {
    match &db.shared.table_ref(t).unwrap().indexes[0].imp {
        IndexImpl::Hash(h) => h.buckets(),
        IndexImpl::Ordered(_) => unreachable!("a hash table"),
    }
}

fn value(k: u64) -> Vec<u8> {
    (k * 3).to_le_bytes().to_vec()
}

fn grows_under(p: Protocol) {
    let db = Database::new(Options { protocol: p, ..Options::default() }).unwrap();
    let t = db.create_table(TableSpec::hash("t", 16)).unwrap().table();
    let start = buckets(&db, t);
    let iso = p.strongest();
    // Rows below `committed` are committed (and visible to new transactions).
    let committed = AtomicU64::new(0);
    std::thread::scope(|s| {
        let (db, committed) = (&db, &committed);
        s.spawn(move || {
            for b in 0..ROWS / BATCH {
                db.run(iso, |x| {
                    for k in b * BATCH..(b + 1) * BATCH {
                        x.insert(t, Key::from(k), value(k))?;
                    }
                    Ok(())
                })
                .unwrap();
                db.sync_commits().unwrap(); // POMVCC shows a commit at its next tick
                                            // Release: readers that see the mark begin after the commit.
                committed.store((b + 1) * BATCH, Ordering::Release);
            }
        });
        for r in 0..2u64 {
            s.spawn(move || {
                let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ r;
                loop {
                    // Acquire: see the writer's mark.
                    let n = committed.load(Ordering::Acquire);
                    if n > 0 {
                        let keys: Vec<u64> = (0..8)
                            .map(|_| {
                                rng ^= rng << 13;
                                rng ^= rng >> 7;
                                rng ^= rng << 17;
                                rng % n
                            })
                            .collect();
                        let got = db
                            .run(iso, |x| {
                                keys.iter().map(|&k| x.get(t, Key::from(k))).collect::<crate::Result<Vec<_>>>()
                            })
                            .unwrap();
                        for (k, v) in keys.iter().zip(got) {
                            assert_eq!(v, Some(value(*k)), "{p}: key {k} of {n} committed");
                        }
                    }
                    if n == ROWS {
                        break;
                    }
                }
            });
        }
    });
    let mut seen = vec![0u8; ROWS as usize];
    db.run(iso, |x| {
        seen.iter_mut().for_each(|s| *s = 0);
        x.scan(db.primary(t), .., None, |k, v| {
            let k = u64::from_be_bytes(k.as_bytes()[..8].try_into().unwrap());
            assert_eq!(v, value(k));
            seen[k as usize] += 1;
            true
        })
    })
    .unwrap();
    assert!(seen.iter().all(|&c| c == 1), "{p}: a full scan delivers every row once");
    for k in (0..ROWS).step_by(7) {
        assert_eq!(db.run(iso, |x| x.get(t, Key::from(k))).unwrap(), Some(value(k)), "{p}");
    }
    let end = buckets(&db, t);
    if p == Protocol::Bohm {
        // BOHM keeps its rows in its own store (section 3.1), not in the
        // table's indexes.
        assert_eq!(end, start);
    } else {
        assert!(end >= 4 * start, "{p}: the index grew from {start} buckets only to {end}");
    }
}

#[test]
fn a_small_hash_table_grows_to_ten_thousand_rows_under_every_protocol() {
    for p in Protocol::ALL {
        grows_under(p);
    }
}

#[test]
fn a_zero_capacity_hash_table_is_refused() {
    let db = Database::new(Options::default()).unwrap();
    assert!(matches!(db.create_table(TableSpec::hash("t", 0)), Err(crate::Error::InvalidArgument(_))));
    let spec = TableSpec::ordered("u").secondary("h", crate::IndexKind::Hash { capacity: 0 }, |k, _| k.clone());
    assert!(matches!(db.create_table(spec), Err(crate::Error::InvalidArgument(_))));
    assert!(db.create_table(TableSpec::hash("t", 1)).is_ok(), "the name is still free");
}
