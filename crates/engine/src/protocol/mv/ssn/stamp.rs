//! SSN's stamp words (see `protocol::mv::ssn` for the protocol).
//!
//! * **A version's stamp word** holds η(V), the largest commit stamp of a
//!   reader or of the creator, until an overwrite of V commits; then it
//!   holds π(V), the overwriter's π, with the top bit set ([`SSTAMP`]).
//!   Raising η is a `fetch_max`: a word holding π is larger than any η, so
//!   a late reader's raise leaves it alone, and η only ever grows.
//! * **A slot's published π** (section 5.3's MSB handshake): writers lower
//!   the owner's π by compare-and-swap ([`lower_pi`]); the owner takes the
//!   pushed value and locks the word (the top bit, [`LOCKED`]) right before
//!   its exclusion-window test ([`lock_pi`]). A push either lands before
//!   the lock, and the owner sees it, or finds the word locked.
//!
//! The functions take the words themselves, on atomics from
//! [`crate::sync`], so that the model tests run exactly this code (the
//! handshake in `tests/loom_models.rs`; the stamp word in
//! `tests/shuttle_models.rs`: loom orders a plain store racing read-modify-
//! writes of one word only partially, and reports a false alarm).

use crate::sync::atomic::{AtomicU64, Ordering};

/// Flag of a stamp word holding π(V) (an sstamp) rather than η(V).
pub(crate) const SSTAMP: u64 = 1 << 63;
/// "Infinity" for π: no successor yet.
pub(crate) const NONE: u64 = SSTAMP - 1;
/// The lock bit of a slot's published π.
pub(crate) const LOCKED: u64 = 1 << 63;

/// What a version's stamp word holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stamp {
    /// η(V): no overwrite of V has committed.
    Eta(u64),
    /// π(V): the committed overwriter's π.
    Pi(u64),
}

impl Stamp {
    /// Decodes a stamp word.
    #[inline]
    pub(crate) fn of(w: u64) -> Stamp {
        if w & SSTAMP != 0 {
            Stamp::Pi(w & !SSTAMP)
        } else {
            Stamp::Eta(w)
        }
    }
}

/// Raises η(V) in stamp word `w` to at least `c`; a word holding π(V)
/// stays as it is. `order`: Release where a writer that reads η(V) later
/// must see the raise (the reader's commit), Relaxed where something else
/// publishes it (a new version's Begin word).
#[inline]
pub(crate) fn raise_eta(w: &AtomicU64, c: u64, order: Ordering) {
    debug_assert!(c & SSTAMP == 0, "a commit stamp is below the flag");
    w.fetch_max(c, order);
}

/// Writes π(V) = `pi` into stamp word `w`: the overwriter of V, committed,
/// before its End timestamp replaces its write lock.
#[inline]
pub(crate) fn set_pi(w: &AtomicU64, pi: u64) {
    debug_assert!(pi & SSTAMP == 0);
    // Release: pairs with the Acquire load of a reader that saw the End
    // timestamp stored after this.
    w.store(SSTAMP | pi, Ordering::Release);
}

/// Reads stamp word `w`.
#[inline]
pub(crate) fn read(w: &AtomicU64) -> Stamp {
    // Acquire: pairs with `set_pi` and the Release raises.
    Stamp::of(w.load(Ordering::Acquire))
}

/// Outcome of [`lower_pi`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Push {
    /// The owner's π was above `value` and now is `value`.
    Lowered,
    /// The owner's π was already at most `value`.
    AlreadyLower,
    /// The owner has locked its π for its test: the push cannot land.
    Locked,
}

/// Lowers the π published in slot word `w` to `value`, unless locked.
pub(crate) fn lower_pi(w: &AtomicU64, value: u64) -> Push {
    debug_assert!(value & LOCKED == 0);
    // Acquire: a word read while the slot is still the owner's.
    let mut cur = w.load(Ordering::Acquire);
    loop {
        if cur & LOCKED != 0 {
            return Push::Locked;
        }
        if cur <= value {
            return Push::AlreadyLower;
        }
        // AcqRel: the owner's fetch_or acquires it.
        match w.compare_exchange(cur, value, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Push::Lowered,
            Err(now) => cur = now,
        }
    }
}

/// Locks the π published in slot word `w` and returns what writers pushed
/// into it ([`NONE`] if nothing).
pub(crate) fn lock_pi(w: &AtomicU64) -> u64 {
    // AcqRel: acquire the pushes; release nothing yet.
    w.fetch_or(LOCKED, Ordering::AcqRel) & !LOCKED
}
