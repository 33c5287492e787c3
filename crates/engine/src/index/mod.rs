//! Indexes. Records are reached only through an index, and every version is
//! linked into every index of its table (Hekaton section 2.1): a version's
//! `link[i]` field chains it into index `i`.
//!
//! * [`hash::HashIndex`]: the paper's lock-free hash table; each bucket heads a
//!   chain of versions whose keys hash there.
//! * [`ordered::OrderedIndex`]: a concurrent ordered map (crossbeam's skip
//!   list, or [`btree`]'s B+tree with optimistic lock coupling) from key to
//!   a slot heading the chain of that key's versions, for range scans;
//!   optionally one map per key prefix, found through a hash table.
//!
//! Both publish a version by a compare-and-swap on a chain head and are read
//! without locks under an epoch guard. Unlinking (garbage collection, aborted
//! inserts) is serialised per chain by a striped lock, so no two unlinkers ever
//! touch neighbouring nodes at once, while inserts (head CAS only) and readers
//! never take it.

pub(crate) mod btree;
pub(crate) mod bucket;
pub(crate) mod gaps;
#[cfg(test)]
mod grow_tests;
pub mod hash;
pub(crate) mod key_locks;
#[cfg(test)]
mod key_locks_tests;
pub(crate) mod locks;
pub mod ordered;

use parking_lot::Mutex;

/// Number of unlink stripes per index.
const STRIPES: usize = 1024;

/// Striped mutexes that serialise unlinkers of the same chain.
pub(crate) struct Stripes(Box<[Mutex<()>]>);

impl Stripes {
    pub(crate) fn new() -> Stripes {
        Stripes((0..STRIPES).map(|_| Mutex::new(())).collect())
    }
    #[inline]
    pub(crate) fn lock(&self, h: u64) -> parking_lot::MutexGuard<'_, ()> {
        self.0[(h as usize) & (STRIPES - 1)].lock()
    }
}

/// Walks a chain from `prev` and bypasses every member of `set` (sorted by
/// address) it meets, staying on the predecessor after each bypass (the
/// next member may follow); stops once `left` members are gone. Returns
/// how many are left (0 unless some were not in the chain). The walk of
/// both indexes' `unlink_set`.
///
/// # Safety
/// The caller holds the chain's stripe lock (only its holder changes the
/// links of published versions) and an epoch guard; `prev` is null or a
/// live chain member that is not in `set`.
pub(crate) unsafe fn bypass_members(
    mut prev: *mut crate::storage::version::Version,
    link: usize,
    set: &[*mut crate::storage::version::Version],
    mut left: usize,
) -> usize {
    use crate::sync::atomic::Ordering;
    while left > 0 && !prev.is_null() {
        // SAFETY: chain members stay alive under the caller's epoch guard.
        let pl = unsafe { (*prev).link(link) };
        // Acquire: the successor as published.
        let next = pl.load(Ordering::Acquire);
        if !next.is_null() && set.binary_search(&next).is_ok() {
            // SAFETY: as above; `next` is a member, linked and live.
            let succ = unsafe { (*next).link(link).load(Ordering::Acquire) };
            // Release: publish the bypass to readers walking the chain.
            pl.store(succ, Ordering::Release);
            left -= 1;
        } else {
            prev = next;
        }
    }
    left
}
