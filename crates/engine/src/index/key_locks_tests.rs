//! Unit and randomized tests of [`super::key_locks`] (kept apart so that the
//! loom models can include `key_locks.rs` alone).

use super::key_locks::*;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

#[test]
fn modes_exclude_each_other() {
    let t = KeyLocks::new(100);
    assert_eq!(t.len(), 128);
    let w = t.lock_of(7);
    assert!(try_shared(w) && try_shared(w));
    assert!(!try_exclusive(w, true), "two shared holders: no upgrade");
    unlock(w, LockMode::Shared);
    assert!(looks_free(w, LockMode::Exclusive, true));
    assert!(try_exclusive(w, true), "the sole shared holder upgrades");
    assert!(!try_shared(w) && !try_exclusive(w, false));
    unlock(w, LockMode::Exclusive);
    assert!(try_exclusive(w, false));
    unlock(w, LockMode::Exclusive);
    assert_eq!(w.load(Ordering::Relaxed), 0);
}

/// A waiting writer's mark keeps new readers out, not the holders; taking
/// X clears it, releasing X keeps another writer's mark, and withdrawing
/// it lets readers in again.
#[test]
fn a_waiting_writer_keeps_new_readers_out() {
    let w = AtomicU64::new(0x42);
    assert!(try_shared(&w), "a reader holds it");
    announce_writer(&w);
    assert!(!try_shared(&w) && !looks_free(&w, LockMode::Shared, false), "a new reader waits");
    assert!(looks_free(&w, LockMode::Exclusive, true) && try_exclusive(&w, true), "the holder upgrades past the mark");
    assert!(!try_shared(&w));
    announce_writer(&w); // another writer waits
    unlock(&w, LockMode::Exclusive);
    assert!(!try_shared(&w), "its mark survives the release");
    assert!(try_exclusive(&w, false), "and it takes X, clearing the mark");
    unlock(&w, LockMode::Exclusive);
    assert!(try_shared(&w), "no mark: readers enter");
    announce_writer(&w);
    withdraw_writer(&w);
    assert!(try_shared(&w), "a withdrawn mark lets readers in");
    unlock(&w, LockMode::Shared);
    unlock(&w, LockMode::Shared);
    assert_eq!(w.load(Ordering::Relaxed), 0x42, "the low bits are kept");
}

/// The low bits (a bucket's chain head) survive every lock change.
#[test]
fn low_bits_are_kept() {
    let w = AtomicU64::new(0x1234_5678);
    assert!(try_shared(&w) && try_exclusive(&w, true));
    w.fetch_add(1, Ordering::Relaxed); // an insert changes the head meanwhile
    unlock(&w, LockMode::Exclusive);
    assert_eq!(w.load(Ordering::Relaxed), 0x1234_5679);
}

/// Randomized: threads take one lock shared or exclusive at random (and
/// mark it as wanted by a writer now and then) and check that an exclusive
/// holder is alone and shared holders never meet one.
#[test]
fn concurrent_holders_respect_the_modes() {
    // Another thread rewrites the low bits all along, as inserts into
    // a bucket do.
    let w = AtomicU64::new(0);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (readers, writers) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let _ = w.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| {
                    Some((x & !(ONE - 1)) | ((x + 1) & (ONE - 1)))
                });
            }
        });
        let workers: Vec<_> = (0..4u64)
            .map(|th| {
                let (w, readers, writers) = (&w, &readers, &writers);
                s.spawn(move || {
                    let mut x = th.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                    for _ in 0..20_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        if x % 3 == 0 {
                            let up = x % 2 == 0;
                            if up {
                                while !try_shared(w) {
                                    // A writer's mark may keep us out: the
                                    // test's writers do not wait for it.
                                    withdraw_writer(w);
                                    std::hint::spin_loop();
                                }
                            }
                            if !try_exclusive(w, up) {
                                if up {
                                    unlock(w, LockMode::Shared);
                                }
                                // As a waiting writer would, now and then.
                                if x % 5 == 0 {
                                    announce_writer(w);
                                } else {
                                    withdraw_writer(w);
                                }
                                continue;
                            }
                            assert_eq!(writers.fetch_add(1, Ordering::SeqCst), 0);
                            assert_eq!(readers.load(Ordering::SeqCst), 0);
                            writers.fetch_sub(1, Ordering::SeqCst);
                            unlock(w, LockMode::Exclusive);
                        } else if try_shared(w) {
                            readers.fetch_add(1, Ordering::SeqCst);
                            assert_eq!(writers.load(Ordering::SeqCst), 0);
                            readers.fetch_sub(1, Ordering::SeqCst);
                            unlock(w, LockMode::Shared);
                        }
                    }
                })
            })
            .collect();
        for h in workers {
            h.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    withdraw_writer(&w);
    assert_eq!(w.load(Ordering::Relaxed) & LOCK_BITS, 0);
}
