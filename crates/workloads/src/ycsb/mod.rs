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

#[cfg(test)]
mod tests;
mod worker;

pub use worker::*;

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
