//! `multiverse compare`: runs a grid of benchmark points (protocol lines ×
//! swept parameter values × repeats), prints a table, and writes CSV, JSON
//! and a plot (SVG and PNG) of throughput against the swept parameter with
//! one series per protocol line, like the papers' figures. docs/COMPARE.md
//! has the usage and examples.
//!
//! The plot follows plot.rs's rules: a numeric sweep is lines with markers,
//! anything else (a mix, or the lines themselves when nothing is swept)
//! grouped bars; every legend entry names the level the line ran at
//! (`mv-occ / serializable`); with `--repeat` above 1 each point is the
//! median with a min–max error bar; the subtitle names every swept value
//! and every parameter that changed without being swept (TPC-C's
//! warehouses follow `--threads` unless `--warehouses` is given).
//!
//! The table, CSV and plot are made from the runs' JSON records alone
//! (`Comparison::from_records`), which PREFIX.json keeps, so
//! `multiverse report` (report_html.rs) rebuilds the same from that file.
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
    /// Runs of each point; the table and plot show the median (the plot with
    /// min–max error bars), the CSV also the low and high, the JSON every
    /// run. The machine is noisy: use 3 or more.
    #[arg(long, value_name = "K", default_value_t = 1, help_heading = "Comparison",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Write PREFIX.csv, PREFIX.json, PREFIX.svg and PREFIX.png (and
    /// PREFIX-breakdown.svg and .png with --breakdown)
    /// [default: bench-out/compare-WORKLOAD, or under $MULTIVERSE_OUT_DIR];
    /// `multiverse report DIR` makes an HTML page of the PREFIX.json files
    /// in DIR.
    #[arg(long, value_name = "PREFIX", help_heading = "Comparison")]
    pub out: Option<PathBuf>,
    /// Run nothing: redraw PREFIX.svg and PREFIX.png (and the breakdown
    /// plot, if the records have one) from the records of a finished
    /// comparison, PREFIX.json, under the current plot rules (--out
    /// writes them under another prefix). The CSV and JSON are left as
    /// they are.
    #[arg(long, value_name = "PREFIX.json", help_heading = "Comparison")]
    pub replot: Option<PathBuf>,
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

/// A point of the grid to run: sweep values (one per sweep) and a line.
struct Cell {
    values: Vec<String>,
    line: usize,
    /// The point's bench flags, as given to its `bench` process.
    argv: Vec<String>,
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

/// `threads=2 theta=0.5`.
fn point_text(sweeps: &[Sweep], values: &[String]) -> String {
    sweeps.iter().zip(values).map(|(s, v)| format!("{}={v}", s.name)).collect::<Vec<_>>().join(" ")
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
    if let Some(file) = &a.replot {
        return replot(file, &a, m);
    }
    // Everything is checked before anything runs.
    if a.bench.json.is_some() {
        return Err("--json applies to bench; compare writes every run to PREFIX.json (see --out)".into());
    }
    if a.bench.history.is_some() {
        return Err("--history applies to bench; use --verify to check every point's history".into());
    }
    for (flag, given) in [
        ("--config", a.bench.config.is_some()),
        ("--plot", a.bench.plot.is_some()),
        ("--latency-log", a.bench.latency_log.is_some()),
    ] {
        if given {
            return Err(format!("{flag} applies to bench; compare writes its records, table and plots under --out"));
        }
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
            // Refused here, before anything runs, rather than by a run.
            bench::resolve_isolation(args.isolation.as_deref(), line.protocol)?;
            cells.push(Cell { values: values.clone(), line: li, argv });
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
        sweeps
            .iter()
            .map(|s| format!("{}={}", s.name, s.values.join(list_sep(&s.values).trim())))
            .collect::<Vec<_>>()
            .join(" × ")
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
    let sweep_order: Vec<Value> = sweeps.iter().map(|s| Value::from(s.name.as_str())).collect();
    for rep in 0..repeat {
        for cell in &cells {
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
                // The sweep map's keys come back sorted; the report needs
                // to know which sweep is the x axis.
                c.insert("sweep_order".into(), Value::Array(sweep_order.clone()));
                o.insert("compare".into(), Value::Object(c));
            }
            records.push(rec);
        }
    }

    // Everything below reads the records, as `multiverse report` does, so
    // that the report shows exactly these tables and plots.
    let cmp = Comparison::from_records(records)?;
    print!("\n{}", table(&cmp));
    for n in cmp.implicit_changes() {
        println!("note: {n}");
    }
    let files = write_outputs(&prefix, &cmp)?;
    println!("\nwrote {}", files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
    Ok(())
}

/// `compare --replot FILE`: the plots of FILE's records, drawn again;
/// nothing runs. Flags that would shape a new run are refused.
fn replot(file: &Path, a: &CompareArgs, m: &ArgMatches) -> Result<(), String> {
    let typed = a.protocols.is_some()
        || !a.sweep.is_empty()
        || m.value_source("repeat") == Some(ValueSource::CommandLine)
        || !given_bench_flags(m)?.is_empty();
    if typed {
        return Err("--replot runs nothing: it takes only the JSON file and --out".into());
    }
    let records = crate::report_html::read_records(file)?;
    let cmp = Comparison::from_records(records).map_err(|e| format!("{}: {e}", file.display()))?;
    let prefix = match &a.out {
        Some(p) => p.clone(),
        None if file.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) => file.with_extension(""),
        None => file.to_path_buf(),
    };
    let files = write_plots(&prefix, &cmp)?;
    println!("wrote {}", files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
    Ok(())
}

/// What one run measured, read from its JSON record.
#[derive(Clone, Debug)]
pub(crate) struct RunSummary {
    pub tps: f64,
    /// Aborted share of attempts, in percent.
    pub abort_pct: f64,
    /// The latency percentiles the record has, in µs, by name, in order
    /// `p50`, `p90`, `p99`, ..., then `max`.
    pub latency: Vec<(String, f64)>,
    /// Worker CPU time over wall time × threads, when the record has them.
    pub cpu_share: Option<f64>,
    /// Where each committed transaction's time went, in ns, by component
    /// (the `all` entry of `breakdown_ns_per_txn`, in
    /// [`BREAKDOWN_ORDER`]); empty when the run had no `--breakdown`.
    pub breakdown: Vec<(String, f64)>,
}

/// The breakdown's components in stacking order; others follow, by name.
pub(crate) const BREAKDOWN_ORDER: [&str; 7] = ["useful", "abort", "index", "validation", "wait", "gc", "log-wait"];

/// A record's `breakdown_ns_per_txn.all`, components in [`BREAKDOWN_ORDER`].
fn breakdown_of(rec: &Value) -> Vec<(String, f64)> {
    let Value::Object(m) = &rec["breakdown_ns_per_txn"]["all"] else { return Vec::new() };
    let mut out: Vec<(String, f64)> = m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_f64()?))).collect();
    let rank = |k: &str| BREAKDOWN_ORDER.iter().position(|x| *x == k).unwrap_or(BREAKDOWN_ORDER.len());
    out.sort_by(|a, b| rank(&a.0).cmp(&rank(&b.0)).then_with(|| a.0.cmp(&b.0)));
    out
}

impl RunSummary {
    fn latency(&self, name: &str) -> Option<f64> {
        self.latency.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// The summary of a run from its JSON record: throughput, committed and
/// aborted are required, the rest is read where present.
fn summary(rec: &Value) -> Result<RunSummary, String> {
    let f = |v: &Value, name: &str| v.as_f64().ok_or_else(|| format!("the run's record lacks {name}"));
    let (committed, aborted) = (f(&rec["committed"], "committed")?, f(&rec["aborted"], "aborted")?);
    let mut latency: Vec<(String, f64)> = match &rec["latency_us"] {
        Value::Object(m) => m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_f64()?))).collect(),
        _ => Vec::new(),
    };
    // p50 < p90 < p99 < p99.9 < max, whatever order the map keeps.
    let rank = |k: &str| k.strip_prefix('p').and_then(|n| n.parse::<f64>().ok()).unwrap_or(f64::INFINITY);
    latency.sort_by(|a, b| rank(&a.0).total_cmp(&rank(&b.0)).then_with(|| a.0.cmp(&b.0)));
    let cpu_share = match (rec["cpu_s"].as_f64(), rec["duration_s"].as_f64(), rec["threads"].as_f64()) {
        (Some(cpu), Some(secs), Some(threads)) => Some(cpu / (secs * threads).max(1e-9)),
        _ => None,
    };
    Ok(RunSummary {
        tps: f(&rec["throughput_tps"], "throughput_tps")?,
        abort_pct: if committed + aborted == 0.0 { 0.0 } else { 100.0 * aborted / (committed + aborted) },
        latency,
        cpu_share,
        breakdown: breakdown_of(rec),
    })
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

/// A quantity plotted and tabulated per point.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Metric {
    Throughput,
    AbortPct,
    /// A latency percentile by its record name (`p99`, `max`).
    Latency(String),
}

impl Metric {
    pub fn of(&self, r: &RunSummary) -> Option<f64> {
        match self {
            Metric::Throughput => Some(r.tps),
            Metric::AbortPct => Some(r.abort_pct),
            Metric::Latency(p) => r.latency(p),
        }
    }

    /// The y axis: the quantity and its unit.
    pub fn axis(&self) -> String {
        match self {
            Metric::Throughput => "throughput (txn/s)".into(),
            Metric::AbortPct => "aborted share of attempts (%)".into(),
            Metric::Latency(p) => format!("{p} latency (µs)"),
        }
    }

    /// The quantity, for a title.
    pub fn name(&self) -> String {
        match self {
            Metric::Throughput => "throughput".into(),
            Metric::AbortPct => "abort rate".into(),
            Metric::Latency(p) => format!("{p} latency"),
        }
    }
}

/// One line of a finished comparison, as its records describe it.
#[derive(Clone, Debug)]
pub(crate) struct LineInfo {
    /// As given to `--protocols` (`mv-occ@snapshot`, `ssn+si`, `silo`).
    pub label: String,
    pub protocol: String,
    /// The level its runs ran at (given with `@`, by `--isolation`, or the
    /// protocol's default).
    pub isolation: String,
}

impl LineInfo {
    /// The line in legends and the report: protocol (with SSN's base) and
    /// the level it ran at, always, `mv-occ / serializable`.
    pub fn legend(&self) -> String {
        let name = self.label.split('@').next().unwrap_or(&self.label);
        format!("{name} / {}", self.isolation)
    }
}

/// A swept flag and its values, in the order given.
#[derive(Clone, Debug)]
pub(crate) struct Axis {
    pub name: String,
    pub values: Vec<String>,
}

/// A point of a finished comparison: its sweep values, its line, its runs.
#[derive(Clone, Debug)]
pub(crate) struct PointRuns {
    pub values: Vec<String>,
    pub line: usize,
    pub runs: Vec<RunSummary>,
}

impl PointRuns {
    /// The median of `m` over the runs that have it.
    pub fn median(&self, m: &Metric) -> Option<f64> {
        let mut v: Vec<f64> = self.runs.iter().filter_map(|r| m.of(r)).collect();
        (!v.is_empty()).then(|| median(&mut v))
    }

    /// The lowest and highest `m` over the runs.
    pub fn range(&self, m: &Metric) -> Option<(f64, f64)> {
        let v: Vec<f64> = self.runs.iter().filter_map(|r| m.of(r)).collect();
        let lo = v.iter().copied().reduce(f64::min)?;
        Some((lo, v.iter().copied().fold(lo, f64::max)))
    }

    fn plot_point(&self, m: &Metric) -> Option<plot::Point> {
        let (lo, hi) = self.range(m)?;
        Some(plot::Point { y: self.median(m)?, lo, hi })
    }

    /// Per breakdown component, the median over the runs that have it (in
    /// the order of the runs' components); empty when no run has one.
    pub fn breakdown(&self) -> Vec<(String, f64)> {
        let mut names: Vec<&String> = Vec::new();
        for (n, _) in self.runs.iter().flat_map(|r| &r.breakdown) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        names
            .into_iter()
            .map(|n| {
                let mut v: Vec<f64> = self
                    .runs
                    .iter()
                    .filter_map(|r| r.breakdown.iter().find(|(k, _)| k == n).map(|(_, v)| *v))
                    .collect();
                (n.clone(), median(&mut v))
            })
            .collect()
    }

    fn cpu_share(&self) -> Option<f64> {
        let mut v: Vec<f64> = self.runs.iter().filter_map(|r| r.cpu_share).collect();
        (!v.is_empty()).then(|| median(&mut v))
    }
}

/// A finished comparison, rebuilt from its JSON records alone: `compare`
/// makes its table, CSV and plot from it, and `multiverse report` makes
/// the same from the JSON file later.
#[derive(Clone, Debug)]
pub(crate) struct Comparison {
    /// The workload (several, comma-separated, if the records mix them).
    pub workload: String,
    /// In order of first appearance.
    pub lines: Vec<LineInfo>,
    /// The first is the x axis; values in order of first appearance.
    pub sweeps: Vec<Axis>,
    /// In grid order: the first sweep's values outermost, lines innermost.
    pub points: Vec<PointRuns>,
    pub records: Vec<Value>,
    /// Each record's sweep values (parallel to `records`).
    record_values: Vec<Vec<String>>,
}

/// A JSON value as text: strings without quotes.
fn json_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Comparison {
    /// Reads records of `compare` (with their `compare` object: line,
    /// sweep values, `sweep_order`) or plain `bench --json` records (each
    /// its protocol at its level, no sweep).
    pub fn from_records(records: Vec<Value>) -> Result<Comparison, String> {
        let first = records.first().ok_or("no benchmark records")?;
        let meta = &first["compare"];
        let sweep_names: Vec<String> = match (&meta["sweep_order"], &meta["sweep"]) {
            (Value::Array(a), _) => a.iter().map(json_text).collect(),
            (_, Value::Object(m)) => m.keys().cloned().collect(),
            _ => Vec::new(),
        };
        let mut sweeps: Vec<Axis> = sweep_names.iter().map(|n| Axis { name: n.clone(), values: Vec::new() }).collect();
        let mut lines: Vec<LineInfo> = Vec::new();
        let mut points: Vec<PointRuns> = Vec::new();
        let mut workloads: Vec<String> = Vec::new();
        let mut record_values = Vec::with_capacity(records.len());
        for (i, rec) in records.iter().enumerate() {
            let ctx = |e: String| format!("record {} of {}: {e}", i + 1, records.len());
            if !rec.is_object() {
                return Err(ctx("not a JSON object".into()));
            }
            let field = |k: &str| rec[k].as_str().map(str::to_string).ok_or_else(|| ctx(format!("no {k}")));
            let (protocol, isolation, workload) = (field("protocol")?, field("isolation")?, field("workload")?);
            let run = summary(rec).map_err(ctx)?;
            if !workloads.contains(&workload) {
                workloads.push(workload);
            }
            let label =
                rec["compare"]["line"].as_str().map_or_else(|| format!("{protocol}@{isolation}"), str::to_string);
            let line = match lines.iter().position(|l| l.label == label) {
                Some(l) => l,
                None => {
                    lines.push(LineInfo { label, protocol, isolation });
                    lines.len() - 1
                }
            };
            let mut values = Vec::with_capacity(sweeps.len());
            for s in sweeps.iter_mut() {
                let v = match &rec["compare"]["sweep"][&s.name] {
                    Value::Null => return Err(ctx(format!("no value of the swept {}", s.name))),
                    v => json_text(v),
                };
                if !s.values.contains(&v) {
                    s.values.push(v.clone());
                }
                values.push(v);
            }
            match points.iter_mut().find(|p| p.line == line && p.values == values) {
                Some(p) => p.runs.push(run),
                None => points.push(PointRuns { values: values.clone(), line, runs: vec![run] }),
            }
            record_values.push(values);
        }
        // Grid order, whatever order the records came in.
        let key = |p: &PointRuns| {
            let mut k: Vec<usize> =
                p.values.iter().zip(&sweeps).map(|(v, s)| s.values.iter().position(|x| x == v).unwrap_or(0)).collect();
            k.push(p.line);
            k
        };
        points.sort_by_key(key);
        Ok(Comparison { workload: workloads.join(", "), lines, sweeps, points, records, record_values })
    }

    /// Most runs of a point.
    pub fn repeats(&self) -> usize {
        self.points.iter().map(|p| p.runs.len()).max().unwrap_or(0)
    }

    /// Fewest runs of a point.
    fn min_repeats(&self) -> usize {
        self.points.iter().map(|p| p.runs.len()).min().unwrap_or(0)
    }

    /// The grid's rows: every combination of sweep values (one empty row
    /// without a sweep), first sweep outermost.
    pub fn grid(&self) -> Vec<Vec<String>> {
        let mut rows = vec![Vec::new()];
        for s in &self.sweeps {
            rows =
                rows.iter().flat_map(|r| s.values.iter().map(move |v| [r.clone(), vec![v.clone()]].concat())).collect();
        }
        rows
    }

    pub fn point(&self, values: &[String], line: usize) -> Option<&PointRuns> {
        self.points.iter().find(|p| p.line == line && p.values == values)
    }

    /// The latency percentiles some run has, in order.
    pub fn latencies(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.points.iter().flat_map(|p| &p.runs) {
            for (n, _) in &r.latency {
                if !out.contains(n) {
                    out.push(n.clone());
                }
            }
        }
        out
    }

    /// Whether a record field or workload parameter `key` is what sweep
    /// `name` sets (flags are spelled with '-', parameters with '_').
    fn swept(&self, key: &str) -> bool {
        let norm = |s: &str| s.replace('-', "_");
        self.sweeps
            .iter()
            .any(|s| norm(&s.name) == norm(key) || (s.name == "duration" && key == "duration_requested_s"))
    }

    /// Each record's workload parameter `key` (None where it lacks it).
    fn param(&self, key: &str) -> Vec<Option<&Value>> {
        self.records.iter().map(|r| r.get("params").and_then(|p| p.get(key))).collect()
    }

    /// The workload parameters in order of first appearance.
    fn param_names(&self) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        for r in &self.records {
            if let Some(Value::Object(p)) = r.get("params") {
                for k in p.keys() {
                    if !keys.contains(k) {
                        keys.push(k.clone());
                    }
                }
            }
        }
        keys
    }

    /// `key=value` for each workload parameter that is the same in every run
    /// and not swept.
    pub fn constant_params(&self) -> Vec<String> {
        let mut out = Vec::new();
        for k in self.param_names() {
            let vals = self.param(&k);
            if !self.swept(&k) && vals[0].is_some() && vals.iter().all(|v| *v == vals[0]) {
                out.push(format!("{k}={}", vals[0].map(json_text).unwrap_or_default()));
            }
        }
        out
    }

    /// Every parameter that changes between runs though no sweep names it:
    /// one sentence each. TPC-C's warehouses is the case in point: without
    /// `--warehouses` it follows `--threads` (bench/wl/tpcc.rs), so a
    /// threads sweep is also a warehouses sweep.
    pub fn implicit_changes(&self) -> Vec<String> {
        let mut fields: Vec<(String, Vec<Option<&Value>>)> =
            self.param_names().into_iter().map(|k| (k.clone(), self.param(&k))).collect();
        for k in ["threads", "duration_requested_s"] {
            fields.push((k.to_string(), self.records.iter().map(|r| r.get(k)).collect()));
        }
        let mut out = Vec::new();
        for (key, vals) in fields {
            if self.swept(&key) || vals.iter().all(|v| *v == vals[0]) {
                continue;
            }
            let text = |v: &Option<&Value>| v.map_or_else(|| "(none)".to_string(), json_text);
            let flag = key.replace('_', "-");
            let fix = if PointCli::command().get_arguments().any(|a| a.get_long() == Some(flag.as_str())) {
                format!("; --{flag} holds it fixed")
            } else {
                String::new()
            };
            // Does the first sweep's value decide it?
            let by_x = self.sweeps.first().and_then(|x| {
                let mut seen: Vec<(&String, String)> = Vec::new();
                for (vals_of_run, v) in self.record_values.iter().zip(&vals) {
                    match seen.iter().find(|(xv, _)| *xv == &vals_of_run[0]) {
                        Some((_, w)) if *w != text(v) => return None,
                        Some(_) => {}
                        None => seen.push((&vals_of_run[0], text(v))),
                    }
                }
                let ordered: Vec<&str> = x
                    .values
                    .iter()
                    .filter_map(|xv| seen.iter().find(|(s, _)| *s == xv).map(|(_, w)| w.as_str()))
                    .collect();
                Some((x, ordered.join(", ")))
            });
            out.push(match by_x {
                Some((x, list)) => format!(
                    "{key} follows {} (not swept): {key} = {list} at {} = {}{fix}",
                    x.name,
                    x.name,
                    x.values.join(", ")
                ),
                None => {
                    let mut distinct: Vec<String> = Vec::new();
                    for v in &vals {
                        if !distinct.contains(&text(v)) {
                            distinct.push(text(v));
                        }
                    }
                    format!("{key} changes between runs (not swept): {}{fix}", distinct.join(", "))
                }
            });
        }
        out
    }

    /// Distinct values of a record field across the runs, comma-separated.
    pub fn field_values(&self, key: &str) -> Option<String> {
        let mut distinct: Vec<String> = Vec::new();
        for v in self.records.iter().filter_map(|r| r.get(key)) {
            if !distinct.contains(&json_text(v)) {
                distinct.push(json_text(v));
            }
        }
        (!distinct.is_empty()).then(|| distinct.join(", "))
    }

    /// The error bars' meaning, or none for single runs.
    pub fn repeats_text(&self) -> String {
        let (lo, hi) = (self.min_repeats(), self.repeats());
        let k = if lo == hi { hi.to_string() } else { format!("{lo}–{hi}") };
        if hi > 1 {
            format!("median of {k} runs per point; error bars: min–max of the runs")
        } else {
            "one run per point (no error bars)".into()
        }
    }
}

/// The table: one row per point (sweep values), per line the median
/// throughput and abort share.
fn table(cmp: &Comparison) -> String {
    let key_w: Vec<usize> =
        cmp.sweeps.iter().map(|s| s.values.iter().map(String::len).chain([s.name.len()]).max().unwrap_or(1)).collect();
    let col_w = cmp.lines.iter().map(|l| l.label.len()).max().unwrap_or(0).max(22);
    let repeat = cmp.repeats();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "throughput in txn/s and aborted share of attempts{}",
        if repeat > 1 { format!(", median of {repeat} runs") } else { String::new() }
    );
    let mut head = String::new();
    let mut sub = String::new();
    for (sw, w) in cmp.sweeps.iter().zip(&key_w) {
        let _ = write!(head, "{:<w$}  ", sw.name);
        let _ = write!(sub, "{:<w$}  ", "");
    }
    for l in &cmp.lines {
        let _ = write!(head, " {:>col_w$}", l.label);
        let _ = write!(sub, " {:>w$} {:>8}", "txn/s", "abort %", w = col_w - 9);
    }
    let _ = writeln!(s, "{}", head.trim_end());
    let _ = writeln!(s, "{}", sub.trim_end());
    let _ = writeln!(s, "{}", "-".repeat(head.trim_end().len()));
    for values in cmp.grid() {
        let mut r = String::new();
        for (v, w) in values.iter().zip(&key_w) {
            let _ = write!(r, "{v:<w$}  ");
        }
        for li in 0..cmp.lines.len() {
            let w = col_w - 9;
            match cmp.point(&values, li) {
                Some(p) => {
                    let tps = crate::bench::report::int(p.median(&Metric::Throughput).unwrap_or(0.0) as u64);
                    let _ = write!(r, " {tps:>w$} {:>7.2}%", p.median(&Metric::AbortPct).unwrap_or(0.0));
                }
                None => {
                    let _ = write!(r, " {:>w$} {:>8}", "-", "-");
                }
            }
        }
        let _ = writeln!(s, "{}", r.trim_end());
    }
    s
}

/// Writes PREFIX.csv, .json, .svg and .png; returns their paths.
fn write_outputs(prefix: &Path, cmp: &Comparison) -> Result<Vec<PathBuf>, String> {
    let write = |path: &Path, text: String| {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    // CSV: one row per point and line.
    let mut text = String::from("workload");
    for s in &cmp.sweeps {
        let _ = write!(text, ",{}", csv(&s.name));
    }
    text.push_str(
        ",line,protocol,isolation,runs,throughput_tps,throughput_min_tps,throughput_max_tps,abort_pct,p50_us,p99_us,cpu_share\n",
    );
    let opt = |v: Option<f64>, digits: usize| v.map(|v| format!("{v:.digits$}")).unwrap_or_default();
    for p in &cmp.points {
        let line = &cmp.lines[p.line];
        let (lo, hi) = p.range(&Metric::Throughput).unwrap_or((f64::NAN, f64::NAN));
        let _ = write!(text, "{}", csv(&cmp.workload));
        for v in &p.values {
            let _ = write!(text, ",{}", csv(v));
        }
        let _ = writeln!(
            text,
            ",{},{},{},{},{},{lo:.1},{hi:.1},{},{},{},{}",
            csv(&line.label),
            csv(&line.protocol),
            csv(&line.isolation),
            p.runs.len(),
            opt(p.median(&Metric::Throughput), 1),
            opt(p.median(&Metric::AbortPct), 4),
            opt(p.median(&Metric::Latency("p50".into())), 2),
            opt(p.median(&Metric::Latency("p99".into())), 2),
            opt(p.cpu_share(), 3),
        );
    }
    let csv_path = with_ext(prefix, "csv");
    write(&csv_path, text)?;

    let json_path = with_ext(prefix, "json");
    let text = serde_json::to_string_pretty(&cmp.records).map_err(|e| format!("cannot encode JSON: {e}"))?;
    write(&json_path, text + "\n")?;

    let mut files = vec![csv_path, json_path];
    files.extend(write_plots(prefix, cmp)?);
    Ok(files)
}

/// The breakdown's bars: one per point that has one (grid order), labelled
/// by its line and sweep values (`silo / serializable, theta=0.9`), the
/// components' medians over the point's runs. Empty when no record has
/// `breakdown_ns_per_txn`.
pub(crate) fn breakdown_rows(cmp: &Comparison) -> Vec<(String, Vec<(String, f64)>)> {
    let mut rows = Vec::new();
    for p in &cmp.points {
        let parts = p.breakdown();
        if parts.is_empty() {
            continue;
        }
        let mut label = cmp.lines[p.line].legend();
        for (s, v) in cmp.sweeps.iter().zip(&p.values) {
            let _ = write!(label, ", {}={v}", s.name);
        }
        rows.push((label, parts));
    }
    rows
}

/// The breakdown plot's title and subtitle (lines separated by `\n`).
pub(crate) fn breakdown_text(cmp: &Comparison) -> (String, String) {
    let title = format!("{}: where each committed transaction's time went", cmp.workload);
    let mut lines = vec![format!(
        "ns per committed transaction (all types), {}",
        if cmp.repeats() > 1 { "each component the median over a point's runs" } else { "one run per point" }
    )];
    // The notes of the other plots, less their axes and error bars.
    lines.extend(notes(cmp).into_iter().map(|n| {
        [" (x axis)", " (one series each)", "; error bars: min–max of the runs", " (no error bars)"]
            .iter()
            .fold(n, |n, cut| n.replace(cut, ""))
    }));
    (title, lines.join("\n"))
}

/// The unit of the breakdown plot's axis.
pub(crate) const BREAKDOWN_UNIT: &str = "ns per committed transaction";

/// Writes `PREFIX-breakdown.svg` and `.png` when the records have a
/// breakdown; returns their paths (none without one).
fn write_breakdown(prefix: &Path, cmp: &Comparison) -> Result<Vec<PathBuf>, String> {
    let rows = breakdown_rows(cmp);
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let (title, subtitle) = breakdown_text(cmp);
    let mut base = prefix.as_os_str().to_owned();
    base.push("-breakdown");
    let base = PathBuf::from(base);
    let mut out = Vec::new();
    for ext in ["svg", "png"] {
        let path = with_ext(&base, ext);
        plot::breakdown_in(&path, &title, &subtitle, BREAKDOWN_UNIT, &rows)?;
        out.push(path);
    }
    Ok(out)
}

/// Writes the plots of `cmp` (PREFIX.svg, .png and, with a breakdown,
/// PREFIX-breakdown.svg and .png); returns their paths.
fn write_plots(prefix: &Path, cmp: &Comparison) -> Result<Vec<PathBuf>, String> {
    let mut out: Vec<PathBuf> = plot::write(&chart(cmp, &Metric::Throughput), prefix)?.into();
    out.extend(write_breakdown(prefix, cmp)?);
    Ok(out)
}

/// The plot of `metric`: x is the first sweep's values (or the workload,
/// with no sweep); one series per line (and per value of a second sweep),
/// named with the line's isolation level. Numeric x values make lines,
/// others grouped bars (plot.rs).
pub(crate) fn chart(cmp: &Comparison, metric: &Metric) -> plot::Chart {
    let (x_name, x, series) = match cmp.sweeps.as_slice() {
        [] => (
            "workload".to_string(),
            vec![cmp.workload.clone()],
            cmp.lines
                .iter()
                .enumerate()
                .map(|(li, l)| plot::Series {
                    name: l.legend(),
                    points: vec![cmp.point(&[], li).and_then(|p| p.plot_point(metric))],
                })
                .collect(),
        ),
        [s, rest @ ..] => {
            let mut series = Vec::new();
            let inner: Vec<Option<&String>> = match rest {
                [t] => t.values.iter().map(Some).collect(),
                _ => vec![None],
            };
            for (li, line) in cmp.lines.iter().enumerate() {
                for v2 in &inner {
                    let name = match v2 {
                        Some(v) => format!("{}, {}={v}", line.legend(), rest[0].name),
                        None => line.legend(),
                    };
                    let points = s
                        .values
                        .iter()
                        .map(|v1| {
                            cmp.points
                                .iter()
                                .find(|p| p.line == li && p.values[0] == *v1 && v2.is_none_or(|v2| p.values[1] == *v2))
                                .and_then(|p| p.plot_point(metric))
                        })
                        .collect();
                    series.push(plot::Series { name, points });
                }
            }
            (s.name.clone(), s.values.clone(), series)
        }
    };
    let title = if cmp.sweeps.is_empty() {
        format!("{}: {} by protocol and isolation level", cmp.workload, metric.name())
    } else {
        format!("{}: {} vs {x_name}", cmp.workload, metric.name())
    };
    plot::Chart { title, notes: notes(cmp), x_name, y_name: metric.axis(), x, series }
}

/// How to list values: `, `, or `; ` when a value has a comma (mixes).
fn list_sep(values: &[String]) -> &'static str {
    if values.iter().any(|v| v.contains(',')) {
        "; "
    } else {
        ", "
    }
}

/// What every sweep changes: `threads = 1, 2, 4 (x axis); reads = 1, 5
/// (one series each)`; None without a sweep.
pub(crate) fn swept_text(cmp: &Comparison) -> Option<String> {
    let parts: Vec<String> = cmp
        .sweeps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let role = if i == 0 { "x axis" } else { "one series each" };
            format!("{} = {} ({role})", s.name, s.values.join(list_sep(&s.values)))
        })
        .collect();
    (!parts.is_empty()).then(|| format!("swept: {}", parts.join("; ")))
}

/// The notes under a plot's title: what the sweeps change, what changed
/// with them without being swept, what was the same in every run
/// (workload parameters, threads, isolation, duration), how many runs a
/// point is and what the error bars mean, and the commit.
fn notes(cmp: &Comparison) -> Vec<String> {
    let mut out: Vec<String> = swept_text(cmp).into_iter().collect();
    out.extend(cmp.implicit_changes());
    // The parameters, in lines short enough for the title band.
    let mut line = String::new();
    for p in cmp.constant_params() {
        if line.len() + p.len() > 110 {
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
    let mut run = Vec::new();
    let same = |key: &str| cmp.field_values(key).filter(|v| !v.contains(", "));
    if let Some(t) = same("threads").filter(|_| !cmp.swept("threads")) {
        run.push(crate::bench::report::threads(t.parse().unwrap_or(0)));
    }
    if let Some(l) = same("isolation") {
        run.push(format!("isolation {l}"));
    }
    if let Some(d) = same("duration_requested_s").filter(|_| !cmp.swept("duration")) {
        run.push(format!("{d} s per run"));
    }
    run.push(cmp.repeats_text());
    run.push(format!("commit {}", cmp.field_values("git_commit").unwrap_or_else(|| "unknown".into())));
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

    /// A record as `compare` writes it (the fields the model reads).
    fn rec(line: &str, isolation: &str, sweep: &[(&str, &str)], tps: f64, warehouses: u64) -> Value {
        let names: Vec<&str> = sweep.iter().map(|(n, _)| *n).collect();
        let values: Map<String, Value> = sweep.iter().map(|(n, v)| (n.to_string(), Value::from(*v))).collect();
        serde_json::json!({
            "protocol": line.split(['@', '+']).next().unwrap(), "isolation": isolation, "workload": "tpcc",
            "params": {"warehouses": warehouses, "mix": "new-order:100"},
            "threads": 2, "duration_requested_s": 1.0, "committed": 90, "aborted": 10, "throughput_tps": tps,
            "latency_us": {"max": 9.0, "p99.9": 5.0, "p50": 1.0, "p99": 4.0},
            "git_commit": "abc1234",
            "compare": {"line": line, "sweep": values, "sweep_order": names, "repeat": 1}
        })
    }

    #[test]
    fn comparisons_are_rebuilt_from_records() {
        // Out of grid order, a second sweep whose name sorts first, repeats.
        let recs = vec![
            rec("silo", "serializable", &[("warehouses", "2"), ("mix", "a")], 200.0, 2),
            rec("silo", "serializable", &[("warehouses", "1"), ("mix", "b")], 150.0, 1),
            rec("silo", "serializable", &[("warehouses", "1"), ("mix", "a")], 100.0, 1),
            rec("mv-occ@snapshot", "snapshot", &[("warehouses", "1"), ("mix", "a")], 80.0, 1),
            rec("silo", "serializable", &[("warehouses", "1"), ("mix", "a")], 120.0, 1),
        ];
        let c = Comparison::from_records(recs).unwrap();
        assert_eq!(c.sweeps.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["warehouses", "mix"]);
        assert_eq!(c.sweeps[0].values, ["2", "1"], "values in order of first appearance");
        assert_eq!(
            c.lines.iter().map(|l| l.legend()).collect::<Vec<_>>(),
            ["silo / serializable", "mv-occ / snapshot"]
        );
        let order: Vec<(String, usize)> = c.points.iter().map(|p| (p.values.join(" "), p.line)).collect();
        let want = [("2 a", 0), ("1 a", 0), ("1 a", 1), ("1 b", 0)];
        assert_eq!(order, want.map(|(v, l)| (v.to_string(), l)));
        let p = c.point(&["1".into(), "a".into()], 0).unwrap();
        assert_eq!(
            (p.runs.len(), p.median(&Metric::Throughput), p.range(&Metric::Throughput)),
            (2, Some(110.0), Some((100.0, 120.0)))
        );
        assert_eq!(p.median(&Metric::AbortPct), Some(10.0));
        assert_eq!(c.latencies(), ["p50", "p99", "p99.9", "max"]);
        assert_eq!((c.repeats(), c.grid().len()), (2, 4));
        assert!(c.repeats_text().contains("median of 1–2 runs"), "{}", c.repeats_text());
        assert_eq!(swept_text(&c).unwrap(), "swept: warehouses = 2, 1 (x axis); mix = a, b (one series each)");
        assert_eq!(list_sep(&["a:1,b:2".into(), "a:2".into()]), "; ", "mixes have commas");
        // warehouses is swept here: nothing implicit.
        assert!(c.implicit_changes().is_empty(), "{:?}", c.implicit_changes());
        assert!(c.constant_params().is_empty(), "both parameters are swept: {:?}", c.constant_params());
    }

    #[test]
    fn implicit_changes_are_named() {
        let recs: Vec<Value> = [1u64, 2, 4]
            .iter()
            .flat_map(|&t| {
                let v = t.to_string();
                [
                    rec("silo", "serializable", &[("threads", &v)], 1.0, t),
                    rec("ssn+si", "serializable", &[("threads", &v)], 1.0, t),
                ]
            })
            .collect();
        let c = Comparison::from_records(recs).unwrap();
        assert_eq!(
            c.implicit_changes(),
            ["warehouses follows threads (not swept): warehouses = 1, 2, 4 at threads = 1, 2, 4; --warehouses holds it fixed"]
        );
        let ch = chart(&c, &Metric::Throughput);
        assert!(!plot::is_categorical(&ch.x));
        assert_eq!(
            ch.series.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["silo / serializable", "ssn+si / serializable"]
        );
        assert_eq!(ch.notes[0], "swept: threads = 1, 2, 4 (x axis)");
        assert!(ch.notes[1].starts_with("warehouses follows threads"), "{:?}", ch.notes);
        assert!(ch.notes.last().unwrap().contains("one run per point") && ch.notes.last().unwrap().contains("abc1234"));
        assert!(ch.notes.iter().any(|n| n.contains("isolation serializable")));

        // Not decided by the x value: said so, with its values.
        let mut recs = vec![rec("silo", "serializable", &[("threads", "1")], 1.0, 1)];
        recs.push(rec("silo", "serializable", &[("threads", "1")], 1.0, 3));
        let c = Comparison::from_records(recs).unwrap();
        assert_eq!(
            c.implicit_changes(),
            ["warehouses changes between runs (not swept): 1, 3; --warehouses holds it fixed"]
        );

        // No sweep: the lines are the categories, one bar each.
        let c = Comparison::from_records(vec![rec("silo", "serializable", &[], 5.0, 1)]).unwrap();
        let ch = chart(&c, &Metric::AbortPct);
        assert!(plot::is_categorical(&ch.x) && ch.x == ["tpcc"]);
        assert_eq!(ch.series[0].name, "silo / serializable");
        assert_eq!(ch.y_name, "aborted share of attempts (%)");
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }
}
