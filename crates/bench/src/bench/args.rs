//! `multiverse bench`'s flags (`BenchArgs`) and the parsers and checks of
//! their named values: protocols, isolation levels, modes, faults and CPU
//! lists (numbers are parsed in `values`). Every error is one line.

use super::values::{parse_count, parse_seconds, parse_size, parse_threads, parse_warmup, whole};
use super::wl;
use multiverse::research::Faults;
use multiverse::{Isolation, Mode, OrderedMap, Protocol};
use std::path::PathBuf;

/// Default seed of the workers' random generators.
pub(crate) const DEFAULT_SEED: u64 = 0x5EED_2011;

/// Arguments of `multiverse bench` (and of every grid point of `compare`).
///
/// The flags common to every workload are here; each workload's own flags
/// live in its module under `wl/` and are flattened in. A flag of another
/// workload than the one chosen is refused.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Concurrency-control protocol (mv-occ, mv-lock, mv-mixed, 1v-lock, silo, 2pl-ordered, ssn, ssi, bohm, pomvcc),
    /// or a ceiling (hekaton only): none, the engine's storage with no concurrency control, or bare, a plain
    /// open-addressing table of u64 keys and fixed-size records.
    #[arg(long, default_value = "mv-occ", value_name = "P")]
    pub protocol: String,
    /// Workload to run: hekaton, ycsb, smallbank, tatp, tpcc, tpce, tpceh, sibench; for
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
    /// Drop a transaction the engine aborts (a conflict, a failed
    /// validation, a deadlock...) instead of retrying it until it commits:
    /// each type then commits as large a share of the mix as the protocol
    /// lets it, as in the SSN paper's experiments. A workload's own
    /// rollbacks are never retried either way.
    #[arg(long)]
    pub no_retry: bool,
    /// Rows of the main table (hekaton: N, default 10M; ycsb: records,
    /// default 1M; sibench: default 1,000); accepts 10000000, 10_000_000, 10M, 500k.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub rows: Option<u64>,
    /// Transaction mix as type:percent,... (the types depend on the
    /// workload; each workload's default follows its specification).
    #[arg(long, value_name = "MIX")]
    pub mix: Option<String>,
    /// Seed of the workers' random generators.
    #[arg(long, default_value_t = DEFAULT_SEED, value_parser = whole(0, u64::MAX))]
    pub seed: u64,
    /// Record the run's history (after loading) and check it against the
    /// isolation level at the end; exit non-zero on a violation. Recording
    /// keeps every operation in memory: use short runs.
    #[arg(long)]
    pub verify: bool,
    /// After loading, touch SIZE of memory (512M, 2G; binary units) and
    /// keep it in the allocator, so tables that grow during the run reuse
    /// memory the machine already backs instead of paying the first touch
    /// of fresh pages (slow on virtual machines). Off by default.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub prefault: Option<u64>,
    /// mv-lock, mv-mixed, 1v-lock and 2pl-ordered: how long a transaction
    /// blocked on wait-for dependencies waits before it runs deadlock
    /// detection, and then between runs, in microseconds (Hekaton section
    /// 4.4); one blocked on a lock runs it when it starts to wait, then
    /// every US
    #[arg(long, value_name = "US", default_value_t = 100, value_parser = whole(1, 10_000_000))]
    pub deadlock_us: u64,
    /// 1v-lock and 2pl-ordered: how long a transaction waits for a lock
    /// before it aborts (lock-timeout), in microseconds (deadlocks are
    /// detected when a wait starts and every --deadlock-us)
    #[arg(long, value_name = "US", default_value_t = 10_000, value_parser = whole(1, 60_000_000))]
    pub lock_timeout_us: u64,
    /// ssn: the concurrency control SSN certifies, rc (read committed) or
    /// si (snapshot isolation) [default: si]; ssi runs over si only
    #[arg(long, value_name = "B")]
    pub base: Option<String>,
    /// ssn and ssi: read-only transactions read safe snapshots (SSN section
    /// 5.2), a new one at most every US microseconds [default: off]
    #[arg(long, value_name = "US", value_parser = whole(0, 60_000_000))]
    pub safe_snapshot_us: Option<u64>,
    /// ssn: the read-mostly optimization (SSN section 5.3): reads of
    /// versions created more than N commits before the reader began are
    /// not tracked [default: off]
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub read_mostly_age: Option<u64>,
    /// The data structure under every ordered index: skip-list or b+tree
    /// (a B+tree with optimistic lock coupling)
    #[arg(long, value_name = "MAP", default_value = "skip-list", value_parser = |s: &str| s.parse::<OrderedMap>())]
    pub ordered_map: OrderedMap,
    /// none (in memory), async (group commit; a commit returns before its
    /// log record is durable) or sync (a commit returns once it is)
    #[arg(long, value_name = "D", default_value = "none")]
    pub durability: String,
    /// With --durability async or sync: the data directory, which must be
    /// new or empty (inspect one with `multiverse recover DIR`)
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// With --durability: parallel redo log streams [default: 2]
    #[arg(long, value_name = "N", value_parser = whole(1, 256))]
    pub log_streams: Option<u64>,
    /// With --durability: checkpoint every S seconds of the run (0: only
    /// by log size) [default: 60]
    #[arg(long, value_name = "S")]
    pub checkpoint_every: Option<f64>,
    /// With --durability: checkpoint after N MiB of log (0: only on the
    /// timer) [default: 1024]
    #[arg(long, value_name = "N", value_parser = whole(0, u64::MAX))]
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
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = whole(1, 1_000_000))]
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
    pub tpce: wl::tpce::Flags,
    #[command(flatten)]
    pub sibench: wl::sibench::Flags,
    #[command(flatten)]
    pub predicate: wl::predicate::Flags,
    #[command(flatten)]
    pub list_append: wl::list_append::Flags,
    /// `bench --history`'s file (an output flag of bench, not a run flag:
    /// compare refuses it), copied here because the run records its
    /// history when it is given. Never on the command line.
    #[arg(skip)]
    pub history: Option<PathBuf>,
    /// Breaks the protocol on purpose, for tests of the checker: a
    /// comma-separated list of skip-validation, skip-write-conflicts,
    /// skip-read-mostly-handshake (`multiverse::research::Faults`; also the
    /// environment variable MULTIVERSE_FAULTS). Hidden: never for real runs.
    #[arg(long, value_name = "NAME[,NAME]", hide = true)]
    pub fault: Option<String>,
}

/// `multiverse bench`'s command line: the run's flags ([`BenchArgs`], which
/// every point of `compare` takes too) and where bench writes its results
/// ([`BenchOutputs`], bench's own).
#[derive(clap::Args, Debug, Clone)]
pub struct BenchCli {
    #[command(flatten)]
    pub run: BenchArgs,
    #[command(flatten)]
    pub out: BenchOutputs,
}

/// `multiverse bench`'s output flags: compare writes its results under its
/// own `--out`, so they are not flags of compare.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BenchOutputs {
    /// Read the bench flags from FILE: TOML (flag = value, e.g. theta = 0.9),
    /// or the JSON record of an earlier run (its `config`: rerun it); flags
    /// typed after it override the file's.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Also write the result as one JSON object to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
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
    /// Record the run's history (after loading) and write it to FILE
    /// (format: docs/CHECKER.md), for `multiverse check FILE`;
    /// the file grows by tens to hundreds of MB per second of run (bench
    /// prints the expected size on stderr, and the size written).
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
}

/// The environment variable that sets `--fault` when the flag is not given.
pub(crate) const FAULTS_ENV: &str = "MULTIVERSE_FAULTS";

/// The fault switches' names, as `--fault` takes them.
pub(crate) const FAULT_NAMES: [&str; 3] = ["skip-validation", "skip-write-conflicts", "skip-read-mostly-handshake"];

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
