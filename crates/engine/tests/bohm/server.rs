//! The server API (many clients, outcomes, a shutdown while transactions are
//! in flight), the gate between the pipeline and interactive transactions,
//! and the errors of a bad database or configuration.

use super::*;

// ----------------------------------------------------------------------
// The server
// ----------------------------------------------------------------------

/// `bohm_serve` that fails (rather than hangs) when `f` panics: the panic
/// is caught, the server stops, and the panic goes on.
fn serve<P: Procedure, R>(db: &Database, cfg: Config, f: impl FnOnce(&Server<P>) -> R) -> R {
    let r = db.bohm_serve(cfg, |server| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(server)))).unwrap();
    r.unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// Several client threads call `execute` in loops: every transaction runs
/// once, in some order, and the data is what their effects add up to.
#[test]
fn server_answers_many_clients() {
    const CLIENTS: u64 = 4;
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let keys: Vec<K> = (0..5).map(|k| (0u8, k)).collect();
    load(&db, tabs, &mut model, &keys.iter().map(|&k| (k, 0)).collect::<Vec<_>>());
    let per_client = 1000 * scale() as u64;
    for split in [(1, 1, 1000, 2), (2, 2, 4, 2), (1, 3, 16, 3)] {
        let before = contents(&db, tabs);
        let done: Vec<Vec<Done<Script>>> = serve(&db, cfg(split), |server| {
            assert!(server.is_running());
            std::thread::scope(|s| {
                let keys = &keys;
                let hs: Vec<_> = (0..CLIENTS)
                    .map(|c| {
                        s.spawn(move || {
                            let mut rng = Rng(c + 100);
                            let mut mine = Vec::new();
                            for _ in 0..per_client {
                                let (a, b) = (keys[rng.below(5) as usize], keys[rng.below(5) as usize]);
                                let mut steps = vec![Step::Get(a), Step::Add(a, c + 1), Step::Add(b, 10 * (c + 1))];
                                let fail = rng.pct(10);
                                if fail {
                                    steps.push(Step::Fail);
                                }
                                let d = server.execute(Script::new(tabs, steps)).expect("the server is running");
                                assert_eq!(d.outcome.is_committed(), !fail);
                                mine.push(d);
                            }
                            mine
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            })
        });
        let mut all: Vec<&Done<Script>> = done.iter().flatten().collect();
        // Each client's transactions are in its order in the log.
        for mine in &done {
            assert!(mine.windows(2).all(|w| w[0].ts < w[1].ts));
        }
        all.sort_by_key(|d| d.ts);
        assert!(all.windows(2).all(|w| w[0].ts < w[1].ts), "timestamps are unique");
        // Replaying in timestamp order gives the same reads and data.
        let mut m = Model { rows: before.clone() };
        for d in &all {
            let (seen, end) = m.run(&d.proc);
            assert_eq!((end_of(&d.outcome), &d.proc.seen), (end, &seen), "T{}", d.ts);
        }
        assert_eq!(contents(&db, tabs), m.rows, "{split:?}");
        model = m;
    }
    assert_eq!(db.stats().versions_alive, model.rows.len() as u64);
}

/// A server answers a lone client at once (a batch closes when nobody else
/// is waiting), reports aborts and refusals, and hands back the closure's
/// result.
#[test]
fn server_reports_outcomes() {
    let (db, tabs) = harness_db(Options::default());
    let x = (0, 0);
    let mut model = Model::default();
    load(&db, tabs, &mut model, &[(x, 0)]);
    let r = serve(&db, cfg((1, 1, 10_000, 2)), |server: &Server<Script>| {
        let mut last = 0;
        for i in 0..200u64 {
            let s = match i % 4 {
                0 => Script::new(tabs, vec![Step::Add(x, 1)]),
                1 => Script::new(tabs, vec![Step::Add(x, 1), Step::Fail]),
                2 => Script::new(tabs, vec![Step::Add(x, 1), Step::Scan]),
                _ => Script::new(tabs, vec![Step::Get(x)]),
            };
            let d = server.execute(s).unwrap();
            assert!(d.ts > last);
            last = d.ts;
            match i % 4 {
                0 => assert!(d.outcome.is_committed()),
                1 => assert!(matches!(d.outcome, Outcome::Aborted(Stop::Fail))),
                2 => assert!(matches!(d.outcome, Outcome::Refused(Error::NotDeclared(_)))),
                _ => assert_eq!(d.proc.seen, vec![Obs::Val(Some(i / 4 + 1))]),
            }
        }
        last
    });
    // An interactive transaction comes right after everything the server ran.
    let tx = db.begin(Isolation::Serializable).unwrap();
    assert_eq!(tx.begin_ts(), r + 1);
    assert_eq!(tx.commit().unwrap().commit_ts, r + 1);
    assert_eq!(contents(&db, tabs), BTreeMap::from([(x, 50)]));
}

/// Clients keep submitting while another thread shuts the server down:
/// every call returns either `Ok` (the transaction ran, and its effect is
/// there) or `ShuttingDown` (it did not run); the data is exactly the sum
/// of the answered effects.
#[test]
fn server_shutdown_with_transactions_in_flight() {
    const CLIENTS: usize = 4;
    for (round, split) in [(1, 1, 8, 2), (2, 3, 3, 3), (1, 2, 1000, 2)].into_iter().enumerate() {
        let (db, tabs) = harness_db(Options::default());
        let mut model = Model::default();
        let rows: Vec<(K, u64)> = (0..CLIENTS as u64).map(|c| ((0, c), 1000 * c)).collect();
        load(&db, tabs, &mut model, &rows);
        let shutdown_after = 100 + 150 * round as u64;
        let total = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let oks: Vec<u64> = serve(&db, cfg(split), |server| {
            let oks = std::thread::scope(|s| {
                let hs: Vec<_> = (0..CLIENTS)
                    .map(|c| {
                        let (total, stop) = (&total, &stop);
                        s.spawn(move || {
                            let _raise = RaiseOnDrop(stop);
                            let k = (0u8, c as u64);
                            let mut ok = 0u64;
                            loop {
                                let steps = vec![Step::Get(k), Step::Add(k, c as u64 + 1)];
                                match server.execute(Script::new(tabs, steps)) {
                                    Ok(d) => {
                                        assert!(d.outcome.is_committed());
                                        // It saw every answered increment before it.
                                        let want = 1000 * c as u64 + ok * (c as u64 + 1);
                                        assert_eq!(d.proc.seen[0], Obs::Val(Some(want)));
                                        ok += 1;
                                        total.fetch_add(1, Ordering::Relaxed);
                                    }
                                    Err(Error::ShuttingDown) => break,
                                    Err(e) => panic!("execute failed: {e}"),
                                }
                            }
                            ok
                        })
                    })
                    .collect();
                s.spawn(|| {
                    while total.load(Ordering::Relaxed) < shutdown_after && !stop.load(Ordering::Acquire) {
                        std::thread::yield_now();
                    }
                    server.shutdown();
                });
                hs.into_iter().map(|h| h.join().unwrap()).collect::<Vec<u64>>()
            });
            assert!(!server.is_running());
            let late = Script::new(tabs, vec![Step::Add((0, 0), 1)]);
            assert!(matches!(server.execute(late), Err(Error::ShuttingDown)));
            oks
        });
        assert!(oks.iter().sum::<u64>() >= shutdown_after);
        let expect: BTreeMap<K, u64> =
            (0..CLIENTS).map(|c| ((0u8, c as u64), 1000 * c as u64 + oks[c] * (c as u64 + 1))).collect();
        assert_eq!(contents(&db, tabs), expect, "{split:?}: answered {oks:?}");
    }
}

// ----------------------------------------------------------------------
// The gate between the pipeline and interactive transactions
// ----------------------------------------------------------------------

/// An interactive transaction begun while a server runs waits until the
/// server has stopped: it sees every transaction the server ran.
#[test]
fn interactive_transactions_wait_for_a_server() {
    let (db, t) = open(1);
    let (go, asking) = (AtomicBool::new(false), AtomicBool::new(false));
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            while !go.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            asking.store(true, Ordering::Release);
            value(&db, t, 0)
        });
        serve(&db, cfg((1, 2, 4, 2)), |server: &Server<Incr>| {
            // Let the reader go even if this panics.
            let _go = RaiseOnDrop(&go);
            // Once a transaction has run, the server holds the store.
            assert!(server.execute(Incr { t, keys: vec![0] }).unwrap().outcome.is_committed());
            go.store(true, Ordering::Release);
            while !asking.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            // The reader is beginning its transaction now.
            for _ in 0..200 {
                assert!(server.execute(Incr { t, keys: vec![0] }).unwrap().outcome.is_committed());
            }
        });
        assert_eq!(reader.join().unwrap(), Some(201));
    });
}

/// A pipeline started while an interactive transaction is open waits for
/// it: its transactions see the interactive write.
#[test]
fn a_pipeline_waits_for_interactive_transactions() {
    let (db, t) = open(1);
    let ready = AtomicBool::new(false);
    let mut tx = db.begin(Isolation::Serializable).unwrap();
    tx.update(t, Key::from(0), enc(100)).unwrap();
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            ready.store(true, Ordering::Release);
            db.bohm_run(cfg((1, 1, 1, 2)), Stream { t, left: 1, rows: 1, committed: 0, seed: 1 }).unwrap()
        });
        while !ready.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(10));
        tx.commit().unwrap();
        let (feed, _) = h.join().unwrap();
        assert_eq!(feed.committed, 1);
    });
    // Its one transaction adds 2 (it names record 0 twice) to what it read.
    assert_eq!(value(&db, t, 0), Some(102));
}

/// Interactive transactions that roll back (dropped, aborted, or failed
/// inside `Database::run`) release the store and leave nothing behind;
/// ones that commit inserts and deletes of one record keep exactly one
/// version per row. A pipeline then runs on what they left.
#[test]
fn interactive_transactions_under_bohm() {
    let (db, t) = open(2);
    let k = Key::from;
    let mut tx = db.begin(Isolation::Serializable).unwrap();
    tx.update(t, k(0), enc(5)).unwrap();
    tx.insert(t, k(7), enc(7)).unwrap();
    tx.delete(t, k(1)).unwrap();
    assert_eq!(tx.get(t, k(1)).unwrap(), None);
    drop(tx);
    let mut tx = db.begin(Isolation::Serializable).unwrap();
    tx.update(t, k(0), enc(9)).unwrap();
    tx.update(t, k(0), enc(10)).unwrap();
    tx.delete(t, k(1)).unwrap();
    tx.insert(t, k(1), enc(11)).unwrap();
    tx.abort();
    let r = db.run(Isolation::Serializable, |tx| {
        tx.update(t, k(0), enc(6))?;
        tx.insert(t, k(1), enc(6))
    });
    assert!(matches!(r, Err(Error::DuplicateKey)), "{r:?}");
    assert_eq!((value(&db, t, 0), value(&db, t, 1), value(&db, t, 7)), (Some(0), Some(0), None));
    assert_eq!(db.stats().versions_alive, 2, "{:?}", db.stats());
    // Insert and delete, delete and insert, in one transaction each.
    db.run(Isolation::Serializable, |tx| {
        tx.insert(t, k(7), enc(7))?;
        tx.update(t, k(7), enc(8))?;
        tx.delete(t, k(7))?;
        tx.delete(t, k(1))?;
        tx.insert(t, k(1), enc(1))?;
        assert_eq!(tx.get(t, k(7))?, None);
        Ok(())
    })
    .unwrap();
    assert_eq!((value(&db, t, 1), value(&db, t, 7)), (Some(1), None));
    assert_eq!(db.stats().versions_alive, 2, "{:?}", db.stats());
    let (feed, _) = db.bohm_run(cfg((2, 2, 2, 2)), Stream { t, left: 30, rows: 2, committed: 0, seed: 3 }).unwrap();
    assert_eq!(feed.committed, 30);
    assert_eq!(value(&db, t, 0).unwrap() + value(&db, t, 1).unwrap(), 1 + 60);
    assert_eq!(db.stats().versions_alive, 2, "{:?}", db.stats());
}

// ----------------------------------------------------------------------
// Errors and edge cases
// ----------------------------------------------------------------------

/// `bohm_run` and `bohm_serve` need a `bohm` database and a valid
/// configuration; they fail with `InvalidArgument` otherwise (without
/// calling the server's closure).
#[test]
fn bad_databases_and_configurations() {
    let other = Database::new(Options::default()).unwrap();
    let t = other.create_table(TableSpec::hash("t", 16)).unwrap().table();
    let feed = || Stream { t, left: 1, rows: 1, committed: 0, seed: 1 };
    assert!(matches!(other.bohm_run(Config::default(), feed()), Err(Error::InvalidArgument(_))));
    let called = AtomicBool::new(false);
    let r = other.bohm_serve(Config::default(), |_: &Server<Incr>| called.store(true, Ordering::Relaxed));
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
    assert!(!called.load(Ordering::Relaxed));

    let (db, t) = open(1);
    let feed = || Stream { t, left: 5, rows: 1, committed: 0, seed: 1 };
    let good = Config::default();
    let bad = [
        Config { cc_threads: 0, ..good },
        Config { cc_threads: 65, ..good },
        Config { exec_threads: 0, ..good },
        Config { batch_size: 0, ..good },
        Config { batches_in_flight: 1, ..good },
        Config { batches_in_flight: 0, ..good },
    ];
    for cfg in bad {
        let e = db.bohm_run(cfg, feed()).err();
        assert!(matches!(e, Some(Error::InvalidArgument(_))), "{cfg:?}: {e:?}");
        let r = db.bohm_serve(cfg, |_: &Server<Incr>| called.store(true, Ordering::Relaxed));
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{cfg:?}");
        assert!(!called.load(Ordering::Relaxed));
    }
    // Nothing ran; the bounds themselves are valid.
    assert_eq!(value(&db, t, 0), Some(0));
    for cfg in [Config { cc_threads: 64, batches_in_flight: 2, batch_size: 1, exec_threads: 1 }, good] {
        let (feed, stats) = db.bohm_run(cfg, feed()).unwrap();
        assert_eq!((feed.committed, stats.txns), (5, 5), "{cfg:?}");
    }
    assert_eq!(value(&db, t, 0), Some(20));
}

/// A feed that stops at once runs nothing; an empty transaction commits.
#[test]
fn empty_feeds_and_empty_transactions() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let r = run_checked(&db, tabs, Config::default(), Vec::new(), &mut model);
    assert_eq!((r.stats.txns, r.stats.batches), (0, 0));
    let r = run_checked(&db, tabs, cfg((2, 2, 2, 2)), (0..5).map(|_| Script::new(tabs, vec![])).collect(), &mut model);
    assert!(r.done.iter().all(|d| d.outcome.is_committed()));
    assert_eq!(db.stats().versions_alive, 0);
    // A server nobody calls.
    assert_eq!(db.bohm_serve(cfg((2, 2, 2, 2)), |_: &Server<Script>| 42).unwrap(), 42);
}
