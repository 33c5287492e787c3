//! What a database and a transaction are opened with: the protocol, the
//! isolation levels, [`Options`] (and the test-only [`Faults`]),
//! [`TxnOptions`], the [`AccessSet`] of declared keys, and the
//! [`RetryPolicy`] of [`crate::Database::run`]. [`Options`] has a builder
//! method per field (`Options::new().protocol(..)`).

pub use crate::index::ordered::OrderedMap;
use crate::{Error, Result};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

mod builder;
mod txn;

pub use txn::{AccessSet, Mode, RetryPolicy, TxnOptions};

/// Most tables a database can hold.
///
/// ```
/// use multiverse::{Database, Options, TableSpec, MAX_TABLES};
///
/// let db = Database::new(Options::default()).unwrap();
/// for i in 0..MAX_TABLES {
///     db.create_table(TableSpec::hash(&format!("t{i}"), 1)).unwrap();
/// }
/// assert!(db.create_table(TableSpec::hash("one more", 1)).is_err());
/// ```
pub const MAX_TABLES: usize = 256;

/// Concurrency-control protocols. Every one is built in and accepted by
/// [`crate::Database::new`].
///
/// ```
/// use multiverse::{Database, Options, Protocol};
///
/// let p: Protocol = "ssn".parse().unwrap();
/// assert_eq!(p, Protocol::Ssn);
/// let db = Database::new(Options { protocol: p, ..Options::default() }).unwrap();
/// assert_eq!(db.protocol().to_string(), "ssn");
/// assert!("nope".parse::<Protocol>().is_err());
/// ```
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
    ///
    /// ```
    /// use multiverse::{Isolation, Protocol};
    ///
    /// // Every protocol offers serializable.
    /// assert!(Protocol::ALL.iter().all(|p| p.isolation_levels().contains(&Isolation::Serializable)));
    /// ```
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
    ///
    /// ```
    /// use multiverse::Protocol;
    ///
    /// assert_eq!(Protocol::TwoPlOrdered.name(), "2pl-ordered");
    /// assert_eq!(Protocol::ALL.map(|p| p.name().parse::<Protocol>().unwrap()), Protocol::ALL);
    /// ```
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

    /// Always true: every protocol is built in. Kept so that callers from
    /// when some were not still compile.
    ///
    /// ```
    /// use multiverse::Protocol;
    ///
    /// #[allow(deprecated)]
    /// let all = Protocol::ALL.iter().all(|p| p.is_available());
    /// assert!(all);
    /// ```
    #[deprecated(note = "every protocol is always built in")]
    pub fn is_available(self) -> bool {
        true
    }

    /// True for the single-version locking protocols: every index carries a
    /// lock table (Hekaton section 5).
    ///
    /// ```
    /// use multiverse::Protocol;
    ///
    /// assert!(Protocol::OneVLock.uses_key_locks() && Protocol::TwoPlOrdered.uses_key_locks());
    /// assert!(!Protocol::Silo.uses_key_locks());
    /// ```
    pub fn uses_key_locks(self) -> bool {
        matches!(self, Protocol::OneVLock | Protocol::TwoPlOrdered)
    }

    /// True for the protocols that use a transaction's access declaration
    /// ([`TxnOptions::access`]) before it runs.
    ///
    /// ```
    /// use multiverse::Protocol;
    ///
    /// assert!(Protocol::Bohm.uses_declarations() && Protocol::TwoPlOrdered.uses_declarations());
    /// assert!(!Protocol::MvOcc.uses_declarations());
    /// ```
    pub fn uses_declarations(self) -> bool {
        matches!(self, Protocol::TwoPlOrdered | Protocol::Bohm)
    }

    /// True for the single-version protocols (an in-place store).
    ///
    /// ```
    /// use multiverse::Protocol;
    ///
    /// assert!(Protocol::Silo.is_single_version() && Protocol::OneVLock.is_single_version());
    /// assert!(!Protocol::Bohm.is_single_version() && !Protocol::Pomvcc.is_single_version());
    /// ```
    pub fn is_single_version(self) -> bool {
        matches!(self, Protocol::OneVLock | Protocol::Silo | Protocol::TwoPlOrdered)
    }

    /// The isolation levels the protocol offers, weakest first.
    ///
    /// ```
    /// use multiverse::{Isolation, Protocol};
    ///
    /// assert_eq!(Protocol::MvOcc.isolation_levels(), Isolation::ALL);
    /// assert_eq!(
    ///     Protocol::OneVLock.isolation_levels(),
    ///     [Isolation::ReadCommitted, Isolation::RepeatableRead, Isolation::Serializable]
    /// );
    /// assert_eq!(Protocol::Silo.isolation_levels(), [Isolation::Serializable]);
    /// ```
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
    ///
    /// ```
    /// use multiverse::{Mode, Protocol};
    ///
    /// assert!(Protocol::MvMixed.runs_mode(Mode::Pessimistic) && Protocol::MvMixed.runs_mode(Mode::Optimistic));
    /// assert!(!Protocol::MvOcc.runs_mode(Mode::Pessimistic));
    /// assert!(Protocol::Silo.runs_mode(Mode::Default) && !Protocol::Silo.runs_mode(Mode::Optimistic));
    /// ```
    pub fn runs_mode(self, mode: Mode) -> bool {
        match (self, mode) {
            (_, Mode::Default) | (Protocol::MvMixed | Protocol::Pomvcc, _) => true,
            (Protocol::MvOcc, m) => m == Mode::Optimistic,
            (Protocol::MvLock, m) => m == Mode::Pessimistic,
            _ => false,
        }
    }

    /// The strongest level offered (the default of `begin` in the shell).
    ///
    /// ```
    /// use multiverse::{Isolation, Protocol};
    ///
    /// assert_eq!(Protocol::MvOcc.strongest(), Isolation::Serializable);
    /// assert_eq!(Protocol::Pomvcc.strongest(), Isolation::Serializable);
    /// ```
    pub fn strongest(self) -> Isolation {
        *self.isolation_levels().last().expect("every protocol offers a level")
    }

    /// The protocols this build implements: all of them, as [`Protocol::ALL`].
    ///
    /// ```
    /// use multiverse::Protocol;
    ///
    /// assert!(Protocol::available().eq(Protocol::ALL));
    /// ```
    pub fn available() -> impl Iterator<Item = Protocol> {
        Self::ALL.into_iter()
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
///
/// ```
/// use multiverse::Isolation;
///
/// let level: Isolation = "si".parse().unwrap();
/// assert_eq!(level, Isolation::Snapshot);
/// assert_eq!(level.to_string(), "snapshot");
/// assert!(Isolation::ReadCommitted < Isolation::Serializable); // weakest first
/// assert!("strict".parse::<Isolation>().is_err());
/// ```
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
    ///
    /// ```
    /// use multiverse::Isolation;
    ///
    /// assert_eq!(Isolation::ALL[0], Isolation::ReadCommitted);
    /// assert!(Isolation::ALL.windows(2).all(|w| w[0] < w[1]));
    /// ```
    pub const ALL: [Isolation; 4] =
        [Isolation::ReadCommitted, Isolation::Snapshot, Isolation::RepeatableRead, Isolation::Serializable];

    /// The command-line name.
    ///
    /// ```
    /// use multiverse::Isolation;
    ///
    /// assert_eq!(Isolation::RepeatableRead.name(), "repeatable-read");
    /// assert_eq!(Isolation::RepeatableRead.name().parse::<Isolation>().unwrap(), Isolation::RepeatableRead);
    /// ```
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
///
/// ```
/// use multiverse::{Database, Error, Isolation, Options, Protocol};
/// use std::time::Duration;
///
/// let opts = Options {
///     protocol: Protocol::MvLock,
///     deadlock_interval: Duration::from_micros(200),
///     max_transactions: 2,
///     ..Options::default()
/// };
/// let db = Database::new(opts).unwrap();
/// assert_eq!(db.options().max_transactions, 2);
/// let (_a, _b) = (db.begin(Isolation::Snapshot).unwrap(), db.begin(Isolation::Snapshot).unwrap());
/// assert!(matches!(db.begin(Isolation::Snapshot), Err(Error::TooManyTransactions(_))));
/// ```
#[derive(Clone, Debug)]
pub struct Options {
    /// The concurrency-control protocol.
    pub protocol: Protocol,
    /// Most transactions open at once (at most 4096).
    pub max_transactions: usize,
    /// Largest value accepted, in bytes.
    pub max_value_size: usize,
    /// How long a transaction blocked on wait-for dependencies (MV/L,
    /// section 4.4) waits before it runs deadlock detection, and then
    /// between runs: a deadlock is broken within about this long. A
    /// transaction waiting for a lock (1V locking) looks for a deadlock as
    /// soon as its short spin ends, and then every interval.
    pub deadlock_interval: Duration,
    /// How long a single-version locking transaction waits for a lock before
    /// it aborts with [`AbortReason::LockTimeout`](crate::AbortReason::LockTimeout) (Hekaton section 5 breaks
    /// deadlocks with timeouts). Deadlocks are also detected: a waiter
    /// looks for a cycle of waits when it starts to wait and then every
    /// [`Options::deadlock_interval`], and the cycle's youngest
    /// transaction (sparing those whose threads lost the last deadlocks)
    /// aborts with
    /// [`AbortReason::Deadlock`](crate::AbortReason::Deadlock); the timeout then bounds waits behind a
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
    /// ([`Database::take_history`](crate::Database::take_history)). Off by default.
    pub record_history: bool,
    /// When a commit is durable (see [`crate::durability`]); anything but
    /// [`Durability::None`] needs [`Options::data_dir`] and
    /// [`Database::open`](crate::Database::open). None by default.
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
    /// [`crate::durability`]); [`Database::checkpoint`](crate::Database::checkpoint) writes one at any
    /// time. 60 s by default.
    pub checkpoint_every: Option<Duration>,
    /// A durable database also checkpoints once this many log bytes were
    /// appended since its last checkpoint (`None`: no limit), which bounds
    /// the log and the recovery time. 1 GiB by default.
    pub checkpoint_log_bytes: Option<u64>,
    /// What opening (or [`Database::recover_from`](crate::Database::recover_from)) does with a damaged
    /// data directory: refuse it, changing nothing (the default), or keep
    /// the longest consistent prefix, moving what it drops into a
    /// quarantine folder (see [`OnDamage`]).
    pub on_damage: OnDamage,
    /// Most bytes of user data the database holds (see
    /// [`Error::MemoryLimit`] for what is counted). Past it, writes that
    /// allocate (inserts and updates) fail with [`Error::MemoryLimit`]
    /// before allocating, and the transaction stays open; reads, deletes
    /// and commits go on, and writes resume once garbage collection has
    /// freed old versions ([`crate::Database::collect_garbage`];
    /// [`crate::Database::run`] collects and retries by itself). `None` (the
    /// default): no limit, and nothing is counted.
    ///
    /// ```
    /// use multiverse::{Database, Error, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options { memory_limit: Some(64 << 10), ..Options::default() }).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 1024)).unwrap();
    /// let mut tx = db.begin(Isolation::Serializable).unwrap();
    /// let mut i = 0;
    /// let err = loop {
    ///     if let Err(e) = tx.insert(t, Key::from(i), &[0u8; 100]) {
    ///         break e;
    ///     }
    ///     i += 1;
    /// };
    /// assert!(matches!(err, Error::MemoryLimit { .. }) && err.is_transient());
    /// // The transaction is still open: it reads, and commits what it wrote.
    /// assert!(tx.get(t, &Key::from(0)).unwrap().is_some());
    /// tx.commit().unwrap();
    /// ```
    pub memory_limit: Option<u64>,
    /// The data structure under every ordered index: the skip list (the
    /// default) or the B+tree (see [`OrderedMap`]). It is chosen per open:
    /// nothing of it is written to a data directory.
    pub ordered_map: OrderedMap,
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
    /// A failing disk: once this many log rounds have been written, the
    /// next round's write fails as `EIO` would, after writing part of it
    /// (see `wal::log`, "Fail-stop"). Not a broken protocol either.
    pub fail_log_write_after: Option<u64>,
    /// As `fail_log_write_after`, for the round's sync: its bytes are
    /// written (they sit in the page cache), and `fsync` fails.
    pub fail_log_sync_after: Option<u64>,
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
            pomvcc_interval: POMVCC_TICK,
            record_history: false,
            durability: Durability::None,
            data_dir: None,
            log_streams: 2,
            log_rotate_bytes: 64 << 20,
            group_commit_interval: Duration::from_millis(1),
            checkpoint_every: Some(Duration::from_secs(60)),
            checkpoint_log_bytes: Some(1 << 30),
            on_damage: OnDamage::Refuse,
            memory_limit: None,
            ordered_map: OrderedMap::SkipList,
            faults: Faults::default(),
        }
    }
}

/// POMVCC's default `Update_BTs` interval (`Options::pomvcc_interval`):
/// the paper's 1 ms (see `protocol::mv::pomvcc`).
///
/// ```
/// use multiverse::{Options, POMVCC_TICK};
///
/// assert_eq!(Options::default().pomvcc_interval, POMVCC_TICK);
/// ```
pub const POMVCC_TICK: Duration = Duration::from_millis(1);

/// When a commit is durable.
///
/// ```
/// use multiverse::Durability;
///
/// let d: Durability = "sync".parse().unwrap();
/// assert_eq!(d, Durability::Sync);
/// assert_eq!(Durability::default(), Durability::None);
/// assert!("fsync".parse::<Durability>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// In memory only: a crash loses everything.
    #[default]
    None,
    /// Group commit, the commit returns before the flush (the papers'
    /// experiments): a crash loses at most the last interval's commits,
    /// and recovery still yields a consistent state.
    Async,
    /// The commit returns after its log record is durable; commits that
    /// arrive together share one flush per stream.
    Sync,
}

impl Durability {
    /// The name used on the command line.
    ///
    /// ```
    /// use multiverse::Durability;
    ///
    /// assert_eq!(Durability::Async.name(), "async");
    /// assert_eq!(Durability::Async.name().parse::<Durability>().unwrap(), Durability::Async);
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Durability::None => "none",
            Durability::Async => "async",
            Durability::Sync => "sync",
        }
    }
}

impl std::str::FromStr for Durability {
    type Err = Error;
    fn from_str(s: &str) -> Result<Durability> {
        match s {
            "none" => Ok(Durability::None),
            "async" => Ok(Durability::Async),
            "sync" => Ok(Durability::Sync),
            other => Err(Error::Parse(format!("unknown durability '{other}' (none, async, sync)"))),
        }
    }
}

/// What recovery does with a damaged data directory: one whose log lost
/// commits that may have been acknowledged as durable, or holds damage that
/// a crash cannot explain ([`crate::RecoveryReport::damaged`], see
/// `durability::recovery`). A crash's torn tail is not damage: under
/// either policy it is dropped, reported in
/// [`crate::RecoveryReport::dropped`], and the directory opens.
///
/// The default refuses: a damaged directory is not opened, and nothing in
/// it is changed, until someone chooses. The error names the two ways on:
/// look first at what would be lost (`multiverse recover DIR --salvage
/// OUT` writes every intact log record that recovery drops), then open it
/// with [`OnDamage::KeepPrefix`].
///
/// ```
/// use multiverse::{OnDamage, Options};
///
/// assert_eq!(Options::default().on_damage, OnDamage::Refuse);
/// let opts = Options { on_damage: "keep-prefix".parse().unwrap(), ..Options::default() };
/// assert_eq!(opts.on_damage, OnDamage::KeepPrefix);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDamage {
    /// Refuse with [`Error::Corrupt`], whose message names the damage and
    /// the remedies, recovering nothing and changing nothing. The default.
    #[default]
    Refuse,
    /// Recover the longest consistent prefix of the commit order and report
    /// what was dropped and why ([`crate::RecoveryReport::dropped`]).
    /// Nothing is deleted: before [`crate::Database::open`] starts the new
    /// generation, it moves the damaged generation's files (its
    /// checkpoint, manifest and every log file) into
    /// `DIR/quarantine-<generation>/` with a `README.txt` that lists them
    /// and the damage ([`crate::RecoveryReport::quarantine`] names the
    /// folder). Recovery never reads a quarantine folder; it is a data
    /// directory of its own, which `multiverse recover` reads, and yours to
    /// delete. [`crate::Database::recover_from`] changes nothing.
    KeepPrefix,
}

impl std::str::FromStr for OnDamage {
    type Err = Error;
    fn from_str(s: &str) -> Result<OnDamage> {
        match s {
            "keep-prefix" => Ok(OnDamage::KeepPrefix),
            "refuse" => Ok(OnDamage::Refuse),
            other => Err(Error::Parse(format!("unknown on-damage policy '{other}' (keep-prefix, refuse)"))),
        }
    }
}
