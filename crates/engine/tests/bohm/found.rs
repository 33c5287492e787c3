//! Found problems, now fixed: a declaration that inherited the previous one
//! at its log position, and panics (in a procedure, a feed, a server's
//! closure) that left the pipeline waiting forever.

use super::*;

/// Declares its own record by pushing onto the access set it is given
/// (it does not clear it first: nothing says it must), then writes it and,
/// if it can, a record it did not declare.
struct Pushy {
    t: TableId,
    own: u64,
    other: u64,
}

impl Procedure for Pushy {
    type Error = Error;
    fn declare(&self, a: &mut AccessSet) {
        a.writes.push((self.t, Key::from(self.own)));
    }
    fn run(&mut self, tx: &mut ExecTxn<'_>) -> Result<(), Error> {
        tx.update(self.t, Key::from(self.own), enc(1))?;
        match tx.update(self.t, Key::from(self.other), enc(1)) {
            Err(Error::NotDeclared(_)) => Ok(()),
            r => r,
        }
    }
}

/// `Procedure::declare` is handed the access set of the log position's
/// previous transaction: a procedure that only adds its records inherits
/// the previous declaration, and its undeclared write is let through
/// instead of refused.
#[test]
fn declarations_start_empty() {
    let (db, t) = open(8);
    struct Feed8 {
        t: TableId,
        i: u64,
        done: Vec<Done<Pushy>>,
    }
    impl Feed<Pushy> for Feed8 {
        fn next(&mut self, _: bool) -> Next<Pushy> {
            if self.i == 16 {
                return Next::Stop;
            }
            self.i += 1;
            // Transaction i goes to log position i mod 4 (batches of 2, 2 in
            // flight); the one before it there declared `other`.
            Next::Txn(Pushy { t: self.t, own: self.i % 8, other: (self.i + 4) % 8 })
        }
        fn done(&mut self, d: Done<Pushy>) {
            self.done.push(d);
        }
    }
    let (feed, _) = db.bohm_run(cfg((1, 1, 2, 2)), Feed8 { t, i: 0, done: Vec::new() }).unwrap();
    let let_through: Vec<u64> = feed.done.iter().filter(|d| d.outcome.is_committed()).map(|d| d.ts).collect();
    assert!(let_through.is_empty(), "undeclared writes were let through (committed) in T{let_through:?}");
    assert!((0..8).all(|k| value(&db, t, k) == Some(0)));
}

/// A procedure that panics.
struct Panics;

impl Procedure for Panics {
    type Error = ();
    fn declare(&self, a: &mut AccessSet) {
        a.reads.clear();
        a.writes.clear();
    }
    fn run(&mut self, _: &mut ExecTxn<'_>) -> Result<(), ()> {
        panic!("a procedure panicked (on purpose)");
    }
}

struct OnePanic(bool);

impl Feed<Panics> for OnePanic {
    fn next(&mut self, _: bool) -> Next<Panics> {
        if std::mem::replace(&mut self.0, true) {
            Next::Stop
        } else {
            Next::Txn(Panics)
        }
    }
    fn done(&mut self, _: Done<Panics>) {}
}

/// Runs `f` on a thread of its own and says whether it ended (by
/// returning or panicking) within `secs`; a hung thread is left behind.
fn ends_within(secs: u64, f: impl FnOnce() + Send + 'static) -> bool {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r.is_err());
    });
    rx.recv_timeout(Duration::from_secs(secs)).is_ok()
}

/// A procedure that panics makes `bohm_run` panic (the pipeline's threads
/// are joined and the panic passed on), instead of leaving the run waiting
/// forever for the execution thread that died.
#[test]
fn a_panicking_procedure_ends_the_run() {
    let db = Arc::new(open(1).0);
    let ended = ends_within(5, move || {
        let _ = db.bohm_run(cfg((1, 1, 1, 2)), OnePanic(false));
    });
    assert!(ended, "bohm_run hangs after a procedure panicked");
}

/// A feed that panics when a transaction comes back.
struct PanickyFeed(TableId, u64);

impl Feed<Incr> for PanickyFeed {
    fn next(&mut self, _: bool) -> Next<Incr> {
        self.1 += 1;
        if self.1 > 10 {
            Next::Stop
        } else {
            Next::Txn(Incr { t: self.0, keys: vec![0] })
        }
    }
    fn done(&mut self, _: Done<Incr>) {
        panic!("a feed panicked (on purpose)");
    }
}

/// A feed that panics (on the sequencer thread, the caller's) makes
/// `bohm_run` panic, instead of leaving the pipeline's threads waiting for
/// batches that never come while the caller waits for them.
#[test]
fn a_panicking_feed_ends_the_run() {
    let (db, t) = open(1);
    let db = Arc::new(db);
    let ended = ends_within(5, move || {
        let _ = db.bohm_run(cfg((1, 1, 2, 2)), PanickyFeed(t, 0));
    });
    assert!(ended, "bohm_run hangs after its feed panicked");
}

/// A panic in `bohm_serve`'s closure stops the server and passes the
/// panic on, instead of leaving the sequencer waiting for a shutdown that
/// never comes.
#[test]
fn a_panicking_server_closure_ends_the_serve() {
    let (db, t) = open(1);
    let db = Arc::new(db);
    let ended = ends_within(5, move || {
        let _ = db.bohm_serve(cfg((1, 1, 4, 2)), |server: &Server<Incr>| {
            server.execute(Incr { t, keys: vec![0] }).unwrap();
            panic!("the closure panicked (on purpose)");
        });
    });
    assert!(ended, "bohm_serve hangs after its closure panicked");
}
