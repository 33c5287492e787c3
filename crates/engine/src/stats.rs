//! [`Stats`]: a database's counters since it was opened.

use crate::AbortReason;

/// Counters of a database since it was opened.
///
/// ```
/// use multiverse::{AbortReason, Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"v")).unwrap();
/// let s = db.stats();
/// assert_eq!((s.committed, s.aborted()), (1, 0));
/// assert_eq!(s.log_bytes, 0); // in memory: no log
/// ```
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
    /// Bytes of user data held, as counted against
    /// [`crate::Options::memory_limit`] (see [`crate::Error::MemoryLimit`]
    /// for what is counted); 0 without a limit, when nothing is counted.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options { memory_limit: Some(1 << 20), ..Options::default() }).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// db.run(Isolation::Serializable, |tx| tx.insert(t, Key::from(1), &[0u8; 100])).unwrap();
    /// let s = db.stats();
    /// assert!(s.memory_used >= 100 && s.memory_limit == Some(1 << 20));
    /// ```
    pub memory_used: u64,
    /// [`crate::Options::memory_limit`].
    pub memory_limit: Option<u64>,
}

impl Stats {
    /// Total aborts.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Options};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// db.begin(Isolation::Snapshot).unwrap().abort();
    /// drop(db.begin(Isolation::Snapshot).unwrap()); // dropped while open: aborted too
    /// assert_eq!(db.stats().aborted(), 2);
    /// ```
    pub fn aborted(&self) -> u64 {
        self.aborts.iter().sum()
    }
    /// (reason, count) pairs.
    ///
    /// ```
    /// use multiverse::{AbortReason, Database, Isolation, Options};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// db.begin(Isolation::Snapshot).unwrap().abort();
    /// let user = db.stats().aborts_by_reason().find(|(r, _)| *r == AbortReason::User).map(|(_, n)| n);
    /// assert_eq!(user, Some(1));
    /// ```
    pub fn aborts_by_reason(&self) -> impl Iterator<Item = (AbortReason, u64)> + '_ {
        AbortReason::ALL.into_iter().zip(self.aborts.iter().copied())
    }
}
