//! The read side of SSN (Algorithm 1's `ssn_read`, and reads of absent
//! keys): the versions' reader bitmaps and stamp words, and the waits for a
//! writer's outcome that a read may need.

use super::*;

/// The readers-bitmap bit of slot `slot`.
#[inline]
fn bit(slot: u32) -> u64 {
    1 << slot.min(SHARED_BIT)
}

/// The stamp word and readers bitmap of version `v`: the last two of its
/// link words (SSN and SSI tables add them after the links).
#[inline]
pub(super) fn words(v: &Version) -> (&AtomicU64, &AtomicU64) {
    let n = v.n_links();
    (v.word(n - 2), v.word(n - 1))
}

/// Sets our bit in a readers bitmap (section 4.2.3's happens-before
/// argument). SeqCst: the bit precedes, in the single total order, our own
/// later draw of a commit stamp (a SeqCst `fetch_add`); so an overwriter
/// whose SeqCst load of the bitmap, made after it drew its stamp, misses
/// the bit drew a smaller stamp than we will — and we, committing later,
/// find it through the version's End word. A bit already set was set by
/// us earlier (or is the shared bit, which stays set).
#[inline]
pub(super) fn register(readers: &AtomicU64, slot: u32) {
    let b = bit(slot);
    // Relaxed: only skips a redundant write (see above).
    if readers.load(Ordering::Relaxed) & b == 0 {
        readers.fetch_or(b, Ordering::SeqCst);
    }
}

/// Sets our bit for an untracked read (section 5.3), where the bit must
/// precede our End load in the single total order even when it was set
/// before (by an earlier read, an earlier occupant of our slot, or another
/// slot sharing bit 63).
#[inline]
fn register_untracked(readers: &AtomicU64, slot: u32) {
    let b = bit(slot);
    // Acquire: a bit seen set was set by a SeqCst read-modify-write that
    // then happens before our SeqCst End load, so it precedes the load in
    // the total order too.
    if readers.load(Ordering::Acquire) & b == 0 {
        readers.fetch_or(b, Ordering::SeqCst);
    }
}

/// Clears our bit (slots that own theirs), once our stamps are in place.
#[inline]
pub(super) fn unregister(readers: &AtomicU64, slot: u32) {
    if slot < SHARED_BIT {
        // Release: a writer that sees the bit gone sees our η(V) raise.
        readers.fetch_and(!bit(slot), Ordering::Release);
    }
}

/// c(V): the commit stamp of the creator of `v`, which is visible to us
/// (committed, or Preparing behind a commit dependency).
#[inline]
pub(crate) fn cstamp_of(v: &Version, txns: &TxnTable) -> u64 {
    loop {
        // Acquire: the final stamp, if postprocessing wrote it.
        match Word::decode(v.begin.load(Ordering::Acquire)) {
            Word::Ts(ts) => return if ts == INFINITY { 0 } else { ts },
            Word::Txn(c) => match txns.peek(c) {
                Peek::Preparing(ts) | Peek::Committed(ts) => return ts,
                // Finalized meanwhile: reread the word.
                Peek::Gone => continue,
                Peek::Active | Peek::Aborted => return 0,
            },
        }
    }
}

/// Waits while transaction `id` is Preparing with a stamp below `bound`;
/// returns its commit stamp if it committed with one below `bound`.
///
/// The wait is short when every transaction has a core (the other is in its
/// pre-commit); with more threads than cores the other may be descheduled,
/// so after spinning and yielding a while the waiter sleeps, which leaves
/// the core to it.
pub(super) fn committed_before(txns: &TxnTable, id: u64, bound: u64) -> Option<u64> {
    let backoff = Backoff::new();
    let mut yields = 0u32;
    loop {
        match txns.peek(id) {
            Peek::Preparing(c) if c < bound => {}
            Peek::Committed(c) if c < bound => return Some(c),
            _ => return None,
        }
        if !backoff.is_completed() {
            backoff.snooze();
        } else if yields < 16 {
            yields += 1;
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }
}

/// Algorithm 1, `ssn_read`: version `v` (of a table whose SSN words are at
/// `at`) was returned by the base CC to the transaction in slot `slot`.
#[inline]
#[allow(clippy::too_many_arguments)]
pub(crate) fn read(
    st: &mut SsnLocal,
    cert: Cert,
    txns: &TxnTable,
    slot: u32,
    my_word: u64,
    v: &Version,
) -> Result<(), AbortReason> {
    // Acquire: see the creator's final stamp if it wrote one.
    if v.begin.load(Ordering::Acquire) == my_word {
        return Ok(()); // our own version: reads of own writes are not tracked
    }
    let (stamp, readers) = words(v);
    let mut registered = false;
    if cert == Cert::Ssn {
        // η(T) with the w:r edge from the creator (line 4).
        let cv = cstamp_of(v, txns);
        st.pstamp = st.pstamp.max(cv);
        if cv < st.stale_below {
            // Section 5.3: a version not overwritten recently. Set our bit
            // first, then look at the End word, both SeqCst: an overwriter
            // locks the End word, fences and then loads the bitmap
            // (`ssn_precommit`), so either it finds our bit or we find its
            // lock (and track the read as usual).
            register_untracked(readers, slot);
            registered = true;
            // SeqCst: the other half of the handshake above.
            if Word::decode(v.end.load(Ordering::SeqCst)) == Word::Ts(INFINITY) {
                st.untracked += 1;
                return st.verdict(cert);
            }
        }
    }
    // Acquire: pairs with the overwriter's Release store of the End word,
    // made after it wrote π(V) into the stamp word.
    match Word::decode(v.end.load(Ordering::Acquire)) {
        Word::Ts(e) if e != INFINITY => {
            // Overwritten, and the overwrite committed and finalized: π(V)
            // is in place (lines 9-10).
            st.overwritten_by(cert, e, pi_of(stamp::read(stamp)));
        }
        _ => {
            // Not overwritten yet, or an overwrite in flight (the paper's
            // TID in v.sstamp): track it (line 7).
            if !registered {
                register(readers, slot);
            }
            st.reads.push(VPtr(v as *const Version as *mut Version));
        }
    }
    st.verdict(cert)
}

/// A lookup or scan at read time `rt` passed over `v`, which it could not
/// see: if `v` was ended (deleted or replaced) by a transaction that
/// committed before `rt`, the reader saw that transaction's write — the
/// absence of `v` — and takes it as a predecessor (η, the w:r edge of
/// Algorithm 1 line 4; a delete is a version too). SSI counts no w:r edges.
/// If `v` was created by a transaction that committed (or is committing)
/// after `rt`, that transaction is a successor (see [`created_after`]).
#[inline]
pub(crate) fn absent(st: &mut SsnLocal, cert: Cert, db: MvDb<'_>, v: &Version, rt: u64) {
    if cert == Cert::Off {
        return;
    }
    let txns = &db.txns;
    created_after(st, cert, db, v, rt);
    if cert != Cert::Ssn {
        return;
    }
    // Acquire: as for any End word we act on.
    let e = match Word::decode(v.end.load(Ordering::Acquire)) {
        Word::Ts(e) => e,
        Word::Txn(u) => match txns.peek(u) {
            Peek::Preparing(e) | Peek::Committed(e) => e,
            _ => return,
        },
    };
    if e < rt && e != INFINITY {
        st.pstamp = st.pstamp.max(e);
    }
}

/// A scan (or a lookup that found nothing) at read time `rt` passed over
/// `v`, created by U with c(U) > `rt`: the scan read the key's absence, which
/// U's insert replaced — an edge T →rw U (section 6: U wrote the gap's
/// pseudo-version we read). If U commits after us, U's η counts us. If U
/// committed first, π(U) must reach our π, and the gap alone does not
/// always carry it: U pushes its π to the gap's readers it finds in the
/// bitmap, but finds only those registered before its SeqCst bitmap load —
/// a scan that registered later (a long transaction reading the key after U
/// committed) was never pushed to, and when a later transaction deleted the
/// row before our commit the base's repeated scan finds nothing either.
///
/// `st.gap_clock` is the clock read (SeqCst) right after we registered the
/// gap: if U drew c(U) ≥ it, our clock load preceded U's draw, hence U's
/// bitmap load, in the single total order, so U found our bit (and pushed).
/// Otherwise we take the edge here: π(U) from U's slot (waiting while U is
/// Preparing, as the pre-commit does), or — when U already left its slot
/// and its π with it — the worst case, π(U) = 0 (abort; the base would
/// abort such a scanner anyway with `Phantom` unless the row was deleted
/// again before its commit).
fn created_after(st: &mut SsnLocal, cert: Cert, db: MvDb<'_>, v: &Version, rt: u64) {
    let txns = &db.txns;
    loop {
        // Acquire: the final stamp, if postprocessing wrote it.
        let (cu, pi) = match Word::decode(v.begin.load(Ordering::Acquire)) {
            Word::Ts(b) => {
                if b == INFINITY || b <= rt || b >= st.gap_clock {
                    return; // aborted, visible, or U pushed to us
                }
                // U finished: its π is gone with its slot.
                st.overwritten_by(cert, b, 0);
                return;
            }
            Word::Txn(u) => match txns.peek(u) {
                // Not yet drawing its stamp: our register precedes (SeqCst)
                // its pending state, stamp and bitmap load; it finds us.
                Peek::Active | Peek::Aborted => return,
                Peek::Gone => continue,
                Peek::Preparing(cu) | Peek::Committed(cu) if cu <= rt || cu >= st.gap_clock => return,
                Peek::Preparing(_) | Peek::Committed(_) => {
                    let Some(cu) = committed_before(txns, u, NONE) else { continue };
                    let (slot, words) = (txns.slot(slot_of(u)), db.g.ssn_slots.of(slot_of(u)));
                    // Acquire: published before the Committed state.
                    let s = words.sstamp.load(Ordering::Acquire) & !LOCKED;
                    // Acquire: still U's, so `s` is U's π; if not, reread
                    // the version (its Begin word is a timestamp by now).
                    if slot.id.load(Ordering::Acquire) != u {
                        continue;
                    }
                    (cu, s)
                }
            },
        };
        st.overwritten_by(cert, cu, pi);
        return;
    }
}

/// Lowers the published π of transaction `id` in slot `s` to `value`: an
/// edge `id` →rw us that `id` cannot see (it scanned a gap we changed) and
/// that we commit before. False when that is not certain to take effect:
/// `id` already locked its π for its test (section 5.3's MSB handshake: the
/// writer then aborts), or it finished meanwhile and did not abort.
pub(super) fn push(db: MvDb<'_>, s: u32, id: u64, value: u64) -> bool {
    let txns = &db.txns;
    let slot = txns.slot(s);
    let fate = || matches!(txns.peek(id), Peek::Aborted);
    // Acquire: pairs with the Release id store of `open`.
    if slot.id.load(Ordering::Acquire) != id {
        return fate();
    }
    match stamp::lower_pi(&db.g.ssn_slots.of(s).sstamp, value) {
        Push::Locked => fate(),
        // Still `id`'s after the push (or the look): it will see the value.
        // Otherwise the word was a newer occupant's (harmless) and `id`'s
        // fate decides. Acquire: as above.
        Push::Lowered | Push::AlreadyLower => slot.id.load(Ordering::Acquire) == id || fate(),
    }
}
