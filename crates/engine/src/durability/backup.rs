//! Online backups: a consistent copy of a running database, durable or
//! in memory, into a new directory that [`Database::open`] opens.
//!
//! A backup is a checkpoint (see `super::checkpoint`) written into a
//! directory of its own: every row as of one snapshot timestamp, read by a
//! read-only snapshot transaction while updaters go on. A durable
//! single-version database (silo, 1v-lock, 2pl-ordered) freezes commits
//! for the scan, as its checkpoints do; one in memory, whose committers do
//! not enter the freeze, is read by an ordinary transaction at its
//! strongest level that locks or validates what it reads (retried with a
//! backoff when it aborts). Silo in memory has no snapshot to read: under
//! a steady write load on the rows it scans, its validation can fail every
//! time, and the backup then fails with [`Error::Aborted`] (transient;
//! nothing is written). Back such a database up between bursts, or run it
//! durable, where the backup freezes commits instead. BOHM's is an
//! interactive transaction, which runs alone.
//!
//! The directory holds one checkpoint file and no log: opening it
//! recovers exactly the snapshot. The checkpoint records each table's
//! definition, as a data directory does: [`Database::open`] opens the
//! backup with its tables as they were, and a schema given to
//! [`Database::open_with`] must match them (secondary indexes need the
//! schema for their key functions, which are the application's code).
//!
//! **Atomic.** Everything is written into a temporary directory beside
//! the target (`.NAME.backup-PID-N.tmp`), synced, and renamed to the
//! target, then the parent is synced: a crash leaves either the whole
//! backup or no target at all (and perhaps the temporary directory, which
//! nothing opens by that name). The target must not exist or be an empty
//! directory: a backup never overwrites anything ([`Error::NotEmpty`]).

use super::checkpoint;
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::wal::sync_dir;
use crate::{Database, Error, Result};
use std::path::{Path, PathBuf};

/// What a backup wrote (see [`Database::backup`]).
///
/// ```
/// # use multiverse::{Database, Options, TableSpec};
/// let db = Database::new(Options::default()).unwrap();
/// db.create_table(TableSpec::hash("t", 64)).unwrap();
/// let dir = tempfile::tempdir().unwrap();
/// let info = db.backup(&dir.path().join("b")).unwrap();
/// assert_eq!((info.rows, info.dir.file_name().unwrap().to_str()), (0, Some("b")));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupInfo {
    /// The backup's directory.
    pub dir: PathBuf,
    /// Its snapshot timestamp: it holds every commit before it (for a
    /// single-version database in memory, the commit sequence as read,
    /// which only recording advances).
    pub ts: u64,
    /// Rows written.
    pub rows: u64,
    /// Bytes written (the checkpoint and any extra files).
    pub bytes: u64,
}

/// Names the engine gives its own files in a data directory.
fn reserved(name: &str) -> bool {
    name == super::LOCK_FILE
        || name == super::MANIFEST_FILE
        || name.starts_with("checkpoint-")
        || super::parse_log_name(name).is_some()
        || name.starts_with("log-")
}

impl Database {
    /// Writes an online, consistent backup of this database (durable or in
    /// memory, any protocol) into `dir`, a new directory that
    /// [`Database::open`] opens (or [`Database::open_with`], with the same
    /// schema): every row as of one
    /// snapshot, taken while transactions go on (see
    /// [`crate::durability::backup`]). `dir` must not exist or be an empty
    /// directory ([`Error::NotEmpty`] otherwise: nothing is overwritten);
    /// the backup appears there whole or not at all, synced. An in-memory
    /// Silo database under a steady write load may fail it with
    /// [`Error::Aborted`] (see the module docs).
    ///
    /// ```
    /// use multiverse::{Database, Durability, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// db.run(Isolation::Snapshot, |x| x.insert(t, Key::from(1), b"one")).unwrap();
    /// let dir = tempfile::tempdir().unwrap();
    /// let backup = dir.path().join("backup");
    /// assert_eq!(db.backup(&backup).unwrap().rows, 1);
    /// // Never over an existing backup.
    /// assert!(matches!(db.backup(&backup), Err(multiverse::Error::NotEmpty(_))));
    ///
    /// let opts = Options { data_dir: Some(backup.clone()), durability: Durability::Async, ..Options::default() };
    /// let (copy, _) = Database::open_with(opts, |d| d.create_table(TableSpec::hash("t", 64)).map(|_| ())).unwrap();
    /// let t = copy.table("t").unwrap(); // handles are their database's
    /// let mut x = copy.begin(Isolation::Snapshot).unwrap();
    /// assert_eq!(x.get(t, &Key::from(1)).unwrap().as_deref(), Some(&b"one"[..]));
    /// drop(x);
    /// copy.close().unwrap();
    /// // The backup records its tables: it opens without a schema too.
    /// let copy = Database::open(&backup).unwrap();
    /// assert_eq!(copy.table_names(), ["t"]);
    /// ```
    pub fn backup(&self, dir: impl AsRef<Path>) -> Result<BackupInfo> {
        self.backup_with(dir, &[])
    }

    /// As [`Database::backup`], adding `files` (name, contents) to the
    /// backup's directory, written and synced before it appears: for what
    /// an application keeps beside its data (a schema description, say).
    /// A name must be a plain file name that is none of the engine's own
    /// (`LOCK`, `manifest`, `checkpoint-*`, `log-*`) and does not begin
    /// with a dot ([`Error::InvalidArgument`] otherwise).
    ///
    /// ```
    /// # use multiverse::{Database, Options};
    /// let db = Database::new(Options::default()).unwrap();
    /// let dir = tempfile::tempdir().unwrap();
    /// let b = dir.path().join("b");
    /// db.backup_with(&b, &[("schema.txt", b"t: hash")]).unwrap();
    /// assert_eq!(std::fs::read(b.join("schema.txt")).unwrap(), b"t: hash");
    /// assert!(db.backup_with(&dir.path().join("c"), &[("LOCK", b"")]).is_err());
    /// ```
    pub fn backup_with(&self, dir: impl AsRef<Path>, files: &[(&str, &[u8])]) -> Result<BackupInfo> {
        let dir = dir.as_ref();
        for (name, _) in files {
            let plain = !name.is_empty()
                && !name.starts_with('.')
                && !name.contains(['/', '\\', '\0'])
                && Path::new(name).file_name() == Some(std::ffi::OsStr::new(name));
            if !plain || reserved(name) {
                return Err(Error::InvalidArgument(format!(
                    "backup: '{name}' cannot be an extra file's name (a plain file name, not one of the engine's)"
                )));
            }
        }
        let (parent, name) = target(dir)?;
        std::fs::create_dir_all(&parent)
            .map_err(|e| Error::Io(format!("backup: cannot create {}: {e}", parent.display())))?;
        static N: AtomicU64 = AtomicU64::new(0);
        // Relaxed: a unique number.
        let n = N.fetch_add(1, Ordering::Relaxed);
        let tmp = parent.join(format!(".{}.backup-{}-{n}.tmp", name.to_string_lossy(), std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir(&tmp).map_err(|e| Error::Io(format!("backup: cannot create {}: {e}", tmp.display())))?;
        let mut cleanup = RemoveDirOnDrop(Some(tmp.clone()));
        let cp = {
            // One checkpoint at a time: two single-version freezes at once
            // would end each other's.
            let _one = self.durable.as_ref().map(|d| d.checkpointing.lock());
            checkpoint::write_with(self, &tmp, 1, self.log.is_some())?
        };
        let mut bytes = cp.bytes;
        for (name, data) in files {
            let p = tmp.join(name);
            let io = |e: std::io::Error| Error::Io(format!("backup: {}: {e}", p.display()));
            let f = std::fs::File::create(&p).map_err(io)?;
            std::io::Write::write_all(&mut &f, data).map_err(io)?;
            f.sync_all().map_err(io)?;
            bytes += data.len() as u64;
        }
        sync_dir(&tmp)?;
        let dir = parent.join(&name);
        // Over an empty directory or none; refused (ENOTEMPTY, EEXIST) if
        // something appeared there meanwhile.
        std::fs::rename(&tmp, &dir).map_err(|e| match std::fs::read_dir(&dir).map(|mut d| d.next().is_some()) {
            Ok(true) => not_empty(&dir),
            _ => Error::Io(format!("backup: cannot rename {} to {}: {e}", tmp.display(), dir.display())),
        })?;
        cleanup.0 = None;
        sync_dir(&parent)?;
        Ok(BackupInfo { dir, ts: cp.ts, rows: cp.rows, bytes })
    }
}

fn not_empty(dir: &Path) -> Error {
    Error::NotEmpty(format!("{} exists and is not an empty directory; nothing was overwritten", dir.display()))
}

/// The target's parent directory and name, once it is known not to exist
/// or to be an empty directory.
fn target(dir: &Path) -> Result<(PathBuf, std::ffi::OsString)> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {
            let mut entries =
                std::fs::read_dir(dir).map_err(|e| Error::Io(format!("backup: cannot read {}: {e}", dir.display())))?;
            if entries.next().is_some() {
                return Err(not_empty(dir));
            }
            let full = std::fs::canonicalize(dir)
                .map_err(|e| Error::Io(format!("backup: cannot resolve {}: {e}", dir.display())))?;
            match (full.parent(), full.file_name()) {
                (Some(p), Some(n)) => Ok((p.to_path_buf(), n.to_os_string())),
                _ => Err(Error::InvalidArgument(format!("backup: {} cannot be a backup's directory", dir.display()))),
            }
        }
        Ok(_) => Err(not_empty(dir)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match dir.file_name() {
            Some(n) => {
                let p = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
                Ok((p.to_path_buf(), n.to_os_string()))
            }
            None => Err(Error::InvalidArgument(format!("backup: {} cannot be a backup's directory", dir.display()))),
        },
        Err(e) => Err(Error::Io(format!("backup: cannot read {}: {e}", dir.display()))),
    }
}

/// Removes a directory and what it holds when dropped, unless disarmed.
struct RemoveDirOnDrop(Option<PathBuf>);

impl Drop for RemoveDirOnDrop {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}
