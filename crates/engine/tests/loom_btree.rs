//! Model checks of the B+tree's node version lock
//! (`src/index/btree/lock.rs`, optimistic lock coupling) with `loom`: every
//! interleaving (up to a preemption bound) of a writer and an optimistic
//! reader, or of two writers, running the engine's own lock code under the
//! C++11 memory model; and of the lock coupling itself, a descent against a
//! split in a two-level tree in miniature whose steps follow the tree's
//! (`BTree::descend`, the eager split), on the same lock code.
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

// ---- Lock coupling: a descent against a split ------------------------------

/// A two-level tree in miniature: an inner root over one or two leaves of
/// two key slots each, every field an atomic as in `src/index/btree/node.rs`
/// (0 is no key). It starts as one leaf holding 10 and 20.
struct Mini {
    root: olc_lock::VersionLock,
    /// Children of the root (1 or 2) and the separator between them.
    count: AtomicU64,
    sep: AtomicU64,
    child: [AtomicU64; 2],
    leaves: [(olc_lock::VersionLock, [AtomicU64; 2]); 2],
}

impl Mini {
    fn new() -> Mini {
        let leaf = |a, b| (olc_lock::VersionLock::new(), [AtomicU64::new(a), AtomicU64::new(b)]);
        Mini {
            root: olc_lock::VersionLock::new(),
            count: AtomicU64::new(1),
            sep: AtomicU64::new(0),
            child: [AtomicU64::new(0), AtomicU64::new(1)],
            leaves: [leaf(10, 20), leaf(0, 0)],
        }
    }

    /// The tree's split (`BTree::get_or_insert_with`'s eager split): the
    /// writer's optimistic reads of the parent and then the child are
    /// upgraded to their locks, parent first; the upper half moves to a new
    /// leaf, the parent gains the separator and the new child, and both are
    /// unlocked (their versions bumped).
    fn split(&self) {
        loop {
            let Ok(rv) = self.root.read() else { continue };
            let leaf = &self.leaves[0];
            let Ok(lv) = leaf.0.read() else { continue };
            if self.root.upgrade(rv).is_err() {
                continue;
            }
            if leaf.0.upgrade(lv).is_err() {
                self.root.unlock();
                continue;
            }
            let moved = leaf.1[1].load(Ordering::Relaxed);
            self.leaves[1].1[0].store(moved, Ordering::Relaxed);
            leaf.1[1].store(0, Ordering::Relaxed);
            self.sep.store(leaf.1[0].load(Ordering::Relaxed), Ordering::Relaxed);
            self.count.store(2, Ordering::Relaxed);
            leaf.0.unlock();
            self.root.unlock();
            return;
        }
    }

    /// `BTree::descend` and a lookup in the leaf reached, restarting on any
    /// failed validation: the child pointer is trusted only once the
    /// parent is validated after reading it, and the child's version only
    /// once the parent is validated again after reading that (`couple`:
    /// false leaves that second validation out).
    fn contains(&self, k: u64, couple: bool) -> bool {
        loop {
            let Ok(rv) = self.root.read() else { continue };
            let n = self.count.load(Ordering::Relaxed);
            let pos = usize::from(n == 2 && k > self.sep.load(Ordering::Relaxed));
            let c = self.child[pos].load(Ordering::Relaxed) as usize;
            if self.root.validate(rv).is_err() {
                continue;
            }
            let leaf = &self.leaves[c];
            let Ok(lv) = leaf.0.read() else { continue };
            if couple && self.root.validate(rv).is_err() {
                continue;
            }
            let found = leaf.1.iter().any(|s| s.load(Ordering::Relaxed) == k);
            if leaf.0.validate(lv).is_ok() {
                return found;
            }
        }
    }
}

/// A lookup of a key that is in the tree throughout (20 moves to the new
/// leaf in a split) finds it in every interleaving with the split: lock
/// coupling never lets a reader trust a child that a split emptied of
/// its key between the reader's step into it and its read of the child's
/// version.
#[test]
fn olc_lock_coupling_finds_keys_across_a_split() {
    check("olc_lock_coupling_finds_keys_across_a_split", 2, || {
        let t = Arc::new(Mini::new());
        let writer = {
            let t = t.clone();
            thread::spawn(move || t.split())
        };
        assert!(t.contains(20, true), "a key moved by a split was missed");
        assert!(t.contains(10, true), "a key kept by a split was missed");
        writer.join().unwrap();
        assert!(t.contains(20, true) && t.contains(10, true) && !t.contains(15, true));
    });
}

/// The model above can fail: without the second validation of the parent
/// (after reading the child's version), a reader that stepped into the
/// old leaf before the split and read its version after it trusts the
/// emptied slot and misses the key.
#[test]
#[should_panic(expected = "missed without coupling")]
fn olc_model_catches_a_descent_without_coupling() {
    check("olc_model_catches_a_descent_without_coupling", 2, || {
        let t = Arc::new(Mini::new());
        let writer = {
            let t = t.clone();
            thread::spawn(move || t.split())
        };
        assert!(t.contains(20, false), "a key moved by a split was missed without coupling");
        writer.join().unwrap();
    });
}
