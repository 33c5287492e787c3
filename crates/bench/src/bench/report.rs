//! Human summaries, the comparison table, and the benchmark JSON record
//! (DESIGN.md, "Benchmark JSON").

use super::harness::RunResult;
use super::units::{bytes, int, threads};
use super::{sys, Measurement};
use multiverse::{Isolation, Mode};
use multiverse_workloads::{AbortCounts, Param};
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt::Write;

pub(crate) fn param_text(p: &Param) -> String {
    match p {
        Param::Int(n) => n.to_string(),
        Param::Str(s) => s.clone(),
        Param::Bool(b) => b.to_string(),
    }
}

/// `write-conflict 100, read-validation 23` (non-zero reasons only), or `none`.
fn abort_text(a: &AbortCounts) -> String {
    let parts: Vec<_> = a.by_reason().filter(|(_, n)| *n > 0).map(|(r, n)| format!("{r} {}", int(n))).collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

fn abort_rate(r: &RunResult) -> f64 {
    let attempts = r.committed + r.aborts.total();
    if attempts == 0 {
        0.0
    } else {
        100.0 * r.aborts.total() as f64 / attempts as f64
    }
}

/// `--breakdown`: nanoseconds per committed transaction of each component
/// (`harness::COMPONENTS`), over the sampled transactions, for all types
/// and for each type sampled (BOHM: all types only); None when no
/// breakdown was taken.
pub fn breakdown_ns(r: &RunResult) -> Option<Vec<(&'static str, [f64; 7])>> {
    let (mut all, mut sampled) = r.breakdown_all.unwrap_or(([0u64; 7], 0));
    for t in &r.per_type {
        for (a, b) in all.iter_mut().zip(t.breakdown) {
            *a += b;
        }
        sampled += t.sampled;
    }
    if all.iter().all(|&v| v == 0) {
        return None;
    }
    let per_ns = multiverse::research::breakdown::ticks_per_ns();
    let ns = |ticks: &[u64; 7], n: u64| ticks.map(|v| v as f64 / per_ns / n.max(1) as f64);
    let mut rows = vec![("all", ns(&all, sampled))];
    rows.extend(r.per_type.iter().filter(|t| t.sampled > 0).map(|t| (t.name, ns(&t.breakdown, t.sampled))));
    Some(rows)
}

/// The multi-line summary printed after `bench`.
pub fn summary(m: &Measurement) -> String {
    let params: Vec<_> = m.params.iter().map(|(k, v)| format!("{k}={}", param_text(v))).collect();
    let (l, r) = (&m.load, &m.run);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}{}{} / {} ({}) / {} / {}",
        m.protocol_name(),
        match m.ssn_base {
            Some(Isolation::ReadCommitted) => " over read committed",
            Some(_) => " over snapshot",
            None => "",
        },
        match m.mode {
            Mode::Default => "",
            Mode::Optimistic => " (optimistic)",
            Mode::Pessimistic => " (pessimistic)",
        },
        m.workload,
        params.join(" "),
        m.isolation_name(),
        threads(m.threads)
    );
    if let Some(p) = &m.peer {
        let _ = writeln!(s, "  store      {}", p.describe);
    }
    if m.ordered_map != multiverse::OrderedMap::default() {
        let _ = writeln!(s, "  ordered    indexes in a {}", m.ordered_map);
    }
    let _ = writeln!(
        s,
        "  load       {} rows in {:.2} s ({} rows/s, {})",
        int(l.rows),
        l.elapsed.as_secs_f64(),
        int((l.rows as f64 / l.elapsed.as_secs_f64().max(1e-9)) as u64),
        threads(l.threads)
    );
    if let Some((n, d)) = m.prefault {
        let _ = writeln!(s, "  prefault   {} touched in {:.2} s after loading", bytes(n), d.as_secs_f64());
    }
    let _ = writeln!(
        s,
        "  run        {:.2} s: {} committed, {} txn/s{}",
        r.elapsed.as_secs_f64(),
        int(r.committed),
        int(r.throughput() as u64),
        if r.warmup.is_zero() { String::new() } else { format!(" (after {:.2} s of warm-up)", r.warmup.as_secs_f64()) }
    );
    let _ = writeln!(
        s,
        "  cpu        workers on a CPU {:.0}% of the run, waiting for one {:.1} s in all; {} txn per CPU-second",
        100.0 * r.cpu_share(m.threads),
        r.cpu_wait_s,
        int(r.throughput_per_cpu() as u64)
    );
    let _ = writeln!(
        s,
        "  aborted    {} ({:.3}% of attempts, {}): {}",
        int(r.aborts.total()),
        abort_rate(r),
        match m.retry {
            multiverse_workloads::Retry::UntilCommit => "all retried",
            multiverse_workloads::Retry::Never => "engine aborts dropped, not retried",
        },
        abort_text(&r.aborts)
    );
    if r.aborts.repeats() > 0 {
        let reps: Vec<String> =
            r.aborts.repeats_by_reason().filter(|&(_, n)| n > 0).map(|(k, n)| format!("{k} {}", int(n))).collect();
        let _ = writeln!(s, "  retries    failed again for the same reason: {}", reps.join(", "));
    }
    if let Some(b) = m.bohm {
        let _ = writeln!(
            s,
            "  pipeline   1 sequencer, {} concurrency-control and {} execution threads, batches of {} (BOHM)",
            b.cc_threads,
            b.exec_threads,
            int(b.batch_size as u64)
        );
    }
    if m.timestamp_increments > 0 {
        let _ = writeln!(
            s,
            "  timestamps {} increments of the commit-timestamp counter, {:.3} per committed transaction",
            int(m.timestamp_increments),
            m.timestamp_increments as f64 / r.committed.max(1) as f64
        );
    }
    if let Some(l) = m.log {
        let _ = writeln!(
            s,
            "  log        {} durability, {} streams: {} bytes in {} records ({:.0} bytes per record), {} syncs, {} checkpoints",
            l.durability.name(),
            l.streams,
            int(l.bytes),
            int(l.records),
            l.bytes as f64 / l.records.max(1) as f64,
            int(l.syncs),
            l.checkpoints
        );
    }
    if let Some(age) = m.read_mostly_age {
        let _ = writeln!(
            s,
            "  untracked  {} reads of versions older than {} commits (read-mostly, section 5.3)",
            int(m.stats_end.ssn_untracked_reads),
            int(age)
        );
    }
    let _ = writeln!(
        s,
        "  latency    p50 {:.1} us, p90 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us",
        r.latency_us(0.50),
        r.latency_us(0.90),
        r.latency_us(0.99),
        r.latency_us(0.999),
        r.latency_max_us()
    );
    if let Some(rows) = breakdown_ns(r) {
        let _ = match r.breakdown_all {
            Some(_) => writeln!(
                s,
                "  breakdown  ns per transaction, the pipeline's stages timed a batch at a time and summed over its threads:"
            ),
            None => writeln!(
                s,
                "  breakdown  ns per committed transaction, one in {} timed (aborted attempts under abort):",
                super::harness::SAMPLE_EVERY
            ),
        };
        let _ = write!(s, "  {:>12}", "type");
        for c in super::harness::COMPONENTS {
            let _ = write!(s, " {c:>10}");
        }
        let _ = writeln!(s, " {:>10}", "total");
        for (name, v) in rows {
            let _ = write!(s, "  {name:>12}");
            for x in v {
                let _ = write!(s, " {x:>10.0}");
            }
            let _ = writeln!(s, " {:>10.0}", v.iter().sum::<f64>());
        }
    }
    if !r.per_second.is_empty() {
        let (lo, hi) = r.per_second.iter().fold((f64::MAX, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let _ =
            writeln!(s, "  seconds    {} measured: {} to {} txn/s", r.per_second.len(), int(lo as u64), int(hi as u64));
    }
    let alive = match m.peer {
        // Another store's versions are its own business.
        Some(_) => String::new(),
        None => format!(", {} versions alive at the end", int(m.stats_end.versions_alive)),
    };
    let files = match l.files {
        0 => String::new(),
        n => format!(" ({} of files on tmpfs)", bytes(n)),
    };
    let _ = writeln!(
        s,
        "  memory     peak RSS {}, {:.1} bytes/row after load{files}{alive}",
        bytes(m.peak_rss),
        l.bytes_per_row(),
    );
    let _ = writeln!(
        s,
        "             during the run: {} minor page faults, resident set {}{}",
        int(m.run_faults),
        if m.run_rss_growth < 0 { "-" } else { "+" },
        bytes(m.run_rss_growth.unsigned_abs())
    );
    // Types that neither committed nor aborted (not in the mix) have
    // nothing to show: no row.
    let active: Vec<_> = r.per_type.iter().filter(|t| t.committed > 0 || t.aborts.total() > 0).collect();
    if r.per_type.len() > 1 && !active.is_empty() {
        let _ = writeln!(
            s,
            "  per type   {:<22} {:>12} {:>10} {:>9} {:>9} {:>9}",
            "", "txn/s", "aborts", "p50 us", "p99 us", "max us"
        );
        let secs = r.elapsed.as_secs_f64().max(1e-9);
        for t in active {
            let _ = writeln!(
                s,
                "             {:<22} {:>12} {:>10} {:>9.1} {:>9.1} {:>9.1}",
                t.name,
                int((t.committed as f64 / secs) as u64),
                int(t.aborts.total()),
                t.latency_us(0.50),
                t.latency_us(0.99),
                t.latency_ns.max() as f64 / 1000.0
            );
        }
    }
    if !m.consistency.is_empty() {
        let _ = writeln!(s, "  consistent {}", m.consistency);
    }
    let _ = writeln!(s, "  commit     {}", sys::GIT_COMMIT);
    s
}

/// Header of the default comparison table.
pub fn comparison_header() -> String {
    format!(
        "{:<16} {:>12} {:>9} {:>14} {:>12} {:>8}  {:>8} {:>8} {:>6}\n{}",
        "isolation",
        "txn/s",
        "vs RC",
        "spread",
        "aborts",
        "abort %",
        "p50 us",
        "p99 us",
        "cpu",
        "-".repeat(102)
    )
}

/// One row of the default comparison table; `rc_tps` is read committed's
/// throughput, `(low, high)` the lowest and highest throughput of the
/// level's rounds (the spread, in percent of `r`'s). The last column is the
/// share of the run the workers were on a CPU: well below 100% means other
/// processes competed for the machine.
pub fn comparison_row(level: Isolation, r: &RunResult, rc_tps: f64, threads: usize, (low, high): (f64, f64)) -> String {
    let tps = r.throughput();
    let drop = if level == Isolation::ReadCommitted || rc_tps <= 0.0 {
        "-".to_string()
    } else {
        format!("{:+.1}%", 100.0 * (tps - rc_tps) / rc_tps)
    };
    let spread = if tps > 0.0 {
        format!("{:+.0}/{:+.0}%", 100.0 * (low - tps) / tps, 100.0 * (high - tps) / tps)
    } else {
        "-".to_string()
    };
    format!(
        "{:<16} {:>12} {:>9} {:>14} {:>12} {:>7.3}%  {:>8.1} {:>8.1} {:>5.0}%",
        level.name(),
        int(tps as u64),
        drop,
        spread,
        int(r.aborts.total()),
        abort_rate(r),
        r.latency_us(0.50),
        r.latency_us(0.99),
        100.0 * r.cpu_share(threads)
    )
}

/// Latency percentiles in microseconds.
#[derive(Serialize)]
pub struct Latency {
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
    max: f64,
}

impl Latency {
    fn of(h: &hdrhistogram::Histogram<u64>) -> Latency {
        let q = |q| h.value_at_quantile(q) as f64 / 1000.0;
        Latency { p50: q(0.50), p90: q(0.90), p99: q(0.99), p999: q(0.999), max: h.max() as f64 / 1000.0 }
    }
}

/// One transaction type's share of a run.
#[derive(Serialize)]
pub struct TypeRecord {
    committed: u64,
    aborted: u64,
    aborts_by_reason: Map<String, Value>,
    throughput_tps: f64,
    latency_us: Latency,
}

/// One benchmark run as a JSON object: the stable DESIGN.md fields first,
/// then extras.
#[derive(Serialize)]
pub struct Record {
    protocol: String,
    isolation: String,
    workload: String,
    params: Map<String, Value>,
    threads: usize,
    /// Measured wall time of the run.
    duration_s: f64,
    committed: u64,
    aborted: u64,
    aborts_by_reason: Map<String, Value>,
    throughput_tps: f64,
    latency_us: Latency,
    peak_rss_bytes: u64,
    versions_alive_end: u64,
    git_commit: String,
    // Extras.
    /// Aborts of a retry that failed for the same reason as the attempt
    /// before it, by reason (SSN's safe retry, section 3.2).
    retry_aborts_same_reason: Map<String, Value>,
    /// ssn and ssi: the certified base, `read-committed` or `snapshot`.
    #[serde(skip_serializing_if = "Option::is_none")]
    ssn_base: Option<String>,
    /// Another store ran (`protocol` is its name): its version and settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    store: Option<String>,
    /// Durable runs: the durability, log streams, and what the log wrote
    /// during the run (bytes and records appended, syncs).
    #[serde(skip_serializing_if = "Option::is_none")]
    durability: Option<Value>,
    /// `--mode`, when given: `optimistic` or `pessimistic`.
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<String>,
    /// `--ordered-map`, when not the default skip list: `b+tree`.
    #[serde(skip_serializing_if = "Option::is_none")]
    ordered_map: Option<String>,
    /// ssn and ssi: the safe-snapshot interval, when read-only
    /// transactions read safe snapshots.
    #[serde(skip_serializing_if = "Option::is_none")]
    safe_snapshot_us: Option<u64>,
    /// ssn: the read-mostly age (section 5.3), when on, and the reads
    /// that went untracked (the load's included).
    #[serde(skip_serializing_if = "Option::is_none")]
    read_mostly_age: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    untracked_reads: Option<u64>,
    /// Increments of the commit-timestamp counter during the run (CTs
    /// under pomvcc, the clock under the other multi-version protocols).
    timestamp_increments: u64,
    /// bohm: the pipeline's threads and batch size.
    #[serde(skip_serializing_if = "Option::is_none")]
    cc_threads: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exec_threads: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    batch_size: Option<usize>,
    duration_requested_s: f64,
    seed: u64,
    load_s: f64,
    load_threads: usize,
    load_rows: u64,
    load_rows_per_s: f64,
    /// Memory per loaded row: resident-set growth over the load plus the
    /// store's files in memory (`store_files_after_load_bytes`).
    bytes_per_row: f64,
    rss_after_load_bytes: u64,
    /// Another store's files on a tmpfs after the load (0 for Multiverse).
    store_files_after_load_bytes: u64,
    /// `--prefault`: bytes touched after loading (0: off) and the seconds it took.
    prefault_bytes: u64,
    prefault_s: f64,
    /// Minor page faults during the measured run, and how much the resident
    /// set grew (negative: shrank) over it.
    run_page_faults: u64,
    run_rss_growth_bytes: i64,
    garbage_pending_end: u64,
    cpus: usize,
    /// Worker CPU time and time spent waiting for a CPU (other load on the machine).
    cpu_s: f64,
    cpu_wait_s: f64,
    throughput_per_cpu_s: f64,
    /// Per transaction type, by name.
    per_type: Map<String, Value>,
    /// What the workload's consistency check verified (empty if nothing).
    consistency: String,
    /// Seconds of unmeasured warm-up before the measured `duration_s`.
    warmup_s: f64,
    /// Committed transactions per second over each second of the measured
    /// time (a last part-second of at least 0.1 s too).
    per_second_tps: Vec<f64>,
    /// The CPUs the workers were pinned to (empty: not pinned).
    pinned_cpus: Vec<usize>,
    /// Whether a transaction the engine aborted was retried until it
    /// committed (false: `--no-retry`, dropped).
    aborts_retried: bool,
    /// `--breakdown`: nanoseconds per committed transaction of each
    /// component, for `all` and per type.
    #[serde(skip_serializing_if = "Option::is_none")]
    breakdown_ns_per_txn: Option<Value>,
    /// The machine: CPU model, logical CPUs, memory, OS, kernel, governor.
    machine: Value,
    /// The binary: profile, rustc, version, commit, target.
    build: Value,
    /// Every bench flag with a value, given or default (`bench --config`
    /// of this record reruns it); absent for `compare`'s runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<Value>,
}

impl Record {
    /// The record with the run's effective flags.
    pub fn with_config(mut self, config: Value) -> Record {
        self.config = Some(config);
        self
    }
}

/// Builds the JSON record of a measurement.
pub fn json(m: &Measurement) -> Record {
    let (l, r) = (&m.load, &m.run);
    let params = m
        .params
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Param::Int(n) => Value::from(*n),
                Param::Str(s) => Value::from(s.clone()),
                Param::Bool(b) => Value::from(*b),
            };
            (k.to_string(), v)
        })
        .collect();
    let aborts_by_reason = r.aborts.by_reason().map(|(k, n)| (k.name().to_string(), Value::from(n))).collect();
    Record {
        protocol: m.protocol_name().into(),
        isolation: m.isolation_name().into(),
        workload: m.workload.into(),
        params,
        threads: m.threads,
        duration_s: r.elapsed.as_secs_f64(),
        committed: r.committed,
        aborted: r.aborts.total(),
        aborts_by_reason,
        throughput_tps: r.throughput(),
        latency_us: Latency::of(&r.latency_ns),
        peak_rss_bytes: m.peak_rss,
        versions_alive_end: m.stats_end.versions_alive,
        git_commit: sys::GIT_COMMIT.into(),
        retry_aborts_same_reason: r
            .aborts
            .repeats_by_reason()
            .filter(|&(_, n)| n > 0)
            .map(|(k, n)| (k.name().to_string(), Value::from(n)))
            .collect(),
        ssn_base: m.ssn_base.map(|b| b.name().to_string()),
        store: m.peer.as_ref().map(|p| p.describe.clone()),
        durability: match &m.peer {
            Some(p) if p.durability == multiverse_peers::Durability::Sync => {
                Some(serde_json::json!({ "mode": "sync" }))
            }
            _ => None,
        }
        .or(m.log.map(|l| {
            serde_json::json!({
                "mode": l.durability.name(),
                "log_streams": l.streams,
                "log_bytes": l.bytes,
                "log_records": l.records,
                "log_syncs": l.syncs,
                "checkpoints": l.checkpoints,
                "log_bytes_per_record": if l.records > 0 { l.bytes as f64 / l.records as f64 } else { 0.0 },
            })
        })),
        mode: match m.mode {
            Mode::Default => None,
            Mode::Optimistic => Some("optimistic".into()),
            Mode::Pessimistic => Some("pessimistic".into()),
        },
        ordered_map: (m.ordered_map != multiverse::OrderedMap::default()).then(|| m.ordered_map.to_string()),
        safe_snapshot_us: m.safe_snapshot.map(|d| d.as_micros() as u64),
        read_mostly_age: m.read_mostly_age,
        untracked_reads: m.read_mostly_age.map(|_| m.stats_end.ssn_untracked_reads),
        timestamp_increments: m.timestamp_increments,
        cc_threads: m.bohm.map(|b| b.cc_threads),
        exec_threads: m.bohm.map(|b| b.exec_threads),
        batch_size: m.bohm.map(|b| b.batch_size),
        duration_requested_s: m.duration_requested,
        seed: m.seed,
        load_s: l.elapsed.as_secs_f64(),
        load_threads: l.threads,
        load_rows: l.rows,
        load_rows_per_s: l.rows as f64 / l.elapsed.as_secs_f64().max(1e-9),
        bytes_per_row: l.bytes_per_row(),
        rss_after_load_bytes: l.rss_after,
        store_files_after_load_bytes: l.files,
        prefault_bytes: m.prefault.map_or(0, |p| p.0),
        prefault_s: m.prefault.map_or(0.0, |p| p.1.as_secs_f64()),
        run_page_faults: m.run_faults,
        run_rss_growth_bytes: m.run_rss_growth,
        garbage_pending_end: m.stats_end.garbage_pending,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu_s: r.cpu_s,
        cpu_wait_s: r.cpu_wait_s,
        throughput_per_cpu_s: r.throughput_per_cpu(),
        per_type: r
            .per_type
            .iter()
            .map(|t| {
                let rec = TypeRecord {
                    committed: t.committed,
                    aborted: t.aborts.total(),
                    aborts_by_reason: t
                        .aborts
                        .by_reason()
                        .map(|(k, n)| (k.name().to_string(), Value::from(n)))
                        .collect(),
                    throughput_tps: t.committed as f64 / r.elapsed.as_secs_f64().max(1e-9),
                    latency_us: Latency::of(&t.latency_ns),
                };
                (t.name.to_string(), serde_json::to_value(rec).unwrap_or(Value::Null))
            })
            .collect(),
        consistency: m.consistency.clone(),
        warmup_s: r.warmup.as_secs_f64(),
        per_second_tps: r.per_second.clone(),
        pinned_cpus: m.pin.to_vec(),
        aborts_retried: m.retry == multiverse_workloads::Retry::UntilCommit,
        breakdown_ns_per_txn: breakdown_ns(r).map(|rows| {
            let obj: Map<String, Value> = rows
                .into_iter()
                .map(|(name, v)| {
                    let parts: Map<String, Value> = super::harness::COMPONENTS
                        .iter()
                        .zip(v)
                        .map(|(c, x)| (c.to_string(), Value::from(x)))
                        .collect();
                    (name.to_string(), Value::Object(parts))
                })
                .collect();
            Value::Object(obj)
        }),
        machine: sys::machine(),
        build: sys::build(),
        config: None,
    }
}

/// Writes the run's latency histograms to `path` in HdrHistogram's interval
/// log format (readable by HdrHistogram's tools in every language): one
/// interval over the measured time tagged `all`, then one per transaction
/// type that committed, tagged with its name; values in nanoseconds.
pub fn latency_log(m: &Measurement, path: &std::path::Path) -> Result<(), String> {
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    use hdrhistogram::serialization::V2DeflateSerializer;
    let r = &m.run;
    let fail = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    let mut out = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    let now = std::time::SystemTime::now();
    let start = now.checked_sub(r.elapsed).unwrap_or(now);
    let mut log = IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "multiverse bench: {} / {} / {} / {}; latency in nanoseconds",
            m.protocol_name(),
            m.workload,
            m.isolation_name(),
            threads(m.threads)
        ))
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(1e3)
        .begin_log_with(&mut out, &mut ser)
        .map_err(|e| fail(&e))?;
    let span = r.elapsed;
    log.write_histogram(&r.latency_ns, std::time::Duration::ZERO, span, Tag::new("all"))
        .map_err(|e| fail(&format!("{e:?}")))?;
    for t in r.per_type.iter().filter(|t| t.committed > 0) {
        let tag = Tag::new(t.name).ok_or_else(|| fail(&format!("transaction type '{}' is not a log tag", t.name)))?;
        log.write_histogram(&t.latency_ns, std::time::Duration::ZERO, span, Some(tag))
            .map_err(|e| fail(&format!("{e:?}")))?;
    }
    drop(log);
    std::fs::write(path, out).map_err(|e| fail(&e))
}
