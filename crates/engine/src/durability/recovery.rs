//! Recovery: the newest checkpoint, then the longest prefix of the log
//! that every stream holds, merged in commit-timestamp order (POMVCC
//! paper, section VI.B: parallel logs need no order until they are read
//! back).
//!
//! 1. **Scan** (one thread per stream). Each stream's files are checked
//!    against the `manifest` and their headers (generation, stream, number
//!    of streams, sequence number, the mark they start after), then read
//!    to their end: a stream stops at its first damaged record, missing or
//!    misplaced file, or epoch going backwards. What each stream holds
//!    intact ends at its *last mark* `m(s)`; its marks must be the rounds
//!    `durability::log` gives it (`s, s + n, s + 2n...` of `n` streams),
//!    one after the other.
//! 2. **The cut.** Round `e` (mark `e` and the records before it) is in
//!    stream `e % n`, and a record of epoch `e` is in round `e` or
//!    `e - 1`, so replay goes through epoch `D`, the one before the
//!    first round missing from its stream: every record of every epoch up
//!    to `D` is there, and a transaction's record never depends on one of
//!    a later epoch, so the records of epochs `<= D` are a prefix of the
//!    commit order. Rounds run one after another, so the round before the
//!    newest mark found, `A`, completed (its commits may have been
//!    acknowledged); the newest may not have. `D < A` means that
//!    acknowledged commits are lost: that, and anything a crash cannot
//!    produce (a gap, a duplicate, damage followed by intact records, a
//!    missing manifest) makes the directory *damaged*. A crash's torn tail
//!    is not damage: nothing it held was acknowledged.
//! 3. **Policy.** [`crate::OnDamage::KeepPrefix`] (the default) recovers
//!    the prefix and reports, one line each, what it dropped and why;
//!    [`crate::OnDamage::Refuse`] fails with [`Error::Corrupt`] instead.
//! 4. **Load** the newest checkpoint of the newest generation (a damaged
//!    one is refused: the logs before it may be gone).
//! 5. **Replay** the records of epochs up to `D` whose commit timestamp
//!    follows the checkpoint's, epoch by epoch, each epoch's in commit
//!    timestamp order: one thread per stream reads its files a chunk at a
//!    time, the main thread merges them into that order, and replay
//!    workers, each owning the rows whose key hashes to it, keep the
//!    newest value of each of their rows, then write those into the
//!    database (see [`replay`]).
//!
//! Epoch by epoch is a commit-timestamp order wherever it matters: a
//! transaction that read or overwrote another's writes appended its record
//! after that one did, so in the same epoch or a later one. Replay's
//! memory is a few chunks per stream plus, per worker, at most
//! [`MAX_ROWS`] rows' newest values, whatever the log's length.
//!
//! POMVCC shares commit timestamps, so several records may carry the same
//! one. Section VI.B argues their order does not matter: transactions at
//! one timestamp never write the same record (the later writer aborts,
//! Table V). Recovery checks exactly that and counts any violation in
//! [`RecoveryReport::same_ts_conflicts`] (always 0 unless the engine is
//! broken).

use super::checkpoint;
use super::format::{decode_txn, next_frame, Framed, LogHeader, Manifest, FRAME, KIND_MARK, KIND_TXN, LOG_MAGIC};
use super::{parse_checkpoint_name, parse_log_name, MANIFEST_FILE};
use crate::{Database, Isolation, Key, OnDamage, TableId, TxnOptions};
use crate::{Error, Result};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
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
    /// How long recovery took.
    pub elapsed: Duration,
}

/// The files of a directory, by kind.
#[derive(Default)]
struct Listing {
    checkpoints: Vec<(u64, u64, PathBuf)>,
    /// (generation, stream, seq, path), sorted.
    logs: Vec<(u64, u32, u32, PathBuf)>,
    manifest: Option<PathBuf>,
}

fn list(dir: &Path, rep: &mut RecoveryReport) -> Result<Listing> {
    let mut l = Listing::default();
    let entries = std::fs::read_dir(dir).map_err(|e| Error::Io(format!("cannot read {}: {e}", dir.display())))?;
    for e in entries {
        let e = e.map_err(|e| Error::Io(format!("cannot read {}: {e}", dir.display())))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some((g, ts)) = parse_checkpoint_name(&name) {
            l.checkpoints.push((g, ts, e.path()));
        } else if let Some((g, s, q)) = parse_log_name(&name) {
            l.logs.push((g, s, q, e.path()));
        } else if name == MANIFEST_FILE {
            l.manifest = Some(e.path());
        } else if name.starts_with("checkpoint-") && name.ends_with(".tmp") {
            rep.dropped.push(format!("{name}: an unfinished checkpoint (ignored)"));
        }
    }
    l.checkpoints.sort();
    l.logs.sort();
    Ok(l)
}

/// Recovers `dir` into `db` (whose tables exist and are empty), as
/// `db`'s [`crate::Options::on_damage`] says.
pub(crate) fn recover(db: &Database, dir: &Path) -> Result<RecoveryReport> {
    let started = Instant::now();
    let mut rep = RecoveryReport::default();
    let listing = list(dir, &mut rep)?;
    let Some((generation, _, cp_path)) = listing.checkpoints.last().cloned() else {
        if let Some((_, _, _, p)) = listing.logs.first() {
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
    // Log files of a generation newer than the newest checkpoint: a
    // generation begins with its checkpoint, so no crash leaves them (a
    // copied or restored file). Not replayed; `Database::open` removes
    // them before it starts that generation's log.
    for (g, _, _, p) in listing.logs.iter().filter(|x| x.0 > generation) {
        rep.damaged = true;
        rep.dropped.push(format!(
            "{}: a log file of generation {g}, newer than the newest checkpoint's ({generation}): not replayed",
            file_name(p)
        ));
    }

    // 1. and 2. Scan the streams; the cut.
    let plan = plan_streams(generation, &listing, &mut rep)?;
    let scans: Vec<Scan> = std::thread::scope(|sc| {
        let hs: Vec<_> = plan.iter().map(|p| sc.spawn(move || scan(generation, p))).collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Scan::failed("the scan panicked"))).collect()
    });
    rep.streams = plan.len();
    let cut = Cut::of(&scans);
    rep.durable_epoch = cut.d;
    for s in &scans {
        let lost = s.next_round() <= cut.acknowledged;
        rep.damaged |= s.damaged_structure || lost;
        rep.dropped.extend(s.lines.iter().cloned());
        if lost {
            rep.dropped.push(format!(
                "stream {}: its round of epoch {} is lost, but rounds up to epoch {} completed: \
                 commits acknowledged as durable are lost",
                s.stream,
                s.next_round(),
                cut.acknowledged
            ));
        }
    }
    let beyond: u64 = scans.iter().map(|s| s.records_after(cut.d)).sum();
    if beyond > 0 {
        rep.dropped.push(if cut.d >= cut.acknowledged {
            format!(
                "{beyond} transaction records of epochs after {}: their round never completed, \
                 so none was acknowledged as durable",
                cut.d
            )
        } else {
            format!(
                "{beyond} intact transaction records of epochs after {} dropped to keep a consistent prefix \
                 (a damaged stream lost epochs up to {})",
                cut.d, cut.acknowledged
            )
        });
    }
    if rep.damaged && db.opts.on_damage == OnDamage::Refuse {
        let why = rep.dropped.iter().find(|l| !l.contains("unfinished checkpoint")).cloned().unwrap_or_default();
        return Err(Error::Corrupt(format!(
            "{}: the data directory is damaged ({why}); refusing to recover it (Options::on_damage)",
            dir.display()
        )));
    }

    // 4. The checkpoint.
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

    // 5. Replay.
    replay(db, &scans, cut.d, loaded.ts, &mut rep)?;
    for s in &scans {
        rep.log_files += s.files.len();
        rep.log_bytes += s.bytes;
        rep.records += s.records;
    }
    rep.elapsed = started.elapsed();
    Ok(rep)
}

/// A stream's files as the manifest (or, without one, the names) list
/// them.
struct StreamPlan {
    stream: u32,
    streams: u32,
    /// The files expected, in order: the sequence number, and the path if
    /// the file exists.
    files: Vec<(u32, Option<PathBuf>)>,
    /// Why the files cannot be checked, if they cannot (reported once),
    /// and whether that alone is damage (a damaged manifest), or only
    /// when the files hold records (no manifest: a crash before the log
    /// began leaves its files empty).
    unchecked: Option<(String, bool)>,
    /// The last file lies beyond the manifest's (a crash between a
    /// rotation's new file and the manifest's rewrite; its header may be
    /// torn).
    beyond: bool,
}

/// Matches the directory's files of `generation` against its manifest.
fn plan_streams(generation: u64, l: &Listing, rep: &mut RecoveryReport) -> Result<Vec<StreamPlan>> {
    let logs: Vec<_> = l.logs.iter().filter(|x| x.0 == generation).collect();
    let manifest = match &l.manifest {
        Some(p) => {
            let data = std::fs::read(p).map_err(|e| Error::Io(format!("cannot read {}: {e}", p.display())))?;
            match Manifest::decode(&data) {
                Ok(m) if m.generation == generation => Ok(m),
                // The manifest of the generation before: the crash came
                // before this generation's log began.
                Ok(m) if m.generation < generation => Err(None),
                Ok(m) => {
                    Err(Some(format!("the manifest is of generation {}, the checkpoint of {generation}", m.generation)))
                }
                Err(e) => Err(Some(format!("the manifest is damaged: {e}"))),
            }
        }
        None => Err(None),
    };
    // A manifest names a contiguous run of files per stream, all of which
    // were created before it was written: one whose runs are far longer
    // than the files present is damaged, not a list of missing files (and
    // is not trusted with an allocation of its size).
    let manifest = manifest.and_then(|m| {
        let listed =
            m.files.iter().try_fold(0u64, |n, &(first, last)| (first <= last).then(|| n + u64::from(last - first) + 1));
        match listed {
            Some(n) if n <= logs.len() as u64 + m.files.len() as u64 + 16 => Ok(m),
            Some(n) => Err(Some(format!(
                "the manifest is damaged: it lists {n} log files, the directory holds {}",
                logs.len()
            ))),
            None => Err(Some("the manifest is damaged: a stream's files end before they begin".to_string())),
        }
    });
    let manifest = match manifest {
        Ok(m) => m,
        Err(why) => {
            // No manifest of this generation: the log was never begun (its
            // files hold no record), or the manifest was lost.
            if logs.is_empty() {
                if let Some(why) = why {
                    rep.dropped.push(format!("{why} (no log files of generation {generation}; nothing lost)"));
                }
                return Ok(Vec::new());
            }
            let why = match why {
                Some(w) => (w, true),
                None => (format!("no manifest of generation {generation}"), false),
            };
            // Which files exist, by stream, as named.
            let mut by: BTreeMap<u32, Vec<(u32, Option<PathBuf>)>> = BTreeMap::new();
            for (_, s, q, p) in &logs {
                by.entry(*s).or_default().push((*q, Some(p.clone())));
            }
            let n = by.keys().next_back().map_or(0, |s| s + 1);
            return Ok((0..n)
                .map(|s| StreamPlan {
                    stream: s,
                    streams: n,
                    files: by.remove(&s).unwrap_or_default(),
                    // Without a manifest of this generation (a crash inside
                    // the log's start), a stream's newest file may have a
                    // torn header, as one beyond the manifest may.
                    beyond: !why.1,
                    unchecked: Some(why.clone()),
                })
                .collect());
        }
    };
    let n = manifest.files.len() as u32;
    let mut plans: Vec<StreamPlan> = manifest
        .files
        .iter()
        .enumerate()
        .map(|(s, &(first, last))| StreamPlan {
            stream: s as u32,
            streams: n,
            files: (first..=last).map(|q| (q, None)).collect(),
            unchecked: None,
            beyond: false,
        })
        .collect();
    for (_, s, q, p) in logs {
        let Some(plan) = plans.get_mut(*s as usize) else {
            rep.damaged = true;
            rep.dropped.push(format!("{}: stream {s}, but the manifest lists {n} streams (ignored)", file_name(p)));
            continue;
        };
        let (first, last) = manifest.files[*s as usize];
        if *q < first {
            // Left by a crash between the manifest's rewrite and the
            // removal of the files a checkpoint made unnecessary.
            continue;
        }
        if *q == last + 1 {
            // A crash between a rotation's new file and the manifest's
            // rewrite: the file is the stream's newest.
            plan.files.push((*q, Some(p.clone())));
            plan.beyond = true;
        } else if *q > last {
            rep.damaged = true;
            rep.dropped.push(format!(
                "{}: beyond the files the manifest lists for stream {s} ({first}..={last}) (ignored)",
                file_name(p)
            ));
        } else {
            plan.files[(*q - first) as usize].1 = Some(p.clone());
        }
    }
    Ok(plans)
}

/// Where a stream's replay stops: before file `file` (an index into
/// [`Scan::files`]) at byte `at`.
#[derive(Clone, Copy)]
struct StopAt {
    file: usize,
    at: usize,
}

/// What the scan of one stream found.
struct Scan {
    stream: u32,
    /// The files to replay from, in order (those past a stop are not).
    files: Vec<PathBuf>,
    /// Where replay must stop (damage), if anywhere.
    stop: Option<StopAt>,
    /// The number of streams (its rounds are every `streams`-th epoch).
    streams: u64,
    /// Its last intact mark (see [`Cut`]).
    last_mark: u64,
    /// Records read intact, by epoch (run-length: epoch, count).
    epochs: Vec<(u64, u64)>,
    records: u64,
    bytes: u64,
    /// Damage a crash cannot explain.
    damaged_structure: bool,
    /// What it dropped and why.
    lines: Vec<String>,
}

impl Scan {
    fn failed(why: &str) -> Scan {
        Scan {
            stream: 0,
            files: Vec::new(),
            stop: Some(StopAt { file: 0, at: 0 }),
            streams: 1,
            last_mark: 0,
            epochs: Vec::new(),
            records: 0,
            bytes: 0,
            damaged_structure: true,
            lines: vec![why.to_string()],
        }
    }

    fn records_after(&self, d: u64) -> u64 {
        self.epochs.iter().filter(|(e, _)| *e > d).map(|(_, n)| n).sum()
    }

    /// The epoch of the next round this stream would hold: round `e` is
    /// written to stream `e % streams` (`durability::log`), from epoch 1.
    fn next_round(&self) -> u64 {
        match self.last_mark {
            0 if self.stream == 0 => self.streams,
            0 => u64::from(self.stream),
            m => m + self.streams,
        }
    }
}

/// The consistent cut over the streams (module docs).
struct Cut {
    /// Replay goes through this epoch.
    d: u64,
    /// Every round up to this epoch completed in every stream.
    acknowledged: u64,
}

impl Cut {
    /// Every epoch up to the first round missing from its stream; the
    /// round before the newest one found completed before that one began.
    fn of(scans: &[Scan]) -> Cut {
        let d = scans.iter().map(|s| s.next_round() - 1).min().unwrap_or(0);
        let newest = scans.iter().map(|s| s.last_mark).max().unwrap_or(0);
        Cut { d, acknowledged: newest.saturating_sub(1) }
    }
}

/// Reads a stream's files to their end or first damage (step 1).
fn scan(generation: u64, plan: &StreamPlan) -> Scan {
    let s = plan.stream;
    let mut out = Scan {
        stream: s,
        files: Vec::new(),
        stop: None,
        streams: u64::from(plan.streams.max(1)),
        last_mark: 0,
        epochs: Vec::new(),
        records: 0,
        bytes: 0,
        damaged_structure: false,
        lines: Vec::new(),
    };
    if plan.files.is_empty() {
        out.damaged_structure = true;
        out.lines.push(format!("stream {s}: no log files at all (its records are lost)"));
        return out;
    }
    let n_files = plan.files.len();
    let mut last_epoch = 0u64;
    // No manifest of this generation: the streams' number is known only
    // from the files' headers (a crash inside the log's start may have
    // created some of its streams' files, not all).
    let no_manifest = plan.unchecked.as_ref().is_some_and(|(_, always)| !always);
    for (i, (q, path)) in plan.files.iter().enumerate() {
        let is_last = i + 1 == n_files;
        let stop_here = |out: &mut Scan, at: usize, line: String, structural: bool| {
            // Inside this file once it is listed for replay; before it
            // (none of it replayed) until then.
            let listed = path.is_some() && out.files.last() == path.as_ref();
            out.stop = Some(StopAt { file: out.files.len() - usize::from(listed), at });
            out.damaged_structure |= structural;
            out.lines.push(line);
            for (q2, p2) in &plan.files[i + 1..] {
                let what = p2.as_ref().map_or_else(|| format!("file {q2} of stream {s} (missing)"), |p| file_name(p));
                out.lines.push(format!("{what}: the whole file, after the damage above"));
            }
        };
        let Some(path) = path else {
            let line = format!(
                "stream {s}: file {} of {}..={} is missing; the stream is replayed up to it",
                q,
                plan.files[0].0,
                plan.files[n_files - 1].0
            );
            stop_here(&mut out, 0, line, true);
            return out;
        };
        let name = file_name(path);
        let data = match std::fs::read(path) {
            Ok(d) => d,
            Err(e) => {
                stop_here(&mut out, 0, format!("{name}: cannot be read ({e})"), true);
                return out;
            }
        };
        out.bytes += data.len() as u64;
        let (h, mut at) = match LogHeader::decode(&data) {
            Ok(x) => x,
            Err(why) => {
                // A file whose header never reached the disk is a crash's
                // (it is synced before the manifest names it; a newest
                // file beyond the manifest may not be).
                let torn = is_last && plan.beyond;
                let line = format!("{name}: {why}; the whole file ({} bytes) dropped", data.len());
                stop_here(&mut out, 0, line, !torn);
                return out;
            }
        };
        let misplaced = if h.generation != generation {
            Some(format!("its header says generation {}", h.generation))
        } else if h.stream != s || h.seq != *q {
            Some(format!("its header says file {} of stream {} (a copied or renamed file)", h.seq, h.stream))
        } else if h.streams != plan.streams && !no_manifest {
            Some(format!("its header says {} streams, the directory holds {}", h.streams, plan.streams))
        } else if h.streams == 0 || u64::from(h.streams) > u64::from(super::format::MAX_STREAMS) {
            Some(format!("its header says {} streams", h.streams))
        } else if i == 0 {
            out.streams = u64::from(h.streams);
            out.last_mark = h.start_mark;
            None
        } else if h.start_mark != out.last_mark {
            Some(format!(
                "it begins after epoch {}, but the file before it ends at epoch {} (a file out of place)",
                h.start_mark, out.last_mark
            ))
        } else {
            None
        };
        if let Some(why) = misplaced {
            stop_here(&mut out, 0, format!("{name}: {why}; the stream is replayed up to it"), true);
            return out;
        }
        out.files.push(path.clone());
        loop {
            let problem = match next_frame(&data, at) {
                Framed::End => break,
                Framed::Body(b, next) => match (b.first(), b.get(1..9)) {
                    (Some(&KIND_TXN), Some(e)) if b.len() >= 21 => {
                        let e = u64::from_le_bytes(e.try_into().expect("8 bytes"));
                        if e <= out.last_mark || e < last_epoch {
                            Some((
                                format!(
                                    "a record of epoch {e} after epoch {} (epochs going backwards)",
                                    out.last_mark.max(last_epoch)
                                ),
                                true,
                            ))
                        } else {
                            last_epoch = e;
                            out.records += 1;
                            match out.epochs.last_mut() {
                                Some((le, n)) if *le == e => *n += 1,
                                _ => out.epochs.push((e, 1)),
                            }
                            at = next;
                            None
                        }
                    }
                    (Some(&KIND_MARK), Some(e)) if b.len() == 9 => {
                        let e = u64::from_le_bytes(e.try_into().expect("8 bytes"));
                        if e != out.next_round() {
                            Some((
                                format!(
                                    "an epoch mark {e} where the stream's next round is {} (a round missing or out of place)",
                                    out.next_round()
                                ),
                                true,
                            ))
                        } else {
                            out.last_mark = e;
                            at = next;
                            None
                        }
                    }
                    _ => Some(("an undecodable record".to_string(), true)),
                },
                Framed::Damaged(what) => {
                    // A torn tail ends the newest file; damage followed by
                    // intact records is not a crash's.
                    let followed = followed_by_intact(&data, at);
                    Some((what.to_string(), !is_last || followed))
                }
            };
            if let Some((what, structural)) = problem {
                let kind =
                    if structural { "damage in the middle of the stream" } else { "a torn tail (a crash mid-write)" };
                let line = format!("{name}: {what} at byte {at}, {kind}: {} bytes dropped", data.len() - at);
                stop_here(&mut out, at, line, structural);
                return unchecked(plan, out);
            }
        }
    }
    unchecked(plan, out)
}

/// A stream whose files could not be checked against a manifest: damage
/// if the manifest was damaged, or if it holds anything.
fn unchecked(plan: &StreamPlan, mut out: Scan) -> Scan {
    if let Some((why, always)) = &plan.unchecked {
        if *always || out.records > 0 || out.last_mark > 0 {
            out.damaged_structure = true;
            out.lines.push(format!("stream {}: {why}, so its files cannot be checked for completeness", out.stream));
        }
    }
    out
}

/// Whether an intact record follows the damaged frame at `at` (its length
/// read as it is).
fn followed_by_intact(data: &[u8], at: usize) -> bool {
    let Some(len) = data.get(at..at + 4) else { return false };
    let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
    let next = at.saturating_add(FRAME).saturating_add(len);
    next < data.len() && matches!(next_frame(data, next), Framed::Body(..))
}

/// A chunk of a log file as read for replay, with its header's tables
/// resolved to the schema's.
struct FileData {
    data: Vec<u8>,
    /// (the log's table number, the table) pairs (a handful).
    tables: Arc<[(u32, TableId)]>,
}

impl FileData {
    fn table(&self, n: u32) -> Result<TableId> {
        self.tables.iter().find(|(k, _)| *k == n).map(|(_, t)| *t).ok_or_else(|| {
            Error::Corrupt(format!("a log record writes table #{n}, which its file's header does not name"))
        })
    }
}

/// Where a transaction record's body lies in its file.
#[derive(Clone, Copy)]
struct RecPos {
    epoch: u64,
    ts: u64,
    start: usize,
    end: usize,
}

/// A run of one file's records, in file order, as a stream's reader sends
/// them.
struct Run {
    file: Arc<FileData>,
    recs: Vec<RecPos>,
}

/// Reads a stream's records of epochs up to `d` with commit timestamps
/// after `cp_ts`, up to its stop, and sends them in runs (step 5). Files
/// are read a chunk at a time, so that recovery holds a few chunks per
/// stream, not whole files.
fn read_stream(db: &Database, scan: &Scan, d: u64, cp_ts: u64, tx: std::sync::mpsc::SyncSender<Result<Run>>) {
    if let Err(e) = read_stream_files(db, scan, d, cp_ts, &tx) {
        let _ = tx.send(Err(e));
    }
}

fn read_stream_files(
    db: &Database,
    scan: &Scan,
    d: u64,
    cp_ts: u64,
    tx: &std::sync::mpsc::SyncSender<Result<Run>>,
) -> Result<()> {
    use std::io::Read;
    let chunk = chunk_size();
    for (i, path) in scan.files.iter().enumerate() {
        let io = |e: std::io::Error| Error::Io(format!("cannot read {}: {e}", path.display()));
        let changed = || Error::Corrupt(format!("{}: changed during recovery", path.display()));
        let mut file = std::fs::File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len() as usize;
        let end = match scan.stop {
            Some(StopAt { file, at }) if file == i => at,
            _ => size,
        };
        // Fills `buf` (which holds the file from offset `base`) with at
        // least `want` bytes, or to the end of the file.
        let fill = |file: &mut std::fs::File, buf: &mut Vec<u8>, want: usize| -> Result<()> {
            let at = buf.len();
            buf.resize(want.max(at + chunk), 0);
            let mut got = at;
            while got < buf.len() {
                match file.read(&mut buf[got..]).map_err(io)? {
                    0 => break,
                    n => got += n,
                }
            }
            buf.truncate(got);
            Ok(())
        };
        // The header: its frame's length says how much to read.
        let mut buf = Vec::new();
        fill(&mut file, &mut buf, LOG_MAGIC.len() + FRAME)?;
        let hlen = buf.get(LOG_MAGIC.len()..LOG_MAGIC.len() + 4).ok_or_else(changed)?;
        let hlen = u32::from_le_bytes(hlen.try_into().expect("4 bytes")) as usize;
        if buf.len() < LOG_MAGIC.len() + FRAME + hlen {
            fill(&mut file, &mut buf, LOG_MAGIC.len() + FRAME + hlen)?;
        }
        let (h, mut at) =
            LogHeader::decode(&buf[..buf.len().min(LOG_MAGIC.len() + FRAME + hlen)]).map_err(|_| changed())?;
        let mut tables = Vec::with_capacity(h.tables.len());
        for (n, name) in &h.tables {
            let t = db.table(name).map_err(|_| {
                Error::InvalidArgument(format!("the data names table '{name}', which the schema does not create"))
            })?;
            tables.push((*n, t));
        }
        let tables: Arc<[(u32, TableId)]> = tables.into();
        // `base`: the file offset of `buf[0]`; `at`: the next frame in `buf`.
        let mut base = 0usize;
        loop {
            let mut recs = Vec::new();
            let mut past = false;
            while base + at < end {
                let Some(len) = buf.get(at..at + 4) else { break };
                let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
                if buf.len() - at < FRAME + len {
                    break; // The frame continues in the next chunk.
                }
                let Framed::Body(b, next) = next_frame(&buf, at) else { return Err(changed()) };
                let start = at + FRAME;
                at = next;
                if b.first() != Some(&KIND_TXN) || b.len() < 21 {
                    continue;
                }
                let epoch = u64::from_le_bytes(b[1..9].try_into().expect("8 bytes"));
                if epoch > d {
                    // Epochs only grow along a stream (checked by the scan).
                    past = true;
                    break;
                }
                let ts = u64::from_le_bytes(b[9..17].try_into().expect("8 bytes"));
                if ts > cp_ts {
                    recs.push(RecPos { epoch, ts, start, end: next });
                }
            }
            // The unread rest of the chunk starts the next one.
            let rest = buf[at..].to_vec();
            let whole = std::mem::replace(&mut buf, rest);
            base += at;
            at = 0;
            if !recs.is_empty() {
                let file = Arc::new(FileData { data: whole, tables: tables.clone() });
                if tx.send(Ok(Run { file, recs })).is_err() {
                    return Ok(());
                }
            }
            if past {
                return Ok(());
            }
            if base >= end {
                break;
            }
            let had = buf.len();
            fill(&mut file, &mut buf, 0)?;
            if buf.len() == had {
                // The file ends before the scan said it does.
                return Err(changed());
            }
        }
    }
    Ok(())
}

/// How much of a log file replay reads at a time.
#[cfg(not(test))]
fn chunk_size() -> usize {
    4 << 20
}

/// Tests make frames straddle chunks (see `tests`): a size set there, or
/// the usual one.
#[cfg(test)]
fn chunk_size() -> usize {
    // SeqCst: test-only, no reason to be clever.
    match TEST_CHUNK.load(std::sync::atomic::Ordering::SeqCst) {
        0 => 4 << 20,
        n => n,
    }
}

#[cfg(test)]
static TEST_CHUNK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
#[cfg(test)]
static TEST_CHUNK_LOCK: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// One stream's records as the merge takes them.
struct Incoming {
    rx: Receiver<Result<Run>>,
    run: Option<Run>,
    next: usize,
    done: bool,
}

impl Incoming {
    fn peek_epoch(&mut self) -> Result<Option<u64>> {
        loop {
            if let Some(r) = &self.run {
                if let Some(p) = r.recs.get(self.next) {
                    return Ok(Some(p.epoch));
                }
            }
            if self.done {
                return Ok(None);
            }
            match self.rx.recv() {
                Ok(run) => {
                    self.run = Some(run?);
                    self.next = 0;
                }
                Err(_) => self.done = true,
            }
        }
    }

    /// The record just peeked.
    fn pop(&mut self) -> (&Arc<FileData>, RecPos) {
        let r = self.run.as_ref().expect("peeked");
        self.next += 1;
        (&r.file, r.recs[self.next - 1])
    }
}

/// Records in replay order, as the merge hands them to the workers: each
/// names its file by an index into `files`.
struct Ordered {
    files: Vec<Arc<FileData>>,
    recs: Vec<(u32, RecPos)>,
}

/// What a replay worker did.
#[derive(Default)]
struct Applied {
    writes: u64,
    same_ts_conflicts: u64,
}

/// Step 5: the records of epochs up to `d` after the checkpoint, epoch by
/// epoch, each epoch's in commit-timestamp order.
///
/// One thread per stream reads its files; the main thread merges their
/// records into that order and hands them, a few thousand at a time, to
/// `workers` threads, each owning the rows whose key hashes to it
/// (recovery's own form of MPDB's parallel replay, section VI.B). A worker
/// decodes every record and keeps the writes to its rows in a map, the
/// newest value of each row (or its deletion) winning, since the records
/// come in commit order. Nobody reads the database until recovery
/// returns, so only the end state matters: at the end, each worker writes
/// its rows' final values into the database, a few rows per transaction.
/// A row overwritten a million times costs a million map updates and one
/// database write, instead of a million versions to create and collect.
/// The map holds at most [`MAX_ROWS`] rows (then they go into the
/// database and the map starts again), whatever the log's length.
fn replay(db: &Database, scans: &[Scan], d: u64, cp_ts: u64, rep: &mut RecoveryReport) -> Result<()> {
    // Records handed to the workers at a time (unit tests: a few, so that
    // a worker's rows go into the database many times over).
    const ORDERED: usize = if cfg!(test) { 64 } else { 4096 };
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    std::thread::scope(|sc| -> Result<()> {
        let mut ins: Vec<Incoming> = scans
            .iter()
            .map(|s| {
                // A few runs ahead per stream: bounded memory.
                let (tx, rx) = sync_channel(2);
                sc.spawn(move || read_stream(db, s, d, cp_ts, tx));
                Incoming { rx, run: None, next: 0, done: false }
            })
            .collect();
        let mut appliers = Vec::new();
        let mut senders = Vec::new();
        for w in 0..workers {
            let (tx, rx) = sync_channel::<Arc<Ordered>>(8);
            senders.push(tx);
            appliers.push(sc.spawn(move || replay_part(db, rx, w, workers)));
        }
        let new_ordered = || Ordered { files: Vec::new(), recs: Vec::with_capacity(ORDERED) };
        let mut out = new_ordered();
        let send = |out: Ordered| {
            let out = Arc::new(out);
            for tx in &senders {
                if tx.send(out.clone()).is_err() {
                    // The worker stopped on an error: its join reports it.
                    break;
                }
            }
        };
        let mut epoch_recs: Vec<(u64, usize, u64, Arc<FileData>, RecPos)> = Vec::new();
        let mut order = 0u64;
        loop {
            let mut next = None;
            for c in ins.iter_mut() {
                if let Some(e) = c.peek_epoch()? {
                    next = Some(next.map_or(e, |n: u64| n.min(e)));
                }
            }
            let Some(e) = next else { break };
            epoch_recs.clear();
            for (si, c) in ins.iter_mut().enumerate() {
                while c.peek_epoch()? == Some(e) {
                    let (f, p) = c.pop();
                    epoch_recs.push((p.ts, si, order, f.clone(), p));
                    order += 1;
                }
            }
            epoch_recs.sort_by_key(|(ts, si, o, _, _)| (*ts, *si, *o));
            for (ts, _, _, f, p) in epoch_recs.drain(..) {
                let fi = match out.files.iter().rposition(|x| Arc::ptr_eq(x, &f)) {
                    Some(i) => i,
                    None => {
                        out.files.push(f);
                        out.files.len() - 1
                    }
                };
                out.recs.push((fi as u32, p));
                rep.replayed += 1;
                rep.last_commit_ts = Some(ts);
                if out.recs.len() >= ORDERED {
                    send(std::mem::replace(&mut out, new_ordered()));
                }
            }
        }
        if !out.recs.is_empty() {
            send(out);
        }
        drop(senders);
        for h in appliers {
            let a = h.join().unwrap_or_else(|_| Err(Error::Io("a replay thread panicked".into())))?;
            rep.writes += a.writes;
            rep.same_ts_conflicts += a.same_ts_conflicts;
        }
        Ok(())
    })
}

/// The newest value of each row a replay worker owns (`None`: deleted):
/// an open-addressing table (linear probing) whose slots can be
/// prefetched, because the rows a worker writes are spread over the whole
/// database and each write would otherwise wait for two cache misses (its
/// slot, then its value).
struct Rows {
    slots: Vec<Slot>,
    len: usize,
}

#[derive(Default)]
struct Slot {
    /// The row's hash (meaningful only when `row` is set).
    hash: u64,
    /// The row's table and key, and its newest value.
    row: Option<(TableId, Key, Option<Vec<u8>>)>,
}

impl Rows {
    fn new() -> Rows {
        Rows { slots: (0..1024).map(|_| Slot::default()).collect(), len: 0 }
    }

    fn home(&self, hash: u64) -> usize {
        hash as usize & (self.slots.len() - 1)
    }

    /// Starts loading the slot where `hash`'s search begins.
    fn prefetch_slot(&self, hash: u64) {
        crate::index::hash::prefetch((&self.slots[self.home(hash)] as *const Slot).cast());
    }

    /// Starts loading the value of the row in `hash`'s first slot, if it
    /// is that row's (the slot itself was prefetched earlier).
    fn prefetch_value(&self, hash: u64) {
        let s = &self.slots[self.home(hash)];
        if let (true, Some((_, _, Some(v)))) = (s.hash == hash, &s.row) {
            crate::index::hash::prefetch(v.as_ptr());
        }
    }

    /// The row now holds `value` (`None`: it is deleted).
    fn put(&mut self, hash: u64, table: TableId, key: Key, value: Option<&[u8]>) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let s = &mut self.slots[i];
            let Some((t, k, old)) = &mut s.row else {
                *s = Slot { hash, row: Some((table, key, value.map(<[u8]>::to_vec))) };
                self.len += 1;
                return;
            };
            if s.hash == hash && *t == table && *k == key {
                match (old, value) {
                    (Some(old), Some(v)) => {
                        old.clear();
                        old.extend_from_slice(v);
                    }
                    (old, v) => *old = v.map(<[u8]>::to_vec),
                }
                return;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        self.slots = (0..old.len() * 2).map(|_| Slot::default()).collect();
        let mask = self.slots.len() - 1;
        for s in old.into_iter().filter(|s| s.row.is_some()) {
            let mut i = s.hash as usize & mask;
            while self.slots[i].row.is_some() {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }

    fn into_rows(self) -> impl Iterator<Item = (TableId, Key, Option<Vec<u8>>)> {
        self.slots.into_iter().filter_map(|s| s.row)
    }
}

/// A replay worker (see [`replay`]): the newest write of each of its rows,
/// then those written into the database.
fn replay_part(db: &Database, rx: Receiver<Arc<Ordered>>, part: usize, parts: usize) -> Result<Applied> {
    // Prefetch distances (in writes): slots this far ahead, and the values
    // of rows half as far (whose slots have arrived by then).
    const AHEAD: usize = 8;
    let mut done = Applied::default();
    let mut rows = Rows::new();
    // Fingerprints of this part's rows written at the current commit
    // timestamp (POMVCC's shared ones: see the module docs; two writes of
    // one row fall in one part), and those of the current record (a row
    // written twice by one transaction is one row).
    let mut same_ts: (u64, std::collections::HashSet<u64>) = (u64::MAX, Default::default());
    let mut mine: Vec<u64> = Vec::new();
    for batch in rx {
        // This part's writes of the batch, in order.
        let mut writes: Vec<(u64, TableId, Key, Option<&[u8]>)> = Vec::with_capacity(batch.recs.len());
        for &(fi, p) in &batch.recs {
            let f = &batch.files[fi as usize];
            let body = &f.data[p.start..p.end];
            mine.clear();
            let (epoch, ts) = decode_txn(body, part, parts, |table, hash, key, value| {
                let table = f.table(table)?;
                let print = hash ^ u64::from(table.0).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                if !mine.contains(&print) {
                    mine.push(print);
                    if same_ts.0 != p.ts {
                        same_ts.0 = p.ts;
                        same_ts.1.clear();
                    }
                    if !same_ts.1.insert(print) {
                        done.same_ts_conflicts += 1;
                    }
                }
                writes.push((print, table, key, value));
                Ok(())
            })
            .map_err(|e| Error::Corrupt(format!("a log record that passed its checksum: {e}")))?;
            debug_assert_eq!((epoch, ts), (p.epoch, p.ts), "the record read twice the same way");
        }
        done.writes += writes.len() as u64;
        for i in 0..writes.len() {
            if let Some(w) = writes.get(i + 2 * AHEAD) {
                rows.prefetch_slot(w.0);
            }
            if let Some(w) = writes.get(i + AHEAD) {
                rows.prefetch_value(w.0);
            }
            let (hash, table, key, value) = writes[i];
            rows.put(hash, table, key, value);
        }
        // Bounded memory: past `MAX_ROWS` rows the values so far go into
        // the database (later writes of those rows overwrite them there).
        if rows.len >= MAX_ROWS {
            install(db, std::mem::replace(&mut rows, Rows::new()))?;
        }
    }
    install(db, rows)?;
    Ok(done)
}

/// The most rows a replay worker keeps before it writes them into the
/// database: about 72 MiB of slots plus their values.
#[cfg(not(test))]
const MAX_ROWS: usize = 1 << 19;
/// Unit tests write the rows out many times over (see `tests`).
#[cfg(test)]
const MAX_ROWS: usize = 16;

/// Writes `rows` into the database, a few per transaction. A transient
/// abort (two workers' rows sharing a lock, say) is retried: the writes
/// are idempotent.
fn install(db: &Database, rows: Rows) -> Result<()> {
    // Small transactions: a large write set makes each write dearer in
    // some protocols, and a transaction's begin and commit are cheap
    // beside a few rows' writes.
    const CHUNK: usize = 8;
    let rows: Vec<_> = rows.into_rows().collect();
    let mut after = db.sync_commits()?;
    for chunk in rows.chunks(CHUNK) {
        loop {
            let mut t = db.begin_with(TxnOptions { after, ..TxnOptions::new(replay_isolation(db)) })?;
            let r = chunk.iter().try_for_each(|(table, key, v)| put(&mut t, *table, key, v.as_deref()));
            match r.and_then(|()| t.commit()) {
                Ok(c) => {
                    after = Some(c.commit_ts);
                    break;
                }
                Err(e) if e.is_transient() => continue,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// One replayed write: the row now holds `value`, or is gone (`None`).
fn put(t: &mut crate::Transaction<'_>, table: TableId, key: &Key, value: Option<&[u8]>) -> Result<()> {
    match value {
        Some(v) => match t.update(table, key, v) {
            Err(Error::KeyNotFound) => t.insert(table, *key, v),
            r => r,
        },
        None => match t.delete(table, key) {
            Err(Error::KeyNotFound) => Ok(()),
            r => r,
        },
    }
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

#[cfg(test)]
mod tests {
    use crate::*;
    fn schema(db: &Database) -> Result<()> {
        db.create_table(TableSpec::hash("t", 1024)).map(|_| ())
    }

    /// Recovers `dir` into a fresh database with replay chunks of `chunk`
    /// bytes; its rows and report.
    fn recover_with(dir: &std::path::Path, chunk: usize) -> (Vec<(u64, Vec<u8>)>, RecoveryReport) {
        let db = Database::new(Options::default()).unwrap();
        schema(&db).unwrap();
        // The readers run on threads of their own: the size reaches them
        // through a global set for the duration of the call.
        let _g = super::TEST_CHUNK_LOCK.lock();
        super::TEST_CHUNK.store(chunk, std::sync::atomic::Ordering::SeqCst);
        let rep = db.recover_from(dir).unwrap();
        super::TEST_CHUNK.store(0, std::sync::atomic::Ordering::SeqCst);
        (rows_of(&db), rep)
    }

    fn rows_of(db: &Database) -> Vec<(u64, Vec<u8>)> {
        let t = db.table("t").unwrap();
        let mut rows = Vec::new();
        db.run(Isolation::Serializable, |tx| {
            rows.clear();
            for k in 0..300u64 {
                if let Some(v) = tx.get(t, &Key::from(k))? {
                    rows.push((k, v.to_vec()));
                }
            }
            Ok(())
        })
        .unwrap();
        rows
    }

    #[test]
    fn replay_reads_frames_that_straddle_its_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let o = Options {
            data_dir: Some(dir.path().to_path_buf()),
            durability: Durability::Async,
            log_streams: 2,
            ..Options::default()
        };
        let (db, _) = Database::open(o, schema).unwrap();
        let t = db.table("t").unwrap();
        // Values of many lengths, some longer than the smallest chunk, and
        // deletes: every frame boundary lands somewhere else in a chunk.
        for i in 0..2000u64 {
            let k = Key::from(i * 7 % 300);
            db.run(Isolation::Serializable, |tx| {
                if i % 11 == 0 {
                    tx.delete(t, &k).or_else(|e| if matches!(e, Error::KeyNotFound) { Ok(()) } else { Err(e) })
                } else {
                    let v = vec![i as u8; (i as usize * 13) % 200];
                    match tx.update(t, &k, &v) {
                        Err(Error::KeyNotFound) => tx.insert(t, k, &v),
                        r => r,
                    }
                }
            })
            .unwrap();
        }
        db.flush_log().unwrap();
        let before = rows_of(&db);
        drop(db);
        let (whole, rep) = recover_with(dir.path(), 4 << 20);
        // Replay (whose workers here write their rows into the database
        // every 16 rows, and get records 64 at a time) gives back the state
        // the log was written from.
        assert_eq!(whole, before);
        // Every transaction but the deletes of absent rows wrote a record.
        assert!(rep.replayed > 1900 && rep.dropped.is_empty(), "{rep:?}");
        assert!(!whole.is_empty());
        for chunk in [1, 7, 64, 333, 4096] {
            let (rows, r) = recover_with(dir.path(), chunk);
            assert_eq!(rows, whole, "chunk {chunk}");
            assert_eq!((r.replayed, r.writes), (rep.replayed, rep.writes), "chunk {chunk}");
        }
    }
}
