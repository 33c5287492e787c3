//! A thread that stays pinned ([`Database::pin`]) keeps every version
//! unlinked after it pinned allocated, in every database of the process
//! (crossbeam's epoch collector is process-wide). That memory counts
//! against `Options::memory_limit` until it is freed, so writers are
//! refused with `Error::MemoryLimit` instead of memory growing past the
//! limit unseen; once the pin is gone it is freed and writes resume.
//!
//! A test binary of its own: the deliberate pin holds back reclamation in
//! the whole process, and would disturb tests running beside it.

use multiverse::{Database, Error, Key, Options, Protocol, TableSpec};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const LIMIT: u64 = 256 << 10;
const ROWS: u64 = 16;
const VALUE: usize = 200;
/// What the counted bytes may pass the limit by: the writes in flight, one
/// transaction's (a single-version commit links its writes, admitted one
/// by one, together).
const SLACK: u64 = ROWS * 512;

/// Updates every row once in one transaction (`round` picks the value,
/// whose length alternates so that the single-version protocols make new
/// records rather than rewriting in place).
fn update_all(db: &Database, t: multiverse::TableId, round: u64) -> Result<(), Error> {
    let value = vec![round as u8; VALUE + (round % 2) as usize];
    let mut tx = db.begin(db.protocol().strongest())?;
    for k in 0..ROWS {
        tx.update(t, Key::from(k), &value)?;
    }
    tx.commit()?;
    db.sync_commits()?;
    Ok(())
}

#[test]
fn unfreed_versions_count_until_freed() {
    for p in Protocol::ALL {
        let db = Database::new(Options { protocol: p, memory_limit: Some(LIMIT), ..Options::default() }).unwrap();
        let t = db.create_table(TableSpec::hash("t", 64)).unwrap().table();
        db.run(p.strongest(), |x| (0..ROWS).try_for_each(|k| x.insert(t, Key::from(k), [0u8; VALUE]))).unwrap();
        db.sync_commits().unwrap();
        // Eight times the limit's worth of updates, if none is refused.
        let rounds = 8 * LIMIT / (ROWS * VALUE as u64);
        let (unpin, wait_unpin) = mpsc::channel::<()>();
        let (pinned, wait_pinned) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let db = &db;
            // Dropped on a panic too: the pinned thread stops waiting.
            let unpin = unpin;
            s.spawn(move || {
                let _pin = db.pin();
                pinned.send(()).unwrap();
                let _ = wait_unpin.recv_timeout(Duration::from_secs(60));
            });
            wait_pinned.recv().unwrap();
            let mut refused = false;
            for round in 1..=rounds {
                match update_all(db, t, round) {
                    Ok(()) => {}
                    Err(Error::MemoryLimit { used, limit }) => {
                        assert!(used <= limit + SLACK, "{p}: {used} bytes counted, limit {limit}");
                        refused = true;
                        break;
                    }
                    Err(e) => panic!("{p}: round {round}: {e}"),
                }
                db.collect_garbage();
            }
            let s = db.stats();
            // The versions the pin keeps allocated are counted...
            assert!(
                s.memory_used >= s.garbage_unfreed * VALUE as u64,
                "{p}: {} versions unlinked and not freed, {} bytes counted: {s:?}",
                s.garbage_unfreed,
                s.memory_used
            );
            assert!(s.memory_used <= LIMIT + SLACK, "{p}: {s:?}");
            // ...so the writer was stopped at the limit, unless nothing was
            // held back (BOHM frees its own store by its own watermark).
            assert!(refused || s.garbage_unfreed == 0, "{p}: {rounds} rounds never refused: {s:?}");
            drop(unpin);
        });
        // Unpinned: the memory is freed and given back, and writes go on
        // (a refused one once garbage collection has caught up).
        for r in rounds + 1..=3 * rounds {
            eventually(&db, || update_all(&db, t, r), &format!("{p}: round {r} after the pin"));
            db.collect_garbage();
        }
        // Everything but the rows' latest versions is given back.
        let start = Instant::now();
        while db.stats().memory_used > LIMIT / 8 && start.elapsed() < Duration::from_secs(10) {
            db.collect_garbage();
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(db.stats().memory_used <= LIMIT / 8, "{p}: {:?}", db.stats());
    }
}

/// Retries `f` after garbage collection while it is refused with
/// `MemoryLimit`, for at most 10 s.
fn eventually(db: &Database, mut f: impl FnMut() -> Result<(), Error>, what: &str) {
    let start = Instant::now();
    loop {
        match f() {
            Ok(()) => return,
            Err(Error::MemoryLimit { .. }) if start.elapsed() < Duration::from_secs(10) => {
                db.collect_garbage();
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
}
