//! Salvage: every intact log record that recovery drops, read out for a
//! person to see what a damaged directory loses (`multiverse recover DIR
//! --salvage OUT` writes them as JSON Lines).
//!
//! Recovery stops each stream at its first damage and replays only the
//! epochs up to the consistent cut (see the parent module). Salvage scans
//! the directory the same way (so it drops exactly what recovery drops),
//! then reads every log file of the newest checkpoint's generation, and
//! any newer one, from end to end: past damage it skips to the next intact
//! record (a frame whose length, checksum and contents hold), so a flipped
//! byte costs one record, a cut file its cut part. Each intact
//! transaction record that recovery would not replay, and whose effects
//! the checkpoint does not hold, goes to the caller, with why it is
//! dropped ([`SalvageReason`]). It reads only: nothing in the directory
//! changes, and the checkpoint is not read (its name gives its
//! timestamp).

use super::{examine, file_name, list, Examined, RecoveryReport, StopAt};
use crate::durability::format::{
    decode_txn, next_frame, Framed, LogHeader, TableEntry, FRAME, KIND_MARK, KIND_TXN, LOG_MAGIC,
};
use crate::durability::parse_checkpoint_name;
use crate::{Error, Key, Result};
use std::borrow::Cow;
use std::path::Path;

/// Why recovery drops a salvaged record.
///
/// ```
/// use multiverse::durability::SalvageReason;
///
/// assert_eq!(SalvageReason::AfterDamage.name(), "after-damage");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SalvageReason {
    /// At or past its stream's first damage (a damaged record, a missing,
    /// misplaced or unreadable file): recovery stops the stream there.
    AfterDamage,
    /// Before its stream's damage, but of an epoch after the consistent cut
    /// ([`RecoveryReport::durable_epoch`]): dropped so that what is
    /// recovered is a prefix of the commit order.
    AfterCut,
    /// In a file recovery does not read: of a generation newer than the
    /// newest checkpoint's, beyond the files the manifest lists, of a
    /// stream the manifest does not have, or when there is no checkpoint.
    IgnoredFile,
}

impl SalvageReason {
    /// `after-damage`, `after-cut` or `ignored-file`.
    ///
    /// ```
    /// use multiverse::durability::SalvageReason;
    ///
    /// assert_eq!(SalvageReason::AfterCut.name(), "after-cut");
    /// assert_eq!(SalvageReason::IgnoredFile.name(), "ignored-file");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            SalvageReason::AfterDamage => "after-damage",
            SalvageReason::AfterCut => "after-cut",
            SalvageReason::IgnoredFile => "ignored-file",
        }
    }
}

/// One write of a salvaged record.
///
/// ```
/// use multiverse::durability::{salvage, SalvagedWrite};
///
/// // A line per write: its table, key and new value (or deletion).
/// let line = |w: &SalvagedWrite<'_>| format!("{} {:?} {:?}", w.table, w.key, w.value);
/// # let tmp = tempfile::tempdir().unwrap();
/// salvage(tmp.path(), |r| Ok(r.writes.iter().for_each(|w| println!("{}", line(w))))).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SalvagedWrite<'a> {
    /// The table, as the file's header names it (`#N` if it does not).
    pub table: Cow<'a, str>,
    /// The row's key.
    pub key: Key,
    /// The row's new value; `None`: the row was deleted.
    pub value: Option<&'a [u8]>,
}

/// One intact transaction record that recovery drops.
///
/// ```
/// use multiverse::durability::{salvage, SalvagedRecord};
///
/// // Where it was, when it committed, and why recovery drops it.
/// let line = |r: &SalvagedRecord<'_>| format!("{}@{} ts {} {}", r.file, r.offset, r.commit_ts, r.reason.name());
/// # let tmp = tempfile::tempdir().unwrap();
/// salvage(tmp.path(), |r| Ok(println!("{}", line(r)))).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SalvagedRecord<'a> {
    /// The stream, as the file's name says.
    pub stream: u32,
    /// The log file's name.
    pub file: &'a str,
    /// Where in the file the record's frame begins.
    pub offset: u64,
    /// The file's generation (its name's).
    pub generation: u64,
    /// The record's epoch (its log round).
    pub epoch: u64,
    /// Its commit timestamp (of its generation: they restart with each).
    pub commit_ts: u64,
    /// Why recovery drops it.
    pub reason: SalvageReason,
    /// Its writes, in order.
    pub writes: Vec<SalvagedWrite<'a>>,
}

/// What [`salvage`] found.
///
/// ```
/// use multiverse::durability::salvage;
///
/// # let tmp = tempfile::tempdir().unwrap();
/// // An empty directory: nothing to recover, nothing dropped.
/// let report = salvage(tmp.path(), |_| Ok(())).unwrap();
/// assert_eq!((report.generation, report.records, report.damaged), (0, 0, false));
/// ```
#[derive(Clone, Debug, Default)]
pub struct SalvageReport {
    /// The generation recovery would recover (0: no checkpoint).
    pub generation: u64,
    /// The newest checkpoint: file name and snapshot timestamp (from its
    /// name; the file is not read).
    pub checkpoint: Option<(String, u64)>,
    /// Log streams, as recovery sees them.
    pub streams: usize,
    /// The epoch recovery replays through.
    pub durable_epoch: u64,
    /// What recovery would say: [`RecoveryReport::damaged`]...
    pub damaged: bool,
    /// ... and [`RecoveryReport::dropped`].
    pub dropped: Vec<String>,
    /// Intact records recovery replays (not given to the caller).
    pub replayed: u64,
    /// Intact records recovery drops whose effects the checkpoint holds
    /// (their commit timestamps are not after its own; not given).
    pub covered: u64,
    /// Records given to the caller.
    pub records: u64,
    /// Their writes.
    pub writes: u64,
    /// Log files read.
    pub files: usize,
    /// What could not be read, one line each: byte ranges that hold no
    /// intact record, unreadable files and headers.
    pub skipped: Vec<String>,
}

/// Reads every intact transaction record that recovering `dir` would drop
/// (see the module docs) and gives each to `each`, stream by stream, each
/// stream's in file order; an error from `each` stops it. Changes nothing.
///
/// ```
/// use multiverse::{durability, Database, Durability, Isolation, Key, Options, TableSpec};
///
/// # let tmp = tempfile::tempdir().unwrap();
/// let opts = Options { durability: Durability::Sync, data_dir: Some(tmp.path().into()), ..Options::default() };
/// let (db, _) = Database::open_with(opts, |db| db.create_table(TableSpec::hash("t", 64)).map(drop)).unwrap();
/// let t = db.table("t").unwrap();
/// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"v")).unwrap();
/// drop(db);
/// // An undamaged directory: recovery replays everything, nothing to salvage.
/// let mut found = 0;
/// let report = durability::salvage(tmp.path(), |_record| Ok(found += 1)).unwrap();
/// assert_eq!((found, report.replayed, report.damaged), (0, 1, false));
/// ```
pub fn salvage(
    dir: impl AsRef<Path>,
    mut each: impl FnMut(&SalvagedRecord<'_>) -> Result<()>,
) -> Result<SalvageReport> {
    let dir = dir.as_ref();
    let mut rep = RecoveryReport::default();
    let (listing, examined) = match examine(dir, &mut rep) {
        Ok(Some(x)) => {
            let Examined { generation, checkpoint, listing, plans, scans, cut } = x;
            let name = file_name(&checkpoint);
            let ts = parse_checkpoint_name(&name).map_or(0, |(_, ts)| ts);
            (listing, Some((generation, name, ts, plans, scans, cut.d)))
        }
        Ok(None) => (Default::default(), None),
        // Log files without a checkpoint: nothing is replayed.
        Err(Error::Corrupt(m)) => {
            rep = RecoveryReport { damaged: true, dropped: vec![m], ..RecoveryReport::default() };
            (list(dir, &mut rep)?, None)
        }
        Err(e) => return Err(e),
    };
    let mut out = SalvageReport {
        generation: rep.generation,
        checkpoint: examined.as_ref().map(|(_, name, ts, ..)| (name.clone(), *ts)),
        streams: rep.streams,
        durable_epoch: rep.durable_epoch,
        damaged: rep.damaged,
        dropped: rep.dropped,
        ..SalvageReport::default()
    };
    let generation = examined.as_ref().map(|e| e.0);
    // Files of earlier generations are covered by the checkpoint; the
    // rest, stream by stream.
    let mut files: Vec<_> = listing
        .logs
        .iter()
        .filter(|(g, ..)| generation.is_none_or(|cg| *g >= cg))
        .map(|(g, s, q, p)| (*s, *g, *q, p))
        .collect();
    files.sort();
    for (s, g, _, path) in files {
        // Where recovery replays in this file: records before `end` (of
        // epochs up to the cut); the rest is dropped for `reason`.
        let (mut end, mut reason, mut cp_ts) = (0usize, SalvageReason::IgnoredFile, None);
        if let Some((cg, _, ts, plans, scans, _)) = &examined {
            if g == *cg {
                cp_ts = Some(*ts);
                if let (Some(plan), Some(scan)) = (plans.get(s as usize), scans.get(s as usize)) {
                    if let Some(i) = scan.files.iter().position(|p| p == path) {
                        end = match scan.stop {
                            Some(StopAt { file, at }) if file == i => at,
                            _ => usize::MAX,
                        };
                        reason = SalvageReason::AfterDamage;
                    } else if plan.files.iter().any(|(_, p)| p.as_ref() == Some(path)) {
                        reason = SalvageReason::AfterDamage;
                    }
                }
            }
        }
        let d = examined.as_ref().map_or(0, |e| e.5);
        let name = file_name(path);
        out.files += 1;
        let data = match std::fs::read(path) {
            Ok(data) => data,
            Err(e) => {
                out.skipped.push(format!("{name}: cannot be read ({e})"));
                continue;
            }
        };
        let (tables, start) = match LogHeader::decode(&data) {
            Ok((h, at)) => (h.tables, at),
            Err(why) => {
                out.skipped.push(format!("{name}: {why}; its records' tables are named by number"));
                (Vec::new(), LOG_MAGIC.len().min(data.len()))
            }
        };
        let mut at = start;
        let mut bad_from = None;
        while at < data.len() {
            let Some((rec, next)) = record_at(&data, at, &tables) else {
                // Damage: look for the next intact record, a byte at a time.
                bad_from.get_or_insert(at);
                at += 1;
                continue;
            };
            if let Some(b) = bad_from.take() {
                out.skipped.push(format!("{name}: bytes {b}..{at} hold no intact record"));
            }
            let offset = at;
            at = next;
            let Some((epoch, commit_ts, writes)) = rec else { continue }; // an epoch mark
            let why = if offset < end {
                if epoch <= d {
                    out.replayed += u64::from(cp_ts.is_some_and(|ts| commit_ts > ts));
                    out.covered += u64::from(cp_ts.is_some_and(|ts| commit_ts <= ts));
                    continue;
                }
                SalvageReason::AfterCut
            } else {
                reason
            };
            if cp_ts.is_some_and(|ts| commit_ts <= ts) {
                out.covered += 1;
                continue;
            }
            out.records += 1;
            out.writes += writes.len() as u64;
            let r = SalvagedRecord {
                stream: s,
                file: &name,
                offset: offset as u64,
                generation: g,
                epoch,
                commit_ts,
                reason: why,
                writes,
            };
            each(&r)?;
        }
        if let Some(b) = bad_from {
            out.skipped.push(format!("{name}: bytes {b}..{} hold no intact record", data.len()));
        }
    }
    Ok(out)
}

/// A decoded transaction record: epoch, commit timestamp, writes.
type Txn<'a> = (u64, u64, Vec<SalvagedWrite<'a>>);

/// The intact record whose frame begins at `at` (`Some(None)`: an epoch
/// mark), and where the next begins; `None` if none begins there.
fn record_at<'a>(data: &'a [u8], at: usize, tables: &'a [TableEntry]) -> Option<(Option<Txn<'a>>, usize)> {
    // Cheap tests first: most offsets tried after damage fail them.
    let len = data.get(at..at + 4)?;
    let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
    let kind = data.get(at + FRAME).copied();
    let plausible = match kind {
        Some(KIND_MARK) => len == 9,
        Some(KIND_TXN) => len >= 21,
        _ => false,
    };
    if !plausible || len > data.len() - at - FRAME {
        return None;
    }
    let Framed::Body(body, next) = next_frame(data, at) else { return None };
    if kind == Some(KIND_MARK) {
        return Some((None, next));
    }
    let mut writes = Vec::new();
    let decoded = decode_txn(body, 0, 1, |table, _, key, value| {
        let table = match tables.iter().find(|t| t.id == table) {
            Some(t) => Cow::Borrowed(t.name.as_str()),
            None => Cow::Owned(format!("#{table}")),
        };
        writes.push(SalvagedWrite { table, key, value });
        Ok(())
    });
    decoded.ok().map(|(epoch, ts)| (Some((epoch, ts, writes)), next))
}
