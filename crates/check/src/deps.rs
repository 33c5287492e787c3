//! Derives the dependency edges of the direct serialization graph from the
//! reads and writes of committed transactions, and runs the direct checks
//! that need no cycle: G1a, G1b, unknown versions, own-write visibility and,
//! when snapshot isolation is claimed, the snapshot read rule and
//! first-committer-wins.
//!
//! Edges (see `docs/CHECKER.md` for the full rules):
//! - **ww**: consecutive committed writers of a key in commit-timestamp
//!   order; also `W -> T` when `T` read `W`'s version of a key and then wrote
//!   that key itself (its version must come later: if the commit order says
//!   otherwise, `T` overwrote a version that was not yet committed).
//! - **wr**: the writer of every version a committed transaction read (and,
//!   for snapshot reads that found nothing, the committed deleter they saw).
//! - **rw**: from a reader to the writer of the version after the one it
//!   read.
//! - **prw** (predicate rw): from a transaction that observed the absence
//!   of a row to the writer of the version after the state it observed: a
//!   point read that found nothing, or a key in the range of an unfiltered
//!   primary-key scan that the scan did not return. The observed state is
//!   the one as of the reader's begin timestamp (or its commit timestamp,
//!   see [`Deps::absence_seen`]); at read committed there is no such state,
//!   and no edge.

use crate::graph::{Dep, Edge};
use crate::model::{in_range, key_name, short_value, writer_name, FxMap, FxSet, KeyId, Model, Seen, Source, TxnIx};
use crate::report::{Class, Findings};
use multiverse::research::history::{Op, Outcome, TxnRecord, WriteKind, Writer};
use multiverse::{Isolation, Key};
use std::ops::Bound;

/// Builds the edges of the graph and reports direct anomalies.
pub(crate) struct Deps<'m, 'h> {
    m: &'m Model<'h>,
    found: &'m mut Findings,
    /// Snapshot isolation is claimed: check its two extra rules.
    snapshot: bool,
    pub(crate) edges: Vec<(u32, Edge)>,
    /// The reader's own writes so far: key -> last value (`None`: deleted).
    own: FxMap<KeyId, Option<&'h [u8]>>,
    /// Every key the reader writes, sorted.
    writes: Vec<KeyId>,
}

/// A scan's parameters.
struct Scan<'a> {
    table: u32,
    index: u8,
    lo: &'a Bound<Key>,
    hi: &'a Bound<Key>,
    filtered: bool,
}

/// A read as the checker sees it: one point read or one returned scan row.
struct Read<'a> {
    reader: TxnIx,
    key: KeyId,
    version: Option<(Writer, &'a [u8])>,
}

impl<'m, 'h> Deps<'m, 'h> {
    pub(crate) fn new(m: &'m Model<'h>, found: &'m mut Findings, claimed: Isolation) -> Deps<'m, 'h> {
        Deps {
            m,
            found,
            snapshot: claimed == Isolation::Snapshot,
            edges: Vec::new(),
            own: FxMap::default(),
            writes: Vec::new(),
        }
    }

    /// Derives everything: write edges, then every committed transaction's reads.
    pub(crate) fn run(mut self) -> Vec<(u32, Edge)> {
        self.write_edges();
        for ix in 0..self.m.txns.len() as TxnIx {
            if self.m.txn(ix).outcome == Outcome::Committed {
                self.txn_reads(ix);
            }
        }
        self.edges
    }

    fn edge(&mut self, from: TxnIx, to: TxnIx, dep: Dep, key: KeyId) {
        if from != to {
            self.edges.push((from, Edge { to, dep, key }));
        }
    }

    fn id(&self, ix: TxnIx) -> u64 {
        self.m.txn(ix).id
    }

    fn key_name(&self, k: KeyId) -> String {
        key_name(&self.m.names[k as usize])
    }

    /// A transaction at snapshot-type isolation reads as of its begin timestamp.
    fn snapshot_reader(t: &TxnRecord) -> bool {
        t.isolation != Isolation::ReadCommitted
    }

    // ------------------------------------------------------------------
    // Writes
    // ------------------------------------------------------------------

    /// ww edges between consecutive committed writers of each key, and the
    /// first-committer-wins check.
    fn write_edges(&mut self) {
        for k in 0..self.m.key_count() as KeyId {
            let vs = self.m.versions(k);
            for pair in vs.windows(2) {
                let (a, b) = (pair[0].txn, pair[1].txn);
                self.edge(a, b, Dep::Ww, k);
                if self.snapshot {
                    self.first_committer_wins(a, b, k);
                }
            }
        }
    }

    /// `b` wrote the version after `a`'s: under snapshot isolation `b` must
    /// have begun after `a` committed.
    fn first_committer_wins(&mut self, a: TxnIx, b: TxnIx, k: KeyId) {
        let (ta, tb) = (self.m.txn(a), self.m.txn(b));
        if !Self::snapshot_reader(ta) || !Self::snapshot_reader(tb) {
            return;
        }
        let a_commit = ta.commit_ts.unwrap_or(0);
        if tb.begin_ts <= a_commit {
            let key = self.key_name(k);
            self.found.note(Class::SnapshotWrite, &[ta.id, tb.id], || {
                format!(
                    "T{} (begin {}, commit {}) and T{} (begin {}, commit {}) are concurrent and both wrote {key}",
                    ta.id,
                    ta.begin_ts,
                    a_commit,
                    tb.id,
                    tb.begin_ts,
                    tb.commit_ts.unwrap_or(0)
                )
            });
        }
    }

    // ------------------------------------------------------------------
    // Reads
    // ------------------------------------------------------------------

    fn txn_reads(&mut self, ix: TxnIx) {
        let (t, keys) = (self.m.txn(ix), self.m.op_keys(ix));
        self.own.clear();
        self.collect_writes(ix);
        let mut at = 0;
        for op in &t.ops {
            let n = match op {
                Op::Scan { rows, .. } => rows.len(),
                _ => 1,
            };
            let Some(ks) = keys.get(at..at + n) else { return };
            at += n;
            match op {
                Op::Write { kind, value, .. } => {
                    self.own.insert(ks[0], (*kind != WriteKind::Delete).then_some(value.as_slice()));
                }
                Op::Read { version, .. } => {
                    let version = version.as_ref().map(|(w, v)| (*w, v.as_slice()));
                    self.read(Read { reader: ix, key: ks[0], version });
                }
                Op::Scan { table, index, lo, hi, filtered, rows } => {
                    self.scan(ix, Scan { table: *table, index: *index, lo, hi, filtered: *filtered }, rows, ks);
                }
            }
        }
    }

    /// The keys transaction `ix` writes, sorted, into `self.writes`.
    fn collect_writes(&mut self, ix: TxnIx) {
        self.writes.clear();
        let ops = &self.m.txn(ix).ops;
        let keys = self.m.op_keys(ix);
        let mut at = 0;
        for op in ops {
            match op {
                Op::Write { .. } => {
                    self.writes.extend(keys.get(at).copied());
                    at += 1;
                }
                Op::Read { .. } => at += 1,
                Op::Scan { rows, .. } => at += rows.len(),
            }
        }
        self.writes.sort_unstable();
        self.writes.dedup();
    }

    fn read(&mut self, r: Read<'_>) {
        if let Some(&own) = self.own.get(&r.key) {
            self.own_read(&r, own);
            return;
        }
        match r.version {
            None => self.absent_read(&r),
            Some((w, value)) => self.version_read(&r, w, value),
        }
    }

    /// A read of a key the reader had written: it must see its own write.
    fn own_read(&mut self, r: &Read<'_>, own: Option<&[u8]>) {
        let sees_own = match r.version {
            None => own.is_none(),
            Some((w, v)) => self.m.resolve(r.reader, r.key, w) == Source::Own && own == Some(v),
        };
        if !sees_own {
            let (id, key) = (self.id(r.reader), self.key_name(r.key));
            let got = describe(r.version);
            let want = own.map_or("nothing (its delete)".into(), |v| format!("value {}", short_value(v)));
            self.found.note(Class::Invalid, &[id], || {
                format!("T{id} read {key} after writing it and got {got} instead of its own write ({want})")
            });
        }
    }

    /// A read that found no row. At snapshot-type isolation it observed the
    /// state as of its begin timestamp; at read committed, nothing usable.
    /// Like a scan that returned nothing, it is a predicate read (Adya: a
    /// lookup `key = K` that matched no row), so the engine's repeatable
    /// read, which protects the versions read but not absences, may let
    /// others insert there: that is a phantom, not G2-item.
    fn absent_read(&mut self, r: &Read<'_>) {
        let t = self.m.txn(r.reader);
        if !Self::snapshot_reader(t) {
            return;
        }
        // A lookup by key that finds nothing is a predicate read (`key = K`):
        // its anti-dependency is a predicate one, as for a scan.
        self.absence_seen(r.reader, r.key, "read");
    }

    /// The reader saw no row of `k`: the deleter whose state it saw (wr), the
    /// writer that came next (prw), and the snapshot rule.
    ///
    /// The state seen is the one as of the reader's begin timestamp, except
    /// for validating readers (repeatable read and serializable, which are
    /// serialized at their commit timestamp): when the key is also absent as
    /// of their commit timestamp (a row inserted and deleted again in
    /// between), they are placed there (after a same-timestamp peer's
    /// version of the key if the key is absent after it, else before it).
    /// Both placements match what was read; the later one is where the
    /// engine validated it. A locking reader
    /// (MV/L) read at the current time and held its locks until its commit
    /// timestamp: it is placed there whenever the key is absent then.
    fn absence_seen(&mut self, reader: TxnIx, k: KeyId, how: &str) {
        let t = self.m.txn(reader);
        let vs = self.m.versions(k);
        let at_begin = self.m.visible_at(k, t.begin_ts);
        let live = |pos: Option<u32>| pos.is_some_and(|p| vs[p as usize].last.is_some());
        if self.snapshot && live(at_begin) {
            let v = vs[at_begin.unwrap_or_default() as usize];
            let (id, wid, key, ts, begin) = (t.id, self.id(v.txn), self.key_name(k), v.ts, t.begin_ts);
            self.found.note(Class::SnapshotRead, &[id, wid], || {
                format!("T{id} (begin {begin}) {how} {key} and found no row, but T{wid} committed a row at {ts}")
            });
        }
        let (mut seen, mut point) = (at_begin, t.begin_ts);
        if let (true, Some(commit)) = (t.isolation >= Isolation::RepeatableRead, t.commit_ts) {
            // At the commit timestamp, before the reader's own version. Under
            // POMVCC others commit at the same timestamp (peers), and the
            // reader is ordered among them by when it validated
            // (`protocol::pomvcc`): after a peer whose write of the key was
            // in place, before one that wrote it later. At most one peer
            // writes a key at one timestamp, so the two places to try are
            // just past the timestamp (after that peer) and just before it
            // (before that peer); the edges each one gives are checked like
            // any other. With unique commit timestamps both are the state
            // before the commit timestamp.
            let before_peers = self.m.visible_at(k, commit);
            let mut after_peers = self.m.visible_at(k, commit + 1);
            if after_peers.is_some_and(|p| vs[p as usize].txn == reader) {
                after_peers = before_peers;
            }
            if !t.snapshot && (t.locking || !live(at_begin)) {
                if !live(after_peers) {
                    (seen, point) = (after_peers, commit + 1);
                } else if !live(before_peers) {
                    (seen, point) = (before_peers, commit);
                }
            }
        }
        if let Some(mut pos) = seen {
            // The state seen is that of the delete that began the run of
            // absent versions it lies in: a later writer inside the run (one
            // that inserted the row and deleted it again) changed nothing the
            // reader could see, and may come before or after it. The first
            // writer of a key absent before it (its first write an insert)
            // began no run either: the state before it was absent.
            while pos > 0 && vs[pos as usize - 1].last.is_none() {
                pos -= 1;
            }
            let v = vs[pos as usize];
            if v.last.is_none() && !(pos == 0 && self.m.first_write_inserts(v.txn, k)) {
                self.edge(v.txn, reader, Dep::Wr, k);
            }
        }
        // A writer whose version is a delete leaves the row absent, as the
        // reader saw it (say, it inserted the row and deleted it again): the
        // rows the reader's predicate matches do not change, so there is no
        // predicate anti-dependency (Adya, section 4.4.2) on it. The edge
        // goes to the next writer that makes the row exist.
        let first = self.m.next_after(k, Seen::Before(point)).map_or(vs.len(), |n| n as usize);
        if let Some(next) = (first..vs.len()).find(|&n| vs[n].last.is_some()) {
            self.edge(reader, vs[next].txn, Dep::Prw, k);
        }
    }

    /// A read that returned a version named `w` with `value`.
    fn version_read(&mut self, r: &Read<'_>, w: Writer, value: &[u8]) {
        let source = self.m.resolve(r.reader, r.key, w);
        let (seen, ts) = match source {
            Source::Txn(t, pos) => {
                self.check_value(r, t, self.m.version(r.key, pos).last, value);
                self.edge(t, r.reader, Dep::Wr, r.key);
                if self.writes.binary_search(&r.key).is_ok() {
                    // It wrote this key after reading it: its version follows.
                    self.edge(t, r.reader, Dep::Ww, r.key);
                }
                (Seen::At(pos), self.m.version(r.key, pos).ts)
            }
            Source::External(ts) if self.m.first_commit().is_some_and(|first| ts > first) => {
                self.phantom_version(r, ts);
                return;
            }
            Source::External(ts) => (Seen::External(ts), ts),
            _ => {
                self.bad_source(r, w, source);
                return;
            }
        };
        self.read_from_future(r, w, ts);
        if let Some(next) = self.m.next_after(r.key, seen) {
            self.edge(r.reader, self.m.version(r.key, next).txn, Dep::Rw, r.key);
        }
        if self.snapshot && Self::snapshot_reader(self.m.txn(r.reader)) {
            self.snapshot_read(r, w, seen);
        }
    }

    /// G1a, unknown writers, and versions attributed to the wrong transaction.
    fn bad_source(&mut self, r: &Read<'_>, w: Writer, source: Source) {
        let (id, key, name) = (self.id(r.reader), self.key_name(r.key), writer_name(w));
        match source {
            Source::Aborted(t) => {
                let txn = self.m.txn(t);
                let why = match txn.outcome {
                    Outcome::Aborted(reason) => reason.name(),
                    Outcome::Committed => "?",
                };
                self.found.note(Class::G1a, &[id, txn.id], || {
                    format!("T{id} read {key} version {name}, written by T{} which aborted ({why})", txn.id)
                });
            }
            Source::Unknown(wid) => self.found.note(Class::Invalid, &[id], || {
                format!("T{id} read {key} version {name}, but no transaction T{wid} is in the history")
            }),
            Source::NotWriter(t) => {
                let wid = self.id(t);
                self.found.note(Class::Invalid, &[id, wid], || {
                    format!("T{id} read {key} version {name}, but T{wid} committed no write of {key}")
                });
            }
            Source::Own => self.found.note(Class::Invalid, &[id], || {
                format!("T{id} read {key} version {name}, its own, before writing {key}")
            }),
            Source::Txn(..) | Source::External(_) => {}
        }
    }

    /// A version named `c:TS` that no recorded transaction wrote, later than
    /// the first recorded commit: not a version from before recording began,
    /// and no recorded transaction committed it, so it never existed.
    fn phantom_version(&mut self, r: &Read<'_>, ts: u64) {
        let (id, key, first) = (self.id(r.reader), self.key_name(r.key), self.m.first_commit().unwrap_or_default());
        self.found.note(Class::Invalid, &[id], || {
            format!(
                "T{id} read {key} version c:{ts}, which no transaction in the history committed, \
                 and which is not older than the first recorded commit ({first}): no such version existed"
            )
        });
    }

    /// A serializable transaction is serialized at its commit timestamp: it
    /// cannot have read a version committed after that.
    fn read_from_future(&mut self, r: &Read<'_>, w: Writer, ts: u64) {
        let t = self.m.txn(r.reader);
        let Some(commit) = t.commit_ts.filter(|&c| t.isolation == Isolation::Serializable && ts > c) else {
            return;
        };
        let (id, key, name) = (t.id, self.key_name(r.key), writer_name(w));
        self.found.note(Class::Invalid, &[id], || {
            format!("T{id} (serializable, commit {commit}) read {key} version {name}, committed at {ts}, after its own commit")
        });
    }

    /// G1b: the value read must be the writer's final value of the key.
    fn check_value(&mut self, r: &Read<'_>, t: TxnIx, last: Option<&[u8]>, value: &[u8]) {
        if last == Some(value) {
            return;
        }
        let (id, wid, key) = (self.id(r.reader), self.id(t), self.key_name(r.key));
        let got = short_value(value);
        let fin = last.map_or("a delete".into(), |v| format!("value {}", short_value(v)));
        if self.m.ever_wrote(t, r.key, value) {
            self.found.note(Class::G1b, &[id, wid], || {
                format!("T{id} read {key} = {got}, an intermediate version of T{wid} (its final write is {fin})")
            });
        } else {
            self.found.note(Class::Invalid, &[id, wid], || {
                format!("T{id} read {key} = {got} from T{wid}, which never wrote that value (its final write is {fin})")
            });
        }
    }

    /// Snapshot read rule: the version read must be the last one committed
    /// before the reader's begin timestamp.
    fn snapshot_read(&mut self, r: &Read<'_>, w: Writer, seen: Seen) {
        let t = self.m.txn(r.reader);
        let vs = self.m.versions(r.key);
        let expected = self.m.visible_at(r.key, t.begin_ts);
        let ok = match seen {
            Seen::At(pos) => expected == Some(pos),
            // An external version is right if no recorded one came after it
            // before the snapshot, and it was itself committed before.
            Seen::External(ts) => {
                ts < t.begin_ts
                    && match expected {
                        None => true,
                        Some(p) => vs[p as usize].ts < ts,
                    }
            }
            Seen::Before(_) => true,
        };
        if ok {
            return;
        }
        let (id, key, begin, name) = (t.id, self.key_name(r.key), t.begin_ts, writer_name(w));
        let want = match expected {
            Some(p) => {
                let v = vs[p as usize];
                format!("c:{} (T{})", v.ts, self.id(v.txn))
            }
            None => "the initial version".into(),
        };
        self.found.note(Class::SnapshotRead, &[id], || {
            format!("T{id} (begin {begin}) read {key} version {name}, but its snapshot holds {want}")
        });
    }

    // ------------------------------------------------------------------
    // Scans
    // ------------------------------------------------------------------

    fn scan(&mut self, ix: TxnIx, scan: Scan<'_>, rows: &[(Key, Writer, Vec<u8>)], keys: &[KeyId]) {
        let mut returned = FxSet::default();
        for ((key, w, value), &k) in rows.iter().zip(keys) {
            if scan.index == 0 && !in_range(key, scan.lo, scan.hi) {
                let (id, name, table) = (self.id(ix), self.key_name(k), scan.table);
                self.found.note(Class::Invalid, &[id], || {
                    format!("T{id} scanned t{table} and got {name}, outside the scanned range")
                });
            }
            returned.insert(k);
            self.read(Read { reader: ix, key: k, version: Some((*w, value.as_slice())) });
        }
        if scan.index == 0 && !scan.filtered && Self::snapshot_reader(self.m.txn(ix)) {
            self.predicate(ix, &scan, &returned);
        }
    }

    /// Every key in the range that the scan did not return was absent from
    /// its snapshot: predicate anti-dependencies to whoever wrote it next.
    fn predicate(&mut self, ix: TxnIx, scan: &Scan<'_>, returned: &FxSet<KeyId>) {
        let table = scan.table;
        for (_, k) in self.m.keys_in(table, scan.lo, scan.hi) {
            if returned.contains(&k) {
                continue;
            }
            if let Some(&own) = self.own.get(&k) {
                if own.is_some() {
                    let (id, key) = (self.id(ix), self.key_name(k));
                    self.found.note(Class::Invalid, &[id], || {
                        format!("T{id} scanned t{table} and missed {key}, its own write")
                    });
                }
                continue;
            }
            self.absence_seen(ix, k, "scanned");
        }
    }
}

/// `version c:5 = 0a` / `nothing`, for messages.
fn describe(version: Option<(Writer, &[u8])>) -> String {
    match version {
        None => "nothing".into(),
        Some((w, v)) => format!("version {} = {}", writer_name(w), short_value(v)),
    }
}
