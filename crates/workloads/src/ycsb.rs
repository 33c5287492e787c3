//! YCSB as the BOHM paper runs it (Faleiro and Abadi, VLDB 2015, section 4.2;
//! bohm-vldb2015.txt).
//!
//! One table of `--rows` records (default 1,000,000) with an 8-byte integer
//! key (`0..rows`) and a `--value-bytes` value (default 1,000, "the standard
//! record size in YCSB"), in a hash primary index sized to the table. Three
//! transaction types (section 4.2):
//!
//! * `10rmw`: ten read-modify-writes (section 4.2.1).
//! * `2rmw-8r`: two read-modify-writes and eight reads (section 4.2.2).
//! * `scan`: a read-only transaction reading `--scan-records` records
//!   (default 10,000) "chosen uniformly at random" (section 4.2.3). It runs
//!   with the read-only option set.
//! * `scan-rmw` (not in the BOHM paper): the same reads, then one
//!   read-modify-write of a Zipfian record — a long read-mostly
//!   transaction, the shape of the SSN paper's section 5.3 and 8.4 (TPC-E's
//!   Asset-Eval: a long read with a tiny write set).
//!
//! The records of `10rmw`, `2rmw-8r` and `10op`, and the one
//! read-modify-write of `scan-rmw`, are drawn from a Zipfian distribution
//! with parameter `--theta` (section 4.2.1: 0 for low contention, 0.9 for
//! high). Three options say how, so that a run can draw its keys the way a
//! peer's harness does (the generators: [`crate::zipf`]); each run records
//! them in its parameters (`zipf`, `scramble`, `allow_repeats`):
//!
//! * `--zipf exact` (the default) draws the exact distribution. `--zipf
//!   gray` draws Gray et al.'s approximation, the generator the BOHM paper
//!   cites and the one DBx1000's YCSB, CCBench's (`FastZipf`) and YCSB's
//!   own `ZipfianGenerator` use: ranks 1 and 2 exact, the next ones a little
//!   too frequent (rank 3 of 1,000 keys at θ = 0.9: 16%). It takes θ below
//!   1 only.
//! * Unscrambled (the default), rank `r` is key `r − 1`: the hot records
//!   are the low keys, as with Gray et al.'s generator used directly (as
//!   DBx1000 and CCBench do). `--scramble` hashes each rank over the table
//!   as YCSB's `ScrambledZipfianGenerator` does (YCSB's
//!   `requestdistribution=zipfian`). In a hash index neighbouring keys do
//!   not share buckets, so scrambling changes which keys are hot, not how
//!   contended they are, except that two ranks may hash to one key.
//! * The ten records of one transaction are distinct by default ("each
//!   element of a transaction's read- and write-set is unique"): a key
//!   drawn twice is drawn again. `--allow-repeats` draws them
//!   independently, as CCBench does, so a transaction may read or modify a
//!   record twice: a second read-modify-write sees the first (its own
//!   write), the access declaration (BOHM, ordered 2PL) lists the record
//!   twice, and each read-modify-write counts once in the consistency check.
//!
//! A scan's records are always distinct and uniform.
//!
//! Defaults: `--theta 0` (the paper runs every experiment at both 0 and 0.9
//! and names no default; 0 is its low-contention setting) and the mix
//! `10rmw:100` (the workload of section 4.2.1, its first experiment). Section
//! 4.2.3 is `--mix 10rmw:99,scan:1`; section 4.2.2 is `--mix 2rmw-8r:100`.
//!
//! Deliberate choices the paper leaves open: in `2rmw-8r` the first two of
//! the ten drawn records are the ones modified, and the eight reads run
//! before the two read-modify-writes (like the Hekaton workload's reads then
//! writes); a scan reads its records in the order drawn (Floyd's sampling
//! over a per-thread bitmap, so distinct without allocating per
//! transaction; a worker keeps its scan's keys only while that transaction
//! is its current one, so that BOHM's thousands of workers in flight do not
//! each hold a scan's memory). The paper does not say whether scans read a consistent
//! snapshot; they run at the run's isolation level, read-only.
//!
//! Value layout (little-endian): bytes `0..8` the record's key, `8..16` a
//! counter that every read-modify-write increments, then filler bytes
//! ([`FILL`]), and, when the value has at least 24 bytes, the key again in
//! the last 8. After a run, [`Workload::check_consistency`] checks every
//! record's layout and that the counters add up to the number of committed
//! read-modify-writes: each landed exactly once.

use crate::zipf::{Gray, Zipf, ZipfKeys, ZipfKind};
use crate::{split_range, Mix, Param, Store, StoreTxn, Txn, TxnError, Worker, Workload};
use multiverse::{AccessSet, Error, Key, Result, TableId, TableSpec, TxnOptions};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use std::sync::atomic::{AtomicU64, Ordering};

/// Name of the table.
pub const TABLE: &str = "ycsb";
/// Transaction types (names for `--mix`).
pub const TYPES: &[&str] = &["10rmw", "2rmw-8r", "scan", "10op", "scan-rmw"];
/// Index of `10rmw` in [`TYPES`].
pub const RMW10: usize = 0;
/// Index of `2rmw-8r` in [`TYPES`].
pub const RMW2_R8: usize = 1;
/// Index of `scan` in [`TYPES`].
pub const SCAN: usize = 2;
/// Index of `10op` in [`TYPES`]: ten operations, each a read or (with
/// probability `write_pct`) a blind write — the YCSB configuration of the
/// CCBench testbed (Tanabe et al., VLDB 2020) used for its Silo.
pub const OP10: usize = 3;
/// Index of `scan-rmw` in [`TYPES`]: a `scan`'s reads, then one
/// read-modify-write of a Zipfian record (a read-mostly transaction).
pub const SCAN_RMW: usize = 4;
/// Smallest value when the mix is `10op` alone (no counter to keep).
pub const MIN_BLIND_VALUE_BYTES: usize = 4;
/// Records per `10rmw` and `2rmw-8r` transaction.
pub const OPS: usize = 10;
/// Read-modify-writes of a `2rmw-8r` transaction.
pub const RMWS_2R8: usize = 2;
/// Smallest value: key and counter.
pub const MIN_VALUE_BYTES: usize = 16;
/// Largest value (the engine's default limit).
pub const MAX_VALUE_BYTES: usize = 1 << 20;
/// The filler byte between the counter and the trailing key.
pub const FILL: u8 = b'y';
/// Records inserted per load transaction.
pub const LOAD_BATCH: u64 = 512;
/// Keys prefetched at a time by a scan.
const SCAN_CHUNK: usize = 16;

thread_local! {
    /// A bitmap over the table for drawing a scan's distinct records, one
    /// per thread that draws (all zero between draws).
    static SEEN: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}
/// Redraws of a repeated Zipfian key before taking the next free key instead
/// (only a very steep distribution over a tiny table gets there).
const MAX_REDRAWS: u32 = 64;

/// Parameters of the workload.
#[derive(Clone, Debug, PartialEq)]
pub struct YcsbConfig {
    /// Records in the table.
    pub rows: u64,
    /// Bytes per record value.
    pub value_bytes: usize,
    /// Zipfian parameter of the short transactions' keys (0 = uniform).
    pub theta: f64,
    /// The generator of those keys (`--zipf`; see [`crate::zipf`]).
    pub zipf: ZipfKind,
    /// Hash ranks over the keys, as YCSB's scrambled Zipfian does (`--scramble`).
    pub scramble: bool,
    /// A short transaction's ten records are drawn independently, so one
    /// may come twice (`--allow-repeats`); otherwise they are distinct.
    pub allow_repeats: bool,
    /// Records read by a `scan`.
    pub scan_records: u64,
    /// The transaction mix over [`TYPES`].
    pub mix: Mix,
    /// Prefetch hints for a transaction's records before touching them.
    pub prefetch: bool,
    /// `10op`: percent of its operations that are blind writes.
    pub write_pct: u32,
    /// How a read-modify-write is issued (see [`Rmw`]).
    pub rmw: Rmw,
}

/// How a read-modify-write of `10rmw`, `2rmw-8r` and `scan-rmw` talks to
/// the engine (`--rmw`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rmw {
    /// One call, `Transaction::modify`: the engine reads and writes the
    /// row in one step (the default, and what earlier results measured).
    #[default]
    Modify,
    /// An application's read-modify-write: `get`, then `update` of the
    /// value read (the read is an ordinary read: shared lock, or validated).
    ReadUpdate,
    /// `get_for_update`, then `update`: the read declares the write.
    ForUpdate,
}

impl Rmw {
    /// The names, as `--rmw` takes them.
    pub const NAMES: &'static [&'static str] = &["modify", "read-update", "for-update"];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Rmw::Modify => "modify",
            Rmw::ReadUpdate => "read-update",
            Rmw::ForUpdate => "for-update",
        }
    }

    /// Parses a command-line name.
    pub fn parse(s: &str) -> std::result::Result<Rmw, String> {
        match s {
            "modify" => Ok(Rmw::Modify),
            "read-update" => Ok(Rmw::ReadUpdate),
            "for-update" => Ok(Rmw::ForUpdate),
            _ => Err(format!("unknown read-modify-write style {s:?}: one of {}", Rmw::NAMES.join(", "))),
        }
    }
}

impl Default for YcsbConfig {
    /// Section 4.2 and 4.2.1: 1,000,000 records of 1,000 bytes, 10RMW only, theta 0.
    fn default() -> YcsbConfig {
        YcsbConfig {
            rows: 1_000_000,
            value_bytes: 1000,
            theta: 0.0,
            zipf: ZipfKind::Exact,
            scramble: false,
            allow_repeats: false,
            scan_records: 10_000,
            mix: Mix::new(TYPES, &[100.0, 0.0, 0.0, 0.0, 0.0]).expect("the default mix is valid"),
            prefetch: true,
            write_pct: 50,
            rmw: Rmw::Modify,
        }
    }
}

impl YcsbConfig {
    /// Rough resident bytes of the loaded table: per record a version (about
    /// 40 bytes of header with the value, rounded up by the allocator's size
    /// classes, a quarter at most) and a hash bucket.
    pub fn estimated_bytes(&self) -> u64 {
        let version = (self.value_bytes as u64 + 40) * 5 / 4;
        self.rows.saturating_mul(version + 16)
    }

    /// Checks the parameters; the error is a one-line message.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.rows == 0 {
            return Err("--rows must be at least 1".into());
        }
        if usize::try_from(self.rows).is_err() {
            return Err(format!("--rows {} is too large", self.rows));
        }
        if self.mix.names() != TYPES {
            return Err(format!("the ycsb mix must be over the types {}", TYPES.join(", ")));
        }
        let min = if self.mix.only(OP10) { MIN_BLIND_VALUE_BYTES } else { MIN_VALUE_BYTES };
        if !(min..=MAX_VALUE_BYTES).contains(&self.value_bytes) {
            return Err(format!(
                "--value-bytes {} is out of range: {min} to {MAX_VALUE_BYTES} bytes (a value holds its key{}; \
                 {MIN_BLIND_VALUE_BYTES} is the least with --mix 10op:100)",
                self.value_bytes,
                if min == MIN_VALUE_BYTES { " and a counter" } else { "" }
            ));
        }
        if self.write_pct > 100 {
            return Err(format!("--write-pct {} is above 100", self.write_pct));
        }
        Zipf::new(self.rows, self.theta).map_err(|e| format!("--theta: {e}"))?;
        if self.zipf == ZipfKind::Gray {
            // Checked here without summing ζ(n, θ), which setup does.
            Gray::check(self.theta).map_err(|e| format!("--theta with --zipf gray: {e}"))?;
        }
        let short = [RMW10, RMW2_R8, OP10, SCAN_RMW].iter().any(|&t| self.mix.pct(t) > 0.0);
        let scans = self.mix.pct(SCAN) > 0.0 || self.mix.pct(SCAN_RMW) > 0.0;
        if short && !self.allow_repeats && self.rows < OPS as u64 {
            return Err(format!(
                "10rmw, 2rmw-8r, 10op and scan-rmw draw {OPS} distinct records but the table has only {} \
                 (--rows; --allow-repeats lets a transaction draw a record twice)",
                self.rows
            ));
        }
        if self.scan_records == 0 {
            return Err("--scan-records must be at least 1".into());
        }
        if scans && self.scan_records > self.rows {
            return Err(format!(
                "a scan reads {} distinct records (--scan-records) but the table has only {} (--rows)",
                self.scan_records, self.rows
            ));
        }
        if self.scan_records > 1 << 30 {
            return Err(format!("--scan-records {} is too large (at most 2^30)", self.scan_records));
        }
        Ok(())
    }
}

/// Writes the initial value of record `key` into `buf` (cleared first); a
/// `10op` blind write writes the same. Below [`MIN_VALUE_BYTES`] (`10op`
/// alone) the value is the key's first bytes and filler, no counter.
pub fn initial_value(key: u64, len: usize, buf: &mut Vec<u8>) {
    buf.clear();
    buf.resize(len, FILL);
    let kb = key.to_le_bytes();
    if len < MIN_VALUE_BYTES {
        let n = len.min(8);
        buf[..n].copy_from_slice(&kb[..n]);
        return;
    }
    buf[0..8].copy_from_slice(&kb);
    buf[8..16].copy_from_slice(&0u64.to_le_bytes());
    if len >= 24 {
        buf[len - 8..].copy_from_slice(&kb);
    }
}

/// True if `v` is an intact `len`-byte value of record `key` (any counter).
pub fn intact(v: &[u8], key: u64, len: usize) -> bool {
    if len < MIN_VALUE_BYTES {
        let n = len.min(8);
        return v.len() == len && v[..n] == key.to_le_bytes()[..n] && v[n..].iter().all(|&b| b == FILL);
    }
    decode(v, len).is_some_and(|(k, _)| k == key)
}

/// The `(key, counter)` of a value, if its layout is intact for `len` bytes.
pub fn decode(v: &[u8], len: usize) -> Option<(u64, u64)> {
    if v.len() != len || len < MIN_VALUE_BYTES {
        return None;
    }
    let word = |i: usize| u64::from_le_bytes(v[i..i + 8].try_into().unwrap());
    let key = word(0);
    let filler = if len >= 24 { &v[16..len - 8] } else { &v[16..] };
    if (len >= 24 && word(len - 8) != key) || filler.iter().any(|&b| b != FILL) {
        return None;
    }
    Some((key, word(8)))
}

/// The workload, bound to its table in one database.
#[derive(Debug)]
pub struct Ycsb {
    cfg: YcsbConfig,
    table: TableId,
    /// The short transactions' key generator.
    keys: ZipfKeys,
    /// Read-modify-writes committed by finished workers.
    rmws: AtomicU64,
}

impl Ycsb {
    /// Validates `cfg` and creates the table in `db`.
    pub fn setup<S: Store>(db: &S, cfg: YcsbConfig) -> std::result::Result<Ycsb, String> {
        cfg.validate()?;
        let keys = ZipfKeys::new(cfg.zipf, cfg.rows, cfg.theta, cfg.scramble)?;
        let table = db.create_table(TableSpec::hash(TABLE, cfg.rows as usize)).map_err(|e| e.to_string())?;
        Ok(Ycsb { cfg, table, keys, rmws: AtomicU64::new(0) })
    }

    /// The parameters.
    pub fn config(&self) -> &YcsbConfig {
        &self.cfg
    }

    /// The table.
    pub fn table(&self) -> TableId {
        self.table
    }

    /// Read-modify-writes committed by the workers that finished.
    pub fn committed_rmws(&self) -> u64 {
        // Relaxed: read after the workers were joined.
        self.rmws.load(Ordering::Relaxed)
    }
}

impl Workload for Ycsb {
    type Worker<'w> = YcsbWorker<'w>;

    fn name(&self) -> &'static str {
        crate::Kind::Ycsb.name()
    }

    fn params(&self) -> Vec<(&'static str, Param)> {
        vec![
            ("rows", Param::Int(self.cfg.rows)),
            ("value_bytes", Param::Int(self.cfg.value_bytes as u64)),
            ("theta", Param::Str(self.cfg.theta.to_string())),
            ("mix", Param::Str(self.cfg.mix.to_string())),
            ("scan_records", Param::Int(self.cfg.scan_records)),
            ("key_bytes", Param::Int(8)),
            ("prefetch", Param::Bool(self.cfg.prefetch)),
            ("write_pct", Param::Int(self.cfg.write_pct as u64)),
            ("rmw", Param::Str(self.cfg.rmw.name().into())),
            ("zipf", Param::Str(self.cfg.zipf.name().into())),
            ("scramble", Param::Bool(self.cfg.scramble)),
            ("allow_repeats", Param::Bool(self.cfg.allow_repeats)),
        ]
    }

    fn txn_types(&self) -> &'static [&'static str] {
        TYPES
    }

    fn estimated_bytes(&self) -> u64 {
        self.cfg.estimated_bytes()
    }

    fn load_size(&self) -> u64 {
        self.cfg.rows
    }

    fn load<S: Store>(&self, db: &S, part: usize, parts: usize, progress: &(impl Fn(u64) + Sync)) -> Result<()> {
        let range = split_range(self.cfg.rows, part, parts);
        let mut buf = Vec::with_capacity(self.cfg.value_bytes);
        let mut lo = range.start;
        while lo < range.end {
            let hi = (lo + LOAD_BATCH).min(range.end);
            db.load_txn(|t| {
                for k in lo..hi {
                    initial_value(k, self.cfg.value_bytes, &mut buf);
                    t.insert(self.table, Key::from_u64(k), &buf)?;
                }
                Ok(())
            })?;
            progress(hi - lo);
            lo = hi;
        }
        Ok(())
    }

    fn worker(&self, thread: usize, seed: u64) -> YcsbWorker<'_> {
        YcsbWorker {
            w: self,
            rng: SmallRng::seed_from_u64(seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            ty: RMW10,
            keys: [0; OPS],
            ikeys: [Key::EMPTY; OPS],
            writes: 0,
            blind: Vec::with_capacity(self.cfg.value_bytes),
            scan_keys: Vec::new(),
            rmws: 0,
            checksum: 0,
            buf: std::cell::Cell::new(Vec::with_capacity(self.cfg.value_bytes)),
        }
    }

    fn check_consistency<S: Store>(&self, db: &S) -> std::result::Result<String, String> {
        let len = self.cfg.value_bytes;
        if self.cfg.mix.pct(OP10) > 0.0 {
            self.check_intact(db)?;
            return Ok(format!("{} records intact (10op's blind writes reset counters: not summed)", self.cfg.rows));
        }
        let mut sum = 0u64;
        let mut t = db.begin_check().map_err(|e| e.to_string())?;
        for k in 0..self.cfg.rows {
            let r = t.get_with(self.table, &Key::from_u64(k), |v| decode(v, len)).map_err(|e| e.to_string())?;
            match r {
                None => return Err(format!("record {k} is missing")),
                Some(None) => return Err(format!("record {k} has a damaged value (key, counter or filler)")),
                Some(Some((key, _))) if key != k => return Err(format!("record {k} holds record {key}'s value")),
                Some(Some((_, c))) => sum += c,
            }
        }
        t.commit().map_err(|e| e.to_string())?;
        let want = self.committed_rmws();
        if sum != want {
            return Err(format!(
                "the records' counters add up to {sum}, but {want} read-modify-writes committed (lost or repeated updates)"
            ));
        }
        Ok(format!(
            "{} records intact; their counters add up to the {want} committed read-modify-writes",
            self.cfg.rows
        ))
    }

    fn check_state<S: Store>(&self, db: &S) -> std::result::Result<crate::StateCheck, String> {
        self.check_intact(db)?;
        Ok(crate::StateCheck {
            checked: format!("{} records present, each with its own key and an intact layout", self.cfg.rows),
            needs_run: if self.cfg.mix.pct(OP10) > 0.0 {
                String::new()
            } else {
                "the records' counters against the committed read-modify-writes".into()
            },
        })
    }
}

impl Ycsb {
    /// Every record is present and intact (any counter): the check when
    /// `10op` runs (its blind writes reset counters) and after recovery.
    fn check_intact<S: Store>(&self, db: &S) -> std::result::Result<(), String> {
        let len = self.cfg.value_bytes;
        let mut t = db.begin_check().map_err(|e| e.to_string())?;
        for k in 0..self.cfg.rows {
            match t.get_with(self.table, &Key::from_u64(k), |v| intact(v, k, len)).map_err(|e| e.to_string())? {
                None => return Err(format!("record {k} is missing")),
                Some(false) => return Err(format!("record {k} has a damaged value")),
                Some(true) => {}
            }
        }
        t.commit().map(drop).map_err(|e| e.to_string())
    }
}

/// The error for a record that should exist but was not found (an engine bug).
#[cold]
fn missing(k: u64, op: &str) -> TxnError {
    TxnError::Invariant(format!(
        "record {k} of table '{TABLE}' is missing: {op} found no visible version, though records are never deleted (an engine bug)"
    ))
}

/// The error for a value whose layout is damaged.
#[cold]
fn damaged(k: u64, len: usize) -> TxnError {
    TxnError::Invariant(format!(
        "record {k} of table '{TABLE}' has a damaged value (expected {len} bytes with its key)"
    ))
}

/// One thread's generator for YCSB.
pub struct YcsbWorker<'w> {
    w: &'w Ycsb,
    rng: SmallRng,
    /// The current transaction's type.
    ty: usize,
    /// `10rmw`/`2rmw-8r`: the records (for `2rmw-8r` the first two are modified).
    keys: [u64; OPS],
    /// The same as index keys.
    ikeys: [Key; OPS],
    /// `10op`: bit `i` set if operation `i` is a blind write.
    writes: u16,
    /// `10op`: the value a blind write writes.
    blind: Vec<u8>,
    /// `scan`: the records to read (empty, unallocated, otherwise).
    scan_keys: Vec<u64>,
    /// Read-modify-writes of this worker's committed transactions.
    rmws: u64,
    /// Folds every value read, so reads cannot be optimized away.
    checksum: u64,
    /// `--rmw read-update` and `for-update`: the value read, then written
    /// (taken and put back by `read_then_update`, which takes `&self`).
    buf: std::cell::Cell<Vec<u8>>,
}

impl YcsbWorker<'_> {
    /// The records of the current `10rmw`, `2rmw-8r` or `10op` transaction
    /// (distinct unless `allow_repeats`; `scan-rmw` modifies the first).
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// The records of the current `scan`.
    pub fn scan_keys(&self) -> &[u64] {
        &self.scan_keys
    }

    /// Read-modify-writes of this worker's committed transactions so far.
    pub fn committed_rmws(&self) -> u64 {
        self.rmws
    }

    /// A fold of every counter read (meaningless; keeps reads observable).
    pub fn checksum(&self) -> u64 {
        self.checksum
    }

    /// Read-modify-writes of the current transaction.
    #[inline]
    fn rmws_now(&self) -> u64 {
        match self.ty {
            RMW10 => OPS as u64,
            RMW2_R8 => RMWS_2R8 as u64,
            SCAN_RMW => 1,
            _ => 0,
        }
    }

    /// Draws the ten Zipfian records of a short transaction: distinct, or
    /// independent with `allow_repeats`.
    #[inline]
    fn draw_short(&mut self) {
        let n = self.w.cfg.rows;
        let gen = &self.w.keys;
        for i in 0..OPS {
            let mut k = gen.key(&mut self.rng);
            let mut redraws = 0;
            while !self.w.cfg.allow_repeats && self.keys[..i].contains(&k) {
                if redraws < MAX_REDRAWS {
                    k = gen.key(&mut self.rng);
                    redraws += 1;
                } else {
                    // Too steep to find a new key by drawing: take the next free one.
                    k = if k + 1 == n { 0 } else { k + 1 };
                }
            }
            self.keys[i] = k;
            self.ikeys[i] = Key::from_u64(k);
        }
    }

    /// Draws the distinct uniform records of a scan (Floyd's algorithm: one
    /// draw per record, every subset of the size equally likely).
    fn draw_scan(&mut self) {
        let n = self.w.cfg.rows;
        let m = self.w.cfg.scan_records;
        self.scan_keys.clear();
        self.scan_keys.reserve_exact(m as usize);
        SEEN.with_borrow_mut(|seen| {
            if seen.len() < n.div_ceil(64) as usize {
                seen.resize(n.div_ceil(64) as usize, 0);
            }
            for j in n - m..n {
                // Uniform in 0..=j.
                let t = ((self.rng.next_u64() as u128 * (j as u128 + 1)) >> 64) as u64;
                let pick = if seen[(t / 64) as usize] & (1 << (t % 64)) != 0 { j } else { t };
                seen[(pick / 64) as usize] |= 1 << (pick % 64);
                self.scan_keys.push(pick);
            }
            for &k in &self.scan_keys {
                seen[(k / 64) as usize] = 0;
            }
        });
    }

    /// Read-modify-write of record `k`: increments its counter.
    #[inline]
    fn rmw<T: Txn>(&self, t: &mut T, k: u64, ik: &Key) -> Result<(), TxnError> {
        let len = self.w.cfg.value_bytes;
        if self.w.cfg.rmw != Rmw::Modify {
            return self.read_then_update(t, k, ik);
        }
        let mut ok = true;
        let r = t.modify(self.w.table, ik, |v| {
            if v.len() == len && v[0..8] == k.to_le_bytes() {
                let c = u64::from_le_bytes(v[8..16].try_into().unwrap());
                v[8..16].copy_from_slice(&c.wrapping_add(1).to_le_bytes());
            } else {
                ok = false;
            }
        });
        match r {
            Err(Error::KeyNotFound) => Err(missing(k, "a read-modify-write")),
            Err(e) => Err(e.into()),
            Ok(()) if !ok => Err(damaged(k, len)),
            Ok(()) => Ok(()),
        }
    }

    /// [`Self::rmw`] as an application writes it (`--rmw read-update` or
    /// `for-update`): the record is read (for update), its counter
    /// incremented in the transaction's buffer and the value written back.
    fn read_then_update<T: Txn>(&self, t: &mut T, k: u64, ik: &Key) -> Result<(), TxnError> {
        let len = self.w.cfg.value_bytes;
        let mut buf = self.buf.take();
        let copy = |v: &[u8]| {
            buf.clear();
            buf.extend_from_slice(v);
        };
        let r = if self.w.cfg.rmw == Rmw::ForUpdate {
            t.get_for_update_with(self.w.table, ik, copy)
        } else {
            t.get_with(self.w.table, ik, copy)
        };
        let r = match r {
            Ok(None) => Err(missing(k, "a read-modify-write")),
            Err(e) => Err(e.into()),
            Ok(Some(())) if buf.len() != len || buf[0..8] != k.to_le_bytes() => Err(damaged(k, len)),
            Ok(Some(())) => {
                let c = u64::from_le_bytes(buf[8..16].try_into().unwrap());
                buf[8..16].copy_from_slice(&c.wrapping_add(1).to_le_bytes());
                t.update(self.w.table, ik, &buf).map_err(TxnError::from)
            }
        };
        self.buf.set(buf);
        r
    }

    /// Reads record `k`, returning its counter.
    #[inline]
    fn read<T: Txn>(&self, t: &mut T, k: u64, ik: &Key) -> Result<u64, TxnError> {
        let len = self.w.cfg.value_bytes;
        let v = t.get_with(self.w.table, ik, |v| {
            (v.len() == len && v[0..8] == k.to_le_bytes()).then(|| u64::from_le_bytes(v[8..16].try_into().unwrap()))
        })?;
        v.ok_or_else(|| missing(k, "a read"))?.ok_or_else(|| damaged(k, len))
    }
}

impl Worker for YcsbWorker<'_> {
    #[inline]
    fn next_txn(&mut self) {
        let mix = &self.w.cfg.mix;
        self.ty = if mix.only(RMW10) { RMW10 } else { mix.draw(self.rng.next_u64()) };
        if self.ty == SCAN || self.ty == SCAN_RMW {
            self.draw_scan();
        } else if self.scan_keys.capacity() > 0 {
            self.scan_keys = Vec::new();
        }
        if self.ty != SCAN {
            // scan-rmw modifies the first of these.
            self.draw_short();
        }
        if self.ty == OP10 {
            let pct = self.w.cfg.write_pct as u64;
            self.writes = (0..OPS).filter(|_| crate::below(&mut self.rng, 100) < pct).fold(0, |m, i| m | 1 << i);
        }
    }

    #[inline]
    fn execute<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let table = self.w.table;
        let mut sum = self.checksum;
        match self.ty {
            RMW10 => {
                if self.w.cfg.prefetch {
                    t.prefetch(table, &self.ikeys);
                }
                for (&k, ik) in self.keys.iter().zip(&self.ikeys) {
                    self.rmw(t, k, ik)?;
                }
            }
            RMW2_R8 => {
                if self.w.cfg.prefetch {
                    t.prefetch(table, &self.ikeys);
                }
                for (&k, ik) in self.keys[RMWS_2R8..].iter().zip(&self.ikeys[RMWS_2R8..]) {
                    sum = sum.wrapping_add(self.read(t, k, ik)?);
                }
                for (&k, ik) in self.keys[..RMWS_2R8].iter().zip(&self.ikeys[..RMWS_2R8]) {
                    self.rmw(t, k, ik)?;
                }
            }
            OP10 => {
                if self.w.cfg.prefetch {
                    t.prefetch(table, &self.ikeys);
                }
                let len = self.w.cfg.value_bytes;
                for i in 0..OPS {
                    let (k, ik) = (self.keys[i], &self.ikeys[i]);
                    if self.writes & (1 << i) != 0 {
                        initial_value(k, len, &mut self.blind);
                        match t.update(table, ik, &self.blind) {
                            Err(Error::KeyNotFound) => return Err(missing(k, "a blind write")),
                            r => r?,
                        }
                    } else {
                        match t.get_with(table, ik, |v| intact(v, k, len))? {
                            None => return Err(missing(k, "a read")),
                            Some(false) => return Err(damaged(k, len)),
                            Some(true) => sum = sum.wrapping_add(1),
                        }
                    }
                }
            }
            _ => {
                let mut chunk = [Key::EMPTY; SCAN_CHUNK];
                for keys in self.scan_keys.chunks(SCAN_CHUNK) {
                    for (ik, &k) in chunk.iter_mut().zip(keys) {
                        *ik = Key::from_u64(k);
                    }
                    let chunk = &chunk[..keys.len()];
                    if self.w.cfg.prefetch {
                        t.prefetch(table, chunk);
                    }
                    for (&k, ik) in keys.iter().zip(chunk) {
                        sum = sum.wrapping_add(self.read(t, k, ik)?);
                    }
                }
                if self.ty == SCAN_RMW {
                    self.rmw(t, self.keys[0], &self.ikeys[0])?;
                }
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
        if self.ty == SCAN {
            TxnOptions { read_only: true, ..run }
        } else {
            run
        }
    }

    #[inline]
    fn committed(&mut self) {
        self.rmws += self.rmws_now();
    }

    fn finish(&mut self) {
        // Relaxed: the harness joins the workers before the check reads it.
        self.w.rmws.fetch_add(self.rmws, Ordering::Relaxed);
        self.rmws = 0;
    }

    /// A read-modify-write both reads and writes its record.
    fn declare(&self, access: &mut AccessSet) -> bool {
        access.reads.clear();
        access.writes.clear();
        let t = self.w.table;
        match self.ty {
            RMW10 => {
                access.reads.extend(self.ikeys.iter().map(|k| (t, k.clone())));
                access.writes.extend(self.ikeys.iter().map(|k| (t, k.clone())));
            }
            RMW2_R8 => {
                access.reads.extend(self.ikeys.iter().map(|k| (t, k.clone())));
                access.writes.extend(self.ikeys[..RMWS_2R8].iter().map(|k| (t, k.clone())));
            }
            OP10 => {
                for (i, k) in self.ikeys.iter().enumerate() {
                    if self.writes & (1 << i) != 0 {
                        access.writes.push((t, k.clone()));
                    } else {
                        access.reads.push((t, k.clone()));
                    }
                }
            }
            _ => {
                access.reads.extend(self.scan_keys.iter().map(|&k| (t, Key::from_u64(k))));
                if self.ty == SCAN_RMW {
                    access.reads.push((t, self.ikeys[0].clone()));
                    access.writes.push((t, self.ikeys[0].clone()));
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        let mut b = Vec::new();
        for len in [16, 23, 24, 1000] {
            initial_value(42, len, &mut b);
            assert_eq!(b.len(), len);
            assert_eq!(decode(&b, len), Some((42, 0)));
            assert_eq!(decode(&b, len + 1), None);
        }
        initial_value(7, 100, &mut b);
        b[50] = 0;
        assert_eq!(decode(&b, 100), None, "damaged filler");
        initial_value(7, 100, &mut b);
        b[99] = 9;
        assert_eq!(decode(&b, 100), None, "damaged trailing key");
    }

    /// Scans of workers that share a thread (BOHM's workers all draw on
    /// the sequencer) each get distinct records in range, every record can
    /// be drawn, and a worker keeps a scan's keys only while it is current.
    #[test]
    fn scans_draw_distinct_records() {
        let db = multiverse::Database::new(multiverse::Options::default()).unwrap();
        let mix = Mix::new(TYPES, &[50.0, 0.0, 50.0, 0.0, 0.0]).unwrap();
        let cfg = YcsbConfig { rows: 300, scan_records: 200, value_bytes: 16, mix, ..YcsbConfig::default() };
        let y = Ycsb::setup(&db, cfg).unwrap();
        let mut ws: Vec<_> = (0..3).map(|i| y.worker(i, 9)).collect();
        let mut hit = vec![false; 300];
        let (mut scans, mut others) = (0, 0);
        for round in 0..60 {
            let w = &mut ws[round % 3];
            w.next_txn();
            if w.txn_type() != SCAN {
                assert_eq!(w.scan_keys.capacity(), 0, "a short transaction holds no scan keys");
                others += 1;
                continue;
            }
            scans += 1;
            let mut keys = w.scan_keys().to_vec();
            keys.iter().for_each(|&k| hit[k as usize] = true);
            keys.sort_unstable();
            keys.dedup();
            assert_eq!(keys.len(), 200, "distinct");
            assert!(keys.iter().all(|&k| k < 300));
        }
        assert!(scans > 10 && others > 10);
        assert!(hit.iter().all(|&h| h), "every record is drawn sometimes");
        SEEN.with_borrow(|seen| assert!(seen.iter().all(|&w| w == 0), "the bitmap is clear between draws"));
    }

    #[test]
    fn config_is_validated() {
        assert!(YcsbConfig::default().validate().is_ok());
        let c = |f: fn(&mut YcsbConfig)| {
            let mut c = YcsbConfig::default();
            f(&mut c);
            c.validate()
        };
        assert!(c(|c| c.rows = 0).is_err());
        assert!(c(|c| c.rows = 9).unwrap_err().contains("only 9"));
        assert!(c(|c| c.value_bytes = 15).unwrap_err().contains("--value-bytes"));
        assert!(c(|c| c.theta = -1.0).unwrap_err().contains("--theta"));
        assert!(c(|c| c.theta = 1.0).is_ok());
        // Gray et al.'s generator stops short of 1; the exact one does not.
        assert!(c(|c| (c.zipf, c.theta) = (ZipfKind::Gray, 0.99)).is_ok());
        let e = c(|c| (c.zipf, c.theta) = (ZipfKind::Gray, 1.0)).unwrap_err();
        assert!(e.starts_with("--theta with --zipf gray: theta 1 is out of range"), "{e}");
        // Repeats let a short transaction run on fewer than ten records.
        assert!(c(|c| c.rows = 3).unwrap_err().contains("--allow-repeats"));
        assert!(c(|c| (c.rows, c.allow_repeats) = (3, true)).is_ok());
        assert!(c(|c| (c.rows, c.allow_repeats, c.scramble) = (1, true, true)).is_ok());
        assert!(c(|c| c.scan_records = 0).is_err());
        let scan = Mix::new(TYPES, &[50.0, 0.0, 50.0, 0.0, 0.0]).unwrap();
        let e = YcsbConfig { rows: 100, scan_records: 101, mix: scan.clone(), ..YcsbConfig::default() }.validate();
        assert!(e.unwrap_err().contains("only 100"));
        // scan-rmw needs its records too.
        let rm = Mix::new(TYPES, &[0.0, 0.0, 0.0, 0.0, 100.0]).unwrap();
        let e = YcsbConfig { rows: 100, scan_records: 101, mix: rm, ..YcsbConfig::default() }.validate();
        assert!(e.unwrap_err().contains("only 100"));
        // A scan-only mix needs no ten records.
        let only = Mix::new(TYPES, &[0.0, 0.0, 100.0, 0.0, 0.0]).unwrap();
        assert!(YcsbConfig { rows: 5, scan_records: 5, mix: only, ..YcsbConfig::default() }.validate().is_ok());
    }
}
