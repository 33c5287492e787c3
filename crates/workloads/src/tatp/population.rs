//! TATP's population: which rows each subscriber has ([`shape`]), the
//! rows themselves ([`populate`]), and how many each table holds
//! ([`Counts`]), all functions of the subscriber id alone.

use super::*;

/// Which rows a subscriber has: bit `t` of `ai` / `sf` for `ai_type` /
/// `sf_type` `t` (1..=4); bit `i` of `cf[t]` for call forwarding
/// `(t, START_TIMES[i])`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// Access-info types present.
    pub ai: u8,
    /// Special-facility types present.
    pub sf: u8,
    /// Call-forwarding start-time slots present, per special-facility type.
    pub cf: [u8; 5],
}

impl Shape {
    /// Rows of each table: (access info, special facility, call forwarding).
    pub fn counts(&self) -> (u64, u64, u64) {
        let cf: u32 = self.cf.iter().map(|m| m.count_ones()).sum();
        (self.ai.count_ones() as u64, self.sf.count_ones() as u64, cf as u64)
    }
}

/// `k` distinct random bits among the lowest `n` (positions shifted by `base`).
fn subset(rng: &mut SmallRng, n: usize, k: usize, base: u8) -> u8 {
    let mut items = [0u8, 1, 2, 3];
    for i in 0..k {
        let j = i + below(rng, (n - i) as u64) as usize;
        items.swap(i, j);
    }
    items[..k].iter().fold(0, |m, &i| m | 1 << (i + base))
}

/// The rows subscriber `s_id` has (a function of `s_id` alone).
pub fn shape(s_id: u64) -> Shape {
    let mut rng = SmallRng::seed_from_u64(s_id.wrapping_mul(0xA24B_AED4_963E_E407) ^ 0x7A79_5A4E);
    let n_ai = 1 + below(&mut rng, 4) as usize;
    let ai = subset(&mut rng, 4, n_ai, 1);
    let n_sf = 1 + below(&mut rng, 4) as usize;
    let sf = subset(&mut rng, 4, n_sf, 1);
    let mut cf = [0u8; 5];
    for (t, slot) in cf.iter_mut().enumerate().skip(1) {
        if sf & (1 << t) != 0 {
            let k = below(&mut rng, 4) as usize;
            *slot = subset(&mut rng, 3, k, 0);
        }
    }
    Shape { ai, sf, cf }
}

/// One populated row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// The SUBSCRIBER row.
    Subscriber([u8; SUB_LEN]),
    /// An ACCESS_INFO row: `ai_type`, value.
    AccessInfo(u8, [u8; AI_LEN]),
    /// A SPECIAL_FACILITY row: `sf_type`, value.
    SpecialFacility(u8, [u8; SF_LEN]),
    /// A CALL_FORWARDING row: `sf_type`, `start_time`, value.
    CallForwarding(u8, u8, [u8; CF_LEN]),
}

pub(super) fn letters(rng: &mut SmallRng, out: &mut [u8]) {
    for b in out {
        *b = b'A' + below(rng, 26) as u8;
    }
}

pub(super) fn digits(rng: &mut SmallRng, out: &mut [u8]) {
    for b in out {
        *b = b'0' + below(rng, 10) as u8;
    }
}

/// Calls `emit` with every initial row of subscriber `s_id`: the subscriber,
/// then its access infos, special facilities and call forwardings, each in
/// key order. The same `s_id` always gives the same rows.
pub fn populate(s_id: u64, mut emit: impl FnMut(Row)) {
    let sh = shape(s_id);
    let mut rng = SmallRng::seed_from_u64(s_id.wrapping_mul(0x9FB2_1C65_1E98_DF25) ^ 0xDA7A);
    let mut sub = [0u8; SUB_LEN];
    sub[..15].copy_from_slice(&sub_nbr(s_id));
    sub[SUB_BITS..SUB_BITS + 2].copy_from_slice(&((rng.next_u32() & 0x3FF) as u16).to_le_bytes());
    for b in &mut sub[17..27] {
        *b = below(&mut rng, 16) as u8;
    }
    for b in &mut sub[27..37] {
        *b = below(&mut rng, 256) as u8;
    }
    for at in [SUB_MSC, SUB_VLR] {
        let loc = 1 + below(&mut rng, u32::MAX as u64) as u32;
        sub[at..at + 4].copy_from_slice(&loc.to_le_bytes());
    }
    emit(Row::Subscriber(sub));
    for t in 1..=4u8 {
        if sh.ai & (1 << t) != 0 {
            let mut v = [0u8; AI_LEN];
            v[0] = below(&mut rng, 256) as u8;
            v[1] = below(&mut rng, 256) as u8;
            letters(&mut rng, &mut v[2..5]);
            letters(&mut rng, &mut v[5..10]);
            emit(Row::AccessInfo(t, v));
        }
    }
    for t in 1..=4u8 {
        if sh.sf & (1 << t) != 0 {
            let mut v = [0u8; SF_LEN];
            v[0] = (below(&mut rng, 100) < 85) as u8;
            v[1] = below(&mut rng, 256) as u8;
            v[2] = below(&mut rng, 256) as u8;
            letters(&mut rng, &mut v[3..8]);
            emit(Row::SpecialFacility(t, v));
        }
    }
    for t in 1..=4u8 {
        for (i, &st) in START_TIMES.iter().enumerate() {
            if sh.cf[t as usize] & (1 << i) != 0 {
                emit(Row::CallForwarding(t, st, cf_value(&mut rng, st)));
            }
        }
    }
}

/// A call-forwarding value starting at `start_time`: `end_time = start_time
/// + rand(1, 8)` and a random 15-digit `numberx`.
fn cf_value(rng: &mut SmallRng, start_time: u8) -> [u8; CF_LEN] {
    let mut v = [0u8; CF_LEN];
    v[0] = start_time + 1 + below(rng, 8) as u8;
    digits(rng, &mut v[1..]);
    v
}

/// Rows of each table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// SUBSCRIBER rows.
    pub subscribers: u64,
    /// ACCESS_INFO rows.
    pub access_info: u64,
    /// SPECIAL_FACILITY rows.
    pub special_facility: u64,
    /// CALL_FORWARDING rows.
    pub call_forwarding: u64,
}

impl Counts {
    /// Rows in all.
    pub fn total(&self) -> u64 {
        self.subscribers + self.access_info + self.special_facility + self.call_forwarding
    }
}
