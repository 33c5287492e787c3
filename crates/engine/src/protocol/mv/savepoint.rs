//! The multi-version family's savepoints (Hekaton section 3.3's abort, per
//! version, for the writes since the mark): each new version since the mark
//! gets Begin = INFINITY (garbage, handed to the collector) and each
//! replaced version's End word loses our write lock, keeping others' read
//! locks. Under MV/L a write lock that others' read locks made us wait for
//! (section 4.2.1) is no longer ours to be released from, so we release that
//! dependency ourselves; and the read lock our claim turned into the write
//! lock (section 4.5, rule 1) is taken again. A POMVCC optimistic
//! transaction keeps its writes private until commit (Figure 13) and
//! refuses savepoints. What the whole transaction keeps across a rollback
//! is in `protocol::savepoint`.

use super::lock::{read_lock, Locked};
use super::MvTxn;
use crate::error::AbortReason;
use crate::gc::Garbage;
use crate::protocol::core::{Hooks, Mark};
use crate::storage::version::{VPtr, Version};
use crate::storage::word::{self, INFINITY};
use crate::sync::atomic::Ordering;
use crate::{Error, Result};

impl MvTxn<'_> {
    /// A savepoint's mark: how far the WriteSet goes.
    pub(crate) fn savepoint_mark(&mut self) -> Result<Mark> {
        self.enter()?;
        if self.policy.po_occ {
            return Err(Error::Unsupported(
                "a savepoint of a POMVCC optimistic transaction (its writes stay private until commit); \
                 begin it in Mode::Pessimistic"
                    .into(),
            ));
        }
        let history = self.core.history_mark();
        Ok(Mark { writes: self.local.get().write_set.len(), replaced: 0, history })
    }

    /// Section 3.3's abort, for the WriteSet entries since `mark` (module
    /// docs).
    pub(crate) fn rollback_to(&mut self, mark: Mark) -> Result<()> {
        self.enter()?;
        let db = self.mvdb();
        let (id, lock_reads) = (self.core.id, self.policy.lock_reads);
        let gone: Vec<_> = self.local.get().write_set.drain(mark.writes..).collect();
        let mut keys = Vec::with_capacity(gone.len());
        let mut refused = None;
        for w in gone.iter().rev() {
            if !w.new.is_null() {
                // SAFETY: our own version, alive until handed to the GC below.
                let v = unsafe { &*w.new };
                keys.push((w.table, v.key()));
                // Release: a reader that sees INFINITY ignores the version.
                v.begin.store(INFINITY, Ordering::Release);
            }
            if !w.old.is_null() {
                // SAFETY: write-locked by us until this reset.
                let old = unsafe { &*w.old };
                if w.new.is_null() {
                    keys.push((w.table, old.key()));
                }
                // A claim of `get_for_update` the write used: the claim stays
                // (unused again), and so does its write lock.
                let claims = &mut self.local.get().claims;
                if let Some(c) = claims.iter_mut().find(|c| c.used && c.v.0 == w.old) {
                    c.used = false;
                    continue;
                }
                if let Some(readers) = word::release_write_lock(&old.end, id) {
                    if readers > 0 {
                        // Their last release would have released our
                        // wait-for dependency on this version; it no
                        // longer names us.
                        db.txns.release_wait_for(id);
                    }
                }
                // Our own version (updated again since the mark) needs no
                // read lock: nobody else can write it.
                // Relaxed: our own word, or a creator's published with `old`.
                let own = old.begin.load(Ordering::Relaxed) == self.word;
                if lock_reads && !own && refused.is_none() {
                    match read_lock(old, id, &db.txns, &mut self.local.get().read_locks) {
                        Locked::Yes => {}
                        // Replaced since we released it: what we read before
                        // the savepoint cannot be kept stable.
                        Locked::NotLatest => refused = Some(AbortReason::ReadLock),
                        Locked::Refused(r) => refused = Some(r),
                    }
                }
            }
        }
        // Reads of our own new versions since the mark read what no longer
        // exists: section 3.2's validation would find them invisible (Begin
        // is INFINITY) and fail every try, and the collector may free them
        // before we commit. The rows under those keys are read again if
        // the caller wants them.
        let mut news: Vec<*mut Version> = gone.iter().map(|w| w.new).filter(|v| !v.is_null()).collect();
        if !news.is_empty() {
            news.sort_unstable();
            self.local.get().read_set.retain(|&VPtr(v)| news.binary_search(&v).is_err());
        }
        // New versions become garbage once every transaction open now is
        // gone, as in `abort_with`. SeqCst: as there.
        let now = db.clock.load(Ordering::SeqCst) - 1;
        Self::collect_garbage(
            db,
            self.core.slot,
            gone.iter().filter(|w| !w.new.is_null()).map(|w| Garbage {
                ts: now,
                table: w.table,
                v: VPtr(w.new),
                hash: w.hash,
            }),
        );
        self.core.rollback_history(mark.history, &keys);
        match refused {
            Some(r) => Err(self.abort_with(r)),
            None => Ok(()),
        }
    }
}
