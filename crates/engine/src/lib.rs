//! # Multiverse
//!
//! An embeddable, in-memory, multi-version transaction engine. One storage
//! layer and one transaction API run ten concurrency-control protocols side
//! by side, each built from its paper: the Hekaton engine of Larson et al.
//! (*High-Performance Concurrency Control Mechanisms for Main-Memory
//! Databases*, VLDB 2011) with its optimistic and pessimistic schemes, the
//! baselines those papers measure against, two certifiers that make
//! snapshot isolation serializable, BOHM and POMVCC. A database runs one
//! protocol, chosen at open ([`Options::protocol`]); every protocol runs
//! the same application code.
//!
//! ```
//! use multiverse::{Database, Isolation, Options, TableSpec};
//!
//! let db = Database::new(Options::default()).unwrap();
//! let accounts = db.create_table(TableSpec::ordered("accounts")).unwrap();
//! // A closure transaction: committed at the end, retried on transient aborts.
//! db.run(Isolation::Serializable, |t| {
//!     t.insert(accounts, "alice", 100u64.to_le_bytes())?;
//!     t.insert(accounts, "bob", 50u64.to_le_bytes())
//! })
//! .unwrap();
//!
//! // An interactive transaction.
//! let mut t = db.begin(Isolation::Snapshot).unwrap();
//! let v = t.get(accounts, "alice").unwrap().unwrap();
//! assert_eq!(u64::from_le_bytes(v.try_into().unwrap()), 100);
//! assert_eq!(t.range(accounts, "a".."c").unwrap().count(), 2);
//! t.commit().unwrap();
//! ```
//!
//! # The API in brief
//!
//! * [`Database::new`] opens an in-memory database, [`Database::open`] a
//!   durable one in a data directory (see [Durability](#durability)).
//! * [`Database::create_table`] declares a table from a [`TableSpec`]: a
//!   primary index (a lock-free hash index or an ordered skip list, see
//!   [`IndexKind`]) and any number of non-unique secondary indexes whose
//!   keys a function derives from the row.
//! * Keys are byte strings ordered by their bytes ([`Key`]); every
//!   operation takes one as [`IntoKey`]: `&str`, `String`, `&[u8]`,
//!   `Vec<u8>`, a `u64` (big-endian, sorting as numbers) or a `Key`, owned
//!   or borrowed. Composite keys are built with [`KeyBuilder`] so that they
//!   sort like the tuple. Values are anything that is bytes
//!   (`impl AsRef<[u8]>`). Ranges ([`KeyRange`]) are Rust's range
//!   expressions over any key form, on a table ([`TableId`], its primary
//!   index) or a secondary index ([`IndexId`]). A table keyed by a hash
//!   index ([`TableSpec::hash`]) has a [`HashTableId`], which ranges refuse
//!   at compile time ([`OrderedIndex`]). Handles belong to their
//!   database ([`Error::ForeignHandle`]). The [`typed`] layer ([`TableDefinition`],
//!   [`TypedTable`]) encodes Rust keys and values, tuples included, over
//!   the same API.
//! * [`Database::run`] runs a closure as a transaction and retries it on
//!   transient aborts ([`RetryPolicy`]); [`Database::begin`] opens an
//!   interactive [`Transaction`]: [`get`](Transaction::get),
//!   [`insert`](Transaction::insert), [`update`](Transaction::update),
//!   [`update_with`](Transaction::update_with), [`delete`](Transaction::delete),
//!   [`put`](Transaction::put), callback scans ([`Transaction::scan`]),
//!   iterators ([`Transaction::range`], [`Transaction::prefix`]: a
//!   double-ended [`Range`]), savepoints ([`Transaction::savepoint`],
//!   [`Transaction::rollback_to`]), and [`commit`](Transaction::commit).
//!   Dropping an open transaction rolls it back.
//! * Errors are typed ([`Error`]); an abort carries its [`AbortReason`],
//!   and [`Error::is_transient`] says whether a retry may succeed.
//! * [`Options::memory_limit`] bounds the data held: past it, writes fail
//!   with [`Error::MemoryLimit`] until garbage collection frees old
//!   versions. [`Database::stats`] counts commits, aborts by reason,
//!   versions, log and memory use ([`Stats`]).
//!
//! # What the crate exports
//!
//! The crate root and its public modules are the embedding API:
//!
//! * the database and its schema: [`Database`]; [`Options`] (with a
//!   builder method per field) with [`Protocol`], [`Isolation`],
//!   [`Durability`], [`OnDamage`], [`RetryPolicy`], [`OrderedMap`] (the map
//!   under the ordered indexes), and [`POMVCC_TICK`]
//!   (the default of [`Options::pomvcc_interval`]); [`TableSpec`],
//!   [`HashTableSpec`], [`TableKind`], [`IndexKind`], [`KeyFn`],
//!   [`TableId`], [`HashTableId`], [`IndexId`], [`OrderedIndex`] and
//!   [`MAX_TABLES`];
//! * keys: [`Key`], [`KeyBuilder`], [`KEY_MAX`] and [`KEY_INLINE`] (also
//!   in [`key`]);
//! * transactions: [`Transaction`], [`TxnOptions`] with [`Mode`] and
//!   [`AccessSet`], [`Range`], [`Savepoint`], [`CommitInfo`], [`Filter`];
//! * errors and counters: [`Error`], [`AbortReason`] and [`Result`] (also
//!   in [`error`]), [`Stats`] with its [`AbortCounts`];
//! * the [`typed`] layer: [`TableDefinition`], [`TypedTable`],
//!   [`TypedRange`] and the module's traits;
//! * durability: [`RecoveryReport`], [`CheckpointInfo`], [`BackupInfo`],
//!   and in [`durability`] [`salvage`](durability::salvage()) with its
//!   report;
//! * BOHM's whole-transaction API, in [`protocol::bohm`]:
//!   [`Procedure`](protocol::bohm::Procedure) and
//!   [`ExecTxn`](protocol::bohm::ExecTxn) for the logic,
//!   [`Config`](protocol::bohm::Config), a [`Batch`](protocol::bohm::Batch)
//!   or any [`Feed`](protocol::bohm::Feed) for [`Database::bohm_run`], a
//!   [`Server`](protocol::bohm::Server) for [`Database::bohm_serve`], and
//!   what comes back ([`Done`](protocol::bohm::Done),
//!   [`Outcome`](protocol::bohm::Outcome),
//!   [`RunStats`](protocol::bohm::RunStats)). The other modules of
//!   [`protocol`] document one protocol each.
//!
//! [`research`] holds what the benchmark and the checker use and an
//! embedder does not: the time-breakdown timers, the ceiling table without
//! concurrency control, history recording, fault injection, epoch pins
//! held over a whole transaction, the deadlock detector's entry point and
//! the state behind a database handle. It is public for the workspace's
//! other crates and is not held to the embedding API's stability. The
//! test `tests/public_api.rs` lists the root's names, so that the list
//! changes only on purpose.
//!
//! # Isolation levels
//!
//! [`Isolation`] has the four levels of Hekaton (section 2.5):
//! read committed (each read sees the latest committed version), snapshot
//! (every read sees the snapshot at begin), repeatable read (snapshot
//! reads, validated at commit: no phantom protection) and serializable
//! (repeatable read and no phantoms). A protocol offers some of them
//! ([`Protocol::isolation_levels`]); [`Database::begin`] refuses the others
//! with [`Error::InvalidIsolation`]. `docs/ISOLATION.md` in the repository
//! shows every protocol at every level it offers against the Hermitage
//! anomalies.
//!
//! ```
//! use multiverse::{Database, Error, Isolation, Options, Protocol};
//!
//! assert_eq!(Protocol::Silo.isolation_levels(), [Isolation::Serializable]);
//! let db = Database::new(Options { protocol: Protocol::Silo, ..Options::default() }).unwrap();
//! assert!(matches!(db.begin(Isolation::Snapshot), Err(Error::InvalidIsolation { .. })));
//! ```
//!
//! # Protocols
//!
//! [`Protocol`] names them (the command-line names in parentheses). The
//! multi-version ones share one version store: each version carries a
//! 64-bit Begin and End word, each a timestamp or a transaction id,
//! changed by compare-and-swap (Hekaton section 2). The single-version
//! ones update records in place; BOHM keeps its own version chains.
//!
//! | protocol | levels | paper |
//! | --- | --- | --- |
//! | [`MvOcc`](Protocol::MvOcc) (`mv-occ`) | RC, SI, RR, SER | Larson et al., VLDB 2011, section 3 |
//! | [`MvLock`](Protocol::MvLock) (`mv-lock`) | RC, SI, RR, SER | Larson et al., section 4 |
//! | [`MvMixed`](Protocol::MvMixed) (`mv-mixed`) | RC, SI, RR, SER | Larson et al., section 4.5 |
//! | [`OneVLock`](Protocol::OneVLock) (`1v-lock`) | RC, RR, SER | Larson et al., section 5 |
//! | [`Silo`](Protocol::Silo) (`silo`) | SER | Tu et al., SOSP 2013, section 4 |
//! | [`TwoPlOrdered`](Protocol::TwoPlOrdered) (`2pl-ordered`) | SER | Faleiro and Abadi, VLDB 2015, section 4 |
//! | [`Ssn`](Protocol::Ssn) (`ssn`) | SER | Wang et al., VLDB Journal 2017 |
//! | [`Ssi`](Protocol::Ssi) (`ssi`) | SER | Cahill et al., SIGMOD 2008 |
//! | [`Bohm`](Protocol::Bohm) (`bohm`) | SER | Faleiro and Abadi, VLDB 2015, section 3 |
//! | [`Pomvcc`](Protocol::Pomvcc) (`pomvcc`) | RC, SI, SER | Isoda et al., IJAS 11(3&4), 2018 |
//!
//! **Hekaton MV/O** ([`Protocol::MvOcc`], [`protocol::mv::occ`]): optimistic
//! multi-versioning. Reads never block and take no locks; a read of a
//! version whose writer is still committing takes a commit dependency
//! (section 2.7). Writes follow first-writer-wins (an update of a version
//! another transaction already replaced aborts with
//! [`AbortReason::WriteConflict`]). At commit, repeatable read validates
//! that every version read is still visible at the end timestamp
//! ([`AbortReason::ReadValidation`]) and serializable also repeats its
//! scans to find phantoms ([`AbortReason::Phantom`]). Read committed,
//! snapshot, repeatable read and serializable.
//!
//! **Hekaton MV/L** ([`Protocol::MvLock`], [`protocol::mv::lock`]):
//! pessimistic multi-versioning. Read locks live in the End word of the
//! version read, serializable scans take bucket and range locks, and a
//! writer that meets a read lock waits for it through wait-for dependencies
//! before it commits (never during normal processing); there is no
//! validation. Deadlocks among wait-for dependencies are found every
//! [`Options::deadlock_interval`] and break by aborting a victim
//! ([`AbortReason::Deadlock`]; [`research::detect_deadlocks`]). All four levels.
//!
//! **Hekaton mixed** ([`Protocol::MvMixed`]): MV/O and MV/L transactions
//! side by side on one database (section 4.5), chosen per transaction with
//! [`TxnOptions::mode`] ([`Mode`]); left to the protocol the choice
//! alternates, so every workload runs both. All four levels.
//!
//! **1V locking** ([`Protocol::OneVLock`], [`protocol::lock_1v`]): Hekaton's
//! single-version baseline (section 5): records updated in place, shared
//! and exclusive locks per key kept in each index, key-range locks for
//! serializable scans, strict two-phase locking. A lock wait longer than
//! [`Options::lock_timeout`] aborts with [`AbortReason::LockTimeout`];
//! deadlocks are detected sooner. Read committed, repeatable read and
//! serializable (one version: no snapshot to read).
//!
//! **Silo** ([`Protocol::Silo`], [`protocol::silo`]): Tu et al.'s OCC
//! (*Speedy Transactions in Multicore In-Memory Databases*, SOSP 2013,
//! section 4) on the single-version store: each record's TID word (lock,
//! latest and absent bits), reads without locks, commit in three phases
//! (lock the write set in address order, validate the read set and the
//! node set, install), epochs that bound garbage collection. Serializable.
//!
//! **Ordered 2PL** ([`Protocol::TwoPlOrdered`], [`protocol::ordered_2pl`]):
//! BOHM's locking baseline (Faleiro and Abadi, *Rethinking Serializable
//! Multiversion Concurrency Control*, VLDB 2015, section 4): a
//! transaction declares its accesses ([`TxnOptions::access`], an
//! [`AccessSet`]) and takes all their locks at begin in one global order,
//! so it never deadlocks; an access outside the declaration fails with
//! [`Error::NotDeclared`]. A transaction that declares nothing runs as 1V
//! locking. Serializable.
//!
//! **SSN** ([`Protocol::Ssn`], [`protocol::mv::ssn`]): the serial safety net of
//! Wang et al. (*Efficiently Making (Almost) Any Concurrency Control
//! Mechanism Serializable*, VLDB Journal 26(4), 2017) over MV/O at read
//! committed or snapshot isolation ([`Options::ssn_base`]): a pre-commit
//! certifier keeps per-version stamps and aborts a transaction whose
//! exclusion window is violated ([`AbortReason::ExclusionWindow`]),
//! which [`Database::run`] retries at once (safe retry). Read-only
//! transactions may read safe snapshots
//! ([`Options::safe_snapshot_interval`]), and long read-mostly ones may
//! skip tracking old versions ([`Options::ssn_read_mostly_age`]).
//! Serializable.
//!
//! **SSI** ([`Protocol::Ssi`], [`protocol::mv::ssn::ssi`]): serializable snapshot
//! isolation (Cahill et al., *Serializable Isolation for Snapshot
//! Databases*, SIGMOD 2008) on the same machinery over snapshot isolation:
//! it aborts a transaction in a dangerous structure of two consecutive
//! read-write anti-dependencies ([`AbortReason::DangerousStructure`]).
//! Serializable.
//!
//! **BOHM** ([`Protocol::Bohm`], [`protocol::bohm`]): Faleiro and Abadi's
//! batched, pre-ordered multi-versioning (VLDB 2015, section 3). Whole
//! transactions ([`protocol::bohm::Procedure`]: a declaration and the
//! logic) go through a pipeline: one sequencer orders them into a log,
//! concurrency-control threads (each owning a partition of the records)
//! write a placeholder version for every declared write, and execution
//! threads run the logic, reading the versions the plan names.
//! [`Database::bohm_run`] runs a stream of them, [`Database::bohm_serve`] a
//! server. Interactive transactions ([`Database::begin`]) run alone at the
//! next log position. Serializable, in log order.
//!
//! **POMVCC** ([`Protocol::Pomvcc`], [`protocol::mv::pomvcc`]): partial-order
//! multi-versioning (Isoda et al., *POMVCC: Partial Order Multi-Version
//! Concurrency Control*, International Journal on Advances in Software
//! 11(3&4), 2018): commits that do not conflict share one commit
//! timestamp, and a conflict abort advances it, so a commit may not be
//! visible to the client's next transaction (the HISTORICAL READ) unless
//! that one asks for it with [`TxnOptions::after`] (the timestamp
//! [`Transaction::commit`] returned) or after [`Database::sync_commits`].
//! Write locks are taken at the update (pessimistic, the default) or at
//! commit ([`Mode::Optimistic`]). Read committed, snapshot and
//! serializable.
//!
//! # Durability
//!
//! [`Database::open`] opens (or creates) a durable database in a
//! directory, with every table its data holds; [`Database::open_table`]
//! opens a table there, creating it on the first run and checking its
//! definition on the next ones; [`Database::close`] makes every commit
//! durable, reports the last flush's error, and releases the directory.
//! [`Database::open_with`] takes the [`Options`] ([`Options::data_dir`],
//! and one of two [`Durability`] modes: [`Durability::None`], the
//! default of [`Database::new`], keeps nothing) and a schema closure,
//! which creates the tables before recovery (secondary indexes need it:
//! their key functions are code).
//!
//! * **The log.** Every writing commit appends one redo record (its new
//!   values, with a CRC) to its thread's log stream
//!   ([`Options::log_streams`] streams; files rotate at
//!   [`Options::log_rotate_bytes`]). Each protocol logs in the order it
//!   serializes: the multi-version ones by commit timestamp, Silo, 1V and
//!   ordered 2PL by a commit sequence number, BOHM by log position.
//! * **Group commit.** A flusher closes an epoch and writes every stream's
//!   records with one sync per round. Under [`Durability::Async`] a commit
//!   returns at once and the flusher runs every
//!   [`Options::group_commit_interval`] (1 ms): a crash loses at most the
//!   last rounds, and recovery still yields a consistent state. Under
//!   [`Durability::Sync`] (what [`Database::open`] chooses) a commit
//!   returns once its round is durable, and nothing a client was shown is
//!   lost: the multi-version protocols make a commit visible only once it
//!   is durable (Hekaton section 3.2), the others make a transaction wait
//!   for the round of what it read. [`Database::flush_log`] makes
//!   everything committed so far durable.
//! * **Checkpoints.** A checkpoint is a snapshot of every row, taken by a
//!   read-only transaction while others run; the log files it covers are
//!   then removed. One falls due every [`Options::checkpoint_every`] (60 s)
//!   or [`Options::checkpoint_log_bytes`] (1 GiB) of log, written by a
//!   background thread; [`Database::checkpoint`] writes one at once.
//! * **The schema is stored.** Checkpoints and log files record each
//!   table's definition: its indexes' kinds (a hash index's capacity
//!   included) and names, and a typed table's key and value types. An
//!   open compares the tables its schema creates with them before it
//!   loads or writes anything: a difference (an ordered table opened as a
//!   hash table, a secondary index missing, a typed table opened with
//!   other types) is [`Error::SchemaMismatch`], and the directory is left
//!   as it was. The tables the schema does not create are created as
//!   recorded (one with secondary indexes needs the schema:
//!   [`Error::KeyFunctionNeeded`]).
//! * **Recovery.** [`Database::open_with`] takes the directory's `LOCK` (a
//!   second open fails with [`Error::Locked`]), creates the tables (the
//!   schema closure, then those recorded that it did not create) and
//!   checks them, loads the newest checkpoint, replays the log streams up
//!   to the first round one of them misses (always a prefix of the commit
//!   order), writes a fresh checkpoint and starts logging. The
//!   [`RecoveryReport`] says what was replayed and what was dropped and
//!   why (a crash's torn tail). Damage a crash cannot explain refuses the
//!   directory with [`Error::Corrupt`], changing nothing
//!   ([`OnDamage::Refuse`], the default of [`Options::on_damage`]);
//!   [`OnDamage::KeepPrefix`] opens its prefix and moves what it drops
//!   into a quarantine folder, and [`durability::salvage()`] reads out
//!   every intact record that recovery drops.
//! * **Backup.** [`Database::backup`] writes an online, consistent copy of
//!   a running database, durable or not, into a new directory that
//!   [`Database::open`] opens.
//!
//! The [`durability`] module describes the files and the recovery rules.
//!
//! ```
//! use multiverse::{Database, Isolation, Key, TableSpec};
//!
//! # fn main() -> multiverse::Result<()> {
//! # let tmp = tempfile::tempdir().unwrap();
//! # let path = tmp.path().join("db");
//! let db = Database::open(&path)?;
//! let kv = db.open_table(TableSpec::ordered("kv"))?;
//! db.run(Isolation::Serializable, |t| t.insert(kv, Key::from(7), b"seven"))?;
//! db.close()?; // or a crash: the commit returned, so it is on disk
//!
//! let db = Database::open(&path)?;
//! let kv = db.open_table(TableSpec::ordered("kv"))?;
//! let mut t = db.begin(Isolation::Snapshot)?;
//! assert_eq!(t.get(kv, &Key::from(7))?.as_deref(), Some(&b"seven"[..]));
//! drop(t);
//! // The directory records the table's definition.
//! assert!(matches!(db.open_table(TableSpec::hash("kv", 64)), Err(multiverse::Error::SchemaMismatch { .. })));
//! # Ok(())
//! # }
//! ```
//!
//! With options and a schema, which creates the tables (and gives
//! secondary indexes their key functions) on every open:
//!
//! ```
//! use multiverse::{Database, Durability, IndexKind, Key, Options, TableSpec};
//!
//! # fn main() -> multiverse::Result<()> {
//! # let tmp = tempfile::tempdir().unwrap();
//! let opts = Options {
//!     durability: Durability::Async,
//!     data_dir: Some(tmp.path().join("db")),
//!     ..Options::default()
//! };
//! let schema = |db: &Database| {
//!     let spec = TableSpec::hash("users", 1024).secondary("by_name", IndexKind::Ordered, |_, v| Key::from_bytes(v).unwrap());
//!     db.create_table(spec).map(drop)
//! };
//! let (db, report) = Database::open_with(opts.clone(), schema)?;
//! assert_eq!(report.generation, 0); // a new directory
//! db.close()?;
//! let (_db, report) = Database::open_with(opts, schema)?;
//! assert!(!report.damaged);
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! From the bottom up: [`error`], [`key`], the options and ids
//! (`options.rs`), `storage` (versions, tables), `index` (hash and
//! ordered indexes), `txn` (transaction table, visibility, commit
//! dependencies), `gc` (version reclamation), history recording
//! ([`research::history`]), [`protocol`] (one module per protocol),
//! [`Database`] (`db/`), and [`durability`] (log, checkpoints, recovery,
//! opening a data directory), and above them [`typed`] (typed keys and
//! values, [`TableDefinition`]). This file only declares the modules and
//! re-exports the public API; `docs/ARCHITECTURE.md` in the repository
//! describes the layers.
//!
//! Optional features: `serde` (typed values through postcard), `metrics`
//! (counters, a gauge and histograms through the `metrics` facade: commits,
//! aborts by reason, durations, garbage collection, the log, checkpoints,
//! memory) and `tracing` (spans around each protocol's commit phases,
//! BOHM's batches, [`Database::open`], recovery, checkpoints and log
//! rounds). All are off by default; `metrics` and `tracing` compile to
//! nothing when off. Their names are listed in `docs/ARCHITECTURE.md`,
//! "Observability". A database registers its metrics with the recorder
//! installed when it is created: install the recorder first.

#![warn(missing_docs)]

pub mod durability;
pub mod error;
pub(crate) mod gc;
pub(crate) mod index;
pub mod key;
pub mod protocol;
pub mod research;
pub(crate) mod storage;
mod sync;
pub mod table;
pub(crate) mod txn;
pub mod typed;
mod wal;

mod db;
mod handle;
mod memory;
mod obs;
mod options;
mod shared;
mod stats;

// The engine's own paths to the instruments `research` publishes.
pub(crate) use research::{breakdown, history};

pub use db::Database;
pub use durability::backup::BackupInfo;
pub use durability::checkpoint::CheckpointInfo;
pub use durability::RecoveryReport;
pub use error::{AbortReason, Error, Result};
pub use handle::{HashTableId, IndexId, OrderedIndex, TableId};
pub use key::{IntoKey, Key, KeyBuilder, KeyRange, KEY_INLINE, KEY_MAX};
pub use options::{
    AccessSet, Durability, Isolation, Mode, OnDamage, Options, OrderedMap, Protocol, RetryPolicy, TxnOptions,
    MAX_TABLES, POMVCC_TICK,
};
pub use protocol::core::CommitInfo;
pub use protocol::core::Savepoint;
pub use protocol::iter::Range;
pub use protocol::transaction::Transaction;
pub use stats::{AbortCounts, Stats};
pub use table::{HashTableSpec, IndexKind, KeyFn, TableKind, TableSpec};
pub use txn::Filter;
pub use typed::{TableDefinition, TypedRange, TypedTable};

/// The code blocks of the repository's README, compiled and run as doctests
/// (`cargo test --doc`), so that its example stays true. The crate's
/// README.md links to the repository's, and a package holds a copy.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The code blocks of the embedding guide (`docs/GUIDE.md`), compiled and
/// run as doctests.
#[doc = include_str!("../../../docs/GUIDE.md")]
#[cfg(doctest)]
pub struct GuideDoctests;
