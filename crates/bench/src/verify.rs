//! `multiverse verify`: the verification campaign. Runs every protocol line
//! (a protocol; SSN over each base and with safe snapshots, SSI with and
//! without them, POMVCC in each write mode) at every isolation level the
//! engine says it offers ([`Protocol::isolation_levels`]), on every
//! workload it can run, at 2 and 8 threads, each as `multiverse bench
//! --verify`, within a time budget; prints one table and fails when any run
//! found something: a forbidden anomaly, a failed consistency or list-append
//! check, a crash, a hang, or a run that refused to start.
//!
//! Every run is a process of its own (this executable, `bench ... --verify
//! --json FILE`): a panic or an abort in one run is a finding, not the end
//! of the campaign, and each run's memory (its whole recorded history) goes
//! back to the system before the next. A run's verdict comes from its exit
//! status and the checker's report on its standard output; committed and
//! aborted come from its JSON record.
//!
//! Time: the budget covers everything, loading and checking included. Each
//! run's duration is what is left of the budget, less the measured overhead
//! (start, load, check) of the runs still to come, shared among them,
//! between `--min-run` and `--max-run` seconds. The whole grid always runs
//! once (at `--min-run` when the budget is too small for it); when time is
//! left after it, the grid runs again with fresh seeds (a new round) for as
//! long as the budget lasts.
//!
//! Seeds: each run's seed is derived from `--seed` (printed; random by
//! default) and the run's identity (line, level, workload, threads, round),
//! so the same `--seed` gives the same seed to a point however the grid is
//! restricted, and every finding prints the `multiverse bench` command line
//! that repeats it (the same transactions; the interleaving is the
//! machine's). `--keep DIR` keeps the recorded history (and the output) of
//! every failing run.

use crate::bench::parse_threads;
use indicatif::{ProgressBar, ProgressStyle};
use multiverse::{Isolation, Protocol};
use multiverse_workloads::Kind;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The thread counts of the grid by default: few (two threads on two cores
/// run truly in parallel) and more than cores (preemption in the middle of
/// a commit).
const DEFAULT_THREADS: [usize; 2] = [2, 8];

/// The overhead assumed for a run (process start, load, check) before any
/// run of its workload has been measured.
const FIRST_OVERHEAD_S: f64 = 1.0;

/// Arguments of `multiverse verify`.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// Time for the whole campaign, loading and checking included: 90s,
    /// 20m, 1h or 1h30m (a bare number is seconds)
    #[arg(long, value_name = "TIME", default_value = "20m", value_parser = parse_budget)]
    budget: Duration,
    /// The budget in minutes (instead of --budget)
    #[arg(long, value_name = "M", conflicts_with = "budget", value_parser = parse_minutes)]
    minutes: Option<Duration>,
    /// Protocol lines to run, comma-separated: a protocol name (all its
    /// lines) or a line name (ssn+rc, ssn+si, pomvcc+occ, ...) [default:
    /// every line; `--list` shows them]
    #[arg(long, value_name = "P,...", value_delimiter = ',')]
    protocols: Vec<String>,
    /// Workloads to run, comma-separated [default: every workload]
    #[arg(long, value_name = "W,...", value_delimiter = ',')]
    workloads: Vec<String>,
    /// Isolation levels to run, comma-separated (each protocol runs those
    /// it offers) [default: every level]
    #[arg(long, value_name = "L,...", value_delimiter = ',')]
    isolations: Vec<String>,
    /// Worker thread counts, comma-separated [default: 2,8]
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = parse_threads)]
    threads: Vec<usize>,
    /// Seed the runs' seeds are derived from [default: random, printed]
    #[arg(long, value_parser = crate::bench::whole(0, u64::MAX))]
    seed: Option<u64>,
    /// Keep the recorded history (`bench --history`) and the output of
    /// every failing run in DIR (created if missing)
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// Shortest run, in seconds (fractions allowed)
    #[arg(long, value_name = "S", default_value = "0.3", value_parser = crate::bench::parse_seconds)]
    min_run: f64,
    /// Longest run, in seconds: recording keeps every operation in memory,
    /// and a longer budget runs the grid again instead
    #[arg(long, value_name = "S", default_value = "5", value_parser = crate::bench::parse_seconds)]
    max_run: f64,
    /// Run the grid at most N times [default: as often as the budget allows]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    rounds: Option<u32>,
    /// A slice of the grid for a quick look (CI runs it): each protocol
    /// line once, at the strongest chosen level it offers, the workloads and
    /// thread counts taken in turn
    #[arg(long)]
    quick: bool,
    /// Print the grid (one line per run of the first round, with its bench
    /// arguments) and exit without running it
    #[arg(long)]
    list: bool,
    /// Fault injection for tests: passed to every run as `bench --fault
    /// NAME` (the checker must then find something)
    #[arg(long, value_name = "NAME", hide = true)]
    fault: Option<String>,
}

fn parse_budget(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("'{s}' is not a time (try 90s, 20m, 1h or 1h30m)");
    let mut total = 0.0;
    let mut num = String::new();
    for c in t.chars() {
        match c {
            '0'..='9' | '.' => num.push(c),
            's' | 'm' | 'h' => {
                let v: f64 = num.parse().map_err(|_| bad())?;
                total += v * match c {
                    's' => 1.0,
                    'm' => 60.0,
                    _ => 3600.0,
                };
                num.clear();
            }
            _ => return Err(bad()),
        }
    }
    if !num.is_empty() {
        total += num.parse::<f64>().map_err(|_| bad())?;
    }
    if t.is_empty() || !total.is_finite() || total <= 0.0 || total > 7.0 * 86_400.0 {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(total))
}

fn parse_minutes(s: &str) -> Result<Duration, String> {
    let m: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of minutes"))?;
    if !m.is_finite() || m <= 0.0 || m > 7.0 * 1440.0 {
        return Err("must be more than 0 minutes and at most a week".into());
    }
    Ok(Duration::from_secs_f64(m * 60.0))
}

/// A protocol as the campaign runs it: the protocol and the bench flags that
/// pick one of its variants.
#[derive(Clone, Debug)]
struct Line {
    name: String,
    /// The protocol (a placeholder when `peer` is set).
    protocol: Protocol,
    flags: Vec<&'static str>,
    /// Another embedded store (`bench --protocol surrealmx`, ...), checked
    /// as a black box: list-append and predicate only.
    peer: Option<&'static str>,
}

impl Line {
    /// The levels the line runs at.
    fn levels(&self) -> &'static [Isolation] {
        match self.peer {
            Some(p) => multiverse_peers::levels_of(p).unwrap_or(&[]),
            None => self.protocol.isolation_levels(),
        }
    }

    /// Whether the line runs workload `w`: another store's history can be
    /// checked from outside on list-append and predicate only (their values
    /// name their writers).
    fn runs(&self, w: Kind) -> bool {
        match self.peer {
            Some(_) => w.values_name_writers(),
            None => runs(self.protocol, w),
        }
    }

    /// The name `bench --protocol` takes.
    fn bench_name(&self) -> &'static str {
        self.peer.unwrap_or(self.protocol.name())
    }
}

/// Every line this build runs: one per protocol, except SSN (over each base,
/// and over snapshot isolation with safe snapshots for its read-only
/// transactions), SSI (also with safe snapshots) and POMVCC (pessimistic, its
/// default, and optimistic writes).
fn all_lines() -> Vec<Line> {
    let mut lines = Vec::new();
    for p in Protocol::available() {
        let mut add = |suffix: &str, flags: &[&'static str]| {
            lines.push(Line { name: format!("{}{suffix}", p.name()), protocol: p, flags: flags.to_vec(), peer: None })
        };
        match p {
            Protocol::Ssn => {
                add("+rc", &["--base", "rc"]);
                add("+si", &["--base", "si"]);
                add("+si+safe", &["--base", "si", "--safe-snapshot-us", "100"]);
            }
            Protocol::Ssi => {
                add("", &[]);
                add("+safe", &["--safe-snapshot-us", "100"]);
            }
            Protocol::Pomvcc => {
                add("", &[]);
                add("+occ", &["--mode", "optimistic"]);
            }
            _ => add("", &[]),
        }
    }
    // The other stores compiled into this build (`--features peers`).
    for &name in multiverse_peers::names().iter().filter(|n| multiverse_peers::levels_of(n).is_some()) {
        lines.push(Line { name: name.to_string(), protocol: Protocol::MvOcc, flags: vec![], peer: Some(name) });
    }
    lines
}

/// Each workload's size in the campaign: small, so loading takes a fraction
/// of a second, and hot, so that conflicts (and anomalies) are frequent.
/// Predicate and list-append run at bench's defaults (a few dozen hot keys
/// already).
fn size_flags(workload: Kind) -> &'static [&'static str] {
    match workload {
        Kind::Hekaton => &["--rows", "2000"],
        // Skewed, with read-only reads (2rmw-8r) and blind writes (10op)
        // beside the read-modify-writes.
        Kind::Ycsb => {
            &["--rows", "10000", "--value-bytes", "16", "--theta", "0.9", "--mix", "10rmw:40,2rmw-8r:40,10op:20"]
        }
        Kind::SmallBank => &["--customers", "1000"],
        Kind::Tatp => &["--subscribers", "1000"],
        // One warehouse: every worker's home, the contended case.
        Kind::Tpcc => &["--warehouses", "1"],
        Kind::Sibench => &["--rows", "500"],
        Kind::Predicate | Kind::ListAppend => &[],
    }
}

/// Whether protocol `p` runs workload `w`. The protocols that take a
/// transaction's declared accesses before it runs (2pl-ordered, bohm) run
/// only the workloads that declare them (README, [`Kind::declares`]): tpcc
/// does not, and tatp looks subscribers up through a secondary index, which
/// bohm cannot declare. bench refuses the other pairs only when the first
/// transaction starts, after loading, with an error a real failure could
/// also print; so the rule is kept here, and a refusal of a pair this rule
/// lets through is a finding (`REFUSED`): the rule cannot silently hide a
/// workload.
fn runs(p: Protocol, w: Kind) -> bool {
    match p {
        Protocol::TwoPlOrdered => w.declares(),
        Protocol::Bohm => w.declares_primary_keys_only(),
        _ => true,
    }
}

/// One point of the grid.
#[derive(Clone, Debug)]
struct Point {
    line: Line,
    isolation: Isolation,
    workload: Kind,
    threads: usize,
}

impl Point {
    /// A name for files: `ssn+rc-serializable-tpcc-t8`.
    fn file_stem(&self, round: u32) -> String {
        format!("{}-{}-{}-t{}-r{round}", self.line.name, self.isolation.name(), self.workload, self.threads)
    }

    /// The bench arguments of a run of this point (without the files).
    fn bench_args(&self, duration: &str, seed: u64, fault: Option<&str>) -> Vec<String> {
        let mut a: Vec<String> = vec!["--protocol".into(), self.line.bench_name().into()];
        a.extend(self.line.flags.iter().map(|s| s.to_string()));
        a.extend([
            "--isolation".into(),
            self.isolation.name().into(),
            "--workload".into(),
            self.workload.name().into(),
        ]);
        a.extend(size_flags(self.workload).iter().map(|s| s.to_string()));
        a.extend([
            "--threads".into(),
            self.threads.to_string(),
            "--duration".into(),
            duration.into(),
            "--seed".into(),
            seed.to_string(),
            "--verify".into(),
        ]);
        if let Some(f) = fault {
            a.extend(["--fault".into(), f.into()]);
        }
        a
    }

    /// The run's seed: `seed` mixed with the point's identity and the round.
    fn seed(&self, seed: u64, round: u32) -> u64 {
        let id = format!("{}/{}/{}/{}/{round}", self.line.name, self.isolation.name(), self.workload, self.threads);
        // FNV-1a of the identity, then one splitmix64 step with the seed.
        let h = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3));
        let mut z = seed ^ h;
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The grid the arguments select, in run order (workload by workload, so a
/// workload's overhead is soon measured).
fn grid(a: &VerifyArgs) -> Result<Vec<Point>, String> {
    let all = all_lines();
    let lines: Vec<Line> = if a.protocols.is_empty() {
        all.clone()
    } else {
        let mut chosen: Vec<Line> = Vec::new();
        for want in &a.protocols {
            let want = want.trim();
            let found: Vec<&Line> =
                all.iter().filter(|l| l.name == want || (l.peer.is_none() && l.protocol.name() == want)).collect();
            if found.is_empty() {
                let names: Vec<&str> = all.iter().map(|l| l.name.as_str()).collect();
                return Err(format!(
                    "unknown protocol line '{want}' (expected a protocol or one of: {})",
                    names.join(", ")
                ));
            }
            for l in found {
                if !chosen.iter().any(|c| c.name == l.name) {
                    chosen.push(l.clone());
                }
            }
        }
        // The lines in the order of the full list.
        all.iter().filter(|l| chosen.iter().any(|c| c.name == l.name)).cloned().collect()
    };
    let workloads: Vec<Kind> = if a.workloads.is_empty() {
        Kind::ALL.to_vec()
    } else {
        let mut w = Vec::new();
        for name in &a.workloads {
            let n = Kind::parse(name.trim())?;
            if !w.contains(&n) {
                w.push(n);
            }
        }
        w
    };
    let levels: Vec<Isolation> = if a.isolations.is_empty() {
        Isolation::ALL.to_vec()
    } else {
        let mut ls = Vec::new();
        for s in &a.isolations {
            let l: Isolation = s.trim().parse().map_err(|e: multiverse::Error| e.to_string())?;
            if !ls.contains(&l) {
                ls.push(l);
            }
        }
        ls
    };
    let threads: Vec<usize> = if a.threads.is_empty() { DEFAULT_THREADS.to_vec() } else { dedup(&a.threads) };
    let mut points = Vec::new();
    if a.quick {
        // Line k runs workload k (in turn, skipping those it cannot run) at
        // thread count k + k / workloads (in turn, shifted every time the
        // workloads come round, so each workload meets each count).
        let mut k = 0;
        for line in &lines {
            let Some(&isolation) = line.levels().iter().rev().find(|l| levels.contains(l)) else {
                continue;
            };
            let n = workloads.len();
            let Some(&workload) = (0..n).map(|i| &workloads[(k + i) % n]).find(|w| line.runs(**w)) else {
                continue;
            };
            let t = threads[(k + k / n) % threads.len()];
            points.push(Point { line: line.clone(), isolation, workload, threads: t });
            k += 1;
        }
    }
    for &workload in workloads.iter().filter(|_| !a.quick) {
        for line in &lines {
            if !line.runs(workload) {
                continue;
            }
            for &isolation in line.levels() {
                if !levels.contains(&isolation) {
                    continue;
                }
                for &t in &threads {
                    points.push(Point { line: line.clone(), isolation, workload, threads: t });
                }
            }
        }
    }
    if points.is_empty() {
        return Err(
            "the grid is empty: no chosen protocol offers a chosen isolation level on a workload it can run".into()
        );
    }
    Ok(points)
}

fn dedup(v: &[usize]) -> Vec<usize> {
    unique(v.iter().copied())
}

/// The distinct items, in the order they first appear.
fn unique<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for x in items {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// What a run found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// The checker found nothing forbidden and every check passed.
    Ok,
    /// The checker found a forbidden anomaly.
    Anomaly,
    /// The workload's consistency check (or the list-append check) failed.
    Inconsistent,
    /// The run panicked, aborted or was killed by a signal.
    Crash,
    /// The run did not finish in time and was killed.
    Hang,
    /// bench refused to run the point (a pair the grid thinks runnable).
    Refused,
    /// Any other failure (the message says which).
    Failed,
}

impl Verdict {
    fn name(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Anomaly => "ANOMALY",
            Verdict::Inconsistent => "INCONSISTENT",
            Verdict::Crash => "CRASH",
            Verdict::Hang => "HANG",
            Verdict::Refused => "REFUSED",
            Verdict::Failed => "FAILED",
        }
    }
}

/// One finished run.
struct Outcome {
    verdict: Verdict,
    /// What went wrong, in one line (empty when ok).
    detail: String,
    committed: Option<u64>,
    aborted: Option<u64>,
    /// Cyclic components and predicate anti-dependency edges, from the
    /// checker's report.
    cycles: Option<u64>,
    prw: Option<u64>,
    wall: Duration,
    /// The output of a failing run (kept with --keep).
    output: String,
}

/// The number right after `label` in `s` (`predicate rw 12` → 12).
fn number_after(s: &str, label: &str) -> Option<u64> {
    let rest = &s[s.find(label)? + label.len()..];
    let digits: String = rest.trim_start().chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// The number right before `label` in `s` (`3 cyclic components` → 3).
fn number_before(s: &str, label: &str) -> Option<u64> {
    let head = s[..s.find(label)?].trim_end();
    let start = head.rfind(|c: char| !c.is_ascii_digit()).map_or(0, |i| i + 1);
    head[start..].parse().ok()
}

/// Reads a run's verdict from its exit and output.
fn judge(code: Option<i32>, stdout: &str, stderr: &str) -> (Verdict, String) {
    // The error line: bench's one-line error, or the first line of an
    // argument error (the parser adds a usage hint after it), or else the
    // last line written.
    let last_err = stderr
        .lines()
        .find(|l| l.starts_with("multiverse: ") || l.starts_with("error: "))
        .or_else(|| stderr.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("")
        .trim()
        .trim_start_matches("multiverse: ")
        .to_string();
    // The checker's verdict (`verify: serializable: OK ...`), and those of
    // the workload's own cross-checks (`verify: list-append: ...`).
    let is_level = |v: &&str| Isolation::ALL.iter().any(|l| v.starts_with(&format!("{}: ", l.name())));
    let verify_line = stdout.lines().filter_map(|l| l.strip_prefix("verify: ")).find(is_level);
    let other_check = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("verify: "))
        .find(|v| !is_level(v) && (v.contains("mismatch") || v.contains("FAILED")));
    if stderr.contains("panicked at") || code.is_none() || code == Some(101) || code == Some(134) {
        let first = stderr.lines().find(|l| l.contains("panicked at")).map(str::trim);
        let how = match code {
            None => "killed by a signal".to_string(),
            Some(c) => format!("exit status {c}"),
        };
        let detail = match first {
            Some(p) => {
                let msg = stderr.lines().skip_while(|l| !l.contains("panicked at")).nth(1).unwrap_or("").trim();
                format!("{p} {msg}")
            }
            None if last_err.is_empty() => how,
            None => format!("{how}: {last_err}"),
        };
        return (Verdict::Crash, detail);
    }
    if code == Some(0) && other_check.is_none() {
        return match verify_line {
            Some(v) if v.contains(": OK") => (Verdict::Ok, String::new()),
            Some(v) => (Verdict::Failed, format!("exit status 0 with the verdict '{v}'")),
            None => (Verdict::Failed, "exit status 0 without a verdict from the checker".into()),
        };
    }
    if let Some(v) = verify_line.filter(|v| v.contains("FAILED")) {
        // The classes the claimed level forbids, from the report's lines.
        let classes: Vec<&str> = stdout.lines().filter(|l| l.contains("(forbidden at")).map(str::trim).collect();
        let detail = if classes.is_empty() { v.to_string() } else { format!("{v}: {}", classes.join("; ")) };
        return (Verdict::Anomaly, detail);
    }
    if let Some(v) = other_check {
        return (Verdict::Inconsistent, v.to_string());
    }
    if last_err.contains("consistency check failed") {
        return (Verdict::Inconsistent, last_err);
    }
    if last_err.contains("does not declare") || last_err.contains("not declared") || last_err.contains("cannot run") {
        return (Verdict::Refused, last_err);
    }
    let detail = if last_err.is_empty() { format!("exit status {}", code.unwrap_or(-1)) } else { last_err };
    (Verdict::Failed, detail)
}

/// Runs `bench` with `args` as a child process, killed after `limit`.
fn run_child(args: &[String], json: &Path, history: Option<&Path>, limit: Duration) -> Outcome {
    let start = Instant::now();
    let fail = |verdict, detail: String| Outcome {
        verdict,
        detail,
        committed: None,
        aborted: None,
        cycles: None,
        prw: None,
        wall: start.elapsed(),
        output: String::new(),
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(Verdict::Failed, format!("cannot find the multiverse executable: {e}")),
    };
    let mut cmd = Command::new(exe);
    cmd.arg("bench").args(args).arg(format!("--json={}", json.display()));
    // Faults come from --fault only, never from the environment.
    cmd.env_remove("MULTIVERSE_FAULTS");
    if let Some(h) = history {
        cmd.arg(format!("--history={}", h.display()));
    }
    let mut child = match cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => return fail(Verdict::Failed, format!("cannot start a bench run: {e}")),
    };
    // Drain both pipes while waiting, so a chatty run cannot block on them.
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut s);
            }
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let mut hung = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() > limit => {
                hung = true;
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let (verdict, detail) = if hung {
        (Verdict::Hang, format!("still running after {:.0} s; killed", limit.as_secs_f64()))
    } else {
        judge(status.and_then(|s| s.code()), &stdout, &stderr)
    };
    let history_line = stdout.lines().find(|l| l.starts_with("history: ")).unwrap_or("");
    let rec: Option<serde_json::Value> = std::fs::read_to_string(json).ok().and_then(|t| serde_json::from_str(&t).ok());
    let _ = std::fs::remove_file(json);
    let field = |name: &str| rec.as_ref().and_then(|r| r[name].as_u64());
    Outcome {
        verdict,
        detail,
        committed: field("committed"),
        aborted: field("aborted"),
        cycles: number_before(history_line, "cyclic component"),
        prw: number_after(history_line, "predicate rw"),
        wall: start.elapsed(),
        output: if verdict == Verdict::Ok { String::new() } else { format!("{stdout}\n--- stderr ---\n{stderr}") },
    }
}

/// `multiverse bench ...` as a shell command line.
fn command_line(args: &[String]) -> String {
    let mut s = String::from("multiverse bench");
    for a in args {
        let plain = a.chars().all(|c| c.is_ascii_alphanumeric() || "-_.,:+/=@".contains(c));
        if plain && !a.is_empty() {
            let _ = write!(s, " {a}");
        } else {
            let _ = write!(s, " '{}'", a.replace('\'', r"'\''"));
        }
    }
    s
}

/// `12m05s`, `42.1 s`.
fn span(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1} s")
    } else {
        let m = (s / 60.0).floor();
        format!("{m:.0}m{:02.0}s", (s - m * 60.0).floor())
    }
}

fn opt(n: Option<u64>) -> String {
    n.map_or_else(|| "-".into(), crate::bench::units::int)
}

/// The table's header and one row.
fn header() -> String {
    format!(
        "{:<13} {:<15} {:<11} {:>3} {:>6} {:>10} {:>8} {:>6} {:>7}  verdict",
        "protocol", "isolation", "workload", "thr", "secs", "committed", "aborted", "cycles", "prw"
    )
}

fn row(p: &Point, secs: &str, o: &Outcome) -> String {
    let mut r = format!(
        "{:<13} {:<15} {:<11} {:>3} {:>6} {:>10} {:>8} {:>6} {:>7}  {}",
        p.line.name,
        p.isolation.name(),
        p.workload,
        p.threads,
        secs,
        opt(o.committed),
        opt(o.aborted),
        opt(o.cycles),
        opt(o.prw),
        o.verdict.name()
    );
    if o.verdict != Verdict::Ok {
        let _ = write!(r, ": {}", o.detail);
    }
    r
}

/// A finding, for the report at the end.
struct Finding {
    point: String,
    verdict: Verdict,
    detail: String,
    replay: String,
    kept: Option<PathBuf>,
}

/// Per-workload mean overhead of a run (wall time beyond its duration).
#[derive(Default)]
struct Overheads {
    by_workload: HashMap<Kind, (f64, u32)>,
}

impl Overheads {
    fn add(&mut self, w: Kind, s: f64) {
        let e = self.by_workload.entry(w).or_insert((0.0, 0));
        e.0 += s.max(0.0);
        e.1 += 1;
    }

    fn estimate(&self, w: Kind) -> f64 {
        if let Some((sum, n)) = self.by_workload.get(&w) {
            return sum / *n as f64;
        }
        let (sum, n) = self.by_workload.values().fold((0.0, 0), |(s, n), (a, b)| (s + a, n + b));
        if n > 0 {
            (sum / n as f64).max(FIRST_OVERHEAD_S)
        } else {
            FIRST_OVERHEAD_S
        }
    }
}

/// `multiverse verify`. A failure before the campaign starts (a refused
/// flag, an empty grid, a `--keep` whose parent does not exist) is a usage
/// error.
pub fn run(a: VerifyArgs) -> Result<(), crate::cli::Failure> {
    use crate::cli::Failure;
    if a.min_run > a.max_run {
        return Err(Failure::Usage(format!("--min-run {} is longer than --max-run {}", a.min_run, a.max_run)));
    }
    let points = grid(&a).map_err(Failure::Usage)?;
    let seed = a.seed.unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        t.as_nanos() as u64 ^ ((std::process::id() as u64) << 32)
    });
    if a.list {
        for p in &points {
            let args = p.bench_args(&format!("{:.2}", a.min_run), p.seed(seed, 0), a.fault.as_deref());
            println!("{}", command_line(&args));
        }
        return Ok(());
    }
    let budget = a.minutes.unwrap_or(a.budget);
    let scratch = std::env::temp_dir().join(format!("multiverse-verify-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    if let Some(dir) = &a.keep {
        crate::cli::create_output_dir("--keep", dir).map_err(Failure::Usage)?;
    }
    let r = campaign(&a, &points, seed, budget, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(r?)
}

fn campaign(a: &VerifyArgs, points: &[Point], seed: u64, budget: Duration, scratch: &Path) -> Result<(), String> {
    let lines = unique(points.iter().map(|p| p.line.name.as_str()));
    let workloads = unique(points.iter().map(|p| p.workload.name()));
    let mut threads: Vec<usize> = points.iter().map(|p| p.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    println!("multiverse verify: {} runs of `bench --verify`, budget {}, seed {seed}", points.len(), span(budget));
    println!("  protocols  {}", lines.join(", "));
    println!("  workloads  {}", workloads.join(", "));
    println!(
        "  threads    {}; every isolation level each protocol offers; each run {}-{} s",
        threads.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", "),
        a.min_run,
        a.max_run
    );
    if let Some(f) = &a.fault {
        println!("  fault      {f} (injected in every run: findings expected)");
    }
    println!();
    println!("{}", header());

    let show = std::io::stderr().is_terminal();
    let pb = if show {
        let pb = ProgressBar::new(points.len() as u64);
        if let Ok(style) = ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}") {
            pb.set_style(style.progress_chars("=> "));
        }
        pb
    } else {
        ProgressBar::hidden()
    };
    let say = |s: &str| {
        if show {
            pb.println(s);
        } else {
            println!("{s}");
        }
    };

    let start = Instant::now();
    let deadline = start + budget;
    let mut overheads = Overheads::default();
    let mut findings: Vec<Finding> = Vec::new();
    let (mut done, mut ok) = (0usize, 0usize);
    let mut round = 0u32;
    'rounds: loop {
        if round > 0 {
            if a.rounds.is_some_and(|n| round >= n) {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let need = points.iter().map(|p| overheads.estimate(p.workload) + a.min_run).fold(0.0, f64::max);
            if left.as_secs_f64() < need {
                break;
            }
            say(&format!("-- round {}: the grid again with fresh seeds ({} left)", round + 1, span(left)));
            pb.set_length(pb.length().unwrap_or(0) + points.len() as u64);
        }
        for (i, p) in points.iter().enumerate() {
            let now = Instant::now();
            let left_s = deadline.saturating_duration_since(now).as_secs_f64();
            let rest = &points[i..];
            let overhead: f64 = rest.iter().map(|q| overheads.estimate(q.workload)).sum();
            if round > 0 && left_s < overheads.estimate(p.workload) + a.min_run {
                // A round cut short still counts as one.
                round += u32::from(i > 0);
                break 'rounds;
            }
            let share = (left_s - overhead) / rest.len() as f64;
            let secs = share.clamp(a.min_run, a.max_run);
            let secs_text = format!("{secs:.2}");
            let run_seed = p.seed(seed, round);
            let args = p.bench_args(&secs_text, run_seed, a.fault.as_deref());
            let stem = p.file_stem(round);
            let json = scratch.join(format!("{stem}.json"));
            // Another store has no history to keep (its check is from outside).
            let history = a.keep.as_ref().filter(|_| p.line.peer.is_none()).map(|d| d.join(format!("{stem}.hist")));
            // A run that takes far longer than its duration plus the slowest
            // overhead seen is stuck.
            let limit = Duration::from_secs_f64(120.0 + 10.0 * (secs + overheads.estimate(p.workload)));
            pb.set_message(format!("{} {} {} {}t", p.line.name, p.isolation.name(), p.workload, p.threads));
            let o = run_child(&args, &json, history.as_deref(), limit);
            overheads.add(p.workload, o.wall.as_secs_f64() - secs);
            done += 1;
            pb.inc(1);
            say(&row(p, &secs_text, &o));
            if o.verdict == Verdict::Ok {
                ok += 1;
                if let Some(h) = &history {
                    let _ = std::fs::remove_file(h);
                }
                continue;
            }
            let kept = match &a.keep {
                Some(dir) => {
                    let log = dir.join(format!("{stem}.log"));
                    let _ = std::fs::write(&log, &o.output);
                    Some(dir.join(&stem))
                }
                None => None,
            };
            findings.push(Finding {
                point: format!("{} {} {} {} threads", p.line.name, p.isolation.name(), p.workload, p.threads),
                verdict: o.verdict,
                detail: o.detail,
                replay: command_line(&args),
                kept,
            });
        }
        round += 1;
    }
    pb.finish_and_clear();

    println!();
    println!(
        "{done} runs in {} ({} round{}, budget {}): {ok} ok, {} finding{}; seed {seed}",
        span(start.elapsed()),
        round,
        if round == 1 { "" } else { "s" },
        span(budget),
        findings.len(),
        if findings.len() == 1 { "" } else { "s" }
    );
    if start.elapsed() > budget + budget / 20 + Duration::from_secs(5) {
        println!(
            "(over budget: every point runs at least once, for --min-run {} s; restrict the grid or give more time)",
            a.min_run
        );
    }
    if findings.is_empty() {
        return Ok(());
    }
    println!("\nfindings:");
    for f in &findings {
        println!("  {}: {}: {}", f.point, f.verdict.name(), f.detail);
        println!("    replay: {}", f.replay);
        if let Some(k) = &f.kept {
            println!(
                "    kept:   {}.hist (history, if the run wrote one) and {}.log (its output)",
                k.display(),
                k.display()
            );
        }
    }
    Err(format!("{} of {done} runs found something (listed above)", findings.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_parse() {
        assert_eq!(parse_budget("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_budget("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_budget("20m"), Ok(Duration::from_secs(1200)));
        assert_eq!(parse_budget("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_budget("0.5m"), Ok(Duration::from_secs(30)));
        assert!(parse_budget("soon").is_err() && parse_budget("0").is_err() && parse_budget("").is_err());
        assert!(parse_budget("5d").is_err() && parse_budget("m").is_err());
        assert_eq!(parse_minutes("2"), Ok(Duration::from_secs(120)));
        assert!(parse_minutes("-1").is_err());
    }

    #[test]
    fn reports_are_read() {
        let h = "history: 9 transactions (8 committed, 1 aborted), 3 keys; graph: ww 1, wr 2, rw 3, \
                 predicate rw 14; 2 cyclic components";
        assert_eq!(number_after(h, "predicate rw"), Some(14));
        assert_eq!(number_before(h, "cyclic component"), Some(2));
        assert_eq!(number_before("no such line", "cyclic component"), None);
        let ok = "summary\nverify: serializable: OK (no forbidden anomaly)\n";
        assert_eq!(judge(Some(0), ok, "").0, Verdict::Ok);
        let bad =
            "verify: serializable: FAILED (1 forbidden anomaly)\nhistory: ...\nG2: 1 (forbidden at serializable)\n";
        let (v, d) = judge(Some(1), bad, "multiverse: the history violates serializable: 1 forbidden anomalies\n");
        assert_eq!(v, Verdict::Anomaly);
        assert!(d.contains("G2: 1"), "{d}");
        let (v, d) = judge(Some(101), "", "thread 'main' panicked at src/x.rs:1:2:\nboom\n");
        assert_eq!(v, Verdict::Crash);
        assert!(d.contains("boom"), "{d}");
        assert_eq!(judge(None, "", "").0, Verdict::Crash);
        let e = "multiverse: tpcc consistency check failed: condition 1\n";
        assert_eq!(judge(Some(1), "", e).0, Verdict::Inconsistent);
        assert_eq!(judge(Some(0), "no verdict\n", "").0, Verdict::Failed);
        let two = "verify: list-append: every key's values agree with its commit order\n\
                   verify: snapshot: OK (no forbidden anomaly)\n";
        assert_eq!(judge(Some(0), two, "").0, Verdict::Ok);
        let lost = "verify: list-append: 2 mismatches between the values and the commit order\n\
                    verify: snapshot: OK (no forbidden anomaly)\n";
        let (v, d) = judge(Some(1), lost, "multiverse: the list values contradict the commit order: 2 mismatches\n");
        assert_eq!(
            (v, d.as_str()),
            (Verdict::Inconsistent, "list-append: 2 mismatches between the values and the commit order")
        );
        let clap = "error: unexpected argument '--fault' found\n\nUsage: multiverse bench [OPTIONS]\n\nFor more information, try '--help'.\n";
        let (v, d) = judge(Some(2), "", clap);
        assert_eq!((v, d.as_str()), (Verdict::Failed, "error: unexpected argument '--fault' found"));
    }

    #[test]
    fn the_grid_follows_the_engine() {
        let a = |protocols: &[&str], isolations: &[&str]| VerifyArgs {
            budget: Duration::from_secs(60),
            minutes: None,
            protocols: protocols.iter().map(|s| s.to_string()).collect(),
            workloads: vec![],
            isolations: isolations.iter().map(|s| s.to_string()).collect(),
            threads: vec![],
            seed: None,
            keep: None,
            min_run: 0.3,
            max_run: 5.0,
            rounds: None,
            quick: false,
            list: false,
            fault: None,
        };
        let g = grid(&a(&[], &[])).unwrap();
        // Lines of other stores too, where they are built (their levels).
        for p in &g {
            assert!(p.line.levels().contains(&p.isolation));
            assert!(p.line.runs(p.workload));
        }
        assert!(g.iter().any(|p| p.line.name == "ssn+rc") && g.iter().any(|p| p.line.name == "ssn+si"));
        assert!(!g.iter().any(|p| p.line.name == "bohm" && p.workload == Kind::Tpcc));
        let ssn = grid(&a(&["ssn"], &[])).unwrap();
        assert!(ssn.iter().all(|p| p.line.protocol == Protocol::Ssn && p.isolation == Isolation::Serializable));
        let mv = grid(&a(&["mv-occ"], &["si", "serializable"])).unwrap();
        assert_eq!(mv.len(), Kind::ALL.len() * 2 * 2);
        assert!(grid(&a(&["silo"], &["snapshot"])).unwrap_err().contains("grid is empty"));
        // The quick slice: every line once, every workload met.
        let q = grid(&VerifyArgs { quick: true, ..a(&[], &[]) }).unwrap();
        assert_eq!(q.len(), all_lines().len());
        for p in &q {
            assert_eq!(Some(&p.isolation), p.line.levels().last(), "{}: its strongest level", p.line.name);
            assert!(p.line.runs(p.workload));
        }
        for w in Kind::ALL {
            assert!(q.iter().any(|p| p.workload == w), "{w} missing from the quick slice");
        }
        assert!(q.iter().any(|p| p.threads == 2) && q.iter().any(|p| p.threads == 8));
        assert!(grid(&a(&["nope"], &[])).unwrap_err().contains("unknown protocol line 'nope'"));
        // Seeds depend on the point and the round, not on the grid around it.
        let p = &mv[0];
        assert_eq!(p.seed(7, 0), p.seed(7, 0));
        assert_ne!(p.seed(7, 0), p.seed(7, 1));
        assert_ne!(p.seed(7, 0), mv[1].seed(7, 0));
    }

    #[test]
    fn command_lines_quote() {
        let args: Vec<String> = ["--mix", "a:1,b:2", "--x", "it's"].iter().map(|s| s.to_string()).collect();
        assert_eq!(command_line(&args), r"multiverse bench --mix a:1,b:2 --x 'it'\''s'");
    }
}
