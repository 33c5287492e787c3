//! Crash tests: a child process runs transfers between accounts with sync
//! durability and prints every commit it saw acknowledged; the parent kills
//! it with SIGKILL at a random moment, reopens the directory, and checks
//! that every acknowledged transaction is there, that no transfer is there
//! in part (the money adds up), and that each thread's commits form a
//! prefix. The same directory is crashed again and again, so recovery
//! also recovers what earlier recoveries wrote.
//!
//! A few iterations by default; `MULTIVERSE_CRASH_ITERS=N` runs N.

use multiverse::*;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const ACCOUNTS: u64 = 32;
const START: u64 = 1000;
const THREADS: u64 = 2;

fn options(dir: &Path, protocol: Protocol) -> Options {
    Options {
        protocol,
        durability: Durability::Sync,
        data_dir: Some(dir.to_path_buf()),
        log_rotate_bytes: 64 << 10,
        // Checkpoints fall due while it runs, so crashes hit them too.
        checkpoint_every: Some(Duration::from_millis(40)),
        ..Options::default()
    }
}

fn schema(db: &Database) -> Result<()> {
    db.create_table(TableSpec::hash("acct", 64))?;
    db.create_table(TableSpec::hash("acks", 4096))?;
    Ok(())
}

fn num(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[..8].try_into().unwrap())
}

fn protocol_of(name: &str) -> Protocol {
    name.parse().unwrap()
}

/// The child: runs until killed.
#[test]
#[ignore = "run by crash_recovery_keeps_every_acknowledged_commit in a child process"]
fn crash_child() {
    let Ok(dir) = std::env::var("MULTIVERSE_CRASH_DIR") else { return };
    let p = protocol_of(&std::env::var("MULTIVERSE_CRASH_PROTOCOL").unwrap());
    let (db, rep) = Database::open(options(Path::new(&dir), p), schema).unwrap();
    let (acct, acks) = (db.table("acct").unwrap(), db.table("acks").unwrap());
    if rep.generation == 0 {
        db.run(Isolation::Serializable, |t| {
            for a in 0..ACCOUNTS {
                t.insert(acct, Key::from(a), &START.to_le_bytes())?;
            }
            Ok(())
        })
        .unwrap();
    }
    db.sync_commits().unwrap();
    // Where each thread's sequence numbers resume.
    let mut next = [1u64; THREADS as usize];
    db.run(Isolation::Serializable, |t| {
        t.scan(db.primary(acks), .., None, |k, _| {
            let k = k.to_u64().unwrap();
            let th = (k >> 32) as usize;
            next[th] = next[th].max((k & 0xffff_ffff) + 1);
            true
        })
    })
    .unwrap();
    let out = std::sync::Mutex::new(std::io::stdout());
    writeln!(out.lock().unwrap(), "ready").unwrap();
    std::thread::scope(|s| {
        for th in 0..THREADS {
            let (db, out, first) = (&db, &out, next[th as usize]);
            s.spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(th + first);
                let mut last = None;
                for seq in first.. {
                    let (a, b) = (rng.gen_range(0..ACCOUNTS), rng.gen_range(0..ACCOUNTS));
                    let amount = rng.gen_range(1..10);
                    loop {
                        let o = TxnOptions { after: last, ..TxnOptions::new(Isolation::Serializable) };
                        let mut t = db.begin_with(o).unwrap();
                        let r = (|| {
                            let x = num(&t.get(acct, &Key::from(a))?.unwrap());
                            let y = num(&t.get(acct, &Key::from(b))?.unwrap());
                            if a != b && x >= amount {
                                t.update(acct, &Key::from(a), &(x - amount).to_le_bytes())?;
                                t.update(acct, &Key::from(b), &(y + amount).to_le_bytes())?;
                            }
                            t.insert(acks, Key::from((th << 32) | seq), &seq.to_le_bytes())
                        })();
                        let r = r.and_then(|_| t.commit());
                        match r {
                            Ok(c) => {
                                last = Some(c.commit_ts);
                                let mut o = out.lock().unwrap();
                                writeln!(o, "ack {th} {seq}").unwrap();
                                o.flush().unwrap();
                                break;
                            }
                            Err(e) if e.is_transient() => continue,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            });
        }
    });
}

#[test]
fn crash_recovery_keeps_every_acknowledged_commit() {
    let iters: u64 = std::env::var("MULTIVERSE_CRASH_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(4);
    let exe = std::env::current_exe().unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0xC4A5);
    for (pi, protocol) in ["mv-occ", "pomvcc", "silo", "1v-lock"].into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let mut acked: HashMap<u64, u64> = HashMap::new(); // thread -> highest acknowledged seq
        for i in 0..iters {
            let mut child = Command::new(&exe)
                .args(["--exact", "crash_child", "--ignored", "--nocapture", "--test-threads", "1"])
                .env("MULTIVERSE_CRASH_DIR", dir.path())
                .env("MULTIVERSE_CRASH_PROTOCOL", protocol)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
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
            // Wait for "ready", then let it run a random while and kill it.
            let ready = rx.iter().any(|l| l.ends_with("ready"));
            assert!(ready, "{protocol} iteration {i}: the child never got ready");
            std::thread::sleep(Duration::from_millis(rng.gen_range(20..250) + 30 * (pi as u64)));
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            reader.join().unwrap();
            let mut this_run = 0;
            for line in rx.try_iter() {
                let mut w = line.split_whitespace();
                if w.next() == Some("ack") {
                    let th: u64 = w.next().unwrap().parse().unwrap();
                    let seq: u64 = w.next().unwrap().parse().unwrap();
                    let e = acked.entry(th).or_default();
                    *e = (*e).max(seq);
                    this_run += 1;
                }
            }
            // Reopen in the parent and check.
            let (db, rep) = Database::open(options(dir.path(), protocol_of(protocol)), schema).unwrap();
            assert_eq!(rep.same_ts_conflicts, 0, "{rep:?}");
            let (acct, acks) = (db.table("acct").unwrap(), db.table("acks").unwrap());
            let mut total = 0;
            let mut present: HashMap<u64, Vec<u64>> = HashMap::new();
            let mut t =
                db.begin_with(TxnOptions { read_only: true, ..TxnOptions::new(Isolation::Serializable) }).unwrap();
            t.scan(db.primary(acct), .., None, |_, v| {
                total += num(v);
                true
            })
            .unwrap();
            t.scan(db.primary(acks), .., None, |k, _| {
                let k = k.to_u64().unwrap();
                present.entry(k >> 32).or_default().push(k & 0xffff_ffff);
                true
            })
            .unwrap();
            t.commit().unwrap();
            assert_eq!(total, ACCOUNTS * START, "{protocol} iteration {i}: no transfer is there in part");
            for (th, &hi) in &acked {
                let mut seqs = present.remove(th).unwrap_or_default();
                seqs.sort();
                let n = seqs.len() as u64;
                assert!(n >= hi, "{protocol} iteration {i}: thread {th} acknowledged {hi}, only {n} survived");
                assert!(
                    seqs.iter().enumerate().all(|(j, &s)| s == j as u64 + 1),
                    "{protocol} iteration {i}: thread {th}'s commits are not a prefix"
                );
            }
            eprintln!(
                "{protocol} iteration {i}: {this_run} acknowledged, {} replayed, dropped {:?}",
                rep.replayed, rep.dropped
            );
            drop(db);
        }
    }
}
