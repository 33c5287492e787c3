//! Tables opened by their definition: [`Database::open_table`], and the
//! comparisons behind it, behind [`crate::TableDefinition::open`] and
//! behind the schema check of an open (`durability::schema`). What is
//! compared is a table's descriptor (`table::desc`), the same in memory
//! and in a data directory.

use crate::table::{TableDesc, Types};
use crate::{Database, Error, Result, TableId, TableKind, TableSpec};

impl Database {
    /// Opens the table `spec` names: the existing table of that name if
    /// its definition matches `spec` (the primary index's kind, a hash
    /// index's capacity included; the secondary indexes' names and kinds;
    /// a typed table's key and value types), [`Error::SchemaMismatch`]
    /// saying what differs if it does not, or else a new table, as
    /// [`Database::create_table`] makes it. Key functions are code, not
    /// data, and are not compared. With [`Database::open`], a program
    /// opens its tables this way on its first run and on every later one.
    ///
    /// ```
    /// use multiverse::{Database, Error, Isolation, Key, TableSpec};
    ///
    /// # let tmp = tempfile::tempdir().unwrap();
    /// for run in 0..2u64 {
    ///     let db = Database::open(tmp.path().join("db")).unwrap();
    ///     let t = db.open_table(TableSpec::ordered("runs")).unwrap();
    ///     db.run(Isolation::Serializable, |x| x.insert(t, Key::from(run), b"")).unwrap();
    ///     let mut x = db.begin(Isolation::Snapshot).unwrap();
    ///     assert_eq!(x.range(db.primary(t), ..).unwrap().count() as u64, run + 1);
    ///     drop(x);
    ///     // The same name with another definition is refused.
    ///     let e = db.open_table(TableSpec::hash("runs", 64)).unwrap_err();
    ///     assert_eq!(e.to_string(), "table 'runs': stored as ordered, opened as hash(64)");
    ///     db.close().unwrap();
    /// }
    /// ```
    pub fn open_table<S: TableKind>(&self, spec: S) -> Result<S::Handle> {
        self.open_spec(spec.into_spec()).map(S::handle)
    }

    /// [`Database::open_table`] of a plain declaration.
    pub(crate) fn open_spec(&self, spec: TableSpec) -> Result<TableId> {
        // Tables are never dropped: a name taken between the lookup and
        // the creation is found by the second lookup.
        loop {
            if let Ok(id) = self.table(&spec.name) {
                let t = self.table_ref(id)?;
                if let Some(detail) = t.desc().differs(&TableDesc::of(&spec), self.was()) {
                    return Err(Error::SchemaMismatch { table: spec.name, detail });
                }
                if let Some(types) = &spec.types {
                    self.record_types(id, types)?;
                }
                return Ok(id);
            }
            match self.create_spec(spec.clone()) {
                Err(Error::TableExists(_)) => continue,
                r => return r,
            }
        }
    }

    /// The schema check of an open (`durability::schema`): the table `id`
    /// as the schema created it against `stored`, the data directory's
    /// descriptor of it. A table the schema created without types takes
    /// the stored ones.
    pub(crate) fn check_stored(&self, id: TableId, stored: &TableDesc) -> Result<()> {
        let t = self.table_ref(id)?;
        if let Some(detail) = stored.differs(&t.desc(), "stored") {
            return Err(Error::SchemaMismatch { table: t.name.clone(), detail });
        }
        if let Some(types) = &stored.types {
            self.record_types(id, types)?;
        }
        Ok(())
    }

    /// Records the key and value types of the typed table `id` if it has
    /// none yet (a table created through the byte API takes the types of
    /// its first typed open), or checks them against its own
    /// ([`Error::SchemaMismatch`]). Types recorded on a durable database
    /// go into the headers of the log files from now on, and into the
    /// next checkpoint.
    pub(crate) fn record_types(&self, id: TableId, types: &Types) -> Result<()> {
        let t = self.table_ref(id)?;
        match t.record_types(types, self.was()) {
            Err(detail) => Err(Error::SchemaMismatch { table: t.name.clone(), detail }),
            Ok(true) => match &self.log {
                Some(log) => log.set_tables(&self.table_list()),
                None => Ok(()),
            },
            Ok(false) => Ok(()),
        }
    }

    /// How an existing table's definition is named in a mismatch: as its
    /// data directory stores it, or as it was created in memory.
    fn was(&self) -> &'static str {
        if self.durable.is_some() {
            "stored"
        } else {
            "created"
        }
    }
}
