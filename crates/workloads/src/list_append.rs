//! A list-append workload in the manner of Jepsen's Elle: every value is a
//! list, and every write appends a tag naming its writer, so the order in
//! which versions were installed can be read from the data itself instead of
//! trusted from the engine's timestamps.
//!
//! The checker's cycle search orders versions by commit timestamp; a
//! protocol whose timestamps lie about the version order (or that loses an
//! append) can hide a cycle from it. With list values,
//! `multiverse_check::check_appends` recovers each key's version order from
//! the values (a version's list is a prefix of every later one's) and
//! compares it with the timestamps (`multiverse bench --workload list-append
//! --verify` runs both checks).
//!
//! Here:
//!
//! * One table, `list_append`, hash-indexed, of lists: a value is a sequence
//!   of 8-byte tags ([`APPEND_TAG_LEN`]). A tag ([`tag`]) names the worker
//!   (plus one, 24 bits), its transaction sequence number (32 bits) and the
//!   operation's index within the transaction (8 bits), big-endian: every
//!   append of a run has its own tag, and a transaction retried after an
//!   abort appends the same tags again (the retry is the same transaction).
//! * `--list-keys` hot slots (default 8). A slot's appends go to one key at a
//!   time: the slot's appends are numbered as they are drawn (one shared
//!   counter per slot) and append number `n` goes to generation
//!   `n / max_len` of the slot, key `generation << 16 | slot`. So no list
//!   ever holds more than `--list-max-len` tags (default 16) and the run
//!   moves on to fresh keys instead of rewriting old ones (`check_appends`
//!   skips keys that were ever deleted). A generation's first append to
//!   commit inserts the key (the list of one tag); later ones update it.
//! * A transaction makes `--list-ops` operations (default 1-4), each a read
//!   of a slot's current key (`--list-read-pct` of them, default 50) or an
//!   append to it. A read of a key not yet inserted finds nothing.
//!
//! Every key is declared (BOHM, ordered 2PL): a read as read, an append as
//! read and written.
//!
//! The consistency check after a run reads every key the run drew and
//! proves that each list is well formed and no longer than the limit, that
//! no tag repeats within a list, that every tag names a transaction its
//! worker drew, and that the lists hold exactly as many tags as the
//! committed transactions appended: no append lost, none applied twice.

use crate::{below, Param, Store, StoreTxn, Txn, TxnError, Worker, Workload};
use multiverse::{AccessSet, Error, Key, Result, TableId, TableSpec, TxnOptions};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Name of the table.
pub const TABLE: &str = "list_append";
/// Bytes of one tag (the checker's `APPEND_TAG_LEN`).
pub const APPEND_TAG_LEN: usize = 8;
/// Most slots.
pub const MAX_KEYS: u64 = 1 << 16;
/// Most operations per transaction (the tag has 8 bits for the index).
pub const MAX_OPS: u32 = 256;

/// The tag appended by operation `op` of transaction `seq` of worker
/// `worker` (0-based).
#[inline]
pub fn tag(worker: usize, seq: u64, op: usize) -> [u8; APPEND_TAG_LEN] {
    (((worker as u64 + 1) & 0xFF_FFFF) << 40 | (seq & 0xFFFF_FFFF) << 8 | (op as u64 & 0xFF)).to_be_bytes()
}

/// Splits a tag into `(worker + 1, seq, op)`.
pub fn split_tag(t: [u8; APPEND_TAG_LEN]) -> (u64, u64, u64) {
    let t = u64::from_be_bytes(t);
    (t >> 40, (t >> 8) & 0xFFFF_FFFF, t & 0xFF)
}

/// The key of generation `generation` of slot `slot`.
#[inline]
pub fn key(slot: u64, generation: u64) -> u64 {
    generation << 16 | slot
}

/// Parameters of the workload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ListAppendConfig {
    /// Hot slots.
    pub keys: u64,
    /// Operations per transaction, `min..=max`.
    pub ops: (u32, u32),
    /// Percent of the operations that are reads (the others append).
    pub read_pct: u32,
    /// Tags per list before a slot moves on to a fresh key.
    pub max_len: u64,
}

impl Default for ListAppendConfig {
    /// Eight slots, one to four operations, half of them reads, lists of up to 16 tags.
    fn default() -> ListAppendConfig {
        ListAppendConfig { keys: 8, ops: (1, 4), read_pct: 50, max_len: 16 }
    }
}

impl ListAppendConfig {
    /// Checks the parameters; the error is a one-line message.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.keys == 0 || self.keys > MAX_KEYS {
            return Err(format!("--list-keys must be between 1 and {MAX_KEYS}"));
        }
        let (lo, hi) = self.ops;
        if lo == 0 || lo > hi || hi > MAX_OPS {
            return Err(format!("--list-ops {lo}-{hi}: give a range within 1-{MAX_OPS}"));
        }
        if self.read_pct > 100 {
            return Err(format!("--list-read-pct {} is not a percentage", self.read_pct));
        }
        if self.max_len == 0 || self.max_len > 1 << 16 {
            return Err("--list-max-len must be between 1 and 65536".into());
        }
        Ok(())
    }
}

/// The workload, bound to its table in one database.
#[derive(Debug)]
pub struct ListAppend {
    cfg: ListAppendConfig,
    table: TableId,
    /// Per slot, the appends drawn so far.
    drawn: Vec<AtomicU64>,
    /// Appends of committed transactions of finished workers.
    appends: AtomicU64,
    /// Per worker, the last transaction sequence number drawn (finished workers).
    last_seq: Mutex<Vec<u64>>,
}

impl ListAppend {
    /// Validates `cfg` and creates the table in `db`.
    pub fn setup<S: Store>(db: &S, cfg: ListAppendConfig) -> std::result::Result<ListAppend, String> {
        cfg.validate()?;
        let table = db.create_table(TableSpec::hash(TABLE, 1 << 12)).map_err(|e| e.to_string())?;
        Ok(ListAppend {
            drawn: (0..cfg.keys).map(|_| AtomicU64::new(0)).collect(),
            cfg,
            table,
            appends: AtomicU64::new(0),
            last_seq: Mutex::new(Vec::new()),
        })
    }

    /// The parameters.
    pub fn config(&self) -> ListAppendConfig {
        self.cfg
    }

    /// The table.
    pub fn table(&self) -> TableId {
        self.table
    }

    /// Appends of the committed transactions of finished workers.
    pub fn committed_appends(&self) -> u64 {
        // Relaxed: read after the workers were joined.
        self.appends.load(Ordering::Relaxed)
    }

    /// Reads every key the run may have written and checks each list;
    /// returns (keys present, tags in all). With `last` (per worker, the
    /// last sequence number drawn), every tag must name a drawn transaction.
    fn check_lists<S: Store>(&self, db: &S, last: Option<&[u64]>) -> std::result::Result<(u64, u64), String> {
        let mut t = db.begin_check().map_err(|e| e.to_string())?;
        let (mut keys, mut tags) = (0u64, 0u64);
        let mut list: Vec<[u8; APPEND_TAG_LEN]> = Vec::new();
        for slot in 0..self.cfg.keys {
            // Relaxed: the workers were joined (or there are none: recovery).
            let drawn = self.drawn[slot as usize].load(Ordering::Relaxed);
            let gens = if last.is_some() { drawn.div_ceil(self.cfg.max_len) } else { u64::MAX };
            for g in 0..gens {
                let k = key(slot, g);
                list.clear();
                let found = t
                    .get_with(self.table, &Key::from_u64(k), |v| {
                        let chunks = v.chunks_exact(APPEND_TAG_LEN);
                        let ragged = !chunks.remainder().is_empty();
                        list.extend(chunks.map(|c| <[u8; APPEND_TAG_LEN]>::try_from(c).expect("8 bytes")));
                        ragged
                    })
                    .map_err(|e| e.to_string())?;
                let Some(ragged) = found else {
                    if last.is_none() {
                        break; // Recovery: the generations end at the first missing key.
                    }
                    continue; // Drawn, but no append committed.
                };
                if ragged {
                    return Err(format!("key {k} (slot {slot}, generation {g}) is not a list of 8-byte tags"));
                }
                if list.is_empty() || list.len() as u64 > self.cfg.max_len {
                    return Err(format!(
                        "key {k} (slot {slot}, generation {g}) holds {} tags (1 to {} expected)",
                        list.len(),
                        self.cfg.max_len
                    ));
                }
                for &tg in &list {
                    let (w, seq, _) = split_tag(tg);
                    let drawn_by = |l: &[u64]| w >= 1 && l.get(w as usize - 1).is_some_and(|&l| seq >= 1 && seq <= l);
                    if w == 0 || !last.is_none_or(drawn_by) {
                        return Err(format!(
                            "key {k} holds tag {:016x}: no such writer transaction",
                            u64::from_be_bytes(tg)
                        ));
                    }
                }
                list.sort_unstable();
                if let Some(p) = list.windows(2).find(|p| p[0] == p[1]) {
                    return Err(format!(
                        "key {k} holds tag {:016x} twice (an append applied twice)",
                        u64::from_be_bytes(p[0])
                    ));
                }
                keys += 1;
                tags += list.len() as u64;
            }
        }
        t.commit().map_err(|e| e.to_string())?;
        Ok((keys, tags))
    }
}

impl Workload for ListAppend {
    type Worker<'w> = ListAppendWorker<'w>;

    fn name(&self) -> &'static str {
        crate::Kind::ListAppend.name()
    }

    fn params(&self) -> Vec<(&'static str, Param)> {
        let c = &self.cfg;
        vec![
            ("keys", Param::Int(c.keys)),
            ("ops", Param::Str(format!("{}-{}", c.ops.0, c.ops.1))),
            ("read_pct", Param::Int(c.read_pct as u64)),
            ("max_len", Param::Int(c.max_len)),
        ]
    }

    /// Nothing: the lists begin empty (a key is inserted by its first append).
    fn load_size(&self) -> u64 {
        0
    }

    fn load<S: Store>(&self, _db: &S, _part: usize, _parts: usize, _progress: &(impl Fn(u64) + Sync)) -> Result<()> {
        Ok(())
    }

    fn worker(&self, thread: usize, seed: u64) -> ListAppendWorker<'_> {
        ListAppendWorker {
            w: self,
            rng: SmallRng::seed_from_u64(seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            thread,
            seq: 0,
            ops: Vec::with_capacity(self.cfg.ops.1 as usize),
            appends: 0,
            committed_appends: 0,
            checksum: 0,
        }
    }

    fn check_consistency<S: Store>(&self, db: &S) -> std::result::Result<String, String> {
        let last = self.last_seq.lock().map_err(|_| "a worker panicked".to_string())?.clone();
        let (keys, tags) = self.check_lists(db, Some(&last))?;
        let want = self.committed_appends();
        if tags != want {
            return Err(format!(
                "the lists hold {tags} tags, but the committed transactions appended {want} (lost or repeated appends)"
            ));
        }
        Ok(format!(
            "{keys} lists of at most {} tags hold exactly the {want} committed appends, each once",
            self.cfg.max_len
        ))
    }

    fn check_state<S: Store>(&self, db: &S) -> std::result::Result<crate::StateCheck, String> {
        let (keys, tags) = self.check_lists(db, None)?;
        Ok(crate::StateCheck {
            checked: format!("{keys} lists of well-formed tags, none repeated, {tags} tags in all"),
            needs_run: "the tags against the committed appends".into(),
        })
    }
}

/// One operation of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    /// True for an append, false for a read.
    pub append: bool,
    /// The key (see [`key`]).
    pub key: u64,
}

/// One thread's generator for the list-append workload.
pub struct ListAppendWorker<'w> {
    w: &'w ListAppend,
    rng: SmallRng,
    thread: usize,
    /// Transactions drawn so far (the current one's number).
    seq: u64,
    ops: Vec<Op>,
    /// Appends of the current transaction.
    appends: u64,
    committed_appends: u64,
    /// Folds the lengths read, so reads cannot be optimized away.
    checksum: u64,
}

impl ListAppendWorker<'_> {
    /// The current transaction's operations.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The current transaction's sequence number (1 for the first).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// A fold of the lengths read (meaningless; keeps reads observable).
    pub fn checksum(&self) -> u64 {
        self.checksum
    }
}

impl Worker for ListAppendWorker<'_> {
    fn next_txn(&mut self) {
        self.seq += 1;
        let c = &self.w.cfg;
        let n = c.ops.0 as u64 + below(&mut self.rng, (c.ops.1 - c.ops.0) as u64 + 1);
        self.ops.clear();
        self.appends = 0;
        for _ in 0..n {
            let slot = below(&mut self.rng, c.keys);
            let append = below(&mut self.rng, 100) >= c.read_pct as u64;
            let counter = &self.w.drawn[slot as usize];
            // Relaxed: a ticket counter; the order of tickets among threads
            // only decides which key an append goes to.
            let ticket = if append {
                self.appends += 1;
                counter.fetch_add(1, Ordering::Relaxed)
            } else {
                counter.load(Ordering::Relaxed).saturating_sub(1)
            };
            self.ops.push(Op { append, key: key(slot, ticket / c.max_len) });
        }
    }

    fn execute<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let table = self.w.table;
        let mut sum = self.checksum;
        for (i, op) in self.ops.iter().enumerate() {
            let k = Key::from_u64(op.key);
            if !op.append {
                let len = t.get_with(table, &k, |v| v.len())?;
                sum = sum.wrapping_add(len.unwrap_or(0) as u64);
                continue;
            }
            let tg = tag(self.thread, self.seq, i);
            let append = |old: &[u8], new: &mut Vec<u8>| {
                new.extend_from_slice(old);
                new.extend_from_slice(&tg);
            };
            // The generation's first append inserts the list; one that
            // finds a list updates it. An insert that finds a row committed
            // since the lookup (read committed) appends to it instead.
            match t.update_with(table, &k, append) {
                Err(Error::KeyNotFound) => match t.insert(table, k.clone(), &tg) {
                    Err(Error::DuplicateKey) => t.update_with(table, &k, append)?,
                    r => r?,
                },
                r => r?,
            }
        }
        self.checksum = sum;
        Ok(())
    }

    #[inline]
    fn options(&self, run: TxnOptions<'static>) -> TxnOptions<'static> {
        TxnOptions { read_only: self.appends == 0, ..run }
    }

    #[inline]
    fn committed(&mut self) {
        self.committed_appends += self.appends;
    }

    fn finish(&mut self) {
        // Relaxed: the harness joins the workers before the check reads it.
        self.w.appends.fetch_add(std::mem::take(&mut self.committed_appends), Ordering::Relaxed);
        if let Ok(mut last) = self.w.last_seq.lock() {
            if last.len() <= self.thread {
                last.resize(self.thread + 1, 0);
            }
            last[self.thread] = last[self.thread].max(self.seq);
        }
    }

    /// Every key read as read, every key appended to as read and written;
    /// each list without repeats.
    fn declare(&self, access: &mut AccessSet) -> bool {
        access.reads.clear();
        access.writes.clear();
        let t = self.w.table;
        for op in &self.ops {
            let k = (t, Key::from_u64(op.key));
            if !access.reads.contains(&k) {
                access.reads.push(k.clone());
            }
            if op.append && !access.writes.contains(&k) {
                access.writes.push(k);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip() {
        assert_eq!(split_tag(tag(0, 5, 3)), (1, 5, 3));
        assert_eq!(split_tag(tag(4095, (1 << 32) - 1, 255)), (4096, (1 << 32) - 1, 255));
        assert_eq!(key(3, 2), (2 << 16) | 3);
    }

    #[test]
    fn config_is_validated() {
        assert!(ListAppendConfig::default().validate().is_ok());
        assert!(ListAppendConfig { keys: 0, ..ListAppendConfig::default() }.validate().is_err());
        assert!(ListAppendConfig { ops: (3, 2), ..ListAppendConfig::default() }.validate().is_err());
        assert!(ListAppendConfig { ops: (0, 2), ..ListAppendConfig::default() }.validate().is_err());
        assert!(ListAppendConfig { read_pct: 101, ..ListAppendConfig::default() }.validate().is_err());
        assert!(ListAppendConfig { max_len: 0, ..ListAppendConfig::default() }.validate().is_err());
    }
}
