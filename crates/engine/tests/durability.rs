//! Durability: what commits survives a reopen, checkpoints shorten the
//! log, damaged tails are dropped and reported, a damaged checkpoint is
//! refused, and every protocol's logs recover — with checkpoints taken
//! while transactions commit, and BOHM's pipeline in its log order.

mod common;

use multiverse::protocol::bohm::{Config, Done, ExecTxn, Feed, Next, Procedure};
use multiverse::*;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Every protocol.
fn protocols() -> impl Iterator<Item = Protocol> {
    Protocol::ALL.into_iter()
}

fn opts(dir: &Path, protocol: Protocol, durability: Durability) -> Options {
    Options {
        protocol,
        durability,
        data_dir: Some(dir.to_path_buf()),
        pomvcc_interval: std::time::Duration::from_micros(100),
        ..Options::default()
    }
}

fn schema(db: &Database) -> Result<()> {
    db.create_table(TableSpec::hash("h", 64))?;
    db.create_table(TableSpec::ordered("o"))?;
    Ok(())
}

fn open(dir: &Path, protocol: Protocol, durability: Durability) -> (Database, RecoveryReport) {
    Database::open_with(opts(dir, protocol, durability), schema).unwrap()
}

fn val(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

/// Every row of both tables, sorted.
fn rows(db: &Database) -> Vec<(String, u64, u64)> {
    let mut out = Vec::new();
    db.sync_commits().unwrap();
    let mut t = db.begin_with(TxnOptions { read_only: true, ..TxnOptions::new(db.protocol().strongest()) }).unwrap();
    for name in ["h", "o"] {
        let id = db.table(name).unwrap();
        t.scan(db.primary(id), .., None, |k, v| {
            out.push((name.to_string(), k.to_u64().unwrap(), u64::from_le_bytes(v[..8].try_into().unwrap())));
            true
        })
        .unwrap();
    }
    t.commit().unwrap();
    out.sort();
    out
}

/// 50 transactions of inserts, updates and deletes through `db`.
fn work(db: &Database, from: u64) {
    work_range(db, from..from + 50);
}

/// One transaction of inserts, updates and deletes per number in `range`.
fn work_range(db: &Database, range: std::ops::Range<u64>) {
    let (h, o) = (db.table("h").unwrap(), db.table("o").unwrap());
    for i in range {
        db.run(db.protocol().strongest(), |t| {
            t.put(h, Key::from(i % 20), val(i))?;
            t.put(o, Key::from(i), val(i * 2))?;
            if i % 7 == 0 {
                t.delete(o, Key::from(i - 1))?;
            }
            Ok(())
        })
        .unwrap();
        // POMVCC: the next transaction sees this one (section IV.D).
        db.sync_commits().unwrap();
    }
}

#[test]
fn commits_survive_a_reopen_under_every_protocol() {
    for p in protocols() {
        for d in [Durability::Sync, Durability::Async] {
            let dir = tempfile::tempdir().unwrap();
            let (db, rep) = open(dir.path(), p, d);
            assert_eq!(rep.generation, 0, "a fresh directory");
            work(&db, 1);
            db.flush_log().unwrap();
            let before = rows(&db);
            assert!(db.stats().log_records >= 50, "{p}: {:?}", db.stats());
            drop(db);
            let (db, rep) = open(dir.path(), p, d);
            assert_eq!(rep.replayed, 50, "{p} {d:?}: {rep:?}");
            assert!(rep.dropped.is_empty(), "{p}: {rep:?}");
            assert_eq!(rep.same_ts_conflicts, 0);
            assert_eq!(rows(&db), before, "{p} {d:?}");
            // The reopen wrote a checkpoint of generation 2: a third open
            // loads it and replays nothing.
            drop(db);
            let (db, rep) = open(dir.path(), p, d);
            assert_eq!((rep.generation, rep.replayed), (2, 0), "{p}: {rep:?}");
            assert_eq!(rep.checkpoint.as_ref().unwrap().2, before.len() as u64);
            assert_eq!(rows(&db), before);
        }
    }
}

#[test]
fn a_checkpoint_drops_the_logs_it_covers() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options { log_rotate_bytes: 4096, ..opts(dir.path(), Protocol::MvOcc, Durability::Sync) };
    let (db, _) = Database::open_with(o.clone(), schema).unwrap();
    work(&db, 1);
    work(&db, 100);
    let logs = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "mvl"))
            .count()
    };
    let before = logs(dir.path());
    assert!(before > 2, "files rotate at 4 KiB: {before}");
    let cp = db.checkpoint().unwrap();
    assert!(cp.rows > 0);
    work(&db, 200);
    let expect = rows(&db);
    assert!(logs(dir.path()) < before, "the checkpoint removed covered log files");
    drop(db);
    let (db, rep) = Database::open_with(o, schema).unwrap();
    assert_eq!(rep.checkpoint.as_ref().unwrap().1, cp.ts);
    assert_eq!(rep.replayed, 50, "only what followed the checkpoint: {rep:?}");
    assert_eq!(rows(&db), expect);
}

/// The newest log file of a directory.
fn last_log(dir: &Path) -> std::path::PathBuf {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "mvl") && std::fs::metadata(p).unwrap().len() > 100)
        .collect();
    v.sort();
    v.pop().expect("a log file with records")
}

#[test]
fn a_torn_or_damaged_log_tail_is_dropped_and_reported() {
    for damage in ["truncate", "flip"] {
        let dir = tempfile::tempdir().unwrap();
        // A flip in the middle is damage: keeping its prefix is asked for.
        let o = Options {
            log_streams: 1,
            on_damage: OnDamage::KeepPrefix,
            ..opts(dir.path(), Protocol::MvOcc, Durability::Sync)
        };
        let (db, _) = Database::open_with(o.clone(), schema).unwrap();
        work(&db, 1);
        drop(db);
        let path = last_log(dir.path());
        let mut data = std::fs::read(&path).unwrap();
        let n = data.len();
        match damage {
            // A torn write: the last record (the final epoch mark) and part
            // of the one before it are gone.
            "truncate" => data.truncate(n - 30),
            // A flipped byte in the middle: everything from that record on goes.
            _ => data[n / 2] ^= 0x40,
        }
        std::fs::write(&path, &data).unwrap();
        let (db, rep) = Database::open_with(o.clone(), schema).unwrap();
        assert!(!rep.dropped.is_empty(), "{damage}: {rep:?}");
        assert!(rep.replayed < 50, "{damage}: {rep:?}");
        // What was replayed is a prefix: the rows match the first k commits.
        let k = rep.replayed;
        let replay = tempfile::tempdir().unwrap();
        let (db2, _) = open(replay.path(), Protocol::MvOcc, Durability::Async);
        if k > 0 {
            work_prefix(&db2, k);
        }
        assert_eq!(rows(&db), rows(&db2), "{damage}: a prefix of {k} commits");
    }
}

/// The first `k` transactions of `work(db, 1)`.
fn work_prefix(db: &Database, k: u64) {
    work_range(db, 1..1 + k);
}

#[test]
fn a_damaged_checkpoint_is_refused() {
    for damage in ["truncate", "flip", "empty"] {
        let dir = tempfile::tempdir().unwrap();
        let (db, _) = open(dir.path(), Protocol::MvOcc, Durability::Sync);
        work(&db, 1);
        db.checkpoint().unwrap();
        drop(db);
        let mut cps: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "mvc"))
            .collect();
        cps.sort();
        let path = cps.pop().unwrap();
        let mut data = std::fs::read(&path).unwrap();
        let n = data.len();
        match damage {
            "truncate" => data.truncate(n - 5),
            "flip" => data[n / 2] ^= 1,
            _ => data.clear(),
        }
        std::fs::write(&path, &data).unwrap();
        let e = Database::open_with(opts(dir.path(), Protocol::MvOcc, Durability::Sync), schema).err().unwrap();
        assert!(matches!(&e, Error::Corrupt(m) if m.contains("checkpoint") && m.contains("refusing")), "{damage}: {e}");
    }
}

#[test]
fn bad_durability_settings_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let e = Database::new(opts(dir.path(), Protocol::MvOcc, Durability::Sync)).err().unwrap();
    assert!(e.to_string().contains("Database::open"), "{e}");
    let e =
        Database::open_with(Options { data_dir: None, ..opts(dir.path(), Protocol::MvOcc, Durability::Sync) }, schema)
            .err()
            .unwrap();
    assert!(e.to_string().contains("data_dir"), "{e}");
    let e = Database::open_with(opts(dir.path(), Protocol::MvOcc, Durability::None), schema).err().unwrap();
    assert!(e.to_string().contains("durability none"), "{e}");
    // A schema that lacks a table the data records: it is created as
    // recorded; one that creates it otherwise is refused, naming it.
    let (db, _) = open(dir.path(), Protocol::MvOcc, Durability::Sync);
    work(&db, 1);
    drop(db);
    let (db, _) = Database::open_with(opts(dir.path(), Protocol::MvOcc, Durability::Sync), |db| {
        db.create_table(TableSpec::hash("h", 64)).map(|_| ())
    })
    .unwrap();
    assert_eq!(db.table_names(), ["h", "o"]);
    drop(db);
    let e = Database::open_with(opts(dir.path(), Protocol::MvOcc, Durability::Sync), |db| {
        db.create_table(TableSpec::hash("o", 64)).map(|_| ())
    })
    .err()
    .unwrap();
    assert!(e.to_string().contains("table 'o'"), "{e}");
    assert_eq!("sync".parse::<Durability>(), Ok(Durability::Sync));
    assert!("later".parse::<Durability>().is_err());
}

/// POMVCC's shared commit timestamps (section VI.B): concurrent transfers
/// at one timestamp replay in any order to the same total.
#[test]
fn pomvcc_logs_recover_consistently() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(dir.path(), Protocol::Pomvcc, Durability::Async);
    let (db, _) = Database::open_with(o.clone(), schema).unwrap();
    let h = db.table("h").unwrap();
    db.run(Isolation::Snapshot, |t| {
        for k in 0..16 {
            t.insert(h, Key::from(k), val(100))?;
        }
        Ok(())
    })
    .unwrap();
    db.sync_commits().unwrap(); // the transfers begin after the deposits (section IV.D)
    std::thread::scope(|s| {
        for th in 0..2u64 {
            let db = &db;
            s.spawn(move || {
                for i in 0..300u64 {
                    let (a, b) = ((i * 7 + th) % 16, (i * 3 + 5 * th + 1) % 16);
                    if a == b {
                        continue;
                    }
                    let _ = db.run(Isolation::Snapshot, |t| {
                        let x = u64::from_le_bytes(t.get(h, Key::from(a))?.unwrap()[..8].try_into().unwrap());
                        let y = u64::from_le_bytes(t.get(h, Key::from(b))?.unwrap()[..8].try_into().unwrap());
                        t.update(h, Key::from(a), val(x - 1))?;
                        t.update(h, Key::from(b), val(y + 1))
                    });
                }
            });
        }
    });
    db.flush_log().unwrap();
    let expect = rows(&db);
    drop(db);
    let (db, rep) = Database::open_with(o, schema).unwrap();
    assert_eq!(rep.same_ts_conflicts, 0, "{rep:?}");
    assert!(rep.replayed > 100, "{rep:?}");
    let got = rows(&db);
    assert_eq!(got.iter().map(|r| r.2).sum::<u64>(), 1600, "money is neither made nor lost");
    assert_eq!(got, expect);
}

/// Transfers between 16 accounts from two threads while a third takes
/// checkpoints: the single-version protocols freeze commits for theirs,
/// the multi-version ones read a snapshot. The reopened state is the state
/// before the close, and no money is made or lost.
#[test]
fn checkpoints_taken_while_transactions_commit_recover_under_every_protocol() {
    for p in protocols().filter(|&p| p != Protocol::Bohm) {
        let dir = tempfile::tempdir().unwrap();
        let o = Options { log_rotate_bytes: 8192, ..opts(dir.path(), p, Durability::Async) };
        let (db, _) = Database::open_with(o.clone(), schema).unwrap();
        let h = db.table("h").unwrap();
        let iso = p.strongest();
        db.run(iso, |t| {
            for k in 0..16 {
                t.insert(h, Key::from(k), val(100))?;
            }
            Ok(())
        })
        .unwrap();
        db.sync_commits().unwrap();
        let stop = AtomicBool::new(false);
        let taken = AtomicUsize::new(0);
        let checkpoints = std::thread::scope(|s| {
            let writers: Vec<_> = (0..2u64)
                .map(|th| {
                    let (db, taken) = (&db, &taken);
                    s.spawn(move || {
                        // At least 400 transfers (times MULTIVERSE_STRESS), and on
                        // until 5 checkpoints are taken.
                        let n = 400 * common::stress();
                        for i in (0u64..).take_while(|&i| i < n || taken.load(Ordering::Relaxed) < 5) {
                            let (a, b) = ((i * 7 + th) % 16, (i * 3 + 5 * th + 1) % 16);
                            if a == b {
                                continue;
                            }
                            let _ = db.run(iso, |t| {
                                let x = u64::from_le_bytes(t.get(h, Key::from(a))?.unwrap()[..8].try_into().unwrap());
                                let y = u64::from_le_bytes(t.get(h, Key::from(b))?.unwrap()[..8].try_into().unwrap());
                                t.update(h, Key::from(a), val(x - 1))?;
                                t.update(h, Key::from(b), val(y + 1))
                            });
                        }
                    })
                })
                .collect();
            let cp = s.spawn(|| {
                // Writers stop waiting for checkpoints if this thread fails.
                struct Done<'a>(&'a AtomicUsize);
                impl Drop for Done<'_> {
                    fn drop(&mut self) {
                        self.0.fetch_add(1000, Ordering::Relaxed);
                    }
                }
                let _done = Done(&taken);
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let cp = db.checkpoint().unwrap();
                    // The checkpoint alone is a consistent state: no
                    // transfer in part.
                    let alone = tempfile::tempdir().unwrap();
                    std::fs::copy(&cp.path, alone.path().join(cp.path.file_name().unwrap())).unwrap();
                    let mem = Database::new(Options { protocol: p, ..Options::default() }).unwrap();
                    schema(&mem).unwrap();
                    mem.recover_from(alone.path()).unwrap();
                    assert_eq!(rows(&mem).iter().map(|r| r.2).sum::<u64>(), 1600, "{p}: {}", cp.path.display());
                    n += 1;
                    taken.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                n
            });
            for w in writers {
                w.join().unwrap();
            }
            stop.store(true, Ordering::Relaxed);
            cp.join().unwrap()
        });
        assert!(checkpoints >= 5);
        db.flush_log().unwrap();
        let expect = rows(&db);
        assert_eq!(expect.iter().map(|r| r.2).sum::<u64>(), 1600, "{p}");
        assert!(db.stats().committed > 400 * common::stress(), "{p}: {:?}", db.stats());
        drop(db);
        let (db, rep) = Database::open_with(o, schema).unwrap();
        assert!(rep.dropped.is_empty(), "{p}: {rep:?}");
        assert_eq!(rows(&db), expect, "{p}: {rep:?} after {checkpoints} checkpoints");
    }
}

/// A BOHM transfer of one unit between two accounts; it aborts (and so
/// logs nothing) when the payer has nothing.
struct Transfer {
    t: TableId,
    from: u64,
    to: u64,
}

impl Procedure for Transfer {
    type Error = Error;
    fn declare(&self, a: &mut AccessSet) {
        a.reads.clear();
        a.writes.clear();
        a.writes.push((self.t, Key::from(self.from)));
        a.writes.push((self.t, Key::from(self.to)));
    }
    fn run(&mut self, tx: &mut ExecTxn<'_>) -> Result<()> {
        let balance = |v: &[u8]| u64::from_le_bytes(v[..8].try_into().unwrap());
        let have = tx.get_with(self.t, Key::from(self.from), balance)?.unwrap_or(0);
        if have == 0 || self.from == self.to {
            return Err(Error::KeyNotFound);
        }
        tx.update(self.t, Key::from(self.from), val(have - 1))?;
        let other = tx.get_with(self.t, Key::from(self.to), balance)?.unwrap_or(0);
        tx.update(self.t, Key::from(self.to), val(other + 1))
    }
}

/// A fixed list of transfers, counting the committed ones.
struct Transfers {
    todo: std::vec::IntoIter<Transfer>,
    committed: u64,
}

impl Feed<Transfer> for Transfers {
    fn next(&mut self, _idle: bool) -> Next<Transfer> {
        self.todo.next().map_or(Next::Stop, Next::Txn)
    }
    fn done(&mut self, d: Done<Transfer>) {
        self.committed += d.outcome.is_committed() as u64;
    }
}

/// BOHM's pipeline logs each committed transaction at its log position
/// (sync: a batch is handed back once durable); recovery replays them in
/// that order, after the interactive loader's record.
#[test]
fn bohm_pipeline_logs_replay_in_log_order() {
    for d in [Durability::Sync, Durability::Async] {
        let dir = tempfile::tempdir().unwrap();
        let (db, _) = open(dir.path(), Protocol::Bohm, d);
        let h = db.table("h").unwrap();
        db.run(Isolation::Serializable, |t| {
            for k in 0..20 {
                t.insert(h, Key::from(k), val(k % 3))?;
            }
            Ok(())
        })
        .unwrap();
        let todo: Vec<_> = (0..1500u64).map(|i| Transfer { t: h, from: i * 7 % 20, to: i * 13 % 19 }).collect();
        let cfg = Config { cc_threads: 2, exec_threads: 2, batch_size: 16, batches_in_flight: 3 };
        let (feed, _) = db.bohm_run(cfg, Transfers { todo: todo.into_iter(), committed: 0 }).unwrap();
        assert!(feed.committed > 500 && feed.committed < 1500, "some abort: {}", feed.committed);
        if d == Durability::Sync {
            // Every batch handed back was durable: nothing left to flush.
            assert!(db.stats().log_records > feed.committed, "{:?}", db.stats());
        }
        db.flush_log().unwrap();
        let expect = rows(&db);
        assert_eq!(expect.iter().map(|r| r.2).sum::<u64>(), (0..20).map(|k| k % 3).sum::<u64>());
        drop(db);
        let (db, rep) = open(dir.path(), Protocol::Bohm, d);
        assert_eq!(rep.replayed, feed.committed + 1, "{d:?}: {rep:?}");
        assert_eq!(rows(&db), expect, "{d:?}");
    }
}

/// Checkpoints fall due on a timer and by log size; a commit that finds
/// one due writes it, and the reopened state is the same.
#[test]
fn checkpoints_fall_due_on_a_timer_and_by_log_size() {
    for (every, bytes) in [(Some(std::time::Duration::from_millis(20)), None), (None, Some(4096))] {
        let dir = tempfile::tempdir().unwrap();
        let o = Options {
            checkpoint_every: every,
            checkpoint_log_bytes: bytes,
            ..opts(dir.path(), Protocol::MvOcc, Durability::Async)
        };
        let (db, _) = Database::open_with(o.clone(), schema).unwrap();
        let start = std::time::Instant::now();
        let mut i = 1;
        while db.stats().checkpoints < 3 {
            assert!(start.elapsed().as_secs() < 60, "{every:?} {bytes:?}: no checkpoint fell due: {:?}", db.stats());
            work_range(&db, i..i + 10);
            i += 10;
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(db.checkpoint_error().is_none());
        let expect = rows(&db);
        drop(db);
        let (db, rep) = Database::open_with(o, schema).unwrap();
        assert!(rep.checkpoint.as_ref().unwrap().1 > 2, "a checkpoint taken while running: {rep:?}");
        assert_eq!(rows(&db), expect);
    }
}

/// Damage in the middle of a stream's files: the stream stops there, its
/// later files are dropped whole and listed, the other stream's records
/// stay, and the open succeeds (recovery reads one file at a time).
#[test]
fn damage_in_an_earlier_file_drops_the_rest_of_that_stream() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        log_rotate_bytes: 4096,
        on_damage: OnDamage::KeepPrefix,
        ..opts(dir.path(), Protocol::MvOcc, Durability::Sync)
    };
    let (db, _) = Database::open_with(o.clone(), schema).unwrap();
    std::thread::scope(|s| {
        for th in 0..2u64 {
            let db = &db;
            s.spawn(move || work_range(db, th * 2000 + 1..th * 2000 + 151));
        }
    });
    drop(db);
    let mut files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("log-00000001-001-"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "stream 1 rotated: {files:?}");
    let victim = dir.path().join(&files[1]);
    let mut data = std::fs::read(&victim).unwrap();
    let n = data.len();
    data[n / 2] ^= 0x40;
    std::fs::write(&victim, &data).unwrap();
    let (_db, rep) = Database::open_with(o, schema).unwrap();
    let whole: Vec<_> = rep.dropped.iter().filter(|d| d.contains("whole file, after")).collect();
    assert_eq!(whole.len(), files.len() - 2, "every later file of stream 1: {rep:?}");
    assert!(rep.dropped.iter().any(|d| d.starts_with(&files[1])), "{rep:?}");
    assert!(rep.replayed > 0 && rep.replayed < 300, "{rep:?}");
}

// ----------------------------------------------------------------------
// The damage table: a constant-sum bank on two sync streams,
// damaged as disks and operators do. Each row must recover a prefix with a
// truthful report, or refuse when asked to.
// ----------------------------------------------------------------------

const ACCOUNTS: u64 = 100;

fn bank_opts(dir: &Path, on_damage: OnDamage) -> Options {
    Options {
        log_streams: 2,
        log_rotate_bytes: 4096,
        checkpoint_every: None,
        checkpoint_log_bytes: None,
        on_damage,
        ..opts(dir, Protocol::MvOcc, Durability::Sync)
    }
}

fn bank_schema(db: &Database) -> Result<()> {
    db.create_table(TableSpec::hash("acct", 256))?;
    db.create_table(TableSpec::hash("count", 4))?;
    Ok(())
}

/// The accounts' sum and the number of transfers the state holds.
fn bank_state(db: &Database) -> (u64, u64) {
    let (acct, count) = (db.table("acct").unwrap(), db.table("count").unwrap());
    db.sync_commits().unwrap();
    db.run(Isolation::Serializable, |t| {
        let mut sum = 0;
        for a in 0..ACCOUNTS {
            sum += t.get(acct, Key::from(a))?.map_or(0, |v| u64::from_le_bytes(v[..8].try_into().unwrap()));
        }
        let n = t.get(count, Key::from(0u64))?.map_or(0, |v| u64::from_le_bytes(v[..8].try_into().unwrap()));
        Ok((sum, n))
    })
    .unwrap()
}

/// A pristine bank directory: 100 accounts of 1000, then transfers from
/// eight threads (so both streams hold records), each one also counting
/// itself. Returns the directory and the transfers acknowledged.
fn pristine_bank() -> (tempfile::TempDir, u64) {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = Database::open_with(bank_opts(dir.path(), OnDamage::KeepPrefix), bank_schema).unwrap();
    let (acct, count) = (db.table("acct").unwrap(), db.table("count").unwrap());
    db.run(Isolation::Serializable, |t| {
        for a in 0..ACCOUNTS {
            t.insert(acct, Key::from(a), val(1000))?;
        }
        t.insert(count, Key::from(0u64), val(0))
    })
    .unwrap();
    // The accounts are in the checkpoint: even an empty prefix of the log
    // holds them.
    db.checkpoint().unwrap();
    let acked = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for th in 0..8u64 {
            let (db, acked) = (&db, &acked);
            s.spawn(move || {
                for i in 0..40u64 {
                    let (a, b) = ((th * 13 + i * 7) % ACCOUNTS, (th * 31 + i * 11 + 1) % ACCOUNTS);
                    db.run(Isolation::Serializable, |t| {
                        let get = |t: &mut Transaction<'_>, tb, k: u64| -> Result<u64> {
                            Ok(u64::from_le_bytes(t.get(tb, Key::from(k))?.unwrap()[..8].try_into().unwrap()))
                        };
                        let (x, y, n) = (get(t, acct, a)?, get(t, acct, b)?, get(t, count, 0)?);
                        if a != b {
                            t.update(acct, Key::from(a), val(x - 1))?;
                            t.update(acct, Key::from(b), val(y + 1))?;
                        }
                        t.update(count, Key::from(0u64), val(n + 1))
                    })
                    .unwrap();
                    acked.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(bank_state(&db), (ACCOUNTS * 1000, 320));
    drop(db);
    (dir, acked.load(Ordering::Relaxed) as u64)
}

/// The log files of stream `s`, oldest first, that hold more than a header.
fn stream_files(dir: &Path, s: u32) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.ends_with(".mvl") && n.split('-').nth(2).and_then(|x| x.parse::<u32>().ok()) == Some(s)
        })
        .collect();
    v.sort();
    v
}

fn copy_dir(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, to.path().join(p.file_name().unwrap())).unwrap();
    }
    to
}

/// Opens a damaged copy both ways: `Refuse` must refuse exactly when
/// `KeepPrefix` reports damage, and what `KeepPrefix` keeps must add up.
fn reopen_damaged(dir: &Path, acked: u64, what: &str) -> (RecoveryReport, u64) {
    // On a copy: an open that succeeds begins a new generation.
    let copy = copy_dir(dir);
    let refused = Database::open_with(bank_opts(copy.path(), OnDamage::Refuse), bank_schema).map(|(_, r)| r);
    let (db, rep) = Database::open_with(bank_opts(dir, OnDamage::KeepPrefix), bank_schema)
        .unwrap_or_else(|e| panic!("{what}: keep-prefix refused: {e}"));
    let (sum, n) = bank_state(&db);
    eprintln!("{what}: {n} of {acked} transfers, damaged {}: {:#?}", rep.damaged, rep.dropped);
    assert_eq!(sum, ACCOUNTS * 1000, "{what}: not a prefix: {rep:#?}");
    assert!(n <= acked, "{what}");
    if n < acked {
        assert!(!rep.dropped.is_empty(), "{what}: {} transfers lost unreported: {rep:#?}", acked - n);
    }
    match refused {
        Err(Error::Corrupt(m)) => assert!(rep.damaged && m.contains("refusing"), "{what}: {m}"),
        Err(e) => panic!("{what}: {e}"),
        Ok(_) => assert!(!rep.damaged, "{what}: refuse recovered a damaged directory: {rep:#?}"),
    }
    // The prefix recovered is itself durable.
    drop(db);
    let (db, _) = Database::open_with(bank_opts(dir, OnDamage::Refuse), bank_schema).unwrap();
    assert_eq!(bank_state(&db), (ACCOUNTS * 1000, n), "{what}: after a second open");
    (rep, n)
}

#[test]
fn the_damage_table_gives_a_prefix_with_a_truthful_report() {
    let (pristine, acked) = pristine_bank();
    let s1 = stream_files(pristine.path(), 1);
    assert!(s1.len() >= 3, "stream 1 rotates: {s1:?}");
    let name = |p: &Path| p.file_name().unwrap().to_owned();

    // Untouched: everything, nothing reported.
    let d = copy_dir(pristine.path());
    let (rep, n) = reopen_damaged(d.path(), acked, "pristine");
    assert_eq!((n, rep.damaged), (acked, false), "{rep:#?}");
    assert!(rep.dropped.is_empty(), "{rep:#?}");

    // Stream 1 cut in the middle of a file, or one byte flipped there.
    for (what, file) in [("cut middle file", 1), ("cut first file", 0)] {
        let d = copy_dir(pristine.path());
        let p = d.path().join(name(&s1[file]));
        let data = std::fs::read(&p).unwrap();
        std::fs::write(&p, &data[..data.len() / 2]).unwrap();
        let (rep, n) = reopen_damaged(d.path(), acked, what);
        assert!(rep.damaged && n < acked, "{what}: {rep:#?}");
        assert!(rep.dropped.iter().any(|l| l.contains("damage in the middle")), "{what}: {rep:#?}");
        assert!(rep.dropped.iter().any(|l| l.contains("dropped to keep a consistent prefix")), "{rep:#?}");
    }
    let d = copy_dir(pristine.path());
    let p = d.path().join(name(&s1[1]));
    let mut data = std::fs::read(&p).unwrap();
    let mid = data.len() / 2;
    data[mid] ^= 0x10;
    std::fs::write(&p, &data).unwrap();
    let (rep, n) = reopen_damaged(d.path(), acked, "flip");
    assert!(rep.damaged && n < acked, "flip: {rep:#?}");

    // A middle file of stream 1 deleted.
    let d = copy_dir(pristine.path());
    std::fs::remove_file(d.path().join(name(&s1[1]))).unwrap();
    let (rep, n) = reopen_damaged(d.path(), acked, "middle file deleted");
    assert!(rep.damaged && n < acked, "{rep:#?}");
    assert!(rep.dropped.iter().any(|l| l.contains("is missing")), "{rep:#?}");

    // Every file of stream 1 deleted.
    let d = copy_dir(pristine.path());
    for f in &s1 {
        std::fs::remove_file(d.path().join(name(f))).unwrap();
    }
    let (rep, n) = reopen_damaged(d.path(), acked, "stream deleted");
    assert!(rep.damaged && n < acked, "{rep:#?}");
    assert_eq!(rep.streams, 2, "{rep:#?}");

    // A file duplicated as the next file of its stream: not replayed twice.
    let d = copy_dir(pristine.path());
    let last = s1.last().unwrap();
    let fname = name(last).to_string_lossy().into_owned();
    let seq: u32 = fname.trim_end_matches(".mvl").rsplit('-').next().unwrap().parse().unwrap();
    let next = fname.replace(&format!("{seq:06}.mvl"), &format!("{:06}.mvl", seq + 1));
    std::fs::copy(last, d.path().join(&next)).unwrap();
    let (rep, n) = reopen_damaged(d.path(), acked, "duplicated file");
    assert_eq!(n, acked, "{rep:#?}");
    assert!(rep.damaged && rep.dropped.iter().any(|l| l.contains("copied or renamed")), "{rep:#?}");

    // Stream 0 cut in the middle of a file: stream 1's records past the
    // cut are dropped for consistency, not called never acknowledged.
    let d = copy_dir(pristine.path());
    let s0 = stream_files(pristine.path(), 0);
    let p = d.path().join(name(&s0[s0.len() / 2]));
    let data = std::fs::read(&p).unwrap();
    std::fs::write(&p, &data[..data.len() / 2]).unwrap();
    let (rep, n) = reopen_damaged(d.path(), acked, "stream 0 cut");
    assert!(rep.damaged && n < acked, "{rep:#?}");
    assert!(!rep.dropped.iter().any(|l| l.contains("never") && l.contains("acknowledged as durable")), "{rep:#?}");

    // A crash's torn tail (half a record at the end of the newest file of
    // a stream): nothing acknowledged is lost, and nothing is damaged.
    let d = copy_dir(pristine.path());
    let p = d.path().join(name(s1.last().unwrap()));
    let mut data = std::fs::read(&p).unwrap();
    data.extend_from_slice(&[40, 0, 0, 0, 1, 2, 3, 4, 1, 9, 9]);
    std::fs::write(&p, &data).unwrap();
    let (rep, n) = reopen_damaged(d.path(), acked, "torn tail");
    assert_eq!((n, rep.damaged), (acked, false), "{rep:#?}");
    assert!(rep.dropped.iter().any(|l| l.contains("torn tail")), "{rep:#?}");
}

/// The data files of `dir` (not `LOCK`, which an open rewrites, nor
/// folders) and their bytes.
fn data_files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file() && e.file_name() != "LOCK")
        .map(|e| (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// The transaction records of a log file (its frames after the magic and
/// the header) that end past byte `cut`: what cutting it there loses.
fn records_past(data: &[u8], cut: usize) -> u64 {
    let mut at = 8;
    let mut n = 0;
    let mut first = true;
    while at + 8 <= data.len() {
        let len = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        let end = at + 8 + len;
        // The header's frame, then records; kind 1 is a transaction.
        n += u64::from(!first && end > cut && data[at + 8] == 1);
        first = false;
        at = end;
    }
    n
}

/// A bank on two streams whose stream 1 lost the second half of its first
/// log file: thousands of intact records lie past the damage. The default
/// policy refuses to open it, naming both remedies, and changes nothing.
/// Salvage reads out every intact record recovery drops: with those it
/// replays and those the cut destroyed, every transfer. `KeepPrefix`
/// opens the prefix and deletes nothing: every file it drops is in the
/// quarantine folder, byte for byte, with a README that says what and why;
/// later opens and checkpoints ignore the folder, and it is a data
/// directory recovery reads.
#[test]
fn a_damaged_directory_is_refused_by_default_and_keep_prefix_deletes_nothing() {
    let (pristine, acked) = pristine_bank();
    let d = copy_dir(pristine.path());
    let s1 = stream_files(d.path(), 1);
    let data = std::fs::read(&s1[0]).unwrap();
    let cut = data.len() / 2;
    std::fs::write(&s1[0], &data[..cut]).unwrap();
    let destroyed = records_past(&data, cut);
    let before = data_files(d.path());
    let o = bank_opts(d.path(), Options::default().on_damage);

    // The default refuses, in one error that names the remedies.
    let e = Database::open_with(o.clone(), bank_schema).err().expect("the default refuses a damaged directory");
    let Error::Corrupt(m) = &e else { panic!("{e:?}") };
    for word in ["damage in the middle", "nothing in it was changed", "OnDamage::KeepPrefix", "--salvage OUT"] {
        assert!(m.contains(word), "'{word}' in: {m}");
    }
    assert_eq!(data_files(d.path()), before, "the refusal changed nothing");

    // Salvage: what recovery would drop, without changing anything.
    let mut salvaged = std::collections::BTreeSet::new();
    let sr = durability::salvage(d.path(), |r| {
        assert!(r.reason != durability::SalvageReason::IgnoredFile && !r.writes.is_empty(), "{r:?}");
        assert!(salvaged.insert((r.stream, r.file.to_string(), r.offset)), "once each: {r:?}");
        Ok(())
    })
    .unwrap();
    assert!(sr.damaged && sr.covered == 0 && sr.records == salvaged.len() as u64, "{sr:?}");
    let cut_name = s1[0].file_name().unwrap().to_string_lossy().into_owned();
    // Only the torn record at the cut (none if it fell between two).
    let torn = |l: &String| {
        l.starts_with(&format!("{cut_name}: bytes ")) && l.ends_with(&format!("..{cut} hold no intact record"))
    };
    assert!(sr.records > 0 && sr.skipped.len() <= 1 && sr.skipped.iter().all(torn), "{sr:?}");
    assert_eq!(data_files(d.path()), before, "salvage changed nothing");

    // Keeping the prefix, asked for.
    let (db, rep) = Database::open_with(bank_opts(d.path(), OnDamage::KeepPrefix), bank_schema).unwrap();
    let (sum, n) = bank_state(&db);
    assert_eq!(sum, ACCOUNTS * 1000, "{rep:#?}");
    assert!(rep.damaged && n < acked, "{rep:#?}");
    assert_eq!((rep.replayed, sr.replayed), (n, n), "salvage counts what recovery replays: {rep:#?}");
    assert_eq!(n + sr.records + destroyed, acked, "every transfer: replayed, salvaged or cut away");
    drop(db);
    let q = rep.quarantine.clone().expect("a quarantine folder");
    assert_eq!(q, d.path().join("quarantine-00000001"), "{rep:#?}");
    let kept = |why: &str| {
        let moved = data_files(&q);
        for (name, bytes) in &before {
            assert!(moved.get(name) == Some(bytes), "{why}: {name} is not in {}", q.display());
        }
    };
    kept("after the open");
    let readme = std::fs::read_to_string(q.join("README.txt")).unwrap();
    for line in rep.dropped.iter().chain(before.keys()) {
        assert!(
            readme.contains(line.as_str()),
            "README.txt lacks {line:?}:
{readme}"
        );
    }
    assert!(readme.contains("--salvage") && readme.contains("OnDamage::KeepPrefix"), "{readme}");
    assert!(
        !data_files(d.path()).keys().any(|n| n.starts_with("log-00000001-")),
        "the damaged generation's log files left the directory itself"
    );

    // Later opens (the default) find a clean directory and the prefix;
    // a checkpoint and a third open leave the folder as it is.
    let (db, rep2) = Database::open_with(o.clone(), bank_schema).unwrap();
    assert!(!rep2.damaged && rep2.dropped.is_empty() && rep2.quarantine.is_none(), "{rep2:#?}");
    assert_eq!(bank_state(&db), (ACCOUNTS * 1000, n));
    db.checkpoint().unwrap();
    drop(db);
    let (db, rep3) = Database::open_with(o, bank_schema).unwrap();
    assert!(!rep3.damaged && rep3.quarantine.is_none(), "{rep3:#?}");
    drop(db);
    kept("after two more opens and a checkpoint");

    // The folder is a data directory of its own: recovery reads the same
    // damage and prefix there, and salvage the same records.
    let reader = Database::new(Options { on_damage: OnDamage::KeepPrefix, ..Options::default() }).unwrap();
    bank_schema(&reader).unwrap();
    let r = reader.recover_from(&q).unwrap();
    assert!(r.damaged && r.quarantine.is_none() && r.replayed == n, "{r:#?}");
    assert_eq!(bank_state(&reader), (ACCOUNTS * 1000, n));
    assert_eq!(durability::salvage(&q, |_| Ok(())).unwrap().records, sr.records);
    kept("after reading it");
}

#[test]
fn a_directory_has_one_owner_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let o = bank_opts(dir.path(), OnDamage::KeepPrefix);
    let (db, _) = Database::open_with(o.clone(), bank_schema).unwrap();
    let acct = db.table("acct").unwrap();
    db.run(Isolation::Serializable, |t| t.insert(acct, Key::from(1u64), val(7))).unwrap();
    let e = Database::open_with(o.clone(), bank_schema).err().expect("a second open fails");
    assert!(
        matches!(&e, Error::Locked(m) if m.contains("in use") && m.contains(&format!("process {}", std::process::id()))),
        "{e}"
    );
    // Reading it without taking over works meanwhile.
    let reader = Database::new(Options::default()).unwrap();
    bank_schema(&reader).unwrap();
    let rep = reader.recover_from(dir.path()).unwrap();
    assert!(!rep.damaged, "{rep:?}");
    // The owner goes on; its sync-acknowledged commit survives the next open.
    db.run(Isolation::Serializable, |t| t.insert(acct, Key::from(2u64), val(8))).unwrap();
    drop(db);
    let (db, rep) = Database::open_with(o, bank_schema).unwrap();
    assert_eq!(rep.replayed, 2, "{rep:?}");
    // The reopened database is another database: its handles are new.
    let acct = db.table("acct").unwrap();
    let got = db.run(Isolation::Serializable, |t| Ok((t.get(acct, Key::from(1u64))?, t.get(acct, Key::from(2u64))?)));
    assert_eq!(got.unwrap(), (Some(val(7).to_vec()), Some(val(8).to_vec())));
}

/// Under sync durability a round syncs one file whatever the number of
/// streams (the rounds take the streams' files in turn), and an idle
/// database syncs nothing.
#[test]
fn a_round_syncs_one_file_and_an_idle_log_none() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options { log_streams: 4, ..opts(dir.path(), Protocol::MvOcc, Durability::Sync) };
    let (db, _) = Database::open_with(o.clone(), schema).unwrap();
    // Idle: many flusher intervals pass without a record.
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(db.stats().log_syncs, 0, "an idle log syncs nothing");
    std::thread::scope(|s| {
        for th in 0..4u64 {
            let db = &db;
            s.spawn(move || {
                let o = db.table("o").unwrap();
                for i in 0..40 {
                    db.run(Isolation::Serializable, |t| t.put(o, Key::from(th * 1000 + i), val(i))).unwrap();
                }
            });
        }
    });
    let st = db.stats();
    // One sync per round, at most one round per commit (group commit
    // shares them), and the files of all four streams took rounds.
    assert!(st.log_syncs > 0 && st.log_syncs <= st.log_records + 1, "{st:?}");
    let per_stream = |s: u32| {
        std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&format!("log-00000001-{s:03}-")))
            .map(|e| e.metadata().unwrap().len())
            .sum::<u64>()
    };
    let sizes: Vec<u64> = (0..4).map(per_stream).collect();
    assert!(sizes.iter().all(|&n| n > 200), "every stream's files hold rounds: {sizes:?}");
    drop(db);
    let (db, rep) = Database::open_with(o, schema).unwrap();
    assert!(!rep.damaged && rep.dropped.is_empty(), "{rep:?}");
    assert_eq!(rep.replayed, 160, "{rep:?}");
    drop(db);
}
