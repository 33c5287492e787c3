//! `bench --protocol none`: the no-concurrency-control ceiling.
//!
//! The workload is set up and loaded into the database as for any protocol
//! (MV/O loads it), then copied row by row into a
//! [`multiverse::research::ceiling::NoCcTable`]: the same hash index and records,
//! with nothing on top. The workers run the workload's own transaction code
//! against it through [`CeilingTxn`], an implementation of the workloads'
//! [`Txn`] whose reads are one index lookup handing the row to the caller
//! and whose updates are one lookup and a copy of the new bytes over the
//! row. No transaction begins, validates, commits or aborts: each pass of
//! the body counts as a commit. What a protocol does on the same workload
//! in the same build, divided by this, is the share of the hardware's
//! ceiling it keeps.
//!
//! Only the hekaton workload (one hash table, reads and same-length
//! updates) runs this way; the others insert, delete or scan.

use multiverse::research::ceiling::{NoCcTable, Session};
use multiverse::{Database, Error, Filter, IndexId, Isolation, Key, Result, TableId, TxnOptions};
use multiverse_workloads::Txn;
use std::ops::RangeBounds;

/// The protocol name that runs the ceiling (`--protocol none`, a `none`
/// line of `compare`), and its level's name in the record.
pub const NAME: &str = "none";

/// Copies every row of `table` (a hash table of `rows` rows, just loaded)
/// into a new no-CC table.
pub fn copy_table(db: &Database, table: TableId, rows: u64) -> std::result::Result<NoCcTable, String> {
    let cap = usize::try_from(rows).map_err(|_| format!("{rows} rows do not fit this machine"))?;
    let nocc = NoCcTable::new(cap.max(1));
    let opts = TxnOptions { read_only: true, ..TxnOptions::new(Isolation::ReadCommitted) };
    let mut t = db.begin_with(opts).map_err(|e| e.to_string())?;
    let mut failed = None;
    t.scan(db.primary(table), .., None, |k, v| match nocc.insert(k, v) {
        Ok(()) => true,
        Err(e) => {
            failed = Some(format!("copying row {k:?} into the no-CC table: {e}"));
            false
        }
    })
    .map_err(|e| e.to_string())?;
    t.commit().map_err(|e| e.to_string())?;
    if let Some(e) = failed {
        return Err(e);
    }
    if nocc.len() != rows {
        return Err(format!("the no-CC table got {} rows of the {rows} loaded", nocc.len()));
    }
    Ok(nocc)
}

/// What a refused operation says.
fn refused(op: &str) -> Error {
    Error::InvalidArgument(format!("--protocol none (the no-CC ceiling) reads and updates rows; it cannot {op}"))
}

/// One pass of a transaction body over the no-CC table (see the module
/// docs): the session is pinned for the pass, as a transaction is.
pub struct CeilingTxn<'t> {
    s: Session<'t>,
    /// The one table of the workload.
    table: TableId,
}

impl<'t> CeilingTxn<'t> {
    /// A pass over `nocc`, the copy of `table`.
    #[inline]
    pub fn new(nocc: &'t NoCcTable, table: TableId) -> CeilingTxn<'t> {
        CeilingTxn { s: nocc.session(), table }
    }

    /// Refuses another table than the one copied.
    #[inline]
    fn check(&self, table: TableId) -> Result<()> {
        if table == self.table {
            Ok(())
        } else {
            Err(refused("reach a second table"))
        }
    }
}

impl Txn for CeilingTxn<'_> {
    #[inline]
    fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.check(table)?;
        Ok(self.s.get_with(key, f))
    }

    #[inline]
    fn update(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<()> {
        self.check(table)?;
        self.s.update(key, value)
    }

    fn insert(&mut self, _: TableId, _: Key, _: &[u8]) -> Result<()> {
        Err(refused("insert"))
    }

    fn update_with(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()> {
        self.check(table)?;
        let mut new = Vec::new();
        self.s.get_with(key, |old| f(old, &mut new)).ok_or(Error::KeyNotFound)?;
        self.s.update(key, &new)
    }

    fn delete(&mut self, _: TableId, _: &Key) -> Result<()> {
        Err(refused("delete"))
    }

    fn get_by(&mut self, _: IndexId, _: &Key, _: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        Err(refused("look rows up by a secondary index"))
    }

    fn scan(
        &mut self,
        _: IndexId,
        _: impl RangeBounds<Key>,
        _: Option<&Filter>,
        _: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        Err(refused("scan"))
    }

    #[inline]
    fn prefetch(&self, table: TableId, keys: &[Key]) {
        if table == self.table {
            self.s.prefetch(keys);
        }
    }
}

/// A workload's check of its no-CC copy after the run (the table, its rows).
pub type Check = fn(&NoCcTable, u64) -> std::result::Result<String, String>;

/// The ceiling's consistency check for the hekaton table: every row
/// `0..rows` is there and names its own key (the only field every writer
/// writes the same; with no concurrency control, the writer's fields of one
/// row may come from two writers).
pub fn check_hekaton(nocc: &NoCcTable, rows: u64) -> std::result::Result<String, String> {
    let s = nocc.session();
    for k in 0..rows {
        let got = s.get_with(&Key::from_u64(k), multiverse_workloads::hekaton::decode_payload);
        match got {
            None => return Err(format!("no-CC table: row {k} is missing")),
            Some(Some((key, _, _))) if key == k => {}
            Some(p) => return Err(format!("no-CC table: row {k} holds {p:?}, not a payload of its own")),
        }
    }
    Ok(format!(
        "no-CC table: {rows} rows present, each naming its own key (nothing more holds without concurrency control)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use multiverse::{Options, TableSpec};

    #[test]
    fn the_copy_holds_every_row_and_refuses_what_it_cannot_do() {
        let db = Database::new(Options::default()).unwrap();
        let t = db.create_table(TableSpec::hash("t", 64)).unwrap().table();
        db.run(Isolation::Serializable, |x| {
            for k in 0..50u64 {
                x.insert(t, Key::from(k), multiverse_workloads::hekaton::payload(k, 0, 0))?;
            }
            Ok(())
        })
        .unwrap();
        let nocc = copy_table(&db, t, 50).unwrap();
        assert!(check_hekaton(&nocc, 50).unwrap().contains("50 rows"));
        let mut x = CeilingTxn::new(&nocc, t);
        x.update(t, &Key::from(3), &multiverse_workloads::hekaton::payload(3, 1, 9)).unwrap();
        let got = x.get_with(t, &Key::from(3), multiverse_workloads::hekaton::decode_payload).unwrap();
        assert_eq!(got, Some(Some((3, 1, 9))));
        x.update(t, &Key::from(4), &multiverse_workloads::hekaton::payload(5, 1, 1)).unwrap();
        assert!(check_hekaton(&nocc, 50).unwrap_err().contains("row 4"));
        let e = x.insert(t, Key::from(99), b"x").unwrap_err().to_string();
        assert!(e.contains("--protocol none") && e.contains("insert"), "{e}");
        let other = db.create_table(TableSpec::hash("u", 8)).unwrap().table();
        assert!(x.get_with(other, &Key::from(1), |_| ()).is_err());
        assert!(copy_table(&db, t, 51).unwrap_err().contains("50 rows of the 51"));
    }
}
