//! The damage suite ("durability you can trust"): a durable bank
//! is written once, cleanly closed, and then copies of its data directory
//! are damaged in every way a disk, a careless operator or a bad backup
//! can (torn and flipped log files, deleted files and streams, a file
//! duplicated or two swapped, a damaged manifest or checkpoint, and pairs
//! of these). Each damaged copy is opened, and recovery must either refuse
//! it with [`Error::Corrupt`] or return a prefix of the commits:
//!
//! * the accounts add up to exactly `TOTAL`, and every balance is the
//!   starting one plus the transfers whose acknowledgement rows survived
//!   (a transfer replayed without one it read from, or twice, shows);
//! * each thread's surviving transfers are its first `n`;
//! * anything lost is listed in [`RecoveryReport::dropped`] (except a
//!   clean cut that takes a stream's newest rounds whole: a crash before
//!   they were written looks the same), and a loss
//!   that a crash cannot explain (damage before the last file of a stream,
//!   a deleted, duplicated or reordered file) sets
//!   [`RecoveryReport::damaged`];
//! * whenever `damaged` is set, the default policy ([`OnDamage::Refuse`])
//!   refuses the same directory and leaves it exactly as it was, and
//!   [`OnDamage::KeepPrefix`] (asked for explicitly) deletes nothing: every
//!   byte of every data file of the damaged directory is still under it,
//!   in the quarantine folder the report names, whose `README.txt` lists
//!   every dropped line, through two more opens and a checkpoint; an open
//!   that finds no damage makes no quarantine folder;
//! * the recovered state is itself durable: a second open finds it whole,
//!   and commits made after the recovery survive a third.
//!
//! Also: a second open of a directory that a live database holds fails
//! with [`Error::Locked`] and harms nothing.
//!
//! 64 damaged copies by default (4 of each kind, over two directories:
//! two streams under sync durability, four under async with a final
//! flush); `MULTIVERSE_DAMAGE_ITERS=N` runs N, and
//! `MULTIVERSE_DAMAGE_SEED=S` runs the one case whose seed is S (printed
//! with every failure).

use multiverse::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

const ACCOUNTS: u64 = 100;
const START: u64 = 1000;
const TOTAL: u64 = ACCOUNTS * START;
/// The thread number of the transfers made after a recovery.
const LATER: u64 = 1000;

/// Every committed transfer: (thread, seq) -> (from, to, amount moved).
type Transfers = BTreeMap<(u64, u64), (u64, u64, u64)>;

fn schema(db: &Database) -> Result<()> {
    db.create_table(TableSpec::hash("acct", 128))?;
    db.create_table(TableSpec::ordered("acks"))?;
    Ok(())
}

#[derive(Clone, Copy, Debug)]
struct Config {
    streams: usize,
    threads: u64,
    per_thread: u64,
    durability: Durability,
}

/// Two streams, sync durability (the example).
const SYNC2: Config = Config { streams: 2, threads: 2, per_thread: 200, durability: Durability::Sync };
/// Four streams, async durability and a final flush: epochs hold many
/// records, and some streams may hold none.
const ASYNC4: Config = Config { streams: 4, threads: 3, per_thread: 150, durability: Durability::Async };

fn options(dir: &Path, c: &Config) -> Options {
    Options {
        protocol: Protocol::MvOcc,
        durability: c.durability,
        data_dir: Some(dir.to_path_buf()),
        log_streams: c.streams,
        log_rotate_bytes: 4096,
        checkpoint_every: None,
        checkpoint_log_bytes: None,
        // Keeping a damaged directory's prefix is asked for, never the default.
        on_damage: OnDamage::KeepPrefix,
        ..Options::default()
    }
}

// The pieces of the API this suite was written for.

fn refusing(o: Options) -> Options {
    Options { on_damage: OnDamage::Refuse, ..o }
}

/// `o` with the default damage policy (which must refuse).
fn by_default(o: Options) -> Options {
    Options { on_damage: Options::default().on_damage, ..o }
}

fn damaged(r: &RecoveryReport) -> bool {
    r.damaged
}

fn is_locked(e: &Error) -> bool {
    matches!(e, Error::Locked(_))
}

/// Gives every account its starting balance.
fn open_accounts(db: &Database) -> TableId {
    let acct = db.table("acct").unwrap();
    db.run(Isolation::Serializable, |t| {
        for a in 0..ACCOUNTS {
            t.insert(acct, Key::from(a), START.to_le_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    acct
}

fn num(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[..8].try_into().unwrap())
}

/// One transfer of thread `th`, number `seq`, acknowledged by the row
/// `th << 32 | seq` of `acks`; returns (from, to, amount moved).
fn transfer(db: &Database, th: u64, seq: u64, rng: &mut SmallRng) -> (u64, u64, u64) {
    let (acct, acks) = (db.table("acct").unwrap(), db.table("acks").unwrap());
    let (from, to, amount) = (rng.gen_range(0..ACCOUNTS), rng.gen_range(0..ACCOUNTS), rng.gen_range(1..10));
    loop {
        let mut t = db.begin(Isolation::Serializable).unwrap();
        let r = (|| {
            let x = num(&t.get(acct, Key::from(from))?.expect("an account"));
            let y = num(&t.get(acct, Key::from(to))?.expect("an account"));
            let moved = if from != to && x >= amount { amount } else { 0 };
            if moved > 0 {
                t.update(acct, Key::from(from), (x - moved).to_le_bytes())?;
                t.update(acct, Key::from(to), (y + moved).to_le_bytes())?;
            }
            t.insert(acks, Key::from(th << 32 | seq), seq.to_le_bytes())?;
            Ok(moved)
        })();
        match r.and_then(|moved| t.commit().map(|_| moved)) {
            Ok(moved) => return (from, to, moved),
            Err(e) if e.is_transient() => continue,
            Err(e) => panic!("transfer {th}/{seq}: {e}"),
        }
    }
}

/// A cleanly closed bank and every transfer it acknowledged.
struct Pristine {
    config: Config,
    dir: tempfile::TempDir,
    transfers: Transfers,
}

impl Pristine {
    fn build(config: Config) -> Pristine {
        // Threads pick their stream round-robin from a process-wide counter,
        // so other tests' threads may put ours on one stream: try again
        // until at least two streams rotated.
        for attempt in 0.. {
            let p = Pristine::build_once(config, attempt);
            let busy = listing(p.dir.path()).logs.values().filter(|files| files.len() >= 2).count();
            if busy >= 2 || attempt >= 4 {
                assert!(busy >= 1, "no stream rotated: {}", describe_dir(p.dir.path()));
                return p;
            }
        }
        unreachable!()
    }

    fn build_once(config: Config, attempt: u64) -> Pristine {
        let dir = tempfile::tempdir().unwrap();
        let (db, rep) = Database::open_with(options(dir.path(), &config), schema).unwrap();
        assert_eq!(rep.generation, 0);
        open_accounts(&db);
        // The accounts go into the checkpoint; the log holds the transfers.
        db.checkpoint().unwrap();
        let transfers = std::sync::Mutex::new(Transfers::new());
        std::thread::scope(|s| {
            for th in 0..config.threads {
                let (db, transfers) = (&db, &transfers);
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(th * 7919 + attempt);
                    for seq in 1..=config.per_thread {
                        let t = transfer(db, th, seq, &mut rng);
                        transfers.lock().unwrap().insert((th, seq), t);
                    }
                });
            }
        });
        db.flush_log().unwrap();
        drop(db);
        Pristine { config, dir, transfers: transfers.into_inner().unwrap() }
    }

    fn count(&self) -> u64 {
        self.transfers.len() as u64
    }
}

/// The bank as a database holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct State {
    balances: BTreeMap<u64, u64>,
    acks: BTreeSet<u64>,
}

fn state(db: &Database) -> State {
    let (acct, acks) = (db.table("acct").unwrap(), db.table("acks").unwrap());
    db.sync_commits().unwrap();
    let mut s = State { balances: BTreeMap::new(), acks: BTreeSet::new() };
    let mut t = db.begin_with(TxnOptions { read_only: true, ..TxnOptions::new(Isolation::Serializable) }).unwrap();
    t.scan(db.primary(acct), .., None, |k, v| {
        s.balances.insert(k.to_u64().unwrap(), num(v));
        true
    })
    .unwrap();
    t.scan(db.primary(acks), .., None, |k, _| {
        s.acks.insert(k.to_u64().unwrap());
        true
    })
    .unwrap();
    t.commit().unwrap();
    s
}

/// Checks that `s` is a prefix of the transfers in `all`: returns how
/// many it holds.
fn verify(s: &State, all: &Transfers) -> std::result::Result<u64, String> {
    let accounts: Vec<u64> = s.balances.keys().copied().collect();
    if accounts != (0..ACCOUNTS).collect::<Vec<_>>() {
        return Err(format!("{} accounts, expected 0..{ACCOUNTS}", accounts.len()));
    }
    let sum: u64 = s.balances.values().sum();
    if sum != TOTAL {
        return Err(format!("the accounts sum to {sum}, not {TOTAL}"));
    }
    let mut per_thread: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for &k in &s.acks {
        let (th, seq) = (k >> 32, k & 0xffff_ffff);
        if !all.contains_key(&(th, seq)) {
            return Err(format!("an acknowledgement of transfer {th}/{seq}, which never committed"));
        }
        per_thread.entry(th).or_default().push(seq);
    }
    for (th, seqs) in &per_thread {
        if let Some((i, &seq)) = seqs.iter().enumerate().find(|&(i, &seq)| seq != i as u64 + 1) {
            return Err(format!(
                "thread {th}'s transfers are not a prefix: {} of them, the {}th is number {seq}",
                seqs.len(),
                i + 1
            ));
        }
    }
    let mut expect: BTreeMap<u64, u64> = (0..ACCOUNTS).map(|a| (a, START)).collect();
    for &k in &s.acks {
        let (from, to, moved) = all[&(k >> 32, k & 0xffff_ffff)];
        *expect.get_mut(&from).unwrap() -= moved;
        *expect.get_mut(&to).unwrap() += moved;
    }
    let wrong: Vec<String> = expect
        .iter()
        .filter(|&(a, v)| s.balances[a] != *v)
        .take(5)
        .map(|(a, v)| format!("account {a} holds {} but its surviving transfers make {v}", s.balances[a]))
        .collect();
    if !wrong.is_empty() {
        return Err(format!(
            "the balances are not those of the {} surviving transfers (one was replayed without one it read, \
             or twice): {}",
            s.acks.len(),
            wrong.join("; ")
        ));
    }
    Ok(s.acks.len() as u64)
}

// ---------------------------------------------------------------------
// The files of a data directory, and damage to them
// ---------------------------------------------------------------------

/// Parses `log-<g>-<stream>-<seq>.mvl`.
fn log_name(name: &str) -> Option<(u64, u32, u32)> {
    let rest = name.strip_prefix("log-")?.strip_suffix(".mvl")?;
    let mut it = rest.split('-');
    let g = it.next()?.parse().ok()?;
    let s = it.next()?.parse().ok()?;
    let q = it.next()?.parse().ok()?;
    it.next().is_none().then_some((g, s, q))
}

#[derive(Debug, Default)]
struct Listing {
    /// The newest generation's log files per stream, in sequence order:
    /// (seq, name, size).
    logs: BTreeMap<u32, Vec<(u32, String, u64)>>,
    generation: u64,
    checkpoints: Vec<(String, u64)>,
    manifests: Vec<(String, u64)>,
}

fn listing(dir: &Path) -> Listing {
    let mut l = Listing::default();
    let mut logs = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        let size = e.metadata().unwrap().len();
        if let Some((g, s, q)) = log_name(&name) {
            logs.push((g, s, q, name, size));
        } else if name.starts_with("checkpoint-") && name.ends_with(".mvc") {
            l.checkpoints.push((name, size));
        } else if name.starts_with("manifest") {
            l.manifests.push((name, size));
        }
    }
    l.generation = logs.iter().map(|f| f.0).max().unwrap_or(0);
    logs.sort();
    for (g, s, q, name, size) in logs {
        if g == l.generation {
            l.logs.entry(s).or_default().push((q, name, size));
        }
    }
    l.checkpoints.sort();
    l.manifests.sort();
    l
}

fn describe_dir(dir: &Path) -> String {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            format!("{} ({} B)", e.file_name().to_string_lossy(), e.metadata().map(|m| m.len()).unwrap_or(0))
        })
        .collect();
    v.sort();
    v.join(", ")
}

/// Every file of a directory (not of its folders) and its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// The quarantine folders of a directory.
fn quarantines(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("quarantine-"))
        .collect();
    v.sort();
    v
}

/// Checks that nothing of the damaged directory `before` was deleted by
/// the open that reported `rep` on `dir` (see the module docs).
fn nothing_deleted(
    dir: &Path,
    before: &BTreeMap<String, Vec<u8>>,
    rep: &RecoveryReport,
) -> std::result::Result<(), String> {
    let folders = quarantines(dir);
    if !rep.damaged {
        return match (&rep.quarantine, folders.is_empty()) {
            (None, true) => Ok(()),
            _ => Err(format!("no damage, yet a quarantine: {:?}, folders {folders:?}", rep.quarantine)),
        };
    }
    let Some(q) = &rep.quarantine else { return Err("damaged, but no quarantine folder reported".into()) };
    let qname = q.file_name().unwrap().to_string_lossy().into_owned();
    if q.parent() != Some(dir) || !folders.contains(&qname) {
        return Err(format!("the quarantine {} is not a folder of {} ({folders:?})", q.display(), dir.display()));
    }
    let kept = snapshot(q);
    for (name, data) in before.iter().filter(|(n, _)| is_data(n)) {
        let here = snapshot(dir);
        if kept.get(name) != Some(data) && here.get(name) != Some(data) {
            return Err(format!("{name} ({} bytes) is gone: neither in the directory nor in {qname}", data.len()));
        }
    }
    let readme = std::fs::read_to_string(q.join("README.txt")).map_err(|e| format!("{qname}/README.txt: {e}"))?;
    match rep.dropped.iter().find(|l| !readme.contains(l.as_str())) {
        Some(l) => Err(format!("{qname}/README.txt lacks the dropped line {l:?}")),
        None => Ok(()),
    }
}

/// A file that holds data (not a lock file, say).
fn is_data(name: &str) -> bool {
    name.starts_with("log-") || name.starts_with("checkpoint-") || name.starts_with("manifest")
}

/// What changed in the data files between two snapshots; empty when
/// nothing did.
fn changes(before: &BTreeMap<String, Vec<u8>>, after: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, data) in before.iter().filter(|(n, _)| is_data(n)) {
        match after.get(name) {
            None => out.push(format!("{name} removed")),
            Some(d) if d != data => out.push(format!("{name} changed")),
            _ => {}
        }
    }
    for name in after.keys().filter(|n| is_data(n) && !before.contains_key(*n)) {
        out.push(format!("{name} created"));
    }
    out
}

fn copy_dir(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.path().join(e.file_name())).unwrap();
    }
    to
}

/// One change to one file.
#[derive(Clone, Debug)]
enum Hit {
    Truncate {
        file: String,
        at: u64,
    },
    Flip {
        file: String,
        at: u64,
        mask: u8,
    },
    Delete {
        file: String,
    },
    /// Copy `file` as `to`.
    Duplicate {
        file: String,
        to: String,
    },
    /// Exchange the names of two files.
    Swap {
        a: String,
        b: String,
    },
}

impl Hit {
    /// Applies the hit to `dir`; a file an earlier hit removed is skipped
    /// (returned as a note).
    fn apply(&self, dir: &Path) -> Option<String> {
        let p = |n: &str| dir.join(n);
        let missing = |n: &str| (!p(n).exists()).then(|| format!("{n} is gone, {self:?} skipped"));
        match self {
            Hit::Truncate { file, at } => {
                if let Some(m) = missing(file) {
                    return Some(m);
                }
                let f = std::fs::OpenOptions::new().write(true).open(p(file)).unwrap();
                f.set_len(*at).unwrap();
            }
            Hit::Flip { file, at, mask } => {
                if let Some(m) = missing(file) {
                    return Some(m);
                }
                let mut data = std::fs::read(p(file)).unwrap();
                if data.is_empty() {
                    return Some(format!("{file} is empty, {self:?} skipped"));
                }
                let at = (*at as usize).min(data.len() - 1);
                data[at] ^= mask;
                std::fs::write(p(file), data).unwrap();
            }
            Hit::Delete { file } => {
                if let Some(m) = missing(file) {
                    return Some(m);
                }
                std::fs::remove_file(p(file)).unwrap();
            }
            Hit::Duplicate { file, to } => {
                if let Some(m) = missing(file) {
                    return Some(m);
                }
                std::fs::copy(p(file), p(to)).unwrap();
            }
            Hit::Swap { a, b } => {
                if let Some(m) = missing(a).or_else(|| missing(b)) {
                    return Some(m);
                }
                let tmp = p("swap.tmp");
                std::fs::rename(p(a), &tmp).unwrap();
                std::fs::rename(p(b), p(a)).unwrap();
                std::fs::rename(&tmp, p(b)).unwrap();
            }
        }
        None
    }
}

/// A damage: what it is, its hits, and whether a loss it causes is one
/// that a crash cannot explain (so `damaged` must be set).
#[derive(Clone, Debug)]
struct Damage {
    what: String,
    hits: Vec<Hit>,
    unexplainable: bool,
}

const KINDS: usize = 16;

/// Where the frames of a file begin (after its 8-byte magic, each frame
/// is a u32 length, a u32 CRC and the body), up to the first that does
/// not fit: the clean cuts between records.
fn frame_starts(data: &[u8]) -> Vec<u64> {
    let mut at = 8usize;
    let mut out = Vec::new();
    while at + 8 <= data.len() {
        out.push(at as u64);
        let len = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        match at.checked_add(8 + len) {
            Some(next) if next <= data.len() => at = next,
            _ => break,
        }
    }
    out
}

/// A file of a stream: the last one 40% of the time, else any; returns
/// (stream, index in the stream).
fn pick_log(l: &Listing, rng: &mut SmallRng) -> (u32, usize) {
    // Streams that rotated are where the interesting damage is.
    let busy: Vec<u32> = l.logs.iter().filter(|(_, f)| f.len() >= 2).map(|(&s, _)| s).collect();
    let all: Vec<u32> = l.logs.keys().copied().collect();
    let from = if !busy.is_empty() && rng.gen_bool(0.8) { &busy } else { &all };
    let s = from[rng.gen_range(0..from.len())];
    let n = l.logs[&s].len();
    let i = if rng.gen_bool(0.4) { n - 1 } else { rng.gen_range(0..n) };
    (s, i)
}

/// A stream with at least `n` files, if any (a busy one preferably).
fn stream_with(l: &Listing, n: usize, rng: &mut SmallRng) -> Option<u32> {
    let v: Vec<u32> = l.logs.iter().filter(|(_, f)| f.len() >= n).map(|(&s, _)| s).collect();
    (!v.is_empty()).then(|| v[rng.gen_range(0..v.len())])
}

fn choose(kind: usize, dir: &Path, l: &Listing, rng: &mut SmallRng) -> Damage {
    let file = |s: u32, i: usize| l.logs[&s][i].1.clone();
    let last = |s: u32, i: usize| i + 1 == l.logs[&s].len();
    let one = |what: String, hit: Hit, unexplainable: bool| Damage { what, hits: vec![hit], unexplainable };
    match kind {
        0 => {
            let (s, i) = pick_log(l, rng);
            let at = rng.gen_range(0..l.logs[&s][i].2.max(1));
            let what = format!("truncate {} at {at} ({})", file(s, i), if last(s, i) { "last" } else { "not last" });
            one(what, Hit::Truncate { file: file(s, i), at }, !last(s, i))
        }
        1 | 2 => {
            let (s, i) = pick_log(l, rng);
            let at = rng.gen_range(0..l.logs[&s][i].2.max(1));
            let mask = if kind == 1 { rng.gen_range(1..=255u8) } else { 1 << rng.gen_range(0..8) };
            let what = format!(
                "xor byte {at} of {} with {mask:#04x} ({})",
                file(s, i),
                if last(s, i) { "last" } else { "not last" }
            );
            one(what, Hit::Flip { file: file(s, i), at, mask }, !last(s, i))
        }
        3..=5 => {
            let (s, i) = match kind {
                3 => (stream_with(l, 2, rng).unwrap_or(0), 0),
                4 => match stream_with(l, 3, rng) {
                    Some(s) => (s, rng.gen_range(1..l.logs[&s].len() - 1)),
                    None => (0, 0),
                },
                _ => {
                    let s = stream_with(l, 2, rng).unwrap_or(0);
                    (s, l.logs[&s].len() - 1)
                }
            };
            let pos = if i == 0 {
                "first"
            } else if last(s, i) {
                "last"
            } else {
                "a middle one"
            };
            one(format!("delete {} ({pos} of stream {s})", file(s, i)), Hit::Delete { file: file(s, i) }, true)
        }
        6 => {
            let all: Vec<u32> = l.logs.keys().copied().collect();
            let s = all[rng.gen_range(0..all.len())];
            let hits = l.logs[&s].iter().map(|f| Hit::Delete { file: f.1.clone() }).collect();
            Damage { what: format!("delete every file of stream {s}"), hits, unexplainable: true }
        }
        7 => {
            let (s, i) = pick_log(l, rng);
            let next = l.logs[&s].last().unwrap().0 + 1;
            let to = format!("log-{:08}-{s:03}-{next:06}.mvl", l.generation);
            one(format!("copy {} as {to}", file(s, i)), Hit::Duplicate { file: file(s, i), to }, true)
        }
        8 => {
            let s = stream_with(l, 2, rng).unwrap_or(0);
            let n = l.logs[&s].len();
            if n < 2 {
                return one(
                    format!("delete {} (no stream has two files)", file(s, 0)),
                    Hit::Delete { file: file(s, 0) },
                    true,
                );
            }
            let i = rng.gen_range(0..n - 1);
            let j = if rng.gen_bool(0.5) { i + 1 } else { rng.gen_range(i + 1..n) };
            one(format!("swap {} and {}", file(s, i), file(s, j)), Hit::Swap { a: file(s, i), b: file(s, j) }, true)
        }
        9 => match l.manifests.first() {
            None => {
                // No manifest (an engine from before manifests): a log file instead.
                let (s, i) = pick_log(l, rng);
                let at = rng.gen_range(0..l.logs[&s][i].2.max(1));
                one(
                    format!("no manifest; truncate {} at {at}", file(s, i)),
                    Hit::Truncate { file: file(s, i), at },
                    !last(s, i),
                )
            }
            Some((m, size)) => {
                let m = m.clone();
                let at = rng.gen_range(0..(*size).max(1));
                match rng.gen_range(0..3) {
                    0 => one(format!("delete {m}"), Hit::Delete { file: m }, true),
                    1 => one(format!("truncate {m} at {at}"), Hit::Truncate { file: m, at }, true),
                    _ => {
                        let mask = rng.gen_range(1..=255u8);
                        one(format!("xor byte {at} of {m} with {mask:#04x}"), Hit::Flip { file: m, at, mask }, true)
                    }
                }
            }
        },
        10 => {
            let (c, size) = l.checkpoints.last().expect("a checkpoint").clone();
            let at = rng.gen_range(0..size.max(1));
            match rng.gen_range(0..3) {
                0 => one(format!("delete {c}"), Hit::Delete { file: c }, true),
                1 => one(format!("truncate {c} at {at}"), Hit::Truncate { file: c, at }, true),
                _ => {
                    let mask = 1 << rng.gen_range(0..8);
                    one(format!("xor byte {at} of {c} with {mask:#04x}"), Hit::Flip { file: c, at, mask }, true)
                }
            }
        }
        11 => {
            // A clean cut between two records: no checksum sees it.
            let (s, i) = pick_log(l, rng);
            let data = std::fs::read(dir.join(file(s, i))).unwrap();
            let starts = frame_starts(&data);
            let at = if starts.len() > 1 { starts[rng.gen_range(1..starts.len())] } else { data.len() as u64 / 2 };
            let what = format!(
                "cut {} at {at}, between two records ({})",
                file(s, i),
                if last(s, i) { "last" } else { "not last" }
            );
            one(what, Hit::Truncate { file: file(s, i), at }, !last(s, i))
        }
        12 => {
            // What a crash does: every stream's last file torn somewhere
            // after its header.
            let mut hits = Vec::new();
            for files in l.logs.values() {
                let (_, name, size) = files.last().unwrap();
                let data = std::fs::read(dir.join(name)).unwrap();
                let header_end = frame_starts(&data).get(1).copied().unwrap_or(*size);
                hits.push(Hit::Truncate { file: name.clone(), at: rng.gen_range(header_end..=*size) });
            }
            Damage { what: format!("torn tails in every stream: {hits:?}"), hits, unexplainable: false }
        }
        13 => {
            // Another stream's file in this one's place (or as its next).
            let (s, i) = pick_log(l, rng);
            let others: Vec<u32> = l.logs.keys().copied().filter(|&o| o != s).collect();
            let o = others[rng.gen_range(0..others.len())];
            let q = l.logs[&s][i].0;
            let to = match l.logs[&o].iter().find(|f| f.0 == q) {
                Some(f) => f.1.clone(),
                None => format!("log-{:08}-{o:03}-{:06}.mvl", l.generation, l.logs[&o].last().unwrap().0 + 1),
            };
            one(
                format!("copy {} over {to} (another stream's)", file(s, i)),
                Hit::Duplicate { file: file(s, i), to },
                true,
            )
        }
        14 => {
            // A stray file of another generation (a backup restored over
            // the directory, say): it must neither be replayed nor mix
            // with the generations to come.
            let (s, i) = pick_log(l, rng);
            let g = if rng.gen_bool(0.7) { l.generation + 1 } else { l.generation.saturating_sub(1) };
            let seq = if rng.gen_bool(0.5) { l.logs[&s][i].0 } else { rng.gen_range(0..4) };
            let to = format!("log-{g:08}-{s:03}-{seq:06}.mvl");
            one(format!("copy {} as {to}", file(s, i)), Hit::Duplicate { file: file(s, i), to }, false)
        }
        _ => {
            let a = choose(rng.gen_range(0..KINDS - 1), dir, l, rng);
            let b = choose(rng.gen_range(0..KINDS - 1), dir, l, rng);
            Damage {
                what: format!("{}, then {}", a.what, b.what),
                hits: a.hits.into_iter().chain(b.hits).collect(),
                unexplainable: a.unexplainable || b.unexplainable,
            }
        }
    }
}

// ---------------------------------------------------------------------
// The cases
// ---------------------------------------------------------------------

/// How a case ended, for the summary.
#[derive(Debug, Default)]
struct Tally {
    refused: u64,
    whole: u64,
    /// Prefixes that lost transfers: flagged damaged, and not.
    lost_flagged: u64,
    lost_unflagged: u64,
    /// Of those, lost without a word: crash-like damage that took the
    /// newest rounds whole (see `run_case`).
    lost_unreported: u64,
    failures: Vec<String>,
}

fn open_caught(o: Options) -> std::result::Result<Result<(Database, RecoveryReport)>, String> {
    catch_unwind(AssertUnwindSafe(|| Database::open_with(o, schema))).map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into());
        format!("Database::open panicked: {msg}")
    })
}

/// Runs one damaged copy: `Ok` says what recovery did in a line, `Err`
/// what went wrong.
fn run_case(p: &Pristine, damage: &Damage, tally: &mut Tally) -> std::result::Result<String, String> {
    let c = p.config;
    let (a, b) = (copy_dir(p.dir.path()), copy_dir(p.dir.path()));
    let mut notes = Vec::new();
    for h in &damage.hits {
        notes.extend(h.apply(a.path()));
        h.apply(b.path());
    }
    let mut log = String::new();
    if !notes.is_empty() {
        let _ = writeln!(log, "notes: {notes:?}");
    }
    let _ = writeln!(log, "damaged directory: {}", describe_dir(a.path()));
    let fail = |log: &str, why: String| Err(format!("{why}\n{log}"));

    let before_a = snapshot(a.path());
    let before_b = snapshot(b.path());
    let keep = open_caught(options(a.path(), &c)).map_err(|e| format!("{e}\n{log}"))?;
    let refuse = open_caught(by_default(options(b.path(), &c))).map_err(|e| format!("default open: {e}\n{log}"))?;
    let refuse_says = match &refuse {
        Ok((_, r)) => format!("Ok, damaged {}, dropped {:?}", damaged(r), r.dropped),
        Err(e) => format!("Err({e:?})"),
    };
    let _ = writeln!(log, "the default policy (OnDamage::Refuse): {refuse_says}");
    let (db, rep) = match keep {
        Err(Error::Corrupt(m)) => {
            let _ = writeln!(log, "KeepPrefix refused: {m}");
            tally.refused += 1;
            let ch = changes(&before_a, &snapshot(a.path()));
            if !ch.is_empty() {
                return fail(&log, format!("a refused open changed the directory: {ch:?}"));
            }
            if !matches!(refuse, Err(Error::Corrupt(_))) {
                return fail(&log, "KeepPrefix refused the directory, the default policy did not".into());
            }
            let ch = changes(&before_b, &snapshot(b.path()));
            if !ch.is_empty() || !quarantines(b.path()).is_empty() {
                return fail(&log, format!("the default policy changed the directory: {ch:?}"));
            }
            return Ok(format!("refused: {m}"));
        }
        Err(e) => return fail(&log, format!("expected Ok or Err(Corrupt), got Err({e:?})")),
        Ok(x) => x,
    };
    let _ = writeln!(log, "KeepPrefix report: {rep:?}");
    if let Err(why) = nothing_deleted(a.path(), &before_a, &rep) {
        return fail(&log, format!("KeepPrefix: {why}"));
    }
    let s = state(&db);
    let n = match verify(&s, &p.transfers) {
        Ok(n) => n,
        Err(why) => return fail(&log, format!("not a prefix: {why}")),
    };
    let _ = writeln!(log, "recovered {n} of {} transfers", p.count());
    if n < p.count() {
        if rep.dropped.is_empty() {
            // A clean cut at a record boundary that takes a stream's newest
            // rounds whole looks exactly like a crash before they were
            // written: each round is in one stream's file only
            // (`durability::log`), so nothing else remembers the newest.
            // Damage no crash explains must always be reported.
            if damage.unexplainable {
                return fail(&log, format!("{} transfers lost and report.dropped is empty", p.count() - n));
            }
            tally.lost_unreported += 1;
        }
        if damaged(&rep) {
            tally.lost_flagged += 1;
        } else if damage.unexplainable {
            return fail(
                &log,
                format!("{} transfers lost to damage no crash explains, not flagged damaged", p.count() - n),
            );
        } else {
            tally.lost_unflagged += 1;
        }
    } else {
        tally.whole += 1;
    }
    match (damaged(&rep), refuse) {
        (true, Err(Error::Corrupt(m))) => {
            let ch = changes(&before_b, &snapshot(b.path()));
            if !ch.is_empty() || !quarantines(b.path()).is_empty() {
                return fail(&log, format!("the default policy changed the directory: {ch:?}"));
            }
            if !(m.contains("OnDamage::KeepPrefix") && m.contains("--salvage")) {
                return fail(&log, format!("the refusal does not name the remedies: {m}"));
            }
        }
        (true, _) => return fail(&log, "KeepPrefix reported damage, the default policy did not refuse".into()),
        (false, Ok((db2, r2))) => {
            if damaged(&r2) || state(&db2) != s {
                return fail(&log, "the default policy recovered something else than KeepPrefix".into());
            }
        }
        (false, Err(e)) => return fail(&log, format!("nothing damaged, yet the default policy failed: {e:?}")),
    }

    // The recovered state is durable: a second open finds it all (and
    // nothing more to report), commits after it survive a third.
    drop(db);
    let (db, rep2) = match open_caught(options(a.path(), &c)).map_err(|e| format!("second open: {e}\n{log}"))? {
        Ok(x) => x,
        Err(e) => return fail(&log, format!("second open failed: {e:?}")),
    };
    if state(&db) != s || damaged(&rep2) || !rep2.dropped.is_empty() {
        return fail(&log, format!("second open: another state, or damage reported again: {rep2:?}"));
    }
    let mut all = p.transfers.clone();
    let mut rng = SmallRng::seed_from_u64(n);
    for seq in 1..=3 {
        all.insert((LATER, seq), transfer(&db, LATER, seq, &mut rng));
    }
    db.flush_log().unwrap();
    drop(db);
    let (db, rep3) = match open_caught(options(a.path(), &c)).map_err(|e| format!("third open: {e}\n{log}"))? {
        Ok(x) => x,
        Err(e) => return fail(&log, format!("third open failed: {e:?}")),
    };
    match verify(&state(&db), &all) {
        Ok(m) if m == n + 3 && rep3.dropped.is_empty() && !damaged(&rep3) => {
            // Later opens and checkpoints never touch the quarantine.
            db.checkpoint().unwrap();
            drop(db);
            if let Err(why) = nothing_deleted(a.path(), &before_a, &rep) {
                return fail(&log, format!("after two more opens and a checkpoint: {why}"));
            }
            if rep2.quarantine.is_some() || rep3.quarantine.is_some() || quarantines(a.path()).len() > 1 {
                return fail(&log, format!("a clean open made a quarantine: {:?}", quarantines(a.path())));
            }
            Ok(format!("recovered {n} of {}, damaged {}, dropped {:?}", p.count(), damaged(&rep), rep.dropped))
        }
        Ok(m) => fail(&log, format!("third open: {m} transfers, expected {} after 3 more: {rep3:?}", n + 3)),
        Err(why) => fail(&log, format!("third open: not a prefix: {why}: {rep3:?}")),
    }
}

fn iters() -> u64 {
    std::env::var("MULTIVERSE_DAMAGE_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(64)
}

/// The seed of case `i`: it picks the damage's kind (`seed % KINDS`) and
/// everything else.
fn seed_of(i: u64) -> u64 {
    i + 0xDA_0000
}

fn suite(config: Config, half: u64) {
    let only: Option<u64> = std::env::var("MULTIVERSE_DAMAGE_SEED").ok().and_then(|s| s.parse().ok());
    let p = Pristine::build(config);
    let pristine = listing(p.dir.path());
    eprintln!("{config:?}: {} transfers; {}", p.count(), describe_dir(p.dir.path()));
    let mut tally = Tally::default();
    // Both suites share the seeds; each takes its blocks of KINDS cases.
    let seeds: Vec<u64> = match only {
        Some(s) => vec![s],
        None => (0..iters()).filter(|i| (i / KINDS as u64) % 2 == half).map(seed_of).collect(),
    };
    for seed in seeds {
        let mut rng = SmallRng::seed_from_u64(seed);
        let damage = choose((seed % KINDS as u64) as usize, p.dir.path(), &pristine, &mut rng);
        let started = std::time::Instant::now();
        match run_case(&p, &damage, &mut tally) {
            Err(why) => {
                let msg = format!("seed {seed} ({config:?}), damage: {}\n  {damage:?}\n{why}", damage.what);
                eprintln!("FAILED {msg}");
                tally.failures.push(msg);
            }
            Ok(what) => eprintln!("ok seed {seed} ({:?}): {}\n  -> {what}", started.elapsed(), damage.what),
        }
    }
    eprintln!(
        "{config:?}: {} refused, {} whole, {} lost transfers flagged damaged, {} lost transfers to a torn or \
         flipped last file (not flagged; {} of them with nothing to report), {} failed",
        tally.refused,
        tally.whole,
        tally.lost_flagged,
        tally.lost_unflagged,
        tally.lost_unreported,
        tally.failures.len()
    );
    assert!(
        tally.failures.is_empty(),
        "{} damaged copies failed:\n\n{}",
        tally.failures.len(),
        tally.failures.join("\n\n")
    );
}

#[test]
fn damaged_copies_of_a_sync_bank_recover_a_prefix_or_are_refused() {
    suite(SYNC2, 0);
}

#[test]
fn damaged_copies_of_an_async_bank_recover_a_prefix_or_are_refused() {
    suite(ASYNC4, 1);
}

/// The undamaged directory recovers every transfer, reports nothing, and
/// opens under `OnDamage::Refuse` and the default policy too, with no
/// quarantine folder.
#[test]
fn an_undamaged_bank_recovers_whole() {
    let p = Pristine::build(SYNC2);
    let policies: [fn(Options) -> Options; 3] = [refusing, by_default, |o| o];
    for policy in policies {
        let copy = copy_dir(p.dir.path());
        let o = policy(options(copy.path(), &p.config));
        let (db, rep) = Database::open_with(o, schema).unwrap();
        assert!(rep.dropped.is_empty() && !damaged(&rep) && rep.quarantine.is_none(), "{rep:?}");
        assert!(quarantines(copy.path()).is_empty());
        assert_eq!(verify(&state(&db), &p.transfers), Ok(p.count()), "{rep:?}");
    }
}

/// A second open of a directory a live database holds fails with
/// `Error::Locked` and harms nothing; once the first is dropped, an open
/// succeeds and finds every acknowledged transfer.
#[test]
fn a_second_open_of_a_held_directory_is_locked_out() {
    let dir = tempfile::tempdir().unwrap();
    let c = Config { streams: 2, threads: 1, per_thread: 0, durability: Durability::Sync };
    let (db, _) = Database::open_with(options(dir.path(), &c), schema).unwrap();
    open_accounts(&db);
    let mut all = Transfers::new();
    let mut rng = SmallRng::seed_from_u64(7);
    for seq in 1..=20 {
        all.insert((0, seq), transfer(&db, 0, seq, &mut rng));
    }
    for refuse in [false, true] {
        let o = options(dir.path(), &c);
        match Database::open_with(if refuse { refusing(o) } else { o }, schema) {
            Err(e) if is_locked(&e) => {}
            Err(e) => panic!("expected Error::Locked, got {e:?}"),
            Ok((_, rep)) => panic!("a second open of a held directory succeeded: {rep:?}"),
        }
    }
    // The first database goes on, undisturbed.
    for seq in 21..=40 {
        all.insert((0, seq), transfer(&db, 0, seq, &mut rng));
    }
    assert_eq!(verify(&state(&db), &all), Ok(40));
    drop(db);
    let (db, rep) = Database::open_with(options(dir.path(), &c), schema).unwrap();
    assert!(rep.dropped.is_empty() && !damaged(&rep), "{rep:?}");
    assert_eq!(verify(&state(&db), &all), Ok(40), "every acknowledged transfer: {rep:?}");
    // And the lock is held again by this one.
    assert!(matches!(Database::open_with(options(dir.path(), &c), schema), Err(e) if is_locked(&e)));
}
