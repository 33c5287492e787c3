//! A property-based fuzz harness for the history reader and the checker:
//! real histories (one the engine recorded with transactions interleaved
//! on one thread at every isolation level, with reads, scans, inserts,
//! updates, deletes, commits and aborts; one written by hand with the
//! format's rarer features) are mutated at the byte level (bits flipped,
//! bytes set, inserted, removed, the text cut short), the line level
//! (lines duplicated, removed, swapped, moved) and the token level (a word
//! replaced by a boundary value or a word of another line, duplicated or
//! removed). `read_history` must return `Ok` or `Err` and never panic; a
//! history it accepts must be written back to text that reads back to the
//! same history, and `check` (at every level) and `check_appends` must
//! run on it without panicking or asking for absurd memory (this test
//! binary's allocator aborts, naming the case, on any single allocation
//! over `ALLOC_CAP` or more than `LIVE_CAP` bytes live).
//!
//! 64 cases by default, from a fixed seed; `MULTIVERSE_FUZZ_CASES=N` runs
//! N, `MULTIVERSE_FUZZ_SEED=S` others. Nothing is written to the
//! repository.

use multiverse::research::history::History;
use multiverse::{Database, Isolation, Key, Options, TableSpec};
use multiverse_check::{check, check_appends, read_history, write_history};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::alloc::{GlobalAlloc, Layout, System};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

// ---------------------------------------------------------------------
// An allocator that refuses absurd requests loudly
// ---------------------------------------------------------------------

/// No single allocation of a test case may be larger (the histories are
/// a few kilobytes).
const ALLOC_CAP: usize = 256 << 20;
/// Nor may this much be live at once.
const LIVE_CAP: usize = 1 << 30;

struct Capped;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static ABORTING: AtomicBool = AtomicBool::new(false);
/// The case being run, for the message before an abort.
static CURRENT: Mutex<String> = Mutex::new(String::new());

impl Capped {
    /// Aborts, naming the case, if a request of `size` bytes that adds
    /// `more` to what is live is absurd.
    fn check(&self, size: usize, more: usize) {
        // Relaxed: a counter for a limit, not a synchronization.
        let live = LIVE.load(Ordering::Relaxed);
        if (size > ALLOC_CAP || live.saturating_add(more) > LIVE_CAP) && !ABORTING.swap(true, Ordering::Relaxed) {
            use std::io::Write;
            let mut e = std::io::stderr();
            let _ = writeln!(e, "fuzz_history: an allocation of {size} bytes ({live} live): absurd for this input");
            if let Ok(c) = CURRENT.try_lock() {
                let _ = writeln!(e, "while running: {}", *c);
            }
            // Allocations from here on pass unchecked (ABORTING is set).
            let _ = writeln!(e, "{}", std::backtrace::Backtrace::force_capture());
            std::process::abort();
        }
    }
}

// SAFETY: forwards to the system allocator, only counting and checking
// sizes first.
unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.check(layout.size(), layout.size());
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.check(layout.size(), layout.size());
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.check(new_size, new_size.saturating_sub(layout.size()));
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Capped = Capped;

// ---------------------------------------------------------------------
// Real histories
// ---------------------------------------------------------------------

/// Up to three transactions open at once on one thread, at random levels,
/// doing random reads, scans (plain and filtered), inserts, updates and
/// deletes, then committing (or failing to) or aborting.
fn engine_history() -> History {
    let db = Database::new(Options { record_history: true, ..Options::default() }).unwrap();
    let t = db.create_table(TableSpec::ordered("t")).unwrap();
    let h = db.create_table(TableSpec::hash("h", 16)).unwrap();
    db.run(Isolation::Serializable, |x| {
        for i in 0..8u64 {
            x.insert(t, Key::from(i), i.to_be_bytes())?;
            x.insert(h, Key::from(i), [i as u8; 3])?;
        }
        Ok(())
    })
    .unwrap();
    let odd: multiverse::Filter = Arc::new(|_: &Key, v: &[u8]| v.last().is_some_and(|b| b % 2 == 1));
    let mut rng = SmallRng::seed_from_u64(25);
    let mut open = Vec::new();
    for _ in 0..400 {
        if open.is_empty() || (open.len() < 3 && rng.gen_bool(0.25)) {
            let level = Isolation::ALL[rng.gen_range(0..Isolation::ALL.len())];
            if let Ok(x) = db.begin(level) {
                open.push(x);
            }
            continue;
        }
        let i = rng.gen_range(0..open.len());
        let k = Key::from(rng.gen_range(0..12u64));
        let table = if rng.gen_bool(0.7) { t } else { h.table() };
        let x = &mut open[i];
        let _ = match rng.gen_range(0..12) {
            0..=2 => x.get(table, &k).map(drop),
            3 => {
                let hi = Key::from(k.to_u64().unwrap() + rng.gen_range(1..5));
                x.scan(db.primary(t), (Bound::Included(k), Bound::Excluded(hi)), None, |_, _| true)
            }
            4 => x.scan(db.primary(t), .., Some(&odd), |_, _| true),
            5 => x.insert(table, k, rng.gen::<u64>().to_be_bytes()),
            6 => x.delete(table, &k),
            7 | 8 => x.update_with(table, &k, |old, new| {
                new.extend_from_slice(old);
                new.push(1);
            }),
            9 | 10 => {
                let _ = open.swap_remove(i).commit();
                Ok(())
            }
            _ => {
                drop(open.swap_remove(i));
                Ok(())
            }
        };
    }
    for x in open {
        let _ = x.commit();
    }
    let history = db.take_history();
    assert!(history.txns.len() > 50, "{} transactions", history.txns.len());
    history
}

/// The format's rarer features: comments, blank lines, tabs, short level
/// names, upper-case hex, empty keys and values, `locking` and `snapshot`
/// flags, unbounded and empty scan bounds, comments after the trailer.
const HAND_WRITTEN: &str = "\
# written by hand
multiverse-history 1

txn 1 serializable begin=1 commit=2 committed
  w 0 0000000000000001 insert 0A0B
  w 1 - insert -
txn 2 rc begin=3 commit=4 committed locking
\tr 0 0000000000000001 c:2 0a0b
  s 0 0 * * plain
    row 0000000000000001 c:2 0a0b
  s 1 1 [ (ff filtered
  w 0 0000000000000001 update 0a0b0c
txn 3 snapshot begin=5 commit=- aborted:write-conflict snapshot
  r 0 0000000000000001 t:2 0a0b0c
  w 0 0000000000000002 delete -
txn 4 repeatable-read begin=5 commit=6 committed locking snapshot
  r 1 - c:2 -
  r 0 0000000000000009 none
end 4
# a comment after the trailer
";

fn texts() -> Vec<Vec<u8>> {
    let mut engine = Vec::new();
    write_history(&engine_history(), &mut engine).unwrap();
    let hand = HAND_WRITTEN.as_bytes().to_vec();
    read_history(&hand[..]).expect("the hand-written history reads");
    vec![engine, hand]
}

// ---------------------------------------------------------------------
// Mutations
// ---------------------------------------------------------------------

/// Words that sit on the edges of what the reader accepts.
const EDGES: &[&str] = &[
    "0",
    "1",
    "-1",
    "+1",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "4294967295",
    "4294967296",
    "255",
    "256",
    "-",
    "--",
    "c:",
    "t:",
    "c:0",
    "c:18446744073709551615",
    "t:18446744073709551615",
    "x:1",
    "[",
    "(",
    "*",
    "[-",
    "(zz",
    "00",
    "0",
    "abc",
    "zz",
    "é",
    "\u{0}",
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "000000000000000000000000000000000000000000000000000000000000000000",
    "serializable",
    "rc",
    "ser",
    "bogus-level",
    "committed",
    "aborted:",
    "aborted:user",
    "aborted:nonsense",
    "begin=",
    "begin=18446744073709551615",
    "commit=-",
    "commit=0",
    "locking",
    "snapshot",
    "plain",
    "filtered",
    "insert",
    "update",
    "delete",
    "none",
    "txn",
    "end",
    "end 0",
    "row",
    "r",
    "w",
    "s",
    "#",
    "multiverse-history 1",
    "multiverse-history 2",
];

#[derive(Clone, Debug)]
enum Mutation {
    Flip {
        at: Index,
        bit: u8,
    },
    Set {
        at: Index,
        byte: u8,
    },
    Insert {
        at: Index,
        bytes: Vec<u8>,
    },
    Remove {
        at: Index,
        len: usize,
    },
    Truncate {
        at: Index,
    },
    DupLine {
        line: Index,
    },
    DropLine {
        line: Index,
    },
    SwapLines {
        a: Index,
        b: Index,
    },
    MoveLine {
        from: Index,
        to: Index,
    },
    /// A word of a line replaced by an edge word.
    Edge {
        line: Index,
        word: Index,
        with: Index,
    },
    /// A word of a line replaced by a word of another line.
    Borrow {
        line: Index,
        word: Index,
        from: Index,
        their: Index,
    },
    DupWord {
        line: Index,
        word: Index,
    },
    DropWord {
        line: Index,
        word: Index,
    },
    /// The number a word ends in (an id, a timestamp, a table, a count,
    /// the `N` of `c:N`, `begin=N`) replaced: the text stays well formed,
    /// the history need not make sense.
    Number {
        line: Index,
        word: Index,
        value: u64,
    },
}

fn number() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0..40u64,
        1 => Just(u64::MAX),
        1 => Just(u64::MAX - 1),
        1 => Just(1 << 63),
        1 => Just(u32::MAX as u64),
        1 => any::<u64>(),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let i = any::<Index>;
    prop_oneof![
        1 => (i(), 0..8u8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        1 => (i(), any::<u8>()).prop_map(|(at, byte)| Mutation::Set { at, byte }),
        1 => (i(), prop::collection::vec(any::<u8>(), 1..8)).prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        1 => (i(), 1..40usize).prop_map(|(at, len)| Mutation::Remove { at, len }),
        1 => i().prop_map(|at| Mutation::Truncate { at }),
        1 => i().prop_map(|line| Mutation::DupLine { line }),
        1 => i().prop_map(|line| Mutation::DropLine { line }),
        1 => (i(), i()).prop_map(|(a, b)| Mutation::SwapLines { a, b }),
        1 => (i(), i()).prop_map(|(from, to)| Mutation::MoveLine { from, to }),
        3 => (i(), i(), i()).prop_map(|(line, word, with)| Mutation::Edge { line, word, with }),
        2 => (i(), i(), i(), i()).prop_map(|(line, word, from, their)| Mutation::Borrow { line, word, from, their }),
        1 => (i(), i()).prop_map(|(line, word)| Mutation::DupWord { line, word }),
        1 => (i(), i()).prop_map(|(line, word)| Mutation::DropWord { line, word }),
        6 => (i(), i(), number()).prop_map(|(line, word, value)| Mutation::Number { line, word, value }),
    ]
}

fn split_lines(text: &[u8]) -> Vec<Vec<u8>> {
    text.split(|&b| b == b'\n').map(|l| l.to_vec()).collect()
}

fn join_lines(lines: &[Vec<u8>]) -> Vec<u8> {
    lines.join(&b'\n')
}

fn words(line: &[u8]) -> Vec<Vec<u8>> {
    line.split(|b| b.is_ascii_whitespace()).filter(|w| !w.is_empty()).map(|w| w.to_vec()).collect()
}

/// Applies `f` to the words of line `line` (kept as the line's indent
/// and its words joined by single spaces).
fn edit_words(text: &mut Vec<u8>, line: &Index, f: impl FnOnce(&mut Vec<Vec<u8>>)) {
    let mut lines = split_lines(text);
    let i = line.index(lines.len());
    let l = &mut lines[i];
    let indent: Vec<u8> = l.iter().copied().take_while(|b| b.is_ascii_whitespace()).collect();
    let mut w = words(l);
    if w.is_empty() {
        return;
    }
    f(&mut w);
    *l = [indent, w.join(&b' ')].concat();
    *text = join_lines(&lines);
}

fn apply(text: &mut Vec<u8>, m: &Mutation) {
    let n = text.len();
    match m {
        Mutation::Insert { at, bytes } => {
            let at = at.index(n + 1);
            text.splice(at..at, bytes.iter().copied());
        }
        Mutation::Truncate { at } => text.truncate(at.index(n + 1)),
        _ if n == 0 => {}
        Mutation::Flip { at, bit } => text[at.index(n)] ^= 1 << bit,
        Mutation::Set { at, byte } => text[at.index(n)] = *byte,
        Mutation::Remove { at, len } => {
            let at = at.index(n);
            text.drain(at..(at + len).min(n));
        }
        Mutation::DupLine { line } => {
            let mut lines = split_lines(text);
            let i = line.index(lines.len());
            lines.insert(i, lines[i].clone());
            *text = join_lines(&lines);
        }
        Mutation::DropLine { line } => {
            let mut lines = split_lines(text);
            lines.remove(line.index(lines.len()));
            *text = join_lines(&lines);
        }
        Mutation::SwapLines { a, b } => {
            let mut lines = split_lines(text);
            let (a, b) = (a.index(lines.len()), b.index(lines.len()));
            lines.swap(a, b);
            *text = join_lines(&lines);
        }
        Mutation::MoveLine { from, to } => {
            let mut lines = split_lines(text);
            let l = lines.remove(from.index(lines.len()));
            let to = to.index(lines.len() + 1);
            lines.insert(to, l);
            *text = join_lines(&lines);
        }
        Mutation::Edge { line, word, with } => {
            let edge = EDGES[with.index(EDGES.len())].as_bytes().to_vec();
            edit_words(text, line, |w| {
                let i = word.index(w.len());
                w[i] = edge;
            });
        }
        Mutation::Borrow { line, word, from, their } => {
            let lines = split_lines(text);
            let theirs = words(&lines[from.index(lines.len())]);
            if theirs.is_empty() {
                return;
            }
            let borrowed = theirs[their.index(theirs.len())].clone();
            edit_words(text, line, |w| {
                let i = word.index(w.len());
                w[i] = borrowed;
            });
        }
        Mutation::DupWord { line, word } => edit_words(text, line, |w| {
            let i = word.index(w.len());
            w.insert(i, w[i].clone());
        }),
        Mutation::DropWord { line, word } => edit_words(text, line, |w| {
            w.remove(word.index(w.len()));
        }),
        Mutation::Number { line, word, value } => edit_words(text, line, |w| {
            let i = word.index(w.len());
            let w = &mut w[i];
            let digits = w.iter().rev().take_while(|b| b.is_ascii_digit()).count();
            if digits > 0 {
                w.truncate(w.len() - digits);
                w.extend_from_slice(value.to_string().as_bytes());
            }
        }),
    }
}

/// Makes the trailer count the `txn` lines, so that histories whose
/// lines were duplicated or dropped are read (and checked) too.
fn fix_trailer(text: &mut Vec<u8>) {
    let mut lines = split_lines(text);
    let txns = lines.iter().filter(|l| words(l).first().is_some_and(|w| w == b"txn")).count();
    if let Some(l) = lines.iter_mut().rev().find(|l| words(l).first().is_some_and(|w| w == b"end")) {
        *l = format!("end {txns}").into_bytes();
    }
    *text = join_lines(&lines);
}

#[derive(Clone, Debug)]
struct Case {
    /// Which history (the engine's or the hand-written one).
    base: Index,
    mutations: Vec<Mutation>,
    /// Recount the trailer afterwards.
    fix_trailer: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (any::<Index>(), prop::collection::vec(mutation(), 1..5), any::<bool>())
        .prop_map(|(base, mutations, fix_trailer)| Case { base, mutations, fix_trailer })
}

fn mutated(texts: &[Vec<u8>], c: &Case) -> Vec<u8> {
    let mut text = texts[c.base.index(texts.len())].clone();
    for m in &c.mutations {
        apply(&mut text, m);
    }
    if c.fix_trailer {
        fix_trailer(&mut text);
    }
    text
}

/// Runs one case; `Ok(true)` when the mutated history was accepted.
fn run(texts: &[Vec<u8>], c: &Case) -> std::result::Result<bool, TestCaseError> {
    let text = mutated(texts, c);
    *CURRENT.lock().unwrap() = format!("{c:?} giving\n{}", String::from_utf8_lossy(&text));
    let Ok(history) = read_history(&text[..]) else { return Ok(false) };
    // What it accepts, it writes back faithfully.
    let mut again = Vec::new();
    write_history(&history, &mut again).map_err(|e| TestCaseError::fail(format!("write_history: {e}")))?;
    match read_history(&again[..]) {
        Ok(h) => prop_assert_eq!(&h, &history, "the history written back reads back as another"),
        Err(e) => {
            return Err(TestCaseError::fail(format!(
                "the history written back does not read back: {e}\n{}",
                String::from_utf8_lossy(&again)
            )))
        }
    }
    for level in Isolation::ALL {
        let report = check(&history, level);
        // The report prints.
        let _ = report.to_string();
    }
    for m in check_appends(&history) {
        let _ = m.to_string();
    }
    Ok(true)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

#[test]
fn mutated_histories_are_read_or_refused_and_checked_without_panics() {
    let texts = texts();
    let cases = env_u64("MULTIVERSE_FUZZ_CASES", 64) as u32;
    let seed = env_u64("MULTIVERSE_FUZZ_SEED", 0x6869_7374_6f72);
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config { cases, failure_persistence: None, max_shrink_iters: 4000, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes));
    let (accepted, refused) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    let result = runner.run(&case(), |c| {
        let n = if run(&texts, &c)? { &accepted } else { &refused };
        n.set(n.get() + 1);
        Ok(())
    });
    eprintln!(
        "{cases} cases from seed {seed}: {} accepted and checked, {} refused (shrinking included)",
        accepted.get(),
        refused.get()
    );
    match result {
        Ok(()) => {}
        Err(TestError::Fail(why, c)) => {
            let text = mutated(&texts, &c);
            panic!(
                "seed {seed}: a mutated history broke the reader or the checker: {why}\nminimal case: {c:#?}\n\
                 its text:\n{}",
                String::from_utf8_lossy(&text)
            )
        }
        Err(TestError::Abort(why)) => panic!("seed {seed}: {why}"),
    }
}
