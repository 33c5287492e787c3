//! A first program, written the way a user of redb, fjall or RocksDB would
//! write it from the README and the rustdoc alone: the obvious first guess
//! at each call compiles and does what it says. 100,000 inserts with
//! string keys and values, ranges both ways, savepoints, a hash table,
//! typed tables with `get_for_update`, retries under contention, a backup,
//! `close`, reopening without and with a schema, and the errors a wrong
//! guess meets (another schema, another database's handle, other types).
//!
//! `MULTIVERSE_STRESS=N` multiplies the rows (100,000 by default).

use multiverse::{
    Database, Durability, Error, IndexKind, Isolation, Key, Options, Protocol, TableDefinition, TableSpec,
};
use std::path::Path;

const USERS: &str = "users";
const SCORES: TableDefinition<u64, String> = TableDefinition::new("scores");

fn rows() -> u64 {
    let stress: u64 = std::env::var("MULTIVERSE_STRESS").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    100_000 * stress.max(1)
}

fn user(i: u64) -> String {
    format!("user:{i:08}")
}

/// Writes the data: string rows in batches, a hash table, a typed table.
fn first_run(path: &Path, n: u64) {
    let db = Database::open(path).unwrap();
    let users = db.open_table(TableSpec::ordered(USERS)).unwrap();
    for batch in (0..n).collect::<Vec<_>>().chunks(10_000) {
        db.run(Isolation::Serializable, |x| {
            for &i in batch {
                x.insert(users, user(i), format!("name {i}"))?;
            }
            Ok(())
        })
        .unwrap();
    }

    // Ranges, both ways, over string keys.
    let mut x = db.begin(Isolation::Snapshot).unwrap();
    let ten: Vec<(Key, Vec<u8>)> = x.range(users, user(10)..user(20)).unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(ten.len(), 10);
    assert_eq!(ten[0].0.as_bytes(), user(10).as_bytes());
    assert_eq!(ten[0].1, b"name 10");
    let last = x.range(users, ..).unwrap().next_back().unwrap().unwrap();
    assert_eq!(last.0.as_bytes(), user(n - 1).as_bytes());
    let down: Vec<Key> = x.range(users, user(5)..=user(7)).unwrap().rev().map(|r| r.unwrap().0).collect();
    assert_eq!(down, [user(7), user(6), user(5)].map(|s| Key::try_from(s.as_str()).unwrap()));
    assert_eq!(x.prefix(users, "user:0000001").unwrap().count(), 10);
    assert_eq!(x.get(users, "user:00000042").unwrap().as_deref(), Some(&b"name 42"[..]));
    assert_eq!(x.get(users, "nobody").unwrap(), None);
    drop(x);

    // A savepoint takes back what came after it.
    let mut x = db.begin(Isolation::Serializable).unwrap();
    x.put(users, "zed", "kept").unwrap();
    let sp = x.savepoint().unwrap();
    x.put(users, "zoe", "undone").unwrap();
    x.delete(users, user(0)).unwrap();
    x.rollback_to(&sp).unwrap();
    x.commit().unwrap();

    // A hash table: point operations and a scan in no order.
    let sessions = db.open_table(TableSpec::hash("sessions", 1024)).unwrap();
    db.run(Isolation::Serializable, |x| {
        x.put(sessions, "alice", "token-a").and_then(|_| x.put(sessions, "bob", "token-b"))
    })
    .unwrap();

    // Typed table: Rust keys and values, get_for_update.
    let scores = SCORES.create(&db, IndexKind::Ordered).unwrap();
    db.run(Isolation::Serializable, |x| {
        for i in 0..100u64 {
            scores.insert(x, i, format!("{}", i * 10))?;
        }
        Ok(())
    })
    .unwrap();
    db.run(Isolation::Serializable, |x| {
        let old = scores.get_for_update(x, 7)?.unwrap();
        scores.update(x, 7, format!("{old}!"))
    })
    .unwrap();

    // Retries: two threads add to one counter; every increment lands.
    let counter = db.open_table(TableSpec::ordered("counter")).unwrap();
    db.run(Isolation::Serializable, |x| x.put(counter, "n", 0u64.to_le_bytes())).unwrap();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..200 {
                    db.run(Isolation::Serializable, |x| {
                        let v = x.get_for_update(counter, "n")?.unwrap();
                        let n = u64::from_le_bytes(v.try_into().unwrap());
                        x.put(counter, "n", (n + 1).to_le_bytes())
                    })
                    .unwrap();
                }
            });
        }
    });
    db.close().unwrap();
}

/// Checks what `first_run` wrote, reading through `db`.
fn check_data(db: &Database, n: u64) {
    let users = db.table(USERS).unwrap();
    let sessions = db.table("sessions").unwrap();
    let counter = db.table("counter").unwrap();
    let scores = SCORES.open(db).unwrap();
    let mut x = db.begin(Isolation::Serializable).unwrap();
    // Every row, in string order (keys are compared as bytes).
    let mut i = 0;
    for r in x.range(users, ..user(n)).unwrap() {
        let (k, v) = r.unwrap();
        assert_eq!(k.as_bytes(), user(i).as_bytes());
        assert_eq!(v, format!("name {i}").as_bytes());
        i += 1;
    }
    assert_eq!(i, n);
    assert_eq!(x.get(users, "zed").unwrap().as_deref(), Some(&b"kept"[..]));
    assert_eq!(x.get(users, "zoe").unwrap(), None);
    assert_eq!(x.get(sessions, "bob").unwrap().as_deref(), Some(&b"token-b"[..]));
    let n_counter = u64::from_le_bytes(x.get(counter, "n").unwrap().unwrap().try_into().unwrap());
    assert_eq!(n_counter, 400);
    assert_eq!(scores.get(&mut x, 7).unwrap().as_deref(), Some("70!"));
    assert_eq!(scores.get(&mut x, 99).unwrap().as_deref(), Some("990"));
}

#[test]
fn a_first_program_written_from_the_docs() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let n = rows();
    first_run(&path, n);

    // Reopened without a schema: every table is there.
    let db = Database::open(&path).unwrap();
    assert_eq!(db.table_names(), ["users", "sessions", "scores", "counter"]);
    check_data(&db, n);

    // Wrong guesses meet typed errors and change nothing.
    let e = db.open_table(TableSpec::hash(USERS, 1024)).unwrap_err();
    assert!(matches!(e, Error::SchemaMismatch { .. }), "{e}");
    assert_eq!(e.to_string(), "table 'users': stored as ordered, opened as hash(1024)");
    let e = TableDefinition::<u64, u64>::new("scores").open(&db).err().unwrap();
    assert!(matches!(e, Error::SchemaMismatch { .. }), "{e}");
    let other = Database::new(Options::new().protocol(Protocol::Silo)).unwrap();
    let foreign = other.create_table(TableSpec::ordered(USERS)).unwrap();
    let mut x = db.begin(Isolation::Snapshot).unwrap();
    assert!(matches!(x.get(foreign, "zed"), Err(Error::ForeignHandle(_))));
    drop(x);

    // A backup opens as a database of its own, with the same rows.
    let backup = tmp.path().join("backup");
    db.backup(&backup).unwrap();
    db.close().unwrap();
    let copy = Database::open(&backup).unwrap();
    check_data(&copy, n);
    copy.close().unwrap();

    // Options built with the builder methods open the same directory.
    let opts = Options::new().protocol(Protocol::Silo).durability(Durability::Async).data_dir(&path);
    let (db, report) = Database::open_with(opts, |_| Ok(())).unwrap();
    assert!(report.dropped.is_empty(), "{report:?}");
    check_data(&db, n);
    db.close().unwrap();
}
