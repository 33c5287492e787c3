//! Tests of the campaign's arguments, grid, seeds and verdicts.

use super::child::*;
use super::grid::*;
use super::*;

#[test]
fn budgets_parse() {
    assert_eq!(parse_budget("90"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_budget("90s"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_budget("20m"), Ok(Duration::from_secs(1200)));
    assert_eq!(parse_budget("1h30m"), Ok(Duration::from_secs(5400)));
    assert_eq!(parse_budget("0.5m"), Ok(Duration::from_secs(30)));
    assert!(parse_budget("soon").is_err() && parse_budget("0").is_err() && parse_budget("").is_err());
    assert!(parse_budget("5d").is_err() && parse_budget("m").is_err());
    assert_eq!(parse_minutes("2"), Ok(Duration::from_secs(120)));
    assert!(parse_minutes("-1").is_err());
}

#[test]
fn reports_are_read() {
    let h = "history: 9 transactions (8 committed, 1 aborted), 3 keys; graph: ww 1, wr 2, rw 3, \
             predicate rw 14; 2 cyclic components";
    assert_eq!(number_after(h, "predicate rw"), Some(14));
    assert_eq!(number_before(h, "cyclic component"), Some(2));
    assert_eq!(number_before("no such line", "cyclic component"), None);
    let ok = "summary\nverify: serializable: OK (no forbidden anomaly)\n";
    assert_eq!(judge(Some(0), ok, "").0, Verdict::Ok);
    let bad = "verify: serializable: FAILED (1 forbidden anomaly)\nhistory: ...\nG2: 1 (forbidden at serializable)\n";
    let (v, d) = judge(Some(1), bad, "multiverse: the history violates serializable: 1 forbidden anomalies\n");
    assert_eq!(v, Verdict::Anomaly);
    assert!(d.contains("G2: 1"), "{d}");
    let (v, d) = judge(Some(101), "", "thread 'main' panicked at src/x.rs:1:2:\nboom\n");
    assert_eq!(v, Verdict::Crash);
    assert!(d.contains("boom"), "{d}");
    assert_eq!(judge(None, "", "").0, Verdict::Crash);
    let e = "multiverse: tpcc consistency check failed: condition 1\n";
    assert_eq!(judge(Some(1), "", e).0, Verdict::Inconsistent);
    assert_eq!(judge(Some(0), "no verdict\n", "").0, Verdict::Failed);
    let two = "verify: list-append: every key's values agree with its commit order\n\
               verify: snapshot: OK (no forbidden anomaly)\n";
    assert_eq!(judge(Some(0), two, "").0, Verdict::Ok);
    let lost = "verify: list-append: 2 mismatches between the values and the commit order\n\
                verify: snapshot: OK (no forbidden anomaly)\n";
    let (v, d) = judge(Some(1), lost, "multiverse: the list values contradict the commit order: 2 mismatches\n");
    assert_eq!(
        (v, d.as_str()),
        (Verdict::Inconsistent, "list-append: 2 mismatches between the values and the commit order")
    );
    let clap = "error: unexpected argument '--fault' found\n\nUsage: multiverse bench [OPTIONS]\n\nFor more information, try '--help'.\n";
    let (v, d) = judge(Some(2), "", clap);
    assert_eq!((v, d.as_str()), (Verdict::Failed, "error: unexpected argument '--fault' found"));
}

#[test]
fn the_grid_follows_the_engine() {
    let a = |protocols: &[&str], isolations: &[&str]| VerifyArgs {
        budget: Duration::from_secs(60),
        minutes: None,
        protocols: protocols.iter().map(|s| s.to_string()).collect(),
        workloads: vec![],
        isolations: isolations.iter().map(|s| s.to_string()).collect(),
        threads: vec![],
        seed: None,
        keep: None,
        min_run: 0.3,
        max_run: 5.0,
        rounds: None,
        quick: false,
        list: false,
        fault: None,
        ordered_map: None,
    };
    let g = grid(&a(&[], &[])).unwrap();
    // Lines of other stores too, where they are built (their levels).
    for p in &g {
        assert!(p.line.levels().contains(&p.isolation));
        assert!(p.line.runs(p.workload));
    }
    assert!(g.iter().any(|p| p.line.name == "ssn+rc") && g.iter().any(|p| p.line.name == "ssn+si"));
    assert!(!g.iter().any(|p| p.line.name == "bohm" && p.workload == Kind::Tpcc));
    let ssn = grid(&a(&["ssn"], &[])).unwrap();
    assert!(ssn.iter().all(|p| p.line.protocol == Protocol::Ssn && p.isolation == Isolation::Serializable));
    let mv = grid(&a(&["mv-occ"], &["si", "serializable"])).unwrap();
    assert_eq!(mv.len(), Kind::ALL.len() * 2 * 2);
    assert!(grid(&a(&["silo"], &["snapshot"])).unwrap_err().contains("grid is empty"));
    // The quick slice: every line once, every workload met.
    let q = grid(&VerifyArgs { quick: true, ..a(&[], &[]) }).unwrap();
    assert_eq!(q.len(), all_lines().len());
    for p in &q {
        assert_eq!(Some(&p.isolation), p.line.levels().last(), "{}: its strongest level", p.line.name);
        assert!(p.line.runs(p.workload));
    }
    for w in Kind::ALL {
        assert!(q.iter().any(|p| p.workload == w), "{w} missing from the quick slice");
    }
    assert!(q.iter().any(|p| p.threads == 2) && q.iter().any(|p| p.threads == 8));
    assert!(grid(&a(&["nope"], &[])).unwrap_err().contains("unknown protocol line 'nope'"));
    // Seeds depend on the point and the round, not on the grid around it.
    let p = &mv[0];
    assert_eq!(p.seed(7, 0), p.seed(7, 0));
    assert_ne!(p.seed(7, 0), p.seed(7, 1));
    assert_ne!(p.seed(7, 0), mv[1].seed(7, 0));
}

#[test]
fn command_lines_quote() {
    let args: Vec<String> = ["--mix", "a:1,b:2", "--x", "it's"].iter().map(|s| s.to_string()).collect();
    assert_eq!(command_line(&args), r"multiverse bench --mix a:1,b:2 --x 'it'\''s'");
}
