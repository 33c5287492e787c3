//! `multiverse-check`: the offline serializability checker for Multiverse
//! histories.
//!
//! A database opened with [`multiverse::Options::record_history`] records
//! what every transaction read (naming the exact version by its writer),
//! wrote and scanned, and how it ended ([`multiverse::history`]). This crate
//!
//! - stores such histories as text and reads them back ([`write_history`],
//!   [`read_history`]; the format is in `docs/HISTORY.md`);
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
//!   the values against the commit-timestamp order ([`check_appends`]).
//!
//! ```
//! use multiverse::history::{History, Op, Outcome, TxnRecord, WriteKind, Writer};
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
mod cycles;
mod deps;
mod format;
mod graph;
mod model;
mod report;

pub use append::{check_appends, AppendMismatch, APPEND_TAG_LEN};
pub use format::{read_history, write_history, ParseError, FORMAT_HEADER, FORMAT_TRAILER};
pub use report::{Anomaly, Class, Limits, Report, Stats};

use multiverse::history::{History, Outcome};
use multiverse::Isolation;

/// Checks `history` against the isolation level `claimed`, with the default
/// [`Limits`]. `report.ok()` is true when no anomaly forbidden at that level
/// was found (see [`Class::forbidden_at`]).
pub fn check(history: &History, claimed: Isolation) -> Report {
    check_with(history, claimed, &Limits::default())
}

/// [`check`] with explicit limits on examples kept and cycle-search work.
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
