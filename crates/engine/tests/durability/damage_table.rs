//! The damage table: a constant-sum bank on two sync streams, damaged as
//! disks and operators do. Each row must recover a prefix with a truthful
//! report, or refuse when asked to; and a directory has one owner at a time.

use super::*;

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
