//! A workload for verifying phantom protection: transactions read key
//! *ranges* while others insert and delete rows inside them.
//!
//! No other workload of the suite makes a predicate anti-dependency (a
//! transaction that saw a row absent, followed by one that makes it exist),
//! so a history recorded from them never shows whether a protocol protects
//! its predicates: the difference between repeatable read and serializable.
//! This one does, on a small hot key space so that it happens often.
//!
//! Schema:
//!
//! * `predicate_rows`: an ordered primary index over `ranges × range_rows`
//!   slots; slot `s` of range `r` has the 8-byte integer key
//!   `r · range_rows + s`, so a range is a contiguous key interval. A slot
//!   holds a row or not; a row's value is the 8-byte tag of its inserter
//!   ([`tag`]; 0 for the load). The load fills every even slot.
//! * `predicate_counts`: one row per range, key `r`, holding the number of
//!   rows present in the range (`u64`, little-endian). With
//!   [`PredicateConfig::tagged_counts`] (`--verify` on another store) the
//!   count is followed by the 8-byte tag of every toggle of the range, in
//!   the order they committed: the toggles' order, which a black box does
//!   not otherwise show ([`crate::Workload::guarded_ranges`]).
//!
//! Transaction types (`--mix`, default `scan:25,toggle:25,scan-write:50`):
//!
//! * **scan** (read-only): reads the count row of one range (or of every
//!   range, one scan in four), reads that range (or the whole table) with a
//!   primary-key range scan, then looks up two random slots by key (a lookup
//!   that finds nothing is a predicate read too). The number of rows the
//!   scan returned must equal the count it read: at every level but read
//!   committed a committed scan reads one consistent state, so a mismatch is
//!   a phantom (counted, and reported by the consistency check).
//! * **toggle**: looks one slot up; inserts a row there if it found none,
//!   deletes the row if it found one, and adds +1 or -1 to the range's
//!   count row (a read-modify-write). If the slot changed between the lookup
//!   and the write (possible at read committed), the transaction rolls back
//!   (a `user` abort).
//! * **scan-write**: scans one range without reading its count, then
//!   toggles a slot of a random range. Two of them that scan each other's
//!   range and insert into it form a cycle of predicate anti-dependencies
//!   only (a phantom write skew, Adya's G2): allowed at snapshot isolation
//!   and repeatable read, forbidden at serializable, and caught only by a
//!   protocol's phantom protection, not by its item read validation.
//!
//! Protocols that run declared transactions (BOHM, ordered 2PL) cannot
//! declare a range: for them ([`PredicateConfig::range_scans`] off) a range
//! is read slot by slot with point reads, declared, which are predicate reads
//! of single keys for the checker.
//!
//! The consistency check after a run proves that every count row equals the
//! number of rows in its range, that the committed toggles account for
//! every change since the load, and (except at read committed) that no
//! committed scan saw a number of rows other than its count row said.

use crate::{below, Mix, Param, Store, StoreTxn, Txn, TxnError, Worker, Workload};
use multiverse::{AccessSet, Error, IndexId, Key, Result, TableId, TableSpec, TxnOptions};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Name of the table of rows.
pub const ROWS: &str = "predicate_rows";
/// Name of the table of count rows.
pub const COUNTS: &str = "predicate_counts";
/// Transaction types.
pub const TYPES: &[&str] = &["scan", "toggle", "scan-write"];
/// Index of `scan` in [`TYPES`].
pub const SCAN: usize = 0;
/// Index of `toggle` in [`TYPES`].
pub const TOGGLE: usize = 1;
/// Index of `scan-write` in [`TYPES`].
pub const SCAN_WRITE: usize = 2;
/// Most slots in all (the key space is meant to be small and hot).
pub const MAX_SLOTS: u64 = 1 << 20;
/// Point lookups of random slots per `scan` transaction.
pub const PROBES: usize = 2;

/// The tag a row inserted by thread `thread` (0-based) in its transaction
/// `seq` holds: thread plus one in the high 24 bits, `seq` in the low 40.
#[inline]
pub fn tag(thread: usize, seq: u64) -> u64 {
    ((thread as u64 + 1) << 40) | (seq & ((1 << 40) - 1))
}

/// The default mix.
pub fn default_mix() -> Mix {
    Mix::new(TYPES, &[25.0, 25.0, 50.0]).expect("a valid mix")
}

/// Parameters of the workload.
#[derive(Clone, Debug, PartialEq)]
pub struct PredicateConfig {
    /// Key ranges (each with its count row).
    pub ranges: u64,
    /// Slots per range.
    pub range_rows: u64,
    /// Shares of the transaction types.
    pub mix: Mix,
    /// Read a range with a primary-key range scan (true), or slot by slot
    /// with declared point reads (false: BOHM and ordered 2PL, which cannot
    /// declare a range).
    pub range_scans: bool,
    /// A committed `scan` must see as many rows as its count row says: true
    /// at every level but read committed, whose reads see no single state.
    pub consistent_reads: bool,
    /// Each count row also lists, after its count, the 8-byte tag (big
    /// endian) of every toggle of its range, appended by the toggle in its
    /// update of the count: the count rows then order the toggles for a
    /// black-box check of another store's scans
    /// ([`crate::Workload::guarded_ranges`]). Off: the count alone.
    pub tagged_counts: bool,
}

impl Default for PredicateConfig {
    /// Four ranges of eight slots, the default mix, range scans, consistent
    /// reads, untagged counts.
    fn default() -> PredicateConfig {
        PredicateConfig {
            ranges: 4,
            range_rows: 8,
            mix: default_mix(),
            range_scans: true,
            consistent_reads: true,
            tagged_counts: false,
        }
    }
}

impl PredicateConfig {
    /// Checks the parameters; the error is a one-line message.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.ranges == 0 || self.range_rows == 0 {
            return Err("--predicate-ranges and --predicate-range-rows must be at least 1".into());
        }
        if self.ranges.saturating_mul(self.range_rows) > MAX_SLOTS {
            return Err(format!("--predicate-ranges × --predicate-range-rows: at most {MAX_SLOTS} slots"));
        }
        Ok(())
    }

    /// Slots in all.
    pub fn slots(&self) -> u64 {
        self.ranges * self.range_rows
    }

    /// Rows the load puts in range `r` (every even slot).
    pub fn loaded_rows(&self) -> u64 {
        self.range_rows.div_ceil(2)
    }
}

/// The workload, bound to its tables in one database.
#[derive(Debug)]
pub struct Predicate {
    cfg: PredicateConfig,
    rows: TableId,
    counts: TableId,
    primary: IndexId,
    /// Per range, the net change (inserts minus deletes) of the committed
    /// toggles of finished workers (two's complement).
    net: Vec<AtomicU64>,
    /// Committed scans of finished workers, and those that saw a number of
    /// rows other than their count rows said (with the first example).
    scans: AtomicU64,
    mismatches: Mutex<(u64, Option<String>)>,
}

impl Predicate {
    /// Validates `cfg` and creates the two tables in `db`.
    pub fn setup<S: Store>(db: &S, cfg: PredicateConfig) -> std::result::Result<Predicate, String> {
        cfg.validate()?;
        let rows = db.create_table(TableSpec::ordered(ROWS)).map_err(|e| e.to_string())?;
        let counts = db.create_table(TableSpec::hash(COUNTS, cfg.ranges as usize)).map_err(|e| e.to_string())?;
        Ok(Predicate {
            net: (0..cfg.ranges).map(|_| AtomicU64::new(0)).collect(),
            primary: db.primary(rows),
            cfg,
            rows,
            counts,
            scans: AtomicU64::new(0),
            mismatches: Mutex::new((0, None)),
        })
    }

    /// The parameters.
    pub fn config(&self) -> &PredicateConfig {
        &self.cfg
    }

    /// The table of rows.
    pub fn rows_table(&self) -> TableId {
        self.rows
    }

    /// The table of count rows.
    pub fn counts_table(&self) -> TableId {
        self.counts
    }

    /// Committed scans of the finished workers, and how many of them saw a
    /// number of rows other than their count rows said.
    pub fn scans(&self) -> (u64, u64) {
        // Relaxed: read after the workers were joined.
        (self.scans.load(Ordering::Relaxed), self.mismatches.lock().map_or(0, |m| m.0))
    }

    /// Per range, `(count row, rows present)`, read in one transaction.
    fn state<S: Store>(&self, db: &S) -> std::result::Result<Vec<(u64, u64)>, String> {
        let mut t = db.begin_check().map_err(|e| e.to_string())?;
        let mut out = Vec::with_capacity(self.cfg.ranges as usize);
        for r in 0..self.cfg.ranges {
            let count = t.get_with(self.counts, &Key::from_u64(r), decode).map_err(|e| e.to_string())?;
            let count = match count {
                None => return Err(format!("the count row of range {r} is missing")),
                Some(None) => {
                    return Err(format!("the count row of range {r} does not hold an 8-byte count (and 8-byte tags)"))
                }
                Some(Some(c)) => c,
            };
            let mut present = 0;
            for s in 0..self.cfg.range_rows {
                let k = r * self.cfg.range_rows + s;
                match t.get_with(self.rows, &Key::from_u64(k), |v| v.len()).map_err(|e| e.to_string())? {
                    Some(8) => present += 1,
                    Some(n) => return Err(format!("row {k} holds {n} bytes, not an 8-byte tag")),
                    None => {}
                }
            }
            out.push((count, present));
        }
        t.commit().map_err(|e| e.to_string())?;
        Ok(out)
    }

    /// Every count row equals the rows present in its range; returns the rows in all.
    fn check_counts(&self, state: &[(u64, u64)]) -> std::result::Result<u64, String> {
        for (r, &(count, present)) in state.iter().enumerate() {
            if count != present {
                return Err(format!("range {r} holds {present} rows, but its count row says {count}"));
            }
        }
        Ok(state.iter().map(|s| s.1).sum())
    }
}

/// A count row's count: its first 8 bytes (little-endian), followed by
/// whole 8-byte tags when the counts are tagged.
#[inline]
fn decode(v: &[u8]) -> Option<u64> {
    if v.len() < 8 || v.len() % 8 != 0 {
        return None;
    }
    Some(u64::from_le_bytes(v[..8].try_into().ok()?))
}

impl Workload for Predicate {
    type Worker<'w> = PredicateWorker<'w>;

    fn name(&self) -> &'static str {
        crate::Kind::Predicate.name()
    }

    fn params(&self) -> Vec<(&'static str, Param)> {
        vec![
            ("ranges", Param::Int(self.cfg.ranges)),
            ("range_rows", Param::Int(self.cfg.range_rows)),
            ("mix", Param::Str(self.cfg.mix.to_string())),
            ("range_scans", Param::Bool(self.cfg.range_scans)),
        ]
    }

    fn txn_types(&self) -> &'static [&'static str] {
        TYPES
    }

    fn load_size(&self) -> u64 {
        self.cfg.ranges
    }

    /// One transaction per range: its even slots and its count row.
    fn load<S: Store>(&self, db: &S, part: usize, parts: usize, progress: &(impl Fn(u64) + Sync)) -> Result<()> {
        for r in crate::split_range(self.cfg.ranges, part, parts) {
            db.load_txn(|t| {
                for s in (0..self.cfg.range_rows).step_by(2) {
                    t.insert(self.rows, Key::from_u64(r * self.cfg.range_rows + s), &0u64.to_le_bytes())?;
                }
                t.insert(self.counts, Key::from_u64(r), &self.cfg.loaded_rows().to_le_bytes())
            })?;
            progress(1);
        }
        Ok(())
    }

    fn worker(&self, thread: usize, seed: u64) -> PredicateWorker<'_> {
        PredicateWorker {
            w: self,
            rng: SmallRng::seed_from_u64(seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            thread,
            seq: 0,
            ty: SCAN,
            scan: None,
            probes: [0; PROBES],
            toggle: 0,
            seen: None,
            delta: 0,
            net: vec![0; self.cfg.ranges as usize],
            scans: 0,
            mismatches: 0,
            example: None,
        }
    }

    fn check_consistency<S: Store>(&self, db: &S) -> std::result::Result<String, String> {
        let state = self.state(db)?;
        let total = self.check_counts(&state)?;
        for (r, &(count, _)) in state.iter().enumerate() {
            // Relaxed: read after the workers were joined.
            let net = self.net[r].load(Ordering::Relaxed) as i64;
            let want = self.cfg.loaded_rows() as i64 + net;
            if count as i64 != want {
                return Err(format!(
                    "range {r} holds {count} rows, but the load's {} and the committed toggles' net {net:+} make {want}",
                    self.cfg.loaded_rows()
                ));
            }
        }
        let (scans, bad) = self.scans();
        if self.cfg.consistent_reads && bad > 0 {
            let example = self.mismatches.lock().ok().and_then(|m| m.1.clone()).unwrap_or_default();
            return Err(format!("{bad} of {scans} committed scans saw a phantom: {example}"));
        }
        let scans = if self.cfg.consistent_reads {
            format!("; each of the {scans} committed scans saw as many rows as its count rows said")
        } else {
            String::new()
        };
        Ok(format!(
            "{} ranges: each count row equals its rows ({total} in all), as the committed toggles left them{scans}",
            self.cfg.ranges
        ))
    }

    /// With tagged counts: the rows table, each range's slots guarded by its
    /// count row (the count before the tags), the load's rows.
    fn guarded_ranges(&self) -> Option<crate::GuardedRanges> {
        let c = &self.cfg;
        c.tagged_counts.then(|| crate::GuardedRanges {
            rows: self.rows.raw(),
            ranges: (0..c.ranges)
                .map(|r| {
                    let (lo, hi) = (Key::from_u64(r * c.range_rows), Key::from_u64((r + 1) * c.range_rows));
                    (lo, hi, self.counts.raw(), Key::from_u64(r))
                })
                .collect(),
            guard_prefix: 8,
            initial: (0..c.slots())
                .filter(|s| s % c.range_rows % 2 == 0)
                .map(|s| (Key::from_u64(s), 0u64.to_le_bytes().to_vec()))
                .collect(),
        })
    }

    fn check_state<S: Store>(&self, db: &S) -> std::result::Result<crate::StateCheck, String> {
        let total = self.check_counts(&self.state(db)?)?;
        Ok(crate::StateCheck {
            checked: format!("{} ranges: each count row equals its rows ({total} in all)", self.cfg.ranges),
            needs_run: "the rows against the committed toggles".into(),
        })
    }
}

/// One thread's generator for the predicate workload.
pub struct PredicateWorker<'w> {
    w: &'w Predicate,
    rng: SmallRng,
    thread: usize,
    /// Transactions drawn so far (the current one's number).
    seq: u64,
    ty: usize,
    /// The range read (`None`: the whole table, `scan` only).
    scan: Option<u64>,
    /// `scan`: the slots looked up by key.
    probes: [u64; PROBES],
    /// `toggle` and `scan-write`: the slot toggled.
    toggle: u64,
    /// `scan`, last attempt: the rows the scan saw and the count it read.
    seen: Option<(u64, u64)>,
    /// `toggle` and `scan-write`, last attempt: +1 (insert) or -1 (delete).
    delta: i64,
    /// Per range, the net change of this worker's committed toggles.
    net: Vec<i64>,
    scans: u64,
    mismatches: u64,
    example: Option<String>,
}

impl PredicateWorker<'_> {
    /// The current transaction's range read (`None`: the whole table), its
    /// probed slots (`scan`) and its toggled slot (`toggle`, `scan-write`).
    pub fn inputs(&self) -> (Option<u64>, [u64; PROBES], u64) {
        (self.scan, self.probes, self.toggle)
    }

    /// The slots of the range read (every slot for the whole table).
    fn scanned(&self) -> std::ops::Range<u64> {
        let c = &self.w.cfg;
        match self.scan {
            Some(r) => r * c.range_rows..(r + 1) * c.range_rows,
            None => 0..c.slots(),
        }
    }

    /// The ranges whose count rows a `scan` reads.
    fn counted(&self) -> std::ops::Range<u64> {
        match self.scan {
            Some(r) => r..r + 1,
            None => 0..self.w.cfg.ranges,
        }
    }

    /// Reads the range: returns the rows present.
    fn read_range<T: Txn>(&self, t: &mut T) -> Result<u64, TxnError> {
        let slots = self.scanned();
        let mut n = 0;
        if self.w.cfg.range_scans {
            let range = Key::from_u64(slots.start)..Key::from_u64(slots.end);
            t.scan(self.w.primary, range, None, |_, _| {
                n += 1;
                true
            })?;
        } else {
            for k in slots {
                n += t.get_with(self.w.rows, &Key::from_u64(k), |_| ())?.is_some() as u64;
            }
        }
        Ok(n)
    }

    /// Inserts a row in the toggled slot, or deletes the one there, and
    /// keeps its range's count row; returns +1 or -1.
    fn toggle<T: Txn>(&self, t: &mut T) -> Result<i64, TxnError> {
        let (table, k) = (self.w.rows, Key::from_u64(self.toggle));
        let present = t.get_with(table, &k, |_| ())?.is_some();
        let r =
            if present { t.delete(table, &k) } else { t.insert(table, k, &tag(self.thread, self.seq).to_le_bytes()) };
        match r {
            // Changed since the lookup (read committed): the premise is gone.
            Err(Error::KeyNotFound | Error::DuplicateKey) => return Err(TxnError::Rollback),
            r => r?,
        }
        let delta = if present { -1 } else { 1 };
        let range = self.toggle / self.w.cfg.range_rows;
        let mut bad = false;
        let count = Key::from_u64(range);
        let r = if self.w.cfg.tagged_counts {
            let tag = tag(self.thread, self.seq);
            t.update_with(self.w.counts, &count, |old, new| {
                new.extend_from_slice(old);
                match decode(old) {
                    Some(c) => new[..8].copy_from_slice(&c.wrapping_add_signed(delta).to_le_bytes()),
                    None => bad = true,
                }
                new.extend_from_slice(&tag.to_be_bytes());
            })
        } else {
            t.modify(self.w.counts, &count, |v| match decode(v) {
                Some(c) => v[..8].copy_from_slice(&c.wrapping_add_signed(delta).to_le_bytes()),
                None => bad = true,
            })
        };
        match r {
            Err(Error::KeyNotFound) => {
                return Err(TxnError::Invariant(format!("the count row of range {range} is missing (an engine bug)")))
            }
            r => r?,
        }
        if bad {
            return Err(TxnError::Invariant(format!("the count row of range {range} does not hold an 8-byte count")));
        }
        Ok(delta)
    }
}

impl Worker for PredicateWorker<'_> {
    fn next_txn(&mut self) {
        self.seq += 1;
        let c = &self.w.cfg;
        self.ty = c.mix.draw(rand::RngCore::next_u64(&mut self.rng));
        let range = below(&mut self.rng, c.ranges);
        self.scan = match self.ty {
            SCAN if below(&mut self.rng, 4) == 0 => None,
            _ => Some(range),
        };
        for p in &mut self.probes {
            *p = below(&mut self.rng, c.slots());
        }
        self.toggle = below(&mut self.rng, c.slots());
    }

    fn execute<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        self.seen = None;
        match self.ty {
            SCAN => {
                let mut count = 0u64;
                for r in self.counted() {
                    let v = t.get_with(self.w.counts, &Key::from_u64(r), decode)?;
                    let c = v.flatten().ok_or_else(|| {
                        TxnError::Invariant(format!("the count row of range {r} is missing or not 8 bytes"))
                    })?;
                    // Wrapping: a broken protocol (a fault test) may drive a count below zero.
                    count = count.wrapping_add(c);
                }
                let n = self.read_range(t)?;
                for &p in &self.probes {
                    t.get_with(self.w.rows, &Key::from_u64(p), |_| ())?;
                }
                self.seen = Some((n, count));
            }
            TOGGLE => self.delta = self.toggle(t)?,
            _ => {
                self.read_range(t)?;
                self.delta = self.toggle(t)?;
            }
        }
        Ok(())
    }

    #[inline]
    fn txn_type(&self) -> usize {
        self.ty
    }

    #[inline]
    fn options(&self, run: TxnOptions<'static>) -> TxnOptions<'static> {
        TxnOptions { read_only: self.ty == SCAN, ..run }
    }

    fn committed(&mut self) {
        if self.ty == SCAN {
            self.scans += 1;
            if let Some((n, count)) = self.seen {
                if n != count {
                    self.mismatches += 1;
                    if self.example.is_none() {
                        let what = self.scan.map_or("the whole table".into(), |r| format!("range {r}"));
                        self.example = Some(format!(
                            "thread {} transaction {} scanned {what} and got {n} rows, but read a count of {count}",
                            self.thread, self.seq
                        ));
                    }
                }
            }
        } else {
            self.net[(self.toggle / self.w.cfg.range_rows) as usize] += self.delta;
        }
    }

    fn finish(&mut self) {
        // Relaxed: the harness joins the workers before the check reads them.
        for (r, n) in self.net.iter_mut().enumerate() {
            self.w.net[r].fetch_add(*n as u64, Ordering::Relaxed);
            *n = 0;
        }
        self.w.scans.fetch_add(std::mem::take(&mut self.scans), Ordering::Relaxed);
        if let Ok(mut m) = self.w.mismatches.lock() {
            m.0 += std::mem::take(&mut self.mismatches);
            if m.1.is_none() {
                m.1 = self.example.take();
            }
        }
    }

    /// The slots read (every slot of the range, when ranges are read slot
    /// by slot) and the count rows; the toggled slot and its count row are
    /// both read and written. Each list without repeats.
    fn declare(&self, access: &mut AccessSet) -> bool {
        access.reads.clear();
        access.writes.clear();
        let (rows, counts) = (self.w.rows, self.w.counts);
        let scanned = self.scanned();
        if self.ty != TOGGLE {
            access.reads.extend(scanned.clone().map(|k| (rows, Key::from_u64(k))));
        }
        if self.ty == SCAN {
            access.reads.extend(self.counted().map(|r| (counts, Key::from_u64(r))));
            for (i, &p) in self.probes.iter().enumerate() {
                if !scanned.contains(&p) && !self.probes[..i].contains(&p) {
                    access.reads.push((rows, Key::from_u64(p)));
                }
            }
            return true;
        }
        let range = Key::from_u64(self.toggle / self.w.cfg.range_rows);
        if self.ty == TOGGLE || !scanned.contains(&self.toggle) {
            access.reads.push((rows, Key::from_u64(self.toggle)));
        }
        access.reads.push((counts, range.clone()));
        access.writes.extend([(rows, Key::from_u64(self.toggle)), (counts, range)]);
        true
    }
}
