//! [`TypedKeyRange`]: the ranges [`super::TypedTable::range`] and
//! [`super::TypedTable::iter`] take.

use super::key::{encode_key, AsKey};
use crate::{Key, Result};
use std::ops::{Bound, Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// A range of a typed table's keys `K`: any of Rust's range expressions
/// whose ends are key forms of `K` (`a..b`, `a..=b`, `a..`, `..b`, `..=b`,
/// each end anything [`AsKey<K>`]), `..` for every key (no end to name a
/// type by), or a pair of [`Bound`]s.
///
/// ```
/// use multiverse::{Database, IndexKind, Isolation, Options, TableDefinition};
///
/// const T: TableDefinition<(String, u32), u8> = TableDefinition::new("t");
/// let db = Database::new(Options::default()).unwrap();
/// let t = T.create(&db, IndexKind::Ordered).unwrap();
/// db.run(Isolation::Serializable, |x| {
///     t.insert(x, ("a", 1u32), 1)?;
///     t.insert(x, ("b", 2u32), 2)
/// })
/// .unwrap();
/// let mut x = db.begin(Isolation::Snapshot).unwrap();
/// assert_eq!(t.iter(&mut x, ..).unwrap().count(), 2);
/// assert_eq!(t.iter(&mut x, ("b", 0u32)..).unwrap().count(), 1);
/// ```
pub trait TypedKeyRange<K> {
    /// The range's ends as engine keys (a key whose encoding is too long
    /// is [`crate::Error::KeyTooLarge`]).
    ///
    /// ```
    /// use multiverse::typed::TypedKeyRange;
    /// use multiverse::Key;
    /// use std::ops::Bound;
    ///
    /// let (lo, hi) = TypedKeyRange::<u64>::encode_bounds(&(3u64..5)).unwrap();
    /// assert_eq!((lo, hi), (Bound::Included(Key::from(3)), Bound::Excluded(Key::from(5))));
    /// ```
    fn encode_bounds(&self) -> Result<(Bound<Key>, Bound<Key>)>;
}

/// One end of a range, encoded.
fn end<K, Q: AsKey<K>>(b: Bound<&Q>) -> Result<Bound<Key>> {
    Ok(match b {
        Bound::Included(q) => Bound::Included(encode_key::<K>(q)?),
        Bound::Excluded(q) => Bound::Excluded(encode_key::<K>(q)?),
        Bound::Unbounded => Bound::Unbounded,
    })
}

/// Implements [`TypedKeyRange`] for a range type over `Q: AsKey<K>`
/// through its `RangeBounds`.
macro_rules! ranges {
    ($($ty:ident),*) => {$(
        impl<K, Q: AsKey<K>> TypedKeyRange<K> for $ty<Q> {
            fn encode_bounds(&self) -> Result<(Bound<Key>, Bound<Key>)> {
                use std::ops::RangeBounds;
                Ok((end::<K, Q>(self.start_bound())?, end::<K, Q>(self.end_bound())?))
            }
        }
    )*};
}

ranges!(Range, RangeInclusive, RangeFrom, RangeTo, RangeToInclusive);

impl<K> TypedKeyRange<K> for RangeFull {
    fn encode_bounds(&self) -> Result<(Bound<Key>, Bound<Key>)> {
        Ok((Bound::Unbounded, Bound::Unbounded))
    }
}

impl<K, Q: AsKey<K>> TypedKeyRange<K> for (Bound<Q>, Bound<Q>) {
    fn encode_bounds(&self) -> Result<(Bound<Key>, Bound<Key>)> {
        Ok((end::<K, Q>(self.0.as_ref())?, end::<K, Q>(self.1.as_ref())?))
    }
}
