//! `multiverse bench --protocol <store>`: the workloads on other embedded
//! stores, run as a user would (the real binary, tiny sizes, short runs).
//! Which stores run depends on the features the binary was built with
//! (`--features peers` builds them all); without a store's feature, its
//! name is a one-line refusal naming the feature.

mod common;
use common::{built, fails, runs, STORES};

#[test]
fn a_store_left_out_of_the_build_is_a_one_line_refusal_naming_its_feature() {
    for s in STORES.iter().filter(|s| !built().contains(s)) {
        let e = fails(&["--protocol", s, "--workload", "ycsb", "--rows", "100"]);
        assert!(e.contains("not compiled in") && e.contains("--features peers"), "{s}: {e}");
    }
    let e = fails(&["--protocol", "surrealmq"]);
    assert!(e.contains("surrealmq"), "{e}");
}

#[test]
fn every_built_store_runs_the_workloads_and_their_checks() {
    let workloads: [(&str, &[&str]); 8] = [
        ("ycsb", &["--rows", "2000", "--value-bytes", "16", "--theta", "0.9"]),
        ("hekaton", &["--rows", "2000"]),
        ("smallbank", &["--customers", "200"]),
        ("tatp", &["--subscribers", "200"]),
        ("tpcc", &["--warehouses", "1"]),
        ("sibench", &[]),
        ("predicate", &[]),
        ("list-append", &[]),
    ];
    for s in built() {
        for (w, extra) in workloads {
            let mut args =
                vec!["--protocol", s, "--workload", w, "--threads", "2", "--duration", "0.3", "--warmup", "0"];
            args.extend_from_slice(extra);
            let (out, v) = runs(&format!("{s}-{w}"), &args);
            assert_eq!(v["protocol"], *s, "{out}");
            assert!(v["committed"].as_u64().unwrap() > 0, "{s} {w}: nothing committed: {out}");
            assert!(v["store"].as_str().is_some_and(|d| !d.is_empty()), "{v}");
            assert!(out.contains("store "), "{out}");
        }
    }
}

#[test]
fn a_level_a_store_does_not_offer_is_refused_naming_those_it_does() {
    for s in built() {
        // RocksDB offers no serializable level; the others no repeatable read.
        let missing = if s.starts_with("rocksdb") { "serializable" } else { "repeatable-read" };
        let e = fails(&["--protocol", s, "--isolation", missing, "--workload", "ycsb", "--rows", "100"]);
        assert!(e.contains(&format!("does not offer {missing}")) && e.contains("it offers"), "{s}: {e}");
        let e = fails(&["--protocol", s, "--mode", "optimistic"]);
        assert!(e.contains("--mode does not apply"), "{s}: {e}");
        let e = fails(&["--protocol", s, "--durability", "async", "--data-dir", "/tmp"]);
        assert!(e.contains("none or sync"), "{s}: {e}");
    }
}

#[test]
fn a_durable_store_syncs_into_its_directory_and_refuses_one_it_cannot_make() {
    for s in built() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("store");
        let (_, v) = runs(
            &format!("{s}-sync"),
            &[
                "--protocol",
                s,
                "--workload",
                "ycsb",
                "--rows",
                "500",
                "--value-bytes",
                "16",
                "--threads",
                "2",
                "--duration",
                "0.3",
                "--warmup",
                "0",
                "--durability",
                "sync",
                "--data-dir",
                d.to_str().unwrap(),
            ],
        );
        assert_eq!(v["durability"]["mode"], "sync", "{v}");
        assert!(std::fs::read_dir(&d).unwrap().next().is_some(), "{s} wrote nothing into {}", d.display());
        let e = fails(&["--protocol", s, "--durability", "sync", "--data-dir", "/proc/multiverse-none"]);
        assert!(e.contains(s.split('-').next().unwrap()) && e.contains("/proc/multiverse-none"), "{s}: {e}");
    }
}

#[test]
fn verify_checks_a_stores_list_append_history_as_a_black_box() {
    for s in built() {
        let levels: &[&str] = match s {
            "surrealmx" => &["snapshot", "serializable"],
            "rocksdb-optimistic" => &["snapshot", "repeatable-read"],
            "rocksdb-pessimistic" => &["read-committed", "snapshot", "repeatable-read"],
            _ => &["serializable"],
        };
        for l in levels {
            let args = [
                "--protocol",
                s,
                "--isolation",
                l,
                "--workload",
                "list-append",
                "--threads",
                "3",
                "--duration",
                "0.5",
                "--warmup",
                "0",
                "--verify",
            ];
            let (out, v) = runs(&format!("{s}-{l}-verify"), &args);
            assert!(v["committed"].as_u64().unwrap() > 0, "{out}");
            assert!(out.contains("verify: ") && out.contains("transactions"), "{s}@{l}: {out}");
        }
        let e = fails(&["--protocol", s, "--workload", "ycsb", "--rows", "100", "--verify"]);
        assert!(e.contains("checks workloads list-append and predicate") && e.lines().count() == 1, "{s}: {e}");
        let e = fails(&["--protocol", s, "--workload", "list-append", "--history", "/tmp/h"]);
        assert!(e.contains("--history does not apply"), "{s}: {e}");
    }
}

#[test]
fn verify_checks_a_stores_predicate_scans_as_a_black_box_at_its_strongest_level() {
    for s in built() {
        let args = [
            "--protocol",
            s,
            "--workload",
            "predicate",
            "--threads",
            "3",
            "--duration",
            "0.4",
            "--warmup",
            "0",
            "--verify",
        ];
        let (out, v) = runs(&format!("{s}-predicate-verify"), &args);
        assert!(v["committed"].as_u64().unwrap() > 0, "{out}");
        // The count rows were checked in their tagged format.
        assert!(out.contains("each count row equals its rows"), "{s}: {out}");
        assert!(out.contains("verify: ") && out.contains("OK (no forbidden anomaly)"), "{s}: {out}");
        // Scans and lookups made predicate anti-dependencies.
        let prw =
            out.split("predicate rw ").nth(1).and_then(|t| t.split(';').next()).and_then(|n| n.parse::<u64>().ok());
        assert!(prw.is_some_and(|n| n > 0), "{s}: {out}");
    }
}

#[test]
fn compare_takes_stores_as_lines_and_refuses_their_missing_levels_before_running() {
    let Some(s) = built().first().copied() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cmp");
    let lines = format!("mv-occ@serializable,{s}");
    let o = common::multiverse(&[
        "compare",
        "--workload",
        "ycsb",
        "--rows",
        "500",
        "--value-bytes",
        "16",
        "--threads",
        "1",
        "--duration",
        "0.2",
        "--warmup",
        "0",
        "--protocols",
        &lines,
        "--out",
        out.to_str().unwrap(),
    ]);
    let text = common::text(&o.stdout);
    assert!(o.status.success(), "{text}{}", common::text(&o.stderr));
    assert!(text.contains(s) && text.contains("mv-occ@serializable"), "{text}");
    let o = common::multiverse(&[
        "compare",
        "--workload",
        "ycsb",
        "--protocols",
        "rocksdb-optimistic@read-committed,mv-occ",
    ]);
    let err = common::text(&o.stderr);
    assert!(!o.status.success() && err.trim_end().lines().count() == 1, "{err}");
    assert!(
        err.contains("rocksdb-optimistic") && (err.contains("does not offer") || err.contains("not compiled in")),
        "{err}"
    );
}
