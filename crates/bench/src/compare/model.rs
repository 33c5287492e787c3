//! The comparison's model: what each run measured (`RunSummary`), the
//! points, lines and sweeps they make up (`Comparison`), read back from
//! the runs' JSON records or from compare's CSV.

use super::PointCli;
use crate::plot;
use clap::CommandFactory;
use serde_json::Value;
use std::path::Path;

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
    /// Memory per loaded row (`bytes_per_row`), when the record has it.
    pub bytes_per_row: Option<f64>,
    /// Where each committed transaction's time went, in ns, by component
    /// (the `all` entry of `breakdown_ns_per_txn`, in
    /// [`BREAKDOWN_ORDER`]); empty when the run had no `--breakdown`.
    pub breakdown: Vec<(String, f64)>,
}

/// The breakdown's components in stacking order; others follow, by name.
pub(crate) const BREAKDOWN_ORDER: [&str; 7] = ["useful", "abort", "index", "validation", "wait", "gc", "log-wait"];

/// A record's `breakdown_ns_per_txn.all`, components in [`BREAKDOWN_ORDER`].
pub(crate) fn breakdown_of(rec: &Value) -> Vec<(String, f64)> {
    let Value::Object(m) = &rec["breakdown_ns_per_txn"]["all"] else { return Vec::new() };
    let mut out: Vec<(String, f64)> = m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_f64()?))).collect();
    let rank = |k: &str| BREAKDOWN_ORDER.iter().position(|x| *x == k).unwrap_or(BREAKDOWN_ORDER.len());
    out.sort_by(|a, b| rank(&a.0).cmp(&rank(&b.0)).then_with(|| a.0.cmp(&b.0)));
    out
}

impl RunSummary {
    pub(crate) fn latency(&self, name: &str) -> Option<f64> {
        self.latency.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// The summary of a run from its JSON record: throughput, committed and
/// aborted are required, the rest is read where present.
pub(crate) fn summary(rec: &Value) -> Result<RunSummary, String> {
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
        bytes_per_row: rec["bytes_per_row"].as_f64(),
        breakdown: breakdown_of(rec),
    })
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
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
    /// Memory per loaded row.
    BytesPerRow,
}

impl Metric {
    pub fn of(&self, r: &RunSummary) -> Option<f64> {
        match self {
            Metric::Throughput => Some(r.tps),
            Metric::AbortPct => Some(r.abort_pct),
            Metric::Latency(p) => r.latency(p),
            Metric::BytesPerRow => r.bytes_per_row,
        }
    }

    /// The y axis: the quantity and its unit.
    pub fn axis(&self) -> String {
        match self {
            Metric::Throughput => "throughput (txn/s)".into(),
            Metric::AbortPct => "aborted share of attempts (%)".into(),
            Metric::Latency(p) => format!("{p} latency (µs)"),
            Metric::BytesPerRow => "memory per loaded row (bytes)".into(),
        }
    }

    /// The quantity, for a title.
    pub fn name(&self) -> String {
        match self {
            Metric::Throughput => "throughput".into(),
            Metric::AbortPct => "abort rate".into(),
            Metric::Latency(p) => format!("{p} latency"),
            Metric::BytesPerRow => "memory per row".into(),
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
    /// How many runs the point stands for: `runs.len()` when read from
    /// records; a CSV row's `runs` when read from compare's CSV, whose
    /// runs are stood in for by the row's low, median and high.
    pub count: usize,
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

    pub(crate) fn plot_point(&self, m: &Metric) -> Option<plot::Point> {
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

    pub(crate) fn cpu_share(&self) -> Option<f64> {
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
    pub(crate) record_values: Vec<Vec<String>>,
    /// Notes given by hand (`compare --replot FILE.csv --note TEXT`): what
    /// a CSV cannot say, such as a parameter that followed the sweep.
    pub given_notes: Vec<String>,
}

/// A JSON value as text: strings without quotes.
pub(crate) fn json_text(v: &Value) -> String {
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
                Some(p) => {
                    p.runs.push(run);
                    p.count += 1;
                }
                None => points.push(PointRuns { values: values.clone(), line, runs: vec![run], count: 1 }),
            }
            record_values.push(values);
        }
        Ok(Comparison::assemble(workloads, lines, sweeps, points, records, record_values))
    }

    /// The comparison of these points, put in grid order (the first
    /// sweep's values outermost, in their order of first appearance, lines
    /// innermost) whatever order they were read in.
    fn assemble(
        workloads: Vec<String>,
        lines: Vec<LineInfo>,
        sweeps: Vec<Axis>,
        mut points: Vec<PointRuns>,
        records: Vec<Value>,
        record_values: Vec<Vec<String>>,
    ) -> Comparison {
        points.sort_by_key(|p| {
            let mut k: Vec<usize> =
                p.values.iter().zip(&sweeps).map(|(v, s)| s.values.iter().position(|x| x == v).unwrap_or(0)).collect();
            k.push(p.line);
            k
        });
        let workload = workloads.join(", ");
        Comparison { workload, lines, sweeps, points, records, record_values, given_notes: Vec::new() }
    }

    /// Reads compare's CSV (PREFIX.csv): one row per point, with the
    /// median, low and high throughput of its runs and the medians of the
    /// rest. For comparisons whose JSON records were not kept (the CSV came
    /// first). The runs themselves are gone, so each point keeps three
    /// stand-ins (low, median, high throughput; one for a single run, two
    /// for two, whose median is their mean as it was) that give the same
    /// median and error bar, and `count` says how many runs there were.
    /// The CSV holds no workload parameters: nothing implicit is detected,
    /// which is what `given_notes` is for.
    pub fn from_csv(text: &str) -> Result<Comparison, String> {
        let mut rows = text.lines().filter(|l| !l.trim().is_empty()).enumerate().map(|(i, l)| (i + 1, csv_fields(l)));
        let (_, header) = rows.next().ok_or("an empty CSV")?;
        let header = header.map_err(|e| format!("line 1: {e}"))?;
        const TAIL: [&str; 11] = [
            "line",
            "protocol",
            "isolation",
            "runs",
            "throughput_tps",
            "throughput_min_tps",
            "throughput_max_tps",
            "abort_pct",
            "p50_us",
            "p99_us",
            "cpu_share",
        ];
        // `bytes_per_row` last, in CSVs written since memory was measured.
        let memory = header.last().is_some_and(|h| h == "bytes_per_row");
        let tail_len = TAIL.len() + usize::from(memory);
        let n_sweeps = header.len().checked_sub(1 + tail_len).filter(|_| header[0] == "workload");
        let Some(n_sweeps) = n_sweeps.filter(|&n| header[1 + n..1 + n + TAIL.len()] == TAIL) else {
            return Err(format!(
                "not compare's CSV: its header is workload,[swept...],{},bytes_per_row",
                TAIL.join(",")
            ));
        };
        let mut sweeps: Vec<Axis> =
            header[1..1 + n_sweeps].iter().map(|n| Axis { name: n.clone(), values: Vec::new() }).collect();
        let (mut lines, mut points, mut workloads) = (Vec::<LineInfo>::new(), Vec::<PointRuns>::new(), Vec::new());
        for (no, row) in rows {
            let row = row.map_err(|e| format!("line {no}: {e}"))?;
            if row.len() != header.len() {
                return Err(format!("line {no}: {} fields, the header has {}", row.len(), header.len()));
            }
            let at = |i: usize| row[1 + n_sweeps + i].as_str();
            let num = |i: usize| -> Result<Option<f64>, String> {
                match at(i) {
                    "" => Ok(None),
                    t => t.parse::<f64>().map(Some).map_err(|_| {
                        format!("line {no}: {} is not a number: {t}", TAIL.get(i).unwrap_or(&"bytes_per_row"))
                    }),
                }
            };
            if !workloads.contains(&row[0]) {
                workloads.push(row[0].clone());
            }
            let values: Vec<String> = row[1..1 + n_sweeps].to_vec();
            for (s, v) in sweeps.iter_mut().zip(&values) {
                if !s.values.contains(v) {
                    s.values.push(v.clone());
                }
            }
            let line = match lines.iter().position(|l| l.label == at(0)) {
                Some(l) => l,
                None => {
                    lines.push(LineInfo { label: at(0).into(), protocol: at(1).into(), isolation: at(2).into() });
                    lines.len() - 1
                }
            };
            let count: usize = at(3).parse().map_err(|_| format!("line {no}: runs is not a count: {}", at(3)))?;
            let tps = num(4)?.ok_or_else(|| format!("line {no}: no throughput_tps"))?;
            let (lo, hi) = (num(5)?.unwrap_or(tps), num(6)?.unwrap_or(tps));
            let latency: Vec<(String, f64)> = [("p50", num(8)?), ("p99", num(9)?)]
                .into_iter()
                .filter_map(|(k, v)| Some((k.to_string(), v?)))
                .collect();
            let run = |tps: f64| RunSummary {
                tps,
                abort_pct: 0.0,
                latency: latency.clone(),
                cpu_share: None,
                bytes_per_row: None,
                breakdown: Vec::new(),
            };
            let stand_ins = match count {
                0 => return Err(format!("line {no}: a point of no runs")),
                1 => vec![tps],
                2 => vec![lo, hi],
                _ => vec![lo, tps, hi],
            };
            let (abort_pct, cpu_share) = (num(7)?.unwrap_or(0.0), num(10)?);
            let bytes_per_row = if memory { num(11)? } else { None };
            let runs =
                stand_ins.into_iter().map(|t| RunSummary { abort_pct, cpu_share, bytes_per_row, ..run(t) }).collect();
            if points.iter().any(|p| p.line == line && p.values == values) {
                return Err(format!("line {no}: the point {} of {} again", values.join(","), at(0)));
            }
            points.push(PointRuns { values, line, runs, count });
        }
        if points.is_empty() {
            return Err("the CSV has no points".into());
        }
        Ok(Comparison::assemble(workloads, lines, sweeps, points, Vec::new(), Vec::new()))
    }

    /// Most runs of a point.
    pub fn repeats(&self) -> usize {
        self.points.iter().map(|p| p.count).max().unwrap_or(0)
    }

    /// Fewest runs of a point.
    pub(crate) fn min_repeats(&self) -> usize {
        self.points.iter().map(|p| p.count).min().unwrap_or(0)
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
    pub(crate) fn swept(&self, key: &str) -> bool {
        let norm = |s: &str| s.replace('-', "_");
        self.sweeps
            .iter()
            .any(|s| norm(&s.name) == norm(key) || (s.name == "duration" && key == "duration_requested_s"))
    }

    /// Each record's workload parameter `key` (None where it lacks it).
    pub(crate) fn param(&self, key: &str) -> Vec<Option<&Value>> {
        self.records.iter().map(|r| r.get("params").and_then(|p| p.get(key))).collect()
    }

    /// The workload parameters in order of first appearance.
    pub(crate) fn param_names(&self) -> Vec<String> {
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
        out.extend(self.given_notes.iter().cloned());
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

/// The fields of one CSV line: comma-separated, a field in double quotes
/// may hold commas and doubled quotes (as `csv` in output.rs writes them).
pub(crate) fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let (mut out, mut field, mut chars) = (Vec::new(), String::new(), line.trim_end_matches('\r').chars().peekable());
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if field.is_empty() => quoted = true,
            (',', false) => out.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    if quoted {
        return Err("a quoted field is not closed".into());
    }
    out.push(field);
    Ok(out)
}

/// A file's records: an array of them (compare) or one (bench --json).
pub(crate) fn read_records(file: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: not valid JSON: {e}", file.display()))?;
    match v {
        Value::Array(a) if a.is_empty() => Err(format!("{}: no benchmark records (an empty array)", file.display())),
        Value::Array(a) => Ok(a),
        v @ Value::Object(_) => Ok(vec![v]),
        _ => Err(format!("{}: not a benchmark record (expected an object or an array of them)", file.display())),
    }
}
