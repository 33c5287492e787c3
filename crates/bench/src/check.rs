//! `multiverse check FILE`: checks a recorded history (docs/CHECKER.md)
//! against an isolation level, and the verdict printing shared with
//! `multiverse bench --verify`.

use multiverse::research::history::History;
use multiverse::Isolation;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

/// Arguments of `multiverse check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The history file ("-" for standard input).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The isolation level the history claims [default: the level of its
    /// transactions, when they all share one].
    #[arg(long, value_name = "L")]
    isolation: Option<String>,
}

/// `multiverse check`: an unknown `--isolation` is a usage error.
pub fn run(a: CheckArgs) -> Result<(), crate::cli::Failure> {
    let flag = a
        .isolation
        .as_deref()
        .map(str::parse::<Isolation>)
        .transpose()
        .map_err(|e| crate::cli::Failure::Usage(e.to_string()))?;
    let history = read_file(&a.file)?;
    let claimed = match flag {
        Some(l) => l,
        None => common_level(&history)?,
    };
    Ok(verify(&history, claimed)?)
}

fn read_file(path: &Path) -> Result<History, String> {
    let shown = path.display();
    if path.as_os_str() == "-" {
        return multiverse_check::read_history(std::io::stdin().lock()).map_err(|e| format!("<stdin>: {e}"));
    }
    let f = std::fs::File::open(path).map_err(|e| format!("cannot open {shown}: {e}"))?;
    multiverse_check::read_history(BufReader::new(f)).map_err(|e| format!("{shown}: {e}"))
}

/// The one isolation level all transactions of the history ran at.
fn common_level(h: &History) -> Result<Isolation, String> {
    let mut levels: Vec<Isolation> = h.txns.iter().map(|t| t.isolation).collect();
    levels.sort();
    levels.dedup();
    match levels.as_slice() {
        [one] => Ok(*one),
        [] => Err("the history holds no transactions; pass --isolation to check it anyway".into()),
        many => {
            let names: Vec<_> = many.iter().map(|l| l.name()).collect();
            Err(format!("the history mixes isolation levels ({}); pass --isolation L", names.join(", ")))
        }
    }
}

/// Writes a history to `path` in the text format.
pub fn write_file(h: &History, path: &Path) -> Result<(), String> {
    let f = std::fs::File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    multiverse_check::write_history(h, BufWriter::new(f)).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Checks `h` against `claimed`, prints the report, and fails on a violation.
pub fn verify(h: &History, claimed: Isolation) -> Result<(), String> {
    let report = multiverse_check::check(h, claimed);
    print!("verify: {report}");
    if report.ok() {
        Ok(())
    } else {
        Err(format!("the history violates {claimed}: {} forbidden anomalies", report.forbidden_count()))
    }
}
