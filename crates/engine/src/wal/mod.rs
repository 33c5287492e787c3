//! The write-ahead (redo) log: the on-disk record format ([`format`]), the
//! per-stream log writer with group commit and its flusher ([`log`]), and
//! the names of the files they write. The layer every protocol logs
//! through; it knows no protocol and no database (the data directory, its
//! checkpoints and recovery are `durability`, above it). See
//! `durability`'s module docs for how each protocol orders its records.

pub(crate) mod format;
pub(crate) mod log;

use crate::{Error, Result};
use std::path::Path;

/// The name of the manifest: the files each log stream holds.
pub(crate) const MANIFEST_FILE: &str = "manifest";

pub(crate) fn log_file_name(generation: u64, stream: u32, seq: u32) -> String {
    format!("log-{generation:08}-{stream:03}-{seq:06}.mvl")
}

/// Parses `log-<g>-<stream>-<seq>.mvl`.
pub(crate) fn parse_log_name(name: &str) -> Option<(u64, u32, u32)> {
    let rest = name.strip_prefix("log-")?.strip_suffix(".mvl")?;
    let mut it = rest.split('-');
    let g = it.next()?.parse().ok()?;
    let s = it.next()?.parse().ok()?;
    let q = it.next()?.parse().ok()?;
    // Only the names the engine writes: `log-1-0-0.mvl` is not a second
    // name of `log-00000001-000-000000.mvl`.
    (it.next().is_none() && log_file_name(g, s, q) == name).then_some((g, s, q))
}

/// Makes a directory's entries (created, renamed, removed files) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::Io(format!("cannot sync directory {}: {e}", dir.display())))
}
