//! The order-preserving key encoding (layout in the [module docs](super)).

use super::decode_error;
use crate::{Key, Result};

/// Something that encodes as a key of type `K`: `K` itself, and borrowed
/// forms of it (`&str` for `String`, `&[u8]` or `&[u8; N]` for `Vec<u8>`,
/// tuples of such parts for a tuple, references to any of these).
///
/// The methods of [`crate::TypedTable`] take their keys as `impl AsKey<K>`,
/// so a lookup needs no owned key. An implementation must write exactly the
/// bytes that `K`'s own encoding writes for the value it stands for.
///
/// ```
/// use multiverse::typed::AsKey;
///
/// let (mut a, mut b) = (Vec::new(), Vec::new());
/// AsKey::<(String, u32)>::encode_key(&("abc", 7u32), &mut a);
/// AsKey::<(String, u32)>::encode_key(&("abc".to_string(), 7u32), &mut b);
/// assert_eq!(a, b);
/// ```
pub trait AsKey<K: ?Sized> {
    /// Appends the encoding of the key `K` this stands for to `out`.
    ///
    /// ```
    /// use multiverse::typed::AsKey;
    ///
    /// let mut out = Vec::new();
    /// AsKey::<String>::encode_key(&"a\0b", &mut out);
    /// assert_eq!(out, b"a\0\xFFb\0\0"); // 0x00 escaped, then the terminator
    /// ```
    fn encode_key(&self, out: &mut Vec<u8>);
}

/// A key type whose encoding sorts as its values do: for any `a` and `b`,
/// `a.cmp(&b)` equals the comparison of their encodings as bytes, and the
/// encoding of one value is never a proper prefix of another's (so tuples
/// of such types sort as the tuples do). The layout is in the
/// [module docs](super). Encoding is [`AsKey::encode_key`], a supertrait.
///
/// ```
/// use multiverse::typed::{AsKey, TypedKey};
///
/// let (mut a, mut b) = (Vec::new(), Vec::new());
/// (3u32, "x", -5i64).encode_key(&mut a);
/// (3u32, "x", 2i64).encode_key(&mut b);
/// assert!(a < b);
/// assert_eq!(<(u32, String, i64)>::decode_key(&a).unwrap(), (3, "x".to_string(), -5));
/// assert!(<(u32, String, i64)>::decode_key(&a[..a.len() - 1]).is_err());
/// ```
pub trait TypedKey: Sized + AsKey<Self> {
    /// Decodes one value from the front of `input` and advances `input`
    /// past it (the part-by-part decoding of tuples). Damaged bytes give
    /// [`crate::Error::Decode`], never a panic.
    ///
    /// ```
    /// use multiverse::typed::{AsKey, TypedKey};
    ///
    /// let mut buf = Vec::new();
    /// AsKey::<String>::encode_key(&"ab", &mut buf);
    /// AsKey::<u8>::encode_key(&7u8, &mut buf);
    /// let mut input = &buf[..];
    /// assert_eq!(String::decode_key_from(&mut input).unwrap(), "ab");
    /// assert_eq!(u8::decode_key_from(&mut input).unwrap(), 7);
    /// assert!(input.is_empty());
    /// ```
    fn decode_key_from(input: &mut &[u8]) -> Result<Self>;

    /// Decodes a value that must fill `bytes` exactly; bytes left over
    /// are an [`crate::Error::Decode`].
    ///
    /// ```
    /// use multiverse::typed::{AsKey, TypedKey};
    ///
    /// let mut b = Vec::new();
    /// AsKey::<i32>::encode_key(&-1i32, &mut b);
    /// assert_eq!(b, [0x7F, 0xFF, 0xFF, 0xFF]); // the sign bit flipped
    /// assert_eq!(i32::decode_key(&b).unwrap(), -1);
    /// assert!(i32::decode_key(&[0; 5]).is_err()); // a byte left over
    /// ```
    fn decode_key(bytes: &[u8]) -> Result<Self> {
        let mut rest = bytes;
        let v = Self::decode_key_from(&mut rest)?;
        if !rest.is_empty() {
            return Err(decode_error::<Self>(format!("{} bytes left over", rest.len())));
        }
        Ok(v)
    }
}

/// The engine [`Key`] of a typed key: its encoding, or
/// [`crate::Error::KeyTooLarge`] when the encoding is longer than
/// [`crate::KEY_MAX`].
///
/// ```
/// use multiverse::typed::encode_key;
/// use multiverse::Key;
///
/// let k = encode_key::<(u32, u32)>((1u32, 2u32)).unwrap();
/// assert_eq!(k, Key::builder().u32(1).u32(2).build().unwrap());
/// assert!(encode_key::<String>("a very long string, longer than any key may be ".repeat(30)).is_err());
/// ```
pub fn encode_key<K>(key: impl AsKey<K>) -> Result<Key> {
    let mut buf = Vec::with_capacity(crate::KEY_MAX.min(64));
    key.encode_key(&mut buf);
    Key::from_bytes(&buf)
}

/// The next `n` bytes of `input`, which it advances past them.
fn take<'a, T>(input: &mut &'a [u8], n: usize) -> Result<&'a [u8]> {
    if input.len() < n {
        return Err(decode_error::<T>(format!("needs {n} bytes, has {}", input.len())));
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Ok(head)
}

/// A key part of a reference encodes as the part it refers to.
impl<K: ?Sized, T: AsKey<K> + ?Sized> AsKey<K> for &T {
    #[inline]
    fn encode_key(&self, out: &mut Vec<u8>) {
        (**self).encode_key(out)
    }
}

macro_rules! unsigned_key {
    ($($t:ty),*) => {$(
        impl AsKey<$t> for $t {
            #[inline]
            fn encode_key(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_be_bytes());
            }
        }
        impl TypedKey for $t {
            fn decode_key_from(input: &mut &[u8]) -> Result<Self> {
                let b = take::<$t>(input, size_of::<$t>())?;
                Ok(<$t>::from_be_bytes(b.try_into().unwrap()))
            }
        }
    )*};
}
unsigned_key!(u8, u16, u32, u64, u128);

macro_rules! signed_key {
    ($($t:ty => $u:ty),*) => {$(
        /// Big-endian with the sign bit flipped: negative values sort first.
        impl AsKey<$t> for $t {
            #[inline]
            fn encode_key(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&((*self as $u) ^ (1 << (<$u>::BITS - 1))).to_be_bytes());
            }
        }
        impl TypedKey for $t {
            fn decode_key_from(input: &mut &[u8]) -> Result<Self> {
                let b = take::<$t>(input, size_of::<$t>())?;
                Ok((<$u>::from_be_bytes(b.try_into().unwrap()) ^ (1 << (<$u>::BITS - 1))) as $t)
            }
        }
    )*};
}
signed_key!(i8 => u8, i16 => u16, i32 => u32, i64 => u64, i128 => u128);

impl AsKey<bool> for bool {
    #[inline]
    fn encode_key(&self, out: &mut Vec<u8>) {
        out.push(*self as u8);
    }
}
impl TypedKey for bool {
    fn decode_key_from(input: &mut &[u8]) -> Result<Self> {
        match take::<bool>(input, 1)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(decode_error::<bool>(format!("byte {b:#04x} is neither 0 nor 1"))),
        }
    }
}

impl AsKey<()> for () {
    #[inline]
    fn encode_key(&self, _: &mut Vec<u8>) {}
}
impl TypedKey for () {
    fn decode_key_from(_: &mut &[u8]) -> Result<Self> {
        Ok(())
    }
}

/// Fixed-width byte arrays: their bytes as they are.
impl<const N: usize> AsKey<[u8; N]> for [u8; N] {
    #[inline]
    fn encode_key(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
}
impl<const N: usize> TypedKey for [u8; N] {
    fn decode_key_from(input: &mut &[u8]) -> Result<Self> {
        Ok(take::<[u8; N]>(input, N)?.try_into().unwrap())
    }
}

/// Appends `b` escaped and terminated: every 0x00 becomes 0x00 0xFF, and
/// 0x00 0x00 ends it.
fn encode_escaped(b: &[u8], out: &mut Vec<u8>) {
    out.reserve(b.len() + 2);
    for part in b.split_inclusive(|&c| c == 0) {
        out.extend_from_slice(part);
        if part.last() == Some(&0) {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// Reads what [`encode_escaped`] wrote from the front of `input`.
fn decode_escaped<T>(input: &mut &[u8]) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    let mut rest = *input;
    loop {
        let Some(z) = rest.iter().position(|&c| c == 0) else {
            return Err(decode_error::<T>("no terminator (0x00 0x00)"));
        };
        v.extend_from_slice(&rest[..z]);
        match rest.get(z + 1) {
            Some(0x00) => {
                *input = &rest[z + 2..];
                return Ok(v);
            }
            Some(0xFF) => {
                v.push(0);
                rest = &rest[z + 2..];
            }
            Some(b) => return Err(decode_error::<T>(format!("0x00 followed by {b:#04x}, not 0x00 or 0xFF"))),
            None => return Err(decode_error::<T>("no terminator (0x00 0x00)")),
        }
    }
}

impl AsKey<Vec<u8>> for Vec<u8> {
    #[inline]
    fn encode_key(&self, out: &mut Vec<u8>) {
        encode_escaped(self, out)
    }
}
impl AsKey<Vec<u8>> for [u8] {
    #[inline]
    fn encode_key(&self, out: &mut Vec<u8>) {
        encode_escaped(self, out)
    }
}
/// A byte string given as an array (`b"abc"`).
impl<const N: usize> AsKey<Vec<u8>> for [u8; N] {
    #[inline]
    fn encode_key(&self, out: &mut Vec<u8>) {
        encode_escaped(self, out)
    }
}
impl TypedKey for Vec<u8> {
    fn decode_key_from(input: &mut &[u8]) -> Result<Self> {
        decode_escaped::<Vec<u8>>(input)
    }
}

impl AsKey<String> for String {
    #[inline]
    fn encode_key(&self, out: &mut Vec<u8>) {
        encode_escaped(self.as_bytes(), out)
    }
}
impl AsKey<String> for str {
    #[inline]
    fn encode_key(&self, out: &mut Vec<u8>) {
        encode_escaped(self.as_bytes(), out)
    }
}
impl TypedKey for String {
    fn decode_key_from(input: &mut &[u8]) -> Result<Self> {
        String::from_utf8(decode_escaped::<String>(input)?)
            .map_err(|e| decode_error::<String>(format!("not UTF-8: {}", e.utf8_error())))
    }
}

macro_rules! tuple_key {
    ($($K:ident $A:ident $i:tt),+) => {
        /// The parts one after the other.
        impl<$($K: TypedKey),+> TypedKey for ($($K,)+) {
            fn decode_key_from(input: &mut &[u8]) -> Result<Self> {
                Ok(($($K::decode_key_from(input)?,)+))
            }
        }
        impl<$($K, $A: AsKey<$K>),+> AsKey<($($K,)+)> for ($($A,)+) {
            #[inline]
            fn encode_key(&self, out: &mut Vec<u8>) {
                $(<$A as AsKey<$K>>::encode_key(&self.$i, out);)+
            }
        }
    };
}
tuple_key!(K0 A0 0);
tuple_key!(K0 A0 0, K1 A1 1);
tuple_key!(K0 A0 0, K1 A1 1, K2 A2 2);
tuple_key!(K0 A0 0, K1 A1 1, K2 A2 2, K3 A3 3);
tuple_key!(K0 A0 0, K1 A1 1, K2 A2 2, K3 A3 3, K4 A4 4);
tuple_key!(K0 A0 0, K1 A1 1, K2 A2 2, K3 A3 3, K4 A4 4, K5 A5 5);

#[cfg(test)]
mod tests {
    use super::*;

    fn enc<K: TypedKey>(k: &K) -> Vec<u8> {
        let mut v = Vec::new();
        <K as AsKey<K>>::encode_key(k, &mut v);
        v
    }

    #[test]
    fn layouts() {
        assert_eq!(enc(&0x0102u16), [1, 2]);
        assert_eq!(enc(&-1i8), [0x7F]);
        assert_eq!(enc(&0i8), [0x80]);
        assert_eq!(enc(&i32::MIN), [0, 0, 0, 0]);
        assert_eq!(enc(&true), [1]);
        assert_eq!(enc(&"a\0b".to_string()), [b'a', 0, 0xFF, b'b', 0, 0]);
        assert_eq!(enc(&Vec::<u8>::new()), [0, 0]);
        assert_eq!(enc(&[7u8, 0]), [7, 0]);
        assert_eq!(enc(&(1u8, ())), [1]);
    }

    #[test]
    fn escaped_strings_are_refused_when_damaged() {
        for bad in [&[][..], &[1], &[0], &[0, 1], &[b'a', 0, 0xFF]] {
            assert!(Vec::<u8>::decode_key(bad).is_err(), "{bad:?}");
        }
        assert!(String::decode_key(&[0xC3, 0, 0]).is_err());
        assert!(bool::decode_key(&[2]).is_err());
        assert!(u32::decode_key(&[1, 2, 3]).is_err());
        assert!(u16::decode_key(&[1, 2, 3]).is_err());
    }
}
