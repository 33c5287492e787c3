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
//!
//! This file holds the arguments and the campaign; the grid of points is
//! built in `grid`, and each run is a child process judged in `child`.

use crate::bench::parse_threads;
use indicatif::{ProgressBar, ProgressStyle};
use multiverse::{Isolation, OrderedMap, Protocol};
use multiverse_workloads::Kind;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod child;
mod grid;
#[cfg(test)]
mod tests;

use child::{command_line, run_child, Outcome, Verdict};
use grid::{grid, unique, Point};

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
    /// The map under every ordered index, passed to every run as `bench
    /// --ordered-map MAP`: skip-list or b+tree [default: skip-list]
    #[arg(long, value_name = "MAP", value_parser = |s: &str| s.parse::<OrderedMap>())]
    ordered_map: Option<OrderedMap>,
}

impl VerifyArgs {
    /// The bench flags every run of the campaign gets.
    fn every_run(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(f) = &self.fault {
            a.extend(["--fault".into(), f.clone()]);
        }
        if let Some(m) = self.ordered_map {
            a.extend(["--ordered-map".into(), m.to_string()]);
        }
        a
    }
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
            let args = p.bench_args(&format!("{:.2}", a.min_run), p.seed(seed, 0), &a.every_run());
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
    if let Some(m) = a.ordered_map {
        println!("  ordered    indexes in a {m}");
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
    let every_run = a.every_run();
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
            let args = p.bench_args(&secs_text, run_seed, &every_run);
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
