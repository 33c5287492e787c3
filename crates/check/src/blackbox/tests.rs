//! Tests of [`check_observed`](super::check_observed) on list-append histories: serial ones that
//! pass, each anomaly it reports, and a long random serial history.

use super::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

fn list(tags: &[u64]) -> Vec<u8> {
    tags.iter().flat_map(|t| t.to_be_bytes()).collect()
}

fn r(key: u64, value: Option<&[u64]>) -> ObservedOp {
    ObservedOp::Read { table: 0, key: Key::from(key), value: value.map(list) }
}

fn w(key: u64, value: &[u64]) -> ObservedOp {
    ObservedOp::Write { table: 0, key: Key::from(key), value: list(value) }
}

fn txn(id: u64, ops: Vec<ObservedOp>) -> ObservedTxn {
    ObservedTxn { id, committed: true, ops }
}

fn aborted(id: u64, ops: Vec<ObservedOp>) -> ObservedTxn {
    ObservedTxn { id, committed: false, ops }
}

const LEVELS: [Isolation; 4] =
    [Isolation::ReadCommitted, Isolation::Snapshot, Isolation::RepeatableRead, Isolation::Serializable];

#[test]
fn serial_history_passes() {
    let h = vec![
        txn(1, vec![r(1, None), w(1, &[10])]),
        txn(2, vec![r(1, Some(&[10])), w(1, &[10, 20]), r(2, None), w(2, &[21])]),
        aborted(3, vec![r(1, Some(&[10, 20])), w(1, &[10, 20, 30])]),
        txn(4, vec![r(1, Some(&[10, 20])), r(2, Some(&[21]))]),
        txn(5, vec![w(2, &[21, 50]), w(2, &[21, 50, 51]), r(2, Some(&[21, 50, 51]))]),
        txn(6, vec![r(2, Some(&[21, 50, 51])), r(1, Some(&[10, 20]))]),
    ];
    for level in LEVELS {
        let report = check_observed(&h, level);
        assert!(report.ok(), "{report}");
        assert_eq!(report.anomalies, vec![], "{report}");
    }
    let report = check_observed(&h, Isolation::Serializable);
    assert_eq!((report.stats.txns, report.stats.committed, report.stats.aborted, report.stats.keys), (6, 5, 1, 2));
    // ww 1->2 (key 1), 2->5 (key 2); wr 1->2, 2->4, 2->6, 5->6; rw 4->5
    // (T4 read [21], T5 appended 50 next).
    assert_eq!(report.stats.edges, [2, 4, 1, 0], "{report}");
}

#[test]
fn write_skew_is_g2_item() {
    let h = vec![txn(1, vec![r(1, None), w(2, &[10])]), txn(2, vec![r(2, None), w(1, &[20])])];
    let ser = check_observed(&h, Isolation::Serializable);
    assert!(!ser.ok());
    assert_eq!(ser.count(Class::G2Item), 1, "{ser}");
    assert_eq!(ser.forbidden_count(), 1, "{ser}");
    assert_eq!(ser.anomalies[0].txns, vec![1, 2]);
    assert!(!check_observed(&h, Isolation::RepeatableRead).ok());
    let si = check_observed(&h, Isolation::Snapshot);
    assert!(si.ok(), "{si}");
    assert_eq!(si.count(Class::G2Item), 1);
}

#[test]
fn lost_update_is_g_single() {
    // Both read [10] and appended: the store applied both appends, but
    // T3 never saw T2's (it read [10] and yet its list is [10 20 30]).
    let h = vec![
        txn(1, vec![w(1, &[10])]),
        txn(2, vec![r(1, Some(&[10])), w(1, &[10, 20])]),
        txn(3, vec![r(1, Some(&[10])), w(1, &[10, 20, 30])]),
    ];
    let si = check_observed(&h, Isolation::Snapshot);
    assert!(!si.ok());
    assert_eq!(si.count(Class::GSingle), 1, "{si}");
    assert_eq!(si.anomalies[0].txns, vec![2, 3], "{si}");
    // Read committed allows it: T3 appended atomically after T2.
    assert!(check_observed(&h, Isolation::ReadCommitted).ok());
}

#[test]
fn overwritten_append_is_incompatible() {
    // T3 read [10] and wrote [10 30] over T2's [10 20]: T2's append is lost.
    let h = vec![
        txn(1, vec![w(1, &[10])]),
        txn(2, vec![r(1, Some(&[10])), w(1, &[10, 20])]),
        txn(3, vec![r(1, Some(&[10])), w(1, &[10, 30])]),
        txn(4, vec![r(1, Some(&[10, 30]))]),
    ];
    for level in LEVELS {
        let report = check_observed(&h, level);
        assert!(!report.ok());
        assert_eq!(report.count(Class::Invalid), 1, "{report}");
        assert!(report.anomalies[0].summary.contains("neither list extends the other"), "{report}");
    }
}

#[test]
fn duplicate_append_is_invalid() {
    let h = vec![txn(1, vec![w(1, &[10])]), txn(2, vec![r(1, Some(&[10, 10]))])];
    let report = check_observed(&h, Isolation::ReadCommitted);
    assert_eq!(report.count(Class::Invalid), 1, "{report}");
    assert!(report.anomalies[0].summary.contains("twice"), "{report}");
}

#[test]
fn aborted_read_is_g1a() {
    let h = vec![
        txn(1, vec![w(1, &[10])]),
        aborted(2, vec![r(1, Some(&[10])), w(1, &[10, 20])]),
        txn(3, vec![r(1, Some(&[10, 20]))]),
        // A tag nobody appended at all.
        txn(4, vec![r(2, Some(&[99]))]),
        // An append that extended the aborted list.
        txn(5, vec![r(3, None), w(1, &[10, 20, 50])]),
    ];
    let report = check_observed(&h, Isolation::ReadCommitted);
    assert!(!report.ok());
    assert_eq!(report.count(Class::G1a), 3, "{report}");
    let summaries: Vec<&str> = report.anomalies.iter().map(|a| a.summary.as_str()).collect();
    assert!(summaries[0].contains("appended only by T2, which aborted"), "{report}");
    assert!(summaries[1].contains("T5 wrote"), "{report}");
    assert!(summaries[2].contains("no committed transaction appended"), "{report}");
}

#[test]
fn intermediate_read_is_g1b() {
    let h = vec![
        txn(1, vec![w(1, &[10]), w(1, &[10, 11])]),
        txn(2, vec![r(1, Some(&[10]))]),
        txn(3, vec![r(1, Some(&[10, 11]))]),
    ];
    let report = check_observed(&h, Isolation::ReadCommitted);
    assert!(!report.ok());
    assert_eq!(report.count(Class::G1b), 1, "{report}");
    assert_eq!(report.forbidden_count(), 1, "{report}");
    assert_eq!(report.anomalies[0].txns, vec![2, 1]);
}

#[test]
fn own_writes_must_be_seen() {
    let h = vec![txn(1, vec![w(1, &[10])]), txn(2, vec![w(1, &[10, 20]), r(1, Some(&[10]))])];
    let report = check_observed(&h, Isolation::ReadCommitted);
    assert_eq!(report.count(Class::Invalid), 1, "{report}");
    assert!(report.anomalies[0].summary.contains("did not see its own write"), "{report}");
    // Its own reads add no edge: only ww 1->2.
    assert_eq!(report.stats.edges, [1, 0, 0, 0]);
}

#[test]
fn malformed_lists_and_ids_are_invalid() {
    let h = vec![
        txn(1, vec![ObservedOp::Write { table: 0, key: Key::from(1), value: vec![1, 2, 3] }]),
        txn(1, vec![ObservedOp::Read { table: 0, key: Key::from(1), value: Some(vec![1]) }]),
        txn(2, vec![w(2, &[5])]),
        txn(3, vec![w(2, &[5])]),
    ];
    let report = check_observed(&h, Isolation::ReadCommitted);
    // Ragged write, ragged read, duplicate id, tag appended twice.
    assert_eq!(report.count(Class::Invalid), 4, "{report}");
}

#[test]
fn cycle_classes() {
    // G0: the lists order T1 before T2 on key 1 and after it on key 2.
    let h = vec![txn(1, vec![w(1, &[10]), w(2, &[20, 11])]), txn(2, vec![w(1, &[10, 21]), w(2, &[20])])];
    let report = check_observed(&h, Isolation::ReadCommitted);
    assert_eq!(report.count(Class::G0), 1, "{report}");
    // G1c: each read the other's append.
    let h = vec![txn(1, vec![w(1, &[10]), r(2, Some(&[20]))]), txn(2, vec![w(2, &[20]), r(1, Some(&[10]))])];
    let report = check_observed(&h, Isolation::ReadCommitted);
    assert_eq!(report.count(Class::G1c), 1, "{report}");
    assert!(report.anomalies[0].details[0].contains("read"), "{report}");
    // Read skew (G-single): T3 sees T2's append to key 2 but not its append to key 1.
    let h = vec![txn(2, vec![w(1, &[20]), w(2, &[21])]), txn(3, vec![r(1, None), r(2, Some(&[21]))])];
    let report = check_observed(&h, Isolation::Snapshot);
    assert_eq!(report.count(Class::GSingle), 1, "{report}");
    assert!(!report.ok());
    assert!(check_observed(&h, Isolation::ReadCommitted).ok());
}

/// A random serial execution: `n` transactions over `keys` keys, some
/// aborted (their appends never applied).
fn serial_history(seed: u64, n: u64, keys: u64) -> Vec<ObservedTxn> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut state: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut out = Vec::new();
    for id in 1..=n {
        let mut mine = state.clone();
        let mut ops = Vec::new();
        for op in 0..rng.gen_range(1..=4u64) {
            let k = rng.gen_range(0..keys);
            let cur = mine.get(&k).cloned();
            if rng.gen_bool(0.5) {
                ops.push(r(k, cur.as_deref()));
            } else {
                let mut l = cur.unwrap_or_default();
                l.push(id << 8 | op);
                ops.push(w(k, &l));
                mine.insert(k, l);
            }
        }
        let committed = rng.gen_ratio(9, 10);
        if committed {
            state = mine;
        }
        out.push(ObservedTxn { id, committed, ops });
    }
    out
}

#[test]
fn long_random_serial_history_passes() {
    let mut h = serial_history(7, 1000, 20);
    let report = check_observed(&h, Isolation::Serializable);
    assert!(report.ok(), "{report}");
    assert_eq!(report.anomalies, vec![], "{report}");
    assert_eq!(report.stats.cyclic_components, 0);
    assert!(report.stats.edges[0] > 100 && report.stats.edges[2] > 100, "{report}");
    // The order of the slice does not matter.
    h.reverse();
    let reversed = check_observed(&h, Isolation::Serializable);
    assert!(reversed.ok(), "{reversed}");
    assert_eq!(reversed.stats.edges, report.stats.edges);
}
