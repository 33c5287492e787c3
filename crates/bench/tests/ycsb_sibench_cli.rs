//! `multiverse bench` with the ycsb and sibench workloads and the Hekaton
//! section 5.2 mixes, run as a user would: the real binary, tiny sizes,
//! short durations.

use serde_json::Value;
use std::process::{Command, Output};

fn multiverse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_multiverse")).args(args).output().expect("the multiverse binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `bench` with `args` and `--json`; returns the summary and the record.
fn run_json(name: &str, args: &[&str]) -> (String, Value) {
    let dir = std::env::temp_dir().join(format!("multiverse-ycsb-sibench-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.json"));
    let mut all = vec!["bench", "--json", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = multiverse(&all);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).ok();
    (text(&o.stdout), v)
}

/// The `per_type` entry names of a record, and checks their commits add up.
fn per_type(v: &Value) -> Vec<String> {
    let t = v["per_type"].as_object().unwrap();
    let sum: u64 = t.values().map(|x| x["committed"].as_u64().unwrap()).sum();
    assert_eq!(sum, v["committed"].as_u64().unwrap(), "per-type commits add up: {v}");
    let aborted: u64 = t.values().map(|x| x["aborted"].as_u64().unwrap()).sum();
    assert_eq!(aborted, v["aborted"].as_u64().unwrap());
    t.keys().cloned().collect()
}

/// Runs `bench` expecting failure; returns stderr.
fn fails(args: &[&str]) -> String {
    let mut all = vec!["bench", "--duration", "0.1"];
    if !args.contains(&"--rows") {
        all.extend(["--rows", "1000"]);
    }
    all.extend_from_slice(args);
    let o = multiverse(&all);
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{args:?} should fail; stdout: {}", text(&o.stdout));
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    err
}

#[test]
fn ycsb_runs_every_type_and_checks_its_counters() {
    let (out, v) = run_json(
        "ycsb",
        &[
            "--workload",
            "ycsb",
            "--rows",
            "2000",
            "--value-bytes",
            "100",
            "--theta",
            "0.9",
            "--mix",
            "10rmw:30,2rmw-8r:30,scan:20,scan-rmw:20",
            "--scan-records",
            "100",
            "--threads",
            "2",
            "--duration",
            "0.3",
            "--isolation",
            "serializable",
        ],
    );
    assert_eq!(v["workload"], "ycsb");
    let p = &v["params"];
    assert_eq!(
        (p["rows"].as_u64(), p["value_bytes"].as_u64(), p["scan_records"].as_u64()),
        (Some(2000), Some(100), Some(100))
    );
    assert_eq!(
        (p["theta"].as_str(), p["mix"].as_str()),
        (Some("0.9"), Some("10rmw:30,2rmw-8r:30,scan:20,scan-rmw:20"))
    );
    let mut types = per_type(&v);
    types.sort();
    assert_eq!(types, ["10op", "10rmw", "2rmw-8r", "scan", "scan-rmw"]);
    for t in ["10rmw", "2rmw-8r", "scan", "scan-rmw"] {
        assert!(v["per_type"][t]["committed"].as_u64().unwrap() > 0, "{t}: {v}");
        assert!(out.contains(t), "summary lists {t}: {out}");
    }
    let c = v["consistency"].as_str().unwrap();
    assert!(c.contains("2000 records intact") && c.contains("committed read-modify-writes"), "{c}");
    assert!(out.contains("consistent 2000 records intact"), "{out}");
}

/// SSN's read-mostly optimization on ycsb's read-mostly transactions: the
/// summary and the record count the untracked reads, and the counters
/// still add up; the flag is refused for other protocols.
#[test]
fn ycsb_scan_rmw_under_ssn_read_mostly() {
    let (out, v) = run_json(
        "read-mostly",
        &[
            "--workload",
            "ycsb",
            "--rows",
            "5000",
            "--value-bytes",
            "32",
            "--mix",
            "10rmw:50,scan-rmw:50",
            "--scan-records",
            "200",
            "--threads",
            "2",
            "--duration",
            "0.3",
            "--protocol",
            "ssn",
            "--read-mostly-age",
            "0",
        ],
    );
    assert_eq!(v["read_mostly_age"].as_u64(), Some(0), "{v}");
    assert!(v["untracked_reads"].as_u64().unwrap() > 0, "{v}");
    assert!(v["per_type"]["scan-rmw"]["committed"].as_u64().unwrap() > 0, "{v}");
    assert!(out.contains("untracked ") && out.contains("read-mostly"), "{out}");
    assert!(v["consistency"].as_str().unwrap().contains("committed read-modify-writes"), "{v}");
    let e = fails(&["--workload", "ycsb", "--protocol", "ssi", "--read-mostly-age", "10"]);
    assert!(e.contains("--read-mostly-age applies to ssn, not ssi"), "{e}");
}

/// CCBench's YCSB: 10op with 4-byte values and blind writes, under Silo.
#[test]
fn ycsb_ten_op_runs_with_small_values() {
    let (out, v) = run_json(
        "ten-op",
        &[
            "--workload",
            "ycsb",
            "--mix",
            "10op:100",
            "--value-bytes",
            "4",
            "--write-pct",
            "50",
            "--rows",
            "2000",
            "--protocol",
            "silo",
            "--threads",
            "2",
            "--duration",
            "0.3",
        ],
    );
    assert_eq!((v["params"]["write_pct"].as_u64(), v["params"]["value_bytes"].as_u64()), (Some(50), Some(4)));
    assert!(v["per_type"]["10op"]["committed"].as_u64().unwrap() > 0, "{v}");
    assert!(out.contains("consistent 2000 records intact (10op's blind writes"), "{out}");
}

#[test]
fn ycsb_defaults_follow_the_paper() {
    let o = multiverse(&["bench", "--workload", "ycsb", "--rows", "1000", "--threads", "1", "--duration", "0.1"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("rows=1000 value_bytes=1000 theta=0 mix=10rmw:100 scan_records=10000"),
        "1,000-byte values, uniform keys, 10RMW only: {out}"
    );
}

#[test]
fn sibench_runs_both_client_groups() {
    let (out, v) = run_json(
        "sibench",
        &[
            "--workload",
            "sibench",
            "--rows",
            "500",
            "--sibench-accesses",
            "4-8",
            "--sibench-writes",
            "2",
            "--sibench-query-threads",
            "1",
            "--sibench-query-accesses",
            "50-60",
            "--threads",
            "2",
            "--duration",
            "0.3",
            "--isolation",
            "snapshot",
        ],
    );
    assert_eq!(v["workload"], "sibench");
    let p = &v["params"];
    assert_eq!((p["rows"].as_u64(), p["accesses"].as_str(), p["writes"].as_str()), (Some(500), Some("4-8"), Some("2")));
    assert_eq!((p["query_threads"].as_u64(), p["query_accesses"].as_str()), (Some(1), Some("50-60")));
    let mut types = per_type(&v);
    types.sort();
    assert_eq!(types, ["query", "update"]);
    assert!(v["per_type"]["query"]["committed"].as_u64().unwrap() > 0);
    assert!(v["per_type"]["update"]["committed"].as_u64().unwrap() > 0);
    assert!(v["consistency"].as_str().unwrap().contains("committed writes"), "{v}");
    assert!(out.contains("accesses=4-8 writes=2"), "{out}");
    // Defaults: 1,000 records, 8 to 12 accesses, 25% writes.
    let o = multiverse(&["bench", "--workload", "sibench", "--threads", "1", "--duration", "0.1"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("rows=1000 accesses=8-12 writes=25% query_threads=0"), "{out}");
    assert!(!out.contains("per type"), "one type without a query group: {out}");
}

#[test]
fn hekaton_reports_updates_short_reads_and_long_reads_separately() {
    let (out, v) = run_json(
        "hekaton",
        &[
            "--workload",
            "hekaton",
            "--rows",
            "5000",
            "--mix",
            "update:50,read-only:50",
            "--long-readers",
            "1",
            "--long-read-pct",
            "5",
            "--threads",
            "2",
            "--duration",
            "0.3",
        ],
    );
    let mut types = per_type(&v);
    types.sort();
    assert_eq!(types, ["long-read", "read-only", "update"]);
    for t in ["long-read", "read-only", "update"] {
        assert!(v["per_type"][t]["committed"].as_u64().unwrap() > 0, "{t}: {v}");
    }
    let p = &v["params"];
    assert_eq!((p["long_readers"].as_u64(), p["long_read_rows"].as_u64()), (Some(1), Some(250)));
    assert_eq!(p["mix"], "update:50,read-only:50");
    assert!(out.contains("long-read"), "{out}");
    // The homogeneous workload keeps its single type.
    let (_, v) = run_json("hekaton-plain", &["--rows", "1000", "--threads", "1", "--duration", "0.1"]);
    assert_eq!(per_type(&v), ["update"]);
    assert!(v["params"].get("mix").is_none());
}

#[test]
fn bad_arguments_give_one_line_errors() {
    for (args, want) in [
        (&["--workload", "ycsb", "--theta", "-1"][..], "--theta: theta -1 is out of range"),
        (&["--workload", "ycsb", "--theta", "1000"][..], "out of range"),
        (&["--workload", "ycsb", "--mix", "10rmw:50,read:50"][..], "unknown transaction type 'read'"),
        (&["--workload", "ycsb", "--mix", "10rmw:50"][..], "add up to 50"),
        (&["--workload", "ycsb", "--value-bytes", "8"][..], "--value-bytes 8 is out of range"),
        (&["--workload", "ycsb", "--rows", "5"][..], "only 5"),
        (&["--workload", "ycsb", "--scan-records", "10"][..], "add one to --mix"),
        (&["--workload", "ycsb", "--write-pct", "10"][..], "add 10op to --mix"),
        (&["--workload", "ycsb", "--mix", "10op:100", "--write-pct", "101"][..], "--write-pct 101 is above 100"),
        (
            &["--workload", "ycsb", "--mix", "10op:100", "--value-bytes", "3"][..],
            "--value-bytes 3 is out of range: 4 to",
        ),
        (&["--workload", "ycsb", "--mix", "scan:100", "--scan-records", "2000"][..], "only 1000"),
        (&["--workload", "ycsb", "--rows", "100M"][..], "needs about"),
        (&["--workload", "ycsb", "--reads", "3"][..], "--reads is a flag of workload hekaton, not of ycsb"),
        (&["--workload", "hekaton", "--theta", "0.9"][..], "--theta is a flag of workload ycsb, not of hekaton"),
        (&["--workload", "tpcc", "--sibench-writes", "2"][..], "--sibench-writes is a flag of workload sibench"),
        (&["--workload", "sibench", "--mix", "update:100"][..], "--mix does not apply to workload sibench"),
        (&["--workload", "sibench", "--sibench-accesses", "12-8"][..], "is empty"),
        (&["--workload", "sibench", "--sibench-accesses", "lots"][..], "not an access range"),
        (&["--workload", "sibench", "--sibench-writes", "150%"][..], "between 0% and 100%"),
        (&["--workload", "sibench", "--sibench-query-threads", "3", "--threads", "2"][..], "more than --threads 2"),
        (&["--workload", "sibench", "--sibench-query-accesses", "5"][..], "add --sibench-query-threads"),
        (&["--workload", "hekaton", "--mix", "update:50,long-read:50"][..], "use --long-readers K"),
        (&["--workload", "hekaton", "--mix", "update:50,scan:50"][..], "unknown transaction type 'scan'"),
        (&["--workload", "hekaton", "--long-readers", "3", "--threads", "2"][..], "more than --threads 2"),
        (&["--workload", "hekaton", "--long-read-pct", "5"][..], "add --long-readers K"),
        (&["--workload", "hekaton", "--long-readers", "1", "--long-read-pct", "0"][..], "--long-read-pct 0"),
    ] {
        let e = fails(args);
        assert!(e.contains(want), "{args:?}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: one line: {e}");
    }
    // Syntax errors come from the argument parser.
    let e = fails(&["--workload", "ycsb", "--theta", "hot"]);
    assert!(e.starts_with("error:") && e.contains("--theta"), "{e}");
}

#[test]
fn help_lists_the_new_flags() {
    let o = multiverse(&["bench", "--help"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let h = text(&o.stdout);
    for f in [
        "--theta",
        "--value-bytes",
        "--scan-records",
        "--ycsb-no-prefetch",
        "--sibench-accesses",
        "--sibench-writes",
        "--sibench-query-threads",
        "--sibench-query-accesses",
        "--long-readers",
        "--long-read-pct",
        "Workload ycsb",
        "Workload sibench",
    ] {
        assert!(h.contains(f), "help lacks {f}");
    }
}
