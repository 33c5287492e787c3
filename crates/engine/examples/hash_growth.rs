//! Measures hash index growth: a table declared for N/10 keys
//! takes N rows while a reader looks up committed rows, against a table
//! declared for all N; then both answer random lookups.
//!
//! `cargo run --release -p multiverse-engine --example hash_growth -- [N] [PROTOCOL] [load]`
//! (defaults: 1000000 mv-occ; `load`: only the grown table's load). Prints
//! one line per phase and table.

use multiverse::{Database, Isolation, Key, Options, Protocol, TableId, TableSpec};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const BATCH: u64 = 100;

fn value(k: u64) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&k.to_le_bytes());
    v
}

fn next(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// Loads `n` rows with one writer while one reader looks up committed rows;
/// returns (rows/s, reader lookups/s).
fn load(db: &Database, t: TableId, n: u64, iso: Isolation) -> (f64, f64) {
    let committed = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let (secs, reads) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut rng = 0x9E37_79B9_7F4A_7C15u64;
            let mut reads = 0u64;
            // Relaxed: a stop flag.
            while !stop.load(Ordering::Relaxed) {
                // Acquire: rows below the mark are committed.
                let m = committed.load(Ordering::Acquire);
                if m == 0 {
                    continue;
                }
                db.run(iso, |x| {
                    for _ in 0..10 {
                        let k = next(&mut rng) % m;
                        assert!(x.get(t, Key::from(k))?.is_some(), "key {k} lost");
                    }
                    Ok(())
                })
                .unwrap();
                reads += 10;
            }
            reads
        });
        for b in 0..n / BATCH {
            db.run(iso, |x| (b * BATCH..(b + 1) * BATCH).try_for_each(|k| x.insert(t, Key::from(k), value(k))))
                .unwrap();
            // Release: the rows are committed.
            committed.store((b + 1) * BATCH, Ordering::Release);
        }
        let secs = start.elapsed().as_secs_f64();
        // Relaxed: a stop flag.
        stop.store(true, Ordering::Relaxed);
        (secs, reader.join().unwrap())
    });
    (n as f64 / secs, reads as f64 / secs)
}

/// Random lookups of existing rows by `threads` threads for `dur`; lookups/s.
fn gets(db: &Database, t: TableId, n: u64, iso: Isolation, threads: u64, dur: Duration) -> f64 {
    let total = AtomicU64::new(0);
    std::thread::scope(|s| {
        for i in 0..threads {
            let total = &total;
            s.spawn(move || {
                let mut rng = 0x2545_F491_4F6C_DD1Du64 ^ (i + 1);
                let end = Instant::now() + dur;
                let mut done = 0;
                while Instant::now() < end {
                    db.run(iso, |x| {
                        for _ in 0..10 {
                            let k = next(&mut rng) % n;
                            assert!(x.get(t, Key::from(k))?.is_some());
                        }
                        Ok(())
                    })
                    .unwrap();
                    done += 10;
                }
                // Relaxed: summed after the scope joins.
                total.fetch_add(done, Ordering::Relaxed);
            });
        }
    });
    // Relaxed: the threads are joined.
    total.load(Ordering::Relaxed) as f64 / dur.as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args.get(1).map_or(1_000_000, |a| a.parse().expect("N"));
    let protocol = args.get(2).map_or(Protocol::MvOcc, |p| p.parse().expect("a protocol name"));
    let iso = if protocol == Protocol::MvOcc { Isolation::Snapshot } else { protocol.strongest() };
    // A third argument `load`: the grown table's load only (for profiles).
    let load_only = args.get(3).is_some_and(|a| a == "load");
    for (name, cap) in [("grown", n / 10), ("full", n)] {
        let db = Database::new(Options { protocol, ..Options::default() }).unwrap();
        let t = db.create_table(TableSpec::hash(name, cap as usize)).unwrap().table();
        let (ins, rd) = load(&db, t, n, iso);
        println!(
            "{protocol} {name:5} (declared {cap:>8}): load {ins:>10.0} rows/s, reader during load {rd:>10.0} gets/s"
        );
        if load_only {
            return;
        }
        let g1 = gets(&db, t, n, iso, 1, Duration::from_secs(3));
        let g2 = gets(&db, t, n, iso, 2, Duration::from_secs(3));
        println!("{protocol} {name:5} after load: 1 thread {g1:>10.0} gets/s, 2 threads {g2:>10.0} gets/s");
        // A growth left under way when the inserts stopped is carried on
        // by `collect_garbage` (20 ms per call and index).
        let start = Instant::now();
        for _ in 0..50 {
            db.collect_garbage();
        }
        let took = start.elapsed().as_secs_f64() * 1e3;
        let g1 = gets(&db, t, n, iso, 1, Duration::from_secs(3));
        let g2 = gets(&db, t, n, iso, 2, Duration::from_secs(3));
        println!(
            "{protocol} {name:5} after collect_garbage x50 ({took:.0} ms): 1 thread {g1:>10.0} gets/s, 2 threads {g2:>10.0} gets/s"
        );
    }
}
