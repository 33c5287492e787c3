//! fjall 3.1.13: an LSM-tree key-value store with optimistic, serializable
//! transactions.
//!
//! fjall offers two transactional databases: a single-writer one (write
//! transactions take one lock in turn) and an optimistic one, in which any
//! number of write transactions run at once. This adapter uses the
//! optimistic one, the more concurrent of the two:
//!
//! - **Serializable, by backward validation.** A write transaction reads a
//!   snapshot taken at its begin (and its own writes) and records what it
//!   read: each key it got and each range it scanned. At commit, under one
//!   lock, fjall checks those reads against the keys written by every
//!   transaction that committed since the snapshot; any overlap is a
//!   conflict and the commit fails. A transaction that commits therefore
//!   read exactly what was current at its commit, so committed transactions
//!   are serializable in commit order, phantoms included (a scanned range
//!   conflicts with any later write inside it). fjall does not offer plain
//!   snapshot isolation besides this, so the store offers one level,
//!   [`Isolation::Serializable`].
//! - **Conflicts are read-validation aborts.** fjall reports a conflict
//!   without saying which read failed (a key or a range), so every conflict
//!   is [`AbortReason::ReadValidation`], retried by the harness. Two
//!   transactions that write a key without reading it do not conflict: the
//!   later commit's value wins, as serial execution in commit order would
//!   give. [`KvTxn::get_for_update`] is a plain read, which the validation
//!   already covers.
//! - **A scan validates its whole range.** The range `lo..hi` is recorded
//!   when the scan begins, so a scan that stops early can still conflict
//!   with a write past the point where it stopped.
//! - **Read-only transactions are plain snapshots** (fjall's read
//!   transaction): they record nothing and never conflict. Reading one
//!   consistent committed state is serializable, since committed writers
//!   are serial in commit order. A write in one is refused.
//! - **Commits are serialized.** The conflict check, the journal append and
//!   the application to the memtable happen under one lock, as does the
//!   snapshot of a write transaction's begin.
//!
//! One keyspace (fjall's name for a column family) holds every key.
//!
//! Settings, and why:
//!
//! - **Durability::None:** the database lives in a new directory under
//!   `/dev/shm` (a tmpfs, removed when the store is dropped), or in the
//!   directory given. fjall always keeps a journal; with
//!   `manual_journal_persist(true)` and no persist mode on the transactions
//!   a commit appends to the journal's user-space buffer and never flushes
//!   or syncs it, so a commit makes no system call.
//! - **Durability::Sync:** the database lives in the directory given (a
//!   new one under `/dev/shm` if none is), and every write transaction
//!   carries `PersistMode::SyncAll`: its commit writes its journal entry
//!   and fsyncs the journal before it returns. There is no group commit
//!   (the fsync happens under the commit lock, one commit at a time), and
//!   a write transaction's begin waits while a commit holds that lock.
//! - **Memtable of 1 GiB** (default 64 MiB), in both modes: the workloads'
//!   data stays in the in-memory memtable instead of being flushed into
//!   table files and compacted while the workload runs.
//! - **Block cache of 1 GiB** (default 32 MiB): what does reach table files
//!   is read from memory, not decoded again from the files.
//! - **No block compression** (by default fjall compresses the blocks of
//!   its deeper levels with LZ4): the data is in memory, and compressing it
//!   would only cost CPU.
//! - Everything else is fjall's default: 4 KiB blocks, bloom filters,
//!   leveled compaction, background workers for flushes and compactions
//!   (as many as the CPU cores, at most 4).
//!
//! A store opened on a directory that already holds a fjall database
//! recovers that database's data.

use crate::{conflict, store_dir, store_error, Durability, KvStore, KvTxn, PeerOptions};
use fjall::config::CompressionPolicy;
use fjall::{
    CompressionType, KeyspaceCreateOptions, OptimisticTxDatabase, OptimisticTxKeyspace, OptimisticWriteTx, PersistMode,
    Readable, Snapshot,
};
use multiverse::{AbortReason, Error, Isolation, Result};
use std::path::{Path, PathBuf};

/// The fjall version this adapter is built against (pinned in Cargo.toml).
const VERSION: &str = "3.1.13";
/// The keyspace that holds every key.
const KEYSPACE: &str = "kv";
/// The memtable's size before it is flushed (module docs).
const MEMTABLE_BYTES: u64 = 1 << 30;
/// The block cache's capacity (module docs).
const CACHE_BYTES: u64 = 1 << 30;

fn fjall_error(e: fjall::Error) -> Error {
    store_error("fjall", e)
}

/// fjall's optimistic transactional database (module docs).
pub struct Fjall {
    // Fields drop in order: the keyspace and the database close before the
    // temporary directory is removed.
    ks: OptimisticTxKeyspace,
    db: OptimisticTxDatabase,
    /// The persist mode of every write transaction's commit.
    persist: Option<PersistMode>,
    durability: Durability,
    path: PathBuf,
    tmp: Option<tempfile::TempDir>,
}

/// A transaction of [`Fjall`]: an optimistic write transaction, or a
/// snapshot for a read-only one.
pub struct FjallTxn<'s> {
    ks: &'s OptimisticTxKeyspace,
    tx: Tx,
}

enum Tx {
    Write(OptimisticWriteTx),
    Read(Snapshot),
}

impl KvStore for Fjall {
    type Tx<'s> = FjallTxn<'s>;

    const NAME: &'static str = "fjall";
    const LEVELS: &'static [Isolation] = &[Isolation::Serializable];

    fn open(opts: &PeerOptions) -> Result<Self> {
        let (path, dir) = store_dir("fjall", opts)?;
        let failed =
            |e: fjall::Error| store_error("fjall", format!("cannot open a database in {}: {e}", path.display()));
        let db = OptimisticTxDatabase::builder(&path)
            .manual_journal_persist(true)
            .cache_size(CACHE_BYTES)
            .open()
            .map_err(failed)?;
        let ks = db
            .keyspace(KEYSPACE, || {
                KeyspaceCreateOptions::default()
                    .max_memtable_size(MEMTABLE_BYTES)
                    .data_block_compression_policy(CompressionPolicy::all(CompressionType::None))
            })
            .map_err(failed)?;
        let persist = match opts.durability {
            Durability::None => None,
            Durability::Sync => Some(PersistMode::SyncAll),
        };
        Ok(Fjall { ks, db, persist, durability: opts.durability, path, tmp: dir })
    }

    fn begin(&self, _isolation: Isolation, read_only: bool) -> Result<FjallTxn<'_>> {
        // Every transaction is serializable, the one level offered ([`Peer`]
        // refuses the others before calling this).
        let tx = if read_only {
            Tx::Read(self.db.read_tx())
        } else {
            Tx::Write(self.db.write_tx().map_err(fjall_error)?.durability(self.persist))
        };
        Ok(FjallTxn { ks: &self.ks, tx })
    }

    fn memory_dir(&self) -> Option<&Path> {
        self.tmp.as_ref().map(|d| d.path())
    }

    fn describe(&self) -> String {
        let durability = match self.durability {
            Durability::None => "journal never flushed or synced",
            Durability::Sync => "journal fsynced at every commit (PersistMode::SyncAll)",
        };
        format!(
            "fjall {VERSION}, optimistic transactions (serializable: reads and scanned ranges validated at commit), \
             {durability}, in {}, memtable {} MiB, block cache {} MiB, no compression",
            self.path.display(),
            MEMTABLE_BYTES >> 20,
            CACHE_BYTES >> 20
        )
    }
}

impl FjallTxn<'_> {
    fn writer(&mut self) -> Result<&mut OptimisticWriteTx> {
        match &mut self.tx {
            Tx::Write(t) => Ok(t),
            Tx::Read(_) => Err(Error::Unsupported("fjall: a write in a read-only transaction".into())),
        }
    }
}

impl KvTxn for FjallTxn<'_> {
    fn get<R>(&mut self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        let v = match &self.tx {
            Tx::Write(t) => t.get(self.ks, key),
            Tx::Read(s) => s.get(self.ks, key),
        }
        .map_err(fjall_error)?;
        Ok(v.map(|v| f(&v)))
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let ks = self.ks;
        self.writer()?.insert(ks, key, value);
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<()> {
        let ks = self.ks;
        self.writer()?.remove(ks, key);
        Ok(())
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], mut f: impl FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
        if lo >= hi {
            return Ok(());
        }
        let iter = match &self.tx {
            Tx::Write(t) => t.range(self.ks, lo..hi),
            Tx::Read(s) => s.range(self.ks, lo..hi),
        };
        for item in iter {
            let (k, v) = item.into_inner().map_err(fjall_error)?;
            if !f(&k, &v) {
                break;
            }
        }
        Ok(())
    }

    fn commit(self) -> Result<()> {
        match self.tx {
            Tx::Read(_) => Ok(()),
            Tx::Write(t) => match t.commit() {
                Ok(Ok(())) => Ok(()),
                Ok(Err(fjall::Conflict)) => Err(conflict(AbortReason::ReadValidation)),
                Err(e) => Err(fjall_error(e)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    const S: Isolation = Isolation::Serializable;

    fn value(s: &Fjall, key: &[u8]) -> Option<u64> {
        let mut t = s.begin(S, true).unwrap();
        t.get(key, |v| u64::from_be_bytes(v.try_into().unwrap())).unwrap()
    }

    fn set(s: &Fjall, key: &[u8], n: u64) {
        let mut t = s.begin(S, false).unwrap();
        t.put(key, &n.to_be_bytes()).unwrap();
        t.commit().unwrap();
    }

    #[test]
    fn operations() {
        crate::conformance::operations::<Fjall>();
        crate::conformance::memory_counted::<Fjall>(true);
    }

    #[test]
    fn levels() {
        crate::conformance::levels::<Fjall>();
    }

    #[test]
    fn increments() {
        let aborts = crate::conformance::increments::<Fjall>(4, 200);
        eprintln!("fjall: {aborts} aborts retried among 4 x 200 increments");
    }

    #[test]
    fn concurrent_writers_of_one_read_key_the_later_commit_aborts() {
        let s = Fjall::open(&PeerOptions::default()).unwrap();
        set(&s, b"k", 0);
        let both_written = Barrier::new(2);
        let first_committed = Barrier::new(2);
        let (first, second) = std::thread::scope(|sc| {
            let writer = |add: u64, first: bool| {
                let (s, both_written, first_committed) = (&s, &both_written, &first_committed);
                move || {
                    let mut t = s.begin(S, false).unwrap();
                    let n = t.get(b"k", |v| u64::from_be_bytes(v.try_into().unwrap())).unwrap().unwrap();
                    t.put(b"k", &(n + add).to_be_bytes()).unwrap();
                    // Both transactions have read and written the key: neither
                    // waited for the other (writers run concurrently).
                    both_written.wait();
                    if first {
                        let r = t.commit();
                        first_committed.wait();
                        r
                    } else {
                        first_committed.wait();
                        t.commit()
                    }
                }
            };
            let a = sc.spawn(writer(1, true));
            let b = sc.spawn(writer(10, false));
            (a.join().unwrap(), b.join().unwrap())
        });
        first.unwrap();
        let e = second.unwrap_err();
        assert!(matches!(e, Error::Aborted(AbortReason::ReadValidation)), "{e}");
        assert!(e.is_transient());
        assert_eq!(value(&s, b"k"), Some(1));
    }

    #[test]
    fn write_skew_is_refused() {
        // Snapshot isolation would commit both; serializable must not.
        let s = Fjall::open(&PeerOptions::default()).unwrap();
        set(&s, b"a", 1);
        set(&s, b"b", 1);
        let mut t1 = s.begin(S, false).unwrap();
        let mut t2 = s.begin(S, false).unwrap();
        t1.get(b"a", |_| ()).unwrap();
        t1.put(b"b", &0u64.to_be_bytes()).unwrap();
        t2.get(b"b", |_| ()).unwrap();
        t2.put(b"a", &0u64.to_be_bytes()).unwrap();
        t1.commit().unwrap();
        assert!(matches!(t2.commit(), Err(Error::Aborted(AbortReason::ReadValidation))));
        assert_eq!((value(&s, b"a"), value(&s, b"b")), (Some(1), Some(0)));
    }

    #[test]
    fn an_insert_into_a_scanned_range_aborts_the_scanner() {
        let s = Fjall::open(&PeerOptions::default()).unwrap();
        set(&s, b"a", 1);
        let mut t1 = s.begin(S, false).unwrap();
        let mut seen = 0;
        t1.scan(b"a", b"c", |_, _| {
            seen += 1;
            true
        })
        .unwrap();
        assert_eq!(seen, 1);
        set(&s, b"b", 2); // a phantom for t1
        t1.put(b"z", &0u64.to_be_bytes()).unwrap();
        assert!(matches!(t1.commit(), Err(Error::Aborted(AbortReason::ReadValidation))));
        assert_eq!(value(&s, b"z"), None);
    }

    #[test]
    fn blind_writes_do_not_conflict() {
        let s = Fjall::open(&PeerOptions::default()).unwrap();
        let mut t1 = s.begin(S, false).unwrap();
        let mut t2 = s.begin(S, false).unwrap();
        t1.put(b"k", &1u64.to_be_bytes()).unwrap();
        t2.put(b"k", &2u64.to_be_bytes()).unwrap();
        t1.commit().unwrap();
        t2.commit().unwrap();
        assert_eq!(value(&s, b"k"), Some(2));
    }

    #[test]
    fn read_only_transactions_read_their_snapshot_and_refuse_writes() {
        let s = Fjall::open(&PeerOptions::default()).unwrap();
        set(&s, b"k", 1);
        let mut r = s.begin(S, true).unwrap();
        set(&s, b"k", 2);
        set(&s, b"m", 3);
        assert_eq!(r.get(b"k", |v| v.to_vec()).unwrap(), Some(1u64.to_be_bytes().to_vec()));
        let mut keys = vec![];
        r.scan(b"a", b"z", |k, _| {
            keys.push(k.to_vec());
            true
        })
        .unwrap();
        assert_eq!(keys, [b"k".to_vec()]);
        assert!(matches!(r.put(b"x", b"y"), Err(Error::Unsupported(_))));
        r.commit().unwrap();
        assert_eq!(value(&s, b"k"), Some(2));
    }

    #[test]
    fn a_synced_store_keeps_its_commits() {
        let dir = tempfile::tempdir().unwrap();
        let opts = PeerOptions {
            durability: Durability::Sync,
            dir: Some(dir.path().to_path_buf()),
            threads: 1,
            ..PeerOptions::default()
        };
        {
            let s = Fjall::open(&opts).unwrap();
            assert!(s.describe().starts_with("fjall 3.1.13, "), "{}", s.describe());
            assert!(s.describe().contains("fsynced"), "{}", s.describe());
            set(&s, b"k", 7);
            let mut t = s.begin(S, false).unwrap();
            t.put(b"gone", b"x").unwrap();
            drop(t); // rolled back
        }
        let s = Fjall::open(&opts).unwrap();
        assert_eq!(value(&s, b"k"), Some(7));
        assert_eq!(value(&s, b"gone"), None);
    }

    #[test]
    fn an_unwritable_directory_is_an_error_naming_the_store() {
        let opts = PeerOptions {
            durability: Durability::Sync,
            dir: Some("/proc/nonexistent".into()),
            threads: 1,
            ..PeerOptions::default()
        };
        let e = Fjall::open(&opts).err().expect("no store in /proc");
        assert!(e.to_string().contains("fjall"), "{e}");
        assert!(e.to_string().contains("/proc/nonexistent"), "{e}");
    }
}
