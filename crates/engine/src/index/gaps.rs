//! Gap pseudo-versions (SSN section 6): what a scan reads in place of the
//! rows it did not see, so that inserts and deletes into its range count as
//! overwrites of something it read. Each index of an SSN or SSI table has
//! one set (`Table::gaps`): a pseudo-version per hash class of keys (and of
//! a few key prefixes), and one for the whole index. The certifier's use of
//! their words (η and the readers bitmap) is in `protocol::mv::ssn`.

use crate::sync::atomic::AtomicU64;
use crossbeam_utils::CachePadded;

/// Hash classes of keys with a pseudo-version each, per index.
pub(crate) const GAP_CLASSES: usize = 64;

/// A pseudo-version: what a scan reads instead of the rows it did not see.
#[derive(Default)]
pub(crate) struct PseudoVersion {
    /// η: largest commit stamp of a committed reader (never an sstamp).
    pub(crate) stamp: AtomicU64,
    /// Readers bitmap.
    pub(crate) readers: AtomicU64,
}

/// The pseudo-versions of one index.
pub(crate) struct Gaps {
    pub(crate) key: Box<[CachePadded<PseudoVersion>]>,
    range: CachePadded<PseudoVersion>,
}

impl Default for Gaps {
    fn default() -> Gaps {
        Gaps { key: (0..GAP_CLASSES).map(|_| CachePadded::default()).collect(), range: CachePadded::default() }
    }
}

/// Key-prefix lengths that name a range's gap: a range whose bounds share
/// the first `L` bytes (for the largest such `L` listed) holds only keys
/// with that prefix (byte order), so its gap is that prefix's class — a
/// TPC-C scan of one district's new orders does not meet inserts into
/// another district's. Other ranges read the whole index's gap.
const PREFIXES: [usize; 4] = [8, 4, 3, 2];

impl Gaps {
    /// The class of the key bytes `b` (a whole key, or a prefix).
    fn class(&self, b: &[u8]) -> &PseudoVersion {
        let h = crate::key::hash_bytes(b) ^ (b.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        &self.key[(h % GAP_CLASSES as u64) as usize]
    }

    /// The gap a scan of one key reads.
    pub(crate) fn of_key(&self, k: &crate::key::Key) -> &PseudoVersion {
        self.class(k.as_bytes())
    }

    /// The gap a scan of a key range reads.
    pub(crate) fn of_range(
        &self,
        lo: &std::ops::Bound<crate::key::Key>,
        hi: &std::ops::Bound<crate::key::Key>,
    ) -> &PseudoVersion {
        use std::ops::Bound::{Excluded, Included};
        let (Included(a) | Excluded(a), Included(b) | Excluded(b)) = (lo, hi) else { return &self.range };
        let (a, b) = (a.as_bytes(), b.as_bytes());
        let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        match PREFIXES.iter().find(|&&l| l <= common) {
            Some(&l) => self.class(&a[..l]),
            None => &self.range,
        }
    }

    /// Every gap a write that adds or removes index key `k` changes: the
    /// key's own, its prefixes', and the whole index's.
    pub(crate) fn of_write(&self, k: &crate::key::Key, mut f: impl FnMut(&PseudoVersion)) {
        let b = k.as_bytes();
        f(self.class(b));
        for &l in PREFIXES.iter().filter(|&&l| l < b.len()) {
            f(self.class(&b[..l]));
        }
        f(&self.range);
    }
}
