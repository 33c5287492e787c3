//! BOHM's public entry points on [`Database`]: running the pipeline over a
//! feed or as a server (`protocol::bohm`, section 3), and taking the store
//! for an interactive transaction.

use crate::protocol::bohm::{Config, Feed, Procedure, RunStats, Server, Store};
use crate::{Database, Error, Result};

impl Database {
    pub(crate) fn bohm_store(&self) -> Result<&Store> {
        self.globals.bohm().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "the BOHM pipeline needs a database opened with protocol bohm, not {}",
                self.opts.protocol
            ))
        })
    }

    /// Runs BOHM's pipeline over a stream of transactions (section 3): the
    /// calling thread is the sequencer, `cfg.cc_threads` and
    /// `cfg.exec_threads` more threads plan and execute. Returns when the
    /// feed has stopped and everything it gave has finished (each handed
    /// back through [`Feed::done`]). Waits first for interactive
    /// transactions and other runs to end; they wait for this one.
    ///
    /// ```
    /// use multiverse::protocol::bohm::{Config, Done, ExecTxn, Feed, Next, Procedure};
    /// use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
    ///
    /// /// Adds one to a counter row.
    /// struct Incr(HashTableId);
    /// impl Procedure for Incr {
    ///     type Error = Error;
    ///     fn declare(&self, access: &mut AccessSet) {
    ///         access.write(self.0, Key::from(1));
    ///     }
    ///     fn run(&mut self, t: &mut ExecTxn<'_>) -> Result<(), Error> {
    ///         t.modify(self.0, &Key::from(1), |v| v[0] += 1)
    ///     }
    /// }
    /// /// Ten of them, then stop.
    /// struct Ten {
    ///     table: HashTableId,
    ///     left: u32,
    ///     committed: u32,
    /// }
    /// impl Feed<Incr> for Ten {
    ///     fn next(&mut self, _idle: bool) -> Next<Incr> {
    ///         if self.left == 0 {
    ///             return Next::Stop;
    ///         }
    ///         self.left -= 1;
    ///         Next::Txn(Incr(self.table))
    ///     }
    ///     fn done(&mut self, d: Done<Incr>) {
    ///         self.committed += d.outcome.is_committed() as u32;
    ///     }
    /// }
    ///
    /// let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0])).unwrap();
    /// let (feed, stats) = db.bohm_run(Config::default(), Ten { table: t, left: 10, committed: 0 }).unwrap();
    /// assert_eq!((feed.committed, stats.txns), (10, 10));
    /// assert_eq!(db.run(Isolation::Serializable, |x| x.get(t, &Key::from(1))).unwrap(), Some(vec![10]));
    /// ```
    pub fn bohm_run<P: Procedure, F: Feed<P>>(&self, cfg: Config, feed: F) -> Result<(F, RunStats)> {
        self.bohm_store()?.run(&self.shared, cfg, feed)
    }

    /// Runs BOHM's pipeline as a server for the duration of `f`: any thread
    /// may call [`Server::execute`], which blocks until its transaction has
    /// run. When `f` returns, the server stops taking transactions,
    /// finishes those it took, and stops.
    ///
    /// ```
    /// use multiverse::protocol::bohm::{Config, ExecTxn, Procedure};
    /// use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
    ///
    /// /// Writes a row.
    /// struct Put(HashTableId, u64);
    /// impl Procedure for Put {
    ///     type Error = Error;
    ///     fn declare(&self, access: &mut AccessSet) {
    ///         access.write(self.0, Key::from(self.1));
    ///     }
    ///     fn run(&mut self, t: &mut ExecTxn<'_>) -> Result<(), Error> {
    ///         t.insert(self.0, Key::from(self.1), b"v")
    ///     }
    /// }
    ///
    /// let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// let committed = db
    ///     .bohm_serve(Config::default(), |server| {
    ///         // Any number of client threads may call `execute`.
    ///         std::thread::scope(|s| {
    ///             let clients: Vec<_> = (0..4).map(|k| s.spawn(move || server.execute(Put(t, k)).unwrap())).collect();
    ///             clients.into_iter().map(|c| c.join().unwrap()).filter(|d| d.outcome.is_committed()).count()
    ///         })
    ///     })
    ///     .unwrap();
    /// assert_eq!(committed, 4);
    /// assert_eq!(db.run(Isolation::Serializable, |x| x.get(t, &Key::from(3))).unwrap(), Some(b"v".to_vec()));
    /// ```
    pub fn bohm_serve<P: Procedure, R>(&self, cfg: Config, f: impl FnOnce(&Server<P>) -> R) -> Result<R> {
        self.bohm_store()?.serve(&self.shared, cfg, f)
    }
}
