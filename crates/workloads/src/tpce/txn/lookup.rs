//! Trade-Lookup (clause 3.3.6), Trade-Update (3.3.10) and TPC-EH's
//! Asset-Eval (SSN paper, section 8.1).

use super::*;

/// What Trade-Update changes in each trade of its frame.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Trade-Lookup: nothing.
    None,
    /// Frame 1: the executor's name.
    Executor,
    /// Frame 2: the settlement's cash type.
    CashType,
    /// Frame 3: the cash transaction's name.
    CashName,
}

impl TpceWorker<'_> {
    /// The trades of the frame into `self.rows` as `(t_id, is_cash, status)`:
    /// frame 1 by id, frame 2 an account's latest in the window, frame 3 a
    /// security's first in the window; at most [`MAX_TRADES`].
    fn frame_trades<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let (tb, i) = (&self.w.t, self.input);
        self.rows.clear();
        let rows = &mut self.rows;
        match i.frame {
            1 => {
                for &t_id in &i.ids[..i.n] {
                    let tk = k64(t_id);
                    let row = t.get_with(tb.trade, &tk, |v| (v[T_IS_CASH] as i64, v[T_ST] as i64))?;
                    let (cash, st) = row.ok_or_else(|| missing("trade", &tk))?;
                    rows.push((t_id, cash, st));
                }
            }
            2 => {
                let lo = build(Key::builder().u64(i.ca).u64(!i.end));
                let hi = build(Key::builder().u64(i.ca).u64(!i.start + 1));
                t.scan(tb.t_by_account, lo..hi, None, |k, v| {
                    rows.push((k.u64_at(0).unwrap_or(0), v[T_IS_CASH] as i64, v[T_ST] as i64));
                    rows.len() < MAX_TRADES
                })?;
            }
            _ => {
                let lo = build(Key::builder().u32(i.s).u64(i.start));
                let hi = build(Key::builder().u32(i.s).u64(i.end));
                t.scan(tb.t_by_security, lo..hi, None, |k, v| {
                    rows.push((k.u64_at(0).unwrap_or(0), v[T_IS_CASH] as i64, v[T_ST] as i64));
                    rows.len() < MAX_TRADES
                })?;
            }
        }
        Ok(())
    }

    /// Reads (and for Trade-Update changes) each trade of the frame: its
    /// settlement and cash transaction (complete trades) and its history.
    fn frame_details<T: Txn>(&mut self, t: &mut T, change: Change) -> Result<u64, TxnError> {
        let tb = &self.w.t;
        let mut h = self.checksum;
        let mut changed = 0;
        for &(t_id, is_cash, st) in &self.rows {
            let tk = k64(t_id);
            if change == Change::Executor {
                let r = t.modify(tb.trade, &tk, |v| {
                    // " X " for " " and back, as the specification swaps them.
                    v[T_EXEC] = if v[T_EXEC] == b'X' { b'E' } else { b'X' };
                });
                present(r, "trade", &tk)?;
                changed += 1;
            }
            if st as u8 == ST_CMPT {
                if change == Change::CashType {
                    let r = t.modify(tb.settlement, &tk, |v| {
                        let new: &[u8] = if v[..12] == *b"Cash Account" { b"Cash" } else { b"Cash Account" };
                        v[SE_CASH_TYPE..SE_CASH_TYPE + 16].fill(0);
                        v[SE_CASH_TYPE..SE_CASH_TYPE + new.len()].copy_from_slice(new);
                    });
                    present(r, "settlement", &tk)?;
                    changed += 1;
                } else {
                    t.get_with(tb.settlement, &tk, |v| h = fold(h, get_i64(v, SE_AMT) as u64))?
                        .ok_or_else(|| missing("settlement", &tk))?;
                }
                if is_cash != 0 {
                    if change == Change::CashName {
                        let r = t.modify(tb.cash_transaction, &tk, |v| v[CT_NAME] ^= 0x20);
                        present(r, "cash transaction", &tk)?;
                        changed += 1;
                    } else {
                        t.get_with(tb.cash_transaction, &tk, |v| h = fold(h, get_i64(v, CT_AMT) as u64))?
                            .ok_or_else(|| missing("cash transaction", &tk))?;
                    }
                }
            }
            t.scan(tb.trade_history.into(), prefix_range(k64(t_id)), None, |k, v| {
                h = fold(h, get_u64(v, 0) ^ k.as_bytes()[8] as u64);
                true
            })?;
        }
        self.checksum = h;
        Ok(changed)
    }

    /// Trade-Lookup (clause 3.3.6).
    pub(super) fn trade_lookup<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let (tb, i) = (&self.w.t, self.input);
        if i.frame == 4 {
            // The account's first trade at or after the start, and the
            // holding history it wrote.
            let lo = k64(i.ca);
            let hi = build(Key::builder().u64(i.ca).u64(!i.start + 1));
            let mut first = None;
            t.scan(tb.t_by_account, lo..hi, None, |k, _| {
                first = k.u64_at(0);
                true
            })?;
            let mut rows = 0;
            if let Some(t_id) = first {
                let mut h = self.checksum;
                t.scan(tb.holding_history.into(), prefix_range(k64(t_id)), None, |_, v| {
                    h = fold(h, get_i64(v, 8) as u64);
                    rows += 1;
                    rows < MAX_TRADES as u64
                })?;
                self.checksum = h;
            }
            self.last = Outcome { rows, ..Outcome::default() };
            return Ok(());
        }
        self.frame_trades(t)?;
        self.frame_details(t, Change::None)?;
        self.last = Outcome { rows: self.rows.len() as u64, ..Outcome::default() };
        Ok(())
    }

    /// Trade-Update (clause 3.3.10).
    pub(super) fn trade_update<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        self.frame_trades(t)?;
        let change = match self.input.frame {
            1 => Change::Executor,
            2 => Change::CashType,
            _ => Change::CashName,
        };
        let changed = self.frame_details(t, change)?;
        self.last = Outcome { rows: self.rows.len() as u64, total: changed as i64, ..Outcome::default() };
        Ok(())
    }

    /// Asset-Eval (TPC-EH): the total assets of a contiguous run of
    /// accounts, from the account drawn on (wrapping around), each the sum
    /// of its holding summaries' quantities times the last trade prices,
    /// inserted into ASSET_HISTORY.
    pub(super) fn asset_eval<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let (tb, i) = (&self.w.t, self.input);
        let want = self.w.cfg.asset_eval_accounts() as usize;
        let ca_pk: multiverse::IndexId = tb.customer_account.into();
        let mut accounts = std::mem::take(&mut self.ids);
        accounts.clear();
        t.scan(ca_pk, k64(i.ca).., None, |k, _| {
            accounts.push(k.u64_at(0).unwrap_or(0));
            accounts.len() < want
        })?;
        if accounts.len() < want {
            let first = accounts.first().copied().unwrap_or(u64::MAX);
            t.scan(ca_pk, ..k64(first), None, |k, _| {
                accounts.push(k.u64_at(0).unwrap_or(0));
                accounts.len() < want
            })?;
        }
        let dts = now();
        let mut total = 0i64;
        let mut v = [0u8; AH_LEN];
        let r = accounts.iter().try_for_each(|&ca| {
            let assets = self.account_assets(t, ca)?;
            put_u64(&mut v, AH_CA_ID, ca);
            put_u64(&mut v, AH_DTS, dts);
            put_i64(&mut v, AH_VALUE, assets);
            t.insert(tb.asset_history, ah_key(self.thread(), i.seq, ca), &v)?;
            total += assets;
            Ok::<(), TxnError>(())
        });
        let rows = accounts.len() as u64;
        self.ids = accounts;
        r?;
        self.last = Outcome { rows, total, ..Outcome::default() };
        Ok(())
    }
}
