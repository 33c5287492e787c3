//! Checking list-append histories observed from outside a store (in the
//! manner of Jepsen's Elle).
//!
//! [`crate::check`] trusts what the Multiverse engine records: which version
//! every read returned, named by its writer's commit timestamp. Other stores
//! are black boxes: a client sees only the values it read and wrote. For the
//! list-append workload that is enough to rebuild the dependency graph,
//! because the values record their own history: every value of a key is a
//! list of 8-byte tags ([`crate::APPEND_TAG_LEN`]), every write appends one
//! tag that no other transaction appends, and a key's first append inserts
//! it. [`check_observed`] infers from the transactions the client recorded
//! ([`ObservedTxn`]):
//!
//! - **the version order of each key**: the tags of the longest list that a
//!   committed transaction read or wrote. Every other list observed must be
//!   a prefix of it; one that is not means an append was lost or reordered
//!   (two lists that do not extend one another), and is reported as
//!   [`Class::Invalid`]: no order of the appends explains both. So is a
//!   list that holds a tag twice (an append applied twice);
//! - **the writer of each tag**: the committed transaction whose write
//!   ended with it (a transaction that appends twice to one key writes two
//!   tags);
//! - **dependencies between committed transactions**: ww from the writer of
//!   each tag to the writer of the next tag of the key; wr from the writer
//!   of the last tag of a list read to its reader; rw from a reader to the
//!   writer of the tag after the last one it read. A read that found no row,
//!   or an empty list, read the key's initial state: it has an rw edge to the
//!   writer of the key's first tag and no wr edge;
//! - **direct anomalies**: G1a (a committed transaction read, or appended
//!   to, a list holding a tag that no committed transaction appended: an
//!   aborted or never-recorded write), G1b (a list that ends at a tag its
//!   writer later followed with another append to the same key: an
//!   intermediate state), and [`Class::Invalid`] for a transaction that did
//!   not see its own appends (a read after its own write of a key must
//!   return exactly what it wrote), for malformed lists, for a transaction
//!   whose second append to a key does not extend its first by one tag, for a
//!   tag appended by two committed transactions, and for duplicate
//!   transaction ids.
//!
//! The graph's cycles are then classified as by [`crate::check`]: G0, G1c,
//! G-single and G2-item (a list-append history has no predicate
//! anti-dependencies: the workload makes point reads only), and
//! [`Report::ok`] says whether any anomaly forbidden at the claimed level
//! was found.
//!
//! **Rows that come and go** ([`check_observed_ranges`]): a row inserted
//! and deleted shows a client no version identity for its absence, so a
//! scan that found a key absent does not say which deletion it saw. The
//! predicate workload run this way guards each key range with a list-append
//! key (its count row, followed by the tags of the toggles): every
//! transaction that inserts or deletes a row of the range appends its tag
//! there in the same transaction. The guard's inferred list is then the
//! order of the range's changes; replayed from the initial rows, with each
//! transaction's recorded inserts ([`ObservedOp::Write`], the value its
//! unique tag) and deletes ([`ObservedOp::Delete`]), it gives every state of
//! the range. What is inferred:
//!
//! - **key by key, at every level** (a lookup, or each key a scan covered):
//!   the reader read one of the key's versions matching what it saw (the
//!   row with its tag, or an absence); with the earliest and latest of them
//!   (before the reader's own change of the range), a wr edge from the
//!   writer of the earliest and an anti-dependency to the writer of the
//!   version after the latest: item rw if it saw a row, predicate rw if it
//!   saw none. A returned row that no committed transaction inserted is G1a;
//!   changes that do not replay in the guard's order (an insert over a row,
//!   a delete of none) are [`Class::Invalid`];
//! - **the whole range, at snapshot isolation and serializable**, which
//!   promise that a scan reads one state: the states `k` holding exactly
//!   the rows returned give a wr edge from the writer of the earliest and an
//!   anti-dependency to the writer of the state after the latest (whichever
//!   it read lies between: the guard's ww chain links them). A scan that no
//!   state explains, or one that disagrees with the guard it read in the
//!   same transaction, is [`Class::Invalid`] (not a consistent snapshot).
//!   A whole-table scan covers every range.
//!
//! Cycles through predicate rw edges are classified as by [`crate::check`]
//! for white-box histories: G-single (forbidden at snapshot isolation and
//! above, but at repeatable read a cycle through a predicate
//! anti-dependency is an allowed phantom, reported as G2) and G2 (forbidden
//! at serializable only).
//!
//! Limits:
//!
//! - Tags name transactions, not attempts: a transaction retried after an
//!   abort appends the same tags again, so a read of an aborted attempt's
//!   append is indistinguishable from a read of the committed attempt's
//!   (it is attributed to the committed one, and is a G1a only when the
//!   committed attempt's own read shows it, or no attempt committed).
//! - Without timestamps nothing relates transactions that touched no common
//!   key, and a read is only known to precede the append after it: real-time
//!   order (strict serializability) and the two rules of snapshot isolation
//!   that need begin and commit times (the snapshot read rule and
//!   first-committer-wins, [`Class::SnapshotRead`], [`Class::SnapshotWrite`])
//!   are not checked. A lost update at snapshot isolation still shows, as a
//!   G-single cycle (both read the same list, both appended) or as two lists
//!   that do not extend one another.
//! - Only observed lists count: an append that the store lost after it
//!   committed goes unnoticed unless a committed transaction later read or
//!   appended to the key (a final read of every key helps).
//! - Rows: an absence names no version, so a read that matches several
//!   states gives only the edges all of them share; an inconsistent read
//!   whose set happens to equal another state of the range (insert a row,
//!   delete it) goes unnoticed unless the reader also read the guard. Below
//!   snapshot isolation a scan is checked key by key only. A range whose
//!   guard holds a tag no committed transaction appended (G1a) is not
//!   replayed, and a key outside every range is not checked.

use crate::graph::{Cycle, Dep, Edge, Graph, Search};
use crate::model::{key_name, short_value, FxMap, FxSet};
use crate::report::{Anomaly, Class, Findings, Limits, Report, Stats};
use crate::APPEND_TAG_LEN as TAG;
use multiverse::{Isolation, Key};
use std::collections::hash_map::Entry;
use std::ops::Bound;

mod ranges;
pub use ranges::{check_observed_ranges, ObservedRange, ObservedRanges};

/// One transaction as a client observed it.
///
/// Record every attempt that ran, committed or not: when a committed
/// transaction read a tag that only an aborted attempt appended, the G1a
/// report then names that attempt.
///
/// ```
/// use multiverse::Key;
/// use multiverse_check::{ObservedOp, ObservedTxn};
///
/// // Appends tag 7 to an empty key 1 of table 0 (inserting it).
/// let t = ObservedTxn {
///     id: 1,
///     committed: true,
///     ops: vec![
///         ObservedOp::Read { table: 0, key: Key::from(1), value: None },
///         ObservedOp::Write { table: 0, key: Key::from(1), value: 7u64.to_be_bytes().to_vec() },
///     ],
/// };
/// assert_eq!(t.ops.len(), 2);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedTxn {
    /// The transaction's id, unique in the history.
    pub id: u64,
    /// True if it committed; false if it aborted (or its outcome is unknown
    /// and it is treated as aborted).
    pub committed: bool,
    /// Its reads and writes, in the order it made them.
    pub ops: Vec<ObservedOp>,
}

/// One operation of an [`ObservedTxn`].
///
/// ```
/// use multiverse::Key;
/// use multiverse_check::ObservedOp;
///
/// let tag = |n: u64| n.to_be_bytes();
/// // A read that found the list [1, 2], then the append of tag 3.
/// let read = ObservedOp::Read { table: 0, key: Key::from(5), value: Some([tag(1), tag(2)].concat()) };
/// let write = ObservedOp::Write { table: 0, key: Key::from(5), value: [tag(1), tag(2), tag(3)].concat() };
/// assert_ne!(read, write);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObservedOp {
    /// A point read and what it returned (None: no row).
    Read {
        /// Table number.
        table: u32,
        /// Primary key.
        key: Key,
        /// The value read, `None` if there was no row.
        value: Option<Vec<u8>>,
    },
    /// A write (insert or update) and the whole new value.
    Write {
        /// Table number.
        table: u32,
        /// Primary key.
        key: Key,
        /// The new value: the list before the append, followed by the new tag.
        value: Vec<u8>,
    },
    /// The delete of an existing row (rows of [`ObservedRanges`] only).
    Delete {
        /// Table number.
        table: u32,
        /// Primary key.
        key: Key,
    },
    /// A primary-key range read and every row it returned, in key order
    /// (rows of [`ObservedRanges`] only): each key of the range that it did
    /// not return, it found absent.
    Scan {
        /// Table number.
        table: u32,
        /// The range's start.
        lo: Bound<Key>,
        /// The range's end.
        hi: Bound<Key>,
        /// The rows returned: key and value.
        rows: Vec<(Key, Vec<u8>)>,
    },
}

/// Checks a list-append history observed from outside a store against the
/// isolation level `claimed`, with the default [`Limits`].
///
/// Every value must be a list of [`APPEND_TAG_LEN`](crate::APPEND_TAG_LEN)-byte
/// tags and every write must append one tag that no other transaction
/// appends. Each key's version order is the longest list that a committed
/// transaction read or wrote; each tag's writer is the committed transaction
/// whose write ended with it. From these come ww, wr and rw dependencies
/// between committed transactions, whose cycles are classified as G0, G1c,
/// G-single or G2-item; G1a (a list holding a tag no committed transaction
/// appended) and G1b (a list ending at a tag its writer followed with
/// another append to the key) are checked directly. Findings no isolation
/// level allows are [`Class::Invalid`]: two lists that do not extend one
/// another (a lost or reordered append), a tag twice in a list, a
/// transaction that did not read back its own write, malformed lists.
/// `report.ok()` is true when nothing forbidden at `claimed` was found
/// ([`Class::forbidden_at`]).
///
/// Without timestamps, the snapshot rules ([`Class::SnapshotRead`],
/// [`Class::SnapshotWrite`]) and real-time order are not checked, and a
/// retried transaction appends the same tags as its aborted attempts, so a
/// read of an aborted attempt's append counts as a read of the committed
/// one's.
///
/// ```
/// use multiverse::{Isolation, Key};
/// use multiverse_check::{check_observed, ObservedOp, ObservedTxn};
///
/// let list = |tags: &[u64]| tags.iter().flat_map(|t| t.to_be_bytes()).collect::<Vec<u8>>();
/// let read = |value: Option<Vec<u8>>| ObservedOp::Read { table: 0, key: Key::from(1), value };
/// let write = |value: Vec<u8>| ObservedOp::Write { table: 0, key: Key::from(1), value };
/// let history = vec![
///     // T1 appends 10 to an empty key; T2 reads [10] and appends 20.
///     ObservedTxn { id: 1, committed: true, ops: vec![read(None), write(list(&[10]))] },
///     ObservedTxn { id: 2, committed: true, ops: vec![read(Some(list(&[10]))), write(list(&[10, 20]))] },
/// ];
/// let report = check_observed(&history, Isolation::Serializable);
/// assert!(report.ok(), "{report}");
/// assert_eq!(report.stats.committed, 2);
///
/// // T3 read [10] too but wrote [10 30] over T2's list: T2's append is lost.
/// let mut lost = history.clone();
/// lost.push(ObservedTxn { id: 3, committed: true, ops: vec![read(Some(list(&[10]))), write(list(&[10, 30]))] });
/// let report = check_observed(&lost, Isolation::ReadCommitted);
/// assert_eq!(report.count(multiverse_check::Class::Invalid), 1, "{report}");
/// ```
pub fn check_observed(txns: &[ObservedTxn], claimed: Isolation) -> Report {
    check_observed_with(txns, claimed, &Limits::default())
}

/// [`check_observed`] with explicit limits on examples kept and cycle-search
/// work.
///
/// ```
/// use multiverse::{Isolation, Key};
/// use multiverse_check::{check_observed_with, Class, Limits, ObservedOp, ObservedTxn};
///
/// // Write skew: each reads the key the other appends to, and finds it empty.
/// let txn = |id: u64, read: u64, write: u64| ObservedTxn {
///     id,
///     committed: true,
///     ops: vec![
///         ObservedOp::Read { table: 0, key: Key::from(read), value: None },
///         ObservedOp::Write { table: 0, key: Key::from(write), value: (100 + id).to_be_bytes().to_vec() },
///     ],
/// };
/// let history = vec![txn(1, 7, 8), txn(2, 8, 7)];
/// let limits = Limits { examples_per_class: 1, ..Limits::default() };
/// let report = check_observed_with(&history, Isolation::Serializable, &limits);
/// assert_eq!(report.count(Class::G2Item), 1);
/// assert!(!report.ok());
/// // Snapshot isolation allows it.
/// assert!(check_observed_with(&history, Isolation::Snapshot, &limits).ok());
/// ```
pub fn check_observed_with(txns: &[ObservedTxn], claimed: Isolation, limits: &Limits) -> Report {
    let mut found = Findings::new(limits.examples_per_class);
    let h = Observed::build(txns, &mut found);
    let (edges, _) = h.infer(&mut found);
    finish(&h, edges, None, claimed, limits, found)
}

/// Builds the graph of `edges` over the transactions of `h`, classifies
/// its cycles and returns the report. `rows`: the table of
/// [`ObservedRanges`], whose edges come from scans and lookups.
fn finish(
    h: &Observed<'_>,
    edges: Vec<(u32, Edge)>,
    rows: Option<u32>,
    claimed: Isolation,
    limits: &Limits,
    mut found: Findings,
) -> Report {
    let txns = h.txns;
    let g = Graph::build(txns.len(), edges);
    let committed = txns.iter().filter(|t| t.committed).count();
    let mut stats = Stats {
        txns: txns.len(),
        committed,
        aborted: txns.len() - committed,
        keys: h.names.len(),
        edges: g.counts(),
        ..Stats::default()
    };
    let mut search = Search::new(g.nodes(), limits.search_budget);
    let id = |v: u32| h.id(v);
    let describe = |c: &Cycle| cycle_anomaly(h, c, rows);
    crate::cycles::classify_cycles(&g, &mut search, &mut found, &mut stats, claimed, &id, &describe);
    found.into_report(claimed, stats)
}

/// A transaction's position in the slice; also its graph node.
type TxnIx = u32;
/// A (table, key) pair's number.
type KeyId = u32;

/// How a committed transaction observed a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum How {
    /// It read it (before writing the key itself).
    Read,
    /// It wrote it, as its first append to the key: all but the last tag
    /// are the list it extended.
    FirstWrite,
    /// It wrote it, extending its own earlier append.
    Write,
}

impl How {
    fn verb(self) -> &'static str {
        match self {
            How::Read => "read",
            How::FirstWrite | How::Write => "wrote",
        }
    }
}

/// One list a committed transaction observed.
#[derive(Clone, Copy, Debug)]
struct Obs<'h> {
    txn: TxnIx,
    how: How,
    value: &'h [u8],
}

impl<'h> Obs<'h> {
    /// The part of the list that other transactions appended before this
    /// one looked: all of a read, all but the new tag of a first append.
    fn foreign(&self) -> &'h [u8] {
        match self.how {
            How::Read => self.value,
            How::FirstWrite | How::Write => &self.value[..self.value.len() - TAG],
        }
    }
}

/// The committed append of one tag.
#[derive(Clone, Copy, Debug)]
struct Append {
    txn: TxnIx,
    /// The writer appended nothing to the key after this tag.
    last: bool,
}

/// The history, indexed by key.
struct Observed<'h> {
    txns: &'h [ObservedTxn],
    keys: FxMap<(u32, &'h Key), KeyId>,
    /// (table, key) by key id.
    names: Vec<(u32, Key)>,
    /// Per key: the lists committed transactions observed, in history order.
    obs: Vec<Vec<Obs<'h>>>,
    /// Committed appends by (key, tag).
    appends: FxMap<(KeyId, u64), Append>,
    /// Aborted appends by (key, tag): the first aborted writer.
    aborted: FxMap<(KeyId, u64), TxnIx>,
}

/// True for a list of whole tags.
fn is_list(v: &[u8]) -> bool {
    v.len() % TAG == 0
}

/// The tags of a list, as numbers.
fn tags(v: &[u8]) -> impl Iterator<Item = u64> + '_ {
    v.chunks_exact(TAG).map(|c| u64::from_be_bytes(c.try_into().expect("a whole tag")))
}

/// The last tag of a list, if it has one.
fn last_tag(v: &[u8]) -> Option<u64> {
    (v.len() >= TAG).then(|| tags(&v[v.len() - TAG..]).next().expect("a whole tag"))
}

/// A list for a message.
fn list_name(v: Option<&[u8]>) -> String {
    match v {
        None => "no row".into(),
        Some([]) => "[]".into(),
        Some(v) if is_list(v) && v.len() <= 4 * TAG => {
            let t: Vec<String> = tags(v).map(tag_name).collect();
            format!("[{}]", t.join(" "))
        }
        Some(v) if is_list(v) => {
            let n = v.len() / TAG;
            let t: Vec<String> = tags(&v[..2 * TAG]).chain(tags(&v[v.len() - TAG..])).map(tag_name).collect();
            format!("[{} {} ... ({} tags) {}]", t[0], t[1], n, t[2])
        }
        Some(v) => short_value(v),
    }
}

fn tag_name(t: u64) -> String {
    format!("{t:016x}")
}

impl<'h> Observed<'h> {
    /// Indexes `txns`; reports malformed lists, duplicate ids, duplicate
    /// appends and missed own writes as [`Class::Invalid`].
    fn build(txns: &'h [ObservedTxn], found: &mut Findings) -> Observed<'h> {
        let mut h = Observed {
            txns,
            keys: FxMap::default(),
            names: Vec::new(),
            obs: Vec::new(),
            appends: FxMap::default(),
            aborted: FxMap::default(),
        };
        let mut ids = FxSet::default();
        // The transaction's own last value of every key it wrote.
        let mut own: FxMap<KeyId, &'h [u8]> = FxMap::default();
        for (ix, t) in txns.iter().enumerate() {
            if !ids.insert(t.id) {
                found.note(Class::Invalid, &[t.id], || format!("transaction id {} appears more than once", t.id));
            }
            own.clear();
            for op in &t.ops {
                match op {
                    ObservedOp::Write { table, key, value } => {
                        let k = h.intern(*table, key);
                        h.write(ix as TxnIx, k, value, &mut own, found);
                    }
                    ObservedOp::Read { table, key, value } => {
                        let k = h.intern(*table, key);
                        if t.committed {
                            h.read(ix as TxnIx, k, value.as_deref(), &own, found);
                        }
                    }
                    ObservedOp::Delete { table, .. } | ObservedOp::Scan { table, .. } if t.committed => {
                        found.note(Class::Invalid, &[t.id], || {
                            format!("T{} deleted or scanned rows of t{table}: list-append keys are only read and appended to", t.id)
                        });
                    }
                    ObservedOp::Delete { .. } | ObservedOp::Scan { .. } => {}
                }
            }
        }
        h
    }

    fn intern(&mut self, table: u32, key: &'h Key) -> KeyId {
        let next = self.names.len() as KeyId;
        let id = *self.keys.entry((table, key)).or_insert(next);
        if id == next {
            self.names.push((table, key.clone()));
            self.obs.push(Vec::new());
        }
        id
    }

    fn id(&self, ix: TxnIx) -> u64 {
        self.txns[ix as usize].id
    }

    fn key_name(&self, k: KeyId) -> String {
        key_name(&self.names[k as usize])
    }

    /// Records transaction `ix`'s write of `value` to key `k`.
    fn write(&mut self, ix: TxnIx, k: KeyId, value: &'h [u8], own: &mut FxMap<KeyId, &'h [u8]>, found: &mut Findings) {
        let committed = self.txns[ix as usize].committed;
        let Some(tag) = last_tag(value).filter(|_| is_list(value)) else {
            if committed {
                let (id, key, got) = (self.id(ix), self.key_name(k), short_value(value));
                found.note(Class::Invalid, &[id], || {
                    format!("T{id} wrote {key} = {got}, which is not a non-empty list of {TAG}-byte tags")
                });
            }
            return;
        };
        let prev = own.insert(k, value);
        if !committed {
            self.aborted.entry((k, tag)).or_insert(ix);
            return;
        }
        let how = match prev {
            None => How::FirstWrite,
            Some(p) => {
                if value.len() != p.len() + TAG || !value.starts_with(p) {
                    let (id, key, before, after) =
                        (self.id(ix), self.key_name(k), list_name(Some(p)), list_name(Some(value)));
                    found.note(Class::Invalid, &[id], || {
                        format!(
                            "T{id} wrote {key} = {after} after writing {before}: not one tag appended to its own list"
                        )
                    });
                }
                if let Some(a) = last_tag(p).and_then(|t| self.appends.get_mut(&(k, t))) {
                    if a.txn == ix {
                        a.last = false;
                    }
                }
                How::Write
            }
        };
        self.obs[k as usize].push(Obs { txn: ix, how, value });
        match self.appends.entry((k, tag)) {
            Entry::Vacant(e) => {
                e.insert(Append { txn: ix, last: true });
            }
            // Appended twice by itself: the list then holds it twice, which
            // the order check reports.
            Entry::Occupied(mut e) if e.get().txn == ix => e.get_mut().last = true,
            Entry::Occupied(e) => {
                // Fields, not methods: `e` borrows `self.appends`.
                let txns = self.txns;
                let (a, b) = (txns[e.get().txn as usize].id, txns[ix as usize].id);
                let key = key_name(&self.names[k as usize]);
                found.note(Class::Invalid, &[a, b], || {
                    format!("T{a} and T{b} both appended tag {} to {key}: tags must be unique", tag_name(tag))
                });
            }
        }
    }

    /// Records committed transaction `ix`'s read of key `k`.
    fn read(
        &mut self,
        ix: TxnIx,
        k: KeyId,
        value: Option<&'h [u8]>,
        own: &FxMap<KeyId, &'h [u8]>,
        found: &mut Findings,
    ) {
        if let Some(&mine) = own.get(&k) {
            if value != Some(mine) {
                let (id, key, got, want) = (self.id(ix), self.key_name(k), list_name(value), list_name(Some(mine)));
                found.note(Class::Invalid, &[id], || {
                    format!("T{id} read {key} = {got} after writing {want}: it did not see its own write")
                });
            }
            return;
        }
        let value = value.unwrap_or_default();
        if !is_list(value) {
            let (id, key, got) = (self.id(ix), self.key_name(k), short_value(value));
            found.note(Class::Invalid, &[id], || {
                format!("T{id} read {key} = {got}, which is not a list of {TAG}-byte tags")
            });
            return;
        }
        self.obs[k as usize].push(Obs { txn: ix, how: How::Read, value });
    }

    /// Infers every key's version order, checks the lists against it, and
    /// returns the dependency edges and each key's order (the longest list
    /// observed; empty for a key never observed by a committed transaction).
    fn infer(&self, found: &mut Findings) -> (Vec<(u32, Edge)>, Vec<&'h [u8]>) {
        let mut edges = Vec::new();
        let mut orders = vec![&[][..]; self.names.len()];
        let mut seen = FxSet::default();
        for k in 0..self.names.len() as KeyId {
            let obs = &self.obs[k as usize];
            // The longest list (the first of them, on a tie).
            let Some(longest) = obs.iter().fold(None, |best: Option<&Obs<'_>>, o| match best {
                Some(b) if b.value.len() >= o.value.len() => Some(b),
                _ => Some(o),
            }) else {
                continue;
            };
            let order = longest.value;
            orders[k as usize] = order;
            let fits = |o: &Obs<'_>| order.starts_with(o.value);
            if let Some(bad) = obs.iter().find(|o| !fits(o)) {
                self.incompatible(k, longest, bad, found);
            }
            seen.clear();
            if let Some(t) = tags(order).find(|&t| !seen.insert(t)) {
                let (id, key, list) = (self.id(longest.txn), self.key_name(k), list_name(Some(order)));
                found.note(Class::Invalid, &[id], || {
                    format!(
                        "T{id} {} {key} = {list}, which holds tag {} twice (an append applied twice)",
                        longest.how.verb(),
                        tag_name(t)
                    )
                });
            }
            // ww: consecutive committed appends (over tags nobody committed).
            let mut prev: Option<TxnIx> = None;
            for t in tags(order) {
                if let Some(a) = self.appends.get(&(k, t)) {
                    if let Some(p) = prev.filter(|&p| p != a.txn) {
                        edges.push((p, Edge { to: a.txn, dep: Dep::Ww, key: k }));
                    }
                    prev = Some(a.txn);
                }
            }
            for o in obs.iter().filter(|o| o.how != How::Write) {
                let seen_list = o.foreign();
                if self.aborted_read(k, o, seen_list, found) {
                    continue;
                }
                let last = last_tag(seen_list).map(|t| (t, self.appends[&(k, t)]));
                if let Some((t, a)) = last.filter(|(_, a)| !a.last) {
                    self.intermediate_read(k, o, t, a.txn, found);
                }
                if o.how != How::Read || !fits(o) {
                    continue;
                }
                if let Some((_, a)) = last {
                    edges.push((a.txn, Edge { to: o.txn, dep: Dep::Wr, key: k }));
                }
                let next = tags(order).skip(seen_list.len() / TAG).find_map(|t| self.appends.get(&(k, t)));
                if let Some(a) = next.filter(|a| a.txn != o.txn) {
                    edges.push((o.txn, Edge { to: a.txn, dep: Dep::Rw, key: k }));
                }
            }
        }
        (edges, orders)
    }

    /// Two lists of key `k` that do not extend one another.
    fn incompatible(&self, k: KeyId, a: &Obs<'_>, b: &Obs<'_>, found: &mut Findings) {
        let (ia, ib, key) = (self.id(a.txn), self.id(b.txn), self.key_name(k));
        let (la, lb) = (list_name(Some(a.value)), list_name(Some(b.value)));
        found.note(Class::Invalid, &[ia, ib], || {
            format!(
                "T{ia} {} {key} = {la} and T{ib} {} {key} = {lb}: neither list extends the other (a lost or reordered append)",
                a.how.verb(),
                b.how.verb()
            )
        });
    }

    /// G1a: the list `seen` that `o` observed holds a tag no committed
    /// transaction appended (or one its observer appended only later).
    fn aborted_read(&self, k: KeyId, o: &Obs<'_>, seen: &[u8], found: &mut Findings) -> bool {
        let Some(t) = tags(seen).find(|&t| self.appends.get(&(k, t)).is_none_or(|a| a.txn == o.txn)) else {
            return false;
        };
        let (id, key, list, tag) = (self.id(o.txn), self.key_name(k), list_name(Some(o.value)), tag_name(t));
        let verb = o.how.verb();
        match (self.appends.contains_key(&(k, t)), self.aborted.get(&(k, t))) {
            (true, _) => found.note(Class::G1a, &[id], || {
                format!("T{id} {verb} {key} = {list}, holding its own tag {tag} before appending it (an aborted attempt's append?)")
            }),
            (false, Some(&a)) => {
                let aid = self.id(a);
                found.note(Class::G1a, &[id, aid], || {
                    format!("T{id} {verb} {key} = {list}, holding tag {tag}, appended only by T{aid}, which aborted")
                });
            }
            (false, None) => found.note(Class::G1a, &[id], || {
                format!("T{id} {verb} {key} = {list}, holding tag {tag}, which no committed transaction appended")
            }),
        }
        true
    }

    /// G1b: `o` observed a list ending at tag `t`, which its writer `w`
    /// followed with another append to the key.
    fn intermediate_read(&self, k: KeyId, o: &Obs<'_>, t: u64, w: TxnIx, found: &mut Findings) {
        let (id, wid, key, list) = (self.id(o.txn), self.id(w), self.key_name(k), list_name(Some(o.value)));
        let verb = if o.how == How::Read { "read" } else { "appended to" };
        found.note(Class::G1b, &[id, wid], || {
            format!(
                "T{id} {verb} {key} = {list}, ending at tag {}, which T{wid} followed with another append",
                tag_name(t)
            )
        });
    }
}

/// Describes a cycle: the one-line summary and what each edge means.
/// The edges on keys of table `rows` (of [`ObservedRanges`]) come from
/// scans and lookups, the others from lists.
fn cycle_anomaly(h: &Observed<'_>, cycle: &Cycle, rows: Option<u32>) -> Anomaly {
    let ids: Vec<u64> = cycle.iter().map(|&(v, _)| h.id(v)).collect();
    let mut summary = String::new();
    let mut details = Vec::new();
    for &(v, e) in cycle {
        let (from, to, key) = (h.id(v), h.id(e.to), h.key_name(e.key));
        summary.push_str(&format!("T{from} -{}({key})-> ", e.dep.label()));
        let row = rows == Some(h.names[e.key as usize].0);
        details.push(match (e.dep, row) {
            (Dep::Ww, _) => format!("T{from} appended to {key}; T{to} appended after it"),
            (Dep::Wr, false) => format!("T{to} read T{from}'s append to {key}"),
            (Dep::Rw | Dep::Prw, false) => format!("T{from} read {key}; T{to} appended the next tag"),
            (Dep::Wr, true) => format!("T{to} read its range as T{from}'s change of {key} (or a later one) left it"),
            (Dep::Rw, true) => format!("T{from} read row {key}; T{to} deleted it (or changed the range after that)"),
            (Dep::Prw, true) => {
                format!("T{from} found no row at {key} (scan or lookup); T{to} inserted it (or changed the range after that)")
            }
        });
    }
    summary.push_str(&format!("T{}", ids[0]));
    Anomaly { class: Class::G2Item, txns: ids, summary, details }
}

#[cfg(test)]
mod tests;
