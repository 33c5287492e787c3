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

use super::parse::{After, Assign, Command, Declared, Pred, Stmt};
use super::rows::{self, Rows};
use super::waiting::Thread;
use multiverse::{
    AbortReason, Database, Error, Filter, IndexId, Isolation, Key, Options, TableId, TableSpec, Transaction, TxnOptions,
};
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

/// The database, table `test`, and the default isolation level, shared by
/// every session.
#[derive(Clone)]
pub(crate) struct Context {
    db: Arc<Database>,
    table: TableId,
    primary: IndexId,
    default: Isolation,
}

impl Context {
    /// Opens a database running `protocol` with an empty table `test`.
    pub(crate) fn open(opts: Options) -> Result<Context, String> {
        let protocol = opts.protocol;
        let db = Database::new(opts).map_err(|e| e.to_string())?;
        let table = db.create_table(TableSpec::hash("test", TEST_BUCKETS)).map_err(|e| e.to_string())?;
        let primary = db.primary(table);
        Ok(Context { db: Arc::new(db), table, primary, default: protocol.strongest() })
    }

    /// The committed contents of `test`, read in a fresh snapshot
    /// transaction (the strongest level where snapshot is not offered), as
    /// the text after `final ->`.
    pub(crate) fn committed_state(&self) -> String {
        let levels = self.db.protocol().isolation_levels();
        let iso = if levels.contains(&Isolation::Snapshot) { Isolation::Snapshot } else { self.default };
        let read = || -> Result<String, Failure> {
            // Every session's commits, also where a commit becomes visible
            // only later (POMVCC).
            self.db.sync_commits()?;
            let mut t = self.db.begin(iso)?;
            let all = scan(&mut t, self, None)?;
            t.commit()?;
            Ok(rows::format(&all))
        };
        read().unwrap_or_else(|f| f.to_string())
    }
}

/// Starts a session thread; returns the sender of its requests and the
/// thread, whose counters show when it waits.
pub(crate) fn spawn(name: &str, ctx: Context, events: Sender<Event>) -> io::Result<(Sender<Request>, Thread)> {
    let (tx, rx) = mpsc::channel();
    let (thread_tx, thread_rx) = mpsc::channel();
    thread::Builder::new().name(format!("session {name}")).spawn(move || {
        let _ = thread_tx.send(Thread::current());
        serve(ctx, rx, events)
    })?;
    let thread = thread_rx.recv().map_err(|_| io::Error::other(format!("session {name} did not start")))?;
    Ok((tx, thread))
}

/// The session thread: answers requests until the channel closes.
fn serve(ctx: Context, requests: Receiver<Request>, events: Sender<Event>) {
    let mut session = Session { ctx: &ctx, db: &ctx.db, state: State::Idle, last_commit: None };
    for Request { seq, cmd } in requests.iter() {
        let result = session.run_guarded(cmd);
        if events.send(Event::Done { seq, result }).is_err() {
            break;
        }
    }
    drop(session); // rolls back an open transaction
    let _ = events.send(Event::Exited);
}

/// Why a statement failed.
enum Failure {
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

enum State<'db> {
    Idle,
    Open(Transaction<'db>),
    Aborted(AbortReason),
}

struct Session<'db> {
    ctx: &'db Context,
    db: &'db Database,
    state: State<'db>,
    /// The latest commit timestamp of the session's commits (`begin after
    /// last`).
    last_commit: Option<u64>,
}

impl<'db> Session<'db> {
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
                self.begin(iso.unwrap_or(self.ctx.default), mode, declared, after)
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

    fn begin(
        &mut self,
        iso: Isolation,
        mode: multiverse::Mode,
        declared: Option<Declared>,
        after: Option<After>,
    ) -> String {
        let after = match after {
            Some(After::Last) => self.last_commit,
            Some(After::Ts(ts)) => Some(ts),
            None => None,
        };
        let access = declared.map(|(reads, writes)| {
            let keys = |ks: Vec<i64>| ks.into_iter().map(|k| (self.ctx.table, rows::key(k))).collect();
            multiverse::AccessSet { reads: keys(reads), writes: keys(writes) }
        });
        match &self.state {
            State::Idle => {
                let opts = TxnOptions { mode, access: access.as_ref(), after, ..TxnOptions::new(iso) };
                match self.db.begin_with(opts) {
                    Ok(t) => {
                        self.state = State::Open(t);
                        "ok".into()
                    }
                    Err(e) => Failure::from(e).to_string(),
                }
            }
            State::Open(_) => "error: a transaction is already open (commit or abort it first)".into(),
            State::Aborted(r) => Failure::Aborted(*r).to_string(),
        }
    }

    fn commit(&mut self) -> String {
        match std::mem::replace(&mut self.state, State::Idle) {
            State::Idle => "error: no transaction is open".into(),
            State::Open(t) => match t.commit() {
                Ok(info) => {
                    // The latest: a read-only commit reports its (older) begin.
                    self.last_commit = self.last_commit.max(Some(info.commit_ts));
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
                t.abort();
                "ok".into()
            }
            State::Aborted(_) => "ok".into(),
        }
    }

    fn statement(&mut self, s: &Stmt) -> String {
        let ctx = self.ctx;
        match &mut self.state {
            State::Idle => {
                let (out, commit) = observe(ctx, s);
                self.last_commit = self.last_commit.max(commit);
                out
            }
            State::Open(t) => match execute(t, ctx, s) {
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

/// Runs a statement in a transaction of its own at the default level; with
/// the commit timestamp if it committed.
fn observe(ctx: &Context, s: &Stmt) -> (String, Option<u64>) {
    let run = || -> Result<(String, u64), Failure> {
        let mut t = ctx.db.begin(ctx.default)?;
        let out = execute(&mut t, ctx, s)?; // on error, dropping `t` rolls it back
        let info = t.commit()?;
        if matches!(s, Stmt::Setup(_)) {
            // The script's rows are there for every session from now on,
            // also where a commit becomes visible only later (POMVCC).
            ctx.db.sync_commits()?;
        }
        Ok((out, info.commit_ts))
    };
    match run() {
        Ok((out, ts)) => (out, Some(ts)),
        Err(f) => (f.to_string(), None),
    }
}

/// Runs a statement in `t`; returns the text after `->`.
fn execute(t: &mut Transaction<'_>, ctx: &Context, s: &Stmt) -> Result<String, Failure> {
    let table = ctx.table;
    match s {
        Stmt::Get(ids) => get(t, ctx, ids).map(|r| rows::format(&r)),
        Stmt::Scan(pred) => scan(t, ctx, *pred).map(|r| rows::format(&r)),
        Stmt::Put(id, v) => ok(t.put(table, rows::key(*id), &rows::value_bytes(*v))),
        Stmt::Insert(id, v) => ok(t.insert(table, rows::key(*id), &rows::value_bytes(*v))),
        Stmt::Update(id, a) => found(update_row(t, ctx, *id, *a)?),
        Stmt::Delete(id) => found(delete_row(t, ctx, *id)?),
        Stmt::UpdateWhere(pred, a) => update_where(t, ctx, *pred, *a).map(counted),
        Stmt::DeleteWhere(pred) => delete_where(t, ctx, *pred).map(counted),
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

fn get(t: &mut Transaction<'_>, ctx: &Context, ids: &[i64]) -> Result<Rows, Failure> {
    let mut out = Rows::new();
    for &id in ids {
        if let Some(v) = t.get_with(ctx.table, &rows::key(id), rows::value)? {
            out.insert(id, v.map_err(Failure::User)?);
        }
    }
    Ok(out)
}

/// Every visible row matching `pred` (all rows without one). The predicate is
/// handed to the engine, so a serializable transaction's phantom detection
/// repeats exactly this scan.
fn scan(t: &mut Transaction<'_>, ctx: &Context, pred: Option<Pred>) -> Result<Rows, Failure> {
    let filter =
        pred.map(|p| -> Filter { Arc::new(move |_: &Key, v: &[u8]| rows::value(v).is_ok_and(|v| p.matches(v))) });
    let mut raw = Vec::new();
    t.scan(ctx.primary, .., filter.as_ref(), |k, v| {
        raw.push((k.clone(), v.to_vec()));
        true
    })?;
    raw.iter()
        .map(|(k, v)| Ok((rows::id(k)?, rows::value(v)?)))
        .collect::<Result<Rows, String>>()
        .map_err(Failure::User)
}

/// Updates one row; `Ok(false)` if it has no visible row.
fn update_row(t: &mut Transaction<'_>, ctx: &Context, id: i64, a: Assign) -> Result<bool, Failure> {
    let key = rows::key(id);
    let mut bad = None;
    let r = match a {
        Assign::Set(v) => t.update(ctx.table, &key, &rows::value_bytes(v)),
        // Read-modify-write of exactly the version the engine updates.
        Assign::Add(_) | Assign::Sub(_) => t.update_with(ctx.table, &key, |old, new| {
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
fn delete_row(t: &mut Transaction<'_>, ctx: &Context, id: i64) -> Result<bool, Failure> {
    match t.delete(ctx.table, &rows::key(id)) {
        Ok(()) => Ok(true),
        Err(Error::KeyNotFound) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Scans for `pred`, then updates every row found; returns how many.
fn update_where(t: &mut Transaction<'_>, ctx: &Context, pred: Pred, a: Assign) -> Result<usize, Failure> {
    let mut n = 0;
    for id in scan(t, ctx, Some(pred))?.into_keys() {
        n += usize::from(update_row(t, ctx, id, a)?);
    }
    Ok(n)
}

/// Scans for `pred`, then deletes every row found; returns how many.
fn delete_where(t: &mut Transaction<'_>, ctx: &Context, pred: Pred) -> Result<usize, Failure> {
    let mut n = 0;
    for id in scan(t, ctx, Some(pred))?.into_keys() {
        n += usize::from(delete_row(t, ctx, id)?);
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
