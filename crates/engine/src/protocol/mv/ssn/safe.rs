//! Safe snapshots (SSN section 5.2): read-only serializable transactions
//! that read, untracked, as of a recent snapshot timestamp.

use super::*;

/// Snapshots kept in [`SafeSnapshots`]' ring.
const SAFE_RING: usize = 4;

/// Active safe snapshots (section 5.2): a read-only serializable
/// transaction reads, without any tracking, as of the latest snapshot
/// timestamp s, taken anew when the latest is older than
/// `Options::safe_snapshot_interval`. SSN treats a snapshot as a committed
/// transaction at s that read every row and every gap: an update
/// transaction that commits after s and replaces a version created before
/// s, or inserts, follows it (η ≥ s), and aborts if it also has a successor
/// as old as that (π ≤ s).
pub(crate) struct SafeSnapshots {
    /// The latest snapshot timestamp (0: none yet); also a lower bound of
    /// the GC watermark, so its versions stay.
    pub(super) latest: AtomicU64,
    /// The last few snapshot timestamps, for an updater whose stamp is older
    /// than the latest: it needs the largest one below its stamp.
    ring: [AtomicU64; SAFE_RING],
    /// Takers, one at a time; the count of snapshots taken and when the
    /// latest was taken.
    taker: parking_lot::Mutex<(usize, Option<std::time::Instant>)>,
}

impl Default for SafeSnapshots {
    fn default() -> SafeSnapshots {
        SafeSnapshots { latest: AtomicU64::new(0), ring: Default::default(), taker: parking_lot::Mutex::new((0, None)) }
    }
}

impl SafeSnapshots {
    /// The snapshot timestamp a read-only transaction reads at: the latest,
    /// or a new one if the latest is older than `interval`.
    pub(crate) fn get(&self, clock: &AtomicU64, txns: &TxnTable, interval: std::time::Duration) -> u64 {
        let mut t = self.taker.lock();
        if let Some(at) = t.1 {
            if at.elapsed() < interval {
                // Relaxed: written under the same lock.
                return self.latest.load(Ordering::Relaxed);
            }
        }
        let slot = &self.ring[t.0 % SAFE_RING];
        // Publish a clock reading, then check the clock did not move: every
        // stamp drawn after the check is above the snapshot, and its owner
        // reads the ring after drawing it (SeqCst throughout), so it finds
        // the snapshot. A stamp drawn before the check is below it: the
        // snapshot reads its versions (behind a commit dependency if it is
        // still Preparing).
        let s = loop {
            let c = clock.load(Ordering::SeqCst);
            let s = c - 1; // odd: never a commit stamp
            slot.store(s, Ordering::SeqCst);
            self.latest.store(s, Ordering::SeqCst);
            if clock.load(Ordering::SeqCst) == c {
                break s;
            }
        };
        // A snapshot never aborts (section 5.2: it "will not participate in
        // any serial anomalies"). Yet a writer whose stamp is below s and
        // that is still Preparing may abort (its own certifier decides after
        // the stamp is drawn); a reader that read its versions speculatively
        // would then abort with it (a commit dependency). So the snapshot is
        // handed out only once every such writer has decided: a wait for
        // pre-commits already under way, at most once per interval, by the
        // taker alone (other takers wait on `taker`; writers never do). A
        // writer that has decided and waits only for its log round is not
        // waited for: the snapshot reads its versions behind a commit
        // dependency, so only a reader of them waits for that round. (Its
        // round can still fail; that stops the database, and every commit
        // fails alike.)
        wait_decided_below(txns, s);
        t.0 += 1;
        t.1 = Some(std::time::Instant::now());
        s
    }

    /// The latest snapshot timestamp, 0 if none (a GC watermark bound).
    #[inline]
    pub(crate) fn latest(&self) -> u64 {
        // SeqCst: read before the watermark's slot scan.
        self.latest.load(Ordering::SeqCst)
    }

    /// The largest snapshot timestamp below commit stamp `c` (drawn by a
    /// SeqCst `fetch_add` before this call), `None` if there is none.
    #[inline]
    pub(crate) fn below(&self, c: u64) -> Option<u64> {
        // SeqCst: after our stamp's draw (see `get`).
        if self.latest.load(Ordering::SeqCst) == 0 {
            return None;
        }
        let mut best = None;
        let mut any = false;
        for r in &self.ring {
            // SeqCst: as above.
            let s = r.load(Ordering::SeqCst);
            if s != 0 {
                any = true;
                if s < c && best.is_none_or(|b| s > b) {
                    best = Some(s);
                }
            }
        }
        // Every snapshot in the ring is newer (we were delayed across
        // several): one below c was overwritten; assume the newest possible.
        best.or(any.then(|| c - 1))
    }
}

/// Waits until no transaction Preparing with an end stamp below `s` is left
/// undecided (one that still draws its stamp is waited out by `peek`; one
/// that waits only for its log round has decided). None can start:
/// every stamp drawn from now on is above `s` (see [`SafeSnapshots::get`]).
/// The slot of a stamp below `s` lies below the high water mark read here:
/// the slot was counted before its stamp was drawn, and our reading of the
/// clock saw that draw (the clock only changes by read-modify-writes, so the
/// reading synchronizes with it), which orders the count before this load.
fn wait_decided_below(txns: &TxnTable, s: u64) {
    for i in 0..txns.high_water() {
        let backoff = Backoff::new();
        while let Some((_, Peek::Preparing(ts))) = txns.peek_slot(i) {
            if ts > s {
                break; // not in the snapshot, whatever its outcome
            }
            if txns.is_logging(i) {
                break; // decided: only its log round is pending
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
    }
}

/// True if a transaction with options `o` reads a safe snapshot.
#[inline]
pub(crate) fn uses_safe_snapshot(opts: &crate::Options, o: &crate::TxnOptions<'_>) -> bool {
    o.read_only
        && matches!(opts.protocol, crate::Protocol::Ssn | crate::Protocol::Ssi)
        && opts.safe_snapshot_interval.is_some()
}
