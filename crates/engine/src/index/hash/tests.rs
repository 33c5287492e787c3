//! Unit tests of the hash index: `unlink` and `unlink_set` on hand-built
//! chains, small indexes' spread buckets, bucket locks kept through growth,
//! and growth step by step and under concurrent inserts, unlinks and reads
//! (every key still found, a full scan delivering each once).

use super::*;
use crate::key::Key;

fn version(i: u64) -> *mut Version {
    Version::alloc(&Key::from(i), 1, b"", 1).as_ptr()
}

fn hash(i: u64) -> u64 {
    Key::from(i).hash64()
}

/// Versions on the chain of `hash` whose key is `i`.
fn found(h: &HashIndex, i: u64) -> usize {
    let _g = crossbeam_epoch::pin();
    let k = Key::from(i);
    let mut p = h.head(hash(i));
    let mut n = 0;
    while !p.is_null() {
        // SAFETY: linked versions are alive while the test holds them.
        let v = unsafe { &*p };
        n += v.key_eq(&k) as usize;
        p = h.next(v);
    }
    n
}

/// Keys delivered by a full scan, with how often.
fn scanned(h: &HashIndex) -> std::collections::HashMap<u64, usize> {
    let _g = crossbeam_epoch::pin();
    let mut out = std::collections::HashMap::new();
    h.scan(|v| {
        *out.entry(u64::from_be_bytes(v.key_bytes()[..8].try_into().unwrap())).or_insert(0) += 1;
        true
    });
    out
}

/// True if `v` is on any chain of any level (every word that heads a
/// chain: not moved, and, on the level being migrated into, the words
/// already written).
fn reachable(h: &HashIndex, v: *mut Version) -> bool {
    let _g = crossbeam_epoch::pin();
    h.g.levels.iter().map(|l| l.load(Ordering::Acquire)).take_while(|l| !l.is_null()).any(|l| {
        // SAFETY: levels live until the index is dropped.
        let l = unsafe { &*l };
        (0..l.buckets()).any(|b| {
            let w = l.word(b).load(Ordering::Acquire);
            let mut p = if moved(w) { std::ptr::null_mut() } else { head_of(w) };
            while !p.is_null() {
                if p == v {
                    return true;
                }
                // SAFETY: linked versions are alive while the test holds them.
                p = h.next(unsafe { &*p });
            }
            false
        })
    })
}

/// `unlink` reports how far it walked; `unlink_set` removes the members
/// of a set wherever they lie in the chain (the head, runs of them, the
/// tail) in one walk and leaves every other version in order.
#[test]
fn unlink_set_removes_its_members_in_one_walk() {
    let h = HashIndex::new(1, 0, None);
    // Ten keys of one bucket.
    let keys: Vec<u64> = (0..).filter(|&i| h.bucket_of(hash(i)) == h.bucket_of(hash(0))).take(10).collect();
    let hash = hash(0);
    // Prepended: the chain is v9, v8, ..., v0.
    let vs: Vec<*mut Version> = keys.iter().map(|&i| version(i)).collect();
    let chain = |h: &HashIndex| {
        let mut out = Vec::new();
        let mut p = h.head(hash);
        while !p.is_null() {
            out.push(vs.iter().position(|&v| v == p).unwrap());
            // SAFETY: linked versions are alive until freed below.
            p = h.next(unsafe { &*p });
        }
        out
    };
    let _guard = crossbeam_epoch::pin();
    // SAFETY: each fresh version is linked once; all are freed at the end, unlinked.
    unsafe {
        for &v in &vs {
            h.insert(v, hash);
        }
        assert_eq!(h.unlink(vs[9], hash), Some(0), "the head");
        assert_eq!(h.unlink(vs[0], hash), Some(8), "the tail, past eight");
        assert_eq!(h.unlink(vs[0], hash), None, "gone");
        let mut set: Vec<_> = [8, 6, 5, 1].iter().map(|&i| vs[i]).collect();
        set.sort_unstable();
        assert_eq!(h.unlink_set(h.chain_of(hash), &set), 4);
        assert_eq!(chain(&h), vec![7, 4, 3, 2]);
        let mut rest: Vec<_> = [7, 4, 3, 2].iter().map(|&i| vs[i]).collect();
        rest.sort_unstable();
        assert_eq!(h.unlink_set(h.chain_of(hash), &rest), 4);
        assert!(h.head(hash).is_null());
        for v in vs {
            Version::free(v);
        }
    }
}

/// Small indexes get eight buckets a key, every bucket on a line of its
/// own; large ones pack them; either way each bucket number maps to one
/// distinct slot.
#[test]
fn small_indexes_spread_their_buckets() {
    for (capacity, buckets, stride) in [(1, 16, 64), (2, 16, 64), (20, 256, 64), (256, 2048, 64), (257, 512, 8)] {
        let h = HashIndex::new(capacity, 0, None);
        assert_eq!(h.buckets(), buckets);
        let at = |b: u64| h.bucket_word(b) as *const AtomicU64 as usize;
        for b in 1..buckets as u64 {
            assert_eq!(at(b) - at(b - 1), stride, "capacity {capacity}");
            assert_eq!(at(b + buckets as u64), at(b), "the hash wraps at the bucket count");
        }
    }
}

/// Filling a 16-bucket index with 10,000 versions grows it; every key
/// stays found, by lookup and once by a full scan, in every phase of
/// every growth (checked after each step), and unlinking random keys in
/// between (single versions and sets, from zipped chains too) leaves
/// them on no chain of any level and loses nothing. Several seeds
/// (`MULTIVERSE_STRESS` times more).
#[test]
fn grows_step_by_step_and_loses_nothing() {
    let stress: u64 = std::env::var("MULTIVERSE_STRESS").ok().and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    let runs = 16 * stress;
    let zipped: Vec<usize> = (1..=runs).map(grow_step_by_step).collect();
    assert!(zipped.iter().filter(|&&z| z > 0).count() * 2 >= zipped.len(), "growths from zipped levels: {zipped:?}");
}

/// One run of the test above; returns the growths that started from a
/// zipped level.
fn grow_step_by_step(seed: u64) -> usize {
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut rand = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let h = HashIndex::new(1, 0, None);
    let n = 10_000u64;
    let vs: Vec<*mut Version> = (0..n).map(version).collect();
    let mut live = vec![false; n as usize];
    let mut alive: Vec<u64> = Vec::new();
    let check = |h: &HashIndex, live: &[bool], i: u64| {
        assert_eq!(found(h, i), live[i as usize] as usize, "key {i} (seed {seed})");
    };
    let mut phases = std::collections::HashSet::new();
    // Pinned through random stretches: no grace period passes, so
    // unzipping stops half way and a growth starts while the level
    // before is still zipped; unlinks then meet chains migrated out of
    // zipped families, some of their families' chains not yet moved.
    let mut hold = None;
    let mut toggle = rand(2000);
    let mut zipped_growths = 0;
    for i in 0..n {
        if i == toggle {
            hold = if hold.is_some() { None } else { Some(crossbeam_epoch::pin()) };
            toggle += 1 + rand(2000);
        }
        if let Phase::Migrate { .. } = &*h.g.phase.lock() {
            zipped_growths += (h.current().fam() != h.current().mask) as usize;
        }
        // SAFETY: fresh, linked once.
        unsafe { h.insert(vs[i as usize], hash(i)) };
        live[i as usize] = true;
        alive.push(i);
        phases.insert(std::mem::discriminant(&*h.g.phase.lock()));
        // Every 5th step a random live key goes, alone or with a few
        // others of its chain number, so unlinks meet every phase and
        // versions of every age.
        if i % 5 == 4 {
            let j = alive[rand(alive.len() as u64) as usize];
            let _g = crossbeam_epoch::pin();
            let gone: Vec<u64> = if rand(2) == 0 {
                // SAFETY: linked, freed only at the end.
                assert!(unsafe { h.unlink(vs[j as usize], hash(j)) }.is_some(), "key {j} (seed {seed})");
                vec![j]
            } else {
                let c = h.chain_of(hash(j));
                let mut set: Vec<u64> = alive.iter().copied().filter(|&k| h.chain_of(hash(k)) == c).collect();
                while set.len() > 3 {
                    set.swap_remove(rand(set.len() as u64) as usize);
                }
                let mut ptrs: Vec<_> = set.iter().map(|&k| vs[k as usize]).collect();
                ptrs.sort_unstable();
                // SAFETY: as above.
                assert_eq!(unsafe { h.unlink_set(c, &ptrs) }, ptrs.len(), "seed {seed}");
                set
            };
            for k in gone {
                live[k as usize] = false;
                alive.retain(|&a| a != k);
                assert!(!reachable(&h, vs[k as usize]), "key {k} still linked (seed {seed})");
            }
        }
        if i % 97 == 0 || (i > 2000 && i % 13 == 0 && !matches!(*h.g.phase.lock(), Phase::Idle)) {
            for k in (0..=i).step_by(11) {
                check(&h, &live, k);
            }
            let s = scanned(&h);
            assert!(s.values().all(|&c| c == 1), "a key scanned twice (seed {seed})");
            assert_eq!(s.len(), alive.len());
        }
        // Let grace periods pass now and then.
        if hold.is_none() && i % 64 == 0 {
            crossbeam_epoch::pin().flush();
        }
    }
    drop(hold);
    h.settle();
    assert!(h.buckets() >= 2048, "grew to {} buckets", h.buckets());
    assert!(phases.len() == 3, "saw every phase (seed {seed})");
    for k in 0..n {
        check(&h, &live, k);
    }
    let s = scanned(&h);
    assert!(s.values().all(|&c| c == 1));
    assert_eq!(s.len(), alive.len());
    // Locks stay in the first level's words.
    assert_eq!(h.bucket_of(u64::MAX), 15);
    for (i, v) in vs.into_iter().enumerate() {
        if live[i] {
            let _g = crossbeam_epoch::pin();
            // SAFETY: linked; freed right after.
            assert!(unsafe { h.unlink(v, hash(i as u64)) }.is_some());
        }
        // SAFETY: unlinked, and no reader is left.
        unsafe { Version::free(v) };
    }
    assert!(scanned(&h).is_empty());
    zipped_growths
}

/// A moved word keeps its lock bits: a bucket lock taken before the
/// growth is still counted after it, and released there.
#[test]
fn locks_survive_growth() {
    let h = HashIndex::new(1, 0, None);
    let b = h.bucket_of(hash(5));
    assert!(h.lock_bucket(b));
    let vs: Vec<*mut Version> = (0..2000).map(version).collect();
    for (i, &v) in vs.iter().enumerate() {
        // SAFETY: fresh, linked once.
        unsafe { h.insert(v, hash(i as u64)) };
        crossbeam_epoch::pin().flush();
    }
    h.settle();
    assert!(h.buckets() > 16);
    assert!(h.bucket_locked(b));
    assert!(moved(h.bucket_word(hash(5)).load(Ordering::Relaxed)), "the chain left the lock word");
    h.unlock_bucket(b);
    assert!(!h.bucket_locked(b));
    for (i, v) in vs.into_iter().enumerate() {
        let _g = crossbeam_epoch::pin();
        // SAFETY: linked; freed right after, no reader left.
        unsafe {
            assert!(h.unlink(v, hash(i as u64)).is_some());
            Version::free(v);
        }
    }
}

/// Threads insert and unlink while others look up and scan, through
/// several growths: a key inserted for good is found by every lookup
/// after its insert and by every full scan begun after it; no scan sees
/// a key twice. Unlinked versions are freed after an epoch, as the
/// collector does.
#[test]
fn randomized_growth_under_concurrent_inserts_unlinks_and_reads() {
    use crate::sync::atomic::AtomicUsize;
    const WRITERS: u64 = 2;
    const PER: u64 = 12_000;
    let h = HashIndex::new(1, 0, None);
    let high: Vec<AtomicU64> = (0..WRITERS).map(|_| AtomicU64::new(0)).collect();
    let done = AtomicUsize::new(0);
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    eprintln!("seed {seed}");
    let kept = |w: u64, i: u64| w << 32 | i;
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let (h, high, done) = (&h, &high, &done);
            s.spawn(move || {
                let mut rng = seed ^ (w + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let mut rand = move || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                // Transient versions, unlinked soon after, in sets or alone.
                let mut pending: Vec<(u64, *mut Version)> = Vec::new();
                for i in 0..PER {
                    let k = kept(w, i);
                    // SAFETY: fresh, linked once; never unlinked until the end.
                    unsafe { h.insert(version(k), hash(k)) };
                    // Release: readers that see it find the version.
                    high[w as usize].store(i + 1, Ordering::Release);
                    let t = 1 << 62 | kept(w, i);
                    let v = version(t);
                    // SAFETY: as above.
                    unsafe { h.insert(v, hash(t)) };
                    pending.push((t, v));
                    if pending.len() > (rand() % 16) as usize {
                        let g = crossbeam_epoch::pin();
                        if rand() % 2 == 0 {
                            for (t, v) in pending.drain(..) {
                                // SAFETY: linked, ours; freed after an epoch.
                                assert!(unsafe { h.unlink(v, hash(t)) }.is_some());
                                let p = v as usize;
                                // SAFETY: unlinked; readers pinned now finish first.
                                unsafe { g.defer_unchecked(move || Version::free(p as *mut Version)) };
                            }
                        } else {
                            let mut by: Vec<(u64, *mut Version)> =
                                pending.drain(..).map(|(t, v)| (h.chain_of(hash(t)), v)).collect();
                            by.sort_unstable();
                            for run in by.chunk_by(|a, b| a.0 == b.0) {
                                let set: Vec<_> = run.iter().map(|r| r.1).collect();
                                // SAFETY: as above.
                                assert_eq!(unsafe { h.unlink_set(run[0].0, &set) }, set.len());
                                for v in set {
                                    let p = v as usize;
                                    // SAFETY: as above.
                                    unsafe { g.defer_unchecked(move || Version::free(p as *mut Version)) };
                                }
                            }
                        }
                    }
                }
                for (t, v) in pending {
                    let g = crossbeam_epoch::pin();
                    // SAFETY: as above.
                    assert!(unsafe { h.unlink(v, hash(t)) }.is_some());
                    let p = v as usize;
                    // SAFETY: as above.
                    unsafe { g.defer_unchecked(move || Version::free(p as *mut Version)) };
                }
                done.fetch_add(1, Ordering::Release);
            });
        }
        for r in 0..2u64 {
            let (h, high, done) = (&h, &high, &done);
            s.spawn(move || {
                let mut rng = seed ^ (r + 7).wrapping_mul(0x2545_F491_4F6C_DD1D);
                let mut rounds = 0;
                while done.load(Ordering::Acquire) < WRITERS as usize {
                    rounds += 1;
                    // Acquire: the versions below the marks are linked.
                    let marks: Vec<u64> = high.iter().map(|m| m.load(Ordering::Acquire)).collect();
                    for (w, &m) in marks.iter().enumerate() {
                        for _ in 0..64 {
                            rng ^= rng << 13;
                            rng ^= rng >> 7;
                            rng ^= rng << 17;
                            if m > 0 {
                                let k = kept(w as u64, rng % m);
                                assert_eq!(found(h, k), 1, "key {k:#x} (seed {seed})");
                            }
                        }
                    }
                    if rounds % 8 == 0 {
                        let s = scanned(h);
                        assert!(s.values().all(|&c| c == 1), "a key scanned twice (seed {seed})");
                        for (w, &m) in marks.iter().enumerate() {
                            for i in (0..m).step_by(37) {
                                assert_eq!(s.get(&kept(w as u64, i)), Some(&1), "seed {seed}");
                            }
                        }
                    }
                }
            });
        }
    });
    h.settle();
    assert!(h.buckets() >= 4096, "grew to {}", h.buckets());
    let s = scanned(&h);
    assert_eq!(s.len() as u64, WRITERS * PER, "only the kept keys are left");
    let mut all = Vec::new();
    h.scan(|v| {
        all.push(v as *const Version as *mut Version);
        true
    });
    for v in all {
        // SAFETY: linked; nobody else is left.
        unsafe {
            assert!(h.unlink(v, hash(u64::from_be_bytes((*v).key_bytes()[..8].try_into().unwrap()))).is_some());
            Version::free(v);
        }
    }
}

/// A growth left under way when the inserts stopped (here: no grace period
/// could pass while they ran, so unzipping never began) is carried to its
/// end by `advance_growth`, what `Database::collect_garbage` calls.
#[test]
fn advance_growth_finishes_what_the_inserts_left() {
    let h = HashIndex::new(1, 0, None);
    let vs: Vec<*mut Version> = (0..4000).map(version).collect();
    {
        // Pinned through the load: grace periods wait for us.
        let _hold = crossbeam_epoch::pin();
        for (i, &v) in vs.iter().enumerate() {
            // SAFETY: fresh, linked once.
            unsafe { h.insert(v, hash(i as u64)) };
        }
    }
    // Relaxed: read by this thread only.
    assert!(h.growing.load(Ordering::Relaxed), "the load left a growth under way");
    assert!(!h.advance_growth(std::time::Duration::from_secs(30)), "finished within the budget");
    assert!(matches!(*h.g.phase.lock(), Phase::Idle));
    assert!(h.buckets() >= 2048, "grew to {} buckets", h.buckets());
    // Every key found, on an unzipped chain: no foreign version on any.
    let g = crossbeam_epoch::pin();
    let mask = h.current().mask;
    let key = |v: &Version| u64::from_be_bytes(v.key_bytes()[..8].try_into().unwrap());
    for (i, &v) in vs.iter().enumerate() {
        let (mut p, mut found) = (h.head(hash(i as u64)), false);
        while !p.is_null() {
            found |= p == v;
            // SAFETY: linked and alive while the test holds them.
            let w = unsafe { &*p };
            assert_eq!(hash(key(w)) & mask, hash(i as u64) & mask, "a foreign version on key {i}'s chain");
            p = h.next(w);
        }
        assert!(found, "key {i}");
    }
    drop(g);
    for (i, v) in vs.into_iter().enumerate() {
        let _g = crossbeam_epoch::pin();
        // SAFETY: linked; freed right after, no reader left.
        assert!(unsafe { h.unlink(v, hash(i as u64)) }.is_some());
        // SAFETY: unlinked, and no reader is left.
        unsafe { Version::free(v) };
    }
}
