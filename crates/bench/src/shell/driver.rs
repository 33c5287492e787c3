//! The driver: feeds script lines to sessions in order and prints one line
//! per finished command, at points that do not depend on thread timing.
//!
//! For each line the driver sends the command to its session and waits for
//! the answer. An answer is printed at once; a command that is still
//! running once the grace period is over *and* whose session's thread shows
//! that it waits (module [`waiting`](super::waiting): it sleeps, or spins,
//! where a command that runs normally does neither for long) prints
//! `-> blocked` and stays pending. A command whose thread merely does not
//! get the CPU on a loaded machine shows no wait, so the driver keeps
//! waiting for it: the next line never overtakes a command that is slow
//! only because of load.
//! A command for a session that still has one pending is sent all the same
//! and prints `-> queued`: the session runs it once the earlier ones
//! returned, as a client that typed it ahead would, and its result is
//! printed when it comes, like a blocked command's.
//! After every line but a queued one (which runs nothing new, so can
//! release nothing) the driver *settles*: if commands are pending it waits
//! until all of them have answered, or the grace period is over and each
//! session still running one shows that it waits again (evidence counted
//! from the latest answer of any session: a finished command may have
//! released what the others waited for), then prints the answers that came
//! in, in script order. So a command unblocked by line N (say, a commit
//! that releases a lock) prints its result right after line N's own output,
//! however the threads were scheduled.
//!
//! At the end of the script the driver closes every session (open
//! transactions roll back), waits for pending commands, prints them in script
//! order, then prints the committed state as `final -> {...}`.

use super::parse::{parse_line, Command, Line};
use super::session::{self, Context, Event, Request};
use super::waiting::{Thread, Watch};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::mem;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the end of the script waits for sessions to finish.
const END_WAIT: Duration = Duration::from_secs(10);
/// Sessions a script may start (each is a thread).
pub(crate) const MAX_SESSIONS: usize = 64;
/// How often, once the grace period is over, the driver looks again at the
/// threads of sessions still running a command: first after [`POLL`], then
/// twice as long each time up to [`POLL_MAX`] (reading their counters
/// costs CPU, which a loaded machine lacks, and a waiting thread needs
/// some to show that it waits).
const POLL: Duration = Duration::from_millis(1);
const POLL_MAX: Duration = Duration::from_millis(32);

/// A session as the driver sees it.
struct Handle {
    name: String,
    /// `None` once the script has ended.
    requests: Option<Sender<Request>>,
    /// Commands of this session sent and not yet printed with a result
    /// (the first running or blocked, the others queued behind it).
    pending: usize,
    /// The session's thread.
    thread: Thread,
    /// Joins the thread once it has exited.
    join: Option<JoinHandle<()>>,
    /// Whether the thread has shown a wait since its latest command was
    /// sent or any session's command last answered.
    watch: Watch,
}

/// What became of a command line.
#[derive(PartialEq)]
enum Sent {
    /// Not sent (an error was printed).
    No,
    /// Sent, and it ran (its result, or `blocked`, was printed).
    Ran,
    /// Sent behind a pending command of its session (`queued` was printed).
    Queued,
}

/// A command sent and not yet printed with its result.
struct Pending {
    session: usize,
    echo: String,
}

/// Runs a script line by line (see the module docs).
pub(crate) struct Driver<W: Write> {
    ctx: Context,
    grace: Duration,
    out: W,
    sessions: Vec<Handle>,
    by_name: HashMap<String, usize>,
    events_tx: Sender<Event>,
    events: Receiver<Event>,
    /// Commands sent and not yet printed with a result, by line number.
    pending: BTreeMap<usize, Pending>,
    /// Results received for pending commands, by line number.
    done: BTreeMap<usize, String>,
    /// Sessions that have exited.
    exited: usize,
    /// Lines printed with an `error: ...` result.
    errors: usize,
    /// Every line's last printed result, by line number (for `--matrix`).
    results: BTreeMap<usize, String>,
    /// How many times the driver went on past a pending command on the
    /// evidence that it waits (rather than because it answered): the runs
    /// whose order rested on that judgment.
    judged: usize,
}

/// What a finished script leaves (for `--matrix`).
pub(crate) struct Finished {
    /// Every line's last result, by line number: a command's own, also
    /// where `blocked` or `queued` was printed first.
    pub(crate) results: BTreeMap<usize, String>,
    /// The final committed state, as printed.
    pub(crate) state: String,
    /// How many times the driver went on past a pending command because
    /// its thread showed that it waits (zero: the run's order did not
    /// depend on any such judgment).
    pub(crate) judged_waits: usize,
}

impl<W: Write> Driver<W> {
    /// A driver writing to `out`, reporting commands as blocked after `grace`.
    pub(crate) fn new(ctx: Context, grace: Duration, out: W) -> Driver<W> {
        let (events_tx, events) = mpsc::channel();
        Driver {
            ctx,
            grace,
            out,
            sessions: Vec::new(),
            by_name: HashMap::new(),
            events_tx,
            events,
            pending: BTreeMap::new(),
            done: BTreeMap::new(),
            exited: 0,
            errors: 0,
            results: BTreeMap::new(),
            judged: 0,
        }
    }

    /// How many lines were printed with an `error: ...` result so far.
    pub(crate) fn errors(&self) -> usize {
        self.errors
    }

    /// Processes script line number `seq`.
    pub(crate) fn line(&mut self, seq: usize, text: &str) -> io::Result<()> {
        match parse_line(text) {
            Line::Empty => return Ok(()),
            Line::Bad { echo, msg } => {
                self.results.insert(seq, format!("error: {msg}"));
                self.print(&echo, &format!("error: {msg}"))?
            }
            Line::Command { session, echo, cmd } => {
                if self.submit(seq, &session, echo, cmd)? == Sent::Queued {
                    // Nothing new ran, so nothing can have been released:
                    // no wait, and what finished meanwhile is printed after
                    // the next line that runs.
                    return Ok(());
                }
            }
        }
        self.settle()
    }

    /// Ends the script: closes the sessions, prints what was still pending,
    /// and the final committed state.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.end().map(|_| ())
    }

    /// As [`Driver::finish`]; returns what the run left ([`Finished`]).
    pub(crate) fn finish_with_results(mut self) -> io::Result<Finished> {
        let state = self.end()?;
        Ok(Finished { results: self.results, state, judged_waits: self.judged })
    }

    /// The end of the script; returns the final state as printed.
    fn end(&mut self) -> io::Result<String> {
        for s in &mut self.sessions {
            s.requests = None; // the session rolls back and exits
        }
        let all = self.sessions.len();
        self.wait_until(Instant::now() + END_WAIT.max(self.grace), |d| d.exited == all);
        if self.exited == all {
            // Every session has said it exits: join the threads, so that none
            // is still ending (dropping its handle on the store, running its
            // thread-local destructors) while the process exits. A store in
            // C or C++ (RocksDB) aborts if a thread of its locks a mutex the
            // process's exit has already destroyed.
            for s in &mut self.sessions {
                if let Some(j) = s.join.take() {
                    let _ = j.join();
                }
            }
        }
        self.print_done()?;
        for p in mem::take(&mut self.pending).into_values() {
            self.print(&p.echo, "blocked (still waiting at the end of the script)")?;
        }
        let state = self.ctx.committed_state();
        self.print("final", &state)?;
        Ok(state)
    }

    /// Sends a command and prints its result, or `blocked` if it takes longer
    /// than the grace period, or `queued` if its session has a command
    /// pending.
    fn submit(&mut self, seq: usize, name: &str, echo: String, cmd: Command) -> io::Result<Sent> {
        let idx = match self.session(name) {
            Ok(i) => i,
            Err(e) => return self.print(&echo, &format!("error: cannot start session {name}: {e}")).map(|_| Sent::No),
        };
        let s = &mut self.sessions[idx];
        let queued = s.pending > 0;
        let sent = match &s.requests {
            Some(r) => r.send(Request { seq, cmd }).is_ok(),
            None => false,
        };
        if !sent {
            let msg = format!("error: session {} has stopped", s.name);
            return self.print(&echo, &msg).map(|_| Sent::No);
        }
        s.pending += 1;
        self.pending.insert(seq, Pending { session: idx, echo });
        if queued {
            let echo = self.pending[&seq].echo.clone();
            return self.print(&echo, "queued").map(|_| Sent::Queued);
        }
        let s = &mut self.sessions[idx];
        s.watch = Watch::start(&s.thread);
        self.wait_for(|d| d.done.contains_key(&seq), |_| vec![idx]);
        match self.done.remove(&seq) {
            Some(result) => self.complete(seq, &result),
            None => {
                let echo = self.pending.get(&seq).map(|p| p.echo.clone()).unwrap_or_default();
                self.print(&echo, "blocked")
            }
        }
        .map(|_| Sent::Ran)
    }

    /// Waits for every pending command (or until the grace period is over
    /// and the sessions still running one show they wait), then prints the
    /// results received, in script order.
    fn settle(&mut self) -> io::Result<()> {
        self.wait_for(|d| d.pending.len() == d.done.len(), Self::running);
        self.print_done()
    }

    /// The sessions with a command sent and not answered.
    fn running(&self) -> Vec<usize> {
        let mut r: Vec<usize> =
            self.pending.iter().filter(|(seq, _)| !self.done.contains_key(seq)).map(|(_, p)| p.session).collect();
        r.sort_unstable();
        r.dedup();
        r
    }

    /// Receives events until `enough` holds, or the grace period is over
    /// and every session of `busy` shows that it waits (module docs).
    fn wait_for(&mut self, enough: impl Fn(&Self) -> bool, busy: impl Fn(&Self) -> Vec<usize>) {
        self.wait_until(Instant::now() + self.grace, &enough);
        let mut poll = POLL;
        while !enough(self) {
            let mut all = true;
            for i in busy(self) {
                let s = &mut self.sessions[i];
                // Every one, not only up to the first that does not wait:
                // each watch follows its thread from sample to sample.
                all &= s.watch.waiting(&s.thread);
            }
            if all {
                self.judged += 1;
                return;
            }
            self.wait_until(Instant::now() + poll, &enough);
            poll = (poll * 2).min(POLL_MAX);
        }
    }

    fn print_done(&mut self) -> io::Result<()> {
        for (seq, result) in mem::take(&mut self.done) {
            self.complete(seq, &result)?;
        }
        Ok(())
    }

    /// Prints a pending command with its result; its session is free again.
    fn complete(&mut self, seq: usize, result: &str) -> io::Result<()> {
        match self.pending.remove(&seq) {
            Some(p) => {
                self.sessions[p.session].pending -= 1;
                self.results.insert(seq, result.to_string());
                self.print(&p.echo, result)
            }
            None => Ok(()),
        }
    }

    /// Receives events until `enough` holds or `deadline` passes.
    fn wait_until(&mut self, deadline: Instant, enough: impl Fn(&Self) -> bool) {
        while !enough(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Event::Done { seq, result }) => {
                    self.done.insert(seq, result);
                    // What it released may end the others' waits: their
                    // evidence of a wait counts from now.
                    for s in self.sessions.iter_mut().filter(|s| s.pending > 0) {
                        s.watch = Watch::start(&s.thread);
                    }
                }
                Ok(Event::Exited) => self.exited += 1,
                Err(_) => break, // timed out (the driver holds a sender: never disconnected)
            }
        }
    }

    /// The index of session `name`, started on first use.
    fn session(&mut self, name: &str) -> io::Result<usize> {
        if let Some(&i) = self.by_name.get(name) {
            return Ok(i);
        }
        if self.sessions.len() == MAX_SESSIONS {
            return Err(io::Error::other(format!("a script may use at most {MAX_SESSIONS} sessions")));
        }
        let session::Started { requests, thread, join } =
            session::spawn(name, self.ctx.clone(), self.events_tx.clone())?;
        let watch = Watch::start(&thread);
        let join = Some(join);
        self.sessions.push(Handle {
            name: name.to_string(),
            requests: Some(requests),
            pending: 0,
            thread,
            join,
            watch,
        });
        self.by_name.insert(name.to_string(), self.sessions.len() - 1);
        Ok(self.sessions.len() - 1)
    }

    fn print(&mut self, echo: &str, result: &str) -> io::Result<()> {
        self.errors += result.starts_with("error:") as usize;
        writeln!(self.out, "{echo} -> {result}")?;
        self.out.flush()
    }
}
