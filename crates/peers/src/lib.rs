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
//! workloads' interface ([`Store`], [`Txn`]) on top of it once for all
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

use multiverse::{AbortReason, Error, Filter, IndexId, Isolation, Key, KeyFn, Result, TableId, TableSpec, TxnOptions};
use multiverse_workloads::{run_store_attempts, AbortCounts, Store, StoreTxn, Txn, TxnError, Worker};
use parking_lot::{Mutex, RwLock};
use std::ops::{Bound, RangeBounds};
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
        let rec = self.recording.load(Ordering::Relaxed).then(|| (Vec::new(), &self.recorded));
        Ok(PeerTxn { tx: self.kv.begin(isolation, read_only)?, tables, key: Vec::new(), aux: Vec::new(), rec })
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
        aborts: &mut AbortCounts,
    ) -> std::result::Result<bool, TxnError> {
        let opts = w.options(opts);
        run_store_attempts(|| self.begin(opts.isolation, opts.read_only), w, aborts)
    }
}

/// A transaction of a [`Peer`]: the workloads' [`Txn`] over the store's.
pub struct PeerTxn<'s, K: KvStore + 's> {
    tx: K::Tx<'s>,
    tables: Arc<Vec<TableInfo>>,
    /// Store keys are built here (reused across operations).
    key: Vec<u8>,
    /// A second key buffer (secondary entries, range ends).
    aux: Vec<u8>,
    /// While recording: this transaction's observations, and where they go
    /// when it commits.
    rec: Option<(Vec<Observed>, &'s Recorded)>,
}

/// The first five bytes of every key of index `index` of `table`.
#[inline]
fn put_prefix(buf: &mut Vec<u8>, table: u32, index: u8) {
    buf.clear();
    buf.extend_from_slice(&table.to_be_bytes());
    buf.push(index);
}

/// Appends the order-preserving, prefix-free encoding of `k` (module docs).
fn put_escaped(buf: &mut Vec<u8>, k: &[u8]) {
    for &b in k {
        buf.push(b);
        if b == 0 {
            buf.push(0xFF);
        }
    }
    buf.extend_from_slice(&[0, 0]);
}

/// Splits an escaped secondary key off the front of `b`: (the key, the rest).
fn split_escaped(b: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (0, Some(0)) => return Some((out, &b[i + 2..])),
            (0, Some(0xFF)) => {
                out.push(0);
                i += 2;
            }
            (0, _) => return None,
            (x, _) => {
                out.push(x);
                i += 1;
            }
        }
    }
    None
}

fn key_of(b: &[u8]) -> Result<Key> {
    Key::from_bytes(b).map_err(|e| Error::Corrupt(format!("a stored key: {e}")))
}

impl<'s, K: KvStore> PeerTxn<'s, K> {
    /// Records an observation (while recording).
    #[inline]
    fn note(&mut self, op: impl FnOnce() -> Observed) {
        if let Some((ops, _)) = &mut self.rec {
            ops.push(op());
        }
    }

    fn info(&self, table: TableId) -> Result<&TableInfo> {
        self.tables.get(table.raw() as usize).ok_or_else(|| Error::UnknownTable(format!("#{}", table.raw())))
    }

    /// Builds the store key of row `pk` of `table` in `self.key`.
    #[inline]
    fn row_key(&mut self, table: TableId, pk: &[u8]) {
        put_prefix(&mut self.key, table.raw(), 0);
        self.key.extend_from_slice(pk);
    }

    /// Writes (or, with `add` false, removes) the secondary entries of row
    /// `pk` with value `value`; with `other`, only those whose key differs
    /// from the entry `other` (the row's other value) gives.
    fn secondary_entries(
        &mut self,
        table: TableId,
        pk: &Key,
        value: &[u8],
        other: Option<&[u8]>,
        add: bool,
    ) -> Result<()> {
        let tables = self.tables.clone();
        let info = tables.get(table.raw() as usize).ok_or_else(|| Error::UnknownTable(format!("#{}", table.raw())))?;
        for (i, (_, f)) in info.secondary.iter().enumerate() {
            let sk = f(pk, value);
            if other.is_some_and(|o| f(pk, o) == sk) {
                continue;
            }
            put_prefix(&mut self.aux, table.raw(), i as u8 + 1);
            put_escaped(&mut self.aux, sk.as_bytes());
            self.aux.extend_from_slice(pk.as_bytes());
            if add {
                self.tx.put(&self.aux, &[])?;
            } else {
                self.tx.delete(&self.aux)?;
            }
        }
        Ok(())
    }

    /// The store-key range of `range` over index `index` (`lo`, `hi` in
    /// `self.key`, `self.aux`).
    fn range_keys(&mut self, index: IndexId, range: &impl RangeBounds<Key>) {
        let (t, i) = (index.table().raw(), index.index_no());
        let enc = |buf: &mut Vec<u8>, k: &Key| {
            if i == 0 {
                buf.extend_from_slice(k.as_bytes())
            } else {
                put_escaped(buf, k.as_bytes())
            }
        };
        put_prefix(&mut self.key, t, i);
        match range.start_bound() {
            Bound::Unbounded => {}
            // An excluded start is filtered by the caller.
            Bound::Included(k) | Bound::Excluded(k) => enc(&mut self.key, k),
        }
        put_prefix(&mut self.aux, t, i);
        match range.end_bound() {
            Bound::Unbounded => {
                // The next index's prefix.
                self.aux.truncate(4);
                self.aux.push(i + 1);
                if i == u8::MAX {
                    self.aux.truncate(0);
                    self.aux.extend_from_slice(&(t + 1).to_be_bytes());
                }
            }
            Bound::Excluded(k) => enc(&mut self.aux, k),
            Bound::Included(k) => {
                if i == 0 {
                    // The least key above `k`.
                    self.aux.extend_from_slice(k.as_bytes());
                    self.aux.push(0);
                } else {
                    // Every entry of `k` begins with esc(k) and its 0x00 0x00
                    // end; 0x00 0x01 is above all of them and below the next key.
                    put_escaped(&mut self.aux, k.as_bytes());
                    let n = self.aux.len();
                    self.aux[n - 1] = 1;
                }
            }
        }
    }
}

impl<'s, K: KvStore> StoreTxn for PeerTxn<'s, K> {
    fn commit(self) -> Result<()> {
        self.tx.commit()?;
        if let Some((ops, to)) = self.rec {
            to.lock().push(ops);
        }
        Ok(())
    }
}

impl<'s, K: KvStore> Txn for PeerTxn<'s, K> {
    fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.row_key(table, key.as_bytes());
        if self.rec.is_none() {
            return self.tx.get(&self.key, f);
        }
        let r = self.tx.get(&self.key, |v| (f(v), v.to_vec()))?;
        self.note(|| Observed::Read { table: table.raw(), key: key.clone(), value: r.as_ref().map(|x| x.1.clone()) });
        Ok(r.map(|x| x.0))
    }

    fn get_for_update_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.row_key(table, key.as_bytes());
        if self.rec.is_none() {
            return self.tx.get_for_update(&self.key, f);
        }
        let r = self.tx.get_for_update(&self.key, |v| (f(v), v.to_vec()))?;
        self.note(|| Observed::Read { table: table.raw(), key: key.clone(), value: r.as_ref().map(|x| x.1.clone()) });
        Ok(r.map(|x| x.0))
    }

    fn update(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<()> {
        if self.info(table)?.secondary.is_empty() {
            // A blind write (module docs).
            self.row_key(table, key.as_bytes());
            self.tx.put(&self.key, value)?;
            self.note(|| Observed::Write { table: table.raw(), key: key.clone(), value: value.to_vec() });
            return Ok(());
        }
        self.update_with(table, key, |_, new| new.extend_from_slice(value))
    }

    fn insert(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        self.row_key(table, key.as_bytes());
        let recording = self.rec.is_some();
        let found = self.tx.get_for_update(&self.key, |v| recording.then(|| v.to_vec()))?;
        self.note(|| Observed::Read { table: table.raw(), key: key.clone(), value: found.clone().flatten() });
        if found.is_some() {
            return Err(Error::DuplicateKey);
        }
        self.tx.put(&self.key, value)?;
        self.note(|| Observed::Write { table: table.raw(), key: key.clone(), value: value.to_vec() });
        self.secondary_entries(table, &key, value, None, true)
    }

    fn update_with(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()> {
        let indexed = !self.info(table)?.secondary.is_empty();
        let recording = self.rec.is_some();
        self.row_key(table, key.as_bytes());
        let mut new = Vec::new();
        let old = self.tx.get_for_update(&self.key, |old| {
            f(old, &mut new);
            (indexed || recording).then(|| old.to_vec())
        })?;
        self.note(|| Observed::Read { table: table.raw(), key: key.clone(), value: old.clone().flatten() });
        let Some(old) = old else { return Err(Error::KeyNotFound) };
        self.tx.put(&self.key, &new)?;
        self.note(|| Observed::Write { table: table.raw(), key: key.clone(), value: new.clone() });
        let old = old.filter(|_| indexed);
        if let Some(old) = old {
            self.secondary_entries(table, key, &old, Some(&new), false)?;
            self.secondary_entries(table, key, &new, Some(&old), true)?;
        }
        Ok(())
    }

    fn delete(&mut self, table: TableId, key: &Key) -> Result<()> {
        self.row_key(table, key.as_bytes());
        let found = self.tx.get_for_update(&self.key, |v| v.to_vec())?;
        self.note(|| Observed::Read { table: table.raw(), key: key.clone(), value: found.clone() });
        let Some(old) = found else { return Err(Error::KeyNotFound) };
        self.tx.delete(&self.key)?;
        self.note(|| Observed::Delete { table: table.raw(), key: key.clone() });
        self.secondary_entries(table, key, &old, None, false)
    }

    fn get_by(&mut self, index: IndexId, key: &Key, mut f: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        if index.index_no() == 0 {
            let t = index.table();
            return self.get_with(t, key, |v| f(key, v)).map(drop);
        }
        self.scan(index, key.clone()..=key.clone(), None, f)
    }

    fn scan(
        &mut self,
        index: IndexId,
        range: impl RangeBounds<Key>,
        filter: Option<&Filter>,
        mut f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        self.range_keys(index, &range);
        let (lo, hi) = (std::mem::take(&mut self.key), std::mem::take(&mut self.aux));
        let table = index.table();
        let excluded = match range.start_bound() {
            Bound::Excluded(k) => Some(k.clone()),
            _ => None,
        };
        let r = if index.index_no() == 0 {
            let mut err = None;
            // While recording, an unfiltered scan's rows (a filtered one
            // says nothing of the rows it left out, and is not recorded).
            let mut seen = (self.rec.is_some() && filter.is_none()).then(Vec::new);
            let mut stopped = false;
            let r = self.tx.scan(&lo, &hi, |k, v| match key_of(&k[5..]) {
                Ok(pk) => {
                    if excluded.as_ref() == Some(&pk) || filter.is_some_and(|p| !p(&pk, v)) {
                        return true;
                    }
                    let go = f(&pk, v);
                    if let Some(s) = &mut seen {
                        s.push((pk, v.to_vec()));
                    }
                    stopped = !go;
                    go
                }
                Err(e) => {
                    err = Some(e);
                    false
                }
            });
            if let Some(rows) = seen.filter(|_| r.is_ok() && err.is_none()) {
                // A scan stopped early read up to its last row.
                let hi = match rows.last() {
                    Some((k, _)) if stopped => Bound::Included(k.clone()),
                    _ => range.end_bound().cloned(),
                };
                self.note(|| Observed::Scan { table: table.raw(), lo: range.start_bound().cloned(), hi, rows });
            }
            r.and(err.map_or(Ok(()), Err))
        } else {
            // Collect the entries' primary keys, then read each row (the
            // store's scan borrows the transaction).
            let mut pks = Vec::new();
            let mut bad = false;
            self.tx.scan(&lo, &hi, |k, _| {
                match split_escaped(&k[5..]) {
                    Some((sk, pk)) => {
                        if excluded.as_ref().is_none_or(|x| x.as_bytes() != sk.as_slice()) {
                            pks.push(pk.to_vec());
                        }
                    }
                    None => bad = true,
                }
                !bad
            })?;
            if bad {
                return Err(Error::Corrupt("a secondary-index entry that does not decode".into()));
            }
            let mut r = Ok(());
            for pk in pks {
                let pk = key_of(&pk)?;
                self.row_key(table, pk.as_bytes());
                let go = self.tx.get(&self.key, |v| filter.is_none_or(|p| p(&pk, v)).then(|| f(&pk, v)))?;
                match go {
                    None => {
                        r = Err(Error::Corrupt(format!("a secondary-index entry of a missing row {pk:?}")));
                        break;
                    }
                    Some(Some(false)) => break,
                    Some(_) => {}
                }
            }
            r
        };
        self.key = lo;
        self.aux = hi;
        r
    }
}

/// What every adapter must do, as tests each adapter's module runs on its store.
#[cfg(test)]
#[allow(dead_code)] // each adapter's tests use these; without one, nothing does
pub(crate) mod conformance {
    use super::*;
    use multiverse::IndexKind;
    use multiverse_workloads::Txn;

    fn by_value(_: &Key, v: &[u8]) -> Key {
        Key::from_bytes(&v[..1]).unwrap()
    }

    /// Opens an in-memory store with table "t" (a secondary index on the
    /// value's first byte) holding keys 1..=10 with values "a".."j".
    pub fn loaded<K: KvStore>() -> (Peer<K>, TableId) {
        let p = Peer::<K>::open(&PeerOptions { threads: 2, ..PeerOptions::default() }).unwrap();
        let t = p.create_table(TableSpec::ordered("t").secondary("v", IndexKind::Ordered, by_value)).unwrap();
        assert!(matches!(p.create_table(TableSpec::ordered("t")), Err(Error::TableExists(_))));
        p.load_txn(|x| (1..=10u64).try_for_each(|k| x.insert(t, Key::from(k), &[b'a' + k as u8 - 1]))).unwrap();
        (p, t)
    }

    fn keys<T: Txn>(x: &mut T, index: IndexId, r: impl RangeBounds<Key>) -> Vec<u64> {
        let mut out = vec![];
        x.scan(index, r, None, |k, _| {
            out.push(k.to_u64().unwrap());
            true
        })
        .unwrap();
        out
    }

    /// A transaction's operations: reads, ranges, secondary lookups,
    /// inserts, updates, deletes, their errors, and a rollback.
    pub fn operations<K: KvStore>() {
        let (p, t) = loaded::<K>();
        let (pk, sec) = (p.primary(t), p.index(t, "v").unwrap());
        assert!(matches!(p.index(t, "nope"), Err(Error::UnknownIndex(_))));
        p.check_txn(|x| {
            assert_eq!(x.get_with(t, &Key::from(3), |v| v.to_vec())?, Some(b"c".to_vec()));
            assert_eq!(x.get_with(t, &Key::from(11), |v| v.to_vec())?, None);
            assert_eq!(keys(x, pk, Key::from(3)..Key::from(6)), [3, 4, 5]);
            assert_eq!(keys(x, pk, (Bound::Excluded(Key::from(8)), Bound::Unbounded)), [9, 10]);
            assert_eq!(keys(x, pk, ..=Key::from(2)), [1, 2]);
            assert_eq!(keys(x, sec, Key::from_bytes(b"b").unwrap()..=Key::from_bytes(b"d").unwrap()), [2, 3, 4]);
            let mut found = vec![];
            x.get_by(sec, &Key::from_bytes(b"e").unwrap(), |k, v| {
                found.push((k.to_u64().unwrap(), v.to_vec()));
                true
            })?;
            assert_eq!(found, [(5, b"e".to_vec())]);
            Ok(())
        })
        .unwrap();
        p.load_txn(|x| {
            assert!(matches!(x.insert(t, Key::from(1), b"z"), Err(Error::DuplicateKey)));
            Ok(())
        })
        .ok();
        let level = *K::LEVELS.last().unwrap();
        let mut x = p.begin(level, false).unwrap();
        x.update(t, &Key::from(1), b"x").unwrap();
        x.update_with(t, &Key::from(2), |old, new| {
            new.extend_from_slice(old);
            new.push(b'!')
        })
        .unwrap();
        x.delete(t, &Key::from(3)).unwrap();
        x.insert(t, Key::from(11), b"k").unwrap();
        assert!(matches!(x.update_with(t, &Key::from(12), |_, _| ()), Err(Error::KeyNotFound)));
        x.commit().unwrap();
        let mut x = p.begin(level, false).unwrap();
        x.update(t, &Key::from(4), b"never").unwrap();
        drop(x); // rolled back
        p.check_txn(|x| {
            assert_eq!(keys(x, pk, ..), [1, 2, 4, 5, 6, 7, 8, 9, 10, 11]);
            assert_eq!(x.get_with(t, &Key::from(2), |v| v.to_vec())?, Some(b"b!".to_vec()));
            assert_eq!(x.get_with(t, &Key::from(4), |v| v.to_vec())?, Some(b"d".to_vec()));
            // The secondary index followed: x is 1's new value, c is gone.
            assert_eq!(keys(x, sec, Key::from_bytes(b"x").unwrap()..), [1]);
            assert_eq!(
                keys(x, sec, Key::from_bytes(b"c").unwrap()..=Key::from_bytes(b"c").unwrap()),
                Vec::<u64>::new()
            );
            assert_eq!(keys(x, sec, Key::from_bytes(b"k").unwrap()..=Key::from_bytes(b"k").unwrap()), [11]);
            Ok(())
        })
        .unwrap();
    }

    /// A worker that adds one to row 0 of its table.
    pub struct Increment(pub TableId);

    impl Worker for Increment {
        fn next_txn(&mut self) {}
        fn execute<T: Txn>(&mut self, t: &mut T) -> std::result::Result<(), TxnError> {
            t.update_with(self.0, &Key::from(0), |old, new| {
                let n = u64::from_be_bytes(old.try_into().unwrap());
                new.extend_from_slice(&(n + 1).to_be_bytes());
            })?;
            Ok(())
        }
    }

    /// Concurrent increments of one row at every level the store offers
    /// at or above snapshot isolation: none is lost, the aborts among them
    /// were retried. Returns the aborts counted.
    pub fn increments<K: KvStore>(threads: usize, each: u64) -> u64 {
        let p = Peer::<K>::open(&PeerOptions { threads, ..PeerOptions::default() }).unwrap();
        let t = p.create_table(TableSpec::ordered("c")).unwrap();
        p.load_txn(|x| x.insert(t, Key::from(0), &0u64.to_be_bytes())).unwrap();
        let mut aborted = 0;
        for (round, &level) in K::LEVELS.iter().filter(|l| **l >= Isolation::Snapshot).enumerate() {
            let counts: Vec<AbortCounts> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..threads)
                    .map(|_| {
                        s.spawn(|| {
                            let mut a = AbortCounts::default();
                            let mut w = Increment(t);
                            for _ in 0..each {
                                assert!(p.run_txn(&mut w, TxnOptions::new(level), &mut a).unwrap());
                            }
                            a
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            aborted += counts.iter().map(|a| a.total()).sum::<u64>();
            let n =
                p.check_txn(|x| x.get_with(t, &Key::from(0), |v| u64::from_be_bytes(v.try_into().unwrap()))).unwrap();
            assert_eq!(n, Some(threads as u64 * each * (round as u64 + 1)), "{} at {}", K::NAME, level.name());
        }
        aborted
    }

    /// Refuses a level the store does not offer, naming those it does.
    pub fn levels<K: KvStore>() {
        let p = Peer::<K>::open(&PeerOptions::default()).unwrap();
        for l in Isolation::ALL {
            match p.begin(l, true) {
                Ok(_) => assert!(K::LEVELS.contains(&l)),
                Err(e) => {
                    assert!(!K::LEVELS.contains(&l));
                    assert!(e.to_string().contains("it offers"), "{e}");
                }
            }
        }
    }

    /// The store's memory is counted: files in a tmpfs directory of its own
    /// (`files`) add their blocks, a store held in the process adds none.
    pub fn memory_counted<K: KvStore>(files: bool) {
        let (p, _) = loaded::<K>();
        match p.kv().memory_dir() {
            Some(d) => {
                assert!(files, "{} keeps no files", K::NAME);
                assert!(d.starts_with("/dev/shm"), "{}", d.display());
                assert!(p.memory_files_bytes() > 0);
            }
            None => {
                assert!(!files, "{} keeps its files in memory", K::NAME);
                assert_eq!(p.memory_files_bytes(), 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_keys_keep_their_order_and_split_back() {
        let keys: [&[u8]; 7] = [b"", b"\0", b"\0\0", b"\0\x01", b"a", b"a\0", b"ab"];
        let enc: Vec<Vec<u8>> = keys
            .iter()
            .map(|k| {
                let mut b = Vec::new();
                put_escaped(&mut b, k);
                b.extend_from_slice(b"pk");
                b
            })
            .collect();
        for w in enc.windows(2) {
            assert!(w[0] < w[1], "{:?} < {:?}", w[0], w[1]);
        }
        for (k, e) in keys.iter().zip(&enc) {
            let (sk, rest) = split_escaped(e).unwrap();
            assert_eq!((sk.as_slice(), rest), (*k, &b"pk"[..]));
        }
        assert!(split_escaped(b"a\0\x05").is_none());
    }
}
