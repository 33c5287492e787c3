//! Durability: redo logs, group commit, checkpoints and recovery.
//!
//! Follows the logging the papers describe: Hekaton's redo-only records
//! written at commit with group commit (`hekaton-mvcc-vldb2011.txt`
//! sections 2.4, 3.2 and 5) and MPDB's parallel per-thread logs ordered by
//! commit timestamp only at recovery (`pomvcc-2018.txt` sections V and
//! VI.B). See `wal::log` for the streams and epochs, `checkpoint` for
//! snapshots, `recovery` for the way back.
//!
//! A data directory holds, for its current *generation* `g` (one per open):
//!
//! * `checkpoint-<g>-<ts>.mvc`: every row as of the snapshot timestamp
//!   `ts` (the newest one counts; older ones are removed once it is
//!   durable), and in its header the tables with their descriptors (see
//!   below; format 3, `checkpoint`);
//! * `log-<g>-<stream>-<seq>.mvl`: the redo records of the transactions
//!   that committed after the generation began, per stream, in files that
//!   rotate at a size; each file's header names the tables, with their
//!   descriptors, including those created since the checkpoint (format
//!   5, `wal::format`);
//! * `manifest`: which files each log stream of the generation holds
//!   (see `wal::format`), so that a missing or extra file is seen;
//! * `LOCK`: locked (`flock`) by the one [`crate::Database`] that owns the
//!   directory; it names the owner's process;
//! * `workload` (optional, written by `multiverse bench`): what created
//!   the data, so that `multiverse recover` can check its invariants;
//! * `quarantine-<g>/` (only after a damaged directory was opened with
//!   [`OnDamage::KeepPrefix`]): the files of the damaged generation `g`
//!   that the open did not keep, and a `README.txt` saying why (see
//!   `quarantine`). Never read by recovery, never removed by the engine.
//!
//! **The schema is stored.** A table's *descriptor* records its
//! definition but for its key functions, which are code: the primary
//! index's kind (a hash index's capacity included), the secondary
//! indexes' names and kinds, and a typed table's key and value type names
//! (its bytes: `DESC` in `wal::format`). [`crate::Database::open_with`]
//! compares the tables its schema creates with the descriptors of the
//! generation it recovers, before it loads a row or writes anything: a
//! difference is [`Error::SchemaMismatch`] and leaves the directory as
//! it was. The tables the schema does not create are created from their
//! descriptors, so [`crate::Database::open`], which has no schema, opens
//! every table, except one with secondary indexes: only a schema can
//! give their key functions ([`Error::KeyFunctionNeeded`]). Files
//! written before descriptors (checkpoint formats 1 and 2, log formats 3
//! and 4, still read) name their tables only: a schema must create them,
//! and nothing is checked. See `schema`.
//!
//! Opening a directory recovers generation `g` and then writes a
//! checkpoint of generation `g + 1` before logging anew: commit timestamps
//! restart with the process, and the new generation's records are never
//! mixed with the old ones'. Log files of a generation newer than the
//! newest checkpoint (no crash leaves them: a generation begins with its
//! checkpoint) are reported by recovery as damage, not replayed, and
//! moved out of the way by the open before its log begins.
//!
//! **Damage.** A crash leaves at most a torn tail (records that were never
//! acknowledged): recovery drops it, says so in the [`RecoveryReport`],
//! and the directory opens. Damage that a crash cannot explain, or the
//! loss of commits that may have been acknowledged
//! ([`RecoveryReport::damaged`]), is refused by default
//! ([`OnDamage::Refuse`]) with an error naming the remedies, and nothing
//! is changed; [`OnDamage::KeepPrefix`] opens the longest consistent
//! prefix and moves everything it drops into `quarantine-<g>/`.
//! [`salvage()`] (`multiverse recover DIR --salvage OUT`) reads out every
//! intact log record that recovery would drop, changing nothing.
//!
//! **Every protocol logs**, each ordered the way it serializes:
//!
//! * the multi-version protocols by their commit (end) timestamps;
//!   POMVCC's shared ones in any order (section VI.B, see `recovery`);
//! * Silo, 1V and ordered 2PL by a commit TID drawn from one shared
//!   sequence while the writes are locked (Silo: larger than every TID
//!   read or written, as section 4.4 requires). Silo's own recovery (its
//!   section 4.10, SiloR) orders by epoch-based TIDs and replays with
//!   per-record TID checks against fuzzy checkpoints; ours shares one
//!   replay and one checkpoint rule with the other protocols instead, and
//!   pays a shared counter per durable commit for it;
//! * BOHM by its log position (section 3.2.1): the pipeline's execution
//!   threads append each committed transaction's record before its
//!   placeholders are produced; under sync durability a batch's
//!   transactions are handed back once its records are durable.
//!
//! Checkpoints fall due on a timer and by log size
//! ([`crate::Options::checkpoint_every`]); see `checkpoint` for how each
//! kind of store takes a consistent one.
//!
//! What differs from the papers: a record holds whole new values (not the
//! difference from the old version, MPDB's 8-byte-metadata format).

pub mod backup;
pub(crate) mod checkpoint;
pub(crate) mod open;
pub(crate) mod quarantine;
pub(crate) mod recovery;
pub(crate) mod schema;

pub use recovery::salvage::{salvage, SalvageReason, SalvageReport, SalvagedRecord, SalvagedWrite};
pub use recovery::RecoveryReport;
pub use schema::{tables, StoredTable};

/// The log and its on-disk format are the layer below (`wal`); these
/// paths keep naming them here.
pub(crate) use crate::wal::{format, log, parse_log_name, sync_dir, MANIFEST_FILE};

use crate::{Error, Result};
use std::path::Path;

pub use crate::options::{Durability, OnDamage};

/// The name of the lock file: whoever holds its lock owns the directory.
pub(crate) const LOCK_FILE: &str = "LOCK";

pub(crate) fn checkpoint_file_name(generation: u64, ts: u64) -> String {
    format!("checkpoint-{generation:08}-{ts:020}.mvc")
}

/// Parses `checkpoint-<g>-<ts>.mvc`.
pub(crate) fn parse_checkpoint_name(name: &str) -> Option<(u64, u64)> {
    let rest = name.strip_prefix("checkpoint-")?.strip_suffix(".mvc")?;
    let (g, ts) = rest.split_once('-')?;
    let (g, ts) = (g.parse().ok()?, ts.parse().ok()?);
    // As for log files: only the names the engine writes.
    (checkpoint_file_name(g, ts) == name).then_some((g, ts))
}

/// The names of the tables in the newest checkpoint of `dir`, in id
/// order (empty if it has none): what a schema must create to recover
/// it, when the checkpoint has no descriptors (see the module docs).
/// Reads only the checkpoint's header.
///
/// ```
/// use multiverse::{durability, Database, Durability, Options, TableSpec};
///
/// # let tmp = tempfile::tempdir().unwrap();
/// let opts = Options { durability: Durability::Async, data_dir: Some(tmp.path().into()), ..Options::default() };
/// assert!(durability::table_names(tmp.path()).unwrap().is_empty(), "nothing written yet");
/// let (db, _) = Database::open_with(opts, |db| {
///     db.create_table(TableSpec::ordered("orders"))?;
///     db.create_table(TableSpec::hash("stock", 64)).map(drop)
/// })
/// .unwrap();
/// drop(db);
/// // Opening writes a checkpoint, which names the tables a schema must create.
/// assert_eq!(durability::table_names(tmp.path()).unwrap(), ["orders", "stock"]);
/// ```
pub fn table_names(dir: impl AsRef<Path>) -> Result<Vec<String>> {
    let dir = dir.as_ref();
    let mut cps = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| Error::Io(format!("cannot read {}: {e}", dir.display())))? {
        let e = e.map_err(|e| Error::Io(format!("cannot read {}: {e}", dir.display())))?;
        if let Some(k) = parse_checkpoint_name(&e.file_name().to_string_lossy()) {
            cps.push((k, e.path()));
        }
    }
    cps.sort();
    let Some((_, path)) = cps.pop() else { return Ok(Vec::new()) };
    let head = schema::read_head(&path).map_err(|e| Error::Io(format!("cannot read {}: {e}", path.display())))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(checkpoint::header(&name, &head)?.0.tables.into_iter().map(|t| t.name).collect())
}
