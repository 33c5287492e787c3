//! SQLite, through rusqlite with SQLite's own sources compiled in.
//!
//! SQLite offers one isolation level, **serializable**: one writer at a
//! time (a write transaction holds the database's single write lock from
//! its begin to its end), and readers that each read one snapshot of the
//! committed state, which the write-ahead log (WAL) keeps for them while
//! writers go on. Every history is therefore equivalent to the writers'
//! serial order, with each reader placed where its snapshot was taken.
//!
//! The store is one table, `kv (k BLOB PRIMARY KEY, v BLOB NOT NULL)
//! WITHOUT ROWID`: a B-tree ordered by key, holding the value next to its
//! key (a table with a rowid would need a second B-tree for the key).
//!
//! How it is opened, and why:
//!
//! - **A file in a tmpfs, not `:memory:`.** With [`Durability::None`] the
//!   database is the file `kv.sqlite` in a new directory under `/dev/shm`,
//!   removed when the store is dropped. Each `:memory:` connection is its
//!   own database; connections can share one only through SQLite's shared
//!   cache, which locks whole tables (so that a reader and a writer block
//!   each other, and a conflict surfaces as `SQLITE_LOCKED`), or through
//!   the `memdb` VFS, which cannot hold a write-ahead log. A tmpfs
//!   file keeps the data in memory and gets the WAL, where readers never
//!   wait for the writer. With [`Durability::Sync`], the file is in the
//!   directory given.
//! - **`journal_mode=WAL`**: readers read their snapshot while one writer
//!   appends to the log; a commit is one append to the log.
//! - **`synchronous=OFF`** without durability (nothing is ever synced: the
//!   files are in memory anyway), **`synchronous=FULL`** with it: in WAL
//!   mode, FULL syncs the log at every commit, so a commit that returned
//!   survives a power failure (NORMAL would sync only at checkpoints).
//! - **`cache_size`** of 128 MiB per connection (SQLite's default is 2 MB).
//!   A connection's page cache is its own, and is emptied whenever it
//!   begins a transaction after another connection committed, so it helps
//!   read-mostly work most; memory is taken only as pages are read.
//! - **`mmap_size`** at the largest the bundled build allows (2047 MiB): pages
//!   of the database file are read in place from a memory map instead of
//!   being copied (pages still in the log are read from the log).
//! - **`temp_store=MEMORY`**: temporary tables and sorts in memory (the
//!   statements here need neither; set for completeness).
//! - **One connection per thread**: a connection is used by one thread at a
//!   time, so transactions take one from a pool when they begin and give it
//!   back when they end; the pool grows to the number of transactions open
//!   at once. Statements are prepared once per connection and cached.
//! - **Writers begin with `BEGIN IMMEDIATE`**, taking the write lock at
//!   their begin, so that a writer never fails halfway, when it first
//!   writes, because another committed since its snapshot. Read-only
//!   transactions begin with a plain (deferred) `BEGIN` and take their
//!   snapshot at their first read.
//! - **`busy_timeout` of 5 s** (or [`PeerOptions::lock_timeout`]): a writer that finds the write lock taken
//!   waits for it, in SQLite's own way: it sleeps and retries, for 1, 2, 5,
//!   10 ms and longer, up to the timeout. A lock still busy then
//!   (`SQLITE_BUSY`, or `SQLITE_BUSY_SNAPSHOT` when a read-only transaction
//!   writes after others have), and a table lock refused (`SQLITE_LOCKED`),
//!   are aborts with [`AbortReason::LockTimeout`], which the harness
//!   retries. (Queueing writers on a mutex in front of `BEGIN IMMEDIATE`
//!   instead was slower: while the others sleep, the thread holding the
//!   lock runs its transactions back to back, without hand-overs.)

use crate::{conflict, store_dir, store_error, Durability, KvStore, KvTxn, PeerOptions};
use multiverse::{AbortReason, Error, Isolation, Result};
use parking_lot::Mutex;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The database file, in the store's directory.
const FILE: &str = "kv.sqlite";
/// The rusqlite this crate pins (Cargo.toml); rusqlite does not report its own.
const RUSQLITE: &str = "0.43.0";
/// How long a writer waits for the write lock before it aborts.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Each connection's page cache, in KiB.
const CACHE_KIB: i64 = 128 * 1024;
/// The memory map's size: the bundled build's largest (`SQLITE_MAX_MMAP_SIZE`).
const MMAP_BYTES: i64 = 0x7fff_0000;

const CREATE: &str = "CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID";
const GET: &str = "SELECT v FROM kv WHERE k = ?1";
const PUT: &str = "INSERT OR REPLACE INTO kv (k, v) VALUES (?1, ?2)";
const DELETE: &str = "DELETE FROM kv WHERE k = ?1";
const SCAN: &str = "SELECT k, v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k";

/// SQLite in one file, one connection per thread (module docs).
pub struct Sqlite {
    /// Idle connections; declared before `_dir` so that they close before
    /// the directory is removed.
    pool: Mutex<Vec<Connection>>,
    path: PathBuf,
    durability: Durability,
    busy_timeout: Duration,
    /// Whether the directory is the store's own, in `/dev/shm`.
    tmpfs: bool,
    tmp: Option<tempfile::TempDir>,
}

/// SQLite's busy and locked errors are aborts; others name the store.
fn sql_error(e: rusqlite::Error) -> Error {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => conflict(AbortReason::LockTimeout),
        _ => store_error("sqlite", e),
    }
}

impl Sqlite {
    /// [`KvStore::open`] with a writer's wait for the lock of `busy_timeout`.
    fn open_with(opts: &PeerOptions, busy_timeout: Duration) -> Result<Sqlite> {
        let (dir, tmp) = store_dir("sqlite", opts)?;
        let path = dir.join(FILE);
        if path.exists() {
            return Err(store_error(
                "sqlite",
                format!(
                    "{} already exists (a store opens new and empty: remove it or choose another directory)",
                    path.display()
                ),
            ));
        }
        let store = Sqlite {
            pool: Mutex::new(Vec::with_capacity(opts.threads.max(1))),
            path,
            durability: opts.durability,
            busy_timeout,
            tmpfs: tmp.is_some(),
            tmp,
        };
        let conn = store.connect()?;
        let mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)).map_err(|e| store.open_error(e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(store.open_error(format!("journal_mode is {mode}, not wal")));
        }
        conn.execute_batch(CREATE).map_err(|e| store.open_error(e))?;
        store.pool.lock().push(conn);
        Ok(store)
    }

    fn open_error(&self, e: impl std::fmt::Display) -> Error {
        store_error("sqlite", format!("cannot open {}: {e}", self.path.display()))
    }

    /// A new connection, configured (module docs).
    fn connect(&self) -> Result<Connection> {
        let conn = Connection::open_with_flags(&self.path, OpenFlags::default()).map_err(|e| self.open_error(e))?;
        let sync = match self.durability {
            Durability::None => "OFF",
            Durability::Sync => "FULL",
        };
        conn.busy_timeout(self.busy_timeout)
            .and_then(|()| {
                conn.execute_batch(&format!(
                    "PRAGMA synchronous = {sync}; PRAGMA cache_size = -{CACHE_KIB}; \
                     PRAGMA temp_store = MEMORY; PRAGMA mmap_size = {MMAP_BYTES};"
                ))
            })
            .map_err(|e| self.open_error(e))?;
        Ok(conn)
    }
}

impl KvStore for Sqlite {
    type Tx<'s> = SqliteTxn<'s>;

    const NAME: &'static str = "sqlite";
    const LEVELS: &'static [Isolation] = &[Isolation::Serializable];

    fn open(opts: &PeerOptions) -> Result<Self> {
        Sqlite::open_with(opts, opts.lock_timeout.unwrap_or(BUSY_TIMEOUT))
    }

    fn begin(&self, isolation: Isolation, read_only: bool) -> Result<SqliteTxn<'_>> {
        debug_assert!(Self::LEVELS.contains(&isolation));
        // Taken out before connecting: the pool is not locked meanwhile.
        let idle = self.pool.lock().pop();
        let conn = match idle {
            Some(c) => c,
            None => self.connect()?,
        };
        // On an error, dropping the transaction gives the connection back.
        let tx = SqliteTxn { store: self, conn: Some(conn) };
        let sql = if read_only { "BEGIN" } else { "BEGIN IMMEDIATE" };
        tx.conn().prepare_cached(sql).and_then(|mut s| s.execute([])).map_err(sql_error)?;
        Ok(tx)
    }

    fn memory_dir(&self) -> Option<&Path> {
        self.tmp.as_ref().map(|d| d.path())
    }

    fn describe(&self) -> String {
        let dir = self.path.parent().unwrap_or(&self.path).display();
        let place = if self.tmpfs { format!("on tmpfs ({dir})") } else { format!("in {dir}") };
        let sync = match self.durability {
            Durability::None => "synchronous=OFF",
            Durability::Sync => "synchronous=FULL (fsync per commit)",
        };
        format!(
            "SQLite {} (rusqlite {RUSQLITE}, bundled), WAL {place}, {sync}, cache_size={} MiB per connection, \
             mmap_size={} MiB, temp_store=MEMORY, busy_timeout={} ms, one connection per thread, \
             writers BEGIN IMMEDIATE, readers deferred",
            rusqlite::version(),
            CACHE_KIB / 1024,
            MMAP_BYTES >> 20,
            self.busy_timeout.as_millis(),
        )
    }
}

/// A transaction of [`Sqlite`]: one connection of the pool, inside
/// `BEGIN` … `COMMIT`; dropped uncommitted, it rolls back.
pub struct SqliteTxn<'s> {
    store: &'s Sqlite,
    /// Taken from the pool at the begin, given back on drop.
    conn: Option<Connection>,
}

impl SqliteTxn<'_> {
    fn conn(&self) -> &Connection {
        self.conn.as_ref().expect("a transaction holds its connection until it is dropped")
    }
}

impl KvTxn for SqliteTxn<'_> {
    fn get<R>(&mut self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        let conn = self.conn();
        let read = || -> rusqlite::Result<Option<R>> {
            let mut stmt = conn.prepare_cached(GET)?;
            let mut rows = stmt.query([key])?;
            match rows.next()? {
                // The value in place, in SQLite's row buffer.
                Some(row) => Ok(Some(f(row.get_ref(0)?.as_blob()?))),
                None => Ok(None),
            }
        };
        read().map_err(sql_error)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let conn = self.conn();
        conn.prepare_cached(PUT).and_then(|mut s| s.execute([key, value])).map(drop).map_err(sql_error)
    }

    fn delete(&mut self, key: &[u8]) -> Result<()> {
        let conn = self.conn();
        conn.prepare_cached(DELETE).and_then(|mut s| s.execute([key])).map(drop).map_err(sql_error)
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], mut f: impl FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
        let conn = self.conn();
        let mut read = || -> rusqlite::Result<()> {
            let mut stmt = conn.prepare_cached(SCAN)?;
            let mut rows = stmt.query([lo, hi])?;
            while let Some(row) = rows.next()? {
                if !f(row.get_ref(0)?.as_blob()?, row.get_ref(1)?.as_blob()?) {
                    break;
                }
            }
            Ok(())
        };
        read().map_err(sql_error)
    }

    fn commit(self) -> Result<()> {
        // A commit that fails leaves the transaction open: dropping it rolls back.
        self.conn().prepare_cached("COMMIT").and_then(|mut s| s.execute([])).map(drop).map_err(sql_error)
    }
}

impl Drop for SqliteTxn<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        if !conn.is_autocommit() && conn.prepare_cached("ROLLBACK").and_then(|mut s| s.execute([])).is_err() {
            // Not reused: closing the connection rolls its transaction back.
            return;
        }
        self.store.pool.lock().push(conn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance;
    use std::time::Instant;

    #[test]
    fn operations() {
        conformance::operations::<Sqlite>();
        conformance::memory_counted::<Sqlite>(true);
    }

    #[test]
    fn levels() {
        conformance::levels::<Sqlite>();
        assert_eq!(Sqlite::LEVELS, [Isolation::Serializable]);
    }

    #[test]
    fn increments() {
        conformance::increments::<Sqlite>(4, 200);
    }

    fn count(s: &Sqlite, key: &[u8]) -> Option<u64> {
        let mut x = s.begin(Isolation::Serializable, true).unwrap();
        x.get(key, |v| u64::from_be_bytes(v.try_into().unwrap())).unwrap()
    }

    /// A second writer waits for the first to end, then sees its write; a
    /// reader meanwhile reads the last committed state without waiting.
    #[test]
    fn a_second_writer_waits_for_the_first() {
        let s = Sqlite::open(&PeerOptions::default()).unwrap();
        let mut a = s.begin(Isolation::Serializable, false).unwrap();
        a.put(b"n", &1u64.to_be_bytes()).unwrap();
        std::thread::scope(|scope| {
            let b = scope.spawn(|| {
                let mut b = s.begin(Isolation::Serializable, false).unwrap();
                let begun = Instant::now();
                let n = b.get(b"n", |v| u64::from_be_bytes(v.try_into().unwrap())).unwrap();
                b.put(b"n", &(n.unwrap() + 1).to_be_bytes()).unwrap();
                b.commit().unwrap();
                begun
            });
            std::thread::sleep(Duration::from_millis(200));
            assert_eq!(count(&s, b"n"), None, "a reader does not wait and sees no uncommitted write");
            let committing = Instant::now();
            a.commit().unwrap();
            let begun = b.join().unwrap();
            assert!(begun >= committing, "the second writer began {:?} before the first committed", committing - begun);
        });
        assert_eq!(count(&s, b"n"), Some(2));
    }

    /// With a short busy timeout, a writer that cannot get the lock aborts
    /// with a lock timeout, gives its connection back, and gets through once
    /// the first has committed.
    #[test]
    fn a_writer_past_the_busy_timeout_aborts() {
        let s = Sqlite::open_with(&PeerOptions::default(), Duration::from_millis(50)).unwrap();
        let mut a = s.begin(Isolation::Serializable, false).unwrap();
        a.put(b"n", &1u64.to_be_bytes()).unwrap();
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let start = Instant::now();
                    let e = s.begin(Isolation::Serializable, false).err().expect("the write lock is taken");
                    assert!(matches!(e, Error::Aborted(AbortReason::LockTimeout)), "{e}");
                    assert!(start.elapsed() >= Duration::from_millis(40), "{:?}", start.elapsed());
                })
                .join()
                .unwrap();
        });
        assert_eq!(s.pool.lock().len(), 1, "the aborted writer's connection is back");
        a.commit().unwrap();
        let mut b = s.begin(Isolation::Serializable, false).unwrap();
        b.put(b"n", &2u64.to_be_bytes()).unwrap();
        b.commit().unwrap();
        assert_eq!(count(&s, b"n"), Some(2));
    }

    /// A read-only transaction that writes after another writer committed
    /// since its snapshot cannot upgrade: an abort, not an error.
    #[test]
    fn a_stale_reader_that_writes_aborts() {
        let s = Sqlite::open(&PeerOptions::default()).unwrap();
        let mut r = s.begin(Isolation::Serializable, true).unwrap();
        assert_eq!(r.get(b"n", |_| ()).unwrap(), None);
        let mut w = s.begin(Isolation::Serializable, false).unwrap();
        w.put(b"n", &1u64.to_be_bytes()).unwrap();
        w.commit().unwrap();
        let e = r.put(b"n", &5u64.to_be_bytes()).unwrap_err();
        assert!(matches!(e, Error::Aborted(AbortReason::LockTimeout)), "{e}");
        drop(r);
        assert_eq!(count(&s, b"n"), Some(1));
    }

    #[test]
    fn durable_store_commits_to_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let opts = PeerOptions {
            durability: Durability::Sync,
            dir: Some(dir.path().into()),
            threads: 1,
            ..PeerOptions::default()
        };
        let s = Sqlite::open(&opts).unwrap();
        let d = s.describe();
        assert!(d.contains("synchronous=FULL") && d.contains(&dir.path().display().to_string()), "{d}");
        let mut x = s.begin(Isolation::Serializable, false).unwrap();
        x.put(b"k", b"v").unwrap();
        x.commit().unwrap();
        {
            let pool = s.pool.lock();
            let c = &pool[0];
            let sync: i64 = c.pragma_query_value(None, "synchronous", |r| r.get(0)).unwrap();
            let mode: String = c.pragma_query_value(None, "journal_mode", |r| r.get(0)).unwrap();
            assert_eq!((sync, mode.as_str()), (2, "wal"));
        }
        drop(s);
        // What was committed is in the file.
        let c = Connection::open(dir.path().join(FILE)).unwrap();
        let v: Vec<u8> = c.query_row("SELECT v FROM kv WHERE k = x'6b'", [], |r| r.get(0)).unwrap();
        assert_eq!(v, b"v");
        // A store opens new: not over an existing one.
        drop(c);
        let e = Sqlite::open(&opts).err().unwrap().to_string();
        assert!(e.contains("sqlite") && e.contains("already exists"), "{e}");
    }

    #[test]
    fn in_memory_store_is_on_tmpfs_and_says_so() {
        let s = Sqlite::open(&PeerOptions::default()).unwrap();
        let d = s.describe();
        assert!(
            d.starts_with(&format!("SQLite {} (rusqlite 0.43.0, bundled), WAL on tmpfs", rusqlite::version())),
            "{d}"
        );
        assert!(d.contains("synchronous=OFF"), "{d}");
        assert!(s.path.starts_with("/dev/shm"), "{}", s.path.display());
        let dir = s.path.parent().unwrap().to_path_buf();
        drop(s);
        assert!(!dir.exists(), "the directory goes with the store");
    }

    #[test]
    fn an_unwritable_directory_is_an_error_naming_the_store() {
        let opts = PeerOptions { dir: Some("/proc/nonexistent".into()), ..PeerOptions::default() };
        let e = Sqlite::open(&opts).err().expect("cannot open in /proc").to_string();
        assert!(e.contains("sqlite") && e.contains("/proc/nonexistent"), "{e}");
    }

    /// Values are passed as they are, the empty one included.
    #[test]
    fn empty_values_and_ordered_scans() {
        let s = Sqlite::open(&PeerOptions::default()).unwrap();
        let mut x = s.begin(Isolation::Serializable, false).unwrap();
        for k in [b"b".as_slice(), b"a\0", b"a", b"c"] {
            x.put(k, &[]).unwrap();
        }
        x.put(b"c", b"3").unwrap();
        x.delete(b"b").unwrap();
        let mut seen = vec![];
        x.scan(b"a", b"d", |k, v| {
            seen.push((k.to_vec(), v.to_vec()));
            true
        })
        .unwrap();
        assert_eq!(seen, [(b"a".to_vec(), vec![]), (b"a\0".to_vec(), vec![]), (b"c".to_vec(), b"3".to_vec())]);
        assert_eq!(x.get(b"a", |v| v.len()).unwrap(), Some(0));
        let mut first = vec![];
        x.scan(b"a", b"d", |k, _| {
            first.push(k.to_vec());
            false
        })
        .unwrap();
        assert_eq!(first, [b"a".to_vec()]);
        x.commit().unwrap();
    }
}
