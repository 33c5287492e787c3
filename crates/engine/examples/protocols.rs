//! One workload under several concurrency-control protocols.
//!
//! `cargo run --release -p multiverse-engine --example protocols`
//!
//! The protocol is an option of the database (`Options::new().protocol(..)`);
//! the program's transactions do not change. Two threads increment a few
//! hot counters, two at a time, so that their transactions conflict often;
//! each protocol resolves the conflicts its own way, and `Database::stats`
//! says how many transactions committed and why the others aborted
//! (`Database::run` retried them). Every run must end with every increment
//! counted.
//!
//! `2pl-ordered` and `bohm` are left out: they run transactions that declare
//! their reads and writes in advance (`AccessSet`, `Database::bohm_run`).

use multiverse::{Database, Error, Isolation, Options, Protocol, TableSpec};
use std::time::Instant;

const COUNTERS: u64 = 8;
const THREADS: u64 = 2;
const TXNS_PER_THREAD: u64 = 2_000;

/// A counter's value: 8 little-endian bytes.
fn count(v: &[u8]) -> u64 {
    u64::from_le_bytes(v.try_into().expect("a counter is 8 bytes"))
}

/// Runs the workload on a fresh in-memory database under `protocol`.
fn run(protocol: Protocol) -> Result<(), Error> {
    let db = Database::new(Options::new().protocol(protocol))?;
    let counters = db.create_table(TableSpec::ordered("counters"))?;
    db.run(Isolation::Serializable, |t| (0..COUNTERS).try_for_each(|k| t.insert(counters, k, 0u64.to_le_bytes())))?;
    // Under POMVCC a commit need not be visible to the next transaction
    // (commits share partial-order timestamps); this makes every finished
    // commit visible. A no-op under the other protocols.
    db.sync_commits()?;

    let start = Instant::now();
    std::thread::scope(|s| {
        for thread in 0..THREADS {
            let db = &db;
            s.spawn(move || {
                for i in 0..TXNS_PER_THREAD {
                    // Two different counters, in a pattern that differs
                    // between the threads.
                    let a = (i * 3 + thread * 5) % COUNTERS;
                    let b = (a + 1 + i % (COUNTERS - 1)) % COUNTERS;
                    // Read both counters, then write both: under
                    // serializable, a concurrent increment of either one
                    // makes one of the two transactions abort (or wait).
                    db.run(Isolation::Serializable, |t| {
                        let va = t.get(counters, a)?.map_or(0, |v| count(&v));
                        let vb = t.get(counters, b)?.map_or(0, |v| count(&v));
                        t.update(counters, a, (va + 1).to_le_bytes())?;
                        t.update(counters, b, (vb + 1).to_le_bytes())
                    })
                    .expect("an increment commits within its retries");
                }
            });
        }
    });
    let elapsed = start.elapsed();
    db.sync_commits()?;

    // Each transaction added 2 in all.
    let total = db.run(Isolation::Serializable, |t| {
        let mut sum = 0;
        for row in t.range(counters, ..)? {
            sum += count(&row?.1);
        }
        Ok(sum)
    })?;
    assert_eq!(total, 2 * THREADS * TXNS_PER_THREAD, "{protocol}: an increment was lost");

    let stats = db.stats();
    // Besides the increments, the commits count the load and the final read
    // (and under POMVCC the two `sync_commits`, each an empty transaction).
    print!(
        "{:<8} {:>6} commits  {:>6} aborts  {:>7.1?}",
        protocol.name(),
        stats.committed,
        stats.aborts.total(),
        elapsed
    );
    let reasons: Vec<String> =
        stats.aborts.iter().filter(|&(_, n)| n > 0).map(|(reason, n)| format!("{reason} {n}")).collect();
    if reasons.is_empty() {
        println!();
    } else {
        println!("  ({})", reasons.join(", "));
    }
    Ok(())
}

fn main() -> Result<(), Error> {
    println!(
        "{THREADS} threads x {TXNS_PER_THREAD} transactions, each incrementing 2 of {COUNTERS} counters (serializable)"
    );
    for protocol in [
        Protocol::MvOcc,    // Hekaton MV/O: optimistic, validates reads at commit
        Protocol::MvLock,   // Hekaton MV/L: pessimistic, read locks and wait-for dependencies
        Protocol::OneVLock, // single-version locking (Hekaton's 1V baseline)
        Protocol::Silo,     // Silo OCC on a single-version store
        Protocol::Ssn,      // the serial safety net over snapshot isolation
        Protocol::Ssi,      // serializable snapshot isolation
        Protocol::Pomvcc,   // partial-order timestamps
    ] {
        run(protocol)?;
    }
    Ok(())
}
