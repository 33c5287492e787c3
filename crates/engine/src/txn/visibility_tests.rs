//! Row-by-row tests of the visibility rules (Hekaton VLDB 2011 section 2.5,
//! Tables 1 and 2; thesis Tables 4.1–4.3), of updatability (section 2.6) and
//! of commit dependencies (section 2.7).
//!
//! Transaction states are driven explicitly through the [`TxnTable`] API and
//! versions are hand-built with [`Version::alloc`], so every row of the tables
//! is reached deterministically. The last group drives whole transactions of a
//! [`Database`] against a hand-made "Preparing" transaction, which is the only
//! way to hold a writer in the Preparing state long enough to observe
//! speculative reads, speculative ignores and cascading aborts end to end.
//!
//! Conventions: the reader T reads at `RT = 20`; a version's committed begin
//! timestamp is 10 unless a test says otherwise.

use super::table::{Peek, TxnState, TxnTable, SLOT_BITS};
use super::visibility::{is_competing, updatable, visible_at, Me};
use crate::error::AbortReason;
use crate::key::Key;
use crate::storage::version::Version;
use crate::storage::word::{txn_word, INFINITY};
use crate::{Database, Error, Isolation, Options, TableId, TableSpec};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The clock read by read-committed checks (these tests pass explicit read times).
static TEST_CLOCK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1 << 40);

/// The reader's logical read time in the table-driven tests.
const RT: u64 = 20;

/// A hand-built version, freed when dropped.
struct V(NonNull<Version>);

impl V {
    /// A version with the given raw Begin and End words.
    fn new(begin: u64, end: u64) -> V {
        let v = Version::alloc(Key::from(1), 1, b"row", begin);
        // SAFETY: freshly allocated and not shared yet.
        unsafe { v.as_ref() }.end.store(end, Ordering::SeqCst);
        V(v)
    }

    fn get(&self) -> &Version {
        // SAFETY: alive until `drop`.
        unsafe { self.0.as_ref() }
    }
}

impl Drop for V {
    fn drop(&mut self) {
        // SAFETY: never published in an index; nobody else holds it.
        unsafe { Version::free(self.0.as_ptr()) }
    }
}

/// A transaction-table occupant driven by hand.
#[derive(Clone, Copy, Debug)]
struct Txn {
    slot: u32,
    id: u64,
}

impl Txn {
    fn word(self) -> u64 {
        txn_word(self.id)
    }
}

/// A transaction table plus helpers to drive its occupants.
struct Fx {
    tt: TxnTable,
}

impl Fx {
    fn new() -> Fx {
        Fx { tt: TxnTable::new(16) }
    }
    fn open(&self) -> Txn {
        let (slot, id) = self.tt.open().expect("a free slot");
        Txn { slot, id }
    }
    fn me(&self, t: Txn) -> Me<'_> {
        Me {
            table: &self.tt,
            slot: t.slot,
            id: t.id,
            clock: &TEST_CLOCK,
            now: std::cell::Cell::new(0),
            peer: 0,
            clash: std::cell::Cell::new(false),
        }
    }
    fn preparing(&self, t: Txn, ts: u64) {
        self.tt.set_state(t.slot, TxnState::Preparing, ts);
    }
    fn committed(&self, t: Txn, ts: u64) {
        self.tt.set_state(t.slot, TxnState::Committed, ts);
    }
    fn aborted(&self, t: Txn) {
        self.tt.set_state(t.slot, TxnState::Aborted, 0);
    }
    /// CommitDepCounter of `t`.
    fn deps(&self, t: Txn) -> u32 {
        self.tt.slot(t.slot).dep_counter.load(Ordering::SeqCst)
    }
    /// AbortNow of `t`.
    fn abort_now(&self, t: Txn) -> bool {
        self.tt.slot(t.slot).abort_now.load(Ordering::SeqCst)
    }
    fn vis(&self, v: &V, rt: u64, t: Txn) -> Option<u64> {
        visible_at(v.get(), rt, &self.me(t))
    }
}

/// Runs `check` while a helper thread, after a short delay, stores `value`
/// into `word`: exercises the "Terminated or not found: reread the word"
/// rows, where the reader must spin until the word is finalised.
fn with_late_store<R>(word: &std::sync::atomic::AtomicU64, value: u64, check: impl FnOnce() -> R) -> R {
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            word.store(value, Ordering::SeqCst);
        });
        check()
    })
}

// ---------------------------------------------------------------------------
// Table 4.1 row 1: both words hold timestamps
// ---------------------------------------------------------------------------

/// Begin and End hold timestamps: visible iff Begin < RT < End (strictly).
#[test]
fn timestamps_visible_iff_begin_lt_rt_lt_end() {
    let fx = Fx::new();
    let t = fx.open();
    let v = V::new(10, 30);
    assert_eq!(fx.vis(&v, 20, t), Some(10));
    assert_eq!(fx.vis(&v, 11, t), Some(10));
    assert_eq!(fx.vis(&v, 29, t), Some(10));
    assert_eq!(fx.vis(&v, 5, t), None, "read before the version began");
    assert_eq!(fx.vis(&v, 10, t), None, "RT equal to Begin is not after it");
    assert_eq!(fx.vis(&v, 30, t), None, "RT equal to End is not before it");
    assert_eq!(fx.vis(&v, 40, t), None, "read after the version ended");
    let latest = V::new(10, INFINITY);
    assert_eq!(fx.vis(&latest, 1 << 40, t), Some(10), "End = infinity never ends");
    assert_eq!(fx.deps(t), 0, "plain timestamps never take a dependency");
}

/// Begin = infinity marks the garbage version of an aborted transaction
/// (section 2.4, postprocessing): never visible.
#[test]
fn begin_infinity_garbage_version_never_visible() {
    let fx = Fx::new();
    let t = fx.open();
    let v = V::new(INFINITY, INFINITY);
    for rt in [1, RT, INFINITY - 1] {
        assert_eq!(fx.vis(&v, rt, t), None);
    }
}

// ---------------------------------------------------------------------------
// Table 1 (thesis Table 4.2): Begin word holds the id of TB
// ---------------------------------------------------------------------------

/// Table 1, Active, TB = T, End = infinity: T sees its own latest version
/// (its Begin counts as 0, so even a tiny read time sees it).
#[test]
fn table1_active_own_version_with_end_infinity_is_visible() {
    let fx = Fx::new();
    let t = fx.open();
    let v = V::new(t.word(), INFINITY);
    assert_eq!(fx.vis(&v, RT, t), Some(0));
    assert_eq!(fx.vis(&v, 1, t), Some(0));
    assert_eq!(fx.deps(t), 0);
}

/// Table 1, Active, TB = T, End = T's own id: T replaced its own version
/// (updated it again or deleted it); only the latest is visible to T.
#[test]
fn table1_active_own_version_replaced_by_self_is_invisible() {
    let fx = Fx::new();
    let t = fx.open();
    let v = V::new(t.word(), t.word());
    assert_eq!(fx.vis(&v, RT, t), None);
    assert_eq!(fx.deps(t), 0);
}

/// Table 1, Active, TB ≠ T: an uncommitted version of another transaction is
/// invisible, whatever the read time.
#[test]
fn table1_active_other_creator_is_invisible() {
    let fx = Fx::new();
    let (t, tb) = (fx.open(), fx.open());
    let v = V::new(tb.word(), INFINITY);
    assert_eq!(fx.vis(&v, RT, t), None);
    assert_eq!(fx.vis(&v, INFINITY - 1, t), None);
    assert_eq!(fx.deps(t), 0);
    // The creator itself does see it.
    assert_eq!(fx.vis(&v, RT, tb), Some(0));
}

/// Table 1, Preparing, TS < RT: T speculatively reads V (using TS as its
/// begin time) and registers a commit dependency on TB; TB's commit report
/// brings CommitDepCounter back to zero (section 2.7).
#[test]
fn table1_preparing_ts_below_rt_speculative_read_registers_dependency() {
    let fx = Fx::new();
    let (t, tb) = (fx.open(), fx.open());
    fx.preparing(tb, 10);
    let v = V::new(tb.word(), INFINITY);
    assert_eq!(fx.vis(&v, RT, t), Some(10), "speculatively read with TS as Begin");
    assert_eq!(fx.deps(t), 1, "speculative read registers a commit dependency");
    assert!(!fx.abort_now(t));
    fx.committed(tb, 10);
    fx.tt.report_outcome(tb.slot, true);
    assert_eq!(fx.deps(t), 0, "TB's commit resolves the dependency");
    assert!(!fx.abort_now(t));
}

/// Table 1, Preparing, TS < RT, and TB then aborts: the dependent's AbortNow
/// is set (cascading abort, section 2.7) and its counter is not released.
#[test]
fn table1_preparing_speculative_read_then_creator_abort_sets_abort_now() {
    let fx = Fx::new();
    let (t, tb) = (fx.open(), fx.open());
    fx.preparing(tb, 10);
    let v = V::new(tb.word(), INFINITY);
    assert_eq!(fx.vis(&v, RT, t), Some(10));
    assert_eq!(fx.deps(t), 1);
    fx.aborted(tb);
    fx.tt.report_outcome(tb.slot, false);
    assert!(fx.abort_now(t), "TB's abort tells T to abort");
    assert_eq!(fx.deps(t), 1, "an abort report does not decrement the counter");
}

/// Table 1, Preparing, TS > RT: V will begin after RT whatever TB's outcome,
/// so it is invisible and no dependency is taken.
#[test]
fn table1_preparing_ts_above_rt_is_invisible_without_dependency() {
    let fx = Fx::new();
    let (t, tb) = (fx.open(), fx.open());
    fx.preparing(tb, 30);
    let v = V::new(tb.word(), INFINITY);
    assert_eq!(fx.vis(&v, RT, t), None);
    assert_eq!(fx.deps(t), 0);
    fx.aborted(tb);
    fx.tt.report_outcome(tb.slot, false);
    assert!(!fx.abort_now(t), "T never registered with TB");
}

/// Table 1, Preparing, TS < RT, but the End test fails (V ended before RT):
/// V is invisible and the dependency on TB is not taken, since V is not read.
#[test]
fn table1_preparing_creator_but_end_before_rt_takes_no_dependency() {
    let fx = Fx::new();
    let (t, tb) = (fx.open(), fx.open());
    fx.preparing(tb, 10);
    let v = V::new(tb.word(), 15);
    assert_eq!(fx.vis(&v, RT, t), None);
    assert_eq!(fx.deps(t), 0);
}

/// Table 1, Committed: TB's end timestamp TS is V's begin time; visible iff
/// TS < RT (and the End test passes); no dependency is needed.
#[test]
fn table1_committed_creator_uses_its_end_timestamp() {
    let fx = Fx::new();
    let (t, early, late) = (fx.open(), fx.open(), fx.open());
    fx.committed(early, 10);
    fx.committed(late, 30);
    let a = V::new(early.word(), INFINITY);
    let b = V::new(late.word(), INFINITY);
    let c = V::new(early.word(), 15);
    assert_eq!(fx.vis(&a, RT, t), Some(10));
    assert_eq!(fx.vis(&b, RT, t), None, "committed after RT");
    assert_eq!(fx.vis(&c, RT, t), None, "committed before RT but also ended before RT");
    assert_eq!(fx.vis(&c, 12, t), Some(10));
    assert_eq!(fx.deps(t), 0);
}

/// Table 1, Aborted: V is a garbage version; ignored at every read time.
#[test]
fn table1_aborted_creator_version_is_ignored() {
    let fx = Fx::new();
    let (t, tb) = (fx.open(), fx.open());
    fx.preparing(tb, 10);
    fx.aborted(tb);
    let v = V::new(tb.word(), INFINITY);
    assert_eq!(fx.vis(&v, RT, t), None);
    assert_eq!(fx.vis(&v, INFINITY - 1, t), None);
    assert_eq!(fx.deps(t), 0);
}

/// Table 1, Terminated: TB has finished postprocessing between T reading the
/// Begin word and checking TB, so T must reread the word (which TB has
/// finalised). The word is finalised late, so T has to spin on the reread.
#[test]
fn table1_terminated_creator_rereads_finalised_begin_word() {
    let fx = Fx::new();
    let (t, tb) = (fx.open(), fx.open());
    fx.committed(tb, 10);
    let v = V::new(tb.word(), INFINITY);
    fx.tt.close(tb.slot);
    assert_eq!(fx.tt.peek(tb.id), Peek::Gone);
    let r = with_late_store(&v.get().begin, 10, || fx.vis(&v, RT, t));
    assert_eq!(r, Some(10));
    // Same row for a terminated creator that aborted: the word becomes infinity.
    let tb2 = fx.open();
    let w = V::new(tb2.word(), INFINITY);
    fx.aborted(tb2);
    fx.tt.close(tb2.slot);
    let r = with_late_store(&w.get().begin, INFINITY, || fx.vis(&w, RT, t));
    assert_eq!(r, None);
    assert_eq!(fx.deps(t), 0);
}

/// Table 1, "not found": the slot named by TB's id now holds another
/// transaction (a later generation) or does not exist; T rereads the word.
#[test]
fn table1_creator_not_found_rereads_begin_word() {
    let fx = Fx::new();
    let t = fx.open();
    // A slot number beyond the table.
    let missing = (7u64 << SLOT_BITS) | 100;
    assert_eq!(fx.tt.peek(missing), Peek::Gone);
    let v = V::new(txn_word(missing), INFINITY);
    assert_eq!(with_late_store(&v.get().begin, 12, || fx.vis(&v, RT, t)), Some(12));
    // A reused slot: the old id is gone although the slot is occupied.
    let tb = fx.open();
    fx.tt.close(tb.slot);
    let reuser = fx.open();
    assert_eq!(reuser.slot, tb.slot, "the free list hands the slot out again");
    assert_ne!(reuser.id, tb.id, "ids differ across generations");
    assert_eq!(fx.tt.peek(tb.id), Peek::Gone);
    let w = V::new(tb.word(), INFINITY);
    assert_eq!(with_late_store(&w.get().begin, 30, || fx.vis(&w, RT, t)), None);
}

/// Table 1, Preparing TB whose CommitDepSet is already closed (it has decided
/// and reported): registration is refused and T starts over, seeing the
/// final state once TB publishes it.
#[test]
fn table1_preparing_creator_that_already_reported_is_reread() {
    let fx = Fx::new();
    let (t, tb) = (fx.open(), fx.open());
    fx.preparing(tb, 10);
    fx.tt.report_outcome(tb.slot, true);
    assert!(!fx.tt.register_dependency(t.slot, t.id, tb.id));
    let v = V::new(tb.word(), INFINITY);
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            fx.committed(tb, 10);
        });
        fx.vis(&v, RT, t)
    });
    assert_eq!(r, Some(10));
    assert_eq!(fx.deps(t), 0, "a refused registration leaves the counter alone");
}

// ---------------------------------------------------------------------------
// Table 2 (thesis Table 4.3): End word holds the id of TE (Begin = 10 < RT)
// ---------------------------------------------------------------------------

/// Table 2, Active, TE ≠ T: V is the latest committed version; the pending
/// update is invisible to T, so V is visible.
#[test]
fn table2_active_other_updater_version_still_visible() {
    let fx = Fx::new();
    let (t, te) = (fx.open(), fx.open());
    let v = V::new(10, te.word());
    assert_eq!(fx.vis(&v, RT, t), Some(10));
    assert_eq!(fx.deps(t), 0);
}

/// Table 2, Active, TE = T: T itself updated or deleted V, so V is invisible to it.
#[test]
fn table2_active_self_updater_version_invisible() {
    let fx = Fx::new();
    let t = fx.open();
    let v = V::new(10, t.word());
    assert_eq!(fx.vis(&v, RT, t), None);
    assert_eq!(fx.deps(t), 0);
}

/// Table 2, Preparing, TS > RT: V stays visible whether TE commits (its end
/// will be TS > RT) or aborts; no dependency.
#[test]
fn table2_preparing_ts_above_rt_visible_without_dependency() {
    let fx = Fx::new();
    let (t, te) = (fx.open(), fx.open());
    fx.preparing(te, 30);
    let v = V::new(10, te.word());
    assert_eq!(fx.vis(&v, RT, t), Some(10));
    assert_eq!(fx.deps(t), 0);
}

/// Table 2, Preparing, TS < RT: T speculatively ignores V and registers a
/// commit dependency on TE; the commit report releases it.
#[test]
fn table2_preparing_ts_below_rt_speculatively_ignored_with_dependency() {
    let fx = Fx::new();
    let (t, te) = (fx.open(), fx.open());
    fx.preparing(te, 15);
    let v = V::new(10, te.word());
    assert_eq!(fx.vis(&v, RT, t), None);
    assert_eq!(fx.deps(t), 1);
    fx.committed(te, 15);
    fx.tt.report_outcome(te.slot, true);
    assert_eq!(fx.deps(t), 0);
    assert!(!fx.abort_now(t));
}

/// Table 2, Preparing, TS < RT, then TE aborts: T ignored a version that is
/// in fact still current, so it must abort (AbortNow).
#[test]
fn table2_speculative_ignore_then_updater_abort_sets_abort_now() {
    let fx = Fx::new();
    let (t, te) = (fx.open(), fx.open());
    fx.preparing(te, 15);
    let v = V::new(10, te.word());
    assert_eq!(fx.vis(&v, RT, t), None);
    fx.aborted(te);
    fx.tt.report_outcome(te.slot, false);
    assert!(fx.abort_now(t));
}

/// Table 2, Committed: TE's end timestamp is V's end time.
#[test]
fn table2_committed_updater_uses_its_end_timestamp() {
    let fx = Fx::new();
    let (t, early, late) = (fx.open(), fx.open(), fx.open());
    fx.committed(early, 15);
    fx.committed(late, 30);
    assert_eq!(fx.vis(&V::new(10, early.word()), RT, t), None, "ended before RT");
    assert_eq!(fx.vis(&V::new(10, late.word()), RT, t), Some(10), "ends after RT");
    assert_eq!(fx.deps(t), 0);
}

/// Table 2, Aborted: V is visible (any later updater gets a later timestamp).
#[test]
fn table2_aborted_updater_version_visible() {
    let fx = Fx::new();
    let (t, te) = (fx.open(), fx.open());
    fx.preparing(te, 15);
    fx.aborted(te);
    let v = V::new(10, te.word());
    assert_eq!(fx.vis(&v, RT, t), Some(10));
    assert_eq!(fx.vis(&v, INFINITY - 1, t), Some(10));
    assert_eq!(fx.deps(t), 0);
}

/// Table 2, Terminated: T rereads the End word, which TE finalised (to its
/// end timestamp if it committed, back to infinity if it aborted).
#[test]
fn table2_terminated_updater_rereads_end_word() {
    let fx = Fx::new();
    let t = fx.open();
    let te = fx.open();
    let v = V::new(10, te.word());
    fx.committed(te, 15);
    fx.tt.close(te.slot);
    assert_eq!(with_late_store(&v.get().end, 15, || fx.vis(&v, RT, t)), None);

    let te2 = fx.open();
    let w = V::new(10, te2.word());
    fx.aborted(te2);
    fx.tt.close(te2.slot);
    assert_eq!(with_late_store(&w.get().end, INFINITY, || fx.vis(&w, RT, t)), Some(10));
    assert_eq!(fx.deps(t), 0);
}

/// Table 2 only applies once the Begin test passed: a version beginning after
/// RT is invisible without consulting (or depending on) TE.
#[test]
fn table2_not_consulted_when_begin_after_rt() {
    let fx = Fx::new();
    let (t, te) = (fx.open(), fx.open());
    fx.preparing(te, 15);
    let v = V::new(25, te.word());
    assert_eq!(fx.vis(&v, RT, t), None);
    assert_eq!(fx.deps(t), 0);
}

// ---------------------------------------------------------------------------
// Table 4.1 row 4: both words hold transaction ids
// ---------------------------------------------------------------------------

/// Begin = committed TB, End = active TE: Table 1 gives the begin time, then
/// Table 2 says the version is still visible.
#[test]
fn both_ids_committed_creator_active_updater_visible() {
    let fx = Fx::new();
    let (t, tb, te) = (fx.open(), fx.open(), fx.open());
    fx.committed(tb, 10);
    let v = V::new(tb.word(), te.word());
    assert_eq!(fx.vis(&v, RT, t), Some(10));
    assert_eq!(fx.deps(t), 0);
}

/// Begin = Preparing TB (TS 10 < RT), End = Preparing TE (TS 15 < RT): V is
/// speculatively ignored; T depends on TE only, never on TB (V is not read).
#[test]
fn both_ids_preparing_creator_and_updater_depends_on_updater_only() {
    let fx = Fx::new();
    let (t, tb, te) = (fx.open(), fx.open(), fx.open());
    fx.preparing(tb, 10);
    fx.preparing(te, 15);
    let v = V::new(tb.word(), te.word());
    assert_eq!(fx.vis(&v, RT, t), None);
    assert_eq!(fx.deps(t), 1);
    fx.aborted(tb);
    fx.tt.report_outcome(tb.slot, false);
    assert!(!fx.abort_now(t), "no dependency on the creator");
    fx.committed(te, 15);
    fx.tt.report_outcome(te.slot, true);
    assert_eq!(fx.deps(t), 0, "the dependency was on the updater");
}

/// Begin = Preparing TB (TS 10 < RT), End = Preparing TE (TS 30 > RT): V is
/// speculatively read; T depends on TB only.
#[test]
fn both_ids_preparing_creator_late_updater_depends_on_creator_only() {
    let fx = Fx::new();
    let (t, tb, te) = (fx.open(), fx.open(), fx.open());
    fx.preparing(tb, 10);
    fx.preparing(te, 30);
    let v = V::new(tb.word(), te.word());
    assert_eq!(fx.vis(&v, RT, t), Some(10));
    assert_eq!(fx.deps(t), 1);
    fx.tt.report_outcome(te.slot, false);
    assert!(!fx.abort_now(t), "no dependency on the updater");
    fx.tt.report_outcome(tb.slot, true);
    assert_eq!(fx.deps(t), 0);
}

// ---------------------------------------------------------------------------
// Section 2.6: updatability, and the insert-competition check
// ---------------------------------------------------------------------------

/// A version is updatable iff its End word is infinity or names an aborted
/// transaction; a historic End timestamp, or an Active, Preparing or
/// Committed updater, is a write-write conflict (first writer wins).
#[test]
fn updatable_only_if_latest_or_updater_aborted() {
    let fx = Fx::new();
    let (t, active, prep, comm, abrt) = (fx.open(), fx.open(), fx.open(), fx.open(), fx.open());
    fx.preparing(prep, 15);
    fx.committed(comm, 15);
    fx.aborted(abrt);
    let me = fx.me(t);
    assert_eq!(updatable(V::new(10, INFINITY).get(), &me), Some(INFINITY));
    assert_eq!(updatable(V::new(10, 30).get(), &me), None, "historic version");
    assert_eq!(updatable(V::new(10, active.word()).get(), &me), None, "Active updater");
    assert_eq!(updatable(V::new(10, prep.word()).get(), &me), None, "Preparing updater");
    assert_eq!(updatable(V::new(10, comm.word()).get(), &me), None, "Committed updater");
    assert_eq!(updatable(V::new(10, abrt.word()).get(), &me), Some(abrt.word()), "Aborted updater");
    assert_eq!(fx.deps(t), 0);
}

/// Updatability with a terminated updater rereads the End word.
#[test]
fn updatable_rereads_end_word_of_terminated_updater() {
    let fx = Fx::new();
    let (t, te) = (fx.open(), fx.open());
    let v = V::new(10, te.word());
    fx.aborted(te);
    fx.tt.close(te.slot);
    let r = with_late_store(&v.get().end, INFINITY, || updatable(v.get(), &fx.me(t)));
    assert_eq!(r, Some(INFINITY));
    let te2 = fx.open();
    let w = V::new(10, te2.word());
    fx.committed(te2, 15);
    fx.tt.close(te2.slot);
    assert_eq!(with_late_store(&w.get().end, 15, || updatable(w.get(), &fx.me(t))), None);
}

/// `is_competing` at read time 20: a latest version (End infinity, or an
/// active/aborted updater) of another live or committed creator competes with
/// an insert, and so does any write of the key committed after the read time
/// (first writer wins under snapshot isolation); garbage, own versions and
/// versions that ended before the read time do not.
#[test]
fn is_competing_cases() {
    let fx = Fx::new();
    let (t, active, comm, abrt, prep) = (fx.open(), fx.open(), fx.open(), fx.open(), fx.open());
    fx.committed(comm, 15);
    fx.aborted(abrt);
    fx.preparing(prep, 15);
    let me = fx.me(t);
    let c = |b: u64, e: u64| is_competing(V::new(b, e).get(), 20, &me);
    assert!(c(10, INFINITY), "committed latest version");
    assert!(!c(INFINITY, INFINITY), "garbage");
    assert!(!c(t.word(), INFINITY), "own insert");
    assert!(c(active.word(), INFINITY), "concurrent uncommitted insert");
    assert!(c(prep.word(), INFINITY), "concurrent preparing insert");
    assert!(c(comm.word(), INFINITY), "committed, not yet finalised");
    assert!(!c(abrt.word(), INFINITY), "aborted insert");
    assert!(!c(10, 18), "ended before the read time");
    assert!(c(10, 30), "deleted after the read time: a concurrent write");
    assert!(c(24, 30), "inserted and deleted after the read time");
    assert!(!c(10, comm.word()), "deleted by a committed transaction");
    assert!(c(10, active.word()), "being changed by an active transaction");
    assert!(c(10, prep.word()), "being changed by a preparing transaction");
    assert!(c(10, abrt.word()), "an aborted updater leaves it latest");
    assert!(!c(10, t.word()), "deleted by me");
}

// ---------------------------------------------------------------------------
// Section 2.7: the transaction table and commit dependencies
// ---------------------------------------------------------------------------

/// Peek reports each state of Figure 2 with its end timestamp, and "gone"
/// once the transaction terminates.
#[test]
fn peek_reports_states_and_gone_after_close() {
    let fx = Fx::new();
    let t = fx.open();
    assert_eq!(fx.tt.peek(t.id), Peek::Active);
    fx.preparing(t, 42);
    assert_eq!(fx.tt.peek(t.id), Peek::Preparing(42));
    fx.committed(t, 42);
    assert_eq!(fx.tt.peek(t.id), Peek::Committed(42));
    fx.aborted(t);
    assert_eq!(fx.tt.peek(t.id), Peek::Aborted);
    fx.tt.close(t.slot);
    assert_eq!(fx.tt.peek(t.id), Peek::Gone);
}

/// "Preparing, end timestamp pending" makes readers wait the few instructions
/// until the end timestamp is published, instead of guessing.
#[test]
fn peek_waits_out_the_pending_end_timestamp() {
    let fx = Fx::new();
    let t = fx.open();
    fx.tt.set_pending(t.slot);
    let start = Instant::now();
    let p = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            fx.preparing(t, 30);
        });
        fx.tt.peek(t.id)
    });
    assert_eq!(p, Peek::Preparing(30));
    assert!(start.elapsed() >= Duration::from_millis(15));
}

/// Register-and-report: each registration increments CommitDepCounter; each
/// commit report decrements it; nothing else changes it.
#[test]
fn dependency_counter_counts_registrations_and_commit_reports() {
    let fx = Fx::new();
    let (t, a, b) = (fx.open(), fx.open(), fx.open());
    assert!(fx.tt.register_dependency(t.slot, t.id, a.id));
    assert!(fx.tt.register_dependency(t.slot, t.id, b.id));
    assert_eq!(fx.deps(t), 2);
    fx.tt.report_outcome(a.slot, true);
    assert_eq!(fx.deps(t), 1);
    fx.tt.report_outcome(b.slot, true);
    assert_eq!(fx.deps(t), 0);
    assert!(!fx.abort_now(t));
}

/// Once a transaction has reported (or terminated), later registrations are
/// refused so the registrant rereads the outcome instead of waiting forever.
#[test]
fn registration_refused_after_report_or_termination() {
    let fx = Fx::new();
    let (t, a, b) = (fx.open(), fx.open(), fx.open());
    fx.tt.report_outcome(a.slot, true);
    assert!(!fx.tt.register_dependency(t.slot, t.id, a.id));
    fx.tt.close(b.slot);
    assert!(!fx.tt.register_dependency(t.slot, t.id, b.id));
    assert!(!fx.tt.register_dependency(t.slot, t.id, (1 << SLOT_BITS) | 999), "not found");
    assert_eq!(fx.deps(t), 0);
}

/// A report to a dependent that has terminated is dropped ("if a dependent
/// transaction is not found, it has already aborted"): the next occupant of
/// its slot is not touched.
#[test]
fn report_to_terminated_dependent_does_not_touch_slot_reuser() {
    let fx = Fx::new();
    let (target, t) = (fx.open(), fx.open());
    assert!(fx.tt.register_dependency(t.slot, t.id, target.id));
    fx.tt.close(t.slot);
    let reuser = fx.open();
    assert_eq!(reuser.slot, t.slot);
    fx.tt.report_outcome(target.slot, false);
    assert!(!fx.abort_now(reuser));
    assert_eq!(fx.deps(reuser), 0);
}

/// The table holds at most its number of slots; a closed slot is reusable.
#[test]
fn txn_table_refuses_when_full() {
    let tt = TxnTable::new(2);
    let (a, _) = tt.open().unwrap();
    let _b = tt.open().unwrap();
    assert!(matches!(tt.open(), Err(Error::TooManyTransactions(2))));
    tt.close(a);
    assert!(tt.open().is_ok());
}

// ---------------------------------------------------------------------------
// Section 2.7 end to end: whole transactions against a held-Preparing writer
// ---------------------------------------------------------------------------

/// A writer driven by hand through the database's transaction table, so that
/// it can be held in the Preparing state. Dropping it unresolved aborts it, so
/// that a failing test never leaves a dependent waiting forever.
struct FakeWriter<'a> {
    db: &'a Database,
    slot: u32,
    old: *mut Version,
    new: *mut Version,
    end_ts: u64,
    resolved: bool,
}

// SAFETY: the raw pointers name versions owned by the database; the test
// threads only store to their atomic words.
unsafe impl Send for FakeWriter<'_> {}

impl<'a> FakeWriter<'a> {
    /// Starts a writer that replaces (or, with `value = None`, deletes) the
    /// latest committed version of `key`, then precommits (Preparing).
    fn prepare(db: &'a Database, table: TableId, key: u64, value: Option<&[u8]>) -> FakeWriter<'a> {
        let (slot, id) = db.txns.open().unwrap();
        let key = Key::from(key);
        let t = db.table_ref(table).unwrap();
        let _g = crossbeam_epoch::pin();
        let mut old = ptr::null_mut();
        t.indexes[0].for_each_eq(&key, |v| {
            let latest = v.end.load(Ordering::SeqCst) == INFINITY && v.begin.load(Ordering::SeqCst) != INFINITY;
            if v.key_eq(&key) && latest {
                old = v as *const Version as *mut Version;
                return false;
            }
            true
        });
        assert!(!old.is_null(), "the key has a committed latest version");
        // SAFETY: linked and alive (nothing reclaims in these tests).
        let o = unsafe { &*old };
        o.end.compare_exchange(INFINITY, txn_word(id), Ordering::SeqCst, Ordering::SeqCst).unwrap();
        let new = match value {
            Some(val) => {
                let nv = Version::alloc(key, t.link_words(), val, txn_word(id)).as_ptr();
                // SAFETY: fresh, initialised, unlinked.
                unsafe { t.link_all(nv) };
                nv
            }
            None => ptr::null_mut(),
        };
        db.txns.set_pending(slot);
        let end_ts = db.clock.fetch_add(2, Ordering::SeqCst);
        db.txns.set_state(slot, TxnState::Preparing, end_ts);
        FakeWriter { db, slot, old, new, end_ts, resolved: false }
    }

    /// Commits (postprocessing of section 3.3) or aborts, then reports the
    /// outcome to the dependents and terminates.
    fn finish(&mut self, commit: bool) {
        self.resolved = true;
        let db = self.db;
        let (state, ts, begin, end) = if commit {
            (TxnState::Committed, self.end_ts, self.end_ts, self.end_ts)
        } else {
            (TxnState::Aborted, 0, INFINITY, INFINITY)
        };
        db.txns.set_state(self.slot, state, ts);
        if !self.new.is_null() {
            // SAFETY: our version, alive while linked.
            unsafe { &*self.new }.begin.store(begin, Ordering::SeqCst);
        }
        // SAFETY: as above.
        unsafe { &*self.old }.end.store(end, Ordering::SeqCst);
        db.txns.report_outcome(self.slot, commit);
        db.txns.close(self.slot);
    }

    fn commit(mut self) {
        self.finish(true);
    }

    fn abort(mut self) {
        self.finish(false);
    }
}

impl Drop for FakeWriter<'_> {
    fn drop(&mut self) {
        if !self.resolved {
            self.finish(false);
        }
    }
}

/// A database with table "t" holding keys 1..=3 with values "v1".."v3".
fn db3() -> (Database, TableId) {
    let db = Database::new(Options::default()).unwrap();
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    db.run(Isolation::Serializable, |x| {
        for k in 1..=3u64 {
            x.insert(t, Key::from(k), format!("v{k}").as_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    (db, t)
}

/// CommitDepCounter of a public transaction.
fn deps_of(db: &Database, txn_id: u64) -> u32 {
    db.txns.slot((txn_id & ((1 << SLOT_BITS) - 1)) as u32).dep_counter.load(Ordering::SeqCst)
}

fn get(x: &mut crate::Transaction<'_>, t: TableId, k: u64) -> Result<Option<Vec<u8>>, Error> {
    x.get(t, &Key::from(k))
}

/// Section 2.7: a transaction that speculatively read a Preparing writer's
/// version waits at commit until the writer commits, then commits itself.
#[test]
fn dependency_resolved_by_commit_lets_dependent_commit_after_waiting() {
    let (db, t) = db3();
    let f = FakeWriter::prepare(&db, t, 1, Some(b"new"));
    let mut x = db.begin(Isolation::Serializable).unwrap();
    assert!(x.begin_ts() > f.end_ts);
    assert_eq!(get(&mut x, t, 1).unwrap().as_deref(), Some(&b"new"[..]), "speculative read");
    assert_eq!(deps_of(&db, x.id()), 1);
    x.update(t, &Key::from(2), b"x2").unwrap();
    let reported = AtomicBool::new(false);
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(30));
            reported.store(true, Ordering::SeqCst);
            f.commit();
        });
        x.commit()
    });
    assert!(r.is_ok(), "{r:?}");
    assert!(reported.load(Ordering::SeqCst), "commit waited for the dependency");
    let mut y = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(get(&mut y, t, 1).unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(get(&mut y, t, 2).unwrap().as_deref(), Some(&b"x2"[..]));
}

/// Section 2.7: the writer aborts, so the speculative reader's commit fails
/// with CommitDependency (read-only: the wait happens without validation).
#[test]
fn dependency_resolved_by_abort_fails_dependent_commit() {
    let (db, t) = db3();
    let f = FakeWriter::prepare(&db, t, 1, Some(b"new"));
    let mut x = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(get(&mut x, t, 1).unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(deps_of(&db, x.id()), 1);
    f.abort();
    assert_eq!(x.commit(), Err(Error::Aborted(AbortReason::CommitDependency)));
    assert_eq!(db.stats().aborts[AbortReason::CommitDependency as usize], 1);
    let mut y = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(get(&mut y, t, 1).unwrap().as_deref(), Some(&b"v1"[..]));
}

/// Runs `op` while another thread, after a short delay, commits or aborts
/// the held-Preparing writer `f` (which `op` may wait for).
fn resolve_later<R>(f: FakeWriter<'_>, commit: bool, op: impl FnOnce() -> R) -> R {
    std::thread::scope(|s| {
        s.spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            if commit {
                f.commit()
            } else {
                f.abort()
            }
        });
        op()
    })
}

/// Table 2 end to end: a Preparing delete with TS < RT is speculatively
/// ignored, which registers a commit dependency. A lookup that then finds
/// nothing waits for its dependencies before reporting the absence (see
/// `settle_speculation`): when the deleter aborts, the lookup itself fails
/// with CommitDependency and the transaction is closed afterwards.
#[test]
fn speculative_ignore_then_abort_fails_the_lookup() {
    let (db, t) = db3();
    let f = FakeWriter::prepare(&db, t, 2, None);
    let mut x = db.begin(Isolation::ReadCommitted).unwrap();
    let r = resolve_later(f, false, || get(&mut x, t, 2));
    assert_eq!(r, Err(Error::Aborted(AbortReason::CommitDependency)));
    assert_eq!(get(&mut x, t, 3), Err(Error::TransactionClosed(Some(AbortReason::CommitDependency))));
    assert_eq!(x.commit(), Err(Error::TransactionClosed(Some(AbortReason::CommitDependency))));
    let mut y = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(get(&mut y, t, 2).unwrap().as_deref(), Some(&b"v2"[..]), "the delete was undone");
}

/// As above, but the deleter commits: the lookup waits for it and then
/// reports the row absent, and the reader commits.
#[test]
fn speculative_ignore_then_commit_reports_absence() {
    let (db, t) = db3();
    let f = FakeWriter::prepare(&db, t, 2, None);
    let mut x = db.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(resolve_later(f, true, || get(&mut x, t, 2)).unwrap(), None, "deleted");
    assert_eq!(deps_of(&db, x.id()), 0, "the dependency was settled before the answer");
    assert_eq!(get(&mut x, t, 3).unwrap().as_deref(), Some(&b"v3"[..]));
    assert!(x.commit().is_ok());
}

/// A reader that began before the writer's end timestamp is not affected
/// (Table 1/2 with TS > RT): no dependency, commits regardless of the writer.
#[test]
fn reader_older_than_preparing_writer_takes_no_dependency() {
    let (db, t) = db3();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    let f = FakeWriter::prepare(&db, t, 1, Some(b"new"));
    assert_eq!(get(&mut x, t, 1).unwrap().as_deref(), Some(&b"v1"[..]));
    assert_eq!(deps_of(&db, x.id()), 0);
    f.abort();
    assert!(x.commit().is_ok());
}

/// Starts T1 on its own thread (transactions belong to their thread): T1
/// speculatively reads key 1 (written by the held-Preparing fake writer),
/// updates key 2 to "t1" and commits. Returns once T1 is Preparing, which
/// means it is waiting on the fake writer.
fn spawn_t1_waiting_in_preparing<'s>(
    s: &'s std::thread::Scope<'s, '_>,
    db: &'s Database,
    t: TableId,
    iso: Isolation,
) -> std::thread::ScopedJoinHandle<'s, Result<crate::CommitInfo, Error>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = s.spawn(move || {
        let mut t1 = db.begin(iso).unwrap();
        assert_eq!(get(&mut t1, t, 1).unwrap().as_deref(), Some(&b"f1"[..]), "speculative read of F");
        t1.update(t, &Key::from(2), b"t1").unwrap();
        tx.send(t1.id()).unwrap();
        t1.commit()
    });
    let t1_id = rx.recv().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !matches!(db.txns.peek(t1_id), Peek::Preparing(_)) {
        assert!(Instant::now() < deadline, "T1 never reached Preparing");
        std::thread::yield_now();
    }
    h
}

/// Cascading aborts (section 2.7): F (Preparing) ← T1 (reads F's version,
/// writes key 2, then waits in Preparing) ← T2 (reads T1's version of key 2).
/// F aborts: T1's commit fails with CommitDependency, which in turn aborts
/// T2's commit with CommitDependency; nothing of T1 or T2 survives.
#[test]
fn cascading_abort_through_a_waiting_dependent() {
    let (db, t) = db3();
    let f = FakeWriter::prepare(&db, t, 1, Some(b"f1"));
    let (r1, r2) = std::thread::scope(|s| {
        let h = spawn_t1_waiting_in_preparing(s, &db, t, Isolation::Snapshot);
        let mut t2 = db.begin(Isolation::Snapshot).unwrap();
        assert_eq!(get(&mut t2, t, 2).unwrap().as_deref(), Some(&b"t1"[..]), "speculative read of T1");
        assert_eq!(deps_of(&db, t2.id()), 1);
        t2.update(t, &Key::from(3), b"t2").unwrap();
        f.abort();
        let r1 = h.join().unwrap();
        (r1, t2.commit())
    });
    assert_eq!(r1, Err(Error::Aborted(AbortReason::CommitDependency)));
    assert_eq!(r2, Err(Error::Aborted(AbortReason::CommitDependency)));
    let mut y = db.begin(Isolation::Snapshot).unwrap();
    for k in 1..=3 {
        assert_eq!(get(&mut y, t, k).unwrap(), Some(format!("v{k}").into_bytes()));
    }
    assert_eq!(db.stats().aborts[AbortReason::CommitDependency as usize], 2);
}

/// The same chain with F committing: every dependent commits, in order.
#[test]
fn dependency_chain_commits_when_root_commits() {
    let (db, t) = db3();
    let f = FakeWriter::prepare(&db, t, 1, Some(b"f1"));
    let (r1, r2) = std::thread::scope(|s| {
        let h = spawn_t1_waiting_in_preparing(s, &db, t, Isolation::Serializable);
        let mut t2 = db.begin(Isolation::Serializable).unwrap();
        assert_eq!(get(&mut t2, t, 2).unwrap().as_deref(), Some(&b"t1"[..]));
        t2.update(t, &Key::from(3), b"t2").unwrap();
        f.commit();
        let r1 = h.join().unwrap();
        (r1, t2.commit())
    });
    let (c1, c2) = (r1.unwrap(), r2.unwrap());
    assert!(c1.commit_ts < c2.commit_ts);
    let mut y = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(get(&mut y, t, 1).unwrap().as_deref(), Some(&b"f1"[..]));
    assert_eq!(get(&mut y, t, 2).unwrap().as_deref(), Some(&b"t1"[..]));
    assert_eq!(get(&mut y, t, 3).unwrap().as_deref(), Some(&b"t2"[..]));
}

/// The GC watermark is the smallest begin timestamp of an open transaction
/// (or the clock when none is open).
#[test]
fn watermark_tracks_oldest_open_transaction() {
    let db = Database::new(Options::default()).unwrap();
    assert_eq!(db.watermark(), db.clock());
    let a = db.begin(Isolation::Snapshot).unwrap();
    let b = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(db.watermark(), a.begin_ts());
    drop(a);
    assert_eq!(db.watermark(), b.begin_ts());
    drop(b);
    assert_eq!(db.watermark(), db.clock());
}

/// POMVCC's validation at `peer + 1`: a version ended by a peer (a
/// transaction at the same stamp) clashes whether the peer is Preparing,
/// Committed or has stamped the End word; one ended at another stamp does
/// not (the stress campaign's pomvcc+occ G2: a peer's successor version was
/// linked where the walk had passed, and the ended version read as gone).
#[test]
fn validation_clashes_on_every_version_a_peer_ended() {
    let fx = Fx::new();
    let (t, peer, other) = (fx.open(), fx.open(), fx.open());
    let validating = |fx: &Fx, v: &V| {
        let me = Me { peer: 40, ..fx.me(t) };
        let r = visible_at(v.get(), 41, &me);
        (r, me.clash.get())
    };
    fx.preparing(peer, 40);
    assert_eq!(validating(&fx, &V::new(10, peer.word())), (None, true), "Preparing peer");
    fx.committed(peer, 40);
    assert_eq!(validating(&fx, &V::new(10, peer.word())), (None, true), "Committed peer");
    assert_eq!(validating(&fx, &V::new(10, 40)), (None, true), "End stamped by a peer");
    fx.committed(other, 38);
    assert_eq!(validating(&fx, &V::new(10, other.word())), (None, false), "ended before: gone");
    assert_eq!(validating(&fx, &V::new(10, 38)), (None, false), "ended before: gone");
    assert_eq!(validating(&fx, &V::new(10, INFINITY)), (Some(10), false), "not ended");
    assert_eq!(fx.deps(t), 0);
}
