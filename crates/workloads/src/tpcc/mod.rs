//! TPC-C (TPC Benchmark C, standard specification revision 5.11): all nine
//! tables, the five transactions with the standard mix, the TPC-CC variant
//! of the SSN paper (`ssn-serial-safety-net.txt` section 8.1) and the
//! NewOrder-only loop of the POMVCC paper (`pomvcc-2018.txt` section VII,
//! Figure 21).
//!
//! # Schema (spec clause 1.3)
//!
//! Every value is a fixed layout of little-endian fields (money in cents as
//! `i64`, rates in units of 1/10,000 as `u32`, dates as `u64` nanoseconds,
//! strings zero-padded); the offsets are the `W_*`, `D_*`, `C_*`... constants.
//! Composite keys are big-endian ([`Key::builder`]), so that byte order is
//! tuple order and a range of an ordered index is a prefix.
//!
//! | table | primary key | index | other index |
//! | --- | --- | --- | --- |
//! | `WAREHOUSE` | `w` (`u16`) | hash | |
//! | `DISTRICT` | `w, d` (`u8`) | hash | |
//! | `CUSTOMER` | `w, d, c` (`u32`) | hash | `by_last`: ordered on `w, d, c_last, c_first`, grouped by `w, d, c_last` |
//! | `HISTORY` | `w, worker` (`u16`), `seq` (`u64`) (the spec gives none) | hash | |
//! | `NEW_ORDER` | `w, d, o` (`u32`) | ordered (oldest first), grouped by `w, d` | |
//! | `ORDER` | `w, d, o` | hash | `by_customer`: ordered on `w, d, c, !o` (latest first), grouped by `w, d, c` |
//! | `ORDER_LINE` | `w, d, o, ol` (`u8`) | hash | |
//! | `ITEM` | `i` (`u32`) | hash | |
//! | `STOCK` | `w, i` | hash | |
//!
//! The ordered indexes serve the scans the specification needs: the oldest
//! undelivered order of a district (Delivery), the last order of a customer
//! (Order-Status), a customer by last name, the middle one by first name
//! (Payment, Order-Status). Each is grouped by the prefix those scans fix
//! ([`IndexKind::OrderedGrouped`]): a new order is filed among its
//! customer's few orders, not searched for among all orders. The lines of an order are read by key, `ol` from
//! 1 to the order's `o_ol_cnt` (consistency condition 4 makes that the same
//! set), and Stock-Level reads the last 20 orders by key the same way: a
//! hash insert costs a fraction of a skip-list insert, and ORDER_LINE takes
//! ten inserts per NewOrder. The bucket arrays of the growing tables are
//! sized for long runs ([`OL_BUCKETS_PER_WAREHOUSE`]...); a bucket array is
//! fixed, so a much longer run lengthens their chains. The `by_last` key
//! holds `c_last` (at most 15 characters, clause 4.3.2.3) and the first 14
//! bytes of `c_first`: customers whose first names agree in their first 14
//! characters (random strings of 8 to 16) are ordered by `c_id` instead.
//!
//! # Population (clause 4.3.3.1)
//!
//! As specified: 100,000 items (10% "ORIGINAL"), per warehouse 100,000
//! stock rows and 10 districts, per district 3,000 customers (the first
//! 1,000 with last names 0..999 in order, the rest `NURand(255, 0, 999)`;
//! 10% bad credit), one history row per customer, 3,000 orders whose
//! customers are a random permutation, 5 to 15 lines each, and new orders
//! for the last 900 orders. Each part is generated from its own seed, so the
//! load is the same at every thread count.
//!
//! # Transactions (clauses 2.4 to 2.8; the standard mix 45/43/4/4/4)
//!
//! * `new-order` (2.4): 5 to 15 distinct items (`NURand(8191, 1, 100000)`),
//!   each supplied by a remote warehouse with probability 1%; 1% of them
//!   name an unused item last and roll back ([`crate::TxnError::Rollback`]: a
//!   `user` abort, after the order and its earlier lines were written, as the
//!   specification says).
//! * `payment` (2.5): 85% a customer of the home warehouse and district, 15%
//!   of a random other warehouse; 60% by last name, 40% by id; bad-credit
//!   customers get the payment prepended to `c_data`.
//! * `order-status` (2.6, read-only): a customer (60% by last name), the
//!   last order and its lines.
//! * `delivery` (2.7): the oldest new order of each of the 10 districts,
//!   delivered in one transaction (the specification allows deferring it;
//!   here it runs at once).
//! * `stock-level` (2.8, read-only): distinct items of the district's last
//!   20 orders with stock below a threshold in 10..=20.
//! * `new-order-lines` (POMVCC section VII, Figure 21; not in the standard
//!   mix): 5 to 15 times read an item, read and update its stock, insert an
//!   order line. Its lines go under district 0 (no real district) keyed by
//!   worker and sequence, so consistency condition 4 still holds for the
//!   real districts. `--mix new-order-lines:100` is that mode; `--mix
//!   new-order:100` runs the full NewOrder alone.
//!
//! Each worker has a home warehouse (`thread % warehouses + 1`), as in the
//! SSN paper's TPC-C; in TPC-CC ([`TpccConfig::random_warehouse`]) every
//! transaction picks a random one. There are no terminals, keying or think
//! times: workers run transactions back to back (closed loop). The
//! Stock-Level district is drawn per transaction (the specification fixes
//! it per terminal).
//!
//! `skip_inserts` ([`TpccConfig::skip_inserts`], `--tpcc-no-inserts`)
//! reproduces the DBx1000 testbed's TPC-C, which writes no ORDER, NEW_ORDER,
//! ORDER_LINE or HISTORY rows: only for side-by-side numbers.
//!
//! **After a run** ([`Workload::check_consistency`]): consistency conditions
//! 1 to 4 of clause 3.3.2 on every warehouse and district, and the number of
//! orders and history rows against the committed NewOrders and Payments.
//! [`Workload::check_state`] checks conditions 1 to 4 alone: they need no
//! tallies of the run (a database recovered from disk, say).

mod check;
mod load;
mod txn;

pub use load::{load_ol_cnt, LOAD_DATE};
pub use txn::{Outcome, TpccInput, TpccWorker};

use crate::{Mix, Param, Store, StoreTxn, Txn, Workload};
use multiverse::{Error, IndexId, IndexKind, Key, Result, TableId, TableSpec};
use rand::rngs::SmallRng;
use rand::RngCore;
use std::sync::atomic::{AtomicU64, Ordering};

/// The transaction types, in the order of [`Workload::txn_types`].
pub const TYPES: &[&str] = &["new-order", "payment", "order-status", "delivery", "stock-level", "new-order-lines"];
/// The standard mix (clause 5.2.3), in percent, in the order of [`TYPES`].
pub const DEFAULT_PCT: [f64; 6] = [45.0, 43.0, 4.0, 4.0, 4.0, 0.0];
/// Index of `new-order` in [`TYPES`].
pub const NEW_ORDER: usize = 0;
/// Index of `payment` in [`TYPES`].
pub const PAYMENT: usize = 1;
/// Index of `order-status` in [`TYPES`].
pub const ORDER_STATUS: usize = 2;
/// Index of `delivery` in [`TYPES`].
pub const DELIVERY: usize = 3;
/// Index of `stock-level` in [`TYPES`].
pub const STOCK_LEVEL: usize = 4;
/// Index of `new-order-lines` (POMVCC's loop) in [`TYPES`].
pub const NEW_ORDER_LINES: usize = 5;
const NTYPES: usize = 6;

/// Items (clause 4.3.3.1).
pub const ITEMS: u32 = 100_000;
/// Districts per warehouse.
pub const DISTRICTS: u8 = 10;
/// Customers per district.
pub const CUSTOMERS: u32 = 3_000;
/// Orders per district at load.
pub const ORDERS: u32 = 3_000;
/// The first order of the load still undelivered (orders 2101..=3000 have a new order).
pub const FIRST_NEW_ORDER: u32 = 2_101;
/// Most warehouses.
pub const MAX_WAREHOUSES: u32 = 10_000;

/// The table names.
pub mod names {
    /// WAREHOUSE.
    pub const WAREHOUSE: &str = "tpcc.warehouse";
    /// DISTRICT.
    pub const DISTRICT: &str = "tpcc.district";
    /// CUSTOMER.
    pub const CUSTOMER: &str = "tpcc.customer";
    /// HISTORY.
    pub const HISTORY: &str = "tpcc.history";
    /// NEW_ORDER.
    pub const NEW_ORDER: &str = "tpcc.new_order";
    /// ORDER.
    pub const ORDER: &str = "tpcc.order";
    /// ORDER_LINE.
    pub const ORDER_LINE: &str = "tpcc.order_line";
    /// ITEM.
    pub const ITEM: &str = "tpcc.item";
    /// STOCK.
    pub const STOCK: &str = "tpcc.stock";
    /// CUSTOMER's index on last and first name.
    pub const BY_LAST: &str = "by_last";
    /// ORDER's index on customer and order, latest first.
    pub const BY_CUSTOMER: &str = "by_customer";
}

// Value layouts: (offset, and for strings the width).

/// WAREHOUSE: `w_ytd` (`i64` cents).
pub const W_YTD: usize = 0;
/// WAREHOUSE: `w_tax` (`u32`, 1/10,000).
pub const W_TAX: usize = 8;
/// WAREHOUSE: `w_name` (10 bytes), then street 1 and 2, city (20 each), state (2), zip (9).
pub const W_NAME: usize = 12;
/// Bytes of a WAREHOUSE value.
pub const W_LEN: usize = 93;

/// DISTRICT: `d_ytd` (`i64` cents).
pub const D_YTD: usize = 0;
/// DISTRICT: `d_tax` (`u32`).
pub const D_TAX: usize = 8;
/// DISTRICT: `d_next_o_id` (`u32`).
pub const D_NEXT_O_ID: usize = 12;
/// DISTRICT: `d_name` (10 bytes), then the address as in WAREHOUSE.
pub const D_NAME: usize = 16;
/// Bytes of a DISTRICT value.
pub const D_LEN: usize = 97;

/// CUSTOMER: `c_balance` (`i64` cents).
pub const C_BALANCE: usize = 0;
/// CUSTOMER: `c_ytd_payment` (`i64` cents).
pub const C_YTD_PAYMENT: usize = 8;
/// CUSTOMER: `c_payment_cnt` (`u32`).
pub const C_PAYMENT_CNT: usize = 16;
/// CUSTOMER: `c_delivery_cnt` (`u32`).
pub const C_DELIVERY_CNT: usize = 20;
/// CUSTOMER: `c_discount` (`u32`, 1/10,000).
pub const C_DISCOUNT: usize = 24;
/// CUSTOMER: `c_credit` (2 bytes, "GC" or "BC").
pub const C_CREDIT: usize = 28;
/// CUSTOMER: `c_credit_lim` (`i64` cents).
pub const C_CREDIT_LIM: usize = 30;
/// CUSTOMER: `c_since` (`u64`).
pub const C_SINCE: usize = 38;
/// CUSTOMER: `c_first` (16 bytes).
pub const C_FIRST: usize = 46;
/// CUSTOMER: `c_middle` (2 bytes, "OE").
pub const C_MIDDLE: usize = 62;
/// CUSTOMER: `c_last` (16 bytes).
pub const C_LAST: usize = 64;
/// CUSTOMER: street 1 and 2, city (20 each), state (2), zip (9), phone (16).
pub const C_STREET: usize = 80;
/// CUSTOMER: length of `c_data` (`u16`).
pub const C_DATA_LEN: usize = 167;
/// CUSTOMER: `c_data` (up to 500 bytes).
pub const C_DATA: usize = 169;
/// Most bytes of `c_data`.
pub const C_DATA_MAX: usize = 500;
/// Bytes of a CUSTOMER value.
pub const C_LEN: usize = C_DATA + C_DATA_MAX;

/// HISTORY: `h_c_id` (`u32`), `h_c_d_id` (`u8`), `h_c_w_id` (`u16`), `h_d_id`
/// (`u8`), `h_w_id` (`u16`), `h_date` (`u64`), `h_amount` (`i64`), `h_data` (24).
pub const H_AMOUNT: usize = 18;
/// Bytes of a HISTORY value.
pub const H_LEN: usize = 50;

/// ORDER: `o_c_id` (`u32`).
pub const O_C_ID: usize = 0;
/// ORDER: `o_entry_d` (`u64`).
pub const O_ENTRY_D: usize = 4;
/// ORDER: `o_carrier_id` (`u8`, 0 for null).
pub const O_CARRIER_ID: usize = 12;
/// ORDER: `o_ol_cnt` (`u8`).
pub const O_OL_CNT: usize = 13;
/// ORDER: `o_all_local` (`u8`).
pub const O_ALL_LOCAL: usize = 14;
/// Bytes of an ORDER value.
pub const O_LEN: usize = 15;

/// ORDER_LINE: `ol_i_id` (`u32`).
pub const OL_I_ID: usize = 0;
/// ORDER_LINE: `ol_supply_w_id` (`u16`).
pub const OL_SUPPLY_W_ID: usize = 4;
/// ORDER_LINE: `ol_delivery_d` (`u64`, 0 for null).
pub const OL_DELIVERY_D: usize = 6;
/// ORDER_LINE: `ol_quantity` (`u8`).
pub const OL_QUANTITY: usize = 14;
/// ORDER_LINE: `ol_amount` (`i64` cents).
pub const OL_AMOUNT: usize = 15;
/// ORDER_LINE: `ol_dist_info` (24 bytes).
pub const OL_DIST_INFO: usize = 23;
/// Bytes of an ORDER_LINE value.
pub const OL_LEN: usize = 47;

/// ITEM: `i_im_id` (`u32`).
pub const I_IM_ID: usize = 0;
/// ITEM: `i_price` (`i64` cents).
pub const I_PRICE: usize = 4;
/// ITEM: `i_name` (24 bytes).
pub const I_NAME: usize = 12;
/// ITEM: `i_data` (50 bytes).
pub const I_DATA: usize = 36;
/// Bytes of an ITEM value.
pub const I_LEN: usize = 86;

/// STOCK: `s_quantity` (`u32`).
pub const S_QUANTITY: usize = 0;
/// STOCK: `s_ytd` (`u32`).
pub const S_YTD: usize = 4;
/// STOCK: `s_order_cnt` (`u32`).
pub const S_ORDER_CNT: usize = 8;
/// STOCK: `s_remote_cnt` (`u32`).
pub const S_REMOTE_CNT: usize = 12;
/// STOCK: `s_dist_01..10` (24 bytes each).
pub const S_DIST: usize = 16;
/// STOCK: `s_data` (50 bytes).
pub const S_DATA: usize = 256;
/// Bytes of a STOCK value.
pub const S_LEN: usize = 306;

/// Reads a little-endian `u32` at `at`.
#[inline]
pub fn get_u32(v: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(v[at..at + 4].try_into().expect("4 bytes"))
}
/// Reads a little-endian `i64` at `at`.
#[inline]
pub fn get_i64(v: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(v[at..at + 8].try_into().expect("8 bytes"))
}
/// Reads a little-endian `u64` at `at`.
#[inline]
pub fn get_u64(v: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(v[at..at + 8].try_into().expect("8 bytes"))
}
/// Writes a little-endian `u32` at `at`.
#[inline]
pub fn put_u32(v: &mut [u8], at: usize, x: u32) {
    v[at..at + 4].copy_from_slice(&x.to_le_bytes());
}
/// Writes a little-endian `i64` at `at`.
#[inline]
pub fn put_i64(v: &mut [u8], at: usize, x: i64) {
    v[at..at + 8].copy_from_slice(&x.to_le_bytes());
}
/// Writes a little-endian `u64` at `at`.
#[inline]
pub fn put_u64(v: &mut [u8], at: usize, x: u64) {
    v[at..at + 8].copy_from_slice(&x.to_le_bytes());
}

// Keys. Every builder below stays within KEY_MAX, so `build` cannot fail.

#[inline]
fn build(b: multiverse::KeyBuilder) -> Key {
    b.build().expect("TPC-C keys fit in KEY_MAX bytes")
}

/// WAREHOUSE's key.
#[inline]
pub fn w_key(w: u16) -> Key {
    build(Key::builder().u16(w))
}
/// DISTRICT's key.
#[inline]
pub fn d_key(w: u16, d: u8) -> Key {
    build(Key::builder().u16(w).u8(d))
}
/// CUSTOMER's key.
#[inline]
pub fn c_key(w: u16, d: u8, c: u32) -> Key {
    build(Key::builder().u16(w).u8(d).u32(c))
}
/// NEW_ORDER's and ORDER's key.
#[inline]
pub fn o_key(w: u16, d: u8, o: u32) -> Key {
    build(Key::builder().u16(w).u8(d).u32(o))
}
/// ORDER_LINE's key.
#[inline]
pub fn ol_key(w: u16, d: u8, o: u32, ol: u8) -> Key {
    build(Key::builder().u16(w).u8(d).u32(o).u8(ol))
}
/// The key of a `new-order-lines` order line: district 0, then the worker
/// and its sequence number (never a real order).
#[inline]
pub fn loose_ol_key(w: u16, worker: u16, seq: u64, ol: u8) -> Key {
    build(Key::builder().u16(w).u8(0).u16(worker).u64(seq).u8(ol))
}
/// HISTORY's key: the paying worker (`u16::MAX` at load) and its sequence number.
#[inline]
pub fn h_key(w: u16, worker: u16, seq: u64) -> Key {
    build(Key::builder().u16(w).u16(worker).u64(seq))
}
/// ITEM's key.
#[inline]
pub fn i_key(i: u32) -> Key {
    build(Key::builder().u32(i))
}
/// STOCK's key.
#[inline]
pub fn s_key(w: u16, i: u32) -> Key {
    build(Key::builder().u16(w).u32(i))
}
/// The `by_last` prefix of the customers of `(w, d)` named `last` (ASCII, at most 15 bytes).
#[inline]
pub fn by_last_prefix(w: u16, d: u8, last: &[u8]) -> Key {
    let mut name = [0u8; 15];
    let n = last.len().min(15);
    name[..n].copy_from_slice(&last[..n]);
    build(Key::builder().u16(w).u8(d).bytes(&name))
}
/// The `by_customer` prefix of the orders of customer `(w, d, c)`.
#[inline]
pub fn by_customer_prefix(w: u16, d: u8, c: u32) -> Key {
    build(Key::builder().u16(w).u8(d).u32(c))
}

/// NEW_ORDER's index groups its entries by district `(w, d)`: 3 key bytes.
/// Delivery scans one district; an insert searches that district's orders.
pub const NEW_ORDER_GROUP: usize = 3;
/// `by_customer` groups by customer `(w, d, c)`: 7 key bytes. A new order is
/// filed under its customer without a search over all orders.
pub const BY_CUSTOMER_GROUP: usize = 7;
/// `by_last` groups by `(w, d, c_last)`: 18 key bytes, the prefix that
/// Payment and Order-Status scan.
pub const BY_LAST_GROUP: usize = 18;

/// `by_last`'s key of a customer row: `w, d` (from the primary key), `c_last`
/// (15 bytes), the first 14 bytes of `c_first`. 32 bytes in all.
fn by_last_of(pk: &Key, v: &[u8]) -> Key {
    if v.len() < C_LEN || pk.len() < 3 {
        return Key::EMPTY;
    }
    let p = pk.as_bytes();
    build(Key::builder().bytes(&p[..3]).bytes(&v[C_LAST..C_LAST + 15]).bytes(&v[C_FIRST..C_FIRST + 14]))
}

/// `by_customer`'s key of an order row: `w, d`, `o_c_id`, then `!o` so that
/// the latest order of a customer comes first.
fn by_customer_of(pk: &Key, v: &[u8]) -> Key {
    if v.len() < O_LEN || pk.len() < 7 {
        return Key::EMPTY;
    }
    let p = pk.as_bytes();
    let o = pk.u32_at(3).unwrap_or(0);
    build(Key::builder().bytes(&p[..3]).u32(get_u32(v, O_C_ID)).u32(!o))
}

/// The syllables of last names (clause 4.3.2.3).
pub const SYLLABLES: [&str; 10] = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"];

/// The last name for `n` in 0..=999 (three syllables, at most 15 bytes),
/// written into `out`; returns its length.
pub fn last_name(n: u32, out: &mut [u8; 16]) -> usize {
    *out = [0; 16];
    let mut len = 0;
    for digit in [n / 100 % 10, n / 10 % 10, n % 10] {
        let s = SYLLABLES[digit as usize].as_bytes();
        out[len..len + s.len()].copy_from_slice(s);
        len += s.len();
    }
    len
}

/// `C` of `NURand(255, ...)` for last names at load (clause 2.1.6).
pub const C_LAST_LOAD: u64 = 157;
/// `C` of `NURand(255, ...)` for last names at run time: 66 from the load's,
/// within 65..=119 and neither 96 nor 112, as clause 2.1.6.1 requires.
pub const C_LAST_RUN: u64 = 223;
/// `C` of `NURand(1023, ...)` for customer ids.
pub const C_ID: u64 = 259;
/// `C` of `NURand(8191, ...)` for item ids.
pub const C_OL_I_ID: u64 = 7_911;

pub(crate) use crate::below;

/// A uniform draw from `lo..=hi`.
#[inline]
pub(crate) fn uniform(rng: &mut SmallRng, lo: u64, hi: u64) -> u64 {
    lo + below(rng, hi - lo + 1)
}

/// `NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x` (clause 2.1.6).
#[inline]
pub fn nurand(rng: &mut SmallRng, a: u64, c: u64, x: u64, y: u64) -> u64 {
    (((uniform(rng, 0, a) | uniform(rng, x, y)) + c) % (y - x + 1)) + x
}

/// Parameters of the workload.
#[derive(Clone, Debug, PartialEq)]
pub struct TpccConfig {
    /// Warehouses.
    pub warehouses: u32,
    /// The transaction mix over [`TYPES`].
    pub mix: Mix,
    /// TPC-CC: every transaction picks a random home warehouse instead of
    /// its worker's (SSN paper, section 8.1).
    pub random_warehouse: bool,
    /// DBx1000's configuration: NewOrder and Payment write no ORDER,
    /// NEW_ORDER, ORDER_LINE or HISTORY rows (for side-by-side numbers with
    /// that testbed, which skips every insert). Only NewOrder and Payment may
    /// run; consistency condition 2 becomes "the order ids handed out are
    /// the committed NewOrders".
    pub skip_inserts: bool,
}

/// The standard mix (45/43/4/4/4).
pub fn default_mix() -> Mix {
    Mix::new(TYPES, &DEFAULT_PCT).expect("the TPC-C mix adds up to 100")
}

impl Default for TpccConfig {
    /// One warehouse, the standard mix, home warehouses.
    fn default() -> TpccConfig {
        TpccConfig { warehouses: 1, mix: default_mix(), random_warehouse: false, skip_inserts: false }
    }
}

impl TpccConfig {
    /// Checks the parameters; the error is a one-line message.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.warehouses == 0 {
            return Err("--warehouses must be at least 1".into());
        }
        if self.warehouses > MAX_WAREHOUSES {
            return Err(format!("--warehouses {} is too large (at most {MAX_WAREHOUSES})", self.warehouses));
        }
        if self.mix.names() != TYPES {
            return Err(format!("the tpcc mix must be over its types ({})", TYPES.join(", ")));
        }
        if self.skip_inserts {
            if let Some(t) = (0..NTYPES).find(|&t| t != NEW_ORDER && t != PAYMENT && self.mix.pct(t) > 0.0) {
                return Err(format!(
                    "--tpcc-no-inserts runs only new-order and payment (DBx1000's TPC-C), not {}",
                    TYPES[t]
                ));
            }
        }
        Ok(())
    }

    /// Rows the load writes (counts every order's lines).
    pub fn load_rows(&self) -> u64 {
        let per_district = 1 + CUSTOMERS as u64 * 2 + ORDERS as u64 + (ORDERS - FIRST_NEW_ORDER + 1) as u64;
        let mut rows = ITEMS as u64 + self.warehouses as u64 * (1 + ITEMS as u64 + DISTRICTS as u64 * per_district);
        for w in 1..=self.warehouses as u16 {
            for d in 1..=DISTRICTS {
                rows += (1..=ORDERS).map(|o| load::load_ol_cnt(w, d, o) as u64).sum::<u64>();
            }
        }
        rows
    }
}

/// Hash buckets of ORDER_LINE per warehouse: the load's 300,000 lines and
/// room for about 4 million more before chains average two versions
/// (a bucket array is fixed; longer runs lengthen the chains).
pub const OL_BUCKETS_PER_WAREHOUSE: usize = 4 << 20;

/// Hash buckets of ORDER per warehouse (the load's 30,000 orders and room
/// for about 400,000 more before chains average two rows).
pub const O_BUCKETS_PER_WAREHOUSE: usize = 1 << 18;

/// Hash buckets of HISTORY per warehouse (the load's 30,000 rows and room
/// for about 2 million payments before chains average two rows).
pub const H_BUCKETS_PER_WAREHOUSE: usize = 1 << 20;

/// Resident bytes of a loaded warehouse, conservatively (about 500,000
/// rows, a third of the bytes in STOCK and CUSTOMER values).
pub const EST_BYTES_PER_WAREHOUSE: u64 = 200 << 20;

/// The workload, bound to its tables in one database.
#[derive(Debug)]
pub struct Tpcc {
    cfg: TpccConfig,
    warehouse: TableId,
    district: TableId,
    customer: TableId,
    history: TableId,
    new_order: TableId,
    order: TableId,
    order_line: TableId,
    item: TableId,
    stock: TableId,
    by_last: IndexId,
    by_customer: IndexId,
    new_order_pk: IndexId,
    /// Committed transactions of finished workers, by type.
    committed: [AtomicU64; NTYPES],
    /// Deliveries' districts that had no new order (finished workers).
    skipped_deliveries: AtomicU64,
    /// Order lines the committed `new-order-lines` inserted (finished workers).
    loose_lines: AtomicU64,
}

impl Tpcc {
    /// Creates the nine tables and their indexes in `db`.
    pub fn setup<S: Store>(db: &S, cfg: TpccConfig) -> std::result::Result<Tpcc, String> {
        cfg.validate()?;
        let w = cfg.warehouses as usize;
        let e = |e: Error| e.to_string();
        let hash = |name: &str, n: usize| db.create_table(TableSpec::hash(name, n.max(1))).map_err(e);
        let create = |spec: TableSpec| db.create_table(spec).map_err(e);
        let warehouse = hash(names::WAREHOUSE, w)?;
        let district = hash(names::DISTRICT, w * DISTRICTS as usize)?;
        let customer = create(
            TableSpec::hash(names::CUSTOMER, w * DISTRICTS as usize * CUSTOMERS as usize)
                .secondary(names::BY_LAST, IndexKind::OrderedGrouped { prefix: BY_LAST_GROUP }, by_last_of)
                .into(),
        )?;
        let history = hash(names::HISTORY, w.saturating_mul(H_BUCKETS_PER_WAREHOUSE))?;
        let new_order = create(TableSpec::ordered_grouped(names::NEW_ORDER, NEW_ORDER_GROUP))?;
        let order = create(
            TableSpec::hash(names::ORDER, w.saturating_mul(O_BUCKETS_PER_WAREHOUSE))
                .secondary(names::BY_CUSTOMER, IndexKind::OrderedGrouped { prefix: BY_CUSTOMER_GROUP }, by_customer_of)
                .into(),
        )?;
        let order_line = hash(names::ORDER_LINE, w.saturating_mul(OL_BUCKETS_PER_WAREHOUSE))?;
        let item = hash(names::ITEM, ITEMS as usize)?;
        let stock = hash(names::STOCK, w * ITEMS as usize)?;
        Ok(Tpcc {
            by_last: db.index(customer, names::BY_LAST).map_err(e)?,
            by_customer: db.index(order, names::BY_CUSTOMER).map_err(e)?,
            new_order_pk: db.primary(new_order),
            cfg,
            warehouse,
            district,
            customer,
            history,
            new_order,
            order,
            order_line,
            item,
            stock,
            committed: Default::default(),
            skipped_deliveries: AtomicU64::new(0),
            loose_lines: AtomicU64::new(0),
        })
    }

    /// The parameters.
    pub fn config(&self) -> &TpccConfig {
        &self.cfg
    }

    /// WAREHOUSE, DISTRICT, CUSTOMER, HISTORY, NEW_ORDER, ORDER, ORDER_LINE, ITEM, STOCK.
    pub fn tables(&self) -> [TableId; 9] {
        [
            self.warehouse,
            self.district,
            self.customer,
            self.history,
            self.new_order,
            self.order,
            self.order_line,
            self.item,
            self.stock,
        ]
    }

    /// Committed transactions of finished workers, by type.
    pub fn committed(&self) -> [u64; NTYPES] {
        // Relaxed: read after the workers finished (joined).
        std::array::from_fn(|i| self.committed[i].load(Ordering::Relaxed))
    }

    /// Districts that Delivery found without a new order (finished workers).
    pub fn skipped_deliveries(&self) -> u64 {
        // Relaxed: read after the workers finished (joined).
        self.skipped_deliveries.load(Ordering::Relaxed)
    }

    /// Order lines the committed `new-order-lines` inserted (finished workers).
    pub fn loose_lines(&self) -> u64 {
        // Relaxed: read after the workers finished (joined).
        self.loose_lines.load(Ordering::Relaxed)
    }
}

impl Workload for Tpcc {
    type Worker<'w> = TpccWorker<'w>;

    fn name(&self) -> &'static str {
        crate::Kind::Tpcc.name()
    }

    fn params(&self) -> Vec<(&'static str, Param)> {
        vec![
            ("warehouses", Param::Int(self.cfg.warehouses as u64)),
            ("mix", Param::Str(self.cfg.mix.to_string())),
            ("random_warehouse", Param::Bool(self.cfg.random_warehouse)),
            ("skip_inserts", Param::Bool(self.cfg.skip_inserts)),
        ]
    }

    fn load_size(&self) -> u64 {
        self.cfg.load_rows()
    }

    fn txn_types(&self) -> &'static [&'static str] {
        TYPES
    }

    fn estimated_bytes(&self) -> u64 {
        (self.cfg.warehouses as u64).saturating_mul(EST_BYTES_PER_WAREHOUSE)
    }

    fn load<S: Store>(&self, db: &S, part: usize, parts: usize, progress: &(impl Fn(u64) + Sync)) -> Result<()> {
        load::load(self, db, part, parts, progress)
    }

    fn worker(&self, thread: usize, seed: u64) -> TpccWorker<'_> {
        TpccWorker::new(self, thread, seed)
    }

    fn check_consistency<S: Store>(&self, db: &S) -> std::result::Result<String, String> {
        check::check(self, db)
    }

    /// Consistency conditions 1 to 4 (without inserts, 1, 3 and 4).
    fn check_state<S: Store>(&self, db: &S) -> std::result::Result<crate::StateCheck, String> {
        check::check_state(self, db)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn last_names_follow_the_syllables() {
        let mut b = [0u8; 16];
        let n = last_name(371, &mut b);
        assert_eq!(&b[..n], b"PRICALLYOUGHT");
        let n = last_name(0, &mut b);
        assert_eq!(&b[..n], b"BARBARBAR");
        let longest = (0..1000).map(|i| last_name(i, &mut b)).max().unwrap();
        assert_eq!(longest, 15, "CALLYCALLYCALLY and the like fit the by_last key");
    }

    #[test]
    fn keys_order_like_their_tuples() {
        assert!(o_key(1, 2, 3000) < o_key(1, 2, 3001));
        assert!(o_key(1, 2, 70_000) < o_key(1, 3, 1));
        assert!(ol_key(1, 1, 5, 15) < ol_key(1, 1, 6, 1));
        let (a, b) = (o_key(1, 1, 10), o_key(1, 1, 11));
        let v = [0u8; O_LEN];
        assert!(by_customer_of(&b, &v) < by_customer_of(&a, &v), "the later order of a customer comes first");
        assert!(loose_ol_key(1, 0, u64::MAX, 15) < ol_key(1, 1, 1, 1), "district 0 is below every district");
    }

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut hits = vec![0u32; 1000];
        for _ in 0..200_000 {
            let x = nurand(&mut rng, 255, C_LAST_RUN, 0, 999);
            hits[x as usize] += 1;
        }
        let max = *hits.iter().max().unwrap();
        let min = *hits.iter().min().unwrap();
        // Uniform would give about 200 each; NURand's or makes some names
        // several times likelier than others.
        assert!(max > 3 * min.max(1), "max {max}, min {min}");
        for _ in 0..10_000 {
            let i = nurand(&mut rng, 8191, C_OL_I_ID, 1, ITEMS as u64);
            assert!((1..=ITEMS as u64).contains(&i));
        }
        assert!((65..=119).contains(&(C_LAST_RUN - C_LAST_LOAD)) && ![96, 112].contains(&(C_LAST_RUN - C_LAST_LOAD)));
    }

    #[test]
    fn config_is_validated() {
        assert!(TpccConfig::default().validate().is_ok());
        let c = |warehouses| TpccConfig { warehouses, ..TpccConfig::default() };
        assert!(c(0).validate().unwrap_err().contains("at least 1"));
        assert!(c(MAX_WAREHOUSES + 1).validate().unwrap_err().contains("too large"));
        let lines: u64 = (1..=10).flat_map(|d| (1..=3000).map(move |o| load::load_ol_cnt(1, d, o) as u64)).sum();
        assert_eq!(c(1).load_rows(), 100_000 + 100_000 + 1 + 10 * (1 + 3000 * 2 + 3000 + 900) + lines);
        // About 10 lines per order, every count from 5 to 15 drawn.
        assert!((290_000..310_000).contains(&lines), "{lines}");
        let mut seen = [false; 16];
        (1..=3000).for_each(|o| seen[load::load_ol_cnt(2, 3, o) as usize] = true);
        assert!(seen[5..=15].iter().all(|&s| s) && !seen[..5].iter().any(|&s| s), "{seen:?}");
    }
}
