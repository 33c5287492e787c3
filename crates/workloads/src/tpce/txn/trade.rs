//! Trade-Order (clause 3.3.7), Trade-Result (3.3.8) and Market-Feed
//! (3.3.3): the transactions that write trades and holdings.

use super::super::load::{cash_type, commission, name, settlement_amount};
use super::*;

impl TpceWorker<'_> {
    /// The commission rate of `(tier, tt, ex)` for `qty` (COMMISSION_RATE's
    /// band with `from <= qty <= to`).
    fn comm_rate<T: Txn>(&mut self, t: &mut T, tier: u8, tt: u8, ex: u8, qty: u32) -> Result<u32, TxnError> {
        let lo = load::comm_key(tier, tt, ex, 0);
        let hi = load::comm_key(tier, tt, ex, u32::MAX);
        let mut rate = None;
        t.scan(self.w.t.commission_rate.into(), lo..=hi, None, |k, v| {
            let from = k.u32_at(3).unwrap_or(u32::MAX);
            if from <= qty && qty <= get_u32(v, 0) {
                rate = Some(get_u32(v, 4));
                return false;
            }
            true
        })?;
        rate.ok_or_else(|| {
            TxnError::Invariant(format!("tpce: no commission rate for tier {tier}, type {tt}, quantity {qty}"))
        })
    }

    /// The sum of customer `c`'s tax rates (CUSTOMER_TAXRATE joined with TAX_RATE).
    fn tax_rates<T: Txn>(&mut self, t: &mut T, c: u64) -> Result<u32, TxnError> {
        let tb = &self.w.t;
        self.ids.clear();
        let ids = &mut self.ids;
        t.scan(tb.customer_taxrate.into(), prefix_range(k64(c)), None, |k, _| {
            ids.push(u16::from_be_bytes([k.as_bytes()[8], k.as_bytes()[9]]) as u64);
            true
        })?;
        let mut rate = 0;
        for &tx in &self.ids {
            let k = build(Key::builder().u16(tx as u16));
            rate += t.get_with(tb.tax_rate, &k, |v| get_u32(v, 0))?.ok_or_else(|| missing("tax rate", &k))?;
        }
        Ok(rate)
    }

    /// The holdings of `(ca, s)` into `self.rows` as `(h_t_id, h_price, h_qty)`, oldest first.
    fn holdings<T: Txn>(&mut self, t: &mut T, ca: u64, s: u32) -> Result<(), TxnError> {
        self.rows.clear();
        let rows = &mut self.rows;
        t.scan(self.w.t.holding.into(), prefix_range(k64_32(ca, s)), None, |k, v| {
            rows.push((k.u64_at(12).unwrap_or(0), get_i64(v, H_PRICE), get_i64(v, H_QTY)));
            true
        })?;
        Ok(())
    }

    /// Trade-Order (clause 3.3.7).
    pub(super) fn trade_order<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let (tb, i) = (&self.w.t, self.input);
        // Frame 1: the account, its customer and broker.
        let cak = k64(i.ca);
        let (b, c, tax_st) = t
            .get_with(tb.customer_account, &cak, |v| (get_u32(v, CA_B_ID), get_u64(v, CA_C_ID), v[CA_TAX_ST]))?
            .ok_or_else(|| missing("customer account", &cak))?;
        let ck = k64(c);
        let tier = t.get_with(tb.customer, &ck, |v| v[C_TIER])?.ok_or_else(|| missing("customer", &ck))?;
        let bk = k32(b);
        let mut h = self.checksum;
        t.get_with(tb.broker, &bk, |v| h = fold(h, v[B_NAME] as u64))?.ok_or_else(|| missing("broker", &bk))?;
        // Frame 2: the executor may act for the account: its owner, or
        // (10%) another customer the account permits, when it has one.
        let mut exec = c;
        if i.third_party {
            t.scan(tb.account_permission.into(), prefix_range(k64(i.ca)), None, |k, v| {
                h = fold(h, v[0] as u64);
                exec = k.u64_at(8).unwrap_or(c);
                exec == c
            })?;
        } else {
            t.get_with(tb.account_permission, &k64_64(i.ca, c), |v| h = fold(h, v[0] as u64))?;
        }
        if exec != c {
            let ek = k64(exec);
            t.get_with(tb.customer, &ek, |v| h = fold(h, v[C_TAX_ID] as u64))?
                .ok_or_else(|| missing("customer", &ek))?;
        }
        // Frame 3: the security, its company, the market price; what a
        // sale would sell; taxes, commission and charge.
        let sk = k32(i.s);
        let (co, ex) = t
            .get_with(tb.security, &sk, |v| (get_u32(v, S_CO_ID), v[S_EX_ID]))?
            .ok_or_else(|| missing("security", &sk))?;
        let cok = k32(co);
        t.get_with(tb.company, &cok, |v| h = fold(h, v[CO_NAME] as u64))?.ok_or_else(|| missing("company", &cok))?;
        let price =
            t.get_with(tb.last_trade, &sk, |v| get_i64(v, LT_PRICE))?.ok_or_else(|| missing("last trade", &sk))?;
        let tt = t.get_with(tb.trade_type, &k8(i.tt), |v| v[0])?.map_or(i.tt, |_| i.tt);
        let sell = is_sell(tt);
        let bid = if is_market(tt) { price } else { i.bid };
        let held = t.get_with(tb.holding_summary, &k64_32(i.ca, i.s), |v| get_i64(v, HS_QTY))?.unwrap_or(0);
        if (sell && held > 0) || (!sell && held < 0) {
            // The value of what the order would close, LIFO or FIFO.
            self.holdings(t, i.ca, i.s)?;
            let mut need = i.qty as i64;
            let (mut buy_value, mut sell_value) = (0i64, 0i64);
            let n = self.rows.len();
            for step in 0..n {
                if need == 0 {
                    break;
                }
                let (_, h_price, qty) = self.rows[if i.lifo { n - 1 - step } else { step }];
                let take = need.min(qty.abs());
                buy_value += take * h_price;
                sell_value += take * bid;
                need -= take;
            }
            h = fold(h, (sell_value - buy_value) as u64);
        }
        if sell && tax_st != 0 {
            let rate = self.tax_rates(t, c)?;
            h = fold(h, rate as u64);
        }
        let rate = self.comm_rate(t, tier, tt, ex, i.qty)?;
        let chk = build(Key::builder().u8(tt).u8(tier));
        let chrg = t.get_with(tb.charge, &chk, |v| get_i64(v, 0))?.ok_or_else(|| missing("charge", &chk))?;
        h = fold(h, commission(rate, i.qty, bid) as u64);
        self.checksum = h;
        // Frame 4: the trade, its history, and its request (limit) or its
        // place in the market's queue (market).
        let st = if is_market(tt) { ST_SBMT } else { ST_PNDG };
        let dts = now();
        let mut tv = [0u8; T_LEN];
        put_u64(&mut tv, T_DTS, dts);
        tv[T_ST] = st;
        tv[T_TT] = tt;
        tv[T_IS_CASH] = i.is_cash as u8;
        tv[T_LIFO] = i.lifo as u8;
        put_u32(&mut tv, T_S_ID, i.s);
        put_u32(&mut tv, T_QTY, i.qty);
        put_i64(&mut tv, T_BID, bid);
        put_u64(&mut tv, T_CA_ID, i.ca);
        name("Exec", exec, &mut tv[T_EXEC..T_EXEC + 16]);
        put_i64(&mut tv, T_CHRG, chrg);
        t.insert(tb.trade, k64(i.t_id), &tv)?;
        t.insert(tb.trade_history, th_key(i.t_id, st), &dts.to_le_bytes())?;
        if is_market(tt) {
            let shard = self.thread() % MARKET_SHARDS;
            t.insert(tb.market, market_key(shard, i.t_id), &[])?;
        } else {
            let mut rq = [0u8; TR_LEN];
            rq[TR_TT] = tt;
            put_u32(&mut rq, TR_S_ID, i.s);
            put_u32(&mut rq, TR_QTY, i.qty);
            put_i64(&mut rq, TR_BID, bid);
            put_u32(&mut rq, TR_B_ID, b);
            t.insert(tb.trade_request, k64(i.t_id), &rq)?;
        }
        self.last = Outcome { trade: i.t_id, rows: 1, total: bid * i.qty as i64, ..Outcome::default() };
        if i.rollback {
            // Clause 3.3.7.2: 1% of orders roll back after their writes.
            return Err(TxnError::Rollback);
        }
        Ok(())
    }

    /// Takes the oldest submitted trade of shard `first`, or of the next
    /// shard that has one: deletes its queue entry.
    fn take_submitted<T: Txn>(&mut self, t: &mut T, first: u16) -> Result<Option<u64>, TxnError> {
        let market = self.w.t.market;
        for k in 0..MARKET_SHARDS {
            let shard = (first + k) % MARKET_SHARDS;
            let range = prefix_range(build(Key::builder().u16(shard)));
            loop {
                let mut found = None;
                t.scan(market.into(), range.clone(), None, |key, _| {
                    found = key.u64_at(2);
                    false
                })?;
                let Some(t_id) = found else { break };
                // At read committed another Trade-Result may have taken it
                // between the scan and the delete: take the next one then.
                match t.delete(market, &market_key(shard, t_id)) {
                    Err(Error::KeyNotFound) => continue,
                    r => r?,
                }
                return Ok(Some(t_id));
            }
        }
        Ok(None)
    }

    /// Trade-Result (clause 3.3.8).
    pub(super) fn trade_result<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let tb = &self.w.t;
        let Some(t_id) = self.take_submitted(t, self.input.seq as u16)? else {
            return Ok(());
        };
        // Frame 1: the trade, its type, the holding summary.
        let tk = k64(t_id);
        let tv = t.get_for_update_with(tb.trade, &tk, |v| <[u8; T_LEN]>::try_from(v).ok())?.flatten();
        let tv = tv.ok_or_else(|| missing("trade", &tk))?;
        if tv[T_ST] != ST_SBMT {
            // Another Trade-Result completed it after this one read the
            // queue: a protocol that validates reads only at commit (Silo)
            // lets a transaction see that before it aborts.
            return Err(raced(Error::KeyNotFound));
        }
        let (tt, ca, s, qty) = (tv[T_TT], get_u64(&tv, T_CA_ID), get_u32(&tv, T_S_ID), get_u32(&tv, T_QTY));
        let (sell, lifo, is_cash) = (is_sell(tt), tv[T_LIFO] != 0, tv[T_IS_CASH] != 0);
        t.get_with(tb.trade_type, &k8(tt), |v| self.checksum = fold(self.checksum, v[1] as u64))?;
        let sk = k32(s);
        let price = if is_market(tt) {
            t.get_with(tb.last_trade, &sk, |v| get_i64(v, LT_PRICE))?.ok_or_else(|| missing("last trade", &sk))?
        } else {
            get_i64(&tv, T_BID)
        };
        // Frame 2: the account, then the holding summary (written first:
        // every change of these holdings writes it, so the holdings read
        // next are the latest), then the holdings, LIFO or FIFO.
        let cak = k64(ca);
        let (b, c, tax_st) = t
            .get_with(tb.customer_account, &cak, |v| (get_u32(v, CA_B_ID), get_u64(v, CA_C_ID), v[CA_TAX_ST]))?
            .ok_or_else(|| missing("customer account", &cak))?;
        let delta = if sell { -(qty as i64) } else { qty as i64 };
        let hsk = k64_32(ca, s);
        let old = t.get_for_update_with(tb.holding_summary, &hsk, |v| get_i64(v, HS_QTY))?;
        match old {
            None => t.insert(tb.holding_summary, hsk.clone(), &delta.to_le_bytes()).map_err(raced)?,
            Some(_) => {
                let mut now_qty = 0;
                t.modify(tb.holding_summary, &hsk, |v| {
                    now_qty = get_i64(v, HS_QTY) + delta;
                    put_i64(v, HS_QTY, now_qty);
                })
                .map_err(raced)?;
                if now_qty == 0 {
                    t.delete(tb.holding_summary, &hsk).map_err(raced)?;
                }
            }
        }
        self.holdings(t, ca, s)?;
        let mut need = qty as i64;
        let mut gain = 0i64;
        let mut hh = [0u8; HH_LEN];
        let n = self.rows.len();
        for step in 0..n {
            if need == 0 {
                break;
            }
            let (h_t, h_price, h_qty) = self.rows[if lifo { n - 1 - step } else { step }];
            if h_qty.signum() != -delta.signum() {
                break;
            }
            let take = need.min(h_qty.abs());
            let after = h_qty + take * delta.signum();
            if sell {
                gain += take * (price - h_price);
            }
            put_i64(&mut hh, 0, h_qty);
            put_i64(&mut hh, 8, after);
            t.insert(tb.holding_history, k64_64(t_id, h_t), &hh).map_err(raced)?;
            let hk = h_key(ca, s, h_t);
            if after == 0 {
                t.delete(tb.holding, &hk).map_err(raced)?;
            } else {
                t.modify(tb.holding, &hk, |v| put_i64(v, H_QTY, after)).map_err(raced)?;
            }
            need -= take;
        }
        let dts = now();
        if need > 0 {
            let q = need * delta.signum();
            put_i64(&mut hh, 0, 0);
            put_i64(&mut hh, 8, q);
            t.insert(tb.holding_history, k64_64(t_id, t_id), &hh).map_err(raced)?;
            let mut hv = [0u8; H_LEN];
            put_u64(&mut hv, H_DTS, dts);
            put_i64(&mut hv, H_PRICE, price);
            put_i64(&mut hv, H_QTY, q);
            t.insert(tb.holding, h_key(ca, s, t_id), &hv).map_err(raced)?;
        }
        // Frame 3: tax on a sale's gain.
        let tax = if sell && tax_st != 0 && gain > 0 { gain * self.tax_rates(t, c)? as i64 / 10_000 } else { 0 };
        // Frame 4: the commission (the security's exchange, the customer's tier).
        let ex = t.get_with(tb.security, &sk, |v| v[S_EX_ID])?.ok_or_else(|| missing("security", &sk))?;
        let ck = k64(c);
        let tier = t.get_with(tb.customer, &ck, |v| v[C_TIER])?.ok_or_else(|| missing("customer", &ck))?;
        let rate = self.comm_rate(t, tier, tt, ex, qty)?;
        let comm = commission(rate, qty, price);
        let chrg = get_i64(&tv, T_CHRG);
        // Frame 5: the trade complete, its history, the broker's totals.
        let r = t.modify(tb.trade, &tk, |v| {
            v[T_ST] = ST_CMPT;
            put_i64(v, T_PRICE, price);
            put_i64(v, T_COMM, comm);
            put_i64(v, T_TAX, tax);
            put_u64(v, T_COMP_DTS, dts);
        });
        present(r, "trade", &tk)?;
        t.insert(tb.trade_history, th_key(t_id, ST_CMPT), &dts.to_le_bytes())?;
        let bk = k32(b);
        let r = t.modify(tb.broker, &bk, |v| {
            put_u64(v, B_NUM_TRADES, get_u64(v, B_NUM_TRADES) + 1);
            put_i64(v, B_COMM_TOTAL, get_i64(v, B_COMM_TOTAL) + comm);
        });
        present(r, "broker", &bk)?;
        // Frame 6: the settlement; a cash trade's balance and cash transaction.
        let amt = settlement_amount(sell, qty, price, chrg, comm, tax);
        let mut se = [0u8; SE_LEN];
        se[..cash_type(is_cash).len()].copy_from_slice(cash_type(is_cash));
        put_u64(&mut se, SE_DUE, dts + 2 * DAY_NS);
        put_i64(&mut se, SE_AMT, amt);
        t.insert(tb.settlement, tk.clone(), &se)?;
        if is_cash {
            let r = t.modify(tb.customer_account, &cak, |v| put_i64(v, CA_BAL, get_i64(v, CA_BAL) + amt));
            present(r, "customer account", &cak)?;
            let mut ct = [0u8; CT_LEN];
            put_u64(&mut ct, CT_DTS, dts);
            put_i64(&mut ct, CT_AMT, amt);
            name(TRADE_TYPE_NAMES[tt as usize], qty as u64, &mut ct[CT_NAME..CT_LEN]);
            t.insert(tb.cash_transaction, tk, &ct)?;
        }
        self.last = Outcome { trade: t_id, rows: 1, total: amt, ..Outcome::default() };
        Ok(())
    }

    /// Market-Feed (clause 3.3.3).
    pub(super) fn market_feed<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let (tb, i) = (&self.w.t, self.input);
        let dts = now();
        let mut triggered = 0;
        for &tick in &i.ids[..i.n] {
            let (s, price) = ((tick >> 32) as u32, (tick & 0xFFFF_FFFF) as i64);
            let sk = k32(s);
            let r = t.modify(tb.last_trade, &sk, |v| {
                put_i64(v, LT_PRICE, price);
                put_u64(v, LT_VOL, get_u64(v, LT_VOL) + 100);
                put_u64(v, LT_DTS, dts);
            });
            present(r, "last trade", &sk)?;
            // The limit orders the new price triggers.
            self.rows.clear();
            let rows = &mut self.rows;
            t.scan(tb.tr_by_security, prefix_range(k32(s)), None, |k, v| {
                if triggered_by(v, price) {
                    rows.push((k.u64_at(0).unwrap_or(0), 0, 0));
                }
                true
            })?;
            for &(t_id, _, _) in &self.rows {
                // At read committed another Market-Feed may have taken it.
                match t.delete(tb.trade_request, &k64(t_id)) {
                    Err(Error::KeyNotFound) => continue,
                    r => r?,
                }
                let tk = k64(t_id);
                let mut was = ST_PNDG;
                let r = t.modify(tb.trade, &tk, |v| {
                    was = v[T_ST];
                    v[T_ST] = ST_SBMT;
                });
                present(r, "trade", &tk)?;
                if was != ST_PNDG {
                    // As in Trade-Result: seen only before a failed validation.
                    return Err(raced(Error::KeyNotFound));
                }
                t.insert(tb.trade_history, th_key(t_id, ST_SBMT), &dts.to_le_bytes())?;
                t.insert(tb.market, market_key(shard_of(t_id), t_id), &[])?;
                triggered += 1;
            }
        }
        self.last = Outcome { rows: i.n as u64, triggered, ..Outcome::default() };
        Ok(())
    }
}

/// Whether the TRADE_REQUEST row `v` is triggered by `price`.
#[inline]
fn triggered_by(v: &[u8], price: i64) -> bool {
    v.len() == TR_LEN && triggered(v[TR_TT], get_i64(v, TR_BID), price)
}
