//! TATP's keys: the non-uniform subscriber ids of the specification
//! ([`nurand`], [`SubscriberIds`]), `sub_nbr`, and the primary and index
//! keys of the four tables.

use super::*;

/// The specification's `A` for a population of `p` subscribers.
pub fn nurand_a(p: u64) -> u64 {
    if p <= 1_000_000 {
        65_535
    } else if p <= 10_000_000 {
        1_048_575
    } else {
        2_097_151
    }
}

/// The non-uniform subscriber id for `r_a` (uniform in `0..=A`) and `r_p`
/// (uniform in `1..=p`): `((r_a | r_p) % p) + 1`, in `1..=p`.
#[inline]
pub fn nurand(r_a: u64, r_p: u64, p: u64) -> u64 {
    ((r_a | r_p) % p) + 1
}

/// Draws subscriber ids with the specification's non-uniform distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubscriberIds {
    pub(super) a: u64,
    pub(super) p: u64,
}

impl SubscriberIds {
    /// For a population of `p >= 1` subscribers.
    pub fn new(p: u64) -> SubscriberIds {
        SubscriberIds { a: nurand_a(p), p: p.max(1) }
    }
    /// The constant `A`.
    pub fn a(&self) -> u64 {
        self.a
    }
    /// One id in `1..=p`.
    #[inline]
    pub fn sample(&self, rng: &mut SmallRng) -> u64 {
        let r_a = below(rng, self.a + 1);
        let r_p = 1 + below(rng, self.p);
        nurand(r_a, r_p, self.p)
    }
}

/// `s_id` in 15 zero-padded decimal digits.
#[inline]
pub fn sub_nbr(s_id: u64) -> [u8; 15] {
    let mut n = [b'0'; 15];
    let mut x = s_id;
    for b in n.iter_mut().rev() {
        *b = b'0' + (x % 10) as u8;
        x /= 10;
    }
    n
}

#[inline]
fn small(b: KeyBuilder) -> Key {
    b.build().expect("keys of at most 15 bytes fit")
}

/// SUBSCRIBER's primary key.
#[inline]
pub fn sub_key(s_id: u64) -> Key {
    Key::from_u64(s_id)
}

/// SUBSCRIBER's `sub_nbr` index key.
#[inline]
pub fn sub_nbr_key(s_id: u64) -> Key {
    small(Key::builder().bytes(&sub_nbr(s_id)))
}

/// The `s_id` index key of ACCESS_INFO and SPECIAL_FACILITY.
#[inline]
pub fn s_id_key(s_id: u64) -> Key {
    small(Key::builder().u32(s_id as u32))
}

/// ACCESS_INFO's primary key.
#[inline]
pub fn ai_key(s_id: u64, ai_type: u8) -> Key {
    small(Key::builder().u32(s_id as u32).u8(ai_type))
}

/// SPECIAL_FACILITY's primary key (also CALL_FORWARDING's `s_id, sf_type` index key).
#[inline]
pub fn sf_key(s_id: u64, sf_type: u8) -> Key {
    small(Key::builder().u32(s_id as u32).u8(sf_type))
}

/// CALL_FORWARDING's primary key.
#[inline]
pub fn cf_key(s_id: u64, sf_type: u8, start_time: u8) -> Key {
    small(Key::builder().u32(s_id as u32).u8(sf_type).u8(start_time))
}

/// The first `n` bytes of a primary key as a key (the empty key if shorter).
#[inline]
fn prefix(pk: &Key, n: usize) -> Key {
    pk.as_bytes().get(..n).and_then(|b| Key::from_bytes(b).ok()).unwrap_or(Key::EMPTY)
}

pub(super) fn sub_nbr_of(_pk: &Key, v: &[u8]) -> Key {
    v.get(..15).and_then(|b| Key::from_bytes(b).ok()).unwrap_or(Key::EMPTY)
}

pub(super) fn s_id_of(pk: &Key, _v: &[u8]) -> Key {
    prefix(pk, 4)
}

pub(super) fn sf_of(pk: &Key, _v: &[u8]) -> Key {
    prefix(pk, 5)
}
