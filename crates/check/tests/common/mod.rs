//! Builders for hand-written histories, and assertions on reports.
#![allow(dead_code)]

use multiverse::research::history::{History, Op, Outcome, TxnRecord, WriteKind, Writer};
use multiverse::{AbortReason, Isolation, Key};
use multiverse_check::{check, Class, Report};
use std::ops::Bound;

pub const RC: Isolation = Isolation::ReadCommitted;
pub const SI: Isolation = Isolation::Snapshot;
pub const RR: Isolation = Isolation::RepeatableRead;
pub const SER: Isolation = Isolation::Serializable;
pub const ALL: [Isolation; 4] = Isolation::ALL;

/// An 8-byte big-endian value.
pub fn v(n: u64) -> Vec<u8> {
    n.to_be_bytes().to_vec()
}

/// A version committed at `ts`.
pub fn c(ts: u64) -> Writer {
    Writer::Committed(ts)
}

/// A version written by transaction `id`.
pub fn t(id: u64) -> Writer {
    Writer::Txn(id)
}

/// A transaction being written by hand (table 0, integer keys and values).
#[derive(Clone)]
pub struct Txn(pub TxnRecord);

/// A committed transaction at serializable (change with `.iso`).
pub fn txn(id: u64, begin: u64, commit: u64) -> Txn {
    Txn(TxnRecord {
        id,
        isolation: SER,
        begin_ts: begin,
        commit_ts: Some(commit),
        outcome: Outcome::Committed,
        locking: false,
        snapshot: false,
        ops: Vec::new(),
    })
}

impl Txn {
    pub fn iso(mut self, i: Isolation) -> Txn {
        self.0.isolation = i;
        self
    }
    /// Aborted before taking a commit timestamp.
    pub fn aborted(mut self, reason: AbortReason) -> Txn {
        self.0.outcome = Outcome::Aborted(reason);
        self.0.commit_ts = None;
        self
    }
    /// Aborted after taking a commit timestamp (failed validation).
    pub fn aborted_at(mut self, reason: AbortReason) -> Txn {
        self.0.outcome = Outcome::Aborted(reason);
        self
    }
    fn op(mut self, op: Op) -> Txn {
        self.0.ops.push(op);
        self
    }
    pub fn r(self, key: u64, w: Writer, val: u64) -> Txn {
        self.op(Op::Read { table: 0, key: Key::from(key), version: Some((w, v(val))) })
    }
    pub fn r_none(self, key: u64) -> Txn {
        self.op(Op::Read { table: 0, key: Key::from(key), version: None })
    }
    fn write(self, key: u64, kind: WriteKind, value: Vec<u8>) -> Txn {
        self.op(Op::Write { table: 0, key: Key::from(key), kind, value })
    }
    /// An update (blind: no read recorded).
    pub fn w(self, key: u64, val: u64) -> Txn {
        self.write(key, WriteKind::Update, v(val))
    }
    /// An update as the engine records it: the replaced version, then the write.
    pub fn upd(self, key: u64, old: Writer, old_val: u64, val: u64) -> Txn {
        self.r(key, old, old_val).w(key, val)
    }
    pub fn ins(self, key: u64, val: u64) -> Txn {
        self.write(key, WriteKind::Insert, v(val))
    }
    pub fn del(self, key: u64) -> Txn {
        self.write(key, WriteKind::Delete, Vec::new())
    }
    fn scan_op(self, lo: u64, hi: u64, filtered: bool, rows: &[(u64, Writer, u64)]) -> Txn {
        self.op(Op::Scan {
            table: 0,
            index: 0,
            lo: Bound::Included(Key::from(lo)),
            hi: Bound::Excluded(Key::from(hi)),
            filtered,
            rows: rows.iter().map(|&(k, w, val)| (Key::from(k), w, v(val))).collect(),
        })
    }
    /// A primary-key range scan `[lo, hi)` with no residual predicate.
    pub fn scan(self, lo: u64, hi: u64, rows: &[(u64, Writer, u64)]) -> Txn {
        self.scan_op(lo, hi, false, rows)
    }
    /// The same with a residual predicate (no predicate edges).
    pub fn scan_filtered(self, lo: u64, hi: u64, rows: &[(u64, Writer, u64)]) -> Txn {
        self.scan_op(lo, hi, true, rows)
    }
}

pub fn history(txns: Vec<Txn>) -> History {
    History { txns: txns.into_iter().map(|t| t.0).collect() }
}

/// Checks `h` at every level: `class` is found at each level where it can
/// be (the snapshot classes only when snapshot is claimed), and the verdict
/// fails exactly at the levels in `failing`.
pub fn expect(h: &History, class: Class, failing: &[Isolation]) -> Vec<Report> {
    ALL.iter()
        .map(|&level| {
            let report = check(h, level);
            let snapshot_only = matches!(class, Class::SnapshotRead | Class::SnapshotWrite);
            if !snapshot_only || level == SI {
                assert!(report.count(class) > 0, "{class} not found at {level}:\n{report}");
            }
            let fails = failing.contains(&level);
            assert_eq!(
                !report.ok(),
                fails,
                "verdict at {level} should be {}:\n{report}",
                if fails { "FAILED" } else { "OK" }
            );
            report
        })
        .collect()
}

/// `h` is clean: nothing at all is reported at any level.
pub fn expect_clean(h: &History) {
    for level in ALL {
        let report = check(h, level);
        assert!(report.ok() && report.anomalies.is_empty(), "expected a clean history at {level}:\n{report}");
    }
}
