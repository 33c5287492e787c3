//! `multiverse shell --protocol <store>` and `shell --matrix --stores`: the
//! isolation shell on the other embedded stores, run as a user would (the
//! real binary). Which stores run depends on the features the binary was
//! built with (`--features peers` builds them all); without a store's
//! feature, its name is a one-line refusal naming the feature.

mod common;
use common::{assert_lines, built, shell, text, Matrix, STORES};
use std::path::Path;

/// A lost update: both read 10, both write 11.
const LOST_UPDATE: &str = "\
setup 1=10
t1 begin L
t2 begin L
t1 get 1
t2 get 1
t1 update 1 11
t2 update 1 11
t1 commit
t2 commit
";

/// Write skew: each reads both rows and writes the one the other did not.
const WRITE_SKEW: &str = "\
setup 1=10 2=20
t1 begin L
t2 begin L
t1 get 1 2
t2 get 1 2
t1 update 1 11
t2 update 2 21
t1 commit
t2 commit
";

/// Where nothing waits: what each store answers to t2's commit in a lost
/// update or a write skew at a level it offers, as its documentation
/// (docs/PEERS.md, crates/peers) says.
const NO_WAIT: &[(&str, &str, &str, &str)] = &[
    // Snapshot isolation allows write skew; SSI aborts it.
    ("surrealmx", "snapshot", WRITE_SKEW, "ok"),
    ("surrealmx", "serializable", WRITE_SKEW, "aborted (read-validation)"),
    // First committer wins; at repeatable read every read is validated.
    ("rocksdb-optimistic", "snapshot", LOST_UPDATE, "aborted (write-conflict)"),
    ("rocksdb-optimistic", "repeatable-read", WRITE_SKEW, "aborted (write-conflict)"),
    // Reads and scanned ranges validated at commit.
    ("fjall", "serializable", WRITE_SKEW, "aborted (read-validation)"),
];

/// Pessimistic RocksDB: t2's update waits for t1's lock, then writes over
/// t1's update at read committed (the update is lost) and aborts at
/// snapshot isolation; by level, what t2's update and commit answer.
const LOCK_WAITS: &[(&str, &str)] = &[("read-committed", "ok"), ("snapshot", "aborted (write-conflict)")];

/// The expected output of `script` at `level` where t1's writes succeed
/// and t2's writes answer `write` (after `blocked`, if it waits) and its
/// commit `commit`.
fn expected(script: &str, level: &str, waits: bool, write: &str, commit: &str) -> String {
    let mut out = String::new();
    for line in script.replace("begin L", &format!("begin {level}")).lines() {
        let (session, cmd) = line.split_once(' ').unwrap_or_default();
        let result = match cmd {
            "get 1" => "{1:10}",
            "get 1 2" => "{1:10, 2:20}",
            _ if session == "t2" && cmd.starts_with("update") => write,
            "commit" if session == "t2" => commit,
            _ => "ok",
        };
        if session == "t2" && cmd.starts_with("update") && waits {
            out.push_str(&format!("{line} -> blocked\n"));
            continue;
        }
        out.push_str(&format!("{line} -> {result}\n"));
        if session == "t1" && cmd == "commit" && waits {
            out.push_str(&format!("t2 update 1 11 -> {write}\n"));
        }
    }
    let lost = script == LOST_UPDATE || commit != "ok";
    let fin = match (script == LOST_UPDATE, lost) {
        (true, _) => "{1:11}",
        (false, true) => "{1:11, 2:20}",
        (false, false) => "{1:11, 2:21}",
    };
    out + &format!("final -> {fin}\n")
}

/// One writer at a time: the second transaction's begin waits until the
/// first commits, then it reads the first's write (no update is lost).
const SINGLE_WRITER: &str = "\
setup 1=10 -> ok
t1 begin serializable -> ok
t2 begin serializable -> blocked
t1 get 1 -> {1:10}
t2 get 1 -> queued
t1 update 1 11 -> ok
t2 update 1 11 -> queued
t1 commit -> ok
t2 begin serializable -> ok
t2 get 1 -> {1:11}
t2 update 1 11 -> ok
t2 commit -> ok
final -> {1:11}
";

/// Runs `script` at `level` on `store`; its output.
fn run(store: &str, level: &str, script: &str, grace_ms: &str) -> String {
    let script = script.replace("begin L", &format!("begin {level}"));
    let out = shell(&["--protocol", store, "--grace-ms", grace_ms], script.as_bytes());
    assert!(out.status.success(), "{store} {level}: {}\n{}", text(&out.stderr), text(&out.stdout));
    text(&out.stdout)
}

/// Each store's answer to a lost update or a write skew, and the waits of
/// the stores that wait (a RocksDB lock; redb's and SQLite's single
/// writer) shown as `blocked`, the waiting session going on when the
/// holder commits. With the usual grace period, and with none (the
/// evidence of a wait alone decides).
#[test]
fn each_store_gives_its_documented_answers() {
    let mut runs: Vec<(&str, &str, &str, String)> = Vec::new();
    for &(store, level, script, commit) in NO_WAIT {
        runs.push((store, level, script, expected(script, level, false, "ok", commit)));
    }
    for &(level, answer) in LOCK_WAITS {
        runs.push(("rocksdb-pessimistic", level, LOST_UPDATE, expected(LOST_UPDATE, level, true, answer, answer)));
    }
    for store in ["redb", "sqlite"] {
        runs.push((store, "serializable", LOST_UPDATE, SINGLE_WRITER.to_string()));
    }
    let runs: Vec<_> = runs.into_iter().filter(|(s, ..)| built().contains(s)).collect();
    // All at once: the waits are most of the time.
    std::thread::scope(|s| {
        for (store, level, script, want) in &runs {
            s.spawn(move || {
                for grace in ["100", "0"] {
                    assert_lines(&run(store, level, script, grace), want);
                }
            });
        }
    });
}

/// A level a store does not offer is the shell's usual error line, naming
/// the levels it offers; the script goes on.
#[test]
fn a_level_a_store_does_not_offer_is_an_error_line() {
    for s in built() {
        let missing = if s.starts_with("rocksdb") { "serializable" } else { "repeatable-read" };
        let out = run(s, missing, "t1 begin L\nt1 put 1 1\n", "100");
        let line = out.lines().next().unwrap_or_default();
        assert!(line.contains(&format!("does not offer {missing}; it offers")), "{s}: {out}");
        assert!(out.contains("t1 put 1 1 -> ok"), "{s}: {out}");
    }
}

#[test]
fn a_store_left_out_of_the_build_is_a_one_line_refusal_naming_its_feature() {
    for s in STORES.iter().filter(|s| !built().contains(s)) {
        let out = shell(&["--protocol", s], b"t1 get 1\n");
        let e = text(&out.stderr);
        assert!(!out.status.success() && out.stdout.is_empty(), "{s}: {}", text(&out.stdout));
        assert!(e.lines().count() == 1 && e.contains("not compiled in") && e.contains("--features peers"), "{s}: {e}");
    }
    if built().len() < STORES.len() {
        let out = shell(&["--matrix", "--stores"], b"");
        let e = text(&out.stderr);
        assert!(!out.status.success() && e.contains("not compiled in"), "{e}");
    }
}

/// Cells docs/ISOLATION-PEERS.md's notes speak of: (anomaly, columns,
/// cell, why).
type Noted = (&'static str, &'static [&'static str], &'static str, &'static str);
const NOTED: &[Noted] = &[
    ("G2", &["rocksdb-optimistic RR", "rocksdb-pessimistic RR"], "**possible**", "no phantom protection"),
    ("G2-item", &["rocksdb-optimistic RR", "rocksdb-pessimistic RR"], "abort", "every read validated or locked"),
    ("G2-item", &["surrealmx SI", "rocksdb-optimistic SI", "rocksdb-pessimistic SI"], "**possible**", "SI"),
    ("G-single", &["rocksdb-optimistic RR"], "abort", "a read validated at commit"),
    ("G-single", &["rocksdb-pessimistic RR"], "prevented", "a read lock makes the writer wait"),
    ("G1c", &["rocksdb-pessimistic RR"], "abort", "a deadlock of read locks"),
    ("P4", &["rocksdb-pessimistic RC"], "**possible**", "read committed loses an update"),
    ("G0", &["rocksdb-pessimistic RC"], "prevented", "a dirty write waits for the lock"),
    ("OTV", &["rocksdb-pessimistic RC"], "prevented", "each read the latest commit, never T1 after T2"),
];

/// `shell --matrix --stores` prints docs/ISOLATION-PEERS.md as it is, with
/// any grace period, and the cells its notes speak of are as they say.
#[test]
fn the_store_isolation_matrix_is_docs_isolation_peers_md() {
    if built().len() < STORES.len() {
        eprintln!("not every store is built: the matrix needs --features peers");
        return;
    }
    let matrix = |grace: &str| {
        let out = shell(&["--matrix", "--stores", "--grace-ms", grace], b"");
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ISOLATION-PEERS.md"))
        .expect("docs/ISOLATION-PEERS.md");
    let table = std::thread::scope(|s| {
        let without = s.spawn(|| matrix("0"));
        let table = matrix("500");
        assert_lines(&without.join().expect("the run without a grace period"), &doc);
        table
    });
    assert_lines(&table, &doc);
    let m = Matrix::parse(&table);
    let cell = |id: &str, column: &str| m.cell(id, column);
    assert_eq!(m.head.len(), 11, "10 store-level columns: {:?}", m.head);
    for c in ["surrealmx SER", "fjall SER", "redb SER", "sqlite SER"] {
        for id in ["G0", "G1a", "G1b", "G1c", "OTV", "PMP", "P4", "G-single", "G2-item", "G2", "read-only"] {
            assert_ne!(cell(id, c), "**possible**", "{c} allows {id}");
        }
    }
    for c in ["redb SER", "sqlite SER"] {
        assert!(
            ["G0", "P4", "G2-item", "G2", "read-only"].iter().all(|id| cell(id, c) == "prevented"),
            "{c}: one writer at a time prevents by waiting"
        );
    }
    for (id, columns, want, why) in NOTED {
        for column in *columns {
            assert_eq!(cell(id, column), *want, "{id} at {column}: {why}");
        }
    }
}
