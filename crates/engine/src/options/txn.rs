//! What one transaction is opened with: [`TxnOptions`] (its isolation,
//! [`Mode`], read-only promise and declared [`AccessSet`]) and the
//! [`RetryPolicy`] of [`crate::Database::run`].

use super::Isolation;
use crate::{Key, TableId};
use std::time::Duration;

/// Keys a transaction declares it will read and write, for protocols that
/// must know them before execution (BOHM, ordered 2PL). MV/O ignores it.
///
/// ```
/// use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, TableSpec, TxnOptions};
///
/// let db = Database::new(Options { protocol: Protocol::TwoPlOrdered, ..Options::default() }).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"a")).unwrap();
/// // Ordered 2PL takes the declared locks at begin, in one global order.
/// let mut access = AccessSet::new();
/// access.read(t, Key::from(1)).write(t, Key::from(2));
/// let mut x = db.begin_with(TxnOptions { access: Some(&access), ..TxnOptions::new(Isolation::Serializable) }).unwrap();
/// assert!(x.get(t, &Key::from(1)).unwrap().is_some());
/// x.insert(t, Key::from(2), b"b").unwrap();
/// assert!(matches!(x.insert(t, Key::from(3), b"c"), Err(Error::NotDeclared(_))));
/// ```
#[derive(Clone, Debug, Default)]
pub struct AccessSet {
    /// Records to be read.
    pub reads: Vec<(TableId, Key)>,
    /// Records to be written (inserted, updated or deleted).
    pub writes: Vec<(TableId, Key)>,
}

impl AccessSet {
    /// An empty set.
    ///
    /// ```
    /// use multiverse::AccessSet;
    ///
    /// assert!(AccessSet::new().reads.is_empty());
    /// ```
    pub fn new() -> AccessSet {
        AccessSet::default()
    }

    /// Adds `key` of `table` to the reads.
    ///
    /// ```
    /// use multiverse::{AccessSet, Database, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// let mut a = AccessSet::new();
    /// a.read(t, Key::from(1));
    /// assert_eq!(a.reads, [(t.table(), Key::from(1))]);
    /// ```
    pub fn read(&mut self, table: impl Into<TableId>, key: Key) -> &mut AccessSet {
        self.reads.push((table.into(), key));
        self
    }

    /// Adds `key` of `table` to the writes.
    ///
    /// ```
    /// use multiverse::{AccessSet, Database, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// let mut a = AccessSet::new();
    /// a.write(t, Key::from(2));
    /// assert_eq!(a.writes, [(t, Key::from(2))]);
    /// ```
    pub fn write(&mut self, table: impl Into<TableId>, key: Key) -> &mut AccessSet {
        self.writes.push((table.into(), key));
        self
    }
}

/// How a Hekaton transaction keeps its reads valid (section 4.5: both kinds
/// run side by side under `mv-mixed`), or when a POMVCC transaction takes
/// its write locks (section V.D: both kinds run side by side too).
///
/// ```
/// use multiverse::{Database, Isolation, Mode, Options, Protocol, TxnOptions};
///
/// let db = Database::new(Options { protocol: Protocol::MvMixed, ..Options::default() }).unwrap();
/// let locking = TxnOptions { mode: Mode::Pessimistic, ..TxnOptions::new(Isolation::Serializable) };
/// assert!(db.begin_with(locking).unwrap().is_pessimistic());
/// // mv-occ runs optimistic transactions only.
/// let occ = Database::new(Options::default()).unwrap();
/// assert!(occ.begin_with(locking).is_err());
/// ```
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
///
/// ```
/// use multiverse::{Database, Isolation, Key, Options, Protocol, TableSpec, TxnOptions};
///
/// let db = Database::new(Options { protocol: Protocol::Pomvcc, ..Options::default() }).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// let mut w = db.begin(Isolation::Snapshot).unwrap();
/// w.insert(t, Key::from(1), b"v").unwrap();
/// let ts = w.commit().unwrap().commit_ts;
/// // A read-only transaction that must see that commit (POMVCC's
/// // request-based avoidance of the HISTORICAL READ).
/// let o = TxnOptions { after: Some(ts), read_only: true, ..TxnOptions::new(Isolation::Snapshot) };
/// let mut r = db.begin_with(o).unwrap();
/// assert!(r.get(t, &Key::from(1)).unwrap().is_some());
/// r.commit().unwrap();
/// ```
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
    /// (what [`Transaction::commit`](crate::Transaction::commit) returned). Ignored by the protocols
    /// whose commit timestamps are unique: they see every earlier commit.
    pub after: Option<u64>,
}

impl TxnOptions<'_> {
    /// Options for a read-write transaction at `isolation`.
    ///
    /// ```
    /// use multiverse::{Isolation, Mode, TxnOptions};
    ///
    /// let o = TxnOptions::new(Isolation::Snapshot);
    /// assert_eq!((o.isolation, o.mode), (Isolation::Snapshot, Mode::Default));
    /// assert!(!o.read_only && o.access.is_none() && o.after.is_none());
    /// ```
    pub fn new(isolation: Isolation) -> TxnOptions<'static> {
        TxnOptions { isolation, mode: Mode::Default, read_only: false, access: None, after: None }
    }
}

/// How [`Database::run`](crate::Database::run) retries transient aborts.
///
/// ```
/// use multiverse::{AbortReason, Database, Error, Isolation, Options, RetryPolicy, TxnOptions};
///
/// assert_eq!(RetryPolicy::default().max_attempts, 100);
/// let db = Database::new(Options::default()).unwrap();
/// let once = RetryPolicy { max_attempts: 1, ..RetryPolicy::default() };
/// let r: multiverse::Result<()> =
///     db.run_with(TxnOptions::new(Isolation::Serializable), once, |_| Err(Error::Aborted(AbortReason::Deadlock)));
/// assert_eq!(r, Err(Error::Aborted(AbortReason::Deadlock)));
/// ```
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
