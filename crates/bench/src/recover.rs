//! `multiverse recover DIR`: loads a data directory into memory the way
//! opening it would (the newest checkpoint, then the log streams merged in
//! commit-timestamp order) without changing it, and reports what it holds.

use multiverse::{Database, Isolation, Options, TableSpec, TxnOptions};
use std::path::PathBuf;

/// Arguments of `multiverse recover`.
#[derive(clap::Args, Debug)]
pub struct RecoverArgs {
    /// The data directory (written by `bench --durability ... --data-dir`
    /// or by `Database::open`).
    pub dir: PathBuf,
    /// The protocol to load it with (any multi-version one).
    #[arg(long, default_value = "mv-occ", value_name = "P")]
    pub protocol: String,
}

/// Runs `multiverse recover`.
pub fn run(a: RecoverArgs) -> Result<(), String> {
    let dir = &a.dir;
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    let protocol = crate::bench::parse_protocol(&a.protocol)?;
    let names = multiverse::durability::table_names(dir).map_err(|e| e.to_string())?;
    if names.is_empty() {
        return Err(format!("{}: no checkpoint, so not a multiverse data directory", dir.display()));
    }
    let db = Database::new(Options { protocol, ..Options::default() }).map_err(|e| e.to_string())?;
    // The schema as the checkpoint names it: primary keys only (secondary
    // indexes are the application's code, not data).
    for n in &names {
        db.create_table(TableSpec::hash(n, 1 << 16)).map_err(|e| e.to_string())?;
    }
    let r = db.recover_from(dir).map_err(|e| e.to_string())?;
    println!("recovered {} in {:.3} s", dir.display(), r.elapsed.as_secs_f64());
    if let Ok(w) = std::fs::read_to_string(dir.join("workload")) {
        println!(
            "  workload   {} (recorded by bench; its invariants need the run's counters, not checked here)",
            w.trim()
        );
    }
    println!("  generation {}", r.generation);
    if let Some((file, ts, rows)) = &r.checkpoint {
        println!("  checkpoint {file}: {rows} rows as of timestamp {ts}");
    }
    println!(
        "  log        {} streams, {} files, {} bytes: {} transaction records, {} replayed ({} writes), durable through epoch {}",
        r.streams, r.log_files, r.log_bytes, r.records, r.replayed, r.writes, r.durable_epoch
    );
    match r.last_commit_ts {
        Some(ts) => println!("  last commit timestamp {ts}"),
        None => println!("  last commit timestamp: none after the checkpoint"),
    }
    if r.same_ts_conflicts > 0 {
        println!("  WARNING    {} pairs of records at one timestamp write one row", r.same_ts_conflicts);
    }
    for d in &r.dropped {
        println!("  dropped    {d}");
    }
    let mut t = db
        .begin_with(TxnOptions { read_only: true, ..TxnOptions::new(Isolation::Snapshot) })
        .map_err(|e| e.to_string())?;
    for n in &names {
        let id = db.table(n).map_err(|e| e.to_string())?;
        let mut rows = 0u64;
        t.scan(db.primary(id), .., None, |_, _| {
            rows += 1;
            true
        })
        .map_err(|e| e.to_string())?;
        println!("  table      {n}: {rows} rows");
    }
    t.commit().map_err(|e| e.to_string())?;
    Ok(())
}
