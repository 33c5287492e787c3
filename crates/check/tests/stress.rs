//! The randomized stress suite: for every (protocol, isolation level) pair
//! this build offers, several threads run many short random transactions
//! (reads, reads for update, updates, read-modify-writes, inserts, deletes,
//! range and full scans) over a small, hot key space with history recording on; the checker
//! must find no anomaly forbidden at that level.
//!
//! And the checker must be able to fail: with MV/O's validation switched off
//! (test-only fault), serializable runs must show a forbidden cycle; with
//! first-writer-wins switched off, snapshot runs must show a lost update.
//!
//! Sizes are modest by default; `MULTIVERSE_STRESS=N` multiplies the number
//! of transactions (e.g. 1000 for millions).

use multiverse::research::Faults;
use multiverse::{
    Database, Error, Filter, Isolation, Key, Mode, Options, Protocol, Stats, TableId, TableSpec, TxnOptions,
};
use multiverse_check::{check, Class, Report};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

const THREADS: u64 = 4;
const KEYS: u64 = 12;
const INITIAL: u64 = 8;

/// Row `n`'s key: 8 bytes big-endian, or for every fourth row a long key
/// (long keys) of those 8 bytes and 40 to 128 more, which sorts between
/// `Key::from(n)` and `Key::from(n + 1)`, so the integer scan bounds below
/// still take exactly rows `lo..hi`.
fn key(n: u64) -> Key {
    if n % 4 != 3 {
        return Key::from(n);
    }
    Key::builder().u64(n).bytes(&[n as u8; 128][..40 + 8 * n as usize]).build().unwrap()
}

fn stress_factor() -> u64 {
    std::env::var("MULTIVERSE_STRESS").ok().and_then(|s| s.parse().ok()).unwrap_or(1).max(1)
}

struct Setup {
    db: Database,
    /// POMVCC: each transaction picks optimistic or pessimistic writes at
    /// random (section V.D), so both kinds run side by side.
    mixed: bool,
    hash: TableId,
    ordered: TableId,
    /// A scan hands on each key at most once: two latest rows of one key
    /// are possible only when a fault lets two writers both install one.
    unique_rows: bool,
    protocol: Protocol,
}

fn setup(protocol: Protocol, faults: Faults) -> Setup {
    setup_with(Options { protocol, record_history: true, faults, ..Options::default() })
}

fn setup_with(opts: Options) -> Setup {
    let protocol = opts.protocol;
    let unique_rows = !opts.faults.skip_write_conflicts;
    let db = Database::new(opts).unwrap();
    let hash = db.create_table(TableSpec::hash("h", 64)).unwrap().table();
    let ordered = db.create_table(TableSpec::ordered("o")).unwrap();
    db.run(protocol.strongest(), |t| {
        for k in 0..INITIAL {
            t.insert(hash, key(k), value(99, k))?;
            t.insert(ordered, key(k), value(99, k))?;
        }
        Ok(())
    })
    .unwrap();
    Setup { db, mixed: protocol == Protocol::Pomvcc, hash, ordered, unique_rows, protocol }
}

/// A value unique to its write: the writer thread and a per-thread counter.
fn value(thread: u64, seq: u64) -> [u8; 8] {
    ((thread << 40) | seq).to_le_bytes()
}

/// What a random operation did to the transaction.
enum Step {
    Continue,
    Aborted,
}

fn step(r: Result<(), Error>) -> Step {
    match r {
        Ok(()) | Err(Error::DuplicateKey) | Err(Error::KeyNotFound) => Step::Continue,
        Err(e) if e.abort_reason().is_some() => Step::Aborted,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

/// One thread's share of random transactions.
fn worker(s: &Setup, iso: Isolation, thread: u64, txns: u64) {
    let mut rng = SmallRng::seed_from_u64(thread * 7919 + iso as u64);
    let mut seq = 0u64;
    let even: Filter = Arc::new(|_k: &Key, v: &[u8]| v[0] % 2 == 0);
    for _ in 0..txns {
        let mode = match s.mixed && rng.gen_bool(0.5) {
            true => Mode::Optimistic,
            false => Mode::Default,
        };
        let mut t = s.db.begin_with(TxnOptions { mode, ..TxnOptions::new(iso) }).unwrap();
        let ops = rng.gen_range(1..=5);
        let mut aborted = false;
        // Sometimes a savepoint, and a rollback to it after some of the
        // operations: the history keeps only what the transaction kept.
        let mut sp = None;
        for _ in 0..ops {
            if sp.is_none() && rng.gen_bool(0.2) {
                match t.savepoint() {
                    Ok(p) => sp = Some(p),
                    // POMVCC's optimistic writes stay private: no savepoints.
                    Err(Error::Unsupported(_)) => {}
                    Err(e) if e.abort_reason().is_some() => {
                        aborted = true;
                        break;
                    }
                    Err(e) => panic!("{} {iso}: savepoint: {e}", s.protocol),
                }
            }
            let table = if rng.gen_bool(0.5) { s.hash } else { s.ordered };
            let k = key(rng.gen_range(0..KEYS));
            seq += 1;
            let v = value(thread, seq);
            let r = match rng.gen_range(0..100) {
                0..=29 => t.get(table, &k).map(|_| ()),
                30..=34 => {
                    // A read for update, usually followed by the update
                    // (the claim used), sometimes not (the claim released).
                    let write = rng.gen_bool(0.7);
                    match t.get_for_update(table, &k) {
                        Ok(Some(_)) if write => t.update_with(table, &k, |_old, new| new.extend_from_slice(&v)),
                        r => r.map(|_| ()),
                    }
                }
                35..=54 => t.update(table, &k, v),
                55..=64 => t.update_with(table, &k, |_old, new| new.extend_from_slice(&v)),
                65..=74 => t.insert(table, k, v),
                75..=84 => t.delete(table, &k),
                85..=89 => {
                    let lo = rng.gen_range(0..KEYS);
                    let ix = s.db.primary(s.ordered);
                    // A scan never hands on a key twice (two latest rows, or
                    // a view half rolled back): in key order, strictly.
                    let mut last: Option<Key> = None;
                    t.scan(ix, Key::from(lo)..Key::from(lo + 4), None, |k, _| {
                        assert!(
                            !s.unique_rows || last.as_ref().is_none_or(|l| k > l),
                            "{} {iso}: scan dup {k:?} after {last:?}",
                            s.protocol
                        );
                        last = Some(k.clone());
                        true
                    })
                }
                90..=94 => {
                    // An iterator: forward, backward or from both ends,
                    // often dropped early (what its batches walked is what
                    // is recorded, validated and locked).
                    let lo = rng.gen_range(0..KEYS);
                    let ix = s.db.primary(s.ordered);
                    let (take, ends) = (rng.gen_range(1..=8), rng.gen_range(0..3));
                    iterate(&mut t, ix, Key::from(lo)..Key::from(lo + 7), take, ends, s.unique_rows)
                }
                _ => {
                    let ix = s.db.primary(s.hash);
                    // A full scan; sometimes with a residual predicate.
                    let f = rng.gen_bool(0.3).then_some(&even);
                    let mut seen = std::collections::HashSet::new();
                    t.scan(ix, .., f, |k, _| {
                        assert!(seen.insert(k.clone()) || !s.unique_rows, "{} {iso}: hash scan dup {k:?}", s.protocol);
                        true
                    })
                }
            };
            if let Step::Aborted = step(r) {
                aborted = true;
                break;
            }
            if let Some(p) = sp.as_ref().filter(|_| rng.gen_bool(0.3)) {
                if let Step::Aborted = step(t.rollback_to(p)) {
                    aborted = true;
                    break;
                }
            }
        }
        if !aborted {
            let _ = t.commit();
        }
    }
}

/// Takes up to `take` rows of `range` through an iterator, from the low
/// end (`ends` 0), the high end (1) or alternately from both (2); checks
/// that they stay in the range and come in order, each once (`once`).
fn iterate(
    t: &mut multiverse::Transaction<'_>,
    ix: multiverse::IndexId,
    range: std::ops::Range<Key>,
    take: usize,
    ends: u8,
    once: bool,
) -> Result<(), Error> {
    let mut it = t.range(ix, range.clone())?;
    let (mut low, mut high): (Option<Key>, Option<Key>) = (None, None);
    for i in 0..take {
        let back = ends == 1 || (ends == 2 && i % 2 == 1);
        let Some(row) = (if back { it.next_back() } else { it.next() }) else { break };
        let (k, _) = row?;
        assert!(range.contains(&k), "an iterator handed on {k:?} outside {range:?}");
        let after = |l: &Key| if once { k > *l } else { k >= *l };
        let before = |h: &Key| if once { k < *h } else { k <= *h };
        assert!(
            low.as_ref().is_none_or(after) && high.as_ref().is_none_or(before),
            "an iterator handed on {k:?} out of order (after {low:?} from the low end, {high:?} from the high end)"
        );
        if back {
            high = Some(k);
        } else {
            low = Some(k);
        }
    }
    Ok(())
}

fn run(protocol: Protocol, iso: Isolation, faults: Faults, txns_per_thread: u64) -> Report {
    run_with(Options { protocol, record_history: true, faults, ..Options::default() }, iso, txns_per_thread)
}

fn run_with(opts: Options, iso: Isolation, txns_per_thread: u64) -> Report {
    run_threads(opts, iso, txns_per_thread, THREADS)
}

fn run_threads(opts: Options, iso: Isolation, txns_per_thread: u64, threads: u64) -> Report {
    run_threads_stats(opts, iso, txns_per_thread, threads).0
}

/// `run_threads`, also returning the database's counters.
fn run_threads_stats(opts: Options, iso: Isolation, txns_per_thread: u64, threads: u64) -> (Report, Stats) {
    let protocol = opts.protocol;
    let s = setup_with(opts);
    std::thread::scope(|sc| {
        for th in 0..threads {
            let s = &s;
            sc.spawn(move || worker(s, iso, th, txns_per_thread));
        }
    });
    let history = s.db.take_history();
    let report = check(&history, iso);
    if !report.ok() {
        dump(&history, &format!("{protocol}-{iso}"));
    }
    (report, s.db.stats())
}

/// Writes a failing run's history to `$MULTIVERSE_DUMP/NAME.history`, if
/// that variable names a directory.
fn dump(history: &multiverse::research::history::History, name: &str) {
    if let Ok(dir) = std::env::var("MULTIVERSE_DUMP") {
        let path = format!("{dir}/{name}.history");
        let f = std::fs::File::create(&path).unwrap();
        multiverse_check::write_history(history, std::io::BufWriter::new(f)).unwrap();
        eprintln!("history written to {path}");
    }
}

#[test]
fn every_protocol_keeps_every_level_it_claims() {
    let n = 250 * stress_factor();
    for p in Protocol::available() {
        for &iso in p.isolation_levels() {
            let report = run(p, iso, Faults::default(), n);
            eprintln!("{p} {iso}: {}", report.stats.committed);
            if !report.ok() {
                let forbidden: Vec<String> = report.forbidden().map(|a| a.to_string()).collect();
                panic!("{p} at {iso}: {}\n{}", report.forbidden_count(), forbidden.join("\n"));
            }
            assert!(report.stats.committed as u64 > n, "{p} at {iso}: too few commits to mean anything\n{report}");
        }
    }
}

/// SSN over read committed (the suite above runs it over snapshot
/// isolation, the default base): serializable, run after run.
#[test]
fn ssn_over_read_committed_is_serializable() {
    let n = 250 * stress_factor();
    let opts = Options {
        protocol: Protocol::Ssn,
        ssn_base: Isolation::ReadCommitted,
        record_history: true,
        ..Options::default()
    };
    let report = run_with(opts, Isolation::Serializable, n);
    assert!(report.ok(), "ssn over read committed: {report}");
    assert!(report.stats.committed as u64 > n, "too few commits to mean anything\n{report}");
}

/// SSN (both bases) and SSI with many more threads than cores, and more
/// transactions open at once than the readers bitmap has bits of its own
/// (slots from 63 on share one): the parallel commit's waits and the
/// shared bit, under the checker.
#[test]
fn ssn_and_ssi_with_many_threads_are_serializable() {
    let n = 40 * stress_factor();
    for (protocol, ssn_base, ssn_read_mostly_age) in [
        (Protocol::Ssn, Isolation::ReadCommitted, None),
        (Protocol::Ssn, Isolation::Snapshot, None),
        (Protocol::Ssi, Isolation::Snapshot, None),
        // The base alone, for comparison (its scans check for duplicates too).
        (Protocol::MvOcc, Isolation::Snapshot, None),
        // Section 5.3's untracked readers, many sharing bit 63.
        (Protocol::Ssn, Isolation::Snapshot, Some(0)),
    ] {
        let opts = Options { protocol, ssn_base, ssn_read_mostly_age, record_history: true, ..Options::default() };
        let report = run_threads(opts, Isolation::Serializable, n, 80);
        assert!(report.ok(), "{protocol} over {ssn_base}: {report}");
        eprintln!("{protocol} over {ssn_base}: {} of {} committed", report.stats.committed, n * 80);
        assert!(report.stats.committed as u64 > n, "{protocol} over {ssn_base}: too few commits\n{report}");
    }
}

/// Read-only transactions on safe snapshots (SSN paper, section 5.2)
/// beside the random updaters: two threads only read (lookups and scans,
/// declared read-only), two run the usual mix; serializable throughout.
#[test]
fn safe_snapshots_keep_ssn_and_ssi_serializable() {
    let n = 250 * stress_factor();
    for (protocol, ssn_base) in [
        (Protocol::Ssn, Isolation::ReadCommitted),
        (Protocol::Ssn, Isolation::Snapshot),
        (Protocol::Ssi, Isolation::Snapshot),
    ] {
        let interval = Some(std::time::Duration::from_micros(50));
        let opts = Options {
            protocol,
            ssn_base,
            safe_snapshot_interval: interval,
            record_history: true,
            ..Options::default()
        };
        let s = setup_with(opts);
        std::thread::scope(|sc| {
            for th in 0..4 {
                let s = &s;
                sc.spawn(move || {
                    if th >= 2 {
                        return worker(s, Isolation::Serializable, th, n);
                    }
                    let mut rng = SmallRng::seed_from_u64(th);
                    let ro = TxnOptions { read_only: true, ..TxnOptions::new(Isolation::Serializable) };
                    // A safe snapshot never aborts; say which variant did.
                    let name = match (protocol, ssn_base) {
                        (Protocol::Ssi, _) => "ssi",
                        (_, Isolation::ReadCommitted) => "ssn+rc",
                        _ => "ssn+si",
                    };
                    let never = |what: &str, e: Error| -> ! {
                        panic!("{name}: a safe-snapshot reader failed in {what}: {e} (safe snapshots never abort)")
                    };
                    for _ in 0..n {
                        let mut t = s.db.begin_with(ro).unwrap_or_else(|e| never("begin", e));
                        for _ in 0..rng.gen_range(1..=4) {
                            let table = if rng.gen_bool(0.5) { s.hash } else { s.ordered };
                            if rng.gen_bool(0.8) {
                                t.get(table, key(rng.gen_range(0..KEYS))).unwrap_or_else(|e| never("get", e));
                            } else {
                                let scan = t.scan(s.db.primary(table), .., None, |_, _| true);
                                scan.unwrap_or_else(|e| never("scan", e));
                            }
                        }
                        t.commit().unwrap_or_else(|e| never("commit", e));
                    }
                });
            }
        });
        let history = s.db.take_history();
        let report = check(&history, Isolation::Serializable);
        if !report.ok() {
            dump(&history, &format!("{protocol}-{ssn_base}-safe-snapshots"));
        }
        assert!(report.ok(), "{protocol} over {ssn_base} with safe snapshots: {report}");
        eprintln!("{protocol} over {ssn_base} with safe snapshots: {} committed", report.stats.committed);
    }
}

/// SSN's and SSI's certification switched off (the test-only fault: they
/// track but never abort) leaves their bases, and the checker sees cycles.
#[test]
fn ssn_and_ssi_without_certification_show_cycles() {
    let faults = Faults { skip_validation: true, ..Faults::default() };
    let cycles = [Class::G2Item, Class::G2, Class::GSingle];
    must_fail_with(Protocol::Ssn, Isolation::Serializable, faults, &cycles);
    must_fail_with(Protocol::Ssi, Isolation::Serializable, faults, &cycles);
    for round in 0..20 {
        let opts = Options {
            protocol: Protocol::Ssn,
            ssn_base: Isolation::ReadCommitted,
            record_history: true,
            faults,
            ..Options::default()
        };
        let report = run_with(opts, Isolation::Serializable, 200 + 100 * round);
        if !report.ok() {
            return;
        }
    }
    panic!("the checker never caught read committed without SSN");
}

/// SSN's read-mostly optimization (section 5.3) over both bases, with
/// every version older than the reader untracked (age 0) and with a
/// threshold: serializable, run after run; and the writers' side of it
/// switched off (the test-only fault: writers ignore untracked readers),
/// which the checker must catch.
#[test]
fn ssn_read_mostly_is_serializable_and_needs_its_handshake() {
    let n = 250 * stress_factor();
    for ssn_base in [Isolation::ReadCommitted, Isolation::Snapshot] {
        for age in [0, 4] {
            let opts = Options {
                protocol: Protocol::Ssn,
                ssn_base,
                ssn_read_mostly_age: Some(age),
                record_history: true,
                ..Options::default()
            };
            let (report, db) = run_threads_stats(opts, Isolation::Serializable, n, THREADS);
            assert!(report.ok(), "ssn over {ssn_base}, read-mostly age {age}: {report}");
            assert!(report.stats.committed as u64 > n, "too few commits to mean anything\n{report}");
            assert!(db.ssn_untracked_reads > 0, "no read went untracked\n{report}");
            eprintln!("ssn over {ssn_base}, age {age}: {} reads untracked", db.ssn_untracked_reads);
        }
    }
    // The fault shows only when a writer races an untracked reader; the
    // certifier's other checks often abort the pair anyway (1 run in 5 at
    // MULTIVERSE_STRESS=100 went 20 rounds without a cycle): up to 40.
    let faults = Faults { skip_read_mostly_handshake: true, ..Faults::default() };
    for round in 0..40 {
        let opts = Options {
            protocol: Protocol::Ssn,
            ssn_read_mostly_age: Some(0),
            record_history: true,
            faults,
            ..Options::default()
        };
        let report = run_with(opts, Isolation::Serializable, 200 + 100 * round);
        if !report.ok() {
            let found: Vec<Class> = report.forbidden().map(|a| a.class).collect();
            let cycles = [Class::G2Item, Class::G2, Class::GSingle];
            assert!(found.iter().any(|c| cycles.contains(c)), "expected a cycle, found {found:?}:\n{report}");
            eprintln!("the fault showed in round {round}");
            return;
        }
    }
    panic!("the checker never caught writers ignoring untracked readers");
}

/// Runs until the checker reports a forbidden anomaly (or gives up).
fn must_fail(iso: Isolation, faults: Faults, expect: &[Class]) -> Report {
    must_fail_with(Protocol::MvOcc, iso, faults, expect)
}

fn must_fail_with(p: Protocol, iso: Isolation, faults: Faults, expect: &[Class]) -> Report {
    for round in 0..20 {
        let report = run(p, iso, faults, 200 + 100 * round);
        if !report.ok() {
            let found: Vec<Class> = report.forbidden().map(|a| a.class).collect();
            assert!(found.iter().any(|c| expect.contains(c)), "expected one of {expect:?}, found {found:?}:\n{report}");
            return report;
        }
    }
    panic!("the checker never caught the injected fault at {iso}");
}

#[test]
fn without_validation_serializable_shows_cycles() {
    let faults = Faults { skip_validation: true, ..Faults::default() };
    must_fail(Isolation::Serializable, faults, &[Class::G2Item, Class::G2, Class::GSingle]);
}

/// Silo without its validation phase (the node-set and the ReadSet) is
/// no longer serializable, and the checker sees it.
/// POMVCC's serializability rests on validating just past the shared
/// commit timestamp: without validation, cycles appear.
#[test]
fn pomvcc_without_validation_shows_cycles() {
    let faults = Faults { skip_validation: true, ..Faults::default() };
    must_fail_with(Protocol::Pomvcc, Isolation::Serializable, faults, &[Class::G2Item, Class::G2, Class::GSingle]);
}

#[test]
fn silo_without_validation_shows_cycles() {
    let faults = Faults { skip_validation: true, ..Faults::default() };
    must_fail_with(Protocol::Silo, Isolation::Serializable, faults, &[Class::G2Item, Class::G2, Class::GSingle]);
}

#[test]
fn without_first_writer_wins_snapshot_loses_updates() {
    let faults = Faults { skip_write_conflicts: true, ..Faults::default() };
    let report = must_fail(
        Isolation::Snapshot,
        faults,
        &[Class::GSingle, Class::G0, Class::G1c, Class::SnapshotRead, Class::SnapshotWrite],
    );
    assert!(!report.ok());
}

/// POMVCC's optimistic writes lock at commit: without the conflict check
/// there, lost updates follow, and the checker sees them.
#[test]
fn pomvcc_without_write_conflicts_loses_updates() {
    let faults = Faults { skip_write_conflicts: true, ..Faults::default() };
    must_fail_with(
        Protocol::Pomvcc,
        Isolation::Snapshot,
        faults,
        &[Class::GSingle, Class::G0, Class::G1c, Class::SnapshotRead, Class::SnapshotWrite],
    );
}

/// 1V locking that releases its read locks at once (read committed's short
/// locks at every level, and no key-range locks) is no longer
/// serializable, and the checker sees it.
#[test]
fn one_v_lock_with_short_read_locks_shows_cycles() {
    let faults = Faults { skip_validation: true, ..Faults::default() };
    must_fail_with(Protocol::OneVLock, Isolation::Serializable, faults, &[Class::G2Item, Class::G2, Class::GSingle]);
}

/// Ordered 2PL as its benchmarks run it: every transaction declares its
/// reads and writes, takes all its locks at begin, and takes none after.
/// Random point reads, updates, inserts and deletes over a hot key space;
/// the checker must find no anomaly, and no transaction may time out (ordered
/// acquisition cannot deadlock).
#[test]
fn ordered_2pl_with_declarations_is_serializable() {
    let s = setup(Protocol::TwoPlOrdered, Faults::default());
    let n = 250 * stress_factor();
    std::thread::scope(|sc| {
        for th in 0..THREADS {
            let s = &s;
            sc.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(th * 104_729);
                let mut seq = 0u64;
                for _ in 0..n {
                    // (op, table, key): op 0 get, 1 update, 2 insert, 3 delete, 4 update_with.
                    let ops: Vec<(u32, TableId, Key)> = (0..rng.gen_range(1..=5))
                        .map(|_| {
                            let table = if rng.gen_bool(0.5) { s.hash } else { s.ordered };
                            (rng.gen_range(0..5), table, key(rng.gen_range(0..KEYS)))
                        })
                        .collect();
                    let mut access = multiverse::AccessSet::default();
                    for (op, table, k) in &ops {
                        if *op == 0 {
                            access.reads.push((*table, k.clone()))
                        } else {
                            access.writes.push((*table, k.clone()))
                        }
                    }
                    let opts = multiverse::TxnOptions {
                        access: Some(&access),
                        ..multiverse::TxnOptions::new(Isolation::Serializable)
                    };
                    let mut t = s.db.begin_with(opts).unwrap();
                    for (op, table, k) in ops {
                        seq += 1;
                        let v = value(th, seq);
                        let r = match op {
                            0 => t.get(table, &k).map(|_| ()),
                            1 => t.update(table, &k, v),
                            2 => t.insert(table, k, v),
                            3 => t.delete(table, &k),
                            _ => t.update_with(table, &k, |_old, new| new.extend_from_slice(&v)),
                        };
                        match r {
                            Ok(()) | Err(Error::DuplicateKey) | Err(Error::KeyNotFound) => {}
                            Err(e) => panic!("a declared transaction failed: {e}"),
                        }
                    }
                    t.commit().unwrap();
                }
            });
        }
    });
    let history = s.db.take_history();
    let report = check(&history, Isolation::Serializable);
    assert!(report.ok(), "{report}");
    assert!(report.stats.committed as u64 >= n * THREADS, "every declared transaction commits\n{report}");
    let stats = s.db.stats();
    assert_eq!(stats.aborted(), 0, "no lock waits time out: {:?}", stats.aborts);
}

/// Ordered 2PL refuses what a transaction did not declare, with a clear
/// error, and the transaction stays usable.
#[test]
fn ordered_2pl_refuses_undeclared_accesses() {
    let s = setup(Protocol::TwoPlOrdered, Faults::default());
    let access = multiverse::AccessSet { reads: vec![(s.hash, Key::from(1))], writes: vec![(s.hash, Key::from(2))] };
    let opts = multiverse::TxnOptions { access: Some(&access), ..multiverse::TxnOptions::new(Isolation::Serializable) };
    let mut t = s.db.begin_with(opts).unwrap();
    assert!(t.get(s.hash, Key::from(1)).unwrap().is_some());
    let e = t.update(s.hash, Key::from(1), value(0, 1)).unwrap_err();
    assert!(matches!(e, Error::NotDeclared(_)), "a declared read is not a write: {e}");
    assert_eq!(e.to_string(), "not declared: a write of a record the access declaration does not list as written");
    assert!(matches!(t.get(s.hash, Key::from(3)), Err(Error::NotDeclared(_))));
    assert!(matches!(t.scan(s.db.primary(s.hash), .., None, |_, _| true), Err(Error::NotDeclared(_))));
    t.update(s.hash, Key::from(2), value(0, 2)).unwrap();
    t.commit().unwrap();
    let mut t = s.db.begin(Isolation::Serializable).unwrap();
    assert_eq!(t.get(s.hash, Key::from(2)).unwrap().unwrap(), value(0, 2));
    t.commit().unwrap();
}
