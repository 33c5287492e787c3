//! `multiverse export DIR --out OUT`, `multiverse import OUT --into DIR`
//! and `multiverse backup DIR --out OUT`.
//!
//! **Export** loads a data directory into memory as `recover` does (taking
//! no lock: a database may have it open) and writes, into a new directory:
//!
//! * `TABLE.jsonl` per table: one JSON object per row, in key order (the
//!   byte order of the keys, whatever the table's index kind: a hash
//!   table's rows are sorted), `{"key":"<hex>","value":"<hex>"}`: the
//!   key's and the value's bytes in lowercase hexadecimal (lossless; keys
//!   and values are bytes). A table
//!   name's bytes other than `A-Z a-z 0-9 _ -` are written `%XX` in its
//!   file's name;
//! * `workload`: the data directory's workload file, when it has one;
//! * `export.json`, written last: `{"format":"multiverse-export",
//!   "version":2,"tables":[{"name":..,"file":..,"rows":N,"primary":..,
//!   "secondary":[[name,kind]..],"types":[key,value]}]}`, the tables in
//!   the data directory's order, each with its definition as the
//!   directory records it (`primary` and the secondary indexes' kinds as
//!   `hash(N)`, `ordered` or `ordered-grouped(N)`, a typed table's key and
//!   value type names; absent for a table recorded without them, and in
//!   version 1, which wrote none). An export without it is unfinished and
//!   is refused by import.
//!
//! **Import** reads an export (its `export.json` says which files) and
//! writes a new data directory that `Database::open` opens (a backup of
//! the rows loaded in memory: atomic, synced), its tables recorded as the
//! export describes them (a hash table for one it does not), with the
//! workload file when the export has one, so that `recover` checks its
//! invariants. Bad input
//! is one line naming the file and line (malformed JSON, bad hex, a key
//! too long, a duplicate key, a row count that differs from the
//! manifest's) and exit 1; nothing is written then.
//!
//! **Backup** loads a data directory as export does and writes its
//! consistent copy (see `Database::backup`) into a new directory. For a
//! database running in a process, call `Database::backup` there: this
//! reads the files as they are.
//!
//! Every command refuses an output directory that exists and is not empty.

use multiverse::durability::StoredTable;
use multiverse::{Database, IndexKind, Key, Options, TableSpec, TxnOptions};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Arguments of `multiverse export`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// The data directory to export (read, never changed).
    pub dir: PathBuf,
    /// The new directory to write the JSON Lines files into: TABLE.jsonl
    /// per table, its rows in key order whatever the index kind (a hash
    /// table's are sorted), and export.json.
    #[arg(long, value_name = "OUTDIR")]
    pub out: PathBuf,
}

/// Arguments of `multiverse import`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// A directory written by `multiverse export`.
    pub export: PathBuf,
    /// The new data directory to create.
    #[arg(long, value_name = "DIR")]
    pub into: PathBuf,
}

/// Arguments of `multiverse backup`.
#[derive(clap::Args, Debug)]
pub struct BackupArgs {
    /// The data directory to back up (read, never changed).
    pub dir: PathBuf,
    /// The new directory to write the backup into.
    #[arg(long, value_name = "OUTDIR")]
    pub out: PathBuf,
}

const FORMAT: &str = "multiverse-export";
const MANIFEST: &str = "export.json";
const WORKLOAD: &str = "workload";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    format: String,
    version: u32,
    tables: Vec<TableEntry>,
}

/// The newest `export.json` version written (1, which recorded no table
/// definitions, is read too).
const VERSION: u32 = 2;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableEntry {
    name: String,
    file: String,
    rows: u64,
    /// The primary index's kind (`hash(N)`, `ordered`, `ordered-grouped(N)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    primary: Option<String>,
    /// The secondary indexes' names and kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    secondary: Vec<(String, String)>,
    /// A typed table's key and value type names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    types: Option<(String, String)>,
}

/// Reads an index kind as its `Display` writes it.
fn parse_kind(s: &str) -> Option<IndexKind> {
    let arg = |prefix: &str| s.strip_prefix(prefix)?.strip_suffix(')')?.parse::<usize>().ok();
    match s {
        "ordered" => Some(IndexKind::Ordered),
        _ => arg("hash(")
            .map(|capacity| IndexKind::Hash { capacity })
            .or_else(|| arg("ordered-grouped(").map(|prefix| IndexKind::OrderedGrouped { prefix })),
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    key: String,
    value: String,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok()).collect()
}

/// The file name of a table's rows.
fn file_name(table: &str) -> String {
    let mut s = String::new();
    for b in table.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            s.push(b as char);
        } else {
            s += &format!("%{b:02X}");
        }
    }
    s + ".jsonl"
}

/// Creates `dir`, refusing one that exists and is not empty.
fn new_dir(dir: &Path) -> Result<(), String> {
    if let Ok(mut d) = std::fs::read_dir(dir) {
        if d.next().is_some() {
            return Err(format!("{} exists and is not empty; nothing was written", dir.display()));
        }
    } else if dir.exists() {
        return Err(format!("{} exists and is not a directory; nothing was written", dir.display()));
    }
    // Its parent exists (checked with the command line): one level only.
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(format!("cannot create {}: {e}", dir.display())),
        _ => Ok(()),
    }
}

/// Runs `multiverse export`.
pub fn export(a: ExportArgs) -> Result<(), String> {
    let (db, workload) = crate::recover::load_dir(&a.dir, "export")?;
    let stored = multiverse::durability::tables(&a.dir).map_err(|e| e.to_string())?;
    new_dir(&a.out)?;
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    let mut t = db
        .begin_with(TxnOptions { read_only: true, ..TxnOptions::new(db.protocol().strongest()) })
        .map_err(|e| e.to_string())?;
    let mut tables = Vec::new();
    for name in db.table_names() {
        let id = db.table(&name).map_err(|e| e.to_string())?;
        let file = file_name(&name);
        let path = a.out.join(&file);
        let mut out = BufWriter::new(std::fs::File::create(&path).map_err(|e| io(&path, e))?);
        let def = stored.iter().find(|t| t.name == name);
        // An ordered primary index scans in key order; any other (a hash
        // index, or a kind the directory does not record) is sorted here.
        let in_order =
            matches!(def.and_then(|t| t.primary), Some(IndexKind::Ordered | IndexKind::OrderedGrouped { .. }));
        let (mut rows, mut failed, mut unsorted) = (0u64, None, Vec::new());
        t.scan(db.primary(id), .., None, |k, v| {
            if !in_order {
                unsorted.push((k.clone(), v.to_vec()));
                return true;
            }
            match write_row(&mut out, k, v) {
                Ok(()) => rows += 1,
                Err(e) => failed = Some(e),
            }
            failed.is_none()
        })
        .map_err(|e| e.to_string())?;
        if let Some(e) = failed {
            return Err(io(&path, e));
        }
        unsorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (k, v) in unsorted {
            write_row(&mut out, &k, &v).map_err(|e| io(&path, e))?;
            rows += 1;
        }
        let f = out.into_inner().map_err(|e| io(&path, e.into_error()))?;
        f.sync_all().map_err(|e| io(&path, e))?;
        tables.push(TableEntry {
            primary: def.and_then(|t| t.primary).map(|k| k.to_string()),
            secondary: def.map_or(vec![], |t| t.secondary.iter().map(|(n, k)| (n.clone(), k.to_string())).collect()),
            types: def.and_then(|t| t.types.clone()),
            name,
            file,
            rows,
        });
    }
    t.commit().map_err(|e| e.to_string())?;
    if let Some(w) = workload {
        let p = a.out.join(WORKLOAD);
        std::fs::write(&p, w).map_err(|e| io(&p, e))?;
    }
    let total: u64 = tables.iter().map(|t| t.rows).sum();
    let n = tables.len();
    let m = Manifest { format: FORMAT.into(), version: VERSION, tables };
    let p = a.out.join(MANIFEST);
    let text = serde_json::to_string_pretty(&m).expect("strings") + "\n";
    let tmp = a.out.join(".export.json.tmp");
    std::fs::write(&tmp, text).map_err(|e| io(&tmp, e))?;
    std::fs::File::open(&tmp).and_then(|f| f.sync_all()).map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, &p).map_err(|e| io(&p, e))?;
    println!("exported {} to {}: {n} tables, {total} rows", a.dir.display(), a.out.display());
    Ok(())
}

/// Writes one row of a table's JSON Lines file.
fn write_row(out: &mut impl Write, k: &Key, v: &[u8]) -> std::io::Result<()> {
    let line = serde_json::to_string(&Row { key: hex(k.as_bytes()), value: hex(v) }).expect("strings");
    writeln!(out, "{line}")
}

/// Runs `multiverse import`.
pub fn import(a: ImportArgs) -> Result<(), String> {
    let mp = a.export.join(MANIFEST);
    let text = std::fs::read_to_string(&mp)
        .map_err(|e| format!("{}: {e} (not an export, or an unfinished one: export writes it last)", mp.display()))?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", mp.display()))?;
    if m.format != FORMAT || !(1..=VERSION).contains(&m.version) {
        return Err(format!(
            "{}: format {} version {} is not {FORMAT} version 1 to {VERSION}",
            mp.display(),
            m.format,
            m.version
        ));
    }
    let db = Database::new(Options::default()).map_err(|e| e.to_string())?;
    for t in &m.tables {
        if t.file.is_empty() || t.file.starts_with('.') || t.file.contains(['/', '\\']) {
            return Err(format!("{}: table {}: '{}' is not a plain file name", mp.display(), t.name, t.file));
        }
        let kind = |k: &str| {
            parse_kind(k).ok_or_else(|| format!("{}: table {}: '{k}' is not an index kind", mp.display(), t.name))
        };
        let mut secondary = Vec::new();
        for (n, k) in &t.secondary {
            secondary.push((n.clone(), kind(k)?));
        }
        let spec = match &t.primary {
            // As the source directory recorded it.
            Some(p) => crate::datadir::recorded_spec(&StoredTable {
                name: t.name.clone(),
                primary: Some(kind(p)?),
                secondary,
                types: t.types.clone(),
            }),
            None => TableSpec::hash(&t.name, (t.rows.clamp(64, 1 << 24)) as usize).into(),
        };
        db.create_table(spec).map_err(|e| format!("{}: {e}", mp.display()))?;
    }
    let mut total = 0;
    for t in &m.tables {
        let path = a.export.join(&t.file);
        let f = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let id = db.table(&t.name).map_err(|e| e.to_string())?;
        let mut rows = 0u64;
        let mut txn = db.begin(db.protocol().strongest()).map_err(|e| e.to_string())?;
        for (n, line) in std::io::BufReader::new(f).lines().enumerate() {
            let at = format!("{}:{}", path.display(), n + 1);
            let line = line.map_err(|e| format!("{at}: {e}"))?;
            if line.trim().is_empty() {
                continue;
            }
            let r: Row = serde_json::from_str(&line).map_err(|e| format!("{at}: {e}"))?;
            let k = unhex(&r.key).ok_or_else(|| format!("{at}: key is not hexadecimal bytes"))?;
            let v = unhex(&r.value).ok_or_else(|| format!("{at}: value is not hexadecimal bytes"))?;
            let key = Key::from_bytes(&k).map_err(|e| format!("{at}: {e}"))?;
            txn.insert(id, key, &v).map_err(|e| match e {
                multiverse::Error::DuplicateKey => format!("{at}: duplicate key {}", r.key),
                e => format!("{at}: {e}"),
            })?;
            rows += 1;
            if rows % 1000 == 0 {
                txn.commit().map_err(|e| format!("{at}: {e}"))?;
                txn = db.begin(db.protocol().strongest()).map_err(|e| e.to_string())?;
            }
        }
        txn.commit().map_err(|e| format!("{}: {e}", path.display()))?;
        if rows != t.rows {
            return Err(format!(
                "{}: {}, but {} says {}",
                path.display(),
                crate::cli::rows(rows),
                mp.display(),
                t.rows
            ));
        }
        total += rows;
    }
    let wp = a.export.join(WORKLOAD);
    let workload = match std::fs::read(&wp) {
        Ok(w) => Some(w),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", wp.display())),
    };
    let extra: Vec<(&str, &[u8])> = workload.iter().map(|w| (WORKLOAD, w.as_slice())).collect();
    db.backup_with(&a.into, &extra).map_err(|e| e.to_string())?;
    println!("imported {} into {}: {} tables, {total} rows", a.export.display(), a.into.display(), m.tables.len());
    Ok(())
}

/// Runs `multiverse backup`.
pub fn backup(a: BackupArgs) -> Result<(), String> {
    let (db, workload) = crate::recover::load_dir(&a.dir, "back up")?;
    let extra: Vec<(&str, &[u8])> = workload.iter().map(|w| (WORKLOAD, w.as_slice())).collect();
    let info = db.backup_with(&a.out, &extra).map_err(|e| e.to_string())?;
    println!("backed up {} to {}: {} rows, {} bytes", a.dir.display(), info.dir.display(), info.rows, info.bytes);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_kinds_parse_as_they_print() {
        for k in [IndexKind::Hash { capacity: 64 }, IndexKind::Ordered, IndexKind::OrderedGrouped { prefix: 4 }] {
            assert_eq!(parse_kind(&k.to_string()), Some(k));
        }
        for bad in ["", "hash", "hash()", "hash(x)", "ordered(1)", "ordered-grouped(4"] {
            assert_eq!(parse_kind(bad), None, "{bad}");
        }
    }

    #[test]
    fn hex_round_trips_and_rejects_bad_input() {
        assert_eq!(hex(&[0, 0xab, 0xff]), "00abff");
        assert_eq!(unhex("00abFF"), Some(vec![0, 0xab, 0xff]));
        assert_eq!(unhex(""), Some(vec![]));
        for bad in ["0", "zz", "é0", "+1"] {
            assert_eq!(unhex(bad), None, "{bad}");
        }
    }

    #[test]
    fn table_file_names_are_plain() {
        assert_eq!(file_name("acct_1-x"), "acct_1-x.jsonl");
        assert_eq!(file_name("a/b.c"), "a%2Fb%2Ec.jsonl");
        assert_eq!(file_name(".."), "%2E%2E.jsonl");
    }
}
