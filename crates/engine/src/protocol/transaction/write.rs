//! The public [`Transaction`]'s writes: insert, update (by value, by
//! closure, by a read-modify-write), delete and put, each one `match` over
//! the families.

use super::Transaction;
use crate::history::WriteKind;
use crate::key::IntoKey;
use crate::protocol::family::Family;
use crate::{Error, Result, TableId};

impl<'db> Transaction<'db> {
    /// Inserts a new row; fails with [`Error::DuplicateKey`] if `key` has a
    /// visible row (the transaction stays usable).
    ///
    /// ```
    /// use multiverse::{Database, Error, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// x.insert(t, Key::from(1), b"a").unwrap();
    /// assert_eq!(x.insert(t, Key::from(1), b"b"), Err(Error::DuplicateKey));
    /// x.commit().unwrap(); // the failed insert did not end the transaction
    /// ```
    #[inline]
    pub fn insert<'k>(
        &mut self,
        table: impl Into<TableId>,
        key: impl IntoKey<'k>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        let table = table.into();
        let (key, value) = (key.into_key()?.into_owned(), value.as_ref());
        self.core().admit(value.len())?;
        match &mut self.family {
            Family::Mv(t) => t.insert(table, key, value),
            Family::Silo(t) => t.insert(table, key, value),
            Family::Lock(t) => t.insert(table, key, value),
            Family::Bohm(t) => t.write(table, &key, WriteKind::Insert, |_, new| new.extend_from_slice(value)),
        }
    }

    /// Replaces the value of an existing row; fails with
    /// [`Error::KeyNotFound`] if `key` has no visible row.
    ///
    /// ```
    /// use multiverse::{Database, Error, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// assert_eq!(x.update(t, &Key::from(1), b"a"), Err(Error::KeyNotFound));
    /// x.insert(t, Key::from(1), b"a").unwrap();
    /// x.update(t, &Key::from(1), b"longer value").unwrap();
    /// assert_eq!(x.get(t, &Key::from(1)).unwrap().as_deref(), Some(&b"longer value"[..]));
    /// x.commit().unwrap();
    /// ```
    #[inline]
    pub fn update<'k>(
        &mut self,
        table: impl Into<TableId>,
        key: impl IntoKey<'k>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        let table = table.into();
        let value = value.as_ref();
        key.with_key(|key| {
            self.core().admit_update(value.len())?;
            let fill = |_: &[u8], new: &mut Vec<u8>| {
                new.extend_from_slice(value);
                true
            };
            // The single-version families check the length here: their `write`
            // also serves `update_with` and `modify`, which check the result.
            let too_large = |max: usize| Err(Error::ValueTooLarge { len: value.len(), max });
            match &mut self.family {
                Family::Mv(t) => t.update(table, key, value),
                Family::Silo(t) if value.len() > t.core.db.opts.max_value_size => {
                    too_large(t.core.db.opts.max_value_size)
                }
                Family::Lock(t) if value.len() > t.core.db.opts.max_value_size => {
                    too_large(t.core.db.opts.max_value_size)
                }
                Family::Silo(t) => t.write(table, key, fill),
                Family::Lock(t) => t.write(table, key, fill),
                Family::Bohm(t) => t.write(table, key, WriteKind::Update, |_, new| new.extend_from_slice(value)),
            }
        })?
    }

    /// Read-modify-write: `f(old, new)` fills `new` (empty on entry) from the
    /// old value, and the new value replaces exactly the version `f` saw. Uses
    /// a buffer owned by the transaction: no allocation in the steady state.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"ab")).unwrap();
    /// db.run(Isolation::Serializable, |x| {
    ///     // Append to the value.
    ///     x.update_with(t, &Key::from(1), |old, new| {
    ///         new.extend_from_slice(old);
    ///         new.extend_from_slice(b"cd");
    ///     })
    /// })
    /// .unwrap();
    /// assert_eq!(db.run(Isolation::Snapshot, |x| x.get(t, &Key::from(1))).unwrap(), Some(b"abcd".to_vec()));
    /// ```
    #[inline]
    pub fn update_with<'k>(
        &mut self,
        table: impl Into<TableId>,
        key: impl IntoKey<'k>,
        f: impl FnOnce(&[u8], &mut Vec<u8>),
    ) -> Result<()> {
        let table = table.into();
        key.with_key(|key| {
            self.core().admit_update(0)?;
            match &mut self.family {
                Family::Mv(t) => t.update_with(table, key, f),
                Family::Silo(t) => t.write(table, key, |old, new| {
                    f(old, new);
                    true
                }),
                Family::Lock(t) => t.write(table, key, |old, new| {
                    f(old, new);
                    true
                }),
                Family::Bohm(t) => t.write(table, key, WriteKind::Update, |old, new| f(old.unwrap_or(&[]), new)),
            }
        })?
    }

    /// Read-modify-write of an existing row that keeps its length: `f`
    /// edits a copy of the current value in place. The copy is made straight
    /// into the new version (one copy of the row; [`Transaction::update_with`]
    /// makes two), which is what fixed-layout rows want.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// // A fixed layout: two little-endian u32 counters.
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0u8; 8])).unwrap();
    /// db.run(Isolation::Serializable, |x| {
    ///     x.modify(t, &Key::from(1), |row| {
    ///         let n = u32::from_le_bytes(row[4..8].try_into().unwrap());
    ///         row[4..8].copy_from_slice(&(n + 1).to_le_bytes());
    ///     })
    /// })
    /// .unwrap();
    /// let row = db.run(Isolation::Snapshot, |x| x.get(t, &Key::from(1))).unwrap().unwrap();
    /// assert_eq!(row, [0, 0, 0, 0, 1, 0, 0, 0]);
    /// ```
    #[inline]
    pub fn modify<'k>(
        &mut self,
        table: impl Into<TableId>,
        key: impl IntoKey<'k>,
        f: impl FnOnce(&mut [u8]),
    ) -> Result<()> {
        let table = table.into();
        key.with_key(|key| {
            self.core().admit_update(0)?;
            match &mut self.family {
                Family::Mv(t) => t.modify(table, key, f),
                Family::Silo(t) => t.write(table, key, |old, new| {
                    new.extend_from_slice(old);
                    f(new);
                    true
                }),
                Family::Lock(t) => t.write(table, key, |old, new| {
                    new.extend_from_slice(old);
                    f(new);
                    true
                }),
                Family::Bohm(t) => t.write(table, key, WriteKind::Update, |old, new| {
                    new.extend_from_slice(old.unwrap_or(&[]));
                    f(new)
                }),
            }
        })?
    }

    /// Deletes a row; fails with [`Error::KeyNotFound`] if `key` has no visible row.
    ///
    /// ```
    /// use multiverse::{Database, Error, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"v")).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// x.delete(t, &Key::from(1)).unwrap();
    /// assert_eq!(x.delete(t, &Key::from(1)), Err(Error::KeyNotFound));
    /// assert_eq!(x.get(t, &Key::from(1)).unwrap(), None);
    /// x.commit().unwrap();
    /// ```
    #[inline]
    pub fn delete<'k>(&mut self, table: impl Into<TableId>, key: impl IntoKey<'k>) -> Result<()> {
        let table = table.into();
        key.with_key(|key| match &mut self.family {
            Family::Mv(t) => t.delete(table, key),
            Family::Silo(t) => t.write(table, key, |_, _| false),
            Family::Lock(t) => t.write(table, key, |_, _| false),
            Family::Bohm(t) => t.write(table, key, WriteKind::Delete, |_, _| {}),
        })?
    }

    /// Inserts the row, or updates it if `key` has a visible row.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// x.put(t, Key::from(1), b"inserted").unwrap();
    /// x.put(t, Key::from(1), b"updated").unwrap();
    /// assert_eq!(x.get(t, &Key::from(1)).unwrap(), Some(b"updated".to_vec()));
    /// x.commit().unwrap();
    /// ```
    pub fn put<'k>(&mut self, table: impl Into<TableId>, key: impl IntoKey<'k>, value: impl AsRef<[u8]>) -> Result<()> {
        let table = table.into();
        let (key, value) = (key.into_key()?, value.as_ref());
        match self.update(table, &*key, value) {
            Err(Error::KeyNotFound) => self.insert(table, key.into_owned(), value),
            r => r,
        }
    }
}
