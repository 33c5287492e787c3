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
//! new versions, no undo) or an epoch mark (see `durability::log`):
//!
//! ```text
//!  TXN:  kind=1 u8 | epoch u64 | commit_ts u64 | writes u32 | write*
//!        write: table u32 | op u8 (0 put, 1 delete) | key_len u8 | key
//!               | (put only) value_len u32 | value
//!  MARK: kind=2 u8 | epoch u64       (every record of epochs <= epoch
//!                                     is durable in every stream)
//! ```
//!
//! A checkpoint row body is `table u32 | key_len u8 | key | value_len u32 |
//! value`. Integers are little-endian.

use crate::key::{Key, KEY_MAX};
use crate::{Error, Result};

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
        let n = self.u8()? as usize;
        if n > KEY_MAX {
            return Err(Error::Corrupt(format!("a key of {n} bytes (at most {KEY_MAX})")));
        }
        Key::from_bytes(self.take(n)?)
    }

    pub(crate) fn value(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    pub(crate) fn done(&self) -> bool {
        self.at == self.data.len()
    }
}

/// Appends a key (length byte, bytes).
pub(crate) fn put_key(out: &mut Vec<u8>, key: &[u8]) {
    out.push(key.len() as u8);
    out.extend_from_slice(key);
}

/// Appends a value (u32 length, bytes).
pub(crate) fn put_value(out: &mut Vec<u8>, value: &[u8]) {
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(value);
}

/// One write of a logged transaction.
pub(crate) struct LoggedWrite<'a> {
    pub(crate) table: u32,
    pub(crate) key: Key,
    /// The new value; `None` for a delete.
    pub(crate) value: Option<&'a [u8]>,
}

/// A decoded log body.
pub(crate) enum Body<'a> {
    Txn { epoch: u64, commit_ts: u64, writes: Vec<LoggedWrite<'a>> },
    Mark { epoch: u64 },
}

/// Decodes a log body (already checked by its CRC: an error here means
/// a writer bug or deliberate damage that kept the CRC right).
pub(crate) fn decode(body: &[u8]) -> Result<Body<'_>> {
    let mut r = Reader::new(body);
    let kind = r.u8()?;
    let epoch = r.u64()?;
    let b = match kind {
        KIND_TXN => {
            let commit_ts = r.u64()?;
            let n = r.u32()? as usize;
            let mut writes = Vec::with_capacity(n.min(body.len()));
            for _ in 0..n {
                let table = r.u32()?;
                let op = r.u8()?;
                let key = r.key()?;
                let value = match op {
                    OP_PUT => Some(r.value()?),
                    OP_DELETE => None,
                    other => return Err(Error::Corrupt(format!("unknown write op {other}"))),
                };
                writes.push(LoggedWrite { table, key, value });
            }
            Body::Txn { epoch, commit_ts, writes }
        }
        KIND_MARK => Body::Mark { epoch },
        other => return Err(Error::Corrupt(format!("unknown log record kind {other}"))),
    };
    if !r.done() {
        return Err(Error::Corrupt("trailing bytes in a log record".into()));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

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
