//! List-append cross-check (in the manner of Jepsen's Elle).
//!
//! When a workload treats every value as a list and every write as an
//! append (the new value is the previous value followed by a tag of
//! [`APPEND_TAG_LEN`] bytes naming the writer), the values themselves record
//! the order in which versions were installed: a version's value is a prefix
//! of every later version's. [`check_appends`] recovers that order for each
//! key and compares it with the commit-timestamp order the checker trusts.
//! A mismatch means the engine's timestamps lie about the version order, or
//! appends were lost (two values that do not extend one another), or a read
//! saw a value outside the committed list.

use crate::model::{key_name, short_value, FxMap};
use multiverse::research::history::{History, Op, Outcome, WriteKind};
use multiverse::Key;
use std::fmt;

/// Bytes each append adds in a list-append workload (a writer tag).
pub const APPEND_TAG_LEN: usize = 8;

/// One disagreement between the values and the commit order of a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppendMismatch {
    /// Table number.
    pub table: u32,
    /// Primary key.
    pub key: Key,
    /// What disagrees, in one line.
    pub message: String,
}

impl fmt::Display for AppendMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", key_name(&(self.table, self.key.clone())), self.message)
    }
}

/// One committed writer's final value of a key.
struct Append<'h> {
    commit_ts: u64,
    txn: u64,
    value: &'h [u8],
}

/// Per key: committed writers' final values, and whether a delete was seen.
#[derive(Default)]
struct KeyAppends<'h> {
    writes: Vec<Append<'h>>,
    deleted: bool,
}

/// Compares, for every key written only by inserts and updates, the version
/// order implied by the values with the commit-timestamp order, and checks
/// that every committed read returned a prefix of the key's final list.
/// Keys that a committed transaction ever deleted are skipped. At most one mismatch of each
/// kind is reported per key.
pub fn check_appends(history: &History) -> Vec<AppendMismatch> {
    let keys = collect_writes(history);
    let mut out = Vec::new();
    let mut finals: FxMap<(u32, Key), &[u8]> = FxMap::default();
    let mut sorted: Vec<_> = keys.into_iter().filter(|(_, a)| !a.deleted && !a.writes.is_empty()).collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    for ((table, key), mut appends) in sorted {
        let mismatch = |message| AppendMismatch { table, key: key.clone(), message };
        appends.writes.sort_by_key(|a| (a.commit_ts, a.txn));
        match value_order(&appends.writes) {
            Err(message) => out.push(mismatch(message)),
            Ok(by_value) => {
                if let Some(message) = compare_orders(&appends.writes, &by_value) {
                    out.push(mismatch(message));
                }
                finals.insert((table, key.clone()), by_value.last().expect("non-empty").value);
            }
        }
    }
    check_reads(history, &finals, &mut out);
    out
}

fn collect_writes(history: &History) -> FxMap<(u32, Key), KeyAppends<'_>> {
    let mut keys: FxMap<(u32, Key), KeyAppends<'_>> = FxMap::default();
    for t in history.txns.iter().filter(|t| t.outcome == Outcome::Committed) {
        let Some(commit_ts) = t.commit_ts else { continue };
        // Last value per key; `None` once the key was deleted (a new list may follow).
        let mut last: FxMap<(u32, Key), Option<&[u8]>> = FxMap::default();
        for op in &t.ops {
            if let Op::Write { table, key, kind, value } = op {
                let v = if *kind == WriteKind::Delete { None } else { Some(value.as_slice()) };
                let slot = last.entry((*table, key.clone())).or_insert(v);
                *slot = slot.and(v);
            }
        }
        for (k, v) in last {
            let entry = keys.entry(k).or_default();
            match v {
                Some(value) => entry.writes.push(Append { commit_ts, txn: t.id, value }),
                None => entry.deleted = true,
            }
        }
    }
    keys
}

/// The writers sorted by value length, checked to form one list (each value
/// a strict prefix of the next).
fn value_order<'a, 'h>(writes: &'a [Append<'h>]) -> Result<Vec<&'a Append<'h>>, String> {
    let mut by_len: Vec<&Append<'h>> = writes.iter().collect();
    by_len.sort_by_key(|a| (a.value.len(), a.commit_ts));
    for pair in by_len.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a.value.len() == b.value.len() || !b.value.starts_with(a.value) {
            return Err(format!(
                "T{} wrote {} and T{} wrote {}: neither value extends the other (a lost or divergent append)",
                a.txn,
                short_value(a.value),
                b.txn,
                short_value(b.value)
            ));
        }
    }
    Ok(by_len)
}

/// The first place where the commit order and the value order disagree.
fn compare_orders(by_ts: &[Append<'_>], by_value: &[&Append<'_>]) -> Option<String> {
    let i = by_ts.iter().zip(by_value).position(|(a, b)| a.txn != b.txn || a.commit_ts != b.commit_ts)?;
    let (ts, val) = (&by_ts[i], by_value[i]);
    Some(format!(
        "commit order puts T{} (commit {}) at version {}, but the values put T{} (commit {}) there",
        ts.txn,
        ts.commit_ts,
        i + 1,
        val.txn,
        val.commit_ts
    ))
}

/// Every committed read of a key with a consistent list must return a
/// prefix of its final value.
fn check_reads(history: &History, finals: &FxMap<(u32, Key), &[u8]>, out: &mut Vec<AppendMismatch>) {
    let mut reported: FxMap<(u32, Key), ()> = FxMap::default();
    let mut report = |table: u32, key: Key, txn: u64, value: &[u8], out: &mut Vec<AppendMismatch>| {
        let Some(fin) = finals.get(&(table, key.clone())) else { return };
        if fin.starts_with(value) || reported.insert((table, key.clone()), ()).is_some() {
            return;
        }
        let message = format!("T{txn} read {}, which is not a prefix of the final list", short_value(value));
        out.push(AppendMismatch { table, key, message });
    };
    for t in history.txns.iter().filter(|t| t.outcome == Outcome::Committed) {
        for op in &t.ops {
            match op {
                Op::Read { table, key, version: Some((_, v)) } => report(*table, key.clone(), t.id, v, out),
                Op::Scan { table, index: 0, rows, .. } => {
                    for (key, _, v) in rows {
                        report(*table, key.clone(), t.id, v, out);
                    }
                }
                _ => {}
            }
        }
    }
}
