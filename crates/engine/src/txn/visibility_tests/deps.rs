//! Section 2.7 on the transaction table alone: state peeks, commit-dependency registration and reports, slot reuse.

use super::Fx;
use crate::error::Error;
use crate::txn::table::{Peek, TxnTable, SLOT_BITS};
use std::time::{Duration, Instant};

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
    let (a, _) = tt.open(|_| {}).unwrap();
    let _b = tt.open(|_| {}).unwrap();
    assert!(matches!(tt.open(|_| {}), Err(Error::TooManyTransactions(2))));
    tt.close(a);
    assert!(tt.open(|_| {}).is_ok());
}
