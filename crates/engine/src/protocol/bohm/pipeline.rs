//! BOHM's pipeline (sections 3.2 and 3.3): the log of batches, each
//! position's plan and cell, the concurrency-control threads that insert
//! placeholders, and the execution threads that evaluate transactions
//! (recursively, bounded by `MAX_DEPTH`).

use super::*;
use crate::obs;

mod execution;

/// Write states an execution tracks for each declared write.
pub(super) const UNWRITTEN: u8 = 0;

/// Declared records a log position keeps room for between transactions. A
/// larger declaration's buffers are given back when its position is reused,
/// so memory follows the transactions in flight, not the largest one each
/// position of the ring ever held.
pub(super) const KEEP: usize = 64;

/// What the sequencer, the concurrency-control threads and the executing
/// thread fill in for one transaction of the log (the part that does not
/// depend on the procedure's type).
#[derive(Default)]
pub(super) struct Plan {
    pub(super) ts: u64,
    pub(super) access: AccessSet,
    /// The `record_hash` of each declared read and of each declared write,
    /// computed once when the transaction enters the log: the
    /// concurrency-control threads partition and look up records by it,
    /// and an execution finds a record among its declared ones by
    /// comparing hashes (one word each) before keys.
    pub(super) read_hash: Vec<u64>,
    pub(super) write_hash: Vec<u64>,
    /// Section 3.2.3: for each declared read, the version to read (null: no
    /// record), written by the partition's concurrency-control thread.
    pub(super) reads: Vec<AtomicPtr<BVersion>>,
    /// For each declared write, its placeholder (duplicates share one).
    pub(super) writes: Vec<AtomicPtr<BVersion>>,
    /// Per declared write: UNWRITTEN, PRESENT or ABSENT, by this run.
    pub(super) written: Vec<u8>,
    /// Declared keys to (read position + 1, write position + 1), built for
    /// large declarations (0: not declared that way).
    pub(super) lookup: Map<(u32, u32)>,
    pub(super) history: Vec<Op>,
    pub(super) recording: bool,
}

impl Plan {
    /// Empties the plan for the next transaction at its position, giving
    /// back what a large declaration made it allocate.
    pub(super) fn reset(&mut self) {
        self.access.reads.clear();
        self.access.reads.shrink_to(KEEP);
        self.access.writes.clear();
        self.access.writes.shrink_to(KEEP);
        self.read_hash.clear();
        self.read_hash.shrink_to(KEEP);
        self.write_hash.clear();
        self.write_hash.shrink_to(KEEP);
        self.reads.clear();
        self.reads.shrink_to(KEEP);
        self.writes.clear();
        self.writes.shrink_to(KEEP);
        self.written.clear();
        self.written.shrink_to(KEEP);
        // Only large declarations build the map: most resets skip it.
        if self.lookup.capacity() > 0 {
            self.lookup.clear();
            self.lookup.shrink_to(KEEP);
        }
    }
}

struct CellInner<P: Procedure> {
    pub(super) plan: Plan,
    proc: Option<P>,
    /// The outcome, once the logic has run to its end.
    decided: Option<Outcome<P::Error>>,
    /// The log epoch of its redo record (durable databases; committed
    /// transactions that wrote).
    epoch: Option<u64>,
    submitted: Instant,
    finished: Instant,
}

/// A transaction in the log (one per position of the ring).
pub(super) struct TxnCell<P: Procedure> {
    /// `ts << 2 | UNPROCESSED / EXECUTING / COMPLETE`.
    pub(super) state: AtomicU64,
    inner: UnsafeCell<CellInner<P>>,
}

impl<P: Procedure> TxnCell<P> {
    pub(super) fn new() -> TxnCell<P> {
        let now = Instant::now();
        TxnCell {
            state: AtomicU64::new(COMPLETE),
            inner: UnsafeCell::new(CellInner {
                plan: Plan::default(),
                proc: None,
                decided: None,
                epoch: None,
                submitted: now,
                finished: now,
            }),
        }
    }
}

/// Per-thread progress, alone on its cache line.
type Progress = CachePadded<AtomicU64>;

/// Everything the pipeline's threads share.
pub(super) struct Pipeline<'db, P: Procedure> {
    pub(super) db: &'db Shared,
    pub(super) store: &'db Store,
    pub(super) cfg: Config,
    pub(super) cells: Box<[TxnCell<P>]>,
    /// Transactions in each batch region.
    pub(super) lens: Box<[AtomicU64]>,
    /// Batches published by the sequencer.
    pub(super) published: Progress,
    /// Total batches, once the feed has stopped (else u64::MAX).
    pub(super) last: Progress,
    /// Batches each concurrency-control thread has finished.
    pub(super) cc_done: Box<[Progress]>,
    /// Batches each execution thread has finished.
    pub(super) exec_done: Box<[Progress]>,
    pub(super) recording: bool,
    pub(super) blocked: AtomicU64,
    pub(super) recursive: AtomicU64,
    /// With `multiverse::research::breakdown` on: the ticks the pipeline's threads
    /// spent, in `RunStats::breakdown`'s order, summed as each thread ends.
    pub(super) ticks: [AtomicU64; 6],
    /// The first panic of a procedure, re-raised when the run has ended.
    pub(super) panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    /// The first failure of the log (sync durability), returned when the
    /// run has ended.
    pub(super) log_failed: Mutex<Option<Error>>,
}

// SAFETY: cells are handed between threads by the batch protocol (module
// docs): the sequencer fills a region before publishing it (Release), the
// concurrency-control threads write only atomics, an execution thread
// touches a cell's inner state only while it holds the claim, and the
// sequencer reuses a region only after every execution thread finished it.
unsafe impl<P: Procedure> Sync for Pipeline<'_, P> {}

/// Waits politely: spins, then yields, then sleeps (an idle pipeline must
/// not eat the CPU the others need; two cores run three kinds of thread).
struct Idle(u32);

impl Idle {
    pub(super) fn new() -> Idle {
        Idle(0)
    }
    fn wait(&mut self) {
        self.0 += 1;
        if self.0 <= 6 {
            for _ in 0..(1 << self.0) {
                std::hint::spin_loop();
            }
        } else if self.0 <= 200 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

impl<'db, P: Procedure> Pipeline<'db, P> {
    #[inline]
    fn batch_size(&self) -> usize {
        self.cfg.batch_size
    }

    #[inline]
    fn cell(&self, batch: u64, i: usize) -> &TxnCell<P> {
        let region = (batch % self.cfg.batches_in_flight as u64) as usize;
        &self.cells[region * self.batch_size() + i]
    }

    #[inline]
    fn len(&self, batch: u64) -> usize {
        // Relaxed: published with the batch (Release on `published`).
        self.lens[(batch % self.cfg.batches_in_flight as u64) as usize].load(Ordering::Relaxed) as usize
    }

    /// The low watermark: batches every execution thread has finished.
    fn low(&self) -> u64 {
        // Acquire: what the execution threads did before finishing is
        // visible to whoever frees or reuses after reading this.
        self.exec_done.iter().map(|d| d.load(Ordering::Acquire)).min().unwrap_or(0)
    }

    /// Waits until batch `b` is published; false once the feed has stopped
    /// before it.
    fn wait_published(&self, b: u64) -> bool {
        let mut idle = Idle::new();
        loop {
            // Acquire: pairs with the sequencer's Release; the batch's cells
            // are filled.
            if self.published.load(Ordering::Acquire) > b {
                return true;
            }
            // Acquire: as above, for the final count.
            if self.last.load(Ordering::Acquire) <= b {
                return false;
            }
            idle.wait();
        }
    }

    // ---------------- the sequencer (section 3.2.1) ----------------

    pub(super) fn sequence<F: Feed<P>>(&self, feed: &mut F) -> RunStats {
        let nb = self.cfg.batches_in_flight as u64;
        let (mut next, mut recycled) = (0u64, 0u64);
        let mut stats = RunStats::default();
        let timing = self.timing_start();
        let mut stopping = false;
        let mut idle = Idle::new();
        loop {
            // Hand back every finished batch, in log order.
            let low = self.low();
            while recycled < low {
                let failed = self.wait_durable(recycled);
                let n = self.len(recycled);
                let mut committed = 0;
                for i in 0..n {
                    let cell = self.cell(recycled, i);
                    // SAFETY: every execution thread has finished the batch
                    // (Acquire in `low`); no one else touches the cell.
                    let inner = unsafe { &mut *cell.inner.get() };
                    let proc = inner.proc.take().expect("a logged transaction has its procedure");
                    let outcome = match (inner.decided.take().expect("a finished transaction has its outcome"), &failed)
                    {
                        // Fail-stop (`wal::log`): executed, not durable.
                        (Outcome::Committed, Some(e)) => Outcome::Refused(e.clone()),
                        (o, _) => o,
                    };
                    let latency = inner.finished.saturating_duration_since(inner.submitted);
                    let ok = matches!(outcome, Outcome::Committed);
                    committed += u64::from(ok);
                    self.db.obs.batch_txn(ok, latency);
                    feed.done(Done { proc, outcome, ts: inner.plan.ts, latency });
                }
                // Counted as `execute` counts them for the statistics.
                self.db.obs.batch(committed, n as u64 - committed, AbortReason::User);
                if let Some(b) = &self.db.budget {
                    self.db.obs.memory_used(|| b.used());
                }
                recycled += 1;
                idle = Idle::new();
            }
            if stopping {
                if recycled == next {
                    break;
                }
                idle.wait();
                continue;
            }
            if next - recycled >= nb {
                idle.wait();
                continue;
            }
            // Fill the next batch region.
            let mut n = 0;
            while n < self.batch_size() {
                match feed.next(n == 0 && next == recycled) {
                    Next::Txn(p) => {
                        self.append(next, n, p);
                        n += 1;
                    }
                    Next::Wait => break,
                    Next::Stop => {
                        stopping = true;
                        break;
                    }
                }
            }
            if n > 0 {
                // Relaxed: published by the Release store of `published` below.
                self.lens[(next % nb) as usize].store(n as u64, Ordering::Relaxed);
                next += 1;
                stats.batches += 1;
                stats.txns += n as u64;
                // Release: the batch's cells are filled.
                self.published.store(next, Ordering::Release);
                idle = Idle::new();
            } else if !stopping {
                idle.wait();
            }
            if stopping {
                // Release: as above; the threads stop after batch `next`.
                self.last.store(next, Ordering::Release);
            }
        }
        // Relaxed: statistics only.
        stats.blocked = self.blocked.load(Ordering::Relaxed);
        stats.recursive = self.recursive.load(Ordering::Relaxed);
        self.timing_end(timing, 0);
        stats
    }

    /// Sync durability: waits until every redo record of finished batch `b`
    /// is durable, before its transactions are handed back (one wait a
    /// batch: group commit). Once the log has failed no batch commits
    /// (fail-stop, `wal::log`): the error is returned for the batch's
    /// transactions and kept for the end of the run.
    fn wait_durable(&self, b: u64) -> Option<Error> {
        let mut epoch = None;
        for i in 0..self.len(b) {
            // SAFETY: every execution thread has finished the batch (the
            // caller's Acquire in `low`); no one else touches the cell.
            epoch = epoch.max(unsafe { &*self.cell(b, i).inner.get() }.epoch);
        }
        // A batch that waits for its round is committed once that round is
        // durable, even if a later one failed; any other batch (nothing
        // written, or asynchronous durability) fails once the log has.
        let synced = epoch.is_some() && self.db.log.as_ref().is_some_and(|l| l.mode() == crate::Durability::Sync);
        let r = if synced { self.db.wait_durable(epoch) } else { self.db.check_log() };
        let e = r.err()?;
        self.log_failed.lock().get_or_insert(e.clone());
        Some(e)
    }

    /// Appends the redo record of a committed transaction: the value (or
    /// absence) of every declared write it made, at its log position.
    fn log_redo(&self, log: &crate::wal::log::Log, inner: &CellInner<P>) -> Option<u64> {
        let plan = &inner.plan;
        let n = plan.written.iter().filter(|&&w| w != UNWRITTEN).count();
        if n == 0 {
            return None;
        }
        let epoch = REDO_BUF.with(|buf| {
            log.append(plan.ts, &mut buf.borrow_mut(), |r| {
                for (i, w) in plan.writes.iter().enumerate() {
                    if plan.written[i] == UNWRITTEN {
                        continue;
                    }
                    // Relaxed: set by the planner before the batch was handed over.
                    // SAFETY: our own placeholder, still PENDING: its data is ours.
                    let v = unsafe { &*w.load(Ordering::Relaxed) };
                    // SAFETY: as above.
                    let value = (plan.written[i] == PRESENT).then(|| unsafe { v.data() });
                    r.put(v.table, v.key.as_bytes(), value);
                }
                n as u32
            })
        });
        Some(epoch)
    }

    /// Appends a transaction at position `i` of batch `b`: its timestamp is
    /// its log position.
    fn append(&self, b: u64, i: usize, p: P) {
        let cell = self.cell(b, i);
        // SAFETY: the region is free (recycled) and not yet published.
        let inner = unsafe { &mut *cell.inner.get() };
        // Relaxed: only the gate's holder advances it.
        let ts = self.store.next_ts.fetch_add(1, Ordering::Relaxed);
        inner.plan.ts = ts;
        // A declaration starts empty: a procedure that forgets to clear must
        // not inherit the previous occupant's records.
        inner.plan.reset();
        p.declare(&mut inner.plan.access);
        inner.proc = Some(p);
        inner.decided = None;
        inner.epoch = None;
        let plan = &mut inner.plan;
        plan.read_hash.extend(plan.access.reads.iter().map(|(t, k)| record_hash(t.0, k)));
        plan.write_hash.extend(plan.access.writes.iter().map(|(t, k)| record_hash(t.0, k)));
        let (nr, nw) = (inner.plan.access.reads.len(), inner.plan.access.writes.len());
        inner.plan.reads.resize_with(nr, || AtomicPtr::new(ptr::null_mut()));
        inner.plan.writes.resize_with(nw, || AtomicPtr::new(ptr::null_mut()));
        inner.plan.written.resize(nw, UNWRITTEN);
        inner.plan.recording = self.recording;
        inner.submitted = Instant::now();
        // Relaxed: published by the Release store of the batch.
        cell.state.store(ts << 2 | UNPROCESSED, Ordering::Relaxed);
    }

    // ---------------- the time breakdown (not in the paper) ----------------
    //
    // With `multiverse::research::breakdown` on, each pipeline thread times its
    // stages, a region a batch (a few reads of the tick counter per batch,
    // so every batch is timed, not a sample): the concurrency-control
    // threads' planning counts as index (a lookup per declared record and a
    // placeholder per write: BOHM's concurrency control is done by finding
    // records), their collection as gc; the execution threads' evaluation
    // of a batch as useful work, less their waits for values not yet
    // produced (wait) and any region timed inside it; the sequencer's wait
    // for the log as log-wait. Pipeline stalls (a stage waiting for the
    // batch before it) are in no part: they are not a transaction's time.

    /// Starts this thread's timing, when the breakdown is on: its totals so
    /// far (None when off).
    pub(super) fn timing_start(&self) -> Option<[u64; 5]> {
        breakdown::enabled().then(|| {
            breakdown::set_sampling(true);
            breakdown::thread_totals()
        })
    }

    /// Adds this thread's timed parts since `start`, and `useful` ticks of
    /// its own, to the pipeline's totals; ends its timing.
    pub(super) fn timing_end(&self, start: Option<[u64; 5]>, useful: u64) {
        let Some(start) = start else { return };
        let now = breakdown::thread_totals();
        // Relaxed: totals read after every thread is joined.
        self.ticks[0].fetch_add(useful, Ordering::Relaxed);
        for (i, (n, s)) in now.iter().zip(start).enumerate() {
            // Relaxed: as above.
            self.ticks[1 + i].fetch_add(n - s, Ordering::Relaxed);
        }
        breakdown::set_sampling(false);
    }

    // ---------- concurrency control (sections 3.2.2-3.2.4) ----------

    // Never inlined (as `execute`): a thread's entry, called once, which
    // a profile names apart (`scripts/perf-gate` counts BOHM over the
    // whole program: see its CALLGRIND_TOGGLES).
    #[inline(never)]
    pub(super) fn control(&self, me: usize) {
        let m = self.cfg.cc_threads;
        let mine: Vec<usize> = (0..PARTITIONS).filter(|p| p % m == me).collect();
        let mut b = 0u64;
        let timing = self.timing_start();
        while self.wait_published(b) {
            let span = obs::span!(trace, "cc", batch = b);
            let low = self.low();
            let gc = breakdown::span(Part::Gc);
            for &p in &mine {
                self.store.collect(p, b, low);
            }
            drop(gc);
            let _planning = breakdown::span(Part::Index);
            for i in 0..self.len(b) {
                self.plan(me, self.cell(b, i), b);
            }
            // Release: the placeholders and annotations of batch b are
            // written; execution threads Acquire this before running it.
            self.cc_done[me].store(b + 1, Ordering::Release);
            span.end();
            b += 1;
        }
        self.timing_end(timing, 0);
        // The end of the run: wait for the execution threads, then free
        // everything superseded, so the store is at rest.
        let mut idle = Idle::new();
        while self.low() < b {
            idle.wait();
        }
        for &p in &mine {
            self.store.collect(p, b, u64::MAX);
        }
    }

    /// One transaction's read and write sets, for the records of this
    /// thread's partitions: reads first (they see the version before the
    /// transaction's own write), then placeholders.
    pub(super) fn plan(&self, me: usize, cell: &TxnCell<P>, batch: u64) {
        let m = self.cfg.cc_threads;
        // SAFETY: published, and only read here (the execution threads do
        // not start on the batch until every concurrency-control thread is
        // done with it).
        let inner = unsafe { &*cell.inner.get() };
        let ts = inner.plan.ts;
        let plan = &inner.plan;
        let (reads, writes) = (&plan.access.reads, &plan.access.writes);
        // A long read set's lookups overlap their misses: the slot of the
        // read AHEAD on, and the version of the one half as far, are
        // requested before this one is looked up (see `Latest`).
        let long = reads.len() > LINEAR;
        let ahead = |j: usize, f: fn(&Latest, u64)| {
            if let Some(&h) = plan.read_hash.get(j) {
                let p = partition_of_hash(h);
                if p % m == me {
                    // SAFETY: we own partition p during the run; the
                    // reference ends with the hint.
                    f(&unsafe { self.store.part(p) }.latest, h);
                }
            }
        };
        for (i, (t, k)) in reads.iter().enumerate() {
            if long {
                ahead(i + AHEAD, Latest::prefetch_slot);
                ahead(i + AHEAD / 2, Latest::prefetch_version);
            }
            let h = plan.read_hash[i];
            let p = partition_of_hash(h);
            if p % m != me {
                continue;
            }
            // A record the transaction also writes is read through its
            // placeholder's Prev Pointer (`ExecTxn::seen`): no annotation.
            if writes.len() <= LINEAR && declared_at(&plan.write_hash, writes, h, *t, k).is_some() {
                continue;
            }
            // SAFETY: we own partition p during the run.
            let part = unsafe { self.store.part(p) };
            let v = part.latest.get_hashed(h, t.0, k);
            // Relaxed: published by the Release on cc_done.
            plan.reads[i].store(v, Ordering::Relaxed);
        }
        for (i, (t, k)) in writes.iter().enumerate() {
            let h = plan.write_hash[i];
            let p = partition_of_hash(h);
            if p % m != me {
                continue;
            }
            // SAFETY: as above.
            let part = unsafe { self.store.part(p) };
            let prev = part.latest.get_hashed(h, t.0, k);
            // SAFETY: the latest version of a record is alive.
            if !prev.is_null() && unsafe { &*prev }.begin == ts {
                // Declared twice: one placeholder.
                plan.writes[i].store(prev, Ordering::Relaxed);
                continue;
            }
            let init = BInit {
                begin: ts,
                txn: cell as *const TxnCell<P> as *const u8,
                prev,
                state: PENDING,
                table: t.0,
                key: k.clone(),
            };
            let v = self.store.alloc(p, part, init);
            if !prev.is_null() {
                // Relaxed: informational (reads are annotated, section 3.2.3).
                // SAFETY: the latest version of a record is alive.
                unsafe { &*prev }.end.store(ts, Ordering::Relaxed);
                // Condition 3: free once every execution thread has finished
                // this batch.
                part.retired.push_back((batch, prev));
            }
            part.latest.set_hashed(h, v);
            // Relaxed: published by the Release on cc_done.
            plan.writes[i].store(v, Ordering::Relaxed);
        }
    }
}
