//! `multiverse report PATH`: one self-contained HTML page of the
//! comparisons in PATH, a directory of the `PREFIX.json` files that
//! `multiverse compare` writes (e.g. `bench-out`) or one such file. Records
//! of `bench --json` (one object per file) are read too, each a comparison
//! of one run.
//!
//! The page needs nothing else: the plots are inline SVG, the style is an
//! inline `<style>`, and there is no script, so it can be mailed, archived
//! or opened offline. Per comparison: the machine and build the records
//! name, the parameters (what the sweeps change, what changed with them
//! without being swept, what stayed the same), the plots (throughput,
//! abort rate, p99 latency: the rules of plot.rs) and a table per metric.
//! The plots and numbers are made from the records by the same code that
//! made `compare`'s own table and plot (compare.rs, `Comparison`).

use crate::compare::{self, Comparison, Metric, PointRuns};
use crate::plot;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Arguments of `multiverse report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// A directory of comparison results (the PREFIX.json files of
    /// `multiverse compare`, e.g. bench-out) or one such JSON file.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The HTML file to write [default: DIR/report.html, or NAME.html
    /// beside a NAME.json given as DIR].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `multiverse report`. An `--out` whose directory does not exist is a
/// usage error; everything else that fails is a run-time failure.
pub fn run(a: ReportArgs) -> Result<(), crate::cli::Failure> {
    if let Some(out) = &a.out {
        crate::cli::check_parent("--out", out).map_err(crate::cli::Failure::Usage)?;
    }
    let mut comparisons = Vec::new();
    for file in inputs(&a.dir)? {
        let records = compare::read_records(&file)?;
        let cmp = Comparison::from_records(records).map_err(|e| format!("{}: {e}", file.display()))?;
        comparisons.push((file, cmp));
    }
    let out = match a.out {
        Some(o) => o,
        None if a.dir.is_dir() => a.dir.join("report.html"),
        None => a.dir.with_extension("html"),
    };
    let html = page(&a.dir, &comparisons)?;
    std::fs::write(&out, html).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!(
        "wrote {} ({} comparison{})",
        out.display(),
        comparisons.len(),
        if comparisons.len() == 1 { "" } else { "s" }
    );
    Ok(())
}

/// The JSON files to read: PATH itself, or the `*.json` files in it by name.
fn inputs(path: &Path) -> Result<Vec<PathBuf>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut files = Vec::new();
    for e in entries {
        let p = e.map_err(|e| format!("cannot read {}: {e}", path.display()))?.path();
        if p.is_file() && p.extension().is_some_and(|x| x.eq_ignore_ascii_case("json")) {
            files.push(p);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(format!(
            "{} holds no benchmark records (*.json): run `multiverse compare --out {}/NAME ...` first",
            path.display(),
            path.display()
        ));
    }
    Ok(files)
}

/// Text for HTML: `&`, `<`, `>` and quotes escaped.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "\
body{font-family:'DejaVu Sans',Arial,Helvetica,sans-serif;margin:24px 32px;color:#222;background:#fff;max-width:1100px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:21px;margin:36px 0 6px;padding-top:12px;border-top:2px solid #ccc}
h3{font-size:16px;margin:18px 0 6px}
p.sub{color:#555;margin:0 0 12px}
table{border-collapse:collapse;margin:4px 0 14px;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 8px}
th{background:#eef1f5;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:8px 0 18px}
figure svg{max-width:100%;height:auto;border:1px solid #ddd}
figcaption{color:#555;font-size:13px}
.note{color:#8a4b00}
";

/// The page.
fn page(src: &Path, comparisons: &[(PathBuf, Comparison)]) -> Result<String, String> {
    let mut h = String::new();
    let runs: usize = comparisons.iter().map(|(_, c)| c.records.len()).sum();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Multiverse benchmark report</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<h1>Multiverse benchmark report</h1>\n<p class=\"sub\">{} comparison{} ({runs} run{}) from {}</p>\n",
        comparisons.len(),
        if comparisons.len() == 1 { "" } else { "s" },
        if runs == 1 { "" } else { "s" },
        esc(&src.display().to_string()),
    );
    if comparisons.len() > 1 {
        h.push_str("<ul>\n");
        for (i, (file, cmp)) in comparisons.iter().enumerate() {
            let _ = writeln!(h, "<li><a href=\"#c{i}\">{}</a>: {}</li>", esc(&file_name(file)), esc(&heading(cmp)));
        }
        h.push_str("</ul>\n");
    }
    for (i, (file, cmp)) in comparisons.iter().enumerate() {
        section(&mut h, i, file, cmp)?;
    }
    h.push_str("</body>\n</html>\n");
    Ok(h)
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// `tpcc: silo / serializable, mv-occ / snapshot`.
fn heading(cmp: &Comparison) -> String {
    let lines: Vec<String> = cmp.lines.iter().map(|l| l.legend()).collect();
    format!("{}: {}", cmp.workload, lines.join(", "))
}

/// A two-column table of names and values.
fn key_values(h: &mut String, rows: &[(String, String)]) {
    h.push_str("<table>\n");
    for (k, v) in rows {
        let _ = writeln!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    h.push_str("</table>\n");
}

/// The machine and build the records name: `cpus`, `git_commit`, and any
/// of the fields a record may carry about its machine and build (the
/// `machine` and `build` objects, a `host` or `system` object, or single
/// fields such as `cpu_model`); values that differ between runs are listed
/// comma-separated.
fn machine(cmp: &Comparison) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    for key in ["hostname", "cpu_model", "cpus", "kernel", "os", "rustc", "git_commit"] {
        if let Some(v) = cmp.field_values(key) {
            rows.push((key.to_string(), v));
        }
    }
    for obj in ["machine", "build", "host", "system"] {
        let mut keys: Vec<String> = Vec::new();
        for r in &cmp.records {
            if let Some(Value::Object(m)) = r.get(obj) {
                keys.extend(m.keys().filter(|k| !keys.contains(k)).cloned().collect::<Vec<_>>());
            }
        }
        for k in keys {
            let mut distinct: Vec<String> = Vec::new();
            for v in cmp.records.iter().filter_map(|r| r.get(obj).and_then(|m| m.get(&k))) {
                let t = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                if !distinct.contains(&t) {
                    distinct.push(t);
                }
            }
            rows.push((format!("{obj}.{k}"), distinct.join(", ")));
        }
    }
    rows
}

/// The parameters: workload, lines, sweeps, implicit changes, the rest.
fn parameters(cmp: &Comparison) -> Vec<(String, String)> {
    let mut rows = vec![("workload".to_string(), cmp.workload.clone())];
    let lines: Vec<String> = cmp.lines.iter().map(|l| l.legend()).collect();
    rows.push(("lines (protocol / isolation level)".into(), lines.join(", ")));
    if let Some(s) = compare::swept_text(cmp) {
        rows.push(("swept".into(), s.trim_start_matches("swept: ").to_string()));
    }
    for n in cmp.implicit_changes() {
        rows.push(("changed without a sweep".into(), n));
    }
    for (key, name) in [("threads", "threads"), ("duration_requested_s", "seconds per run")] {
        if let Some(v) = cmp.field_values(key) {
            rows.push((name.into(), v));
        }
    }
    rows.push(("runs".into(), cmp.repeats_text()));
    for p in cmp.constant_params() {
        let (k, v) = p.split_once('=').unwrap_or((&p, ""));
        rows.push((k.to_string(), v.to_string()));
    }
    rows
}

/// A number for a table: thousands separated from 1000 up, else 1 or 2
/// decimals.
fn num(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 1000.0 {
        let s = crate::bench::units::int(v.abs().round() as u64);
        if v < 0.0 {
            format!("-{s}")
        } else {
            s
        }
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// How a table cell is made from a point's runs.
type CellFn = Box<dyn Fn(&PointRuns) -> Option<f64>>;

fn cell(f: impl Fn(&PointRuns) -> Option<f64> + 'static) -> CellFn {
    Box::new(f)
}

/// The tables' metrics: their titles and how each cell is computed.
fn metrics(cmp: &Comparison) -> Vec<(String, CellFn)> {
    let k = cmp.repeats();
    let over = if k > 1 { format!(" over {k} runs") } else { String::new() };
    let mut m: Vec<(String, CellFn)> = vec![
        (format!("Throughput, median{over} (txn/s)"), cell(|p| p.median(&Metric::Throughput))),
        (format!("Throughput, min{over} (txn/s)"), cell(|p| p.range(&Metric::Throughput).map(|r| r.0))),
        (format!("Throughput, max{over} (txn/s)"), cell(|p| p.range(&Metric::Throughput).map(|r| r.1))),
        ("Aborted share of attempts, median (%)".to_string(), cell(|p| p.median(&Metric::AbortPct))),
    ];
    for l in cmp.latencies() {
        let title = format!("Latency {l}, median (µs)");
        let metric = Metric::Latency(l);
        m.push((title, cell(move |p| p.median(&metric))));
    }
    if cmp.points.iter().any(|p| p.median(&Metric::BytesPerRow).is_some()) {
        m.push(("Memory per loaded row, median (bytes)".to_string(), cell(|p| p.median(&Metric::BytesPerRow))));
    }
    m
}

fn section(h: &mut String, i: usize, file: &Path, cmp: &Comparison) -> Result<(), String> {
    let _ = writeln!(h, "<section id=\"c{i}\">\n<h2>{}</h2>", esc(&heading(cmp)));
    let _ = writeln!(h, "<p class=\"sub\">{} ({} runs)</p>", esc(&file_name(file)), cmp.records.len());
    for n in cmp.implicit_changes() {
        let _ = writeln!(h, "<p class=\"note\">Note: {}</p>", esc(&n));
    }
    let machine = machine(cmp);
    if !machine.is_empty() {
        h.push_str("<h3>Machine and build</h3>\n");
        key_values(h, &machine);
    }
    h.push_str("<h3>Parameters</h3>\n");
    key_values(h, &parameters(cmp));

    h.push_str("<h3>Plots</h3>\n");
    let mut plots = vec![Metric::Throughput, Metric::AbortPct];
    if cmp.latencies().iter().any(|l| l == "p99") {
        plots.push(Metric::Latency("p99".into()));
    }
    for m in &plots {
        let chart = compare::chart(cmp, m);
        let svg = plot::svg_string(&chart)?;
        let kind = if plot::is_categorical(&chart.x) { "grouped bars" } else { "lines" };
        let _ = writeln!(
            h,
            "<figure>\n{}\n<figcaption>{} ({kind}); {}</figcaption>\n</figure>",
            svg.trim(),
            esc(&chart.title),
            esc(&cmp.repeats_text())
        );
    }
    breakdown(h, cmp)?;

    let metrics = metrics(cmp);
    if cmp.sweeps.is_empty() {
        // No sweep: one table, a row per line, a column per metric.
        h.push_str("<h3>Results</h3>\n<table>\n<tr><th>protocol / isolation level</th>");
        for (title, _) in &metrics {
            let _ = write!(h, "<th>{}</th>", esc(title));
        }
        h.push_str("</tr>\n");
        for (li, line) in cmp.lines.iter().enumerate() {
            let _ = write!(h, "<tr><th>{}</th>", esc(&line.legend()));
            let p = cmp.point(&[], li);
            for (_, f) in &metrics {
                let v = p.and_then(f).map_or_else(|| "-".into(), num);
                let _ = write!(h, "<td class=\"n\">{v}</td>");
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    } else {
        // A table per metric: a row per point, a column per line.
        for (title, f) in &metrics {
            let _ = writeln!(h, "<h3>{}</h3>\n<table>\n<tr>", esc(title));
            for s in &cmp.sweeps {
                let _ = write!(h, "<th>{}</th>", esc(&s.name));
            }
            for l in &cmp.lines {
                let _ = write!(h, "<th>{}</th>", esc(&l.legend()));
            }
            h.push_str("</tr>\n");
            for values in cmp.grid() {
                h.push_str("<tr>");
                for v in &values {
                    let _ = write!(h, "<th>{}</th>", esc(v));
                }
                for li in 0..cmp.lines.len() {
                    let v = cmp.point(&values, li).and_then(f).map_or_else(|| "-".into(), num);
                    let _ = write!(h, "<td class=\"n\">{v}</td>");
                }
                h.push_str("</tr>\n");
            }
            h.push_str("</table>\n");
        }
    }
    h.push_str("</section>\n");
    Ok(())
}

/// With `breakdown_ns_per_txn` in the records: the breakdown plot (one
/// stacked bar per line and sweep point, each component the median over
/// the point's runs) and a table of the same numbers with their total.
fn breakdown(h: &mut String, cmp: &Comparison) -> Result<(), String> {
    let rows = compare::breakdown_rows(cmp);
    if rows.is_empty() {
        return Ok(());
    }
    let (title, subtitle) = compare::breakdown_text(cmp);
    let svg = plot::breakdown_svg(&title, &subtitle, compare::BREAKDOWN_UNIT, &rows)?;
    let _ = writeln!(
        h,
        "<figure>\n{}\n<figcaption>{} (stacked bars, {})</figcaption>\n</figure>",
        svg.trim(),
        esc(&title),
        compare::BREAKDOWN_UNIT
    );
    let mut parts: Vec<&str> = Vec::new();
    for (n, _) in rows.iter().flat_map(|(_, p)| p) {
        if !parts.contains(&n.as_str()) {
            parts.push(n);
        }
    }
    let k = cmp.repeats();
    let over = if k > 1 { format!(", median over {k} runs") } else { String::new() };
    let _ = writeln!(h, "<h3>Time per committed transaction{over} (ns)</h3>\n<table>\n<tr><th>line, point</th>");
    for p in &parts {
        let _ = write!(h, "<th>{}</th>", esc(p));
    }
    h.push_str("<th>total</th></tr>\n");
    for (label, vals) in &rows {
        let _ = write!(h, "<tr><th>{}</th>", esc(label));
        for p in &parts {
            let v = vals.iter().find(|(n, _)| n == p).map_or_else(|| "-".into(), |(_, v)| num(*v));
            let _ = write!(h, "<td class=\"n\">{v}</td>");
        }
        let _ = writeln!(h, "<td class=\"n\">{}</td></tr>", num(vals.iter().map(|(_, v)| v).sum()));
    }
    h.push_str("</table>\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(protocol: &str, isolation: &str, threads: u64, tps: f64, rep: u64) -> Value {
        json!({
            "protocol": protocol, "isolation": isolation, "workload": "tpcc",
            "params": {"warehouses": threads, "mix": "new-order:50,payment:50"},
            "threads": threads, "duration_s": 1.0, "duration_requested_s": 1.0,
            "committed": 1000, "aborted": 10, "throughput_tps": tps,
            "latency_us": {"p50": 10.0, "p90": 20.0, "p99": 40.0, "max": 900.0},
            "git_commit": "abc1234", "cpus": 2, "cpu_s": 1.0,
            "machine": {"cpu_model": "Test CPU", "logical_cpus": 2},
            "compare": {"line": format!("{protocol}@{isolation}"), "sweep": {"threads": threads.to_string()},
                        "sweep_order": ["threads"], "repeat": rep}
        })
    }

    #[test]
    fn numbers_and_escapes() {
        assert_eq!(esc("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
        assert_eq!(num(1234567.8), "1,234,568");
        assert_eq!(num(123.45), "123.5");
        assert_eq!(num(1.234), "1.23");
        assert_eq!(num(f64::NAN), "-");
    }

    #[test]
    fn page_has_tables_plots_and_the_implicit_warehouses() {
        let mut recs = Vec::new();
        for rep in 1..=2 {
            for t in [1, 2, 4] {
                for (p, l) in [("silo", "serializable"), ("mv-occ", "snapshot")] {
                    recs.push(record(p, l, t, 1000.0 * t as f64 + rep as f64 * 10.0, rep));
                }
            }
        }
        let cmp = Comparison::from_records(recs).unwrap();
        let html = page(Path::new("out<dir>"), &[(PathBuf::from("compare-tpcc.json"), cmp)]).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
        assert!(html.contains("out&lt;dir&gt;"), "the source is escaped");
        // Self-contained: no scripts, links, or external references.
        for bad in ["<script", "<link", "src=", "href=\"http", "@import", "url("] {
            assert!(!html.contains(bad), "{bad} in the page");
        }
        assert_eq!(html.matches("<svg").count(), 3, "throughput, abort rate and p99 plots");
        for s in [
            "silo / serializable",
            "mv-occ / snapshot",
            "warehouses follows threads (not swept): warehouses = 1, 2, 4 at threads = 1, 2, 4; --warehouses holds it fixed",
            "median of 2 runs per point; error bars: min–max of the runs",
            "Throughput, median over 2 runs (txn/s)",
            "Throughput, min over 2 runs (txn/s)",
            "Throughput, max over 2 runs (txn/s)",
            "Aborted share of attempts, median (%)",
            "Latency p50, median (µs)",
            "Latency max, median (µs)",
            "machine.cpu_model",
            "Test CPU",
            "abc1234",
            "mix",
        ] {
            assert!(html.contains(&esc(s)), "{s} missing from the page");
        }
        // Median, min and max over the two repeats (threads=4).
        for v in ["4,015", "4,010", "4,020"] {
            assert!(html.contains(&format!("<td class=\"n\">{v}</td>")), "{v} missing");
        }
        // Latency tables in percentile order.
        let at = |s: &str| html.find(s).unwrap();
        let (p50, p90, max) = (at("Latency p50"), at("Latency p90"), at("Latency max"));
        assert!(p50 < p90 && p90 < max);
    }

    #[test]
    fn breakdowns_are_plotted_and_tabulated() {
        let mut recs = Vec::new();
        for rep in 1..=3u64 {
            for t in [1, 2] {
                let mut r = record("silo", "serializable", t, 1000.0, rep);
                let b = json!({"useful": 100.0 * rep as f64, "abort": 10.0, "index": 20.0, "validation": 5.0,
                               "wait": 0.0, "gc": 1.0, "log-wait": 0.0});
                r["breakdown_ns_per_txn"] = json!({"all": b, "new-order": b});
                recs.push(r);
            }
        }
        let cmp = Comparison::from_records(recs).unwrap();
        let rows = compare::breakdown_rows(&cmp);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].0, "silo / serializable, threads=2");
        let names: Vec<&str> = rows[0].1.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, compare::BREAKDOWN_ORDER, "components in stacking order");
        assert_eq!(rows[0].1[0].1, 200.0, "the median of 100, 200, 300");
        let html = page(Path::new("d"), &[(PathBuf::from("b.json"), cmp)]).unwrap();
        assert_eq!(html.matches("<svg").count(), 4, "throughput, abort rate, p99 and the breakdown");
        for s in ["Time per committed transaction, median over 3 runs (ns)", "log-wait", "validation", "useful"] {
            assert!(html.contains(s), "{s} missing");
        }
        // 200 + 10 + 20 + 5 + 0 + 1 + 0.
        assert!(html.contains("<td class=\"n\">236.0</td></tr>"), "the total");
        // Without breakdowns: no breakdown section.
        let cmp = Comparison::from_records(vec![record("silo", "serializable", 1, 1.0, 1)]).unwrap();
        assert!(compare::breakdown_rows(&cmp).is_empty());
        let html = page(Path::new("d"), &[(PathBuf::from("b.json"), cmp)]).unwrap();
        assert!(!html.contains("Time per committed transaction"));
    }

    #[test]
    fn a_single_bench_record_makes_a_page() {
        let mut r = record("silo", "serializable", 2, 5000.0, 1);
        r.as_object_mut().unwrap().remove("compare");
        let cmp = Comparison::from_records(vec![r]).unwrap();
        assert_eq!((cmp.lines[0].label.as_str(), cmp.sweeps.len()), ("silo@serializable", 0));
        let html = page(Path::new("x.json"), &[(PathBuf::from("x.json"), cmp)]).unwrap();
        assert!(html.contains("<h3>Results</h3>") && html.contains("5,000") && html.contains("one run per point"));
    }

    #[test]
    fn bad_inputs_are_one_line_errors() {
        let dir = tempfile::tempdir().unwrap();
        let e = inputs(&dir.path().join("nope")).unwrap_err();
        assert!(e.contains("nope") && e.contains("No such file"), "{e}");
        assert!(inputs(dir.path()).unwrap_err().contains("holds no benchmark records"));
        let f = dir.path().join("a.json");
        for (text, want) in [("{", "not valid JSON"), ("[]", "no benchmark records"), ("3", "not a benchmark record")] {
            std::fs::write(&f, text).unwrap();
            let e = compare::read_records(&f).unwrap_err();
            assert!(e.contains(want) && !e.contains('\n'), "{text}: {e}");
        }
        let e = Comparison::from_records(vec![json!({"protocol": "silo"})]).unwrap_err();
        assert!(e.contains("record 1 of 1: no isolation"), "{e}");
        let mut r = record("silo", "serializable", 2, 5000.0, 1);
        r.as_object_mut().unwrap().remove("throughput_tps");
        assert!(Comparison::from_records(vec![r]).unwrap_err().contains("lacks throughput_tps"));
    }
}
