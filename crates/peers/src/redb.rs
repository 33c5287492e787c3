//! redb: a copy-on-write B-tree with one writer at a time.
//!
//! [redb](https://www.redb.org) keeps its data in one B-tree (a file or, for
//! an in-memory store, a buffer in memory) and never updates a page in
//! place: a write transaction copies the pages it changes, and its commit
//! publishes the new root. Its concurrency control follows from that:
//!
//! - **One writer at a time.** `begin_write` waits while another write
//!   transaction is alive, so write transactions run one after another and
//!   never conflict: this adapter reports no aborts, and redb offers one
//!   level, [`Isolation::Serializable`].
//! - **Readers on snapshots.** A read-only transaction reads the last
//!   commit before it began. It neither waits for the writer nor makes the
//!   writer wait.
//!
//! All keys live in one table, `kv` (`&[u8]` keys and values), created when
//! the store opens. A transaction opens the table once, when it begins, and
//! keeps it open until it ends, as redb's own users write.
//!
//! Settings:
//!
//! - [`Durability::None`]: redb's `InMemoryBackend` (the database file is a
//!   byte vector in memory). Commits use redb's `Durability::None`: a commit
//!   is visible to every transaction begun after it, but its pages stay in
//!   redb's write buffer instead of being copied to the backend. redb
//!   remembers each such commit until a commit with `Durability::Immediate`
//!   (about 40 bytes per commit), so every [`IMMEDIATE_EVERY`]th commit uses
//!   `Immediate`. That commit copies the buffered pages into the backend and
//!   calls the backend's sync, which does nothing in memory. Memory stays
//!   bounded, and throughput is the same as with `None` alone. With only
//!   `Immediate` commits, each commit copies its pages to the backend and
//!   is about twice as slow.
//! - [`Durability::Sync`]: the file `redb.db` in the store's directory.
//!   Every commit uses `Durability::Immediate`: it is written and `fsync`ed
//!   before it returns. redb's default one-phase commit writes the new root
//!   to the inactive commit slot, switches slots and syncs once. The file
//!   must not exist yet or must be empty: a store opens empty.
//! - Both: a cache of [`CACHE_BYTES`], an upper limit rather than an
//!   allocation (redb's default is 1 GiB; up to half of it is write
//!   buffer); 4 KiB pages; and redb's default single-process mode
//!   (`ConcurrencyMode::ExclusiveWriter`).
//!
//! [`Isolation::Serializable`]: multiverse::Isolation::Serializable
//! [`Durability::None`]: crate::Durability::None
//! [`Durability::Sync`]: crate::Durability::Sync

use crate::{store_dir, store_error, Durability, KvStore, KvTxn, PeerOptions};
use multiverse::{Error, Isolation, Result};
use redb::{Database, ReadOnlyTable, ReadableDatabase, ReadableTable, Table, TableDefinition, WriteTransaction};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The one table that holds every key.
const KV: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");

/// The limit on redb's cache, in bytes (4 GiB).
pub const CACHE_BYTES: usize = 4 << 30;

/// In memory, one commit in this many uses redb's `Durability::Immediate`
/// (see the module docs).
pub const IMMEDIATE_EVERY: u64 = 10_000;

type KvTable<'t> = Table<'t, &'static [u8], &'static [u8]>;

/// redb, as a [`KvStore`] (see the module docs).
pub struct Redb {
    db: Database,
    durability: Durability,
    /// Commits of write transactions so far, to pick the periodic
    /// `Immediate` commit in memory.
    commits: AtomicU64,
    /// The database file, if there is one.
    path: Option<PathBuf>,
    /// A temporary directory removed after the database closes (declared
    /// after `db`, so dropped after it).
    tmp: Option<tempfile::TempDir>,
}

/// A transaction of [`Redb`].
pub enum RedbTxn<'s> {
    /// A write transaction, with its table open.
    Write(Writer<'s>),
    /// A read-only transaction's table, which holds the snapshot itself.
    Read(ReadOnlyTable<&'static [u8], &'static [u8]>),
}

/// A write transaction and its open table.
pub struct Writer<'s> {
    /// The table, borrowing `*tx`. Declared before `tx`, so it is dropped
    /// (and writes its root back into the transaction) before the
    /// transaction is dropped or committed.
    table: KvTable<'static>,
    /// The transaction. The `Arc` is never cloned: it only gives the
    /// transaction an address that stays put while the `Writer` moves.
    tx: Arc<WriteTransaction>,
    store: &'s Redb,
}

fn err(e: impl std::fmt::Display) -> Error {
    store_error("redb", e)
}

impl KvStore for Redb {
    type Tx<'s> = RedbTxn<'s>;

    const NAME: &'static str = "redb";
    const LEVELS: &'static [Isolation] = &[Isolation::Serializable];

    fn open(opts: &PeerOptions) -> Result<Self> {
        let mut builder = redb::Builder::new();
        builder.set_cache_size(CACHE_BYTES);
        let (db, path, dir) = match opts.durability {
            Durability::None => {
                let db = builder
                    .create_with_backend(redb::backends::InMemoryBackend::new())
                    .map_err(|e| err(format!("cannot create an in-memory database: {e}")))?;
                (db, None, None)
            }
            Durability::Sync => {
                let (dir, tmp) = store_dir("redb", opts)?;
                let path = dir.join("redb.db");
                if std::fs::metadata(&path).is_ok_and(|m| m.len() > 0) {
                    return Err(err(format!(
                        "{} already exists (the store opens empty): remove it or choose another directory",
                        path.display()
                    )));
                }
                let db = builder.create(&path).map_err(|e| err(format!("cannot open {}: {e}", path.display())))?;
                (db, Some(path), tmp)
            }
        };
        let store = Redb { db, durability: opts.durability, commits: AtomicU64::new(0), path, tmp: dir };
        // Create the table, which read-only transactions cannot do.
        store.begin(Isolation::Serializable, false)?.commit()?;
        Ok(store)
    }

    fn begin(&self, _isolation: Isolation, read_only: bool) -> Result<RedbTxn<'_>> {
        if read_only {
            let tx = self.db.begin_read().map_err(err)?;
            return Ok(RedbTxn::Read(tx.open_table(KV).map_err(err)?));
        }
        let tx = Arc::new(self.db.begin_write().map_err(err)?);
        // SAFETY: the reference points into the `Arc`'s allocation, which
        // stays put and alive while the `Writer` holds the `Arc`, however
        // the `Writer` moves. The one thing given the reference, the table,
        // is dropped before the `Arc` (field order in `Writer`, and
        // explicitly in `commit`), and nothing takes `&mut` to the
        // transaction while the table is alive: the `Arc` is never cloned
        // or handed out, and `Arc::try_unwrap` in `commit` runs after the
        // table is dropped. The `'static` lifetime is never exposed: the
        // table is a private field.
        let tx_ref: &'static WriteTransaction = unsafe { &*Arc::as_ptr(&tx) };
        let table = tx_ref.open_table(KV).map_err(err)?;
        Ok(RedbTxn::Write(Writer { table, tx, store: self }))
    }

    fn memory_dir(&self) -> Option<&Path> {
        self.tmp.as_ref().map(|d| d.path())
    }

    fn describe(&self) -> String {
        let cache = format!("cache {} GiB", CACHE_BYTES >> 30);
        match &self.path {
            Some(p) => format!(
                "redb 5.0.0, file {} (Durability::Immediate: fsync per commit), {cache}, one writer at a time",
                p.display()
            ),
            None => format!(
                "redb 5.0.0, in memory (InMemoryBackend), commits Durability::None with one in {IMMEDIATE_EVERY} \
                 Immediate (its sync a no-op), {cache}, one writer at a time"
            ),
        }
    }
}

impl KvTxn for RedbTxn<'_> {
    fn get<R>(&mut self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        let v = match self {
            RedbTxn::Write(w) => w.table.get(key),
            RedbTxn::Read(t) => t.get(key),
        };
        Ok(v.map_err(err)?.map(|v| f(v.value())))
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        match self {
            RedbTxn::Write(w) => w.table.insert(key, value).map(drop).map_err(err),
            RedbTxn::Read(_) => Err(read_only()),
        }
    }

    fn delete(&mut self, key: &[u8]) -> Result<()> {
        match self {
            RedbTxn::Write(w) => w.table.remove(key).map(drop).map_err(err),
            RedbTxn::Read(_) => Err(read_only()),
        }
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], f: impl FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
        if lo >= hi {
            return Ok(());
        }
        match self {
            RedbTxn::Write(w) => scan(&w.table, lo, hi, f),
            RedbTxn::Read(t) => scan(t, lo, hi, f),
        }
    }

    fn commit(self) -> Result<()> {
        let RedbTxn::Write(Writer { table, tx, store }) = self else {
            // A snapshot has nothing to commit; dropping it releases it.
            return Ok(());
        };
        drop(table);
        let Ok(mut tx) = Arc::try_unwrap(tx) else {
            unreachable!("a write transaction's Arc is never cloned");
        };
        // Relaxed: a tally that picks every IMMEDIATE_EVERY-th commit; it
        // orders nothing (the write lock orders the commits).
        let n = store.commits.fetch_add(1, Ordering::Relaxed) + 1;
        let level = match store.durability {
            Durability::None if n % IMMEDIATE_EVERY != 0 => redb::Durability::None,
            _ => redb::Durability::Immediate,
        };
        tx.set_durability(level).map_err(err)?;
        tx.commit().map_err(err)
    }
}

fn scan(
    t: &impl ReadableTable<&'static [u8], &'static [u8]>,
    lo: &[u8],
    hi: &[u8],
    mut f: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<()> {
    for entry in t.range(lo..hi).map_err(err)? {
        let (k, v) = entry.map_err(err)?;
        if !f(k.value(), v.value()) {
            break;
        }
    }
    Ok(())
}

fn read_only() -> Error {
    err("a write in a read-only transaction")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    fn get(t: &mut RedbTxn<'_>, k: &[u8]) -> Option<Vec<u8>> {
        t.get(k, |v| v.to_vec()).unwrap()
    }

    #[test]
    fn operations() {
        conformance::operations::<Redb>();
        conformance::memory_counted::<Redb>(false);
    }

    #[test]
    fn levels() {
        conformance::levels::<Redb>();
    }

    #[test]
    fn increments_never_abort() {
        assert_eq!(conformance::increments::<Redb>(4, 200), 0);
    }

    #[test]
    fn a_second_writer_waits_for_the_first() {
        let db = Redb::open(&PeerOptions::default()).unwrap();
        let mut w1 = db.begin(Isolation::Serializable, false).unwrap();
        w1.put(b"k", b"1").unwrap();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                let mut w2 = db.begin(Isolation::Serializable, false).unwrap();
                // Begun only after the first writer committed: sees its write.
                let seen = get(&mut w2, b"k");
                w2.put(b"k", b"2").unwrap();
                w2.commit().unwrap();
                done.store(true, Ordering::SeqCst);
                seen
            });
            std::thread::sleep(Duration::from_millis(200));
            assert!(!done.load(Ordering::SeqCst), "the second writer did not wait for the first");
            // A reader neither waits for the writer nor sees its write.
            let mut r = db.begin(Isolation::Serializable, true).unwrap();
            assert_eq!(get(&mut r, b"k"), None);
            w1.commit().unwrap();
            assert_eq!(h.join().unwrap(), Some(b"1".to_vec()));
            // The reader's snapshot still predates both commits.
            assert_eq!(get(&mut r, b"k"), None);
        });
        assert!(done.load(Ordering::SeqCst));
        let mut r = db.begin(Isolation::Serializable, true).unwrap();
        assert_eq!(get(&mut r, b"k"), Some(b"2".to_vec()));
    }

    #[test]
    fn a_dropped_writer_rolls_back_and_lets_the_next_begin() {
        let db = Redb::open(&PeerOptions::default()).unwrap();
        let mut w = db.begin(Isolation::Serializable, false).unwrap();
        w.put(b"k", b"never").unwrap();
        drop(w);
        let mut w = db.begin(Isolation::Serializable, false).unwrap();
        assert_eq!(get(&mut w, b"k"), None);
        w.put(b"a", b"1").unwrap();
        w.put(b"b", b"2").unwrap();
        w.put(b"c", b"3").unwrap();
        w.delete(b"b").unwrap();
        let mut seen = vec![];
        w.scan(b"a", b"z", |k, v| {
            seen.push((k.to_vec(), v.to_vec()));
            true
        })
        .unwrap();
        assert_eq!(seen, [(b"a".to_vec(), b"1".to_vec()), (b"c".to_vec(), b"3".to_vec())]);
        // An empty or reversed range is empty.
        w.scan(b"c", b"a", |_, _| panic!("a key in a reversed range")).unwrap();
        let mut r = db.begin(Isolation::Serializable, true).unwrap();
        assert!(r.put(b"k", b"v").unwrap_err().to_string().contains("redb"));
        w.commit().unwrap();
    }

    #[test]
    fn periodic_immediate_commits_in_memory() {
        let db = Redb::open(&PeerOptions::default()).unwrap();
        for i in 0..IMMEDIATE_EVERY + 5 {
            let mut w = db.begin(Isolation::Serializable, false).unwrap();
            w.put(b"n", &i.to_be_bytes()).unwrap();
            w.commit().unwrap();
        }
        let mut r = db.begin(Isolation::Serializable, true).unwrap();
        assert_eq!(get(&mut r, b"n"), Some((IMMEDIATE_EVERY + 4).to_be_bytes().to_vec()));
    }

    #[test]
    fn sync_commits_to_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let opts =
            PeerOptions { durability: Durability::Sync, dir: Some(dir.path().to_path_buf()), ..PeerOptions::default() };
        {
            let db = Redb::open(&opts).unwrap();
            assert!(db.describe().contains("fsync per commit"), "{}", db.describe());
            let mut w = db.begin(Isolation::Serializable, false).unwrap();
            w.put(b"k", b"v").unwrap();
            w.commit().unwrap();
            let mut r = db.begin(Isolation::Serializable, true).unwrap();
            assert_eq!(get(&mut r, b"k"), Some(b"v".to_vec()));
        }
        // The commit is in the file.
        let path = dir.path().join("redb.db");
        {
            let db = Database::open(&path).unwrap();
            let t = db.begin_read().unwrap().open_table(KV).unwrap();
            assert_eq!(t.get(&b"k"[..]).unwrap().unwrap().value(), b"v");
        }
        // A store opens empty: an existing database is refused, not reused.
        let e = Redb::open(&opts).err().unwrap().to_string();
        assert!(e.contains("redb") && e.contains("already exists"), "{e}");
    }

    #[test]
    fn an_unwritable_directory_is_an_error_naming_redb() {
        let opts = PeerOptions {
            durability: Durability::Sync,
            dir: Some("/proc/nonexistent".into()),
            ..PeerOptions::default()
        };
        let e = Redb::open(&opts).err().unwrap().to_string();
        assert!(e.contains("redb") && e.contains("/proc/nonexistent"), "{e}");
    }

    #[test]
    fn in_memory_describes_itself() {
        let db = Redb::open(&PeerOptions::default()).unwrap();
        let d = db.describe();
        assert!(d.starts_with("redb 5.0.0, in memory (InMemoryBackend)"), "{d}");
    }
}
