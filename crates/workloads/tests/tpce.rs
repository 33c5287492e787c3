//! TPC-E and TPC-EH on a few dozen customers: the population and its
//! consistency, each transaction type alone, concurrent mixes at several
//! isolation levels, and checks that fail on a corrupted database.

use multiverse::{Database, Isolation, Key, Options, TableId, TxnOptions};
use multiverse_workloads::tpce::*;
use multiverse_workloads::{load_parallel, run_txn, AbortCounts, Mix, Worker, Workload};

const CUSTOMERS: u64 = 40;

fn cfg(mix: &str) -> TpceConfig {
    TpceConfig { customers: CUSTOMERS, trade_days: 1, mix: Mix::parse(TYPES, mix).unwrap(), ..TpceConfig::default() }
}

/// A database with the population loaded by `parts` concurrent loaders.
fn loaded(c: TpceConfig, parts: usize) -> (Database, Tpce) {
    let db = Database::new(Options::default()).unwrap();
    let w = Tpce::setup(&db, c).unwrap();
    assert_eq!(load_parallel(&db, &w, parts).unwrap(), w.load_size(), "progress reports every unit");
    (db, w)
}

fn table(w: &Tpce, name: &str) -> TableId {
    w.table(name).unwrap()
}

/// Every row of a table with its key.
fn rows(db: &Database, t: TableId) -> Vec<(Key, Vec<u8>)> {
    let mut out = Vec::new();
    let mut x = db.begin(Isolation::Snapshot).unwrap();
    x.scan(db.primary(t), .., None, |k, v| {
        out.push((k.clone(), v.to_vec()));
        true
    })
    .unwrap();
    x.commit().unwrap();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Runs `n` transactions on one worker at `level`; the committed ones.
fn run(db: &Database, w: &Tpce, thread: usize, n: usize, level: Isolation) -> u64 {
    let mut k = w.worker(thread, 42);
    let mut aborts = AbortCounts::default();
    let mut committed = 0;
    for _ in 0..n {
        k.next_txn();
        committed += run_txn(db, &mut k, TxnOptions::new(level), &mut aborts).unwrap() as u64;
    }
    k.finish();
    committed
}

#[test]
fn population_is_consistent_and_deterministic() {
    let (db, w) = loaded(cfg("trade-status:100"), 3);
    let c = w.config().clone();
    let accounts = account_count(CUSTOMERS);
    assert_eq!(rows(&db, table(&w, names::CUSTOMER)).len() as u64, CUSTOMERS);
    assert_eq!(rows(&db, table(&w, names::CUSTOMER_ACCOUNT)).len() as u64, accounts);
    assert_eq!(rows(&db, table(&w, names::SECURITY)).len() as u64, c.securities() as u64);
    assert_eq!(rows(&db, table(&w, names::LAST_TRADE)).len() as u64, c.securities() as u64);
    assert_eq!(rows(&db, table(&w, names::COMPANY)).len() as u64, c.companies() as u64);
    assert_eq!(rows(&db, table(&w, names::BROKER)).len() as u64, c.brokers() as u64);
    assert_eq!(rows(&db, table(&w, names::DAILY_MARKET)).len() as u64, c.securities() as u64 * DM_DAYS as u64);
    let trades = rows(&db, table(&w, names::TRADE));
    let want: u64 = (1..=CUSTOMERS)
        .flat_map(|c| (0..accounts_of(c)).map(move |k| c << 4 | k))
        .map(|ca| initial_trades(&c, ca))
        .sum();
    assert_eq!(trades.len() as u64, want);
    // About 57.6 trades per customer and day.
    assert!((CUSTOMERS * 40..CUSTOMERS * 75).contains(&want), "{want} trades");
    let pending = trades.iter().filter(|(_, v)| v[T_ST] == ST_PNDG).count();
    let submitted = trades.iter().filter(|(_, v)| v[T_ST] == ST_SBMT).count();
    assert!(pending > 0 && submitted > 0, "{pending} pending, {submitted} submitted");
    assert!(pending + submitted < trades.len() / 10);
    assert!(!rows(&db, table(&w, names::HOLDING_SUMMARY)).is_empty());
    // Customer 7 is found by its tax id.
    let by_tax = db.index(table(&w, names::CUSTOMER), "by_tax_id").unwrap();
    let mut tax = [0u8; 20];
    tax_id(7, &mut tax);
    let found = db
        .run(Isolation::Snapshot, |x| {
            let mut found = vec![];
            x.get_by(by_tax, Key::from_bytes(&tax).unwrap(), |pk, _| {
                found.push(pk.to_u64().unwrap());
                true
            })?;
            Ok(found)
        })
        .unwrap();
    assert_eq!(found, [7]);
    let state = w.check_state(&db).unwrap();
    assert!(state.checked.contains("agree"), "{state:?}");
    assert!(w.check_consistency(&db).is_ok());
    // The same rows at another number of loaders.
    let (db1, w1) = loaded(cfg("trade-status:100"), 1);
    for name in [names::TRADE, names::HOLDING, names::HOLDING_SUMMARY, names::CUSTOMER_ACCOUNT, names::MARKET] {
        assert_eq!(rows(&db, table(&w, name)), rows(&db1, table(&w1, name)), "{name}");
    }
}

#[test]
fn each_transaction_alone_commits_and_keeps_consistency() {
    for (ty, name) in TYPES.iter().enumerate() {
        let (db, w) = loaded(cfg(&format!("{name}:100")), 2);
        let committed = run(&db, &w, 1, 30, Isolation::Serializable);
        assert!(committed >= 25, "{name}: {committed} of 30 committed");
        assert_eq!(w.committed()[ty], committed, "{name}");
        let r = w.check_consistency(&db);
        assert!(r.is_ok(), "{name}: {r:?}");
        let (ordered, completed, assets) = w.tallies();
        match ty {
            TRADE_ORDER => assert_eq!(ordered, committed),
            TRADE_RESULT => assert_eq!(completed, committed, "the load leaves submitted trades"),
            ASSET_EVAL => assert_eq!(assets, committed * w.config().asset_eval_accounts()),
            _ => assert_eq!((ordered, completed, assets), (0, 0, 0), "{name}"),
        }
    }
}

#[test]
fn each_transaction_finds_rows() {
    let (db, w) = loaded(cfg("trade-status:100"), 2);
    let mut k = w.worker(2, 9);
    let mut aborts = AbortCounts::default();
    for (ty, name) in TYPES.iter().enumerate() {
        // A generator of this type's inputs (bound to a database of its own).
        let gdb = Database::new(Options::default()).unwrap();
        let g = Tpce::setup(&gdb, cfg(&format!("{name}:100"))).unwrap();
        let mut gen = g.worker(3, 77);
        let (mut rows, mut triggered) = (0, 0);
        for _ in 0..20 {
            gen.next_txn();
            k.set_input(gen.input());
            run_txn(&db, &mut k, TxnOptions::new(Isolation::Snapshot), &mut aborts).unwrap();
            rows += k.outcome().rows;
            triggered += k.outcome().triggered;
        }
        assert!(rows > 0, "{name} found nothing in 20 runs");
        if ty == MARKET_FEED {
            assert!(triggered > 0, "market-feed triggered no limit order");
        }
    }
    assert!(w.check_state(&db).is_ok());
}

#[test]
fn trade_order_then_result_completes_the_trade() {
    let (db, w) = loaded(cfg("trade-order:50,trade-result:50"), 2);
    let mut k = w.worker(0, 7);
    let mut aborts = AbortCounts::default();
    let mut i = TpceInput { ty: TRADE_ORDER, tt: TT_TMB, t_id: RUN_TRADE | 5, qty: 200, ..TpceInput::default() };
    i.ca = 1 << 4;
    k.set_input(i);
    assert!(run_txn(&db, &mut k, TxnOptions::new(Isolation::Serializable), &mut aborts).unwrap());
    let trade = table(&w, names::TRADE);
    let get =
        |t: TableId, key: Key| db.run(Isolation::Snapshot, |x| x.get(t, key.clone())).unwrap().map(|v| v.to_vec());
    assert_eq!(get(trade, k64(RUN_TRADE | 5)).unwrap()[T_ST], ST_SBMT);
    // A limit order that rolls back leaves nothing.
    k.set_input(TpceInput { tt: TT_TLB, t_id: RUN_TRADE | 6, rollback: true, ..i });
    assert!(!run_txn(&db, &mut k, TxnOptions::new(Isolation::Serializable), &mut aborts).unwrap());
    assert!(get(trade, k64(RUN_TRADE | 6)).is_none());
    // Trade-Result of worker 0 finds the trade in its shard (the oldest first).
    let mut done = false;
    for _ in 0..200 {
        k.set_input(TpceInput { ty: TRADE_RESULT, seq: 0, ..TpceInput::default() });
        assert!(run_txn(&db, &mut k, TxnOptions::new(Isolation::Serializable), &mut aborts).unwrap());
        if k.outcome().trade == RUN_TRADE | 5 {
            done = true;
            break;
        }
        assert_ne!(k.outcome().trade, 0, "a submitted trade was left");
    }
    assert!(done);
    let v = get(trade, k64(RUN_TRADE | 5)).unwrap();
    assert_eq!(v[T_ST], ST_CMPT);
    assert!(get(table(&w, names::SETTLEMENT), k64(RUN_TRADE | 5)).is_some());
    assert!(w.check_state(&db).is_ok());
}

#[test]
fn mixes_run_concurrently_at_every_level() {
    for (mix, level) in [
        (default_mix(), Isolation::Serializable),
        (tpceh_mix(), Isolation::Snapshot),
        (tpceh_mix(), Isolation::ReadCommitted),
        (default_mix(), Isolation::RepeatableRead),
    ] {
        let c = TpceConfig { customers: CUSTOMERS, trade_days: 1, mix, asset_eval_fraction: 0.05, heterogeneous: true };
        let (db, w) = loaded(c, 2);
        std::thread::scope(|s| {
            for th in 0..3 {
                let (db, w) = (&db, &w);
                s.spawn(move || run(db, w, th, 60, level));
            }
        });
        let r = w.check_consistency(&db);
        assert!(r.is_ok(), "{level:?}: {r:?}");
    }
}

/// Rewrites one row of `t` with `f` and returns the old value.
fn corrupt(db: &Database, t: TableId, key: &Key, f: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    db.run(Isolation::Serializable, |x| {
        let old = x.get(t, key.clone())?.unwrap().to_vec();
        let mut new = old.clone();
        f(&mut new);
        x.update(t, key.clone(), &new)?;
        Ok(old)
    })
    .unwrap()
}

#[test]
fn checks_fail_on_a_corrupted_database() {
    let (db, w) = loaded(cfg("trade-status:100"), 2);
    assert!(w.check_state(&db).is_ok());
    let restore = |t: TableId, key: &Key, old: Vec<u8>| {
        db.run(Isolation::Serializable, |x| x.update(t, key.clone(), &old)).unwrap();
        assert!(w.check_state(&db).is_ok());
    };
    // A holding summary off by one.
    let hs = table(&w, names::HOLDING_SUMMARY);
    let (key, _) = rows(&db, hs).remove(0);
    let old = corrupt(&db, hs, &key, |v| v[0] = v[0].wrapping_add(1));
    assert!(w.check_state(&db).unwrap_err().contains("holding summary"));
    restore(hs, &key, old);
    // A balance that is not its cash transactions.
    let ca = table(&w, names::CUSTOMER_ACCOUNT);
    let (key, _) = rows(&db, ca).remove(3);
    let old = corrupt(&db, ca, &key, |v| v[CA_BAL] ^= 1);
    assert!(w.check_state(&db).unwrap_err().contains("balance"));
    restore(ca, &key, old);
    // A complete trade turned pending (it has a settlement).
    let trade = table(&w, names::TRADE);
    let (key, _) = rows(&db, trade).into_iter().find(|(_, v)| v[T_ST] == ST_CMPT).unwrap();
    let old = corrupt(&db, trade, &key, |v| v[T_ST] = ST_SBMT);
    let e = w.check_state(&db).unwrap_err();
    assert!(e.contains("has a settlement") || e.contains("market queue"), "{e}");
    restore(trade, &key, old);
    // A broker that counts a trade it did not complete.
    let broker = table(&w, names::BROKER);
    let (key, _) = rows(&db, broker).remove(0);
    let old = corrupt(&db, broker, &key, |v| v[B_NUM_TRADES] += 1);
    assert!(w.check_state(&db).unwrap_err().contains("broker"));
    restore(broker, &key, old);
    // A submitted trade taken off the market queue.
    let market = table(&w, names::MARKET);
    let (key, _) = rows(&db, market).remove(0);
    db.run(Isolation::Serializable, |x| x.delete(market, key.clone())).unwrap();
    assert!(w.check_state(&db).unwrap_err().contains("market queue"));
    // And after a run, the counts: a fresh database's tallies are the run's.
    let (db, w) = loaded(cfg("trade-order:100"), 2);
    run(&db, &w, 0, 10, Isolation::Serializable);
    let trade = table(&w, names::TRADE);
    let (key, _) = rows(&db, trade).into_iter().find(|(k, _)| k.to_u64().unwrap() & RUN_TRADE != 0).unwrap();
    db.run(Isolation::Serializable, |x| {
        x.delete(trade, key.clone())?;
        for t in [names::TRADE_HISTORY, names::MARKET, names::TRADE_REQUEST] {
            let t = table(&w, t);
            let mut keys = Vec::new();
            x.scan(db.primary(t), .., None, |k, _| {
                if k.as_bytes().windows(8).any(|b| b == key.as_bytes()) {
                    keys.push(k.clone());
                }
                true
            })?;
            for k in keys {
                x.delete(t, k)?;
            }
        }
        Ok(())
    })
    .unwrap();
    assert!(w.check_state(&db).is_ok(), "{:?}", w.check_state(&db));
    assert!(w.check_consistency(&db).unwrap_err().contains("ordered by committed Trade-Orders"));
}

#[test]
fn config_is_validated() {
    assert!(TpceConfig::default().validate().is_ok());
    assert!(TpceConfig::tpceh().validate().is_ok());
    let c = |customers, trade_days, f| TpceConfig {
        customers,
        trade_days,
        asset_eval_fraction: f,
        ..TpceConfig::default()
    };
    assert!(c(0, 1, 0.2).validate().unwrap_err().contains("at least 1"));
    assert!(c(MAX_CUSTOMERS + 1, 1, 0.2).validate().unwrap_err().contains("too large"));
    assert!(c(10, 0, 0.2).validate().unwrap_err().contains("--trade-days"));
    assert!(c(10, 1, 0.0).validate().unwrap_err().contains("--asset-eval-fraction"));
    assert!(c(10, 1, f64::NAN).validate().is_err());
    // The mixes add up to 100, and TPC-EH's is the paper's list.
    assert_eq!(DEFAULT_PCT.iter().sum::<f64>().round(), 100.0);
    assert_eq!(TPCEH_PCT.iter().sum::<f64>().round(), 100.0);
    assert_eq!(TPCEH_PCT[ASSET_EVAL], 20.0);
    assert!(Mix::parse(TYPES, "asset-eval:50,frobnicate:50").unwrap_err().contains("unknown transaction type"));
}
