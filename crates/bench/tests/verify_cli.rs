//! `multiverse verify`: the quick campaign that CI runs (every protocol line
//! once, about a minute in all), a finding failing the campaign, and clear
//! refusals of unknown names.

mod common;

use common::{multiverse, text};

#[test]
fn the_quick_campaign_passes_and_prints_one_table() {
    let o = multiverse(&["verify", "--quick", "--rounds", "1", "--budget", "40s", "--min-run", "0.2", "--seed", "11"]);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "the quick campaign found something:\n{out}\n{err}");
    assert!(out.contains("seed 11"), "{out}");
    let header = out.lines().position(|l| l.starts_with("protocol ") && l.ends_with("verdict")).expect("a table");
    let rows: Vec<&str> = out.lines().skip(header + 1).take_while(|l| !l.trim().is_empty()).collect();
    // One row per protocol line, each at its strongest level.
    for line in
        ["mv-occ", "mv-lock", "mv-mixed", "1v-lock", "silo", "2pl-ordered", "ssn+rc", "ssn+si", "ssi", "bohm", "pomvcc"]
    {
        let row = rows.iter().find(|r| r.split_whitespace().next() == Some(line));
        let row = row.unwrap_or_else(|| panic!("no row of {line}:\n{out}"));
        assert!(row.contains(" serializable ") && row.ends_with(" ok"), "{row}");
    }
    let summary = out.lines().find(|l| l.contains(" runs in ")).expect("a summary line");
    assert!(summary.contains(&format!("{} runs", rows.len())) && summary.contains("0 findings"), "{summary}");
}

#[test]
fn a_failing_run_is_a_finding_with_its_replay_line() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("kept");
    // A fault bench does not know: the run fails before it starts, which the
    // campaign reports like any other failure, and goes on.
    let o = multiverse(&[
        "verify",
        "--protocols",
        "mv-occ",
        "--workloads",
        "hekaton,sibench",
        "--isolations",
        "serializable",
        "--threads",
        "2",
        "--budget",
        "5s",
        "--rounds",
        "1",
        "--seed",
        "3",
        "--fault",
        "no-such-fault",
        "--keep",
        keep.to_str().unwrap(),
    ]);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert_eq!(err.trim(), "multiverse: 2 of 2 runs found something (listed above)", "{err}");
    assert!(out.contains("mv-occ        serializable    hekaton"), "{out}");
    assert!(out.contains("FAILED"), "{out}");
    let replay = out.lines().find(|l| l.trim_start().starts_with("replay: ")).expect("a replay line");
    assert!(
        replay.contains("multiverse bench --protocol mv-occ --isolation serializable --workload hekaton")
            && replay.contains("--seed ")
            && replay.contains("--verify --fault no-such-fault"),
        "{replay}"
    );
    let logs =
        std::fs::read_dir(&keep).unwrap().filter(|e| e.as_ref().unwrap().path().extension() == Some("log".as_ref()));
    assert_eq!(logs.count(), 2, "one kept output per failing run");
}

#[test]
fn skipped_validation_is_found_as_an_anomaly() {
    // MV/O without read validation at serializable: the checker must find
    // forbidden cycles (sibench's 500 hot rows, the predicate workload's
    // ranges), and the campaign must fail with them. Two seconds each at
    // least: a debug build beside other tests commits few transactions in
    // half a second, and one such run once found nothing.
    let o = multiverse(&[
        "verify",
        "--protocols",
        "mv-occ",
        "--workloads",
        "sibench,predicate",
        "--isolations",
        "serializable",
        "--threads",
        "2",
        "--budget",
        "6s",
        "--rounds",
        "1",
        "--min-run",
        "2",
        "--fault",
        "skip-validation",
    ]);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(err.contains("2 of 2 runs found something"), "{out}\n{err}");
    let anomalies: Vec<&str> = out.lines().filter(|l| l.contains("  ANOMALY: serializable: FAILED")).collect();
    assert_eq!(anomalies.len(), 2, "{out}");
    assert!(anomalies.iter().all(|l| l.contains("(forbidden at serializable)")), "{out}");
}

#[test]
fn unknown_names_are_refused_in_one_line() {
    for (flag, value, expect) in [
        ("--protocols", "mv-occ,nope", "unknown protocol line 'nope'"),
        ("--workloads", "tpc-x", "unknown workload 'tpc-x'"),
        ("--isolations", "chaos", "unknown isolation level 'chaos'"),
    ] {
        let o = multiverse(&["verify", flag, value, "--budget", "1s"]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: a usage error: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{flag} {value}: one line: {err}");
        assert!(err.starts_with("multiverse: ") && err.contains(expect), "{flag} {value}: {err}");
        assert!(o.stdout.is_empty(), "{flag} {value}: nothing runs");
    }
    let o = multiverse(&["verify", "--protocols", "silo", "--isolations", "snapshot"]);
    assert!(text(&o.stderr).contains("the grid is empty"), "{}", text(&o.stderr));
    let o = multiverse(&["verify", "--budget", "soon"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).starts_with("error: invalid value 'soon' for '--budget"), "{}", text(&o.stderr));
}

#[test]
fn the_grid_is_every_claimed_level_and_replays_by_seed() {
    let list = |seed: &str| {
        let o = multiverse(&["verify", "--list", "--seed", seed]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    let grid = list("5");
    let lines: Vec<&str> = grid.lines().collect();
    assert!(lines.iter().all(|l| l.starts_with("multiverse bench --protocol ") && l.contains(" --verify")));
    let has = |parts: &[&str]| lines.iter().any(|l| parts.iter().all(|p| l.contains(p)));
    // Every level mv-occ offers, SSN over both bases, POMVCC in both modes, 2 and 8 threads.
    for level in ["read-committed", "snapshot", "repeatable-read", "serializable"] {
        assert!(has(&["--protocol mv-occ ", &format!("--isolation {level} ")]), "mv-occ at {level}");
    }
    assert!(has(&["--protocol ssn --base rc "]) && has(&["--protocol ssn --base si "]));
    assert!(has(&["--protocol pomvcc --mode optimistic "]));
    assert!(has(&["--threads 2 "]) && has(&["--threads 8 "]));
    // Levels a protocol does not offer, and workloads it cannot run, are not in it.
    assert!(!has(&["--protocol silo ", "--isolation snapshot "]));
    assert!(!has(&["--protocol 1v-lock ", "--isolation snapshot "]));
    assert!(!has(&["--protocol bohm ", "--workload tpcc "]) && !has(&["--protocol 2pl-ordered ", "--workload tpcc "]));
    // The same seed, the same runs; another seed, other seeds.
    assert_eq!(grid, list("5"));
    assert_ne!(grid, list("6"));
}
