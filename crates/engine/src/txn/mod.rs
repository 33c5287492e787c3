//! Transactions: the transaction table and its states, the visibility rules
//! of Tables 1 and 2, commit dependencies, and the per-transaction sets.

pub(crate) mod state;
pub mod table;
pub mod visibility;
pub(crate) mod wait_for;

use crate::key::Key;
use crate::storage::version::{VPtr, Version};
use std::ops::Bound;
use std::sync::Arc;

/// A residual scan predicate over (primary key, value). Shared (`Arc`) so a
/// serializable transaction can keep it in its ScanSet without copying.
pub type Filter = Arc<dyn Fn(&Key, &[u8]) -> bool + Send + Sync>;

/// One WriteSet entry (section 3.1): the old version (null for an insert) and
/// the new version (null for a delete).
#[derive(Clone, Copy)]
pub(crate) struct WriteEntry {
    pub(crate) table: u32,
    pub(crate) old: *mut Version,
    pub(crate) new: *mut Version,
}

/// POMVCC's optimistic write (section V.D, Figure 13, step 1): the new
/// version is created but not yet connected. It stays private to the
/// transaction until commit takes the write lock on `old` (null: an
/// insert) and links `new` (null: a delete) — see `protocol::pomvcc`.
#[derive(Clone, Copy)]
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

/// What part of an index a scan covered.
#[derive(Clone)]
pub(crate) enum ScanKind {
    /// Equality on the index key (a point lookup is a scan of one key).
    Eq(Key),
    /// A key range (hash indexes: the whole table, filtered by range).
    Range(Bound<Key>, Bound<Key>),
}

/// One ScanSet entry (section 3.1): enough to repeat the scan at validation.
#[derive(Clone)]
pub(crate) struct ScanRecord {
    pub(crate) table: u32,
    pub(crate) index: u8,
    pub(crate) kind: ScanKind,
    pub(crate) filter: Option<Filter>,
    /// The scan's read time: a version that began after it and is visible
    /// at the end timestamp is a phantom (the begin timestamp, except for
    /// scans at the current time under SSN over read committed).
    pub(crate) since: u64,
}

/// The sets of one transaction, kept in its transaction-table slot so their
/// capacity is reused by the next occupant (no allocation per transaction in
/// the steady state).
#[derive(Default)]
pub(crate) struct TxnLocal {
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
    /// Scratch: transactions found holding locks under a key.
    pub(crate) ids: Vec<u64>,
    /// Scratch: versions a serializable scan met uncommitted, and their writers.
    pub(crate) uncommitted: Vec<(u64, VPtr)>,
    /// ScanSet: scans to repeat for phantom detection (serializable).
    pub(crate) scan_set: Vec<ScanRecord>,
    /// WriteSet: old/new version pairs.
    pub(crate) write_set: Vec<WriteEntry>,
    /// POMVCC's optimistic writes not yet connected (see [`Pending`]).
    pub(crate) pending: Vec<Pending>,
    /// Scratch buffer for read-modify-write updates.
    pub(crate) scratch: Vec<u8>,
    /// Scratch buffer for the redo record (durable databases).
    pub(crate) log_buf: Vec<u8>,
    /// Operations recorded for the history (recording only).
    pub(crate) history: Vec<crate::history::Op>,
    /// Silo's sets (single-version databases; the locking protocols keep
    /// their WriteSet and values there too).
    /// BOHM's interactive transactions: the undo log (see `protocol::bohm`).
    pub(crate) bohm: Vec<crate::protocol::bohm::Undo>,
    pub(crate) silo: crate::protocol::silo::SiloLocal,
    /// LockSet of the single-version locking protocols.
    pub(crate) locks: crate::protocol::lock_1v::LockLocal,
    /// SSN's and SSI's state (η, π, the read set of section 4).
    pub(crate) ssn: crate::protocol::ssn::SsnLocal,
}

impl TxnLocal {
    pub(crate) fn clear(&mut self) {
        self.read_set.clear();
        debug_assert!(self.read_locks.is_empty(), "read locks are released before the sets are cleared");
        self.read_locks.clear();
        debug_assert!(self.bucket_locks.is_empty() && self.range_locks.is_empty());
        self.scan_set.clear();
        self.write_set.clear();
        debug_assert!(self.pending.is_empty(), "pending writes are connected or freed before the sets are cleared");
        self.pending.clear();
        self.history.clear();
        self.silo.clear();
        self.locks.clear();
        self.ssn.clear();
        self.bohm.clear();
    }
}

#[cfg(test)]
mod visibility_tests;
