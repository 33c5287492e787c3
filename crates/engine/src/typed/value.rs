//! The value encoding: compact, not order-preserving (layout in the
//! [module docs](super)).

use super::decode_error;
use crate::Result;

/// Something that encodes as a value of type `V`: `V` itself, and borrowed
/// forms of it (`&str` for `String`, `&[u8]` or `&[u8; N]` for `Vec<u8>`,
/// tuples of such parts for a tuple, references to any of these).
///
/// The writing methods of [`crate::TypedTable`] take their values as
/// `impl AsValue<V>`. An implementation must write exactly the bytes that
/// `V`'s own encoding writes for the value it stands for.
///
/// ```
/// use multiverse::typed::AsValue;
///
/// let mut out = Vec::new();
/// AsValue::<(u16, String)>::encode_value(&(7u16, "hi"), &mut out).unwrap();
/// assert_eq!(out, [7, 0, b'h', b'i']);
/// ```
pub trait AsValue<V: ?Sized> {
    /// Appends the encoding of the value `V` this stands for to `out`.
    /// Fails only where the type's own serialization can (`Serde<T>` of
    /// the `serde` feature), with [`crate::Error::InvalidArgument`].
    ///
    /// ```
    /// use multiverse::typed::AsValue;
    ///
    /// let mut out = Vec::new();
    /// AsValue::<u32>::encode_value(&7u32, &mut out).unwrap();
    /// assert_eq!(out, 7u32.to_le_bytes());
    /// ```
    fn encode_value(&self, out: &mut Vec<u8>) -> Result<()>;
}

/// A value type: encoded compactly ([`AsValue::encode_value`], a
/// supertrait), decoded from the stored bytes with
/// [`crate::Error::Decode`] (never a panic) when they do not fit.
///
/// ```
/// use multiverse::typed::{AsValue, Value};
///
/// let mut out = Vec::new();
/// (1u32, "two".to_string(), vec![3u8]).encode_value(&mut out).unwrap();
/// assert_eq!(<(u32, String, Vec<u8>)>::decode_value(&out).unwrap(), (1, "two".to_string(), vec![3]));
/// assert!(u64::decode_value(&out[..3]).is_err());
/// ```
pub trait Value: Sized + AsValue<Self> {
    /// The length of every encoding, for types that have one (integers,
    /// `bool`, arrays, tuples of such): a tuple writes no length before
    /// such a part.
    const WIDTH: Option<usize> = None;

    /// Decodes a value that fills `bytes` exactly.
    ///
    /// ```
    /// use multiverse::typed::Value;
    ///
    /// assert_eq!(String::decode_value(b"hi").unwrap(), "hi");
    /// assert!(String::decode_value(&[0xFF]).is_err()); // not UTF-8
    /// assert_eq!(<(u8, bool)>::decode_value(&[3, 1]).unwrap(), (3, true));
    /// ```
    fn decode_value(bytes: &[u8]) -> Result<Self>;
}

/// A value part of a reference encodes as the part it refers to.
impl<V: ?Sized, T: AsValue<V> + ?Sized> AsValue<V> for &T {
    #[inline]
    fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
        (**self).encode_value(out)
    }
}

/// `bytes` as an array of `N`, or a decode error naming `T`.
fn exact<T, const N: usize>(bytes: &[u8]) -> Result<[u8; N]> {
    bytes.try_into().map_err(|_| decode_error::<T>(format!("needs {N} bytes, has {}", bytes.len())))
}

macro_rules! number_value {
    ($($t:ty),*) => {$(
        /// Little-endian, fixed width.
        impl AsValue<$t> for $t {
            #[inline]
            fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
                out.extend_from_slice(&self.to_le_bytes());
                Ok(())
            }
        }
        impl Value for $t {
            const WIDTH: Option<usize> = Some(size_of::<$t>());
            #[inline]
            fn decode_value(bytes: &[u8]) -> Result<Self> {
                Ok(<$t>::from_le_bytes(exact::<$t, { size_of::<$t>() }>(bytes)?))
            }
        }
    )*};
}
number_value!(u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, f32, f64);

impl AsValue<bool> for bool {
    #[inline]
    fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
        out.push(*self as u8);
        Ok(())
    }
}
impl Value for bool {
    const WIDTH: Option<usize> = Some(1);
    fn decode_value(bytes: &[u8]) -> Result<Self> {
        match exact::<bool, 1>(bytes)? {
            [0] => Ok(false),
            [1] => Ok(true),
            [b] => Err(decode_error::<bool>(format!("byte {b:#04x} is neither 0 nor 1"))),
        }
    }
}

impl AsValue<()> for () {
    #[inline]
    fn encode_value(&self, _: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }
}
impl Value for () {
    const WIDTH: Option<usize> = Some(0);
    fn decode_value(bytes: &[u8]) -> Result<Self> {
        exact::<(), 0>(bytes).map(|_| ())
    }
}

impl<const N: usize> AsValue<[u8; N]> for [u8; N] {
    #[inline]
    fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(self);
        Ok(())
    }
}
impl<const N: usize> Value for [u8; N] {
    const WIDTH: Option<usize> = Some(N);
    fn decode_value(bytes: &[u8]) -> Result<Self> {
        exact::<[u8; N], N>(bytes)
    }
}

macro_rules! bytes_value {
    ($($t:ty),*) => {$(
        /// The bytes as they are.
        impl AsValue<Vec<u8>> for $t {
            #[inline]
            fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
                out.extend_from_slice(self.as_ref());
                Ok(())
            }
        }
    )*};
}
bytes_value!(Vec<u8>, [u8]);
impl<const N: usize> AsValue<Vec<u8>> for [u8; N] {
    #[inline]
    fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(self);
        Ok(())
    }
}
impl Value for Vec<u8> {
    #[inline]
    fn decode_value(bytes: &[u8]) -> Result<Self> {
        Ok(bytes.to_vec())
    }
}

/// The UTF-8 bytes as they are.
impl AsValue<String> for String {
    #[inline]
    fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(self.as_bytes());
        Ok(())
    }
}
impl AsValue<String> for str {
    #[inline]
    fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
        out.extend_from_slice(self.as_bytes());
        Ok(())
    }
}
impl Value for String {
    fn decode_value(bytes: &[u8]) -> Result<Self> {
        std::str::from_utf8(bytes).map(str::to_string).map_err(|e| decode_error::<String>(format!("not UTF-8: {e}")))
    }
}

/// Writes the part `p` of a tuple: a part of variable width that is not the
/// last is preceded by its length (LEB128).
#[inline]
fn encode_part<V: Value, P: AsValue<V> + ?Sized>(p: &P, last: bool, out: &mut Vec<u8>) -> Result<()> {
    if last || V::WIDTH.is_some() {
        return p.encode_value(out);
    }
    let at = out.len();
    p.encode_value(out)?;
    let mut n = out.len() - at;
    let mut len = [0u8; 10];
    let mut i = 0;
    loop {
        len[i] = (n as u8 & 0x7F) | if n >= 0x80 { 0x80 } else { 0 };
        i += 1;
        n >>= 7;
        if n == 0 {
            break;
        }
    }
    out.splice(at..at, len[..i].iter().copied());
    Ok(())
}

/// Reads the part of type `V` of a tuple of type `T` from the front of
/// `input` (the rest of it when `last`).
fn decode_part<T, V: Value>(input: &mut &[u8], last: bool) -> Result<V> {
    let n = if last {
        input.len()
    } else if let Some(w) = V::WIDTH {
        w
    } else {
        let mut n = 0u64;
        let mut shift = 0;
        loop {
            let Some((&b, rest)) = input.split_first() else {
                return Err(decode_error::<T>("a part's length is cut short"));
            };
            *input = rest;
            if shift > 63 || (shift == 63 && b > 1) {
                return Err(decode_error::<T>("a part's length overflows"));
            }
            n |= ((b & 0x7F) as u64) << shift;
            shift += 7;
            if b < 0x80 {
                break;
            }
        }
        n.try_into().unwrap_or(usize::MAX)
    };
    if input.len() < n {
        return Err(decode_error::<T>(format!("a part needs {n} bytes, has {}", input.len())));
    }
    let (part, rest) = input.split_at(n);
    *input = rest;
    V::decode_value(part)
}

macro_rules! tuple_value {
    ($n:literal; $($V:ident $A:ident $i:tt),+) => {
        /// The parts one after the other; a part of variable width that is
        /// not the last is preceded by its length.
        impl<$($V: Value),+> Value for ($($V,)+) {
            const WIDTH: Option<usize> = {
                let mut w = Some(0);
                $(w = match (w, $V::WIDTH) {
                    (Some(a), Some(b)) => Some(a + b),
                    _ => None,
                };)+
                w
            };
            fn decode_value(bytes: &[u8]) -> Result<Self> {
                let mut input = bytes;
                Ok(($(decode_part::<Self, $V>(&mut input, $i + 1 == $n)?,)+))
            }
        }
        impl<$($V: Value, $A: AsValue<$V>),+> AsValue<($($V,)+)> for ($($A,)+) {
            #[inline]
            fn encode_value(&self, out: &mut Vec<u8>) -> Result<()> {
                $(encode_part::<$V, $A>(&self.$i, $i + 1 == $n, out)?;)+
                Ok(())
            }
        }
    };
}
tuple_value!(1; V0 A0 0);
tuple_value!(2; V0 A0 0, V1 A1 1);
tuple_value!(3; V0 A0 0, V1 A1 1, V2 A2 2);
tuple_value!(4; V0 A0 0, V1 A1 1, V2 A2 2, V3 A3 3);
tuple_value!(5; V0 A0 0, V1 A1 1, V2 A2 2, V3 A3 3, V4 A4 4);
tuple_value!(6; V0 A0 0, V1 A1 1, V2 A2 2, V3 A3 3, V4 A4 4, V5 A5 5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuples_write_lengths_only_where_needed() {
        let mut out = Vec::new();
        AsValue::<(u8, String, u8, Vec<u8>)>::encode_value(&(1u8, "ab", 2u8, vec![9u8; 200]), &mut out).unwrap();
        let one = out.len();
        assert_eq!(&out[..5], &[1, 2, b'a', b'b', 2]);
        assert_eq!(one, 5 + 200);
        let back = <(u8, String, u8, Vec<u8>)>::decode_value(&out[..one]).unwrap();
        assert_eq!(back, (1, "ab".to_string(), 2, vec![9u8; 200]));
        let mut long = Vec::new();
        (vec![1u8; 300], 5u8).encode_value(&mut long).unwrap();
        assert_eq!(&long[..2], &[0xAC, 0x02]);
        assert_eq!(<(Vec<u8>, u8)>::decode_value(&long).unwrap(), (vec![1u8; 300], 5));
        assert_eq!(<(u8, u16)>::WIDTH, Some(3));
        assert_eq!(<(u8, String)>::WIDTH, None);
    }

    #[test]
    fn damaged_lengths_are_refused() {
        assert!(<(Vec<u8>, u8)>::decode_value(&[0x80]).is_err());
        assert!(<(Vec<u8>, u8)>::decode_value(&[0xFF; 11]).is_err());
        assert!(<(Vec<u8>, u8)>::decode_value(&[5, 1]).is_err());
        assert!(<(u32, u8)>::decode_value(&[1, 2, 3, 4]).is_err());
        assert!(bool::decode_value(&[3]).is_err());
        assert!(String::decode_value(&[0xFF]).is_err());
    }
}
