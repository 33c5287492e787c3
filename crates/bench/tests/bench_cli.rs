//! `multiverse bench` and the default comparison, run as a user would: the
//! real binary, tiny sizes, short durations.

use std::process::{Command, Output};

fn multiverse(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_multiverse"));
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the multiverse binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `bench` with `args` (small and short unless they say otherwise)
/// expecting failure; returns stderr.
fn fails(args: &[&str]) -> String {
    let mut all = vec!["bench"];
    for (flag, small) in [("--rows", "1000"), ("--duration", "0.1")] {
        if !args.contains(&flag) {
            all.extend([flag, small]);
        }
    }
    all.extend_from_slice(args);
    let o = multiverse(&all, &[]);
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{args:?} should fail; stdout: {}", text(&o.stdout));
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    err
}

#[test]
fn bad_arguments_give_clear_errors() {
    let e = fails(&["--workload", "tpcz"]);
    assert!(e.contains("unknown workload 'tpcz'") && e.contains("known workloads: hekaton"), "{e}");
    assert_eq!(e.lines().count(), 1, "one line: {e}");

    let e = fails(&["--protocol", "paxos"]);
    assert!(e.contains("unknown protocol 'paxos'") && e.contains("mv-occ"), "{e}");

    let e = fails(&["--protocol", "pomvcc", "--isolation", "repeatable-read"]);
    assert!(e.contains("protocol 'pomvcc' does not offer isolation level 'repeatable-read'"), "{e}");

    let e = fails(&["--protocol", "silo", "--mode", "optimistic"]);
    assert!(e.contains("protocol silo does not run that kind"), "{e}");
    let e = fails(&["--protocol", "pomvcc", "--mode", "eager"]);
    assert!(e.contains("--mode 'eager': expected optimistic or pessimistic"), "{e}");

    let e = fails(&["--isolation", "chaos"]);
    assert!(e.contains("unknown isolation level 'chaos'"), "{e}");

    let e = fails(&["--rows", "5", "--reads", "10"]);
    assert!(e.contains("only 5"), "{e}");

    let e = fails(&["--rows", "1000000000000"]);
    assert!(e.contains("needs about") && e.contains("available"), "{e}");

    // Syntax errors come from the argument parser, also on one line, exit 2.
    for (args, word) in [
        (&["--threads", "0"][..], "--threads"),
        (&["--threads", "many"][..], "--threads"),
        (&["--duration", "-1"][..], "must be more than 0"),
        (&["--rows", "lots"][..], "--rows"),
        (&["--prefault", "lots"][..], "--prefault"),
        (&["--frobnicate"][..], "--frobnicate"),
    ] {
        let e = fails(args);
        assert!(e.contains(word) && e.starts_with("error:"), "{args:?}: {e}");
    }
}

#[test]
fn json_record_has_every_field() {
    let dir = std::env::temp_dir().join(format!("multiverse-bench-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.json");
    let p = path.to_str().unwrap();
    let args = [
        "bench",
        "--workload",
        "hekaton",
        "--rows",
        "2000",
        "--reads",
        "4",
        "--writes",
        "2",
        "--threads",
        "2",
        "--duration",
        "0.3",
        "--isolation",
        "snapshot",
        "--json",
        p,
    ];
    let o = multiverse(&args, &[]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let out = text(&o.stdout);
    for word in ["txn/s", "latency", "p99", "peak RSS", "bytes/row", "load", "aborted"] {
        assert!(out.contains(word), "summary lacks '{word}': {out}");
    }

    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let o = v.as_object().unwrap();
    for f in [
        "protocol",
        "isolation",
        "workload",
        "params",
        "threads",
        "duration_s",
        "committed",
        "aborted",
        "aborts_by_reason",
        "throughput_tps",
        "latency_us",
        "peak_rss_bytes",
        "versions_alive_end",
        "git_commit",
        "load_s",
        "bytes_per_row",
    ] {
        assert!(o.contains_key(f), "missing field {f}: {v}");
    }
    assert_eq!(v["protocol"], "mv-occ");
    assert_eq!(v["isolation"], "snapshot");
    assert_eq!(v["workload"], "hekaton");
    assert_eq!(v["params"]["rows"], 2000);
    assert_eq!(v["params"]["reads"], 4);
    assert_eq!(v["params"]["writes"], 2);
    assert_eq!(v["threads"], 2);
    assert!(v["duration_s"].as_f64().unwrap() >= 0.3);
    let committed = v["committed"].as_u64().unwrap();
    assert!(committed > 0);
    let by_reason = v["aborts_by_reason"].as_object().unwrap();
    assert!(by_reason.contains_key("write-conflict") && by_reason.contains_key("read-validation"));
    let sum: u64 = by_reason.values().map(|n| n.as_u64().unwrap()).sum();
    assert_eq!(sum, v["aborted"].as_u64().unwrap());
    let tps = v["throughput_tps"].as_f64().unwrap();
    assert!((tps - committed as f64 / v["duration_s"].as_f64().unwrap()).abs() < 1.0);
    let lat = &v["latency_us"];
    let (p50, p90, p99, max) = (
        lat["p50"].as_f64().unwrap(),
        lat["p90"].as_f64().unwrap(),
        lat["p99"].as_f64().unwrap(),
        lat["max"].as_f64().unwrap(),
    );
    assert!(0.0 < p50 && p50 <= p90 && p90 <= p99 && p99 <= max, "{lat}");
    assert!(v["peak_rss_bytes"].as_u64().unwrap() > 1 << 20);
    assert!(v["versions_alive_end"].as_u64().unwrap() >= 2000);
    assert!(!v["git_commit"].as_str().unwrap().is_empty());
    assert!(v["bytes_per_row"].as_f64().unwrap() >= 0.0);
    std::fs::remove_dir_all(&dir).ok();
}

/// `--prefault` touches the memory after loading, says so, and records it.
#[test]
fn prefault_is_reported() {
    let dir = std::env::temp_dir().join(format!("multiverse-bench-prefault-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.json");
    let args = ["bench", "--rows", "1000", "--duration", "0.1", "--threads", "1", "--prefault", "8M"];
    let o = multiverse(&[&args[..], &["--json", path.to_str().unwrap()]].concat(), &[]);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("prefault   8.00 MiB touched in"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["prefault_bytes"], 8 << 20);
    assert!(v["prefault_s"].as_f64().unwrap() > 0.0);
    assert!(v["peak_rss_bytes"].as_u64().unwrap() > 8 << 20, "the touched memory counts in the peak RSS");
    let o = multiverse(&args[..7], &[]);
    assert!(!text(&o.stdout).contains("prefault"), "off by default");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn json_to_an_unwritable_path_is_an_error() {
    let e = fails(&["--threads", "1", "--json", "/nonexistent-dir/x/run.json"]);
    assert!(e.contains("--json /nonexistent-dir/x/run.json: directory /nonexistent-dir/x does not exist"), "{e}");
}

/// A transaction does at least one operation: `--reads 0 --writes 0` is
/// refused (exit 2) rather than run as empty transactions.
#[test]
fn empty_transactions_are_refused() {
    let o = multiverse(&["bench", "--rows", "10", "--reads", "0", "--writes", "0", "--duration", "0.2"], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--reads 0 --writes 0: a transaction must do at least one operation"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(o.stdout.is_empty(), "nothing ran");
    let o = multiverse(&["bench", "--rows", "10", "--reads", "0", "--writes", "1", "--duration", "0.1"], &[]);
    assert!(o.status.success(), "one write is a transaction: {}", text(&o.stderr));
}

#[test]
fn default_comparison_prints_a_table_of_four_levels() {
    // One thread: the comparison's shape, without timing-dependent contention.
    let out = tempfile::tempdir().expect("a temporary directory");
    let env = [
        ("MULTIVERSE_DEFAULT_ROWS", "5000"),
        ("MULTIVERSE_DEFAULT_SECONDS", "0.2"),
        ("MULTIVERSE_DEFAULT_THREADS", "1"),
        ("MULTIVERSE_OUT_DIR", out.path().to_str().expect("a UTF-8 temporary path")),
    ];
    let o = multiverse(&[], &env);
    assert!(o.status.success(), "stderr: {}", text(&o.stderr));
    let out = text(&o.stdout);
    for level in ["read-committed", "snapshot", "repeatable-read", "serializable"] {
        assert!(out.lines().any(|l| l.starts_with(level)), "no row for {level}: {out}");
    }
    assert!(out.contains("txn/s") && out.contains("vs RC") && out.contains("plot"), "{out}");
    assert!(text(&o.stderr).is_empty(), "quiet when stderr is not a terminal: {}", text(&o.stderr));

    let o = multiverse(&[], &[("MULTIVERSE_DEFAULT_SECONDS", "zero")]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("MULTIVERSE_DEFAULT_SECONDS"), "{}", text(&o.stderr));
}

/// `--durability sync --data-dir`: the run logs, the summary and the JSON
/// say what the log wrote, and `multiverse recover` reads the directory
/// back; bad combinations are one clear line.
#[test]
fn durable_runs_log_and_recover() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let json = dir.path().join("r.json");
    let bin = || Command::new(env!("CARGO_BIN_EXE_multiverse"));
    let o = bin()
        .args(["bench", "--workload", "smallbank", "--customers", "1000", "--threads", "2", "--duration", "0.3"])
        .args(["--durability", "sync", "--data-dir", data.to_str().unwrap(), "--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    assert!(out.contains("log        sync durability, 2 streams"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(v["durability"]["log_records"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["durability"]["checkpoints"].as_u64(), Some(0), "none due in 0.3 s by default: {v}");
    let r = bin().args(["recover", data.to_str().unwrap()]).output().unwrap();
    let rout = text(&r.stdout);
    assert!(r.status.success(), "{rout}{}", text(&r.stderr));
    assert!(rout.contains("checkpoint") && rout.contains("smallbank.checking: 1000 rows"), "{rout}");
    assert!(rout.contains("check      passed: each of the 1000 customers has a savings and a checking row"), "{rout}");
    assert!(rout.contains("unchecked  money"), "{rout}");
    // Not empty any more: bench refuses it.
    let e = fails(&["--durability", "sync", "--data-dir", data.to_str().unwrap()]);
    assert!(e.contains("not empty"), "{e}");
    let e = fails(&["--durability", "sync"]);
    assert!(e.contains("--data-dir"), "{e}");
    let e = fails(&["--checkpoint-every", "1"]);
    assert!(e.contains("apply with --durability"), "{e}");
    let e = fails(&[
        "--durability",
        "async",
        "--checkpoint-every=-1",
        "--data-dir",
        dir.path().join("y").to_str().unwrap(),
    ]);
    assert!(e.contains("--checkpoint-every -1: give seconds"), "{e}");
    let e = fails(&["--durability", "often"]);
    assert!(e.contains("unknown durability 'often'"), "{e}");
    // The single-version protocols and BOHM log too.
    for p in ["silo", "1v-lock", "bohm"] {
        let d = dir.path().join(p);
        let o = bin()
            .args(["bench", "--workload", "smallbank", "--customers", "1000", "--threads", "2", "--duration", "0.3"])
            .args(["--protocol", p, "--durability", "async", "--data-dir", d.to_str().unwrap()])
            .args(["--checkpoint-every", "0.05"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{p}: {}{}", text(&o.stdout), text(&o.stderr));
        // Checkpoints fell due while it ran (BOHM's wait for its pipeline
        // to stop: an interactive transaction runs alone).
        let out = text(&o.stdout);
        assert!(out.contains(" checkpoints"), "{p}: {out}");
        if p != "bohm" {
            assert!(!out.contains(" 0 checkpoints"), "{p}: {out}");
        }
        let r = bin().args(["recover", d.to_str().unwrap(), "--protocol", p]).output().unwrap();
        let rout = text(&r.stdout);
        assert!(r.status.success(), "{p}: {rout}{}", text(&r.stderr));
        assert!(rout.contains("check      passed"), "{p}: {rout}");
    }
    // A damaged checkpoint: recover exits non-zero with one line.
    let cp = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "mvc"))
        .unwrap();
    std::fs::write(&cp, b"MVCKPT\x00\x01garbage").unwrap();
    let r = bin().args(["recover", data.to_str().unwrap()]).output().unwrap();
    assert!(!r.status.success());
    let err = text(&r.stderr);
    assert!(err.contains("checkpoint") && !err.contains("panicked"), "{err}");
}

/// A run whose consistency check fails still writes its history and checks
/// it (printing the verdict) before it exits non-zero with the check's
/// error: the history of that run is the one most worth having. The check
/// fails on purpose: lost updates (first-writer-wins switched off) lose
/// list appends.
#[test]
fn a_failed_consistency_check_still_writes_and_verifies_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let hist = dir.path().join("run.hist");
    let h = hist.to_str().unwrap();
    for round in 1..=6 {
        let duration = format!("{}", 0.2 * round as f64);
        let args = [
            "bench",
            "--workload",
            "list-append",
            "--list-keys",
            "2",
            "--isolation",
            "snapshot",
            "--threads",
            "4",
            "--duration",
            &duration,
            "--fault",
            "skip-write-conflicts",
            "--history",
            h,
            "--verify",
        ];
        let o = multiverse(&args, &[]);
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        if !err.contains("consistency check failed") {
            assert!(!err.contains("panicked"), "{err}");
            continue; // No append was lost this time.
        }
        assert!(!o.status.success());
        assert!(err.contains("list-append consistency check failed") && err.contains("lost or repeated"), "{err}");
        // The error is one line, besides the history's size (before and after).
        let errors: Vec<&str> = err.lines().filter(|l| !l.starts_with("history: ")).collect();
        assert_eq!(errors.len(), 1, "one line: {err}");
        assert!(err.contains("history: wrote "), "the history's size: {err}");
        assert!(out.contains("verify: snapshot: FAILED"), "the verdict comes first: {out}");
        // The history was written, and `check` finds the same violation.
        let c = multiverse(&["check", h], &[]);
        let cout = text(&c.stdout);
        assert!(!c.status.success() && cout.contains("snapshot: FAILED"), "{cout}{}", text(&c.stderr));
        return;
    }
    panic!("six rounds without a lost append");
}

/// The end-of-run checks read at another level than the run (snapshot
/// after a read-committed run, say) and are not recorded: `multiverse
/// check` without --isolation takes the history's one level.
#[test]
fn histories_hold_only_the_run_and_check_at_their_own_level() {
    let dir = tempfile::tempdir().unwrap();
    for (workload, size) in
        [("smallbank", &["--customers", "100"][..]), ("sibench", &["--rows", "100"]), ("tpcc", &["--warehouses", "1"])]
    {
        let hist = dir.path().join(format!("{workload}.hist"));
        let h = hist.to_str().unwrap();
        let args =
            [&["bench", "--workload", workload, "--threads", "2", "--duration", "0.2", "--history", h][..], size]
                .concat();
        let o = multiverse(&args, &[]);
        assert!(o.status.success(), "{workload}: {}", text(&o.stderr));
        let written = std::fs::read_to_string(&hist).unwrap();
        assert!(written.contains(" read-committed ") && !written.contains(" snapshot begin="), "{workload}");
        let c = multiverse(&["check", h], &[]);
        let cout = text(&c.stdout);
        assert!(c.status.success(), "{workload}: {cout}{}", text(&c.stderr));
        assert!(cout.contains("read-committed: OK"), "{workload}: {cout}");
    }
}

/// `--json` and `--history` are checked before the table is loaded: a path
/// that cannot be written fails at once, with one line, and the check
/// leaves no file behind (nor clobbers one).
#[test]
fn unwritable_output_paths_fail_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir").join("out.json");
    // 10M rows would take many seconds to load: the error must come first.
    let start = std::time::Instant::now();
    let e = fails(&["--rows", "10000000", "--duration", "60", "--json", missing.to_str().unwrap()]);
    assert!(e.contains("--json") && e.contains("does not exist"), "{e}");
    let e = fails(&["--rows", "10000000", "--duration", "60", "--history", dir.path().to_str().unwrap()]);
    assert!(e.contains("--history") && e.contains("cannot write"), "{e}");
    assert!(start.elapsed() < std::time::Duration::from_secs(5), "checked before loading: {:?}", start.elapsed());
    let kept = dir.path().join("kept.json");
    std::fs::write(&kept, "earlier").unwrap();
    let fresh = dir.path().join("fresh.json");
    let e = fails(&["--rows", "1000", "--duration", "0.1", "--json", fresh.to_str().unwrap(), "--workload", "nope"]);
    assert!(!e.is_empty());
    assert!(!fresh.exists(), "the check leaves no file behind");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "earlier");
}

/// `multiverse --help` names every subcommand.
#[test]
fn help_lists_every_subcommand() {
    let o = multiverse(&["--help"], &[]);
    assert!(o.status.success());
    let help = text(&o.stdout);
    for cmd in ["bench", "compare", "shell", "check", "recover", "verify"] {
        assert!(help.lines().any(|l| l.trim_start().starts_with(&format!("{cmd} "))), "{cmd} missing from:\n{help}");
    }
}

/// `--zipf gray --scramble --allow-repeats` run (through the threads'
/// harness and BOHM's pipeline), pass the consistency check and are in the
/// record's `params`; a bad generator name is a one-line error, and the
/// flags are ycsb's alone.
#[test]
fn ycsb_peer_key_generators_run_and_are_recorded() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for protocol in ["mv-occ", "bohm"] {
        let path = dir.path().join(format!("{protocol}.json"));
        let args = [
            "bench",
            "--workload",
            "ycsb",
            "--protocol",
            protocol,
            "--rows",
            "1000",
            "--value-bytes",
            "16",
            "--theta",
            "0.99",
            "--zipf",
            "gray",
            "--scramble",
            "--allow-repeats",
            "--threads",
            "2",
            "--duration",
            "0.2",
            "--json",
            path.to_str().unwrap(),
        ];
        let o = multiverse(&args, &[]);
        assert!(o.status.success(), "{protocol}: {}", text(&o.stderr));
        let out = text(&o.stdout);
        assert!(out.contains("zipf=gray scramble=true allow_repeats=true"), "{out}");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let p = &v["params"];
        assert_eq!((&p["zipf"], &p["scramble"], &p["allow_repeats"]), (&"gray".into(), &true.into(), &true.into()));
        assert_eq!(p["theta"], "0.99");
        assert!(v["committed"].as_u64().unwrap() > 0, "{v}");
    }

    let e = fails(&["--workload", "ycsb", "--zipf", "fast"]);
    assert!(e.contains("--zipf 'fast': expected exact or gray"), "{e}");
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    let e = fails(&["--workload", "ycsb", "--zipf", "gray", "--theta", "1"]);
    assert!(e.contains("--zipf gray") && e.contains("theta 1 is out of range"), "{e}");
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    for flag in [&["--zipf", "exact"][..], &["--scramble"], &["--allow-repeats"]] {
        let e = fails(&[&["--workload", "hekaton"][..], flag].concat());
        assert!(e.contains(&format!("{} is a flag of workload ycsb, not of hekaton", flag[0])), "{e}");
    }
}
