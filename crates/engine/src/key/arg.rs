//! What a transaction takes as a key ([`IntoKey`]) and as a key range
//! ([`KeyRange`]): one rule for every operation.
//!
//! Every [`crate::Transaction`] method that names a row takes its key as
//! `impl IntoKey`: a [`Key`] by value or by reference, a `u64` (its
//! 8 big-endian bytes, [`Key::from_u64`], so integer keys sort as numbers),
//! or bytes taken as they are (`&str`, `String`, `&[u8]`, `Vec<u8>`,
//! `&[u8; N]`). A borrowed [`Key`] is used in place; anything else becomes a
//! key on the caller's stack (no allocation up to [`crate::KEY_INLINE`]
//! bytes). Bytes longer than [`crate::KEY_MAX`] make the operation fail
//! with [`Error::KeyTooLarge`]; nothing else can fail.
//!
//! Values are `impl AsRef<[u8]>` throughout: `&str`, `String`, `&[u8]`,
//! `Vec<u8>`, `&[u8; N]`.
//!
//! Signed integers, composite keys and other Rust types go through
//! [`crate::KeyBuilder`] or the typed layer ([`crate::TableDefinition`]),
//! whose encodings sort as the values do.

use super::Key;
use crate::Error;
use std::borrow::Cow;
use std::ops::{Bound, Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// A key argument: a [`Key`] (owned or borrowed, a borrowed one used in
/// place), a `u64` (its 8 big-endian bytes, so integer keys sort as
/// numbers), or bytes taken as they are (`&str`, `String`, `&[u8]`,
/// `Vec<u8>`, byte arrays).
///
/// ```
/// use multiverse::{Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::ordered("t")).unwrap();
/// let mut x = db.begin(Isolation::Serializable).unwrap();
/// x.insert(t, "apple", "red").unwrap(); // &str key and value
/// x.insert(t, b"banana", b"yellow").unwrap(); // byte strings
/// x.insert(t, 7, 7u64.to_le_bytes()).unwrap(); // a u64 key
/// x.insert(t, String::from("cherry"), vec![1, 2]).unwrap();
/// let k = Key::from_bytes(b"apple").unwrap();
/// assert_eq!(x.get(t, &k).unwrap(), Some(b"red".to_vec())); // a borrowed Key
/// assert_eq!(x.get(t, k).unwrap(), Some(b"red".to_vec())); // or an owned one
/// assert_eq!(x.get(t, 7).unwrap(), Some(7u64.to_le_bytes().to_vec()));
/// // Too long for a key: the operation fails, the transaction goes on.
/// assert!(x.get(t, "x".repeat(2000)).is_err());
/// x.commit().unwrap();
/// ```
pub trait IntoKey<'a>: Sized {
    /// The key, borrowed when `self` is a `&Key`.
    fn into_key(self) -> Result<Cow<'a, Key>, Error>;

    /// Calls `f` with the key: a `&Key` as it is (no copy, no check: the
    /// lookups' hot path), anything else converted first.
    #[inline(always)]
    fn with_key<R>(self, f: impl FnOnce(&Key) -> R) -> Result<R, Error> {
        let k = self.into_key()?;
        Ok(f(&k))
    }
}

impl<'a> IntoKey<'a> for &'a Key {
    #[inline(always)]
    fn into_key(self) -> Result<Cow<'a, Key>, Error> {
        Ok(Cow::Borrowed(self))
    }

    #[inline(always)]
    fn with_key<R>(self, f: impl FnOnce(&Key) -> R) -> Result<R, Error> {
        Ok(f(self))
    }
}

impl<'a> IntoKey<'a> for Key {
    #[inline(always)]
    fn into_key(self) -> Result<Cow<'a, Key>, Error> {
        Ok(Cow::Owned(self))
    }

    #[inline(always)]
    fn with_key<R>(self, f: impl FnOnce(&Key) -> R) -> Result<R, Error> {
        Ok(f(&self))
    }
}

impl<'a> IntoKey<'a> for u64 {
    #[inline(always)]
    fn into_key(self) -> Result<Cow<'a, Key>, Error> {
        Ok(Cow::Owned(Key::from_u64(self)))
    }

    #[inline(always)]
    fn with_key<R>(self, f: impl FnOnce(&Key) -> R) -> Result<R, Error> {
        Ok(f(&Key::from_u64(self)))
    }
}

/// Byte-like keys: the bytes as they are.
macro_rules! bytes_key {
    ($($t:ty),*) => {$(
        impl<'a> IntoKey<'a> for $t {
            #[inline(always)]
            fn into_key(self) -> Result<Cow<'a, Key>, Error> {
                let b: &[u8] = self.as_ref();
                Key::from_bytes(b).map(Cow::Owned)
            }
        }
    )*};
}
bytes_key!(&str, &String, String, &[u8], &Vec<u8>, Vec<u8>);

impl<'a, const N: usize> IntoKey<'a> for &[u8; N] {
    #[inline(always)]
    fn into_key(self) -> Result<Cow<'a, Key>, Error> {
        Key::from_bytes(self).map(Cow::Owned)
    }
}

impl<'a, const N: usize> IntoKey<'a> for [u8; N] {
    #[inline(always)]
    fn into_key(self) -> Result<Cow<'a, Key>, Error> {
        Key::from_bytes(&self).map(Cow::Owned)
    }
}

/// The key of one end of a range.
#[inline]
fn end<'a>(b: Bound<impl IntoKey<'a>>) -> Result<Bound<Key>, Error> {
    Ok(match b {
        Bound::Included(k) => Bound::Included(k.into_key()?.into_owned()),
        Bound::Excluded(k) => Bound::Excluded(k.into_key()?.into_owned()),
        Bound::Unbounded => Bound::Unbounded,
    })
}

/// A key range: any of Rust's range expressions (`a..b`, `a..=b`, `a..`,
/// `..b`, `..=b`, `..`) or a pair of [`Bound`]s, over any [`IntoKey`].
///
/// ```
/// use multiverse::{Database, Isolation, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::ordered("t")).unwrap();
/// db.run(Isolation::Serializable, |x| ["a", "b", "c", "d"].into_iter().try_for_each(|k| x.insert(t, k, k))).unwrap();
/// let mut x = db.begin(Isolation::Snapshot).unwrap();
/// let keys = |r: multiverse::Range| r.map(|kv| kv.unwrap().1).collect::<Vec<_>>();
/// assert_eq!(keys(x.range(t, "b".."d").unwrap()), [b"b", b"c"]);
/// assert_eq!(keys(x.range(t, "b"..="d").unwrap()), [b"b", b"c", b"d"]);
/// assert_eq!(keys(x.range(t, ..).unwrap()).len(), 4);
/// ```
pub trait KeyRange<'a> {
    /// The range's two ends.
    fn into_bounds(self) -> Result<(Bound<Key>, Bound<Key>), Error>;
}

impl<'a, K: IntoKey<'a>> KeyRange<'a> for Range<K> {
    #[inline]
    fn into_bounds(self) -> Result<(Bound<Key>, Bound<Key>), Error> {
        Ok((end(Bound::Included(self.start))?, end(Bound::Excluded(self.end))?))
    }
}

impl<'a, K: IntoKey<'a>> KeyRange<'a> for RangeInclusive<K> {
    #[inline]
    fn into_bounds(self) -> Result<(Bound<Key>, Bound<Key>), Error> {
        let (lo, hi) = self.into_inner();
        Ok((end(Bound::Included(lo))?, end(Bound::Included(hi))?))
    }
}

impl<'a, K: IntoKey<'a>> KeyRange<'a> for RangeFrom<K> {
    #[inline]
    fn into_bounds(self) -> Result<(Bound<Key>, Bound<Key>), Error> {
        Ok((end(Bound::Included(self.start))?, Bound::Unbounded))
    }
}

impl<'a, K: IntoKey<'a>> KeyRange<'a> for RangeTo<K> {
    #[inline]
    fn into_bounds(self) -> Result<(Bound<Key>, Bound<Key>), Error> {
        Ok((Bound::Unbounded, end(Bound::Excluded(self.end))?))
    }
}

impl<'a, K: IntoKey<'a>> KeyRange<'a> for RangeToInclusive<K> {
    #[inline]
    fn into_bounds(self) -> Result<(Bound<Key>, Bound<Key>), Error> {
        Ok((Bound::Unbounded, end(Bound::Included(self.end))?))
    }
}

impl KeyRange<'_> for RangeFull {
    #[inline]
    fn into_bounds(self) -> Result<(Bound<Key>, Bound<Key>), Error> {
        Ok((Bound::Unbounded, Bound::Unbounded))
    }
}

impl<'a, K: IntoKey<'a>> KeyRange<'a> for (Bound<K>, Bound<K>) {
    #[inline]
    fn into_bounds(self) -> Result<(Bound<Key>, Bound<Key>), Error> {
        Ok((end(self.0)?, end(self.1)?))
    }
}

// `Key::try_from(bytes)`: bytes as a key, failing beyond `KEY_MAX` bytes
// (an example is in `Key::from_bytes`'s docs).
macro_rules! try_from_bytes {
    ($($t:ty),*) => {$(
        impl TryFrom<$t> for Key {
            type Error = Error;
            #[inline]
            fn try_from(b: $t) -> Result<Key, Error> {
                let b: &[u8] = b.as_ref();
                Key::from_bytes(b)
            }
        }
    )*};
}
try_from_bytes!(&str, &String, String, &[u8], &Vec<u8>, Vec<u8>);

#[cfg(test)]
mod tests {
    use super::*;

    fn key<'a>(k: impl IntoKey<'a>) -> Key {
        k.into_key().unwrap().into_owned()
    }

    #[test]
    fn every_form_gives_the_same_key() {
        let want = Key::from_bytes(b"abc").unwrap();
        assert_eq!(key("abc"), want);
        assert_eq!(key(String::from("abc")), want);
        assert_eq!(key(String::from("abc")), want);
        assert_eq!(key(&b"abc"[..]), want);
        assert_eq!(key(b"abc"), want);
        assert_eq!(key(*b"abc"), want);
        assert_eq!(key(b"abc".to_vec()), want);
        assert_eq!(key(b"abc".to_vec()), want);
        assert_eq!(key(&want), want);
        assert_eq!(key(want.clone()), want);
        assert_eq!(key(258), Key::from_u64(258));
    }

    #[test]
    fn a_borrowed_key_is_not_copied() {
        let k = Key::from_bytes(&[7; 100]).unwrap();
        assert!(matches!((&k).into_key().unwrap(), Cow::Borrowed(b) if std::ptr::eq(b, &k)));
    }

    #[test]
    fn oversize_bytes_are_a_typed_error() {
        let long = vec![0u8; crate::KEY_MAX + 1];
        assert_eq!(
            long.as_slice().into_key().unwrap_err(),
            Error::KeyTooLarge { len: long.len(), max: crate::KEY_MAX }
        );
        assert!(Key::try_from(long).is_err());
    }

    #[test]
    fn integer_keys_sort_as_numbers_and_strings_as_bytes() {
        let mut ints: Vec<Key> = [300u64, 2, 70_000, 0].into_iter().map(key).collect();
        ints.sort();
        assert_eq!(ints, [0u64, 2, 300, 70_000].map(Key::from_u64));
        let mut strs: Vec<Key> = ["b", "ab", "a", "ba"].into_iter().map(key).collect();
        strs.sort();
        assert_eq!(strs, ["a", "ab", "b", "ba"].map(key));
    }

    #[test]
    fn ranges_of_every_shape() {
        let b = |k: &str| Key::from_bytes(k.as_bytes()).unwrap();
        use Bound::*;
        assert_eq!(("a".."c").into_bounds().unwrap(), (Included(b("a")), Excluded(b("c"))));
        assert_eq!(("a"..="c").into_bounds().unwrap(), (Included(b("a")), Included(b("c"))));
        assert_eq!(("a"..).into_bounds().unwrap(), (Included(b("a")), Unbounded));
        assert_eq!((.."c").into_bounds().unwrap(), (Unbounded, Excluded(b("c"))));
        assert_eq!((..="c").into_bounds().unwrap(), (Unbounded, Included(b("c"))));
        assert_eq!((..).into_bounds().unwrap(), (Unbounded, Unbounded));
        assert_eq!((Excluded(3), Unbounded).into_bounds().unwrap(), (Excluded(Key::from(3)), Unbounded));
        assert_eq!((1..5).into_bounds().unwrap(), (Included(Key::from(1)), Excluded(Key::from(5))));
        assert!(("a".repeat(2000).as_str()..).into_bounds().is_err());
    }
}
