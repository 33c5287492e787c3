//! Online backups (`Database::backup`): taken while transfers commit, under
//! every protocol, of durable and in-memory databases, a backup opens as
//! exactly one consistent state; a non-empty target is refused and left
//! alone; a backup opens, takes writes, and reopens.

mod common;

use multiverse::*;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const ACCOUNTS: u64 = 16;
const START: i64 = 1000;

fn schema(db: &Database) -> Result<()> {
    db.create_table(TableSpec::hash("acct", 64))?;
    db.create_table(TableSpec::ordered("journal"))?;
    Ok(())
}

fn mem_opts(protocol: Protocol) -> Options {
    Options { protocol, pomvcc_interval: std::time::Duration::from_micros(100), ..Options::default() }
}

fn durable_opts(dir: &Path, protocol: Protocol) -> Options {
    Options { data_dir: Some(dir.to_path_buf()), durability: Durability::Async, ..mem_opts(protocol) }
}

fn int(v: &[u8]) -> i64 {
    i64::from_le_bytes(v[..8].try_into().unwrap())
}

/// Every row of both tables, in key order: (table, key, value).
fn dump(db: &Database) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    db.sync_commits().unwrap();
    let mut out = Vec::new();
    let mut t = db.begin(db.protocol().strongest()).unwrap();
    for name in ["acct", "journal"] {
        let id = db.table(name).unwrap();
        t.scan(db.primary(id), .., None, |k, v| {
            out.push((name.to_string(), k.as_bytes().to_vec(), v.to_vec()));
            true
        })
        .unwrap();
    }
    t.commit().unwrap();
    out.sort();
    out
}

/// Checks that `rows` is one consistent state of the transfers: the
/// balances are the start plus exactly the transfers journaled, each
/// writer's journal is a prefix of its transfers, and money is conserved.
/// Returns the number of transfers.
fn check_consistent(rows: &[(String, Vec<u8>, Vec<u8>)], what: &str) -> u64 {
    let mut expect = vec![START; ACCOUNTS as usize];
    let mut next = std::collections::HashMap::new();
    let mut balances = vec![None; ACCOUNTS as usize];
    let mut n = 0;
    for (table, k, v) in rows {
        let key = Key::from_bytes(k).unwrap().to_u64().unwrap();
        if table == "journal" {
            let (th, i) = (key >> 32, key & 0xffff_ffff);
            let seen = next.entry(th).or_insert(0u64);
            assert_eq!(i, *seen, "{what}: writer {th}'s journal skips to {i}");
            *seen += 1;
            let (a, b) = (v[0] as usize, v[1] as usize);
            expect[a] -= 1;
            expect[b] += 1;
            n += 1;
        } else {
            balances[key as usize] = Some(int(v));
        }
    }
    let balances: Vec<i64> = balances.into_iter().map(|b| b.expect("every account")).collect();
    assert_eq!(balances.iter().sum::<i64>(), START * ACCOUNTS as i64, "{what}: money is conserved");
    assert_eq!(balances, expect, "{what}: the balances are exactly the journaled transfers");
    n
}

fn load(db: &Database) {
    let acct = db.table("acct").unwrap();
    db.run(db.protocol().strongest(), |t| {
        for k in 0..ACCOUNTS {
            t.insert(acct, Key::from(k), START.to_le_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    db.sync_commits().unwrap();
}

/// Two writers transfer one unit at a time (and journal it) while the
/// main thread takes a backup; returns it and the rows it must hold.
fn backup_during_transfers(db: &Database, target: &Path) -> BackupInfo {
    let (acct, journal) = (db.table("acct").unwrap(), db.table("journal").unwrap());
    let iso = db.protocol().strongest();
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let paused = AtomicBool::new(false);
    std::thread::scope(|s| {
        let _stop = common::RaiseOnDrop(&stop);
        for th in 0..2u64 {
            let (stop, done, paused) = (&stop, &done, &paused);
            s.spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Acquire) {
                    if paused.load(Ordering::Acquire) {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                        continue;
                    }
                    let (a, b) = ((i * 7 + th) % ACCOUNTS, (i * 3 + 5 * th + 1) % ACCOUNTS);
                    let r = db.run(iso, |t| {
                        let x = int(&t.get(acct, Key::from(a))?.unwrap());
                        t.update(acct, Key::from(a), (x - 1).to_le_bytes())?;
                        let y = int(&t.get(acct, Key::from(b))?.unwrap());
                        t.update(acct, Key::from(b), (y + 1).to_le_bytes())?;
                        t.insert(journal, Key::from(th << 32 | i), [a as u8, b as u8])
                    });
                    if let Err(e) = &r {
                        assert!(e.is_transient(), "writer {th}, transfer {i}: {e:?}");
                    } else {
                        i += 1;
                        done.fetch_add(1, Ordering::Relaxed);
                        // POMVCC: this writer's next transaction sees this one.
                        db.sync_commits().unwrap();
                    }
                }
            });
        }
        while done.load(Ordering::Relaxed) < 50 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let info = match db.backup(target) {
            // Silo in memory: no snapshot, and a validation that the writers
            // can fail every time (documented); tried with them paused.
            Err(e) if db.protocol() == Protocol::Silo && db.durability() == Durability::None => {
                assert!(e.is_transient() && !target.exists(), "{e:?}");
                paused.store(true, Ordering::Release);
                std::thread::sleep(std::time::Duration::from_millis(20));
                let info = db.backup(target).unwrap();
                paused.store(false, Ordering::Release);
                info
            }
            r => r.unwrap(),
        };
        let before = done.load(Ordering::Relaxed);
        // Writers go on after the backup: it must not see their commits.
        while done.load(Ordering::Relaxed) < before + 50 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        info
    })
}

fn open_backup(dir: &Path, protocol: Protocol) -> Database {
    let (db, rep) = Database::open_with(durable_opts(dir, protocol), schema).unwrap();
    assert!(rep.dropped.is_empty() && !rep.damaged, "{protocol}: {rep:?}");
    db
}

#[test]
fn a_backup_taken_while_transfers_commit_is_one_consistent_state_under_every_protocol() {
    for p in Protocol::ALL {
        for durable in [false, true] {
            let what = format!("{p} {}", if durable { "durable" } else { "in memory" });
            let tmp = tempfile::tempdir().unwrap();
            let db = if durable {
                Database::open_with(durable_opts(&tmp.path().join("data"), p), schema).unwrap().0
            } else {
                let db = Database::new(mem_opts(p)).unwrap();
                schema(&db).unwrap();
                db
            };
            load(&db);
            let target = tmp.path().join("backup");
            let info = backup_during_transfers(&db, &target);
            let total = check_consistent(&dump(&db), &format!("{what}: the source"));
            drop(db);
            assert_eq!(info.dir, target.canonicalize().unwrap());
            let copy = open_backup(&target, p);
            let rows = dump(&copy);
            assert_eq!(rows.len() as u64, info.rows, "{what}");
            let n = check_consistent(&rows, &format!("{what}: the backup"));
            assert!(n >= 50 && n < total, "{what}: the backup holds {n} of {total} transfers");
            let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert!(left.iter().all(|n| n == "backup" || n == "data"), "{what}: no temporary left: {left:?}");
        }
    }
}

#[test]
fn a_backup_opens_takes_writes_and_reopens() {
    for p in [Protocol::MvOcc, Protocol::Silo, Protocol::Bohm] {
        let tmp = tempfile::tempdir().unwrap();
        let db = Database::new(mem_opts(p)).unwrap();
        schema(&db).unwrap();
        load(&db);
        let target = tmp.path().join("b");
        db.backup(&target).unwrap();
        let before = dump(&db);
        {
            let copy = open_backup(&target, p);
            assert_eq!(dump(&copy), before, "{p}");
            let journal = copy.table("journal").unwrap();
            copy.run(p.strongest(), |t| t.insert(journal, Key::from(7), b"x")).unwrap();
            copy.sync_commits().unwrap();
            copy.flush_log().unwrap();
        }
        let copy = open_backup(&target, p);
        let after = dump(&copy);
        assert_eq!(after.len(), before.len() + 1, "{p}");
        assert!(after.contains(&("journal".into(), Key::from(7).as_bytes().to_vec(), b"x".to_vec())), "{p}");
        // The original is untouched, and a backup of the backup opens too.
        assert_eq!(dump(&db), before);
        let again = tmp.path().join("again");
        assert_eq!(copy.backup(&again).unwrap().rows, after.len() as u64);
        drop(copy);
        assert_eq!(dump(&open_backup(&again, p)), after, "{p}");
    }
}

#[test]
fn a_non_empty_target_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Database::new(mem_opts(Protocol::MvOcc)).unwrap();
    schema(&db).unwrap();
    load(&db);
    // A directory holding something.
    let full = tmp.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("mine"), b"keep").unwrap();
    let e = db.backup(&full).unwrap_err();
    assert!(matches!(&e, Error::NotEmpty(m) if m.contains("not an empty directory")), "{e:?}");
    assert_eq!(std::fs::read(full.join("mine")).unwrap(), b"keep");
    assert_eq!(std::fs::read_dir(&full).unwrap().count(), 1);
    // A file.
    let file = tmp.path().join("file");
    std::fs::write(&file, b"keep").unwrap();
    assert!(matches!(db.backup(&file), Err(Error::NotEmpty(_))));
    assert_eq!(std::fs::read(&file).unwrap(), b"keep");
    // An existing backup.
    let b = tmp.path().join("b");
    db.backup(&b).unwrap();
    assert!(matches!(db.backup(&b), Err(Error::NotEmpty(_))));
    // An empty directory is fine, and so is a missing parent.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_eq!(db.backup(&empty).unwrap().rows, ACCOUNTS);
    assert_eq!(db.backup(tmp.path().join("x/y/z")).unwrap().rows, ACCOUNTS);
    // Bad extra files.
    for bad in ["", ".hidden", "a/b", "LOCK", "manifest", "checkpoint-1", "log-x", ".."] {
        let e = db.backup_with(tmp.path().join("bad"), &[(bad, b"")]).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{bad}: {e:?}");
    }
    let mut left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    left.sort();
    assert_eq!(left, ["b", "empty", "file", "full", "x"], "no temporary directory is left");
}
