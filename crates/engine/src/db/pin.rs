//! One epoch pin for a whole transaction ([`Database::pin`], issue 30).

use crate::Database;

/// An epoch pin held for one transaction (see [`Database::pin`]).
///
/// ```
/// let db = multiverse::Database::new(multiverse::Options::default()).unwrap();
/// let pin: multiverse::Pinned = db.pin();
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
    /// run start to end on this thread.
    ///
    /// Every operation of a transaction pins the thread's epoch (crossbeam-
    /// epoch) while it holds pointers into the indexes, and the first pin
    /// of a thread costs a fence and, now and then, an attempt to advance
    /// the global epoch; a pin nested inside another costs a counter
    /// increment. Held around one transaction, this makes its operations'
    /// pins the nested kind: one outer pin per transaction instead of one
    /// per read and write. [`Database::run`] does this for each attempt.
    ///
    /// Hold it for one transaction, not longer: memory the collector
    /// frees after the pin was taken stays allocated until it drops (and
    /// a transaction that waits for a lock keeps it meanwhile). The value
    /// cannot leave the thread (it is neither `Send` nor `Sync`); the
    /// transaction may, but then its operations pin on their own again.
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
