//! SurrealMX: SurrealDB's embedded, in-memory MVCC key-value engine.
//!
//! SurrealMX keeps every key in a concurrent radix tree with a chain of
//! versions per key. A transaction reads the snapshot it began at and
//! buffers its writes; its commit checks the transactions that committed
//! since it began (optimistic validation) and rejects a conflicting commit
//! rather than waiting. The adapter uses its transactions as they are:
//!
//! - **Snapshot isolation** is its snapshot mode: reads are not tracked,
//!   and a commit fails when a concurrent transaction committed first a
//!   write to a key it writes (first committer wins), or a write to a key it
//!   read with "get for update".
//! - **Serializable** is its "serializable snapshot isolation" mode, which
//!   also records every key read and every range scanned by a writing
//!   transaction, and fails its commit when a concurrent transaction
//!   committed a write to one of them (ranges included, so new rows in a
//!   scanned range are caught too). Read-only transactions read their
//!   snapshot and are never rejected.
//! - Its conflicts are reported as "read conflict" and "write conflict"
//!   errors, mapped to the harness's read-validation and write-conflict
//!   aborts, which it retries.
//!
//! The database is opened with the store's own high-throughput settings
//! (`DatabaseOptions::with_high_performance`): a transaction pool of twice
//! the default size (transactions are reused instead of allocated), the
//! background sweep of old versions every 30 seconds instead of every 10,
//! and the commit queue trimmed every 100 ms instead of every second.
//! Garbage collection stays on: most old versions are reclaimed inline as
//! each commit writes its keys, and the background sweep only reclaims the
//! versions that a reader still needed at the time, so memory stays
//! bounded however long a run lasts.
//!
//! Durability:
//!
//! - **None**: purely in memory, with no persistence at all (the store's
//!   default): nothing is written to any file.
//! - **Sync**: the store's append-only log, written on every commit before
//!   the commit becomes visible and fsynced before the commit returns. The
//!   store batches concurrent commits into one write and one fsync (group
//!   commit). Periodic snapshots are off: they only shorten recovery, and
//!   their background writing would compete with the measured commits.
//!
//! Reads pass the store's own copy of a value to the caller (no copy);
//! scans borrow keys and values during the walk.

use crate::{conflict, store_dir, store_error, Durability, KvStore, KvTxn, PeerOptions};
use multiverse::{AbortReason, Error, Isolation, Result};
use std::path::{Path, PathBuf};
use surrealmx::{AolMode, Database, DatabaseOptions, FsyncMode, PersistenceOptions, SnapshotMode, Transaction};

/// The store's name, in its errors and as `--protocol` takes it.
const NAME: &str = "surrealmx";

/// The version of SurrealMX this adapter is built with.
const VERSION: &str = "1.1.0";

/// A SurrealMX database (module docs).
pub struct SurrealMx {
    /// Declared first: dropped (its log closed) before the directory below.
    db: Database,
    /// Where the append-only log lives (`Durability::Sync` only).
    dir: Option<PathBuf>,
    /// A directory made for this store, removed when it is dropped.
    tmp: Option<tempfile::TempDir>,
}

/// Maps a SurrealMX error: its conflicts to aborts the harness retries,
/// everything else to an error naming the store.
fn map_err(e: surrealmx::Error) -> Error {
    match e {
        surrealmx::Error::KeyReadConflict => conflict(AbortReason::ReadValidation),
        surrealmx::Error::KeyWriteConflict => conflict(AbortReason::WriteConflict),
        // Its message alone does not say why the log write failed.
        surrealmx::Error::TxCommitNotPersisted(p) => {
            store_error(NAME, format_args!("the commit could not be written to the log: {p}"))
        }
        e => store_error(NAME, e),
    }
}

impl KvStore for SurrealMx {
    type Tx<'s> = SurrealMxTxn;

    const NAME: &'static str = NAME;
    const LEVELS: &'static [Isolation] = &[Isolation::Snapshot, Isolation::Serializable];

    fn open(opts: &PeerOptions) -> Result<Self> {
        let options = DatabaseOptions::default().with_high_performance();
        match opts.durability {
            Durability::None => Ok(SurrealMx { db: Database::new_with_options(options), dir: None, tmp: None }),
            Durability::Sync => {
                let (dir, tmp) = store_dir(NAME, opts)?;
                let persistence = PersistenceOptions::new(&dir)
                    .with_aol_mode(AolMode::SynchronousOnCommit)
                    .with_fsync_mode(FsyncMode::EveryAppend)
                    .with_snapshot_mode(SnapshotMode::Never);
                let db = Database::new_with_persistence(options, persistence).map_err(|e| {
                    store_error(NAME, format_args!("cannot open its append-only log in {}: {e}", dir.display()))
                })?;
                Ok(SurrealMx { db, dir: Some(dir), tmp })
            }
        }
    }

    fn begin(&self, isolation: Isolation, read_only: bool) -> Result<SurrealMxTxn> {
        let tx = self.db.transaction(!read_only);
        let tx = match isolation {
            Isolation::Snapshot => tx.with_snapshot_isolation(),
            Isolation::Serializable => tx.with_serializable_snapshot_isolation(),
            other => return Err(Error::Unsupported(format!("{NAME} does not offer {}", other.name()))),
        };
        Ok(SurrealMxTxn { tx, write: !read_only })
    }

    fn memory_dir(&self) -> Option<&Path> {
        self.tmp.as_ref().map(|d| d.path())
    }

    fn describe(&self) -> String {
        let durability = match &self.dir {
            None => "in memory".to_string(),
            Some(d) => format!("append-only log in {} fsynced per commit (group commit)", d.display()),
        };
        format!("{NAME} {VERSION}, {durability}, high-performance options, snapshot isolation at snapshot, SSI at serializable")
    }
}

/// A SurrealMX transaction. Its writes are buffered in the transaction
/// until commit, so dropping it uncommitted discards them (the store
/// returns it to its pool and clears it there).
pub struct SurrealMxTxn {
    tx: Transaction,
    /// Whether it was begun for writing (the store refuses "get for
    /// update" in a read-only transaction).
    write: bool,
}

impl KvTxn for SurrealMxTxn {
    #[inline]
    fn get<R>(&mut self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.tx.with_value(key, f).map_err(map_err)
    }

    #[inline]
    fn get_for_update<R>(&mut self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        if !self.write {
            return self.get(key, f);
        }
        // The value is the store's reference-counted copy: no bytes are copied.
        Ok(self.tx.get_for_update(key).map_err(map_err)?.map(|v| f(&v)))
    }

    #[inline]
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        // `set` overwrites; the store's `put` would first look the key up
        // and refuse an existing one.
        self.tx.set(key, value).map_err(map_err)
    }

    #[inline]
    fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.tx.del(key).map_err(map_err)
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], mut f: impl FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
        // `scan_with` borrows each value in place (no copy, no intermediate
        // vector) and stops when `f` returns false.
        self.tx.scan_with(lo..hi, None, None, |k, v| f(k.as_slice(), v)).map(drop).map_err(map_err)
    }

    fn commit(mut self) -> Result<()> {
        self.tx.commit().map_err(map_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance;

    #[test]
    fn operations() {
        conformance::operations::<SurrealMx>();
        conformance::memory_counted::<SurrealMx>(false);
    }

    #[test]
    fn levels() {
        conformance::levels::<SurrealMx>();
    }

    #[test]
    fn increments() {
        let aborts = conformance::increments::<SurrealMx>(4, 200);
        eprintln!("surrealmx: {aborts} aborts retried in 4 x 200 increments at each level");
    }

    fn open_memory() -> SurrealMx {
        SurrealMx::open(&PeerOptions { threads: 2, ..PeerOptions::default() }).unwrap()
    }

    fn value(t: &mut SurrealMxTxn, key: &[u8]) -> Option<Vec<u8>> {
        t.get(key, |v| v.to_vec()).unwrap()
    }

    #[test]
    fn concurrent_read_modify_writes_conflict_at_serializable() {
        let s = open_memory();
        let mut t = s.begin(Isolation::Serializable, false).unwrap();
        t.put(b"k", b"0").unwrap();
        t.commit().unwrap();

        let mut a = s.begin(Isolation::Serializable, false).unwrap();
        let mut b = s.begin(Isolation::Serializable, false).unwrap();
        assert_eq!(value(&mut a, b"k"), Some(b"0".to_vec()));
        assert_eq!(value(&mut b, b"k"), Some(b"0".to_vec()));
        a.put(b"k", b"a").unwrap();
        b.put(b"k", b"b").unwrap();
        a.commit().unwrap();
        match b.commit() {
            Err(e @ Error::Aborted(_)) => assert!(e.is_transient(), "{e}"),
            other => panic!("the second commit should abort, got {other:?}"),
        }
        let mut r = s.begin(Isolation::Serializable, true).unwrap();
        assert_eq!(value(&mut r, b"k"), Some(b"a".to_vec()));
    }

    /// Write skew: each transaction reads both keys and writes one. Snapshot
    /// isolation lets both commit; serializable rejects the second.
    #[test]
    fn write_skew_at_snapshot_but_not_at_serializable() {
        for (level, both_commit) in [(Isolation::Snapshot, true), (Isolation::Serializable, false)] {
            let s = open_memory();
            let mut t = s.begin(level, false).unwrap();
            t.put(b"x", b"1").unwrap();
            t.put(b"y", b"1").unwrap();
            t.commit().unwrap();
            let mut a = s.begin(level, false).unwrap();
            let mut b = s.begin(level, false).unwrap();
            for t in [&mut a, &mut b] {
                assert!(value(t, b"x").is_some() && value(t, b"y").is_some());
            }
            a.put(b"x", b"0").unwrap();
            b.put(b"y", b"0").unwrap();
            a.commit().unwrap();
            let r = b.commit();
            assert_eq!(r.is_ok(), both_commit, "{}: {r:?}", level.name());
            if let Err(e) = r {
                assert!(matches!(e, Error::Aborted(AbortReason::ReadValidation)), "{e}");
            }
        }
    }

    /// A scan at serializable is validated as a range: a row inserted into
    /// it by a concurrent commit aborts the scanning writer.
    #[test]
    fn phantoms_abort_at_serializable() {
        let s = open_memory();
        let mut a = s.begin(Isolation::Serializable, false).unwrap();
        let mut b = s.begin(Isolation::Serializable, false).unwrap();
        let mut n = 0;
        a.scan(b"r0", b"r9", |_, _| {
            n += 1;
            true
        })
        .unwrap();
        assert_eq!(n, 0);
        a.put(b"count", b"0").unwrap();
        b.put(b"r5", b"new").unwrap();
        b.commit().unwrap();
        assert!(matches!(a.commit(), Err(Error::Aborted(_))));
    }

    #[test]
    fn scans_stop_and_see_own_writes_and_rollbacks_discard() {
        let s = open_memory();
        let mut t = s.begin(Isolation::Snapshot, false).unwrap();
        for k in [b"a1", b"a2", b"a3", b"b1"] {
            t.put(k, k).unwrap();
        }
        t.commit().unwrap();
        let mut t = s.begin(Isolation::Serializable, false).unwrap();
        t.delete(b"a2").unwrap();
        t.put(b"a4", b"a4").unwrap();
        let mut seen = vec![];
        t.scan(b"a", b"b", |k, v| {
            assert_eq!(k, v);
            seen.push(k.to_vec());
            true
        })
        .unwrap();
        assert_eq!(seen, [b"a1".to_vec(), b"a3".to_vec(), b"a4".to_vec()]);
        let mut first = vec![];
        t.scan(b"a", b"c", |k, _| {
            first.push(k.to_vec());
            false
        })
        .unwrap();
        assert_eq!(first, [b"a1".to_vec()]);
        drop(t);
        let mut r = s.begin(Isolation::Snapshot, true).unwrap();
        assert_eq!(value(&mut r, b"a2"), Some(b"a2".to_vec()));
        assert_eq!(value(&mut r, b"a4"), None);
        // "Get for update" in a read-only transaction is a plain read.
        assert_eq!(r.get_for_update(b"a1", |v| v.to_vec()).unwrap(), Some(b"a1".to_vec()));
        assert!(r.put(b"z", b"z").unwrap_err().to_string().contains(NAME));
    }

    #[test]
    fn durable_commits_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let opts = PeerOptions {
            durability: Durability::Sync,
            dir: Some(dir.path().to_path_buf()),
            threads: 1,
            ..PeerOptions::default()
        };
        {
            let s = SurrealMx::open(&opts).unwrap();
            assert!(s.describe().contains("fsynced per commit"), "{}", s.describe());
            let mut t = s.begin(Isolation::Serializable, false).unwrap();
            t.put(b"durable", b"yes").unwrap();
            t.commit().unwrap();
        }
        assert!(std::fs::metadata(dir.path().join("aol.bin")).unwrap().len() > 0);
        let s = SurrealMx::open(&opts).unwrap();
        let mut r = s.begin(Isolation::Snapshot, true).unwrap();
        assert_eq!(value(&mut r, b"durable"), Some(b"yes".to_vec()));
    }

    #[test]
    fn unwritable_directories_are_named() {
        let opts = PeerOptions {
            durability: Durability::Sync,
            dir: Some(PathBuf::from("/proc/nonexistent")),
            ..PeerOptions::default()
        };
        let e = SurrealMx::open(&opts).err().expect("opening in /proc fails");
        let msg = e.to_string();
        assert!(msg.contains("surrealmx") && msg.contains("/proc/nonexistent"), "{msg}");
    }
}
