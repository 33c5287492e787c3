//! 1V's lock waits (Hekaton section 5): a transaction blocked on a
//! key lock publishes what it waits on and, after `deadlock_interval`,
//! looks for a cycle through itself in the waits-for graph; a cycle's
//! victim is told by whichever member finds the cycle first.

use super::*;
use crate::breakdown::{self, Part};
use crate::protocol::deadlock::WaitsFor;

/// What `lk_lock` did.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Got {
    /// Taken now (a short lock must be released by the caller).
    Taken,
    /// Held already, in this mode or a stronger one (or upgraded).
    Held,
    /// The caller's give-up condition came true while waiting.
    GaveUp,
}

/// How a wait ended.
#[derive(PartialEq, Eq)]
pub(crate) enum Waited {
    Got,
    GaveUp,
    TimedOut,
    /// The deadlock check chose us as the victim.
    Victim,
}

pub(crate) use crate::txn::lock_wait::{LockWait, WaitOn};

/// The deadlock checks of one lock wait.
pub(crate) trait Deadlocks {
    /// Whether a deadlock check, ours or another waiter's, has chosen us as
    /// the victim of this wait. Asked at every round of the wait: cheap.
    fn chosen(&self) -> bool;
    /// Our own check, `waited` into the wait (asked now and then once the
    /// spinning is over): runs a detector pass when one is due, and says
    /// whether it chose us.
    fn check(&mut self, waited: Duration) -> bool;
    /// Whether our own check found a cycle and chose another member: the
    /// victim is about to release its locks, so we look for ours without
    /// sleeping (yielding only) for the rest of this wait.
    fn hurry(&self) -> bool;
}

/// No deadlock detection: for waits that cannot be on a cycle (ordered
/// 2PL's declared locks).
impl Deadlocks for () {
    fn chosen(&self) -> bool {
        false
    }
    fn check(&mut self, _: Duration) -> bool {
        false
    }
    fn hurry(&self) -> bool {
        false
    }
}

/// A 1V transaction's deadlock checks: a detector pass every
/// [`crate::Options::deadlock_interval`] of waiting (`deadlock_victim`),
/// and in between a look at the mark another member of a cycle leaves on
/// us when its pass chooses us. A pass that chooses another member makes
/// the rest of our wait yield instead of sleep.
pub(crate) struct Detector<'db> {
    pub(super) db: &'db crate::shared::Shared,
    pub(super) g: &'db super::LockGlobal,
    pub(super) slot: u32,
    pub(super) id: u64,
    pub(super) interval: Duration,
    /// When our next pass is due, measured like `waited`.
    pub(super) next: Duration,
    /// A pass of ours chose another member of a cycle with us.
    pub(super) broke: bool,
}

impl Deadlocks for Detector<'_> {
    #[inline]
    fn chosen(&self) -> bool {
        // Relaxed: the mark carries no data but itself (the victim only
        // aborts), and it is set and cleared under the slot's `lock_wait`
        // mutex, which orders the two; a look that misses a fresh mark sees
        // it at a later round of the wait.
        self.db.txns.slot(self.slot).lock_victim.load(Ordering::Relaxed) == self.id
    }

    fn check(&mut self, waited: Duration) -> bool {
        if waited < self.next {
            return false;
        }
        self.next = waited + self.interval;
        match deadlock_victim(self.db, self.g, self.slot, self.id) {
            Some(v) if v == self.id => true,
            Some(_) => {
                self.broke = true;
                false
            }
            None => false,
        }
    }

    fn hurry(&self) -> bool {
        self.broke
    }
}

/// Waits for `w` in `mode` (`upgrade`: from our sole S lock) until it is
/// taken, `give_up()` holds, `limit` passes, or `victim` says a deadlock
/// chose us (its mark is looked at every round; its own detector pass runs
/// now and then once the spinning is over).
/// Spins first, then yields, then sleeps (a wait behind a long holder
/// should not burn a core), unless a check of ours has broken a cycle we
/// are on (`Deadlocks::hurry`): then it yields to the end. A wait to upgrade to X marks the word once
/// (`announce_writer`) so that new readers wait behind it; taking X takes
/// the mark away, and a wait that ends without the lock withdraws it.
pub(crate) fn wait_for_lock(
    w: &AtomicU64,
    mode: LockMode,
    upgrade: bool,
    limit: Option<Duration>,
    mut give_up: impl FnMut() -> bool,
    mut victim: impl Deadlocks,
) -> Waited {
    // Called once the uncontended attempt failed: all of it is waiting.
    let _timed = breakdown::span(Part::Wait);
    let backoff = Backoff::new();
    let mut start = None;
    // Only an upgrade marks the word: the race the mark ends is a reader
    // retaking its lock before an upgrader gets it (module docs of
    // `key_locks`). A plain writer does not, so that readers keep sharing
    // with each other while it waits (a writer-first queue turns some of
    // those waits into deadlocks: docs/ISOLATION.md's read-only anomaly).
    let writer = mode == LockMode::Exclusive && upgrade;
    // Our mark is on the word (a full count leaves us unmarked until a
    // place frees up).
    let mut marked = false;
    let out = |why: Waited, marked: bool| {
        if marked {
            withdraw_writer(w);
        }
        why
    };
    loop {
        if writer && !marked {
            // Upgrade against upgrade: another holder of our S lock waits
            // to upgrade too, so neither can have X before the other lets
            // its S go. The later upgrader gives way at once, without
            // waiting a deadlock interval for the detector (with more
            // threads than cores, that wait is spent mostly descheduled,
            // holding the hot key). Two that mark at the same moment both
            // miss it here and are left to the detector, as before.
            if upgrader_waiting(w) {
                return out(Waited::Victim, marked);
            }
            marked = announce_writer(w);
        }
        if looks_free(w, mode, upgrade) {
            let got = match mode {
                LockMode::Shared => try_shared(w),
                LockMode::Exclusive => try_exclusive(w, upgrade),
            };
            if got {
                return Waited::Got;
            }
        }
        if give_up() {
            return out(Waited::GaveUp, marked);
        }
        if victim.chosen() {
            return out(Waited::Victim, marked);
        }
        if !backoff.is_completed() {
            backoff.snooze();
            continue;
        }
        let waited = start.get_or_insert_with(Instant::now).elapsed();
        if limit.is_some_and(|l| waited >= l) {
            return out(Waited::TimedOut, marked);
        }
        if victim.check(waited) {
            return out(Waited::Victim, marked);
        }
        if waited < Duration::from_millis(1) || victim.hurry() {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// Deadlock detection for the locking protocols (a refinement of section
/// 5's timeouts: a cycle is broken at the first check instead of at the
/// timeout, and its victim aborts with `deadlock`, not `lock-timeout`).
///
/// Only waiting transactions can be part of a deadlock, and each publishes
/// what it waits for in its slot while it waits, under the slot's mutex; it
/// does not change its LockSet until it has withdrawn the publication, so
/// under that mutex the detector may read the waiter's LockSet in its
/// `TxnLocal`. The edges: a waiter for a lock word waits for every waiting
/// transaction that holds the word in a conflicting mode; a waiter for
/// key ranges, for every waiting transaction that holds one of them. A
/// holder that is running is not part of any cycle (it will release), so
/// only waiters are followed. A cycle found is a real deadlock: none of its
/// members can stop waiting unless one times out or is chosen.
///
/// The graph is searched with the MV/L detector's algorithm
/// (`protocol::deadlock`): the caller is on a deadlock if its strongly
/// connected component of waits has another member. The victim is the
/// member whose slot has lost the fewest deadlocks in a row
/// (`TxnSlot::deadlock_streak`), the youngest (largest id) among those: a
/// retried victim is spared by the next cycle it closes, instead of being
/// chosen again and again (ids grow with each attempt, so the youngest rule
/// alone kept choosing the retry: with 8 threads on 2 cores, most retries
/// of a victim were victims again). The streak is published with the wait
/// and does not change while it is, so every member that checks computes
/// the same component and the same victim. Whichever member
/// finds the cycle first breaks it: if the victim is another transaction,
/// the caller marks it (`TxnSlot::lock_victim`, its id, set only while the
/// very wait that was seen is still published), and the victim's wait
/// loop, which looks at the mark at every round, aborts at once. Waiting
/// instead for the victim's own next check left every member asleep on
/// its hot locks until the victim was scheduled and its interval had
/// passed, which with more threads than cores took most of the run.
/// Returns the victim of the caller's (`slot`, `id`) cycle, if it is on one.
pub(super) fn deadlock_victim(db: &crate::shared::Shared, g: &super::LockGlobal, slot: u32, id: u64) -> Option<u64> {
    let _one = db.txns.detector.lock();
    let mut graph = WaitsFor::default();
    // The waits seen: (id, slot, seq, streak).
    let mut seen = Vec::new();
    for s in 0..db.txns.high_water() as u32 {
        let w = db.txns.slot(s).lock_wait.lock();
        let Some(w) = w.as_ref() else { continue };
        graph.node(w.id);
        seen.push((w.id, s, w.seq, w.streak));
        match &w.on {
            WaitOn::Lock { word, mode } => {
                for o in 0..db.txns.high_water() as u32 {
                    if o == s {
                        continue;
                    }
                    let other = db.txns.slot(o).lock_wait.lock();
                    let Some(other) = other.as_ref() else { continue };
                    // SAFETY: `other` is published, so its owner is blocked
                    // and leaves its LockSet alone until it takes this
                    // mutex, which we hold.
                    let held = unsafe { &*g.sets.raw(o) };
                    if let Some(i) = held.find(*word as *const AtomicU64) {
                        if held.held[i].mode == LockMode::Exclusive || *mode == LockMode::Exclusive {
                            graph.edge(w.id, other.id);
                        }
                    }
                    // A reader waits behind an upgrader waiting for the same
                    // word (its mark: `key_locks::announce_writer`): one
                    // that waits for X and holds the word already.
                    if *mode == LockMode::Shared
                        && matches!(other.on, WaitOn::Lock { word: ow, mode: LockMode::Exclusive } if ow == *word)
                        && held.find(*word as *const AtomicU64).is_some()
                    {
                        graph.edge(w.id, other.id);
                    }
                }
            }
            WaitOn::Ranges(keys) => {
                let mut ids = Vec::new();
                for (t, i, k) in keys {
                    db.table_by_id(*t).indexes[*i].ranges.lockers(|| k.clone(), &mut ids);
                }
                for h in ids {
                    graph.edge(w.id, h);
                }
            }
        }
    }
    // The caller is blocked (it asks while waiting): its own node is there.
    debug_assert!(db.txns.slot(slot).lock_wait.lock().as_ref().is_some_and(|w| w.id == id));
    // The victim: the member whose slot has lost the fewest deadlocks in a
    // row, the youngest (largest id) among those.
    let streak = |m: u64| seen.iter().find(|n| n.0 == m).map_or(0, |n| n.3);
    let victim = graph.cycle_with(id).and_then(|c| c.into_iter().max_by_key(|&m| (std::cmp::Reverse(streak(m)), m)))?;
    if victim == id {
        return Some(id);
    }
    let &(_, s, seq, _) = seen.iter().find(|n| n.0 == victim).expect("a cycle's members are nodes");
    let slot = db.txns.slot(s);
    let w = slot.lock_wait.lock();
    // Still the wait we saw: the mark cannot reach a later one (the victim
    // clears it when a wait ends, under this mutex).
    if w.as_ref().is_some_and(|w| w.id == victim && w.seq == seq) {
        // Relaxed: under the `lock_wait` mutex, like the clearing store, so
        // the two are ordered; the victim's look needs no data with it.
        slot.lock_victim.store(victim, Ordering::Relaxed);
    }
    Some(victim)
}
