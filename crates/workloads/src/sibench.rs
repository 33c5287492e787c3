//! SIBENCH as the SSN paper extends it (Wang et al., "Efficiently making
//! (almost) any concurrency control mechanism serializable", section 7.2;
//! ssn-serial-safety-net.txt).
//!
//! "The database consists of a single table and a fixed number of records.
//! Each record contains a single attribute that stores the TID of the
//! transaction that last wrote to it. Each transaction makes a random number
//! of accesses, selected uniformly at random from a tunable range of valid
//! footprint sizes. The last m of those accesses are writes. Repeated reads,
//! repeated overwrites, and blind writes are all allowed. Mixed workloads can
//! be emulated by instantiating multiple client groups with differing
//! parameters (e.g. to mingle large read-only queries with short
//! write-intensive transactions)."
//!
//! Here:
//!
//! * One table of `--rows` records (default 1,000: section 7.3 finds a
//!   database under 500 records severely contended and one over 5,000 nearly
//!   contention-free), 8-byte integer keys `0..rows`, hash primary index.
//! * Two client groups. The **update** group (transaction type `update`)
//!   makes `min..=max` accesses (default 8 to 12, section 7.3), each to a
//!   uniformly random record (so a record may repeat), the last `m` of them
//!   writes; `m` is a count or a percentage of the accesses, rounded to the
//!   nearest (default 25%, section 7.3). The **query** group (type `query`),
//!   the first `--sibench-query-threads` threads (default 0), runs read-only
//!   transactions of `100..=200` accesses (section 7.5's "read-only clients"),
//!   with the read-only option set.
//! * A read passes the record's TID to the transaction (folded into a
//!   checksum). A write replaces the record with the writer's TID, through a
//!   read-modify-write of the engine (`update_with`), which, like the
//!   paper's benchmark, sees the TID it overwrites; it is "blind" in that the
//!   transaction did not read the record first (unless an earlier access of
//!   the same transaction did).
//!
//! Deviations: the paper logs w:w and w:r dependencies and tests the
//! dependency graph for cycles offline; here that is the job of the engine's
//! history recording (`multiverse bench --verify`, `multiverse check`),
//! which checks a whole run against its isolation level. The paper's
//! simulator is an open queuing system; this is a closed loop like every
//! other workload of the harness. Each record also counts the writes it
//! received (a second 8-byte field), so that the consistency check can prove
//! that every committed write landed exactly once.
//!
//! Value layout (16 bytes, little-endian): the TID of the last writer
//! ([`tid`]: thread number plus one in the high 24 bits, the writer's
//! transaction sequence number in the low 40; 0 for the load), then the
//! number of committed writes to the record.

use crate::{split_range, Param, Store, StoreTxn, Txn, TxnError, Worker, Workload};
use multiverse::{AccessSet, Error, Key, Result, TableId, TableSpec, TxnOptions};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Name of the table.
pub const TABLE: &str = "sibench";
/// Transaction types: the update group's and the query group's.
pub const TYPES: &[&str] = &["update", "query"];
/// Index of `update` in [`TYPES`].
pub const UPDATE: usize = 0;
/// Index of `query` in [`TYPES`].
pub const QUERY: usize = 1;
/// Bytes per record: TID and write count.
pub const VALUE_BYTES: usize = 16;
/// Records inserted per load transaction.
pub const LOAD_BATCH: u64 = 1024;
/// Most accesses per transaction.
pub const MAX_ACCESSES: u32 = 1 << 20;
/// Bits of a TID that hold the sequence number.
const SEQ_BITS: u32 = 40;

/// The TID written by thread `thread` (0-based) in its transaction `seq`.
#[inline]
pub fn tid(thread: usize, seq: u64) -> u64 {
    ((thread as u64 + 1) << SEQ_BITS) | (seq & ((1 << SEQ_BITS) - 1))
}

/// Splits a TID into `(thread + 1, seq)`; `(0, 0)` for the load.
pub fn split_tid(t: u64) -> (u64, u64) {
    (t >> SEQ_BITS, t & ((1 << SEQ_BITS) - 1))
}

/// A record value.
#[inline]
pub fn value(tid: u64, writes: u64) -> [u8; VALUE_BYTES] {
    let mut v = [0u8; VALUE_BYTES];
    v[..8].copy_from_slice(&tid.to_le_bytes());
    v[8..].copy_from_slice(&writes.to_le_bytes());
    v
}

/// Reads a value back as `(tid, writes)`; `None` if it is not 16 bytes.
pub fn decode(v: &[u8]) -> Option<(u64, u64)> {
    if v.len() != VALUE_BYTES {
        return None;
    }
    Some((u64::from_le_bytes(v[..8].try_into().unwrap()), u64::from_le_bytes(v[8..].try_into().unwrap())))
}

/// How many of a transaction's accesses are writes (the last ones).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Writes {
    /// Exactly this many (all accesses, if fewer).
    Count(u32),
    /// This percentage of the accesses, rounded to the nearest.
    Pct(f64),
}

impl Writes {
    /// Writes among `n` accesses.
    #[inline]
    pub fn of(self, n: u32) -> u32 {
        match self {
            Writes::Count(m) => m.min(n),
            Writes::Pct(p) => ((n as f64 * p / 100.0).round() as u32).min(n),
        }
    }

    /// Parses `M` (a count) or `P%` (a percentage).
    pub fn parse(s: &str) -> std::result::Result<Writes, String> {
        let s = s.trim();
        if let Some(p) = s.strip_suffix('%') {
            let p: f64 = p.trim().parse().map_err(|_| format!("'{s}' is not a percentage (try 25%)"))?;
            if !p.is_finite() || !(0.0..=100.0).contains(&p) {
                return Err(format!("'{s}' is not a percentage between 0% and 100%"));
            }
            Ok(Writes::Pct(p))
        } else {
            s.parse()
                .map(Writes::Count)
                .map_err(|_| format!("'{s}' is not a count of writes or a percentage (try 2 or 25%)"))
        }
    }
}

impl std::fmt::Display for Writes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Writes::Count(m) => write!(f, "{m}"),
            Writes::Pct(p) => write!(f, "{p}%"),
        }
    }
}

/// Parses an access range `MIN-MAX` (or `N` for exactly N).
pub fn parse_range(s: &str) -> std::result::Result<(u32, u32), String> {
    let s = s.trim();
    let num = |t: &str| t.trim().parse::<u32>().map_err(|_| format!("'{s}' is not an access range (try 8-12 or 10)"));
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (num(a)?, num(b)?),
        None => {
            let n = num(s)?;
            (n, n)
        }
    };
    if lo > hi {
        return Err(format!("access range '{s}' is empty (the minimum is above the maximum)"));
    }
    Ok((lo, hi))
}

/// Parameters of the workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SibenchConfig {
    /// Records in the table.
    pub rows: u64,
    /// Accesses of an update transaction, `min..=max`.
    pub accesses: (u32, u32),
    /// How many of an update transaction's accesses are writes.
    pub writes: Writes,
    /// Threads in the query group (the first ones).
    pub query_threads: usize,
    /// Accesses of a query, `min..=max`.
    pub query_accesses: (u32, u32),
}

impl Default for SibenchConfig {
    /// Sections 7.3 and 7.5: 1,000 records, 8 to 12 accesses with 25% writes,
    /// queries of 100 to 200 reads (no query threads unless asked for).
    fn default() -> SibenchConfig {
        SibenchConfig {
            rows: 1000,
            accesses: (8, 12),
            writes: Writes::Pct(25.0),
            query_threads: 0,
            query_accesses: (100, 200),
        }
    }
}

impl SibenchConfig {
    /// Checks the parameters; the error is a one-line message.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.rows == 0 {
            return Err("--rows must be at least 1".into());
        }
        if usize::try_from(self.rows).is_err() {
            return Err(format!("--rows {} is too large", self.rows));
        }
        for (flag, (lo, hi)) in
            [("--sibench-accesses", self.accesses), ("--sibench-query-accesses", self.query_accesses)]
        {
            if lo > hi {
                return Err(format!("{flag} {lo}-{hi} is empty (the minimum is above the maximum)"));
            }
            if hi > MAX_ACCESSES {
                return Err(format!("{flag}: at most {MAX_ACCESSES} accesses per transaction"));
            }
        }
        if let Writes::Pct(p) = self.writes {
            if !p.is_finite() || !(0.0..=100.0).contains(&p) {
                return Err(format!("--sibench-writes {p}% is not a percentage between 0% and 100%"));
            }
        }
        Ok(())
    }
}

/// The workload, bound to its table in one database.
#[derive(Debug)]
pub struct Sibench {
    cfg: SibenchConfig,
    table: TableId,
    /// Writes committed by finished workers.
    writes: AtomicU64,
    /// Per thread, the last transaction sequence number drawn (finished workers).
    last_seq: Mutex<Vec<u64>>,
}

impl Sibench {
    /// Validates `cfg` and creates the table in `db`.
    pub fn setup<S: Store>(db: &S, cfg: SibenchConfig) -> std::result::Result<Sibench, String> {
        cfg.validate()?;
        let table = db.create_table(TableSpec::hash(TABLE, cfg.rows as usize)).map_err(|e| e.to_string())?;
        Ok(Sibench { cfg, table, writes: AtomicU64::new(0), last_seq: Mutex::new(Vec::new()) })
    }

    /// The parameters.
    pub fn config(&self) -> SibenchConfig {
        self.cfg
    }

    /// The table.
    pub fn table(&self) -> TableId {
        self.table
    }

    /// Writes committed by the workers that finished.
    pub fn committed_writes(&self) -> u64 {
        // Relaxed: read after the workers were joined.
        self.writes.load(Ordering::Relaxed)
    }
}

impl Workload for Sibench {
    type Worker<'w> = SibenchWorker<'w>;

    fn name(&self) -> &'static str {
        crate::Kind::Sibench.name()
    }

    fn params(&self) -> Vec<(&'static str, Param)> {
        let c = &self.cfg;
        vec![
            ("rows", Param::Int(c.rows)),
            ("accesses", Param::Str(format!("{}-{}", c.accesses.0, c.accesses.1))),
            ("writes", Param::Str(c.writes.to_string())),
            ("query_threads", Param::Int(c.query_threads as u64)),
            ("query_accesses", Param::Str(format!("{}-{}", c.query_accesses.0, c.query_accesses.1))),
        ]
    }

    /// `update` and `query`; `update` alone without a query group.
    fn txn_types(&self) -> &'static [&'static str] {
        if self.cfg.query_threads == 0 {
            &TYPES[..1]
        } else {
            TYPES
        }
    }

    fn load_size(&self) -> u64 {
        self.cfg.rows
    }

    fn load<S: Store>(&self, db: &S, part: usize, parts: usize, progress: &(impl Fn(u64) + Sync)) -> Result<()> {
        let range = split_range(self.cfg.rows, part, parts);
        let mut lo = range.start;
        while lo < range.end {
            let hi = (lo + LOAD_BATCH).min(range.end);
            db.load_txn(|t| {
                for k in lo..hi {
                    t.insert(self.table, Key::from_u64(k), &value(0, 0))?;
                }
                Ok(())
            })?;
            progress(hi - lo);
            lo = hi;
        }
        Ok(())
    }

    fn worker(&self, thread: usize, seed: u64) -> SibenchWorker<'_> {
        let query = thread < self.cfg.query_threads;
        let (_, hi) = if query { self.cfg.query_accesses } else { self.cfg.accesses };
        SibenchWorker {
            w: self,
            rng: SmallRng::seed_from_u64(seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            ty: if query { QUERY } else { UPDATE },
            thread,
            seq: 0,
            keys: Vec::with_capacity(hi as usize),
            writes: 0,
            committed_writes: 0,
            checksum: 0,
        }
    }

    fn check_consistency<S: Store>(&self, db: &S) -> std::result::Result<String, String> {
        let last = self.last_seq.lock().map_err(|_| "a worker panicked".to_string())?.clone();
        let sum = self.check_records(db, Some(&last))?;
        let want = self.committed_writes();
        if sum != want {
            return Err(format!(
                "the records' write counts add up to {sum}, but {want} writes committed (lost or repeated writes)"
            ));
        }
        Ok(format!(
            "{} records name a real last writer; their write counts add up to the {want} committed writes",
            self.cfg.rows
        ))
    }

    fn check_state<S: Store>(&self, db: &S) -> std::result::Result<crate::StateCheck, String> {
        let sum = self.check_records(db, None)?;
        Ok(crate::StateCheck {
            checked: format!(
                "{} records present, each written by the load or by a transaction of a worker; {sum} writes in all",
                self.cfg.rows
            ),
            needs_run: "the last writers and write counts against the workers' committed transactions".into(),
        })
    }
}

impl Sibench {
    /// Every record is present and names its last writer: the load (no
    /// writes yet) or a worker's transaction, one that worker drew when
    /// `last` (each worker's last sequence number) is given. Returns the
    /// sum of the records' write counts.
    fn check_records<S: Store>(&self, db: &S, last: Option<&[u64]>) -> std::result::Result<u64, String> {
        let mut sum = 0u64;
        let mut t = db.begin_check().map_err(|e| e.to_string())?;
        for k in 0..self.cfg.rows {
            let r = t.get_with(self.table, &Key::from_u64(k), decode).map_err(|e| e.to_string())?;
            let (tid, n) = match r {
                None => return Err(format!("record {k} is missing")),
                Some(None) => return Err(format!("record {k} does not hold 16 bytes")),
                Some(Some(v)) => v,
            };
            let (th, seq) = split_tid(tid);
            let drawn = |th: u64| last.is_none_or(|l| l.get(th as usize - 1).is_some_and(|&l| seq <= l));
            let known = (th == 0 && seq == 0 && n == 0) || (th > 0 && n > 0 && seq >= 1 && drawn(th));
            if !known {
                return Err(format!("record {k} holds TID {th}/{seq} after {n} writes: no such writer transaction"));
            }
            sum += n;
        }
        t.commit().map_err(|e| e.to_string())?;
        Ok(sum)
    }
}

/// The error for a record that should exist but was not found (an engine bug).
#[cold]
fn missing(k: u64, op: &str) -> TxnError {
    TxnError::Invariant(format!(
        "record {k} of table '{TABLE}' is missing: {op} found no visible version, though records are never deleted (an engine bug)"
    ))
}

/// One thread's generator for SIBENCH.
pub struct SibenchWorker<'w> {
    w: &'w Sibench,
    rng: SmallRng,
    /// The group's type ([`UPDATE`] or [`QUERY`]).
    ty: usize,
    /// Thread number (0-based).
    thread: usize,
    /// Transactions drawn so far (the current one's number).
    seq: u64,
    /// The current transaction's accesses in order: reads, then `writes` writes.
    keys: Vec<u64>,
    /// Writes of the current transaction (the last ones in `keys`).
    writes: u32,
    /// Writes of this worker's committed transactions.
    committed_writes: u64,
    /// Folds every TID read, so reads cannot be optimized away.
    checksum: u64,
}

impl SibenchWorker<'_> {
    /// The current transaction's accesses (reads first, then writes).
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// How many of [`Self::keys`] (the last ones) are writes.
    pub fn writes(&self) -> usize {
        self.writes as usize
    }

    /// The current transaction's sequence number (1 for the first).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The TID the current transaction writes.
    pub fn tid(&self) -> u64 {
        tid(self.thread, self.seq)
    }

    /// Writes of this worker's committed transactions.
    pub fn committed_writes(&self) -> u64 {
        self.committed_writes
    }

    /// A fold of every TID read (meaningless; keeps reads observable).
    pub fn checksum(&self) -> u64 {
        self.checksum
    }

    /// A uniform draw from `lo..=hi`.
    #[inline]
    fn draw_in(&mut self, lo: u64, hi: u64) -> u64 {
        lo + ((self.rng.next_u64() as u128 * (hi - lo + 1) as u128) >> 64) as u64
    }
}

impl Worker for SibenchWorker<'_> {
    #[inline]
    fn next_txn(&mut self) {
        self.seq += 1;
        let c = &self.w.cfg;
        let ((lo, hi), writes) =
            if self.ty == QUERY { (c.query_accesses, Writes::Count(0)) } else { (c.accesses, c.writes) };
        let n = self.draw_in(lo as u64, hi as u64) as u32;
        self.writes = writes.of(n);
        self.keys.clear();
        for _ in 0..n {
            let k = self.draw_in(0, c.rows - 1);
            self.keys.push(k);
        }
    }

    #[inline]
    fn execute<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let table = self.w.table;
        let reads = self.keys.len() - self.writes as usize;
        let me = self.tid();
        let mut sum = self.checksum;
        for &k in &self.keys[..reads] {
            let v = t.get_with(table, &Key::from_u64(k), |v| decode(v).map(|(tid, _)| tid))?;
            let tid = v.ok_or_else(|| missing(k, "a read"))?;
            let tid = tid.ok_or_else(|| TxnError::Invariant(format!("record {k} does not hold 16 bytes")))?;
            sum = sum.wrapping_add(tid);
        }
        for &k in &self.keys[reads..] {
            let mut ok = true;
            let r = t.update_with(table, &Key::from_u64(k), |old, new| match decode(old) {
                Some((_, n)) => new.extend_from_slice(&value(me, n + 1)),
                None => {
                    ok = false;
                    new.extend_from_slice(old);
                }
            });
            match r {
                Err(Error::KeyNotFound) => return Err(missing(k, "a write")),
                r => r?,
            }
            if !ok {
                return Err(TxnError::Invariant(format!("record {k} does not hold 16 bytes")));
            }
        }
        self.checksum = sum;
        Ok(())
    }

    #[inline]
    fn txn_type(&self) -> usize {
        self.ty
    }

    #[inline]
    fn options(&self, run: TxnOptions<'static>) -> TxnOptions<'static> {
        if self.ty == QUERY {
            TxnOptions { read_only: true, ..run }
        } else {
            run
        }
    }

    #[inline]
    fn committed(&mut self) {
        self.committed_writes += self.writes as u64;
    }

    fn finish(&mut self) {
        // Relaxed: the harness joins the workers before the check reads it.
        self.w.writes.fetch_add(self.committed_writes, Ordering::Relaxed);
        self.committed_writes = 0;
        if let Ok(mut last) = self.w.last_seq.lock() {
            if last.len() <= self.thread {
                last.resize(self.thread + 1, 0);
            }
            last[self.thread] = last[self.thread].max(self.seq);
        }
    }

    /// Reads and writes, each list without repeats (a record may be in both).
    fn declare(&self, access: &mut AccessSet) -> bool {
        access.reads.clear();
        access.writes.clear();
        let t = self.w.table;
        let reads = self.keys.len() - self.writes as usize;
        access.reads.extend(self.keys[..reads].iter().map(|&k| (t, Key::from_u64(k))));
        access.writes.extend(self.keys[reads..].iter().map(|&k| (t, Key::from_u64(k))));
        for l in [&mut access.reads, &mut access.writes] {
            l.sort_unstable_by_key(|a| a.1.clone());
            l.dedup_by(|a, b| a.1 == b.1);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tids_and_values_round_trip() {
        assert_eq!(split_tid(tid(0, 5)), (1, 5));
        assert_eq!(split_tid(tid(7, (1 << 40) - 1)), (8, (1 << 40) - 1));
        assert_eq!(decode(&value(tid(2, 3), 9)), Some((tid(2, 3), 9)));
        assert_eq!(decode(b"short"), None);
    }

    #[test]
    fn writes_and_ranges_parse() {
        assert_eq!(Writes::parse("2"), Ok(Writes::Count(2)));
        assert_eq!(Writes::parse("25%"), Ok(Writes::Pct(25.0)));
        assert!(Writes::parse("120%").is_err() && Writes::parse("x").is_err() && Writes::parse("-1").is_err());
        assert_eq!(Writes::Pct(25.0).of(8), 2);
        assert_eq!(Writes::Pct(25.0).of(10), 3, "2.5 rounds away from zero");
        assert_eq!(Writes::Pct(25.0).of(12), 3);
        assert_eq!(Writes::Count(5).of(3), 3);
        assert_eq!(parse_range("8-12"), Ok((8, 12)));
        assert_eq!(parse_range(" 10 "), Ok((10, 10)));
        assert!(parse_range("12-8").unwrap_err().contains("empty"));
        assert!(parse_range("a-b").is_err() && parse_range("-3").is_err());
    }

    #[test]
    fn config_is_validated() {
        assert!(SibenchConfig::default().validate().is_ok());
        assert!(SibenchConfig { rows: 0, ..SibenchConfig::default() }.validate().is_err());
        let e = SibenchConfig { accesses: (3, 2), ..SibenchConfig::default() }.validate().unwrap_err();
        assert!(e.contains("--sibench-accesses"), "{e}");
        let e = SibenchConfig { query_accesses: (1, MAX_ACCESSES + 1), ..SibenchConfig::default() }.validate();
        assert!(e.unwrap_err().contains("--sibench-query-accesses"));
    }
}
