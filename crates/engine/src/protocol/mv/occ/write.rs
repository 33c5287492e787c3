//! Normal processing, writes (Hekaton sections 2.6 and 3.1): inserts with
//! their uniqueness check, updates and deletes (first-writer-wins on the
//! End word), and the WriteSet.

use super::super::*;

impl<'db> MvTxn<'db> {
    /// Inserts a new row; fails with [`Error::DuplicateKey`] if `key` has a
    /// visible row (the transaction stays usable).
    pub(crate) fn insert(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        let t = self.enter_write(table, value.len())?;
        if self.policy.po_occ {
            return self.po_insert(t, table, key, value);
        }
        self.link_insert(t, table, key, value, ptr::null_mut())
    }

    /// Links a new row for `key` into every index, after checking that the
    /// key has no visible row and no concurrent writer. `ready` is a version
    /// made earlier, or null to make one of `value`: a POMVCC optimistic
    /// insert connected at commit (its operation is recorded already, and a
    /// row that appeared since is a write conflict, not a duplicate the
    /// caller could handle). `ready` is ours to link or free.
    pub(crate) fn link_insert(
        &mut self,
        t: &Table,
        table: TableId,
        key: Key,
        value: &[u8],
        ready: *mut Version,
    ) -> Result<()> {
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        // A row we claimed is ours to see (see `intent`): a duplicate.
        let claimed = self.claimed_row(table.0, &key);
        if !claimed.is_null() && ready.is_null() {
            return self.duplicate(claimed);
        }
        let rt = self.read_time();
        let me = self.me();
        let make = || {
            if ready.is_null() {
                Version::alloc(&key, t.link_words(), value, self.word).as_ptr()
            } else {
                ready
            }
        };
        // Before linking: a visible row is a duplicate; a latest version we
        // cannot see is a concurrent writer of this key.
        let mut dup = ptr::null_mut();
        let mut conflict = false;
        let (nv, unlinked) = {
            let mut precheck = insert_check(&key, rt, &me, &mut dup, &mut conflict);
            match &t.indexes[0].imp {
                // An ordered primary: one search finds the key's entry for both
                // the check and the link.
                IndexImpl::Ordered(o) => {
                    let nv = make();
                    // SAFETY: `nv` is fresh (or was kept private), initialised and unlinked.
                    if unsafe { o.insert_if(nv, (key.clone(), Key::EMPTY), precheck) } {
                        // SAFETY: as above; linked into the primary index only.
                        unsafe { t.link_secondaries(nv) };
                        (Some(nv), ptr::null_mut())
                    } else {
                        // SAFETY: never published: no other thread can have seen it.
                        unsafe { Version::free(nv) };
                        (None, ptr::null_mut())
                    }
                }
                IndexImpl::Hash(_) => {
                    t.indexes[0].for_each_eq(&key, &mut precheck);
                    (None, ready)
                }
            }
        };
        if (!dup.is_null() || conflict) && !unlinked.is_null() {
            // SAFETY: kept private since it was made: nobody else has seen it.
            unsafe { Version::free(unlinked) };
        }
        if !dup.is_null() {
            if !ready.is_null() {
                return Err(self.abort_with(AbortReason::WriteConflict));
            }
            return self.duplicate(dup);
        }
        if conflict {
            return Err(self.abort_with(AbortReason::WriteConflict));
        }
        let hash = key.hash64();
        let nv = nv.unwrap_or_else(|| {
            let nv = make();
            // SAFETY: `nv` is fresh (or was kept private), initialised and
            // unlinked; `hash` is its key's.
            unsafe { t.link_all_hashed(nv, hash) };
            nv
        });
        self.core.created += 1;
        self.local.get().write_set.push(WriteEntry { table: table.0, old: ptr::null_mut(), new: nv, hash });
        if self.policy.honour_locks {
            // SAFETY: linked and ours until commit or abort.
            if let Err(r) = self.wait_for_lockers(t, unsafe { &*nv }) {
                return Err(self.abort_with(r));
            }
        }
        if self.core.recording && ready.is_null() {
            self.core.record(Op::Write {
                table: table.0,
                key: key.clone(),
                kind: WriteKind::Insert,
                value: value.to_vec(),
            });
        }
        // After linking: any competing version linked before ours is a
        // concurrent insert we must not overtake (exactly one of two racing
        // inserters sees the other, the later-linked one). Versions are
        // pushed at the head of a chain, so those linked before ours follow
        // it: the walk starts at our version, with no second index search.
        // SAFETY: `nv` is linked, and ours until commit or abort.
        t.indexes[0].for_each_after(unsafe { &*nv }, |v| {
            if v.key_eq(&key) && (is_competing(v, rt, &me) || visible_at(v, rt, &me).is_some()) {
                conflict = true;
                return false;
            }
            true
        });
        if conflict {
            return Err(self.abort_with(AbortReason::WriteConflict));
        }
        if self.policy.cert != Cert::Off {
            // The insert follows the key's last deleter (a w:w edge).
            self.ssn_absent_key(t, &key);
            self.ssn.get().verdict_now(self.policy.cert).map_err(|r| self.abort_with(r))?;
        }
        Ok(())
    }

    /// An insert found `dup`, a visible row of its key: the caller learns
    /// that the row exists, a read to validate, or to lock (a version
    /// replaced meanwhile was a conflicting write). The caller is pinned.
    pub(crate) fn duplicate(&mut self, dup: *mut Version) -> Result<()> {
        if self.policy.track_reads {
            self.local.get().read_set.push(VPtr(dup));
        }
        if self.policy.cert != Cert::Off {
            self.ssn_read(dup)?;
        }
        if self.policy.lock_reads {
            // SAFETY: found under the caller's epoch guard, which is still held.
            match read_lock(unsafe { &*dup }, self.core.id, &self.core.db.txns, &mut self.local.get().read_locks) {
                Locked::Yes => {}
                Locked::NotLatest => return Err(self.abort_with(AbortReason::WriteConflict)),
                Locked::Refused(r) => return Err(self.abort_with(r)),
            }
        }
        Err(Error::DuplicateKey)
    }

    /// Replaces the value of an existing row; fails with
    /// [`Error::KeyNotFound`] if `key` has no visible row.
    pub(crate) fn update(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<()> {
        let t = self.enter_write(table, value.len())?;
        if self.policy.po_occ {
            return self.po_write(t, table, key, |_, new| {
                new.extend_from_slice(value);
                true
            });
        }
        self.replace(t, table, key, Some(value))
    }

    /// Read-modify-write: `f(old, new)` fills `new` (empty on entry) from the
    /// old value, and the new value replaces exactly the version `f` saw. Uses
    /// a buffer owned by the transaction: no allocation in the steady state.
    pub(crate) fn update_with(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()> {
        let t = self.enter_write(table, 0)?;
        if self.policy.po_occ {
            return self.po_write(t, table, key, |old, new| {
                f(old, new);
                true
            });
        }
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let mut buf = std::mem::take(&mut self.core.local.get().scratch);
        buf.clear();
        let rt = self.lookup_time();
        let v = self.find_row(t, table, key, rt);
        let r = if v.is_null() {
            self.not_found(table, key)
        } else {
            // SAFETY: found under the epoch guard, which is still held.
            f(unsafe { &*v }.value(), &mut buf);
            if buf.len() > self.core.db.opts.max_value_size {
                Err(Error::ValueTooLarge { len: buf.len(), max: self.core.db.opts.max_value_size })
            } else {
                self.install(t, table, key, v, Some(&buf))
            }
        };
        self.core.local.get().scratch = buf;
        r
    }

    /// Read-modify-write of an existing row that keeps its length: `f`
    /// edits a copy of the current value in place. The copy is made straight
    /// into the new version (one copy of the row; [`Transaction::update_with`]
    /// makes two), which is what fixed-layout rows want.
    pub(crate) fn modify(&mut self, table: TableId, key: &Key, f: impl FnOnce(&mut [u8])) -> Result<()> {
        let t = self.enter_write(table, 0)?;
        if self.policy.po_occ {
            return self.po_write(t, table, key, |old, new| {
                new.extend_from_slice(old);
                f(new);
                true
            });
        }
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let rt = self.lookup_time();
        let v = self.find_row(t, table, key, rt);
        if v.is_null() {
            return self.not_found(table, key);
        }
        // SAFETY: found under the epoch guard, which is still held.
        let nv = Version::alloc(key, t.link_words(), unsafe { &*v }.value(), self.word);
        // SAFETY: `nv` is fresh and not yet linked anywhere: ours alone.
        f(unsafe { Version::value_mut(nv) });
        if let Err(e) = self.claim(v) {
            // SAFETY: never published: no other thread can have seen it.
            unsafe { Version::free(nv.as_ptr()) };
            return Err(e);
        }
        self.publish(t, table, key, v, nv.as_ptr())
    }

    /// Deletes a row; fails with [`Error::KeyNotFound`] if `key` has no visible row.
    pub(crate) fn delete(&mut self, table: TableId, key: &Key) -> Result<()> {
        let t = self.enter_write(table, 0)?;
        if self.policy.po_occ {
            return self.po_write(t, table, key, |_, _| false);
        }
        self.replace(t, table, key, None)
    }

    /// Update (`Some(value)`) or delete (`None`) of the visible version of `key`.
    fn replace(&mut self, t: &Table, table: TableId, key: &Key, value: Option<&[u8]>) -> Result<()> {
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let rt = self.lookup_time();
        let v = self.find_row(t, table, key, rt);
        if v.is_null() {
            return self.not_found(table, key);
        }
        self.install(t, table, key, v, value)
    }

    /// A lookup found no row. If this transaction read speculatively (a
    /// commit dependency is pending), the row may be missing only because
    /// the transaction it depends on just aborted, before telling us: wait
    /// for the dependencies first, so that an absence is never reported on
    /// a view that is about to be rolled back (a workload would take it for
    /// a broken invariant). Only such transactions wait, and only on ones
    /// that are Preparing, which never wait for an active transaction.
    #[inline]
    pub(super) fn settle_speculation(&mut self) -> Result<()> {
        // Acquire: pairs with the Release decrement of a reporting dependency.
        if self.core.slot().dep_counter.load(Ordering::Acquire) > 0 && !self.core.wait_for_dependencies() {
            return Err(self.abort_with(AbortReason::CommitDependency));
        }
        Ok(())
    }

    /// [`Self::find_visible`], or the version of `key` we claimed and no
    /// write used yet (our visibility check hides it, see `intent`).
    #[inline]
    fn find_row(&mut self, t: &Table, table: TableId, key: &Key, rt: u64) -> *mut Version {
        let v = self.find_visible(t, key, rt);
        if v.is_null() {
            return self.claimed_row(table.0, key);
        }
        v
    }

    /// An update or delete found no visible row.
    pub(crate) fn not_found(&mut self, table: TableId, key: &Key) -> Result<()> {
        self.settle_speculation()?;
        if self.policy.lock_scans {
            // Absence was read: lock it, and make sure it still holds.
            let t = self.core.db.table_ref(table)?;
            if !self.guard_key(t, table.0, 0, key)?.is_null() {
                return Err(self.abort_with(AbortReason::WriteConflict));
            }
        }
        if self.policy.track_scans {
            // Absence was read: a later insert of this key is a phantom.
            let since = self.core.begin_ts;
            self.local.get().scan_set.push(ScanRecord {
                table: table.0,
                index: 0,
                kind: ScanKind::Eq(key.clone()),
                filter: None,
                since,
            });
        }
        if self.policy.cert != Cert::Off {
            let t = self.core.db.table_ref(table)?;
            self.ssn_scan(t, 0, &ScanKind::Eq(key.clone()));
            self.ssn_absent_key(t, key);
            self.ssn.get().verdict_now(self.policy.cert).map_err(|r| self.abort_with(r))?;
        }
        Err(Error::KeyNotFound)
    }

    /// Checks updatability of the visible version `v`, write-locks it, and
    /// installs the new version (none for a delete). The caller is pinned.
    fn install(&mut self, t: &Table, table: TableId, key: &Key, v: *mut Version, value: Option<&[u8]>) -> Result<()> {
        self.claim(v)?;
        let new = match value {
            Some(val) => Version::alloc(key, t.link_words(), val, self.word).as_ptr(),
            None => ptr::null_mut(),
        };
        self.publish(t, table, key, v, new)
    }

    /// Takes the write lock of `v` (section 2.6): checks that it is
    /// updatable and CASes our id into its End word's WriteLock, keeping the
    /// read locks there (section 4.5, rule 1). If others hold read locks,
    /// we take a wait-for dependency on the version (section 4.2.1); a read
    /// lock of our own is turned into the write lock in the same CAS.
    pub(crate) fn claim(&mut self, v: *mut Version) -> Result<()> {
        // A claim of `get_for_update` on `v` is the write lock already.
        if let Some(c) = self.local.get().claims.iter_mut().find(|c| !c.used && c.v.0 == v) {
            c.used = true;
            return Ok(());
        }
        let me = self.me();
        // SAFETY: found under the epoch guard; it cannot be reclaimed while
        // we hold its write lock or are pinned.
        let old = unsafe { &*v };
        loop {
            let Some(expected) = updatable(old, &me) else {
                if self.core.db.opts.faults.skip_write_conflicts {
                    // Fault injection: steal the write lock (lost updates follow).
                    // Release: as for a successful claim.
                    old.end.store(self.word, Ordering::Release);
                    return Ok(());
                }
                return Err(self.abort_with(AbortReason::WriteConflict));
            };
            let lock = RecordLock::of(expected).expect("an updatable version is a latest one");
            // Our own read locks on `v` (one per read of it) become the write lock.
            let mine = if self.policy.lock_reads {
                self.local.get().read_locks.iter().filter(|p| p.0 == v).count() as u64
            } else {
                0
            };
            debug_assert!(mine <= lock.read_locks, "we hold the read locks we recorded");
            let others = lock.read_locks - mine;
            debug_assert!(self.policy.honour_locks || others == 0, "read locks exist only under mv-lock and mv-mixed");
            // A previous writer's NoMoreReadLocks guarded its wait, not ours.
            let new = RecordLock { no_more_read_locks: false, read_locks: others, writer: self.core.id }.word();
            // The dependency is counted before the lock is visible: the last
            // reader may release it the moment our CAS lands.
            let waits = others > 0;
            if waits && self.core.db.txns.add_wait_for(self.core.id) != crate::txn::table::WaitFor::Added {
                return Err(self.abort_with(AbortReason::WaitFor));
            }
            match word::write_lock(&old.end, expected, new) {
                Claim::Won => {
                    if mine > 0 {
                        self.local.get().read_locks.retain(|p| p.0 != v);
                    }
                    return Ok(());
                }
                lost => {
                    if waits {
                        self.core.db.txns.release_wait_for(self.core.id);
                    }
                    // Changed since we looked: retry only if it is still
                    // updatable (an aborted writer reset it); otherwise another
                    // writer got there first.
                    if lost == Claim::Retry {
                        continue;
                    }
                    return Err(self.abort_with(AbortReason::WriteConflict));
                }
            }
        }
    }

    /// After [`Self::claim`] of `v`: links the new version `new` (null for a
    /// delete) into every index and enters the write in the WriteSet.
    fn publish(&mut self, t: &Table, table: TableId, key: &Key, v: *mut Version, new: *mut Version) -> Result<()> {
        self.connect(t, table, v, new, key.hash64())?;
        if self.core.recording {
            // SAFETY: both versions stay allocated while we are pinned (the
            // caller is) and hold the write lock.
            let (old, newv) = unsafe { (&*v, new.as_ref()) };
            self.record_replace(table, key, (writer_of(old), old.value()), newv.map(|n| n.value()));
        }
        if self.policy.honour_locks && !new.is_null() {
            // SAFETY: linked and ours until commit or abort.
            if let Err(r) = self.wait_for_lockers(t, unsafe { &*new }) {
                return Err(self.abort_with(r));
            }
        }
        Ok(())
    }

    /// Records an update (`Some(value)`) or delete (`None`) of the version
    /// `old` (its writer and value).
    pub(crate) fn record_replace(&mut self, table: TableId, key: &Key, old: (Writer, &[u8]), new: Option<&[u8]>) {
        // An update or delete reads the version it replaces (Property 4.5).
        self.core.record(Op::Read { table: table.0, key: key.clone(), version: Some((old.0, old.1.to_vec())) });
        let (kind, value) = match new {
            Some(v) => (WriteKind::Update, v.to_vec()),
            None => (WriteKind::Delete, Vec::new()),
        };
        self.core.record(Op::Write { table: table.0, key: key.clone(), kind, value });
    }

    /// The part of [`Self::publish`] that POMVCC's optimistic commit shares:
    /// links `new` after `v` and enters the write in the WriteSet. `hash`
    /// is the row's key hashed ([`Key::hash64`]).
    pub(crate) fn connect(
        &mut self,
        t: &Table,
        table: TableId,
        v: *mut Version,
        new: *mut Version,
        hash: u64,
    ) -> Result<()> {
        if !new.is_null() {
            self.core.created += 1;
            // SAFETY: fresh, initialised, unlinked; `v` is the version it
            // replaces, linked everywhere, and write-locked by us.
            unsafe { t.link_update(new, v, hash) };
        }
        self.local.get().write_set.push(WriteEntry { table: table.0, old: v, new, hash });
        if self.policy.cert != Cert::Off {
            self.ssn_write(v)?; // Algorithm 1's ssn_write (an early abort undoes the entry)
        }
        Ok(())
    }
}

/// An insert's check of the versions already under its key, before it links
/// its own: a version visible at `rt` is a duplicate (kept in `dup`), and a
/// latest version we cannot see is a concurrent writer (`conflict`).
fn insert_check<'a>(
    key: &'a Key,
    rt: u64,
    me: &'a Me<'_>,
    dup: &'a mut *mut Version,
    conflict: &'a mut bool,
) -> impl FnMut(&Version) -> bool + 'a {
    move |v: &Version| {
        if !v.key_eq(key) {
            return true;
        }
        if visible_at(v, rt, me).is_some() {
            *dup = v as *const Version as *mut Version;
            return false;
        }
        *conflict |= is_competing(v, rt, me);
        !*conflict
    }
}
