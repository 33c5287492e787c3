//! Silo OCC: Tu, Zheng, Kohler, Liskov and Madden, *Speedy Transactions in
//! Multicore In-Memory Databases* (SOSP 2013), section 4 — the optimistic
//! single-version baseline of BOHM (VLDB 2015, section 4) and SSN (section 8).
//!
//! **Records.** A Silo database stores one record per key, rewritten in
//! place: `Version::alloc_in_place` records on the same tables and indexes
//! as the multi-version store. The Begin word is the record's **TID word**
//! (section 4.2); the End word is unused.
//!
//! ```text
//!  63   62     61     60                          24 23                  0
//! +----+------+------+------------------------------+--------------------+
//! |lock|latest|absent|  epoch (37 bits)             | sequence (24 bits) |
//! +----+------+------+------------------------------+--------------------+
//! ```
//!
//! 37 bits of epochs last 174 years at 40 ms each; a sequence that outgrows
//! 24 bits within one epoch (16M dependent commits in 40 ms) carries into
//! the epoch field, which keeps TIDs ordered.
//!
//! * lock: a committing writer holds the record (phase 1 below);
//! * latest: this is the key's current record. A record whose value must
//!   change length (or whose secondary keys change) is replaced by a new one
//!   and loses the bit, as in section 4.5;
//! * absent: a placeholder — a row being inserted, or a deleted one.
//!
//! **Reads** (section 4.5) copy the value between two loads of the TID word
//! and retry when they differ or the record is locked; the ReadSet keeps the
//! record and the word seen. **Writes** are buffered in the WriteSet and
//! installed at commit. **Inserts** link an absent, unlocked placeholder
//! during execution, as Silo does; a second inserter of the same key meets it
//! and aborts (`write-conflict`). Two inserters whose lookups both missed
//! link both: after linking, each walks its key's whole chain, and the one
//! linked later withdraws (as does one that finds the key's row there,
//! moved past it since its lookup: `inserted_beside`). Until a loser has
//! withdrawn, lookups pass unlocked placeholders and go on down the chain
//! (`lookup_latest`): the row or winning insert may lie behind it.
//!
//! **Commit** (Figure 2), in three phases:
//! 1. lock the WriteSet's records in a global order (their addresses): no
//!    deadlock; then read the global epoch E — the serialization point;
//! 2. validate: every ReadSet record still carries the word read and is not
//!    locked by another transaction (`read-validation`); the node-set
//!    (below) is unchanged (`phantom`);
//! 3. choose the commit TID — larger than every TID read or written, larger
//!    than this worker's last, in epoch E — and install the writes, each
//!    record's new TID word releasing its lock.
//!
//! **Phantoms.** Silo keeps a node-set of B-tree leaves and their versions:
//! any insert into a leaf changes its version. The equivalent here: a point
//! read that found no row records the key, and a scan its range, each with
//! every record the walk passed (latest or retired, with its TID word then).
//! Validation repeats the walk; a record it did not pass before (or that
//! changed since while retired: a reused address) is a phantom if it has
//! been a row at any time since — present, locked by a committing inserter,
//! or retired with a nonzero TID (inserted, then deleted or replaced, after
//! the walk). Retired records stay linked while we are open (the watermark
//! below), so a row that came and went is still found. A placeholder that is
//! still unlocked belongs to an inserter before its serialization point,
//! which serializes after us; one retired with TID 0 was an aborted insert.
//!
//! **Epochs** (section 4.1): a global epoch advanced about every 40 ms. No
//! background thread: a committer that sees the epoch older than that
//! advances it. TIDs need no shared counter per transaction.
//!
//! What differs from the paper, deliberately:
//! * no read-only snapshots (section 4.9 is optional in the issue);
//! * with history recording on (tests), the commit TID is also drawn from a
//!   shared sequence so that TID order follows the serialization points,
//!   which the checker uses to place reads of absent keys; every rule above
//!   still holds, the TIDs are only larger. A durable database draws it
//!   the same way, and logs a committing writer's WriteSet while it is
//!   locked (value logging, section 4.10; see `crate::durability` for
//!   why recovery orders by this sequence rather than SiloR's epochs);
//! * records that are replaced or deleted are unlinked by the shared garbage
//!   collector and freed after an epoch of crossbeam-epoch;
//! * `get_for_update` takes a write claim that orders the read-modify-writes
//!   of a key (the paper has none; see `intent.rs`).

mod commit;
mod intent;

pub(crate) use super::single::*;

use crate::error::AbortReason;
use crate::history::{Op, Outcome, WriteKind, Writer};
use crate::key::Key;
use crate::protocol::core::{CommitInfo, Hooks, Status, TxnCore};
use crate::protocol::sets::Sets;
use crate::protocol::single::{SiloGlobal, SiloLocal, EPOCH_SHIFT};
use crate::storage::version::{VPtr, Version};
use crate::sync::atomic::{fence, Ordering};
use crate::table::Table;
use crate::txn::table::TxnState;
use crate::txn::Filter;
use crate::{Error, IndexId, Result, TableId};
use crossbeam_utils::Backoff;
use std::ops::Bound;

/// What a stable read found.
enum Seen {
    /// The record's word (lock clear) and its value in the copy buffer.
    Row(u64),
    /// A placeholder (word with the absent bit).
    Absent(u64),
    /// The record was replaced meanwhile: look the key up again.
    Gone,
}

/// The record `rec`'s stable value (section 4.5's read protocol) into `out`.
/// Inlined into its callers: as a call it cost silo about 3% of a hekaton
/// transaction (`scripts/perf-gate`, 10,231 against 10,556 instructions).
#[inline(always)]
fn stable_read(rec: &Version, out: &mut Vec<u8>) -> Seen {
    let backoff = Backoff::new();
    loop {
        // Acquire: the value words were written before the Release store of
        // this word by the last committer.
        let w1 = rec.begin.load(Ordering::Acquire);
        if w1 & LOCK != 0 {
            backoff.snooze();
            continue;
        }
        if w1 & LATEST == 0 {
            return Seen::Gone;
        }
        if w1 & ABSENT != 0 {
            return Seen::Absent(w1);
        }
        rec.load_value(out);
        // Acquire fence: the copy's loads happen before the second load of
        // the word, so an unchanged word proves no writer overlapped it.
        fence(Ordering::Acquire);
        // Relaxed: ordered by the fence above.
        if rec.begin.load(Ordering::Relaxed) == w1 {
            return Seen::Row(w1);
        }
    }
}

/// True if a record that a node-set walk did not pass has been a row at
/// some time since, or is about to be one (its inserter is committing).
/// `ours`: it is our own insert. An unlocked placeholder belongs to an
/// inserter before its serialization point, which serializes after us; a
/// retired record with TID 0 was an insert that aborted.
fn ever_a_row(w: u64, ours: bool) -> bool {
    if ours {
        return false;
    }
    if w & LATEST != 0 {
        w & ABSENT == 0 || w & LOCK != 0
    } else {
        w & TID != 0
    }
}

/// Whether our just-linked placeholder `ours` of `key` must withdraw
/// (the caller is pinned): the key has a row, or an inserter that linked
/// before us. Chains are in link order, newest first, and our lookup found
/// no row, but it ran before the link, so the walk from the chain's head
/// looks for any other latest record of the key:
///
/// * after ours (linked earlier): a row, or an insert that beat us;
/// * before ours (linked later) and present, or locked: a row moved to a
///   new record (section 4.5) since our lookup: the row exists;
/// * before ours, an unlocked placeholder: a later inserter, which meets
///   ours after itself and withdraws; we stay.
///
/// A row can move while we walk: its new record is linked at the head,
/// behind us, before its old one stops being the latest. A walk that meets
/// a record retired by a commit (nonzero TID) that the previous walk did
/// not meet walks again, until two walks agree; `Err` after
/// [`WALKS`]: the key keeps moving, so it exists (the caller withdraws).
fn inserted_beside(t: &Table, key: &Key, ours: *mut Version) -> std::result::Result<bool, Moving> {
    const WALKS: usize = 8;
    let mut before: Vec<*const Version> = Vec::new();
    let mut now: Vec<*const Version> = Vec::new();
    for _ in 0..WALKS {
        let mut after = false;
        let mut raced = false;
        now.clear();
        t.indexes[0].for_each_eq(key, |v| {
            if std::ptr::eq(v, ours) {
                after = true;
                return true;
            }
            if !v.key_eq(key) {
                return true;
            }
            // Acquire: pairs with the Release stores of the word.
            let w = v.begin.load(Ordering::Acquire);
            if w & LATEST != 0 {
                raced = after || w & ABSENT == 0 || w & LOCK != 0;
                return !raced;
            }
            if w & TID != 0 {
                now.push(v);
            }
            true
        });
        debug_assert!(raced || after, "our placeholder is on its key's chain");
        if raced {
            return Ok(true);
        }
        // Retired records only leave the chain (the collector), and each
        // address stays one record while we are pinned.
        if now.iter().all(|v| before.contains(v)) {
            return Ok(false);
        }
        std::mem::swap(&mut before, &mut now);
    }
    Err(Moving)
}

/// A Silo transaction (section 4): its ReadSet, node set and WriteSet are
/// the slot's [`SiloLocal`]. Also the checkpoint's frozen reader of both
/// single-version families (`Transaction::into_frozen_reader`).
pub(crate) struct SiloTxn<'db> {
    pub(crate) core: TxnCore<'db>,
    /// The epoch E (and the commit-TID sequence).
    pub(crate) g: &'db SiloGlobal,
    /// The ReadSet, node set and WriteSet, in the slot's [`SiloLocal`].
    pub(crate) sv: Sets<'db, SiloLocal>,
}

impl<'db> SiloTxn<'db> {
    #[inline]
    pub(crate) fn new(mut core: TxnCore<'db>, g: &'db SiloGlobal) -> Self {
        // Silo validates every read at its serialization point, as a
        // locking reader holds its locks until then.
        core.shape.locking = true;
        let mut sv = Sets::of(&g.sets, core.slot);
        sv.get().clear();
        SiloTxn { core, g, sv }
    }

    /// The position of `rec` in the WriteSet, if we wrote it.
    pub(crate) fn sv_written(&mut self, rec: *mut Version) -> Option<usize> {
        self.sv.get().written(rec)
    }

    /// Looks `key` up and reads it: `Some(rec)` with the value in the copy
    /// buffer (our own write if we wrote it), `None` if there is no row;
    /// both observations are recorded for validation (the sets are cleared
    /// by `release`, with the rest of the slot's `TxnLocal`).
    ///
    /// `Err`: the row kept moving to new records faster than the walks (see
    /// `lookup_latest`); the caller aborts rather than report it absent.
    fn sv_lookup(&mut self, t: &Table, table: TableId, key: &Key) -> std::result::Result<Option<*mut Version>, Moving> {
        loop {
            let l = &mut self.sv.get();
            let first = l.seen.len() as u32;
            let found = lookup_latest(t, key, Some(&mut l.seen))?;
            // Our own write: our insert (a placeholder the walk passed), or
            // the record found.
            let own = if found.placeholder { l.own_placeholder(table.0, key) } else { None };
            let own = own.or_else(|| if found.rec.is_null() { None } else { l.written(found.rec) });
            if let Some(i) = own {
                l.seen.truncate(first as usize);
                let w = l.writes[i];
                if w.kind == WriteKind::Delete {
                    return Ok(None);
                }
                l.copy.clear();
                l.copy.extend_from_slice(&l.values[w.at as usize..(w.at + w.len) as usize]);
                return Ok(Some(w.rec.0));
            }
            let rec = found.rec;
            if rec.is_null() {
                // No row: the node-set entry holds every record passed,
                // placeholders of inserts in progress included.
                let seen = (first, l.seen.len() as u32);
                l.nodes.push(SvNode::Missing { table: table.0, key: key.clone(), seen });
                return Ok(None);
            }
            l.seen.truncate(first as usize);
            // SAFETY: found under the caller's epoch guard.
            match stable_read(unsafe { &*rec }, &mut l.copy) {
                Seen::Row(word) => {
                    l.reads.push(SvRead { rec: VPtr(rec), word });
                    return Ok(Some(rec));
                }
                // An insert whose commit failed, unlocked but not yet
                // retired: absent, as long as the word stays the same.
                Seen::Absent(word) => {
                    l.reads.push(SvRead { rec: VPtr(rec), word });
                    return Ok(None);
                }
                Seen::Gone => continue,
            }
        }
    }

    /// Silo's `get_with`.
    pub(crate) fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.enter()?;
        let t = self.core.db.table_ref(table)?;
        // Epoch pin: records reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let found = self.sv_lookup(t, table, key).map_err(|Moving| self.abort_with(AbortReason::ReadValidation))?;
        if self.core.recording {
            let version = found.map(|rec| (self.sv_writer(rec), self.sv.get().copy.clone()));
            self.core.record(Op::Read { table: table.0, key: key.clone(), version });
        }
        Ok(found.map(|_| f(&self.sv.get().copy)))
    }

    /// How the history names the record's current contents.
    fn sv_writer(&mut self, rec: *mut Version) -> Writer {
        let l = &self.sv.get();
        if l.written(rec).is_some() {
            return Writer::Txn(self.core.id);
        }
        let word = l.reads.iter().rev().find(|r| r.rec.0 == rec).map_or(0, |r| r.word);
        Writer::Committed(word & TID)
    }

    /// Silo's insert: links an absent placeholder during execution.
    pub(crate) fn insert(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        let t = self.enter_write(table, value.len())?;
        // Epoch pin: records reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        loop {
            // A row that keeps moving exists: a concurrent writer of the key.
            let found = lookup_latest(t, &key, None).map_err(|Moving| self.abort_with(AbortReason::WriteConflict))?;
            if found.placeholder {
                let l = &self.sv.get();
                if let Some(i) = l.own_placeholder(table.0, &key) {
                    // Our own insert of the key.
                    let own = l.writes[i];
                    if own.kind != WriteKind::Delete {
                        return Err(Error::DuplicateKey);
                    }
                    self.core.sv_buffer(self.sv.get(), table, own.rec.0, WriteKind::Insert, value, false);
                    return Ok(());
                }
                if found.rec.is_null() {
                    // Another transaction's insert in progress.
                    return Err(self.abort_with(AbortReason::WriteConflict));
                }
            }
            let rec = found.rec;
            if rec.is_null() {
                break;
            }
            if let Some(i) = self.sv_written(rec) {
                if self.sv.get().writes[i].kind != WriteKind::Delete {
                    return Err(Error::DuplicateKey);
                }
                self.core.sv_buffer(self.sv.get(), table, rec, WriteKind::Insert, value, false);
                return Ok(());
            }
            let l = &mut self.sv.get();
            // SAFETY: found under the epoch guard.
            match stable_read(unsafe { &*rec }, &mut l.copy) {
                Seen::Row(word) => {
                    // The key exists: an observation to validate.
                    l.reads.push(SvRead { rec: VPtr(rec), word });
                    // Reads already overwritten make the duplicate suspect:
                    // the key may come from them (TPC-C's new order id, read
                    // from a district another NewOrder has since advanced).
                    // The commit would abort anyway: abort now, so the
                    // caller never acts on an inconsistent view.
                    if self.sv_reads_changed() {
                        return Err(self.abort_with(AbortReason::ReadValidation));
                    }
                    return Err(Error::DuplicateKey);
                }
                // Another transaction's insert, in or just out of its commit.
                Seen::Absent(_) => return Err(self.abort_with(AbortReason::WriteConflict)),
                Seen::Gone => continue,
            }
        }
        let rec = Version::alloc_in_place(&key, t.link_words(), value, LATEST | ABSENT).as_ptr();
        // SAFETY: fresh and unlinked; linked into every index (its value is
        // final, so its secondary keys are).
        unsafe { t.link_all(rec) };
        // Racing inserters and rows that appeared since our lookup.
        let raced = inserted_beside(t, &key, rec);
        self.core.created += 1;
        if raced.unwrap_or(true) {
            self.core.sv_retire(self.g, table, rec, 0);
            return Err(self.abort_with(AbortReason::WriteConflict));
        }
        self.core.sv_buffer(self.sv.get(), table, rec, WriteKind::Insert, value, true);
        Ok(())
    }

    /// Silo's update, modify, update_with and delete: `f` makes the new
    /// value from the old (`None` deletes).
    pub(crate) fn write(
        &mut self,
        table: TableId,
        key: &Key,
        f: impl FnOnce(&[u8], &mut Vec<u8>) -> bool,
    ) -> Result<()> {
        let t = self.enter_write(table, 0)?;
        // Epoch pin: records reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let found = self.sv_lookup(t, table, key).map_err(|Moving| self.abort_with(AbortReason::ReadValidation))?;
        let Some(rec) = found else {
            if self.core.recording {
                self.core.record(Op::Read { table: table.0, key: key.clone(), version: None });
            }
            return Err(Error::KeyNotFound);
        };
        if self.core.recording {
            let version = Some((self.sv_writer(rec), self.sv.get().copy.clone()));
            self.core.record(Op::Read { table: table.0, key: key.clone(), version });
        }
        let mut new = std::mem::take(&mut self.core.local.get().scratch);
        new.clear();
        let l = &self.sv.get();
        let keep = f(&l.copy, &mut new);
        let r = if !keep {
            self.core.sv_buffer(self.sv.get(), table, rec, WriteKind::Delete, &[], false);
            Ok(())
        } else if new.len() > self.core.db.opts.max_value_size {
            Err(Error::ValueTooLarge { len: new.len(), max: self.core.db.opts.max_value_size })
        } else if let Err(e) = self.core.admit_resize(self.sv.get().copy.len(), new.len()) {
            Err(e)
        } else {
            self.core.sv_buffer(self.sv.get(), table, rec, WriteKind::Update, &new, false);
            Ok(())
        };
        self.core.local.get().scratch = new;
        r
    }

    /// Silo's `get_by` and `scan`: every latest row of `index` in the range
    /// (`eq`: one key), recorded for validation; `rev`: in descending key
    /// order.
    pub(crate) fn scan(
        &mut self,
        index: IndexId,
        lo: Bound<Key>,
        hi: Bound<Key>,
        filter: Option<&Filter>,
        rev: bool,
        mut f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        self.enter()?;
        let (_, ix) = self.core.index_ref(index)?;
        // Epoch pin: records reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let first = self.sv.get().reads.len() as u32;
        let first_seen = self.sv.get().seen.len() as u32;
        let ordered = ix.is_ordered();
        let mut rows = Vec::new();
        let mut stopped_at = None;
        let mut copy = std::mem::take(&mut self.sv.get().copy);
        // Rows handed to `f` so far: a walk that must start over after one
        // would hand them again, so it aborts instead (see `Seen::Gone`).
        let mut delivered = false;
        let mut failed = None;
        let mut retry = true;
        while retry {
            retry = false;
            self.sv.get().reads.truncate(first as usize);
            self.sv.get().seen.truncate(first_seen as usize);
            rows.clear();
            walk_range(ix, &lo, &hi, rev, |v| {
                let rec = v as *const Version as *mut Version;
                // Acquire: pairs with the Release stores of the word.
                let w = v.begin.load(Ordering::Acquire);
                self.sv.get().seen.push((VPtr(rec), w & !LOCK));
                if w & LATEST == 0 {
                    return true;
                }
                let mine = self.sv_written(rec);
                let l = &mut self.sv.get();
                if let Some(i) = mine {
                    let w = l.writes[i];
                    if w.kind == WriteKind::Delete {
                        return true;
                    }
                    copy.clear();
                    copy.extend_from_slice(&l.values[w.at as usize..(w.at + w.len) as usize]);
                } else {
                    match stable_read(v, &mut copy) {
                        Seen::Row(word) => l.reads.push(SvRead { rec: VPtr(rec), word }),
                        Seen::Absent(word) => {
                            l.reads.push(SvRead { rec: VPtr(rec), word });
                            return true;
                        }
                        Seen::Gone if delivered => {
                            // Replaced while we read it, after rows were
                            // handed on: starting over would hand them
                            // again (a row counted twice), and the walk
                            // cannot tell where the replacement sits; the
                            // read did not settle.
                            failed = Some(AbortReason::ReadValidation);
                            return false;
                        }
                        Seen::Gone => {
                            // Replaced during the scan, before any row was
                            // handed on: start over.
                            retry = true;
                            return false;
                        }
                    }
                }
                let k = v.key();
                if filter.is_some_and(|p| !p(&k, &copy)) {
                    return true;
                }
                if self.core.recording {
                    rows.push((k.clone(), self.sv_writer(rec), copy.clone()));
                }
                delivered = true;
                if f(&k, &copy) {
                    return true;
                }
                stopped_at = Some((ix.key_of(v), k));
                false
            });
        }
        self.sv.get().copy = copy;
        if let Some(reason) = failed {
            return Err(self.abort_with(reason));
        }
        // Validation repeats only what the walk covered (see MV/O's scan).
        // The index may hold more records of the last key, past the one
        // the walk stopped at: other rows in a secondary index, the old
        // record of the same row (moved, section 4.5) in the primary one.
        // `stop` keeps validation from them.
        let (lo, hi, stop) = match stopped_at {
            Some((k, pk)) if ordered => {
                let stop = Some((pk, rev));
                if rev {
                    (Bound::Included(k), hi, stop)
                } else {
                    (lo, Bound::Included(k), stop)
                }
            }
            _ => (lo, hi, None),
        };
        if self.core.recording {
            self.core.record_scan(index, lo.clone(), hi.clone(), filter.is_some(), rows);
        }
        let seen = (first_seen, self.sv.get().seen.len() as u32);
        self.sv.get().nodes.push(SvNode::Scan { table: index.table, index: index.index, lo, hi, stop, seen });
        Ok(())
    }
}

crate::protocol::core::hooks!(SiloTxn);

/// Savepoints (`protocol::savepoint`): the buffered WriteSet's mark, and
/// its entries since the mark dropped, their placeholders withdrawn.
impl SiloTxn<'_> {
    pub(crate) fn savepoint_mark(&mut self) -> Result<crate::protocol::core::Mark> {
        self.enter()?;
        Ok(crate::protocol::single::sv_mark(&mut self.core, self.sv.get()))
    }

    pub(crate) fn rollback_to(&mut self, mark: crate::protocol::core::Mark) -> Result<()> {
        self.enter()?;
        let g = self.g;
        crate::protocol::single::sv_rollback(&mut self.core, self.sv.get(), mark, |core, table, rec| {
            core.sv_retire(g, table, rec, 0)
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, Isolation, Options, Protocol, TableSpec};

    /// Two inserters of a key link a placeholder each; the one linked later
    /// meets the other's after its own and withdraws, but until it retires
    /// its placeholder a walk of the key can meet that one first. Our own
    /// insert must still be the key's row for us: read, updated, not
    /// inserted twice, deleted and inserted again. (Found by the checker:
    /// list-append under 8 threads read "nothing instead of its own
    /// write", about 1 run in 50.)
    #[test]
    fn a_racing_inserters_placeholder_does_not_hide_our_insert() {
        let db = Database::new(Options { protocol: Protocol::Silo, ..Options::default() }).unwrap();
        let tid = db.create_table(TableSpec::hash("t", 64)).unwrap().table();
        let k = Key::from(7u64);
        let mut x = db.begin(Isolation::Serializable).unwrap();
        x.insert(tid, k.clone(), b"ours").unwrap();
        // The racer, between linking its placeholder and withdrawing.
        let t = db.table_ref(tid).unwrap();
        let racer = Version::alloc_in_place(&k, t.link_words(), b"theirs", LATEST | ABSENT).as_ptr();
        // SAFETY: fresh and unlinked; freed with the table.
        unsafe { t.link_all(racer) };
        {
            // Epoch pin: for the walk.
            let _guard = crossbeam_epoch::pin();
            let first = lookup_latest(t, &k, None).unwrap();
            assert!(first.rec.is_null() && first.placeholder, "the walk passes both placeholders");
        }
        assert_eq!(x.get(tid, &k).unwrap().as_deref(), Some(&b"ours"[..]));
        x.update_with(tid, &k, |old, new| {
            new.extend_from_slice(old);
            new.extend_from_slice(b"+1");
        })
        .unwrap();
        assert_eq!(x.get(tid, &k).unwrap().as_deref(), Some(&b"ours+1"[..]));
        assert_eq!(x.insert(tid, k.clone(), b"twice"), Err(Error::DuplicateKey));
        x.delete(tid, &k).unwrap();
        assert_eq!(x.get(tid, &k).unwrap(), None);
        assert_eq!(x.update(tid, &k, b"gone"), Err(Error::KeyNotFound));
        x.insert(tid, k.clone(), b"again").unwrap();
        assert_eq!(x.get(tid, &k).unwrap().as_deref(), Some(&b"again"[..]));
        // The racer withdraws (an aborted insert: TID 0, not latest).
        // SAFETY: alive until the table drops. Release: as `sv_retire`.
        unsafe { &*racer }.begin.store(ABSENT, Ordering::Release);
        x.commit().unwrap();
        let got = db.run(Isolation::Serializable, |x| x.get(tid, &k)).unwrap();
        assert_eq!(got.as_deref(), Some(&b"again"[..]));
    }

    /// `inserted_beside` on hand-built chains of one key (newest first).
    #[test]
    fn an_insert_withdraws_from_any_row_of_its_key() {
        let db = Database::new(Options { protocol: Protocol::Silo, ..Options::default() }).unwrap();
        let tid = db.create_table(TableSpec::hash("t", 64)).unwrap().table();
        let t = db.table_ref(tid).unwrap();
        let link = |k: &Key, word: u64| {
            let v = Version::alloc_in_place(k, t.link_words(), b"v", word).as_ptr();
            // SAFETY: fresh and unlinked; freed with the table.
            unsafe { t.link_all(v) };
            v
        };
        let set = |v: *mut Version, word: u64| {
            // SAFETY: records stay linked until the table drops.
            let v = unsafe { &*v };
            // Release: as the committers' stores.
            v.begin.store(word, Ordering::Release);
        };
        let _guard = crossbeam_epoch::pin();

        // Our lookup missed a committed row that then moved (section 4.5):
        // its new record sits before ours, the old one after ours, retired.
        // Looking only after ourselves, we would insert a second row.
        let k = Key::from(1u64);
        let old = link(&k, 5 | LATEST);
        let ours = link(&k, LATEST | ABSENT);
        let _new = link(&k, 6 | LATEST);
        set(old, 6 | ABSENT);
        assert!(inserted_beside(t, &k, ours).unwrap());

        // An inserter that linked before us wins; one that linked after us
        // (unlocked) withdraws on meeting us, and we stay.
        let k = Key::from(2u64);
        let earlier = link(&k, LATEST | ABSENT);
        let ours = link(&k, LATEST | ABSENT);
        let later = link(&k, LATEST | ABSENT);
        assert!(inserted_beside(t, &k, ours).unwrap());
        assert!(inserted_beside(t, &k, later).unwrap());
        set(earlier, ABSENT); // it aborted
        assert!(!inserted_beside(t, &k, ours).unwrap());
        // A later record that is locked or present is a row.
        set(later, LATEST | ABSENT | LOCK);
        assert!(inserted_beside(t, &k, ours).unwrap());
        set(later, 9 | LATEST);
        assert!(inserted_beside(t, &k, ours).unwrap());

        // Only retired records and other keys: no row.
        let k = Key::from(3u64);
        let gone = link(&k, 7 | LATEST);
        set(gone, 8 | ABSENT);
        let _other = link(&Key::from(4u64), 3 | LATEST);
        let ours = link(&k, LATEST | ABSENT);
        assert!(!inserted_beside(t, &k, ours).unwrap());
    }

    /// An inserter that lost its race links its placeholder in front of
    /// the key's row (newest first) and may run a while before it meets
    /// the row and withdraws: readers must see the row meanwhile, not the
    /// placeholder's absence. (Found by the checker: list-append readers
    /// found no row at a key whose insert had committed, a G-single.)
    #[test]
    fn a_losing_inserters_placeholder_does_not_hide_the_row() {
        let db = Database::new(Options { protocol: Protocol::Silo, ..Options::default() }).unwrap();
        let tid = db.create_table(TableSpec::hash("t", 64)).unwrap().table();
        let k = Key::from(5u64);
        db.run(Isolation::Serializable, |x| x.insert(tid, k.clone(), b"row")).unwrap();
        let t = db.table_ref(tid).unwrap();
        let loser = Version::alloc_in_place(&k, t.link_words(), b"loser", LATEST | ABSENT).as_ptr();
        // SAFETY: fresh and unlinked; freed with the table.
        unsafe { t.link_all(loser) };
        let got = db.run(Isolation::Serializable, |x| x.get(tid, &k)).unwrap();
        assert_eq!(got.as_deref(), Some(&b"row"[..]));
        let r = db.run(Isolation::Serializable, |x| x.insert(tid, k.clone(), b"again"));
        assert_eq!(r, Err(Error::DuplicateKey));
        db.run(Isolation::Serializable, |x| x.update(tid, &k, b"new value")).unwrap();
        let got = db.run(Isolation::Serializable, |x| x.get(tid, &k)).unwrap();
        assert_eq!(got.as_deref(), Some(&b"new value"[..]));

        // A key with only an unlocked placeholder is absent, until its
        // inserter locks it to commit: then a reader of the absence fails
        // validation (the node-set holds the placeholder as it was).
        let k = Key::from(6u64);
        let ins = Version::alloc_in_place(&k, t.link_words(), b"v", LATEST | ABSENT).as_ptr();
        // SAFETY: as above.
        unsafe { t.link_all(ins) };
        let mut x = db.begin(Isolation::Serializable).unwrap();
        assert_eq!(x.get(tid, &k).unwrap(), None);
        x.update(tid, Key::from(5u64), b"other").unwrap();
        // SAFETY: alive until the table drops. Release: as phase 1's lock.
        unsafe { &*ins }.begin.store(LATEST | ABSENT | LOCK, Ordering::Release);
        assert!(matches!(x.commit(), Err(Error::Aborted(AbortReason::Phantom))));
        // The inserter commits; the key is a row.
        // SAFETY: as above. Release: as phase 3's install.
        unsafe { &*ins }.begin.store(1 | LATEST, Ordering::Release);
        let got = db.run(Isolation::Serializable, |x| x.get(tid, &k)).unwrap();
        assert_eq!(got.as_deref(), Some(&b"v"[..]));
    }
}
