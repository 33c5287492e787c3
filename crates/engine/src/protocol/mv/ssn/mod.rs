//! SSN, the serial safety net (Wang, Johnson, Fekete, Pandis; VLDB
//! Journal 2017 / "Efficiently making (almost) any concurrency control
//! mechanism serializable"), over Hekaton's multi-version store, certifying
//! read committed or snapshot isolation (`Options::ssn_base`).
//!
//! SSN is a pre-commit certifier layered on a CC scheme that forbids lost
//! writes and dirty reads (section 3, Definition 3). Here the base is MV/O
//! at read committed or snapshot isolation ([`super::occ`]): first
//! updater wins, reads return committed versions (or those of a Preparing
//! transaction, behind a commit dependency), nothing blocks. SSN adds:
//!
//! * **Per version** (Table 1): `v.cstamp` is the Begin word; `v.prev` is
//!   the WriteSet's old version; **pstamp η(V)** and **sstamp π(V)** share
//!   one word (section 5.1: nobody needs η(V) once an overwrite of V has
//!   committed), and a **readers bitmap** (section 4.2.3). Both are two
//!   extra link words that SSN and SSI tables give every version:
//!
//!   ```text
//!    63  62                                                        0
//!   +---+-----------------------------------------------------------+
//!   | 0 | pstamp η(V): largest commit stamp of a reader or creator  |
//!   +---+-----------------------------------------------------------+
//!   | 1 | sstamp π(V): π of the overwriter, once it committed       |
//!   +---+-----------------------------------------------------------+
//!   ```
//!
//!   Raising η(V) is a `fetch_max`: a word holding π(V) is larger than any
//!   η, so a late reader's raise leaves it alone. The paper's "TID in
//!   v.sstamp" (an overwrite in flight) is the End word's write lock,
//!   which MV/O installs anyway.
//! * **Per transaction** (Table 1): c(T) is the end timestamp; the status
//!   is Hekaton's state (INFLIGHT = Active, COMMITTING = Preparing,
//!   including "timestamp pending"); η(T), π(T) and the non-overwritten
//!   read set live in `SsnLocal`; π(T) is published in the slot for
//!   readers that finalize against it.
//! * **Reads and writes** (Algorithm 1) with early exclusion-window checks:
//!   a read raises η(T) with c(V) and, if V's overwrite already committed,
//!   lowers π(T) with π(V); otherwise V joins the read set and the reader's
//!   bit is set in V's readers bitmap. A write raises η(T) with c(V) and
//!   η(V) of the version it replaces.
//! * **The latch-free parallel commit of Algorithm 3**: the transaction
//!   becomes Preparing (COMMITTING) before it draws c(T); it finalizes π by
//!   following the overwriters of its reads, waiting only on those that
//!   drew a smaller stamp and are still Preparing; it finalizes η through
//!   each replaced version's readers bitmap (waiting likewise) and η(V);
//!   aborts with [`AbortReason::ExclusionWindow`] if π(T) ≤ η(T); and after
//!   becoming Committed raises η(V) of its reads with `fetch_max`, writes
//!   π(T) into the versions it replaced and c(T) into the ones it created.
//!   No latch anywhere: every wait is on a transaction with a smaller
//!   commit stamp, so waits cannot form a cycle.
//! * **Deletes are versions too**: a lookup or scan that passes over a
//!   version ended by a transaction committed before its read time saw
//!   that transaction's delete (η), and an insert follows the key's last
//!   deleter (η): our store keeps no tombstones, so these edges are taken
//!   from the ended versions still in the chains.
//! * **Phantoms** (section 6): the coarse form of section 6.1's
//!   hierarchical tracking. Every index has pseudo-versions (`Gaps`): one
//!   per hash class of keys and key prefixes, read by scans of one key
//!   (lookups that found nothing, `get_by`) and by key ranges whose bounds
//!   share a prefix of 2, 3, 4 or 8 bytes (the prefix's class: the range
//!   holds only keys with that prefix), and one for other key ranges. A
//!   write that changes which rows an index holds (insert, delete, an index
//!   key changed) treats them as versions it replaces: it finalizes η
//!   against their readers that committed first, and — since a scan keeps
//!   no version through which it could find the writer — it lowers the π of
//!   the readers that will commit after it itself, through section 5.3's
//!   MSB-locked sstamp handshake: each transaction publishes its π in its
//!   slot, a writer lowers it by compare-and-swap, the owner locks it (the
//!   top bit) right before its exclusion-window test, and a writer that
//!   finds it locked aborts. A writer finds only the readers that set their
//!   bit before its bitmap load, though: a scan over snapshot isolation
//!   that reads a gap after an insert into it committed (a long transaction
//!   whose snapshot predates the insert) is never pushed to, and if the row
//!   is deleted again before the scanner commits, the repeated scan below
//!   finds nothing either: the edge scanner →rw inserter was lost (G2
//!   cycles in the stress test with safe snapshots, whose timing makes long
//!   updaters common; the hole itself needs no safe snapshot). So the scan
//!   takes that edge itself: a version it passes over that was created
//!   after its read time by a transaction U that committed (or is
//!   committing) first is U's write of the gap, and unless U drew its stamp
//!   after the scan's registration (then U found the bit and pushed), the
//!   scan lowers its π with π(U), read from U's slot, or, once U left it,
//!   with the worst case (an abort; the base's repeated scan would abort
//!   such a scanner anyway unless the row went away again). See
//!   `created_after`. Filtered scans also read the visible rows
//!   their filter rejects, so an update that makes a row match replaces a
//!   version read. And the base's own scan validation stays: a serializable
//!   scan is repeated at c(T) (MV/O's phantom detection) and a version that
//!   came into a scanned range after the scan aborts the scanner (`phantom`);
//!   over read committed, so does one that came and went again, so that what
//!   a scan found absent stays absent until the commit.
//! * **Safe snapshots** (section 5.2, the active mechanism, with
//!   `Options::safe_snapshot_interval`): see `SafeSnapshots`.
//! * **Read-mostly transactions** (section 5.3, with
//!   `Options::ssn_read_mostly_age`): a version created more than `age`
//!   commits before the reader began is "stale"; reading it sets the
//!   reader's bit in its readers bitmap (then checks the End word: see
//!   `read`) and nothing else — no read-set entry, no η(V) raise, no
//!   pre-commit work. The bit stays set. Each slot keeps the **last
//!   cstamp** of its occupants that made such reads (Figure 5), and an
//!   overwriter, for every bit of a version it replaces: counts the slot's
//!   last cstamp in η(T) (and aborts if it is above c(T): that reader
//!   committed after us without knowing of us), counts its occupant if it
//!   committed first, aborts if it committed after, and otherwise lowers
//!   the occupant's π through the **MSB-locked sstamp** (the handshake
//!   above). A tracked reader that clears a bit its slot's
//!   earlier untracked readers also set first raises η(V) to the last
//!   cstamp.
//! * **Read-only transactions over snapshot isolation** (section 5.2, the
//!   empty-write-set optimization of Ports and Grittner): a transaction
//!   that reaches commit with an empty WriteSet and ScanSet commits at its
//!   begin timestamp if none of its reads has an overwriter yet. It
//!   publishes "Preparing at c(T) = begin" before it looks, so an
//!   overwriter that drew a larger stamp waits for it and counts it in η;
//!   if an overwriter is there already it commits normally instead.
//!
//! Deliberate differences from the paper:
//!
//! * The readers bitmap has 64 bits: slot `i < 63` owns bit `i` and clears
//!   it when it ends; slots from 63 on share bit 63, which is never
//!   cleared (an overwriter then looks at all of them). Bits never
//!   undercount, and a stale bit only costs a look at a slot: the paper's
//!   own conservative fallback (η(V) is re-read after the bitmap, line 32).
//! * Phantom protection is per index and coarse (above), not Graefe's
//!   key/gap locks of section 6.2; an edge found by repeating a scan aborts
//!   the scanner rather than lowering its π. Slots from 63 on share a
//!   readers bit, so a gap writer lowers the π of every transaction in
//!   them: a false positive only with more than 63 transactions open.
//! * Finalizing η, a reader found in the bitmap that drew a smaller stamp
//!   and is still in its pre-commit is counted at once, as if it commits
//!   (Algorithm 3 waits for its outcome): a conservative η, and no wait —
//!   with more threads than cores a descheduled reader held up every
//!   writer of what it read (30 threads on 2 cores: 5-20K txn/s with the
//!   wait, 64-118K without). Finalizing π still waits (π(U) is known only
//!   when U is done), spinning, then yielding, then sleeping 20 µs at a time.
//! * The read-mostly threshold is an age in commits on the clock, not the
//!   paper's unspecified notion of "recently"; with it on, writers treat
//!   every readers bit as a possibly untracked reader (they cannot tell),
//!   so they push to and may abort on tracked readers too.
//!
//! SSI (Cahill et al., the paper's main comparison) runs on the same words
//! and the same commit; only the test differs: see [`ssi`].
//!
//! Files: this one (the certifier's per-transaction state `SsnLocal`,
//! `Cert`), `stamp.rs` (the stamp word), `read.rs` (reader bitmaps and
//! the read side), `gaps.rs` (pseudo-versions), `safe.rs` (safe
//! snapshots), `commit.rs` (the transaction hooks and the pre-commit).

use super::MvDb;
use super::MvTxn;
use crate::error::AbortReason;
use crate::storage::version::{VPtr, Version};
use crate::storage::word::{writer_of_end, Word, INFINITY};
use crate::sync::atomic::{fence, AtomicU64, Ordering};
use crate::table::Table;
use crate::txn::table::{slot_of, Peek, TxnState, TxnTable};
use crate::txn::{ScanKind, WriteEntry};
use crossbeam_utils::Backoff;
use crossbeam_utils::CachePadded;

mod commit;
mod gaps;
mod read;
mod safe;
pub mod ssi;
mod stamp;

pub(crate) use crate::index::gaps::{Gaps, PseudoVersion};
pub(crate) use gaps::*;
pub(crate) use read::*;
pub(crate) use safe::*;

// The stamp words' layout and their atomic operations live in `stamp`
// (model-checked: `tests/loom_models.rs`, `tests/shuttle_models.rs`).
// LOCKED is the lock bit of a slot's published π (section 5.3's MSB
// handshake): set by the owner right before its exclusion-window test; a
// writer that finds it set can no longer lower the owner's π.
use stamp::{Push, Stamp, LOCKED};

/// π(V) from the stamp word of a version whose overwrite has committed and
/// been finalized (its End word a timestamp): the overwriter wrote π(V)
/// before that End timestamp.
fn pi_of(s: Stamp) -> u64 {
    match s {
        Stamp::Pi(pi) => pi,
        Stamp::Eta(eta) => {
            debug_assert!(false, "a finalized overwrite leaves π(V) in the stamp word");
            eta
        }
    }
}
pub(crate) use stamp::{NONE, SSTAMP};

/// SSN's words of one transaction-table slot, published for other
/// transactions (the slot table itself knows no protocol).
#[derive(Default)]
pub(crate) struct SsnWords {
    /// π(T) of the occupant (SSI: the commit stamp of its oldest successor
    /// that committed first), published before it becomes Committed, for
    /// readers finalizing their own π (Algorithm 3 line 18: `u.sstamp`);
    /// reset to [`NONE`] by [`SsnSlots::open`] before the occupant's id is
    /// published, so that no push to the new occupant is lost.
    pub(crate) sstamp: AtomicU64,
    /// The read-mostly optimization: the largest commit stamp of the slot's
    /// occupants that made untracked reads (the paper's "last cstamp",
    /// section 5.3 and Figure 5). Never reset: their bits stay in the
    /// readers bitmaps of what they read.
    pub(crate) last_cstamp: AtomicU64,
    /// Statistics: reads the slot's occupants did not track.
    pub(crate) untracked: AtomicU64,
}

/// [`SsnWords`] for every slot of the transaction table.
pub(crate) struct SsnSlots(Box<[CachePadded<SsnWords>]>);

impl SsnSlots {
    pub(crate) fn new(n: usize) -> SsnSlots {
        SsnSlots((0..n).map(|_| CachePadded::new(SsnWords::default())).collect())
    }

    #[inline]
    pub(crate) fn of(&self, slot: u32) -> &SsnWords {
        &self.0[slot as usize]
    }

    /// Slot `slot` gets a new occupant: called by `TxnTable::open` before
    /// the occupant's id is published (Relaxed: that Release store orders
    /// it for whoever finds the new id, see `push`).
    pub(crate) fn open(&self, slot: u32) {
        self.of(slot).sstamp.store(NONE, Ordering::Relaxed);
    }

    /// Reads not tracked, over all slots (statistics).
    pub(crate) fn untracked(&self) -> u64 {
        // Relaxed: statistics only.
        self.0.iter().map(|w| w.untracked.load(Ordering::Relaxed)).sum()
    }
}
/// The readers-bitmap bit shared by slots 63 and up (never cleared).
const SHARED_BIT: u32 = 63;

/// Which certifier a transaction runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cert {
    /// None: plain MV/O, MV/L.
    Off,
    /// The serial safety net.
    Ssn,
    /// Serializable snapshot isolation.
    Ssi,
}

/// SSN's per-transaction state (Table 1), kept in the slot's sets.
pub(crate) struct SsnLocal {
    /// η(T) (`t.pstamp`); SSI: the largest commit stamp of a reader of a
    /// version this transaction replaced.
    pub(crate) pstamp: u64,
    /// π(T) (`t.sstamp`); SSI: the smallest commit stamp of an overwriter
    /// of a version read that committed first.
    pub(crate) sstamp: u64,
    /// SSI: a read's overwriter committed first with a successor that
    /// committed before it (this transaction is T1 of a dangerous structure).
    pub(crate) doomed: bool,
    /// `t.reads`: versions read that had no committed overwrite when read,
    /// each with our bit set in its readers bitmap.
    pub(crate) reads: Vec<VPtr>,
    /// Pseudo-versions read (scans), each with our bit set.
    pub(crate) gaps: Vec<*const PseudoVersion>,
    /// Test-only fault (`Faults::skip_validation`): track, never abort.
    pub(crate) lax: bool,
    /// Section 5.3: a version whose c(V) is below this is "stale" and read
    /// untracked (0: every read is tracked).
    pub(crate) stale_below: u64,
    /// Reads not tracked (section 5.3).
    untracked: u64,
    /// Scratch: readers of pseudo-versions we changed that will commit
    /// after us (slot, id): they get our π before we commit.
    push_to: Vec<(u32, u64)>,
    /// The clock read right after the latest gap registration (`u64::MAX`:
    /// none), see [`created_after`].
    gap_clock: u64,
}

impl Default for SsnLocal {
    fn default() -> SsnLocal {
        SsnLocal {
            pstamp: 0,
            sstamp: NONE,
            doomed: false,
            reads: Vec::new(),
            gaps: Vec::new(),
            lax: false,
            stale_below: 0,
            untracked: 0,
            push_to: Vec::new(),
            gap_clock: u64::MAX,
        }
    }
}

impl SsnLocal {
    pub(crate) fn clear(&mut self) {
        self.pstamp = 0;
        self.sstamp = NONE;
        self.doomed = false;
        self.reads.clear();
        self.gaps.clear();
        self.lax = false;
        self.stale_below = 0;
        self.untracked = 0;
        self.push_to.clear();
        self.gap_clock = u64::MAX;
    }

    /// The exclusion-window test (`verify_exclusion_or_abort`), or SSI's.
    #[inline]
    fn verdict(&self, cert: Cert) -> Result<(), AbortReason> {
        if self.lax {
            return Ok(());
        }
        match cert {
            Cert::Ssn if self.sstamp <= self.pstamp => Err(AbortReason::ExclusionWindow),
            Cert::Ssi => ssi::verdict(self),
            _ => Ok(()),
        }
    }

    /// The early check, for callers outside this module.
    #[inline]
    pub(crate) fn verdict_now(&self, cert: Cert) -> Result<(), AbortReason> {
        self.verdict(cert)
    }

    /// A read's overwriter committed with stamp `c` and published `s`
    /// (π for SSN): lower π(T) (Algorithm 1 line 10, Algorithm 3 line 18).
    #[inline]
    fn overwritten_by(&mut self, cert: Cert, c: u64, s: u64) {
        match cert {
            Cert::Ssn => self.sstamp = self.sstamp.min(s),
            Cert::Ssi => ssi::overwritten_by(self, c, s),
            Cert::Off => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// T's state after its reads and writes: `succ` are (c, π) of the
    /// overwriters of what it read that committed before it (back edges),
    /// `pred` the commit stamps of its predecessors that committed first.
    fn t(succ: &[(u64, u64)], pred: &[u64]) -> SsnLocal {
        let mut st = SsnLocal::default();
        for &(c, pi) in succ {
            st.overwritten_by(Cert::Ssn, c, pi);
        }
        for &p in pred {
            st.pstamp = st.pstamp.max(p);
        }
        st
    }

    #[test]
    fn figure_2a_a_cycle_violates_the_exclusion_window() {
        // T2's oldest successor T5 (through a back edge) committed at 5,
        // its predecessor T1 at 10: π(T2) = 5 ≤ η(T2) = 10.
        let st = t(&[(5, 5)], &[10]);
        assert_eq!(st.verdict(Cert::Ssn), Err(AbortReason::ExclusionWindow));
    }

    #[test]
    fn figure_2c_an_older_predecessor_is_safe() {
        // Tx's predecessor T3 committed at 3, before its oldest successor
        // T1 (at 8, itself with no older successor): η = 3 < π = 8.
        let st = t(&[(8, 8)], &[3]);
        assert_eq!(st.verdict(Cert::Ssn), Ok(()));
    }

    #[test]
    fn figure_2d_the_false_positive() {
        // T3's successor T1 committed at 4, its predecessor T2 at 6: no
        // cycle, but T2 might follow T1's successors: abort.
        let st = t(&[(4, 4)], &[6]);
        assert_eq!(st.verdict(Cert::Ssn), Err(AbortReason::ExclusionWindow));
    }

    #[test]
    fn pi_follows_successors_transitively() {
        // T's successor U committed at 9, but U's own oldest successor
        // committed at 2: π(T) = π(U) = 2, so a predecessor at 5 violates.
        let st = t(&[(9, 2)], &[5]);
        assert_eq!(st.sstamp, 2);
        assert_eq!(st.verdict(Cert::Ssn), Err(AbortReason::ExclusionWindow));
        // With no successor at all, π is infinite: anything commits.
        assert_eq!(t(&[], &[u64::MAX >> 2]).verdict(Cert::Ssn), Ok(()));
    }

    #[test]
    fn stamp_words_keep_pi_over_a_late_eta_raise() {
        // A reader's late fetch_max cannot overwrite π(V) (flagged, larger).
        let w = AtomicU64::new(SSTAMP | 7);
        w.fetch_max(1_000_000, Ordering::Relaxed);
        assert_eq!(w.load(Ordering::Relaxed), SSTAMP | 7);
        let w = AtomicU64::new(40);
        w.fetch_max(50, Ordering::Relaxed);
        assert_eq!(w.load(Ordering::Relaxed), 50);
    }
}
