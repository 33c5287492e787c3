//! Model checks of the B+tree's node version lock
//! (`src/index/btree/lock.rs`, optimistic lock coupling) with `loom`: every
//! interleaving (up to a preemption bound) of a writer and an optimistic
//! reader, or of two writers, running the engine's own lock code under the
//! C++11 memory model.
//!
//! As in `loom_models.rs` (which describes the scheme and how to replay a
//! failing schedule), this test crate compiles the engine's source file
//! itself with a `sync` module of its own that maps `crate::sync` to loom:
//! `cargo test -p multiverse-engine --test loom_btree`. A file of its own,
//! not a section of `loom_models.rs`, only to keep files short.

use loom::sync::Arc;
use loom::thread;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// The `crate::sync` of the included file, on loom.
mod sync {
    pub(crate) mod atomic {
        pub(crate) use loom::sync::atomic::{fence, AtomicU64, Ordering};
    }

    /// Under loom every wait must yield to the scheduler, or a spinning
    /// thread would be explored for ever.
    pub(crate) struct Backoff;

    impl Backoff {
        pub(crate) fn new() -> Backoff {
            Backoff
        }
        pub(crate) fn snooze(&self) {
            loom::thread::yield_now();
        }
    }
}

#[allow(dead_code)]
#[path = "../src/index/btree/lock.rs"]
mod olc_lock;

use sync::atomic::{AtomicU64, Ordering};

/// Runs model `name` under loom with preemption bound `bound` (unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise); on a failure, says how to
/// replay the failing schedule before passing the panic on.
fn check(name: &str, bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    let bound = *b.preemption_bound.get_or_insert(bound);
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| b.check(f))) {
        eprintln!(
            "\nloom model `{name}` failed (preemption bound {bound}); replay it as tests/loom_models.rs \
             describes, with `--test loom_btree -- --exact {name}`"
        );
        resume_unwind(panic);
    }
}

// ---- B+tree node version lock (optimistic lock coupling) ------------------

/// A writer changes two fields of a node in two critical sections (to 1,1
/// then 2,2) while an optimistic reader reads both between its version
/// read and its validation: a read that validates saw one critical
/// section's whole result, never half of one (the lock's CAS, Release
/// fence and Release unlock against the reader's Acquire load and Acquire
/// fence). Without either fence of `lock.rs` the model fails.
#[test]
fn olc_validated_reader_sees_no_half_write() {
    check("olc_validated_reader_sees_no_half_write", 2, || {
        let node = Arc::new((olc_lock::VersionLock::new(), AtomicU64::new(0), AtomicU64::new(0)));
        let writer = {
            let node = node.clone();
            thread::spawn(move || {
                for x in 1..=2 {
                    node.0.lock().unwrap();
                    node.1.store(x, Ordering::Relaxed);
                    node.2.store(x, Ordering::Relaxed);
                    node.0.unlock();
                }
            })
        };
        if let Ok(v) = node.0.read() {
            let (a, b) = (node.1.load(Ordering::Relaxed), node.2.load(Ordering::Relaxed));
            if node.0.validate(v).is_ok() {
                assert_eq!(a, b, "a validated read saw half a write");
            }
        }
        writer.join().unwrap();
    });
}

/// The model above can fail: a reader that trusts its reads without
/// validating sees half a write in some interleaving.
#[test]
#[should_panic(expected = "an unvalidated read saw half a write")]
fn olc_model_catches_an_unvalidated_reader() {
    check("olc_model_catches_an_unvalidated_reader", 2, || {
        let node = Arc::new((olc_lock::VersionLock::new(), AtomicU64::new(0), AtomicU64::new(0)));
        let writer = {
            let node = node.clone();
            thread::spawn(move || {
                node.0.lock().unwrap();
                node.1.store(1, Ordering::Relaxed);
                node.2.store(1, Ordering::Relaxed);
                node.0.unlock();
            })
        };
        if node.0.read().is_ok() {
            let (a, b) = (node.1.load(Ordering::Relaxed), node.2.load(Ordering::Relaxed));
            assert_eq!(a, b, "an unvalidated read saw half a write");
        }
        writer.join().unwrap();
    });
}

/// Two writers, one taking the lock outright and one upgrading an
/// optimistic read (retrying on failure), increment a plain cell: loom
/// reports any overlap as a data race, and no increment is lost. The
/// version ends bumped once per critical section; a node unlocked as
/// obsolete then refuses readers and upgrades.
#[test]
fn olc_lock_is_exclusive_and_obsolete_is_final() {
    check("olc_lock_is_exclusive_and_obsolete_is_final", 2, || {
        let lock = Arc::new(olc_lock::VersionLock::new());
        let cell = Arc::new(loom::cell::UnsafeCell::new(0u64));
        let other = {
            let (lock, cell) = (lock.clone(), cell.clone());
            thread::spawn(move || {
                lock.lock().unwrap();
                // SAFETY: the write lock excludes every other access.
                cell.with_mut(|p| unsafe { *p += 1 });
                lock.unlock();
            })
        };
        loop {
            let v = lock.read().unwrap();
            if lock.upgrade(v).is_ok() {
                break;
            }
        }
        // SAFETY: as above.
        cell.with_mut(|p| unsafe { *p += 1 });
        lock.unlock();
        other.join().unwrap();
        // SAFETY: both writers are done.
        assert_eq!(cell.with(|p| unsafe { *p }), 2);
        let v = lock.read().unwrap();
        assert_eq!(v, 2 * 4, "two critical sections, two versions");
        lock.upgrade(v).unwrap();
        lock.unlock_obsolete();
        assert_eq!(lock.read(), Err(olc_lock::Restart));
        assert_eq!(lock.upgrade(v), Err(olc_lock::Restart));
        assert!(lock.validate(v).is_err());
    });
}
