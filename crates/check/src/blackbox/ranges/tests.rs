//! Tests of [`check_observed_ranges`](super::check_observed_ranges): serial scans and toggles
//! that pass, phantoms, scans no state explains, and rows nobody inserted.

use super::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const LEVELS: [Isolation; 4] =
    [Isolation::ReadCommitted, Isolation::Snapshot, Isolation::RepeatableRead, Isolation::Serializable];

/// Rows of table 0 in two ranges, slots 0..4 and 4..8, guarded by keys 0
/// and 1 of table 1 (an 8-byte count, then the tags); slots 0 and 4
/// hold a row at first.
fn layout() -> ObservedRanges {
    let range = |r: u64| ObservedRange { lo: Key::from(r * 4), hi: Key::from(r * 4 + 4), guard: (1, Key::from(r)) };
    ObservedRanges {
        table: 0,
        ranges: vec![range(0), range(1)],
        guard_prefix: 8,
        initial: vec![(Key::from(0), vec![0; 8]), (Key::from(4), vec![0; 8])],
    }
}

/// A serial model of the store, making the ops a client would record.
#[derive(Clone)]
struct Sim {
    rows: BTreeMap<u64, u64>,
    lists: [Vec<u64>; 2],
}

impl Sim {
    fn new() -> Sim {
        Sim { rows: [(0, 0), (4, 0)].into(), lists: [vec![], vec![]] }
    }

    fn guard(&self, r: u64) -> Vec<u8> {
        let n = self.rows.keys().filter(|s| **s / 4 == r).count() as u64;
        let mut v = n.to_le_bytes().to_vec();
        v.extend(self.lists[r as usize].iter().flat_map(|t| t.to_be_bytes()));
        v
    }

    fn count(&self, r: u64) -> ObservedOp {
        ObservedOp::Read { table: 1, key: Key::from(r), value: Some(self.guard(r)) }
    }

    /// A scan of range `r` (`None`: the whole table).
    fn scan(&self, r: Option<u64>) -> ObservedOp {
        let (lo, hi) = match r {
            Some(r) => (Bound::Included(Key::from(r * 4)), Bound::Excluded(Key::from(r * 4 + 4))),
            None => (Bound::Unbounded, Bound::Unbounded),
        };
        let rows = self
            .rows
            .iter()
            .filter(|(s, _)| r.is_none_or(|r| **s / 4 == r))
            .map(|(s, t)| (Key::from(*s), t.to_le_bytes().to_vec()))
            .collect();
        ObservedOp::Scan { table: 0, lo, hi, rows }
    }

    fn probe(&self, slot: u64) -> ObservedOp {
        ObservedOp::Read {
            table: 0,
            key: Key::from(slot),
            value: self.rows.get(&slot).map(|t| t.to_le_bytes().to_vec()),
        }
    }

    /// Inserts a row tagged `tag` at `slot`, or deletes the one there,
    /// and appends `tag` to the range's guard.
    fn toggle(&mut self, slot: u64, tag: u64) -> Vec<ObservedOp> {
        let (r, key) = (slot / 4, Key::from(slot));
        let mut ops = vec![self.probe(slot), self.count(r)];
        let row = match self.rows.remove(&slot) {
            Some(_) => ObservedOp::Delete { table: 0, key },
            None => {
                self.rows.insert(slot, tag);
                ObservedOp::Write { table: 0, key, value: tag.to_le_bytes().to_vec() }
            }
        };
        self.lists[r as usize].push(tag);
        ops.push(ObservedOp::Write { table: 1, key: Key::from(r), value: self.guard(r) });
        ops.push(row);
        ops
    }
}

fn txn(id: u64, ops: Vec<ObservedOp>) -> ObservedTxn {
    ObservedTxn { id, committed: true, ops }
}

fn check(h: &[ObservedTxn], level: Isolation) -> Report {
    check_observed_ranges(h, &layout(), level, &Limits::default())
}

/// A random serial execution of scans, lookups, toggles and scan-writes.
fn serial(seed: u64, n: u64) -> Vec<ObservedTxn> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut sim = Sim::new();
    (1..=n)
        .map(|id| {
            let r = rng.gen_range(0..2u64);
            let ops = match rng.gen_range(0..4) {
                0 => vec![sim.count(r), sim.scan(Some(r)), sim.probe(rng.gen_range(0..8))],
                1 => vec![sim.count(0), sim.count(1), sim.scan(None)],
                2 => sim.toggle(rng.gen_range(0..8), id),
                _ => [vec![sim.scan(Some(r))], sim.toggle(rng.gen_range(0..8), id)].concat(),
            };
            txn(id, ops)
        })
        .collect()
}

#[test]
fn serial_scans_and_toggles_pass() {
    let mut h = serial(3, 400);
    for level in LEVELS {
        let report = check(&h, level);
        assert!(report.ok(), "{report}");
        assert_eq!(report.anomalies, vec![], "{report}");
    }
    let report = check(&h, Isolation::Serializable);
    assert!(report.stats.edges.iter().all(|&n| n > 50), "{report}");
    h.reverse();
    assert_eq!(check(&h, Isolation::Serializable).stats.edges, report.stats.edges);
}

#[test]
fn phantom_write_skew_is_g2() {
    // Each scans the range the other inserts into, from the first state.
    let s0 = Sim::new();
    let mut sim = s0.clone();
    let h = vec![
        txn(1, [vec![s0.scan(Some(0))], sim.toggle(5, 1)].concat()),
        txn(2, [vec![s0.scan(Some(1))], sim.toggle(2, 2)].concat()),
    ];
    let ser = check(&h, Isolation::Serializable);
    assert!(!ser.ok(), "{ser}");
    assert_eq!((ser.count(Class::G2), ser.forbidden_count()), (1, 1), "{ser}");
    assert_eq!(ser.anomalies[0].txns, vec![1, 2], "{ser}");
    assert!(ser.anomalies[0].summary.contains("-prw("), "{ser}");
    assert!(ser.anomalies[0].details[0].contains("found no row"), "{ser}");
    for level in [Isolation::ReadCommitted, Isolation::Snapshot, Isolation::RepeatableRead] {
        let report = check(&h, level);
        assert!(report.ok(), "{report}");
        assert_eq!(report.count(Class::G2), 1, "{report}");
    }
}

#[test]
fn a_scan_that_matches_no_state_is_invalid_above_read_committed() {
    // T3's scan of range 0 holds T2's row at slot 2 but not T1's at
    // slot 1, which T1 inserted before T2 (the guard's order).
    let mut sim = Sim::new();
    let (t1, t2) = (sim.toggle(1, 11), sim.toggle(2, 12));
    let mut scan = sim.scan(Some(0));
    if let ObservedOp::Scan { rows, .. } = &mut scan {
        rows.retain(|(k, _)| *k != Key::from(1));
    }
    let h = vec![txn(1, t1), txn(2, t2), txn(3, vec![scan])];
    for level in [Isolation::Snapshot, Isolation::Serializable] {
        let report = check(&h, level);
        assert!(!report.ok(), "{report}");
        assert_eq!(report.count(Class::Invalid), 1, "{report}");
        assert!(report.anomalies.iter().any(|a| a.summary.contains("not a consistent snapshot")), "{report}");
    }
    // Key by key it is a phantom: T3 missed T1's row and saw T2's.
    for level in [Isolation::ReadCommitted, Isolation::RepeatableRead] {
        let report = check(&h, level);
        assert!(report.ok(), "{report}");
        assert_eq!(report.count(Class::Invalid), 0, "{report}");
    }
    assert_eq!(check(&h, Isolation::ReadCommitted).count(Class::GSingle), 1);
    assert_eq!(check(&h, Isolation::RepeatableRead).count(Class::G2), 1);
}

#[test]
fn a_scan_must_agree_with_the_count_it_read() {
    // T2 read the guard before T1's insert, and the range after it.
    let s0 = Sim::new();
    let mut sim = s0.clone();
    let t1 = sim.toggle(1, 11);
    let h = vec![txn(1, t1), txn(2, vec![s0.count(0), sim.scan(Some(0))])];
    let si = check(&h, Isolation::Snapshot);
    assert_eq!((si.count(Class::Invalid), si.count(Class::GSingle)), (1, 1), "{si}");
    assert!(si.anomalies.iter().any(|a| a.summary.contains("that state does not hold")), "{si}");
    // Read committed allows it (T2 -rw-> T1 -wr-> T2, one anti-dependency).
    let rc = check(&h, Isolation::ReadCommitted);
    assert!(rc.ok(), "{rc}");
    assert_eq!(rc.count(Class::GSingle), 1, "{rc}");
}

#[test]
fn a_state_seen_twice_makes_no_false_edge() {
    // T1 inserts at slot 1, T2 deletes it: range 0 is back to its first
    // state, which T3 (before T1) and T4 (after T2) both scan; T5 then
    // inserts at slot 2.
    let s0 = Sim::new();
    let mut sim = s0.clone();
    let (t1, t2) = (sim.toggle(1, 11), sim.toggle(1, 12));
    let s2 = sim.clone();
    let t5 = sim.toggle(2, 15);
    let h = vec![
        txn(1, t1),
        txn(2, t2),
        txn(3, vec![s0.scan(Some(0)), s0.probe(1)]),
        txn(4, vec![s2.count(0), s2.scan(Some(0)), s2.probe(1)]),
        txn(5, t5),
        // Without a count read, its scan matches states 0 and 2.
        txn(6, vec![s2.scan(Some(0))]),
    ];
    for level in LEVELS {
        let report = check(&h, level);
        assert!(report.ok(), "{report}");
        assert_eq!(report.anomalies, vec![], "{report}");
        assert_eq!(report.stats.cyclic_components, 0, "{report}");
    }
}

#[test]
fn a_row_nobody_inserted_is_g1a_and_a_toggle_that_does_not_replay_is_invalid() {
    let mut sim = Sim::new();
    let t1 = sim.toggle(1, 11);
    let mut scan = sim.scan(Some(0));
    if let ObservedOp::Scan { rows, .. } = &mut scan {
        rows.push((Key::from(3), 99u64.to_le_bytes().to_vec()));
    }
    let h = vec![txn(1, t1.clone()), txn(2, vec![scan])];
    let report = check(&h, Isolation::ReadCommitted);
    assert_eq!(report.count(Class::G1a), 1, "{report}");
    assert!(report.anomalies[0].summary.contains("no committed transaction inserted"), "{report}");
    // T2 inserts at slot 1 after T1 did, without a delete between.
    let mut again = Sim::new();
    let t2 = again.toggle(1, 12);
    let mut t2: Vec<ObservedOp> =
        t2.into_iter().filter(|op| !matches!(op, ObservedOp::Write { table: 1, .. })).collect();
    t2.push(ObservedOp::Write {
        table: 1,
        key: Key::from(0),
        value: sim.guard(0).into_iter().chain(12u64.to_be_bytes()).collect(),
    });
    let report = check(&[txn(1, t1), txn(2, t2)], Isolation::ReadCommitted);
    assert!(report.anomalies.iter().any(|a| a.summary.contains("do not replay")), "{report}");
}
