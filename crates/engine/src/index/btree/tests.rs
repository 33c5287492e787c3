//! Tests of the B+tree: a sequential model test against `BTreeMap`, a
//! structural check after every phase, and concurrent randomized tests.
//! Sizes scale with `MULTIVERSE_STRESS` (default 1).

use super::node::{prefix_len, prefix_mask, Entry, Header, Inner, Leaf};
use super::{BTree, TreeKey};
use crate::key::Key;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

/// The size multiplier: `MULTIVERSE_STRESS=N` (default 1).
fn stress() -> usize {
    std::env::var("MULTIVERSE_STRESS").ok().and_then(|s| s.parse().ok()).unwrap_or(1).max(1)
}

/// What `check` found: entries, leaves, height (levels of inner nodes).
#[derive(Debug, Default)]
struct Shape {
    entries: usize,
    leaves: usize,
    inner: usize,
    height: usize,
    empty_leaves: usize,
    /// Nodes with a prefix (see `node::PREFIX_MAX`).
    prefixed: usize,
}

/// Asserts that `k` begins with the prefix of word `w` and that `h` is its
/// head after the prefix.
fn check_head<K: TreeKey + std::fmt::Debug>(w: u64, h: u64, k: &K) {
    let p = prefix_len(w);
    assert_eq!(k.head() & prefix_mask(p), w & prefix_mask(p), "{k:?} begins with the node's prefix ({p} bytes)");
    assert_eq!(h, k.head_at(p), "stored head of {k:?} after a {p}-byte prefix");
}

/// Walks the tree (no concurrent writers) and asserts its invariants:
/// sorted keys within their separators' bounds, every key beginning with
/// its node's prefix and its stored head its head after the prefix, no
/// obsolete or locked node reachable,
/// every leaf non-empty unless all its ancestors have one child.
fn check<K: TreeKey + std::fmt::Debug, V>(t: &BTree<K, V>) -> Shape {
    fn walk<K: TreeKey + std::fmt::Debug, V>(
        node: *const Header,
        lo: Option<&K>,
        hi: Option<&K>,
        depth: usize,
        single: bool,
        s: &mut Shape,
    ) {
        // SAFETY: no concurrent writer; the tree's nodes are alive.
        let h = unsafe { &*node };
        assert_eq!(h.lock.word_now() & 0b11, 0, "reachable node locked or obsolete");
        let w = h.prefix();
        s.prefixed += (prefix_len(w) > 0) as usize;
        if h.leaf {
            // SAFETY: a leaf.
            let leaf = unsafe { &*node.cast::<Leaf<K, V>>() };
            let n = leaf.count().expect("count in range");
            s.leaves += 1;
            s.entries += n;
            s.height = s.height.max(depth);
            if n == 0 {
                s.empty_leaves += 1;
                assert!(single, "an empty leaf with a sibling somewhere above");
            }
            let mut prev: Option<&K> = None;
            for i in 0..n {
                // SAFETY: a live entry.
                let e: &Entry<K, V> = unsafe { &*leaf.entry(i) };
                check_head(w, leaf.head(i), &e.key);
                assert!(prev.is_none_or(|p| *p < e.key), "leaf keys sorted: {prev:?} then {:?}", e.key);
                assert!(lo.is_none_or(|l| *l < e.key), "key {:?} above lower fence {lo:?}", e.key);
                assert!(hi.is_none_or(|u| e.key <= *u), "key {:?} at most upper fence {hi:?}", e.key);
                prev = Some(&e.key);
            }
            return;
        }
        // SAFETY: an inner node.
        let inner = unsafe { &*node.cast::<Inner<K>>() };
        let n = inner.count().expect("an inner node has children");
        s.inner += 1;
        // SAFETY: live separators.
        let sep = |i: usize| unsafe { &*inner.key(i) };
        for i in 0..n - 1 {
            check_head(w, inner.head(i), sep(i));
        }
        for i in 0..n {
            let l = if i == 0 { lo } else { Some(sep(i - 1)) };
            let u = if i + 1 == n { hi } else { Some(sep(i)) };
            if let (Some(a), Some(b)) = (l, u) {
                assert!(a < b, "separators ordered");
            }
            walk::<K, V>(inner.child(i), l, u, depth + 1, single && n == 1, s);
        }
    }
    let mut s = Shape::default();
    // Relaxed: no concurrent access.
    walk::<K, V>(t.root.load(Ordering::Relaxed), None, None, 0, true, &mut s);
    assert_eq!(s.entries, t.len(), "len counts the entries");
    s
}

fn bound<K>(kind: u8, k: K) -> Bound<K> {
    match kind % 3 {
        0 => Bound::Included(k),
        1 => Bound::Excluded(k),
        _ => Bound::Unbounded,
    }
}

fn in_range<K: Ord>(k: &K, lo: Bound<&K>, hi: Bound<&K>) -> bool {
    (match lo {
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    }) && (match hi {
        Bound::Included(h) => k <= h,
        Bound::Excluded(h) => k < h,
        Bound::Unbounded => true,
    })
}

/// Runs `ops` random operations on a tree and a `BTreeMap`, keys from
/// `key(rng)`, comparing every answer; checks the structure now and then.
fn model<K: TreeKey + std::fmt::Debug>(seed: u64, ops: usize, mut key: impl FnMut(&mut SmallRng) -> K) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let t: BTree<K, u64> = BTree::new();
    let mut m: BTreeMap<K, u64> = BTreeMap::new();
    let guard = &crossbeam_epoch::pin();
    for op in 0..ops {
        let k = key(&mut rng);
        match rng.gen_range(0..10) {
            0..=3 => {
                let v = op as u64;
                let (got, inserted) = t.get_or_insert_with(k.clone(), || v, guard);
                let want = *m.entry(k).or_insert(v);
                assert_eq!((*got, inserted), (want, want == v), "get_or_insert_with at op {op}");
            }
            4..=5 => assert_eq!(t.remove(&k, guard), m.remove(&k).is_some(), "remove at op {op}"),
            6 => assert_eq!(t.get(&k, guard).copied(), m.get(&k).copied(), "get at op {op}"),
            _ => {
                let k2 = key(&mut rng);
                let (a, b) = if k <= k2 { (k, k2) } else { (k2, k) };
                let (lo, hi) = (bound(rng.gen(), &a), bound(rng.gen(), &b));
                let limit = rng.gen_range(1..200usize);
                let rev = rng.gen_bool(0.5);
                let mut got = Vec::new();
                let mut f = |k: &K, v: &u64| {
                    got.push((k.clone(), *v));
                    got.len() < limit
                };
                if rev {
                    t.range_rev(lo, hi, guard, &mut f);
                } else {
                    t.range(lo, hi, guard, &mut f);
                }
                let want: Vec<(K, u64)> = if rev {
                    m.iter()
                        .rev()
                        .filter(|(k, _)| in_range(*k, lo, hi))
                        .take(limit)
                        .map(|(k, v)| (k.clone(), *v))
                        .collect()
                } else {
                    m.iter().filter(|(k, _)| in_range(*k, lo, hi)).take(limit).map(|(k, v)| (k.clone(), *v)).collect()
                };
                assert_eq!(got, want, "range (rev {rev}) {lo:?}..{hi:?} at op {op}");
            }
        }
        assert_eq!(t.len(), m.len());
        if op % 5000 == 4999 {
            check(&t);
        }
    }
    check(&t);
}

/// Small-domain `u64` keys: many repeats, inserts into and removals from the same leaves.
#[test]
fn model_u64_keys() {
    for seed in 0..(4 * stress()) as u64 {
        model(seed, 20_000, |r| r.gen_range(0..3_000u64));
    }
}

/// Engine keys with long (heap) parts and shared 8-byte heads: comparisons
/// fall through to the full keys on equal heads, inline and long alike.
#[test]
fn model_long_keys_sharing_heads() {
    let key = |r: &mut SmallRng| {
        let mut b = vec![0u8; r.gen_range(0..48usize)];
        // Few distinct heads: most comparisons tie on the head.
        let head = r.gen_range(0..4u8);
        for (i, x) in b.iter_mut().enumerate() {
            *x = if i < 8 { head } else { r.gen_range(0..3u8) };
        }
        let pk = if r.gen_bool(0.3) { Key::from_u64(r.gen_range(0..4)) } else { Key::EMPTY };
        (Key::from_bytes(&b).unwrap(), pk)
    };
    for seed in 0..(2 * stress()) as u64 {
        model(seed, 20_000, key);
    }
}

/// Keys shaped like TPC-C's customers by last name (district, then names
/// from a few syllables, then a first name) and bytes from a tiny alphabet
/// with zeros and every length: prefixes of every length form, grow at
/// splits and shrink when a key that does not share one comes in.
#[test]
fn model_keys_with_long_common_prefixes() {
    const SYL: [&[u8]; 4] = [b"BAR", b"OUGHT", b"ABLE", b"PRI"];
    let named = |r: &mut SmallRng| {
        let mut b = vec![r.gen_range(1..3u8), 0, r.gen_range(1..4u8)];
        for _ in 0..3 {
            b.extend_from_slice(SYL[r.gen_range(0..SYL.len())]);
        }
        b.extend((0..r.gen_range(0..3usize)).map(|_| r.gen_range(b'A'..b'D')));
        (Key::from_bytes(&b).unwrap(), Key::from_u64(r.gen_range(0..3)))
    };
    let tiny = |r: &mut SmallRng| {
        let b: Vec<u8> = (0..r.gen_range(0..20usize)).map(|_| r.gen_range(0..2u8)).collect();
        Key::from_bytes(&b).unwrap()
    };
    for seed in 0..(2 * stress()) as u64 {
        model(seed, 20_000, named);
        model(seed, 20_000, tiny);
    }
}

/// A load of keys that share their first 8 bytes leaves prefixes on the
/// nodes (the feature the model tests above check for correctness).
#[test]
fn nodes_of_keys_sharing_heads_take_prefixes() {
    let t: BTree<Key, u64> = BTree::new();
    let g = &crossbeam_epoch::pin();
    for i in 0..20_000u64 {
        let mut b = b"SAMEHEAD".to_vec();
        b.extend_from_slice(&(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16).to_be_bytes());
        t.get_or_insert_with(Key::from_bytes(&b).unwrap(), || i, g);
    }
    let s = check(&t);
    assert!(s.prefixed * 2 > s.leaves + s.inner, "most nodes prefixed: {s:?}");
}

/// Head invariant of the engine key: order of heads (from the first byte,
/// or after a prefix two keys share) never contradicts the order of keys.
#[test]
fn heads_preserve_key_order() {
    let mut rng = SmallRng::seed_from_u64(7);
    let mut keys: Vec<(Key, Key)> = (0..2000)
        .map(|_| {
            let b: Vec<u8> = (0..rng.gen_range(0..40usize)).map(|_| rng.gen_range(0..3u8)).collect();
            (Key::from_bytes(&b).unwrap(), Key::from_u64(rng.gen_range(0..3)))
        })
        .collect();
    keys.sort();
    for w in keys.windows(2) {
        assert!(w[0].head() <= w[1].head(), "{:?} {:?}", w[0], w[1]);
        // After a prefix they share, too.
        for p in 1..=super::node::PREFIX_MAX {
            if w[0].head() & prefix_mask(p) == w[1].head() & prefix_mask(p) {
                assert!(w[0].head_at(p) <= w[1].head_at(p), "{:?} {:?} after {p} bytes", w[0], w[1]);
            }
        }
    }
    assert_eq!((Key::MAX, Key::EMPTY).head(), u64::MAX);
    assert_eq!(Key::from_bytes(&[1]).unwrap().head(), 1 << 56);
}

/// Splits at every level (ascending, descending and random loads), then
/// removal down to empty and a refill: the structure holds at each phase,
/// emptied nodes are unlinked, and the tree grows again.
#[test]
fn splits_every_level_and_empties() {
    let n = 60_000 * stress() as u64;
    let guard = &crossbeam_epoch::pin();
    for order in 0..3 {
        let t: BTree<u64, u64> = BTree::new();
        let mut keys: Vec<u64> = (0..n).collect();
        match order {
            0 => {}
            1 => keys.reverse(),
            _ => keys.sort_by_key(|k| k.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        }
        for &k in &keys {
            assert!(t.get_or_insert_with(k, || k * 2, guard).1);
        }
        let s = check(&t);
        assert!(s.height >= 3, "three levels of inner nodes at {n} keys: {s:?}");
        if order < 2 {
            // Appends split at the end: leaves stay nearly full.
            assert!(s.leaves as u64 <= n / 28, "{s:?}");
        }
        for &k in keys.iter().step_by(7) {
            assert_eq!(t.get(&k, guard), Some(&(k * 2)));
        }
        // Remove in another order: every other key, then the rest.
        let (odd, even): (Vec<u64>, Vec<u64>) = keys.iter().partition(|&&k| k % 2 == 1);
        for k in odd.iter().chain(&even) {
            assert!(t.remove(k, guard), "remove {k}");
        }
        let s = check(&t);
        assert_eq!((s.entries, s.leaves, s.empty_leaves), (0, 1, 1), "emptied: one leaf left: {s:?}");
        let mut seen = 0;
        t.range(Bound::Unbounded, Bound::Unbounded, guard, |_, _| {
            seen += 1;
            true
        });
        assert_eq!(seen, 0);
        for &k in &keys[..(n / 2) as usize] {
            assert!(t.get_or_insert_with(k, || k, guard).1);
        }
        let s = check(&t);
        assert_eq!(s.entries as u64, n / 2);
    }
}

/// A queue: insert at the top, delete at the bottom, for ever. Memory (the
/// leaves and inner nodes) stays bounded by the live entries.
#[test]
fn queue_deletes_do_not_leak_nodes() {
    let t: BTree<u64, u64> = BTree::new();
    let guard = &crossbeam_epoch::pin();
    let live = 5_000u64;
    for k in 0..live * 40 * stress() as u64 {
        t.get_or_insert_with(k, || k, guard);
        if k >= live {
            assert!(t.remove(&(k - live), guard));
        }
    }
    let s = check(&t);
    assert_eq!(s.entries as u64, live);
    assert!(s.leaves as u64 <= live / 8 && s.inner <= s.leaves, "nodes bounded by live entries: {s:?}");
}

/// `get_or_insert_with` runs its closure once, only for absent keys, and
/// returns the same value address for as long as the entry is in the
/// tree; `Drop` drops every value.
#[test]
fn value_addresses_are_stable_and_drop_frees() {
    let counter = Arc::new(());
    let t: BTree<u64, Arc<()>> = BTree::new();
    let guard = &crossbeam_epoch::pin();
    let mut addr = Vec::new();
    for k in 0..10_000u64 {
        let (v, inserted) = t.get_or_insert_with(k, || counter.clone(), guard);
        assert!(inserted);
        addr.push(v as *const Arc<()>);
    }
    for k in (0..10_000u64).rev() {
        let (v, inserted) = t.get_or_insert_with(k, || panic!("present: not called"), guard);
        assert!(!inserted);
        assert_eq!(v as *const _, addr[k as usize], "moved by splits");
        assert_eq!(t.get(&k, guard).map(|v| v as *const _), Some(addr[k as usize]));
    }
    assert_eq!(Arc::strong_count(&counter), 10_001);
    drop(t);
    assert_eq!(Arc::strong_count(&counter), 1, "drop frees every entry");
}

/// Keys `0..n` never removed are seen by every concurrent scan, in order,
/// once each, while writers insert and remove other keys (disjoint and
/// overlapping sets) and split and unlink leaves around them.
fn concurrent_scans<K>(mk: fn(u64) -> K) -> Shape
where
    K: TreeKey + std::fmt::Debug + Send + Sync + 'static,
{
    let rounds = 3 * stress();
    let t: Arc<BTree<K, u64>> = Arc::new(BTree::new());
    // Stable keys: multiples of 4. Churned: the rest, by two writers (one
    // private residue each and one shared).
    let n = 8_000u64;
    {
        let g = &crossbeam_epoch::pin();
        for k in 0..n {
            t.get_or_insert_with(mk(k * 4), || k * 4, g);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let scans = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..2u64)
        .map(|w| {
            let (t, stop) = (t.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(w);
                let mut ops = 0;
                while !stop.load(Ordering::Relaxed) || ops < 20_000 {
                    let g = &crossbeam_epoch::pin();
                    let base = rng.gen_range(0..n) * 4;
                    let k = base + if rng.gen_bool(0.5) { 1 + w } else { 3 };
                    if rng.gen_bool(0.5) {
                        let (v, _) = t.get_or_insert_with(mk(k), || k, g);
                        assert_eq!(*v, k);
                    } else {
                        t.remove(&mk(k), g);
                    }
                    ops += 1;
                }
            })
        })
        .collect();
    let scanners: Vec<_> = (0..2)
        .map(|s| {
            let (t, scans) = (t.clone(), scans.clone());
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + s);
                for _ in 0..rounds * 200 {
                    let g = &crossbeam_epoch::pin();
                    let a = rng.gen_range(0..n * 4);
                    let b = a + rng.gen_range(0..4_000);
                    let rev = rng.gen_bool(0.5);
                    let mut got = Vec::new();
                    let f = |k: &K, v: &u64| {
                        assert_eq!(*k, mk(*v));
                        got.push(*v);
                        true
                    };
                    let (ka, kb) = (mk(a), mk(b));
                    if rev {
                        t.range_rev(Bound::Included(&ka), Bound::Excluded(&kb), g, f);
                        got.reverse();
                    } else {
                        t.range(Bound::Included(&ka), Bound::Excluded(&kb), g, f);
                    }
                    assert!(got.windows(2).all(|w| w[0] < w[1]), "ordered, no duplicates (rev {rev})");
                    assert!(got.iter().all(|k| (a..b).contains(k)));
                    let stable: Vec<u64> = got.iter().copied().filter(|k| k % 4 == 0).collect();
                    let want: Vec<u64> = (a.div_ceil(4)..b.div_ceil(4).min(n)).map(|k| k * 4).collect();
                    assert_eq!(stable, want, "stable keys in [{a}, {b}) (rev {rev})");
                    for k in want.iter().step_by(97) {
                        assert_eq!(t.get(&mk(*k), g), Some(k));
                    }
                    scans.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for s in scanners {
        s.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(scans.load(Ordering::Relaxed), 2 * rounds * 200);
    check(&t)
}

#[test]
fn concurrent_scans_see_stable_keys_in_order() {
    concurrent_scans(|k| k);
}

/// As above, over engine keys that share most of their first 8 bytes in
/// runs (a nibble of the number every fourth byte): nodes take prefixes at
/// splits and lose them when a key of a neighbouring run comes in, while
/// scans and lookups read them.
#[test]
fn concurrent_scans_over_changing_prefixes() {
    let s = concurrent_scans(|k| {
        let mut b = [0u8; 13];
        for i in 0..4 {
            b[4 * i] = (k >> (12 - 4 * i)) as u8 & 0xF;
        }
        Key::from_bytes(&b).unwrap()
    });
    assert!(s.prefixed > 0, "nodes took prefixes: {s:?}");
}

/// Threads inserting ascending keys into the same region (interleaved
/// residues) split the same leaves and inner nodes concurrently; every key
/// ends up in the tree once, and every value keeps its address.
#[test]
fn concurrent_ascending_inserts_split_the_same_nodes() {
    let threads = 3u64;
    let per = 20_000 * stress() as u64;
    let t: Arc<BTree<u64, u64>> = Arc::new(BTree::new());
    let barrier = Arc::new(Barrier::new(threads as usize));
    let hs: Vec<_> = (0..threads)
        .map(|i| {
            let (t, barrier) = (t.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let g = &crossbeam_epoch::pin();
                let mut addrs = Vec::with_capacity(per as usize);
                for j in 0..per {
                    let k = j * threads + i;
                    let (v, inserted) = t.get_or_insert_with(k, || k, g);
                    assert!(inserted && *v == k);
                    addrs.push(v as *const u64 as usize);
                }
                for (j, a) in addrs.iter().enumerate() {
                    let k = j as u64 * threads + i;
                    assert_eq!(t.get(&k, g).map(|v| v as *const u64 as usize), Some(*a), "value of {k} moved");
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let s = check(&t);
    assert_eq!(s.entries as u64, threads * per);
    let g = &crossbeam_epoch::pin();
    let mut next = 0;
    t.range(Bound::Unbounded, Bound::Unbounded, g, |k, _| {
        assert_eq!(*k, next);
        next += 1;
        true
    });
    assert_eq!(next, threads * per);
}

/// Threads racing `get_or_insert_with` and `remove` on a few hot keys
/// (overlapping sets): each key's insert/remove results alternate
/// consistently, counted per thread, and the final contents agree with
/// the counts.
#[test]
fn concurrent_overlapping_inserts_and_removes_agree() {
    let threads = 4;
    let ops = 30_000 * stress();
    let keys = 64u64;
    let t: Arc<BTree<u64, u64>> = Arc::new(BTree::new());
    let hs: Vec<_> = (0..threads)
        .map(|i| {
            let t = t.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(i);
                let mut net = vec![0i64; keys as usize];
                for _ in 0..ops {
                    let g = &crossbeam_epoch::pin();
                    // Spread over leaves: gaps of 1000 between hot keys.
                    let k = rng.gen_range(0..keys);
                    if rng.gen_bool(0.5) {
                        if t.get_or_insert_with(k * 1000, || k, g).1 {
                            net[k as usize] += 1;
                        }
                    } else if t.remove(&(k * 1000), g) {
                        net[k as usize] -= 1;
                    }
                }
                net
            })
        })
        .collect();
    let mut net = vec![0i64; keys as usize];
    for h in hs {
        for (a, b) in net.iter_mut().zip(h.join().unwrap()) {
            *a += b;
        }
    }
    let s = check(&t);
    let g = &crossbeam_epoch::pin();
    let present: BTreeSet<u64> = (0..keys).filter(|k| t.get(&(k * 1000), g).is_some()).collect();
    for k in 0..keys {
        assert_eq!(net[k as usize], present.contains(&k) as i64, "key {k}: inserts minus removes");
    }
    assert_eq!(s.entries, present.len());
}
