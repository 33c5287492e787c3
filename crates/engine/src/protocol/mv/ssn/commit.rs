//! SSN's transaction hooks (Algorithms 1-3): the read-only commit at the
//! begin timestamp, `ssn_write`, the pre-commit's exclusion-window test
//! with π/η finalization, and the post-commit's stamps. SSI's rule is the
//! alternative test in the same pre-commit (`protocol::ssi`).

use super::*;
use crate::breakdown::{self, Part};

impl<'db> MvTxn<'db> {
    /// The empty-write-set read-only optimization over snapshot isolation
    /// (section 5.2, after Ports and Grittner): commit at c(T) = the begin
    /// timestamp. `None`: not applicable, commit normally.
    ///
    /// Safe when no read has an overwriter: we publish "Preparing at the
    /// begin timestamp" and fence before we look, so an overwriter that
    /// fenced later (and drew a larger stamp) finds us in its readers bitmap
    /// Preparing with the smaller stamp, waits for us and counts us in its
    /// η; one that fenced earlier has its write lock in place where we look,
    /// and we commit normally (with a fresh stamp, after it).
    pub(crate) fn ssn_read_only_commit(&mut self) -> Option<crate::Result<crate::protocol::core::CommitInfo>> {
        let st = self.ssn.get();
        if st.sstamp != NONE || st.doomed {
            return None; // a read's overwrite committed: a back edge to weigh
        }
        let b = self.core.begin_ts;
        let txns = &self.core.db.txns;
        txns.set_state(self.core.slot, TxnState::Preparing, b);
        // SeqCst fence: our state store, then the End loads below; an
        // overwriter installs its write lock, fences, then looks for us (see
        // `ssn_precommit`): one of the two sees the other.
        fence(Ordering::SeqCst);
        let clean = st.reads.iter().all(|&VPtr(v)| {
            // SAFETY: as in `ssn_precommit`.
            let v = unsafe { &*v };
            // Relaxed: ordered by the fence above.
            Word::decode(v.end.load(Ordering::Relaxed)) == Word::Ts(INFINITY)
        });
        if !clean {
            return None;
        }
        // Take the lock on our π as the full commit would; a push means a
        // writer of a gap we read committed first: commit normally.
        if stamp::lock_pi(&self.g.ssn_slots.of(self.core.slot).sstamp) != NONE {
            return None;
        }
        if !self.core.wait_for_dependencies() {
            return Some(Err(self.abort_with(AbortReason::CommitDependency)));
        }
        txns.set_state(self.core.slot, TxnState::Committed, b);
        self.ssn_release(Some(b));
        if self.core.recording {
            self.core.record_end(Some(b), crate::history::Outcome::Committed);
        }
        self.core.terminate();
        Some(Ok(crate::protocol::core::CommitInfo { commit_ts: b, writes: 0 }))
    }

    /// `ssn_read` for a version found by a lookup.
    #[inline]
    pub(crate) fn ssn_read(&mut self, v: *mut Version) -> crate::Result<()> {
        // SAFETY: found under the caller's epoch guard, still held.
        let v = unsafe { &*v };
        let r = read(self.ssn.get(), self.policy.cert, &self.core.db.txns, self.core.slot, self.word, v);
        r.map_err(|r| self.abort_with(r))
    }

    /// A lookup of `key` in `t` found nothing: the deleters of the
    /// versions of `key` it passed over are predecessors (SSN), and their
    /// creators that committed after our read time successors (see
    /// [`absent`]).
    pub(crate) fn ssn_absent_key(&mut self, t: &Table, key: &crate::key::Key) {
        if self.policy.cert == Cert::Off {
            return;
        }
        let rt = self.read_time();
        let (st, cert, db) = (self.ssn.get(), self.policy.cert, MvDb { shared: self.core.db, g: self.g });
        t.indexes[0].for_each_eq(key, |v| {
            if v.key_eq(key) {
                absent(st, cert, db, v, rt);
            }
            true
        });
    }

    /// A serializable scan read the gap `kind` of index `index` of `t`.
    #[inline]
    pub(crate) fn ssn_scan(&mut self, t: &Table, index: u8, kind: &ScanKind) {
        let st = self.ssn.get();
        st.gap_clock = match &t.indexes[index as usize].gaps {
            Some(g) => {
                read_gap(st, self.core.slot, g, kind);
                // SeqCst: after our bit's SeqCst fetch_or, so that a writer
                // whose stamp is at least this value loads the bitmap after
                // the bit (see `created_after`).
                self.core.db.clock.load(Ordering::SeqCst)
            }
            None => u64::MAX, // no gap: take every such edge ourselves
        };
    }

    /// Algorithm 1, `ssn_write`: we replaced `old` (write-locked by us).
    #[inline]
    pub(crate) fn ssn_write(&mut self, old: *mut Version) -> crate::Result<()> {
        // SAFETY: write-locked by us, so not reclaimable.
        let old = unsafe { &*old };
        let st = self.ssn.get();
        if self.policy.cert == Cert::Ssn {
            // The w:w edge from the creator.
            st.pstamp = st.pstamp.max(cstamp_of(old, &self.core.db.txns));
        }
        // Relaxed: a hint for the early check only; precommit rereads it
        // (Acquire) after the readers bitmap. η(V) of a latest version: never
        // an sstamp (only its overwriter, us, could write one).
        let s = words(old).0.load(Ordering::Relaxed);
        st.pstamp = st.pstamp.max(s & !SSTAMP);
        st.verdict(self.policy.cert).map_err(|r| self.abort_with(r))
    }

    /// Finalizes η(T) against the readers of a replaced version or
    /// pseudo-version (Algorithm 3 lines 24-32).
    ///
    /// `push`: for a pseudo-version, also note the readers that will commit
    /// after us: they cannot find us (a scan keeps no version to follow), so
    /// we lower their π ourselves (see `push`).
    ///
    /// `proxy`: a version that readers may have read untracked (section
    /// 5.3). Such a reader leaves its bit set and never follows us, so for
    /// every bit: a reader that will commit after us gets our π (`push`),
    /// one that committed after us already is an edge nobody can account
    /// for (we abort), and the slot's last commit stamp (its earlier
    /// occupants' untracked reads) joins η(T) — or aborts us if it is
    /// larger than our own stamp.
    #[allow(clippy::too_many_arguments)]
    fn finalize_eta(
        st: &mut SsnLocal,
        db: MvDb<'_>,
        me: u32,
        stamp: &AtomicU64,
        readers: &AtomicU64,
        c: u64,
        push: bool,
        proxy: bool,
    ) -> Result<(), AbortReason> {
        let txns = &db.txns;
        // SeqCst: after our stamp's draw in the total order (see `register`);
        // and a bit found cleared was cleared (Release) after its reader
        // raised η(V), which the reread below must then see (Acquire).
        let mut bits = readers.load(Ordering::SeqCst);
        let hw = txns.high_water();
        while bits != 0 {
            let b = bits.trailing_zeros();
            bits &= bits - 1;
            let range = if b < SHARED_BIT { b as usize..b as usize + 1 } else { SHARED_BIT as usize..hw };
            for s in range {
                if s != me as usize {
                    match txns.peek_slot(s) {
                        // Algorithm 3 waits for a reader still in its
                        // pre-commit and counts it if it commits; we count
                        // it at once, as if it will (a conservative η, and
                        // no wait: with more threads than cores, a reader
                        // descheduled mid-pre-commit would hold us up).
                        Some((_, Peek::Preparing(r) | Peek::Committed(r))) if r < c => {
                            st.pstamp = st.pstamp.max(r);
                        }
                        // Committed after us, perhaps without knowing of us.
                        Some((_, Peek::Committed(_))) if proxy => return Err(AbortReason::ExclusionWindow),
                        Some((id, Peek::Active | Peek::Preparing(_))) if push || proxy => {
                            st.push_to.push((s as u32, id));
                        }
                        _ => {}
                    }
                }
                if proxy {
                    // Acquire, after the peek: an untracked reader that left
                    // the slot raised this (Release) before it left.
                    let last = db.g.ssn_slots.of(s as u32).last_cstamp.load(Ordering::Acquire);
                    if last > c {
                        return Err(AbortReason::ExclusionWindow);
                    }
                    st.pstamp = st.pstamp.max(last);
                }
            }
        }
        // Re-read η(V) in case we missed a reader that already left (line 32).
        // (`read` is Acquire: pairs with the readers' Release `unregister`.)
        if let Stamp::Eta(eta) = stamp::read(stamp) {
            st.pstamp = st.pstamp.max(eta);
        }
        Ok(())
    }

    /// Whether readers may have read versions untracked (section 5.3), so
    /// that writers must account for them.
    #[inline]
    fn read_mostly(&self) -> bool {
        let o = &self.core.db.opts;
        self.policy.cert == Cert::Ssn && o.ssn_read_mostly_age.is_some() && !o.faults.skip_read_mostly_handshake
    }

    /// Pre-commit (Algorithm 3 lines 4-34): we are Preparing with end
    /// timestamp `c`. Finalizes π(T) and η(T) and tests them; on success
    /// publishes π(T) for readers that finalize against us.
    pub(crate) fn ssn_precommit(&mut self, c: u64) -> Result<(), AbortReason> {
        let _timed = breakdown::span(Part::Validation);
        let (db, me, id, cert) = (self.mvdb(), self.core.slot, self.core.id, self.policy.cert);
        let txns = &db.shared.txns;
        let proxy = self.read_mostly();
        let local = self.local.get();
        let st = self.ssn.get();
        if cert == Cert::Ssn {
            st.sstamp = st.sstamp.min(c); // line 6
        }
        // Finalize π(T): follow the overwriters of the reads (lines 7-20).
        let reads = std::mem::take(&mut st.reads);
        for &VPtr(v) in &reads {
            // SAFETY: visible to us while we are open (its End exceeds our
            // begin timestamp, which holds the GC watermark back).
            let v = unsafe { &*v };
            loop {
                // Acquire: see π(V) once the End word holds a timestamp.
                let e = v.end.load(Ordering::Acquire);
                if writer_of_end(e) == Some(id) {
                    break; // we replaced it ourselves (footnote 6)
                }
                match Word::decode(e) {
                    Word::Ts(INFINITY) => break,
                    Word::Ts(e) => {
                        if e < c {
                            // (`read` is Acquire: π(V) was written before
                            // the End timestamp we saw.)
                            st.overwritten_by(cert, e, pi_of(stamp::read(words(v).0)));
                        }
                        break;
                    }
                    Word::Txn(u) => match txns.peek(u) {
                        Peek::Active | Peek::Aborted => break,
                        Peek::Preparing(cu) | Peek::Committed(cu) if cu > c => break,
                        Peek::Preparing(_) | Peek::Committed(_) => {
                            if committed_before(txns, u, c).is_some() {
                                let slot = txns.slot(crate::txn::table::slot_of(u));
                                // Acquire: published before the Committed state.
                                let s = db.g.ssn_slots.of(slot_of(u)).sstamp.load(Ordering::Acquire) & !LOCKED;
                                // Acquire: still U's? If not, U finished
                                // postprocessing: reread the version.
                                if slot.id.load(Ordering::Acquire) != u {
                                    continue;
                                }
                                let cu = match txns.peek(u) {
                                    Peek::Committed(cu) => cu,
                                    _ => continue,
                                };
                                st.overwritten_by(cert, cu, s);
                                break;
                            }
                            // Aborted, or it finished: reread the word.
                            continue;
                        }
                        Peek::Gone => continue,
                    },
                }
            }
        }
        st.reads = reads;
        // SeqCst fence: our write locks (End words, installed by AcqRel CAS
        // during forward processing) precede it; a read-only transaction
        // committing at its begin timestamp stores its state, fences, and
        // then looks at those End words (`ssn_read_only_commit`): either it
        // sees our lock or our look at its state below sees it Preparing.
        fence(Ordering::SeqCst);
        // Finalize η(T): the readers of what we replaced (lines 22-32), and of
        // the pseudo-versions whose rows we changed.
        let safe = if db.opts.safe_snapshot_interval.is_some() { db.g.ssn_safe.below(c) } else { None };
        for w in &local.write_set {
            if !w.old.is_null() {
                // SAFETY: write-locked by us.
                let (stamp, readers) = words(unsafe { &*w.old });
                Self::finalize_eta(st, db, me, stamp, readers, c, false, proxy)?;
            }
            Self::finalize_gaps(st, db, me, db.table_by_id(w.table), w, c);
            if let Some(s) = safe {
                // The latest safe snapshot below us read what we replace (if
                // it existed then) or the gap we insert into (section 5.2).
                // SAFETY: write-locked by us.
                if w.old.is_null() || cstamp_of(unsafe { &*w.old }, txns) < s {
                    st.pstamp = st.pstamp.max(s);
                }
            }
        }
        // Take what writers pushed, and lock our π against later pushes.
        // AcqRel: acquire the pushes; release nothing yet (see below).
        let pushed = stamp::lock_pi(&db.g.ssn_slots.of(me).sstamp);
        st.sstamp = st.sstamp.min(pushed);
        st.verdict(cert)?;
        // Lower the π of the scanners that will commit after us.
        let value = match cert {
            Cert::Ssi if st.sstamp != NONE => 0, // rule 2 for them
            Cert::Ssi => c,
            _ => st.sstamp,
        };
        for i in 0..st.push_to.len() {
            let (s, id) = st.push_to[i];
            if !push(db, s, id, value) && !st.lax {
                return Err(match cert {
                    Cert::Ssi => AbortReason::DangerousStructure,
                    _ => AbortReason::ExclusionWindow,
                });
            }
        }
        // Release: readers that see us Committed (Acquire) read this.
        db.g.ssn_slots.of(me).sstamp.store(LOCKED | st.sstamp, Ordering::Release);
        Ok(())
    }

    /// η(T) against the pseudo-versions of the index entries write `w`
    /// adds or removes (section 6).
    fn finalize_gaps(st: &mut SsnLocal, db: MvDb<'_>, me: u32, t: &Table, w: &WriteEntry, c: u64) {
        // SAFETY: ours (new) or write-locked by us (old).
        let (old, new) = unsafe { (w.old.as_ref(), w.new.as_ref()) };
        for (i, ix) in t.indexes.iter().enumerate() {
            let Some(g) = &ix.gaps else { continue };
            if i == 0 && old.is_some() && new.is_some() {
                continue; // an update keeps its primary key
            }
            let ko = old.map(|o| ix.key_of(o));
            let kn = new.map(|n| ix.key_of(n));
            if ko == kn {
                continue; // same entry: the version-level read covers it
            }
            for k in [ko, kn].iter().flatten() {
                g.of_write(k, |pv| {
                    // Gaps are always tracked: no proxy, so no error.
                    let r = Self::finalize_eta(st, db, me, &pv.stamp, &pv.readers, c, true, false);
                    debug_assert!(r.is_ok());
                });
            }
        }
    }

    /// Post-commit (Algorithm 3 lines 37-47), before MV/O stamps the
    /// Begin and End words: raise η(V) of the reads, write π(T) into the
    /// replaced versions (before their End words turn into timestamps) and
    /// η = c(T) into the new ones; clear our reader bits.
    pub(crate) fn ssn_postcommit(&mut self, c: u64) {
        let cert = self.policy.cert;
        let local = self.local.get();
        let st = &*self.ssn.get();
        for w in &local.write_set {
            if !w.old.is_null() {
                // SAFETY: write-locked by us.
                let (stamp, _) = words(unsafe { &*w.old });
                stamp::set_pi(stamp, st.sstamp);
            }
            if !w.new.is_null() && cert == Cert::Ssn {
                // SAFETY: our own version.
                let (stamp, _) = words(unsafe { &*w.new });
                // Relaxed: published by the Release store of its Begin word.
                stamp::raise_eta(stamp, c, Ordering::Relaxed);
            }
        }
        self.ssn_release(Some(c));
    }

    /// Raises η(V) of everything read to `c` (when committed) and clears
    /// our reader bits (commit or abort).
    pub(crate) fn ssn_release(&mut self, c: Option<u64>) {
        let slot = self.core.slot;
        let me = self.g.ssn_slots.of(slot);
        // Section 5.3: the bit we clear may also stand for untracked reads
        // of earlier occupants of our slot; their stamps (the last cstamp)
        // go into η(V) first. Relaxed: written by earlier occupants only,
        // ordered before us by the slot's handover.
        let floor = if self.read_mostly() { me.last_cstamp.load(Ordering::Relaxed) } else { 0 };
        let st = &*self.ssn.get();
        let raise = c.unwrap_or(0).max(floor);
        for &VPtr(v) in &st.reads {
            // SAFETY: as in `ssn_precommit`.
            let (stamp, readers) = words(unsafe { &*v });
            if raise != 0 {
                // Release: a writer that reads η(V) after our bit is gone
                // sees this raise. A stamp word holding π(V) stays (larger).
                stamp::raise_eta(stamp, raise, Ordering::Release);
            }
            unregister(readers, slot);
        }
        if st.untracked != 0 {
            if let Some(c) = c {
                // Release: a writer that finds the slot left (Acquire on
                // its id) sees this; we raise it before we leave.
                me.last_cstamp.fetch_max(c, Ordering::Release);
            }
            // Relaxed: statistics only.
            me.untracked.fetch_add(st.untracked, Ordering::Relaxed);
        }
        for &p in &st.gaps {
            // SAFETY: pseudo-versions live as long as their index.
            let pv = unsafe { &*p };
            if let Some(c) = c {
                // Release: as above.
                stamp::raise_eta(&pv.stamp, c, Ordering::Release);
            }
            unregister(&pv.readers, slot);
        }
    }
}
