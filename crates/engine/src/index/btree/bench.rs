//! A microbenchmark of the ordered index's map: crossbeam's skip list (the
//! map the ordered index uses today) against the engine's B+tree with
//! optimistic lock coupling, both keyed by the ordered index's entry key
//! (an index key and an empty primary key, as [`Key`]s) and holding an
//! 8-byte atomic value, like the index's chain heads.
//!
//! For each map and thread count, [`run`] loads `keys` keys in random order
//! (timed), then times point lookups of loaded keys, range scans of 10,
//! 100 and 1,000 keys from a random loaded key, and finally inserts of
//! `keys / 2` fresh keys spread between the loaded ones. Time-based cases
//! run for [`Config::secs`] each. Each thread pins the epoch once per 64
//! operations, for both maps. Run it through the `index_bench` example:
//! `cargo run --release -p multiverse-engine --example index_bench`.
//!
//! ```
//! use multiverse::research::index_bench::{run, Config};
//!
//! let cfg = Config { keys: 2_000, threads: vec![1], secs: 0.01 };
//! let rows = run(&cfg, |r| println!("{} {} {:.0}", r.map, r.case, r.ops_per_s));
//! assert_eq!(rows.len(), 12, "six cases for each of two maps");
//! ```

use crate::index::btree::BTree;
use crate::key::Key;
use crossbeam_epoch::Guard;
use crossbeam_skiplist::base::SkipList;
use std::hint::black_box;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What to measure.
///
/// ```
/// use multiverse::research::index_bench::Config;
///
/// let cfg = Config { keys: 10_000_000, ..Config::default() };
/// assert_eq!((cfg.threads, cfg.secs), (vec![1, 2], 1.0));
/// ```
#[derive(Debug, Clone)]
pub struct Config {
    /// Keys loaded before the other cases.
    pub keys: u64,
    /// Thread counts to run every case with.
    pub threads: Vec<usize>,
    /// Seconds per time-based case.
    pub secs: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config { keys: 1_000_000, threads: vec![1, 2], secs: 1.0 }
    }
}

/// One measurement.
///
/// ```
/// use multiverse::research::index_bench::{run, Config};
///
/// let rows = run(&Config { keys: 1_000, threads: vec![2], secs: 0.01 }, |_| {});
/// assert!(rows.iter().all(|r| r.threads == 2 && r.ops_per_s > 0.0));
/// assert_eq!(rows.iter().filter(|r| r.map == "btree").count(), 6);
/// ```
#[derive(Debug, Clone)]
pub struct Row {
    /// `skiplist` or `btree`.
    pub map: &'static str,
    /// `load`, `get`, `scan10`, `scan100`, `scan1000` or `insert`.
    pub case: &'static str,
    /// Keys in the map when the case started.
    pub keys: u64,
    /// Threads running the case.
    pub threads: usize,
    /// Operations (a scan is one) per second, all threads together.
    pub ops_per_s: f64,
}

type IKey = (Key, Key);

/// The operations measured, on either map.
trait Map: Sync {
    const NAME: &'static str;
    fn create() -> Self;
    fn insert(&self, k: IKey, g: &Guard) -> bool;
    fn get(&self, k: &IKey, g: &Guard) -> bool;
    /// Visits `n` entries from `from` on; returns how many it saw.
    fn scan(&self, from: &IKey, n: usize, g: &Guard) -> usize;
}

impl Map for SkipList<IKey, AtomicU64> {
    const NAME: &'static str = "skiplist";
    fn create() -> Self {
        SkipList::new(crossbeam_epoch::default_collector().clone())
    }
    fn insert(&self, k: IKey, g: &Guard) -> bool {
        let mut new = false;
        let e = self.get_or_insert_with(
            k,
            || {
                new = true;
                AtomicU64::new(0)
            },
            g,
        );
        e.release(g);
        new
    }
    fn get(&self, k: &IKey, g: &Guard) -> bool {
        // Relaxed: a value read, as the index reads a chain head.
        self.get(k, g).is_some_and(|e| black_box(e.value().load(Ordering::Relaxed)) == 0)
    }
    fn scan(&self, from: &IKey, n: usize, g: &Guard) -> usize {
        let mut seen = 0;
        for e in self.range((Bound::Included(from), Bound::Unbounded), g) {
            // Relaxed: as in `get`.
            black_box(e.value().load(Ordering::Relaxed));
            seen += 1;
            if seen == n {
                break;
            }
        }
        seen
    }
}

impl Map for BTree<IKey, AtomicU64> {
    const NAME: &'static str = "btree";
    fn create() -> Self {
        BTree::new()
    }
    fn insert(&self, k: IKey, g: &Guard) -> bool {
        self.get_or_insert_with(k, || AtomicU64::new(0), g).1
    }
    fn get(&self, k: &IKey, g: &Guard) -> bool {
        // Relaxed: as for the skip list.
        BTree::get(self, k, g).is_some_and(|v| black_box(v.load(Ordering::Relaxed)) == 0)
    }
    fn scan(&self, from: &IKey, n: usize, g: &Guard) -> usize {
        let mut seen = 0;
        self.range(Bound::Included(from), Bound::Unbounded, g, |_, v| {
            // Relaxed: as in `get`.
            black_box(v.load(Ordering::Relaxed));
            seen += 1;
            seen < n
        });
        seen
    }
}

fn ikey(x: u64) -> IKey {
    (Key::from_u64(x), Key::EMPTY)
}

/// xorshift64: the benchmark's random numbers.
fn next(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// `0..n` in a random order.
fn shuffled(n: u64, seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).collect();
    let mut s = seed | 1;
    for i in (1..v.len()).rev() {
        v.swap(i, (next(&mut s) % (i as u64 + 1)) as usize);
    }
    v
}

/// Runs `op` on `threads` threads (each given its index and a random
/// state) for `secs`; operations per second.
fn timed(threads: usize, secs: f64, op: impl Fn(&mut u64, &Guard) + Sync) -> f64 {
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    let ops: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let op = &op;
                s.spawn(move || {
                    let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    let mut n = 0u64;
                    while Instant::now() < end {
                        let g = &crossbeam_epoch::pin();
                        for _ in 0..64 {
                            op(&mut rng, g);
                        }
                        n += 64;
                    }
                    n
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("bench thread")).sum()
    });
    ops as f64 / start.elapsed().as_secs_f64()
}

/// Inserts `keys` (as entry keys) split over `threads` threads; operations per second.
fn insert_all<M: Map>(m: &M, keys: &[u64], threads: usize) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        for part in keys.chunks(keys.len().div_ceil(threads).max(1)) {
            s.spawn(move || {
                for batch in part.chunks(64) {
                    let g = &crossbeam_epoch::pin();
                    for &x in batch {
                        assert!(m.insert(ikey(x), g), "fresh key {x}");
                    }
                }
            });
        }
    });
    keys.len() as f64 / start.elapsed().as_secs_f64()
}

fn run_map<M: Map>(cfg: &Config, threads: usize, report: &mut dyn FnMut(Row)) {
    let n = cfg.keys;
    let row = |case, keys, ops_per_s| Row { map: M::NAME, case, keys, threads, ops_per_s };
    let m = M::create();
    // Loaded keys are even, inserted ones odd: inserts land between them.
    let load: Vec<u64> = shuffled(n, 1).into_iter().map(|x| 2 * x).collect();
    report(row("load", 0, insert_all(&m, &load, threads)));
    drop(load);
    let hits = timed(threads, cfg.secs, |r, g| {
        assert!(m.get(&ikey(2 * (next(r) % n)), g), "loaded key missing");
    });
    report(row("get", n, hits));
    for (case, len) in [("scan10", 10), ("scan100", 100), ("scan1000", 1000)] {
        let s = timed(threads, cfg.secs, |r, g| {
            black_box(m.scan(&ikey(2 * (next(r) % n)), len, g));
        });
        report(row(case, n, s));
    }
    let fresh: Vec<u64> = shuffled(n, 2).into_iter().take((n / 2) as usize).map(|x| 2 * x + 1).collect();
    report(row("insert", n, insert_all(&m, &fresh, threads)));
}

/// Runs every case for both maps and each thread count of `cfg`, passing
/// each row to `report` as it is measured; returns them all.
///
/// ```
/// use multiverse::research::index_bench::{run, Config};
///
/// let mut seen = 0;
/// let rows = run(&Config { keys: 1_000, threads: vec![1], secs: 0.01 }, |_| seen += 1);
/// assert_eq!(seen, rows.len());
/// assert_eq!(rows[0].case, "load");
/// ```
pub fn run(cfg: &Config, mut report: impl FnMut(&Row)) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut sink = |r: Row| {
        report(&r);
        rows.push(r);
    };
    for &t in &cfg.threads {
        run_map::<SkipList<IKey, AtomicU64>>(cfg, t, &mut sink);
        // Let the epoch free the skip list before the tree is measured.
        for _ in 0..4 {
            crossbeam_epoch::pin().flush();
        }
        run_map::<BTree<IKey, AtomicU64>>(cfg, t, &mut sink);
    }
    rows
}
