//! Iterator scans: [`Transaction::range`] and [`Transaction::prefix`].
//!
//! A [`Range`] walks an ordered index in batches, each batch one scan of the
//! transaction's protocol over what is left of the range, stopped once it
//! has delivered the batch (the first batch one row, each next one twice
//! the last, at most [`MAX_BATCH`]). Every protocol's scan narrows what it
//! claims to what it walked when its caller stops it (MV/O's ScanSet entry,
//! MV/L's and 1V's range locks, Silo's node set, the recorded history), so
//! an iterator dropped after ten rows claims the rows up to its last batch
//! — at most twice what it returned, plus one — not the whole range: under
//! serializable, only that part is validated or locked. (SSN and SSI mark
//! the gaps of a batch's whole remaining range as read: conservative.)
//!
//! The two ends are independent: `next` walks up from the low end,
//! `next_back` down from the high end (a reverse scan of the protocol), and
//! each batch starts just past the rows its end has already taken, so a row
//! is never handed on twice. Rows are copied out of the engine (the key
//! and an owned value per row): the callback [`Transaction::scan`] stays
//! the zero-copy walk, and the iterator is the layer over it.
//!
//! Resuming inside a secondary index, where many rows share one index key,
//! starts at that index key and skips the rows already taken (entries of
//! one index key are ordered by primary key), so a batch boundary inside a
//! group of equal keys loses and repeats nothing.

use super::transaction::Transaction;
use crate::key::{IntoKey, Key, KeyRange};
use crate::table::KeyFn;
use crate::{Error, IndexId, OrderedIndex, Result};
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::ops::Bound;

/// Most rows one batch of an iterator walks.
pub const MAX_BATCH: usize = 256;

/// A row position in an index: (index key, primary key).
type Pos = (Key, Key);

/// A double-ended iterator over the rows of an ordered index in key order,
/// from [`Transaction::range`] or [`Transaction::prefix`]. Items are
/// `Result<(primary key, value)>`: an error (an abort, say) ends the
/// iteration. It borrows the transaction, so it can be returned from a
/// function while the transaction lives.
///
/// ```
/// use multiverse::{Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::ordered("t")).unwrap();
/// db.run(Isolation::Serializable, |tx| {
///     (0..10u64).try_for_each(|k| tx.insert(t, Key::from(k), &k.to_le_bytes()))
/// })
/// .unwrap();
/// let mut tx = db.begin(Isolation::Serializable).unwrap();
/// let ix = db.primary(t);
/// // The three highest keys below 8, highest first.
/// let keys: Vec<u64> = tx
///     .range(ix, ..Key::from(8))
///     .unwrap()
///     .rev()
///     .take(3)
///     .map(|row| row.map(|(k, _)| k.to_u64().unwrap()))
///     .collect::<Result<_, _>>()
///     .unwrap();
/// assert_eq!(keys, [7, 6, 5]);
/// tx.commit().unwrap();
/// ```
pub struct Range<'t, 'db> {
    txn: &'t mut Transaction<'db>,
    index: IndexId,
    /// The index's key function (secondary indexes), to place a delivered
    /// row by its index key.
    key_fn: Option<KeyFn>,
    /// What is left of the range (index keys).
    lo: Bound<Key>,
    hi: Bound<Key>,
    /// The last row each end took: the next batch starts past it.
    after: Option<Pos>,
    before: Option<Pos>,
    /// Rows fetched from the low end, ascending.
    front: VecDeque<(Key, Vec<u8>)>,
    /// Rows fetched from the high end, descending.
    back: VecDeque<(Key, Vec<u8>)>,
    front_batch: usize,
    back_batch: usize,
    /// A batch met the other end: every row left is in `front` or `back`.
    walked: bool,
    /// An error was handed on: the iteration is over.
    failed: bool,
}

impl<'t, 'db> Range<'t, 'db> {
    pub(crate) fn new(txn: &'t mut Transaction<'db>, index: IndexId, lo: Bound<Key>, hi: Bound<Key>) -> Result<Self> {
        let (table, ix) = txn.index_of(index)?;
        if !ix.is_ordered() {
            return Err(Error::Unsupported(format!(
                "index '{}' of table '{}' is a hash index, which keeps no key order: range and prefix \
                 need an ordered index (Transaction::scan walks a hash index in no particular order)",
                ix.name, table.name
            )));
        }
        let key_fn = ix.key_fn;
        Ok(Range {
            txn,
            index,
            key_fn,
            lo,
            hi,
            after: None,
            before: None,
            front: VecDeque::new(),
            back: VecDeque::new(),
            front_batch: 1,
            back_batch: 1,
            walked: false,
            failed: false,
        })
    }

    /// Walks one batch from the low end (`rev` false) or the high end.
    fn fill(&mut self, rev: bool) -> Result<()> {
        let n = if rev { self.back_batch } else { self.front_batch };
        let key_fn = self.key_fn;
        // Borrowed, not cloned: the callback runs once per row.
        let (after, before) = (&self.after, &self.before);
        // Rows go straight to the end's queue (reused from batch to batch).
        let got = if rev { &mut self.back } else { &mut self.front };
        let start = got.len();
        // The index key of the last row taken, for a secondary index (a
        // primary index's is the row's key, the last one in `got`).
        let mut last_ix: Option<Key> = None;
        self.txn.scan_dir(self.index, self.lo.clone(), self.hi.clone(), None, rev, |pk, v| {
            let derived = key_fn.map(|f| f(pk, v));
            let ix = derived.as_ref().unwrap_or(pk);
            // Taken by either end already (a resumed group of equal keys).
            if after.as_ref().is_some_and(|a| cmp(ix, pk, a) != Ordering::Greater)
                || before.as_ref().is_some_and(|b| cmp(ix, pk, b) != Ordering::Less)
            {
                return true;
            }
            got.push_back((pk.clone(), v.to_vec()));
            last_ix = derived;
            got.len() - start < n
        })?;
        if got.len() - start < n {
            self.walked = true;
        } else if let Some((pk, _)) = got.back() {
            // The last row taken (a full batch took at least one).
            let p: Pos = (last_ix.unwrap_or_else(|| pk.clone()), pk.clone());
            // The primary index holds one row per key: resume past it. A
            // secondary index may hold more rows of that key: resume at it
            // and skip what was taken.
            let b = if key_fn.is_none() { Bound::Excluded(p.0.clone()) } else { Bound::Included(p.0.clone()) };
            if rev {
                self.hi = b;
                self.before = Some(p);
                self.back_batch = (n * 2).min(MAX_BATCH);
            } else {
                self.lo = b;
                self.after = Some(p);
                self.front_batch = (n * 2).min(MAX_BATCH);
            }
        }
        Ok(())
    }
}

/// Order of the row at (index key `ix`, primary key `pk`) against position `p`.
fn cmp(ix: &Key, pk: &Key, p: &Pos) -> Ordering {
    ix.cmp(&p.0).then_with(|| pk.cmp(&p.1))
}

impl Iterator for Range<'_, '_> {
    type Item = Result<(Key, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.front.is_empty() && !self.walked {
            if let Err(e) = self.fill(false) {
                self.failed = true;
                return Some(Err(e));
            }
        }
        // Once walked, what the high end fetched is all that is left.
        self.front.pop_front().or_else(|| self.back.pop_back()).map(Ok)
    }
}

impl DoubleEndedIterator for Range<'_, '_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.back.is_empty() && !self.walked {
            if let Err(e) = self.fill(true) {
                self.failed = true;
                return Some(Err(e));
            }
        }
        self.back.pop_front().or_else(|| self.front.pop_back()).map(Ok)
    }
}

impl std::iter::FusedIterator for Range<'_, '_> {}

impl<'db> Transaction<'db> {
    /// The rows of an ordered `index` whose index key lies in `range`, in
    /// key order, as a double-ended iterator of `Result<(primary key,
    /// value)>` (`.rev()` walks from the high end). Rows are read lazily in
    /// batches, so a loop that stops early read (and, under serializable,
    /// validates or locks) only about twice the rows it took; see
    /// [`Range`]. A hash index keeps no key order (walk it with
    /// [`Transaction::scan`]): a [`crate::HashTableId`] does not compile
    /// here ([`OrderedIndex`]), and a [`crate::TableId`] or [`IndexId`]
    /// naming a hash index is refused with [`Error::Unsupported`].
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// let ix = db.primary(t);
    /// db.run(Isolation::Snapshot, |tx| {
    ///     (0..100u64).try_for_each(|k| tx.insert(t, Key::from(k), b"v"))
    /// })
    /// .unwrap();
    /// let mut tx = db.begin(Isolation::Snapshot).unwrap();
    /// let first = tx.range(ix, Key::from(40)..).unwrap().next().unwrap().unwrap();
    /// assert_eq!(first.0, Key::from(40));
    /// assert_eq!(tx.range(ix, Key::from(10)..Key::from(20)).unwrap().count(), 10);
    /// ```
    pub fn range<'k>(&mut self, index: impl OrderedIndex, range: impl KeyRange<'k>) -> Result<Range<'_, 'db>> {
        let (lo, hi) = range.into_bounds()?;
        Range::new(self, index.into(), lo, hi)
    }

    /// The rows of an ordered `index` whose index key starts with `prefix`,
    /// as [`Transaction::range`] returns them.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let orders = db.create_table(TableSpec::ordered("orders")).unwrap();
    /// let key = |d: u32, o: u32| Key::builder().u32(d).u32(o).build().unwrap();
    /// db.run(Isolation::Serializable, |tx| {
    ///     for d in 1..=3 {
    ///         for o in 1..=5 {
    ///             tx.insert(orders, key(d, o), b"")?;
    ///         }
    ///     }
    ///     Ok(())
    /// })
    /// .unwrap();
    /// let mut tx = db.begin(Isolation::Serializable).unwrap();
    /// let district = Key::builder().u32(2).build().unwrap();
    /// // The newest order of district 2.
    /// let (k, _) = tx.prefix(db.primary(orders), &district).unwrap().next_back().unwrap().unwrap();
    /// assert_eq!(k, key(2, 5));
    /// tx.commit().unwrap();
    /// ```
    pub fn prefix<'k>(&mut self, index: impl OrderedIndex, prefix: impl IntoKey<'k>) -> Result<Range<'_, 'db>> {
        let prefix = &*prefix.into_key()?;
        let hi = match prefix.prefix_end() {
            Some(e) => Bound::Excluded(e),
            None => Bound::Unbounded,
        };
        Range::new(self, index.into(), Bound::Included(prefix.clone()), hi)
    }
}
