//! The commit freeze of single-version checkpoints
//! (`durability::checkpoint`): single-version stores (Silo, 1V, ordered
//! 2PL) rewrite rows in place, so a consistent checkpoint holds their
//! commits back instead of reading a snapshot. A durable committer
//! [`Freeze::enter`]s before it draws its commit TID and stays Preparing in
//! its slot until its writes are installed; the checkpoint [`Freeze::hold`]s
//! the freeze, which waits until no slot is Preparing. Protocol-neutral: it
//! knows only the slot table's states.

use crate::sync::atomic::{AtomicBool, Ordering};
use crate::txn::table::{Peek, TxnState, TxnTable};
use crossbeam_utils::{Backoff, CachePadded};

/// The commit freeze (module docs).
#[derive(Default)]
pub(crate) struct Freeze {
    frozen: CachePadded<AtomicBool>,
}

impl Freeze {
    /// A durable single-version committer's entry, before it draws its
    /// commit TID: waits while a checkpoint holds the freeze. The slot stays
    /// Preparing until the writes are installed (`TxnState::Committed`) or
    /// the transaction ends.
    pub(crate) fn enter(&self, txns: &TxnTable, slot: u32) {
        loop {
            // SeqCst store (in `set_pending`), then SeqCst load: Dekker with
            // `hold`, which stores the flag and then reads the slots. Either
            // we see the flag, or the checkpoint sees us Preparing.
            txns.set_pending(slot);
            if !self.frozen.load(Ordering::SeqCst) {
                return;
            }
            txns.set_state(slot, TxnState::Active, 0);
            let backoff = Backoff::new();
            // Relaxed: only a wait; the SeqCst load above decides.
            while self.frozen.load(Ordering::Relaxed) {
                if backoff.is_completed() {
                    std::thread::sleep(std::time::Duration::from_micros(50));
                } else {
                    backoff.snooze();
                }
            }
        }
    }

    /// Raises the freeze and waits until no committer is inside it.
    pub(crate) fn hold<'a>(&'a self, txns: &TxnTable) -> Held<'a> {
        // SeqCst: see `enter`.
        self.frozen.store(true, Ordering::SeqCst);
        let held = Held(self);
        for i in 0..txns.high_water() {
            let backoff = Backoff::new();
            // `peek` reads the state SeqCst (and waits out a pending one).
            while let Some((_, Peek::Preparing(_))) = txns.peek_slot(i) {
                backoff.snooze();
                if backoff.is_completed() {
                    std::thread::yield_now();
                }
            }
        }
        held
    }
}

/// A held freeze; commits resume when it drops.
pub(crate) struct Held<'a>(&'a Freeze);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        // Release: the checkpoint's reads happen before any commit resumes.
        self.0.frozen.store(false, Ordering::Release);
    }
}
