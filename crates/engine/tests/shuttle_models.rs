//! Schedule-randomized checks of the lock-free pieces whose correctness
//! argument is the single total order of SeqCst accesses — POMVCC's
//! timestamp counters — and of SSN's stamp word (a plain store racing
//! read-modify-writes), with `shuttle`: random and PCT schedules under
//! sequential consistency. loom, which explores the weaker orderings the
//! other pieces use (`loom_models.rs`), treats SeqCst accesses as AcqRel
//! and orders such a plain store only partially, so it reports false alarms
//! here.
//!
//! As in `loom_models.rs`, this crate compiles the engine's own source files
//! with a `sync` module of its own, here on `shuttle`.
//!
//! On a failure shuttle prints the failing schedule; set
//! `MULTIVERSE_SHUTTLE_REPLAY` to it to replay exactly that schedule (see
//! `replay_hint`). `MULTIVERSE_SHUTTLE_ITERS` raises the number of schedules
//! tried (default 2000 per model).

use shuttle::sync::Arc;
use shuttle::thread;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// The `crate::sync` of the included files, on shuttle.
mod sync {
    pub(crate) mod atomic {
        pub(crate) use shuttle::sync::atomic::{AtomicU64, Ordering};
    }
}

#[allow(dead_code)]
#[path = "../src/protocol/mv/pomvcc/clock.rs"]
mod pomvcc_clock;

#[allow(dead_code)]
#[path = "../src/protocol/mv/ssn/stamp.rs"]
mod ssn_stamp;

use sync::atomic::{AtomicU64, Ordering};

/// Runs model `name`: `MULTIVERSE_SHUTTLE_ITERS` (default 2000) schedules,
/// half random, half PCT (depth 3); or, with `MULTIVERSE_SHUTTLE_REPLAY`
/// set, exactly that schedule. On a failure, says how to replay it.
fn check(name: &str, f: impl Fn() + Send + Sync + 'static) {
    let f = std::sync::Arc::new(f);
    if let Ok(schedule) = std::env::var("MULTIVERSE_SHUTTLE_REPLAY") {
        let f = f.clone();
        shuttle::replay(move || f(), &schedule);
        return;
    }
    let iters: usize = std::env::var("MULTIVERSE_SHUTTLE_ITERS").map_or(2000, |v| v.parse().expect("a number"));
    let run = AssertUnwindSafe(|| {
        let g = f.clone();
        shuttle::check_random(move || g(), iters / 2);
        let g = f.clone();
        shuttle::check_pct(move || g(), iters / 2, 3);
    });
    if let Err(panic) = catch_unwind(run) {
        eprintln!("{}", replay_hint(name));
        resume_unwind(panic);
    }
}

/// How to replay a failing schedule of model `name`.
fn replay_hint(name: &str) -> String {
    format!(
        "\nshuttle model `{name}` failed; shuttle printed the failing schedule above. Replay it with\n   \
         MULTIVERSE_SHUTTLE_REPLAY='<that schedule>' cargo test -p multiverse-engine --test shuttle_models -- --exact {name}\n"
    )
}

/// Two transactions enter pre-commit (Allocate_CTs) and finish, one
/// committing and one aborting, while a third thread advances CTs (a
/// conflict or the periodic tick) and BTs, and a fourth begins a
/// transaction that must see the first one's commit (Allocate_BTs's
/// request, as a wait for BTs): BTs never passes a timestamp while a
/// transaction at it is pre-committed, never reaches CTs, and catches up
/// once everything has finished.
#[test]
fn pomvcc_bts_never_passes_a_precommitted_timestamp() {
    check("pomvcc_bts_never_passes_a_precommitted_timestamp", || {
        let m = Arc::new(pomvcc_clock::TsCounters::new(0, 4));
        let committed_at = Arc::new(AtomicU64::new(0));
        let txns: Vec<_> = [true, false]
            .into_iter()
            .map(|commit| {
                let (m, committed_at) = (m.clone(), committed_at.clone());
                thread::spawn(move || {
                    let c = m.allocate_cts(thread::yield_now);
                    assert!(m.bts() < c, "BTs reached {c} right after it was taken");
                    thread::yield_now(); // validation, postprocessing
                    assert!(m.bts() < c, "BTs passed {c} while it was pre-committed");
                    m.finish(c, commit);
                    if commit {
                        // SeqCst: the client's request, after its commit.
                        committed_at.store(c, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        let clock = {
            let m = m.clone();
            thread::spawn(move || {
                for _ in 0..2 {
                    m.update_cts();
                    let b = m.update_bts();
                    assert!(b < m.cts(), "BTs reached CTs");
                }
            })
        };
        for h in txns {
            h.join().unwrap();
        }
        clock.join().unwrap();
        let c = committed_at.load(Ordering::SeqCst);
        // Allocate_BTs(c): close c, then wait until it is complete.
        while m.cts() <= c {
            m.update_cts();
        }
        assert!(m.update_bts() >= c, "a finished, closed timestamp is complete");
        assert_eq!(m.update_bts(), m.cts() - 1, "nothing in flight: BTs catches up");
        let (pc, cc) = m.counters(c);
        assert!(pc >= cc, "Ts.PC counts every commit (pc {pc}, cc {cc})");
    });
}

/// Two readers of V raise η(V) as they commit while V's overwriter, having
/// committed, writes π(V), and an observer reads the word twice: η only
/// grows, a raise never overwrites π(V), and the word ends holding π(V).
#[test]
fn ssn_stamp_word_eta_grows_and_pi_stays() {
    use ssn_stamp::Stamp;
    check("ssn_stamp_word_eta_grows_and_pi_stays", || {
        let w = Arc::new(AtomicU64::new(5)); // η(V) = c(V), the creator's stamp
        let readers: Vec<_> = [7, 9]
            .into_iter()
            .map(|c| {
                let w = w.clone();
                thread::spawn(move || ssn_stamp::raise_eta(&w, c, Ordering::Release))
            })
            .collect();
        let overwriter = {
            let w = w.clone();
            thread::spawn(move || ssn_stamp::set_pi(&w, 20))
        };
        let observer = {
            let w = w.clone();
            thread::spawn(move || {
                let a = ssn_stamp::read(&w);
                let b = ssn_stamp::read(&w);
                match (a, b) {
                    (Stamp::Eta(x), Stamp::Eta(y)) => assert!(x <= y, "η(V) fell from {x} to {y}"),
                    (Stamp::Pi(_), Stamp::Eta(_)) => panic!("π(V) was overwritten by η"),
                    _ => {}
                }
            })
        };
        for h in readers {
            h.join().unwrap();
        }
        overwriter.join().unwrap();
        observer.join().unwrap();
        assert_eq!(ssn_stamp::read(&w), Stamp::Pi(20));
    });
}
