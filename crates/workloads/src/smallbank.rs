//! SmallBank, as run in the BOHM paper (Faleiro and Abadi, VLDB 2015,
//! `bohm-vldb2015.txt` section 4.3; the benchmark is Cahill et al.'s).
//!
//! Three tables (section 4.3):
//!
//! * **Customer** maps a customer's name to a customer identifier. The name
//!   is the primary key (16 bytes: `cust` and the id in twelve zero-padded
//!   decimal digits); the value is the id (`u64`, little-endian).
//! * **Savings** and **Checking** hold one row per customer, keyed by the id
//!   ([`Key::from_u64`]), whose value is the balance: 8 bytes, as in the paper,
//!   an `i64` of **cents** (little-endian), so that money is counted exactly.
//!
//! Five transactions (section 4.3), each on one or two customers drawn
//! uniformly at random; every one first looks its customers up by name:
//!
//! * `balance`: reads the customer's savings and checking balances (read-only).
//! * `deposit-checking`: adds `V` (1..=10,000 cents) to the checking balance.
//! * `transact-savings`: adds `V` (-10,000..=10,000 cents) to the savings
//!   balance, unless the balance would become negative: then the transaction
//!   changes nothing (SmallBank rolls it back; here it commits without a
//!   write and is counted as declined).
//! * `amalgamate`: moves all the funds of customer 1 (savings and checking)
//!   into customer 2's checking account; the two customers differ.
//! * `write-check`: subtracts `V` (1..=10,000 cents) from the checking
//!   balance; if savings plus checking is below `V`, it subtracts `V` plus an
//!   overdraft penalty of [`PENALTY`] cents (one dollar).
//!
//! The paper runs each type at the same rate (`balance` is "20% of all
//! transactions"), so the default mix is 20% each; `--mix` changes it. The
//! number of customers sets the contention: the paper uses 50 (high) and
//! 100,000 (low); the default here is 100,000. The paper also makes "each
//! transaction spin for 50 microseconds" to make the tiny transactions less
//! trivial; [`SmallBankConfig::spin_us`] does the same (inside the
//! transaction, after its reads and writes, before commit), default 0.
//!
//! **The money invariant.** Only deposits, savings transactions and checks
//! change the total amount of money; amalgamate moves it. Every balance change
//! is a read-modify-write ([`Txn::update_with`]) whose new value is computed
//! from the version it replaces, so first-writer-wins makes each change atomic
//! at every isolation level, read committed included (a decision such as the
//! overdraft penalty may rest on a stale read there, but the amount taken is
//! exactly the amount recorded). Each worker tallies the net amount its
//! committed transactions added ([`Worker::committed`]) and hands it to the
//! workload at the end ([`Worker::finish`]); [`Workload::check_consistency`]
//! sums every balance in one snapshot and compares it with the initial total
//! plus the recorded net amount.
//!
//! The money invariant does not make SmallBank serializable at every level:
//! `write-check` decides the penalty from savings plus checking but writes
//! only checking, while `transact-savings` writes only savings, so snapshot
//! isolation admits write skew (Cahill et al.'s point; `bench --verify`
//! reports such cycles as G2-item, allowed at snapshot).
//!
//! Deviations: the customer choice is uniform (the paper does not say), and
//! the amounts and initial balances are this implementation's choice (initial
//! balances 100 to 50,000 dollars, derived from the customer id so the initial
//! total can be recomputed). The transact-savings overdraft test reads the
//! balance before the update; under read committed a concurrent change can
//! slip in between, so a savings balance can end below zero there (the money
//! is still counted exactly).

use crate::{split_range, Mix, Param, Store, StoreTxn, Txn, TxnError, Worker, Workload};
use multiverse::{AccessSet, Error, Key, Result, TableId, TableSpec, TxnOptions};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The transaction types, in the order of [`Workload::txn_types`].
pub const TYPES: &[&str] = &["balance", "deposit-checking", "transact-savings", "amalgamate", "write-check"];
/// Index of `balance` in [`TYPES`].
pub const BALANCE: usize = 0;
/// Index of `deposit-checking` in [`TYPES`].
pub const DEPOSIT_CHECKING: usize = 1;
/// Index of `transact-savings` in [`TYPES`].
pub const TRANSACT_SAVINGS: usize = 2;
/// Index of `amalgamate` in [`TYPES`].
pub const AMALGAMATE: usize = 3;
/// Index of `write-check` in [`TYPES`].
pub const WRITE_CHECK: usize = 4;

/// Name of the Customer table.
pub const CUSTOMER: &str = "smallbank.customer";
/// Name of the Savings table.
pub const SAVINGS: &str = "smallbank.savings";
/// Name of the Checking table.
pub const CHECKING: &str = "smallbank.checking";

/// Overdraft penalty of `write-check`, in cents.
pub const PENALTY: i64 = 100;
/// Largest amount of one deposit, savings transaction or check, in cents.
pub const MAX_AMOUNT: i64 = 10_000;
/// Smallest initial balance, in cents.
pub const MIN_INITIAL: i64 = 10_000;
/// Largest initial balance, in cents.
pub const MAX_INITIAL: i64 = 5_000_000;
/// Most customers (names hold twelve decimal digits).
pub const MAX_CUSTOMERS: u64 = 999_999_999_999;
/// Longest spin per transaction, in microseconds.
pub const MAX_SPIN_US: u64 = 1_000_000;
/// Customers loaded per load transaction.
pub const LOAD_BATCH: u64 = 512;
/// Bytes of a customer name.
pub const NAME_LEN: usize = 16;

/// Parameters of the workload.
#[derive(Clone, Debug, PartialEq)]
pub struct SmallBankConfig {
    /// Customers (rows of Savings and of Checking); 50 = hot, 100,000 = cold.
    pub customers: u64,
    /// Microseconds each transaction spins before it commits (the paper: 50).
    pub spin_us: u64,
    /// The transaction mix over [`TYPES`].
    pub mix: Mix,
}

impl Default for SmallBankConfig {
    /// 100,000 customers (the paper's low-contention setup), no spin, 20% each.
    fn default() -> SmallBankConfig {
        SmallBankConfig { customers: 100_000, spin_us: 0, mix: default_mix() }
    }
}

/// The paper's mix: every type 20% of the time.
pub fn default_mix() -> Mix {
    Mix::new(TYPES, &[20.0; 5]).expect("20% x 5 is a valid mix")
}

impl SmallBankConfig {
    /// Checks the parameters; the error is a one-line message.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.customers == 0 {
            return Err("--customers must be at least 1".into());
        }
        if self.customers > MAX_CUSTOMERS {
            return Err(format!("--customers {} is too large (at most {MAX_CUSTOMERS})", self.customers));
        }
        if self.customers < 2 && self.mix.pct(AMALGAMATE) > 0.0 {
            return Err(
                "amalgamate needs two distinct customers: give --customers 2 or more, or a --mix without amalgamate"
                    .into(),
            );
        }
        if self.spin_us > MAX_SPIN_US {
            return Err(format!("--spin-us {} is too long (at most {MAX_SPIN_US}, one second)", self.spin_us));
        }
        if self.mix.names() != TYPES {
            return Err(format!("the smallbank mix must be over its types ({})", TYPES.join(", ")));
        }
        Ok(())
    }
}

/// The name of customer `id`: `cust` and `id` in twelve decimal digits.
#[inline]
pub fn customer_name(id: u64) -> [u8; NAME_LEN] {
    let mut n = *b"cust000000000000";
    let mut x = id;
    for b in n[4..].iter_mut().rev() {
        *b = b'0' + (x % 10) as u8;
        x /= 10;
    }
    n
}

/// The primary key of customer `id` in the Customer table (its name).
#[inline]
pub fn customer_key(id: u64) -> Key {
    Key::builder().bytes(&customer_name(id)).build().expect("16 bytes fit a key")
}

/// SplitMix64: a fixed bijective mix, for balances derived from ids.
#[inline]
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The initial savings (`checking == false`) or checking balance of customer
/// `id`, in cents: between [`MIN_INITIAL`] and [`MAX_INITIAL`].
#[inline]
pub fn initial_balance(id: u64, checking: bool) -> i64 {
    let h = mix64(id.wrapping_mul(2).wrapping_add(checking as u64) ^ 0x5A11_BA4C);
    MIN_INITIAL + (h % (MAX_INITIAL - MIN_INITIAL + 1) as u64) as i64
}

/// Decodes a balance; `None` unless the value is 8 bytes.
#[inline]
pub fn decode_balance(v: &[u8]) -> Option<i64> {
    Some(i64::from_le_bytes(v.try_into().ok()?))
}

/// The workload, bound to its tables in one database.
#[derive(Debug)]
pub struct SmallBank {
    cfg: SmallBankConfig,
    customer: TableId,
    savings: TableId,
    checking: TableId,
    /// Net cents added by the committed transactions of finished workers.
    delta: AtomicI64,
    /// Committed transactions of finished workers, by type.
    committed: [AtomicU64; 5],
    /// Committed `transact-savings` that changed nothing (overdraft).
    declined: AtomicU64,
    /// Committed `write-check` that paid the overdraft penalty.
    penalties: AtomicU64,
}

impl SmallBank {
    /// Creates the three tables in `db` (hash primary indexes sized to the customers).
    pub fn setup<S: Store>(db: &S, cfg: SmallBankConfig) -> std::result::Result<SmallBank, String> {
        cfg.validate()?;
        let cap = usize::try_from(cfg.customers).map_err(|_| format!("--customers {} is too large", cfg.customers))?;
        let mk = |name| db.create_table(TableSpec::hash(name, cap)).map_err(|e| e.to_string());
        let (customer, savings, checking) = (mk(CUSTOMER)?, mk(SAVINGS)?, mk(CHECKING)?);
        Ok(SmallBank {
            cfg,
            customer,
            savings,
            checking,
            delta: AtomicI64::new(0),
            committed: Default::default(),
            declined: AtomicU64::new(0),
            penalties: AtomicU64::new(0),
        })
    }

    /// The parameters.
    pub fn config(&self) -> &SmallBankConfig {
        &self.cfg
    }

    /// The Customer, Savings and Checking tables.
    pub fn tables(&self) -> (TableId, TableId, TableId) {
        (self.customer, self.savings, self.checking)
    }

    /// Sum of every initial balance, in cents.
    pub fn initial_total(&self) -> i128 {
        (0..self.cfg.customers).map(|id| initial_balance(id, false) as i128 + initial_balance(id, true) as i128).sum()
    }

    /// Net cents the committed transactions of finished workers added.
    pub fn recorded_delta(&self) -> i64 {
        // Relaxed: read after the workers finished (joined).
        self.delta.load(Ordering::Relaxed)
    }

    /// Committed transactions of finished workers, by type (indexes of [`TYPES`]).
    pub fn committed_by_type(&self) -> [u64; 5] {
        // Relaxed: read after the workers finished (joined).
        std::array::from_fn(|i| self.committed[i].load(Ordering::Relaxed))
    }

    /// Committed `transact-savings` that were declined, and `write-check`
    /// that paid the penalty (finished workers).
    pub fn declined_and_penalties(&self) -> (u64, u64) {
        // Relaxed: read after the workers finished (joined).
        (self.declined.load(Ordering::Relaxed), self.penalties.load(Ordering::Relaxed))
    }

    /// [`SmallBank::total_money`], and an error unless every customer has
    /// both accounts and a Customer row that maps its name to it.
    fn accounts_total<S: Store>(&self, db: &S) -> std::result::Result<i128, String> {
        let (total, sav, chk) = self.total_money(db)?;
        let n = self.cfg.customers;
        if sav != n || chk != n {
            return Err(format!("{sav} savings and {chk} checking rows, expected {n} of each"));
        }
        let (mut names, mut bad) = (0u64, None);
        db.check_txn(|t| {
            (names, bad) = (0, None);
            t.scan(db.primary(self.customer), .., None, |k, v| {
                names += 1;
                let id = <[u8; 8]>::try_from(v).map(u64::from_le_bytes);
                if !id.is_ok_and(|id| id < n && k.as_bytes() == customer_name(id)) {
                    bad = Some(format!("customer row {:?} does not map a customer's name to its id", k.as_bytes()));
                }
                bad.is_none()
            })
        })
        .map_err(|e| e.to_string())?;
        match bad {
            Some(b) => Err(b),
            None if names != n => Err(format!("{names} customer rows, expected {n}")),
            None => Ok(total),
        }
    }

    /// Sums every savings and checking balance in one snapshot: `(total,
    /// savings rows, checking rows)`. A row that is not a customer's (its
    /// key past the last customer) or not an 8-byte balance is an error.
    pub fn total_money<S: Store>(&self, db: &S) -> std::result::Result<(i128, u64, u64), String> {
        let mut t = db.begin_check().map_err(|e| e.to_string())?;
        let mut total = 0i128;
        let mut bad = None;
        let mut rows = [0u64; 2];
        for (i, table) in [self.savings, self.checking].into_iter().enumerate() {
            let name = if i == 0 { SAVINGS } else { CHECKING };
            t.scan(db.primary(table), .., None, |k, v| {
                rows[i] += 1;
                match (k.to_u64(), decode_balance(v)) {
                    (Some(id), _) if id >= self.cfg.customers => {
                        bad = Some(format!("{name} row {id} is past the last customer ({})", self.cfg.customers - 1))
                    }
                    (Some(_), Some(b)) => total += b as i128,
                    (Some(id), None) => {
                        bad = Some(format!("{name} row {id} holds {} bytes, not an 8-byte balance", v.len()))
                    }
                    (None, _) => bad = Some(format!("{name} has a row keyed {:?}, not a customer id", k.as_bytes())),
                }
                bad.is_none()
            })
            .map_err(|e| e.to_string())?;
        }
        t.commit().map_err(|e| e.to_string())?;
        match bad {
            Some(b) => Err(b),
            None => Ok((total, rows[0], rows[1])),
        }
    }
}

impl Workload for SmallBank {
    type Worker<'w> = SmallBankWorker<'w>;

    fn name(&self) -> &'static str {
        crate::Kind::SmallBank.name()
    }

    fn params(&self) -> Vec<(&'static str, Param)> {
        vec![
            ("customers", Param::Int(self.cfg.customers)),
            ("spin_us", Param::Int(self.cfg.spin_us)),
            ("mix", Param::Str(self.cfg.mix.to_string())),
        ]
    }

    fn load_size(&self) -> u64 {
        3 * self.cfg.customers
    }

    fn txn_types(&self) -> &'static [&'static str] {
        TYPES
    }

    fn estimated_bytes(&self) -> u64 {
        // Three rows per customer of about 128 bytes each (version, allocator, bucket).
        self.cfg.customers.saturating_mul(3 * 128)
    }

    fn load<S: Store>(&self, db: &S, part: usize, parts: usize, progress: &(impl Fn(u64) + Sync)) -> Result<()> {
        let range = split_range(self.cfg.customers, part, parts);
        let mut lo = range.start;
        while lo < range.end {
            let hi = (lo + LOAD_BATCH).min(range.end);
            db.load_txn(|t| {
                for id in lo..hi {
                    t.insert(self.customer, customer_key(id), &id.to_le_bytes())?;
                    t.insert(self.savings, Key::from_u64(id), &initial_balance(id, false).to_le_bytes())?;
                    t.insert(self.checking, Key::from_u64(id), &initial_balance(id, true).to_le_bytes())?;
                }
                Ok(())
            })?;
            progress(3 * (hi - lo));
            lo = hi;
        }
        Ok(())
    }

    fn worker(&self, thread: usize, seed: u64) -> SmallBankWorker<'_> {
        SmallBankWorker {
            w: self,
            rng: SmallRng::seed_from_u64(seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            input: SmallBankInput { ty: BALANCE, c1: 0, c2: 0, amount: 0 },
            name1: customer_key(0),
            name2: customer_key(0),
            spin: Duration::from_micros(self.cfg.spin_us),
            pending: 0,
            declined: false,
            penalty: false,
            balance: 0,
            delta: 0,
            committed: [0; 5],
            declined_n: 0,
            penalties_n: 0,
        }
    }

    fn check_consistency<S: Store>(&self, db: &S) -> std::result::Result<String, String> {
        let total = self.accounts_total(db)?;
        let n = self.cfg.customers;
        let initial = self.initial_total();
        let delta = self.recorded_delta();
        let expected = initial + delta as i128;
        if total != expected {
            return Err(format!(
                "the balances add up to {} but the initial {} plus the {} recorded by committed transactions is {}: {} appeared or vanished",
                cents(total),
                cents(initial),
                cents(delta as i128),
                cents(expected),
                cents(total - expected)
            ));
        }
        let (declined, penalties) = self.declined_and_penalties();
        Ok(format!(
            "money: {} in {n} savings + {n} checking accounts = initial {} + {} net from committed transactions \
             ({declined} savings transactions declined, {penalties} overdraft penalties)",
            cents(total),
            cents(initial),
            cents(delta as i128)
        ))
    }

    /// Every customer has both accounts (their keys are distinct and below
    /// the customers, so `n` of each is all of them) and a balance in each.
    fn check_state<S: Store>(&self, db: &S) -> std::result::Result<crate::StateCheck, String> {
        let total = self.accounts_total(db)?;
        Ok(crate::StateCheck {
            checked: format!(
                "each of the {} customers has a savings and a checking row holding an 8-byte balance; \
                 the balances add up to {}",
                self.cfg.customers,
                cents(total)
            ),
            needs_run: format!(
                "money: the balances against the initial {} plus the net amount the committed transactions added",
                cents(self.initial_total())
            ),
        })
    }
}

/// Cents as dollars: `-12.34`.
fn cents(c: i128) -> String {
    let sign = if c < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", c.unsigned_abs() / 100, c.unsigned_abs() % 100)
}

/// The inputs of one SmallBank transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmallBankInput {
    /// The type (index into [`TYPES`]).
    pub ty: usize,
    /// The customer (the source for `amalgamate`).
    pub c1: u64,
    /// The second customer (the destination of `amalgamate`; unused otherwise).
    pub c2: u64,
    /// The amount in cents (deposit, savings change, check).
    pub amount: i64,
}

/// One thread's generator for SmallBank.
pub struct SmallBankWorker<'w> {
    w: &'w SmallBank,
    rng: SmallRng,
    input: SmallBankInput,
    /// Customer keys (names) of `c1` and `c2`.
    name1: Key,
    name2: Key,
    spin: Duration,
    /// Net cents the last successful execution added (counted at commit).
    pending: i64,
    /// The last execution declined a savings transaction.
    declined: bool,
    /// The last execution charged the overdraft penalty.
    penalty: bool,
    /// The last balance read (`balance`), in cents.
    balance: i64,
    /// Net cents added by this worker's committed transactions.
    delta: i64,
    committed: [u64; 5],
    declined_n: u64,
    penalties_n: u64,
}

/// The error for a row that must exist but does not.
#[cold]
fn missing(what: &str, id: u64) -> TxnError {
    TxnError::Invariant(format!(
        "smallbank: the {what} row of customer {id} is missing, though rows are never deleted (an engine bug)"
    ))
}

/// The error for a value of the wrong shape.
#[cold]
fn malformed(what: &str, id: u64) -> TxnError {
    TxnError::Invariant(format!("smallbank: the {what} row of customer {id} does not hold 8 bytes"))
}

impl SmallBankWorker<'_> {
    /// The current transaction's inputs.
    pub fn input(&self) -> SmallBankInput {
        self.input
    }

    /// Replaces the current transaction's inputs (tests drive exact cases with it).
    pub fn set_input(&mut self, input: SmallBankInput) {
        self.input = input;
        self.name1 = customer_key(input.c1);
        self.name2 = customer_key(input.c2);
    }

    /// Net cents the last successful execution of the current transaction added.
    pub fn pending_delta(&self) -> i64 {
        self.pending
    }

    /// Whether the last execution declined a savings transaction / charged a penalty.
    pub fn outcome(&self) -> (bool, bool) {
        (self.declined, self.penalty)
    }

    /// The sum of savings and checking the last `balance` read, in cents.
    pub fn last_balance(&self) -> i64 {
        self.balance
    }

    /// A uniform draw from `0..n` (Lemire's multiply-shift).
    #[inline]
    fn draw(&mut self, n: u64) -> u64 {
        ((self.rng.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Looks customer `id` up by name; returns its account key.
    #[inline]
    fn lookup<T: Txn>(&self, t: &mut T, name: &Key, id: u64) -> Result<Key, TxnError> {
        let found = t.get_with(self.w.customer, name, |v| <[u8; 8]>::try_from(v).ok().map(u64::from_le_bytes))?;
        match found {
            Some(Some(got)) if got == id => Ok(Key::from_u64(got)),
            Some(_) => {
                Err(TxnError::Invariant(format!("smallbank: customer {id}'s name maps to another id ({found:?})")))
            }
            None => Err(missing("customer", id)),
        }
    }

    /// Reads a balance that must exist.
    #[inline]
    fn read<T: Txn>(t: &mut T, table: TableId, key: &Key, what: &str, id: u64) -> Result<i64, TxnError> {
        match t.get_with(table, key, decode_balance)? {
            Some(Some(b)) => Ok(b),
            Some(None) => Err(malformed(what, id)),
            None => Err(missing(what, id)),
        }
    }

    /// Read-modify-write of a balance: `f(old)` gives the new balance.
    /// Returns the old balance.
    #[inline]
    fn modify<T: Txn>(
        t: &mut T,
        table: TableId,
        key: &Key,
        what: &str,
        id: u64,
        f: impl FnOnce(i64) -> i64,
    ) -> Result<i64, TxnError> {
        let mut old = None;
        let r = t.update_with(table, key, |v, new| match decode_balance(v) {
            Some(o) => {
                old = Some(o);
                new.extend_from_slice(&f(o).to_le_bytes());
            }
            // Rewritten unchanged; the error below rolls the transaction back.
            None => new.extend_from_slice(v),
        });
        match r {
            Err(Error::KeyNotFound) => Err(missing(what, id)),
            r => {
                r?;
                old.ok_or_else(|| malformed(what, id))
            }
        }
    }

    /// Busy-waits the configured time (inside the transaction).
    #[inline]
    fn spin(&self) {
        if self.spin.is_zero() {
            return;
        }
        let until = Instant::now() + self.spin;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

impl Worker for SmallBankWorker<'_> {
    #[inline]
    fn next_txn(&mut self) {
        let ty = self.w.cfg.mix.draw(self.rng.next_u64());
        let n = self.w.cfg.customers;
        let c1 = self.draw(n);
        let mut c2 = c1;
        let mut amount = 1 + self.draw(MAX_AMOUNT as u64) as i64;
        match ty {
            AMALGAMATE => {
                // Two distinct customers (validate() guarantees n >= 2 here).
                c2 = self.draw(n.max(2) - 1);
                if c2 >= c1 {
                    c2 += 1;
                }
                amount = 0;
            }
            TRANSACT_SAVINGS => amount = self.draw(2 * MAX_AMOUNT as u64 + 1) as i64 - MAX_AMOUNT,
            BALANCE => amount = 0,
            _ => {}
        }
        self.set_input(SmallBankInput { ty, c1, c2, amount });
    }

    #[inline]
    fn execute<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        self.pending = 0;
        self.declined = false;
        self.penalty = false;
        let (sav, chk) = (self.w.savings, self.w.checking);
        let SmallBankInput { ty, c1, c2, amount } = self.input;
        let a1 = self.lookup(t, &self.name1, c1)?;
        let mut pending = 0;
        match ty {
            BALANCE => {
                let s = Self::read(t, sav, &a1, "savings", c1)?;
                let c = Self::read(t, chk, &a1, "checking", c1)?;
                self.balance = s.wrapping_add(c);
            }
            DEPOSIT_CHECKING => {
                Self::modify(t, chk, &a1, "checking", c1, |b| b.wrapping_add(amount))?;
                pending = amount;
            }
            TRANSACT_SAVINGS => {
                let s = Self::read(t, sav, &a1, "savings", c1)?;
                if s.wrapping_add(amount) < 0 {
                    self.declined = true;
                } else {
                    Self::modify(t, sav, &a1, "savings", c1, |b| b.wrapping_add(amount))?;
                    pending = amount;
                }
            }
            AMALGAMATE => {
                let a2 = self.lookup(t, &self.name2, c2)?;
                // The amounts moved are the balances each update replaced.
                let s = Self::modify(t, sav, &a1, "savings", c1, |_| 0)?;
                let c = Self::modify(t, chk, &a1, "checking", c1, |_| 0)?;
                let moved = s.wrapping_add(c);
                Self::modify(t, chk, &a2, "checking", c2, |b| b.wrapping_add(moved))?;
            }
            WRITE_CHECK => {
                let s = Self::read(t, sav, &a1, "savings", c1)?;
                let c = Self::read(t, chk, &a1, "checking", c1)?;
                let debit = if s.wrapping_add(c) < amount {
                    self.penalty = true;
                    amount + PENALTY
                } else {
                    amount
                };
                Self::modify(t, chk, &a1, "checking", c1, |b| b.wrapping_sub(debit))?;
                pending = -debit;
            }
            _ => return Err(TxnError::Invariant(format!("smallbank: no transaction type {ty}"))),
        }
        self.spin();
        self.pending = pending;
        Ok(())
    }

    #[inline]
    fn txn_type(&self) -> usize {
        self.input.ty
    }

    #[inline]
    fn options(&self, run: TxnOptions<'static>) -> TxnOptions<'static> {
        TxnOptions { read_only: self.input.ty == BALANCE, ..run }
    }

    #[inline]
    fn committed(&mut self) {
        self.delta += self.pending;
        self.committed[self.input.ty] += 1;
        self.declined_n += self.declined as u64;
        self.penalties_n += self.penalty as u64;
    }

    fn finish(&mut self) {
        let w = self.w;
        // Relaxed: read after every worker was joined.
        w.delta.fetch_add(std::mem::take(&mut self.delta), Ordering::Relaxed);
        for (sum, n) in w.committed.iter().zip(&mut self.committed) {
            sum.fetch_add(std::mem::take(n), Ordering::Relaxed);
        }
        w.declined.fetch_add(std::mem::take(&mut self.declined_n), Ordering::Relaxed);
        w.penalties.fetch_add(std::mem::take(&mut self.penalties_n), Ordering::Relaxed);
    }

    /// Read-modify-written rows appear in both sets.
    fn declare(&self, access: &mut AccessSet) -> bool {
        access.reads.clear();
        access.writes.clear();
        let (cu, sav, chk) = (self.w.customer, self.w.savings, self.w.checking);
        let SmallBankInput { ty, c1, c2, .. } = self.input;
        let (a1, a2) = (Key::from_u64(c1), Key::from_u64(c2));
        access.reads.push((cu, self.name1.clone()));
        match ty {
            BALANCE => access.reads.extend([(sav, a1.clone()), (chk, a1.clone())]),
            DEPOSIT_CHECKING => {
                access.reads.push((chk, a1.clone()));
                access.writes.push((chk, a1.clone()));
            }
            TRANSACT_SAVINGS => {
                access.reads.push((sav, a1.clone()));
                access.writes.push((sav, a1.clone()));
            }
            AMALGAMATE => {
                access.reads.extend([
                    (cu, self.name2.clone()),
                    (sav, a1.clone()),
                    (chk, a1.clone()),
                    (chk, a2.clone()),
                ]);
                access.writes.extend([(sav, a1.clone()), (chk, a1.clone()), (chk, a2.clone())]);
            }
            WRITE_CHECK => {
                access.reads.extend([(sav, a1.clone()), (chk, a1.clone())]);
                access.writes.push((chk, a1.clone()));
            }
            _ => {}
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_balances() {
        assert_eq!(&customer_name(0), b"cust000000000000");
        assert_eq!(&customer_name(1234567), b"cust000001234567");
        assert_eq!(&customer_name(MAX_CUSTOMERS), b"cust999999999999");
        for id in 0..1000 {
            for chk in [false, true] {
                assert!((MIN_INITIAL..=MAX_INITIAL).contains(&initial_balance(id, chk)));
            }
        }
        assert_ne!(initial_balance(5, false), initial_balance(5, true));
        assert_eq!(cents(-1234), "-12.34");
        assert_eq!(cents(5), "0.05");
    }

    #[test]
    fn config_is_validated() {
        assert!(SmallBankConfig::default().validate().is_ok());
        let c = |customers, spin_us| SmallBankConfig { customers, spin_us, mix: default_mix() };
        assert!(c(0, 0).validate().unwrap_err().contains("at least 1"));
        assert!(c(1, 0).validate().unwrap_err().contains("amalgamate"));
        assert!(c(2, 0).validate().is_ok());
        let only_balance = SmallBankConfig { customers: 1, spin_us: 0, mix: Mix::parse(TYPES, "balance:100").unwrap() };
        assert!(only_balance.validate().is_ok());
        assert!(c(MAX_CUSTOMERS + 1, 0).validate().unwrap_err().contains("too large"));
        assert!(c(50, MAX_SPIN_US + 1).validate().unwrap_err().contains("--spin-us"));
    }
}
