//! `multiverse compare` and the default comparison's plot, run as a user
//! would: the real binary, tiny tables, short runs, files in a temporary
//! directory.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn multiverse(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_multiverse"));
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the multiverse binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `compare` on a tiny hekaton table with short runs, plus `args`.
fn compare(args: &[&str], out: &Path) -> Output {
    let mut all = vec!["compare", "--workload", "hekaton", "--rows", "1000", "--duration", "0.2", "--threads", "1"];
    all.extend_from_slice(args);
    multiverse(&all, &[("MULTIVERSE_OUT_DIR", out)])
}

/// Parses a CSV without quoted fields (none are expected here).
fn csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let body = std::fs::read_to_string(path).unwrap();
    let mut rows = body.lines().map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>());
    let header = rows.next().expect("a header");
    let rows: Vec<_> = rows.collect();
    for r in &rows {
        assert_eq!(r.len(), header.len(), "row {r:?} against header {header:?}");
    }
    (header, rows)
}

fn col<'a>(header: &[String], row: &'a [String], name: &str) -> &'a str {
    let i = header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name} in {header:?}"));
    &row[i]
}

/// Checks that an SVG document is well-formed XML as plotters writes it:
/// one root element, tags properly nested and closed, quoted attributes,
/// no stray `<` and only the XML entities.
fn well_formed(svg: &str) -> Result<(), String> {
    let mut rest = svg.trim();
    if let Some(r) = rest.strip_prefix("<?xml") {
        rest = &r[r.find("?>").ok_or("unclosed XML declaration")? + 2..];
    }
    let mut stack: Vec<&str> = Vec::new();
    let mut roots = 0;
    let entities = |t: &str| -> Result<(), String> {
        for (i, _) in t.match_indices('&') {
            let e = &t[i..];
            if !["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#"].iter().any(|x| e.starts_with(x)) {
                return Err(format!("bad entity at {:?}", &e[..e.len().min(12)]));
            }
        }
        Ok(())
    };
    while let Some(i) = rest.find('<') {
        let before = &rest[..i];
        entities(before)?;
        if stack.is_empty() && !before.trim().is_empty() {
            return Err(format!("text outside the root: {before:?}"));
        }
        let end = i + rest[i..].find('>').ok_or("unclosed tag")?;
        let tag = &rest[i + 1..end];
        if tag.contains('<') || tag.matches('"').count() % 2 == 1 {
            return Err(format!("malformed tag <{tag}>"));
        }
        entities(tag)?;
        if let Some(close) = tag.strip_prefix('/') {
            match stack.pop() {
                Some(open) if open == name(close) => {}
                other => return Err(format!("</{close}> closes {other:?}")),
            }
        } else {
            if stack.is_empty() {
                roots += 1;
            }
            if !tag.ends_with('/') {
                stack.push(name(tag));
            }
        }
        rest = &rest[end + 1..];
    }
    if !rest.trim().is_empty() || !stack.is_empty() || roots != 1 {
        return Err(format!("unclosed {stack:?}, {roots} roots, trailing {rest:?}"));
    }
    Ok(())
}

/// The element name of a tag's inside (`svg x="1"` -> `svg`).
fn name(tag: &str) -> &str {
    tag.split(|c: char| c.is_whitespace() || c == '/').find(|s| !s.is_empty()).unwrap_or("")
}

/// The PNG signature and the IHDR's width and height.
fn png_size(path: &Path) -> (u32, u32) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "{} is not a PNG", path.display());
    assert_eq!(&b[12..16], b"IHDR");
    let be = |r: std::ops::Range<usize>| u32::from_be_bytes(b[r].try_into().unwrap());
    assert!(b.len() > 5_000, "a drawn plot is more than a blank image: {} bytes", b.len());
    (be(16..20), be(20..24))
}

#[test]
fn the_svg_checker_can_fail() {
    assert!(well_formed("<svg><text>a &amp; b</text><line/></svg>").is_ok());
    for bad in ["<svg><text></svg>", "<svg>a & b</svg>", "<svg></svg><svg></svg>", "<svg x=\"1></svg>", "<svg>"] {
        assert!(well_formed(bad).is_err(), "{bad}");
    }
}

#[test]
fn grid_writes_table_csv_json_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("fig.csv"); // a known extension is dropped from the prefix
    let o = compare(
        &[
            "--sweep",
            "threads=1,2",
            "--protocols",
            "mv-occ@snapshot,mv-occ@serializable",
            "--out",
            prefix.to_str().unwrap(),
        ],
        dir.path(),
    );
    let out = text(&o.stdout);
    assert!(o.status.success(), "stderr: {}\nstdout: {out}", text(&o.stderr));
    assert!(text(&o.stderr).is_empty(), "quiet when stderr is not a terminal: {}", text(&o.stderr));

    // The table: a row per thread count, a column pair per line.
    assert!(out.contains("4 runs of 0.2 s"), "{out}");
    let head = out.lines().find(|l| l.starts_with("threads")).expect("a table header");
    assert!(head.contains("mv-occ@snapshot") && head.contains("mv-occ@serializable"), "{head}");
    for t in ["1", "2"] {
        let row = out.lines().find(|l| l.split_whitespace().next() == Some(t)).expect("a row per value");
        assert_eq!(row.split_whitespace().count(), 5, "value, then txn/s and abort % per line: {row}");
    }
    assert!(out.contains("fig.png"), "{out}");

    let (header, rows) = csv(&dir.path().join("fig.csv"));
    assert_eq!(
        header.join(","),
        "workload,threads,line,protocol,isolation,runs,throughput_tps,throughput_min_tps,\
         throughput_max_tps,abort_pct,p50_us,p99_us,cpu_share,bytes_per_row"
    );
    assert_eq!(rows.len(), 4, "one row per value and line: {rows:?}");
    let points: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| (col(&header, r, "threads"), col(&header, r, "line"), col(&header, r, "isolation")))
        .collect();
    assert_eq!(
        points,
        [
            ("1", "mv-occ@snapshot", "snapshot"),
            ("1", "mv-occ@serializable", "serializable"),
            ("2", "mv-occ@snapshot", "snapshot"),
            ("2", "mv-occ@serializable", "serializable")
        ]
    );
    for r in &rows {
        let tps: f64 = col(&header, r, "throughput_tps").parse().unwrap();
        assert!(tps > 0.0, "{r:?}");
        let per_row: f64 = col(&header, r, "bytes_per_row").parse().unwrap();
        assert!(per_row.is_finite() && per_row >= 0.0, "{r:?}");
        assert_eq!(col(&header, r, "runs"), "1");
        assert_eq!(col(&header, r, "throughput_min_tps"), col(&header, r, "throughput_max_tps"));
        assert_eq!(col(&header, r, "workload"), "hekaton");
    }

    let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("fig.json")).unwrap()).unwrap();
    let recs = json.as_array().expect("an array of runs");
    assert_eq!(recs.len(), 4, "one record per run");
    for (rec, (threads, line, isolation)) in recs.iter().zip(&points) {
        assert_eq!(rec["threads"].as_u64().unwrap().to_string(), *threads);
        assert_eq!(rec["isolation"], *isolation);
        assert_eq!(rec["protocol"], "mv-occ");
        assert_eq!(rec["workload"], "hekaton");
        assert_eq!(rec["params"]["rows"], 1000);
        assert_eq!(rec["compare"]["line"], *line);
        assert_eq!(rec["compare"]["sweep"]["threads"], *threads);
        assert_eq!(rec["compare"]["repeat"], 1);
        assert_eq!(rec["compare"]["sweep_order"], serde_json::json!(["threads"]));
        assert!(rec["throughput_tps"].as_f64().unwrap() > 0.0 && rec["per_type"].is_object(), "{rec}");
    }

    let svg = std::fs::read_to_string(dir.path().join("fig.svg")).unwrap();
    well_formed(&svg).unwrap();
    // Every legend entry names its level; the subtitle what the sweep changes.
    for s in [
        "mv-occ / snapshot",
        "mv-occ / serializable",
        "threads",
        "throughput (txn/s)",
        "hekaton",
        "swept: threads = 1, 2 (x axis)",
        "one run per point (no error bars)",
    ] {
        assert!(svg.contains(s), "{s} missing from the SVG");
    }
    // Threads are numbers: lines, no bars.
    assert!(count(&svg, "polyline", "stroke=\"#1F77B4\"") >= 1 && count(&svg, "rect", "fill=\"#1F77B4\"") == 0);
    assert_eq!(png_size(&dir.path().join("fig.png")), (960, 600));
}

#[test]
fn two_sweeps_repeats_and_the_default_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let o = compare(
        &["--isolation", "serializable", "--sweep", "threads=1,2", "--sweep", "reads=1,5", "--repeat", "2"],
        dir.path(),
    );
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let base = dir.path().join("compare-hekaton");
    let (header, rows) = csv(&base.with_extension("csv"));
    assert_eq!(&header[..4], ["workload", "threads", "reads", "line"]);
    let keys: Vec<(&str, &str)> = rows.iter().map(|r| (col(&header, r, "threads"), col(&header, r, "reads"))).collect();
    assert_eq!(keys, [("1", "1"), ("1", "5"), ("2", "1"), ("2", "5")]);
    for r in &rows {
        assert_eq!((col(&header, r, "line"), col(&header, r, "isolation")), ("mv-occ", "serializable"));
        assert_eq!(col(&header, r, "runs"), "2");
        let v = |c| col(&header, r, c).parse::<f64>().unwrap();
        assert!(v("throughput_min_tps") <= v("throughput_tps") && v("throughput_tps") <= v("throughput_max_tps"));
    }

    let json: Value = serde_json::from_str(&std::fs::read_to_string(base.with_extension("json")).unwrap()).unwrap();
    let recs = json.as_array().unwrap();
    assert_eq!(recs.len(), 8, "2 × 2 points, 2 runs each");
    for (i, rec) in recs.iter().enumerate() {
        let (threads, reads) = keys[i % 4];
        assert_eq!(rec["compare"]["repeat"], 1 + i as u64 / 4, "repeats are the outer loop");
        assert_eq!(rec["threads"].as_u64().unwrap().to_string(), threads);
        assert_eq!(rec["params"]["reads"].as_u64().unwrap().to_string(), reads);
        assert_eq!(rec["compare"]["sweep"]["reads"], reads);
        assert_eq!(rec["isolation"], "serializable");
    }

    let svg = std::fs::read_to_string(base.with_extension("svg")).unwrap();
    well_formed(&svg).unwrap();
    for s in [
        "mv-occ / serializable, reads=1",
        "mv-occ / serializable, reads=5",
        "swept: threads = 1, 2 (x axis); reads = 1, 5 (one series each)",
        "median of 2 runs per point; error bars: min–max of the runs",
    ] {
        assert!(svg.contains(s), "{s} missing from the SVG");
    }
    assert_eq!(png_size(&base.with_extension("png")), (960, 600));
}

/// The SVG elements named `tag` whose attributes contain `attr`.
fn count(svg: &str, tag: &str, attr: &str) -> usize {
    svg.split(&format!("<{tag} ")).skip(1).filter(|e| e.split('>').next().unwrap_or("").contains(attr)).count()
}

/// Without a sweep the lines are categories: bars, one per line, each
/// legend entry with its level, whether given with `@` or not.
#[test]
fn lines_without_a_sweep_are_bars() {
    let dir = tempfile::tempdir().unwrap();
    let o = compare(&["--isolation", "serializable", "--protocols", "mv-occ@snapshot,mv-occ"], dir.path());
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let svg = std::fs::read_to_string(dir.path().join("compare-hekaton.svg")).unwrap();
    well_formed(&svg).unwrap();
    for s in ["mv-occ / snapshot", "mv-occ / serializable", "throughput by protocol and isolation level"] {
        assert!(svg.contains(s), "{s} missing from the SVG");
    }
    // A bar and a legend swatch per line; no line joins them.
    assert_eq!(count(&svg, "rect", "fill=\"#1F77B4\""), 2, "{svg}");
    assert_eq!(count(&svg, "rect", "fill=\"#D62728\""), 2);
    assert_eq!(count(&svg, "polyline", "stroke=\"#1F77B4\""), 0);
}

/// TPC-C's warehouses follow the threads unless --warehouses is given: a
/// threads sweep says so on the terminal and in the plot. A mix sweep
/// (categories) is drawn as bars.
#[test]
fn tpcc_says_what_changes_with_threads() {
    let dir = tempfile::tempdir().unwrap();
    let tpcc = |args: &[&str]| {
        let mut all = vec!["compare", "--workload", "tpcc", "--duration", "0.2", "--protocols", "silo"];
        all.extend_from_slice(args);
        multiverse(&all, &[("MULTIVERSE_OUT_DIR", dir.path())])
    };
    let o = tpcc(&["--sweep", "threads=1,2", "--out", dir.path().join("t").to_str().unwrap()]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let note =
        "warehouses follows threads (not swept): warehouses = 1, 2 at threads = 1, 2; --warehouses holds it fixed";
    assert!(text(&o.stdout).contains(&format!("note: {note}")), "{}", text(&o.stdout));
    let svg = std::fs::read_to_string(dir.path().join("t.svg")).unwrap();
    assert!(svg.contains(note) && svg.contains("silo / serializable"), "{svg}");

    let o = tpcc(&[
        "--threads",
        "1",
        "--warehouses",
        "1",
        "--sweep",
        "mix=new-order:100;payment:100",
        "--out",
        dir.path().join("m").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    assert!(!text(&o.stdout).contains("note:"), "{}", text(&o.stdout));
    let svg = std::fs::read_to_string(dir.path().join("m.svg")).unwrap();
    well_formed(&svg).unwrap();
    assert!(svg.contains("warehouses=1") && svg.contains("swept: mix = new-order:100, payment:100 (x axis)"), "{svg}");
    assert_eq!(count(&svg, "rect", "fill=\"#1F77B4\""), 3, "two bars and the legend's swatch: {svg}");
    assert_eq!(count(&svg, "polyline", "stroke=\"#1F77B4\""), 0);
}

/// Runs `compare` expecting a one-line error containing `want`, before
/// anything ran or was written.
fn refused(args: &[&str], want: &str) {
    refused_by(|out| compare(args, out), args, want);
}

/// [`refused`] for any command line, run by `run` with the output directory.
fn refused_by(run: impl Fn(&Path) -> Output, args: &[&str], want: &str) {
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path());
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{args:?} should fail; stdout: {}", text(&o.stdout));
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(err.contains(want), "{args:?}: expected '{want}' in: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
    assert!(text(&o.stdout).is_empty(), "{args:?}: nothing ran: {}", text(&o.stdout));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{args:?}: nothing written");
}

#[test]
fn bad_comparisons_are_refused_before_running() {
    refused(&["--protocols", "paxos", "--sweep", "threads=1"], "unknown protocol 'paxos'");
    refused(
        &["--protocols", "mv-occ,pomvcc@repeatable-read", "--sweep", "threads=1"],
        "protocol 'pomvcc' does not offer isolation level 'repeatable-read'",
    );
    refused(&["--protocols", "mv-occ@chaos", "--sweep", "threads=1"], "unknown isolation level 'chaos'");
    refused(&["--sweep", "threads"], "expected NAME=V1,V2");
    refused(&["--sweep", "threads="], "no values");
    refused(&["--sweep", "nope=1"], "'nope' is not a flag of multiverse bench");
    refused(&["--sweep", "protocol=mv-occ"], "use --protocols");
    refused(&["--sweep", "threads=1,1"], "given twice");
    refused(&["--sweep", "threads=1", "--sweep", "threads=2"], "given twice");
    refused(&["--sweep", "threads=1", "--sweep", "reads=1", "--sweep", "writes=1"], "at most two");
    // Values the bench parser refuses, with its message, though threads=1 alone would run.
    refused(&["--sweep", "threads=1,zero"], "sweep threads=zero: invalid value 'zero' for '--threads <N>'");
    refused(&["--sweep", "duration=0.1,-1"], "must be more than 0");
    let other = ["compare", "--workload", "sibench", "--duration", "0.1", "--sweep", "reads=1"];
    refused_by(
        |out| multiverse(&other, &[("MULTIVERSE_OUT_DIR", out)]),
        &other,
        "--reads is a flag of workload hekaton",
    );
    refused(&["--sweep", "json=a.json,b.json"], "'json' is not a flag of multiverse bench");

    // Syntax errors of compare's own flags come from the argument parser.
    let dir = tempfile::tempdir().unwrap();
    let o = compare(&["--repeat", "0"], dir.path());
    assert!(!o.status.success() && text(&o.stderr).starts_with("error:") && text(&o.stderr).contains("--repeat"));
}

/// Every run is a bench process of its own: a run that fails says why, on
/// one line, and the comparison stops with a non-zero exit.
#[test]
fn a_failing_run_reports_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let o = multiverse(
        &["compare", "--rows", "1000000000000", "--duration", "0.2", "--protocols", "mv-occ"],
        &[("MULTIVERSE_OUT_DIR", dir.path())],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("mv-occ: --rows 1,000,000,000,000 needs about") && !err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
}

#[test]
fn help_lists_compare_and_bench_flags() {
    let o = multiverse(&["compare", "--help"], &[]);
    assert!(o.status.success());
    let h = text(&o.stdout);
    for flag in ["--protocols", "--sweep", "--repeat", "--out", "--rows", "--threads", "--reads"] {
        assert!(h.contains(flag), "{flag} missing from compare --help");
    }
}

#[test]
fn default_comparison_writes_its_plot() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_multiverse"));
    c.env("MULTIVERSE_DEFAULT_ROWS", "1000")
        .env("MULTIVERSE_DEFAULT_SECONDS", "0.1")
        .env("MULTIVERSE_DEFAULT_THREADS", "1")
        .env("MULTIVERSE_OUT_DIR", dir.path().join("plots"));
    let o = c.output().unwrap();
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let svg = dir.path().join("plots/default.svg");
    let png = dir.path().join("plots/default.png");
    assert!(text(&o.stdout).contains(&svg.display().to_string()), "{}", text(&o.stdout));
    let doc = std::fs::read_to_string(&svg).unwrap();
    well_formed(&doc).unwrap();
    for level in ["read-committed", "snapshot", "repeatable-read", "serializable", "mv-occ"] {
        assert!(doc.contains(level), "{level} missing from the default plot");
    }
    assert_eq!(png_size(&png), (960, 600));
}

#[test]
fn breakdown_is_plotted_and_replot_redraws_from_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("bd");
    let o = multiverse(
        &[
            "compare",
            "--workload",
            "ycsb",
            "--rows",
            "1000",
            "--protocols",
            "silo,mv-occ@serializable",
            "--duration",
            "0.3",
            "--threads",
            "1",
            "--breakdown",
            "--repeat",
            "2",
            "--out",
            prefix.to_str().unwrap(),
        ],
        &[],
    );
    let out = text(&o.stdout);
    assert!(o.status.success(), "stderr: {}\nstdout: {out}", text(&o.stderr));
    let (svg, png) = (dir.path().join("bd-breakdown.svg"), dir.path().join("bd-breakdown.png"));
    assert!(out.contains("bd-breakdown.svg") && out.contains("bd-breakdown.png"), "{out}");
    let body = std::fs::read_to_string(&svg).unwrap();
    well_formed(&body).unwrap();
    for s in ["useful", "abort", "index", "validation", "silo / serializable", "mv-occ / serializable"] {
        assert!(body.contains(s), "{s} missing from the breakdown plot");
    }
    png_size(&png);

    // --replot: the plots again, from the JSON alone, nothing run.
    for f in ["bd.svg", "bd.png", "bd-breakdown.svg", "bd-breakdown.png"] {
        std::fs::remove_file(dir.path().join(f)).unwrap();
    }
    let csv_before = std::fs::read(dir.path().join("bd.csv")).unwrap();
    let json = dir.path().join("bd.json");
    let o = multiverse(&["compare", "--replot", json.to_str().unwrap()], &[]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "stderr: {}\nstdout: {out}", text(&o.stderr));
    assert!(!out.contains("txn/s"), "nothing runs: {out}");
    for f in ["bd.svg", "bd.png", "bd-breakdown.svg", "bd-breakdown.png"] {
        assert!(dir.path().join(f).exists(), "{f} redrawn: {out}");
        assert!(out.contains(f), "{f} named: {out}");
    }
    well_formed(&std::fs::read_to_string(dir.path().join("bd.svg")).unwrap()).unwrap();
    assert!(std::fs::read_to_string(&svg).unwrap().contains("validation"));
    assert_eq!(std::fs::read(dir.path().join("bd.csv")).unwrap(), csv_before, "the CSV is left as it is");
    let o = multiverse(&["compare", "--replot", json.to_str().unwrap(), "--threads", "2"], &[]);
    assert!(!o.status.success() && text(&o.stderr).contains("--replot runs nothing"), "{}", text(&o.stderr));

    // The report: the breakdown inline, and its table.
    let o = multiverse(&["report", json.to_str().unwrap()], &[]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let html = std::fs::read_to_string(dir.path().join("bd.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 4, "throughput, abort rate, p99 and the breakdown");
    for s in ["Time per committed transaction, median over 2 runs (ns)", "log-wait", "validation", "gc"] {
        assert!(html.contains(s), "{s} missing from the report");
    }
}

/// Durable runs: each run gets a new directory under `--data-dir`, removed
/// after it; a directory that is not empty is refused before anything runs.
#[test]
fn durable_runs_each_get_a_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let d = data.to_str().unwrap();
    let o =
        compare(&["--protocols", "mv-occ,silo", "--repeat", "2", "--durability", "sync", "--data-dir", d], dir.path());
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let (header, rows) = csv(&dir.path().join("compare-hekaton.csv"));
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(col(&header, r, "runs"), "2");
    }
    assert_eq!(std::fs::read_dir(&data).unwrap().count(), 0, "every run's directory is removed after it");
    std::fs::write(data.join("mine"), b"x").unwrap();
    let o = compare(&["--protocols", "mv-occ", "--durability", "sync", "--data-dir", d], dir.path());
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(e.contains("not empty (compare makes a new directory there for every run)"), "{e}");
    assert_eq!(std::fs::read(data.join("mine")).unwrap(), b"x", "nothing of the user's is touched");
}
