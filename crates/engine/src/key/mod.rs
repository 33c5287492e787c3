//! Keys: byte strings of up to [`KEY_MAX`] bytes, ordered by their bytes.
//!
//! A [`Key`] of up to [`KEY_INLINE`] bytes (every integer and composite key
//! the workloads build) lives inline, with no heap allocation: building,
//! comparing, hashing and cloning it costs what it cost when keys could not
//! be longer. A longer key, up to [`KEY_MAX`] bytes, keeps its bytes in a
//! shared heap buffer (`Arc<[u8]>`), so a clone is a reference-count
//! increment. Which representation a key has follows from its length
//! alone, so equal keys always have the same one. Keys are `Clone`, not
//! `Copy`; pass `&Key` where a key is only looked at.
//!
//! Composite keys (warehouse, district, order) are built with
//! [`KeyBuilder`], which writes each part big-endian so that byte order
//! equals the tuple's natural order; that makes range scans over a prefix
//! (all orders of one district) work on the ordered index.

use crate::Error;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ptr;
use std::sync::Arc;

/// Most bytes a key may hold.
///
/// ```
/// use multiverse::{Error, Key, KEY_MAX};
///
/// assert_eq!(KEY_MAX, 1024);
/// assert!(Key::from_bytes(&vec![7; KEY_MAX]).is_ok());
/// assert!(matches!(Key::from_bytes(&vec![7; KEY_MAX + 1]), Err(Error::KeyTooLarge { .. })));
/// ```
pub const KEY_MAX: usize = 1024;

/// Most bytes a key holds inline (without a heap allocation).
///
/// ```
/// use multiverse::{Key, KEY_INLINE};
///
/// assert!(Key::from_bytes(&[1; KEY_INLINE]).unwrap().is_inline());
/// assert!(!Key::from_bytes(&[1; KEY_INLINE + 1]).unwrap().is_inline());
/// ```
pub const KEY_INLINE: usize = 32;

// The length field and the pointer of a long key must fit.
const _: () = assert!(KEY_MAX <= u16::MAX as usize && KEY_INLINE >= std::mem::size_of::<usize>());

/// The bytes of [`Key::MAX`] (its long representation points here, not
/// to a reference-counted buffer).
static MAX_BYTES: [u8; KEY_MAX] = [0xFF; KEY_MAX];

/// A key of up to [`KEY_MAX`] bytes, ordered by its bytes.
///
/// ```
/// use multiverse::Key;
///
/// // Keys compare by their bytes: integers are big-endian, so they sort as numbers.
/// assert!(Key::from(255) < Key::from(256));
/// let composite = Key::builder().u32(1).u64(2).build().unwrap();
/// assert_eq!(composite.len(), 12);
/// assert!(Key::from_bytes(b"apple").unwrap() < Key::from_bytes(b"apples").unwrap());
/// // A long key is cloned, not copied: the clone shares its buffer.
/// let long = Key::from_bytes(&[b'x'; 100]).unwrap();
/// assert_eq!(long.clone(), long);
/// ```
///
/// Representation (`len` decides which):
///
/// - `len <= KEY_INLINE`: the bytes are `bytes[..len]`, the rest of
///   `bytes` is zero (the word-wise comparison relies on it).
/// - `len > KEY_INLINE`: `bytes[..size_of::<usize>()]` holds, native-endian,
///   the address of the key's `len` bytes: the data pointer of an
///   `Arc<[u8]>` that this key owns one strong count of, or 0 for
///   [`Key::MAX`], whose bytes are the static `MAX_BYTES`.
pub struct Key {
    bytes: [u8; KEY_INLINE],
    len: u16,
}

// `Key` is `Send` and `Sync` on its own (plain bytes); that is right, since
// what a long key points to is an `Arc<[u8]>`, which is both.

impl Key {
    /// The empty key: sorts before every other key.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert!(Key::EMPTY.is_empty());
    /// assert!(Key::EMPTY < Key::from_bytes(&[0]).unwrap());
    /// ```
    pub const EMPTY: Key = Key { bytes: [0; KEY_INLINE], len: 0 };

    /// The greatest key: [`KEY_MAX`] bytes of `0xFF`; sorts after every
    /// other key (no key is longer). Equal to the key built from those
    /// bytes.
    ///
    /// ```
    /// use multiverse::{Key, KEY_MAX};
    ///
    /// assert!(Key::from(u64::MAX) < Key::MAX);
    /// assert_eq!(Key::MAX, Key::from_bytes(&[0xFF; KEY_MAX]).unwrap());
    /// ```
    pub const MAX: Key = Key { bytes: [0; KEY_INLINE], len: KEY_MAX as u16 };

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
        let mut bytes = [0u8; KEY_INLINE];
        bytes[..8].copy_from_slice(&k.to_be_bytes());
        Key { bytes, len: 8 }
    }

    /// A key from raw bytes; fails with [`Error::KeyTooLarge`] beyond [`KEY_MAX`].
    /// Keys of up to [`KEY_INLINE`] bytes do not allocate.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// let k = Key::from_bytes(b"user:42").unwrap();
    /// assert_eq!(k.as_bytes(), b"user:42");
    /// // The same through `TryFrom`, from any byte-like type.
    /// assert_eq!(Key::try_from("user:42").unwrap(), k);
    /// assert_eq!(Key::try_from(b"user:42".to_vec()).unwrap(), k);
    /// assert!(Key::try_from("x".repeat(2000)).is_err());
    /// ```
    #[inline]
    pub fn from_bytes(b: &[u8]) -> Result<Key, Error> {
        if b.len() <= KEY_INLINE {
            let mut bytes = [0u8; KEY_INLINE];
            bytes[..b.len()].copy_from_slice(b);
            return Ok(Key { bytes, len: b.len() as u16 });
        }
        Key::long(b)
    }

    /// A key of more than [`KEY_INLINE`] bytes: one heap buffer.
    #[cold]
    fn long(b: &[u8]) -> Result<Key, Error> {
        debug_assert!(b.len() > KEY_INLINE);
        if b.len() > KEY_MAX {
            return Err(Error::KeyTooLarge { len: b.len(), max: KEY_MAX });
        }
        let shared: Arc<[u8]> = Arc::from(b);
        // The strong count moves into the key; `Drop` gives it back.
        // Exposed: the address is stored as bytes, and `long_ptr` takes
        // the buffer's provenance back from it (strict provenance cannot
        // travel through the byte array the inline keys share).
        let p = Arc::into_raw(shared).cast::<u8>().expose_provenance();
        let mut bytes = [0u8; KEY_INLINE];
        bytes[..std::mem::size_of::<usize>()].copy_from_slice(&p.to_ne_bytes());
        Ok(Key { bytes, len: b.len() as u16 })
    }

    /// True for a key whose bytes live on the heap (or are `MAX_BYTES`).
    #[inline(always)]
    fn is_long(&self) -> bool {
        self.len as usize > KEY_INLINE
    }

    /// The address a long key's bytes start at (0 for [`Key::MAX`]).
    #[inline(always)]
    fn long_addr(&self) -> usize {
        debug_assert!(self.is_long());
        usize::from_ne_bytes(self.bytes[..std::mem::size_of::<usize>()].try_into().unwrap())
    }

    /// The pointer a long key's bytes start at (null for [`Key::MAX`]),
    /// with the provenance [`Key::long`] exposed.
    #[inline(always)]
    fn long_ptr(&self) -> *const u8 {
        ptr::with_exposed_provenance(self.long_addr())
    }

    /// The bytes of a long key.
    #[cold]
    #[inline(never)]
    fn long_bytes(&self) -> &[u8] {
        let p = self.long_addr();
        if p == 0 {
            return &MAX_BYTES[..self.len as usize];
        }
        // SAFETY: `p` is the data pointer of an `Arc<[u8]>` of `len` bytes
        // (type docs) whose strong count this key holds, so the buffer
        // lives at least as long as `&self`, and nobody writes it.
        unsafe { std::slice::from_raw_parts(self.long_ptr(), self.len as usize) }
    }

    /// Starts a composite key.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// let k = Key::builder().u32(7).u64(9).build().unwrap();
    /// assert_eq!((k.u32_at(0), k.u64_at(4)), (Some(7), Some(9)));
    /// ```
    #[inline]
    pub fn builder() -> KeyBuilder {
        KeyBuilder { bytes: [0; KEY_INLINE], len: 0, long: Vec::new(), overflow: 0 }
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
        if self.is_long() {
            return self.long_bytes();
        }
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

    /// True if the key is held inline (at most [`KEY_INLINE`] bytes).
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert!(Key::from(1).is_inline());
    /// assert!(!Key::from_bytes(&[0; 33]).unwrap().is_inline());
    /// ```
    #[inline]
    pub fn is_inline(&self) -> bool {
        !self.is_long()
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
    #[inline]
    pub fn to_u64(&self) -> Option<u64> {
        self.u64_at(0)
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
    #[inline]
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
        if self.is_long() {
            return hash_bytes(self.long_bytes());
        }
        // `hash_bytes` of the inline bytes, a word at a time: they are zero
        // past `len`, which is the zero padding of the last word, and at
        // most four words are read (a bounded loop, not a slice walk).
        let n = self.len as usize;
        let mut h = (n as u64).wrapping_mul(HASH_SEED);
        for i in 0..n.div_ceil(8) {
            h = mix(h, u64::from_le_bytes(self.bytes[i * 8..i * 8 + 8].try_into().unwrap()));
        }
        fmix64(h)
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
        if self.is_long() {
            let mut b = self.as_bytes().to_vec();
            while let Some(last) = b.pop() {
                if last < 0xFF {
                    b.push(last + 1);
                    return Some(Key::from_bytes(&b).expect("no longer than the key"));
                }
            }
            return None;
        }
        let mut k = Key { bytes: self.bytes, len: self.len };
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

impl Clone for Key {
    #[inline]
    fn clone(&self) -> Key {
        if self.is_long() {
            let p = self.long_addr();
            if p != 0 {
                // SAFETY: `p` and `len` are the data pointer and length of
                // the `Arc<[u8]>` this key holds a strong count of (type
                // docs): the Arc is alive, and the clone takes a count of
                // its own.
                unsafe { Arc::increment_strong_count(ptr::slice_from_raw_parts(self.long_ptr(), self.len as usize)) };
            }
        }
        Key { bytes: self.bytes, len: self.len }
    }
}

impl Drop for Key {
    #[inline]
    fn drop(&mut self) {
        if self.is_long() {
            let p = self.long_addr();
            if p != 0 {
                // SAFETY: as in `clone`: this key's strong count of the
                // `Arc<[u8]>` at `p` (of `len` bytes), given back once.
                unsafe { Arc::decrement_strong_count(ptr::slice_from_raw_parts(self.long_ptr(), self.len as usize)) };
            }
        }
    }
}

/// The hash of a key given as bytes: equal to [`Key::hash64`] of the key
/// with those bytes, without building it. Mixes one 8-byte word at a time
/// (the last one zero-padded) and the length.
///
/// ```
/// use multiverse::key::hash_bytes;
/// use multiverse::Key;
///
/// assert_eq!(hash_bytes(b"abc"), Key::from_bytes(b"abc").unwrap().hash64());
/// let long = vec![7u8; 300];
/// assert_eq!(hash_bytes(&long), Key::from_bytes(&long).unwrap().hash64());
/// ```
#[inline]
pub fn hash_bytes(b: &[u8]) -> u64 {
    let mut h = (b.len() as u64).wrapping_mul(HASH_SEED);
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

/// The multiplier of a key's length that starts its hash.
const HASH_SEED: u64 = 0x9E37_79B9_7F4A_7C15;

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
        // Equal inline bytes (zero past `len`) are equal keys, and so are
        // long keys that share a buffer (the same pointer); only long keys
        // in different buffers compare their bytes. Inline keys, the
        // common case, take no branch on their kind.
        self.len == other.len
            && (self.bytes == other.bytes || (self.is_long() && self.long_bytes() == other.long_bytes()))
    }
}
impl Eq for Key {}

impl Ord for Key {
    /// Lexicographic order of the bytes. Two inline keys compare a
    /// big-endian word at a time (ordered indexes compare keys at every
    /// skip-list level; a call to `memcmp` per comparison cost more than
    /// the comparison); a long key compares as a byte slice.
    ///
    /// Bytes of an inline key past `len` are always zero (every
    /// constructor starts from zeros, and `prefix_end` clears what it
    /// cuts), so the zero-padded words order like the bytes, except that a
    /// key ordered equal to a longer one is a prefix of it: then the
    /// shorter sorts first.
    #[inline]
    fn cmp(&self, other: &Key) -> Ordering {
        let longest = self.len.max(other.len) as usize;
        if longest > KEY_INLINE {
            return self.as_bytes().cmp(other.as_bytes());
        }
        let words = longest.div_ceil(8);
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
    /// `Key(n)` for an 8-byte key (an integer key), else `Key(hex)`; a
    /// long key shows its first and last 16 bytes and its length.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len == 8 {
            return write!(f, "Key({})", self.to_u64().unwrap());
        }
        let b = self.as_bytes();
        write!(f, "Key(")?;
        if b.len() > 48 {
            for x in &b[..16] {
                write!(f, "{x:02x}")?;
            }
            write!(f, "..")?;
            for x in &b[b.len() - 16..] {
                write!(f, "{x:02x}")?;
            }
            return write!(f, "; {} bytes)", b.len());
        }
        for x in b {
            write!(f, "{x:02x}")?;
        }
        write!(f, ")")
    }
}

/// A key as text: its bytes when they are UTF-8 with no control
/// characters (a string key shows as itself), else as [`fmt::Debug`] shows
/// it (`Key(42)` for an integer key, hex otherwise).
///
/// ```
/// use multiverse::Key;
///
/// assert_eq!(Key::try_from("alice").unwrap().to_string(), "alice");
/// assert_eq!(Key::from(42).to_string(), "Key(42)");
/// assert_eq!(Key::try_from(&[0xffu8, 0][..]).unwrap().to_string(), "Key(ff00)");
/// ```
impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match std::str::from_utf8(self.as_bytes()) {
            Ok(s) if !s.is_empty() && !s.chars().any(char::is_control) => f.write_str(s),
            _ => fmt::Debug::fmt(self, f),
        }
    }
}

impl From<u64> for Key {
    #[inline]
    fn from(k: u64) -> Key {
        Key::from_u64(k)
    }
}

/// Builds a composite key part by part; every integer is written big-endian.
/// Parts stay inline while the key fits in [`KEY_INLINE`] bytes.
///
/// ```
/// use multiverse::Key;
///
/// // (warehouse, district, order) sorts like the tuple.
/// let key = |w: u32, d: u8, o: u64| Key::builder().u32(w).u8(d).u64(o).build().unwrap();
/// assert!(key(1, 9, 100) < key(2, 0, 0));
/// assert!(key(1, 2, 3) < key(1, 2, 4));
/// ```
#[derive(Clone)]
pub struct KeyBuilder {
    /// The key's bytes while they fit in [`KEY_INLINE`] (then `long` is
    /// empty and has no buffer): building an inline key never allocates,
    /// and the builder holds no `Key` (no drop glue on the common path).
    bytes: [u8; KEY_INLINE],
    /// How many of `bytes` are written.
    len: u16,
    /// All the bytes once they outgrew [`KEY_INLINE`].
    long: Vec<u8>,
    /// Bytes asked for beyond [`KEY_MAX`]: the key's length would have been
    /// `KEY_MAX + overflow` at least.
    overflow: usize,
}

impl KeyBuilder {
    /// Appends `b`: inline while the key fits (the common case, inlined
    /// into the caller), else [`KeyBuilder::push_long`].
    #[inline(always)]
    fn push(mut self, b: &[u8]) -> Self {
        let at = self.len as usize;
        if self.long.capacity() == 0 && at + b.len() <= KEY_INLINE {
            self.bytes[at..at + b.len()].copy_from_slice(b);
            self.len += b.len() as u16;
        } else {
            self.push_long(b);
        }
        self
    }

    /// [`KeyBuilder::push`] past [`KEY_INLINE`] bytes: spills to `long`,
    /// or counts the overflow past [`KEY_MAX`].
    #[cold]
    #[inline(never)]
    fn push_long(&mut self, b: &[u8]) {
        let at = if self.long.capacity() == 0 { self.len as usize } else { self.long.len() };
        if self.overflow > 0 || at + b.len() > KEY_MAX {
            self.overflow += b.len();
            return;
        }
        if self.long.capacity() == 0 {
            self.long.reserve(KEY_INLINE * 2);
            self.long.extend_from_slice(&self.bytes[..at]);
        }
        self.long.extend_from_slice(b);
    }

    /// Appends a `u8`.
    ///
    /// ```
    /// use multiverse::Key;
    ///
    /// assert_eq!(Key::builder().u8(7).build().unwrap().as_bytes(), [7]);
    /// ```
    #[inline]
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
    #[inline]
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
    #[inline]
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
    #[inline]
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
    #[inline]
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
    #[inline]
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
    /// The key; fails with [`Error::KeyTooLarge`] if the parts overflowed
    /// [`KEY_MAX`] bytes.
    ///
    /// ```
    /// use multiverse::{Error, Key, KEY_MAX};
    ///
    /// assert!(Key::builder().u32(1).build().is_ok());
    /// let too_long = (0..=KEY_MAX).fold(Key::builder(), |b, _| b.u8(0));
    /// assert!(matches!(too_long.build(), Err(Error::KeyTooLarge { .. })));
    /// ```
    #[inline]
    pub fn build(self) -> Result<Key, Error> {
        if self.long.capacity() == 0 && self.overflow == 0 {
            return Ok(Key { bytes: self.bytes, len: self.len });
        }
        self.build_long()
    }

    /// [`KeyBuilder::build`] of a key that outgrew [`KEY_INLINE`] bytes.
    #[cold]
    #[inline(never)]
    fn build_long(self) -> Result<Key, Error> {
        if self.overflow > 0 {
            let len = if self.long.capacity() == 0 { self.len as usize } else { self.long.len() };
            return Err(Error::KeyTooLarge { len: len + self.overflow, max: KEY_MAX });
        }
        Key::from_bytes(&self.long)
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

mod arg;
pub use arg::{IntoKey, KeyRange};

#[cfg(test)]
mod tests;
