//! Indexes. Records are reached only through an index, and every version is
//! linked into every index of its table (Hekaton section 2.1): a version's
//! `link[i]` field chains it into index `i`.
//!
//! * [`hash::HashIndex`]: the paper's lock-free hash table; each bucket heads a
//!   chain of versions whose keys hash there.
//! * [`ordered::OrderedIndex`]: concurrent skip lists (crossbeam) from key to
//!   a slot heading the chain of that key's versions, for range scans;
//!   optionally one skip list per key prefix, found through a hash table.
//!
//! Both publish a version by a compare-and-swap on a chain head and are read
//! without locks under an epoch guard. Unlinking (garbage collection, aborted
//! inserts) is serialised per chain by a striped lock, so no two unlinkers ever
//! touch neighbouring nodes at once, while inserts (head CAS only) and readers
//! never take it.

pub(crate) mod bucket;
pub(crate) mod gaps;
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
