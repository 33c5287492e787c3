//! Absent rows seen by validating readers when commit timestamps are shared
//! (POMVCC) and when a writer leaves a row absent: regressions of the
//! stress suite's POMVCC findings at `MULTIVERSE_STRESS=100` and of the
//! verification workloads'.
//!
//! The histories came from the engine and are serializable; the checker
//! used to report a cycle for each, because it placed an absent
//! observation before a same-timestamp peer that validation had seen
//! finish, or at the reader's begin when the key was absent just before a
//! peer's later insert, or took a writer that changed nothing (it inserted
//! a row and deleted it again) for the state the reader saw.

mod common;

use common::*;
use multiverse_check::Class;

/// The stress suite's first finding, reduced. T1 inserts key 10 at 4; T3
/// reads it at 5 and finds no key 4; D deletes key 10 at 8; T2, open since
/// 3, found no key 10 and inserts key 4, committing at 8 too, the timestamp
/// D shares. T2 validated just past 8, after D had finished: key 10 was
/// absent then, as at T2's begin. Serial order T1, T3, D, T2.
#[test]
fn an_absence_validated_past_a_peers_delete_is_placed_after_it() {
    let h = history(vec![
        txn(1, 2, 4).ins(10, 100),
        txn(3, 5, 5).r(10, c(4), 100).r_none(4),
        txn(4, 5, 8).r(10, c(4), 100).del(10),
        txn(2, 3, 8).r_none(10).ins(4, 40),
    ]);
    expect_clean_at(&h, SER);
    // D after T2 (a later timestamp): T2's absence can only be the one
    // before T1's insert, and T1 -> T3 -> T2 -> T1 is a phantom.
    let h = history(vec![
        txn(1, 2, 4).ins(10, 100),
        txn(3, 5, 5).r(10, c(4), 100).r_none(4),
        txn(4, 5, 10).r(10, c(4), 100).del(10),
        txn(2, 3, 8).r_none(10).ins(4, 40),
    ]);
    expect(&h, Class::G2, &[SER]);
}

/// The second: T2 inserts key 4 and deletes it again, and updates key 7,
/// at the timestamp T1 commits at; T1 found no key 4 and read key 7's
/// first version. T1 before T2 explains both reads: T2's delete is not
/// the state T1 saw (nothing T2 did to key 4 is visible).
#[test]
fn a_writer_that_inserted_and_deleted_a_row_is_not_the_state_seen() {
    let h = history(vec![txn(1, 5, 6).r_none(4).r(7, c(1), 70), txn(2, 5, 6).ins(4, 40).upd(7, c(1), 70, 71).del(4)]);
    expect_clean_at(&h, SER);
}

/// The verification workload's finding (POMVCC, predicate, 2 threads),
/// reduced. A inserts key 14 at 4 after reading key 7; B deletes it at 6;
/// R, open since 3, found no key 14 and deletes key 7 at 8; C, a peer of R
/// at 8, inserts key 14 again, after R validated (it was not yet a peer
/// then, and R's validation ignores an uncommitted version). Key 14 was
/// absent when R validated, as at R's begin: serial order A, B, R, C. Placed
/// at its begin, R's absence comes before A's insert, and A -> R (key 7)
/// closes a cycle; placed after its peer C's insert, the key is there.
#[test]
fn an_absence_validated_before_a_peers_insert_is_placed_before_it() {
    let a = || txn(1, 3, 4).r(7, c(1), 70).r_none(14).ins(14, 140);
    let b = || txn(2, 5, 6).r(14, c(4), 140).del(14);
    let r = || txn(3, 3, 8).r_none(14).r(7, c(1), 70).del(7);
    let h = history(vec![a(), b(), r(), txn(4, 7, 8).r_none(14).ins(14, 141)]);
    expect_clean_at(&h, SER);
    // C also read key 7 before R's delete: C must precede R, R precede C
    // (write skew between two peers), a cycle whatever R's absence was.
    let h = history(vec![a(), b(), r(), txn(4, 7, 8).r_none(14).r(7, c(1), 70).ins(14, 141)]);
    expect(&h, Class::G2, &[SER]);
}

/// Nothing forbidden at `level` (allowed anomalies may be reported).
fn expect_clean_at(h: &multiverse::research::history::History, level: multiverse::Isolation) {
    let report = multiverse_check::check(h, level);
    assert!(report.ok(), "expected no forbidden anomaly at {level}:\n{report}");
}
