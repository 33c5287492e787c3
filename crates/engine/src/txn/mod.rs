//! Transactions: the transaction table and its states, the visibility rules
//! of Tables 1 and 2, commit dependencies, and the entries of the
//! per-transaction sets (the sets themselves are the protocols' own:
//! `protocol::sets`).

pub(crate) mod freeze;
pub(crate) mod lock_wait;
pub(crate) mod state;
pub mod table;
pub mod visibility;
pub(crate) mod wait_for;

use crate::key::Key;
use crate::storage::version::Version;
use std::ops::Bound;
use std::sync::Arc;

/// A residual scan predicate over (primary key, value). Shared (`Arc`) so a
/// serializable transaction can keep it in its ScanSet without copying.
///
/// ```
/// use multiverse::{Database, Filter, Isolation, Key, Options, TableSpec};
/// use std::sync::Arc;
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::ordered("t")).unwrap();
/// db.run(Isolation::Serializable, |x| (0..10u64).try_for_each(|k| x.insert(t, Key::from(k), &[k as u8]))).unwrap();
/// let even: Filter = Arc::new(|_pk: &Key, v: &[u8]| v[0] % 2 == 0);
/// let mut seen = vec![];
/// let mut x = db.begin(Isolation::Serializable).unwrap();
/// x.scan(db.primary(t), Key::from(2)..Key::from(8), Some(&even), |pk, _| {
///     seen.push(pk.to_u64().unwrap());
///     true
/// })
/// .unwrap();
/// assert_eq!(seen, [2, 4, 6]);
/// ```
pub type Filter = Arc<dyn Fn(&Key, &[u8]) -> bool + Send + Sync>;

/// One WriteSet entry (section 3.1): the old version (null for an insert) and
/// the new version (null for a delete).
#[derive(Clone, Copy)]
pub(crate) struct WriteEntry {
    pub(crate) table: u32,
    pub(crate) old: *mut Version,
    pub(crate) new: *mut Version,
    /// The row's primary key hashed ([`crate::Key::hash64`]): its bucket in
    /// a primary hash index, for both versions. Computed once by the write,
    /// it goes with the version that becomes garbage to its collector.
    pub(crate) hash: u64,
}

/// What part of an index a scan covered.
#[derive(Clone)]
pub(crate) enum ScanKind {
    /// Equality on the index key (a point lookup is a scan of one key).
    Eq(Key),
    /// A key range (hash indexes: the whole table, filtered by range).
    Range(Bound<Key>, Bound<Key>),
}

/// One ScanSet entry (section 3.1): enough to repeat the scan at validation.
#[derive(Clone)]
pub(crate) struct ScanRecord {
    pub(crate) table: u32,
    pub(crate) index: u8,
    pub(crate) kind: ScanKind,
    pub(crate) filter: Option<Filter>,
    /// The scan's read time: a version that began after it and is visible
    /// at the end timestamp is a phantom (the begin timestamp, except for
    /// scans at the current time under SSN over read committed).
    pub(crate) since: u64,
}

#[cfg(test)]
mod visibility_tests;
