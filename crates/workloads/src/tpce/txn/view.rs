//! The read-only views: Broker-Volume (clause 3.3.1), Customer-Position
//! (3.3.2), Market-Watch (3.3.4), Security-Detail (3.3.5) and Trade-Status
//! (3.3.9).

use super::*;

impl TpceWorker<'_> {
    /// Broker-Volume (clause 3.3.1): per broker, the volume of its pending
    /// limit orders on securities of companies in the sector.
    pub(super) fn broker_volume<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let (tb, i) = (&self.w.t, self.input);
        let (mut with_volume, mut total) = (0u64, 0i64);
        for &b in &i.brokers[..i.n] {
            self.rows.clear();
            let rows = &mut self.rows;
            t.scan(tb.tr_by_broker, prefix_range(k32(b)), None, |_, v| {
                rows.push((get_u32(v, TR_S_ID) as u64, get_i64(v, TR_BID), get_u32(v, TR_QTY) as i64));
                true
            })?;
            let mut volume = 0i64;
            for &(s, bid, qty) in &self.rows {
                let sk = k32(s as u32);
                let co =
                    t.get_with(tb.security, &sk, |v| get_u32(v, S_CO_ID))?.ok_or_else(|| missing("security", &sk))?;
                let cok = k32(co);
                let ind = t.get_with(tb.company, &cok, |v| v[CO_IN_ID])?.ok_or_else(|| missing("company", &cok))?;
                let ik = k8(ind);
                let sc = t.get_with(tb.industry, &ik, |v| v[0])?.ok_or_else(|| missing("industry", &ik))?;
                if sc == i.group {
                    volume += bid * qty;
                }
            }
            let sck = k8(i.group);
            t.get_with(tb.sector, &sck, |v| self.checksum = fold(self.checksum, v[0] as u64))?
                .ok_or_else(|| missing("sector", &sck))?;
            with_volume += (volume > 0) as u64;
            total += volume;
        }
        self.last = Outcome { rows: with_volume, total, ..Outcome::default() };
        Ok(())
    }

    /// The market value of account `ca`'s holding summaries at the last
    /// trade prices (Customer-Position frame 1, Asset-Eval).
    pub(super) fn account_assets<T: Txn>(&mut self, t: &mut T, ca: u64) -> Result<i64, TxnError> {
        let tb = &self.w.t;
        self.rows.clear();
        let rows = &mut self.rows;
        t.scan(tb.holding_summary.into(), prefix_range(k64(ca)), None, |k, v| {
            rows.push((k.u32_at(8).unwrap_or(0) as u64, 0, get_i64(v, HS_QTY)));
            true
        })?;
        let mut assets = 0i64;
        for &(s, _, qty) in &self.rows {
            let sk = k32(s as u32);
            let price =
                t.get_with(tb.last_trade, &sk, |v| get_i64(v, LT_PRICE))?.ok_or_else(|| missing("last trade", &sk))?;
            assets += qty * price;
        }
        Ok(assets)
    }

    /// Customer-Position (clause 3.3.2).
    pub(super) fn customer_position<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let (tb, i) = (&self.w.t, self.input);
        let mut c = i.c;
        if i.group == 1 {
            // By tax id, as the driver gives it half the time.
            let mut tax = [0u8; 20];
            super::super::load::tax_id(i.c, &mut tax);
            let mut found = None;
            t.get_by(tb.c_by_tax_id, &build(Key::builder().bytes(&tax)), |pk, _| {
                found = pk.u64_at(0);
                false
            })?;
            c = found.ok_or_else(|| missing("customer by tax id", &k64(i.c)))?;
        }
        let ck = k64(c);
        t.get_with(tb.customer, &ck, |v| self.checksum = fold(self.checksum, v[C_NAME] as u64))?
            .ok_or_else(|| missing("customer", &ck))?;
        // Frame 1: the customer's accounts (its key range), each with its
        // cash and the value of its holdings.
        self.ids.clear();
        let ids = &mut self.ids;
        let mut cash = 0i64;
        t.scan(tb.customer_account.into(), k64(c << 4)..k64((c + 1) << 4), None, |k, v| {
            ids.push(k.u64_at(0).unwrap_or(0));
            cash += get_i64(v, CA_BAL);
            true
        })?;
        let mut total = cash;
        let accounts = std::mem::take(&mut self.ids);
        for &ca in &accounts {
            total += self.account_assets(t, ca)?;
        }
        let rows = accounts.len() as u64;
        let pick = accounts.get((i.ca & 15) as usize % accounts.len().max(1)).copied();
        self.ids = accounts;
        // Frame 2: one account's last 10 trades and their histories.
        if i.frame == 2 {
            let Some(ca) = pick else {
                return Err(TxnError::Invariant(format!("tpce: customer {c} has no account")));
            };
            self.rows.clear();
            let rows = &mut self.rows;
            t.scan(tb.t_by_account, prefix_range(k64(ca)), None, |k, v| {
                rows.push((k.u64_at(0).unwrap_or(0), get_i64(v, T_BID), v[T_ST] as i64));
                rows.len() < 10
            })?;
            for &(t_id, _, st) in &self.rows {
                let mut h = self.checksum;
                t.scan(tb.trade_history.into(), prefix_range(k64(t_id)), None, |_, v| {
                    h = fold(h, get_u64(v, 0));
                    true
                })?;
                t.get_with(tb.status_type, &k8(st as u8), |v| h = fold(h, v[0] as u64))?;
                self.checksum = h;
            }
        }
        self.last = Outcome { rows, total, ..Outcome::default() };
        Ok(())
    }

    /// Market-Watch (clause 3.3.4): the change in market capitalization
    /// since a start day of a watch list's, an industry's or an account's
    /// securities.
    pub(super) fn market_watch<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let (tb, i) = (&self.w.t, self.input);
        self.ids.clear();
        let ids = &mut self.ids;
        match i.frame {
            1 => {
                let wk = k64(i.c);
                t.get_with(tb.watch_list, &wk, |_| ())?.ok_or_else(|| missing("watch list", &wk))?;
                t.scan(tb.watch_item.into(), prefix_range(wk), None, |k, _| {
                    ids.push(k.u32_at(8).unwrap_or(0) as u64);
                    true
                })?;
            }
            2 => {
                self.rows.clear();
                let rows = &mut self.rows;
                t.scan(tb.co_by_industry, prefix_range(k8(i.group)), None, |k, _| {
                    rows.push((k.u32_at(0).unwrap_or(0) as u64, 0, 0));
                    true
                })?;
                for &(co, _, _) in &self.rows {
                    t.scan(tb.s_by_company, prefix_range(k32(co as u32)), None, |k, _| {
                        ids.push(k.u32_at(0).unwrap_or(0) as u64);
                        true
                    })?;
                }
            }
            _ => {
                t.scan(tb.holding_summary.into(), prefix_range(k64(i.ca)), None, |k, _| {
                    ids.push(k.u32_at(8).unwrap_or(0) as u64);
                    true
                })?;
            }
        }
        let (mut old_cap, mut new_cap) = (0i128, 0i128);
        for &s in &self.ids {
            let sk = k32(s as u32);
            let price =
                t.get_with(tb.last_trade, &sk, |v| get_i64(v, LT_PRICE))?.ok_or_else(|| missing("last trade", &sk))?;
            let out =
                t.get_with(tb.security, &sk, |v| get_u64(v, S_NUM_OUT))?.ok_or_else(|| missing("security", &sk))?;
            let dk = k32_32(s as u32, i.start as u32);
            let close = t
                .get_with(tb.daily_market, &dk, |v| get_i64(v, DM_CLOSE))?
                .ok_or_else(|| missing("daily market", &dk))?;
            old_cap += out as i128 * close as i128;
            new_cap += out as i128 * price as i128;
        }
        // The change in basis points.
        let pct = if old_cap == 0 { 0 } else { ((new_cap - old_cap) * 10_000 / old_cap) as i64 };
        self.last = Outcome { rows: self.ids.len() as u64, total: pct, ..Outcome::default() };
        Ok(())
    }

    /// Security-Detail (clause 3.3.5).
    pub(super) fn security_detail<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let (tb, i) = (&self.w.t, self.input);
        let mut h = self.checksum;
        let sk = k32(i.s);
        let (co, ex) = t
            .get_with(tb.security, &sk, |v| (get_u32(v, S_CO_ID), v[S_EX_ID]))?
            .ok_or_else(|| missing("security", &sk))?;
        let cok = k32(co);
        let ad = t.get_with(tb.company, &cok, |v| get_u64(v, CO_AD_ID))?.ok_or_else(|| missing("company", &cok))?;
        let adk = k64(ad);
        let zc = t.get_with(tb.address, &adk, |v| get_u32(v, 0))?.ok_or_else(|| missing("address", &adk))?;
        let zk = k32(zc);
        t.get_with(tb.zip_code, &zk, |v| h = fold(h, v[0] as u64))?.ok_or_else(|| missing("zip code", &zk))?;
        let exk = k8(ex);
        t.get_with(tb.exchange, &exk, |v| h = fold(h, v[0] as u64))?.ok_or_else(|| missing("exchange", &exk))?;
        let mut rows = 0u64;
        t.scan(tb.financial.into(), prefix_range(k32(co)), None, |_, v| {
            h = fold(h, get_i64(v, 0) as u64);
            rows += 1;
            true
        })?;
        let (lo, hi) = (k32_32(i.s, i.start as u32), k32_32(i.s, (i.start + i.end) as u32));
        t.scan(tb.daily_market.into(), lo..hi, None, |_, v| {
            h = fold(h, get_i64(v, DM_CLOSE) as u64);
            rows += 1;
            true
        })?;
        let price =
            t.get_with(tb.last_trade, &sk, |v| get_i64(v, LT_PRICE))?.ok_or_else(|| missing("last trade", &sk))?;
        self.rows.clear();
        let news = &mut self.rows;
        t.scan(tb.news_xref.into(), prefix_range(k32(co)), None, |k, _| {
            news.push((k.u64_at(4).unwrap_or(0), 0, 0));
            true
        })?;
        for &(ni, _, _) in &self.rows {
            let nk = k64(ni);
            t.get_with(tb.news_item, &nk, |v| h = fold(h, get_u64(v, 0)))?.ok_or_else(|| missing("news item", &nk))?;
            rows += 1;
        }
        self.checksum = h;
        self.last = Outcome { rows, total: price, ..Outcome::default() };
        Ok(())
    }

    /// Trade-Status (clause 3.3.9): an account's 50 latest trades, their
    /// types and statuses, its customer and broker.
    pub(super) fn trade_status<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let (tb, i) = (&self.w.t, self.input);
        self.rows.clear();
        let rows = &mut self.rows;
        t.scan(tb.t_by_account, prefix_range(k64(i.ca)), None, |_, v| {
            rows.push((v[T_TT] as u64, get_i64(v, T_BID), v[T_ST] as i64));
            rows.len() < 50
        })?;
        let mut h = self.checksum;
        for &(tt, _, st) in &self.rows {
            t.get_with(tb.trade_type, &k8(tt as u8), |v| h = fold(h, v[2] as u64))?;
            t.get_with(tb.status_type, &k8(st as u8), |v| h = fold(h, v[0] as u64))?;
        }
        let cak = k64(i.ca);
        let (b, c) = t
            .get_with(tb.customer_account, &cak, |v| (get_u32(v, CA_B_ID), get_u64(v, CA_C_ID)))?
            .ok_or_else(|| missing("customer account", &cak))?;
        t.get_with(tb.customer, &k64(c), |v| h = fold(h, v[C_NAME] as u64))?;
        t.get_with(tb.broker, &k32(b), |v| h = fold(h, v[B_NAME] as u64))?;
        self.checksum = h;
        self.last = Outcome { rows: self.rows.len() as u64, ..Outcome::default() };
        Ok(())
    }
}
