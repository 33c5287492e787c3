//! `multiverse compare`: runs a grid of benchmark points (protocol lines ×
//! swept parameter values × repeats), prints a table, and writes CSV, JSON
//! and a plot (SVG and PNG) of throughput against the swept parameter with
//! one line per protocol, like the papers' figures. docs/COMPARE.md has the
//! usage and examples.
//!
//! A point is a `bench` run: the bench flags the user gave, with
//! `--protocol`, `--isolation` (for a `P@L` line) and the swept flags
//! replaced, parsed again by the bench argument parser. So every bench flag
//! can be swept by its name (`threads`, `theta`, `rows`, `duration`, ...) and
//! a value the bench parser refuses is refused before anything runs, with
//! the parser's message.
//!
//! Every run is a `multiverse bench` process of its own (this executable,
//! its JSON record read back), as a run of `bench` is: no run inherits the
//! allocator state, retained memory or deferred garbage of the runs before
//! it. Run in one process, one after another, the later runs of a TPC-C
//! comparison came out several percent slower than the first ones.

use crate::bench::{self, BenchArgs};
use crate::plot;
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, Parser};
use multiverse::{Isolation, Protocol};
use serde_json::{Map, Value};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Most runs one comparison may ask for (lines × values × repeats).
const MAX_RUNS: usize = 10_000;

/// Arguments of `multiverse compare`: its own flags, then every flag of
/// `multiverse bench` (used by each point).
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Protocol lines, comma-separated: P (at --isolation) or P@ISOLATION,
    /// e.g. mv-occ@snapshot,mv-occ@serializable; SSN's base as ssn+rc or
    /// ssn+si, and with its read-mostly optimization as ssn+rc-r or ssn+si-r
    /// (at --read-mostly-age, default 1000) [default: --protocol].
    #[arg(long, value_name = "P[@L],...", help_heading = "Comparison")]
    pub protocols: Option<String>,
    /// A bench flag and its values: threads=1,2,4 or theta=0,0.5,0.9 (values
    /// separated by ';' instead when they contain commas). A second --sweep
    /// makes a grid: one line per protocol and value of the second sweep.
    #[arg(long, value_name = "NAME=V1,V2,...", help_heading = "Comparison")]
    pub sweep: Vec<String>,
    /// Runs of each point; the table and plot show the median, the CSV also
    /// the low and high, the JSON every run. The machine is noisy: use 3 or more.
    #[arg(long, value_name = "K", default_value_t = 1, help_heading = "Comparison",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Write PREFIX.csv, PREFIX.json, PREFIX.svg and PREFIX.png
    /// [default: bench-out/compare-WORKLOAD, or under $MULTIVERSE_OUT_DIR].
    #[arg(long, value_name = "PREFIX", help_heading = "Comparison")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub bench: BenchArgs,
}

/// The bench argument parser, for one point.
#[derive(Parser, Debug)]
#[command(name = "multiverse compare")]
struct PointCli {
    #[command(flatten)]
    b: BenchArgs,
}

/// One line of the comparison: a protocol, at an isolation level.
#[derive(Clone, Debug, PartialEq)]
struct Line {
    protocol: Protocol,
    /// SSN's base, given as `ssn+rc` or `ssn+si`; otherwise `--base`.
    base: Option<&'static str>,
    /// `ssn+rc-r`, `ssn+si-r`: SSN's read-mostly optimization (the paper's
    /// SI+SSN-R), at `--read-mostly-age` (which other lines leave out) or
    /// [`DEFAULT_READ_MOSTLY_AGE`].
    read_mostly: bool,
    /// Given as `P@L`; otherwise the point uses `--isolation`.
    isolation: Option<Isolation>,
    label: String,
}

/// The read-mostly age of an `-r` line when `--read-mostly-age` is not given.
const DEFAULT_READ_MOSTLY_AGE: u64 = 1000;

/// One swept bench flag.
#[derive(Clone, Debug)]
struct Sweep {
    /// The flag's long name (`threads`).
    name: String,
    /// The flag's clap id (to leave the user's own value out).
    id: String,
    values: Vec<String>,
}

/// What one run measured, for the table, CSV and plot.
#[derive(Clone, Copy, Debug)]
struct RunSummary {
    tps: f64,
    abort_pct: f64,
    p50_us: f64,
    p99_us: f64,
    cpu_share: f64,
}

/// A point of the grid: sweep values (one per sweep) and a line; its runs.
struct Cell {
    values: Vec<String>,
    line: usize,
    /// The point's bench flags, as given to its `bench` process.
    argv: Vec<String>,
    /// The level the point runs at (the line's, or `--isolation`).
    isolation: Isolation,
    runs: Vec<RunSummary>,
}

/// Parses `--protocols`: names must exist, be built, and offer the level.
fn parse_lines(spec: &str, default_isolation: Option<&str>) -> Result<Vec<Line>, String> {
    let mut lines: Vec<Line> = Vec::new();
    for item in spec.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(format!("--protocols '{spec}': an empty entry (expected P or P@ISOLATION, comma-separated)"));
        }
        let (p, l) = match item.split_once('@') {
            Some((p, l)) => (p.trim(), Some(l.trim())),
            None => (item, None),
        };
        let (p, base) = match p.split_once('+') {
            Some((p, b)) => (p.trim(), Some(b.trim())),
            None => (p, None),
        };
        let protocol = bench::parse_protocol(p).map_err(|e| format!("--protocols: {e}"))?;
        let (base, read_mostly) = match base.map(|b| b.strip_suffix("-r")) {
            Some(Some(b)) if protocol == Protocol::Ssn => (Some(b.trim()), true),
            Some(Some(_)) => return Err(format!("--protocols '{item}': -r (read-mostly) applies to ssn only")),
            _ => (base, false),
        };
        let base = match base {
            None => None,
            Some(b) => {
                let iso = bench::parse_base(Some(b), protocol).map_err(|e| format!("--protocols '{item}': {e}"))?;
                Some(if iso == Isolation::ReadCommitted { "rc" } else { "si" })
            }
        };
        let isolation = match l {
            Some(l) => Some(bench::parse_isolation(l, protocol).map_err(|e| format!("--protocols: {e}"))?),
            None => {
                bench::resolve_isolation(default_isolation, protocol).map_err(|e| format!("--protocols: {e}"))?;
                None
            }
        };
        let name = match base {
            Some(b) => format!("{}+{b}{}", protocol.name(), if read_mostly { "-r" } else { "" }),
            None => protocol.name().to_string(),
        };
        let label = match isolation {
            Some(l) => format!("{name}@{}", l.name()),
            None => name,
        };
        if lines.iter().any(|x| x.label == label) {
            return Err(format!("--protocols: '{label}' is given twice"));
        }
        lines.push(Line { protocol, base, read_mostly, isolation, label });
    }
    Ok(lines)
}

/// Parses one `--sweep NAME=V1,V2,...` against the bench flags.
fn parse_sweep(spec: &str) -> Result<Sweep, String> {
    let err = |why: &str| format!("--sweep '{spec}': {why}");
    let Some((name, list)) = spec.split_once('=') else {
        return Err(err("expected NAME=V1,V2,... (e.g. threads=1,2,4)"));
    };
    let name = name.trim().trim_start_matches("--");
    if name.is_empty() {
        return Err(err("no flag name before '=' (e.g. threads=1,2,4)"));
    }
    let sep = if list.contains(';') { ';' } else { ',' };
    let values: Vec<String> = list.split(sep).map(|v| v.trim().to_string()).collect();
    if values.iter().all(String::is_empty) {
        return Err(err("no values after '=' (e.g. threads=1,2,4)"));
    }
    if values.iter().any(String::is_empty) {
        return Err(err("an empty value"));
    }
    if let Some(v) = values.iter().enumerate().find(|(i, v)| values[..*i].contains(v)).map(|(_, v)| v) {
        return Err(err(&format!("value '{v}' is given twice")));
    }
    let cmd = PointCli::command();
    let Some(arg) = cmd.get_arguments().find(|a| a.get_long() == Some(name)) else {
        return Err(err(&format!(
            "'{name}' is not a flag of multiverse bench (sweepable: threads, duration, rows, seed, mix and each workload's flags; see `multiverse bench --help`)"
        )));
    };
    match name {
        "protocol" | "isolation" => {
            return Err(err("protocols and isolation levels are the lines: use --protocols P@L,..."));
        }
        "json" | "history" => return Err(err(&format!("--{name} names an output file and cannot be swept"))),
        _ => {}
    }
    if !arg.get_action().takes_values() {
        return Err(err(&format!("--{name} takes no value and cannot be swept")));
    }
    Ok(Sweep { name: name.to_string(), id: arg.get_id().to_string(), values })
}

/// The bench flags the user typed, as `--name=value` (clap id, argument)
/// pairs, read back from the matches of `compare`.
fn given_bench_flags(m: &ArgMatches) -> Result<Vec<(String, String)>, String> {
    let cmd = PointCli::command();
    let mut out = Vec::new();
    for arg in cmd.get_arguments() {
        let (id, Some(long)) = (arg.get_id().as_str(), arg.get_long()) else { continue };
        if id == "help" || m.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        if !arg.get_action().takes_values() {
            out.push((id.to_string(), format!("--{long}")));
            continue;
        }
        for raw in m.get_raw(id).into_iter().flatten() {
            let v = raw.to_str().ok_or_else(|| format!("--{long}: the value is not valid UTF-8"))?;
            out.push((id.to_string(), format!("--{long}={v}")));
        }
    }
    Ok(out)
}

/// The first line of a clap error, without its `error: ` prefix.
fn clap_line(e: &clap::Error) -> String {
    let s = e.to_string();
    let line = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("invalid arguments");
    line.trim_start_matches("error: ").trim().to_string()
}

/// The bench arguments of one point.
fn point_args(
    base: &[(String, String)],
    line: &Line,
    sweeps: &[Sweep],
    values: &[String],
) -> Result<(Vec<String>, BenchArgs), String> {
    let replaced = |id: &str| {
        id == "protocol"
            || (id == "isolation" && line.isolation.is_some())
            || (id == "base" && line.base.is_some())
            || (id == "read_mostly_age" && !line.read_mostly)
            || sweeps.iter().any(|s| s.id == id)
    };
    let mut argv = vec!["multiverse compare".to_string()];
    argv.extend(base.iter().filter(|(id, _)| !replaced(id)).map(|(_, a)| a.clone()));
    argv.push(format!("--protocol={}", line.protocol.name()));
    if let Some(l) = line.isolation {
        argv.push(format!("--isolation={}", l.name()));
    }
    if let Some(b) = line.base {
        argv.push(format!("--base={b}"));
    }
    if line.read_mostly && !base.iter().any(|(id, _)| id == "read_mostly_age") {
        argv.push(format!("--read-mostly-age={DEFAULT_READ_MOSTLY_AGE}"));
    }
    for (s, v) in sweeps.iter().zip(values) {
        argv.push(format!("--{}={v}", s.name));
    }
    let args = PointCli::try_parse_from(&argv).map_err(|e| clap_line(&e))?.b;
    let workload = multiverse_workloads::check_name(&args.workload)?;
    bench::wl::refuse_foreign_flags(&args, workload)?;
    argv.remove(0);
    Ok((argv, args))
}

/// Runs one point as a `multiverse bench` process of its own and returns
/// its JSON record (the process writes it to a temporary file; `n` numbers
/// the run).
fn run_point(argv: &[String], show: bool, n: usize) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the multiverse executable: {e}"))?;
    let json = std::env::temp_dir().join(format!("multiverse-compare-{}-{n}.json", std::process::id()));
    let r = run_into(&exe, argv, show, &json);
    let _ = std::fs::remove_file(&json);
    r
}

fn run_into(exe: &Path, argv: &[String], show: bool, json: &Path) -> Result<Value, String> {
    let out = Command::new(exe)
        .arg("bench")
        .args(argv)
        .arg(format!("--json={}", json.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        // On a terminal the run shows its progress bars; otherwise its
        // error message is kept for ours.
        .stderr(if show { Stdio::inherit() } else { Stdio::piped() })
        .output()
        .map_err(|e| format!("cannot start a bench run: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        let last = last.trim().trim_start_matches("multiverse: ");
        return Err(if last.is_empty() { format!("the bench run failed ({})", out.status) } else { last.to_string() });
    }
    let text = std::fs::read_to_string(json).map_err(|e| format!("cannot read the run's record: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("the run's record is not JSON: {e}"))
}

/// The summary of a run from its JSON record.
fn summary(rec: &Value) -> Result<RunSummary, String> {
    let f = |v: &Value, name: &str| v.as_f64().ok_or_else(|| format!("the run's record lacks {name}"));
    let (committed, aborted) = (f(&rec["committed"], "committed")?, f(&rec["aborted"], "aborted")?);
    let (cpu_s, secs, threads) =
        (f(&rec["cpu_s"], "cpu_s")?, f(&rec["duration_s"], "duration_s")?, f(&rec["threads"], "threads")?);
    Ok(RunSummary {
        tps: f(&rec["throughput_tps"], "throughput_tps")?,
        abort_pct: if committed + aborted == 0.0 { 0.0 } else { 100.0 * aborted / (committed + aborted) },
        p50_us: f(&rec["latency_us"]["p50"], "latency_us.p50")?,
        p99_us: f(&rec["latency_us"]["p99"], "latency_us.p99")?,
        cpu_share: cpu_s / (secs * threads).max(1e-9),
    })
}

/// `threads=2 theta=0.5`.
fn point_text(sweeps: &[Sweep], values: &[String]) -> String {
    sweeps.iter().zip(values).map(|(s, v)| format!("{}={v}", s.name)).collect::<Vec<_>>().join(" ")
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Cell {
    fn stat(&self, f: impl Fn(&RunSummary) -> f64) -> f64 {
        median(&mut self.runs.iter().map(f).collect::<Vec<_>>())
    }
    fn tps_range(&self) -> (f64, f64) {
        self.runs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), r| (a.min(r.tps), b.max(r.tps)))
    }
}

/// `PREFIX.ext`, the extension appended to the whole prefix.
fn with_ext(prefix: &Path, ext: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// A CSV field, quoted when needed.
fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `multiverse compare`. `m` holds the matches of the `compare` subcommand
/// (to read back the bench flags the user typed).
pub fn run(a: CompareArgs, m: &ArgMatches) -> Result<(), String> {
    // Everything is checked before anything runs.
    if a.bench.json.is_some() {
        return Err("--json applies to bench; compare writes every run to PREFIX.json (see --out)".into());
    }
    if a.bench.history.is_some() {
        return Err("--history applies to bench; use --verify to check every point's history".into());
    }
    let lines = parse_lines(a.protocols.as_deref().unwrap_or(&a.bench.protocol), a.bench.isolation.as_deref())?;
    if a.sweep.len() > 2 {
        return Err(format!("at most two --sweep flags (a grid), {} given", a.sweep.len()));
    }
    let sweeps = a.sweep.iter().map(|s| parse_sweep(s)).collect::<Result<Vec<_>, _>>()?;
    if sweeps.len() == 2 && sweeps[0].id == sweeps[1].id {
        return Err(format!("--sweep {} is given twice", sweeps[0].name));
    }
    let base = given_bench_flags(m)?;
    let grid: Vec<Vec<String>> = match sweeps.as_slice() {
        [] => vec![vec![]],
        [s] => s.values.iter().map(|v| vec![v.clone()]).collect(),
        [s, t] => s.values.iter().flat_map(|v| t.values.iter().map(move |w| vec![v.clone(), w.clone()])).collect(),
        _ => unreachable!("at most two sweeps"),
    };
    let repeat = a.repeat as usize;
    let total = grid.len() * lines.len() * repeat;
    if total > MAX_RUNS {
        return Err(format!("{total} runs asked for; at most {MAX_RUNS}"));
    }
    let mut cells = Vec::new();
    for values in &grid {
        for (li, line) in lines.iter().enumerate() {
            let (argv, args) = point_args(&base, line, &sweeps, values).map_err(|e| {
                let at = point_text(&sweeps, values);
                if at.is_empty() {
                    format!("{}: {e}", line.label)
                } else {
                    format!("sweep {at}: {e}")
                }
            })?;
            let isolation = bench::resolve_isolation(args.isolation.as_deref(), line.protocol)?;
            cells.push(Cell { values: values.clone(), line: li, argv, isolation, runs: Vec::with_capacity(repeat) });
        }
    }
    let workload = a.bench.workload.clone();
    let prefix = match &a.out {
        Some(p) => {
            let strip = p.extension().is_some_and(|e| ["csv", "json", "svg", "png"].iter().any(|x| e == *x));
            if strip {
                p.with_extension("")
            } else {
                p.clone()
            }
        }
        None => plot::out_dir().join(format!("compare-{workload}")),
    };
    if prefix.file_name().is_none() {
        return Err(format!("--out '{}' names no file prefix", prefix.display()));
    }
    if let Some(dir) = prefix.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }

    let swept = if sweeps.is_empty() {
        "no sweep".to_string()
    } else {
        sweeps.iter().map(|s| format!("{}={}", s.name, s.values.join(","))).collect::<Vec<_>>().join(" × ")
    };
    let labels: Vec<&str> = lines.iter().map(|l| l.label.as_str()).collect();
    let each =
        if sweeps.iter().any(|s| s.name == "duration") { String::new() } else { format!(" of {} s", a.bench.duration) };
    println!(
        "multiverse compare: workload {workload}; {}; {swept}; {total} run{}{each}{}",
        labels.join(", "),
        if total == 1 { "" } else { "s" },
        if repeat > 1 { format!(" (median of {repeat} per point)") } else { String::new() },
    );

    // Repeats are the outer loop, so that slow drift of the machine spreads
    // over every point instead of weighing on some.
    let show = std::io::stderr().is_terminal();
    let mut records: Vec<Value> = Vec::with_capacity(total);
    let mut done = 0;
    for rep in 0..repeat {
        for cell in cells.iter_mut() {
            done += 1;
            let line = &lines[cell.line];
            let at = point_text(&sweeps, &cell.values);
            let what = format!(
                "{}{}{}{}",
                at,
                if at.is_empty() { "" } else { " " },
                line.label,
                if repeat > 1 { format!(" (run {}/{repeat})", rep + 1) } else { String::new() }
            );
            if show {
                eprintln!("[{done}/{total}] {what}");
            }
            let mut rec = run_point(&cell.argv, show, done).map_err(|e| format!("{what}: {e}"))?;
            let sum = summary(&rec).map_err(|e| format!("{what}: {e}"))?;
            if show {
                eprintln!(
                    "[{done}/{total}] {what}: {} txn/s, {:.2}% aborted",
                    crate::bench::report::int(sum.tps as u64),
                    sum.abort_pct
                );
            }
            if let Value::Object(o) = &mut rec {
                let sweep: Map<String, Value> =
                    sweeps.iter().zip(&cell.values).map(|(s, v)| (s.name.clone(), Value::from(v.as_str()))).collect();
                let mut c = Map::new();
                c.insert("line".into(), Value::from(line.label.as_str()));
                c.insert("sweep".into(), Value::Object(sweep));
                c.insert("repeat".into(), Value::from(rep + 1));
                o.insert("compare".into(), Value::Object(c));
            }
            records.push(rec);
            cell.runs.push(sum);
        }
    }

    let table = table(&cells, &lines, &sweeps, repeat);
    print!("\n{table}");
    let files = write_outputs(&prefix, &workload, &cells, &lines, &sweeps, &records)?;
    println!("\nwrote {}", files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
    Ok(())
}

/// The table: one row per point (sweep values), per line the median
/// throughput and abort share.
fn table(cells: &[Cell], lines: &[Line], sweeps: &[Sweep], repeat: usize) -> String {
    let key_w: Vec<usize> =
        sweeps.iter().map(|s| s.values.iter().map(String::len).chain([s.name.len()]).max().unwrap_or(1)).collect();
    let col_w = lines.iter().map(|l| l.label.len()).max().unwrap_or(0).max(22);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "throughput in txn/s and aborted share of attempts{}",
        if repeat > 1 { format!(", median of {repeat} runs") } else { String::new() }
    );
    let mut head = String::new();
    let mut sub = String::new();
    for (sw, w) in sweeps.iter().zip(&key_w) {
        let _ = write!(head, "{:<w$}  ", sw.name);
        let _ = write!(sub, "{:<w$}  ", "");
    }
    for l in lines {
        let _ = write!(head, " {:>col_w$}", l.label);
        let _ = write!(sub, " {:>w$} {:>8}", "txn/s", "abort %", w = col_w - 9);
    }
    let _ = writeln!(s, "{}", head.trim_end());
    let _ = writeln!(s, "{}", sub.trim_end());
    let _ = writeln!(s, "{}", "-".repeat(head.trim_end().len()));
    for row in cells.chunks(lines.len()) {
        let mut r = String::new();
        for (v, w) in row[0].values.iter().zip(&key_w) {
            let _ = write!(r, "{v:<w$}  ");
        }
        for c in row {
            let _ = write!(
                r,
                " {:>w$} {:>7.2}%",
                crate::bench::report::int(c.stat(|x| x.tps) as u64),
                c.stat(|x| x.abort_pct),
                w = col_w - 9
            );
        }
        let _ = writeln!(s, "{}", r.trim_end());
    }
    s
}

/// Writes PREFIX.csv, .json, .svg and .png; returns their paths.
fn write_outputs(
    prefix: &Path,
    workload: &str,
    cells: &[Cell],
    lines: &[Line],
    sweeps: &[Sweep],
    records: &[Value],
) -> Result<Vec<PathBuf>, String> {
    let write = |path: &Path, text: String| {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    // CSV: one row per point and line.
    let mut text = String::from("workload");
    for s in sweeps {
        let _ = write!(text, ",{}", csv(&s.name));
    }
    text.push_str(
        ",line,protocol,isolation,runs,throughput_tps,throughput_min_tps,throughput_max_tps,abort_pct,p50_us,p99_us,cpu_share\n",
    );
    for c in cells {
        let line = &lines[c.line];
        let (lo, hi) = c.tps_range();
        let _ = write!(text, "{}", csv(workload));
        for v in &c.values {
            let _ = write!(text, ",{}", csv(v));
        }
        let _ = writeln!(
            text,
            ",{},{},{},{},{:.1},{:.1},{:.1},{:.4},{:.2},{:.2},{:.3}",
            csv(&line.label),
            line.protocol.name(),
            c.isolation.name(),
            c.runs.len(),
            c.stat(|x| x.tps),
            lo,
            hi,
            c.stat(|x| x.abort_pct),
            c.stat(|x| x.p50_us),
            c.stat(|x| x.p99_us),
            c.stat(|x| x.cpu_share),
        );
    }
    let csv_path = with_ext(prefix, "csv");
    write(&csv_path, text)?;

    let json_path = with_ext(prefix, "json");
    let text = serde_json::to_string_pretty(records).map_err(|e| format!("cannot encode JSON: {e}"))?;
    write(&json_path, text + "\n")?;

    let [svg, png] = plot::write(&chart(workload, cells, lines, sweeps, records), prefix)?;
    Ok(vec![csv_path, json_path, svg, png])
}

/// The plot: x is the first sweep's values (or the lines, with no sweep);
/// one series per line (and per value of a second sweep).
fn chart(workload: &str, cells: &[Cell], lines: &[Line], sweeps: &[Sweep], records: &[Value]) -> plot::Chart {
    let point = |c: &Cell| {
        let (lo, hi) = c.tps_range();
        Some(plot::Point { y: c.stat(|x| x.tps), lo, hi })
    };
    let (x_name, x, series) = match sweeps {
        [] => (
            "protocol".to_string(),
            lines.iter().map(|l| l.label.clone()).collect(),
            vec![plot::Series { name: "throughput".into(), points: cells.iter().map(point).collect() }],
        ),
        [s, rest @ ..] => {
            let mut series = Vec::new();
            let inner: Vec<Option<&String>> = match rest {
                [t] => t.values.iter().map(Some).collect(),
                _ => vec![None],
            };
            for (li, line) in lines.iter().enumerate() {
                for v2 in &inner {
                    let name = match v2 {
                        Some(v) => format!("{} {}={v}", line.label, rest[0].name),
                        None => line.label.clone(),
                    };
                    let points = s
                        .values
                        .iter()
                        .map(|v1| {
                            cells
                                .iter()
                                .find(|c| c.line == li && c.values[0] == *v1 && v2.is_none_or(|v2| c.values[1] == *v2))
                                .and_then(point)
                        })
                        .collect();
                    series.push(plot::Series { name, points });
                }
            }
            (s.name.clone(), s.values.clone(), series)
        }
    };
    plot::Chart {
        title: format!("{workload}: throughput vs {x_name}"),
        notes: notes(records, sweeps),
        x_name,
        y_name: "throughput (txn/s)".into(),
        x,
        series,
    }
}

/// The notes under a plot's title: what was the same in every run
/// (workload parameters, threads, isolation, duration) and the commit.
fn notes(records: &[Value], sweeps: &[Sweep]) -> Vec<String> {
    let same = |key: &str| -> Option<Value> {
        let first = records.first()?.get(key)?;
        records.iter().all(|r| r.get(key) == Some(first)).then(|| first.clone())
    };
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut parts = Vec::new();
    if let Some(Value::Object(first)) = records.first().and_then(|r| r.get("params")) {
        for (k, v) in first {
            let everywhere = records.iter().all(|r| r.get("params").and_then(|p| p.get(k)) == Some(v));
            let swept = sweeps.iter().any(|s| s.name == *k);
            if everywhere && !swept {
                parts.push(format!("{k}={}", text(v)));
            }
        }
    }
    let mut run = Vec::new();
    if let Some(t) = same("threads") {
        run.push(crate::bench::report::threads(t.as_u64().unwrap_or(0) as usize));
    }
    if let Some(l) = same("isolation") {
        run.push(format!("isolation {}", text(&l)));
    }
    if let Some(d) = same("duration_requested_s") {
        run.push(format!("{} s per run", text(&d)));
    }
    let runs = records.len();
    let points = records
        .iter()
        .filter(|r| r.get("compare").and_then(|c| c.get("repeat")).and_then(Value::as_u64) == Some(1))
        .count()
        .max(1);
    if runs > points {
        run.push(format!("median of {} runs, whiskers low to high", runs / points));
    }
    run.push(format!("commit {}", crate::bench::sys::GIT_COMMIT));
    let mut out = Vec::new();
    // Two lines at most, each short enough for the title band.
    let mut line = String::new();
    for p in parts {
        if line.len() + p.len() > 100 {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&p);
    }
    if !line.is_empty() {
        out.push(line);
    }
    out.push(run.join(", "));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_lines_s(spec: &str, default_isolation: &str) -> Result<Vec<Line>, String> {
        parse_lines(spec, Some(default_isolation))
    }

    #[test]
    fn lines_parse() {
        // Without --isolation a protocol runs at read committed, or at its only level.
        let l = parse_lines("mv-occ,silo", None).unwrap();
        assert_eq!(l.len(), 2);
        let l = parse_lines_s("mv-occ@snapshot, mv-occ@serializable", "read-committed").unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].isolation, Some(Isolation::Snapshot));
        assert_eq!(l[1].label, "mv-occ@serializable");
        let l = parse_lines_s("mv-occ", "snapshot").unwrap();
        assert_eq!((l[0].isolation, l[0].label.as_str()), (None, "mv-occ"));
        assert!(parse_lines_s("paxos", "snapshot").unwrap_err().contains("unknown protocol 'paxos'"));
        assert!(parse_lines_s("pomvcc@repeatable-read", "snapshot").unwrap_err().contains("does not offer"));
        assert!(parse_lines_s("mv-occ@chaos", "snapshot").unwrap_err().contains("unknown isolation level 'chaos'"));
        assert!(parse_lines_s("mv-occ", "chaos").unwrap_err().contains("chaos"));
        assert!(parse_lines_s("mv-occ,,mv-occ@snapshot", "snapshot").unwrap_err().contains("empty entry"));
        assert!(parse_lines_s("mv-occ,mv-occ", "snapshot").unwrap_err().contains("twice"));
        // SSN's read-mostly lines, beside the plain ones.
        let l = parse_lines("ssn+si,ssn+si-r,ssn+rc-r", None).unwrap();
        assert_eq!(l.iter().map(|x| x.read_mostly).collect::<Vec<_>>(), [false, true, true]);
        assert_eq!((l[1].label.as_str(), l[2].base), ("ssn+si-r", Some("rc")));
        assert!(parse_lines("ssi+si-r", None).unwrap_err().contains("ssn only"));
        let none: &[(String, String)] = &[];
        let (argv, a) = point_args(none, &l[1], &[], &[]).unwrap();
        assert_eq!(a.read_mostly_age, Some(DEFAULT_READ_MOSTLY_AGE), "{argv:?}");
        let given = [("read_mostly_age".to_string(), "--read-mostly-age=50".to_string())];
        assert_eq!(point_args(&given, &l[1], &[], &[]).unwrap().1.read_mostly_age, Some(50));
        assert_eq!(point_args(&given, &l[0], &[], &[]).unwrap().1.read_mostly_age, None, "left out of plain lines");
    }

    #[test]
    fn sweeps_parse() {
        let s = parse_sweep("threads=1,2,4").unwrap();
        assert_eq!((s.name.as_str(), s.values.len()), ("threads", 3));
        let s = parse_sweep("--reads=0, 5").unwrap();
        assert_eq!((s.name.as_str(), s.values[1].as_str()), ("reads", "5"));
        let s = parse_sweep("mix=a:50,b:50;a:10,b:90").unwrap();
        assert_eq!(s.values, ["a:50,b:50", "a:10,b:90"]);
        for (bad, why) in [
            ("threads", "expected NAME=V1"),
            ("threads=", "no values"),
            ("=1,2", "no flag name"),
            ("threads=1,,2", "empty value"),
            ("threads=1,1", "twice"),
            ("nope=1", "not a flag"),
            ("protocol=mv-occ", "--protocols"),
            ("isolation=snapshot", "--protocols"),
            ("json=a", "cannot be swept"),
            ("verify=true", "takes no value"),
        ] {
            let e = parse_sweep(bad).unwrap_err();
            assert!(e.contains(why) && e.starts_with("--sweep"), "{bad}: {e}");
        }
    }

    #[test]
    fn points_replace_the_swept_flags() {
        let m = <CompareArgs as clap::Args>::augment_args(clap::Command::new("compare")).get_matches_from([
            "compare",
            "--threads",
            "3",
            "--rows=1k",
            "--isolation",
            "snapshot",
            "--no-prefetch",
            "--sweep",
            "threads=1,2",
        ]);
        let base = given_bench_flags(&m).unwrap();
        let ids: Vec<&str> = base.iter().map(|(id, _)| id.as_str()).collect();
        assert!(ids.contains(&"threads") && ids.contains(&"rows") && !ids.contains(&"duration"), "{base:?}");
        assert!(base.iter().any(|(_, a)| a == "--no-prefetch") && base.iter().any(|(_, a)| a == "--rows=1k"));
        let sweeps = vec![parse_sweep("threads=1,2").unwrap()];
        let lines = parse_lines_s("mv-occ,mv-occ@serializable", "snapshot").unwrap();
        let (argv, a) = point_args(&base, &lines[0], &sweeps, &["2".into()]).unwrap();
        assert_eq!((a.threads, a.rows, a.isolation.as_deref()), (Some(2), Some(1000), Some("snapshot")));
        assert!(a.hekaton.no_prefetch);
        // The run's own process gets the flags that were parsed here.
        for flag in ["--rows=1k", "--no-prefetch", "--protocol=mv-occ", "--threads=2"] {
            assert!(argv.iter().any(|x| x == flag), "{flag} in {argv:?}");
        }
        assert!(!argv.iter().any(|x| x.starts_with("--threads=1")) && !argv[0].contains("compare"), "{argv:?}");
        let (_, a) = point_args(&base, &lines[1], &sweeps, &["1".into()]).unwrap();
        assert_eq!((a.threads, a.isolation.as_deref()), (Some(1), Some("serializable")));
        let e = point_args(&base, &lines[0], &sweeps, &["0".into()]).unwrap_err();
        assert!(e.contains("--threads") && !e.contains('\n') && !e.starts_with("error"), "{e}");
        let other = [("workload".to_string(), "--workload=sibench".to_string())];
        let e = point_args(&other, &lines[0], &[parse_sweep("reads=1").unwrap()], &["1".into()]).unwrap_err();
        assert!(e.contains("--reads is a flag of workload hekaton, not of sibench"), "{e}");
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }
}
