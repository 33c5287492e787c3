//! Recovery: the newest checkpoint, then the log streams merged in
//! commit-timestamp order (POMVCC paper, section VI.B: parallel logs need
//! no order until they are read back).
//!
//! 1. Load the newest checkpoint of the newest generation (a damaged one
//!    is refused: the logs before it may be gone).
//! 2. Find the last epoch mark in stream 0 (everything of epochs up to it
//!    was durable in every stream, see `durability::log`).
//! 3. Read the streams of that generation side by side, one file of each
//!    at a time, and take the records epoch by epoch: the smallest epoch
//!    left in any stream, from every stream. A stream stops at its first
//!    torn or damaged record (a crash mid-write leaves one); what it drops
//!    is reported.
//! 4. Replay an epoch's records whose commit timestamp follows the
//!    checkpoint's in commit-timestamp order, each as one transaction of
//!    puts and deletes (the tables' indexes are built as rows go in); stop
//!    at the first epoch past the mark.
//!
//! Epoch by epoch is a commit-timestamp order wherever it matters: a
//! transaction that read or overwrote another's writes appended its record
//! after that one did, so in the same epoch or a later one. It keeps
//! recovery's memory to one file per stream and one epoch's records
//! (docs/BENCHMARKS.md: 294 MB instead of 2.98 GB for 1.46 GB of log).
//!
//! POMVCC shares commit timestamps, so several records may carry the same
//! one. Section VI.B argues their order does not matter: transactions at
//! one timestamp never write the same record (the later writer aborts,
//! Table V). Recovery checks exactly that and counts any violation in
//! [`RecoveryReport::same_ts_conflicts`] (always 0 unless the engine is
//! broken).

use super::checkpoint;
use super::format::{decode, next_frame, Body, Framed, Reader};
use super::log::LOG_MAGIC;
use super::{parse_checkpoint_name, parse_log_name};
use crate::{Database, Isolation, Key, TableId, TxnOptions};
use crate::{Error, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What recovery found and did.
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
    /// Transactions replayed (intact, durable, after the checkpoint).
    pub replayed: u64,
    /// Writes they made.
    pub writes: u64,
    /// The last epoch marked durable.
    pub durable_epoch: u64,
    /// The largest commit timestamp replayed (of the recovered generation).
    pub last_commit_ts: Option<u64>,
    /// Pairs of replayed records at one commit timestamp that write the
    /// same row (see the module docs; 0 unless the engine is broken).
    pub same_ts_conflicts: u64,
    /// What was dropped, one line each: torn or damaged tails, records of
    /// epochs never marked durable, leftover temporary files.
    pub dropped: Vec<String>,
    /// How long recovery took.
    pub elapsed: Duration,
}

/// Recovers `dir` into `db` (whose tables exist and are empty).
pub(crate) fn recover(db: &Database, dir: &Path) -> Result<RecoveryReport> {
    let started = Instant::now();
    let mut rep = RecoveryReport::default();
    let mut checkpoints = Vec::new();
    let mut logs: Vec<(u64, u32, u32, PathBuf)> = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| Error::Io(format!("cannot read {}: {e}", dir.display())))?;
    for e in entries {
        let e = e.map_err(|e| Error::Io(format!("cannot read {}: {e}", dir.display())))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some((g, ts)) = parse_checkpoint_name(&name) {
            checkpoints.push((g, ts, e.path()));
        } else if let Some((g, s, q)) = parse_log_name(&name) {
            logs.push((g, s, q, e.path()));
        } else if name.starts_with("checkpoint-") && name.ends_with(".tmp") {
            rep.dropped.push(format!("{name}: an unfinished checkpoint (ignored)"));
        }
    }
    checkpoints.sort();
    let Some((generation, _, cp_path)) = checkpoints.last().cloned() else {
        if let Some((_, _, _, p)) = logs.first() {
            return Err(Error::Corrupt(format!(
                "{}: log files but no checkpoint; refusing to open {}",
                p.display(),
                dir.display()
            )));
        }
        rep.elapsed = started.elapsed();
        return Ok(rep);
    };
    rep.generation = generation;

    // 1. The checkpoint.
    let cp_name = file_name(&cp_path);
    let data = std::fs::read(&cp_path).map_err(|e| Error::Io(format!("cannot read {}: {e}", cp_path.display())))?;
    let mut ids: HashMap<String, TableId> = HashMap::new();
    let mut batch = Batch::new(db);
    let loaded = checkpoint::read(&cp_name, &data, |table, key, value| {
        let id = table_id(db, &mut ids, table)?;
        batch.put(id, key, value)
    })?;
    batch.finish()?;
    drop(data);
    if loaded.generation != generation {
        return Err(Error::Corrupt(format!("checkpoint {cp_name}: its header says generation {}", loaded.generation)));
    }
    rep.checkpoint = Some((cp_name, loaded.ts, loaded.rows));

    // 2. The log streams of this generation, one cursor each, reading one
    // file at a time. First the last epoch mark (stream 0 holds them).
    logs.retain(|l| l.0 == generation);
    logs.sort();
    let mut cursors: Vec<Cursor> = Vec::new();
    for (_, stream, _, path) in logs {
        match cursors.last_mut() {
            Some(c) if c.stream == stream => c.files.push_back(path),
            _ => cursors.push(Cursor::new(stream, path)),
        }
    }
    rep.streams = cursors.len();
    let marks = match cursors.iter().find(|c| c.stream == 0) {
        Some(c) => last_mark(c.files.clone())?,
        None => 0,
    };
    rep.durable_epoch = marks;

    // 3. and 4. Epoch by epoch: the records of the smallest epoch left in
    // any stream, replayed in commit-timestamp order if it is durable and
    // after the checkpoint. Each stream's epochs never decrease, and a
    // transaction that read or overwrote another's writes appended in the
    // same epoch or a later one (`durability::log`), so this order keeps
    // every conflict's order while holding one epoch's records at a time.
    let cp_ts = loaded.ts;
    let mut late = 0u64;
    let mut last_ts_keys: (u64, std::collections::HashSet<(u32, Key)>) = (u64::MAX, Default::default());
    let mut mine = std::collections::HashSet::new();
    // Each replay sees the checkpoint and the replay before it (POMVCC:
    // begin after its commit).
    let mut after = db.sync_commits()?;
    let mut epoch_recs: Vec<Rec> = Vec::new();
    let mut order = 0u64;
    loop {
        let mut next = None;
        for c in cursors.iter_mut() {
            if let Some(e) = c.peek_epoch(&mut rep)? {
                next = Some(next.map_or(e, |n: u64| n.min(e)));
            }
        }
        let Some(e) = next else { break };
        epoch_recs.clear();
        for c in cursors.iter_mut() {
            while c.peek_epoch(&mut rep)? == Some(e) {
                let r = c.take(order);
                order += 1;
                rep.records += 1;
                if e > marks {
                    late += 1;
                } else if r.ts > cp_ts {
                    epoch_recs.push(r);
                }
            }
        }
        epoch_recs.sort_by_key(|r| (r.ts, r.stream, r.order));
        for r in &epoch_recs {
            let Ok(Body::Txn { commit_ts, writes, .. }) = decode(&r.body) else {
                unreachable!("decoded once already");
            };
            if last_ts_keys.0 != commit_ts {
                last_ts_keys.0 = commit_ts;
                last_ts_keys.1.clear();
            }
            // The rows this record writes (a row written twice by one
            // transaction is one row).
            mine.clear();
            let mut t = db.begin_with(TxnOptions { after, ..TxnOptions::new(replay_isolation(db)) })?;
            for w in &writes {
                let Some(name) = r.tables.get(&w.table) else {
                    return Err(Error::Corrupt(format!(
                        "a log record writes table #{}, which its file's header does not name",
                        w.table
                    )));
                };
                let id = table_id(db, &mut ids, name)?;
                if mine.insert((w.table, w.key)) && !last_ts_keys.1.insert((w.table, w.key)) {
                    rep.same_ts_conflicts += 1;
                }
                match w.value {
                    Some(v) => match t.update(id, &w.key, v) {
                        Err(Error::KeyNotFound) => t.insert(id, w.key, v)?,
                        r => r?,
                    },
                    None => match t.delete(id, &w.key) {
                        Err(Error::KeyNotFound) => {}
                        r => r?,
                    },
                }
                rep.writes += 1;
            }
            after = Some(t.commit()?.commit_ts);
            rep.replayed += 1;
            rep.last_commit_ts = Some(commit_ts);
        }
    }
    for c in &cursors {
        rep.log_files += c.files_read;
        rep.log_bytes += c.bytes_read;
    }
    if late > 0 {
        rep.dropped.push(format!(
            "{late} transaction records of epochs after the last durable mark ({marks}): never acknowledged as durable"
        ));
    }
    rep.elapsed = started.elapsed();
    Ok(rep)
}

/// A transaction record read for replay: its body, and the table
/// directory of the file it came from.
struct Rec {
    ts: u64,
    stream: u32,
    order: u64,
    body: Vec<u8>,
    tables: std::rc::Rc<HashMap<u32, String>>,
}

/// One log stream, read a file at a time. A stream stops at its first torn
/// or damaged record (a crash mid-write leaves one); what it drops is
/// reported.
struct Cursor {
    stream: u32,
    /// Files not opened yet, in order.
    files: std::collections::VecDeque<PathBuf>,
    name: String,
    data: Vec<u8>,
    at: usize,
    tables: std::rc::Rc<HashMap<u32, String>>,
    /// The next transaction record (its epoch and commit timestamp, and
    /// where it is in `data`), once read.
    peeked: Option<(u64, u64, usize, usize)>,
    /// Why the stream stopped, if it did.
    stopped: Option<String>,
    files_read: usize,
    bytes_read: u64,
}

impl Cursor {
    fn new(stream: u32, first: PathBuf) -> Cursor {
        Cursor {
            stream,
            files: [first].into(),
            name: String::new(),
            data: Vec::new(),
            at: 0,
            tables: Default::default(),
            peeked: None,
            stopped: None,
            files_read: 0,
            bytes_read: 0,
        }
    }

    /// The epoch of the stream's next transaction record, reading on (and
    /// into its next files) as needed; `None` at its end.
    fn peek_epoch(&mut self, rep: &mut RecoveryReport) -> Result<Option<u64>> {
        loop {
            if let Some((epoch, ..)) = self.peeked {
                return Ok(Some(epoch));
            }
            if self.at >= self.data.len() && !self.open_next(rep)? {
                return Ok(None);
            }
            match next_frame(&self.data, self.at) {
                Framed::Body(b, next) => match decode(b) {
                    Ok(Body::Txn { epoch, commit_ts, .. }) => {
                        self.peeked = Some((epoch, commit_ts, self.at, next));
                        self.at = next;
                    }
                    Ok(Body::Mark { .. }) => self.at = next,
                    Err(e) => {
                        let at = self.at;
                        self.stop(rep, format!("an undecodable record at byte {at} ({e})"));
                    }
                },
                Framed::End => self.at = self.data.len(),
                Framed::Damaged(what) => {
                    let at = self.at;
                    self.stop(rep, format!("{what} at byte {at}"));
                }
            }
        }
    }

    /// Takes the record `peek_epoch` found.
    fn take(&mut self, order: u64) -> Rec {
        let (_, ts, start, end) = self.peeked.take().expect("peeked first");
        Rec {
            ts,
            stream: self.stream,
            order,
            body: self.data[start + super::format::FRAME..end].to_vec(),
            tables: self.tables.clone(),
        }
    }

    /// Drops the rest of the current file (reported) and every later file
    /// of the stream.
    fn stop(&mut self, rep: &mut RecoveryReport, what: String) {
        rep.dropped.push(format!("{}: {what}; {} bytes dropped", self.name, self.data.len() - self.at));
        self.stopped = Some(format!("damage in {}", self.name));
        self.at = self.data.len();
    }

    /// Opens the stream's next file; false if there is none left.
    fn open_next(&mut self, rep: &mut RecoveryReport) -> Result<bool> {
        loop {
            let Some(path) = self.files.pop_front() else {
                self.data = Vec::new();
                return Ok(false);
            };
            self.name = file_name(&path);
            if let Some(why) = &self.stopped {
                rep.dropped.push(format!("{}: whole file, after {why}", self.name));
                continue;
            }
            self.data = std::fs::read(&path).map_err(|e| Error::Io(format!("cannot read {}: {e}", path.display())))?;
            self.files_read += 1;
            self.bytes_read += self.data.len() as u64;
            match header(&self.data) {
                Ok((tables, at)) => {
                    self.tables = std::rc::Rc::new(tables);
                    self.at = at;
                    return Ok(true);
                }
                Err(what) => {
                    rep.dropped.push(format!(
                        "{}: {what}; the whole file ({} bytes) dropped",
                        self.name,
                        self.data.len()
                    ));
                    self.stopped = Some(format!("a damaged file in stream {}", self.stream));
                }
            }
        }
    }
}

/// The last epoch mark in stream 0's files (read one at a time), up to the
/// first damage.
fn last_mark(files: std::collections::VecDeque<PathBuf>) -> Result<u64> {
    let mut marks = 0;
    for path in files {
        let data = std::fs::read(&path).map_err(|e| Error::Io(format!("cannot read {}: {e}", path.display())))?;
        let Ok((_, mut at)) = header(&data) else { return Ok(marks) };
        loop {
            match next_frame(&data, at) {
                Framed::Body(b, next) => {
                    match decode(b) {
                        Ok(Body::Mark { epoch }) => marks = epoch.max(marks),
                        Ok(Body::Txn { .. }) => {}
                        Err(_) => return Ok(marks),
                    }
                    at = next;
                }
                Framed::End => break,
                Framed::Damaged(_) => return Ok(marks),
            }
        }
    }
    Ok(marks)
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Replays run at the weakest level the protocol offers: one thread, no
/// concurrency to guard against.
fn replay_isolation(db: &Database) -> Isolation {
    db.protocol().isolation_levels()[0]
}

fn table_id(db: &Database, ids: &mut HashMap<String, TableId>, name: &str) -> Result<TableId> {
    if let Some(&id) = ids.get(name) {
        return Ok(id);
    }
    let id = db.table(name).map_err(|_| {
        Error::InvalidArgument(format!("the data names table '{name}', which the schema does not create"))
    })?;
    ids.insert(name.to_string(), id);
    Ok(id)
}

/// A log file's header: the table directory, and where records begin.
fn header(data: &[u8]) -> std::result::Result<(HashMap<u32, String>, usize), String> {
    if data.len() < LOG_MAGIC.len() || &data[..LOG_MAGIC.len()] != LOG_MAGIC {
        return Err("not a log file (bad magic)".into());
    }
    let (body, next) = match next_frame(data, LOG_MAGIC.len()) {
        Framed::Body(b, next) => (b, next),
        Framed::End => return Err("no header".into()),
        Framed::Damaged(what) => return Err(format!("{what} in its header")),
    };
    let parse = || -> Result<HashMap<u32, String>> {
        let mut r = Reader::new(body);
        let _generation = r.u64()?;
        let n = r.u32()?;
        let mut m = HashMap::new();
        for _ in 0..n {
            let id = r.u32()?;
            let len = r.u16()? as usize;
            let name = String::from_utf8_lossy(r.bytes(len)?).into_owned();
            m.insert(id, name);
        }
        Ok(m)
    };
    parse().map(|m| (m, next)).map_err(|e| e.to_string())
}

/// Loads rows in transactions of a bounded size.
struct Batch<'a> {
    db: &'a Database,
    t: Option<crate::Transaction<'a>>,
    n: usize,
}

impl<'a> Batch<'a> {
    fn new(db: &'a Database) -> Batch<'a> {
        Batch { db, t: None, n: 0 }
    }

    fn put(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        if self.t.is_none() {
            self.t = Some(self.db.begin_with(TxnOptions::new(replay_isolation(self.db)))?);
        }
        let t = self.t.as_mut().expect("just begun");
        match t.insert(table, key, value) {
            Err(Error::DuplicateKey) => {
                return Err(Error::Corrupt(format!("the checkpoint holds key {key:?} of one table twice")))
            }
            r => r?,
        }
        self.n += 1;
        if self.n >= 1000 {
            self.finish()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.n = 0;
        match self.t.take() {
            Some(t) => t.commit().map(|_| ()),
            None => Ok(()),
        }
    }
}
