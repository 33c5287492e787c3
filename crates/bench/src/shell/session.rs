//! Sessions: one thread each, owning at most one open transaction.
//!
//! The driver sends a session [`Request`]s over a channel; the session runs
//! each command to completion — however long the engine makes it wait — and
//! answers with an [`Event::Done`] carrying the text after `->`. When its
//! channel closes the session rolls back any open transaction and reports
//! [`Event::Exited`].
//!
//! A session is in one of three states: idle, a transaction open, or a
//! transaction aborted by the engine. In the aborted state every command is
//! answered `aborted (REASON)` until `commit` (which answers the same) or
//! `abort` ends it. A statement given to an idle session runs as its own
//! one-statement transaction at the default level (an observer).
//!
//! The sessions run on a [`Backend`]: a Multiverse database, or another
//! embedded store (`super::store`). The session code is generic over it,
//! so each backend's commands run monomorphized; the backend's type is
//! erased once, behind [`Context`], which starts the session threads.

use super::parse::{After, Assign, Command, Declared, Pred, Stmt};
use super::rows::{self, Rows};
use super::waiting::Thread;
use multiverse::{
    AbortReason, Database, Error, Filter, IndexId, Isolation, Key, Mode, Options, TableId, TableSpec, Transaction,
    TxnOptions,
};
use multiverse_workloads::Txn;
use std::any::Any;
use std::fmt;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Buckets of the hash primary index of `test`.
const TEST_BUCKETS: usize = 1024;

/// A command for a session; `seq` identifies it in the answer.
pub(crate) struct Request {
    pub(crate) seq: usize,
    pub(crate) cmd: Command,
}

/// What sessions tell the driver.
pub(crate) enum Event {
    /// Command `seq` finished; `result` is the text after `->`.
    Done { seq: usize, result: String },
    /// A session closed (its open transaction, if any, rolled back).
    Exited,
}

/// What the sessions run on, shared by every session: a Multiverse
/// database or another store ([`Backend`]), with table `test`.
#[derive(Clone)]
pub(crate) struct Context(Arc<dyn Sessions>);

impl Context {
    /// Opens a database running `protocol` with an empty table `test`.
    pub(crate) fn open(opts: Options) -> Result<Context, String> {
        let protocol = opts.protocol;
        let db = Database::new(opts).map_err(|e| e.to_string())?;
        let table = db.create_table(TableSpec::hash("test", TEST_BUCKETS)).map_err(|e| e.to_string())?.table();
        let test = Test { table, primary: db.primary(table) };
        Ok(Context::new(Multiverse { db, test, default: protocol.strongest() }))
    }

    /// The sessions of `backend`.
    pub(crate) fn new(backend: impl Backend) -> Context {
        Context(Arc::new(backend))
    }

    /// The committed contents of `test`, read in a fresh transaction (at
    /// snapshot isolation where it is offered), as the text after `final ->`.
    pub(crate) fn committed_state(&self) -> String {
        self.0.committed_state()
    }
}

/// Table `test` and its primary index.
#[derive(Clone, Copy)]
pub(crate) struct Test {
    pub(crate) table: TableId,
    pub(crate) primary: IndexId,
}

/// How a session begins a transaction.
pub(crate) struct Begin {
    pub(crate) iso: Isolation,
    /// Optimistic or pessimistic (`mv-mixed`), or the protocol's choice.
    pub(crate) mode: Mode,
    /// The keys declared to be read and written.
    pub(crate) declared: Option<Declared>,
    /// A commit timestamp the transaction must see (`begin after`).
    pub(crate) after: Option<u64>,
    /// The transaction will only read (an observer's `get` or `scan`, the
    /// final state).
    pub(crate) read_only: bool,
}

impl Begin {
    fn at(iso: Isolation, read_only: bool) -> Begin {
        Begin { iso, mode: Mode::Default, declared: None, after: None, read_only }
    }
}

/// What the sessions run on: Multiverse's database, or another embedded
/// store (`super::store`).
pub(crate) trait Backend: Send + Sync + 'static {
    /// Its transactions.
    type Txn<'a>: ShellTxn
    where
        Self: 'a;
    fn test(&self) -> Test;
    /// The level of a `begin` that names none, and of observers: the
    /// strongest offered.
    fn default_level(&self) -> Isolation;
    /// The level the final state is read at.
    fn final_level(&self) -> Isolation;
    fn begin(&self, b: Begin) -> Result<Self::Txn<'_>, Failure>;
    /// Makes every commit so far visible to the transactions begun from now
    /// on (where a commit becomes visible only later: POMVCC).
    fn sync_commits(&self) -> Result<(), Failure> {
        Ok(())
    }
}

/// What the shell's statements need of a transaction beyond the workloads'
/// [`Txn`].
pub(crate) trait ShellTxn: Txn + Sized {
    /// Inserts the row, or updates it if it exists.
    fn put_row(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<(), Error>;
    /// Updates an existing row (`Error::KeyNotFound` if there is none).
    fn set_row(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<(), Error>;
    /// Commits; the commit timestamp where there is one.
    fn commit_txn(self) -> Result<Option<u64>, Error>;
    /// Rolls back.
    fn rollback(self) {}
}

/// A Multiverse database.
struct Multiverse {
    db: Database,
    test: Test,
    default: Isolation,
}

impl Backend for Multiverse {
    type Txn<'a> = Transaction<'a>;

    fn test(&self) -> Test {
        self.test
    }

    fn default_level(&self) -> Isolation {
        self.default
    }

    fn final_level(&self) -> Isolation {
        let levels = self.db.protocol().isolation_levels();
        if levels.contains(&Isolation::Snapshot) {
            Isolation::Snapshot
        } else {
            self.default
        }
    }

    fn begin(&self, b: Begin) -> Result<Transaction<'_>, Failure> {
        let access = b.declared.map(|(reads, writes)| {
            let keys = |ks: Vec<i64>| ks.into_iter().map(|k| (self.test.table, rows::key(k))).collect();
            multiverse::AccessSet { reads: keys(reads), writes: keys(writes) }
        });
        let opts = TxnOptions { mode: b.mode, access: access.as_ref(), after: b.after, ..TxnOptions::new(b.iso) };
        Ok(self.db.begin_with(opts)?)
    }

    fn sync_commits(&self) -> Result<(), Failure> {
        self.db.sync_commits()?;
        Ok(())
    }
}

impl ShellTxn for Transaction<'_> {
    fn put_row(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<(), Error> {
        self.put(table, key, value)
    }

    fn set_row(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<(), Error> {
        Transaction::update(self, table, key, value)
    }

    fn commit_txn(self) -> Result<Option<u64>, Error> {
        self.commit().map(|info| Some(info.commit_ts))
    }

    fn rollback(self) {
        self.abort()
    }
}

/// A backend with its type left out: what the driver asks of it.
trait Sessions: Send + Sync {
    /// Runs a session: answers requests until the channel closes.
    fn serve(&self, requests: Receiver<Request>, events: Sender<Event>);
    fn committed_state(&self) -> String;
}

impl<B: Backend> Sessions for B {
    fn serve(&self, requests: Receiver<Request>, events: Sender<Event>) {
        let mut session = Session { b: self, state: State::Idle, last_commit: None };
        for Request { seq, cmd } in requests.iter() {
            let result = session.run_guarded(cmd);
            if events.send(Event::Done { seq, result }).is_err() {
                break;
            }
        }
        drop(session); // rolls back an open transaction
        let _ = events.send(Event::Exited);
    }

    fn committed_state(&self) -> String {
        let read = || -> Result<String, Failure> {
            // Every session's commits, also where a commit becomes visible
            // only later (POMVCC).
            self.sync_commits()?;
            let mut t = self.begin(Begin::at(self.final_level(), true))?;
            let all = scan(&mut t, self.test(), None)?;
            t.commit_txn()?;
            Ok(rows::format(&all))
        };
        read().unwrap_or_else(|f| f.to_string())
    }
}

/// A started session: the sender of its requests, its thread (whose
/// counters show when it waits) and the handle to join it by.
pub(crate) struct Started {
    pub(crate) requests: Sender<Request>,
    pub(crate) thread: Thread,
    pub(crate) join: thread::JoinHandle<()>,
}

/// Starts a session thread.
pub(crate) fn spawn(name: &str, ctx: Context, events: Sender<Event>) -> io::Result<Started> {
    let (tx, rx) = mpsc::channel();
    let (thread_tx, thread_rx) = mpsc::channel();
    let join = thread::Builder::new().name(format!("session {name}")).spawn(move || {
        let _ = thread_tx.send(Thread::current());
        ctx.0.serve(rx, events)
    })?;
    let thread = thread_rx.recv().map_err(|_| io::Error::other(format!("session {name} did not start")))?;
    Ok(Started { requests: tx, thread, join })
}

/// Why a statement failed.
pub(crate) enum Failure {
    /// The engine aborted (and rolled back) the transaction.
    Aborted(AbortReason),
    /// A user error (duplicate key, key not found, ...); the transaction, if
    /// any, stays usable.
    User(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        match e.abort_reason() {
            Some(r) => Failure::Aborted(r),
            None => Failure::User(e.to_string()),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Aborted(r) => write!(f, "aborted ({r})"),
            Failure::User(m) => write!(f, "error: {m}"),
        }
    }
}

enum State<T> {
    Idle,
    Open(T),
    Aborted(AbortReason),
}

struct Session<'b, B: Backend> {
    b: &'b B,
    state: State<B::Txn<'b>>,
    /// The latest commit timestamp of the session's commits (`begin after
    /// last`).
    last_commit: Option<u64>,
}

impl<'b, B: Backend> Session<'b, B> {
    /// Runs a command; an engine panic becomes an error line instead of a
    /// dead session.
    fn run_guarded(&mut self, cmd: Command) -> String {
        match panic::catch_unwind(AssertUnwindSafe(|| self.run(cmd))) {
            Ok(result) => result,
            Err(payload) => {
                // The transaction's state is unknown: never touch it again.
                if let State::Open(t) = std::mem::replace(&mut self.state, State::Idle) {
                    std::mem::forget(t);
                }
                format!("error: internal error: {}", panic_message(payload.as_ref()))
            }
        }
    }

    fn run(&mut self, cmd: Command) -> String {
        match cmd {
            Command::Begin(iso, mode, declared, after) => {
                self.begin(iso.unwrap_or(self.b.default_level()), mode, declared, after)
            }
            Command::Commit => self.commit(),
            Command::Abort => self.abort(),
            Command::Sleep(ms) => {
                // Parked, not in a timed sleep: a wait that only its end
                // ends, which module `waiting` shows as one at once.
                let end = Instant::now() + Duration::from_millis(ms);
                while let Some(left) = end.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) {
                    thread::park_timeout(left);
                }
                "ok".into()
            }
            Command::Stmt(s) => self.statement(&s),
        }
    }

    fn begin(&mut self, iso: Isolation, mode: Mode, declared: Option<Declared>, after: Option<After>) -> String {
        let after = match after {
            Some(After::Last) => self.last_commit,
            Some(After::Ts(ts)) => Some(ts),
            None => None,
        };
        match &self.state {
            State::Idle => match self.b.begin(Begin { iso, mode, declared, after, read_only: false }) {
                Ok(t) => {
                    self.state = State::Open(t);
                    "ok".into()
                }
                Err(f) => f.to_string(),
            },
            State::Open(_) => "error: a transaction is already open (commit or abort it first)".into(),
            State::Aborted(r) => Failure::Aborted(*r).to_string(),
        }
    }

    fn commit(&mut self) -> String {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Idle => "error: no transaction is open".into(),
            State::Open(t) => match t.commit_txn() {
                Ok(ts) => {
                    // The latest: a read-only commit reports its (older) begin.
                    self.last_commit = self.last_commit.max(ts);
                    "ok".into()
                }
                Err(e) => Failure::from(e).to_string(),
            },
            State::Aborted(r) => Failure::Aborted(r).to_string(),
        }
    }

    fn abort(&mut self) -> String {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Idle => "error: no transaction is open".into(),
            State::Open(t) => {
                t.rollback();
                "ok".into()
            }
            State::Aborted(_) => "ok".into(),
        }
    }

    fn statement(&mut self, s: &Stmt) -> String {
        let test = self.b.test();
        match &mut self.state {
            State::Idle => {
                let (out, commit) = observe(self.b, s);
                self.last_commit = self.last_commit.max(commit);
                out
            }
            State::Open(t) => match execute(t, test, s) {
                Ok(out) => out,
                Err(f) => {
                    if let Failure::Aborted(r) = f {
                        self.state = State::Aborted(r);
                    }
                    f.to_string()
                }
            },
            State::Aborted(r) => Failure::Aborted(*r).to_string(),
        }
    }
}

/// Runs a statement in a transaction of its own at the default level (one
/// that only reads where the statement does); with the commit timestamp if
/// it committed.
fn observe<B: Backend>(b: &B, s: &Stmt) -> (String, Option<u64>) {
    let run = || -> Result<(String, Option<u64>), Failure> {
        let read_only = matches!(s, Stmt::Get(_) | Stmt::Scan(_));
        let mut t = b.begin(Begin::at(b.default_level(), read_only))?;
        let out = execute(&mut t, b.test(), s)?; // on error, dropping `t` rolls it back
        let ts = t.commit_txn()?;
        if matches!(s, Stmt::Setup(_)) {
            // The script's rows are there for every session from now on,
            // also where a commit becomes visible only later (POMVCC).
            b.sync_commits()?;
        }
        Ok((out, ts))
    };
    match run() {
        Ok((out, ts)) => (out, ts),
        Err(f) => (f.to_string(), None),
    }
}

/// Runs a statement in `t`; returns the text after `->`.
fn execute<T: ShellTxn>(t: &mut T, test: Test, s: &Stmt) -> Result<String, Failure> {
    let table = test.table;
    match s {
        Stmt::Get(ids) => get(t, test, ids).map(|r| rows::format(&r)),
        Stmt::Scan(pred) => scan(t, test, *pred).map(|r| rows::format(&r)),
        Stmt::Put(id, v) => ok(t.put_row(table, rows::key(*id), &rows::value_bytes(*v))),
        Stmt::Insert(id, v) => ok(t.insert(table, rows::key(*id), &rows::value_bytes(*v))),
        Stmt::Update(id, a) => found(update_row(t, test, *id, *a)?),
        Stmt::Delete(id) => found(delete_row(t, test, *id)?),
        Stmt::UpdateWhere(pred, a) => update_where(t, test, *pred, *a).map(counted),
        Stmt::DeleteWhere(pred) => delete_where(t, test, *pred).map(counted),
        Stmt::Setup(all) => {
            for (id, v) in all {
                t.insert(table, rows::key(*id), &rows::value_bytes(*v))?;
            }
            Ok("ok".into())
        }
    }
}

fn ok(r: Result<(), Error>) -> Result<String, Failure> {
    r.map(|()| "ok".to_string()).map_err(Failure::from)
}

/// `ok` if the row was there, the engine's "key not found" otherwise.
fn found(written: bool) -> Result<String, Failure> {
    if written {
        Ok("ok".into())
    } else {
        Err(Error::KeyNotFound.into())
    }
}

/// `ok (N rows)` (`ok (1 row)`).
fn counted(n: usize) -> String {
    if n == 1 {
        "ok (1 row)".into()
    } else {
        format!("ok ({n} rows)")
    }
}

fn get<T: ShellTxn>(t: &mut T, test: Test, ids: &[i64]) -> Result<Rows, Failure> {
    let mut out = Rows::new();
    for &id in ids {
        if let Some(v) = t.get_with(test.table, &rows::key(id), rows::value)? {
            out.insert(id, v.map_err(Failure::User)?);
        }
    }
    Ok(out)
}

/// Every visible row matching `pred` (all rows without one). The predicate is
/// handed to the engine, so a serializable transaction's phantom detection
/// repeats exactly this scan.
fn scan<T: ShellTxn>(t: &mut T, test: Test, pred: Option<Pred>) -> Result<Rows, Failure> {
    let filter =
        pred.map(|p| -> Filter { Arc::new(move |_: &Key, v: &[u8]| rows::value(v).is_ok_and(|v| p.matches(v))) });
    let mut raw = Vec::new();
    t.scan(test.primary, .., filter.as_ref(), |k, v| {
        raw.push((k.clone(), v.to_vec()));
        true
    })?;
    raw.iter()
        .map(|(k, v)| Ok((rows::id(k)?, rows::value(v)?)))
        .collect::<Result<Rows, String>>()
        .map_err(Failure::User)
}

/// Updates one row; `Ok(false)` if it has no visible row.
fn update_row<T: ShellTxn>(t: &mut T, test: Test, id: i64, a: Assign) -> Result<bool, Failure> {
    let key = rows::key(id);
    let mut bad = None;
    let r = match a {
        Assign::Set(v) => t.set_row(test.table, &key, &rows::value_bytes(v)),
        // Read-modify-write of exactly the version the engine updates.
        Assign::Add(_) | Assign::Sub(_) => t.update_with(test.table, &key, |old, new| {
            match rows::value(old).and_then(|v| a.apply(v).ok_or_else(|| "integer overflow".to_string())) {
                Ok(v) => new.extend_from_slice(&rows::value_bytes(v)),
                Err(e) => {
                    new.extend_from_slice(old);
                    bad = Some(format!("{e} (row {id} keeps its value)"));
                }
            }
        }),
    };
    match (r, bad) {
        (Ok(()), None) => Ok(true),
        (Ok(()), Some(m)) => Err(Failure::User(m)),
        (Err(Error::KeyNotFound), _) => Ok(false),
        (Err(e), _) => Err(e.into()),
    }
}

/// Deletes one row; `Ok(false)` if it has no visible row.
fn delete_row<T: ShellTxn>(t: &mut T, test: Test, id: i64) -> Result<bool, Failure> {
    match t.delete(test.table, &rows::key(id)) {
        Ok(()) => Ok(true),
        Err(Error::KeyNotFound) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Scans for `pred`, then updates every row found; returns how many.
fn update_where<T: ShellTxn>(t: &mut T, test: Test, pred: Pred, a: Assign) -> Result<usize, Failure> {
    let mut n = 0;
    for id in scan(t, test, Some(pred))?.into_keys() {
        n += usize::from(update_row(t, test, id, a)?);
    }
    Ok(n)
}

/// Scans for `pred`, then deletes every row found; returns how many.
fn delete_where<T: ShellTxn>(t: &mut T, test: Test, pred: Pred) -> Result<usize, Failure> {
    let mut n = 0;
    for id in scan(t, test, Some(pred))?.into_keys() {
        n += usize::from(delete_row(t, test, id)?);
    }
    Ok(n)
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}
