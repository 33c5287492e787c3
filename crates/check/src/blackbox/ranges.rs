//! Scans and lookups of rows that come and go, observed from outside a
//! store: the predicate half of [`check_observed_ranges`].
//!
//! A row that is inserted and deleted leaves no trace of its versions for a
//! client: a scan that found a key absent does not say which deletion (or
//! the initial absence) it saw. What names them is a *guard*: every range
//! of keys has a list-append key to which each transaction that inserts or
//! deletes rows in the range appends one tag, in the same transaction. The
//! guard's list (its version order, as [`super`] infers it) is then the
//! order of the range's changes, and replaying them from the initial rows
//! gives every state the range went through: `state_0` (the initial rows)
//! to `state_n` (after the n-th change).
//!
//! A read of the range matches the states that hold exactly what it
//! returned; several may (insert a row, delete it: the set is back).
//! Whichever it read, it read one at or after the earliest match `k_min`
//! and at or before the latest `k_max`, so the edges from the writer of
//! `state_k_min` to the reader, and from the reader to the writer of
//! `state_(k_max + 1)`, follow from the ww chain of the guard whatever the
//! reader saw. The same holds for one key (a lookup, or one key of a scan)
//! over the sub-sequence of the changes of that key, and needs no
//! consistent snapshot: each key's read returned one committed version.
//! Whole-range matching assumes the range was read at one state, which
//! snapshot isolation and serializability promise and weaker levels do not.

use super::{finish, tags, How, Observed, ObservedOp, ObservedTxn, TxnIx};
use crate::graph::{Dep, Edge};
use crate::model::{key_name, short_value, FxMap, FxSet};
use crate::report::{Class, Findings, Limits, Report};
use crate::APPEND_TAG_LEN as TAG;
use multiverse::{Isolation, Key};
use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::ops::Bound;

/// One range of [`ObservedRanges::table`] and its guard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedRange {
    /// The first key of the range.
    pub lo: Key,
    /// The key after the range (excluded).
    pub hi: Key,
    /// The guard: a (table, key) to whose list every transaction that
    /// inserts or deletes rows of the range appends one tag, in the same
    /// transaction.
    pub guard: (u32, Key),
}

/// A table whose rows are inserted and deleted (never updated), cut into
/// guarded ranges: what [`check_observed_ranges`] needs besides the history.
///
/// ```
/// use multiverse::Key;
/// use multiverse_check::{ObservedRange, ObservedRanges};
///
/// // Table 0: keys 0..8 guarded by key 0 of table 1, holding one row at key 0.
/// let layout = ObservedRanges {
///     table: 0,
///     ranges: vec![ObservedRange { lo: Key::from(0), hi: Key::from(8), guard: (1, Key::from(0)) }],
///     guard_prefix: 8,
///     initial: vec![(Key::from(0), vec![0; 8])],
/// };
/// assert_eq!(layout.ranges.len(), 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObservedRanges {
    /// The table of rows.
    pub table: u32,
    /// Its ranges, disjoint; keys outside every range are not checked.
    pub ranges: Vec<ObservedRange>,
    /// Bytes at the start of every guard value that are not part of its
    /// list (a count, say): skipped.
    pub guard_prefix: usize,
    /// The rows present before the history began: key and value.
    pub initial: Vec<(Key, Vec<u8>)>,
}

/// Checks a history observed from outside a store whose transactions read
/// and append to lists (as [`super::check_observed`] takes them) and scan,
/// look up, insert and delete the rows of `layout`'s table, against
/// `claimed`.
///
/// Every value a row is inserted with must be unique (a tag of its
/// inserter); every transaction that inserts or deletes rows of a range
/// must append one tag to the range's guard. From the guard's list come
/// the order of the range's changes and the states they leave; each scan
/// and lookup is matched against them (see `blackbox`'s module docs), giving wr and
/// rw edges (predicate rw where the reader found a row absent), whose
/// cycles are classified with the lists' as by [`crate::check`]: at
/// repeatable read a cycle through a predicate anti-dependency is an
/// allowed phantom, at snapshot isolation a cycle with one anti-dependency
/// is forbidden, at serializable any. At snapshot isolation and
/// serializable a scan must also return one state of each range it
/// covers: one that matches none is [`Class::Invalid`]. A returned row
/// that no committed transaction inserted is G1a; changes that do not
/// replay (an insert over a row, a delete of none) are invalid.
///
/// ```
/// use multiverse::{Isolation, Key};
/// use multiverse_check::{check_observed_ranges, Class, Limits, ObservedOp, ObservedRange, ObservedRanges, ObservedTxn};
/// use std::ops::Bound;
///
/// // Slots 0..4 (range 0) and 4..8 (range 1) of table 0, guarded by keys 0
/// // and 1 of table 1 (lists of 8-byte tags, no prefix). Empty at first.
/// let range = |r: u64| ObservedRange { lo: Key::from(r * 4), hi: Key::from(r * 4 + 4), guard: (1, Key::from(r)) };
/// let layout = ObservedRanges { table: 0, ranges: vec![range(0), range(1)], guard_prefix: 0, initial: vec![] };
/// let scan = |r: u64| ObservedOp::Scan {
///     table: 0,
///     lo: Bound::Included(Key::from(r * 4)),
///     hi: Bound::Excluded(Key::from(r * 4 + 4)),
///     rows: vec![],
/// };
/// let insert = |slot: u64, tag: u64| {
///     let guard = Key::from(slot / 4);
///     vec![
///         ObservedOp::Read { table: 1, key: guard.clone(), value: Some(vec![]) },
///         ObservedOp::Write { table: 1, key: guard, value: tag.to_be_bytes().to_vec() },
///         ObservedOp::Write { table: 0, key: Key::from(slot), value: tag.to_be_bytes().to_vec() },
///     ]
/// };
/// // Phantom write skew: each scans the range the other inserts into, and finds it empty.
/// let history = vec![
///     ObservedTxn { id: 1, committed: true, ops: [vec![scan(0)], insert(5, 1)].concat() },
///     ObservedTxn { id: 2, committed: true, ops: [vec![scan(1)], insert(2, 2)].concat() },
/// ];
/// let ser = check_observed_ranges(&history, &layout, Isolation::Serializable, &Limits::default());
/// assert_eq!(ser.count(Class::G2), 1, "{ser}");
/// assert!(!ser.ok());
/// assert!(check_observed_ranges(&history, &layout, Isolation::Snapshot, &Limits::default()).ok());
/// ```
pub fn check_observed_ranges(
    txns: &[ObservedTxn],
    layout: &ObservedRanges,
    claimed: Isolation,
    limits: &Limits,
) -> Report {
    let mut found = Findings::new(limits.examples_per_class);
    let lists = lists_only(txns, layout, &mut found);
    let mut h = Observed::build(&lists, &mut found);
    let (mut edges, orders) = h.infer(&mut found);
    let consistent = matches!(claimed, Isolation::Snapshot | Isolation::Serializable);
    let mut rows = Rows::build(txns, layout, &h, &orders, &mut found);
    rows.reads(txns, layout, &mut h, consistent, &mut edges, &mut found);
    finish(&h, edges, Some(layout.table), claimed, limits, found)
}

/// The history without the ops on rows, with each guard value's prefix cut
/// off: what the list checker takes.
fn lists_only(txns: &[ObservedTxn], layout: &ObservedRanges, found: &mut Findings) -> Vec<ObservedTxn> {
    let guards: FxSet<(u32, &Key)> = layout.ranges.iter().map(|r| (r.guard.0, &r.guard.1)).collect();
    let p = layout.guard_prefix;
    let mut cut = |id: u64, table: u32, key: &Key, v: &[u8], committed: bool| -> Option<Vec<u8>> {
        if v.len() >= p {
            return Some(v[p..].to_vec());
        }
        if committed {
            let (key, got) = (key_name(&(table, key.clone())), short_value(v));
            found.note(Class::Invalid, &[id], || {
                format!("T{id} saw guard {key} = {got}, shorter than its {p}-byte prefix")
            });
        }
        None
    };
    txns.iter()
        .map(|t| {
            let ops = t
                .ops
                .iter()
                .filter_map(|op| match op {
                    ObservedOp::Read { table, key, value } if guards.contains(&(*table, key)) => {
                        let value = match value {
                            Some(v) => Some(cut(t.id, *table, key, v, t.committed)?),
                            None => None,
                        };
                        Some(ObservedOp::Read { table: *table, key: key.clone(), value })
                    }
                    ObservedOp::Write { table, key, value } if guards.contains(&(*table, key)) => {
                        let value = cut(t.id, *table, key, value, t.committed)?;
                        Some(ObservedOp::Write { table: *table, key: key.clone(), value })
                    }
                    ObservedOp::Read { table, .. }
                    | ObservedOp::Write { table, .. }
                    | ObservedOp::Delete { table, .. }
                    | ObservedOp::Scan { table, .. }
                        if *table == layout.table =>
                    {
                        None
                    }
                    op => Some(op.clone()),
                })
                .collect();
            ObservedTxn { id: t.id, committed: t.committed, ops }
        })
        .collect()
}

/// A row's value, or its absence.
type Val<'a> = Option<&'a [u8]>;

/// One version of a key: the change that made it (0: the initial state)
/// and the value.
#[derive(Clone, Copy, Debug)]
struct Version<'a> {
    pos: u32,
    value: Val<'a>,
}

/// The versions of one key of a range, in the range's order.
#[derive(Debug, Default)]
struct Slot<'a> {
    versions: Vec<Version<'a>>,
    /// Where each value was inserted: first and last version index.
    present: FxMap<&'a [u8], (u32, u32)>,
}

/// A range's changes and the states they left.
struct Range<'a> {
    lo: &'a Key,
    hi: &'a Key,
    guard: &'a (u32, Key),
    /// Change `p` (1-based) is `changes[p - 1]`: its transaction and what
    /// it did to each key.
    changes: Vec<(TxnIx, Vec<(&'a Key, Val<'a>)>)>,
    /// The states' fingerprints: the positions `p` after which the range
    /// held each set of rows, ascending.
    states: FxMap<u128, Vec<u32>>,
    slots: BTreeMap<&'a Key, Slot<'a>>,
    /// Each transaction's first change of the range.
    first: FxMap<TxnIx, u32>,
    /// Each transaction's first read of the guard, as the position of the
    /// state it names (the number of tags of the list it read).
    counted: FxMap<TxnIx, u32>,
    /// False when the order holds a change whose effect is unknown (an
    /// aborted append, reported as G1a) or that does not replay: the range
    /// is then not checked further.
    known: bool,
}

/// A (key, value) row's share of a state's fingerprint: a 128-bit hash, so
/// that two different states share a fingerprint with negligible chance.
fn fingerprint(key: &Key, value: &[u8]) -> u128 {
    let half = |salt: u8| {
        let mut h = DefaultHasher::new();
        (salt, key.as_bytes(), value).hash(&mut h);
        h.finish() as u128
    };
    half(0) << 64 | half(1)
}

/// Every range, and what each transaction changed in it.
struct Rows<'a> {
    /// Sorted by `lo`.
    ranges: Vec<Range<'a>>,
    /// (transaction, range): the op index of its first change there.
    changed: FxMap<(TxnIx, usize), usize>,
}

impl<'a> Rows<'a> {
    /// Orders each range's changes by its guard's list and replays them.
    fn build(
        txns: &'a [ObservedTxn],
        layout: &'a ObservedRanges,
        h: &Observed<'_>,
        orders: &[&[u8]],
        found: &mut Findings,
    ) -> Rows<'a> {
        let mut ranges: Vec<Range<'a>> = layout
            .ranges
            .iter()
            .map(|r| Range {
                lo: &r.lo,
                hi: &r.hi,
                guard: &r.guard,
                changes: Vec::new(),
                states: FxMap::default(),
                slots: BTreeMap::new(),
                first: FxMap::default(),
                counted: FxMap::default(),
                known: true,
            })
            .collect();
        ranges.sort_by(|a, b| a.lo.cmp(b.lo));
        let mut rows = Rows { ranges, changed: FxMap::default() };
        // Each committed transaction's net change of each range, by key.
        let mut effects: FxMap<(TxnIx, usize), BTreeMap<&'a Key, Val<'a>>> = FxMap::default();
        for (ix, t) in txns.iter().enumerate().filter(|(_, t)| t.committed) {
            for (i, op) in t.ops.iter().enumerate() {
                let (key, value) = match op {
                    ObservedOp::Write { table, key, value } if *table == layout.table => (key, Some(&value[..])),
                    ObservedOp::Delete { table, key } if *table == layout.table => (key, None),
                    _ => continue,
                };
                if let Some(r) = rows.range_of(key) {
                    rows.changed.entry((ix as TxnIx, r)).or_insert(i);
                    effects.entry((ix as TxnIx, r)).or_default().insert(key, value);
                }
            }
        }
        for r in 0..rows.ranges.len() {
            rows.replay(r, txns, layout, h, orders, &effects, found);
        }
        rows
    }

    /// The range holding `key`.
    fn range_of(&self, key: &Key) -> Option<usize> {
        let r = self.ranges.partition_point(|r| r.lo <= key).checked_sub(1)?;
        (key < self.ranges[r].hi).then_some(r)
    }

    /// Orders range `r`'s changes by its guard's list and replays them from
    /// the initial rows, recording every state and every key's versions.
    #[allow(clippy::too_many_arguments)]
    fn replay(
        &mut self,
        r: usize,
        txns: &'a [ObservedTxn],
        layout: &'a ObservedRanges,
        h: &Observed<'_>,
        orders: &[&[u8]],
        effects: &FxMap<(TxnIx, usize), BTreeMap<&'a Key, Val<'a>>>,
        found: &mut Findings,
    ) {
        let range = &mut self.ranges[r];
        let (gt, gk) = range.guard;
        let guard = h.keys.get(&(*gt, gk)).copied();
        let order = guard.map_or(&[][..], |k| orders[k as usize]);
        let mut state: BTreeMap<&'a Key, &'a [u8]> = BTreeMap::new();
        for (k, v) in layout.initial.iter().filter(|(k, _)| range.lo <= k && k < range.hi) {
            state.insert(k, v);
            let slot = range.slots.entry(k).or_default();
            slot.versions.push(Version { pos: 0, value: Some(v) });
            slot.present.insert(v, (0, 0));
        }
        let mut print: u128 = state.iter().fold(0, |s, (k, v)| s.wrapping_add(fingerprint(k, v)));
        range.states.entry(print).or_default().push(0);
        for t in tags(order) {
            let Some(a) = guard.and_then(|g| h.appends.get(&(g, t))) else {
                // A tag no committed transaction appended: G1a, reported by the lists.
                range.known = false;
                break;
            };
            // A transaction that appended twice made its change at its last append.
            let change: Vec<(&'a Key, Val<'a>)> = match effects.get(&(a.txn, r)) {
                Some(e) if a.last => e.iter().map(|(k, v)| (*k, *v)).collect(),
                _ => Vec::new(),
            };
            let p = range.changes.len() as u32 + 1;
            range.first.entry(a.txn).or_insert(p);
            for &(k, v) in &change {
                let old = state.get(k).copied();
                if old.is_some() == v.is_some() {
                    let (id, key) = (txns[a.txn as usize].id, key_name(&(layout.table, k.clone())));
                    let what = if v.is_some() { "inserted a row over an existing one" } else { "deleted no row" };
                    let guard = key_name(range.guard);
                    found.note(Class::Invalid, &[id], || {
                        format!(
                            "T{id} {what} at {key}, in the order of {guard}'s list: the range's changes do not replay"
                        )
                    });
                    range.known = false;
                    return;
                }
                if let Some(o) = old {
                    print = print.wrapping_sub(fingerprint(k, o));
                    state.remove(k);
                }
                let slot = range.slots.entry(k).or_insert_with(|| Slot {
                    versions: vec![Version { pos: 0, value: None }],
                    present: FxMap::default(),
                });
                if let Some(v) = v {
                    print = print.wrapping_add(fingerprint(k, v));
                    state.insert(k, v);
                    let i = slot.versions.len() as u32;
                    slot.present.entry(v).and_modify(|e| e.1 = i).or_insert((i, i));
                }
                slot.versions.push(Version { pos: p, value: v });
            }
            range.changes.push((a.txn, change));
            range.states.entry(print).or_default().push(p);
        }
        if !range.known {
            return;
        }
        for o in guard.map_or(&[][..], |g| &h.obs[g as usize][..]).iter().filter(|o| o.how == How::Read) {
            if order.starts_with(o.value) {
                range.counted.entry(o.txn).or_insert((o.value.len() / TAG) as u32);
            }
        }
        // Every transaction that changed the range appended to its guard.
        for &(ix, _) in effects.keys().filter(|(ix, rr)| *rr == r && !range.first.contains_key(ix)) {
            let (id, guard) = (txns[ix as usize].id, key_name(range.guard));
            let (lo, hi) = (key_name(&(layout.table, range.lo.clone())), key_name(&(layout.table, range.hi.clone())));
            found.note(Class::Invalid, &[id], || {
                format!("T{id} changed rows of {lo}..{hi} but appended no tag to its guard {guard}")
            });
        }
    }

    /// Matches every committed read of a row (lookup or scan) against the
    /// states of its range and adds the edges that follow.
    fn reads(
        &mut self,
        txns: &'a [ObservedTxn],
        layout: &'a ObservedRanges,
        h: &mut Observed<'a>,
        consistent: bool,
        edges: &mut Vec<(u32, Edge)>,
        found: &mut Findings,
    ) {
        let mut reader = Reader { h, edges, found, table: layout.table };
        for (ix, t) in txns.iter().enumerate().filter(|(_, t)| t.committed) {
            let ix = ix as TxnIx;
            for (i, op) in t.ops.iter().enumerate() {
                match op {
                    ObservedOp::Read { table, key, value } if *table == layout.table => {
                        let Some(r) = self.range_of(key).filter(|&r| self.readable(ix, r, i)) else { continue };
                        let range = &self.ranges[r];
                        reader.key(ix, range, key, value.as_deref(), "looked up");
                    }
                    ObservedOp::Scan { table, lo, hi, rows } if *table == layout.table => {
                        self.scan(ix, i, (lo, hi), rows, consistent, &mut reader);
                    }
                    _ => {}
                }
            }
        }
    }

    /// Whether transaction `ix`'s op `i` read range `r` before changing it
    /// (a read of its own change tells nothing about the others').
    fn readable(&self, ix: TxnIx, r: usize, i: usize) -> bool {
        self.ranges[r].known && self.changed.get(&(ix, r)).is_none_or(|&first| first > i)
    }

    /// A scan: each key it covers, and each range it covers whole.
    fn scan(
        &self,
        ix: TxnIx,
        i: usize,
        (lo, hi): (&Bound<Key>, &Bound<Key>),
        rows: &'a [(Key, Vec<u8>)],
        consistent: bool,
        reader: &mut Reader<'_, 'a>,
    ) {
        let inside = |k: &Key| {
            (match lo {
                Bound::Included(l) => k >= l,
                Bound::Excluded(l) => k > l,
                Bound::Unbounded => true,
            }) && (match hi {
                Bound::Included(h) => k <= h,
                Bound::Excluded(h) => k < h,
                Bound::Unbounded => true,
            })
        };
        if rows.windows(2).any(|w| w[0].0 >= w[1].0) || rows.iter().any(|(k, _)| !inside(k)) {
            let id = reader.h.id(ix);
            reader.found.note(Class::Invalid, &[id], || {
                format!("T{id} scanned t{} and got rows out of key order or outside the range scanned", reader.table)
            });
            return;
        }
        for (r, range) in self.ranges.iter().enumerate() {
            let reached = match lo {
                Bound::Included(l) | Bound::Excluded(l) => l < range.hi,
                Bound::Unbounded => true,
            };
            let reached = reached
                && match hi {
                    Bound::Included(h) => h >= range.lo,
                    Bound::Excluded(h) => h > range.lo,
                    Bound::Unbounded => true,
                };
            if !reached {
                continue;
            }
            if !self.readable(ix, r, i) {
                continue;
            }
            let a = rows.partition_point(|(k, _)| k < range.lo);
            let b = rows.partition_point(|(k, _)| k < range.hi);
            let got = &rows[a..b];
            let mut fine = true;
            for (k, v) in got.iter().filter(|(k, _)| !range.slots.contains_key(k)) {
                fine &= reader.key(ix, range, k, Some(v), "scanned");
            }
            for &k in range.slots.keys() {
                if inside(k) {
                    let v = got.binary_search_by(|(x, _)| x.cmp(k)).ok().map(|j| &got[j].1[..]);
                    fine &= reader.key(ix, range, k, v, "scanned");
                }
            }
            let whole = inside(range.lo) && covers_to(hi, range.hi);
            if consistent && fine && whole {
                reader.state(ix, range, got);
            }
        }
    }
}

/// Whether a range ending at `hi` reaches every key below `end`.
fn covers_to(hi: &Bound<Key>, end: &Key) -> bool {
    match hi {
        Bound::Unbounded => true,
        Bound::Excluded(h) | Bound::Included(h) => h >= end,
    }
}

/// Adds the edges of reads.
struct Reader<'r, 'a> {
    h: &'r mut Observed<'a>,
    edges: &'r mut Vec<(u32, Edge)>,
    found: &'r mut Findings,
    table: u32,
}

impl<'a> Reader<'_, 'a> {
    fn edge(&mut self, from: TxnIx, to: TxnIx, dep: Dep, key: &'a Key) {
        if from != to {
            let key = self.h.intern(self.table, key);
            self.edges.push((from, Edge { to, dep, key }));
        }
    }

    /// The last state transaction `ix` may have read of `range`: the one
    /// before its own first change of it.
    fn last_state(ix: TxnIx, range: &Range<'_>) -> u32 {
        range.first.get(&ix).map_or(range.changes.len() as u32, |p| p - 1)
    }

    /// Transaction `ix` read `key` of `range` as `seen`: an edge from the
    /// writer of the earliest version it may have read, and one to the
    /// writer of the version after the latest. False when no version it may
    /// have read matches (reported).
    fn key(&mut self, ix: TxnIx, range: &Range<'a>, key: &'a Key, seen: Val<'_>, verb: &str) -> bool {
        let last = Self::last_state(ix, range);
        let initial = [Version { pos: 0, value: None }];
        let slot = range.slots.get(key);
        let versions = slot.map_or(&initial[..], |s| &s.versions[..]);
        // The versions it may have read: before its own change.
        let n = versions.partition_point(|v| v.pos <= last);
        let (first, latest) = match seen {
            Some(v) => match slot.and_then(|s| s.present.get(v)) {
                Some(&(f, l)) if (f as usize) < n => (f as usize, (l as usize).min(n - 1)),
                Some(_) => return self.bad(ix, key, seen, verb, "inserted after its own change of the range"),
                None => {
                    let (id, name, val) = (self.h.id(ix), key_name(&(self.table, key.clone())), short_value(v));
                    self.found.note(Class::G1a, &[id], || {
                        format!("T{id} {verb} {name} = {val}, which no committed transaction inserted there")
                    });
                    return false;
                }
            },
            None => match versions[..n].iter().position(|v| v.value.is_none()) {
                Some(f) => (f, versions[..n].iter().rposition(|v| v.value.is_none()).unwrap_or(f)),
                None => return self.bad(ix, key, seen, verb, "with no committed deletion before its own change"),
            },
        };
        let pos = versions[first].pos;
        if pos > 0 {
            self.edge(range.changes[pos as usize - 1].0, ix, Dep::Wr, key);
        }
        if let Some(next) = versions.get(latest + 1) {
            let dep = if seen.is_some() { Dep::Rw } else { Dep::Prw };
            self.edge(ix, range.changes[next.pos as usize - 1].0, dep, key);
        }
        true
    }

    /// A read of a key that no version explains.
    fn bad(&mut self, ix: TxnIx, key: &Key, seen: Val<'_>, verb: &str, why: &str) -> bool {
        let (id, name) = (self.h.id(ix), key_name(&(self.table, key.clone())));
        let got = seen.map_or("no row".into(), short_value);
        self.found.note(Class::Invalid, &[id], || format!("T{id} {verb} {name} and found {got}, {why}"));
        false
    }

    /// Transaction `ix` scanned all of `range` and got `rows`: edges from
    /// the writer of the earliest matching state and to the writer of the
    /// state after the latest; none matching is a scan that read no
    /// consistent state (reported).
    fn state(&mut self, ix: TxnIx, range: &Range<'a>, rows: &[(Key, Vec<u8>)]) {
        let last = Self::last_state(ix, range);
        let print = rows.iter().fold(0u128, |s, (k, v)| s.wrapping_add(fingerprint(k, v)));
        let at = range.states.get(&print).map_or(&[][..], |p| &p[..]);
        let at = &at[..at.partition_point(|&p| p <= last)];
        let (Some(&first), Some(&latest)) = (at.first(), at.last()) else {
            let (id, guard) = (self.h.id(ix), key_name(range.guard));
            let (lo, hi) = (key_name(&(self.table, range.lo.clone())), key_name(&(self.table, range.hi.clone())));
            let n = rows.len();
            self.found.note(Class::Invalid, &[id], || {
                format!(
                    "T{id} scanned {lo}..{hi} and got {n} rows, a set that none of the range's states before its own \
                     change holds (in the order of {guard}'s list): not a consistent snapshot"
                )
            });
            return;
        };
        if let Some(&j) = range.counted.get(&ix).filter(|&&j| j <= last) {
            if at.binary_search(&j).is_err() {
                let (id, guard) = (self.h.id(ix), key_name(range.guard));
                let (lo, hi) = (key_name(&(self.table, range.lo.clone())), key_name(&(self.table, range.hi.clone())));
                self.found.note(Class::Invalid, &[id], || {
                    format!(
                        "T{id} read {guard} after {j} changes of {lo}..{hi}, but its scan of the range got {} rows, \
                         a set that state does not hold: not a consistent snapshot",
                        rows.len()
                    )
                });
                return;
            }
        }
        if first > 0 {
            let (txn, change) = &range.changes[first as usize - 1];
            let key = change.first().map_or(range.lo, |c| c.0);
            self.edge(*txn, ix, Dep::Wr, key);
        }
        if let Some((txn, change)) = range.changes.get(latest as usize) {
            // A change of a row it returned is an item anti-dependency; an
            // insert it missed, a predicate one.
            let item = change.iter().find(|(k, _)| rows.binary_search_by(|(x, _)| x.cmp(k)).is_ok());
            let (dep, key) = match (item, change.first()) {
                (Some(&(k, _)), _) => (Dep::Rw, k),
                (None, Some(&(k, _))) => (Dep::Prw, k),
                (None, None) => (Dep::Prw, range.lo),
            };
            self.edge(ix, *txn, dep, key);
        }
    }
}

#[cfg(test)]
mod tests;
