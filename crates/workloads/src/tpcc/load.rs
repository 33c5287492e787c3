//! The initial population (clause 4.3.3.1), in units that load concurrently.
//!
//! Units, in order: the items in 10 chunks; then per warehouse its row, its
//! stock in 10 chunks and its 10 districts (each with its customers,
//! history, orders, order lines and new orders). [`crate::split_range`]
//! hands each loader a contiguous run of units. Every batch of rows is
//! generated from a seed of its own (unit and batch), so a retried batch and
//! a load at another thread count write the same rows.

use super::*;
use crate::split_range;
use rand::SeedableRng;

/// Item chunks, and stock chunks per warehouse.
const CHUNKS: u32 = 10;
/// Customers per load transaction.
const CUSTOMER_BATCH: u32 = 100;
/// Orders per load transaction.
const ORDER_BATCH: u32 = 50;
/// Units per warehouse: its row, its stock chunks, its districts.
const UNITS_PER_WAREHOUSE: u64 = 1 + CHUNKS as u64 + DISTRICTS as u64;
/// The load's date (nanoseconds since the epoch; fixed so a load is reproducible).
pub const LOAD_DATE: u64 = 1_700_000_000_000_000_000;

/// A generator for one batch: seeded by what it loads.
fn rng_for(parts: [u64; 4]) -> SmallRng {
    let mut h = 0x5443_5043_u64; // "TPCC"
    for p in parts {
        h = (h ^ p).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
    SmallRng::seed_from_u64(h)
}

/// Lines of order `o` of district `(w, d)` at load: uniform in 5..=15, a
/// function of the order alone (so [`TpccConfig::load_rows`] can count them).
pub fn load_ol_cnt(w: u16, d: u8, o: u32) -> u8 {
    let x = ((w as u64) << 40 | (d as u64) << 32 | o as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let x = (x ^ (x >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    5 + (((x ^ (x >> 29)) as u128 * 11) >> 64) as u8
}

/// Random alphanumeric characters into `out`.
pub(crate) fn alnum(rng: &mut SmallRng, out: &mut [u8]) {
    const CHARS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for b in out {
        *b = CHARS[below(rng, 62) as usize];
    }
}

/// An a-string of `lo..=hi` characters at the start of `out` (the rest zero); its length.
pub(crate) fn a_string(rng: &mut SmallRng, lo: usize, hi: usize, out: &mut [u8]) -> usize {
    let n = uniform(rng, lo as u64, hi as u64) as usize;
    alnum(rng, &mut out[..n]);
    out[n..].fill(0);
    n
}

fn digits(rng: &mut SmallRng, out: &mut [u8]) {
    for b in out {
        *b = b'0' + below(rng, 10) as u8;
    }
}

/// Street 1, street 2, city (10..=20 each), state (2 letters), zip (4 digits and "11111"): 71 bytes.
fn address(rng: &mut SmallRng, out: &mut [u8]) {
    for i in 0..3 {
        a_string(rng, 10, 20, &mut out[i * 20..i * 20 + 20]);
    }
    for b in &mut out[60..62] {
        *b = b'A' + below(rng, 26) as u8;
    }
    digits(rng, &mut out[62..66]);
    out[66..71].copy_from_slice(b"11111");
}

/// `i_data` / `s_data`: 26..=50 characters, 10% with "ORIGINAL" somewhere.
fn data_with_original(rng: &mut SmallRng, out: &mut [u8]) {
    let n = a_string(rng, 26, 50, out);
    if below(rng, 10) == 0 {
        let at = below(rng, (n - 8 + 1) as u64) as usize;
        out[at..at + 8].copy_from_slice(b"ORIGINAL");
    }
}

/// Loads slice `part` of `parts` of the population.
pub(super) fn load<S: Store>(
    w: &Tpcc,
    db: &S,
    part: usize,
    parts: usize,
    progress: &(impl Fn(u64) + Sync),
) -> Result<()> {
    let units = CHUNKS as u64 + w.cfg.warehouses as u64 * UNITS_PER_WAREHOUSE;
    for unit in split_range(units, part, parts) {
        if unit < CHUNKS as u64 {
            items(w, db, unit as u32, progress)?;
            continue;
        }
        let u = unit - CHUNKS as u64;
        let wh = (u / UNITS_PER_WAREHOUSE + 1) as u16;
        match (u % UNITS_PER_WAREHOUSE) as u32 {
            0 => warehouse(w, db, wh, progress)?,
            k if k <= CHUNKS => stock(w, db, wh, k - 1, progress)?,
            k => district(w, db, wh, (k - CHUNKS) as u8, progress)?,
        }
    }
    Ok(())
}

/// Runs `body` as one load transaction and reports `rows`.
fn batch<S: Store>(
    db: &S,
    rows: u64,
    progress: &(impl Fn(u64) + Sync),
    body: impl FnMut(&mut S::Tx<'_>) -> Result<()>,
) -> Result<()> {
    db.load_txn(body)?;
    progress(rows);
    Ok(())
}

fn items<S: Store>(w: &Tpcc, db: &S, chunk: u32, progress: &(impl Fn(u64) + Sync)) -> Result<()> {
    let per = ITEMS / CHUNKS;
    for lo in (chunk * per..(chunk + 1) * per).step_by(1000) {
        batch(db, 1000, progress, |t| {
            let mut rng = rng_for([1, lo as u64, 0, 0]);
            let mut v = [0u8; I_LEN];
            for i in lo + 1..=lo + 1000 {
                put_u32(&mut v, I_IM_ID, uniform(&mut rng, 1, 10_000) as u32);
                put_i64(&mut v, I_PRICE, uniform(&mut rng, 100, 10_000) as i64);
                a_string(&mut rng, 14, 24, &mut v[I_NAME..I_NAME + 24]);
                data_with_original(&mut rng, &mut v[I_DATA..I_DATA + 50]);
                t.insert(w.item, i_key(i), &v)?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

fn warehouse<S: Store>(w: &Tpcc, db: &S, wh: u16, progress: &(impl Fn(u64) + Sync)) -> Result<()> {
    batch(db, 1, progress, |t| {
        let mut rng = rng_for([2, wh as u64, 0, 0]);
        let mut v = [0u8; W_LEN];
        put_i64(&mut v, W_YTD, 30_000_000);
        put_u32(&mut v, W_TAX, below(&mut rng, 2001) as u32);
        a_string(&mut rng, 6, 10, &mut v[W_NAME..W_NAME + 10]);
        address(&mut rng, &mut v[W_NAME + 10..W_LEN]);
        t.insert(w.warehouse, w_key(wh), &v)
    })
}

fn stock<S: Store>(w: &Tpcc, db: &S, wh: u16, chunk: u32, progress: &(impl Fn(u64) + Sync)) -> Result<()> {
    let per = ITEMS / CHUNKS;
    for lo in (chunk * per..(chunk + 1) * per).step_by(500) {
        batch(db, 500, progress, |t| {
            let mut rng = rng_for([3, wh as u64, lo as u64, 0]);
            let mut v = [0u8; S_LEN];
            for i in lo + 1..=lo + 500 {
                put_u32(&mut v, S_QUANTITY, uniform(&mut rng, 10, 100) as u32);
                alnum(&mut rng, &mut v[S_DIST..S_DATA]);
                data_with_original(&mut rng, &mut v[S_DATA..S_LEN]);
                t.insert(w.stock, s_key(wh, i), &v)?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// A customer row (clause 4.3.3.1, CUSTOMER).
fn customer_value(rng: &mut SmallRng, c: u32, v: &mut [u8; C_LEN]) {
    v.fill(0);
    put_i64(v, C_BALANCE, -1_000);
    put_i64(v, C_YTD_PAYMENT, 1_000);
    put_u32(v, C_PAYMENT_CNT, 1);
    put_u32(v, C_DELIVERY_CNT, 0);
    put_u32(v, C_DISCOUNT, below(rng, 5001) as u32);
    v[C_CREDIT..C_CREDIT + 2].copy_from_slice(if below(rng, 10) == 0 { b"BC" } else { b"GC" });
    put_i64(v, C_CREDIT_LIM, 5_000_000);
    put_u64(v, C_SINCE, LOAD_DATE);
    a_string(rng, 8, 16, &mut v[C_FIRST..C_FIRST + 16]);
    v[C_MIDDLE..C_MIDDLE + 2].copy_from_slice(b"OE");
    let n = if c <= 1000 { c - 1 } else { nurand(rng, 255, C_LAST_LOAD, 0, 999) as u32 };
    let mut last = [0u8; 16];
    last_name(n, &mut last);
    v[C_LAST..C_LAST + 16].copy_from_slice(&last);
    address(rng, &mut v[C_STREET..C_STREET + 71]);
    digits(rng, &mut v[C_STREET + 71..C_STREET + 87]);
    let len = a_string(rng, 300, 500, &mut v[C_DATA..C_LEN]);
    v[C_DATA_LEN..C_DATA_LEN + 2].copy_from_slice(&(len as u16).to_le_bytes());
}

/// A history row: the customer `(c_w, c_d, c)` paid `amount` at district
/// `(w, d)` on `date`.
pub(crate) fn history_value(
    (c_w, c_d, c): (u16, u8, u32),
    (wh, d): (u16, u8),
    date: u64,
    amount: i64,
    data: &[u8],
) -> [u8; H_LEN] {
    let mut v = [0u8; H_LEN];
    put_u32(&mut v, 0, c);
    v[4] = c_d;
    v[5..7].copy_from_slice(&c_w.to_le_bytes());
    v[7] = d;
    v[8..10].copy_from_slice(&wh.to_le_bytes());
    put_u64(&mut v, 10, date);
    put_i64(&mut v, H_AMOUNT, amount);
    let n = data.len().min(24);
    v[26..26 + n].copy_from_slice(&data[..n]);
    v
}

fn district<S: Store>(w: &Tpcc, db: &S, wh: u16, d: u8, progress: &(impl Fn(u64) + Sync)) -> Result<()> {
    batch(db, 1, progress, |t| {
        let mut rng = rng_for([4, wh as u64, d as u64, 0]);
        let mut v = [0u8; D_LEN];
        put_i64(&mut v, D_YTD, 3_000_000);
        put_u32(&mut v, D_TAX, below(&mut rng, 2001) as u32);
        put_u32(&mut v, D_NEXT_O_ID, ORDERS + 1);
        a_string(&mut rng, 6, 10, &mut v[D_NAME..D_NAME + 10]);
        address(&mut rng, &mut v[D_NAME + 10..D_LEN]);
        t.insert(w.district, d_key(wh, d), &v)
    })?;
    for lo in (0..CUSTOMERS).step_by(CUSTOMER_BATCH as usize) {
        batch(db, 2 * CUSTOMER_BATCH as u64, progress, |t| {
            let mut rng = rng_for([5, wh as u64, d as u64, lo as u64]);
            let mut v = [0u8; C_LEN];
            let mut data = [0u8; 24];
            for c in lo + 1..=lo + CUSTOMER_BATCH {
                customer_value(&mut rng, c, &mut v);
                t.insert(w.customer, c_key(wh, d, c), &v)?;
                let n = a_string(&mut rng, 12, 24, &mut data);
                let h = history_value((wh, d, c), (wh, d), LOAD_DATE, 1_000, &data[..n]);
                t.insert(w.history, h_key(wh, u16::MAX, ((d as u64) << 32) | c as u64), &h)?;
            }
            Ok(())
        })?;
    }
    // o_c_id: a random permutation of the customers.
    let mut perm: Vec<u32> = (1..=CUSTOMERS).collect();
    let mut rng = rng_for([6, wh as u64, d as u64, 0]);
    for i in (1..perm.len()).rev() {
        perm.swap(i, below(&mut rng, i as u64 + 1) as usize);
    }
    for lo in (0..ORDERS).step_by(ORDER_BATCH as usize) {
        let mut rows = 0;
        db.load_txn(|t| {
            rows = 0;
            let mut rng = rng_for([7, wh as u64, d as u64, lo as u64]);
            let mut ov = [0u8; O_LEN];
            let mut lv = [0u8; OL_LEN];
            for o in lo + 1..=lo + ORDER_BATCH {
                let delivered = o < FIRST_NEW_ORDER;
                let ol_cnt = load_ol_cnt(wh, d, o);
                put_u32(&mut ov, O_C_ID, perm[o as usize - 1]);
                put_u64(&mut ov, O_ENTRY_D, LOAD_DATE);
                ov[O_CARRIER_ID] = if delivered { uniform(&mut rng, 1, 10) as u8 } else { 0 };
                ov[O_OL_CNT] = ol_cnt;
                ov[O_ALL_LOCAL] = 1;
                t.insert(w.order, o_key(wh, d, o), &ov)?;
                for ol in 1..=ol_cnt {
                    put_u32(&mut lv, OL_I_ID, uniform(&mut rng, 1, ITEMS as u64) as u32);
                    lv[OL_SUPPLY_W_ID..OL_SUPPLY_W_ID + 2].copy_from_slice(&wh.to_le_bytes());
                    put_u64(&mut lv, OL_DELIVERY_D, if delivered { LOAD_DATE } else { 0 });
                    lv[OL_QUANTITY] = 5;
                    put_i64(&mut lv, OL_AMOUNT, if delivered { 0 } else { uniform(&mut rng, 1, 999_999) as i64 });
                    alnum(&mut rng, &mut lv[OL_DIST_INFO..OL_LEN]);
                    t.insert(w.order_line, ol_key(wh, d, o, ol), &lv)?;
                }
                rows += 1 + ol_cnt as u64;
                if !delivered {
                    t.insert(w.new_order, o_key(wh, d, o), &[])?;
                    rows += 1;
                }
            }
            Ok(())
        })?;
        progress(rows);
    }
    Ok(())
}
