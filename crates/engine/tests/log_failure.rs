//! Fail-stop on a failed log (`wal::log`, "Fail-stop"): once a log round
//! cannot be written or synced, no client is shown a commit that a restart
//! loses. The commit that met the failure fails with `Error::LogFailed`,
//! so does every transaction that read its writes, every later `begin`
//! and commit, and a checkpoint; reopening the directory recovers exactly
//! the acknowledged commits.
//!
//! Three kinds of failing disk: an `EIO` on the write and on the sync
//! (`Faults::fail_log_write_after`, `fail_log_sync_after`), and a real
//! one: a child process whose file size limit (`RLIMIT_FSIZE`, with
//! `SIGXFSZ` ignored) makes the log's `write` fail with `EFBIG`.

use multiverse::research::Faults;
use multiverse::*;
use std::process::Command;
use std::time::Duration;

/// Values large enough that a few of them fill a small file size limit.
const VALUE: usize = 60 << 10;

fn value(i: u64) -> Vec<u8> {
    let mut v = vec![(i % 251) as u8; VALUE];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v
}

fn number(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[..8].try_into().unwrap())
}

fn options(protocol: Protocol, dir: &std::path::Path, faults: Faults) -> Options {
    Options {
        protocol,
        durability: Durability::Sync,
        data_dir: Some(dir.to_path_buf()),
        log_streams: 1,
        pomvcc_interval: Duration::from_micros(100),
        checkpoint_every: None,
        checkpoint_log_bytes: None,
        faults,
        ..Options::default()
    }
}

fn open(o: Options) -> Database {
    let (db, report) = Database::open_with(o, |db| db.create_table(TableSpec::hash("h", 64)).map(drop)).unwrap();
    assert!(!report.damaged, "{report:?}");
    db
}

/// Updates row 1 until a commit fails; returns the last acknowledged value
/// and the error.
fn write_until_failure(db: &Database, h: TableId) -> (u64, Error) {
    let mut acked = 0;
    for i in 1.. {
        match db.run(db.protocol().strongest(), |t| t.put(h, Key::from(1u64), value(i))) {
            Ok(()) => acked = i,
            Err(e) => return (acked, e),
        }
        assert!(i < 100_000, "the log never failed");
    }
    unreachable!()
}

/// After the failure: nothing begins or commits, no checkpoint is written.
fn assert_stopped(db: &Database, h: TableId, what: &str) {
    let p = db.protocol();
    let begin = db.begin(p.strongest()).err();
    assert!(matches!(begin, Some(Error::LogFailed(_))), "{what}: begin after the failure: {begin:?}");
    let read = db.run(p.strongest(), |t| t.get(h, Key::from(1u64)));
    assert!(
        matches!(read, Err(Error::LogFailed(_))),
        "{what}: a reader after the failure: {:?}",
        read.map(|v| v.map(|v| number(&v)))
    );
    let write = db.run(p.strongest(), |t| t.put(h, Key::from(2u64), b"later"));
    assert!(matches!(write, Err(Error::LogFailed(_))), "{what}: a writer after the failure: {write:?}");
    let cp = db.checkpoint();
    assert!(matches!(cp, Err(Error::LogFailed(_))), "{what}: a checkpoint after the failure: {cp:?}");
}

/// Reopens `dir` without faults: row 1 holds exactly the last acknowledged
/// value, row 2 (written only after the failure) is absent.
fn assert_recovers(protocol: Protocol, dir: &std::path::Path, acked: u64, what: &str) {
    let db = open(options(protocol, dir, Faults::default()));
    let h = db.table("h").unwrap();
    let (one, two) =
        db.run(protocol.strongest(), |t| Ok((t.get(h, Key::from(1u64))?, t.get(h, Key::from(2u64))?))).unwrap();
    assert_eq!(one.map(|v| number(&v)), Some(acked), "{what}: the recovered row is not the last acknowledged commit");
    assert_eq!(two, None, "{what}");
    // The reopened database works.
    db.run(protocol.strongest(), |t| t.put(h, Key::from(1u64), value(acked + 1))).unwrap();
}

#[test]
fn a_failed_write_or_sync_stops_every_protocol_and_loses_no_acknowledged_commit() {
    for protocol in Protocol::ALL {
        for sync in [false, true] {
            let what = format!("{protocol}, failing {}", if sync { "sync" } else { "write" });
            let dir = tempfile::tempdir().unwrap();
            let faults = if sync {
                Faults { fail_log_sync_after: Some(4), ..Faults::default() }
            } else {
                Faults { fail_log_write_after: Some(4), ..Faults::default() }
            };
            let db = open(options(protocol, dir.path(), faults));
            let h = db.table("h").unwrap();
            let (acked, err) = write_until_failure(&db, h);
            assert!(acked >= 1, "{what}: no commit before the failure");
            match &err {
                Error::LogFailed(m) => {
                    let os = if sync { "log sync" } else { "log write" };
                    assert!(m.contains(os) && m.contains("os error 5"), "{what}: {err}");
                    assert!(m.contains("cut off the file again"), "{what}: {err}");
                }
                _ => panic!("{what}: the failed commit returned {err:?}"),
            }
            assert_stopped(&db, h, &what);
            drop(db);
            assert_recovers(protocol, dir.path(), acked, &what);
        }
    }
}

/// A reader of the failed writer's row is never shown it with `Ok`: the
/// multi-version families abort it through its commit dependency, the
/// others refuse its commit (Silo's rule: it waits for the failed round).
#[test]
fn a_reader_of_a_failed_commit_fails_with_it() {
    for protocol in Protocol::ALL {
        let dir = tempfile::tempdir().unwrap();
        let faults =
            Faults { log_round_delay: Duration::from_millis(150), fail_log_sync_after: Some(2), ..Faults::default() };
        let db = open(options(protocol, dir.path(), faults));
        let h = db.table("h").unwrap();
        db.run(protocol.strongest(), |t| t.put(h, Key::from(1u64), value(1))).unwrap();
        db.run(protocol.strongest(), |t| t.put(h, Key::from(1u64), value(2))).unwrap();
        db.sync_commits().unwrap();
        let records = db.stats().log_records;
        std::thread::scope(|s| {
            let w = s.spawn(|| db.run(protocol.strongest(), |t| t.put(h, Key::from(1u64), value(3))));
            // The writer has appended its record: its (failing) round is pending.
            while db.stats().log_records == records {
                std::thread::sleep(Duration::from_millis(1));
            }
            let o = TxnOptions { read_only: true, ..TxnOptions::new(protocol.strongest()) };
            let read = db.run_with(o, RetryPolicy::default(), |t| t.get(h, Key::from(1u64)));
            match read {
                Ok(v) => assert_eq!(v.map(|v| number(&v)), Some(2), "{protocol}: a reader was shown a failed commit"),
                Err(e) => assert!(matches!(e, Error::LogFailed(_)), "{protocol}: {e:?}"),
            }
            let w = w.join().unwrap();
            assert!(matches!(w, Err(Error::LogFailed(_))), "{protocol}: the writer of the failed round: {w:?}");
        });
        assert_stopped(&db, h, protocol.name());
        drop(db);
        assert_recovers(protocol, dir.path(), 2, protocol.name());
    }
}

/// The file size limit of the child below, in KiB (bash's `ulimit -f`).
const FSIZE_KIB: u64 = 2048;

/// The child of `a_full_disk_stops_every_protocol`: under a file size
/// limit, writes each protocol's row until its log fails, and prints
/// `PROTOCOL ACKED ERROR` a line.
#[test]
fn fsize_child() {
    let Ok(root) = std::env::var("MULTIVERSE_FSIZE_DIR") else { return };
    for protocol in Protocol::ALL {
        let dir = std::path::Path::new(&root).join(protocol.name());
        let db = open(options(protocol, &dir, Faults::default()));
        let h = db.table("h").unwrap();
        let (acked, err) = write_until_failure(&db, h);
        assert!(matches!(err, Error::LogFailed(_)), "{protocol}: {err:?}");
        assert_stopped(&db, h, protocol.name());
        println!("FSIZE {} {acked} {err}", protocol.name());
    }
}

/// A real full disk: the log's `write` fails with `EFBIG` once a file
/// reaches the process's size limit.
#[test]
fn a_full_disk_stops_every_protocol_and_loses_no_acknowledged_commit() {
    let root = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {FSIZE_KIB} && exec \"$0\" --exact fsize_child --nocapture --test-threads=1"
        ))
        .arg(&exe)
        .env("MULTIVERSE_FSIZE_DIR", root.path())
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the child failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut seen = 0;
    // (The first line may follow the test harness's "test fsize_child ... ".)
    for line in stdout.lines().filter_map(|l| l.split_once("FSIZE ").map(|(_, rest)| rest)) {
        let mut f = line.splitn(3, ' ');
        let (name, acked, err) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        let protocol: Protocol = name.parse().unwrap();
        let acked: u64 = acked.parse().unwrap();
        // EFBIG, "File too large".
        assert!(err.contains("os error 27"), "{name}: {err}");
        assert!(acked * VALUE as u64 > (FSIZE_KIB << 10) / 4, "{name}: failed after {acked} commits");
        assert_recovers(protocol, &root.path().join(name), acked, name);
        seen += 1;
    }
    assert_eq!(seen, Protocol::ALL.len(), "{stdout}");
}
