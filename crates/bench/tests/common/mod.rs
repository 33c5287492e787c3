//! Helpers shared by the command-line tests: run the real binary, expect a
//! clean one-line refusal or a run with a JSON record.

#![allow(dead_code)] // each test file uses some of them

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `multiverse` with `args`.
pub fn multiverse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_multiverse")).args(args).output().expect("the multiverse binary runs")
}

/// Bytes in lowercase hexadecimal, as export and salvage write them.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `bench` with `args` plus a short duration, expecting failure; returns
/// the error line. A usage error exits 2: one line of bench's own, or the
/// argument parser's error, its first line naming the flag; a failed run
/// exits 1, with one line.
pub fn fails(args: &[&str]) -> String {
    let mut all = vec!["bench", "--duration", "0.1", "--threads", "1"];
    all.extend_from_slice(args);
    let o = multiverse(&all);
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{args:?} should fail; stdout: {}", text(&o.stdout));
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    if o.status.code() == Some(2) && err.starts_with("error:") {
        // The argument parser's error, with its usage hint.
    } else if o.status.code() == Some(2) {
        assert!(err.starts_with("multiverse: "), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
    } else {
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
    }
    err.lines().next().unwrap_or("").to_string()
}

/// Runs `bench` with `args` and `--json` into a fresh directory named after
/// `name`, expecting success; returns (stdout, JSON record).
pub fn runs(name: &str, args: &[&str]) -> (String, serde_json::Value) {
    let dir = std::env::temp_dir().join(format!("multiverse-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.json");
    let mut all = vec!["bench", "--json", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = multiverse(&all);
    assert!(o.status.success(), "{args:?}: stderr: {}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    (text(&o.stdout), v)
}

/// Every other store, as `--protocol` names them.
pub const STORES: [&str; 6] = ["surrealmx", "rocksdb-optimistic", "rocksdb-pessimistic", "fjall", "redb", "sqlite"];

/// The stores compiled into this test's binary.
pub fn built() -> Vec<&'static str> {
    let mut v = vec![];
    if cfg!(feature = "peer-surrealmx") {
        v.push("surrealmx");
    }
    if cfg!(feature = "peer-rocksdb") {
        v.extend(["rocksdb-optimistic", "rocksdb-pessimistic"]);
    }
    if cfg!(feature = "peer-fjall") {
        v.push("fjall");
    }
    if cfg!(feature = "peer-redb") {
        v.push("redb");
    }
    if cfg!(feature = "peer-sqlite") {
        v.push("sqlite");
    }
    v
}

/// Runs `multiverse shell ARGS`, feeding `stdin` to it.
pub fn shell(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_multiverse"))
        .arg("shell")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start multiverse");
    // The shell may exit before reading its whole script (an error on the
    // first line): a broken pipe here is its answer, not a test failure.
    if let Err(e) = child.stdin.take().expect("stdin is piped").write_all(stdin) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write the script: {e}");
    }
    child.wait_with_output().expect("run multiverse")
}

/// Checks `actual` equals `expected` line by line, saying where it differs.
pub fn assert_lines(actual: &str, expected: &str) {
    if actual == expected {
        return;
    }
    let (a, e): (Vec<_>, Vec<_>) = (actual.lines().collect(), expected.lines().collect());
    let at = a.iter().zip(&e).position(|(x, y)| x != y).unwrap_or(a.len().min(e.len()));
    panic!(
        "output differs at line {}:\n  expected: {:?}\n  actual:   {:?}\n--- whole output ---\n{actual}",
        at + 1,
        e.get(at),
        a.get(at)
    );
}

/// A markdown table of the isolation matrix (docs/ISOLATION.md): its header
/// and rows, each cell trimmed.
pub struct Matrix {
    pub head: Vec<String>,
    pub body: Vec<Vec<String>>,
}

impl Matrix {
    /// The first table in `doc`.
    pub fn parse(doc: &str) -> Matrix {
        let mut rows: Vec<Vec<String>> = doc
            .lines()
            .skip_while(|l| !l.starts_with("| "))
            .take_while(|l| l.starts_with("| "))
            .map(|l| l.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect())
            .collect();
        assert!(rows.len() > 2, "no table in: {doc}");
        let head = rows.remove(0);
        rows.remove(0); // | --- | ... |
        Matrix { head, body: rows }
    }

    /// The cell of anomaly `id` in `column`.
    pub fn cell(&self, id: &str, column: &str) -> &str {
        let c = self.head.iter().position(|h| h == column).unwrap_or_else(|| panic!("no column {column}"));
        let row =
            self.body.iter().find(|r| r[0].starts_with(&format!("{id} ("))).unwrap_or_else(|| panic!("no row {id}"));
        &row[c]
    }
}
