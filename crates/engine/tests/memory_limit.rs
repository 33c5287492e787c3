//! `Options::memory_limit`: past the limit, writes that allocate fail with
//! the transient `Error::MemoryLimit` (the transaction stays open), reads,
//! deletes and read-only commits go on, and writes resume once garbage
//! collection frees old versions. Under every protocol.

use multiverse::{Database, Error, Isolation, Key, Options, Protocol, TableId, TableSpec, Transaction};
use std::time::{Duration, Instant};

const LIMIT: u64 = 256 << 10;
const VALUE: usize = 200;

/// The tests of this file run one at a time: crossbeam's epoch is
/// process-wide, so another test's pinned work in this process holds back
/// the frees a test counts, and the bounds would measure the test harness's
/// schedule rather than the engine.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A test that failed while holding it poisons it; the next may go on.
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn open(p: Protocol, limit: Option<u64>) -> (Database, TableId) {
    let db = Database::new(Options { protocol: p, memory_limit: limit, ..Options::default() }).unwrap();
    let t = db.create_table(TableSpec::hash("t", 8192)).unwrap().table();
    (db, t)
}

fn begin(db: &Database) -> Transaction<'_> {
    db.begin(db.protocol().strongest()).unwrap()
}

fn value(i: u64) -> Vec<u8> {
    let mut v = vec![(i % 251) as u8; VALUE];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v
}

/// Inserts rows from `from` on, 50 per transaction, until a write fails
/// with `MemoryLimit`; commits what the failing transaction did. Returns
/// the next key.
fn fill(db: &Database, t: TableId, from: u64) -> u64 {
    let mut i = from;
    loop {
        let mut tx = begin(db);
        for _ in 0..50 {
            match tx.insert(t, Key::from(i), value(i)) {
                Ok(()) => i += 1,
                Err(Error::MemoryLimit { used, limit }) => {
                    assert_eq!(limit, LIMIT);
                    assert!(used <= LIMIT, "{}: used {used} past the limit", db.protocol());
                    // The transaction is still open: it reads its own writes and commits.
                    if i > from {
                        assert_eq!(tx.get(t, Key::from(i - 1)).unwrap(), Some(value(i - 1)));
                    }
                    tx.commit().unwrap();
                    db.sync_commits().unwrap();
                    return i;
                }
                Err(e) => panic!("{}: insert {i}: {e}", db.protocol()),
            }
        }
        tx.commit().unwrap();
        assert!(i - from < 100_000, "{}: the limit never hit", db.protocol());
    }
}

/// Retries `f` with garbage collection in between until it stops failing
/// with `MemoryLimit` (the single-version protocols free a record only once
/// their epoch has moved on, tens of milliseconds).
fn eventually(db: &Database, what: &str, mut f: impl FnMut() -> Result<(), Error>) {
    let start = Instant::now();
    loop {
        match f() {
            Ok(()) => return,
            Err(Error::MemoryLimit { .. }) if start.elapsed() < Duration::from_secs(10) => {
                db.collect_garbage();
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("{}: {what}: {e}", db.protocol()),
        }
    }
}

fn insert_one(db: &Database, t: TableId, k: u64) -> Result<(), Error> {
    let mut tx = begin(db);
    tx.insert(t, Key::from(k), value(k))?;
    tx.commit().map(|_| ())
}

#[test]
fn fill_read_delete_resume() {
    let _serial = serial();
    for p in Protocol::ALL {
        let (db, t) = open(p, Some(LIMIT));
        let n = fill(&db, t, 0);
        assert!(n > 100, "{p}: only {n} rows fit");
        let s = db.stats();
        assert_eq!(s.memory_limit, Some(LIMIT));
        assert!(s.memory_used > LIMIT / 2 && s.memory_used <= LIMIT, "{p}: {} bytes counted", s.memory_used);
        // Still full: the next insert fails, and again after a collection.
        db.collect_garbage();
        assert!(matches!(insert_one(&db, t, n), Err(Error::MemoryLimit { .. })), "{p}");

        // Reads and read-only transactions go on.
        let mut r = db
            .begin_with(multiverse::TxnOptions { read_only: true, ..multiverse::TxnOptions::new(p.strongest()) })
            .unwrap();
        for i in (0..n).step_by(7) {
            assert_eq!(r.get(t, Key::from(i)).unwrap(), Some(value(i)), "{p}: row {i}");
        }
        r.commit().unwrap();

        // Updates: the single-version protocols rewrite a value of the same
        // length in place and allocate nothing, so they go on.
        let mut tx = begin(&db);
        let upd = tx.update(t, Key::from(0), value(1_000_000));
        if p.is_single_version() {
            upd.unwrap();
            tx.commit().unwrap();
        } else {
            assert!(matches!(upd, Err(Error::MemoryLimit { .. })), "{p}: {upd:?}");
            // The refused write left the transaction open.
            assert_eq!(tx.get(t, Key::from(0)).unwrap(), Some(value(0)));
            tx.abort();
        }

        // Deletes go on; once collected, writes resume.
        for chunk in (0..n / 2).collect::<Vec<_>>().chunks(50) {
            let mut tx = begin(&db);
            for &i in chunk {
                tx.delete(t, Key::from(i)).unwrap();
            }
            tx.commit().unwrap();
        }
        db.sync_commits().unwrap();
        eventually(&db, "insert after deletes", || insert_one(&db, t, n));
        let m = fill(&db, t, n + 1);
        assert!(m - n > (n / 2) / 3, "{p}: {} rows fit after deleting {}", m - n, n / 2);
    }
}

/// `Database::run` retries a refused write after collecting garbage.
#[test]
fn run_collects_and_retries() {
    let _serial = serial();
    for p in Protocol::ALL {
        let (db, t) = open(p, Some(LIMIT));
        let n = fill(&db, t, 0);
        let mut tx = begin(&db);
        for i in 0..n / 2 {
            tx.delete(t, Key::from(i)).unwrap();
        }
        tx.commit().unwrap();
        db.sync_commits().unwrap();
        // Not collected yet: run's first try may be refused, and it retries.
        let v = value(n);
        db.run(p.strongest(), |tx| tx.insert(t, Key::from(n), &v)).unwrap_or_else(|e| panic!("{p}: {e}"));
    }
}

/// Old versions held for a long reader count: updates hit the limit, and go
/// on once the reader has ended and garbage collection has run.
#[test]
fn long_reader_holds_old_versions() {
    let _serial = serial();
    // BOHM's interactive transactions run one at a time, and the
    // single-version protocols keep no old versions.
    for p in Protocol::ALL.into_iter().filter(|p| !p.is_single_version() && *p != Protocol::Bohm) {
        let (db, t) = open(p, Some(LIMIT));
        let rows = 100u64;
        let mut tx = begin(&db);
        for i in 0..rows {
            tx.insert(t, Key::from(i), value(i)).unwrap();
        }
        tx.commit().unwrap();
        db.sync_commits().unwrap();
        let iso = if p.isolation_levels().contains(&Isolation::Snapshot) { Isolation::Snapshot } else { p.strongest() };
        let mut reader = db.begin(iso).unwrap();
        assert_eq!(reader.get(t, Key::from(0)).unwrap(), Some(value(0)));
        let mut round = 1u64;
        let refused = 'outer: loop {
            let mut tx = begin(&db);
            for i in 0..rows {
                if let Err(e) = tx.update(t, Key::from(i), value(round * 1000 + i)) {
                    assert!(matches!(e, Error::MemoryLimit { .. }), "{p}: {e}");
                    tx.abort();
                    break 'outer round;
                }
            }
            tx.commit().unwrap();
            db.sync_commits().unwrap();
            db.collect_garbage();
            round += 1;
            assert!(round < 1000, "{p}: updates never hit the limit with a reader open");
        };
        assert!(refused > 2, "{p}: refused in round {refused}");
        // The reader still sees its snapshot, and commits.
        assert_eq!(reader.get(t, Key::from(0)).unwrap(), Some(value(0)), "{p}");
        reader.commit().unwrap();
        db.sync_commits().unwrap();
        // Old versions are reclaimed: updates go on, many rounds.
        for r in 0..3 * refused {
            eventually(&db, "update after the reader", || {
                let mut tx = begin(&db);
                for i in 0..rows {
                    tx.update(t, Key::from(i), value((refused + r) * 1000 + i))?;
                }
                tx.commit().map(|_| ())
            });
            db.sync_commits().unwrap();
            db.collect_garbage();
        }
        assert!(db.stats().memory_used <= LIMIT, "{p}");
    }
}

/// Without a limit (the default) nothing is refused and nothing counted.
#[test]
fn no_limit_by_default() {
    let _serial = serial();
    assert_eq!(Options::default().memory_limit, None);
    for p in Protocol::ALL {
        let (db, t) = open(p, None);
        for b in 0..(4 * LIMIT / VALUE as u64) / 100 {
            let mut tx = begin(&db);
            for i in b * 100..(b + 1) * 100 {
                tx.insert(t, Key::from(i), value(i)).unwrap_or_else(|e| panic!("{p}: {e}"));
            }
            tx.commit().unwrap();
        }
        let s = db.stats();
        assert_eq!((s.memory_used, s.memory_limit), (0, None), "{p}");
    }
}

#[test]
fn error_display() {
    let _serial = serial();
    let e = Error::MemoryLimit { used: 1000, limit: 1024 };
    assert!(e.is_transient());
    assert_eq!(e.abort_reason(), None);
    assert_eq!(
        e.to_string(),
        "memory limit reached: 1000 bytes of data held, the limit is 1024 bytes \
         (retry once garbage collection has freed old versions)"
    );
}

/// A key longer than `KEY_INLINE` is counted twice in an ordered table: in
/// its record and in the index entry's own copy of the key (a heap buffer);
/// the collector gives back exactly what the link counted.
#[test]
fn long_keys_count_the_ordered_index_copy() {
    let _serial = serial();
    const N: u64 = 100;
    const KEY: usize = 1000;
    let key = |i: u64| {
        let mut k = vec![b'k'; KEY];
        k[..8].copy_from_slice(&i.to_be_bytes());
        Key::from_bytes(&k).unwrap()
    };
    // BOHM keeps its versions in its own store (counted there); POMVCC's
    // next transaction may begin before the inserts' commit (BTs trails
    // CTs), and not see the rows to delete.
    for p in Protocol::ALL.into_iter().filter(|p| ![Protocol::Bohm, Protocol::Pomvcc].contains(p)) {
        for ordered in [false, true] {
            let db =
                Database::new(Options { protocol: p, memory_limit: Some(64 << 20), ..Options::default() }).unwrap();
            let spec = if ordered { TableSpec::ordered("t") } else { TableSpec::hash("t", 64).into() };
            let t = db.create_table(spec).unwrap();
            let before = db.stats().memory_used;
            db.run(p.strongest(), |x| (0..N).try_for_each(|i| x.insert(t, key(i), b"v"))).unwrap();
            let used = db.stats().memory_used - before;
            let copies = if ordered { 2 } else { 1 };
            assert!(used >= N * KEY as u64 * copies, "{p} ordered={ordered}: {used} bytes counted");
            assert!(used < N * (KEY as u64 * copies + 400), "{p} ordered={ordered}: {used} bytes counted");
            let r = db.run(p.strongest(), |x| (0..N).try_for_each(|i| x.delete(t, key(i))));
            assert_eq!(r, Ok(()), "{p} ordered={ordered}: delete");
            let start = Instant::now();
            while db.stats().memory_used > before && start.elapsed() < Duration::from_secs(10) {
                db.collect_garbage();
                std::thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(db.stats().memory_used, before, "{p} ordered={ordered}: all given back");
        }
    }
}

/// A `Database::run` closure that waits on one database does not stop the
/// freeing of another database's old versions: `run` holds no epoch pin
/// across its caller's closure (crossbeam's collector is process-wide, so
/// one would hold back every database's frees). B's writer turns its limit
/// over four times with rows of 1 KB while A's closure waits for it; B's
/// versions unlinked and not yet freed stay a small part of its limit, and
/// the writer is never refused for good.
#[test]
fn a_waiting_run_closure_does_not_hold_back_another_database() {
    let _serial = serial();
    const B_LIMIT: u64 = 2 << 20;
    const ROWS: u64 = 8;
    const KB: usize = 1000;
    for p in [Protocol::MvOcc, Protocol::Silo] {
        let (a, ta) = open(Protocol::MvOcc, None);
        a.run(Isolation::Serializable, |x| x.insert(ta, Key::from(1), b"a")).unwrap();
        let (b, tb) = open(p, Some(B_LIMIT));
        b.run(p.strongest(), |x| (0..ROWS).try_for_each(|k| x.insert(tb, Key::from(k), [0u8; KB]))).unwrap();
        // Every update makes a new version (the single-version protocols
        // rewrite a value of the same length in place: lengths alternate).
        let updates = 4 * B_LIMIT / KB as u64;
        let (started, wait_start) = std::sync::mpsc::channel::<()>();
        let (done, wait_done) = std::sync::mpsc::channel::<()>();
        let mut most_unfreed = 0;
        std::thread::scope(|s| {
            let a = &a;
            // Dropped on a panic too: A's closure stops waiting.
            let done = done;
            s.spawn(move || {
                a.run(Isolation::Serializable, |x| {
                    x.get(ta, Key::from(1))?;
                    let _ = started.send(());
                    // The user's code waits (for B's writer here; a sleep,
                    // I/O or a lock elsewhere).
                    let _ = wait_done.recv_timeout(Duration::from_secs(60));
                    Ok(())
                })
                .unwrap();
            });
            wait_start.recv().unwrap();
            let mut n = 0u64;
            while n < updates {
                let value = vec![n as u8; KB + (n / ROWS % 2) as usize];
                b.run(p.strongest(), |x| (0..ROWS).try_for_each(|k| x.update(tb, Key::from(k), &value)))
                    .unwrap_or_else(|e| panic!("{p}: update {n}: {e}"));
                n += ROWS;
                most_unfreed = most_unfreed.max(b.stats().garbage_unfreed);
            }
            done.send(()).unwrap();
        });
        let s = b.stats();
        assert!(
            most_unfreed * KB as u64 <= B_LIMIT / 2,
            "{p}: up to {most_unfreed} versions of 1 KB unlinked and not freed while A's closure waited \
             ({updates} updates, limit {B_LIMIT} bytes): {s:?}"
        );
        assert!(s.memory_used <= B_LIMIT, "{p}: {s:?}");
    }
}
