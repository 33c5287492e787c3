//! `multiverse bench --workload smallbank` and `--workload tatp`, run as a
//! user would: the real binary, tiny sizes, short runs.

mod common;
use common::{fails, multiverse, runs, text};

/// The per-type records: every name present, committed counts adding up.
fn check_per_type(v: &serde_json::Value, names: &[&str]) {
    let per = v["per_type"].as_object().unwrap();
    assert_eq!(per.len(), names.len(), "{per:?}");
    let mut sum = 0;
    for n in names {
        let t = &per[*n];
        sum += t["committed"].as_u64().unwrap_or_else(|| panic!("no per_type entry for {n}: {v}"));
        assert!(t["latency_us"].is_object() && t["aborts_by_reason"].is_object(), "{t}");
    }
    assert_eq!(sum, v["committed"].as_u64().unwrap());
}

#[test]
fn smallbank_runs_and_checks_the_money() {
    let (out, v) = runs(
        "sb",
        &[
            "--workload",
            "smallbank",
            "--customers",
            "50",
            "--threads",
            "2",
            "--duration",
            "0.3",
            "--isolation",
            "snapshot",
        ],
    );
    assert!(out.contains("consistent money:") && out.contains("50 savings + 50 checking"), "{out}");
    assert_eq!(v["workload"], "smallbank");
    assert_eq!(v["params"]["customers"], 50);
    assert_eq!(v["params"]["spin_us"], 0);
    assert_eq!(v["params"]["mix"], "balance:20,deposit-checking:20,transact-savings:20,amalgamate:20,write-check:20");
    assert_eq!(v["load_rows"], 150);
    check_per_type(&v, &["balance", "deposit-checking", "transact-savings", "amalgamate", "write-check"]);
    for n in ["balance", "amalgamate", "write-check"] {
        assert!(v["per_type"][n]["committed"].as_u64().unwrap() > 0, "{n} ran");
    }
    assert!(v["consistency"].as_str().unwrap().starts_with("money:"));

    // A mix, a spin, a count with a suffix.
    let (_, v) = runs(
        "sb-mix",
        &[
            "--workload",
            "smallbank",
            "--customers",
            "1k",
            "--spin-us",
            "20",
            "--mix",
            "balance:50,write-check:50",
            "--duration",
            "0.2",
            "--threads",
            "1",
        ],
    );
    assert_eq!(v["params"]["customers"], 1000);
    assert_eq!(v["params"]["spin_us"], 20);
    let per = &v["per_type"];
    assert_eq!(per["deposit-checking"]["committed"], 0);
    assert!(per["balance"]["committed"].as_u64().unwrap() > 0);
    // 20 us of spin per transaction: at most 50,000 per second on one thread.
    assert!(v["throughput_tps"].as_f64().unwrap() < 50_000.0, "{}", v["throughput_tps"]);
}

#[test]
fn tatp_runs_and_checks_the_database() {
    let (out, v) =
        runs("tatp", &["--workload", "tatp", "--subscribers", "2000", "--threads", "2", "--duration", "0.3"]);
    assert!(out.contains("consistent 2000 subscribers"), "{out}");
    assert_eq!(v["workload"], "tatp");
    assert_eq!(v["isolation"], "read-committed");
    assert_eq!(v["params"]["subscribers"], 2000);
    assert_eq!(v["params"]["nurand_a"], 65535);
    assert_eq!(
        v["params"]["mix"],
        "get-subscriber-data:35,get-new-destination:10,get-access-data:35,update-subscriber-data:2,\
         update-location:14,insert-call-forwarding:2,delete-call-forwarding:2"
    );
    let names = [
        "get-subscriber-data",
        "get-new-destination",
        "get-access-data",
        "update-subscriber-data",
        "update-location",
        "insert-call-forwarding",
        "delete-call-forwarding",
    ];
    check_per_type(&v, &names);
    let c = v["consistency"].as_str().unwrap();
    assert!(c.contains("call_forwarding rows =") && c.contains("get-subscriber-data 100.0%"), "{c}");
    assert!(v["load_rows"].as_u64().unwrap() > 2000 * 8, "about 9.75 rows per subscriber");

    let (_, v) = runs(
        "tatp-mix",
        &[
            "--workload",
            "tatp",
            "--subscribers",
            "100",
            "--mix",
            "update-location:100",
            "--isolation",
            "serializable",
            "--duration",
            "0.2",
            "--threads",
            "1",
        ],
    );
    assert_eq!(v["per_type"]["get-subscriber-data"]["committed"], 0);
    assert!(v["per_type"]["update-location"]["committed"].as_u64().unwrap() > 0);
}

#[test]
fn bad_arguments_give_clear_one_line_errors() {
    for (args, want) in [
        (&["--workload", "smallbank", "--customers", "0"][..], "'--customers <N>': must be at least 1"),
        (&["--workload", "smallbank", "--customers", "1"][..], "amalgamate needs two distinct customers"),
        (&["--workload", "smallbank", "--customers", "lots"][..], "--customers"),
        (&["--workload", "smallbank", "--customers", "1000000000000"][..], "--customers 1000000000000 is too large"),
        (&["--workload", "smallbank", "--customers", "900G"][..], "needs about"),
        (&["--workload", "smallbank", "--spin-us=-5"][..], "--spin-us"),
        (&["--workload", "smallbank", "--spin-us", "2000000"][..], "--spin-us 2000000 is too long"),
        (&["--workload", "smallbank", "--spin-us", "5000000000"][..], "--spin-us"),
        (&["--workload", "smallbank", "--mix", "balance:50,transfer:50"][..], "unknown transaction type 'transfer'"),
        (&["--workload", "smallbank", "--mix", "balance:50"][..], "not 100"),
        (&["--workload", "smallbank", "--rows", "10"][..], "--rows does not apply to workload smallbank"),
        (
            &["--workload", "smallbank", "--subscribers", "10"][..],
            "--subscribers is a flag of workload tatp, not of smallbank",
        ),
        (&["--workload", "tatp", "--subscribers", "0"][..], "'--subscribers <N>': must be at least 1"),
        (&["--workload", "tatp", "--subscribers", "2000000000"][..], "--subscribers 2000000000 is too large"),
        (&["--workload", "tatp", "--subscribers", "500M"][..], "needs about"),
        (&["--workload", "tatp", "--subscribers", "x"][..], "--subscribers"),
        (
            &["--workload", "tatp", "--mix", "get-subscriber-data:100,payment:0"][..],
            "unknown transaction type 'payment'",
        ),
        (&["--workload", "tatp", "--rows", "10"][..], "--rows does not apply to workload tatp"),
        (&["--workload", "tatp", "--customers", "10"][..], "--customers is a flag of workload smallbank, not of tatp"),
        (&["--workload", "tatp", "--spin-us", "10"][..], "--spin-us is a flag of workload smallbank, not of tatp"),
        (
            &["--workload", "hekaton", "--customers", "10"][..],
            "--customers is a flag of workload smallbank, not of hekaton",
        ),
        (
            &["--workload", "hekaton", "--subscribers", "10"][..],
            "--subscribers is a flag of workload tatp, not of hekaton",
        ),
    ] {
        let e = fails(args);
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

#[test]
fn help_lists_the_workload_flags() {
    let o = multiverse(&["bench", "--help"]);
    let out = text(&o.stdout);
    for w in ["Workload smallbank", "--customers", "--spin-us", "Workload tatp", "--subscribers"] {
        assert!(out.contains(w), "help lacks {w}: {out}");
    }
}

/// Ordered 2PL runs TATP's declared transactions, GET_NEW_DESTINATION's
/// lookup of every call forwarding of a special facility included (it was
/// refused as "not declared" until the declaration listed all start times).
#[test]
fn tatp_runs_under_ordered_2pl() {
    let args = ["--protocol", "2pl-ordered", "--workload", "tatp", "--subscribers", "200", "--threads", "2"];
    let (out, v) = runs(
        "tatp-2pl",
        &[&args[..], &["--duration", "0.3", "--mix", "get-new-destination:50,update-location:50"]].concat(),
    );
    assert!(v["committed"].as_u64().unwrap() > 0, "{out}");
}
