//! Where a transaction's time goes: cheap per-thread timers around the
//! engine's index walks, commit validation and certification, waits for
//! locks and commit dependencies, garbage collection and waits for the log,
//! for benchmarks' time breakdowns (DBx1000's and CCBench's categories).
//!
//! Off by default and process-wide ([`set_enabled`]). Off, each timed
//! region costs one relaxed load and a predictable branch. On, a region
//! on a thread that samples ([`set_sampling`]) reads the CPU's time-stamp
//! counter (`rdtsc` on x86-64; elsewhere a monotonic clock in nanoseconds)
//! at its start and end and adds the difference to this thread's total
//! for its [`Part`]; on a thread that does not, it costs a call and a
//! thread-local load. Reading the counter is not free (tens of
//! nanoseconds on a virtual machine, where a transaction takes a few
//! microseconds), so a benchmark samples one transaction in several.
//! Regions do not nest: one that starts inside another (an index lookup
//! inside a validation) is counted as part of the outer one, so the parts
//! never count the same tick twice.
//!
//! A caller samples [`thread_totals`] before and after a transaction (on
//! the thread that ran it) and converts ticks with [`ticks_per_ns`]: what
//! the parts do not cover is the transaction's own work.
//!
//! ```
//! use multiverse::research::breakdown::{self, Part};
//! use multiverse::{Database, Isolation, Key, Options, TableSpec};
//!
//! let db = Database::new(Options::default()).unwrap();
//! let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
//! breakdown::set_enabled(true);
//! breakdown::set_sampling(true);
//! let before = breakdown::thread_totals();
//! db.run(Isolation::Serializable, |tx| {
//!     tx.insert(t, Key::from(1), b"v")?;
//!     tx.get(t, &Key::from(1)).map(drop)
//! })
//! .unwrap();
//! let spent = breakdown::thread_totals()[Part::Index as usize] - before[Part::Index as usize];
//! assert!(spent > 0, "the lookup walked the index");
//! breakdown::set_enabled(false);
//! ```

use crate::sync::atomic::{AtomicBool, Ordering};
use std::cell::Cell;
use std::sync::OnceLock;

/// What a timed region is; its number indexes [`thread_totals`].
///
/// ```
/// use multiverse::research::breakdown::{thread_totals, Part};
/// let t = thread_totals();
/// assert_eq!(t[Part::Validation as usize], 0, "nothing timed on this thread yet");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Finding records: index lookups and range walks, with the version
    /// chains walked to the visible version.
    Index = 0,
    /// Commit-time validation (read and scan sets, Silo's phase 2) and
    /// certification (SSN, SSI).
    Validation = 1,
    /// Waiting for locks, commit dependencies and wait-for dependencies.
    Wait = 2,
    /// Garbage collection done by the transaction's thread.
    Gc = 3,
    /// Waiting for the log to make a commit durable (or visible).
    LogWait = 4,
}

/// The parts, in their numeric order.
pub const PARTS: [Part; 5] = [Part::Index, Part::Validation, Part::Wait, Part::Gc, Part::LogWait];

impl Part {
    /// Its name in reports: `index`, `validation`, `wait`, `gc`, `log-wait`.
    ///
    /// ```
    /// use multiverse::research::breakdown::{Part, PARTS};
    /// assert_eq!(PARTS.map(Part::name), ["index", "validation", "wait", "gc", "log-wait"]);
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Part::Index => "index",
            Part::Validation => "validation",
            Part::Wait => "wait",
            Part::Gc => "gc",
            Part::LogWait => "log-wait",
        }
    }
}

/// Whether regions are timed (process-wide).
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Switches the timing on or off for every database of the process.
///
/// ```
/// use multiverse::research::breakdown;
/// breakdown::set_enabled(true);
/// assert!(breakdown::enabled());
/// breakdown::set_enabled(false);
/// ```
pub fn set_enabled(on: bool) {
    // Relaxed: a switch for measurements; a region that starts a little
    // before or after it is seen is no error.
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether the timing is on.
///
/// ```
/// assert!(!multiverse::research::breakdown::enabled(), "off by default");
/// ```
pub fn enabled() -> bool {
    // Relaxed: as in `set_enabled`.
    ENABLED.load(Ordering::Relaxed)
}

/// This thread's totals, whether it samples, and whether a region is open
/// on it.
struct Totals {
    ticks: [Cell<u64>; 5],
    /// Regions closed, per part.
    regions: [Cell<u64>; 5],
    sampling: Cell<bool>,
    open: Cell<bool>,
}

thread_local! {
    static TOTALS: Totals = const {
        Totals {
            ticks: [const { Cell::new(0) }; 5],
            regions: [const { Cell::new(0) }; 5],
            sampling: Cell::new(false),
            open: Cell::new(false),
        }
    };
}

/// Whether this thread's regions are timed (while [`enabled`]): a benchmark
/// samples a transaction by switching it on around it.
///
/// ```
/// use multiverse::research::breakdown;
/// breakdown::set_sampling(true);
/// assert!(breakdown::sampling());
/// breakdown::set_sampling(false);
/// ```
pub fn set_sampling(on: bool) {
    TOTALS.with(|t| t.sampling.set(on));
}

/// Whether this thread samples (see [`set_sampling`]); false by default.
///
/// ```
/// assert!(!multiverse::research::breakdown::sampling());
/// ```
pub fn sampling() -> bool {
    TOTALS.with(|t| t.sampling.get())
}

/// The time-stamp counter: `rdtsc` on x86-64, nanoseconds since the first
/// call elsewhere.
///
/// ```
/// let a = multiverse::research::breakdown::now();
/// assert!(multiverse::research::breakdown::now() >= a);
/// ```
#[inline]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` reads a counter; it has no preconditions and is
        // available on every x86-64 CPU.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
        ORIGIN.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
    }
}

/// Ticks of [`now`] per nanosecond, measured once (about 20 ms, against
/// the monotonic clock) on the first call.
///
/// ```
/// assert!(multiverse::research::breakdown::ticks_per_ns() > 0.0);
/// ```
pub fn ticks_per_ns() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        let (t0, c0) = (std::time::Instant::now(), now());
        while t0.elapsed() < std::time::Duration::from_millis(20) {
            std::hint::spin_loop();
        }
        let (ns, ticks) = (t0.elapsed().as_nanos() as f64, now().wrapping_sub(c0) as f64);
        (ticks / ns).max(1e-9)
    })
}

/// This thread's running totals, in ticks, indexed by `Part as usize`.
///
/// ```
/// let t = multiverse::research::breakdown::thread_totals();
/// assert_eq!(t.len(), 5);
/// ```
pub fn thread_totals() -> [u64; 5] {
    TOTALS.with(|t| std::array::from_fn(|i| t.ticks[i].get()))
}

/// How many regions this thread has timed, per part (indexed as
/// [`thread_totals`]): with [`region_cost`], what the timers themselves
/// added to a breakdown.
///
/// ```
/// let n = multiverse::research::breakdown::thread_regions();
/// assert_eq!(n, [0; 5], "no region timed on this thread yet");
/// ```
pub fn thread_regions() -> [u64; 5] {
    TOTALS.with(|t| std::array::from_fn(|i| t.regions[i].get()))
}

/// What one timed region costs, in ticks, measured once (the first call
/// takes about a millisecond): `(inside, whole)`, the ticks an empty region
/// adds to its part, and the ticks it takes from the thread that times it
/// (opening and closing included). A breakdown subtracts `inside` from a
/// part per region, and `whole` from a transaction's measured time, to give
/// the time the transaction would have taken untimed. The timing is
/// switched on for the measurement and restored after it.
///
/// The cost is the least mean over several short batches of empty regions,
/// not the mean over all of them: a fixed cost is what a batch that nobody
/// interrupted shows, while one preemption inside a single long batch (a
/// busy machine) would raise the mean many times over, and subtracting that
/// per region would wipe out whole parts of a breakdown.
///
/// ```
/// let (inside, whole) = multiverse::research::breakdown::region_cost();
/// assert!(inside <= whole);
/// ```
pub fn region_cost() -> (f64, f64) {
    static COST: OnceLock<(f64, f64)> = OnceLock::new();
    *COST.get_or_init(|| {
        const BATCHES: usize = 40;
        const N: u64 = 500;
        let (was_on, was_sampling) = (enabled(), sampling());
        set_enabled(true);
        set_sampling(true);
        let (before, regions) = (thread_totals(), thread_regions());
        let (mut inside, mut whole) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..BATCHES {
            let part_before = thread_totals()[Part::Gc as usize];
            let t0 = now();
            for _ in 0..N {
                drop(std::hint::black_box(span(Part::Gc)));
            }
            let batch = now().wrapping_sub(t0) as f64 / N as f64;
            let batch_inside = thread_totals()[Part::Gc as usize].wrapping_sub(part_before) as f64 / N as f64;
            // Each separately: the least of each is the one least disturbed.
            whole = whole.min(batch);
            inside = inside.min(batch_inside);
        }
        // The measurement is not part of this thread's totals.
        TOTALS.with(|t| {
            t.ticks[Part::Gc as usize].set(before[Part::Gc as usize]);
            t.regions[Part::Gc as usize].set(regions[Part::Gc as usize]);
        });
        set_sampling(was_sampling);
        set_enabled(was_on);
        (inside.min(whole), whole)
    })
}

/// A timed region: counted to its part when dropped (nothing when the
/// timing is off or another region is open on this thread).
pub(crate) struct Span(Option<(u64, Part)>);

impl Span {
    /// No region (to open one later in the same variable).
    pub(crate) const fn none() -> Span {
        Span(None)
    }

    /// Opens a region of `part` here, unless this one is open already.
    #[inline]
    pub(crate) fn start(&mut self, part: Part) {
        if self.0.is_none() {
            *self = span(part);
        }
    }
}

/// Opens a region of `part`.
#[inline]
pub(crate) fn span(part: Part) -> Span {
    if !enabled() {
        return Span(None);
    }
    open(part)
}

#[inline(never)]
fn open(part: Part) -> Span {
    TOTALS.with(|t| if !t.sampling.get() || t.open.replace(true) { Span(None) } else { Span(Some((now(), part))) })
}

impl Drop for Span {
    #[inline]
    fn drop(&mut self) {
        if let Some((start, part)) = self.0 {
            close(start, part);
        }
    }
}

#[inline(never)]
fn close(start: u64, part: Part) {
    let d = now().wrapping_sub(start);
    TOTALS.with(|t| {
        let c = &t.ticks[part as usize];
        c.set(c.get().wrapping_add(d));
        let r = &t.regions[part as usize];
        r.set(r.get() + 1);
        t.open.set(false);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regions add to their part; a region inside another counts to the
    /// outer one only.
    #[test]
    fn regions_add_up_without_nesting() {
        // Other tests in this process may switch the timing: this thread's
        // totals are its own, and the switch is only read at `span`.
        set_enabled(true);
        set_sampling(true);
        let before = thread_totals();
        {
            let _outer = span(Part::Validation);
            let _inner = span(Part::Index);
            let t = std::time::Instant::now();
            while t.elapsed() < std::time::Duration::from_millis(2) {}
        }
        let after = thread_totals();
        set_enabled(false);
        assert_eq!(thread_regions()[Part::Validation as usize], 1, "one region");
        assert_eq!(thread_regions()[Part::Index as usize], 0, "nested: not a region");
        assert!(after[Part::Validation as usize] > before[Part::Validation as usize]);
        assert_eq!(after[Part::Index as usize], before[Part::Index as usize], "nested: not counted");
        let spent = (after[1] - before[1]) as f64 / ticks_per_ns();
        assert!(spent >= 1.5e6, "{spent} ns for a 2 ms region");
        // Off: nothing is counted.
        let before = thread_totals();
        drop(span(Part::Gc));
        assert_eq!(thread_totals(), before);
        // On, but this thread not sampling: nothing either.
        set_enabled(true);
        set_sampling(false);
        drop(span(Part::Gc));
        set_enabled(false);
        assert_eq!(thread_totals(), before);
        // A region's cost: measured without touching this thread's totals.
        let (inside, whole) = region_cost();
        assert!(inside > 0.0 && inside <= whole && whole < 1e6, "{inside} {whole}");
        assert_eq!(thread_totals(), before);
        assert_eq!(thread_regions()[Part::Gc as usize], 0);
    }
}
