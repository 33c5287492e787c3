//! A property-based fuzz harness for the decoders of the data directory:
//! a small real directory is written once (log files of two streams, a
//! checkpoint, the manifest), then each case mutates one of its files
//! (bits flipped, bytes set, inserted or removed, the file cut short,
//! bytes spliced in from another file, a frame's length or a word inside
//! its body overwritten with a large value) and, half the time, refreshes
//! every frame's CRC so that the damage reaches the decoders behind the
//! checksums. The mutated directory is recovered with
//! [`Database::recover_from`] into an empty in-memory database, or opened
//! with [`Database::open`]: either must return `Ok` or `Err`, never panic,
//! and never ask for an absurd amount of memory (this test binary's
//! allocator aborts, naming the case, on any single allocation over
//! `ALLOC_CAP` or more than `LIVE_CAP` bytes live).
//!
//! 64 cases by default, from a fixed seed, so CI runs the same ones;
//! `MULTIVERSE_FUZZ_CASES=N` runs N, `MULTIVERSE_FUZZ_SEED=S` others. A
//! failure is shrunk to a small mutation list and printed; nothing is
//! written to the repository.

use multiverse::*;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

// ---------------------------------------------------------------------
// An allocator that refuses absurd requests loudly
// ---------------------------------------------------------------------

/// No single allocation of a test case may be larger (the directory is
/// tens of kilobytes).
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
            let _ = writeln!(e, "fuzz_decoders: an allocation of {size} bytes ({live} live): absurd for this data");
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
// The real directory
// ---------------------------------------------------------------------

fn schema(db: &Database) -> Result<()> {
    db.create_table(TableSpec::hash("h", 64))?;
    db.create_table(TableSpec::ordered("o"))?;
    Ok(())
}

fn options(dir: &Path, on_damage: OnDamage) -> Options {
    Options {
        durability: Durability::Sync,
        data_dir: Some(dir.to_path_buf()),
        log_streams: 2,
        log_rotate_bytes: 4096,
        checkpoint_every: None,
        checkpoint_log_bytes: None,
        on_damage,
        ..Options::default()
    }
}

/// Inserts, updates and deletes of keys and values of many lengths, from
/// two threads (so both streams hold records), a checkpoint in between.
fn work(db: &Database, th: u64, range: std::ops::Range<u64>) {
    let (h, o) = (db.table("h").unwrap(), db.table("o").unwrap());
    for i in range {
        let r = db.run(Isolation::Serializable, |t| {
            let v = vec![(i % 251) as u8; (i % 37) as usize];
            t.put(h, Key::from(i % 24), &v)?;
            let len = 1 + (i as usize * 7) % KEY_MAX;
            let k = Key::from_bytes(&vec![th as u8 + (i % 5) as u8; len])?;
            if i % 4 == 3 {
                match t.delete(o, &k) {
                    Err(Error::KeyNotFound) => Ok(()),
                    r => r,
                }
            } else {
                t.put(o, k, i.to_le_bytes())
            }
        });
        r.unwrap();
    }
}

/// The directory's files (name, bytes), written once.
fn real_files() -> Vec<(String, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = Database::open_with(options(dir.path(), OnDamage::KeepPrefix), schema).unwrap();
    let both = |from: u64| {
        std::thread::scope(|s| {
            for th in 0..2u64 {
                let db = &db;
                s.spawn(move || work(db, th, from + th * 1000..from + th * 1000 + 40));
            }
        })
    };
    both(0);
    db.checkpoint().unwrap();
    both(100);
    db.flush_log().unwrap();
    drop(db);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap())
        })
        .collect();
    files.sort();
    let logs = files.iter().filter(|f| f.0.starts_with("log-")).count();
    assert!(logs >= 3 && files.iter().any(|f| f.0.starts_with("checkpoint-")), "{:?}", names(&files));
    // The refreshed CRCs only reach the decoders if this test frames
    // files as the engine does.
    for (name, data) in files.iter().filter(|f| !f.0.starts_with("LOCK")) {
        let frames = frame_starts(data);
        assert!(!frames.is_empty(), "{name}: no frame found: has the file format changed?");
        for &at in &frames {
            let len = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
            let crc = u32::from_le_bytes(data[at + 4..at + 8].try_into().unwrap());
            assert_eq!(crc, crc32(&data[at + 8..at + 8 + len]), "{name}: frame at {at}: has the framing changed?");
        }
    }
    files
}

fn names(files: &[(String, Vec<u8>)]) -> Vec<String> {
    files.iter().map(|(n, d)| format!("{n} ({} B)", d.len())).collect()
}

/// CRC-32 (IEEE), bit by bit.
fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
    }
    !c
}

/// Where the frames (u32 length, u32 CRC, body) of a file begin, after
/// its 8-byte magic, up to the first that does not fit.
fn frame_starts(data: &[u8]) -> Vec<usize> {
    let mut at = 8usize;
    let mut out = Vec::new();
    while at + 8 <= data.len() {
        let len = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        match at.checked_add(8 + len) {
            Some(next) if next <= data.len() => {
                out.push(at);
                at = next;
            }
            _ => break,
        }
    }
    out
}

/// Gives every frame that fits the CRC of its (mutated) body.
fn refresh_crcs(data: &mut [u8]) {
    for at in frame_starts(data) {
        let len = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        let crc = crc32(&data[at + 8..at + 8 + len]);
        data[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
    }
}

// ---------------------------------------------------------------------
// Mutations
// ---------------------------------------------------------------------

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
    /// Copy `len` bytes of another file (from `src`) over this one at `at`.
    Splice {
        from: Index,
        src: Index,
        len: usize,
        at: Index,
    },
    /// A frame's length field.
    Length {
        frame: Index,
        value: u32,
    },
    /// A 32-bit word inside a frame's body (a count, a length).
    Word {
        frame: Index,
        off: Index,
        value: u32,
    },
    /// A 64-bit word inside a frame's body (an epoch, a timestamp, a
    /// generation).
    Long {
        frame: Index,
        off: Index,
        value: u64,
    },
}

fn big_u32() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(u32::MAX),
        Just(1 << 31),
        Just((1 << 31) - 1),
        Just(1 << 30),
        Just((1 << 30) - 1),
        Just((1 << 30) + 1),
        Just(1 << 24),
        Just(0),
        any::<u32>(),
    ]
}

fn big_u64() -> impl Strategy<Value = u64> {
    prop_oneof![Just(u64::MAX), Just(0), Just(1), Just(1 << 63), Just(u32::MAX as u64 + 1), any::<u64>()]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 0..8u8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        (any::<Index>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Set { at, byte }),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<Index>(), 1..64usize).prop_map(|(at, len)| Mutation::Remove { at, len }),
        any::<Index>().prop_map(|at| Mutation::Truncate { at }),
        (any::<Index>(), any::<Index>(), 1..512usize, any::<Index>())
            .prop_map(|(from, src, len, at)| Mutation::Splice { from, src, len, at }),
        (any::<Index>(), big_u32()).prop_map(|(frame, value)| Mutation::Length { frame, value }),
        (any::<Index>(), any::<Index>(), big_u32()).prop_map(|(frame, off, value)| Mutation::Word {
            frame,
            off,
            value
        }),
        (any::<Index>(), any::<Index>(), big_u64()).prop_map(|(frame, off, value)| Mutation::Long {
            frame,
            off,
            value
        }),
    ]
}

/// Writes `bytes` at `at`, as much of them as fits.
fn overwrite(data: &mut [u8], at: usize, bytes: &[u8]) {
    let n = bytes.len().min(data.len().saturating_sub(at));
    data[at..at + n].copy_from_slice(&bytes[..n]);
}

/// A frame's start and body length, picked by `frame`.
fn pick_frame(data: &[u8], frame: &Index) -> Option<(usize, usize)> {
    let frames = frame_starts(data);
    if frames.is_empty() {
        return None;
    }
    let at = frames[frame.index(frames.len())];
    Some((at, u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize))
}

fn apply(data: &mut Vec<u8>, m: &Mutation, files: &[(String, Vec<u8>)]) {
    let n = data.len();
    match m {
        Mutation::Insert { at, bytes } => {
            let at = at.index(n + 1);
            data.splice(at..at, bytes.iter().copied());
        }
        Mutation::Truncate { at } => data.truncate(at.index(n + 1)),
        _ if n == 0 => {}
        Mutation::Flip { at, bit } => data[at.index(n)] ^= 1 << bit,
        Mutation::Set { at, byte } => data[at.index(n)] = *byte,
        Mutation::Remove { at, len } => {
            let at = at.index(n);
            data.drain(at..(at + len).min(n));
        }
        Mutation::Splice { from, src, len, at } => {
            let other = &files[from.index(files.len())].1;
            if !other.is_empty() {
                let s = src.index(other.len());
                let bytes = &other[s..(s + len).min(other.len())];
                overwrite(data, at.index(n), bytes);
            }
        }
        Mutation::Length { frame, value } => {
            if let Some((at, _)) = pick_frame(data, frame) {
                overwrite(data, at, &value.to_le_bytes());
            }
        }
        Mutation::Word { frame, off, value } => {
            if let Some((at, len)) = pick_frame(data, frame) {
                overwrite(data, at + 8 + off.index(len.max(1)), &value.to_le_bytes());
            }
        }
        Mutation::Long { frame, off, value } => {
            if let Some((at, len)) = pick_frame(data, frame) {
                overwrite(data, at + 8 + off.index(len.max(1)), &value.to_le_bytes());
            }
        }
    }
}

#[derive(Clone, Debug)]
struct Case {
    /// Which file (an index into the sorted file list).
    file: Index,
    mutations: Vec<Mutation>,
    /// Give every frame that still fits a matching CRC afterwards.
    refresh_crcs: bool,
    /// `Database::open` (with this policy) instead of `recover_from`.
    open: Option<OnDamage>,
}

fn case() -> impl Strategy<Value = Case> {
    let open = prop_oneof![
        3 => Just(None),
        1 => Just(Some(OnDamage::KeepPrefix)),
        1 => Just(Some(OnDamage::Refuse)),
    ];
    (any::<Index>(), prop::collection::vec(mutation(), 1..6), any::<bool>(), open)
        .prop_map(|(file, mutations, refresh_crcs, open)| Case { file, mutations, refresh_crcs, open })
}

/// Every row of both tables, read back (what was recovered must be readable).
fn read_all(db: &Database) -> Result<usize> {
    db.sync_commits()?;
    let mut n = 0;
    let mut t = db.begin(Isolation::Serializable)?;
    for name in ["h", "o"] {
        let id = db.table(name)?;
        t.scan(db.primary(id), .., None, |_, _| {
            n += 1;
            true
        })?;
    }
    t.commit()?;
    Ok(n)
}

/// Runs one case: whatever recovery says is fine, as long as it says it.
fn run(files: &[(String, Vec<u8>)], c: &Case) -> std::result::Result<String, TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let victim = c.file.index(files.len());
    *CURRENT.lock().unwrap() = format!("{} mutated by {c:?}", files[victim].0);
    for (i, (name, data)) in files.iter().enumerate() {
        let mut data = data.clone();
        if i == victim {
            for m in &c.mutations {
                apply(&mut data, m, files);
            }
            if c.refresh_crcs {
                refresh_crcs(&mut data);
            }
        }
        std::fs::write(dir.path().join(name), data).unwrap();
    }
    let outcome = match c.open {
        Some(policy) => match Database::open_with(options(dir.path(), policy), schema) {
            Ok((db, rep)) => {
                let rows = read_all(&db).map_err(|e| TestCaseError::fail(format!("reading back: {e}")))?;
                drop(db);
                // What one open wrote, the next reads.
                let (db, _) = Database::open_with(options(dir.path(), OnDamage::Refuse), schema)
                    .map_err(|e| TestCaseError::fail(format!("the reopen after a recovery failed: {e}")))?;
                let again = read_all(&db).map_err(|e| TestCaseError::fail(format!("reading back: {e}")))?;
                prop_assert_eq!(rows, again, "the reopen found another state");
                format!("opened: {rows} rows, damaged {}, dropped {}", rep.damaged, rep.dropped.len())
            }
            Err(e) => format!("refused: {e}"),
        },
        None => {
            // Replays damaged data too (the default refuses it; `recover_from`
            // changes nothing in the directory either way).
            let db = Database::new(Options { on_damage: OnDamage::KeepPrefix, ..Options::default() }).unwrap();
            schema(&db).unwrap();
            match db.recover_from(dir.path()) {
                Ok(rep) => {
                    let rows = read_all(&db).map_err(|e| TestCaseError::fail(format!("reading back: {e}")))?;
                    format!("recovered: {rows} rows, damaged {}, dropped {}", rep.damaged, rep.dropped.len())
                }
                Err(e) => format!("refused: {e}"),
            }
        }
    };
    Ok(format!("{}: {outcome}", files[victim].0))
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

#[test]
fn mutated_data_files_are_recovered_or_refused_never_panic() {
    let files = real_files();
    eprintln!("the real directory: {:?}", names(&files));
    let cases = env_u64("MULTIVERSE_FUZZ_CASES", 64) as u32;
    let seed = env_u64("MULTIVERSE_FUZZ_SEED", 0x6d76_6675_7a7a);
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config { cases, failure_persistence: None, max_shrink_iters: 2000, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes));
    let (refused, recovered) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    let result = runner.run(&case(), |c| {
        let what = run(&files, &c)?;
        let n = if what.contains(": refused") { &refused } else { &recovered };
        n.set(n.get() + 1);
        Ok(())
    });
    eprintln!(
        "{cases} cases from seed {seed}: {} recovered, {} refused (shrinking included)",
        recovered.get(),
        refused.get()
    );
    match result {
        Ok(()) => {}
        Err(TestError::Fail(why, c)) => {
            panic!("seed {seed}: a mutated directory broke recovery: {why}\nminimal case: {c:#?}")
        }
        Err(TestError::Abort(why)) => panic!("seed {seed}: {why}"),
    }
}
