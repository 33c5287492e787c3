//! A durable store that survives a crash.
//!
//! `cargo run --release -p multiverse-engine --example durable -- [DIR]`
//!
//! Without DIR the data lives in a temporary directory, removed at the end;
//! with DIR it is kept there (run the example twice to see the second run
//! find the first one's rows).
//!
//! The example runs itself as a child process that opens the database,
//! commits rows, takes a checkpoint, commits more rows and then waits; the
//! parent kills the child (`Child::kill`: SIGKILL on Unix) as soon as the
//! child says it committed: a crash, with no `Database::close` and no
//! destructor run. The parent then opens the
//! directory again, prints what recovery did (the `RecoveryReport`) and
//! checks that every commit the child was told about is there.

use multiverse::{Database, Durability, Isolation, Options, RecoveryReport, TableSpec};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The rows each of the child's two batches commits.
const BATCH: u64 = 100;

/// Options and schema, the same for every open of the directory. `Sync`
/// durability: a commit returns once its log record is on disk, so whatever
/// the child reports as committed must survive the crash.
fn open(dir: &Path) -> multiverse::Result<(Database, RecoveryReport)> {
    let opts = Options::new().durability(Durability::Sync).data_dir(dir);
    // Created on the first open; later opens check it against what the
    // directory records (another kind of index would be refused).
    let schema = |db: &Database| db.create_table(TableSpec::ordered("events")).map(drop);
    Database::open_with(opts, schema)
}

/// The number of rows in `events`.
fn count(db: &Database) -> multiverse::Result<u64> {
    let events = db.table("events")?;
    db.run(Isolation::Snapshot, |t| Ok(t.range(events, ..)?.count() as u64))
}

/// The child: commits two batches of rows around a checkpoint, reports the
/// row count on stdout, and waits to be killed.
fn child(dir: &Path) -> multiverse::Result<()> {
    let (db, _report) = open(dir)?;
    let events = db.table("events")?;
    let first = count(&db)?; // rows left by earlier runs on the same DIR
    for batch in 0..2 {
        // One transaction per row: each commit is its own log record.
        for n in 0..BATCH {
            let key = first + batch * BATCH + n;
            db.run(Isolation::Serializable, |t| t.insert(events, key, format!("event {key}")))?;
        }
        if batch == 0 {
            // A checkpoint: recovery starts from it and replays only the
            // log written after it.
            let cp = db.checkpoint()?;
            eprintln!("child: checkpoint of {} rows written", cp.rows);
        }
    }
    println!("{}", count(&db)?);
    // Wait for the parent's SIGKILL, the database still open.
    loop {
        std::thread::park();
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let arg = args.next();
    if arg.as_deref() == Some("--child") {
        let dir = PathBuf::from(args.next().expect("--child DIR"));
        return Ok(child(&dir)?);
    }
    // The data directory: DIR, or a temporary one removed when `tmp` drops.
    let tmp = tempfile::tempdir()?;
    let dir = arg.map_or_else(|| tmp.path().join("data"), PathBuf::from);
    println!("data directory: {}", dir.display());

    // Run this program again as the child, and read the count it commits.
    let mut child = Command::new(std::env::current_exe()?).arg("--child").arg(&dir).stdout(Stdio::piped()).spawn()?;
    let mut line = String::new();
    let read = BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line);
    child.kill()?; // the crash
    child.wait()?;
    read?;
    let committed: u64 = line.trim().parse().map_err(|_| format!("the child failed (it said {line:?})"))?;
    println!("child: committed {committed} rows in all, then was killed");

    // Open again: recovery loads the newest checkpoint and replays the log.
    let (db, report) = open(&dir)?;
    println!("recovered generation {} in {:.1?}:", report.generation, report.elapsed);
    if let Some((file, ts, rows)) = &report.checkpoint {
        println!("  checkpoint {file}: {rows} rows as of timestamp {ts}");
    }
    println!(
        "  log: {} files, {} bytes, {} records read, {} transactions replayed ({} writes)",
        report.log_files, report.log_bytes, report.records, report.replayed, report.writes
    );
    for why in &report.dropped {
        // A torn tail is normal after a crash: it was never acknowledged.
        println!("  dropped: {why}");
    }
    println!("  damaged: {}", report.damaged);

    let found = count(&db)?;
    println!("rows found after the crash: {found}");
    assert_eq!(found, committed, "an acknowledged commit was lost");
    // A clean shutdown: every commit durable, the directory released.
    db.close()?;
    println!("ok: every acknowledged commit survived the crash");
    Ok(())
}
