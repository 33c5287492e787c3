//! The rules every subcommand of `multiverse` follows on its command line:
//! exit statuses (2 for a usage error, 1 for a failed run), output paths
//! (created, but never their missing parent directories), negative numbers
//! (out of range, not unknown flags), and help that lists only the flags a
//! subcommand takes.

mod common;
use common::{multiverse, text};
use std::path::Path;
use std::process::Output;

/// Expects a usage error: exit 2, nothing on stdout, and the error's first
/// line containing `needle`; returns stderr.
fn usage_error(o: &Output, what: &str, needle: &str) -> String {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{what}: a usage error exits 2: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    let first = err.lines().next().unwrap_or("");
    assert!(first.contains(needle), "{what}: expected '{needle}' in the first line of: {err}");
    if first.starts_with("multiverse: ") {
        assert_eq!(err.trim_end().lines().count(), 1, "{what}: one line: {err}");
    } else {
        assert!(first.starts_with("error: "), "{what}: {err}");
    }
    assert!(o.stdout.is_empty(), "{what}: nothing ran: {}", text(&o.stdout));
    err
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// An output whose parent directory does not exist is refused in one line
/// naming that directory (exit 2), by every subcommand, and nothing is
/// created.
#[test]
fn outputs_never_create_missing_parent_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    let file = |name: &str| missing.join("sub").join(name);
    let bench = ["bench", "--rows", "100", "--duration", "0.1", "--threads", "1"];
    for flag in ["--json", "--history", "--latency-log", "--plot"] {
        let f = file("out.svg");
        let o = multiverse(&[&bench[..], &[flag, s(&f)]].concat());
        usage_error(
            &o,
            flag,
            &format!("{flag} {}: directory {} does not exist", f.display(), f.parent().unwrap().display()),
        );
    }
    let o = multiverse(&[&bench[..], &["--durability", "sync", "--data-dir", s(&file("data"))]].concat());
    usage_error(&o, "bench --data-dir", "does not exist");
    let compare = ["compare", "--rows", "100", "--duration", "0.1", "--threads", "1"];
    let o = multiverse(&[&compare[..], &["--out", s(&file("prefix"))]].concat());
    usage_error(&o, "compare --out", &format!("--out {}: directory", file("prefix").display()));
    let o = multiverse(&[&compare[..], &["--durability", "sync", "--data-dir", s(&file("data"))]].concat());
    usage_error(&o, "compare --data-dir", "does not exist");
    let o = multiverse(&["compare", "--replot", s(&tmp.path().join("x.json")), "--out", s(&file("p"))]);
    usage_error(&o, "compare --replot --out", "does not exist");
    let o = multiverse(&["report", s(tmp.path()), "--out", s(&file("report.html"))]);
    usage_error(&o, "report --out", "does not exist");
    let o = multiverse(&["verify", "--budget", "1s", "--keep", s(&file("keep"))]);
    usage_error(&o, "verify --keep", "does not exist");
    // export, import and backup: checked before the source is read.
    let src = tmp.path().to_path_buf();
    let o = multiverse(&["export", s(&src), "--out", s(&file("exported"))]);
    usage_error(&o, "export --out", "does not exist");
    let o = multiverse(&["import", s(&src), "--into", s(&file("imported"))]);
    usage_error(&o, "import --into", "does not exist");
    let o = multiverse(&["backup", s(&src), "--out", s(&file("copy"))]);
    usage_error(&o, "backup --out", "does not exist");
    // The literal case from the rule: a parent under a directory that is not there.
    let o = multiverse(&["compare", "--rows", "100", "--duration", "0.1", "--out", "/nonexistent/x/cmp"]);
    usage_error(&o, "compare --out /nonexistent", "directory /nonexistent/x does not exist");
    assert!(!missing.exists(), "no directory was created");
    assert!(!Path::new("/nonexistent").exists());

    // An output that is a directory by nature is created itself (its
    // parent exists), and an output file in an existing directory too.
    let data = tmp.path().join("data");
    let prefix = tmp.path().join("cmp");
    let o = multiverse(
        &[&compare[..], &["--durability", "sync", "--data-dir", s(&data), "--out", s(&prefix), "--warmup", "0"]]
            .concat(),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(data.is_dir() && tmp.path().join("cmp.json").is_file());
}

/// Every numeric flag refuses a negative number as out of range (exit 2,
/// the flag named), not as an unknown argument.
#[test]
fn negative_numbers_are_out_of_range() {
    let bench_flags = [
        "--threads",
        "--duration",
        "--warmup",
        "--rows",
        "--seed",
        "--prefault",
        "--deadlock-us",
        "--lock-timeout-us",
        "--safe-snapshot-us",
        "--read-mostly-age",
        "--log-streams",
        "--checkpoint-log-mb",
        "--cc-threads",
        "--exec-threads",
        "--batch-size",
        "--reads",
        "--writes",
        "--long-readers",
        "--warehouses",
        "--customers",
        "--subscribers",
        "--value-bytes",
        "--sibench-query-threads",
        "--spin-us",
        "--trade-days",
        "--asset-eval-fraction",
    ];
    for flag in bench_flags {
        for n in ["-1", "-5"] {
            let o = multiverse(&["bench", flag, n, "--duration", "0.1"]);
            let err = usage_error(&o, &format!("bench {flag} {n}"), &format!("invalid value '{n}' for '{flag} <"));
            assert!(!err.contains("unexpected argument"), "{flag}: {err}");
            let first = err.lines().next().unwrap();
            assert!(
                first.contains("out of range") || first.contains(" is not in "),
                "{flag} {n}: the message says the value is out of range: {first}"
            );
        }
    }
    // --checkpoint-every takes seconds: refused by bench itself, in one line.
    let o = multiverse(&["bench", "--checkpoint-every", "-1", "--durability", "sync", "--data-dir", "x"]);
    usage_error(&o, "--checkpoint-every -1", "--checkpoint-every -1: give seconds, 0 or more");
    for (cmd, flag) in
        [("compare", "--repeat"), ("compare", "--threads"), ("verify", "--threads"), ("verify", "--seed")]
    {
        let o = multiverse(&[cmd, flag, "-1"]);
        let err = usage_error(&o, &format!("{cmd} {flag}"), &format!("invalid value '-1' for '{flag}"));
        assert!(!err.contains("unexpected argument"), "{cmd} {flag}: {err}");
    }
    let o = multiverse(&["compare", "--rows", "100", "--sweep", "threads=1,-2"]);
    usage_error(&o, "compare --sweep threads=-2", "out of range");
}

/// A usage error (bad flag, bad value, flags that do not combine, a missing
/// argument) exits 2 in every subcommand, whoever catches it; a run that
/// fails exits 1.
#[test]
fn usage_errors_exit_2_and_failed_runs_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let hist = tmp.path().join("h.history");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        // Unknown flags, caught by the argument parser.
        (vec!["bench", "--nope"], "unexpected argument '--nope'"),
        (vec!["compare", "--nope"], "unexpected argument '--nope'"),
        (vec!["check", "f", "--nope"], "unexpected argument '--nope'"),
        (vec!["report", "d", "--nope"], "unexpected argument '--nope'"),
        (vec!["verify", "--nope"], "unexpected argument '--nope'"),
        (vec!["recover", "d", "--nope"], "unexpected argument '--nope'"),
        (vec!["shell", "--nope"], "unexpected argument '--nope'"),
        (vec!["export", "--nope"], "unexpected argument '--nope'"),
        // Missing required arguments.
        (vec!["check"], "required arguments were not provided"),
        (vec!["report"], "required arguments were not provided"),
        (vec!["recover"], "required arguments were not provided"),
        // Bad values, caught by the subcommand.
        (vec!["bench", "--protocol", "paxos", "--duration", "0.1"], "unknown protocol 'paxos'"),
        (vec!["bench", "--workload", "nope", "--duration", "0.1"], "nope"),
        (vec!["bench", "--fault", "chaos", "--duration", "0.1"], "unknown fault 'chaos'"),
        (vec!["bench", "--isolation", "chaos", "--duration", "0.1"], "unknown isolation level 'chaos'"),
        (vec!["compare", "--protocols", "paxos", "--duration", "0.1"], "unknown protocol 'paxos'"),
        (vec!["compare", "--sweep", "nope=1"], "'nope' is not a flag of multiverse bench"),
        (vec!["check", s(&hist), "--isolation", "chaos"], "unknown isolation level 'chaos'"),
        (vec!["verify", "--protocols", "paxos"], "paxos"),
        // Flags that do not combine.
        (vec!["bench", "--data-dir", "x", "--duration", "0.1"], "--data-dir needs --durability"),
        (vec!["bench", "--workload", "ycsb", "--reads", "1", "--duration", "0.1"], "--reads"),
        (
            vec!["bench", "--rows", "100", "--long-readers", "4", "--threads", "1", "--duration", "0.1"],
            "--long-readers",
        ),
        (vec!["compare", "--sweep", "threads=1", "--sweep", "threads=2"], "given twice"),
        (vec!["compare", "--note", "x"], "required arguments were not provided"),
        (vec!["verify", "--min-run", "2", "--max-run", "1"], "--min-run 2 is longer than --max-run 1"),
        (vec!["verify", "--budget", "1m", "--minutes", "1"], "cannot be used with"),
    ];
    for (args, needle) in &cases {
        usage_error(&multiverse(args), &args.join(" "), needle);
    }
    // Failed runs: exit 1, one line.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for (args, needle) in [
        (vec!["check", s(&tmp.path().join("missing.history"))], "cannot open"),
        (vec!["report", s(&empty)], "holds no benchmark records"),
    ] {
        let o = multiverse(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: a failed run exits 1: {err}");
        assert!(err.contains(needle) && err.trim_end().lines().count() == 1, "{args:?}: {err}");
    }
    // The statuses are documented in the top-level help.
    let help = text(&multiverse(&["--help"]).stdout);
    assert!(help.contains("Exit status: 0 success; 1 the command ran and failed"), "{help}");
    assert!(help.contains("2 a usage error") && help.contains("3 recover"), "{help}");
}

/// The flag names a subcommand's help lists (`--name` at the start of an
/// entry: `      --threads <N>`, `  -h, --help`).
fn help_flags(cmd: &str) -> Vec<String> {
    let o = multiverse(&[cmd, "--help"]);
    assert!(o.status.success(), "{cmd} --help: {}", text(&o.stderr));
    text(&o.stdout)
        .lines()
        .filter(|l| l.len() - l.trim_start().len() <= 6 && l.trim_start().starts_with('-'))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")))
        .map(|w| w.trim_end_matches(',').split(['=', '<']).next().unwrap_or("").to_string())
        .collect()
}

/// `compare` and `bench` share the run's flags; each one's help lists only
/// the flags it takes: bench's output flags are not compare's, compare's
/// own flags are not bench's.
#[test]
fn help_lists_only_the_flags_each_subcommand_takes() {
    let bench = help_flags("bench");
    let compare = help_flags("compare");
    for f in ["--json", "--history", "--config", "--plot", "--latency-log"] {
        assert!(bench.contains(&f.to_string()), "bench takes {f}: {bench:?}");
        assert!(!compare.contains(&f.to_string()), "compare's help lists {f}, which it does not take: {compare:?}");
        let o = multiverse(&["compare", f, "x.json"]);
        usage_error(&o, &format!("compare {f}"), &format!("unexpected argument '{f}'"));
    }
    for f in ["--protocols", "--sweep", "--repeat", "--out", "--replot", "--note"] {
        assert!(compare.contains(&f.to_string()), "compare takes {f}: {compare:?}");
        assert!(!bench.contains(&f.to_string()), "bench's help lists {f}, which it does not take: {bench:?}");
    }
    assert!(bench.contains(&"--threads".to_string()) && compare.contains(&"--threads".to_string()));
}

/// `--history FILE` says on stderr how large the file grows, before the
/// run, and how large it came out, after.
#[test]
fn history_announces_its_size() {
    let tmp = tempfile::tempdir().unwrap();
    let h = tmp.path().join("run.history");
    let o = multiverse(&[
        "bench",
        "--rows",
        "100",
        "--threads",
        "1",
        "--duration",
        "0.1",
        "--warmup",
        "0",
        "--history",
        s(&h),
    ]);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    let before = err.lines().find(|l| l.starts_with("history: every operation")).unwrap_or_else(|| panic!("{err}"));
    assert!(before.contains("bytes per operation") && before.contains(s(&h)), "{before}");
    let size = std::fs::metadata(&h).unwrap().len();
    let after = err
        .lines()
        .find(|l| l.starts_with(&format!("history: wrote {}: ", h.display())))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(after.contains("per committed transaction") && after.contains("per second of run"), "{after}");
    assert!(size > 0, "{after}");
    let o = multiverse(&["bench", "--rows", "100", "--threads", "1", "--duration", "0.1", "--warmup", "0"]);
    assert!(!text(&o.stderr).contains("history:"), "only with --history");
}
