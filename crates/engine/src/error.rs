//! Typed errors. Every failure a user can cause has its own variant with a
//! one-line message; transient concurrency-control aborts carry an
//! [`AbortReason`] and can be retried.

use std::fmt;

/// Result type of the engine.
///
/// ```
/// use multiverse::{Error, Protocol, Result};
///
/// fn protocol(name: &str) -> Result<Protocol> {
///     name.parse()
/// }
/// assert_eq!(protocol("silo"), Ok(Protocol::Silo));
/// assert!(matches!(protocol("nope"), Err(Error::Parse(_))));
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a transaction was aborted. Counted per database (see
/// [`crate::Stats::aborts_by_reason`]); the names are stable and appear in the
/// benchmark JSON and the shell.
///
/// ```
/// use multiverse::{AbortReason, Database, Error, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// db.run(Isolation::Snapshot, |x| x.insert(t, Key::from(1), b"a")).unwrap();
/// let mut a = db.begin(Isolation::Snapshot).unwrap();
/// let mut b = db.begin(Isolation::Snapshot).unwrap();
/// a.update(t, &Key::from(1), b"b").unwrap();
/// // First writer wins: the second writer is aborted.
/// assert_eq!(b.update(t, &Key::from(1), b"c"), Err(Error::Aborted(AbortReason::WriteConflict)));
/// assert_eq!(b.abort_reason(), Some(AbortReason::WriteConflict));
/// a.commit().unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum AbortReason {
    /// First-writer-wins: the version to update was already updated by another
    /// transaction (Hekaton section 2.6), or a concurrent insert of the same key.
    WriteConflict = 0,
    /// A version read is no longer visible as of the end timestamp (section 3.2).
    ReadValidation = 1,
    /// Repeating a scan at the end timestamp found a new version (section 3.2).
    Phantom = 2,
    /// A transaction this one depended on aborted (cascading abort, section 2.7).
    CommitDependency = 3,
    /// The user called `abort`, or dropped the transaction while it was active.
    User = 4,
    /// MV/L: a read lock was refused — NoMoreReadLocks was set or the
    /// version already had the most read locks (VLDB 2011 section 4.1.1).
    ReadLock = 5,
    /// MV/L: a wait-for dependency could not be installed because the other
    /// transaction had set NoMoreWaitFors (section 4.2).
    WaitFor = 6,
    /// Chosen as the victim to break a deadlock: of wait-for dependencies
    /// (MV/L, section 4.4), or of lock waits (single-version locking, where
    /// the youngest transaction of the cycle is chosen).
    Deadlock = 7,
    /// Single-version locking: a lock wait outlasted the lock timeout
    /// ([`crate::Options::lock_timeout`]): a wait behind a holder that kept
    /// running (or a deadlock the detector did not get to first; VLDB 2011
    /// section 5 breaks deadlocks by timeouts alone).
    LockTimeout = 8,
    /// SSN: the exclusion window was violated, π(T) ≤ η(T): a transaction
    /// that committed before this one might also have to follow it, so
    /// committing could close a cycle (SSN paper, section 3.1).
    ExclusionWindow = 9,
    /// SSI: a dangerous structure T1 →rw T2 →rw T3 with T3 committed first
    /// (Cahill et al.; SSN paper, section 2), this transaction in it.
    DangerousStructure = 10,
    /// The log could not be written or synced (a full disk, an I/O error):
    /// the database has stopped accepting commits (fail-stop, see
    /// [`Error::LogFailed`]). Not transient: a retry fails the same way
    /// until the database is reopened.
    LogFailed = 11,
}

impl AbortReason {
    /// All reasons, in a fixed order.
    ///
    /// ```
    /// use multiverse::AbortReason;
    ///
    /// // Every reason but the user's own abort and a failed log may go
    /// // away on a retry.
    /// let lasting = [AbortReason::User, AbortReason::LogFailed];
    /// assert!(AbortReason::ALL.iter().all(|r| r.is_transient() != lasting.contains(r)));
    /// ```
    pub const ALL: [AbortReason; 12] = [
        AbortReason::WriteConflict,
        AbortReason::ReadValidation,
        AbortReason::Phantom,
        AbortReason::CommitDependency,
        AbortReason::User,
        AbortReason::ReadLock,
        AbortReason::WaitFor,
        AbortReason::Deadlock,
        AbortReason::LockTimeout,
        AbortReason::ExclusionWindow,
        AbortReason::DangerousStructure,
        AbortReason::LogFailed,
    ];
    /// Number of reasons.
    ///
    /// ```
    /// use multiverse::AbortReason;
    ///
    /// let mut per_reason = [0u64; AbortReason::COUNT];
    /// per_reason[AbortReason::Deadlock as usize] += 1;
    /// assert_eq!(AbortReason::ALL[AbortReason::Deadlock as usize], AbortReason::Deadlock);
    /// ```
    pub const COUNT: usize = Self::ALL.len();

    /// Stable kebab-case name.
    ///
    /// ```
    /// use multiverse::AbortReason;
    ///
    /// assert_eq!(AbortReason::WriteConflict.name(), "write-conflict");
    /// assert_eq!(AbortReason::ExclusionWindow.to_string(), "exclusion-window");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            AbortReason::WriteConflict => "write-conflict",
            AbortReason::ReadValidation => "read-validation",
            AbortReason::Phantom => "phantom",
            AbortReason::CommitDependency => "commit-dependency",
            AbortReason::User => "user",
            AbortReason::ReadLock => "read-lock",
            AbortReason::WaitFor => "wait-for",
            AbortReason::Deadlock => "deadlock",
            AbortReason::LockTimeout => "lock-timeout",
            AbortReason::ExclusionWindow => "exclusion-window",
            AbortReason::DangerousStructure => "dangerous-structure",
            AbortReason::LogFailed => "log-failed",
        }
    }

    /// True for aborts a retry may cure (everything but a user abort and
    /// a failed log).
    ///
    /// ```
    /// use multiverse::AbortReason;
    ///
    /// assert!(AbortReason::Deadlock.is_transient());
    /// assert!(!AbortReason::User.is_transient());
    /// assert!(!AbortReason::LogFailed.is_transient());
    /// ```
    pub fn is_transient(self) -> bool {
        !matches!(self, AbortReason::User | AbortReason::LogFailed)
    }
}

impl fmt::Display for AbortReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every error the engine returns.
///
/// ```
/// use multiverse::{Database, Error, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// let mut x = db.begin(Isolation::Serializable).unwrap();
/// // An update of a missing row fails and leaves the transaction open.
/// match x.update(t, &Key::from(1), b"v") {
///     Err(Error::KeyNotFound) => x.insert(t, Key::from(1), b"v").unwrap(),
///     other => other.unwrap(),
/// }
/// x.commit().unwrap();
/// assert_eq!(Error::KeyNotFound.to_string(), "key not found");
/// ```
#[allow(missing_docs)] // field names (len, max, protocol, isolation) say it all
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The transaction was aborted by this operation; it is rolled back.
    Aborted(AbortReason),
    /// The transaction had already ended (aborted for the given reason, or
    /// committed when `None`); no further operations are accepted.
    TransactionClosed(Option<AbortReason>),
    /// No table of that name or id.
    UnknownTable(String),
    /// No index of that name (or number) on the table.
    UnknownIndex(String),
    /// A table or index handle of another database (or of none): a
    /// database refuses it rather than take it for one of its own tables.
    /// The transaction stays open.
    ForeignHandle(String),
    /// A table of that name exists already.
    TableExists(String),
    /// `insert` of a key that already has a visible row.
    DuplicateKey,
    /// `update` or `delete` of a key that has no visible row.
    KeyNotFound,
    /// A value longer than [`crate::Options::max_value_size`].
    ValueTooLarge { len: usize, max: usize },
    /// A key longer than [`crate::KEY_MAX`].
    KeyTooLarge { len: usize, max: usize },
    /// The protocol does not offer the requested isolation level.
    InvalidIsolation { protocol: String, isolation: String },
    /// Never returned: every protocol is built in (this once refused those
    /// that were not). Kept so that code matching on it still compiles.
    #[deprecated(note = "never returned: every protocol is always built in")]
    UnsupportedProtocol(String),
    /// More concurrently open transactions than the transaction table holds.
    TooManyTransactions(usize),
    /// A name that does not parse (protocol, isolation level, ...).
    Parse(String),
    /// Invalid schema or options.
    InvalidArgument(String),
    /// Ordered 2PL: an access outside the transaction's declaration
    /// ([`crate::AccessSet`]); its locks were taken before it ran, so it
    /// cannot take more. The transaction stays open.
    NotDeclared(String),
    /// BOHM: the server has begun to stop; the transaction was not run.
    ShuttingDown,
    /// A file could not be read or written (durable databases).
    Io(String),
    /// Fail-stop: the log could not be written or synced (the message
    /// names the OS error: a full disk, a file size limit, an I/O error).
    /// From then on the database begins and commits nothing: the commit
    /// that met the failure, and every transaction that read its writes,
    /// fails with this error, so no client is shown a commit that a
    /// restart would lose. Drop the database and open the directory again
    /// ([`crate::Database::open_with`]): it recovers the durable prefix.
    LogFailed(String),
    /// The target of a backup exists and is not an empty directory: nothing is overwritten.
    NotEmpty(String),
    /// A data file is damaged beyond what recovery drops silently (a
    /// checkpoint, a log without its checkpoint), or a damaged directory
    /// under [`crate::OnDamage::Refuse`].
    Corrupt(String),
    /// The data directory is owned by another open database (of this
    /// process or another): a directory has one owner at a time.
    Locked(String),
    /// The operation is not offered by this index or protocol (an ordered
    /// iteration of a hash index, a savepoint of a declared transaction);
    /// the transaction stays open.
    Unsupported(String),
    /// Stored bytes that do not decode as the type asked for: a typed table
    /// ([`crate::typed`]) read a key or value of another type or layout.
    /// `ty` names the type, `reason` what was wrong.
    Decode { ty: &'static str, reason: String },
    /// A write that would allocate was refused: the database holds `used`
    /// bytes of user data and its [`crate::Options::memory_limit`] is
    /// `limit`. Nothing was written and the transaction stays open (it
    /// may commit what it did, or abort). Transient: writes resume once
    /// garbage collection frees old versions (deletes, and updates whose
    /// old versions no open transaction can still read), which
    /// [`crate::Database::run`] runs before it retries.
    ///
    /// Counted: each record version from when it is linked into its table
    /// until it is freed (garbage collection unlinks it, and frees it once
    /// no thread of the process is still pinned from before; see
    /// [`crate::Database::pin`]), at its allocation size
    /// (header, index links, key, value); under BOHM each version of its
    /// store and its value's buffer. Not counted: index nodes,
    /// transactions' private buffers, freed blocks kept for reuse.
    MemoryLimit { used: u64, limit: u64 },
    /// A table's definition differs from the one its data directory
    /// records (its primary index's kind or a hash index's capacity, a
    /// secondary index added, missing or of another kind, a typed table's
    /// key or value type): refused when the directory is opened
    /// ([`crate::Database::open_with`], nothing in it changed), by
    /// [`crate::Database::open_table`] and by
    /// [`crate::TableDefinition::open`]. `detail` says what differs.
    ///
    /// ```
    /// use multiverse::Error;
    ///
    /// let e = Error::SchemaMismatch { table: "orders".into(), detail: "stored as ordered, opened as hash(64)".into() };
    /// assert_eq!(e.to_string(), "table 'orders': stored as ordered, opened as hash(64)");
    /// ```
    SchemaMismatch { table: String, detail: String },
    /// A data directory describes a table that the schema does not create,
    /// and it cannot be created from its description alone: its secondary
    /// index `index` needs a key function, which only a schema
    /// ([`crate::Database::open_with`]) can give.
    ///
    /// ```
    /// use multiverse::Error;
    ///
    /// let e = Error::KeyFunctionNeeded { table: "t".into(), index: "by_x".into() };
    /// assert_eq!(e.to_string(), "table 't' has secondary index 'by_x': its key function must be given by the schema");
    /// ```
    KeyFunctionNeeded { table: String, index: String },
}

impl Error {
    /// The abort reason if this error is (or reports) an abort.
    ///
    /// ```
    /// use multiverse::{AbortReason, Error};
    ///
    /// assert_eq!(Error::Aborted(AbortReason::Phantom).abort_reason(), Some(AbortReason::Phantom));
    /// assert_eq!(Error::TransactionClosed(Some(AbortReason::Deadlock)).abort_reason(), Some(AbortReason::Deadlock));
    /// assert_eq!(Error::DuplicateKey.abort_reason(), None);
    /// ```
    pub fn abort_reason(&self) -> Option<AbortReason> {
        match self {
            Error::Aborted(r) => Some(*r),
            Error::TransactionClosed(r) => *r,
            Error::LogFailed(_) => Some(AbortReason::LogFailed),
            _ => None,
        }
    }
    /// True when retrying the whole transaction may succeed.
    ///
    /// ```
    /// use multiverse::{AbortReason, Error};
    ///
    /// assert!(Error::Aborted(AbortReason::ReadValidation).is_transient());
    /// assert!(Error::MemoryLimit { used: 10, limit: 8 }.is_transient());
    /// assert!(!Error::Aborted(AbortReason::User).is_transient());
    /// assert!(!Error::DuplicateKey.is_transient());
    /// ```
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Aborted(r) => r.is_transient(),
            Error::MemoryLimit { .. } => true,
            _ => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Aborted(r) => write!(f, "transaction aborted ({r})"),
            Error::TransactionClosed(Some(r)) => write!(f, "transaction already aborted ({r})"),
            Error::TransactionClosed(None) => write!(f, "transaction already committed"),
            Error::UnknownTable(t) => write!(f, "unknown table '{t}'"),
            Error::ForeignHandle(s) => write!(f, "{s}"),
            Error::UnknownIndex(i) => write!(f, "unknown index '{i}'"),
            Error::TableExists(t) => write!(f, "table '{t}' already exists"),
            Error::DuplicateKey => write!(f, "duplicate key"),
            Error::KeyNotFound => write!(f, "key not found"),
            Error::ValueTooLarge { len, max } => {
                write!(f, "value of {len} bytes is larger than the limit of {max} bytes")
            }
            Error::KeyTooLarge { len, max } => {
                write!(f, "key of {len} bytes is larger than the limit of {max} bytes")
            }
            Error::InvalidIsolation { protocol, isolation } => {
                write!(f, "protocol '{protocol}' does not offer isolation level '{isolation}'")
            }
            #[allow(deprecated)]
            Error::UnsupportedProtocol(p) => write!(f, "protocol '{p}' is not available"),
            Error::TooManyTransactions(n) => {
                write!(f, "too many open transactions (the limit is {n})")
            }
            Error::Parse(s) => write!(f, "{s}"),
            Error::InvalidArgument(s) => write!(f, "invalid argument: {s}"),
            Error::NotDeclared(s) => write!(f, "not declared: {s}"),
            Error::ShuttingDown => write!(f, "the BOHM server is shutting down; the transaction was not run"),
            Error::Io(m) => write!(f, "{m}"),
            Error::LogFailed(m) => write!(
                f,
                "the log cannot be written ({m}): the database has stopped accepting transactions; reopen it to recover what is durable"
            ),
            Error::NotEmpty(m) => write!(f, "{m}"),
            Error::Corrupt(m) => write!(f, "{m}"),
            Error::Locked(m) => write!(f, "{m}"),
            Error::Unsupported(m) => write!(f, "not supported: {m}"),
            Error::Decode { ty, reason } => write!(f, "cannot decode a stored {ty}: {reason}"),
            Error::MemoryLimit { used, limit } => write!(
                f,
                "memory limit reached: {used} bytes of data held, the limit is {limit} bytes (retry once garbage collection has freed old versions)"
            ),
            Error::SchemaMismatch { table, detail } => write!(f, "table '{table}': {detail}"),
            Error::KeyFunctionNeeded { table, index } => {
                write!(f, "table '{table}' has secondary index '{index}': its key function must be given by the schema")
            }
        }
    }
}

impl std::error::Error for Error {}
