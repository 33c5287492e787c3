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
//! whether it was first reported `blocked`. A run whose order rested on the
//! driver's judgment that a command waits is repeated until two runs agree
//! (see `run_one`): on a loaded machine a command can look as if it waited.

use super::driver::Driver;
use super::session::Context;
use super::store;
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
        // After a read that showed one of t2's writes, a later read shows
        // t1's write of the other row, which t2 overwrote: t2 vanished from
        // t3's view (Hermitage's test looks at the order too; reads of t1's
        // rows followed by reads of t2's are each the latest commit).
        happened: |r| {
            let seen: Vec<&str> = (0..4).map(|n| r.read("t3", n)).collect();
            let t2_then_t1 = (0..4).any(|i| {
                let later = |v: &str| seen[i + 1..].iter().any(|s| s.contains(v));
                (seen[i].contains("1:12") && later("2:19")) || (seen[i].contains("2:18") && later("1:11"))
            });
            r.committed("t3") && t2_then_t1
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

/// What a column runs on.
#[derive(Clone, Copy)]
pub(crate) enum Engine {
    /// A Multiverse protocol.
    Protocol(Protocol),
    /// Another embedded store, by name (`multiverse_peers::names`).
    Store(&'static str),
}

/// A column: a protocol or a store at a level.
pub(crate) struct Column {
    pub(crate) engine: Engine,
    pub(crate) level: Isolation,
}

impl Column {
    /// The protocol's or store's name.
    fn name(&self) -> &'static str {
        match self.engine {
            Engine::Protocol(p) => p.name(),
            Engine::Store(s) => s,
        }
    }
}

/// Every protocol at every level it claims, in `Protocol::ALL` order.
pub(crate) fn columns() -> Vec<Column> {
    Protocol::ALL
        .iter()
        .flat_map(|&p| p.isolation_levels().iter().map(move |&l| Column { engine: Engine::Protocol(p), level: l }))
        .collect()
}

/// Every other store at every level it offers, in `multiverse_peers::names`
/// order; an error naming the feature of a store not compiled in.
pub(crate) fn store_columns() -> Result<Vec<Column>, String> {
    let mut cols = Vec::new();
    for &name in multiverse_peers::names() {
        let (_, levels) = crate::bench::peers::resolve_level(name, None)?;
        cols.extend(levels.iter().map(|&l| Column { engine: Engine::Store(name), level: l }));
    }
    Ok(cols)
}

/// The options of every matrix run. Locks are broken by detection here; a
/// long timeout keeps a wait that spans a few lines of a loaded run from
/// ending in a timeout. POMVCC's timestamps move only on conflicts (no
/// periodic advance within a run), so its reads do not depend on timing.
pub(crate) fn base_options() -> Options {
    Options { lock_timeout: Duration::from_secs(10), pomvcc_interval: Duration::from_secs(3600), ..Options::default() }
}

/// How many times a cell's anomaly runs at most before its result is
/// settled (see [`run_one`]).
const MAX_RUNS: usize = 3;

/// Runs one anomaly against one column. A run whose order rested on the
/// driver's judgment that a command waits (the driver's
/// [`Finished::judged_waits`](super::driver::Finished)) is repeated until
/// two runs agree: a real wait shows the same way in every run, while a
/// command that only looked as if it waited (its thread stuck for a long
/// moment behind the machine's load) is very unlikely to look so again, at
/// the same step. A run with no such judgment ran in script order and
/// stands alone.
fn run_one(a: &Anomaly, c: &Column, base: &Options, grace: Duration) -> Result<Cell, String> {
    let mut seen = Vec::with_capacity(MAX_RUNS);
    for _ in 0..MAX_RUNS {
        let (cell, judged_waits) = run_once(a, c, base, grace)?;
        if judged_waits == 0 || seen.contains(&cell) {
            return Ok(cell);
        }
        seen.push(cell);
    }
    Err(format!("{} under {} {}: {MAX_RUNS} runs gave {seen:?}, no two alike", a.id, c.name(), c.level.name()))
}

/// One run of an anomaly against a column: its cell, and how many times
/// the driver judged that a command waits.
fn run_once(a: &Anomaly, c: &Column, base: &Options, grace: Duration) -> Result<(Cell, usize), String> {
    let ctx = match c.engine {
        Engine::Protocol(protocol) => Context::open(Options { protocol, ..base.clone() })?,
        Engine::Store(name) => store::open(name, base.lock_timeout)?,
    };
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
    let done = driver.finish_with_results().map_err(|e| e.to_string())?;
    // The harness's own failures are no outcome of the anomaly: say so
    // rather than classify them.
    let setup = done.results.get(&0).map_or("", String::as_str);
    let internal = done.results.values().find(|r| r.starts_with("error: internal error"));
    if setup != "ok" || internal.is_some() {
        return Err(format!(
            "{} under {} {level}: the run failed (setup -> {setup}; {})",
            a.id,
            c.name(),
            internal.map_or("no internal error", String::as_str)
        ));
    }
    let results: Vec<String> = (1..=a.steps.len()).map(|i| done.results.get(&i).cloned().unwrap_or_default()).collect();
    // A user error (a row another transaction deleted: `key not found`) is
    // part of the outcome; the scripts themselves parse (a test says so).
    let run = Run { steps: a.steps, results, final_state: done.state };
    let cell = if (a.happened)(&run) {
        Cell::Possible
    } else if run.aborted() {
        Cell::Abort
    } else {
        Cell::Prevented
    };
    Ok((cell, done.judged_waits))
}

/// The whole matrix: one row per anomaly, one cell per column. The runs go
/// in parallel, a thread per column (each on its own database): most of a
/// locking protocol's time is waiting.
pub(crate) fn run(cols: &[Column], base: &Options, grace: Duration) -> Result<Vec<Vec<Cell>>, String> {
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
pub(crate) fn markdown(cols: &[Column], cells: &[Vec<Cell>]) -> String {
    let mut out = String::new();
    let short = |l: Isolation| match l {
        Isolation::ReadCommitted => "RC",
        Isolation::Snapshot => "SI",
        Isolation::RepeatableRead => "RR",
        Isolation::Serializable => "SER",
    };
    out.push_str("| anomaly |");
    for c in cols {
        out.push_str(&format!(" {} {} |", c.name(), short(c.level)));
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
         serializable. The other embedded stores (SurrealMX, RocksDB, fjall, redb, SQLite) run the \
         same scripts in [ISOLATION-PEERS.md](ISOLATION-PEERS.md) (`--matrix --stores`).\n\n",
    );
    out.push_str(&markdown(&columns(), cells));
    out.push_str(&scripts());
    out.push_str(FOOTNOTES);
    out
}

/// The section that lists each anomaly's script.
fn scripts() -> String {
    let mut out = String::from("\n## The scripts\n\n");
    for a in ANOMALIES {
        let steps: Vec<String> = a.steps.iter().map(|(s, c)| format!("{s} {c}")).collect();
        out.push_str(&format!("- **{}** ({}): `{}`; `{}`.\n", a.id, a.name, a.setup, steps.join("`, `")));
    }
    out
}

/// docs/ISOLATION-PEERS.md: the same anomalies against the other embedded
/// stores, with how it was made, the stores' versions and what stands out.
pub(crate) fn stores_document(cells: &[Vec<Cell>]) -> String {
    let mut out = String::from(
        "# Isolation: the other embedded stores against the Hermitage anomalies\n\n\
         Generated by `multiverse shell --matrix --stores > docs/ISOLATION-PEERS.md` \
         (`crates/bench/src/shell/matrix.rs`) in a build with `--features peers`; `cargo test -p \
         multiverse-bench --features peers --test peers_shell` checks that this file is its output. \
         The anomalies and their scripts are those of [ISOLATION.md](ISOLATION.md), run through \
         `multiverse shell --protocol STORE` against each store of [PEERS.md](PEERS.md) at every \
         level it offers: the store's own transactions, through the adapters of `crates/peers`, \
         with a store's waits (RocksDB's pessimistic locks, redb's and SQLite's single writer) shown \
         and queued as for Multiverse's locking protocols. A cell is **possible** when the anomaly \
         happened, `abort` when it did not because the store aborted a transaction (a conflict, a \
         deadlock, a lock timeout), `prevented` when it did not and nothing aborted (a wait or a \
         snapshot kept it out). Levels: RC read committed, SI snapshot, RR repeatable read, SER \
         serializable.\n\n\
         Stores: SurrealMX 1.1.0; RocksDB 7.8.3 (Debian's library, crate `rocksdb` 0.20.1), its \
         `OptimisticTransactionDB` and its `TransactionDB`; fjall 3.1.13; redb 5.0.0; SQLite 3.54.1 \
         (crate `rusqlite` 0.43.0, bundled).\n\n",
    );
    out.push_str(&markdown(&store_columns().unwrap_or_default(), cells));
    out.push_str(STORE_NOTES);
    out.push_str(&scripts());
    out
}

/// What stands out in docs/ISOLATION-PEERS.md.
const STORE_NOTES: &str = "
## What stands out

- RocksDB has no serializable level. At its strongest, repeatable read (every read a
  `GetForUpdate`), both front ends still allow G2, the anti-dependency cycle through
  predicates: each transaction's scan found no row, and each inserted one the other's scan
  would have returned. Keys are locked or validated one at a time, so a row added to a scanned
  range goes unseen; PMP is `prevented` only because the second scan reads the same snapshot.
  RocksDB's snapshot level allows what snapshot isolation allows (write skew, G2, the
  read-only anomaly), as does SurrealMX's.
- RocksDB's repeatable read holds readers to account. The optimistic front end validates every
  key read at commit, so a transaction that only read aborts when a key it read was written
  after its snapshot (G1b, G-single, G-single-pred: `abort` where its snapshot level shows
  `prevented`). The pessimistic one locks every key read, exclusively: a writer waits for a
  reader (G-single `prevented` by the wait), a reader waits for a writer and then aborts if
  the writer committed after its snapshot (G1b), and two transactions that each read what the
  other wrote deadlock, one of them aborting (G1c).
- Pessimistic RocksDB's read committed reads the latest commit at every read and locks only
  what it writes: a dirty write waits (G0 `prevented`), a lost update, read skew and PMP are
  possible. OTV is `prevented`: t3 reads 1:11 and 2:19 (T1's), then 2:18 and 1:12 (T2's),
  each the latest commit, and never T1's value of a row after a read that showed T2's
  (Hermitage counts the same reads under PostgreSQL's read committed as OTV prevented).
- SurrealMX and fjall at serializable validate the keys read and the ranges scanned at commit:
  what a snapshot does not keep out ends in `abort`, and nothing waits.
- redb and SQLite prevent everything by waiting. They run one writer at a time, and the shell
  begins every transaction as a writer (only an observer's `get` or `scan` begins read-only),
  so a second transaction's `begin` waits (`blocked`) until the first ends: the transactions
  run one after another, and no cell is `abort`. redb's writer waits in `begin_write`,
  SQLite's in its busy handler, which sleeps and retries.
";

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

    /// A run's order rests on a judged wait exactly where a command waits:
    /// under MV/O nothing in G0 waits (one run settles the cell), under 1V
    /// locking the second writer waits for the first's lock.
    #[test]
    fn judged_waits_are_counted_where_commands_wait() {
        let g0 = &ANOMALIES[0];
        let base = base_options();
        let grace = Duration::from_millis(20);
        let col = |p| Column { engine: Engine::Protocol(p), level: Isolation::Serializable };
        let (cell, judged) = run_once(g0, &col(Protocol::MvOcc), &base, grace).unwrap();
        assert_eq!((cell, judged), (Cell::Abort, 0));
        let (cell, judged) = run_once(g0, &col(Protocol::OneVLock), &base, grace).unwrap();
        assert_eq!(cell, Cell::Prevented);
        assert!(judged > 0, "the second writer's wait for the lock is judged");
        assert_eq!(run_one(g0, &col(Protocol::OneVLock), &base, grace), Ok(Cell::Prevented));
    }
}
