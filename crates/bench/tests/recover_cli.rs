//! `multiverse recover` on the data directory of a durable `bench` run: it
//! rebuilds the recorded workload's schema, loads the directory, and runs
//! the workload's check of the recovered rows; a directory whose rows break
//! the workload's invariants, or whose workload file does not describe
//! them, fails with one line.
//!
//! Every state a killed run leaves (no checkpoint, a workload file and a
//! checkpoint of no tables, part of the load) is a valid directory (exit
//! 0); input that is not one (an empty directory, an export) gets one line
//! and exit 1 and is left as it was, never a panic or an abort;
//! damage that may have lost acknowledged commits exits 3, under either
//! `--on-damage` policy, and names `--salvage OUT`, which writes out every
//! intact log record that recovery drops without changing the directory.

mod common;

use common::{hex, multiverse, text};
use multiverse::{Database, Durability, Isolation, Key, Options, TableSpec};
use multiverse_workloads::hekaton::{Hekaton, HekatonConfig};
use multiverse_workloads::tpcc::{self, Tpcc, TpccConfig};
use multiverse_workloads::Workload;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The exit status of a damaged directory.
const DAMAGED: i32 = 3;

/// Runs `multiverse recover DIR` with `more` flags.
fn recover(dir: &Path, more: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_multiverse"))
        .arg("recover")
        .arg(dir)
        .args(more)
        .output()
        .expect("the multiverse binary runs")
}

/// Runs `multiverse recover DIR`, expecting success; returns stdout.
fn recovers(dir: &Path) -> String {
    let o = recover(dir, &[]);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{}: stdout: {out}; stderr: {err}", dir.display());
    assert!(err.is_empty(), "{err}");
    out
}

/// Runs `multiverse recover DIR` with `more` flags, expecting exit status
/// `code`; returns the one error line (and stdout).
fn refused(dir: &Path, more: &[&str], code: i32) -> (String, String) {
    let o = recover(dir, more);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(code), "{}: stdout: {out}; stderr: {err}", dir.display());
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("multiverse: "), "{err}");
    (err, out)
}

/// Runs `multiverse recover DIR`, expecting failure; returns the error line.
fn recover_fails(dir: &Path) -> String {
    refused(dir, &[], 1).0
}

fn durable(dir: &Path) -> Options {
    Options { durability: Durability::Sync, data_dir: Some(dir.to_path_buf()), ..Options::default() }
}

/// What `bench --durability` leaves before it creates the workload's tables:
/// the checkpoint of `Database::open`, of no tables.
fn first_checkpoint(dir: &Path) {
    let (db, _) = Database::open_with(durable(dir), |_| Ok(())).unwrap();
    drop(db);
}

fn write(dir: &Path, name: &str, data: impl AsRef<[u8]>) {
    std::fs::write(dir.join(name), data).unwrap();
}

/// A fresh subdirectory of `root`.
fn subdir(root: &Path, name: &str) -> PathBuf {
    let d = root.join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const TPCC_STARTED: &str = "workload=tpcc\nwarehouses=1\nload=started\n";

#[test]
fn recover_checks_the_consistency_of_a_durable_tpcc_run() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let d = data.to_str().unwrap();
    let bench = "bench --workload tpcc --warehouses 1 --threads 2 --duration 0.3 --durability sync --data-dir";
    let o = multiverse(&bench.split(' ').chain([d]).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let file = data.join("workload");
    let recorded = std::fs::read_to_string(&file).unwrap();
    assert!(recorded.contains("workload=tpcc\nwarehouses=1\n"), "{recorded}");
    assert!(recorded.ends_with("\nload=finished\n"), "{recorded}");

    let out = recovers(&data);
    assert!(out.contains("  workload   tpcc (warehouses=1, "), "{out}");
    assert!(!out.contains("load="), "{out}");
    assert!(!out.contains("  state "), "{out}");
    assert!(out.contains("  check      passed: conditions 1-4 hold in all 10 districts of 1 warehouses"), "{out}");
    assert!(out.contains("  unchecked  the numbers of orders"), "{out}");

    // A workload file that claims a second warehouse: its rows are not there.
    std::fs::write(&file, recorded.replace("warehouses=1", "warehouses=2")).unwrap();
    let e = recover_fails(&data);
    assert!(e.contains("tpcc consistency check failed: warehouse 2 is missing"), "{e}");
    // Another workload's schema: the tables differ.
    std::fs::write(&file, "workload=smallbank\ncustomers=10\n").unwrap();
    let e = recover_fails(&data);
    assert!(e.contains("workload smallbank has the tables smallbank.customer"), "{e}");
    // A damaged file, one line.
    std::fs::write(&file, "workload=tpcc\nwarehouses=several\n").unwrap();
    let e = recover_fails(&data);
    assert!(e.contains("warehouses=several is not a valid value"), "{e}");
    // The one-word file of earlier versions: loaded as plain tables, not checked.
    std::fs::write(&file, "tpcc\n").unwrap();
    let out = recovers(&data);
    assert!(out.contains("recorded without its parameters") && !out.contains("check      passed"), "{out}");
    // The file of earlier versions, without load=: checked.
    std::fs::write(&file, recorded.replace("load=finished\n", "")).unwrap();
    assert!(recovers(&data).contains("  check      passed: "));
    std::fs::write(&file, &recorded).unwrap();

    // A committed transaction that breaks condition 1 (W_YTD is the sum of
    // its districts' D_YTD): written through the log of a reopened database,
    // so recover replays it and must catch it.
    let opts = durable(&data);
    let cfg = TpccConfig { warehouses: 1, ..TpccConfig::default() };
    let schema = |db: &Database| Tpcc::setup(db, cfg).map(drop).map_err(multiverse::Error::InvalidArgument);
    let (db, _) = Database::open_with(opts, schema).unwrap();
    let district = db.table(tpcc::names::DISTRICT).unwrap();
    db.run(Isolation::Serializable, |t| {
        t.modify(district, tpcc::d_key(1, 3), |v| tpcc::put_i64(v, tpcc::D_YTD, tpcc::get_i64(v, tpcc::D_YTD) + 1))
    })
    .unwrap();
    drop(db);
    let e = recover_fails(&data);
    assert!(e.contains("tpcc consistency check failed: condition 1: warehouse 1 has W_YTD"), "{e}");
}

/// Starts `bench --workload tpcc` into `data`, long enough not to finish.
fn start_bench(data: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_multiverse"))
        .args(["bench", "--workload", "tpcc", "--warehouses", "2", "--threads", "2", "--duration", "60"])
        .args(["--durability", "sync", "--data-dir"])
        .arg(data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits (at most a minute) until `ready` holds.
fn wait_until(what: &str, ready: impl Fn() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < Duration::from_secs(60), "{what} did not happen in a minute");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_bench_run_killed_while_loading_is_recovered_as_far_as_it_got() {
    let dir = tempfile::tempdir().unwrap();

    // Killed (SIGKILL) as soon as its open is done: the first checkpoint
    // and the log's manifest are there.
    let early = dir.path().join("early");
    let mut child = start_bench(&early);
    wait_until("the open", || {
        early.join("manifest").exists()
            && std::fs::read_dir(&early)
                .is_ok_and(|mut d| d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".mvc"))))
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let out = recovers(&early);
    assert!(out.contains("  state      "), "{out}");

    // Killed while it loads: the rows loaded so far are recovered, and the
    // invariants (which do not hold yet) are not checked.
    let loading = dir.path().join("loading");
    let mut child = start_bench(&loading);
    let log_bytes = || -> u64 {
        let Ok(d) = std::fs::read_dir(&loading) else { return 0 };
        d.flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".mvl"))
            .map(|e| e.metadata().unwrap().len())
            .sum()
    };
    wait_until("loading", || loading.join("workload").exists() && log_bytes() > 2 << 20);
    child.kill().unwrap();
    child.wait().unwrap();
    let file = std::fs::read_to_string(loading.join("workload")).unwrap();
    let out = recovers(&loading);
    if file.contains("load=started") {
        assert!(out.contains("  state      loading was interrupted: "), "{out}");
        assert!(out.contains(" of the 1,098,219 rows the load writes are here"), "{out}");
        assert!(out.contains("  check      not run: the load did not finish"), "{out}");
        let rows: u64 = out
            .lines()
            .filter_map(|l| {
                l.strip_prefix("  table      ")?.split(": ").nth(1)?.strip_suffix(" rows")?.parse::<u64>().ok()
            })
            .sum();
        assert!(rows > 0, "{out}");
    } else {
        // A machine fast enough to load 1.1 million rows meanwhile.
        assert!(out.contains("  check      passed: "), "{out}");
    }
}

#[test]
fn every_state_a_killed_load_leaves_is_a_valid_directory() {
    let root = tempfile::tempdir().unwrap();

    // Only the lock of a database killed while opening.
    let d = subdir(root.path(), "lock");
    write(&d, "LOCK", "");
    let out = recovers(&d);
    assert!(out.contains("  state      empty: no checkpoint"), "{out}");
    assert!(out.contains("  generation 0"), "{out}");

    // An unfinished first checkpoint: dropped, and said so.
    let d = subdir(root.path(), "tmp");
    write(&d, "checkpoint-00000001-00000000000000000001.mvc.tmp", "half");
    let out = recovers(&d);
    assert!(out.contains("  state      empty: no checkpoint"), "{out}");
    assert!(out.contains("  dropped    checkpoint-00000001-00000000000000000001.mvc.tmp: an unfinished"), "{out}");

    // Only the workload file.
    let d = subdir(root.path(), "workload-only");
    write(&d, "workload", TPCC_STARTED);
    let out = recovers(&d);
    assert!(out.contains("  state      empty: no checkpoint (a run killed before its first checkpoint)"), "{out}");
    assert!(out.contains("  table      tpcc.warehouse: 0 rows"), "{out}");
    assert!(out.contains("  check      not run: there is no tpcc data"), "{out}");

    // The first checkpoint (no tables): killed before creating the tables.
    let d = subdir(root.path(), "no-tables");
    first_checkpoint(&d);
    let out = recovers(&d);
    assert!(out.contains("  state      empty: no tables"), "{out}");
    assert!(out.contains("  generation 1"), "{out}");

    // The workload file and the first checkpoint, in this version's file
    // and in an earlier version's (without load=).
    for (name, file) in [("started", TPCC_STARTED), ("earlier", "workload=tpcc\nwarehouses=1\n")] {
        let d = subdir(root.path(), name);
        first_checkpoint(&d);
        write(&d, "workload", file);
        let out = recovers(&d);
        assert!(out.contains("  state      loading was interrupted: 0 of the 599,540 rows"), "{name}: {out}");
        assert!(out.contains("  check      not run: the load did not finish"), "{name}: {out}");
    }

    // Part of a load: the first of four slices of a hekaton load, logged.
    let d = subdir(root.path(), "part");
    let (db, _) = Database::open_with(durable(&d), |_| Ok(())).unwrap();
    write(&d, "workload", "workload=hekaton\nrows=1000\nreads=10\nwrites=2\nload=started\n");
    let w = Hekaton::setup(&db, HekatonConfig { rows: 1000, ..HekatonConfig::default() }).unwrap();
    w.load(&db, 0, 4, &|_| {}).unwrap();
    drop(db);
    let out = recovers(&d);
    assert!(out.contains("  state      loading was interrupted: 250 of the 1,000 rows"), "{out}");
    assert!(out.contains("  table      hekaton: 250 rows"), "{out}");

    // Tables created after the checkpoint, and no workload file: the
    // tables come from the log.
    let d = subdir(root.path(), "log-only-tables");
    let (db, _) = Database::open_with(durable(&d), |_| Ok(())).unwrap();
    for name in ["late", "later"] {
        let t = db.create_table(TableSpec::hash(name, 64)).unwrap();
        db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1u64), b"v")).unwrap();
    }
    drop(db);
    let out = recovers(&d);
    assert!(out.contains("  table      late: 1 row\n  table      later: 1 row"), "{out}");

    // A workload file that says the load finished, but no checkpoint holds
    // it: not a state a crash leaves.
    let d = subdir(root.path(), "finished");
    first_checkpoint(&d);
    write(&d, "workload", "workload=tpcc\nwarehouses=1\nload=finished\n");
    let (e, out) = refused(&d, &[], DAMAGED);
    assert!(
        out.contains("  DAMAGED    the workload file says the load finished, but the newest checkpoint lacks"),
        "{out}"
    );
    assert!(e.contains("commits acknowledged as durable may be lost"), "{e}");
}

#[test]
fn a_workload_file_too_large_for_memory_is_refused_as_bench_refuses_it() {
    let root = tempfile::tempdir().unwrap();
    let huge = "100000000000000";
    // A directory whose checkpoint holds the hekaton table, so that the
    // schema is what would be created.
    let d = subdir(root.path(), "hekaton");
    let small = HekatonConfig { rows: 100, ..HekatonConfig::default() };
    let schema = |db: &Database| Hekaton::setup(db, small).map(drop).map_err(multiverse::Error::InvalidArgument);
    drop(Database::open_with(durable(&d), schema).unwrap());
    write(&d, "workload", format!("workload=hekaton\nrows={huge}\nload=finished\n"));
    let (e, _) = refused(&d, &[], 1);
    assert!(e.contains(&format!("workload: rows={huge} needs about ")), "{e}");
    // The same estimate bench refuses the same size with.
    let b = common::fails(&["--workload", "hekaton", "--rows", huge]);
    let need = |s: &str| s.split("needs about ").nth(1).and_then(|r| r.split(" of memory").next()).map(str::to_owned);
    assert!(need(&b).is_some() && need(&b) == need(&e), "bench: {b}; recover: {e}");

    for (w, file, expect) in [
        ("sibench", format!("workload=sibench\nrows={huge}\n"), "needs about "),
        ("ycsb", format!("workload=ycsb\nrows={huge}\nvalue_bytes=1000\n"), "needs about "),
        ("tpcc", "workload=tpcc\nwarehouses=4294967295\n".to_string(), "too large"),
        ("tatp", format!("workload=tatp\nsubscribers={huge}\n"), "too large"),
        ("smallbank", format!("workload=smallbank\ncustomers={huge}\n"), "too large"),
        ("rows-overflow", "workload=hekaton\nrows=18446744073709551616\n".to_string(), "is not a valid value"),
    ] {
        let d = subdir(root.path(), w);
        first_checkpoint(&d);
        write(&d, "workload", file);
        let (e, out) = refused(&d, &[], 1);
        assert!(e.contains(expect) && out.is_empty(), "{w}: {e}");
    }
}

/// An empty directory holds nothing to recover, and a directory that
/// `export` wrote is an export, which `import` loads: both are refused in
/// one line (exit 1), and nothing in them is changed, created or deleted.
#[test]
fn an_empty_directory_and_an_export_are_refused_and_left_as_they_are() {
    let root = tempfile::tempdir().unwrap();
    let empty = subdir(root.path(), "empty");
    let e = recover_fails(&empty);
    assert!(e.contains("empty: an empty directory: nothing to recover"), "{e}");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0, "nothing is created");
    let (e, out) = refused(&empty, &["--on-damage", "refuse"], 1);
    assert!(e.contains("nothing to recover") && out.is_empty(), "{e} {out}");

    // An export of a data directory with rows, as written, and with the
    // workload file an export of a bench run's directory copies.
    let data = root.path().join("data");
    let (db, _) =
        Database::open_with(durable(&data), |db| db.create_table(TableSpec::ordered("t")).map(|_| ())).unwrap();
    let t = db.table("t").unwrap();
    db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1u64), b"v")).unwrap();
    drop(db);
    let export = root.path().join("export");
    let o = multiverse(&["export", data.to_str().unwrap(), "--out", export.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for workload in [None, Some("workload=tpcc\nwarehouses=1\nload=finished\n")] {
        if let Some(w) = workload {
            write(&export, "workload", w);
        }
        let before = tree(&export);
        let e = recover_fails(&export);
        assert!(e.contains("an export written by 'multiverse export', not a multiverse data directory"), "{e}");
        assert!(e.contains(&format!("'multiverse import {} --into NEWDIR'", export.display())), "{e}");
        let e = recover_fails(&export);
        assert!(!e.contains("damaged"), "{e}");
        assert_eq!(tree(&export), before, "nothing changed");
        // export and backup refuse it the same way.
        let out = root.path().join("out");
        for cmd in ["export", "backup"] {
            let o = multiverse(&[cmd, export.to_str().unwrap(), "--out", out.to_str().unwrap()]);
            assert_eq!(o.status.code(), Some(1), "{cmd}: {}", text(&o.stderr));
            assert!(text(&o.stderr).contains("an export written by 'multiverse export'"), "{cmd}");
            assert!(!out.exists(), "{cmd} wrote nothing");
        }
        assert_eq!(tree(&export), before, "nothing changed");
    }
}

#[test]
fn bad_input_gets_one_line_never_a_panic() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let refuse = |d: &Path, expect: &str| {
        let (e, out) = refused(d, &[], 1);
        assert!(e.contains(expect), "expected '{expect}': {e}");
        assert!(out.is_empty(), "{out}");
    };

    // Not a directory.
    refuse(&r.join("missing"), "missing: no such directory");
    write(r, "plain", "x");
    refuse(&r.join("plain"), "plain: not a directory");
    use std::os::unix::ffi::OsStrExt;
    refuse(&r.join(std::ffi::OsStr::from_bytes(b"bad-\xff-name")), "no such directory");
    let d = subdir(r, "foreign");
    write(&d, "notes.txt", "hello");
    refuse(&d, "not a multiverse data directory (none of its 1 entries");
    let d = subdir(r, "unreadable");
    first_checkpoint(&d);
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o000)).unwrap();
        // Root reads it anyway.
        if std::fs::read_dir(&d).is_err() {
            refuse(&d, "Permission denied");
        }
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    // Workload files that are not one.
    let cases: &[(&str, &[u8], &str)] = &[
        ("not-utf8", b"workload=tpcc\nwarehouses=\xff\xfe\n", "not text (invalid UTF-8 at byte 25)"),
        ("no-equals", b"workload=tpcc\nwarehouses\n", "line 2: 'warehouses' is not key=value"),
        ("twice", b"workload=tpcc\nwarehouses=1\nwarehouses=2\n", "line 3: warehouses is given twice"),
        ("no-workload", b"warehouses=1\n", "no workload= line"),
        ("empty-workload", b"workload=\n", "workload= names no workload"),
        ("unknown", b"workload=nosuch\nrows=1\n", "unknown workload 'nosuch' (known workloads: hekaton"),
        ("unknown-word", b"\x01\x02\n", "unknown workload '\\u{1}\\u{2}'"),
        ("in-memory", b"workload=predicate\nrows=10\n", "workload predicate runs in memory only"),
        ("negative", b"workload=hekaton\nrows=-5\n", "rows=-5 is not a valid value"),
        ("zero", b"workload=hekaton\nrows=0\n", "--rows must be at least 1"),
        ("no-rows", b"workload=sibench\n", "no rows= line (the sibench schema needs it)"),
        ("mix", b"workload=tpcc\nwarehouses=1\nmix=lots\n", "mix=lots: "),
        ("theta", b"workload=ycsb\nrows=100\nvalue_bytes=100\ntheta=NaN\n", "theta NaN is out of range"),
        ("per-txn", b"workload=hekaton\nrows=10\nreads=4294967295\n", "each transaction touches"),
        ("load", b"workload=tpcc\nwarehouses=1\nload=maybe\n", "load=maybe is neither started nor finished"),
    ];
    for (name, file, expect) in cases {
        let d = subdir(r, name);
        first_checkpoint(&d);
        write(&d, "workload", file);
        refuse(&d, expect);
    }
    let d = subdir(r, "long-line");
    write(&d, "workload", format!("workload=tpcc\n{}\n", "z".repeat(5000)));
    let (e, _) = refused(&d, &[], 1);
    assert!(e.len() < 200 && e.contains("zzz...' is not key=value"), "{e}");
    let d = subdir(r, "huge-file");
    write(&d, "workload", vec![b'#'; 1 << 20]);
    refuse(&d, "1048576 bytes is not a workload file");
    let d = subdir(r, "workload-dir");
    subdir(&d, "workload");
    refuse(&d, "workload: not a regular file");
    // A FIFO where a file is read would block forever.
    for name in ["workload", "log-00000001-000-000000.mvl"] {
        let d = subdir(r, &format!("fifo-{name}"));
        first_checkpoint(&d);
        let fifo = d.join(name);
        std::fs::remove_file(&fifo).ok();
        if Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
            refuse(&d, &format!("{name}: not a regular file"));
        }
    }

    // Flags.
    let d = subdir(r, "flags");
    let (e, _) = refused(&d, &["--protocol", "nosuch"], 1);
    assert!(e.contains("nosuch"), "{e}");
    let o = recover(&d, &["--on-damage", "sometimes"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

#[test]
fn rows_a_check_cannot_read_are_an_error_line_not_a_panic() {
    let d = tempfile::tempdir().unwrap();
    let cfg = TpccConfig { warehouses: 1, ..TpccConfig::default() };
    let schema = |db: &Database| Tpcc::setup(db, cfg).map(drop).map_err(multiverse::Error::InvalidArgument);
    let (db, _) = Database::open_with(durable(d.path()), schema).unwrap();
    let warehouse = db.table(tpcc::names::WAREHOUSE).unwrap();
    db.run(Isolation::Serializable, |t| t.insert(warehouse, tpcc::w_key(1), b"short")).unwrap();
    drop(db);
    write(d.path(), "workload", "workload=tpcc\nwarehouses=1\nload=finished\n");
    let (e, _) = refused(d.path(), &[], 1);
    assert!(e.contains(&d.path().display().to_string()), "{e}");
}

/// Fills `dir` with a durable table whose two log streams rotate every few
/// hundred bytes; returns the transactions committed.
fn rotated_dir(dir: &Path) -> u64 {
    let opts = Options {
        log_streams: 2,
        log_rotate_bytes: 512,
        checkpoint_every: None,
        checkpoint_log_bytes: None,
        ..durable(dir)
    };
    let schema = |db: &Database| db.create_table(TableSpec::hash("acct", 1024)).map(drop);
    let (db, _) = Database::open_with(opts, schema).unwrap();
    let acct = db.table("acct").unwrap();
    std::thread::scope(|s| {
        for th in 0..8u64 {
            let db = &db;
            s.spawn(move || {
                for i in 0..ROTATED_PER_THREAD {
                    db.run(Isolation::Serializable, |t| t.insert(acct, Key::from(th * 1000 + i), b"0123456789"))
                        .unwrap();
                }
            });
        }
    });
    drop(db);
    8 * ROTATED_PER_THREAD
}

/// Inserts of each of `rotated_dir`'s eight threads.
const ROTATED_PER_THREAD: u64 = 80;

/// The log files of stream `s` in `dir`, oldest first.
fn stream_files(dir: &Path, s: u32) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("log-00000001-{s:03}-")))
        .collect();
    v.sort();
    v
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
}

#[test]
fn damage_exits_3_and_a_torn_tail_exits_0() {
    let root = tempfile::tempdir().unwrap();
    let pristine = root.path().join("pristine");
    let n = rotated_dir(&pristine);
    let out = recovers(&pristine);
    assert!(out.contains(&format!("  table      acct: {n} rows")), "{out}");
    assert!(!out.contains("dropped") && !out.contains("DAMAGED"), "{out}");
    // The stream with more files: which epochs (and so which stream) the
    // records fall in depends on how the group commits went; one CI run saw
    // stream 1 keep two files.
    let s1 = [0, 1].map(|s| stream_files(&pristine, s)).into_iter().max_by_key(Vec::len).unwrap();
    assert!(s1.len() >= 3, "a stream rotates: {s1:?}");
    let file = |d: &Path, p: &Path| d.join(p.file_name().unwrap());

    // A crash's torn tail (half a record at the end of the newest file):
    // dropped and reported, nothing acknowledged is lost.
    let d = root.path().join("torn");
    copy_dir(&pristine, &d);
    let mut data = std::fs::read(file(&d, s1.last().unwrap())).unwrap();
    data.extend_from_slice(&[40, 0, 0, 0, 1, 2, 3, 4, 1, 9, 9]);
    std::fs::write(file(&d, s1.last().unwrap()), &data).unwrap();
    for policy in ["keep-prefix", "refuse"] {
        let o = recover(&d, &["--on-damage", policy]);
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{policy}: {out}{}", text(&o.stderr));
        assert!(out.contains("  dropped    ") && out.contains("torn tail"), "{out}");
        assert!(out.contains(&format!("  table      acct: {n} rows")) && !out.contains("DAMAGED"), "{out}");
    }

    // A middle file of that stream deleted: a consistent prefix, every
    // dropped line, and exit 3; refused outright under refuse.
    let d = root.path().join("hole");
    copy_dir(&pristine, &d);
    std::fs::remove_file(file(&d, &s1[1])).unwrap();
    let (e, out) = refused(&d, &[], DAMAGED);
    assert!(e.contains("damaged") && e.contains("commits acknowledged as durable may be lost"), "{e}");
    assert!(out.contains("  DAMAGED    recovered the longest consistent prefix"), "{out}");
    assert!(out.contains("is missing"), "{out}");
    let rows: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("  table      acct: ")?.strip_suffix(" rows")?.parse::<u64>().ok())
        .expect("the prefix's rows");
    assert!(rows < n, "{out}");
    let dropped = out.lines().filter(|l| l.starts_with("  dropped    ")).count();
    assert!(dropped >= 2, "{out}");
    let (e, out) = refused(&d, &["--on-damage", "refuse"], DAMAGED);
    assert!(e.contains("refusing") && e.contains("--on-damage refuse") && e.contains("may be lost"), "{e}");
    assert!(out.is_empty(), "{out}");

    // A damaged checkpoint: nothing to keep a prefix of.
    let d = root.path().join("checkpoint");
    copy_dir(&pristine, &d);
    let cp = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "mvc"))
        .unwrap();
    let mut data = std::fs::read(&cp).unwrap();
    let mid = data.len() / 2;
    data[mid] ^= 0x55;
    std::fs::write(&cp, &data).unwrap();
    let (e, _) = refused(&d, &[], DAMAGED);
    assert!(e.contains("may be lost"), "{e}");
}

#[test]
fn recover_reads_a_directory_a_database_has_open() {
    let d = tempfile::tempdir().unwrap();
    let schema = |db: &Database| db.create_table(TableSpec::hash("acct", 64)).map(drop);
    let (db, _) = Database::open_with(durable(d.path()), schema).unwrap();
    let acct = db.table("acct").unwrap();
    for i in 0..10u64 {
        db.run(Isolation::Serializable, |t| t.insert(acct, Key::from(i), b"v")).unwrap();
    }
    let out = recovers(d.path());
    assert!(out.contains("  table      acct: 10 rows"), "{out}");
    if Path::new("/proc/locks").exists() {
        let me = format!("by process {}: a database has the directory open", std::process::id());
        assert!(out.contains("  in use     LOCK is locked (FLOCK) ") && out.contains(&me), "{out}");
    }
    // It took no lock and changed nothing: the owner goes on.
    db.run(Isolation::Serializable, |t| t.insert(acct, Key::from(10u64), b"v")).unwrap();
    drop(db);
    let out = recovers(d.path());
    assert!(out.contains("  table      acct: 11 rows") && !out.contains("in use"), "{out}");
}

/// Every file under `dir` (its folders too) and its bytes.
fn tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            out.extend(tree(&e.path()));
        } else {
            out.insert(e.path(), std::fs::read(e.path()).unwrap());
        }
    }
    out
}

/// The salvage in `out`: its summary and its records, by stream.
fn salvaged(out: &Path) -> (serde_json::Value, Vec<(u32, serde_json::Value)>) {
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("salvage.json")).unwrap()).unwrap();
    let mut records = Vec::new();
    for s in summary["streams"].as_array().unwrap() {
        let file = out.join(s["file"].as_str().unwrap());
        let stream = s["stream"].as_u64().unwrap() as u32;
        assert_eq!(file.file_name().unwrap().to_string_lossy(), format!("stream-{stream:03}.jsonl"));
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            records.push((stream, serde_json::from_str(line).unwrap()));
        }
        let n = records.iter().filter(|(st, _)| *st == stream).count() as u64;
        assert_eq!(s["records"].as_u64(), Some(n), "{summary}");
    }
    assert_eq!(summary["records"].as_u64(), Some(records.len() as u64), "{summary}");
    (summary, records)
}

#[test]
fn salvage_writes_every_intact_record_recovery_drops_and_changes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let pristine = root.path().join("pristine");
    let n = rotated_dir(&pristine);
    let all: std::collections::BTreeSet<String> = (0..8u64)
        .flat_map(|th| (0..ROTATED_PER_THREAD).map(move |i| hex(Key::from(th * 1000 + i).as_bytes())))
        .collect();
    assert_eq!(all.len() as u64, n);

    // Undamaged: nothing to salvage, an empty file per stream, exit 0.
    let out = root.path().join("clean");
    let o = recover(&pristine, &["--salvage", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}{}", text(&o.stdout), text(&o.stderr));
    let (summary, records) = salvaged(&out);
    assert!(
        records.is_empty() && summary["damaged"] == false && summary["format"] == "multiverse-salvage",
        "{summary}"
    );
    assert_eq!(summary["replayed"].as_u64(), Some(n), "{summary}");
    assert_eq!(summary["streams"].as_array().unwrap().len(), 2, "{summary}");

    // One byte flipped in the middle of the first file of the stream with
    // more files: one record (or mark) damaged, thousands of bytes intact
    // after it.
    let s1 = [0, 1].map(|s| stream_files(&pristine, s)).into_iter().max_by_key(Vec::len).unwrap();
    let d = root.path().join("flip");
    copy_dir(&pristine, &d);
    let victim = d.join(s1[0].file_name().unwrap());
    let mut data = std::fs::read(&victim).unwrap();
    let mid = data.len() / 2;
    data[mid] ^= 0x20;
    std::fs::write(&victim, &data).unwrap();
    let before = tree(&d);

    // Plain `recover`: the prefix, the damage, and how to salvage.
    let (e, out_text) = refused(&d, &[], DAMAGED);
    assert!(out_text.contains("  DAMAGED    ") && out_text.contains("  salvage    `multiverse recover "), "{out_text}");
    assert!(out_text.contains("--salvage OUT` writes the intact log records"), "{out_text}");
    assert!(e.contains("damaged") && e.contains("--salvage OUT"), "{e}");

    let out = root.path().join("salvaged");
    let (e, out_text) = refused(&d, &["--salvage", out.to_str().unwrap()], DAMAGED);
    assert!(e.contains("intact records that recovery drops are in") && e.contains("salvaged"), "{e}");
    assert!(out_text.contains("  stream     ") && out_text.contains("  DAMAGED    "), "{out_text}");
    assert_eq!(tree(&d), before, "salvage changed the data directory");
    let (summary, records) = salvaged(&out);
    assert!(summary["damaged"] == true, "{summary}");
    let victim_name = victim.file_name().unwrap().to_string_lossy().into_owned();
    let skipped = summary["skipped"].as_array().unwrap();
    assert!(skipped.len() == 1 && skipped[0].as_str().unwrap().starts_with(&victim_name), "{summary}");

    // Each record: where it was, why it is dropped, what it wrote.
    let mut keys = std::collections::BTreeSet::new();
    for (stream, r) in &records {
        assert_eq!(r["stream"].as_u64(), Some(u64::from(*stream)), "{r}");
        assert!(r["file"].as_str().unwrap().starts_with(&format!("log-00000001-{stream:03}-")), "{r}");
        assert!(r["offset"].as_u64().is_some() && r["epoch"].as_u64().is_some() && r["commit_ts"].as_u64().is_some());
        assert_eq!(r["generation"].as_u64(), Some(1), "{r}");
        assert!(["after-damage", "after-cut"].contains(&r["reason"].as_str().unwrap()), "{r}");
        let w = r["writes"].as_array().unwrap();
        assert_eq!(w.len(), 1, "{r}");
        assert!(w[0]["table"] == "acct" && w[0]["op"] == "put" && w[0]["value"] == hex(b"0123456789"), "{r}");
        assert!(keys.insert(w[0]["key"].as_str().unwrap().to_string()), "salvaged twice: {r}");
    }
    assert!(records.iter().any(|(_, r)| r["reason"] == "after-damage"), "{summary}");

    // With what recovery keeps, every row but the one the flip destroyed.
    let db = Database::new(Options { on_damage: multiverse::OnDamage::KeepPrefix, ..Options::default() }).unwrap();
    let acct = db.create_table(TableSpec::hash("acct", 1024)).unwrap();
    let rep = db.recover_from(&d).unwrap();
    let mut kept = std::collections::BTreeSet::new();
    db.run(Isolation::Serializable, |t| {
        t.scan(db.primary(acct), .., None, |k, _| {
            kept.insert(hex(k.as_bytes()));
            true
        })
    })
    .unwrap();
    assert!(rep.damaged && (kept.len() as u64) < n, "{rep:?}");
    assert!(kept.is_disjoint(&keys), "a salvaged record that recovery replays");
    let lost: Vec<_> = all.iter().filter(|k| !kept.contains(*k) && !keys.contains(*k)).collect();
    assert!(lost.len() <= 1, "lost beyond the flipped record: {lost:?}");
    assert!(kept.iter().chain(&keys).all(|k| all.contains(k)));

    // OUT: never over anything, never inside DIR; nothing written then.
    let (e, _) = refused(&d, &["--salvage", out.to_str().unwrap()], 1);
    assert!(e.contains("exists and is not empty; nothing was written"), "{e}");
    let inside = d.join("salvage");
    let (e, _) = refused(&d, &["--salvage", inside.to_str().unwrap()], 1);
    assert!(e.contains("salvage never writes into the data directory"), "{e}");
    assert_eq!(tree(&d), before, "refused salvages changed the data directory");
    let (e, _) = refused(&root.path().join("missing"), &["--salvage", root.path().join("x").to_str().unwrap()], 1);
    assert!(e.contains("missing: no such directory"), "{e}");
    // An empty OUT is fine; --salvage does not load, so takes no policy.
    let empty = subdir(root.path(), "empty-out");
    let o = recover(&pristine, &["--salvage", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(empty.join("salvage.json").exists());
    let o = recover(&d, &["--salvage", root.path().join("y").to_str().unwrap(), "--on-damage", "refuse"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let left: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "temporary directories left: {left:?}");
}
