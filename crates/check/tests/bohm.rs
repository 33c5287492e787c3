//! BOHM under the checker: random transactions (reads, read-modify-writes,
//! increments, blind writes, inserts, deletes, failures of the logic,
//! undeclared accesses) over a small hot set of records run through the
//! pipeline with history recording on, over several splits of the threads
//! and seeds. The recorded history must be serializable, and the log order
//! must be the serialization order: replaying the transactions in
//! timestamp order on a model, every recorded read (of committed and
//! aborted transactions alike: all read at their timestamp) names exactly
//! the version the model holds at that point, every increment wrote one
//! more than it, and the model ends equal to the data.
//!
//! And the checks must be able to fail: a history tampered into a lost
//! update is rejected by both the checker and the replay.
//!
//! Sizes are modest by default; `MULTIVERSE_LONG=1` runs 20 times more
//! transactions (and `MULTIVERSE_STRESS=N` multiplies that).

use multiverse::protocol::bohm::{Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
use multiverse::research::history::{History, Op, Outcome as HOutcome, TxnRecord, WriteKind, Writer};
use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, TableId, TableSpec};
use multiverse_check::{check, Class};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Records per table; the first `INITIAL` exist at the start.
const KEYS: u64 = 8;
const INITIAL: u64 = 6;

fn scale() -> usize {
    let long = std::env::var("MULTIVERSE_LONG").is_ok_and(|v| !v.is_empty() && v != "0");
    let stress = std::env::var("MULTIVERSE_STRESS").ok().and_then(|s| s.parse().ok()).unwrap_or(1usize).max(1);
    (if long { 20 } else { 1 }) * stress
}

/// A value: a counter and a tag. Increments add one to the counter and
/// tag their value `INCR`; every other write stores a counter unique to
/// it, tagged `PLAIN`.
const PLAIN: u64 = 0;
const INCR: u64 = 1;

fn val(counter: u64, tag: u64) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&counter.to_le_bytes());
    v[8..].copy_from_slice(&tag.to_le_bytes());
    v
}

fn counter(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[..8].try_into().unwrap())
}

fn tag(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[8..16].try_into().unwrap())
}

#[derive(Clone, Copy, Debug)]
enum ROp {
    /// A point read.
    Read,
    /// A read, then an update with a fresh value.
    Rmw,
    /// `modify`: the counter plus one (the read is not recorded).
    Incr,
    /// An update without a read.
    Blind,
    Insert,
    Delete,
}

/// A random transaction.
struct Random {
    ops: Vec<(ROp, TableId, u64)>,
    /// Fresh counters for its writes: `base + position`.
    base: u64,
    /// The logic fails at the end (after its writes).
    fail: bool,
    /// A read of a record it did not declare, before the end.
    sneak: Option<(TableId, u64)>,
}

#[derive(Debug)]
enum Stop {
    Fail,
    Engine(Error),
}

impl Procedure for Random {
    type Error = Stop;
    fn declare(&self, a: &mut AccessSet) {
        a.reads.clear();
        a.writes.clear();
        for &(op, t, k) in &self.ops {
            match op {
                ROp::Read => a.reads.push((t, Key::from(k))),
                ROp::Rmw => {
                    a.reads.push((t, Key::from(k)));
                    a.writes.push((t, Key::from(k)));
                }
                _ => a.writes.push((t, Key::from(k))),
            }
        }
    }
    fn run(&mut self, tx: &mut ExecTxn<'_>) -> Result<(), Stop> {
        for (i, &(op, t, k)) in self.ops.iter().enumerate() {
            let key = Key::from(k);
            let fresh = val(self.base + i as u64, PLAIN);
            let r = match op {
                ROp::Read => tx.get_with(t, &key, |_| ()).map(drop),
                ROp::Rmw => match tx.get_with(t, &key, counter) {
                    Ok(Some(_)) => tx.update(t, &key, fresh),
                    Ok(None) => Ok(()),
                    Err(e) => Err(e),
                },
                ROp::Incr => tx.update_with(t, &key, |old, new| new.extend_from_slice(&val(counter(old) + 1, INCR))),
                ROp::Blind => tx.update(t, &key, fresh),
                ROp::Insert => tx.insert(t, key, fresh),
                ROp::Delete => tx.delete(t, &key),
            };
            match r {
                Ok(()) | Err(Error::DuplicateKey) | Err(Error::KeyNotFound) => {}
                Err(e) => return Err(Stop::Engine(e)),
            }
            if i == 0 {
                if let Some((t, k)) = self.sneak {
                    // Swallowed: the engine refuses the transaction anyway.
                    let _ = tx.get_with(t, Key::from(k), |_| ());
                }
            }
        }
        if self.fail {
            return Err(Stop::Fail);
        }
        Ok(())
    }
}

struct RandomFeed {
    rng: SmallRng,
    tables: [TableId; 2],
    left: usize,
    next_base: u64,
    done: Vec<(u64, bool, bool)>,
    /// An outcome that is neither a commit, a failure of the logic nor a
    /// refusal for an undeclared access.
    unexpected: Option<String>,
}

impl RandomFeed {
    fn new(seed: u64, tables: [TableId; 2], n: usize) -> RandomFeed {
        RandomFeed {
            rng: SmallRng::seed_from_u64(seed),
            tables,
            left: n,
            next_base: 1 << 32,
            done: Vec::new(),
            unexpected: None,
        }
    }
}

impl Feed<Random> for RandomFeed {
    fn next(&mut self, _idle: bool) -> Next<Random> {
        if self.left == 0 {
            return Next::Stop;
        }
        self.left -= 1;
        let rng = &mut self.rng;
        let ops: Vec<(ROp, TableId, u64)> = (0..rng.gen_range(1..=5))
            .map(|_| {
                let op = match rng.gen_range(0..100) {
                    0..=24 => ROp::Read,
                    25..=49 => ROp::Rmw,
                    50..=64 => ROp::Incr,
                    65..=74 => ROp::Blind,
                    75..=87 => ROp::Insert,
                    _ => ROp::Delete,
                };
                (op, self.tables[rng.gen_range(0..2)], rng.gen_range(0..KEYS))
            })
            .collect();
        let fail = rng.gen_bool(0.08);
        // Records beyond KEYS are never declared.
        let sneak = rng.gen_bool(0.03).then(|| (self.tables[0], KEYS + 1));
        let base = self.next_base;
        self.next_base += 16;
        Next::Txn(Random { ops, base, fail, sneak })
    }
    fn done(&mut self, d: Done<Random>) {
        let (committed, failed) = match d.outcome {
            Outcome::Committed => (true, false),
            Outcome::Aborted(Stop::Fail) => (false, true),
            Outcome::Refused(Error::NotDeclared(_)) if d.proc.sneak.is_some() => (false, false),
            Outcome::Aborted(Stop::Engine(ref e)) => {
                self.unexpected.get_or_insert_with(|| format!("T{}: the logic failed: {e}", d.ts));
                (false, false)
            }
            ref o => {
                self.unexpected.get_or_insert_with(|| format!("T{}: {o:?}", d.ts));
                (false, false)
            }
        };
        self.done.push((d.ts, committed, failed));
    }
}

/// The model's row: the timestamp of its writer and its value.
type Rows = BTreeMap<(u32, Key), (u64, Vec<u8>)>;

struct Setup {
    db: Database,
    tables: [TableId; 2],
    /// The tables' numbers in histories.
    numbers: [u32; 2],
    /// The rows as loaded, with the loader's commit timestamp.
    initial: Rows,
}

/// A recording database with the initial rows, loaded with recording off.
fn setup() -> Setup {
    let db = Database::new(Options { protocol: Protocol::Bohm, record_history: true, ..Options::default() }).unwrap();
    let tables =
        [db.create_table(TableSpec::hash("h", 64)).unwrap().table(), db.create_table(TableSpec::ordered("o")).unwrap()];
    let numbers = table_numbers(&db, tables);
    db.set_recording(false);
    let mut tx = db.begin(Isolation::Serializable).unwrap();
    let mut initial = Vec::new();
    for (t, no) in tables.into_iter().zip(numbers) {
        for k in 0..INITIAL {
            let v = val(k * 100, PLAIN);
            tx.insert(t, Key::from(k), v).unwrap();
            initial.push(((no, Key::from(k)), v.to_vec()));
        }
    }
    let ts = tx.commit().unwrap().commit_ts;
    db.set_recording(true);
    let initial = initial.into_iter().map(|(k, v)| (k, (ts, v))).collect();
    Setup { db, tables, numbers, initial }
}

/// The numbers histories name the tables by (read off a recorded
/// transaction, which is then dropped from the history).
fn table_numbers(db: &Database, tables: [TableId; 2]) -> [u32; 2] {
    let mut tx = db.begin(Isolation::Serializable).unwrap();
    for t in tables {
        tx.get(t, Key::from(0)).unwrap();
    }
    tx.commit().unwrap();
    let h = db.take_history();
    let nos: Vec<u32> = h.txns[0]
        .ops
        .iter()
        .map(|op| match op {
            Op::Read { table, .. } => *table,
            op => panic!("unexpected {op:?}"),
        })
        .collect();
    [nos[0], nos[1]]
}

/// Replays `h` in timestamp order from `initial`: every read must name the
/// version the model holds at that point, every write must be possible
/// there (an insert of an absent row, an update or delete of a present
/// one), and every increment must add one. Returns the final rows.
fn replay(h: &History, initial: &Rows) -> Result<Rows, String> {
    let mut txns: Vec<&TxnRecord> = h.txns.iter().collect();
    txns.sort_by_key(|t| t.begin_ts);
    let mut rows = initial.clone();
    for pair in txns.windows(2) {
        if pair[0].begin_ts == pair[1].begin_ts {
            return Err(format!("two transactions at timestamp {}", pair[0].begin_ts));
        }
    }
    for t in txns {
        let ts = t.begin_ts;
        if t.id != ts {
            return Err(format!(
                "T{} has begin timestamp {ts}: a pipeline transaction is named by its log position",
                t.id
            ));
        }
        match (t.outcome, t.commit_ts) {
            (HOutcome::Committed, Some(c)) if c == ts => {}
            (HOutcome::Aborted(_), None) => {}
            (o, c) => return Err(format!("T{ts}: {o:?} with commit timestamp {c:?}")),
        }
        // Its own writes, over `rows`.
        let mut mine: HashMap<(u32, Key), Option<Vec<u8>>> = HashMap::new();
        for op in &t.ops {
            match op {
                Op::Read { table, key, version } => {
                    let k = (*table, key.clone());
                    let expect = match mine.get(&k) {
                        Some(own) => own.clone().map(|v| (Writer::Committed(ts), v)),
                        None => rows.get(&k).map(|(w, v)| (Writer::Committed(*w), v.clone())),
                    };
                    if *version != expect {
                        return Err(format!("T{ts} read {k:?} as {version:?}; in the log order it is {expect:?}"));
                    }
                }
                Op::Write { table, key, kind, value } => {
                    let k = (*table, key.clone());
                    let old: Option<Vec<u8>> = match mine.get(&k) {
                        Some(own) => own.clone(),
                        None => rows.get(&k).map(|(_, v)| v.clone()),
                    };
                    match (kind, &old) {
                        (WriteKind::Insert, None) | (WriteKind::Update | WriteKind::Delete, Some(_)) => {}
                        _ => return Err(format!("T{ts}: {kind:?} of {k:?}, which holds {old:?} in the log order")),
                    }
                    if *kind == WriteKind::Update && tag(value) == INCR {
                        let before = counter(old.as_deref().unwrap());
                        if counter(value) != before + 1 {
                            return Err(format!(
                                "T{ts} incremented {k:?} to {}; in the log order it held {before}",
                                counter(value)
                            ));
                        }
                    }
                    mine.insert(k, (*kind != WriteKind::Delete).then(|| value.clone()));
                }
                Op::Scan { .. } => return Err(format!("T{ts} recorded a scan, which BOHM refuses")),
            }
        }
        if t.outcome == HOutcome::Committed {
            for (k, v) in mine {
                match v {
                    Some(v) => rows.insert(k, (ts, v)),
                    None => rows.remove(&k),
                };
            }
        }
    }
    Ok(rows)
}

/// The data, read with recording off.
fn contents(s: &Setup) -> BTreeMap<(u32, Key), Vec<u8>> {
    s.db.set_recording(false);
    let mut got = BTreeMap::new();
    let mut tx = s.db.begin(Isolation::Serializable).unwrap();
    for (t, no) in s.tables.into_iter().zip(s.numbers) {
        tx.scan(s.db.primary(t), .., None, |k, v| {
            got.insert((no, k.clone()), v.to_vec());
            true
        })
        .unwrap();
    }
    tx.commit().unwrap();
    s.db.set_recording(true);
    got
}

const SPLITS: [(usize, usize, usize, usize); 6] =
    [(1, 1, 1, 2), (1, 2, 1, 2), (2, 2, 3, 2), (1, 3, 4, 3), (3, 2, 16, 4), (2, 4, 2, 2)];

/// One random run; returns the setup, the history and what came back.
fn random_run(split: (usize, usize, usize, usize), seed: u64, n: usize) -> (Setup, History, RandomFeed) {
    let s = setup();
    let (cc_threads, exec_threads, batch_size, batches_in_flight) = split;
    let cfg = Config { cc_threads, exec_threads, batch_size, batches_in_flight };
    let (feed, stats) = s.db.bohm_run(cfg, RandomFeed::new(seed, s.tables, n)).unwrap();
    assert_eq!(stats.txns as usize, n);
    assert_eq!(feed.unexpected, None, "{cfg:?} seed {seed}");
    let h = s.db.take_history();
    (s, h, feed)
}

/// Random runs over several splits of the threads and seeds: serializable,
/// in log order, and deterministic: a stream gives the same history (the
/// same reads, writes and outcomes at the same timestamps) under every
/// split.
#[test]
fn random_runs_are_serializable_in_log_order() {
    let n = 1500 * scale();
    for seed in 1..=3u64 {
        let mut first: Option<Vec<TxnRecord>> = None;
        for split in SPLITS {
            let (s, h, feed) = random_run(split, seed, n);
            // Every transaction is recorded, with its outcome.
            assert_eq!(h.txns.len(), n, "{split:?} seed {seed}");
            let by_ts: HashMap<u64, &TxnRecord> = h.txns.iter().map(|t| (t.begin_ts, t)).collect();
            for &(ts, committed, _) in &feed.done {
                let t = by_ts.get(&ts).unwrap_or_else(|| panic!("T{ts} is not in the history"));
                assert_eq!(t.outcome == HOutcome::Committed, committed, "T{ts}");
            }
            let report = check(&h, Isolation::Serializable);
            assert!(report.ok(), "{split:?} seed {seed}:\n{report}");
            let rows = replay(&h, &s.initial).unwrap_or_else(|e| panic!("{split:?} seed {seed}: {e}"));
            let rows: BTreeMap<(u32, Key), Vec<u8>> = rows.into_iter().map(|(k, (_, v))| (k, v)).collect();
            assert_eq!(rows, contents(&s), "{split:?} seed {seed}: the replay ends elsewhere than the data");
            let committed = feed.done.iter().filter(|d| d.1).count();
            let failed = feed.done.iter().filter(|d| d.2).count();
            let refused = n - committed - failed;
            assert!(committed > n / 2 && failed > 0 && refused > 0, "a poor mix: {committed} {failed} {refused}");
            eprintln!(
                "{split:?} seed {seed}: {committed} committed, {failed} failed, {refused} refused; {:?}",
                report.stats
            );
            let mut txns = h.txns;
            txns.sort_by_key(|t| t.begin_ts);
            match &first {
                None => first = Some(txns),
                Some(f) => {
                    let at = f.iter().zip(&txns).position(|(a, b)| a != b);
                    assert!(
                        at.is_none(),
                        "{split:?} seed {seed}: the history differs from the first split's at {at:?}"
                    );
                }
            }
        }
    }
}

/// In a recorded run, a committed transaction `b` that read record `k` as
/// written by committed `a`, which had itself read `k` before writing it,
/// and that then wrote `k`: rewriting `b`'s read to name the version `a`
/// read makes a lost update.
fn tamper(h: &History) -> Option<History> {
    let by_commit: HashMap<u64, usize> =
        h.txns.iter().enumerate().filter_map(|(i, t)| t.commit_ts.map(|c| (c, i))).collect();
    for (bi, b) in h.txns.iter().enumerate() {
        if b.outcome != HOutcome::Committed {
            continue;
        }
        for (ri, op) in b.ops.iter().enumerate() {
            let Op::Read { table, key, version: Some((Writer::Committed(wa), _)) } = op else { continue };
            let writes_after =
                b.ops[ri..].iter().any(|o| matches!(o, Op::Write { table: t, key: k, .. } if t == table && k == key));
            let Some(&ai) = by_commit.get(wa) else { continue };
            let a = &h.txns[ai];
            let a_read = a.ops.iter().find_map(|o| match o {
                Op::Read { table: t, key: k, version: Some(v) } if t == table && k == key => Some(v.clone()),
                _ => None,
            });
            if let (true, Some(before)) = (writes_after, a_read) {
                let mut h = h.clone();
                h.txns[bi].ops[ri] = Op::Read { table: *table, key: key.clone(), version: Some(before) };
                return Some(h);
            }
        }
    }
    None
}

/// The checks can fail: a lost update planted in a real history is caught
/// by the checker (a cycle) and by the replay (a read out of log order).
#[test]
fn a_tampered_history_is_rejected() {
    let (s, h, _) = random_run((2, 2, 4, 2), 99, 1500);
    assert!(check(&h, Isolation::Serializable).ok());
    assert!(replay(&h, &s.initial).is_ok());
    let bad = tamper(&h).expect("no read-modify-write followed another on the same record");
    let report = check(&bad, Isolation::Serializable);
    assert!(!report.ok(), "the checker accepted a lost update:\n{report}");
    let cycles = [Class::GSingle, Class::G2Item, Class::G2];
    assert!(report.forbidden().any(|a| cycles.contains(&a.class)), "{report}");
    let e = replay(&bad, &s.initial).expect_err("the replay accepted a read out of log order");
    assert!(e.contains("in the log order"), "{e}");
}

/// A history holding interactive transactions and pipeline transactions
/// names each transaction once. The transaction table gives interactive
/// transactions ids (generation << 12 | slot) that pipeline timestamps
/// reach after a few thousand transactions: every BOHM transaction must
/// be named by its log position in the history.
#[test]
fn interactive_and_pipeline_transactions_have_distinct_ids() {
    let s = setup();
    let t = s.tables[0];
    // A recorded interactive transaction, with its id.
    let mut tx = s.db.begin(Isolation::Serializable).unwrap();
    let id = tx.id();
    tx.get(t, Key::from(0)).unwrap();
    tx.commit().unwrap();
    // Enough pipeline transactions that their timestamps pass that id.
    let n = id as usize + 100;
    let cfg = Config { cc_threads: 1, exec_threads: 1, batch_size: 1000, batches_in_flight: 2 };
    let (feed, _) = s.db.bohm_run(cfg, ReadOnly { t, left: n }).unwrap();
    assert_eq!(feed.left, 0);
    let h = s.db.take_history();
    assert_eq!(h.txns.len(), n + 1);
    let mut seen = HashSet::new();
    let dup: Vec<u64> = h.txns.iter().map(|t| t.id).filter(|id| !seen.insert(*id)).collect();
    let report = check(&h, Isolation::Serializable);
    assert!(dup.is_empty() && report.ok(), "ids recorded twice: {dup:?}\n{report}");
}

/// Reads record 0 of its table.
struct Reader(TableId);

impl Procedure for Reader {
    type Error = Error;
    fn declare(&self, a: &mut AccessSet) {
        a.reads.clear();
        a.writes.clear();
        a.reads.push((self.0, Key::from(0)));
    }
    fn run(&mut self, tx: &mut ExecTxn<'_>) -> Result<(), Error> {
        tx.get_with(self.0, Key::from(0), |_| ()).map(drop)
    }
}

struct ReadOnly {
    t: TableId,
    left: usize,
}

impl Feed<Reader> for ReadOnly {
    fn next(&mut self, _: bool) -> Next<Reader> {
        if self.left == 0 {
            return Next::Stop;
        }
        self.left -= 1;
        Next::Txn(Reader(self.t))
    }
    fn done(&mut self, _: Done<Reader>) {}
}
