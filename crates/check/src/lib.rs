//! `multiverse-check`: the offline serializability checker for Multiverse
//! histories.
//!
//! A database opened with [`multiverse::Options::record_history`] records
//! what every transaction read (naming the exact version by its writer),
//! wrote and scanned, and how it ended ([`multiverse::research::history`]). This crate
//!
//! - stores such histories as text and reads them back ([`write_history`],
//!   [`read_history`]; the format is in `docs/CHECKER.md`);
//! - checks a history against the isolation level it claims ([`check`]): it
//!   builds Adya's direct serialization graph over the committed
//!   transactions (ww, wr, item and predicate rw edges, with the version
//!   order of every key taken from its writers' commit timestamps), finds its
//!   cycles (iterative Tarjan, then a short cycle per component by
//!   breadth-first search) and classifies them as G0, G1c, G-single, G2-item
//!   or G2; it also checks G1a (aborted reads), G1b (intermediate reads),
//!   unknown versions and, for snapshot isolation, the snapshot read rule
//!   and first-committer-wins;
//! - cross-checks, for list-append workloads, the version order implied by
//!   the values against the commit-timestamp order ([`check_appends`]);
//! - checks list-append histories observed from outside other stores, which
//!   record no versions, by inferring each key's version order from the
//!   lists themselves ([`check_observed`], in the manner of Jepsen's Elle).
//!
//! ```
//! use multiverse::research::history::{History, Op, Outcome, TxnRecord, WriteKind, Writer};
//! use multiverse::{Isolation, Key};
//!
//! let w = TxnRecord {
//!     id: 1, isolation: Isolation::Serializable, begin_ts: 2, commit_ts: Some(4),
//!     outcome: Outcome::Committed, locking: false, snapshot: false,
//!     ops: vec![Op::Write { table: 0, key: Key::from(7), kind: WriteKind::Insert, value: vec![1] }],
//! };
//! let r = TxnRecord {
//!     id: 2, isolation: Isolation::Serializable, begin_ts: 6, commit_ts: Some(6),
//!     outcome: Outcome::Committed, locking: false, snapshot: false,
//!     ops: vec![Op::Read { table: 0, key: Key::from(7), version: Some((Writer::Committed(4), vec![1])) }],
//! };
//! let history = History { txns: vec![w, r] };
//! let report = multiverse_check::check(&history, Isolation::Serializable);
//! assert!(report.ok(), "{report}");
//!
//! let mut text = Vec::new();
//! multiverse_check::write_history(&history, &mut text).unwrap();
//! assert_eq!(multiverse_check::read_history(&text[..]).unwrap(), history);
//! ```

#![warn(missing_docs)]

mod append;
mod blackbox;
mod cycles;
mod deps;
mod format;
mod graph;
mod model;
mod report;

pub use append::{check_appends, AppendMismatch, APPEND_TAG_LEN};
pub use blackbox::{
    check_observed, check_observed_ranges, check_observed_with, ObservedOp, ObservedRange, ObservedRanges, ObservedTxn,
};
pub use format::{read_history, write_history, ParseError, FORMAT_HEADER, FORMAT_TRAILER};
pub use report::{Anomaly, Class, Limits, Report, Stats};

use multiverse::research::history::{History, Outcome};
use multiverse::Isolation;

/// Checks `history` against the isolation level `claimed`, with the default
/// [`Limits`]. `report.ok()` is true when no anomaly forbidden at that level
/// was found (see [`Class::forbidden_at`]).
///
/// ```
/// use multiverse::{Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options { record_history: true, ..Options::default() }).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 16)).unwrap();
/// db.run(Isolation::Serializable, |tx| tx.insert(t, Key::from(1), &[0])).unwrap();
/// for _ in 0..3 {
///     db.run(Isolation::Serializable, |tx| {
///         let v = tx.get(t, &Key::from(1))?.unwrap();
///         tx.update(t, &Key::from(1), &[v[0] + 1])
///     })
///     .unwrap();
/// }
/// let report = multiverse_check::check(&db.take_history(), Isolation::Serializable);
/// assert!(report.ok(), "{report}");
/// assert_eq!(report.stats.committed, 4);
/// ```
pub fn check(history: &History, claimed: Isolation) -> Report {
    check_with(history, claimed, &Limits::default())
}

/// [`check`] with explicit limits on examples kept and cycle-search work.
///
/// ```
/// use multiverse::research::history::{History, Op, Outcome, TxnRecord, WriteKind, Writer};
/// use multiverse::{Isolation, Key};
/// use multiverse_check::{check_with, Class, Limits};
///
/// // Write skew: each reads the row the other writes, both commit.
/// let txn = |id, ts, read: u64, write: u64| TxnRecord {
///     id, isolation: Isolation::Serializable, begin_ts: 10, commit_ts: Some(ts),
///     outcome: Outcome::Committed, locking: false, snapshot: false,
///     ops: vec![
///         Op::Read { table: 0, key: Key::from(read), version: Some((Writer::Committed(1), vec![0])) },
///         Op::Write { table: 0, key: Key::from(write), kind: WriteKind::Update, value: vec![1] },
///     ],
/// };
/// let history = History { txns: vec![txn(1, 11, 7, 8), txn(2, 12, 8, 7)] };
/// let limits = Limits { examples_per_class: 1, ..Limits::default() };
/// let report = check_with(&history, Isolation::Serializable, &limits);
/// assert_eq!(report.count(Class::G2Item), 1);
/// assert!(!report.ok());
/// // Snapshot isolation allows it.
/// assert!(check_with(&history, Isolation::Snapshot, &limits).ok());
/// ```
pub fn check_with(history: &History, claimed: Isolation, limits: &Limits) -> Report {
    let mut found = report::Findings::new(limits.examples_per_class);
    let m = model::Model::build(history, &mut found);
    let edges = deps::Deps::new(&m, &mut found, claimed).run();
    let g = graph::Graph::build(history.txns.len(), edges);
    let committed = history.txns.iter().filter(|t| t.outcome == Outcome::Committed).count();
    let mut stats = Stats {
        txns: history.txns.len(),
        committed,
        aborted: history.txns.len() - committed,
        keys: m.key_count(),
        edges: g.counts(),
        ..Stats::default()
    };
    let mut search = graph::Search::new(g.nodes(), limits.search_budget);
    cycles::find_cycles(&m, &g, &mut search, &mut found, &mut stats, claimed);
    found.into_report(claimed, stats)
}
