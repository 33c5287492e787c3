//! SmallBank on tiny databases: loading, each transaction's exact effect,
//! the generator, and the money invariant after concurrent runs at every
//! isolation level, including proof that the check catches money created
//! behind its back and lost updates.

use multiverse::research::Faults;
use multiverse::{AccessSet, Database, Isolation, Key, Options, TxnOptions};
use multiverse_workloads::smallbank::*;
use multiverse_workloads::{load_parallel, run_txn, AbortCounts, Mix, Worker, Workload};
use std::time::{Duration, Instant};

fn cfg(customers: u64) -> SmallBankConfig {
    SmallBankConfig { customers, spin_us: 0, mix: default_mix() }
}

/// A database with the bank loaded by `parts` concurrent loaders.
fn loaded_with(opts: Options, c: SmallBankConfig, parts: usize) -> (Database, SmallBank) {
    let db = Database::new(opts).unwrap();
    let w = SmallBank::setup(&db, c).unwrap();
    assert_eq!(load_parallel(&db, &w, parts).unwrap(), w.load_size(), "progress reports every loaded row");
    (db, w)
}

fn loaded(c: SmallBankConfig, parts: usize) -> (Database, SmallBank) {
    loaded_with(Options::default(), c, parts)
}

/// (savings, checking) of customer `id`, read directly.
fn balances(db: &Database, w: &SmallBank, id: u64) -> (i64, i64) {
    let (_, sav, chk) = w.tables();
    let mut t = db.begin(Isolation::Snapshot).unwrap();
    let s = decode_balance(&t.get(sav, Key::from_u64(id)).unwrap().unwrap()).unwrap();
    let c = decode_balance(&t.get(chk, Key::from_u64(id)).unwrap().unwrap()).unwrap();
    t.commit().unwrap();
    (s, c)
}

/// Runs one transaction with the given inputs, alone, at snapshot isolation.
fn run_one(db: &Database, k: &mut SmallBankWorker<'_>, input: SmallBankInput) {
    k.set_input(input);
    let mut aborts = AbortCounts::default();
    run_txn(db, k, TxnOptions::new(Isolation::Snapshot), &mut aborts).unwrap();
    assert_eq!(aborts.total(), 0);
}

fn input(ty: usize, c1: u64, c2: u64, amount: i64) -> SmallBankInput {
    SmallBankInput { ty, c1, c2, amount }
}

#[test]
fn load_creates_every_account() {
    let (db, w) = loaded(cfg(1000), 3);
    assert_eq!(w.load_size(), 3000);
    let (cu, _, _) = w.tables();
    let mut t = db.begin(Isolation::Snapshot).unwrap();
    for id in [0u64, 1, 511, 512, 999] {
        let v = t.get(cu, customer_key(id)).unwrap().unwrap();
        assert_eq!(v, id.to_le_bytes(), "customer {id}'s name maps to its id");
    }
    assert_eq!(t.get(cu, customer_key(1000)).unwrap(), None);
    t.commit().unwrap();
    for id in [0u64, 7, 999] {
        assert_eq!(balances(&db, &w, id), (initial_balance(id, false), initial_balance(id, true)));
    }
    let (total, sav, chk) = w.total_money(&db).unwrap();
    assert_eq!((sav, chk), (1000, 1000));
    assert_eq!(total, w.initial_total());
    let ok = w.check_consistency(&db).unwrap();
    assert!(ok.contains("money") && ok.contains("1000 savings"), "{ok}");
}

/// The check of the rows alone (after recovery) proves every customer has
/// both accounts, and catches a missing or stray one.
#[test]
fn the_state_check_catches_a_missing_account() {
    let (db, w) = loaded(cfg(10), 1);
    let ok = w.check_state(&db).unwrap();
    assert!(ok.checked.contains("each of the 10 customers has a savings and a checking row"), "{ok:?}");
    assert!(ok.needs_run.starts_with("money"), "{ok:?}");
    let (cu, _, chk) = w.tables();
    let moved = db.run(Isolation::Serializable, |t| {
        let v = t.get(chk, Key::from_u64(4))?.unwrap();
        t.delete(chk, Key::from_u64(4))?;
        t.insert(chk, Key::from_u64(10), &v)
    });
    moved.unwrap();
    let e = w.check_state(&db).unwrap_err();
    assert!(e.contains("smallbank.checking row 10 is past the last customer (9)"), "{e}");
    db.run(Isolation::Serializable, |t| t.delete(chk, Key::from_u64(10))).unwrap();
    let e = w.check_state(&db).unwrap_err();
    assert!(e.contains("10 savings and 9 checking rows, expected 10 of each"), "{e}");
    db.run(Isolation::Serializable, |t| {
        t.insert(chk, Key::from_u64(4), 1i64.to_le_bytes())?;
        t.update(cu, customer_key(3), 4u64.to_le_bytes())
    })
    .unwrap();
    let e = w.check_state(&db).unwrap_err();
    assert!(e.contains("does not map a customer's name to its id"), "{e}");
}

#[test]
fn each_transaction_has_its_exact_effect() {
    let (db, w) = loaded(cfg(3), 1);
    let mut k = w.worker(0, 1);
    let (s0, c0) = balances(&db, &w, 0);
    let (s1, c1) = balances(&db, &w, 1);
    let (s2, c2) = balances(&db, &w, 2);
    let mut recorded = 0;

    // balance: reads both, changes nothing.
    run_one(&db, &mut k, input(BALANCE, 1, 1, 0));
    assert_eq!(k.last_balance(), s1 + c1);
    assert_eq!(k.pending_delta(), 0);
    assert_eq!(balances(&db, &w, 1), (s1, c1));

    // deposit-checking adds to checking only.
    run_one(&db, &mut k, input(DEPOSIT_CHECKING, 1, 1, 500));
    assert_eq!(balances(&db, &w, 1), (s1, c1 + 500));
    assert_eq!(k.pending_delta(), 500);
    recorded += 500;

    // transact-savings: a withdrawal that would overdraw is declined ...
    run_one(&db, &mut k, input(TRANSACT_SAVINGS, 1, 1, -(s1 + 1)));
    assert_eq!(k.outcome(), (true, false));
    assert_eq!(k.pending_delta(), 0);
    assert_eq!(balances(&db, &w, 1), (s1, c1 + 500));
    // ... one that empties the account exactly is not; a deposit adds.
    run_one(&db, &mut k, input(TRANSACT_SAVINGS, 1, 1, -s1));
    assert_eq!(k.outcome(), (false, false));
    assert_eq!(balances(&db, &w, 1), (0, c1 + 500));
    run_one(&db, &mut k, input(TRANSACT_SAVINGS, 1, 1, 250));
    assert_eq!(balances(&db, &w, 1), (250, c1 + 500));
    recorded += -s1 + 250;

    // write-check within the funds: no penalty.
    run_one(&db, &mut k, input(WRITE_CHECK, 2, 2, 300));
    assert_eq!(k.outcome(), (false, false));
    assert_eq!(balances(&db, &w, 2), (s2, c2 - 300));
    assert_eq!(k.pending_delta(), -300);
    recorded -= 300;
    // Above savings + checking: the amount plus the penalty.
    let over = s2 + c2 - 300 + 1;
    run_one(&db, &mut k, input(WRITE_CHECK, 2, 2, over));
    assert_eq!(k.outcome(), (false, true));
    assert_eq!(balances(&db, &w, 2), (s2, c2 - 300 - over - PENALTY));
    assert_eq!(k.pending_delta(), -(over + PENALTY));
    recorded -= over + PENALTY;
    // Exactly the funds: no penalty (the rule is "below V").
    let (s2b, c2b) = balances(&db, &w, 2);
    run_one(&db, &mut k, input(DEPOSIT_CHECKING, 2, 2, 10_000));
    run_one(&db, &mut k, input(WRITE_CHECK, 2, 2, s2b + c2b + 10_000));
    assert_eq!(k.outcome(), (false, false));
    assert_eq!(balances(&db, &w, 2), (s2b, -s2b));
    recorded += 10_000 - (s2b + c2b + 10_000);

    // amalgamate moves everything of customer 0 into customer 1's checking.
    let (s1n, c1n) = balances(&db, &w, 1);
    run_one(&db, &mut k, input(AMALGAMATE, 0, 1, 0));
    assert_eq!(balances(&db, &w, 0), (0, 0));
    assert_eq!(balances(&db, &w, 1), (s1n, c1n + s0 + c0));
    assert_eq!(k.pending_delta(), 0);

    k.finish();
    assert_eq!(w.recorded_delta(), recorded);
    assert_eq!(w.committed_by_type(), [1, 2, 3, 1, 3]);
    assert_eq!(w.declined_and_penalties(), (1, 1));
    let ok = w.check_consistency(&db).unwrap();
    assert!(ok.contains("1 savings transactions declined, 1 overdraft penalties"), "{ok}");
}

#[test]
fn a_missing_account_is_an_invariant_error_not_an_abort() {
    let (db, w) = loaded(cfg(3), 1);
    let mut k = w.worker(0, 1);
    k.set_input(input(DEPOSIT_CHECKING, 7, 7, 1));
    let e = run_txn(&db, &mut k, TxnOptions::new(Isolation::Snapshot), &mut AbortCounts::default()).unwrap_err();
    assert!(e.to_string().contains("customer row of customer 7 is missing"), "{e}");
    // A savings row deleted behind the workload's back.
    let (_, sav, _) = w.tables();
    db.run(Isolation::Snapshot, |t| t.delete(sav, Key::from_u64(1))).unwrap();
    k.set_input(input(TRANSACT_SAVINGS, 1, 1, 5));
    let e = run_txn(&db, &mut k, TxnOptions::new(Isolation::Snapshot), &mut AbortCounts::default()).unwrap_err();
    assert!(e.to_string().contains("savings row of customer 1 is missing"), "{e}");
    let e = w.check_consistency(&db).unwrap_err();
    assert!(e.contains("2 savings and 3 checking rows"), "{e}");
}

#[test]
fn the_generator_draws_valid_inputs_and_declares_them() {
    let (_db, w) = loaded(cfg(50), 1);
    let (cu, sav, chk) = w.tables();
    let mut k = w.worker(0, 3);
    let mut by_type = [0u32; 5];
    let mut access = AccessSet::default();
    for _ in 0..20_000 {
        k.next_txn();
        let i = k.input();
        by_type[i.ty] += 1;
        assert_eq!(k.txn_type(), i.ty);
        assert!(i.c1 < 50 && i.c2 < 50);
        match i.ty {
            AMALGAMATE => assert_ne!(i.c1, i.c2, "amalgamate needs two customers"),
            TRANSACT_SAVINGS => assert!((-MAX_AMOUNT..=MAX_AMOUNT).contains(&i.amount)),
            DEPOSIT_CHECKING | WRITE_CHECK => assert!((1..=MAX_AMOUNT).contains(&i.amount)),
            _ => {}
        }
        let ro = k.options(TxnOptions::new(Isolation::Serializable)).read_only;
        assert_eq!(ro, i.ty == BALANCE);
        k.declare(&mut access);
        let (a1, a2) = (Key::from_u64(i.c1), Key::from_u64(i.c2));
        assert_eq!(access.reads[0], (cu, customer_key(i.c1)));
        let want_writes: Vec<_> = match i.ty {
            BALANCE => vec![],
            DEPOSIT_CHECKING | WRITE_CHECK => vec![(chk, a1.clone())],
            TRANSACT_SAVINGS => vec![(sav, a1.clone())],
            AMALGAMATE => vec![(sav, a1.clone()), (chk, a1.clone()), (chk, a2.clone())],
            _ => unreachable!(),
        };
        assert_eq!(access.writes, want_writes);
        for wr in &access.writes {
            assert!(access.reads.contains(wr), "a read-modify-written row is also declared read");
        }
        if i.ty == AMALGAMATE {
            assert!(access.reads.contains(&(cu, customer_key(i.c2))));
        }
    }
    for n in by_type {
        assert!((3_600..4_400).contains(&n), "about 20% each: {by_type:?}");
    }
    // Same seed and thread, same inputs; another thread, others.
    let (mut a, mut b, mut c) = (w.worker(2, 9), w.worker(2, 9), w.worker(3, 9));
    let mut differ = false;
    for _ in 0..10 {
        a.next_txn();
        b.next_txn();
        c.next_txn();
        assert_eq!(a.input(), b.input());
        differ |= a.input() != c.input();
    }
    assert!(differ);
}

#[test]
fn a_mix_restricts_the_types() {
    let c = SmallBankConfig { customers: 1, spin_us: 0, mix: Mix::parse(TYPES, "balance:50,write-check:50").unwrap() };
    let (db, w) = loaded(c, 1);
    let mut k = w.worker(0, 5);
    let mut aborts = AbortCounts::default();
    for _ in 0..200 {
        k.next_txn();
        assert!(matches!(k.input().ty, BALANCE | WRITE_CHECK));
        run_txn(&db, &mut k, TxnOptions::new(Isolation::Serializable), &mut aborts).unwrap();
    }
    k.finish();
    let [b, d, t, a, wc] = w.committed_by_type();
    assert_eq!((b + wc, d, t, a), (200, 0, 0, 0));
    w.check_consistency(&db).unwrap();
}

/// Runs `threads` workers, `txns` transactions each, at `iso`, and checks the money.
fn concurrent(iso: Isolation, customers: u64, threads: usize, txns: u64) -> (AbortCounts, String) {
    let (db, w) = loaded(cfg(customers), threads);
    let start = std::sync::Barrier::new(threads);
    let aborts: Vec<AbortCounts> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                let (db, w, start) = (&db, &w, &start);
                s.spawn(move || {
                    let mut k = w.worker(i, 11);
                    start.wait();
                    let mut aborts = AbortCounts::default();
                    for _ in 0..txns {
                        k.next_txn();
                        run_txn(db, &mut k, TxnOptions::new(iso), &mut aborts).unwrap();
                    }
                    k.finish();
                    aborts
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = AbortCounts::default();
    for a in &aborts {
        all.merge(a);
    }
    assert_eq!(w.committed_by_type().iter().sum::<u64>(), threads as u64 * txns);
    let ok = w.check_consistency(&db).unwrap_or_else(|e| panic!("money invariant broken at {iso}: {e}"));
    assert_ne!(w.recorded_delta(), 0, "deposits and checks moved money");
    (all, ok)
}

/// Every balance change is an atomic read-modify-write under first-writer-wins,
/// so the money adds up at every level, read committed included.
#[test]
fn money_is_conserved_under_concurrency_at_every_level() {
    for iso in Isolation::ALL {
        // Five customers, two threads: hot, so conflicts happen and are retried.
        let (_aborts, ok) = concurrent(iso, 5, 2, 3_000);
        assert!(ok.contains("5 savings + 5 checking"), "{ok}");
    }
}

#[test]
fn the_check_catches_money_created_behind_its_back() {
    let (db, w) = loaded(cfg(20), 1);
    let mut k = w.worker(0, 2);
    let mut aborts = AbortCounts::default();
    for _ in 0..300 {
        k.next_txn();
        run_txn(&db, &mut k, TxnOptions::new(Isolation::Snapshot), &mut aborts).unwrap();
    }
    k.finish();
    w.check_consistency(&db).unwrap();
    let (_, _, chk) = w.tables();
    db.run(Isolation::Snapshot, |t| {
        t.update_with(chk, Key::from_u64(4), |old, new| {
            new.extend_from_slice(&(decode_balance(old).unwrap() + 1).to_le_bytes())
        })
    })
    .unwrap();
    let e = w.check_consistency(&db).unwrap_err();
    assert!(e.contains("0.01 appeared or vanished"), "{e}");
}

/// Two deposits into one account, interleaved: first-writer-wins aborts the
/// second; with that rule switched off (fault injection) the second overwrites
/// the first, and the check sees the lost money.
#[test]
fn the_check_catches_a_lost_update() {
    for broken in [false, true] {
        let opts =
            Options { faults: Faults { skip_write_conflicts: broken, ..Faults::default() }, ..Options::default() };
        let (db, w) = loaded_with(opts, cfg(2), 1);
        let (mut a, mut b) = (w.worker(0, 1), w.worker(1, 1));
        a.set_input(input(DEPOSIT_CHECKING, 0, 0, 700));
        b.set_input(input(DEPOSIT_CHECKING, 0, 0, 900));
        let mut ta = db.begin(Isolation::Snapshot).unwrap();
        let mut tb = db.begin(Isolation::Snapshot).unwrap();
        a.execute(&mut ta).unwrap();
        let rb = b.execute(&mut tb);
        ta.commit().unwrap();
        a.committed();
        if broken {
            rb.unwrap();
            tb.commit().unwrap();
            b.committed();
        } else {
            let e = rb.unwrap_err();
            assert!(e.to_string().contains("write-conflict"), "{e}");
        }
        a.finish();
        b.finish();
        let r = w.check_consistency(&db);
        if broken {
            // Both deposits installed a version of the row: two live versions
            // (or, with one of them lost, a sum short by 7.00 or 9.00).
            let e = r.unwrap_err();
            assert!(e.contains("3 checking rows") || e.contains("appeared or vanished"), "{e}");
        } else {
            r.unwrap();
            assert_eq!(balances(&db, &w, 0).1, initial_balance(0, true) + 700);
        }
    }
}

#[test]
fn transactions_spin_for_the_configured_time() {
    let c = SmallBankConfig { spin_us: 3_000, ..cfg(10) };
    let (db, w) = loaded(c, 1);
    let mut k = w.worker(0, 4);
    let mut aborts = AbortCounts::default();
    let start = Instant::now();
    for _ in 0..5 {
        k.next_txn();
        run_txn(&db, &mut k, TxnOptions::new(Isolation::ReadCommitted), &mut aborts).unwrap();
    }
    assert!(start.elapsed() >= Duration::from_millis(15), "5 transactions x 3 ms: {:?}", start.elapsed());
    assert_eq!(w.params()[1], ("spin_us", multiverse_workloads::Param::Int(3000)));
}

#[test]
fn setup_refuses_impossible_configurations() {
    let db = Database::new(Options::default()).unwrap();
    let e = SmallBank::setup(&db, cfg(0)).unwrap_err();
    assert!(e.contains("--customers must be at least 1"), "{e}");
    let e = SmallBank::setup(&db, cfg(1)).unwrap_err();
    assert!(e.contains("amalgamate needs two distinct customers"), "{e}");
    let e = SmallBank::setup(&db, SmallBankConfig { spin_us: 5_000_000, ..cfg(5) }).unwrap_err();
    assert!(e.contains("--spin-us 5000000 is too long"), "{e}");
    SmallBank::setup(&db, cfg(5)).unwrap();
    let e = SmallBank::setup(&db, cfg(5)).unwrap_err();
    assert!(e.contains("already exists"), "{e}");
}
