//! The benchmark harness: parallel load, then a timed run of N worker threads.
//!
//! Generic over the workload ([`Workload`]), so the per-transaction loop is
//! monomorphized: per transaction a worker draws its inputs, runs
//! [`run_txn`] (which retries transient aborts and counts them by reason),
//! takes one `Instant` and records one latency sample into its own
//! histogram. Nothing is shared between workers on that path except the stop
//! flag (read, never written until the end) and a per-worker progress cell
//! on its own cache line, written every 256 transactions. Histograms and
//! counters are merged once, after the run.

use super::sys;
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use multiverse::protocol::bohm::{Config as BohmConfig, Done, Feed, Next, Outcome};
use multiverse::{Database, Isolation, Mode, TxnOptions};
use multiverse_workloads::{run_txn, AbortCounts, TxnError, Worker, WorkerProc, Workload};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Highest latency the histograms track (longer samples are clamped): 60 s.
const MAX_LATENCY_NS: u64 = 60_000_000_000;

/// What loading measured.
#[derive(Clone, Debug)]
pub struct LoadResult {
    /// Units loaded (rows).
    pub rows: u64,
    /// Wall time of the load.
    pub elapsed: Duration,
    /// Loader threads.
    pub threads: usize,
    /// Resident memory before the table was created and after the load.
    pub rss_before: u64,
    /// See `rss_before`.
    pub rss_after: u64,
}

impl LoadResult {
    /// Resident bytes added per row by creating and loading the table.
    pub fn bytes_per_row(&self) -> f64 {
        if self.rows == 0 {
            return 0.0;
        }
        self.rss_after.saturating_sub(self.rss_before) as f64 / self.rows as f64
    }
}

/// What a timed run measured for one transaction type.
pub struct TypeResult {
    /// The type's name.
    pub name: &'static str,
    /// Committed transactions of this type.
    pub committed: u64,
    /// Aborted attempts of this type, by reason.
    pub aborts: AbortCounts,
    /// Latency of each committed transaction of this type, in ns.
    pub latency_ns: Histogram<u64>,
}

impl TypeResult {
    /// Latency at quantile `q`, in microseconds.
    pub fn latency_us(&self, q: f64) -> f64 {
        self.latency_ns.value_at_quantile(q) as f64 / 1000.0
    }
}

/// What a timed run measured.
pub struct RunResult {
    /// Committed transactions.
    pub committed: u64,
    /// Aborted attempts, by reason (each was retried).
    pub aborts: AbortCounts,
    /// Wall time from the start signal until every worker stopped.
    pub elapsed: Duration,
    /// Latency of every committed transaction (retries included), in ns.
    pub latency_ns: Histogram<u64>,
    /// Seconds the workers spent on a CPU, summed (0 if unknown).
    pub cpu_s: f64,
    /// Seconds the workers were runnable but waited for a CPU, summed: high
    /// when other processes compete for the machine (0 if unknown).
    pub cpu_wait_s: f64,
    /// The same, per transaction type (in the order of `Workload::txn_types`).
    pub per_type: Vec<TypeResult>,
}

impl RunResult {
    /// Committed transactions per second.
    pub fn throughput(&self) -> f64 {
        self.committed as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
    /// Latency at quantile `q`, in microseconds.
    pub fn latency_us(&self, q: f64) -> f64 {
        self.latency_ns.value_at_quantile(q) as f64 / 1000.0
    }
    /// Committed transactions per second of worker CPU time (less sensitive
    /// to other processes on the machine than [`RunResult::throughput`]).
    pub fn throughput_per_cpu(&self) -> f64 {
        if self.cpu_s <= 0.0 {
            return 0.0;
        }
        self.committed as f64 / self.cpu_s
    }
    /// Share of the run's thread-seconds the workers spent on a CPU.
    pub fn cpu_share(&self, threads: usize) -> f64 {
        self.cpu_s / (self.elapsed.as_secs_f64() * threads as f64).max(1e-9)
    }
    /// Largest latency, in microseconds.
    pub fn latency_max_us(&self) -> f64 {
        self.latency_ns.max() as f64 / 1000.0
    }
}

/// A progress bar on stderr when it is a terminal, a hidden one otherwise.
fn bar(show: bool, len: u64, template: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(template) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb
}

/// Loads the workload's data with `threads` loader threads, each taking one
/// contiguous slice (the workload batches many rows per transaction).
pub fn load<W: Workload>(
    db: &Database,
    w: &W,
    threads: usize,
    show_progress: bool,
    rss_before: u64,
) -> Result<LoadResult, String> {
    let total = w.load_size();
    let pb = bar(show_progress, total, "load {bar:40} {human_pos}/{human_len} rows  eta {eta}");
    let inc = |n: u64| pb.inc(n);
    let start = Instant::now();
    let results: Vec<multiverse::Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|i| s.spawn(move || w.load(db, i, threads, &inc))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    let elapsed = start.elapsed();
    pb.finish_and_clear();
    for r in results {
        r.map_err(|e| format!("loading {} failed: {e}", w.name()))?;
    }
    Ok(LoadResult { rows: total, elapsed, threads, rss_before, rss_after: sys::rss_bytes() })
}

/// Settings of a timed run.
#[derive(Clone, Copy, Debug)]
pub struct RunConfig {
    /// Worker threads.
    pub threads: usize,
    /// How long to run.
    pub duration: Duration,
    /// Isolation level of every transaction.
    pub isolation: Isolation,
    /// Optimistic or pessimistic transactions (the protocol's choice by default).
    pub mode: Mode,
    /// Seed of the workers' random generators (each also mixes its thread number).
    pub seed: u64,
    /// Show a progress bar on stderr.
    pub show_progress: bool,
}

impl RunConfig {
    /// The options every transaction of the run begins with (a workload
    /// adjusts them per transaction type).
    pub fn txn_options(&self) -> TxnOptions<'static> {
        TxnOptions { mode: self.mode, ..TxnOptions::new(self.isolation) }
    }
}

/// A worker's progress counter, alone on its cache line.
#[repr(align(128))]
#[derive(Default)]
struct Progress(AtomicU64);

/// Runs `cfg.threads` workers for `cfg.duration`.
pub fn run<W: Workload>(db: &Database, w: &W, cfg: RunConfig) -> Result<RunResult, String> {
    let threads = cfg.threads;
    let types = w.txn_types().len();
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(threads + 1);
    let progress: Vec<Progress> = (0..threads).map(|_| Progress::default()).collect();
    let ms = cfg.duration.as_millis().max(1) as u64;
    let pb = bar(cfg.show_progress, ms, "run  {bar:40} {elapsed}/{msg}");
    pb.set_message(format!("{:.0}s", cfg.duration.as_secs_f64()));

    let (outcomes, elapsed) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let mut worker = w.worker(i, cfg.seed);
                let (stop, barrier, cell) = (&stop, &barrier, &progress[i]);
                s.spawn(move || {
                    let r = worker_loop(db, &mut worker, types, cfg.txn_options(), stop, barrier, cell);
                    if r.is_err() {
                        // Relaxed: a hint; the others stop at their next check.
                        stop.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let deadline = start + cfg.duration;
        loop {
            let now = Instant::now();
            // Relaxed: set only by a failing worker; a late look costs one tick.
            if now >= deadline || stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(100)));
            if !pb.is_hidden() {
                pb.set_position(start.elapsed().as_millis() as u64);
                // Relaxed: a progress estimate.
                let done: u64 = progress.iter().map(|p| p.0.load(Ordering::Relaxed)).sum();
                let tps = done as f64 / start.elapsed().as_secs_f64();
                pb.set_message(format!("{:.0}s  {} txn/s", cfg.duration.as_secs_f64(), super::report::int(tps as u64)));
            }
        }
        // Relaxed: workers poll it; the scope join orders everything after.
        stop.store(true, Ordering::Relaxed);
        let outcomes: Vec<_> =
            handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect();
        (outcomes, start.elapsed())
    });
    pb.finish_and_clear();

    let mut committed = 0;
    let mut aborts = AbortCounts::default();
    let mut latency_ns = new_histogram();
    let (mut cpu_ns, mut wait_ns) = (0, 0);
    let mut per_type: Vec<TypeResult> = w
        .txn_types()
        .iter()
        .map(|&name| TypeResult { name, committed: 0, aborts: AbortCounts::default(), latency_ns: new_histogram() })
        .collect();
    for o in outcomes {
        let o = o.map_err(|e| format!("{} transaction failed: {e}", w.name()))?;
        for (sum, t) in per_type.iter_mut().zip(&o.per_type) {
            committed += t.committed;
            aborts.merge(&t.aborts);
            latency_ns.add(&t.latency_ns).map_err(|e| format!("merging latency histograms: {e}"))?;
            sum.committed += t.committed;
            sum.aborts.merge(&t.aborts);
            sum.latency_ns.add(&t.latency_ns).map_err(|e| format!("merging latency histograms: {e}"))?;
        }
        cpu_ns += o.cpu_ns;
        wait_ns += o.wait_ns;
    }
    Ok(RunResult {
        committed,
        aborts,
        elapsed,
        latency_ns,
        cpu_s: cpu_ns as f64 / 1e9,
        cpu_wait_s: wait_ns as f64 / 1e9,
        per_type,
    })
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid histogram bounds")
}

/// One worker's tallies for one transaction type.
struct TypeTally {
    committed: u64,
    aborts: AbortCounts,
    latency_ns: Histogram<u64>,
}

struct WorkerOutcome {
    per_type: Vec<TypeTally>,
    cpu_ns: u64,
    wait_ns: u64,
}

/// The per-thread loop: one `Instant` and one histogram record per
/// committed transaction, into the histogram of its type. Never inlined:
/// `scripts/perf-gate` counts instructions from its entry (callgrind's
/// `--toggle-collect=*worker_loop*`), and it is called once per thread.
#[inline(never)]
fn worker_loop<K: Worker>(
    db: &Database,
    worker: &mut K,
    types: usize,
    opts: TxnOptions<'static>,
    stop: &AtomicBool,
    barrier: &Barrier,
    progress: &Progress,
) -> Result<WorkerOutcome, TxnError> {
    let mut per_type: Vec<TypeTally> = (0..types.max(1))
        .map(|_| TypeTally { committed: 0, aborts: AbortCounts::default(), latency_ns: new_histogram() })
        .collect();
    let mut committed = 0u64;
    barrier.wait();
    let cpu_start = sys::thread_cpu_ns();
    let mut last = Instant::now();
    // Relaxed: a stop request needs no ordering; it is seen within a transaction or two.
    while !stop.load(Ordering::Relaxed) {
        worker.next_txn();
        let ty = worker.txn_type();
        debug_assert!(ty < per_type.len(), "txn_type {ty} out of range");
        let tally = &mut per_type[ty.min(types.max(1) - 1)];
        let done = run_txn(db, worker, opts, &mut tally.aborts)?;
        let now = Instant::now();
        if done {
            tally.latency_ns.saturating_record(now.duration_since(last).as_nanos() as u64);
            tally.committed += 1;
        }
        last = now;
        committed += 1;
        if committed % 256 == 0 {
            // Relaxed: read only by the progress bar.
            progress.0.store(committed, Ordering::Relaxed);
        }
    }
    let (cpu_ns, wait_ns) = match (cpu_start, sys::thread_cpu_ns()) {
        (Some((c0, w0)), Some((c1, w1))) => (c1.saturating_sub(c0), w1.saturating_sub(w0)),
        _ => (0, 0),
    };
    worker.finish();
    Ok(WorkerOutcome { per_type, cpu_ns, wait_ns })
}

/// A BOHM stream over a workload's workers: one worker per log position
/// (each holds the inputs of one transaction in flight), drawn and declared
/// on the sequencer thread, accounted for when the pipeline hands them back.
struct BohmFeed<'w, W: Workload + 'w> {
    pool: Vec<WorkerProc<W::Worker<'w>>>,
    /// Every worker made (to call `finish` on all of them at the end).
    made: usize,
    deadline: Instant,
    per_type: Vec<TypeTally>,
    checks: u32,
    failure: Option<String>,
}

impl<'w, W: Workload + 'w> Feed<WorkerProc<W::Worker<'w>>> for BohmFeed<'w, W> {
    fn next(&mut self, _idle: bool) -> Next<WorkerProc<W::Worker<'w>>> {
        self.checks += 1;
        if self.failure.is_some() || (self.checks % 64 == 0 && Instant::now() >= self.deadline) {
            return Next::Stop;
        }
        let Some(mut p) = self.pool.pop() else { return Next::Wait };
        p.worker.next_txn();
        p.ty = p.worker.txn_type();
        Next::Txn(p)
    }

    fn done(&mut self, d: Done<WorkerProc<W::Worker<'w>>>) {
        let mut p = d.proc;
        let types = self.per_type.len();
        let tally = &mut self.per_type[p.ty.min(types - 1)];
        match d.outcome {
            Outcome::Committed => {
                p.worker.committed();
                tally.committed += 1;
                tally.latency_ns.saturating_record(d.latency.as_nanos() as u64);
            }
            Outcome::Aborted(TxnError::Rollback) => tally.aborts.add(multiverse::AbortReason::User),
            Outcome::Aborted(e) => {
                self.failure.get_or_insert_with(|| e.to_string());
            }
            Outcome::Refused(e) => {
                self.failure.get_or_insert_with(|| e.to_string());
            }
        }
        self.pool.push(p);
    }
}

/// Runs a workload through BOHM's pipeline for `cfg.duration` (the
/// sequencer is this thread; `bohm.cc_threads` and `bohm.exec_threads` more
/// threads plan and execute). Latency is from entering the log to
/// completion.
pub fn run_bohm<W: Workload>(db: &Database, w: &W, cfg: RunConfig, bohm: BohmConfig) -> Result<RunResult, String> {
    let types = w.txn_types().len().max(1);
    let n = bohm.batch_size * (bohm.batches_in_flight + 1);
    let pool: Vec<_> = (0..n).map(|i| WorkerProc { worker: w.worker(i, cfg.seed), ty: 0 }).collect();
    let mut probe = w.worker(0, cfg.seed);
    probe.next_txn();
    if !multiverse_workloads::declares(&probe) {
        return Err(format!(
            "protocol bohm runs declared transactions, and workload {} does not declare its accesses \
             (hekaton, ycsb, smallbank, sibench, predicate and list-append do)",
            w.name()
        ));
    }
    let per_type = (0..types)
        .map(|_| TypeTally { committed: 0, aborts: AbortCounts::default(), latency_ns: new_histogram() })
        .collect();
    let start = Instant::now();
    let feed = BohmFeed::<W> { pool, made: n, deadline: start + cfg.duration, per_type, checks: 0, failure: None };
    let cpu0 = sys::process_cpu_ns();
    let (mut feed, _stats) = db.bohm_run(bohm, feed).map_err(|e| e.to_string())?;
    let elapsed = start.elapsed();
    let cpu_ns = match (cpu0, sys::process_cpu_ns()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    };
    debug_assert_eq!(feed.pool.len(), feed.made);
    for p in feed.pool.iter_mut() {
        p.worker.finish();
    }
    if let Some(f) = feed.failure {
        return Err(format!("{} transaction failed: {f}", w.name()));
    }
    let mut committed = 0;
    let mut aborts = AbortCounts::default();
    let mut latency_ns = new_histogram();
    let mut per_type_out = Vec::new();
    for (t, &name) in feed.per_type.iter().zip(w.txn_types()) {
        committed += t.committed;
        aborts.merge(&t.aborts);
        latency_ns.add(&t.latency_ns).map_err(|e| format!("merging latency histograms: {e}"))?;
        per_type_out.push(TypeResult {
            name,
            committed: t.committed,
            aborts: t.aborts,
            latency_ns: t.latency_ns.clone(),
        });
    }
    Ok(RunResult {
        committed,
        aborts,
        elapsed,
        latency_ns,
        cpu_s: cpu_ns as f64 / 1e9,
        cpu_wait_s: 0.0,
        per_type: per_type_out,
    })
}
