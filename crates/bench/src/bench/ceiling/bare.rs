//! `bench --protocol bare`: the bare-hardware ceiling.
//!
//! `--protocol none` measures the engine's own storage with no concurrency
//! control: the same key encoding, hash index, chain walk and record
//! layout as a transaction's. What a user would compute as the physical
//! ceiling of the hekaton workload is less than that: a fixed-size
//! open-addressing table of `u64` keys with the record beside its key,
//! read and written with plain loads and stores. [`BareTable`] is that
//! table, and [`BareTxn`] runs the workload's own transaction code on it,
//! as [`super::CeilingTxn`] does on the no-CC copy. A protocol's
//! throughput divided by this run's is the share of the hardware it keeps;
//! divided by `none`'s, the share of the engine's storage.
//!
//! **Layout.** One slot per key, `2^k` slots for at most three quarters of
//! them full, each slot a power of two of 8-byte words inside one 64-byte
//! line (the table's lines are 64-byte aligned, so a slot never straddles
//! two):
//!
//! ```text
//!  word 0      words 1..=W            padding to a power of two
//! +----------+----------------------+---------+
//! | key      | record (W words)     |  ...    |   W ≤ 7: record ≤ 56 bytes
//! +----------+----------------------+---------+
//!  key = EMPTY (u64::MAX): a free slot
//! ```
//!
//! A key's home slot is Fibonacci hashing of the key (its top bits after a
//! multiplication by 2^64/φ); a lookup probes linearly from there until it
//! meets the key or an empty slot. The table never grows and never
//! deletes.
//!
//! **This is not a database.** Every word is one relaxed atomic, so
//! concurrent writers of one record race memory-safely and a reader may see
//! a mix of two writes; nothing is isolated, logged or versioned.

use multiverse::{Error, Isolation, Key, Result, TableId, TxnOptions};
use std::sync::atomic::{AtomicU64, Ordering};

/// The name of the line (`--protocol bare`, a `bare` line of `compare`).
pub const NAME: &str = "bare";

/// A free slot's key word (so the key `u64::MAX` itself cannot be stored).
const EMPTY: u64 = u64::MAX;

/// Words of a record at most: a key word and a record fill one line.
const MAX_WORDS: usize = 7;

/// One 64-byte line of slots (the unit of alignment).
#[repr(C, align(64))]
struct Line([AtomicU64; 8]);

/// A fixed-size open-addressing hash table of `u64` keys and fixed-size
/// records (see the [module documentation](self)).
pub struct BareTable {
    lines: Box<[Line]>,
    /// Slots minus one (slots are a power of two).
    mask: u64,
    /// `64 - log2(slots)`: the shift of Fibonacci hashing.
    shift: u32,
    /// Words per slot: the key and the record, rounded up to a power of two.
    stride: usize,
    /// Bytes of every record.
    bytes: usize,
    /// Rows inserted (Relaxed: a count, read after the copy).
    rows: AtomicU64,
}

impl std::fmt::Debug for BareTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BareTable").field("rows", &self.len()).field("record_bytes", &self.bytes).finish()
    }
}

impl BareTable {
    /// A table for `capacity` keys with records of `record_bytes` bytes
    /// (at most 56).
    pub fn new(capacity: u64, record_bytes: usize) -> std::result::Result<BareTable, String> {
        if record_bytes > MAX_WORDS * 8 {
            return Err(format!(
                "the bare ceiling keeps a record beside its key in one cache line: {record_bytes}-byte records are \
                 over its {} bytes",
                MAX_WORDS * 8
            ));
        }
        let stride = (1 + record_bytes.div_ceil(8)).next_power_of_two();
        // At most three quarters full.
        let want = capacity.max(3).saturating_mul(4).div_ceil(3);
        let slots = want.checked_next_power_of_two().ok_or_else(|| format!("{capacity} rows do not fit"))?;
        let words = usize::try_from(slots)
            .ok()
            .and_then(|s| s.checked_mul(stride))
            .ok_or_else(|| format!("{capacity} rows do not fit this machine"))?;
        crate::bench::check_bytes((words * 8) as u64, "the bare ceiling's table")?;
        let lines = (0..words.div_ceil(8))
            .map(|_| Line(std::array::from_fn(|_| AtomicU64::new(EMPTY))))
            .collect::<Box<[Line]>>();
        Ok(BareTable {
            lines,
            mask: slots - 1,
            shift: 64 - slots.trailing_zeros(),
            stride,
            bytes: record_bytes,
            rows: AtomicU64::new(0),
        })
    }

    /// Rows inserted.
    pub fn len(&self) -> u64 {
        // Relaxed: a count.
        self.rows.load(Ordering::Relaxed)
    }

    /// Word `w` of the table.
    #[inline(always)]
    fn word(&self, w: usize) -> &AtomicU64 {
        &self.lines[w / 8].0[w % 8]
    }

    /// The home slot of `k`.
    #[inline(always)]
    fn home(&self, k: u64) -> u64 {
        k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift
    }

    /// The first word of `k`'s slot, or of the empty slot ending its probe.
    #[inline]
    fn probe(&self, k: u64) -> (usize, bool) {
        let mut s = self.home(k);
        loop {
            let w = s as usize * self.stride;
            // Relaxed: keys are written once, before the run's threads start.
            match self.word(w).load(Ordering::Relaxed) {
                x if x == k => return (w, true),
                EMPTY => return (w, false),
                _ => s = (s + 1) & self.mask,
            }
        }
    }

    /// Inserts a row (one thread: the copy before the run).
    pub fn insert(&self, k: u64, record: &[u8]) -> std::result::Result<(), String> {
        if k == EMPTY {
            return Err(format!("the bare ceiling cannot store key {k} (it marks a free slot)"));
        }
        if record.len() != self.bytes {
            return Err(format!("the bare ceiling holds {}-byte records, not {}", self.bytes, record.len()));
        }
        if self.len() >= (self.mask + 1) / 4 * 3 {
            return Err("the bare ceiling's table is full".into());
        }
        let (w, found) = self.probe(k);
        if found {
            return Err(format!("key {k} copied twice into the bare ceiling"));
        }
        self.store(w, record);
        // Relaxed: published to the workers by spawning them.
        self.word(w).store(k, Ordering::Relaxed);
        self.rows.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Copies `record` into the record words of the slot at word `w`.
    #[inline(always)]
    fn store(&self, w: usize, record: &[u8]) {
        for (j, c) in record.chunks(8).enumerate() {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            // Relaxed: no concurrency control (module docs).
            self.word(w + 1 + j).store(u64::from_ne_bytes(b), Ordering::Relaxed);
        }
    }

    /// Calls `f` with the record of `k` (a copy of its words), or returns
    /// `None` if there is none.
    #[inline]
    pub fn get_with<R>(&self, k: u64, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let (w, found) = self.probe(k);
        if !found {
            return None;
        }
        let mut buf = [0u8; MAX_WORDS * 8];
        for j in 0..self.bytes.div_ceil(8) {
            // Relaxed: no concurrency control (module docs).
            let x = self.word(w + 1 + j).load(Ordering::Relaxed);
            buf[j * 8..j * 8 + 8].copy_from_slice(&x.to_ne_bytes());
        }
        Some(f(&buf[..self.bytes]))
    }

    /// Copies `record` over the record of `k`.
    #[inline]
    pub fn update(&self, k: u64, record: &[u8]) -> Result<()> {
        if record.len() != self.bytes {
            return Err(Error::InvalidArgument(format!(
                "the bare ceiling's records are {} bytes, not {}",
                self.bytes,
                record.len()
            )));
        }
        let (w, found) = self.probe(k);
        if !found {
            return Err(Error::KeyNotFound);
        }
        self.store(w, record);
        Ok(())
    }

    /// A prefetch hint for the home slot of `k`.
    #[inline(always)]
    pub fn prefetch(&self, k: u64) {
        let w = self.home(k) as usize * self.stride;
        let p = self.word(w) as *const AtomicU64 as *const i8;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint: it neither faults nor changes
        // program state, whatever the address.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = p;
    }
}

/// The `u64` of an 8-byte key (`Key::from_u64`), or why the bare ceiling
/// cannot take it.
#[inline]
fn key_u64(key: &Key) -> Result<u64> {
    key.to_u64().ok_or_else(|| Error::InvalidArgument("the bare ceiling takes 8-byte (u64) keys only".into()))
}

/// Copies every row of `table` (just loaded into `db`, `rows` of them)
/// into a new bare table.
pub fn copy_table(db: &multiverse::Database, table: TableId, rows: u64) -> std::result::Result<BareTable, String> {
    let opts = TxnOptions { read_only: true, ..TxnOptions::new(Isolation::ReadCommitted) };
    let mut t = db.begin_with(opts).map_err(|e| e.to_string())?;
    let mut bare: Option<BareTable> = None;
    let mut failed = None;
    let mut copy = |k: &Key, v: &[u8]| -> std::result::Result<(), String> {
        let k = k.to_u64().ok_or_else(|| format!("the bare ceiling takes 8-byte (u64) keys only, not {k:?}"))?;
        let b = match &bare {
            Some(b) => b,
            None => bare.insert(BareTable::new(rows, v.len())?),
        };
        b.insert(k, v)
    };
    t.scan(db.primary(table), .., None, |k, v| match copy(k, v) {
        Ok(()) => true,
        Err(e) => {
            failed = Some(format!("copying row {k:?} into the bare table: {e}"));
            false
        }
    })
    .map_err(|e| e.to_string())?;
    t.commit().map_err(|e| e.to_string())?;
    if let Some(e) = failed {
        return Err(e);
    }
    let got = bare.as_ref().map_or(0, BareTable::len);
    if got != rows {
        return Err(format!("the bare table got {got} rows of the {rows} loaded"));
    }
    bare.ok_or_else(|| "no rows to copy into the bare ceiling".into())
}

/// The bare ceiling's consistency check for the hekaton table: every row
/// `0..rows` is there and names its own key (see
/// [`super::check_hekaton`]).
pub fn check_hekaton(bare: &BareTable, rows: u64) -> std::result::Result<String, String> {
    for k in 0..rows {
        match bare.get_with(k, multiverse_workloads::hekaton::decode_payload) {
            None => return Err(format!("bare table: row {k} is missing")),
            Some(Some((key, _, _))) if key == k => {}
            Some(p) => return Err(format!("bare table: row {k} holds {p:?}, not a payload of its own")),
        }
    }
    Ok(format!(
        "bare table: {rows} rows present, each naming its own key (nothing more holds without concurrency control)"
    ))
}

impl super::Rows for &BareTable {
    const KIND: super::Kind = super::Kind::Bare;
    #[inline]
    fn get_with<R>(&self, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        Ok(BareTable::get_with(self, key_u64(key)?, f))
    }
    #[inline]
    fn update(&self, key: &Key, value: &[u8]) -> Result<()> {
        BareTable::update(self, key_u64(key)?, value)
    }
    #[inline]
    fn prefetch(&self, keys: &[Key]) {
        for k in keys.iter().filter_map(Key::to_u64) {
            BareTable::prefetch(self, k);
        }
    }
}

/// One pass of a transaction body over the bare table.
pub type BareTxn<'t> = super::CeilingTxn<&'t BareTable>;

#[cfg(test)]
mod tests {
    use super::*;
    use multiverse::{Database, Options, TableSpec};
    use multiverse_workloads::hekaton::{decode_payload, payload};
    use multiverse_workloads::Txn;

    #[test]
    fn the_table_finds_every_key_and_keeps_records_whole() {
        let t = BareTable::new(1000, 24).unwrap();
        for k in (0..1000u64).rev() {
            t.insert(k * 7, &payload(k * 7, 0, 0)).unwrap();
        }
        assert_eq!(t.len(), 1000);
        for k in 0..1000u64 {
            assert_eq!(t.get_with(k * 7, decode_payload), Some(Some((k * 7, 0, 0))), "key {}", k * 7);
            assert_eq!(t.get_with(k * 7 + 1, |_| ()), None);
        }
        t.update(21, &payload(21, 5, 6)).unwrap();
        assert_eq!(t.get_with(21, decode_payload), Some(Some((21, 5, 6))));
        assert!(matches!(t.update(22, &payload(22, 0, 0)), Err(Error::KeyNotFound)));
        assert!(matches!(t.update(21, b"short"), Err(Error::InvalidArgument(_))));
        assert!(t.insert(21, &payload(21, 0, 0)).unwrap_err().contains("twice"));
        assert!(t.insert(EMPTY, &payload(1, 0, 0)).unwrap_err().contains("free slot"));
        assert!(t.insert(5000, b"x").unwrap_err().contains("24-byte"));
        assert!(BareTable::new(10, 57).unwrap_err().contains("57-byte"));
        // Odd record lengths keep their bytes.
        let u = BareTable::new(4, 13).unwrap();
        u.insert(3, b"thirteen byte").unwrap();
        assert_eq!(u.get_with(3, |v| v.to_vec()), Some(b"thirteen byte".to_vec()));
    }

    #[test]
    fn the_table_refuses_past_three_quarters() {
        let t = BareTable::new(3, 8).unwrap();
        let slots = t.mask + 1;
        let mut k = 0;
        while t.insert(k, &[0; 8]).is_ok() {
            k += 1;
        }
        assert_eq!(k, slots / 4 * 3, "{slots} slots");
        for j in 0..k {
            assert!(t.get_with(j, |_| ()).is_some());
        }
    }

    #[test]
    fn the_copy_runs_the_workload_code_and_refuses_what_it_cannot_do() {
        let db = Database::new(Options::default()).unwrap();
        let t = db.create_table(TableSpec::hash("t", 64)).unwrap().table();
        db.run(Isolation::Serializable, |x| {
            for k in 0..50u64 {
                x.insert(t, Key::from(k), payload(k, 0, 0))?;
            }
            Ok(())
        })
        .unwrap();
        let bare = copy_table(&db, t, 50).unwrap();
        assert!(check_hekaton(&bare, 50).unwrap().contains("50 rows"));
        let mut x = BareTxn::over(&bare, t);
        x.update(t, &Key::from(3), &payload(3, 1, 9)).unwrap();
        assert_eq!(x.get_with(t, &Key::from(3), decode_payload).unwrap(), Some(Some((3, 1, 9))));
        x.update_with(t, &Key::from(4), |old, new| {
            let (k, a, b) = decode_payload(old).unwrap();
            new.extend_from_slice(&payload(k, a + 1, b + 2));
        })
        .unwrap();
        assert_eq!(x.get_with(t, &Key::from(4), decode_payload).unwrap(), Some(Some((4, 1, 2))));
        x.update(t, &Key::from(5), &payload(6, 1, 1)).unwrap();
        assert!(check_hekaton(&bare, 50).unwrap_err().contains("row 5"));
        let e = x.insert(t, Key::from(99), b"x").unwrap_err().to_string();
        assert!(e.contains("--protocol bare") && e.contains("insert"), "{e}");
        assert!(x.get_with(t, &Key::from_bytes(b"abc").unwrap(), |_| ()).is_err());
        let other = db.create_table(TableSpec::hash("u", 8)).unwrap().table();
        assert!(x.get_with(other, &Key::from(1), |_| ()).is_err());
        assert!(copy_table(&db, t, 51).unwrap_err().contains("50 rows of the 51"));
    }
}
