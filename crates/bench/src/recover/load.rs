//! Loading a data directory into memory: the recorded workload's schema
//! (or the tables as the data records them), then the engine's recovery,
//! tried again while the directory's files change under it; and the
//! failures of a load, as `recover` reports them.

use super::schema::{create_schema, Schema};
use super::Failure;
use crate::datadir::{data_files, recorded_spec, Recorded, Survey};
use multiverse::{Database, OnDamage, Options, RecoveryReport, TableSpec};
use std::path::Path;

/// Tables named only by the log (created after the checkpoint) that a
/// directory without a workload file may add to its checkpoint's.
const MAX_LOG_ONLY_TABLES: usize = 1024;

/// The failure of an engine error while reading `dir`: a damaged file is
/// damage; the rest are errors.
pub(crate) fn engine_failure(dir: &Path, e: multiverse::Error, policy: &str) -> Failure {
    let d = dir.display().to_string();
    match e {
        multiverse::Error::Corrupt(m) => {
            let m = if m.contains(&d) { m } else { format!("{d}: {m}") };
            Failure::Damaged(format!(
                "{m}; nothing was loaded (--on-damage {policy}): commits acknowledged as durable may be lost"
            ))
        }
        e => {
            let m = e.to_string();
            Failure::Error(if m.contains(&d) { m } else { format!("{d}: {m}") })
        }
    }
}

/// The table an engine error says the schema does not create, if that is
/// what it says.
pub(crate) fn table_not_created(e: &multiverse::Error) -> Option<String> {
    let multiverse::Error::InvalidArgument(m) = e else { return None };
    let rest = m.strip_prefix("the data names table '")?;
    let (name, tail) = rest.rsplit_once('\'')?;
    tail.contains("the schema does not create").then(|| name.to_string())
}

/// A directory loaded into memory.
pub(crate) struct Loaded {
    pub(crate) db: Database,
    /// The recorded workload's schema, if it was created.
    pub(crate) schema: Option<Schema>,
    /// The tables of the newest checkpoint.
    pub(crate) checkpoint_tables: Vec<String>,
    pub(crate) report: RecoveryReport,
}

/// Creates the schema and recovers `dir` into a new database. Without a
/// workload's schema the tables are those the directory records (the
/// checkpoint's, plus any the log names that the checkpoint does not,
/// created after it), as it records them (see [`recorded_spec`]). A read
/// that fails while the directory's files change (a database that has it
/// open checkpoints and removes old files) is tried again.
pub(crate) fn load(dir: &Path, opts: &Options, recorded: Option<&Recorded>) -> Result<Loaded, Failure> {
    let policy = if opts.on_damage == OnDamage::Refuse { "refuse" } else { "keep-prefix" };
    let mut log_only: Vec<String> = Vec::new();
    let mut files = data_files(dir);
    let mut retries = 0;
    loop {
        let attempt = || -> Result<Result<Loaded, multiverse::Error>, Failure> {
            let names = match multiverse::durability::table_names(dir) {
                Ok(n) => n,
                Err(e) => return Ok(Err(e)),
            };
            let db = Database::new(opts.clone()).map_err(|e| e.to_string())?;
            let schema = match recorded {
                Some(r) if r.described => {
                    let schema = create_schema(&db, r)?;
                    let created = db.table_names();
                    if names.iter().any(|n| !created.contains(n)) {
                        return Err(Failure::Error(format!(
                            "{}: workload {} has the tables {}, the checkpoint holds {}",
                            r.path.display(),
                            r.workload,
                            created.join(", "),
                            names.join(", ")
                        )));
                    }
                    Some(schema)
                }
                _ => {
                    // The schema as the data records it.
                    let stored = match multiverse::durability::tables(dir) {
                        Ok(t) => t,
                        Err(e) => return Ok(Err(e)),
                    };
                    for t in &stored {
                        db.create_table(recorded_spec(t)).map_err(|e| e.to_string())?;
                    }
                    // Named only by log files of earlier versions, which
                    // record no definitions (found by the error below).
                    for n in log_only.iter().filter(|n| db.table(n).is_err()) {
                        db.create_table(TableSpec::hash(n, 1 << 16)).map_err(|e| e.to_string())?;
                    }
                    None
                }
            };
            Ok(db.recover_from(dir).map(|report| Loaded { db, schema, checkpoint_tables: names, report }))
        };
        let e = match attempt()? {
            Ok(l) => return Ok(l),
            Err(e) => e,
        };
        if recorded.is_none_or(|r| !r.described) {
            if let Some(t) = table_not_created(&e) {
                if !log_only.contains(&t) && log_only.len() < MAX_LOG_ONLY_TABLES {
                    log_only.push(t);
                    continue;
                }
            }
        }
        let now = data_files(dir);
        if retries < 3 && now != files {
            retries += 1;
            files = now;
            continue;
        }
        return Err(engine_failure(dir, e, policy));
    }
}

/// Loads the data directory `dir` into memory as `recover` does (its
/// recorded workload's schema, or the tables as the data records them), for
/// `export` and `backup`; a damaged directory is refused. Returns the
/// database and the workload file's bytes, if it has one.
pub(crate) fn load_dir(dir: &Path, verb: &str) -> Result<(Database, Option<Vec<u8>>), String> {
    Survey::of(dir)?.refuse_unless_data(dir, verb)?;
    let recorded = Recorded::read(dir)?;
    let opts = Options { on_damage: OnDamage::Refuse, ..Options::default() };
    let l = load(dir, &opts, recorded.as_ref()).map_err(|f| match f {
        Failure::Error(e) | Failure::Damaged(e) => e,
    })?;
    let workload = match recorded {
        Some(r) => Some(std::fs::read(&r.path).map_err(|e| format!("{}: {e}", r.path.display()))?),
        None => None,
    };
    Ok((l.db, workload))
}
