//! The value layouts: each column's offset in a table's fixed-layout value
//! (little-endian numbers, zero-padded names), and each value's length.

/// CUSTOMER: `c_tier` (`u8`, 1..=3).
pub const C_TIER: usize = 0;
/// CUSTOMER: `c_ad_id` (`u64`).
pub const C_AD_ID: usize = 1;
/// CUSTOMER: `c_l_name`, `c_f_name` (16 bytes each).
pub const C_NAME: usize = 9;
/// CUSTOMER: `c_tax_id` (20 bytes).
pub const C_TAX_ID: usize = 41;
/// Bytes of a CUSTOMER value.
pub const C_LEN: usize = 61;

/// CUSTOMER_ACCOUNT: `ca_b_id` (`u32`).
pub const CA_B_ID: usize = 0;
/// CUSTOMER_ACCOUNT: `ca_c_id` (`u64`).
pub const CA_C_ID: usize = 4;
/// CUSTOMER_ACCOUNT: `ca_tax_st` (`u8`, 0..=2).
pub const CA_TAX_ST: usize = 12;
/// CUSTOMER_ACCOUNT: `ca_bal` (`i64` cents).
pub const CA_BAL: usize = 13;
/// CUSTOMER_ACCOUNT: `ca_name` (16 bytes).
pub const CA_NAME: usize = 21;
/// Bytes of a CUSTOMER_ACCOUNT value.
pub const CA_LEN: usize = 37;

/// BROKER: `b_num_trades` (`u64`).
pub const B_NUM_TRADES: usize = 0;
/// BROKER: `b_comm_total` (`i64` cents).
pub const B_COMM_TOTAL: usize = 8;
/// BROKER: `b_name` (16 bytes).
pub const B_NAME: usize = 16;
/// Bytes of a BROKER value.
pub const B_LEN: usize = 32;

/// SECURITY: `s_co_id` (`u32`).
pub const S_CO_ID: usize = 0;
/// SECURITY: `s_ex_id` (`u8`).
pub const S_EX_ID: usize = 4;
/// SECURITY: `s_num_out` (`u64`).
pub const S_NUM_OUT: usize = 5;
/// SECURITY: `s_symb` (8 bytes).
pub const S_SYMB: usize = 13;
/// Bytes of a SECURITY value.
pub const S_LEN: usize = 21;

/// COMPANY: `co_in_id` (`u8`).
pub const CO_IN_ID: usize = 0;
/// COMPANY: `co_ad_id` (`u64`).
pub const CO_AD_ID: usize = 1;
/// COMPANY: `co_name` (24 bytes).
pub const CO_NAME: usize = 9;
/// Bytes of a COMPANY value.
pub const CO_LEN: usize = 33;

/// LAST_TRADE: `lt_price` (`i64` cents).
pub const LT_PRICE: usize = 0;
/// LAST_TRADE: `lt_open_price`.
pub const LT_OPEN: usize = 8;
/// LAST_TRADE: `lt_vol` (`u64`).
pub const LT_VOL: usize = 16;
/// LAST_TRADE: `lt_dts` (`u64`).
pub const LT_DTS: usize = 24;
/// Bytes of a LAST_TRADE value.
pub const LT_LEN: usize = 32;

/// DAILY_MARKET: `dm_close`, `dm_high`, `dm_low` (`i64` cents), `dm_vol` (`u64`).
pub const DM_CLOSE: usize = 0;
/// Bytes of a DAILY_MARKET value.
pub const DM_LEN: usize = 32;
/// FINANCIAL: `fi_revenue`, `fi_net_earn`, `fi_assets` (`i64`).
pub const FI_LEN: usize = 24;
/// NEWS_ITEM: `ni_dts` (`u64`), `ni_headline` (32 bytes).
pub const NI_LEN: usize = 40;

/// TRADE: `t_dts` (`u64`, when ordered; indexed, never changed).
pub const T_DTS: usize = 0;
/// TRADE: `t_st_id` (`u8`, an `ST_*`).
pub const T_ST: usize = 8;
/// TRADE: `t_tt_id` (`u8`, a `TT_*`).
pub const T_TT: usize = 9;
/// TRADE: `t_is_cash` (`u8`).
pub const T_IS_CASH: usize = 10;
/// TRADE: `t_lifo` (`u8`).
pub const T_LIFO: usize = 11;
/// TRADE: `t_s_id` (`u32`).
pub const T_S_ID: usize = 12;
/// TRADE: `t_qty` (`u32`).
pub const T_QTY: usize = 16;
/// TRADE: `t_bid_price` (`i64` cents).
pub const T_BID: usize = 20;
/// TRADE: `t_ca_id` (`u64`).
pub const T_CA_ID: usize = 28;
/// TRADE: `t_exec_name` (16 bytes).
pub const T_EXEC: usize = 36;
/// TRADE: `t_trade_price` (`i64` cents; 0 until complete).
pub const T_PRICE: usize = 52;
/// TRADE: `t_chrg` (`i64` cents).
pub const T_CHRG: usize = 60;
/// TRADE: `t_comm` (`i64` cents).
pub const T_COMM: usize = 68;
/// TRADE: `t_tax` (`i64` cents).
pub const T_TAX: usize = 76;
/// TRADE: when it completed (`u64`; 0 until then; not a TPC-E column: its
/// `t_dts` is indexed here, so the completion time is kept beside it).
pub const T_COMP_DTS: usize = 84;
/// Bytes of a TRADE value.
pub const T_LEN: usize = 92;

/// TRADE_HISTORY: `th_dts` (`u64`).
pub const TH_LEN: usize = 8;

/// TRADE_REQUEST: `tr_tt_id` (`u8`).
pub const TR_TT: usize = 0;
/// TRADE_REQUEST: `tr_s_id` (`u32`).
pub const TR_S_ID: usize = 1;
/// TRADE_REQUEST: `tr_qty` (`u32`).
pub const TR_QTY: usize = 5;
/// TRADE_REQUEST: `tr_bid_price` (`i64` cents).
pub const TR_BID: usize = 9;
/// TRADE_REQUEST: `tr_b_id` (`u32`).
pub const TR_B_ID: usize = 17;
/// Bytes of a TRADE_REQUEST value.
pub const TR_LEN: usize = 21;

/// SETTLEMENT: `se_cash_type` (16 bytes: "Cash Account" or "Margin").
pub const SE_CASH_TYPE: usize = 0;
/// SETTLEMENT: `se_cash_due_date` (`u64`).
pub const SE_DUE: usize = 16;
/// SETTLEMENT: `se_amt` (`i64` cents).
pub const SE_AMT: usize = 24;
/// Bytes of a SETTLEMENT value.
pub const SE_LEN: usize = 32;

/// CASH_TRANSACTION: `ct_dts` (`u64`).
pub const CT_DTS: usize = 0;
/// CASH_TRANSACTION: `ct_amt` (`i64` cents).
pub const CT_AMT: usize = 8;
/// CASH_TRANSACTION: `ct_name` (16 bytes).
pub const CT_NAME: usize = 16;
/// Bytes of a CASH_TRANSACTION value.
pub const CT_LEN: usize = 32;

/// HOLDING: `h_dts` (`u64`).
pub const H_DTS: usize = 0;
/// HOLDING: `h_price` (`i64` cents).
pub const H_PRICE: usize = 8;
/// HOLDING: `h_qty` (`i64`; negative: a short position).
pub const H_QTY: usize = 16;
/// Bytes of a HOLDING value.
pub const H_LEN: usize = 24;

/// HOLDING_SUMMARY: `hs_qty` (`i64`).
pub const HS_QTY: usize = 0;
/// Bytes of a HOLDING_SUMMARY value.
pub const HS_LEN: usize = 8;

/// HOLDING_HISTORY: `hh_before_qty`, `hh_after_qty` (`i64`).
pub const HH_LEN: usize = 16;

/// ASSET_HISTORY: `ah_ca_id` (`u64`).
pub const AH_CA_ID: usize = 0;
/// ASSET_HISTORY: `ah_dts` (`u64`).
pub const AH_DTS: usize = 8;
/// ASSET_HISTORY: `ah_value` (`i64` cents).
pub const AH_VALUE: usize = 16;
/// Bytes of an ASSET_HISTORY value.
pub const AH_LEN: usize = 24;
