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
//! The last section ("Found problems") keeps the tests of problems these
//! tests found, now fixed: a declaration that inherited the previous one
//! at its log position, and panics (in a procedure, a feed, a server's
//! closure) that left the pipeline waiting forever. The panic tests wait
//! a few seconds on a thread of their own, so that a hang fails the test
//! instead of the whole suite.
//!
//! Sizes are modest by default; `MULTIVERSE_LONG=1` makes the randomized
//! runs 20 times longer (and `MULTIVERSE_STRESS=N` multiplies that).

mod common;

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

// ----------------------------------------------------------------------
// Dependency chains
// ----------------------------------------------------------------------

/// Many transactions read-modify-write one hot record, or carry a value
/// from record to record around a ring of keys (in both tables), over
/// small batches and several splits of the threads: every read and every
/// final value is the serial one. With one execution thread nothing ever
/// waits; with more, some evaluation waits or recurses.
#[test]
fn placeholder_chains_follow_the_log_order() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let ring: Vec<K> = vec![(0, 0), (0, 1), (1, 0), (0, 2), (1, 1)];
    let rows: Vec<(K, u64)> = ring.iter().map(|&k| (k, k.1 + 1)).collect();
    load(&db, tabs, &mut model, &rows);
    let hot = ring[0];
    let mut rng = Rng(11);
    let mut contended = 0;
    let n = 3000 * scale();
    for split in SPLITS {
        let cfg = cfg(split);
        let scripts = (0..n)
            .map(|_| {
                let c = rng.below(1000);
                let steps = match rng.below(4) {
                    0 => vec![Step::Get(hot), Step::Mix(hot, c), Step::Get(hot)],
                    1 => vec![Step::Mix(hot, c)],
                    2 => {
                        let i = rng.below(ring.len() as u64) as usize;
                        vec![Step::Carry(ring[i], ring[(i + 1) % ring.len()], c)]
                    }
                    _ => {
                        // Along the ring: each hop reads what the last wrote.
                        let i = rng.below(ring.len() as u64) as usize;
                        (0..3)
                            .map(|h| Step::Carry(ring[(i + h) % ring.len()], ring[(i + h + 1) % ring.len()], c))
                            .collect()
                    }
                };
                let mut s = Script::new(tabs, steps);
                // Sometimes a read of a record it also writes.
                if rng.pct(30) {
                    let w = s.writes.clone();
                    s = s.also(&w, &[]);
                }
                if rng.pct(30) {
                    s = s.careless();
                }
                s
            })
            .collect();
        let r = run_checked(&db, tabs, cfg, scripts, &mut model);
        eprintln!("{cfg:?}: {:?}", r.stats);
        if cfg.exec_threads == 1 {
            // In log order on one thread, every value read is produced.
            assert_eq!((r.stats.blocked, r.stats.recursive), (0, 0), "{cfg:?}");
        } else {
            contended += r.stats.blocked + r.stats.recursive;
        }
    }
    assert!(contended > 0, "no evaluation ever found a value not produced yet");
    assert_eq!(db.stats().versions_alive, model.rows.len() as u64, "{:?}", db.stats());
}

/// One long chain in one big batch: recursive evaluation goes deeper than
/// its bound (`MAX_DEPTH`) and falls back to waiting; the result is still
/// the serial one.
#[test]
fn long_chains_in_one_batch() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    load(&db, tabs, &mut model, &[((0, 0), 1)]);
    for split in [(1, 2, 2000, 2), (2, 3, 700, 3), (1, 4, 4000, 2)] {
        let cfg = cfg(split);
        let scripts = (0..4000 * scale() as u64).map(|c| Script::new(tabs, vec![Step::Mix((0, 0), c)])).collect();
        run_checked(&db, tabs, cfg, scripts, &mut model);
    }
}

// ----------------------------------------------------------------------
// Aborts
// ----------------------------------------------------------------------

/// Transactions whose logic fails after writing (updates, inserts,
/// deletes, several records): nothing they wrote remains, and the next
/// transactions, in the same batch or a later one, see the previous values.
#[test]
fn aborted_writes_vanish_inside_batches() {
    let (x, y, z) = ((0, 1), (0, 2), (1, 3));
    for split in [(1, 1, 12, 2), (1, 2, 12, 2), (2, 3, 12, 2), (1, 2, 1, 2), (2, 2, 5, 3), (3, 1, 3, 2)] {
        let cfg = cfg(split);
        let (db, tabs) = harness_db(Options::default());
        let mut model = Model::default();
        load(&db, tabs, &mut model, &[(x, 10), (y, 20)]);
        let s = |steps: Vec<Step>| Script::new(tabs, steps);
        let scripts = vec![
            s(vec![Step::Get(x), Step::Add(x, 1), Step::Fail]),
            s(vec![Step::Get(x), Step::Add(x, 2), Step::Get(x)]),
            s(vec![Step::Ins(z, 5), Step::Fail]),
            s(vec![Step::Get(z), Step::Ins(z, 7)]),
            s(vec![Step::Del(y), Step::Fail]),
            s(vec![Step::Get(y), Step::Del(y), Step::Get(y)]),
            s(vec![Step::Ins(y, 1), Step::Add(y, 1), Step::Fail]),
            s(vec![Step::Get(y), Step::Get(x)]),
            s(vec![Step::Put(x, 100), Step::Del(z), Step::Ins(y, 3), Step::Fail]),
            s(vec![Step::Get(x), Step::Get(z), Step::Get(y)]),
            // A declared write left unwritten, and a failure.
            s(vec![Step::Add(x, 1), Step::Fail]).also(&[], &[z]),
            s(vec![Step::Get(x), Step::Get(z)]),
        ];
        let r = run_checked(&db, tabs, cfg, scripts, &mut model);
        let seen: Vec<(End, Vec<Obs>)> = r.done.iter().map(|d| (end_of(&d.outcome), d.proc.seen.clone())).collect();
        use Obs::*;
        let expect = vec![
            (End::Abort, vec![Val(Some(10)), Wrote]),
            (End::Commit, vec![Val(Some(10)), Wrote, Val(Some(12))]),
            (End::Abort, vec![Wrote]),
            (End::Commit, vec![Val(None), Wrote]),
            (End::Abort, vec![Wrote]),
            (End::Commit, vec![Val(Some(20)), Wrote, Val(None)]),
            (End::Abort, vec![Wrote, Wrote]),
            (End::Commit, vec![Val(None), Val(Some(12))]),
            (End::Abort, vec![Wrote, Wrote, Wrote]),
            (End::Commit, vec![Val(Some(12)), Val(Some(7)), Val(None)]),
            (End::Abort, vec![Wrote]),
            (End::Commit, vec![Val(Some(12)), Val(Some(7))]),
        ];
        assert_eq!(seen, expect, "{cfg:?}");
        assert_eq!(contents(&db, tabs), BTreeMap::from([(x, 12), (z, 7)]), "{cfg:?}");
        assert_eq!(db.stats().versions_alive, 2, "{cfg:?}: {:?}", db.stats());
    }
}

/// Every third transaction increments the hot record and then fails; every
/// transaction reads it first: each read counts exactly the committed
/// increments before it.
#[test]
fn every_third_transaction_aborts() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let hot = (0, 0);
    load(&db, tabs, &mut model, &[(hot, 0)]);
    let n = 1500 * scale();
    for split in [(1, 2, 1, 2), (2, 2, 3, 2), (1, 3, 4, 4), (2, 2, 50, 2)] {
        let cfg = cfg(split);
        let start = model.rows[&hot];
        let before = db.stats();
        let scripts = (0..n)
            .map(|i| {
                let mut steps = vec![Step::Get(hot), Step::Add(hot, 1)];
                if i % 3 == 2 {
                    steps.push(Step::Fail);
                }
                Script::new(tabs, steps)
            })
            .collect();
        let r = run_checked(&db, tabs, cfg, scripts, &mut model);
        // The database counts the pipeline's commits and aborts (and the
        // interactive transaction that read the data back).
        let after = db.stats();
        assert_eq!(after.committed - before.committed, (n - n / 3) as u64 + 1, "{cfg:?}");
        assert_eq!(after.aborted() - before.aborted(), (n / 3) as u64, "{cfg:?}");
        for (i, d) in r.done.iter().enumerate() {
            let committed_before = (i - i / 3) as u64;
            assert_eq!(d.proc.seen[0], Obs::Val(Some(start + committed_before)), "{cfg:?}: #{i}");
            assert_eq!(d.outcome.is_committed(), i % 3 != 2, "{cfg:?}: #{i}");
        }
        assert_eq!(model.rows[&hot], start + (n - n / 3) as u64);
    }
    let stats = db.stats();
    assert!(stats.committed > 0 && stats.aborted() > 0, "{stats:?}");
}

// ----------------------------------------------------------------------
// Undeclared accesses
// ----------------------------------------------------------------------

/// A transaction that reads or writes a record it did not declare, writes
/// one it declared only as read, scans or looks up a secondary index ends
/// as `Refused(NotDeclared)`, whether its logic swallows the error and
/// returns `Ok` or passes it on; what it wrote first vanishes, and the
/// next transactions see the previous values.
#[test]
fn undeclared_accesses_are_refused() {
    let (x, y, w) = ((0, 1), (1, 1), (0, 9));
    for split in [(1, 1, 20, 2), (2, 3, 20, 2), (1, 2, 1, 2), (3, 2, 4, 3)] {
        let cfg = cfg(split);
        let (db, tabs) = harness_db(Options::default());
        let mut model = Model::default();
        load(&db, tabs, &mut model, &[(x, 1), (y, 2)]);
        let s = |steps: Vec<Step>| Script::new(tabs, steps);
        let scripts = vec![
            // A write of an undeclared record, after a declared one.
            s(vec![Step::Add(x, 1), Step::Put(y, 5)]).undeclared(&[], &[y]),
            s(vec![Step::Get(x), Step::Get(y)]),
            // A write of a record declared only as read.
            s(vec![Step::Add(x, 1), Step::Put(y, 5)]).undeclared(&[], &[y]).also(&[y], &[]),
            // A read of an undeclared record: same key number, other table.
            s(vec![Step::Add(x, 1), Step::Get(y)]).undeclared(&[y], &[]).also(&[(0, 1)], &[]),
            // An insert of an undeclared record.
            s(vec![Step::Ins(w, 3)]).undeclared(&[], &[w]),
            s(vec![Step::Get(w), Step::Get(x)]),
            // Scans and secondary lookups cannot be declared.
            s(vec![Step::Add(x, 1), Step::Scan]),
            s(vec![Step::Lookup, Step::Add(x, 1)]),
            // The logic passes the error on.
            s(vec![Step::Add(x, 1), Step::Get(w)]).undeclared(&[w], &[]).propagating(),
            s(vec![Step::Scan]).propagating(),
            // Refused first, then the logic fails on its own: still refused.
            s(vec![Step::Add(x, 1), Step::Get(w), Step::Fail]).undeclared(&[w], &[]),
            // Refused, then a declared insert: it vanishes too.
            s(vec![Step::Get((1, 9)), Step::Ins(w, 4)]).undeclared(&[(1, 9)], &[]),
            s(vec![Step::Get(x), Step::Get(y), Step::Get(w)]),
        ];
        let r = run_checked(&db, tabs, cfg, scripts, &mut model);
        let ends: Vec<End> = r.done.iter().map(|d| end_of(&d.outcome)).collect();
        let refused = End::Refuse(Why::Undeclared);
        assert_eq!(
            ends,
            vec![
                refused,
                End::Commit,
                refused,
                refused,
                refused,
                End::Commit,
                refused,
                refused,
                refused,
                refused,
                refused,
                refused,
                End::Commit
            ],
            "{cfg:?}"
        );
        assert_eq!(r.done[12].proc.seen, vec![Obs::Val(Some(1)), Obs::Val(Some(2)), Obs::Val(None)], "{cfg:?}");
        assert_eq!(contents(&db, tabs), BTreeMap::from([(x, 1), (y, 2)]), "{cfg:?}");
    }
}

/// Declarations longer than the linear search (a map is built): declared
/// records work, an undeclared one is still refused.
#[test]
fn large_declarations() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let rows: Vec<(K, u64)> = (0..40).map(|k| ((k % 2) as u8, k)).map(|k| (k, k.1)).collect();
    load(&db, tabs, &mut model, &rows);
    let keys: Vec<K> = rows.iter().map(|r| r.0).collect();
    let mut rng = Rng(5);
    let scripts: Vec<Script> = (0..300 * scale())
        .map(|i| {
            let steps: Vec<Step> = (0..20)
                .map(|_| {
                    let k = keys[rng.below(40) as usize];
                    match rng.below(3) {
                        0 => Step::Get(k),
                        1 => Step::Add(k, 1),
                        _ => Step::Mix(k, i as u64),
                    }
                })
                .collect();
            let mut s = Script::new(tabs, steps);
            // Declared twice, over and over.
            let again = s.writes.clone();
            s = s.also(&again, &again);
            if i % 10 == 3 {
                s.steps.insert(5, Step::Get((0, 77)));
            }
            if i % 10 == 7 {
                s.steps.push(Step::Put((1, 77), 1));
            }
            s
        })
        .collect();
    for split in [(1, 1, 8, 2), (2, 2, 3, 3)] {
        let r = run_checked(&db, tabs, cfg(split), scripts_clone(&scripts), &mut model);
        let refused = r.done.iter().filter(|d| matches!(d.outcome, Outcome::Refused(Error::NotDeclared(_)))).count();
        assert_eq!(refused, r.done.len() / 5);
    }
}

/// Long read sets (more declared reads than the linear search, few
/// writes) amid short writers that keep changing the records: read in
/// declared order (the read cursor), read twice in a row though declared
/// once, declared in another order than read (the map), declared twice,
/// with writes to records they read and with an undeclared read; every read
/// and the data agree with the serial run.
#[test]
fn long_read_sets() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let keys: Vec<K> = (0..64).map(|k| ((k % 2) as u8, k)).collect();
    let rows: Vec<(K, u64)> = keys.iter().map(|&k| (k, k.1)).collect();
    load(&db, tabs, &mut model, &rows);
    let mut rng = Rng(11);
    let pick = |rng: &mut Rng| keys[rng.below(keys.len() as u64) as usize];
    let mut refused_want = 0;
    let scripts: Vec<Script> = (0..600 * scale())
        .map(|i| {
            if i % 3 != 0 {
                // A short writer: the readers' versions keep changing.
                let (a, b) = (pick(&mut rng), pick(&mut rng));
                return Script::new(tabs, vec![Step::Add(a, 1), Step::Mix(b, i as u64)]);
            }
            let mut steps: Vec<Step> = (0..20 + rng.below(40)).map(|_| Step::Get(pick(&mut rng))).collect();
            match i / 3 % 6 {
                1 => {
                    // Read twice in a row, declared once.
                    let j = rng.below(steps.len() as u64) as usize;
                    steps.insert(j, steps[j]);
                    let mut s = Script::new(tabs, steps);
                    s.reads.remove(j);
                    return s;
                }
                2 => {
                    // Modify records it has read, and carry one to another.
                    for _ in 0..3 {
                        let j = rng.below(steps.len() as u64) as usize;
                        if let Step::Get(k) = steps[j] {
                            steps.insert(j + 1, Step::Add(k, 5));
                        }
                    }
                    steps.push(Step::Carry(pick(&mut rng), pick(&mut rng), 3));
                }
                3 => {
                    // Declared in another order than read.
                    let mut s = Script::new(tabs, steps);
                    for j in (1..s.reads.len()).rev() {
                        s.reads.swap(j, rng.below(j as u64 + 1) as usize);
                    }
                    return s;
                }
                4 => {
                    // Declared twice.
                    let s = Script::new(tabs, steps);
                    let again = s.reads.clone();
                    return s.also(&again, &[]);
                }
                5 => {
                    // An undeclared read among them.
                    refused_want += 1;
                    let mut s = Script::new(tabs, steps);
                    s.steps.insert(rng.below(s.steps.len() as u64) as usize, Step::Get((0, 99)));
                    return s;
                }
                _ => {}
            }
            Script::new(tabs, steps)
        })
        .collect();
    for split in [(1, 1, 8, 2), (2, 2, 3, 3), (1, 3, 50, 2)] {
        let r = run_checked(&db, tabs, cfg(split), scripts_clone(&scripts), &mut model);
        let refused = r.done.iter().filter(|d| matches!(d.outcome, Outcome::Refused(Error::NotDeclared(_)))).count();
        assert_eq!(refused, refused_want, "{split:?}");
    }
}

fn scripts_clone(scripts: &[Script]) -> Vec<Script> {
    scripts
        .iter()
        .map(|s| Script {
            steps: s.steps.clone(),
            reads: s.reads.clone(),
            writes: s.writes.clone(),
            seen: Vec::new(),
            runs: 0,
            ..*s
        })
        .collect()
}

// ----------------------------------------------------------------------
// Inserts, deletes, values too large
// ----------------------------------------------------------------------

/// Inserts, deletes and reinserts through the pipeline, with the errors
/// the logic sees (`DuplicateKey`, `KeyNotFound`), reads of the
/// transaction's own writes, and an insert and delete of one record in one
/// transaction; interactive transactions see the result, and exactly one
/// version per row remains.
#[test]
fn inserts_and_deletes_through_the_pipeline() {
    let k = |n: u64| (0u8, 100 + n);
    for split in [(1, 1, 10, 2), (2, 2, 1, 2), (1, 3, 3, 3), (3, 2, 2, 2)] {
        let cfg = cfg(split);
        let (db, tabs) = harness_db(Options::default());
        let mut model = Model::default();
        load(&db, tabs, &mut model, &[(k(8), 8), (k(7), 7)]);
        let s = |steps: Vec<Step>| Script::new(tabs, steps);
        let scripts = vec![
            s((0..5).map(|i| Step::Ins(k(i), i)).collect()),
            s(vec![Step::Ins(k(0), 9), Step::Ins(k(5), 5), Step::Get(k(5))]),
            s(vec![Step::Del(k(6)), Step::Put(k(6), 1), Step::Add(k(6), 1), Step::Get(k(6))]),
            s(vec![Step::Del(k(1)), Step::Get(k(1)), Step::Del(k(1))]),
            s(vec![Step::Get(k(1)), Step::Ins(k(1), 42), Step::Get(k(1))]),
            s(vec![Step::Ins(k(2), 0), Step::Del(k(2)), Step::Ins(k(2), 9), Step::Get(k(2))]),
            s(vec![Step::Ins(k(9), 9), Step::Get(k(9)), Step::Del(k(9)), Step::Get(k(9))]),
            s(vec![Step::Get(k(9)), Step::Del(k(8)), Step::Del(k(7)), Step::Ins(k(7), 70)]),
            s(vec![Step::Get(k(8)), Step::Ins(k(8), 80), Step::Del(k(3))]),
            s(vec![Step::Get(k(3)), Step::Add(k(3), 1), Step::Ins(k(3), 33), Step::Add(k(3), 1)]),
        ];
        let r = run_checked(&db, tabs, cfg, scripts, &mut model);
        use Obs::*;
        let seen: Vec<Vec<Obs>> = r.done.iter().map(|d| d.proc.seen.clone()).collect();
        assert_eq!(
            seen,
            vec![
                vec![Wrote; 5],
                vec![Dup, Wrote, Val(Some(5))],
                vec![Missing, Missing, Missing, Val(None)],
                vec![Wrote, Val(None), Missing],
                vec![Val(None), Wrote, Val(Some(42))],
                vec![Dup, Wrote, Wrote, Val(Some(9))],
                vec![Wrote, Val(Some(9)), Wrote, Val(None)],
                vec![Val(None), Wrote, Wrote, Wrote],
                vec![Val(None), Wrote, Wrote],
                vec![Val(None), Missing, Wrote, Wrote],
            ],
            "{cfg:?}"
        );
        assert!(r.done.iter().all(|d| d.outcome.is_committed()), "{cfg:?}");
        let expect = BTreeMap::from([
            (k(0), 0),
            (k(1), 42),
            (k(2), 9),
            (k(3), 34),
            (k(4), 4),
            (k(5), 5),
            (k(7), 70),
            (k(8), 80),
        ]);
        assert_eq!(contents(&db, tabs), expect, "{cfg:?}");
        for i in 0..10 {
            let mut tx = db.begin(Isolation::Serializable).unwrap();
            let got = tx.get(tabs.a, Key::from(k(i).1)).unwrap().map(|v| dec(&v));
            assert_eq!(got, expect.get(&k(i)).copied(), "{cfg:?}: key {i}");
            tx.commit().unwrap();
        }
        // Deleted records keep no version.
        assert_eq!(db.stats().versions_alive, expect.len() as u64, "{cfg:?}: {:?}", db.stats());
        // Interactive transactions go on from there.
        db.run(Isolation::Serializable, |tx| {
            tx.insert(tabs.a, Key::from(k(6).1), enc(6))?;
            tx.delete(tabs.a, Key::from(k(0).1))
        })
        .unwrap();
        model.rows.insert(k(6), 6);
        model.rows.remove(&k(0));
        let scripts = vec![s(vec![Step::Get(k(6)), Step::Get(k(0)), Step::Ins(k(0), 1), Step::Del(k(6))])];
        let r = run_checked(&db, tabs, cfg, scripts, &mut model);
        assert_eq!(r.done[0].proc.seen, vec![Val(Some(6)), Val(None), Wrote, Wrote], "{cfg:?}");
    }
}

/// A value larger than the database accepts refuses the transaction
/// (`ValueTooLarge`), whatever the logic does with the error.
#[test]
fn values_too_large_are_refused() {
    let (x, y) = ((0, 1), (1, 2));
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    load(&db, tabs, &mut model, &[(x, 1), (y, 2)]);
    let s = |steps: Vec<Step>| Script::new(tabs, steps);
    let scripts = vec![
        s(vec![Step::Add(y, 1), Step::Big(x)]),
        s(vec![Step::Get(x), Step::Get(y)]),
        s(vec![Step::Add(y, 1), Step::Big(x)]).propagating(),
        s(vec![Step::Big((0, 5))]),
        s(vec![Step::Add(x, 1)]),
    ];
    let r = run_checked(&db, tabs, cfg((2, 2, 2, 2)), scripts, &mut model);
    let ends: Vec<End> = r.done.iter().map(|d| end_of(&d.outcome)).collect();
    let big = End::Refuse(Why::TooLarge);
    assert_eq!(ends, vec![big, End::Commit, big, End::Commit, End::Commit]);
    assert_eq!(contents(&db, tabs), BTreeMap::from([(x, 2), (y, 2)]));
}

/// Random mixes of everything above (reads, read-modify-writes, chains,
/// updates, inserts, deletes, failures, undeclared accesses, values too
/// large, declared writes left unwritten, duplicate declarations) over a
/// small hot set of records, with feeds that sometimes have nothing to
/// give: the serial model agrees on every transaction.
#[test]
fn random_mixes_match_the_serial_model() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let keys: Vec<K> = (0..6).map(|k| (0u8, k)).chain((0..3).map(|k| (1u8, k))).collect();
    let rows: Vec<(K, u64)> = keys.iter().step_by(2).map(|&k| (k, k.1)).collect();
    load(&db, tabs, &mut model, &rows);
    let n = 2000 * scale();
    for (round, split) in SPLITS.into_iter().enumerate() {
        let mut rng = Rng(round as u64 * 7 + 1);
        let scripts = (0..n).map(|_| random_script(&mut rng, tabs, &keys)).collect();
        let wait_every = [0, 3, 0, 7][round % 4];
        let r = run_checked_waiting(&db, tabs, cfg(split), scripts, &mut model, wait_every);
        let mut ends = BTreeMap::new();
        for d in &r.done {
            *ends.entry(format!("{:?}", end_of(&d.outcome))).or_insert(0) += 1;
        }
        eprintln!("{:?}: {:?} {ends:?}", cfg(split), r.stats);
        assert!(ends.len() >= 3, "a poor mix: {ends:?}");
    }
    assert_eq!(db.stats().versions_alive, model.rows.len() as u64, "{:?}", db.stats());
}

fn random_script(rng: &mut Rng, tabs: Tabs, keys: &[K]) -> Script {
    let pick = |rng: &mut Rng| keys[rng.below(keys.len() as u64) as usize];
    let mut steps = Vec::new();
    for _ in 0..1 + rng.below(5) {
        let k = pick(rng);
        let v = rng.below(1000);
        steps.push(match rng.below(100) {
            0..=24 => Step::Get(k),
            25..=39 => Step::Mix(k, v),
            40..=49 => Step::Carry(k, pick(rng), v),
            50..=59 => Step::Put(k, v),
            60..=71 => Step::Ins(k, v),
            72..=83 => Step::Del(k),
            84..=89 => Step::Add(k, v),
            90..=93 => Step::Fail,
            94..=95 => Step::Scan,
            96 => Step::Lookup,
            _ => Step::Get(k),
        });
    }
    if rng.pct(3) {
        steps.push(Step::Big(pick(rng)));
    }
    let mut s = Script::new(tabs, steps);
    if rng.pct(5) {
        // Forget one declaration.
        let k = pick(rng);
        s = s.undeclared(&[k], &[k]);
    }
    if rng.pct(10) {
        // Declare a write it may leave unwritten.
        let k = pick(rng);
        s = s.also(&[], &[k]);
    }
    if rng.pct(10) {
        // Declare reads of records it writes, and everything twice.
        let (r, w) = (s.reads.clone(), s.writes.clone());
        s = s.also(&w, &[]).also(&r, &w);
    }
    if rng.pct(5) {
        s = s.propagating();
    } else if rng.pct(20) {
        s = s.careless();
    }
    s
}

// ----------------------------------------------------------------------
// Garbage collection
// ----------------------------------------------------------------------

/// Wraps a feed and checks, as transactions come back (during the run),
/// that the versions alive stay under a bound.
struct Bounded<'a> {
    inner: ScriptFeed,
    db: &'a Database,
    peak: u64,
}

impl Feed<Script> for Bounded<'_> {
    fn next(&mut self, idle: bool) -> Next<Script> {
        self.inner.next(idle)
    }
    fn done(&mut self, d: Done<Script>) {
        self.peak = self.peak.max(self.db.stats().versions_alive);
        self.inner.done(d);
    }
}

/// Many batches of updates (and of deletes and reinserts) over a small
/// table: during a run the versions alive stay within what the batches in
/// flight can hold, and at rest exactly one version per row remains, run
/// after run.
#[test]
fn garbage_collection_keeps_memory_flat() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let keys: Vec<K> = (0..16).map(|k| (0u8, k)).collect();
    let rows: Vec<(K, u64)> = keys.iter().map(|&k| (k, 0)).collect();
    load(&db, tabs, &mut model, &rows);
    let mut rng = Rng(3);
    for round in 0..12 {
        let split = [(1, 2, 16, 2), (2, 2, 40, 3), (1, 1, 5, 4)][round % 3];
        let cfg = cfg(split);
        let churn = round % 2 == 1;
        let scripts: Vec<Script> = (0..1500 * scale())
            .map(|_| {
                let (a, b) = (keys[rng.below(16) as usize], keys[rng.below(16) as usize]);
                let steps =
                    if churn { vec![Step::Del(a), Step::Ins(b, 1)] } else { vec![Step::Mix(a, 3), Step::Mix(b, 5)] };
                Script::new(tabs, steps)
            })
            .collect();
        // Two writes a transaction; what the batches in flight (and one
        // being planned) supersede, beyond one version per record.
        let bound = 32 + 2 * (cfg.batches_in_flight as u64 + 2) * cfg.batch_size as u64;
        let n = scripts.len();
        let feed = Bounded { inner: ScriptFeed::new(scripts, 0), db: &db, peak: 0 };
        let (feed, _) = db.bohm_run(cfg, feed).unwrap();
        feed.inner.check();
        assert_eq!(feed.inner.done.len(), n);
        assert!(feed.peak <= bound, "round {round} {cfg:?}: {} versions alive during a run, over {bound}", feed.peak);
        for d in &feed.inner.done {
            let (seen, end) = model.run(&d.proc);
            assert_eq!((end_of(&d.outcome), &d.proc.seen), (end, &seen));
        }
        let alive = db.stats().versions_alive;
        assert_eq!(alive, model.rows.len() as u64, "round {round} {cfg:?}: at rest, one version per row");
        eprintln!("round {round}: peak {} of bound {bound}, {alive} at rest", feed.peak);
    }
    assert_eq!(contents(&db, tabs), model.rows);
}

// ----------------------------------------------------------------------
// The server
// ----------------------------------------------------------------------

/// `bohm_serve` that fails (rather than hangs) when `f` panics: the panic
/// is caught, the server stops, and the panic goes on.
fn serve<P: Procedure, R>(db: &Database, cfg: Config, f: impl FnOnce(&Server<P>) -> R) -> R {
    let r = db.bohm_serve(cfg, |server| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(server)))).unwrap();
    r.unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// Several client threads call `execute` in loops: every transaction runs
/// once, in some order, and the data is what their effects add up to.
#[test]
fn server_answers_many_clients() {
    const CLIENTS: u64 = 4;
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let keys: Vec<K> = (0..5).map(|k| (0u8, k)).collect();
    load(&db, tabs, &mut model, &keys.iter().map(|&k| (k, 0)).collect::<Vec<_>>());
    let per_client = 1000 * scale() as u64;
    for split in [(1, 1, 1000, 2), (2, 2, 4, 2), (1, 3, 16, 3)] {
        let before = contents(&db, tabs);
        let done: Vec<Vec<Done<Script>>> = serve(&db, cfg(split), |server| {
            assert!(server.is_running());
            std::thread::scope(|s| {
                let keys = &keys;
                let hs: Vec<_> = (0..CLIENTS)
                    .map(|c| {
                        s.spawn(move || {
                            let mut rng = Rng(c + 100);
                            let mut mine = Vec::new();
                            for _ in 0..per_client {
                                let (a, b) = (keys[rng.below(5) as usize], keys[rng.below(5) as usize]);
                                let mut steps = vec![Step::Get(a), Step::Add(a, c + 1), Step::Add(b, 10 * (c + 1))];
                                let fail = rng.pct(10);
                                if fail {
                                    steps.push(Step::Fail);
                                }
                                let d = server.execute(Script::new(tabs, steps)).expect("the server is running");
                                assert_eq!(d.outcome.is_committed(), !fail);
                                mine.push(d);
                            }
                            mine
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            })
        });
        let mut all: Vec<&Done<Script>> = done.iter().flatten().collect();
        // Each client's transactions are in its order in the log.
        for mine in &done {
            assert!(mine.windows(2).all(|w| w[0].ts < w[1].ts));
        }
        all.sort_by_key(|d| d.ts);
        assert!(all.windows(2).all(|w| w[0].ts < w[1].ts), "timestamps are unique");
        // Replaying in timestamp order gives the same reads and data.
        let mut m = Model { rows: before.clone() };
        for d in &all {
            let (seen, end) = m.run(&d.proc);
            assert_eq!((end_of(&d.outcome), &d.proc.seen), (end, &seen), "T{}", d.ts);
        }
        assert_eq!(contents(&db, tabs), m.rows, "{split:?}");
        model = m;
    }
    assert_eq!(db.stats().versions_alive, model.rows.len() as u64);
}

/// A server answers a lone client at once (a batch closes when nobody else
/// is waiting), reports aborts and refusals, and hands back the closure's
/// result.
#[test]
fn server_reports_outcomes() {
    let (db, tabs) = harness_db(Options::default());
    let x = (0, 0);
    let mut model = Model::default();
    load(&db, tabs, &mut model, &[(x, 0)]);
    let r = serve(&db, cfg((1, 1, 10_000, 2)), |server: &Server<Script>| {
        let mut last = 0;
        for i in 0..200u64 {
            let s = match i % 4 {
                0 => Script::new(tabs, vec![Step::Add(x, 1)]),
                1 => Script::new(tabs, vec![Step::Add(x, 1), Step::Fail]),
                2 => Script::new(tabs, vec![Step::Add(x, 1), Step::Scan]),
                _ => Script::new(tabs, vec![Step::Get(x)]),
            };
            let d = server.execute(s).unwrap();
            assert!(d.ts > last);
            last = d.ts;
            match i % 4 {
                0 => assert!(d.outcome.is_committed()),
                1 => assert!(matches!(d.outcome, Outcome::Aborted(Stop::Fail))),
                2 => assert!(matches!(d.outcome, Outcome::Refused(Error::NotDeclared(_)))),
                _ => assert_eq!(d.proc.seen, vec![Obs::Val(Some(i / 4 + 1))]),
            }
        }
        last
    });
    // An interactive transaction comes right after everything the server ran.
    let tx = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(tx.begin_ts(), r + 1);
    assert_eq!(tx.commit().unwrap().commit_ts, r + 1);
    assert_eq!(contents(&db, tabs), BTreeMap::from([(x, 50)]));
}

/// Clients keep submitting while another thread shuts the server down:
/// every call returns either `Ok` (the transaction ran, and its effect is
/// there) or `ShuttingDown` (it did not run); the data is exactly the sum
/// of the answered effects.
#[test]
fn server_shutdown_with_transactions_in_flight() {
    const CLIENTS: usize = 4;
    for (round, split) in [(1, 1, 8, 2), (2, 3, 3, 3), (1, 2, 1000, 2)].into_iter().enumerate() {
        let (db, tabs) = harness_db(Options::default());
        let mut model = Model::default();
        let rows: Vec<(K, u64)> = (0..CLIENTS as u64).map(|c| ((0, c), 1000 * c)).collect();
        load(&db, tabs, &mut model, &rows);
        let shutdown_after = 100 + 150 * round as u64;
        let total = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let oks: Vec<u64> = serve(&db, cfg(split), |server| {
            let oks = std::thread::scope(|s| {
                let hs: Vec<_> = (0..CLIENTS)
                    .map(|c| {
                        let (total, stop) = (&total, &stop);
                        s.spawn(move || {
                            let _raise = RaiseOnDrop(stop);
                            let k = (0u8, c as u64);
                            let mut ok = 0u64;
                            loop {
                                let steps = vec![Step::Get(k), Step::Add(k, c as u64 + 1)];
                                match server.execute(Script::new(tabs, steps)) {
                                    Ok(d) => {
                                        assert!(d.outcome.is_committed());
                                        // It saw every answered increment before it.
                                        let want = 1000 * c as u64 + ok * (c as u64 + 1);
                                        assert_eq!(d.proc.seen[0], Obs::Val(Some(want)));
                                        ok += 1;
                                        total.fetch_add(1, Ordering::Relaxed);
                                    }
                                    Err(Error::ShuttingDown) => break,
                                    Err(e) => panic!("execute failed: {e}"),
                                }
                            }
                            ok
                        })
                    })
                    .collect();
                s.spawn(|| {
                    while total.load(Ordering::Relaxed) < shutdown_after && !stop.load(Ordering::Acquire) {
                        std::thread::yield_now();
                    }
                    server.shutdown();
                });
                hs.into_iter().map(|h| h.join().unwrap()).collect::<Vec<u64>>()
            });
            assert!(!server.is_running());
            let late = Script::new(tabs, vec![Step::Add((0, 0), 1)]);
            assert!(matches!(server.execute(late), Err(Error::ShuttingDown)));
            oks
        });
        assert!(oks.iter().sum::<u64>() >= shutdown_after);
        let expect: BTreeMap<K, u64> =
            (0..CLIENTS).map(|c| ((0u8, c as u64), 1000 * c as u64 + oks[c] * (c as u64 + 1))).collect();
        assert_eq!(contents(&db, tabs), expect, "{split:?}: answered {oks:?}");
    }
}

// ----------------------------------------------------------------------
// The gate between the pipeline and interactive transactions
// ----------------------------------------------------------------------

/// An interactive transaction begun while a server runs waits until the
/// server has stopped: it sees every transaction the server ran.
#[test]
fn interactive_transactions_wait_for_a_server() {
    let (db, t) = open(1);
    let (go, asking) = (AtomicBool::new(false), AtomicBool::new(false));
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            while !go.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            asking.store(true, Ordering::Release);
            value(&db, t, 0)
        });
        serve(&db, cfg((1, 2, 4, 2)), |server: &Server<Incr>| {
            // Let the reader go even if this panics.
            let _go = RaiseOnDrop(&go);
            // Once a transaction has run, the server holds the store.
            assert!(server.execute(Incr { t, keys: vec![0] }).unwrap().outcome.is_committed());
            go.store(true, Ordering::Release);
            while !asking.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            // The reader is beginning its transaction now.
            for _ in 0..200 {
                assert!(server.execute(Incr { t, keys: vec![0] }).unwrap().outcome.is_committed());
            }
        });
        assert_eq!(reader.join().unwrap(), Some(201));
    });
}

/// A pipeline started while an interactive transaction is open waits for
/// it: its transactions see the interactive write.
#[test]
fn a_pipeline_waits_for_interactive_transactions() {
    let (db, t) = open(1);
    let ready = AtomicBool::new(false);
    let mut tx = db.begin(Isolation::Serializable).unwrap();
    tx.update(t, Key::from(0), enc(100)).unwrap();
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            ready.store(true, Ordering::Release);
            db.bohm_run(cfg((1, 1, 1, 2)), Stream { t, left: 1, rows: 1, committed: 0, seed: 1 }).unwrap()
        });
        while !ready.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(10));
        tx.commit().unwrap();
        let (feed, _) = h.join().unwrap();
        assert_eq!(feed.committed, 1);
    });
    // Its one transaction adds 2 (it names record 0 twice) to what it read.
    assert_eq!(value(&db, t, 0), Some(102));
}

/// Interactive transactions that roll back (dropped, aborted, or failed
/// inside `Database::run`) release the store and leave nothing behind;
/// ones that commit inserts and deletes of one record keep exactly one
/// version per row. A pipeline then runs on what they left.
#[test]
fn interactive_transactions_under_bohm() {
    let (db, t) = open(2);
    let k = Key::from;
    let mut tx = db.begin(Isolation::Serializable).unwrap();
    tx.update(t, k(0), enc(5)).unwrap();
    tx.insert(t, k(7), enc(7)).unwrap();
    tx.delete(t, k(1)).unwrap();
    assert_eq!(tx.get(t, k(1)).unwrap(), None);
    drop(tx);
    let mut tx = db.begin(Isolation::Serializable).unwrap();
    tx.update(t, k(0), enc(9)).unwrap();
    tx.update(t, k(0), enc(10)).unwrap();
    tx.delete(t, k(1)).unwrap();
    tx.insert(t, k(1), enc(11)).unwrap();
    tx.abort();
    let r = db.run(Isolation::Serializable, |tx| {
        tx.update(t, k(0), enc(6))?;
        tx.insert(t, k(1), enc(6))
    });
    assert!(matches!(r, Err(Error::DuplicateKey)), "{r:?}");
    assert_eq!((value(&db, t, 0), value(&db, t, 1), value(&db, t, 7)), (Some(0), Some(0), None));
    assert_eq!(db.stats().versions_alive, 2, "{:?}", db.stats());
    // Insert and delete, delete and insert, in one transaction each.
    db.run(Isolation::Serializable, |tx| {
        tx.insert(t, k(7), enc(7))?;
        tx.update(t, k(7), enc(8))?;
        tx.delete(t, k(7))?;
        tx.delete(t, k(1))?;
        tx.insert(t, k(1), enc(1))?;
        assert_eq!(tx.get(t, k(7))?, None);
        Ok(())
    })
    .unwrap();
    assert_eq!((value(&db, t, 1), value(&db, t, 7)), (Some(1), None));
    assert_eq!(db.stats().versions_alive, 2, "{:?}", db.stats());
    let (feed, _) = db.bohm_run(cfg((2, 2, 2, 2)), Stream { t, left: 30, rows: 2, committed: 0, seed: 3 }).unwrap();
    assert_eq!(feed.committed, 30);
    assert_eq!(value(&db, t, 0).unwrap() + value(&db, t, 1).unwrap(), 1 + 60);
    assert_eq!(db.stats().versions_alive, 2, "{:?}", db.stats());
}

// ----------------------------------------------------------------------
// Errors and edge cases
// ----------------------------------------------------------------------

/// `bohm_run` and `bohm_serve` need a `bohm` database and a valid
/// configuration; they fail with `InvalidArgument` otherwise (without
/// calling the server's closure).
#[test]
fn bad_databases_and_configurations() {
    let other = Database::new(Options::default()).unwrap();
    let t = other.create_table(TableSpec::hash("t", 16)).unwrap().table();
    let feed = || Stream { t, left: 1, rows: 1, committed: 0, seed: 1 };
    assert!(matches!(other.bohm_run(Config::default(), feed()), Err(Error::InvalidArgument(_))));
    let called = AtomicBool::new(false);
    let r = other.bohm_serve(Config::default(), |_: &Server<Incr>| called.store(true, Ordering::Relaxed));
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
    assert!(!called.load(Ordering::Relaxed));

    let (db, t) = open(1);
    let feed = || Stream { t, left: 5, rows: 1, committed: 0, seed: 1 };
    let good = Config::default();
    let bad = [
        Config { cc_threads: 0, ..good },
        Config { cc_threads: 65, ..good },
        Config { exec_threads: 0, ..good },
        Config { batch_size: 0, ..good },
        Config { batches_in_flight: 1, ..good },
        Config { batches_in_flight: 0, ..good },
    ];
    for cfg in bad {
        let e = db.bohm_run(cfg, feed()).err();
        assert!(matches!(e, Some(Error::InvalidArgument(_))), "{cfg:?}: {e:?}");
        let r = db.bohm_serve(cfg, |_: &Server<Incr>| called.store(true, Ordering::Relaxed));
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{cfg:?}");
        assert!(!called.load(Ordering::Relaxed));
    }
    // Nothing ran; the bounds themselves are valid.
    assert_eq!(value(&db, t, 0), Some(0));
    for cfg in [Config { cc_threads: 64, batches_in_flight: 2, batch_size: 1, exec_threads: 1 }, good] {
        let (feed, stats) = db.bohm_run(cfg, feed()).unwrap();
        assert_eq!((feed.committed, stats.txns), (5, 5), "{cfg:?}");
    }
    assert_eq!(value(&db, t, 0), Some(20));
}

/// A feed that stops at once runs nothing; an empty transaction commits.
#[test]
fn empty_feeds_and_empty_transactions() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let r = run_checked(&db, tabs, Config::default(), Vec::new(), &mut model);
    assert_eq!((r.stats.txns, r.stats.batches), (0, 0));
    let r = run_checked(&db, tabs, cfg((2, 2, 2, 2)), (0..5).map(|_| Script::new(tabs, vec![])).collect(), &mut model);
    assert!(r.done.iter().all(|d| d.outcome.is_committed()));
    assert_eq!(db.stats().versions_alive, 0);
    // A server nobody calls.
    assert_eq!(db.bohm_serve(cfg((2, 2, 2, 2)), |_: &Server<Script>| 42).unwrap(), 42);
}

// ----------------------------------------------------------------------
// Found problems
// ----------------------------------------------------------------------

/// Declares its own record by pushing onto the access set it is given
/// (it does not clear it first: nothing says it must), then writes it and,
/// if it can, a record it did not declare.
struct Pushy {
    t: TableId,
    own: u64,
    other: u64,
}

impl Procedure for Pushy {
    type Error = Error;
    fn declare(&self, a: &mut AccessSet) {
        a.writes.push((self.t, Key::from(self.own)));
    }
    fn run(&mut self, tx: &mut ExecTxn<'_>) -> Result<(), Error> {
        tx.update(self.t, Key::from(self.own), enc(1))?;
        match tx.update(self.t, Key::from(self.other), enc(1)) {
            Err(Error::NotDeclared(_)) => Ok(()),
            r => r,
        }
    }
}

/// `Procedure::declare` is handed the access set of the log position's
/// previous transaction: a procedure that only adds its records inherits
/// the previous declaration, and its undeclared write is let through
/// instead of refused.
#[test]
fn declarations_start_empty() {
    let (db, t) = open(8);
    struct Feed8 {
        t: TableId,
        i: u64,
        done: Vec<Done<Pushy>>,
    }
    impl Feed<Pushy> for Feed8 {
        fn next(&mut self, _: bool) -> Next<Pushy> {
            if self.i == 16 {
                return Next::Stop;
            }
            self.i += 1;
            // Transaction i goes to log position i mod 4 (batches of 2, 2 in
            // flight); the one before it there declared `other`.
            Next::Txn(Pushy { t: self.t, own: self.i % 8, other: (self.i + 4) % 8 })
        }
        fn done(&mut self, d: Done<Pushy>) {
            self.done.push(d);
        }
    }
    let (feed, _) = db.bohm_run(cfg((1, 1, 2, 2)), Feed8 { t, i: 0, done: Vec::new() }).unwrap();
    let let_through: Vec<u64> = feed.done.iter().filter(|d| d.outcome.is_committed()).map(|d| d.ts).collect();
    assert!(let_through.is_empty(), "undeclared writes were let through (committed) in T{let_through:?}");
    assert!((0..8).all(|k| value(&db, t, k) == Some(0)));
}

/// A procedure that panics.
struct Panics;

impl Procedure for Panics {
    type Error = ();
    fn declare(&self, a: &mut AccessSet) {
        a.reads.clear();
        a.writes.clear();
    }
    fn run(&mut self, _: &mut ExecTxn<'_>) -> Result<(), ()> {
        panic!("a procedure panicked (on purpose)");
    }
}

struct OnePanic(bool);

impl Feed<Panics> for OnePanic {
    fn next(&mut self, _: bool) -> Next<Panics> {
        if std::mem::replace(&mut self.0, true) {
            Next::Stop
        } else {
            Next::Txn(Panics)
        }
    }
    fn done(&mut self, _: Done<Panics>) {}
}

/// Runs `f` on a thread of its own and says whether it ended (by
/// returning or panicking) within `secs`; a hung thread is left behind.
fn ends_within(secs: u64, f: impl FnOnce() + Send + 'static) -> bool {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r.is_err());
    });
    rx.recv_timeout(Duration::from_secs(secs)).is_ok()
}

/// A procedure that panics makes `bohm_run` panic (the pipeline's threads
/// are joined and the panic passed on), instead of leaving the run waiting
/// forever for the execution thread that died.
#[test]
fn a_panicking_procedure_ends_the_run() {
    let db = Arc::new(open(1).0);
    let ended = ends_within(5, move || {
        let _ = db.bohm_run(cfg((1, 1, 1, 2)), OnePanic(false));
    });
    assert!(ended, "bohm_run hangs after a procedure panicked");
}

/// A feed that panics when a transaction comes back.
struct PanickyFeed(TableId, u64);

impl Feed<Incr> for PanickyFeed {
    fn next(&mut self, _: bool) -> Next<Incr> {
        self.1 += 1;
        if self.1 > 10 {
            Next::Stop
        } else {
            Next::Txn(Incr { t: self.0, keys: vec![0] })
        }
    }
    fn done(&mut self, _: Done<Incr>) {
        panic!("a feed panicked (on purpose)");
    }
}

/// A feed that panics (on the sequencer thread, the caller's) makes
/// `bohm_run` panic, instead of leaving the pipeline's threads waiting for
/// batches that never come while the caller waits for them.
#[test]
fn a_panicking_feed_ends_the_run() {
    let (db, t) = open(1);
    let db = Arc::new(db);
    let ended = ends_within(5, move || {
        let _ = db.bohm_run(cfg((1, 1, 2, 2)), PanickyFeed(t, 0));
    });
    assert!(ended, "bohm_run hangs after its feed panicked");
}

/// A panic in `bohm_serve`'s closure stops the server and passes the
/// panic on, instead of leaving the sequencer waiting for a shutdown that
/// never comes.
#[test]
fn a_panicking_server_closure_ends_the_serve() {
    let (db, t) = open(1);
    let db = Arc::new(db);
    let ended = ends_within(5, move || {
        let _ = db.bohm_serve(cfg((1, 1, 4, 2)), |server: &Server<Incr>| {
            server.execute(Incr { t, keys: vec![0] }).unwrap();
            panic!("the closure panicked (on purpose)");
        });
    });
    assert!(ended, "bohm_serve hangs after its closure panicked");
}
