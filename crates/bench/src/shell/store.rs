//! The shell on another embedded store (`--protocol surrealmx`,
//! `rocksdb-optimistic`, `rocksdb-pessimistic`, `fjall`, `redb`, `sqlite`;
//! crates/peers).
//!
//! Table `test` is a table of the peers crate's [`Peer`], so its rows are
//! the store's keys in the encoding every workload uses, and every command
//! is the store's own transaction at work: a `get` is the adapter's read
//! (RocksDB's `GetForUpdate` at repeatable read), an update or delete reads
//! the row for update first (a lock, or a key to validate), a scan is the
//! store's ordered range scan with the predicate applied to what it
//! returns, and the store's conflicts, busy errors, deadlocks and lock
//! timeouts are the adapter's aborts. `begin LEVEL` takes the levels the
//! store offers; a transaction is begun for writing (so that a single-writer
//! store, redb or SQLite, makes it wait for the writer before it at its
//! `begin`), except an observer's `get` or `scan`, which begins read-only
//! (a snapshot, where the store has read-only transactions).
//!
//! A store's waits (a RocksDB lock, redb's `begin_write`, SQLite's busy
//! handler, which sleeps and retries) are shown as `blocked` by the same
//! evidence as Multiverse's: the session's thread sleeps (module
//! `waiting`).

use super::session::{Backend, Begin, Context, Failure, ShellTxn, Test};
use crate::bench::peers::{level_refused, resolve_level};
use multiverse::{Error, Isolation, Key, Mode, TableId, TableSpec};
use multiverse_peers::{KvStore, Peer, PeerInto, PeerOptions, PeerTxn};
use multiverse_workloads::{Store, StoreTxn, Txn};
use std::time::Duration;

/// Opens the store `name` with an empty table `test`; its transactions
/// wait `lock_timeout` for a lock where the store waits for one (RocksDB's
/// pessimistic transactions, SQLite's writers). A store not compiled in is
/// `bench`'s one-line error naming its feature.
pub(crate) fn open(name: &str, lock_timeout: Duration) -> Result<Context, String> {
    resolve_level(name, None)?;
    let opts = PeerOptions { threads: 2, lock_timeout: Some(lock_timeout), ..PeerOptions::default() };
    multiverse_peers::open_peer(name, &opts, Open)?
}

/// Makes an open store the sessions' backend.
struct Open;

impl PeerInto for Open {
    type Output = Result<Context, String>;

    fn take<K: KvStore>(self, peer: Peer<K>) -> Result<Context, String> {
        let table = peer.create_table(TableSpec::ordered("test")).map_err(|e| e.to_string())?;
        let test = Test { table, primary: peer.primary(table) };
        Ok(Context::new(StoreBackend { peer, test }))
    }
}

/// A store with table `test`.
struct StoreBackend<K: KvStore> {
    peer: Peer<K>,
    test: Test,
}

impl<K: KvStore> Backend for StoreBackend<K> {
    type Txn<'a> = PeerTxn<'a, K>;

    fn test(&self) -> Test {
        self.test
    }

    fn default_level(&self) -> Isolation {
        *K::LEVELS.last().expect("a store offers a level")
    }

    fn final_level(&self) -> Isolation {
        self.default_level()
    }

    fn begin(&self, b: Begin) -> Result<PeerTxn<'_, K>, Failure> {
        if !K::LEVELS.contains(&b.iso) {
            return Err(Failure::User(level_refused(K::NAME, b.iso, K::LEVELS)));
        }
        if b.mode != Mode::Default {
            let mode = if b.mode == Mode::Optimistic { "optimistic" } else { "pessimistic" };
            return Err(Failure::User(format!("store {} has no {mode} mode to choose", K::NAME)));
        }
        // Declared keys and `after` ask nothing of a store (as of most
        // protocols): every commit before the begin is seen.
        Ok(self.peer.begin(b.iso, b.read_only)?)
    }
}

impl<K: KvStore> ShellTxn for PeerTxn<'_, K> {
    fn put_row(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<(), Error> {
        match self.insert(table, key.clone(), value) {
            Err(Error::DuplicateKey) => self.set_row(table, &key, value),
            r => r,
        }
    }

    fn set_row(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<(), Error> {
        // Not `update`, which is a blind write on a store (it would write a
        // row that is not there): read for update, then write.
        self.update_with(table, key, |_, new| new.extend_from_slice(value))
    }

    fn commit_txn(self) -> Result<Option<u64>, Error> {
        StoreTxn::commit(self).map(|()| None)
    }
}
