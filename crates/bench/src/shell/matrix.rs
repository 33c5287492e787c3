//! `multiverse shell --matrix`: the Hermitage anomaly set run against every
//! protocol at every level it claims, printed as one table (docs/ISOLATION.md
//! is its output, so that the table cannot drift from the code).
//!
//! Each anomaly is a script of two or three sessions in one interleaving,
//! after Hermitage's tests (github.com/ept/hermitage) and Adya's phenomena,
//! with a test of its results that says whether the anomaly happened. A run
//! is classified:
//!
//! * `possible`: the anomaly happened: the transactions it needs committed
//!   and read what it needs them to read (a transaction that read
//!   inconsistent data and then aborted, as Silo's may, shows nothing);
//! * `abort`: it did not, and the engine aborted one of the transactions
//!   (prevented by an abort: a conflict, validation, a deadlock, ...);
//! * `prevented`: it did not, and nothing aborted (a wait, or a snapshot,
//!   kept it out).
//!
//! Runs go through the shell's own driver, so locking protocols wait and
//! queue as in any script; only each line's final result is looked at, not
//! whether it was first reported `blocked`.

use super::driver::Driver;
use super::session::Context;
use multiverse::{Isolation, Options, Protocol};
use std::io;
use std::time::Duration;

/// One anomaly: its script (`L` in a step stands for the level under test)
/// and the test of its results.
struct Anomaly {
    id: &'static str,
    name: &'static str,
    setup: &'static str,
    /// Steps in the order they run: `(session, command)`.
    steps: &'static [(&'static str, &'static str)],
    /// Whether the anomaly happened, given the run.
    happened: fn(&Run) -> bool,
}

/// The results of one run of an anomaly's script.
struct Run<'a> {
    steps: &'a [(&'static str, &'static str)],
    /// Each step's result, by step index.
    results: Vec<String>,
    final_state: String,
}

impl Run<'_> {
    /// The result of `session`'s `n`-th read (`get` or `scan`), from 0.
    fn read(&self, session: &str, n: usize) -> &str {
        self.steps
            .iter()
            .zip(&self.results)
            .filter(|((s, c), _)| *s == session && (c.starts_with("get") || c.starts_with("scan")))
            .nth(n)
            .map_or("", |(_, r)| r.as_str())
    }

    /// The result of `session`'s step that starts with `cmd`.
    fn result_of(&self, session: &str, cmd: &str) -> &str {
        self.steps
            .iter()
            .zip(&self.results)
            .find(|((s, c), _)| *s == session && c.starts_with(cmd))
            .map_or("", |(_, r)| r.as_str())
    }

    fn committed(&self, session: &str) -> bool {
        self.result_of(session, "commit") == "ok"
    }

    /// Whether the engine aborted any transaction of the run.
    fn aborted(&self) -> bool {
        self.results.iter().any(|r| r.starts_with("aborted") || r.starts_with("blocked"))
    }
}

/// The anomalies, in the table's order.
const ANOMALIES: &[Anomaly] = &[
    Anomaly {
        id: "G0",
        name: "dirty write",
        setup: "setup 1=10 2=20",
        steps: &[
            ("t1", "begin L"),
            ("t2", "begin L"),
            ("t1", "update 1 11"),
            ("t2", "update 1 12"),
            ("t1", "update 2 21"),
            ("t1", "commit"),
            ("t2", "update 2 22"),
            ("t2", "commit"),
        ],
        // The rows end with one from each writer.
        happened: |r| matches!(r.final_state.as_str(), "{1:12, 2:21}" | "{1:11, 2:22}"),
    },
    Anomaly {
        id: "G1a",
        name: "aborted read",
        setup: "setup 1=10 2=20",
        steps: &[
            ("t1", "begin L"),
            ("t2", "begin L"),
            ("t1", "update 1 101"),
            ("t2", "get 1"),
            ("t1", "abort"),
            ("t2", "commit"),
        ],
        // Adya's G1a: a committed transaction read an aborted one's write.
        happened: |r| r.committed("t2") && r.read("t2", 0).contains("1:101"),
    },
    Anomaly {
        id: "G1b",
        name: "intermediate read",
        setup: "setup 1=10 2=20",
        steps: &[
            ("t1", "begin L"),
            ("t2", "begin L"),
            ("t1", "update 1 101"),
            ("t2", "get 1"),
            ("t1", "update 1 11"),
            ("t1", "commit"),
            ("t2", "commit"),
        ],
        happened: |r| r.committed("t2") && r.read("t2", 0).contains("1:101"),
    },
    Anomaly {
        id: "G1c",
        name: "circular information flow",
        setup: "setup 1=10 2=20",
        steps: &[
            ("t1", "begin L"),
            ("t2", "begin L"),
            ("t1", "update 1 11"),
            ("t2", "update 2 22"),
            ("t1", "get 2"),
            ("t2", "get 1"),
            ("t1", "commit"),
            ("t2", "commit"),
        ],
        // Each read the other's write before it committed.
        happened: |r| {
            r.committed("t1")
                && r.committed("t2")
                && r.read("t1", 0).contains("2:22")
                && r.read("t2", 0).contains("1:11")
        },
    },
    Anomaly {
        id: "OTV",
        name: "observed transaction vanishes",
        setup: "setup 1=10 2=20",
        steps: &[
            ("t1", "begin L"),
            ("t2", "begin L"),
            ("t3", "begin L"),
            ("t1", "update 1 11"),
            ("t1", "update 2 19"),
            ("t2", "update 1 12"),
            ("t1", "commit"),
            ("t3", "get 1"),
            ("t2", "update 2 18"),
            ("t3", "get 2"),
            ("t2", "commit"),
            ("t3", "get 2"),
            ("t3", "get 1"),
            ("t3", "commit"),
        ],
        // t3 sees t1's write of 1, then t2's of 2 (or the reverse): t1
        // vanished from t3's view.
        happened: |r| {
            let seen: Vec<&str> = (0..4).map(|n| r.read("t3", n)).collect();
            let saw = |v: &str| seen.iter().any(|s| s.contains(v));
            r.committed("t3") && ((saw("1:11") && saw("2:18")) || (saw("1:12") && saw("2:19")))
        },
    },
    Anomaly {
        id: "PMP",
        name: "predicate-many-preceders",
        setup: "setup 1=10 2=20",
        steps: &[
            ("t1", "begin L"),
            ("t2", "begin L"),
            ("t1", "scan where value = 30"),
            ("t2", "insert 3 30"),
            ("t2", "commit"),
            ("t1", "scan where value % 3 = 0"),
            ("t1", "commit"),
        ],
        // The second scan sees the row the first did not.
        happened: |r| r.committed("t1") && r.read("t1", 0) == "{}" && r.read("t1", 1).contains("3:30"),
    },
    Anomaly {
        id: "PMP-write",
        name: "predicate-many-preceders on writes",
        setup: "setup 1=10 2=20",
        steps: &[
            ("t1", "begin L"),
            ("t2", "begin L"),
            ("t1", "update where value % 10 = 0 set value = value + 10"),
            ("t2", "delete where value = 20"),
            ("t1", "commit"),
            ("t2", "commit"),
        ],
        // In either order one row is deleted: {2:30} or {1:20}.
        happened: |r| r.committed("t1") && r.committed("t2") && !matches!(r.final_state.as_str(), "{2:30}" | "{1:20}"),
    },
    Anomaly {
        id: "P4",
        name: "lost update",
        setup: "setup 1=10 2=20",
        steps: &[
            ("t1", "begin L"),
            ("t2", "begin L"),
            ("t1", "get 1"),
            ("t2", "get 1"),
            ("t1", "update 1 11"),
            ("t2", "update 1 11"),
            ("t1", "commit"),
            ("t2", "commit"),
        ],
        // Both wrote 10 + 1 after reading 10, and both committed.
        happened: |r| {
            r.committed("t1") && r.committed("t2") && r.read("t1", 0) == "{1:10}" && r.read("t2", 0) == "{1:10}"
        },
    },
    Anomaly {
        id: "G-single",
        name: "read skew",
        setup: "setup 1=10 2=20",
        steps: &[
            ("t1", "begin L"),
            ("t2", "begin L"),
            ("t1", "get 1"),
            ("t2", "update 1 12"),
            ("t2", "update 2 18"),
            ("t2", "commit"),
            ("t1", "get 2"),
            ("t1", "commit"),
        ],
        happened: |r| r.committed("t1") && r.read("t1", 0) == "{1:10}" && r.read("t1", 1) == "{2:18}",
    },
    Anomaly {
        id: "G-single-pred",
        name: "read skew through a predicate",
        setup: "setup 1=10 2=20",
        steps: &[
            ("t1", "begin L"),
            ("t2", "begin L"),
            ("t1", "scan where value % 5 = 0"),
            ("t2", "update 1 12"),
            ("t2", "update 2 18"),
            ("t2", "commit"),
            ("t1", "scan where value % 3 = 0"),
            ("t1", "commit"),
        ],
        // The first scan saw the old 1 and 2, the second sees the new.
        happened: |r| r.committed("t1") && r.read("t1", 0) == "{1:10, 2:20}" && r.read("t1", 1) != "{}",
    },
    Anomaly {
        id: "G-single-delete",
        name: "read skew through a predicate delete",
        setup: "setup 1=10 2=20",
        steps: &[
            ("t1", "begin L"),
            ("t2", "begin L"),
            ("t1", "get 1"),
            ("t2", "update 1 12"),
            ("t2", "update 2 18"),
            ("t2", "commit"),
            ("t1", "delete where value = 20"),
            ("t1", "commit"),
        ],
        // t1 read 1 before t2, and its delete missed 2 after t2.
        happened: |r| r.committed("t1") && r.read("t1", 0) == "{1:10}" && r.result_of("t1", "delete") == "ok (0 rows)",
    },
    Anomaly {
        id: "G2-item",
        name: "write skew",
        setup: "setup 1=10 2=20",
        steps: &[
            ("t1", "begin L"),
            ("t2", "begin L"),
            ("t1", "get 1 2"),
            ("t2", "get 1 2"),
            ("t1", "update 1 11"),
            ("t2", "update 2 21"),
            ("t1", "commit"),
            ("t2", "commit"),
        ],
        happened: |r| {
            r.committed("t1")
                && r.committed("t2")
                && r.read("t1", 0) == "{1:10, 2:20}"
                && r.read("t2", 0) == "{1:10, 2:20}"
        },
    },
    Anomaly {
        id: "G2",
        name: "anti-dependency cycle through predicates",
        setup: "setup 1=10 2=20",
        steps: &[
            ("t1", "begin L"),
            ("t2", "begin L"),
            ("t1", "scan where value % 3 = 0"),
            ("t2", "scan where value % 3 = 0"),
            ("t1", "insert 3 30"),
            ("t2", "insert 4 42"),
            ("t1", "commit"),
            ("t2", "commit"),
        ],
        happened: |r| r.committed("t1") && r.committed("t2") && r.read("t1", 0) == "{}" && r.read("t2", 0) == "{}",
    },
    Anomaly {
        id: "read-only",
        name: "read-only anomaly (Fekete et al.)",
        setup: "setup 1=0 2=0",
        steps: &[
            ("t2", "begin L"),
            ("t2", "get 1 2"),
            ("t1", "begin L"),
            ("t1", "update 2 20"),
            ("t1", "commit"),
            ("t3", "begin L"),
            ("t3", "get 1 2"),
            ("t3", "commit"),
            ("t2", "update 1 -11"),
            ("t2", "commit"),
        ],
        // t3 saw the deposit but not the withdrawal that read before it.
        happened: |r| {
            r.committed("t1")
                && r.committed("t2")
                && r.committed("t3")
                && r.read("t2", 0) == "{1:0, 2:0}"
                && r.read("t3", 0) == "{1:0, 2:20}"
        },
    },
];

/// What a run of an anomaly showed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Cell {
    Prevented,
    Abort,
    Possible,
}

impl Cell {
    fn text(self) -> &'static str {
        match self {
            Cell::Prevented => "prevented",
            Cell::Abort => "abort",
            Cell::Possible => "**possible**",
        }
    }
}

/// A column: a protocol at a level.
pub(crate) struct Column {
    pub(crate) protocol: Protocol,
    pub(crate) level: Isolation,
}

/// Every protocol at every level it claims, in `Protocol::ALL` order.
pub(crate) fn columns() -> Vec<Column> {
    Protocol::ALL
        .iter()
        .flat_map(|&p| p.isolation_levels().iter().map(move |&l| Column { protocol: p, level: l }))
        .collect()
}

/// Runs one anomaly against one column.
fn run_one(a: &Anomaly, c: &Column, base: &Options, grace: Duration) -> Result<Cell, String> {
    let ctx = Context::open(Options { protocol: c.protocol, ..base.clone() })?;
    let mut driver = Driver::new(ctx, grace, io::sink());
    let level = c.level.name();
    let lines = std::iter::once(a.setup.to_string()).chain(a.steps.iter().map(|(s, cmd)| {
        if *cmd == "begin L" {
            format!("{s} begin {level}")
        } else {
            format!("{s} {cmd}")
        }
    }));
    for (seq, line) in lines.enumerate() {
        driver.line(seq, &line).map_err(|e| e.to_string())?;
    }
    let (results, final_state) = driver.finish_with_results().map_err(|e| e.to_string())?;
    let results: Vec<String> = (1..=a.steps.len()).map(|i| results.get(&i).cloned().unwrap_or_default()).collect();
    // A user error (a row another transaction deleted: `key not found`) is
    // part of the outcome; the scripts themselves parse (a test says so).
    let run = Run { steps: a.steps, results, final_state };
    Ok(if (a.happened)(&run) {
        Cell::Possible
    } else if run.aborted() {
        Cell::Abort
    } else {
        Cell::Prevented
    })
}

/// The whole matrix: one row per anomaly, one cell per column. The runs go
/// in parallel, a thread per column (each on its own database): most of a
/// locking protocol's time is waiting.
pub(crate) fn run(base: &Options, grace: Duration) -> Result<Vec<Vec<Cell>>, String> {
    let cols = columns();
    let by_column: Vec<Result<Vec<Cell>, String>> = std::thread::scope(|s| {
        let runs: Vec<_> = cols
            .iter()
            .map(|c| s.spawn(move || ANOMALIES.iter().map(|a| run_one(a, c, base, grace)).collect()))
            .collect();
        runs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a matrix run panicked".into()))).collect()
    });
    let by_column = by_column.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok((0..ANOMALIES.len()).map(|a| by_column.iter().map(|col| col[a]).collect()).collect())
}

/// The matrix as markdown: a header, the table, its legend.
pub(crate) fn markdown(cells: &[Vec<Cell>]) -> String {
    let cols = columns();
    let mut out = String::new();
    let short = |l: Isolation| match l {
        Isolation::ReadCommitted => "RC",
        Isolation::Snapshot => "SI",
        Isolation::RepeatableRead => "RR",
        Isolation::Serializable => "SER",
    };
    out.push_str("| anomaly |");
    for c in &cols {
        out.push_str(&format!(" {} {} |", c.protocol.name(), short(c.level)));
    }
    out.push_str("\n| --- |");
    out.push_str(&" --- |".repeat(cols.len()));
    out.push('\n');
    for (a, row) in ANOMALIES.iter().zip(cells) {
        out.push_str(&format!("| {} ({}) |", a.id, a.name));
        for cell in row {
            out.push_str(&format!(" {} |", cell.text()));
        }
        out.push('\n');
    }
    out
}

/// docs/ISOLATION.md: an introduction, the table, what each anomaly's
/// script does, and where a level differs from PostgreSQL's on purpose.
pub(crate) fn document(cells: &[Vec<Cell>]) -> String {
    let mut out = String::from(
        "# Isolation: every protocol against the Hermitage anomalies\n\n\
         Generated by `multiverse shell --matrix > docs/ISOLATION.md` (`crates/bench/src/shell/matrix.rs`); \
         `cargo test -p multiverse-bench` checks that this file is its output. Each anomaly is a \
         script of two or three sessions in one interleaving, after Hermitage's tests \
         (github.com/ept/hermitage) and Adya's phenomena, run through the shell (locking protocols \
         wait and queue as in any script) against every protocol at every level it claims. A cell \
         is **possible** when the anomaly happened, `abort` when it did not because the engine \
         aborted a transaction, `prevented` when it did not and nothing aborted (a wait or a \
         snapshot kept it out). Levels: RC read committed, SI snapshot, RR repeatable read, SER \
         serializable.\n\n",
    );
    out.push_str(&markdown(cells));
    out.push_str("\n## The scripts\n\n");
    for a in ANOMALIES {
        let steps: Vec<String> = a.steps.iter().map(|(s, c)| format!("{s} {c}")).collect();
        out.push_str(&format!("- **{}** ({}): `{}`; `{}`.\n", a.id, a.name, a.setup, steps.join("`, `")));
    }
    out.push_str(FOOTNOTES);
    out
}

/// Where a level differs from PostgreSQL's on purpose.
const FOOTNOTES: &str = "
## Where a level differs from PostgreSQL's

- Hekaton's repeatable read (mv-occ, mv-lock, mv-mixed RR) validates the rows read but not
  the ranges scanned: phantoms (PMP, G2 through predicates) are allowed, as the paper defines
  it (VLDB 2011 section 2.5); PostgreSQL's repeatable read is snapshot isolation.
- POMVCC's read committed may read an older consistent snapshot than the latest commit (its
  commit timestamp is shared by non-conflicting transactions and advanced on conflicts): a
  commit can be invisible to a later reader until the timestamps move (the HISTORICAL READ of
  section VI.C).
- Silo reads without locks and validates at commit: a transaction may read inconsistent data
  while it runs, but one that did fails validation and aborts, so no committed transaction
  shows it (`abort` cells).
- 1V locking has no snapshot; its repeatable read holds row locks, not range locks, so
  predicate anomalies remain possible there.
- BOHM runs interactive transactions one at a time, and 2pl-ordered runs undeclared ones as 1V
  locking at serializable.
";

#[cfg(test)]
mod tests {
    use super::super::parse::{parse_line, Line};
    use super::*;

    /// Every step of every anomaly is a command the shell parses.
    #[test]
    fn every_script_parses() {
        for a in ANOMALIES {
            for line in std::iter::once(a.setup.to_string()).chain(a.steps.iter().map(|(s, c)| format!("{s} {c}"))) {
                let line = line.replace("begin L", "begin serializable");
                assert!(matches!(parse_line(&line), Line::Command { .. }), "{}: {line}", a.id);
            }
        }
    }
}
