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
