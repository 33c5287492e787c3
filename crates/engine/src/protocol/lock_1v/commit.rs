//! 1V's commit and abort: release the LockSet and the key-range locks,
//! prepare (phantom checks of the ranges written), take the TID, log,
//! install.

use super::*;
use crate::obs;

impl<'db> LockTxn<'db> {
    /// Releases every lock: the LockSet and the key-range locks.
    fn lk_release_locks(&mut self) {
        let l = self.locks.get();
        for h in l.held.drain(..) {
            // SAFETY: lock words live in the tables' indexes, which live as
            // long as the database.
            unlock(unsafe { &*h.word }, h.mode);
        }
        l.map.clear();
        for (table, index) in l.ranges.drain(..) {
            self.core.db.table_by_id(table).indexes[index as usize].ranges.unlock_all(self.core.id);
        }
    }

    /// Rolls back: retires our placeholders and prepared records, releases
    /// the locks. Nothing else to undo: writes reach records at commit.
    pub(crate) fn abort_with(&mut self, reason: AbortReason) -> Error {
        debug_assert_eq!(self.core.status, Status::Active);
        let l = self.sv.get();
        let mut dead: Vec<(u32, VPtr)> = l.writes.iter().filter(|w| w.placeholder).map(|w| (w.table, w.rec)).collect();
        dead.extend(self.locks.get().prepared.drain(..).map(|(i, r)| (l.writes[i].table, r)));
        for (table, rec) in dead {
            self.core.sv_retire(&self.g.single, self.core.db.tid(table), rec.0, WITHDRAWN);
        }
        self.lk_release_locks();
        self.core.db.txns.report_outcome(self.core.slot, false);
        self.core.aborted(reason)
    }

    /// Commit phase 1: a new record for every write that cannot be made in
    /// place, linked absent; false if one landed in another transaction's
    /// key range (they were all withdrawn; the caller waits and retries).
    fn lk_prepare(&mut self, ranges_hit: &mut Vec<(u32, usize, Key)>) -> bool {
        let n = self.sv.get().writes.len();
        for i in 0..n {
            let w = self.sv.get().writes[i];
            if w.kind == WriteKind::Delete {
                continue;
            }
            let t = self.core.db.table_by_id(w.table);
            // SAFETY: X-locked by us (or our placeholder), so alive and ours to replace.
            let rec = unsafe { &*w.rec.0 };
            let value = &self.sv.get().values[w.at as usize..(w.at + w.len) as usize];
            if TxnCore::sv_in_place(t, rec, value) {
                continue;
            }
            let nv = Version::alloc_in_place(&rec.key(), t.link_words(), value, LATEST | ABSENT).as_ptr();
            // SAFETY: fresh, unlinked.
            unsafe { t.link_all(nv) };
            self.core.created += 1;
            self.locks.get().prepared.push((i, VPtr(nv)));
            // SeqCst fence: the writer's side of the range-lock handshake.
            fence(Ordering::SeqCst);
            // SAFETY: ours, alive.
            let r = unsafe { &*nv };
            let moved: Vec<bool> =
                t.indexes.iter().map(|ix| ix.key_fn.is_some() && ix.key_of(r) != ix.key_of(rec)).collect();
            if moved.iter().any(|&m| m) && self.lk_range_holders(t, r, Some(&moved)) {
                let table = w.table;
                ranges_hit.extend(
                    t.indexes.iter().enumerate().filter(|(i, _)| moved[*i]).map(|(i, ix)| (table, i, ix.key_of(r))),
                );
                let dead: Vec<(u32, VPtr)> = {
                    let l = self.sv.get();
                    self.locks.get().prepared.drain(..).map(|(i, r)| (l.writes[i].table, r)).collect()
                };
                for (table, rec) in dead {
                    self.core.sv_retire(&self.g.single, self.core.db.tid(table), rec.0, WITHDRAWN);
                }
                return false;
            }
        }
        true
    }

    /// 1V's commit (module docs: prepare, stamp, install, release).
    pub(crate) fn commit(&mut self) -> Result<CommitInfo> {
        self.enter()?;
        let db = self.core.db;
        // Phase 1: prepare.
        let phase = obs::span!(trace, "prepare", txn = self.core.id);
        loop {
            let mut hit = Vec::new();
            // Epoch pin: records stay allocated while we prepare.
            let guard = crossbeam_epoch::pin();
            if self.lk_prepare(&mut hit) {
                break;
            }
            drop(guard);
            self.lk_wait_ranges(&hit)?;
        }
        phase.end();
        // Phase 2: the commit TID (recording and durable commits only;
        // module docs). A durable commit with writes enters the checkpoint
        // freeze first and logs before it installs (`durability`).
        let phase = obs::span!(trace, "log", txn = self.core.id);
        let recording = self.core.recording;
        let log = db.log.as_ref().filter(|_| !self.sv.get().writes.is_empty());
        if log.is_some() {
            db.freeze.enter(&db.txns, self.core.slot);
        }
        // Relaxed: the order is that of the RMWs on this one counter.
        let tid = if recording || log.is_some() { self.g.single.order.fetch_add(1, Ordering::Relaxed) + 1 } else { 0 };
        debug_assert!(tid & !TID == 0, "TIDs fit below the status bits");
        let epoch = log.map(|log| self.core.sv_log_redo(self.sv.get(), log, tid));
        phase.end();
        // Phase 3: install, then release.
        let phase = obs::span!(trace, "install", txn = self.core.id);
        let writes = self.sv.get().writes.len();
        {
            // Epoch pin: records stay allocated while we install.
            let _guard = crossbeam_epoch::pin();
            let prepared = std::mem::take(&mut self.locks.get().prepared);
            let mut p = prepared.iter().peekable();
            for i in 0..writes {
                let w = self.sv.get().writes[i];
                // SAFETY: X-locked by us, alive.
                let rec = unsafe { &*w.rec.0 };
                let table = self.core.db.tid(w.table);
                if w.kind == WriteKind::Delete {
                    self.core.sv_retire(&self.g.single, table, w.rec.0, tid);
                } else if let Some(&(_, nv)) = p.next_if(|(j, _)| *j == i) {
                    // Release: publishes the new row; then the old one stops
                    // being latest (a scan waiting on it looks the key up).
                    // SAFETY: ours, alive.
                    unsafe { &*nv.0 }.begin.store(tid | LATEST, Ordering::Release);
                    self.core.sv_retire(&self.g.single, table, w.rec.0, tid);
                } else {
                    let value = &self.sv.get().values[w.at as usize..(w.at + w.len) as usize];
                    rec.store_value(value);
                    // Release: publishes the value (and a placeholder as a row).
                    rec.begin.store(tid | LATEST, Ordering::Release);
                }
            }
            let mut prepared = prepared;
            prepared.clear();
            self.locks.get().prepared = prepared;
        }
        if log.is_some() {
            // Out of the freeze: installed.
            db.txns.set_state(self.core.slot, TxnState::Committed, tid);
        }
        if recording {
            self.core.record_end(Some(tid), Outcome::Committed);
        }
        phase.end();
        let phase = obs::span!(trace, "release", txn = self.core.id);
        self.lk_release_locks();
        // Relaxed: our own slot's counter, written only by us.
        self.core.slot().deadlock_streak.store(0, Ordering::Relaxed);
        db.txns.report_outcome(self.core.slot, true);
        self.core.terminate();
        phase.end();
        db.wait_durable(epoch)?;
        Ok(CommitInfo { commit_ts: tid, writes })
    }
}
