//! The homogeneous workload of the Hekaton paper (Larson et al., VLDB 2011,
//! section 5.1).
//!
//! One table of `N` rows with a unique 8-byte integer key (`0..N`) and a
//! 24-byte payload, in a hash primary index sized to `N`. A single
//! transaction type performs `R` reads and then `W` writes (updates that
//! install a fresh payload), on rows drawn uniformly at random. Section 5.1.1
//! uses `R = 10`, `W = 2`, `N = 10,000,000` (low contention); section 5.1.2
//! uses `N = 1,000` (a hotspot).
//!
//! The `R + W` rows of one transaction are distinct, so a transaction never
//! reads a row it wrote or writes one row twice (the paper does not say; with
//! `N = 10^7` a repeat is rare anyway, with `N = 1,000` it would not be).
//!
//! Payload layout (little-endian `u64`s): the row's key, the writer's thread
//! number plus one (0 for the initial load), and the writer's transaction
//! sequence number (0 for the initial load). [`decode_payload`] reads it back,
//! so tests can check every update landed on the right row.

use crate::{split_range, Param, Txn, TxnError, Worker, Workload};
use multiverse::{AccessSet, Database, Error, Isolation, Key, Result, TableId, TableSpec};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// Bytes of the payload (the paper's 24-byte row).
pub const PAYLOAD: usize = 24;
/// Rows inserted per load transaction.
pub const LOAD_BATCH: u64 = 1024;
/// Name of the table.
pub const TABLE: &str = "hekaton";

/// Parameters of the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HekatonConfig {
    /// Rows in the table (`N`).
    pub rows: u64,
    /// Reads per transaction (`R`).
    pub reads: u32,
    /// Writes (updates) per transaction (`W`).
    pub writes: u32,
    /// Issue a prefetch hint for all the transaction's rows before touching
    /// them (lets their cache misses overlap; changes no result).
    pub prefetch: bool,
}

impl Default for HekatonConfig {
    /// Section 5.1.1: `R = 10`, `W = 2`, `N = 10,000,000`.
    fn default() -> HekatonConfig {
        HekatonConfig { rows: 10_000_000, reads: 10, writes: 2, prefetch: true }
    }
}

impl HekatonConfig {
    /// Checks the parameters; the error is a one-line message.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.rows == 0 {
            return Err("--rows must be at least 1".into());
        }
        let per_txn = self.reads as u64 + self.writes as u64;
        if per_txn > self.rows {
            return Err(format!(
                "each transaction touches {per_txn} distinct rows (--reads {} + --writes {}) but the table has only {} (--rows)",
                self.reads, self.writes, self.rows
            ));
        }
        if per_txn > 1 << 20 {
            return Err(format!("--reads + --writes is {per_txn}; at most 1048576 rows per transaction"));
        }
        Ok(())
    }
}

/// The workload, bound to its table in one database.
#[derive(Debug)]
pub struct Hekaton {
    cfg: HekatonConfig,
    table: TableId,
}

/// Builds the payload for `key` written by `thread` (0 = the load) in its
/// transaction number `seq`.
#[inline]
pub fn payload(key: u64, thread: u64, seq: u64) -> [u8; PAYLOAD] {
    let mut p = [0u8; PAYLOAD];
    p[0..8].copy_from_slice(&key.to_le_bytes());
    p[8..16].copy_from_slice(&thread.to_le_bytes());
    p[16..24].copy_from_slice(&seq.to_le_bytes());
    p
}

/// Reads a payload back as `(key, thread, seq)`; `None` if it is not 24 bytes.
pub fn decode_payload(v: &[u8]) -> Option<(u64, u64, u64)> {
    if v.len() != PAYLOAD {
        return None;
    }
    let w = |i: usize| u64::from_le_bytes(v[i * 8..i * 8 + 8].try_into().unwrap());
    Some((w(0), w(1), w(2)))
}

impl Hekaton {
    /// Creates the table in `db` (hash primary index sized to `rows`).
    pub fn setup(db: &Database, cfg: HekatonConfig) -> std::result::Result<Hekaton, String> {
        cfg.validate()?;
        let cap = usize::try_from(cfg.rows).map_err(|_| format!("--rows {} is too large", cfg.rows))?;
        let table = db.create_table(TableSpec::hash(TABLE, cap)).map_err(|e| e.to_string())?;
        Ok(Hekaton { cfg, table })
    }

    /// The parameters.
    pub fn config(&self) -> HekatonConfig {
        self.cfg
    }

    /// The table.
    pub fn table(&self) -> TableId {
        self.table
    }
}

impl Workload for Hekaton {
    type Worker<'w> = HekatonWorker<'w>;

    fn name(&self) -> &'static str {
        "hekaton"
    }

    fn params(&self) -> Vec<(&'static str, Param)> {
        vec![
            ("rows", Param::Int(self.cfg.rows)),
            ("reads", Param::Int(self.cfg.reads as u64)),
            ("writes", Param::Int(self.cfg.writes as u64)),
            ("payload_bytes", Param::Int(PAYLOAD as u64)),
            ("key_bytes", Param::Int(8)),
            ("prefetch", Param::Bool(self.cfg.prefetch)),
        ]
    }

    fn load_size(&self) -> u64 {
        self.cfg.rows
    }

    fn load(&self, db: &Database, part: usize, parts: usize, progress: &(impl Fn(u64) + Sync)) -> Result<()> {
        let range = split_range(self.cfg.rows, part, parts);
        let mut lo = range.start;
        while lo < range.end {
            let hi = (lo + LOAD_BATCH).min(range.end);
            db.run(Isolation::ReadCommitted, |t| {
                for k in lo..hi {
                    t.insert(self.table, Key::from_u64(k), &payload(k, 0, 0))?;
                }
                Ok(())
            })?;
            progress(hi - lo);
            lo = hi;
        }
        Ok(())
    }

    fn worker(&self, thread: usize, seed: u64) -> HekatonWorker<'_> {
        let n = self.cfg.reads as usize + self.cfg.writes as usize;
        HekatonWorker {
            w: self,
            rng: SmallRng::seed_from_u64(seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            keys: vec![0; n].into_boxed_slice(),
            ikeys: vec![Key::EMPTY; n].into_boxed_slice(),
            thread: thread as u64 + 1,
            seq: 0,
            checksum: 0,
        }
    }
}

/// The error for a row that should exist but was not found (an engine bug).
#[cold]
fn missing(k: u64, op: &str) -> TxnError {
    TxnError::Invariant(format!(
        "row {k} of table '{TABLE}' is missing: {op} found no visible version, though rows 0..N are never deleted (an engine bug)"
    ))
}

/// One thread's generator for the Hekaton workload.
pub struct HekatonWorker<'w> {
    w: &'w Hekaton,
    rng: SmallRng,
    /// The current transaction's rows: `reads` rows to read, then `writes` rows to update.
    keys: Box<[u64]>,
    /// The same rows as index keys.
    ikeys: Box<[Key]>,
    /// Thread number plus one, written into payloads.
    thread: u64,
    /// Transactions drawn so far (the current one's number).
    seq: u64,
    /// Folds every value read, so reads cannot be optimized away.
    checksum: u64,
}

impl HekatonWorker<'_> {
    /// The rows of the current transaction: reads first, then writes.
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// The current transaction's sequence number (1 for the first).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// A fold of every value read (meaningless; keeps reads observable).
    pub fn checksum(&self) -> u64 {
        self.checksum
    }

    /// A uniform draw from `0..n` (Lemire's multiply-shift; the bias is below
    /// `n / 2^64`, far below anything measurable).
    #[inline]
    fn draw(&mut self, n: u64) -> u64 {
        ((self.rng.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

impl Worker for HekatonWorker<'_> {
    #[inline]
    fn next_txn(&mut self) {
        self.seq += 1;
        let n = self.w.cfg.rows;
        for i in 0..self.keys.len() {
            let k = loop {
                let k = self.draw(n);
                if !self.keys[..i].contains(&k) {
                    break k;
                }
            };
            self.keys[i] = k;
            self.ikeys[i] = Key::from_u64(k);
        }
    }

    #[inline]
    fn execute<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let table = self.w.table;
        let reads = self.w.cfg.reads as usize;
        if self.w.cfg.prefetch && !self.ikeys.is_empty() {
            // Start every row's cache misses now, so they overlap.
            t.prefetch(table, &self.ikeys);
        }
        let mut sum = self.checksum;
        for (&k, ik) in self.keys[..reads].iter().zip(&self.ikeys[..reads]) {
            let v = t.get_with(table, ik, |v| {
                // The key field: always present in a 24-byte payload.
                v.get(..8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()))
            })?;
            // Every key in 0..N exists: a missing row is a bug, not an abort.
            sum = sum.wrapping_add(v.ok_or_else(|| missing(k, "a read"))?);
        }
        for (&k, ik) in self.keys[reads..].iter().zip(&self.ikeys[reads..]) {
            match t.update(table, ik, &payload(k, self.thread, self.seq)) {
                Err(Error::KeyNotFound) => return Err(missing(k, "an update")),
                r => r?,
            }
        }
        self.checksum = sum;
        Ok(())
    }

    fn declare(&self, access: &mut AccessSet) {
        access.reads.clear();
        access.writes.clear();
        let t = self.w.table;
        let (rd, wr) = self.ikeys.split_at(self.w.cfg.reads as usize);
        access.reads.extend(rd.iter().map(|&k| (t, k)));
        access.writes.extend(wr.iter().map(|&k| (t, k)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trips() {
        assert_eq!(decode_payload(&payload(7, 2, 99)), Some((7, 2, 99)));
        assert_eq!(decode_payload(b"short"), None);
    }

    #[test]
    fn config_is_validated() {
        assert!(HekatonConfig::default().validate().is_ok());
        let c = |rows, reads, writes| HekatonConfig { rows, reads, writes, prefetch: true };
        assert!(c(0, 0, 0).validate().is_err());
        let e = c(5, 4, 2).validate().unwrap_err();
        assert!(e.contains("only 5"), "{e}");
        assert!(c(6, 4, 2).validate().is_ok());
    }
}
