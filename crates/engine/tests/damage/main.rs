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

mod files;

use files::{changes, choose, copy_dir, describe_dir, listing, nothing_deleted, quarantines, snapshot, Damage, KINDS};
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
