//! `multiverse export`, `import` and `backup`: a data directory exported
//! and imported holds the same rows (any bytes in keys and values, keys
//! up to the maximum length, odd table names); bad input is one line naming the file and line, exit 1,
//! and writes nothing; a used output directory is refused.

mod common;

use common::{hex, multiverse, text};
use multiverse::{Database, Durability, Isolation, Key, Options, TableSpec};
use std::path::Path;

fn schema(db: &Database) -> multiverse::Result<()> {
    db.create_table(TableSpec::hash("plain", 64))?;
    db.create_table(TableSpec::ordered("odd/name.x"))?;
    db.create_table(TableSpec::hash("empty", 64))?;
    Ok(())
}

fn opts(dir: &Path) -> Options {
    Options { data_dir: Some(dir.to_path_buf()), durability: Durability::Async, ..Options::default() }
}

/// Every row of every table, sorted.
fn rows(dir: &Path) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let (db, _) = Database::open_with(opts(dir), schema).unwrap();
    let mut out = Vec::new();
    let mut t = db.begin(Isolation::Snapshot).unwrap();
    for n in db.table_names() {
        let id = db.table(&n).unwrap();
        t.scan(db.primary(id), .., None, |k, v| {
            out.push((n.clone(), k.as_bytes().to_vec(), v.to_vec()));
            true
        })
        .unwrap();
    }
    t.commit().unwrap();
    out.sort();
    out
}

fn source(dir: &Path) {
    let (db, _) = Database::open_with(opts(dir), schema).unwrap();
    let (p, o) = (db.table("plain").unwrap(), db.table("odd/name.x").unwrap());
    db.run(Isolation::Snapshot, |t| {
        for i in 0..300u64 {
            t.insert(p, Key::from(i), i.to_le_bytes())?;
        }
        // Long keys (past the 32 inline bytes, up to the 1024-byte maximum).
        t.insert(p, Key::from_bytes(&[0xab; 100]).unwrap(), b"long")?;
        t.insert(p, Key::from_bytes(&[0xcd; multiverse::KEY_MAX]).unwrap(), b"longest")?;
        t.insert(o, Key::from_bytes(&[0, 0xff, b'"', b'\n']).unwrap(), [0xc3, 0x28, 0, b'\\'])?;
        t.insert(o, Key::from_bytes(b"k").unwrap(), b"")
    })
    .unwrap();
    db.flush_log().unwrap();
}

/// Runs `multiverse ARGS`, expecting exit 1 and one line on stderr.
fn refused(args: &[&str]) -> String {
    let o = multiverse(args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err} {}", text(&o.stdout));
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    err
}

fn ok(args: &[&str]) -> String {
    let o = multiverse(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn export_then_import_round_trips_and_backup_copies() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, out, back, copy) =
        (tmp.path().join("data"), tmp.path().join("out"), tmp.path().join("back"), tmp.path().join("copy"));
    source(&data);
    let expect = rows(&data);
    assert_eq!(expect.len(), 304);
    let said = ok(&["export", s(&data), "--out", s(&out)]);
    assert!(said.contains("3 tables, 304 rows"), "{said}");
    let mut files: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
    files.sort();
    assert_eq!(files, ["empty.jsonl", "export.json", "odd%2Fname%2Ex.jsonl", "plain.jsonl"]);
    let odd = std::fs::read_to_string(out.join("odd%2Fname%2Ex.jsonl")).unwrap();
    assert_eq!(odd, "{\"key\":\"00ff220a\",\"value\":\"c328005c\"}\n{\"key\":\"6b\",\"value\":\"\"}\n");
    // The tables' definitions as the directory records them.
    let manifest = std::fs::read_to_string(out.join("export.json")).unwrap();
    assert!(
        manifest.contains("\"primary\": \"ordered\"") && manifest.contains("\"primary\": \"hash(64)\""),
        "{manifest}"
    );
    // The import and the backup record them as the source does: the
    // source's schema opens both (a table of another kind would be refused).
    ok(&["import", s(&out), "--into", s(&back)]);
    assert_eq!(rows(&back), expect);
    ok(&["backup", s(&data), "--out", s(&copy)]);
    assert_eq!(rows(&copy), expect);
    for dir in [&back, &copy] {
        assert_eq!(multiverse::durability::tables(dir).unwrap(), multiverse::durability::tables(&data).unwrap());
    }
    // Used outputs are refused and left alone.
    assert!(refused(&["export", s(&data), "--out", s(&out)]).contains("not empty"));
    assert!(refused(&["import", s(&out), "--into", s(&back)]).contains("not an empty directory"));
    assert!(refused(&["backup", s(&data), "--out", s(&copy)]).contains("not an empty directory"));
    assert_eq!(rows(&back), expect);
    // Not a data directory, not an export.
    assert!(
        refused(&["export", s(&out), "--out", s(&tmp.path().join("x"))]).contains("not a multiverse data directory")
    );
    assert!(refused(&["import", s(&data), "--into", s(&tmp.path().join("x"))]).contains("export.json"));
    assert!(!tmp.path().join("x").exists());
}

/// A hash table's rows are written in key order too, however the keys
/// were inserted (its index scans them in no particular order).
#[test]
fn export_writes_a_hash_tables_rows_in_key_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, out) = (tmp.path().join("data"), tmp.path().join("out"));
    let hashed = |db: &Database| db.create_table(TableSpec::hash("h", 16)).map(|_| ());
    let (db, _) = Database::open_with(opts(&data), hashed).unwrap();
    let h = db.table("h").unwrap();
    // 0, 500, 1, 499, ...: neither ascending nor descending.
    let keys: Vec<u64> = (0..250u64).flat_map(|i| [i, 500 - i]).collect();
    db.run(Isolation::Snapshot, |t| keys.iter().try_for_each(|&k| t.insert(h, Key::from(k), k.to_be_bytes()))).unwrap();
    db.flush_log().unwrap();
    drop(db);
    ok(&["export", s(&data), "--out", s(&out)]);
    let written: Vec<String> =
        std::fs::read_to_string(out.join("h.jsonl")).unwrap().lines().map(String::from).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable_by_key(|k| Key::from(*k).as_bytes().to_vec());
    let want: Vec<String> = sorted
        .iter()
        .map(|k| format!("{{\"key\":\"{}\",\"value\":\"{k:016x}\"}}", hex(Key::from(*k).as_bytes())))
        .collect();
    assert_eq!(written, want);
}

#[test]
fn bad_import_input_is_one_line_with_its_place() {
    let tmp = tempfile::tempdir().unwrap();
    let good = r#"{"format":"multiverse-export","version":1,"tables":[{"name":"t","file":"t.jsonl","rows":2}]}"#;
    let cases: &[(&str, &str, &str)] = &[
        (good, "{\"key\":\"01\",\"value\":\"aa\"}\nnot json\n", "t.jsonl:2: "),
        (good, "{\"key\":\"01\",\"value\":\"aa\"}\n{\"key\":\"01\",\"value\":\"bb\"}\n", "t.jsonl:2: duplicate key 01"),
        (good, "{\"key\":\"0g\",\"value\":\"aa\"}\n", "t.jsonl:1: key is not hexadecimal"),
        (good, "{\"key\":\"01\",\"value\":\"a\"}\n", "t.jsonl:1: value is not hexadecimal"),
        (good, "{\"key\":\"01\",\"value\":\"aa\",\"x\":1}\n", "t.jsonl:1: unknown field"),
        (good, "{\"key\":\"01\",\"value\":\"aa\"}\n", "1 row, but"),
        (good, &format!("{{\"key\":\"{}\",\"value\":\"\"}}\n", "ab".repeat(5000)), "t.jsonl:1: key of 5000 bytes"),
        (r#"{"format":"other","version":1,"tables":[]}"#, "", "is not multiverse-export"),
        (
            r#"{"format":"multiverse-export","version":3,"tables":[]}"#,
            "",
            "version 3 is not multiverse-export version 1 to 2",
        ),
        (
            r#"{"format":"multiverse-export","version":2,"tables":[{"name":"t","file":"t.jsonl","rows":0,"primary":"heap"}]}"#,
            "",
            "table t: 'heap' is not an index kind",
        ),
        (
            r#"{"format":"multiverse-export","version":1,"tables":[{"name":"t","file":"../t","rows":0}]}"#,
            "",
            "not a plain file name",
        ),
        ("{", "", "export.json: "),
    ];
    for (i, (manifest, rows, want)) in cases.iter().enumerate() {
        let ex = tmp.path().join(format!("ex{i}"));
        std::fs::create_dir(&ex).unwrap();
        std::fs::write(ex.join("export.json"), manifest).unwrap();
        std::fs::write(ex.join("t.jsonl"), rows).unwrap();
        let into = tmp.path().join(format!("db{i}"));
        let err = refused(&["import", s(&ex), "--into", s(&into)]);
        assert!(err.contains(want), "case {i}: {err}");
        assert!(!into.exists(), "case {i}: nothing is written");
    }
}

#[test]
fn the_help_lists_the_commands() {
    let help = ok(&["--help"]);
    for c in ["export", "import", "backup", "recover"] {
        assert!(help.contains(c), "{help}");
    }
}
