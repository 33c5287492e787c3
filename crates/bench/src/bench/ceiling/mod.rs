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
//! updates) runs this way; the others insert, delete or scan. The
//! bare-hardware ceiling (`--protocol bare`, [`bare`]) runs the
//! same way on a plain open-addressing table instead.

pub(crate) mod bare;

use multiverse::research::ceiling::{NoCcTable, Session};
use multiverse::{Database, Error, Filter, IndexId, Isolation, Key, Result, TableId, TxnOptions};
use multiverse_workloads::Txn;
use std::ops::RangeBounds;

/// The protocol name that runs the ceiling (`--protocol none`, a `none`
/// line of `compare`), and its level's name in the record.
pub const NAME: &str = "none";

/// Which ceiling runs in place of a protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `--protocol none`: the engine's storage with no concurrency control.
    NoCc,
    /// `--protocol bare`: a plain open-addressing table (see [`bare`]).
    Bare,
}

impl Kind {
    /// The ceiling a `--protocol` value names, if any.
    pub fn parse(protocol: &str) -> Option<Kind> {
        match protocol {
            NAME => Some(Kind::NoCc),
            bare::NAME => Some(Kind::Bare),
            _ => None,
        }
    }

    /// Its `--protocol` name (also its level's name in the record).
    pub fn name(self) -> &'static str {
        match self {
            Kind::NoCc => NAME,
            Kind::Bare => bare::NAME,
        }
    }

    /// What it is, for messages.
    pub fn what(self) -> &'static str {
        match self {
            Kind::NoCc => "the no-CC ceiling",
            Kind::Bare => "the bare-hardware ceiling",
        }
    }
}

/// What the workers of a ceiling's run work on: the copy of the
/// workload's one table, and that table's id.
#[derive(Clone, Copy)]
pub enum Target<'a> {
    NoCc(&'a NoCcTable, TableId),
    Bare(&'a bare::BareTable, TableId),
}

/// The copy of the workload's table a ceiling runs on.
pub enum Copy {
    NoCc(NoCcTable),
    Bare(bare::BareTable),
}

impl Copy {
    /// Copies `table` (`rows` rows, just loaded) for ceiling `kind`.
    pub fn make(kind: Kind, db: &Database, table: TableId, rows: u64) -> std::result::Result<Copy, String> {
        Ok(match kind {
            Kind::NoCc => Copy::NoCc(copy_table(db, table, rows)?),
            Kind::Bare => Copy::Bare(bare::copy_table(db, table, rows)?),
        })
    }

    /// What the workers run on.
    pub fn target(&self, table: TableId) -> Target<'_> {
        match self {
            Copy::NoCc(t) => Target::NoCc(t, table),
            Copy::Bare(t) => Target::Bare(t, table),
        }
    }

    /// The workload's check of the copy after the run.
    pub fn check(&self, check: &Check, rows: u64) -> std::result::Result<String, String> {
        match self {
            Copy::NoCc(t) => (check.nocc)(t, rows),
            Copy::Bare(t) => (check.bare)(t, rows),
        }
    }
}

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

/// What a ceiling's table does: find a row, overwrite it, hint a prefetch.
/// [`CeilingTxn`] runs the workloads' transaction bodies on any of them.
pub trait Rows {
    /// Which ceiling this is (for refusals).
    const KIND: Kind;
    /// Calls `f` with the row of `key`, if any.
    fn get_with<R>(&self, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>>;
    /// Copies `value` over the row of `key`.
    fn update(&self, key: &Key, value: &[u8]) -> Result<()>;
    /// Prefetch hints for the rows of `keys`.
    fn prefetch(&self, keys: &[Key]);
}

impl Rows for Session<'_> {
    const KIND: Kind = Kind::NoCc;
    #[inline]
    fn get_with<R>(&self, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        Ok(Session::get_with(self, key, f))
    }
    #[inline]
    fn update(&self, key: &Key, value: &[u8]) -> Result<()> {
        Session::update(self, key, value)
    }
    #[inline]
    fn prefetch(&self, keys: &[Key]) {
        Session::prefetch(self, keys)
    }
}

/// What a refused operation says.
fn refused(kind: Kind, op: &str) -> Error {
    Error::InvalidArgument(format!(
        "--protocol {} ({}) reads and updates rows; it cannot {op}",
        kind.name(),
        kind.what()
    ))
}

/// One pass of a transaction body over a ceiling's table (see the module
/// docs); for the no-CC table the session is pinned for the pass, as a
/// transaction is.
pub struct CeilingTxn<R> {
    rows: R,
    /// The one table of the workload.
    table: TableId,
}

impl<'t> CeilingTxn<Session<'t>> {
    /// A pass over `nocc`, the copy of `table`.
    #[inline]
    pub fn new(nocc: &'t NoCcTable, table: TableId) -> CeilingTxn<Session<'t>> {
        CeilingTxn { rows: nocc.session(), table }
    }
}

impl<R: Rows> CeilingTxn<R> {
    /// A pass over `rows`, the copy of `table`.
    #[inline]
    pub fn over(rows: R, table: TableId) -> CeilingTxn<R> {
        CeilingTxn { rows, table }
    }

    /// Refuses another table than the one copied.
    #[inline]
    fn check(&self, table: TableId) -> Result<()> {
        if table == self.table {
            Ok(())
        } else {
            Err(refused(R::KIND, "reach a second table"))
        }
    }
}

impl<T: Rows> Txn for CeilingTxn<T> {
    #[inline]
    fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.check(table)?;
        self.rows.get_with(key, f)
    }

    #[inline]
    fn update(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<()> {
        self.check(table)?;
        self.rows.update(key, value)
    }

    fn insert(&mut self, _: TableId, _: Key, _: &[u8]) -> Result<()> {
        Err(refused(T::KIND, "insert"))
    }

    fn update_with(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()> {
        self.check(table)?;
        let mut new = Vec::new();
        self.rows.get_with(key, |old| f(old, &mut new))?.ok_or(Error::KeyNotFound)?;
        self.rows.update(key, &new)
    }

    fn delete(&mut self, _: TableId, _: &Key) -> Result<()> {
        Err(refused(T::KIND, "delete"))
    }

    fn get_by(&mut self, _: IndexId, _: &Key, _: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        Err(refused(T::KIND, "look rows up by a secondary index"))
    }

    fn scan(
        &mut self,
        _: IndexId,
        _: impl RangeBounds<Key>,
        _: Option<&Filter>,
        _: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        Err(refused(T::KIND, "scan"))
    }

    #[inline]
    fn prefetch(&self, table: TableId, keys: &[Key]) {
        if table == self.table {
            self.rows.prefetch(keys);
        }
    }
}

/// A workload's checks of its ceiling copies after the run (the table, its
/// rows).
pub struct Check {
    pub nocc: fn(&NoCcTable, u64) -> std::result::Result<String, String>,
    pub bare: fn(&bare::BareTable, u64) -> std::result::Result<String, String>,
}

/// The hekaton workload's checks.
pub const HEKATON_CHECK: Check = Check { nocc: check_hekaton, bare: bare::check_hekaton };

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
