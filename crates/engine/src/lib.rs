//! # Multiverse
//!
//! An embeddable, in-memory, multi-version transaction engine. This crate
//! implements the storage engine of Larson et al., *High-Performance
//! Concurrency Control Mechanisms for Main-Memory Databases* (VLDB 2011,
//! "Hekaton"): versions with 64-bit Begin and End words changed by
//! compare-and-swap, the visibility rules of Tables 1 and 2, commit
//! dependencies, the optimistic scheme MV/O (section 3), the pessimistic
//! scheme MV/L (section 4: record locks in the End word, bucket and range
//! locks, wait-for dependencies, deadlock detection), and both at once
//! (section 4.5), at read committed, snapshot, repeatable read and
//! serializable. Beside them, on an in-place single-version store, the
//! baselines the papers measure against: Silo OCC
//! ([`protocol::silo`]), Hekaton's single-version locking 1V
//! ([`protocol::lock_1v`]) and BOHM's ordered two-phase locking
//! ([`protocol::ordered_2pl`]). And two certifiers that make MV/O's weaker
//! levels serializable: SSN, the serial safety net, over read committed or
//! snapshot isolation ([`protocol::ssn`]), and SSI ([`protocol::ssi`]).
//!
//! ```
//! use multiverse::{Database, Isolation, Key, Options, TableSpec};
//!
//! let db = Database::new(Options::default()).unwrap();
//! let accounts = db.create_table(TableSpec::hash("accounts", 1024)).unwrap();
//! db.run(Isolation::Serializable, |t| {
//!     t.insert(accounts, Key::from(1), &100u64.to_le_bytes())?;
//!     t.insert(accounts, Key::from(2), &50u64.to_le_bytes())
//! })
//! .unwrap();
//!
//! let mut t = db.begin(Isolation::Snapshot).unwrap();
//! let v = t.get(accounts, &Key::from(1)).unwrap().unwrap();
//! assert_eq!(u64::from_le_bytes(v.try_into().unwrap()), 100);
//! t.commit().unwrap();
//! ```
//!
//! Layout (from the bottom up): [`error`], [`key`], the options and ids
//! (`options.rs`), [`storage`] (versions, tables), [`index`] (hash and
//! ordered indexes), [`txn`] (transaction table, visibility, commit
//! dependencies), [`gc`] (version reclamation), [`history`], [`protocol`]
//! (one module per protocol), [`Database`] (`db/`), and [`durability`]
//! (log, checkpoints, recovery, opening a data directory), and above them
//! [`typed`] (typed keys and values, [`TableDefinition`]). This file only
//! declares the modules and re-exports the public API.

#![warn(missing_docs)]

pub mod durability;
pub mod error;
pub mod gc;
pub mod history;
pub mod index;
pub mod key;
pub mod protocol;
pub mod storage;
mod sync;
pub mod table;
pub mod txn;
pub mod typed;
mod wal;

mod db;
mod memory;
mod options;
mod shared;
mod stats;

pub use db::{Core, Database};
pub use durability::backup::BackupInfo;
pub use durability::checkpoint::CheckpointInfo;
pub use durability::RecoveryReport;
pub use error::{AbortReason, Error, Result};
pub use key::{Key, KeyBuilder, KEY_INLINE, KEY_MAX};
pub use options::{
    AccessSet, Durability, Faults, IndexId, Isolation, Mode, OnDamage, Options, Protocol, RetryPolicy, TableId,
    TxnOptions, MAX_TABLES, POMVCC_TICK,
};
pub use protocol::core::CommitInfo;
pub use protocol::core::Savepoint;
pub use protocol::iter::Range;
pub use protocol::mv_lock::detect_deadlocks;
pub use protocol::transaction::Transaction;
pub use shared::Shared;
pub use stats::Stats;
pub use table::{IndexKind, KeyFn, TableSpec};
pub use txn::Filter;
pub use typed::{TableDefinition, TypedTable};
