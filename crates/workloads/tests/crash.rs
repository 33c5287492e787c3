//! Crash tests with the workloads' own invariants. A child process (this
//! binary again, running the ignored `crash_child`) opens a durable
//! database with sync durability, loads the workload on the first open,
//! runs its transactions from two threads and prints every commit it saw
//! acknowledged; the parent kills it with SIGKILL a random while after it
//! got ready, reopens the directory with the same schema and checks:
//!
//! * TPC-C: every acknowledged New-Order's order (warehouse, district, id)
//!   is there, for its customer, with all its order lines; and consistency
//!   conditions 1 to 4 hold ([`Workload::check_state`]).
//! * SmallBank: money is conserved up to the transactions in flight. Before
//!   each commit the child prints the net amount the transaction adds
//!   (`begin THREAD DELTA`), after it `ack THREAD`; the recovered total
//!   minus the previous total and every acknowledged amount must be the sum
//!   of some of the at most one unacknowledged amount per thread (each
//!   either committed or not, never in part). Every customer keeps both
//!   accounts.
//!
//! The same directory is crashed again and again, so recovery also
//! recovers what earlier recoveries wrote, and checkpoints fall due every
//! 40 ms, so some crashes hit one. Protocols mv-occ, pomvcc and silo. A
//! few iterations by default; `MULTIVERSE_CRASH_ITERS=N` runs N.

use multiverse::{Database, Durability, Error, Options, Protocol, RecoveryReport, TxnOptions};
use multiverse_workloads::smallbank::{SmallBank, SmallBankConfig, SmallBankWorker};
use multiverse_workloads::tpcc::{self, Tpcc, TpccConfig};
use multiverse_workloads::{load_parallel, run_txn, AbortCounts, Txn, TxnError, Worker, Workload};
use rand::{Rng, SeedableRng};
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const THREADS: usize = 2;
const PROTOCOLS: [&str; 3] = ["mv-occ", "pomvcc", "silo"];

fn options(dir: &Path, protocol: Protocol) -> Options {
    Options {
        protocol,
        durability: Durability::Sync,
        data_dir: Some(dir.to_path_buf()),
        log_rotate_bytes: 256 << 10,
        // Checkpoints fall due while it runs, so crashes hit them too.
        checkpoint_every: Some(Duration::from_millis(40)),
        ..Options::default()
    }
}

fn tpcc_config() -> TpccConfig {
    TpccConfig { warehouses: 1, ..TpccConfig::default() }
}

fn smallbank_config() -> SmallBankConfig {
    SmallBankConfig { customers: 100, ..SmallBankConfig::default() }
}

/// Opens (recovers) `dir` with the schema `setup` creates; returns the workload too.
fn open<W>(
    dir: &Path,
    protocol: Protocol,
    setup: impl FnOnce(&Database) -> Result<W, String>,
) -> (Database, W, RecoveryReport) {
    let mut w = None;
    let (db, rep) = Database::open_with(options(dir, protocol), |db| {
        w = Some(setup(db).map_err(Error::InvalidArgument)?);
        Ok(())
    })
    .unwrap();
    (db, w.expect("the schema ran"), rep)
}

/// Prints one line at once (the parent reads it even if the next moment kills us).
fn say(line: std::fmt::Arguments<'_>) {
    let mut o = std::io::stdout().lock();
    writeln!(o, "{line}").unwrap();
    o.flush().unwrap();
}

/// Loads `w` on the first open, makes every commit visible, says "ready"
/// and runs `thread(db, w, number)` on each thread until killed. A worker's
/// number is unique over the directory's generations: TPC-C keys history
/// rows by worker and its sequence number, which restarts with the process.
fn serve<W: Workload>(db: &Database, w: &W, rep: &RecoveryReport, thread: impl Fn(usize, usize) + Sync) {
    if rep.generation == 0 {
        load_parallel(db, w, THREADS).unwrap();
        db.checkpoint().unwrap();
    }
    db.sync_commits().unwrap();
    say(format_args!("ready"));
    std::thread::scope(|s| {
        for th in 0..THREADS {
            let thread = &thread;
            s.spawn(move || thread(th, rep.generation as usize * THREADS + th));
        }
    });
}

/// A SmallBank worker that announces the amount of each transaction after
/// its body ran and before it commits.
struct Announced<'w> {
    inner: SmallBankWorker<'w>,
    thread: usize,
}

impl Worker for Announced<'_> {
    fn next_txn(&mut self) {
        self.inner.next_txn()
    }
    fn execute<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        self.inner.execute(t)?;
        say(format_args!("begin {} {}", self.thread, self.inner.pending_delta()));
        Ok(())
    }
    fn txn_type(&self) -> usize {
        self.inner.txn_type()
    }
    fn options(&self, run: TxnOptions<'static>) -> TxnOptions<'static> {
        self.inner.options(run)
    }
    fn committed(&mut self) {
        self.inner.committed()
    }
}

/// The child: runs until killed.
#[test]
#[ignore = "run by the crash tests below in a child process"]
fn crash_child() {
    let Ok(dir) = std::env::var("MULTIVERSE_CRASH_DIR") else { return };
    let dir = Path::new(&dir);
    let protocol: Protocol = std::env::var("MULTIVERSE_CRASH_PROTOCOL").unwrap().parse().unwrap();
    let run = |db: &Database| TxnOptions::new(db.protocol().strongest());
    match std::env::var("MULTIVERSE_CRASH_WORKLOAD").unwrap().as_str() {
        "tpcc" => {
            let (db, w, rep) = open(dir, protocol, |db| Tpcc::setup(db, tpcc_config()));
            serve(&db, &w, &rep, |th, number| {
                let mut k = w.worker(number, number as u64);
                let mut aborts = AbortCounts::default();
                loop {
                    k.next_txn();
                    if !run_txn(&db, &mut k, run(&db), &mut aborts).unwrap() {
                        continue; // rolled back by its logic: nothing to acknowledge
                    }
                    let (i, o) = (k.input(), k.outcome());
                    if i.ty == tpcc::NEW_ORDER {
                        say(format_args!("ack {th} new-order {} {} {} {} {}", i.w, i.d, o.o_id, i.ol_cnt, o.c));
                    } else {
                        say(format_args!("ack {th} {}", tpcc::TYPES[i.ty]));
                    }
                }
            });
        }
        "smallbank" => {
            let (db, w, rep) = open(dir, protocol, |db| SmallBank::setup(db, smallbank_config()));
            serve(&db, &w, &rep, |th, number| {
                let mut k = Announced { inner: w.worker(number, number as u64), thread: th };
                let mut aborts = AbortCounts::default();
                loop {
                    k.next_txn();
                    assert!(run_txn(&db, &mut k, run(&db), &mut aborts).unwrap(), "smallbank never rolls back");
                    say(format_args!("ack {th}"));
                }
            });
        }
        other => panic!("no workload {other}"),
    }
}

/// Runs the child on `dir` until a random moment after it is ready, kills
/// it (SIGKILL) and returns the lines it printed after "ready".
fn crash_once(dir: &Path, workload: &str, protocol: &str, rng: &mut impl Rng) -> Vec<String> {
    let stderr = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--ignored", "--nocapture", "--test-threads", "1"])
        .env("MULTIVERSE_CRASH_DIR", dir)
        .env("MULTIVERSE_CRASH_WORKLOAD", workload)
        .env("MULTIVERSE_CRASH_PROTOCOL", protocol)
        .stdout(Stdio::piped())
        .stderr(stderr.reopen().unwrap())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let why = |child: &mut std::process::Child| {
        let status = child.wait().unwrap();
        format!("{status}: {}", std::fs::read_to_string(stderr.path()).unwrap_or_default())
    };
    // libtest prints "test crash_child ... " in front of the first line.
    if !rx.iter().any(|l| l.ends_with("ready")) {
        panic!("{workload} on {protocol}: the child never got ready: {}", why(&mut child));
    }
    std::thread::sleep(Duration::from_millis(rng.gen_range(50..400)));
    if let Some(status) = child.try_wait().unwrap() {
        panic!("{workload} on {protocol}: the child stopped by itself ({status}): {}", why(&mut child));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap();
    rx.try_iter().collect()
}

fn iterations() -> u64 {
    std::env::var("MULTIVERSE_CRASH_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(4)
}

/// Crashes a new directory `iterations()` times under `protocol`;
/// `check(db, workload, lines, where)` checks each recovered state, given
/// the lines the child printed.
fn crash_repeatedly<W>(
    workload: &str,
    protocol: &str,
    setup: impl Fn(&Database) -> Result<W, String>,
    mut check: impl FnMut(&Database, &W, &[String], &str),
) {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0xC4A5_0002 ^ protocol.len() as u64);
    let dir = tempfile::tempdir().unwrap();
    for i in 0..iterations() {
        let started = Instant::now();
        let lines = crash_once(dir.path(), workload, protocol, &mut rng);
        let (db, w, rep) = open(dir.path(), protocol.parse().unwrap(), &setup);
        let at = format!("{workload} on {protocol}, iteration {i}");
        assert_eq!(rep.same_ts_conflicts, 0, "{at}: {rep:?}");
        check(&db, &w, &lines, &at);
        let acks = lines.iter().filter(|l| l.starts_with("ack ")).count();
        eprintln!(
            "{at}: {acks} acknowledged, {} replayed, {} dropped, {:.2} s",
            rep.replayed,
            rep.dropped.len(),
            started.elapsed().as_secs_f64()
        );
    }
}

/// The fields of a line after its first `skip` words, as numbers.
fn numbers(line: &str, skip: usize) -> Vec<i64> {
    line.split_whitespace().skip(skip).map(|x| x.parse().unwrap_or_else(|_| panic!("bad line '{line}'"))).collect()
}

#[test]
fn tpcc_keeps_acknowledged_orders_and_its_consistency_conditions() {
    for protocol in PROTOCOLS {
        // (warehouse, district, order, lines, customer) of every acknowledged New-Order so far.
        let mut orders: Vec<(u16, u8, u32, u8, u32)> = Vec::new();
        crash_repeatedly(
            "tpcc",
            protocol,
            |db| Tpcc::setup(db, tpcc_config()),
            |db, w, lines, at| {
                for l in lines.iter().filter(|l| l.contains(" new-order ")) {
                    let n = numbers(l, 3);
                    orders.push((n[0] as u16, n[1] as u8, n[2] as u32, n[3] as u8, n[4] as u32));
                }
                let [_, _, _, _, _, order, order_line, _, _] = w.tables();
                let mut t = db
                    .begin_with(TxnOptions {
                        read_only: true,
                        ..TxnOptions::new(multiverse_workloads::check_isolation(db))
                    })
                    .unwrap();
                for &(wh, d, o, ol_cnt, c) in &orders {
                    let row = t.get(order, tpcc::o_key(wh, d, o)).unwrap();
                    let row = row.unwrap_or_else(|| panic!("{at}: acknowledged order ({wh}, {d}, {o}) is gone"));
                    let found = (row[tpcc::O_OL_CNT], tpcc::get_u32(&row, tpcc::O_C_ID));
                    assert_eq!(found, (ol_cnt, c), "{at}: order ({wh}, {d}, {o}): (lines, customer)");
                    for ol in 1..=ol_cnt {
                        let line = t.get(order_line, tpcc::ol_key(wh, d, o, ol)).unwrap();
                        assert!(line.is_some(), "{at}: line {ol} of acknowledged order ({wh}, {d}, {o}) is gone");
                    }
                }
                t.commit().unwrap();
                if let Err(e) = w.check_state(db) {
                    panic!("{at}: {e}");
                }
            },
        );
        assert!(!orders.is_empty(), "{protocol}: no New-Order was acknowledged in any run");
    }
}

#[test]
fn smallbank_conserves_money_up_to_the_transactions_in_flight() {
    for protocol in PROTOCOLS {
        // The total the previous recovery found.
        let mut before: Option<i128> = None;
        crash_repeatedly(
            "smallbank",
            protocol,
            |db| SmallBank::setup(db, smallbank_config()),
            |db, w, lines, at| {
                let mut acked = 0i128;
                let mut in_flight = [None::<i64>; THREADS];
                for l in lines {
                    let n = numbers(l, 1);
                    match l.split_whitespace().next() {
                        Some("begin") => in_flight[n[0] as usize] = Some(n[1]),
                        Some("ack") => {
                            let d = in_flight[n[0] as usize].take();
                            acked += d.unwrap_or_else(|| panic!("{at}: '{l}' without a begin")) as i128;
                        }
                        _ => panic!("{at}: bad line '{l}'"),
                    }
                }
                if let Err(e) = w.check_state(db) {
                    panic!("{at}: {e}");
                }
                let (total, _, _) = w.total_money(db).unwrap();
                let base = *before.get_or_insert_with(|| w.initial_total());
                let unexplained = total - base - acked;
                // Each unacknowledged transaction committed wholly or not at all.
                let pending: Vec<i128> = in_flight.iter().flatten().map(|&d| d as i128).collect();
                let explained = (0..1u32 << pending.len()).any(|set| {
                    unexplained == (0..pending.len()).filter(|i| set & 1 << i != 0).map(|i| pending[i]).sum::<i128>()
                });
                assert!(
                    explained,
                    "{at}: the total moved by {unexplained} cents beyond the {acked} acknowledged; in flight: {pending:?}"
                );
                before = Some(total);
            },
        );
    }
}
