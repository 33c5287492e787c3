//! Commit (Hekaton sections 3.2 and 3.3): precommit (the end timestamp),
//! preparation (validation, commit dependencies, the redo record and, under
//! sync durability, its round), postprocessing (timestamps into the
//! versions), and abort.

use super::super::*;
use crate::breakdown::{self, Part};
use crate::obs;

impl<'db> MvTxn<'db> {
    /// MV/O's commit (sections 3.2 and 3.3). A transaction becomes
    /// Committed only once its redo record is durable (under sync
    /// durability), so nothing it shows a reader can be lost.
    pub(crate) fn commit(&mut self) -> Result<CommitInfo> {
        self.enter()?;
        if self.policy.po_occ {
            // Figure 13, step 3: the optimistic writes take their locks now.
            self.po_connect()?;
        }
        // Claims no write used are reads again, before anything else (see
        // `intent`: before the end timestamp is drawn).
        if !self.local.get().claims.is_empty() {
            self.release_claims()?;
        }
        let db = self.mvdb();
        let local = self.local.get();
        let (wrote, scanned) = (!local.write_set.is_empty(), !local.scan_set.is_empty());
        if !wrote && self.policy.cert != Cert::Off && !self.policy.base_rc && !scanned {
            if let Some(r) = self.ssn_read_only_commit() {
                return r;
            }
        }
        if !wrote && self.policy.cert == Cert::Off {
            // Nothing written: serialized at the begin timestamp (see module
            // docs) — or, for a pessimistic transaction reading at the
            // current time, at a time when it still holds all its read locks.
            let commit_ts = if self.reads_now() && self.policy.honour_locks {
                // SeqCst: as for a read time; odd, never equals a stamp.
                db.clock.load(Ordering::SeqCst) - 1
            } else {
                self.core.begin_ts
            };
            if self.policy.honour_locks {
                self.release_locks();
            }
            if !self.core.wait_for_dependencies() {
                return Err(self.abort_with(AbortReason::CommitDependency));
            }
            if self.core.recording {
                self.core.record_end(Some(commit_ts), Outcome::Committed);
            }
            self.core.terminate();
            return Ok(CommitInfo { commit_ts, writes: 0 });
        }

        // Wait-for dependencies (section 4.2): wait until no read lock or
        // bucket lock holds us back, before taking the end timestamp.
        let phase = obs::span!(trace, "precommit", txn = self.core.id);
        if self.policy.honour_locks {
            if let Err(r) = self.await_wait_fors() {
                return Err(self.abort_with(r));
            }
        }

        // Precommit: acquire the end timestamp and become Preparing.
        // SeqCst on the pending store and the fetch_add: a reader that still
        // sees us Active read its clock before we drew our end timestamp.
        db.txns.set_pending(self.core.slot);
        let end_ts = match &db.g.po {
            // POMVCC (Figure 17): the shared CTs, not incremented.
            Some(po) => {
                self.po_cts = po.allocate_cts();
                pomvcc::stamp(self.po_cts)
            }
            None => db.clock.fetch_add(2, Ordering::SeqCst),
        };
        db.txns.set_state(self.core.slot, TxnState::Preparing, end_ts);
        // Our read locks and the dependencies we impose are released only
        // now that the end timestamp is drawn: a writer they held back
        // draws a later one (see `mv_lock`).
        if self.policy.honour_locks {
            self.release_locks();
        }

        phase.end();

        // Preparation: validation, then wait for commit dependencies. Under
        // POMVCC others commit at our timestamp too: validating just past it
        // counts their writes as conflicts (see `protocol::mv::pomvcc`).
        let phase = obs::span!(trace, "validate", txn = self.core.id, end_ts);
        let validate = !db.opts.faults.skip_validation;
        let check_ts = if db.g.po.is_some() { end_ts + 1 } else { end_ts };
        // The gates read the policy alone: a transaction keeps a ReadSet or
        // a ScanSet exactly when it is to be validated against it.
        if validate && self.policy.track_reads && !self.validate_reads(check_ts) {
            return Err(self.abort_with(AbortReason::ReadValidation));
        }
        if validate && self.policy.track_scans && !self.detect_phantoms(check_ts) {
            return Err(self.abort_with(AbortReason::Phantom));
        }
        if self.policy.cert != Cert::Off {
            if let Err(r) = self.ssn_precommit(end_ts) {
                return Err(self.abort_with(r));
            }
        }
        phase.end();
        let phase = obs::span!(trace, "dependencies", txn = self.core.id);
        if !self.core.wait_for_dependencies() {
            return Err(self.abort_with(AbortReason::CommitDependency));
        }
        phase.end();
        // Logging (section 3.2, "write the new versions to the log"): the
        // redo record is appended before we become Committed, so that
        // whoever reads or overwrites our writes appends after us (see
        // `wal::log`). Under sync durability we also wait for it
        // here, still Preparing (section 3.2: "the transaction ... is
        // committed" once the log write completes): a reader of our
        // versions meanwhile takes a commit dependency on us, so nothing
        // anyone can observe is lost by a crash, and a read-only
        // transaction never waits for a round it did not read from. If the
        // log fails we abort instead (fail-stop, `wal::log`): our readers
        // abort with us through their commit dependencies, and nothing
        // anyone was shown is lost by the restart the failure calls for.
        let phase = obs::span!(trace, "log", txn = self.core.id);
        let epoch = db.log.as_ref().filter(|_| wrote).map(|log| self.log_redo(log, end_ts));
        if epoch.is_some() {
            // Decided: from here only the log can fail us, and that stops
            // the database. A safe snapshot need not wait for our round
            // (its readers of our versions take commit dependencies).
            db.txns.set_logging(self.core.slot, true);
        }
        let durable = db.wait_durable(epoch);
        if epoch.is_some() {
            db.txns.set_logging(self.core.slot, false);
        }
        if let Err(e) = durable {
            self.abort_with(AbortReason::LogFailed);
            return Err(e);
        }
        db.txns.set_state(self.core.slot, TxnState::Committed, end_ts);
        phase.end();

        // Postprocessing: propagate the end timestamp (SSN's stamps first).
        let phase = obs::span!(trace, "postprocess", txn = self.core.id);
        if self.policy.cert != Cert::Off {
            self.ssn_postcommit(end_ts);
        }
        let local = self.local.get();
        for w in &local.write_set {
            if !w.new.is_null() {
                // SAFETY: our own version; alive until we hand it to the GC.
                word::finalize_begin(&unsafe { &*w.new }.begin, end_ts);
            }
            if !w.old.is_null() {
                // SAFETY: write-locked by us, so not reclaimable yet.
                let old = unsafe { &*w.old };
                if db.opts.faults.skip_write_conflicts {
                    // Fault injection: another committer may share the
                    // version (and its lock). Release: as `finalize_end`.
                    old.end.store(end_ts, Ordering::Release);
                } else {
                    // No reader holds a lock any more: we waited for the last one.
                    word::finalize_end(&old.end, end_ts);
                }
            }
        }
        db.txns.report_outcome(self.core.slot, true);
        let writes = local.write_set.len();
        // (Under the test-only write-conflict fault two committers may share
        // an old version; it is then left unreclaimed rather than freed twice.)
        let shared_old = db.opts.faults.skip_write_conflicts;
        db.txns.leave_watermark(self.core.slot);
        Self::collect_garbage(
            db,
            self.core.slot,
            local.write_set.iter().filter(|w| !w.old.is_null() && !shared_old).map(|w| Garbage {
                ts: end_ts,
                table: w.table,
                v: VPtr(w.old),
                hash: w.hash,
            }),
        );
        if self.core.recording {
            self.core.record_end(Some(end_ts), Outcome::Committed);
        }
        if let Some(po) = &db.g.po {
            // Increment_TsCC: every version carries its stamp now, and
            // (under sync durability) its record is durable: we waited
            // above, so BTs passes only persisted commits (section VI).
            po.commit(self.po_cts);
            db.g.po_clock(&db);
        }
        self.core.terminate();
        phase.end();
        Ok(CommitInfo { commit_ts: end_ts, writes })
    }

    /// Appends this transaction's redo record: every new version's key
    /// and value, or the key of a deleted row. Returns its epoch.
    fn log_redo(&mut self, log: &crate::wal::log::Log, end_ts: u64) -> u64 {
        let local = self.local.get();
        log.append(end_ts, &mut self.core.local.get().log_buf, |r| {
            for w in &local.write_set {
                // SAFETY: our own versions (new) and those we write-locked
                // (old): alive until we hand them to the GC.
                let (old, new) = unsafe { (w.old.as_ref(), w.new.as_ref()) };
                let key = new.or(old).expect("a write has a version").key();
                r.put(w.table, key.as_bytes(), new.map(|n| n.value()));
            }
            local.write_set.len() as u32
        })
    }

    /// Read validation (section 3.2): every version read must still be
    /// visible as of the end timestamp.
    fn validate_reads(&mut self, end_ts: u64) -> bool {
        let _timed = breakdown::span(Part::Validation);
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let me = self.me_validating(end_ts);
        self.local.get().read_set.iter().all(|&VPtr(v)| {
            // SAFETY: a version we read is visible past our begin timestamp,
            // so its End stamp exceeds the GC watermark while we are open.
            let v = unsafe { &*v };
            // Acquire: see the latest End word.
            writer_of_end(v.end.load(Ordering::Acquire)) == Some(self.core.id) || visible_at(v, end_ts, &me).is_some()
        }) && !me.clash.get()
    }

    /// Phantom detection (section 3.2): repeat every scan as of the end
    /// timestamp; a version visible then whose begin timestamp falls inside
    /// our lifetime is a phantom (Figure 3, V4).
    fn detect_phantoms(&mut self, end_ts: u64) -> bool {
        let _timed = breakdown::span(Part::Validation);
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let me = self.me_validating(end_ts);
        for s in &self.local.get().scan_set {
            let t = self.core.db.table_by_id(s.table);
            let ix = &t.indexes[s.index as usize];
            let mut phantom = false;
            let mut check = |v: &Version| {
                // Acquire: see the final Begin word.
                if v.begin.load(Ordering::Acquire) == self.word {
                    return true; // our own insert or new version
                }
                if let Some(p) = &s.filter {
                    if !p(&v.key(), v.value()) {
                        return true;
                    }
                }
                // A version we replaced or deleted ourselves stands for itself:
                // under SSN over read committed a transaction may replace a
                // row its own scan was too early to see.
                // Acquire: the End word as we left it.
                // Under SSN over read committed, a version that came and went
                // after the scan counts too: what the scan found absent then
                // stays absent until the commit, as a locking reader's would
                // (the checker places such observations at the commit).
                let began = if writer_of_end(v.end.load(Ordering::Acquire)) == Some(self.core.id) {
                    Some(ssn::cstamp_of(v, &self.core.db.txns))
                } else if self.policy.base_rc {
                    Some(ssn::cstamp_of(v, &self.core.db.txns)).filter(|&b| b != 0 && b < end_ts)
                } else {
                    visible_at(v, end_ts, &me)
                };
                if let Some(b) = began {
                    if b > s.since {
                        phantom = true;
                        return false;
                    }
                }
                true
            };
            match &s.kind {
                ScanKind::Eq(k) => ix.for_each_eq(k, |v| !ix.matches(v, k) || check(v)),
                ScanKind::Range(lo, hi) => {
                    let ordered = ix.is_ordered();
                    ix.for_each_in(lo.as_ref(), hi.as_ref(), false, |v| (!ordered && !ix.covers(v, lo, hi)) || check(v))
                }
            }
            if phantom {
                return false;
            }
        }
        !me.clash.get()
    }

    /// Aborts: become Aborted, undo (section 3.3), report, terminate.
    pub(crate) fn abort_with(&mut self, reason: AbortReason) -> Error {
        debug_assert_eq!(self.core.status, Status::Active);
        let db = self.mvdb();
        db.txns.set_state(self.core.slot, TxnState::Aborted, 0);
        let local = self.local.get();
        for p in local.pending.drain(..) {
            if !p.new.is_null() {
                // SAFETY: never connected: nobody else has seen it.
                unsafe { Version::free(p.new) };
            }
        }
        for w in local.write_set.iter().rev() {
            if !w.new.is_null() {
                // SAFETY: our own version, alive until handed to the GC.
                // Release: a reader that sees INFINITY ignores the version.
                unsafe { &*w.new }.begin.store(INFINITY, Ordering::Release);
            }
            if !w.old.is_null() {
                // SAFETY: write-locked by us until this reset.
                let old = unsafe { &*w.old };
                // Drop the write lock and keep the read locks; a word no
                // longer naming us was taken over by a transaction that saw
                // our abort: it is left alone.
                let _ = word::release_write_lock(&old.end, self.core.id);
            }
        }
        self.drop_claims();
        if self.policy.honour_locks {
            self.release_locks();
        }
        if self.policy.cert != Cert::Off {
            self.ssn_release(None);
        }
        db.txns.report_outcome(self.core.slot, false);
        // New versions become garbage once every transaction open now is gone:
        // stamp them just below the clock, so that only transactions that
        // began before now (begin stamps < now) hold them back.
        // SeqCst: a transaction whose begin we do not order before this load
        // draws a stamp >= now and can no longer reach the versions.
        let now = db.clock.load(Ordering::SeqCst) - 1;
        db.txns.leave_watermark(self.core.slot);
        Self::collect_garbage(
            db,
            self.core.slot,
            self.local.get().write_set.iter().filter(|w| !w.new.is_null()).map(|w| Garbage {
                ts: now,
                table: w.table,
                v: VPtr(w.new),
                hash: w.hash,
            }),
        );
        if let Some(po) = &db.g.po {
            if self.po_cts != 0 {
                // Decrement_TsPC: our versions are marked garbage already.
                po.abort(self.po_cts);
            }
            if matches!(reason, AbortReason::WriteConflict | AbortReason::ReadValidation | AbortReason::Phantom) {
                // D5.i: two transactions at one timestamp would not commute.
                po.conflict();
            }
            db.g.po_clock(&db);
        }
        self.core.aborted(reason)
    }

    /// Hands garbage to the collector and, when the queue is long, collects.
    pub(crate) fn collect_garbage(db: MvDb<'_>, slot: u32, items: impl Iterator<Item = Garbage>) {
        let shard = slot as usize;
        let len = db.gc.push(shard, items);
        if len >= GC_THRESHOLD {
            let w = db.g.watermark(&db);
            let n = db.gc.collect(shard, w, GC_THRESHOLD / 2, |t| db.table_by_id(t));
            // Relaxed: statistics only.
            db.txns.slot(slot).freed.fetch_add(n as u64, Ordering::Relaxed);
        }
    }
}
