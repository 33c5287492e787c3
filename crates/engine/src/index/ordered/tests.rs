//! Tests of the ordered index: scans of a grouped index against a sorted
//! set, the one-group recognition of a range, concurrent inserts into new
//! groups, and unlinking that retires an emptied entry; over both maps.

use super::*;
use std::collections::BTreeSet;

const MAPS: [OrderedMap; 2] = [OrderedMap::SkipList, OrderedMap::BTree];

/// Frees every version linked into `ix` (single-threaded, at the end of a test).
fn free_all(ix: &OrderedIndex) {
    let mut all = vec![];
    ix.for_each_head(|mut p| {
        while !p.is_null() {
            all.push(p);
            // SAFETY: linked and live until freed below.
            p = ix.next(unsafe { &*p });
        }
    });
    for p in all {
        // SAFETY: nothing else references the versions any more.
        unsafe { Version::free(p) };
    }
}

fn keys_in_rev(ix: &OrderedIndex, lo: Bound<&Key>, hi: Bound<&Key>) -> Vec<Key> {
    let mut got = vec![];
    ix.range_rev(lo, hi, |k, _| {
        got.push(k.0.clone());
        true
    });
    got
}

fn keys_in(ix: &OrderedIndex, lo: Bound<&Key>, hi: Bound<&Key>) -> Vec<Key> {
    let mut got = vec![];
    ix.range(lo, hi, |k, _| {
        got.push(k.0.clone());
        true
    });
    got
}

/// Keys of 0 to 4 bytes from a small alphabet, so that prefixes repeat,
/// keys are prefixes of one another, and groups hold short keys.
fn small_keys(n: usize, seed: u64) -> Vec<Key> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 5) as usize;
            let bytes: Vec<u8> = (0..len).map(|i| [0u8, 1, 0xFE, 0xFF][(x >> (8 + 2 * i)) as usize & 3]).collect();
            Key::from_bytes(&bytes).unwrap()
        })
        .collect()
}

/// Whatever the grouping, every scan returns exactly the keys a sorted
/// set returns for the same bounds, in order: scans within one group
/// (the shortcut) and across groups alike.
#[test]
fn grouped_scans_match_a_sorted_set() {
    let keys = small_keys(400, 0x9E37_79B9);
    let model: BTreeSet<Key> = keys.iter().cloned().collect();
    let bounds: Vec<Key> = small_keys(40, 77);
    for (map, prefix) in MAPS.iter().flat_map(|&m| [0, 1, 2, 3, 32].map(|p| (m, p))) {
        let ix = OrderedIndex::new(0, 1, prefix, map);
        for k in &model {
            let v = Version::alloc(k, 2, b"", 2).as_ptr();
            // SAFETY: fresh version, linked once.
            unsafe { ix.insert(v, (k.clone(), Key::EMPTY)) };
        }
        assert_eq!(ix.len(), model.len());
        let all: Vec<Key> = model.iter().cloned().collect();
        assert_eq!(keys_in(&ix, Bound::Unbounded, Bound::Unbounded), all, "{map}, prefix {prefix}");
        for l in &bounds {
            // A bound and the end of its prefix, as a prefix scan uses.
            let mut his: Vec<Key> = bounds.clone();
            his.extend(l.prefix_end());
            for h in &his {
                for (lo, hi) in [
                    (Bound::Included(l), Bound::Included(h)),
                    (Bound::Included(l), Bound::Excluded(h)),
                    (Bound::Excluded(l), Bound::Excluded(h)),
                    (Bound::Included(l), Bound::Unbounded),
                    (Bound::Unbounded, Bound::Included(h)),
                    (Bound::Unbounded, Bound::Excluded(h)),
                ] {
                    let want: Vec<Key> = model
                        .iter()
                        .filter(|k| match lo {
                            Bound::Included(l) => *k >= l,
                            Bound::Excluded(l) => *k > l,
                            Bound::Unbounded => true,
                        })
                        .filter(|k| match hi {
                            Bound::Included(h) => *k <= h,
                            Bound::Excluded(h) => *k < h,
                            Bound::Unbounded => true,
                        })
                        .cloned()
                        .collect();
                    assert_eq!(keys_in(&ix, lo, hi), want, "{map}, prefix {prefix}, {lo:?}..{hi:?}");
                    let mut back = keys_in_rev(&ix, lo, hi);
                    back.reverse();
                    assert_eq!(back, want, "{map}, reverse, prefix {prefix}, {lo:?}..{hi:?}");
                }
            }
            assert_eq!(ix.head(&(l.clone(), Key::EMPTY)).is_null(), !model.contains(l));
        }
        free_all(&ix);
    }
}

/// The one-group shortcut is taken exactly for scans inside one prefix.
#[test]
fn one_group_scans_are_recognised() {
    let ix = OrderedIndex::new(0, 1, 3, OrderedMap::SkipList);
    let k = |b: &[u8]| Key::from_bytes(b).unwrap();
    let (lo, end) = (k(&[1, 2, 3]), k(&[1, 2, 4]));
    assert!(ix.in_one_group(Bound::Included(&lo), Bound::Excluded(&end)));
    assert!(!ix.in_one_group(Bound::Included(&lo), Bound::Included(&end)));
    assert!(ix.in_one_group(Bound::Included(&k(&[1, 2, 3, 9])), Bound::Included(&k(&[1, 2, 3, 255]))));
    assert!(!ix.in_one_group(Bound::Included(&k(&[1, 2])), Bound::Excluded(&k(&[1, 3]))), "shorter than a prefix");
    assert!(!ix.in_one_group(Bound::Included(&lo), Bound::Unbounded));
    assert!(!ix.in_one_group(Bound::Unbounded, Bound::Excluded(&end)));
    assert!(ix.in_one_group(Bound::Included(&k(&[255, 255, 255])), Bound::Unbounded), "nothing is past it");
    assert!(
        OrderedIndex::new(0, 1, 0, OrderedMap::BTree).in_one_group(Bound::Included(&lo), Bound::Unbounded),
        "one group in all"
    );
}

/// Threads creating the same groups at once end with one group per
/// prefix, every key in it once, and the front finding each group;
/// a scanner running meanwhile always sees keys in order. Then every
/// entry is unlinked and retired, and the keys can be inserted again.
#[test]
fn concurrent_inserts_into_new_groups() {
    for map in MAPS {
        concurrent_inserts_into_new_groups_of(map);
    }
}

fn concurrent_inserts_into_new_groups_of(map: OrderedMap) {
    const THREADS: u64 = 4;
    const PER: u64 = 2_000;
    let ix = OrderedIndex::new(0, 1, 11, map);
    // Key: 7-byte prefix (a new one every other key, so that all the
    // threads, started together, race to create the same groups), then
    // the thread and a counter.
    const GROUPS: u64 = PER / 2;
    let key =
        |t: u64, i: u64| Key::builder().u32(0).u16(0).u8(0).u32((i / 2) as u32).u8(t as u8).u64(i).build().unwrap();
    let start = std::sync::Barrier::new(THREADS as usize);
    let stop = crate::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let scanner = s.spawn(|| {
            let mut scans = 0;
            // Relaxed: a flag only.
            while !stop.load(Ordering::Relaxed) || scans < 3 {
                let _g = crossbeam_epoch::pin();
                let got = keys_in(&ix, Bound::Unbounded, Bound::Unbounded);
                assert!(got.windows(2).all(|w| w[0] < w[1]), "in order, no duplicates");
                scans += 1;
            }
        });
        let writers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (ix, start) = (&ix, &start);
                s.spawn(move || {
                    start.wait();
                    for i in 0..PER {
                        let _g = crossbeam_epoch::pin();
                        let k = key(t, i);
                        let v = Version::alloc(&k, 2, b"", 2).as_ptr();
                        // SAFETY: fresh version, linked once.
                        unsafe { ix.insert(v, (k, Key::EMPTY)) };
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        // Relaxed: a flag only.
        stop.store(true, Ordering::Relaxed);
        scanner.join().unwrap();
    });
    assert_eq!(ix.len(), (THREADS * PER) as usize);
    let guard = crossbeam_epoch::pin();
    assert_eq!(ix.groups.len(), GROUPS as usize, "one group per prefix");
    for g in ix.groups.iter(&guard) {
        let g = g.value();
        let found = ix.find_group(&g.key).map(|f| f as *const Group);
        assert_eq!(found, Some(&**g as *const Group), "the front finds the group");
        let mut n = 0;
        // Acquire: as in `find_group`.
        let mut p = ix.bucket(&g.key).load(Ordering::Acquire);
        let mut steps = 0;
        while !p.is_null() {
            steps += 1;
            assert!(steps <= GROUPS, "the bucket chain has no cycle");
            n += ptr::eq(p, &**g) as usize;
            // SAFETY: groups live as long as the index.
            p = unsafe { &*p }.next.load(Ordering::Acquire);
        }
        assert_eq!(n, 1, "published in the front exactly once");
    }
    for t in 0..THREADS {
        for i in 0..PER {
            let k = (key(t, i), Key::EMPTY);
            let v = ix.head(&k);
            assert!(!v.is_null());
            // SAFETY: linked, and freed only here, once unlinked.
            unsafe {
                assert!(ix.unlink(v, &k).is_some());
                Version::free(v);
            }
        }
    }
    assert_eq!(ix.len(), 0, "every emptied entry was retired");
    let k = key(0, 5);
    let v = Version::alloc(&k, 2, b"", 2).as_ptr();
    // SAFETY: fresh version, linked once.
    unsafe { ix.insert(v, (k.clone(), Key::EMPTY)) };
    assert_eq!(ix.head(&(k, Key::EMPTY)), v);
    drop(guard);
    free_all(&ix);
}

/// `unlink_set` takes a key's versions out of its chain in one walk
/// (head, runs, tail) and retires the entry once the chain is empty.
#[test]
fn unlink_set_removes_its_members_and_retires_the_entry() {
    for map in MAPS {
        unlink_set_of(map);
    }
}

fn unlink_set_of(map: OrderedMap) {
    let ix = OrderedIndex::new(0, 1, 0, map);
    let k = (Key::from(42), Key::EMPTY);
    let guard = crossbeam_epoch::pin();
    let vs: Vec<*mut Version> = (0..8).map(|_| Version::alloc(&k.0, 2, b"", 2).as_ptr()).collect();
    // SAFETY: each fresh version is linked once; all are freed at the end, unlinked.
    unsafe {
        for &v in &vs {
            ix.insert(v, k.clone());
        }
        assert_eq!(ix.chain_of(&*vs[0]), ix.chain_of(&*vs[7]), "one key, one chain");
        // The chain is v7, ..., v0.
        assert_eq!(ix.unlink(vs[0], &k), Some(7), "the tail, past seven");
        let mut set: Vec<_> = [7, 5, 4, 1].iter().map(|&i| vs[i]).collect();
        set.sort_unstable();
        assert_eq!(ix.unlink_set(&k, &set), 4);
        let mut left = Vec::new();
        let mut p = ix.head(&k);
        while !p.is_null() {
            left.push(vs.iter().position(|&v| v == p).unwrap());
            p = ix.next(&*p);
        }
        assert_eq!(left, vec![6, 3, 2]);
        assert_eq!(ix.len(), 1);
        let mut rest: Vec<_> = [6, 3, 2].iter().map(|&i| vs[i]).collect();
        rest.sort_unstable();
        assert_eq!(ix.unlink_set(&k, &rest), 3);
        assert_eq!(ix.len(), 0, "the emptied entry was retired");
        drop(guard);
        for v in vs {
            Version::free(v);
        }
    }
}
