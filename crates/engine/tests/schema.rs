//! The schema a data directory records (`durability::schema`): each
//! table's descriptor is stored in the checkpoint and log headers, checked
//! on open (a difference is `Error::SchemaMismatch`, and the directory is
//! left as it was), and opens the tables a schema does not create. Also
//! the one-line API over it (`Database::open(path)`, `open_table`,
//! `close`) and the types typed tables record.

use multiverse::research::Faults;
use multiverse::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

fn options(dir: &Path) -> Options {
    Options {
        durability: Durability::Sync,
        data_dir: Some(dir.to_path_buf()),
        checkpoint_every: None,
        checkpoint_log_bytes: None,
        ..Options::default()
    }
}

/// Every file of the directory but `LOCK` (which names its last opener),
/// with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != "LOCK")
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect()
}

fn mismatch(r: Result<(Database, RecoveryReport)>) -> (String, String) {
    match r {
        Err(Error::SchemaMismatch { table, detail }) => (table, detail),
        Err(e) => panic!("not a schema mismatch: {e}"),
        Ok(_) => panic!("opened"),
    }
}

/// A new directory where `first` ran at run time (its tables are then
/// described by the log's headers only), reopened with a schema that
/// creates `spec`: what the refusal says differs.
fn reopened_as<H: Into<TableId>>(first: impl FnOnce(&Database) -> Result<H>, spec: impl Into<TableSpec>) -> String {
    let spec: TableSpec = spec.into();
    let tmp = tempfile::tempdir().unwrap();
    let o = options(tmp.path());
    let (db, _) = Database::open_with(o.clone(), |_| Ok(())).unwrap();
    first(&db).unwrap();
    drop(db);
    mismatch(Database::open_with(o, move |db| db.create_table(spec).map(drop))).1
}

fn insert(db: &Database, t: impl Into<TableId>, keys: std::ops::Range<u64>) {
    let t = t.into();
    db.run(Isolation::Serializable, |x| keys.clone().try_for_each(|k| x.insert(t, Key::from(k), k.to_le_bytes())))
        .unwrap();
}

fn rows(db: &Database, t: impl Into<TableId>) -> Vec<u64> {
    let t = t.into();
    let mut out = vec![];
    db.run(Isolation::Snapshot, |x| {
        out.clear();
        x.scan(db.primary(t), .., None, |k, _| {
            out.push(k.to_u64().unwrap());
            true
        })
    })
    .unwrap();
    out.sort();
    out
}

/// An ordered table reopened as a hash table: refused at open, naming
/// both kinds, with the directory unchanged; the right schema still opens
/// it with its rows.
#[test]
fn a_table_reopened_with_another_kind_is_refused_and_nothing_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let o = options(tmp.path());
    let ordered = |db: &Database| db.create_table(TableSpec::ordered("orders")).map(drop);
    let (db, _) = Database::open_with(o.clone(), ordered).unwrap();
    insert(&db, db.table("orders").unwrap(), 0..10);
    drop(db);
    let before = files(tmp.path());

    let hash = |db: &Database| db.create_table(TableSpec::hash("orders", 64)).map(drop);
    let e = Database::open_with(o.clone(), hash).err().unwrap();
    assert_eq!(e.to_string(), "table 'orders': stored as ordered, opened as hash(64)");
    assert_eq!(mismatch(Database::open_with(o.clone(), hash)).0, "orders");
    // A grouped ordered index is another kind, and so is another capacity.
    let grouped = |db: &Database| db.create_table(TableSpec::ordered_grouped("orders", 4)).map(drop);
    assert_eq!(mismatch(Database::open_with(o.clone(), grouped)).1, "stored as ordered, opened as ordered-grouped(4)");
    assert_eq!(files(tmp.path()), before, "a refused open changes nothing");

    let (db, report) = Database::open_with(o.clone(), ordered).unwrap();
    assert_eq!(report.replayed, 1);
    assert_eq!(rows(&db, db.table("orders").unwrap()), (0..10).collect::<Vec<_>>());
    drop(db);

    // A hash table's capacity is part of its definition.
    let detail = reopened_as(|db| db.create_table(TableSpec::hash("h", 64)), TableSpec::hash("h", 128));
    assert_eq!(detail, "stored as hash(64), opened as hash(128)");
}

/// A secondary index missing, added, or of another kind: refused.
#[test]
fn a_secondary_index_missing_added_or_of_another_kind_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let o = options(tmp.path());
    let len: KeyFn = |_, v| Key::from(v.len() as u64);
    let spec = move || TableSpec::hash("t", 64).secondary("by_len", IndexKind::Ordered, len);
    let (db, _) = Database::open_with(o.clone(), |db| db.create_table(spec()).map(drop)).unwrap();
    insert(&db, db.table("t").unwrap(), 0..3);
    drop(db);
    let before = files(tmp.path());

    let cases: [(TableSpec, &str); 3] = [
        (TableSpec::hash("t", 64).into(), "stored with secondary index 'by_len' (ordered), opened without it"),
        (
            TableSpec::hash("t", 64).secondary("by_len", IndexKind::Hash { capacity: 16 }, len).into(),
            "secondary index 'by_len' stored as ordered, opened as hash(16)",
        ),
        (
            spec().secondary("by_x", IndexKind::Ordered, len).into(),
            "opened with secondary index 'by_x' (ordered), stored without it",
        ),
    ];
    for (opened, want) in cases {
        let r = Database::open_with(o.clone(), move |db| db.create_table(opened).map(drop));
        assert_eq!(mismatch(r), ("t".to_string(), want.to_string()));
    }
    assert_eq!(files(tmp.path()), before);
    let (db, _) = Database::open_with(o, |db| db.create_table(spec()).map(drop)).unwrap();
    let t = db.table("t").unwrap();
    assert_eq!(rows(&db, t), [0, 1, 2]);
    // The index was rebuilt from the rows.
    let mut x = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(x.range(db.index(t, "by_len").unwrap(), ..).unwrap().count(), 3);
}

/// An open without a schema creates every table the directory records,
/// with its kind, and loads its rows.
#[test]
fn an_open_without_a_schema_opens_every_table_and_its_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let o = options(tmp.path());
    let (db, _) = Database::open_with(o.clone(), |db| {
        db.create_table(TableSpec::hash("h", 64))?.table();
        db.create_table(TableSpec::ordered_grouped("g", 4)).map(drop)
    })
    .unwrap();
    insert(&db, db.table("h").unwrap(), 0..5);
    // Created at run time, after the open's checkpoint: only the log's
    // headers describe it.
    let late = db.create_table(TableSpec::ordered("late")).unwrap();
    insert(&db, late, 100..103);
    drop(db);

    let (db, report) = Database::open_with(o.clone(), |_| Ok(())).unwrap();
    assert_eq!(report.replayed, 2);
    assert_eq!(db.table_names(), ["h", "g", "late"]);
    assert_eq!(rows(&db, db.table("h").unwrap()), [0, 1, 2, 3, 4]);
    assert_eq!(rows(&db, db.table("late").unwrap()), [100, 101, 102]);
    assert!(rows(&db, db.table("g").unwrap()).is_empty());
    // Created with their kinds: an ordered table iterates in order, a hash one does not.
    let mut x = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(x.range(db.primary(db.table("late").unwrap()), ..).unwrap().count(), 3);
    assert!(matches!(x.range(db.primary(db.table("h").unwrap()), ..), Err(Error::Unsupported(_))));
    drop(x);
    assert_eq!(db.open_table(TableSpec::ordered_grouped("g", 4)), db.table("g"));
    let e = db.open_table(TableSpec::ordered("g")).unwrap_err();
    assert_eq!(e.to_string(), "table 'g': stored as ordered-grouped(4), opened as ordered");
    drop(db);

    // A table only a log header describes is checked too.
    let detail = reopened_as(|db| db.create_table(TableSpec::ordered("late")), TableSpec::hash("late", 8));
    assert_eq!(detail, "stored as ordered, opened as hash(8)");
}

/// A recorded table with a secondary index cannot be opened without the
/// schema that gives its key function: a clear error, nothing changed.
#[test]
fn a_table_with_a_secondary_index_needs_the_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let o = options(tmp.path());
    let spec = || TableSpec::ordered("t").secondary("by_x", IndexKind::Ordered, |pk, _| pk.clone());
    let (db, _) = Database::open_with(o.clone(), |db| db.create_table(spec()).map(drop)).unwrap();
    insert(&db, db.table("t").unwrap(), 0..2);
    drop(db);
    let before = files(tmp.path());
    let e = Database::open_with(o.clone(), |_| Ok(())).err().unwrap();
    assert_eq!(e, Error::KeyFunctionNeeded { table: "t".into(), index: "by_x".into() });
    assert_eq!(e.to_string(), "table 't' has secondary index 'by_x': its key function must be given by the schema");
    assert!(matches!(Database::open(tmp.path()), Err(Error::KeyFunctionNeeded { .. })));
    assert_eq!(files(tmp.path()), before);
    let (db, _) = Database::open_with(o, |db| db.create_table(spec()).map(drop)).unwrap();
    assert_eq!(rows(&db, db.table("t").unwrap()), [0, 1]);
}

/// `Database::open(path)` and `open_table` on the first run and every
/// later one: the tables and rows are kept.
#[test]
fn open_path_and_open_table_keep_the_data_across_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("nested").join("db");
    for run in 0..3u64 {
        let db = Database::open(&path).unwrap();
        assert_eq!(db.durability(), Durability::Sync);
        let a = db.open_table(TableSpec::ordered("a")).unwrap();
        let b = db.open_table(TableSpec::hash("b", 32)).unwrap();
        // Opening again in the same run finds the same tables.
        assert_eq!(db.open_table(TableSpec::ordered("a")).unwrap(), a);
        insert(&db, a, run * 10..run * 10 + 2);
        insert(&db, b, run..run + 1);
        let want: Vec<u64> = (0..=run).flat_map(|r| [r * 10, r * 10 + 1]).collect();
        assert_eq!(rows(&db, a), want, "run {run}");
        assert_eq!(rows(&db, b), (0..=run).collect::<Vec<_>>(), "run {run}");
        // A second owner is refused while this one runs.
        assert!(matches!(Database::open(&path), Err(Error::Locked(_))));
        if run % 2 == 0 {
            db.close().unwrap();
        } else {
            drop(db);
        }
    }
}

/// Async durability with no log round until the close's: its flush must
/// write the commits.
fn flushed_only_by_close(dir: &Path, faults: Faults) -> Options {
    Options { durability: Durability::Async, group_commit_interval: Duration::from_secs(3600), faults, ..options(dir) }
}

fn hash_table(db: &Database) -> Result<()> {
    db.create_table(TableSpec::hash("t", 64)).map(drop)
}

/// `close` returns `Ok`, releases the directory at once, and leaves every
/// commit durable; an in-memory database just closes.
#[test]
fn close_flushes_and_releases_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let o = flushed_only_by_close(tmp.path(), Faults::default());
    let schema = hash_table;
    let (db, _) = Database::open_with(o.clone(), schema).unwrap();
    insert(&db, db.table("t").unwrap(), 0..4);
    assert_eq!(db.stats().log_syncs, 0);
    db.close().unwrap();
    let (db, report) = Database::open_with(o, schema).unwrap();
    assert_eq!(report.replayed, 1);
    assert_eq!(rows(&db, db.table("t").unwrap()), [0, 1, 2, 3]);
    db.close().unwrap();
    Database::new(Options::default()).unwrap().close().unwrap();
}

/// A close whose final flush fails returns that error (a failing disk:
/// `Faults::fail_log_write_after`); the commit it could not write is not
/// recovered, and the directory opens.
#[test]
fn a_close_whose_flush_fails_returns_the_error() {
    let tmp = tempfile::tempdir().unwrap();
    let o = flushed_only_by_close(tmp.path(), Faults { fail_log_write_after: Some(0), ..Faults::default() });
    let schema = hash_table;
    let (db, _) = Database::open_with(o.clone(), schema).unwrap();
    insert(&db, db.table("t").unwrap(), 0..1);
    let e = db.close().unwrap_err();
    assert!(matches!(e, Error::LogFailed(_)), "{e}");
    assert!(e.to_string().contains("log write"), "{e}");
    let (db, report) = Database::open_with(Options { faults: Faults::default(), ..o }, schema).unwrap();
    assert!(!report.damaged, "{report:?}");
    assert!(rows(&db, db.table("t").unwrap()).is_empty());
}

const AS_U64: TableDefinition<u64, u64> = TableDefinition::new("t");
const AS_STRING: TableDefinition<u64, String> = TableDefinition::new("t");
const KEYED_BY_STRING: TableDefinition<String, u64> = TableDefinition::new("t");

/// A typed table opened with another value type is refused when it is
/// opened, in memory and in a data directory, not when a row is read.
#[test]
fn a_typed_table_opened_with_other_types_is_refused_at_open() {
    // In memory: against the types it was created with.
    let db = Database::new(Options::default()).unwrap();
    let t = AS_U64.create(&db, IndexKind::Ordered).unwrap();
    assert_eq!(AS_U64.open(&db).unwrap(), t);
    let e = AS_STRING.open(&db).unwrap_err();
    assert_eq!(
        e,
        Error::SchemaMismatch {
            table: "t".into(),
            detail: "created with values of type u64, opened with alloc::string::String".into()
        }
    );
    assert!(KEYED_BY_STRING
        .open(&db)
        .unwrap_err()
        .to_string()
        .contains("keys of type u64, opened with alloc::string::String"));
    assert!(db.open_table(AS_STRING.spec(IndexKind::Ordered)).is_err());
    // A table created through the byte API takes the types of its first typed open.
    db.create_table(TableSpec::ordered("raw")).unwrap();
    const RAW: TableDefinition<u64, u64> = TableDefinition::new("raw");
    const RAW_STRING: TableDefinition<u64, String> = TableDefinition::new("raw");
    RAW.open(&db).unwrap();
    assert!(matches!(RAW_STRING.open(&db), Err(Error::SchemaMismatch { .. })));

    // Durable: at the open's schema check, and at `TableDefinition::open`.
    let tmp = tempfile::tempdir().unwrap();
    let o = options(tmp.path());
    let (db, _) = Database::open_with(o.clone(), |db| AS_U64.create(db, IndexKind::Ordered).map(drop)).unwrap();
    db.run(Isolation::Serializable, |x| AS_U64.open(&db)?.insert(x, 1, 7)).unwrap();
    drop(db);
    let before = files(tmp.path());
    let r = Database::open_with(o.clone(), |db| AS_STRING.create(db, IndexKind::Ordered).map(drop));
    assert_eq!(mismatch(r), ("t".into(), "stored with values of type u64, opened with alloc::string::String".into()));
    assert_eq!(files(tmp.path()), before);
    let db = Database::open(tmp.path()).unwrap();
    assert!(matches!(AS_STRING.open(&db), Err(Error::SchemaMismatch { .. })));
    let t = AS_U64.open(&db).unwrap();
    assert_eq!(db.run(Isolation::Snapshot, |x| t.get(x, 1)).unwrap(), Some(7));
    db.close().unwrap();
    // A schema that creates it through the byte API opens it, and it keeps its types.
    let (db, _) = Database::open_with(o.clone(), |db| db.create_table(TableSpec::ordered("t")).map(drop)).unwrap();
    assert!(matches!(AS_STRING.open(&db), Err(Error::SchemaMismatch { .. })));
    drop(db);

    // Types recorded at run time (a raw table's first typed open) reach
    // the log's headers: the next open checks them.
    let t2 = tempfile::tempdir().unwrap();
    let db = Database::open(t2.path()).unwrap();
    db.open_table(TableSpec::ordered("t")).unwrap();
    AS_U64.open(&db).unwrap();
    drop(db);
    let r = Database::open_with(options(t2.path()), |db| AS_STRING.create(db, IndexKind::Ordered).map(drop));
    assert_eq!(mismatch(r).1, "stored with values of type u64, opened with alloc::string::String");
}

/// A checkpoint of format 2 (table names, no descriptors), written here
/// from its documented layout, still opens: a schema must create its
/// tables (nothing is checked), and the checkpoint the open writes
/// records them.
#[test]
fn an_old_format_checkpoint_still_opens() {
    fn frame(out: &mut Vec<u8>, body: &[u8]) {
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
        out.extend_from_slice(body);
    }
    let tmp = tempfile::tempdir().unwrap();
    // "MVCKPT\0\x02" | frame(generation u64 | ts u64 | tables u32 | (id u32 | name_len u16 | name)*)
    //                | frame(table u32 | key_len u8 | key | value_len u32 | value)* | frame(u32::MAX | rows u64)
    let mut file = b"MVCKPT\x00\x02".to_vec();
    let mut header = Vec::new();
    header.extend_from_slice(&1u64.to_le_bytes());
    header.extend_from_slice(&10u64.to_le_bytes());
    header.extend_from_slice(&1u32.to_le_bytes());
    header.extend_from_slice(&0u32.to_le_bytes());
    header.extend_from_slice(&(b"old".len() as u16).to_le_bytes());
    header.extend_from_slice(b"old");
    frame(&mut file, &header);
    for k in 0..3u64 {
        let key = Key::from(k);
        let mut row = 0u32.to_le_bytes().to_vec();
        row.push(key.as_bytes().len() as u8);
        row.extend_from_slice(key.as_bytes());
        row.extend_from_slice(&8u32.to_le_bytes());
        row.extend_from_slice(&k.to_le_bytes());
        frame(&mut file, &row);
    }
    let mut footer = u32::MAX.to_le_bytes().to_vec();
    footer.extend_from_slice(&3u64.to_le_bytes());
    frame(&mut file, &footer);
    std::fs::write(tmp.path().join("checkpoint-00000001-00000000000000000010.mvc"), &file).unwrap();
    assert_eq!(durability::table_names(tmp.path()).unwrap(), ["old"]);

    let o = options(tmp.path());
    // Without descriptors, a schema must create the table.
    let e = Database::open_with(o.clone(), |_| Ok(())).err().unwrap();
    assert!(e.to_string().contains("the data names table 'old', which the schema does not create"), "{e}");
    // Of any kind: nothing is recorded to check it against.
    let (db, report) =
        Database::open_with(o.clone(), |db| db.create_table(TableSpec::ordered("old")).map(drop)).unwrap();
    assert_eq!((report.generation, report.checkpoint.map(|c| c.2)), (1, Some(3)));
    assert_eq!(rows(&db, db.table("old").unwrap()), [0, 1, 2]);
    db.close().unwrap();
    // The open wrote a checkpoint that records the table: no schema needed now, and checked.
    let db = Database::open(tmp.path()).unwrap();
    assert_eq!(rows(&db, db.table("old").unwrap()), [0, 1, 2]);
    assert!(matches!(db.open_table(TableSpec::hash("old", 64)), Err(Error::SchemaMismatch { .. })));
}
