//! Counting the rows a load writes: [`Counting`] forwards a loader's
//! operations to a transaction and counts its inserts, and over [`Null`] (a
//! transaction with no rows that accepts every write) it counts the rows of
//! a load without a database, so the workload's size in rows is exact
//! before anything is loaded.

use crate::Txn;
use multiverse::{Filter, IndexId, Key, Result, TableId};
use std::ops::RangeBounds;

/// A transaction with no rows that accepts and forgets every write.
pub(crate) struct Null;

impl Txn for Null {
    fn get_with<R>(&mut self, _: TableId, _: &Key, _: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        Ok(None)
    }
    fn update(&mut self, _: TableId, _: &Key, _: &[u8]) -> Result<()> {
        Ok(())
    }
    fn insert(&mut self, _: TableId, _: Key, _: &[u8]) -> Result<()> {
        Ok(())
    }
    fn update_with(&mut self, _: TableId, _: &Key, _: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()> {
        Ok(())
    }
    fn delete(&mut self, _: TableId, _: &Key) -> Result<()> {
        Ok(())
    }
    fn get_by(&mut self, _: IndexId, _: &Key, _: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        Ok(())
    }
    fn scan(
        &mut self,
        _: IndexId,
        _: impl RangeBounds<Key>,
        _: Option<&Filter>,
        _: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        Ok(())
    }
}

/// A loader's transaction that counts its inserts.
pub(crate) struct Counting<'t, T> {
    pub(crate) t: &'t mut T,
    pub(crate) rows: u64,
}

impl<T: Txn> Txn for Counting<'_, T> {
    fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.t.get_with(table, key, f)
    }
    fn update(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<()> {
        self.t.update(table, key, value)
    }
    fn insert(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        self.rows += 1;
        self.t.insert(table, key, value)
    }
    fn update_with(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()> {
        self.t.update_with(table, key, f)
    }
    fn delete(&mut self, table: TableId, key: &Key) -> Result<()> {
        self.t.delete(table, key)
    }
    fn get_by(&mut self, index: IndexId, key: &Key, f: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        self.t.get_by(index, key, f)
    }
    fn scan(
        &mut self,
        index: IndexId,
        range: impl RangeBounds<Key>,
        filter: Option<&Filter>,
        f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        self.t.scan(index, range, filter, f)
    }
}
