//! Silo's commit protocol (section 4.4, Figure 2): phase 1 locks the
//! WriteSet in a global order and takes the TID, phase 2 validates the
//! ReadSet and node set, phase 3 installs and unlocks; and abort.

use super::*;
use crate::breakdown::{self, Part};
use crate::obs;

impl<'db> SiloTxn<'db> {
    /// Rolls back: unlocks what phase 1 locked (`locked` WriteSet entries in
    /// lock order) and retires our placeholders.
    pub(crate) fn abort_with(&mut self, reason: AbortReason) -> Error {
        self.sv_unwind(&[], reason)
    }

    fn sv_unwind(&mut self, locked: &[usize], reason: AbortReason) -> Error {
        debug_assert_eq!(self.core.status, Status::Active);
        let l = &mut self.sv.get();
        for &i in locked {
            let w = l.writes[i];
            // SAFETY: locked by us, so alive. Release: unlock (clear the bit).
            let rec = unsafe { &*w.rec.0 };
            rec.begin.fetch_and(!LOCK, Ordering::Release);
        }
        self.sv_release_claims();
        let l = &mut self.sv.get();
        let placeholders: Vec<(u32, VPtr)> =
            l.writes.iter().filter(|w| w.placeholder).map(|w| (w.table, w.rec)).collect();
        for (table, rec) in placeholders {
            self.core.sv_retire(self.g, self.core.db.tid(table), rec.0, 0);
        }
        self.core.db.txns.report_outcome(self.core.slot, false);
        self.core.aborted(reason)
    }

    /// Silo's commit protocol (section 4.4, Figure 2).
    pub(crate) fn commit(&mut self) -> Result<CommitInfo> {
        self.enter()?;
        let db = self.core.db;
        let recording = self.core.recording;
        // A durable commit with writes logs them and must not straddle a
        // checkpoint (`durability::checkpoint`): it enters the freeze
        // before locking anything, and draws its TID from the shared
        // sequence, which recovery and checkpoints order by.
        let log = db.log.as_ref().filter(|_| !self.sv.get().writes.is_empty());
        if log.is_some() {
            db.freeze.enter(&db.txns, self.core.slot);
        }
        let ordered = recording || log.is_some();
        // Epoch pin: records stay allocated through validation.
        let _guard = crossbeam_epoch::pin();

        // Phase 1: lock the WriteSet in address order.
        let phase = obs::span!(trace, "lock", txn = self.core.id);
        let mut order = std::mem::take(&mut self.sv.get().sorted);
        order.clear();
        order.extend(0..self.sv.get().writes.len());
        {
            let l = &self.sv.get();
            order.sort_unstable_by_key(|&i| l.writes[i].rec.0 as usize);
        }
        let mut max_tid = self.sv.get().last_tid;
        for (n, &i) in order.iter().enumerate() {
            let w = self.sv.get().writes[i];
            // SAFETY: reached under the guard; records are freed only after
            // an epoch once retired.
            let rec = unsafe { &*w.rec.0 };
            let backoff = Backoff::new();
            let word = loop {
                // Relaxed load, Acquire CAS: we read the record after locking.
                let cur = rec.begin.load(Ordering::Relaxed);
                if cur & LOCK == 0
                    && rec.begin.compare_exchange_weak(cur, cur | LOCK, Ordering::Acquire, Ordering::Relaxed).is_ok()
                {
                    break cur;
                }
                backoff.snooze();
            };
            max_tid = max_tid.max(word & TID);
            // A record replaced or retired since we read it: our write would
            // be lost (the ReadSet would catch it too; a placeholder never is).
            if word & LATEST == 0 {
                let locked = order[..=n].to_vec();
                self.sv.get().sorted = order;
                return Err(self.sv_unwind(&locked, AbortReason::WriteConflict));
            }
        }
        // SeqCst fence: the locks are visible before we read E (section 4.4:
        // "the serialization point").
        fence(Ordering::SeqCst);
        let epoch = self.g.epoch();
        let mut drawn = 0;
        if ordered {
            // Drawn before validation, so that a transaction whose reads we
            // invalidate draws after us (module docs).
            let l = &self.sv.get();
            let floor = l.reads.iter().map(|r| r.word & TID).fold(max_tid, u64::max) + 1;
            // Relaxed: the order is that of the RMWs on this one counter.
            drawn = self
                .g
                .order
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |o| Some(o.max(floor - 1) + 1))
                .map(|o| o.max(floor - 1) + 1)
                .unwrap_or(floor);
        }

        phase.end();

        // Phase 2: validation.
        let phase = obs::span!(trace, "validate", txn = self.core.id);
        let validate = !db.opts.faults.skip_validation;
        let timed = breakdown::span(Part::Validation);
        if validate {
            if let Err(reason) = self.sv_validate() {
                let all = order.clone();
                self.sv.get().sorted = order;
                return Err(self.sv_unwind(&all, reason));
            }
        }
        drop(timed);

        phase.end();

        // Phase 3: the commit TID, then the writes.
        let phase = obs::span!(trace, "install", txn = self.core.id);
        let l = &mut self.sv.get();
        for r in &l.reads {
            max_tid = max_tid.max(r.word & TID);
        }
        let tid = if ordered { drawn } else { (max_tid + 1).max(epoch << EPOCH_SHIFT) };
        debug_assert!(tid & !TID == 0, "TIDs fit below the status bits");
        l.last_tid = tid;
        let writes = l.writes.len();
        // Logging (section 4.10, "value logging"): the redo record goes
        // out while the WriteSet is locked, so whoever reads or overwrites
        // our writes appends after us (`wal::log`).
        let epoch = log.map(|log| self.core.sv_log_redo(self.sv.get(), log, tid));
        for &i in &order {
            let w = self.sv.get().writes[i];
            self.sv_install(w, tid);
        }
        self.sv.get().sorted = order;
        // The next claimant of a key we claimed reads what we installed.
        self.sv_release_claims();
        if log.is_some() {
            // Out of the freeze: installed.
            db.txns.set_state(self.core.slot, TxnState::Committed, tid);
        }
        db.txns.report_outcome(self.core.slot, true);
        let l = &mut self.sv.get();
        l.commits += 1;
        if l.commits >= 64 {
            l.commits = 0;
            self.g.tick();
        }
        let commit_ts = if writes == 0 && !recording { max_tid } else { tid };
        if recording {
            self.core.record_end(Some(commit_ts), Outcome::Committed);
        }
        self.core.terminate();
        phase.end();
        db.wait_durable(epoch)?;
        Ok(CommitInfo { commit_ts, writes })
    }

    /// True if a record read has changed since (phase 2's ReadSet check).
    pub(super) fn sv_reads_changed(&mut self) -> bool {
        let l = &self.sv.get();
        l.reads.iter().any(|r| {
            // SAFETY: records are freed only after an epoch once retired.
            // Acquire: pairs with the committers' Release stores.
            let now = unsafe { &*r.rec.0 }.begin.load(Ordering::Acquire);
            now & !LOCK != r.word || (now & LOCK != 0 && l.written(r.rec.0).is_none())
        })
    }

    /// Phase 2 of the commit: the ReadSet and the node-set.
    fn sv_validate(&mut self) -> std::result::Result<(), AbortReason> {
        if self.sv_reads_changed() {
            return Err(AbortReason::ReadValidation);
        }
        let nodes = std::mem::take(&mut self.sv.get().nodes);
        let seen = &mut self.sv.get().seen;
        for n in &nodes {
            let (SvNode::Missing { seen: (a, b), .. } | SvNode::Scan { seen: (a, b), .. }) = n;
            seen[*a as usize..*b as usize].sort_unstable_by_key(|(r, _)| r.0 as usize);
        }
        let r = nodes.iter().try_for_each(|n| self.sv_check_node(n));
        self.sv.get().nodes = nodes;
        r
    }

    /// True if the repeated lookup or scan meets a record its original walk
    /// did not pass (or passed in another state: an address reused after a
    /// free, a placeholder whose inserter has since locked or committed it)
    /// that has been a row since. A row the walk passed as the latest is
    /// checked by the ReadSet instead.
    fn sv_phantom(l: &SiloLocal, v: &Version, seen: &[(VPtr, u64)]) -> bool {
        let p = v as *const Version as *mut Version;
        // Acquire: as in validation.
        let w = v.begin.load(Ordering::Acquire);
        // `seen` is sorted by address (see `sv_validate`).
        if let Ok(i) = seen.binary_search_by_key(&(p as usize), |(r, _)| r.0 as usize) {
            let then = seen[i].1;
            // `then` was stored without the lock bit: a placeholder locked
            // since differs (its inserter is committing).
            if then & (LATEST | ABSENT) == LATEST || then == w {
                return false;
            }
        }
        let ours = l.writes.iter().any(|x| x.rec.0 == p && x.placeholder);
        ever_a_row(w, ours)
    }

    fn sv_check_node(&mut self, n: &SvNode) -> std::result::Result<(), AbortReason> {
        let db = self.core.db;
        let l = &self.sv.get();
        let mut phantom = false;
        match n {
            SvNode::Missing { table, key, seen } => {
                let seen = &l.seen[seen.0 as usize..seen.1 as usize];
                let t = db.table_by_id(*table);
                t.indexes[0].for_each_eq(key, |v| {
                    phantom = v.key_eq(key) && Self::sv_phantom(l, v, seen);
                    !phantom
                });
            }
            SvNode::Scan { table, index, lo, hi, stop, seen } => {
                let seen = &l.seen[seen.0 as usize..seen.1 as usize];
                let t = db.table_by_id(*table);
                let ix = &t.indexes[*index as usize];
                // The records of the bound's index key past the stop were
                // not walked: not phantoms (module `single`'s
                // `SvNode::Scan`). Nor are the other records of the row the
                // walk stopped at: that row was read, and the ReadSet
                // checks it (a move or a delete since changes its word).
                let unwalked = |v: &Version| match (stop, lo, hi) {
                    (Some((pk, false)), _, Bound::Included(k)) => v.key_cmp(pk).is_ge() && ix.key_of(v) == *k,
                    (Some((pk, true)), Bound::Included(k), _) => v.key_cmp(pk).is_le() && ix.key_of(v) == *k,
                    _ => false,
                };
                walk_range(ix, lo, hi, false, |v| {
                    phantom = !unwalked(v) && Self::sv_phantom(l, v, seen);
                    !phantom
                });
            }
        }
        if phantom {
            Err(AbortReason::Phantom)
        } else {
            Ok(())
        }
    }

    /// Installs one write with TID `tid`, releasing the record's lock.
    fn sv_install(&mut self, w: SvWrite, tid: u64) {
        let l = &self.sv.get();
        let value = &l.values[w.at as usize..(w.at + w.len) as usize];
        // SAFETY: locked by us, so alive.
        let rec = unsafe { &*w.rec.0 };
        let t = self.core.db.table_by_id(w.table);
        match w.kind {
            WriteKind::Delete => {
                let table = self.core.db.tid(w.table);
                self.core.sv_retire(self.g, table, w.rec.0, tid);
            }
            WriteKind::Insert | WriteKind::Update if TxnCore::sv_in_place(t, rec, value) => {
                rec.store_value(value);
                // Release: publishes the value and unlocks.
                rec.begin.store(tid | LATEST, Ordering::Release);
            }
            WriteKind::Insert | WriteKind::Update => {
                // Section 4.5: a value that no longer fits (or moves in a
                // secondary index) goes to a new record; the old one stops
                // being the latest.
                let key = rec.key();
                let nv = Version::alloc_in_place(&key, t.link_words(), value, tid | LATEST | LOCK).as_ptr();
                // SAFETY: fresh, unlinked.
                unsafe { t.link_all(nv) };
                self.core.created += 1;
                let table = self.core.db.tid(w.table);
                self.core.sv_retire(self.g, table, w.rec.0, tid);
                // SAFETY: ours. Release: unlock the new record.
                unsafe { &*nv }.begin.store(tid | LATEST, Ordering::Release);
            }
        }
    }
}
