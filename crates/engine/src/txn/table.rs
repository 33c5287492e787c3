//! The transaction table (Hekaton section 2.4): one slot per open transaction,
//! found from a transaction id without a search, with the state, end
//! timestamp and commit-dependency variables of sections 2.7 and 3.
//!
//! A transaction id is `generation << 12 | slot`, so ids are unique over the
//! life of the database and fit in the 54 bits MV/L allows. A slot whose `id`
//! no longer matches means "terminated or not found" (Tables 1 and 2): the
//! reader rereads the version word, which the terminated transaction has
//! finalised.

use crate::breakdown::{self, Part};
use crate::error::AbortReason;
use crate::stats::AbortCounts;
use crate::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use crate::Error;
use crossbeam_utils::{Backoff, CachePadded};
use parking_lot::Mutex;

/// Bits of a transaction id that name its slot.
pub const SLOT_BITS: u32 = 12;
/// Most slots a transaction table can have.
pub const MAX_SLOTS: usize = 1 << SLOT_BITS;
const SLOT_MASK: u64 = (MAX_SLOTS as u64) - 1;

use super::state;
pub use super::state::{Peek, TxnState};

/// The CommitDepSet of a transaction: ids of transactions that depend on it.
/// `closed` is set once the owner has decided and reported its outcome; later
/// registrations are refused and the registrant rereads the outcome itself.
#[derive(Default)]
pub(crate) struct DepSet {
    closed: bool,
    dependents: Vec<u64>,
}

use super::wait_for;
pub(crate) use super::wait_for::WaitFor;

/// What a transaction publishes for deadlock detection and for the
/// transactions that wait on it (section 4.4). Read under the slot's lock.
pub(crate) struct WaitInfo {
    /// Finished normal processing and waiting for wait-for dependencies.
    pub(crate) blocked: bool,
    /// When it blocked, in the order of blocking (deadlock victims are the
    /// transaction of a cycle that blocked last: the one that closed it).
    pub(crate) blocked_seq: u64,
    /// The versions it holds read locks on, while blocked (implicit edges).
    pub(crate) read_locks: Vec<crate::storage::version::VPtr>,
    /// WaitingTxnList: ids of transactions whose WaitForCounter this one
    /// holds up (explicit dependencies from bucket and range locks).
    pub(crate) waiting_txns: Vec<u64>,
    /// Closed to additions: set when the list is released, and left set
    /// until the next occupant opens it (before anyone can find its id in
    /// a lock list), so an adder holding a stale id is refused.
    pub(crate) closed: bool,
}

impl Default for WaitInfo {
    fn default() -> WaitInfo {
        WaitInfo { blocked: false, blocked_seq: 0, read_locks: Vec::new(), waiting_txns: Vec::new(), closed: true }
    }
}

/// Bucket locks a slot publishes one by one; beyond them it publishes
/// "every bucket" (an inserter then waits for it whatever bucket it hit).
pub(crate) const PUBLISHED_BUCKETS: usize = 16;

/// A published bucket lock: table (8 bits), index (4 bits) and bucket number
/// (51 bits), with the top bit set so that no key is 0.
#[inline]
pub(crate) fn bucket_key(table: u32, index: u8, bucket: u64) -> u64 {
    debug_assert!(table < 256 && index < 16 && bucket < 1 << 51);
    1 << 63 | (table as u64) << 55 | (index as u64) << 51 | bucket
}

/// One slot of the transaction table.
pub(crate) struct TxnSlot {
    /// Claimed by an open transaction (the slot's allocation flag).
    busy: AtomicBool,
    /// Id of the occupant; 0 when free.
    pub(crate) id: AtomicU64,
    /// `end_ts << 2 | state`.
    state: AtomicU64,
    /// Begin timestamp of the occupant (u64::MAX when free): the GC watermark input.
    pub(crate) begin_ts: AtomicU64,
    /// CommitDepCounter: unresolved commit dependencies.
    pub(crate) dep_counter: AtomicU32,
    /// AbortNow: set by a transaction this one depended on when it aborted.
    pub(crate) abort_now: AtomicBool,
    /// CommitDepSet. Its mutex also fences slot reuse against late reports.
    deps: Mutex<DepSet>,
    /// Generation counter for ids (only the occupant touches it).
    generation: AtomicU64,
    /// WaitForCounter and NoMoreWaitFors (see [`super::wait_for`]).
    pub(crate) wait_for: AtomicU64,
    /// Chosen as a deadlock victim: abort instead of waiting on.
    pub(crate) victim: AtomicBool,
    /// Preparing and decided: the occupant has passed validation, its
    /// certifier and its commit dependencies, and waits only for its log
    /// round (which can fail it only by stopping the database). A safe
    /// snapshot does not wait for such a writer (`protocol::mv::ssn::safe`).
    logging: AtomicBool,
    /// Blocked state, read locks and WaitingTxnList (section 4.4).
    pub(crate) waits: Mutex<WaitInfo>,
    /// Single-version locking: what the occupant waits for, while it waits
    /// (see `protocol::lock_1v`, deadlock detection).
    pub(crate) lock_wait: Mutex<Option<super::lock_wait::LockWait>>,
    /// Single-version locking: the id of the occupant while a deadlock
    /// check by any waiter has chosen it as the victim of the wait it
    /// publishes in `lock_wait`; 0 otherwise. Set and cleared only under
    /// that mutex (see `protocol::lock_1v`, deadlock detection).
    pub(crate) lock_victim: AtomicU64,
    /// Locking protocols: how many of the occupant's transactions in a row
    /// were deadlock victims (reset by a commit). Written and read only by
    /// the occupant, which publishes it with each wait (`LockWait::streak`).
    pub(crate) deadlock_streak: AtomicU32,
    /// BucketLockSet, published for inserters (the paper's LockLists, see
    /// `bucket_lockers`): how many bucket locks the occupant holds, and the
    /// first [`PUBLISHED_BUCKETS`] of them as `bucket_key`s. Written only by
    /// the occupant, without a lock.
    pub(crate) buckets_held: AtomicUsize,
    pub(crate) bucket_keys: [AtomicU64; PUBLISHED_BUCKETS],
    /// Per-slot statistics, summed on demand (no shared counter per commit).
    pub(crate) committed: AtomicU64,
    pub(crate) aborts: [AtomicU64; AbortReason::COUNT],
    /// Versions allocated and reclaimed by occupants of this slot.
    pub(crate) created: AtomicU64,
    pub(crate) freed: AtomicU64,
}

impl TxnSlot {
    /// Waits until the occupant's CommitDepCounter is zero (true) or its
    /// AbortNow is set (false): every commit dependency it took so far has
    /// been resolved (section 2.7). Returns at once when it has none.
    pub(crate) fn await_dependencies(&self) -> bool {
        let backoff = Backoff::new();
        // Timed from the first look that finds a dependency unresolved.
        let mut waiting = breakdown::Span::none();
        loop {
            // Acquire: pairs with the Release report of the dependency.
            if self.abort_now.load(Ordering::Acquire) {
                return false;
            }
            // Acquire: as above.
            if self.dep_counter.load(Ordering::Acquire) == 0 {
                return true;
            }
            waiting.start(Part::Wait);
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
    }
}

thread_local! {
    /// The slot this thread used last (a hint shared by all databases):
    /// reusing it keeps a thread on its own cache lines and, in the common
    /// case, claims a slot with one uncontended CAS.
    static SLOT_HINT: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// Spreads threads that have no hint yet over the table.
static NEXT_HINT: AtomicUsize = AtomicUsize::new(0);

/// The slot of transaction `id`.
#[inline]
pub(crate) fn slot_of(id: u64) -> u32 {
    (id & SLOT_MASK) as u32
}

/// The transaction table.
pub(crate) struct TxnTable {
    slots: Box<[CachePadded<TxnSlot>]>,
    /// Slots ever handed out: watermark scans stop here.
    high_water: AtomicUsize,
    /// Held by the one deadlock detector that may run at a time.
    pub(crate) detector: Mutex<()>,
    /// Counts transactions that block on wait-for dependencies.
    pub(crate) blockings: AtomicU64,
}

impl TxnTable {
    /// The number of slots a table made for `n` transactions has.
    pub(crate) fn slots_for(n: usize) -> usize {
        n.clamp(1, MAX_SLOTS)
    }

    pub(crate) fn new(n: usize) -> TxnTable {
        let n = Self::slots_for(n);
        let slots = (0..n)
            .map(|_| {
                CachePadded::new(TxnSlot {
                    busy: AtomicBool::new(false),
                    id: AtomicU64::new(0),
                    state: AtomicU64::new(TxnState::Aborted as u64),
                    begin_ts: AtomicU64::new(u64::MAX),
                    dep_counter: AtomicU32::new(0),
                    abort_now: AtomicBool::new(false),
                    deps: Mutex::new(DepSet::default()),
                    generation: AtomicU64::new(0),
                    wait_for: AtomicU64::new(0),
                    victim: AtomicBool::new(false),
                    logging: AtomicBool::new(false),
                    waits: Mutex::new(WaitInfo::default()),
                    lock_wait: Mutex::new(None),
                    lock_victim: AtomicU64::new(0),
                    deadlock_streak: AtomicU32::new(0),
                    buckets_held: AtomicUsize::new(0),
                    bucket_keys: std::array::from_fn(|_| AtomicU64::new(0)),
                    committed: AtomicU64::new(0),
                    created: AtomicU64::new(0),
                    freed: AtomicU64::new(0),
                    aborts: Default::default(),
                })
            })
            .collect();
        TxnTable { slots, high_water: AtomicUsize::new(0), detector: Mutex::new(()), blockings: AtomicU64::new(0) }
    }

    #[inline]
    pub(crate) fn slot(&self, i: u32) -> &TxnSlot {
        &self.slots[i as usize]
    }

    /// Takes a free slot and makes it Active with a fresh id.
    /// `begin` is called with the slot to publish the begin timestamp.
    ///
    /// `init` runs on the slot's number before the new id is published: the
    /// place for per-slot state kept outside this table (SSN's words) that
    /// must be reset before anyone can find the new occupant.
    pub(crate) fn open(&self, init: impl FnOnce(u32)) -> Result<(u32, u64), Error> {
        let i = self.claim()?;
        // SeqCst (load and update): if a watermark scan misses this slot, the
        // value that covers it was written after the scan's read of the clock
        // in the single total order, and so this transaction's begin stamp,
        // drawn later, is no smaller than the scan's bound (`min_active_begin`).
        if self.high_water.load(Ordering::SeqCst) <= i as usize {
            self.high_water.fetch_max(i as usize + 1, Ordering::SeqCst);
        }
        let s = self.slot(i);
        // Relaxed: the generation is private to the occupant.
        let gen = s.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let id = (gen << SLOT_BITS) | i as u64;
        debug_assert!(id < 1 << 54);
        // Relaxed: the Release store of `state` below orders these for readers.
        s.dep_counter.store(0, Ordering::Relaxed);
        s.abort_now.store(false, Ordering::Relaxed);
        s.victim.store(false, Ordering::Relaxed);
        init(i);
        wait_for::open(&s.wait_for, gen);
        state::publish(&s.id, &s.state, id);
        Ok((i, id))
    }

    /// Claims a free slot, trying this thread's last one first.
    fn claim(&self) -> Result<u32, Error> {
        let n = self.slots.len();
        let mut start = SLOT_HINT.with(|h| h.get());
        if start >= n {
            // Relaxed: only spreads threads; any value works.
            start = NEXT_HINT.fetch_add(1, Ordering::Relaxed) % n;
        }
        for k in 0..n {
            let i = (start + k) % n;
            let b = &self.slots[i].busy;
            // Relaxed peek, then Acquire on the claim: pairs with the Release
            // in `close`, so the previous occupant's last writes are visible.
            if !b.load(Ordering::Relaxed)
                && b.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                SLOT_HINT.with(|h| h.set(i));
                return Ok(i as u32);
            }
        }
        Err(Error::TooManyTransactions(n))
    }

    /// Takes the occupant of slot `i` out of the GC watermark before it
    /// collects garbage at its end: committed and postprocessed, or rolled
    /// back, it reads no version again, so none need stay for its snapshot
    /// (the collector's pointers are kept alive by its epoch pin, not by
    /// the watermark). Otherwise a collection holds back every collection,
    /// its own too, for as long as it runs, and with more threads than
    /// cores it is often descheduled in the middle of a long sweep.
    pub(crate) fn leave_watermark(&self, i: u32) {
        // Release: as in `close`; a scan that misses it only keeps more.
        self.slot(i).begin_ts.store(u64::MAX, Ordering::Release);
    }

    /// Terminates the occupant of slot `i` and frees the slot.
    pub(crate) fn close(&self, i: u32) {
        let s = self.slot(i);
        // Release: the finalised version words (postprocessing) happen before
        // readers can observe "gone" and reread them.
        s.begin_ts.store(u64::MAX, Ordering::Release);
        {
            // Under the DepSet lock so a late commit-dependency report (which
            // checks the id under this lock) never touches the next occupant.
            // Reset the CommitDepSet for the next occupant here, so `open`
            // needs no lock: registrants check the id (now 0) under this lock.
            let mut d = s.deps.lock();
            d.closed = false;
            d.dependents.clear();
            state::retire(&s.id);
        }
        // Release: the slot's state is reset before the next occupant claims it.
        s.busy.store(false, Ordering::Release);
    }

    /// Sets the state (and end timestamp) of the occupant of slot `i`.
    #[inline]
    pub(crate) fn set_state(&self, i: u32, st: TxnState, end_ts: u64) {
        state::set(&self.slot(i).state, st, end_ts)
    }

    /// Marks the occupant of slot `i` as waiting only for its log round
    /// (`on`), or no longer (before it becomes Committed or Aborted).
    #[inline]
    pub(crate) fn set_logging(&self, i: u32, on: bool) {
        // Release: a safe-snapshot taker that sees the mark sees the
        // occupant's decision (validation and certification) made before it.
        self.slot(i).logging.store(on, Ordering::Release);
    }

    /// True if the occupant of slot `i` waits only for its log round (see
    /// [`TxnTable::set_logging`]).
    #[inline]
    pub(crate) fn is_logging(&self, i: usize) -> bool {
        // Acquire: pairs with `set_logging`.
        self.slots.get(i).is_some_and(|s| s.logging.load(Ordering::Acquire))
    }

    /// Marks the occupant of slot `i` "Preparing, end timestamp pending"
    /// (encoded as Preparing with timestamp 0) just before it draws its end
    /// timestamp (see [`state::set_pending`] and `mv::occ`).
    #[inline]
    pub(crate) fn set_pending(&self, i: u32) {
        state::set_pending(&self.slot(i).state)
    }

    /// State and end timestamp of transaction `id`, or `Gone`.
    #[inline]
    pub(crate) fn peek(&self, id: u64) -> Peek {
        let Some(s) = self.slots.get((id & SLOT_MASK) as usize) else { return Peek::Gone };
        state::peek(&s.id, &s.state, id)
    }

    /// The occupant of slot `i` and what [`TxnTable::peek`] says of it, or
    /// `None` when the slot is free (SSN's readers bitmap names slots).
    #[inline]
    pub(crate) fn peek_slot(&self, i: usize) -> Option<(u64, Peek)> {
        let s = self.slots.get(i)?;
        // Acquire: pairs with the Release store of the id in `open`.
        let id = s.id.load(Ordering::Acquire);
        match id {
            0 => None,
            _ => Some((id, self.peek(id))),
        }
    }

    /// Registers a commit dependency of `me` (in slot `my_slot`) on `target`
    /// (section 2.7). Returns false when `target` has already reported its
    /// outcome or terminated; the caller then rereads the version word.
    pub(crate) fn register_dependency(&self, my_slot: u32, me: u64, target: u64) -> bool {
        let Some(t) = self.slots.get((target & SLOT_MASK) as usize) else { return false };
        let mut d = t.deps.lock();
        // Acquire: the id may only be trusted under the lock (see `close`).
        if d.closed || t.id.load(Ordering::Acquire) != target {
            return false;
        }
        // AcqRel: the increment must be visible before the target can report
        // (it reports only after taking this same lock, which orders it anyway).
        self.slot(my_slot).dep_counter.fetch_add(1, Ordering::AcqRel);
        d.dependents.push(me);
        true
    }

    /// Reports the outcome of the transaction in slot `i` to its dependents:
    /// decrement their CommitDepCounter on commit, set AbortNow on abort.
    pub(crate) fn report_outcome(&self, i: u32, committed: bool) {
        let list = {
            let mut d = self.slot(i).deps.lock();
            d.closed = true;
            if d.dependents.is_empty() {
                return; // the common case: nobody depends on us
            }
            std::mem::take(&mut d.dependents)
        };
        for dep in &list {
            let s = &self.slots[(dep & SLOT_MASK) as usize];
            let _g = s.deps.lock();
            // Acquire: checked under the dependent's lock; a dependent not
            // found has already aborted, and the report is dropped (section 2.7).
            if s.id.load(Ordering::Acquire) != *dep {
                continue;
            }
            if committed {
                // Release: pairs with the Acquire load in the dependent's wait.
                s.dep_counter.fetch_sub(1, Ordering::Release);
            } else {
                // Release: as above.
                s.abort_now.store(true, Ordering::Release);
            }
        }
    }

    /// Smallest begin timestamp of any open transaction, or `bound` if none is
    /// smaller. `bound` must be a counter value read (SeqCst) before the scan.
    pub(crate) fn min_active_begin(&self, bound: u64) -> u64 {
        // SeqCst, after the caller's SeqCst read of `bound`: a slot beyond `hw`
        // was opened after that read and will draw a begin timestamp >= bound.
        let hw = self.high_water.load(Ordering::SeqCst).max(1).min(self.slots.len());
        let mut m = bound;
        for s in &self.slots[..hw] {
            // SeqCst: pairs with the SeqCst provisional store in `begin`: either
            // we see it (the provisional value is <= the real begin timestamp),
            // or the transaction's later SeqCst fetch_add returns >= bound.
            m = m.min(s.begin_ts.load(Ordering::SeqCst));
        }
        m
    }

    /// Adds one incoming wait-for dependency to transaction `target`
    /// (it then cannot precommit until [`Self::release_wait_for`]).
    pub(crate) fn add_wait_for(&self, target: u64) -> WaitFor {
        let Some(s) = self.slots.get((target & SLOT_MASK) as usize) else { return WaitFor::Gone };
        wait_for::add(&s.wait_for, target >> SLOT_BITS)
    }

    /// Releases one wait-for dependency of `target` (nothing if it is gone).
    pub(crate) fn release_wait_for(&self, target: u64) {
        let Some(s) = self.slots.get((target & SLOT_MASK) as usize) else { return };
        wait_for::release(&s.wait_for, target >> SLOT_BITS)
    }

    /// Sets NoMoreWaitFors on slot `i` (end of normal processing).
    pub(crate) fn no_more_wait_fors(&self, i: u32) {
        wait_for::close(&self.slot(i).wait_for)
    }

    /// WaitForCounter of slot `i`.
    #[inline]
    pub(crate) fn wait_fors(&self, i: u32) -> u64 {
        wait_for::count(&self.slot(i).wait_for)
    }

    /// Appends to `out` the transactions holding a lock on `bucket` of index
    /// `index` of table `table`: the bucket's LockList, gathered from the
    /// published BucketLockSets. Called only after the caller saw the
    /// bucket's LockCount non-zero (Acquire), which every locker increments
    /// after publishing its entry. A locker that released meanwhile may be
    /// missed (it has precommitted: nothing to wait for); the occupant that
    /// follows it may be named (a needless wait, never a missed one).
    pub(crate) fn bucket_lockers(&self, table: u32, index: u8, bucket: u64, out: &mut Vec<u64>) {
        let key = bucket_key(table, index, bucket);
        for i in 0..self.high_water() as u32 {
            let s = self.slot(i);
            // Acquire: the entries are published before the count.
            let n = s.buckets_held.load(Ordering::Acquire);
            // Acquire (entries): as above.
            if n > PUBLISHED_BUCKETS || s.bucket_keys[..n].iter().any(|k| k.load(Ordering::Acquire) == key) {
                out.push(self.id_of(i));
            }
        }
    }

    /// Number of slots ever handed out (deadlock detection scans them).
    pub(crate) fn high_water(&self) -> usize {
        // Acquire: slots beyond it have never been occupied.
        self.high_water.load(Ordering::Acquire).min(self.slots.len())
    }

    /// Current id of the occupant of slot `i` (0 when free).
    pub(crate) fn id_of(&self, i: u32) -> u64 {
        // Acquire: pairs with the Release store in `open`.
        self.slot(i).id.load(Ordering::Acquire)
    }

    /// Sums per-slot statistics.
    pub(crate) fn totals(&self) -> (u64, AbortCounts, u64, u64) {
        let mut c = 0;
        let (mut created, mut freed) = (0, 0);
        let mut a = AbortCounts::default();
        for s in self.slots.iter() {
            // Relaxed: statistics only.
            c += s.committed.load(Ordering::Relaxed);
            created += s.created.load(Ordering::Relaxed);
            freed += s.freed.load(Ordering::Relaxed);
            for (x, n) in a.iter_mut().zip(&s.aborts) {
                *x += n.load(Ordering::Relaxed);
            }
        }
        (c, a, created, freed)
    }

    /// Number of open transactions.
    pub(crate) fn open_count(&self) -> usize {
        // Relaxed: statistics only.
        self.slots.iter().filter(|s| s.busy.load(Ordering::Relaxed)).count()
    }
}
