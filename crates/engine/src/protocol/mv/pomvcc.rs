//! POMVCC: partial-order multi-version concurrency control (Kato et al.,
//! 2018, `pomvcc-2018.txt`), sections IV and VI.A.
//!
//! This module holds POMVCC's **timestamp manager** (Table VIII, Figures 15,
//! 18 and 19). The transactions are MV/O's ([`super::occ`]) on the shared
//! multi-version store, with these timestamps:
//!
//! * the clock that a begin reads follows BTs (`2 BTs + 2`, see `stamp`):
//!   a transaction reads as of BTs, at read committed per statement (Table
//!   VII); [`crate::TxnOptions::after`] is Allocate_BTs(Ts);
//! * a commit's end timestamp is the shared CTs (Allocate_CTs); Ts.CC counts
//!   it once its versions are stamped, an abort takes its Ts.PC back, and a
//!   write conflict, failed read validation or phantom advances CTs (D5.i:
//!   Table V's W1\[X\] W2\[X\] at one timestamp);
//! * **serializable** is Hekaton's read validation and phantom detection,
//!   done at `2c + 1`, just past the shared timestamp `c`: a version that a
//!   same-timestamp transaction replaced or inserted counts as changed.
//!   (Validating at `2c` itself, as MV/O does with unique stamps, lets
//!   same-timestamp cycles through: the checker finds them.)
//!
//! # Why validation just past the shared timestamp is serializable
//!
//! Order the committed transactions by commit timestamp and, within one
//! timestamp `c`, by the moment each one pre-committed. Every dependency
//! follows that order:
//!
//! * *across timestamps*: a transaction reads as of `2b + 1` with `b` below
//!   its own `c` (BTs never passes a timestamp still in flight), so what it
//!   read (wr) and what it overwrote (ww) committed at a lower timestamp;
//!   an anti-dependency (rw, or prw: a row its lookup or scan did not see)
//!   to a writer at a higher timestamp points forward;
//! * *within `c`*: no wr or ww edge joins two peers (neither reads at or
//!   past `2c`; two writers of a row conflict at the End word). An
//!   anti-dependency R -> W between peers comes from a row R validated
//!   (a version it read, a key it found absent, a range it scanned) and W
//!   wrote. W's write is in place before W pre-commits (PCC at the update,
//!   OCC just before Allocate_CTs). R's validation *clashes*, and R aborts,
//!   on every trace of a peer it meets: a version a peer created or ended,
//!   whether the peer is Preparing, Committed or done
//!   (`txn::visibility`, `Me::peer`; a peer that only created a
//!   row R then finds is a phantom anyway). So R met no trace of W as a
//!   peer: when R looked at that row, W had not written it yet, or was still
//!   Active (its version invisible to R, with no timestamp to share) and
//!   pre-committed later. Either way R looked after its own pre-commit and
//!   before W's. The edge points forward, and no cycle can form. (The
//!   history checker places such an R's absent row before W's insert.)
//!
//! A peer's *finished* end counts too: the stress campaign found a G2
//! (found by the stress suite at `MULTIVERSE_STRESS=100`) where peer U updated a row A that R had found absent at its
//! begin. R's phantom check walked A's chain, passed the place where U
//! linked A's new version before U linked it, then found the version U had
//! replaced ended at `2c` by a committed U: gone, as far as R could tell,
//! and R committed without seeing U's row. Treating only Preparing peers
//! as clashes, as the first version did, let that through.
//!
//! Earlier reports of G2 cycles at `MULTIVERSE_STRESS=100` were, on
//! inspection, serializable histories the checker misread (it placed an
//! absent row seen by a validating reader before a peer's delete that the
//! reader had seen; docs/CHECKER.md); the engine now aborts those readers
//! as well (they met a peer's end), and the checker places such a reader
//! just past its commit timestamp.
//!
//! **Mixed OCC/PCC** (section V.D, Table VII, Figures 13 and 14), chosen
//! per transaction with [`crate::TxnOptions::mode`]:
//!
//! * *PCC* ([`crate::Mode::Pessimistic`], and the default): a write takes
//!   its write lock (our id in the old version's End word) at update time
//!   and links its new version at once (Figure 14, step 1), as MV/O does.
//!   A later writer of the row aborts at once; a long transaction thus
//!   reserves its rows early and is not overtaken by short ones.
//! * *OCC* ([`crate::Mode::Optimistic`]): a write creates its new version
//!   but keeps it private in the transaction's pending writes (Figure 13,
//!   step 1); commit takes every write lock and links every version
//!   (step 3), and a row another transaction locked or replaced meanwhile
//!   aborts the committer (first committer wins). Reads of a pending row
//!   see the pending version. Differences from the figure: the locks are
//!   taken just *before* the transaction draws CTs and turns Pre-commit
//!   (step 2), so readers never wait for a pre-committed transaction that
//!   is still locking; and a scan (or secondary lookup) connects the pending
//!   writes first, since it cannot merge private versions into what the
//!   indexes hold (an update may even move a row in a secondary index) —
//!   from there the transaction's earlier writes behave as PCC's.
//!
//! Both kinds read at BTs and validate their reads alike (Table VII differs
//! only in the state at begin).
//!
//! **Logging** (section VI): a committer appends its redo record to its
//! thread's log stream before it turns Committed, and, under sync
//! durability, increments Ts.CC only once the record is durable, so BTs
//! never passes a commit a crash could lose (MPDB's guarantee that what a
//! beginning transaction sees is persisted). Recovery orders the streams by
//! their epochs and the records of an epoch by CTs (`durability::recovery`)
//! rather than by the paper's `Log_CTs`: the epoch marks already say how far
//! every stream is complete.
//!
//! # Two timestamps
//!
//! * **CTs**, the commit timestamp. A committing transaction *reads* it
//!   (Allocate_CTs) instead of incrementing it, so transactions that do not
//!   conflict share one commit timestamp (D4.II: their order does not change
//!   the database). It advances only when a conflict abort shows that two
//!   transactions at one timestamp would not commute (D5.i, the lost update
//!   of Table V: Update_CTs from AbortTx, Figure 16), when a client asks
//!   to see past it (Allocate_BTs), and periodically ("any time").
//! * **BTs**, the begin timestamp: what a beginning transaction reads as of.
//!   It advances from `b` to `b + 1` only when `b + 1` is closed
//!   (`b + 1 < CTs`: nobody will take it any more) and every transaction
//!   that took it has finished (D6: `Ts.PC[b+1] = Ts.CC[b+1]`). So a reader
//!   sees every commit of a timestamp or none, and, once the log of each
//!   commit is written before its Ts.CC counts it, only durable ones
//!   (section VI.B: no ordering of the parallel logs is needed).
//!
//! Per timestamp, the **pre-commit counter** Ts.PC counts the transactions
//! that took it, and the **commit counter** Ts.CC those that finished; an
//! abort takes its pre-commit back (Decrement_TsPC, Figure 17).
//!
//! # Lock-free, and what it relies on
//!
//! The counters live in a ring of [`WINDOW`] slots (timestamp `t` in slot
//! `t % WINDOW`), and they only ever grow (but for an abort's decrement):
//! a slot is never reset, since `PC = CC` means "nobody in flight" whatever
//! the counts. CTs never runs [`WINDOW`] or more ahead of BTs, so the
//! timestamps that share a slot are never open at once.
//!
//! Allocate_CTs must be atomic with respect to BTs (Figure 18 says
//! `atomic { CTs = Read_CTs(); Increment_TsPC(CTs) }`). Without a lock:
//! the committer increments `PC[c]` and then reads CTs again; if CTs has
//! moved past `c`, it takes the increment back and tries with the new value.
//! Every access is `SeqCst`, and the argument uses that single order: BTs
//! passes `c` only after reading CTs `> c` and then the counters of `c`. If
//! the committer's second reading of CTs still returned `c`, its increment
//! came before CTs moved, hence before that reading of the counters, which
//! therefore sees it in flight; otherwise the committer withdraws. The
//! counters are read commit counter first: `CC` and `PC` read in that order
//! are equal only if nobody was in flight when `PC` was read (`CC ≤ PC`
//! holds at every instant, and `CC` only grows).
//!
//! # Deliberate differences
//!
//! * "Periodically and asynchronously": there is no timer thread; whoever
//!   calls `TsManager::tick` (committers, say) advances CTs if
//!   `TsManager::new`'s interval has passed since the last advance, and
//!   then BTs as far as D6 allows.
//! * Update_CTs refuses to run CTs [`WINDOW`] timestamps ahead of BTs (the
//!   slot would still belong to an unfinished timestamp); the paper's
//!   counters are unbounded.

mod clock;

use super::local::Pending;
use super::{writer_of, MvTxn};
use crate::history::{Op, WriteKind, Writer};
use crate::key::Key;
use crate::storage::version::Version;
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::table::Table;
use crate::{Error, Result, TableId};
use std::ptr;
use std::time::{Duration, Instant};

/// Open timestamps at most (CTs − BTs < WINDOW), and the counter ring's size.
pub const WINDOW: u64 = 1024;

/// How often CTs advances without a conflict by default (section VI.C:
/// "periodically"; `Options::pomvcc_interval`).
pub const TICK_INTERVAL: Duration = crate::options::POMVCC_TICK;

/// The engine's stamp of POMVCC timestamp `ts`: the shared clock counts in
/// steps of two (commit stamps even, read times odd), so commit timestamp
/// `c` is stamp `2c` and a transaction that begins at BTs `b` reads at
/// `2b + 1`, past every commit of `b` and before every commit after it.
pub(crate) fn stamp(ts: u64) -> u64 {
    ts * 2
}

/// The POMVCC timestamp of an engine stamp (a commit timestamp returned by
/// `Transaction::commit`); a read time maps to the BTs it was taken at.
pub(crate) fn of_stamp(stamp: u64) -> u64 {
    stamp / 2
}

/// POMVCC's timestamp manager (Table VIII, Figures 15, 18 and 19): the
/// counters of `clock::TsCounters` (CTs, BTs, Ts.PC and Ts.CC, checked
/// by the model tests) and the periodic advance of CTs.
pub(crate) struct TsManager {
    counters: clock::TsCounters,
    /// When CTs last advanced (nanoseconds since `epoch`), for `tick`.
    advanced_ns: AtomicU64,
    epoch: Instant,
    interval: Duration,
    /// Tests: yield between reading CTs and counting in its Ts.PC, where
    /// a lost race would let BTs pass an unfinished timestamp.
    #[cfg(test)]
    yield_in_allocate: bool,
}

impl TsManager {
    /// A manager with BTs = `start` and CTs = `start + 1`, advancing CTs on
    /// [`TsManager::tick`] once `interval` has passed.
    pub fn new(start: u64, interval: Duration) -> TsManager {
        TsManager {
            counters: clock::TsCounters::new(start, WINDOW),
            advanced_ns: AtomicU64::new(0),
            epoch: Instant::now(),
            interval,
            #[cfg(test)]
            yield_in_allocate: false,
        }
    }

    /// Read_CTs.
    pub fn cts(&self) -> u64 {
        self.counters.cts()
    }

    /// Read_BTs: every timestamp up to it is complete; a transaction that
    /// begins now reads as of it.
    pub fn bts(&self) -> u64 {
        self.counters.bts()
    }

    /// Update_CTs (Figure 18): advances CTs by one unless that would open
    /// more than [`WINDOW`] timestamps; returns CTs.
    pub fn update_cts(&self) -> u64 {
        let (c, advanced) = self.counters.update_cts();
        if advanced {
            self.note_advance();
        }
        c
    }

    fn note_advance(&self) {
        // Relaxed: a hint for `tick` only.
        self.advanced_ns.store(self.epoch.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// Allocate_CTs (Figure 18): the commit timestamp of a transaction that
    /// enters pre-commit, counted in its Ts.PC. CTs is not incremented.
    pub fn allocate_cts(&self) -> u64 {
        self.counters.allocate_cts(|| {
            #[cfg(test)]
            if self.yield_in_allocate {
                std::thread::yield_now();
            }
        })
    }

    /// Increment_TsCC (Figure 17): the transaction that took `cts` has
    /// committed (and, under sync durability, its log record is durable:
    /// see the module docs); then BTs advances
    /// as far as D6 allows.
    pub fn commit(&self, cts: u64) {
        self.counters.finish(cts, true);
    }

    /// Decrement_TsPC (Figure 17): the transaction that took `cts` aborted.
    pub fn abort(&self, cts: u64) {
        self.counters.finish(cts, false);
    }

    /// The abort of a conflict (D5.i; AbortTx, Figure 16): two transactions
    /// at one timestamp would not commute, so CTs advances, and the new CTs
    /// is returned for the retry to begin after (Allocate_BTs).
    pub fn conflict(&self) -> u64 {
        self.update_cts()
    }

    /// Update_BTs (Figure 19), repeated: advances BTs while D6 holds for the
    /// next timestamp; returns BTs.
    pub fn update_bts(&self) -> u64 {
        self.counters.update_bts()
    }

    /// Allocate_BTs(Ts) (Figure 18): a begin timestamp of at least `ts`
    /// (which must not be past CTs: the caller checks) —
    /// the request-based avoidance of HISTORICAL READ (Figure 8): given the
    /// commit timestamp of the client's previous transaction, the next one
    /// sees its writes. Closes `ts` if it is still open, then waits until
    /// every transaction at it has finished (they are committing: a short
    /// wait, and never for this transaction).
    pub fn allocate_bts(&self, ts: u64) -> u64 {
        while self.cts() <= ts {
            if self.update_cts() <= ts {
                // The window is full: older timestamps must finish first.
                self.update_bts();
                std::thread::yield_now();
            }
        }
        let mut spins = 0u32;
        loop {
            let b = self.update_bts();
            if b >= ts {
                return b;
            }
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// The periodic update (section VI.C, last paragraph): advances CTs if
    /// the interval has passed since it last moved, then BTs. Cheap when
    /// nothing is due: one clock reading.
    pub fn tick(&self) {
        let now = self.epoch.elapsed().as_nanos() as u64;
        // Relaxed: a hint; a second advance by a racing caller is harmless.
        if now.saturating_sub(self.advanced_ns.load(Ordering::Relaxed)) >= self.interval.as_nanos() as u64 {
            self.update_cts();
        }
        self.update_bts();
    }

    /// (Ts.PC, Ts.CC) of a timestamp's ring slot (cumulative over the
    /// timestamps that share the slot).
    #[cfg(test)]
    pub fn counters(&self, ts: u64) -> (u64, u64) {
        self.counters.counters(ts)
    }
}

// ----------------------------------------------------------------------
// Mixed OCC/PCC (section V.D, Table VII, Figures 13 and 14)
// ----------------------------------------------------------------------

impl MvTxn<'_> {
    /// The pending write of `key`, if this optimistic transaction has one.
    /// A linear search: a transaction's writes are few, and only optimistic
    /// POMVCC transactions ever look.
    #[inline]
    pub(crate) fn po_find(&mut self, table: u32, key: &Key) -> Option<usize> {
        self.local.get().pending.iter().position(|p| p.table == table && p.key == *key)
    }

    /// A read of our own pending write `i`: its new value, or no row if it
    /// is a delete. Nothing to validate: the row is ours.
    pub(crate) fn po_read<R>(&mut self, i: usize, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let p = self.local.get().pending[i].clone();
        // SAFETY: made by this transaction and never connected: ours alone.
        let new = unsafe { p.row().as_ref() };
        if self.core.recording {
            let version = new.map(|n| (Writer::Txn(self.core.id), n.value().to_vec()));
            self.core.record(Op::Read { table: p.table, key: p.key, version });
        }
        new.map(|n| f(n.value()))
    }

    /// Figure 13, step 1: an optimistic update or delete creates the new
    /// version (from the visible one, or from our own pending one) and keeps
    /// it private; `make(old, new)` fills `new` and returns false for a
    /// delete. No lock is taken: a concurrent writer is found at commit.
    pub(crate) fn po_write(
        &mut self,
        t: &Table,
        table: TableId,
        key: &Key,
        make: impl FnOnce(&[u8], &mut Vec<u8>) -> bool,
    ) -> Result<()> {
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let (i, old, mine) = match self.po_find(table.0, key) {
            Some(i) => {
                let p = self.local.get().pending[i].clone();
                if p.row().is_null() {
                    return self.not_found(table, key); // we deleted it
                }
                (Some(i), p.new, true)
            }
            None => {
                let v = self.find_visible(t, key, self.lookup_time());
                if v.is_null() {
                    return self.not_found(table, key);
                }
                (None, v, false)
            }
        };
        // SAFETY: ours and private (`mine`), or found under the epoch guard,
        // which is still held.
        let old_ref = unsafe { &*old };
        let mut buf = std::mem::take(&mut self.core.local.get().scratch);
        buf.clear();
        let keep = make(old_ref.value(), &mut buf);
        if keep && buf.len() > self.core.db.opts.max_value_size {
            let len = buf.len();
            self.core.local.get().scratch = buf;
            return Err(Error::ValueTooLarge { len, max: self.core.db.opts.max_value_size });
        }
        if self.core.recording {
            let read = if mine { Writer::Txn(self.core.id) } else { writer_of(old_ref) };
            self.record_replace(table, key, (read, old_ref.value()), keep.then_some(&buf[..]));
        }
        let new = if keep {
            self.core.created += 1;
            Version::alloc(key, t.link_words(), &buf, self.word).as_ptr()
        } else {
            ptr::null_mut()
        };
        self.core.local.get().scratch = buf;
        let pending = &mut self.local.get().pending;
        match i {
            // An insert of ours, deleted again: its version stays, to be
            // linked and deleted at commit.
            Some(i) if new.is_null() && pending[i].old.is_null() => pending[i].deleted = true,
            Some(i) => {
                // SAFETY: our private version, replaced by `new` (or nothing).
                unsafe { Version::free(old) };
                pending[i].new = new;
            }
            None => pending.push(Pending { table: table.0, key: key.clone(), old, new, deleted: false }),
        }
        Ok(())
    }

    /// Figure 13, step 1, for an insert: a visible row is a duplicate, as
    /// for any insert; a concurrent writer of the key is left to the commit.
    pub(crate) fn po_insert(&mut self, t: &Table, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        match self.po_find(table.0, &key) {
            Some(i) => {
                let p = self.local.get().pending[i].clone();
                if !p.row().is_null() {
                    return Err(Error::DuplicateKey);
                }
                // We deleted the row: the insert makes the delete an update
                // (of the row that was there, or of our own insert).
                self.core.created += 1;
                let nv = Version::alloc(&key, t.link_words(), value, self.word).as_ptr();
                if !p.new.is_null() {
                    // SAFETY: our private version, replaced by `nv`.
                    unsafe { Version::free(p.new) };
                }
                self.local.get().pending[i] = Pending { new: nv, deleted: false, ..p };
            }
            None => {
                // Epoch pin: versions reached through an index stay allocated until it drops.
                let _guard = crossbeam_epoch::pin();
                let dup = self.find_visible(t, &key, self.lookup_time());
                if !dup.is_null() {
                    return self.duplicate(dup);
                }
                self.core.created += 1;
                let nv = Version::alloc(&key, t.link_words(), value, self.word).as_ptr();
                let p = Pending { table: table.0, key: key.clone(), old: ptr::null_mut(), new: nv, deleted: false };
                self.local.get().pending.push(p);
            }
        }
        if self.core.recording {
            self.core.record(Op::Write { table: table.0, key, kind: WriteKind::Insert, value: value.to_vec() });
        }
        Ok(())
    }

    /// Figure 13, step 3 ("connect the pointer of record to Tx": the write
    /// lock): every pending write takes its lock and links its version, as
    /// a pessimistic one did at update time. A version that is no longer
    /// the latest, or that another transaction has locked, is a write
    /// conflict (a lost update, Table V), and the transaction aborts.
    pub(crate) fn po_connect(&mut self) -> Result<()> {
        // Epoch pin: the old versions stay allocated (see `po_write`).
        let _guard = crossbeam_epoch::pin();
        for i in 0..self.local.get().pending.len() {
            let p = self.local.get().pending[i].clone();
            // From here `p.new` is linked or freed below, not by an abort.
            self.local.get().pending[i].new = ptr::null_mut();
            let t = self.core.db.table_by_id(p.table);
            if p.old.is_null() {
                let hash = p.key.hash64();
                self.link_insert(t, self.core.db.tid(p.table), p.key, &[], p.new)?;
                if p.deleted {
                    // Ours and latest: the lock cannot be refused.
                    self.claim(p.new)?;
                    self.connect(t, self.core.db.tid(p.table), p.new, ptr::null_mut(), hash)?;
                }
            } else if let Err(e) = self.claim(p.old) {
                if !p.new.is_null() {
                    // SAFETY: never connected: nobody else has seen it.
                    unsafe { Version::free(p.new) };
                }
                return Err(e);
            } else {
                self.connect(t, self.core.db.tid(p.table), p.old, p.new, p.key.hash64())?;
            }
        }
        self.local.get().pending.clear();
        Ok(())
    }

    /// A scan cannot merge private versions into what it finds (a pending
    /// update may even move a row in a secondary index): before one, the
    /// pending writes are connected, and the transaction goes on as a
    /// pessimistic one would from there.
    #[inline]
    pub(crate) fn po_connect_before_scan(&mut self) -> Result<()> {
        if self.policy.po_occ && !self.local.get().pending.is_empty() {
            self.po_connect()
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::SmallRng, Rng, SeedableRng};

    fn manager() -> TsManager {
        TsManager::new(10, Duration::from_secs(3600))
    }

    /// D4/D5: commits take CTs without incrementing it, so independent
    /// transactions share a timestamp; only Update_CTs (a conflict) moves it.
    #[test]
    fn commits_share_a_timestamp() {
        let m = manager();
        let (a, b, c) = (m.allocate_cts(), m.allocate_cts(), m.allocate_cts());
        assert_eq!((a, b, c), (11, 11, 11));
        assert_eq!(m.counters(11), (3, 0));
        assert_eq!(m.conflict(), 12);
        assert_eq!(m.allocate_cts(), 12);
        assert_eq!(m.cts(), 12);
    }

    /// D6: BTs passes a timestamp only once it is closed and every
    /// transaction that took it has committed or aborted; never reaches CTs.
    #[test]
    fn bts_waits_for_the_whole_timestamp() {
        let m = manager();
        let (a, b) = (m.allocate_cts(), m.allocate_cts());
        assert_eq!(m.update_bts(), 10, "11 is still open");
        m.update_cts();
        let c = m.allocate_cts();
        assert_eq!(c, 12);
        assert_eq!(m.update_bts(), 10, "two in flight at 11");
        m.commit(a);
        assert_eq!(m.bts(), 10, "one in flight at 11");
        m.abort(b);
        assert_eq!(m.bts(), 11, "11 complete (an abort takes its pre-commit back); 12 open");
        assert_eq!(m.counters(11), (1, 1));
        m.commit(c);
        assert_eq!(m.bts(), 11, "12 is still CTs: others may take it");
        m.update_cts();
        assert_eq!(m.update_bts(), 12);
        assert!(m.bts() < m.cts());
    }

    /// Historical read avoidance (Figure 8): beginning with the previous
    /// commit's CTs gives a BTs at or past it.
    #[test]
    fn allocate_bts_sees_a_previous_commit() {
        let m = manager();
        let c = m.allocate_cts();
        m.commit(c);
        assert!(m.bts() < c, "without the request, a new transaction would not see it");
        assert!(m.allocate_bts(c) >= c);
        assert!(m.cts() > c);
    }

    /// CTs stays within the window of BTs: a timestamp that cannot finish
    /// holds CTs back instead of letting a ring slot be shared.
    #[test]
    fn cts_stays_within_the_window() {
        let m = manager();
        let stuck = m.allocate_cts();
        for _ in 0..2 * WINDOW {
            m.update_cts();
        }
        assert_eq!(m.cts() - m.bts(), WINDOW - 1);
        m.commit(stuck);
        assert_eq!(m.bts(), m.cts() - 1);
        assert!(m.update_cts() > m.bts() + 1);
    }

    /// The periodic update advances CTs once its interval has passed.
    #[test]
    fn tick_advances_after_the_interval() {
        let m = TsManager::new(0, Duration::from_millis(5));
        m.tick();
        let c = m.cts();
        std::thread::sleep(Duration::from_millis(10));
        m.tick();
        assert_eq!(m.cts(), c + 1);
        assert_eq!(m.bts(), c, "nothing in flight: BTs follows");
    }

    /// Committers, aborters, conflicts, periodic ticks and request-based
    /// begins race on real threads (yielding inside Allocate_CTs, so that
    /// CTs often moves between its two readings): while a transaction holds a timestamp,
    /// BTs stays below it (checked right after allocation, at random points
    /// and right before finishing), BTs never reaches CTs, a request-based
    /// begin sees its timestamp, and at the end BTs catches up.
    #[test]
    fn concurrent_transactions_never_see_bts_pass_them() {
        let rounds: u64 = std::env::var("MULTIVERSE_LONG").map_or(5_000, |_| 200_000);
        let mut m = TsManager::new(0, Duration::from_micros(50));
        // Widen the window between reading CTs and counting in Ts.PC.
        m.yield_in_allocate = true;
        let m = m;
        // Workers still running; each leaves, even by a failed assertion.
        let running = AtomicU64::new(4);
        struct Leave<'a>(&'a AtomicU64);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                // Relaxed: a flag for the observer's loop only.
                self.0.fetch_sub(1, Ordering::Relaxed);
            }
        }
        std::thread::scope(|s| {
            s.spawn(|| {
                // An observer: BTs < CTs at every reading (BTs read first).
                // Relaxed: as above.
                while running.load(Ordering::Relaxed) > 0 {
                    let b = m.bts();
                    assert!(b < m.cts());
                }
            });
            let workers: Vec<_> = (0..4u64)
                .map(|t| {
                    let (m, running) = (&m, &running);
                    s.spawn(move || {
                        let _leave = Leave(running);
                        let mut rng = SmallRng::seed_from_u64(t);
                        let mut last = 0;
                        for _ in 0..rounds {
                            if rng.gen_range(0..16) == 0 {
                                assert!(m.allocate_bts(last) >= last);
                            }
                            let c = m.allocate_cts();
                            assert!(m.bts() < c);
                            for _ in 0..rng.gen_range(0..50) {
                                std::hint::spin_loop();
                            }
                            assert!(m.bts() < c, "BTs passed an unfinished timestamp");
                            match rng.gen_range(0..10) {
                                0 => {
                                    m.abort(c);
                                    m.conflict();
                                }
                                1 => m.abort(c),
                                _ => {
                                    m.commit(c);
                                    last = c;
                                }
                            }
                            m.tick();
                        }
                    })
                })
                .collect();
            for w in workers {
                w.join().unwrap();
            }
        });
        m.update_cts();
        assert_eq!(m.update_bts(), m.cts() - 1, "nothing in flight: BTs catches up");
    }
}
