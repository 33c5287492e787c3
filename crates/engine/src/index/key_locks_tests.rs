//! Unit and randomized tests of [`super::key_locks`] (kept apart so that the
//! loom models can include `key_locks.rs` alone).

use super::key_locks::*;
use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

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

/// A waiting upgrader's mark keeps new readers out, not the holders;
/// taking X takes it away, and withdrawing it lets readers in again.
#[test]
fn a_waiting_upgrader_keeps_new_readers_out() {
    let w = AtomicU64::new(0x42);
    assert!(try_shared(&w), "a reader holds it");
    assert!(!upgrader_waiting(&w), "no upgrader yet");
    assert!(announce_writer(&w), "and waits to upgrade");
    assert!(upgrader_waiting(&w), "a second upgrader would see the first");
    assert!(!try_shared(&w) && !looks_free(&w, LockMode::Shared, false), "a new reader waits");
    assert!(looks_free(&w, LockMode::Exclusive, true) && try_exclusive(&w, true), "the holder upgrades past its mark");
    assert!(!try_shared(&w));
    unlock(&w, LockMode::Exclusive);
    assert!(try_shared(&w), "taking X took the mark: readers enter");
    assert!(announce_writer(&w));
    withdraw_writer(&w);
    assert!(try_shared(&w), "a withdrawn mark lets readers in");
    unlock(&w, LockMode::Shared);
    unlock(&w, LockMode::Shared);
    assert_eq!(w.load(Ordering::Relaxed), 0x42, "the low bits are kept");
}

/// The count of upgraders saturates: an upgrader that finds it full is
/// not counted (and withdraws nothing); the marks counted keep readers out
/// until the last is withdrawn.
#[test]
fn the_upgraders_count_saturates() {
    let w = AtomicU64::new(0);
    let n = MAX_UPGRADERS + 1;
    for _ in 0..n {
        assert!(try_shared(&w));
    }
    for _ in 0..MAX_UPGRADERS {
        assert!(announce_writer(&w));
    }
    assert!(!announce_writer(&w), "full: the last upgrader waits unmarked");
    for i in 0..MAX_UPGRADERS {
        assert!(!looks_free(&w, LockMode::Shared, false), "{} marks left", MAX_UPGRADERS - i);
        withdraw_writer(&w);
    }
    assert!(looks_free(&w, LockMode::Shared, false));
    for _ in 0..n {
        unlock(&w, LockMode::Shared);
    }
    assert_eq!(w.load(Ordering::Relaxed), 0);
}

/// Two shared holders both wait to upgrade (a deadlock) and both mark the
/// word; the victim withdraws its mark and releases its shared lock. The
/// survivor's mark must stay, or the victim's retry takes its shared lock
/// back before the survivor upgrades: the same deadlock again.
#[test]
fn one_upgraders_withdrawal_keeps_anothers_mark() {
    let w = AtomicU64::new(0x42);
    assert!(try_shared(&w) && try_shared(&w), "two readers");
    announce_writer(&w); // the survivor waits to upgrade
    announce_writer(&w); // and so does the victim
    withdraw_writer(&w); // the victim gives up
    unlock(&w, LockMode::Shared);
    assert!(!try_shared(&w), "the survivor's mark keeps the victim's retry out");
    assert!(!looks_free(&w, LockMode::Shared, false));
    assert!(try_exclusive(&w, true), "the survivor upgrades");
    assert!(!try_shared(&w));
    unlock(&w, LockMode::Exclusive);
    assert!(try_shared(&w), "no mark left: the retry reads");
    unlock(&w, LockMode::Shared);
    assert_eq!(w.load(Ordering::Relaxed), 0x42, "lock bits back at zero, the low bits kept");
}

/// The same race through 1V's wait (`wait_for_lock`), with threads: the
/// second of two upgraders finds the first one's mark and gives way at
/// once (a certain deadlock), releases and asks for its shared lock again
/// at once, while the survivor may be descheduled or looking only every
/// 50 µs. It must get it only after the survivor has upgraded and released.
#[test]
fn a_deadlock_victims_retry_waits_for_the_survivor() {
    use crate::protocol::lock_1v::{wait_for_lock, Waited};
    use crate::sync::atomic::AtomicBool;
    let rounds = 20 * std::env::var("MULTIVERSE_STRESS").ok().and_then(|s| s.parse().ok()).unwrap_or(1u32);
    let mut early = 0;
    for _ in 0..rounds {
        let w = AtomicU64::new(0);
        let upgraded = AtomicBool::new(false);
        assert!(try_shared(&w) && try_shared(&w), "two readers");
        std::thread::scope(|s| {
            s.spawn(|| {
                let got = wait_for_lock(&w, LockMode::Exclusive, true, None, || false, ());
                assert!(got == Waited::Got);
                // Relaxed: the lock's Release unlock publishes it.
                upgraded.store(true, Ordering::Relaxed);
                unlock(&w, LockMode::Exclusive);
            });
            // The survivor marks the word first (its thread may take a while
            // to run on a busy machine); then our upgrade finds its mark and
            // gives way at once, chosen by no detector.
            // Relaxed: a look at the word; the lock operations order the rest.
            while upgraders(w.load(Ordering::Relaxed)) == 0 {
                std::thread::yield_now();
            }
            let out = wait_for_lock(&w, LockMode::Exclusive, true, None, || false, ());
            assert!(out == Waited::Victim);
            unlock(&w, LockMode::Shared);
            // The retry, at once.
            while !try_shared(&w) {
                std::hint::spin_loop();
            }
            // Relaxed: after our Acquire of the lock.
            if !upgraded.load(Ordering::Relaxed) {
                early += 1;
            }
            unlock(&w, LockMode::Shared);
        });
        assert_eq!(w.load(Ordering::Relaxed), 0);
    }
    assert_eq!(early, 0, "of {rounds} retries, {early} took their shared lock back before the survivor upgraded");
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

/// Randomized: threads take one lock shared or exclusive at random (an
/// upgrade from shared marks the word while it tries, as a waiting
/// upgrader does) and check that an exclusive holder is alone and shared
/// holders never meet one; at the end no lock bit and no mark is left.
#[test]
fn concurrent_holders_respect_the_modes() {
    // Another thread rewrites the low bits all along, as inserts into
    // a bucket do.
    let w = AtomicU64::new(0);
    let stop = crate::sync::atomic::AtomicBool::new(false);
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
                            if up && !try_shared(w) {
                                continue;
                            }
                            // An upgrader marks the word while it tries a
                            // few times, then gives up (and withdraws).
                            let marked = up && announce_writer(w);
                            let got = (0..1 + x % 4).any(|_| try_exclusive(w, up));
                            if !got {
                                if marked {
                                    withdraw_writer(w);
                                }
                                if up {
                                    unlock(w, LockMode::Shared);
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
    assert_eq!(w.load(Ordering::Relaxed) & LOCK_BITS, 0);
}
