//! The transactions (clause 3.3, and TPC-EH's Asset-Eval).
//!
//! [`TpceWorker::next_txn`] draws every input the driver would give the
//! transaction (its frame, account, security, time window...);
//! [`TpceWorker::execute`] runs the profile's frames and may run again with
//! the same inputs after an abort. The worker keeps its scratch space
//! between transactions, so no transaction allocates once warm.
//!
//! * `trade`: Trade-Order, Trade-Result and Market-Feed (the writers of
//!   trades and holdings);
//! * `lookup`: Trade-Lookup, Trade-Update and Asset-Eval (trades by id and
//!   by time window; the valuation of many accounts);
//! * `view`: Broker-Volume, Customer-Position, Market-Watch,
//!   Security-Detail and Trade-Status (read-only views).

mod lookup;
mod trade;
mod view;

use super::load::{accounts_of, ca_id, initial_trades, market_price, DAY_NS, QTYS};
use super::*;
use crate::{below, TxnError, Worker};
use multiverse::{AbortReason, Error, TxnOptions};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// Securities of a Market-Feed ticker (clause 3.3.3: 20).
pub const FEED: usize = 20;
/// Most brokers of a Broker-Volume (clause 3.3.1: 20 to 40).
pub const MAX_BROKERS: usize = 40;
/// Trades of a Trade-Lookup or Trade-Update frame (clause 3.3.6: 20).
pub const MAX_TRADES: usize = 20;

/// The inputs of one TPC-E transaction (fields a type does not use are ignored).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TpceInput {
    /// The type (index into [`TYPES`]).
    pub ty: usize,
    /// The frame or variant (Trade-Lookup and Trade-Update: 1..=4;
    /// Market-Watch: 1 watch list, 2 industry, 3 account; Customer-Position:
    /// 2 with the history frame).
    pub frame: u8,
    /// The customer.
    pub c: u64,
    /// The customer account.
    pub ca: u64,
    /// The security.
    pub s: u32,
    /// The industry (Market-Watch) or sector (Broker-Volume);
    /// Customer-Position: 1 to find the customer by tax id.
    pub group: u8,
    /// Trade-Order: the new trade's id; Trade-Lookup/Update frame 1: unused.
    pub t_id: u64,
    /// Trade-Order: the trade type (a `TT_*`).
    pub tt: u8,
    /// Trade-Order: the quantity.
    pub qty: u32,
    /// Trade-Order: the limit price (limit orders).
    pub bid: i64,
    /// Trade-Order: a cash trade (else on margin).
    pub is_cash: bool,
    /// Trade-Order: sell the newest holdings first.
    pub lifo: bool,
    /// Trade-Order: roll back after the writes (1%).
    pub rollback: bool,
    /// Trade-Order: ordered by another customer the account permits (10%).
    pub third_party: bool,
    /// The start of a time window (nanoseconds), or a start day
    /// (Market-Watch, Security-Detail).
    pub start: u64,
    /// The end of a time window; Security-Detail: days of daily market.
    pub end: u64,
    /// Trade-Result: the worker's shard of the market queue; Asset-Eval:
    /// the sequence number of its rows.
    pub seq: u64,
    /// Market-Feed: the ticker's prices; Trade-Lookup/Update frame 1: the trade ids.
    pub ids: [u64; MAX_TRADES],
    /// Broker-Volume: the brokers (`n` of them).
    pub brokers: [u32; MAX_BROKERS],
    /// How many `brokers`, or of `ids`.
    pub n: usize,
}

impl Default for TpceInput {
    fn default() -> TpceInput {
        TpceInput {
            ty: SECURITY_DETAIL,
            frame: 1,
            c: 1,
            ca: ca_id(1, 0),
            s: 0,
            group: 0,
            t_id: 0,
            tt: TT_TMB,
            qty: 100,
            bid: 0,
            is_cash: true,
            lifo: false,
            rollback: false,
            third_party: false,
            start: 0,
            end: 5,
            seq: 0,
            ids: [0; MAX_TRADES],
            brokers: [1; MAX_BROKERS],
            n: 0,
        }
    }
}

/// What the last execution of a worker found (tests read it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Rows of the transaction's main result (trades listed, securities
    /// watched, accounts valued, brokers with volume...).
    pub rows: u64,
    /// A sum it computed (assets, volume, market cap; in cents).
    pub total: i64,
    /// Trade-Result: the trade completed (0: none was submitted); Trade-Order: the trade.
    pub trade: u64,
    /// Market-Feed: limit orders triggered.
    pub triggered: u64,
}

/// One thread's generator for TPC-E.
pub struct TpceWorker<'w> {
    pub(super) w: &'w Tpce,
    /// The worker's number (its trade ids and asset-history rows carry it).
    thread: u16,
    rng: SmallRng,
    pub(super) input: TpceInput,
    /// Sequence number of the worker's next trade / asset evaluation.
    seq: u64,
    /// Scratch: keys, ids and quantities of one phase.
    pub(super) ids: Vec<u64>,
    /// Scratch: `(id, price, quantity)` triples (holdings, requests, trades).
    pub(super) rows: Vec<(u64, i64, i64)>,
    pub(super) last: Outcome,
    /// Folds every value read, so reads cannot be optimized away.
    pub(super) checksum: u64,
    committed: [u64; NTYPES],
    ordered: u64,
    completed: u64,
    assets: u64,
}

#[cold]
pub(super) fn missing(what: &str, key: &Key) -> TxnError {
    TxnError::Invariant(format!("tpce: {what} {:?} not found, though the workload never deletes it", key.as_bytes()))
}

/// Maps "no such row" of an update of a row the workload never deletes to an invariant failure.
#[inline]
pub(super) fn present(r: Result<()>, what: &str, key: &Key) -> Result<(), TxnError> {
    match r {
        Err(Error::KeyNotFound) => Err(missing(what, key)),
        r => Ok(r?),
    }
}

/// A row another transaction deleted or inserted between this one's read
/// and its write (only read committed lets that be seen, and at the other
/// levels it is a write conflict): the write conflict, found early, retried
/// like one.
#[inline]
pub(super) fn raced(e: Error) -> TxnError {
    match e {
        Error::KeyNotFound | Error::DuplicateKey => TxnError::Engine(Error::Aborted(AbortReason::WriteConflict)),
        e => TxnError::Engine(e),
    }
}

#[inline]
pub(super) fn fold(h: u64, x: u64) -> u64 {
    (h.rotate_left(7) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The current time in nanoseconds since the epoch (after the load's dates).
#[inline]
pub(super) fn now() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    t.max(LOAD_END + 1)
}

impl<'w> TpceWorker<'w> {
    pub(super) fn new(w: &'w Tpce, thread: usize, seed: u64) -> TpceWorker<'w> {
        TpceWorker {
            w,
            thread: thread as u16,
            rng: SmallRng::seed_from_u64(seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            input: TpceInput::default(),
            seq: 0,
            ids: Vec::with_capacity(256),
            rows: Vec::with_capacity(256),
            last: Outcome::default(),
            checksum: 0,
            committed: [0; NTYPES],
            ordered: 0,
            completed: 0,
            assets: 0,
        }
    }

    /// The current transaction's inputs.
    pub fn input(&self) -> TpceInput {
        self.input
    }

    /// Replaces the current transaction's inputs (tests drive exact cases with it).
    pub fn set_input(&mut self, i: TpceInput) {
        self.input = i;
    }

    /// What the last execution found.
    pub fn outcome(&self) -> Outcome {
        self.last
    }

    /// A fold of every value read (meaningless; keeps reads observable).
    pub fn checksum(&self) -> u64 {
        self.checksum
    }

    /// The worker's number.
    pub(super) fn thread(&self) -> u16 {
        self.thread
    }

    #[inline]
    fn uniform(&mut self, lo: u64, hi: u64) -> u64 {
        lo + below(&mut self.rng, hi - lo + 1)
    }

    /// A customer and one of its accounts, uniformly.
    fn draw_account(&mut self, i: &mut TpceInput) {
        i.c = self.uniform(1, self.w.cfg.customers);
        i.ca = ca_id(i.c, below(&mut self.rng, accounts_of(i.c)));
    }

    /// A time window of the initial trades: a start, and two hours on.
    fn draw_window(&mut self, i: &mut TpceInput) {
        let span = self.w.cfg.trade_days as u64 * DAY_NS;
        i.start = LOAD_END - span + below(&mut self.rng, span);
        i.end = i.start + DAY_NS / 4;
    }

    /// 20 trades of the load, by id (an account with none is skipped).
    fn draw_trade_ids(&mut self, i: &mut TpceInput) {
        let mut n = 0;
        while n < MAX_TRADES {
            let mut a = *i;
            self.draw_account(&mut a);
            let trades = initial_trades(&self.w.cfg, a.ca);
            if trades > 0 {
                i.ids[n] = a.ca << 20 | below(&mut self.rng, trades);
                n += 1;
            }
        }
        i.n = n;
    }
}

impl Worker for TpceWorker<'_> {
    #[inline]
    fn next_txn(&mut self) {
        let cfg = &self.w.cfg;
        let ty = cfg.mix.draw(self.rng.next_u64());
        let securities = cfg.securities() as u64;
        let mut i = TpceInput { ty, rollback: false, ..self.input };
        self.draw_account(&mut i);
        i.s = below(&mut self.rng, securities) as u32;
        match ty {
            BROKER_VOLUME => {
                let brokers = cfg.brokers() as u64;
                i.n = self.uniform(20, MAX_BROKERS as u64).min(brokers) as usize;
                let first = below(&mut self.rng, brokers);
                for (k, b) in i.brokers[..i.n].iter_mut().enumerate() {
                    *b = 1 + ((first + k as u64) % brokers) as u32;
                }
                i.group = below(&mut self.rng, load::SECTORS as u64) as u8;
            }
            CUSTOMER_POSITION => {
                i.frame = if below(&mut self.rng, 2) == 0 { 1 } else { 2 };
                // 1: the customer is looked up by tax id.
                i.group = below(&mut self.rng, 2) as u8;
            }
            MARKET_FEED => {
                let first = below(&mut self.rng, securities);
                i.n = FEED.min(securities as usize);
                for k in 0..i.n {
                    let s = ((first + k as u64) % securities) as u32;
                    i.ids[k] = (s as u64) << 32 | market_price(s, self.rng.next_u64()) as u64;
                }
            }
            MARKET_WATCH => {
                i.frame = match below(&mut self.rng, 100) {
                    0..=34 => 1,
                    35..=39 => 2,
                    _ => 3,
                };
                i.group = below(&mut self.rng, load::INDUSTRIES as u64) as u8;
                i.start = below(&mut self.rng, DM_DAYS as u64);
            }
            SECURITY_DETAIL => {
                i.end = self.uniform(5, 20);
                i.start = below(&mut self.rng, DM_DAYS as u64 - i.end);
            }
            TRADE_LOOKUP | TRADE_UPDATE => {
                i.frame = if ty == TRADE_LOOKUP {
                    match below(&mut self.rng, 100) {
                        0..=29 => 1,
                        30..=59 => 2,
                        60..=89 => 3,
                        _ => 4,
                    }
                } else {
                    1 + below(&mut self.rng, 3) as u8
                };
                self.draw_window(&mut i);
                if i.frame == 1 {
                    self.draw_trade_ids(&mut i);
                }
            }
            TRADE_ORDER => {
                i.tt = match below(&mut self.rng, 100) {
                    0..=29 => TT_TMB,
                    30..=59 => TT_TMS,
                    60..=79 => TT_TLB,
                    80..=89 => TT_TLS,
                    _ => TT_TSL,
                };
                i.qty = QTYS[below(&mut self.rng, 4) as usize];
                i.bid = market_price(i.s, self.rng.next_u64());
                i.is_cash = below(&mut self.rng, 100) < 92;
                i.lifo = below(&mut self.rng, 2) == 1;
                i.rollback = below(&mut self.rng, 100) == 0;
                i.third_party = below(&mut self.rng, 100) < 10;
                i.t_id = RUN_TRADE | (self.thread as u64) << 40 | self.seq;
                self.seq += 1;
            }
            TRADE_RESULT => i.seq = self.thread as u64 % MARKET_SHARDS as u64,
            ASSET_EVAL => {
                i.seq = self.seq;
                self.seq += 1;
            }
            _ => {}
        }
        self.input = i;
    }

    #[inline]
    fn execute<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        self.last = Outcome::default();
        match self.input.ty {
            BROKER_VOLUME => self.broker_volume(t),
            CUSTOMER_POSITION => self.customer_position(t),
            MARKET_FEED => self.market_feed(t),
            MARKET_WATCH => self.market_watch(t),
            SECURITY_DETAIL => self.security_detail(t),
            TRADE_LOOKUP => self.trade_lookup(t),
            TRADE_ORDER => self.trade_order(t),
            TRADE_RESULT => self.trade_result(t),
            TRADE_STATUS => self.trade_status(t),
            TRADE_UPDATE => self.trade_update(t),
            ASSET_EVAL => self.asset_eval(t),
            ty => Err(TxnError::Invariant(format!("tpce: no transaction type {ty}"))),
        }
    }

    #[inline]
    fn txn_type(&self) -> usize {
        self.input.ty
    }

    #[inline]
    fn options(&self, run: TxnOptions<'static>) -> TxnOptions<'static> {
        let read_only = matches!(
            self.input.ty,
            BROKER_VOLUME | CUSTOMER_POSITION | MARKET_WATCH | SECURITY_DETAIL | TRADE_LOOKUP | TRADE_STATUS
        );
        TxnOptions { read_only, ..run }
    }

    #[inline]
    fn committed(&mut self) {
        self.committed[self.input.ty] += 1;
        match self.input.ty {
            TRADE_ORDER => self.ordered += 1,
            TRADE_RESULT => self.completed += (self.last.trade != 0) as u64,
            ASSET_EVAL => self.assets += self.last.rows,
            _ => {}
        }
    }

    fn finish(&mut self) {
        let w = self.w;
        // Relaxed: read after every worker was joined.
        for ty in 0..NTYPES {
            w.committed[ty].fetch_add(std::mem::take(&mut self.committed[ty]), Ordering::Relaxed);
        }
        w.ordered.fetch_add(std::mem::take(&mut self.ordered), Ordering::Relaxed);
        w.completed.fetch_add(std::mem::take(&mut self.completed), Ordering::Relaxed);
        w.assets.fetch_add(std::mem::take(&mut self.assets), Ordering::Relaxed);
    }
}
