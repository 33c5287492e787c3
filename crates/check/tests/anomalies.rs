//! Hand-written histories for every anomaly class: each is found, and the
//! verdict fails exactly at the isolation levels that forbid it.
//!
//! Keys 1 (x) and 2 (y) start with values 10 and 20 in the initial state,
//! committed at timestamp 1 (before recording began).

mod common;

use common::*;
use multiverse::AbortReason;
use multiverse_check::{check, check_with, Class, Limits};

const X: u64 = 1;
const Y: u64 = 2;

// ----------------------------------------------------------------------
// Cycles
// ----------------------------------------------------------------------

#[test]
fn g0_dirty_write() {
    // T2 overwrites T1's uncommitted x, T1 overwrites T2's uncommitted y.
    let h = history(vec![
        txn(1, 2, 10).upd(X, c(1), 10, 11).upd(Y, t(2), 22, 21),
        txn(2, 3, 12).upd(X, t(1), 11, 12).upd(Y, c(1), 20, 22),
    ]);
    let reports = expect(&h, Class::G0, &ALL);
    let g0 = reports[0].anomalies.iter().find(|a| a.class == Class::G0).unwrap();
    assert_eq!(g0.txns.len(), 2);
    assert!(g0.summary.contains("-ww(t0/key 2)->"), "{}", g0.summary);
}

#[test]
fn g1c_circular_information_flow() {
    // Each reads the other's write before either commits.
    let h = history(vec![txn(1, 2, 10).w(X, 11).r(Y, t(2), 22), txn(2, 3, 12).w(Y, 22).r(X, t(1), 11)]);
    let reports = expect(&h, Class::G1c, &ALL);
    let a = reports[0].anomalies.iter().find(|a| a.class == Class::G1c).unwrap();
    assert!(a.summary.contains("-wr(t0/key 1)->") && a.summary.contains("-wr(t0/key 2)->"), "{}", a.summary);
}

#[test]
fn g_single_read_skew() {
    // T1 reads the old x and the new y that T2 wrote together with x.
    let h = history(vec![
        txn(2, 3, 5).upd(X, c(1), 10, 11).upd(Y, c(1), 20, 21),
        // (T1 commits after T2: a serializable read of a version committed
        // after the reader's own commit would be invalid.)
        txn(1, 2, 6).r(X, c(1), 10).r(Y, c(5), 21),
    ]);
    let reports = expect(&h, Class::GSingle, &[SI, RR, SER]);
    let a = reports[3].anomalies.iter().find(|a| a.class == Class::GSingle).unwrap();
    assert_eq!(a.summary, "T1 -rw(t0/key 1)-> T2 -wr(t0/key 2)-> T1");
    assert_eq!(a.details[0], "T1 read t0/key 1; T2 wrote the next version");
    // Snapshot also flags the read itself.
    assert!(reports[1].count(Class::SnapshotRead) > 0);
}

#[test]
fn g_single_lost_update() {
    let h = history(vec![txn(1, 2, 10).upd(X, c(1), 10, 11), txn(2, 3, 12).upd(X, c(1), 10, 12)]);
    let reports = expect(&h, Class::GSingle, &[SI, RR, SER]);
    assert_eq!(reports[1].count(Class::SnapshotWrite), 1, "{}", reports[1]);
}

#[test]
fn g_single_predicate() {
    // T1's scan misses the row T2 inserts, yet T1 reads T2's y.
    let h = history(vec![txn(2, 3, 5).ins(5, 50).upd(Y, c(1), 20, 21), txn(1, 2, 6).scan(3, 10, &[]).r(Y, c(5), 21)]);
    // Forbidden at snapshot and serializable; a phantom, so allowed at
    // repeatable read (Hekaton's RR is read stability only), where the same
    // cycle is reported as G2.
    for level in [SI, SER] {
        let r = check(&h, level);
        assert!(!r.ok(), "{r}");
        let a = r.anomalies.iter().find(|a| a.class == Class::GSingle).unwrap();
        assert!(a.summary.contains("-prw(t0/key 5)->"), "{}", a.summary);
    }
    for level in [RC, RR] {
        let r = check(&h, level);
        assert!(r.ok(), "{r}");
    }
    assert_eq!(check(&h, RR).count(Class::G2), 1);
}

#[test]
fn g2_item_write_skew() {
    let h = history(vec![
        txn(1, 2, 10).r(X, c(1), 10).r(Y, c(1), 20).w(X, 11),
        txn(2, 3, 12).r(X, c(1), 10).r(Y, c(1), 20).w(Y, 21),
    ]);
    let reports = expect(&h, Class::G2Item, &[RR, SER]);
    let a = reports[3].anomalies.iter().find(|a| a.class == Class::G2Item).unwrap();
    assert_eq!(a.summary, "T1 -rw(t0/key 2)-> T2 -rw(t0/key 1)-> T1");
}

#[test]
fn g2_from_point_reads_that_found_nothing() {
    // Each checks that a key is absent, then inserts the one the other
    // checked. A lookup that finds nothing is a predicate read: a phantom,
    // allowed at repeatable read (which protects only versions read).
    let h = history(vec![txn(1, 2, 10).r_none(5).ins(25, 1), txn(2, 3, 12).r_none(25).ins(5, 1)]);
    let r = expect(&h, Class::G2, &[SER]);
    assert_eq!(r[3].anomalies[0].summary, "T1 -prw(t0/key 5)-> T2 -prw(t0/key 25)-> T1");
    assert_eq!(r[3].anomalies[0].details[0], "T1 found no row at t0/key 5 (lookup or scan); T2 wrote the next version");
    // At read committed an absent read observes no particular state: no edges.
    let rc = history(vec![txn(1, 2, 10).iso(RC).r_none(5).ins(25, 1), txn(2, 3, 12).iso(RC).r_none(25).ins(5, 1)]);
    expect_clean(&rc);
}

#[test]
fn a_writer_that_leaves_a_row_absent_is_no_predicate_anti_dependency() {
    // As g2_from_point_reads_that_found_nothing, but T2 deletes its key 5
    // again: T1's absent key 5 holds before and after T2, so T1 -> T2 needs
    // no edge, and T2 (which found no key 25) comes before T1. Both commit
    // at one timestamp, as POMVCC's transactions may.
    let h = history(vec![txn(1, 2, 10).r_none(5).ins(25, 1), txn(2, 3, 10).r_none(25).ins(5, 1).del(5)]);
    expect_clean(&h);
    // Kept, T2's row is a change T1's lookup missed: the cycle is back.
    let h = history(vec![txn(1, 2, 10).r_none(5).ins(25, 1), txn(2, 3, 10).r_none(25).ins(5, 1)]);
    expect(&h, Class::G2, &[SER]);
}

#[test]
fn absence_seen_by_a_validating_reader_is_placed_at_its_commit() {
    // W1 inserts key 5 and W2 deletes it again while R runs; R found no key 5
    // and committed after both. Serial order W1, W2, R explains everything,
    // and that is where the engine validated R's read.
    let txns = |iso| {
        history(vec![
            txn(2, 3, 5).ins(5, 50),
            txn(3, 6, 8).r(5, c(5), 50).del(5).r(Y, c(1), 20),
            txn(1, 2, 20).iso(iso).r_none(5).upd(Y, c(1), 20, 21),
        ])
    };
    expect_clean(&txns(SER));
    expect_clean(&txns(RR));
    // A snapshot reader read as of its begin: R before W1, yet after W2.
    expect(&txns(SI), Class::G2, &[SER]);
}

#[test]
fn g2_phantom() {
    // Each scans a range that misses the other's insert.
    let h = history(vec![
        txn(1, 2, 10).scan(0, 10, &[(X, c(1), 10)]).ins(25, 1),
        txn(2, 3, 12).scan(20, 30, &[]).ins(5, 1),
    ]);
    let reports = expect(&h, Class::G2, &[SER]);
    let a = reports[3].anomalies.iter().find(|a| a.class == Class::G2).unwrap();
    assert_eq!(a.summary, "T1 -prw(t0/key 5)-> T2 -prw(t0/key 25)-> T1");
    assert!(a.details[0].contains("found no row at t0/key 5"));
}

#[test]
fn g2_phantom_with_one_item_anti_dependency() {
    let h = history(vec![txn(1, 2, 10).scan(0, 10, &[]).upd(Y, c(1), 20, 21), txn(2, 3, 12).r(Y, c(1), 20).ins(5, 1)]);
    expect(&h, Class::G2, &[SER]);
}

#[test]
fn filtered_scans_give_no_predicate_edges() {
    let h = history(vec![
        txn(1, 2, 10).scan_filtered(0, 10, &[(X, c(1), 10)]).ins(25, 1),
        txn(2, 3, 12).scan_filtered(20, 30, &[]).ins(5, 1),
    ]);
    expect_clean(&h);
}

#[test]
fn most_severe_class_of_a_component_is_reported() {
    // Write skew on (x, y) plus a lost update on z between the same two
    // transactions: one component, holding a G-single and a G2-item cycle.
    let h = history(vec![
        txn(1, 2, 10).r(X, c(1), 10).r(Y, c(1), 20).w(X, 11).upd(3, c(1), 30, 31),
        txn(2, 3, 12).r(X, c(1), 10).r(Y, c(1), 20).w(Y, 21).upd(3, c(1), 30, 32),
    ]);
    let r = check(&h, SER);
    assert_eq!(r.count(Class::GSingle), 1, "{r}");
    assert_eq!(r.count(Class::G2Item), 0, "{r}");
    assert_eq!(r.stats.cyclic_components, 1);
}

#[test]
fn search_budget_bounds_the_work() {
    // A lost update: a G-single cycle. With no budget the G-single search
    // gives up, yet a cycle is still reported and the truncation is noted.
    let h = history(vec![txn(1, 2, 10).upd(1, c(1), 10, 11), txn(2, 3, 12).upd(1, c(1), 10, 12)]);
    let r = check_with(&h, SER, &Limits { search_budget: 0, ..Limits::default() });
    assert!(!r.ok());
    assert!(r.stats.search_truncated, "{r}");
    assert_eq!(r.count(Class::GSingle), 1, "classified by its own edges: {r}");
    assert!(r.to_string().contains("(cycle search truncated)"));
}

// ----------------------------------------------------------------------
// Direct checks
// ----------------------------------------------------------------------

#[test]
fn g1a_aborted_read() {
    let h = history(vec![
        txn(1, 2, 0).upd(X, c(1), 10, 11).aborted(AbortReason::User),
        txn(2, 3, 5).r(X, t(1), 11).w(Y, 1),
    ]);
    let reports = expect(&h, Class::G1a, &ALL);
    let a = reports[0].anomalies.iter().find(|a| a.class == Class::G1a).unwrap();
    assert_eq!(a.summary, "T2 read t0/key 1 version t:1, written by T1 which aborted (user)");
}

#[test]
fn g1a_aborted_after_taking_a_commit_timestamp() {
    let h = history(vec![
        txn(1, 2, 4).upd(X, c(1), 10, 11).aborted_at(AbortReason::ReadValidation),
        txn(2, 6, 6).r(X, c(4), 11),
    ]);
    expect(&h, Class::G1a, &ALL);
}

#[test]
fn reads_by_aborted_transactions_are_ignored() {
    let h = history(vec![
        txn(1, 2, 0).upd(X, c(1), 10, 11).aborted(AbortReason::User),
        txn(2, 3, 0).r(X, t(1), 11).r(Y, t(77), 0).aborted(AbortReason::CommitDependency),
    ]);
    expect_clean(&h);
}

#[test]
fn g1b_intermediate_read() {
    // T1 writes x twice; T2 reads the first value after T1 committed.
    let h = history(vec![txn(1, 2, 6).upd(X, c(1), 10, 11).w(X, 12), txn(2, 7, 7).r(X, c(6), 11)]);
    let reports = expect(&h, Class::G1b, &ALL);
    let a = reports[0].anomalies.iter().find(|a| a.class == Class::G1b).unwrap();
    assert!(a.summary.contains("intermediate version of T1"), "{}", a.summary);
}

#[test]
fn g1b_insert_then_delete() {
    let h = history(vec![txn(1, 2, 6).ins(5, 50).del(5), txn(2, 3, 3).r(5, t(1), 50)]);
    expect(&h, Class::G1b, &ALL);
}

#[test]
fn unknown_writer_is_invalid() {
    let h = history(vec![txn(1, 2, 2).r(X, t(99), 10)]);
    let reports = expect(&h, Class::Invalid, &ALL);
    assert!(reports[0].anomalies[0].summary.contains("no transaction T99"), "{}", reports[0]);
}

#[test]
fn version_of_a_non_writer_is_invalid() {
    let h = history(vec![txn(1, 2, 4).w(Y, 21), txn(2, 3, 6).r(X, t(1), 10)]);
    expect(&h, Class::Invalid, &ALL);
}

#[test]
fn value_never_written_is_invalid() {
    let h = history(vec![txn(1, 2, 4).w(X, 11), txn(2, 6, 6).r(X, c(4), 99)]);
    let r = expect(&h, Class::Invalid, &ALL);
    assert!(r[3].anomalies[0].summary.contains("never wrote that value"), "{}", r[3]);
}

#[test]
fn own_write_must_be_visible() {
    let h = history(vec![txn(1, 2, 4).w(X, 11).r(X, c(1), 10)]);
    expect(&h, Class::Invalid, &ALL);
    let missed = history(vec![txn(1, 2, 4).ins(5, 1).scan(0, 10, &[])]);
    expect(&missed, Class::Invalid, &ALL);
    let fine = history(vec![txn(1, 2, 4).ins(5, 1).r(5, t(1), 1).scan(0, 10, &[(5, t(1), 1)]).del(5).r_none(5)]);
    expect_clean(&fine);
}

#[test]
fn malformed_transactions_are_invalid() {
    let dup = history(vec![txn(1, 2, 4).w(X, 11), txn(1, 5, 6).w(Y, 21)]);
    expect(&dup, Class::Invalid, &ALL);
    let same_ts = history(vec![txn(1, 2, 4).w(X, 11), txn(2, 3, 4).w(X, 12)]);
    expect(&same_ts, Class::Invalid, &ALL);
    let mut no_ts = txn(1, 2, 4).w(X, 11);
    no_ts.0.commit_ts = None;
    expect(&history(vec![no_ts]), Class::Invalid, &ALL);
    let outside = history(vec![txn(1, 2, 4).w(50, 1), txn(2, 5, 5).scan(0, 10, &[(50, c(4), 1)])]);
    expect(&outside, Class::Invalid, &ALL);
}

/// The reports of `h` at every level hold no `invalid` finding.
fn no_invalid(h: &multiverse::research::history::History) {
    for level in ALL {
        let r = check(h, level);
        assert_eq!(r.count(Class::Invalid), 0, "{level}:\n{r}");
    }
}

#[test]
fn a_version_that_never_existed_is_invalid() {
    // T1 is the first recorded commit (4). No recorded transaction committed
    // a version at 5, and a version from before recording began is older
    // than 4: c:5 never existed, whatever the key.
    let first = txn(1, 2, 4).upd(X, c(1), 10, 11);
    let forged = [
        txn(2, 6, 6).r(Y, c(5), 99), // a key no recorded transaction wrote
        txn(2, 6, 6).r(X, c(5), 99), // a key with a recorded writer, at another time
        txn(2, 6, 6).scan(0, 10, &[(X, c(4), 11), (Y, c(5), 20)]), // a scan row
        txn(2, 6, 6).iso(RC).r(Y, c(5), 20), // at any level
    ];
    for reader in forged {
        let h = history(vec![first.clone(), reader]);
        let r = expect(&h, Class::Invalid, &ALL);
        assert!(r[3].anomalies[0].summary.contains("version c:5, which no transaction in the history committed"));
        assert!(r[3].anomalies[0].summary.contains("not older than the first recorded commit (4)"), "{}", r[3]);
    }
    // Versions from before recording began are older than the first
    // recorded commit; POMVCC shares commit timestamps, so one may also
    // carry the first recorded commit's timestamp.
    for ts in [0, 1, 3, 4] {
        no_invalid(&history(vec![first.clone(), txn(2, 6, 6).r(Y, c(ts), 20).scan(0, 10, &[(Y, c(ts), 20)])]));
    }
    expect_clean(&history(vec![first.clone(), txn(2, 6, 6).r(Y, c(3), 20)]));
    // Transactions that wrote nothing do not count: they are serialized at
    // their begin timestamp (a safe snapshot's may be older than the last
    // version committed before recording began).
    let h = history(vec![txn(3, 2, 2).r(X, c(1), 10), txn(1, 8, 10).w(Y, 21), txn(2, 12, 12).r(5, c(7), 50)]);
    expect_clean(&h);
    // A history without a recorded writer holds only such versions.
    expect_clean(&history(vec![txn(1, 2, 2).r(X, c(1), 10).r(Y, c(1), 20)]));
}

#[test]
fn commit_before_begin_is_invalid() {
    let r = expect(&history(vec![txn(1, 5, 4).w(X, 11)]), Class::Invalid, &ALL);
    assert!(r[0].anomalies[0].summary.contains("T1 commits at 4, before it began at 5"), "{}", r[0]);
    // Aborted ones too, when they took a timestamp.
    let aborted = history(vec![txn(1, 5, 4).w(X, 11).aborted_at(AbortReason::ReadValidation)]);
    expect(&aborted, Class::Invalid, &ALL);
    // A transaction that wrote nothing is serialized at its begin timestamp.
    expect_clean(&history(vec![txn(1, 5, 5).r(X, c(1), 10), txn(2, 5, 6).w(X, 11)]));
}

#[test]
fn a_serializable_read_of_a_version_committed_after_the_reader_is_invalid() {
    // T2 commits at 5 and read the version T1 committed at 8.
    let writer = || txn(1, 2, 8).upd(X, c(1), 10, 11);
    for reader in [
        txn(2, 3, 5).r(X, c(8), 11),
        txn(2, 3, 5).r(X, t(1), 11), // a version read before its writer committed
        txn(2, 3, 5).scan(0, 10, &[(X, c(8), 11)]),
    ] {
        let r = expect(&history(vec![writer(), reader]), Class::Invalid, &ALL);
        let a = r[3].anomalies.iter().find(|a| a.class == Class::Invalid).unwrap();
        assert!(a.summary.contains("T2 (serializable, commit 5) read t0/key 1 version"), "{}", r[3]);
        assert!(a.summary.contains("committed at 8, after its own commit"), "{}", r[3]);
    }
    // An external version later than the reader's commit, too.
    let h = history(vec![txn(1, 2, 8).w(Y, 21), txn(2, 3, 5).r(X, c(6), 10)]);
    expect(&h, Class::Invalid, &ALL);
    // Neighbours: a read committed reader reads at the current time, after
    // its begin (its commit timestamp as a reader); a serializable one that
    // commits later, or reads its own write, is fine.
    no_invalid(&history(vec![writer(), txn(2, 3, 5).iso(RC).r(X, c(8), 11)]));
    let later = history(vec![writer(), txn(2, 3, 9).r(X, c(8), 11)]);
    no_invalid(&later);
    assert!(check(&later, SER).ok());
    no_invalid(&history(vec![writer(), txn(2, 3, 5).w(Y, 21).r(Y, t(2), 21)]));
}

// ----------------------------------------------------------------------
// Snapshot isolation rules
// ----------------------------------------------------------------------

#[test]
fn snapshot_stale_read() {
    // T2 began after T1 committed x but read the initial x: serializable
    // (T2 before T1), but not snapshot isolation.
    let h = history(vec![txn(1, 2, 4).upd(X, c(1), 10, 11), txn(2, 6, 6).r(X, c(1), 10)]);
    let r = expect(&h, Class::SnapshotRead, &[SI]);
    assert!(r[1].anomalies[0].summary.contains("its snapshot holds c:4 (T1)"), "{}", r[1]);
}

#[test]
fn snapshot_read_from_the_future() {
    let h = history(vec![txn(2, 3, 4).upd(X, c(1), 10, 11), txn(1, 2, 6).r(X, c(4), 11)]);
    expect(&h, Class::SnapshotRead, &[SI]);
}

#[test]
fn snapshot_missed_rows() {
    let point = history(vec![txn(1, 2, 4).ins(5, 1), txn(2, 6, 6).r_none(5)]);
    expect(&point, Class::SnapshotRead, &[SI]);
    let scan = history(vec![txn(1, 2, 4).ins(5, 1), txn(2, 6, 6).scan(0, 10, &[])]);
    expect(&scan, Class::SnapshotRead, &[SI]);
    // A read committed transaction may read newer versions: not checked.
    let rc = history(vec![txn(1, 2, 4).upd(X, c(1), 10, 11), txn(2, 3, 6).iso(RC).r(X, c(4), 11)]);
    expect_clean(&rc);
}

#[test]
fn snapshot_first_committer_wins() {
    // Concurrent blind writes: no cycle, but not snapshot isolation.
    let h = history(vec![txn(1, 2, 10).w(X, 11), txn(2, 3, 12).w(X, 12)]);
    let r = expect(&h, Class::SnapshotWrite, &[SI]);
    assert!(r[1].anomalies[0].summary.contains("are concurrent and both wrote t0/key 1"), "{}", r[1]);
}

// ----------------------------------------------------------------------
// Valid histories
// ----------------------------------------------------------------------

#[test]
fn serial_history_is_clean() {
    let h = history(vec![
        txn(1, 2, 3).ins(5, 50).ins(6, 60).upd(X, c(1), 10, 11),
        txn(2, 4, 5).r(5, c(3), 50).upd(6, c(3), 60, 61).scan(
            0,
            10,
            &[(X, c(3), 11), (Y, c(1), 20), (5, c(3), 50), (6, t(2), 61)],
        ),
        txn(3, 6, 7).r(6, c(5), 61).del(5).r_none(5),
        txn(4, 8, 8).scan(0, 100, &[(X, c(3), 11), (Y, c(1), 20), (6, c(5), 61)]).r_none(5).r_none(7),
        txn(5, 9, 0).upd(X, c(3), 11, 12).aborted(AbortReason::User),
        txn(6, 10, 11).upd(X, c(3), 11, 13),
    ]);
    expect_clean(&h);
}

#[test]
fn concurrent_snapshot_history_is_clean() {
    let h = history(vec![
        txn(3, 4, 4).r(X, c(1), 10).r(Y, c(1), 20), // snapshot before both writers
        txn(1, 2, 10).upd(X, c(1), 10, 11),         // concurrent writers of
        txn(2, 3, 12).upd(Y, c(1), 20, 21),         // different keys
        txn(5, 11, 16).r(X, t(1), 11).w(3, 1),      // T1 committed at 10 < 11
        txn(4, 14, 14).r(X, c(10), 11).r(Y, c(12), 21).scan(0, 5, &[(X, c(10), 11), (Y, c(12), 21)]),
    ]);
    expect_clean(&h);
}

#[test]
fn report_display_is_readable() {
    let h = history(vec![
        txn(1, 2, 10).r(X, c(1), 10).r(Y, c(1), 20).w(X, 11),
        txn(2, 3, 12).r(X, c(1), 10).r(Y, c(1), 20).w(Y, 21),
    ]);
    let ser = check(&h, SER).to_string();
    assert!(ser.starts_with("serializable: FAILED (1 forbidden anomaly)\n"), "{ser}");
    assert!(ser.contains("G2-item: 1 (forbidden at serializable)"), "{ser}");
    assert!(
        ser.contains(
            "  G2-item: T1 -rw(t0/key 2)-> T2 -rw(t0/key 1)-> T1\n    T1 read t0/key 2; T2 wrote the next version"
        ),
        "{ser}"
    );
    let si = check(&h, SI).to_string();
    assert!(si.starts_with("snapshot: OK (no forbidden anomaly)\n"), "{si}");
    assert!(si.contains("G2-item: 1 (allowed at snapshot)"), "{si}");
}

#[test]
fn examples_are_capped_but_all_counted() {
    let mut txns = Vec::new();
    for i in 0..50u64 {
        txns.push(txn(100 + i, 2, 0).w(i + 10, 1).aborted(AbortReason::User));
        txns.push(txn(200 + i, 3, 3).r(i + 10, t(100 + i), 1));
    }
    let r = check(&history(txns), RC);
    assert_eq!(r.count(Class::G1a), 50);
    assert_eq!(r.anomalies.len(), 10);
}
