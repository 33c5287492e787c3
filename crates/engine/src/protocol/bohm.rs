//! BOHM: Faleiro and Abadi, *Rethinking serializable multiversion
//! concurrency control* (VLDB 2015), section 3 — batched, pre-ordered
//! multi-version execution.
//!
//! A transaction is submitted whole: its access declaration
//! ([`crate::AccessSet`]) and its logic (a [`Procedure`]). Three kinds of
//! threads process it, one after the other:
//!
//! 1. **The sequencer** (section 3.2.1): one thread appends transactions to
//!    a log in memory. A transaction's position in the log is its timestamp
//!    `ts` — no shared counter is touched per transaction. The log is cut
//!    into batches (section 3.2.4).
//! 2. **Concurrency-control threads** (sections 3.2.2–3.2.3), each owning a
//!    partition of the records (by key hash). For every transaction of a
//!    batch, in log order, each thread inserts a **placeholder version** for
//!    every record of the write set in its partition — begin = `ts`, end =
//!    infinity, Txn Pointer = the transaction, Prev Pointer = the previous
//!    version, whose end becomes `ts` — and **annotates each declared read**
//!    with the version to read (the latest one at that point of the log).
//!    The map from key to latest version is thread-local: no latch, no
//!    contended write. A thread publishes how many batches it has finished
//!    (one store per batch); it never waits for the other threads.
//! 3. **Execution threads** (section 3.3.1) take a batch once every
//!    concurrency-control thread has finished it. Thread `i` of `k` answers
//!    for transactions `i, i+k, ...` of the batch. A transaction is
//!    Unprocessed, Executing or Complete; it is claimed by a compare-and-swap
//!    from Unprocessed to Executing. A read of a placeholder whose value is
//!    not produced yet evaluates the producing transaction recursively when
//!    it can claim it, and otherwise gives its own transaction back
//!    (Unprocessed) to be tried again later. Reads never write shared
//!    memory. A transaction that aborts — or leaves a declared write
//!    unwritten — copies the previous version into its placeholder (which
//!    needs that version produced: "if T2 aborts, then it also needs to wait
//!    for T1").
//!
//! **Logging** (durable databases): an execution thread appends a committed
//! transaction's redo record — the value or absence of each declared write
//! it made, under its timestamp — before producing its placeholders, so a
//! transaction that reads them appends later; recovery replays in
//! timestamp order, BOHM's log order. Under sync durability the sequencer
//! hands a finished batch back once its records are durable (one wait per
//! batch). A checkpoint is an interactive transaction, so it waits for
//! the pipeline to stop.
//!
//! **Garbage collection** (section 3.3.2, Condition 3): a version superseded
//! by a transaction of batch `b` is freed once every execution thread has
//! finished batch `b`. Each execution thread publishes the batches it has
//! finished; their minimum is the low watermark, and each
//! concurrency-control thread frees its own retired versions below it
//! (RCU style: nothing is freed while a reader could still reach it, and
//! no reader announces itself). Freed versions go to a per-partition free
//! list, so the steady state allocates nothing.
//!
//! The **serialization order is the log order** (section 3.3.3): ww edges
//! follow the order in which one thread appends versions of a record; a
//! read at `ts` sees the version with `begin ≤ ts < end`, which no later
//! transaction can change. History records name each version by the
//! timestamp of the transaction whose value it holds, and each transaction
//! commits at its own `ts`.
//!
//! # Using it
//!
//! [`Database::bohm_run`] runs a stream ([`Feed`]: benchmarks), and
//! [`Database::bohm_serve`] a server whose [`Server::execute`] blocks until
//! the transaction has run. Either holds the pipeline for its duration.
//! Outside them, [`Database::begin`] under `bohm` gives an ordinary
//! interactive transaction that runs **alone**: it waits until no pipeline
//! and no other interactive transaction runs, and then reads and writes the
//! latest versions directly at the next log position (loaders, consistency
//! checks, the shell). Serial execution is trivially serializable, and an
//! interactive transaction cannot be run by BOHM otherwise: "the entire
//! transaction \[must\] be submitted to the system at once".
//!
//! # Deliberate differences from the paper
//!
//! * A declaration names primary keys. A transaction's operations must stay
//!   inside it: any other access (and every scan or secondary-index lookup)
//!   fails with [`Error::NotDeclared`], and the transaction ends as
//!   [`Outcome::Refused`] with its placeholders restored, whatever its logic
//!   did with the error — never a silent inconsistency.
//! * Partitions are fixed ([`PARTITIONS`] of them); a run with `m`
//!   concurrency-control threads gives partition `p` to thread `p mod m`,
//!   so the number of threads can change between runs over the same data.
//! * A batch closes when it is full or, in a server, when no more
//!   transactions are waiting (so a lone client is not delayed).
//! * A record deleted (or an insert that aborted) leaves an absent version;
//!   the partition's owner unlinks it from its map once it is still the
//!   latest, and retires it like any other version.
//! * Recursive evaluation is bounded ([`MAX_DEPTH`]); past it, a
//!   transaction waits to be retried instead.
//! * A declared read of a record the transaction also writes is not
//!   annotated: the transaction reads it through its placeholder's Prev
//!   Pointer, which is the same version (the latest before its write).
//! * The thread-local map of latest versions is a table of our own
//!   (`latest.rs`) so that the planner can prefetch: a long read set's
//!   lookups, and an execution thread's reads of annotated versions, start
//!   loading a few reads ahead, overlapping the cache misses that the paper's
//!   many cores would have spread over threads (measured for Figure 9 in
//!   docs/BENCHMARKS.md).

use crate::error::AbortReason;
use crate::history::{Op, Outcome as HOutcome, TxnRecord, WriteKind, Writer};
use crate::index::hash::prefetch;
use crate::key::Key;
use crate::protocol::mv_occ::{CommitInfo, Status, Transaction};
use crate::txn::Filter;
use crate::{AccessSet, Database, Error, IndexId, Isolation, Result, TableId};
use crossbeam_utils::CachePadded;
use latest::Latest;
use parking_lot::{Condvar, Mutex};
use std::cell::UnsafeCell;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::ops::{Bound, RangeBounds};
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod latest;

thread_local! {
    /// An execution thread's buffer for encoding redo records.
    static REDO_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Record partitions of the store (each owned by one concurrency-control
/// thread during a run).
pub const PARTITIONS: usize = 64;

/// Deepest recursive evaluation of producers (section 3.3.1).
pub const MAX_DEPTH: usize = 32;

/// Freed versions kept for reuse per partition; beyond, they are returned
/// to the allocator.
const FREE_KEEP: usize = 1 << 16;

/// Version states: the value is not produced yet (a placeholder), a row,
/// no row (deleted, or an insert that never happened).
const PENDING: u8 = 0;
const PRESENT: u8 = 1;
const ABSENT: u8 = 2;

/// End timestamp of the latest version.
const INFINITY: u64 = u64::MAX;

/// Transaction states (section 3.3.1), in the low two bits of a cell's
/// state word; the high bits hold the transaction's timestamp, so a claim
/// names the transaction and cannot take a later one that reuses the cell.
const UNPROCESSED: u64 = 0;
const EXECUTING: u64 = 1;
const COMPLETE: u64 = 2;

/// Pipeline settings.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Concurrency-control threads (`--cc-threads`).
    pub cc_threads: usize,
    /// Execution threads (`--exec-threads`).
    pub exec_threads: usize,
    /// Transactions per batch.
    pub batch_size: usize,
    /// Batches in the log at once (being sequenced, planned or executed).
    pub batches_in_flight: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config { cc_threads: 1, exec_threads: 1, batch_size: 1000, batches_in_flight: 4 }
    }
}

impl Config {
    fn check(&self) -> Result<()> {
        let bad = |what: &str, lo: usize, hi: usize, v: usize| {
            Err(Error::InvalidArgument(format!("BOHM {what} must be between {lo} and {hi}, not {v}")))
        };
        if !(1..=PARTITIONS).contains(&self.cc_threads) {
            return bad("cc threads", 1, PARTITIONS, self.cc_threads);
        }
        if !(1..=1024).contains(&self.exec_threads) {
            return bad("exec threads", 1, 1024, self.exec_threads);
        }
        if !(1..=1 << 20).contains(&self.batch_size) {
            return bad("batch size", 1, 1 << 20, self.batch_size);
        }
        if !(2..=64).contains(&self.batches_in_flight) {
            return bad("batches in flight", 2, 64, self.batches_in_flight);
        }
        Ok(())
    }
}

/// A transaction's logic and declaration.
pub trait Procedure: Send {
    /// What the logic may return when it rolls back.
    type Error: Send;
    /// Declares the records the transaction reads and writes (primary
    /// keys). Called once, by the sequencer, before it runs.
    fn declare(&self, access: &mut AccessSet);
    /// Runs the logic. It may run more than once (after a read found a
    /// value not produced yet), each time from the start with the same
    /// inputs; only the last run counts.
    fn run(&mut self, t: &mut ExecTxn<'_>) -> std::result::Result<(), Self::Error>;
}

/// How a transaction ended.
#[derive(Debug)]
pub enum Outcome<E> {
    /// Its writes are installed at its timestamp.
    Committed,
    /// Its logic returned an error: nothing it wrote remains.
    Aborted(E),
    /// It accessed a record it had not declared (or scanned): the engine
    /// rolled it back ([`Error::NotDeclared`]).
    Refused(Error),
}

impl<E> Outcome<E> {
    /// True if committed.
    pub fn is_committed(&self) -> bool {
        matches!(self, Outcome::Committed)
    }
}

/// A finished transaction, handed back.
pub struct Done<P: Procedure> {
    /// The procedure (to be reused or inspected).
    pub proc: P,
    /// How it ended.
    pub outcome: Outcome<P::Error>,
    /// Its timestamp: its position in the log and in the serial order.
    pub ts: u64,
    /// From entering the log to completion.
    pub latency: Duration,
}

/// What a feed offers the sequencer next.
pub enum Next<P> {
    /// A transaction to append to the log.
    Txn(P),
    /// Nothing now; ask again.
    Wait,
    /// The stream has ended: finish what is in the log and stop.
    Stop,
}

/// A stream of transactions for [`Database::bohm_run`]. Both methods are
/// called on the sequencer thread.
pub trait Feed<P: Procedure>: Send {
    /// The next transaction. `idle` says nothing is in flight: the feed may
    /// block for a while (a server waiting for clients).
    fn next(&mut self, idle: bool) -> Next<P>;
    /// A transaction finished (in log order).
    fn done(&mut self, d: Done<P>);
}

/// Counters of one [`Database::bohm_run`].
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Transactions that went through the log.
    pub txns: u64,
    /// Batches.
    pub batches: u64,
    /// Evaluations given back because a value was not produced yet
    /// (section 3.3.1), and producers evaluated recursively.
    pub blocked: u64,
    /// See `blocked`.
    pub recursive: u64,
}

// ----------------------------------------------------------------------
// Versions and the store
// ----------------------------------------------------------------------

/// A record version (Figure 3).
///
/// ```text
///  begin  ts of the transaction that created it (placeholder owner)
///  end    ts of the transaction that superseded it, or INFINITY
///  txn    the cell of the producing transaction (meaningful while PENDING)
///  prev   the preceding version (followed only by the producer)
///  state  PENDING -> PRESENT | ABSENT, once (Release by the producer)
///  writer ts of the transaction whose value it holds: begin, or the
///         writer of prev when an abort copied prev in
///  data   the value (PRESENT only)
/// ```
pub(crate) struct BVersion {
    begin: u64,
    end: AtomicU64,
    txn: *const u8,
    prev: *mut BVersion,
    state: AtomicU8,
    writer: UnsafeCell<u64>,
    data: UnsafeCell<Vec<u8>>,
    table: u32,
    key: Key,
}

impl BVersion {
    #[inline]
    fn state(&self) -> u8 {
        // Acquire: pairs with the producer's Release; the data and writer
        // are complete once the state is not PENDING.
        self.state.load(Ordering::Acquire)
    }
    /// The value. Only after `state()` returned PRESENT (or by the producer).
    #[inline]
    unsafe fn data(&self) -> &[u8] {
        // SAFETY: (caller) produced, so no one writes it any more.
        unsafe { &*self.data.get() }
    }
    #[inline]
    unsafe fn writer(&self) -> u64 {
        // SAFETY: (caller) as for `data`.
        unsafe { *self.writer.get() }
    }
}

/// A map key: table and primary key, hashed once.
#[derive(Clone, Copy, PartialEq, Eq)]
struct MapKey {
    table: u32,
    key: Key,
}

/// The hash of a record: its key's, mixed with its table's number.
#[inline]
fn record_hash(table: u32, key: &Key) -> u64 {
    key.hash64() ^ (table as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl Hash for MapKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(record_hash(self.table, &self.key));
    }
}

/// Passes a precomputed 64-bit hash through.
#[derive(Default)]
struct PassHasher(u64);

impl Hasher for PassHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Map<V> = HashMap<MapKey, V, BuildHasherDefault<PassHasher>>;

/// A record's partition: the high half of its hash (the maps use it all).
fn partition_of(table: u32, key: &Key) -> usize {
    partition_of_hash(record_hash(table, key))
}

/// [`partition_of`] from the record's hash.
#[inline]
fn partition_of_hash(hash: u64) -> usize {
    ((hash >> 32) as usize) % PARTITIONS
}

/// What one partition's owner keeps: the latest version of every record
/// (section 3.2.3: "a thread-local data-structure"), retired versions and
/// free ones.
#[derive(Default)]
struct PartInner {
    latest: Latest,
    /// Superseded versions and the batch that superseded them, oldest first.
    retired: VecDeque<(u64, *mut BVersion)>,
    free: Vec<*mut BVersion>,
}

/// An absent version produced by an execution thread, for the owner of
/// its partition to unlink (see [`Store::collect`]).
struct Note {
    table: u32,
    key: Key,
    v: *mut BVersion,
}
// SAFETY: the pointer is only compared with the owner's map before use.
unsafe impl Send for Note {}

struct Part {
    inner: UnsafeCell<PartInner>,
    /// Absent versions produced by execution threads, for the owner to
    /// unlink from its map (a latch taken once per delete or failed insert).
    notes: Mutex<Vec<Note>>,
    created: AtomicU64,
    freed: AtomicU64,
}

/// BOHM's storage: partitions of version chains, and the gate that lets
/// one pipeline or one interactive transaction at a time own them.
pub(crate) struct Store {
    parts: Box<[CachePadded<Part>]>,
    gate: Mutex<()>,
    /// The next log position (timestamp). Advanced only by the gate's holder.
    next_ts: AtomicU64,
    committed: AtomicU64,
    aborts: [AtomicU64; AbortReason::COUNT],
}

// SAFETY: partitions are used by the gate's holder only (the pipeline's
// threads each on their own partitions, see `Pipeline`), or by an
// interactive transaction alone.
unsafe impl Sync for Store {}
// SAFETY: as above.
unsafe impl Send for Store {}

impl Store {
    pub(crate) fn new() -> Store {
        Store {
            parts: (0..PARTITIONS)
                .map(|_| {
                    CachePadded::new(Part {
                        inner: UnsafeCell::new(PartInner::default()),
                        notes: Mutex::new(Vec::new()),
                        created: AtomicU64::new(0),
                        freed: AtomicU64::new(0),
                    })
                })
                .collect(),
            gate: Mutex::new(()),
            next_ts: AtomicU64::new(2),
            committed: AtomicU64::new(0),
            aborts: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// (committed, aborts by reason, versions alive).
    pub(crate) fn totals(&self) -> (u64, [u64; AbortReason::COUNT], u64) {
        // Relaxed: statistics only.
        let aborts = std::array::from_fn(|i| self.aborts[i].load(Ordering::Relaxed));
        let (mut c, mut f) = (0u64, 0u64);
        for p in self.parts.iter() {
            c += p.created.load(Ordering::Relaxed);
            f += p.freed.load(Ordering::Relaxed);
        }
        (self.committed.load(Ordering::Relaxed), aborts, c.saturating_sub(f))
    }

    /// The partition's owner state.
    ///
    /// # Safety
    /// The caller owns partition `p` (module docs): no other reference to
    /// its inner state exists.
    #[allow(clippy::mut_from_ref)]
    unsafe fn part(&self, p: usize) -> &mut PartInner {
        // SAFETY: (caller) exclusive ownership of the partition.
        unsafe { &mut *self.parts[p].inner.get() }
    }

    /// A fresh version (from the free list when possible).
    fn alloc(&self, p: usize, inner: &mut PartInner, init: BInit) -> *mut BVersion {
        // Relaxed: statistics only.
        self.parts[p].created.fetch_add(1, Ordering::Relaxed);
        if let Some(v) = inner.free.pop() {
            // SAFETY: a freed version of this partition, owned by us.
            let r = unsafe { &mut *v };
            r.begin = init.begin;
            *r.end.get_mut() = INFINITY;
            r.txn = init.txn;
            r.prev = init.prev;
            *r.state.get_mut() = init.state;
            *r.writer.get_mut() = init.begin;
            r.data.get_mut().clear();
            r.table = init.table;
            r.key = init.key;
            return v;
        }
        Box::into_raw(Box::new(BVersion {
            begin: init.begin,
            end: AtomicU64::new(INFINITY),
            txn: init.txn,
            prev: init.prev,
            state: AtomicU8::new(init.state),
            writer: UnsafeCell::new(init.begin),
            data: UnsafeCell::new(Vec::new()),
            table: init.table,
            key: init.key,
        }))
    }

    /// Frees a version no reader can reach any more.
    fn free(&self, p: usize, inner: &mut PartInner, v: *mut BVersion) {
        // Relaxed: statistics only.
        self.parts[p].freed.fetch_add(1, Ordering::Relaxed);
        if inner.free.len() < FREE_KEEP {
            inner.free.push(v);
        } else {
            // SAFETY: allocated by `alloc` with Box, unreachable now.
            drop(unsafe { Box::from_raw(v) });
        }
    }

    /// The owner's housekeeping: unlink absent versions that are still the
    /// latest of their record (they are retired in batch `now`), then free
    /// what the low watermark allows (every execution thread has finished
    /// the batches below `low`).
    fn collect(&self, p: usize, now: u64, low: u64) {
        // SAFETY: the caller owns partition p.
        let inner = unsafe { self.part(p) };
        let notes = std::mem::take(&mut *self.parts[p].notes.lock());
        for Note { table, key, v } in notes {
            // Compare first, dereference after: a version that is still the
            // latest of its record is alive (a note may outlive its version).
            if inner.latest.get(table, &key) != v {
                continue;
            }
            // SAFETY: the latest version of a record is alive.
            if unsafe { &*v }.state() == ABSENT {
                inner.latest.remove(table, &key);
                inner.retired.push_back((now, v));
            }
        }
        while let Some(&(b, v)) = inner.retired.front() {
            if b >= low {
                break;
            }
            inner.retired.pop_front();
            self.free(p, inner, v);
        }
    }
}

/// The fields of a new version.
struct BInit {
    begin: u64,
    txn: *const u8,
    prev: *mut BVersion,
    state: u8,
    table: u32,
    key: Key,
}

impl Drop for Store {
    fn drop(&mut self) {
        for p in self.parts.iter_mut() {
            let inner = p.inner.get_mut();
            // At rest nothing is retired (a run frees all before it ends);
            // versions reachable as the latest, and free ones, remain.
            for (_, v) in inner.retired.drain(..) {
                // SAFETY: exclusive access; retired versions are in no map.
                drop(unsafe { Box::from_raw(v) });
            }
            inner.latest.drain(|v| {
                // SAFETY: as above; each version is the latest of one record.
                drop(unsafe { Box::from_raw(v) });
            });
            for v in inner.free.drain(..) {
                // SAFETY: as above.
                drop(unsafe { Box::from_raw(v) });
            }
        }
    }
}

// ----------------------------------------------------------------------
// The log
// ----------------------------------------------------------------------

/// Write states an execution tracks for each declared write.
const UNWRITTEN: u8 = 0;

/// Declared records a log position keeps room for between transactions. A
/// larger declaration's buffers are given back when its position is reused,
/// so memory follows the transactions in flight, not the largest one each
/// position of the ring ever held.
const KEEP: usize = 64;

/// What the sequencer, the concurrency-control threads and the executing
/// thread fill in for one transaction of the log (the part that does not
/// depend on the procedure's type).
#[derive(Default)]
struct Plan {
    ts: u64,
    access: AccessSet,
    /// Section 3.2.3: for each declared read, the version to read (null: no
    /// record), written by the partition's concurrency-control thread.
    reads: Vec<AtomicPtr<BVersion>>,
    /// For each declared write, its placeholder (duplicates share one).
    writes: Vec<AtomicPtr<BVersion>>,
    /// Per declared write: UNWRITTEN, PRESENT or ABSENT, by this run.
    written: Vec<u8>,
    /// Declared keys to (read position + 1, write position + 1), built for
    /// large declarations (0: not declared that way).
    lookup: Map<(u32, u32)>,
    history: Vec<Op>,
    recording: bool,
}

impl Plan {
    /// Empties the plan for the next transaction at its position, giving
    /// back what a large declaration made it allocate.
    fn reset(&mut self) {
        self.access.reads.clear();
        self.access.reads.shrink_to(KEEP);
        self.access.writes.clear();
        self.access.writes.shrink_to(KEEP);
        self.reads.clear();
        self.reads.shrink_to(KEEP);
        self.writes.clear();
        self.writes.shrink_to(KEEP);
        self.written.clear();
        self.written.shrink_to(KEEP);
        self.lookup.clear();
        self.lookup.shrink_to(KEEP);
    }
}

struct CellInner<P: Procedure> {
    plan: Plan,
    proc: Option<P>,
    /// The outcome, once the logic has run to its end.
    decided: Option<Outcome<P::Error>>,
    /// The log epoch of its redo record (durable databases; committed
    /// transactions that wrote).
    epoch: Option<u64>,
    submitted: Instant,
    finished: Instant,
}

/// A transaction in the log (one per position of the ring).
struct TxnCell<P: Procedure> {
    /// `ts << 2 | UNPROCESSED / EXECUTING / COMPLETE`.
    state: AtomicU64,
    inner: UnsafeCell<CellInner<P>>,
}

impl<P: Procedure> TxnCell<P> {
    fn new() -> TxnCell<P> {
        let now = Instant::now();
        TxnCell {
            state: AtomicU64::new(COMPLETE),
            inner: UnsafeCell::new(CellInner {
                plan: Plan::default(),
                proc: None,
                decided: None,
                epoch: None,
                submitted: now,
                finished: now,
            }),
        }
    }
}

/// Per-thread progress, alone on its cache line.
type Progress = CachePadded<AtomicU64>;

/// Everything the pipeline's threads share.
struct Pipeline<'db, P: Procedure> {
    db: &'db Database,
    store: &'db Store,
    cfg: Config,
    cells: Box<[TxnCell<P>]>,
    /// Transactions in each batch region.
    lens: Box<[AtomicU64]>,
    /// Batches published by the sequencer.
    published: Progress,
    /// Total batches, once the feed has stopped (else u64::MAX).
    last: Progress,
    /// Batches each concurrency-control thread has finished.
    cc_done: Box<[Progress]>,
    /// Batches each execution thread has finished.
    exec_done: Box<[Progress]>,
    recording: bool,
    blocked: AtomicU64,
    recursive: AtomicU64,
    /// The first panic of a procedure, re-raised when the run has ended.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    /// The first failure of the log (sync durability), returned when the
    /// run has ended.
    log_failed: Mutex<Option<Error>>,
}

// SAFETY: cells are handed between threads by the batch protocol (module
// docs): the sequencer fills a region before publishing it (Release), the
// concurrency-control threads write only atomics, an execution thread
// touches a cell's inner state only while it holds the claim, and the
// sequencer reuses a region only after every execution thread finished it.
unsafe impl<P: Procedure> Sync for Pipeline<'_, P> {}

/// Waits politely: spins, then yields, then sleeps (an idle pipeline must
/// not eat the CPU the others need; two cores run three kinds of thread).
struct Idle(u32);

impl Idle {
    fn new() -> Idle {
        Idle(0)
    }
    fn wait(&mut self) {
        self.0 += 1;
        if self.0 <= 6 {
            for _ in 0..(1 << self.0) {
                std::hint::spin_loop();
            }
        } else if self.0 <= 200 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

impl<'db, P: Procedure> Pipeline<'db, P> {
    #[inline]
    fn batch_size(&self) -> usize {
        self.cfg.batch_size
    }

    #[inline]
    fn cell(&self, batch: u64, i: usize) -> &TxnCell<P> {
        let region = (batch % self.cfg.batches_in_flight as u64) as usize;
        &self.cells[region * self.batch_size() + i]
    }

    #[inline]
    fn len(&self, batch: u64) -> usize {
        // Relaxed: published with the batch (Release on `published`).
        self.lens[(batch % self.cfg.batches_in_flight as u64) as usize].load(Ordering::Relaxed) as usize
    }

    /// The low watermark: batches every execution thread has finished.
    fn low(&self) -> u64 {
        // Acquire: what the execution threads did before finishing is
        // visible to whoever frees or reuses after reading this.
        self.exec_done.iter().map(|d| d.load(Ordering::Acquire)).min().unwrap_or(0)
    }

    /// Waits until batch `b` is published; false once the feed has stopped
    /// before it.
    fn wait_published(&self, b: u64) -> bool {
        let mut idle = Idle::new();
        loop {
            // Acquire: pairs with the sequencer's Release; the batch's cells
            // are filled.
            if self.published.load(Ordering::Acquire) > b {
                return true;
            }
            // Acquire: as above, for the final count.
            if self.last.load(Ordering::Acquire) <= b {
                return false;
            }
            idle.wait();
        }
    }

    // ---------------- the sequencer (section 3.2.1) ----------------

    fn sequence<F: Feed<P>>(&self, feed: &mut F) -> RunStats {
        let nb = self.cfg.batches_in_flight as u64;
        let (mut next, mut recycled) = (0u64, 0u64);
        let mut stats = RunStats::default();
        let mut stopping = false;
        let mut idle = Idle::new();
        loop {
            // Hand back every finished batch, in log order.
            let low = self.low();
            while recycled < low {
                self.wait_durable(recycled);
                for i in 0..self.len(recycled) {
                    let cell = self.cell(recycled, i);
                    // SAFETY: every execution thread has finished the batch
                    // (Acquire in `low`); no one else touches the cell.
                    let inner = unsafe { &mut *cell.inner.get() };
                    let proc = inner.proc.take().expect("a logged transaction has its procedure");
                    let outcome = inner.decided.take().expect("a finished transaction has its outcome");
                    let latency = inner.finished.saturating_duration_since(inner.submitted);
                    feed.done(Done { proc, outcome, ts: inner.plan.ts, latency });
                }
                recycled += 1;
                idle = Idle::new();
            }
            if stopping {
                if recycled == next {
                    break;
                }
                idle.wait();
                continue;
            }
            if next - recycled >= nb {
                idle.wait();
                continue;
            }
            // Fill the next batch region.
            let mut n = 0;
            while n < self.batch_size() {
                match feed.next(n == 0 && next == recycled) {
                    Next::Txn(p) => {
                        self.append(next, n, p);
                        n += 1;
                    }
                    Next::Wait => break,
                    Next::Stop => {
                        stopping = true;
                        break;
                    }
                }
            }
            if n > 0 {
                // Relaxed: published by the Release store of `published` below.
                self.lens[(next % nb) as usize].store(n as u64, Ordering::Relaxed);
                next += 1;
                stats.batches += 1;
                stats.txns += n as u64;
                // Release: the batch's cells are filled.
                self.published.store(next, Ordering::Release);
                idle = Idle::new();
            } else if !stopping {
                idle.wait();
            }
            if stopping {
                // Release: as above; the threads stop after batch `next`.
                self.last.store(next, Ordering::Release);
            }
        }
        // Relaxed: statistics only.
        stats.blocked = self.blocked.load(Ordering::Relaxed);
        stats.recursive = self.recursive.load(Ordering::Relaxed);
        stats
    }

    /// Sync durability: waits until every redo record of finished batch `b`
    /// is durable, before its transactions are handed back (one wait a
    /// batch: group commit). A failure is kept for the end of the run.
    fn wait_durable(&self, b: u64) {
        let mut epoch = None;
        for i in 0..self.len(b) {
            // SAFETY: every execution thread has finished the batch (the
            // caller's Acquire in `low`); no one else touches the cell.
            epoch = epoch.max(unsafe { &*self.cell(b, i).inner.get() }.epoch);
        }
        if let Err(e) = self.db.wait_durable(epoch) {
            self.log_failed.lock().get_or_insert(e);
        }
    }

    /// Appends the redo record of a committed transaction: the value (or
    /// absence) of every declared write it made, at its log position.
    fn log_redo(&self, log: &crate::durability::log::Log, inner: &CellInner<P>) -> Option<u64> {
        let plan = &inner.plan;
        let n = plan.written.iter().filter(|&&w| w != UNWRITTEN).count();
        if n == 0 {
            return None;
        }
        let epoch = REDO_BUF.with(|buf| {
            log.append(plan.ts, &mut buf.borrow_mut(), |r| {
                for (i, w) in plan.writes.iter().enumerate() {
                    if plan.written[i] == UNWRITTEN {
                        continue;
                    }
                    // Relaxed: set by the planner before the batch was handed over.
                    // SAFETY: our own placeholder, still PENDING: its data is ours.
                    let v = unsafe { &*w.load(Ordering::Relaxed) };
                    // SAFETY: as above.
                    let value = (plan.written[i] == PRESENT).then(|| unsafe { v.data() });
                    r.put(v.table, v.key.as_bytes(), value);
                }
                n as u32
            })
        });
        Some(epoch)
    }

    /// Appends a transaction at position `i` of batch `b`: its timestamp is
    /// its log position.
    fn append(&self, b: u64, i: usize, p: P) {
        let cell = self.cell(b, i);
        // SAFETY: the region is free (recycled) and not yet published.
        let inner = unsafe { &mut *cell.inner.get() };
        // Relaxed: only the gate's holder advances it.
        let ts = self.store.next_ts.fetch_add(1, Ordering::Relaxed);
        inner.plan.ts = ts;
        // A declaration starts empty: a procedure that forgets to clear must
        // not inherit the previous occupant's records.
        inner.plan.reset();
        p.declare(&mut inner.plan.access);
        inner.proc = Some(p);
        inner.decided = None;
        inner.epoch = None;
        let (nr, nw) = (inner.plan.access.reads.len(), inner.plan.access.writes.len());
        inner.plan.reads.resize_with(nr, || AtomicPtr::new(ptr::null_mut()));
        inner.plan.writes.resize_with(nw, || AtomicPtr::new(ptr::null_mut()));
        inner.plan.written.resize(nw, UNWRITTEN);
        inner.plan.recording = self.recording;
        inner.submitted = Instant::now();
        // Relaxed: published by the Release store of the batch.
        cell.state.store(ts << 2 | UNPROCESSED, Ordering::Relaxed);
    }

    // ---------- concurrency control (sections 3.2.2-3.2.4) ----------

    fn control(&self, me: usize) {
        let m = self.cfg.cc_threads;
        let mine: Vec<usize> = (0..PARTITIONS).filter(|p| p % m == me).collect();
        let mut b = 0u64;
        while self.wait_published(b) {
            let low = self.low();
            for &p in &mine {
                self.store.collect(p, b, low);
            }
            for i in 0..self.len(b) {
                self.plan(me, self.cell(b, i), b);
            }
            // Release: the placeholders and annotations of batch b are
            // written; execution threads Acquire this before running it.
            self.cc_done[me].store(b + 1, Ordering::Release);
            b += 1;
        }
        // The end of the run: wait for the execution threads, then free
        // everything superseded, so the store is at rest.
        let mut idle = Idle::new();
        while self.low() < b {
            idle.wait();
        }
        for &p in &mine {
            self.store.collect(p, b, u64::MAX);
        }
    }

    /// One transaction's read and write sets, for the records of this
    /// thread's partitions: reads first (they see the version before the
    /// transaction's own write), then placeholders.
    fn plan(&self, me: usize, cell: &TxnCell<P>, batch: u64) {
        let m = self.cfg.cc_threads;
        // SAFETY: published, and only read here (the execution threads do
        // not start on the batch until every concurrency-control thread is
        // done with it).
        let inner = unsafe { &*cell.inner.get() };
        let ts = inner.plan.ts;
        let writes = &inner.plan.access.writes;
        let reads = &inner.plan.access.reads;
        // A long read set's lookups overlap their misses: the slot of the
        // read AHEAD on, and the version of the one half as far, are
        // requested before this one is looked up (see `Latest`).
        let long = reads.len() > LINEAR;
        let ahead = |j: usize, f: fn(&Latest, u64)| {
            if let Some((t, k)) = reads.get(j) {
                let h = record_hash(t.0, k);
                let p = partition_of_hash(h);
                if p % m == me {
                    // SAFETY: we own partition p during the run; the
                    // reference ends with the hint.
                    f(&unsafe { self.store.part(p) }.latest, h);
                }
            }
        };
        for (i, (t, k)) in reads.iter().enumerate() {
            if long {
                ahead(i + AHEAD, Latest::prefetch_slot);
                ahead(i + AHEAD / 2, Latest::prefetch_version);
            }
            let h = record_hash(t.0, k);
            let p = partition_of_hash(h);
            if p % m != me {
                continue;
            }
            // A record the transaction also writes is read through its
            // placeholder's Prev Pointer (`ExecTxn::seen`): no annotation.
            if writes.len() <= LINEAR && writes.iter().any(|(wt, wk)| wt == t && wk == k) {
                continue;
            }
            // SAFETY: we own partition p during the run.
            let part = unsafe { self.store.part(p) };
            let v = part.latest.get_hashed(h, t.0, k);
            // Relaxed: published by the Release on cc_done.
            inner.plan.reads[i].store(v, Ordering::Relaxed);
        }
        for (i, (t, k)) in inner.plan.access.writes.iter().enumerate() {
            let p = partition_of(t.0, k);
            if p % m != me {
                continue;
            }
            // SAFETY: as above.
            let part = unsafe { self.store.part(p) };
            let prev = part.latest.get(t.0, k);
            // SAFETY: the latest version of a record is alive.
            if !prev.is_null() && unsafe { &*prev }.begin == ts {
                // Declared twice: one placeholder.
                inner.plan.writes[i].store(prev, Ordering::Relaxed);
                continue;
            }
            let init = BInit {
                begin: ts,
                txn: cell as *const TxnCell<P> as *const u8,
                prev,
                state: PENDING,
                table: t.0,
                key: *k,
            };
            let v = self.store.alloc(p, part, init);
            if !prev.is_null() {
                // Relaxed: informational (reads are annotated, section 3.2.3).
                // SAFETY: the latest version of a record is alive.
                unsafe { &*prev }.end.store(ts, Ordering::Relaxed);
                // Condition 3: free once every execution thread has finished
                // this batch.
                part.retired.push_back((batch, prev));
            }
            part.latest.set(v);
            // Relaxed: published by the Release on cc_done.
            inner.plan.writes[i].store(v, Ordering::Relaxed);
        }
    }

    // ---------------- execution (section 3.3.1) ----------------

    fn execute(&self, me: usize) -> (u64, [u64; AbortReason::COUNT]) {
        let k = self.cfg.exec_threads;
        let mut tally = (0u64, [0u64; AbortReason::COUNT]);
        let mut pending = Vec::new();
        let mut b = 0u64;
        while self.wait_published(b) {
            // Wait for every concurrency-control thread to finish the batch.
            let mut idle = Idle::new();
            // Acquire: pairs with their Release; placeholders are in place.
            while self.cc_done.iter().any(|d| d.load(Ordering::Acquire) <= b) {
                idle.wait();
            }
            pending.clear();
            for i in (me..self.len(b)).step_by(k) {
                if !matches!(self.try_evaluate(self.cell(b, i), 0), Eval::Complete) {
                    pending.push(i);
                }
            }
            let mut idle = Idle::new();
            while !pending.is_empty() {
                pending.retain(|&i| !matches!(self.try_evaluate(self.cell(b, i), 0), Eval::Complete));
                if !pending.is_empty() {
                    idle.wait();
                }
            }
            for i in (me..self.len(b)).step_by(k) {
                // SAFETY: complete; the outcome is no longer written (the
                // Acquire in try_evaluate saw COMPLETE).
                match unsafe { &*self.cell(b, i).inner.get() }.decided {
                    Some(Outcome::Committed) => tally.0 += 1,
                    _ => tally.1[AbortReason::User as usize] += 1,
                }
            }
            // Release: this batch's transactions are complete (GC and the
            // sequencer Acquire it in `low`).
            self.exec_done[me].store(b + 1, Ordering::Release);
            b += 1;
        }
        tally
    }

    /// Claims and evaluates a transaction if it is Unprocessed.
    fn try_evaluate(&self, cell: &TxnCell<P>, depth: usize) -> Eval {
        // Acquire: a COMPLETE seen here makes the outcome and placeholders
        // visible (pairs with the Release that completed it).
        let word = cell.state.load(Ordering::Acquire);
        match word & 3 {
            COMPLETE => Eval::Complete,
            EXECUTING => Eval::Busy,
            _ => {
                // Acquire: the last evaluation's writes (given back with
                // Release) are visible to this one.
                match cell.state.compare_exchange(word, word | EXECUTING, Ordering::Acquire, Ordering::Relaxed) {
                    Ok(_) => self.evaluate(cell, depth),
                    Err(now) if now & 3 == COMPLETE => Eval::Complete,
                    Err(_) => Eval::Busy,
                }
            }
        }
    }

    /// Evaluates a claimed transaction: runs its logic (unless an earlier
    /// run decided it), then finishes its placeholders.
    fn evaluate(&self, cell: &TxnCell<P>, depth: usize) -> Eval {
        // SAFETY: we hold the claim (Executing): the inner state is ours.
        let inner = unsafe { &mut *cell.inner.get() };
        let word = inner.plan.ts << 2;
        if inner.decided.is_none() {
            inner.plan.written.iter_mut().for_each(|w| *w = UNWRITTEN);
            inner.plan.history.clear();
            let mut proc = inner.proc.take().expect("a logged transaction has its procedure");
            let mut t = ExecTxn {
                pipe: self as *const Self as *const u8,
                produce: run_for::<P>,
                depth,
                plan: &mut inner.plan,
                max_value: self.db.opts.max_value_size,
                blocked: false,
                refused: None,
                cursor: 0,
            };
            let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| proc.run(&mut t))) {
                Ok(r) => r,
                Err(payload) => {
                    // The run goes on (a batch left half done would stall
                    // every thread); bohm_run re-raises the panic at the end.
                    self.panic.lock().get_or_insert(payload);
                    t.blocked = false;
                    t.refused.get_or_insert_with(|| Error::InvalidArgument("the procedure panicked".into()));
                    Ok(())
                }
            };
            let (blocked, refused) = (t.blocked, t.refused.take());
            inner.proc = Some(proc);
            if blocked {
                // Relaxed: statistics only.
                self.blocked.fetch_add(1, Ordering::Relaxed);
                // Release: give it back for another try.
                cell.state.store(word | UNPROCESSED, Ordering::Release);
                return Eval::Blocked;
            }
            inner.decided = Some(match (refused, r) {
                (Some(e), _) => Outcome::Refused(e),
                (None, Ok(())) => Outcome::Committed,
                (None, Err(e)) => Outcome::Aborted(e),
            });
        }
        let commit = matches!(inner.decided, Some(Outcome::Committed));
        // Every placeholder that does not get this transaction's own value
        // takes its predecessor's, which must be produced first.
        for (i, w) in inner.plan.writes.iter().enumerate() {
            if commit && inner.plan.written[i] != UNWRITTEN {
                continue;
            }
            // Relaxed: set by the planner before the batch was handed over.
            let v = w.load(Ordering::Relaxed);
            // SAFETY: our own placeholder.
            let prev = unsafe { &*v }.prev;
            if !prev.is_null() && !self.produce(prev, depth) {
                // Release: give it back, its outcome decided, for another try.
                cell.state.store(word | UNPROCESSED, Ordering::Release);
                return Eval::Blocked;
            }
        }
        // Logging: the redo record goes out before the placeholders are
        // produced, so a reader of our values appends after us
        // (`durability::log`).
        if commit {
            if let Some(d) = &self.db.durable {
                inner.epoch = self.log_redo(&d.log, inner);
            }
        }
        for (i, w) in inner.plan.writes.iter().enumerate() {
            // Relaxed: as above.
            let v = w.load(Ordering::Relaxed);
            // SAFETY: our own placeholder; nobody reads it while PENDING.
            let ver = unsafe { &*v };
            if ver.state.load(Ordering::Relaxed) != PENDING {
                continue; // declared twice: installed already
            }
            let state = if commit && inner.plan.written[i] != UNWRITTEN {
                // SAFETY: our own placeholder, still PENDING: nobody reads it.
                unsafe { *ver.writer.get() = inner.plan.ts };
                inner.plan.written[i]
            } else if ver.prev.is_null() {
                ABSENT
            } else {
                // SAFETY: produced (checked above) and kept alive until this
                // batch is finished (Condition 3).
                let prev = unsafe { &*ver.prev };
                let s = prev.state();
                // SAFETY: `ver` is our PENDING placeholder (nobody reads it);
                // `prev` is produced, so nobody writes it.
                unsafe {
                    *ver.writer.get() = prev.writer();
                    if s == PRESENT {
                        (*ver.data.get()).clear();
                        (*ver.data.get()).extend_from_slice(prev.data());
                    }
                }
                s
            };
            // Release: the value and writer are complete.
            ver.state.store(state, Ordering::Release);
            if state == ABSENT {
                self.store.parts[partition_of(ver.table, &ver.key)].notes.lock().push(Note {
                    table: ver.table,
                    key: ver.key,
                    v,
                });
            }
        }
        if self.recording {
            self.record(inner);
        }
        inner.finished = Instant::now();
        // Release: the transaction and its placeholders are complete.
        cell.state.store(word | COMPLETE, Ordering::Release);
        Eval::Complete
    }

    /// Makes sure a version is produced, evaluating its producer here if
    /// nobody else is (recursively, section 3.3.1). False: not produced yet.
    fn produce(&self, v: *mut BVersion, depth: usize) -> bool {
        // SAFETY: a version some transaction of the log may read is alive.
        let ver = unsafe { &*v };
        if ver.state() != PENDING {
            return true;
        }
        if depth >= MAX_DEPTH {
            return false;
        }
        // SAFETY: a PENDING version's producer is in the log: its cell is
        // in the ring and cannot be reused before the producer completes;
        // the claim names the producer's ts, so a reused cell is refused.
        let cell = unsafe { &*(ver.txn as *const TxnCell<P>) };
        let word = ver.begin << 2;
        // Acquire: as in try_evaluate.
        if cell.state.compare_exchange(word, word | EXECUTING, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            // Relaxed: statistics only.
            self.recursive.fetch_add(1, Ordering::Relaxed);
            self.evaluate(cell, depth + 1);
        }
        ver.state() != PENDING
    }

    /// Hands the finished transaction to the database's history.
    #[cold]
    fn record(&self, inner: &mut CellInner<P>) {
        let ops = std::mem::take(&mut inner.plan.history);
        let (commit_ts, outcome) = match inner.decided {
            Some(Outcome::Committed) => (Some(inner.plan.ts), HOutcome::Committed),
            _ => (None, HOutcome::Aborted(AbortReason::User)),
        };
        self.db.record(TxnRecord {
            id: inner.plan.ts,
            isolation: Isolation::Serializable,
            begin_ts: inner.plan.ts,
            commit_ts,
            outcome,
            // It reads as of its timestamp, which is its commit timestamp.
            locking: true,
            snapshot: false,
            ops,
        });
    }
}

/// What an evaluation attempt came to.
enum Eval {
    Complete,
    /// Given back: a value it needs is not produced yet.
    Blocked,
    /// Another thread is evaluating it.
    Busy,
}

/// Evaluates the producer of a version, type-erased for [`ExecTxn`] (which
/// is not generic, so that workloads implement their operations once).
fn run_for<P: Procedure>(pipe: *const u8, v: *mut BVersion, depth: usize) -> bool {
    // SAFETY: `pipe` is the pipeline of type P that made the ExecTxn.
    let pipe = unsafe { &*(pipe as *const Pipeline<'_, P>) };
    pipe.produce(v, depth)
}

// ----------------------------------------------------------------------
// A transaction's operations on an execution thread
// ----------------------------------------------------------------------

/// Declared read and write sets up to this size are searched linearly.
/// In a larger read set, a read is first matched against the next declared
/// read (a long reader reads its records in the order it declared them); a
/// record out of that order, or in a large write set, is found through a
/// map built at the first such lookup.
const LINEAR: usize = 16;

/// How many declared reads ahead a long reader's versions are prefetched
/// (see `ExecTxn::read_ahead`).
const AHEAD: usize = 16;

/// Where a transaction finds a record: its own write, or a version.
#[derive(Clone, Copy)]
enum Seen {
    Own(usize),
    Version(*mut BVersion),
}

/// The operations a [`Procedure`] runs, on an execution thread: reads and
/// writes of the records it declared, at its timestamp.
pub struct ExecTxn<'a> {
    pipe: *const u8,
    produce: fn(*const u8, *mut BVersion, usize) -> bool,
    depth: usize,
    plan: &'a mut Plan,
    max_value: usize,
    blocked: bool,
    refused: Option<Error>,
    /// The declared read expected next (see [`LINEAR`]).
    cursor: usize,
}

impl ExecTxn<'_> {
    /// The transaction's timestamp (its log position).
    pub fn ts(&self) -> u64 {
        self.plan.ts
    }

    /// Positions of a record in the declared reads and writes (the first
    /// declared write: duplicates share a placeholder, and only the first
    /// position tracks what this run wrote).
    fn find(&mut self, table: TableId, key: &Key) -> (Option<usize>, Option<usize>) {
        let a = &self.plan.access;
        let at = |l: &[(TableId, Key)]| l.iter().position(|(t, k)| *t == table && k == key);
        if a.writes.len() <= LINEAR {
            if a.reads.len() <= LINEAR {
                return (at(&a.reads), at(&a.writes));
            }
            // A declared read at the cursor (or the one just matched: a
            // write looks its record up twice) needs no map; a duplicate
            // read was annotated with the same version as its first one.
            let c = self.cursor;
            let is = |i: usize| a.reads.get(i).is_some_and(|(t, k)| *t == table && k == key);
            if is(c) {
                self.cursor = c + 1;
                self.read_ahead(c);
                return (Some(c), at(&self.plan.access.writes));
            }
            if c > 0 && is(c - 1) {
                return (Some(c - 1), at(&a.writes));
            }
        }
        if self.plan.lookup.is_empty() {
            for (i, (t, k)) in a.reads.iter().enumerate() {
                self.plan.lookup.entry(MapKey { table: t.0, key: *k }).or_insert((0, 0)).0 = i as u32 + 1;
            }
            for (i, (t, k)) in a.writes.iter().enumerate() {
                let e = self.plan.lookup.entry(MapKey { table: t.0, key: *k }).or_insert((0, 0));
                if e.1 == 0 {
                    e.1 = i as u32 + 1;
                }
            }
        }
        match self.plan.lookup.get(&MapKey { table: table.0, key: *key }) {
            None => (None, None),
            Some(&(r, w)) => (r.checked_sub(1).map(|r| r as usize), w.checked_sub(1).map(|w| w as usize)),
        }
    }

    /// A long reader's versions are known before it reads them (section
    /// 3.2.3's annotations): while it reads in declared order, start
    /// loading the version [`AHEAD`] reads on, and the value of the one
    /// half as far, whose version was requested that many reads ago, so
    /// that the two dependent misses of each read overlap with others.
    #[inline]
    fn read_ahead(&self, c: usize) {
        let reads = &self.plan.reads;
        if let Some(v) = reads.get(c + AHEAD) {
            // Relaxed: published by the planner's Release on cc_done.
            let v = v.load(Ordering::Relaxed) as *const u8;
            prefetch(v);
            prefetch(v.wrapping_add(64));
        }
        if let Some(v) = reads.get(c + AHEAD / 2) {
            // Relaxed: as above.
            let v = v.load(Ordering::Relaxed);
            if !v.is_null() {
                // SAFETY: annotated for this unfinished transaction: alive
                // until its batch is finished (Condition 3, as in `ready`).
                let ver = unsafe { &*v };
                if ver.state() != PENDING {
                    // SAFETY: produced, so nobody writes it any more.
                    prefetch(unsafe { ver.data() }.as_ptr());
                }
            }
        }
    }

    /// Hints that the transaction is about to access these declared
    /// records (the workloads' prefetch, as under the other protocols). A
    /// record is three dependent misses away — its placeholder (for a
    /// write), the version to read, its value — so each step is issued for
    /// all the keys before the next, and their misses overlap. Only for
    /// declarations short enough to search linearly; changes nothing.
    pub fn prefetch(&self, table: TableId, keys: &[Key]) {
        let a = &self.plan.access;
        if a.reads.len() > LINEAR || a.writes.len() > LINEAR {
            return;
        }
        let at = |l: &[(TableId, Key)], key: &Key| l.iter().position(|(t, k)| *t == table && k == key);
        let keys = &keys[..keys.len().min(LINEAR)];
        let mut seen = [Seen::Version(ptr::null_mut()); LINEAR];
        for (key, s) in keys.iter().zip(seen.iter_mut()) {
            *s = match (at(&a.writes, key), at(&a.reads, key)) {
                (Some(w), _) => {
                    // Relaxed: as in `placeholder`.
                    prefetch(self.plan.writes[w].load(Ordering::Relaxed) as *const u8);
                    Seen::Own(w)
                }
                // Relaxed: as in `seen`.
                (None, Some(r)) => Seen::Version(self.plan.reads[r].load(Ordering::Relaxed)),
                (None, None) => continue,
            };
        }
        for s in seen[..keys.len()].iter_mut() {
            if let Seen::Own(w) = *s {
                // The version before the placeholder is the one to read.
                *s = Seen::Version(self.placeholder(w).prev);
            }
            if let Seen::Version(v) = *s {
                prefetch(v as *const u8);
            }
        }
        for s in &seen[..keys.len()] {
            let Seen::Version(v) = *s else { continue };
            if v.is_null() {
                continue;
            }
            // SAFETY: annotated for, or preceding a placeholder of, this
            // unfinished transaction: alive (Condition 3, as in `ready`).
            let ver = unsafe { &*v };
            if ver.state() == PRESENT {
                // SAFETY: produced, so nobody writes it any more.
                let data = unsafe { ver.data() };
                let first = data.as_ptr() as usize & !63;
                for line in (first..data.as_ptr() as usize + data.len()).step_by(64) {
                    prefetch(line as *const u8);
                }
            }
        }
    }

    /// Records an access outside the declaration: the transaction will be
    /// refused whatever its logic does with the error.
    #[cold]
    fn refuse(&mut self, what: &str, table: TableId, key: Option<&Key>) -> Error {
        let e = Error::NotDeclared(match key {
            Some(k) => format!("BOHM transaction {what} of key {k:?} in table #{}, which it did not declare", table.0),
            None => format!("BOHM transactions access declared records only; a {what} cannot be declared"),
        });
        if self.refused.is_none() {
            self.refused = Some(e.clone());
        }
        e
    }

    /// A value this transaction needs is not produced yet: it will be given
    /// back and run again (section 3.3.1). The error only unwinds the logic.
    #[cold]
    fn block(&mut self) -> Error {
        self.blocked = true;
        Error::Aborted(AbortReason::CommitDependency)
    }

    #[inline]
    fn placeholder(&self, w: usize) -> &BVersion {
        // SAFETY: planned before the batch was handed over; our own.
        // Relaxed: published by the planner's Release on cc_done.
        unsafe { &*self.plan.writes[w].load(Ordering::Relaxed) }
    }

    /// What this transaction sees of a record, or an error if undeclared.
    fn seen(&mut self, table: TableId, key: &Key, what: &str) -> Result<Seen> {
        match self.find(table, key) {
            (_, Some(w)) if self.plan.written[w] != UNWRITTEN => Ok(Seen::Own(w)),
            // The version before our placeholder is the one at our timestamp.
            (_, Some(w)) => Ok(Seen::Version(self.placeholder(w).prev)),
            // Relaxed: as for placeholders.
            (Some(r), None) => Ok(Seen::Version(self.plan.reads[r].load(Ordering::Relaxed))),
            (None, None) => Err(self.refuse(what, table, Some(key))),
        }
    }

    /// Makes sure `v` is produced (evaluating its producer if possible).
    #[inline]
    fn ready<'v>(&mut self, v: *mut BVersion) -> Result<Option<&'v BVersion>> {
        if v.is_null() {
            return Ok(None);
        }
        // SAFETY: a version annotated for, or preceding a placeholder of, an
        // unfinished transaction is alive until the transaction's batch is
        // finished (Condition 3), which outlasts this run of its logic.
        let ver = unsafe { &*v };
        if ver.state() == PENDING && !(self.produce)(self.pipe, v, self.depth) {
            return Err(self.block());
        }
        Ok(Some(ver))
    }

    /// Whether the record exists as this transaction sees it.
    fn exists(&mut self, seen: &Seen) -> Result<bool> {
        match *seen {
            Seen::Own(w) => Ok(self.plan.written[w] == PRESENT),
            Seen::Version(v) => Ok(self.ready(v)?.is_some_and(|v| v.state() == PRESENT)),
        }
    }

    /// Reads a declared record and passes its value to `f`.
    pub fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        match self.seen(table, key, "read")? {
            Seen::Own(w) => {
                if self.plan.written[w] != PRESENT {
                    return Ok(None);
                }
                // SAFETY: our own placeholder, written by this run.
                Ok(Some(f(unsafe { &*self.placeholder(w).data.get() })))
            }
            Seen::Version(v) => {
                let recording = self.plan.recording;
                let ver = self.ready(v)?;
                let found = match ver {
                    Some(ver) if ver.state() == PRESENT => {
                        // SAFETY: produced.
                        let (data, writer) = unsafe { (ver.data(), ver.writer()) };
                        Some((data, writer))
                    }
                    _ => None,
                };
                if recording {
                    let version = found.map(|(d, w)| (Writer::Committed(w), d.to_vec()));
                    self.plan.history.push(Op::Read { table: table.0, key: *key, version });
                }
                Ok(found.map(|(d, _)| f(d)))
            }
        }
    }

    /// Writes a declared record: `fill(old, new)` produces the new value
    /// (None: delete) from the old one (None: no row).
    fn write(
        &mut self,
        table: TableId,
        key: &Key,
        kind: WriteKind,
        fill: impl FnOnce(Option<&[u8]>, &mut Vec<u8>),
    ) -> Result<()> {
        let w = match self.find(table, key) {
            (_, Some(w)) => w,
            _ => return Err(self.refuse("write", table, Some(key))),
        };
        let seen = self.seen(table, key, "write")?;
        let exists = self.exists(&seen)?;
        match (kind, exists) {
            (WriteKind::Insert, true) => return Err(Error::DuplicateKey),
            (WriteKind::Update | WriteKind::Delete, false) => return Err(Error::KeyNotFound),
            _ => {}
        }
        if self.plan.recording && exists {
            if let Seen::Version(v) = seen {
                // The version replaced, as the other protocols record it: the
                // checker's read-write edge for a read-modify-write.
                // SAFETY: produced (`exists` made it ready) and alive.
                let (writer, data) = unsafe { ((*v).writer(), (*v).data().to_vec()) };
                self.plan.history.push(Op::Read {
                    table: table.0,
                    key: *key,
                    version: Some((Writer::Committed(writer), data)),
                });
            }
        }
        let ph = self.placeholder(w) as *const BVersion;
        // SAFETY: our own placeholder: nobody reads its data while PENDING.
        let data = unsafe { &mut *(*ph).data.get() };
        if kind == WriteKind::Delete {
            self.plan.written[w] = ABSENT;
            data.clear();
        } else {
            match seen {
                Seen::Own(_) => {
                    // Old and new in one buffer: build aside, then swap.
                    let mut new = Vec::with_capacity(data.len());
                    fill(Some(data), &mut new);
                    *data = new;
                }
                Seen::Version(v) => {
                    data.clear();
                    // SAFETY: produced (`exists` made it ready) and alive.
                    let old = if exists { Some(unsafe { (*v).data() }) } else { None };
                    fill(old, data);
                }
            }
            if data.len() > self.max_value {
                // The placeholder's buffer is spoilt: the transaction cannot
                // commit, whatever its logic does with the error.
                let e = Error::ValueTooLarge { len: data.len(), max: self.max_value };
                data.clear();
                self.refused.get_or_insert_with(|| e.clone());
                return Err(e);
            }
            self.plan.written[w] = PRESENT;
        }
        if self.plan.recording {
            let value = if kind == WriteKind::Delete { Vec::new() } else { data.clone() };
            self.plan.history.push(Op::Write { table: table.0, key: *key, kind, value });
        }
        Ok(())
    }

    /// Inserts a declared record that has no row.
    pub fn insert(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        self.write(table, &key, WriteKind::Insert, |_, new| new.extend_from_slice(value))
    }

    /// Replaces the value of a declared record.
    pub fn update(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<()> {
        self.write(table, key, WriteKind::Update, |_, new| new.extend_from_slice(value))
    }

    /// Read-modify-write of a declared record: `f(old, new)` fills `new`.
    pub fn update_with(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()> {
        self.write(table, key, WriteKind::Update, |old, new| f(old.unwrap_or(&[]), new))
    }

    /// Read-modify-write in place of a copy of the old value.
    pub fn modify(&mut self, table: TableId, key: &Key, f: impl FnOnce(&mut [u8])) -> Result<()> {
        self.write(table, key, WriteKind::Update, |old, new| {
            new.extend_from_slice(old.unwrap_or(&[]));
            f(new)
        })
    }

    /// Deletes a declared record.
    pub fn delete(&mut self, table: TableId, key: &Key) -> Result<()> {
        self.write(table, key, WriteKind::Delete, |_, _| {})
    }

    /// Secondary-index lookups cannot be declared: refused.
    pub fn get_by(&mut self, index: IndexId, _key: &Key, _f: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        Err(self.refuse("secondary-index lookup", index.table(), None))
    }

    /// Scans cannot be declared: refused.
    pub fn scan(
        &mut self,
        index: IndexId,
        _range: impl RangeBounds<Key>,
        _filter: Option<&Filter>,
        _f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        Err(self.refuse("scan", index.table(), None))
    }
}

// ----------------------------------------------------------------------
// Running a pipeline
// ----------------------------------------------------------------------

impl Database {
    pub(crate) fn bohm_store(&self) -> Result<&Store> {
        self.bohm.as_ref().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "the BOHM pipeline needs a database opened with protocol bohm, not {}",
                self.opts.protocol
            ))
        })
    }

    /// Runs BOHM's pipeline over a stream of transactions (section 3): the
    /// calling thread is the sequencer, `cfg.cc_threads` and
    /// `cfg.exec_threads` more threads plan and execute. Returns when the
    /// feed has stopped and everything it gave has finished (each handed
    /// back through [`Feed::done`]). Waits first for interactive
    /// transactions and other runs to end; they wait for this one.
    pub fn bohm_run<P: Procedure, F: Feed<P>>(&self, cfg: Config, mut feed: F) -> Result<(F, RunStats)> {
        let store = self.bohm_store()?;
        cfg.check()?;
        let _gate = store.gate.lock();
        let n = cfg.batch_size * cfg.batches_in_flight;
        let pipe = Pipeline {
            db: self,
            store,
            cfg,
            cells: (0..n).map(|_| TxnCell::new()).collect(),
            lens: (0..cfg.batches_in_flight).map(|_| AtomicU64::new(0)).collect(),
            published: CachePadded::new(AtomicU64::new(0)),
            last: CachePadded::new(AtomicU64::new(u64::MAX)),
            cc_done: (0..cfg.cc_threads).map(|_| CachePadded::new(AtomicU64::new(0))).collect(),
            exec_done: (0..cfg.exec_threads).map(|_| CachePadded::new(AtomicU64::new(0))).collect(),
            recording: self.is_recording(),
            blocked: AtomicU64::new(0),
            recursive: AtomicU64::new(0),
            panic: Mutex::new(None),
            log_failed: Mutex::new(None),
        };
        let pipe = &pipe;
        let stats = std::thread::scope(|s| {
            let spawn = |name: String| std::thread::Builder::new().name(name).stack_size(16 << 20);
            let mut cc = Vec::new();
            for i in 0..cfg.cc_threads {
                cc.push(spawn(format!("bohm-cc-{i}")).spawn_scoped(s, move || pipe.control(i)));
            }
            let mut ex = Vec::new();
            for i in 0..cfg.exec_threads {
                ex.push(spawn(format!("bohm-exec-{i}")).spawn_scoped(s, move || pipe.execute(i)));
            }
            let stats = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pipe.sequence(&mut feed)));
            if stats.is_err() {
                // The feed panicked: stop after what was published, so the
                // other threads finish and can be joined.
                // Release: as in `sequence`.
                pipe.last.store(pipe.published.load(Ordering::Acquire), Ordering::Release);
            }
            for h in cc {
                h.expect("spawning a BOHM thread").join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            }
            for h in ex {
                let (c, a) = h.expect("spawning a BOHM thread").join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                // Relaxed: statistics only.
                store.committed.fetch_add(c, Ordering::Relaxed);
                for (i, n) in a.iter().enumerate() {
                    store.aborts[i].fetch_add(*n, Ordering::Relaxed);
                }
            }
            stats
        });
        if let Some(p) = pipe.panic.lock().take() {
            std::panic::resume_unwind(p);
        }
        let stats = stats.unwrap_or_else(|p| std::panic::resume_unwind(p));
        if let Some(e) = pipe.log_failed.lock().take() {
            return Err(e);
        }
        Ok((feed, stats))
    }

    /// Runs BOHM's pipeline as a server for the duration of `f`: any thread
    /// may call [`Server::execute`], which blocks until its transaction has
    /// run. When `f` returns, the server stops taking transactions,
    /// finishes those it took, and stops.
    pub fn bohm_serve<P: Procedure, R>(&self, cfg: Config, f: impl FnOnce(&Server<P>) -> R) -> Result<R> {
        self.bohm_store()?;
        cfg.check()?;
        let shared = Arc::new(ServerShared {
            queue: Mutex::new(ServerQueue { items: VecDeque::new(), shut: false }),
            cv: Condvar::new(),
        });
        let server = Server { shared: shared.clone() };
        std::thread::scope(|s| {
            let feed = ServerFeed { shared: shared.clone() };
            let h = std::thread::Builder::new()
                .name("bohm-sequencer".into())
                .spawn_scoped(s, move || self.bohm_run(cfg, feed).map(|_| ()))
                .map_err(|e| Error::InvalidArgument(format!("cannot start the BOHM sequencer: {e}")))?;
            // Stops the server however `f` ends (a panic included), so the
            // sequencer finishes and the scope can join it.
            struct Stop<'a, P: Procedure>(&'a Server<P>);
            impl<P: Procedure> Drop for Stop<'_, P> {
                fn drop(&mut self) {
                    self.0.shutdown();
                }
            }
            let stop = Stop(&server);
            let r = f(&server);
            drop(stop);
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
            Ok(r)
        })
    }
}

struct ServerQueue<P: Procedure> {
    items: VecDeque<Ticket<P>>,
    shut: bool,
}

struct ServerShared<P: Procedure> {
    queue: Mutex<ServerQueue<P>>,
    cv: Condvar,
}

/// A reply slot for one blocking call.
struct Reply<P: Procedure> {
    done: Mutex<Option<Done<P>>>,
    cv: Condvar,
}

/// A transaction submitted through [`Server::execute`], with its reply slot.
struct Ticket<P: Procedure> {
    proc: P,
    reply: Arc<Reply<P>>,
}

impl<P: Procedure> Procedure for Ticket<P> {
    type Error = P::Error;
    fn declare(&self, access: &mut AccessSet) {
        self.proc.declare(access)
    }
    fn run(&mut self, t: &mut ExecTxn<'_>) -> std::result::Result<(), P::Error> {
        self.proc.run(t)
    }
}

struct ServerFeed<P: Procedure> {
    shared: Arc<ServerShared<P>>,
}

impl<P: Procedure> Feed<Ticket<P>> for ServerFeed<P> {
    fn next(&mut self, idle: bool) -> Next<Ticket<P>> {
        let mut q = self.shared.queue.lock();
        if q.items.is_empty() && !q.shut && idle {
            // Nothing in flight: sleep until a client comes (bounded, so
            // a shutdown is never missed).
            self.shared.cv.wait_for(&mut q, Duration::from_millis(5));
        }
        match q.items.pop_front() {
            Some(t) => Next::Txn(t),
            None if q.shut => Next::Stop,
            None => Next::Wait,
        }
    }
    fn done(&mut self, d: Done<Ticket<P>>) {
        let Ticket { proc, reply } = d.proc;
        *reply.done.lock() = Some(Done { proc, outcome: d.outcome, ts: d.ts, latency: d.latency });
        reply.cv.notify_one();
    }
}

/// A running BOHM server (see [`Database::bohm_serve`]).
pub struct Server<P: Procedure> {
    shared: Arc<ServerShared<P>>,
}

impl<P: Procedure> Server<P> {
    /// Submits a transaction and waits until it has run; returns how it
    /// ended. Fails with [`Error::ShuttingDown`] (without running it) once
    /// the server has begun to stop.
    pub fn execute(&self, proc: P) -> Result<Done<P>> {
        let reply = Arc::new(Reply { done: Mutex::new(None), cv: Condvar::new() });
        {
            let mut q = self.shared.queue.lock();
            if q.shut {
                return Err(Error::ShuttingDown);
            }
            q.items.push_back(Ticket { proc, reply: reply.clone() });
        }
        self.shared.cv.notify_one();
        let mut d = reply.done.lock();
        loop {
            if let Some(done) = d.take() {
                return Ok(done);
            }
            reply.cv.wait(&mut d);
        }
    }

    /// Stops taking transactions; those already taken still run.
    pub fn shutdown(&self) {
        self.shared.queue.lock().shut = true;
        self.shared.cv.notify_all();
    }

    /// False once [`Server::shutdown`] was called.
    pub fn is_running(&self) -> bool {
        !self.shared.queue.lock().shut
    }
}

// ----------------------------------------------------------------------
// Interactive transactions: alone, at the next log position
// ----------------------------------------------------------------------

/// One write of an interactive transaction: the record's latest version
/// before (null: none) and after.
pub(crate) struct Undo {
    part: usize,
    key: MapKey,
    old: *mut BVersion,
    new: *mut BVersion,
}

impl Database {
    /// Takes the store for an interactive transaction (module docs): waits
    /// for the gate; the matching release is `bohm_release`. Returns the
    /// transaction's timestamp.
    pub(crate) fn bohm_enter(&self) -> u64 {
        let store = self.bohm.as_ref().expect("bohm databases have a store");
        std::mem::forget(store.gate.lock());
        // Relaxed: only the gate's holder advances it.
        store.next_ts.fetch_add(1, Ordering::Relaxed)
    }
}

impl<'db> Transaction<'db> {
    #[inline]
    fn store(&self) -> &'db Store {
        self.db.bohm.as_ref().expect("bohm databases have a store")
    }

    /// Gives the gate back (commit or rollback).
    fn bohm_release(&self) {
        // SAFETY: taken in `bohm_enter` for this transaction and forgotten;
        // released exactly once, as the transaction ends.
        unsafe { self.store().gate.force_unlock() };
    }

    fn bo_enter(&self) -> Result<()> {
        match self.status {
            Status::Aborted(r) => Err(Error::TransactionClosed(Some(r))),
            Status::Active => Ok(()),
        }
    }

    /// The latest version of a record if it holds a row.
    fn bo_latest(&self, table: TableId, key: &Key) -> Result<(usize, MapKey, *mut BVersion)> {
        self.db.table_ref(table)?;
        let mk = MapKey { table: table.0, key: *key };
        let p = partition_of(table.0, key);
        // SAFETY: the gate makes us the only user of every partition.
        let v = unsafe { self.store().part(p) }.latest.get(table.0, key);
        Ok((p, mk, v))
    }

    pub(crate) fn bo_get_with<R>(
        &mut self,
        table: TableId,
        key: &Key,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        self.bo_enter()?;
        let (_, _, v) = self.bo_latest(table, key)?;
        // SAFETY: the latest version is alive and produced (no run is going on).
        let found = (!v.is_null()).then(|| unsafe { &*v }).filter(|v| v.state() == PRESENT);
        if self.recording {
            // SAFETY: produced.
            let version = found.map(|v| unsafe { (Writer::Committed(v.writer()), v.data().to_vec()) });
            self.record(Op::Read { table: table.0, key: *key, version });
        }
        // SAFETY: as above.
        Ok(found.map(|v| f(unsafe { v.data() })))
    }

    /// Writes a record: `fill(old, new)` makes the new value from the old
    /// (None: no row); `kind` says which rows are acceptable.
    pub(crate) fn bo_write(
        &mut self,
        table: TableId,
        key: &Key,
        kind: WriteKind,
        fill: impl FnOnce(Option<&[u8]>, &mut Vec<u8>),
    ) -> Result<()> {
        self.bo_enter()?;
        let (p, mk, old) = self.bo_latest(table, key)?;
        // SAFETY: as in bo_get_with.
        let present = !old.is_null() && unsafe { &*old }.state() == PRESENT;
        match (kind, present) {
            (WriteKind::Insert, true) => return Err(Error::DuplicateKey),
            (WriteKind::Update | WriteKind::Delete, false) => return Err(Error::KeyNotFound),
            _ => {}
        }
        let store = self.store();
        // SAFETY: the gate makes us the only user of every partition.
        let part = unsafe { store.part(p) };
        let state = if kind == WriteKind::Delete { ABSENT } else { PRESENT };
        let init = BInit { begin: self.begin_ts, txn: ptr::null(), prev: old, state, table: table.0, key: *key };
        let new = store.alloc(p, part, init);
        if kind != WriteKind::Delete {
            // SAFETY: fresh, ours alone; `old` is a different, produced version.
            let data = unsafe { &mut *(*new).data.get() };
            // SAFETY: `old` is produced (present) and alive while we run.
            fill(present.then(|| unsafe { (*old).data() }), data);
            if data.len() > self.db.opts.max_value_size {
                let e = Error::ValueTooLarge { len: data.len(), max: self.db.opts.max_value_size };
                store.free(p, part, new);
                return Err(e);
            }
        }
        if !old.is_null() {
            // Relaxed: nobody else runs.
            // SAFETY: the latest version of its record: alive.
            unsafe { &*old }.end.store(self.begin_ts, Ordering::Relaxed);
        }
        part.latest.set(new);
        self.local().bohm.push(Undo { part: p, key: mk, old, new });
        if self.recording {
            // SAFETY: ours.
            let value = if kind == WriteKind::Delete { Vec::new() } else { unsafe { (*(*new).data.get()).clone() } };
            self.record(Op::Write { table: table.0, key: *key, kind, value });
        }
        Ok(())
    }

    /// A scan (or a secondary-index lookup, as a one-key range) over the
    /// latest versions, in key order.
    pub(crate) fn bo_scan(
        &mut self,
        index: IndexId,
        lo: Bound<Key>,
        hi: Bound<Key>,
        filter: Option<&Filter>,
        mut f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        self.bo_enter()?;
        let (_, ix) = self.index_ref(index)?;
        let key_fn = ix.key_fn;
        let store = self.store();
        let mut rows: Vec<(Key, Key, *mut BVersion)> = Vec::new();
        for p in 0..PARTITIONS {
            // SAFETY: the gate makes us the only user of every partition.
            for v in unsafe { store.part(p) }.latest.versions() {
                // SAFETY: latest versions are alive and produced.
                let ver = unsafe { &*v };
                if ver.table != index.table || ver.state() != PRESENT {
                    continue;
                }
                let ik = match key_fn {
                    // SAFETY: produced (PRESENT), so its data is final.
                    Some(kf) => kf(&ver.key, unsafe { ver.data() }),
                    None => ver.key,
                };
                if (lo.as_ref(), hi.as_ref()).contains(&ik) {
                    rows.push((ik, ver.key, v));
                }
            }
        }
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut seen = Vec::new();
        for (_, pk, v) in rows {
            // SAFETY: as above.
            let (data, writer) = unsafe { ((*v).data(), (*v).writer()) };
            if filter.is_some_and(|fl| !fl(&pk, data)) {
                continue;
            }
            if self.recording {
                seen.push((pk, Writer::Committed(writer), data.to_vec()));
            }
            if !f(&pk, data) {
                break;
            }
        }
        if self.recording {
            self.record_scan(index, lo, hi, filter.is_some(), seen);
        }
        Ok(())
    }

    pub(crate) fn bo_commit(mut self) -> Result<CommitInfo> {
        self.bo_enter()?;
        let store = self.store();
        let undo = std::mem::take(&mut self.local().bohm);
        // Logging, as in the pipeline: the versions written, in order (before
        // the superseded ones are freed).
        let epoch = match &self.db.durable {
            Some(d) if !undo.is_empty() => {
                Some(d.log.append(self.begin_ts, &mut self.local().log_buf, |r| {
                    for u in &undo {
                        // SAFETY: the gate makes us the only user of the store;
                        // our versions are produced and alive until it opens.
                        let v = unsafe { &*u.new };
                        // SAFETY: as above; a present version's data is final.
                        let value = (v.state() == PRESENT).then(|| unsafe { v.data() });
                        r.put(v.table, v.key.as_bytes(), value);
                    }
                    undo.len() as u32
                }))
            }
            _ => None,
        };
        for u in &undo {
            // SAFETY: the gate makes us the only user of every partition.
            let part = unsafe { store.part(u.part) };
            if !u.old.is_null() {
                // Superseded, and nobody else can reach it: free at once.
                store.free(u.part, part, u.old);
            }
        }
        // A deleted record keeps no version (deleted in order, so a later
        // write's version is what remains).
        for u in &undo {
            // SAFETY: the gate makes us the only user of every partition;
            // `u.new` is dereferenced only while it is the latest (alive).
            let part = unsafe { store.part(u.part) };
            // SAFETY: (of the dereference) `u.new` is the latest version, so alive.
            if part.latest.get(u.key.table, &u.key.key) == u.new && unsafe { &*u.new }.state() == ABSENT {
                part.latest.remove(u.key.table, &u.key.key);
                store.free(u.part, part, u.new);
            }
        }
        let writes = undo.len();
        let ts = self.begin_ts;
        self.local().bohm = undo;
        if self.recording {
            self.record_end(Some(ts), HOutcome::Committed);
        }
        self.bohm_release();
        self.terminate();
        self.db.wait_durable(epoch)?;
        Ok(CommitInfo { commit_ts: ts, writes })
    }

    pub(crate) fn bo_abort(&mut self, reason: AbortReason) -> Error {
        let store = self.store();
        let mut undo = std::mem::take(&mut self.local().bohm);
        for u in undo.drain(..).rev() {
            // SAFETY: the gate makes us the only user of every partition.
            let part = unsafe { store.part(u.part) };
            if u.old.is_null() {
                part.latest.remove(u.key.table, &u.key.key);
            } else {
                // Relaxed: nobody else runs.
                // SAFETY: superseded by us and not freed before commit.
                unsafe { &*u.old }.end.store(INFINITY, Ordering::Relaxed);
                part.latest.set(u.old);
            }
            store.free(u.part, part, u.new);
        }
        self.local().bohm = undo;
        self.bohm_release();
        self.aborted(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log position that held a long transaction gives its buffers back
    /// when it is reused; a short one keeps its room.
    #[test]
    fn a_reset_plan_keeps_little() {
        let mut plan = Plan::default();
        let fill = |plan: &mut Plan, n: u64| {
            for k in 0..n {
                plan.access.reads.push((TableId(0), Key::from_u64(k)));
                plan.access.writes.push((TableId(0), Key::from_u64(k)));
                plan.reads.push(AtomicPtr::new(ptr::null_mut()));
                plan.writes.push(AtomicPtr::new(ptr::null_mut()));
                plan.written.push(UNWRITTEN);
                plan.lookup.insert(MapKey { table: 0, key: Key::from_u64(k) }, (0, 0));
            }
        };
        let caps = |p: &Plan| {
            [p.access.reads.capacity(), p.access.writes.capacity(), p.reads.capacity(), p.writes.capacity()]
                .into_iter()
                .chain([p.written.capacity(), p.lookup.capacity()])
                .max()
                .unwrap()
        };
        fill(&mut plan, 10_000);
        assert!(caps(&plan) >= 10_000);
        plan.reset();
        assert!(plan.access.reads.is_empty() && plan.lookup.is_empty());
        assert!(caps(&plan) <= 2 * KEEP, "{}", caps(&plan));
        fill(&mut plan, 10);
        let before = plan.access.reads.as_ptr();
        plan.reset();
        assert_eq!(plan.access.reads.as_ptr(), before, "a short declaration's room is kept");
    }
}
