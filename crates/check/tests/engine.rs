//! End to end: the real engine records histories under concurrency, and the
//! checker accepts every level it claims; with the engine's fault switches
//! on, the checker catches the anomalies that follow.

use multiverse::research::history::History;
use multiverse::research::Faults;
use multiverse::{Database, Isolation, Key, Options, TableId, TableSpec};
use multiverse_check::{check, Class};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::ops::Bound;
use std::sync::Barrier;

const KEYS: u64 = 16;

fn open(faults: Faults) -> (Database, TableId) {
    let db = Database::new(Options { record_history: true, faults, ..Options::default() }).unwrap();
    let t = db.create_table(TableSpec::ordered("t")).unwrap();
    db.run(Isolation::Serializable, |x| {
        for i in 0..KEYS {
            x.insert(t, Key::from(i), i.to_be_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    (db, t)
}

/// One random transaction: point reads, a short range scan, read-modify-write
/// updates (growing the value, or in place), and now and then an insert or delete. Errors (aborts, duplicate
/// keys, missing keys) are part of the game and ignored.
fn random_txn(db: &Database, t: TableId, level: Isolation, rng: &mut SmallRng) {
    let Ok(mut x) = db.begin(level) else { return };
    for _ in 0..rng.gen_range(1..6) {
        let k = Key::from(rng.gen_range(0..KEYS + 4));
        let _ = match rng.gen_range(0..10) {
            0..=2 => x.get(t, &k).map(drop),
            3 => {
                // Up to 4 keys, and now and then stopped after the first
                // rows (a scan for "the oldest" stops at one).
                let hi = Key::from(k.to_u64().unwrap() + rng.gen_range(1..5));
                let mut left = rng.gen_range(1..6u32);
                x.scan(db.primary(t), (Bound::Included(k), Bound::Excluded(hi)), None, |_, _| {
                    left -= 1;
                    left > 0
                })
            }
            4 => x.insert(t, k, rng.gen::<u64>().to_be_bytes()),
            5 => x.delete(t, &k),
            6 => x.modify(t, &k, |v| v[0] = v[0].wrapping_add(1)),
            _ => x.update_with(t, &k, |old, new| {
                new.extend_from_slice(old);
                new.extend_from_slice(&[1]);
            }),
        };
        std::thread::yield_now();
    }
    let _ = x.commit();
}

fn random_run(level: Isolation) -> History {
    let (db, t) = open(Faults::default());
    std::thread::scope(|s| {
        for seed in 0..4 {
            let db = &db;
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed);
                for _ in 0..400 {
                    random_txn(db, t, level, &mut rng);
                }
            });
        }
    });
    db.take_history()
}

#[test]
fn engine_histories_pass_at_every_level() {
    for level in Isolation::ALL {
        let h = random_run(level);
        assert!(h.txns.len() > 1000);
        let r = check(&h, level);
        if !r.ok() {
            // Keep the evidence: the history in the text format.
            let path = std::env::temp_dir().join(format!("multiverse-check-engine-{}.hist", level.name()));
            let saved = std::fs::File::create(&path).map(|f| multiverse_check::write_history(&h, f));
            panic!("{r}\nhistory saved to {} ({saved:?})", path.display());
        }
        assert_eq!(r.count(Class::Invalid), 0, "{r}");
    }
}

/// Two transactions in lock step, many times: both read keys 0 and 1, wait
/// for each other, then each writes one key (`same_key`: both write key 0).
fn lock_step(faults: Faults, level: Isolation, same_key: bool) -> History {
    let (db, t) = open(faults);
    let barrier = Barrier::new(2);
    std::thread::scope(|s| {
        for who in 0..2u64 {
            let (db, barrier) = (&db, &barrier);
            s.spawn(move || {
                for round in 0..50u64 {
                    let mut x = db.begin(level).unwrap();
                    let _ = x.get(t, Key::from(0));
                    let _ = x.get(t, Key::from(1));
                    barrier.wait();
                    let key = if same_key { 0 } else { who };
                    let _ = x.update(t, Key::from(key), (round * 2 + who).to_be_bytes());
                    let _ = x.commit();
                    barrier.wait();
                }
            });
        }
    });
    db.take_history()
}

#[test]
fn write_skew_is_prevented_at_serializable_and_caught_without_validation() {
    let good = lock_step(Faults::default(), Isolation::Serializable, false);
    let r = check(&good, Isolation::Serializable);
    assert!(r.ok(), "{r}");

    let broken = lock_step(Faults { skip_validation: true, ..Faults::default() }, Isolation::Serializable, false);
    let r = check(&broken, Isolation::Serializable);
    assert!(!r.ok() && r.count(Class::G2Item) > 0, "{r}");
    // The same history is fine for snapshot isolation, which allows write skew.
    assert!(check(&broken, Isolation::Snapshot).ok());
}

#[test]
fn lost_update_is_prevented_and_caught_without_write_conflicts() {
    let good = lock_step(Faults::default(), Isolation::Snapshot, true);
    assert!(check(&good, Isolation::Snapshot).ok());

    let broken = lock_step(Faults { skip_write_conflicts: true, ..Faults::default() }, Isolation::Snapshot, true);
    let r = check(&broken, Isolation::Snapshot);
    assert!(!r.ok(), "{r}");
    assert!(r.count(Class::SnapshotWrite) > 0 && r.count(Class::GSingle) > 0, "{r}");
}
