//! The tables and their indexes (see the table in the module docs).

use super::*;
use multiverse::{Error, IndexKind, TableSpec};

/// The table names.
pub mod names {
    /// ACCOUNT_PERMISSION.
    pub const ACCOUNT_PERMISSION: &str = "tpce.account_permission";
    /// ADDRESS.
    pub const ADDRESS: &str = "tpce.address";
    /// BROKER.
    pub const BROKER: &str = "tpce.broker";
    /// CASH_TRANSACTION.
    pub const CASH_TRANSACTION: &str = "tpce.cash_transaction";
    /// CHARGE.
    pub const CHARGE: &str = "tpce.charge";
    /// COMMISSION_RATE.
    pub const COMMISSION_RATE: &str = "tpce.commission_rate";
    /// COMPANY.
    pub const COMPANY: &str = "tpce.company";
    /// CUSTOMER.
    pub const CUSTOMER: &str = "tpce.customer";
    /// CUSTOMER_ACCOUNT.
    pub const CUSTOMER_ACCOUNT: &str = "tpce.customer_account";
    /// CUSTOMER_TAXRATE.
    pub const CUSTOMER_TAXRATE: &str = "tpce.customer_taxrate";
    /// DAILY_MARKET.
    pub const DAILY_MARKET: &str = "tpce.daily_market";
    /// EXCHANGE.
    pub const EXCHANGE: &str = "tpce.exchange";
    /// FINANCIAL.
    pub const FINANCIAL: &str = "tpce.financial";
    /// HOLDING.
    pub const HOLDING: &str = "tpce.holding";
    /// HOLDING_HISTORY.
    pub const HOLDING_HISTORY: &str = "tpce.holding_history";
    /// HOLDING_SUMMARY.
    pub const HOLDING_SUMMARY: &str = "tpce.holding_summary";
    /// INDUSTRY.
    pub const INDUSTRY: &str = "tpce.industry";
    /// LAST_TRADE.
    pub const LAST_TRADE: &str = "tpce.last_trade";
    /// NEWS_ITEM.
    pub const NEWS_ITEM: &str = "tpce.news_item";
    /// NEWS_XREF.
    pub const NEWS_XREF: &str = "tpce.news_xref";
    /// SECTOR.
    pub const SECTOR: &str = "tpce.sector";
    /// SECURITY.
    pub const SECURITY: &str = "tpce.security";
    /// SETTLEMENT.
    pub const SETTLEMENT: &str = "tpce.settlement";
    /// STATUS_TYPE.
    pub const STATUS_TYPE: &str = "tpce.status_type";
    /// TAX_RATE.
    pub const TAX_RATE: &str = "tpce.tax_rate";
    /// TRADE.
    pub const TRADE: &str = "tpce.trade";
    /// TRADE_HISTORY.
    pub const TRADE_HISTORY: &str = "tpce.trade_history";
    /// TRADE_REQUEST.
    pub const TRADE_REQUEST: &str = "tpce.trade_request";
    /// TRADE_TYPE.
    pub const TRADE_TYPE: &str = "tpce.trade_type";
    /// WATCH_LIST.
    pub const WATCH_LIST: &str = "tpce.watch_list";
    /// WATCH_ITEM.
    pub const WATCH_ITEM: &str = "tpce.watch_item";
    /// ZIP_CODE.
    pub const ZIP_CODE: &str = "tpce.zip_code";
    /// ASSET_HISTORY (TPC-EH).
    pub const ASSET_HISTORY: &str = "tpce.asset_history";
    /// MARKET: the queue of submitted trades (not a TPC-E table).
    pub const MARKET: &str = "tpce.market";
}

/// CUSTOMER `by_tax_id`: `c_tax_id`.
fn c_by_tax_id(_: &Key, v: &[u8]) -> Key {
    if v.len() < C_LEN {
        return Key::EMPTY;
    }
    build(Key::builder().bytes(&v[C_TAX_ID..C_LEN]))
}
/// COMPANY `by_industry`: `in_id, co_id`.
fn co_by_industry(pk: &Key, v: &[u8]) -> Key {
    if v.len() < CO_LEN || pk.len() < 4 {
        return Key::EMPTY;
    }
    build(Key::builder().u8(v[CO_IN_ID]).bytes(&pk.as_bytes()[..4]))
}
/// SECURITY `by_company`: `co_id, s_id`.
fn s_by_company(pk: &Key, v: &[u8]) -> Key {
    if v.len() < S_LEN || pk.len() < 4 {
        return Key::EMPTY;
    }
    build(Key::builder().u32(get_u32(v, S_CO_ID)).bytes(&pk.as_bytes()[..4]))
}
/// TRADE `by_account`: `ca_id, !t_dts, t_id` (an account's latest trade first).
fn t_by_account(pk: &Key, v: &[u8]) -> Key {
    if v.len() < T_LEN || pk.len() < 8 {
        return Key::EMPTY;
    }
    build(Key::builder().u64(get_u64(v, T_CA_ID)).u64(!get_u64(v, T_DTS)).bytes(&pk.as_bytes()[..8]))
}
/// TRADE `by_security`: `s_id, t_dts, t_id`.
fn t_by_security(pk: &Key, v: &[u8]) -> Key {
    if v.len() < T_LEN || pk.len() < 8 {
        return Key::EMPTY;
    }
    build(Key::builder().u32(get_u32(v, T_S_ID)).u64(get_u64(v, T_DTS)).bytes(&pk.as_bytes()[..8]))
}
/// TRADE_REQUEST `by_security`: `s_id, t_id`.
fn tr_by_security(pk: &Key, v: &[u8]) -> Key {
    if v.len() < TR_LEN || pk.len() < 8 {
        return Key::EMPTY;
    }
    build(Key::builder().u32(get_u32(v, TR_S_ID)).bytes(&pk.as_bytes()[..8]))
}
/// TRADE_REQUEST `by_broker`: `b_id, t_id`.
fn tr_by_broker(pk: &Key, v: &[u8]) -> Key {
    if v.len() < TR_LEN || pk.len() < 8 {
        return Key::EMPTY;
    }
    build(Key::builder().u32(get_u32(v, TR_B_ID)).bytes(&pk.as_bytes()[..8]))
}

/// Index names.
const BY_TAX_ID: &str = "by_tax_id";
const BY_INDUSTRY: &str = "by_industry";
const BY_COMPANY: &str = "by_company";
const BY_ACCOUNT: &str = "by_account";
const BY_SECURITY: &str = "by_security";
const BY_BROKER: &str = "by_broker";

/// Creates every table.
pub(super) fn create<S: Store>(db: &S, cfg: &TpceConfig) -> std::result::Result<Tables, String> {
    let e = |e: Error| e.to_string();
    let hash = |name: &str, n: u64| db.create_table(TableSpec::hash(name, n.clamp(16, 1 << 26) as usize)).map_err(e);
    let grouped = |name: &str, prefix: usize| db.create_table(TableSpec::ordered_grouped(name, prefix)).map_err(e);
    let create = |spec: TableSpec| db.create_table(spec).map_err(e);
    let c = cfg.customers;
    let trades = c.saturating_mul(58).saturating_mul(cfg.trade_days as u64);
    // Room for the run's trades too: a bucket array is fixed at first.
    let trade_buckets = trades.saturating_mul(2).saturating_add(1 << 20);
    let company = create(
        TableSpec::hash(names::COMPANY, cfg.companies() as usize)
            .secondary(BY_INDUSTRY, IndexKind::OrderedGrouped { prefix: 1 }, co_by_industry)
            .into(),
    )?;
    let security = create(
        TableSpec::hash(names::SECURITY, cfg.securities() as usize)
            .secondary(BY_COMPANY, IndexKind::OrderedGrouped { prefix: 4 }, s_by_company)
            .into(),
    )?;
    let customer = create(
        TableSpec::hash(names::CUSTOMER, c.clamp(16, 1 << 26) as usize)
            .secondary(BY_TAX_ID, IndexKind::Hash { capacity: c.clamp(16, 1 << 26) as usize }, c_by_tax_id)
            .into(),
    )?;
    let trade = create(
        TableSpec::hash(names::TRADE, trade_buckets.min(1 << 26) as usize)
            .secondary(BY_ACCOUNT, IndexKind::OrderedGrouped { prefix: 8 }, t_by_account)
            .secondary(BY_SECURITY, IndexKind::OrderedGrouped { prefix: 4 }, t_by_security)
            .into(),
    )?;
    let trade_request = create(
        TableSpec::hash(names::TRADE_REQUEST, (trades / 50).max(1024) as usize)
            .secondary(BY_SECURITY, IndexKind::OrderedGrouped { prefix: 4 }, tr_by_security)
            .secondary(BY_BROKER, IndexKind::OrderedGrouped { prefix: 4 }, tr_by_broker)
            .into(),
    )?;
    Ok(Tables {
        account_permission: grouped(names::ACCOUNT_PERMISSION, 8)?,
        address: hash(names::ADDRESS, c + cfg.companies() as u64 + 4)?,
        broker: hash(names::BROKER, cfg.brokers() as u64)?,
        cash_transaction: hash(names::CASH_TRANSACTION, trade_buckets)?,
        charge: hash(names::CHARGE, 16)?,
        commission_rate: create(TableSpec::ordered(names::COMMISSION_RATE))?,
        company,
        customer,
        customer_account: create(TableSpec::ordered(names::CUSTOMER_ACCOUNT))?,
        customer_taxrate: grouped(names::CUSTOMER_TAXRATE, 8)?,
        daily_market: grouped(names::DAILY_MARKET, 4)?,
        exchange: hash(names::EXCHANGE, 4)?,
        financial: grouped(names::FINANCIAL, 4)?,
        holding: grouped(names::HOLDING, 12)?,
        holding_history: grouped(names::HOLDING_HISTORY, 8)?,
        holding_summary: grouped(names::HOLDING_SUMMARY, 8)?,
        industry: hash(names::INDUSTRY, 128)?,
        last_trade: hash(names::LAST_TRADE, cfg.securities() as u64)?,
        news_item: hash(names::NEWS_ITEM, cfg.companies() as u64 * NEWS_PER_COMPANY)?,
        news_xref: grouped(names::NEWS_XREF, 4)?,
        sector: hash(names::SECTOR, 16)?,
        security,
        settlement: hash(names::SETTLEMENT, trade_buckets)?,
        status_type: hash(names::STATUS_TYPE, 8)?,
        tax_rate: hash(names::TAX_RATE, 512)?,
        trade,
        trade_history: grouped(names::TRADE_HISTORY, 8)?,
        trade_request,
        trade_type: hash(names::TRADE_TYPE, 8)?,
        watch_list: hash(names::WATCH_LIST, c)?,
        watch_item: grouped(names::WATCH_ITEM, 8)?,
        zip_code: hash(names::ZIP_CODE, load::ZIP_CODES as u64)?,
        asset_history: grouped(names::ASSET_HISTORY, 2)?,
        market: grouped(names::MARKET, 2)?,
        c_by_tax_id: db.index(customer, BY_TAX_ID).map_err(e)?,
        co_by_industry: db.index(company, BY_INDUSTRY).map_err(e)?,
        s_by_company: db.index(security, BY_COMPANY).map_err(e)?,
        t_by_account: db.index(trade, BY_ACCOUNT).map_err(e)?,
        t_by_security: db.index(trade, BY_SECURITY).map_err(e)?,
        tr_by_security: db.index(trade_request, BY_SECURITY).map_err(e)?,
        tr_by_broker: db.index(trade_request, BY_BROKER).map_err(e)?,
    })
}

/// The table named `name`.
pub(super) fn by_name(t: &Tables, name: &str) -> Option<TableId> {
    use names::*;
    Some(match name {
        ACCOUNT_PERMISSION => t.account_permission,
        ADDRESS => t.address,
        BROKER => t.broker,
        CASH_TRANSACTION => t.cash_transaction,
        CHARGE => t.charge,
        COMMISSION_RATE => t.commission_rate,
        COMPANY => t.company,
        CUSTOMER => t.customer,
        CUSTOMER_ACCOUNT => t.customer_account,
        CUSTOMER_TAXRATE => t.customer_taxrate,
        DAILY_MARKET => t.daily_market,
        EXCHANGE => t.exchange,
        FINANCIAL => t.financial,
        HOLDING => t.holding,
        HOLDING_HISTORY => t.holding_history,
        HOLDING_SUMMARY => t.holding_summary,
        INDUSTRY => t.industry,
        LAST_TRADE => t.last_trade,
        NEWS_ITEM => t.news_item,
        NEWS_XREF => t.news_xref,
        SECTOR => t.sector,
        SECURITY => t.security,
        SETTLEMENT => t.settlement,
        STATUS_TYPE => t.status_type,
        TAX_RATE => t.tax_rate,
        TRADE => t.trade,
        TRADE_HISTORY => t.trade_history,
        TRADE_REQUEST => t.trade_request,
        TRADE_TYPE => t.trade_type,
        WATCH_LIST => t.watch_list,
        WATCH_ITEM => t.watch_item,
        ZIP_CODE => t.zip_code,
        ASSET_HISTORY => t.asset_history,
        MARKET => t.market,
        _ => return None,
    })
}
