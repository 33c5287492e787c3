//! The transactions (clauses 2.4 to 2.8, and POMVCC's Figure 21 loop).
//!
//! [`TpccWorker::next_txn`] draws every input the specification gives the
//! terminal (clause 2.x.1); [`TpccWorker::execute`] runs the profile
//! (clause 2.x.2) and may run again with the same inputs after an abort.
//! The worker keeps its scratch space (customers by name, Stock-Level's
//! items) between transactions, so no transaction allocates once warm.

use super::load::history_value;
use super::*;
use crate::{Txn, TxnError, Worker};
use multiverse::{AbortReason, Error, TxnOptions};
use rand::SeedableRng;

/// Most lines of an order.
const MAX_LINES: usize = 15;

/// The inputs of one TPC-C transaction (fields a type does not use are ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TpccInput {
    /// The type (index into [`TYPES`]).
    pub ty: usize,
    /// The (home) warehouse of the transaction.
    pub w: u16,
    /// The district (new-order, payment, order-status, stock-level).
    pub d: u8,
    /// The customer's warehouse (payment: 15% remote; otherwise `w`).
    pub c_w: u16,
    /// The customer's district.
    pub c_d: u8,
    /// The customer id, unless chosen by last name.
    pub c: u32,
    /// The customer's last name (its number, 0..=999), if chosen by name.
    pub c_last: Option<u16>,
    /// Lines of the order (new-order, new-order-lines), 5..=15.
    pub ol_cnt: u8,
    /// Item of each line (distinct; the last is unused when `rollback`).
    pub items: [u32; MAX_LINES],
    /// Supplying warehouse of each line.
    pub supply: [u16; MAX_LINES],
    /// Quantity of each line, 1..=10.
    pub qty: [u8; MAX_LINES],
    /// The last item is unused, so the new order rolls back (1%).
    pub rollback: bool,
    /// Payment amount in cents, 100..=500,000.
    pub amount: i64,
    /// Delivery's carrier, 1..=10.
    pub carrier: u8,
    /// Stock-Level's threshold, 10..=20.
    pub threshold: u32,
}

impl Default for TpccInput {
    fn default() -> TpccInput {
        TpccInput {
            ty: STOCK_LEVEL,
            w: 1,
            d: 1,
            c_w: 1,
            c_d: 1,
            c: 1,
            c_last: None,
            ol_cnt: 5,
            items: [1; MAX_LINES],
            supply: [1; MAX_LINES],
            qty: [1; MAX_LINES],
            rollback: false,
            amount: 100,
            carrier: 1,
            threshold: 10,
        }
    }
}

/// One thread's generator for TPC-C.
pub struct TpccWorker<'w> {
    w: &'w Tpcc,
    /// The worker's number (its history rows and loose order lines carry it).
    thread: u16,
    /// The home warehouse.
    home: u16,
    rng: SmallRng,
    input: TpccInput,
    item_keys: [Key; MAX_LINES],
    stock_keys: [Key; MAX_LINES],
    /// Sequence number of the next history row / loose order of this worker.
    seq: u64,
    /// Scratch: customers with the wanted last name, in `by_last` order.
    named: Vec<Key>,
    /// Scratch: Stock-Level's items.
    seen: Vec<u32>,
    /// Scratch: the keys of one phase of Stock-Level or Delivery, hinted together.
    keys: Vec<Key>,
    /// What the last execution found (see the accessors).
    last: Outcome,
    /// Folds every value read, so reads cannot be optimized away.
    checksum: u64,
    committed: [u64; NTYPES],
    skipped: u64,
    loose_lines: u64,
}

/// What the last execution of a worker found (tests read it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// new-order: the order id given; order-status: the last order's id.
    pub o_id: u32,
    /// new-order: the order's total in cents (with discount and taxes);
    /// delivery: the sum over the delivered orders' lines.
    pub total: i64,
    /// The customer chosen (payment, order-status).
    pub c: u32,
    /// order-status: lines of the last order; stock-level: items below the
    /// threshold; delivery: districts delivered.
    pub count: u32,
    /// delivery: districts without a new order.
    pub skipped: u32,
}

#[cold]
fn missing(what: &str, key: &Key) -> TxnError {
    TxnError::Invariant(format!("tpcc: {what} {:?} not found, though the workload never deletes it", key.as_bytes()))
}

/// Maps "no such row" of an update to an invariant failure.
#[inline]
fn present(r: Result<()>, what: &str, key: &Key) -> Result<(), TxnError> {
    match r {
        Err(Error::KeyNotFound) => Err(missing(what, key)),
        r => Ok(r?),
    }
}

#[inline]
fn fold(h: u64, x: u64) -> u64 {
    (h.rotate_left(7) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The stock quantity after ordering `qty` of `q` (clause 2.4.2.2: refilled
/// by 91 when fewer than 10 would remain).
#[inline]
fn new_quantity(q: u32, qty: u32) -> u32 {
    if q >= qty + 10 {
        q - qty
    } else {
        q + 91 - qty
    }
}

/// An order line's value (delivery date null).
#[inline]
fn line_value(item: u32, supply: u16, qty: u8, amount: i64, dist: &[u8; 24]) -> [u8; OL_LEN] {
    let mut lv = [0u8; OL_LEN];
    put_u32(&mut lv, OL_I_ID, item);
    lv[OL_SUPPLY_W_ID..OL_SUPPLY_W_ID + 2].copy_from_slice(&supply.to_le_bytes());
    lv[OL_QUANTITY] = qty;
    put_i64(&mut lv, OL_AMOUNT, amount);
    lv[OL_DIST_INFO..OL_LEN].copy_from_slice(dist);
    lv
}

#[inline]
fn has_original(b: &[u8]) -> bool {
    b.windows(8).any(|w| w == b"ORIGINAL")
}

/// Writes the decimal digits of `x` and a space into `out` at `at`; the new `at`.
fn put_decimal(out: &mut [u8], mut at: usize, x: i64) -> usize {
    let mut buf = [0u8; 20];
    let (mut n, neg, mut u) = (0, x < 0, x.unsigned_abs());
    loop {
        buf[n] = b'0' + (u % 10) as u8;
        n += 1;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    if neg {
        out[at] = b'-';
        at += 1;
    }
    for i in (0..n).rev() {
        out[at] = buf[i];
        at += 1;
    }
    out[at] = b' ';
    at + 1
}

/// The current time in nanoseconds since the epoch.
#[inline]
fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

impl<'w> TpccWorker<'w> {
    pub(super) fn new(w: &'w Tpcc, thread: usize, seed: u64) -> TpccWorker<'w> {
        let mut me = TpccWorker {
            w,
            thread: thread as u16,
            home: (thread as u64 % w.cfg.warehouses as u64 + 1) as u16,
            rng: SmallRng::seed_from_u64(seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            input: TpccInput::default(),
            item_keys: [Key::EMPTY; MAX_LINES],
            stock_keys: [Key::EMPTY; MAX_LINES],
            seq: 0,
            named: Vec::with_capacity(64),
            seen: Vec::with_capacity(20 * MAX_LINES),
            keys: Vec::with_capacity(20 * MAX_LINES),
            last: Outcome::default(),
            checksum: 0,
            committed: [0; NTYPES],
            skipped: 0,
            loose_lines: 0,
        };
        me.set_input(TpccInput::default());
        me
    }

    /// The current transaction's inputs.
    pub fn input(&self) -> TpccInput {
        self.input
    }

    /// Replaces the current transaction's inputs (tests drive exact cases with it).
    pub fn set_input(&mut self, i: TpccInput) {
        self.input = i;
        for k in 0..i.ol_cnt as usize {
            self.item_keys[k] = i_key(i.items[k]);
            self.stock_keys[k] = s_key(i.supply[k], i.items[k]);
        }
    }

    /// The worker's home warehouse.
    pub fn home(&self) -> u16 {
        self.home
    }

    /// What the last execution found.
    pub fn outcome(&self) -> Outcome {
        self.last
    }

    /// A fold of every value read (meaningless; keeps reads observable).
    pub fn checksum(&self) -> u64 {
        self.checksum
    }

    /// A warehouse other than `w`, uniformly (`w` itself if it is the only one).
    fn other_warehouse(&mut self, w: u16) -> u16 {
        let n = self.w.cfg.warehouses as u64;
        if n == 1 {
            return w;
        }
        let x = uniform(&mut self.rng, 1, n - 1) as u16;
        if x >= w {
            x + 1
        } else {
            x
        }
    }

    /// 5..=15 distinct items, `NURand(8191, 1, 100000)`, with quantities.
    fn draw_lines(&mut self, i: &mut TpccInput) {
        i.ol_cnt = uniform(&mut self.rng, 5, MAX_LINES as u64) as u8;
        let n = i.ol_cnt as usize;
        for k in 0..n {
            i.items[k] = loop {
                let x = nurand(&mut self.rng, 8191, C_OL_I_ID, 1, ITEMS as u64) as u32;
                if !i.items[..k].contains(&x) {
                    break x;
                }
            };
            i.supply[k] = i.w;
            i.qty[k] = uniform(&mut self.rng, 1, 10) as u8;
        }
    }

    /// The customer: 60% by last name (run-time `C`), 40% by id.
    fn draw_customer(&mut self, i: &mut TpccInput) {
        if below(&mut self.rng, 100) < 60 {
            i.c_last = Some(nurand(&mut self.rng, 255, C_LAST_RUN, 0, 999) as u16);
        } else {
            i.c_last = None;
            i.c = nurand(&mut self.rng, 1023, C_ID, 1, CUSTOMERS as u64) as u32;
        }
    }

    /// Finds the customer (clause 2.5.2.2): by id, or the one at position
    /// `ceil(n / 2)` of those with the last name, sorted by first name.
    #[inline]
    fn customer<T: Txn>(&mut self, t: &mut T) -> Result<Key, TxnError> {
        let i = self.input;
        let Some(n) = i.c_last else {
            return Ok(c_key(i.c_w, i.c_d, i.c));
        };
        let mut name = [0u8; 16];
        last_name(n as u32, &mut name);
        let lo = by_last_prefix(i.c_w, i.c_d, &name[..15]);
        let hi = lo.prefix_end().unwrap_or_else(|| lo.clone());
        let named = &mut self.named;
        named.clear();
        t.scan(self.w.by_last, lo..hi, None, |pk, _| {
            named.push(pk.clone());
            true
        })?;
        match named.get(named.len().saturating_sub(1) / 2) {
            Some(pk) => Ok(pk.clone()),
            None => Err(TxnError::Invariant(format!(
                "tpcc: no customer of district ({}, {}) is named {} (the load names one of each)",
                i.c_w,
                i.c_d,
                String::from_utf8_lossy(&name[..15]).trim_end_matches('\0')
            ))),
        }
    }

    /// Hints the items and stock rows of the order's `n` lines.
    #[inline]
    fn prefetch_lines<T: Txn>(&self, t: &T, n: usize) {
        t.prefetch(self.w.item, &self.item_keys[..n]);
        t.prefetch(self.w.stock, &self.stock_keys[..n]);
    }

    /// New-Order (clause 2.4.2).
    fn new_order<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let (tp, i) = (self.w, self.input);
        let n = i.ol_cnt as usize;
        let (wk, dk, ck) = (w_key(i.w), d_key(i.w, i.d), c_key(i.w, i.d, i.c));
        t.prefetch_many(&[
            (tp.warehouse, std::slice::from_ref(&wk)),
            (tp.district, std::slice::from_ref(&dk)),
            (tp.customer, std::slice::from_ref(&ck)),
            (tp.item, &self.item_keys[..n]),
            (tp.stock, &self.stock_keys[..n]),
        ]);
        let w_tax = t.get_with(tp.warehouse, &wk, |v| get_u32(v, W_TAX))?.ok_or_else(|| missing("warehouse", &wk))?;
        let (mut d_tax, mut o_id) = (0, 0);
        let r = t.modify(tp.district, &dk, |v| {
            d_tax = get_u32(v, D_TAX);
            o_id = get_u32(v, D_NEXT_O_ID);
            put_u32(v, D_NEXT_O_ID, o_id + 1);
        });
        present(r, "district", &dk)?;
        // The order's lines are new rows: their hash buckets can load now.
        let mut line_keys = [Key::EMPTY; MAX_LINES];
        for (k, lk) in line_keys[..n].iter_mut().enumerate() {
            *lk = ol_key(i.w, i.d, o_id, k as u8 + 1);
        }
        t.prefetch(tp.order_line, &line_keys[..n]);
        let discount = t
            .get_with(tp.customer, &ck, |v| {
                self.checksum = fold(self.checksum, v[C_LAST] as u64 ^ (v[C_CREDIT] as u64) << 8);
                get_u32(v, C_DISCOUNT)
            })?
            .ok_or_else(|| missing("customer", &ck))?;
        let all_local = i.supply[..n].iter().all(|&s| s == i.w);
        let entry_d = now();
        let mut ov = [0u8; O_LEN];
        put_u32(&mut ov, O_C_ID, i.c);
        put_u64(&mut ov, O_ENTRY_D, entry_d);
        ov[O_OL_CNT] = i.ol_cnt;
        ov[O_ALL_LOCAL] = all_local as u8;
        let ok = o_key(i.w, i.d, o_id);
        let inserts = !tp.cfg.skip_inserts;
        if inserts {
            t.insert(tp.order, ok.clone(), &ov).map_err(order_id_taken)?;
            t.insert(tp.new_order, ok, &[]).map_err(order_id_taken)?;
        }
        let mut total = 0i64;
        let mut brand = 0u64;
        for (k, line_key) in line_keys[..n].iter().enumerate() {
            let item = t.get_with(tp.item, &self.item_keys[k], |v| {
                (get_i64(v, I_PRICE), has_original(&v[I_DATA..I_LEN]), v[I_NAME] as u64)
            })?;
            let Some((price, i_original, name)) = item else {
                if i.rollback && k == n - 1 {
                    // Clause 2.4.2.3: the unused item number is detected
                    // after the earlier lines were processed; the whole
                    // transaction rolls back.
                    return Err(TxnError::Rollback);
                }
                return Err(missing("item", &self.item_keys[k]));
            };
            let qty = i.qty[k] as u32;
            let remote = i.supply[k] != i.w;
            let mut dist = [0u8; 24];
            let mut s_original = false;
            let r = t.modify(tp.stock, &self.stock_keys[k], |v| {
                let q = get_u32(v, S_QUANTITY);
                put_u32(v, S_QUANTITY, new_quantity(q, qty));
                put_u32(v, S_YTD, get_u32(v, S_YTD) + qty);
                put_u32(v, S_ORDER_CNT, get_u32(v, S_ORDER_CNT) + 1);
                if remote {
                    put_u32(v, S_REMOTE_CNT, get_u32(v, S_REMOTE_CNT) + 1);
                }
                let at = S_DIST + 24 * (i.d as usize - 1);
                dist.copy_from_slice(&v[at..at + 24]);
                s_original = has_original(&v[S_DATA..S_LEN]);
            });
            present(r, "stock", &self.stock_keys[k])?;
            let amount = qty as i64 * price;
            total += amount;
            brand = fold(brand, name ^ ((i_original && s_original) as u64) << 9);
            let lv = line_value(i.items[k], i.supply[k], qty as u8, amount, &dist);
            if inserts {
                t.insert(tp.order_line, line_key.clone(), &lv).map_err(order_id_taken)?;
            }
        }
        // total * (1 - c_discount) * (1 + w_tax + d_tax), rates in 1/10,000.
        let total = (total as i128 * (10_000 - discount as i128) * (10_000 + w_tax as i128 + d_tax as i128)
            / 100_000_000) as i64;
        self.checksum = fold(self.checksum, brand);
        self.last = Outcome { o_id, total, c: i.c, ..Outcome::default() };
        Ok(())
    }

    /// Payment (clause 2.5.2).
    fn payment<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let tp = self.w;
        let i = self.input;
        let mut h_data = [b' '; 24];
        let (wk, dk) = (w_key(i.w), d_key(i.w, i.d));
        let ck = [c_key(i.c_w, i.c_d, i.c)];
        let by_id = if i.c_last.is_none() { &ck[..] } else { &[] };
        t.prefetch_many(&[
            (tp.warehouse, std::slice::from_ref(&wk)),
            (tp.district, std::slice::from_ref(&dk)),
            (tp.customer, by_id),
        ]);
        let r = t.modify(tp.warehouse, &wk, |v| {
            put_i64(v, W_YTD, get_i64(v, W_YTD) + i.amount);
            h_data[..10].copy_from_slice(&v[W_NAME..W_NAME + 10]);
        });
        present(r, "warehouse", &wk)?;
        let r = t.modify(tp.district, &dk, |v| {
            put_i64(v, D_YTD, get_i64(v, D_YTD) + i.amount);
            h_data[14..24].copy_from_slice(&v[D_NAME..D_NAME + 10]);
        });
        present(r, "district", &dk)?;
        let ck = self.customer(t)?;
        let c = ck.u32_at(3).unwrap_or(0);
        let r = t.modify(tp.customer, &ck, |v| {
            put_i64(v, C_BALANCE, get_i64(v, C_BALANCE) - i.amount);
            put_i64(v, C_YTD_PAYMENT, get_i64(v, C_YTD_PAYMENT) + i.amount);
            put_u32(v, C_PAYMENT_CNT, get_u32(v, C_PAYMENT_CNT) + 1);
            if &v[C_CREDIT..C_CREDIT + 2] == b"BC" {
                // Clause 2.5.2.2: C_ID, C_D_ID, C_W_ID, D_ID, W_ID and
                // H_AMOUNT in front of C_DATA, the whole cut to 500 characters.
                let mut head = [0u8; 80];
                let mut at = 0;
                for x in [c as i64, i.c_d as i64, i.c_w as i64, i.d as i64, i.w as i64, i.amount] {
                    at = put_decimal(&mut head, at, x);
                }
                let old_len = u16::from_le_bytes([v[C_DATA_LEN], v[C_DATA_LEN + 1]]) as usize;
                let keep = old_len.min(C_DATA_MAX - at);
                let data = &mut v[C_DATA..C_LEN];
                data.copy_within(..keep, at);
                data[..at].copy_from_slice(&head[..at]);
                data[at + keep..].fill(0);
                v[C_DATA_LEN..C_DATA_LEN + 2].copy_from_slice(&((at + keep) as u16).to_le_bytes());
            }
        });
        present(r, "customer", &ck)?;
        let seq = self.seq;
        self.seq += 1;
        let h = history_value((i.c_w, i.c_d, c), (i.w, i.d), now(), i.amount, &h_data);
        if !tp.cfg.skip_inserts {
            t.insert(tp.history, h_key(i.w, self.thread, seq), &h)?;
        }
        self.last = Outcome { c, ..Outcome::default() };
        Ok(())
    }

    /// Order-Status (clause 2.6.2).
    fn order_status<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let tp = self.w;
        let i = self.input;
        let ck = self.customer(t)?;
        let c = ck.u32_at(3).unwrap_or(0);
        let mut h = self.checksum;
        t.get_with(tp.customer, &ck, |v| {
            h = fold(h, get_i64(v, C_BALANCE) as u64 ^ v[C_FIRST] as u64 ^ (v[C_LAST] as u64) << 8);
        })?
        .ok_or_else(|| missing("customer", &ck))?;
        let lo = by_customer_prefix(i.c_w, i.c_d, c);
        let hi = lo.prefix_end().unwrap_or_else(|| lo.clone());
        let mut last = None;
        t.scan(tp.by_customer, lo..hi, None, |pk, v| {
            last = Some((pk.u32_at(3).unwrap_or(0), v[O_OL_CNT]));
            h = fold(h, get_u64(v, O_ENTRY_D) ^ v[O_CARRIER_ID] as u64);
            false
        })?;
        let Some((o_id, ol_cnt)) = last else {
            return Err(TxnError::Invariant(format!(
                "tpcc: customer ({}, {}, {c}) has no order (the load gives each one)",
                i.c_w, i.c_d
            )));
        };
        // The order's lines, by key: ORDER_LINE is a hash table, and
        // o_ol_cnt says how many there are (consistency condition 4).
        let mut lines = 0;
        for ol in 1..=ol_cnt {
            let lk = ol_key(i.c_w, i.c_d, o_id, ol);
            t.get_with(tp.order_line, &lk, |v| {
                h = fold(h, get_u32(v, OL_I_ID) as u64 ^ get_i64(v, OL_AMOUNT) as u64 ^ get_u64(v, OL_DELIVERY_D));
            })?
            .ok_or_else(|| missing("order line", &lk))?;
            lines += 1;
        }
        self.checksum = h;
        self.last = Outcome { o_id, c, count: lines, ..Outcome::default() };
        Ok(())
    }

    /// Delivery (clause 2.7.4), all ten districts in one transaction.
    fn delivery<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let tp = self.w;
        let i = self.input;
        let date = now();
        // In phases over the ten districts (the same reads and writes as one
        // district after another, in another order), each phase hinting
        // its rows first: the oldest new orders, their orders, their
        // lines, their customers.
        let mut oldest = [None::<u32>; DISTRICTS as usize];
        for (slot, d) in oldest.iter_mut().zip(1..=DISTRICTS) {
            let lo = d_key(i.w, d);
            let hi = lo.prefix_end().unwrap_or_else(|| lo.clone());
            // The oldest new order, deleted. At read committed a concurrent
            // Delivery may delete the one found between the scan and the
            // delete (the scan reads the latest committed state): find the
            // next oldest then. At the other levels that is a write conflict.
            while slot.is_none() {
                let mut first = None;
                t.scan(tp.new_order_pk, lo.clone()..hi.clone(), None, |pk, _| {
                    first = pk.u32_at(3);
                    false
                })?;
                let Some(o_id) = first else { break };
                match t.delete(tp.new_order, &o_key(i.w, d, o_id)) {
                    Err(Error::KeyNotFound) => continue,
                    r => r?,
                }
                *slot = Some(o_id);
            }
        }
        let keys = &mut self.keys;
        keys.clear();
        keys.extend((1..=DISTRICTS).zip(oldest).filter_map(|(d, o)| Some(o_key(i.w, d, o?))));
        t.prefetch(tp.order, keys);
        // (district, o_id, customer, lines, amount) per delivered order.
        let mut orders = [(0u8, 0u32, 0u32, 0u8, 0i64); DISTRICTS as usize];
        let mut n = 0;
        for (d, o) in (1..=DISTRICTS).zip(oldest) {
            let Some(o_id) = o else { continue };
            let ok = o_key(i.w, d, o_id);
            let (mut c, mut ol_cnt) = (0, 0);
            let r = t.modify(tp.order, &ok, |v| {
                v[O_CARRIER_ID] = i.carrier;
                c = get_u32(v, O_C_ID);
                ol_cnt = v[O_OL_CNT];
            });
            present(r, "order", &ok)?;
            orders[n] = (d, o_id, c, ol_cnt, 0);
            n += 1;
        }
        let orders = &mut orders[..n];
        keys.clear();
        for &(d, o_id, _, ol_cnt, _) in orders.iter() {
            keys.extend((1..=ol_cnt).map(|ol| ol_key(i.w, d, o_id, ol)));
        }
        t.prefetch(tp.order_line, keys);
        let mut lines = keys.iter();
        for (_, _, _, ol_cnt, sum) in orders.iter_mut() {
            for lk in lines.by_ref().take(*ol_cnt as usize) {
                let r = t.modify(tp.order_line, lk, |v| {
                    put_u64(v, OL_DELIVERY_D, date);
                    *sum += get_i64(v, OL_AMOUNT);
                });
                present(r, "order line", lk)?;
            }
        }
        keys.clear();
        keys.extend(orders.iter().map(|&(d, _, c, _, _)| c_key(i.w, d, c)));
        t.prefetch(tp.customer, keys);
        let mut total = 0i64;
        for (ck, &(_, _, _, _, sum)) in keys.iter().zip(orders.iter()) {
            let r = t.modify(tp.customer, ck, |v| {
                put_i64(v, C_BALANCE, get_i64(v, C_BALANCE) + sum);
                put_u32(v, C_DELIVERY_CNT, get_u32(v, C_DELIVERY_CNT) + 1);
            });
            present(r, "customer", ck)?;
            total += sum;
        }
        let delivered = n as u32;
        let skipped = DISTRICTS as u32 - delivered;
        self.last = Outcome { total, count: delivered, skipped, ..Outcome::default() };
        Ok(())
    }

    /// Stock-Level (clause 2.8.2).
    fn stock_level<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let tp = self.w;
        let i = self.input;
        let dk = d_key(i.w, i.d);
        let next =
            t.get_with(tp.district, &dk, |v| get_u32(v, D_NEXT_O_ID))?.ok_or_else(|| missing("district", &dk))?;
        // The last 20 orders, their lines, then the distinct items' stock,
        // all by key (ORDER and ORDER_LINE are hash tables; o_ol_cnt gives
        // the lines, condition 4). Each phase hints its rows first, so their
        // cache misses overlap instead of queueing one after another.
        let first = next.saturating_sub(20);
        let keys = &mut self.keys;
        keys.clear();
        keys.extend((first..next).map(|o| o_key(i.w, i.d, o)));
        t.prefetch(tp.order, keys);
        let mut ol_cnts = [0u8; 20];
        for (k, ok) in keys.iter().enumerate() {
            ol_cnts[k] = t.get_with(tp.order, ok, |v| v[O_OL_CNT])?.ok_or_else(|| missing("order", ok))?;
        }
        keys.clear();
        for (o, &cnt) in (first..next).zip(&ol_cnts) {
            keys.extend((1..=cnt).map(|ol| ol_key(i.w, i.d, o, ol)));
        }
        t.prefetch(tp.order_line, keys);
        let seen = &mut self.seen;
        seen.clear();
        for lk in keys.iter() {
            let item = t.get_with(tp.order_line, lk, |v| get_u32(v, OL_I_ID))?;
            seen.push(item.ok_or_else(|| missing("order line", lk))?);
        }
        seen.sort_unstable();
        seen.dedup();
        keys.clear();
        keys.extend(seen.iter().map(|&item| s_key(i.w, item)));
        t.prefetch(tp.stock, keys);
        let mut low = 0;
        for sk in keys.iter() {
            let q = t.get_with(tp.stock, sk, |v| get_u32(v, S_QUANTITY))?.ok_or_else(|| missing("stock", sk))?;
            low += (q < i.threshold) as u32;
        }
        self.last = Outcome { count: low, ..Outcome::default() };
        Ok(())
    }

    /// POMVCC's NewOrder loop (section VII, Figure 21): per line, read the
    /// item, read and update the stock quantity, insert an order line.
    fn new_order_lines<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let (tp, i) = (self.w, self.input);
        let n = i.ol_cnt as usize;
        self.prefetch_lines(t, n);
        let seq = self.seq;
        self.seq += 1;
        let mut total = 0;
        for k in 0..n {
            let price = t
                .get_with(tp.item, &self.item_keys[k], |v| get_i64(v, I_PRICE))?
                .ok_or_else(|| missing("item", &self.item_keys[k]))?;
            let qty = i.qty[k] as u32;
            let mut dist = [0u8; 24];
            let r = t.modify(tp.stock, &self.stock_keys[k], |v| {
                let q = get_u32(v, S_QUANTITY);
                put_u32(v, S_QUANTITY, new_quantity(q, qty));
                dist.copy_from_slice(&v[S_DIST..S_DIST + 24]);
            });
            present(r, "stock", &self.stock_keys[k])?;
            let amount = qty as i64 * price;
            total += amount;
            let lv = line_value(i.items[k], i.supply[k], qty as u8, amount, &dist);
            t.insert(tp.order_line, loose_ol_key(i.w, self.thread, seq, k as u8 + 1), &lv)?;
        }
        self.last = Outcome { total, count: n as u32, ..Outcome::default() };
        Ok(())
    }
}

impl Worker for TpccWorker<'_> {
    #[inline]
    fn next_txn(&mut self) {
        let cfg = &self.w.cfg;
        let ty = cfg.mix.draw(self.rng.next_u64());
        let w = if cfg.random_warehouse { uniform(&mut self.rng, 1, cfg.warehouses as u64) as u16 } else { self.home };
        let mut i = TpccInput { ty, w, c_w: w, c_last: None, rollback: false, ..self.input };
        match ty {
            NEW_ORDER => {
                i.d = uniform(&mut self.rng, 1, DISTRICTS as u64) as u8;
                i.c_d = i.d;
                i.c = nurand(&mut self.rng, 1023, C_ID, 1, CUSTOMERS as u64) as u32;
                self.draw_lines(&mut i);
                for k in 0..i.ol_cnt as usize {
                    if below(&mut self.rng, 100) == 0 {
                        i.supply[k] = self.other_warehouse(w);
                    }
                }
                i.rollback = below(&mut self.rng, 100) == 0;
                if i.rollback {
                    i.items[i.ol_cnt as usize - 1] = ITEMS + 1;
                }
            }
            PAYMENT => {
                i.d = uniform(&mut self.rng, 1, DISTRICTS as u64) as u8;
                if below(&mut self.rng, 100) < 15 && cfg.warehouses > 1 {
                    i.c_w = self.other_warehouse(w);
                    i.c_d = uniform(&mut self.rng, 1, DISTRICTS as u64) as u8;
                } else {
                    i.c_d = i.d;
                }
                self.draw_customer(&mut i);
                i.amount = uniform(&mut self.rng, 100, 500_000) as i64;
            }
            ORDER_STATUS => {
                i.d = uniform(&mut self.rng, 1, DISTRICTS as u64) as u8;
                i.c_d = i.d;
                self.draw_customer(&mut i);
            }
            DELIVERY => i.carrier = uniform(&mut self.rng, 1, 10) as u8,
            STOCK_LEVEL => {
                i.d = uniform(&mut self.rng, 1, DISTRICTS as u64) as u8;
                i.threshold = uniform(&mut self.rng, 10, 20) as u32;
            }
            _ => {
                i.d = 0;
                self.draw_lines(&mut i);
            }
        }
        self.set_input(i);
    }

    #[inline]
    fn execute<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        match self.input.ty {
            NEW_ORDER => self.new_order(t),
            PAYMENT => self.payment(t),
            ORDER_STATUS => self.order_status(t),
            DELIVERY => self.delivery(t),
            STOCK_LEVEL => self.stock_level(t),
            NEW_ORDER_LINES => self.new_order_lines(t),
            ty => Err(TxnError::Invariant(format!("tpcc: no transaction type {ty}"))),
        }
    }

    #[inline]
    fn txn_type(&self) -> usize {
        self.input.ty
    }

    #[inline]
    fn options(&self, run: TxnOptions<'static>) -> TxnOptions<'static> {
        TxnOptions { read_only: matches!(self.input.ty, ORDER_STATUS | STOCK_LEVEL), ..run }
    }

    #[inline]
    fn committed(&mut self) {
        self.committed[self.input.ty] += 1;
        match self.input.ty {
            DELIVERY => self.skipped += self.last.skipped as u64,
            NEW_ORDER_LINES => self.loose_lines += self.input.ol_cnt as u64,
            _ => {}
        }
    }

    fn finish(&mut self) {
        let w = self.w;
        // Relaxed: read after every worker was joined.
        for ty in 0..NTYPES {
            w.committed[ty].fetch_add(std::mem::take(&mut self.committed[ty]), Ordering::Relaxed);
        }
        w.skipped_deliveries.fetch_add(std::mem::take(&mut self.skipped), Ordering::Relaxed);
        w.loose_lines.fetch_add(std::mem::take(&mut self.loose_lines), Ordering::Relaxed);
    }
}

/// NewOrder's order id was taken: a transaction that committed after our read
/// of the district's next order id inserted that order (or its new-order row
/// or lines). Only a level that
/// lets the district's update conflict late can see it (read committed under
/// POMVCC's optimistic writes, which lock at commit): it is that write
/// conflict, found early, and the transaction is retried like one.
fn order_id_taken(e: Error) -> TxnError {
    match e {
        Error::DuplicateKey => TxnError::Engine(Error::Aborted(AbortReason::WriteConflict)),
        e => TxnError::Engine(e),
    }
}
