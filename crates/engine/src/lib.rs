//! # Multiverse
//!
//! An embeddable, in-memory, multi-version transaction engine. This crate
//! implements the storage engine of Larson et al., *High-Performance
//! Concurrency Control Mechanisms for Main-Memory Databases* (VLDB 2011,
//! "Hekaton"): versions with 64-bit Begin and End words changed by
//! compare-and-swap, the visibility rules of Tables 1 and 2, commit
//! dependencies, the optimistic scheme MV/O (section 3), the pessimistic
//! scheme MV/L (section 4: record locks in the End word, bucket and range
//! locks, wait-for dependencies, deadlock detection), and both at once
//! (section 4.5), at read committed, snapshot, repeatable read and
//! serializable. Beside them, on an in-place single-version store, the
//! baselines the papers measure against: Silo OCC
//! ([`protocol::silo`]), Hekaton's single-version locking 1V
//! ([`protocol::lock_1v`]) and BOHM's ordered two-phase locking
//! ([`protocol::ordered_2pl`]). And two certifiers that make MV/O's weaker
//! levels serializable: SSN, the serial safety net, over read committed or
//! snapshot isolation ([`protocol::ssn`]), and SSI ([`protocol::ssi`]).
//!
//! ```
//! use multiverse::{Database, Isolation, Key, Options, TableSpec};
//!
//! let db = Database::new(Options::default()).unwrap();
//! let accounts = db.create_table(TableSpec::hash("accounts", 1024)).unwrap();
//! db.run(Isolation::Serializable, |t| {
//!     t.insert(accounts, Key::from(1), &100u64.to_le_bytes())?;
//!     t.insert(accounts, Key::from(2), &50u64.to_le_bytes())
//! })
//! .unwrap();
//!
//! let mut t = db.begin(Isolation::Snapshot).unwrap();
//! let v = t.get(accounts, &Key::from(1)).unwrap().unwrap();
//! assert_eq!(u64::from_le_bytes(v.try_into().unwrap()), 100);
//! t.commit().unwrap();
//! ```
//!
//! Layout: [`storage`] (versions, tables), [`index`] (hash and ordered
//! indexes), [`txn`] (transaction table, visibility, commit dependencies),
//! [`protocol`] (one module per protocol), [`gc`] (version reclamation).

#![warn(missing_docs)]

pub mod durability;
pub mod error;
pub mod gc;
pub mod history;
pub mod index;
pub mod key;
pub mod protocol;
pub mod storage;
mod sync;
pub mod txn;

pub use durability::checkpoint::CheckpointInfo;
pub use durability::{Durability, OnDamage, RecoveryReport};
pub use error::{AbortReason, Error};
pub use key::{Key, KeyBuilder, KEY_MAX};
pub use protocol::mv_lock::detect_deadlocks;
pub use protocol::mv_occ::{CommitInfo, Transaction};
pub use storage::table::{IndexKind, KeyFn, TableSpec};
pub use txn::Filter;

use crossbeam_utils::CachePadded;
use gc::Gc;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;
use storage::table::Table;
use txn::table::TxnTable;

/// Result type of the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Most tables a database can hold.
pub const MAX_TABLES: usize = 256;

/// Concurrency-control protocols. Only those implemented in this build are
/// accepted by [`Database::new`]; the others parse (so the command can name
/// them) and are refused with [`Error::UnsupportedProtocol`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// Hekaton optimistic multi-versioning (MV/O), section 3.
    MvOcc,
    /// Hekaton pessimistic multi-versioning (MV/L), section 4.
    MvLock,
    /// Hekaton MV/O and MV/L side by side, chosen per transaction.
    MvMixed,
    /// Single-version locking (Hekaton section 5).
    OneVLock,
    /// Silo OCC.
    Silo,
    /// Ordered two-phase locking (BOHM's baseline).
    TwoPlOrdered,
    /// Serial safety net over read committed or snapshot isolation.
    Ssn,
    /// Serializable snapshot isolation.
    Ssi,
    /// BOHM.
    Bohm,
    /// POMVCC.
    Pomvcc,
}

impl Protocol {
    /// All protocol names, in the order of DESIGN.md.
    pub const ALL: [Protocol; 10] = [
        Protocol::MvOcc,
        Protocol::MvLock,
        Protocol::MvMixed,
        Protocol::OneVLock,
        Protocol::Silo,
        Protocol::TwoPlOrdered,
        Protocol::Ssn,
        Protocol::Ssi,
        Protocol::Bohm,
        Protocol::Pomvcc,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::MvOcc => "mv-occ",
            Protocol::MvLock => "mv-lock",
            Protocol::MvMixed => "mv-mixed",
            Protocol::OneVLock => "1v-lock",
            Protocol::Silo => "silo",
            Protocol::TwoPlOrdered => "2pl-ordered",
            Protocol::Ssn => "ssn",
            Protocol::Ssi => "ssi",
            Protocol::Bohm => "bohm",
            Protocol::Pomvcc => "pomvcc",
        }
    }

    /// True if this build implements the protocol.
    pub fn is_available(self) -> bool {
        matches!(
            self,
            Protocol::MvOcc
                | Protocol::MvLock
                | Protocol::MvMixed
                | Protocol::OneVLock
                | Protocol::Silo
                | Protocol::TwoPlOrdered
                | Protocol::Ssn
                | Protocol::Ssi
                | Protocol::Bohm
                | Protocol::Pomvcc
        )
    }

    /// True for the single-version locking protocols: every index carries a
    /// lock table (Hekaton section 5).
    pub fn uses_key_locks(self) -> bool {
        matches!(self, Protocol::OneVLock | Protocol::TwoPlOrdered)
    }

    /// True for the protocols that use a transaction's access declaration
    /// ([`TxnOptions::access`]) before it runs.
    pub fn uses_declarations(self) -> bool {
        matches!(self, Protocol::TwoPlOrdered | Protocol::Bohm)
    }

    /// True for the single-version protocols (an in-place store).
    pub fn is_single_version(self) -> bool {
        matches!(self, Protocol::OneVLock | Protocol::Silo | Protocol::TwoPlOrdered)
    }

    /// The isolation levels the protocol offers, weakest first.
    pub fn isolation_levels(self) -> &'static [Isolation] {
        match self {
            Protocol::MvOcc | Protocol::MvLock | Protocol::MvMixed => &Isolation::ALL,
            // One version: no snapshot to read (section 5 runs RC, RR, SER).
            Protocol::OneVLock => &[Isolation::ReadCommitted, Isolation::RepeatableRead, Isolation::Serializable],
            // Table VII: RC, SI and serializable.
            Protocol::Pomvcc => &[Isolation::ReadCommitted, Isolation::Snapshot, Isolation::Serializable],
            _ => &[Isolation::Serializable],
        }
    }

    /// Whether the protocol runs transactions of `mode` (every protocol runs
    /// [`Mode::Default`]; `mv-mixed` and `pomvcc` run both other modes).
    pub fn runs_mode(self, mode: Mode) -> bool {
        match (self, mode) {
            (_, Mode::Default) | (Protocol::MvMixed | Protocol::Pomvcc, _) => true,
            (Protocol::MvOcc, m) => m == Mode::Optimistic,
            (Protocol::MvLock, m) => m == Mode::Pessimistic,
            _ => false,
        }
    }

    /// The strongest level offered (the default of `begin` in the shell).
    pub fn strongest(self) -> Isolation {
        *self.isolation_levels().last().expect("every protocol offers a level")
    }

    /// The protocols this build implements.
    pub fn available() -> impl Iterator<Item = Protocol> {
        Self::ALL.into_iter().filter(|p| p.is_available())
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Protocol {
    type Err = Error;
    fn from_str(s: &str) -> Result<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            let names: Vec<_> = Protocol::ALL.iter().map(|p| p.name()).collect();
            Error::Parse(format!("unknown protocol '{s}' (expected one of: {})", names.join(", ")))
        })
    }
}

/// Isolation levels (Hekaton section 2 and 3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Isolation {
    /// Every read sees the latest committed version at the time of the read.
    ReadCommitted,
    /// Every read sees the snapshot as of the transaction's begin.
    Snapshot,
    /// Snapshot reads plus read validation (no phantom protection).
    RepeatableRead,
    /// Read validation plus phantom detection: serializable.
    Serializable,
}

impl Isolation {
    /// All levels, weakest first.
    pub const ALL: [Isolation; 4] =
        [Isolation::ReadCommitted, Isolation::Snapshot, Isolation::RepeatableRead, Isolation::Serializable];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read-committed",
            Isolation::Snapshot => "snapshot",
            Isolation::RepeatableRead => "repeatable-read",
            Isolation::Serializable => "serializable",
        }
    }
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Isolation {
    type Err = Error;
    fn from_str(s: &str) -> Result<Isolation> {
        match s {
            "read-committed" | "rc" => Ok(Isolation::ReadCommitted),
            "snapshot" | "si" => Ok(Isolation::Snapshot),
            "repeatable-read" | "rr" => Ok(Isolation::RepeatableRead),
            "serializable" | "ser" => Ok(Isolation::Serializable),
            _ => Err(Error::Parse(format!(
                "unknown isolation level '{s}' (expected read-committed, snapshot, repeatable-read or serializable)"
            ))),
        }
    }
}

/// Database options.
#[derive(Clone, Debug)]
pub struct Options {
    /// The concurrency-control protocol.
    pub protocol: Protocol,
    /// Most transactions open at once (at most 4096).
    pub max_transactions: usize,
    /// Largest value accepted, in bytes.
    pub max_value_size: usize,
    /// How long a transaction blocked on wait-for dependencies (MV/L,
    /// section 4.4) or on a lock (1V locking) waits before it runs deadlock
    /// detection, and then between runs: a deadlock is broken within about
    /// this long.
    pub deadlock_interval: Duration,
    /// How long a single-version locking transaction waits for a lock before
    /// it aborts with [`AbortReason::LockTimeout`] (Hekaton section 5 breaks
    /// deadlocks with timeouts). Deadlocks are also detected: a waiter
    /// looks for a cycle of waits every [`Options::deadlock_interval`], and
    /// the cycle's youngest transaction aborts with
    /// [`AbortReason::Deadlock`]; the timeout then bounds waits behind a
    /// running holder. Ordered 2PL waits without limit for the locks it
    /// declared (it cannot deadlock) and uses this only for the locks of
    /// undeclared transactions. 10 ms by default.
    pub lock_timeout: Duration,
    /// SSN: the concurrency control that SSN certifies (SSN paper, section
    /// 3: any scheme at least as strong as read committed):
    /// [`Isolation::ReadCommitted`] (reads see the latest committed version)
    /// or [`Isolation::Snapshot`] (reads see the snapshot at begin; first
    /// updater wins). Snapshot by default, ERMIA's choice. SSI always runs
    /// over snapshot isolation.
    pub ssn_base: Isolation,
    /// SSN and SSI: active safe snapshots (SSN paper, section 5.2). With
    /// `Some(interval)`, a read-only serializable transaction
    /// ([`TxnOptions::read_only`]) reads without any tracking as of the
    /// latest safe snapshot, taken anew when the latest is older than
    /// `interval`: it never aborts and costs updaters nothing but a check at
    /// commit, but it may not see what committed within the last `interval`.
    /// `None` (the default): read-only transactions are certified like the
    /// others (over snapshot isolation they usually commit at their begin
    /// timestamp, the empty-write-set optimization).
    pub safe_snapshot_interval: Option<Duration>,
    /// SSN: the read-mostly optimization (SSN paper, section 5.3). With
    /// `Some(age)`, a read of a version created more than `age` commits
    /// before the reader began (a version "not overwritten recently") is
    /// not tracked: it sets the reader's bit in the version's readers bitmap
    /// and nothing more, and writers account for such readers through the
    /// per-slot last commit stamp and by lowering their π. Long read-mostly
    /// transactions then skip most of their pre-commit; updaters may abort
    /// more (a stale bit makes them look at whoever runs in that slot now).
    /// `None` (the default): every read is tracked.
    pub ssn_read_mostly_age: Option<u64>,
    /// POMVCC: how often CTs advances without a conflict (section VI.C:
    /// "periodically and asynchronously"); a commit becomes visible to new
    /// transactions at most about this long after it, unless they ask for
    /// it ([`TxnOptions::after`]). 1 ms by default.
    pub pomvcc_interval: Duration,
    /// Record every transaction's operations for the checker
    /// ([`Database::take_history`]). Off by default.
    pub record_history: bool,
    /// When a commit is durable (see [`crate::durability`]); anything but
    /// [`Durability::None`] needs [`Options::data_dir`] and
    /// [`Database::open`]. None by default.
    pub durability: Durability,
    /// The data directory of a durable database.
    pub data_dir: Option<std::path::PathBuf>,
    /// Parallel redo log streams (threads spread over them). 2 by default.
    pub log_streams: usize,
    /// A log file is closed and a new one begun at this size. 64 MiB by default.
    pub log_rotate_bytes: u64,
    /// How often the log flusher makes the latest commits durable under
    /// [`Durability::Async`] (group commit); under [`Durability::Sync`]
    /// commits ask for a flush at once. 1 ms by default.
    pub group_commit_interval: Duration,
    /// A durable database checkpoints this long after its last checkpoint
    /// (`None`: never on a timer). A background thread writes each
    /// checkpoint that falls due, beside the transactions (the
    /// single-version protocols' commits wait while it scans, see
    /// [`crate::durability`]); [`Database::checkpoint`] writes one at any
    /// time. 60 s by default.
    pub checkpoint_every: Option<Duration>,
    /// A durable database also checkpoints once this many log bytes were
    /// appended since its last checkpoint (`None`: no limit), which bounds
    /// the log and the recovery time. 1 GiB by default.
    pub checkpoint_log_bytes: Option<u64>,
    /// What opening (or [`Database::recover_from`]) does with a damaged
    /// data directory: keep the longest consistent prefix and report what
    /// was lost (the default), or refuse (see [`OnDamage`]).
    pub on_damage: OnDamage,
    /// Deliberately broken concurrency control, for testing that the checker
    /// catches what it must. Never set outside tests.
    #[doc(hidden)]
    pub faults: Faults,
}

/// Switches that break the protocol on purpose (tests only): the checker
/// suite sets them to prove that it detects the resulting anomalies.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    /// Skip read validation and phantom detection (section 3.2); in the
    /// single-version locking protocols, release read locks at once
    /// (every level behaves as read committed).
    pub skip_validation: bool,
    /// Ignore first-writer-wins: update a version another transaction has
    /// already write-locked or replaced (section 2.6).
    pub skip_write_conflicts: bool,
    /// SSN's read-mostly optimization: writers ignore untracked readers (no
    /// last commit stamp, no lowering of their π; section 5.3).
    pub skip_read_mostly_handshake: bool,
    /// A slow disk: each log round sleeps this long before it writes, so
    /// that tests can observe commits while their round is pending. Not a
    /// broken protocol: every guarantee must still hold.
    pub log_round_delay: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            protocol: Protocol::MvOcc,
            max_transactions: 1024,
            max_value_size: 1 << 20,
            deadlock_interval: Duration::from_micros(100),
            lock_timeout: Duration::from_millis(10),
            ssn_base: Isolation::Snapshot,
            safe_snapshot_interval: None,
            ssn_read_mostly_age: None,
            pomvcc_interval: protocol::pomvcc::TICK_INTERVAL,
            record_history: false,
            durability: Durability::None,
            data_dir: None,
            log_streams: 2,
            log_rotate_bytes: 64 << 20,
            group_commit_interval: Duration::from_millis(1),
            checkpoint_every: Some(Duration::from_secs(60)),
            checkpoint_log_bytes: Some(1 << 30),
            on_damage: OnDamage::KeepPrefix,
            faults: Faults::default(),
        }
    }
}

/// A table handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TableId(pub(crate) u32);

/// An index handle: a table and one of its indexes (0 is the primary index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IndexId {
    pub(crate) table: u32,
    pub(crate) index: u8,
}

impl IndexId {
    /// The table this index belongs to.
    pub fn table(self) -> TableId {
        TableId(self.table)
    }
}

/// Keys a transaction declares it will read and write, for protocols that
/// must know them before execution (BOHM, ordered 2PL). MV/O ignores it.
#[derive(Clone, Debug, Default)]
pub struct AccessSet {
    /// Records to be read.
    pub reads: Vec<(TableId, Key)>,
    /// Records to be written (inserted, updated or deleted).
    pub writes: Vec<(TableId, Key)>,
}

/// How a Hekaton transaction keeps its reads valid (section 4.5: both kinds
/// run side by side under `mv-mixed`), or when a POMVCC transaction takes
/// its write locks (section V.D: both kinds run side by side too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// The protocol's choice: optimistic under `mv-occ`, pessimistic under
    /// `mv-lock` and `pomvcc`; under `mv-mixed`, alternating with the
    /// transaction id (so any workload runs both kinds at once).
    #[default]
    Default,
    /// MV/O: validate at commit (section 3). Refused by `mv-lock`. POMVCC's
    /// OCC (Figure 13): writes stay private and take their write locks at
    /// commit, so a concurrent writer of the same row is found only then.
    Optimistic,
    /// MV/L: lock (section 4). Refused by `mv-occ`. POMVCC's PCC (Figure
    /// 14): a write takes its write lock at update time, so a later writer
    /// of the row aborts at once (for long transactions); its reads are
    /// still validated at commit.
    Pessimistic,
}

/// Options for one transaction.
#[derive(Clone, Copy, Debug)]
pub struct TxnOptions<'a> {
    /// Isolation level.
    pub isolation: Isolation,
    /// Optimistic or pessimistic (Hekaton protocols).
    pub mode: Mode,
    /// Promise to only read: reads are not tracked, and writes are refused.
    pub read_only: bool,
    /// Optional access declaration.
    pub access: Option<&'a AccessSet>,
    /// POMVCC's request-based avoidance of HISTORICAL READ (section IV.D,
    /// Figure 8): the commit timestamp of a transaction this one must see
    /// (what [`Transaction::commit`] returned). Ignored by the protocols
    /// whose commit timestamps are unique: they see every earlier commit.
    pub after: Option<u64>,
}

impl TxnOptions<'_> {
    /// Options for a read-write transaction at `isolation`.
    pub fn new(isolation: Isolation) -> TxnOptions<'static> {
        TxnOptions { isolation, mode: Mode::Default, read_only: false, access: None, after: None }
    }
}

/// How [`Database::run`] retries transient aborts.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// Attempts in all (the first try included).
    pub max_attempts: u32,
    /// First backoff; doubles per retry up to `max_backoff`.
    pub initial_backoff: Duration,
    /// Longest backoff.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 100,
            initial_backoff: Duration::from_micros(1),
            max_backoff: Duration::from_millis(5),
        }
    }
}

/// Counters of a database since it was opened.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Durable databases: redo log bytes appended.
    pub log_bytes: u64,
    /// Durable databases: redo records appended (one per writing commit).
    pub log_records: u64,
    /// Durable databases: log file syncs (fdatasync) made.
    pub log_syncs: u64,
    /// Durable databases: checkpoints written since the open (on a timer,
    /// by size, or asked for).
    pub checkpoints: u64,
    /// Committed transactions.
    pub committed: u64,
    /// Aborted transactions, by reason (indexed like [`AbortReason::ALL`]).
    pub aborts: [u64; AbortReason::COUNT],
    /// Versions allocated and not yet reclaimed.
    pub versions_alive: u64,
    /// Versions waiting in the garbage queues.
    pub garbage_pending: u64,
    /// Versions unlinked from every index but not yet freed: they wait for
    /// an epoch to pass and then for their queue's next collection.
    pub garbage_unfreed: u64,
    /// Transactions open now.
    pub open_transactions: u64,
    /// SSN's read-mostly optimization: reads not tracked (section 5.3).
    pub ssn_untracked_reads: u64,
    /// Increments of the commit-timestamp counter: under POMVCC, of CTs
    /// (conflicts, requests, periodic advances); under the other
    /// multi-version protocols, of the clock, one per transaction that took
    /// an end timestamp. 0 for the single-version protocols and BOHM.
    pub timestamp_increments: u64,
}

impl Stats {
    /// Total aborts.
    pub fn aborted(&self) -> u64 {
        self.aborts.iter().sum()
    }
    /// (reason, count) pairs.
    pub fn aborts_by_reason(&self) -> impl Iterator<Item = (AbortReason, u64)> + '_ {
        AbortReason::ALL.into_iter().zip(self.aborts.iter().copied())
    }
}

/// An in-memory database.
///
/// A handle on the shared [`Core`]: a durable database's checkpointer
/// thread holds a second one (see [`Options::checkpoint_every`]).
pub struct Database {
    core: std::sync::Arc<Core>,
    /// The application's handle, whose drop stops the checkpointer (the
    /// checkpointer's own handle is not the owner).
    owner: bool,
}

impl std::ops::Deref for Database {
    type Target = Core;
    #[inline]
    fn deref(&self) -> &Core {
        &self.core
    }
}

/// The state of a database, shared by its handles.
#[doc(hidden)]
pub struct Core {
    pub(crate) opts: Options,
    /// The global timestamp counter (section 2.4). Holds the next even stamp.
    pub(crate) clock: CachePadded<AtomicU64>,
    pub(crate) txns: TxnTable,
    tables: Box<[OnceLock<Table>]>,
    names: Mutex<HashMap<String, u32>>,
    pub(crate) gc: Gc,
    /// Versions reclaimed by `collect_garbage` (transactions count their own per slot).
    pub(crate) versions_freed: CachePadded<AtomicU64>,
    /// Finished transactions, when recording.
    history: Mutex<Vec<history::TxnRecord>>,
    /// Whether transactions that begin now record their history.
    recording: std::sync::atomic::AtomicBool,
    /// Silo's global epoch (single-version databases).
    pub(crate) silo: protocol::silo::SiloGlobal,
    /// SSN and SSI: active safe snapshots.
    pub(crate) ssn_safe: protocol::ssn::SafeSnapshots,
    /// BOHM's store (bohm databases only).
    pub(crate) bohm: Option<protocol::bohm::Store>,
    /// POMVCC's timestamp manager (pomvcc databases only).
    pub(crate) po: Option<protocol::pomvcc::TsManager>,
    /// The redo log and data directory (durable databases only).
    pub(crate) durable: Option<Durable>,
    /// The commit freeze of single-version checkpoints.
    pub(crate) freeze: durability::checkpoint::Freeze,
}

/// A durable database's log and directory.
pub(crate) struct Durable {
    pub(crate) log: durability::log::Log,
    /// The directory's lock file, locked while this database owns it.
    _lock: std::fs::File,
    dir: std::path::PathBuf,
    generation: u64,
    /// One checkpoint at a time.
    checkpointing: Mutex<()>,
    /// Checkpoints written since the open (the open's own not counted).
    checkpoints: AtomicU64,
    /// The last failure of a checkpoint that fell due (see
    /// [`Database::checkpoint_error`]).
    checkpoint_failed: Mutex<Option<Error>>,
    /// The checkpointer thread, and its stop flag.
    checkpointer: Mutex<Option<std::thread::JoinHandle<()>>>,
    stop: (Mutex<bool>, parking_lot::Condvar),
}

impl Durable {
    /// Stops the checkpointer (after the checkpoint it is writing, if any).
    fn stop_checkpointer(&self) {
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
        if let Some(t) = self.checkpointer.lock().take() {
            let _ = t.join();
        }
    }
}

impl Database {
    /// Opens an empty in-memory database.
    pub fn new(opts: Options) -> Result<Database> {
        if opts.durability != Durability::None || opts.data_dir.is_some() {
            return Err(Error::InvalidArgument(
                "a durable database (durability or data_dir set) is opened with Database::open".into(),
            ));
        }
        Database::new_unlogged(opts)
    }

    /// Opens the durable database in `opts.data_dir` (created if missing):
    /// `schema` creates its tables (the same ones, with the same names, in
    /// the same order, on every open), then recovery loads the newest
    /// checkpoint and replays the logs (see [`crate::durability`]), a new
    /// checkpoint of the recovered state is written, and logging starts.
    /// The directory's lock is taken first: a directory another open
    /// database holds fails with [`Error::Locked`]. A damaged checkpoint is
    /// refused with [`Error::Corrupt`]; of the log, the longest prefix of
    /// the commit order that it holds is replayed and what is dropped is
    /// reported in the [`RecoveryReport`], or, with
    /// [`OnDamage::Refuse`](crate::OnDamage::Refuse), a directory with damage
    /// a crash cannot explain is refused with [`Error::Corrupt`].
    pub fn open(opts: Options, schema: impl FnOnce(&Database) -> Result<()>) -> Result<(Database, RecoveryReport)> {
        let Some(dir) = opts.data_dir.clone() else {
            return Err(Error::InvalidArgument("Database::open needs Options::data_dir".into()));
        };
        if opts.durability == Durability::None {
            return Err(Error::InvalidArgument("durability none keeps nothing on disk: choose async or sync".into()));
        }
        if opts.log_streams == 0 || opts.log_streams > 256 {
            return Err(Error::InvalidArgument("log_streams must be between 1 and 256".into()));
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::Io(format!("cannot create {}: {e}", dir.display())))?;
        let lock = lock_dir(&dir)?;
        let mut db = Database::new_unlogged(opts)?;
        schema(&db)?;
        let report = durability::recovery::recover(&db, &dir)?;
        db.sync_commits()?;
        // A new generation: its checkpoint holds everything recovered.
        let generation = report.generation + 1;
        // Stray log files of this generation or later (reported by
        // recovery, not replayed) would stand in the new log's way.
        remove_files(&dir, |name| durability::parse_log_name(name).is_some_and(|(g, _, _)| g >= generation))?;
        durability::checkpoint::write(&db, &dir, generation)?;
        remove_generations_before(&dir, generation)?;
        let o = &db.opts;
        let log = durability::log::Log::start(&dir, generation, o, &db.table_list())?;
        let background = o.checkpoint_every.is_some() || o.checkpoint_log_bytes.is_some();
        let core = std::sync::Arc::get_mut(&mut db.core).expect("no other handle before the open completes");
        core.durable = Some(Durable {
            log,
            _lock: lock,
            dir,
            generation,
            checkpointing: Mutex::new(()),
            checkpoints: AtomicU64::new(0),
            checkpoint_failed: Mutex::new(None),
            checkpointer: Mutex::new(None),
            stop: (Mutex::new(false), parking_lot::Condvar::new()),
        });
        if background {
            let handle = Database { core: db.core.clone(), owner: false };
            let t = std::thread::Builder::new()
                .name("multiverse-checkpoint".into())
                .spawn(move || handle.checkpointer())
                .map_err(|e| Error::Io(format!("cannot start the checkpointer: {e}")))?;
            *db.durable.as_ref().expect("just set").checkpointer.lock() = Some(t);
        }
        Ok((db, report))
    }

    /// Writes a checkpoint (a read-only snapshot transaction, concurrent
    /// with updaters) and drops the log files and older checkpoints it
    /// makes unnecessary. Only for durable databases.
    pub fn checkpoint(&self) -> Result<CheckpointInfo> {
        let Some(d) = &self.durable else {
            return Err(Error::InvalidArgument("checkpoint: not a durable database".into()));
        };
        let _one = d.checkpointing.lock();
        // Later commits go to new files: the old ones can go once covered.
        d.log.rotate_all()?;
        let info = durability::checkpoint::write(self, &d.dir, d.generation)?;
        // Everything appended before the checkpoint is durable before the
        // files that held it go (the checkpoint is, already).
        d.log.flush()?;
        d.log.truncate_before(info.ts)?;
        remove_checkpoints_before(&d.dir, d.generation, info.ts)?;
        d.log.checkpointed();
        // Relaxed: a counter.
        d.checkpoints.fetch_add(1, Ordering::Relaxed);
        Ok(info)
    }

    /// Loads the data directory `dir` into this in-memory database (whose
    /// tables exist and are empty), as [`Database::open`] does, but leaves
    /// the directory as it is: for inspecting it (`multiverse recover`).
    pub fn recover_from(&self, dir: &std::path::Path) -> Result<RecoveryReport> {
        if self.durable.is_some() {
            return Err(Error::InvalidArgument("recover_from: the database is durable already".into()));
        }
        let r = durability::recovery::recover(self, dir)?;
        self.sync_commits()?;
        Ok(r)
    }

    /// Under sync durability, a transaction that wrote nothing commits:
    /// waits until whatever it read is durable (see `durability::log`,
    /// "Durable visibility").
    #[inline]
    pub(crate) fn wait_visible(&self) -> Result<()> {
        match &self.durable {
            Some(d) if d.log.mode() == Durability::Sync => d
                .log
                .wait_visible()
                .map_err(|e| Error::Io(format!("the transaction committed, but what it read is not durable: {e}"))),
            _ => Ok(()),
        }
    }

    /// Makes every commit so far durable (a no-op without durability).
    pub fn flush_log(&self) -> Result<()> {
        match &self.durable {
            Some(d) => d.log.flush(),
            None => Ok(()),
        }
    }

    /// The checkpointer thread: writes each checkpoint that falls due (see
    /// [`Options::checkpoint_every`]) until the owner's handle drops.
    fn checkpointer(self) {
        let Some(d) = &self.durable else { return };
        // The flusher declares checkpoints due; looking a little later than
        // that is fine, and an idle database wakes this thread rarely.
        let poll = self
            .opts
            .checkpoint_every
            .map_or(Duration::from_millis(50), |e| (e / 4).clamp(Duration::from_millis(1), Duration::from_millis(50)));
        loop {
            {
                let mut stop = d.stop.0.lock();
                if !*stop {
                    d.stop.1.wait_for(&mut stop, poll);
                }
                if *stop {
                    return;
                }
            }
            if d.log.take_due() {
                let r = self.checkpoint();
                if r.is_err() {
                    // Tried again after the next interval, not at once.
                    d.log.checkpointed();
                }
                *d.checkpoint_failed.lock() = r.err();
            }
        }
    }

    /// Why the last checkpoint that fell due failed, if it did (it is
    /// tried again after the next interval; the log keeps growing
    /// meanwhile, and nothing committed is lost).
    pub fn checkpoint_error(&self) -> Option<Error> {
        self.durable.as_ref().and_then(|d| d.checkpoint_failed.lock().clone())
    }

    /// Under sync durability, waits until the record of a commit (appended
    /// in log epoch `epoch`, if it wrote anything) is durable.
    pub(crate) fn wait_durable(&self, epoch: Option<u64>) -> Result<()> {
        match (&self.durable, epoch) {
            (Some(d), Some(epoch)) if d.log.mode() == Durability::Sync => d
                .log
                .wait_durable(epoch)
                .map_err(|e| Error::Io(format!("the transaction committed, but its durability is not assured: {e}"))),
            _ => Ok(()),
        }
    }

    /// The durability of this database.
    pub fn durability(&self) -> Durability {
        self.durable.as_ref().map_or(Durability::None, |d| d.log.mode())
    }

    /// The tables' ids and names, in creation order.
    pub(crate) fn table_list(&self) -> Vec<(u32, String)> {
        let mut v: Vec<_> = self.names.lock().iter().map(|(n, &i)| (i, n.clone())).collect();
        v.sort();
        v
    }

    fn new_unlogged(opts: Options) -> Result<Database> {
        if !opts.protocol.is_available() {
            return Err(Error::UnsupportedProtocol(opts.protocol.name().to_string()));
        }
        if opts.max_transactions == 0 || opts.max_transactions > txn::table::MAX_SLOTS {
            return Err(Error::InvalidArgument(format!(
                "max_transactions must be between 1 and {}",
                txn::table::MAX_SLOTS
            )));
        }
        if !matches!(opts.ssn_base, Isolation::ReadCommitted | Isolation::Snapshot) {
            return Err(Error::InvalidArgument(format!(
                "SSN certifies read committed or snapshot isolation, not {}",
                opts.ssn_base
            )));
        }
        if opts.max_value_size > u32::MAX as usize {
            return Err(Error::InvalidArgument("max_value_size must fit in 32 bits".into()));
        }
        Ok(Database { core: std::sync::Arc::new(Core::new(opts)), owner: true })
    }
}

impl Core {
    fn new(opts: Options) -> Core {
        Core {
            txns: TxnTable::new(opts.max_transactions),
            recording: std::sync::atomic::AtomicBool::new(opts.record_history),
            clock: CachePadded::new(AtomicU64::new(2)),
            tables: (0..MAX_TABLES).map(|_| OnceLock::new()).collect(),
            names: Mutex::new(HashMap::new()),
            gc: Gc::new(),
            versions_freed: CachePadded::new(AtomicU64::new(0)),
            history: Mutex::new(Vec::new()),
            silo: protocol::silo::SiloGlobal::new(),
            ssn_safe: protocol::ssn::SafeSnapshots::default(),
            bohm: (opts.protocol == Protocol::Bohm).then(protocol::bohm::Store::new),
            // BTs 0 is the clock's 2 (see `protocol::pomvcc`).
            po: (opts.protocol == Protocol::Pomvcc).then(|| protocol::pomvcc::TsManager::new(0, opts.pomvcc_interval)),
            durable: None,
            freeze: Default::default(),
            opts,
        }
    }
}

impl Database {
    /// The options the database was opened with.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// The protocol in use.
    pub fn protocol(&self) -> Protocol {
        self.opts.protocol
    }

    /// Creates a table.
    pub fn create_table(&self, spec: TableSpec) -> Result<TableId> {
        let mut names = self.names.lock();
        if names.contains_key(&spec.name) {
            return Err(Error::TableExists(spec.name.clone()));
        }
        let id = names.len() as u32;
        if id as usize >= MAX_TABLES {
            return Err(Error::InvalidArgument(format!("a database holds at most {MAX_TABLES} tables")));
        }
        let ssn = matches!(self.opts.protocol, Protocol::Ssn | Protocol::Ssi);
        let t = Table::new(id, &spec, self.opts.protocol.uses_key_locks(), ssn)?;
        if self.tables[id as usize].set(t).is_err() {
            unreachable!("table ids are handed out under the names lock");
        }
        names.insert(spec.name.clone(), id);
        drop(names);
        if let Some(d) = &self.durable {
            d.log.set_tables(&self.table_list())?;
        }
        Ok(TableId(id))
    }

    /// Looks a table up by name.
    pub fn table(&self, name: &str) -> Result<TableId> {
        self.names.lock().get(name).map(|&i| TableId(i)).ok_or_else(|| Error::UnknownTable(name.to_string()))
    }

    /// The names of all tables, in creation order.
    pub fn table_names(&self) -> Vec<String> {
        let mut v: Vec<_> = self.names.lock().iter().map(|(n, &i)| (i, n.clone())).collect();
        v.sort();
        v.into_iter().map(|(_, n)| n).collect()
    }

    /// Looks an index of a table up by name (`"primary"` is the primary index).
    pub fn index(&self, table: TableId, name: &str) -> Result<IndexId> {
        let t = self.table_ref(table)?;
        t.indexes
            .iter()
            .position(|ix| ix.name == name)
            .map(|i| IndexId { table: table.0, index: i as u8 })
            .ok_or_else(|| Error::UnknownIndex(format!("{}.{name}", t.name)))
    }

    /// The primary index of a table.
    pub fn primary(&self, table: TableId) -> IndexId {
        IndexId { table: table.0, index: 0 }
    }

    #[inline]
    pub(crate) fn table_ref(&self, t: TableId) -> Result<&Table> {
        self.tables.get(t.0 as usize).and_then(|c| c.get()).ok_or_else(|| Error::UnknownTable(format!("#{}", t.0)))
    }

    #[inline]
    pub(crate) fn table_by_id(&self, t: u32) -> &Table {
        self.tables[t as usize].get().expect("tables referenced by versions exist")
    }

    /// Begins a transaction at `isolation`.
    pub fn begin(&self, isolation: Isolation) -> Result<Transaction<'_>> {
        self.begin_with(TxnOptions::new(isolation))
    }

    /// Begins a transaction with options.
    pub fn begin_with(&self, o: TxnOptions<'_>) -> Result<Transaction<'_>> {
        if !self.opts.protocol.isolation_levels().contains(&o.isolation) {
            return Err(Error::InvalidIsolation {
                protocol: self.opts.protocol.name().to_string(),
                isolation: o.isolation.name().to_string(),
            });
        }
        if !self.opts.protocol.runs_mode(o.mode) {
            let mode = if o.mode == Mode::Optimistic { "optimistic" } else { "pessimistic" };
            return Err(Error::InvalidArgument(format!(
                "protocol {} does not run {mode} transactions (mv-mixed and pomvcc run both)",
                self.opts.protocol
            )));
        }
        if let (Some(po), Some(after)) = (&self.po, o.after) {
            if protocol::pomvcc::of_stamp(after) > po.cts() {
                return Err(Error::InvalidArgument(format!(
                    "begin after {after}: no transaction has committed at that timestamp yet"
                )));
            }
        }
        let (slot, id) = self.txns.open()?;
        let s = self.txns.slot(slot);
        if let Some(po) = &self.po {
            // Allocate_BTs (Figure 18): at least `after`, if given; then the
            // clock that begin reads below follows BTs.
            match o.after.map(protocol::pomvcc::of_stamp) {
                Some(ts) => {
                    po.allocate_bts(ts);
                }
                None => po.tick(),
            }
            self.po_clock();
        }
        if self.opts.protocol == Protocol::Bohm {
            // Alone, at the next log position (see `protocol::bohm`).
            let ts = self.bohm_enter();
            return Ok(Transaction::new(self, slot, id, ts, o));
        }
        if self.opts.protocol.is_single_version() {
            // No shared counter: the begin "timestamp" is the epoch, published
            // for the watermark that bounds when retired records are freed
            // (see `protocol::silo`), in the same two SeqCst steps as below.
            s.begin_ts.store(self.silo.epoch(), Ordering::SeqCst);
            let e = self.silo.epoch_seqcst();
            // Release: only raises the published value.
            s.begin_ts.store(e, Ordering::Release);
            if !self.opts.protocol.uses_key_locks() {
                return Ok(Transaction::new(self, slot, id, e, o));
            }
            // Locking: the begin time the checker sees is a reading of the
            // commit sequence (recording only; see `protocol::lock_1v`).
            // Relaxed: the order is that of the RMWs on this one counter.
            let b = if self.is_recording() { self.silo.order.load(Ordering::Relaxed) } else { e };
            let mut t = Transaction::new(self, slot, id, b, o);
            if let Some(access) = o.access.filter(|_| self.opts.protocol == Protocol::TwoPlOrdered) {
                t.lock_declared(access)?;
            }
            return Ok(t);
        }
        // The begin timestamp is a clock reading, not an increment: the time
        // just past every stamp handed out so far (odd, so it never equals a
        // commit stamp, which are even). Every stamp below it was drawn before
        // it; a writer still drawing its stamp is in the pending state, which
        // readers wait out. Only end timestamps must be unique (they order the
        // committed transactions); sparing the begin increment spares one
        // contended read-modify-write of the clock per transaction.
        //
        // It is published in two steps for the GC watermark (see
        // `TxnTable::min_active_begin`), SeqCst throughout: either a
        // concurrent watermark scan sees the provisional value (no larger
        // than the real one), or our second clock reading follows the scan's
        // and is at least its bound minus one, above every stamp it reclaims.
        if let Some(interval) = self.opts.safe_snapshot_interval.filter(|_| protocol::ssn::uses_safe_snapshot(self, &o))
        {
            // The same two steps with the safe snapshot (see `watermark`): a
            // scan that misses the first store read a `latest` no larger
            // than the one we read after it.
            s.begin_ts.store(self.ssn_safe.latest(), Ordering::SeqCst);
            let begin_ts = self.ssn_safe.get(&self.clock, &self.txns, interval);
            // Release: only raises the published value.
            s.begin_ts.store(begin_ts, Ordering::Release);
            return Ok(Transaction::new(self, slot, id, begin_ts, o));
        }
        s.begin_ts.store(self.clock.load(Ordering::SeqCst) - 1, Ordering::SeqCst);
        let begin_ts = self.clock.load(Ordering::SeqCst) - 1;
        // Release: only raises the published value; readers need no more.
        s.begin_ts.store(begin_ts, Ordering::Release);
        Ok(Transaction::new(self, slot, id, begin_ts, o))
    }

    /// Runs `f` in a transaction at `isolation`, committing at the end and
    /// retrying transient aborts with the default [`RetryPolicy`].
    pub fn run<R>(&self, isolation: Isolation, f: impl FnMut(&mut Transaction<'_>) -> Result<R>) -> Result<R> {
        self.run_with(TxnOptions::new(isolation), RetryPolicy::default(), f)
    }

    /// Like [`Database::run`] with explicit options and retry policy. Returns
    /// the last error when the attempts are exhausted; non-transient errors
    /// (a duplicate key, say) are returned at once after rolling back.
    pub fn run_with<R>(
        &self,
        o: TxnOptions<'_>,
        policy: RetryPolicy,
        mut f: impl FnMut(&mut Transaction<'_>) -> Result<R>,
    ) -> Result<R> {
        let mut backoff = policy.initial_backoff;
        let mut attempt = 0;
        let mut o = o;
        loop {
            attempt += 1;
            let mut t = self.begin_with(o)?;
            let r = match f(&mut t) {
                Ok(r) => t.commit().map(|_| r),
                Err(e) => {
                    drop(t); // rolls back if still active
                    Err(e)
                }
            };
            match r {
                Ok(r) => return Ok(r),
                // SSN's safe retry (section 3.2): the committed transaction
                // that violated the exclusion window cannot do it again to a
                // retry begun now, which reads its versions: no backoff.
                Err(Error::Aborted(AbortReason::ExclusionWindow)) if attempt < policy.max_attempts => {}
                Err(e) if e.is_transient() && attempt < policy.max_attempts => {
                    o.after = self.retry_after().or(o.after);
                    // Jittered exponential backoff, seeded cheaply per attempt.
                    let jitter = (attempt as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54;
                    let d = backoff.as_nanos() as u64;
                    std::thread::sleep(Duration::from_nanos(d / 2 + jitter % (d / 2 + 1)));
                    backoff = (backoff * 2).min(policy.max_backoff);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Counters since the database was opened.
    pub fn stats(&self) -> Stats {
        let (mut committed, mut aborts, created, freed, ssn_untracked_reads) = self.txns.totals();
        // Relaxed: statistics only.
        let freed = freed + self.versions_freed.load(Ordering::Relaxed);
        let mut versions_alive = created.saturating_sub(freed);
        if let Some(b) = &self.bohm {
            let (c, a, alive) = b.totals();
            committed += c;
            for (x, y) in aborts.iter_mut().zip(a) {
                *x += y;
            }
            versions_alive += alive;
        }
        Stats {
            committed,
            aborts,
            versions_alive,
            garbage_pending: self.gc.pending() as u64,
            garbage_unfreed: self.gc.unfreed() as u64,
            open_transactions: self.txns.open_count() as u64,
            ssn_untracked_reads,
            timestamp_increments: self.timestamp_increments(),
            // Relaxed: statistics only.
            log_bytes: self.durable.as_ref().map_or(0, |d| d.log.stats().bytes.load(Ordering::Relaxed)),
            log_records: self.durable.as_ref().map_or(0, |d| d.log.stats().records.load(Ordering::Relaxed)),
            log_syncs: self.durable.as_ref().map_or(0, |d| d.log.stats().syncs.load(Ordering::Relaxed)),
            checkpoints: self.durable.as_ref().map_or(0, |d| d.checkpoints.load(Ordering::Relaxed)),
        }
    }

    /// See [`Stats::timestamp_increments`]: derived from the counters
    /// themselves (CTs starts at 1, the clock at 2 and steps by 2).
    fn timestamp_increments(&self) -> u64 {
        if let Some(po) = &self.po {
            return po.cts() - 1;
        }
        if self.opts.protocol.is_single_version() || self.opts.protocol == Protocol::Bohm {
            return 0;
        }
        // Relaxed: statistics only.
        (self.clock.load(Ordering::Relaxed) - 2) / 2
    }

    /// Makes every commit that has finished visible to the transactions that
    /// begin from now on, and returns a timestamp that covers them (for
    /// [`TxnOptions::after`]). Under POMVCC a commit is visible only once BTs
    /// passes its timestamp (section IV.C): this closes the open commit
    /// timestamp and waits until every transaction at it has finished
    /// (they are committing: a short wait). Loaders and consistency checks
    /// call it between phases. A no-op under the other protocols.
    pub fn sync_commits(&self) -> Result<Option<u64>> {
        let Some(after) = self.retry_after() else { return Ok(None) };
        let isolation = self.opts.protocol.strongest();
        self.begin_with(TxnOptions { after: Some(after), read_only: true, ..TxnOptions::new(isolation) })?.commit()?;
        Ok(Some(after))
    }

    /// POMVCC: the timestamp a transaction retried after an abort should
    /// begin after ([`TxnOptions::after`]) — the commit timestamp now open,
    /// which covers every commit that preceded the abort, so the retry does
    /// not meet the same conflict (section VI.C: "the user gives the CTs
    /// during the begin phase during the retry process"). `None` under the
    /// other protocols, whose transactions see every earlier commit anyway.
    pub fn retry_after(&self) -> Option<u64> {
        self.po.as_ref().map(|po| protocol::pomvcc::stamp(po.cts()))
    }

    /// POMVCC: the clock follows BTs (`2 BTs + 2`, so that a begin reads at
    /// `2 BTs + 1`, just past every commit stamp `2 c` with `c <= BTs`).
    pub(crate) fn po_clock(&self) {
        if let Some(po) = &self.po {
            let want = protocol::pomvcc::stamp(po.bts()) + 2;
            // SeqCst: as every clock access. Read first: most calls find the
            // clock current and spare the shared line a read-modify-write;
            // fetch_max keeps it monotonic when callers race with BTs
            // readings of different ages.
            if self.clock.load(Ordering::SeqCst) < want {
                self.clock.fetch_max(want, Ordering::SeqCst);
            }
        }
    }

    /// The GC watermark: no open or future transaction reads before it.
    pub(crate) fn watermark(&self) -> u64 {
        // SeqCst: the bound must be read before the slot scan (see TxnTable).
        if self.opts.protocol.uses_key_locks() {
            // Locking transactions keep no record across operations that
            // another transaction could retire (see `protocol::lock_1v`):
            // an epoch of crossbeam-epoch is all a retired record needs.
            return u64::MAX;
        }
        let bound = if self.opts.protocol == Protocol::Silo {
            self.silo.epoch_seqcst()
        } else {
            let c = self.clock.load(Ordering::SeqCst);
            // A safe snapshot's versions stay while new readers may take it.
            match self.ssn_safe.latest() {
                0 => c,
                s => c.min(s),
            }
        };
        self.txns.min_active_begin(bound)
    }

    /// Reclaims every version no open or future transaction can see; returns
    /// how many were reclaimed. Garbage collection also runs cooperatively as
    /// transactions commit, so calling this is never required.
    pub fn collect_garbage(&self) -> usize {
        let w = self.watermark();
        let mut n = 0;
        for s in 0..self.gc.shards() {
            n += self.gc.collect(s, w, usize::MAX, |t| self.table_by_id(t));
        }
        // Relaxed: statistics only.
        self.versions_freed.fetch_add(n as u64, Ordering::Relaxed);
        n
    }

    pub(crate) fn record(&self, r: history::TxnRecord) {
        self.history.lock().push(r);
    }

    /// Switches history recording on or off for transactions that begin
    /// from now on (for example after loading, so the load is not recorded).
    pub fn set_recording(&self, on: bool) {
        if on && self.opts.protocol == Protocol::Silo {
            // Recorded TIDs come after every unrecorded one (the checker's
            // initial state is what is older than the first recorded commit).
            self.silo.order_past_epoch();
        }
        // Relaxed: a switch read once per transaction; no data depends on it.
        self.recording.store(on, Ordering::Relaxed);
    }

    /// True if transactions that begin now record their history.
    pub fn is_recording(&self) -> bool {
        // Relaxed: as above.
        self.recording.load(Ordering::Relaxed)
    }

    /// Takes the history recorded so far (empty unless
    /// [`Options::record_history`] is on); recording goes on.
    pub fn take_history(&self) -> history::History {
        history::History { txns: std::mem::take(&mut *self.history.lock()) }
    }

    /// The current value of the timestamp counter.
    pub fn clock(&self) -> u64 {
        // Relaxed: an informational snapshot.
        self.clock.load(Ordering::Relaxed)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if self.owner {
            if let Some(d) = &self.durable {
                d.stop_checkpointer();
            }
        }
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        // No transaction can be open (they borrow the database). Every version
        // still allocated is linked into its table's primary index, except
        // those already unlinked and handed to the epoch collector.
        for t in self.tables.iter().filter_map(|t| t.get()) {
            let mut all = Vec::new();
            t.for_each_version(|v| all.push(v));
            for v in all {
                // SAFETY: we have exclusive access; each linked version is
                // reached exactly once through the primary index.
                unsafe { storage::version::Version::free(v) };
            }
        }
    }
}

// SAFETY: all shared state is atomics, locks, or immutable after publication.
unsafe impl Sync for Database {}
// SAFETY: as above.
unsafe impl Send for Database {}

/// Removes every checkpoint and log file of generations before `generation`.
/// Takes the lock of the data directory `dir` for the database opening it:
/// a second open (of this process or another) fails with
/// [`Error::Locked`] naming the holder. The lock (`flock`) goes with the
/// file handle, so a crashed owner's lock is gone with its process.
fn lock_dir(dir: &std::path::Path) -> Result<std::fs::File> {
    use std::io::{Read, Seek, Write};
    let path = dir.join(durability::LOCK_FILE);
    let io = |e: std::io::Error| Error::Io(format!("cannot lock {}: {e}", path.display()));
    let mut f =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
    match f.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = f.read_to_string(&mut holder);
            let holder = holder.trim();
            let holder = if holder.is_empty() { "another process or handle".to_string() } else { holder.to_string() };
            return Err(Error::Locked(format!("{} is in use by another open database ({holder})", dir.display())));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
    }
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let who = format!("process {}, opened at unix time {since}\n", std::process::id());
    f.set_len(0)
        .and_then(|_| f.seek(std::io::SeekFrom::Start(0)))
        .and_then(|_| f.write_all(who.as_bytes()))
        .map_err(io)?;
    Ok(f)
}

fn remove_generations_before(dir: &std::path::Path, generation: u64) -> Result<()> {
    remove_files(dir, |name| {
        durability::parse_checkpoint_name(name).is_some_and(|(g, _)| g < generation)
            || durability::parse_log_name(name).is_some_and(|(g, _, _)| g < generation)
            || (name.starts_with("checkpoint-") && name.ends_with(".tmp"))
    })
}

/// Removes the checkpoints of `generation` older than `ts`.
fn remove_checkpoints_before(dir: &std::path::Path, generation: u64, ts: u64) -> Result<()> {
    remove_files(dir, |name| durability::parse_checkpoint_name(name).is_some_and(|(g, t)| g == generation && t < ts))
}

fn remove_files(dir: &std::path::Path, which: impl Fn(&str) -> bool) -> Result<()> {
    let io = |e: std::io::Error| Error::Io(format!("{}: {e}", dir.display()));
    let mut any = false;
    for e in std::fs::read_dir(dir).map_err(io)? {
        let e = e.map_err(io)?;
        if which(&e.file_name().to_string_lossy()) {
            std::fs::remove_file(e.path()).map_err(io)?;
            any = true;
        }
    }
    if any {
        durability::sync_dir(dir)?;
    }
    Ok(())
}
