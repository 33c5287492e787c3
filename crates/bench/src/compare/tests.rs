use super::*;

fn parse_lines_s(spec: &str, default_isolation: &str) -> Result<Vec<Line>, String> {
    parse_lines(spec, Some(default_isolation))
}

#[test]
fn lines_parse() {
    // Without --isolation a protocol runs at read committed, or at its only level.
    let l = parse_lines("mv-occ,silo", None).unwrap();
    assert_eq!(l.len(), 2);
    let l = parse_lines_s("mv-occ@snapshot, mv-occ@serializable", "read-committed").unwrap();
    assert_eq!(l.len(), 2);
    assert_eq!(l[0].isolation, Some(Isolation::Snapshot));
    assert_eq!(l[1].label, "mv-occ@serializable");
    let l = parse_lines_s("mv-occ", "snapshot").unwrap();
    assert_eq!((l[0].isolation, l[0].label.as_str()), (None, "mv-occ"));
    assert!(parse_lines_s("paxos", "snapshot").unwrap_err().contains("unknown protocol 'paxos'"));
    assert!(parse_lines_s("pomvcc@repeatable-read", "snapshot").unwrap_err().contains("does not offer"));
    assert!(parse_lines_s("mv-occ@chaos", "snapshot").unwrap_err().contains("unknown isolation level 'chaos'"));
    assert!(parse_lines_s("mv-occ", "chaos").unwrap_err().contains("chaos"));
    assert!(parse_lines_s("mv-occ,,mv-occ@snapshot", "snapshot").unwrap_err().contains("empty entry"));
    assert!(parse_lines_s("mv-occ,mv-occ", "snapshot").unwrap_err().contains("twice"));
    // SSN's read-mostly lines, beside the plain ones.
    let l = parse_lines("ssn+si,ssn+si-r,ssn+rc-r", None).unwrap();
    assert_eq!(l.iter().map(|x| x.read_mostly).collect::<Vec<_>>(), [false, true, true]);
    assert_eq!((l[1].label.as_str(), l[2].base), ("ssn+si-r", Some("rc")));
    assert!(parse_lines("ssi+si-r", None).unwrap_err().contains("ssn only"));
    let none: &[(String, String)] = &[];
    let (argv, a) = point_args(none, &l[1], &[], &[]).unwrap();
    assert_eq!(a.read_mostly_age, Some(DEFAULT_READ_MOSTLY_AGE), "{argv:?}");
    let given = [("read_mostly_age".to_string(), "--read-mostly-age=50".to_string())];
    assert_eq!(point_args(&given, &l[1], &[], &[]).unwrap().1.read_mostly_age, Some(50));
    assert_eq!(point_args(&given, &l[0], &[], &[]).unwrap().1.read_mostly_age, None, "left out of plain lines");
}

/// `none`, the no-CC ceiling, is a line of its own: no level, no base, and
/// the run's --isolation is left out of its point.
#[test]
fn the_ceiling_is_a_line() {
    let l = parse_lines_s("none,mv-occ@serializable", "snapshot").unwrap();
    assert_eq!((l[0].protocol, l[0].label.as_str(), l[0].isolation), (None, "none", None));
    assert_eq!(l[1].protocol, Some(Protocol::MvOcc));
    assert!(parse_lines("none@serializable", None).unwrap_err().contains("no @level"));
    assert!(parse_lines("none+si", None).unwrap_err().contains("no @level"));
    assert!(parse_lines("none,none", None).unwrap_err().contains("twice"));
    let given = [("isolation".to_string(), "--isolation=snapshot".to_string())];
    let (argv, _) = point_args(&given, &l[0], &[], &[]).unwrap();
    assert!(argv.contains(&"--protocol=none".to_string()), "{argv:?}");
    assert!(!argv.iter().any(|a| a.starts_with("--isolation")), "{argv:?}");
    let (argv, _) = point_args(&given, &l[1], &[], &[]).unwrap();
    assert!(argv.contains(&"--isolation=serializable".to_string()), "{argv:?}");
}

#[test]
fn sweeps_parse() {
    let s = parse_sweep("threads=1,2,4").unwrap();
    assert_eq!((s.name.as_str(), s.values.len()), ("threads", 3));
    let s = parse_sweep("--reads=0, 5").unwrap();
    assert_eq!((s.name.as_str(), s.values[1].as_str()), ("reads", "5"));
    let s = parse_sweep("mix=a:50,b:50;a:10,b:90").unwrap();
    assert_eq!(s.values, ["a:50,b:50", "a:10,b:90"]);
    for (bad, why) in [
        ("threads", "expected NAME=V1"),
        ("threads=", "no values"),
        ("=1,2", "no flag name"),
        ("threads=1,,2", "empty value"),
        ("threads=1,1", "twice"),
        ("nope=1", "not a flag"),
        ("protocol=mv-occ", "--protocols"),
        ("isolation=snapshot", "--protocols"),
        ("json=a", "not a flag of multiverse bench"),
        ("verify=true", "takes no value"),
    ] {
        let e = parse_sweep(bad).unwrap_err();
        assert!(e.contains(why) && e.starts_with("--sweep"), "{bad}: {e}");
    }
}

#[test]
fn points_replace_the_swept_flags() {
    let m = <CompareArgs as clap::Args>::augment_args(clap::Command::new("compare")).get_matches_from([
        "compare",
        "--threads",
        "3",
        "--rows=1k",
        "--isolation",
        "snapshot",
        "--no-prefetch",
        "--sweep",
        "threads=1,2",
    ]);
    let base = given_bench_flags(&m).unwrap();
    let ids: Vec<&str> = base.iter().map(|(id, _)| id.as_str()).collect();
    assert!(ids.contains(&"threads") && ids.contains(&"rows") && !ids.contains(&"duration"), "{base:?}");
    assert!(base.iter().any(|(_, a)| a == "--no-prefetch") && base.iter().any(|(_, a)| a == "--rows=1k"));
    let sweeps = vec![parse_sweep("threads=1,2").unwrap()];
    let lines = parse_lines_s("mv-occ,mv-occ@serializable", "snapshot").unwrap();
    let (argv, a) = point_args(&base, &lines[0], &sweeps, &["2".into()]).unwrap();
    assert_eq!((a.threads, a.rows, a.isolation.as_deref()), (Some(2), Some(1000), Some("snapshot")));
    assert!(a.hekaton.no_prefetch);
    // The run's own process gets the flags that were parsed here.
    for flag in ["--rows=1k", "--no-prefetch", "--protocol=mv-occ", "--threads=2"] {
        assert!(argv.iter().any(|x| x == flag), "{flag} in {argv:?}");
    }
    assert!(!argv.iter().any(|x| x.starts_with("--threads=1")) && !argv[0].contains("compare"), "{argv:?}");
    let (_, a) = point_args(&base, &lines[1], &sweeps, &["1".into()]).unwrap();
    assert_eq!((a.threads, a.isolation.as_deref()), (Some(1), Some("serializable")));
    let e = point_args(&base, &lines[0], &sweeps, &["0".into()]).unwrap_err();
    assert!(e.contains("--threads") && !e.contains('\n') && !e.starts_with("error"), "{e}");
    let other = [("workload".to_string(), "--workload=sibench".to_string())];
    let e = point_args(&other, &lines[0], &[parse_sweep("reads=1").unwrap()], &["1".into()]).unwrap_err();
    assert!(e.contains("--reads is a flag of workload hekaton, not of sibench"), "{e}");
}

/// A record as `compare` writes it (the fields the model reads).
fn rec(line: &str, isolation: &str, sweep: &[(&str, &str)], tps: f64, warehouses: u64) -> Value {
    let names: Vec<&str> = sweep.iter().map(|(n, _)| *n).collect();
    let values: Map<String, Value> = sweep.iter().map(|(n, v)| (n.to_string(), Value::from(*v))).collect();
    serde_json::json!({
        "protocol": line.split(['@', '+']).next().unwrap(), "isolation": isolation, "workload": "tpcc",
        "params": {"warehouses": warehouses, "mix": "new-order:100"},
        "threads": 2, "duration_requested_s": 1.0, "committed": 90, "aborted": 10, "throughput_tps": tps,
        "latency_us": {"max": 9.0, "p99.9": 5.0, "p50": 1.0, "p99": 4.0}, "bytes_per_row": tps / 10.0,
        "git_commit": "abc1234",
        "compare": {"line": line, "sweep": values, "sweep_order": names, "repeat": 1}
    })
}

#[test]
fn comparisons_are_rebuilt_from_records() {
    // Out of grid order, a second sweep whose name sorts first, repeats.
    let recs = vec![
        rec("silo", "serializable", &[("warehouses", "2"), ("mix", "a")], 200.0, 2),
        rec("silo", "serializable", &[("warehouses", "1"), ("mix", "b")], 150.0, 1),
        rec("silo", "serializable", &[("warehouses", "1"), ("mix", "a")], 100.0, 1),
        rec("mv-occ@snapshot", "snapshot", &[("warehouses", "1"), ("mix", "a")], 80.0, 1),
        rec("silo", "serializable", &[("warehouses", "1"), ("mix", "a")], 120.0, 1),
    ];
    let c = Comparison::from_records(recs).unwrap();
    assert_eq!(c.sweeps.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["warehouses", "mix"]);
    assert_eq!(c.sweeps[0].values, ["2", "1"], "values in order of first appearance");
    assert_eq!(c.lines.iter().map(|l| l.legend()).collect::<Vec<_>>(), ["silo / serializable", "mv-occ / snapshot"]);
    let order: Vec<(String, usize)> = c.points.iter().map(|p| (p.values.join(" "), p.line)).collect();
    let want = [("2 a", 0), ("1 a", 0), ("1 a", 1), ("1 b", 0)];
    assert_eq!(order, want.map(|(v, l)| (v.to_string(), l)));
    let p = c.point(&["1".into(), "a".into()], 0).unwrap();
    assert_eq!(
        (p.runs.len(), p.median(&Metric::Throughput), p.range(&Metric::Throughput)),
        (2, Some(110.0), Some((100.0, 120.0)))
    );
    assert_eq!(p.median(&Metric::AbortPct), Some(10.0));
    assert_eq!(p.median(&Metric::BytesPerRow), Some(11.0));
    let t = table(&c);
    assert!(t.contains("p99 latency in µs and memory per loaded row in bytes, median"), "{t}");
    assert!(t.contains("    4.0       11"), "p99 and bytes per row of silo at 1 a: {t}");
    assert_eq!(c.latencies(), ["p50", "p99", "p99.9", "max"]);
    assert_eq!((c.repeats(), c.grid().len()), (2, 4));
    assert!(c.repeats_text().contains("median of 1–2 runs"), "{}", c.repeats_text());
    assert_eq!(swept_text(&c).unwrap(), "swept: warehouses = 2, 1 (x axis); mix = a, b (one series each)");
    assert_eq!(list_sep(&["a:1,b:2".into(), "a:2".into()]), "; ", "mixes have commas");
    // warehouses is swept here: nothing implicit.
    assert!(c.implicit_changes().is_empty(), "{:?}", c.implicit_changes());
    assert!(c.constant_params().is_empty(), "both parameters are swept: {:?}", c.constant_params());
}

#[test]
fn implicit_changes_are_named() {
    let recs: Vec<Value> = [1u64, 2, 4]
        .iter()
        .flat_map(|&t| {
            let v = t.to_string();
            [
                rec("silo", "serializable", &[("threads", &v)], 1.0, t),
                rec("ssn+si", "serializable", &[("threads", &v)], 1.0, t),
            ]
        })
        .collect();
    let c = Comparison::from_records(recs).unwrap();
    assert_eq!(
            c.implicit_changes(),
            ["warehouses follows threads (not swept): warehouses = 1, 2, 4 at threads = 1, 2, 4; --warehouses holds it fixed"]
        );
    let ch = chart(&c, &Metric::Throughput);
    assert!(!plot::is_categorical(&ch.x));
    assert_eq!(
        ch.series.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["silo / serializable", "ssn+si / serializable"]
    );
    assert_eq!(ch.notes[0], "swept: threads = 1, 2, 4 (x axis)");
    assert!(ch.notes[1].starts_with("warehouses follows threads"), "{:?}", ch.notes);
    assert!(ch.notes.last().unwrap().contains("one run per point") && ch.notes.last().unwrap().contains("abc1234"));
    assert!(ch.notes.iter().any(|n| n.contains("isolation serializable")));

    // Not decided by the x value: said so, with its values.
    let mut recs = vec![rec("silo", "serializable", &[("threads", "1")], 1.0, 1)];
    recs.push(rec("silo", "serializable", &[("threads", "1")], 1.0, 3));
    let c = Comparison::from_records(recs).unwrap();
    assert_eq!(
        c.implicit_changes(),
        ["warehouses changes between runs (not swept): 1, 3; --warehouses holds it fixed"]
    );

    // No sweep: the lines are the categories, one bar each.
    let c = Comparison::from_records(vec![rec("silo", "serializable", &[], 5.0, 1)]).unwrap();
    let ch = chart(&c, &Metric::AbortPct);
    assert!(plot::is_categorical(&ch.x) && ch.x == ["tpcc"]);
    assert_eq!(ch.series[0].name, "silo / serializable");
    assert_eq!(ch.y_name, "aborted share of attempts (%)");
}

#[test]
fn medians() {
    assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    assert!(median(&mut []).is_nan());
}

#[test]
fn comparisons_are_read_back_from_csv() {
    // Points of 1, 2, 3 and 5 runs; a swept mix whose values hold commas.
    let mut recs = Vec::new();
    for (mix, runs) in [("new-order:50,payment:50", 1usize), ("a", 2), ("b", 3), ("c", 5)] {
        for line in ["silo", "mv-occ@snapshot"] {
            for r in 0..runs {
                let tps = 100.0 * (r as f64 + 1.0) + if line == "silo" { 0.0 } else { 7.0 };
                recs.push(rec(line, "serializable", &[("mix", mix), ("threads", "2")], tps, 2));
            }
        }
    }
    let c = Comparison::from_records(recs).unwrap();
    let text = csv_text(&c);
    let back = Comparison::from_csv(&text).unwrap();
    assert_eq!(csv_text(&back), text, "the CSV round-trips");
    assert!(text.lines().next().unwrap().ends_with(",cpu_share,bytes_per_row"), "{text}");
    let p = back.point(&["a".into(), "2".into()], 0).unwrap();
    assert_eq!(p.median(&Metric::BytesPerRow), Some(15.0), "bytes per row read back");
    // A CSV written before memory was measured still reads.
    let old: String = text.lines().map(|l| format!("{}\n", &l[..l.rfind(',').unwrap()])).collect();
    let old = Comparison::from_csv(&old).unwrap();
    assert_eq!(old.point(&["a".into(), "2".into()], 0).unwrap().median(&Metric::BytesPerRow), None);
    assert_eq!(back.repeats_text(), c.repeats_text(), "the run counts are the CSV's, not the stand-ins'");
    let (a, b) = (chart(&c, &Metric::Throughput), chart(&back, &Metric::Throughput));
    assert_eq!((a.x.clone(), a.y_name.clone()), (b.x.clone(), b.y_name.clone()));
    for (sa, sb) in a.series.iter().zip(&b.series) {
        assert_eq!(sa.name, sb.name);
        for (pa, pb) in sa.points.iter().zip(&sb.points) {
            let (pa, pb) = (pa.as_ref().unwrap(), pb.as_ref().unwrap());
            assert_eq!((pa.y, pa.lo, pa.hi), (pb.y, pb.lo, pb.hi), "same median and error bar");
        }
    }
    assert!(back.implicit_changes().is_empty(), "a CSV has no parameters to compare");

    // Bad CSV: a clear error, never a panic.
    for (bad, says) in [
        ("", "empty"),
        ("a,b\n", "not compare's CSV"),
        (&text.replacen("serializable,1,", "serializable,x,", 1) as &str, "runs is not a count"),
        (&text.replace("100.0,", "1e,") as &str, "not a number"),
        (&format!("{}tpcc,\"unclosed\n", text) as &str, "not closed"),
        (&format!("{}tpcc,x\n", text) as &str, "fields, the header has"),
        (&text.lines().take(1).collect::<String>() as &str, "no points"),
    ] {
        let e = Comparison::from_csv(bad).unwrap_err();
        assert!(e.contains(says), "{bad:?}: {e}");
    }
    assert_eq!(csv_fields("a,\"b,\"\"c\"\"\",").unwrap(), ["a", "b,\"c\"", ""]);
}
