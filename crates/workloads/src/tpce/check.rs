//! The consistency conditions, checked in one snapshot after a run (see the
//! module docs): trades against their settlements, cash transactions,
//! histories, requests and queue entries; holdings against holding
//! summaries; balances against cash transactions; brokers' trade counts;
//! asset-history rows. [`check`] compares the counts with the run's tallies.

use super::*;
use multiverse::Error;
use std::collections::HashMap;

/// What one trade is, for the checks.
#[derive(Clone, Copy)]
struct TradeInfo {
    st: u8,
    is_cash: bool,
    ca: u64,
    /// Completed since the load.
    by_run: bool,
    /// A history row for its status was seen.
    history: bool,
}

/// What the state conditions counted.
#[derive(Default)]
struct Totals {
    accounts: u64,
    trades: u64,
    complete: u64,
    pending: u64,
    submitted: u64,
    completed_by_run: u64,
    holdings: u64,
    summaries: u64,
    assets: u64,
}

/// Checks the state conditions and the counts; a one-line summary or what is broken.
pub(super) fn check<S: Store>(w: &Tpce, db: &S) -> std::result::Result<String, String> {
    let n = in_snapshot(w, db)?;
    let (ordered, completed, assets) = w.tallies();
    let loaded: u64 = (1..=w.cfg.customers)
        .flat_map(|c| (0..accounts_of(c)).map(move |k| load::ca_id(c, k)))
        .map(|ca| initial_trades(&w.cfg, ca))
        .sum();
    if n.trades != loaded + ordered {
        return Err(format!(
            "{} trades, but {loaded} were loaded and {ordered} ordered by committed Trade-Orders",
            n.trades
        ));
    }
    if n.completed_by_run != completed {
        return Err(format!(
            "{} trades completed since the load, but committed Trade-Results completed {completed}",
            n.completed_by_run
        ));
    }
    if n.assets != assets {
        return Err(format!("{} asset-history rows, but committed Asset-Evals inserted {assets}", n.assets));
    }
    Ok(summary(&n)
        + &format!("; {ordered} trades ordered, {completed} completed and {assets} assets valued by the run"))
}

/// Checks the state conditions alone (no tallies of a run needed).
pub(super) fn check_state<S: Store>(w: &Tpce, db: &S) -> std::result::Result<crate::StateCheck, String> {
    let n = in_snapshot(w, db)?;
    Ok(crate::StateCheck {
        checked: summary(&n),
        needs_run: "the numbers of trades, completed trades and asset-history rows against the committed transactions"
            .into(),
    })
}

fn summary(n: &Totals) -> String {
    format!(
        "holding summaries, settlements, cash transactions, trade histories, requests, the market queue, \
         balances and broker counts agree: {} accounts, {} trades ({} complete, {} pending, {} submitted), \
         {} holdings in {} summaries, {} asset-history rows",
        n.accounts, n.trades, n.complete, n.pending, n.submitted, n.holdings, n.summaries, n.assets
    )
}

fn in_snapshot<S: Store>(w: &Tpce, db: &S) -> std::result::Result<Totals, String> {
    let mut t = db.begin_check().map_err(|e| e.to_string())?;
    let r = conditions(w, db, &mut t);
    t.commit().map_err(|e| e.to_string())?;
    r
}

/// Scans table `table`'s primary index, calling `f` until it returns an error.
fn each<S: Store>(
    db: &S,
    t: &mut S::Tx<'_>,
    table: TableId,
    mut f: impl FnMut(&Key, &[u8]) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    let mut bad = None;
    t.scan(db.primary(table), .., None, |k, v| match f(k, v) {
        Ok(()) => true,
        Err(e) => {
            bad = Some(e);
            false
        }
    })
    .map_err(|e: Error| e.to_string())?;
    bad.map_or(Ok(()), Err)
}

fn u64_at(k: &Key, at: usize) -> u64 {
    k.u64_at(at).unwrap_or(u64::MAX)
}

fn conditions<S: Store>(w: &Tpce, db: &S, t: &mut S::Tx<'_>) -> std::result::Result<Totals, String> {
    let tb = &w.t;
    let mut n = Totals::default();
    // Accounts: (balance, broker, cash transactions' sum).
    let mut accounts: HashMap<u64, (i64, u32, i64)> = HashMap::new();
    each(db, t, tb.customer_account, |k, v| {
        if v.len() != CA_LEN || k.len() != 8 {
            return Err(format!("customer account {:?} is malformed", k.as_bytes()));
        }
        accounts.insert(u64_at(k, 0), (get_i64(v, CA_BAL), get_u32(v, CA_B_ID), 0));
        Ok(())
    })?;
    n.accounts = accounts.len() as u64;
    let mut trades: HashMap<u64, TradeInfo> = HashMap::with_capacity(1 << 16);
    each(db, t, tb.trade, |k, v| {
        if v.len() != T_LEN || k.len() != 8 || v[T_ST] > ST_CNCL || v[T_TT] > TT_TSL {
            return Err(format!("trade {:?} is malformed", k.as_bytes()));
        }
        let ca = get_u64(v, T_CA_ID);
        if !accounts.contains_key(&ca) {
            return Err(format!("trade {} names account {ca}, which does not exist", u64_at(k, 0)));
        }
        let st = v[T_ST];
        let by_run = st == ST_CMPT && get_u64(v, T_COMP_DTS) > LOAD_END;
        let info = TradeInfo { st, is_cash: v[T_IS_CASH] != 0, ca, by_run, history: false };
        trades.insert(u64_at(k, 0), info);
        Ok(())
    })?;
    n.trades = trades.len() as u64;
    let mut by_broker: HashMap<u32, u64> = HashMap::new();
    for tr in trades.values() {
        match tr.st {
            ST_CMPT => n.complete += 1,
            ST_PNDG => n.pending += 1,
            ST_SBMT => n.submitted += 1,
            _ => {}
        }
        if tr.by_run {
            n.completed_by_run += 1;
            *by_broker.entry(accounts[&tr.ca].1).or_default() += 1;
        }
    }
    let status = |st: u8| STATUS_NAMES.get(st as usize).copied().unwrap_or("?");
    let (mut settlements, mut cash) = (0u64, 0u64);
    each(db, t, tb.settlement, |k, v| {
        let id = u64_at(k, 0);
        match trades.get(&id) {
            Some(tr) if tr.st == ST_CMPT && v.len() == SE_LEN => {
                settlements += 1;
                Ok(())
            }
            Some(tr) => Err(format!("trade {id} is {} and has a settlement", status(tr.st))),
            None => Err(format!("settlement of trade {id}, which does not exist")),
        }
    })?;
    each(db, t, tb.cash_transaction, |k, v| {
        let id = u64_at(k, 0);
        match trades.get(&id) {
            Some(tr) if tr.st == ST_CMPT && tr.is_cash && v.len() == CT_LEN => {
                cash += 1;
                if let Some(a) = accounts.get_mut(&tr.ca) {
                    a.2 += get_i64(v, CT_AMT);
                }
                Ok(())
            }
            Some(tr) => Err(format!(
                "trade {id} is {}{} and has a cash transaction",
                status(tr.st),
                if tr.is_cash { "" } else { " on margin" }
            )),
            None => Err(format!("cash transaction of trade {id}, which does not exist")),
        }
    })?;
    if settlements != n.complete {
        return Err(format!("{} complete trades, but {settlements} settlements", n.complete));
    }
    let want_cash = trades.values().filter(|tr| tr.st == ST_CMPT && tr.is_cash).count() as u64;
    if cash != want_cash {
        return Err(format!("{want_cash} complete cash trades, but {cash} cash transactions"));
    }
    each(db, t, tb.trade_history, |k, _| {
        let id = u64_at(k, 0);
        let st = k.as_bytes().get(8).copied().unwrap_or(u8::MAX);
        match trades.get_mut(&id) {
            Some(tr) => {
                tr.history |= tr.st == st;
                Ok(())
            }
            None => Err(format!("trade history of trade {id}, which does not exist")),
        }
    })?;
    if let Some((id, tr)) = trades.iter().find(|(_, tr)| !tr.history) {
        return Err(format!("trade {id} is {} and has no trade-history row for it", status(tr.st)));
    }
    let mut requests = 0u64;
    each(db, t, tb.trade_request, |k, v| {
        let id = u64_at(k, 0);
        match trades.get(&id) {
            Some(tr) if tr.st == ST_PNDG && v.len() == TR_LEN => {
                requests += 1;
                Ok(())
            }
            Some(tr) => Err(format!("trade {id} is {} and has a trade request", status(tr.st))),
            None => Err(format!("trade request {id} names no trade")),
        }
    })?;
    if requests != n.pending {
        return Err(format!("{} pending trades, but {requests} trade requests", n.pending));
    }
    let mut queued = 0u64;
    each(db, t, tb.market, |k, _| {
        let id = u64_at(k, 2);
        match trades.get(&id) {
            Some(tr) if tr.st == ST_SBMT => {
                queued += 1;
                Ok(())
            }
            Some(tr) => Err(format!("trade {id} is {} and is queued for Trade-Result", status(tr.st))),
            None => Err(format!("the market queue names trade {id}, which does not exist")),
        }
    })?;
    if queued != n.submitted {
        return Err(format!("{} submitted trades, but {queued} in the market queue", n.submitted));
    }
    drop(trades);
    // Holdings: the sum per (account, security), each never zero.
    let mut sums: HashMap<(u64, u32), i64> = HashMap::new();
    each(db, t, tb.holding, |k, v| {
        let (ca, s) = (u64_at(k, 0), k.u32_at(8).unwrap_or(u32::MAX));
        if v.len() != H_LEN || get_i64(v, H_QTY) == 0 || !accounts.contains_key(&ca) {
            return Err(format!("holding {:?} is malformed, empty or of no account", k.as_bytes()));
        }
        *sums.entry((ca, s)).or_default() += get_i64(v, H_QTY);
        n.holdings += 1;
        Ok(())
    })?;
    each(db, t, tb.holding_summary, |k, v| {
        let (ca, s) = (u64_at(k, 0), k.u32_at(8).unwrap_or(u32::MAX));
        let qty = if v.len() == HS_LEN { get_i64(v, HS_QTY) } else { 0 };
        let held = sums.remove(&(ca, s)).unwrap_or(0);
        if qty == 0 || qty != held {
            return Err(format!(
                "holding summary of account {ca}, security {s} is {qty}, its holdings add up to {held}"
            ));
        }
        n.summaries += 1;
        Ok(())
    })?;
    if let Some(((ca, s), q)) = sums.into_iter().next() {
        return Err(format!("account {ca} holds {q} of security {s} and has no holding summary for it"));
    }
    for (ca, &(bal, _, ct)) in &accounts {
        if bal != initial_balance(*ca) + ct {
            return Err(format!(
                "account {ca} has balance {bal}, its initial balance {} and cash transactions {ct} make {}",
                initial_balance(*ca),
                initial_balance(*ca) + ct
            ));
        }
    }
    each(db, t, tb.broker, |k, v| {
        let b = k.u32_at(0).unwrap_or(u32::MAX);
        let count = if v.len() == B_LEN { get_u64(v, B_NUM_TRADES) } else { u64::MAX };
        let want = by_broker.remove(&b).unwrap_or(0);
        if count != want {
            return Err(format!(
                "broker {b} counts {count} trades, its accounts' completed trades since the load are {want}"
            ));
        }
        Ok(())
    })?;
    if let Some((b, c)) = by_broker.into_iter().next() {
        return Err(format!("{c} trades completed for broker {b}, which does not exist"));
    }
    each(db, t, tb.asset_history, |k, v| {
        let ca = u64_at(k, 10);
        if v.len() != AH_LEN || get_u64(v, AH_CA_ID) != ca || get_u64(v, AH_DTS) <= LOAD_END {
            return Err(format!("asset-history row {:?} is malformed", k.as_bytes()));
        }
        if !accounts.contains_key(&ca) {
            return Err(format!("asset-history row of account {ca}, which does not exist"));
        }
        n.assets += 1;
        Ok(())
    })?;
    Ok(n)
}
