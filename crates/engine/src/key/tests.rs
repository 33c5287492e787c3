//! Unit tests of `Key` and `KeyBuilder`.

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
        // Mostly inline lengths, some long ones (just past the inline
        // size, and up to the maximum), so that both representations
        // meet in the comparisons.
        let len = match n % 5 {
            4 => KEY_INLINE + 1 + (x % 40) as usize,
            3 if n % 15 == 3 => KEY_MAX - (x % 3) as usize,
            _ => (x % 33) as usize,
        };
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
    assert_eq!(Key::from_bytes(&[1u8; KEY_MAX + 1]).err(), Some(Error::KeyTooLarge { len: KEY_MAX + 1, max: KEY_MAX }));
    assert!(Key::from_bytes(&[1u8; KEY_MAX]).is_ok());
    let b = Key::builder().bytes(&[7; KEY_MAX - 8]).u64(1);
    assert_eq!(b.clone().build().unwrap().len(), KEY_MAX);
    assert_eq!(b.u8(5).u32(1).build().err(), Some(Error::KeyTooLarge { len: KEY_MAX + 5, max: KEY_MAX }));
}

/// `Key::hash64` (a word at a time over the inline bytes) is
/// `hash_bytes` of the key's bytes at every length, inline or long
/// (hash indexes hash stored versions' bytes and probe with keys).
#[test]
fn hash64_is_hash_bytes_at_every_length() {
    for n in 0..=KEY_INLINE + 9 {
        let b: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(151).wrapping_add(7)).collect();
        assert_eq!(Key::from_bytes(&b).unwrap().hash64(), hash_bytes(&b), "len {n}");
    }
    assert_eq!(Key::MAX.hash64(), hash_bytes(&[0xFF; KEY_MAX]));
}

#[test]
fn short_keys_stay_inline_and_long_ones_do_not() {
    for n in [0, 1, 8, KEY_INLINE] {
        let k = Key::from_bytes(&vec![3u8; n]).unwrap();
        assert!(k.is_inline() && k.len() == n);
    }
    for n in [KEY_INLINE + 1, 100, KEY_MAX] {
        let k = Key::from_bytes(&vec![3u8; n]).unwrap();
        assert!(!k.is_inline() && k.len() == n && k.as_bytes() == &vec![3u8; n][..]);
    }
    // The builder moves to the heap only when the key outgrows the
    // inline size, and the result equals the key from the same bytes.
    let k = Key::builder().u64(1).u64(2).u64(3).u64(4).build().unwrap();
    assert!(k.is_inline());
    let k = Key::builder().u64(1).u64(2).u64(3).u64(4).u8(5).str_fixed("ab", 4).build().unwrap();
    assert!(!k.is_inline());
    let mut want = Vec::new();
    for i in 1..=4u64 {
        want.extend_from_slice(&i.to_be_bytes());
    }
    want.extend_from_slice(&[5, b'a', b'b', 0, 0]);
    assert_eq!(k, Key::from_bytes(&want).unwrap());
    assert_eq!(k.hash64(), hash_bytes(&want));
    assert_eq!(k.u64_at(24), Some(4));
}

#[test]
fn long_keys_share_their_buffer_and_free_it() {
    let k = Key::from_bytes(&[9u8; 100]).unwrap();
    let copies: Vec<Key> = (0..10).map(|_| k.clone()).collect();
    let addr = k.long_addr();
    let p = k.long_ptr();
    // SAFETY: `p` is the key's Arc data pointer (the type's docs);
    // the count is only read, and `k` keeps the Arc alive.
    let count = || unsafe {
        let a = Arc::from_raw(ptr::slice_from_raw_parts(p, 100));
        let n = Arc::strong_count(&a);
        std::mem::forget(a);
        n
    };
    assert_eq!(count(), 11);
    assert!(copies.iter().all(|c| c.long_addr() == addr && *c == k));
    drop(copies);
    assert_eq!(count(), 1);
}

#[test]
fn max_is_the_greatest_key() {
    let max = Key::from_bytes(&[0xFF; KEY_MAX]).unwrap();
    assert_eq!(Key::MAX, max);
    assert_eq!(Key::MAX.hash64(), max.hash64());
    assert_eq!(Key::MAX.cmp(&max), Ordering::Equal);
    assert_eq!(Key::MAX.clone().len(), KEY_MAX);
    for k in [Key::EMPTY, Key::from(u64::MAX), Key::from_bytes(&[0xFF; KEY_MAX - 1]).unwrap()] {
        assert!(k < Key::MAX && Key::MAX.cmp(&k) == Ordering::Greater, "{k:?}");
    }
    assert_eq!(Key::MAX.prefix_end(), None);
}

#[test]
fn prefix_end_of_long_keys() {
    let mut b = vec![1u8; 40];
    b.extend_from_slice(&[0xFF; 10]);
    let k = Key::from_bytes(&b).unwrap();
    let mut want = vec![1u8; 39];
    want.push(2);
    assert_eq!(k.prefix_end(), Some(Key::from_bytes(&want).unwrap()));
    // The end of a long key that shortens to the inline size is inline.
    let mut b = vec![1u8; KEY_INLINE];
    b.extend_from_slice(&[0xFF; 8]);
    let end = Key::from_bytes(&b).unwrap().prefix_end().unwrap();
    assert!(end.is_inline() && end.len() == KEY_INLINE);
}

#[test]
fn debug_shows_long_keys_shortened() {
    assert_eq!(format!("{:?}", Key::from(7)), "Key(7)");
    assert_eq!(format!("{:?}", Key::from_bytes(b"ab").unwrap()), "Key(6162)");
    let s = format!("{:?}", Key::from_bytes(&[0xAB; 300]).unwrap());
    assert!(s.ends_with("; 300 bytes)") && s.len() < 100, "{s}");
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
