//! The verification workloads (`predicate`, `list-append`) under `bench
//! --verify` for every protocol at every level it claims, and the hidden
//! fault switches (`--fault`, `MULTIVERSE_FAULTS`): with each fault a
//! protocol honours, a short run fails its verification, naming a class the
//! claimed level forbids.

use multiverse::{Isolation, Protocol};
use std::process::{Command, Output};

fn bench(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_multiverse"));
    c.arg("bench").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the multiverse binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `predicate rw N` of the report's graph line.
fn predicate_rw(out: &str) -> u64 {
    let at = out.find("predicate rw ").unwrap_or_else(|| panic!("no graph line: {out}")) + "predicate rw ".len();
    out[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

/// Runs `workload` under `--verify` for every protocol at every level it
/// claims; `check(protocol, level, stdout)` looks at each passing run.
fn every_protocol_and_level(workload: &str, extra: &[&str], check: impl Fn(Protocol, Isolation, &str)) {
    for p in Protocol::available() {
        for &level in p.isolation_levels() {
            let args = [
                &["--workload", workload, "--protocol", p.name(), "--isolation", level.name()][..],
                &["--threads", "2", "--duration", "0.15", "--verify"],
                extra,
            ]
            .concat();
            let o = bench(&args, &[]);
            let out = text(&o.stdout);
            assert!(o.status.success(), "{p} at {level}: {out}{}", text(&o.stderr));
            assert!(out.contains(&format!("verify: {level}: OK")), "{p} at {level}: {out}");
            check(p, level, &out);
        }
    }
}

#[test]
fn predicate_verifies_everywhere_with_predicate_anti_dependencies() {
    every_protocol_and_level("predicate", &[], |p, level, out| {
        assert!(out.contains("each count row equals its rows"), "{p} at {level}: {out}");
        // Read committed observes no state the checker can place an
        // absence in: no predicate edges there.
        if level != Isolation::ReadCommitted {
            assert!(predicate_rw(out) > 0, "{p} at {level}: no predicate anti-dependency: {out}");
            assert!(out.contains("committed scans saw as many rows"), "{p} at {level}: {out}");
        }
        let scans = if p.uses_declarations() { "range_scans=false" } else { "range_scans=true" };
        assert!(out.contains(scans), "{p}: {out}");
    });
}

#[test]
fn list_append_verifies_everywhere_and_its_values_agree_with_the_commit_order() {
    every_protocol_and_level("list-append", &["--list-max-len", "8"], |p, level, out| {
        assert!(out.contains("verify: list-append: every key's values agree"), "{p} at {level}: {out}");
        assert!(out.contains("committed appends, each once"), "{p} at {level}: {out}");
    });
}

/// Runs `args` with `--verify` in rounds of growing length until the run
/// fails; the verdict must name one of `classes` (or the list-append
/// cross-check must find a mismatch, when `classes` holds "list-append").
fn must_fail(args: &[&str], env: &[(&str, &str)], classes: &[&str]) {
    for round in 0..6 {
        let duration = format!("{}", 0.2 * (round + 1) as f64);
        let all = [args, &["--threads", "4", "--verify", "--duration", &duration]].concat();
        let o = bench(&all, env);
        let (out, err) = (text(&o.stdout), text(&o.stderr));
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if o.status.success() {
            continue;
        }
        assert!(out.contains("faults     "), "the summary names the faults: {out}");
        let named = classes.iter().any(|c| {
            if *c == "list-append" {
                out.contains("verify: list-append: ") && out.contains("mismatches")
            } else {
                out.lines().any(|l| l.starts_with(&format!("{c}: ")) && l.contains("(forbidden"))
            }
        });
        assert!(named, "{args:?}: expected one of {classes:?}:\n{out}{err}");
        return;
    }
    panic!("{args:?} {env:?}: the checker never caught the fault");
}

const CYCLES: &[&str] = &["G-single", "G2-item", "G2"];
const LOST: &[&str] = &["SI-write", "G-single", "list-append"];

/// Each protocol with a fault the checker can catch: validation switched
/// off under the predicate workload at serializable (phantoms and write
/// skew), first-writer-wins switched off under list-append at snapshot
/// (lost appends). mv-lock honours no validation fault (it locks), and its
/// read locks do not survive a stolen write lock, so it is run at snapshot
/// only; 2pl-ordered and bohm honour none.
#[test]
fn each_fault_is_caught() {
    let ser = ["--workload", "predicate", "--isolation", "serializable"];
    for p in ["mv-occ", "mv-mixed", "pomvcc", "ssn", "ssi", "silo", "1v-lock"] {
        must_fail(&[&ser[..], &["--protocol", p, "--fault", "skip-validation"]].concat(), &[], CYCLES);
    }
    let si = ["--workload", "list-append", "--isolation", "snapshot", "--fault", "skip-write-conflicts"];
    for p in ["mv-occ", "mv-mixed", "mv-lock", "pomvcc"] {
        must_fail(&[&si[..], &["--protocol", p]].concat(), &[], LOST);
    }
    // SSN over snapshot isolation at its only level: a lost update is a G-single.
    must_fail(&["--workload", "list-append", "--protocol", "ssn", "--fault", "skip-write-conflicts"], &[], LOST);
    // The read-mostly handshake, set through the environment.
    let rm = ["--workload", "sibench", "--rows", "20", "--protocol", "ssn", "--read-mostly-age", "0"];
    must_fail(&rm, &[("MULTIVERSE_FAULTS", "skip-read-mostly-handshake")], CYCLES);
}

#[test]
fn faults_are_hidden_and_checked() {
    let help = Command::new(env!("CARGO_BIN_EXE_multiverse")).args(["bench", "--help"]).output().unwrap();
    let help = text(&help.stdout);
    assert!(!help.contains("--fault") && help.contains("--workload"), "{help}");
    assert!(help.contains("predicate") && help.contains("list-append") && help.contains("--list-max-len"), "{help}");
    for (args, env) in [
        (&["--fault", "skip-everything"][..], &[][..]),
        (&[][..], &[("MULTIVERSE_FAULTS", "skip_validation,chaos")][..]),
    ] {
        let o = bench(&[args, &["--duration", "0.1", "--rows", "100"]].concat(), env);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "a usage error: {err}");
        assert!(err.contains("unknown fault") && err.contains("known faults: skip-validation"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    }
    // The flag wins over the environment; underscores are accepted.
    let o = bench(
        &["--rows", "100", "--duration", "0.1", "--threads", "1", "--fault", "skip_validation"],
        &[("MULTIVERSE_FAULTS", "chaos")],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("faults     skip-validation"), "{}", text(&o.stdout));
}

#[test]
fn verification_workloads_refuse_what_they_cannot_do() {
    let fails = |args: &[&str]| {
        let o = bench(&[args, &["--duration", "0.1", "--threads", "1"]].concat(), &[]);
        let err = text(&o.stderr);
        assert!(!o.status.success() && !err.contains("panicked"), "{args:?}: {err}");
        err
    };
    let e = fails(&["--workload", "predicate", "--rows", "10"]);
    assert!(e.contains("--rows does not apply to workload predicate"), "{e}");
    let e = fails(&["--workload", "list-append", "--mix", "scan:100"]);
    assert!(e.contains("--mix does not apply to workload list-append"), "{e}");
    let e = fails(&["--workload", "predicate", "--mix", "scan:50,insert:50"]);
    assert!(e.contains("unknown transaction type 'insert'"), "{e}");
    let e = fails(&["--workload", "list-append", "--list-ops", "0-3"]);
    assert!(e.contains("--list-ops"), "{e}");
    let e = fails(&["--workload", "hekaton", "--list-keys", "3"]);
    assert!(e.contains("--list-keys is a flag of workload list-append"), "{e}");
    let e = fails(&["--workload", "predicate", "--predicate-ranges", "0"]);
    assert!(e.contains("at least 1"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("d");
    let e = fails(&["--workload", "list-append", "--durability", "async", "--data-dir", d.to_str().unwrap()]);
    assert!(e.contains("in memory only"), "{e}");
}
