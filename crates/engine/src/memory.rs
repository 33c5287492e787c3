//! The memory limit ([`crate::Options::memory_limit`]): what the engine
//! counts of the user data it holds, and the gate that refuses writes past
//! the limit with [`crate::Error::MemoryLimit`].
//!
//! **What is counted.** Every record version linked into a table's indexes,
//! at its allocation size ([`Version::footprint`](crate::storage::version::Version::footprint):
//! header, index links, key and value), from the moment it is linked
//! (`Table::link_*`) until it is freed: garbage collection unlinks it
//! (`Gc::collect`), and once an epoch has passed (every thread pinned at
//! the unlink has unpinned) its shard's next collection, or a full one
//! (`Database::collect_garbage`), frees it and gives its bytes back;
//! for a key longer than [`crate::KEY_INLINE`], also the copy of the key
//! each ordered index keeps in its entry (`Table::charged`). The epoch is
//! crossbeam's, shared by the whole process: a thread pinned for long, in
//! any database, keeps unlinked versions allocated and counted, and
//! writers are refused rather than memory growing past the limit unseen.
//! Under BOHM, every version of its store (the struct, and its value's
//! buffer once written) from its allocation until it is freed. Not counted:
//! index nodes (hash buckets are allocated with the table; ordered-index
//! nodes, about one per key, beyond a long key's copy), long keys in
//! BOHM's own index of its store, transactions' private buffers (write sets,
//! Silo's buffered values, POMVCC's private versions before commit), and
//! freed blocks kept for reuse (`storage::version`'s per-thread cache,
//! BOHM's free lists).
//!
//! **How.** With no limit nothing is counted: every hook is one branch on
//! an `Option` that is `None`. With a limit, a [`Budget`] holds the bytes
//! *drawn* from the limit in one shared counter, and per-thread *credit*:
//! 64 cache-padded counters, a thread picking one for life (round robin,
//! so threads rarely share one). Linking a version takes its bytes from
//! the thread's credit (an atomic add on a line that thread alone writes,
//! usually); only when the credit runs out does the thread draw a chunk
//! (64 KiB, less for small limits) from the shared counter. Freeing gives
//! the bytes back as credit, and credit beyond two chunks goes back to the
//! shared counter. Bytes in use are `drawn - Σ credit`.
//!
//! **The gate.** A write that may allocate (insert, update, update_with,
//! modify; not delete) first asks for credit for its value
//! ([`Budget::admit`]): granted from the thread's credit, or by drawing a
//! chunk if the drawn bytes stay within the limit. If they would not, the
//! idle credit of every thread is taken back and the draw tried once more;
//! if it still does not fit, the write fails with
//! [`crate::Error::MemoryLimit`] before allocating anything, and the
//! transaction stays open. The limit is therefore exact for the drawn
//! bytes, but a write already admitted takes what it allocates even past
//! it: bytes in use may pass the limit by at most the writes in flight
//! (a single-version commit's, admitted one by one and linked together).

use crate::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use crate::{Error, Result};
use crossbeam_utils::CachePadded;
use std::cell::Cell;

/// Credit counters per budget (threads pick one each).
const SHARDS: usize = 64;
/// The largest chunk drawn at a time.
const CHUNK_MAX: u64 = 64 << 10;

thread_local! {
    /// This thread's credit counter (the same index in every budget).
    static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Hands threads their credit counters, round robin.
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

/// This thread's credit counter index.
#[inline]
fn shard() -> usize {
    SHARD.with(|s| {
        let i = s.get();
        if i != usize::MAX {
            return i;
        }
        // Relaxed: only spreads threads; any value is correct.
        let i = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
        s.set(i);
        i
    })
}

/// A database's memory budget (module docs).
pub(crate) struct Budget {
    limit: u64,
    chunk: u64,
    /// Bytes drawn from the limit (in use plus every thread's credit).
    drawn: CachePadded<AtomicU64>,
    /// Per-thread credit: drawn and not (yet) in use; negative while a
    /// thread owes the shared counter (it draws right after).
    credit: Box<[CachePadded<AtomicI64>]>,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: u64) -> Budget {
        Budget {
            limit,
            // Idle credit stays a small part of a small limit.
            chunk: (limit / 64).clamp(64, CHUNK_MAX),
            drawn: CachePadded::new(AtomicU64::new(0)),
            credit: (0..SHARDS).map(|_| CachePadded::new(AtomicI64::new(0))).collect(),
        }
    }

    /// The limit in bytes.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes in use: drawn, less the credit not yet used.
    pub(crate) fn used(&self) -> u64 {
        // Relaxed (all loads): a report, approximate while threads run.
        let credit: i64 = self.credit.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        (self.drawn.load(Ordering::Relaxed) as i64 - credit).max(0) as u64
    }

    /// Admits a write that may allocate about `need` bytes: `Ok` if this
    /// thread has the credit or can draw it within the limit, else
    /// [`Error::MemoryLimit`] (nothing allocated, nothing changed but the
    /// idle credit taken back).
    pub(crate) fn admit(&self, need: usize) -> Result<()> {
        let c = &self.credit[shard()];
        // Relaxed: the counters order nothing but themselves; the limit
        // is a bound on bytes, not a synchronisation point.
        let have = c.load(Ordering::Relaxed);
        if have >= need as i64 {
            return Ok(());
        }
        let want = self.chunk.max((need as i64 - have) as u64);
        if self.draw(want) {
            // Relaxed: as above.
            c.fetch_add(want as i64, Ordering::Relaxed);
            return Ok(());
        }
        self.reclaim();
        if self.draw(want) {
            // Relaxed: as above.
            c.fetch_add(want as i64, Ordering::Relaxed);
            return Ok(());
        }
        Err(Error::MemoryLimit { used: self.used(), limit: self.limit })
    }

    /// Draws `n` bytes if the drawn bytes stay within the limit.
    fn draw(&self, n: u64) -> bool {
        // Relaxed: a counter of bytes; the update is atomic, which is all
        // the limit needs.
        self.drawn
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |d| d.checked_add(n).filter(|&t| t <= self.limit))
            .is_ok()
    }

    /// Takes every thread's idle credit back into the shared counter (the
    /// slow path of a refused draw).
    #[cold]
    fn reclaim(&self) {
        for c in self.credit.iter() {
            // Relaxed: as in `admit`.
            let idle = c.load(Ordering::Relaxed);
            if idle > 0 {
                // Relaxed: as above. The owner may have spent some since
                // the load: it goes negative and draws on its next charge.
                c.fetch_sub(idle, Ordering::Relaxed);
                self.drawn.fetch_sub(idle as u64, Ordering::Relaxed);
            }
        }
    }

    /// Counts `bytes` now in use (a version linked): from this thread's
    /// credit, drawing past the limit if the write was admitted on too
    /// little (its size was not known then, or a single-version commit
    /// links several writes admitted one by one against the same credit).
    /// Only the deficit is drawn so: the credit is left at zero, and the
    /// thread's next write draws again through the limit's check instead
    /// of spending credit that never passed it.
    #[inline]
    pub(crate) fn charge(&self, bytes: usize) {
        let c = &self.credit[shard()];
        // Relaxed: as in `admit`.
        let left = c.fetch_sub(bytes as i64, Ordering::Relaxed) - bytes as i64;
        if left < 0 {
            let n = left.unsigned_abs();
            // Relaxed: as above.
            self.drawn.fetch_add(n, Ordering::Relaxed);
            c.fetch_add(n as i64, Ordering::Relaxed);
        }
    }

    /// Counts `bytes` no longer in use (versions freed):
    /// this thread's credit grows, and what exceeds two chunks goes back
    /// to the shared counter.
    #[inline]
    pub(crate) fn release(&self, bytes: usize) {
        let c = &self.credit[shard()];
        // Relaxed: as in `admit`.
        let now = c.fetch_add(bytes as i64, Ordering::Relaxed) + bytes as i64;
        if now > 2 * self.chunk as i64 {
            let back = now - self.chunk as i64;
            // Relaxed: as above.
            c.fetch_sub(back, Ordering::Relaxed);
            self.drawn.fetch_sub(back as u64, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_within_the_limit_and_frees_resume() {
        let b = Budget::new(64 << 10);
        let mut n: u64 = 0;
        while b.admit(100).is_ok() {
            b.charge(100);
            n += 1;
            assert!(n < 10_000, "the limit holds");
        }
        assert!(b.used() <= b.limit() && b.used() + b.chunk + 100 > b.limit(), "refused near the limit: {}", b.used());
        let Err(Error::MemoryLimit { used, limit }) = b.admit(100) else { panic!("still full") };
        assert_eq!((used, limit), (b.used(), 64 << 10));
        b.release(50 * 100);
        assert!(b.admit(100).is_ok(), "writes resume after a free");
        assert_eq!(b.used(), (n - 50) * 100);
    }

    #[test]
    fn idle_credit_of_other_threads_is_taken_back() {
        let b = std::sync::Arc::new(Budget::new(64 * 100));
        let b2 = b.clone();
        // Another thread draws a chunk and leaves it idle.
        std::thread::spawn(move || b2.admit(3000).unwrap()).join().unwrap();
        for _ in 0..60 {
            b.admit(100).unwrap();
            b.charge(100);
        }
        assert_eq!(b.used(), 6000);
    }
}
