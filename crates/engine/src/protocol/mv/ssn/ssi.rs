//! SSI, serializable snapshot isolation (Cahill, Röhm, Fekete, SIGMOD 2008;
//! Ports and Grittner, VLDB 2012), the SSN paper's main comparison (its
//! section 2 and section 8, where ERMIA runs SSI with the same parallel
//! commit as SSN).
//!
//! SSI runs snapshot isolation (MV/O at `Snapshot`) and forbids the
//! *dangerous structure* T1 →rw T2 →rw T3 in which T3 committed first
//! (T1 may be T3: write skew). An rw edge T →rw U means T read a version
//! that U replaced. This module is only the test: the reads, the readers
//! bitmaps, the stamps and the latch-free commit are SSN's
//! ([`super`]), with the words read differently:
//!
//! * `sstamp` of a transaction T is **out(T)**: the smallest commit stamp
//!   of a transaction that replaced something T read and committed before
//!   T (T →rw T3, T3 committed first). It is published in T's slot and, once
//!   T committed, written into the versions T replaced — where a later
//!   reader finds it.
//! * `pstamp` of T is **in(T)**: the largest commit stamp of a transaction
//!   that read something T replaced and committed before T (T1 →rw T). η(V)
//!   of a version is the largest commit stamp of its committed readers (an
//!   SSI version does not count its creator, which is no rw edge).
//!
//! T aborts with [`AbortReason::DangerousStructure`] at commit, or as soon
//! as it is known, when
//!
//! 1. **T is the pivot**: out(T) ≤ in(T). Some T3 committed first, no later
//!    than some T1 that read what T replaced (T1 = T3 is write skew). A T1
//!    still running when T commits is not counted; it is caught by rule 2
//!    when it commits.
//! 2. **T is T1 and the pivot already committed**: T read a version whose
//!    overwriter T2 committed before T with out(T2) finite: T2 had a T3
//!    that committed before T2, so before T too.
//!
//! A scan (or a lookup that found nothing) that passes over a row inserted
//! after its snapshot by a transaction U that committed first has the edge
//! T →rw U, taken like an overwrite of a version read (out(T) ≤ c(U), rule
//! 2 if out(U) is finite — or unknown because U has left its slot): see
//! the phantoms in [`super`] (section 6 of the SSN paper).
//!
//! Deliberate differences from Cahill's SIREAD locks: reads are tracked by
//! SSN's readers bitmaps and η(V), so a reader that committed long before
//! a writer began still counts in in(T) (it cannot form a dangerous
//! structure: its T3 would have committed before T began, and T's snapshot
//! would have seen T3's write); this costs no false abort because such a
//! T3 cannot be an out-edge of T under snapshot isolation. The read-only
//! rule of Ports and Grittner (a read-only T1 that took its snapshot before
//! T3 committed is harmless) is not used.

use super::{SsnLocal, NONE};
use crate::error::AbortReason;

/// The test at every step: rule 1 (out ≤ in) or rule 2 (doomed).
#[inline]
pub(crate) fn verdict(st: &SsnLocal) -> Result<(), AbortReason> {
    if st.doomed || st.sstamp <= st.pstamp {
        Err(AbortReason::DangerousStructure)
    } else {
        Ok(())
    }
}

/// A version we read was replaced by a transaction that committed first,
/// with stamp `c` and out-stamp `s`.
#[inline]
pub(crate) fn overwritten_by(st: &mut SsnLocal, c: u64, s: u64) {
    st.sstamp = st.sstamp.min(c);
    if s != NONE {
        st.doomed = true; // rule 2: it had a T3 that committed before it
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_skew_is_a_pivot_and_an_out_edge_alone_is_not() {
        // T read x, replaced by T3 (committed at 10); nobody read what T wrote.
        let mut st = SsnLocal::default();
        overwritten_by(&mut st, 10, NONE);
        assert_eq!(verdict(&st), Ok(()));
        // T1 = T3 read what T replaced (committed at 10): write skew.
        st.pstamp = 10;
        assert_eq!(verdict(&st), Err(AbortReason::DangerousStructure));
        // A T1 that committed before T3: no dangerous structure.
        st.pstamp = 8;
        assert_eq!(verdict(&st), Ok(()));
    }

    #[test]
    fn a_committed_pivot_dooms_its_reader() {
        let mut st = SsnLocal::default();
        overwritten_by(&mut st, 20, 12); // T2 at 20 had a T3 at 12
        assert_eq!(verdict(&st), Err(AbortReason::DangerousStructure));
    }
}
