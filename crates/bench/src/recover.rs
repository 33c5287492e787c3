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
//! checks the invariants the rows alone imply
//! ([`multiverse_workloads::Workload::check_state`]): a failed check is an
//! error. What only the run's tallies could prove is
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
//!
//! This file is the command; the data directory's format (the workload
//! file, the names of its files) is `crate::datadir`'s, the recorded
//! workload's schema is built in `schema`, and the directory is loaded in
//! `load`.

use crate::bench::{check_bytes, units};
use crate::datadir::{escape, lock_holder, Load, Recorded, Survey};
use load::Loaded;
use multiverse::{OnDamage, Options, TxnOptions};
use std::io::Write;
use std::path::PathBuf;

mod load;
mod salvage;
mod schema;
#[cfg(test)]
mod tests;

pub(crate) use load::load_dir;

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
    let Loaded { db, schema, checkpoint_tables, report: r } = load::load(dir, &opts, recorded.as_ref())?;

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
