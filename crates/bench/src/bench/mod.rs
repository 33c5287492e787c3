//! `multiverse bench` and the default comparison (`multiverse` with no arguments).
//!
//! `bench` opens an in-memory database with the chosen protocol, creates and
//! loads the workload's data in parallel (`--threads` loader threads), runs
//! `--threads` workers for `--duration` seconds at `--isolation`, and prints a
//! summary: throughput, aborts by reason, latency percentiles, load time,
//! peak RSS and bytes per row. With `--json FILE` it also writes one JSON
//! object with the fields of DESIGN.md ("Benchmark JSON") plus extras.
//!
//! The default comparison runs Hekaton MV/O at the four isolation levels on
//! the section 5.1 workload (one load, reused by every level) and prints a
//! table. Environment variables resize it for tests and quick looks:
//! `MULTIVERSE_DEFAULT_ROWS` (default 1,000,000), `MULTIVERSE_DEFAULT_SECONDS`
//! (per level, default 10) and `MULTIVERSE_DEFAULT_THREADS` (default 2).
//!
//! Progress bars appear only when stderr is a terminal. Every error is a
//! one-line `Err(String)`.

mod args;
pub(crate) mod ceiling;
pub(crate) mod config;
mod default_comparison;
pub(crate) mod dispatch;
pub(crate) mod harness;
mod measure;
pub(crate) mod peers;
pub(crate) mod report;
pub(crate) mod sys;
pub(crate) mod units;
mod values;
pub(crate) mod wl;

use crate::cli::Failure;
pub(crate) use args::*;
pub use args::{BenchArgs, BenchCli, BenchOutputs};
pub use default_comparison::default_comparison;
use harness::{LoadResult, RunResult};
pub(crate) use measure::{measure, measure_with};
use multiverse::research::Faults;
use multiverse::{Database, Isolation, Mode, Options, OrderedMap, Protocol, Stats};
use multiverse_workloads::{Kind, Workload};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
pub(crate) use values::*;

fn open_db(
    protocol: Protocol,
    threads: usize,
    deadlock_us: u64,
    lock_timeout_us: u64,
    ssn_base: Isolation,
    faults: Faults,
    ordered_map: OrderedMap,
) -> Result<Database, String> {
    let opts = Options {
        protocol,
        ssn_base,
        faults,
        ordered_map,
        max_transactions: threads.max(Options::default().max_transactions),
        deadlock_interval: Duration::from_micros(deadlock_us),
        lock_timeout: Duration::from_micros(lock_timeout_us),
        ..Options::default()
    };
    Database::new(opts).map_err(|e| e.to_string())
}

/// Everything one `bench` run measured, for the summary and the JSON record.
pub(crate) struct Measurement {
    pub protocol: Protocol,
    /// SSN's base (ssn and ssi runs only).
    pub ssn_base: Option<Isolation>,
    /// The safe-snapshot interval, if on.
    pub safe_snapshot: Option<Duration>,
    /// SSN's read-mostly age, if on.
    pub read_mostly_age: Option<u64>,
    pub isolation: Isolation,
    /// `--mode` (Default: the protocol's choice).
    pub mode: Mode,
    /// The map under the ordered indexes.
    pub ordered_map: OrderedMap,
    pub workload: &'static str,
    pub params: Vec<(&'static str, multiverse_workloads::Param)>,
    pub threads: usize,
    pub duration_requested: f64,
    pub seed: u64,
    pub load: LoadResult,
    /// `--prefault`: bytes touched after loading and how long it took.
    pub prefault: Option<(u64, Duration)>,
    pub run: RunResult,
    pub stats_end: Stats,
    /// Increments of the commit-timestamp counter during the run.
    pub timestamp_increments: u64,
    /// The redo log during the run (durable runs only).
    pub log: Option<LogMeasure>,
    pub peak_rss: u64,
    /// Minor page faults and resident-set growth during the measured run.
    pub run_faults: u64,
    pub run_rss_growth: i64,
    /// What the workload's consistency check verified after the run (empty if nothing).
    pub consistency: String,
    /// BOHM's pipeline settings (bohm runs only).
    pub bohm: Option<multiverse::protocol::bohm::Config>,
    /// The CPUs the workers were pinned to (empty: not pinned).
    pub pin: &'static [usize],
    /// Whether a transaction the engine aborted was retried (`--no-retry`: dropped).
    pub retry: multiverse_workloads::Retry,
    /// `--protocol none` or `bare`: a ceiling ran, not `protocol` (which
    /// only loaded the rows).
    pub ceiling: Option<ceiling::Kind>,
    /// Another embedded store ran (`--protocol surrealmx`, ...), not
    /// `protocol`.
    pub peer: Option<PeerRun>,
}

/// What ran when another store ran (see [`peers`]).
#[derive(Clone, Debug)]
pub(crate) struct PeerRun {
    /// The store's name as `--protocol` takes it.
    pub name: &'static str,
    /// Its version and settings, in one line.
    pub describe: String,
    /// `none` or `sync`.
    pub durability: multiverse_peers::Durability,
    /// `--verify`: the black-box check's verdict (`Err`: it found an
    /// anomaly forbidden at the run's level).
    pub verified: Option<Result<String, String>>,
}

impl Measurement {
    /// The protocol's name as given (`none` for the no-CC ceiling, the
    /// store's for another store).
    pub fn protocol_name(&self) -> &'static str {
        if let Some(p) = &self.peer {
            return p.name;
        }
        match self.ceiling {
            Some(k) => k.name(),
            None => self.protocol.name(),
        }
    }

    /// The isolation level's name (`none` for the no-CC ceiling).
    pub fn isolation_name(&self) -> &'static str {
        match self.ceiling {
            Some(k) => k.name(),
            None => self.isolation.name(),
        }
    }
}

/// What the redo log did during a run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogMeasure {
    pub durability: multiverse::Durability,
    pub streams: usize,
    pub bytes: u64,
    pub records: u64,
    pub syncs: u64,
    /// Checkpoints that fell due during the run.
    pub checkpoints: u64,
}

/// The settings of one run, shared by every workload's runner in `wl/`.
pub(crate) struct Ctx {
    pub protocol: Protocol,
    pub isolation: Isolation,
    pub mode: Mode,
    pub threads: usize,
    pub duration: f64,
    pub seed: u64,
    pub show: bool,
    pub record: bool,
    pub rss_before: u64,
    /// `--rows`, if given.
    pub rows: Option<u64>,
    /// `--mix`, if given.
    pub mix: Option<String>,
    /// `--prefault`, in bytes (0: off).
    pub prefault: u64,
    /// `--warmup`, resolved.
    pub warmup: f64,
    /// `--pin`, resolved (empty: not pinned).
    pub pin: &'static [usize],
    /// `--breakdown`.
    pub breakdown: bool,
    /// `--no-retry`: what a transaction the engine aborted gets.
    pub retry: multiverse_workloads::Retry,
    /// BOHM's pipeline settings (bohm runs only).
    pub bohm: Option<multiverse::protocol::bohm::Config>,
    /// `--protocol none` or `bare`: run a ceiling (see [`ceiling`] and [`ceiling::bare`]).
    pub ceiling: Option<ceiling::Kind>,
    /// Another store runs the workload: its name and levels (see [`peers`]).
    pub peer: Option<(&'static str, &'static [Isolation])>,
}

impl Ctx {
    /// Whether what runs (the protocol or another store) offers `level`.
    pub fn offers(&self, level: Isolation) -> bool {
        match self.peer {
            Some((_, levels)) => levels.contains(&level),
            None => self.protocol.isolation_levels().contains(&level),
        }
    }

    /// The name of what runs (the protocol or another store).
    pub fn runs(&self) -> &'static str {
        self.peer.map_or(self.protocol.name(), |p| p.0)
    }
}

/// Where a workload runs: a Multiverse database or another store. Each
/// workload's runner in `wl/` sets its tables up in it and measures.
pub(crate) trait Host: multiverse_workloads::Store {
    /// Loads `w`, runs it, checks it (see [`measure_with`]).
    fn measure_with<W: Workload>(
        &self,
        w: &W,
        c: &Ctx,
        ceiling: Option<(multiverse::TableId, ceiling::Check)>,
    ) -> Result<Measurement, String>;
}

impl Host for Database {
    fn measure_with<W: Workload>(
        &self,
        w: &W,
        c: &Ctx,
        ceiling: Option<(multiverse::TableId, ceiling::Check)>,
    ) -> Result<Measurement, String> {
        measure_with(self, w, c, ceiling)
    }
}

/// `--protocol none`: refuses what the no-CC ceiling cannot honour, and
/// returns the protocol that loads the rows (MV/O) and a level for the
/// loading (never used by the measured run).
fn ceiling_args(a: &BenchArgs, workload: Kind, ceiling: ceiling::Kind) -> Result<(Protocol, Isolation), String> {
    let (name, what) = (ceiling.name(), ceiling.what());
    if workload != Kind::Hekaton {
        return Err(format!(
            "--protocol {name} ({what}) runs workload hekaton only, not {workload} (it reads and updates rows of one hash table)"
        ));
    }
    let given = [
        ("--isolation", a.isolation.is_some()),
        ("--mode", a.mode.is_some()),
        ("--base", a.base.is_some()),
        ("--durability", a.durability != "none"),
        ("--verify", a.verify),
        ("--history", a.history.is_some()),
        ("--breakdown", a.breakdown),
        ("--fault", a.fault.is_some()),
        ("--long-readers", a.hekaton.long.long_readers.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
        return Err(format!(
            "{flag} does not apply to --protocol {name} (no concurrency control: no levels, no log, no history)"
        ));
    }
    Ok((Protocol::MvOcc, Isolation::ReadCommitted))
}

/// Opens the database and runs the workload of `a` once (load, run,
/// consistency check). Returns the measurement, or why the run failed once
/// the database was open (a failed transaction or consistency check: its
/// history is the one most worth keeping), and the database; the outer
/// error is a refusal before anything ran. The caller should pass the
/// database to [`exit_without_drop`] or drop it.
pub(crate) fn run_args(a: &BenchArgs, show: bool) -> Result<(Result<Measurement, String>, Database), String> {
    let workload = Kind::parse(&a.workload)?;
    dispatch::refuse_foreign_flags(a, workload)?;
    let ceiling = ceiling::Kind::parse(&a.protocol);
    let (protocol, isolation) = if let Some(k) = ceiling {
        ceiling_args(a, workload, k)?
    } else {
        let p = parse_protocol(&a.protocol)?;
        (p, resolve_isolation(a.isolation.as_deref(), p)?)
    };
    if ceiling.is_none() && protocol.uses_declarations() && !workload.declares() {
        // Before the load, which may take a while: its first transaction
        // would fail the same way.
        return Err(format!(
            "protocol {protocol} runs declared transactions, and workload {workload} does not declare its accesses \
             (run it under another protocol)"
        ));
    }
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let ssn_base = parse_base(a.base.as_deref(), protocol)?;
    let mode = parse_mode(a.mode.as_deref(), protocol)?;
    if a.safe_snapshot_us.is_some() && !matches!(protocol, Protocol::Ssn | Protocol::Ssi) {
        return Err(format!("--safe-snapshot-us applies to ssn and ssi, not {protocol}"));
    }
    if a.read_mostly_age.is_some() && protocol != Protocol::Ssn {
        return Err(format!("--read-mostly-age applies to ssn, not {protocol}"));
    }
    let bohm = if protocol == Protocol::Bohm {
        let cc = a.cc_threads.unwrap_or((threads / 4).max(1));
        let exec = a.exec_threads.unwrap_or(threads.saturating_sub(cc).max(1));
        let cfg = multiverse::protocol::bohm::Config {
            cc_threads: cc,
            exec_threads: exec,
            batch_size: a.batch_size as usize,
            ..Default::default()
        };
        Some(cfg)
    } else {
        if a.cc_threads.is_some() || a.exec_threads.is_some() || a.batch_size != 1000 {
            return Err(format!("--cc-threads, --exec-threads and --batch-size apply to bohm, not {protocol}"));
        }
        None
    };
    let faults = parse_faults(a.fault.as_deref())?;
    if workload.in_memory_only() && a.durability != "none" {
        return Err(format!("workload {workload} runs in memory only (no --durability)"));
    }
    let mut db = open_db(protocol, threads, a.deadlock_us, a.lock_timeout_us, ssn_base, faults, a.ordered_map)?;
    if a.durability != "none" && (a.safe_snapshot_us.is_some() || a.read_mostly_age.is_some()) {
        return Err("--safe-snapshot-us and --read-mostly-age do not combine with --durability yet".into());
    }
    let durability: multiverse::Durability =
        a.durability.parse().map_err(|e: multiverse::Error| format!("--durability: {e}"))?;
    match (durability, &a.data_dir) {
        (multiverse::Durability::None, None) => {
            if a.log_streams.is_some() || a.checkpoint_every.is_some() || a.checkpoint_log_mb.is_some() {
                return Err(
                    "--log-streams, --checkpoint-every and --checkpoint-log-mb apply with --durability async or sync"
                        .into(),
                );
            }
        }
        (multiverse::Durability::None, Some(_)) => return Err("--data-dir needs --durability async or sync".into()),
        (_, None) => return Err(format!("--durability {}: give the data directory with --data-dir", a.durability)),
        (d, Some(dir)) => {
            if std::fs::read_dir(dir).is_ok_and(|mut e| e.next().is_some()) {
                return Err(format!(
                    "--data-dir {}: not empty (bench loads a new database; inspect this one with `multiverse recover {}`)",
                    dir.display(),
                    dir.display()
                ));
            }
            let every = match a.checkpoint_every {
                Some(s) if !(s >= 0.0 && s.is_finite()) => {
                    return Err(format!("--checkpoint-every {s}: give seconds, 0 or more"))
                }
                Some(s) => (s > 0.0).then(|| Duration::from_secs_f64(s)),
                None => Options::default().checkpoint_every,
            };
            let opts = Options {
                durability: d,
                data_dir: Some(dir.clone()),
                log_streams: a.log_streams.unwrap_or(2) as usize,
                checkpoint_every: every,
                checkpoint_log_bytes: match a.checkpoint_log_mb {
                    Some(0) => None,
                    Some(mb) => Some(mb.saturating_mul(1 << 20)),
                    None => Options::default().checkpoint_log_bytes,
                },
                ..db.options().clone()
            };
            drop(db);
            // The workload's tables come next; `measure` records the
            // workload in the directory once they exist.
            db = Database::open_with(opts, |_| Ok(())).map_err(|e| e.to_string())?.0;
        }
    }
    if a.safe_snapshot_us.is_some() || a.read_mostly_age.is_some() {
        let opts = Options {
            safe_snapshot_interval: a.safe_snapshot_us.map(Duration::from_micros),
            ssn_read_mostly_age: a.read_mostly_age,
            ..db.options().clone()
        };
        db = Database::new(opts).map_err(|e| e.to_string())?;
    }
    let ctx = Ctx {
        protocol,
        isolation,
        mode,
        threads,
        duration: a.duration,
        seed: a.seed,
        show,
        record: a.verify || a.history.is_some(),
        rss_before: sys::rss_bytes(),
        rows: a.rows,
        mix: a.mix.clone(),
        prefault: a.prefault.unwrap_or(0),
        warmup: a.warmup.unwrap_or((a.duration / 10.0).min(5.0)),
        pin: parse_pin(a.pin.as_deref())?,
        breakdown: a.breakdown,
        retry: retry_of(a),
        bohm,
        ceiling,
        peer: None,
    };
    let m = dispatch::run(a, workload, &ctx, &db);
    Ok((m, db))
}

/// The retry policy `--no-retry` picks.
pub(crate) fn retry_of(a: &BenchArgs) -> multiverse_workloads::Retry {
    if a.no_retry {
        multiverse_workloads::Retry::Never
    } else {
        multiverse_workloads::Retry::UntilCommit
    }
}

/// `multiverse bench`.
///
/// When the run fails after it began (a transaction found an invariant
/// broken, or the workload's consistency check failed), the history is
/// still written (`--history`) and checked (`--verify`, its verdict
/// printed) before the failure is reported: that run's history is the one
/// most worth having.
///
/// A failure before the workload starts loading is a usage error (the
/// command line asked for something that cannot run: nothing ran); after,
/// a run-time failure.
pub fn run(typed: BenchCli) -> Result<(), Failure> {
    run_cli(typed).map_err(|e| Failure::by_phase(e, STARTED.load(Ordering::Relaxed)))
}

/// Set when a workload starts loading (see [`run`]).
static STARTED: AtomicBool = AtomicBool::new(false);

/// Marks the start of the run: failures from here on are run-time failures.
pub(crate) fn mark_started() {
    STARTED.store(true, Ordering::Relaxed);
}

/// Bytes of the history file per recorded operation, roughly: one line of
/// a table number, a hex key and a version; a value adds twice its size
/// (hex). Hekaton's default transaction (12 operations on 8-byte keys)
/// comes to about 1.1 KiB, YCSB's with 1,000-byte values to about 40 KiB.
const HISTORY_BYTES_PER_OP: u64 = 50;

/// `--history FILE`: says how large the file will grow, before the run.
fn announce_history(path: &Path) {
    eprintln!(
        "history: every operation of the run is kept in memory and written to {} at the end, about {HISTORY_BYTES_PER_OP} bytes per operation plus twice its value's size (tens to hundreds of MB per second of run): keep --duration short",
        path.display()
    );
}

/// `--history FILE`: the size written, per committed transaction and per
/// second of the run.
fn report_history(path: &Path, run: Option<(u64, f64)>) {
    let Ok(meta) = std::fs::metadata(path) else { return };
    let size = meta.len();
    let per = match run {
        Some((committed, secs)) if committed > 0 && secs > 0.0 => format!(
            " ({} per committed transaction, {} per second of run)",
            units::bytes(size / committed),
            units::bytes((size as f64 / secs) as u64)
        ),
        _ => String::new(),
    };
    eprintln!("history: wrote {}: {}{per}", path.display(), units::bytes(size));
}

fn run_cli(typed: BenchCli) -> Result<(), String> {
    let (BenchCli { run: mut a, out }, config) = config::resolve(typed)?;
    a.history = out.history.clone();
    let show = std::io::stderr().is_terminal();
    let faults = fault_names(parse_faults(a.fault.as_deref())?);
    // Before loading and running: a run whose result cannot be written is
    // time lost.
    if let Some(p) = &out.plot {
        if !p.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg") || e.eq_ignore_ascii_case("png")) {
            return Err(format!("--plot {}: name an .svg or .png file", p.display()));
        }
    }
    for (flag, path) in
        [("--json", &out.json), ("--history", &out.history), ("--latency-log", &out.latency_log), ("--plot", &out.plot)]
    {
        if let Some(path) = path {
            check_writable(flag, path)?;
        }
    }
    if let Some(dir) = &a.data_dir {
        // The run creates the data directory, never its parents.
        crate::cli::check_parent("--data-dir", dir)?;
    }
    if peers::is_peer(&a.protocol) {
        // Another store: its verdict (`--verify`) after the summary.
        let m = peers::run_args(&a, show)?;
        let verified = m.as_ref().ok().and_then(|m| m.peer.as_ref()?.verified.clone());
        write_results(&out, m, config)?;
        return match verified {
            None => Ok(()),
            Some(Ok(text)) => {
                print!("{text}");
                Ok(())
            }
            Some(Err(text)) => {
                print!("{text}");
                Err(format!(
                    "store {}: the observed history violates {}",
                    a.protocol,
                    a.isolation.as_deref().unwrap_or("its level")
                ))
            }
        };
    }
    if let Some(path) = &out.history {
        announce_history(path);
    }
    let (m, db) = run_args(&a, show)?;
    let counts = m.as_ref().ok().map(|m| (m.run.committed, m.run.elapsed.as_secs_f64()));
    if !faults.is_empty() {
        println!("faults     {faults} (the protocol is broken on purpose)");
    }
    let isolation = if ceiling::Kind::parse(&a.protocol).is_some() {
        Isolation::ReadCommitted // nothing is verified: --verify is refused
    } else {
        resolve_isolation(a.isolation.as_deref(), parse_protocol(&a.protocol)?)?
    };
    let written = write_results(&out, m, config);
    let verdict = if a.verify || a.history.is_some() {
        // Nothing after the run is recorded (a failed run may not have
        // switched recording off yet).
        db.set_recording(false);
        let history = db.take_history();
        let wrote = match &a.history {
            Some(path) => {
                let wrote = crate::check::write_file(&history, path);
                report_history(path, counts);
                wrote
            }
            None => Ok(()),
        };
        let checked = if a.verify {
            let appends =
                if Kind::find(&a.workload) == Some(Kind::ListAppend) { verify_appends(&history) } else { Ok(()) };
            crate::check::verify(&history, isolation).and(appends)
        } else {
            Ok(())
        };
        wrote.and(checked)
    } else {
        Ok(())
    };
    exit_without_drop(db);
    written.and(verdict)
}

/// Prints the summary of a run and writes the files asked for (`--json`,
/// `--latency-log`, `--plot`).
fn write_results(a: &BenchOutputs, m: Result<Measurement, String>, config: serde_json::Value) -> Result<(), String> {
    let m = m?;
    print!("{}", report::summary(&m));
    if let Some(path) = &a.json {
        let rec = report::json(&m).with_config(config);
        let text = serde_json::to_string_pretty(&rec).map_err(|e| format!("cannot encode JSON: {e}"))?;
        std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if let Some(path) = &a.latency_log {
        report::latency_log(&m, path)?;
    }
    if let Some(path) = &a.plot {
        plots(&m, path)?;
    }
    Ok(())
}

/// `--plot`: the run's throughput per second, and its breakdown if taken.
fn plots(m: &Measurement, path: &std::path::Path) -> Result<(), String> {
    let title =
        format!("{} / {} / {} / {}", m.protocol_name(), m.isolation_name(), m.workload, units::threads(m.threads));
    let params: Vec<String> = m.params.iter().map(|(k, v)| format!("{k}={}", report::param_text(v))).collect();
    let subtitle = format!(
        "{}\nmeasured {:.1} s after {:.1} s of warm-up; commit {}",
        params.join(" "),
        m.run.elapsed.as_secs_f64(),
        m.run.warmup.as_secs_f64(),
        sys::GIT_COMMIT
    );
    crate::plot::time_series(
        path,
        &format!("Throughput per second: {title}"),
        &subtitle,
        &[("committed".to_string(), m.run.per_second.clone())],
    )?;
    if let Some(rows) = report::breakdown_ns(&m.run) {
        let stem = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let ext = path.extension().map_or_else(String::new, |e| e.to_string_lossy().into_owned());
        let out = path.with_file_name(format!("{stem}-breakdown.{ext}"));
        let rows: Vec<(String, Vec<(String, f64)>)> = rows
            .into_iter()
            .map(|(name, v)| {
                (name.to_string(), harness::COMPONENTS.iter().zip(v).map(|(c, x)| (c.to_string(), x)).collect())
            })
            .collect();
        crate::plot::breakdown(&out, &format!("Where a transaction's time goes: {title}"), &subtitle, &rows)?;
    }
    Ok(())
}

/// Fails with a one-line message if `path` cannot be written (a missing
/// directory, a directory, no permission). Touches nothing: a file the check
/// had to create is removed again, an existing one keeps its contents.
fn check_writable(flag: &str, path: &Path) -> Result<(), String> {
    crate::cli::check_parent(flag, path)?;
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("cannot write {} ({flag}): {e}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// The list-append cross-check of a history (`check_appends`): prints
/// its verdict and fails on any mismatch.
fn verify_appends(h: &multiverse::research::history::History) -> Result<(), String> {
    let mismatches = multiverse_check::check_appends(h);
    if mismatches.is_empty() {
        println!("verify: list-append: every key's values agree with its commit order");
        return Ok(());
    }
    println!("verify: list-append: {} mismatches between the values and the commit order", mismatches.len());
    for m in mismatches.iter().take(10) {
        println!("  {m}");
    }
    Err(format!("the list values contradict the commit order: {} mismatches", mismatches.len()))
}

/// Leaves a loaded database to the operating system instead of dropping it:
/// the process is about to exit, and freeing ten million versions one by one
/// (in hash-bucket order) takes seconds.
pub(crate) fn exit_without_drop(db: Database) {
    std::mem::forget(db);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert_eq!(parse_protocol("mv-occ"), Ok(Protocol::MvOcc));
        assert_eq!(parse_protocol("pomvcc"), Ok(Protocol::Pomvcc));
        assert!(parse_protocol("nope").unwrap_err().contains("unknown protocol"));
        assert_eq!(parse_isolation("snapshot", Protocol::MvOcc), Ok(Isolation::Snapshot));
        assert!(parse_isolation("chaos", Protocol::MvOcc).unwrap_err().contains("unknown isolation"));
        assert!(parse_isolation("snapshot", Protocol::Silo).unwrap_err().contains("does not offer"));
        assert!(parse_seconds("0").is_err() && parse_seconds("nan").is_err() && parse_seconds("0.5").is_ok());
        assert!(parse_threads("0").is_err() && parse_threads("2").is_ok());
    }
}
