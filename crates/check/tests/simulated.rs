//! Histories from a small simulated multi-version database, at each
//! isolation level and with deliberate bugs: correct runs must check clean
//! (no false positives), broken ones must not.

mod common;

use multiverse::research::history::{History, Op, Outcome, TxnRecord, WriteKind, Writer};
use multiverse::{AbortReason, Isolation, Key};
use multiverse_check::{check, check_appends, Class};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::time::Instant;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// One transaction at a time.
    Serial,
    /// Reads at the latest committed state; write locks.
    ReadCommitted,
    /// Snapshot reads, first-committer-wins.
    Snapshot,
    /// Snapshot plus read and phantom validation at commit (Hekaton style).
    Serializable,
    /// Bug: snapshot reads without write conflicts (lost updates).
    SnapshotNoConflicts,
}

struct Active {
    rec: TxnRecord,
    writes: BTreeMap<u64, Option<Vec<u8>>>,
    reads: Vec<u64>,
    scans: Vec<(u64, u64)>,
    left: usize,
}

struct Sim {
    rng: SmallRng,
    mode: Mode,
    keys: u64,
    clock: u64,
    next_id: u64,
    /// Per key: committed versions (commit timestamp, value or deleted).
    versions: Vec<Vec<(u64, Option<Vec<u8>>)>>,
    locks: HashMap<u64, u64>,
    /// Values are lists (each write appends a tag); otherwise just the tag.
    append: bool,
    active: Vec<Active>,
    done: Vec<TxnRecord>,
}

impl Sim {
    fn new(seed: u64, mode: Mode, keys: u64) -> Sim {
        let versions = (0..keys).map(|k| vec![(1, Some(k.to_be_bytes().to_vec()))]).collect();
        Sim {
            rng: SmallRng::seed_from_u64(seed),
            mode,
            keys,
            clock: 2,
            next_id: 1,
            versions,
            locks: HashMap::new(),
            append: true,
            active: Vec::new(),
            done: Vec::new(),
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock - 1
    }

    fn run(mut self, txns: usize, concurrency: usize) -> History {
        let concurrency = if self.mode == Mode::Serial { 1 } else { concurrency };
        while self.done.len() + self.active.len() < txns || !self.active.is_empty() {
            let start = self.active.len() < concurrency && self.done.len() + self.active.len() < txns;
            if start && (self.active.is_empty() || self.rng.gen_bool(0.3)) {
                self.begin();
            } else {
                let i = self.rng.gen_range(0..self.active.len());
                self.step(i);
            }
        }
        History { txns: self.done }
    }

    fn begin(&mut self) {
        let isolation = match self.mode {
            Mode::ReadCommitted => Isolation::ReadCommitted,
            Mode::Snapshot | Mode::SnapshotNoConflicts => Isolation::Snapshot,
            Mode::Serial | Mode::Serializable => Isolation::Serializable,
        };
        let id = self.next_id;
        self.next_id += 1;
        let begin_ts = self.tick();
        let rec = TxnRecord {
            id,
            isolation,
            begin_ts,
            commit_ts: None,
            outcome: Outcome::Committed,
            locking: false,
            snapshot: false,
            ops: Vec::new(),
        };
        let left = self.rng.gen_range(1..6);
        self.active.push(Active { rec, writes: BTreeMap::new(), reads: Vec::new(), scans: Vec::new(), left });
    }

    fn step(&mut self, i: usize) {
        if self.active[i].left == 0 {
            self.finish(i);
            return;
        }
        self.active[i].left -= 1;
        let k = self.rng.gen_range(0..self.keys);
        match self.rng.gen_range(0..10) {
            0..=3 => self.read(i, k),
            4 => {
                let hi = (k + self.rng.gen_range(1..5)).min(self.keys);
                self.scan(i, k, hi);
            }
            // No deletes in the buggy mode, so that the append check sees every key.
            5 if self.mode != Mode::SnapshotNoConflicts && self.rng.gen_bool(0.3) => self.write(i, k, true),
            _ => self.write(i, k, false),
        }
    }

    /// What transaction `i` sees of key `k`: its own write, or the committed
    /// state at its read time. `None` inside: absent.
    fn visible(&self, i: usize, k: u64) -> (Option<Writer>, Option<Vec<u8>>) {
        let a = &self.active[i];
        if let Some(own) = a.writes.get(&k) {
            return (Some(Writer::Txn(a.rec.id)), own.clone());
        }
        let rt = if a.rec.isolation == Isolation::ReadCommitted { self.clock } else { a.rec.begin_ts };
        match self.versions[k as usize].iter().rev().find(|(ts, _)| *ts < rt) {
            Some((ts, v)) => (Some(Writer::Committed(*ts)), v.clone()),
            None => (None, None),
        }
    }

    fn read(&mut self, i: usize, k: u64) {
        let version = match self.visible(i, k) {
            (Some(w), Some(v)) => Some((w, v)),
            _ => None,
        };
        let a = &mut self.active[i];
        a.reads.push(k);
        a.rec.ops.push(Op::Read { table: 0, key: Key::from(k), version });
    }

    fn scan(&mut self, i: usize, lo: u64, hi: u64) {
        let rows = (lo..hi)
            .filter_map(|k| match self.visible(i, k) {
                (Some(w), Some(v)) => Some((Key::from(k), w, v)),
                _ => None,
            })
            .collect();
        let a = &mut self.active[i];
        a.scans.push((lo, hi));
        let (lo, hi) = (Bound::Included(Key::from(lo)), Bound::Excluded(Key::from(hi)));
        a.rec.ops.push(Op::Scan { table: 0, index: 0, lo, hi, filtered: false, rows });
    }

    fn write(&mut self, i: usize, k: u64, delete: bool) {
        if self.conflicts(i, k) {
            self.abort(i, AbortReason::WriteConflict);
            return;
        }
        let (writer, current) = self.visible(i, k);
        let id = self.active[i].rec.id;
        let append = self.append;
        let a = &mut self.active[i];
        let key = Key::from(k);
        let kind = match (&current, delete) {
            (None, _) => WriteKind::Insert,
            (Some(_), true) => WriteKind::Delete,
            (Some(_), false) => WriteKind::Update,
        };
        if let (Some(w), Some(v)) = (writer, &current) {
            // As the engine does: an update or delete records the version it replaces.
            a.rec.ops.push(Op::Read { table: 0, key: key.clone(), version: Some((w, v.clone())) });
        }
        let value = if kind == WriteKind::Delete {
            Vec::new()
        } else {
            // List append: the previous value and an 8-byte writer tag.
            let mut v = if append { current.unwrap_or_default() } else { Vec::new() };
            v.extend_from_slice(&id.to_be_bytes());
            v
        };
        a.writes.insert(k, (kind != WriteKind::Delete).then(|| value.clone()));
        a.rec.ops.push(Op::Write { table: 0, key, kind, value });
        self.locks.insert(k, id);
    }

    /// First-writer-wins: another writer holds the key, or (snapshot) a
    /// version was committed after this transaction began.
    fn conflicts(&self, i: usize, k: u64) -> bool {
        if self.mode == Mode::SnapshotNoConflicts {
            return false;
        }
        let a = &self.active[i];
        if self.locks.get(&k).is_some_and(|&holder| holder != a.rec.id) {
            return true;
        }
        let latest = self.versions[k as usize].last().map_or(0, |v| v.0);
        a.rec.isolation != Isolation::ReadCommitted && latest > a.rec.begin_ts
    }

    /// Backward validation: nothing this transaction read or scanned changed.
    fn validation_fails(&self, a: &Active) -> Option<AbortReason> {
        let changed = |k: u64| self.versions[k as usize].last().is_some_and(|v| v.0 > a.rec.begin_ts);
        if a.reads.iter().any(|&k| !a.writes.contains_key(&k) && changed(k)) {
            return Some(AbortReason::ReadValidation);
        }
        let phantom = a.scans.iter().any(|&(lo, hi)| (lo..hi).any(|k| !a.writes.contains_key(&k) && changed(k)));
        phantom.then_some(AbortReason::Phantom)
    }

    fn finish(&mut self, i: usize) {
        if self.rng.gen_bool(0.05) {
            self.abort(i, AbortReason::User);
            return;
        }
        if self.mode == Mode::Serializable {
            if let Some(reason) = self.validation_fails(&self.active[i]) {
                self.abort(i, reason);
                return;
            }
        }
        let mut a = self.active.swap_remove(i);
        let ts = if a.writes.is_empty() { a.rec.begin_ts } else { self.tick() };
        for (k, v) in std::mem::take(&mut a.writes) {
            self.versions[k as usize].push((ts, v));
            self.locks.remove(&k);
        }
        a.rec.commit_ts = Some(ts);
        self.done.push(a.rec);
    }

    fn abort(&mut self, i: usize, reason: AbortReason) {
        let mut a = self.active.swap_remove(i);
        for k in a.writes.keys() {
            if self.locks.get(k) == Some(&a.rec.id) {
                self.locks.remove(k);
            }
        }
        a.rec.outcome = Outcome::Aborted(reason);
        self.done.push(a.rec);
    }
}

fn simulate(seed: u64, mode: Mode, keys: u64, txns: usize, concurrency: usize) -> History {
    Sim::new(seed, mode, keys).run(txns, concurrency)
}

#[test]
fn serial_histories_are_clean_at_every_level() {
    for seed in 0..20 {
        let h = simulate(seed, Mode::Serial, 8, 300, 1);
        common::expect_clean(&h);
        assert!(check_appends(&h).is_empty());
    }
}

#[test]
fn serializable_histories_have_no_cycle() {
    for seed in 0..20 {
        let h = simulate(seed, Mode::Serializable, 12, 400, 6);
        for level in Isolation::ALL {
            let r = check(&h, level);
            assert!(r.ok() && r.anomalies.is_empty(), "seed {seed} at {level}:\n{r}");
        }
        assert!(check_appends(&h).is_empty(), "seed {seed}");
    }
}

#[test]
fn snapshot_histories_pass_snapshot_but_show_write_skew() {
    let mut skew = 0;
    for seed in 0..20 {
        let h = simulate(seed, Mode::Snapshot, 6, 400, 6);
        let si = check(&h, Isolation::Snapshot);
        assert!(si.ok(), "seed {seed}:\n{si}");
        // Snapshot isolation can never produce G0, G1 or G-single.
        for class in [Class::G0, Class::G1a, Class::G1b, Class::G1c, Class::GSingle, Class::Invalid] {
            assert_eq!(si.count(class), 0, "seed {seed}:\n{si}");
        }
        assert!(check(&h, Isolation::ReadCommitted).ok());
        assert!(check_appends(&h).is_empty(), "seed {seed}: {:?}", check_appends(&h));
        let ser = check(&h, Isolation::Serializable);
        skew += ser.count(Class::G2Item) + ser.count(Class::G2);
    }
    assert!(skew > 0, "20 contended snapshot runs without a single write skew or phantom");
}

#[test]
fn read_committed_histories_pass_read_committed() {
    for seed in 0..20 {
        let h = simulate(seed, Mode::ReadCommitted, 6, 400, 6);
        let r = check(&h, Isolation::ReadCommitted);
        assert!(r.ok(), "seed {seed}:\n{r}");
        assert!(check_appends(&h).is_empty(), "seed {seed}");
    }
}

#[test]
fn lost_updates_are_caught() {
    let mut caught_appends = 0;
    for seed in 0..10 {
        let h = simulate(seed, Mode::SnapshotNoConflicts, 4, 300, 6);
        let r = check(&h, Isolation::Snapshot);
        assert!(!r.ok(), "seed {seed}:\n{r}");
        assert!(r.count(Class::SnapshotWrite) > 0 && r.count(Class::GSingle) > 0, "seed {seed}:\n{r}");
        assert!(!check(&h, Isolation::Serializable).ok());
        caught_appends += check_appends(&h).len();
    }
    assert!(caught_appends > 0, "divergent appends went unnoticed");
}

#[test]
fn every_anomaly_survives_the_text_format() {
    for seed in 0..5 {
        let h = simulate(seed, Mode::SnapshotNoConflicts, 5, 200, 5);
        let mut text = Vec::new();
        multiverse_check::write_history(&h, &mut text).unwrap();
        let back = multiverse_check::read_history(&text[..]).unwrap();
        assert_eq!(back, h);
        for level in Isolation::ALL {
            assert_eq!(check(&back, level), check(&h, level));
        }
    }
}

#[test]
fn moderately_large_history() {
    let h = simulate(7, Mode::Snapshot, 2000, 20_000, 16);
    let r = check(&h, Isolation::Snapshot);
    assert!(r.ok(), "{r}");
    assert_eq!(r.stats.txns, 20_000);
}

/// Timing on big histories: `cargo test --release -p multiverse-check --test
/// simulated -- --ignored --nocapture`.
#[test]
#[ignore]
fn large_history_timing() {
    let only = std::env::var("TIMING_MODE").unwrap_or_default();
    for (mode, keys) in [(Mode::Snapshot, 100_000), (Mode::Serializable, 100_000), (Mode::SnapshotNoConflicts, 20_000)]
    {
        if !only.is_empty() && format!("{mode:?}") != only {
            continue;
        }
        let t0 = Instant::now();
        let mut sim = Sim::new(11, mode, keys);
        sim.append = false;
        let h = sim.run(500_000, 32);
        let ops: usize = h.txns.iter().map(|t| t.ops.len()).sum();
        let t1 = Instant::now();
        let r = check(&h, Isolation::Serializable);
        let t2 = Instant::now();
        let mut text = Vec::new();
        multiverse_check::write_history(&h, &mut text).unwrap();
        let t3 = Instant::now();
        let back = multiverse_check::read_history(&text[..]).unwrap();
        let t4 = Instant::now();
        assert_eq!(back.txns.len(), h.txns.len());
        println!(
            "{mode:?}: {} txns, {ops} ops; simulate {:?}, check {:?}, write {:?} ({} MB), read {:?}",
            h.txns.len(),
            t1 - t0,
            t2 - t1,
            t3 - t2,
            text.len() >> 20,
            t4 - t3
        );
        print!("{r}");
    }
}
