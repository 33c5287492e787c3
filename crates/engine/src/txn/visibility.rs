//! Version visibility (Hekaton section 2.5; thesis Tables 4.1–4.3) and
//! updatability (section 2.6).
//!
//! A reader never blocks: when a Begin or End word holds the id of a
//! Preparing transaction, the reader speculates and takes a commit dependency
//! (section 2.7) instead of waiting.

use crate::storage::version::Version;
use crate::storage::word::{Word, INFINITY};
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::txn::state::{resolve, Resolved};
use crate::txn::table::{Peek, TxnTable};
use std::cell::Cell;

/// The read time "now" of read committed (section 3.4), resolved lazily: see
/// [`visible_at`].
pub(crate) const NOW: u64 = u64::MAX;

/// The transaction doing the check.
pub(crate) struct Me<'a> {
    pub(crate) table: &'a TxnTable,
    pub(crate) slot: u32,
    pub(crate) id: u64,
    /// The clock, for resolving [`NOW`].
    pub(crate) clock: &'a AtomicU64,
    /// [`NOW`] as resolved during this operation (0: not yet).
    pub(crate) now: Cell<u64>,
    /// POMVCC's validation just past the shared commit stamp `peer` (0:
    /// not validating): a transaction at that same stamp is a peer. A
    /// Preparing peer may be validating against us at the same moment; we
    /// never take a commit dependency on it (two peers could each wait for
    /// the other for ever). A peer that ended a version we look at, even
    /// one that has finished since, may have linked the version's successor
    /// at a place our walk of the chain had already passed, so we cannot
    /// tell what it left. Either way `clash` is set, and the caller's
    /// validation fails (see `protocol::mv::pomvcc`).
    pub(crate) peer: u64,
    pub(crate) clash: Cell<bool>,
}

impl Me<'_> {
    #[inline]
    fn depend_on(&self, other: u64) -> bool {
        self.table.register_dependency(self.slot, self.id, other)
    }

    /// A speculation on a transaction Preparing at stamp `ts`: true if it
    /// is a peer (see `peer`), which we note instead of depending on it.
    #[inline]
    fn is_peer(&self, ts: u64) -> bool {
        if ts == self.peer {
            self.clash.set(true);
            return true;
        }
        false
    }
}

/// Checks whether `v` is visible to `me` as of read time `rt`.
///
/// Returns the version's (possibly speculative) begin timestamp if visible —
/// 0 for the reader's own uncommitted version — and `None` if not. Commit
/// dependencies are registered as a side effect for speculative reads
/// (Table 1, Preparing) and speculative ignores (Table 2, Preparing).
///
/// Read committed reads at [`NOW`], the current time. While both words hold
/// timestamps the answer does not depend on its exact value (every committed
/// Begin and every finite End lie before now), so the shared clock is read
/// only when a word holds a transaction id, once per operation; from then on
/// the operation compares against that reading. A writer seen Active then
/// draws a later end timestamp, so a version it ends in the meantime is still
/// seen (the clock reading is SeqCst, like `set_pending`).
///
/// The common case, a version whose Begin and End words both hold
/// timestamps, is decided inline: every read walks
/// through it, and as one big function the compiler's choice to inline it
/// moved with unrelated changes (measured: 540 of hekaton's 11,600
/// instructions per SSI transaction went to the call when it stopped). The
/// rest is [`visible_at_words`], out of line.
#[inline(always)]
pub(crate) fn visible_at(v: &Version, rt: u64, me: &Me<'_>) -> Option<u64> {
    // Acquire: as in `resolve` (Begin first, then End, as below).
    let (b, e) = (v.begin.load(Ordering::Acquire), v.end.load(Ordering::Acquire));
    if let (Word::Ts(b), Word::Ts(e)) = (Word::decode(b), Word::decode(e)) {
        let rt = match (rt, me.now.get()) {
            // Read committed before any clock reading: the latest
            // committed version is visible (see `visible_at_words`).
            (NOW, 0) => return (b != INFINITY && e == INFINITY).then_some(b),
            (NOW, now) => now,
            (rt, _) => rt,
        };
        // Table 1 (a committed Begin; INFINITY marks garbage) and
        // Table 2 (a committed End; a peer's fails the validation).
        if b == INFINITY || b >= rt || me.is_peer(e) {
            return None;
        }
        return (rt < e).then_some(b);
    }
    visible_at_words(v, rt, me)
}

/// [`visible_at`] when a word holds a transaction id.
#[inline(never)]
fn visible_at_words(v: &Version, rt: u64, me: &Me<'_>) -> Option<u64> {
    let rt = if rt == NOW {
        match me.now.get() {
            0 => {
                // Acquire: as below.
                let (b, e) = (v.begin.load(Ordering::Acquire), v.end.load(Ordering::Acquire));
                if let (Word::Ts(b), Word::Ts(e)) = (Word::decode(b), Word::decode(e)) {
                    return (b != INFINITY && e == INFINITY).then_some(b);
                }
                // SeqCst: pairs with `set_pending`; odd: never equals a stamp.
                let now = me.clock.load(Ordering::SeqCst) - 1;
                me.now.set(now);
                now
            }
            now => now,
        }
    } else {
        rt
    };
    'retry: loop {
        // ---- Begin word (Table 1 / 4.2) ----
        let (begin, speculative_on) = match resolve(&v.begin, me.id, |id| me.table.peek(id)) {
            Resolved::Ts(b) => {
                // INFINITY marks a garbage version of an aborted transaction.
                if b == INFINITY || b >= rt {
                    return None;
                }
                (b, None)
            }
            Resolved::Own => (0, None), // own version: Begin counts as 0
            Resolved::Other(tb, p) => match p {
                Peek::Active => return None,  // uncommitted, not ours
                Peek::Aborted => return None, // garbage
                Peek::Gone => unreachable!("`resolve` rereads the word"),
                Peek::Committed(ts) => {
                    if ts >= rt {
                        return None;
                    }
                    (ts, None)
                }
                Peek::Preparing(ts) => {
                    if ts >= rt {
                        return None; // invisible whatever TB's outcome
                    }
                    if me.is_peer(ts) {
                        return None; // the caller fails its validation
                    }
                    (ts, Some(tb)) // speculative read, if the End test passes
                }
            },
        };
        // ---- End word (Table 2 / 4.3) ----
        let visible = loop {
            match resolve(&v.end, me.id, |id| me.table.peek(id)) {
                // A peer's end, finished or not, fails the validation: the
                // peer may have linked its new version where our walk had
                // already passed (see `peer`).
                Resolved::Ts(e) if me.is_peer(e) => break false,
                Resolved::Ts(e) => break rt < e,
                Resolved::Own => break false, // we replaced or deleted it
                Resolved::Other(te, p) => match p {
                    Peek::Active | Peek::Aborted => break true,
                    Peek::Gone => unreachable!("`resolve` rereads the word"),
                    Peek::Committed(ts) if me.is_peer(ts) => break false, // as above
                    Peek::Committed(ts) => break rt < ts,
                    Peek::Preparing(ts) => {
                        if rt < ts {
                            break true;
                        }
                        if me.is_peer(ts) {
                            break false; // the caller fails its validation
                        }
                        // Speculatively ignore V: we commit only if TE commits.
                        if me.depend_on(te) {
                            break false;
                        }
                        continue; // TE already decided: reread the End word
                    }
                },
            }
        };
        if !visible {
            return None;
        }
        if let Some(tb) = speculative_on {
            // Speculative read: we commit only if TB commits.
            if !me.depend_on(tb) {
                continue 'retry; // TB already decided: start over
            }
        }
        return Some(begin);
    }
}

/// Whether the End word of a visible version allows an update (section 2.6):
/// `Some(word)` to compare-and-swap against if it is INFINITY or names an
/// aborted transaction; `None` on a write-write conflict.
#[inline]
pub(crate) fn updatable(v: &Version, me: &Me<'_>) -> Option<u64> {
    loop {
        // Acquire: we must see the End word's latest content before deciding.
        let raw = v.end.load(Ordering::Acquire);
        match Word::decode(raw) {
            Word::Ts(INFINITY) => return Some(raw),
            Word::Ts(_) => return None, // a historic version
            Word::Txn(te) => match me.table.peek(te) {
                Peek::Aborted => return Some(raw),
                Peek::Gone => continue,
                _ => return None, // first writer wins
            },
        }
    }
}

/// True if `v` records a write of its key that an insert by the caller (at
/// read time `rt`) must not overtake: a write still in flight by another
/// transaction, or one committed after `rt` (first writer wins, section 2.6,
/// applied to a key with no visible row), or the latest version itself.
/// Garbage and the caller's own versions never compete.
pub(crate) fn is_competing(v: &Version, rt: u64, me: &Me<'_>) -> bool {
    loop {
        // Acquire: as in `visible_at`.
        match Word::decode(v.begin.load(Ordering::Acquire)) {
            Word::Ts(INFINITY) => return false,
            Word::Ts(b) if b > rt => return true, // created after our snapshot
            Word::Ts(_) => {}
            Word::Txn(tb) if tb == me.id => return false,
            Word::Txn(tb) => match me.table.peek(tb) {
                Peek::Aborted => return false,
                Peek::Gone => continue,
                Peek::Committed(ts) if ts < rt => {}
                _ => return true, // in flight, or committed after our snapshot
            },
        }
        break;
    }
    loop {
        // Acquire: as in `visible_at`.
        return match Word::decode(v.end.load(Ordering::Acquire)) {
            // Latest, or ended after our snapshot: a concurrent write.
            Word::Ts(e) => e == INFINITY || e > rt,
            Word::Txn(te) if te == me.id => false,
            Word::Txn(te) => match me.table.peek(te) {
                Peek::Gone => continue,
                Peek::Committed(ts) => ts > rt,
                // An aborted writer leaves the version latest; an active or
                // preparing one is a concurrent writer of this key.
                _ => true,
            },
        };
    }
}
