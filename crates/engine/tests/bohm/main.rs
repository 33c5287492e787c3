//! BOHM (protocol `bohm`): the pipeline of sections 3.2-3.3.
//!
//! Most tests run scripted transactions ([`Script`]) through the pipeline and
//! compare everything they saw, how each ended and the final data with a
//! serial model that runs the same scripts one after the other in log
//! order: dependency chains through placeholders across small batches,
//! aborts inside batches, undeclared accesses (refused whatever the logic
//! does with the error), inserts and deletes, values too large. Others
//! check the garbage collector (memory stays flat), the server API (many
//! clients, a shutdown while transactions are in flight), the gate between
//! the pipeline and interactive transactions, and the errors of a bad
//! configuration.
//!
//! The module `found` keeps the tests of problems these
//! tests found, now fixed: a declaration that inherited the previous one
//! at its log position, and panics (in a procedure, a feed, a server's
//! closure) that left the pipeline waiting forever. The panic tests wait
//! a few seconds on a thread of their own, so that a hang fails the test
//! instead of the whole suite.
//!
//! Sizes are modest by default; `MULTIVERSE_LONG=1` makes the randomized
//! runs 20 times longer (and `MULTIVERSE_STRESS=N` multiplies that).

#[path = "../common/mod.rs"]
mod common;
mod found;
mod pipeline;
mod server;

use common::RaiseOnDrop;
use multiverse::protocol::bohm::{Config, Done, ExecTxn, Feed, Next, Outcome, Procedure, RunStats, Server};
use multiverse::{
    AccessSet, Database, Error, IndexId, IndexKind, Isolation, Key, Options, Protocol, TableId, TableSpec,
};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

fn open(rows: u64) -> (Database, TableId) {
    let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
    let t = db.create_table(TableSpec::hash("t", 1024)).unwrap().table();
    db.run(Isolation::Serializable, |tx| {
        for k in 0..rows {
            tx.insert(t, Key::from(k), 0u64.to_le_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    (db, t)
}

fn value(db: &Database, t: TableId, k: u64) -> Option<u64> {
    let mut tx = db.begin(Isolation::Serializable).unwrap();
    let v = tx.get(t, Key::from(k)).unwrap().map(|v| u64::from_le_bytes(v.try_into().unwrap()));
    tx.commit().unwrap();
    v
}

/// Adds 1 to each of its keys.
struct Incr {
    t: TableId,
    keys: Vec<u64>,
}

impl Procedure for Incr {
    type Error = Error;
    fn declare(&self, a: &mut AccessSet) {
        a.reads.clear();
        a.writes.clear();
        a.writes.extend(self.keys.iter().map(|&k| (self.t, Key::from(k))));
    }
    fn run(&mut self, tx: &mut ExecTxn<'_>) -> Result<(), Error> {
        for &k in &self.keys {
            tx.modify(self.t, Key::from(k), |v| {
                let n = u64::from_le_bytes(v[..8].try_into().unwrap()) + 1;
                v[..8].copy_from_slice(&n.to_le_bytes());
            })?;
        }
        Ok(())
    }
}

struct Stream {
    t: TableId,
    left: u64,
    rows: u64,
    committed: u64,
    seed: u64,
}

impl Feed<Incr> for Stream {
    fn next(&mut self, _idle: bool) -> Next<Incr> {
        if self.left == 0 {
            return Next::Stop;
        }
        self.left -= 1;
        self.seed = self.seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let a = (self.seed >> 33) % self.rows;
        let b = (self.seed >> 13) % self.rows;
        Next::Txn(Incr { t: self.t, keys: vec![a, b] })
    }
    fn done(&mut self, d: Done<Incr>) {
        assert!(matches!(d.outcome, Outcome::Committed));
        self.committed += 1;
    }
}

#[test]
fn increments_add_up() {
    let (db, t) = open(10);
    for (cc, ex, batch) in [(1, 1, 7), (2, 3, 50), (3, 2, 1)] {
        let before: u64 = (0..10).map(|k| value(&db, t, k).unwrap()).sum();
        let feed = Stream { t, left: 2000, rows: 10, committed: 0, seed: 7 };
        let cfg = Config { cc_threads: cc, exec_threads: ex, batch_size: batch, batches_in_flight: 3 };
        let (feed, _stats) = db.bohm_run(cfg, feed).unwrap();
        assert_eq!(feed.committed, 2000);
        let after: u64 = (0..10).map(|k| value(&db, t, k).unwrap()).sum();
        assert_eq!(after - before, 4000);
    }
    assert!(db.stats().versions_alive <= 10, "{:?}", db.stats());
}

// ----------------------------------------------------------------------
// Scripts and their serial model
// ----------------------------------------------------------------------

/// Size multiplier of the randomized runs.
fn scale() -> usize {
    let long = std::env::var("MULTIVERSE_LONG").is_ok_and(|v| !v.is_empty() && v != "0");
    (if long { 20 } else { 1 }) * common::stress() as usize
}

/// splitmix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// True with probability `pct`%.
    fn pct(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// A record of the harness: table 0 or 1, and an integer key.
type K = (u8, u64);

/// The harness's tables: `a` (hash) and `b` (ordered, with a secondary
/// index on the first byte of the value).
#[derive(Clone, Copy)]
struct Tabs {
    a: TableId,
    b: TableId,
    /// The primary index of `a`.
    pa: IndexId,
    /// The secondary index of `b`.
    sec: IndexId,
}

impl Tabs {
    fn table(&self, k: K) -> TableId {
        if k.0 == 0 {
            self.a
        } else {
            self.b
        }
    }
    fn decl(&self, k: K) -> (TableId, Key) {
        (self.table(k), Key::from(k.1))
    }
}

fn enc(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

fn dec(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[..8].try_into().expect("an 8-byte value"))
}

fn mix(old: u64, c: u64) -> u64 {
    old.wrapping_mul(31).wrapping_add(c)
}

/// The largest value the harness databases accept.
const MAX_VALUE: usize = 64;

/// One operation of a script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// A point read.
    Get(K),
    /// `v += d` (through `modify`).
    Add(K, u64),
    /// `v = v * 31 + c` (through `modify`): the result depends on the order.
    Mix(K, u64),
    /// Reads `from` (if present) and then `to = to * 31 + from + c`
    /// (through `update_with`): a chain from one record to another.
    Carry(K, K, u64),
    /// An update.
    Put(K, u64),
    /// An insert.
    Ins(K, u64),
    /// A delete.
    Del(K),
    /// An update with a value larger than [`MAX_VALUE`].
    Big(K),
    /// The logic gives up here (returns its own error).
    Fail,
    /// A range scan of table `a` (cannot be declared).
    Scan,
    /// A secondary-index lookup on table `b` (cannot be declared).
    Lookup,
}

impl Step {
    /// The record the step reads or writes, if one.
    fn record(&self) -> Option<K> {
        match *self {
            Step::Get(k) | Step::Add(k, _) | Step::Mix(k, _) | Step::Carry(_, k, _) => Some(k),
            Step::Put(k, _) | Step::Ins(k, _) | Step::Del(k) | Step::Big(k) => Some(k),
            Step::Fail | Step::Scan | Step::Lookup => None,
        }
    }
}

/// What a step saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Obs {
    /// A read's result (for `Carry`, what it read from `from`).
    Val(Option<u64>),
    /// A write went in.
    Wrote,
    /// `DuplicateKey`.
    Dup,
    /// `KeyNotFound`.
    Missing,
    /// `NotDeclared` (swallowed by the logic).
    Undeclared,
    /// `ValueTooLarge` (swallowed by the logic).
    TooLarge,
    /// Any other error, swallowed by careless logic (never in a run that
    /// counts: the serial model has no such thing).
    Other,
}

/// Why a script's logic stopped early.
#[derive(Debug)]
enum Stop {
    /// A `Fail` step.
    Fail,
    /// An engine error the logic passed on.
    Engine(Error),
}

/// A scripted transaction: steps and an explicit declaration (which may
/// leave out what the steps touch: the model decides what is undeclared).
struct Script {
    /// Position in the stream (the log order).
    id: usize,
    tabs: Tabs,
    steps: Vec<Step>,
    reads: Vec<K>,
    writes: Vec<K>,
    /// Pass a refusal on to the engine instead of swallowing it.
    propagate: bool,
    /// Swallow every error, even the one that says a value is not produced
    /// yet (the engine gives the transaction back all the same).
    careless: bool,
    /// Filled by the last run of the logic.
    seen: Vec<Obs>,
    runs: u64,
    ts: u64,
}

impl Script {
    fn new(tabs: Tabs, steps: Vec<Step>) -> Script {
        let mut s = Script {
            id: 0,
            tabs,
            steps,
            reads: Vec::new(),
            writes: Vec::new(),
            propagate: false,
            careless: false,
            seen: Vec::new(),
            runs: 0,
            ts: 0,
        };
        s.declare_steps();
        s
    }

    /// Declares what the steps touch (reads, writes).
    fn declare_steps(&mut self) {
        for step in self.steps.clone() {
            match step {
                Step::Get(k) => self.reads.push(k),
                Step::Carry(from, to, _) => {
                    self.reads.push(from);
                    self.writes.push(to);
                }
                Step::Add(k, _) | Step::Mix(k, _) | Step::Put(k, _) | Step::Ins(k, _) | Step::Del(k) | Step::Big(k) => {
                    self.writes.push(k)
                }
                Step::Fail | Step::Scan | Step::Lookup => {}
            }
        }
    }

    fn undeclared(mut self, reads: &[K], writes: &[K]) -> Script {
        self.reads.retain(|k| !reads.contains(k));
        self.writes.retain(|k| !writes.contains(k));
        self
    }

    fn also(mut self, reads: &[K], writes: &[K]) -> Script {
        self.reads.extend_from_slice(reads);
        self.writes.extend_from_slice(writes);
        self
    }

    fn propagating(mut self) -> Script {
        self.propagate = true;
        self
    }

    fn careless(mut self) -> Script {
        self.careless = true;
        self
    }

    fn step(&mut self, tx: &mut ExecTxn<'_>, step: Step) -> Result<Obs, Error> {
        let tabs = self.tabs;
        let t = |k: K| tabs.table(k);
        let key = |k: K| Key::from(k.1);
        match step {
            Step::Get(k) => tx.get_with(t(k), key(k), dec).map(Obs::Val),
            Step::Add(k, d) => tx
                .modify(t(k), key(k), |v| {
                    let n = dec(v).wrapping_add(d);
                    v.copy_from_slice(&enc(n));
                })
                .map(|()| Obs::Wrote),
            Step::Mix(k, c) => tx
                .modify(t(k), key(k), |v| {
                    let n = mix(dec(v), c);
                    v.copy_from_slice(&enc(n));
                })
                .map(|()| Obs::Wrote),
            Step::Carry(from, to, c) => match tx.get_with(t(from), key(from), dec)? {
                None => Ok(Obs::Val(None)),
                Some(a) => tx
                    .update_with(t(to), key(to), |old, new| {
                        new.extend_from_slice(&enc(mix(dec(old), a).wrapping_add(c)))
                    })
                    .map(|()| Obs::Val(Some(a))),
            },
            Step::Put(k, v) => tx.update(t(k), key(k), enc(v)).map(|()| Obs::Wrote),
            Step::Ins(k, v) => tx.insert(t(k), key(k), enc(v)).map(|()| Obs::Wrote),
            Step::Del(k) => tx.delete(t(k), key(k)).map(|()| Obs::Wrote),
            Step::Big(k) => tx.update(t(k), key(k), [7u8; 2 * MAX_VALUE]).map(|()| Obs::Wrote),
            Step::Scan => tx.scan(tabs.pa, .., None, |_, _| true).map(|()| Obs::Wrote),
            Step::Lookup => tx.get_by(tabs.sec, &Key::from(1), |_, _| true).map(|()| Obs::Wrote),
            Step::Fail => unreachable!("handled by run"),
        }
    }
}

impl Procedure for Script {
    type Error = Stop;
    fn declare(&self, a: &mut AccessSet) {
        a.reads.clear();
        a.writes.clear();
        a.reads.extend(self.reads.iter().map(|&k| self.tabs.decl(k)));
        a.writes.extend(self.writes.iter().map(|&k| self.tabs.decl(k)));
    }
    fn run(&mut self, tx: &mut ExecTxn<'_>) -> Result<(), Stop> {
        self.runs += 1;
        self.ts = tx.ts();
        self.seen.clear();
        // A hint over every record the steps name (declared or not, own
        // writes, placeholders not produced yet): it must change nothing.
        for tab in [0u8, 1] {
            let keys: Vec<Key> =
                self.steps.iter().filter_map(|s| s.record()).filter(|k| k.0 == tab).map(|k| Key::from(k.1)).collect();
            tx.prefetch(self.tabs.table((tab, 0)), &keys);
        }
        for i in 0..self.steps.len() {
            let step = self.steps[i];
            if step == Step::Fail {
                return Err(Stop::Fail);
            }
            let obs = match self.step(tx, step) {
                Ok(o) => o,
                Err(Error::DuplicateKey) => Obs::Dup,
                Err(Error::KeyNotFound) => Obs::Missing,
                Err(e @ (Error::NotDeclared(_) | Error::ValueTooLarge { .. })) if self.propagate => {
                    return Err(Stop::Engine(e))
                }
                Err(Error::NotDeclared(_)) => Obs::Undeclared,
                Err(Error::ValueTooLarge { .. }) => Obs::TooLarge,
                // Among others, the unwinding of a read that must wait.
                Err(_) if self.careless => Obs::Other,
                Err(e) => return Err(Stop::Engine(e)),
            };
            self.seen.push(obs);
        }
        Ok(())
    }
}

/// Why the model refuses a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    Undeclared,
    TooLarge,
}

/// How a transaction ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Commit,
    Abort,
    Refuse(Why),
}

fn end_of(o: &Outcome<Stop>) -> End {
    match o {
        Outcome::Committed => End::Commit,
        Outcome::Aborted(Stop::Fail) => End::Abort,
        Outcome::Aborted(Stop::Engine(e)) => panic!("the logic failed with an unexpected engine error: {e}"),
        Outcome::Refused(Error::NotDeclared(_)) => End::Refuse(Why::Undeclared),
        Outcome::Refused(Error::ValueTooLarge { .. }) => End::Refuse(Why::TooLarge),
        Outcome::Refused(e) => panic!("refused for an unexpected reason: {e}"),
    }
}

/// The serial model: the rows, and scripts run one at a time.
#[derive(Clone, Debug, Default)]
struct Model {
    rows: BTreeMap<K, u64>,
}

enum W {
    Ins(u64),
    Upd(fn(u64, u64) -> u64, u64),
    Del,
}

impl Model {
    fn write(local: &mut BTreeMap<K, u64>, declared: bool, k: K, w: W) -> Result<Obs, Why> {
        if !declared {
            return Err(Why::Undeclared);
        }
        let old = local.get(&k).copied();
        Ok(match (w, old) {
            (W::Ins(_), Some(_)) => Obs::Dup,
            (W::Ins(v), None) => {
                local.insert(k, v);
                Obs::Wrote
            }
            (W::Upd(..) | W::Del, None) => Obs::Missing,
            (W::Upd(f, arg), Some(o)) => {
                local.insert(k, f(o, arg));
                Obs::Wrote
            }
            (W::Del, Some(_)) => {
                local.remove(&k);
                Obs::Wrote
            }
        })
    }

    /// Runs `s` alone on the model; commits its writes if it commits.
    fn run(&mut self, s: &Script) -> (Vec<Obs>, End) {
        let mut local = self.rows.clone();
        let mut seen = Vec::new();
        let mut refused: Option<Why> = None;
        let readable = |k: K| s.reads.contains(&k) || s.writes.contains(&k);
        let writable = |k: K| s.writes.contains(&k);
        for &step in &s.steps {
            let r = match step {
                Step::Fail => return (seen, refused.map_or(End::Abort, End::Refuse)),
                Step::Get(k) if readable(k) => Ok(Obs::Val(local.get(&k).copied())),
                Step::Get(_) | Step::Scan | Step::Lookup => Err(Why::Undeclared),
                Step::Add(k, d) => Model::write(&mut local, writable(k), k, W::Upd(u64::wrapping_add, d)),
                Step::Mix(k, c) => Model::write(&mut local, writable(k), k, W::Upd(mix, c)),
                Step::Carry(from, to, c) => {
                    if !readable(from) {
                        Err(Why::Undeclared)
                    } else {
                        match local.get(&from).copied() {
                            None => Ok(Obs::Val(None)),
                            // mix(old, a) + c = mix(old, a + c)
                            Some(a) => match Model::write(&mut local, writable(to), to, W::Upd(mix, a.wrapping_add(c)))
                            {
                                Ok(Obs::Wrote) => Ok(Obs::Val(Some(a))),
                                other => other,
                            },
                        }
                    }
                }
                Step::Put(k, v) => Model::write(&mut local, writable(k), k, W::Upd(|_, v| v, v)),
                Step::Ins(k, v) => Model::write(&mut local, writable(k), k, W::Ins(v)),
                Step::Del(k) => Model::write(&mut local, writable(k), k, W::Del),
                Step::Big(k) => match Model::write(&mut local.clone(), writable(k), k, W::Upd(|_, v| v, 0)) {
                    Ok(Obs::Wrote) => Err(Why::TooLarge),
                    other => other,
                },
            };
            match r {
                Ok(o) => seen.push(o),
                Err(why) => {
                    let first = *refused.get_or_insert(why);
                    if s.propagate {
                        return (seen, End::Refuse(first));
                    }
                    seen.push(match why {
                        Why::Undeclared => Obs::Undeclared,
                        Why::TooLarge => Obs::TooLarge,
                    });
                }
            }
        }
        match refused {
            Some(why) => (seen, End::Refuse(why)),
            None => {
                self.rows = local;
                (seen, End::Commit)
            }
        }
    }
}

/// Hands out scripts (sometimes saying `Wait` first) and keeps what comes
/// back. It notes broken promises of the pipeline instead of panicking
/// (a panic on the sequencer thread would not end the run): see `check`.
struct ScriptFeed {
    queue: VecDeque<Script>,
    done: Vec<Done<Script>>,
    /// Say `Wait` on every n-th call (0: never).
    wait_every: u64,
    calls: u64,
    given: usize,
    stopped: bool,
    /// Asked again after `Stop`.
    asked_after_stop: bool,
    /// Told it was idle while transactions were in flight.
    false_idle: bool,
}

impl ScriptFeed {
    fn new(scripts: Vec<Script>, wait_every: u64) -> ScriptFeed {
        ScriptFeed {
            queue: scripts.into(),
            done: Vec::new(),
            wait_every,
            calls: 0,
            given: 0,
            stopped: false,
            asked_after_stop: false,
            false_idle: false,
        }
    }

    /// The promises of `Feed` held.
    fn check(&self) {
        assert!(!self.asked_after_stop, "the feed was asked again after it said Stop");
        assert!(!self.false_idle, "the feed was told it was idle with transactions in flight");
        assert!(self.stopped, "the run ended before the feed said Stop");
    }
}

impl Feed<Script> for ScriptFeed {
    fn next(&mut self, idle: bool) -> Next<Script> {
        self.asked_after_stop |= self.stopped;
        self.false_idle |= idle && self.done.len() != self.given;
        self.calls += 1;
        if self.wait_every > 0 && self.calls % self.wait_every == 0 {
            return Next::Wait;
        }
        match self.queue.pop_front() {
            Some(s) => {
                self.given += 1;
                Next::Txn(s)
            }
            None => {
                self.stopped = true;
                Next::Stop
            }
        }
    }
    fn done(&mut self, d: Done<Script>) {
        self.done.push(d);
    }
}

/// A database with the harness's two tables.
fn harness_db(opts: Options) -> (Database, Tabs) {
    let db = Database::new(Options { protocol: Protocol::Bohm, max_value_size: MAX_VALUE, ..opts }).unwrap();
    let a = db.create_table(TableSpec::hash("a", 256)).unwrap().table();
    let b = db
        .create_table(
            TableSpec::ordered("b").secondary("first", IndexKind::Hash { capacity: 16 }, |_, v| {
                Key::from(*v.first().unwrap_or(&0) as u64)
            }),
        )
        .unwrap();
    let sec = db.index(b, "first").unwrap();
    let pa = db.primary(a);
    (db, Tabs { a, b, pa, sec })
}

/// Loads `rows` with an interactive transaction (and into the model).
fn load(db: &Database, tabs: Tabs, model: &mut Model, rows: &[(K, u64)]) {
    db.run(Isolation::Serializable, |tx| {
        for &(k, v) in rows {
            tx.insert(tabs.table(k), Key::from(k.1), enc(v))?;
        }
        Ok(())
    })
    .unwrap();
    model.rows.extend(rows.iter().copied());
}

/// Every row of both tables, read by an interactive transaction.
fn contents(db: &Database, tabs: Tabs) -> BTreeMap<K, u64> {
    let mut got = BTreeMap::new();
    let mut tx = db.begin(Isolation::Serializable).unwrap();
    for (i, t) in [(0u8, tabs.a), (1u8, tabs.b)] {
        tx.scan(db.primary(t), .., None, |k, v| {
            assert!(got.insert((i, k.to_u64().unwrap()), dec(v)).is_none(), "a row scanned twice");
            true
        })
        .unwrap();
    }
    tx.commit().unwrap();
    got
}

/// What a run handed back, checked against the model.
struct Checked {
    done: Vec<Done<Script>>,
    stats: RunStats,
}

/// Runs `scripts` (numbered from 0 in stream order) and checks every
/// transaction against the model in log order, then the data.
fn run_checked(db: &Database, tabs: Tabs, cfg: Config, scripts: Vec<Script>, model: &mut Model) -> Checked {
    run_checked_waiting(db, tabs, cfg, scripts, model, 0)
}

fn run_checked_waiting(
    db: &Database,
    tabs: Tabs,
    cfg: Config,
    mut scripts: Vec<Script>,
    model: &mut Model,
    wait_every: u64,
) -> Checked {
    let n = scripts.len();
    for (i, s) in scripts.iter_mut().enumerate() {
        s.id = i;
    }
    let (feed, stats) = db.bohm_run(cfg, ScriptFeed::new(scripts, wait_every)).unwrap();
    feed.check();
    assert_eq!(feed.done.len(), n, "{cfg:?}: every transaction comes back");
    assert_eq!(stats.txns, n as u64, "{cfg:?}");
    assert!(stats.batches as usize >= n.div_ceil(cfg.batch_size), "{cfg:?}: {stats:?}");
    let Some(first) = feed.done.first().map(|d| d.ts) else { return Checked { done: feed.done, stats } };
    let mut runs = 0;
    for (i, d) in feed.done.iter().enumerate() {
        // Handed back in log order, and the log order is the stream's.
        assert_eq!(d.proc.id, i, "{cfg:?}: handed back out of order");
        assert_eq!(d.ts, first + i as u64, "{cfg:?}: timestamps are log positions");
        assert_eq!(d.proc.ts, d.ts, "{cfg:?}: ExecTxn::ts is the transaction's timestamp");
        assert!(d.proc.runs >= 1, "{cfg:?}: T{} never ran", d.ts);
        runs += d.proc.runs;
        let (seen, end) = model.run(&d.proc);
        let got = end_of(&d.outcome);
        assert_eq!(
            (got, &d.proc.seen),
            (end, &seen),
            "{cfg:?}: transaction #{i} (ts {}) {:?} declared r{:?} w{:?}: (outcome, observations) differ from the serial run",
            d.ts,
            d.proc.steps,
            d.proc.reads,
            d.proc.writes
        );
    }
    // Each evaluation that was given back ran the logic once more.
    assert_eq!(runs, n as u64 + stats.blocked, "{cfg:?}: runs of the logic against {stats:?}");
    assert_eq!(contents(db, tabs), model.rows, "{cfg:?}: the data differs from the serial run");
    Checked { done: feed.done, stats }
}

/// Configurations: (cc threads, exec threads, batch size, batches in flight).
const SPLITS: [(usize, usize, usize, usize); 12] = [
    (1, 1, 1, 2),
    (1, 2, 1, 2),
    (2, 2, 2, 2),
    (1, 3, 3, 3),
    (3, 2, 5, 2),
    (2, 4, 4, 4),
    (4, 1, 2, 3),
    (2, 2, 64, 2),
    (1, 2, 500, 2),
    (64, 3, 5, 2),
    (2, 8, 3, 2),
    (1, 2, 1, 64),
];

fn cfg((cc_threads, exec_threads, batch_size, batches_in_flight): (usize, usize, usize, usize)) -> Config {
    Config { cc_threads, exec_threads, batch_size, batches_in_flight }
}
