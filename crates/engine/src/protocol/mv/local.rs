//! The multi-version family's per-transaction sets (Hekaton section 3:
//! ReadSet, ScanSet, WriteSet; section 4: the read locks and bucket locks of
//! MV/L; `get_for_update`'s claims; POMVCC's pending writes), one
//! [`MvLocal`] per transaction-table slot, owned by [`super::MvGlobal`].

use crate::key::Key;
use crate::storage::version::{VPtr, Version};
use crate::txn::{ScanRecord, WriteEntry};

/// POMVCC's optimistic write (section V.D, Figure 13, step 1): the new
/// version is created but not yet connected. It stays private to the
/// transaction until commit takes the write lock on `old` (null: an
/// insert) and links `new` (null: a delete) — see `protocol::mv::pomvcc`.
#[derive(Clone)]
pub(crate) struct Pending {
    pub(crate) table: u32,
    pub(crate) key: Key,
    pub(crate) old: *mut Version,
    pub(crate) new: *mut Version,
    /// An insert deleted again: `new` is linked and deleted at commit, as a
    /// pessimistic transaction would have done, so that the key's
    /// concurrent writers conflict with it alike (the history says it
    /// wrote the key).
    pub(crate) deleted: bool,
}

impl Pending {
    /// The row as this transaction sees it: none after a delete.
    pub(crate) fn row(&self) -> *mut Version {
        if self.deleted {
            std::ptr::null_mut()
        } else {
            self.new
        }
    }
}

/// A write claim of `get_for_update` in the multi-version family (see
/// `mv::occ::intent`): our id is in the End word of `v`, the visible version
/// of its key, as an update's write lock is, but no new version is linked.
/// `used`: an update or delete of the key has taken the claim over (its
/// WriteSet entry names `v` as the old version and releases it).
#[derive(Clone, Copy)]
pub(crate) struct Claim {
    pub(crate) table: u32,
    pub(crate) v: VPtr,
    pub(crate) used: bool,
}

/// The sets of one multi-version transaction, kept per transaction-table
/// slot so their capacity is reused by the slot's next occupant; cleared
/// when the next one begins.
#[derive(Default)]
pub(crate) struct MvLocal {
    /// ReadSet: versions read (repeatable read and serializable).
    pub(crate) read_set: Vec<VPtr>,
    /// Versions read locked by a pessimistic transaction (section 4: its
    /// ReadSet), released after precommit or on abort.
    pub(crate) read_locks: Vec<VPtr>,
    /// BucketLockSet (section 4): (table, index, bucket) locked by a
    /// serializable pessimistic transaction (also published in its slot),
    /// and the indexes where it holds range locks.
    pub(crate) bucket_locks: Vec<(u32, u8, u64)>,
    pub(crate) range_locks: Vec<(u32, u8)>,
    /// Scratch: versions a serializable scan met uncommitted, and their writers.
    pub(crate) uncommitted: Vec<(u64, VPtr)>,
    /// ScanSet: scans to repeat for phantom detection (serializable).
    pub(crate) scan_set: Vec<ScanRecord>,
    /// WriteSet: old/new version pairs.
    pub(crate) write_set: Vec<WriteEntry>,
    /// Write claims of `get_for_update` (see [`Claim`]), released at commit
    /// or abort.
    pub(crate) claims: Vec<Claim>,
    /// POMVCC's optimistic writes not yet connected (see [`Pending`]).
    pub(crate) pending: Vec<Pending>,
}

impl MvLocal {
    /// Empties the sets for a new occupant of the slot.
    pub(crate) fn clear(&mut self) {
        self.read_set.clear();
        debug_assert!(self.read_locks.is_empty(), "read locks are released before the sets are cleared");
        self.read_locks.clear();
        debug_assert!(self.bucket_locks.is_empty() && self.range_locks.is_empty());
        self.uncommitted.clear();
        self.scan_set.clear();
        self.write_set.clear();
        debug_assert!(self.claims.is_empty(), "claims are released before the sets are cleared");
        self.claims.clear();
        debug_assert!(self.pending.is_empty(), "pending writes are connected or freed before the sets are cleared");
        self.pending.clear();
    }
}
