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

pub(crate) mod config;
pub(crate) mod harness;
pub(crate) mod report;
pub(crate) mod sys;
pub(crate) mod wl;

use harness::{LoadResult, RunConfig, RunResult};
use multiverse::{Database, Faults, Isolation, Mode, Options, Protocol, Stats};
use multiverse_workloads::{check_name, Hekaton, HekatonConfig, Workload};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// Default seed of the workers' random generators.
const DEFAULT_SEED: u64 = 0x5EED_2011;
/// Most worker threads accepted (transaction-table slots are 1024 by default).
const MAX_THREADS: usize = 1024;
/// Conservative estimate of resident bytes per Hekaton row (version record,
/// allocator overhead, hash bucket), used to refuse loads that cannot fit.
pub(crate) const EST_BYTES_PER_ROW: u64 = 128;

/// Arguments of `multiverse bench` (and of every grid point of `compare`).
///
/// The flags common to every workload are here; each workload's own flags
/// live in its module under `wl/` and are flattened in. A flag of another
/// workload than the one chosen is refused.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Concurrency-control protocol (mv-occ, mv-lock, mv-mixed, 1v-lock, silo, 2pl-ordered, ssn, ssi, bohm, pomvcc).
    #[arg(long, default_value = "mv-occ", value_name = "P")]
    pub protocol: String,
    /// Workload to run: hekaton, ycsb, smallbank, tatp, tpcc, sibench; for
    /// --verify also predicate (range reads against inserts and deletes:
    /// phantoms) and list-append (lists of writer tags).
    #[arg(long, default_value = "hekaton", value_name = "W")]
    pub workload: String,
    /// Isolation level: read-committed, snapshot, repeatable-read or
    /// serializable [default: read-committed, or the protocol's only level].
    #[arg(long, value_name = "L")]
    pub isolation: Option<String>,
    /// Worker threads; loading uses the same number [default: number of CPUs].
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// Seconds to run (fractions allowed).
    #[arg(long, default_value = "10", value_name = "S", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub duration: f64,
    /// Seconds run before the measured --duration, not measured (fractions
    /// allowed; 0: none) [default: a tenth of --duration, at most 5].
    #[arg(long, value_name = "S", value_parser = parse_warmup, allow_negative_numbers = true)]
    pub warmup: Option<f64>,
    /// Pin the worker threads to CPUs: auto (worker i on the i-th CPU this
    /// process may run on, round robin) or a list such as 0,2,4-7 (bohm: its
    /// sequencer only).
    #[arg(long, value_name = "auto|LIST")]
    pub pin: Option<String>,
    /// Measure where each transaction's time goes: its own work, aborted
    /// attempts, index, validation or certification, lock and dependency
    /// waits, garbage collection, log waits (per type, in ns per committed
    /// transaction; not for bohm). The timers cost a few percent: compare
    /// throughput without it.
    #[arg(long)]
    pub breakdown: bool,
    /// Also write the result as one JSON object to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Read the bench flags from FILE: TOML (flag = value, e.g. theta = 0.9),
    /// or the JSON record of an earlier run (its `config`: rerun it); flags
    /// typed after it override the file's.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Draw the run's throughput second by second to FILE (.svg or .png);
    /// with --breakdown, also its time breakdown per transaction type to
    /// FILE-breakdown.svg (or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Write the measured latency histograms to FILE in HdrHistogram's
    /// interval log format (one interval tagged `all`, one per transaction
    /// type tagged with its name; values in nanoseconds).
    #[arg(long, value_name = "FILE")]
    pub latency_log: Option<PathBuf>,
    /// Rows of the main table (hekaton: N, default 10M; ycsb: records,
    /// default 1M; sibench: default 1,000); accepts 10000000, 10_000_000, 10M, 500k.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub rows: Option<u64>,
    /// Transaction mix as type:percent,... (the types depend on the
    /// workload; each workload's default follows its specification).
    #[arg(long, value_name = "MIX")]
    pub mix: Option<String>,
    /// Seed of the workers' random generators.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Record the run's history (after loading) and check it against the
    /// isolation level at the end; exit non-zero on a violation. Recording
    /// keeps every operation in memory: use short runs.
    #[arg(long)]
    pub verify: bool,
    /// Record the run's history (after loading) and write it to FILE
    /// (format: docs/HISTORY.md), for `multiverse check FILE`.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// After loading, touch SIZE of memory (512M, 2G; binary units) and
    /// keep it in the allocator, so tables that grow during the run reuse
    /// memory the machine already backs instead of paying the first touch
    /// of fresh pages (slow on virtual machines). Off by default.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub prefault: Option<u64>,
    /// mv-lock, mv-mixed, 1v-lock and 2pl-ordered: how long a transaction
    /// blocked on wait-for dependencies or on a lock waits before it runs
    /// deadlock detection, and then between runs, in microseconds (Hekaton
    /// section 4.4)
    #[arg(long, value_name = "US", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub deadlock_us: u64,
    /// 1v-lock and 2pl-ordered: how long a transaction waits for a lock
    /// before it aborts (lock-timeout), in microseconds (deadlocks are
    /// detected every --deadlock-us)
    #[arg(long, value_name = "US", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=60_000_000))]
    pub lock_timeout_us: u64,
    /// ssn: the concurrency control SSN certifies, rc (read committed) or
    /// si (snapshot isolation) [default: si]; ssi runs over si only
    #[arg(long, value_name = "B")]
    pub base: Option<String>,
    /// ssn and ssi: read-only transactions read safe snapshots (SSN section
    /// 5.2), a new one at most every US microseconds [default: off]
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u64).range(0..=60_000_000))]
    pub safe_snapshot_us: Option<u64>,
    /// ssn: the read-mostly optimization (SSN section 5.3): reads of
    /// versions created more than N commits before the reader began are
    /// not tracked [default: off]
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub read_mostly_age: Option<u64>,
    /// none (in memory), async (group commit; a commit returns before its
    /// log record is durable) or sync (a commit returns once it is)
    #[arg(long, value_name = "D", default_value = "none")]
    pub durability: String,
    /// With --durability async or sync: the data directory, which must be
    /// new or empty (inspect one with `multiverse recover DIR`)
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// With --durability: parallel redo log streams [default: 2]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
    pub log_streams: Option<u64>,
    /// With --durability: checkpoint every S seconds of the run (0: only
    /// by log size) [default: 60]
    #[arg(long, value_name = "S")]
    pub checkpoint_every: Option<f64>,
    /// With --durability: checkpoint after N MiB of log (0: only on the
    /// timer) [default: 1024]
    #[arg(long, value_name = "N")]
    pub checkpoint_log_mb: Option<u64>,
    /// optimistic or pessimistic transactions: mv-mixed runs only the one
    /// kind; pomvcc takes write locks at commit (optimistic, OCC) or at
    /// update time (pessimistic, PCC; section V.D) [default: the protocol's
    /// choice: mv-mixed alternates, pomvcc is pessimistic]
    #[arg(long, value_name = "M")]
    pub mode: Option<String>,
    /// bohm: concurrency-control threads, which plan placeholders (section
    /// 3.2) [default: a quarter of --threads, at least 1]
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub cc_threads: Option<usize>,
    /// bohm: execution threads (section 3.3) [default: --threads minus
    /// the concurrency-control threads, at least 1]; the sequencer is one
    /// more thread
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub exec_threads: Option<usize>,
    /// bohm: transactions per batch (section 3.2.4)
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub batch_size: u64,
    #[command(flatten)]
    pub hekaton: wl::hekaton::Flags,
    #[command(flatten)]
    pub ycsb: wl::ycsb::Flags,
    #[command(flatten)]
    pub smallbank: wl::smallbank::Flags,
    #[command(flatten)]
    pub tatp: wl::tatp::Flags,
    #[command(flatten)]
    pub tpcc: wl::tpcc::Flags,
    #[command(flatten)]
    pub sibench: wl::sibench::Flags,
    #[command(flatten)]
    pub predicate: wl::predicate::Flags,
    #[command(flatten)]
    pub list_append: wl::list_append::Flags,
    /// Breaks the protocol on purpose, for tests of the checker: a
    /// comma-separated list of skip-validation, skip-write-conflicts,
    /// skip-read-mostly-handshake (`multiverse::Faults`; also the
    /// environment variable MULTIVERSE_FAULTS). Hidden: never for real runs.
    #[arg(long, value_name = "NAME[,NAME]", hide = true)]
    pub fault: Option<String>,
}

/// The environment variable that sets `--fault` when the flag is not given.
pub(crate) const FAULTS_ENV: &str = "MULTIVERSE_FAULTS";

/// The fault switches' names, as `--fault` takes them.
const FAULT_NAMES: [&str; 3] = ["skip-validation", "skip-write-conflicts", "skip-read-mostly-handshake"];

/// Parses `--fault` (or, without it, `$MULTIVERSE_FAULTS`) into the
/// engine's fault switches; the error names the known switches.
pub(crate) fn parse_faults(flag: Option<&str>) -> Result<Faults, String> {
    let (text, from) = match flag {
        Some(s) => (s.to_string(), "--fault"),
        None => match std::env::var(FAULTS_ENV) {
            Ok(s) => (s, FAULTS_ENV),
            Err(_) => return Ok(Faults::default()),
        },
    };
    let mut f = Faults::default();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match name.replace('_', "-").as_str() {
            "skip-validation" => f.skip_validation = true,
            "skip-write-conflicts" => f.skip_write_conflicts = true,
            "skip-read-mostly-handshake" => f.skip_read_mostly_handshake = true,
            _ => return Err(format!("{from}: unknown fault '{name}' (known faults: {})", FAULT_NAMES.join(", "))),
        }
    }
    Ok(f)
}

/// The names of the switches that are on, comma-separated (empty: none).
pub(crate) fn fault_names(f: Faults) -> String {
    let on = [f.skip_validation, f.skip_write_conflicts, f.skip_read_mostly_handshake];
    FAULT_NAMES.iter().zip(on).filter(|(_, on)| *on).map(|(n, _)| *n).collect::<Vec<_>>().join(",")
}

pub(crate) fn parse_threads(s: &str) -> Result<usize, String> {
    let n: usize = s.trim().parse().map_err(|_| format!("'{s}' is not a number of threads"))?;
    if n == 0 || n > MAX_THREADS {
        return Err(format!("must be between 1 and {MAX_THREADS}"));
    }
    Ok(n)
}

/// Parses `--warmup`: seconds, 0 or more.
fn parse_warmup(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a number of seconds from 0 to 86400")),
    }
}

/// Parses `--pin`: `auto` (every CPU this process may run on) or a list of
/// CPU numbers and ranges (`0,2,4-7`), each one this process may run on.
/// Leaked: resolved once per run, and `RunConfig` stays `Copy`.
pub(crate) fn parse_pin(flag: Option<&str>) -> Result<&'static [usize], String> {
    let Some(text) = flag else { return Ok(&[]) };
    let allowed: Vec<usize> = core_affinity::get_core_ids().unwrap_or_default().into_iter().map(|c| c.id).collect();
    if allowed.is_empty() {
        return Err("--pin: this system does not say which CPUs the process may run on".into());
    }
    let cpus = if text == "auto" {
        allowed
    } else {
        let mut cpus = Vec::new();
        for part in text.split(',').map(str::trim) {
            let num = |t: &str| {
                t.trim()
                    .parse::<usize>()
                    .map_err(|_| format!("--pin: '{part}' is not a CPU number or range (e.g. 0,2,4-7)"))
            };
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => (num(part)?, num(part)?),
            };
            if lo > hi {
                return Err(format!("--pin: empty range '{part}'"));
            }
            for c in lo..=hi {
                if !allowed.contains(&c) {
                    return Err(format!("--pin: this process may not run on CPU {c} (it may on {allowed:?})"));
                }
                cpus.push(c);
            }
        }
        cpus
    };
    Ok(Box::leak(cpus.into_boxed_slice()))
}

pub(crate) fn parse_seconds(s: &str) -> Result<f64, String> {
    let d: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !d.is_finite() || d <= 0.0 || d > 86_400.0 {
        return Err("must be more than 0 and at most 86400 seconds".into());
    }
    Ok(d)
}

/// A count such as `10000000`, `10_000_000`, `10,000,000`, `10M` or `500k`.
pub(crate) fn parse_count(s: &str) -> Result<u64, String> {
    let t: String = s.trim().chars().filter(|c| *c != '_' && *c != ',').collect();
    let (num, mul) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1_000),
        Some('m' | 'M') => (&t[..t.len() - 1], 1_000_000),
        Some('g' | 'G' | 'b' | 'B') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (&t[..], 1),
    };
    let n: u64 = num.parse().map_err(|_| format!("'{s}' is not a count (try 1000000 or 1M)"))?;
    n.checked_mul(mul).ok_or_else(|| format!("'{s}' is too large"))
}

/// A memory size such as `1073741824`, `512M`, `2G` or `64K` (binary units).
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().trim_end_matches(['b', 'B']).trim_end_matches(['i', 'I']);
    let (num, shift) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n: u64 = num.trim().parse().map_err(|_| format!("'{s}' is not a size (try 512M or 2G)"))?;
    n.checked_mul(1 << shift).ok_or_else(|| format!("'{s}' is too large"))
}

/// Parses a protocol name (every protocol is built in).
pub(crate) fn parse_protocol(s: &str) -> Result<Protocol, String> {
    s.parse().map_err(|e: multiverse::Error| e.to_string())
}

/// The level of `--isolation` (given or not) for protocol `p`: without the
/// flag, read committed where `p` offers it, else `p`'s strongest level.
pub(crate) fn resolve_isolation(flag: Option<&str>, p: Protocol) -> Result<Isolation, String> {
    match flag {
        Some(s) => parse_isolation(s, p),
        None if p.isolation_levels().contains(&Isolation::ReadCommitted) => Ok(Isolation::ReadCommitted),
        None => Ok(p.strongest()),
    }
}

/// Parses an isolation level and checks the protocol offers it.
pub(crate) fn parse_isolation(s: &str, p: Protocol) -> Result<Isolation, String> {
    let l: Isolation = s.parse().map_err(|e: multiverse::Error| e.to_string())?;
    if !p.isolation_levels().contains(&l) {
        let offered: Vec<_> = p.isolation_levels().iter().map(|l| l.name()).collect();
        return Err(format!("protocol '{p}' does not offer isolation level '{l}' (it offers: {})", offered.join(", ")));
    }
    Ok(l)
}

/// Refuses a table that clearly cannot fit in memory (instead of dying in the allocator).
fn check_memory(rows: u64) -> Result<(), String> {
    check_bytes(rows.saturating_mul(EST_BYTES_PER_ROW), &format!("--rows {}", report::int(rows)))
}

/// Refuses a data set of about `need` bytes when less memory is available;
/// `what` names the flag or workload that asked for it.
pub(crate) fn check_bytes(need: u64, what: &str) -> Result<(), String> {
    match sys::mem_available_bytes() {
        Some(avail) if need > avail => Err(format!(
            "{what} needs about {} of memory, but only {} is available",
            report::bytes(need),
            report::bytes(avail)
        )),
        _ => Ok(()),
    }
}

/// The base of `--base` for protocol `p` (SSN's certified scheme).
pub(crate) fn parse_base(flag: Option<&str>, p: Protocol) -> Result<Isolation, String> {
    let base = match flag {
        None => return Ok(Isolation::Snapshot),
        Some("rc" | "read-committed") => Isolation::ReadCommitted,
        Some("si" | "snapshot") => Isolation::Snapshot,
        Some(other) => return Err(format!("--base '{other}': expected rc or si")),
    };
    match p {
        Protocol::Ssn => Ok(base),
        Protocol::Ssi if base == Isolation::Snapshot => Ok(base),
        Protocol::Ssi => Err("--base: ssi runs over snapshot isolation only".into()),
        _ => Err(format!("--base applies to ssn (and ssi), not {p}")),
    }
}

/// `--mode`: optimistic or pessimistic, if the protocol runs that kind.
pub(crate) fn parse_mode(flag: Option<&str>, p: Protocol) -> Result<Mode, String> {
    let mode = match flag {
        None => return Ok(Mode::Default),
        Some("optimistic" | "occ") => Mode::Optimistic,
        Some("pessimistic" | "pcc") => Mode::Pessimistic,
        Some(other) => return Err(format!("--mode '{other}': expected optimistic or pessimistic")),
    };
    if !p.runs_mode(mode) {
        return Err(format!(
            "--mode {}: protocol {p} does not run that kind (mv-mixed and pomvcc run both)",
            flag.unwrap_or_default()
        ));
    }
    Ok(mode)
}

fn open_db(
    protocol: Protocol,
    threads: usize,
    deadlock_us: u64,
    lock_timeout_us: u64,
    ssn_base: Isolation,
    faults: Faults,
) -> Result<Database, String> {
    let opts = Options {
        protocol,
        ssn_base,
        faults,
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
    /// BOHM's pipeline settings (bohm runs only).
    pub bohm: Option<multiverse::protocol::bohm::Config>,
}

/// Opens the database and runs the workload of `a` once (load, run,
/// consistency check). Returns the measurement, or why the run failed once
/// the database was open (a failed transaction or consistency check: its
/// history is the one most worth keeping), and the database; the outer
/// error is a refusal before anything ran. The caller should pass the
/// database to [`exit_without_drop`] or drop it.
pub(crate) fn run_args(a: &BenchArgs, show: bool) -> Result<(Result<Measurement, String>, Database), String> {
    let workload = check_name(&a.workload)?;
    wl::refuse_foreign_flags(a, workload)?;
    let protocol = parse_protocol(&a.protocol)?;
    let isolation = resolve_isolation(a.isolation.as_deref(), protocol)?;
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
    if matches!(workload, "predicate" | "list-append") && a.durability != "none" {
        return Err(format!("workload {workload} runs in memory only (no --durability)"));
    }
    let mut db = open_db(protocol, threads, a.deadlock_us, a.lock_timeout_us, ssn_base, faults)?;
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
            db = Database::open(opts, |_| Ok(())).map_err(|e| e.to_string())?.0;
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
        bohm,
    };
    let m = match workload {
        "hekaton" => wl::hekaton::run(&a.hekaton, &ctx, &db),
        "ycsb" => wl::ycsb::run(&a.ycsb, &ctx, &db),
        "smallbank" => wl::smallbank::run(&a.smallbank, &ctx, &db),
        "tatp" => wl::tatp::run(&a.tatp, &ctx, &db),
        "tpcc" => wl::tpcc::run(&a.tpcc, &ctx, &db),
        "sibench" => wl::sibench::run(&a.sibench, &ctx, &db),
        "predicate" => wl::predicate::run(&a.predicate, &ctx, &db),
        "list-append" => wl::list_append::run(&a.list_append, &ctx, &db),
        other => unreachable!("check_name accepted '{other}' without a case here"),
    };
    Ok((m, db))
}

/// `multiverse bench`.
///
/// When the run fails after it began (a transaction found an invariant
/// broken, or the workload's consistency check failed), the history is
/// still written (`--history`) and checked (`--verify`, its verdict
/// printed) before the failure is reported: that run's history is the one
/// most worth having.
pub fn run(typed: BenchArgs) -> Result<(), String> {
    let (a, config) = config::resolve(typed)?;
    let show = std::io::stderr().is_terminal();
    let faults = fault_names(parse_faults(a.fault.as_deref())?);
    // Before loading and running: a run whose result cannot be written is
    // time lost.
    if let Some(p) = &a.plot {
        if !p.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg") || e.eq_ignore_ascii_case("png")) {
            return Err(format!("--plot {}: name an .svg or .png file", p.display()));
        }
    }
    for (flag, path) in
        [("--json", &a.json), ("--history", &a.history), ("--latency-log", &a.latency_log), ("--plot", &a.plot)]
    {
        if let Some(path) = path {
            check_writable(flag, path)?;
        }
    }
    let (m, db) = run_args(&a, show)?;
    if !faults.is_empty() {
        println!("faults     {faults} (the protocol is broken on purpose)");
    }
    let isolation = resolve_isolation(a.isolation.as_deref(), parse_protocol(&a.protocol)?)?;
    let written = m.and_then(|m| {
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
    });
    let verdict = if a.verify || a.history.is_some() {
        // Nothing after the run is recorded (a failed run may not have
        // switched recording off yet).
        db.set_recording(false);
        let history = db.take_history();
        let wrote = match &a.history {
            Some(path) => crate::check::write_file(&history, path),
            None => Ok(()),
        };
        let checked = if a.verify {
            let appends = if a.workload == "list-append" { verify_appends(&history) } else { Ok(()) };
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

/// `--plot`: the run's throughput per second, and its breakdown if taken.
fn plots(m: &Measurement, path: &std::path::Path) -> Result<(), String> {
    let title = format!("{} / {} / {} / {}", m.protocol, m.isolation, m.workload, report::threads(m.threads));
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
fn check_writable(flag: &str, path: &std::path::Path) -> Result<(), String> {
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
fn verify_appends(h: &multiverse::history::History) -> Result<(), String> {
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

/// Loads `w` (already set up in `db`), runs it once, and checks the
/// workload's consistency conditions.
pub(crate) fn measure<W: Workload>(db: &Database, w: &W, c: &Ctx) -> Result<Measurement, String> {
    let est = w.estimated_bytes();
    if est > 0 {
        check_bytes(est, &format!("workload {}", w.name()))?;
    }
    if let (Some(dir), true) = (&db.options().data_dir, db.durability() != multiverse::Durability::None) {
        // What `multiverse recover` needs to rebuild the schema and check it.
        crate::recover::record_workload(dir, w.name(), &w.params())?;
    }
    let load = harness::load(db, w, c.threads, c.show, c.rss_before)?;
    // The run's transactions see every loaded row (POMVCC: not a given).
    db.sync_commits().map_err(|e| e.to_string())?;
    if db.durability() != multiverse::Durability::None {
        // The loaded rows become durable as a checkpoint, not as log records.
        db.checkpoint().map_err(|e| format!("checkpoint after loading: {e}"))?;
        if let Some(dir) = &db.options().data_dir {
            // From here on `multiverse recover` checks the invariants.
            crate::recover::record_loaded(dir)?;
        }
    }
    let prefault = if c.prefault > 0 {
        check_bytes(c.prefault, "--prefault")?;
        Some((c.prefault, sys::prefault(c.prefault)))
    } else {
        None
    };
    db.set_recording(c.record);
    let cfg = RunConfig {
        threads: c.threads,
        duration: Duration::from_secs_f64(c.duration),
        warmup: Duration::from_secs_f64(c.warmup),
        pin: c.pin,
        breakdown: c.breakdown,
        isolation: c.isolation,
        mode: c.mode,
        seed: c.seed,
        show_progress: c.show,
    };
    let (faults_before, rss_before_run) = (sys::minor_faults(), sys::rss_bytes());
    let before = db.stats();
    let ts_before = before.timestamp_increments;
    multiverse::breakdown::set_enabled(c.breakdown);
    let run = match c.bohm {
        Some(b) => harness::run_bohm(db, w, cfg, b),
        None => harness::run(db, w, cfg),
    };
    multiverse::breakdown::set_enabled(false);
    // The history is the run's: the checks below run at other levels
    // (`multiverse check` without --isolation takes the history's one level).
    db.set_recording(false);
    let run = run?;
    let run_faults = sys::minor_faults().saturating_sub(faults_before);
    let run_rss_growth = sys::rss_bytes() as i64 - rss_before_run as i64;
    let stats_end = db.stats();
    let timestamp_increments = stats_end.timestamp_increments - ts_before;
    let log = (db.durability() != multiverse::Durability::None).then(|| LogMeasure {
        durability: db.durability(),
        streams: db.options().log_streams,
        bytes: stats_end.log_bytes - before.log_bytes,
        records: stats_end.log_records - before.log_records,
        syncs: stats_end.log_syncs - before.log_syncs,
        checkpoints: stats_end.checkpoints - before.checkpoints,
    });
    // The check sees every committed transaction (POMVCC: not a given).
    db.sync_commits().map_err(|e| e.to_string())?;
    let consistency = w.check_consistency(db).map_err(|e| format!("{} consistency check failed: {e}", w.name()))?;
    let ssn_base = matches!(c.protocol, Protocol::Ssn | Protocol::Ssi).then(|| db.options().ssn_base);
    Ok(Measurement {
        protocol: c.protocol,
        ssn_base,
        safe_snapshot: db.options().safe_snapshot_interval,
        read_mostly_age: db.options().ssn_read_mostly_age,
        isolation: c.isolation,
        mode: c.mode,
        workload: w.name(),
        params: w.params(),
        threads: c.threads,
        duration_requested: c.duration,
        seed: c.seed,
        load,
        prefault,
        run,
        stats_end,
        timestamp_increments,
        log,
        peak_rss: sys::peak_rss_bytes(),
        run_faults,
        run_rss_growth,
        consistency,
        bohm: c.bohm,
        pin: c.pin,
    })
}

fn env_or<T: std::str::FromStr>(
    name: &str,
    default: T,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<T, String> {
    match std::env::var(name) {
        Ok(s) => parse(&s).map_err(|e| format!("{name}={s}: {e}")),
        Err(_) => Ok(default),
    }
}

/// `multiverse` with no arguments: MV/O at the four isolation levels on the
/// Hekaton section 5.1 workload, one load reused by every level. Also draws
/// the table as `default.svg` and `default.png` under `bench-out` (or
/// `$MULTIVERSE_OUT_DIR`).
pub fn default_comparison() -> Result<(), String> {
    let rows = env_or("MULTIVERSE_DEFAULT_ROWS", 1_000_000, parse_count)?;
    let secs = env_or("MULTIVERSE_DEFAULT_SECONDS", 10.0, parse_seconds)?;
    let threads = env_or("MULTIVERSE_DEFAULT_THREADS", 2, parse_threads)?;
    let protocol = Protocol::MvOcc;
    let cfg = HekatonConfig { rows, ..HekatonConfig::default() };
    cfg.validate().map_err(|e| format!("MULTIVERSE_DEFAULT_ROWS: {e}"))?;
    check_memory(rows)?;
    let show = std::io::stderr().is_terminal();

    println!(
        "Multiverse default comparison: Hekaton MV/O at four isolation levels\n\
         workload hekaton (section 5.1): R={} reads + W={} writes per transaction, N={} rows, \
         {}, {secs} s per level",
        cfg.reads,
        cfg.writes,
        report::int(rows),
        report::threads(threads)
    );
    println!("(run `multiverse bench --help` for single runs, other sizes and JSON output)\n");

    let d = Options::default();
    let db = open_db(
        protocol,
        threads,
        d.deadlock_interval.as_micros() as u64,
        d.lock_timeout.as_micros() as u64,
        d.ssn_base,
        Faults::default(),
    )?;
    let rss_before = sys::rss_bytes();
    let w = Hekaton::setup(&db, cfg)?;
    let load = harness::load(&db, &w, threads, show, rss_before)?;
    println!(
        "loaded {} rows in {:.2} s ({:.0} bytes/row); each level reuses them after a garbage collection\n",
        report::int(load.rows),
        load.elapsed.as_secs_f64(),
        load.bytes_per_row()
    );
    // A short unmeasured warm-up, so the first level does not run on freshly
    // loaded, never-updated memory while the others do not.
    let warm = Duration::from_secs_f64((secs / 10.0).min(1.0));
    let run_cfg = |isolation| RunConfig {
        threads,
        duration: Duration::from_secs_f64(secs),
        warmup: Duration::ZERO,
        pin: &[],
        breakdown: false,
        isolation,
        mode: Mode::Default,
        seed: DEFAULT_SEED,
        show_progress: show,
    };
    harness::run(&db, &w, RunConfig { duration: warm, ..run_cfg(Isolation::ReadCommitted) })?;

    println!("{}", report::comparison_header());
    let mut rc_tps = None;
    let mut points = Vec::new();
    for level in Isolation::ALL {
        db.collect_garbage();
        let r = harness::run(&db, &w, run_cfg(level))?;
        let base = *rc_tps.get_or_insert(r.throughput());
        println!("{}", report::comparison_row(level, &r, base, threads));
        points.push(Some(crate::plot::Point::single(r.throughput())));
    }
    println!();
    println!(
        "peak RSS {}, {} versions alive at the end; git commit {}",
        report::bytes(sys::peak_rss_bytes()),
        report::int(db.stats().versions_alive),
        sys::GIT_COMMIT
    );
    println!(
        "cpu: share of the run the workers were on a CPU; below 100% other processes competed, \
         and the numbers are noisy"
    );
    exit_without_drop(db);
    let chart = crate::plot::Chart {
        title: "Hekaton MV/O at four isolation levels".into(),
        notes: vec![
            format!(
                "workload hekaton (section 5.1): R={} reads + W={} writes per transaction, N={} rows",
                cfg.reads,
                cfg.writes,
                report::int(rows)
            ),
            format!("{}, {secs} s per level, commit {}", report::threads(threads), sys::GIT_COMMIT),
        ],
        x_name: "isolation level".into(),
        y_name: "throughput (txn/s)".into(),
        x: Isolation::ALL.iter().map(|l| l.name().to_string()).collect(),
        series: vec![crate::plot::Series { name: protocol.name().into(), points }],
    };
    let [svg, png] = crate::plot::write(&chart, &crate::plot::out_dir().join("default"))
        .map_err(|e| format!("{e} (set MULTIVERSE_OUT_DIR to write the plot elsewhere)"))?;
    println!("plot of this table: {} and {}", svg.display(), png.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse() {
        assert_eq!(parse_count("10000000"), Ok(10_000_000));
        assert_eq!(parse_count("10_000_000"), Ok(10_000_000));
        assert_eq!(parse_count("10M"), Ok(10_000_000));
        assert_eq!(parse_count("500k"), Ok(500_000));
        assert!(parse_count("ten").is_err());
        assert!(parse_count("99999999999999999999").is_err());
        assert!(parse_count("99999999999999G").is_err());
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("2gb"), Ok(2 << 30));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("-1G").is_err());
        assert!(parse_size("99999999999999G").unwrap_err().contains("too large"));
    }

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
