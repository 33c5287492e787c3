//! What every subcommand shares about its command line: how a failure
//! exits (a usage error or a failed run) and the rule for output paths.
//!
//! Exit status: 0 success; 1 the command ran and failed (a failed run, a
//! violation found, a file that could not be read or written); 2 a usage
//! error, caught before anything ran: an unknown flag, a value out of
//! range, flags that do not combine, a missing argument, an output whose
//! directory does not exist; 3 `recover`: a damaged (or refused) directory.
//!
//! Outputs: a subcommand creates its output files (and an output that is a
//! directory by nature, such as `compare --data-dir`, the directory
//! itself), but never a missing parent directory: that is a one-line usage
//! error naming it.

use std::path::Path;

/// Lets every flag that takes a value take a negative number, so that
/// `--threads -1` reaches the flag's parser and is refused as out of range
/// (exit 2) instead of being read as an unknown flag `-1`.
pub(crate) fn negative_values(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| if a.get_action().takes_values() { a.allow_negative_numbers(true) } else { a })
        .mut_subcommands(negative_values)
}

/// The exit status of a usage error.
pub(crate) const EXIT_USAGE: u8 = 2;

/// Why a subcommand failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The command line is wrong; nothing ran (exit 2).
    Usage(String),
    /// The command ran and failed (exit 1).
    Run(String),
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Failure::Run(e)
    }
}

impl Failure {
    /// A run-time failure before `started`, a usage error: for commands
    /// that check their whole command line before they start.
    pub(crate) fn by_phase(e: String, started: bool) -> Failure {
        if started {
            Failure::Run(e)
        } else {
            Failure::Usage(e)
        }
    }
}

/// Refuses an output file (given by `flag`) whose parent directory does not
/// exist: outputs are created, missing parent directories never are.
pub(crate) fn check_parent(flag: &str, path: &Path) -> Result<(), String> {
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else { return Ok(()) };
    if parent.is_dir() {
        return Ok(());
    }
    if parent.exists() {
        return Err(format!("{flag} {}: {} is not a directory", path.display(), parent.display()));
    }
    Err(format!("{flag} {}: directory {} does not exist (create it first)", path.display(), parent.display()))
}

/// An output directory (given by `flag`): created when missing, but not its
/// missing parents (see [`check_parent`]).
pub(crate) fn create_output_dir(flag: &str, dir: &Path) -> Result<(), String> {
    if dir.is_dir() {
        return Ok(());
    }
    check_parent(flag, dir)?;
    std::fs::create_dir(dir).map_err(|e| format!("{flag} {}: cannot create it: {e}", dir.display()))
}

/// `n` rows in words: "1 row", "2 rows".
pub(crate) fn rows(n: u64) -> String {
    if n == 1 {
        "1 row".to_string()
    } else {
        format!("{n} rows")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_are_never_created() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_parent("--out", Path::new("file.json")).is_ok());
        assert!(check_parent("--out", &dir.path().join("a.json")).is_ok());
        let e = check_parent("--out", &dir.path().join("missing/a.json")).unwrap_err();
        assert!(e.starts_with("--out ") && e.contains("missing does not exist"), "{e}");
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert!(check_parent("--out", &file.join("a.json")).unwrap_err().contains("is not a directory"));
        create_output_dir("--keep", &dir.path().join("k")).unwrap();
        assert!(dir.path().join("k").is_dir());
        create_output_dir("--keep", &dir.path().join("k")).unwrap();
        assert!(create_output_dir("--keep", &dir.path().join("x/y")).unwrap_err().contains("does not exist"));
        assert!(!dir.path().join("x").exists());
    }
}
