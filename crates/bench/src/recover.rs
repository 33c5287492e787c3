//! `multiverse recover DIR`: loads a data directory into memory the way
//! opening it would (the newest checkpoint, then the log streams merged in
//! commit-timestamp order) without changing it, and reports what it holds.
//!
//! When `DIR/workload` (written by `bench --durability ... --data-dir`)
//! records the workload and its parameters, recover creates that
//! workload's schema (its tables, in bench's order, with their secondary
//! indexes), loads the directory into it, and checks the invariants the
//! rows alone imply ([`Workload::check_state`]): a failed check is an
//! error. What only the run's tallies could prove is named, not checked.
//! Without the file, or with the one-word file of earlier versions, every
//! table is a plain hash table and nothing is checked.

use multiverse::{Database, Options, TableSpec, TxnOptions};
use multiverse_workloads::{hekaton, sibench, smallbank, tatp, tpcc, ycsb, Mix, Param, StateCheck, Workload};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Arguments of `multiverse recover`.
#[derive(clap::Args, Debug)]
pub struct RecoverArgs {
    /// The data directory (written by `bench --durability ... --data-dir`
    /// or by `Database::open`).
    pub dir: PathBuf,
    /// The protocol to load it with (any; the logs of every protocol
    /// hold the same records).
    #[arg(long, default_value = "mv-occ", value_name = "P")]
    pub protocol: String,
}

/// The name of the file that records the workload in a data directory.
const WORKLOAD_FILE: &str = "workload";

/// Writes `dir/workload`: the workload's name and its parameters, one
/// `key=value` a line (what `recover` needs to rebuild the schema and the
/// check).
pub(crate) fn record_workload(dir: &Path, name: &str, params: &[(&'static str, Param)]) -> Result<(), String> {
    let mut text = String::from("# written by `multiverse bench`, read by `multiverse recover`\n");
    text += &format!("workload={name}\n");
    for (k, v) in params {
        let v = match v {
            Param::Int(n) => n.to_string(),
            Param::Str(s) => s.clone(),
            Param::Bool(b) => b.to_string(),
        };
        text += &format!("{k}={v}\n");
    }
    let path = dir.join(WORKLOAD_FILE);
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The contents of `dir/workload`.
#[derive(Debug, PartialEq)]
struct Recorded {
    /// The file, for messages.
    path: PathBuf,
    workload: String,
    /// In file order; empty for the one-word file of earlier versions.
    params: Vec<(String, String)>,
}

impl Recorded {
    /// Reads `dir/workload`; `None` if there is none.
    fn read(dir: &Path) -> Result<Option<Recorded>, String> {
        let path = dir.join(WORKLOAD_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        Recorded::parse(path, &text).map(Some)
    }

    fn parse(path: PathBuf, text: &str) -> Result<Recorded, String> {
        let lines: Vec<(usize, &str)> =
            text.lines().map(str::trim).enumerate().filter(|(_, l)| !l.is_empty() && !l.starts_with('#')).collect();
        if let [(_, word)] = lines[..] {
            if !word.contains('=') {
                return Ok(Recorded { path, workload: word.to_string(), params: Vec::new() });
            }
        }
        let mut params: Vec<(String, String)> = Vec::new();
        for (i, line) in lines {
            let Some((k, v)) = line.split_once('=') else {
                return Err(format!("{} line {}: '{line}' is not key=value", path.display(), i + 1));
            };
            let k = k.trim();
            if params.iter().any(|(seen, _)| seen == k) {
                return Err(format!("{} line {}: {k} is given twice", path.display(), i + 1));
            }
            params.push((k.to_string(), v.trim().to_string()));
        }
        let Some(at) = params.iter().position(|(k, _)| k == "workload") else {
            return Err(format!("{}: no workload= line", path.display()));
        };
        let workload = params.remove(at).1;
        Ok(Recorded { path, workload, params })
    }

    /// The recorded value of `key`.
    fn value(&self, key: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of `key`, or `default` if it is not recorded.
    fn get<T: FromStr>(&self, key: &str, default: T) -> Result<T, String> {
        if self.value(key).is_some() {
            self.need(key)
        } else {
            Ok(default)
        }
    }

    /// The value of `key`, which must be recorded.
    fn need<T: FromStr>(&self, key: &str) -> Result<T, String> {
        match self.value(key) {
            None => Err(format!("{}: no {key}= line (the {} schema needs it)", self.path.display(), self.workload)),
            Some(v) => v.parse().map_err(|_| format!("{}: {key}={v} is not a valid value", self.path.display())),
        }
    }

    /// The recorded mix over `types`, or `default`.
    fn mix(&self, types: &'static [&'static str], default: Mix) -> Result<Mix, String> {
        match self.value("mix") {
            None => Ok(default),
            Some(m) => Mix::parse(types, m).map_err(|e| format!("{}: mix={m}: {e}", self.path.display())),
        }
    }
}

/// A workload's check of the recovered rows.
type Check = Box<dyn FnOnce(&Database) -> Result<StateCheck, String>>;

/// Creates the recorded workload's tables in `db` (no rows) and returns its
/// check.
fn create_schema(db: &Database, r: &Recorded) -> Result<Check, String> {
    fn boxed<W: Workload + 'static>(w: W) -> Check {
        Box::new(move |db| w.check_state(db))
    }
    let setup = match r.workload.as_str() {
        "hekaton" => {
            let d = hekaton::HekatonConfig::default();
            let cfg = hekaton::HekatonConfig {
                rows: r.need("rows")?,
                reads: r.get("reads", d.reads)?,
                writes: r.get("writes", d.writes)?,
                prefetch: d.prefetch,
            };
            hekaton::Hekaton::setup(db, cfg).map(boxed)
        }
        "ycsb" => {
            let d = ycsb::YcsbConfig::default();
            let cfg = ycsb::YcsbConfig {
                rows: r.need("rows")?,
                value_bytes: r.need("value_bytes")?,
                theta: r.get("theta", d.theta)?,
                scan_records: r.get("scan_records", d.scan_records)?,
                mix: r.mix(ycsb::TYPES, d.mix)?,
                write_pct: r.get("write_pct", d.write_pct)?,
                ..d
            };
            ycsb::Ycsb::setup(db, cfg).map(boxed)
        }
        "smallbank" => {
            let d = smallbank::SmallBankConfig::default();
            let cfg = smallbank::SmallBankConfig {
                customers: r.need("customers")?,
                spin_us: r.get("spin_us", d.spin_us)?,
                mix: r.mix(smallbank::TYPES, d.mix)?,
            };
            smallbank::SmallBank::setup(db, cfg).map(boxed)
        }
        "tatp" => {
            let cfg =
                tatp::TatpConfig { subscribers: r.need("subscribers")?, mix: r.mix(tatp::TYPES, tatp::default_mix())? };
            tatp::Tatp::setup(db, cfg).map(boxed)
        }
        "tpcc" => {
            let cfg = tpcc::TpccConfig {
                warehouses: r.need("warehouses")?,
                mix: r.mix(tpcc::TYPES, tpcc::default_mix())?,
                random_warehouse: r.get("random_warehouse", false)?,
                skip_inserts: r.get("skip_inserts", false)?,
            };
            tpcc::Tpcc::setup(db, cfg).map(boxed)
        }
        "sibench" => {
            let cfg = sibench::SibenchConfig { rows: r.need("rows")?, ..sibench::SibenchConfig::default() };
            sibench::Sibench::setup(db, cfg).map(boxed)
        }
        other => {
            Err(format!("unknown workload '{other}' (known workloads: {})", multiverse_workloads::KNOWN.join(", ")))
        }
    };
    setup.map_err(|e| format!("{}: {e}", r.path.display()))
}

/// Runs `multiverse recover`.
pub fn run(a: RecoverArgs) -> Result<(), String> {
    let dir = &a.dir;
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    let protocol = crate::bench::parse_protocol(&a.protocol)?;
    let names = multiverse::durability::table_names(dir).map_err(|e| e.to_string())?;
    if names.is_empty() {
        return Err(format!("{}: no checkpoint, so not a multiverse data directory", dir.display()));
    }
    let recorded = Recorded::read(dir)?;
    let db = Database::new(Options { protocol, ..Options::default() }).map_err(|e| e.to_string())?;
    let check = match &recorded {
        Some(r) if !r.params.is_empty() => {
            let check = create_schema(&db, r)?;
            let created = db.table_names();
            if created != names {
                return Err(format!(
                    "{}: workload {} has the tables {}, the checkpoint holds {}",
                    r.path.display(),
                    r.workload,
                    created.join(", "),
                    names.join(", ")
                ));
            }
            Some(check)
        }
        _ => {
            // The schema as the checkpoint names it: primary keys only
            // (secondary indexes are the application's code, not data).
            for n in &names {
                db.create_table(TableSpec::hash(n, 1 << 16)).map_err(|e| e.to_string())?;
            }
            None
        }
    };
    let r = db.recover_from(dir).map_err(|e| e.to_string())?;
    println!("recovered {} in {:.3} s", dir.display(), r.elapsed.as_secs_f64());
    match &recorded {
        Some(w) if check.is_some() => {
            let params: Vec<String> = w.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!("  workload   {} ({})", w.workload, params.join(", "));
        }
        Some(w) => {
            println!("  workload   {} (recorded without its parameters: its invariants are not checked)", w.workload)
        }
        None => {}
    }
    println!("  generation {}", r.generation);
    if let Some((file, ts, rows)) = &r.checkpoint {
        println!("  checkpoint {file}: {rows} rows as of timestamp {ts}");
    }
    println!(
        "  log        {} streams, {} files, {} bytes: {} transaction records, {} replayed ({} writes), durable through epoch {}",
        r.streams, r.log_files, r.log_bytes, r.records, r.replayed, r.writes, r.durable_epoch
    );
    match r.last_commit_ts {
        Some(ts) => println!("  last commit timestamp {ts}"),
        None => println!("  last commit timestamp: none after the checkpoint"),
    }
    if r.same_ts_conflicts > 0 {
        println!("  WARNING    {} pairs of records at one timestamp write one row", r.same_ts_conflicts);
    }
    for d in &r.dropped {
        println!("  dropped    {d}");
    }
    let mut t = db
        .begin_with(TxnOptions { read_only: true, ..TxnOptions::new(multiverse_workloads::check_isolation(&db)) })
        .map_err(|e| e.to_string())?;
    for n in &names {
        let id = db.table(n).map_err(|e| e.to_string())?;
        let mut rows = 0u64;
        t.scan(db.primary(id), .., None, |_, _| {
            rows += 1;
            true
        })
        .map_err(|e| e.to_string())?;
        println!("  table      {n}: {rows} rows");
    }
    t.commit().map_err(|e| e.to_string())?;
    if let (Some(check), Some(w)) = (check, &recorded) {
        let c = check(&db).map_err(|e| format!("{}: {} consistency check failed: {e}", dir.display(), w.workload))?;
        if c.checked.is_empty() {
            println!("  check      {}: nothing to check in the rows alone", w.workload);
        } else {
            println!("  check      passed: {}", c.checked);
        }
        if !c.needs_run.is_empty() {
            println!("  unchecked  {} (needs the tallies of the run that wrote the data)", c.needs_run);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Recorded, String> {
        Recorded::parse(PathBuf::from("d/workload"), text)
    }

    #[test]
    fn the_workload_file_round_trips_and_stays_readable() {
        let dir = std::env::temp_dir().join(format!("mv-recover-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let params = [("warehouses", Param::Int(3)), ("mix", Param::Str("a:50,b:50".into())), ("x", Param::Bool(true))];
        record_workload(&dir, "tpcc", &params).unwrap();
        let text = std::fs::read_to_string(dir.join(WORKLOAD_FILE)).unwrap();
        assert!(text.contains("\nworkload=tpcc\nwarehouses=3\nmix=a:50,b:50\nx=true\n"), "{text}");
        let r = Recorded::read(&dir).unwrap().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(r.workload, "tpcc");
        assert_eq!(r.need::<u32>("warehouses"), Ok(3));
        assert_eq!(r.get("x", false), Ok(true));
        assert_eq!(r.get("absent", 7u32), Ok(7));
    }

    #[test]
    fn old_and_bad_workload_files() {
        let r = parse("smallbank\n").unwrap();
        assert_eq!((r.workload.as_str(), r.params.len()), ("smallbank", 0));
        assert!(parse("workload=tpcc\nwarehouses\n").unwrap_err().contains("line 2: 'warehouses' is not key=value"));
        assert!(parse("warehouses=1\n").unwrap_err().contains("no workload= line"));
        assert!(parse("workload=tpcc\nworkload=ycsb\n").unwrap_err().contains("workload is given twice"));
        let r = parse("workload=tpcc\nwarehouses=many\n").unwrap();
        assert!(r.need::<u32>("warehouses").unwrap_err().contains("warehouses=many is not a valid value"));
        assert!(r.need::<u64>("rows").unwrap_err().contains("no rows= line"));
    }
}
