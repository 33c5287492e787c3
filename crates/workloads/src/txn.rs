//! [`Txn`]: the record operations a transaction body may use, and their
//! implementations for the engine's transaction and for BOHM's execution
//! of a declared transaction.

use multiverse::{Filter, IndexId, Key, Result, TableId, Transaction};
use std::ops::RangeBounds;

/// The record operations a transaction body may use.
///
/// Workload bodies are generic over this trait, so the same code runs on any
/// protocol's transaction type, monomorphized (no `dyn` call per access).
pub trait Txn {
    /// Reads the row with primary key `key` and passes its value to `f`
    /// without copying it; `None` if the row does not exist.
    fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>>;
    /// Reads the row with primary key `key`, declaring that it will be
    /// written (see `Transaction::get_for_update_with`). By default a
    /// plain [`Txn::get_with`] (BOHM's procedures declare their writes
    /// before they run).
    #[inline]
    fn get_for_update_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.get_with(table, key, f)
    }
    /// Replaces the value of an existing row.
    fn update(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<()>;
    /// Inserts a new row.
    fn insert(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()>;
    /// Read-modify-write of an existing row: `f(old, new)` fills `new`
    /// (empty on entry) from the old value.
    fn update_with(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()>;
    /// Read-modify-write of an existing row that keeps its length: `f`
    /// edits a copy of the current value in place (fixed-layout rows). By
    /// default an [`Txn::update_with`] that copies the old value first.
    #[inline]
    fn modify(&mut self, table: TableId, key: &Key, f: impl FnOnce(&mut [u8])) -> Result<()> {
        self.update_with(table, key, |old, new| {
            new.extend_from_slice(old);
            f(new)
        })
    }
    /// Deletes an existing row.
    fn delete(&mut self, table: TableId, key: &Key) -> Result<()>;
    /// Calls `f(primary key, value)` for every visible row whose key in
    /// `index` equals `key`, until `f` returns false.
    fn get_by(&mut self, index: IndexId, key: &Key, f: impl FnMut(&Key, &[u8]) -> bool) -> Result<()>;
    /// Calls `f(primary key, value)` for every visible row whose key in
    /// `index` lies in `range` and passes `filter`, in key order for ordered
    /// indexes, until `f` returns false.
    fn scan(
        &mut self,
        index: IndexId,
        range: impl RangeBounds<Key>,
        filter: Option<&Filter>,
        f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()>;
    /// Hints that the rows with these primary keys will be accessed soon
    /// (lets their cache misses overlap). Does nothing by default.
    #[inline]
    fn prefetch(&self, table: TableId, keys: &[Key]) {
        let _ = (table, keys);
    }
    /// [`Txn::prefetch`] for the rows of several tables at once (one wait
    /// for the first bucket instead of one per table). By default, one
    /// `prefetch` per table.
    #[inline]
    fn prefetch_many(&self, sets: &[(TableId, &[Key])]) {
        for (table, keys) in sets {
            self.prefetch(*table, keys);
        }
    }
}

impl Txn for Transaction<'_> {
    #[inline]
    fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        Transaction::get_with(self, table, key, f)
    }
    #[inline]
    fn get_for_update_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        Transaction::get_for_update_with(self, table, key, f)
    }
    #[inline]
    fn update(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<()> {
        Transaction::update(self, table, key, value)
    }
    #[inline]
    fn insert(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        Transaction::insert(self, table, key, value)
    }
    #[inline]
    fn update_with(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()> {
        Transaction::update_with(self, table, key, f)
    }
    #[inline]
    fn modify(&mut self, table: TableId, key: &Key, f: impl FnOnce(&mut [u8])) -> Result<()> {
        Transaction::modify(self, table, key, f)
    }
    #[inline]
    fn delete(&mut self, table: TableId, key: &Key) -> Result<()> {
        Transaction::delete(self, table, key)
    }
    #[inline]
    fn get_by(&mut self, index: IndexId, key: &Key, f: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        Transaction::get_by(self, index, key, f)
    }
    #[inline]
    fn scan(
        &mut self,
        index: IndexId,
        range: impl RangeBounds<Key>,
        filter: Option<&Filter>,
        f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        let bounds = (range.start_bound().cloned(), range.end_bound().cloned());
        Transaction::scan(self, index, bounds, filter, f)
    }
    #[inline]
    fn prefetch(&self, table: TableId, keys: &[Key]) {
        Transaction::prefetch(self, table, keys)
    }
    #[inline]
    fn prefetch_many(&self, sets: &[(TableId, &[Key])]) {
        Transaction::prefetch_many(self, sets)
    }
}

impl Txn for multiverse::protocol::bohm::ExecTxn<'_> {
    #[inline]
    fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        multiverse::protocol::bohm::ExecTxn::get_with(self, table, key, f)
    }
    #[inline]
    fn update(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<()> {
        multiverse::protocol::bohm::ExecTxn::update(self, table, key, value)
    }
    #[inline]
    fn insert(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        multiverse::protocol::bohm::ExecTxn::insert(self, table, key, value)
    }
    #[inline]
    fn update_with(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()> {
        multiverse::protocol::bohm::ExecTxn::update_with(self, table, key, f)
    }
    #[inline]
    fn modify(&mut self, table: TableId, key: &Key, f: impl FnOnce(&mut [u8])) -> Result<()> {
        multiverse::protocol::bohm::ExecTxn::modify(self, table, key, f)
    }
    #[inline]
    fn delete(&mut self, table: TableId, key: &Key) -> Result<()> {
        multiverse::protocol::bohm::ExecTxn::delete(self, table, key)
    }
    #[inline]
    fn get_by(&mut self, index: IndexId, key: &Key, f: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        multiverse::protocol::bohm::ExecTxn::get_by(self, index, key, f)
    }
    #[inline]
    fn scan(
        &mut self,
        index: IndexId,
        range: impl RangeBounds<Key>,
        filter: Option<&Filter>,
        f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        multiverse::protocol::bohm::ExecTxn::scan(self, index, range, filter, f)
    }
    #[inline]
    fn prefetch(&self, table: TableId, keys: &[Key]) {
        multiverse::protocol::bohm::ExecTxn::prefetch(self, table, keys)
    }
}
