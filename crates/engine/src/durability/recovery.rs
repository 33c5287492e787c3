//! Recovery: the newest checkpoint, then the log streams merged in
//! commit-timestamp order (POMVCC paper, section VI.B: parallel logs need
//! no order until they are read back).
//!
//! 1. Load the newest checkpoint of the newest generation (a damaged one
//!    is refused: the logs before it may be gone).
//! 2. Read every log file of that generation, stream by stream. A stream
//!    stops at its first torn or damaged record (a crash mid-write leaves
//!    one); what it drops is reported.
//! 3. Keep the transaction records whose epoch is at most the last epoch
//!    mark (everything before the mark was durable in every stream, see
//!    `durability::log`) and whose commit timestamp follows the
//!    checkpoint's.
//! 4. Replay them in commit-timestamp order, each as one transaction of
//!    puts and deletes; the tables' indexes are built as rows go in.
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

/// A transaction record kept for replay.
struct Rec {
    ts: u64,
    epoch: u64,
    stream: u32,
    order: u64,
    file: usize,
    start: usize,
    end: usize,
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

    // 2. The log streams of this generation.
    logs.retain(|l| l.0 == generation);
    logs.sort();
    let mut files: Vec<Vec<u8>> = Vec::new();
    let mut recs: Vec<Rec> = Vec::new();
    let mut tables_of: Vec<HashMap<u32, String>> = Vec::new();
    let mut stopped: HashMap<u32, String> = HashMap::new();
    let mut marks = 0u64;
    let mut order = 0u64;
    let mut streams = std::collections::BTreeSet::new();
    for (_, stream, _, path) in &logs {
        streams.insert(*stream);
        let name = file_name(path);
        if let Some(why) = stopped.get(stream) {
            rep.dropped.push(format!("{name}: whole file, after {why}"));
            continue;
        }
        let data = std::fs::read(path).map_err(|e| Error::Io(format!("cannot read {}: {e}", path.display())))?;
        rep.log_files += 1;
        rep.log_bytes += data.len() as u64;
        let (dir_tables, mut at) = match header(&data) {
            Ok(h) => h,
            Err(what) => {
                rep.dropped.push(format!("{name}: {what}; the whole file ({} bytes) dropped", data.len()));
                stopped.insert(*stream, format!("a damaged file in stream {stream}"));
                continue;
            }
        };
        let fi = files.len();
        loop {
            match next_frame(&data, at) {
                Framed::Body(b, next) => {
                    match decode(b) {
                        Ok(Body::Txn { epoch, commit_ts, .. }) => {
                            rep.records += 1;
                            let r =
                                Rec { ts: commit_ts, epoch, stream: *stream, order, file: fi, start: at, end: next };
                            recs.push(r);
                            order += 1;
                        }
                        Ok(Body::Mark { epoch }) => marks = marks.max(epoch),
                        Err(e) => {
                            rep.dropped.push(format!(
                                "{name}: an undecodable record at byte {at} ({e}); {} bytes dropped",
                                data.len() - at
                            ));
                            stopped.insert(*stream, format!("damage in {name}"));
                            break;
                        }
                    }
                    at = next;
                }
                Framed::End => break,
                Framed::Damaged(what) => {
                    rep.dropped.push(format!("{name}: {what} at byte {at}; {} bytes dropped", data.len() - at));
                    stopped.insert(*stream, format!("damage in {name}"));
                    break;
                }
            }
        }
        files.push(data);
        tables_of.push(dir_tables);
    }
    rep.streams = streams.len();
    rep.durable_epoch = marks;

    // 3. Durable, and after the checkpoint.
    let cp_ts = loaded.ts;
    let total = recs.len();
    let mut late = 0usize;
    let mut kept = Vec::with_capacity(total);
    for r in recs {
        if r.epoch > marks {
            late += 1;
        } else if r.ts > cp_ts {
            kept.push(r);
        }
    }
    if late > 0 {
        rep.dropped.push(format!(
            "{late} transaction records of epochs after the last durable mark ({marks}): never acknowledged as durable"
        ));
    }

    // 4. Replay in commit-timestamp order.
    kept.sort_by_key(|r| (r.ts, r.stream, r.order));
    let mut last_ts_keys: (u64, std::collections::HashSet<(u32, Key)>) = (u64::MAX, Default::default());
    let mut log_ids: Vec<HashMap<u32, TableId>> = vec![HashMap::new(); files.len()];
    // Each replay sees the checkpoint and the replay before it (POMVCC:
    // begin after its commit).
    let mut after = db.sync_commits()?;
    let mut mine = std::collections::HashSet::new();
    for r in &kept {
        let body = &files[r.file][r.start + super::format::FRAME..r.end];
        let Ok(Body::Txn { commit_ts, writes, .. }) = decode(body) else {
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
            let id = match log_ids[r.file].get(&w.table) {
                Some(&id) => id,
                None => {
                    let Some(name) = tables_of[r.file].get(&w.table) else {
                        return Err(Error::Corrupt(format!(
                            "a log record writes table #{}, which its file's header does not name",
                            w.table
                        )));
                    };
                    let id = table_id(db, &mut ids, name)?;
                    log_ids[r.file].insert(w.table, id);
                    id
                }
            };
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
    rep.elapsed = started.elapsed();
    Ok(rep)
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
