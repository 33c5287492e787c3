//! Model checks of the engine's lock-free pieces with `loom`: every
//! interleaving (up to a preemption bound) of a few threads running the
//! engine's own code, under the C++11 memory model.
//!
//! The pieces live in small source files that take their atomics from
//! `crate::sync` (`src/sync.rs` in the engine: `std` and crossbeam). This
//! test crate compiles those same files — not copies — with a `sync` module
//! of its own that maps the names to `loom`, so no `--cfg loom` and no
//! rebuild of the engine is needed: `cargo test -p multiverse-engine --test
//! loom_models` runs them, and `cargo test --workspace` includes them.
//!
//! On a failure the test prints how to replay the failing schedule
//! (`LOOM_CHECKPOINT_FILE`, see `replay_hint`); docs/CHECKER.md describes it.

use loom::sync::Arc;
use loom::thread;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// The `crate::sync` of the included files, on loom.
mod sync {
    pub(crate) mod atomic {
        pub(crate) use loom::sync::atomic::{fence, AtomicU64, Ordering};
    }

    /// The engine's backoff spins and yields; under loom every wait must
    /// yield to the scheduler, or a spinning thread would be explored for ever.
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
#[path = "../src/storage/word.rs"]
mod word;

#[allow(dead_code)]
#[path = "../src/txn/wait_for.rs"]
mod wait_for;

#[allow(dead_code)]
#[path = "../src/txn/state.rs"]
mod state;

#[allow(dead_code)]
#[path = "../src/protocol/mv/ssn/stamp.rs"]
mod ssn_stamp;

/// The paths the included files name each other by.
mod storage {
    pub(crate) use crate::word;
}

#[allow(dead_code)]
#[path = "../src/index/bucket.rs"]
mod bucket;

#[allow(dead_code)]
#[path = "../src/index/key_locks.rs"]
mod key_locks;

use state::{Peek, Resolved, TxnState};
use sync::atomic::{AtomicU64, Ordering};
use word::{txn_word, Claim, Hold, ReadLocked, RecordLock, Word, INFINITY};

/// Runs model `name` under loom with preemption bound `bound` (unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise); on a failure, prints how to
/// replay the failing schedule before passing the panic on.
fn check(name: &str, bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    let bound = *b.preemption_bound.get_or_insert(bound);
    let run = AssertUnwindSafe(|| {
        if std::env::var_os("LOOM_LOG").is_some() {
            // `loom::model` installs the logger LOOM_LOG asks for; it reads
            // every setting (the bound too) from the environment.
            loom::model(f)
        } else {
            b.check(f)
        }
    });
    if let Err(panic) = catch_unwind(run) {
        eprintln!("{}", replay_hint(name, bound));
        resume_unwind(panic);
    }
}

/// How to replay a failing schedule of model `name`.
fn replay_hint(name: &str, bound: usize) -> String {
    let env = format!("LOOM_MAX_PREEMPTIONS={bound} LOOM_CHECKPOINT_FILE=/tmp/loom-{name}.json");
    let cmd = format!("cargo test -p multiverse-engine --test loom_models -- --exact {name}");
    format!(
        "\nloom model `{name}` failed (preemption bound {bound}). To replay its failing schedule:\n\
         1. record it (the exploration is deterministic: it fails at the same schedule, which\n   \
            the file then holds):\n   \
            rm -f /tmp/loom-{name}.json; LOOM_CHECKPOINT_INTERVAL=1 {env} {cmd}\n\
         2. replay it first, with every step logged (LOOM_LOCATION=1 adds source locations):\n   \
            LOOM_LOG=trace {env} {cmd}\n\
         Delete the file afterwards: a model given it starts from that schedule.\n"
    )
}

// ---- End word: record locks (Hekaton VLDB 2011 section 4.1.1) -------------

/// A transaction id: generation 1 in slot `slot` (see `txn::table`).
fn id(slot: u64) -> u64 {
    1 << 12 | slot
}

/// The generation of id `id`, which names its wait-for word.
fn gen(id: u64) -> u64 {
    id >> 12
}

/// A writer's claim as `Transaction::claim` makes it: decide updatability
/// from the End word (here: INFINITY, a read-locked word, or the lock of a
/// writer that `aborted` says has aborted), count a wait-for dependency on
/// ourselves when others hold read locks, then [`word::write_lock`].
/// Returns true if we hold the write lock.
fn claim(end: &AtomicU64, me: u64, my_wf: &AtomicU64, aborted: impl Fn(u64) -> bool) -> bool {
    loop {
        // Acquire: as `visibility::updatable`.
        let raw = end.load(Ordering::Acquire);
        let expected = match Word::decode(raw) {
            Word::Ts(INFINITY) => raw,
            Word::Ts(_) => return false,
            Word::Txn(te) if aborted(te) => raw,
            Word::Txn(_) => return false, // first writer wins
        };
        let others = RecordLock::of(expected).expect("an updatable word is a lock").read_locks;
        let new = RecordLock { no_more_read_locks: false, read_locks: others, writer: me }.word();
        let waits = others > 0;
        if waits && wait_for::add(my_wf, gen(me)) != wait_for::WaitFor::Added {
            return false;
        }
        let got = word::write_lock(end, expected, new);
        if got != Claim::Won && waits {
            wait_for::release(my_wf, gen(me));
        }
        match got {
            Claim::Won => return true,
            Claim::Retry => continue,
            Claim::Lost => return false,
        }
    }
}

/// A reader's read lock as `mv::lock::read_lock` takes it: the first read
/// lock on a write-locked version counts a wait-for dependency of the
/// writer (`wfs[slot]` is the wait-for word of the transaction in `slot`).
/// `counts: false` is a broken variant whose dependency is never counted.
fn read_lock(end: &AtomicU64, me: u64, wfs: &[AtomicU64], counts: bool) -> ReadLocked {
    let wf = |w: u64| &wfs[(w & 0xfff) as usize];
    let hold = |w: u64| match counts.then(|| wait_for::add(wf(w), gen(w))) {
        None | Some(wait_for::WaitFor::Added) => Hold::Added,
        Some(wait_for::WaitFor::Refused) => Hold::Refused,
        Some(wait_for::WaitFor::Gone) => Hold::Gone,
    };
    let unhold = |w: u64| {
        if counts {
            wait_for::release(wf(w), gen(w))
        }
    };
    word::read_lock(end, me, hold, unhold)
}

/// Releases a read lock as `mv::lock::release_read_lock` does.
fn release_read_lock(end: &AtomicU64, wfs: &[AtomicU64], counts: bool) {
    if let Some(w) = word::release_read_lock(end) {
        if counts {
            wait_for::release(&wfs[(w & 0xfff) as usize], gen(w));
        }
    }
}

/// Wait-for words for slots 0..n, opened for generation 1.
fn wait_for_words(n: usize) -> Arc<Vec<AtomicU64>> {
    Arc::new(
        (0..n)
            .map(|_| {
                let w = AtomicU64::new(0);
                wait_for::open(&w, 1);
                w
            })
            .collect(),
    )
}

/// Two writers race to write-lock one End word while a reader read-locks
/// and releases it: exactly one writer wins, the word ends naming it with
/// no read lock, and no wait-for dependency is left counted.
#[test]
fn end_word_racing_writers_one_wins() {
    check("end_word_racing_writers_one_wins", 2, || {
        let end = Arc::new(AtomicU64::new(INFINITY));
        let wfs = wait_for_words(4);
        let won = Arc::new(AtomicU64::new(0));
        let writers: Vec<_> = [1, 2]
            .into_iter()
            .map(|s| {
                let (end, wfs, won) = (end.clone(), wfs.clone(), won.clone());
                thread::spawn(move || {
                    if claim(&end, id(s), &wfs[s as usize], |_| false) {
                        won.fetch_add(s, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        let reader = {
            let (end, wfs) = (end.clone(), wfs.clone());
            thread::spawn(move || {
                if read_lock(&end, id(3), &wfs, true) == ReadLocked::Yes {
                    release_read_lock(&end, &wfs, true);
                }
            })
        };
        for h in writers {
            h.join().unwrap();
        }
        reader.join().unwrap();
        let winner = won.load(Ordering::SeqCst);
        assert!(winner == 1 || winner == 2, "exactly one writer wins (sum of winners: {winner})");
        let l = RecordLock::of(end.load(Ordering::SeqCst)).expect("still a lock");
        assert_eq!((l.writer, l.read_locks), (id(winner), 0));
        for (s, w) in wfs.iter().enumerate() {
            assert_eq!(wait_for::count(w), 0, "slot {s}: a wait-for dependency was left counted");
        }
    });
}

/// A writer claims an End word and aborts (dropping its write lock) while a
/// second writer tries to claim it: the second may win only once it sees
/// the abort, and the abort's reset never removes the second writer's lock.
#[test]
fn end_word_abort_reset_keeps_a_later_writer() {
    check("end_word_abort_reset_keeps_a_later_writer", 3, || {
        let end = Arc::new(AtomicU64::new(INFINITY));
        let wfs = wait_for_words(3);
        let aborted = Arc::new(AtomicU64::new(0));
        let first = {
            let (end, wfs, aborted) = (end.clone(), wfs.clone(), aborted.clone());
            thread::spawn(move || {
                if claim(&end, id(1), &wfs[1], |_| false) {
                    // Aborted first (the state store of `abort_with`), then
                    // the reset. Release: as `TxnTable::set_state`.
                    aborted.store(id(1), Ordering::Release);
                    word::release_write_lock(&end, id(1));
                }
            })
        };
        let second = {
            let (end, wfs, aborted) = (end.clone(), wfs.clone(), aborted.clone());
            // Acquire: as `TxnTable::peek`.
            thread::spawn(move || claim(&end, id(2), &wfs[2], |te| aborted.load(Ordering::Acquire) == te))
        };
        first.join().unwrap();
        let second_won = second.join().unwrap();
        let w = end.load(Ordering::SeqCst);
        if second_won {
            assert_eq!(word::writer_of_end(w), Some(id(2)), "the abort's reset removed a later writer's lock");
        } else {
            assert_eq!(w, INFINITY, "the aborted writer's lock was reset");
        }
    });
}

/// MV/L's wait-for protocol (section 4.2) on one version: a writer
/// write-locks it, sets NoMoreWaitFors and waits until its WaitForCounter
/// is zero, then stamps the End word; two readers read-lock it meanwhile
/// (the first on a write-locked version holds the writer up, the last to
/// release sets NoMoreReadLocks and lets it go). When the writer passes its
/// wait no reader holds a lock, and none gets one afterwards.
fn mv_lock_writer_waits_out_readers(name: &str, counts: bool) {
    check(name, 2, move || {
        let end = Arc::new(AtomicU64::new(INFINITY));
        let wfs = wait_for_words(4);
        let writer = {
            let (end, wfs) = (end.clone(), wfs.clone());
            thread::spawn(move || {
                assert!(claim(&end, id(1), &wfs[1], |_| false), "the only writer gets the lock");
                wait_for::close(&wfs[1]);
                while wait_for::count(&wfs[1]) != 0 {
                    thread::yield_now();
                }
                // (Its debug assertion: no read lock is left.)
                word::finalize_end(&end, 100);
            })
        };
        let readers: Vec<_> = [2, 3]
            .into_iter()
            .map(|s| {
                let (end, wfs) = (end.clone(), wfs.clone());
                thread::spawn(move || match read_lock(&end, id(s), &wfs, counts) {
                    // (The release expects the lock still in the End word.)
                    ReadLocked::Yes => release_read_lock(&end, &wfs, counts),
                    ReadLocked::Own => unreachable!("a reader holds no write lock"),
                    ReadLocked::NotLatest | ReadLocked::Refused | ReadLocked::WaitFor => {}
                })
            })
            .collect();
        writer.join().unwrap();
        for h in readers {
            h.join().unwrap();
        }
        assert_eq!(end.load(Ordering::SeqCst), 100, "the writer's timestamp is the End word's last value");
    });
}

#[test]
fn mv_lock_writer_waits_out_readers_model() {
    mv_lock_writer_waits_out_readers("mv_lock_writer_waits_out_readers_model", true);
}

/// The models are live: with a reader that does not count its wait-for
/// dependency, the writer passes its wait while the reader holds its lock,
/// and the model finds that schedule.
#[test]
#[should_panic]
fn mv_lock_model_catches_an_uncounted_reader() {
    mv_lock_writer_waits_out_readers("mv_lock_model_catches_an_uncounted_reader", false);
}

// ---- The wait-for word (section 4.2) ---------------------------------------

/// An owner sets NoMoreWaitFors, waits for its counter to reach zero and
/// leaves its slot to a next occupant, while two adders with its id add and
/// release dependencies: an adder refused after NoMoreWaitFors never counts;
/// one counted holds the owner up until released; a late adder or releaser
/// with the old id never touches the next occupant's word.
#[test]
fn wait_for_word_no_more_and_slot_reuse() {
    check("wait_for_word_no_more_and_slot_reuse", 3, || {
        let w = Arc::new(AtomicU64::new(0));
        wait_for::open(&w, 1);
        let passed = Arc::new(AtomicU64::new(0));
        let adders: Vec<_> = (0..2)
            .map(|_| {
                let (w, passed) = (w.clone(), passed.clone());
                thread::spawn(move || {
                    if wait_for::add(&w, 1) == wait_for::WaitFor::Added {
                        assert_eq!(passed.load(Ordering::SeqCst), 0, "the owner passed a counted dependency");
                        wait_for::release(&w, 1);
                    }
                })
            })
            .collect();
        wait_for::close(&w);
        while wait_for::count(&w) != 0 {
            thread::yield_now();
        }
        passed.store(1, Ordering::SeqCst);
        wait_for::open(&w, 2);
        for h in adders {
            h.join().unwrap();
        }
        assert_eq!(w.load(Ordering::SeqCst), 2 << wait_for::GEN_SHIFT, "the next occupant's word is untouched");
    });
}

// ---- Bucket lock counts (section 4.1.2) -------------------------------------

/// Two bucket lockers scan the chain under their lock, draw a commit stamp
/// and unlock, while an inserter links a version, checks the LockCount and
/// draws its own stamp: each locker sees the new version (with its link to
/// the old head), or the inserter sees its lock (and would wait for it), or
/// the locker had released it already — and then drew the smaller stamp,
/// so the insert is serialized after the scan (no phantom). The count never
/// goes negative and ends at zero; the head and the links survive every
/// lock change.
#[test]
fn bucket_lock_count_and_insert_see_each_other() {
    const OLD: u64 = 0x40;
    const NEW: u64 = 0x80;
    check("bucket_lock_count_and_insert_see_each_other", 2, || {
        let w = Arc::new(AtomicU64::new(OLD));
        let next = Arc::new(AtomicU64::new(0));
        // The commit clock (SeqCst `fetch_add`, as the engine's).
        let clock = Arc::new(AtomicU64::new(1));
        let inserter = {
            let (w, next, clock) = (w.clone(), next.clone(), clock.clone());
            thread::spawn(move || {
                // Relaxed: as `HashIndex::insert` (published by the CAS).
                bucket::link(&w, NEW, |h| next.store(h, Ordering::Relaxed));
                let saw_lock = bucket::locked(&w);
                (saw_lock, clock.fetch_add(1, Ordering::SeqCst))
            })
        };
        let lockers: Vec<_> = (0..2)
            .map(|_| {
                let (w, next, clock) = (w.clone(), next.clone(), clock.clone());
                thread::spawn(move || {
                    assert!(bucket::lock(&w));
                    let h = bucket::head(&w);
                    let saw = h == NEW;
                    if saw {
                        // Relaxed: ordered by the Acquire of `head`.
                        assert_eq!(next.load(Ordering::Relaxed), OLD, "a published version's link is seen");
                    } else {
                        assert_eq!(h, OLD);
                    }
                    let ts = clock.fetch_add(1, Ordering::SeqCst);
                    bucket::unlock(&w);
                    (saw, ts)
                })
            })
            .collect();
        let (saw_lock, insert_ts) = inserter.join().unwrap();
        for h in lockers {
            let (saw_insert, scan_ts) = h.join().unwrap();
            assert!(
                saw_insert || saw_lock || scan_ts < insert_ts,
                "a phantom: the locker missed the insert and the inserter the lock, yet commits after it"
            );
        }
        assert_eq!(w.load(Ordering::SeqCst), NEW, "LockCount back at zero, the new head kept");
    });
}

/// The index grows while a bucket locker and an inserter race: the grower
/// moves the chain out of the lock word into a word of the next array
/// (`bucket::move_out`, keeping the LockCount), the inserter links into
/// whichever word holds the chain when it gets there and then checks the
/// count, the locker locks, orders (`bucket::order_after_lock`) and reads
/// the chain wherever it is. The lock word and the chain may now be two
/// words: the SeqCst fences make one of them see the other, as the single
/// word did (or the locker had released its lock, and drew the smaller
/// stamp). The count survives the move and ends at zero.
#[test]
fn bucket_lock_and_insert_see_each_other_across_a_move() {
    const OLD: u64 = 0x40;
    const NEW: u64 = 0x80;
    check("bucket_lock_and_insert_see_each_other_across_a_move", 2, || {
        // The lock word (first array) and the chain's word in the next one.
        let w0 = Arc::new(AtomicU64::new(OLD));
        let w1 = Arc::new(AtomicU64::new(0));
        let next = Arc::new(AtomicU64::new(0));
        // The commit clock (SeqCst `fetch_add`, as the engine's).
        let clock = Arc::new(AtomicU64::new(1));
        let head = |w0: &AtomicU64, w1: &AtomicU64| {
            // Acquire: as `HashIndex::home`.
            let cur = w0.load(Ordering::Acquire);
            if bucket::moved(cur) {
                // Acquire: as above.
                w1.load(Ordering::Acquire) & bucket::PTR_MASK
            } else {
                cur & bucket::PTR_MASK
            }
        };
        let grower = {
            let (w0, w1) = (w0.clone(), w1.clone());
            // Relaxed: as `HashIndex::migrate` (published by the CAS).
            thread::spawn(move || bucket::move_out(&w0, |h| w1.store(h, Ordering::Relaxed)))
        };
        let inserter = {
            let (w0, w1, next, clock) = (w0.clone(), w1.clone(), next.clone(), clock.clone());
            thread::spawn(move || {
                // Relaxed: as `HashIndex::insert`.
                if !bucket::link(&w0, NEW, |h| next.store(h, Ordering::Relaxed)) {
                    // The chain moved: link in the next array (never moves here).
                    assert!(bucket::link(&w1, NEW, |h| next.store(h, Ordering::Relaxed)));
                }
                let saw_lock = bucket::locked(&w0);
                (saw_lock, clock.fetch_add(1, Ordering::SeqCst))
            })
        };
        let locker = {
            let (w0, w1, clock) = (w0.clone(), w1.clone(), clock.clone());
            thread::spawn(move || {
                assert!(bucket::lock(&w0));
                bucket::order_after_lock(&w0);
                let saw = head(&w0, &w1) == NEW;
                let ts = clock.fetch_add(1, Ordering::SeqCst);
                bucket::unlock(&w0);
                (saw, ts)
            })
        };
        grower.join().unwrap();
        let (saw_lock, insert_ts) = inserter.join().unwrap();
        let (saw_insert, scan_ts) = locker.join().unwrap();
        assert!(
            saw_lock || saw_insert || scan_ts < insert_ts,
            "a phantom: the locker missed the insert and the inserter the lock, yet commits after it"
        );
        assert_eq!(w0.load(Ordering::SeqCst), bucket::MOVED, "moved, LockCount back at zero");
        assert_eq!(head(&w0, &w1), NEW, "the insert is in the chain, wherever it went");
        // Relaxed: ordered by the Acquire above.
        assert_eq!(next.load(Ordering::Relaxed), OLD, "behind it the old chain");
    });
}

// ---- Begin and End words vs a reader (section 2.5, Tables 1 and 2) ---------

/// Visibility of a version whose Begin word resolved to `r` at read time
/// `rt`, as `visibility::visible_at` decides it (a Preparing creator's
/// version is read speculatively; here the creator always commits).
fn begin_visible(r: Resolved, rt: u64) -> bool {
    match r {
        Resolved::Ts(b) => b != INFINITY && b < rt,
        Resolved::Other(_, Peek::Committed(ts) | Peek::Preparing(ts)) => ts < rt,
        Resolved::Other(_, Peek::Active | Peek::Aborted) => false,
        Resolved::Own | Resolved::Other(_, Peek::Gone) => unreachable!(),
    }
}

/// The same for an End word: a version ended by a transaction that commits
/// at `ts` is visible before `ts` (ignored speculatively while Preparing).
fn end_visible(r: Resolved, rt: u64) -> bool {
    match r {
        Resolved::Ts(e) => rt < e,
        Resolved::Other(_, Peek::Committed(ts) | Peek::Preparing(ts)) => rt < ts,
        Resolved::Other(_, Peek::Active | Peek::Aborted) => true,
        Resolved::Own | Resolved::Other(_, Peek::Gone) => unreachable!(),
    }
}

/// A transaction replaces version V1 by V2 and commits — pending state,
/// end timestamp from the clock, Preparing, Committed, postprocessing of
/// V2's Begin and V1's End word, its id retired — while a read-committed
/// reader reads the key at "now": its clock reading, then V2's Begin and
/// V1's End word, resolved through the writer's state. It sees exactly one
/// of the two versions, the one the writer's timestamp says; a writer it
/// finds Active draws its timestamp after the reading (the SeqCst pairing of
/// `set_pending` and the clock); a writer it finds gone has left
/// timestamps in the words.
#[test]
fn begin_end_words_commit_vs_reader() {
    check("begin_end_words_commit_vs_reader", 2, || {
        let writer_id = id(1);
        let (id_word, st) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        state::publish(&id_word, &st, writer_id);
        let clock = Arc::new(AtomicU64::new(10));
        // V2's Begin word and V1's End word, both naming the writer.
        let begin2 = Arc::new(AtomicU64::new(txn_word(writer_id)));
        let end1 = Arc::new(AtomicU64::new(txn_word(writer_id)));
        let writer = {
            let (id_word, st, clock, begin2, end1) =
                (id_word.clone(), st.clone(), clock.clone(), begin2.clone(), end1.clone());
            thread::spawn(move || {
                state::set_pending(&st);
                let ts = clock.fetch_add(2, Ordering::SeqCst);
                state::set(&st, TxnState::Preparing, ts);
                state::set(&st, TxnState::Committed, ts);
                word::finalize_begin(&begin2, ts);
                word::finalize_end(&end1, ts);
                state::retire(&id_word);
                ts
            })
        };
        let reader = thread::spawn(move || {
            // Read committed's "now": odd, between stamps.
            let rt = clock.load(Ordering::SeqCst) - 1;
            let peek = |t| state::peek(&id_word, &st, t);
            let r2 = state::resolve(&begin2, id(2), peek);
            let r1 = state::resolve(&end1, id(2), peek);
            (rt, r2, r1)
        });
        let ts = writer.join().unwrap();
        let (rt, r2, r1) = reader.join().unwrap();
        for r in [r1, r2] {
            match r {
                Resolved::Ts(t) | Resolved::Other(_, Peek::Committed(t) | Peek::Preparing(t)) => {
                    assert_eq!(t, ts, "a word resolves to the writer's own timestamp")
                }
                Resolved::Other(_, Peek::Active) => assert!(ts > rt, "found Active, yet drew {ts} before {rt}"),
                other => panic!("unexpected {other:?}"),
            }
        }
        let (v2, v1) = (begin_visible(r2, rt), end_visible(r1, rt));
        assert!(v1 != v2, "the reader sees {} versions of the key (rt {rt}, ts {ts})", v1 as u8 + v2 as u8);
        assert_eq!(v2, ts < rt);
    });
}

// ---- SSN's published π (section 5.3) ------------------------------------------

/// Section 5.3's handshake on a slot's published π: two writers push
/// values into it while its owner locks it for its exclusion-window test.
/// A push that did not find the word locked is in what the owner took.
#[test]
fn ssn_pi_push_vs_owner_lock() {
    check("ssn_pi_push_vs_owner_lock", 3, || {
        let w = Arc::new(AtomicU64::new(ssn_stamp::NONE));
        let pushers: Vec<_> = [10, 12]
            .into_iter()
            .map(|v| {
                let w = w.clone();
                thread::spawn(move || (v, ssn_stamp::lower_pi(&w, v)))
            })
            .collect();
        let took = ssn_stamp::lock_pi(&w);
        for h in pushers {
            let (v, r) = h.join().unwrap();
            if r != ssn_stamp::Push::Locked {
                assert!(took <= v, "a push of {v} ({r:?}) missed by the owner, who took {took}");
            }
        }
        assert_eq!(w.load(Ordering::SeqCst) & ssn_stamp::LOCKED, ssn_stamp::LOCKED);
    });
}

// ---- Key locks of the single-version locking protocols (section 5) --------

/// Takes `w` in `mode`, yielding to the model's scheduler between tries
/// (as `lock_1v::wait` waits, an upgrade marking the word);
/// `upgrade` from our shared lock.
fn take(w: &AtomicU64, mode: key_locks::LockMode, upgrade: bool) {
    let mut marked = false;
    loop {
        if mode == key_locks::LockMode::Exclusive && upgrade && !marked {
            marked = key_locks::announce_writer(w);
        }
        let got = match mode {
            key_locks::LockMode::Shared => key_locks::try_shared(w),
            key_locks::LockMode::Exclusive => key_locks::try_exclusive(w, upgrade),
        };
        if got {
            return;
        }
        thread::yield_now();
    }
}

/// A row guarded by a key lock: an exclusive holder writes it, a shared one
/// reads it, through loom's `UnsafeCell`, which fails the model on any
/// access not ordered after the previous holder's (a lock whose Acquire
/// or Release were too weak, or that let two writers in). Meanwhile an
/// inserter rewrites the word's low bits (a bucket's chain head), as
/// inserts into a hash bucket do under a held lock: the head survives and
/// the lock bits end at zero.
#[test]
fn key_lock_orders_holders_and_keeps_the_head() {
    use key_locks::LockMode::{Exclusive, Shared};
    check("key_lock_orders_holders_and_keeps_the_head", 2, || {
        let w = Arc::new(AtomicU64::new(0x40));
        let row = Arc::new(loom::cell::UnsafeCell::new(0u64));
        let writer = {
            let (w, row) = (w.clone(), row.clone());
            thread::spawn(move || {
                take(&w, Exclusive, false);
                // SAFETY: the exclusive lock excludes every other access.
                row.with_mut(|p| unsafe { *p += 1 });
                key_locks::unlock(&w, Exclusive);
            })
        };
        let upgrader = {
            let (w, row) = (w.clone(), row.clone());
            thread::spawn(move || {
                take(&w, Shared, false);
                // SAFETY: shared: only readers meanwhile.
                let before = row.with(|p| unsafe { *p });
                // As a waiting upgrade would: mark the word first.
                let marked = key_locks::announce_writer(&w);
                if key_locks::try_exclusive(&w, true) {
                    // SAFETY: upgraded: alone.
                    row.with_mut(|p| unsafe { *p += 10 });
                    key_locks::unlock(&w, Exclusive);
                } else {
                    if marked {
                        key_locks::withdraw_writer(&w);
                    }
                    key_locks::unlock(&w, Shared);
                }
                before
            })
        };
        let inserter = {
            let w = w.clone();
            thread::spawn(move || {
                // Relaxed: as a bucket insert's CAS of the head (the lock
                // bits are kept, whatever they are).
                let _ =
                    w.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some((x & key_locks::LOCK_BITS) | 0x80));
            })
        };
        writer.join().unwrap();
        let before = upgrader.join().unwrap();
        inserter.join().unwrap();
        assert!(before <= 1, "a reader saw a value nobody wrote");
        // SAFETY: every thread has been joined.
        let v = row.with(|p| unsafe { *p });
        assert!(v == 1 || v == 11, "a write was lost: {v}");
        assert_eq!(w.load(Ordering::SeqCst), 0x80, "lock bits back at zero, the new head kept");
    });
}

/// Two readers of a row both wait to upgrade (a deadlock), each having
/// marked the word; the victim withdraws its mark, releases its shared
/// lock and reads again at once. The survivor's mark keeps that retry out
/// until the survivor has upgraded, written and released, so the retry
/// reads the survivor's write. (With one mark bit for both, the victim's
/// withdrawal cleared the survivor's mark too, and the retry could read
/// first: the same deadlock again.)
#[test]
fn key_lock_victims_retry_waits_for_the_surviving_upgrader() {
    use key_locks::LockMode::{Exclusive, Shared};
    check("key_lock_victims_retry_waits_for_the_surviving_upgrader", 3, || {
        let w = Arc::new(AtomicU64::new(0));
        let row = Arc::new(loom::cell::UnsafeCell::new(0u64));
        assert!(key_locks::try_shared(&w) && key_locks::try_shared(&w), "two readers");
        assert!(key_locks::announce_writer(&w) && key_locks::announce_writer(&w), "both wait to upgrade");
        let survivor = {
            let (w, row) = (w.clone(), row.clone());
            thread::spawn(move || {
                // Marked already: waits for the victim's shared lock to go.
                while !key_locks::try_exclusive(&w, true) {
                    thread::yield_now();
                }
                // SAFETY: upgraded: alone.
                row.with_mut(|p| unsafe { *p = 1 });
                key_locks::unlock(&w, Exclusive);
            })
        };
        // The victim.
        key_locks::withdraw_writer(&w);
        key_locks::unlock(&w, Shared);
        take(&w, Shared, false);
        // SAFETY: shared: only readers meanwhile.
        let seen = row.with(|p| unsafe { *p });
        key_locks::unlock(&w, Shared);
        survivor.join().unwrap();
        assert_eq!(seen, 1, "the victim's retry read before the survivor upgraded");
        assert_eq!(w.load(Ordering::SeqCst), 0, "no lock bit and no mark left");
    });
}
