//! Opening a durable database (`Database::open_with`: the directory's
//! lock, the schema and its check against the directory's, recovery, a
//! fresh checkpoint, the log; `Database::open`, the same with the
//! defaults and no schema), closing it (`Database::close`), its
//! checkpointer thread, and what a durable database adds to `Database`:
//! checkpoints, flushing, and the waits of sync durability. The
//! directory's state the database keeps is `db::durable::Durable`.

use crate::db::durable::Durable;
use crate::durability::{self, Durability, RecoveryReport};
use crate::obs;
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::*;
use parking_lot::Mutex;
use std::path::Path;
use std::time::Duration;

impl Database {
    /// Opens (or creates) the durable database in the directory `path`,
    /// with every table its data describes, under sync durability: a
    /// commit returns once it is on disk. It is
    /// [`Database::open_with`] with the default [`Options`] but
    /// [`Durability::Sync`] and `data_dir` `path`, and a schema that
    /// creates nothing: each table the directory holds is created as it
    /// was (a table with secondary indexes needs their key functions, a
    /// schema's: [`Error::KeyFunctionNeeded`]). Open tables with
    /// [`Database::open_table`], which creates them on the first run and
    /// checks them on the next; [`Database::close`] flushes and releases
    /// the directory.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, TableSpec};
    ///
    /// # let tmp = tempfile::tempdir().unwrap();
    /// # let path = tmp.path().join("db");
    /// let db = Database::open(&path).unwrap();
    /// let t = db.open_table(TableSpec::hash("kv", 64)).unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"one")).unwrap();
    /// db.close().unwrap();
    ///
    /// // The table and its rows are there on the next open.
    /// let db = Database::open(&path).unwrap();
    /// assert_eq!(db.table_names(), ["kv"]);
    /// let t = db.open_table(TableSpec::hash("kv", 64)).unwrap();
    /// let v = db.run(Isolation::Snapshot, |x| x.get(t, &Key::from(1))).unwrap();
    /// assert_eq!(v.as_deref(), Some(&b"one"[..]));
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Database> {
        let opts = Options { durability: Durability::Sync, data_dir: Some(path.as_ref().into()), ..Options::default() };
        Database::open_with(opts, |_| Ok(())).map(|(db, _report)| db)
    }

    /// Opens the durable database in `opts.data_dir` (created if missing):
    /// `schema` creates tables, the directory's record of its tables is
    /// checked against them, recovery loads the newest checkpoint and
    /// replays the logs (see [`crate::durability`]), a new checkpoint of
    /// the recovered state is written, and logging starts.
    ///
    /// The directory records each table's definition (its indexes' kinds,
    /// a typed table's key and value types; see
    /// [`crate::durability`]): a table `schema` creates with another
    /// definition fails the open with [`Error::SchemaMismatch`], changing
    /// nothing, and a table it does not create is created as recorded
    /// (one with secondary indexes needs their key functions, which only
    /// `schema` can give: [`Error::KeyFunctionNeeded`]). A directory
    /// written before definitions were recorded needs `schema` to create
    /// every table it names.
    ///
    /// The directory's lock is taken first: a directory another open
    /// database holds fails with [`Error::Locked`]. A damaged checkpoint is
    /// refused with [`Error::Corrupt`]. Of the log, the longest prefix of
    /// the commit order that it holds is replayed, and what is dropped is
    /// reported in the [`RecoveryReport`]: a crash's torn tail silently,
    /// but damage that a crash cannot explain, or the loss of commits that
    /// may have been acknowledged, is refused with [`Error::Corrupt`] (the
    /// default, [`OnDamage::Refuse`](crate::OnDamage::Refuse): nothing is
    /// changed), or, under
    /// [`OnDamage::KeepPrefix`](crate::OnDamage::KeepPrefix), opened at its
    /// prefix after the damaged generation's files are moved into a
    /// quarantine folder ([`RecoveryReport::quarantine`]).
    ///
    /// ```
    /// use multiverse::{Database, Durability, Error, IndexKind, Key, Options, TableSpec};
    ///
    /// # let tmp = tempfile::tempdir().unwrap();
    /// let opts = Options { durability: Durability::Sync, data_dir: Some(tmp.path().join("db")), ..Options::default() };
    /// // The schema: a secondary index's key function is code, given on every open.
    /// let spec = || TableSpec::ordered("t").secondary("by_len", IndexKind::Ordered, |_, v| Key::from(v.len() as u64));
    /// let schema = |db: &Database| db.create_table(spec()).map(drop);
    /// let (db, _report) = Database::open_with(opts.clone(), schema).unwrap();
    /// assert_eq!(db.durability(), Durability::Sync);
    /// // A directory has one owner at a time.
    /// assert!(matches!(Database::open_with(opts.clone(), schema), Err(Error::Locked(_))));
    /// db.close().unwrap();
    ///
    /// // The directory records the table: another definition is refused.
    /// let other = |db: &Database| db.create_table(TableSpec::hash("t", 64)).map(drop);
    /// let e = Database::open_with(opts.clone(), other).err().unwrap();
    /// assert_eq!(e.to_string(), "table 't': stored as ordered, opened as hash(64)");
    /// // Its secondary index needs the schema's key function.
    /// let e = Database::open_with(opts.clone(), |_| Ok(())).err().unwrap();
    /// assert!(matches!(e, Error::KeyFunctionNeeded { .. }), "{e}");
    /// assert!(Database::open_with(opts, schema).is_ok());
    /// ```
    pub fn open_with(
        opts: Options,
        schema: impl FnOnce(&Database) -> Result<()>,
    ) -> Result<(Database, RecoveryReport)> {
        let Some(dir) = opts.data_dir.clone() else {
            return Err(Error::InvalidArgument("Database::open_with needs Options::data_dir".into()));
        };
        let _span = obs::span!(info, "open", protocol = opts.protocol.name(), dir = %dir.display());
        if opts.durability == Durability::None {
            return Err(Error::InvalidArgument("durability none keeps nothing on disk: choose async or sync".into()));
        }
        if opts.log_streams == 0 || opts.log_streams > 256 {
            return Err(Error::InvalidArgument("log_streams must be between 1 and 256".into()));
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::Io(format!("cannot create {}: {e}", dir.display())))?;
        let lock = lock_dir(&dir)?;
        let mut db = Database::new_unlogged(opts)?;
        schema(&db)?;
        // Before recovery loads a row, and before anything is written.
        durability::schema::check(&db, &durability::schema::stored(&dir)?)?;
        let mut report = durability::recovery::recover(&db, &dir)?;
        db.sync_commits()?;
        // A new generation: its checkpoint holds everything recovered.
        let generation = report.generation + 1;
        if report.damaged {
            // Kept (`OnDamage::KeepPrefix`; `Refuse` returned above): what
            // the old generation's files hold past the prefix is not in
            // the new checkpoint, so they are moved aside, not removed.
            report.quarantine = Some(durability::quarantine::keep(&dir, &report)?);
        }
        // Stray log files of this generation or later (reported by
        // recovery as damage, not replayed, quarantined) would stand in
        // the new log's way.
        remove_files(&dir, |name| durability::parse_log_name(name).is_some_and(|(g, _, _)| g >= generation))?;
        durability::checkpoint::write(&db, &dir, generation)?;
        remove_generations_before(&dir, generation)?;
        let o = &db.opts;
        let log = durability::log::Log::start(&dir, generation, o, &db.table_list(), db.obs.clone())?;
        let background = o.checkpoint_every.is_some() || o.checkpoint_log_bytes.is_some();
        let core = std::sync::Arc::get_mut(&mut db.core).expect("no other handle before the open completes");
        core.shared.log = Some(log);
        core.durable = Some(Durable {
            _lock: lock,
            dir,
            generation,
            checkpointing: Mutex::new(()),
            checkpoints: AtomicU64::new(0),
            checkpoint_failed: Mutex::new(None),
            checkpointer: Mutex::new(None),
            stop: (Mutex::new(false), parking_lot::Condvar::new()),
        });
        if background {
            let handle = Database { core: db.core.clone(), owner: false };
            let t = std::thread::Builder::new()
                .name("multiverse-checkpoint".into())
                .spawn(move || handle.checkpointer())
                .map_err(|e| Error::Io(format!("cannot start the checkpointer: {e}")))?;
            *db.durable.as_ref().expect("just set").checkpointer.lock() = Some(t);
        }
        Ok((db, report))
    }

    /// Closes the database: stops the checkpointer (after the checkpoint
    /// it is writing, if any), makes every commit durable with a last log
    /// round, and releases the data directory, which the next
    /// [`Database::open`] may take at once. Returns that round's error, or
    /// the failure that stopped the log before ([`Error::LogFailed`]): a
    /// commit may then not be durable (see [`Error::LogFailed`]).
    /// Dropping a database does the same but cannot report the error. An
    /// in-memory database is just dropped.
    ///
    /// ```
    /// use multiverse::{Database, Durability, Error, Isolation, Key, Options, TableSpec};
    ///
    /// # let tmp = tempfile::tempdir().unwrap();
    /// let opts = Options { durability: Durability::Async, data_dir: Some(tmp.path().into()), ..Options::default() };
    /// let (db, _) = Database::open_with(opts.clone(), |db| db.create_table(TableSpec::hash("t", 64)).map(drop)).unwrap();
    /// let t = db.table("t").unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"v")).unwrap();
    /// db.close().unwrap(); // the async commit above is on disk now
    /// let (db, report) = Database::open_with(opts, |_| Ok(())).unwrap();
    /// assert_eq!(report.replayed, 1);
    /// # drop(db);
    /// Database::new(Options::default()).unwrap().close().unwrap();
    /// ```
    pub fn close(self) -> Result<()> {
        if let Some(d) = &self.durable {
            d.stop_checkpointer();
        }
        let r = self.log.as_ref().map_or(Ok(()), |log| log.close());
        // The drop finds the checkpointer stopped and the log closed; the
        // directory's lock goes with the last handle.
        drop(self);
        r
    }

    /// Writes a checkpoint (a read-only snapshot transaction, concurrent
    /// with updaters) and drops the log files and older checkpoints it
    /// makes unnecessary. Only for durable databases.
    ///
    /// ```
    /// use multiverse::{Database, Durability, Isolation, Key, Options, TableSpec};
    ///
    /// # let tmp = tempfile::tempdir().unwrap();
    /// let opts = Options { durability: Durability::Async, data_dir: Some(tmp.path().into()), ..Options::default() };
    /// let (db, _) = Database::open_with(opts, |db| db.create_table(TableSpec::hash("t", 64)).map(drop)).unwrap();
    /// let t = db.table("t").unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"v")).unwrap();
    /// assert_eq!(db.checkpoint().unwrap().rows, 1);
    /// assert_eq!(db.stats().checkpoints, 1);
    /// // An in-memory database has nothing to checkpoint.
    /// assert!(Database::new(Options::default()).unwrap().checkpoint().is_err());
    /// ```
    pub fn checkpoint(&self) -> Result<CheckpointInfo> {
        let (Some(d), Some(log)) = (&self.durable, &self.log) else {
            return Err(Error::InvalidArgument("checkpoint: not a durable database".into()));
        };
        // Fail-stop: what memory holds after a failed log round may not be
        // durable; a checkpoint of it would make it so.
        log.check()?;
        let _one = d.checkpointing.lock();
        let started = obs::Started::now();
        // Later commits go to new files: the old ones can go once covered.
        log.rotate_all()?;
        let info = durability::checkpoint::write(self, &d.dir, d.generation)?;
        // Everything appended before the checkpoint is durable before the
        // files that held it go (the checkpoint is, already).
        log.flush()?;
        log.truncate_before(info.ts)?;
        remove_checkpoints_before(&d.dir, d.generation, info.ts)?;
        log.checkpointed();
        // Relaxed: a counter.
        d.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.obs.checkpointed(started);
        Ok(info)
    }

    /// Loads the data directory `dir` into this in-memory database (whose
    /// tables exist and are empty), as [`Database::open_with`] does, but
    /// leaves the directory as it is: for inspecting it (`multiverse
    /// recover`). The tables need not be those the directory records (no
    /// schema check, no table created): every table it names must exist.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// # let tmp = tempfile::tempdir().unwrap();
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"v")).unwrap();
    /// let dir = tmp.path().join("backup");
    /// db.backup(&dir).unwrap();
    ///
    /// // Load the directory into an in-memory database, without owning it.
    /// let copy = Database::new(Options::default()).unwrap();
    /// let t = copy.create_table(TableSpec::ordered("t")).unwrap();
    /// let report = copy.recover_from(&dir).unwrap();
    /// assert_eq!(report.checkpoint.map(|(_file, _ts, rows)| rows), Some(1));
    /// assert!(copy.run(Isolation::Snapshot, |x| x.get(t, &Key::from(1))).unwrap().is_some());
    /// ```
    pub fn recover_from(&self, dir: impl AsRef<Path>) -> Result<RecoveryReport> {
        if self.durable.is_some() {
            return Err(Error::InvalidArgument("recover_from: the database is durable already".into()));
        }
        let r = durability::recovery::recover(self, dir.as_ref())?;
        self.sync_commits()?;
        Ok(r)
    }

    /// The checkpointer thread: writes each checkpoint that falls due (see
    /// [`Options::checkpoint_every`]) until the owner's handle drops.
    fn checkpointer(self) {
        let (Some(d), Some(log)) = (&self.durable, &self.log) else { return };
        // The flusher declares checkpoints due; looking a little later than
        // that is fine, and an idle database wakes this thread rarely.
        let poll = self
            .opts
            .checkpoint_every
            .map_or(Duration::from_millis(50), |e| (e / 4).clamp(Duration::from_millis(1), Duration::from_millis(50)));
        loop {
            {
                let mut stop = d.stop.0.lock();
                if !*stop {
                    d.stop.1.wait_for(&mut stop, poll);
                }
                if *stop {
                    return;
                }
            }
            if log.take_due() {
                let r = self.checkpoint();
                if r.is_err() {
                    // Tried again after the next interval, not at once.
                    log.checkpointed();
                }
                *d.checkpoint_failed.lock() = r.err();
            }
        }
    }

    /// Why the last checkpoint that fell due failed, if it did (it is
    /// tried again after the next interval; the log keeps growing
    /// meanwhile, and nothing committed is lost).
    ///
    /// ```
    /// use multiverse::{Database, Options};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// assert_eq!(db.checkpoint_error(), None);
    /// ```
    pub fn checkpoint_error(&self) -> Option<Error> {
        self.durable.as_ref().and_then(|d| d.checkpoint_failed.lock().clone())
    }
}

/// Takes the lock of the data directory `dir` for the database opening it:
/// a second open (of this process or another) fails with
/// [`Error::Locked`] naming the holder (after a moment's retry if the
/// holder is this process: see below). The lock (`flock`) goes with the
/// file handle, so a crashed owner's lock is gone with its process.
fn lock_dir(dir: &std::path::Path) -> Result<std::fs::File> {
    use std::io::{Read, Seek, Write};
    let path = dir.join(durability::LOCK_FILE);
    let io = |e: std::io::Error| Error::Io(format!("cannot lock {}: {e}", path.display()));
    let mut f =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
    // A lock that names this process may be one we just let go of: a
    // child forked by another thread of ours (`Command::spawn`) shares the
    // lock's open file until it execs, microseconds later. Such a lock is
    // retried for a moment; another process's is refused at once.
    let ours = format!("process {},", std::process::id());
    let start = std::time::Instant::now();
    loop {
        match f.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = f.seek(std::io::SeekFrom::Start(0)).and_then(|_| f.read_to_string(&mut holder));
                let holder = holder.trim();
                if holder.starts_with(&ours) && start.elapsed() < std::time::Duration::from_millis(200) {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    continue;
                }
                let holder =
                    if holder.is_empty() { "another process or handle".to_string() } else { holder.to_string() };
                return Err(Error::Locked(format!("{} is in use by another open database ({holder})", dir.display())));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
    }
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let who = format!("process {}, opened at unix time {since}\n", std::process::id());
    f.set_len(0)
        .and_then(|_| f.seek(std::io::SeekFrom::Start(0)))
        .and_then(|_| f.write_all(who.as_bytes()))
        .map_err(io)?;
    Ok(f)
}

/// Removes every checkpoint and log file of generations before `generation`.
fn remove_generations_before(dir: &std::path::Path, generation: u64) -> Result<()> {
    remove_files(dir, |name| {
        durability::parse_checkpoint_name(name).is_some_and(|(g, _)| g < generation)
            || durability::parse_log_name(name).is_some_and(|(g, _, _)| g < generation)
            || (name.starts_with("checkpoint-") && name.ends_with(".tmp"))
    })
}

/// Removes the checkpoints of `generation` older than `ts`.
fn remove_checkpoints_before(dir: &std::path::Path, generation: u64, ts: u64) -> Result<()> {
    remove_files(dir, |name| durability::parse_checkpoint_name(name).is_some_and(|(g, t)| g == generation && t < ts))
}

fn remove_files(dir: &std::path::Path, which: impl Fn(&str) -> bool) -> Result<()> {
    let io = |e: std::io::Error| Error::Io(format!("{}: {e}", dir.display()));
    let mut any = false;
    for e in std::fs::read_dir(dir).map_err(io)? {
        let e = e.map_err(io)?;
        if which(&e.file_name().to_string_lossy()) {
            std::fs::remove_file(e.path()).map_err(io)?;
            any = true;
        }
    }
    if any {
        durability::sync_dir(dir)?;
    }
    Ok(())
}
