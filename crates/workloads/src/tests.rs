//! Tests of the crate's shared pieces: `split_range` and the retry loop's
//! handling of a rollback, of an engine abort and of a lock abort's backoff.

use super::*;
use multiverse::TableId;

#[test]
fn split_range_covers_everything_once() {
    for n in [0u64, 1, 7, 1000, 10_000_001] {
        for parts in 1..6 {
            let mut next = 0;
            for p in 0..parts {
                let r = split_range(n, p, parts);
                assert_eq!(r.start, next);
                next = r.end;
            }
            assert_eq!(next, n);
        }
    }
}

/// Inserts key 1, then rolls back or commits as told.
struct RollbackWorker {
    table: TableId,
    roll_back: bool,
    commits: u32,
}

impl Worker for RollbackWorker {
    fn next_txn(&mut self) {}
    fn execute<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        t.insert(self.table, Key::from_u64(1), b"x")?;
        if self.roll_back {
            return Err(TxnError::Rollback);
        }
        Ok(())
    }
    fn committed(&mut self) {
        self.commits += 1;
    }
}

#[test]
fn a_rollback_undoes_the_transaction_and_counts_a_user_abort() {
    let db = Database::new(multiverse::Options::default()).unwrap();
    let table = db.create_table(multiverse::TableSpec::hash("t", 16)).unwrap().table();
    let opts = TxnOptions::new(multiverse::Isolation::Serializable);
    let mut aborts = AbortCounts::default();
    let mut w = RollbackWorker { table, roll_back: true, commits: 0 };
    assert_eq!(run_txn(&db, &mut w, opts, &mut aborts), Ok(false));
    assert_eq!(aborts.0[AbortReason::User], 1);
    assert_eq!(aborts.total(), 1);
    assert_eq!(w.commits, 0);
    let read = |db: &Database| db.run(multiverse::Isolation::Snapshot, |t| t.get(table, Key::from_u64(1)));
    assert_eq!(read(&db).unwrap(), None, "the insert was rolled back");
    w.roll_back = false;
    assert_eq!(run_txn(&db, &mut w, opts, &mut aborts), Ok(true));
    assert_eq!(w.commits, 1);
    assert_eq!(read(&db).unwrap().as_deref(), Some(&b"x"[..]));
}

/// Under `Retry::Never` an engine abort ends the transaction: one attempt,
/// counted by its reason, `Ok(false)`, nothing committed; retried, the same
/// transaction commits once what it conflicted with is gone.
#[test]
fn an_engine_abort_is_dropped_under_retry_never() {
    let db = Database::new(multiverse::Options::default()).unwrap();
    let table = db.create_table(multiverse::TableSpec::hash("t", 16)).unwrap().table();
    let opts = TxnOptions::new(multiverse::Isolation::Serializable);
    let mut aborts = AbortCounts::default();
    let mut w = RollbackWorker { table, roll_back: false, commits: 0 };
    // Another transaction holds an uncommitted insert of key 1: the
    // worker's insert of the same key is a write-write conflict.
    let mut other = db.begin(multiverse::Isolation::Serializable).unwrap();
    other.insert(table, Key::from_u64(1), b"o").unwrap();
    assert_eq!(run_txn_with(&db, &mut w, opts, Retry::Never, &mut aborts), Ok(false));
    assert_eq!(aborts.total(), 1, "one attempt, not retried: {aborts:?}");
    assert_eq!(aborts.0[AbortReason::User], 0);
    assert_eq!(w.commits, 0);
    drop(other); // rolls back
    assert_eq!(run_txn_with(&db, &mut w, opts, Retry::UntilCommit, &mut aborts), Ok(true));
    assert_eq!(w.commits, 1);
}

/// The retry after a lock abort: with no more workers than CPUs the first
/// one yields (a sleep would idle the core), with more it sleeps at once;
/// the longest sleep doubles from 200 µs and stops at 800 µs.
#[test]
fn lock_abort_backoff_sleeps_from_the_first_abort_only_when_crowded() {
    let calm: Vec<_> = (1..=5).map(|k| lock_backoff_most_us(k, false)).collect();
    assert_eq!(calm, [None, Some(200), Some(400), Some(800), Some(800)]);
    let crowded: Vec<_> = (1..=4).map(|k| lock_backoff_most_us(k, true)).collect();
    assert_eq!(crowded, [Some(200), Some(400), Some(800), Some(800)]);
    assert_eq!(lock_backoff_most_us(u32::MAX, true), Some(800));
}
