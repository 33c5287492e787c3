//! TPC-E (TPC Benchmark E, standard specification 1.14) and the TPC-EH
//! variant of the SSN paper (`ssn-serial-safety-net.txt` section 8.1): a
//! brokerage firm's customers, accounts, securities and trades; the ten
//! transactions of the paper's TPC-E (Data-Maintenance and Trade-Cleanup
//! omitted, as there) and, for TPC-EH, Asset-Eval, a long read-mostly
//! transaction that values a fifth of all customer accounts.
//!
//! # Schema (spec clause 2.2)
//!
//! The conventions of [`crate::tpcc`]: every value is a fixed layout of
//! little-endian fields (money in cents as `i64`, rates in units of
//! 1/10,000 as `u32`, dates as `u64` nanoseconds, names zero-padded), the
//! offsets are the `T_*`, `CA_*`... constants; composite keys are big-endian
//! ([`Key::builder`]), so byte order is tuple order and the range of an
//! ordered index is a prefix. Identifiers are numbers: a security is its
//! `s_id` (`u32`) rather than its symbol, a status or trade type is a small
//! number (the `ST_*` and `TT_*` constants) rather than its 4-character id.
//!
//! | table | primary key | index | secondary indexes |
//! | --- | --- | --- | --- |
//! | `ACCOUNT_PERMISSION` | `ca_id, c_id` | ordered by account | |
//! | `ADDRESS` | `ad_id` (`u64`) | hash | |
//! | `BROKER` | `b_id` (`u32`) | hash | |
//! | `CASH_TRANSACTION` | `t_id` (`u64`) | hash | |
//! | `CHARGE` | `tt, tier` | hash | |
//! | `COMMISSION_RATE` | `tier, tt, ex, from_qty` | ordered | |
//! | `COMPANY` | `co_id` (`u32`) | hash | `by_industry`: `in_id, co_id` |
//! | `CUSTOMER` | `c_id` (`u64`) | hash | `by_tax_id`: `c_tax_id` (hash) |
//! | `CUSTOMER_ACCOUNT` | `ca_id` (`u64`, `c_id << 4 \| k`) | ordered | (the key groups a customer's accounts) |
//! | `CUSTOMER_TAXRATE` | `c_id, tx_id` | ordered by customer | |
//! | `DAILY_MARKET` | `s_id, day` | ordered by security | |
//! | `EXCHANGE` | `ex_id` | hash | |
//! | `FINANCIAL` | `co_id, quarter` | ordered by company | |
//! | `HOLDING` | `ca_id, s_id, t_id` | ordered by account and security | |
//! | `HOLDING_HISTORY` | `t_id, h_t_id` | ordered by trade | |
//! | `HOLDING_SUMMARY` | `ca_id, s_id` | ordered by account | |
//! | `INDUSTRY` | `in_id` | hash | |
//! | `LAST_TRADE` | `s_id` | hash | |
//! | `NEWS_ITEM` | `ni_id` (`u64`) | hash | |
//! | `NEWS_XREF` | `co_id, ni_id` | ordered by company | |
//! | `SECTOR` | `sc_id` | hash | |
//! | `SECURITY` | `s_id` | hash | `by_company`: `co_id, s_id` |
//! | `SETTLEMENT` | `t_id` | hash | |
//! | `STATUS_TYPE` | `st_id` | hash | |
//! | `TAX_RATE` | `tx_id` (`u16`) | hash | |
//! | `TRADE` | `t_id` | hash | `by_account`: `ca_id, !t_dts, t_id` (latest first); `by_security`: `s_id, t_dts, t_id` |
//! | `TRADE_HISTORY` | `t_id, st_id` | ordered by trade | |
//! | `TRADE_REQUEST` | `t_id` | hash | `by_security`: `s_id, t_id`; `by_broker`: `b_id, t_id` |
//! | `TRADE_TYPE` | `tt_id` | hash | |
//! | `WATCH_LIST` | `wl_id` (one per customer: `c_id`) | hash | |
//! | `WATCH_ITEM` | `wl_id, s_id` | ordered by list | |
//! | `ZIP_CODE` | `zc_id` (`u32`) | hash | |
//! | `ASSET_HISTORY` (TPC-EH) | `worker, seq, ca_id` | ordered by worker | |
//! | `MARKET` (not TPC-E: the market's queue) | `shard, t_id` | ordered by shard | |
//!
//! Columns no profile reads are left out (customer e-mails and phones,
//! company descriptions, most financial fields, news text beyond a
//! headline); names are short fixed strings. `COMPANY_COMPETITOR`
//! and `DAILY_MARKET`'s five years are not kept (Security-Detail reads no
//! competitors; the market history is [`DM_DAYS`] days).
//!
//! # Population (clause 4.3)
//!
//! The scale is the number of customers ([`TpceConfig::customers`],
//! `--customers`; TPC-E loads in units of 1,000, the SSN paper used 500
//! units = 500,000 customers); this implementation scales the other tables
//! in TPC-E's proportions from any number: per 1,000 customers 10 brokers,
//! 500 companies, 685 securities, and per customer 1 to 9 accounts (5 on
//! average; TPC-E: 1 to 10), a watch list of 10 to 30 securities (TPC-E:
//! about 100) and two tax rates. Each customer account has a portfolio of
//! up to 10 securities, and the initial trades: TPC-E's 28,800 trade
//! seconds per working day at 1 trade per second per 500 customers, that is
//! 57.6 trades per customer per day, over [`TpceConfig::trade_days`]
//! working days (`--trade-days`; [`DEFAULT_TRADE_DAYS`] is the paper's
//! ten). The default 1,000 customers, one TPC-E load unit and a
//! five-hundredth of the paper's scale, then have about 576,000 initial
//! trades, which load in seconds and in a couple of GiB. About 1% of them are still pending limit orders (`PNDG`, with
//! their `TRADE_REQUEST`) and 1% submitted market orders waiting for
//! Trade-Result (`SBMT`, queued in `MARKET`); the rest are complete, with
//! their settlement, cash transaction (cash trades), trade history, and the
//! holdings, holding history and holding summaries that replaying them in
//! time order gives. Every part is generated from its own seed (the
//! customer account, the security...), so the load is the same at every
//! thread count.
//!
//! # Transactions (clause 3.3; the mix of clause 6.2.2, with the paper's TPC-EH)
//!
//! * `broker-volume` (3.3.1, read-only, 4.9%): the pending limit orders of
//!   20 to 40 brokers whose companies are in one sector, summed by broker.
//! * `customer-position` (3.3.2, read-only, 13%; 8% in TPC-EH): a
//!   customer (half the time found by tax id) and its accounts, each valued
//!   from its holding summaries at the last trade prices; half the time the
//!   last 10 trades of one account and their histories (frame 2).
//! * `market-feed` (3.3.3, 1%): a ticker of 20 securities: each last trade
//!   updated, and each pending limit order the new price triggers turned
//!   into a submitted trade (its `TRADE_REQUEST` deleted, a history row,
//!   queued in `MARKET`).
//! * `market-watch` (3.3.4, read-only, 18%; 13%): the market capitalization
//!   change since a start day of the securities of a watch list (35%), an
//!   industry's companies (5%) or an account's holdings (60%).
//! * `security-detail` (3.3.5, read-only, 14%): a security, its company,
//!   exchange, addresses, 20 quarters of financials, 5 to 20 days of daily
//!   market, its last trade and its company's news.
//! * `trade-lookup` (3.3.6, read-only, 8%): frame 1 (30%) 20 trades by id
//!   with their settlement, cash transaction and history; frame 2 (30%) an
//!   account's trades in a two-hour window of the initial trades (at most
//!   20, the latest first); frame 3 (30%) a security's trades in such a
//!   window (at most 20, the earliest first); frame 4 (10%) an account's
//!   first trade at or after a time and the holding history it wrote.
//! * `trade-order` (3.3.7, 10.1%): an account's order (market buy or sell
//!   60%, limit buy or sell and stop-loss 40%; 8% on margin): the account,
//!   customer, broker, security, last price, holdings (a sell values what
//!   it would sell, LIFO or FIFO), tax rates, commission and charge; inserts
//!   the trade (`PNDG` with a `TRADE_REQUEST` for limit orders, `SBMT` and
//!   queued in `MARKET` for market orders) and its history. 1% roll back
//!   after their writes ([`crate::TxnError::Rollback`], a `user` abort,
//!   never retried).
//! * `trade-result` (3.3.8, 10%): completes a submitted trade: the holding
//!   summary, then holdings changed LIFO or FIFO (a sell beyond the held
//!   quantity opens a short position, a buy first covers one), holding
//!   history, tax on a sale's gain, commission, the trade completed with its
//!   history row, the broker's totals, the settlement and, for a cash
//!   trade, the account's balance and a cash transaction.
//! * `trade-status` (3.3.9, read-only, 19%; 9%): an account's 50 latest
//!   trades with their types and statuses, its customer and broker.
//! * `trade-update` (3.3.10, 2%): as trade-lookup's first three frames, but
//!   each trade's executor name (frame 1), settlement cash type (frame 2)
//!   or cash transaction name (frame 3) changed.
//! * `asset-eval` (TPC-EH, SSN section 8.1, 20%): for a contiguous run of
//!   [`TpceConfig::asset_eval_fraction`] of the customer accounts (the
//!   paper: 20%), each account's total assets, the sum over its holding
//!   summaries of quantity times last price, inserted into `ASSET_HISTORY`.
//!   It reads a fifth of `HOLDING_SUMMARY` against Trade-Result and a good
//!   part of `LAST_TRADE` against Market-Feed.
//!
//! `tpce` runs TPC-E's own mix ([`DEFAULT_PCT`]: the percentages above,
//! which add up to 100); `tpceh` the paper's revised mix
//! ([`TPCEH_PCT`]): Asset-Eval's 20% taken from Customer-Position (13 to
//! 8), Market-Watch (18 to 13) and Trade-Status (19 to 9), exactly the list
//! of section 8.1.
//!
//! **Finding a submitted trade.** TPC-E's market exchange emulator sends
//! each submitted trade back to a Trade-Result. Here the queue is a table,
//! `MARKET`, keyed by shard and trade id: a Trade-Order of worker `w` queues
//! its market orders in shard `w % MARKET_SHARDS`, a Market-Feed its
//! triggered limit orders in the shard of the trade id; a Trade-Result of
//! worker `w` deletes the oldest trade of its own shard, or of the next
//! non-empty one. The delete decides who completes a trade (a second delete
//! of the same row is a write conflict, or at read committed finds it gone
//! and takes the next): no lock outside the engine, the same under every
//! protocol, and workers rarely meet on a trade. A Trade-Result that finds
//! no submitted trade at all commits having done nothing (counted).
//!
//! # What is different from TPC-E
//!
//! No terminals, think times or emulated market delay: workers run
//! transactions back to back. Customers, accounts, securities and trades are
//! drawn uniformly (TPC-E's tiers and non-uniform account choice are not
//! kept), by id rather than by name or symbol. Trade ids of the run are
//! `1 << 62 | worker << 40 | sequence` (unique without a shared counter; not
//! in time order across workers). Market prices are drawn in 80% to 120% of
//! each security's base price rather than following TPC-E's price curve.
//! The load's trade dates are spread evenly over the working days. The
//! Trade-Order's third-party executor (10%) is the first other customer
//! the account's `ACCOUNT_PERMISSION` rows name (each account permits 0 to
//! 3), and the order does not check the account's balance or margin; Trade-Lookup frame 4 reads the holding
//! history of the trade it finds, not the whole chain of trades that
//! touched the same holdings; Trade-Update frame 1 flips the first letter
//! of the executor's name rather than swapping `" X "` and `" "`;
//! Security-Detail reads no exchange address and no competitors;
//! Broker-Volume's brokers are consecutive ids. Customers hold 1 to 9
//! accounts, watch 10 to 30 securities. `DAILY_MARKET` keeps [`DM_DAYS`]
//! days. Asset-Eval values a contiguous run of accounts from a random one
//! (wrapping around) and inserts one `ASSET_HISTORY` row per account:
//! the table grows by [`TpceConfig::asset_eval_accounts`] rows per
//! Asset-Eval (about 1,000 at the default scale), as in the paper; lower
//! the fraction for long runs. A Trade-Result that finds nothing queued
//! commits empty.
//!
//! **After a run** ([`Workload::check_consistency`]): the state conditions
//! below, and the numbers of trades, asset-history rows and completed
//! trades against the committed transactions. [`Workload::check_state`]:
//! each holding summary is the sum of its holdings and is never zero; each
//! complete trade has its settlement, a cash transaction exactly when it is
//! a cash trade, and a history row for its status; pending (`PNDG`) trades
//! are exactly those with a `TRADE_REQUEST`, submitted (`SBMT`) ones exactly
//! those queued in `MARKET`, and neither has a settlement or a cash
//! transaction; each account's balance is its initial balance plus its cash
//! transactions; each broker's trade count is the number of its accounts'
//! trades completed since the load; every asset-history row names an
//! existing account.

mod check;
mod count;
mod layout;
mod load;
mod schema;
mod txn;

pub use layout::*;
pub use load::{account_count, accounts_of, initial_balance, initial_trades, tax_id, LOAD_END};
pub use schema::names;
pub use txn::{TpceInput, TpceWorker};

use crate::{Mix, Param, Store, StoreTxn, Txn, Workload};
use multiverse::{IndexId, Key, Result, TableId};
use std::sync::atomic::{AtomicU64, Ordering};

pub use crate::tpcc::{get_i64, get_u32, get_u64, put_i64, put_u32, put_u64};

/// The transaction types, in the order of [`Workload::txn_types`].
pub const TYPES: &[&str] = &[
    "broker-volume",
    "customer-position",
    "market-feed",
    "market-watch",
    "security-detail",
    "trade-lookup",
    "trade-order",
    "trade-result",
    "trade-status",
    "trade-update",
    "asset-eval",
];
/// TPC-E's mix (clause 6.2.2, Data-Maintenance and Trade-Cleanup left out),
/// in percent, in the order of [`TYPES`].
pub const DEFAULT_PCT: [f64; 11] = [4.9, 13.0, 1.0, 18.0, 14.0, 8.0, 10.1, 10.0, 19.0, 2.0, 0.0];
/// TPC-EH's mix (SSN paper, section 8.1).
pub const TPCEH_PCT: [f64; 11] = [4.9, 8.0, 1.0, 13.0, 14.0, 8.0, 10.1, 10.0, 9.0, 2.0, 20.0];
/// Index of `broker-volume` in [`TYPES`].
pub const BROKER_VOLUME: usize = 0;
/// Index of `customer-position`.
pub const CUSTOMER_POSITION: usize = 1;
/// Index of `market-feed`.
pub const MARKET_FEED: usize = 2;
/// Index of `market-watch`.
pub const MARKET_WATCH: usize = 3;
/// Index of `security-detail`.
pub const SECURITY_DETAIL: usize = 4;
/// Index of `trade-lookup`.
pub const TRADE_LOOKUP: usize = 5;
/// Index of `trade-order`.
pub const TRADE_ORDER: usize = 6;
/// Index of `trade-result`.
pub const TRADE_RESULT: usize = 7;
/// Index of `trade-status`.
pub const TRADE_STATUS: usize = 8;
/// Index of `trade-update`.
pub const TRADE_UPDATE: usize = 9;
/// Index of `asset-eval`.
pub const ASSET_EVAL: usize = 10;
const NTYPES: usize = 11;

/// The default number of customers (one TPC-E load unit).
pub const DEFAULT_CUSTOMERS: u64 = 1_000;
/// Most customers.
pub const MAX_CUSTOMERS: u64 = 5_000_000;
/// The default number of initial trade days (the SSN paper: 10).
pub const DEFAULT_TRADE_DAYS: u32 = 10;
/// Most initial trade days (TPC-E's default is 300).
pub const MAX_TRADE_DAYS: u32 = 300;
/// Days of `DAILY_MARKET` per security (TPC-E keeps five years).
pub const DM_DAYS: u32 = 260;
/// Quarters of `FINANCIAL` per company (clause 4.3).
pub const FI_QUARTERS: u16 = 20;
/// News items per company.
pub const NEWS_PER_COMPANY: u64 = 2;
/// Shards of the `MARKET` queue.
pub const MARKET_SHARDS: u16 = 64;
/// Trade ids of the run have this bit set (the load's never do).
pub const RUN_TRADE: u64 = 1 << 62;

/// Trade statuses (`STATUS_TYPE`): completed.
pub const ST_CMPT: u8 = 0;
/// Active (not used by these profiles, loaded for the table's sake).
pub const ST_ACTV: u8 = 1;
/// Submitted: sent to the market, waiting for Trade-Result.
pub const ST_SBMT: u8 = 2;
/// Pending: a limit order waiting for its price.
pub const ST_PNDG: u8 = 3;
/// Canceled (not used by these profiles).
pub const ST_CNCL: u8 = 4;
/// Status ids' names.
pub const STATUS_NAMES: [&str; 5] = ["Completed", "Active", "Submitted", "Pending", "Canceled"];

/// Trade types (`TRADE_TYPE`): market buy.
pub const TT_TMB: u8 = 0;
/// Market sell.
pub const TT_TMS: u8 = 1;
/// Limit buy.
pub const TT_TLB: u8 = 2;
/// Limit sell.
pub const TT_TLS: u8 = 3;
/// Stop loss.
pub const TT_TSL: u8 = 4;
/// Trade type ids' names.
pub const TRADE_TYPE_NAMES: [&str; 5] = ["Market-Buy", "Market-Sell", "Limit-Buy", "Limit-Sell", "Stop-Loss"];

/// Whether trade type `tt` sells.
#[inline]
pub const fn is_sell(tt: u8) -> bool {
    matches!(tt, TT_TMS | TT_TLS | TT_TSL)
}
/// Whether trade type `tt` is a market order.
#[inline]
pub const fn is_market(tt: u8) -> bool {
    matches!(tt, TT_TMB | TT_TMS)
}
/// Whether a limit order of type `tt` at `bid` is triggered by `price`
/// (the market exchange emulator's rule: a limit buy and a stop loss at or
/// below their price, a limit sell at or above).
#[inline]
pub const fn triggered(tt: u8, bid: i64, price: i64) -> bool {
    match tt {
        TT_TLB | TT_TSL => price <= bid,
        TT_TLS => price >= bid,
        _ => false,
    }
}

// Keys. Every builder below stays within KEY_MAX (and the inline 32 bytes).

#[inline]
fn build(b: multiverse::KeyBuilder) -> Key {
    b.build().expect("TPC-E keys fit in KEY_MAX bytes")
}
/// A one-number key (`u64`): customers, accounts, trades, addresses, news.
#[inline]
pub fn k64(x: u64) -> Key {
    build(Key::builder().u64(x))
}
/// A one-number key (`u32`): brokers, companies, securities, zip codes.
#[inline]
pub fn k32(x: u32) -> Key {
    build(Key::builder().u32(x))
}
/// A one-byte key: exchanges, sectors, industries, status and trade types.
#[inline]
pub fn k8(x: u8) -> Key {
    build(Key::builder().u8(x))
}
/// `(u64, u32)`: HOLDING_SUMMARY `(ca_id, s_id)`.
#[inline]
pub fn k64_32(a: u64, b: u32) -> Key {
    build(Key::builder().u64(a).u32(b))
}
/// `(u64, u64)`: ACCOUNT_PERMISSION, HOLDING_HISTORY, NEWS_XREF's like.
#[inline]
pub fn k64_64(a: u64, b: u64) -> Key {
    build(Key::builder().u64(a).u64(b))
}
/// HOLDING's key `(ca_id, s_id, t_id)`.
#[inline]
pub fn h_key(ca: u64, s: u32, t: u64) -> Key {
    build(Key::builder().u64(ca).u32(s).u64(t))
}
/// TRADE_HISTORY's key `(t_id, st_id)`.
#[inline]
pub fn th_key(t: u64, st: u8) -> Key {
    build(Key::builder().u64(t).u8(st))
}
/// `(u32, u32)`: DAILY_MARKET `(s_id, day)`, FINANCIAL `(co_id, quarter)`.
#[inline]
pub fn k32_32(a: u32, b: u32) -> Key {
    build(Key::builder().u32(a).u32(b))
}
/// NEWS_XREF's key `(co_id, ni_id)`.
#[inline]
pub fn nx_key(co: u32, ni: u64) -> Key {
    build(Key::builder().u32(co).u64(ni))
}
/// MARKET's key `(shard, t_id)`.
#[inline]
pub fn market_key(shard: u16, t: u64) -> Key {
    build(Key::builder().u16(shard).u64(t))
}
/// ASSET_HISTORY's key `(worker, seq, ca_id)`.
#[inline]
pub fn ah_key(worker: u16, seq: u64, ca: u64) -> Key {
    build(Key::builder().u16(worker).u64(seq).u64(ca))
}
/// The `[lo, hi)` range of the keys that start with `prefix`.
#[inline]
pub fn prefix_range(prefix: Key) -> std::ops::Range<Key> {
    let hi = prefix.prefix_end().unwrap_or(Key::MAX);
    prefix..hi
}
/// The shard of `MARKET` a trade queued by Market-Feed goes to.
#[inline]
pub fn shard_of(t: u64) -> u16 {
    (t.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as u16 % MARKET_SHARDS
}

/// Parameters of the workload.
#[derive(Clone, Debug, PartialEq)]
pub struct TpceConfig {
    /// Customers (TPC-E's scale).
    pub customers: u64,
    /// Working days of initial trades.
    pub trade_days: u32,
    /// The transaction mix over [`TYPES`].
    pub mix: Mix,
    /// The fraction of the customer accounts Asset-Eval values (the paper: 0.2).
    pub asset_eval_fraction: f64,
    /// The name the workload reports: `tpce` or `tpceh`.
    pub heterogeneous: bool,
}

/// TPC-E's mix.
pub fn default_mix() -> Mix {
    Mix::new(TYPES, &DEFAULT_PCT).expect("the TPC-E mix adds up to 100")
}
/// TPC-EH's mix.
pub fn tpceh_mix() -> Mix {
    Mix::new(TYPES, &TPCEH_PCT).expect("the TPC-EH mix adds up to 100")
}

/// Asset-Eval's share of the customer accounts in the SSN paper.
pub const DEFAULT_ASSET_EVAL_FRACTION: f64 = 0.2;

impl Default for TpceConfig {
    /// 1,000 customers, [`DEFAULT_TRADE_DAYS`], TPC-E's mix.
    fn default() -> TpceConfig {
        TpceConfig {
            customers: DEFAULT_CUSTOMERS,
            trade_days: DEFAULT_TRADE_DAYS,
            mix: default_mix(),
            asset_eval_fraction: DEFAULT_ASSET_EVAL_FRACTION,
            heterogeneous: false,
        }
    }
}

impl TpceConfig {
    /// TPC-EH: TPC-E with Asset-Eval, the paper's mix.
    pub fn tpceh() -> TpceConfig {
        TpceConfig { mix: tpceh_mix(), heterogeneous: true, ..TpceConfig::default() }
    }

    /// Checks the parameters; the error is a one-line message.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.customers == 0 {
            return Err("--customers must be at least 1".into());
        }
        if self.customers > MAX_CUSTOMERS {
            return Err(format!("--customers {} is too large (at most {MAX_CUSTOMERS})", self.customers));
        }
        if self.trade_days == 0 || self.trade_days > MAX_TRADE_DAYS {
            return Err(format!("--trade-days must be 1 to {MAX_TRADE_DAYS}, not {}", self.trade_days));
        }
        let f = self.asset_eval_fraction;
        if !(f.is_finite() && f > 0.0 && f <= 1.0) {
            return Err(format!("--asset-eval-fraction must be in (0, 1], not {f}"));
        }
        if self.mix.names() != TYPES {
            return Err(format!("the tpce mix must be over its types ({})", TYPES.join(", ")));
        }
        Ok(())
    }

    /// Brokers: 10 per 1,000 customers, at least 1.
    pub fn brokers(&self) -> u32 {
        (self.customers / 100).max(1) as u32
    }
    /// Companies: 500 per 1,000 customers, at least 5.
    pub fn companies(&self) -> u32 {
        (self.customers / 2).max(5) as u32
    }
    /// Securities: 685 per 1,000 customers, at least 7.
    pub fn securities(&self) -> u32 {
        (self.customers * 685 / 1000).max(7) as u32
    }
    /// Accounts Asset-Eval values per transaction (at least 1).
    pub fn asset_eval_accounts(&self) -> u64 {
        ((account_count(self.customers) as f64 * self.asset_eval_fraction) as u64).max(1)
    }
    /// Rough resident bytes of the load.
    pub fn estimated_bytes(&self) -> u64 {
        // About 57.6 trades per customer and day, each with about six rows
        // (trade, two or three history rows, settlement, cash transaction,
        // a holding or holding-history row), at about 200 bytes a row; and
        // the market history.
        let trades = self.customers.saturating_mul(58).saturating_mul(self.trade_days as u64);
        trades.saturating_mul(6 * 200).saturating_add(self.customers.saturating_mul(2_000))
            + self.securities() as u64 * DM_DAYS as u64 * 150
    }
}

/// Table and index handles.
#[derive(Debug)]
pub(crate) struct Tables {
    pub account_permission: TableId,
    pub address: TableId,
    pub broker: TableId,
    pub cash_transaction: TableId,
    pub charge: TableId,
    pub commission_rate: TableId,
    pub company: TableId,
    pub customer: TableId,
    pub customer_account: TableId,
    pub customer_taxrate: TableId,
    pub daily_market: TableId,
    pub exchange: TableId,
    pub financial: TableId,
    pub holding: TableId,
    pub holding_history: TableId,
    pub holding_summary: TableId,
    pub industry: TableId,
    pub last_trade: TableId,
    pub news_item: TableId,
    pub news_xref: TableId,
    pub sector: TableId,
    pub security: TableId,
    pub settlement: TableId,
    pub status_type: TableId,
    pub tax_rate: TableId,
    pub trade: TableId,
    pub trade_history: TableId,
    pub trade_request: TableId,
    pub trade_type: TableId,
    pub watch_list: TableId,
    pub watch_item: TableId,
    pub zip_code: TableId,
    pub asset_history: TableId,
    pub market: TableId,
    /// CUSTOMER `by_tax_id`.
    pub c_by_tax_id: IndexId,
    /// COMPANY `by_industry`.
    pub co_by_industry: IndexId,
    /// SECURITY `by_company`.
    pub s_by_company: IndexId,
    /// TRADE `by_account`.
    pub t_by_account: IndexId,
    /// TRADE `by_security`.
    pub t_by_security: IndexId,
    /// TRADE_REQUEST `by_security`.
    pub tr_by_security: IndexId,
    /// TRADE_REQUEST `by_broker`.
    pub tr_by_broker: IndexId,
}

/// The workload, bound to its tables in one database.
#[derive(Debug)]
pub struct Tpce {
    cfg: TpceConfig,
    pub(crate) t: Tables,
    /// Committed transactions of finished workers, by type.
    committed: [AtomicU64; NTYPES],
    /// Trades the committed Trade-Orders inserted (finished workers).
    ordered: AtomicU64,
    /// Trades the committed Trade-Results completed.
    completed: AtomicU64,
    /// Asset-history rows the committed Asset-Evals inserted.
    assets: AtomicU64,
    /// The rows of the load, counted once.
    rows: std::sync::OnceLock<u64>,
}

impl Tpce {
    /// Creates the tables and their indexes in `db`.
    pub fn setup<S: Store>(db: &S, cfg: TpceConfig) -> std::result::Result<Tpce, String> {
        cfg.validate()?;
        let t = schema::create(db, &cfg)?;
        Ok(Tpce {
            cfg,
            t,
            committed: Default::default(),
            ordered: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            assets: AtomicU64::new(0),
            rows: std::sync::OnceLock::new(),
        })
    }

    /// The parameters.
    pub fn config(&self) -> &TpceConfig {
        &self.cfg
    }

    /// The table named `name` (one of [`names`]), for tests and tools.
    pub fn table(&self, name: &str) -> Option<TableId> {
        schema::by_name(&self.t, name)
    }

    /// Committed transactions of finished workers, by type.
    pub fn committed(&self) -> [u64; NTYPES] {
        // Relaxed: read after the workers finished (joined).
        std::array::from_fn(|i| self.committed[i].load(Ordering::Relaxed))
    }

    /// Trades inserted, trades completed and asset-history rows inserted by
    /// the committed transactions of finished workers.
    pub fn tallies(&self) -> (u64, u64, u64) {
        // Relaxed: read after the workers finished (joined).
        (
            self.ordered.load(Ordering::Relaxed),
            self.completed.load(Ordering::Relaxed),
            self.assets.load(Ordering::Relaxed),
        )
    }
}

impl Workload for Tpce {
    type Worker<'w> = TpceWorker<'w>;

    fn name(&self) -> &'static str {
        if self.cfg.heterogeneous {
            crate::Kind::Tpceh.name()
        } else {
            crate::Kind::Tpce.name()
        }
    }

    fn params(&self) -> Vec<(&'static str, Param)> {
        vec![
            ("customers", Param::Int(self.cfg.customers)),
            ("trade_days", Param::Int(self.cfg.trade_days as u64)),
            ("mix", Param::Str(self.cfg.mix.to_string())),
            ("asset_eval_fraction", Param::Str(self.cfg.asset_eval_fraction.to_string())),
        ]
    }

    /// The rows of the load, exactly (counted by running the load's
    /// generator without a database, once).
    fn load_size(&self) -> u64 {
        *self.rows.get_or_init(|| load::load_rows(self))
    }

    fn txn_types(&self) -> &'static [&'static str] {
        TYPES
    }

    fn estimated_bytes(&self) -> u64 {
        self.cfg.estimated_bytes()
    }

    fn load<S: Store>(&self, db: &S, part: usize, parts: usize, progress: &(impl Fn(u64) + Sync)) -> Result<()> {
        load::load(self, db, part, parts, progress)
    }

    fn worker(&self, thread: usize, seed: u64) -> TpceWorker<'_> {
        TpceWorker::new(self, thread, seed)
    }

    fn check_consistency<S: Store>(&self, db: &S) -> std::result::Result<String, String> {
        check::check(self, db)
    }

    fn check_state<S: Store>(&self, db: &S) -> std::result::Result<crate::StateCheck, String> {
        check::check_state(self, db)
    }
}
