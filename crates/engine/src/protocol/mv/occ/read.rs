//! Normal processing, reads and scans (Hekaton section 3.1): point
//! lookups through the primary index, secondary lookups and range scans,
//! and the `Delivery` that hands visible rows to the caller while it
//! fills the ReadSet, the ScanSet and the recorded history.

use super::super::*;
use super::intent::claimed;

impl<'db> MvTxn<'db> {
    /// Reads the row with primary key `key` and passes its value to `f`.
    /// No allocation: the value is borrowed for the duration of `f`.
    #[inline]
    pub(crate) fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.read_key(table, key, false, f)
    }

    /// A point lookup of `key`; `intent`: `get_for_update`'s, which claims
    /// the version found instead of read-locking it (see `intent`).
    #[inline]
    pub(super) fn read_key<R>(
        &mut self,
        table: TableId,
        key: &Key,
        intent: bool,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        self.enter()?;
        if self.policy.po_occ {
            if let Some(i) = self.po_find(table.0, key) {
                return Ok(self.po_read(i, f));
            }
        }
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let t = self.core.db.table_ref(table)?;
        let mut v = if self.policy.lock_scans {
            self.guard_key(t, table.0, 0, key)?
        } else {
            self.find_visible(t, key, self.lookup_time())
        };
        if v.is_null() {
            v = self.claimed_row(table.0, key);
        }
        if intent {
            if !v.is_null() {
                // The claim turns a read lock of ours into the write lock
                // (section 4.5, rule 1): none is taken first.
                self.claim_found(table.0, v)?;
            }
        } else if self.policy.lock_reads {
            v = self.lock_found(t, key, v)?;
        }
        if v.is_null() {
            self.settle_speculation()?;
            if self.policy.track_scans {
                self.local.get().scan_set.push(ScanRecord {
                    table: table.0,
                    index: 0,
                    kind: ScanKind::Eq(key.clone()),
                    filter: None,
                    since: self.core.begin_ts,
                });
            }
            if self.policy.cert != Cert::Off {
                self.ssn_scan(t, 0, &ScanKind::Eq(key.clone()));
                self.ssn_absent_key(t, key);
                self.ssn.get().verdict_now(self.policy.cert).map_err(|r| self.abort_with(r))?;
            }
            if self.core.recording {
                self.core.record(Op::Read { table: table.0, key: key.clone(), version: None });
            }
            return Ok(None);
        }
        if self.policy.track_reads {
            self.local.get().read_set.push(VPtr(v));
        }
        if self.policy.cert != Cert::Off {
            self.ssn_read(v)?;
        }
        // SAFETY: found under the epoch guard, which is still held.
        let v = unsafe { &*v };
        if self.core.recording {
            self.core.record(Op::Read {
                table: table.0,
                key: key.clone(),
                version: Some((writer_of(v), v.value().to_vec())),
            });
        }
        Ok(Some(f(v.value())))
    }

    /// Calls `f(primary key, value)` for every visible row whose key in
    /// `index` equals `key` (any index; secondary indexes may hold many rows
    /// per key), until `f` returns false.
    pub(crate) fn get_by(&mut self, index: IndexId, key: &Key, mut f: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        self.enter()?;
        self.po_connect_before_scan()?;
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let (t, ix) = self.core.index_ref(index)?;
        if self.policy.lock_scans {
            self.guard_key(t, index.table, index.index, key)?; // null: the scan follows
        }
        let rt = self.read_time();
        let me = self.me();
        if self.policy.track_scans {
            self.local.get().scan_set.push(ScanRecord {
                table: index.table,
                index: index.index,
                kind: ScanKind::Eq(key.clone()),
                filter: None,
                since: rt,
            });
        }
        if self.policy.cert != Cert::Off {
            self.ssn_scan(t, index.index, &ScanKind::Eq(key.clone()));
        }
        let claims = std::mem::take(&mut self.local.get().claims);
        let mut out = Delivery::new(self);
        ix.for_each_eq(key, |v| {
            if !ix.matches(v, key) {
                return true;
            }
            if visible_at(v, rt, &me).is_none() && !claimed(&claims, v) {
                out.ssn_absent(v, rt);
                return true;
            }
            out.deliver(v, &mut f)
        });
        if let Some(s) = &out.ssn {
            if let Err(r) = s.st.verdict_now(s.cert) {
                out.refused = out.refused.or(Some(r));
            }
        }
        let (refused, rows) = (out.refused, out.rows);
        self.local.get().claims = claims;
        if let Some(r) = refused {
            return Err(self.abort_with(r));
        }
        if self.core.recording {
            let (lo, hi) = (Bound::Included(key.clone()), Bound::Included(key.clone()));
            self.core.record(Op::Scan {
                table: index.table,
                index: index.index,
                lo,
                hi,
                filtered: index.index != 0,
                rows,
            });
        }
        Ok(())
    }

    /// Calls `f(primary key, value)` for every visible row whose key in
    /// `index` lies in `range` and that passes `filter`, until `f` returns
    /// false. Ordered indexes deliver rows in key order; hash indexes can only
    /// be scanned whole (in no particular order), filtered by `range`.
    /// `rev`: an ordered index delivers them in descending key order.
    pub(crate) fn scan(
        &mut self,
        index: IndexId,
        range: impl RangeBounds<Key>,
        filter: Option<&Filter>,
        rev: bool,
        mut f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        self.enter()?;
        self.po_connect_before_scan()?;
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let (t, ix) = self.core.index_ref(index)?;
        let lo = range.start_bound().cloned();
        let hi = range.end_bound().cloned();
        if self.policy.lock_scans {
            // Before the read time is taken: a version committed after the
            // lock is one whose writer saw the lock and waited for us.
            self.lock_range(index.table, index.index, ix, lo.clone(), hi.clone());
        }
        let rt = self.read_time();
        let me = self.me();
        if self.policy.track_scans {
            self.local.get().scan_set.push(ScanRecord {
                table: index.table,
                index: index.index,
                kind: ScanKind::Range(lo.clone(), hi.clone()),
                filter: filter.cloned(),
                since: rt,
            });
        }
        if self.policy.cert != Cert::Off {
            self.ssn_scan(t, index.index, &ScanKind::Range(lo.clone(), hi.clone()));
        }
        // Writers of versions a serializable pessimistic scan cannot see yet.
        let mut uncommitted = std::mem::take(&mut self.local.get().uncommitted);
        let (lock_scans, db, id) = (self.policy.lock_scans, self.core.db, self.core.id);
        // Versions we claimed and did not replace: ours to see (see `intent`).
        let claims = std::mem::take(&mut self.local.get().claims);
        let mut out = Delivery::new(self);
        let ordered = ix.is_ordered();
        let mut stopped_at = None;
        ix.for_each_in(lo.as_ref(), hi.as_ref(), rev, |v| {
            // Check predicate (search predicate, then residual), then visibility.
            if !ordered && !ix.covers(v, &lo, &hi) {
                return true;
            }
            if let Some(p) = filter {
                if !p(&v.key(), v.value()) {
                    // SSN and SSI: the predicate read this row too, so an
                    // update that makes it match overwrites a version read.
                    if out.ssn.is_some() && (visible_at(v, rt, &me).is_some() || claimed(&claims, v)) {
                        return out.ssn_read(v);
                    }
                    return true;
                }
            }
            if visible_at(v, rt, &me).is_none() && !claimed(&claims, v) {
                if lock_scans {
                    uncommitted.extend(Self::uncommitted_writer(db, id, v, rt));
                }
                out.ssn_absent(v, rt);
                return true;
            }
            if out.deliver(v, &mut f) {
                return true;
            }
            stopped_at = Some(ix.key_of(v));
            false
        });
        if let Some(s) = &out.ssn {
            if let Err(r) = s.st.verdict_now(s.cert) {
                out.refused = out.refused.or(Some(r));
            }
        }
        let refused = out.refused;
        let rows = out.rows;
        self.local.get().uncommitted = uncommitted;
        self.local.get().claims = claims;
        if let Some(r) = refused {
            return Err(self.abort_with(r));
        }
        if self.policy.lock_scans {
            if let Err(r) = self.impose_on_writers() {
                return Err(self.abort_with(r));
            }
        }
        // A scan of an ordered index that its caller stopped observed the
        // range only up to the row it stopped at (the oldest new order, the
        // first of a prefix; for a reverse scan, down to it): rows past it
        // are neither read nor phantoms. Narrowing the ScanSet entry spares
        // false phantom aborts (an iterator's batches claim only what they
        // walked), and the history must not claim that the rest of the range
        // was empty. A hash index is scanned in no key order: its range
        // stays whole.
        let (lo, hi) = match stopped_at {
            Some(k) if ordered => {
                let (lo, hi) = if rev { (Bound::Included(k), hi) } else { (lo, Bound::Included(k)) };
                if self.policy.lock_scans {
                    ix.ranges.narrow_last(self.core.id, lo.clone(), hi.clone());
                }
                if self.policy.track_scans {
                    if let Some(ScanRecord { kind: ScanKind::Range(l, h), .. }) = self.local.get().scan_set.last_mut() {
                        (*l, *h) = (lo.clone(), hi.clone());
                    }
                }
                (lo, hi)
            }
            _ => (lo, hi),
        };
        if self.core.recording {
            self.core.record_scan(index, lo, hi, filter.is_some(), rows);
        }
        Ok(())
    }
}

/// Hands the visible rows of a lookup or scan to the caller's function,
/// adding them to the ReadSet (repeatable read and serializable) and to the
/// recorded history (recording only).
struct Delivery<'a> {
    track: bool,
    pub(super) recording: bool,
    pub(super) reads: &'a mut Vec<VPtr>,
    /// Pessimistic repeatable read and serializable: read lock every row
    /// delivered (our id and the transaction table), into `locks`.
    lock: Option<(u64, &'a crate::txn::table::TxnTable)>,
    locks: &'a mut Vec<VPtr>,
    /// SSN and SSI: every row delivered is an `ssn_read`.
    ssn: Option<SsnRead<'a>>,
    /// Our transaction-table slot: its commit dependencies are settled
    /// before a row is handed on (see `deliver`).
    deps: &'a crate::txn::table::TxnSlot,
    /// Why a read lock was refused, or a dependency aborted (the scan
    /// stopped; the caller aborts).
    pub(super) refused: Option<AbortReason>,
    rows: Vec<(Key, Writer, Vec<u8>)>,
}

/// What a [`Delivery`] needs for SSN's reads.
struct SsnRead<'a> {
    st: &'a mut ssn::SsnLocal,
    cert: Cert,
    db: super::super::MvDb<'a>,
    slot: u32,
    word: u64,
}

impl<'a> Delivery<'a> {
    pub(super) fn new(t: &'a mut MvTxn<'_>) -> Delivery<'a> {
        let l = t.local.get();
        Delivery {
            track: t.policy.track_reads,
            recording: t.core.recording,
            reads: &mut l.read_set,
            lock: t.policy.lock_reads.then_some((t.core.id, &t.core.db.txns)),
            locks: &mut l.read_locks,
            ssn: (t.policy.cert != Cert::Off).then_some(SsnRead {
                st: t.ssn.get(),
                cert: t.policy.cert,
                db: super::super::MvDb { shared: t.core.db, g: t.g },
                slot: t.core.slot,
                word: t.word,
            }),
            deps: t.core.db.txns.slot(t.core.slot),
            refused: None,
            rows: Vec::new(),
        }
    }

    /// Delivers `v`; returns what `f` returned (false stops the scan).
    #[inline]
    fn deliver(&mut self, v: &Version, f: &mut impl FnMut(&Key, &[u8]) -> bool) -> bool {
        // Section 2.7: a speculative read or ignore (of a Preparing writer)
        // is settled before any row is handed on, as `settle_speculation`
        // settles an absence. A dependency that aborts may be rolling back a
        // view the scan has partly seen: a Preparing writer T2 that updated
        // the version of a Preparing T1 is doomed once T1 aborts, but until
        // T2 notices, its new version stays speculatively visible while
        // T1's undo (section 3.3) makes the version T1 replaced latest
        // again: both would be delivered, one key twice. Waiting is safe:
        // only on Preparing transactions, which never wait for an active
        // one; and free without speculation (two loads of our own slot).
        if !self.deps.await_dependencies() {
            self.refused = Some(AbortReason::CommitDependency);
            return false;
        }
        if let Some((id, txns)) = self.lock {
            match read_lock(v, id, txns, self.locks) {
                Locked::Yes => {}
                // Replaced and committed since the visibility check: what we
                // saw cannot be locked any more (section 4.1.1 locks only
                // latest versions), so the read cannot be kept stable.
                Locked::NotLatest => {
                    self.refused = Some(AbortReason::ReadLock);
                    return false;
                }
                Locked::Refused(r) => {
                    self.refused = Some(r);
                    return false;
                }
            }
        }
        if self.track {
            self.reads.push(VPtr(v as *const Version as *mut Version));
        }
        if self.ssn.is_some() && !self.ssn_read(v) {
            return false;
        }
        if self.recording {
            self.rows.push((v.key(), writer_of(v), v.value().to_vec()));
        }
        f(&v.key(), v.value())
    }

    /// SSN: the scan passed over `v`, invisible at `rt` (see `ssn::absent`).
    #[inline]
    fn ssn_absent(&mut self, v: &Version, rt: u64) {
        if let Some(s) = self.ssn.as_mut() {
            ssn::absent(s.st, s.cert, s.db, v, rt);
        }
    }

    /// SSN's read of `v`; false (and `refused` set) on an early abort.
    #[inline]
    fn ssn_read(&mut self, v: &Version) -> bool {
        let s = self.ssn.as_mut().expect("an SSN delivery");
        match ssn::read(s.st, s.cert, &s.db.txns, s.slot, s.word, v) {
            Ok(()) => true,
            Err(r) => {
                self.refused = Some(r);
                false
            }
        }
    }
}
