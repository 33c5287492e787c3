//! One epoch pin for a whole transaction ([`Database::pin`]).

use crate::Database;

/// An epoch pin held for one transaction (see [`Database::pin`]).
///
/// While it lives, no memory that any database of the process retires
/// after it was taken is freed (crossbeam-epoch's collector is
/// process-wide). Dropping it ends that. **A `Pinned` that is never
/// dropped** — given to [`std::mem::forget`], leaked in a cycle of `Rc`s,
/// or held by a thread that blocks forever — **stops reclamation for the
/// rest of the process**, in every database and in anything else that uses
/// crossbeam-epoch's default collector: the thread stays pinned even after
/// it exits. The engine cannot unpin it. Versions the garbage collector
/// unlinks afterwards stay allocated; a database with
/// [`Options::memory_limit`](crate::Options::memory_limit) counts them and
/// refuses writes with [`Error::MemoryLimit`](crate::Error::MemoryLimit)
/// once its limit is reached, one without a limit grows without bound.
///
/// ```
/// let db = multiverse::Database::new(multiverse::Options::default()).unwrap();
/// let pin: multiverse::research::Pinned = db.pin();
/// drop(pin);
/// ```
#[must_use = "the pin lasts while the value lives"]
pub struct Pinned {
    _guard: crossbeam_epoch::Guard,
}

impl std::fmt::Debug for Pinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pinned")
    }
}

impl Database {
    /// Pins this thread's epoch while the value lives, for a transaction
    /// run start to end on this thread by code that does not wait.
    ///
    /// Every operation of a transaction pins the thread's epoch (crossbeam-
    /// epoch) while it holds pointers into the indexes, and the first pin
    /// of a thread costs a fence and, now and then, an attempt to advance
    /// the global epoch; a pin nested inside another costs a counter
    /// increment. Held around one transaction, this makes its operations'
    /// pins the nested kind: one outer pin per transaction instead of one
    /// per read and write.
    ///
    /// The cost of holding it: crossbeam's collector is shared by the whole
    /// process, so while the pin lives no memory retired after it was
    /// taken is freed, **in this database and in every other one of the
    /// process** (a transaction that waits for a lock keeps it meanwhile).
    /// Hold it for one transaction whose code runs straight through, and
    /// never over code that sleeps, waits for I/O or for another thread:
    /// for that reason [`Database::run`] does not take it around your
    /// closure (its operations pin one by one). Unfreed memory still counts
    /// against [`Options::memory_limit`](crate::Options::memory_limit):
    /// a pin held too long makes writers get
    /// [`Error::MemoryLimit`](crate::Error::MemoryLimit), not a process
    /// that grows unseen. A pin that is never dropped
    /// ([`std::mem::forget`]) stops reclamation for the rest of the process
    /// (see [`Pinned`]).
    ///
    /// The value cannot leave the thread (it is neither `Send` nor `Sync`);
    /// the transaction may, but then its operations pin on their own again.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// let pin = db.pin();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// x.insert(t, Key::from(1), b"v").unwrap();
    /// assert_eq!(x.get(t, &Key::from(1)).unwrap(), Some(b"v".to_vec()));
    /// x.commit().unwrap();
    /// drop(pin); // before the thread waits or moves on to other work
    /// ```
    #[inline]
    pub fn pin(&self) -> Pinned {
        Pinned { _guard: crossbeam_epoch::pin() }
    }
}
