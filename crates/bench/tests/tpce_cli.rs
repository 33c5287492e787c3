//! `multiverse bench --workload tpce` and `tpceh`, run as a user would: the
//! real binary, a few dozen customers, short runs, the consistency checks at
//! the end, and the refusals.

mod common;
use common::{fails, runs};

/// A small population: 40 customers, one day of initial trades.
const SMALL: [&str; 4] = ["--customers", "40", "--trade-days", "1"];

fn bench(workload: &str, protocol: &[&str], extra: &[&str]) -> (String, serde_json::Value) {
    let mut args = vec!["--workload", workload, "--threads", "2", "--duration", "0.4", "--protocol"];
    args.extend_from_slice(protocol);
    args.extend_from_slice(&SMALL);
    args.extend_from_slice(extra);
    runs(&format!("{workload}-{}", protocol.join("-")), &args)
}

#[test]
fn tpce_runs_its_mix_under_several_protocols_and_stays_consistent() {
    for protocol in [&["mv-occ"][..], &["ssn", "--base", "rc"], &["silo"], &["1v-lock"], &["mv-mixed"]] {
        let (out, v) = bench("tpce", protocol, &[]);
        assert!(out.contains("balances and broker counts agree"), "{protocol:?}: {out}");
        assert_eq!(v["workload"], "tpce");
        assert_eq!(v["params"]["customers"], 40);
        assert_eq!(v["params"]["trade_days"], 1);
        let per = v["per_type"].as_object().unwrap();
        for n in ["trade-order", "trade-result", "security-detail", "market-watch", "trade-status"] {
            assert!(per[n]["committed"].as_u64().unwrap() > 0, "{protocol:?}: {n} ran: {v}");
        }
        assert_eq!(per["asset-eval"]["committed"], 0, "TPC-E's mix has no Asset-Eval");
        // Trade-Order's rollbacks are user aborts of trade-order only.
        let user = |n: &str| per[n]["aborts_by_reason"]["user"].as_u64().unwrap_or(0);
        assert_eq!(v["aborts_by_reason"]["user"].as_u64().unwrap_or(0), user("trade-order"), "{protocol:?}");
    }
}

#[test]
fn tpceh_runs_asset_eval_under_ssn_and_ssi() {
    for protocol in [&["ssn", "--base", "si", "--read-mostly-age", "100"][..], &["ssi"], &["pomvcc"]] {
        let (out, v) = bench("tpceh", protocol, &["--asset-eval-fraction", "0.1"]);
        assert!(out.contains("asset-history rows"), "{protocol:?}: {out}");
        assert_eq!(v["workload"], "tpceh");
        assert!(v["params"]["mix"].as_str().unwrap().contains("asset-eval:20"), "{v}");
        assert!(v["per_type"]["asset-eval"]["committed"].as_u64().unwrap() > 0, "{protocol:?}: {v}");
    }
    // A mix of two types, as for every workload.
    let (_, v) = bench("tpceh", &["mv-occ"], &["--mix", "asset-eval:50,market-feed:50"]);
    assert_eq!(v["per_type"]["trade-order"]["committed"], 0);
    assert!(v["per_type"]["market-feed"]["committed"].as_u64().unwrap() > 0);
}

#[test]
fn verify_finds_no_anomaly() {
    for (protocol, iso) in [
        (&["mv-occ"][..], "serializable"),
        (&["ssn", "--base", "si"], "serializable"),
        (&["silo"], "serializable"),
        (&["mv-occ"], "snapshot"),
    ] {
        let mut args = vec!["bench", "--workload", "tpceh", "--threads", "2", "--duration", "0.3", "--protocol"];
        args.extend_from_slice(protocol);
        args.extend_from_slice(&SMALL);
        args.extend_from_slice(&["--asset-eval-fraction", "0.1", "--isolation", iso, "--verify"]);
        let o = common::multiverse(&args);
        let all = common::text(&o.stdout) + &common::text(&o.stderr);
        assert!(o.status.success(), "{protocol:?} {iso}: {all}");
        assert!(all.contains(&format!("verify: {iso}: OK")), "{protocol:?} {iso}: {all}");
    }
}

#[test]
fn nonsense_is_refused_in_one_line() {
    let e = fails(&["--workload", "tpce", "--customers", "0"]);
    assert!(e.contains("--customers") && e.contains("at least 1"), "{e}");
    let e = fails(&["--workload", "tpce", "--customers", "40", "--trade-days", "0"]);
    assert!(e.contains("--trade-days"), "{e}");
    let e = fails(&["--workload", "tpceh", "--customers", "40", "--asset-eval-fraction", "1.5"]);
    assert!(e.contains("--asset-eval-fraction"), "{e}");
    let e = fails(&["--workload", "tpce", "--customers", "40", "--mix", "trade-order:50,buy-low:50"]);
    assert!(e.contains("unknown transaction type 'buy-low'"), "{e}");
    for p in ["bohm", "2pl-ordered"] {
        // Refused before the load (the default scale takes a minute in a
        // debug build).
        let start = std::time::Instant::now();
        let e = fails(&["--workload", "tpceh", "--protocol", p]);
        assert!(e.contains(&format!("protocol {p} runs declared transactions")), "{e}");
        assert!(e.contains("workload tpceh does not declare its accesses"), "{e}");
        assert!(start.elapsed() < std::time::Duration::from_secs(20), "refused only after {:?}", start.elapsed());
    }
    let e = fails(&["--workload", "tpce", "--warehouses", "2"]);
    assert!(e.contains("--warehouses is a flag of workload tpcc"), "{e}");
    let e = fails(&["--workload", "smallbank", "--trade-days", "2"]);
    assert!(e.contains("--trade-days is a flag of workload tpce"), "{e}");
}
