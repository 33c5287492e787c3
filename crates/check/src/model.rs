//! The history, indexed for checking: keys numbered, transactions found by
//! id, every key's committed versions in commit-timestamp order, and the
//! writer behind every version name.

use crate::report::{Class, Findings};
use multiverse::research::history::{History, Op, Outcome, TxnRecord, WriteKind, Writer};
use multiverse::Key;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Bound;

/// A small, fast, non-cryptographic hasher (the Firefox/rustc "Fx" hash):
/// the checker hashes millions of small integer keys.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64);
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
pub(crate) type FxSet<K> = HashSet<K, BuildHasherDefault<FxHasher>>;

/// A transaction's position in [`History::txns`]; also its graph node.
pub(crate) type TxnIx = u32;
/// A (table, key) pair's number.
pub(crate) type KeyId = u32;

/// One committed version of a key: its writer and the writer's last value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Version<'h> {
    /// The writer's commit timestamp.
    pub(crate) ts: u64,
    /// The writer.
    pub(crate) txn: TxnIx,
    /// The writer's last value of the key; `None` when it deleted it.
    pub(crate) last: Option<&'h [u8]>,
}

/// Where the version a read names comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// A committed recorded transaction, at this place in the key's versions.
    Txn(TxnIx, u32),
    /// A committed version no recorded transaction wrote (the initial state,
    /// or history before recording began), named by its timestamp.
    External(u64),
    /// The reader's own write.
    Own,
    /// An aborted transaction.
    Aborted(TxnIx),
    /// `Writer::Txn(id)` with an id not in the history.
    Unknown(u64),
    /// A committed transaction that did not write this key.
    NotWriter(TxnIx),
}

/// The state of a key a reader observed, as a place in its version order.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Seen {
    /// The version at this place of the key's committed versions.
    At(u32),
    /// An external version with this timestamp.
    External(u64),
    /// Whatever was committed before this (begin) timestamp.
    Before(u64),
}

/// The indexed history.
pub(crate) struct Model<'h> {
    pub(crate) txns: &'h [TxnRecord],
    keys: FxMap<(u32, Key), KeyId>,
    /// (table, key) by key id.
    pub(crate) names: Vec<(u32, Key)>,
    /// The key id of every read, write and scan row, in history order.
    op_keys: Vec<KeyId>,
    /// Where each transaction's key ids start in `op_keys`.
    op_start: Vec<usize>,
    by_id: FxMap<u64, TxnIx>,
    /// Per key: committed versions, sorted by commit timestamp.
    versions: Vec<Vec<Version<'h>>>,
    aborted_at: FxMap<(KeyId, u64), TxnIx>,
    /// Per table: the keys that have committed versions, in key order.
    tables: FxMap<u32, BTreeMap<Key, KeyId>>,
    /// The smallest commit timestamp of a committed transaction that wrote
    /// something: versions no recorded transaction wrote must not be later.
    first_commit: Option<u64>,
}

impl<'h> Model<'h> {
    /// Indexes `h`; reports malformed transactions as [`Class::Invalid`].
    pub(crate) fn build(h: &'h History, found: &mut Findings) -> Model<'h> {
        let ops: usize = h.txns.iter().map(|t| t.ops.len()).sum();
        let mut by_id = FxMap::default();
        by_id.reserve(h.txns.len());
        let mut m = Model {
            txns: &h.txns,
            keys: FxMap::default(),
            names: Vec::new(),
            op_keys: Vec::with_capacity(ops),
            op_start: Vec::with_capacity(h.txns.len() + 1),
            by_id,
            versions: Vec::new(),
            aborted_at: FxMap::default(),
            tables: FxMap::default(),
            first_commit: None,
        };
        let mut last = FxMap::default();
        for (i, t) in h.txns.iter().enumerate() {
            m.add_txn(i as TxnIx, t, &mut last, found);
        }
        m.op_start.push(m.op_keys.len());
        m.order_versions(found);
        m
    }

    fn add_txn(
        &mut self,
        ix: TxnIx,
        t: &'h TxnRecord,
        last: &mut FxMap<KeyId, Option<&'h [u8]>>,
        found: &mut Findings,
    ) {
        if let Some(first) = self.by_id.get(&t.id).copied() {
            // Keep the first one for resolving names.
            found.note(Class::Invalid, &[t.id], || format!("transaction id {} appears more than once", t.id));
            self.by_id.insert(t.id, first);
        } else {
            self.by_id.insert(t.id, ix);
        }
        if t.outcome == Outcome::Committed && t.commit_ts.is_none() {
            found.note(Class::Invalid, &[t.id], || format!("T{} committed without a commit timestamp", t.id));
        }
        if let Some(commit) = t.commit_ts.filter(|&c| c < t.begin_ts) {
            let (id, begin) = (t.id, t.begin_ts);
            found.note(Class::Invalid, &[id], || format!("T{id} commits at {commit}, before it began at {begin}"));
        }
        self.op_start.push(self.op_keys.len());
        last.clear();
        for op in &t.ops {
            match op {
                Op::Write { table, key, kind, value } => {
                    let k = self.intern(*table, key.clone());
                    self.op_keys.push(k);
                    last.insert(k, (*kind != WriteKind::Delete).then_some(value.as_slice()));
                }
                Op::Read { table, key, .. } => {
                    let k = self.intern(*table, key.clone());
                    self.op_keys.push(k);
                }
                Op::Scan { table, rows, .. } => {
                    for (key, _, _) in rows {
                        let k = self.intern(*table, key.clone());
                        self.op_keys.push(k);
                    }
                }
            }
        }
        if let (Outcome::Committed, Some(ts), false) = (t.outcome, t.commit_ts, last.is_empty()) {
            self.first_commit = Some(self.first_commit.map_or(ts, |f| f.min(ts)));
        }
        for (&k, &value) in last.iter() {
            match (t.outcome, t.commit_ts) {
                (Outcome::Committed, Some(ts)) => self.versions[k as usize].push(Version { ts, txn: ix, last: value }),
                (Outcome::Aborted(_), Some(ts)) => {
                    self.aborted_at.insert((k, ts), ix);
                }
                _ => {}
            }
        }
    }

    fn intern(&mut self, table: u32, key: Key) -> KeyId {
        let next = self.names.len() as KeyId;
        let id = *self.keys.entry((table, key.clone())).or_insert(next);
        if id == next {
            self.names.push((table, key));
            self.versions.push(Vec::new());
        }
        id
    }

    /// Sorts every key's committed versions by commit timestamp.
    fn order_versions(&mut self, found: &mut Findings) {
        for k in 0..self.versions.len() {
            let vs = &mut self.versions[k];
            if vs.is_empty() {
                continue;
            }
            vs.sort_unstable_by_key(|v| (v.ts, self.txns[v.txn as usize].id));
            for pair in vs.windows(2) {
                if pair[0].ts == pair[1].ts {
                    let (a, b) = (self.txns[pair[0].txn as usize].id, self.txns[pair[1].txn as usize].id);
                    let (key, ts) = (key_name(&self.names[k]), pair[0].ts);
                    found.note(Class::Invalid, &[a, b], || {
                        format!("T{a} and T{b} both wrote {key} with the same commit timestamp {ts}")
                    });
                }
            }
            let (table, key) = self.names[k].clone();
            self.tables.entry(table).or_default().insert(key, k as KeyId);
        }
    }

    /// The key ids of transaction `ix`'s operations: one per read and write,
    /// one per scan row, in program order.
    pub(crate) fn op_keys(&self, ix: TxnIx) -> &[KeyId] {
        &self.op_keys[self.op_start[ix as usize]..self.op_start[ix as usize + 1]]
    }

    /// The first recorded commit: the smallest commit timestamp of a
    /// committed transaction that wrote something (`None` if none did).
    pub(crate) fn first_commit(&self) -> Option<u64> {
        self.first_commit
    }

    /// Number of distinct keys.
    pub(crate) fn key_count(&self) -> usize {
        self.names.len()
    }

    /// Key `k`'s committed versions in version order.
    pub(crate) fn versions(&self, k: KeyId) -> &[Version<'h>] {
        &self.versions[k as usize]
    }

    /// The version at place `pos` of key `k`.
    pub(crate) fn version(&self, k: KeyId, pos: u32) -> Version<'h> {
        self.versions[k as usize][pos as usize]
    }

    /// The transaction `ix`.
    pub(crate) fn txn(&self, ix: TxnIx) -> &'h TxnRecord {
        &self.txns[ix as usize]
    }

    /// Resolves the version name `w` of key `k`, as read by `reader`.
    pub(crate) fn resolve(&self, reader: TxnIx, k: KeyId, w: Writer) -> Source {
        match w {
            Writer::Txn(id) => match self.by_id.get(&id) {
                None => Source::Unknown(id),
                Some(&t) if t == reader => Source::Own,
                Some(&t) => {
                    let txn = self.txn(t);
                    match (txn.outcome, txn.commit_ts) {
                        (Outcome::Aborted(_), _) => Source::Aborted(t),
                        (Outcome::Committed, Some(ts)) => match self.find(k, ts, |v| v.txn == t) {
                            Some(pos) => Source::Txn(t, pos),
                            None => Source::NotWriter(t),
                        },
                        (Outcome::Committed, None) => Source::NotWriter(t),
                    }
                }
            },
            Writer::Committed(ts) => match self.find(k, ts, |_| true) {
                Some(pos) if self.version(k, pos).txn == reader => Source::Own,
                Some(pos) => Source::Txn(self.version(k, pos).txn, pos),
                None => match self.aborted_at.get(&(k, ts)) {
                    Some(&t) if t != reader => Source::Aborted(t),
                    _ => Source::External(ts),
                },
            },
        }
    }

    /// The place of the version of `k` committed at `ts` that `pick` accepts.
    fn find(&self, k: KeyId, ts: u64, pick: impl Fn(&Version<'h>) -> bool) -> Option<u32> {
        let vs = self.versions(k);
        let at = vs.partition_point(|v| v.ts < ts);
        vs[at..].iter().take_while(|v| v.ts == ts).position(pick).map(|p| (at + p) as u32)
    }

    /// The place of the first committed version after the observed state
    /// `seen` (the version that overwrote it), if any.
    pub(crate) fn next_after(&self, k: KeyId, seen: Seen) -> Option<u32> {
        let vs = self.versions(k);
        let at = match seen {
            Seen::At(pos) => pos as usize + 1,
            Seen::External(ts) => vs.partition_point(|v| v.ts <= ts),
            Seen::Before(ts) => vs.partition_point(|v| v.ts < ts),
        };
        (at < vs.len()).then_some(at as u32)
    }

    /// The place of the last committed version of `k` with a commit
    /// timestamp below `ts` (what a snapshot taken at `ts` sees).
    pub(crate) fn visible_at(&self, k: KeyId, ts: u64) -> Option<u32> {
        let at = self.versions(k).partition_point(|v| v.ts < ts);
        at.checked_sub(1).map(|p| p as u32)
    }

    /// The keys of `table` with committed versions inside the range.
    pub(crate) fn keys_in(&self, table: u32, lo: &Bound<Key>, hi: &Bound<Key>) -> Vec<(Key, KeyId)> {
        let Some(keys) = self.tables.get(&table) else { return Vec::new() };
        if !range_is_valid(lo, hi) {
            return Vec::new();
        }
        keys.range((lo.as_ref(), hi.as_ref())).map(|(k, &id)| (k.clone(), id)).collect()
    }

    /// Whether the first write of key `k` by transaction `t` was an insert:
    /// the row was absent before `t`.
    pub(crate) fn first_write_inserts(&self, t: TxnIx, k: KeyId) -> bool {
        let (table, key) = &self.names[k as usize];
        self.txn(t).ops.iter().find_map(|op| match op {
            Op::Write { table: tb, key: ky, kind, .. } if tb == table && ky == key => Some(*kind == WriteKind::Insert),
            _ => None,
        }) == Some(true)
    }

    /// Whether transaction `t` wrote a value equal to `value` to key `k`
    /// (at any point, not only last).
    pub(crate) fn ever_wrote(&self, t: TxnIx, k: KeyId, value: &[u8]) -> bool {
        let (table, key) = &self.names[k as usize];
        self.txn(t).ops.iter().any(|op| {
            matches!(op, Op::Write { table: tb, key: ky, kind, value: v }
                if tb == table && ky == key && *kind != WriteKind::Delete && v.as_slice() == value)
        })
    }
}

/// False for ranges that `BTreeMap::range` would panic on (start after end,
/// or equal and both excluded); such a range holds no key.
fn range_is_valid(lo: &Bound<Key>, hi: &Bound<Key>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b) | Bound::Included(b)) => a < b,
        _ => true,
    }
}

/// True when `key` lies inside the range.
pub(crate) fn in_range(key: &Key, lo: &Bound<Key>, hi: &Bound<Key>) -> bool {
    let above = match lo {
        Bound::Included(l) => key >= l,
        Bound::Excluded(l) => key > l,
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(h) => key <= h,
        Bound::Excluded(h) => key < h,
        Bound::Unbounded => true,
    };
    above && below
}

/// `t0/key 5` for 8-byte keys, `t0/key 0x0102` otherwise.
pub(crate) fn key_name((table, key): &(u32, Key)) -> String {
    match (key.len(), key.to_u64()) {
        (8, Some(n)) => format!("t{table}/key {n}"),
        _ => format!("t{table}/key 0x{}", hex(key.as_bytes())),
    }
}

/// Lower-case hex, `-` when empty.
pub(crate) fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "-".into();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A value for a message: hex, shortened beyond 16 bytes.
pub(crate) fn short_value(bytes: &[u8]) -> String {
    if bytes.len() <= 16 {
        hex(bytes)
    } else {
        format!("{}...({} bytes)", hex(&bytes[..16]), bytes.len())
    }
}

/// `c:12` or `t:7`.
pub(crate) fn writer_name(w: Writer) -> String {
    match w {
        Writer::Committed(ts) => format!("c:{ts}"),
        Writer::Txn(id) => format!("t:{id}"),
    }
}
