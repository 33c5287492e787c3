//! Parallel redo log streams with epoch-based group commit.
//!
//! Hekaton (section 3.2) writes one redo record per transaction during
//! preparation and commits groups of them with one I/O; MPDB (POMVCC
//! paper, sections V and VI.B) writes one log per thread, in parallel, and
//! orders the streams by commit timestamp only at recovery. We do both:
//!
//! * **Streams.** A committing thread appends its record to its own stream
//!   (threads are spread over the streams round-robin), an in-memory
//!   buffer behind a short lock; nothing else is shared on the commit path.
//!   The streams' files take the rounds in turn, so recovery reads them
//!   side by side.
//! * **Epochs and rounds.** Every record carries the epoch it was
//!   appended in (read under the stream's lock). The flusher closes the
//!   current epoch `e` (the counter moves to `e + 1`), takes every
//!   stream's buffer, and writes them all, then an epoch mark `e`, to *one*
//!   file: stream `e % streams`'s, and syncs it. The round is durable, and
//!   its commits acknowledged, once that sync returns. One sync a round
//!   whatever the number of streams: a disk that does not overlap two
//!   syncs (this project's VM does not: `docs/DURABILITY.md`, "Measurements")
//!   would otherwise pay one per stream. An epoch with no record stays
//!   open (no round, no sync), so the epochs that advance are exactly the
//!   rounds written, and stream `s` holds the marks `s, s + n, s + 2n...`
//!   (stream 0: `n, 2n...`). Recovery replays the epochs before the first
//!   round missing from its stream (see `durability::recovery`); rounds
//!   run one after another, so any mark also proves every earlier round
//!   complete, and a missing one is damage, not a crash.
//! * **Epoch order in a file.** A buffer holds records of `e` and, after
//!   them, of `e + 1` (appends between the flusher's increment and its
//!   take): a round writes every buffer's records of `e`, then those of
//!   `e + 1`, then the mark, so a file's epochs never go backwards.
//! * **Why that is consistent.** A transaction appends its record before it
//!   becomes Committed, so one that reads or overwrites its writes (which it
//!   can only do once they are committed) appends later, with an epoch no
//!   smaller. Replaying a prefix of epochs thus never replays a transaction
//!   without one it depended on, whichever streams the two used.
//! * **Durable visibility.** Under sync durability nothing a transaction's
//!   commit returns can be lost by a crash; how depends on the family
//!   (both measured in `docs/DURABILITY.md`, "Readers and durability"):
//!   - *Multi-version families* (Hekaton MV/O and MV/L, SSN, SSI, POMVCC):
//!     a writer appends its record and waits for its round while still
//!     Preparing, and becomes Committed only then (Hekaton section 3.2). A
//!     reader that meets its versions meanwhile reads them speculatively
//!     and takes a commit dependency, which its own commit waits for; any
//!     Committed version is durable. A read-only transaction thus waits
//!     only for rounds it read from (3 µs instead of ~170 µs median for
//!     SmallBank's Balance at 2 clients).
//!   - *Single-version stores and BOHM* (no commit dependencies): Silo's
//!     rule (section 4.10). A writer's commit waits for its own epoch,
//!     which covers everything it read (appended before it, so in an
//!     epoch no later); a transaction that wrote nothing waits at commit
//!     for the newest epoch holding any record ([`Log::wait_visible`]):
//!     whatever it read was appended by then. It costs a reader a wait only
//!     while a round is pending.
//!
//!   A transaction's reads are released to its client by its commit: an
//!   uncommitted transaction may have read what a crash loses, as in Silo.
//! * **Fail-stop.** A round whose write or sync fails is never retried:
//!   after a failed `fsync` the kernel may have dropped the dirty pages,
//!   and a retry that "succeeds" proves nothing (PostgreSQL's lesson). The
//!   flusher cuts the round's bytes off the file again where it can (so a
//!   write that reaches the disk later cannot bring back commits reported
//!   as failed), marks the log failed and stops. From then on
//!   [`Log::check`] fails, and with it every `begin` and every commit of
//!   every family: a writer waiting for its round gets
//!   [`Error::LogFailed`] (the multi-version families abort it, and its
//!   readers with it through their commit dependencies; the
//!   single-version stores and BOHM, which cannot take an installed write
//!   back, refuse everyone after it instead). Reopening the directory
//!   recovers the durable prefix: the failed round is a torn tail.
//! * **Placed files.** Each file's header names its generation, stream,
//!   the number of streams, its sequence number and the stream's last mark
//!   before it (`format`); the `manifest` lists each stream's files and is
//!   rewritten (atomically) whenever a file is added or dropped, so a
//!   missing, duplicated or misplaced file is seen as damage.
//! * **Group commit.** Under [`Durability::Async`] a commit returns at once
//!   and the flusher runs every [`crate::Options::group_commit_interval`];
//!   under [`Durability::Sync`] a commit waits until its epoch is marked
//!   durable, and asks the flusher to start a round at once: every commit
//!   that arrives during a round's I/O shares the next round's syncs.
//!
//! Files rotate at [`crate::Options::log_rotate_bytes`]; a checkpoint drops
//! the ones whose records all precede it (see `durability::checkpoint`).

use super::format::{frame, LogHeader, Manifest, TableEntry, FRAME, KIND_TXN, OP_DELETE, OP_PUT};
use super::{log_file_name, sync_dir, MANIFEST_FILE};
use crate::breakdown::{self, Part};
use crate::obs::Metrics;
use crate::options::Durability;
use crate::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::{Error, Result};
use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

mod flusher;

/// The bytes of a framed epoch mark.
const FRAME_MARK: usize = FRAME + 9;

/// What a committing thread appends into, under the stream's lock.
#[derive(Default)]
struct Pending {
    buf: Vec<u8>,
    /// Largest commit timestamp in `buf`.
    max_ts: u64,
    /// The epoch of `buf`'s first record, and where its records of the
    /// next epoch begin (`usize::MAX`: none). A buffer holds at most two
    /// epochs: the one the flusher closes next, and the one it opened by
    /// closing it (appends that came between its increment and its take).
    first_epoch: u64,
    split: usize,
}

/// A log file of a stream and the largest commit timestamp it holds.
pub(crate) struct LogFile {
    pub(crate) path: PathBuf,
    pub(crate) seq: u32,
    pub(crate) max_ts: u64,
}

/// The flusher's side of a stream: its files.
struct Files {
    current: File,
    size: u64,
    seq: u32,
    /// The last epoch mark written to this stream (the next file's
    /// `start_mark`).
    last_mark: u64,
    /// Every file of this generation still kept, the current one last.
    files: Vec<LogFile>,
}

struct Stream {
    pending: CachePadded<Mutex<Pending>>,
    files: Mutex<Files>,
}

/// Counters for reports.
#[derive(Default)]
pub(crate) struct LogStats {
    pub(crate) bytes: AtomicU64,
    pub(crate) records: AtomicU64,
    pub(crate) rounds: AtomicU64,
    pub(crate) syncs: AtomicU64,
}

pub(crate) struct Shared {
    dir: PathBuf,
    generation: u64,
    mode: Durability,
    interval: Duration,
    rotate_bytes: u64,
    /// Test-only: how long each round waits before it writes (see
    /// `Faults::log_round_delay`); zero otherwise.
    round_delay: Duration,
    /// Test-only: a failing disk (`Faults::fail_log_write_after` and
    /// `fail_log_sync_after`): the round after this many fails.
    fail_write_after: Option<u64>,
    fail_sync_after: Option<u64>,
    /// The table directory every new file's header names.
    tables: Mutex<Vec<TableEntry>>,
    /// The manifest as last written (rewritten under this lock).
    manifest: Mutex<Manifest>,
    streams: Box<[Stream]>,
    /// The epoch appenders stamp (read under a stream's lock).
    epoch: CachePadded<AtomicU64>,
    /// The newest epoch any record was stamped with (see
    /// [`Log::wait_visible`]).
    appended: CachePadded<AtomicU64>,
    /// The last epoch marked durable.
    durable: CachePadded<AtomicU64>,
    /// Fail-stop: a round failed; no epoch will be marked durable again
    /// (the reason is `Wake::failed`). Read by every begin and commit of a
    /// durable database, written once: a line of its own, never dirtied
    /// by the counters beside it.
    failed: CachePadded<AtomicBool>,
    /// Guards `durable` waits and the flusher's wake-up flag.
    wake: Mutex<Wake>,
    woken: Condvar,
    done: Condvar,
    stop: AtomicBool,
    pub(crate) stats: LogStats,
    /// When a checkpoint falls due.
    due_after: DueAfter,
    /// A checkpoint is due (set by the flusher, taken by a committer).
    due: CachePadded<AtomicBool>,
    /// When the last checkpoint was taken, and the log's size then.
    since: Mutex<(std::time::Instant, u64)>,
    /// Metric handles (the `metrics` feature).
    obs: Metrics,
}

/// When the flusher declares a checkpoint due (see
/// [`crate::Options::checkpoint_every`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DueAfter {
    pub(crate) every: Option<Duration>,
    pub(crate) log_bytes: Option<u64>,
}

#[derive(Default)]
struct Wake {
    /// A committer waits for durability: run a round now.
    asked: bool,
    /// The flusher hit an I/O error; no epoch will be marked durable again.
    failed: Option<String>,
}

/// The redo log of a database (one generation of it).
pub(crate) struct Log {
    shared: Arc<Shared>,
    flusher: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// The writes of one redo record, as a committer lists them.
pub(crate) struct Redo<'a> {
    buf: &'a mut Vec<u8>,
}

impl Redo<'_> {
    /// One write: the row `key` of table `table` now holds `value`, or is
    /// deleted (`None`).
    #[inline]
    pub(crate) fn put(&mut self, table: u32, key: &[u8], value: Option<&[u8]>) {
        self.buf.extend_from_slice(&table.to_le_bytes());
        self.buf.push(if value.is_some() { OP_PUT } else { OP_DELETE });
        super::format::put_key(self.buf, key);
        if let Some(v) = value {
            super::format::put_value(self.buf, v);
        }
    }
}

/// Spreads threads over the streams.
static NEXT_STREAM: AtomicUsize = AtomicUsize::new(0);
thread_local! {
    static STREAM: usize = NEXT_STREAM.fetch_add(1, Ordering::Relaxed); // Relaxed: any spread will do
}

impl Log {
    /// Starts a log of generation `generation` in `dir` as `o` says
    /// (durability, streams, group commit interval, rotation, when
    /// checkpoints fall due); files `log-<generation>-<stream>-<seq>.mvl`,
    /// listed in the `manifest` (written last: a manifest names only files
    /// that exist).
    pub(crate) fn start(
        dir: &Path,
        generation: u64,
        o: &crate::Options,
        tables: &[TableEntry],
        obs: Metrics,
    ) -> Result<Log> {
        let (mode, streams, interval, rotate_bytes) =
            (o.durability, o.log_streams, o.group_commit_interval, o.log_rotate_bytes);
        let due = DueAfter { every: o.checkpoint_every, log_bytes: o.checkpoint_log_bytes };
        let mut ss = Vec::with_capacity(streams);
        for s in 0..streams {
            let path = dir.join(log_file_name(generation, s as u32, 0));
            let header = LogHeader {
                generation,
                stream: s as u32,
                streams: streams as u32,
                seq: 0,
                start_mark: 0,
                tables: tables.to_vec(),
            }
            .encode();
            let current = new_file(&path, &header)?;
            ss.push(Stream {
                pending: CachePadded::new(Mutex::new(Pending::default())),
                files: Mutex::new(Files {
                    current,
                    size: header.len() as u64,
                    seq: 0,
                    last_mark: 0,
                    files: vec![LogFile { path, seq: 0, max_ts: 0 }],
                }),
            });
        }
        sync_dir(dir)?;
        let manifest = Manifest { generation, files: vec![(0, 0); streams] };
        write_manifest(dir, &manifest)?;
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            generation,
            mode,
            interval,
            rotate_bytes: rotate_bytes.max(4096),
            round_delay: o.faults.log_round_delay,
            fail_write_after: o.faults.fail_log_write_after,
            fail_sync_after: o.faults.fail_log_sync_after,
            tables: Mutex::new(tables.to_vec()),
            manifest: Mutex::new(manifest),
            streams: ss.into_boxed_slice(),
            epoch: CachePadded::new(AtomicU64::new(1)),
            appended: CachePadded::new(AtomicU64::new(0)),
            durable: CachePadded::new(AtomicU64::new(0)),
            failed: CachePadded::new(AtomicBool::new(false)),
            wake: Mutex::new(Wake::default()),
            woken: Condvar::new(),
            done: Condvar::new(),
            stop: AtomicBool::new(false),
            stats: LogStats::default(),
            due_after: due,
            due: CachePadded::new(AtomicBool::new(false)),
            since: Mutex::new((std::time::Instant::now(), 0)),
            obs,
        });
        let s2 = Arc::clone(&shared);
        let flusher = std::thread::Builder::new()
            .name("multiverse-log".into())
            .spawn(move || s2.flusher())
            .map_err(|e| Error::Io(format!("cannot start the log flusher: {e}")))?;
        Ok(Log { shared, flusher: Mutex::new(Some(flusher)) })
    }

    pub(crate) fn mode(&self) -> Durability {
        self.shared.mode
    }

    /// True once per due checkpoint: the caller writes it. One Relaxed
    /// load in the common case (a committer asks after every commit).
    #[inline]
    pub(crate) fn take_due(&self) -> bool {
        // Relaxed, then an Acquire swap: one caller wins the flag; the
        // checkpoint itself synchronizes through its own locks.
        self.shared.due.load(Ordering::Relaxed) && self.shared.due.swap(false, Ordering::Acquire)
    }

    /// A checkpoint was written (or failed): the next one falls due from now.
    pub(crate) fn checkpointed(&self) {
        // Relaxed: statistics-grade counter, read by the flusher only.
        *self.shared.since.lock() = (std::time::Instant::now(), self.shared.stats.bytes.load(Ordering::Relaxed));
    }

    pub(crate) fn stats(&self) -> &LogStats {
        &self.shared.stats
    }

    /// Appends the redo record of a transaction that committed at
    /// `commit_ts`, with the writes `writes` lists into the [`Redo`] it is
    /// given (returning their count); `scratch` is the caller's reusable
    /// buffer. Returns the record's epoch.
    pub(crate) fn append(
        &self,
        commit_ts: u64,
        scratch: &mut Vec<u8>,
        writes: impl FnOnce(&mut Redo<'_>) -> u32,
    ) -> u64 {
        // The body after the epoch, encoded outside the lock.
        scratch.clear();
        scratch.extend_from_slice(&commit_ts.to_le_bytes());
        scratch.extend_from_slice(&0u32.to_le_bytes());
        let n = writes(&mut Redo { buf: scratch });
        scratch[8..12].copy_from_slice(&n.to_le_bytes());
        let sh = &self.shared;
        let s = &sh.streams[STREAM.with(|s| *s) % sh.streams.len()];
        let mut p = s.pending.lock();
        // Relaxed: read under the stream's lock, which orders it after the
        // flusher's increment if the flusher already took this buffer.
        let epoch = sh.epoch.load(Ordering::Relaxed);
        let before = p.buf.len();
        if before == 0 {
            p.first_epoch = epoch;
            p.split = usize::MAX;
        } else if epoch != p.first_epoch && p.split == usize::MAX {
            p.split = before;
        }
        debug_assert!(epoch <= p.first_epoch + 1, "a buffer holds at most two epochs");
        frame(&mut p.buf, |b| {
            b.push(KIND_TXN);
            b.extend_from_slice(&epoch.to_le_bytes());
            b.extend_from_slice(scratch);
        });
        p.max_ts = p.max_ts.max(commit_ts);
        let added = (p.buf.len() - before) as u64;
        drop(p);
        // Relaxed both: `appended` only grows (fetch_max), and a reader of
        // our writes loads it after an Acquire that saw us Committed (or
        // unlocked), which we become after this; coherence then shows it
        // this value or a larger one. Written once per epoch, not per
        // commit: the load skips the shared write when it is current.
        if sh.appended.load(Ordering::Relaxed) < epoch {
            sh.appended.fetch_max(epoch, Ordering::Relaxed);
        }
        // Relaxed: statistics only.
        sh.stats.bytes.fetch_add(added, Ordering::Relaxed);
        sh.stats.records.fetch_add(1, Ordering::Relaxed);
        epoch
    }

    /// Fail-stop (module docs): `Err(Error::LogFailed)` once a round has
    /// failed. One load of a line nobody writes, in the common case.
    #[inline]
    pub(crate) fn check(&self) -> Result<()> {
        // Acquire: pairs with the flusher's Release store; the reason itself
        // is read under the lock.
        if self.shared.failed.load(Ordering::Acquire) {
            return Err(self.shared.failure());
        }
        Ok(())
    }

    /// Waits until every record of `epoch` is durable (sync mode), asking
    /// the flusher for a round at once. Fails with [`Error::LogFailed`] if
    /// the log failed before that epoch was durable.
    pub(crate) fn wait_durable(&self, epoch: u64) -> Result<()> {
        let sh = &self.shared;
        // Acquire: pairs with the flusher's Release store after its syncs.
        if sh.durable.load(Ordering::Acquire) >= epoch {
            return Ok(());
        }
        let _timed = breakdown::span(Part::LogWait);
        let mut w = sh.wake.lock();
        loop {
            // Durable first: a round that failed after ours does not undo
            // ours, and a writer told "failed" must really not be durable.
            // Acquire: as above (and the lock orders it after the store).
            if sh.durable.load(Ordering::Acquire) >= epoch {
                return Ok(());
            }
            if let Some(e) = &w.failed {
                return Err(Error::LogFailed(e.clone()));
            }
            if !w.asked {
                w.asked = true;
                sh.woken.notify_one();
            }
            sh.done.wait(&mut w);
        }
    }

    /// A transaction that wrote nothing commits: waits until everything it
    /// can have read is durable (module docs, "Durable visibility"). One
    /// load and one comparison when nothing is pending.
    #[inline]
    pub(crate) fn wait_visible(&self) -> Result<()> {
        let sh = &self.shared;
        // Relaxed: see `append` (the reads that matter happened-before
        // this load through the versions' Acquire loads).
        let newest = sh.appended.load(Ordering::Relaxed);
        // Acquire: pairs with the flusher's Release store.
        if sh.durable.load(Ordering::Acquire) >= newest {
            return Ok(());
        }
        self.wait_durable(newest)
    }

    /// Makes everything appended so far durable (one round), e.g. before a
    /// checkpoint or on close.
    pub(crate) fn flush(&self) -> Result<()> {
        // Appends that finished before this call raised `appended` to
        // their epoch (see `wait_visible`); nothing else needs a round.
        self.wait_visible()
    }

    /// Drops the files of this generation whose records all precede `ts`
    /// (a durable checkpoint holds their effects): the longest run of such
    /// files at the start of each stream, never its current file, so the
    /// files kept stay a contiguous run. The manifest is rewritten first:
    /// a crash in between leaves files before its first one, which
    /// recovery ignores. Returns how many files were removed.
    pub(crate) fn truncate_before(&self, ts: u64) -> Result<usize> {
        let sh = &self.shared;
        let mut gone = Vec::new();
        {
            // Lock order: the streams' files, then the manifest (as `rotate`).
            let mut fs: Vec<_> = sh.streams.iter().map(|s| s.files.lock()).collect();
            let mut m = sh.manifest.lock();
            let mut next = m.clone();
            for (i, f) in fs.iter_mut().enumerate() {
                let last = f.files.len() - 1;
                let n = f.files[..last].iter().take_while(|lf| lf.max_ts < ts).count();
                if n == 0 {
                    continue;
                }
                gone.extend(f.files.drain(..n).map(|lf| lf.path));
                next.files[i].0 = f.files[0].seq;
            }
            if gone.is_empty() {
                return Ok(0);
            }
            write_manifest(&sh.dir, &next)?;
            *m = next;
        }
        for path in &gone {
            std::fs::remove_file(path).map_err(|e| Error::Io(format!("cannot remove {}: {e}", path.display())))?;
        }
        sync_dir(&sh.dir)?;
        Ok(gone.len())
    }

    /// Starts a new file in every stream (so that a checkpoint can later
    /// drop the ones before it).
    pub(crate) fn rotate_all(&self) -> Result<()> {
        let sh = &self.shared;
        for (i, s) in sh.streams.iter().enumerate() {
            let mut f = s.files.lock();
            sh.rotate(i, &mut f)?;
        }
        Ok(())
    }

    /// A table was created (or its types recorded): new files name it in
    /// their header, and every stream starts a new file now, before any
    /// record can write the table. `tables` is merged into the directory
    /// (`TableEntry::merge`), never replaces it: a list taken before a
    /// concurrent creator's reaches here after it and loses nothing.
    pub(crate) fn set_tables(&self, tables: &[TableEntry]) -> Result<()> {
        {
            let mut have = self.shared.tables.lock();
            for t in tables {
                match have.iter_mut().find(|h| h.id == t.id) {
                    Some(h) => h.merge(t),
                    None => have.push(t.clone()),
                }
            }
            have.sort_by_key(|t| t.id);
        }
        self.rotate_all()
    }

    /// Stops the flusher after a final round: that round's error, or the
    /// failure that stopped the log before, if any. Once closed, a second
    /// call (the drop after `Database::close`) does nothing.
    pub(crate) fn close(&self) -> Result<()> {
        let mut flusher = self.flusher.lock();
        if flusher.is_none() {
            return Ok(());
        }
        let r = self.flush().and_then(|()| self.check());
        self.shared.stop.store(true, Ordering::SeqCst);
        {
            let _w = self.shared.wake.lock();
            self.shared.woken.notify_one();
        }
        if let Some(h) = flusher.take() {
            let _ = h.join();
        }
        r
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl Shared {
    /// Starts stream `i`'s next file (synced, and named in the directory),
    /// then lists it in the manifest.
    fn rotate(&self, i: usize, f: &mut Files) -> Result<()> {
        let seq = f.seq + 1;
        let path = self.dir.join(log_file_name(self.generation, i as u32, seq));
        let header = LogHeader {
            generation: self.generation,
            stream: i as u32,
            streams: self.streams.len() as u32,
            seq,
            start_mark: f.last_mark,
            tables: self.tables.lock().clone(),
        }
        .encode();
        let current = new_file(&path, &header)?;
        sync_dir(&self.dir)?;
        {
            let mut m = self.manifest.lock();
            let mut next = m.clone();
            next.files[i].1 = seq;
            write_manifest(&self.dir, &next)?;
            *m = next;
        }
        f.seq = seq;
        f.current = current;
        f.size = header.len() as u64;
        f.files.push(LogFile { path, seq, max_ts: 0 });
        Ok(())
    }
}

/// Replaces the manifest atomically: a temporary file, synced, renamed,
/// and the directory synced.
fn write_manifest(dir: &Path, m: &Manifest) -> Result<()> {
    let tmp = dir.join(format!("{MANIFEST_FILE}.tmp"));
    let path = dir.join(MANIFEST_FILE);
    let io = |p: &Path, e: std::io::Error| Error::Io(format!("cannot write {}: {e}", p.display()));
    let mut f = File::create(&tmp).map_err(|e| io(&tmp, e))?;
    f.write_all(&m.encode()).map_err(|e| io(&tmp, e))?;
    f.sync_all().map_err(|e| io(&tmp, e))?;
    drop(f);
    std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))?;
    sync_dir(dir)
}

fn new_file(path: &Path, header: &[u8]) -> Result<File> {
    let mut f = OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(path)
        .map_err(|e| Error::Io(format!("cannot create {}: {e}", path.display())))?;
    f.write_all(header).map_err(|e| Error::Io(format!("cannot write {}: {e}", path.display())))?;
    f.sync_data().map_err(|e| Error::Io(format!("cannot sync {}: {e}", path.display())))?;
    Ok(f)
}
