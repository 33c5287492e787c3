//! Per-transaction sets, one per transaction-table slot in [`SlotSets`]:
//! the [`TxnLocal`] every transaction has (owned by the database beside its
//! transaction table: the slot table below knows nothing of them), and each
//! family's own (owned by the family's database-wide state). A transaction
//! reaches its own through the [`Sets`] handle.

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

/// The sets every transaction has, whatever its family, kept per
/// transaction-table slot (in [`SlotSets`]) so their capacity is reused by
/// the slot's next occupant (no allocation per transaction in the steady
/// state). Each family keeps its own sets beside these, in a `SlotSets` of
/// its own database-wide state: the multi-version family's ReadSet, ScanSet
/// and WriteSet (`mv::MvLocal`), the single-version WriteSet and Silo's
/// ReadSet (`single::SiloLocal`), SSN's words, 1V's LockSet.
#[derive(Default)]
pub(crate) struct TxnLocal {
    /// Scratch: transactions found holding locks under a key.
    pub(crate) ids: Vec<u64>,
    /// Scratch buffer for read-modify-write updates.
    pub(crate) scratch: Vec<u8>,
    /// Scratch buffer for the redo record (durable databases).
    pub(crate) log_buf: Vec<u8>,
    /// Operations recorded for the history (recording only).
    pub(crate) history: Vec<crate::history::Op>,
}

impl TxnLocal {
    pub(crate) fn clear(&mut self) {
        self.history.clear();
    }
}
