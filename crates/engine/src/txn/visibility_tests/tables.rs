//! Tables 4.1, 1 and 2 row by row (`visible_at` on each state of the Begin and End words), and POMVCC validation.

use super::{with_late_store, Fx, RT, V};
use crate::storage::word::{txn_word, INFINITY};
use crate::txn::table::{Peek, SLOT_BITS};
use crate::txn::visibility::{visible_at, Me};
use std::time::Duration;

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
// POMVCC validation: versions ended by a peer at the same stamp
// ---------------------------------------------------------------------------

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
