//! The workloads of section 5 of the Hekaton paper (Larson et al., VLDB 2011;
//! hekaton-mvcc-vldb2011.txt): the homogeneous workload of section 5.1 and
//! the heterogeneous ones of section 5.2.
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
//!
//! ## Section 5.2: read-only transactions ([`Heterogeneous`])
//!
//! * **Short readers** (section 5.2.1): besides the `update` transaction
//!   (`R` reads, `W` writes) a `read-only` one performs `R` reads and no
//!   write ("R=10 and W=0"), with the read-only option set, at the run's
//!   isolation level (the paper's is read committed). The mix
//!   `update:X,read-only:Y` sets their shares; the paper varies the
//!   read-only share from 0% to 100% (Figures 6 and 7).
//! * **Long readers** (section 5.2.2): the first `K` threads run only
//!   `long-read` transactions, "transactionally consistent (Serializable),
//!   read-only queries that touch 10% of the table (R=1,000,000 and W=0)",
//!   while the other threads run the mix (the paper: short updates only,
//!   `R = 10, W = 2`, with `K` from 0 to 24 of 24 threads). A long reader
//!   runs serializable with the read-only option set, whatever the run's
//!   level. Its rows are distinct: `start + i · stride (mod N)` for
//!   `i < R`, with a random start and a random stride coprime to `N` (the
//!   paper does not say how its rows are chosen; this needs no memory and
//!   touches no row twice).
//!
//! The transaction types are `update`, `read-only` and `long-read`, so the
//! harness reports update and read throughput separately (the paper's Figures
//! 8 and 9). The homogeneous workload has the single type `update`.

use crate::{split_range, Mix, Param, Store, StoreTxn, Txn, TxnError, Worker, Workload};
use multiverse::{AccessSet, Error, Isolation, Key, Result, TableId, TableSpec, TxnOptions};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// Bytes of the payload (the paper's 24-byte row).
pub const PAYLOAD: usize = 24;
/// Rows inserted per load transaction.
pub const LOAD_BATCH: u64 = 1024;
/// Name of the table.
pub const TABLE: &str = "hekaton";
/// Transaction types: section 5.1's update, 5.2.1's short read-only, 5.2.2's long read.
pub const TYPES: &[&str] = &["update", "read-only", "long-read"];
/// The types a `--mix` may name (long readers are threads, not a share).
pub const MIX_TYPES: &[&str] = &["update", "read-only"];
/// Index of `update` in [`TYPES`].
pub const UPDATE: usize = 0;
/// Index of `read-only` in [`TYPES`].
pub const READ_ONLY: usize = 1;
/// Index of `long-read` in [`TYPES`].
pub const LONG_READ: usize = 2;
/// Rows prefetched at a time by a long reader.
const LONG_CHUNK: usize = 16;

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

/// The read-only parts of section 5.2, on top of a [`HekatonConfig`].
#[derive(Clone, Debug, PartialEq)]
pub struct Heterogeneous {
    /// Shares of `update` and `read-only` transactions (over [`MIX_TYPES`]).
    pub mix: Mix,
    /// Threads running long readers (the first ones).
    pub long_readers: usize,
    /// Percentage of the table a long reader reads.
    pub long_read_pct: f64,
}

impl Default for Heterogeneous {
    /// The homogeneous workload: updates only, no long readers (10% if any).
    fn default() -> Heterogeneous {
        Heterogeneous {
            mix: Mix::new(MIX_TYPES, &[100.0, 0.0]).expect("the default mix is valid"),
            long_readers: 0,
            long_read_pct: 10.0,
        }
    }
}

impl Heterogeneous {
    /// True for section 5.1's workload (no read-only transactions of either kind).
    pub fn is_homogeneous(&self) -> bool {
        self.long_readers == 0 && self.mix.only(UPDATE)
    }

    /// Checks the parameters; the error is a one-line message.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.mix.names() != MIX_TYPES {
            return Err(format!("the hekaton mix must be over the types {}", MIX_TYPES.join(", ")));
        }
        if !self.long_read_pct.is_finite() || self.long_read_pct <= 0.0 || self.long_read_pct > 100.0 {
            return Err(format!(
                "--long-read-pct {} is not a percentage of the table above 0 and at most 100",
                self.long_read_pct
            ));
        }
        Ok(())
    }

    /// Rows a long reader reads in a table of `rows` rows (at least one).
    pub fn long_read_rows(&self, rows: u64) -> u64 {
        ((rows as f64 * self.long_read_pct / 100.0).round() as u64).clamp(1, rows.max(1))
    }
}

/// The workload, bound to its table in one database.
#[derive(Debug)]
pub struct Hekaton {
    cfg: HekatonConfig,
    het: Heterogeneous,
    /// Rows per long read.
    long_rows: u64,
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
    /// Creates the table in `db` (hash primary index sized to `rows`) for
    /// the homogeneous workload of section 5.1.
    pub fn setup<S: Store>(db: &S, cfg: HekatonConfig) -> std::result::Result<Hekaton, String> {
        Hekaton::setup_with(db, cfg, Heterogeneous::default())
    }

    /// Creates the table in `db` for the workload `cfg` with the read-only
    /// transactions of section 5.2 described by `het`.
    pub fn setup_with<S: Store>(
        db: &S,
        cfg: HekatonConfig,
        het: Heterogeneous,
    ) -> std::result::Result<Hekaton, String> {
        cfg.validate()?;
        het.validate()?;
        let cap = usize::try_from(cfg.rows).map_err(|_| format!("--rows {} is too large", cfg.rows))?;
        let table = db.create_table(TableSpec::hash(TABLE, cap)).map_err(|e| e.to_string())?;
        let long_rows = het.long_read_rows(cfg.rows);
        Ok(Hekaton { cfg, het, long_rows, table })
    }

    /// The parameters.
    pub fn config(&self) -> HekatonConfig {
        self.cfg
    }

    /// The section 5.2 parameters.
    pub fn heterogeneous(&self) -> &Heterogeneous {
        &self.het
    }

    /// Rows per long read.
    pub fn long_read_rows(&self) -> u64 {
        self.long_rows
    }

    /// The table.
    pub fn table(&self) -> TableId {
        self.table
    }
}

impl Workload for Hekaton {
    type Worker<'w> = HekatonWorker<'w>;

    fn name(&self) -> &'static str {
        crate::Kind::Hekaton.name()
    }

    fn params(&self) -> Vec<(&'static str, Param)> {
        let mut p = vec![
            ("rows", Param::Int(self.cfg.rows)),
            ("reads", Param::Int(self.cfg.reads as u64)),
            ("writes", Param::Int(self.cfg.writes as u64)),
            ("payload_bytes", Param::Int(PAYLOAD as u64)),
            ("key_bytes", Param::Int(8)),
            ("prefetch", Param::Bool(self.cfg.prefetch)),
        ];
        if !self.het.is_homogeneous() {
            p.push(("mix", Param::Str(self.het.mix.to_string())));
            p.push(("long_readers", Param::Int(self.het.long_readers as u64)));
            p.push(("long_read_rows", Param::Int(self.long_rows)));
        }
        p
    }

    fn txn_types(&self) -> &'static [&'static str] {
        if self.het.is_homogeneous() {
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
        let long = thread < self.het.long_readers;
        HekatonWorker {
            w: self,
            rng: SmallRng::seed_from_u64(seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            keys: vec![0; n].into_boxed_slice(),
            ikeys: vec![Key::EMPTY; n].into_boxed_slice(),
            n_keys: if long { 0 } else { n },
            ty: if long { LONG_READ } else { UPDATE },
            long,
            long_start: 0,
            long_stride: 0,
            thread: thread as u64 + 1,
            seq: 0,
            checksum: 0,
        }
    }

    /// Every row 0..N is present and its payload names its own key and a
    /// writer: the load (thread 0, transaction 0) or a worker.
    fn check_state<S: Store>(&self, db: &S) -> std::result::Result<crate::StateCheck, String> {
        let mut t = db.begin_check().map_err(|e| e.to_string())?;
        let mut updated = 0u64;
        for k in 0..self.cfg.rows {
            match t.get_with(self.table, &Key::from_u64(k), decode_payload).map_err(|e| e.to_string())? {
                None => return Err(format!("row {k} is missing")),
                Some(Some((key, thread, seq))) if key == k && (thread > 0 || seq == 0) => {
                    updated += (thread > 0) as u64
                }
                Some(p) => return Err(format!("row {k} holds the payload {p:?}, not one of its own")),
            }
        }
        t.commit().map_err(|e| e.to_string())?;
        Ok(crate::StateCheck {
            checked: format!(
                "{} rows present, each with a payload of its own key ({updated} last written by a worker)",
                self.cfg.rows
            ),
            needs_run: String::new(),
        })
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
    /// Rows of the current transaction in `keys` (`R + W` for an update, `R`
    /// for a read-only one, 0 for a long read).
    n_keys: usize,
    /// The current transaction's type.
    ty: usize,
    /// This thread runs long readers only.
    long: bool,
    /// The current long read: first row and step (coprime to `N`).
    long_start: u64,
    long_stride: u64,
    /// Thread number plus one, written into payloads.
    thread: u64,
    /// Transactions drawn so far (the current one's number).
    seq: u64,
    /// Folds every value read, so reads cannot be optimized away.
    checksum: u64,
}

impl HekatonWorker<'_> {
    /// The rows of the current transaction: reads first, then writes (empty
    /// for a long read, see [`Self::long_read_keys`]).
    pub fn keys(&self) -> &[u64] {
        &self.keys[..self.n_keys]
    }

    /// The rows of the current long read, in the order read (empty for
    /// other transactions).
    pub fn long_read_keys(&self) -> impl Iterator<Item = u64> + '_ {
        let n = self.w.cfg.rows;
        let count = if self.ty == LONG_READ { self.w.long_rows } else { 0 };
        let (start, stride) = (self.long_start, self.long_stride);
        (0..count).map(move |i| ((start as u128 + i as u128 * stride as u128) % n as u128) as u64)
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

    /// Draws a long read: a random start and a random stride coprime to `N`,
    /// so that `start + i · stride (mod N)` never repeats a row.
    fn draw_long(&mut self) {
        let n = self.w.cfg.rows;
        self.long_start = self.draw(n);
        self.long_stride = if n == 1 {
            0
        } else {
            loop {
                let s = 1 + self.draw(n - 1);
                if gcd(s, n) == 1 {
                    break s;
                }
            }
        };
    }

    /// Reads the rows of `keys`, folding their key fields into `sum`.
    #[inline]
    fn read_rows<T: Txn>(&self, t: &mut T, keys: &[u64], ikeys: &[Key], sum: &mut u64) -> Result<(), TxnError> {
        let table = self.w.table;
        for (&k, ik) in keys.iter().zip(ikeys) {
            let v = t.get_with(table, ik, |v| {
                // The key field: always present in a 24-byte payload.
                v.get(..8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()))
            })?;
            // Every key in 0..N exists: a missing row is a bug, not an abort.
            *sum = sum.wrapping_add(v.ok_or_else(|| missing(k, "a read"))?);
        }
        Ok(())
    }

    /// Runs the current long read.
    fn long_read<T: Txn>(&self, t: &mut T, sum: &mut u64) -> Result<(), TxnError> {
        let n = self.w.cfg.rows;
        let (mut k, stride) = (self.long_start, self.long_stride);
        let mut left = self.w.long_rows;
        let mut keys = [0u64; LONG_CHUNK];
        let mut ikeys = [Key::EMPTY; LONG_CHUNK];
        while left > 0 {
            let len = left.min(LONG_CHUNK as u64) as usize;
            for (x, ix) in keys[..len].iter_mut().zip(&mut ikeys[..len]) {
                *x = k;
                *ix = Key::from_u64(k);
                // k + stride < 2N fits: stride < N.
                k += stride;
                if k >= n {
                    k -= n;
                }
            }
            if self.w.cfg.prefetch {
                t.prefetch(self.w.table, &ikeys[..len]);
            }
            self.read_rows(t, &keys[..len], &ikeys[..len], sum)?;
            left -= len as u64;
        }
        Ok(())
    }
}

/// Greatest common divisor.
fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Worker for HekatonWorker<'_> {
    #[inline]
    fn next_txn(&mut self) {
        self.seq += 1;
        if self.long {
            self.draw_long();
            return;
        }
        let mix = &self.w.het.mix;
        self.ty = if mix.only(UPDATE) { UPDATE } else { mix.draw(self.rng.next_u64()) };
        self.n_keys = if self.ty == UPDATE { self.keys.len() } else { self.w.cfg.reads as usize };
        let n = self.w.cfg.rows;
        for i in 0..self.n_keys {
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
        let mut sum = self.checksum;
        if self.ty == LONG_READ {
            self.long_read(t, &mut sum)?;
            self.checksum = sum;
            return Ok(());
        }
        let reads = self.w.cfg.reads as usize;
        let n = self.n_keys;
        if self.w.cfg.prefetch && n > 0 {
            // Start every row's cache misses now, so they overlap.
            t.prefetch(table, &self.ikeys[..n]);
        }
        self.read_rows(t, &self.keys[..reads], &self.ikeys[..reads], &mut sum)?;
        for (&k, ik) in self.keys[reads..n].iter().zip(&self.ikeys[reads..n]) {
            match t.update(table, ik, &payload(k, self.thread, self.seq)) {
                Err(Error::KeyNotFound) => return Err(missing(k, "an update")),
                r => r?,
            }
        }
        self.checksum = sum;
        Ok(())
    }

    #[inline]
    fn txn_type(&self) -> usize {
        self.ty
    }

    /// Short read-only transactions keep the run's level; long readers run
    /// serializable. Both promise to only read.
    #[inline]
    fn options(&self, run: TxnOptions<'static>) -> TxnOptions<'static> {
        match self.ty {
            READ_ONLY => TxnOptions { read_only: true, ..run },
            LONG_READ => TxnOptions { isolation: Isolation::Serializable, read_only: true, ..run },
            _ => run,
        }
    }

    fn declare(&self, access: &mut AccessSet) -> bool {
        access.reads.clear();
        access.writes.clear();
        let t = self.w.table;
        if self.ty == LONG_READ {
            access.reads.extend(self.long_read_keys().map(|k| (t, Key::from_u64(k))));
            return true;
        }
        let (rd, wr) = self.ikeys[..self.n_keys].split_at(self.w.cfg.reads as usize);
        access.reads.extend(rd.iter().map(|k| (t, k.clone())));
        access.writes.extend(wr.iter().map(|k| (t, k.clone())));
        true
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

    #[test]
    fn heterogeneous_is_validated() {
        let h = Heterogeneous::default();
        assert!(h.validate().is_ok() && h.is_homogeneous());
        for pct in [0.0, -1.0, 100.5, f64::NAN] {
            let e = Heterogeneous { long_read_pct: pct, ..Heterogeneous::default() }.validate().unwrap_err();
            assert!(e.contains("--long-read-pct"), "{e}");
        }
        assert_eq!(h.long_read_rows(10_000_000), 1_000_000);
        assert_eq!(h.long_read_rows(3), 1, "at least one row");
        let all = Heterogeneous { long_read_pct: 100.0, ..Heterogeneous::default() };
        assert_eq!(all.long_read_rows(7), 7);
        assert!(!Heterogeneous { long_readers: 1, ..Heterogeneous::default() }.is_homogeneous());
    }

    #[test]
    fn gcd_works() {
        assert_eq!((gcd(12, 18), gcd(7, 10_000_000), gcd(1, 1), gcd(5, 0)), (6, 1, 1, 5));
    }
}
