//! Crash tests: a child process works on a durable database with sync
//! durability and prints what it saw acknowledged; the parent kills it with
//! SIGKILL at a random moment, reopens the directory, and checks that
//! everything the child was told survived. The same directory is crashed
//! again and again, so recovery also recovers what earlier recoveries wrote.
//!
//! Two kinds of children:
//!
//! * **Transfers** (`crash_recovery_keeps_every_acknowledged_and_observed_commit`):
//!   two writer threads move money between accounts; each transfer also
//!   inserts an ack row `(thread, seq)` and sets the thread's counter row to
//!   `seq`, and the child prints `ack <thread> <seq>` once the commit
//!   returned. One or two reader threads loop over transactions that only
//!   read (with and without `read_only`, at every isolation level the
//!   protocol offers, POMVCC's sometimes beginning after the open commit
//!   timestamp, SSN's over read committed or snapshot isolation, with and
//!   without safe snapshots): most read the counter rows with `get`, some
//!   scan the ack rows or (serializable and snapshot) add up the money.
//!   Only once the reader's commit returned Ok does the child print
//!   `saw <thread> <seq>`: whatever a reader returned must survive a crash
//!   like an acknowledged commit (durable visibility; Silo's rule that a read-only
//!   transaction waits for the durability of what it read). A third thread
//!   calls [`Database::checkpoint`] in a loop in most iterations (besides
//!   the checkpoints that fall due every few tens of milliseconds), so that
//!   kills land inside checkpoint writing and log truncation; some kills
//!   land while the child is still inside [`Database::open`] (recovering
//!   the previous crash and writing the new generation's checkpoint).
//!   After each crash the parent checks that the money adds up (no
//!   transfer in part), that each thread's ack rows form a prefix whose
//!   length is the thread's counter row, and that every acknowledged and
//!   every observed seq is there.
//! * **Loads** (`crash_during_loading_keeps_whole_acknowledged_loads`): the
//!   child inserts large batches of rows, one transaction each, printing
//!   `load <batch>` once a batch committed (and a reader prints
//!   `saw-load <batch>` for a batch it found); it is killed at a random
//!   moment from its start, often before its first commit or inside
//!   `Database::open`. The rows that survive must be whole batches
//!   `0..k` with every acknowledged or observed batch among them.
//!
//! Each iteration draws its options: 1, 2 or 3 log streams, log files that
//! rotate at a few KiB, checkpoints every few tens of milliseconds (and by
//! log size in some). A child that panics (a reader's sum that does not add
//! up, say) prints `panic ...` and aborts; the parent fails on it.
//!
//! Lost acknowledged or observed commits do not stop the run, nor does a
//! recovery that calls the directory damaged (`RecoveryReport::damaged`: a
//! kill can only tear tails): each such crash is listed (`LOST: ...` on
//! stderr) and the test fails at the end with the count (the expectations
//! restart from what was recovered); a copy of the directory as that
//! crash left it is kept under the temporary directory
//! (`multiverse-crash-<pid>-<protocol>-<iteration>`) and named in the
//! message. Anything else (a torn transfer, a hole, a child that died)
//! fails at once.
//!
//! Knobs: `MULTIVERSE_CRASH_ITERS=N` iterations per protocol (loads: N/2,
//! at least 1); `MULTIVERSE_CRASH_PROTOCOLS=a,b` picks protocols (any the
//! engine parses; default mv-occ, pomvcc, silo, 1v-lock, ssn, bohm);
//! `MULTIVERSE_CRASH_SEED=S` changes the random choices.
//!
//! BOHM runs here through its interactive transactions (each runs alone,
//! the way `Database::begin` offers them under `bohm`): the pipeline
//! (`bohm_run`, `bohm_serve`) is not exercised by these tests.

mod parent;

use multiverse::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

const ACCOUNTS: u64 = 32;
const START: u64 = 1000;
const WRITERS: u64 = 2;
/// Rows per load transaction, and load transactions per directory.
const LOAD_ROWS: u64 = 4000;
const LOAD_BATCHES: u64 = 30;
const LOAD_VALUE: usize = 48;

const DEFAULT_PROTOCOLS: [&str; 6] = ["mv-occ", "pomvcc", "silo", "1v-lock", "ssn", "bohm"];

/// One iteration's choices, handed to the child in `MULTIVERSE_CRASH_CONFIG`.
#[derive(Clone, Debug)]
struct Config {
    protocol: Protocol,
    streams: usize,
    rotate: u64,
    checkpoint_ms: u64,
    /// Also checkpoint by log size.
    log_bytes: Option<u64>,
    /// A thread calls `Database::checkpoint` in a loop, pausing up to this
    /// many milliseconds between calls (`None`: no such thread).
    checkpointer: Option<u64>,
    readers: u64,
    /// SSN over read committed (else snapshot isolation).
    ssn_rc: bool,
    /// SSN/SSI: read-only serializable readers use safe snapshots.
    safe_snapshots: bool,
    seed: u64,
}

impl Config {
    fn draw(protocol: Protocol, rng: &mut SmallRng) -> Config {
        Config {
            protocol,
            streams: [1, 2, 2, 3, 3][rng.gen_range(0..5)],
            rotate: [4 << 10, 16 << 10, 64 << 10][rng.gen_range(0..3)],
            checkpoint_ms: rng.gen_range(10..60),
            log_bytes: rng.gen_bool(0.3).then_some(128 << 10),
            checkpointer: rng.gen_bool(0.7).then(|| rng.gen_range(0..15)),
            readers: rng.gen_range(1..=2),
            ssn_rc: rng.gen_bool(0.5),
            safe_snapshots: rng.gen_bool(0.3),
            seed: rng.gen(),
        }
    }

    fn encode(&self) -> String {
        format!(
            "{} {} {} {} {} {} {} {} {} {}",
            self.protocol,
            self.streams,
            self.rotate,
            self.checkpoint_ms,
            self.log_bytes.unwrap_or(0),
            self.checkpointer.map_or(-1, |p| p as i64),
            self.readers,
            self.ssn_rc as u8,
            self.safe_snapshots as u8,
            self.seed
        )
    }

    fn decode(s: &str) -> Config {
        let w: Vec<&str> = s.split_whitespace().collect();
        let n = |i: usize| -> u64 { w[i].parse().unwrap() };
        Config {
            protocol: w[0].parse().unwrap(),
            streams: n(1) as usize,
            rotate: n(2),
            checkpoint_ms: n(3),
            log_bytes: Some(n(4)).filter(|&b| b > 0),
            checkpointer: w[5].parse::<i64>().ok().filter(|&p| p >= 0).map(|p| p as u64),
            readers: n(6),
            ssn_rc: n(7) == 1,
            safe_snapshots: n(8) == 1,
            seed: n(9),
        }
    }

    fn options(&self, dir: &Path) -> Options {
        Options {
            protocol: self.protocol,
            durability: Durability::Sync,
            data_dir: Some(dir.to_path_buf()),
            log_streams: self.streams,
            log_rotate_bytes: self.rotate,
            // Checkpoints fall due while it runs, so crashes hit them too.
            checkpoint_every: Some(Duration::from_millis(self.checkpoint_ms)),
            checkpoint_log_bytes: self.log_bytes,
            ssn_base: if self.ssn_rc { Isolation::ReadCommitted } else { Isolation::Snapshot },
            safe_snapshot_interval: self.safe_snapshots.then_some(Duration::from_millis(2)),
            ..Options::default()
        }
    }
}

fn schema(db: &Database) -> Result<()> {
    db.create_table(TableSpec::hash("acct", 64))?;
    db.create_table(TableSpec::ordered("acks"))?;
    db.create_table(TableSpec::hash("ctr", 16))?;
    db.create_table(TableSpec::hash("load", 1 << 15))?;
    Ok(())
}

fn num(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[..8].try_into().unwrap())
}

fn load_key(batch: u64, i: u64) -> Key {
    Key::from((batch << 32) | i)
}

fn load_value(batch: u64, i: u64) -> Vec<u8> {
    let mut v = vec![(batch as u8) ^ (i as u8); LOAD_VALUE];
    v[..8].copy_from_slice(&batch.to_le_bytes());
    v[8..16].copy_from_slice(&i.to_le_bytes());
    v
}

/// The child's stdout: one line per event, flushed at once (a SIGKILL
/// loses nothing already written to the pipe).
struct Out(Mutex<std::io::Stdout>);

impl Out {
    fn say(&self, line: std::fmt::Arguments<'_>) {
        let mut o = self.0.lock().unwrap_or_else(|e| e.into_inner());
        writeln!(o, "{line}").unwrap();
        o.flush().unwrap();
    }
}

/// The child: runs until killed.
#[test]
#[ignore = "run by the crash tests in a child process"]
fn crash_child() {
    let Ok(dir) = std::env::var("MULTIVERSE_CRASH_DIR") else { return };
    let cfg = Config::decode(&std::env::var("MULTIVERSE_CRASH_CONFIG").unwrap());
    let load = std::env::var("MULTIVERSE_CRASH_MODE").unwrap() == "load";
    // A panic on any thread is reported to the parent and ends the child
    // (the scoped threads would otherwise run on without the panicked one).
    std::panic::set_hook(Box::new(|info| {
        let msg = info.to_string().replace('\n', " | ");
        let mut o = std::io::stdout().lock();
        let _ = writeln!(o, "panic {msg}");
        let _ = o.flush();
        std::process::abort();
    }));
    let out = Out(Mutex::new(std::io::stdout()));
    // The parent's last check closed the directory before spawning us, but
    // a process that the parent's other test thread forked meanwhile may
    // still hold a copy of its lock until it executes its program (Rust
    // opens files close-on-exec, not close-on-fork): wait for that.
    let waited = Instant::now();
    let (db, _) = loop {
        match Database::open_with(cfg.options(Path::new(&dir)), schema) {
            Err(Error::Locked(_)) if waited.elapsed() < Duration::from_secs(5) => {
                std::thread::sleep(Duration::from_millis(5))
            }
            r => break r.unwrap(),
        }
    };
    out.say(format_args!("opened"));
    std::thread::scope(|s| {
        if let Some(pause) = cfg.checkpointer {
            let (db, out) = (&db, &out);
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(cfg.seed ^ 0xC4EC);
                loop {
                    std::thread::sleep(Duration::from_millis(rng.gen_range(0..=pause)));
                    out.say(format_args!("checkpoint"));
                    let info = db.checkpoint().unwrap();
                    out.say(format_args!("checkpointed {}", info.rows));
                }
            });
        }
        if load {
            child_load(&db, &cfg, &out, s);
        } else {
            child_transfers(&db, &cfg, &out, s);
        }
    });
}

fn child_load<'s, 'e>(db: &'s Database, cfg: &'s Config, out: &'s Out, s: &'s std::thread::Scope<'s, 'e>) {
    let load = db.table("load").unwrap();
    // The first batch not there yet (the parent checked they form a prefix).
    let mut next = 0;
    db.run(Isolation::Serializable, |t| {
        next = 0;
        while t.get(load, load_key(next, 0))?.is_some() {
            next += 1;
        }
        Ok(())
    })
    .unwrap();
    if cfg.readers > 0 {
        // Looks for the batch after the last one it saw, by its last row.
        s.spawn(move || {
            let levels = cfg.protocol.isolation_levels();
            let mut rng = SmallRng::seed_from_u64(cfg.seed ^ 0x10AD);
            let mut want = next;
            while want < LOAD_BATCHES {
                let o = TxnOptions {
                    read_only: rng.gen_bool(0.5),
                    ..TxnOptions::new(levels[rng.gen_range(0..levels.len())])
                };
                let mut t = db.begin_with(o).unwrap();
                let r = t.get(load, load_key(want, LOAD_ROWS - 1)).map(|v| v.is_some());
                match r.and_then(|found| t.commit().map(|_| found)) {
                    Ok(true) => {
                        out.say(format_args!("saw-load {want}"));
                        want += 1;
                    }
                    Ok(false) => std::thread::yield_now(),
                    Err(e) if e.is_transient() => {}
                    Err(e) => panic!("load reader: {e}"),
                }
            }
        });
    }
    for batch in next..LOAD_BATCHES {
        db.run(Isolation::Serializable, |t| {
            for i in 0..LOAD_ROWS {
                t.insert(load, load_key(batch, i), load_value(batch, i))?;
            }
            Ok(())
        })
        .unwrap();
        out.say(format_args!("load {batch}"));
    }
    out.say(format_args!("loaded"));
    // Killed like the others (which also keeps any checkpointer going).
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn child_transfers<'s, 'e>(db: &'s Database, cfg: &'s Config, out: &'s Out, s: &'s std::thread::Scope<'s, 'e>) {
    let (acct, acks, ctr) = (db.table("acct").unwrap(), db.table("acks").unwrap(), db.table("ctr").unwrap());
    // The accounts and counters, unless an earlier child created them (in
    // one transaction: they are all there or none is).
    let mut next = [1u64; WRITERS as usize];
    db.run(Isolation::Serializable, |t| {
        if t.get(ctr, Key::from(0))?.is_none() {
            for a in 0..ACCOUNTS {
                t.insert(acct, Key::from(a), START.to_le_bytes())?;
            }
            for th in 0..WRITERS {
                t.insert(ctr, Key::from(th), 0u64.to_le_bytes())?;
            }
        }
        Ok(())
    })
    .unwrap();
    db.sync_commits().unwrap();
    // Where each thread's sequence numbers resume.
    db.run(Isolation::Serializable, |t| {
        for th in 0..WRITERS {
            next[th as usize] = num(&t.get(ctr, Key::from(th))?.unwrap()) + 1;
        }
        Ok(())
    })
    .unwrap();
    out.say(format_args!("ready"));
    for th in 0..WRITERS {
        let first = next[th as usize];
        s.spawn(move || {
            let mut rng = SmallRng::seed_from_u64(cfg.seed ^ (th + first));
            let mut last = None;
            for seq in first.. {
                let (a, b) = (rng.gen_range(0..ACCOUNTS), rng.gen_range(0..ACCOUNTS));
                let amount = rng.gen_range(1..10);
                loop {
                    let o = TxnOptions { after: last, ..TxnOptions::new(Isolation::Serializable) };
                    let mut t = db.begin_with(o).unwrap();
                    let r = (|| {
                        let x = num(&t.get(acct, Key::from(a))?.unwrap());
                        let y = num(&t.get(acct, Key::from(b))?.unwrap());
                        if a != b && x >= amount {
                            t.update(acct, Key::from(a), (x - amount).to_le_bytes())?;
                            t.update(acct, Key::from(b), (y + amount).to_le_bytes())?;
                        }
                        t.insert(acks, Key::from((th << 32) | seq), seq.to_le_bytes())?;
                        t.update(ctr, Key::from(th), seq.to_le_bytes())
                    })();
                    match r.and_then(|_| t.commit()) {
                        Ok(c) => {
                            last = Some(c.commit_ts);
                            out.say(format_args!("ack {th} {seq}"));
                            break;
                        }
                        Err(e) if e.is_transient() => continue,
                        Err(e) => panic!("writer {th}: {e}"),
                    }
                }
            }
        });
    }
    for rd in 0..cfg.readers {
        s.spawn(move || reader(db, cfg, out, rd));
    }
}

/// A reader thread of the transfers child: transactions that write
/// nothing; what one returned is printed only after its commit returned Ok.
fn reader(db: &Database, cfg: &Config, out: &Out, rd: u64) {
    let (acct, acks, ctr) = (db.table("acct").unwrap(), db.table("acks").unwrap(), db.table("ctr").unwrap());
    let levels = cfg.protocol.isolation_levels();
    let mut rng = SmallRng::seed_from_u64(cfg.seed ^ (0x5EE0 + rd));
    let mut shown = [0u64; WRITERS as usize];
    loop {
        let isolation = levels[rng.gen_range(0..levels.len())];
        // POMVCC: half of them see every commit so far (the others read
        // at the BTs they are given, possibly a little behind).
        let after = if rng.gen_bool(0.5) { db.retry_after() } else { None };
        let o = TxnOptions { read_only: rng.gen_bool(0.5), after, ..TxnOptions::new(isolation) };
        let kind = rng.gen_range(0..16);
        let mut seen = [0u64; WRITERS as usize];
        let mut sum = None;
        let mut t = db.begin_with(o).unwrap();
        let r = (|| match kind {
            0 => t.scan(db.primary(acks), .., None, |k, v| {
                let k = k.to_u64().unwrap();
                let th = (k >> 32) as usize;
                seen[th] = seen[th].max(num(v));
                true
            }),
            1 if matches!(isolation, Isolation::Serializable | Isolation::Snapshot) => {
                let mut total = 0;
                t.scan(db.primary(acct), .., None, |_, v| {
                    total += num(v);
                    true
                })?;
                sum = Some(total);
                Ok(())
            }
            _ => {
                for th in 0..WRITERS {
                    seen[th as usize] = num(&t.get(ctr, Key::from(th))?.unwrap());
                }
                Ok(())
            }
        })();
        match r.and_then(|_| t.commit()) {
            Ok(_) => {
                if let Some(total) = sum {
                    assert_eq!(total, ACCOUNTS * START, "reader {rd} ({isolation}): the money does not add up");
                }
                for th in 0..WRITERS as usize {
                    if seen[th] > shown[th] {
                        shown[th] = seen[th];
                        // Who saw it, for the report of a loss.
                        let how = match kind {
                            0 => "scan",
                            _ => "get",
                        };
                        let ro = if o.read_only { "read-only" } else { "read-write" };
                        let after = if o.after.is_some() { " after" } else { "" };
                        out.say(format_args!("saw {th} {} by {how} {isolation} {ro}{after}", seen[th]));
                    }
                }
            }
            Err(e) if e.is_transient() => {}
            Err(e) => panic!("reader {rd} ({isolation}): {e}"),
        }
    }
}
