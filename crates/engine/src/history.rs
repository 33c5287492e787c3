//! History recording: what every transaction did, for the offline checker
//! (crate `multiverse-check`).
//!
//! Switched on per database with [`crate::Options::record_history`]; off by
//! default, when it costs one predictable branch per operation. When on, each
//! transaction collects its operations in its own buffer and hands the
//! finished [`TxnRecord`] to the database once, at commit or abort.
//!
//! A version is named by its writer ([`Writer`]): the engine stamps committed
//! versions with the writer's end timestamp, which is unique to the writer,
//! so `Writer::Committed(ts)` names the transaction whose `commit_ts` is `ts`
//! (or, if no recorded transaction has it, a version that existed before
//! recording began: the initial state). A version read before its writer
//! finished is named by the writer's transaction id.

use crate::error::AbortReason;
use crate::key::Key;
use crate::Isolation;
use std::ops::Bound;

/// The writer of a version.
///
/// ```
/// use multiverse::research::history::{Op, Writer};
/// use multiverse::{Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options { record_history: true, ..Options::default() }).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 16)).unwrap();
/// let mut tx = db.begin(Isolation::Serializable).unwrap();
/// tx.insert(t, Key::from(1), b"a").unwrap();
/// let c = tx.commit().unwrap();
/// db.run(Isolation::Serializable, |tx| tx.get(t, &Key::from(1)).map(drop)).unwrap();
/// let h = db.take_history();
/// // The reader names the version it read by its writer's commit timestamp.
/// let Op::Read { version: Some((w, _)), .. } = &h.txns[1].ops[0] else { panic!() };
/// assert_eq!(*w, Writer::Committed(c.commit_ts));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Writer {
    /// Written by the transaction that committed with this end timestamp
    /// (or part of the initial state if no recorded transaction did).
    Committed(u64),
    /// Written by the transaction with this id (seen before it finished).
    Txn(u64),
}

/// How a row was written.
///
/// ```
/// use multiverse::research::history::{Op, WriteKind};
/// use multiverse::{Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options { record_history: true, ..Options::default() }).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 16)).unwrap();
/// db.run(Isolation::Serializable, |tx| {
///     tx.insert(t, Key::from(1), b"a")?;
///     tx.update(t, &Key::from(1), b"b")?;
///     tx.delete(t, &Key::from(1))
/// })
/// .unwrap();
/// let kinds: Vec<WriteKind> = db.take_history().txns[0]
///     .ops
///     .iter()
///     .filter_map(|op| match op {
///         Op::Write { kind, .. } => Some(*kind),
///         _ => None,
///     })
///     .collect();
/// assert_eq!(kinds, [WriteKind::Insert, WriteKind::Update, WriteKind::Delete]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteKind {
    /// A new row.
    Insert,
    /// A new version of an existing row.
    Update,
    /// The row's end.
    Delete,
}

/// One operation of a transaction.
///
/// ```
/// use multiverse::research::history::Op;
/// use multiverse::{Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options { record_history: true, ..Options::default() }).unwrap();
/// let t = db.create_table(TableSpec::ordered("t")).unwrap();
/// let ix = db.primary(t);
/// db.run(Isolation::Serializable, |tx| {
///     tx.insert(t, Key::from(1), b"a")?;
///     tx.get(t, &Key::from(2))?;
///     tx.range(ix, ..)?.count();
///     Ok(())
/// })
/// .unwrap();
/// let ops = &db.take_history().txns[0].ops;
/// assert!(matches!(ops[0], Op::Write { .. }));
/// assert!(matches!(ops[1], Op::Read { version: None, .. }), "key 2 has no row");
/// assert!(matches!(&ops[2], Op::Scan { rows, .. } if rows.len() == 1));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A point read through the primary index: the version returned (with its
    /// value), or `None` when the key had no visible row.
    Read {
        /// Table number.
        table: u32,
        /// Primary key.
        key: Key,
        /// The version read and its value; `None` if nothing was visible.
        version: Option<(Writer, Vec<u8>)>,
    },
    /// An insert, update or delete (the value is empty for a delete).
    Write {
        /// Table number.
        table: u32,
        /// Primary key.
        key: Key,
        /// What kind of write.
        kind: WriteKind,
        /// The new value.
        value: Vec<u8>,
    },
    /// A scan of a key range of an index, with its result. `filtered` is true
    /// when a residual predicate or a secondary index was used, so the key
    /// range alone does not describe which rows the scan could match.
    Scan {
        /// Table number.
        table: u32,
        /// Index number (0 is the primary index).
        index: u8,
        /// Lower bound of the range (on the index key).
        lo: Bound<Key>,
        /// Upper bound of the range (on the index key).
        hi: Bound<Key>,
        /// A residual predicate or a secondary index was involved.
        filtered: bool,
        /// Rows returned: primary key, writer of the version, value.
        rows: Vec<(Key, Writer, Vec<u8>)>,
    },
}

/// How a transaction ended.
///
/// ```
/// use multiverse::research::history::Outcome;
/// use multiverse::{AbortReason, Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options { record_history: true, ..Options::default() }).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 16)).unwrap();
/// let mut tx = db.begin(Isolation::Serializable).unwrap();
/// tx.insert(t, Key::from(1), b"a").unwrap();
/// tx.abort();
/// assert_eq!(db.take_history().txns[0].outcome, Outcome::Aborted(AbortReason::User));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Committed.
    Committed,
    /// Aborted, and why.
    Aborted(AbortReason),
}

/// One transaction of a history.
///
/// ```
/// use multiverse::research::history::Outcome;
/// use multiverse::{Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options { record_history: true, ..Options::default() }).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 16)).unwrap();
/// let mut tx = db.begin(Isolation::Snapshot).unwrap();
/// tx.insert(t, Key::from(1), b"a").unwrap();
/// let info = tx.commit().unwrap();
/// let r = &db.take_history().txns[0];
/// assert_eq!((r.isolation, r.outcome), (Isolation::Snapshot, Outcome::Committed));
/// assert_eq!(r.commit_ts, Some(info.commit_ts));
/// assert!(r.begin_ts < r.commit_ts.unwrap() && r.ops.len() == 1);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnRecord {
    /// Transaction id (unique within the database).
    pub id: u64,
    /// Isolation level.
    pub isolation: Isolation,
    /// Begin timestamp.
    pub begin_ts: u64,
    /// Position in the serialization order claimed by the engine: the end
    /// timestamp, or the begin timestamp for a committed transaction that
    /// wrote nothing; `None` if it aborted before taking an end timestamp.
    pub commit_ts: Option<u64>,
    /// How it ended.
    pub outcome: Outcome,
    /// It kept its reads valid with locks (MV/L at repeatable read or
    /// serializable): it read at the current time, and what it read (rows
    /// and absences alike) still held at its commit timestamp. Otherwise it
    /// read as of its begin timestamp (or the current time under read
    /// committed).
    pub locking: bool,
    /// It read as of its begin timestamp and was certified at commit without
    /// revalidating its reads there (SSN over snapshot isolation, SSI): what
    /// it found absent was absent as of its begin timestamp, and that is
    /// where the checker places it.
    pub snapshot: bool,
    /// Its operations in program order.
    pub ops: Vec<Op>,
}

/// A recorded history: transactions in the order they finished.
///
/// ```
/// use multiverse::{Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options { record_history: true, ..Options::default() }).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 16)).unwrap();
/// for k in 0..3u64 {
///     db.run(Isolation::Serializable, |tx| tx.insert(t, Key::from(k), b"v")).unwrap();
/// }
/// let h = db.take_history();
/// assert_eq!(h.txns.len(), 3);
/// assert!(h.txns.windows(2).all(|w| w[0].commit_ts < w[1].commit_ts));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    /// The transactions.
    pub txns: Vec<TxnRecord>,
}
