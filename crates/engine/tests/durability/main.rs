//! Durability: what commits survives a reopen, checkpoints shorten the
//! log, damaged tails are dropped and reported, a damaged checkpoint is
//! refused, and every protocol's logs recover — with checkpoints taken
//! while transactions commit, and BOHM's pipeline in its log order.

#[path = "../common/mod.rs"]
mod common;
mod damage_table;

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
