//! Ordered two-phase locking, "2PL": the locking baseline of Faleiro and
//! Abadi, *Rethinking serializable multiversion concurrency control* (BOHM,
//! VLDB 2015), section 4: "a transaction acquires all its locks before
//! executing, in a global order [...] so deadlocks are impossible", using
//! the transaction's declared read and write sets.
//!
//! It runs on the single-version store and the per-index lock tables of
//! [`crate::protocol::lock_1v`], and shares 1V's operations, commit and
//! rollback. What is its own is here: at begin, every lock the
//! [`crate::AccessSet`] implies — S for a declared read, X for a declared
//! write (a record both read and written is locked X once) — is taken in
//! the order of the lock words' addresses, a global order, waiting as long
//! as it takes: a transaction waits only for locks held by transactions
//! that hold no lock it has, so no cycle can form. Once running, it takes
//! no lock on a primary key: an access outside the declaration gets
//! [`crate::Error::NotDeclared`] (and so does a scan, which a list of
//! records cannot declare). The locks live in the lock tables, allocated
//! with the tables: none is allocated while a transaction runs.
//!
//! Deliberate choices:
//! * a transaction that declares nothing (`TxnOptions::access` unset: the
//!   shell, the loaders, the consistency checks) runs as 1V serializable,
//!   locking as it goes with 1V's timeouts;
//! * an insert of a row that has secondary keys still locks those keys as
//!   it runs (a declaration names primary keys only).

use crate::index::key_locks::{try_exclusive, try_shared, LockMode};
use crate::protocol::lock_1v::LockTxn;
use crate::protocol::lock_1v::{wait_for_lock, Held};
use crate::{AccessSet, Result};

impl LockTxn<'_> {
    /// Takes every lock of the declaration, in address order (module docs).
    pub(crate) fn lock_declared(&mut self, access: &AccessSet) -> Result<()> {
        let mut order = std::mem::take(&mut self.locks.get().order);
        order.clear();
        for (list, mode) in [(&access.reads, LockMode::Shared), (&access.writes, LockMode::Exclusive)] {
            for (table, key) in list {
                let t = self.core.db.table_ref(*table)?;
                let ix = &t.indexes[0];
                let w = ix.key_lock(key.hash64());
                order.push((w as *const _ as usize, mode));
            }
        }
        // Address order; for one lock, X first, so the dedup below keeps it.
        order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        order.dedup_by_key(|e| e.0);
        // The lock words are bucket words scattered over the table: start
        // every miss at once rather than one after the other.
        for &(addr, _) in &order {
            crate::index::hash::prefetch(addr as *const u8);
        }
        for &(addr, mode) in &order {
            // SAFETY: the address of a lock word in a table's index, which
            // lives as long as the database.
            let w = unsafe { &*(addr as *const crate::sync::atomic::AtomicU64) };
            let fast = match mode {
                LockMode::Shared => try_shared(w),
                LockMode::Exclusive => try_exclusive(w, false),
            };
            if !fast {
                // No limit: ordered acquisition cannot deadlock.
                wait_for_lock(w, mode, false, None, || false, ());
            }
            self.locks.get().push(Held { word: w, mode });
        }
        self.locks.get().order = order;
        self.declared = true;
        Ok(())
    }
}
