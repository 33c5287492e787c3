//! POMVCC's timestamp counters (Table VIII, Figures 15, 17-19): CTs, BTs and
//! the ring of per-timestamp pre-commit (Ts.PC) and commit (Ts.CC) counters.
//!
//! A transaction entering pre-commit takes CTs as its commit timestamp and
//! counts itself in that timestamp's Ts.PC ([`TsCounters::allocate_cts`]);
//! it finishes by counting in Ts.CC (commit) or taking its pre-commit back
//! (abort). BTs advances to the next timestamp only once that timestamp is
//! closed (below CTs) and complete (Ts.PC = Ts.CC, D6). Every access is
//! SeqCst: the argument is over one total order — a transaction counts in
//! Ts.PC and then rereads CTs; an advance of BTs reads CTs and then Ts.CC
//! and Ts.PC. If CTs still equals the timestamp at the reread, then the
//! BTs advance past it (which needs CTs beyond it) read Ts.PC after the
//! count; if CTs moved, the count is taken back and retried.
//!
//! The counters take their atomics from [`crate::sync`], so that the model
//! tests run exactly this code: `tests/shuttle_models.rs`, under sequential
//! consistency (loom treats SeqCst accesses as AcqRel, and reports false
//! alarms for an argument that needs their single order).

use crate::sync::atomic::{AtomicU64, Ordering};
use crossbeam_utils::CachePadded;

/// Ts.PC and Ts.CC of one ring slot.
#[derive(Default)]
pub(crate) struct Counters {
    pc: AtomicU64,
    cc: AtomicU64,
}

/// CTs, BTs and the counter ring; at most `window` timestamps are open
/// (CTs − BTs < window), so a ring of `window` slots never mixes two.
pub(crate) struct TsCounters {
    cts: CachePadded<AtomicU64>,
    bts: CachePadded<AtomicU64>,
    ring: Box<[CachePadded<Counters>]>,
    window: u64,
}

impl TsCounters {
    /// BTs = `start`, CTs = `start + 1`.
    pub(crate) fn new(start: u64, window: u64) -> TsCounters {
        debug_assert!(window >= 2);
        TsCounters {
            cts: CachePadded::new(AtomicU64::new(start + 1)),
            bts: CachePadded::new(AtomicU64::new(start)),
            ring: (0..window).map(|_| CachePadded::new(Counters::default())).collect(),
            window,
        }
    }

    fn slot(&self, ts: u64) -> &Counters {
        &self.ring[(ts % self.window) as usize]
    }

    /// Read_CTs.
    pub(crate) fn cts(&self) -> u64 {
        // SeqCst: every access of the counters is in the one order the
        // module docs argue with.
        self.cts.load(Ordering::SeqCst)
    }

    /// Read_BTs.
    pub(crate) fn bts(&self) -> u64 {
        // SeqCst: as above.
        self.bts.load(Ordering::SeqCst)
    }

    /// Update_CTs (Figure 18): advances CTs by one unless that would open
    /// `window` timestamps; returns CTs and whether this call advanced it.
    pub(crate) fn update_cts(&self) -> (u64, bool) {
        let mut c = self.cts();
        loop {
            // `c` may be stale and BTs past it already: then the CAS fails
            // and `c` is read again (no underflow on the way).
            if (c + 1).saturating_sub(self.bts()) >= self.window {
                return (c, false);
            }
            // SeqCst: as above.
            match self.cts.compare_exchange(c, c + 1, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return (c + 1, true),
                Err(now) => c = now,
            }
        }
    }

    /// Allocate_CTs (Figure 18): the commit timestamp of a transaction that
    /// enters pre-commit, counted in its Ts.PC. CTs is not incremented.
    /// `pause` runs between reading CTs and counting (tests widen the race
    /// there).
    pub(crate) fn allocate_cts(&self, pause: impl Fn()) -> u64 {
        loop {
            let c = self.cts();
            pause();
            let s = self.slot(c);
            // SeqCst: ordered before the second reading of CTs (module docs).
            s.pc.fetch_add(1, Ordering::SeqCst);
            if self.cts() == c {
                debug_assert!(c > self.bts(), "BTs passed timestamp {c} while it was CTs");
                return c;
            }
            // CTs moved on meanwhile: BTs may pass `c` without seeing us.
            // SeqCst: as above.
            s.pc.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Increment_TsCC (`committed`) or Decrement_TsPC (aborted) of the
    /// transaction that took `cts`; then BTs advances as far as D6 allows.
    pub(crate) fn finish(&self, cts: u64, committed: bool) {
        debug_assert!(cts > self.bts(), "timestamp {cts} finished after BTs passed it");
        let s = self.slot(cts);
        // SeqCst: as above.
        if committed {
            s.cc.fetch_add(1, Ordering::SeqCst);
        } else {
            s.pc.fetch_sub(1, Ordering::SeqCst);
        }
        self.update_bts();
    }

    /// Update_BTs (Figure 19), repeated: advances BTs while D6 holds for the
    /// next timestamp; returns BTs.
    pub(crate) fn update_bts(&self) -> u64 {
        let mut b = self.bts();
        loop {
            let next = b + 1;
            if next >= self.cts() {
                return b;
            }
            let s = self.slot(next);
            // SeqCst: the commit counter first, then the pre-commit counter
            // (module docs); both after the reading of CTs.
            let cc = s.cc.load(Ordering::SeqCst);
            if s.pc.load(Ordering::SeqCst) != cc {
                return b;
            }
            // SeqCst: as above.
            match self.bts.compare_exchange(b, next, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => b = next,
                Err(now) => b = now,
            }
        }
    }

    /// (Ts.PC, Ts.CC) of a timestamp's ring slot (cumulative over the
    /// timestamps that share the slot).
    #[cfg(test)]
    pub(crate) fn counters(&self, ts: u64) -> (u64, u64) {
        let s = self.slot(ts);
        // SeqCst: as above.
        let cc = s.cc.load(Ordering::SeqCst);
        (s.pc.load(Ordering::SeqCst), cc)
    }
}
