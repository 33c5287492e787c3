//! The no-concurrency-control ceiling: one table in the engine's own hash
//! index and records, read and written with no concurrency control at all.
//!
//! The benchmark measures every protocol against what the same storage does with
//! nothing on top: a lookup is the same hash of the key, the same bucket
//! word and the same chain walk as a transaction's ([`crate::Key::hash64`],
//! the hash index every hash table uses); a read hands the row's bytes to
//! the caller; a write copies the new bytes over the row in place. There is
//! no Begin/End word to check, no version to allocate, no read set, no
//! lock, no timestamp and no garbage: what a protocol costs above this is
//! its concurrency control (plus, for the multi-version ones, a version per
//! write and its collection).
//!
//! **This is not a database.** Concurrent writers of one row race: a
//! reader may see a mix of two writes (word by word: every word is one
//! relaxed atomic, so the race is memory-safe, but nothing is isolated).
//! It exists for `multiverse bench --protocol none`, the ceiling a
//! protocol's throughput is quoted against.
//!
//! Records are the single-version ones of the locking protocols (the value
//! in whole words, rewritten in place, `Version::alloc_in_place`); none
//! is ever unlinked before the table is dropped. Reads and writes go
//! through a [`Session`], which is pinned (crossbeam-epoch) for its life
//! as a transaction is: a table loaded past its capacity grows its index,
//! and the index separates chains only after every pinned reader that might
//! stand on them has unpinned.

use crate::index::hash::HashIndex;
use crate::storage::version::Version;
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::{Error, Key, Result};

/// Rows up to this many bytes are read through a copy on the stack.
const STACK_ROW: usize = 128;

/// A hash table of rows with no concurrency control, on the engine's index
/// and records (see the [module documentation](self)).
///
/// ```
/// use multiverse::research::ceiling::NoCcTable;
/// use multiverse::Key;
///
/// let t = NoCcTable::new(16);
/// t.insert(&Key::from(1), b"one_").unwrap();
/// let s = t.session();
/// s.update(&Key::from(1), b"uno_").unwrap();
/// assert_eq!(s.get_with(&Key::from(1), |v| v.to_vec()), Some(b"uno_".to_vec()));
/// assert_eq!(s.get_with(&Key::from(2), |v| v.len()), None);
/// assert_eq!(t.len(), 1);
/// ```
pub struct NoCcTable {
    index: HashIndex,
    /// Rows inserted (Relaxed: a count, read after the loaders joined).
    rows: AtomicU64,
    /// Bytes of the first row inserted: how much of a row `prefetch` loads.
    row_bytes: AtomicU64,
}

impl std::fmt::Debug for NoCcTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoCcTable").field("rows", &self.len()).finish()
    }
}

impl NoCcTable {
    /// A table sized for `capacity` rows (the hash index's buckets, as
    /// [`crate::TableSpec::hash`] sizes them).
    ///
    /// ```
    /// let t = multiverse::research::ceiling::NoCcTable::new(1_000);
    /// assert!(t.is_empty());
    /// ```
    pub fn new(capacity: usize) -> NoCcTable {
        NoCcTable {
            index: HashIndex::new(capacity.max(1), 0, None),
            rows: AtomicU64::new(0),
            row_bytes: AtomicU64::new(0),
        }
    }

    /// Inserts a row; [`Error::DuplicateKey`] if `key` is present. Inserts
    /// of distinct keys may run concurrently (the index links by CAS); two
    /// concurrent inserts of one key may both succeed (no concurrency
    /// control), so loaders split the keys.
    ///
    /// ```
    /// use multiverse::research::ceiling::NoCcTable;
    /// use multiverse::{Error, Key};
    ///
    /// let t = NoCcTable::new(4);
    /// t.insert(&Key::from(7), b"row").unwrap();
    /// assert!(matches!(t.insert(&Key::from(7), b"again"), Err(Error::DuplicateKey)));
    /// ```
    pub fn insert(&self, key: &Key, value: &[u8]) -> Result<()> {
        if self.session().find(key).is_some() {
            return Err(Error::DuplicateKey);
        }
        let v = Version::alloc_in_place(key, 1, value, 0);
        // SAFETY: `v` is fresh, live and not linked into any index.
        unsafe { self.index.insert(v.as_ptr(), key.hash64()) };
        // Relaxed (both): counts and a size hint, nothing is published by them.
        if self.rows.fetch_add(1, Ordering::Relaxed) == 0 {
            self.row_bytes.store(v_footprint(v.as_ptr()) as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    /// A session: reads and writes, pinned for its life (one per
    /// transaction of a benchmark worker, as a transaction pins).
    ///
    /// ```
    /// use multiverse::research::ceiling::NoCcTable;
    /// use multiverse::Key;
    ///
    /// let t = NoCcTable::new(4);
    /// t.insert(&Key::from(1), b"x").unwrap();
    /// assert_eq!(t.session().get_with(&Key::from(1), |v| v[0]), Some(b'x'));
    /// ```
    pub fn session(&self) -> Session<'_> {
        Session { table: self, _guard: crossbeam_epoch::pin() }
    }

    /// Rows inserted.
    ///
    /// ```
    /// let t = multiverse::research::ceiling::NoCcTable::new(4);
    /// t.insert(&multiverse::Key::from(1), b"x").unwrap();
    /// assert_eq!(t.len(), 1);
    /// ```
    pub fn len(&self) -> u64 {
        // Relaxed: a count.
        self.rows.load(Ordering::Relaxed)
    }

    /// True if no row was inserted.
    ///
    /// ```
    /// assert!(multiverse::research::ceiling::NoCcTable::new(4).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Reads and writes of a [`NoCcTable`], pinned for the session's life
/// (see [`NoCcTable::session`]).
///
/// ```
/// use multiverse::research::ceiling::NoCcTable;
/// use multiverse::Key;
///
/// let t = NoCcTable::new(4);
/// t.insert(&Key::from(5), b"five").unwrap();
/// let s = t.session();
/// assert_eq!(s.get_with(&Key::from(5), |v| v.len()), Some(4));
/// ```
pub struct Session<'t> {
    table: &'t NoCcTable,
    /// Keeps the index from separating a chain this session may walk.
    _guard: crossbeam_epoch::Guard,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("table", self.table).finish()
    }
}

impl Session<'_> {
    /// The record of `key`, if any: the transactions' lookup (hash, bucket
    /// word, chain walk comparing keys).
    #[inline]
    fn find(&self, key: &Key) -> Option<&Version> {
        let mut p = self.table.index.head(key.hash64());
        while !p.is_null() {
            // SAFETY: records stay linked and alive until `Drop` (`&mut self`),
            // and the session is pinned against a growth separating chains.
            let v = unsafe { &*p };
            if v.key_eq(key) {
                return Some(v);
            }
            p = self.table.index.next(v);
        }
        None
    }

    /// Calls `f` with the row of `key` (a copy of its words: a concurrent
    /// write may tear it), or returns `None` if there is none.
    ///
    /// ```
    /// use multiverse::research::ceiling::NoCcTable;
    /// use multiverse::Key;
    ///
    /// let t = NoCcTable::new(4);
    /// t.insert(&Key::from(3), &42u64.to_le_bytes()).unwrap();
    /// let n = t.session().get_with(&Key::from(3), |v| u64::from_le_bytes(v.try_into().unwrap()));
    /// assert_eq!(n, Some(42));
    /// ```
    #[inline]
    pub fn get_with<R>(&self, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let v = self.find(key)?;
        let n = v.value_len();
        if n <= STACK_ROW {
            // The common case: a short row copied to the stack.
            let mut buf = [0u8; STACK_ROW];
            v.copy_value(&mut buf[..n]);
            Some(f(&buf[..n]))
        } else {
            Some(v.with_value(f))
        }
    }

    /// Copies `value` over the row of `key` in place: [`Error::KeyNotFound`]
    /// if there is none, [`Error::InvalidArgument`] if the length differs
    /// (rows are rewritten in place, so their length is fixed).
    ///
    /// ```
    /// use multiverse::research::ceiling::NoCcTable;
    /// use multiverse::{Error, Key};
    ///
    /// let t = NoCcTable::new(4);
    /// t.insert(&Key::from(1), b"aaaa").unwrap();
    /// let s = t.session();
    /// s.update(&Key::from(1), b"bbbb").unwrap();
    /// assert!(matches!(s.update(&Key::from(2), b"cccc"), Err(Error::KeyNotFound)));
    /// assert!(matches!(s.update(&Key::from(1), b"longer"), Err(Error::InvalidArgument(_))));
    /// ```
    #[inline]
    pub fn update(&self, key: &Key, value: &[u8]) -> Result<()> {
        let v = self.find(key).ok_or(Error::KeyNotFound)?;
        if v.value_len() != value.len() {
            return Err(Error::InvalidArgument(format!(
                "the no-CC table rewrites rows in place: a {}-byte row cannot take {} bytes",
                v.value_len(),
                value.len()
            )));
        }
        v.store_value(value);
        Ok(())
    }

    /// Starts loading the buckets, then the first records, of `keys` into
    /// the cache: what [`crate::Transaction::prefetch`] does for a hash
    /// table.
    ///
    /// ```
    /// use multiverse::research::ceiling::NoCcTable;
    /// use multiverse::Key;
    ///
    /// let t = NoCcTable::new(4);
    /// t.session().prefetch(&[Key::from(1), Key::from(2)]); // a hint: nothing changes
    /// assert!(t.is_empty());
    /// ```
    #[inline]
    pub fn prefetch(&self, keys: &[Key]) {
        for k in keys {
            self.table.index.prefetch_bucket(k.hash64());
        }
        // Relaxed: a size hint.
        let bytes = self.table.row_bytes.load(Ordering::Relaxed) as usize;
        for k in keys {
            self.table.index.prefetch_head(k.hash64(), bytes);
        }
    }
}

/// Bytes of the record at `v`.
fn v_footprint(v: *const Version) -> usize {
    // SAFETY: called on a record just allocated and linked, never freed
    // before the table is dropped.
    unsafe { (*v).footprint() }
}

impl Drop for NoCcTable {
    fn drop(&mut self) {
        let mut all = Vec::new();
        self.index.scan(|v| {
            all.push(v as *const Version as *mut Version);
            true
        });
        for v in all {
            // SAFETY: made by `Version::alloc_in_place`, linked once, and
            // unreachable now: we hold `&mut self`, and the index is
            // dropped right after without touching records.
            unsafe { Version::free(v) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shared between threads as the index is (no `unsafe impl` of our own).
    #[test]
    fn the_table_is_send_and_sync() {
        fn both<T: Send + Sync>() {}
        both::<NoCcTable>();
    }

    #[test]
    fn long_rows_round_trip_too() {
        let t = NoCcTable::new(4);
        let long: Vec<u8> = (0..1_000u32).map(|i| i as u8).collect();
        t.insert(&Key::from(1), &long).unwrap();
        t.insert(&Key::from(2), b"odd").unwrap();
        let s = t.session();
        assert_eq!(s.get_with(&Key::from(1), |v| v.to_vec()), Some(long));
        assert_eq!(s.get_with(&Key::from(2), |v| v.to_vec()), Some(b"odd".to_vec()));
    }

    #[test]
    fn rows_round_trip_and_grow_past_capacity() {
        let t = NoCcTable::new(8);
        for k in 0..1_000u64 {
            t.insert(&Key::from(k), &k.to_le_bytes()).unwrap();
        }
        let s = t.session();
        for k in 0..1_000u64 {
            s.update(&Key::from(k), &(k * 3).to_le_bytes()).unwrap();
        }
        for k in 0..1_000u64 {
            let got = s.get_with(&Key::from(k), |v| u64::from_le_bytes(v.try_into().unwrap()));
            assert_eq!(got, Some(k * 3), "row {k}");
        }
        assert_eq!(t.len(), 1_000);
        assert!(s.get_with(&Key::from(1_000), |_| ()).is_none());
    }

    #[test]
    fn concurrent_writers_of_distinct_rows_lose_nothing() {
        let t = NoCcTable::new(64);
        for k in 0..64u64 {
            t.insert(&Key::from(k), &[0u8; 24]).unwrap();
        }
        std::thread::scope(|s| {
            for th in 0..4u64 {
                let t = &t;
                s.spawn(move || {
                    for round in 1..=200u64 {
                        let s = t.session();
                        for k in (th..64).step_by(4) {
                            let mut row = [0u8; 24];
                            row[..8].copy_from_slice(&round.to_le_bytes());
                            s.update(&Key::from(k), &row).unwrap();
                            // Another thread's rows are read, racing their writer.
                            let other = Key::from((k + 1) % 64);
                            assert_eq!(s.get_with(&other, |v| v.len()), Some(24));
                        }
                    }
                });
            }
        });
        let s = t.session();
        for k in 0..64u64 {
            let r = s.get_with(&Key::from(k), |v| u64::from_le_bytes(v[..8].try_into().unwrap()));
            assert_eq!(r, Some(200), "row {k} holds its writer's last round");
        }
    }

    #[test]
    fn readers_find_every_row_while_loaders_grow_the_index() {
        // 16 buckets to begin with, 100,000 rows: the index grows many times
        // while readers look up rows already in.
        let t = NoCcTable::new(16);
        let done = crate::sync::atomic::AtomicU64::new(0);
        t.insert(&Key::from(0), &0u64.to_le_bytes()).unwrap();
        t.insert(&Key::from(1), &1u64.to_le_bytes()).unwrap();
        std::thread::scope(|s| {
            for th in 0..2u64 {
                let (t, done) = (&t, &done);
                s.spawn(move || {
                    for k in (2 + th..100_000).step_by(2) {
                        t.insert(&Key::from(k), &k.to_le_bytes()).unwrap();
                    }
                    // Relaxed: joined before anyone relies on it.
                    done.fetch_add(1, Ordering::Relaxed);
                });
            }
            let (t, done) = (&t, &done);
            s.spawn(move || {
                let mut x = 1u64;
                // Relaxed: a stop flag.
                while done.load(Ordering::Relaxed) < 2 {
                    let s = t.session();
                    for _ in 0..64 {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        // Rows 0 and 1 went in before the loaders started.
                        let k = (x >> 33) % 2;
                        assert_eq!(s.get_with(&Key::from(k), |v| v.len()), Some(8), "row {k}");
                    }
                }
            });
        });
        let s = t.session();
        for k in 0..100_000u64 {
            let got = s.get_with(&Key::from(k), |v| u64::from_le_bytes(v.try_into().unwrap()));
            assert_eq!(got, Some(k), "row {k}");
        }
    }
}
