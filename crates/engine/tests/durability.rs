//! Durability: what commits survives a reopen, checkpoints shorten the
//! log, damaged tails are dropped and reported, a damaged checkpoint is
//! refused, and every logging protocol recovers.

use multiverse::*;
use std::path::Path;

const MULTI_VERSION: [Protocol; 6] =
    [Protocol::MvOcc, Protocol::MvLock, Protocol::MvMixed, Protocol::Ssn, Protocol::Ssi, Protocol::Pomvcc];

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
    Database::open(opts(dir, protocol, durability), schema).unwrap()
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
            t.put(h, Key::from(i % 20), &val(i))?;
            t.put(o, Key::from(i), &val(i * 2))?;
            if i % 7 == 0 {
                t.delete(o, &Key::from(i - 1))?;
            }
            Ok(())
        })
        .unwrap();
        // POMVCC: the next transaction sees this one (section IV.D).
        db.sync_commits().unwrap();
    }
}

#[test]
fn commits_survive_a_reopen_under_every_logging_protocol() {
    for p in MULTI_VERSION {
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
    let (db, _) = Database::open(o.clone(), schema).unwrap();
    work(&db, 1);
    work(&db, 100);
    let logs = |d: &Path| {
        std::fs::read_dir(d).unwrap().filter(|e| e.as_ref().unwrap().path().extension().unwrap() == "mvl").count()
    };
    let before = logs(dir.path());
    assert!(before > 2, "files rotate at 4 KiB: {before}");
    let cp = db.checkpoint().unwrap();
    assert!(cp.rows > 0);
    work(&db, 200);
    let expect = rows(&db);
    assert!(logs(dir.path()) < before, "the checkpoint removed covered log files");
    drop(db);
    let (db, rep) = Database::open(o, schema).unwrap();
    assert_eq!(rep.checkpoint.as_ref().unwrap().1, cp.ts);
    assert_eq!(rep.replayed, 50, "only what followed the checkpoint: {rep:?}");
    assert_eq!(rows(&db), expect);
}

/// The newest log file of a directory.
fn last_log(dir: &Path) -> std::path::PathBuf {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().unwrap() == "mvl" && std::fs::metadata(p).unwrap().len() > 100)
        .collect();
    v.sort();
    v.pop().expect("a log file with records")
}

#[test]
fn a_torn_or_damaged_log_tail_is_dropped_and_reported() {
    for damage in ["truncate", "flip"] {
        let dir = tempfile::tempdir().unwrap();
        let o = Options { log_streams: 1, ..opts(dir.path(), Protocol::MvOcc, Durability::Sync) };
        let (db, _) = Database::open(o.clone(), schema).unwrap();
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
        let (db, rep) = Database::open(o.clone(), schema).unwrap();
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
            .filter(|p| p.extension().unwrap() == "mvc")
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
        let e = Database::open(opts(dir.path(), Protocol::MvOcc, Durability::Sync), schema).err().unwrap();
        assert!(matches!(&e, Error::Corrupt(m) if m.contains("checkpoint") && m.contains("refusing")), "{damage}: {e}");
    }
}

#[test]
fn bad_durability_settings_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let e = Database::new(opts(dir.path(), Protocol::MvOcc, Durability::Sync)).err().unwrap();
    assert!(e.to_string().contains("Database::open"), "{e}");
    let e = Database::open(opts(dir.path(), Protocol::Silo, Durability::Sync), schema).err().unwrap();
    assert!(e.to_string().contains("does not log yet"), "{e}");
    let e = Database::open(Options { data_dir: None, ..opts(dir.path(), Protocol::MvOcc, Durability::Sync) }, schema)
        .err()
        .unwrap();
    assert!(e.to_string().contains("data_dir"), "{e}");
    let e = Database::open(opts(dir.path(), Protocol::MvOcc, Durability::None), schema).err().unwrap();
    assert!(e.to_string().contains("durability none"), "{e}");
    // A schema that lacks a table the data names.
    let (db, _) = open(dir.path(), Protocol::MvOcc, Durability::Sync);
    work(&db, 1);
    drop(db);
    let e = Database::open(opts(dir.path(), Protocol::MvOcc, Durability::Sync), |db| {
        db.create_table(TableSpec::hash("h", 64)).map(|_| ())
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
    let (db, _) = Database::open(o.clone(), schema).unwrap();
    let h = db.table("h").unwrap();
    db.run(Isolation::Snapshot, |t| {
        for k in 0..16 {
            t.insert(h, Key::from(k), &val(100))?;
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
                        let x = u64::from_le_bytes(t.get(h, &Key::from(a))?.unwrap()[..8].try_into().unwrap());
                        let y = u64::from_le_bytes(t.get(h, &Key::from(b))?.unwrap()[..8].try_into().unwrap());
                        t.update(h, &Key::from(a), &val(x - 1))?;
                        t.update(h, &Key::from(b), &val(y + 1))
                    });
                }
            });
        }
    });
    db.flush_log().unwrap();
    let expect = rows(&db);
    drop(db);
    let (db, rep) = Database::open(o, schema).unwrap();
    assert_eq!(rep.same_ts_conflicts, 0, "{rep:?}");
    assert!(rep.replayed > 100, "{rep:?}");
    let got = rows(&db);
    assert_eq!(got.iter().map(|r| r.2).sum::<u64>(), 1600, "money is neither made nor lost");
    assert_eq!(got, expect);
}
