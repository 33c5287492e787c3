//! The consistency conditions (clause 3.3.2.1 to 3.3.2.4), checked in one
//! snapshot after a run, and the row counts the committed transactions
//! imply.
//!
//! 1. `W_YTD` is the sum of its districts' `D_YTD`.
//! 2. `D_NEXT_O_ID - 1` is the largest `O_ID` of the district's orders and
//!    the largest `NO_O_ID` of its new orders.
//! 3. The district's new orders are `max(NO_O_ID) - min(NO_O_ID) + 1` rows
//!    (no gap).
//! 4. The sum of the district's `O_OL_CNT` is the number of its order lines.
//!
//! [`check_state`] stops there: the counts need the run's tallies.

use super::*;

/// Per-district tallies.
#[derive(Clone, Copy, Default)]
struct District {
    d_ytd: i64,
    next_o_id: u32,
    seen: bool,
    max_o: u32,
    orders: u64,
    ol_cnt_sum: u64,
    no_min: u32,
    no_max: u32,
    new_orders: u64,
    lines: u64,
}

fn wd(k: &Key) -> (u16, u8) {
    let b = k.as_bytes();
    (u16::from_be_bytes([b[0], b[1]]), b[2])
}

/// What conditions 1 to 4 counted on the way.
#[derive(Clone, Copy)]
struct Totals {
    districts: u64,
    orders: u64,
    new_orders: u64,
    lines: u64,
    history: u64,
    /// Order lines of `new-order-lines` (district 0).
    loose: u64,
    /// Without inserts: order ids the districts handed out.
    handed_out: u64,
}

/// Checks conditions 1 to 4 and the counts; a one-line summary or what is broken.
pub(super) fn check<S: Store>(tp: &Tpcc, db: &S) -> std::result::Result<String, String> {
    let n = in_snapshot(tp, db)?;
    counts(tp, &n)
}

/// Checks conditions 1 to 4 alone (no tallies of a run needed).
pub(super) fn check_state<S: Store>(tp: &Tpcc, db: &S) -> std::result::Result<crate::StateCheck, String> {
    let n = in_snapshot(tp, db)?;
    let nw = tp.cfg.warehouses;
    let cond = if tp.cfg.skip_inserts { "conditions 1, 3 and 4" } else { "conditions 1-4" };
    let checked = format!(
        "{cond} hold in all {} districts of {nw} warehouses; {} orders, {} order lines, {} undelivered, {} history rows{}",
        n.districts,
        n.orders,
        n.lines,
        n.new_orders,
        n.history,
        if n.loose > 0 { format!("; {} new-order-lines lines", n.loose) } else { String::new() }
    );
    let mut needs_run =
        "the numbers of orders, new orders, history rows and new-order-lines lines against the committed \
         transactions"
            .to_string();
    if tp.cfg.skip_inserts {
        needs_run += "; condition 2 without inserts (the order ids handed out against the committed new orders)";
    }
    Ok(crate::StateCheck { checked, needs_run })
}

/// Conditions 1 to 4 in one read-only snapshot.
fn in_snapshot<S: Store>(tp: &Tpcc, db: &S) -> std::result::Result<Totals, String> {
    let mut t = db.begin_check().map_err(|e| e.to_string())?;
    let r = conditions(tp, db, &mut t);
    t.commit().map_err(|e| e.to_string())?;
    r
}

fn conditions<S: Store>(tp: &Tpcc, db: &S, t: &mut S::Tx<'_>) -> std::result::Result<Totals, String> {
    let nw = tp.cfg.warehouses as usize;
    let nd = DISTRICTS as usize;
    let es = |e: Error| e.to_string();
    let mut bad: Option<String> = None;
    let mut w_ytd = vec![None::<i64>; nw + 1];
    let mut ds = vec![District::default(); nw * nd];
    // Index of district (w, d), if it is a real one.
    let at = |w: u16, d: u8| -> Option<usize> {
        ((1..=nw).contains(&(w as usize)) && (1..=nd).contains(&(d as usize)))
            .then(|| (w as usize - 1) * nd + d as usize - 1)
    };
    t.scan(db.primary(tp.warehouse), .., None, |k, v| {
        let w = u16::from_be_bytes([k.as_bytes()[0], k.as_bytes()[1]]) as usize;
        match w_ytd.get_mut(w) {
            Some(slot) if w >= 1 && v.len() == W_LEN => *slot = Some(get_i64(v, W_YTD)),
            _ => bad = Some(format!("warehouse row {:?} is malformed", k.as_bytes())),
        }
        bad.is_none()
    })
    .map_err(es)?;
    t.scan(db.primary(tp.district), .., None, |k, v| {
        let (w, d) = wd(k);
        match at(w, d) {
            Some(i) if v.len() == D_LEN => {
                ds[i].d_ytd = get_i64(v, D_YTD);
                ds[i].next_o_id = get_u32(v, D_NEXT_O_ID);
                ds[i].seen = true;
            }
            _ => bad = Some(format!("district row {:?} is malformed", k.as_bytes())),
        }
        bad.is_none()
    })
    .map_err(es)?;
    t.scan(db.primary(tp.order), .., None, |k, v| {
        let (w, d) = wd(k);
        match at(w, d) {
            Some(i) if v.len() == O_LEN && k.len() == 7 => {
                let o = k.u32_at(3).unwrap_or(0);
                let s = &mut ds[i];
                s.max_o = s.max_o.max(o);
                s.orders += 1;
                s.ol_cnt_sum += v[O_OL_CNT] as u64;
            }
            _ => bad = Some(format!("order row {:?} is malformed", k.as_bytes())),
        }
        bad.is_none()
    })
    .map_err(es)?;
    t.scan(db.primary(tp.new_order), .., None, |k, _| {
        let (w, d) = wd(k);
        match at(w, d) {
            Some(i) if k.len() == 7 => {
                let o = k.u32_at(3).unwrap_or(0);
                let s = &mut ds[i];
                s.no_min = if s.new_orders == 0 { o } else { s.no_min.min(o) };
                s.no_max = s.no_max.max(o);
                s.new_orders += 1;
            }
            _ => bad = Some(format!("new_order row {:?} is malformed", k.as_bytes())),
        }
        bad.is_none()
    })
    .map_err(es)?;
    let mut loose = 0u64;
    t.scan(db.primary(tp.order_line), .., None, |k, v| {
        let (w, d) = wd(k);
        if d == 0 && v.len() == OL_LEN {
            loose += 1;
            return true;
        }
        match at(w, d) {
            Some(i) if v.len() == OL_LEN && k.len() == 8 => ds[i].lines += 1,
            _ => bad = Some(format!("order_line row {:?} is malformed", k.as_bytes())),
        }
        bad.is_none()
    })
    .map_err(es)?;
    let mut history = 0u64;
    t.scan(db.primary(tp.history), .., None, |_, _| {
        history += 1;
        true
    })
    .map_err(es)?;
    if let Some(b) = bad {
        return Err(b);
    }
    for w in 1..=nw {
        let Some(ytd) = w_ytd[w] else {
            return Err(format!("warehouse {w} is missing"));
        };
        let sum: i64 = ds[(w - 1) * nd..w * nd].iter().map(|s| s.d_ytd).sum();
        if ytd != sum {
            return Err(format!("condition 1: warehouse {w} has W_YTD {ytd}, its districts' D_YTD add up to {sum}"));
        }
    }
    let mut handed_out = 0u64;
    for (i, s) in ds.iter().enumerate() {
        let (w, d) = (i / nd + 1, i % nd + 1);
        if !s.seen {
            return Err(format!("district ({w}, {d}) is missing"));
        }
        if tp.cfg.skip_inserts {
            handed_out += (s.next_o_id - (ORDERS + 1)) as u64;
        } else if s.next_o_id - 1 != s.max_o || (s.new_orders > 0 && s.no_max != s.max_o) {
            return Err(format!(
                "condition 2: district ({w}, {d}) has D_NEXT_O_ID {}, max(O_ID) {}, max(NO_O_ID) {}",
                s.next_o_id, s.max_o, s.no_max
            ));
        }
        if s.new_orders > 0 && (s.no_max - s.no_min + 1) as u64 != s.new_orders {
            return Err(format!(
                "condition 3: district ({w}, {d}) has {} new orders between {} and {}",
                s.new_orders, s.no_min, s.no_max
            ));
        }
        if s.ol_cnt_sum != s.lines {
            return Err(format!(
                "condition 4: district ({w}, {d}) has {} order lines, its orders' O_OL_CNT add up to {}",
                s.lines, s.ol_cnt_sum
            ));
        }
    }
    Ok(Totals {
        districts: (nw * nd) as u64,
        orders: ds.iter().map(|s| s.orders).sum(),
        new_orders: ds.iter().map(|s| s.new_orders).sum(),
        lines: ds.iter().map(|s| s.lines).sum(),
        history,
        loose,
        handed_out,
    })
}

/// The counts the committed transactions imply.
fn counts(tp: &Tpcc, n: &Totals) -> std::result::Result<String, String> {
    let Totals { districts, orders, new_orders, lines, history, loose, handed_out } = *n;
    let nw = tp.cfg.warehouses;
    let mut c = tp.committed();
    if tp.cfg.skip_inserts {
        // No rows were inserted: the order ids handed out count the NewOrders.
        if handed_out != c[NEW_ORDER] {
            return Err(format!(
                "condition 2 (no inserts): the districts handed out {handed_out} order ids, {} new orders committed",
                c[NEW_ORDER]
            ));
        }
        c[NEW_ORDER] = 0;
        c[PAYMENT] = 0;
    }
    let want_orders = districts * ORDERS as u64 + c[NEW_ORDER];
    if orders != want_orders {
        return Err(format!(
            "{orders} orders, but {} were loaded and {} new orders committed",
            districts * ORDERS as u64,
            c[NEW_ORDER]
        ));
    }
    let delivered = c[DELIVERY] * DISTRICTS as u64 - tp.skipped_deliveries();
    let want_new = (districts * (ORDERS - FIRST_NEW_ORDER + 1) as u64 + c[NEW_ORDER]).checked_sub(delivered);
    if Some(new_orders) != want_new {
        return Err(format!(
            "{new_orders} new orders, but {} were loaded, {} added and {delivered} delivered",
            districts * (ORDERS - FIRST_NEW_ORDER + 1) as u64,
            c[NEW_ORDER]
        ));
    }
    let want_history = districts * CUSTOMERS as u64 + c[PAYMENT];
    if history != want_history {
        return Err(format!(
            "{history} history rows, but {} were loaded and {} payments committed",
            districts * CUSTOMERS as u64,
            c[PAYMENT]
        ));
    }
    if loose != tp.loose_lines() {
        return Err(format!(
            "{loose} order lines of new-order-lines, but its committed transactions inserted {}",
            tp.loose_lines()
        ));
    }
    Ok(format!(
        "conditions 1-4 hold in all {districts} districts of {nw} warehouses; {orders} orders ({} added), \
         {lines} order lines, {new_orders} undelivered, {history} history rows ({} added), {delivered} orders \
         delivered, {} delivery districts found nothing{}",
        c[NEW_ORDER],
        c[PAYMENT],
        tp.skipped_deliveries(),
        if loose > 0 { format!("; {loose} new-order-lines lines") } else { String::new() }
    ) + &if tp.cfg.skip_inserts {
        format!("; without inserts: {handed_out} order ids handed out, one per committed new order")
    } else {
        String::new()
    })
}
