//! Protocol-agnostic workloads for Multiverse.
//!
//! A workload is written once against the engine's public API (DESIGN.md,
//! principle 1) and run unchanged by every protocol. It has three parts:
//!
//! * [`Workload`]: the schema and the initial data. [`Workload::load`] fills
//!   one slice of the data set, so a harness can load in parallel.
//! * [`Worker`]: one per thread. [`Worker::next_txn`] draws the inputs of the
//!   next transaction (keys, values) from the worker's own random generator;
//!   [`Worker::execute`] runs its body. A transient abort is retried with the
//!   *same* inputs, as a real client would, so the body must not draw new ones.
//! * [`run_txn`]: the retry loop that turns one [`Worker::next_txn`] into one
//!   committed transaction and counts every abort by reason.
//!
//! Everything on the per-transaction path is statically dispatched: the body
//! is generic over [`Txn`], the operations a workload may use, and the driver
//! is generic over the worker. No `dyn` call and no allocation happens per
//! record access or per transaction.
//!
//! A workload with several transaction types (TPC-C's NewOrder, Payment...)
//! names them in [`Workload::txn_types`] and says which one is current in
//! [`Worker::txn_type`]; the harness keeps throughput, aborts and latency per
//! type. [`Mix`] parses and draws a mix of types (`--mix new-order:45,...`).
//! After a run, [`Workload::check_consistency`] checks the workload's own
//! invariants (SmallBank's money, TPC-C's consistency conditions);
//! [`Workload::check_state`] checks the part of them that the rows alone
//! imply (a recovered database has no run's tallies to compare with).
//!
//! Workloads: [`hekaton`] (section 5 of the Hekaton paper), [`ycsb`],
//! [`smallbank`], [`tatp`], [`tpcc`], [`tpce`] (TPC-E and TPC-EH) and [`sibench`]; and two made for
//! verifying isolation rather than measuring it: [`predicate`] (range reads
//! while others insert and delete inside the ranges: phantoms) and
//! [`list_append`] (lists of writer tags, whose values give the version
//! order). [`Kind`] lists them all: use [`Kind::parse`] to validate a name
//! given on a command line.

#![warn(missing_docs)]

pub mod hekaton;
pub mod kind;
pub mod list_append;
pub mod mix;
pub mod predicate;
pub mod sibench;
pub mod smallbank;
pub mod store;
pub mod tatp;
pub mod tpcc;
pub mod tpce;
mod txn;
pub mod ycsb;
pub mod zipf;

pub use hekaton::{Hekaton, HekatonConfig, HekatonWorker};
pub use kind::Kind;
pub use mix::Mix;
pub use store::{run_attempts as run_store_attempts, Store, StoreTxn};
pub use txn::Txn;

use multiverse::research::breakdown;
use multiverse::{AbortReason, AccessSet, Database, Error, Isolation, Key, Result, TxnOptions};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

/// Why a transaction body failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxnError {
    /// The engine refused an operation: an abort (retried by [`run_txn`]
    /// when transient) or an error.
    Engine(Error),
    /// The workload found a state that cannot happen (a row it never deletes
    /// is missing, say): a bug in the engine or the workload. Never retried.
    Invariant(String),
    /// The transaction's logic decided to roll back (TPC-C's NewOrder with an
    /// unused item number, say): [`run_txn`] rolls it back, counts a `user`
    /// abort, and does not retry it. Not a failure of the run.
    Rollback,
}

impl From<Error> for TxnError {
    fn from(e: Error) -> TxnError {
        TxnError::Engine(e)
    }
}

impl fmt::Display for TxnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxnError::Engine(e) => write!(f, "{e}"),
            TxnError::Invariant(s) => f.write_str(s),
            TxnError::Rollback => f.write_str("rolled back by the transaction's logic"),
        }
    }
}

impl std::error::Error for TxnError {}

/// A workload parameter, reported with the results.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    /// An integer (rows, reads per transaction, ...).
    Int(u64),
    /// A name.
    Str(String),
    /// A switch.
    Bool(bool),
}

/// A worker as a BOHM transaction (section 3: the whole transaction is
/// submitted at once): the worker holds the inputs its last
/// [`Worker::next_txn`] drew, and its declaration is taken when the
/// sequencer logs it. BOHM keeps many transactions in flight, so a harness
/// makes one worker per log position and reuses them.
pub struct WorkerProc<W: Worker> {
    /// The worker, with the inputs of the transaction.
    pub worker: W,
    /// The transaction type (see [`Worker::txn_type`]).
    pub ty: usize,
}

impl<W: Worker> multiverse::protocol::bohm::Procedure for WorkerProc<W> {
    type Error = TxnError;
    fn declare(&self, access: &mut AccessSet) {
        if !self.worker.declare(access) {
            // Checked by the harness before the run (see `declares`); an
            // empty declaration makes every access fail NotDeclared.
            access.reads.clear();
            access.writes.clear();
        }
    }
    #[inline]
    fn run(&mut self, t: &mut multiverse::protocol::bohm::ExecTxn<'_>) -> Result<(), TxnError> {
        self.worker.execute(t)
    }
}

/// True if the worker's current transaction can be declared (BOHM and
/// ordered 2PL need it).
pub fn declares<W: Worker>(w: &W) -> bool {
    w.declare(&mut AccessSet::default())
}

/// A workload: schema, initial data, and per-thread transaction generators.
pub trait Workload: Sync {
    /// The per-thread transaction generator.
    type Worker<'w>: Worker
    where
        Self: 'w;

    /// The workload's name (its [`Kind::name`]).
    fn name(&self) -> &'static str;

    /// The parameters that define the run, for reports.
    fn params(&self) -> Vec<(&'static str, Param)>;

    /// Units of load work in all (rows, for progress reporting).
    fn load_size(&self) -> u64;

    /// Loads slice `part` of `parts` of the initial data. Slices are disjoint
    /// and together cover the data set; they can be loaded concurrently.
    /// `progress(n)` is called after each batch of `n` units.
    fn load<S: Store>(&self, db: &S, part: usize, parts: usize, progress: &(impl Fn(u64) + Sync)) -> Result<()>;

    /// A worker for thread `thread`, with its own random generator seeded by `seed`.
    fn worker(&self, thread: usize, seed: u64) -> Self::Worker<'_>;

    /// Names of the transaction types, indexed by [`Worker::txn_type`].
    fn txn_types(&self) -> &'static [&'static str] {
        &["txn"]
    }

    /// Rough resident bytes the loaded data will take, so a harness can
    /// refuse a size that cannot fit (0: unknown).
    fn estimated_bytes(&self) -> u64 {
        0
    }

    /// Checks the workload's invariants on the database after a run (every
    /// worker finished, see [`Worker::finish`]). `Ok` carries a one-line
    /// description of what was checked (empty if nothing); `Err` says what
    /// is broken.
    fn check_consistency<S: Store>(&self, db: &S) -> std::result::Result<String, String> {
        let _ = db;
        Ok(String::new())
    }

    /// For a black-box check of a store's scans (`--verify` on another
    /// store): the table whose rows come and go and the guards of its
    /// ranges, when the workload keeps them ([`GuardedRanges`]); `None`
    /// (the default) for a workload that does not.
    fn guarded_ranges(&self) -> Option<GuardedRanges> {
        None
    }

    /// Checks the invariants that the database state alone implies, without
    /// the tallies of a run ([`Workload::check_consistency`] compares the
    /// state with what the committed transactions did; a database recovered
    /// from disk, say, comes without them). Needs only the schema set up
    /// and the rows present, no worker. `Err` says what is broken.
    fn check_state<S: Store>(&self, db: &S) -> std::result::Result<StateCheck, String> {
        let _ = db;
        Ok(StateCheck { checked: String::new(), needs_run: "the workload's invariants".into() })
    }
}

/// What [`Workload::check_state`] proved from the rows alone, and what it
/// left unchecked because only the run that wrote them knows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateCheck {
    /// What holds, one line (empty: nothing was checked).
    pub checked: String,
    /// What needs the run's tallies and was not checked, one line (empty: nothing).
    pub needs_run: String,
}

/// A table whose rows are inserted and deleted, cut into key ranges, each
/// with a guard row to whose list of 8-byte tags every transaction that
/// changes rows of the range appends one tag: what a black-box checker
/// needs to order the changes and rebuild the states a scan may have read
/// (`multiverse_check::check_observed_ranges`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GuardedRanges {
    /// The table of rows.
    pub rows: u32,
    /// Per range: its first key, the key after it, and its guard (table, key).
    pub ranges: Vec<(Key, Key, u32, Key)>,
    /// Bytes at the start of each guard's value before its list of tags.
    pub guard_prefix: usize,
    /// The rows the load inserted: key and value.
    pub initial: Vec<(Key, Vec<u8>)>,
}

/// Generates and runs the transactions of one thread.
pub trait Worker: Send {
    /// Draws the inputs of the next transaction.
    fn next_txn(&mut self);

    /// Runs the body of the current transaction (the inputs of the last
    /// [`Worker::next_txn`]); may be called again after a transient abort.
    fn execute<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError>;

    /// The type of the current transaction (an index into
    /// [`Workload::txn_types`]).
    #[inline]
    fn txn_type(&self) -> usize {
        0
    }

    /// The options of the current transaction, given the run's (a long
    /// reader may run serializable and read-only while the run's level is
    /// another).
    #[inline]
    fn options(&self, run: TxnOptions<'static>) -> TxnOptions<'static> {
        run
    }

    /// Called once after the current transaction committed (a workload can
    /// account for effects that must only count once, such as deposits).
    #[inline]
    fn committed(&mut self) {}

    /// Called once after the run, before [`Workload::check_consistency`]:
    /// hand per-thread tallies to the workload.
    fn finish(&mut self) {}

    /// Declares the records the current transaction will read and write, for
    /// protocols that must know them before execution (BOHM, ordered 2PL).
    /// Clears `access` first; its capacity is reused. Returns false if
    /// the workload cannot declare its accesses (the default).
    fn declare(&self, access: &mut AccessSet) -> bool {
        access.reads.clear();
        access.writes.clear();
        false
    }
}

/// Aborts counted by reason; and, in the second count, the aborts of a
/// retry that failed for the same reason as the attempt before it (how safe
/// a retry is: SSN section 3.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AbortCounts(pub multiverse::AbortCounts, pub multiverse::AbortCounts);

impl AbortCounts {
    /// Counts one abort.
    #[inline]
    pub fn add(&mut self, r: AbortReason) {
        self.0[r] += 1;
    }
    /// Counts an aborted attempt for reason `r`, and a repeat if the
    /// attempt before it (`last`, then set to `r`) failed for the same reason.
    #[inline]
    pub fn add_attempt(&mut self, r: AbortReason, last: &mut Option<AbortReason>) {
        self.add(r);
        if *last == Some(r) {
            self.add_repeat(r);
        }
        *last = Some(r);
    }
    /// Total aborts.
    pub fn total(&self) -> u64 {
        self.0.total()
    }
    /// Counts an abort of a retry that failed for the same reason as the
    /// attempt before it (also counted by [`AbortCounts::add`]).
    #[inline]
    pub fn add_repeat(&mut self, r: AbortReason) {
        self.1[r] += 1;
    }
    /// Total repeated aborts.
    pub fn repeats(&self) -> u64 {
        self.1.total()
    }
    /// Adds another set of counts.
    pub fn merge(&mut self, o: &AbortCounts) {
        self.0 += o.0;
        self.1 += o.1;
    }
    /// (reason, repeats) pairs in the order of [`AbortReason::ALL`].
    pub fn repeats_by_reason(&self) -> impl Iterator<Item = (AbortReason, u64)> + '_ {
        self.1.iter()
    }
    /// (reason, count) pairs in the order of [`AbortReason::ALL`].
    pub fn by_reason(&self) -> impl Iterator<Item = (AbortReason, u64)> + '_ {
        self.0.iter()
    }
}

/// What a harness does with an attempt the engine aborted (a transient
/// abort: a write-write conflict, a failed validation, an exclusion-window
/// violation, a deadlock...). A rollback the workload's own logic asks for
/// ([`TxnError::Rollback`], TPC-C's and TPC-E's user aborts) is never
/// retried, whatever this says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Retry {
    /// Retry with the same inputs until it commits, as an application
    /// would (the default).
    #[default]
    UntilCommit,
    /// Drop it: count the abort and go on to the next transaction. The SSN
    /// paper's experiments do so (section 8.2) to show how fairly a scheme
    /// treats each transaction type: a type that keeps losing commits less
    /// of the mix, instead of being retried until it wins.
    Never,
}

/// Runs the worker's current transaction until it commits, retrying
/// transient aborts (with the same inputs) and counting them in `aborts`:
/// [`run_txn_with`] with [`Retry::UntilCommit`].
#[inline]
pub fn run_txn<W: Worker>(
    db: &Database,
    w: &mut W,
    opts: TxnOptions<'static>,
    aborts: &mut AbortCounts,
) -> Result<bool, TxnError> {
    run_txn_with(db, w, opts, Retry::UntilCommit, aborts)
}

/// Runs the worker's current transaction, retrying transient aborts (with
/// the same inputs) as `retry` says, and counting them in `aborts`.
/// Returns `Ok(true)` once it committed, `Ok(false)` if its logic rolled it
/// back ([`TxnError::Rollback`], counted as a `user` abort, not retried) or
/// the engine aborted it under [`Retry::Never`], and the first
/// non-transient error (a bug in the workload or bad options),
/// after rolling the attempt back.
///
/// Between retries the thread spins for a short, growing time (then yields),
/// so that under contention the winner of a write-write conflict can finish;
/// after a deadlock or a lock timeout it yields at once (the winner needs a
/// CPU, which with more threads than cores it may not have).
#[inline]
pub fn run_txn_with<W: Worker>(
    db: &Database,
    w: &mut W,
    opts: TxnOptions<'static>,
    retry: Retry,
    aborts: &mut AbortCounts,
) -> Result<bool, TxnError> {
    let opts = w.options(opts);
    if db.protocol().uses_declarations() {
        // The protocol locks (or orders) before execution: hand it the
        // declaration, in a buffer this thread reuses.
        thread_local! {
            static ACCESS: std::cell::Cell<AccessSet> = std::cell::Cell::new(AccessSet::default());
        }
        let mut access = ACCESS.take();
        if !w.declare(&mut access) {
            ACCESS.set(access);
            return Err(TxnError::Engine(Error::InvalidArgument(format!(
                "protocol {} runs declared transactions, and this workload does not declare its accesses \
                 (hekaton, ycsb, smallbank, tatp, sibench, predicate and list-append do)",
                db.protocol()
            ))));
        }
        let r = run_attempts(db, w, TxnOptions { access: Some(&access), ..opts }, retry, aborts);
        ACCESS.set(access);
        return r;
    }
    run_attempts(db, w, opts, retry, aborts)
}

/// The attempts of [`run_txn`].
#[inline]
fn run_attempts<W: Worker>(
    db: &Database,
    w: &mut W,
    opts: TxnOptions<'_>,
    retry: Retry,
    aborts: &mut AbortCounts,
) -> Result<bool, TxnError> {
    thread_local! {
        /// POMVCC: this thread's latest commit timestamp. A worker is one
        /// client, whose next transaction begins after its previous commit
        /// (the request-based avoidance of HISTORICAL READ, Figure 8, which
        /// the paper's evaluation ran): it would otherwise not see its own
        /// writes, and conflict with them.
        /// (database address, timestamp): a thread may run several.
        static LAST_COMMIT: std::cell::Cell<(usize, Option<u64>)> = const { std::cell::Cell::new((0, None)) };
    }
    let me = db as *const Database as usize;
    let mut spins = 0u32;
    let mut lock_aborts = 0u32;
    let mut last = None;
    let mut opts = opts;
    // A time breakdown samples this transaction: each attempt is timed,
    // and an aborted one's time (with its backoff) goes to `wasted`.
    let timing = breakdown::enabled() && breakdown::sampling();
    if let Some(now) = db.retry_after() {
        if let (at, Some(ts)) = LAST_COMMIT.get() {
            // Past `now`: another database that had the same address.
            if at == me && ts <= now {
                opts.after = Some(ts);
            }
        }
    }
    loop {
        let attempt = timing.then(|| (breakdown::now(), breakdown::thread_totals()));
        // One epoch pin for the attempt (`Database::pin`): the operations'
        // own pins nest in it (a counter, not a fence each), 5-7% more
        // throughput on Silo YCSB and MV/O Hekaton (docs/BENCHMARKS.md).
        // The pin is process-wide: while it lives no database frees
        // memory, so `Database::run` takes none around its caller's
        // closure, which may sleep. Here the transaction is the workload's
        // own code, engine calls that run straight through; only a lock
        // wait (1V, 2PL, MV/L) or SmallBank's configured in-transaction
        // spin holds it a while. Dropped before the backoff.
        let pin = db.pin();
        let mut t = db.begin_with(opts)?;
        let r = match w.execute(&mut t) {
            Ok(()) => t
                .commit()
                .map(|info| {
                    let (at, ts) = LAST_COMMIT.get();
                    let ts = if at == me { ts.max(Some(info.commit_ts)) } else { Some(info.commit_ts) };
                    LAST_COMMIT.set((me, ts));
                })
                .map_err(TxnError::Engine),
            Err(e) => {
                drop(t); // rolls back if still active
                Err(e)
            }
        };
        drop(pin);
        match r {
            Ok(()) => {
                w.committed();
                return Ok(true);
            }
            Err(TxnError::Rollback) => {
                aborts.add(AbortReason::User);
                if let Some(a) = attempt {
                    wasted::add(a);
                }
                return Ok(false);
            }
            Err(TxnError::Engine(e)) if e.is_transient() => {
                let r = e.abort_reason().expect("transient errors are aborts");
                aborts.add_attempt(r, &mut last);
                if retry == Retry::Never {
                    if let Some(a) = attempt {
                        wasted::add(a);
                    }
                    return Ok(false);
                }
                // POMVCC: the retry begins after the conflict (section VI.C).
                opts.after = db.retry_after().or(opts.after);
                // SSN's safe retry (section 3.2): the transaction that
                // violated the exclusion window has committed, and a retry
                // begun now reads its versions: retry at once.
                if matches!(r, AbortReason::Deadlock | AbortReason::LockTimeout) {
                    lock_abort_backoff(&mut lock_aborts);
                } else if r != AbortReason::ExclusionWindow {
                    backoff(&mut spins);
                }
                if let Some(a) = attempt {
                    wasted::add(a);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// The time this thread's aborted attempts took (rolled back by the
/// workload, or aborted by the engine and retried, with their backoff),
/// while `multiverse::research::breakdown` is on and the thread samples: what
/// a time breakdown counts as work thrown away. Kept apart from the engine's
/// parts, which the aborted attempts' regions also added to, so that a
/// caller can leave those out.
pub mod wasted {
    use multiverse::research::breakdown::{now, thread_totals};
    use std::cell::Cell;

    thread_local! {
        static WASTED: Cell<(u64, [u64; 5])> = const { Cell::new((0, [0; 5])) };
    }

    /// This thread's running totals, in `multiverse::research::breakdown`
    /// ticks: the aborted attempts' time, and what they added to each engine
    /// part.
    pub fn totals() -> (u64, [u64; 5]) {
        WASTED.get()
    }

    /// Counts an attempt that began at `start` (the tick counter and the
    /// engine's part totals then) as wasted, up to now.
    pub(crate) fn add(start: (u64, [u64; 5])) {
        let (t, parts) = (now(), thread_totals());
        let (mut sum, mut sum_parts) = WASTED.get();
        sum = sum.wrapping_add(t.wrapping_sub(start.0));
        for i in 0..5 {
            sum_parts[i] = sum_parts[i].wrapping_add(parts[i].wrapping_sub(start.1[i]));
        }
        WASTED.set((sum, sum_parts));
    }
}

/// The longest first sleep of a lock abort's retry (see [`lock_abort_backoff`]).
const LOCK_BACKOFF_BASE_US: u64 = 200;
/// The longest sleep, as a multiple of that: 2^2.
const LOCK_BACKOFF_MAX_DOUBLINGS: u32 = 2;

/// More workers than CPUs: set by [`set_workers`].
static CROWDED: AtomicBool = AtomicBool::new(false);

/// Tells the retry loop how many worker threads run transactions at once
/// (a driver calls it before its workers start): with more workers than
/// CPUs, a lock abort's retry sleeps from the first abort on (see
/// [`lock_abort_backoff`]).
pub fn set_workers(workers: usize) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Relaxed: a hint for the backoff; no data goes with it.
    CROWDED.store(workers > cpus, Ordering::Relaxed);
}

/// Before the retry of a transaction that a lock wait aborted (a deadlock's
/// victim, or a lock timeout); `k` counts this transaction's lock aborts
/// so far. What it needs is held by a transaction that waits or runs.
///
/// With no more workers than CPUs, the first retry gives that one the CPU
/// (yield) and goes on: a sleeping thread would leave its core idle (on
/// 2 cores, sleeping from the first abort cost 1V serializable on YCSB
/// θ=0.9 over a quarter of its 2-thread throughput). With more workers
/// than CPUs the holders it meets are descheduled for whole time slices,
/// a retry at once closes the same cycle again (on the predicate workload
/// at 8 threads on 2 cores, 69,378 of 72,381 retries of deadlock victims
/// were victims again), and a sleep hands the core to a worker that can
/// use it. So the retry sleeps a random time, up to
/// [`LOCK_BACKOFF_BASE_US`], doubling with each further abort up to four
/// times that: from the first abort when workers outnumber CPUs, from the
/// second otherwise. The randomness spreads the victims of one hot spot
/// apart (docs/BENCHMARKS.md, "Oversubscribed").
#[cold]
fn lock_abort_backoff(k: &mut u32) {
    *k += 1;
    // Relaxed: see `CROWDED`.
    match lock_backoff_most_us(*k, CROWDED.load(Ordering::Relaxed)) {
        None => std::thread::yield_now(),
        Some(most) => {
            let us = 1 + rand::random::<u64>() % most;
            std::thread::sleep(std::time::Duration::from_micros(us));
        }
    }
}

/// The longest sleep before the retry after the `k`-th lock abort (from 1),
/// in microseconds; `None`: yield instead.
fn lock_backoff_most_us(k: u32, crowded: bool) -> Option<u64> {
    let yields = if crowded { 0 } else { 1 };
    (k > yields).then(|| LOCK_BACKOFF_BASE_US << (k - 1 - yields).min(LOCK_BACKOFF_MAX_DOUBLINGS))
}

/// Spins 2^k times (k grows per retry, up to 2^10), then yields the CPU.
#[cold]
pub(crate) fn backoff(k: &mut u32) {
    if *k <= 10 {
        for _ in 0..(1u32 << *k) {
            std::hint::spin_loop();
        }
        *k += 1;
    } else {
        std::thread::yield_now();
    }
}

/// The isolation level loaders use: read committed where the protocol
/// offers it (loaders insert disjoint rows: nothing to validate), else the
/// protocol's only level.
pub fn load_isolation(db: &Database) -> Isolation {
    offered_or_strongest(db, Isolation::ReadCommitted)
}

/// The isolation level of the read-only transactions that check a
/// workload's invariants after a run: snapshot where the protocol offers
/// it, else the protocol's strongest level.
pub fn check_isolation(db: &Database) -> Isolation {
    offered_or_strongest(db, Isolation::Snapshot)
}

fn offered_or_strongest(db: &Database, want: Isolation) -> Isolation {
    let p = db.protocol();
    if p.isolation_levels().contains(&want) {
        want
    } else {
        p.strongest()
    }
}

/// Loads the whole data set of `w` (already set up in `db`) with `parts`
/// concurrent loaders, without progress display; returns the units of load
/// work the loaders reported (equal to [`Workload::load_size`]).
pub fn load_parallel<S: Store, W: Workload>(db: &S, w: &W, parts: usize) -> Result<u64> {
    let parts = parts.max(1);
    let done = std::sync::atomic::AtomicU64::new(0);
    // Relaxed: a tally, read after the loaders were joined.
    let progress = |n: u64| {
        done.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    };
    std::thread::scope(|s| {
        let loaders: Vec<_> = (0..parts)
            .map(|p| {
                let progress = &progress;
                s.spawn(move || w.load(db, p, parts, progress))
            })
            .collect();
        loaders.into_iter().try_for_each(|h| h.join().expect("a loader panicked"))
    })?;
    Ok(done.into_inner())
}

/// A uniform draw from `0..n` (Lemire's multiply-shift: one multiplication,
/// a bias below 2^-64 * n).
#[inline]
pub(crate) fn below(rng: &mut rand::rngs::SmallRng, n: u64) -> u64 {
    use rand::RngCore;
    ((rng.next_u64() as u128 * n as u128) >> 64) as u64
}

/// Splits `0..n` into `parts` contiguous slices and returns slice `part`.
pub fn split_range(n: u64, part: usize, parts: usize) -> std::ops::Range<u64> {
    let parts = parts.max(1) as u64;
    let part = part as u64;
    let lo = n * part / parts;
    let hi = n * (part + 1) / parts;
    lo..hi
}

#[cfg(test)]
mod tests;
