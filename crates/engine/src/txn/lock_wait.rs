//! What a transaction blocked on a key lock waits for (single-version
//! locking, Hekaton section 5), published in its transaction-table slot
//! while it waits (and only then): the input of deadlock detection, which
//! reads the waits of every blocked transaction. The table holds it; the
//! protocol fills it and searches it (`protocol::lock_1v::wait`).

use crate::index::key_locks::LockMode;
use crate::key::Key;

/// What a waiting locking transaction waits for, published in its slot
/// while it waits (and only then): the input of deadlock detection.
pub(crate) struct LockWait {
    /// The waiter's id.
    pub(crate) id: u64,
    /// Which of the waiter's waits this is (counted per transaction): a
    /// deadlock check that chose the waiter as a victim marks it only if
    /// the wait it saw is still the one published.
    pub(crate) seq: u32,
    /// How many deadlocks in a row have chosen the waiter's slot as their
    /// victim (`TxnSlot::deadlock_streak` when the wait began): a cycle
    /// spares the members with the longest streak.
    pub(crate) streak: u32,
    pub(crate) on: WaitOn,
}

/// The object of a wait.
pub(crate) enum WaitOn {
    /// A lock word (its address), in a mode; `upgrade`: from our S lock.
    Lock { word: usize, mode: LockMode },
    /// Key-range locks of others covering keys we link ((table, index, key)).
    Ranges(Vec<(u32, usize, Key)>),
}
