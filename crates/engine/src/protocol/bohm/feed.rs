//! What a run is fed and what it hands back: the [`Feed`] that gives the
//! sequencer its transactions ([`Next`]) and takes each one back
//! [`Done`], and [`Batch`], a feed of a fixed list.

use super::{Outcome, Procedure};
use std::collections::VecDeque;
use std::time::Duration;

/// A finished transaction, handed back.
///
/// ```
/// # use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
/// # use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
/// # /// Adds one to the first byte of row 1.
/// # struct Incr(HashTableId);
/// # impl Procedure for Incr {
/// #     type Error = Error;
/// #     fn declare(&self, access: &mut AccessSet) {
/// #         access.write(self.0, Key::from(1));
/// #     }
/// #     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
/// #         x.modify(self.0, &Key::from(1), |v| v[0] += 1)
/// #     }
/// # }
/// # let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
/// # let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// # db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0])).unwrap();
/// let (batch, _) = db.bohm_run(Config::default(), Batch::new([Incr(t), Incr(t)])).unwrap();
/// // Handed back in log order, with the procedure and its timestamp.
/// let [a, b] = &batch.done[..] else { panic!() };
/// assert!(a.ts < b.ts && a.outcome.is_committed() && b.outcome.is_committed());
/// assert_eq!(a.proc.0, t);
/// ```
pub struct Done<P: Procedure> {
    /// The procedure (to be reused or inspected).
    pub proc: P,
    /// How it ended.
    pub outcome: Outcome<P::Error>,
    /// Its timestamp: its position in the log and in the serial order.
    pub ts: u64,
    /// From entering the log to completion.
    pub latency: Duration,
}

/// What a feed offers the sequencer next.
///
/// ```
/// # use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
/// # use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
/// # /// Adds one to the first byte of row 1.
/// # struct Incr(HashTableId);
/// # impl Procedure for Incr {
/// #     type Error = Error;
/// #     fn declare(&self, access: &mut AccessSet) {
/// #         access.write(self.0, Key::from(1));
/// #     }
/// #     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
/// #         x.modify(self.0, &Key::from(1), |v| v[0] += 1)
/// #     }
/// # }
/// # let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
/// # let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// # db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0])).unwrap();
/// /// Offers a transaction every other time it is asked, three in all.
/// struct Slow {
///     t: HashTableId,
///     asked: u32,
///     left: u32,
/// }
/// impl Feed<Incr> for Slow {
///     fn next(&mut self, _idle: bool) -> Next<Incr> {
///         self.asked += 1;
///         if self.left == 0 {
///             Next::Stop
///         } else if self.asked % 2 == 1 {
///             Next::Wait
///         } else {
///             self.left -= 1;
///             Next::Txn(Incr(self.t))
///         }
///     }
///     fn done(&mut self, _: Done<Incr>) {}
/// }
/// let (_, stats) = db.bohm_run(Config::default(), Slow { t, asked: 0, left: 3 }).unwrap();
/// assert_eq!(stats.txns, 3);
/// ```
pub enum Next<P> {
    /// A transaction to append to the log.
    Txn(P),
    /// Nothing now; ask again.
    Wait,
    /// The stream has ended: finish what is in the log and stop.
    Stop,
}

/// A stream of transactions for [`Database::bohm_run`](crate::Database::bohm_run). Both methods are
/// called on the sequencer thread.
///
/// ```
/// # use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
/// # use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
/// # /// Adds one to the first byte of row 1.
/// # struct Incr(HashTableId);
/// # impl Procedure for Incr {
/// #     type Error = Error;
/// #     fn declare(&self, access: &mut AccessSet) {
/// #         access.write(self.0, Key::from(1));
/// #     }
/// #     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
/// #         x.modify(self.0, &Key::from(1), |v| v[0] += 1)
/// #     }
/// # }
/// # let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
/// # let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// # db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0])).unwrap();
/// /// Takes transactions from a channel until every sender is gone, and
/// /// counts the committed ones.
/// struct Chan(std::sync::mpsc::Receiver<Incr>, u32);
/// impl Feed<Incr> for Chan {
///     fn next(&mut self, idle: bool) -> Next<Incr> {
///         use std::sync::mpsc::TryRecvError;
///         // Nothing in flight: block until a client sends; else do not.
///         let got = if idle { self.0.recv().map_err(|_| TryRecvError::Disconnected) } else { self.0.try_recv() };
///         match got {
///             Ok(p) => Next::Txn(p),
///             Err(TryRecvError::Empty) => Next::Wait,
///             Err(TryRecvError::Disconnected) => Next::Stop,
///         }
///     }
///     fn done(&mut self, d: Done<Incr>) {
///         self.1 += d.outcome.is_committed() as u32;
///     }
/// }
/// let (tx, rx) = std::sync::mpsc::channel();
/// let client = std::thread::spawn(move || (0..4).for_each(|_| tx.send(Incr(t)).unwrap()));
/// let (feed, _) = db.bohm_run(Config::default(), Chan(rx, 0)).unwrap();
/// client.join().unwrap();
/// assert_eq!(feed.1, 4);
/// assert_eq!(db.run(Isolation::Serializable, |x| x.get(t, &Key::from(1))).unwrap(), Some(vec![4]));
/// ```
pub trait Feed<P: Procedure>: Send {
    /// The next transaction. `idle` says nothing is in flight: the feed may
    /// block for a while (a server waiting for clients).
    ///
    /// ```
    /// # use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
    /// # use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
    /// # /// Adds one to the first byte of row 1.
    /// # struct Incr(HashTableId);
    /// # impl Procedure for Incr {
    /// #     type Error = Error;
    /// #     fn declare(&self, access: &mut AccessSet) {
    /// #         access.write(self.0, Key::from(1));
    /// #     }
    /// #     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
    /// #         x.modify(self.0, &Key::from(1), |v| v[0] += 1)
    /// #     }
    /// # }
    /// # let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
    /// # let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// # db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0])).unwrap();
    /// /// Offers `n` transactions, noting whether the pipeline was idle each time.
    /// struct Watch(HashTableId, u32, Vec<bool>);
    /// impl Feed<Incr> for Watch {
    ///     fn next(&mut self, idle: bool) -> Next<Incr> {
    ///         self.2.push(idle);
    ///         if self.1 == 0 {
    ///             return Next::Stop;
    ///         }
    ///         self.1 -= 1;
    ///         Next::Txn(Incr(self.0))
    ///     }
    ///     fn done(&mut self, _: Done<Incr>) {}
    /// }
    /// let (feed, _) = db.bohm_run(Config::default(), Watch(t, 5, Vec::new())).unwrap();
    /// assert!(feed.2[0], "nothing is in flight before the first transaction");
    /// ```
    fn next(&mut self, idle: bool) -> Next<P>;
    /// A transaction finished (in log order).
    ///
    /// ```
    /// # use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
    /// # use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
    /// # /// Adds one to the first byte of row 1.
    /// # struct Incr(HashTableId);
    /// # impl Procedure for Incr {
    /// #     type Error = Error;
    /// #     fn declare(&self, access: &mut AccessSet) {
    /// #         access.write(self.0, Key::from(1));
    /// #     }
    /// #     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
    /// #         x.modify(self.0, &Key::from(1), |v| v[0] += 1)
    /// #     }
    /// # }
    /// # let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
    /// # let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// # db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0])).unwrap();
    /// /// Offers `n` transactions; checks that they come back in log order.
    /// struct InOrder(HashTableId, u32, Option<u64>);
    /// impl Feed<Incr> for InOrder {
    ///     fn next(&mut self, _idle: bool) -> Next<Incr> {
    ///         if self.1 == 0 {
    ///             return Next::Stop;
    ///         }
    ///         self.1 -= 1;
    ///         Next::Txn(Incr(self.0))
    ///     }
    ///     fn done(&mut self, d: Done<Incr>) {
    ///         assert!(self.2 < Some(d.ts));
    ///         self.2 = Some(d.ts);
    ///     }
    /// }
    /// let (feed, _) = db.bohm_run(Config { batch_size: 4, ..Config::default() }, InOrder(t, 10, None)).unwrap();
    /// assert!(feed.2.is_some());
    /// ```
    fn done(&mut self, d: Done<P>);
}

/// A [`Feed`] of a fixed list of transactions: offers them in order, then
/// stops, and keeps each [`Done`] as it comes back (in log order).
///
/// ```
/// # use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
/// # use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
/// # /// Adds one to the first byte of row 1.
/// # struct Incr(HashTableId);
/// # impl Procedure for Incr {
/// #     type Error = Error;
/// #     fn declare(&self, access: &mut AccessSet) {
/// #         access.write(self.0, Key::from(1));
/// #     }
/// #     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
/// #         x.modify(self.0, &Key::from(1), |v| v[0] += 1)
/// #     }
/// # }
/// # let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
/// # let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// # db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0])).unwrap();
/// let (batch, stats) = db.bohm_run(Config::default(), Batch::new((0..10).map(|_| Incr(t)))).unwrap();
/// assert_eq!((batch.done.len(), stats.txns), (10, 10));
/// assert!(batch.done.iter().all(|d| d.outcome.is_committed()));
/// assert_eq!(db.run(Isolation::Serializable, |x| x.get(t, &Key::from(1))).unwrap(), Some(vec![10]));
/// ```
pub struct Batch<P: Procedure> {
    txns: VecDeque<P>,
    /// The finished transactions, in log order.
    pub done: Vec<Done<P>>,
}

impl<P: Procedure> Batch<P> {
    /// A feed of `txns`, in order.
    ///
    /// ```
    /// # use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
    /// # use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
    /// # /// Adds one to the first byte of row 1.
    /// # struct Incr(HashTableId);
    /// # impl Procedure for Incr {
    /// #     type Error = Error;
    /// #     fn declare(&self, access: &mut AccessSet) {
    /// #         access.write(self.0, Key::from(1));
    /// #     }
    /// #     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
    /// #         x.modify(self.0, &Key::from(1), |v| v[0] += 1)
    /// #     }
    /// # }
    /// # let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
    /// # let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// # db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0])).unwrap();
    /// let batch = Batch::new([Incr(t), Incr(t)]);
    /// assert!(batch.done.is_empty());
    /// let (batch, _) = db.bohm_run(Config::default(), batch).unwrap();
    /// assert_eq!(batch.done.len(), 2);
    /// ```
    pub fn new(txns: impl IntoIterator<Item = P>) -> Batch<P> {
        Batch { txns: txns.into_iter().collect(), done: Vec::new() }
    }
}

impl<P: Procedure> Feed<P> for Batch<P> {
    fn next(&mut self, _idle: bool) -> Next<P> {
        self.txns.pop_front().map_or(Next::Stop, Next::Txn)
    }
    fn done(&mut self, d: Done<P>) {
        self.done.push(d);
    }
}
