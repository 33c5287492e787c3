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
use crate::cli::Failure;
use crate::plot;
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser};
use multiverse::{Isolation, Protocol};
use serde_json::{Map, Value};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What names the default output directory (`bench-out` without it).
const OUT_DIR_ENV: &str = "MULTIVERSE_OUT_DIR";

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
    /// they are. A PREFIX.csv (for comparisons whose JSON was not kept)
    /// gives each point's median and low–high range, not its runs.
    #[arg(long, value_name = "PREFIX.json|PREFIX.csv", help_heading = "Comparison")]
    pub replot: Option<PathBuf>,
    /// With --replot: a line for the plot's subtitle, such as a parameter
    /// that followed the sweep, which a CSV cannot tell (repeatable).
    #[arg(long, value_name = "TEXT", requires = "replot", help_heading = "Comparison")]
    pub note: Vec<String>,
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
    /// `None`: a ceiling (`none` or `bare`, named by the label), or
    /// another store (`peer`).
    protocol: Option<Protocol>,
    /// Another embedded store (`bench --protocol surrealmx`, ...).
    peer: Option<&'static str>,
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
        if let Some(k) = bench::ceiling::Kind::parse(p) {
            let (name, what) = (k.name(), k.what());
            if l.is_some() || base.is_some() {
                return Err(format!("--protocols '{item}': {name} ({what}) takes no @level and no +base"));
            }
            if lines.iter().any(|x| x.label == name) {
                return Err(format!("--protocols: '{name}' is given twice"));
            }
            let label = name.to_string();
            lines.push(Line { protocol: None, peer: None, base: None, read_mostly: false, isolation: None, label });
            continue;
        }
        if bench::peers::is_peer(p) {
            if base.is_some() {
                return Err(format!("--protocols '{item}': store {p} takes no +base"));
            }
            let (level, _) =
                bench::peers::resolve_level(p, l.or(default_isolation)).map_err(|e| format!("--protocols: {e}"))?;
            let peer = multiverse_peers::names().iter().copied().find(|n| *n == p).expect("a peer's name");
            let isolation = l.map(|_| level);
            let label = match isolation {
                Some(l) => format!("{peer}@{}", l.name()),
                None => peer.to_string(),
            };
            if lines.iter().any(|x| x.label == label) {
                return Err(format!("--protocols: '{label}' is given twice"));
            }
            lines.push(Line { protocol: None, peer: Some(peer), base: None, read_mostly: false, isolation, label });
            continue;
        }
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
        lines.push(Line { protocol: Some(protocol), peer: None, base, read_mostly, isolation, label });
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
            || (id == "isolation" && (line.isolation.is_some() || (line.protocol.is_none() && line.peer.is_none())))
            || (id == "base" && line.base.is_some())
            || (id == "read_mostly_age" && !line.read_mostly)
            || sweeps.iter().any(|s| s.id == id)
    };
    let mut argv = vec!["multiverse compare".to_string()];
    argv.extend(base.iter().filter(|(id, _)| !replaced(id)).map(|(_, a)| a.clone()));
    let name = match (line.protocol, line.peer) {
        (Some(p), _) => p.name(),
        (None, Some(peer)) => peer,
        // A ceiling: its label is its name.
        (None, None) => line.label.as_str(),
    };
    argv.push(format!("--protocol={name}"));
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
    let m = crate::cli::negative_values(PointCli::command()).try_get_matches_from(&argv).map_err(|e| clap_line(&e))?;
    let args = PointCli::from_arg_matches(&m).map_err(|e| clap_line(&e))?.b;
    let workload = multiverse_workloads::Kind::parse(&args.workload)?;
    bench::dispatch::refuse_foreign_flags(&args, workload)?;
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
/// (to read back the bench flags the user typed). Everything is checked
/// before anything runs: a failure before the first run is a usage error.
pub fn run(a: CompareArgs, m: &ArgMatches) -> Result<(), Failure> {
    let mut started = false;
    let r = match &a.replot {
        Some(file) => replot(file, &a, m, &mut started),
        None => compare(&a, m, &mut started),
    };
    r.map_err(|e| Failure::by_phase(e, started))
}

/// [`run`] without `--replot`; sets `started` when the first run starts.
fn compare(a: &CompareArgs, m: &ArgMatches, started: &mut bool) -> Result<(), String> {
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
            if let Some(p) = line.protocol {
                bench::resolve_isolation(args.isolation.as_deref(), p)?;
            }
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
    // The default output directory is created (not its parents) once the
    // runs start; a directory given with --out must exist.
    let default_dir = a.out.is_none().then(plot::out_dir);
    if prefix.file_name().is_none() {
        return Err(format!("--out '{}' names no file prefix", prefix.display()));
    }
    match &default_dir {
        Some(d) => crate::cli::check_parent(OUT_DIR_ENV, d)?,
        None => crate::cli::check_parent("--out", &prefix)?,
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
    // Durable runs each need a new data directory: one per run under the
    // one given, which must be empty; a run's directory is removed after
    // the run succeeded and kept, named in the error, when it failed.
    let data_dir = a.bench.data_dir.clone();
    if let Some(d) = &data_dir {
        crate::cli::create_output_dir("--data-dir", d)?;
        let empty = std::fs::read_dir(d).map_err(|e| format!("--data-dir {}: {e}", d.display()))?.next().is_none();
        if !empty {
            return Err(format!(
                "--data-dir {}: not empty (compare makes a new directory there for every run)",
                d.display()
            ));
        }
    }
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
    *started = true;
    if let Some(d) = &default_dir {
        crate::cli::create_output_dir(OUT_DIR_ENV, d)?;
    }
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
            let run_dir = data_dir.as_ref().map(|d| d.join(format!("run-{done}")));
            let argv: Vec<String> = match &run_dir {
                Some(r) => {
                    cell.argv
                        .iter()
                        .map(|x| {
                            if x.starts_with("--data-dir=") {
                                format!("--data-dir={}", r.display())
                            } else {
                                x.clone()
                            }
                        })
                        .collect()
                }
                None => cell.argv.clone(),
            };
            let mut rec = run_point(&argv, show, done).map_err(|e| match &run_dir {
                Some(r) => format!("{what}: {e} (its data directory is kept: {})", r.display()),
                None => format!("{what}: {e}"),
            })?;
            if let Some(r) = &run_dir {
                std::fs::remove_dir_all(r).map_err(|e| format!("{what}: cannot remove {}: {e}", r.display()))?;
            }
            let sum = summary(&rec).map_err(|e| format!("{what}: {e}"))?;
            if show {
                eprintln!(
                    "[{done}/{total}] {what}: {} txn/s, {:.2}% aborted",
                    crate::bench::units::int(sum.tps as u64),
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
fn replot(file: &Path, a: &CompareArgs, m: &ArgMatches, started: &mut bool) -> Result<(), String> {
    let typed = a.protocols.is_some()
        || !a.sweep.is_empty()
        || m.value_source("repeat") == Some(ValueSource::CommandLine)
        || !given_bench_flags(m)?.is_empty();
    if typed {
        return Err("--replot runs nothing: it takes only the JSON file and --out".into());
    }
    if let Some(out) = &a.out {
        crate::cli::check_parent("--out", out)?;
    }
    *started = true;
    let is_ext = |x: &str| file.extension().is_some_and(|e| e.eq_ignore_ascii_case(x));
    let in_file = |e: String| format!("{}: {e}", file.display());
    let mut cmp = if is_ext("csv") {
        let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        Comparison::from_csv(&text).map_err(in_file)?
    } else {
        Comparison::from_records(read_records(file)?).map_err(in_file)?
    };
    cmp.given_notes.extend(a.note.iter().cloned());
    let prefix = match &a.out {
        Some(p) => p.clone(),
        None if is_ext("json") || is_ext("csv") => file.with_extension(""),
        None => file.to_path_buf(),
    };
    let files = write_plots(&prefix, &cmp)?;
    println!("wrote {}", files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
    Ok(())
}

mod model;
mod output;
#[cfg(test)]
mod tests;

pub(crate) use model::*;
pub(crate) use output::*;
