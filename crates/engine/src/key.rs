//! Keys: small, inline, byte-ordered.
//!
//! A [`Key`] holds up to [`KEY_MAX`] bytes inline (no heap allocation), compares
//! lexicographically by its bytes, and is `Copy`. Composite keys (warehouse,
//! district, order) are built with [`KeyBuilder`], which writes each part
//! big-endian so that byte order equals the tuple's natural order; that makes
//! range scans over a prefix (all orders of one district) work on the ordered
//! index.

use crate::Error;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// Most bytes a key may hold.
///
/// ```
/// use multiverse::{Error, Key, KEY_MAX};
///
/// assert!(Key::from_bytes(&vec![7; KEY_MAX]).is_ok());
/// assert!(matches!(Key::from_bytes(&vec![7; KEY_MAX + 1]), Err(Error::KeyTooLarge { .. })));
/// ```
pub const KEY_MAX: usize = 32;

/// An inline key of up to [`KEY_MAX`] bytes, ordered by its bytes.
///
/// ```
/// use multiverse::Key;
///
/// // Keys compare by their bytes: integers are big-endian, so they sort as numbers.
/// assert!(Key::from(255) < Key::from(256));
/// let composite = Key::builder().u32(1).u64(2).build().unwrap();
/// assert_eq!(composite.len(), 12);
/// assert!(Key::from_bytes(b"apple").unwrap() < Key::from_bytes(b"apples").unwrap());
/// ```
#[derive(Clone, Copy)]
pub struct Key {
    bytes: [u8; KEY_MAX],
    len: u8,
}

impl Key {
    /// The empty key: sorts before every other key.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert!(Key::EMPTY.is_empty());
    /// assert!(Key::EMPTY < Key::from_bytes(&[0]).unwrap());
    /// ```
    pub const EMPTY: Key = Key { bytes: [0; KEY_MAX], len: 0 };

    /// The greatest key: [`KEY_MAX`] bytes of `0xFF`; sorts after every other key.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert!(Key::from(u64::MAX) < Key::MAX);
    /// ```
    pub const MAX: Key = Key { bytes: [0xFF; KEY_MAX], len: KEY_MAX as u8 };

    /// An 8-byte big-endian key, the common case for integer primary keys.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert_eq!(Key::from_u64(258).as_bytes(), [0, 0, 0, 0, 0, 0, 1, 2]);
    /// assert_eq!(Key::from_u64(7), Key::from(7));
    /// ```
    #[inline]
    pub fn from_u64(k: u64) -> Key {
        let mut bytes = [0u8; KEY_MAX];
        bytes[..8].copy_from_slice(&k.to_be_bytes());
        Key { bytes, len: 8 }
    }

    /// A key from raw bytes; fails with [`Error::KeyTooLarge`] beyond [`KEY_MAX`].
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// let k = Key::from_bytes(b"user:42").unwrap();
    /// assert_eq!(k.as_bytes(), b"user:42");
    /// ```
    pub fn from_bytes(b: &[u8]) -> Result<Key, Error> {
        if b.len() > KEY_MAX {
            return Err(Error::KeyTooLarge { len: b.len(), max: KEY_MAX });
        }
        let mut bytes = [0u8; KEY_MAX];
        bytes[..b.len()].copy_from_slice(b);
        Ok(Key { bytes, len: b.len() as u8 })
    }

    /// Starts a composite key.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// let k = Key::builder().u32(7).u64(9).build().unwrap();
    /// assert_eq!((k.u32_at(0), k.u64_at(4)), (Some(7), Some(9)));
    /// ```
    pub fn builder() -> KeyBuilder {
        KeyBuilder { key: Key::EMPTY, overflow: false }
    }

    /// The key's bytes.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert_eq!(Key::builder().u8(1).u16(2).build().unwrap().as_bytes(), [1, 0, 2]);
    /// ```
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Number of bytes.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert_eq!(Key::from(5).len(), 8);
    /// assert_eq!(Key::EMPTY.len(), 0);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True for the empty key.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert!(Key::EMPTY.is_empty());
    /// assert!(!Key::from(0).is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads the first 8 bytes back as the big-endian integer of [`Key::from_u64`];
    /// `None` if the key is shorter.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert_eq!(Key::from(42).to_u64(), Some(42));
    /// assert_eq!(Key::from_bytes(b"ab").unwrap().to_u64(), None);
    /// ```
    pub fn to_u64(&self) -> Option<u64> {
        (self.len >= 8).then(|| u64::from_be_bytes(self.bytes[..8].try_into().unwrap()))
    }

    /// Reads the big-endian u64 at byte offset `at` of a composite key.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// let k = Key::builder().u32(1).u64(77).build().unwrap();
    /// assert_eq!(k.u64_at(4), Some(77));
    /// assert_eq!(k.u64_at(8), None); // past the end
    /// ```
    pub fn u64_at(&self, at: usize) -> Option<u64> {
        self.as_bytes().get(at..at + 8).map(|b| u64::from_be_bytes(b.try_into().unwrap()))
    }

    /// Reads the big-endian u32 at byte offset `at` of a composite key.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// let k = Key::builder().u32(3).u32(4).build().unwrap();
    /// assert_eq!((k.u32_at(0), k.u32_at(4), k.u32_at(6)), (Some(3), Some(4), None));
    /// ```
    pub fn u32_at(&self, at: usize) -> Option<u32> {
        self.as_bytes().get(at..at + 4).map(|b| u32::from_be_bytes(b.try_into().unwrap()))
    }

    /// A 64-bit hash of the key (used by hash indexes).
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert_eq!(Key::from(1).hash64(), Key::from_bytes(&1u64.to_be_bytes()).unwrap().hash64());
    /// assert_ne!(Key::from(1).hash64(), Key::from(2).hash64());
    /// ```
    #[inline]
    pub fn hash64(&self) -> u64 {
        hash_bytes(self.as_bytes())
    }

    /// The smallest key strictly greater than every key that starts with `self`
    /// (for prefix range scans); `None` when no such key fits.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// let district = Key::builder().u32(2).build().unwrap();
    /// let end = district.prefix_end().unwrap();
    /// assert_eq!(end, Key::builder().u32(3).build().unwrap());
    /// let order = Key::builder().u32(2).u32(u32::MAX).build().unwrap();
    /// assert!(district <= order && order < end);
    /// assert_eq!(Key::from_bytes(&[0xFF, 0xFF]).unwrap().prefix_end(), None);
    /// ```
    pub fn prefix_end(&self) -> Option<Key> {
        let mut k = *self;
        while k.len > 0 {
            let i = k.len as usize - 1;
            if k.bytes[i] < 0xFF {
                k.bytes[i] += 1;
                return Some(k);
            }
            k.bytes[i] = 0;
            k.len -= 1;
        }
        None
    }
}

/// The hash of a key given as bytes: equal to [`Key::hash64`] of the key
/// with those bytes, without building it. Mixes one 8-byte word at a time
/// (the last one zero-padded) and the length.
#[inline]
pub fn hash_bytes(b: &[u8]) -> u64 {
    let mut h = (b.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        h = mix(h, u64::from_le_bytes(c.try_into().unwrap()));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = mix(h, u64::from_le_bytes(w));
    }
    fmix64(h)
}

#[inline(always)]
fn mix(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(0xFF51_AFD7_ED55_8CCD).rotate_left(31)
}

/// MurmurHash3's 64-bit finaliser: every input bit reaches every output bit,
/// so the low bits that pick a bucket vary even for big-endian integer keys
/// whose changing byte is read as the word's top byte.
#[inline(always)]
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

/// Byte-slice equality without a call to `memcmp` for keys of up to 16
/// bytes (every chain walk compares keys): two overlapping loads cover
/// lengths 4 to 8 and 8 to 16, single bytes the rest.
#[inline(always)]
pub(crate) fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let w4 = |s: &[u8], at: usize| u32::from_ne_bytes(s[at..at + 4].try_into().unwrap());
    let w8 = |s: &[u8], at: usize| u64::from_ne_bytes(s[at..at + 8].try_into().unwrap());
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => w4(a, 0) == w4(b, 0) && w4(a, n - 4) == w4(b, n - 4),
        8..=16 => w8(a, 0) == w8(b, 0) && w8(a, n - 8) == w8(b, n - 8),
        _ => a == b,
    }
}

impl PartialEq for Key {
    #[inline]
    fn eq(&self, other: &Key) -> bool {
        self.len == other.len && self.bytes == other.bytes
    }
}
impl Eq for Key {}

impl Ord for Key {
    /// Lexicographic order of the bytes, compared a big-endian word at a
    /// time (ordered indexes compare keys at every skip-list level; a call
    /// to `memcmp` per comparison cost more than the comparison).
    ///
    /// Bytes past `len` are always zero (every constructor starts from
    /// zeros, and `prefix_end` clears what it cuts), so the zero-padded
    /// words order like the bytes, except that a key ordered equal to a
    /// longer one is a prefix of it: then the shorter sorts first.
    #[inline]
    fn cmp(&self, other: &Key) -> Ordering {
        let words = (self.len.max(other.len) as usize).div_ceil(8);
        for i in 0..words {
            let a = u64::from_be_bytes(self.bytes[i * 8..i * 8 + 8].try_into().unwrap());
            let b = u64::from_be_bytes(other.bytes[i * 8..i * 8 + 8].try_into().unwrap());
            if a != b {
                return a.cmp(&b);
            }
        }
        self.len.cmp(&other.len)
    }
}
impl PartialOrd for Key {
    #[inline]
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash64());
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len == 8 {
            return write!(f, "Key({})", self.to_u64().unwrap());
        }
        write!(f, "Key(")?;
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

impl From<u64> for Key {
    #[inline]
    fn from(k: u64) -> Key {
        Key::from_u64(k)
    }
}

/// Builds a composite key part by part; every integer is written big-endian.
///
/// ```
/// use multiverse::Key;
///
/// // (warehouse, district, order) sorts like the tuple.
/// let key = |w: u32, d: u8, o: u64| Key::builder().u32(w).u8(d).u64(o).build().unwrap();
/// assert!(key(1, 9, 100) < key(2, 0, 0));
/// assert!(key(1, 2, 3) < key(1, 2, 4));
/// ```
#[derive(Clone, Copy)]
pub struct KeyBuilder {
    key: Key,
    overflow: bool,
}

impl KeyBuilder {
    fn push(mut self, b: &[u8]) -> Self {
        let at = self.key.len as usize;
        if at + b.len() > KEY_MAX {
            self.overflow = true;
            return self;
        }
        self.key.bytes[at..at + b.len()].copy_from_slice(b);
        self.key.len += b.len() as u8;
        self
    }
    /// Appends a `u8`.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert_eq!(Key::builder().u8(7).build().unwrap().as_bytes(), [7]);
    /// ```
    pub fn u8(self, v: u8) -> Self {
        self.push(&[v])
    }
    /// Appends a big-endian `u16`.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert_eq!(Key::builder().u16(0x0102).build().unwrap().as_bytes(), [1, 2]);
    /// ```
    pub fn u16(self, v: u16) -> Self {
        self.push(&v.to_be_bytes())
    }
    /// Appends a big-endian `u32`.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert_eq!(Key::builder().u32(0x0102_0304).build().unwrap().as_bytes(), [1, 2, 3, 4]);
    /// ```
    pub fn u32(self, v: u32) -> Self {
        self.push(&v.to_be_bytes())
    }
    /// Appends a big-endian `u64`.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert_eq!(Key::builder().u64(5).build().unwrap(), Key::from(5));
    /// ```
    pub fn u64(self, v: u64) -> Self {
        self.push(&v.to_be_bytes())
    }
    /// Appends raw bytes.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert_eq!(Key::builder().bytes(b"ab").u8(0).build().unwrap().as_bytes(), b"ab\0");
    /// ```
    pub fn bytes(self, b: &[u8]) -> Self {
        self.push(b)
    }
    /// Appends a string padded with zero bytes (or cut) to exactly `width` bytes,
    /// so that later parts stay aligned and ordering follows the string.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// let k = Key::builder().str_fixed("ab", 4).u8(1).build().unwrap();
    /// assert_eq!(k.as_bytes(), b"ab\0\0\x01");
    /// assert_eq!(Key::builder().str_fixed("abcdef", 3).build().unwrap().as_bytes(), b"abc");
    /// ```
    pub fn str_fixed(self, s: &str, width: usize) -> Self {
        let mut out = self;
        let b = s.as_bytes();
        let n = b.len().min(width);
        out = out.push(&b[..n]);
        for _ in n..width {
            out = out.push(&[0]);
        }
        out
    }
    /// The key; fails with [`Error::KeyTooLarge`] if the parts overflowed.
    ///
    /// ```
    /// use multiverse::{Error, Key, KEY_MAX};
    ///
    /// assert!(Key::builder().u32(1).build().is_ok());
    /// let too_long = (0..=KEY_MAX).fold(Key::builder(), |b, _| b.u8(0));
    /// assert!(matches!(too_long.build(), Err(Error::KeyTooLarge { .. })));
    /// ```
    pub fn build(self) -> Result<Key, Error> {
        if self.overflow {
            return Err(Error::KeyTooLarge { len: KEY_MAX + 1, max: KEY_MAX });
        }
        Ok(self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `bytes_eq` agrees with slice equality for every length, whichever
    /// byte differs, and for different lengths.
    #[test]
    fn bytes_eq_matches_slice_equality() {
        for n in 0..=34usize {
            let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
            assert!(bytes_eq(&a, &a.clone()), "len {n}");
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 0x40;
                assert!(!bytes_eq(&a, &b), "len {n}, differing at {at}");
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!bytes_eq(&a, &longer) && !bytes_eq(&longer, &a), "len {n} against {}", n + 1);
        }
    }

    #[test]
    fn keys_order_like_their_bytes() {
        // Short and long keys, shared prefixes, zero bytes and 0xFF bytes:
        // the word-wise comparison must agree with the byte slices'.
        let mut keys = vec![Key::EMPTY];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for n in 0..400 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 33) as usize;
            let mut b = [0u8; KEY_MAX];
            for (i, byte) in b.iter_mut().enumerate().take(len) {
                *byte = match (x >> (i % 60)) % 4 {
                    0 => 0,
                    1 => 0xFF,
                    _ => (x >> (i % 56)) as u8,
                };
            }
            keys.push(Key::from_bytes(&b[..len]).unwrap());
            if n % 3 == 0 && len > 0 {
                keys.push(Key::from_bytes(&b[..len - 1]).unwrap());
                keys.push(keys.last().unwrap().prefix_end().unwrap_or(Key::EMPTY));
            }
        }
        for a in &keys {
            for b in &keys {
                assert_eq!(a.cmp(b), a.as_bytes().cmp(b.as_bytes()), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn integer_keys_order_numerically() {
        let mut keys: Vec<Key> = [5u64, 300, 1, 70000, 2].iter().map(|&k| Key::from(k)).collect();
        keys.sort();
        let back: Vec<u64> = keys.iter().map(|k| k.to_u64().unwrap()).collect();
        assert_eq!(back, vec![1, 2, 5, 300, 70000]);
    }

    #[test]
    fn composite_keys_order_as_tuples() {
        let k = |w: u32, d: u32, o: u64| Key::builder().u32(w).u32(d).u64(o).build().unwrap();
        assert!(k(1, 2, 100) < k(1, 3, 0));
        assert!(k(1, 2, 5) < k(1, 2, 6));
        let prefix = Key::builder().u32(1).u32(2).build().unwrap();
        let end = prefix.prefix_end().unwrap();
        assert!(prefix <= k(1, 2, u64::MAX) && k(1, 2, u64::MAX) < end);
        assert!(k(1, 3, 0) >= end);
        assert_eq!(k(7, 8, 9).u64_at(8), Some(9));
    }

    #[test]
    fn too_long_keys_are_refused() {
        assert!(Key::from_bytes(&[1u8; 33]).is_err());
        assert!(Key::builder().u64(1).u64(2).u64(3).u64(4).u8(5).build().is_err());
        assert!(Key::from_bytes(&[1u8; 32]).is_ok());
    }

    #[test]
    fn sequential_integer_keys_spread_over_low_bits() {
        // The bucket is picked by the low bits: 4096 consecutive keys must
        // land in (nearly) as many distinct buckets of a 4096-bucket table.
        let mut seen = std::collections::HashSet::new();
        for k in 0..4096u64 {
            seen.insert(Key::from(k).hash64() & 4095);
        }
        assert!(seen.len() > 2400, "only {} distinct buckets", seen.len());
    }

    #[test]
    fn equal_keys_hash_equal() {
        let a = Key::from_bytes(b"abc").unwrap();
        let b = Key::builder().bytes(b"abc").build().unwrap();
        assert_eq!(a, b);
        assert_eq!(a.hash64(), b.hash64());
        assert_ne!(Key::from(1).hash64(), Key::from(2).hash64());
    }
}

/// The hasher of the engine's internal maps, whose keys are hashed already:
/// a precomputed 64-bit hash (`write_u64`, e.g. a record's [`Key::hash64`]
/// mixed with its table) passes through unchanged, and an address
/// (`write_usize`: a lock word) is spread by a multiplication, its low
/// alignment bits dropped. Anything else falls back to FNV-1a.
#[derive(Default)]
pub(crate) struct PassHasher(u64);

impl Hasher for PassHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64 >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
