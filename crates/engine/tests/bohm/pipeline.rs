//! Scripts through the pipeline, checked against the serial model: dependency
//! chains through placeholders, aborts inside batches, undeclared accesses,
//! inserts, deletes and values too large, random mixes of all of these; and
//! the garbage collector keeping memory flat over many batches.

use super::*;

// ----------------------------------------------------------------------
// Dependency chains
// ----------------------------------------------------------------------

/// Many transactions read-modify-write one hot record, or carry a value
/// from record to record around a ring of keys (in both tables), over
/// small batches and several splits of the threads: every read and every
/// final value is the serial one. With one execution thread nothing ever
/// waits; with more, some evaluation waits or recurses.
#[test]
fn placeholder_chains_follow_the_log_order() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let ring: Vec<K> = vec![(0, 0), (0, 1), (1, 0), (0, 2), (1, 1)];
    let rows: Vec<(K, u64)> = ring.iter().map(|&k| (k, k.1 + 1)).collect();
    load(&db, tabs, &mut model, &rows);
    let hot = ring[0];
    let mut rng = Rng(11);
    let mut contended = 0;
    let n = 3000 * scale();
    for split in SPLITS {
        let cfg = cfg(split);
        let scripts = (0..n)
            .map(|_| {
                let c = rng.below(1000);
                let steps = match rng.below(4) {
                    0 => vec![Step::Get(hot), Step::Mix(hot, c), Step::Get(hot)],
                    1 => vec![Step::Mix(hot, c)],
                    2 => {
                        let i = rng.below(ring.len() as u64) as usize;
                        vec![Step::Carry(ring[i], ring[(i + 1) % ring.len()], c)]
                    }
                    _ => {
                        // Along the ring: each hop reads what the last wrote.
                        let i = rng.below(ring.len() as u64) as usize;
                        (0..3)
                            .map(|h| Step::Carry(ring[(i + h) % ring.len()], ring[(i + h + 1) % ring.len()], c))
                            .collect()
                    }
                };
                let mut s = Script::new(tabs, steps);
                // Sometimes a read of a record it also writes.
                if rng.pct(30) {
                    let w = s.writes.clone();
                    s = s.also(&w, &[]);
                }
                if rng.pct(30) {
                    s = s.careless();
                }
                s
            })
            .collect();
        let r = run_checked(&db, tabs, cfg, scripts, &mut model);
        eprintln!("{cfg:?}: {:?}", r.stats);
        if cfg.exec_threads == 1 {
            // In log order on one thread, every value read is produced.
            assert_eq!((r.stats.blocked, r.stats.recursive), (0, 0), "{cfg:?}");
        } else {
            contended += r.stats.blocked + r.stats.recursive;
        }
    }
    assert!(contended > 0, "no evaluation ever found a value not produced yet");
    assert_eq!(db.stats().versions_alive, model.rows.len() as u64, "{:?}", db.stats());
}

/// One long chain in one big batch: recursive evaluation goes deeper than
/// its bound (`MAX_DEPTH`) and falls back to waiting; the result is still
/// the serial one.
#[test]
fn long_chains_in_one_batch() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    load(&db, tabs, &mut model, &[((0, 0), 1)]);
    for split in [(1, 2, 2000, 2), (2, 3, 700, 3), (1, 4, 4000, 2)] {
        let cfg = cfg(split);
        let scripts = (0..4000 * scale() as u64).map(|c| Script::new(tabs, vec![Step::Mix((0, 0), c)])).collect();
        run_checked(&db, tabs, cfg, scripts, &mut model);
    }
}

// ----------------------------------------------------------------------
// Aborts
// ----------------------------------------------------------------------

/// Transactions whose logic fails after writing (updates, inserts,
/// deletes, several records): nothing they wrote remains, and the next
/// transactions, in the same batch or a later one, see the previous values.
#[test]
fn aborted_writes_vanish_inside_batches() {
    let (x, y, z) = ((0, 1), (0, 2), (1, 3));
    for split in [(1, 1, 12, 2), (1, 2, 12, 2), (2, 3, 12, 2), (1, 2, 1, 2), (2, 2, 5, 3), (3, 1, 3, 2)] {
        let cfg = cfg(split);
        let (db, tabs) = harness_db(Options::default());
        let mut model = Model::default();
        load(&db, tabs, &mut model, &[(x, 10), (y, 20)]);
        let s = |steps: Vec<Step>| Script::new(tabs, steps);
        let scripts = vec![
            s(vec![Step::Get(x), Step::Add(x, 1), Step::Fail]),
            s(vec![Step::Get(x), Step::Add(x, 2), Step::Get(x)]),
            s(vec![Step::Ins(z, 5), Step::Fail]),
            s(vec![Step::Get(z), Step::Ins(z, 7)]),
            s(vec![Step::Del(y), Step::Fail]),
            s(vec![Step::Get(y), Step::Del(y), Step::Get(y)]),
            s(vec![Step::Ins(y, 1), Step::Add(y, 1), Step::Fail]),
            s(vec![Step::Get(y), Step::Get(x)]),
            s(vec![Step::Put(x, 100), Step::Del(z), Step::Ins(y, 3), Step::Fail]),
            s(vec![Step::Get(x), Step::Get(z), Step::Get(y)]),
            // A declared write left unwritten, and a failure.
            s(vec![Step::Add(x, 1), Step::Fail]).also(&[], &[z]),
            s(vec![Step::Get(x), Step::Get(z)]),
        ];
        let r = run_checked(&db, tabs, cfg, scripts, &mut model);
        let seen: Vec<(End, Vec<Obs>)> = r.done.iter().map(|d| (end_of(&d.outcome), d.proc.seen.clone())).collect();
        use Obs::*;
        let expect = vec![
            (End::Abort, vec![Val(Some(10)), Wrote]),
            (End::Commit, vec![Val(Some(10)), Wrote, Val(Some(12))]),
            (End::Abort, vec![Wrote]),
            (End::Commit, vec![Val(None), Wrote]),
            (End::Abort, vec![Wrote]),
            (End::Commit, vec![Val(Some(20)), Wrote, Val(None)]),
            (End::Abort, vec![Wrote, Wrote]),
            (End::Commit, vec![Val(None), Val(Some(12))]),
            (End::Abort, vec![Wrote, Wrote, Wrote]),
            (End::Commit, vec![Val(Some(12)), Val(Some(7)), Val(None)]),
            (End::Abort, vec![Wrote]),
            (End::Commit, vec![Val(Some(12)), Val(Some(7))]),
        ];
        assert_eq!(seen, expect, "{cfg:?}");
        assert_eq!(contents(&db, tabs), BTreeMap::from([(x, 12), (z, 7)]), "{cfg:?}");
        assert_eq!(db.stats().versions_alive, 2, "{cfg:?}: {:?}", db.stats());
    }
}

/// Every third transaction increments the hot record and then fails; every
/// transaction reads it first: each read counts exactly the committed
/// increments before it.
#[test]
fn every_third_transaction_aborts() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let hot = (0, 0);
    load(&db, tabs, &mut model, &[(hot, 0)]);
    let n = 1500 * scale();
    for split in [(1, 2, 1, 2), (2, 2, 3, 2), (1, 3, 4, 4), (2, 2, 50, 2)] {
        let cfg = cfg(split);
        let start = model.rows[&hot];
        let before = db.stats();
        let scripts = (0..n)
            .map(|i| {
                let mut steps = vec![Step::Get(hot), Step::Add(hot, 1)];
                if i % 3 == 2 {
                    steps.push(Step::Fail);
                }
                Script::new(tabs, steps)
            })
            .collect();
        let r = run_checked(&db, tabs, cfg, scripts, &mut model);
        // The database counts the pipeline's commits and aborts (and the
        // interactive transaction that read the data back).
        let after = db.stats();
        assert_eq!(after.committed - before.committed, (n - n / 3) as u64 + 1, "{cfg:?}");
        assert_eq!(after.aborted() - before.aborted(), (n / 3) as u64, "{cfg:?}");
        for (i, d) in r.done.iter().enumerate() {
            let committed_before = (i - i / 3) as u64;
            assert_eq!(d.proc.seen[0], Obs::Val(Some(start + committed_before)), "{cfg:?}: #{i}");
            assert_eq!(d.outcome.is_committed(), i % 3 != 2, "{cfg:?}: #{i}");
        }
        assert_eq!(model.rows[&hot], start + (n - n / 3) as u64);
    }
    let stats = db.stats();
    assert!(stats.committed > 0 && stats.aborted() > 0, "{stats:?}");
}

// ----------------------------------------------------------------------
// Undeclared accesses
// ----------------------------------------------------------------------

/// A transaction that reads or writes a record it did not declare, writes
/// one it declared only as read, scans or looks up a secondary index ends
/// as `Refused(NotDeclared)`, whether its logic swallows the error and
/// returns `Ok` or passes it on; what it wrote first vanishes, and the
/// next transactions see the previous values.
#[test]
fn undeclared_accesses_are_refused() {
    let (x, y, w) = ((0, 1), (1, 1), (0, 9));
    for split in [(1, 1, 20, 2), (2, 3, 20, 2), (1, 2, 1, 2), (3, 2, 4, 3)] {
        let cfg = cfg(split);
        let (db, tabs) = harness_db(Options::default());
        let mut model = Model::default();
        load(&db, tabs, &mut model, &[(x, 1), (y, 2)]);
        let s = |steps: Vec<Step>| Script::new(tabs, steps);
        let scripts = vec![
            // A write of an undeclared record, after a declared one.
            s(vec![Step::Add(x, 1), Step::Put(y, 5)]).undeclared(&[], &[y]),
            s(vec![Step::Get(x), Step::Get(y)]),
            // A write of a record declared only as read.
            s(vec![Step::Add(x, 1), Step::Put(y, 5)]).undeclared(&[], &[y]).also(&[y], &[]),
            // A read of an undeclared record: same key number, other table.
            s(vec![Step::Add(x, 1), Step::Get(y)]).undeclared(&[y], &[]).also(&[(0, 1)], &[]),
            // An insert of an undeclared record.
            s(vec![Step::Ins(w, 3)]).undeclared(&[], &[w]),
            s(vec![Step::Get(w), Step::Get(x)]),
            // Scans and secondary lookups cannot be declared.
            s(vec![Step::Add(x, 1), Step::Scan]),
            s(vec![Step::Lookup, Step::Add(x, 1)]),
            // The logic passes the error on.
            s(vec![Step::Add(x, 1), Step::Get(w)]).undeclared(&[w], &[]).propagating(),
            s(vec![Step::Scan]).propagating(),
            // Refused first, then the logic fails on its own: still refused.
            s(vec![Step::Add(x, 1), Step::Get(w), Step::Fail]).undeclared(&[w], &[]),
            // Refused, then a declared insert: it vanishes too.
            s(vec![Step::Get((1, 9)), Step::Ins(w, 4)]).undeclared(&[(1, 9)], &[]),
            s(vec![Step::Get(x), Step::Get(y), Step::Get(w)]),
        ];
        let r = run_checked(&db, tabs, cfg, scripts, &mut model);
        let ends: Vec<End> = r.done.iter().map(|d| end_of(&d.outcome)).collect();
        let refused = End::Refuse(Why::Undeclared);
        assert_eq!(
            ends,
            vec![
                refused,
                End::Commit,
                refused,
                refused,
                refused,
                End::Commit,
                refused,
                refused,
                refused,
                refused,
                refused,
                refused,
                End::Commit
            ],
            "{cfg:?}"
        );
        assert_eq!(r.done[12].proc.seen, vec![Obs::Val(Some(1)), Obs::Val(Some(2)), Obs::Val(None)], "{cfg:?}");
        assert_eq!(contents(&db, tabs), BTreeMap::from([(x, 1), (y, 2)]), "{cfg:?}");
    }
}

/// Declarations longer than the linear search (a map is built): declared
/// records work, an undeclared one is still refused.
#[test]
fn large_declarations() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let rows: Vec<(K, u64)> = (0..40).map(|k| ((k % 2) as u8, k)).map(|k| (k, k.1)).collect();
    load(&db, tabs, &mut model, &rows);
    let keys: Vec<K> = rows.iter().map(|r| r.0).collect();
    let mut rng = Rng(5);
    let scripts: Vec<Script> = (0..300 * scale())
        .map(|i| {
            let steps: Vec<Step> = (0..20)
                .map(|_| {
                    let k = keys[rng.below(40) as usize];
                    match rng.below(3) {
                        0 => Step::Get(k),
                        1 => Step::Add(k, 1),
                        _ => Step::Mix(k, i as u64),
                    }
                })
                .collect();
            let mut s = Script::new(tabs, steps);
            // Declared twice, over and over.
            let again = s.writes.clone();
            s = s.also(&again, &again);
            if i % 10 == 3 {
                s.steps.insert(5, Step::Get((0, 77)));
            }
            if i % 10 == 7 {
                s.steps.push(Step::Put((1, 77), 1));
            }
            s
        })
        .collect();
    for split in [(1, 1, 8, 2), (2, 2, 3, 3)] {
        let r = run_checked(&db, tabs, cfg(split), scripts_clone(&scripts), &mut model);
        let refused = r.done.iter().filter(|d| matches!(d.outcome, Outcome::Refused(Error::NotDeclared(_)))).count();
        assert_eq!(refused, r.done.len() / 5);
    }
}

/// Long read sets (more declared reads than the linear search, few
/// writes) amid short writers that keep changing the records: read in
/// declared order (the read cursor), read twice in a row though declared
/// once, declared in another order than read (the map), declared twice,
/// with writes to records they read and with an undeclared read; every read
/// and the data agree with the serial run.
#[test]
fn long_read_sets() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let keys: Vec<K> = (0..64).map(|k| ((k % 2) as u8, k)).collect();
    let rows: Vec<(K, u64)> = keys.iter().map(|&k| (k, k.1)).collect();
    load(&db, tabs, &mut model, &rows);
    let mut rng = Rng(11);
    let pick = |rng: &mut Rng| keys[rng.below(keys.len() as u64) as usize];
    let mut refused_want = 0;
    let scripts: Vec<Script> = (0..600 * scale())
        .map(|i| {
            if i % 3 != 0 {
                // A short writer: the readers' versions keep changing.
                let (a, b) = (pick(&mut rng), pick(&mut rng));
                return Script::new(tabs, vec![Step::Add(a, 1), Step::Mix(b, i as u64)]);
            }
            let mut steps: Vec<Step> = (0..20 + rng.below(40)).map(|_| Step::Get(pick(&mut rng))).collect();
            match i / 3 % 6 {
                1 => {
                    // Read twice in a row, declared once.
                    let j = rng.below(steps.len() as u64) as usize;
                    steps.insert(j, steps[j]);
                    let mut s = Script::new(tabs, steps);
                    s.reads.remove(j);
                    return s;
                }
                2 => {
                    // Modify records it has read, and carry one to another.
                    for _ in 0..3 {
                        let j = rng.below(steps.len() as u64) as usize;
                        if let Step::Get(k) = steps[j] {
                            steps.insert(j + 1, Step::Add(k, 5));
                        }
                    }
                    steps.push(Step::Carry(pick(&mut rng), pick(&mut rng), 3));
                }
                3 => {
                    // Declared in another order than read.
                    let mut s = Script::new(tabs, steps);
                    for j in (1..s.reads.len()).rev() {
                        s.reads.swap(j, rng.below(j as u64 + 1) as usize);
                    }
                    return s;
                }
                4 => {
                    // Declared twice.
                    let s = Script::new(tabs, steps);
                    let again = s.reads.clone();
                    return s.also(&again, &[]);
                }
                5 => {
                    // An undeclared read among them.
                    refused_want += 1;
                    let mut s = Script::new(tabs, steps);
                    s.steps.insert(rng.below(s.steps.len() as u64) as usize, Step::Get((0, 99)));
                    return s;
                }
                _ => {}
            }
            Script::new(tabs, steps)
        })
        .collect();
    for split in [(1, 1, 8, 2), (2, 2, 3, 3), (1, 3, 50, 2)] {
        let r = run_checked(&db, tabs, cfg(split), scripts_clone(&scripts), &mut model);
        let refused = r.done.iter().filter(|d| matches!(d.outcome, Outcome::Refused(Error::NotDeclared(_)))).count();
        assert_eq!(refused, refused_want, "{split:?}");
    }
}

fn scripts_clone(scripts: &[Script]) -> Vec<Script> {
    scripts
        .iter()
        .map(|s| Script {
            steps: s.steps.clone(),
            reads: s.reads.clone(),
            writes: s.writes.clone(),
            seen: Vec::new(),
            runs: 0,
            ..*s
        })
        .collect()
}

// ----------------------------------------------------------------------
// Inserts, deletes, values too large
// ----------------------------------------------------------------------

/// Inserts, deletes and reinserts through the pipeline, with the errors
/// the logic sees (`DuplicateKey`, `KeyNotFound`), reads of the
/// transaction's own writes, and an insert and delete of one record in one
/// transaction; interactive transactions see the result, and exactly one
/// version per row remains.
#[test]
fn inserts_and_deletes_through_the_pipeline() {
    let k = |n: u64| (0u8, 100 + n);
    for split in [(1, 1, 10, 2), (2, 2, 1, 2), (1, 3, 3, 3), (3, 2, 2, 2)] {
        let cfg = cfg(split);
        let (db, tabs) = harness_db(Options::default());
        let mut model = Model::default();
        load(&db, tabs, &mut model, &[(k(8), 8), (k(7), 7)]);
        let s = |steps: Vec<Step>| Script::new(tabs, steps);
        let scripts = vec![
            s((0..5).map(|i| Step::Ins(k(i), i)).collect()),
            s(vec![Step::Ins(k(0), 9), Step::Ins(k(5), 5), Step::Get(k(5))]),
            s(vec![Step::Del(k(6)), Step::Put(k(6), 1), Step::Add(k(6), 1), Step::Get(k(6))]),
            s(vec![Step::Del(k(1)), Step::Get(k(1)), Step::Del(k(1))]),
            s(vec![Step::Get(k(1)), Step::Ins(k(1), 42), Step::Get(k(1))]),
            s(vec![Step::Ins(k(2), 0), Step::Del(k(2)), Step::Ins(k(2), 9), Step::Get(k(2))]),
            s(vec![Step::Ins(k(9), 9), Step::Get(k(9)), Step::Del(k(9)), Step::Get(k(9))]),
            s(vec![Step::Get(k(9)), Step::Del(k(8)), Step::Del(k(7)), Step::Ins(k(7), 70)]),
            s(vec![Step::Get(k(8)), Step::Ins(k(8), 80), Step::Del(k(3))]),
            s(vec![Step::Get(k(3)), Step::Add(k(3), 1), Step::Ins(k(3), 33), Step::Add(k(3), 1)]),
        ];
        let r = run_checked(&db, tabs, cfg, scripts, &mut model);
        use Obs::*;
        let seen: Vec<Vec<Obs>> = r.done.iter().map(|d| d.proc.seen.clone()).collect();
        assert_eq!(
            seen,
            vec![
                vec![Wrote; 5],
                vec![Dup, Wrote, Val(Some(5))],
                vec![Missing, Missing, Missing, Val(None)],
                vec![Wrote, Val(None), Missing],
                vec![Val(None), Wrote, Val(Some(42))],
                vec![Dup, Wrote, Wrote, Val(Some(9))],
                vec![Wrote, Val(Some(9)), Wrote, Val(None)],
                vec![Val(None), Wrote, Wrote, Wrote],
                vec![Val(None), Wrote, Wrote],
                vec![Val(None), Missing, Wrote, Wrote],
            ],
            "{cfg:?}"
        );
        assert!(r.done.iter().all(|d| d.outcome.is_committed()), "{cfg:?}");
        let expect = BTreeMap::from([
            (k(0), 0),
            (k(1), 42),
            (k(2), 9),
            (k(3), 34),
            (k(4), 4),
            (k(5), 5),
            (k(7), 70),
            (k(8), 80),
        ]);
        assert_eq!(contents(&db, tabs), expect, "{cfg:?}");
        for i in 0..10 {
            let mut tx = db.begin(Isolation::Serializable).unwrap();
            let got = tx.get(tabs.a, Key::from(k(i).1)).unwrap().map(|v| dec(&v));
            assert_eq!(got, expect.get(&k(i)).copied(), "{cfg:?}: key {i}");
            tx.commit().unwrap();
        }
        // Deleted records keep no version.
        assert_eq!(db.stats().versions_alive, expect.len() as u64, "{cfg:?}: {:?}", db.stats());
        // Interactive transactions go on from there.
        db.run(Isolation::Serializable, |tx| {
            tx.insert(tabs.a, Key::from(k(6).1), enc(6))?;
            tx.delete(tabs.a, Key::from(k(0).1))
        })
        .unwrap();
        model.rows.insert(k(6), 6);
        model.rows.remove(&k(0));
        let scripts = vec![s(vec![Step::Get(k(6)), Step::Get(k(0)), Step::Ins(k(0), 1), Step::Del(k(6))])];
        let r = run_checked(&db, tabs, cfg, scripts, &mut model);
        assert_eq!(r.done[0].proc.seen, vec![Val(Some(6)), Val(None), Wrote, Wrote], "{cfg:?}");
    }
}

/// A value larger than the database accepts refuses the transaction
/// (`ValueTooLarge`), whatever the logic does with the error.
#[test]
fn values_too_large_are_refused() {
    let (x, y) = ((0, 1), (1, 2));
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    load(&db, tabs, &mut model, &[(x, 1), (y, 2)]);
    let s = |steps: Vec<Step>| Script::new(tabs, steps);
    let scripts = vec![
        s(vec![Step::Add(y, 1), Step::Big(x)]),
        s(vec![Step::Get(x), Step::Get(y)]),
        s(vec![Step::Add(y, 1), Step::Big(x)]).propagating(),
        s(vec![Step::Big((0, 5))]),
        s(vec![Step::Add(x, 1)]),
    ];
    let r = run_checked(&db, tabs, cfg((2, 2, 2, 2)), scripts, &mut model);
    let ends: Vec<End> = r.done.iter().map(|d| end_of(&d.outcome)).collect();
    let big = End::Refuse(Why::TooLarge);
    assert_eq!(ends, vec![big, End::Commit, big, End::Commit, End::Commit]);
    assert_eq!(contents(&db, tabs), BTreeMap::from([(x, 2), (y, 2)]));
}

/// Random mixes of everything above (reads, read-modify-writes, chains,
/// updates, inserts, deletes, failures, undeclared accesses, values too
/// large, declared writes left unwritten, duplicate declarations) over a
/// small hot set of records, with feeds that sometimes have nothing to
/// give: the serial model agrees on every transaction.
#[test]
fn random_mixes_match_the_serial_model() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let keys: Vec<K> = (0..6).map(|k| (0u8, k)).chain((0..3).map(|k| (1u8, k))).collect();
    let rows: Vec<(K, u64)> = keys.iter().step_by(2).map(|&k| (k, k.1)).collect();
    load(&db, tabs, &mut model, &rows);
    let n = 2000 * scale();
    for (round, split) in SPLITS.into_iter().enumerate() {
        let mut rng = Rng(round as u64 * 7 + 1);
        let scripts = (0..n).map(|_| random_script(&mut rng, tabs, &keys)).collect();
        let wait_every = [0, 3, 0, 7][round % 4];
        let r = run_checked_waiting(&db, tabs, cfg(split), scripts, &mut model, wait_every);
        let mut ends = BTreeMap::new();
        for d in &r.done {
            *ends.entry(format!("{:?}", end_of(&d.outcome))).or_insert(0) += 1;
        }
        eprintln!("{:?}: {:?} {ends:?}", cfg(split), r.stats);
        assert!(ends.len() >= 3, "a poor mix: {ends:?}");
    }
    assert_eq!(db.stats().versions_alive, model.rows.len() as u64, "{:?}", db.stats());
}

fn random_script(rng: &mut Rng, tabs: Tabs, keys: &[K]) -> Script {
    let pick = |rng: &mut Rng| keys[rng.below(keys.len() as u64) as usize];
    let mut steps = Vec::new();
    for _ in 0..1 + rng.below(5) {
        let k = pick(rng);
        let v = rng.below(1000);
        steps.push(match rng.below(100) {
            0..=24 => Step::Get(k),
            25..=39 => Step::Mix(k, v),
            40..=49 => Step::Carry(k, pick(rng), v),
            50..=59 => Step::Put(k, v),
            60..=71 => Step::Ins(k, v),
            72..=83 => Step::Del(k),
            84..=89 => Step::Add(k, v),
            90..=93 => Step::Fail,
            94..=95 => Step::Scan,
            96 => Step::Lookup,
            _ => Step::Get(k),
        });
    }
    if rng.pct(3) {
        steps.push(Step::Big(pick(rng)));
    }
    let mut s = Script::new(tabs, steps);
    if rng.pct(5) {
        // Forget one declaration.
        let k = pick(rng);
        s = s.undeclared(&[k], &[k]);
    }
    if rng.pct(10) {
        // Declare a write it may leave unwritten.
        let k = pick(rng);
        s = s.also(&[], &[k]);
    }
    if rng.pct(10) {
        // Declare reads of records it writes, and everything twice.
        let (r, w) = (s.reads.clone(), s.writes.clone());
        s = s.also(&w, &[]).also(&r, &w);
    }
    if rng.pct(5) {
        s = s.propagating();
    } else if rng.pct(20) {
        s = s.careless();
    }
    s
}

// ----------------------------------------------------------------------
// Garbage collection
// ----------------------------------------------------------------------

/// Wraps a feed and checks, as transactions come back (during the run),
/// that the versions alive stay under a bound.
struct Bounded<'a> {
    inner: ScriptFeed,
    db: &'a Database,
    peak: u64,
}

impl Feed<Script> for Bounded<'_> {
    fn next(&mut self, idle: bool) -> Next<Script> {
        self.inner.next(idle)
    }
    fn done(&mut self, d: Done<Script>) {
        self.peak = self.peak.max(self.db.stats().versions_alive);
        self.inner.done(d);
    }
}

/// Many batches of updates (and of deletes and reinserts) over a small
/// table: during a run the versions alive stay within what the batches in
/// flight can hold, and at rest exactly one version per row remains, run
/// after run.
#[test]
fn garbage_collection_keeps_memory_flat() {
    let (db, tabs) = harness_db(Options::default());
    let mut model = Model::default();
    let keys: Vec<K> = (0..16).map(|k| (0u8, k)).collect();
    let rows: Vec<(K, u64)> = keys.iter().map(|&k| (k, 0)).collect();
    load(&db, tabs, &mut model, &rows);
    let mut rng = Rng(3);
    for round in 0..12 {
        let split = [(1, 2, 16, 2), (2, 2, 40, 3), (1, 1, 5, 4)][round % 3];
        let cfg = cfg(split);
        let churn = round % 2 == 1;
        let scripts: Vec<Script> = (0..1500 * scale())
            .map(|_| {
                let (a, b) = (keys[rng.below(16) as usize], keys[rng.below(16) as usize]);
                let steps =
                    if churn { vec![Step::Del(a), Step::Ins(b, 1)] } else { vec![Step::Mix(a, 3), Step::Mix(b, 5)] };
                Script::new(tabs, steps)
            })
            .collect();
        // Two writes a transaction; what the batches in flight (and one
        // being planned) supersede, beyond one version per record.
        let bound = 32 + 2 * (cfg.batches_in_flight as u64 + 2) * cfg.batch_size as u64;
        let n = scripts.len();
        let feed = Bounded { inner: ScriptFeed::new(scripts, 0), db: &db, peak: 0 };
        let (feed, _) = db.bohm_run(cfg, feed).unwrap();
        feed.inner.check();
        assert_eq!(feed.inner.done.len(), n);
        assert!(feed.peak <= bound, "round {round} {cfg:?}: {} versions alive during a run, over {bound}", feed.peak);
        for d in &feed.inner.done {
            let (seen, end) = model.run(&d.proc);
            assert_eq!((end_of(&d.outcome), &d.proc.seen), (end, &seen));
        }
        let alive = db.stats().versions_alive;
        assert_eq!(alive, model.rows.len() as u64, "round {round} {cfg:?}: at rest, one version per row");
        eprintln!("round {round}: peak {} of bound {bound}, {alive} at rest", feed.peak);
    }
    assert_eq!(contents(&db, tabs), model.rows);
}
