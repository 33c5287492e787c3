//! Microbenchmark of the ordered index's map: crossbeam's skip list against
//! the engine's B+tree with optimistic lock coupling
//! (`multiverse::research::index_bench`).
//!
//! `cargo run --release -p multiverse-engine --example index_bench -- [--keys N] [--threads 1,2] [--secs S] [--big] [--json FILE]`
//!
//! Defaults: 1,000,000 keys, 1 and 2 threads, 1 second per timed case. A
//! debug build (as CI runs every example) with no arguments makes a smoke
//! run instead: 20,000 keys, 0.05 seconds per case.
//! `--big` runs 10,000,000 keys after the default size (memory: a few GB).
//! Prints one table line per case and thread count: operations per second
//! of each map and their ratio; `--json FILE` also writes every row.

use multiverse::research::index_bench::{run, Config, Row};
use std::fmt::Write as _;

fn main() {
    let mut cfg = Config::default();
    if cfg!(debug_assertions) && std::env::args().len() == 1 {
        cfg = Config { keys: 20_000, secs: 0.05, ..cfg };
        println!("debug build: a smoke run (build with --release to measure)");
    }
    let mut sizes = Vec::new();
    let mut json = None;
    let mut big = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--keys" => sizes.push(val().parse().expect("--keys N")),
            "--threads" => cfg.threads = val().split(',').map(|t| t.parse().expect("--threads 1,2")).collect(),
            "--secs" => cfg.secs = val().parse().expect("--secs S"),
            "--big" => big = true,
            "--json" => json = Some(val()),
            _ => panic!("unknown argument {a} (see the example's docs)"),
        }
    }
    if sizes.is_empty() {
        sizes.push(cfg.keys);
    }
    if big {
        sizes.push(10_000_000);
    }
    println!(
        "{:>10} {:>9} {:>7} {:>14} {:>14} {:>7}",
        "keys", "case", "threads", "skiplist op/s", "btree op/s", "ratio"
    );
    let mut all = Vec::new();
    for n in sizes {
        cfg.keys = n;
        let mut pending: Vec<Row> = Vec::new();
        let rows = run(&cfg, |r| {
            if r.map == "skiplist" {
                pending.push(r.clone());
                return;
            }
            let s = pending.iter().find(|p| p.case == r.case && p.threads == r.threads).expect("skip list first");
            println!(
                "{:>10} {:>9} {:>7} {:>14.0} {:>14.0} {:>7.2}",
                n,
                r.case,
                r.threads,
                s.ops_per_s,
                r.ops_per_s,
                r.ops_per_s / s.ops_per_s
            );
        });
        all.extend(rows);
    }
    if let Some(path) = json {
        let mut out = String::from("[\n");
        for (i, r) in all.iter().enumerate() {
            let sep = if i + 1 < all.len() { "," } else { "" };
            writeln!(
                out,
                "  {{\"map\": \"{}\", \"case\": \"{}\", \"keys\": {}, \"threads\": {}, \"ops_per_s\": {:.0}}}{sep}",
                r.map, r.case, r.keys, r.threads, r.ops_per_s
            )
            .unwrap();
        }
        out.push_str("]\n");
        std::fs::write(&path, out).expect("write the JSON file");
    }
}
