//! `multiverse recover` on the data directory of a durable `bench` run: it
//! rebuilds the recorded workload's schema, loads the directory, and runs
//! the workload's check of the recovered rows; a directory whose rows break
//! the workload's invariants, or whose workload file does not describe
//! them, fails with one line.

mod common;

use common::{multiverse, text};
use multiverse::{Database, Durability, Options};
use multiverse_workloads::tpcc::{self, Tpcc, TpccConfig};
use std::path::Path;

/// Runs `multiverse recover DIR`, expecting failure; returns the error line.
fn recover_fails(dir: &Path) -> String {
    let o = multiverse(&["recover", dir.to_str().unwrap()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stdout: {}; stderr: {err}", text(&o.stdout));
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn recover_checks_the_consistency_of_a_durable_tpcc_run() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let d = data.to_str().unwrap();
    let bench = "bench --workload tpcc --warehouses 1 --threads 2 --duration 0.3 --durability sync --data-dir";
    let o = multiverse(&bench.split(' ').chain([d]).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let file = data.join("workload");
    let recorded = std::fs::read_to_string(&file).unwrap();
    assert!(recorded.contains("workload=tpcc\nwarehouses=1\n"), "{recorded}");

    let o = multiverse(&["recover", d]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    assert!(out.contains("  workload   tpcc (warehouses=1, "), "{out}");
    assert!(out.contains("  check      passed: conditions 1-4 hold in all 10 districts of 1 warehouses"), "{out}");
    assert!(out.contains("  unchecked  the numbers of orders"), "{out}");

    // A workload file that claims a second warehouse: its rows are not there.
    std::fs::write(&file, recorded.replace("warehouses=1", "warehouses=2")).unwrap();
    let e = recover_fails(&data);
    assert!(e.contains("tpcc consistency check failed: warehouse 2 is missing"), "{e}");
    // Another workload's schema: the tables differ.
    std::fs::write(&file, "workload=smallbank\ncustomers=10\n").unwrap();
    let e = recover_fails(&data);
    assert!(e.contains("workload smallbank has the tables smallbank.customer"), "{e}");
    // A damaged file, one line.
    std::fs::write(&file, "workload=tpcc\nwarehouses=several\n").unwrap();
    let e = recover_fails(&data);
    assert!(e.contains("warehouses=several is not a valid value"), "{e}");
    // The one-word file of earlier versions: loaded as plain tables, not checked.
    std::fs::write(&file, "tpcc\n").unwrap();
    let o = multiverse(&["recover", d]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    assert!(out.contains("recorded without its parameters") && !out.contains("check      passed"), "{out}");
    std::fs::write(&file, &recorded).unwrap();

    // A committed transaction that breaks condition 1 (W_YTD is the sum of
    // its districts' D_YTD): written through the log of a reopened database,
    // so recover replays it and must catch it.
    let opts = Options { durability: Durability::Sync, data_dir: Some(data.clone()), ..Options::default() };
    let cfg = TpccConfig { warehouses: 1, ..TpccConfig::default() };
    let schema = |db: &Database| Tpcc::setup(db, cfg).map(drop).map_err(multiverse::Error::InvalidArgument);
    let (db, _) = Database::open(opts, schema).unwrap();
    let district = db.table(tpcc::names::DISTRICT).unwrap();
    db.run(multiverse::Isolation::Serializable, |t| {
        t.modify(district, &tpcc::d_key(1, 3), |v| tpcc::put_i64(v, tpcc::D_YTD, tpcc::get_i64(v, tpcc::D_YTD) + 1))
    })
    .unwrap();
    drop(db);
    let e = recover_fails(&data);
    assert!(e.contains("tpcc consistency check failed: condition 1: warehouse 1 has W_YTD"), "{e}");
}
