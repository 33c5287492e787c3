//! The per-transaction sets of every protocol (ReadSet, ScanSet, WriteSet,
//! Silo's, 1V's, SSN's and BOHM's own), one [`TxnLocal`] per
//! transaction-table slot in [`SlotSets`], owned by the database beside its
//! transaction table: the slot table below knows nothing of them. A
//! transaction reaches its own through the [`Sets`] handle.

use crate::key::Key;
use crate::storage::version::{VPtr, Version};
use crate::txn::{ScanRecord, WriteEntry};
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ptr;

/// One `T` per slot of the transaction table: the [`TxnLocal`] every
/// transaction has, or a family's own per-slot sets (SSN's, 1V's LockSet).
pub(crate) struct SlotSets<T = TxnLocal>(Box<[CachePadded<UnsafeCell<T>>]>);

// SAFETY: a slot's sets are touched only by the slot's current occupant (a
// single `Transaction`, which is not `Sync`, through its [`Sets`]), and by
// 1V's deadlock detector while that occupant is blocked (see `Sets::get`).
unsafe impl<T> Sync for SlotSets<T> {}
// SAFETY: as above; the sets hold raw version pointers only as plain data.
unsafe impl<T> Send for SlotSets<T> {}

impl<T: Default> SlotSets<T> {
    pub(crate) fn new(n: usize) -> SlotSets<T> {
        SlotSets((0..n).map(|_| CachePadded::new(UnsafeCell::new(T::default()))).collect())
    }

    /// The sets of slot `s`, for 1V's deadlock detector only (see
    /// `lock_1v::wait`): the caller makes sure the occupant is blocked.
    pub(crate) fn raw(&self, s: u32) -> *const T {
        self.0[s as usize].get()
    }
}

/// The sets of a transaction ([`TxnLocal`]), kept per transaction-table
/// slot so their capacity is reused by the slot's next occupant.
///
/// A handle rather than a reference: each [`Sets::get`] borrows the sets
/// for as long as `&mut self` of this field lasts, so the compiler keeps
/// two uses from overlapping while the transaction's other fields stay
/// usable beside them, and no `&mut` to the sets outlives its use (1V's
/// deadlock detector reads a blocked transaction's LockSet between uses,
/// see `lock_1v::wait`).
pub(crate) struct Sets<'db, T = TxnLocal> {
    ptr: ptr::NonNull<T>,
    _slot: PhantomData<&'db SlotSets<T>>,
}

// SAFETY: the handle stands for the transaction's ownership of its slot's
// sets; moving the transaction to another thread moves that ownership with
// it (the slot is not tied to a thread). It is not `Sync`: the sets are used
// without locks, by one thread at a time.
unsafe impl<T> Send for Sets<'_, T> {}

impl<'db, T> Sets<'db, T> {
    /// The sets of `slot`, whose occupant is the caller.
    pub(crate) fn of(sets: &'db SlotSets<T>, slot: u32) -> Self {
        let cell = &sets.0[slot as usize];
        Sets { ptr: ptr::NonNull::new(cell.get()).expect("an UnsafeCell's pointer is not null"), _slot: PhantomData }
    }

    /// The sets, for one use.
    #[inline]
    pub(crate) fn get(&mut self) -> &mut T {
        // SAFETY: the slot's sets belong to its current occupant, the
        // transaction that owns this handle, which is neither `Sync` nor
        // shared; the borrow is tied to `&mut self`, so no two overlap. The
        // one other reader, 1V's deadlock detector, reads the LockSet of a
        // transaction blocked in a wait, which holds no borrow of it then.
        unsafe { self.ptr.as_mut() }
    }
}

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

/// The sets of one transaction, kept per transaction-table slot (in
/// [`SlotSets`]) so their capacity is reused by the slot's next occupant (no allocation per transaction in
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
    /// Write claims of `get_for_update` (multi-version family, see
    /// [`Claim`]), released at commit or abort.
    pub(crate) claims: Vec<Claim>,
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
    pub(crate) silo: super::single::SiloLocal,
}

impl TxnLocal {
    pub(crate) fn clear(&mut self) {
        self.read_set.clear();
        debug_assert!(self.read_locks.is_empty(), "read locks are released before the sets are cleared");
        self.read_locks.clear();
        debug_assert!(self.bucket_locks.is_empty() && self.range_locks.is_empty());
        self.scan_set.clear();
        self.write_set.clear();
        debug_assert!(self.claims.is_empty(), "claims are released before the sets are cleared");
        self.claims.clear();
        debug_assert!(self.pending.is_empty(), "pending writes are connected or freed before the sets are cleared");
        self.pending.clear();
        self.history.clear();
        self.silo.clear();
    }
}
