//! The crate's public surface, pinned (lib.rs, "What the crate exports").
//!
//! * Every name of the embedding API is imported below: removing one, or
//!   moving it, fails the build of this test.
//! * `the_root_exports_the_listed_names` reads `src/lib.rs` and compares
//!   the names it makes public at the root with the same list: adding one
//!   fails the test until the list (and the crate docs) say so.
//! * The research items are imported from `multiverse::research`, and are
//!   not among the root's names (`research.rs` also has a `compile_fail`
//!   doctest per item).

use std::collections::BTreeSet;
use std::path::Path;

/// Imports each name from the crate root and lists it in `ROOT`.
macro_rules! root {
    ($($name:ident),* $(,)?) => {
        #[allow(unused_imports)]
        use multiverse::{$($name),*};
        /// The crate root's public names.
        const ROOT: &[&str] = &[$(stringify!($name)),*];
    };
}

root! {
    // The database, its options and schema.
    Database, Options, Protocol, Isolation, Durability, OnDamage, RetryPolicy, OrderedMap, POMVCC_TICK,
    TableSpec, HashTableSpec, TableKind, IndexKind, KeyFn, TableId, HashTableId, IndexId, OrderedIndex, MAX_TABLES,
    // Keys.
    IntoKey, Key, KeyBuilder, KeyRange, KEY_MAX, KEY_INLINE,
    // Transactions.
    Transaction, TxnOptions, Mode, AccessSet, Range, Savepoint, CommitInfo, Filter,
    // Errors and counters.
    Error, AbortReason, Result, Stats, AbortCounts,
    // The typed layer.
    TableDefinition, TypedTable, TypedRange,
    // Durability reports.
    RecoveryReport, CheckpointInfo, BackupInfo,
    // Public modules.
    durability, error, key, protocol, research, table, typed,
}

// The public modules' own items that the embedding API needs.
#[allow(unused_imports)]
use multiverse::durability::{salvage, table_names, SalvageReason, SalvageReport, SalvagedRecord, SalvagedWrite};
#[allow(unused_imports)]
use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure, RunStats, Server};
#[allow(unused_imports)]
use multiverse::typed::{encode_key, AsKey, AsValue, TypedKey, TypedKeyRange, Value};

/// Imports each name from `multiverse::research` and lists it in `RESEARCH`.
macro_rules! research {
    ($($name:ident),* $(,)?) => {
        #[allow(unused_imports)]
        use multiverse::research::{$($name),*};
        /// The names that live in `research`, never at the root.
        const RESEARCH: &[&str] = &[$(stringify!($name)),*];
    };
}

research! { breakdown, ceiling, history, Faults, Pinned, Core, Shared, detect_deadlocks }

/// `src/lib.rs` without its comments (doc comments included).
fn lib_code() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let text = std::fs::read_to_string(path).expect("src/lib.rs is readable");
    text.lines().map(|l| l.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// The last segment of a `use` path, or its alias (`a::b as c`: `c`).
fn name_of(path: &str) -> String {
    let path = path.trim();
    let name = match path.rsplit_once(" as ") {
        Some((_, alias)) => alias,
        None => path.rsplit("::").next().unwrap_or(path),
    };
    name.trim().to_string()
}

/// The names `lib.rs` makes public at the root: its `pub use`, `pub mod`
/// and other `pub` items, leaving out what only `cargo test --doc` compiles
/// (`#[cfg(doctest)]`). Restricted visibilities (`pub(crate)`) are not
/// public.
fn root_names(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for stmt in code.split(';') {
        let mut stmt = stmt.trim();
        let mut doctest_only = false;
        // Attributes before the item (and the crate's own, `#![...]`).
        while stmt.starts_with("#[") || stmt.starts_with("#![") {
            let end = stmt.find("]\n").map_or(stmt.len(), |e| e + 1);
            doctest_only |= stmt[..end].contains("cfg(doctest)");
            stmt = stmt[end..].trim_start();
        }
        if doctest_only {
            continue;
        }
        if let Some(path) = stmt.strip_prefix("pub use ") {
            match path.split_once('{') {
                Some((_, group)) => {
                    assert!(!group.contains('{'), "a nested group in lib.rs: extend this parser");
                    let group = group.trim_end().trim_end_matches('}');
                    names.extend(group.split(',').filter(|p| !p.trim().is_empty()).map(name_of));
                }
                None => {
                    names.insert(name_of(path));
                }
            }
            continue;
        }
        let mut words = stmt.split_whitespace();
        if words.next() != Some("pub") {
            continue;
        }
        let kind = words.next();
        let kind = if kind == Some("unsafe") { words.next() } else { kind };
        if let (Some("mod" | "struct" | "enum" | "union" | "fn" | "const" | "static" | "type" | "trait"), Some(name)) =
            (kind, words.next())
        {
            let end = name.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(name.len());
            names.insert(name[..end].to_string());
        }
    }
    names
}

#[test]
fn the_root_exports_the_listed_names() {
    let found = root_names(&lib_code());
    let listed: BTreeSet<String> = ROOT.iter().map(|s| s.to_string()).collect();
    let added: Vec<_> = found.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&found).collect();
    assert!(
        added.is_empty() && gone.is_empty(),
        "the crate root's public names changed: added {added:?}, removed {gone:?}; if on purpose, update \
         the list in tests/public_api.rs and lib.rs's \"What the crate exports\""
    );
}

#[test]
fn research_items_are_not_at_the_root() {
    let found = root_names(&lib_code());
    let at_root: Vec<_> = RESEARCH.iter().filter(|n| found.contains(**n)).collect();
    assert!(at_root.is_empty(), "research items re-exported at the crate root: {at_root:?}");
}

#[test]
fn the_parser_reads_what_lib_rs_writes() {
    let code = "#![warn(missing_docs)]\n\npub mod a;\npub(crate) mod b;\nmod c;\npub use x::{D, e::F as G,\n    H,\n};\npub use y::I;\n\
                pub(crate) use z::{J, K};\n#[cfg(doctest)]\npub struct L;\n#[derive(Debug)]\npub struct M;\n";
    let names: Vec<_> = root_names(code).into_iter().collect();
    assert_eq!(names, ["D", "G", "H", "I", "M", "a"]);
}
