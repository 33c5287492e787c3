//! The default comparison, `multiverse` with no arguments: Hekaton MV/O at
//! the four isolation levels on the section 5.1 workload, one load reused
//! by every level, in rounds; a table and a plot. Environment variables
//! resize it (see the parent module).

use super::harness::{self, RunConfig, RunResult};
use super::{
    check_memory, exit_without_drop, open_db, parse_count, parse_seconds, parse_threads, report, sys, units,
    DEFAULT_SEED,
};
use multiverse::research::Faults;
use multiverse::{Isolation, Mode, Options, Protocol};
use multiverse_workloads::{Hekaton, HekatonConfig};
use std::io::IsTerminal;
use std::time::Duration;

fn env_or<T: std::str::FromStr>(
    name: &str,
    default: T,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<T, String> {
    match std::env::var(name) {
        Ok(s) => parse(&s).map_err(|e| format!("{name}={s}: {e}")),
        Err(_) => Ok(default),
    }
}

/// Rounds of the default comparison (see `default_comparison`).
const DEFAULT_ROUNDS: usize = 3;

/// `multiverse` with no arguments: MV/O at the four isolation levels on the
/// Hekaton section 5.1 workload, one load reused by every level. Also draws
/// the table as `default.svg` and `default.png` under `bench-out` (or
/// `$MULTIVERSE_OUT_DIR`).
pub fn default_comparison() -> Result<(), String> {
    let rows = env_or("MULTIVERSE_DEFAULT_ROWS", 1_000_000, parse_count)?;
    let secs = env_or("MULTIVERSE_DEFAULT_SECONDS", 10.0, parse_seconds)?;
    let threads = env_or("MULTIVERSE_DEFAULT_THREADS", 2, parse_threads)?;
    let protocol = Protocol::MvOcc;
    let cfg = HekatonConfig { rows, ..HekatonConfig::default() };
    cfg.validate().map_err(|e| format!("MULTIVERSE_DEFAULT_ROWS: {e}"))?;
    check_memory(rows)?;
    let show = std::io::stderr().is_terminal();

    println!(
        "Multiverse default comparison: Hekaton MV/O at four isolation levels\n\
         workload hekaton (section 5.1): R={} reads + W={} writes per transaction, N={} rows, \
         {}, {secs} s per level in {DEFAULT_ROUNDS} rounds",
        cfg.reads,
        cfg.writes,
        units::int(rows),
        units::threads(threads)
    );
    println!("(run `multiverse bench --help` for single runs, other sizes and JSON output)\n");

    let d = Options::default();
    let db = open_db(
        protocol,
        threads,
        d.deadlock_interval.as_micros() as u64,
        d.lock_timeout.as_micros() as u64,
        d.ssn_base,
        Faults::default(),
        d.ordered_map,
    )?;
    let rss_before = sys::rss_bytes();
    let w = Hekaton::setup(&db, cfg)?;
    let load = harness::load(&db, &w, threads, show, rss_before)?;
    println!(
        "loaded {} rows in {:.2} s ({:.0} bytes/row); each level reuses them after a garbage collection\n",
        units::int(load.rows),
        load.elapsed.as_secs_f64(),
        load.bytes_per_row()
    );
    // A short unmeasured warm-up, so the first level does not run on freshly
    // loaded, never-updated memory while the others do not.
    let warm = Duration::from_secs_f64((secs / 10.0).min(1.0));
    let run_cfg = |isolation| RunConfig {
        threads,
        duration: Duration::from_secs_f64(secs),
        warmup: Duration::ZERO,
        pin: &[],
        breakdown: false,
        retry: multiverse_workloads::Retry::UntilCommit,
        isolation,
        mode: Mode::Default,
        seed: DEFAULT_SEED,
        show_progress: show,
    };
    harness::run(&db, &w, RunConfig { duration: warm, ..run_cfg(Isolation::ReadCommitted) }, None)?;

    // The levels run in turn, DEFAULT_ROUNDS times, each round a share of
    // the time: a slow spell of the machine hits every level alike, and each
    // level's row is its median round.
    let per_round = Duration::from_secs_f64(secs / DEFAULT_ROUNDS as f64);
    let mut runs: Vec<Vec<RunResult>> = Isolation::ALL.iter().map(|_| Vec::new()).collect();
    for _ in 0..DEFAULT_ROUNDS {
        for (i, &level) in Isolation::ALL.iter().enumerate() {
            db.collect_garbage();
            runs[i].push(harness::run(&db, &w, RunConfig { duration: per_round, ..run_cfg(level) }, None)?);
        }
    }
    println!("{}", report::comparison_header());
    let mut rc_tps = None;
    let mut points = Vec::new();
    for (level, mut rounds) in Isolation::ALL.into_iter().zip(runs) {
        rounds.sort_by(|a, b| a.throughput().total_cmp(&b.throughput()));
        let (low, high) = (rounds[0].throughput(), rounds[rounds.len() - 1].throughput());
        let median = &rounds[rounds.len() / 2];
        let base = *rc_tps.get_or_insert(median.throughput());
        println!("{}", report::comparison_row(level, median, base, threads, (low, high)));
        points.push(Some(crate::plot::Point::single(median.throughput())));
    }
    println!();
    println!(
        "each row: the median of {DEFAULT_ROUNDS} rounds of {:.1} s, the levels run in turn; spread: the \
         rounds' lowest and highest throughput around it. On this read-mostly, low-conflict \
         workload the levels cost nearly the same, so differences within the spread are the \
         machine's noise, not the level's (`multiverse compare --repeat 5` for firmer numbers)",
        per_round.as_secs_f64()
    );
    println!();
    println!(
        "peak RSS {}, {} versions alive at the end; git commit {}",
        units::bytes(sys::peak_rss_bytes()),
        units::int(db.stats().versions_alive),
        sys::GIT_COMMIT
    );
    println!(
        "cpu: share of the run the workers were on a CPU; below 100% other processes competed, \
         and the numbers are noisy"
    );
    exit_without_drop(db);
    let chart = crate::plot::Chart {
        title: "Hekaton MV/O at four isolation levels".into(),
        notes: vec![
            format!(
                "workload hekaton (section 5.1): R={} reads + W={} writes per transaction, N={} rows",
                cfg.reads,
                cfg.writes,
                units::int(rows)
            ),
            format!("{}, {secs} s per level, commit {}", units::threads(threads), sys::GIT_COMMIT),
        ],
        x_name: "isolation level".into(),
        y_name: "throughput (txn/s)".into(),
        x: Isolation::ALL.iter().map(|l| l.name().to_string()).collect(),
        series: vec![crate::plot::Series { name: protocol.name().into(), points }],
    };
    let [svg, png] = crate::plot::write(&chart, &crate::plot::out_dir().join("default"))
        .map_err(|e| format!("{e} (set MULTIVERSE_OUT_DIR to write the plot elsewhere)"))?;
    println!("plot of this table: {} and {}", svg.display(), png.display());
    Ok(())
}
