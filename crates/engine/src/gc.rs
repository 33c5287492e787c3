//! Version reclamation.
//!
//! Hekaton hands the old versions of a terminated transaction to a garbage
//! collector that all threads run cooperatively (section 2.3). Here every
//! finishing transaction appends its garbage to one of a few sharded queues,
//! each entry stamped with a time after which no transaction can see it:
//!
//! * an old version replaced or deleted by a committed transaction: its End
//!   timestamp (the committer's end timestamp);
//! * a new version of an aborted transaction: the clock at the abort (every
//!   transaction that could still hold a pointer to it began before that).
//!
//! A version is reclaimed once its stamp is below the *watermark*: the
//! smallest begin timestamp of any open transaction (every present and future
//! reader reads at or after its begin timestamp, so none can see it). It is
//! unlinked from every index and its memory freed after an epoch
//! (crossbeam-epoch), because readers walk chains without locks.
//!
//! A long-running reader holds the watermark back, so exactly the versions it
//! may still see (and those of later transactions) are kept; everything older
//! is reclaimed.

use crate::storage::table::Table;
use crate::storage::version::{VPtr, Version};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::collections::VecDeque;

const SHARDS: usize = 16;

/// One queued version.
#[derive(Clone, Copy)]
pub(crate) struct Garbage {
    /// Reclaimable once the watermark passes this time.
    pub(crate) ts: u64,
    pub(crate) table: u32,
    pub(crate) v: VPtr,
}

/// The sharded garbage queues.
pub(crate) struct Gc {
    shards: Box<[CachePadded<Mutex<VecDeque<Garbage>>>]>,
}

impl Gc {
    pub(crate) fn new() -> Gc {
        Gc { shards: (0..SHARDS).map(|_| CachePadded::new(Mutex::new(VecDeque::new()))).collect() }
    }

    /// Queues garbage in shard `s`; returns the shard's length.
    pub(crate) fn push(&self, s: usize, items: impl Iterator<Item = Garbage>) -> usize {
        let mut q = self.shards[s % SHARDS].lock();
        q.extend(items);
        q.len()
    }

    /// Reclaims up to `budget` entries of shard `s` whose stamp is below
    /// `watermark`. Skips the shard if another thread is collecting it.
    /// Returns the number of versions reclaimed.
    pub(crate) fn collect<'t>(
        &self,
        s: usize,
        watermark: u64,
        budget: usize,
        table: impl Fn(u32) -> &'t Table,
    ) -> usize {
        let Some(mut q) = self.shards[s % SHARDS].try_lock() else { return 0 };
        let guard = crossbeam_epoch::pin();
        let mut n = 0;
        while n < budget {
            match q.front() {
                Some(g) if g.ts < watermark => {
                    let g = *g;
                    q.pop_front();
                    let t = table(g.table);
                    // SAFETY: the version is still linked (only the collector
                    // unlinks, once) and alive; we are pinned while unlinking.
                    unsafe { t.unlink_all(g.v.0) };
                    let p = g.v;
                    // SAFETY: unlinked from every index, so only threads pinned
                    // before this point can still reach it; the epoch scheme
                    // runs the free after all of them have unpinned. No open
                    // transaction holds it in a set: its stamp is below every
                    // open transaction's begin timestamp.
                    unsafe { guard.defer_unchecked(move || Version::free(p.0)) };
                    n += 1;
                }
                _ => break,
            }
        }
        if n > 0 {
            guard.flush();
        }
        n
    }

    /// Number of queued entries.
    pub(crate) fn pending(&self) -> usize {
        self.shards.iter().map(|q| q.lock().len()).sum()
    }

    /// Number of shards.
    pub(crate) fn shards(&self) -> usize {
        SHARDS
    }
}
