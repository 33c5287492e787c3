//! The benchmark's method, run as a user would: warm-up,
//! per-second series, p99.9, the machine and the build in the record, CPU
//! pinning, HdrHistogram log export, the time breakdown, and configs that
//! round-trip through the JSON record.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn multiverse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_multiverse")).args(args).output().expect("the multiverse binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `bench` with `args` and `--json FILE`; returns the record and stdout.
fn bench(dir: &Path, name: &str, args: &[&str]) -> (Value, String) {
    let json = dir.join(format!("{name}.json"));
    let mut all = vec!["bench", "--json", json.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = multiverse(&all);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    let rec = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (rec, text(&o.stdout))
}

fn fails(args: &[&str]) -> String {
    let mut all = vec!["bench", "--rows", "1000", "--duration", "0.1"];
    all.extend_from_slice(args);
    let o = multiverse(&all);
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{args:?} should fail; stdout: {}", text(&o.stdout));
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    err
}

/// As [`fails`], for the errors of `bench` itself (not clap's usage errors): one line.
fn fails_in_one_line(args: &[&str]) -> String {
    let err = fails(args);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

/// A warmed-up run measures only its --duration, and the record says how
/// long the warm-up was, what each second did, p99.9, the machine and the
/// build.
#[test]
fn warm_up_series_machine_and_build() {
    let dir = tempfile::tempdir().unwrap();
    let (r, out) = bench(dir.path(), "w", &["--rows", "10k", "--threads", "2", "--duration", "1.5", "--warmup", "0.5"]);
    assert_eq!(r["warmup_s"], 0.5);
    let d = r["duration_s"].as_f64().unwrap();
    assert!((1.4..2.5).contains(&d), "measured {d} s of a 1.5 s run after its warm-up");
    let secs: Vec<f64> = r["per_second_tps"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(secs.len(), 2, "one full second and a half: {secs:?}");
    assert!(secs.iter().all(|&v| v > 0.0), "{secs:?}");
    // The seconds add up to about what was committed: each rate is over
    // the time between two samples, and a sample taken late on a busy
    // machine moves the edge between them.
    let sum = secs[0] + secs[1] * (d - 1.0);
    let committed = r["committed"].as_f64().unwrap();
    assert!((sum - committed).abs() <= committed * 0.2, "{sum} vs {committed}");
    let l = &r["latency_us"];
    assert!(l["p99"].as_f64() <= l["p999"].as_f64() && l["p999"].as_f64() <= l["max"].as_f64(), "{l}");
    assert!(r["machine"]["logical_cpus"].as_u64().unwrap() >= 1);
    assert!(r["machine"]["kernel"].is_string() && r["machine"]["cpu_model"].is_string());
    assert!(r["build"]["rustc"].as_str().unwrap().starts_with("rustc "));
    assert!(["debug", "release"].contains(&r["build"]["profile"].as_str().unwrap()));
    assert!(out.contains("after 0.50 s of warm-up") && out.contains("p99.9"), "{out}");

    // No warm-up: measured from the start.
    let (r, _) = bench(dir.path(), "n", &["--rows", "1000", "--threads", "1", "--duration", "0.3", "--warmup", "0"]);
    assert_eq!(r["warmup_s"], 0.0);
    assert_eq!(r["per_second_tps"].as_array().unwrap().len(), 1, "a part-second of 0.3 s");
    // The default: a tenth of the duration.
    let (r, _) =
        bench(dir.path(), "d", &["--rows", "1000", "--threads", "1", "--duration", "0.3", "--protocol", "bohm"]);
    assert!((r["warmup_s"].as_f64().unwrap() - 0.03).abs() < 1e-9, "{}", r["warmup_s"]);
    assert!(r["committed"].as_u64().unwrap() > 0);
}

/// `--pin auto` pins the workers to the CPUs the process may use; a CPU
/// it may not use, or a bad list, is one clear error.
#[test]
fn pinning() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _) = bench(dir.path(), "p", &["--rows", "1000", "--threads", "2", "--duration", "0.2", "--pin", "auto"]);
    let cpus = r["pinned_cpus"].as_array().unwrap();
    assert!(!cpus.is_empty() && r["committed"].as_u64().unwrap() > 0, "{r}");
    let (r, _) = bench(dir.path(), "q", &["--rows", "1000", "--threads", "2", "--duration", "0.2", "--pin", "0"]);
    assert_eq!(r["pinned_cpus"], serde_json::json!([0]));
    let (r, _) = bench(dir.path(), "u", &["--rows", "1000", "--threads", "1", "--duration", "0.2"]);
    assert_eq!(r["pinned_cpus"], serde_json::json!([]));
    assert!(fails_in_one_line(&["--pin", "100000"]).contains("may not run on CPU 100000"));
    assert!(fails_in_one_line(&["--pin", "0,x"]).contains("'x' is not a CPU number"));
    assert!(fails_in_one_line(&["--pin", "3-1"]).contains("empty range"));
    assert!(fails(&["--warmup", "-1"]).contains("--warmup"));
}

/// `--latency-log` writes HdrHistogram's interval log: a header, then one
/// interval per tag (`all` and each type that committed).
#[test]
fn latency_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("lat.hlog");
    bench(
        dir.path(),
        "l",
        &[
            "--rows",
            "1000",
            "--duration",
            "0.3",
            "--mix",
            "update:50,read-only:50",
            "--latency-log",
            log.to_str().unwrap(),
        ],
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("#[StartTime: ") && text.contains("#[BaseTime: "), "{text}");
    let tags: Vec<&str> =
        text.lines().filter_map(|l| l.strip_prefix("Tag=")).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(tags, ["all", "update", "read-only"], "{text}");
    // Each interval's histogram decodes (base64 of a compressed V2 histogram).
    for l in text.lines().filter(|l| l.starts_with("Tag=")) {
        assert!(l.rsplit(',').next().unwrap().starts_with("HIST"), "{l}");
    }
    let missing = dir.path().join("no/such/dir/x.hlog");
    let e = fails_in_one_line(&["--latency-log", missing.to_str().unwrap()]);
    assert!(e.contains("--latency-log"), "{e}");
}

/// `--breakdown` splits each committed transaction's time into components
/// that add up to about its latency; bohm's are its pipeline's stages.
#[test]
fn breakdown() {
    let dir = tempfile::tempdir().unwrap();
    for protocol in ["mv-occ", "silo", "1v-lock", "ssn"] {
        let (r, out) = bench(
            dir.path(),
            protocol,
            &[
                "--protocol",
                protocol,
                "--isolation",
                "serializable",
                "--workload",
                "ycsb",
                "--rows",
                "1000",
                "--theta",
                "0.9",
                "--threads",
                "2",
                "--duration",
                "0.5",
                "--breakdown",
            ],
        );
        let all = &r["breakdown_ns_per_txn"]["all"];
        let part = |c: &str| all[c].as_f64().unwrap_or_else(|| panic!("{protocol}: no {c} in {all}"));
        for c in ["useful", "abort", "index", "validation", "wait", "gc", "log-wait"] {
            assert!(part(c) >= 0.0, "{protocol}: {c} {all}");
        }
        assert!(part("index") > 0.0 && part("useful") > 0.0, "{protocol}: {all}");
        if protocol != "1v-lock" {
            assert!(part("validation") > 0.0, "{protocol} validates at commit: {all}");
        }
        // The components are the timed transactions' time in the engine:
        // their mean lies below the largest latency (which counts a timed
        // transaction's whole time and more), and is not a sliver of the
        // median latency (ticks and nanoseconds mixed up). The median, not
        // the mean: on a busy machine a few transactions preempted while
        // holding locks take a thousand times the others, the mean follows
        // them, and the one transaction in 16 that is timed rarely is one.
        let total: f64 =
            ["useful", "abort", "index", "validation", "wait", "gc", "log-wait"].iter().map(|c| part(c)).sum();
        let median_latency_ns = 1e3 * r["latency_us"]["p50"].as_f64().unwrap();
        let max_latency_ns = 1e3 * r["latency_us"]["max"].as_f64().unwrap();
        assert!(
            total <= max_latency_ns && total >= median_latency_ns * 0.2,
            "{protocol}: {total} ns of parts, median latency {median_latency_ns} ns, max {max_latency_ns} ns"
        );
        assert!(r["breakdown_ns_per_txn"]["10rmw"].is_object(), "per type too: {}", r["breakdown_ns_per_txn"]);
        assert!(out.contains("breakdown") && out.contains("validation"), "{out}");
    }
    let (r, _) = bench(dir.path(), "off", &["--rows", "1000", "--duration", "0.2"]);
    assert!(r.get("breakdown_ns_per_txn").is_none(), "off by default");

    // BOHM: its pipeline's stages, timed a batch at a time, for all types
    // together: planning is index, evaluation useful, nothing validates.
    let args = ["--protocol", "bohm", "--workload", "ycsb", "--rows", "1000", "--theta", "0.9"];
    let (r, out) = bench(dir.path(), "bohm", &[&args[..], &["--duration", "0.5", "--breakdown"]].concat());
    let all = &r["breakdown_ns_per_txn"]["all"];
    let part = |c: &str| all[c].as_f64().unwrap_or_else(|| panic!("bohm: no {c} in {all}"));
    assert!(part("useful") > 0.0 && part("index") > 0.0, "bohm: {all}");
    assert_eq!((part("validation"), part("abort")), (0.0, 0.0), "bohm: {all}");
    assert!(
        r["breakdown_ns_per_txn"]["10rmw"].is_null(),
        "bohm has no per-type breakdown: {}",
        r["breakdown_ns_per_txn"]
    );
    // The parts are time the pipeline's three threads (sequencer, one
    // concurrency-control, one execution) spent: per transaction, at most
    // their wall time each, and not a sliver of it.
    let total: f64 = ["useful", "index", "wait", "gc", "log-wait"].iter().map(|c| part(c)).sum();
    let wall_per_txn_ns = 1e9 * r["duration_s"].as_f64().unwrap() / r["committed"].as_f64().unwrap();
    assert!(
        total <= 3.0 * 1.5 * wall_per_txn_ns && total >= 0.1 * wall_per_txn_ns,
        "bohm: {total} ns of parts, {wall_per_txn_ns} ns of wall time per transaction"
    );
    assert!(out.contains("the pipeline's stages timed a batch at a time"), "{out}");
}

/// A record's `config` holds every bench flag; `--config RECORD.json`
/// reruns it, a TOML config does the same, and typed flags override both.
#[test]
fn configs_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _) = bench(
        dir.path(),
        "first",
        &["--workload", "ycsb", "--rows", "2k", "--theta", "0.5", "--threads", "1", "--duration", "0.2", "--seed", "7"],
    );
    let c = &r["config"];
    assert_eq!(c["workload"], "ycsb");
    assert_eq!(c["rows"], "2k");
    assert_eq!(c["theta"], "0.5");
    assert_eq!(c["seed"], "7");
    assert_eq!(c["protocol"], "mv-occ", "defaults are recorded too");
    assert_eq!(c["verify"], false);
    assert!(c.get("json").is_none() && c.get("fault").is_none(), "outputs and hidden flags are left out: {c}");

    let first = dir.path().join("first.json");
    let (again, _) = bench(dir.path(), "again", &["--config", first.to_str().unwrap()]);
    assert_eq!(again["config"], r["config"], "the rerun has the same parameters");
    assert_eq!(again["params"], r["params"]);
    assert_eq!((again["seed"].clone(), again["workload"].clone()), (r["seed"].clone(), r["workload"].clone()));

    // TOML, with a typed flag overriding it.
    let toml = dir.path().join("run.toml");
    std::fs::write(
        &toml,
        "workload = \"ycsb\"\nrows = \"2k\"\ntheta = 0.5\nthreads = 1\nduration = 0.2\nycsb_no_prefetch = true\n",
    )
    .unwrap();
    let (t, _) = bench(dir.path(), "toml", &["--config", toml.to_str().unwrap(), "--theta", "0.8"]);
    assert_eq!(t["config"]["theta"], "0.8");
    assert_eq!(t["config"]["rows"], "2k");
    assert_eq!(t["config"]["ycsb-no-prefetch"], true);

    std::fs::write(&toml, "workload = \"ycsb\"\nwarp = 9\n").unwrap();
    let e = fails_in_one_line(&["--config", toml.to_str().unwrap()]);
    assert!(e.contains("--config") && e.contains("--warp"), "{e}");
}

/// `--plot` draws the per-second series, and with `--breakdown` the
/// breakdown too; a name that is neither .svg nor .png is refused.
#[test]
fn plots() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("run.svg");
    bench(
        dir.path(),
        "plot",
        &["--rows", "1000", "--duration", "1.2", "--warmup", "0.1", "--breakdown", "--plot", svg.to_str().unwrap()],
    );
    let series = std::fs::read_to_string(&svg).unwrap();
    assert!(series.contains("Throughput per second") && series.contains("committed"), "{series}");
    let b = std::fs::read_to_string(dir.path().join("run-breakdown.svg")).unwrap();
    for c in ["useful", "index", "validation"] {
        assert!(b.contains(c), "{c} in the breakdown plot");
    }
    let png = dir.path().join("run.png");
    bench(dir.path(), "png", &["--rows", "1000", "--duration", "0.3", "--plot", png.to_str().unwrap()]);
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    assert!(!dir.path().join("run-breakdown.png").exists(), "no breakdown taken, none drawn");
    assert!(fails_in_one_line(&["--plot", "x.pdf"]).contains("name an .svg or .png file"));
}

/// The flags that name one run's outputs or inputs belong to `bench`:
/// they are not flags of `compare` (a usage error, exit 2), rather than
/// ignored.
#[test]
fn compare_refuses_single_run_flags() {
    for flag in ["--config", "--plot", "--latency-log", "--json", "--history"] {
        let o = multiverse(&["compare", "--rows", "1000", "--duration", "0.1", flag, "x.svg"]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag}: {err}");
        assert!(err.starts_with(&format!("error: unexpected argument '{flag}'")), "{flag}: {err}");
    }
}

/// `--protocol none` runs the workload's transaction bodies on a no-CC
/// copy of the table (the no-concurrency-control ceiling): it commits everything, aborts
/// nothing, says so in the record, checks its copy, and refuses what it
/// cannot honour in one line.
#[test]
fn the_no_cc_ceiling_runs_and_refuses_what_it_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let (r, out) =
        bench(dir.path(), "none", &["--protocol", "none", "--rows", "10k", "--threads", "2", "--duration", "0.5"]);
    assert_eq!((r["protocol"].as_str(), r["isolation"].as_str()), (Some("none"), Some("none")), "{r}");
    assert!(r["committed"].as_u64().unwrap() > 1000, "{r}");
    assert_eq!(r["aborted"].as_u64(), Some(0), "{r}");
    assert!(out.starts_with("none / hekaton"), "{out}");
    assert!(out.contains("no-CC table: 10000 rows present"), "{out}");
    for (args, why) in [
        (&["--protocol", "none", "--workload", "ycsb"][..], "hekaton only"),
        (&["--protocol", "none", "--isolation", "serializable"][..], "--isolation does not apply"),
        (&["--protocol", "none", "--verify"][..], "--verify does not apply"),
        (&["--protocol", "none", "--breakdown"][..], "--breakdown does not apply"),
    ] {
        let e = fails_in_one_line(args);
        assert!(e.contains(why), "{args:?}: {e}");
    }
}

/// `--protocol bare` runs them on a plain open-addressing table (the
/// bare-hardware ceiling), beside `none` in one comparison, whose report
/// quotes every line against both.
#[test]
fn the_bare_ceiling_runs_beside_none_and_refuses_what_it_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let (r, out) =
        bench(dir.path(), "bare", &["--protocol", "bare", "--rows", "10k", "--threads", "2", "--duration", "0.5"]);
    assert_eq!((r["protocol"].as_str(), r["isolation"].as_str()), (Some("bare"), Some("bare")), "{r}");
    assert!(r["committed"].as_u64().unwrap() > 1000, "{r}");
    assert_eq!(r["aborted"].as_u64(), Some(0), "{r}");
    assert!(out.starts_with("bare / hekaton"), "{out}");
    assert!(out.contains("bare table: 10000 rows present"), "{out}");
    for (args, why) in [
        (&["--protocol", "bare", "--workload", "tpcc"][..], "hekaton only"),
        (&["--protocol", "bare", "--isolation", "snapshot"][..], "--isolation does not apply to --protocol bare"),
        (&["--protocol", "bare", "--durability", "sync"][..], "--durability does not apply"),
    ] {
        let e = fails_in_one_line(args);
        assert!(e.contains(why), "{args:?}: {e}");
    }
    let prefix = dir.path().join("c");
    let o = multiverse(&[
        "compare",
        "--rows",
        "10k",
        "--threads",
        "1",
        "--duration",
        "0.3",
        "--protocols",
        "mv-occ,none,bare",
        "--out",
        prefix.to_str().unwrap(),
    ]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    assert!(out.contains("share of the no-CC ceiling (none), median over median:"), "{out}");
    assert!(out.contains("share of the bare-hardware ceiling (bare), median over median:"), "{out}");
    let o = multiverse(&["compare", "--rows", "1000", "--duration", "0.1", "--protocols", "bare@snapshot"]);
    assert!(text(&o.stderr).contains("bare (the bare-hardware ceiling) takes no @level"), "{}", text(&o.stderr));
}

/// The record's timestamp increments cover the measured time only, as its
/// commits do: an MV/O update transaction takes one commit timestamp, so
/// after a warm-up as long as the run the ratio is still about one (it was
/// about two while the warm-up's increments were counted too).
#[test]
fn timestamp_increments_leave_the_warm_up_out() {
    let dir = tempfile::tempdir().unwrap();
    let (r, _) = bench(
        dir.path(),
        "ts",
        &["--rows", "10k", "--threads", "2", "--duration", "0.5", "--warmup", "0.5", "--isolation", "serializable"],
    );
    let (ts, c) = (r["timestamp_increments"].as_u64().unwrap(), r["committed"].as_u64().unwrap());
    let per = ts as f64 / c as f64;
    // Aborted attempts take no commit timestamp; a few straddle the switch.
    assert!((0.95..1.05).contains(&per), "{ts} increments for {c} commits: {per}");
}

/// `--no-retry` drops what the engine aborts: the record and the report say
/// so, and a contended run still commits (each dropped transaction makes
/// way for the next one). By default every abort is retried.
#[test]
fn engine_aborts_are_retried_unless_no_retry() {
    let dir = tempfile::tempdir().unwrap();
    let contended = ["--workload", "smallbank", "--customers", "20", "--threads", "4", "--duration", "0.3"];
    let (r, out) = bench(dir.path(), "retried", &contended);
    assert_eq!(r["aborts_retried"], true);
    assert!(out.contains("all retried"), "{out}");
    let (r, out) = bench(dir.path(), "dropped", &[&contended[..], &["--no-retry"]].concat());
    assert_eq!(r["aborts_retried"], false);
    assert!(out.contains("engine aborts dropped, not retried"), "{out}");
    assert!(r["committed"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["config"]["no-retry"], true, "{}", r["config"]);
}
