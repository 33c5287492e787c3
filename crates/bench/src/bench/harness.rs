//! The benchmark harness: parallel load, then a timed run of N worker threads.
//!
//! Generic over the workload ([`Workload`]), so the per-transaction loop is
//! monomorphized: per transaction a worker draws its inputs, runs
//! [`Store::run_txn`] (which retries transient aborts and counts them by reason),
//! takes one `Instant` and records one latency sample into its own
//! histogram. Nothing is shared between workers on that path except the stop
//! flag (read, never written until the end) and a per-worker progress cell
//! on its own cache line, written after every committed transaction (read
//! once a second for the per-second series). Histograms and counters are
//! merged once, after the run.
//!
//! A run starts with an unmeasured warm-up (`RunConfig::warmup`): the
//! workers run as they will, and when it ends the main thread switches the
//! shared phase word to `MEASURE`; each worker, seeing the switch before its
//! next transaction, forgets what it counted so far (the transaction that
//! straddled the switch included). The measured time runs from the switch to
//! the stop.

use super::sys;
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use multiverse::protocol::bohm::{Config as BohmConfig, Done, Feed, Next, Outcome};
use multiverse::{Database, Isolation, Mode, TxnOptions};
use multiverse_workloads::{AbortCounts, Retry, Store, TxnError, Worker, WorkerProc, Workload};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
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
    /// Bytes of the store's files in memory after the load (another
    /// store's files on a tmpfs, not in its resident set); 0 for Multiverse.
    pub files: u64,
}

impl LoadResult {
    /// Bytes of memory added per row by creating and loading the table:
    /// resident memory, and the store's files where they live in memory.
    pub fn bytes_per_row(&self) -> f64 {
        if self.rows == 0 {
            return 0.0;
        }
        (self.rss_after.saturating_sub(self.rss_before) + self.files) as f64 / self.rows as f64
    }
}

/// The components of a time breakdown (`bench --breakdown`), in the order
/// of `TypeResult::breakdown`: the transaction's own work (what the engine's
/// timed parts do not cover), work thrown away by aborted attempts, then
/// `multiverse::research::breakdown`'s parts.
pub const COMPONENTS: [&str; 7] = ["useful", "abort", "index", "validation", "wait", "gc", "log-wait"];

/// A breakdown times one transaction in this many per worker: reading the
/// tick counter around every region of every transaction cost 20–26% of
/// YCSB's throughput on this machine (tens of nanoseconds a read on a
/// virtual machine); sampled, the estimate is of the mean over hundreds of
/// thousands of transactions all the same.
pub const SAMPLE_EVERY: u32 = 16;

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
    /// `--breakdown`: ticks spent per component of `COMPONENTS`, over the
    /// sampled transactions (all zero when off), and how many of those
    /// committed (the breakdown is per committed transaction).
    pub breakdown: [u64; 7],
    pub sampled: u64,
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
    /// Committed transactions per second over each second of the measured
    /// time (a last part-second of at least 0.1 s as a rate too).
    pub per_second: Vec<f64>,
    /// The unmeasured warm-up that came before.
    pub warmup: Duration,
    /// A breakdown of all types together, in ticks per component of
    /// `COMPONENTS`, and the transactions it covers, where the run could
    /// not time each type (BOHM's pipeline: its stages are timed, a batch
    /// at a time, not its transactions); None elsewhere.
    pub breakdown_all: Option<([u64; 7], u64)>,
    /// The database's timestamp increments (`Stats::timestamp_increments`)
    /// when the measured time began, if a warm-up came before it (the
    /// caller's own reading before the run counts the warm-up's too).
    pub ts_at_measure: Option<u64>,
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
pub fn load<S: Store, W: Workload>(
    db: &S,
    w: &W,
    threads: usize,
    show_progress: bool,
    rss_before: u64,
) -> Result<LoadResult, String> {
    super::mark_started();
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
    Ok(LoadResult { rows: total, elapsed, threads, rss_before, rss_after: sys::rss_bytes(), files: 0 })
}

/// Settings of a timed run.
#[derive(Clone, Copy, Debug)]
pub struct RunConfig {
    /// Worker threads.
    pub threads: usize,
    /// How long to measure.
    pub duration: Duration,
    /// How long to run, unmeasured, before.
    pub warmup: Duration,
    /// CPUs to pin the workers to, worker `i` on `pin[i % len]` (empty: not pinned).
    pub pin: &'static [usize],
    /// Take a time breakdown (`multiverse::research::breakdown` on for the run).
    pub breakdown: bool,
    /// Retry a transaction the engine aborted, or drop it (`--no-retry`).
    pub retry: Retry,
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

/// The run's phase word: warm-up, measured time, stop.
const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// Per-second throughput from samples of a running count of committed
/// transactions, taken at (or just after) each second of measured time:
/// each sample's rate is over the time since the one before, and a last
/// part-second of at least 0.1 s counts as a rate too.
struct PerSecond {
    /// When the next sample is due.
    next: Instant,
    /// The previous sample: when, and the count then.
    prev: (Instant, u64),
    rates: Vec<f64>,
}

impl PerSecond {
    fn new(start: Instant, count: u64) -> PerSecond {
        PerSecond { next: start + Duration::from_secs(1), prev: (start, count), rates: Vec::new() }
    }

    /// Takes a sample if one is due at `now`, `count` being the running
    /// count then.
    fn sample(&mut self, now: Instant, count: u64) {
        if now < self.next {
            return;
        }
        let secs = (now - self.prev.0).as_secs_f64().max(1e-9);
        self.rates.push(count.saturating_sub(self.prev.1) as f64 / secs);
        self.prev = (now, count);
        while self.next <= now {
            self.next += Duration::from_secs(1);
        }
    }

    /// The series, ended at `end` with the count then.
    fn finish(mut self, end: Instant, count: u64) -> Vec<f64> {
        let part = end.saturating_duration_since(self.prev.0).as_secs_f64();
        if part >= 0.1 {
            self.rates.push(count.saturating_sub(self.prev.1) as f64 / part);
        }
        self.rates
    }
}

/// Pins the calling thread to `cpu`.
pub(crate) fn pin_to(cpu: usize) -> Result<(), String> {
    if core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
        Ok(())
    } else {
        Err(format!("--pin: cannot run a thread on CPU {cpu}"))
    }
}

/// A worker's progress counter, alone on its cache line.
#[repr(align(128))]
#[derive(Default)]
struct Progress(AtomicU64);

/// Runs `cfg.threads` workers for `cfg.warmup`, then measures them for
/// `cfg.duration`.
/// Runs the workers; with `ceiling` (`--protocol none` or `bare`), each
/// pass of a transaction body runs on the copy of the table, not in `db`.
pub fn run<S: Store, W: Workload>(
    db: &S,
    w: &W,
    cfg: RunConfig,
    ceiling: Option<Ceiling<'_>>,
) -> Result<RunResult, String> {
    let threads = cfg.threads;
    let types = w.txn_types().len();
    let phase = AtomicU8::new(if cfg.warmup.is_zero() { MEASURE } else { WARMUP });
    let barrier = Barrier::new(threads + 1);
    let progress: Vec<Progress> = (0..threads).map(|_| Progress::default()).collect();
    let ms = (cfg.warmup + cfg.duration).as_millis().max(1) as u64;
    let pb = bar(cfg.show_progress, ms, "run  {bar:40} {elapsed}/{msg}");
    let total_s = (cfg.warmup + cfg.duration).as_secs_f64();
    pb.set_message(format!("{total_s:.0}s"));
    // Relaxed: each worker's own count, summed for estimates and the
    // per-second series (a count read a little late lands in the next second).
    let count = || progress.iter().map(|p| p.0.load(Ordering::Relaxed)).sum::<u64>();
    // Measured here, before the workers start (it switches the timing on).
    let cost = cfg.breakdown.then(multiverse::research::breakdown::region_cost);
    // The retries' backoff after lock aborts depends on whether the workers
    // outnumber the CPUs.
    multiverse_workloads::set_workers(threads);

    let (outcomes, elapsed, per_second, ts_at_measure) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let mut worker = w.worker(i, cfg.seed);
                let (phase, barrier, cell) = (&phase, &barrier, &progress[i]);
                let cpu = (!cfg.pin.is_empty()).then(|| cfg.pin[i % cfg.pin.len()]);
                s.spawn(move || {
                    let pinned = cpu.map_or(Ok(()), pin_to);
                    let r = match pinned {
                        Ok(()) => {
                            let l = Loop {
                                types,
                                opts: cfg.txn_options(),
                                retry: cfg.retry,
                                phase,
                                barrier,
                                progress: cell,
                                breakdown: cost,
                                ceiling,
                            };
                            worker_loop(db, &mut worker, l).map_err(|e| format!("{} transaction failed: {e}", w.name()))
                        }
                        Err(e) => {
                            barrier.wait();
                            Err(e)
                        }
                    };
                    if r.is_err() {
                        // Relaxed: a hint; the others stop at their next check.
                        phase.store(STOP, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        barrier.wait();
        let t0 = Instant::now();
        let (mut start, mut deadline) = (t0, t0 + cfg.warmup + cfg.duration);
        let mut series = if cfg.warmup.is_zero() { Some(PerSecond::new(t0, 0)) } else { None };
        let mut ts_at_measure = None;
        loop {
            let now = Instant::now();
            // Relaxed: set only by a failing worker; a late look costs one tick.
            if now >= deadline || phase.load(Ordering::Relaxed) == STOP {
                break;
            }
            match series.as_mut() {
                None if now >= t0 + cfg.warmup => {
                    // Relaxed: workers poll it; what they count after seeing
                    // it is merged after the scope's joins.
                    phase.store(MEASURE, Ordering::Relaxed);
                    ts_at_measure = Some(db.timestamp_increments());
                    (start, deadline) = (now, now + cfg.duration);
                    series = Some(PerSecond::new(now, count()));
                }
                Some(ps) => ps.sample(now, count()),
                None => {}
            }
            let wake = series.as_ref().map_or(t0 + cfg.warmup, |ps| ps.next).min(deadline);
            std::thread::sleep(wake.saturating_duration_since(now).min(Duration::from_millis(100)));
            if !pb.is_hidden() {
                pb.set_position(t0.elapsed().as_millis() as u64);
                let tps = count() as f64 / t0.elapsed().as_secs_f64();
                pb.set_message(format!("{total_s:.0}s  {} txn/s", super::units::int(tps as u64)));
            }
        }
        // Relaxed: workers poll it; the scope join orders everything after.
        phase.store(STOP, Ordering::Relaxed);
        let end = Instant::now();
        let outcomes: Vec<_> =
            handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect();
        let per_second = series.map_or_else(Vec::new, |ps| ps.finish(end, count()));
        (outcomes, end - start, per_second, ts_at_measure)
    });
    pb.finish_and_clear();

    let mut committed = 0;
    let mut aborts = AbortCounts::default();
    let mut latency_ns = new_histogram();
    let (mut cpu_ns, mut wait_ns) = (0, 0);
    let mut per_type: Vec<TypeResult> = w
        .txn_types()
        .iter()
        .map(|&name| TypeResult {
            name,
            committed: 0,
            aborts: AbortCounts::default(),
            latency_ns: new_histogram(),
            breakdown: [0; 7],
            sampled: 0,
        })
        .collect();
    for o in outcomes {
        let o = o?;
        for (sum, t) in per_type.iter_mut().zip(&o.per_type) {
            committed += t.committed;
            aborts.merge(&t.aborts);
            latency_ns.add(&t.latency_ns).map_err(|e| format!("merging latency histograms: {e}"))?;
            sum.committed += t.committed;
            sum.aborts.merge(&t.aborts);
            sum.latency_ns.add(&t.latency_ns).map_err(|e| format!("merging latency histograms: {e}"))?;
            for (a, b) in sum.breakdown.iter_mut().zip(t.breakdown) {
                *a += b;
            }
            sum.sampled += t.sampled;
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
        per_second,
        warmup: cfg.warmup,
        breakdown_all: None,
        ts_at_measure,
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
    breakdown: [u64; 7],
    sampled: u64,
}

impl TypeTally {
    fn new() -> TypeTally {
        TypeTally {
            committed: 0,
            aborts: AbortCounts::default(),
            latency_ns: new_histogram(),
            breakdown: [0; 7],
            sampled: 0,
        }
    }

    /// Forgets the warm-up.
    fn reset(&mut self) {
        (self.committed, self.aborts, self.breakdown, self.sampled) = (0, AbortCounts::default(), [0; 7], 0);
        self.latency_ns.reset();
    }
}

/// The state a breakdown compares against after a transaction: the tick
/// counter, the engine's parts, and the aborted attempts' totals.
#[derive(Clone, Copy)]
struct Clocks {
    now: u64,
    parts: [u64; 5],
    regions: [u64; 5],
    wasted: (u64, [u64; 5]),
}

impl Clocks {
    #[inline]
    fn read() -> Clocks {
        Clocks {
            now: multiverse::research::breakdown::now(),
            parts: multiverse::research::breakdown::thread_totals(),
            regions: multiverse::research::breakdown::thread_regions(),
            wasted: multiverse_workloads::wasted::totals(),
        }
    }

    /// Adds what happened since `self` to `into` (COMPONENTS order): a
    /// committed transaction's parts are the engine's less what its aborted
    /// attempts added; a rolled-back one's time is all thrown away. The
    /// timers' own cost (`cost`, per region: ticks inside it, and its whole
    /// cost) is taken out of the parts and of the transaction's time, so
    /// that the components add up to what it would have taken untimed.
    fn add_since(&self, committed: bool, cost: (f64, f64), into: &mut [u64; 7]) {
        let now = Clocks::read();
        let regions: [u64; 5] = std::array::from_fn(|i| now.regions[i].wrapping_sub(self.regions[i]));
        let timers = (regions.iter().sum::<u64>() as f64 * cost.1) as u64;
        let total = now.now.wrapping_sub(self.now).saturating_sub(timers);
        if !committed {
            into[1] = into[1].wrapping_add(total);
            return;
        }
        let wasted = now.wasted.0.wrapping_sub(self.wasted.0);
        let mut used = wasted;
        for i in 0..5 {
            let part = now.parts[i]
                .wrapping_sub(self.parts[i])
                .wrapping_sub(now.wasted.1[i].wrapping_sub(self.wasted.1[i]))
                .saturating_sub((regions[i] as f64 * cost.0) as u64);
            into[2 + i] = into[2 + i].wrapping_add(part);
            used = used.wrapping_add(part);
        }
        into[1] = into[1].wrapping_add(wasted);
        into[0] = into[0].wrapping_add(total.saturating_sub(used));
    }
}

struct WorkerOutcome {
    per_type: Vec<TypeTally>,
    cpu_ns: u64,
    wait_ns: u64,
}

/// What a worker's loop is given besides its database and worker.
struct Loop<'a> {
    /// Transaction types of the workload.
    types: usize,
    opts: TxnOptions<'static>,
    retry: Retry,
    phase: &'a AtomicU8,
    barrier: &'a Barrier,
    progress: &'a Progress,
    /// Take a time breakdown: with the timers' cost per region, `(inside,
    /// whole)` in ticks (`multiverse::research::breakdown::region_cost`).
    breakdown: Option<(f64, f64)>,
    ceiling: Option<Ceiling<'a>>,
}

/// `--protocol none` or `bare`: what the workers run on (see [`super::ceiling`]).
pub use super::ceiling::Target as Ceiling;

/// The per-thread loop: one `Instant` and one histogram record per
/// committed transaction, into the histogram of its type. Never inlined:
/// `scripts/perf-gate` counts instructions from its entry (callgrind's
/// `--toggle-collect=*worker_loop*`), and it is called once per thread.
#[inline(never)]
fn worker_loop<S: Store, K: Worker>(db: &S, worker: &mut K, l: Loop<'_>) -> Result<WorkerOutcome, TxnError> {
    let Loop { types, opts, retry, phase, barrier, progress, breakdown, ceiling } = l;
    // xorshift64's state (never 0), a different sequence per worker.
    let mut sample_in = (0x9E37_79B9_7F4A_7C15u64 ^ (worker as *const K as u64)) | 1;
    let mut per_type: Vec<TypeTally> = (0..types.max(1)).map(|_| TypeTally::new()).collect();
    let mut committed = 0u64;
    barrier.wait();
    // Relaxed (and below): the phase needs no ordering; a switch is seen
    // within a transaction or two.
    let mut seen = phase.load(Ordering::Relaxed);
    let mut cpu_start = sys::thread_cpu_ns();
    let mut last = Instant::now();
    loop {
        let now_phase = phase.load(Ordering::Relaxed);
        if now_phase == STOP {
            break;
        }
        if now_phase != seen {
            // The warm-up ended: what it counted is not measured.
            seen = now_phase;
            per_type.iter_mut().for_each(TypeTally::reset);
            cpu_start = sys::thread_cpu_ns();
            last = Instant::now();
        }
        worker.next_txn();
        let ty = worker.txn_type();
        debug_assert!(ty < per_type.len(), "txn_type {ty} out of range");
        let tally = &mut per_type[ty.min(types.max(1) - 1)];
        // A breakdown times one transaction in SAMPLE_EVERY (its timers'
        // reads of the tick counter cost too much to time them all), drawn
        // at random: every SAMPLE_EVERY-th would alias with the engine's
        // own periods (a worker collects garbage every few transactions,
        // and with a fixed stride the timed ones hit a collection three
        // times as often as the others did).
        sample_in ^= sample_in << 13;
        sample_in ^= sample_in >> 7;
        sample_in ^= sample_in << 17;
        let clocks = (breakdown.is_some() && sample_in % u64::from(SAMPLE_EVERY) == 0).then(|| {
            multiverse::research::breakdown::set_sampling(true);
            Clocks::read()
        });
        let done = match ceiling {
            None => db.run_txn(worker, opts, retry, &mut tally.aborts),
            Some(Ceiling::NoCc(nocc, table)) => {
                worker.execute(&mut super::ceiling::CeilingTxn::new(nocc, table)).map(|()| {
                    worker.committed();
                    true
                })
            }
            Some(Ceiling::Bare(bare, table)) => {
                worker.execute(&mut super::ceiling::bare::BareTxn::over(bare, table)).map(|()| {
                    worker.committed();
                    true
                })
            }
        };
        if let Some(c) = clocks {
            multiverse::research::breakdown::set_sampling(false);
            let done = matches!(done, Ok(true));
            c.add_since(done, breakdown.unwrap_or_default(), &mut tally.breakdown);
            tally.sampled += done as u64;
        }
        let done = done?;
        let now = Instant::now();
        if done {
            tally.latency_ns.saturating_record(now.duration_since(last).as_nanos() as u64);
            tally.committed += 1;
            committed += 1;
            // Relaxed: read for estimates and the per-second series; alone
            // on its line, so the store stays in this core's cache.
            progress.0.store(committed, Ordering::Relaxed);
        }
        last = now;
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
/// The warm-up ends, and the per-second samples are taken, on the
/// sequencer thread too, every 64 offers.
struct BohmFeed<'w, W: Workload + 'w> {
    pool: Vec<WorkerProc<W::Worker<'w>>>,
    /// Every worker made (to call `finish` on all of them at the end).
    made: usize,
    /// When the warm-up ends (None once it has).
    warm_end: Option<Instant>,
    duration: Duration,
    deadline: Instant,
    /// The measured time's start, and the process's CPU time then.
    start: Instant,
    cpu0: Option<u64>,
    series: Option<PerSecond>,
    /// Committed transactions, warm-up included (the series' count).
    count: u64,
    per_type: Vec<TypeTally>,
    checks: u32,
    failure: Option<String>,
}

impl<'w, W: Workload + 'w> Feed<WorkerProc<W::Worker<'w>>> for BohmFeed<'w, W> {
    fn next(&mut self, _idle: bool) -> Next<WorkerProc<W::Worker<'w>>> {
        self.checks += 1;
        if self.checks % 64 == 0 {
            let now = Instant::now();
            if self.warm_end.is_some_and(|w| now >= w) {
                // The warm-up ended: what it counted is not measured.
                self.warm_end = None;
                self.per_type.iter_mut().for_each(TypeTally::reset);
                (self.start, self.deadline, self.cpu0) = (now, now + self.duration, sys::process_cpu_ns());
                self.series = Some(PerSecond::new(now, self.count));
            }
            if let Some(ps) = self.series.as_mut() {
                ps.sample(now, self.count);
            }
            if now >= self.deadline {
                return Next::Stop;
            }
        }
        if self.failure.is_some() {
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
                self.count += 1;
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

/// Runs a workload through BOHM's pipeline for `cfg.warmup`, then measures
/// it for `cfg.duration` (the sequencer is this thread, pinned to the first
/// `cfg.pin` CPU if given; `bohm.cc_threads` and `bohm.exec_threads` more
/// threads plan and execute, not pinned). Latency is from entering the log
/// to completion.
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
    if let Some(&cpu) = cfg.pin.first() {
        pin_to(cpu)?;
    }
    let per_type = (0..types).map(|_| TypeTally::new()).collect();
    let start = Instant::now();
    let warm = !cfg.warmup.is_zero();
    let feed = BohmFeed::<W> {
        pool,
        made: n,
        warm_end: warm.then(|| start + cfg.warmup),
        duration: cfg.duration,
        deadline: start + cfg.warmup + cfg.duration,
        start,
        cpu0: sys::process_cpu_ns(),
        series: (!warm).then(|| PerSecond::new(start, 0)),
        count: 0,
        per_type,
        checks: 0,
        failure: None,
    };
    let (mut feed, stats) = db.bohm_run(bohm, feed).map_err(|e| e.to_string())?;
    let end = Instant::now();
    let elapsed = end - feed.start;
    let cpu_ns = match (feed.cpu0, sys::process_cpu_ns()) {
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
    let per_second = feed.series.take().map_or_else(Vec::new, |ps| ps.finish(end, feed.count));
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
            breakdown: [0; 7],
            sampled: 0,
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
        per_second,
        warmup: cfg.warmup,
        // The stages' totals cover every transaction through the log,
        // warm-up included: per transaction, the same mean.
        breakdown_all: stats.breakdown.map(|[useful, index, validation, wait, gc, log_wait]| {
            ([useful, 0, index, validation, wait, gc, log_wait], stats.txns)
        }),
        // BOHM's warm-up ends on the sequencer thread; its clock (the
        // pipeline's timestamps) is not the engine's counter anyway.
        ts_at_measure: None,
    })
}
