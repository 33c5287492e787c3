//! Savepoints: [`Transaction::savepoint`] and [`Transaction::rollback_to`].
//!
//! A savepoint marks how far the transaction's writes went; rolling back to
//! it undoes every write made since, in reverse, the way each family's
//! abort undoes all of them, and keeps everything else. This file is the
//! public face; each family marks and rolls back in its own module:
//!
//! * **multi-version (Hekaton, section 3.3's abort per version):** each new
//!   version since the mark gets Begin = INFINITY and each replaced
//!   version's End word loses our write lock (`mv::savepoint` has the MV/L
//!   and POMVCC details). A write claim of `get_for_update`
//!   (`mv::occ::intent`) is kept, like the read it is.
//! * **Silo and 1V/ordered 2PL (single version):** the WriteSet is buffered
//!   (Silo section 4.4); entries since the mark are dropped, entries they
//!   replaced are put back, and placeholder records of inserts since the
//!   mark are withdrawn, as an abort withdraws them (`single::sv_rollback`).
//! * **BOHM's interactive transactions:** the undo log is replayed down to
//!   the mark (`bohm::interactive`). BOHM's declared procedures (`protocol::bohm::exec`) cannot
//!   undo part of themselves: their writes are placeholders the
//!   concurrency-control phase laid out before they ran.
//!
//! What the transaction read, locked, scanned or depended on since the
//! savepoint is kept: the ReadSet, the ScanSet and the node set still
//! validate it, read, range and key locks stay held to the end (two-phase
//! locking forbids releasing before the end only in the sense that a
//! released lock cannot be taken again; keeping them is always allowed),
//! and commit dependencies and SSN's stamps stay, which can only make the
//! commit stricter. Values read since the savepoint may have shaped what
//! the caller writes after rolling back, so those reads must stay checked.
//!
//! The recorded history (recording only) drops the rolled-back writes, and
//! the reads and scans since the savepoint that could have seen them (a
//! read of a key written since, a scan of a table written since): the
//! checker sees the transaction as if those writes never happened.

use super::core::Savepoint;
use super::family::Family;
use super::transaction::Transaction;
use crate::{Error, Result};

impl<'db> Transaction<'db> {
    /// Marks the transaction's current point, to undo the writes made after
    /// it with [`Transaction::rollback_to`] (see [`Savepoint`]). Every
    /// protocol offers savepoints through `Transaction`; a POMVCC
    /// transaction in [`crate::Mode::Optimistic`] refuses them with
    /// [`Error::Unsupported`] (its writes stay private until commit).
    ///
    /// ```
    /// use multiverse::{Database, Error, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// db.run(Isolation::Serializable, |tx| {
    ///     for k in 0..10u64 {
    ///         // Try each row on its own; a duplicate undoes just that row.
    ///         let sp = tx.savepoint()?;
    ///         match tx.insert(t, Key::from(k % 7), b"v") {
    ///             Err(Error::DuplicateKey) => tx.rollback_to(&sp)?,
    ///             r => r?,
    ///         }
    ///     }
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn savepoint(&mut self) -> Result<Savepoint> {
        let mark = match &mut self.family {
            Family::Mv(t) => t.savepoint_mark()?,
            Family::Silo(t) => t.savepoint_mark()?,
            Family::Lock(t) => t.savepoint_mark()?,
            Family::Bohm(t) => t.savepoint_mark()?,
        };
        let seq = self.savepoints;
        self.savepoints += 1;
        Ok(Savepoint { txn: self.id(), seq, mark })
    }

    /// Undoes every write made since `savepoint` (module docs of
    /// [`crate::protocol::savepoint`]: reads, locks and dependencies since
    /// it are kept). The savepoint stays usable; savepoints taken after it
    /// are released. Fails with [`Error::InvalidArgument`] for a savepoint
    /// of another transaction or one released by an earlier rollback, and
    /// with [`Error::Aborted`] if a lock the rollback must take again is
    /// refused (MV/L).
    ///
    /// ```
    /// use multiverse::{Database, Error, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// let mut x = db.begin(Isolation::Snapshot).unwrap();
    /// let outer = x.savepoint().unwrap();
    /// x.insert(t, Key::from(1), b"a").unwrap();
    /// let inner = x.savepoint().unwrap();
    /// x.insert(t, Key::from(2), b"b").unwrap();
    /// x.rollback_to(&outer).unwrap(); // undoes both inserts and releases `inner`
    /// assert!(matches!(x.rollback_to(&inner), Err(Error::InvalidArgument(_))));
    /// assert_eq!(x.range(db.primary(t), ..).unwrap().count(), 0);
    /// x.insert(t, Key::from(3), b"c").unwrap();
    /// x.rollback_to(&outer).unwrap(); // `outer` stays usable
    /// x.commit().unwrap();
    /// ```
    pub fn rollback_to(&mut self, savepoint: &Savepoint) -> Result<()> {
        if savepoint.txn != self.id() || savepoint.seq >= self.savepoints {
            return Err(Error::InvalidArgument(
                "rollback to a savepoint of another transaction, or one released by an earlier rollback".into(),
            ));
        }
        let mark = savepoint.mark;
        match &mut self.family {
            Family::Mv(t) => t.rollback_to(mark)?,
            Family::Silo(t) => t.rollback_to(mark)?,
            Family::Lock(t) => t.rollback_to(mark)?,
            Family::Bohm(t) => t.rollback_to(mark)?,
        }
        self.savepoints = savepoint.seq + 1;
        Ok(())
    }
}
