//! `multiverse bench --workload tpcc`, run as a user would: the real binary,
//! short runs, the consistency conditions checked at the end.

mod common;
use common::{fails, runs};

const TYPES: [&str; 6] = ["new-order", "payment", "order-status", "delivery", "stock-level", "new-order-lines"];

/// The types named by the rows of the summary's per-type table.
fn per_type_rows(out: &str) -> Vec<String> {
    out.lines()
        .skip_while(|l| !l.starts_with("  per type"))
        .skip(1)
        .take_while(|l| l.starts_with("             "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn the_standard_mix_runs_and_keeps_the_consistency_conditions() {
    let (out, v) =
        runs("tpcc-std", &["--workload", "tpcc", "--threads", "2", "--duration", "0.5", "--isolation", "snapshot"]);
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
    // The per-type table has a row for each type that ran, none for one
    // that did not (new-order-lines is not in the standard mix).
    let rows = per_type_rows(&out);
    assert_eq!(rows, TYPES[..5], "{out}");
    // 1% of NewOrders name an unused item and roll back: user aborts of new-order only.
    let user = |n: &str| per[n]["aborts_by_reason"]["user"].as_u64().unwrap_or(0);
    assert_eq!(user("payment") + user("delivery"), 0);
    assert_eq!(v["aborts_by_reason"]["user"].as_u64().unwrap(), user("new-order"));
}

/// The standard mix over the B+tree (`--ordered-map b+tree`): its three
/// ordered indexes (new orders, which Delivery removes; customers by last
/// name; orders by customer) keep the consistency conditions, and the
/// record names the map. An unknown map is a one-line error.
#[test]
fn the_standard_mix_runs_over_the_b_tree() {
    let (out, v) = runs(
        "tpcc-btree",
        &["--workload", "tpcc", "--threads", "2", "--duration", "0.5", "--ordered-map", "b+tree", "--verify"],
    );
    assert!(out.contains("conditions 1-4 hold in all 20 districts of 2 warehouses"), "{out}");
    assert!(out.contains("ordered    indexes in a b+tree"), "{out}");
    assert_eq!(v["ordered_map"], "b+tree", "{v}");
    for n in ["new-order", "payment", "delivery", "stock-level", "order-status"] {
        assert!(v["per_type"][n]["committed"].as_u64().unwrap() > 0, "{n} ran: {v}");
    }
    let (_, v) = runs("tpcc-skiplist", &["--workload", "tpcc", "--threads", "1", "--duration", "0.2"]);
    assert!(v.get("ordered_map").is_none(), "the default map is not named: {v}");
    let e = fails(&["--workload", "tpcc", "--ordered-map", "trie"]);
    assert!(e.contains("unknown ordered map `trie` (expected skip-list or b+tree)"), "{e}");
}

#[test]
fn tpc_cc_and_the_new_order_only_modes_run() {
    let (out, v) = runs(
        "tpcc-cc",
        &[
            "--workload",
            "tpcc",
            "--tpcc-cc",
            "--warehouses",
            "3",
            "--threads",
            "2",
            "--duration",
            "0.3",
            "--isolation",
            "serializable",
        ],
    );
    assert!(out.contains("30 districts of 3 warehouses"), "{out}");
    assert_eq!(v["params"]["random_warehouse"], true);
    let (out, v) = runs(
        "tpcc-nol",
        &[
            "--workload",
            "tpcc",
            "--mix",
            "new-order-lines:100",
            "--warehouses",
            "1",
            "--threads",
            "1",
            "--duration",
            "0.3",
        ],
    );
    assert!(out.contains("new-order-lines lines"), "{out}");
    assert!(v["per_type"]["new-order-lines"]["committed"].as_u64().unwrap() > 0);
    let (out, v) = runs(
        "tpcc-no",
        &["--workload", "tpcc", "--mix", "new-order:100", "--warehouses", "1", "--threads", "1", "--duration", "0.3"],
    );
    assert_eq!(v["per_type"]["payment"]["committed"], 0);
    let rows = per_type_rows(&out);
    assert_eq!(rows, ["new-order"], "no empty rows: {out}");
    assert!(v["per_type"]["new-order"]["committed"].as_u64().unwrap() > 0);
}

/// POMVCC on the paper's workload (its NewOrder loop) and the standard
/// mix: the checks after the run see every committed transaction, though
/// commits share timestamps and become visible only as BTs passes them; the
/// counter increments are reported.
#[test]
fn pomvcc_runs_tpcc_consistently() {
    let std = "new-order:45,payment:43,order-status:4,delivery:4,stock-level:4";
    for (name, mix, mode) in [
        ("tpcc-po-nol", "new-order-lines:100", "pessimistic"),
        ("tpcc-po-std", std, "pessimistic"),
        // Section V.D: write locks taken at commit.
        ("tpcc-po-occ", std, "optimistic"),
    ] {
        let (out, v) = runs(
            name,
            &[
                "--workload",
                "tpcc",
                "--protocol",
                "pomvcc",
                "--isolation",
                "snapshot",
                "--mix",
                mix,
                "--threads",
                "2",
                "--duration",
                "0.5",
                "--mode",
                mode,
            ],
        );
        assert!(out.contains("conditions 1-4 hold in all 20 districts of 2 warehouses"), "{out}");
        assert_eq!(v["mode"], mode, "{v}");
        assert!(v["committed"].as_u64().unwrap() > 100, "{v}");
        assert!(out.contains("increments of the commit-timestamp counter"), "{out}");
        assert!(v["timestamp_increments"].as_u64().unwrap() > 0, "{v}");
    }
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
    let e = fails(&["--workload", "tpcc", "--tpcc-no-inserts"]);
    assert!(e.contains("only new-order and payment"), "{e}");
    let e = fails(&["--workload", "tpcc", "--rows", "10"]);
    assert!(e.contains("--rows does not apply to workload tpcc"), "{e}");
    let e = fails(&["--workload", "tpcc", "--mix", "new-order:50,refund:50"]);
    assert!(e.contains("unknown transaction type 'refund'") && e.contains("stock-level"), "{e}");
    let e = fails(&["--workload", "tpcc", "--mix", "new-order:50,payment:40"]);
    assert!(e.contains("add up to 90"), "{e}");
}

#[test]
fn tpcc_histories_pass_the_checker() {
    // Delivery's scan for the oldest new order stops at one row: the history
    // must record only the part of the range it saw.
    for iso in ["snapshot", "serializable"] {
        let o = common::multiverse(&[
            "bench",
            "--workload",
            "tpcc",
            "--warehouses",
            "1",
            "--threads",
            "2",
            "--duration",
            "0.3",
            "--isolation",
            iso,
            "--verify",
        ]);
        let all = common::text(&o.stdout) + &common::text(&o.stderr);
        assert!(o.status.success(), "{iso}: {all}");
        assert!(all.contains(&format!("verify: {iso}: OK")), "{iso}: {all}");
    }
}
