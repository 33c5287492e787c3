//! The bytes on disk: log records and checkpoint rows.
//!
//! Every record is framed the same way, so a reader can tell a complete,
//! intact record from a torn or damaged one without trusting anything in
//! it:
//!
//! ```text
//!  0        4        8
//!  +--------+--------+---------------------------+
//!  | len    | crc    | body (len bytes)          |
//!  +--------+--------+---------------------------+
//!    u32 LE   u32 LE: CRC-32 (IEEE) of the body
//! ```
//!
//! A log body is a transaction's redo record (Hekaton section 3.2: only
//! new versions, no undo) or an epoch mark (see `wal::log`):
//!
//! ```text
//!  TXN:  kind=1 u8 | epoch u64 | commit_ts u64 | writes u32 | write*
//!        write: table u32 | op u8 (0 put, 1 delete) | key_len | key
//!               | (put only) value_len u32 | value
//!  MARK: kind=2 u8 | epoch u64       (every record of this stream with
//!                                     an epoch <= epoch precedes it)
//! ```
//!
//! `key_len` is one byte for a key of up to 254 bytes, else the byte 255
//! and the length as a u16 (keys are at most [`KEY_MAX`] bytes). Format 3
//! wrote one byte, for keys of at most 32 bytes: the same bytes, so format
//! 4 reads its files.
//!
//! Every log file begins with `"MVLOG\0\0\x05"` and one framed header
//! that says where the file belongs, so that recovery can tell a missing,
//! duplicated or misplaced file from a complete stream, and which tables
//! its records write:
//!
//! ```text
//!  HEADER: generation u64 | stream u32 | streams u32 | seq u32
//!          | start_mark u64 | TABLES
//!  TABLES: tables u32 | (id u32 | name_len u16 | name | desc_len u32 | DESC)*
//! ```
//!
//! `start_mark` is the last epoch mark the stream had written before the
//! file began: every record of the stream with an epoch up to it lies in
//! an earlier file, and every record in this one has a later epoch.
//! Formats 3 and 4 wrote `TABLES` without descriptors (`(id u32 |
//! name_len u16 | name)*`): their files are read, and their tables are
//! not checked against the schema.
//!
//! A table's *descriptor* (`DESC`, `desc_len` bytes; 0 bytes: none) is
//! what the directory records of its definition, so that an open can
//! check the schema against it and create the tables a schema does not
//! (`durability::schema`): the primary index's kind, the secondary
//! indexes' names and kinds in order (their key functions are code, not
//! data), and a typed table's key and value type names
//! (`std::any::type_name`). Strings are UTF-8:
//!
//! ```text
//!  DESC: version=1 u8 | KIND | secondaries u8 | (name_len u16 | name | KIND)*
//!        | typed u8 (0 or 1) | (typed only) key_len u16 | key type
//!                                          | value_len u16 | value type
//!  KIND: 0 u8 | capacity u64           a hash index and its capacity
//!        1 u8                          an ordered index
//!        2 u8 | prefix u16             an ordered index grouped by a prefix
//! ```
//!
//! A descriptor of a later version is refused by name. Checkpoints hold
//! the same `TABLES` in their header (`durability::checkpoint`).
//!
//! The `manifest` lists the files each stream of the generation holds
//! (rewritten atomically whenever a file is added or dropped):
//!
//! ```text
//!  "MVMANI\0\x01" | frame(generation u64 | streams u32
//!                          | (first_seq u32 | last_seq u32) * streams)
//! ```
//!
//! A checkpoint row body is `table u32 | key_len | key | value_len u32 |
//! value`, `key_len` as in a log record. Integers are little-endian.

use crate::key::{Key, KEY_MAX};
use crate::table::{TableDesc, Types};
use crate::{Error, IndexKind, Result};

/// Bytes of the frame around every body.
pub(crate) const FRAME: usize = 8;
/// Log body kinds.
pub(crate) const KIND_TXN: u8 = 1;
pub(crate) const KIND_MARK: u8 = 2;
/// Write ops.
pub(crate) const OP_PUT: u8 = 0;
pub(crate) const OP_DELETE: u8 = 1;
/// A body longer than this is damage, not data (values are at most 4 GiB,
/// but a transaction record this large is not something we write).
pub(crate) const MAX_BODY: usize = 1 << 30;

/// The first bytes of every log file (format 5: tables with their
/// descriptors, see the module docs).
pub(crate) const LOG_MAGIC: &[u8; 8] = b"MVLOG\x00\x00\x05";
/// The oldest log format still read: 3 (placed headers; round `e` and its
/// mark in stream `e % streams` only; keys of at most 32 bytes, whose
/// one-byte length format 4 writes alike; no table descriptors, which
/// format 5 adds).
pub(crate) const LOG_FORMAT_READ: u8 = 3;
/// The first log format whose headers hold table descriptors.
const LOG_FORMAT_DESCRIBED: u8 = 5;
/// The first bytes of the log files of every format, minus their last
/// byte (the format: 1, no headers; 2, every round marked in every stream,
/// both refused with a clear word; 3 to 5 read).
pub(crate) const LOG_MAGIC_OLD: &[u8; 7] = b"MVLOG\x00\x00";
/// A `key_len` byte that says a u16 length follows.
const KEY_LEN_WIDE: u8 = 0xFF;
/// The first bytes of a manifest.
pub(crate) const MANIFEST_MAGIC: &[u8; 8] = b"MVMANI\x00\x01";
/// At most this many streams (checked by `Database::open_with`).
pub(crate) const MAX_STREAMS: u32 = 256;
/// The version of the table descriptors written (`DESC` in the module docs).
const DESC_VERSION: u8 = 1;

/// A table as a file's header names it (`TABLES` in the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TableEntry {
    /// Its number in the file's records.
    pub(crate) id: u32,
    pub(crate) name: String,
    /// Its descriptor; `None` in the formats that wrote none.
    pub(crate) desc: Option<TableDesc>,
}

impl TableEntry {
    /// Takes in another file's (or a later list's) entry of this table:
    /// within a generation its indexes never change, but its types may be
    /// recorded after an entry named it (a table of the byte API opened
    /// typed for the first time). The fuller entry wins, so lists merged
    /// in any order agree.
    pub(crate) fn merge(&mut self, other: &TableEntry) {
        let typed = |e: &TableEntry| e.desc.as_ref().map(|d| d.types.is_some());
        if typed(other) > typed(self) {
            self.desc = other.desc.clone();
        }
    }
}

/// Appends `TABLES` (module docs), each table with its descriptor.
pub(crate) fn put_tables(out: &mut Vec<u8>, tables: &[TableEntry]) {
    out.extend_from_slice(&(tables.len() as u32).to_le_bytes());
    for t in tables {
        out.extend_from_slice(&t.id.to_le_bytes());
        put_str16(out, &t.name);
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        if let Some(d) = &t.desc {
            put_desc(out, d);
        }
        let len = (out.len() - at - 4) as u32;
        out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }
}

/// Reads `TABLES`: with descriptors (`described`), or as the formats
/// before them wrote it.
pub(crate) fn read_tables(r: &mut Reader<'_>, described: bool) -> Result<Vec<TableEntry>> {
    let n = r.u32()?;
    // Each entry takes at least 6 bytes: no allocation past the body.
    let mut tables = Vec::with_capacity((n as usize).min(r.left() / 6));
    for _ in 0..n {
        let id = r.u32()?;
        let name = r.str16()?;
        let desc = if described {
            let len = r.u32()? as usize;
            let bytes = r.bytes(len)?;
            (len > 0).then(|| decode_desc(bytes)).transpose().map_err(|e| {
                Error::Corrupt(format!("the descriptor of table '{name}': {}", e.to_string().trim_end_matches('.')))
            })?
        } else {
            None
        };
        tables.push(TableEntry { id, name, desc });
    }
    Ok(tables)
}

/// Appends a string with its length as a u16.
fn put_str16(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Appends an index kind (`KIND` in the module docs).
fn put_kind(out: &mut Vec<u8>, kind: IndexKind) {
    match kind {
        IndexKind::Hash { capacity } => {
            out.push(0);
            out.extend_from_slice(&(capacity as u64).to_le_bytes());
        }
        IndexKind::Ordered => out.push(1),
        IndexKind::OrderedGrouped { prefix } => {
            out.push(2);
            out.extend_from_slice(&(prefix as u16).to_le_bytes());
        }
    }
}

/// Appends a table descriptor (`DESC` in the module docs).
pub(crate) fn put_desc(out: &mut Vec<u8>, d: &TableDesc) {
    out.push(DESC_VERSION);
    put_kind(out, d.primary);
    out.push(d.secondary.len() as u8);
    for (name, kind) in &d.secondary {
        put_str16(out, name);
        put_kind(out, *kind);
    }
    match &d.types {
        None => out.push(0),
        Some(t) => {
            out.push(1);
            put_str16(out, &t.key);
            put_str16(out, &t.value);
        }
    }
}

/// Reads a table descriptor (`DESC` in the module docs), all of `data`.
pub(crate) fn decode_desc(data: &[u8]) -> Result<TableDesc> {
    let mut r = Reader::new(data);
    match r.u8()? {
        DESC_VERSION => {}
        v if v > DESC_VERSION => {
            return Err(Error::Corrupt(format!(
                "a descriptor of a newer version ({v}) than this version writes ({DESC_VERSION})"
            )))
        }
        v => return Err(Error::Corrupt(format!("a descriptor of an unknown version ({v})"))),
    }
    let primary = r.kind()?;
    let n = r.u8()?;
    let mut secondary = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let name = r.str16()?;
        secondary.push((name, r.kind()?));
    }
    let types = match r.u8()? {
        0 => None,
        1 => Some(Types { key: r.str16()?, value: r.str16()? }),
        t => return Err(Error::Corrupt(format!("a descriptor whose typed flag is {t}"))),
    };
    if !r.done() {
        return Err(Error::Corrupt("trailing bytes in a descriptor".into()));
    }
    Ok(TableDesc { primary, secondary, types })
}

/// Where a log file belongs (its header, see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LogHeader {
    pub(crate) generation: u64,
    pub(crate) stream: u32,
    pub(crate) streams: u32,
    pub(crate) seq: u32,
    pub(crate) start_mark: u64,
    pub(crate) tables: Vec<TableEntry>,
}

impl LogHeader {
    /// The magic and the framed header.
    pub(crate) fn encode(&self) -> Vec<u8> {
        self.encode_as(LOG_MAGIC[7], put_tables)
    }

    /// The magic of format `format` and the framed header, its tables
    /// written by `tables` (the tests write the older formats).
    fn encode_as(&self, format: u8, tables: impl FnOnce(&mut Vec<u8>, &[TableEntry])) -> Vec<u8> {
        let mut h = LOG_MAGIC_OLD.to_vec();
        h.push(format);
        frame(&mut h, |b| {
            b.extend_from_slice(&self.generation.to_le_bytes());
            b.extend_from_slice(&self.stream.to_le_bytes());
            b.extend_from_slice(&self.streams.to_le_bytes());
            b.extend_from_slice(&self.seq.to_le_bytes());
            b.extend_from_slice(&self.start_mark.to_le_bytes());
            tables(b, &self.tables);
        });
        h
    }

    /// Reads a file's header; the offset of its first record, or why it is
    /// not a log file of this format.
    pub(crate) fn decode(data: &[u8]) -> std::result::Result<(LogHeader, usize), String> {
        if data.len() >= LOG_MAGIC.len()
            && data[..LOG_MAGIC_OLD.len()] == LOG_MAGIC_OLD[..]
            && (1..LOG_FORMAT_READ).contains(&data[7])
        {
            return Err(format!("a log file of an older format ({}), which this version does not read", data[7]));
        }
        if data.len() >= LOG_MAGIC.len() && data[..LOG_MAGIC_OLD.len()] == LOG_MAGIC_OLD[..] && data[7] > LOG_MAGIC[7] {
            return Err(format!(
                "a log file of a newer format ({}) than this version writes ({})",
                data[7], LOG_MAGIC[7]
            ));
        }
        if data.len() < LOG_MAGIC.len()
            || data[..LOG_MAGIC_OLD.len()] != LOG_MAGIC_OLD[..]
            || !(LOG_FORMAT_READ..=LOG_MAGIC[7]).contains(&data[7])
        {
            return Err("not a log file (bad magic)".into());
        }
        let (body, next) = match next_frame(data, LOG_MAGIC.len()) {
            Framed::Body(b, next) => (b, next),
            Framed::End => return Err("no header".into()),
            Framed::Damaged(what) => return Err(format!("{what} in its header")),
        };
        let parse = || -> Result<LogHeader> {
            let mut r = Reader::new(body);
            let (generation, stream, streams, seq, start_mark) = (r.u64()?, r.u32()?, r.u32()?, r.u32()?, r.u64()?);
            let tables = read_tables(&mut r, data[7] >= LOG_FORMAT_DESCRIBED)?;
            if !r.done() {
                return Err(Error::Corrupt("trailing bytes".into()));
            }
            Ok(LogHeader { generation, stream, streams, seq, start_mark, tables })
        };
        parse().map(|h| (h, next)).map_err(|e| format!("a malformed header ({e})"))
    }
}

/// The files each stream of a generation holds: `files[s] = (first, last)`
/// sequence numbers (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub(crate) generation: u64,
    pub(crate) files: Vec<(u32, u32)>,
}

impl Manifest {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut m = MANIFEST_MAGIC.to_vec();
        frame(&mut m, |b| {
            b.extend_from_slice(&self.generation.to_le_bytes());
            b.extend_from_slice(&(self.files.len() as u32).to_le_bytes());
            for (first, last) in &self.files {
                b.extend_from_slice(&first.to_le_bytes());
                b.extend_from_slice(&last.to_le_bytes());
            }
        });
        m
    }

    pub(crate) fn decode(data: &[u8]) -> std::result::Result<Manifest, String> {
        if data.len() < MANIFEST_MAGIC.len() || &data[..MANIFEST_MAGIC.len()] != MANIFEST_MAGIC {
            return Err("not a manifest (bad magic)".into());
        }
        let body = match next_frame(data, MANIFEST_MAGIC.len()) {
            Framed::Body(b, next) if next == data.len() => b,
            Framed::Body(..) => return Err("trailing bytes after its body".into()),
            Framed::End => return Err("no body".into()),
            Framed::Damaged(what) => return Err(what.into()),
        };
        let parse = || -> Result<Manifest> {
            let mut r = Reader::new(body);
            let generation = r.u64()?;
            let n = r.u32()?;
            if n == 0 || n > MAX_STREAMS {
                return Err(Error::Corrupt(format!("{n} streams")));
            }
            let mut files = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let (first, last) = (r.u32()?, r.u32()?);
                if first > last {
                    return Err(Error::Corrupt(format!("files {first}..{last}")));
                }
                files.push((first, last));
            }
            if !r.done() {
                return Err(Error::Corrupt("trailing bytes".into()));
            }
            Ok(Manifest { generation, files })
        };
        parse().map_err(|e| format!("malformed ({e})"))
    }
}

/// Appends a framed body produced by `body` to `out`.
pub(crate) fn frame(out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[0u8; FRAME]);
    body(out);
    let len = (out.len() - start - FRAME) as u32;
    let crc = crc32fast::hash(&out[start + FRAME..]);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// What [`next_frame`] found at an offset.
pub(crate) enum Framed<'a> {
    /// An intact body; the next frame starts at the given offset.
    Body(&'a [u8], usize),
    /// The data ends exactly here.
    End,
    /// A frame that is cut short (a torn write) or fails its CRC.
    Damaged(&'static str),
}

/// Reads the frame at `at` in `data`.
pub(crate) fn next_frame(data: &[u8], at: usize) -> Framed<'_> {
    if at == data.len() {
        return Framed::End;
    }
    if data.len() - at < FRAME {
        return Framed::Damaged("a record header cut short");
    }
    let len = u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(data[at + 4..at + 8].try_into().expect("4 bytes"));
    if len > MAX_BODY {
        return Framed::Damaged("an impossible record length");
    }
    let end = at + FRAME + len;
    if end > data.len() {
        return Framed::Damaged("a record cut short");
    }
    let body = &data[at + FRAME..end];
    if crc32fast::hash(body) != crc {
        return Framed::Damaged("a record whose checksum does not match");
    }
    Framed::Body(body, end)
}

/// A cursor over a body that fails cleanly on short or malformed input.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, at: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.data.len() - self.at < n {
            return Err(Error::Corrupt("a record shorter than its contents".into()));
        }
        let s = &self.data[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }

    pub(crate) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    pub(crate) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        self.take(n)
    }

    pub(crate) fn key(&mut self) -> Result<Key> {
        let n = self.key_len()?;
        Key::from_bytes(self.take(n)?)
    }

    /// A key's length (see `key_len` in the module docs), checked against
    /// [`KEY_MAX`].
    #[inline]
    pub(crate) fn key_len(&mut self) -> Result<usize> {
        let n = match self.u8()? {
            KEY_LEN_WIDE => self.u16()? as usize,
            n => n as usize,
        };
        if n > KEY_MAX {
            return Err(Error::Corrupt(format!("a key of {n} bytes (at most {KEY_MAX})")));
        }
        Ok(n)
    }

    pub(crate) fn value(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    pub(crate) fn done(&self) -> bool {
        self.at == self.data.len()
    }

    /// Bytes not read yet.
    pub(crate) fn left(&self) -> usize {
        self.data.len() - self.at
    }

    /// A string with its length as a u16 (a name: invalid UTF-8 is
    /// replaced, as table names always were).
    pub(crate) fn str16(&mut self) -> Result<String> {
        let n = self.u16()? as usize;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    /// An index kind (`KIND` in the module docs), checked as a schema's is.
    fn kind(&mut self) -> Result<IndexKind> {
        let kind = match self.u8()? {
            0 => IndexKind::Hash { capacity: usize::try_from(self.u64()?).unwrap_or(usize::MAX) },
            1 => IndexKind::Ordered,
            2 => IndexKind::OrderedGrouped { prefix: self.u16()? as usize },
            k => return Err(Error::Corrupt(format!("an index kind numbered {k}"))),
        };
        kind.check().map_err(|e| Error::Corrupt(format!("an index of kind {kind}: {e}")))?;
        Ok(kind)
    }
}

/// Appends a key (its length, see `key_len` in the module docs, and its bytes).
#[inline]
pub(crate) fn put_key(out: &mut Vec<u8>, key: &[u8]) {
    debug_assert!(key.len() <= KEY_MAX);
    if key.len() < KEY_LEN_WIDE as usize {
        out.push(key.len() as u8);
    } else {
        out.push(KEY_LEN_WIDE);
        out.extend_from_slice(&(key.len() as u16).to_le_bytes());
    }
    out.extend_from_slice(key);
}

/// Appends a value (u32 length, bytes).
pub(crate) fn put_value(out: &mut Vec<u8>, value: &[u8]) {
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
}

/// Decodes a transaction record's body (already checked by its CRC) without
/// allocating, for replay worker `part` of `parts`: each write to a row
/// whose key hash falls in that part goes to `each` (table number, key
/// hash, key, value; `None` for a delete), in order; the other writes are
/// checked but not built. Returns the record's epoch and commit timestamp.
pub(crate) fn decode_txn<'a>(
    body: &'a [u8],
    part: usize,
    parts: usize,
    mut each: impl FnMut(u32, u64, Key, Option<&'a [u8]>) -> Result<()>,
) -> Result<(u64, u64)> {
    let mut r = Reader::new(body);
    if r.u8()? != KIND_TXN {
        return Err(Error::Corrupt("not a transaction record".into()));
    }
    let (epoch, commit_ts, n) = (r.u64()?, r.u64()?, r.u32()?);
    for _ in 0..n {
        let table = r.u32()?;
        let op = r.u8()?;
        let klen = r.key_len()?;
        let kb = r.take(klen)?;
        let value = match op {
            OP_PUT => Some(r.value()?),
            OP_DELETE => None,
            other => return Err(Error::Corrupt(format!("unknown write op {other}"))),
        };
        // The hash `Key::hash64` gives, without building the key.
        let hash = crate::key::hash_bytes(kb);
        if (hash >> 32) as usize % parts == part {
            each(table, hash, Key::from_bytes(kb)?, value)?;
        }
    }
    if !r.done() {
        return Err(Error::Corrupt("trailing bytes in a log record".into()));
    }
    Ok((epoch, commit_ts))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys of every length round-trip; those of up to 32 bytes are written
    /// exactly as format 3 wrote them (one length byte), so its files read.
    #[test]
    fn key_lengths_round_trip_and_short_ones_keep_the_old_bytes() {
        for n in [0, 1, 8, 32, 33, 100, 254, 255, 256, 1000, KEY_MAX] {
            let key = vec![0xA5u8; n];
            let mut out = Vec::new();
            put_key(&mut out, &key);
            if n <= 32 {
                let mut old = vec![n as u8];
                old.extend_from_slice(&key);
                assert_eq!(out, old, "{n} bytes");
            }
            out.extend_from_slice(b"next");
            let mut r = Reader::new(&out);
            assert_eq!(r.key().unwrap().as_bytes(), &key[..], "{n} bytes");
            assert_eq!(r.bytes(4).unwrap(), b"next");
            assert!(r.done());
        }
        // A length past the maximum is damage, not a key.
        let mut out = vec![KEY_LEN_WIDE];
        out.extend_from_slice(&(KEY_MAX as u16 + 1).to_le_bytes());
        out.extend_from_slice(&[0; KEY_MAX + 1]);
        assert!(matches!(Reader::new(&out).key(), Err(Error::Corrupt(m)) if m.contains("1025 bytes")));
    }

    fn described() -> Vec<TableEntry> {
        let desc = TableDesc {
            primary: IndexKind::Hash { capacity: 64 },
            secondary: vec![("by_x".into(), IndexKind::OrderedGrouped { prefix: 4 })],
            types: Some(Types { key: "u64".into(), value: "alloc::string::String".into() }),
        };
        vec![
            TableEntry { id: 0, name: "t".into(), desc: Some(desc) },
            TableEntry { id: 1, name: "u".into(), desc: None },
        ]
    }

    /// A header of format 3 or 4 (no descriptors), as those wrote it.
    fn old_header(format: u8, h: &LogHeader) -> Vec<u8> {
        h.encode_as(format, |b, tables| {
            b.extend_from_slice(&(tables.len() as u32).to_le_bytes());
            for t in tables {
                b.extend_from_slice(&t.id.to_le_bytes());
                put_str16(b, &t.name);
            }
        })
    }

    /// Log files of format 5 round-trip with their descriptors; those of
    /// formats 3 and 4 are read, without; 1 and 2, and later formats, are
    /// refused by name.
    #[test]
    fn log_formats_read_and_refused() {
        let h = LogHeader { generation: 1, stream: 0, streams: 1, seq: 0, start_mark: 0, tables: described() };
        let file = h.encode();
        assert_eq!(LogHeader::decode(&file).unwrap().0, h);
        let plain: Vec<_> = h.tables.iter().map(|t| TableEntry { desc: None, ..t.clone() }).collect();
        for format in [3, 4] {
            let old = old_header(format, &h);
            assert_eq!(LogHeader::decode(&old).unwrap().0, LogHeader { tables: plain.clone(), ..h.clone() });
        }
        for (format, word) in [(1, "older format"), (2, "older format"), (6, "newer format")] {
            let mut f = file.clone();
            f[7] = format;
            let e = LogHeader::decode(&f).unwrap_err();
            assert!(e.contains(word), "format {format}: {e}");
        }
    }

    /// Descriptors round-trip; a later version, a bad kind or trailing
    /// bytes are refused.
    #[test]
    fn descriptors_round_trip_and_damage_is_refused() {
        let d = described()[0].desc.clone().unwrap();
        let mut b = Vec::new();
        put_desc(&mut b, &d);
        assert_eq!(decode_desc(&b).unwrap(), d);
        let untyped = TableDesc { types: None, secondary: vec![], primary: IndexKind::Ordered };
        let mut u = Vec::new();
        put_desc(&mut u, &untyped);
        assert_eq!(u, [DESC_VERSION, 1, 0, 0], "version, ordered, no secondaries, untyped");
        assert_eq!(decode_desc(&u).unwrap(), untyped);
        let mut later = u.clone();
        later[0] = DESC_VERSION + 1;
        assert!(decode_desc(&later).unwrap_err().to_string().contains("newer version"));
        let mut kind = u.clone();
        kind[1] = 7;
        assert!(decode_desc(&kind).unwrap_err().to_string().contains("kind numbered 7"));
        let zero = [DESC_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(decode_desc(&zero).unwrap_err().to_string().contains("capacity"));
        u.push(0);
        assert!(decode_desc(&u).unwrap_err().to_string().contains("trailing"));
        for cut in 0..b.len() {
            assert!(decode_desc(&b[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn frames_round_trip_and_damage_is_seen() {
        let mut out = Vec::new();
        frame(&mut out, |b| b.extend_from_slice(b"hello"));
        frame(&mut out, |b| b.extend_from_slice(b"world!"));
        let Framed::Body(a, next) = next_frame(&out, 0) else { panic!() };
        assert_eq!(a, b"hello");
        let Framed::Body(b, end) = next_frame(&out, next) else { panic!() };
        assert_eq!(b, b"world!");
        assert!(matches!(next_frame(&out, end), Framed::End));
        // Every truncation of the second frame is a torn record.
        for cut in next + 1..out.len() {
            assert!(matches!(next_frame(&out[..cut], next), Framed::Damaged(_)), "cut at {cut}");
        }
        // Every flipped bit is caught.
        for i in 0..out.len() * 8 {
            let mut d = out.clone();
            d[i / 8] ^= 1 << (i % 8);
            let ok = matches!(next_frame(&d, 0), Framed::Body(x, _) if x == b"hello")
                && matches!(next_frame(&d, next), Framed::Body(x, _) if x == b"world!");
            assert!(!ok, "bit {i} flipped unnoticed");
        }
    }
}
