//! The 64-bit Begin and End words of a version (Hekaton thesis section 4.3.1,
//! with the record lock of VLDB 2011 section 4.1.1 in the End word).
//!
//! ```text
//!  63  62                                                         0
//! +---+------------------------------------------------------------+
//! | 0 |                 timestamp (63 bits)                        |   a timestamp
//! +---+------------------------------------------------------------+
//!
//!  63  62   61      54 53                                         0
//! +---+----+----------+--------------------------------------------+
//! | 1 |NMRL| ReadLock |  WriteLock: transaction id (54 bits: 42-bit |   a record lock
//! |   |    |  Count   |  generation, 12-bit slot), or all ones     |   (End word only)
//! +---+----+----------+--------------------------------------------+
//! ```
//!
//! Bit 63 is the paper's ContentType. A Begin word with it set holds the id
//! of the transaction that created the version (bits 54-62 are zero). An End
//! word with it set is a RecordLock: NoMoreReadLocks (NMRL, bit 62),
//! ReadLockCount (8 bits) and WriteLock — the id of the transaction that
//! updated or deleted the version, or [`NO_WRITER`] when the version is only
//! read locked. Locks sit only on latest versions. An End word locked by a
//! writer alone reads exactly like MV/O's write lock (`TXN_FLAG | id`), so the
//! optimistic and pessimistic schemes share one layout (section 4.5).
//!
//! End timestamps (the stamps written into Begin and End words) are even and
//! unique, drawn by incrementing the clock by two; read times — begin
//! timestamps and read-committed "now" — are odd clock readings between
//! stamps, so a read time never equals a commit time and the paper's strict
//! test `Begin < RT < End` needs no tie-break.
//!
//! The End word's transitions — read lock, its release, write lock, the
//! abort's reset and postprocessing's timestamps — are the functions at the
//! end of this file, on atomics from `crate::sync`, so that the model tests
//! (`tests/loom_models.rs`) check the very code the protocols call.

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::Backoff;

/// The flag bit: set when the word holds a transaction id.
pub const TXN_FLAG: u64 = 1 << 63;
/// "Infinity": the End of a latest version, or the Begin of a garbage version.
pub const INFINITY: u64 = TXN_FLAG - 1;

/// Bits of the WriteLock field (and of a transaction id).
pub const ID_MASK: u64 = (1 << 54) - 1;
/// WriteLock value meaning "not write locked" (the paper's infinity).
pub const NO_WRITER: u64 = ID_MASK;
/// NoMoreReadLocks: set when the last read lock on a write-locked version
/// is released; no read lock is granted after it.
pub const NO_MORE_READ_LOCKS: u64 = 1 << 62;
/// Shift and mask of ReadLockCount.
const COUNT_SHIFT: u32 = 54;
const COUNT_MASK: u64 = 0xff << COUNT_SHIFT;
/// Most read locks a version can hold.
pub const MAX_READ_LOCKS: u64 = 255;

/// The decoded content of a Begin or End word. A lock word whose WriteLock
/// is [`NO_WRITER`] decodes as `Ts(INFINITY)`: for visibility and
/// updatability a read-locked version is simply a latest version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Word {
    /// A timestamp (possibly [`INFINITY`]).
    Ts(u64),
    /// The id of the transaction changing this end of the interval.
    Txn(u64),
}

impl Word {
    /// Decodes a raw word.
    #[inline]
    pub fn decode(w: u64) -> Word {
        if w & TXN_FLAG != 0 {
            match w & ID_MASK {
                NO_WRITER => Word::Ts(INFINITY),
                id => Word::Txn(id),
            }
        } else {
            Word::Ts(w)
        }
    }
}

/// Encodes a transaction id.
#[inline]
pub fn txn_word(id: u64) -> u64 {
    debug_assert!(id != 0 && id < NO_WRITER, "transaction ids are 54-bit, non-zero, and not NO_WRITER");
    id | TXN_FLAG
}

/// The RecordLock fields of an End word (section 4.1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordLock {
    /// NoMoreReadLocks.
    pub no_more_read_locks: bool,
    /// ReadLockCount.
    pub read_locks: u64,
    /// WriteLock: the writer's id, or [`NO_WRITER`].
    pub writer: u64,
}

impl RecordLock {
    /// The lock of a latest version nobody has locked.
    pub const FREE: RecordLock = RecordLock { no_more_read_locks: false, read_locks: 0, writer: NO_WRITER };

    /// The lock held in End word `w`: `None` for a finite timestamp (an old
    /// version, which is never locked); [`RecordLock::FREE`] for INFINITY.
    #[inline]
    pub fn of(w: u64) -> Option<RecordLock> {
        if w & TXN_FLAG == 0 {
            return (w == INFINITY).then_some(RecordLock::FREE);
        }
        Some(RecordLock {
            no_more_read_locks: w & NO_MORE_READ_LOCKS != 0,
            read_locks: (w & COUNT_MASK) >> COUNT_SHIFT,
            writer: w & ID_MASK,
        })
    }

    /// Encodes the lock as an End word; a lock with nothing held (not even
    /// a read lock: NoMoreReadLocks alone guards nobody) is INFINITY again,
    /// so an unlocked latest version always looks the same.
    #[inline]
    pub fn word(self) -> u64 {
        debug_assert!(self.read_locks <= MAX_READ_LOCKS);
        debug_assert!(self.writer != 0 && self.writer <= NO_WRITER);
        if self.writer == NO_WRITER && self.read_locks == 0 {
            return INFINITY;
        }
        TXN_FLAG
            | if self.no_more_read_locks { NO_MORE_READ_LOCKS } else { 0 }
            | self.read_locks << COUNT_SHIFT
            | self.writer
    }

    /// True if a write lock is held.
    #[inline]
    pub fn write_locked(self) -> bool {
        self.writer != NO_WRITER
    }
}

/// The writer named by End word `w`, if it is write locked.
#[inline]
pub fn writer_of_end(w: u64) -> Option<u64> {
    RecordLock::of(w).filter(|l| l.write_locked()).map(|l| l.writer)
}

// ---- The End word's transitions -------------------------------------------
//
// Every compare-and-swap that changes a record lock lives below, so that the
// model tests (`tests/loom_models.rs`) explore exactly the code the engine
// runs. What the transitions need of the transaction table (a writer's
// wait-for dependencies) comes in as closures.

/// The answer of a writer's wait-for word to a reader that would hold it up
/// (the first read lock on a write-locked version, section 4.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hold {
    /// Counted: the writer cannot precommit until it is released.
    Added,
    /// The writer has set NoMoreWaitFors: the reader must abort.
    Refused,
    /// The writer has terminated; its postprocessing rewrites the word.
    Gone,
}

/// Outcome of [`read_lock`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadLocked {
    /// Read locked: one count is ours until [`release_read_lock`].
    Yes,
    /// Write locked by the reader itself: stable, and nothing to release.
    Own,
    /// The word holds a finite timestamp: the version is no longer latest.
    NotLatest,
    /// Refused by NoMoreReadLocks or a full ReadLockCount.
    Refused,
    /// Refused by the writer's NoMoreWaitFors.
    WaitFor,
}

/// Takes a read lock in End word `end` for transaction `me` (section
/// 4.2.1). The first read lock on a write-locked version holds its writer
/// up: `hold(writer)` counts that dependency before the lock is visible,
/// and `unhold(writer)` takes it back when the CAS then fails.
pub(crate) fn read_lock(
    end: &AtomicU64,
    me: u64,
    mut hold: impl FnMut(u64) -> Hold,
    mut unhold: impl FnMut(u64),
) -> ReadLocked {
    let backoff = Backoff::new();
    // Acquire: see the End word's latest content (and a writer's history).
    let mut raw = end.load(Ordering::Acquire);
    loop {
        let Some(l) = RecordLock::of(raw) else { return ReadLocked::NotLatest };
        if l.writer == me {
            return ReadLocked::Own; // our own write lock keeps the version stable
        }
        if l.no_more_read_locks || l.read_locks == MAX_READ_LOCKS {
            return ReadLocked::Refused;
        }
        // The first read lock on a write-locked version makes its writer wait.
        let imposes = l.write_locked() && l.read_locks == 0;
        if imposes {
            match hold(l.writer) {
                Hold::Added => {}
                Hold::Refused => return ReadLocked::WaitFor,
                Hold::Gone => {
                    // The writer has finished; its postprocessing rewrites
                    // the word in a moment.
                    backoff.snooze();
                    // Acquire: as above.
                    raw = end.load(Ordering::Acquire);
                    continue;
                }
            }
        }
        let new = RecordLock { read_locks: l.read_locks + 1, ..l };
        debug_assert!(new.read_locks <= MAX_READ_LOCKS);
        // AcqRel: acquire as above; release so that a detector that reads
        // our lock sees it in place before our WaitInfo names the version.
        match end.compare_exchange(raw, new.word(), Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return ReadLocked::Yes,
            Err(now) => {
                if imposes {
                    unhold(l.writer);
                }
                raw = now;
            }
        }
    }
}

/// Releases one read lock held in End word `end`. The last one on a
/// write-locked version sets NoMoreReadLocks and returns the writer, whose
/// wait-for dependency the caller then releases.
pub(crate) fn release_read_lock(end: &AtomicU64) -> Option<u64> {
    // Relaxed: the CAS decides.
    let mut raw = end.load(Ordering::Relaxed);
    loop {
        let l = RecordLock::of(raw).expect("a read-locked version stays the latest one");
        debug_assert!(l.read_locks > 0, "releasing a read lock nobody holds");
        let last = l.write_locked() && l.read_locks == 1;
        let new = if last {
            RecordLock { no_more_read_locks: true, read_locks: 0, writer: l.writer }
        } else {
            RecordLock { read_locks: l.read_locks - 1, ..l }
        };
        // Release: our reads of the version happen before the writer we let
        // go can commit over it.
        match end.compare_exchange(raw, new.word(), Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return last.then_some(l.writer),
            Err(now) => raw = now,
        }
    }
}

/// Outcome of [`write_lock`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Our lock word is in place.
    Won,
    /// The word changed but may still be updatable (an aborted writer reset
    /// it, or read locks came and went): decide again from a fresh look.
    Retry,
    /// Another writer got there first, or the version was replaced.
    Lost,
}

/// Write-locks End word `end` (section 2.6; section 4.5 rule 1): swaps the
/// updatable word `expected` (INFINITY, a read-locked word, or one naming an
/// aborted writer) for our lock word `new`, which keeps the read locks of
/// others. Of writers racing for one version exactly one wins.
pub(crate) fn write_lock(end: &AtomicU64, expected: u64, new: u64) -> Claim {
    debug_assert!(RecordLock::of(new).is_some_and(RecordLock::write_locked), "a write lock names its writer");
    // AcqRel: acquire the End word's history (an aborted writer's reset),
    // release our claim to readers that check the End word. Acquire on
    // failure: the fresh word is decided on.
    match end.compare_exchange(expected, new, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Claim::Won,
        Err(now) if matches!(Word::decode(now), Word::Txn(_) | Word::Ts(INFINITY)) => Claim::Retry,
        Err(_) => Claim::Lost,
    }
}

/// Drops the write lock of aborted writer `me` from End word `end`, keeping
/// the read locks; returns how many read locks the word held then (`None`
/// if it did not name `me`). A word no longer naming `me` was taken over by
/// a writer that saw the abort: it is left alone.
pub(crate) fn release_write_lock(end: &AtomicU64, me: u64) -> Option<u64> {
    // Relaxed load: the CAS decides.
    let mut raw = end.load(Ordering::Relaxed);
    while writer_of_end(raw) == Some(me) {
        let l = RecordLock::of(raw).expect("a write-locked word is a lock");
        let reset = RecordLock { no_more_read_locks: false, writer: NO_WRITER, ..l }.word();
        // Release: a later writer that sees the reset sees our abort (or
        // our rollback to a savepoint).
        match end.compare_exchange(raw, reset, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return Some(l.read_locks),
            Err(now) => raw = now,
        }
    }
    None
}

/// Turns the write lock of `me` in End word `end` into a read lock of
/// `me`'s, keeping the others' read locks: a claim of `get_for_update` that
/// no write used becomes the read it was (section 4.1.1's lock kept until
/// the end timestamp is drawn, as a pessimistic reader's). Returns how many
/// read locks others held then (the caller owes itself the wait-for
/// dependency their last release would have returned, as in
/// [`release_write_lock`]); `None` if the word no longer names `me` or the
/// count is full.
pub(crate) fn downgrade_write_lock(end: &AtomicU64, me: u64) -> Option<u64> {
    // Relaxed load: the CAS decides.
    let mut raw = end.load(Ordering::Relaxed);
    loop {
        let l = RecordLock::of(raw).filter(|l| l.writer == me)?;
        if l.read_locks == MAX_READ_LOCKS {
            return None;
        }
        let new = RecordLock { no_more_read_locks: false, read_locks: l.read_locks + 1, writer: NO_WRITER }.word();
        // Release: as in `release_write_lock`, a writer that sees the word
        // without our write lock sees what we did before.
        match end.compare_exchange(raw, new, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return Some(l.read_locks),
            Err(now) => raw = now,
        }
    }
}

/// Postprocessing of a committed writer (section 3.3): End word `end`,
/// write-locked by it, becomes its end timestamp `ts`. A plain store: no
/// read lock is left (the writer waited for its wait-for dependencies with
/// NoMoreWaitFors set) and none can be taken (a reader would have to hold
/// the writer up, which NoMoreWaitFors refuses, or NoMoreReadLocks is set).
pub(crate) fn finalize_end(end: &AtomicU64, ts: u64) {
    debug_assert!(ts & TXN_FLAG == 0 && ts != INFINITY, "an end timestamp is a finite timestamp");
    debug_assert!(
        // Relaxed: a check of what only the writer can still change.
        RecordLock::of(end.load(Ordering::Relaxed)).is_some_and(|l| l.read_locks == 0),
        "a committing writer holds the only lock on the versions it replaces"
    );
    // Release: readers that see the stamp see everything the writer did.
    end.store(ts, Ordering::Release);
}

/// Postprocessing of a committed creator: Begin word `begin`, which holds
/// its id, becomes its end timestamp `ts`. A reader that still finds the id
/// peeks at the creator's state (Committed with `ts`, or gone and the word
/// rewritten): either way it decides on `ts`.
pub(crate) fn finalize_begin(begin: &AtomicU64, ts: u64) {
    debug_assert!(ts & TXN_FLAG == 0 && ts != INFINITY, "an end timestamp is a finite timestamp");
    // Release: readers that see the stamp see the version's contents.
    begin.store(ts, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        assert_eq!(Word::decode(42), Word::Ts(42));
        assert_eq!(Word::decode(INFINITY), Word::Ts(INFINITY));
        assert_eq!(Word::decode(txn_word(7)), Word::Txn(7));
        assert_eq!(Word::decode(txn_word((1 << 54) - 2)), Word::Txn((1 << 54) - 2));
    }

    #[test]
    fn record_locks_round_trip_and_decode_for_visibility() {
        // A writer alone: exactly MV/O's write lock.
        let w = RecordLock { writer: 7, ..RecordLock::FREE };
        assert_eq!(w.word(), txn_word(7));
        assert_eq!(RecordLock::of(txn_word(7)), Some(w));
        // Read locked only: a latest version for visibility.
        let r = RecordLock { read_locks: 3, ..RecordLock::FREE };
        assert_eq!(Word::decode(r.word()), Word::Ts(INFINITY));
        assert_eq!(RecordLock::of(r.word()), Some(r));
        assert_eq!(writer_of_end(r.word()), None);
        // Both, with NoMoreReadLocks: the writer's id decodes.
        let b = RecordLock { no_more_read_locks: true, read_locks: MAX_READ_LOCKS, writer: (1 << 54) - 2 };
        assert_eq!(RecordLock::of(b.word()), Some(b));
        assert_eq!(Word::decode(b.word()), Word::Txn((1 << 54) - 2));
        assert_eq!(writer_of_end(b.word()), Some((1 << 54) - 2));
        // Nothing held is INFINITY; an old version has no lock.
        assert_eq!(RecordLock::FREE.word(), INFINITY);
        assert_eq!(RecordLock::of(INFINITY), Some(RecordLock::FREE));
        assert_eq!(RecordLock::of(42), None);
        // NoMoreReadLocks guards a writer's wait; with no writer and no
        // reader left it means nothing, and the word is INFINITY again.
        let n = RecordLock { no_more_read_locks: true, ..RecordLock::FREE };
        assert_eq!(n.word(), INFINITY);
    }
}
