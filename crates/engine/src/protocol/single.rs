//! Single-version records, shared by Silo and by 1V and ordered 2PL: one
//! record per key, rewritten in place, whose Begin word is the **TID word**
//! (Silo, SOSP 2013, section 4.2; the layout is drawn in `silo`'s module
//! docs). Here: the word's bits, the lookup of a key's latest record and
//! the walk of a range, the per-transaction sets both families keep (the
//! WriteSet with its value arena; Silo's ReadSet and node set beside it),
//! and the steps of installing writes both take: buffering a write,
//! retiring a replaced record, the redo record, and whether a new value can
//! be written in place. Neither family's protocol is here: Silo validates
//! (`silo`), 1V locks (`lock_1v`).

use super::core::{Mark, TxnCore};
use super::sets::SlotSets;
use crate::gc::Garbage;
use crate::history::{Op, WriteKind};
use crate::key::Key;
use crate::shared::Shared;
use crate::storage::version::{VPtr, Version};
use crate::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use crate::table::{Index, Table};
use crate::TableId;
use crossbeam_utils::CachePadded;
use std::ops::Bound;
use std::time::Instant;

pub(crate) const EPOCH_SHIFT: u32 = 24;
/// How often the global epoch advances (section 4.1: 40 ms).
const EPOCH_MS: u64 = 40;
/// The database-wide state of the single-version families: Silo's global
/// epoch E (section 4.1), which also stamps retired records for both, and
/// the shared commit-TID sequence of the durable or recorded commits (see
/// `silo`'s and `lock_1v`'s module docs).
pub(crate) struct SiloGlobal {
    epoch: CachePadded<AtomicU64>,
    /// When E last advanced, in milliseconds since `start`.
    advanced_ms: AtomicU64,
    start: Instant,
    /// Recording only: the shared TID sequence (see the module docs).
    pub(crate) order: CachePadded<AtomicU64>,
    /// Silo's `get_for_update`: per slot, its occupant waits for another's
    /// write claim (see `silo::intent`). Written only around such waits.
    pub(crate) claim_waits: Box<[AtomicBool]>,
    /// The single-version sets of each slot (the WriteSet and its values;
    /// Silo's ReadSet and node set).
    pub(crate) sets: SlotSets<SiloLocal>,
}

impl SiloGlobal {
    pub(crate) fn new(slots: usize) -> SiloGlobal {
        SiloGlobal {
            epoch: CachePadded::new(AtomicU64::new(1)),
            advanced_ms: AtomicU64::new(0),
            start: Instant::now(),
            order: CachePadded::new(AtomicU64::new(0)),
            claim_waits: (0..slots).map(|_| AtomicBool::new(false)).collect(),
            sets: SlotSets::new(slots),
        }
    }

    /// Recording starts (`Database::set_recording`): the shared sequence
    /// jumps past every TID handed out so far, so that the checker can tell
    /// a version from before recording began by its TID. An unrecorded TID
    /// is `E << EPOCH_SHIFT`, or one more than a TID it read in the same
    /// epoch: below the next epoch's first TID (a record would have to change
    /// 2^24 times in one epoch to reach it).
    pub(crate) fn order_past_epoch(&self) {
        let next = (self.epoch() + 1) << EPOCH_SHIFT;
        // Relaxed: as every access of `order`, the order of the RMWs on it;
        // recording is switched on while no transaction runs.
        self.order.fetch_max(next, Ordering::Relaxed);
    }

    /// Advances E if it is older than [`EPOCH_MS`] (called now and then by
    /// committers instead of a background thread).
    pub(crate) fn tick(&self) {
        let now = self.start.elapsed().as_millis() as u64;
        // Relaxed: a rate limiter; the CAS below decides who advances.
        let last = self.advanced_ms.load(Ordering::Relaxed);
        if now >= last + EPOCH_MS
            && self.advanced_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            // SeqCst: E is also read in the total order (begin epochs, the
            // watermark); Release for the committers' Acquire loads.
            self.epoch.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The current epoch.
    pub(crate) fn epoch(&self) -> u64 {
        // Acquire: see `tick`.
        self.epoch.load(Ordering::Acquire)
    }

    /// The GC watermark of a single-version database (see
    /// `TxnTable::min_active_begin`): locking transactions keep no record
    /// across operations that another could retire (see `lock_1v`), so an
    /// epoch of crossbeam-epoch is all a retired record needs; Silo's
    /// readers are bounded by their begin epochs.
    pub(crate) fn watermark(&self, db: &Shared) -> u64 {
        if db.opts.protocol.uses_key_locks() {
            return u64::MAX;
        }
        // SeqCst: the bound must be read before the slot scan (see TxnTable).
        db.txns.min_active_begin(self.epoch_seqcst())
    }

    /// The current epoch, read in the single total order (begin
    /// publication and the watermark's bound, as for the clock).
    pub(crate) fn epoch_seqcst(&self) -> u64 {
        // SeqCst: see `Database::begin_with` and `TxnTable::min_active_begin`.
        self.epoch.load(Ordering::SeqCst)
    }

    /// Begin for Silo (`locking` false) and the locking protocols: takes a
    /// slot; returns the slot, the id and the begin "timestamp". No shared
    /// counter: it is the epoch, published for the watermark that bounds
    /// when retired records are freed (see `protocol::silo`), in two SeqCst
    /// steps as the multi-version begin publishes its own. Under locking,
    /// the begin time the checker sees is a reading of the commit sequence
    /// instead (recording only; see `protocol::lock_1v`).
    #[inline]
    pub(crate) fn begin(&self, db: &Shared, locking: bool) -> crate::Result<(u32, u64, u64)> {
        let (slot, id) = db.txns.open(|_| {})?;
        let s = db.txns.slot(slot);
        s.begin_ts.store(self.epoch(), Ordering::SeqCst);
        let e = self.epoch_seqcst();
        // Release: only raises the published value.
        s.begin_ts.store(e, Ordering::Release);
        if locking && db.recording() {
            // Relaxed: the order is that of the RMWs on this one counter.
            return Ok((slot, id, self.order.load(Ordering::Relaxed)));
        }
        Ok((slot, id, e))
    }
}

/// A committing writer holds the record.
pub(crate) const LOCK: u64 = 1 << 63;
/// The key's current record.
pub(crate) const LATEST: u64 = 1 << 62;
/// A placeholder: not (or no longer) a row.
pub(crate) const ABSENT: u64 = 1 << 61;
/// The TID itself: epoch and sequence.
pub(crate) const TID: u64 = ABSENT - 1;
/// Retired records queued before a collection (Silo: most of them wait
/// for the epoch to move anyway, so the watermark is not scanned often).
const GC_THRESHOLD: usize = 128;
/// The same under key locks, where a retired record waits for nothing but
/// an epoch of crossbeam-epoch (see [`SiloGlobal::watermark`]): the
/// collector unlinks it soon, so that the walks of a key's chain (every
/// lookup, every scan that meets the key) do not pass the records each
/// thread's last 128 deletes and replacements left. Predicate at
/// repeatable read, 8 threads on 2 cores: 1.3-1.5x the throughput of 128.
const KEY_LOCK_GC_THRESHOLD: usize = 8;

/// One ReadSet entry: the record and its TID word as read (lock bit clear).
#[derive(Clone, Copy)]
pub(crate) struct SvRead {
    pub(crate) rec: VPtr,
    pub(crate) word: u64,
}

/// One WriteSet entry; the new value is in the transaction's value arena.
#[derive(Clone, Copy)]
pub(crate) struct SvWrite {
    pub(crate) table: u32,
    pub(crate) rec: VPtr,
    pub(crate) kind: WriteKind,
    /// The record is our own insert placeholder.
    pub(crate) placeholder: bool,
    pub(crate) at: u32,
    pub(crate) len: u32,
}

/// A node-set entry: a lookup that found no row, or a scan. `seen` is the
/// range of [`SiloLocal::seen`] holding every record the walk passed.
#[derive(Clone)]
pub(crate) enum SvNode {
    /// `get`, `update` or `delete` of `key` found no row.
    Missing { table: u32, key: Key, seen: (u32, u32) },
    /// A scan of `index` over the range. `stop`: the walk was stopped at
    /// the row of this primary key, inside the group of records sharing
    /// the bound's index key: the rest of that group was not walked
    /// (`true`: a reverse walk, stopped at the low bound). In a secondary
    /// index the group holds other rows; in the primary index, other
    /// records of the row it stopped at (the old record of a row that
    /// moved, section 4.5, until it is unlinked).
    Scan { table: u32, index: u8, lo: Bound<Key>, hi: Bound<Key>, stop: Option<(Key, bool)>, seen: (u32, u32) },
}

/// The per-slot sets of a Silo transaction (kept in [`SiloGlobal::sets`],
/// so their capacity is reused).
#[derive(Default)]
pub(crate) struct SiloLocal {
    pub(crate) reads: Vec<SvRead>,
    pub(crate) writes: Vec<SvWrite>,
    pub(crate) nodes: Vec<SvNode>,
    /// Every record a node-set walk passed, latest or not, and its word
    /// then (lock clear). Compared by address only, never dereferenced
    /// again: a record retired before we began may be freed meanwhile.
    pub(crate) seen: Vec<(VPtr, u64)>,
    pub(crate) values: Vec<u8>,
    /// Scratch: the stable copy of a record's value.
    pub(crate) copy: Vec<u8>,
    /// Scratch: records sorted for validation.
    pub(crate) sorted: Vec<usize>,
    /// The last TID this slot's transactions chose (rule (b) of section 4.4).
    pub(crate) last_tid: u64,
    /// Commits since the epoch was last checked.
    pub(crate) commits: u32,
    /// A savepoint was taken: `sv_buffer` logs the entries it replaces.
    pub(crate) savepoints: bool,
    /// WriteSet entries replaced since the first savepoint, with their
    /// index, oldest first: `rollback_to` puts them back.
    pub(crate) replaced: Vec<(u32, SvWrite)>,
    /// Silo: records whose End word holds our write claim
    /// (`get_for_update`, see `silo::intent`), released at the end.
    pub(crate) claims: Vec<VPtr>,
}

impl SiloLocal {
    /// Where `rec` is in the WriteSet (its last entry).
    #[inline]
    pub(crate) fn written(&self, rec: *mut Version) -> Option<usize> {
        self.writes.iter().rposition(|w| w.rec.0 == rec)
    }

    /// Our own insert placeholder for `key` in `table`, if the WriteSet
    /// holds one. A racing inserter links a second placeholder of the key
    /// before it meets ours and withdraws (see `SiloTxn::insert`): until it
    /// does, a walk may meet its placeholder first, and we must not take it
    /// for the key's row. Only on that rare path (an absent record that is
    /// not ours), so a walk of the WriteSet.
    pub(crate) fn own_placeholder(&self, table: u32, key: &Key) -> Option<usize> {
        self.writes.iter().rposition(|w| {
            // SAFETY: our own placeholder, linked and not retired while we run.
            w.placeholder && w.table == table && unsafe { &*w.rec.0 }.key_eq(key)
        })
    }

    pub(crate) fn clear(&mut self) {
        self.reads.clear();
        self.writes.clear();
        self.nodes.clear();
        self.seen.clear();
        self.values.clear();
        self.savepoints = false;
        self.replaced.clear();
        debug_assert!(self.claims.is_empty(), "claims are released before the sets are cleared");
        self.claims.clear();
    }
}

/// What a walk of a key's chain found: the latest record, or null; and
/// whether it passed an unlocked placeholder (Silo only: see below).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Latest {
    pub(crate) rec: *mut Version,
    pub(crate) placeholder: bool,
}

/// Silo's walk of `key`'s chain in `t`'s primary index (the caller is
/// pinned): the key's row, or null. When `seen` is given and no row is
/// found, every record of the key passed is added to it (the node-set of a
/// missing key).
///
/// **Placeholders.** An unlocked placeholder (latest, absent) is not
/// taken for the key's record: it is passed (and added to `seen`), and the
/// walk goes on. Its inserter is before its serialization point, and may
/// be one that lost a race and has not yet withdrawn (`SiloTxn::insert`):
/// linked after the key's row or after the winning placeholder, so met
/// first, it would hide them. `Latest::placeholder` says one was passed
/// (perhaps the caller's own insert). A locked placeholder is an inserter
/// in its commit, which won its race: it is the key's record.
///
/// **Moves.** A committer that moves a row to a new record (section 4.5: a
/// value of another length) links the new record first and then retires
/// the old one, but a walk that passed the new record's place before it
/// was linked meets the old one retired, and finds no latest record of a
/// row that never stopped existing. So a walk that finds none walks again
/// if it passed a record retired by a commit (TID set) that the walk
/// before did not pass retired, compared by address and word: the record
/// that was the key's row when this walk began is one (it is not
/// reclaimed while we are open, so the walk reaches it, and it was not
/// retired yet when the walk before ended). A deleted key's retired
/// records stay the same from walk to walk, or only leave the chain (the
/// collector): its second walk is its last. Counting them instead is not
/// enough: the collector unlinking old ones between two walks can hide the
/// one new retirement, and a lookup answered "no row" for a row that
/// always existed. After `WALKS` walks that each met a new retirement
/// (moves faster than walks) it gives up with [`Moving`]: the caller must
/// not report the row absent (it never was), and aborts instead.
#[inline]
pub(crate) fn lookup_latest(t: &Table, key: &Key, seen: Option<&mut Vec<(VPtr, u64)>>) -> Result<Latest, Moving> {
    walk_latest(t, key, seen, false)
}

/// [`lookup_latest`] for a caller that holds the key's lock (1V, ordered
/// 2PL): no move of the key can run beside the walk, so one walk settles
/// it, and no other transaction's placeholder of the key exists (1V links
/// its placeholders under the key's X lock): the first latest record, our
/// own placeholder included, is the key's.
pub(crate) fn find_latest(t: &Table, key: &Key, seen: Option<&mut Vec<(VPtr, u64)>>) -> *mut Version {
    match walk_latest(t, key, seen, true) {
        Ok(l) => l.rec,
        Err(Moving) => unreachable!("a locked walk does not give up"),
    }
}

/// True if `w` is the final word of a record retired by a commit (an
/// aborted insert leaves TID 0).
#[inline(always)]
fn retired_by_commit(w: u64) -> bool {
    w & LATEST == 0 && w & TID != 0
}

/// Walks `key`'s chain: [`lookup_latest`], or with `locked` (the caller
/// holds the key's lock) [`find_latest`]: placeholders are not passed and
/// the first walk is the last. `passed` holds what each walk passed: the
/// caller's node-set entries when `seen` is given, else a vector of our
/// own holding only retired records (a walk that passes none allocates
/// nothing); the entries of the walk before stay in front of this walk's
/// until the two are compared.
#[inline(always)]
fn walk_latest(t: &Table, key: &Key, seen: Option<&mut Vec<(VPtr, u64)>>, locked: bool) -> Result<Latest, Moving> {
    /// Walks before giving up.
    const WALKS: usize = 8;
    let keep_all = seen.is_some();
    let mut own = Vec::new();
    let passed = seen.unwrap_or(&mut own);
    let start = passed.len();
    // One walk of the chain: appends what it passes to `passed`. A
    // function, not a closure: a closure called from two places was not
    // inlined, and a lookup paid for the call.
    #[inline(always)]
    fn walk_once(t: &Table, key: &Key, passed: &mut Vec<(VPtr, u64)>, keep_all: bool, locked: bool) -> Latest {
        let mut found = std::ptr::null_mut();
        let mut placeholder = false;
        t.indexes[0].for_each_eq(key, |v| {
            if !v.key_eq(key) {
                return true;
            }
            // Acquire: pairs with the Release stores of the word.
            let w = v.begin.load(Ordering::Acquire);
            if w & LATEST != 0 {
                if locked || w & (ABSENT | LOCK) != ABSENT {
                    found = v as *const Version as *mut Version;
                    return false;
                }
                placeholder = true;
            }
            if keep_all || (!locked && retired_by_commit(w)) {
                passed.push((VPtr(v as *const Version as *mut Version), w & !LOCK));
            }
            true
        });
        Latest { rec: found, placeholder }
    }
    let walk = |passed: &mut Vec<(VPtr, u64)>| walk_once(t, key, passed, keep_all, locked);
    // Nearly every lookup ends after its first walk: the row found, or the
    // caller holds the key's lock. Nothing to compare then, so nothing
    // more is done.
    let mut latest = walk(passed);
    if !latest.rec.is_null() || locked {
        return Ok(latest);
    }
    // passed[start..mid]: what the walk before the latest one passed
    // (nothing before the first).
    let mut mid = start;
    for walks in 1.. {
        // A retired record's word is final, and no record passed is freed
        // while the caller is pinned: an entry of the walk before with the
        // same address and word is the same retirement.
        let (before, now) = passed[start..].split_at(mid - start);
        let moved = now.iter().any(|e| retired_by_commit(e.1) && !before.contains(e));
        passed.drain(start..mid);
        if !moved {
            return Ok(latest);
        }
        if walks == WALKS {
            break;
        }
        mid = passed.len();
        latest = walk(passed);
        if !latest.rec.is_null() {
            passed.drain(start..mid);
            return Ok(latest);
        }
    }
    Err(Moving)
}

/// A key's row kept moving to new records faster than [`lookup_latest`]
/// could walk its chain: it exists, but no walk met its latest record.
#[derive(Debug)]
pub(crate) struct Moving;

/// Calls `f` on every record (latest or not) whose key in `ix` lies in the
/// range, until it returns false: one chain for a single key (`get_by`),
/// else the range of an ordered index or the whole of a hash index.
/// The caller is pinned. `rev`: an ordered range is walked from `hi` down.
pub(crate) fn walk_range(ix: &Index, lo: &Bound<Key>, hi: &Bound<Key>, rev: bool, mut f: impl FnMut(&Version) -> bool) {
    if let (Bound::Included(a), Bound::Included(b)) = (lo, hi) {
        if a == b {
            ix.for_each_eq(a, |v| !ix.matches(v, a) || f(v));
            return;
        }
    }
    let ordered = ix.is_ordered();
    ix.for_each_in(lo.as_ref(), hi.as_ref(), rev, |v| (!ordered && !ix.covers(v, lo, hi)) || f(v));
}

/// The primary key of a record (for the history).
pub(crate) fn key_of_record(rec: *mut Version) -> Key {
    // SAFETY: callers hold an epoch guard and reached `rec` through an index
    // or created it.
    unsafe { &*rec }.key()
}
/// The single-version steps that Silo and 1V share (both keep their
/// WriteSet and new values in [`SiloLocal`] and install records in the
/// same TID-word layout): buffering a write, retiring a record, the redo
/// record, and whether a value can be written in place.
impl<'db> TxnCore<'db> {
    /// Adds a write of `rec` (or replaces our earlier write of it).
    pub(crate) fn sv_buffer(
        &mut self,
        sv: &mut SiloLocal,
        table: TableId,
        rec: *mut Version,
        kind: WriteKind,
        value: &[u8],
        placeholder: bool,
    ) {
        let l = sv;
        let at = l.values.len() as u32;
        l.values.extend_from_slice(value);
        let len = value.len() as u32;
        if let Some(i) = l.writes.iter().rposition(|w| w.rec.0 == rec) {
            if l.savepoints {
                l.replaced.push((i as u32, l.writes[i]));
            }
            let w = &mut l.writes[i];
            // An insert of our own placeholder stays an insert; a delete
            // followed by an insert is an update of the row.
            w.kind = match (w.kind, kind) {
                (WriteKind::Insert, WriteKind::Update) => WriteKind::Insert,
                (WriteKind::Delete, WriteKind::Insert) => WriteKind::Update,
                (_, k) => k,
            };
            (w.at, w.len) = (at, len);
        } else {
            l.writes.push(SvWrite { table: table.0, rec: VPtr(rec), kind, placeholder, at, len });
        }
        if self.recording {
            self.record(Op::Write { table: table.0, key: key_of_record(rec), kind, value: value.to_vec() });
        }
    }

    /// Hands a record that is no longer (or never was) a row to the garbage
    /// collector, after storing its final word `tid | ABSENT` (not latest,
    /// unlocked).
    ///
    /// Transactions keep raw pointers to records in their sets between
    /// operations, unpinned, so a retired record must outlive every
    /// transaction open when it was retired: it is stamped with the epoch
    /// read after the retirement, and reclaimed once every open
    /// transaction began in a later epoch (the watermark over the begin
    /// epochs, see `Database::watermark`). Such a transaction read E after
    /// our fence, so it sees the record retired and never adds it to a set.
    pub(crate) fn sv_retire(&mut self, g: &SiloGlobal, table: TableId, rec: *mut Version, tid: u64) {
        // SAFETY: alive (ours, or locked by us); Release: readers that see
        // the word see everything before it.
        unsafe { &*rec }.begin.store(tid | ABSENT, Ordering::Release);
        // SeqCst fence, then E: pairs with the SeqCst publication of begin
        // epochs (see above).
        fence(Ordering::SeqCst);
        let stamp = g.epoch();
        let db = self.db;
        let shard = self.slot as usize;
        // SAFETY: alive, as above.
        let hash = unsafe { &*rec }.key_hash();
        let len = db.gc.push(shard, std::iter::once(Garbage { ts: stamp, table: table.0, v: VPtr(rec), hash }));
        // Every GC_THRESHOLD records (Silo: the front waits for the epoch to
        // move, 40 ms, so do not scan the watermark on every retirement), or
        // every KEY_LOCK_GC_THRESHOLD under key locks (nothing to wait for).
        let every = if db.opts.protocol.uses_key_locks() { KEY_LOCK_GC_THRESHOLD } else { GC_THRESHOLD };
        if len % every == 0 {
            let w = g.watermark(db);
            let n = db.gc.collect(shard, w, usize::MAX, |t| db.table_by_id(t));
            // Relaxed: statistics only.
            self.slot().freed.fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    /// Appends the redo record of a single-version commit (Silo, 1V): the
    /// WriteSet's keys with their new values, or deletes. Returns its epoch.
    pub(crate) fn sv_log_redo(&mut self, sv: &SiloLocal, log: &crate::wal::log::Log, tid: u64) -> u64 {
        let l = sv;
        log.append(tid, &mut self.local.get().log_buf, |r| {
            for w in &l.writes {
                // SAFETY: X-locked (or locked) by us, so alive.
                let rec = unsafe { &*w.rec.0 };
                let value = (w.kind != WriteKind::Delete).then(|| &l.values[w.at as usize..(w.at + w.len) as usize]);
                r.put(w.table, rec.key().as_bytes(), value);
            }
            l.writes.len() as u32
        })
    }

    /// True if `value` can overwrite `rec` in place: same length, and the
    /// same keys in every secondary index.
    pub(crate) fn sv_in_place(t: &Table, rec: &Version, value: &[u8]) -> bool {
        if value.len() != rec.value_len() {
            return false;
        }
        let key = rec.key();
        t.indexes[1..].iter().all(|ix| match ix.key_fn {
            Some(f) => rec.with_value(|old| f(&key, old)) == f(&key, value),
            None => true,
        })
    }
}

/// Silo and 1V: the mark, and `sv_buffer` starts logging what it replaces.
pub(crate) fn sv_mark(core: &mut TxnCore<'_>, sv: &mut SiloLocal) -> Mark {
    let history = core.history_mark();
    let l = sv;
    l.savepoints = true;
    Mark { writes: l.writes.len(), replaced: l.replaced.len(), history }
}

/// Silo and 1V: drops the WriteSet entries since `mark`, withdrawing their
/// placeholders (`withdraw`, as the family's abort does), and puts back the
/// entries they replaced, newest first.
pub(crate) fn sv_rollback(
    core: &mut TxnCore<'_>,
    sv: &mut SiloLocal,
    mark: Mark,
    mut withdraw: impl FnMut(&mut TxnCore<'_>, TableId, *mut Version),
) {
    let l = &mut *sv;
    let gone: Vec<_> = l.writes.drain(mark.writes..).collect();
    // The keys written since the mark: those of the dropped entries and of
    // the older entries written over since (put back here).
    let mut keys: Vec<(u32, Key)> = gone.iter().map(|w| (w.table, key_of_record(w.rec.0))).collect();
    while l.replaced.len() > mark.replaced {
        let (i, w) = l.replaced.pop().expect("longer than the mark");
        if (i as usize) < l.writes.len() {
            // The older entry of the same record: its placeholder (if any)
            // is the same record, so only the entry changes.
            l.writes[i as usize] = w;
            keys.push((w.table, key_of_record(w.rec.0)));
        }
    }
    for w in gone.iter().filter(|w| w.placeholder) {
        // An entry before the mark for the same placeholder keeps it.
        let kept = sv.writes.iter().any(|x| x.rec.0 == w.rec.0);
        if !kept {
            withdraw(core, core.db.tid(w.table), w.rec.0);
        }
    }
    core.rollback_history(mark.history, &keys);
}
