//! The initial population (clause 4.3), in units that load concurrently.
//!
//! Units, in order: the fixed tables (exchanges, sectors, industries,
//! status and trade types, tax rates, charges, commission rates, zip codes,
//! brokers); the companies in chunks; the securities in chunks (with their
//! last trade and daily market); the customers in chunks, each customer
//! with its address, tax rates, watch list and accounts, and each account
//! with its initial trades and what they left behind. [`crate::split_range`]
//! hands each loader a contiguous run of units. Every row is a function of
//! what it belongs to (a seed per company, security, customer, account), so
//! a retried batch and a load at another thread count write the same rows.
//!
//! An account's initial trades are generated in time order and replayed:
//! each complete one changes the account's holdings (LIFO or FIFO, as the
//! trade says; the same rules as Trade-Result's), so the holdings, holding
//! history and holding summaries loaded are the ones the trades imply, and
//! the account's balance is its initial balance plus its cash transactions.

use super::count::{Counting, Null};
use super::*;
use crate::split_range;
use multiverse::KeyBuilder;
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// Zip codes (TPC-E has 14,741; the profiles only join through them).
pub const ZIP_CODES: u32 = 1_000;
/// Tax rates (clause 4.3: 320).
pub const TAX_RATES: u16 = 320;
/// Industries (102) and sectors (12), exchanges (4).
pub const INDUSTRIES: u8 = 102;
/// Sectors.
pub const SECTORS: u8 = 12;
/// Exchanges.
pub const EXCHANGES: u8 = 4;
/// The quantity bands of COMMISSION_RATE (from-quantities).
pub const COMM_BANDS: [u32; 4] = [0, 200, 400, 800];
/// The quantities a trade is for.
pub const QTYS: [u32; 4] = [100, 200, 400, 800];
/// Nanoseconds in a working day's trading (8 hours).
pub const DAY_NS: u64 = 8 * 3_600 * 1_000_000_000;
/// The end of the initial trades (nanoseconds since the epoch; fixed so a
/// load is reproducible, and before any run's clock).
pub const LOAD_END: u64 = 1_700_000_000_000_000_000;
/// Companies per load chunk.
const COMPANY_CHUNK: u32 = 50;
/// Securities per load chunk.
const SECURITY_CHUNK: u32 = 20;
/// Customers per load chunk.
const CUSTOMER_CHUNK: u64 = 10;

/// The `(a, b)` mix: a 64-bit hash (splitmix64's finalizer).
#[inline]
pub(crate) fn mix(a: u64, b: u64) -> u64 {
    let mut x = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_add(0x5445_5043); // "TPCE"
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A generator seeded by what it generates.
fn rng_for(kind: u64, id: u64) -> SmallRng {
    SmallRng::seed_from_u64(mix(kind, id))
}

/// Accounts of customer `c`: 1 to 9 (5 on average).
#[inline]
pub fn accounts_of(c: u64) -> u64 {
    1 + mix(1, c) % 9
}

/// Accounts of `customers` customers.
pub fn account_count(customers: u64) -> u64 {
    (1..=customers).map(accounts_of).sum()
}

/// The customer account `k` (0-based) of customer `c`.
#[inline]
pub fn ca_id(c: u64, k: u64) -> u64 {
    c << 4 | k
}

/// An account's initial balance in cents ($10,000 to $50,000).
#[inline]
pub fn initial_balance(ca: u64) -> i64 {
    1_000_000 + (mix(2, ca) % 4_000_001) as i64
}

/// An account's broker.
#[inline]
pub(crate) fn broker_of(cfg: &TpceConfig, ca: u64) -> u32 {
    1 + (mix(3, ca) % cfg.brokers() as u64) as u32
}

/// An account's tax status (0: none, 1 and 2: taxable).
#[inline]
pub(crate) fn tax_status(ca: u64) -> u8 {
    (mix(4, ca) % 3) as u8
}

/// A customer's tier (1..=3).
#[inline]
pub(crate) fn tier_of(c: u64) -> u8 {
    1 + (mix(5, c) % 3) as u8
}

/// The initial trades of account `ca`: 57.6 per customer and day over the
/// trade days, 11.52 per account and day on average, spread from half to
/// one and a half times that.
#[inline]
pub fn initial_trades(cfg: &TpceConfig, ca: u64) -> u64 {
    1152 * cfg.trade_days as u64 * (50 + mix(6, ca) % 101) / 10_000
}

/// A security's company: every company has at least one.
#[inline]
pub(crate) fn company_of(cfg: &TpceConfig, s: u32) -> u32 {
    s % cfg.companies()
}

/// A security's base price in cents ($10 to $50); market prices are 80% to 120% of it.
#[inline]
pub(crate) fn base_price(s: u32) -> i64 {
    1_000 + (mix(7, s as u64) % 4_001) as i64
}

/// A market price of security `s` from random `r`.
#[inline]
pub(crate) fn market_price(s: u32, r: u64) -> i64 {
    base_price(s) * (80 + (r % 41) as i64) / 100
}

/// A company's industry.
#[inline]
pub(crate) fn industry_of(co: u32) -> u8 {
    (mix(8, co as u64) % INDUSTRIES as u64) as u8
}

/// An industry's sector.
#[inline]
pub(crate) fn sector_of(industry: u8) -> u8 {
    industry % SECTORS
}

/// A tax rate in 1/10,000 (0.5% to 3.5%).
#[inline]
pub(crate) fn tax_rate(tx: u16) -> u32 {
    50 + (mix(9, tx as u64) % 301) as u32
}

/// A customer's two tax rates (a country's, a division's).
#[inline]
pub(crate) fn taxrates_of(c: u64) -> [u16; 2] {
    [(mix(10, c) % 50) as u16, 50 + (mix(11, c) % (TAX_RATES as u64 - 50)) as u16]
}

/// The charge of a trade type for a customer tier, in cents.
#[inline]
pub(crate) fn charge(tt: u8, tier: u8) -> i64 {
    500 + tt as i64 * 100 + (3 - tier as i64) * 200
}

/// The commission rate (1/10,000) of `(tier, tt, ex)` for quantity band `band`.
#[inline]
pub(crate) fn comm_rate(tier: u8, tt: u8, ex: u8, band: usize) -> u32 {
    20 + (3 - tier as u32) * 15 + tt as u32 * 3 + ex as u32 + (3 - band as u32) * 5
}

/// The `k`-th of the `n` securities starting at `start`: distinct for `k < n <= securities`.
#[inline]
pub(crate) fn nth_security(cfg: &TpceConfig, start: u64, k: u64) -> u32 {
    ((start + k) % cfg.securities() as u64) as u32
}

/// An account's portfolio: the first security and how many (1..=10).
#[inline]
pub(crate) fn portfolio(cfg: &TpceConfig, ca: u64) -> (u64, u64) {
    (mix(12, ca), (1 + mix(13, ca) % 10).min(cfg.securities() as u64))
}

/// A customer's watch list: the first security and how many (10..=30).
#[inline]
pub(crate) fn watch_list(cfg: &TpceConfig, c: u64) -> (u64, u64) {
    (mix(14, c), (10 + mix(15, c) % 21).min(cfg.securities() as u64))
}

/// A fixed-width name: `prefix` and the number, zero-padded.
pub(crate) fn name(prefix: &str, n: u64, out: &mut [u8]) {
    out.fill(0);
    let mut buf = [0u8; 40];
    let mut at = prefix.len().min(16);
    buf[..at].copy_from_slice(&prefix.as_bytes()[..at]);
    let digits = n.to_string();
    buf[at..at + digits.len()].copy_from_slice(digits.as_bytes());
    at += digits.len();
    let w = at.min(out.len());
    out[..w].copy_from_slice(&buf[..w]);
}

/// Customer `c`'s tax id (20 bytes).
#[inline]
pub fn tax_id(c: u64, out: &mut [u8]) {
    name("TX", mix(17, c) % 1_000_000_000 * 10_000_000 + c, out);
}

/// One load transaction's work.
#[derive(Clone, Copy)]
enum Job {
    /// The fixed tables and the brokers.
    Fixed,
    /// Companies `lo..hi`.
    Companies(u32, u32),
    /// One security.
    Security(u32),
    /// One customer (without its accounts).
    Customer(u64),
    /// Account `k` of customer `c`.
    Account(u64, u64),
}

/// The number of load units: the fixed tables, the chunks of companies,
/// securities and customers.
fn unit_counts(cfg: &TpceConfig) -> (u64, u64, u64) {
    let co_chunks = cfg.companies().div_ceil(COMPANY_CHUNK) as u64;
    let s_chunks = cfg.securities().div_ceil(SECURITY_CHUNK) as u64;
    let c_chunks = cfg.customers.div_ceil(CUSTOMER_CHUNK);
    (co_chunks, s_chunks, 1 + co_chunks + s_chunks + c_chunks)
}

/// Calls `f` with each job of load unit `unit`, in order.
fn jobs(cfg: &TpceConfig, unit: u64, mut f: impl FnMut(Job) -> Result<()>) -> Result<()> {
    let (co_chunks, s_chunks, _) = unit_counts(cfg);
    if unit == 0 {
        f(Job::Fixed)
    } else if unit <= co_chunks {
        let lo = (unit - 1) as u32 * COMPANY_CHUNK;
        f(Job::Companies(lo, (lo + COMPANY_CHUNK).min(cfg.companies())))
    } else if unit <= co_chunks + s_chunks {
        let lo = (unit - 1 - co_chunks) as u32 * SECURITY_CHUNK;
        (lo..(lo + SECURITY_CHUNK).min(cfg.securities())).try_for_each(|s| f(Job::Security(s)))
    } else {
        let lo = (unit - 1 - co_chunks - s_chunks) * CUSTOMER_CHUNK + 1;
        for c in lo..(lo + CUSTOMER_CHUNK).min(cfg.customers + 1) {
            f(Job::Customer(c))?;
            (0..accounts_of(c)).try_for_each(|k| f(Job::Account(c, k)))?;
        }
        Ok(())
    }
}

/// Does `job` in `t`; the rows it inserted.
fn run_job<T: Txn>(w: &Tpce, t: &mut T, job: Job) -> Result<u64> {
    let mut t = Counting { t, rows: 0 };
    match job {
        Job::Fixed => fixed(w, &mut t)?,
        Job::Companies(lo, hi) => (lo..hi).try_for_each(|co| company(w, &mut t, co))?,
        Job::Security(s) => security(w, &mut t, s)?,
        Job::Customer(c) => customer(w, &mut t, c)?,
        Job::Account(c, k) => account(w, &mut t, c, ca_id(c, k))?,
    }
    Ok(t.rows)
}

/// The rows the load writes: the load's own code run over a transaction
/// that only counts (exact, and no database needed).
pub(super) fn load_rows(w: &Tpce) -> u64 {
    let mut rows = 0;
    for unit in 0..unit_counts(&w.cfg).2 {
        let _ = jobs(&w.cfg, unit, |job| {
            rows += run_job(w, &mut Null, job)?;
            Ok(())
        });
    }
    rows
}

/// Loads slice `part` of `parts` of the population.
pub(super) fn load<S: Store>(
    w: &Tpce,
    db: &S,
    part: usize,
    parts: usize,
    progress: &(impl Fn(u64) + Sync),
) -> Result<()> {
    for unit in split_range(unit_counts(&w.cfg).2, part, parts) {
        jobs(&w.cfg, unit, |job| {
            let rows = db.load_txn(|t| run_job(w, t, job))?;
            progress(rows);
            Ok(())
        })?;
    }
    Ok(())
}

fn key(b: KeyBuilder) -> Key {
    build(b)
}

/// The fixed tables and the brokers.
fn fixed<T: Txn>(w: &Tpce, x: &mut T) -> Result<()> {
    let t = &w.t;
    {
        let mut v = [0u8; 40];
        for ex in 0..EXCHANGES {
            name("EX", ex as u64, &mut v[..8]);
            v[8..16].copy_from_slice(&(ex as u64 + 1).to_le_bytes());
            x.insert(t.exchange, k8(ex), &v[..16])?;
        }
        for sc in 0..SECTORS {
            name("Sector", sc as u64, &mut v[..16]);
            x.insert(t.sector, k8(sc), &v[..16])?;
        }
        for i in 0..INDUSTRIES {
            v[0] = sector_of(i);
            name("Industry", i as u64, &mut v[1..17]);
            x.insert(t.industry, k8(i), &v[..17])?;
        }
        for (st, n) in STATUS_NAMES.iter().enumerate() {
            name(n, 0, &mut v[..10]);
            v[n.len().min(10)..10].fill(0);
            x.insert(t.status_type, k8(st as u8), &v[..10])?;
        }
        for (tt, n) in TRADE_TYPE_NAMES.iter().enumerate() {
            let tt = tt as u8;
            v[0] = is_sell(tt) as u8;
            v[1] = is_market(tt) as u8;
            name(n, 0, &mut v[2..14]);
            v[2 + n.len().min(12)..14].fill(0);
            x.insert(t.trade_type, k8(tt), &v[..14])?;
            for tier in 1..=3u8 {
                x.insert(t.charge, key(Key::builder().u8(tt).u8(tier)), &charge(tt, tier).to_le_bytes())?;
                for ex in 0..EXCHANGES {
                    for (band, &from) in COMM_BANDS.iter().enumerate() {
                        let to = COMM_BANDS.get(band + 1).map_or(u32::MAX, |n| n - 1);
                        put_u32(&mut v, 0, to);
                        put_u32(&mut v, 4, comm_rate(tier, tt, ex, band));
                        x.insert(t.commission_rate, comm_key(tier, tt, ex, from), &v[..8])?;
                    }
                }
            }
        }
        for tx in 0..TAX_RATES {
            put_u32(&mut v, 0, tax_rate(tx));
            name("Tax", tx as u64, &mut v[4..20]);
            x.insert(t.tax_rate, key(Key::builder().u16(tx)), &v[..20])?;
        }
        for zc in 0..ZIP_CODES {
            name("Town", zc as u64, &mut v[..16]);
            v[16..18].copy_from_slice(b"WA");
            x.insert(t.zip_code, k32(zc), &v[..18])?;
        }
        for b in 1..=w.cfg.brokers() {
            put_u64(&mut v, B_NUM_TRADES, 0);
            put_i64(&mut v, B_COMM_TOTAL, 0);
            name("Broker", b as u64, &mut v[B_NAME..B_LEN]);
            x.insert(t.broker, k32(b), &v[..B_LEN])?;
        }
    }
    Ok(())
}

/// COMMISSION_RATE's key.
#[inline]
pub(crate) fn comm_key(tier: u8, tt: u8, ex: u8, from: u32) -> Key {
    build(Key::builder().u8(tier).u8(tt).u8(ex).u32(from))
}

/// An address row: zip code and a street line.
fn address<T: Txn>(w: &Tpce, t: &mut T, ad: u64) -> Result<()> {
    let mut v = [0u8; 20];
    put_u32(&mut v, 0, (mix(16, ad) % ZIP_CODES as u64) as u32);
    name("Street", ad, &mut v[4..20]);
    t.insert(w.t.address, k64(ad), &v)
}

/// The addresses of customers are `c`, of companies `1 << 40 | co`.
const COMPANY_ADDRESS: u64 = 1 << 40;

/// A company, its address, financials and news.
fn company<T: Txn>(w: &Tpce, t: &mut T, co: u32) -> Result<()> {
    let tb = &w.t;
    let mut v = [0u8; CO_LEN];
    v[CO_IN_ID] = industry_of(co);
    put_u64(&mut v, CO_AD_ID, COMPANY_ADDRESS | co as u64);
    name("Company", co as u64, &mut v[CO_NAME..CO_LEN]);
    t.insert(tb.company, k32(co), &v)?;
    address(w, t, COMPANY_ADDRESS | co as u64)?;
    let mut rng = rng_for(20, co as u64);
    let mut f = [0u8; FI_LEN];
    for q in 0..FI_QUARTERS {
        for at in [0, 8, 16] {
            put_i64(&mut f, at, (rng.next_u64() % 1_000_000_000) as i64);
        }
        t.insert(tb.financial, k32_32(co, q as u32), &f)?;
    }
    let mut n = [0u8; NI_LEN];
    for k in 0..NEWS_PER_COMPANY {
        let ni = co as u64 * NEWS_PER_COMPANY + k;
        put_u64(&mut n, 0, LOAD_END - rng.next_u64() % (365 * 24 * 3_600 * 1_000_000_000));
        name("Headline", ni, &mut n[8..NI_LEN]);
        t.insert(tb.news_item, k64(ni), &n)?;
        t.insert(tb.news_xref, nx_key(co, ni), &[])?;
    }
    Ok(())
}

/// A security, its last trade and daily market.
fn security<T: Txn>(w: &Tpce, t: &mut T, s: u32) -> Result<()> {
    let tb = &w.t;
    let mut rng = rng_for(21, s as u64);
    let mut v = [0u8; S_LEN];
    put_u32(&mut v, S_CO_ID, company_of(&w.cfg, s));
    v[S_EX_ID] = (s % EXCHANGES as u32) as u8;
    put_u64(&mut v, S_NUM_OUT, 1_000_000 + rng.next_u64() % 9_000_000_000);
    name("S", s as u64, &mut v[S_SYMB..S_LEN]);
    t.insert(tb.security, k32(s), &v)?;
    let price = market_price(s, rng.next_u64());
    let mut lt = [0u8; LT_LEN];
    put_i64(&mut lt, LT_PRICE, price);
    put_i64(&mut lt, LT_OPEN, price);
    put_u64(&mut lt, LT_VOL, 0);
    put_u64(&mut lt, LT_DTS, LOAD_END);
    t.insert(tb.last_trade, k32(s), &lt)?;
    let mut dm = [0u8; DM_LEN];
    for day in 0..DM_DAYS {
        let close = market_price(s, rng.next_u64());
        put_i64(&mut dm, DM_CLOSE, close);
        put_i64(&mut dm, 8, close + close / 20);
        put_i64(&mut dm, 16, close - close / 20);
        put_u64(&mut dm, 24, rng.next_u64() % 10_000_000);
        t.insert(tb.daily_market, k32_32(s, day), &dm)?;
    }
    Ok(())
}

/// A customer, its address, tax rates and watch list.
fn customer<T: Txn>(w: &Tpce, t: &mut T, c: u64) -> Result<()> {
    let tb = &w.t;
    let mut v = [0u8; C_LEN];
    v[C_TIER] = tier_of(c);
    put_u64(&mut v, C_AD_ID, c);
    name("Last", c, &mut v[C_NAME..C_NAME + 16]);
    name("First", c, &mut v[C_NAME + 16..C_TAX_ID]);
    tax_id(c, &mut v[C_TAX_ID..C_LEN]);
    t.insert(tb.customer, k64(c), &v)?;
    address(w, t, c)?;
    for tx in taxrates_of(c) {
        t.insert(tb.customer_taxrate, key(Key::builder().u64(c).u16(tx)), &[])?;
    }
    t.insert(tb.watch_list, k64(c), &c.to_le_bytes())?;
    let (start, n) = watch_list(&w.cfg, c);
    for k in 0..n {
        t.insert(tb.watch_item, k64_32(c, nth_security(&w.cfg, start, k)), &[])?;
    }
    Ok(())
}

/// A holding while the load replays trades: `(h_t_id, h_dts, h_price, h_qty)`.
type Holding = (u64, u64, i64, i64);

/// What replaying an account's trades left: its balance, and its holdings
/// per security of its portfolio.
#[derive(Default)]
struct Account {
    bal: i64,
    /// `(s_id, holdings (t_id, dts, price, qty))`.
    holdings: Vec<(u32, Vec<Holding>)>,
}

/// A trade's value: price times quantity.
#[inline]
pub(crate) fn value(qty: u32, price: i64) -> i64 {
    qty as i64 * price
}

/// The commission of a trade in cents.
#[inline]
pub(crate) fn commission(rate: u32, qty: u32, price: i64) -> i64 {
    value(qty, price) * rate as i64 / 10_000
}

/// The band of `qty` in [`COMM_BANDS`].
#[inline]
pub(crate) fn band_of(qty: u32) -> usize {
    COMM_BANDS.iter().rposition(|&from| qty >= from).unwrap_or(0)
}

/// The settlement amount of a trade: what the account receives (negative: pays).
#[inline]
pub(crate) fn settlement_amount(sell: bool, qty: u32, price: i64, chrg: i64, comm: i64, tax: i64) -> i64 {
    if sell {
        value(qty, price) - chrg - comm - tax
    } else {
        -(value(qty, price) + chrg + comm)
    }
}

/// The name of a cash transaction or settlement cash type.
pub(crate) fn cash_type(is_cash: bool) -> &'static [u8] {
    if is_cash {
        b"Cash Account"
    } else {
        b"Margin"
    }
}

/// One customer account, its permission, and its initial trades replayed.
fn account<T: Txn>(w: &Tpce, t: &mut T, c: u64, ca: u64) -> Result<()> {
    let mut acc = Account::default();
    let (cfg, tb) = (&w.cfg, &w.t);
    let tier = tier_of(c);
    let tax_st = tax_status(ca);
    let rate: u32 = taxrates_of(c).iter().map(|&tx| tax_rate(tx)).sum();
    let (start, size) = portfolio(cfg, ca);
    acc.bal = initial_balance(ca);
    acc.holdings = (0..size).map(|k| (nth_security(cfg, start, k), Vec::new())).collect();
    t.insert(tb.account_permission, k64_64(ca, c), b"0000")?;
    // Up to three other customers (the next ones) may trade for the account.
    let others = (mix(18, ca) % 4).min(cfg.customers - 1);
    for j in 1..=others {
        t.insert(tb.account_permission, k64_64(ca, 1 + (c - 1 + j) % cfg.customers), b"0001")?;
    }
    let n = initial_trades(cfg, ca);
    let span = cfg.trade_days as u64 * DAY_NS;
    let first = LOAD_END - span;
    let mut rng = rng_for(22, ca);
    let mut tv = [0u8; T_LEN];
    for j in 0..n {
        let t_id = ca << 20 | j;
        let dts = first + j * span / n.max(1) + rng.next_u64() % (span / n.max(1)).max(1);
        let r = rng.next_u64();
        let tt = match r % 100 {
            0..=29 => TT_TMB,
            30..=59 => TT_TMS,
            60..=79 => TT_TLB,
            80..=89 => TT_TLS,
            _ => TT_TSL,
        };
        let hold = ((r >> 8) % size) as usize;
        let s = acc.holdings[hold].0;
        let qty = QTYS[((r >> 16) % 4) as usize];
        let is_cash = (r >> 24) % 100 < 92;
        let lifo = (r >> 32) % 2 == 1;
        let pending = (r >> 40) % 100 < 2;
        let bid = market_price(s, rng.next_u64());
        let st = match (pending, is_market(tt)) {
            (false, _) => ST_CMPT,
            (true, true) => ST_SBMT,
            (true, false) => ST_PNDG,
        };
        tv.fill(0);
        put_u64(&mut tv, T_DTS, dts);
        tv[T_ST] = st;
        tv[T_TT] = tt;
        tv[T_IS_CASH] = is_cash as u8;
        tv[T_LIFO] = lifo as u8;
        put_u32(&mut tv, T_S_ID, s);
        put_u32(&mut tv, T_QTY, qty);
        put_i64(&mut tv, T_BID, bid);
        put_u64(&mut tv, T_CA_ID, ca);
        name("Exec", c, &mut tv[T_EXEC..T_EXEC + 16]);
        put_i64(&mut tv, T_CHRG, charge(tt, tier));
        let dt = |k: u64| dts + k * 1_000_000;
        if !is_market(tt) {
            t.insert(tb.trade_history, th_key(t_id, ST_PNDG), &dt(0).to_le_bytes())?;
        }
        match st {
            ST_PNDG => {
                let mut rq = [0u8; TR_LEN];
                rq[TR_TT] = tt;
                put_u32(&mut rq, TR_S_ID, s);
                put_u32(&mut rq, TR_QTY, qty);
                put_i64(&mut rq, TR_BID, bid);
                put_u32(&mut rq, TR_B_ID, broker_of(cfg, ca));
                t.insert(tb.trade_request, k64(t_id), &rq)?;
            }
            ST_SBMT => {
                t.insert(tb.trade_history, th_key(t_id, ST_SBMT), &dt(1).to_le_bytes())?;
                t.insert(tb.market, market_key(shard_of(t_id), t_id), &[])?;
            }
            _ => {
                // Complete: a limit order at its bid, a market order at the market.
                let price = if is_market(tt) { market_price(s, rng.next_u64()) } else { bid };
                let ex = (s % EXCHANGES as u32) as u8;
                let comm = commission(comm_rate(tier, tt, ex, band_of(qty)), qty, price);
                let sell = is_sell(tt);
                let delta = if sell { -(qty as i64) } else { qty as i64 };
                let list = &mut acc.holdings[hold].1;
                let gain = replay(t, tb.holding_history, list, (t_id, dts, price, delta), lifo)?;
                let tax = if sell && tax_st != 0 && gain > 0 { gain * rate as i64 / 10_000 } else { 0 };
                put_i64(&mut tv, T_PRICE, price);
                put_i64(&mut tv, T_COMM, comm);
                put_i64(&mut tv, T_TAX, tax);
                put_u64(&mut tv, T_COMP_DTS, dt(2));
                t.insert(tb.trade_history, th_key(t_id, ST_SBMT), &dt(1).to_le_bytes())?;
                t.insert(tb.trade_history, th_key(t_id, ST_CMPT), &dt(2).to_le_bytes())?;
                let amt = settlement_amount(sell, qty, price, charge(tt, tier), comm, tax);
                let mut se = [0u8; SE_LEN];
                se[..cash_type(is_cash).len()].copy_from_slice(cash_type(is_cash));
                put_u64(&mut se, SE_DUE, dts + 2 * DAY_NS);
                put_i64(&mut se, SE_AMT, amt);
                t.insert(tb.settlement, k64(t_id), &se)?;
                if is_cash {
                    let mut ct = [0u8; CT_LEN];
                    put_u64(&mut ct, CT_DTS, dt(2));
                    put_i64(&mut ct, CT_AMT, amt);
                    name(TRADE_TYPE_NAMES[tt as usize], qty as u64, &mut ct[CT_NAME..CT_LEN]);
                    t.insert(tb.cash_transaction, k64(t_id), &ct)?;
                    acc.bal += amt;
                }
            }
        }
        t.insert(tb.trade, k64(t_id), &tv)?;
    }
    let mut hv = [0u8; H_LEN];
    for (s, list) in &acc.holdings {
        let mut sum = 0;
        for &(h_t, dts, price, qty) in list {
            put_u64(&mut hv, H_DTS, dts);
            put_i64(&mut hv, H_PRICE, price);
            put_i64(&mut hv, H_QTY, qty);
            t.insert(tb.holding, h_key(ca, *s, h_t), &hv)?;
            sum += qty;
        }
        if sum != 0 {
            t.insert(tb.holding_summary, k64_32(ca, *s), &sum.to_le_bytes())?;
        }
    }
    let mut v = [0u8; CA_LEN];
    put_u32(&mut v, CA_B_ID, broker_of(cfg, ca));
    put_u64(&mut v, CA_C_ID, c);
    v[CA_TAX_ST] = tax_st;
    put_i64(&mut v, CA_BAL, acc.bal);
    name("Account", ca, &mut v[CA_NAME..CA_LEN]);
    t.insert(tb.customer_account, k64(ca), &v)
}

/// Replays a complete trade `(t_id, dts, price, delta)` on the holdings of
/// one account and security (all of one sign, oldest first): closes
/// opposite holdings LIFO or FIFO, opens one with what is left, and writes
/// a holding-history row per holding changed. Returns the gain of a sale
/// over the prices of the long holdings it closed.
fn replay<T: Txn>(
    t: &mut T,
    holding_history: TableId,
    list: &mut Vec<Holding>,
    (t_id, dts, price, delta): (u64, u64, i64, i64),
    lifo: bool,
) -> Result<i64> {
    let mut need = delta.abs();
    let mut gain = 0;
    let mut hh = [0u8; HH_LEN];
    while need > 0 {
        let at = if lifo { list.len().checked_sub(1) } else { (!list.is_empty()).then_some(0) };
        let Some(at) = at.filter(|&i| list[i].3.signum() == -delta.signum()) else { break };
        let (h_t, _, h_price, qty) = list[at];
        let take = need.min(qty.abs());
        let after = qty + take * delta.signum();
        if delta < 0 {
            gain += take * (price - h_price);
        }
        put_i64(&mut hh, 0, qty);
        put_i64(&mut hh, 8, after);
        t.insert(holding_history, k64_64(t_id, h_t), &hh)?;
        if after == 0 {
            list.remove(at);
        } else {
            list[at].3 = after;
        }
        need -= take;
    }
    if need > 0 {
        let qty = need * delta.signum();
        put_i64(&mut hh, 0, 0);
        put_i64(&mut hh, 8, qty);
        t.insert(holding_history, k64_64(t_id, t_id), &hh)?;
        list.push((t_id, dts, price, qty));
    }
    Ok(gain)
}
