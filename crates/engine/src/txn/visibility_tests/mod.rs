//! Row-by-row tests of the visibility rules (Hekaton VLDB 2011 section 2.5,
//! Tables 1 and 2; thesis Tables 4.1–4.3), of updatability (section 2.6) and
//! of commit dependencies (section 2.7).
//!
//! Transaction states are driven explicitly through the [`TxnTable`] API and
//! versions are hand-built with [`Version::alloc`], so every row of the tables
//! is reached deterministically. The [`end_to_end`] group drives whole transactions of a
//! [`Database`] against a hand-made "Preparing" transaction, which is the only
//! way to hold a writer in the Preparing state long enough to observe
//! speculative reads, speculative ignores and cascading aborts end to end.
//!
//! Conventions: the reader T reads at `RT = 20`; a version's committed begin
//! timestamp is 10 unless a test says otherwise.
//!
//! This file holds the shared fixtures; the cases live in [`tables`] (the
//! visibility tables), [`updatable`] (section 2.6), [`deps`] (the transaction
//! table and commit dependencies) and [`end_to_end`].

mod deps;
mod end_to_end;
mod tables;
mod updatable;

use super::table::{TxnState, TxnTable, SLOT_BITS};
use super::visibility::{visible_at, Me};
use crate::key::Key;
use crate::storage::version::Version;
use crate::storage::word::{txn_word, INFINITY};
use crate::sync::atomic::Ordering;
use crate::{Database, Error, Isolation, Options, TableId, TableSpec};
use std::ptr::{self, NonNull};
use std::time::Duration;

/// The clock read by read-committed checks (these tests pass explicit read times).
static TEST_CLOCK: crate::sync::atomic::AtomicU64 = crate::sync::atomic::AtomicU64::new(1 << 40);

/// The reader's logical read time in the table-driven tests.
const RT: u64 = 20;

/// A hand-built version, freed when dropped.
struct V(NonNull<Version>);

impl V {
    /// A version with the given raw Begin and End words.
    fn new(begin: u64, end: u64) -> V {
        let v = Version::alloc(&Key::from(1), 1, b"row", begin);
        // SAFETY: freshly allocated and not shared yet.
        unsafe { v.as_ref() }.end.store(end, Ordering::SeqCst);
        V(v)
    }

    fn get(&self) -> &Version {
        // SAFETY: alive until `drop`.
        unsafe { self.0.as_ref() }
    }
}

impl Drop for V {
    fn drop(&mut self) {
        // SAFETY: never published in an index; nobody else holds it.
        unsafe { Version::free(self.0.as_ptr()) }
    }
}

/// A transaction-table occupant driven by hand.
#[derive(Clone, Copy, Debug)]
struct Txn {
    slot: u32,
    id: u64,
}

impl Txn {
    fn word(self) -> u64 {
        txn_word(self.id)
    }
}

/// A transaction table plus helpers to drive its occupants.
struct Fx {
    tt: TxnTable,
}

impl Fx {
    fn new() -> Fx {
        Fx { tt: TxnTable::new(16) }
    }
    fn open(&self) -> Txn {
        let (slot, id) = self.tt.open(|_| {}).expect("a free slot");
        Txn { slot, id }
    }
    fn me(&self, t: Txn) -> Me<'_> {
        Me {
            table: &self.tt,
            slot: t.slot,
            id: t.id,
            clock: &TEST_CLOCK,
            now: std::cell::Cell::new(0),
            peer: 0,
            clash: std::cell::Cell::new(false),
        }
    }
    fn preparing(&self, t: Txn, ts: u64) {
        self.tt.set_state(t.slot, TxnState::Preparing, ts);
    }
    fn committed(&self, t: Txn, ts: u64) {
        self.tt.set_state(t.slot, TxnState::Committed, ts);
    }
    fn aborted(&self, t: Txn) {
        self.tt.set_state(t.slot, TxnState::Aborted, 0);
    }
    /// CommitDepCounter of `t`.
    fn deps(&self, t: Txn) -> u32 {
        self.tt.slot(t.slot).dep_counter.load(Ordering::SeqCst)
    }
    /// AbortNow of `t`.
    fn abort_now(&self, t: Txn) -> bool {
        self.tt.slot(t.slot).abort_now.load(Ordering::SeqCst)
    }
    fn vis(&self, v: &V, rt: u64, t: Txn) -> Option<u64> {
        visible_at(v.get(), rt, &self.me(t))
    }
}

/// Runs `check` while a helper thread, after a short delay, stores `value`
/// into `word`: exercises the "Terminated or not found: reread the word"
/// rows, where the reader must spin until the word is finalised.
fn with_late_store<R>(word: &crate::sync::atomic::AtomicU64, value: u64, check: impl FnOnce() -> R) -> R {
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            word.store(value, Ordering::SeqCst);
        });
        check()
    })
}

// ---------------------------------------------------------------------------
// Fixtures of the end-to-end cases
// ---------------------------------------------------------------------------

/// A writer driven by hand through the database's transaction table, so that
/// it can be held in the Preparing state. Dropping it unresolved aborts it, so
/// that a failing test never leaves a dependent waiting forever.
struct FakeWriter<'a> {
    db: &'a Database,
    slot: u32,
    old: *mut Version,
    new: *mut Version,
    end_ts: u64,
    resolved: bool,
}

// SAFETY: the raw pointers name versions owned by the database; the test
// threads only store to their atomic words.
unsafe impl Send for FakeWriter<'_> {}

impl<'a> FakeWriter<'a> {
    /// Starts a writer that replaces (or, with `value = None`, deletes) the
    /// latest committed version of `key`, then precommits (Preparing).
    fn prepare(db: &'a Database, table: TableId, key: u64, value: Option<&[u8]>) -> FakeWriter<'a> {
        let (slot, id) = db.txns.open(|_| {}).unwrap();
        let key = Key::from(key);
        let t = db.table_ref(table).unwrap();
        let _g = crossbeam_epoch::pin();
        let mut old = ptr::null_mut();
        t.indexes[0].for_each_eq(&key, |v| {
            let latest = v.end.load(Ordering::SeqCst) == INFINITY && v.begin.load(Ordering::SeqCst) != INFINITY;
            if v.key_eq(&key) && latest {
                old = v as *const Version as *mut Version;
                return false;
            }
            true
        });
        assert!(!old.is_null(), "the key has a committed latest version");
        // SAFETY: linked and alive (nothing reclaims in these tests).
        let o = unsafe { &*old };
        o.end.compare_exchange(INFINITY, txn_word(id), Ordering::SeqCst, Ordering::SeqCst).unwrap();
        let new = match value {
            Some(val) => {
                let nv = Version::alloc(&key, t.link_words(), val, txn_word(id)).as_ptr();
                // SAFETY: fresh, initialised, unlinked.
                unsafe { t.link_all(nv) };
                nv
            }
            None => ptr::null_mut(),
        };
        db.txns.set_pending(slot);
        let end_ts = db.clock.fetch_add(2, Ordering::SeqCst);
        db.txns.set_state(slot, TxnState::Preparing, end_ts);
        FakeWriter { db, slot, old, new, end_ts, resolved: false }
    }

    /// Commits (postprocessing of section 3.3) or aborts, then reports the
    /// outcome to the dependents and terminates.
    fn finish(&mut self, commit: bool) {
        self.resolved = true;
        let db = self.db;
        let (state, ts, begin, end) = if commit {
            (TxnState::Committed, self.end_ts, self.end_ts, self.end_ts)
        } else {
            (TxnState::Aborted, 0, INFINITY, INFINITY)
        };
        db.txns.set_state(self.slot, state, ts);
        if !self.new.is_null() {
            // SAFETY: our version, alive while linked.
            unsafe { &*self.new }.begin.store(begin, Ordering::SeqCst);
        }
        // SAFETY: as above.
        unsafe { &*self.old }.end.store(end, Ordering::SeqCst);
        db.txns.report_outcome(self.slot, commit);
        db.txns.close(self.slot);
    }

    fn commit(mut self) {
        self.finish(true);
    }

    fn abort(mut self) {
        self.finish(false);
    }
}

impl Drop for FakeWriter<'_> {
    fn drop(&mut self) {
        if !self.resolved {
            self.finish(false);
        }
    }
}

/// A database with table "t" holding keys 1..=3 with values "v1".."v3".
fn db3() -> (Database, TableId) {
    let db = Database::new(Options::default()).unwrap();
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap().table();
    db.run(Isolation::Serializable, |x| {
        for k in 1..=3u64 {
            x.insert(t, Key::from(k), format!("v{k}").as_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    (db, t)
}

/// CommitDepCounter of a public transaction.
fn deps_of(db: &Database, txn_id: u64) -> u32 {
    db.txns.slot((txn_id & ((1 << SLOT_BITS) - 1)) as u32).dep_counter.load(Ordering::SeqCst)
}

fn get(x: &mut crate::Transaction<'_>, t: TableId, k: u64) -> Result<Option<Vec<u8>>, Error> {
    x.get(t, Key::from(k))
}
