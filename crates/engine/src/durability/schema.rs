//! The schema a data directory records, and its check on open.
//!
//! The header of every checkpoint and log file names the tables it holds
//! with their descriptors (`format`: `TABLES`, `DESC`): each table's
//! primary index kind, its secondary indexes' names and kinds, and a
//! typed table's key and value types. `Database::open_with`, once its
//! schema closure has created its tables and before recovery loads a row
//! or anything is written, reads the descriptors of the generation it is
//! about to recover ([`stored`]: the newest checkpoint's tables, then
//! those only its log files name, created after it) and [`check`]s them:
//!
//! * a table the schema created is compared with its descriptor; any
//!   difference is [`Error::SchemaMismatch`], and the open fails with the
//!   directory unchanged. A typed table whose types the schema did not
//!   give (it was created through the byte API) takes the stored ones;
//! * a table the schema did not create is created from its descriptor,
//!   unless it has secondary indexes, whose key functions only a schema
//!   can give ([`Error::KeyFunctionNeeded`]).
//!
//! Tables named without a descriptor (checkpoints of formats 1 and 2, log
//! files of formats 3 and 4) are neither checked nor created: recovery
//! then needs the schema to create them, as before descriptors existed.

use super::checkpoint;
use super::format::{LogHeader, TableEntry, FRAME, LOG_MAGIC, MAX_BODY};
use super::{parse_checkpoint_name, parse_log_name};
use crate::{Database, Error, IndexKind, Result};
use std::io::Read;
use std::path::Path;

/// The first bytes of the file `path`: its 8-byte magic and its first
/// frame (the header of a checkpoint or a log file), as far as the file
/// holds them, without reading the rest.
pub(crate) fn read_head(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)?;
    let mut head = Vec::with_capacity(LOG_MAGIC.len() + FRAME);
    (&mut f).take((LOG_MAGIC.len() + FRAME) as u64).read_to_end(&mut head)?;
    if let Some(len) = head.get(LOG_MAGIC.len()..LOG_MAGIC.len() + 4) {
        let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
        // A damaged length reads what the file holds, no more.
        f.take(len.min(MAX_BODY) as u64).read_to_end(&mut head)?;
    }
    Ok(head)
}

/// The tables the newest generation of `dir` records: the newest
/// checkpoint's, in id order, then those that only its log files name
/// (created after the checkpoint), in the order the files name them; of
/// a table named more than once, the fullest description
/// (`TableEntry::merge`).
/// Empty for a directory without a checkpoint. A log file whose header
/// cannot be read is passed over (recovery reports it); a damaged
/// checkpoint header is [`Error::Corrupt`], as recovery's.
pub(crate) fn stored(dir: &Path) -> Result<Vec<TableEntry>> {
    let io = |p: &Path, e: std::io::Error| Error::Io(format!("cannot read {}: {e}", p.display()));
    let (mut checkpoints, mut logs) = (Vec::new(), Vec::new());
    for e in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let e = e.map_err(|e| io(dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some((g, ts)) = parse_checkpoint_name(&name) {
            checkpoints.push(((g, ts), e.path()));
        } else if let Some(k) = parse_log_name(&name) {
            logs.push((k, e.path()));
        }
    }
    checkpoints.sort();
    let Some(((generation, _), path)) = checkpoints.pop() else { return Ok(Vec::new()) };
    let head = read_head(&path).map_err(|e| io(&path, e))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut tables = checkpoint::header(&name, &head)?.0.tables;
    logs.retain(|((g, _, _), _)| *g == generation);
    logs.sort();
    for (_, path) in logs {
        let Ok(head) = read_head(&path) else { continue };
        let Ok((h, _)) = LogHeader::decode(&head) else { continue };
        for t in h.tables {
            match tables.iter_mut().find(|s| s.name == t.name) {
                Some(s) => s.merge(&t),
                None => tables.push(t),
            }
        }
    }
    Ok(tables)
}

/// A table as a data directory records it: what [`tables`] returns.
///
/// ```
/// use multiverse::durability::StoredTable;
/// use multiverse::IndexKind;
///
/// let t = StoredTable { name: "t".into(), primary: Some(IndexKind::Ordered), secondary: vec![], types: None };
/// assert!(t.primary.is_some_and(|k| k == IndexKind::Ordered));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredTable {
    /// Its name.
    pub name: String,
    /// Its primary index's kind; `None` when the files that name the table
    /// record no definition (written before definitions were recorded):
    /// the fields below are then empty too.
    pub primary: Option<IndexKind>,
    /// Its secondary indexes' names and kinds, in order (their key
    /// functions are code, not data).
    pub secondary: Vec<(String, IndexKind)>,
    /// A typed table's key and value type names
    /// ([`std::any::type_name`]; see [`crate::typed`]).
    pub types: Option<(String, String)>,
}

/// The tables the data directory `dir` records, with their definitions
/// (see the [module docs](crate::durability)): those of its newest
/// checkpoint, in id order, then those created after it, which only its
/// log files name. Empty for a directory without a checkpoint. Reads the
/// files' headers only, and changes nothing: for tools that recreate the
/// tables of a directory they do not own (`multiverse export`).
///
/// ```
/// use multiverse::{durability, Database, IndexKind, TableDefinition, TableSpec};
///
/// # let tmp = tempfile::tempdir().unwrap();
/// const T: TableDefinition<u64, String> = TableDefinition::new("typed");
/// let db = Database::open(tmp.path()).unwrap();
/// db.open_table(TableSpec::hash("h", 64).secondary("by_len", IndexKind::Ordered, |_, v| multiverse::Key::from(v.len() as u64)))
///     .unwrap();
/// T.create(&db, IndexKind::Ordered).unwrap();
/// let tables = durability::tables(tmp.path()).unwrap();
/// assert_eq!(tables[0].name, "h");
/// assert_eq!(tables[0].primary, Some(IndexKind::Hash { capacity: 64 }));
/// assert_eq!(tables[0].secondary, [("by_len".to_string(), IndexKind::Ordered)]);
/// assert_eq!(tables[1].types, Some(("u64".to_string(), "alloc::string::String".to_string())));
/// ```
pub fn tables(dir: impl AsRef<Path>) -> Result<Vec<StoredTable>> {
    Ok(stored(dir.as_ref())?
        .into_iter()
        .map(|TableEntry { name, desc, .. }| match desc {
            Some(d) => StoredTable {
                name,
                primary: Some(d.primary),
                secondary: d.secondary,
                types: d.types.map(|t| (t.key, t.value)),
            },
            None => StoredTable { name, primary: None, secondary: vec![], types: None },
        })
        .collect())
}

/// Checks the tables `db`'s schema created against the `stored` ones,
/// then creates the stored tables it did not (see the module docs).
/// Every table is compared before any is created.
pub(crate) fn check(db: &Database, stored: &[TableEntry]) -> Result<()> {
    let mut missing = Vec::new();
    for TableEntry { name, desc, .. } in stored {
        let Some(desc) = desc else { continue };
        match db.table(name) {
            Ok(id) => db.check_stored(id, desc)?,
            Err(_) => missing.push(desc.spec(name)?),
        }
    }
    for spec in missing {
        db.create_table(spec)?;
    }
    Ok(())
}
