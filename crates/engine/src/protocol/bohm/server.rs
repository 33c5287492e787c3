//! Running a pipeline: `Database::bohm_run` over a [`Feed`], and
//! `Database::bohm_serve`'s [`Server`], whose clients block until their
//! transaction has run (the public methods are in `db::bohm`).

use super::*;

impl Store {
    /// Runs BOHM's pipeline over `feed` (section 3; `Database::bohm_run`):
    /// the calling thread is the sequencer.
    pub(crate) fn run<P: Procedure, F: Feed<P>>(&self, db: &Shared, cfg: Config, mut feed: F) -> Result<(F, RunStats)> {
        let store = self;
        cfg.check()?;
        let _gate = store.gate.lock();
        let n = cfg.batch_size * cfg.batches_in_flight;
        let pipe = Pipeline {
            db,
            store,
            cfg,
            cells: (0..n).map(|_| TxnCell::new()).collect(),
            lens: (0..cfg.batches_in_flight).map(|_| AtomicU64::new(0)).collect(),
            published: CachePadded::new(AtomicU64::new(0)),
            last: CachePadded::new(AtomicU64::new(u64::MAX)),
            cc_done: (0..cfg.cc_threads).map(|_| CachePadded::new(AtomicU64::new(0))).collect(),
            exec_done: (0..cfg.exec_threads).map(|_| CachePadded::new(AtomicU64::new(0))).collect(),
            recording: db.recording(),
            blocked: AtomicU64::new(0),
            recursive: AtomicU64::new(0),
            ticks: Default::default(),
            panic: Mutex::new(None),
            log_failed: Mutex::new(None),
        };
        let pipe = &pipe;
        let stats = std::thread::scope(|s| {
            let spawn = |name: String| std::thread::Builder::new().name(name).stack_size(16 << 20);
            let mut cc = Vec::new();
            for i in 0..cfg.cc_threads {
                cc.push(spawn(format!("bohm-cc-{i}")).spawn_scoped(s, move || pipe.control(i)));
            }
            let mut ex = Vec::new();
            for i in 0..cfg.exec_threads {
                ex.push(spawn(format!("bohm-exec-{i}")).spawn_scoped(s, move || pipe.execute(i)));
            }
            let stats = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pipe.sequence(&mut feed)));
            if stats.is_err() {
                // The feed panicked: stop after what was published, so the
                // other threads finish and can be joined.
                // Release: as in `sequence`.
                pipe.last.store(pipe.published.load(Ordering::Acquire), Ordering::Release);
            }
            for h in cc {
                h.expect("spawning a BOHM thread").join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            }
            for h in ex {
                let (c, a) = h.expect("spawning a BOHM thread").join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                // Relaxed: statistics only.
                store.committed.fetch_add(c, Ordering::Relaxed);
                for (i, n) in a.iter().enumerate() {
                    store.aborts[i].fetch_add(*n, Ordering::Relaxed);
                }
            }
            stats
        });
        if let Some(p) = pipe.panic.lock().take() {
            std::panic::resume_unwind(p);
        }
        let mut stats = stats.unwrap_or_else(|p| std::panic::resume_unwind(p));
        if let Some(e) = pipe.log_failed.lock().take() {
            return Err(e);
        }
        // Relaxed: every thread that added to them has been joined.
        let ticks = pipe.ticks.each_ref().map(|t| t.load(Ordering::Relaxed));
        stats.breakdown = ticks.iter().any(|&t| t > 0).then_some(ticks);
        Ok((feed, stats))
    }

    /// Runs BOHM's pipeline as a server for the duration of `f`
    /// (`Database::bohm_serve`).
    pub(crate) fn serve<P: Procedure, R>(
        &self,
        db: &Shared,
        cfg: Config,
        f: impl FnOnce(&Server<P>) -> R,
    ) -> Result<R> {
        cfg.check()?;
        let shared = Arc::new(ServerShared {
            queue: Mutex::new(ServerQueue { items: VecDeque::new(), shut: false }),
            cv: Condvar::new(),
        });
        let server = Server { shared: shared.clone() };
        std::thread::scope(|s| {
            let feed = ServerFeed { shared: shared.clone() };
            let h = std::thread::Builder::new()
                .name("bohm-sequencer".into())
                .spawn_scoped(s, move || self.run(db, cfg, feed).map(|_| ()))
                .map_err(|e| Error::InvalidArgument(format!("cannot start the BOHM sequencer: {e}")))?;
            // Stops the server however `f` ends (a panic included), so the
            // sequencer finishes and the scope can join it.
            struct Stop<'a, P: Procedure>(&'a Server<P>);
            impl<P: Procedure> Drop for Stop<'_, P> {
                fn drop(&mut self) {
                    self.0.shutdown();
                }
            }
            let stop = Stop(&server);
            let r = f(&server);
            drop(stop);
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
            Ok(r)
        })
    }
}

struct ServerQueue<P: Procedure> {
    items: VecDeque<Ticket<P>>,
    shut: bool,
}

struct ServerShared<P: Procedure> {
    queue: Mutex<ServerQueue<P>>,
    cv: Condvar,
}

/// A reply slot for one blocking call.
struct Reply<P: Procedure> {
    done: Mutex<Option<Done<P>>>,
    cv: Condvar,
}

/// A transaction submitted through [`Server::execute`], with its reply slot.
struct Ticket<P: Procedure> {
    proc: P,
    reply: Arc<Reply<P>>,
}

impl<P: Procedure> Procedure for Ticket<P> {
    type Error = P::Error;
    fn declare(&self, access: &mut AccessSet) {
        self.proc.declare(access)
    }
    fn run(&mut self, t: &mut ExecTxn<'_>) -> std::result::Result<(), P::Error> {
        self.proc.run(t)
    }
}

struct ServerFeed<P: Procedure> {
    shared: Arc<ServerShared<P>>,
}

impl<P: Procedure> Feed<Ticket<P>> for ServerFeed<P> {
    fn next(&mut self, idle: bool) -> Next<Ticket<P>> {
        let mut q = self.shared.queue.lock();
        if q.items.is_empty() && !q.shut && idle {
            // Nothing in flight: sleep until a client comes (bounded, so
            // a shutdown is never missed).
            self.shared.cv.wait_for(&mut q, Duration::from_millis(5));
        }
        match q.items.pop_front() {
            Some(t) => Next::Txn(t),
            None if q.shut => Next::Stop,
            None => Next::Wait,
        }
    }
    fn done(&mut self, d: Done<Ticket<P>>) {
        let Ticket { proc, reply } = d.proc;
        *reply.done.lock() = Some(Done { proc, outcome: d.outcome, ts: d.ts, latency: d.latency });
        reply.cv.notify_one();
    }
}

/// A running BOHM server (see [`Database::bohm_serve`](crate::Database::bohm_serve)).
pub struct Server<P: Procedure> {
    shared: Arc<ServerShared<P>>,
}

impl<P: Procedure> Server<P> {
    /// Submits a transaction and waits until it has run; returns how it
    /// ended. Fails with [`Error::ShuttingDown`] (without running it) once
    /// the server has begun to stop.
    pub fn execute(&self, proc: P) -> Result<Done<P>> {
        let reply = Arc::new(Reply { done: Mutex::new(None), cv: Condvar::new() });
        {
            let mut q = self.shared.queue.lock();
            if q.shut {
                return Err(Error::ShuttingDown);
            }
            q.items.push_back(Ticket { proc, reply: reply.clone() });
        }
        self.shared.cv.notify_one();
        let mut d = reply.done.lock();
        loop {
            if let Some(done) = d.take() {
                return Ok(done);
            }
            reply.cv.wait(&mut d);
        }
    }

    /// Stops taking transactions; those already taken still run.
    pub fn shutdown(&self) {
        self.shared.queue.lock().shut = true;
        self.shared.cv.notify_all();
    }

    /// False once [`Server::shutdown`] was called.
    pub fn is_running(&self) -> bool {
        !self.shared.queue.lock().shut
    }
}
