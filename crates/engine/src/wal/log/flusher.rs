//! The flusher's side of the log: the thread that closes an epoch, writes
//! its round (every stream's buffer, then the mark) to one stream's file
//! and syncs it, and stops the log for good when that fails (the parent
//! module's "Fail-stop").

use super::{Files, Shared, FRAME_MARK};
use crate::obs;
use crate::sync::atomic::Ordering;
use crate::wal::format::{frame, KIND_MARK};
use crate::{Error, Result};
use std::io::Write;

impl Shared {
    /// The flusher thread: one round per interval, or at once when asked.
    pub(super) fn flusher(&self) {
        let mut spare: Vec<Vec<u8>> = (0..self.streams.len()).map(|_| Vec::new()).collect();
        let mut stamped = 0u64;
        loop {
            {
                let mut w = self.wake.lock();
                if !w.asked && !self.stop.load(Ordering::SeqCst) {
                    let _ = self.woken.wait_for(&mut w, self.interval);
                }
                w.asked = false;
                if w.failed.is_some() {
                    return;
                }
            }
            let stopping = self.stop.load(Ordering::SeqCst);
            self.check_due();
            if let Err(e) = self.round(&mut spare, &mut stamped) {
                let mut w = self.wake.lock();
                w.failed = Some(e.to_string());
                // Release: whoever sees the flag finds the reason under the lock.
                self.failed.store(true, Ordering::Release);
                self.done.notify_all();
                return;
            }
            if stopping {
                return;
            }
        }
    }

    /// The error every begin and commit returns once the log has failed.
    #[cold]
    pub(super) fn failure(&self) -> Error {
        Error::LogFailed(self.wake.lock().failed.clone().unwrap_or_default())
    }

    /// Declares a checkpoint due when the interval has passed or the log
    /// has grown by the limit since the last one.
    fn check_due(&self) {
        // Relaxed: a hint; `take_due` decides who acts on it.
        if self.due.load(Ordering::Relaxed) {
            return;
        }
        let (at, bytes) = *self.since.lock();
        // Relaxed: statistics-grade counter.
        let grown = self.stats.bytes.load(Ordering::Relaxed).saturating_sub(bytes);
        if self.due_after.every.is_some_and(|e| at.elapsed() >= e)
            || self.due_after.log_bytes.is_some_and(|b| grown >= b)
        {
            // Relaxed: see `take_due`.
            self.due.store(true, Ordering::Relaxed);
        }
    }

    /// Closes the current epoch `e` and makes it durable: every stream's
    /// buffer, then the mark `e`, written to one stream's file (stream
    /// `e % streams`) and synced; or nothing, when no record of `e` exists.
    /// `stamped` is the largest epoch of any record taken so far (the
    /// flusher's own memory from round to round).
    fn round(&self, spare: &mut [Vec<u8>], stamped: &mut u64) -> Result<()> {
        // Relaxed: only the flusher moves the counter.
        let e = self.epoch.load(Ordering::Relaxed);
        // A record can be stamped `e` and still land in the previous
        // round's buffer (its append read the counter after that round's
        // increment but took its stream's lock before that round took the
        // buffer); it was written then, before mark `e - 1`. Round `e` must
        // still write mark `e`, or recovery's cut would stay below the
        // epoch its commit is acknowledged in. With nothing stamped `e`
        // anywhere the epoch stays open: no round, no sync, and epochs
        // that advance are exactly the rounds written, which recovery
        // counts on (`durability::recovery`, the cut).
        if *stamped < e && self.streams.iter().all(|s| s.pending.lock().buf.is_empty()) {
            return Ok(());
        }
        // SeqCst: appenders read the counter under their stream's lock; the
        // lock acquisitions below order every append of epoch <= e before
        // we take its buffer, and every later append after the increment.
        let closed = self.epoch.fetch_add(1, Ordering::SeqCst);
        debug_assert_eq!(closed, e, "only the flusher moves the epoch");
        let _span = obs::span!(trace, "log_round", epoch = e);
        let started = obs::Started::now();
        let mut taken = Vec::with_capacity(self.streams.len());
        let mut max_ts = 0;
        for (i, s) in self.streams.iter().enumerate() {
            let mut p = s.pending.lock();
            let mut buf = std::mem::take(&mut spare[i]);
            std::mem::swap(&mut p.buf, &mut buf);
            max_ts = max_ts.max(std::mem::take(&mut p.max_ts));
            if !buf.is_empty() {
                // The epoch of the buffer's last record.
                let last = if p.split < buf.len() { p.first_epoch + 1 } else { p.first_epoch };
                *stamped = (*stamped).max(last);
            }
            // Where this buffer's records of `e + 1` begin.
            let split = if buf.is_empty() || p.first_epoch > e {
                0
            } else {
                debug_assert_eq!(p.first_epoch, e, "a buffer holds the epoch being closed, then the next");
                p.split.min(buf.len())
            };
            drop(p);
            taken.push((buf, split));
        }
        // The records of epoch `e` of every stream, then those of `e + 1`
        // (taken between the increment and the take), then the mark: the
        // file's epochs never go backwards.
        let mut mark = Vec::with_capacity(FRAME_MARK);
        frame(&mut mark, |b| {
            b.push(KIND_MARK);
            b.extend_from_slice(&e.to_le_bytes());
        });
        let parts: Vec<&[u8]> = taken
            .iter()
            .map(|(b, at)| &b[..*at])
            .chain(taken.iter().map(|(b, at)| &b[*at..]))
            .chain(std::iter::once(&mark[..]))
            .filter(|p| !p.is_empty())
            .collect();
        if !self.round_delay.is_zero() {
            std::thread::sleep(self.round_delay); // a slow disk, in tests
        }
        self.write_stream((e % self.streams.len() as u64) as usize, &parts, max_ts, e)?;
        // Relaxed: statistics only.
        self.stats.rounds.fetch_add(1, Ordering::Relaxed);
        self.obs.wal_flushed(parts.iter().map(|p| p.len() as u64).sum(), started);
        // Release: a committer that sees the epoch durable sees it synced.
        self.durable.store(e, Ordering::Release);
        for (i, (mut buf, _)) in taken.into_iter().enumerate() {
            buf.clear();
            spare[i] = buf;
        }
        let _w = self.wake.lock();
        self.done.notify_all();
        Ok(())
    }

    /// Writes and syncs round `e` (its records and mark, in parts) to
    /// stream `i`'s file, rotating the file once it is large enough. A
    /// failed write or sync cuts the round off the file again, if the file
    /// still takes a truncation and a sync (module docs, "Fail-stop").
    fn write_stream(&self, i: usize, parts: &[&[u8]], max_ts: u64, e: u64) -> Result<()> {
        let mut f = self.streams[i].files.lock();
        let start = f.size;
        if let Err(err) = self.write_round(&mut f, parts) {
            let path = f.files.last().expect("a stream has a current file").path.clone();
            let cut = f.current.set_len(start).and_then(|()| f.current.sync_data());
            let what = match cut {
                Ok(()) => "the round was cut off the file again".to_string(),
                Err(c) => format!(
                    "the round could not be cut off the file ({c}): a commit reported as failed may survive a restart"
                ),
            };
            f.size = start;
            return Err(Error::Io(format!("{err} in {}; {what}", path.display())));
        }
        f.last_mark = e;
        let last = f.files.last_mut().expect("a stream has a current file");
        last.max_ts = last.max_ts.max(max_ts);
        if f.size >= self.rotate_bytes {
            self.rotate(i, &mut f)?;
        }
        Ok(())
    }

    /// Writes and syncs one round's parts to the current file: "log write:
    /// OS error" or "log sync: OS error" when that fails (or when a test's
    /// failing disk says so).
    fn write_round(&self, f: &mut Files, parts: &[&[u8]]) -> std::io::Result<()> {
        use std::io::Error as IoError;
        // Relaxed: statistics, read by the flusher that writes them.
        let rounds = self.stats.rounds.load(Ordering::Relaxed);
        let injected = |after: Option<u64>| after.is_some_and(|n| rounds >= n);
        let eio = || IoError::from_raw_os_error(5); // EIO
        let ctx = |what: &str, err: IoError| IoError::new(err.kind(), format!("{what}: {err}"));
        for part in parts {
            if injected(self.fail_write_after) {
                // A failing disk takes part of the round, then errs.
                let _ = f.current.write_all(&part[..part.len() / 2]);
                return Err(ctx("log write", eio()));
            }
            f.current.write_all(part).map_err(|err| ctx("log write", err))?;
            f.size += part.len() as u64;
        }
        if injected(self.fail_sync_after) {
            return Err(ctx("log sync", eio()));
        }
        f.current.sync_data().map_err(|err| ctx("log sync", err))?;
        // Relaxed: statistics only.
        self.stats.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
