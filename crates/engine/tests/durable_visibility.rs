//! Durable visibility under sync durability (`durability::log`,
//! "Durable visibility"): a transaction's commit never returns what a crash
//! could lose, and in the multi-version families a read-only transaction
//! waits only for the rounds it read from.
//!
//! A slow disk (`Faults::log_round_delay`) holds a writer's round pending
//! while readers run: one reads the pending row, one an unrelated row.

use multiverse::research::Faults;
use multiverse::*;
use std::time::{Duration, Instant};

/// How long each log round waits before it writes.
const DELAY: Duration = Duration::from_millis(400);

/// The families whose commits become visible only once durable (Hekaton
/// section 3.2: Committed after the log write); the others follow Silo's
/// rule (a read-only transaction waits for the newest appended epoch).
fn visible_once_durable(p: Protocol) -> bool {
    !p.is_single_version() && p != Protocol::Bohm
}

fn val(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

fn read(db: &Database, t: TableId, k: u64) -> (u64, Duration) {
    let start = Instant::now();
    let o = TxnOptions { read_only: true, ..TxnOptions::new(db.protocol().strongest()) };
    let v = db.run_with(o, RetryPolicy::default(), |tx| {
        let v: Option<Vec<u8>> = tx.get(t, Key::from(k))?;
        Ok(v.map(|v| u64::from_le_bytes(v[..8].try_into().unwrap())))
    });
    (v.unwrap().expect("the row exists"), start.elapsed())
}

#[test]
fn readers_are_shown_only_durable_commits_and_wait_only_for_what_they_read() {
    for protocol in Protocol::ALL {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            protocol,
            durability: Durability::Sync,
            data_dir: Some(dir.path().to_path_buf()),
            log_streams: 1,
            pomvcc_interval: Duration::from_micros(100),
            faults: Faults { log_round_delay: DELAY, ..Faults::default() },
            ..Options::default()
        };
        let (db, _) = Database::open_with(opts, |db| db.create_table(TableSpec::hash("h", 64)).map(|_| ())).unwrap();
        let h = db.table("h").unwrap();
        db.run(db.protocol().strongest(), |t| {
            t.put(h, Key::from(1u64), val(0))?;
            t.put(h, Key::from(2u64), val(0))
        })
        .unwrap();
        db.sync_commits().unwrap();
        let (syncs, records) = (db.stats().log_syncs, db.stats().log_records);
        std::thread::scope(|s| {
            let w = s.spawn(|| db.run(db.protocol().strongest(), |t| t.put(h, Key::from(1u64), val(1))));
            // The writer has appended its record: its round is pending now.
            while db.stats().log_records == records {
                std::thread::sleep(Duration::from_millis(1));
            }
            let (_, unrelated) = read(&db, h, 2);
            let (seen, _) = read(&db, h, 1);
            if seen == 1 {
                assert!(db.stats().log_syncs > syncs, "{protocol}: a reader was shown a commit that is not durable");
            }
            if visible_once_durable(protocol) {
                // Appended means end timestamp drawn: the reader began
                // later and read the new version, taking a commit
                // dependency (POMVCC's readers read at BTs, which has not
                // passed it), so the check above is not vacuous.
                if protocol != Protocol::Pomvcc {
                    assert_eq!(seen, 1, "{protocol}: the reader began after the writer's end timestamp");
                }
                assert!(
                    unrelated < DELAY / 2,
                    "{protocol}: a reader of another row waited {unrelated:?} for a round it did not read from"
                );
            }
            w.join().unwrap().unwrap();
        });
        assert_eq!(read(&db, h, 1).0, 1);
    }
}

/// SSN and SSI safe snapshots (SSN section 5.2): the reader that takes a
/// new snapshot waits for the writers below it to decide, not for their
/// log rounds. A writer that waits only for its round has decided; a
/// reader of a row nobody writes begins at once, whatever the disk does.
#[test]
fn a_safe_snapshot_does_not_wait_for_log_rounds_it_does_not_read_from() {
    for protocol in [Protocol::Ssn, Protocol::Ssi] {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options {
            protocol,
            durability: Durability::Sync,
            data_dir: Some(dir.path().to_path_buf()),
            log_streams: 1,
            safe_snapshot_interval: Some(Duration::from_millis(1)),
            faults: Faults { log_round_delay: DELAY, ..Faults::default() },
            ..Options::default()
        };
        let (db, _) = Database::open_with(opts, |db| db.create_table(TableSpec::hash("h", 64)).map(|_| ())).unwrap();
        let h = db.table("h").unwrap();
        db.run(Isolation::Serializable, |t| {
            t.put(h, Key::from(1u64), val(0))?;
            t.put(h, Key::from(2u64), val(0))
        })
        .unwrap();
        let records = db.stats().log_records;
        std::thread::scope(|s| {
            let w = s.spawn(|| db.run(Isolation::Serializable, |t| t.put(h, Key::from(1u64), val(1))));
            // The writer has appended its record: it waits for its round.
            while db.stats().log_records == records {
                std::thread::sleep(Duration::from_millis(1));
            }
            // Past the interval: the next reader takes a new snapshot.
            std::thread::sleep(Duration::from_millis(5));
            let start = Instant::now();
            let o = TxnOptions { read_only: true, ..TxnOptions::new(Isolation::Serializable) };
            let mut r = db.begin_with(o).unwrap();
            let began = start.elapsed();
            assert_eq!(r.get(h, Key::from(2u64)).unwrap().as_deref(), Some(&val(0)[..]));
            r.commit().unwrap();
            let took = start.elapsed();
            assert!(
                took < DELAY / 2,
                "{protocol}: a safe-snapshot reader of an unwritten row waited {took:?} (begin: {began:?}) for a log round"
            );
            w.join().unwrap().unwrap();
        });
    }
}
