//! [`Stats`]: a database's counters since it was opened, with its aborts
//! counted by reason ([`AbortCounts`]).

use crate::AbortReason;
use std::fmt;
use std::ops::{AddAssign, Index, IndexMut};

/// Counters of a database since it was opened.
///
/// ```
/// use multiverse::{AbortReason, Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"v")).unwrap();
/// db.begin(Isolation::Serializable).unwrap().abort();
/// let s = db.stats();
/// assert_eq!((s.committed, s.aborted()), (1, 1));
/// assert_eq!(s.aborts[AbortReason::User], 1);
/// assert_eq!(s.log_bytes, 0); // in memory: no log
/// // Its `Debug` names the abort reasons that counted any.
/// assert!(format!("{s:?}").contains("aborts: {user: 1}"));
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
    /// Aborted transactions, by reason: `aborts[AbortReason::Phantom]`,
    /// `aborts.total()`.
    pub aborts: AbortCounts,
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
        self.aborts.total()
    }
    /// (reason, count) pairs of every reason, in the order of
    /// [`AbortReason::ALL`] (as [`AbortCounts::iter`]).
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
        self.aborts.iter()
    }
}

/// Aborts counted by reason: [`Stats::aborts`].
///
/// Indexed by [`AbortReason`]; its `Debug` names the reasons that
/// counted any, in the order of [`AbortReason::ALL`] (`{}` when none did).
///
/// ```
/// use multiverse::{AbortCounts, AbortReason, Database, Isolation, Options};
///
/// let db = Database::new(Options::default()).unwrap();
/// db.begin(Isolation::Snapshot).unwrap().abort();
/// let aborts = db.stats().aborts;
/// assert_eq!(aborts[AbortReason::User], 1);
/// assert_eq!(aborts.get(AbortReason::Phantom), 0);
/// assert_eq!(aborts.total(), 1);
/// assert_eq!(format!("{aborts:?}"), "{user: 1}");
///
/// // Counts of several databases (or of a driver's own tally) add up.
/// let mut sum = AbortCounts::default();
/// sum[AbortReason::WriteConflict] += 2;
/// sum += aborts;
/// assert_eq!(format!("{sum:?}"), "{write-conflict: 2, user: 1}");
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AbortCounts([u64; AbortReason::COUNT]);

impl AbortCounts {
    /// The aborts for reason `r` (as `self[r]`).
    ///
    /// ```
    /// use multiverse::{AbortCounts, AbortReason};
    ///
    /// assert_eq!(AbortCounts::default().get(AbortReason::Deadlock), 0);
    /// ```
    pub fn get(&self, r: AbortReason) -> u64 {
        self.0[r as usize]
    }

    /// All aborts, whatever the reason.
    ///
    /// ```
    /// use multiverse::{AbortCounts, AbortReason};
    ///
    /// let mut c = AbortCounts::default();
    /// c[AbortReason::Phantom] += 1;
    /// c[AbortReason::Deadlock] += 2;
    /// assert_eq!(c.total(), 3);
    /// ```
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// (reason, count) pairs of every reason, zeros included, in the order
    /// of [`AbortReason::ALL`].
    ///
    /// ```
    /// use multiverse::{AbortCounts, AbortReason};
    ///
    /// let mut c = AbortCounts::default();
    /// c[AbortReason::ReadValidation] += 4;
    /// assert_eq!(c.iter().count(), AbortReason::COUNT);
    /// let nonzero: Vec<_> = c.iter().filter(|&(_, n)| n > 0).collect();
    /// assert_eq!(nonzero, [(AbortReason::ReadValidation, 4)]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (AbortReason, u64)> {
        AbortReason::ALL.into_iter().zip(self.0)
    }

    /// The counts in the order of [`AbortReason::ALL`], for summing
    /// per-slot counters into.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut u64> {
        self.0.iter_mut()
    }
}

impl Index<AbortReason> for AbortCounts {
    type Output = u64;
    fn index(&self, r: AbortReason) -> &u64 {
        &self.0[r as usize]
    }
}

impl IndexMut<AbortReason> for AbortCounts {
    fn index_mut(&mut self, r: AbortReason) -> &mut u64 {
        &mut self.0[r as usize]
    }
}

/// Adds another set of counts, reason by reason.
impl AddAssign for AbortCounts {
    fn add_assign(&mut self, o: AbortCounts) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }
}

/// The reasons that counted any, by name: `{write-conflict: 3, phantom: 1}`.
impl fmt::Debug for AbortCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        /// A reason's name, unquoted.
        struct Name(AbortReason);
        impl fmt::Debug for Name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0.name())
            }
        }
        f.debug_map().entries(self.iter().filter(|&(_, n)| n > 0).map(|(r, n)| (Name(r), n))).finish()
    }
}
