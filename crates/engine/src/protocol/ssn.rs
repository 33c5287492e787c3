//! SSN, the serial safety net (Wang, Johnson, Fekete, Pandis; VLDB
//! Journal 2017 / "Efficiently making (almost) any concurrency control
//! mechanism serializable"), over Hekaton's multi-version store, certifying
//! read committed or snapshot isolation (`Options::ssn_base`).
//!
//! SSN is a pre-commit certifier layered on a CC scheme that forbids lost
//! writes and dirty reads (section 3, Definition 3). Here the base is MV/O
//! at read committed or snapshot isolation ([`super::mv_occ`]): first
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
//! and the same commit; only the test differs: see [`super::ssi`].

use super::mv_occ::Transaction;
use crate::error::AbortReason;
use crate::storage::table::Table;
use crate::storage::version::{VPtr, Version};
use crate::storage::word::{writer_of_end, Word, INFINITY};
use crate::txn::table::{Peek, TxnState, TxnTable};
use crate::txn::{ScanKind, WriteEntry};
use crossbeam_utils::{Backoff, CachePadded};
use std::sync::atomic::{fence, AtomicU64, Ordering};

mod stamp;

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
/// Hash classes of keys with a pseudo-version each, per index.
pub(crate) const GAP_CLASSES: usize = 64;
/// The readers-bitmap bit shared by slots 63 and up (never cleared).
const SHARED_BIT: u32 = 63;

/// Snapshots kept in [`SafeSnapshots`]' ring.
const SAFE_RING: usize = 4;

/// Active safe snapshots (section 5.2): a read-only serializable
/// transaction reads, without any tracking, as of the latest snapshot
/// timestamp s, taken anew when the latest is older than
/// `Options::safe_snapshot_interval`. SSN treats a snapshot as a committed
/// transaction at s that read every row and every gap: an update
/// transaction that commits after s and replaces a version created before
/// s, or inserts, follows it (η ≥ s), and aborts if it also has a successor
/// as old as that (π ≤ s).
pub(crate) struct SafeSnapshots {
    /// The latest snapshot timestamp (0: none yet); also a lower bound of
    /// the GC watermark, so its versions stay.
    latest: AtomicU64,
    /// The last few snapshot timestamps, for an updater whose stamp is older
    /// than the latest: it needs the largest one below its stamp.
    ring: [AtomicU64; SAFE_RING],
    /// Takers, one at a time; the count of snapshots taken and when the
    /// latest was taken.
    taker: parking_lot::Mutex<(usize, Option<std::time::Instant>)>,
}

impl Default for SafeSnapshots {
    fn default() -> SafeSnapshots {
        SafeSnapshots { latest: AtomicU64::new(0), ring: Default::default(), taker: parking_lot::Mutex::new((0, None)) }
    }
}

impl SafeSnapshots {
    /// The snapshot timestamp a read-only transaction reads at: the latest,
    /// or a new one if the latest is older than `interval`.
    pub(crate) fn get(&self, clock: &AtomicU64, txns: &TxnTable, interval: std::time::Duration) -> u64 {
        let mut t = self.taker.lock();
        if let Some(at) = t.1 {
            if at.elapsed() < interval {
                // Relaxed: written under the same lock.
                return self.latest.load(Ordering::Relaxed);
            }
        }
        let slot = &self.ring[t.0 % SAFE_RING];
        // Publish a clock reading, then check the clock did not move: every
        // stamp drawn after the check is above the snapshot, and its owner
        // reads the ring after drawing it (SeqCst throughout), so it finds
        // the snapshot. A stamp drawn before the check is below it: the
        // snapshot reads its versions (behind a commit dependency if it is
        // still Preparing).
        let s = loop {
            let c = clock.load(Ordering::SeqCst);
            let s = c - 1; // odd: never a commit stamp
            slot.store(s, Ordering::SeqCst);
            self.latest.store(s, Ordering::SeqCst);
            if clock.load(Ordering::SeqCst) == c {
                break s;
            }
        };
        // A snapshot never aborts (section 5.2: it "will not participate in
        // any serial anomalies"). Yet a writer whose stamp is below s and
        // that is still Preparing may abort (its own certifier decides after
        // the stamp is drawn); a reader that read its versions speculatively
        // would then abort with it (a commit dependency). So the snapshot is
        // handed out only once every such writer has decided: a wait for
        // pre-commits already under way, at most once per interval, by the
        // taker alone (other takers wait on `taker`; writers never do).
        wait_decided_below(txns, s);
        t.0 += 1;
        t.1 = Some(std::time::Instant::now());
        s
    }

    /// The latest snapshot timestamp, 0 if none (a GC watermark bound).
    #[inline]
    pub(crate) fn latest(&self) -> u64 {
        // SeqCst: read before the watermark's slot scan.
        self.latest.load(Ordering::SeqCst)
    }

    /// The largest snapshot timestamp below commit stamp `c` (drawn by a
    /// SeqCst `fetch_add` before this call), `None` if there is none.
    #[inline]
    pub(crate) fn below(&self, c: u64) -> Option<u64> {
        // SeqCst: after our stamp's draw (see `get`).
        if self.latest.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let mut best = None;
        let mut any = false;
        for r in &self.ring {
            // SeqCst: as above.
            let s = r.load(Ordering::SeqCst);
            if s != 0 {
                any = true;
                if s < c && best.is_none_or(|b| s > b) {
                    best = Some(s);
                }
            }
        }
        // Every snapshot in the ring is newer (we were delayed across
        // several): one below c was overwritten; assume the newest possible.
        best.or(any.then(|| c - 1))
    }
}

/// Waits until no transaction Preparing with an end stamp below `s` is left
/// (one that still draws its stamp is waited out by `peek`). None can start:
/// every stamp drawn from now on is above `s` (see [`SafeSnapshots::get`]).
/// The slot of a stamp below `s` lies below the high water mark read here:
/// the slot was counted before its stamp was drawn, and our reading of the
/// clock saw that draw (the clock only changes by read-modify-writes, so the
/// reading synchronizes with it), which orders the count before this load.
fn wait_decided_below(txns: &TxnTable, s: u64) {
    for i in 0..txns.high_water() {
        let backoff = Backoff::new();
        while let Some((_, Peek::Preparing(ts))) = txns.peek_slot(i) {
            if ts > s {
                break; // not in the snapshot, whatever its outcome
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
    }
}

/// True if a transaction with options `o` reads a safe snapshot.
#[inline]
pub(crate) fn uses_safe_snapshot(db: &crate::Database, o: &crate::TxnOptions<'_>) -> bool {
    o.read_only
        && matches!(db.opts.protocol, crate::Protocol::Ssn | crate::Protocol::Ssi)
        && db.opts.safe_snapshot_interval.is_some()
}

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

/// A pseudo-version: what a scan reads instead of the rows it did not see.
#[derive(Default)]
pub(crate) struct PseudoVersion {
    /// η: largest commit stamp of a committed reader (never an sstamp).
    stamp: AtomicU64,
    /// Readers bitmap.
    readers: AtomicU64,
}

/// The pseudo-versions of one index.
pub(crate) struct Gaps {
    key: Box<[CachePadded<PseudoVersion>]>,
    range: CachePadded<PseudoVersion>,
}

impl Default for Gaps {
    fn default() -> Gaps {
        Gaps { key: (0..GAP_CLASSES).map(|_| CachePadded::default()).collect(), range: CachePadded::default() }
    }
}

/// Key-prefix lengths that name a range's gap: a range whose bounds share
/// the first `L` bytes (for the largest such `L` listed) holds only keys
/// with that prefix (byte order), so its gap is that prefix's class — a
/// TPC-C scan of one district's new orders does not meet inserts into
/// another district's. Other ranges read the whole index's gap.
const PREFIXES: [usize; 4] = [8, 4, 3, 2];

impl Gaps {
    /// The class of the key bytes `b` (a whole key, or a prefix).
    fn class(&self, b: &[u8]) -> &PseudoVersion {
        let h = crate::key::hash_bytes(b) ^ (b.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        &self.key[(h % GAP_CLASSES as u64) as usize]
    }

    /// The gap a scan of one key reads.
    fn of_key(&self, k: &crate::key::Key) -> &PseudoVersion {
        self.class(k.as_bytes())
    }

    /// The gap a scan of a key range reads.
    fn of_range(&self, lo: &std::ops::Bound<crate::key::Key>, hi: &std::ops::Bound<crate::key::Key>) -> &PseudoVersion {
        use std::ops::Bound::{Excluded, Included};
        let (Included(a) | Excluded(a), Included(b) | Excluded(b)) = (lo, hi) else { return &self.range };
        let (a, b) = (a.as_bytes(), b.as_bytes());
        let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        match PREFIXES.iter().find(|&&l| l <= common) {
            Some(&l) => self.class(&a[..l]),
            None => &self.range,
        }
    }

    /// Every gap a write that adds or removes index key `k` changes: the
    /// key's own, its prefixes', and the whole index's.
    fn of_write(&self, k: &crate::key::Key, mut f: impl FnMut(&PseudoVersion)) {
        let b = k.as_bytes();
        f(self.class(b));
        for &l in PREFIXES.iter().filter(|&&l| l < b.len()) {
            f(self.class(&b[..l]));
        }
        f(&self.range);
    }
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
            Cert::Ssi => super::ssi::verdict(self),
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
            Cert::Ssi => super::ssi::overwritten_by(self, c, s),
            Cert::Off => {}
        }
    }
}

/// The readers-bitmap bit of slot `slot`.
#[inline]
fn bit(slot: u32) -> u64 {
    1 << slot.min(SHARED_BIT)
}

/// The stamp word and readers bitmap of version `v`: the last two of its
/// link words (SSN and SSI tables add them after the links).
#[inline]
fn words(v: &Version) -> (&AtomicU64, &AtomicU64) {
    let n = v.n_links();
    (v.word(n - 2), v.word(n - 1))
}

/// Sets our bit in a readers bitmap (section 4.2.3's happens-before
/// argument). SeqCst: the bit precedes, in the single total order, our own
/// later draw of a commit stamp (a SeqCst `fetch_add`); so an overwriter
/// whose SeqCst load of the bitmap, made after it drew its stamp, misses
/// the bit drew a smaller stamp than we will — and we, committing later,
/// find it through the version's End word. A bit already set was set by
/// us earlier (or is the shared bit, which stays set).
#[inline]
fn register(readers: &AtomicU64, slot: u32) {
    let b = bit(slot);
    // Relaxed: only skips a redundant write (see above).
    if readers.load(Ordering::Relaxed) & b == 0 {
        readers.fetch_or(b, Ordering::SeqCst);
    }
}

/// Sets our bit for an untracked read (section 5.3), where the bit must
/// precede our End load in the single total order even when it was set
/// before (by an earlier read, an earlier occupant of our slot, or another
/// slot sharing bit 63).
#[inline]
fn register_untracked(readers: &AtomicU64, slot: u32) {
    let b = bit(slot);
    // Acquire: a bit seen set was set by a SeqCst read-modify-write that
    // then happens before our SeqCst End load, so it precedes the load in
    // the total order too.
    if readers.load(Ordering::Acquire) & b == 0 {
        readers.fetch_or(b, Ordering::SeqCst);
    }
}

/// Clears our bit (slots that own theirs), once our stamps are in place.
#[inline]
fn unregister(readers: &AtomicU64, slot: u32) {
    if slot < SHARED_BIT {
        // Release: a writer that sees the bit gone sees our η(V) raise.
        readers.fetch_and(!bit(slot), Ordering::Release);
    }
}

/// c(V): the commit stamp of the creator of `v`, which is visible to us
/// (committed, or Preparing behind a commit dependency).
#[inline]
pub(crate) fn cstamp_of(v: &Version, txns: &TxnTable) -> u64 {
    loop {
        // Acquire: the final stamp, if postprocessing wrote it.
        match Word::decode(v.begin.load(Ordering::Acquire)) {
            Word::Ts(ts) => return if ts == INFINITY { 0 } else { ts },
            Word::Txn(c) => match txns.peek(c) {
                Peek::Preparing(ts) | Peek::Committed(ts) => return ts,
                // Finalized meanwhile: reread the word.
                Peek::Gone => continue,
                Peek::Active | Peek::Aborted => return 0,
            },
        }
    }
}

/// Waits while transaction `id` is Preparing with a stamp below `bound`;
/// returns its commit stamp if it committed with one below `bound`.
///
/// The wait is short when every transaction has a core (the other is in its
/// pre-commit); with more threads than cores the other may be descheduled,
/// so after spinning and yielding a while the waiter sleeps, which leaves
/// the core to it.
fn committed_before(txns: &TxnTable, id: u64, bound: u64) -> Option<u64> {
    let backoff = Backoff::new();
    let mut yields = 0u32;
    loop {
        match txns.peek(id) {
            Peek::Preparing(c) if c < bound => {}
            Peek::Committed(c) if c < bound => return Some(c),
            _ => return None,
        }
        if !backoff.is_completed() {
            backoff.snooze();
        } else if yields < 16 {
            yields += 1;
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }
}

/// Algorithm 1, `ssn_read`: version `v` (of a table whose SSN words are at
/// `at`) was returned by the base CC to the transaction in slot `slot`.
#[inline]
#[allow(clippy::too_many_arguments)]
pub(crate) fn read(
    st: &mut SsnLocal,
    cert: Cert,
    txns: &TxnTable,
    slot: u32,
    my_word: u64,
    v: &Version,
) -> Result<(), AbortReason> {
    // Acquire: see the creator's final stamp if it wrote one.
    if v.begin.load(Ordering::Acquire) == my_word {
        return Ok(()); // our own version: reads of own writes are not tracked
    }
    let (stamp, readers) = words(v);
    let mut registered = false;
    if cert == Cert::Ssn {
        // η(T) with the w:r edge from the creator (line 4).
        let cv = cstamp_of(v, txns);
        st.pstamp = st.pstamp.max(cv);
        if cv < st.stale_below {
            // Section 5.3: a version not overwritten recently. Set our bit
            // first, then look at the End word, both SeqCst: an overwriter
            // locks the End word, fences and then loads the bitmap
            // (`ssn_precommit`), so either it finds our bit or we find its
            // lock (and track the read as usual).
            register_untracked(readers, slot);
            registered = true;
            // SeqCst: the other half of the handshake above.
            if Word::decode(v.end.load(Ordering::SeqCst)) == Word::Ts(INFINITY) {
                st.untracked += 1;
                return st.verdict(cert);
            }
        }
    }
    // Acquire: pairs with the overwriter's Release store of the End word,
    // made after it wrote π(V) into the stamp word.
    match Word::decode(v.end.load(Ordering::Acquire)) {
        Word::Ts(e) if e != INFINITY => {
            // Overwritten, and the overwrite committed and finalized: π(V)
            // is in place (lines 9-10).
            st.overwritten_by(cert, e, pi_of(stamp::read(stamp)));
        }
        _ => {
            // Not overwritten yet, or an overwrite in flight (the paper's
            // TID in v.sstamp): track it (line 7).
            if !registered {
                register(readers, slot);
            }
            st.reads.push(VPtr(v as *const Version as *mut Version));
        }
    }
    st.verdict(cert)
}

/// A lookup or scan at read time `rt` passed over `v`, which it could not
/// see: if `v` was ended (deleted or replaced) by a transaction that
/// committed before `rt`, the reader saw that transaction's write — the
/// absence of `v` — and takes it as a predecessor (η, the w:r edge of
/// Algorithm 1 line 4; a delete is a version too). SSI counts no w:r edges.
/// If `v` was created by a transaction that committed (or is committing)
/// after `rt`, that transaction is a successor (see [`created_after`]).
#[inline]
pub(crate) fn absent(st: &mut SsnLocal, cert: Cert, txns: &TxnTable, v: &Version, rt: u64) {
    if cert == Cert::Off {
        return;
    }
    created_after(st, cert, txns, v, rt);
    if cert != Cert::Ssn {
        return;
    }
    // Acquire: as for any End word we act on.
    let e = match Word::decode(v.end.load(Ordering::Acquire)) {
        Word::Ts(e) => e,
        Word::Txn(u) => match txns.peek(u) {
            Peek::Preparing(e) | Peek::Committed(e) => e,
            _ => return,
        },
    };
    if e < rt && e != INFINITY {
        st.pstamp = st.pstamp.max(e);
    }
}

/// A scan (or a lookup that found nothing) at read time `rt` passed over
/// `v`, created by U with c(U) > `rt`: the scan read the key's absence, which
/// U's insert replaced — an edge T →rw U (section 6: U wrote the gap's
/// pseudo-version we read). If U commits after us, U's η counts us. If U
/// committed first, π(U) must reach our π, and the gap alone does not
/// always carry it: U pushes its π to the gap's readers it finds in the
/// bitmap, but finds only those registered before its SeqCst bitmap load —
/// a scan that registered later (a long transaction reading the key after U
/// committed) was never pushed to, and when a later transaction deleted the
/// row before our commit the base's repeated scan finds nothing either.
///
/// `st.gap_clock` is the clock read (SeqCst) right after we registered the
/// gap: if U drew c(U) ≥ it, our clock load preceded U's draw, hence U's
/// bitmap load, in the single total order, so U found our bit (and pushed).
/// Otherwise we take the edge here: π(U) from U's slot (waiting while U is
/// Preparing, as the pre-commit does), or — when U already left its slot
/// and its π with it — the worst case, π(U) = 0 (abort; the base would
/// abort such a scanner anyway with `Phantom` unless the row was deleted
/// again before its commit).
fn created_after(st: &mut SsnLocal, cert: Cert, txns: &TxnTable, v: &Version, rt: u64) {
    loop {
        // Acquire: the final stamp, if postprocessing wrote it.
        let (cu, pi) = match Word::decode(v.begin.load(Ordering::Acquire)) {
            Word::Ts(b) => {
                if b == INFINITY || b <= rt || b >= st.gap_clock {
                    return; // aborted, visible, or U pushed to us
                }
                // U finished: its π is gone with its slot.
                st.overwritten_by(cert, b, 0);
                return;
            }
            Word::Txn(u) => match txns.peek(u) {
                // Not yet drawing its stamp: our register precedes (SeqCst)
                // its pending state, stamp and bitmap load; it finds us.
                Peek::Active | Peek::Aborted => return,
                Peek::Gone => continue,
                Peek::Preparing(cu) | Peek::Committed(cu) if cu <= rt || cu >= st.gap_clock => return,
                Peek::Preparing(_) | Peek::Committed(_) => {
                    let Some(cu) = committed_before(txns, u, NONE) else { continue };
                    let slot = txns.slot(crate::txn::table::slot_of(u));
                    // Acquire: published before the Committed state.
                    let s = slot.ssn_sstamp.load(Ordering::Acquire) & !LOCKED;
                    // Acquire: still U's, so `s` is U's π; if not, reread
                    // the version (its Begin word is a timestamp by now).
                    if slot.id.load(Ordering::Acquire) != u {
                        continue;
                    }
                    (cu, s)
                }
            },
        };
        st.overwritten_by(cert, cu, pi);
        return;
    }
}

/// Lowers the published π of transaction `id` in slot `s` to `value`: an
/// edge `id` →rw us that `id` cannot see (it scanned a gap we changed) and
/// that we commit before. False when that is not certain to take effect:
/// `id` already locked its π for its test (section 5.3's MSB handshake: the
/// writer then aborts), or it finished meanwhile and did not abort.
fn push(txns: &TxnTable, s: u32, id: u64, value: u64) -> bool {
    let slot = txns.slot(s);
    let fate = || matches!(txns.peek(id), Peek::Aborted);
    // Acquire: pairs with the Release id store of `open`.
    if slot.id.load(Ordering::Acquire) != id {
        return fate();
    }
    match stamp::lower_pi(&slot.ssn_sstamp, value) {
        Push::Locked => fate(),
        // Still `id`'s after the push (or the look): it will see the value.
        // Otherwise the word was a newer occupant's (harmless) and `id`'s
        // fate decides. Acquire: as above.
        Push::Lowered | Push::AlreadyLower => slot.id.load(Ordering::Acquire) == id || fate(),
    }
}

/// Registers a read of a pseudo-version (a scan of `kind`, section 6).
pub(crate) fn read_gap(st: &mut SsnLocal, slot: u32, gaps: &Gaps, kind: &ScanKind) {
    let pv = match kind {
        ScanKind::Eq(k) => gaps.of_key(k),
        ScanKind::Range(lo, hi) => gaps.of_range(lo, hi),
    };
    let p = pv as *const PseudoVersion;
    if st.gaps.last() == Some(&p) {
        return;
    }
    register(&pv.readers, slot);
    st.gaps.push(p);
}

impl<'db> Transaction<'db> {
    /// The empty-write-set read-only optimization over snapshot isolation
    /// (section 5.2, after Ports and Grittner): commit at c(T) = the begin
    /// timestamp. `None`: not applicable, commit normally.
    ///
    /// Safe when no read has an overwriter: we publish "Preparing at the
    /// begin timestamp" and fence before we look, so an overwriter that
    /// fenced later (and drew a larger stamp) finds us in its readers bitmap
    /// Preparing with the smaller stamp, waits for us and counts us in its
    /// η; one that fenced earlier has its write lock in place where we look,
    /// and we commit normally (with a fresh stamp, after it).
    pub(crate) fn ssn_read_only_commit(&mut self) -> Option<crate::Result<super::mv_occ::CommitInfo>> {
        let st = self.ssn();
        if st.sstamp != NONE || st.doomed {
            return None; // a read's overwrite committed: a back edge to weigh
        }
        let b = self.begin_ts;
        let txns = &self.db.txns;
        txns.set_state(self.slot, TxnState::Preparing, b);
        // SeqCst fence: our state store, then the End loads below; an
        // overwriter installs its write lock, fences, then looks for us (see
        // `ssn_precommit`): one of the two sees the other.
        fence(Ordering::SeqCst);
        let clean = st.reads.iter().all(|&VPtr(v)| {
            // SAFETY: as in `ssn_precommit`.
            let v = unsafe { &*v };
            // Relaxed: ordered by the fence above.
            Word::decode(v.end.load(Ordering::Relaxed)) == Word::Ts(INFINITY)
        });
        if !clean {
            return None;
        }
        // Take the lock on our π as the full commit would; a push means a
        // writer of a gap we read committed first: commit normally.
        if stamp::lock_pi(&self.slot().ssn_sstamp) != NONE {
            return None;
        }
        if !self.wait_for_dependencies() {
            return Some(Err(self.abort_with(AbortReason::CommitDependency)));
        }
        txns.set_state(self.slot, TxnState::Committed, b);
        self.ssn_release(Some(b));
        if self.recording {
            self.record_end(Some(b), crate::history::Outcome::Committed);
        }
        self.terminate();
        Some(Ok(super::mv_occ::CommitInfo { commit_ts: b, writes: 0 }))
    }

    /// SSN's state of this transaction.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) fn ssn(&self) -> &'db mut SsnLocal {
        &mut self.local().ssn
    }

    /// `ssn_read` for a version found by a lookup.
    #[inline]
    pub(crate) fn ssn_read(&mut self, v: *mut Version) -> crate::Result<()> {
        // SAFETY: found under the caller's epoch guard, still held.
        let v = unsafe { &*v };
        let r = read(self.ssn(), self.cert, &self.db.txns, self.slot, self.word, v);
        r.map_err(|r| self.abort_with(r))
    }

    /// A lookup of `key` in `t` found nothing: the deleters of the
    /// versions of `key` it passed over are predecessors (SSN), and their
    /// creators that committed after our read time successors (see
    /// [`absent`]).
    pub(crate) fn ssn_absent_key(&mut self, t: &Table, key: &crate::key::Key) {
        if self.cert == Cert::Off {
            return;
        }
        let rt = self.read_time();
        let (st, cert, txns) = (self.ssn(), self.cert, &self.db.txns);
        t.indexes[0].for_each_eq(key, |v| {
            if v.key_eq(key) {
                absent(st, cert, txns, v, rt);
            }
            true
        });
    }

    /// A serializable scan read the gap `kind` of index `index` of `t`.
    #[inline]
    pub(crate) fn ssn_scan(&mut self, t: &Table, index: u8, kind: &ScanKind) {
        let st = self.ssn();
        st.gap_clock = match &t.indexes[index as usize].gaps {
            Some(g) => {
                read_gap(st, self.slot, g, kind);
                // SeqCst: after our bit's SeqCst fetch_or, so that a writer
                // whose stamp is at least this value loads the bitmap after
                // the bit (see `created_after`).
                self.db.clock.load(Ordering::SeqCst)
            }
            None => u64::MAX, // no gap: take every such edge ourselves
        };
    }

    /// Algorithm 1, `ssn_write`: we replaced `old` (write-locked by us).
    #[inline]
    pub(crate) fn ssn_write(&mut self, old: *mut Version) -> crate::Result<()> {
        // SAFETY: write-locked by us, so not reclaimable.
        let old = unsafe { &*old };
        let st = self.ssn();
        if self.cert == Cert::Ssn {
            // The w:w edge from the creator.
            st.pstamp = st.pstamp.max(cstamp_of(old, &self.db.txns));
        }
        // Relaxed: a hint for the early check only; precommit rereads it
        // (Acquire) after the readers bitmap. η(V) of a latest version: never
        // an sstamp (only its overwriter, us, could write one).
        let s = words(old).0.load(Ordering::Relaxed);
        st.pstamp = st.pstamp.max(s & !SSTAMP);
        st.verdict(self.cert).map_err(|r| self.abort_with(r))
    }

    /// Finalizes η(T) against the readers of a replaced version or
    /// pseudo-version (Algorithm 3 lines 24-32).
    ///
    /// `push`: for a pseudo-version, also note the readers that will commit
    /// after us: they cannot find us (a scan keeps no version to follow), so
    /// we lower their π ourselves (see `push`).
    ///
    /// `proxy`: a version that readers may have read untracked (section
    /// 5.3). Such a reader leaves its bit set and never follows us, so for
    /// every bit: a reader that will commit after us gets our π (`push`),
    /// one that committed after us already is an edge nobody can account
    /// for (we abort), and the slot's last commit stamp (its earlier
    /// occupants' untracked reads) joins η(T) — or aborts us if it is
    /// larger than our own stamp.
    fn finalize_eta(
        &self,
        stamp: &AtomicU64,
        readers: &AtomicU64,
        c: u64,
        push: bool,
        proxy: bool,
    ) -> Result<(), AbortReason> {
        let txns = &self.db.txns;
        let st = self.ssn();
        // SeqCst: after our stamp's draw in the total order (see `register`);
        // and a bit found cleared was cleared (Release) after its reader
        // raised η(V), which the reread below must then see (Acquire).
        let mut bits = readers.load(Ordering::SeqCst);
        let hw = txns.high_water();
        while bits != 0 {
            let b = bits.trailing_zeros();
            bits &= bits - 1;
            let range = if b < SHARED_BIT { b as usize..b as usize + 1 } else { SHARED_BIT as usize..hw };
            for s in range {
                if s != self.slot as usize {
                    match txns.peek_slot(s) {
                        // Algorithm 3 waits for a reader still in its
                        // pre-commit and counts it if it commits; we count
                        // it at once, as if it will (a conservative η, and
                        // no wait: with more threads than cores, a reader
                        // descheduled mid-pre-commit would hold us up).
                        Some((_, Peek::Preparing(r) | Peek::Committed(r))) if r < c => {
                            st.pstamp = st.pstamp.max(r);
                        }
                        // Committed after us, perhaps without knowing of us.
                        Some((_, Peek::Committed(_))) if proxy => return Err(AbortReason::ExclusionWindow),
                        Some((id, Peek::Active | Peek::Preparing(_))) if push || proxy => {
                            st.push_to.push((s as u32, id));
                        }
                        _ => {}
                    }
                }
                if proxy {
                    // Acquire, after the peek: an untracked reader that left
                    // the slot raised this (Release) before it left.
                    let last = txns.slot(s as u32).ssn_last_cstamp.load(Ordering::Acquire);
                    if last > c {
                        return Err(AbortReason::ExclusionWindow);
                    }
                    st.pstamp = st.pstamp.max(last);
                }
            }
        }
        // Re-read η(V) in case we missed a reader that already left (line 32).
        // (`read` is Acquire: pairs with the readers' Release `unregister`.)
        if let Stamp::Eta(eta) = stamp::read(stamp) {
            st.pstamp = st.pstamp.max(eta);
        }
        Ok(())
    }

    /// Whether readers may have read versions untracked (section 5.3), so
    /// that writers must account for them.
    #[inline]
    fn read_mostly(&self) -> bool {
        let o = &self.db.opts;
        self.cert == Cert::Ssn && o.ssn_read_mostly_age.is_some() && !o.faults.skip_read_mostly_handshake
    }

    /// Pre-commit (Algorithm 3 lines 4-34): we are Preparing with end
    /// timestamp `c`. Finalizes π(T) and η(T) and tests them; on success
    /// publishes π(T) for readers that finalize against us.
    pub(crate) fn ssn_precommit(&mut self, c: u64) -> Result<(), AbortReason> {
        let txns = &self.db.txns;
        let cert = self.cert;
        let st = self.ssn();
        if cert == Cert::Ssn {
            st.sstamp = st.sstamp.min(c); // line 6
        }
        // Finalize π(T): follow the overwriters of the reads (lines 7-20).
        let reads = std::mem::take(&mut st.reads);
        for &VPtr(v) in &reads {
            // SAFETY: visible to us while we are open (its End exceeds our
            // begin timestamp, which holds the GC watermark back).
            let v = unsafe { &*v };
            loop {
                // Acquire: see π(V) once the End word holds a timestamp.
                let e = v.end.load(Ordering::Acquire);
                if writer_of_end(e) == Some(self.id) {
                    break; // we replaced it ourselves (footnote 6)
                }
                match Word::decode(e) {
                    Word::Ts(INFINITY) => break,
                    Word::Ts(e) => {
                        if e < c {
                            // (`read` is Acquire: π(V) was written before
                            // the End timestamp we saw.)
                            st.overwritten_by(cert, e, pi_of(stamp::read(words(v).0)));
                        }
                        break;
                    }
                    Word::Txn(u) => match txns.peek(u) {
                        Peek::Active | Peek::Aborted => break,
                        Peek::Preparing(cu) | Peek::Committed(cu) if cu > c => break,
                        Peek::Preparing(_) | Peek::Committed(_) => {
                            if committed_before(txns, u, c).is_some() {
                                let slot = txns.slot(crate::txn::table::slot_of(u));
                                // Acquire: published before the Committed state.
                                let s = slot.ssn_sstamp.load(Ordering::Acquire) & !LOCKED;
                                // Acquire: still U's? If not, U finished
                                // postprocessing: reread the version.
                                if slot.id.load(Ordering::Acquire) != u {
                                    continue;
                                }
                                let cu = match txns.peek(u) {
                                    Peek::Committed(cu) => cu,
                                    _ => continue,
                                };
                                st.overwritten_by(cert, cu, s);
                                break;
                            }
                            // Aborted, or it finished: reread the word.
                            continue;
                        }
                        Peek::Gone => continue,
                    },
                }
            }
        }
        st.reads = reads;
        // SeqCst fence: our write locks (End words, installed by AcqRel CAS
        // during forward processing) precede it; a read-only transaction
        // committing at its begin timestamp stores its state, fences, and
        // then looks at those End words (`ssn_read_only_commit`): either it
        // sees our lock or our look at its state below sees it Preparing.
        fence(Ordering::SeqCst);
        // Finalize η(T): the readers of what we replaced (lines 22-32), and of
        // the pseudo-versions whose rows we changed.
        let safe = if self.db.opts.safe_snapshot_interval.is_some() { self.db.ssn_safe.below(c) } else { None };
        let proxy = self.read_mostly();
        for w in &self.local().write_set {
            if !w.old.is_null() {
                // SAFETY: write-locked by us.
                let (stamp, readers) = words(unsafe { &*w.old });
                self.finalize_eta(stamp, readers, c, false, proxy)?;
            }
            self.finalize_gaps(self.db.table_by_id(w.table), w, c);
            if let Some(s) = safe {
                // The latest safe snapshot below us read what we replace (if
                // it existed then) or the gap we insert into (section 5.2).
                // SAFETY: write-locked by us.
                if w.old.is_null() || cstamp_of(unsafe { &*w.old }, txns) < s {
                    st.pstamp = st.pstamp.max(s);
                }
            }
        }
        // Take what writers pushed, and lock our π against later pushes.
        // AcqRel: acquire the pushes; release nothing yet (see below).
        let pushed = stamp::lock_pi(&self.slot().ssn_sstamp);
        st.sstamp = st.sstamp.min(pushed);
        st.verdict(cert)?;
        // Lower the π of the scanners that will commit after us.
        let value = match cert {
            Cert::Ssi if st.sstamp != NONE => 0, // rule 2 for them
            Cert::Ssi => c,
            _ => st.sstamp,
        };
        for i in 0..st.push_to.len() {
            let (s, id) = st.push_to[i];
            if !push(txns, s, id, value) && !st.lax {
                return Err(match cert {
                    Cert::Ssi => AbortReason::DangerousStructure,
                    _ => AbortReason::ExclusionWindow,
                });
            }
        }
        // Release: readers that see us Committed (Acquire) read this.
        self.slot().ssn_sstamp.store(LOCKED | st.sstamp, Ordering::Release);
        Ok(())
    }

    /// η(T) against the pseudo-versions of the index entries write `w`
    /// adds or removes (section 6).
    fn finalize_gaps(&self, t: &Table, w: &WriteEntry, c: u64) {
        // SAFETY: ours (new) or write-locked by us (old).
        let (old, new) = unsafe { (w.old.as_ref(), w.new.as_ref()) };
        for (i, ix) in t.indexes.iter().enumerate() {
            let Some(g) = &ix.gaps else { continue };
            if i == 0 && old.is_some() && new.is_some() {
                continue; // an update keeps its primary key
            }
            let ko = old.map(|o| ix.key_of(o));
            let kn = new.map(|n| ix.key_of(n));
            if ko == kn {
                continue; // same entry: the version-level read covers it
            }
            for k in [ko, kn].iter().flatten() {
                g.of_write(k, |pv| {
                    // Gaps are always tracked: no proxy, so no error.
                    let r = self.finalize_eta(&pv.stamp, &pv.readers, c, true, false);
                    debug_assert!(r.is_ok());
                });
            }
        }
    }

    /// Post-commit (Algorithm 3 lines 37-47), before MV/O stamps the
    /// Begin and End words: raise η(V) of the reads, write π(T) into the
    /// replaced versions (before their End words turn into timestamps) and
    /// η = c(T) into the new ones; clear our reader bits.
    pub(crate) fn ssn_postcommit(&mut self, c: u64) {
        let st = self.ssn();
        let local = self.local();
        for w in &local.write_set {
            if !w.old.is_null() {
                // SAFETY: write-locked by us.
                let (stamp, _) = words(unsafe { &*w.old });
                stamp::set_pi(stamp, st.sstamp);
            }
            if !w.new.is_null() && self.cert == Cert::Ssn {
                // SAFETY: our own version.
                let (stamp, _) = words(unsafe { &*w.new });
                // Relaxed: published by the Release store of its Begin word.
                stamp::raise_eta(stamp, c, Ordering::Relaxed);
            }
        }
        self.ssn_release(Some(c));
    }

    /// Raises η(V) of everything read to `c` (when committed) and clears
    /// our reader bits (commit or abort).
    pub(crate) fn ssn_release(&mut self, c: Option<u64>) {
        let st = self.ssn();
        let slot = self.slot;
        let me = self.db.txns.slot(slot);
        // Section 5.3: the bit we clear may also stand for untracked reads
        // of earlier occupants of our slot; their stamps (the last cstamp)
        // go into η(V) first. Relaxed: written by earlier occupants only,
        // ordered before us by the slot's handover.
        let floor = if self.read_mostly() { me.ssn_last_cstamp.load(Ordering::Relaxed) } else { 0 };
        let raise = c.unwrap_or(0).max(floor);
        for &VPtr(v) in &st.reads {
            // SAFETY: as in `ssn_precommit`.
            let (stamp, readers) = words(unsafe { &*v });
            if raise != 0 {
                // Release: a writer that reads η(V) after our bit is gone
                // sees this raise. A stamp word holding π(V) stays (larger).
                stamp::raise_eta(stamp, raise, Ordering::Release);
            }
            unregister(readers, slot);
        }
        if st.untracked != 0 {
            if let Some(c) = c {
                // Release: a writer that finds the slot left (Acquire on
                // its id) sees this; we raise it before we leave.
                me.ssn_last_cstamp.fetch_max(c, Ordering::Release);
            }
            // Relaxed: statistics only.
            me.ssn_untracked.fetch_add(st.untracked, Ordering::Relaxed);
        }
        for &p in &st.gaps {
            // SAFETY: pseudo-versions live as long as their index.
            let pv = unsafe { &*p };
            if let Some(c) = c {
                // Release: as above.
                stamp::raise_eta(&pv.stamp, c, Ordering::Release);
            }
            unregister(&pv.readers, slot);
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
