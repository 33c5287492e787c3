//! `multiverse bench --workload tpcc`, run as a user would: the real binary,
//! short runs, the consistency conditions checked at the end.

use std::process::{Command, Output};

fn multiverse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_multiverse")).args(args).output().expect("the multiverse binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `bench` with `args`, expecting failure; returns the first error line.
fn fails(args: &[&str]) -> String {
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

/// Runs `bench` with `args` and `--json`, expecting success; returns (stdout, JSON).
fn runs(name: &str, args: &[&str]) -> (String, serde_json::Value) {
    let dir = std::env::temp_dir().join(format!("multiverse-tpcc-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.json");
    let mut all = vec!["bench", "--workload", "tpcc", "--json", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = multiverse(&all);
    assert!(o.status.success(), "{args:?}: stderr: {}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    (text(&o.stdout), v)
}

const TYPES: [&str; 6] = ["new-order", "payment", "order-status", "delivery", "stock-level", "new-order-lines"];

#[test]
fn the_standard_mix_runs_and_keeps_the_consistency_conditions() {
    let (out, v) = runs("std", &["--threads", "2", "--duration", "0.5", "--isolation", "snapshot"]);
    assert!(out.contains("conditions 1-4 hold in all 20 districts of 2 warehouses"), "{out}");
    assert_eq!(v["workload"], "tpcc");
    assert_eq!(v["params"]["warehouses"], 2, "one warehouse per thread by default");
    assert_eq!(v["params"]["random_warehouse"], false);
    assert_eq!(v["params"]["mix"], "new-order:45,payment:43,order-status:4,delivery:4,stock-level:4");
    let per = v["per_type"].as_object().unwrap();
    let mut sum = 0;
    for n in TYPES {
        sum += per[n]["committed"].as_u64().unwrap();
    }
    assert_eq!(sum, v["committed"].as_u64().unwrap());
    for n in ["new-order", "payment"] {
        assert!(per[n]["committed"].as_u64().unwrap() > 0, "{n} ran: {v}");
    }
    assert_eq!(per["new-order-lines"]["committed"], 0);
    // 1% of NewOrders name an unused item and roll back: user aborts of new-order only.
    let user = |n: &str| per[n]["aborts_by_reason"]["user"].as_u64().unwrap_or(0);
    assert_eq!(user("payment") + user("delivery"), 0);
    assert_eq!(v["aborts_by_reason"]["user"].as_u64().unwrap(), user("new-order"));
}

#[test]
fn tpc_cc_and_the_new_order_only_modes_run() {
    let (out, v) = runs(
        "cc",
        &["--tpcc-cc", "--warehouses", "3", "--threads", "2", "--duration", "0.3", "--isolation", "serializable"],
    );
    assert!(out.contains("30 districts of 3 warehouses"), "{out}");
    assert_eq!(v["params"]["random_warehouse"], true);
    let (out, v) =
        runs("nol", &["--mix", "new-order-lines:100", "--warehouses", "1", "--threads", "1", "--duration", "0.3"]);
    assert!(out.contains("new-order-lines lines"), "{out}");
    assert!(v["per_type"]["new-order-lines"]["committed"].as_u64().unwrap() > 0);
    let (_, v) = runs("no", &["--mix", "new-order:100", "--warehouses", "1", "--threads", "1", "--duration", "0.3"]);
    assert_eq!(v["per_type"]["payment"]["committed"], 0);
    assert!(v["per_type"]["new-order"]["committed"].as_u64().unwrap() > 0);
}

#[test]
fn bad_tpcc_arguments_get_one_clear_line() {
    let e = fails(&["--workload", "tpcc", "--warehouses", "0"]);
    assert!(e.contains("--warehouses") && e.contains("at least 1"), "{e}");
    let e = fails(&["--workload", "tpcc", "--warehouses", "lots"]);
    assert!(e.contains("--warehouses") && e.contains("not a number of warehouses"), "{e}");
    let e = fails(&["--workload", "tpcc", "--warehouses", "100000"]);
    assert!(e.contains("at most 10000"), "{e}");
    let e = fails(&["--workload", "hekaton", "--warehouses", "2"]);
    assert_eq!(e, "multiverse: --warehouses is a flag of workload tpcc, not of hekaton");
    let e = fails(&["--workload", "ycsb", "--tpcc-cc"]);
    assert_eq!(e, "multiverse: --tpcc-cc is a flag of workload tpcc, not of ycsb");
    let e = fails(&["--workload", "tpcc", "--rows", "10"]);
    assert!(e.contains("--rows does not apply to workload tpcc"), "{e}");
    let e = fails(&["--workload", "tpcc", "--mix", "new-order:50,refund:50"]);
    assert!(e.contains("unknown transaction type 'refund'") && e.contains("stock-level"), "{e}");
    let e = fails(&["--workload", "tpcc", "--mix", "new-order:50,payment:40"]);
    assert!(e.contains("add up to 90"), "{e}");
}
