//! The files of a data directory: what it holds, by the names recovery
//! gives them ([`Survey`]), which of them recovery reads, whether a
//! database has the directory open, and the spec that recreates a table as
//! the directory records it.

use super::WORKLOAD_FILE;
use crate::bench::units;
use multiverse::TableSpec;
use std::path::Path;

/// What a directory holds, by the names recovery gives its files.
#[derive(Debug, Default)]
pub(crate) struct Survey {
    pub(crate) entries: usize,
    /// Checkpoints (`checkpoint-*.mvc`): name and bytes.
    pub(crate) checkpoints: Vec<(String, u64)>,
    /// Unfinished checkpoints (`checkpoint-*.tmp`).
    pub(crate) unfinished: usize,
    /// Log files (`log-*.mvl`) and their bytes.
    pub(crate) logs: usize,
    pub(crate) log_bytes: u64,
    pub(crate) manifest: bool,
    pub(crate) workload: bool,
    pub(crate) lock: bool,
    /// Quarantine folders (`quarantine-*/`, left by opens that kept a
    /// damaged directory's prefix; never read by recovery).
    pub(crate) quarantines: Vec<String>,
    /// The manifest of a directory that `multiverse export` wrote
    /// (`export.json`, or its temporary name while unfinished).
    pub(crate) export_manifest: bool,
    pub(crate) other: usize,
}

impl Survey {
    /// Lists `dir`. Refuses a path that is not a readable directory, and a
    /// file of the data's names that is not a regular file (recovery would
    /// wait forever on a FIFO).
    pub(crate) fn of(dir: &Path) -> Result<Survey, String> {
        match std::fs::metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("{}: no such directory", dir.display()))
            }
            Err(e) => return Err(format!("cannot read {}: {e}", dir.display())),
            Ok(m) if !m.is_dir() => return Err(format!("{}: not a directory", dir.display())),
            Ok(_) => {}
        }
        let err = |e: std::io::Error| format!("cannot read {}: {e}", dir.display());
        let mut s = Survey::default();
        for e in std::fs::read_dir(dir).map_err(err)? {
            let e = e.map_err(err)?;
            let name = e.file_name().to_string_lossy().into_owned();
            s.entries += 1;
            let data = |s: &str| (s.starts_with("checkpoint-") && s.ends_with(".mvc")) || s.starts_with("log-");
            if !(data(&name) || name == "manifest" || name == WORKLOAD_FILE) {
                match name.as_str() {
                    "LOCK" => s.lock = true,
                    n if n.starts_with("quarantine-") && e.file_type().is_ok_and(|t| t.is_dir()) => {
                        s.quarantines.push(n.to_string())
                    }
                    n if n.starts_with("checkpoint-") && n.ends_with(".tmp") => s.unfinished += 1,
                    n => {
                        s.export_manifest |= n == "export.json" || n == ".export.json.tmp";
                        s.other += 1
                    }
                }
                continue;
            }
            let meta =
                std::fs::metadata(e.path()).map_err(|err| format!("cannot read {}: {err}", e.path().display()))?;
            if !meta.is_file() {
                return Err(format!("{}: not a regular file", e.path().display()));
            }
            if name == "manifest" {
                s.manifest = true;
            } else if name == WORKLOAD_FILE {
                s.workload = true;
            } else if name.starts_with("log-") {
                s.logs += 1;
                s.log_bytes += meta.len();
            } else {
                s.checkpoints.push((name, meta.len()));
            }
        }
        Ok(s)
    }

    /// Refuses, in one line, a directory that holds nothing to `verb`
    /// ("recover", "export", ...): an export (which `import` turns into a
    /// data directory), an empty directory, or one that holds files but
    /// none that a data directory holds.
    pub(crate) fn refuse_unless_data(&self, dir: &Path, verb: &str) -> Result<(), String> {
        let d = dir.display();
        let data = !self.checkpoints.is_empty() || self.logs > 0 || self.manifest;
        if self.export_manifest && !data {
            return Err(format!(
                "{d}: an export written by 'multiverse export', not a multiverse data directory; \
                 'multiverse import {d} --into NEWDIR' makes a data directory of it"
            ));
        }
        if self.entries == 0 {
            return Err(format!(
                "{d}: an empty directory: nothing to {verb} (no checkpoint, log, manifest or workload file)"
            ));
        }
        if self.other == self.entries {
            return Err(format!(
                "{d}: not a multiverse data directory (none of its {} entries is a checkpoint, log, manifest or \
                 workload file)",
                self.entries
            ));
        }
        Ok(())
    }

    /// One line: what is there.
    pub(crate) fn describe(&self) -> String {
        if self.entries == 0 {
            return "empty".into();
        }
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        let mut parts = Vec::new();
        if !self.checkpoints.is_empty() {
            let bytes = self.checkpoints.iter().map(|c| c.1).sum();
            parts.push(format!("{} ({})", plural(self.checkpoints.len(), "checkpoint"), units::bytes(bytes)));
        }
        if self.unfinished > 0 {
            parts.push(plural(self.unfinished, "unfinished checkpoint"));
        }
        if self.logs > 0 {
            parts.push(format!("{} ({})", plural(self.logs, "log file"), units::bytes(self.log_bytes)));
        }
        for (there, what) in [(self.manifest, "manifest"), (self.workload, "workload file"), (self.lock, "LOCK")] {
            if there {
                parts.push(what.into());
            }
        }
        if !self.quarantines.is_empty() {
            let mut q = self.quarantines.clone();
            q.sort();
            parts.push(format!(
                "{} ({}/, never read by recovery)",
                plural(q.len(), "quarantine folder"),
                q.join("/, ")
            ));
        }
        if self.other > 0 {
            parts.push(plural(self.other, "other file"));
        }
        parts.join(", ")
    }
}

/// The names of the files recovery reads, for telling whether they changed
/// while it read them.
pub(crate) fn data_files(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<String> = entries
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with("checkpoint-") || n.starts_with("log-") || n == "manifest")
        .collect();
    v.sort();
    v
}

/// Which file of `dir` a process holds a lock on, and which process, if
/// any: a database has the directory open. Read from `/proc/locks`, so
/// that looking takes no lock (a lock taken only to test, however briefly,
/// could make a database opening the directory at that moment fail).
pub(crate) fn lock_holder(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let mut files = std::collections::HashMap::new();
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        if let Ok(m) = e.metadata() {
            files.insert(m.ino(), (m.dev(), e.file_name().to_string_lossy().into_owned()));
        }
    }
    // `/proc/locks` names a file by the major and minor numbers (hex) of
    // its device and its inode number; a stacked file system (overlayfs)
    // reports another device there than `stat` does, so an inode number
    // that matches is taken with either device.
    let major = |d: u64| ((d >> 32) & 0xffff_f000) | ((d >> 8) & 0xfff);
    let minor = |d: u64| ((d >> 12) & 0xffff_ff00) | (d & 0xff);
    let mut found = None;
    for line in locks.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's
        // line has "->" after the number.
        if f.len() < 6 || f[1] == "->" {
            continue;
        }
        let (kind, pid) = (f[1], f[4]);
        let id: Vec<&str> = f[5].split(':').collect();
        let (Some(Ok(maj)), Some(Ok(min)), Some(Ok(ino))) = (
            id.first().map(|s| u64::from_str_radix(s, 16)),
            id.get(1).map(|s| u64::from_str_radix(s, 16)),
            id.get(2).map(|s| s.parse::<u64>()),
        ) else {
            continue;
        };
        let Some((dev, name)) = files.get(&ino) else { continue };
        let held = format!("{name} is locked ({kind}) by process {pid}");
        if (major(*dev), minor(*dev)) == (maj, min) {
            return Some(held);
        }
        found.get_or_insert(held);
    }
    found
}

/// The spec that recreates a table as its data directory records it, to
/// load its rows: the recorded kinds and types, or a hash table for one
/// recorded without them (by files of earlier versions). A secondary
/// index's key function is the application's code: here each gets the
/// primary key, so that the table is recorded as it was (a backup or an
/// import keeps its indexes' names and kinds) but the index is of no use
/// for lookups, which `recover`, `export` and `backup` do not make.
pub(crate) fn recorded_spec(t: &multiverse::durability::StoredTable) -> TableSpec {
    use multiverse::IndexKind;
    let mut spec = TableSpec::new(&t.name, t.primary.unwrap_or(IndexKind::Hash { capacity: 1 << 16 }));
    for (name, kind) in &t.secondary {
        spec = spec.secondary(name, *kind, |pk, _| pk.clone());
    }
    match &t.types {
        Some((k, v)) => spec.types(k, v),
        None => spec,
    }
}
