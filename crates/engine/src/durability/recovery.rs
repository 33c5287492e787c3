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
//!    `wal::log` gives it (`s, s + n, s + 2n...` of `n` streams),
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
//! 3. **Policy.** [`crate::OnDamage::Refuse`] (the default) fails a
//!    damaged directory with [`Error::Corrupt`], naming the damage and the
//!    remedies; [`crate::OnDamage::KeepPrefix`] recovers the prefix and
//!    reports, one line each, what it dropped and why (and
//!    `Database::open_with` then moves the damaged generation's files into a
//!    quarantine folder, see `quarantine`). A crash's torn tail is
//!    dropped and reported under either.
//! 4. **Load** the newest checkpoint of the newest generation (a damaged
//!    one is refused: the logs before it may be gone).
//! 5. **Replay** the records of epochs up to `D` whose commit timestamp
//!    follows the checkpoint's, epoch by epoch, each epoch's in commit
//!    timestamp order: one thread per stream reads its files a chunk at a
//!    time, the main thread merges them into that order, and replay
//!    workers, each owning the rows whose key hashes to it, keep the
//!    newest value of each of their rows, then write those into the
//!    database (see `replay`).
//!
//! Epoch by epoch is a commit-timestamp order wherever it matters: a
//! transaction that read or overwrote another's writes appended its record
//! after that one did, so in the same epoch or a later one. Replay's
//! memory is a few chunks per stream plus, per worker, at most
//! `replay::MAX_ROWS` rows' newest values, whatever the log's length.
//!
//! POMVCC shares commit timestamps, so several records may carry the same
//! one. Section VI.B argues their order does not matter: transactions at
//! one timestamp never write the same record (the later writer aborts,
//! Table V). Recovery checks exactly that and counts any violation in
//! [`RecoveryReport::same_ts_conflicts`] (always 0 unless the engine is
//! broken).

use super::checkpoint;

mod replay;
mod report;
pub(crate) mod salvage;
use super::format::{next_frame, Framed, LogHeader, Manifest, FRAME, KIND_MARK, KIND_TXN};
use super::{parse_checkpoint_name, parse_log_name, MANIFEST_FILE};
use crate::{Database, Isolation, Key, OnDamage, TableId, TxnOptions};
use crate::{Error, Result};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

pub use report::RecoveryReport;

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

/// What the scan of a directory found (steps 1 and 2): what recovery
/// would replay and drop, before anything is loaded.
struct Examined {
    generation: u64,
    /// The newest checkpoint of the newest generation.
    checkpoint: PathBuf,
    listing: Listing,
    plans: Vec<StreamPlan>,
    scans: Vec<Scan>,
    cut: Cut,
}

/// Steps 1 and 2: the directory's files, the streams' scans and the cut,
/// with what they drop and whether that is damage in `rep`. `None`: the
/// directory holds no checkpoint and no log (a new one). Reads only.
fn examine(dir: &Path, rep: &mut RecoveryReport) -> Result<Option<Examined>> {
    let listing = list(dir, rep)?;
    let Some((generation, _, cp_path)) = listing.checkpoints.last().cloned() else {
        if let Some((_, _, _, p)) = listing.logs.first() {
            return Err(Error::Corrupt(format!(
                "{}: log files but no checkpoint; refusing to open {}",
                p.display(),
                dir.display()
            )));
        }
        return Ok(None);
    };
    rep.generation = generation;
    // Log files of a generation newer than the newest checkpoint: a
    // generation begins with its checkpoint, so no crash leaves them (a
    // copied or restored file). Not replayed; `Database::open_with` (under
    // `KeepPrefix`) quarantines them before it starts that generation's log.
    for (g, _, _, p) in listing.logs.iter().filter(|x| x.0 > generation) {
        rep.damaged = true;
        rep.dropped.push(format!(
            "{}: a log file of generation {g}, newer than the newest checkpoint's ({generation}): not replayed",
            file_name(p)
        ));
    }

    // 1. and 2. Scan the streams; the cut.
    let plans = plan_streams(generation, &listing, rep)?;
    let scans: Vec<Scan> = std::thread::scope(|sc| {
        let hs: Vec<_> = plans.iter().map(|p| sc.spawn(move || scan(generation, p))).collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Scan::failed("the scan panicked"))).collect()
    });
    rep.streams = plans.len();
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
    Ok(Some(Examined { generation, checkpoint: cp_path, listing, plans, scans, cut }))
}

/// The error of a damaged directory under [`OnDamage::Refuse`]: what is
/// damaged, that nothing changed, and the two ways on.
fn refusal(dir: &Path, rep: &RecoveryReport) -> Error {
    let mut lines = rep.dropped.iter().filter(|l| !l.contains("unfinished checkpoint"));
    let why = lines.next().cloned().unwrap_or_default();
    let more = match lines.count() {
        0 => String::new(),
        n => format!("; and {n} more"),
    };
    let d = dir.display();
    let q = super::quarantine::free_name(dir, rep.generation);
    Error::Corrupt(format!(
        "{d}: the data directory is damaged, so commits acknowledged as durable may be lost ({why}{more}); \
         refusing to open it (Options::on_damage), and nothing in it was changed. \
         To see the intact records that would be lost: `multiverse recover {d} --salvage OUT`; \
         to open the longest consistent prefix: Options::on_damage = OnDamage::KeepPrefix, \
         which moves what it drops into {} (nothing is deleted)",
        q.display()
    ))
}

/// Recovers `dir` into `db` (whose tables exist and are empty), as
/// `db`'s [`crate::Options::on_damage`] says.
pub(crate) fn recover(db: &Database, dir: &Path) -> Result<RecoveryReport> {
    let _span = crate::obs::span!(info, "recovery", dir = %dir.display());
    let started = Instant::now();
    let mut rep = RecoveryReport::default();
    let Some(Examined { generation, checkpoint: cp_path, scans, cut, .. }) = examine(dir, &mut rep)? else {
        rep.elapsed = started.elapsed();
        return Ok(rep);
    };
    if rep.damaged && db.opts.on_damage == OnDamage::Refuse {
        return Err(refusal(dir, &rep));
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
    replay::replay(db, &scans, cut.d, loaded.ts, &mut rep)?;
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
    /// written to stream `e % streams` (`wal::log`), from epoch 1.
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
        match t.insert(table, key.clone(), value) {
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
