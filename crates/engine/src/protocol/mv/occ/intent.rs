//! Read intent: `get_for_update` in the multi-version family, a read that
//! takes the write lock an update of the row would take (Hekaton section
//! 2.6: our id in the End word of the visible version, first writer wins;
//! under MV/L that is section 4.1.1's WriteLock field, and a read lock we
//! hold on the version turns into it, section 4.5 rule 1). A competing
//! writer — another `get_for_update`, or an update — then fails at once
//! with a write conflict, instead of both reading and one of them aborting
//! at validation (MV/O, SSN, SSI, POMVCC) or at its own update (MV/L); and
//! a later update or delete of the key by this transaction uses the claim
//! (no second check of updatability, see `claim`).
//!
//! A claim links no new version, so Table 2 would read our id in the End
//! word as "we replaced it" and hide the version from ourselves; our own
//! lookups and scans therefore treat an unused claim's version as the
//! visible one (`claimed_row`, `claimed`), and an insert of its key is a
//! duplicate.
//!
//! A claim that no write used is released when the commit begins, before
//! the end timestamp is drawn: a reader whose read time is past our end
//! timestamp must not find our id in the End word of a version we did not
//! replace (Table 2 would have it speculatively ignore the version). From
//! then on it is the read it was: validated at commit under MV/O's
//! repeatable read and serializable (it is in the ReadSet), certified by
//! SSN and SSI, and under MV/L's repeatable read and serializable turned
//! into a read lock in one CAS (`word::downgrade_write_lock`), held until
//! the end timestamp is drawn like every read lock. An abort releases
//! claims with the WriteSet's write locks. A rollback to a savepoint keeps
//! every claim (stricter: like the reads since the savepoint, see
//! `protocol::savepoint`), and a claim an update used since the savepoint
//! becomes an unused one again.
//!
//! A key with no visible row is only read (there is no version to lock;
//! the insert that may follow is where an insert conflict shows). POMVCC's
//! optimistic transactions keep their writes private until commit (section
//! V.D, Figure 13), so their `get_for_update` is a plain read.

use super::super::*;
use crate::storage::version::VPtr;
use crate::txn::table::TxnTable as Txns;

/// True if `v` is one of `claims` that no write used yet (a version our own
/// visibility check hides, see the module docs).
#[inline]
pub(crate) fn claimed(claims: &[super::super::local::Claim], v: &Version) -> bool {
    !claims.is_empty() && claims.iter().any(|c| !c.used && ptr::eq(c.v.0, v))
}

impl<'db> MvTxn<'db> {
    /// `get_for_update` (module docs): the visible version of `key`,
    /// write-claimed, passed to `f`.
    pub(crate) fn get_for_update_with<R>(
        &mut self,
        table: TableId,
        key: &Key,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        if self.policy.po_occ {
            // Figure 13: an optimistic write takes its lock at commit.
            return self.get_with(table, key, f);
        }
        self.read_key(table, key, true, f)
    }

    /// Claims `v`, the visible version of a key of `table` just found (the
    /// caller is pinned): our own new version needs no claim (nobody else
    /// can reach it to write), nor does a version claimed already.
    pub(super) fn claim_found(&mut self, table: u32, v: *mut Version) -> Result<()> {
        // SAFETY: found under the caller's epoch guard, still held.
        let vr = unsafe { &*v };
        // Relaxed: our own id is only ever written by us.
        if vr.begin.load(Ordering::Relaxed) == self.word {
            return Ok(());
        }
        // Relaxed: as above.
        if writer_of_end(vr.end.load(Ordering::Relaxed)) == Some(self.core.id) {
            return Ok(()); // an unused claim of ours (a used one is not visible to us)
        }
        self.claim(v)?;
        self.local.get().claims.push(super::super::local::Claim { table, v: VPtr(v), used: false });
        Ok(())
    }

    /// The version of `key` in `table` that we claimed and no write used
    /// yet, or null: our visibility check hides it (module docs).
    #[inline]
    pub(crate) fn claimed_row(&mut self, table: u32, key: &Key) -> *mut Version {
        let claims = &self.local.get().claims;
        if claims.is_empty() {
            return ptr::null_mut();
        }
        claims
            .iter()
            // SAFETY: a claimed version is write-locked by us, so it stays the
            // latest one and is not reclaimed while we are open.
            .find(|c| !c.used && c.table == table && unsafe { &*c.v.0 }.key_eq(key))
            .map_or(ptr::null_mut(), |c| c.v.0)
    }

    /// At the start of the commit, before the end timestamp is drawn
    /// (module docs): every claim no write used is released, or under
    /// MV/L's repeatable read and serializable turned into a read lock.
    /// `Err` (already aborted) if that read lock is refused.
    pub(super) fn release_claims(&mut self) -> Result<()> {
        let mut claims = std::mem::take(&mut self.local.get().claims);
        let (id, txns, lock_reads) = (self.core.id, &self.core.db.txns, self.policy.lock_reads);
        let mut refused = false;
        for c in claims.iter().filter(|c| !c.used) {
            // SAFETY: write-locked by us until this release.
            let v = unsafe { &*c.v.0 };
            let readers = if lock_reads {
                let r = word::downgrade_write_lock(&v.end, id);
                if r.is_some() {
                    self.local.get().read_locks.push(c.v);
                }
                r
            } else {
                word::release_write_lock(&v.end, id)
            };
            match readers {
                Some(n) => Self::return_wait_for(txns, id, n),
                // Only MV/L's downgrade can fail: a full ReadLockCount, or
                // the lock stolen under the test-only write-conflict fault.
                None => refused |= lock_reads,
            }
        }
        claims.clear();
        self.local.get().claims = claims;
        if refused {
            return Err(self.abort_with(AbortReason::ReadLock));
        }
        Ok(())
    }

    /// Our write lock on a version that `readers` others read-locked is
    /// gone: the first of them counted a wait-for dependency of ours
    /// (section 4.2.1) that their last release would have returned; it no
    /// longer names us, so we return it ourselves (as a rollback to a
    /// savepoint does).
    #[inline]
    fn return_wait_for(txns: &Txns, id: u64, readers: u64) {
        if readers > 0 {
            txns.release_wait_for(id);
        }
    }

    /// The abort's part (section 3.3): every claim no write used loses our
    /// write lock, keeping the read locks (as the WriteSet's old versions).
    pub(super) fn drop_claims(&mut self) {
        let id = self.core.id;
        let l = self.local.get();
        for c in l.claims.iter().filter(|c| !c.used) {
            // SAFETY: write-locked by us until this reset.
            let _ = word::release_write_lock(&unsafe { &*c.v.0 }.end, id);
        }
        l.claims.clear();
    }
}
