//! Checkpoints: every row as of one snapshot timestamp.
//!
//! Multi-versioning makes a checkpoint an ordinary read-only transaction
//! (Hekaton section 5: checkpoints "scan" the tables; here, a snapshot
//! read): it scans every table's primary index as of its begin timestamp
//! `ts` while updaters go on. The file is written under a temporary name,
//! synced, and renamed, so a crash leaves either the whole file or none:
//!
//! ```text
//!  "MVCKPT\0\x03" | frame(generation u64 | ts u64 | TABLES)
//!                 | frame(row)* | frame(u32::MAX | rows u64)
//! ```
//!
//! `TABLES` names each table with its number in the rows and its
//! descriptor (its indexes' kinds, a typed table's types; see `format`),
//! which an open checks the schema against (`durability::schema`).
//! Format 3 added the descriptors; formats 1 and 2 wrote `tables u32 |
//! (id u32 | name_len u16 | name)*`, and their tables are not checked.
//! Format 2 writes keys of up to `KEY_MAX` bytes (the row's key length is
//! one byte, or 255 and a u16; see `format`); format 1 wrote one byte, for
//! keys of at most 32 bytes, the same bytes. Files of formats 1 to 3 are
//! read; a file of a later format is refused with a word that says so.
//!
//! Each row is framed with its CRC (see `format`); the footer's count
//! proves that no row is missing at the end.
//!
//! **Single-version stores** (silo, 1v-lock, 2pl-ordered) rewrite rows in
//! place: there is no snapshot to read while updaters go on. Their
//! checkpoint *freezes commits* instead (`txn::freeze`): a durable committer
//! enters the freeze before it draws its commit TID from the shared
//! sequence and stays in it until its writes are installed (its slot is
//! Preparing meanwhile); the checkpoint raises the flag, waits until no
//! slot is Preparing, reads the sequence `C`, and scans the records as they
//! are. Every commit with a TID `<= C` is installed and no later one has
//! begun to, so the file holds exactly the commits up to `C`, and recovery
//! replays the records after `C`. Transactions go on running meanwhile;
//! only their commits wait, for the length of the scan.
//!
//! **BOHM** checkpoints with an interactive transaction, which runs alone
//! (`protocol::bohm`): between pipeline runs, at its log position.

use super::checkpoint_file_name;
use crate::sync::atomic::Ordering;
use crate::wal::format::{frame, next_frame, put_key, put_tables, put_value, read_tables, Framed, Reader, TableEntry};
use crate::wal::sync_dir;
use crate::{Database, Isolation, Key, TxnOptions};
use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

pub(crate) const CHECKPOINT_MAGIC: &[u8; 8] = b"MVCKPT\x00\x03";
/// The oldest checkpoint format read (see the module docs).
const CHECKPOINT_FORMAT_READ: u8 = 1;
/// The first checkpoint format whose header holds table descriptors.
const CHECKPOINT_FORMAT_DESCRIBED: u8 = 3;

/// The format of the checkpoint `data`, or why it is not a checkpoint
/// this version reads.
fn check_magic(data: &[u8]) -> std::result::Result<u8, String> {
    let n = CHECKPOINT_MAGIC.len();
    if data.len() < n || data[..n - 1] != CHECKPOINT_MAGIC[..n - 1] {
        return Err("not a checkpoint file (bad magic)".into());
    }
    match data[n - 1] {
        f if (CHECKPOINT_FORMAT_READ..=CHECKPOINT_MAGIC[n - 1]).contains(&f) => Ok(f),
        f if f > CHECKPOINT_MAGIC[n - 1] => {
            Err(format!("a checkpoint of a newer format ({f}) than this version writes ({})", CHECKPOINT_MAGIC[n - 1]))
        }
        f => Err(format!("a checkpoint of an older format ({f}), which this version does not read")),
    }
}
const FOOTER_TABLE: u32 = u32::MAX;

/// What a checkpoint wrote.
///
/// ```
/// use multiverse::{Database, Durability, Isolation, Key, Options, TableSpec};
///
/// # let tmp = tempfile::tempdir().unwrap();
/// let opts = Options { durability: Durability::Async, data_dir: Some(tmp.path().into()), ..Options::default() };
/// let (db, _) = Database::open_with(opts, |db| db.create_table(TableSpec::hash("t", 64)).map(drop)).unwrap();
/// let t = db.table("t").unwrap();
/// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"v")).unwrap();
/// let info = db.checkpoint().unwrap();
/// assert_eq!(info.rows, 1);
/// assert!(info.path.exists() && info.bytes > 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// The file.
    pub path: PathBuf,
    /// Its snapshot timestamp: it holds every commit before it.
    pub ts: u64,
    /// Rows written.
    pub rows: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Writes a checkpoint of generation `generation` into `dir`.
pub(crate) fn write(db: &Database, dir: &Path, generation: u64) -> Result<CheckpointInfo> {
    write_with(db, dir, generation, true)
}

/// As [`write`]; `freeze` false reads a single-version store with an
/// ordinary transaction at its strongest level instead of under the
/// commit freeze: for a database without a log, whose committers do not
/// enter the freeze (`durability::backup`). Its timestamp is then the
/// commit sequence as read, which only recording advances.
pub(crate) fn write_with(db: &Database, dir: &Path, generation: u64, freeze: bool) -> Result<CheckpointInfo> {
    let _span = crate::obs::span!(debug, "checkpoint", generation, dir = %dir.display());
    let freeze = freeze && db.protocol().is_single_version();
    let iso = if !freeze && db.protocol().is_single_version() {
        db.protocol().strongest()
    } else if db.protocol().isolation_levels().contains(&Isolation::Snapshot) {
        Isolation::Snapshot
    } else {
        db.protocol().strongest()
    };
    let locking = !freeze && db.protocol().is_single_version();
    let mut attempts = 0;
    loop {
        attempts += 1;
        match write_once(db, dir, generation, iso, freeze) {
            // A locking (validating) read aborts when writers touch what
            // it read; it backs off, and gives up sooner: Silo in memory
            // has no snapshot to read, so a steady write load on the
            // rows scanned can abort it every time.
            Err(e) if e.is_transient() && locking && attempts < 20 => {
                std::thread::sleep(std::time::Duration::from_millis(1 << attempts.min(6)));
            }
            Err(e) if e.is_transient() && !locking && attempts < 100 => continue,
            r => return r,
        }
    }
}

fn write_once(db: &Database, dir: &Path, generation: u64, iso: Isolation, freeze: bool) -> Result<CheckpointInfo> {
    let single = freeze;
    // A single-version store read without the freeze: an ordinary
    // transaction that tracks its reads (locks them, or validates them at
    // commit), so that its commit proves them a consistent state.
    let locking = !freeze && db.protocol().is_single_version();
    let frozen = single.then(|| db.freeze.hold(&db.txns));
    let t = db.begin_with(TxnOptions { read_only: !locking, ..TxnOptions::new(iso) })?;
    let mut t = if single { t.into_frozen_reader() } else { t };
    let ts = if locking {
        // Relaxed: a number to report; the commit below is what orders.
        db.globals.single().expect("a single-version database").order.load(Ordering::Relaxed)
    } else if single {
        // Reads without locks or validation (the frozen reader above):
        // nothing is installed while the freeze is held, so every record
        // read is as of `ts`.
        // SeqCst: every TID drawn so far was drawn inside the freeze, which
        // every committer has left.
        db.globals.single().expect("a single-version database").order.load(Ordering::SeqCst)
    } else {
        t.plain_snapshot();
        t.begin_ts()
    };
    let tables = db.table_list();
    let path = dir.join(checkpoint_file_name(generation, ts));
    let tmp = path.with_extension("tmp");
    let io = |what: &str, e: std::io::Error| Error::Io(format!("checkpoint {}: {what}: {e}", tmp.display()));
    let file = std::fs::File::create(&tmp).map_err(|e| io("create", e))?;
    // A failed attempt (an abort, an I/O error) leaves no file behind.
    let mut unfinished = RemoveOnDrop(Some(&tmp));
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut buf = CHECKPOINT_MAGIC.to_vec();
    frame(&mut buf, |b| {
        b.extend_from_slice(&generation.to_le_bytes());
        b.extend_from_slice(&ts.to_le_bytes());
        put_tables(b, &tables);
    });
    let (mut rows, mut bytes) = (0u64, 0u64);
    let mut failed = None;
    for TableEntry { id, .. } in &tables {
        let table = db.tid(*id);
        t.scan(db.primary(table), .., None, |k, v| {
            frame(&mut buf, |b| {
                b.extend_from_slice(&id.to_le_bytes());
                put_key(b, k.as_bytes());
                put_value(b, v);
            });
            rows += 1;
            if buf.len() >= 1 << 20 {
                bytes += buf.len() as u64;
                if let Err(e) = out.write_all(&buf) {
                    failed = Some(e);
                    return false;
                }
                buf.clear();
            }
            true
        })?;
        if let Some(e) = failed.take() {
            return Err(io("write", e));
        }
    }
    frame(&mut buf, |b| {
        b.extend_from_slice(&FOOTER_TABLE.to_le_bytes());
        b.extend_from_slice(&rows.to_le_bytes());
    });
    bytes += buf.len() as u64;
    out.write_all(&buf).map_err(|e| io("write", e))?;
    if single {
        // Nothing to validate: the freeze made the reads a snapshot.
        t.abort();
    } else {
        t.commit()?;
    }
    drop(frozen);
    let file = out.into_inner().map_err(|e| io("write", e.into_error()))?;
    file.sync_all().map_err(|e| io("sync", e))?;
    drop(file);
    std::fs::rename(&tmp, &path).map_err(|e| io("rename", e))?;
    unfinished.0 = None;
    sync_dir(dir)?;
    Ok(CheckpointInfo { path, ts, rows, bytes })
}

/// Removes a file when dropped, unless disarmed (`.0 = None`).
struct RemoveOnDrop<'a>(Option<&'a Path>);

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A checkpoint read back: its timestamp and table directory; the rows
/// went to `row(table id, key, value)`.
pub(crate) struct Loaded {
    pub(crate) generation: u64,
    pub(crate) ts: u64,
    pub(crate) rows: u64,
}

/// A checkpoint's header: its generation, snapshot timestamp, and tables
/// (with their descriptors from format 3 on), in id order.
pub(crate) struct Header {
    pub(crate) generation: u64,
    pub(crate) ts: u64,
    pub(crate) tables: Vec<TableEntry>,
}

/// The header of the checkpoint `data` (from `name`: at least its magic
/// and header frame) and the offset of its first row.
pub(crate) fn header(name: &str, data: &[u8]) -> Result<(Header, usize)> {
    let bad = |what: String| Error::Corrupt(format!("checkpoint {name}: {what}; refusing to open it"));
    let format = check_magic(data).map_err(bad)?;
    let (body, at) = match next_frame(data, CHECKPOINT_MAGIC.len()) {
        Framed::Body(b, next) => (b, next),
        Framed::End => return Err(bad("no header".into())),
        Framed::Damaged(what) => return Err(bad(format!("{what} in the header"))),
    };
    let parse = || -> Result<Header> {
        let mut r = Reader::new(body);
        let (generation, ts) = (r.u64()?, r.u64()?);
        let mut tables = read_tables(&mut r, format >= CHECKPOINT_FORMAT_DESCRIBED)?;
        if !r.done() {
            return Err(Error::Corrupt("trailing bytes".into()));
        }
        tables.sort_by_key(|t| t.id);
        Ok(Header { generation, ts, tables })
    };
    let h = parse().map_err(|e| bad(format!("a malformed header ({e})")))?;
    if let Some(w) = h.tables.windows(2).find(|w| w[0].id == w[1].id || w[0].name == w[1].name) {
        return Err(bad(format!("a header that names table #{} '{}' twice", w[1].id, w[1].name)));
    }
    Ok((h, at))
}

/// Reads the checkpoint `data` (from `name`), handing every row to `row`
/// with the table's name. Any damage is an error: a checkpoint is whole
/// or refused.
pub(crate) fn read(name: &str, data: &[u8], mut row: impl FnMut(&str, Key, &[u8]) -> Result<()>) -> Result<Loaded> {
    let bad = |what: String| Error::Corrupt(format!("checkpoint {name}: {what}; refusing to open it"));
    let (Header { generation, ts, tables }, mut at) = header(name, data)?;
    let names: std::collections::HashMap<u32, String> = tables.into_iter().map(|t| (t.id, t.name)).collect();
    let mut rows = 0u64;
    loop {
        match next_frame(data, at) {
            Framed::Body(b, next) => {
                let mut r = Reader::new(b);
                let table = r.u32()?;
                if table == FOOTER_TABLE {
                    let count = r.u64()?;
                    if count != rows {
                        return Err(bad(format!("the footer counts {count} rows, the file holds {rows}")));
                    }
                    if next != data.len() {
                        return Err(bad(format!("{} bytes after the footer", data.len() - next)));
                    }
                    return Ok(Loaded { generation, ts, rows });
                }
                let Some(tn) = names.get(&table) else {
                    return Err(bad(format!("a row of table #{table}, which its header does not name")));
                };
                let key = r.key().map_err(|e| bad(e.to_string()))?;
                let value = r.value().map_err(|e| bad(e.to_string()))?;
                row(tn, key, value)?;
                rows += 1;
                at = next;
            }
            Framed::End => return Err(bad(format!("it ends after {rows} rows without its footer"))),
            Framed::Damaged(what) => return Err(bad(format!("{what} at byte {at}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checkpoints of formats 1 (keys of at most 32 bytes, the same row
    /// bytes) and 2 (no table descriptors) are read; a later format is
    /// refused by name.
    #[test]
    fn checkpoint_formats_read_and_refused() {
        let mut m = CHECKPOINT_MAGIC.to_vec();
        assert_eq!(check_magic(&m), Ok(3));
        for f in [1, 2] {
            m[7] = f;
            assert_eq!(check_magic(&m), Ok(f));
        }
        m[7] = 0;
        assert!(check_magic(&m).unwrap_err().contains("older format"));
        m[7] = 4;
        assert!(check_magic(&m).unwrap_err().contains("newer format (4)"));
        assert!(check_magic(b"MVLOG\x00\x00\x04").unwrap_err().contains("bad magic"));
    }
}
