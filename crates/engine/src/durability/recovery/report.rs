//! What recovery found and did: the [`RecoveryReport`] that recovery fills
//! in and the quarantine reads, kept apart from the recovery code so that
//! the quarantine does not depend on it. "The module docs" its fields point
//! to are the parent's (`durability::recovery`).

use std::path::PathBuf;
use std::time::Duration;

/// What recovery found and did.
///
/// ```
/// use multiverse::{Database, Durability, Isolation, Key, Options, TableSpec};
///
/// # let tmp = tempfile::tempdir().unwrap();
/// let opts = Options { durability: Durability::Sync, data_dir: Some(tmp.path().into()), ..Options::default() };
/// let schema = |db: &Database| db.create_table(TableSpec::hash("t", 64)).map(drop);
/// let (db, report) = Database::open_with(opts.clone(), schema).unwrap();
/// assert_eq!((report.generation, report.replayed), (0, 0)); // a new directory
/// let t = db.table("t").unwrap();
/// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"v")).unwrap();
/// drop(db);
/// let (_db, report) = Database::open_with(opts, schema).unwrap();
/// assert_eq!((report.generation, report.replayed), (1, 1));
/// assert!(!report.damaged);
/// ```
#[derive(Clone, Debug, Default)]
pub struct RecoveryReport {
    /// The generation recovered (0: the directory was empty).
    pub generation: u64,
    /// The checkpoint loaded: file name, snapshot timestamp, rows.
    pub checkpoint: Option<(String, u64, u64)>,
    /// Log files read.
    pub log_files: usize,
    /// Bytes of the log files read.
    pub log_bytes: u64,
    /// Log streams seen.
    pub streams: usize,
    /// Transaction records read intact.
    pub records: u64,
    /// Transactions replayed (intact, in the consistent prefix, after the
    /// checkpoint).
    pub replayed: u64,
    /// Writes they made.
    pub writes: u64,
    /// The epoch replay went through: every stream held every record of
    /// every epoch up to it (see the module docs).
    pub durable_epoch: u64,
    /// The largest commit timestamp replayed (of the recovered generation).
    pub last_commit_ts: Option<u64>,
    /// Pairs of replayed records at one commit timestamp that write the
    /// same row (see the module docs; 0 unless the engine is broken).
    pub same_ts_conflicts: u64,
    /// What was dropped, one line each, and why: a torn tail (a crash
    /// mid-write: never acknowledged), damage, missing or misplaced files,
    /// records past the consistent prefix, leftover temporary files.
    pub dropped: Vec<String>,
    /// The directory holds damage that a crash cannot explain, or lost
    /// commits that may have been acknowledged as durable: the state
    /// recovered is a consistent prefix, but not necessarily every commit
    /// acknowledged. [`crate::OnDamage::Refuse`] refuses such a directory.
    pub damaged: bool,
    /// Where [`crate::Database::open_with`] under
    /// [`crate::OnDamage::KeepPrefix`] moved the damaged generation's files
    /// (a folder `quarantine-<generation>` inside the data directory, with
    /// a `README.txt`); `None` when nothing was damaged, and always for
    /// [`crate::Database::recover_from`], which changes nothing.
    pub quarantine: Option<PathBuf>,
    /// How long recovery took.
    pub elapsed: Duration,
}
