//! A bank: concurrent transfers between accounts, and a check that no money
//! was created or lost.
//!
//! `cargo run --release -p multiverse-engine --example bank`
//!
//! Several threads move money between random accounts at once. Two transfers
//! that touch the same account conflict; the engine aborts one of them and
//! `Database::run` runs its closure again, so each thread just writes the
//! transfer as if it were alone. At the end the balances must still add up
//! to what the bank started with.

use multiverse::{Database, Error, Isolation, Options, TableSpec};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

const ACCOUNTS: u64 = 100;
const START_BALANCE: i64 = 1_000;
const THREADS: u64 = 4;
const TRANSFERS_PER_THREAD: u64 = 5_000;

/// Balances are stored as 8 little-endian bytes: a value is any `AsRef<[u8]>`.
fn cents(v: &[u8]) -> i64 {
    i64::from_le_bytes(v.try_into().expect("a balance is 8 bytes"))
}

/// A tiny xorshift generator, so that the example needs no extra crates.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn main() -> Result<(), Error> {
    // An in-memory database with the default protocol (Hekaton MV/O).
    let db = Database::new(Options::new())?;
    // A hash table: lookups by key are all a bank needs. Keys are u64s here
    // (stored big-endian); `&str`, byte slices and `Key`s work the same way.
    let accounts = db.create_table(TableSpec::hash("accounts", ACCOUNTS as usize))?;

    // Open the accounts in one transaction.
    db.run(Isolation::Serializable, |t| {
        (0..ACCOUNTS).try_for_each(|n| t.insert(accounts, n, START_BALANCE.to_le_bytes()))
    })?;
    println!("opened {ACCOUNTS} accounts with {START_BALANCE} each");

    // How many times the transfer closures ran: every run past the first is
    // a retry after the engine aborted a conflicting attempt.
    let attempts = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for thread in 0..THREADS {
            let (db, attempts) = (&db, &attempts);
            s.spawn(move || {
                let mut rng = 0x9E37_79B9_7F4A_7C15 ^ (thread + 1);
                for _ in 0..TRANSFERS_PER_THREAD {
                    let from = next(&mut rng) % ACCOUNTS;
                    let to = (from + 1 + next(&mut rng) % (ACCOUNTS - 1)) % ACCOUNTS;
                    let amount = (next(&mut rng) % 50) as i64;
                    // `run` commits when the closure returns Ok and retries
                    // the whole closure when the engine aborts it.
                    db.run(Isolation::Serializable, |t| {
                        attempts.fetch_add(1, Ordering::Relaxed);
                        let balance = t.get_for_update_with(accounts, from, cents)?.ok_or(Error::KeyNotFound)?;
                        if balance < amount {
                            return Ok(()); // insufficient funds: nothing to do
                        }
                        t.update(accounts, from, (balance - amount).to_le_bytes())?;
                        let other = t.get_for_update_with(accounts, to, cents)?.ok_or(Error::KeyNotFound)?;
                        t.update(accounts, to, (other + amount).to_le_bytes())
                    })
                    .expect("a transfer commits within its retries");
                }
            });
        }
    });
    let transfers = THREADS * TRANSFERS_PER_THREAD;
    let attempts = attempts.into_inner();
    println!(
        "{THREADS} threads made {transfers} transfers in {:.0?}: {attempts} attempts, {} retried after an abort",
        start.elapsed(),
        attempts - transfers
    );
    let stats = db.stats();
    for (reason, n) in stats.aborts.iter().filter(|&(_, n)| n > 0) {
        println!("  aborts for {reason}: {n}");
    }

    // The audit: one snapshot of every balance. `scan` walks any index,
    // hash ones included, with a callback and no copies.
    let (total, rows) = db.run(Isolation::Snapshot, |t| {
        let (mut total, mut rows) = (0i64, 0u64);
        t.scan(db.primary(accounts), .., None, |_key, value| {
            total += cents(value);
            rows += 1;
            true // go on
        })?;
        Ok((total, rows))
    })?;
    let expected = ACCOUNTS as i64 * START_BALANCE;
    println!("audit: {rows} accounts hold {total} in total (expected {expected})");
    assert_eq!(total, expected, "money was created or lost");
    println!("ok: the total is preserved");
    Ok(())
}
