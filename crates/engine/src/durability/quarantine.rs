//! The quarantine: where [`crate::Database::open_with`] under
//! [`crate::OnDamage::KeepPrefix`] moves what it drops from a damaged data
//! directory, instead of deleting it.
//!
//! Opening a directory starts a new generation from the state recovered
//! and then removes the old generation's files (its checkpoint, its log
//! files and any stray log file) and replaces the manifest. After a clean
//! recovery those files hold nothing the new checkpoint lacks. After a
//! damaged one they hold the intact records past the damage, so the open
//! first gathers every one of them, with the manifest and the `workload`
//! file, into `DIR/quarantine-<generation>/` (`-2`, `-3`... if that name is
//! taken) and writes a `README.txt` there: what was moved, the damage
//! (recovery's dropped lines), and how to look at it. The folder is a
//! complete copy of the damaged generation: `multiverse recover` reads it,
//! and `multiverse recover FOLDER --salvage OUT` writes its dropped records
//! out. Recovery never reads it (it reads only the files of the data
//! directory itself), and the engine never removes it.
//!
//! The files are hard-linked into the folder (copied where the file system
//! has no hard links; the small manifest and workload file are always
//! copied, since they are replaced in place of their names), the folder is
//! synced, and only then does the open write its checkpoint and remove the
//! originals' names: a move that a crash cannot interrupt halfway. A crash
//! before the `README.txt` (written last) leaves a folder without one,
//! whose files are all still in the data directory as well; the next open
//! finds the same damage and quarantines it again.

use super::{parse_checkpoint_name, parse_log_name, sync_dir, RecoveryReport, MANIFEST_FILE};
use crate::{Error, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The prefix of a quarantine folder's name.
pub(crate) const PREFIX: &str = "quarantine-";
/// The note inside it.
pub(crate) const README: &str = "README.txt";
/// The file `multiverse bench` writes: what created the data (copied, so
/// that `multiverse recover` can check the quarantined data's invariants).
const WORKLOAD_FILE: &str = "workload";

/// The name a quarantine of `generation` would take in `dir`: the first of
/// `quarantine-<generation>`, `quarantine-<generation>-2`, ... not taken.
pub(crate) fn free_name(dir: &Path, generation: u64) -> PathBuf {
    (1u32..)
        .map(|k| dir.join(name(generation, k)))
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .expect("some name is free")
}

fn name(generation: u64, k: u32) -> String {
    match k {
        1 => format!("{PREFIX}{generation:08}"),
        k => format!("{PREFIX}{generation:08}-{k}"),
    }
}

/// Whether `name` is a file the open drops or replaces: every checkpoint
/// (finished or not) and log file, and the manifest. All of them were in
/// the damaged generation or stray (the new generation has none yet).
fn dropped_by_open(name: &str) -> bool {
    parse_checkpoint_name(name).is_some()
        || parse_log_name(name).is_some()
        || (name.starts_with("checkpoint-") && name.ends_with(".tmp"))
        || name == MANIFEST_FILE
}

/// Moves (see the module docs) every file of `dir` that the open is about
/// to drop into a new quarantine folder, with a `README.txt` naming them
/// and `rep`'s damage; returns the folder.
pub(crate) fn keep(dir: &Path, rep: &RecoveryReport) -> Result<PathBuf> {
    let io =
        |what: &str, p: &Path, e: std::io::Error| Error::Io(format!("quarantine: cannot {what} {}: {e}", p.display()));
    let q = create(dir, rep.generation)?;
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| io("read", dir, e))? {
        let e = e.map_err(|e| io("read", dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let meta = std::fs::symlink_metadata(e.path()).map_err(|err| io("read", &e.path(), err))?;
        if meta.is_file() && (dropped_by_open(&name) || name == WORKLOAD_FILE) {
            names.push((name, meta.len()));
        }
    }
    names.sort();
    for (name, _) in &names {
        let (from, to) = (dir.join(name), q.join(name));
        // The manifest and the workload file are replaced by renames today,
        // but they are small: a copy does not depend on it.
        let small = name == MANIFEST_FILE || name == WORKLOAD_FILE;
        if small || std::fs::hard_link(&from, &to).is_err() {
            copy_synced(&from, &to).map_err(|e| io("copy", &from, e))?;
        }
    }
    let readme = q.join(README);
    let text = readme_text(dir, &q, rep, &names);
    let mut f = std::fs::File::create(&readme).map_err(|e| io("write", &readme, e))?;
    std::io::Write::write_all(&mut f, text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| io("write", &readme, e))?;
    sync_dir(&q)?;
    sync_dir(dir)?;
    Ok(q)
}

/// Creates the folder under the first free name.
fn create(dir: &Path, generation: u64) -> Result<PathBuf> {
    for k in 1u32.. {
        let q = dir.join(name(generation, k));
        match std::fs::create_dir(&q) {
            Ok(()) => return Ok(q),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::Io(format!("quarantine: cannot create {}: {e}", q.display()))),
        }
    }
    unreachable!("u32 names run out")
}

fn copy_synced(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::copy(from, to)?;
    std::fs::File::open(to)?.sync_all()
}

/// The note: when, why, what, and what to do with it.
fn readme_text(dir: &Path, q: &Path, rep: &RecoveryReport, names: &[(String, u64)]) -> String {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let folder = q.display();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "This folder holds what opening the data directory {} with OnDamage::KeepPrefix did not keep\n\
         (generation {}, opened at unix time {since} by process {}).\n",
        dir.display(),
        rep.generation,
        std::process::id()
    );
    let _ = writeln!(
        t,
        "The directory was damaged: commits acknowledged as durable may be lost. The open recovered the\n\
         longest consistent prefix of the commit order ({} transactions replayed after the checkpoint,\n\
         through epoch {}), started generation {} from it, and moved every file it would otherwise\n\
         have deleted or replaced here. Nothing was deleted.\n",
        rep.replayed,
        rep.durable_epoch,
        rep.generation + 1
    );
    let _ = writeln!(t, "What recovery dropped, and why:");
    for line in &rep.dropped {
        let _ = writeln!(t, "  - {line}");
    }
    let _ = writeln!(t, "\nMoved here ({} files):", names.len());
    for (name, bytes) in names {
        let _ = writeln!(t, "  {name} ({bytes} bytes)");
    }
    let _ = writeln!(
        t,
        "\nThis folder is a data directory of its own, which the database never reads again.\n\
         To see what it holds (changing nothing):\n\
         \x20 multiverse recover {folder}\n\
         To write every intact log record that recovery dropped into OUT, one JSON Lines file per stream:\n\
         \x20 multiverse recover {folder} --salvage OUT\n\
         Delete the folder once nothing in it is needed."
    );
    t
}
