//! Tests of `multiverse shell`, run through the built binary: every example
//! script in `examples/scripts` against its expected output, and the error
//! handling, observer, abort and blocking behaviour of the shell.

mod common;
use common::{assert_lines, shell, Matrix};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LEVELS: [&str; 4] = ["read-committed", "snapshot", "repeatable-read", "serializable"];
const ANOMALIES: [&str; 5] = ["dirty-write", "lost-update", "read-skew", "write-skew", "phantom"];

/// The grace period (ms) for scripts in which nothing should block: MV/O
/// never waits, so a long grace costs nothing and keeps a loaded machine from
/// turning a slow command into `blocked`.
const GRACE_MS: &str = "2000";

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scripts")
}

/// Runs a script given on standard input (with the long grace period unless
/// `args` set one); checks it succeeded; returns stdout.
fn run_script(script: &str, args: &[&str]) -> String {
    let mut all = args.to_vec();
    if !args.contains(&"--grace-ms") {
        all.extend(["--grace-ms", GRACE_MS]);
    }
    let out = shell(&all, script.as_bytes());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit status {:?}, stderr: {stderr}", out.status);
    assert!(stderr.is_empty(), "unexpected stderr: {stderr}");
    String::from_utf8(out.stdout).expect("output is UTF-8")
}

/// Fails with a one-line message on stderr and nothing on stdout.
fn assert_fails(out: &Output, message: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "expected failure, stderr: {stderr}");
    assert!(out.stdout.is_empty(), "unexpected stdout: {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(stderr.lines().count(), 1, "expected one line, got: {stderr}");
    assert!(stderr.contains(message), "expected '{message}' in: {stderr}");
}

#[test]
fn example_scripts_match_their_expected_output() {
    scripts_match(&scripts_dir(), &[], ANOMALIES.len() * LEVELS.len());
}

/// MV/L's scripts: the anomalies at the levels it offers, and its lock
/// transitions (blocking, refusals, a deadlock).
#[test]
fn mv_lock_scripts_match_their_expected_output() {
    scripts_match(&scripts_dir().join("mv-lock"), &["--protocol", "mv-lock"], ANOMALIES.len() * LEVELS.len());
}

/// Permutation scripts: write skew in all 70 interleavings and the
/// read-only anomaly, at snapshot (allowed) and serializable (prevented).
#[test]
fn permutation_scripts_match_their_expected_output() {
    scripts_match(&scripts_dir().join("permutations"), &["--check"], 3);
}

/// In every interleaving of the write-skew steps, serializable MV/O never
/// commits both transactions after both scans saw both doctors on call,
/// and snapshot isolation does so in some.
#[test]
fn write_skew_permutations_separate_snapshot_from_serializable() {
    for (level, allowed) in [("snapshot", true), ("serializable", false)] {
        let script = fs::read(scripts_dir().join(format!("permutations/write-skew-{level}.mvs"))).unwrap();
        let out = run_script(&String::from_utf8(script).unwrap(), &[]);
        let runs: Vec<&str> = out.split("\n\n").collect();
        assert_eq!(runs.len(), 70, "{level}: every interleaving ran");
        let skewed = runs
            .iter()
            .filter(|r| {
                r.matches("where value = 1 -> {1:1, 2:1}").count() == 2 && r.matches("commit -> ok").count() == 2
            })
            .count();
        assert_eq!(skewed > 0, allowed, "{level}: {skewed} permutations committed a write skew");
    }
}

/// `shell --matrix` prints docs/ISOLATION.md as it is (the table cannot
/// drift from the code), every protocol at serializable prevents every
/// anomaly, and the weaker levels allow what they are known to allow.
#[test]
fn the_isolation_matrix_is_docs_isolation_md() {
    let matrix = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_multiverse"))
            .args(["shell", "--matrix"])
            .args(args)
            .output()
            .expect("run");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let table = matrix(&[]);
    let doc = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ISOLATION.md")).unwrap();
    assert_lines(&table, &doc);
    // Nor does it depend on the machine's load: with no grace period at
    // all, as if every step were slower than the grace period, no cell
    // moves (results_do_not_depend_on_the_grace_period has the details).
    assert_lines(&matrix(&["--grace-ms", "0"]), &doc);
    let m = Matrix::parse(&table);
    let cell = |id: &str, column: &str| m.cell(id, column);
    assert_eq!(m.head.len(), 24, "23 protocol-level columns: {:?}", m.head);
    for (c, name) in m.head.iter().enumerate().skip(1) {
        if name.ends_with(" SER") {
            for r in &m.body {
                assert_ne!(r[c], "**possible**", "{name} allows {}", r[0]);
            }
        }
    }
    assert_eq!(cell("G2-item", "mv-occ SI"), "**possible**", "snapshot isolation allows write skew");
    assert_eq!(cell("G-single", "mv-occ RC"), "**possible**", "read committed allows read skew");
    assert_eq!(cell("G2", "mv-occ RR"), "**possible**", "Hekaton's repeatable read allows phantoms");
    assert_ne!(cell("G1a", "mv-occ RC"), "**possible**", "read committed reads no aborted data");
    assert_ne!(cell("P4", "mv-occ SI"), "**possible**", "snapshot isolation prevents lost updates");
    assert_eq!(cell("P4", "1v-lock RC"), "**possible**", "1V's short read locks allow a lost update");
}

/// Silo: the five anomalies at serializable, its only level.
#[test]
fn silo_scripts_match_their_expected_output() {
    scripts_match(&scripts_dir().join("silo"), &["--protocol", "silo"], ANOMALIES.len() - 1);
}

/// The lock timeout (ms) of the locking protocols' scripts. A command
/// blocked behind a lock is reported after the grace period (2 s), and the
/// driver settles for another grace period before the next line: a lock
/// released by that next line is released about 4 s after the wait began,
/// well inside the timeout. Deadlocks are found by detection within about
/// 100 µs of the wait that closes them.
const LOCK_TIMEOUT_MS: &str = "5000";

/// 1V locking: the anomalies at its three levels, a dirty read that waits,
/// and the lock of an absent key.
#[test]
fn one_v_lock_scripts_match_their_expected_output() {
    let args = ["--protocol", "1v-lock", "--lock-timeout-ms", LOCK_TIMEOUT_MS];
    scripts_match(&scripts_dir().join("1v-lock"), &args, ANOMALIES.len() * 3);
}

/// Ordered 2PL: declared transactions, undeclared accesses, and an
/// undeclared transaction's phantom.
#[test]
fn ordered_2pl_scripts_match_their_expected_output() {
    let args = ["--protocol", "2pl-ordered", "--lock-timeout-ms", LOCK_TIMEOUT_MS];
    scripts_match(&scripts_dir().join("2pl-ordered"), &args, ANOMALIES.len());
}

/// BOHM: interactive transactions run alone, so every anomaly is
/// prevented by a blocked begin.
#[test]
fn bohm_scripts_match_their_expected_output() {
    scripts_match(&scripts_dir().join("bohm"), &["--protocol", "bohm"], ANOMALIES.len() - 1);
}

/// SSN over snapshot isolation (the default base): the anomalies, and a
/// schedule SSI refuses that SSN commits.
#[test]
fn ssn_scripts_match_their_expected_output() {
    scripts_match(&scripts_dir().join("ssn"), &["--protocol", "ssn"], ANOMALIES.len());
}

/// SSN over read committed: the anomalies, and the false positive of the
/// SSN paper's Figure 2(d).
#[test]
fn ssn_rc_scripts_match_their_expected_output() {
    scripts_match(&scripts_dir().join("ssn-rc"), &["--protocol", "ssn", "--base", "rc"], ANOMALIES.len());
}

/// SSI: the anomalies, and the dangerous structure without a cycle.
#[test]
fn ssi_scripts_match_their_expected_output() {
    scripts_match(&scripts_dir().join("ssi"), &["--protocol", "ssi"], ANOMALIES.len());
}

/// POMVCC: HISTORICAL READ and its avoidance, a lost update at one
/// timestamp, write skew at serializable, mixed OCC/PCC.
#[test]
fn pomvcc_scripts_match_their_expected_output() {
    scripts_match(&scripts_dir().join("pomvcc"), &["--protocol", "pomvcc"], 3);
}

/// mv-mixed: optimistic and pessimistic transactions side by side.
#[test]
fn mv_mixed_scripts_match_their_expected_output() {
    scripts_match(&scripts_dir().join("mv-mixed"), &["--protocol", "mv-mixed"], 0);
}

/// Runs every `*.mvs` in `dir` (more than `at_least` of them) with `args`
/// and compares the output with the `*.out` next to it.
fn scripts_match(dir: &Path, args: &[&str], at_least: usize) {
    let mut scripts: Vec<PathBuf> = fs::read_dir(dir)
        .expect("examples/scripts exists")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "mvs"))
        .collect();
    scripts.sort();
    assert!(scripts.len() > at_least, "found only {} scripts in {}", scripts.len(), dir.display());
    // Each script runs in its own process, all at once: scripts of the
    // locking protocols spend seconds waiting on purpose.
    let failures: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = scripts.iter().map(|script| s.spawn(move || run_and_compare(script, args))).collect();
        runs.into_iter().filter_map(|r| r.join().expect("script thread")).collect()
    });
    assert!(failures.is_empty(), "{} of {} scripts differ:\n{}", failures.len(), scripts.len(), failures.join("\n"));
}

/// Runs one script; a description of the difference if its output is not
/// the expected one.
fn run_and_compare(script: &Path, args: &[&str]) -> Option<String> {
    let expected_path = script.with_extension("out");
    let expected = fs::read_to_string(&expected_path)
        .unwrap_or_else(|e| panic!("{}: expected output {}: {e}", script.display(), expected_path.display()));
    let out = Command::new(env!("CARGO_BIN_EXE_multiverse"))
        .args(["shell", "--grace-ms", GRACE_MS])
        .args(args)
        .arg(script)
        .output()
        .expect("run");
    let actual = String::from_utf8_lossy(&out.stdout);
    (!out.status.success() || actual != expected).then(|| {
        format!(
            "{} (status {:?}):\n--- expected\n{expected}--- actual\n{actual}{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Every directory of example scripts, with the arguments its scripts run
/// with (as in the tests above).
const SCRIPT_DIRS: &[(&str, &[&str])] = &[
    ("", &[]),
    ("mv-lock", &["--protocol", "mv-lock"]),
    ("mv-mixed", &["--protocol", "mv-mixed"]),
    ("permutations", &[]),
    ("silo", &["--protocol", "silo"]),
    ("1v-lock", &["--protocol", "1v-lock", "--lock-timeout-ms", LOCK_TIMEOUT_MS]),
    ("2pl-ordered", &["--protocol", "2pl-ordered", "--lock-timeout-ms", LOCK_TIMEOUT_MS]),
    ("bohm", &["--protocol", "bohm"]),
    ("ssn", &["--protocol", "ssn"]),
    ("ssn-rc", &["--protocol", "ssn", "--base", "rc"]),
    ("ssi", &["--protocol", "ssi"]),
    ("pomvcc", &["--protocol", "pomvcc"]),
];

/// What a script's output decided, run by run (a permutation script has
/// several, separated by blank lines): each line's results in order, and
/// the final state, without the `blocked` and `queued` notes (when those
/// are printed may change with the grace period; what the commands
/// returned may not).
fn outcome(out: &str) -> Vec<BTreeMap<&str, Vec<&str>>> {
    out.split("\n\n")
        .map(|run| {
            let mut lines: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for l in run.lines() {
                let (echo, result) = l.split_once(" -> ").unwrap_or((l, ""));
                if result != "blocked" && result != "queued" {
                    lines.entry(echo).or_default().push(result);
                }
            }
            lines
        })
        .collect()
}

/// The results do not depend on the machine's load: with a grace period of
/// zero, as if every command were slower than the grace period (what a
/// loaded machine does to a few), every example script still returns each
/// line's result of its expected output, and the same final state. (A
/// driver that took a slow command for a blocked one would run the next
/// line early: in 1V's lost update at read committed, t2's read would wait
/// behind t1's update and read 11, not 10.)
#[test]
fn results_do_not_depend_on_the_grace_period() {
    let mut runs = Vec::new();
    for (dir, args) in SCRIPT_DIRS {
        let mut scripts: Vec<PathBuf> = fs::read_dir(scripts_dir().join(dir))
            .expect("examples/scripts exists")
            .map(|e| e.expect("directory entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "mvs"))
            .collect();
        scripts.sort();
        runs.extend(scripts.into_iter().map(|s| (s, *args)));
    }
    assert!(runs.len() > 100, "found only {} scripts", runs.len());
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .iter()
            .map(|(script, args)| {
                s.spawn(move || {
                    let expected = fs::read_to_string(script.with_extension("out")).expect("expected output");
                    let out = Command::new(env!("CARGO_BIN_EXE_multiverse"))
                        .args(["shell", "--grace-ms", "0"])
                        .args(*args)
                        .arg(script)
                        .output()
                        .expect("run");
                    let actual = String::from_utf8_lossy(&out.stdout);
                    (!out.status.success() || outcome(&actual) != outcome(&expected))
                        .then(|| format!("{}:\n--- expected\n{expected}--- actual\n{actual}", script.display()))
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().expect("script thread")).collect()
    });
    assert!(failures.is_empty(), "{} of {} scripts differ:\n{}", failures.len(), runs.len(), failures.join("\n"));
}

#[test]
fn every_anomaly_has_a_script_at_every_level() {
    for anomaly in ANOMALIES {
        for level in LEVELS {
            let script = scripts_dir().join(format!("{anomaly}-{level}.mvs"));
            assert!(script.is_file(), "missing {}", script.display());
            let text = fs::read_to_string(&script).expect("readable");
            assert!(text.contains(&format!("begin {level}")), "{} does not run at {level}", script.display());
        }
    }
}

#[test]
fn reads_the_script_from_standard_input() {
    let script = "setup 1=10\nt1 get 1\n";
    let expected = "setup 1=10 -> ok\nt1 get 1 -> {1:10}\nfinal -> {1:10}\n";
    assert_lines(&run_script(script, &[]), expected);
    assert_lines(&run_script(script, &["-"]), expected);
    assert_lines(&run_script(script, &["--protocol", "mv-occ", "-"]), expected);
}

#[test]
fn bad_lines_print_an_error_and_the_script_goes_on() {
    let script = "\
t1 frobnicate 1
t1 get x
t1 begin sometimes
t1
t1 scan where value > 1
t1 put 1 2 3
setup 1
t1 update 1 value * 2
t1 put 1 2
";
    let expected = "\
t1 frobnicate 1 -> error: unknown command 'frobnicate' (expected one of: begin, get, put, insert, update, delete, scan, commit, abort, sleep)
t1 get x -> error: bad number 'x' (expected an integer)
t1 begin sometimes -> error: unknown isolation level 'sometimes' (expected read-committed, snapshot, repeatable-read or serializable)
t1 -> error: missing command
t1 scan where value > 1 -> error: bad predicate 'value > 1' (expected 'value = N' or 'value % M = R')
t1 put 1 2 3 -> error: unexpected '3'
setup 1 -> error: expected K=V, found '1'
t1 update 1 value * 2 -> error: bad value 'value * 2' (expected N, 'value + D' or 'value - D')
t1 put 1 2 -> ok
final -> {1:2}
";
    assert_lines(&run_script(script, &[]), expected);
}

/// A script that is not text (not UTF-8, or with control bytes such as
/// NUL) is refused in one line naming where, before any line runs: from a
/// pipe and from a file.
#[test]
fn a_script_that_is_not_text_is_refused_before_anything_runs() {
    let out = shell(&[], b"t1 put 1 1\nt1 put 1 \xff\nt1 put 2 2\n");
    assert_fails(&out, "script from standard input is not text: byte 0xff at byte offset 20 (line 2) is not UTF-8");
    let dir = tempfile::tempdir().expect("temporary directory");
    let binary = dir.path().join("picture.png");
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend((0..=255u8).cycle().take(100_000));
    fs::write(&binary, &bytes).expect("write");
    let path = binary.to_str().expect("UTF-8 path");
    let out = shell(&[path], b"");
    assert_fails(&out, &format!("script '{path}' is not text: byte 0x89 at byte offset 0 (line 1) is not UTF-8"));
    assert_eq!(out.status.code(), Some(1));
    // Valid UTF-8 with a NUL byte is binary too.
    fs::write(&binary, b"setup 1=1\nt1 get 1\0\n").expect("write");
    assert_fails(&shell(&[path], b""), "is not text: control byte 0x00 at byte offset 18 (line 2)");
}

/// Piped input shows no prompt: standard error stays empty and standard
/// output holds the results alone.
#[test]
fn piped_input_shows_no_prompt() {
    let out = shell(&["--grace-ms", GRACE_MS], b"t1 put 1 1\n");
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_lines(&String::from_utf8_lossy(&out.stdout), "t1 put 1 1 -> ok\nfinal -> {1:1}\n");
}

#[test]
fn unknown_protocol_fails_with_one_line() {
    assert_fails(&shell(&["--protocol", "nope"], b"t1 get 1\n"), "unknown protocol 'nope'");
}

#[test]
fn an_unknown_protocol_fails_with_one_line() {
    assert_fails(&shell(&["--protocol", "paxos"], b"t1 get 1\n"), "unknown protocol 'paxos'");
}

#[test]
fn unreadable_script_fails_with_one_line() {
    let missing = scripts_dir().join("no-such-script.mvs");
    let path = missing.to_str().expect("UTF-8 path");
    assert_fails(&shell(&[path], b""), "cannot read script");
    assert_fails(&shell(&[scripts_dir().to_str().expect("UTF-8 path")], b""), "cannot read script");
}

#[test]
fn observers_run_each_command_as_its_own_transaction() {
    let script = "\
setup 1=10
t1 begin snapshot
t1 update 1 11
obs get 1
obs put 2 20
t1 scan
t1 commit
obs scan
obs insert 2 21
obs update 3 value + 1
obs delete where value = 11
obs scan
";
    let expected = "\
setup 1=10 -> ok
t1 begin snapshot -> ok
t1 update 1 11 -> ok
obs get 1 -> {1:10}
obs put 2 20 -> ok
t1 scan -> {1:11}
t1 commit -> ok
obs scan -> {1:11, 2:20}
obs insert 2 21 -> error: duplicate key
obs update 3 value + 1 -> error: key not found
obs delete where value = 11 -> ok (1 row)
obs scan -> {2:20}
final -> {2:20}
";
    assert_lines(&run_script(script, &[]), expected);
}

/// An observer's insert is a phantom for a serializable scan of the table.
#[test]
fn an_observer_insert_is_a_phantom_for_a_serializable_scan() {
    let script = "setup 1=10\nt1 begin\nt1 update 1 11\nobs put 2 20\nt1 scan\nt1 commit\n";
    let expected = "\
setup 1=10 -> ok
t1 begin -> ok
t1 update 1 11 -> ok
obs put 2 20 -> ok
t1 scan -> {1:11}
t1 commit -> aborted (phantom)
final -> {1:10, 2:20}
";
    assert_lines(&run_script(script, &[]), expected);
}

#[test]
fn an_observer_can_be_aborted() {
    let script = "setup 1=10\nt1 begin\nt1 update 1 11\nobs update 1 12\nobs get 1\nt1 commit\n";
    let expected = "\
setup 1=10 -> ok
t1 begin -> ok
t1 update 1 11 -> ok
obs update 1 12 -> aborted (write-conflict)
obs get 1 -> {1:10}
t1 commit -> ok
final -> {1:11}
";
    assert_lines(&run_script(script, &[]), expected);
}

#[test]
fn commands_after_an_abort_report_its_reason() {
    let script = "\
setup 1=10 2=20
t1 begin serializable
t2 begin serializable
t1 get 1
t2 update 1 11
t2 commit
t1 put 2 21
t1 commit
t1 get 1
t1 begin snapshot
t3 begin
t4 begin
t3 update 2 0
t4 delete 2
t4 get 1
t4 update where value = 11 set value = 0
t4 begin
t4 abort
t4 get 2
t3 abort
";
    let expected = "\
setup 1=10 2=20 -> ok
t1 begin serializable -> ok
t2 begin serializable -> ok
t1 get 1 -> {1:10}
t2 update 1 11 -> ok
t2 commit -> ok
t1 put 2 21 -> ok
t1 commit -> aborted (read-validation)
t1 get 1 -> {1:11}
t1 begin snapshot -> ok
t3 begin -> ok
t4 begin -> ok
t3 update 2 0 -> ok
t4 delete 2 -> aborted (write-conflict)
t4 get 1 -> aborted (write-conflict)
t4 update where value = 11 set value = 0 -> aborted (write-conflict)
t4 begin -> aborted (write-conflict)
t4 abort -> ok
t4 get 2 -> {2:20}
t3 abort -> ok
final -> {1:11, 2:20}
";
    assert_lines(&run_script(script, &[]), expected);
}

#[test]
fn user_errors_keep_the_transaction_open() {
    let script = "\
setup 1=10
t1 begin
t1 insert 1 5
t1 update 2 5
t1 delete 2
t1 update 1 value + 9223372036854775807
t1 update 1 value - 1
t1 commit
";
    let expected = "\
setup 1=10 -> ok
t1 begin -> ok
t1 insert 1 5 -> error: duplicate key
t1 update 2 5 -> error: key not found
t1 delete 2 -> error: key not found
t1 update 1 value + 9223372036854775807 -> error: integer overflow (row 1 keeps its value)
t1 update 1 value - 1 -> ok
t1 commit -> ok
final -> {1:9}
";
    assert_lines(&run_script(script, &[]), expected);
}

#[test]
fn session_control_errors() {
    let script = "t1 commit\nt1 abort\nt1 begin\nt1 begin\nt1 commit\nsetup 1=1 1=2\n";
    let expected = "\
t1 commit -> error: no transaction is open
t1 abort -> error: no transaction is open
t1 begin -> ok
t1 begin -> error: a transaction is already open (commit or abort it first)
t1 commit -> ok
setup 1=1 1=2 -> error: duplicate key
final -> {}
";
    assert_lines(&run_script(script, &[]), expected);
}

#[test]
fn open_transactions_roll_back_at_the_end() {
    let script = "setup 1=10\nt1 begin\nt1 put 2 20\nt1 delete 1\n";
    let expected = "setup 1=10 -> ok\nt1 begin -> ok\nt1 put 2 20 -> ok\nt1 delete 1 -> ok\nfinal -> {1:10}\n";
    assert_lines(&run_script(script, &[]), expected);
}

#[test]
fn negative_keys_sort_before_positive_ones() {
    let script = "setup 5=1 -3=2 0=3 -20=4\nt1 scan where value % 2 = 0\nt1 scan\n";
    let expected = "\
setup 5=1 -3=2 0=3 -20=4 -> ok
t1 scan where value % 2 = 0 -> {-20:4, -3:2}
t1 scan -> {-20:4, -3:2, 0:3, 5:1}
final -> {-20:4, -3:2, 0:3, 5:1}
";
    assert_lines(&run_script(script, &[]), expected);
}

/// A command that outlasts the grace period prints `blocked`, and its result
/// comes right after the line during which it finished.
#[test]
fn a_slow_command_is_blocked_then_reported() {
    // Grace 1 s: `sleep 1300` is blocked, then finishes while the driver
    // settles after that same line (it waits up to another second).
    let script = "t1 sleep 1300\nt2 put 1 1\n";
    let expected = "t1 sleep 1300 -> blocked\nt1 sleep 1300 -> ok\nt2 put 1 1 -> ok\nfinal -> {1:1}\n";
    assert_lines(&run_script(script, &["--grace-ms", "1000"]), expected);
}

/// A session's commands queue behind its pending one and run in order once
/// it returns; a queued line waits for nothing, and the results come when
/// they happen. Grace 2 s: the sleep is reported blocked at 2 s, is still
/// pending when the driver stops settling at 4 s, and ends (5 s) while it
/// settles after `t2 put`, so its result and its queue's come right after
/// that line.
#[test]
fn a_blocked_sessions_commands_queue_behind_it() {
    let script = "t1 sleep 5000\nt1 put 1 1\nt1 get 1\nt2 put 2 2\nt2 get 2\n";
    let expected = "\
t1 sleep 5000 -> blocked
t1 put 1 1 -> queued
t1 get 1 -> queued
t2 put 2 2 -> ok
t1 sleep 5000 -> ok
t1 put 1 1 -> ok
t1 get 1 -> {1:1}
t2 get 2 -> {2:2}
final -> {1:1, 2:2}
";
    assert_lines(&run_script(script, &["--grace-ms", "2000"]), expected);
}

/// `--check`: a script with an error line exits non-zero, after printing
/// its whole output; without errors it exits 0.
#[test]
fn check_fails_a_script_with_an_error_line() {
    let out = shell(&["--check"], b"t1 put 1 1\nt1 frobnicate\nt1 get 1\n");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "an error line fails --check: {stdout}");
    assert!(stdout.contains("t1 get 1 -> {1:1}") && stdout.contains("final -> {1:1}"), "the script ran on: {stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 line of the script gave an error"));
    let out = shell(&["--check"], b"t1 put 1 1\n");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = shell(&[], b"t1 frobnicate\n");
    assert!(out.status.success(), "without --check an error line is only printed");
}

/// `--expect FILE`: the output is compared with the file; the first
/// difference is named and the exit status is non-zero.
#[test]
fn expect_compares_the_output_with_a_file() {
    let dir = scripts_dir();
    let script = dir.join("write-skew-serializable.mvs");
    let same = dir.join("write-skew-serializable.out");
    let other = dir.join("write-skew-snapshot.out");
    let run = |expect: &Path| {
        Command::new(env!("CARGO_BIN_EXE_multiverse"))
            .args(["shell", "--grace-ms", GRACE_MS, "--expect"])
            .arg(expect)
            .arg(&script)
            .output()
            .expect("run")
    };
    let out = run(&same);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&other);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a different output fails");
    assert!(stderr.contains("differs from") && stderr.contains("at line"), "{stderr}");
    assert_fails(&shell(&["--expect", "/nonexistent/x.out"], b"t1 get 1\n"), "cannot read '/nonexistent/x.out'");
}

/// The repository's own tour, which errors on purpose, matches its
/// expected output: `--expect` compares, and error lines the file expects
/// are no failure; a wrong expected file still fails, and so does
/// `--check` on a script with error lines.
#[test]
fn expect_accepts_the_errors_the_expected_file_holds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_multiverse")).current_dir(&root).args(args).output().expect("run")
    };
    let out = run(&["shell", "--expect", "examples/scripts/tour.out", "examples/scripts/tour.mvs"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("t1 insert 4 41 -> error: duplicate key"), "the tour errs on purpose: {stdout}");
    let out = run(&["shell", "--expect", "examples/scripts/lost-update-snapshot.out", "examples/scripts/tour.mvs"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a wrong expected file fails");
    assert!(stderr.contains("differs from 'examples/scripts/lost-update-snapshot.out' at line 1"), "{stderr}");
    let out = run(&["shell", "--check", "--expect", "examples/scripts/tour.out", "examples/scripts/tour.mvs"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "--check still fails on error lines");
    assert!(stderr.contains("2 lines of the script gave an error"), "{stderr}");
}

/// A script may start at most 64 sessions; the 65th is an error line.
#[test]
fn sessions_are_capped() {
    let script: String = (1..=65).map(|i| format!("s{i} get 1\n")).collect();
    let out = shell(&["--check", "--grace-ms", GRACE_MS], script.as_bytes());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("s64 get 1 -> {}"), "{stdout}");
    assert!(stdout.contains("s65 get 1 -> error: cannot start session s65: a script may use at most 64 sessions"));
    assert!(!out.status.success());
}
