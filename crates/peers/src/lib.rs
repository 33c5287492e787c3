//! Multiverse's workloads on other embedded transactional stores.
//!
//! A Rust developer who wants a fast serializable in-memory store would
//! otherwise embed SurrealMX, RocksDB's transactions, fjall, redb or SQLite.
//! This crate runs the same workload code (`multiverse-workloads`) on each
//! of them, through the same harness and checks, so that they can be
//! compared side by side with Multiverse's protocols. Each store sits
//! behind its own cargo feature (`surrealmx`, `rocksdb`, `fjall`, `redb`,
//! `sqlite`; `all` is every one).
//!
//! The adapters are thin: a store's own transactions do all concurrency
//! control. An adapter implements [`KvStore`] and [`KvTxn`] (begin at a
//! level, get, put, delete, an ordered scan, commit); [`Peer`] builds the
//! workloads' interface ([`Store`], [`Txn`](multiverse_workloads::Txn)) on top of it once for all
//! stores:
//!
//! - **Tables and indexes are key prefixes** in the store's one ordered key
//!   space: a row of table `t` lives at `t (4 bytes) · 0 · primary key`, an
//!   entry of its secondary index `i` at `t · i · esc(secondary key) ·
//!   primary key`, with an empty value. `esc` doubles every 0x00 byte as
//!   0x00 0xFF and ends with 0x00 0x00: an order-preserving, prefix-free
//!   encoding, so that an index's entries sort by (secondary key, primary
//!   key) and a range of secondary keys is one range of store keys.
//! - **Secondary indexes are maintained by the adapter** in the same
//!   transaction as the row (the store sees ordinary writes), from the
//!   table's [`multiverse::KeyFn`]s.
//! - **Inserts read first** (a duplicate is [`Error::DuplicateKey`]), as do
//!   deletes and updates of tables with secondary indexes (to find the old
//!   entries). An update of a table without secondary indexes is a blind
//!   write, as the stores' own users write: the workloads update only rows
//!   that exist.
//! - **Conflicts are aborts**: each adapter maps its store's conflict,
//!   busy and deadlock errors to [`Error::Aborted`] with the closest
//!   [`AbortReason`], which the harness retries like Multiverse's own.
//!
//! ```
//! use multiverse_peers::{names, Durability, PeerOptions};
//!
//! // Every store the crate knows, compiled in or not.
//! assert!(names().contains(&"surrealmx"));
//! assert_eq!(PeerOptions::default().durability, Durability::None);
//! ```

use multiverse::{AbortReason, Error, IndexId, Isolation, KeyFn, Result, TableId, TableSpec, TxnOptions};
use multiverse_workloads::{run_store_attempts, AbortCounts, Retry, Store, StoreTxn, TxnError, Worker};
use parking_lot::{Mutex, RwLock};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[cfg(feature = "fjall")]
pub mod fjall;
#[cfg(feature = "redb")]
pub mod redb;
#[cfg(feature = "rocksdb")]
pub mod rocks;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "surrealmx")]
pub mod surrealmx;

mod txn;
pub use txn::PeerTxn;

/// What every adapter must do, as tests each adapter's module runs on its store.
#[cfg(test)]
#[allow(dead_code)] // each adapter's tests use these; without one, nothing does
pub(crate) mod conformance;

/// How a store makes its commits durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// In memory only, the store's fastest honest configuration (no log,
    /// or its log on a tmpfs with syncing off).
    #[default]
    None,
    /// Every commit is on disk (fsync, or the store's group commit) before
    /// its commit returns.
    Sync,
}

/// Where and how a store is opened.
#[derive(Clone, Debug, Default)]
pub struct PeerOptions {
    /// In memory, or synced per commit.
    pub durability: Durability,
    /// The directory of a durable store (its files are created there), or
    /// of a file-backed store run in memory (default: a new directory under
    /// `/dev/shm`, removed when the store is dropped).
    pub dir: Option<PathBuf>,
    /// Worker threads that will use the store (a store may size pools by it).
    pub threads: usize,
    /// How long a transaction waits for a lock before it aborts with
    /// [`AbortReason::LockTimeout`], where the store waits for one
    /// (RocksDB's pessimistic transactions, SQLite's writers); `None`: the
    /// adapter's default.
    pub lock_timeout: Option<std::time::Duration>,
}

/// A transactional, ordered key-value store that hosts the workloads
/// through [`Peer`]: implemented once per store, thinly.
pub trait KvStore: Send + Sync + Sized + 'static {
    /// A transaction of the store.
    type Tx<'s>: KvTxn
    where
        Self: 's;

    /// The store's name as `--protocol` takes it.
    const NAME: &'static str;
    /// The isolation levels the store offers, weakest first.
    const LEVELS: &'static [Isolation];

    /// Opens a new, empty store. Errors name the store and the path.
    fn open(opts: &PeerOptions) -> Result<Self>;

    /// Begins a transaction at `isolation` (one of [`KvStore::LEVELS`]);
    /// `read_only` where the transaction will not write.
    fn begin(&self, isolation: Isolation, read_only: bool) -> Result<Self::Tx<'_>>;

    /// The store's version and the settings it was opened with, in one line.
    fn describe(&self) -> String;

    /// The directory of the store's files when they live in memory (the
    /// tmpfs directory [`store_dir`] made for it): they count as the store's
    /// memory ([`Peer::memory_files_bytes`]). `None` for a store held in
    /// the process's own memory or with its files on a disk.
    fn memory_dir(&self) -> Option<&Path> {
        None
    }
}

/// A transaction of a [`KvStore`]. Dropping it uncommitted rolls it back.
pub trait KvTxn {
    /// Passes the value at `key` to `f`, if there is one.
    fn get<R>(&mut self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>>;
    /// [`KvTxn::get`], declaring that the key will be written (a lock or a
    /// conflict check where the store offers one).
    fn get_for_update<R>(&mut self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.get(key, f)
    }
    /// Writes `value` at `key`.
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Removes `key`.
    fn delete(&mut self, key: &[u8]) -> Result<()>;
    /// Calls `f(key, value)` for the keys in `lo..hi`, in order, until it
    /// returns false.
    fn scan(&mut self, lo: &[u8], hi: &[u8], f: impl FnMut(&[u8], &[u8]) -> bool) -> Result<()>;
    /// Commits.
    fn commit(self) -> Result<()>;
}

/// Every store this crate adapts, compiled in or not, as `--protocol`
/// names them.
pub fn names() -> &'static [&'static str] {
    &["surrealmx", "rocksdb-optimistic", "rocksdb-pessimistic", "fjall", "redb", "sqlite"]
}

/// The cargo feature that compiles the store `name` in.
pub fn feature_of(name: &str) -> Option<&'static str> {
    Some(match name {
        "surrealmx" => "surrealmx",
        "rocksdb-optimistic" | "rocksdb-pessimistic" => "rocksdb",
        "fjall" => "fjall",
        "redb" => "redb",
        "sqlite" => "sqlite",
        _ => return None,
    })
}

/// What to do with a store once it is open: a generic function over the
/// store's type (a closure cannot be generic), called by [`with_peer`].
pub trait PeerFn {
    /// The result.
    type Output;
    /// Runs on the open store.
    fn call<K: KvStore>(self, peer: &Peer<K>) -> Self::Output;
}

/// What to do with a store once it is open, given the store itself (to
/// keep it beyond the call): [`open_peer`]'s counterpart of [`PeerFn`].
pub trait PeerInto {
    /// The result.
    type Output;
    /// Takes the open store.
    fn take<K: KvStore>(self, peer: Peer<K>) -> Self::Output;
}

/// Opens the store `name` with `opts` and calls `f` on it. Errors: an
/// unknown name, a store whose feature is not compiled in (naming the
/// feature), and the store's own open failure (naming the store and path).
pub fn with_peer<F: PeerFn>(name: &str, opts: &PeerOptions, f: F) -> std::result::Result<F::Output, String> {
    /// Lends the store to a [`PeerFn`].
    struct Lend<F>(F);
    impl<F: PeerFn> PeerInto for Lend<F> {
        type Output = F::Output;
        fn take<K: KvStore>(self, peer: Peer<K>) -> F::Output {
            self.0.call(&peer)
        }
    }
    open_peer(name, opts, Lend(f))
}

/// [`with_peer`], handing the open store over to `f`.
pub fn open_peer<F: PeerInto>(name: &str, opts: &PeerOptions, f: F) -> std::result::Result<F::Output, String> {
    #[cfg_attr(
        not(any(feature = "surrealmx", feature = "rocksdb", feature = "fjall", feature = "redb", feature = "sqlite")),
        allow(dead_code)
    )]
    fn go<K: KvStore, F: PeerInto>(opts: &PeerOptions, f: F) -> std::result::Result<F::Output, String> {
        let peer = Peer::<K>::open(opts).map_err(|e| e.to_string())?;
        Ok(f.take(peer))
    }
    let _ = (opts, &f);
    match name {
        #[cfg(feature = "surrealmx")]
        "surrealmx" => go::<surrealmx::SurrealMx, F>(opts, f),
        #[cfg(feature = "rocksdb")]
        "rocksdb-optimistic" => go::<rocks::Optimistic, F>(opts, f),
        #[cfg(feature = "rocksdb")]
        "rocksdb-pessimistic" => go::<rocks::Pessimistic, F>(opts, f),
        #[cfg(feature = "fjall")]
        "fjall" => go::<fjall::Fjall, F>(opts, f),
        #[cfg(feature = "redb")]
        "redb" => go::<redb::Redb, F>(opts, f),
        #[cfg(feature = "sqlite")]
        "sqlite" => go::<sqlite::Sqlite, F>(opts, f),
        _ => Err(match feature_of(name) {
            Some(feature) => format!(
                "store {name} is not compiled in: build with `--features peers` (or the feature {feature} of multiverse-peers)"
            ),
            None => format!("unknown store '{name}' (stores: {})", names().join(", ")),
        }),
    }
}

/// The levels the store `name` offers, weakest first (`None`: not
/// compiled in or unknown).
pub fn levels_of(name: &str) -> Option<&'static [Isolation]> {
    match name {
        #[cfg(feature = "surrealmx")]
        "surrealmx" => Some(surrealmx::SurrealMx::LEVELS),
        #[cfg(feature = "rocksdb")]
        "rocksdb-optimistic" => Some(rocks::Optimistic::LEVELS),
        #[cfg(feature = "rocksdb")]
        "rocksdb-pessimistic" => Some(rocks::Pessimistic::LEVELS),
        #[cfg(feature = "fjall")]
        "fjall" => Some(fjall::Fjall::LEVELS),
        #[cfg(feature = "redb")]
        "redb" => Some(redb::Redb::LEVELS),
        #[cfg(feature = "sqlite")]
        "sqlite" => Some(sqlite::Sqlite::LEVELS),
        _ => None,
    }
}

/// The directory a file-backed store runs in: the one given, or a new one
/// under `/dev/shm` (a tmpfs: the store's files live in memory), removed
/// when the store is dropped. Errors name the store and the path.
pub fn store_dir(store: &str, opts: &PeerOptions) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    match &opts.dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(|e| Error::Io(format!("{store}: cannot create {}: {e}", d.display())))?;
            Ok((d.clone(), None))
        }
        None => {
            let shm = std::path::Path::new("/dev/shm");
            let t = tempfile::Builder::new().prefix(&format!("multiverse-{store}-")).tempdir_in(shm).map_err(|e| {
                Error::Io(format!("{store}: cannot make a directory in {} (a tmpfs): {e}", shm.display()))
            })?;
            Ok((t.path().to_path_buf(), Some(t)))
        }
    }
}

/// A store's error that is not a conflict: an I/O-like error naming the store.
pub fn store_error(store: &str, e: impl std::fmt::Display) -> Error {
    Error::Io(format!("{store}: {e}"))
}

/// A conflict the store reported: an abort the harness retries.
pub fn conflict(reason: AbortReason) -> Error {
    Error::Aborted(reason)
}

/// One table of a peer's schema.
struct TableInfo {
    name: String,
    /// Secondary indexes (index number `i + 1`): name and key function.
    secondary: Vec<(String, KeyFn)>,
}

/// A [`KvStore`] with the workloads' schema on top: implements [`Store`].
pub struct Peer<K> {
    kv: K,
    durability: Durability,
    /// Set up before the load, read at every begin (one lock and one
    /// reference count per transaction, none per operation).
    tables: RwLock<Arc<Vec<TableInfo>>>,
    /// Record what committed transactions observed ([`Peer::set_recording`]).
    recording: AtomicBool,
    /// The committed transactions' observations, in commit order.
    recorded: Recorded,
}

/// The committed transactions' observations, each a list of operations.
type Recorded = Mutex<Vec<Vec<Observed>>>;

/// One operation as a client of the store observed it: what the black-box
/// checker (`multiverse_check::check_observed`) gets.
pub use multiverse_check::ObservedOp as Observed;

impl<K: KvStore> Peer<K> {
    /// Opens a new, empty store.
    pub fn open(opts: &PeerOptions) -> Result<Peer<K>> {
        Ok(Peer {
            kv: K::open(opts)?,
            durability: opts.durability,
            tables: RwLock::new(Arc::new(Vec::new())),
            recording: AtomicBool::new(false),
            recorded: Mutex::new(Vec::new()),
        })
    }

    /// How the store makes commits durable.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Starts (or stops) recording what the point reads, writes, deletes
    /// and unfiltered primary-key scans of transactions begun from now on
    /// observed, for a black-box check of
    /// their isolation; only committed transactions are kept.
    pub fn set_recording(&self, on: bool) {
        // Relaxed: read at each begin; the run's threads start after this.
        self.recording.store(on, Ordering::Relaxed);
    }

    /// The committed transactions' observations so far, in commit order
    /// (each a list of operations in program order); clears them.
    pub fn take_recorded(&self) -> Vec<Vec<Observed>> {
        std::mem::take(&mut *self.recorded.lock())
    }

    /// The store.
    pub fn kv(&self) -> &K {
        &self.kv
    }

    /// Bytes of memory the store's files take ([`KvStore::memory_dir`]:
    /// blocks allocated to the files in its tmpfs directory, not their
    /// lengths); 0 for a store without such files.
    pub fn memory_files_bytes(&self) -> u64 {
        fn walk(dir: &Path) -> u64 {
            use std::os::unix::fs::MetadataExt;
            let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
            entries
                .flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => walk(&e.path()),
                    // st_blocks counts 512-byte units whatever the block size.
                    Ok(m) => m.blocks() * 512,
                    Err(_) => 0,
                })
                .sum()
        }
        self.kv.memory_dir().map_or(0, walk)
    }

    /// The store's name as `--protocol` takes it.
    pub fn name(&self) -> &'static str {
        K::NAME
    }

    /// Refuses a level the store does not offer, in one line naming those it does.
    pub fn check_level(&self, isolation: Isolation) -> Result<()> {
        check_level::<K>(isolation)
    }

    /// Begins a transaction with the workloads' interface.
    pub fn begin(&self, isolation: Isolation, read_only: bool) -> Result<PeerTxn<'_, K>> {
        check_level::<K>(isolation)?;
        let tables = self.tables.read().clone();
        // Relaxed: see `set_recording`.
        let rec = self.recording.load(Ordering::Relaxed).then_some(&self.recorded);
        Ok(PeerTxn::new(self.kv.begin(isolation, read_only)?, tables, rec))
    }
}

fn check_level<K: KvStore>(isolation: Isolation) -> Result<()> {
    if K::LEVELS.contains(&isolation) {
        return Ok(());
    }
    let offered: Vec<&str> = K::LEVELS.iter().map(|l| l.name()).collect();
    Err(Error::Unsupported(format!(
        "{} does not offer {}; it offers {}",
        K::NAME,
        isolation.name(),
        offered.join(", ")
    )))
}

/// The weakest level the store offers at or above `want`, else its strongest.
fn at_least<K: KvStore>(want: Isolation) -> Isolation {
    let rank = |l: Isolation| Isolation::ALL.iter().position(|x| *x == l).unwrap_or(0);
    K::LEVELS
        .iter()
        .copied()
        .find(|l| rank(*l) >= rank(want))
        .unwrap_or_else(|| *K::LEVELS.last().expect("a store offers a level"))
}

impl<K: KvStore> Store for Peer<K> {
    type Tx<'s> = PeerTxn<'s, K>;

    fn create_table(&self, spec: impl Into<TableSpec>) -> Result<TableId> {
        let spec: TableSpec = spec.into();
        let mut tables = self.tables.write();
        if tables.iter().any(|t| t.name == spec.name()) {
            return Err(Error::TableExists(spec.name().to_string()));
        }
        let secondary = spec.secondaries().map(|(n, _, f)| (n.to_string(), f)).collect();
        let mut next: Vec<TableInfo> =
            tables.iter().map(|t| TableInfo { name: t.name.clone(), secondary: t.secondary.clone() }).collect();
        next.push(TableInfo { name: spec.name().to_string(), secondary });
        *tables = Arc::new(next);
        Ok(TableId::from_raw(tables.len() as u32 - 1))
    }

    fn index(&self, table: TableId, name: &str) -> Result<IndexId> {
        let tables = self.tables.read();
        let t = tables.get(table.raw() as usize).ok_or_else(|| Error::UnknownTable(format!("#{}", table.raw())))?;
        let i = t.secondary.iter().position(|(n, _)| n == name).ok_or_else(|| Error::UnknownIndex(name.to_string()))?;
        Ok(IndexId::from_raw(table, i as u8 + 1))
    }

    fn primary(&self, table: TableId) -> IndexId {
        IndexId::from_raw(table, 0)
    }

    fn load_txn<R>(&self, mut f: impl FnMut(&mut Self::Tx<'_>) -> Result<R>) -> Result<R> {
        let level = K::LEVELS[0];
        loop {
            let mut t = self.begin(level, false)?;
            match f(&mut t).and_then(|r| t.commit().map(|()| r)) {
                Err(e) if e.is_transient() => continue,
                r => return r,
            }
        }
    }

    fn begin_check(&self) -> Result<Self::Tx<'_>> {
        self.begin(at_least::<K>(Isolation::Snapshot), true)
    }

    fn run_txn<W: Worker>(
        &self,
        w: &mut W,
        opts: TxnOptions<'static>,
        retry: Retry,
        aborts: &mut AbortCounts,
    ) -> std::result::Result<bool, TxnError> {
        let opts = w.options(opts);
        run_store_attempts(|| self.begin(opts.isolation, opts.read_only), w, retry, aborts)
    }
}
