//! Observability: metrics through the `metrics` facade and
//! spans through `tracing`, each behind a cargo feature of the same name,
//! off by default. Everything the rest of the engine calls is here, so
//! that no other file carries a `cfg`: with a feature off its types are
//! zero-sized and its functions empty and inlined, and nothing of it is
//! compiled in.
//!
//! **Metrics** (`metrics` feature). A database registers its handles once,
//! when it is created ([`Metrics::new`], with the recorder installed at
//! that moment: install it first), and then only increments them: no key
//! is built or hashed, and nothing allocated, per transaction. They are
//! emitted per transaction (commit, abort) or per background event (a
//! garbage collection, a log round, a checkpoint), never per record
//! access. Each metric carries the label `protocol` (the
//! [`Protocol::name`](crate::Protocol::name) of the database); aborts
//! also `reason` ([`AbortReason::name`]). The names and what they count
//! are listed in `docs/ARCHITECTURE.md`, "Observability".
//!
//! **Spans** (`tracing` feature). [`span!`] opens a span and returns a
//! [`Span`] guard (zero-sized without the feature, and then the span's
//! fields are not even evaluated); [`Span::end`] closes it before the end
//! of its scope, for phases that follow one another.

use crate::error::AbortReason;

/// When something began (a transaction, a commit): an [`Instant`] with the
/// `metrics` feature, nothing without.
///
/// [`Instant`]: std::time::Instant
#[derive(Clone, Copy, Debug)]
pub(crate) struct Started {
    #[cfg(feature = "metrics")]
    at: std::time::Instant,
}

impl Started {
    #[inline(always)]
    pub(crate) fn now() -> Started {
        Started {
            #[cfg(feature = "metrics")]
            at: std::time::Instant::now(),
        }
    }

    /// Seconds since then.
    #[cfg(feature = "metrics")]
    #[inline]
    fn seconds(self) -> f64 {
        self.at.elapsed().as_secs_f64()
    }

    /// Seconds from then to `now`.
    #[cfg(feature = "metrics")]
    #[inline]
    fn seconds_to(self, now: std::time::Instant) -> f64 {
        now.saturating_duration_since(self.at).as_secs_f64()
    }
}

/// An entered span, exited when dropped or ended ([`span!`]).
#[must_use = "a span is exited when its guard drops"]
pub(crate) struct Span {
    #[cfg(feature = "tracing")]
    pub(crate) _entered: tracing::span::EnteredSpan,
}

impl Span {
    /// Exits the span now (the next phase's span is then not its child).
    #[inline(always)]
    pub(crate) fn end(self) {}
}

/// `span!(LEVEL, "name", fields...)`: enters a `tracing` span of level
/// `trace`, `debug` or `info` (the fields as `tracing`'s span macros take
/// them) and returns its [`Span`] guard. Without the `tracing` feature it
/// expands to a zero-sized guard and the fields are not evaluated.
macro_rules! span {
    ($level:ident, $name:literal $(, $($fields:tt)*)?) => {{
        #[cfg(feature = "tracing")]
        let s = $crate::obs::Span {
            _entered: $crate::obs::span!(@make $level, $name $(, $($fields)*)?).entered(),
        };
        #[cfg(not(feature = "tracing"))]
        let s = $crate::obs::Span {};
        s
    }};
    (@make trace, $($t:tt)*) => { ::tracing::trace_span!($($t)*) };
    (@make debug, $($t:tt)*) => { ::tracing::debug_span!($($t)*) };
    (@make info, $($t:tt)*) => { ::tracing::info_span!($($t)*) };
}
pub(crate) use span;

/// The outcomes of the transaction-duration histogram.
#[cfg(feature = "metrics")]
const OUTCOMES: [&str; 2] = ["committed", "aborted"];

/// A database's metric handles (module docs), shared with its garbage
/// collector and its log; zero-sized without the `metrics` feature.
#[derive(Clone, Default)]
pub(crate) struct Metrics {
    #[cfg(feature = "metrics")]
    h: Option<std::sync::Arc<Handles>>,
}

#[cfg(feature = "metrics")]
struct Handles {
    commits: metrics::Counter,
    aborts: [metrics::Counter; AbortReason::COUNT],
    commit_seconds: metrics::Histogram,
    /// Indexed like [`OUTCOMES`].
    txn_seconds: [metrics::Histogram; 2],
    gc_collections: metrics::Counter,
    gc_reclaimed: metrics::Counter,
    memory_used: metrics::Gauge,
    wal_bytes: metrics::Counter,
    wal_flushes: metrics::Counter,
    wal_flush_seconds: metrics::Histogram,
    checkpoints: metrics::Counter,
    checkpoint_seconds: metrics::Histogram,
}

impl Metrics {
    /// Registers the handles of a database running `protocol` with the
    /// recorder installed now (the global one, or a thread's local one).
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn new(protocol: &'static str) -> Metrics {
        #[cfg(feature = "metrics")]
        {
            use metrics::{counter, gauge, histogram};
            describe();
            let p = protocol;
            let h = Handles {
                commits: counter!("multiverse_commits_total", "protocol" => p),
                aborts: AbortReason::ALL
                    .map(|r| counter!("multiverse_aborts_total", "protocol" => p, "reason" => r.name())),
                commit_seconds: histogram!("multiverse_commit_duration_seconds", "protocol" => p),
                txn_seconds: OUTCOMES
                    .map(|o| histogram!("multiverse_transaction_duration_seconds", "protocol" => p, "outcome" => o)),
                gc_collections: counter!("multiverse_gc_collections_total", "protocol" => p),
                gc_reclaimed: counter!("multiverse_gc_versions_reclaimed_total", "protocol" => p),
                memory_used: gauge!("multiverse_memory_used_bytes", "protocol" => p),
                wal_bytes: counter!("multiverse_wal_bytes_total", "protocol" => p),
                wal_flushes: counter!("multiverse_wal_flushes_total", "protocol" => p),
                wal_flush_seconds: histogram!("multiverse_wal_flush_duration_seconds", "protocol" => p),
                checkpoints: counter!("multiverse_checkpoints_total", "protocol" => p),
                checkpoint_seconds: histogram!("multiverse_checkpoint_duration_seconds", "protocol" => p),
            };
            Metrics { h: Some(std::sync::Arc::new(h)) }
        }
        #[cfg(not(feature = "metrics"))]
        Metrics {}
    }

    /// A transaction committed (its durations: [`Self::commit_call`]).
    #[inline(always)]
    pub(crate) fn committed(&self) {
        #[cfg(feature = "metrics")]
        if let Some(h) = &self.h {
            h.commits.increment(1);
        }
    }

    /// A transaction that began at `began` aborted for `reason`.
    #[inline(always)]
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn aborted(&self, began: Started, reason: AbortReason) {
        #[cfg(feature = "metrics")]
        if let Some(h) = &self.h {
            h.aborts[reason as usize].increment(1);
            h.txn_seconds[1].record(began.seconds());
        }
    }

    /// A call of `Transaction::commit` that began at `started`, of a
    /// transaction that began at `began`, succeeded: both durations, from
    /// one reading of the clock.
    #[inline(always)]
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn commit_call(&self, began: Started, started: Started) {
        #[cfg(feature = "metrics")]
        if let Some(h) = &self.h {
            let now = std::time::Instant::now();
            h.commit_seconds.record(started.seconds_to(now));
            h.txn_seconds[0].record(began.seconds_to(now));
        }
    }

    /// A batch of transactions that ran elsewhere (BOHM's pipeline):
    /// `committed` commits and `aborted` aborts (`reason`), and one
    /// duration per transaction.
    #[inline(always)]
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn batch(&self, committed: u64, aborted: u64, reason: AbortReason) {
        #[cfg(feature = "metrics")]
        if let Some(h) = &self.h {
            h.commits.increment(committed);
            h.aborts[reason as usize].increment(aborted);
        }
    }

    /// One transaction of a batch (see [`Self::batch`]) took `d` from its
    /// submission to its outcome.
    #[inline(always)]
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn batch_txn(&self, committed: bool, d: std::time::Duration) {
        #[cfg(feature = "metrics")]
        if let Some(h) = &self.h {
            h.txn_seconds[usize::from(!committed)].record(d.as_secs_f64());
        }
    }

    /// A garbage collection reclaimed `n` versions (called when `n > 0`).
    #[inline(always)]
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn collected(&self, n: usize) {
        #[cfg(feature = "metrics")]
        if let Some(h) = &self.h {
            h.gc_collections.increment(1);
            h.gc_reclaimed.increment(n as u64);
        }
    }

    /// Bytes of user data held (see `memory`), as of now. `used` is
    /// called only with the feature on and a recorder.
    #[inline(always)]
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn memory_used(&self, used: impl FnOnce() -> u64) {
        #[cfg(feature = "metrics")]
        if let Some(h) = &self.h {
            h.memory_used.set(used() as f64);
        }
    }

    /// A log round wrote `bytes` and synced once, from `started`.
    #[inline(always)]
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn wal_flushed(&self, bytes: u64, started: Started) {
        #[cfg(feature = "metrics")]
        if let Some(h) = &self.h {
            h.wal_bytes.increment(bytes);
            h.wal_flushes.increment(1);
            h.wal_flush_seconds.record(started.seconds());
        }
    }

    /// A checkpoint begun at `started` was written.
    #[inline(always)]
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(crate) fn checkpointed(&self, started: Started) {
        #[cfg(feature = "metrics")]
        if let Some(h) = &self.h {
            h.checkpoints.increment(1);
            h.checkpoint_seconds.record(started.seconds());
        }
    }
}

/// Units and descriptions, for recorders that export them.
#[cfg(feature = "metrics")]
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!("multiverse_commits_total", Unit::Count, "Committed transactions.");
    describe_counter!("multiverse_aborts_total", Unit::Count, "Aborted transactions, by reason.");
    describe_histogram!(
        "multiverse_commit_duration_seconds",
        Unit::Seconds,
        "Duration of successful Transaction::commit calls (validation, dependencies, log, waits)."
    );
    describe_histogram!(
        "multiverse_transaction_duration_seconds",
        Unit::Seconds,
        "Duration of transactions from begin to commit or abort, by outcome."
    );
    describe_counter!("multiverse_gc_collections_total", Unit::Count, "Garbage collections that reclaimed versions.");
    describe_counter!(
        "multiverse_gc_versions_reclaimed_total",
        Unit::Count,
        "Versions reclaimed by garbage collection."
    );
    describe_gauge!(
        "multiverse_memory_used_bytes",
        Unit::Bytes,
        "Bytes of user data held, as counted against Options::memory_limit (set at garbage collections)."
    );
    describe_counter!("multiverse_wal_bytes_total", Unit::Bytes, "Bytes written to the redo log.");
    describe_counter!("multiverse_wal_flushes_total", Unit::Count, "Log rounds written and synced.");
    describe_histogram!(
        "multiverse_wal_flush_duration_seconds",
        Unit::Seconds,
        "Duration of log rounds' write and sync."
    );
    describe_counter!("multiverse_checkpoints_total", Unit::Count, "Checkpoints written.");
    describe_histogram!("multiverse_checkpoint_duration_seconds", Unit::Seconds, "Duration of checkpoints.");
}
