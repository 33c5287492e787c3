//! Read intent: Silo's `get_for_update`. The paper (section 4) has no
//! read-time write locks: every read is optimistic and validated at
//! commit, so two read-modify-writes of a hot key both read it and the
//! second to commit aborts at validation, after doing all its work. This
//! deviation from the paper adds **write claims** between the transactions
//! that declare the intent:
//!
//! * A claim is our id (a transaction-id word, as the multi-version End
//!   word holds) in the record's End word, which Silo's records do not use
//!   otherwise. `get_for_update` claims the key's latest record, waiting
//!   while another transaction holds the claim, and only then reads it, so
//!   it reads the value its previous claimant committed.
//! * A claim is held to the end, and released after the commit installed
//!   the writes (phase 3) or at the abort.
//! * Claims are advisory: reads, writes, the commit's phase-1 locks and
//!   validation ignore them, so every rule of section 4 holds as before
//!   (validation still decides; a plain writer of a claimed key commits or
//!   aborts as it would have, and the claimant then fails its own
//!   validation). They only order the claimants of a key.
//! * Waits cannot deadlock: a transaction never waits for a claimant that
//!   is itself waiting for a claim. Each waiter raises its flag in
//!   `SiloGlobal::claim_waits` and then looks at its holder's (both
//!   SeqCst): of a cycle of waits, the member that looked last would have
//!   seen its holder's flag raised, so no cycle forms; the waiter that sees
//!   a raised flag aborts (reason `deadlock`). A wait longer than
//!   `Options::lock_timeout` aborts too (`lock-timeout`). Phase-1 locks
//!   are taken only at commit, when no more claims are waited for, and
//!   their holders never wait for a claim: they cannot join a cycle.
//! * A claim is kept through a rollback to a savepoint (stricter, like the
//!   reads since it).

use super::*;
use crate::breakdown::{self, Part};
use crate::storage::word::{txn_word, Word, INFINITY};
use crate::txn::table::{slot_of, Peek};
use std::time::Instant;

impl<'db> SiloTxn<'db> {
    /// Silo's `get_for_update` (module docs): claims the key's latest
    /// record, then reads it as `get_with` does.
    pub(crate) fn get_for_update_with<R>(
        &mut self,
        table: TableId,
        key: &Key,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        self.enter()?;
        let t = self.core.db.table_ref(table)?;
        {
            // Epoch pin: records reached through an index stay allocated until it drops.
            let _guard = crossbeam_epoch::pin();
            loop {
                let rec =
                    lookup_latest(t, key, None).map_err(|Moving| self.abort_with(AbortReason::ReadValidation))?.rec;
                // No row: nothing to claim (the read records the absence).
                // Our own write: we lock it at commit anyway.
                if rec.is_null() || self.sv_written(rec).is_some() || self.sv_claim(rec)? {
                    break;
                }
            }
        }
        self.get_with(table, key, f)
    }

    /// Claims record `rec` (the caller is pinned), waiting while another
    /// transaction holds it. `Ok(false)`: the record stopped being the
    /// key's latest meanwhile; look the key up again.
    fn sv_claim(&mut self, rec: *mut Version) -> Result<bool> {
        // SAFETY: found under the caller's epoch guard.
        let r = unsafe { &*rec };
        let db = self.core.db;
        let mine = txn_word(self.core.id);
        let flags = &self.g.claim_waits;
        let my_flag = &flags[self.core.slot as usize];
        let mut started: Option<Instant> = None;
        // Timed from the first look that finds another holder to the end.
        let mut waiting = breakdown::Span::none();
        let mut checked = 0;
        let backoff = Backoff::new();
        let outcome = loop {
            // Acquire: pairs with the previous holder's Release reset, so that
            // what it installed before is what we read next.
            let cur = r.end.load(Ordering::Acquire);
            if cur == mine {
                break Ok(true);
            }
            let holder = match Word::decode(cur) {
                Word::Txn(h) if db.txns.peek(h) != Peek::Gone => Some(h),
                // Free, or left by a transaction that is gone (claims are
                // released before a transaction ends; a guard only).
                _ => None,
            };
            let Some(holder) = holder else {
                // Acquire on success: as the load above.
                if r.end.compare_exchange(cur, mine, Ordering::Acquire, Ordering::Relaxed).is_err() {
                    continue;
                }
                // Acquire: the word as the last committer left it.
                if r.begin.load(Ordering::Acquire) & LATEST == 0 {
                    // Replaced or deleted while we waited: the row is elsewhere.
                    // Release: as every release of a claim.
                    r.end.store(INFINITY, Ordering::Release);
                    break Ok(false);
                }
                self.sv.get().claims.push(VPtr(rec));
                break Ok(true);
            };
            // The claim is held by another: from here on, waiting.
            waiting.start(Part::Wait);
            let since = *started.get_or_insert_with(|| {
                // SeqCst: raised before we look at any holder's flag (module docs).
                my_flag.store(true, Ordering::SeqCst);
                Instant::now()
            });
            if holder != checked {
                checked = holder;
                // SeqCst: the other half of the flags' handshake (module docs).
                if flags[slot_of(holder) as usize].load(Ordering::SeqCst) {
                    break Err(AbortReason::Deadlock);
                }
            }
            if since.elapsed() >= db.opts.lock_timeout {
                break Err(AbortReason::LockTimeout);
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        };
        if started.is_some() {
            // SeqCst: as the store that raised it.
            my_flag.store(false, Ordering::SeqCst);
        }
        outcome.map_err(|reason| self.abort_with(reason))
    }

    /// Releases every claim (after the commit installed the writes, or at
    /// the abort).
    pub(super) fn sv_release_claims(&mut self) {
        let mine = txn_word(self.core.id);
        for VPtr(rec) in self.sv.get().claims.drain(..) {
            // SAFETY: a record we read stays allocated while we are open
            // (retired records wait for the watermark, which our begin epoch
            // holds back; see `silo`'s module docs).
            let r = unsafe { &*rec };
            // Release: our installs happen before the next claimant's read.
            // A failed exchange: the word is not ours (never expected).
            let _ = r.end.compare_exchange(mine, INFINITY, Ordering::Release, Ordering::Relaxed);
        }
    }
}
