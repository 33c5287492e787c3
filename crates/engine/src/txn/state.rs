//! A transaction's state word and id word in its transaction-table slot, and
//! how a reader resolves a Begin or End word that holds a transaction id
//! (Hekaton section 2.4; Tables 1 and 2 read the state of the transaction
//! a word names).
//!
//! The state word is `end_ts << 2 | state`. The id word names the occupant
//! (0 when free). A creator publishes its id in a Begin word, later turns
//! that word into its end timestamp (postprocessing) and only then retires
//! its id; so a reader that finds the id gone rereads the word and finds the
//! timestamp ([`resolve`]).
//!
//! The functions take the words themselves, on atomics from [`crate::sync`],
//! so that the model tests (`tests/loom_models.rs`) run exactly this code.

use crate::storage::word::Word;
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::Backoff;

/// Transaction states (Figure 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum TxnState {
    /// Normal processing.
    Active = 0,
    /// Has its end timestamp; validating and waiting for dependencies.
    Preparing = 1,
    /// Committed; postprocessing may still be finalising its versions.
    Committed = 2,
    /// Aborted; postprocessing may still be undoing its versions.
    Aborted = 3,
}

/// What a reader learns about another transaction from its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peek {
    /// Active (no end timestamp yet).
    Active,
    /// Preparing with this end timestamp.
    Preparing(u64),
    /// Committed with this end timestamp.
    Committed(u64),
    /// Aborted.
    Aborted,
    /// Terminated or not found: reread the version word.
    Gone,
}

/// Makes `id` the occupant of a slot, Active.
pub(crate) fn publish(id_word: &AtomicU64, state: &AtomicU64, id: u64) {
    debug_assert!(id != 0);
    // Release (state, then id): a reader that Acquires the new id sees the
    // new Active state, never the previous occupant's; a reader that
    // Acquires the new state sees the old id already retired.
    state.store(TxnState::Active as u64, Ordering::Release);
    id_word.store(id, Ordering::Release);
}

/// Retires the occupant's id: from now on readers find it gone and reread
/// the version words, which postprocessing has finalised.
pub(crate) fn retire(id_word: &AtomicU64) {
    // Release: the finalised version words happen before a reader that
    // sees the id gone rereads them.
    id_word.store(0, Ordering::Release);
}

/// Sets the state (and end timestamp).
#[inline]
pub(crate) fn set(state: &AtomicU64, st: TxnState, end_ts: u64) {
    debug_assert!(end_ts < 1 << 62);
    // Release: everything the transaction did before (e.g. installing its
    // versions) is visible to whoever observes the new state.
    state.store(end_ts << 2 | st as u64, Ordering::Release);
}

/// "Preparing, end timestamp pending" (Preparing with timestamp 0), set
/// just before the end timestamp is drawn.
#[inline]
pub(crate) fn set_pending(state: &AtomicU64) {
    // SeqCst: a reader that does not see this store read its own read time
    // (SeqCst) before our end timestamp was drawn (SeqCst `fetch_add`).
    state.store(TxnState::Preparing as u64, Ordering::SeqCst);
}

/// State and end timestamp of transaction `id`, the occupant of the slot
/// whose words these are, or `Gone`.
#[inline]
pub(crate) fn peek(id_word: &AtomicU64, state: &AtomicU64, id: u64) -> Peek {
    // Acquire on all three loads: seqlock-style read. The state load
    // cannot move before the first id check nor after the second.
    let backoff = Backoff::new();
    let w = loop {
        if id_word.load(Ordering::Acquire) != id {
            return Peek::Gone;
        }
        // SeqCst: pairs with `set_pending` (and is a plain load on x86).
        let w = state.load(Ordering::SeqCst);
        if id_word.load(Ordering::Acquire) != id {
            return Peek::Gone;
        }
        if w != TxnState::Preparing as u64 {
            break w;
        }
        // Pending: the end timestamp is being drawn; a few instructions.
        backoff.snooze();
    };
    let ts = w >> 2;
    match w & 3 {
        0 => Peek::Active,
        1 => Peek::Preparing(ts),
        2 => Peek::Committed(ts),
        _ => Peek::Aborted,
    }
}

/// A Begin or End word as a reader resolves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// A timestamp (possibly INFINITY).
    Ts(u64),
    /// The id of the reader itself.
    Own,
    /// Another transaction's id, and what [`peek`] says of it (never `Gone`).
    Other(u64, Peek),
}

/// Reads word `w` (a Begin or End word) for the reader `me`, peeking at the
/// transaction it names with `peek`; a transaction found gone has
/// finalised the word, which is read again.
#[inline]
pub(crate) fn resolve(w: &AtomicU64, me: u64, peek: impl Fn(u64) -> Peek) -> Resolved {
    loop {
        // Acquire: pairs with the Release stores of postprocessing, and with
        // the publication of the version.
        match Word::decode(w.load(Ordering::Acquire)) {
            Word::Ts(t) => return Resolved::Ts(t),
            Word::Txn(t) if t == me => return Resolved::Own,
            Word::Txn(t) => match peek(t) {
                Peek::Gone => continue,
                p => return Resolved::Other(t, p),
            },
        }
    }
}
