//! What a comparison writes: the table, the CSV, the JSON records and the
//! plots (throughput and the time breakdown), and the notes under their
//! titles.

use super::*;

/// The table: one row per point (sweep values), per line the median
/// throughput and abort share.
pub(crate) fn table(cmp: &Comparison) -> String {
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
                    let tps = crate::bench::units::int(p.median(&Metric::Throughput).unwrap_or(0.0) as u64);
                    let _ = write!(r, " {tps:>w$} {:>7.2}%", p.median(&Metric::AbortPct).unwrap_or(0.0));
                }
                None => {
                    let _ = write!(r, " {:>w$} {:>8}", "-", "-");
                }
            }
        }
        let _ = writeln!(s, "{}", r.trim_end());
    }
    s.push_str(&latency_memory_table(cmp, &key_w, col_w));
    for kind in [crate::bench::ceiling::Kind::NoCc, crate::bench::ceiling::Kind::Bare] {
        let Some(ni) = cmp.lines.iter().position(|l| l.protocol == kind.name()) else { continue };
        let _ = writeln!(s, "share of {} ({}), median over median:", kind.what(), kind.name());
        for values in cmp.grid() {
            let Some(ceiling) = cmp.point(&values, ni).and_then(|p| p.median(&Metric::Throughput)) else { continue };
            let shares: Vec<String> = (0..cmp.lines.len())
                .filter(|&li| li != ni)
                .filter_map(|li| {
                    let tps = cmp.point(&values, li)?.median(&Metric::Throughput)?;
                    Some(format!("{} {:.2}x", cmp.lines[li].label, tps / ceiling.max(1e-9)))
                })
                .collect();
            let at = values.join(" ");
            let _ =
                writeln!(s, "  {}{}", if at.is_empty() { String::new() } else { format!("{at}: ") }, shares.join(", "));
        }
    }
    s
}

/// Writes PREFIX.csv, .json, .svg and .png; returns their paths.
pub(crate) fn write_outputs(prefix: &Path, cmp: &Comparison) -> Result<Vec<PathBuf>, String> {
    let write = |path: &Path, text: String| {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    let csv_path = with_ext(prefix, "csv");
    write(&csv_path, csv_text(cmp))?;

    let json_path = with_ext(prefix, "json");
    let text = serde_json::to_string_pretty(&cmp.records).map_err(|e| format!("cannot encode JSON: {e}"))?;
    write(&json_path, text + "\n")?;

    let mut files = vec![csv_path, json_path];
    files.extend(write_plots(prefix, cmp)?);
    Ok(files)
}

/// The second table: per point and line, the median p99 latency and the
/// memory per loaded row (empty when the records have neither).
fn latency_memory_table(cmp: &Comparison, key_w: &[usize], col_w: usize) -> String {
    let (p99, memory) = (Metric::Latency("p99".into()), Metric::BytesPerRow);
    let has = |m: &Metric| cmp.points.iter().any(|p| p.median(m).is_some());
    if !has(&p99) && !has(&memory) {
        return String::new();
    }
    let mut s = String::from("\np99 latency in µs and memory per loaded row in bytes, median\n");
    let mut sub = String::new();
    for w in key_w {
        let _ = write!(sub, "{:<w$}  ", "");
    }
    for _ in &cmp.lines {
        let _ = write!(sub, " {:>w$} {:>8}", "p99 µs", "B/row", w = col_w - 9);
    }
    let _ = writeln!(s, "{}", sub.trim_end());
    for values in cmp.grid() {
        let mut r = String::new();
        for (v, w) in values.iter().zip(key_w) {
            let _ = write!(r, "{v:<w$}  ");
        }
        for li in 0..cmp.lines.len() {
            let point = cmp.point(&values, li);
            let fmt = |m: &Metric, digits: usize| {
                point.and_then(|p| p.median(m)).map_or("-".to_string(), |v| format!("{v:.digits$}"))
            };
            let _ = write!(r, " {:>w$} {:>8}", fmt(&p99, 1), fmt(&memory, 0), w = col_w - 9);
        }
        let _ = writeln!(s, "{}", r.trim_end());
    }
    s
}

/// PREFIX.csv: one row per point and line (`Comparison::from_csv` reads it
/// back).
pub(crate) fn csv_text(cmp: &Comparison) -> String {
    let mut text = String::from("workload");
    for s in &cmp.sweeps {
        let _ = write!(text, ",{}", csv(&s.name));
    }
    text.push_str(
        ",line,protocol,isolation,runs,throughput_tps,throughput_min_tps,throughput_max_tps,abort_pct,p50_us,p99_us,cpu_share,bytes_per_row\n",
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
            ",{},{},{},{},{},{lo:.1},{hi:.1},{},{},{},{},{}",
            csv(&line.label),
            csv(&line.protocol),
            csv(&line.isolation),
            p.count,
            opt(p.median(&Metric::Throughput), 1),
            opt(p.median(&Metric::AbortPct), 4),
            opt(p.median(&Metric::Latency("p50".into())), 2),
            opt(p.median(&Metric::Latency("p99".into())), 2),
            opt(p.cpu_share(), 3),
            opt(p.median(&Metric::BytesPerRow), 1),
        );
    }
    text
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
pub(crate) fn write_breakdown(prefix: &Path, cmp: &Comparison) -> Result<Vec<PathBuf>, String> {
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
pub(crate) fn write_plots(prefix: &Path, cmp: &Comparison) -> Result<Vec<PathBuf>, String> {
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
pub(crate) fn list_sep(values: &[String]) -> &'static str {
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
pub(crate) fn notes(cmp: &Comparison) -> Vec<String> {
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
        run.push(crate::bench::units::threads(t.parse().unwrap_or(0)));
    }
    if let Some(l) = same("isolation") {
        run.push(format!("isolation {l}"));
    }
    if let Some(d) = same("duration_requested_s").filter(|_| !cmp.swept("duration")) {
        run.push(format!("{d} s per run"));
    }
    run.push(cmp.repeats_text());
    run.push(match cmp.field_values("git_commit") {
        Some(c) => format!("commit {c}"),
        None if cmp.records.is_empty() => "redrawn from the CSV (the runs' records were not kept)".into(),
        None => "commit unknown".into(),
    });
    out.push(run.join(", "));
    out
}
