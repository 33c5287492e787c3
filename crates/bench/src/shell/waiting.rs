//! Whether a session's thread is waiting: the evidence the driver needs,
//! besides the grace period, before it prints `blocked` or stops settling.
//!
//! Time alone cannot tell a command that waits for another session (for a
//! lock, a commit dependency, BOHM's gate) from one that is slow only
//! because the machine is loaded and its thread does not get the CPU. A
//! driver that took the second for the first would run the next line
//! early, and that line could overtake the slow command: a read meant to
//! come first would then wait behind the next line's write lock and read
//! its value, and the script's result would change with the load.
//!
//! So the driver also looks at what the kernel counts for the session's
//! thread (Linux, `/proc/self/task/TID`). An engine wait either sleeps
//! (1V's and the SSN reader's short sleeps, BOHM's gate, the `sleep`
//! command) or spins and yields (MV/L, commit dependencies, Silo, POMVCC),
//! and so shows, since the watch began, one of:
//!
//! * at least [`SLEEPS`] voluntary context switches, and asleep now (a
//!   wait that polls with short sleeps);
//! * asleep at two samples at least [`ASLEEP_FOR`] apart, with no voluntary
//!   switch between them, and not in a timed sleep (parked on a mutex or a
//!   condition variable, which the end of the wait wakes at once);
//! * in a timed sleep (`nanosleep`) now, with at least [`TIMED_SLEEPS`]
//!   voluntary switches (a wait that polls with long sleeps, as SQLite's
//!   busy handler does, up to 100 ms each: it has woken since the watch
//!   began, found it still had to wait, and slept again);
//! * at least [`YIELDS`] involuntary context switches (a wait that yields
//!   the CPU to other runnable threads);
//! * at least [`CPU`] of CPU time (a wait that spins, or yields with no
//!   other thread to yield to).
//!
//! A timed sleep needs the wake-up because it ends by itself, not when what
//! it waits for is released: a thread in a sleep that began before another
//! session released its lock (the watch restarts then) is about to retry
//! and get through, and taking it for one still waiting would let the next
//! line run first. A thread's current system call is in
//! `/proc/self/task/TID/syscall`; where it cannot be read, no sleep counts
//! as timed.
//!
//! A thread that does not get the CPU shows none of these, however loaded
//! the machine: load delays the evidence, it cannot make it. A command
//! that does not wait shows none either: measured on a loaded machine
//! (a debug build, the matrix's 23 databases at once), such commands took
//! at most 4 ms of CPU (the first command of a new session thread), 2
//! voluntary and 8 involuntary switches, each threshold several times
//! more. Where `/proc` cannot be read, every thread counts as waiting, and
//! the grace period alone decides.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Voluntary context switches that show a wait polling with sleeps (1V
/// sleeps 50 µs between looks at a lock: about ten a millisecond).
const SLEEPS: u64 = 20;
/// How far apart two samples that find the thread asleep must be.
const ASLEEP_FOR: Duration = Duration::from_millis(10);
/// Voluntary context switches that show a wait polling with timed sleeps,
/// the thread in one now: the sleep it is in, and one before it.
const TIMED_SLEEPS: u64 = 2;
/// The system calls of a timed sleep (`nanosleep`, `clock_nanosleep`).
#[cfg(target_arch = "x86_64")]
const SLEEP_CALLS: &[&str] = &["35", "230"];
#[cfg(target_arch = "aarch64")]
const SLEEP_CALLS: &[&str] = &["101", "115"];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const SLEEP_CALLS: &[&str] = &[];
/// Involuntary context switches that show a wait yielding the CPU.
const YIELDS: u64 = 50;
/// CPU time that shows a wait spinning.
const CPU: Duration = Duration::from_millis(50);

/// A thread's counters at one moment.
#[derive(Clone, Copy)]
struct Sample {
    at: Instant,
    /// Time on a CPU (`schedstat`), in nanoseconds.
    cpu_ns: u64,
    /// Voluntary context switches (`status`).
    voluntary: u64,
    /// Involuntary context switches (`status`).
    involuntary: u64,
    /// In state S (sleeping: blocked in the kernel, interruptibly).
    asleep: bool,
    /// Asleep in a timed sleep (`syscall`; false where it cannot be read).
    timed: bool,
}

/// A thread whose counters can be read from any thread.
#[derive(Clone, Debug)]
pub(crate) struct Thread {
    /// `/proc/PID/task/TID`; `None` where there is no `/proc`.
    dir: Option<PathBuf>,
}

impl Thread {
    /// The calling thread.
    pub(crate) fn current() -> Thread {
        let link = std::fs::read_link("/proc/thread-self").ok();
        Thread { dir: link.map(|l| PathBuf::from("/proc").join(l)) }
    }

    fn sample(&self) -> Option<Sample> {
        let dir = self.dir.as_ref()?;
        let status = std::fs::read_to_string(dir.join("status")).ok()?;
        let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
        let asleep = field("State:")?.starts_with('S');
        let voluntary = field("voluntary_ctxt_switches:")?.parse().ok()?;
        let involuntary = field("nonvoluntary_ctxt_switches:")?.parse().ok()?;
        let schedstat = std::fs::read_to_string(dir.join("schedstat")).ok()?;
        let cpu_ns = schedstat.split_whitespace().next()?.parse().ok()?;
        let call = std::fs::read_to_string(dir.join("syscall")).unwrap_or_default();
        let timed = asleep && call.split_whitespace().next().is_some_and(|n| SLEEP_CALLS.contains(&n));
        Some(Sample { at: Instant::now(), cpu_ns, voluntary, involuntary, asleep, timed })
    }
}

/// The evidence of one thread's wait since a moment (module docs).
pub(crate) struct Watch {
    since: Option<Sample>,
    /// The latest sample that found the thread awake or switching, or the
    /// first: the start of its current sleep, as far as the samples know.
    asleep_since: Option<Sample>,
}

impl Watch {
    /// Starts watching `t` now.
    pub(crate) fn start(t: &Thread) -> Watch {
        let s = t.sample();
        Watch { since: s, asleep_since: s }
    }

    /// Whether `t` has shown since the watch started that it is waiting
    /// (module docs); true where its counters cannot be read.
    pub(crate) fn waiting(&mut self, t: &Thread) -> bool {
        let (Some(since), Some(now)) = (self.since, t.sample()) else { return true };
        let parked = match self.asleep_since {
            Some(s) if s.asleep && now.asleep && s.voluntary == now.voluntary => now.at - s.at >= ASLEEP_FOR,
            _ => {
                self.asleep_since = Some(now);
                false
            }
        };
        let switches = now.voluntary.saturating_sub(since.voluntary);
        (parked && !now.timed)
            || (now.timed && switches >= TIMED_SLEEPS)
            || (now.asleep && switches >= SLEEPS)
            || now.involuntary.saturating_sub(since.involuntary) >= YIELDS
            || now.cpu_ns.saturating_sub(since.cpu_ns) >= CPU.as_nanos() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};

    /// Polls `w` for up to 5 s; whether it ever said "waiting".
    fn shows_waiting(w: &mut Watch, t: &Thread, stop: &AtomicBool) -> bool {
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end && !stop.load(Ordering::Relaxed) {
            if w.waiting(t) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    /// Runs `f` on a thread of its own and watches it; whether it showed
    /// that it waits before it ended. The thread lives on until the
    /// watching is over (an ended thread's counters cannot be read, which
    /// counts as waiting).
    fn watch(f: impl FnOnce() + Send + 'static) -> bool {
        let (tx, rx) = mpsc::channel();
        let (over_tx, over) = mpsc::channel::<()>();
        let stop = Arc::new(AtomicBool::new(false));
        let done = stop.clone();
        let h = std::thread::spawn(move || {
            tx.send(Thread::current()).unwrap();
            f();
            // Relaxed: only ends the polling early.
            done.store(true, Ordering::Relaxed);
            let _ = over.recv();
        });
        let t = rx.recv().unwrap();
        let mut w = Watch::start(&t);
        let waited = shows_waiting(&mut w, &t, &stop);
        drop(over_tx);
        h.join().unwrap();
        waited
    }

    #[test]
    fn waits_show_and_work_does_not() {
        if Thread::current().sample().is_none() {
            eprintln!("no /proc: every thread counts as waiting");
            assert!(Watch::start(&Thread::current()).waiting(&Thread::current()));
            return;
        }
        // A long park; many short sleeps; long sleeps again and again (as
        // SQLite's busy handler); a spin.
        assert!(watch(|| std::thread::park_timeout(Duration::from_millis(500))), "a long park");
        assert!(
            watch(|| (0..2000).for_each(|_| std::thread::sleep(Duration::from_micros(50)))),
            "a wait that polls with short sleeps"
        );
        assert!(
            watch(|| (0..20).for_each(|_| std::thread::sleep(Duration::from_millis(50)))),
            "a wait that polls with long sleeps"
        );
        assert!(
            watch(|| {
                let end = Instant::now() + Duration::from_secs(2);
                while Instant::now() < end {
                    std::thread::yield_now();
                }
            }),
            "a wait that yields"
        );
        // A millisecond of work is no wait.
        assert!(
            !watch(|| {
                let end = Instant::now() + Duration::from_millis(1);
                while Instant::now() < end {
                    std::hint::spin_loop();
                }
            }),
            "work"
        );
        // One timed sleep that began before the watch is no wait: it ends by
        // itself (the thread would retry whatever it waited for).
        if SLEEP_CALLS.is_empty() {
            return; // no sleep counts as timed
        }
        let (tx, rx) = mpsc::channel();
        let h = std::thread::spawn(move || {
            tx.send(Thread::current()).unwrap();
            std::thread::sleep(Duration::from_millis(300));
        });
        let t = rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let mut w = Watch::start(&t);
        let end = Instant::now() + Duration::from_millis(150);
        while Instant::now() < end {
            assert!(!w.waiting(&t), "a timed sleep begun before the watch");
            std::thread::sleep(Duration::from_millis(1));
        }
        h.join().unwrap();
    }
}
