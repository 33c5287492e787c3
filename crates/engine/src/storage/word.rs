//! The 64-bit Begin and End words of a version (Hekaton thesis section 4.3.1).
//!
//! ```text
//!  63  62                                                         0
//! +---+------------------------------------------------------------+
//! | 0 |                 timestamp (63 bits)                        |   a timestamp
//! +---+------------------------------------------------------------+
//! | 1 |    transaction id (54 bits used: 42-bit generation,        |   a transaction
//! |   |    12-bit transaction-table slot)                          |   is changing it
//! +---+------------------------------------------------------------+
//! ```
//!
//! The flag says whether a transaction is currently changing this end of the
//! visibility interval. Transaction ids fit in 54 bits so that MV/L can later
//! pack its record lock (NoMoreReadLocks, ReadLockCount, WriteLock) next to
//! them, exactly as section 4.1.1 of the paper lays out.
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

/// The decoded content of a Begin or End word.
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
            Word::Txn(w & !TXN_FLAG)
        } else {
            Word::Ts(w)
        }
    }
}

/// Encodes a transaction id.
#[inline]
pub fn txn_word(id: u64) -> u64 {
    debug_assert!(id != 0 && id < (1 << 54), "transaction ids are 54-bit and non-zero");
    id | TXN_FLAG
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        assert_eq!(Word::decode(42), Word::Ts(42));
        assert_eq!(Word::decode(INFINITY), Word::Ts(INFINITY));
        assert_eq!(Word::decode(txn_word(7)), Word::Txn(7));
        assert_eq!(Word::decode(txn_word((1 << 54) - 1)), Word::Txn((1 << 54) - 1));
    }
}
