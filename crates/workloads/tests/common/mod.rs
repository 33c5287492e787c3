//! The test adaptor shared by the workload tests: a [`Txn`] that records the
//! keys a transaction body reads and writes.

use multiverse::{Database, Filter, IndexId, Isolation, Key, Result, TableId, Transaction, TxnOptions};
use multiverse_workloads::{Txn, Worker};
use std::ops::RangeBounds;

/// A transaction that records the (`u64`) keys it reads and writes, for
/// workloads that only get, update and read-modify-write rows by primary key:
/// any other access panics, naming `workload`.
pub struct Spy<'a, 'db> {
    /// The workload's name, for the panic messages.
    pub workload: &'static str,
    t: &'a mut Transaction<'db>,
    /// Keys read, in order.
    pub reads: Vec<u64>,
    /// Keys written, in order.
    pub writes: Vec<u64>,
}

impl<'a, 'db> Spy<'a, 'db> {
    pub fn new(workload: &'static str, t: &'a mut Transaction<'db>) -> Self {
        Spy { workload, t, reads: Vec::new(), writes: Vec::new() }
    }
}

impl Txn for Spy<'_, '_> {
    fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.reads.push(key.to_u64().unwrap());
        self.t.get_with(table, key, f)
    }
    fn update(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<()> {
        self.writes.push(key.to_u64().unwrap());
        self.t.update(table, key, value)
    }
    fn insert(&mut self, _: TableId, _: Key, _: &[u8]) -> Result<()> {
        panic!("{} never inserts after the load", self.workload)
    }
    fn update_with(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()> {
        self.writes.push(key.to_u64().unwrap());
        self.t.update_with(table, key, f)
    }
    fn delete(&mut self, _: TableId, _: &Key) -> Result<()> {
        panic!("{} never deletes", self.workload)
    }
    fn get_by(&mut self, _: IndexId, _: &Key, _: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        panic!("{} uses primary keys only", self.workload)
    }
    fn scan(
        &mut self,
        _: IndexId,
        _: impl RangeBounds<Key>,
        _: Option<&Filter>,
        _: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        panic!("{} reads rows by key", self.workload)
    }
}

/// Runs the worker's current transaction once at `iso` through a spy named
/// `workload`, commits it, and returns the keys it read and wrote.
pub fn spy_run(workload: &'static str, db: &Database, k: &mut impl Worker, iso: Isolation) -> (Vec<u64>, Vec<u64>) {
    let mut t = db.begin_with(k.options(TxnOptions::new(iso))).unwrap();
    let mut spy = Spy::new(workload, &mut t);
    k.execute(&mut spy).unwrap();
    let (r, w) = (spy.reads, spy.writes);
    t.commit().unwrap();
    k.committed();
    (r, w)
}
