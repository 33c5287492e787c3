//! RocksDB's transactions: optimistic ([`Optimistic`], an
//! `OptimisticTransactionDB`) and pessimistic ([`Pessimistic`], a
//! `TransactionDB`).
//!
//! [RocksDB](https://rocksdb.org) is a log-structured merge tree: writes go
//! to an in-memory skip list (the memtable), which is flushed to sorted
//! files when full and compacted in the background. Its two transactional
//! front ends share that engine and differ in concurrency control:
//!
//! - **Optimistic** transactions take no locks. Each write (and each
//!   `GetForUpdate`) records its key; at commit, RocksDB checks under a
//!   short per-key-bucket lock that no recorded key was written by anyone
//!   else after the transaction's snapshot, and fails the commit with
//!   `Busy` otherwise (`TryAgain` where the memtables no longer reach back
//!   to the snapshot). Both are reported as
//!   [`AbortReason::WriteConflict`].
//! - **Pessimistic** transactions lock each key they write (and each key
//!   read with `GetForUpdate`) when they touch it, hold the locks until
//!   commit or rollback, and wait for a lock held by another transaction.
//!   A wait longer than the lock timeout fails with `TimedOut`
//!   ([`AbortReason::LockTimeout`]); a wait that would close a cycle fails
//!   at once with `Busy: Deadlock` ([`AbortReason::Deadlock`]); a key
//!   written by another transaction after this one's snapshot fails with
//!   `Busy` ([`AbortReason::WriteConflict`]).
//!
//! # Isolation levels
//!
//! RocksDB does not name isolation levels; this adapter builds them from
//! its documented parts. **RocksDB offers no serializable level**: its
//! transactions lock (pessimistic) or validate (optimistic) the point keys
//! they read or write, and nothing else, so a key that a concurrent
//! transaction inserts into a range a scan has read is a phantom that
//! neither front end detects. Multiverse therefore runs RocksDB at
//! [`Isolation::RepeatableRead`], its strongest level (snapshot reads plus
//! read validation, no phantom protection), and refuses
//! `--isolation serializable` with an error naming the levels each front
//! end offers (`snapshot, repeatable-read` optimistic,
//! `read-committed, snapshot, repeatable-read` pessimistic). The levels:
//!
//! - [`Isolation::ReadCommitted`] (pessimistic only): a transaction without
//!   a snapshot. Every read sees the latest committed value; writes lock
//!   their keys, so a write never conflicts with a committed one, it waits
//!   for an active one. The optimistic front end is offered with a
//!   snapshot only: without one it validates each key against the moment
//!   the transaction first touched it, a level between the two that this
//!   project's levels do not name.
//! - [`Isolation::Snapshot`]: the transaction is begun with a snapshot
//!   (`set_snapshot(true)`) and every read and scan reads at it. Write-write
//!   conflicts are checked against the snapshot (first updater wins, or
//!   first committer wins for the optimistic front end): snapshot
//!   isolation.
//! - [`Isolation::RepeatableRead`]: RocksDB's documented recipe for its
//!   strongest isolation: snapshot isolation, and every read done with
//!   `GetForUpdate`, so that a key read is locked (pessimistic) or
//!   validated at commit (optimistic) as if it were written. A scan reads
//!   at the snapshot and then reads each key it returns with
//!   `GetForUpdate`. RocksDB locks and validates point keys only: a key
//!   inserted into a scanned range by a concurrent transaction is not
//!   detected (no phantom protection), which is why this is repeatable
//!   read and not serializable. `GetForUpdate` takes exclusive locks,
//!   RocksDB's default (shared locks would let readers of a key proceed
//!   together, but would turn every read-then-write of a hot key into a
//!   lock upgrade that deadlocks).
//!
//! **Read-only transactions** (the `read_only` flag of
//! [`KvStore::begin`]) are transactions too, but take no locks and record
//! no keys at any level: at snapshot and repeatable read they read at their
//! snapshot (where the writers run at repeatable read, their commits are
//! ordered by the locks or the commit-time validation, so a snapshot is a
//! serializable view of them, phantoms aside), at read committed they read
//! the latest values. Their commit only releases them (there is nothing to
//! write or validate), and they refuse writes.
//!
//! # Configuration
//!
//! - [`Durability::None`]: the default (POSIX) env with the store's files
//!   in a new directory under `/dev/shm` (a tmpfs, so the sorted files live
//!   in memory; removed when the store is dropped), or in the directory
//!   given, with the write-ahead log disabled
//!   (`WriteOptions::disable_wal`): a commit goes to the memtable only,
//!   which is what an in-memory RocksDB user runs. Plain files on tmpfs,
//!   not RocksDB's in-memory env (`Env::mem_env`), because they measured
//!   faster: a bulk load took 15.7-16.7 s against 17.6-19.2 s with the mem
//!   env, and a read-write run 34 s against 38 s. Both front ends accept a
//!   disabled log, since commits here are one phase (no `Prepare`).
//! - [`Durability::Sync`]: the store's files in the given directory, the
//!   write-ahead log on, and `WriteOptions::set_sync(true)`: each commit is
//!   in the log and `fsync`ed before it returns. Concurrent commits share
//!   one log write and one sync (RocksDB's write groups: group commit).
//!   The directory must not hold a store already (`error_if_exists`).
//! - Both, for speed:
//!   - memtables of [`WRITE_BUFFER_BYTES`] (RocksDB's default is 64 MiB),
//!     up to [`WRITE_BUFFERS`] of them, so that a benchmark's data stays in
//!     the memtables longer and flushes and compactions are rarer;
//!   - a bloom filter over whole keys in the memtable (a tenth of its size),
//!     so that a lookup of an absent key (every insert checks that its key
//!     is new) skips the skip list;
//!   - in the sorted files: an LRU block cache of [`BLOCK_CACHE_BYTES`]
//!     (the default is 8 MiB), bloom filters of 10 bits per key (about
//!     1% false positives; the default is none), and hash indexes inside
//!     data blocks (`BinaryAndHash`, as RocksDB's own point-lookup
//!     preset does);
//!   - no compression (the default is Snappy): the data is in memory, and
//!     compressing costs CPU on every flush and block read;
//!   - [`BACKGROUND_JOBS`] background flush and compaction jobs (the
//!     default is 2).
//! - Pessimistic only: a lock timeout of [`LOCK_TIMEOUT_MS`] ms unless
//!   [`PeerOptions::lock_timeout`] says otherwise (RocksDB's
//!   default is 1 s; 100 ms is hundreds of times the length of an
//!   in-memory transaction, so a wait this long is behind a holder that is
//!   stuck or descheduled, and is better retried), deadlock detection on (off by default: without it every
//!   deadlock costs a full timeout), and four lock-table stripes per worker
//!   thread, at least 16 (RocksDB's default is 16; each stripe has its own
//!   mutex).
//!
//! Everything else is RocksDB 7.8's default (level compaction, a skip-list
//! memtable, concurrent memtable writes, optimistic validation in parallel
//! over 2^20 key buckets). The `rocksdb` crate 0.20.1 links the system's
//! RocksDB library (7.8.3 on Debian 12).
//!
//! Values are passed to the caller from RocksDB's pinned slices, without a
//! copy; scans use a raw iterator with an upper bound at the range's end.
//!
//! [`Isolation::ReadCommitted`]: multiverse::Isolation::ReadCommitted
//! [`Isolation::Snapshot`]: multiverse::Isolation::Snapshot
//! [`Isolation::RepeatableRead`]: multiverse::Isolation::RepeatableRead
//! [`AbortReason::WriteConflict`]: multiverse::AbortReason::WriteConflict
//! [`AbortReason::LockTimeout`]: multiverse::AbortReason::LockTimeout
//! [`AbortReason::Deadlock`]: multiverse::AbortReason::Deadlock
//! [`Durability::None`]: crate::Durability::None
//! [`Durability::Sync`]: crate::Durability::Sync

use crate::{conflict, store_dir, store_error, Durability, KvStore, KvTxn, PeerOptions};
use multiverse::{AbortReason, Error, Isolation, Result};
use rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, DataBlockIndexType, ErrorKind, OptimisticTransactionDB,
    OptimisticTransactionOptions, Options, ReadOptions, Transaction, TransactionDB, TransactionDBOptions,
    TransactionOptions, WriteOptions,
};
use std::path::{Path, PathBuf};

/// The crate and library versions, as `describe` gives them.
const VERSION: &str = "rocksdb 0.20.1 (RocksDB 7.8.3)";

/// The size of one memtable: 128 MiB.
pub const WRITE_BUFFER_BYTES: usize = 128 << 20;
/// The most memtables (one active, the others being flushed).
pub const WRITE_BUFFERS: i32 = 4;
/// The block cache of the sorted files: 1 GiB (a limit, not an allocation).
pub const BLOCK_CACHE_BYTES: usize = 1 << 30;
/// Bloom filter bits per key in the sorted files.
pub const BLOOM_BITS_PER_KEY: f64 = 10.0;
/// Background flush and compaction jobs.
pub const BACKGROUND_JOBS: i32 = 4;
/// How long a pessimistic transaction waits for a lock, in milliseconds.
pub const LOCK_TIMEOUT_MS: i64 = 100;

/// What the two front ends share: options, where the files are, and what
/// to keep alive while the database is open.
struct Setup {
    options: Options,
    write: WriteOptions,
    path: PathBuf,
    durability: Durability,
    /// The temporary directory to remove after the database is closed.
    tmp: Option<tempfile::TempDir>,
}

impl Setup {
    fn new(name: &'static str, opts: &PeerOptions) -> Result<Setup> {
        let (path, dir) = store_dir(name, opts)?;
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_error_if_exists(true);
        let mut write = WriteOptions::default();
        match opts.durability {
            // The default env, the files in `path` (a tmpfs directory
            // unless one was given): measured faster than the mem env
            // (module docs).
            Durability::None => write.disable_wal(true),
            Durability::Sync => write.set_sync(true),
        }
        o.set_write_buffer_size(WRITE_BUFFER_BYTES);
        o.set_max_write_buffer_number(WRITE_BUFFERS);
        o.set_memtable_prefix_bloom_ratio(0.1);
        o.set_memtable_whole_key_filtering(true);
        o.set_compression_type(DBCompressionType::None);
        o.set_max_background_jobs(BACKGROUND_JOBS);
        let mut table = BlockBasedOptions::default();
        let cache = Cache::new_lru_cache(BLOCK_CACHE_BYTES)
            .map_err(|e| store_error(name, format!("cannot create the block cache: {e}")))?;
        table.set_block_cache(&cache);
        table.set_bloom_filter(BLOOM_BITS_PER_KEY, false);
        table.set_data_block_index_type(DataBlockIndexType::BinaryAndHash);
        o.set_block_based_table_factory(&table);
        Ok(Setup { options: o, write, path, durability: opts.durability, tmp: dir })
    }

    fn open_error(&self, name: &'static str, e: rocksdb::Error) -> Error {
        store_error(name, format!("cannot open {}: {e}", self.path.display()))
    }

    /// `describe`'s settings common to both front ends.
    fn describe(&self) -> String {
        let place = match self.durability {
            Durability::None => "in memory (files on tmpfs, WAL off)".to_string(),
            Durability::Sync => format!("in {} (WAL synced per commit)", self.path.display()),
        };
        format!(
            "{place}, memtables {} MiB x{WRITE_BUFFERS} with bloom, block cache {} GiB, bloom {BLOOM_BITS_PER_KEY} \
             bits/key, data-block hash index, no compression, {BACKGROUND_JOBS} background jobs",
            WRITE_BUFFER_BYTES >> 20,
            BLOCK_CACHE_BYTES >> 30
        )
    }
}

/// Maps a RocksDB error: conflicts, lock timeouts and deadlocks are
/// aborts the harness retries, everything else an error naming the store.
fn map_error(name: &'static str, e: rocksdb::Error) -> Error {
    let message: &str = e.as_ref();
    match e.kind() {
        ErrorKind::Busy if message.contains("Deadlock") => conflict(AbortReason::Deadlock),
        // The lock table is full (only with `max_num_locks`, not set here):
        // retrying would not help.
        ErrorKind::Busy if message.contains("max_num_locks") => store_error(name, e),
        ErrorKind::Busy | ErrorKind::TryAgain => conflict(AbortReason::WriteConflict),
        ErrorKind::TimedOut => conflict(AbortReason::LockTimeout),
        _ => store_error(name, e),
    }
}

/// RocksDB's optimistic transactions, as a [`KvStore`] (module docs).
pub struct Optimistic {
    db: OptimisticTransactionDB,
    /// Begin with a snapshot (every level this store offers has one).
    snapshot: OptimisticTransactionOptions,
    /// Declared after `db`: dropped (the directory removed) after it.
    setup: Setup,
}

impl KvStore for Optimistic {
    type Tx<'s> = RocksTxn<'s, OptimisticTransactionDB>;

    const NAME: &'static str = "rocksdb-optimistic";
    const LEVELS: &'static [Isolation] = &[Isolation::Snapshot, Isolation::RepeatableRead];

    fn open(opts: &PeerOptions) -> Result<Self> {
        let setup = Setup::new(Self::NAME, opts)?;
        let db =
            OptimisticTransactionDB::open(&setup.options, &setup.path).map_err(|e| setup.open_error(Self::NAME, e))?;
        let mut snapshot = OptimisticTransactionOptions::default();
        snapshot.set_snapshot(true);
        Ok(Optimistic { db, snapshot, setup })
    }

    fn begin(&self, isolation: Isolation, read_only: bool) -> Result<Self::Tx<'_>> {
        let tx = self.db.transaction_opt(&self.setup.write, &self.snapshot);
        Ok(RocksTxn::new(Self::NAME, tx, true, isolation, read_only))
    }

    fn describe(&self) -> String {
        format!("{VERSION}, OptimisticTransactionDB, {}", self.setup.describe())
    }

    fn memory_dir(&self) -> Option<&Path> {
        self.setup.tmp.as_ref().map(|d| d.path())
    }
}

/// RocksDB's pessimistic (locking) transactions, as a [`KvStore`] (module
/// docs).
pub struct Pessimistic {
    db: TransactionDB,
    /// Transactions without a snapshot (read committed).
    latest: TransactionOptions,
    /// Transactions with a snapshot (snapshot isolation and repeatable
    /// read).
    snapshot: TransactionOptions,
    lock_timeout_ms: i64,
    stripes: usize,
    /// Declared after `db`: dropped (the directory removed) after it.
    setup: Setup,
}

impl Pessimistic {
    /// Opens a new, empty store whose transactions wait `lock_timeout_ms`
    /// for a lock ([`KvStore::open`] waits [`PeerOptions::lock_timeout`],
    /// by default [`LOCK_TIMEOUT_MS`]).
    pub fn open_with_lock_timeout(opts: &PeerOptions, lock_timeout_ms: i64) -> Result<Self> {
        let setup = Setup::new(Self::NAME, opts)?;
        let stripes = (4 * opts.threads).max(16);
        let mut db_opts = TransactionDBOptions::default();
        db_opts.set_txn_lock_timeout(lock_timeout_ms);
        db_opts.set_num_stripes(stripes);
        let db =
            TransactionDB::open(&setup.options, &db_opts, &setup.path).map_err(|e| setup.open_error(Self::NAME, e))?;
        let txn_options = |snapshot: bool| {
            let mut t = TransactionOptions::default();
            t.set_snapshot(snapshot);
            t.set_lock_timeout(lock_timeout_ms);
            t.set_deadlock_detect(true);
            t
        };
        Ok(Pessimistic { db, latest: txn_options(false), snapshot: txn_options(true), lock_timeout_ms, stripes, setup })
    }
}

impl KvStore for Pessimistic {
    type Tx<'s> = RocksTxn<'s, TransactionDB>;

    const NAME: &'static str = "rocksdb-pessimistic";
    const LEVELS: &'static [Isolation] = &[Isolation::ReadCommitted, Isolation::Snapshot, Isolation::RepeatableRead];

    fn open(opts: &PeerOptions) -> Result<Self> {
        let ms = opts.lock_timeout.map_or(LOCK_TIMEOUT_MS, |t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX));
        Pessimistic::open_with_lock_timeout(opts, ms)
    }

    fn begin(&self, isolation: Isolation, read_only: bool) -> Result<Self::Tx<'_>> {
        let snapshot = isolation != Isolation::ReadCommitted;
        let options = if snapshot { &self.snapshot } else { &self.latest };
        let tx = self.db.transaction_opt(&self.setup.write, options);
        Ok(RocksTxn::new(Self::NAME, tx, snapshot, isolation, read_only))
    }

    fn describe(&self) -> String {
        format!(
            "{VERSION}, TransactionDB, lock timeout {} ms, deadlock detection on, {} lock stripes, {}",
            self.lock_timeout_ms,
            self.stripes,
            self.setup.describe()
        )
    }

    fn memory_dir(&self) -> Option<&Path> {
        self.setup.tmp.as_ref().map(|d| d.path())
    }
}

/// A transaction of [`Optimistic`] or [`Pessimistic`].
pub struct RocksTxn<'s, D> {
    tx: Transaction<'s, D>,
    /// The point reads' options: the transaction's snapshot, if it has one.
    read: ReadOptions,
    /// Reads at the transaction's snapshot (else the latest values).
    snapshot: bool,
    /// Every read is a `GetForUpdate` (repeatable read, read-write).
    validate: bool,
    read_only: bool,
    name: &'static str,
}

impl<'s, D> RocksTxn<'s, D> {
    fn new(name: &'static str, tx: Transaction<'s, D>, snapshot: bool, isolation: Isolation, read_only: bool) -> Self {
        let mut read = ReadOptions::default();
        if snapshot {
            // The read options keep the transaction's own snapshot (not the
            // wrapper, which only borrows it): valid while `tx` lives.
            read.set_snapshot(&tx.snapshot());
        }
        let validate = isolation == Isolation::RepeatableRead && !read_only;
        RocksTxn { tx, read, snapshot, validate, read_only, name }
    }

    fn err(&self, e: rocksdb::Error) -> Error {
        map_error(self.name, e)
    }

    fn read_only(&self) -> Error {
        store_error(self.name, "a write in a read-only transaction")
    }

    /// Reads `key` with `GetForUpdate`: locks it (pessimistic) or records
    /// it for the commit's validation (optimistic).
    fn read_for_update<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        let v = self.tx.get_pinned_for_update_opt(key, true, &self.read).map_err(|e| self.err(e))?;
        Ok(v.map(|v| f(&v)))
    }
}

impl<'s, D> KvTxn for RocksTxn<'s, D> {
    fn get<R>(&mut self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        if self.validate {
            return self.read_for_update(key, f);
        }
        let v = self.tx.get_pinned_opt(key, &self.read).map_err(|e| self.err(e))?;
        Ok(v.map(|v| f(&v)))
    }

    fn get_for_update<R>(&mut self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        if self.read_only {
            // Nothing will be written: a plain read (module docs).
            return self.get(key, f);
        }
        self.read_for_update(key, f)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.read_only {
            return Err(self.read_only());
        }
        self.tx.put(key, value).map_err(|e| self.err(e))
    }

    fn delete(&mut self, key: &[u8]) -> Result<()> {
        if self.read_only {
            return Err(self.read_only());
        }
        self.tx.delete(key).map_err(|e| self.err(e))
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], mut f: impl FnMut(&[u8], &[u8]) -> bool) -> Result<()> {
        if lo >= hi {
            return Ok(());
        }
        let mut options = ReadOptions::default();
        options.set_iterate_upper_bound(hi);
        if self.snapshot {
            options.set_snapshot(&self.tx.snapshot());
        }
        // The transaction's iterator: its own writes over the snapshot.
        let mut it = self.tx.raw_iterator_opt(options);
        it.seek(lo);
        while let Some((k, v)) = it.item() {
            if self.validate {
                // Lock or record the key (module docs); the value read at
                // the snapshot is the one the commit validates.
                self.read_for_update(k, |_| ())?;
            }
            if !f(k, v) {
                return Ok(());
            }
            it.next();
        }
        it.status().map_err(|e| self.err(e))
    }

    fn commit(self) -> Result<()> {
        if self.read_only {
            // Nothing to write or validate: dropping `tx` releases it.
            return Ok(());
        }
        let name = self.name;
        self.tx.commit().map_err(|e| map_error(name, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance;
    use std::time::{Duration, Instant};

    fn is_abort(r: &Result<()>, reason: AbortReason) -> bool {
        matches!(r, Err(Error::Aborted(a)) if *a == reason && a.is_transient())
    }

    #[test]
    fn optimistic_conforms() {
        conformance::operations::<Optimistic>();
        conformance::memory_counted::<Optimistic>(true);
        conformance::levels::<Optimistic>();
        conformance::increments::<Optimistic>(4, 200);
    }

    #[test]
    fn pessimistic_conforms() {
        conformance::operations::<Pessimistic>();
        conformance::memory_counted::<Pessimistic>(true);
        conformance::levels::<Pessimistic>();
        conformance::increments::<Pessimistic>(4, 200);
    }

    #[test]
    fn describes_itself() {
        let o = Optimistic::open(&PeerOptions::default()).unwrap();
        assert!(o.describe().contains("rocksdb 0.20.1 (RocksDB 7.8.3)"), "{}", o.describe());
        assert!(o.describe().contains("in memory (files on tmpfs, WAL off)"), "{}", o.describe());
        let p = Pessimistic::open(&PeerOptions::default()).unwrap();
        assert!(p.describe().contains("lock timeout 100 ms"), "{}", p.describe());
    }

    /// RocksDB has no serializable level: repeatable read is the strongest
    /// offered, and serializable is refused naming the levels offered.
    #[test]
    fn serializable_is_refused() {
        assert_eq!(Optimistic::LEVELS.last(), Some(&Isolation::RepeatableRead));
        assert_eq!(Pessimistic::LEVELS.last(), Some(&Isolation::RepeatableRead));
        let o = crate::Peer::<Optimistic>::open(&PeerOptions::default()).unwrap();
        let e = o.check_level(Isolation::Serializable).err().unwrap().to_string();
        assert!(e.contains("rocksdb-optimistic") && e.contains("it offers snapshot, repeatable-read"), "{e}");
        let p = crate::Peer::<Pessimistic>::open(&PeerOptions::default()).unwrap();
        let e = p.check_level(Isolation::Serializable).err().unwrap().to_string();
        assert!(e.contains("it offers read-committed, snapshot, repeatable-read"), "{e}");
    }

    /// Without durability the store's files are plain files in its
    /// directory (a tmpfs one by default), with no write-ahead log written.
    #[test]
    fn no_durability_keeps_files_in_the_store_directory() {
        let s = Optimistic::open(&PeerOptions::default()).unwrap();
        let dir = s.setup.path.clone();
        assert!(dir.starts_with("/dev/shm"), "{}", dir.display());
        let mut t = s.begin(Isolation::Snapshot, false).unwrap();
        t.put(b"k", b"v").unwrap();
        t.commit().unwrap();
        assert!(dir.join("CURRENT").is_file(), "{}", dir.display());
        let logs: u64 = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
            .map(|e| e.metadata().unwrap().len())
            .sum();
        assert_eq!(logs, 0, "the WAL is off");
        drop(s);
        assert!(!dir.exists(), "{} is removed with the store", dir.display());
    }

    #[test]
    fn optimistic_second_committer_aborts() {
        let s = Optimistic::open(&PeerOptions::default()).unwrap();
        for level in Optimistic::LEVELS {
            let mut a = s.begin(*level, false).unwrap();
            let mut b = s.begin(*level, false).unwrap();
            a.put(b"k", b"a").unwrap();
            b.put(b"k", b"b").unwrap();
            a.commit().unwrap();
            let r = b.commit();
            assert!(is_abort(&r, AbortReason::WriteConflict), "{level:?}: {r:?}");
        }
        // A read at repeatable read is validated too: a reads k, b writes
        // it and commits first, so a (which wrote another key) aborts.
        let mut a = s.begin(Isolation::RepeatableRead, false).unwrap();
        assert_eq!(a.get(b"k", |v| v.to_vec()).unwrap(), Some(b"a".to_vec()));
        a.put(b"other", b"x").unwrap();
        let mut b = s.begin(Isolation::Snapshot, false).unwrap();
        b.put(b"k", b"c").unwrap();
        b.commit().unwrap();
        assert!(is_abort(&a.commit(), AbortReason::WriteConflict));
        // At snapshot isolation the same interleaving commits (write skew
        // is allowed).
        let mut a = s.begin(Isolation::Snapshot, false).unwrap();
        a.get(b"k", |_| ()).unwrap();
        a.put(b"other", b"x").unwrap();
        let mut b = s.begin(Isolation::Snapshot, false).unwrap();
        b.put(b"k", b"d").unwrap();
        b.commit().unwrap();
        a.commit().unwrap();
    }

    #[test]
    fn pessimistic_lock_waits_time_out_then_conflict() {
        let s = Pessimistic::open_with_lock_timeout(&PeerOptions::default(), 50).unwrap();
        let mut a = s.begin(Isolation::Snapshot, false).unwrap();
        let mut b = s.begin(Isolation::Snapshot, false).unwrap();
        a.put(b"k", b"a").unwrap();
        // b waits for a's lock, for the lock timeout.
        let t = Instant::now();
        assert!(is_abort(&b.put(b"k", b"b"), AbortReason::LockTimeout));
        assert!(t.elapsed() >= Duration::from_millis(40), "{:?}", t.elapsed());
        a.commit().unwrap();
        // The lock is free now, but k changed after b's snapshot: b may not
        // overwrite it (first updater wins).
        assert!(is_abort(&b.put(b"k", b"b"), AbortReason::WriteConflict));
        drop(b);
        // At read committed there is no snapshot: the write waits, then goes.
        let mut a = s.begin(Isolation::ReadCommitted, false).unwrap();
        let mut b = s.begin(Isolation::ReadCommitted, false).unwrap();
        a.put(b"k", b"a2").unwrap();
        std::thread::scope(|sc| {
            let h = sc.spawn(move || {
                b.put(b"k", b"b2")?;
                b.commit()
            });
            std::thread::sleep(Duration::from_millis(10));
            a.commit().unwrap();
            h.join().unwrap().unwrap();
        });
        let r = s.begin(Isolation::ReadCommitted, true).unwrap();
        let mut r = r;
        assert_eq!(r.get(b"k", |v| v.to_vec()).unwrap(), Some(b"b2".to_vec()));
    }

    #[test]
    fn pessimistic_deadlocks_are_detected() {
        let s = Pessimistic::open_with_lock_timeout(&PeerOptions::default(), 5000).unwrap();
        let mut a = s.begin(Isolation::Snapshot, false).unwrap();
        let mut b = s.begin(Isolation::Snapshot, false).unwrap();
        a.put(b"x", b"a").unwrap();
        b.put(b"y", b"b").unwrap();
        let t = Instant::now();
        let (ra, rb) = std::thread::scope(|sc| {
            let h = sc.spawn(move || {
                let r = a.put(b"y", b"a");
                drop(a);
                r
            });
            std::thread::sleep(Duration::from_millis(50));
            let r = b.put(b"x", b"b");
            drop(b);
            (h.join().unwrap(), r)
        });
        // One of the two closed the cycle and was refused at once; the
        // other got its lock when the victim rolled back.
        assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
        let deadlocks = [&ra, &rb].iter().filter(|r| matches!(r, Err(Error::Aborted(AbortReason::Deadlock)))).count();
        assert_eq!(deadlocks, 1, "{ra:?} {rb:?}");
        assert!(ra.is_ok() || rb.is_ok(), "{ra:?} {rb:?}");
    }

    #[test]
    fn snapshot_and_read_committed_reads() {
        let s = Pessimistic::open(&PeerOptions::default()).unwrap();
        let mut w = s.begin(Isolation::Snapshot, false).unwrap();
        w.put(b"k", b"1").unwrap();
        w.commit().unwrap();
        let mut snap = s.begin(Isolation::Snapshot, true).unwrap();
        let mut latest = s.begin(Isolation::ReadCommitted, true).unwrap();
        let mut w = s.begin(Isolation::Snapshot, false).unwrap();
        w.put(b"k", b"2").unwrap();
        w.put(b"l", b"2").unwrap();
        w.commit().unwrap();
        assert_eq!(snap.get(b"k", |v| v.to_vec()).unwrap(), Some(b"1".to_vec()));
        let mut seen = vec![];
        snap.scan(b"a", b"z", |k, v| {
            seen.push((k.to_vec(), v.to_vec()));
            true
        })
        .unwrap();
        assert_eq!(seen, [(b"k".to_vec(), b"1".to_vec())]);
        assert_eq!(latest.get(b"k", |v| v.to_vec()).unwrap(), Some(b"2".to_vec()));
        assert!(snap.put(b"k", b"3").is_err());
        snap.commit().unwrap();
        latest.commit().unwrap();
    }

    #[test]
    fn sync_commits_reach_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let opts = PeerOptions {
            durability: Durability::Sync,
            dir: Some(dir.path().to_path_buf()),
            threads: 1,
            ..PeerOptions::default()
        };
        let shown = dir.path().display().to_string();
        {
            let s = Pessimistic::open(&opts).unwrap();
            assert!(s.describe().contains("WAL synced per commit"), "{}", s.describe());
            let mut t = s.begin(Isolation::RepeatableRead, false).unwrap();
            t.put(b"k", b"v").unwrap();
            t.commit().unwrap();
            // A second store may not open over the first (RocksDB's lock file).
            let e = Optimistic::open(&opts).err().unwrap().to_string();
            assert!(e.contains("rocksdb-optimistic") && e.contains(&shown), "{e}");
        }
        // Nor over a closed one: a store opens empty.
        let e = Optimistic::open(&opts).err().unwrap().to_string();
        assert!(e.contains("rocksdb-optimistic") && e.contains(&shown) && e.contains("exists"), "{e}");
        {
            // Opened again (as a plain database), the commit is there.
            let db = rocksdb::DB::open(&Options::default(), dir.path()).unwrap();
            assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
        }
        let other = tempfile::tempdir().unwrap();
        let opts = PeerOptions { dir: Some(other.path().to_path_buf()), ..opts };
        let s = Optimistic::open(&opts).unwrap();
        let mut t = s.begin(Isolation::Snapshot, false).unwrap();
        t.put(b"k", b"v").unwrap();
        t.commit().unwrap();
    }

    /// A repeatable-read scan reads each key it returns for update: a key
    /// written after the scan by another transaction aborts the scanner
    /// (optimistic) or waits for it (pessimistic).
    #[test]
    fn repeatable_read_scans_validate_their_keys() {
        fn scan_keys<T: KvTxn>(t: &mut T) -> Vec<Vec<u8>> {
            let mut out = vec![];
            t.scan(b"a", b"c", |k, _| {
                out.push(k.to_vec());
                true
            })
            .unwrap();
            out
        }
        let o = Optimistic::open(&PeerOptions::default()).unwrap();
        let mut w = o.begin(Isolation::Snapshot, false).unwrap();
        w.put(b"a1", b"1").unwrap();
        w.put(b"b1", b"1").unwrap();
        w.put(b"c1", b"1").unwrap();
        w.commit().unwrap();
        let mut a = o.begin(Isolation::RepeatableRead, false).unwrap();
        assert_eq!(scan_keys(&mut a), [b"a1".to_vec(), b"b1".to_vec()]);
        a.put(b"z", b"sum").unwrap();
        let mut b = o.begin(Isolation::Snapshot, false).unwrap();
        b.put(b"b1", b"2").unwrap();
        b.commit().unwrap();
        assert!(is_abort(&a.commit(), AbortReason::WriteConflict));

        let p = Pessimistic::open_with_lock_timeout(&PeerOptions::default(), 20).unwrap();
        let mut w = p.begin(Isolation::Snapshot, false).unwrap();
        w.put(b"a1", b"1").unwrap();
        w.put(b"b1", b"1").unwrap();
        w.commit().unwrap();
        let mut a = p.begin(Isolation::RepeatableRead, false).unwrap();
        assert_eq!(scan_keys(&mut a), [b"a1".to_vec(), b"b1".to_vec()]);
        let mut b = p.begin(Isolation::ReadCommitted, false).unwrap();
        assert!(is_abort(&b.put(b"b1", b"2"), AbortReason::LockTimeout));
        // Phantoms are not detected: a new key in the range goes in.
        b.put(b"a2", b"2").unwrap();
        b.commit().unwrap();
        a.commit().unwrap();
    }

    #[test]
    fn unwritable_directory_names_the_store() {
        let opts = PeerOptions {
            durability: Durability::Sync,
            dir: Some("/proc/nonexistent".into()),
            ..PeerOptions::default()
        };
        let e = Optimistic::open(&opts).err().unwrap().to_string();
        assert!(e.contains("rocksdb-optimistic") && e.contains("/proc/nonexistent"), "{e}");
        let e = Pessimistic::open(&opts).err().unwrap().to_string();
        assert!(e.contains("rocksdb-pessimistic") && e.contains("/proc/nonexistent"), "{e}");
    }
}
