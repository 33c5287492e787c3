//! Section 2.6: when a version is updatable, and when a version competes with an insert.

use super::{with_late_store, Fx, V};
use crate::storage::word::INFINITY;
use crate::txn::visibility::{is_competing, updatable};

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
