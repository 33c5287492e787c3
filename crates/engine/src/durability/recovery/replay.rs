//! Step 5 of recovery: replay (see the parent module's docs).
//!
//! One thread per stream reads its files a chunk at a time; the main
//! thread merges their records into epoch, then commit-timestamp order;
//! replay workers, each owning the rows whose key hashes to it, keep the
//! newest value of each of their rows and write those into the database
//! (recovery's own form of MPDB's parallel replay, POMVCC paper section
//! VI.B).

use super::{replay_isolation, Scan, StopAt};
use crate::wal::format::{decode_txn, next_frame, Framed, LogHeader, FRAME, KIND_TXN, LOG_MAGIC};
use crate::{Database, Error, Key, RecoveryReport, Result, TableId, TxnOptions};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

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
        for e in &h.tables {
            let t = db.table(&e.name).map_err(|_| {
                Error::InvalidArgument(format!("the data names table '{}', which the schema does not create", e.name))
            })?;
            tables.push((e.id, t));
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
    match TEST_CHUNK.load(crate::sync::atomic::Ordering::SeqCst) {
        0 => 4 << 20,
        n => n,
    }
}

#[cfg(test)]
static TEST_CHUNK: crate::sync::atomic::AtomicUsize = crate::sync::atomic::AtomicUsize::new(0);
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
pub(super) fn replay(db: &Database, scans: &[Scan], d: u64, cp_ts: u64, rep: &mut RecoveryReport) -> Result<()> {
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
            // Taken, not cloned: a long key moves without touching its count.
            let (hash, table, ref mut key, value) = writes[i];
            rows.put(hash, table, std::mem::replace(key, Key::EMPTY), value);
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
            Err(Error::KeyNotFound) => t.insert(table, key.clone(), v),
            r => r,
        },
        None => match t.delete(table, key) {
            Err(Error::KeyNotFound) => Ok(()),
            r => r,
        },
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
        super::TEST_CHUNK.store(chunk, crate::sync::atomic::Ordering::SeqCst);
        let rep = db.recover_from(dir).unwrap();
        super::TEST_CHUNK.store(0, crate::sync::atomic::Ordering::SeqCst);
        (rows_of(&db), rep)
    }

    fn rows_of(db: &Database) -> Vec<(u64, Vec<u8>)> {
        let t = db.table("t").unwrap();
        let mut rows = Vec::new();
        db.run(Isolation::Serializable, |tx| {
            rows.clear();
            for k in 0..300u64 {
                if let Some(v) = tx.get(t, Key::from(k))? {
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
        let (db, _) = Database::open_with(o, schema).unwrap();
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
                        Err(Error::KeyNotFound) => tx.insert(t, k.clone(), &v),
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
