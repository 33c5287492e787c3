//! Helpers shared by the command-line tests: run the real binary, expect a
//! clean one-line refusal or a run with a JSON record.

#![allow(dead_code)] // each test file uses some of them

use std::process::{Command, Output};

/// Runs `multiverse` with `args`.
pub fn multiverse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_multiverse")).args(args).output().expect("the multiverse binary runs")
}

/// Bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `bench` with `args` plus a short duration, expecting failure; returns
/// the error line. A refused value is one line (exit 1); a syntax error comes
/// from the argument parser, its first line naming the flag (exit 2).
pub fn fails(args: &[&str]) -> String {
    let mut all = vec!["bench", "--duration", "0.1", "--threads", "1"];
    all.extend_from_slice(args);
    let o = multiverse(&all);
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{args:?} should fail; stdout: {}", text(&o.stdout));
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    if o.status.code() == Some(2) {
        assert!(err.starts_with("error:"), "{args:?}: {err}");
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
