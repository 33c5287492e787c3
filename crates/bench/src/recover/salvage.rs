//! `multiverse recover DIR --salvage OUT`: writes every intact log record
//! that recovering DIR would drop (see `multiverse::durability::salvage`)
//! into the new directory OUT, so that a person can see what a damaged
//! directory loses before deciding to open it with
//! `OnDamage::KeepPrefix`. DIR is only read.
//!
//! OUT must not exist, or be an empty directory, and must not lie inside
//! DIR. It is written beside its final name and renamed into place once
//! complete, so a failed salvage leaves no OUT. It holds:
//!
//! * `stream-NNN.jsonl`, one per log stream (NNN: the stream, as in the
//!   log files' names), one JSON object per line per dropped transaction
//!   record, in the order the stream holds them (epoch order):
//!
//!   ```text
//!   {"stream":1,"file":"log-00000001-001-000000.mvl","offset":4104,"generation":1,
//!    "epoch":57,"commit_ts":1234,"reason":"after-damage",
//!    "writes":[{"table":"acct","op":"put","key":"0000000000000007","value":"e803000000000000"},
//!              {"table":"acct","op":"delete","key":"0000000000000009"}]}
//!   ```
//!
//!   `offset` is where the record's frame begins in `file`; `commit_ts` is
//!   its commit timestamp (of that generation: timestamps restart with
//!   each); `reason` says why recovery drops it: `after-damage` (at or
//!   past its stream's first damage), `after-cut` (an epoch after the
//!   last one every stream holds whole, dropped to keep a prefix of the
//!   commit order), `ignored-file` (a file recovery does not read: a newer
//!   generation's, one the manifest does not list, or any when there is no
//!   checkpoint). `writes` are the record's new row values in order: the
//!   table, `put` with the key and the value, or `delete` with the key;
//!   keys and values in lowercase hexadecimal, as `export` writes them
//!   (`Key::from(7u64)` is `0000000000000007`). Records whose effects the
//!   checkpoint holds are left out (counted as covered);
//! * `salvage.json`, written last: `{"format":"multiverse-salvage",
//!   "version":1, ...}` with the directory, generation, checkpoint,
//!   durable epoch, whether it is damaged, recovery's dropped lines, the
//!   counts (replayed, covered, records, writes), each stream's file and
//!   counts, and the byte ranges skipped as damaged.
//!
//! Exit status as `recover`'s: 3 when the directory is damaged (OUT is
//! written), 0 when it is not (OUT holds at most a crash's torn tail and
//! rounds never acknowledged), 1 on any error (one line, OUT not written),
//! 2 for a bad command line.

use super::Failure;
use crate::datadir::Survey;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Serialize)]
struct Line<'a> {
    stream: u32,
    file: &'a str,
    offset: u64,
    generation: u64,
    epoch: u64,
    commit_ts: u64,
    reason: &'static str,
    writes: Vec<WriteLine<'a>>,
}

#[derive(Serialize)]
struct WriteLine<'a> {
    table: &'a str,
    op: &'static str,
    key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<String>,
}

#[derive(Serialize)]
struct Summary<'a> {
    format: &'static str,
    version: u32,
    dir: String,
    generation: u64,
    checkpoint: Option<&'a str>,
    checkpoint_ts: Option<u64>,
    durable_epoch: u64,
    damaged: bool,
    dropped: &'a [String],
    replayed: u64,
    covered: u64,
    records: u64,
    writes: u64,
    streams: Vec<StreamSummary>,
    skipped: &'a [String],
}

#[derive(Serialize)]
struct StreamSummary {
    stream: u32,
    file: String,
    records: u64,
    writes: u64,
    /// Records by reason.
    reasons: BTreeMap<&'static str, u64>,
}

/// One stream's file being written.
struct Out {
    w: BufWriter<std::fs::File>,
    records: u64,
    writes: u64,
    reasons: BTreeMap<&'static str, u64>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn stream_file(s: u32) -> String {
    format!("stream-{s:03}.jsonl")
}

/// Checks that OUT can be written (absent or an empty directory, not
/// inside DIR); returns its parent and its name.
fn target(dir: &Path, out: &Path) -> Result<(PathBuf, std::ffi::OsString), String> {
    let o = out.display();
    match std::fs::symlink_metadata(out) {
        Ok(m) if !m.is_dir() => return Err(format!("{o} exists and is not a directory; nothing was written")),
        Ok(_) => {
            let mut entries = std::fs::read_dir(out).map_err(|e| format!("cannot read {o}: {e}"))?;
            if entries.next().is_some() {
                return Err(format!("{o} exists and is not empty; nothing was written"));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot read {o}: {e}")),
    }
    let name = out.file_name().ok_or_else(|| format!("{o}: not a directory name"))?.to_owned();
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let canon = |p: &Path| std::fs::canonicalize(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let (d, p) = (canon(dir)?, canon(&parent)?);
    if p.starts_with(&d) {
        return Err(format!(
            "{o} is inside {}: salvage never writes into the data directory; choose a directory outside it",
            dir.display()
        ));
    }
    Ok((parent, name))
}

/// Runs the salvage of `dir` into `out` (see the module docs).
pub(super) fn run(dir: &Path, out: &Path) -> Result<(), Failure> {
    let files = Survey::of(dir)?;
    files.refuse_unless_data(dir, "salvage")?;
    let (parent, name) = target(dir, out)?;
    let tmp = parent.join(format!(".{}.salvage-{}.tmp", name.to_string_lossy(), std::process::id()));
    std::fs::create_dir(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let written = write(dir, &tmp).and_then(|r| {
        std::fs::rename(&tmp, out).map_err(|e| format!("cannot rename {} to {}: {e}", tmp.display(), out.display()))?;
        std::fs::File::open(&parent)
            .and_then(|d| d.sync_all())
            .map_err(|e| format!("cannot sync {}: {e}", parent.display()))?;
        Ok(r)
    });
    let (r, streams) = match written {
        Ok(x) => x,
        Err(e) => {
            // Ours alone: a directory this run created and filled.
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(Failure::Error(e));
        }
    };
    println!("salvaged {} into {}", dir.display(), out.display());
    println!("  directory  {}", files.describe());
    println!("  generation {}", r.generation);
    if let Some((cp, ts)) = &r.checkpoint {
        println!("  checkpoint {cp}: timestamp {ts} (not read)");
    }
    println!(
        "  log        {} streams, {} files: {} records recovery replays, {} it drops (written here, {} writes), \
         {} whose effects the checkpoint holds",
        r.streams, r.files, r.replayed, r.records, r.writes, r.covered
    );
    for s in &streams {
        let why: Vec<String> = s.reasons.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let why = if why.is_empty() { String::new() } else { format!(" ({})", why.join(", ")) };
        println!("  stream     {}: {}: {} records{why}", s.stream, s.file, s.records);
    }
    for s in &r.skipped {
        println!("  skipped    {s}");
    }
    for d in &r.dropped {
        println!("  dropped    {d}");
    }
    if r.damaged {
        println!(
            "  DAMAGED    commits acknowledged as durable may be lost; Database::open refuses the directory \
             until it is opened with OnDamage::KeepPrefix, which keeps the prefix and moves the rest into a \
             quarantine folder"
        );
        return Err(Failure::Damaged(format!(
            "{}: damaged: the {} intact records that recovery drops are in {}",
            dir.display(),
            r.records,
            out.display()
        )));
    }
    Ok(())
}

/// Writes the salvage of `dir` into the new directory `tmp`, synced.
fn write(dir: &Path, tmp: &Path) -> Result<(multiverse::durability::SalvageReport, Vec<StreamSummary>), String> {
    let io = |p: &Path, e: std::io::Error| format!("cannot write {}: {e}", p.display());
    let mut outs: BTreeMap<u32, Out> = BTreeMap::new();
    let open = |s: u32| -> Result<Out, String> {
        let p = tmp.join(stream_file(s));
        let f = std::fs::File::create(&p).map_err(|e| io(&p, e))?;
        Ok(Out { w: BufWriter::new(f), records: 0, writes: 0, reasons: BTreeMap::new() })
    };
    let mut failed = None;
    let r = multiverse::durability::salvage(dir, |rec| {
        let o = match outs.entry(rec.stream) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => match open(rec.stream) {
                Ok(o) => e.insert(o),
                Err(m) => return Err(multiverse::Error::Io(failed.insert(m).clone())),
            },
        };
        let writes = rec
            .writes
            .iter()
            .map(|w| WriteLine {
                table: &w.table,
                op: if w.value.is_some() { "put" } else { "delete" },
                key: hex(w.key.as_bytes()),
                value: w.value.map(hex),
            })
            .collect();
        let line = Line {
            stream: rec.stream,
            file: rec.file,
            offset: rec.offset,
            generation: rec.generation,
            epoch: rec.epoch,
            commit_ts: rec.commit_ts,
            reason: rec.reason.name(),
            writes,
        };
        let text = serde_json::to_string(&line).expect("strings and numbers");
        if let Err(e) = writeln!(o.w, "{text}") {
            let m = io(&tmp.join(stream_file(rec.stream)), e);
            return Err(multiverse::Error::Io(failed.insert(m).clone()));
        }
        o.records += 1;
        o.writes += rec.writes.len() as u64;
        *o.reasons.entry(rec.reason.name()).or_default() += 1;
        Ok(())
    });
    let r = match (r, failed) {
        (_, Some(m)) => return Err(m),
        (Err(e), None) => return Err(format!("{}: {e}", dir.display())),
        (Ok(r), None) => r,
    };
    // Every stream has its file, empty if recovery drops none of its records.
    for s in 0..r.streams as u32 {
        if let std::collections::btree_map::Entry::Vacant(e) = outs.entry(s) {
            e.insert(open(s)?);
        }
    }
    let mut streams = Vec::new();
    for (s, o) in outs {
        let p = tmp.join(stream_file(s));
        let f = o.w.into_inner().map_err(|e| io(&p, e.into_error()))?;
        f.sync_all().map_err(|e| io(&p, e))?;
        streams.push(StreamSummary {
            stream: s,
            file: stream_file(s),
            records: o.records,
            writes: o.writes,
            reasons: o.reasons,
        });
    }
    let summary = Summary {
        format: "multiverse-salvage",
        version: 1,
        dir: dir.display().to_string(),
        generation: r.generation,
        checkpoint: r.checkpoint.as_ref().map(|c| c.0.as_str()),
        checkpoint_ts: r.checkpoint.as_ref().map(|c| c.1),
        durable_epoch: r.durable_epoch,
        damaged: r.damaged,
        dropped: &r.dropped,
        replayed: r.replayed,
        covered: r.covered,
        records: r.records,
        writes: r.writes,
        streams,
        skipped: &r.skipped,
    };
    let p = tmp.join("salvage.json");
    let text = serde_json::to_string_pretty(&summary).expect("strings and numbers") + "\n";
    let mut f = std::fs::File::create(&p).map_err(|e| io(&p, e))?;
    f.write_all(text.as_bytes()).and_then(|()| f.sync_all()).map_err(|e| io(&p, e))?;
    std::fs::File::open(tmp).and_then(|d| d.sync_all()).map_err(|e| io(tmp, e))?;
    let Summary { streams, .. } = summary;
    Ok((r, streams))
}
