//! `multiverse recover DIR`: loads a data directory into memory the way
//! opening it would (the newest checkpoint, then the longest consistent
//! prefix of the log streams in commit-timestamp order) without changing
//! it, and reports what it holds and what recovery dropped.
//!
//! When `DIR/workload` (written by `bench --durability ... --data-dir`)
//! records the workload and its parameters, recover first checks that the
//! data set they describe fits in memory (the estimate `bench` refuses a
//! load with), then creates that workload's schema (its tables, in bench's
//! order, with their secondary indexes), loads the directory into it, and
//! checks the invariants the rows alone imply ([`Workload::check_state`]):
//! a failed check is an error. What only the run's tallies could prove is
//! named, not checked. Without the file, or with the one-word file of
//! earlier versions, every table is created as the directory records it
//! (its kinds and types; a plain hash table in the files of earlier
//! versions, which record none) and nothing is checked.
//!
//! Every state a run can be killed in is a valid directory: no checkpoint
//! yet (killed before its first one), holding the workload file and a
//! checkpoint of no tables, or part of the initial load (bench marks the
//! file `load=finished` once the checkpoint after loading is durable; until
//! then the rows are a prefix of the load and the invariants are not
//! checked).
//!
//! A directory with nothing to recover is refused in one line, exit 1,
//! before anything is read or changed: an empty directory, one that holds
//! no file of a data directory, and one that `multiverse export` wrote
//! (its `export.json`; the message names `multiverse import`, which makes
//! a data directory of it). `export`, `backup` and `--salvage` refuse them
//! the same way.
//!
//! Recover does not take the directory's lock: it reads what is on disk
//! while a database may have it open (and says so when it can tell).
//!
//! A damaged directory (damage a crash cannot explain, or commits that may
//! have been acknowledged as durable missing), which `Database::open`
//! refuses by default: recover still loads and reports its longest
//! consistent prefix (`--on-damage keep-prefix`, recover's default, since
//! it changes nothing: it quarantines nothing either), with every line of
//! what recovery drops and the command that writes the intact dropped
//! records out, and exits 3; `--on-damage refuse` loads nothing. `--salvage
//! OUT` writes every intact log record that recovery drops into OUT
//! instead of loading the directory (see `salvage`).
//!
//! Exit status: 0 when the directory is a valid state, possibly empty,
//! possibly after dropping a crash's torn tail (nothing it held was
//! acknowledged); [`EXIT_DAMAGED`] (3) when it is damaged, so that commits
//! acknowledged as durable may be lost (`--on-damage keep-prefix` loads and
//! reports the consistent prefix first, `refuse` loads nothing, `--salvage`
//! writes OUT first); 1 for every other error (one line on stderr),
//! including a directory with nothing to recover; 2 for a bad command line.

use crate::bench::{check_bytes, units, EST_BYTES_PER_ROW};
use multiverse::{Database, OnDamage, Options, RecoveryReport, TableSpec, TxnOptions};
use multiverse_workloads::{hekaton, sibench, smallbank, tatp, tpcc, ycsb, Kind, Mix, Param, StateCheck, Workload};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

mod salvage;

/// Arguments of `multiverse recover`.
#[derive(clap::Args, Debug)]
pub struct RecoverArgs {
    /// The data directory (written by `bench --durability ... --data-dir`
    /// or by `Database::open`). An empty directory, or one that `export`
    /// wrote (load it with `import`), is refused with exit status 1; nothing
    /// in it is changed.
    pub dir: PathBuf,
    /// The protocol to load it with (any; the logs of every protocol
    /// hold the same records).
    #[arg(long, default_value = "mv-occ", value_name = "P")]
    pub protocol: String,
    /// A damaged directory (damage a crash cannot explain, or commits that
    /// may have been acknowledged as durable missing): keep-prefix loads
    /// and reports the longest consistent prefix, refuse loads nothing;
    /// either way the exit status is 3 (0: a valid state, possibly after
    /// dropping a crash's torn tail; 1: any other error, or nothing to
    /// recover).
    #[arg(long, default_value = "keep-prefix", value_name = "POLICY", value_parser = ["keep-prefix", "refuse"])]
    pub on_damage: String,
    /// Instead of loading DIR, write every intact log record that recovery
    /// drops (past damage, past the consistent cut, in files it ignores)
    /// into the new directory OUT, outside DIR: one JSON Lines file per log
    /// stream (stream-NNN.jsonl) and salvage.json. DIR is only read. Exit
    /// status as without it.
    #[arg(long, value_name = "OUT", conflicts_with_all = ["on_damage", "protocol"])]
    pub salvage: Option<PathBuf>,
}

/// The exit status of `recover` on a damaged directory.
pub const EXIT_DAMAGED: i32 = 3;

/// The name of the file that records the workload in a data directory.
const WORKLOAD_FILE: &str = "workload";
/// A workload file is a few short lines; anything longer is not one.
const MAX_WORKLOAD_FILE_BYTES: u64 = 64 << 10;
/// Tables named only by the log (created after the checkpoint) that a
/// directory without a workload file may add to its checkpoint's.
const MAX_LOG_ONLY_TABLES: usize = 1024;

/// Writes `dir/workload`: the workload's name and its parameters, one
/// `key=value` a line (what `recover` needs to rebuild the schema and the
/// check), and `load=started`, which [`record_loaded`] turns into
/// `load=finished`.
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
    text += "load=started\n";
    write_atomically(dir, WORKLOAD_FILE, &text)
}

/// Marks `dir/workload` `load=finished`: the checkpoint after loading is
/// durable, so the directory holds the whole initial data set and the
/// workload's invariants hold from here on.
pub(crate) fn record_loaded(dir: &Path) -> Result<(), String> {
    let path = dir.join(WORKLOAD_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let done = text.replace("\nload=started\n", "\nload=finished\n");
    if done == text {
        return Err(format!("{}: no load=started line to mark finished", path.display()));
    }
    write_atomically(dir, WORKLOAD_FILE, &done)
}

/// Replaces `dir/name` with `text` as one step (a crash leaves the old file
/// or the new one, never a part), and makes it durable.
fn write_atomically(dir: &Path, name: &str, text: &str) -> Result<(), String> {
    let path = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp"));
    let err = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut f = std::fs::File::create(&tmp).map_err(err)?;
    f.write_all(text.as_bytes()).and_then(|()| f.sync_all()).map_err(err)?;
    drop(f);
    std::fs::rename(&tmp, &path).map_err(err)?;
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(err)
}

/// `s` with its control characters escaped, for a one-line report.
fn escape(s: &str) -> String {
    let mut q = String::new();
    for c in s.chars() {
        if c.is_control() {
            q.extend(c.escape_default());
        } else {
            q.push(c);
        }
    }
    q
}

/// `s` for a one-line message: escaped, cut after 60 characters.
fn quote(s: &str) -> String {
    const MAX: usize = 60;
    let mut q = String::new();
    for (i, c) in s.char_indices() {
        let e = escape(&s[i..i + c.len_utf8()]);
        if q.chars().count() + e.chars().count() > MAX {
            q.push_str("...");
            break;
        }
        q.push_str(&e);
    }
    q
}

/// How far the initial load of a recorded workload got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Load {
    /// Begun; its rows are a prefix of the load until it is marked finished.
    Started,
    /// Loaded, and the checkpoint after loading durable.
    Finished,
}

/// The contents of `dir/workload`.
#[derive(Debug, PartialEq)]
struct Recorded {
    /// The file, for messages.
    path: PathBuf,
    workload: String,
    /// In file order.
    params: Vec<(String, String)>,
    /// False for the one-word file of earlier versions, which recorded
    /// only the name.
    described: bool,
    /// `None` in the files of earlier versions, which did not say.
    load: Option<Load>,
}

impl Recorded {
    /// Reads `dir/workload`; `None` if there is none.
    fn read(dir: &Path) -> Result<Option<Recorded>, String> {
        let path = dir.join(WORKLOAD_FILE);
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        if !meta.is_file() {
            return Err(format!("{}: not a regular file", path.display()));
        }
        if meta.len() > MAX_WORKLOAD_FILE_BYTES {
            return Err(format!(
                "{}: {} bytes is not a workload file (a few lines, at most {MAX_WORKLOAD_FILE_BYTES} bytes)",
                path.display(),
                meta.len()
            ));
        }
        let data = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let text = String::from_utf8(data).map_err(|e| {
            format!("{}: not text (invalid UTF-8 at byte {})", path.display(), e.utf8_error().valid_up_to())
        })?;
        Recorded::parse(path, &text).map(Some)
    }

    fn parse(path: PathBuf, text: &str) -> Result<Recorded, String> {
        let lines: Vec<(usize, &str)> =
            text.lines().map(str::trim).enumerate().filter(|(_, l)| !l.is_empty() && !l.starts_with('#')).collect();
        if let [(_, word)] = lines[..] {
            if !word.contains('=') {
                let workload = Kind::find(word)
                    .ok_or_else(|| format!("{}: unknown workload '{}'", path.display(), quote(word)))?;
                return Ok(Recorded {
                    path,
                    workload: workload.name().to_string(),
                    params: Vec::new(),
                    described: false,
                    load: None,
                });
            }
        }
        let mut params: Vec<(String, String)> = Vec::new();
        for (i, line) in lines {
            let Some((k, v)) = line.split_once('=') else {
                return Err(format!("{} line {}: '{}' is not key=value", path.display(), i + 1, quote(line)));
            };
            let k = k.trim();
            if params.iter().any(|(seen, _)| seen == k) {
                return Err(format!("{} line {}: {} is given twice", path.display(), i + 1, quote(k)));
            }
            params.push((k.to_string(), v.trim().to_string()));
        }
        let Some(at) = params.iter().position(|(k, _)| k == "workload") else {
            return Err(format!("{}: no workload= line", path.display()));
        };
        let workload = params.remove(at).1;
        if workload.is_empty() {
            return Err(format!("{}: workload= names no workload", path.display()));
        }
        let load = match params.iter().position(|(k, _)| k == "load") {
            None => None,
            Some(at) => match params.remove(at).1.as_str() {
                "started" => Some(Load::Started),
                "finished" => Some(Load::Finished),
                other => {
                    return Err(format!("{}: load={} is neither started nor finished", path.display(), quote(other)))
                }
            },
        };
        Ok(Recorded { path, workload, params, described: true, load })
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
            Some(v) => {
                v.parse().map_err(|_| format!("{}: {key}={} is not a valid value", self.path.display(), quote(v)))
            }
        }
    }

    /// The recorded mix over `types`, or `default`.
    fn mix(&self, types: &'static [&'static str], default: Mix) -> Result<Mix, String> {
        match self.value("mix") {
            None => Ok(default),
            Some(m) => Mix::parse(types, m).map_err(|e| format!("{}: mix={}: {e}", self.path.display(), quote(m))),
        }
    }

    /// `key=value` as recorded, for messages.
    fn shown(&self, key: &str) -> String {
        format!("{}: {key}={}", self.path.display(), quote(self.value(key).unwrap_or_default()))
    }
}

/// A workload's check of the recovered rows.
type Check = Box<dyn FnOnce(&Database) -> Result<StateCheck, String>>;

/// A recorded workload's schema, created in a database.
struct Schema {
    /// The check of the recovered rows.
    check: Check,
    /// Rows the initial load writes.
    load_size: u64,
}

/// Creates the recorded workload's tables in `db` (no rows) and returns its
/// check. The memory the data set needs is checked first, as `bench`
/// checks it before it creates the tables and before it loads (see
/// `bench::wl`): a workload file with absurd numbers is refused instead of
/// dying in the allocator.
fn create_schema(db: &Database, r: &Recorded) -> Result<Schema, String> {
    fn schema<W: Workload + 'static>(w: W) -> Result<Schema, String> {
        // As `bench::measure` checks before loading.
        let est = w.estimated_bytes();
        if est > 0 {
            check_bytes(est, &format!("workload {}", w.name()))?;
        }
        let load_size = w.load_size();
        Ok(Schema { check: Box::new(move |db| w.check_state(db)), load_size })
    }
    let at = |e: String| format!("{}: {e}", r.path.display());
    let Some(kind) = Kind::find(&r.workload) else {
        return Err(at(format!(
            "unknown workload '{}' (known workloads: {})",
            quote(&r.workload),
            Kind::names().join(", ")
        )));
    };
    match kind {
        Kind::Hekaton => {
            let d = hekaton::HekatonConfig::default();
            let cfg = hekaton::HekatonConfig {
                rows: r.need("rows")?,
                reads: r.get("reads", d.reads)?,
                writes: r.get("writes", d.writes)?,
                prefetch: d.prefetch,
            };
            cfg.validate().map_err(at)?;
            check_bytes(cfg.rows.saturating_mul(EST_BYTES_PER_ROW), &r.shown("rows"))?;
            schema(hekaton::Hekaton::setup(db, cfg).map_err(at)?)
        }
        Kind::Ycsb => {
            let d = ycsb::YcsbConfig::default();
            let cfg = ycsb::YcsbConfig {
                rows: r.need("rows")?,
                value_bytes: r.need("value_bytes")?,
                theta: r.get("theta", d.theta)?,
                scan_records: r.get("scan_records", d.scan_records)?,
                mix: r.mix(ycsb::TYPES, d.mix)?,
                write_pct: r.get("write_pct", d.write_pct)?,
                // A run with repeats may have fewer rows than a transaction's keys.
                allow_repeats: r.get("allow_repeats", d.allow_repeats)?,
                ..d
            };
            cfg.validate().map_err(at)?;
            check_bytes(cfg.estimated_bytes(), &format!("{} (value_bytes={})", r.shown("rows"), cfg.value_bytes))?;
            schema(ycsb::Ycsb::setup(db, cfg).map_err(at)?)
        }
        Kind::SmallBank => {
            let d = smallbank::SmallBankConfig::default();
            let cfg = smallbank::SmallBankConfig {
                customers: r.need("customers")?,
                spin_us: r.get("spin_us", d.spin_us)?,
                mix: r.mix(smallbank::TYPES, d.mix)?,
            };
            cfg.validate().map_err(at)?;
            // Three rows per customer, as bench estimates them.
            check_bytes(cfg.customers.saturating_mul(3 * 128), &r.shown("customers"))?;
            schema(smallbank::SmallBank::setup(db, cfg).map_err(at)?)
        }
        Kind::Tatp => {
            let cfg =
                tatp::TatpConfig { subscribers: r.need("subscribers")?, mix: r.mix(tatp::TYPES, tatp::default_mix())? };
            cfg.validate().map_err(at)?;
            // 9.75 rows per subscriber, as bench estimates them.
            let rows = cfg.subscribers.saturating_mul(39) / 4;
            check_bytes(rows.saturating_mul(tatp::EST_BYTES_PER_ROW), &r.shown("subscribers"))?;
            schema(tatp::Tatp::setup(db, cfg).map_err(at)?)
        }
        Kind::Tpcc => {
            let cfg = tpcc::TpccConfig {
                warehouses: r.need("warehouses")?,
                mix: r.mix(tpcc::TYPES, tpcc::default_mix())?,
                random_warehouse: r.get("random_warehouse", false)?,
                skip_inserts: r.get("skip_inserts", false)?,
            };
            cfg.validate().map_err(at)?;
            check_bytes((cfg.warehouses as u64).saturating_mul(tpcc::EST_BYTES_PER_WAREHOUSE), &r.shown("warehouses"))?;
            schema(tpcc::Tpcc::setup(db, cfg).map_err(at)?)
        }
        Kind::Sibench => {
            let cfg = sibench::SibenchConfig { rows: r.need("rows")?, ..sibench::SibenchConfig::default() };
            cfg.validate().map_err(at)?;
            check_bytes(cfg.rows.saturating_mul(EST_BYTES_PER_ROW), &r.shown("rows"))?;
            schema(sibench::Sibench::setup(db, cfg).map_err(at)?)
        }
        Kind::Predicate | Kind::ListAppend => {
            Err(at(format!("workload {kind} runs in memory only, so no data directory holds it")))
        }
    }
}

/// What a directory holds, by the names recovery gives its files.
#[derive(Debug, Default)]
struct Survey {
    entries: usize,
    /// Checkpoints (`checkpoint-*.mvc`): name and bytes.
    checkpoints: Vec<(String, u64)>,
    /// Unfinished checkpoints (`checkpoint-*.tmp`).
    unfinished: usize,
    /// Log files (`log-*.mvl`) and their bytes.
    logs: usize,
    log_bytes: u64,
    manifest: bool,
    workload: bool,
    lock: bool,
    /// Quarantine folders (`quarantine-*/`, left by opens that kept a
    /// damaged directory's prefix; never read by recovery).
    quarantines: Vec<String>,
    /// The manifest of a directory that `multiverse export` wrote
    /// (`export.json`, or its temporary name while unfinished).
    export_manifest: bool,
    other: usize,
}

impl Survey {
    /// Lists `dir`. Refuses a path that is not a readable directory, and a
    /// file of the data's names that is not a regular file (recovery would
    /// wait forever on a FIFO).
    fn of(dir: &Path) -> Result<Survey, String> {
        match std::fs::metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("{}: no such directory", dir.display()))
            }
            Err(e) => return Err(format!("cannot read {}: {e}", dir.display())),
            Ok(m) if !m.is_dir() => return Err(format!("{}: not a directory", dir.display())),
            Ok(_) => {}
        }
        let err = |e: std::io::Error| format!("cannot read {}: {e}", dir.display());
        let mut s = Survey::default();
        for e in std::fs::read_dir(dir).map_err(err)? {
            let e = e.map_err(err)?;
            let name = e.file_name().to_string_lossy().into_owned();
            s.entries += 1;
            let data = |s: &str| (s.starts_with("checkpoint-") && s.ends_with(".mvc")) || s.starts_with("log-");
            if !(data(&name) || name == "manifest" || name == WORKLOAD_FILE) {
                match name.as_str() {
                    "LOCK" => s.lock = true,
                    n if n.starts_with("quarantine-") && e.file_type().is_ok_and(|t| t.is_dir()) => {
                        s.quarantines.push(n.to_string())
                    }
                    n if n.starts_with("checkpoint-") && n.ends_with(".tmp") => s.unfinished += 1,
                    n => {
                        s.export_manifest |= n == "export.json" || n == ".export.json.tmp";
                        s.other += 1
                    }
                }
                continue;
            }
            let meta =
                std::fs::metadata(e.path()).map_err(|err| format!("cannot read {}: {err}", e.path().display()))?;
            if !meta.is_file() {
                return Err(format!("{}: not a regular file", e.path().display()));
            }
            if name == "manifest" {
                s.manifest = true;
            } else if name == WORKLOAD_FILE {
                s.workload = true;
            } else if name.starts_with("log-") {
                s.logs += 1;
                s.log_bytes += meta.len();
            } else {
                s.checkpoints.push((name, meta.len()));
            }
        }
        Ok(s)
    }

    /// Refuses, in one line, a directory that holds nothing to `verb`
    /// ("recover", "export", ...): an export (which `import` turns into a
    /// data directory), an empty directory, or one that holds files but
    /// none that a data directory holds.
    fn refuse_unless_data(&self, dir: &Path, verb: &str) -> Result<(), String> {
        let d = dir.display();
        let data = !self.checkpoints.is_empty() || self.logs > 0 || self.manifest;
        if self.export_manifest && !data {
            return Err(format!(
                "{d}: an export written by 'multiverse export', not a multiverse data directory; \
                 'multiverse import {d} --into NEWDIR' makes a data directory of it"
            ));
        }
        if self.entries == 0 {
            return Err(format!(
                "{d}: an empty directory: nothing to {verb} (no checkpoint, log, manifest or workload file)"
            ));
        }
        if self.other == self.entries {
            return Err(format!(
                "{d}: not a multiverse data directory (none of its {} entries is a checkpoint, log, manifest or \
                 workload file)",
                self.entries
            ));
        }
        Ok(())
    }

    /// One line: what is there.
    fn describe(&self) -> String {
        if self.entries == 0 {
            return "empty".into();
        }
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        let mut parts = Vec::new();
        if !self.checkpoints.is_empty() {
            let bytes = self.checkpoints.iter().map(|c| c.1).sum();
            parts.push(format!("{} ({})", plural(self.checkpoints.len(), "checkpoint"), units::bytes(bytes)));
        }
        if self.unfinished > 0 {
            parts.push(plural(self.unfinished, "unfinished checkpoint"));
        }
        if self.logs > 0 {
            parts.push(format!("{} ({})", plural(self.logs, "log file"), units::bytes(self.log_bytes)));
        }
        for (there, what) in [(self.manifest, "manifest"), (self.workload, "workload file"), (self.lock, "LOCK")] {
            if there {
                parts.push(what.into());
            }
        }
        if !self.quarantines.is_empty() {
            let mut q = self.quarantines.clone();
            q.sort();
            parts.push(format!(
                "{} ({}/, never read by recovery)",
                plural(q.len(), "quarantine folder"),
                q.join("/, ")
            ));
        }
        if self.other > 0 {
            parts.push(plural(self.other, "other file"));
        }
        parts.join(", ")
    }
}

/// The names of the files recovery reads, for telling whether they changed
/// while it read them.
fn data_files(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<String> = entries
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with("checkpoint-") || n.starts_with("log-") || n == "manifest")
        .collect();
    v.sort();
    v
}

/// Which file of `dir` a process holds a lock on, and which process, if
/// any: a database has the directory open. Read from `/proc/locks`, so
/// that looking takes no lock (a lock taken only to test, however briefly,
/// could make a database opening the directory at that moment fail).
fn lock_holder(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let mut files = std::collections::HashMap::new();
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        if let Ok(m) = e.metadata() {
            files.insert(m.ino(), (m.dev(), e.file_name().to_string_lossy().into_owned()));
        }
    }
    // `/proc/locks` names a file by the major and minor numbers (hex) of
    // its device and its inode number; a stacked file system (overlayfs)
    // reports another device there than `stat` does, so an inode number
    // that matches is taken with either device.
    let major = |d: u64| ((d >> 32) & 0xffff_f000) | ((d >> 8) & 0xfff);
    let minor = |d: u64| ((d >> 12) & 0xffff_ff00) | (d & 0xff);
    let mut found = None;
    for line in locks.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's
        // line has "->" after the number.
        if f.len() < 6 || f[1] == "->" {
            continue;
        }
        let (kind, pid) = (f[1], f[4]);
        let id: Vec<&str> = f[5].split(':').collect();
        let (Some(Ok(maj)), Some(Ok(min)), Some(Ok(ino))) = (
            id.first().map(|s| u64::from_str_radix(s, 16)),
            id.get(1).map(|s| u64::from_str_radix(s, 16)),
            id.get(2).map(|s| s.parse::<u64>()),
        ) else {
            continue;
        };
        let Some((dev, name)) = files.get(&ino) else { continue };
        let held = format!("{name} is locked ({kind}) by process {pid}");
        if (major(*dev), minor(*dev)) == (maj, min) {
            return Some(held);
        }
        found.get_or_insert(held);
    }
    found
}

/// Why `recover` failed.
enum Failure {
    /// Exit status 1.
    Error(String),
    /// The directory is damaged: exit status [`EXIT_DAMAGED`].
    Damaged(String),
}

impl From<String> for Failure {
    fn from(e: String) -> Failure {
        Failure::Error(e)
    }
}

/// The failure of an engine error while reading `dir`: a damaged file is
/// damage; the rest are errors.
fn engine_failure(dir: &Path, e: multiverse::Error, policy: &str) -> Failure {
    let d = dir.display().to_string();
    match e {
        multiverse::Error::Corrupt(m) => {
            let m = if m.contains(&d) { m } else { format!("{d}: {m}") };
            Failure::Damaged(format!(
                "{m}; nothing was loaded (--on-damage {policy}): commits acknowledged as durable may be lost"
            ))
        }
        e => {
            let m = e.to_string();
            Failure::Error(if m.contains(&d) { m } else { format!("{d}: {m}") })
        }
    }
}

/// The table an engine error says the schema does not create, if that is
/// what it says.
fn table_not_created(e: &multiverse::Error) -> Option<String> {
    let multiverse::Error::InvalidArgument(m) = e else { return None };
    let rest = m.strip_prefix("the data names table '")?;
    let (name, tail) = rest.rsplit_once('\'')?;
    tail.contains("the schema does not create").then(|| name.to_string())
}

/// A directory loaded into memory.
struct Loaded {
    db: Database,
    /// The recorded workload's schema, if it was created.
    schema: Option<Schema>,
    /// The tables of the newest checkpoint.
    checkpoint_tables: Vec<String>,
    report: RecoveryReport,
}

/// The spec that recreates a table as its data directory records it, to
/// load its rows: the recorded kinds and types, or a hash table for one
/// recorded without them (by files of earlier versions). A secondary
/// index's key function is the application's code: here each gets the
/// primary key, so that the table is recorded as it was (a backup or an
/// import keeps its indexes' names and kinds) but the index is of no use
/// for lookups, which `recover`, `export` and `backup` do not make.
pub(crate) fn recorded_spec(t: &multiverse::durability::StoredTable) -> TableSpec {
    use multiverse::IndexKind;
    let mut spec = TableSpec::new(&t.name, t.primary.unwrap_or(IndexKind::Hash { capacity: 1 << 16 }));
    for (name, kind) in &t.secondary {
        spec = spec.secondary(name, *kind, |pk, _| pk.clone());
    }
    match &t.types {
        Some((k, v)) => spec.types(k, v),
        None => spec,
    }
}

/// Creates the schema and recovers `dir` into a new database. Without a
/// workload's schema the tables are those the directory records (the
/// checkpoint's, plus any the log names that the checkpoint does not,
/// created after it), as it records them (see [`recorded_spec`]). A read
/// that fails while the directory's files change (a database that has it
/// open checkpoints and removes old files) is tried again.
fn load(dir: &Path, opts: &Options, recorded: Option<&Recorded>) -> Result<Loaded, Failure> {
    let policy = if opts.on_damage == OnDamage::Refuse { "refuse" } else { "keep-prefix" };
    let mut log_only: Vec<String> = Vec::new();
    let mut files = data_files(dir);
    let mut retries = 0;
    loop {
        let attempt = || -> Result<Result<Loaded, multiverse::Error>, Failure> {
            let names = match multiverse::durability::table_names(dir) {
                Ok(n) => n,
                Err(e) => return Ok(Err(e)),
            };
            let db = Database::new(opts.clone()).map_err(|e| e.to_string())?;
            let schema = match recorded {
                Some(r) if r.described => {
                    let schema = create_schema(&db, r)?;
                    let created = db.table_names();
                    if names.iter().any(|n| !created.contains(n)) {
                        return Err(Failure::Error(format!(
                            "{}: workload {} has the tables {}, the checkpoint holds {}",
                            r.path.display(),
                            r.workload,
                            created.join(", "),
                            names.join(", ")
                        )));
                    }
                    Some(schema)
                }
                _ => {
                    // The schema as the data records it.
                    let stored = match multiverse::durability::tables(dir) {
                        Ok(t) => t,
                        Err(e) => return Ok(Err(e)),
                    };
                    for t in &stored {
                        db.create_table(recorded_spec(t)).map_err(|e| e.to_string())?;
                    }
                    // Named only by log files of earlier versions, which
                    // record no definitions (found by the error below).
                    for n in log_only.iter().filter(|n| db.table(n).is_err()) {
                        db.create_table(TableSpec::hash(n, 1 << 16)).map_err(|e| e.to_string())?;
                    }
                    None
                }
            };
            Ok(db.recover_from(dir).map(|report| Loaded { db, schema, checkpoint_tables: names, report }))
        };
        let e = match attempt()? {
            Ok(l) => return Ok(l),
            Err(e) => e,
        };
        if recorded.is_none_or(|r| !r.described) {
            if let Some(t) = table_not_created(&e) {
                if !log_only.contains(&t) && log_only.len() < MAX_LOG_ONLY_TABLES {
                    log_only.push(t);
                    continue;
                }
            }
        }
        let now = data_files(dir);
        if retries < 3 && now != files {
            retries += 1;
            files = now;
            continue;
        }
        return Err(engine_failure(dir, e, policy));
    }
}

/// Runs `f`, turning a panic into an error message (the first line of the
/// panic's, and where it happened) instead of a backtrace.
fn catching_panics<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let caught = std::sync::Arc::new(parking_lot::Mutex::new(None::<String>));
    let seen = caught.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        let msg = p.downcast_ref::<&str>().copied().or_else(|| p.downcast_ref::<String>().map(String::as_str));
        let msg = msg.and_then(|m| m.lines().next()).unwrap_or("a panic");
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        seen.lock().get_or_insert(format!("{msg}{at}"));
    }));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    r.map_err(|_| caught.lock().take().unwrap_or_else(|| "a panic".into()))
}

/// Loads the data directory `dir` into memory as `recover` does (its
/// recorded workload's schema, or the tables as the data records them), for
/// `export` and `backup`; a damaged directory is refused. Returns the
/// database and the workload file's bytes, if it has one.
pub(crate) fn load_dir(dir: &Path, verb: &str) -> Result<(Database, Option<Vec<u8>>), String> {
    Survey::of(dir)?.refuse_unless_data(dir, verb)?;
    let recorded = Recorded::read(dir)?;
    let opts = Options { on_damage: OnDamage::Refuse, ..Options::default() };
    let l = load(dir, &opts, recorded.as_ref()).map_err(|f| match f {
        Failure::Error(e) | Failure::Damaged(e) => e,
    })?;
    let workload = match recorded {
        Some(r) => Some(std::fs::read(&r.path).map_err(|e| format!("{}: {e}", r.path.display()))?),
        None => None,
    };
    Ok((l.db, workload))
}

/// Runs `multiverse recover`. A damaged directory exits here, with
/// [`EXIT_DAMAGED`], after its report.
pub fn run(a: RecoverArgs) -> Result<(), String> {
    let dir = a.dir.clone();
    let r = catching_panics(move || match &a.salvage {
        Some(out) => salvage::run(&a.dir, out),
        None => recover(&a),
    })
    .unwrap_or_else(|p| {
        Err(Failure::Error(format!("{}: internal error (a bug, please report it): {p}", dir.display())))
    });
    match r {
        Ok(()) => Ok(()),
        Err(Failure::Error(e)) => Err(e),
        Err(Failure::Damaged(e)) => {
            let _ = std::io::stdout().flush();
            eprintln!("multiverse: {e}");
            std::process::exit(EXIT_DAMAGED)
        }
    }
}

/// `multiverse recover`, up to its exit status.
fn recover(a: &RecoverArgs) -> Result<(), Failure> {
    let dir = &a.dir;
    let protocol = crate::bench::parse_protocol(&a.protocol)?;
    let on_damage = if a.on_damage == "refuse" { OnDamage::Refuse } else { OnDamage::KeepPrefix };
    let files = Survey::of(dir)?;
    files.refuse_unless_data(dir, "recover")?;
    let recorded = Recorded::read(dir)?;
    // Recovery reads the newest checkpoint whole, then builds its rows (at
    // least as many bytes again).
    if let Some((name, bytes)) = files.checkpoints.iter().max_by_key(|c| c.1) {
        check_bytes(bytes.saturating_mul(2), &format!("{}: {name} ({})", dir.display(), units::bytes(*bytes)))?;
    }
    let in_use = lock_holder(dir);
    let opts = Options { protocol, on_damage, ..Options::default() };
    let Loaded { db, schema, checkpoint_tables, report: r } = load(dir, &opts, recorded.as_ref())?;

    println!("recovered {} in {:.3} s", dir.display(), r.elapsed.as_secs_f64());
    if let Some(held) = &in_use {
        println!(
            "  in use     {held}: a database has the directory open; this is what its files held when read \
             (recover takes no lock and changes nothing)"
        );
    }
    println!("  directory  {}", files.describe());
    match &recorded {
        Some(w) if schema.is_some() => {
            let params: Vec<String> = w.params.iter().map(|(k, v)| format!("{}={}", escape(k), escape(v))).collect();
            println!("  workload   {} ({})", w.workload, params.join(", "));
        }
        Some(w) => println!(
            "  workload   {} (recorded without its parameters: its invariants are not checked)",
            escape(&w.workload)
        ),
        None => {}
    }
    let mut tables = Vec::new();
    let mut t = db
        .begin_with(TxnOptions { read_only: true, ..TxnOptions::new(multiverse_workloads::check_isolation(&db)) })
        .map_err(|e| e.to_string())?;
    for n in db.table_names() {
        let id = db.table(&n).map_err(|e| e.to_string())?;
        let mut rows = 0u64;
        t.scan(db.primary(id), .., None, |_, _| {
            rows += 1;
            true
        })
        .map_err(|e| e.to_string())?;
        tables.push((n, rows));
    }
    t.commit().map_err(|e| e.to_string())?;
    let total: u64 = tables.iter().map(|t| t.1).sum();

    // What state the directory is in: empty, part of a load, or loaded.
    let finished = recorded.as_ref().and_then(|w| w.load) == Some(Load::Finished);
    let mut state = None;
    let mut lost = None;
    if r.generation == 0 {
        state = Some("empty: no checkpoint (a run killed before its first checkpoint); nothing to load".to_string());
        if finished {
            lost = Some("the workload file says the load finished, but no checkpoint holds it".to_string());
        }
    } else if let (Some(w), Some(s)) = (&recorded, &schema) {
        let missing: Vec<String> = db.table_names().into_iter().filter(|n| !checkpoint_tables.contains(n)).collect();
        let interrupted = match w.load {
            Some(Load::Started) => true,
            Some(Load::Finished) => {
                if !missing.is_empty() {
                    lost = Some(format!(
                        "the workload file says the load finished, but the newest checkpoint lacks the tables {}",
                        missing.join(", ")
                    ));
                }
                false
            }
            // Files of earlier versions: the checkpoint after loading holds
            // every table.
            None => !missing.is_empty(),
        };
        if interrupted {
            state = Some(format!(
                "loading was interrupted: {} of the {} rows the load writes are here \
                 (the run stopped before its load and the checkpoint after it were done)",
                units::int(total),
                units::int(s.load_size)
            ));
        }
    } else if tables.is_empty() {
        state = Some("empty: no tables (a database opened without any, or a run killed before creating them)".into());
    } else if recorded.is_none() && total == 0 {
        // `bench` writes its workload file once its tables exist: a kill
        // in between leaves empty tables and no file.
        state = Some(
            "empty tables and no workload file (a run killed while it created its tables, \
             or a database that holds nothing yet)"
                .into(),
        );
    }
    if let Some(s) = &state {
        println!("  state      {s}");
    }
    println!("  generation {}", r.generation);
    if let Some((file, ts, rows)) = &r.checkpoint {
        println!("  checkpoint {file}: {} as of timestamp {ts}", crate::cli::rows(*rows));
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
    let damage = match (r.damaged, lost) {
        (true, _) => Some(
            "recovered the longest consistent prefix, but the directory is damaged (see the dropped lines): \
             commits acknowledged as durable may be lost"
                .to_string(),
        ),
        (false, Some(l)) => Some(format!("{l}: commits acknowledged as durable may be lost")),
        (false, None) => None,
    };
    if let Some(d) = &damage {
        println!("  DAMAGED    {d}");
    }
    let salvage_hint = format!(
        "`multiverse recover {} --salvage OUT` writes the intact log records recovery drops into OUT",
        dir.display()
    );
    if r.damaged {
        println!(
            "  salvage    {salvage_hint}; Database::open refuses the directory (OnDamage::Refuse, the default) \
             until it is opened with OnDamage::KeepPrefix, which keeps this prefix and moves the rest into \
             a quarantine folder"
        );
    }
    for (n, rows) in &tables {
        println!("  table      {n}: {}", crate::cli::rows(*rows));
    }
    let mut failed = None;
    match (schema, &recorded) {
        (Some(s), Some(w)) if state.is_none() => match (s.check)(&db) {
            Ok(c) => {
                if c.checked.is_empty() {
                    println!("  check      {}: nothing to check in the rows alone", w.workload);
                } else {
                    println!("  check      passed: {}", c.checked);
                }
                if !c.needs_run.is_empty() {
                    println!("  unchecked  {} (needs the tallies of the run that wrote the data)", c.needs_run);
                }
            }
            Err(e) => {
                println!("  check      FAILED: {e}");
                failed = Some(format!("{}: {} consistency check failed: {e}", dir.display(), w.workload));
            }
        },
        (Some(_), Some(w)) if r.generation == 0 => println!("  check      not run: there is no {} data", w.workload),
        (Some(_), Some(w)) => {
            println!("  check      not run: the load did not finish, so the {} invariants need not hold", w.workload)
        }
        _ => {}
    }
    crate::bench::exit_without_drop(db);
    match (damage, failed) {
        (Some(d), _) if r.damaged => Err(Failure::Damaged(format!("{}: damaged: {d}; {salvage_hint}", dir.display()))),
        (Some(d), _) => Err(Failure::Damaged(format!("{}: damaged: {d}", dir.display()))),
        (None, Some(f)) => Err(Failure::Error(f)),
        (None, None) => Ok(()),
    }
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
        assert!(text.contains("\nworkload=tpcc\nwarehouses=3\nmix=a:50,b:50\nx=true\nload=started\n"), "{text}");
        let r = Recorded::read(&dir).unwrap().unwrap();
        assert_eq!(r.load, Some(Load::Started));
        record_loaded(&dir).unwrap();
        let done = Recorded::read(&dir).unwrap().unwrap();
        assert!(record_loaded(&dir).unwrap_err().contains("no load=started line"));
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(left, [WORKLOAD_FILE], "no temporary file is left");
        assert_eq!(done, Recorded { load: Some(Load::Finished), ..r });
        assert_eq!(done.workload, "tpcc");
        assert_eq!(done.params.len(), 3, "load= is not a parameter");
        assert_eq!(done.need::<u32>("warehouses"), Ok(3));
        assert_eq!(done.get("x", false), Ok(true));
        assert_eq!(done.get("absent", 7u32), Ok(7));
    }

    #[test]
    fn old_and_bad_workload_files() {
        let r = parse("smallbank\n").unwrap();
        assert_eq!((r.workload.as_str(), r.described, r.load), ("smallbank", false, None));
        assert!(parse("nosuch\n").unwrap_err().contains("unknown workload 'nosuch'"));
        assert!(parse("workload=sibench\n").unwrap().described, "sibench's rows= is missing, not the file's format");
        assert_eq!(parse("workload=tpcc\nwarehouses=1\n").unwrap().load, None, "before load= was written");
        assert!(parse("workload=tpcc\nwarehouses\n").unwrap_err().contains("line 2: 'warehouses' is not key=value"));
        assert!(parse("warehouses=1\n").unwrap_err().contains("no workload= line"));
        assert!(parse("workload=\n").unwrap_err().contains("workload= names no workload"));
        assert!(parse("workload=tpcc\nworkload=ycsb\n").unwrap_err().contains("workload is given twice"));
        assert!(parse("workload=tpcc\nload=half\n").unwrap_err().contains("load=half is neither started nor finished"));
        let r = parse("workload=tpcc\nwarehouses=many\n").unwrap();
        assert!(r.need::<u32>("warehouses").unwrap_err().contains("warehouses=many is not a valid value"));
        assert!(r.need::<u64>("rows").unwrap_err().contains("no rows= line"));
        // Messages stay one short line whatever the file holds.
        let long = format!("workload=tpcc\n{}\n", "x\u{7}".repeat(1000));
        let e = parse(&long).unwrap_err();
        assert!(e.len() < 120 && e.contains("x\\u{7}x") && e.contains("...'"), "{e}");
    }

    #[test]
    fn quoting() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a\tb\r"), "a\\tb\\r");
        assert_eq!(quote(&"y".repeat(60)), "y".repeat(60));
        assert_eq!(quote(&"y".repeat(61)), format!("{}...", "y".repeat(60)));
        assert_eq!(quote(&"\u{1}".repeat(20)), format!("{}...", "\\u{1}".repeat(12)));
    }

    #[test]
    fn the_table_a_schema_lacks_is_read_from_the_engine_error() {
        let e =
            multiverse::Error::InvalidArgument("the data names table 'a.b's', which the schema does not create".into());
        assert_eq!(table_not_created(&e).as_deref(), Some("a.b's"));
        assert_eq!(table_not_created(&multiverse::Error::InvalidArgument("other".into())), None);
        assert_eq!(table_not_created(&multiverse::Error::Corrupt("the data names table 'x'".into())), None);
    }

    #[test]
    fn panics_become_messages() {
        let r = catching_panics(|| -> u32 { panic!("boom\nsecond line") });
        let e = r.unwrap_err();
        assert!(e.starts_with("boom at ") && e.contains("recover.rs"), "{e}");
        assert_eq!(catching_panics(|| 7), Ok(7));
    }
}
