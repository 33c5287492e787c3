//! Step-by-step schedules of concurrent sessions, the shell's session model
//! as a library: each session is a thread owning at most one transaction;
//! the driver hands out the steps in the schedule's order and waits for
//! each to finish. A step that does not finish within [`BLOCKED`] is
//! blocked (a lock another session holds, BOHM's gate): the driver goes on
//! with the other sessions' steps; that session's next steps queue behind
//! the blocked one and run when it finishes, and every outcome is
//! collected by the end.
//!
//! The database has one hash table whose rows are `u64` keys with `u64`
//! values (little-endian).

use multiverse::{Database, Error, Isolation, Key, Options, Protocol, TableId, TableSpec, Transaction};
use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

/// How long a step may run before the driver counts it as blocked.
pub const BLOCKED: Duration = Duration::from_millis(150);
/// How long a blocked step may stay blocked before the schedule fails.
const HUNG: Duration = Duration::from_secs(20);

/// One step of a session.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    Begin(Isolation),
    /// Reads a key (remembered for `PutRead`).
    Get(u64),
    Put(u64, u64),
    /// Writes `key` := (the value this session last read of it) + `delta`.
    PutRead(u64, u64),
    Insert(u64, u64),
    /// Counts the rows whose key lies in `lo..=hi` (a predicate read).
    Count(u64, u64),
    Commit,
    Abort,
}

/// What a step returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Out {
    Done,
    Value(Option<u64>),
    Count(usize),
    Failed(Error),
}

impl Out {
    pub fn ok(&self) -> bool {
        !matches!(self, Out::Failed(_))
    }
}

/// A finished schedule: every step's outcome, in schedule order, and the
/// committed state of the table afterwards.
pub struct Run {
    pub outs: Vec<Out>,
    pub state: HashMap<u64, u64>,
}

fn key(k: u64) -> Key {
    Key::from(k)
}

fn num(v: &[u8]) -> u64 {
    u64::from_le_bytes(v.try_into().expect("8-byte values"))
}

/// One session's thread: runs each step it receives and answers.
fn session(db: &Database, t: TableId, steps: mpsc::Receiver<Step>, outs: mpsc::Sender<Out>) {
    let mut txn: Option<Transaction<'_>> = None;
    let mut read: HashMap<u64, u64> = HashMap::new();
    for step in steps {
        let r: Result<Out, Error> = (|| {
            fn x<'a, 'db>(t: &'a mut Option<Transaction<'db>>) -> &'a mut Transaction<'db> {
                t.as_mut().expect("a step inside a transaction")
            }
            match step {
                Step::Begin(iso) => {
                    txn = Some(db.begin(iso)?);
                    read.clear();
                    Ok(Out::Done)
                }
                Step::Get(k) => {
                    let v = x(&mut txn).get_with(t, key(k), num)?;
                    if let Some(v) = v {
                        read.insert(k, v);
                    }
                    Ok(Out::Value(v))
                }
                Step::Put(k, v) => x(&mut txn).update(t, key(k), v.to_le_bytes()).map(|_| Out::Done),
                Step::PutRead(k, d) => {
                    let v = read.get(&k).copied().expect("PutRead after a Get of the key") + d;
                    x(&mut txn).update(t, key(k), v.to_le_bytes()).map(|_| Out::Done)
                }
                Step::Insert(k, v) => x(&mut txn).insert(t, key(k), v.to_le_bytes()).map(|_| Out::Done),
                Step::Count(lo, hi) => {
                    let mut n = 0;
                    x(&mut txn).scan(db.primary(t), key(lo)..=key(hi), None, |_, _| {
                        n += 1;
                        true
                    })?;
                    Ok(Out::Count(n))
                }
                Step::Commit => {
                    txn.take().expect("a transaction to commit").commit()?;
                    // A commit step ends once the commit is visible to
                    // every later begin (POMVCC: not before its next tick).
                    db.sync_commits()?;
                    Ok(Out::Done)
                }
                Step::Abort => {
                    txn.take().expect("a transaction to abort").abort();
                    Ok(Out::Done)
                }
            }
        })();
        if outs.send(r.unwrap_or_else(Out::Failed)).is_err() {
            return;
        }
    }
}

/// Runs `steps` (session, step) on a fresh database of `protocol` holding
/// `rows`, with `sessions` sessions.
pub fn run(protocol: Protocol, rows: &[(u64, u64)], sessions: usize, steps: &[(usize, Step)]) -> Run {
    run_with(Options { protocol, ..Options::default() }, rows, sessions, steps)
}

/// [`run`] on a database opened with `opts`.
pub fn run_with(opts: Options, rows: &[(u64, u64)], sessions: usize, steps: &[(usize, Step)]) -> Run {
    let protocol = opts.protocol;
    let db = Database::new(opts).expect("a database");
    let t = db.create_table(TableSpec::hash("t", 64)).expect("a table").table();
    db.run(protocol.strongest(), |x| {
        for &(k, v) in rows {
            x.insert(t, key(k), v.to_le_bytes())?;
        }
        Ok(())
    })
    .expect("the rows load");
    db.sync_commits().expect("the load becomes visible"); // POMVCC: at its next tick
    let outs = std::thread::scope(|s| {
        let mut to = Vec::new();
        let mut from = Vec::new();
        for _ in 0..sessions {
            let (tx, rx) = mpsc::channel();
            let (otx, orx) = mpsc::channel();
            let db = &db;
            s.spawn(move || session(db, t, rx, otx));
            to.push(tx);
            from.push(orx);
        }
        let mut outs: Vec<Option<Out>> = vec![None; steps.len()];
        // Each session's steps sent and not answered yet, oldest first: a
        // session answers in order, so a step sent behind a blocked one
        // waits in the session's queue (as the shell's sessions do).
        let mut waiting: Vec<std::collections::VecDeque<usize>> = vec![Default::default(); sessions];
        for (i, &(sess, step)) in steps.iter().enumerate() {
            // Take what the blocked sessions have answered meanwhile.
            for (q, rx) in waiting.iter_mut().zip(&from) {
                while let Some(&j) = q.front() {
                    match rx.try_recv() {
                        Ok(o) => {
                            outs[j] = Some(o);
                            q.pop_front();
                        }
                        Err(_) => break,
                    }
                }
            }
            to[sess].send(step).expect("the session is running");
            waiting[sess].push_back(i);
            if waiting[sess].len() == 1 {
                match from[sess].recv_timeout(BLOCKED) {
                    Ok(o) => {
                        outs[i] = Some(o);
                        waiting[sess].pop_front();
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {} // blocked: go on with the others
                    Err(e) => panic!("{protocol}: session {sess} ended: {e}"),
                }
            }
        }
        for (q, rx) in waiting.iter_mut().zip(&from) {
            while let Some(j) = q.pop_front() {
                let o = rx.recv_timeout(HUNG).unwrap_or_else(|_| panic!("{protocol}: step {j} {:?} hung", steps[j]));
                outs[j] = Some(o);
            }
        }
        drop(to); // the sessions end, rolling back what is still open
        outs.into_iter().map(|o| o.expect("every step answered")).collect::<Vec<_>>()
    });
    db.sync_commits().expect("commits become visible");
    let mut state = HashMap::new();
    db.run(protocol.strongest(), |x| {
        state.clear();
        x.scan(db.primary(t), .., None, |k, v| {
            state.insert(k.to_u64().expect("a u64 key"), num(v));
            true
        })
    })
    .expect("the final state reads");
    Run { outs, state }
}
