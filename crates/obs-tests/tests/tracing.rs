//! The engine's `tracing` feature: a recording subscriber (written here:
//! each span's name, target, fields and parent) is the global default, and
//! each protocol family's commit must show its phases as children of one
//! `commit` span, one after the other; `Database::open` its recovery and
//! checkpoint, the log its rounds, BOHM's pipeline its batches.
//!
//! One test: the subscriber is global (BOHM's and the log's threads are
//! the engine's own), so the scenarios run one after the other.

use multiverse::protocol::bohm::{Config, Done, ExecTxn, Feed, Next, Procedure};
use multiverse::{AccessSet, Database, Durability, Error, Isolation, Key, Options, Protocol, TableId, TableSpec};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

/// One span as it was opened.
#[derive(Clone, Debug)]
struct Opened {
    id: u64,
    name: &'static str,
    target: String,
    fields: HashMap<String, String>,
    parent: Option<u64>,
    thread: std::thread::ThreadId,
}

thread_local! {
    /// The spans this thread is in, innermost last.
    static STACK: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

#[derive(Clone, Default)]
struct Spans {
    next: Arc<AtomicU64>,
    opened: Arc<Mutex<Vec<Opened>>>,
}

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl Subscriber for Spans {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::TRACE)
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = HashMap::new();
        attrs.record(&mut Fields(&mut fields));
        let parent = if attrs.is_contextual() {
            STACK.with(|s| s.borrow().last().copied())
        } else {
            attrs.parent().map(Id::into_u64)
        };
        let m = attrs.metadata();
        self.opened.lock().unwrap().push(Opened {
            id,
            name: m.name(),
            target: m.target().to_string(),
            fields,
            parent,
            thread: std::thread::current().id(),
        });
        Id::from_u64(id)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, id: &Id) {
        STACK.with(|s| s.borrow_mut().push(id.into_u64()));
    }
    fn exit(&self, id: &Id) {
        STACK.with(|s| {
            let top = s.borrow_mut().pop();
            assert_eq!(top, Some(id.into_u64()), "spans exit in the order they were entered");
        });
    }
}

impl Spans {
    fn take(&self) -> Vec<Opened> {
        std::mem::take(&mut *self.opened.lock().unwrap())
    }
}

/// The names of the children of `parent`, in order.
fn children(spans: &[Opened], parent: u64) -> Vec<&'static str> {
    spans.iter().filter(|s| s.parent == Some(parent)).map(|s| s.name).collect()
}

/// The one `commit` span of transaction `txn`-less spans: the last one.
fn last_commit(spans: &[Opened]) -> &Opened {
    spans.iter().rev().find(|s| s.name == "commit").expect("a commit span")
}

/// A table with rows 0..4, then one writing transaction; returns the spans
/// of that transaction's commit (the commit and its children).
fn writing_commit(spans: &Spans, protocol: Protocol) -> (Opened, Vec<&'static str>) {
    let db = Database::new(Options { protocol, ..Options::default() }).unwrap();
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    db.run(Isolation::Serializable, |tx| {
        for k in 0..4u64 {
            tx.insert(t, Key::from(k), k.to_le_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    spans.take();
    let mut tx = db.begin(protocol.strongest()).unwrap();
    tx.get(t, Key::from(1)).unwrap();
    tx.update(t, Key::from(2), 7u64.to_le_bytes()).unwrap();
    tx.commit().unwrap();
    let got = spans.take();
    let c = last_commit(&got).clone();
    let kids = children(&got, c.id);
    (c, kids)
}

struct Step(TableId, u64);

impl Procedure for Step {
    type Error = Error;
    fn declare(&self, a: &mut AccessSet) {
        a.reads.clear();
        a.writes.clear();
        a.writes.push((self.0, Key::from(self.1)));
    }
    fn run(&mut self, tx: &mut ExecTxn<'_>) -> Result<(), Error> {
        tx.modify(self.0, Key::from(self.1), |v| v[0] = v[0].wrapping_add(1))
    }
}

struct Steps(u64, TableId);

impl Feed<Step> for Steps {
    fn next(&mut self, _idle: bool) -> Next<Step> {
        if self.0 == 0 {
            return Next::Stop;
        }
        self.0 -= 1;
        Next::Txn(Step(self.1, self.0 % 4))
    }
    fn done(&mut self, _: Done<Step>) {}
}

#[test]
fn spans_of_commits_open_recovery_checkpoints_and_batches() {
    let spans = Spans::default();
    tracing::subscriber::set_global_default(spans.clone()).unwrap();

    // Hekaton MV/O (section 3.2): precommit, validation, commit
    // dependencies, logging, postprocessing.
    let (c, kids) = writing_commit(&spans, Protocol::MvOcc);
    assert_eq!(c.fields.get("protocol").map(String::as_str), Some("mv-occ"));
    assert!(c.fields.contains_key("txn"), "{c:?}");
    assert!(c.target.starts_with("multiverse"), "{c:?}");
    assert_eq!(kids, ["precommit", "validate", "dependencies", "log", "postprocess"]);
    // The same family under MV/L and SSN.
    assert_eq!(
        writing_commit(&spans, Protocol::MvLock).1,
        ["precommit", "validate", "dependencies", "log", "postprocess"]
    );
    assert_eq!(
        writing_commit(&spans, Protocol::Ssn).1,
        ["precommit", "validate", "dependencies", "log", "postprocess"]
    );
    // Silo (section 4.4): lock, validate, install.
    let (c, kids) = writing_commit(&spans, Protocol::Silo);
    assert_eq!(c.fields.get("protocol").map(String::as_str), Some("silo"));
    assert_eq!(kids, ["lock", "validate", "install"]);
    // 1V: prepare, log (the TID), install, release.
    assert_eq!(writing_commit(&spans, Protocol::OneVLock).1, ["prepare", "log", "install", "release"]);
    // BOHM's interactive transactions: the commit span alone.
    let (c, kids) = writing_commit(&spans, Protocol::Bohm);
    assert_eq!(c.fields.get("protocol").map(String::as_str), Some("bohm"));
    assert!(kids.is_empty(), "{kids:?}");

    // BOHM's pipeline: a span per batch in each concurrency-control and
    // execution thread (not the caller's: the pipeline's own threads).
    let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap().table();
    db.run(Isolation::Serializable, |tx| {
        for k in 0..4u64 {
            tx.insert(t, Key::from(k), [0u8; 8])?;
        }
        Ok(())
    })
    .unwrap();
    spans.take();
    let cfg = Config { cc_threads: 2, exec_threads: 2, batch_size: 5, batches_in_flight: 2 };
    db.bohm_run(cfg, Steps(20, t)).unwrap();
    let got = spans.take();
    let count = |name: &str| got.iter().filter(|s| s.name == name).count();
    // Four batches of five, seen by both threads of each kind.
    assert_eq!(count("cc"), 8, "{got:?}");
    assert_eq!(count("exec"), 8, "{got:?}");
    let me = std::thread::current().id();
    assert!(got.iter().filter(|s| s.name == "cc").all(|s| s.thread != me && s.fields.contains_key("batch")));
    drop(db);

    // Database::open: recovery and the first checkpoint inside `open`; a
    // checkpoint asked for; log rounds on the flusher's thread.
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        protocol: Protocol::MvOcc,
        data_dir: Some(dir.path().to_path_buf()),
        durability: Durability::Sync,
        ..Options::default()
    };
    let schema = |db: &Database| db.create_table(TableSpec::hash("t", 64)).map(|_| ());
    spans.take();
    let (db, _) = Database::open_with(opts.clone(), schema).unwrap();
    let got = spans.take();
    let open = got.iter().find(|s| s.name == "open").expect("an open span");
    assert_eq!(open.fields.get("protocol").map(String::as_str), Some("mv-occ"));
    assert_eq!(children(&got, open.id), ["recovery", "checkpoint"]);
    let t = db.table("t").unwrap();
    db.run(Isolation::Serializable, |tx| tx.insert(t, Key::from(1), b"one")).unwrap();
    db.checkpoint().unwrap();
    let got = spans.take();
    assert!(got.iter().any(|s| s.name == "log_round" && s.fields.contains_key("epoch")), "{got:?}");
    let cp = got.iter().find(|s| s.name == "checkpoint").expect("a checkpoint span");
    assert_eq!(cp.parent, None, "{got:?}");
    drop(db);
    let (_db, _) = Database::open_with(opts, schema).unwrap();
    let got = spans.take();
    let open = got.iter().find(|s| s.name == "open").expect("an open span");
    assert_eq!(children(&got, open.id), ["recovery", "checkpoint"]);
}
