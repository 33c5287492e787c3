//! Instruments for the benchmark (`multiverse bench`) and the checker
//! (`multiverse-check`), apart from the embedding API.
//!
//! Nothing here is needed to embed the engine, and none of it is covered by
//! the stability promise of the embedding API (the crate root and its
//! modules): these are measuring and testing tools, and they change with
//! the experiments that use them.
//!
//! * [`breakdown`]: per-thread timers around index walks, validation,
//!   waits, garbage collection and log waits, for time breakdowns
//!   (`bench --breakdown`).
//! * [`ceiling`]: [`NoCcTable`](ceiling::NoCcTable), one table in the
//!   engine's hash index read and written with no concurrency control, the
//!   ceiling a protocol's throughput is quoted against
//!   (`bench --protocol none`).
//! * [`history`]: what every transaction read, wrote and how it ended,
//!   recorded with [`Options::record_history`](crate::Options::record_history)
//!   or [`Database::set_recording`](crate::Database::set_recording) and
//!   taken with [`Database::take_history`](crate::Database::take_history),
//!   for the offline checker.
//! * [`index_bench`]: a microbenchmark of the ordered index's map, the
//!   skip list against a B+tree with optimistic lock coupling
//!   (`examples/index_bench.rs`).
//! * `Faults`: switches that break a protocol on purpose
//!   (`Options::faults`), so that the checker's tests prove it finds the
//!   anomalies.
//! * [`Pinned`]: one epoch pin around a whole transaction
//!   ([`Database::pin`](crate::Database::pin)), which the benchmark's
//!   drivers hold; read its caveats before holding one elsewhere.
//! * [`detect_deadlocks`]: one run of MV/L's deadlock detector, which
//!   blocked transactions otherwise run by themselves.
//! * `Core` and [`Shared`]: the state behind a
//!   [`Database`](crate::Database) handle (it dereferences to them), which
//!   [`detect_deadlocks`] takes.
//!
//! BOHM's procedure API ([`Database::bohm_run`](crate::Database::bohm_run)
//! and what it takes) is part of the embedding API, in
//! [`protocol::bohm`](crate::protocol::bohm); its run counters'
//! [`breakdown`](crate::protocol::bohm::RunStats::breakdown) field is filled
//! only while [`breakdown`] is on.
//!
//! None of these names is at the crate root:
//!
//! ```compile_fail,E0432
//! use multiverse::Pinned; // it is `multiverse::research::Pinned`
//! ```
//!
//! The files of `breakdown`, `ceiling` and `history` stay beside the
//! engine's other modules (`src/breakdown.rs`, ...): the engine's own code
//! names them `crate::breakdown` and `crate::history`.

#[path = "breakdown.rs"]
pub mod breakdown;
#[path = "ceiling.rs"]
pub mod ceiling;
#[path = "history.rs"]
pub mod history;
#[path = "index/btree/bench.rs"]
pub mod index_bench;

pub use crate::db::{Core, Pinned};
pub use crate::options::Faults;
pub use crate::protocol::mv::lock::deadlock::detect_deadlocks;
pub use crate::shared::Shared;

/// None of the research items may be named at the crate root: one
/// `compile_fail` block per item (`Pinned`'s is in the module docs), since
/// a block naming them all would go on failing to compile, and so passing,
/// while any one of them stayed out of the root.
///
/// ```compile_fail,E0432
/// use multiverse::breakdown;
/// ```
/// ```compile_fail,E0432
/// use multiverse::ceiling;
/// ```
/// ```compile_fail,E0432
/// use multiverse::history;
/// ```
/// ```compile_fail,E0432
/// use multiverse::Faults;
/// ```
/// ```compile_fail,E0432
/// use multiverse::Core;
/// ```
/// ```compile_fail,E0432
/// use multiverse::Shared;
/// ```
/// ```compile_fail,E0432
/// use multiverse::detect_deadlocks;
/// ```
///
/// And each of them is here:
///
/// ```
/// use multiverse::research::{breakdown, ceiling, detect_deadlocks, history, Core, Faults, Pinned, Shared};
/// ```
#[cfg(doctest)]
pub struct NotAtTheRoot;
