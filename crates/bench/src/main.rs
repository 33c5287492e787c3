//! `multiverse`: benchmarks, comparisons and the multi-session script shell.

mod bench;
mod check;
mod cli;
mod compare;
mod datadir;
mod dump;
mod plot;
mod recover;
mod report_html;
mod shell;
mod verify;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// mimalloc: size-class pages keep 64-byte versions on one cache line each
/// (glibc's 16-byte-aligned chunks straddle two lines three times in four),
/// and its thread-local free lists suit the engine's per-thread churn.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::process::ExitCode;

/// Multiverse: an in-memory multi-version transaction engine, its protocols,
/// and the instruments to compare them.
#[derive(Parser)]
#[command(name = "multiverse", version, after_help = EXIT_STATUS)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

/// The exit statuses, under the top-level help (cli.rs has the rules).
const EXIT_STATUS: &str = "\
Exit status: 0 success; 1 the command ran and failed (a failed run, a violation found, a file
that could not be read or written); 2 a usage error, nothing ran (an unknown flag, a value out
of range, flags that do not combine, a missing argument, an output whose directory does not
exist); 3 recover: the data directory is damaged (or refused).";

#[derive(Subcommand)]
enum Cmd {
    /// Run one protocol on one workload and print (or write) the result.
    Bench(Box<bench::BenchCli>),
    /// Run a grid of bench points (protocols × swept flag values), print a
    /// table, and write CSV, JSON and a plot (SVG, PNG): docs/COMPARE.md.
    Compare(Box<compare::CompareArgs>),
    /// Run a multi-session script against table test(id, value).
    Shell(shell::ShellArgs),
    /// Check a recorded history (see `bench --history`) against an isolation level.
    Check(check::CheckArgs),
    /// Load a data directory (checkpoint and logs) without changing it, and
    /// report what it holds and what recovery would drop (with --salvage
    /// OUT: write the intact log records recovery drops into OUT).
    Recover(recover::RecoverArgs),
    /// The verification campaign: every protocol at every level it offers on
    /// every workload it runs, with `bench --verify`, within a time budget;
    /// one table, and a non-zero exit on any finding.
    Verify(verify::VerifyArgs),
    /// Write each table of a data directory as JSON Lines (TABLE.jsonl, hex
    /// keys and values) into a new directory.
    Export(dump::ExportArgs),
    /// Create a new data directory from a directory that `export` wrote.
    Import(dump::ImportArgs),
    /// Write a consistent copy of a data directory into a new directory.
    Backup(dump::BackupArgs),
    /// Write one self-contained HTML page (tables, inline SVG plots) of the
    /// comparisons in DIR: the PREFIX.json files `compare` writes.
    Report(report_html::ReportArgs),
}

fn main() -> ExitCode {
    // The matches are kept: `compare` reads back which bench flags were typed.
    let matches = cli::negative_values(Cli::command()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    use cli::Failure;
    let r: Result<(), Failure> = match cli.cmd {
        None => bench::default_comparison().map_err(Failure::Run),
        Some(Cmd::Bench(a)) => bench::run(*a),
        Some(Cmd::Shell(a)) => shell::run(a).map_err(Failure::Run),
        Some(Cmd::Check(a)) => check::run(a),
        Some(Cmd::Recover(a)) => recover::run(a).map_err(Failure::Run),
        Some(Cmd::Verify(a)) => verify::run(a),
        // Their output directory is created, its missing parents never are.
        Some(Cmd::Export(a)) => cli::check_parent("--out", &a.out)
            .map_err(Failure::Usage)
            .and_then(|()| dump::export(a).map_err(Failure::Run)),
        Some(Cmd::Import(a)) => cli::check_parent("--into", &a.into)
            .map_err(Failure::Usage)
            .and_then(|()| dump::import(a).map_err(Failure::Run)),
        Some(Cmd::Backup(a)) => cli::check_parent("--out", &a.out)
            .map_err(Failure::Usage)
            .and_then(|()| dump::backup(a).map_err(Failure::Run)),
        Some(Cmd::Report(a)) => report_html::run(a),
        Some(Cmd::Compare(a)) => match matches.subcommand_matches("compare") {
            Some(m) => compare::run(*a, m),
            None => Err(Failure::Run("internal error: no matches of compare".into())),
        },
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(e)) => {
            eprintln!("multiverse: {e}");
            ExitCode::from(cli::EXIT_USAGE)
        }
        Err(Failure::Run(e)) => {
            eprintln!("multiverse: {e}");
            ExitCode::FAILURE
        }
    }
}
