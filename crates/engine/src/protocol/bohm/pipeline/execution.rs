//! BOHM's execution threads (section 3.3.1): each takes a batch once every
//! concurrency-control thread has finished it, and evaluates its share of
//! the transactions, producing a placeholder's writer recursively (bounded
//! by `MAX_DEPTH`) when it can claim it.

use super::*;
use crate::obs;

impl<'db, P: Procedure> Pipeline<'db, P> {
    #[inline(never)]
    pub(in crate::protocol::bohm) fn execute(&self, me: usize) -> (u64, [u64; AbortReason::COUNT]) {
        let k = self.cfg.exec_threads;
        let mut tally = (0u64, [0u64; AbortReason::COUNT]);
        let mut pending = Vec::new();
        let mut b = 0u64;
        let timing = self.timing_start();
        let (mut work, parts_before) = (0u64, breakdown::thread_totals());
        while self.wait_published(b) {
            let span = obs::span!(trace, "exec", batch = b);
            // Wait for every concurrency-control thread to finish the batch.
            let mut idle = Idle::new();
            // Acquire: pairs with their Release; placeholders are in place.
            while self.cc_done.iter().any(|d| d.load(Ordering::Acquire) <= b) {
                idle.wait();
            }
            let started = timing.map(|_| breakdown::now());
            pending.clear();
            for i in (me..self.len(b)).step_by(k) {
                if !matches!(self.try_evaluate(self.cell(b, i), 0), Eval::Complete) {
                    pending.push(i);
                }
            }
            let mut idle = Idle::new();
            while !pending.is_empty() {
                pending.retain(|&i| !matches!(self.try_evaluate(self.cell(b, i), 0), Eval::Complete));
                if !pending.is_empty() {
                    let _waiting = breakdown::span(Part::Wait);
                    idle.wait();
                }
            }
            if let Some(t) = started {
                work += breakdown::now().saturating_sub(t);
            }
            for i in (me..self.len(b)).step_by(k) {
                // SAFETY: complete; the outcome is no longer written (the
                // Acquire in try_evaluate saw COMPLETE).
                match unsafe { &*self.cell(b, i).inner.get() }.decided {
                    Some(Outcome::Committed) => tally.0 += 1,
                    _ => tally.1[AbortReason::User as usize] += 1,
                }
            }
            // Release: this batch's transactions are complete (GC and the
            // sequencer Acquire it in `low`).
            self.exec_done[me].store(b + 1, Ordering::Release);
            span.end();
            b += 1;
        }
        // Useful: the evaluation time not in a timed part.
        let inside: u64 = breakdown::thread_totals().iter().zip(parts_before).map(|(n, s)| n - s).sum();
        self.timing_end(timing, work.saturating_sub(inside));
        tally
    }

    /// Claims and evaluates a transaction if it is Unprocessed.
    fn try_evaluate(&self, cell: &TxnCell<P>, depth: usize) -> Eval {
        // Acquire: a COMPLETE seen here makes the outcome and placeholders
        // visible (pairs with the Release that completed it).
        let word = cell.state.load(Ordering::Acquire);
        match word & 3 {
            COMPLETE => Eval::Complete,
            EXECUTING => Eval::Busy,
            _ => {
                // Acquire: the last evaluation's writes (given back with
                // Release) are visible to this one.
                match cell.state.compare_exchange(word, word | EXECUTING, Ordering::Acquire, Ordering::Relaxed) {
                    Ok(_) => self.evaluate(cell, depth),
                    Err(now) if now & 3 == COMPLETE => Eval::Complete,
                    Err(_) => Eval::Busy,
                }
            }
        }
    }

    /// Evaluates a claimed transaction: runs its logic (unless an earlier
    /// run decided it), then finishes its placeholders.
    fn evaluate(&self, cell: &TxnCell<P>, depth: usize) -> Eval {
        // SAFETY: we hold the claim (Executing): the inner state is ours.
        let inner = unsafe { &mut *cell.inner.get() };
        let word = inner.plan.ts << 2;
        if inner.decided.is_none() {
            inner.plan.written.iter_mut().for_each(|w| *w = UNWRITTEN);
            inner.plan.history.clear();
            let mut proc = inner.proc.take().expect("a logged transaction has its procedure");
            let mut t = ExecTxn {
                pipe: self as *const Self as *const u8,
                produce: run_for::<P>,
                depth,
                plan: &mut inner.plan,
                max_value: self.db.opts.max_value_size,
                blocked: false,
                refused: None,
                cursor: 0,
            };
            let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| proc.run(&mut t))) {
                Ok(r) => r,
                Err(payload) => {
                    // The run goes on (a batch left half done would stall
                    // every thread); bohm_run re-raises the panic at the end.
                    self.panic.lock().get_or_insert(payload);
                    t.blocked = false;
                    t.refused.get_or_insert_with(|| Error::InvalidArgument("the procedure panicked".into()));
                    Ok(())
                }
            };
            let (blocked, refused) = (t.blocked, t.refused.take());
            inner.proc = Some(proc);
            if blocked {
                // Relaxed: statistics only.
                self.blocked.fetch_add(1, Ordering::Relaxed);
                // Release: give it back for another try.
                cell.state.store(word | UNPROCESSED, Ordering::Release);
                return Eval::Blocked;
            }
            inner.decided = Some(match (refused, r) {
                (Some(e), _) => Outcome::Refused(e),
                (None, Ok(())) => Outcome::Committed,
                (None, Err(e)) => Outcome::Aborted(e),
            });
        }
        let commit = matches!(inner.decided, Some(Outcome::Committed));
        // Every placeholder that does not get this transaction's own value
        // takes its predecessor's, which must be produced first.
        for (i, w) in inner.plan.writes.iter().enumerate() {
            if commit && inner.plan.written[i] != UNWRITTEN {
                continue;
            }
            // Relaxed: set by the planner before the batch was handed over.
            let v = w.load(Ordering::Relaxed);
            // SAFETY: our own placeholder.
            let prev = unsafe { &*v }.prev;
            if !prev.is_null() && !self.produce(prev, depth) {
                // Release: give it back, its outcome decided, for another try.
                cell.state.store(word | UNPROCESSED, Ordering::Release);
                return Eval::Blocked;
            }
        }
        // Logging: the redo record goes out before the placeholders are
        // produced, so a reader of our values appends after us
        // (`wal::log`).
        if commit {
            if let Some(log) = &self.db.log {
                inner.epoch = self.log_redo(log, inner);
            }
        }
        for (i, w) in inner.plan.writes.iter().enumerate() {
            // Relaxed: as above.
            let v = w.load(Ordering::Relaxed);
            // SAFETY: our own placeholder; nobody reads it while PENDING.
            let ver = unsafe { &*v };
            if ver.state.load(Ordering::Relaxed) != PENDING {
                continue; // declared twice: installed already
            }
            let state = if commit && inner.plan.written[i] != UNWRITTEN {
                // SAFETY: our own placeholder, still PENDING: nobody reads it.
                unsafe { *ver.writer.get() = inner.plan.ts };
                inner.plan.written[i]
            } else if ver.prev.is_null() {
                ABSENT
            } else {
                // SAFETY: produced (checked above) and kept alive until this
                // batch is finished (Condition 3).
                let prev = unsafe { &*ver.prev };
                let s = prev.state();
                // SAFETY: `ver` is our PENDING placeholder (nobody reads it);
                // `prev` is produced, so nobody writes it.
                unsafe {
                    *ver.writer.get() = prev.writer();
                    if s == PRESENT {
                        (*ver.data.get()).clear();
                        (*ver.data.get()).extend_from_slice(prev.data());
                    }
                }
                s
            };
            self.store.filled(v);
            // Release: the value and writer are complete.
            ver.state.store(state, Ordering::Release);
            if state == ABSENT {
                self.store.parts[partition_of(ver.table, &ver.key)].notes.lock().push(Note {
                    table: ver.table,
                    key: ver.key.clone(),
                    v,
                });
            }
        }
        if self.recording {
            self.record(inner);
        }
        inner.finished = Instant::now();
        // Release: the transaction and its placeholders are complete.
        cell.state.store(word | COMPLETE, Ordering::Release);
        Eval::Complete
    }

    /// Makes sure a version is produced, evaluating its producer here if
    /// nobody else is (recursively, section 3.3.1). False: not produced yet.
    pub(in crate::protocol::bohm) fn produce(&self, v: *mut BVersion, depth: usize) -> bool {
        // SAFETY: a version some transaction of the log may read is alive.
        let ver = unsafe { &*v };
        if ver.state() != PENDING {
            return true;
        }
        if depth >= MAX_DEPTH {
            return false;
        }
        // SAFETY: a PENDING version's producer is in the log: its cell is
        // in the ring and cannot be reused before the producer completes;
        // the claim names the producer's ts, so a reused cell is refused.
        let cell = unsafe { &*(ver.txn as *const TxnCell<P>) };
        let word = ver.begin << 2;
        // Acquire: as in try_evaluate.
        if cell.state.compare_exchange(word, word | EXECUTING, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            // Relaxed: statistics only.
            self.recursive.fetch_add(1, Ordering::Relaxed);
            self.evaluate(cell, depth + 1);
        }
        ver.state() != PENDING
    }

    /// Hands the finished transaction to the database's history.
    #[cold]
    fn record(&self, inner: &mut CellInner<P>) {
        let ops = std::mem::take(&mut inner.plan.history);
        let (commit_ts, outcome) = match inner.decided {
            Some(Outcome::Committed) => (Some(inner.plan.ts), HOutcome::Committed),
            _ => (None, HOutcome::Aborted(AbortReason::User)),
        };
        self.db.record(TxnRecord {
            id: inner.plan.ts,
            isolation: Isolation::Serializable,
            begin_ts: inner.plan.ts,
            commit_ts,
            outcome,
            // It reads as of its timestamp, which is its commit timestamp.
            locking: true,
            snapshot: false,
            ops,
        });
    }
}

/// What an evaluation attempt came to.
enum Eval {
    Complete,
    /// Given back: a value it needs is not produced yet.
    Blocked,
    /// Another thread is evaluating it.
    Busy,
}

/// Evaluates the producer of a version, type-erased for [`ExecTxn`] (which
/// is not generic, so that workloads implement their operations once).
fn run_for<P: Procedure>(pipe: *const u8, v: *mut BVersion, depth: usize) -> bool {
    // SAFETY: `pipe` is the pipeline of type P that made the ExecTxn.
    let pipe = unsafe { &*(pipe as *const Pipeline<'_, P>) };
    pipe.produce(v, depth)
}
