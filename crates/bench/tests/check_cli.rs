//! `multiverse check` and `multiverse bench --verify/--history` from the outside.

use std::process::Command;

fn multiverse() -> Command {
    Command::new(env!("CARGO_BIN_EXE_multiverse"))
}

/// Write skew at serializable: T1 and T2 read both keys, each writes one.
const WRITE_SKEW: &str = "multiverse-history 1
txn 1 serializable begin=2 commit=4 committed
  w 0 01 insert 01
  w 0 02 insert 01
txn 2 serializable begin=6 commit=10 committed
  r 0 01 c:4 01
  r 0 02 c:4 01
  w 0 01 update 00
txn 3 serializable begin=8 commit=12 committed
  r 0 01 c:4 01
  r 0 02 c:4 01
  w 0 02 update 00
end 3
";

#[test]
fn a_recorded_run_verifies_and_checks_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let hist = dir.join("run.history");
    let out = multiverse()
        .args(["bench", "--rows", "2000", "--duration", "0.3", "--threads", "2", "--isolation", "serializable"])
        .args(["--reads", "4", "--writes", "2", "--verify", "--history"])
        .arg(&hist)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("verify: serializable: OK"), "{stdout}");
    let out = multiverse().arg("check").arg(&hist).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("serializable: OK"));
}

#[test]
fn write_skew_fails_at_serializable_and_passes_at_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let hist = dir.join("skew.history");
    std::fs::write(&hist, WRITE_SKEW).unwrap();
    let out = multiverse().arg("check").arg(&hist).output().unwrap();
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("G2-item"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("violates serializable"));
    let out = multiverse().arg("check").arg(&hist).args(["--isolation", "snapshot"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn bad_files_give_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let bad = dir.join("bad.history");
    std::fs::write(&bad, "multiverse-history 1\ntxn x\n").unwrap();
    // The write-skew history cut short after its second transaction.
    let cut = dir.join("cut.history");
    std::fs::write(&cut, WRITE_SKEW.split("txn 3").next().unwrap()).unwrap();
    // A file that cannot be read or checked: exit 1; a bad flag value: 2.
    for (args, needle, code) in [
        (vec![bad.to_str().unwrap().to_string()], "line 2", 1),
        (vec![cut.to_str().unwrap().to_string()], "line 8: the history ends without its trailer 'end N'", 1),
        (vec![dir.join("missing").to_str().unwrap().to_string()], "cannot open", 1),
        (vec![bad.to_str().unwrap().to_string(), "--isolation".into(), "chaos".into()], "unknown isolation", 2),
    ] {
        let out = multiverse().arg("check").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle) && err.lines().count() == 1, "{args:?}: {err}");
    }
}
