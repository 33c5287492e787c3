//! TATP on tiny databases: the non-uniform subscriber ids, the population,
//! each transaction's exact effect (and its expected failures), success rates
//! against the specification's, and the invariants after concurrent runs.

use multiverse::{AccessSet, Database, Isolation, Key, Options, TxnOptions};
use multiverse_workloads::tatp::*;
use multiverse_workloads::{load_parallel, run_txn, AbortCounts, Mix, Worker, Workload};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use std::collections::{BTreeMap, HashMap};

fn cfg(subscribers: u64) -> TatpConfig {
    TatpConfig { subscribers, mix: default_mix() }
}

/// A database with the population loaded by `parts` concurrent loaders.
fn loaded(c: TatpConfig, parts: usize) -> (Database, Tatp) {
    let db = Database::new(Options::default()).unwrap();
    let w = Tatp::setup(&db, c).unwrap();
    assert_eq!(load_parallel(&db, &w, parts).unwrap(), w.load_size(), "progress reports every loaded row");
    (db, w)
}

/// Every row of the four tables, by key.
#[derive(Clone, Debug, Default, PartialEq)]
struct Model {
    sub: BTreeMap<u64, Vec<u8>>,
    ai: BTreeMap<(u64, u8), Vec<u8>>,
    sf: BTreeMap<(u64, u8), Vec<u8>>,
    cf: BTreeMap<(u64, u8, u8), Vec<u8>>,
}

/// The population of subscribers `1..=p`, from the generator.
fn population(p: u64) -> Model {
    let mut m = Model::default();
    for s in 1..=p {
        populate(s, |row| match row {
            Row::Subscriber(v) => {
                m.sub.insert(s, v.to_vec());
            }
            Row::AccessInfo(t, v) => {
                m.ai.insert((s, t), v.to_vec());
            }
            Row::SpecialFacility(t, v) => {
                m.sf.insert((s, t), v.to_vec());
            }
            Row::CallForwarding(t, st, v) => {
                m.cf.insert((s, t, st), v.to_vec());
            }
        });
    }
    m
}

/// Every row in the database (one snapshot).
fn state(db: &Database, w: &Tatp) -> Model {
    let [sub, ai, sf, cf] = w.tables();
    let mut m = Model::default();
    let mut t = db.begin(Isolation::Snapshot).unwrap();
    t.scan(db.primary(sub), .., None, |k, v| {
        m.sub.insert(k.to_u64().unwrap(), v.to_vec());
        true
    })
    .unwrap();
    let id = |k: &Key| k.u32_at(0).unwrap() as u64;
    t.scan(db.primary(ai), .., None, |k, v| {
        m.ai.insert((id(k), k.as_bytes()[4]), v.to_vec());
        true
    })
    .unwrap();
    t.scan(db.primary(sf), .., None, |k, v| {
        m.sf.insert((id(k), k.as_bytes()[4]), v.to_vec());
        true
    })
    .unwrap();
    t.scan(db.primary(cf), .., None, |k, v| {
        m.cf.insert((id(k), k.as_bytes()[4], k.as_bytes()[5]), v.to_vec());
        true
    })
    .unwrap();
    t.commit().unwrap();
    m
}

/// Runs one transaction with the given inputs, alone; returns whether it succeeded.
fn run_one(db: &Database, k: &mut TatpWorker<'_>, input: TatpInput) -> bool {
    k.set_input(input);
    let mut aborts = AbortCounts::default();
    run_txn(db, k, TxnOptions::new(Isolation::Serializable), &mut aborts).unwrap();
    assert_eq!(aborts.total(), 0);
    k.succeeded()
}

fn input(ty: usize, s_id: u64) -> TatpInput {
    TatpInput { ty, s_id, ..TatpInput::default() }
}

// ---------------------------------------------------------------------------
// Non-uniform subscriber ids
// ---------------------------------------------------------------------------

#[test]
fn nurand_follows_the_formula() {
    assert_eq!(nurand(0, 1, 10), 2);
    assert_eq!(nurand(0, 10, 10), 1, "(0 | 10) % 10 + 1");
    assert_eq!(nurand(65_535, 1, 1_000_000), 65_536);
    assert_eq!(nurand(0b1010, 0b0101, 1_000_000), 16, "bitwise or");
    // Past P the or wraps around: (0xFFFF | 999,999) = 1,048,575.
    assert_eq!(nurand(65_535, 999_999, 1_000_000), 48_576);
    assert_eq!(SubscriberIds::new(1_000_000).a(), 65_535);
    assert_eq!(SubscriberIds::new(5_000_000).a(), 1_048_575);
    assert_eq!(SubscriberIds::new(20_000_000).a(), 2_097_151);
}

#[test]
fn subscriber_ids_stay_in_range_and_cover_small_populations() {
    let mut rng = SmallRng::seed_from_u64(1);
    for p in [1u64, 2, 7, 100, 65_536] {
        let ids = SubscriberIds::new(p);
        let mut seen = vec![false; p as usize + 1];
        for _ in 0..(p * 40).max(1000) {
            let s = ids.sample(&mut rng);
            assert!((1..=p).contains(&s), "{s} outside 1..={p}");
            seen[s as usize] = true;
        }
        if p <= 100 {
            assert!(seen[1..].iter().all(|&x| x), "every id of 1..={p} is drawn");
        }
    }
}

/// Mean number of ones among the low `bits` bits of `s_id - 1` over `n` draws.
fn mean_low_ones(mut draw: impl FnMut() -> u64, bits: u32, n: u32) -> f64 {
    let mask = (1u64 << bits) - 1;
    (0..n).map(|_| ((draw() - 1) & mask).count_ones() as f64).sum::<f64>() / n as f64
}

#[test]
fn subscriber_ids_favour_many_low_bits_set() {
    let mut rng = SmallRng::seed_from_u64(2);
    // P = 1M, A = 65535: each of the low 16 bits is one with probability
    // 3/4 (either operand), so 12 ones on average; uniform ids have 8.
    let p = 1_000_000;
    let ids = SubscriberIds::new(p);
    let skewed = mean_low_ones(|| ids.sample(&mut rng), 16, 200_000);
    let uniform = mean_low_ones(|| 1 + rng.next_u64() % p, 16, 200_000);
    assert!((11.8..12.2).contains(&skewed), "non-uniform: {skewed}");
    assert!((7.8..8.2).contains(&uniform), "uniform: {uniform}");
    // Above 10M subscribers A = 2^21 - 1: the low 21 bits are skewed.
    let ids = SubscriberIds::new(20_000_000);
    let skewed = mean_low_ones(|| ids.sample(&mut rng), 21, 200_000);
    assert!((15.5..16.0).contains(&skewed), "21 bits x 3/4 = 15.75: {skewed}");

    // Hot keys: the ids whose low 16 bits hold 14 or more ones are 0.21% of
    // the population but draw about 20% of the requests (3/4 per bit).
    let p = 200_000;
    let ids = SubscriberIds::new(p);
    let hot = |s: u64| ((s - 1) & 0xFFFF).count_ones() >= 14;
    let hot_ids = (1..=p).filter(|&s| hot(s)).count() as f64 / p as f64;
    let n = 200_000;
    let hits = (0..n).filter(|_| hot(ids.sample(&mut rng))).count() as f64 / n as f64;
    assert!(hot_ids < 0.003, "{hot_ids}");
    assert!((0.17..0.23).contains(&hits), "hot ids drew {hits} of the requests");
}

// ---------------------------------------------------------------------------
// Population
// ---------------------------------------------------------------------------

#[test]
fn population_follows_the_specification() {
    let p = 4000;
    let m = population(p);
    assert_eq!(m.sub.len(), p as usize);
    let mut per = HashMap::<u64, (u32, u32)>::new();
    let mut active = 0;
    for (&s, v) in &m.sub {
        assert_eq!(v.len(), SUB_LEN);
        assert_eq!(&v[..15], &sub_nbr(s));
        let bits = u16::from_le_bytes([v[SUB_BITS], v[SUB_BITS + 1]]);
        assert!(bits < 1 << 10, "ten bits");
        assert!(v[17..27].iter().all(|&h| h < 16), "hex fields are 4-bit");
        for at in [SUB_MSC, SUB_VLR] {
            assert_ne!(u32::from_le_bytes(v[at..at + 4].try_into().unwrap()), 0, "locations are 1..2^32-1");
        }
    }
    for (&(s, t), v) in &m.ai {
        assert!((1..=4).contains(&t) && v.len() == AI_LEN);
        assert!(v[2..10].iter().all(u8::is_ascii_uppercase));
        per.entry(s).or_default().0 += 1;
    }
    for (&(s, t), v) in &m.sf {
        assert!((1..=4).contains(&t) && v.len() == SF_LEN && v[0] <= 1);
        assert!(v[3..8].iter().all(u8::is_ascii_uppercase));
        active += v[0] as u32;
        per.entry(s).or_default().1 += 1;
    }
    for s in 1..=p {
        let (ai, sf) = per[&s];
        assert!((1..=4).contains(&ai) && (1..=4).contains(&sf), "subscriber {s}: {ai} ai, {sf} sf");
        assert_eq!(shape(s).counts().0, ai as u64);
    }
    let mut cf_per_sf = HashMap::<(u64, u8), u32>::new();
    for (&(s, t, st), v) in &m.cf {
        assert!(m.sf.contains_key(&(s, t)), "call forwarding ({s},{t},{st}) without its special facility");
        assert!(START_TIMES.contains(&st));
        assert!((st + 1..=st + 8).contains(&v[0]), "end_time {} for start {st}", v[0]);
        assert!(v[1..].iter().all(u8::is_ascii_digit));
        *cf_per_sf.entry((s, t)).or_default() += 1;
    }
    assert!(cf_per_sf.values().all(|&n| n <= 3));
    // Uniform counts: 2.5 access infos and special facilities per
    // subscriber, 1.5 call forwardings per special facility; 85% active.
    let pf = p as f64;
    let (ai, sf, cf) = (m.ai.len() as f64 / pf, m.sf.len() as f64 / pf, m.cf.len() as f64 / m.sf.len() as f64);
    assert!((2.43..2.57).contains(&ai) && (2.43..2.57).contains(&sf) && (1.44..1.56).contains(&cf), "{ai} {sf} {cf}");
    let act = active as f64 / m.sf.len() as f64;
    assert!((0.83..0.87).contains(&act), "{act}");
    // The counts the workload computes up front agree, and populating twice gives the same rows.
    let c = cfg(p).initial_counts();
    assert_eq!(
        (c.subscribers, c.access_info, c.special_facility, c.call_forwarding),
        (p, m.ai.len() as u64, m.sf.len() as u64, m.cf.len() as u64)
    );
    assert_eq!(population(50), population(50));
}

#[test]
fn load_inserts_exactly_the_population() {
    let p = 300;
    let (db, w) = loaded(cfg(p), 3);
    assert_eq!(state(&db, &w), population(p));
    assert_eq!(w.load_size(), w.initial_counts().total());
    assert_eq!(w.counts(&db).unwrap(), w.initial_counts());
    let ok = w.check_consistency(&db).unwrap();
    assert!(ok.contains("300 subscribers, each found by its sub_nbr alone"), "{ok}");
    assert!(ok.contains("no transactions"), "{ok}");
}

// ---------------------------------------------------------------------------
// Each transaction on a tiny database
// ---------------------------------------------------------------------------

#[test]
fn the_queries_return_exactly_the_specified_rows() {
    let p = 40;
    let (db, w) = loaded(cfg(p), 1);
    let m = population(p);
    let mut k = w.worker(0, 1);
    let (mut gnd_ok, mut gnd_fail) = (0, 0);
    for s in 1..=p {
        assert!(run_one(&db, &mut k, input(GET_SUBSCRIBER_DATA, s)));
        assert_eq!(&k.last_read()[..], &m.sub[&s][..]);
        for t in 1..=4u8 {
            let ok = run_one(&db, &mut k, TatpInput { ai_type: t, ..input(GET_ACCESS_DATA, s) });
            assert_eq!(ok, m.ai.contains_key(&(s, t)), "get-access-data ({s}, {t})");
            if ok {
                assert_eq!(&k.last_read()[..AI_LEN], &m.ai[&(s, t)][..]);
            }
            for st in START_TIMES {
                for et in 1..=24u8 {
                    // The specification's query, evaluated on the model.
                    let want = match m.sf.get(&(s, t)) {
                        Some(v) if v[0] == 1 => {
                            m.cf.range((s, t, 0)..=(s, t, u8::MAX))
                                .filter(|(&(_, _, cst), v)| cst <= st && et < v[0])
                                .count() as u32
                        }
                        _ => 0,
                    };
                    let i = TatpInput { sf_type: t, start_time: st, end_time: et, ..input(GET_NEW_DESTINATION, s) };
                    let ok = run_one(&db, &mut k, i);
                    assert_eq!((ok, k.found()), (want > 0, want), "get-new-destination {i:?}");
                    if ok {
                        gnd_ok += 1;
                    } else {
                        gnd_fail += 1;
                    }
                }
            }
        }
    }
    assert!(gnd_ok > 100 && gnd_fail > 100, "both outcomes occur: {gnd_ok} / {gnd_fail}");
    assert_eq!(state(&db, &w), m, "queries change nothing");
    assert_ne!(k.checksum(), 0);
}

#[test]
fn the_updates_change_exactly_the_specified_fields() {
    let p = 40;
    let (db, w) = loaded(cfg(p), 1);
    let mut m = population(p);
    let mut k = w.worker(0, 1);
    let mut ok_n = [0u64; 7];
    let mut all_n = [0u64; 7];
    let mut count = |ty: usize, ok: bool| {
        all_n[ty] += 1;
        ok_n[ty] += ok as u64;
    };

    // update-subscriber-data: bit_1 and data_a when the facility exists, nothing otherwise.
    for s in 1..=p {
        for t in 1..=4u8 {
            let bit = (s + t as u64) % 2 == 1;
            let i = TatpInput { sf_type: t, bit, data_a: 200 + t, ..input(UPDATE_SUBSCRIBER_DATA, s) };
            let ok = run_one(&db, &mut k, i);
            count(UPDATE_SUBSCRIBER_DATA, ok);
            assert_eq!(ok, m.sf.contains_key(&(s, t)));
            if ok {
                m.sf.get_mut(&(s, t)).unwrap()[SF_DATA_A] = 200 + t;
                let v = m.sub.get_mut(&s).unwrap();
                v[SUB_BITS] = (v[SUB_BITS] & !1) | bit as u8;
            }
        }
    }
    assert_eq!(state(&db, &w), m, "after update-subscriber-data");

    // update-location: vlr_location of the subscriber found by sub_nbr.
    for s in 1..=p {
        let vlr = 0xABCD_0000 + s as u32;
        assert!(run_one(&db, &mut k, TatpInput { vlr, ..input(UPDATE_LOCATION, s) }));
        count(UPDATE_LOCATION, true);
        m.sub.get_mut(&s).unwrap()[SUB_VLR..SUB_VLR + 4].copy_from_slice(&vlr.to_le_bytes());
    }
    assert_eq!(state(&db, &w), m, "after update-location");

    // insert-call-forwarding: only with the special facility, never over an existing row.
    let numberx = *b"555000111222333";
    for s in 1..=p {
        for t in 1..=4u8 {
            for st in START_TIMES {
                let i = TatpInput {
                    sf_type: t,
                    start_time: st,
                    end_time: st + 1 + (s % 8) as u8,
                    numberx,
                    ..input(INSERT_CALL_FORWARDING, s)
                };
                let ok = run_one(&db, &mut k, i);
                count(INSERT_CALL_FORWARDING, ok);
                let want = m.sf.contains_key(&(s, t)) && !m.cf.contains_key(&(s, t, st));
                assert_eq!(ok, want, "insert-call-forwarding {i:?}");
                if ok {
                    let mut v = vec![i.end_time];
                    v.extend_from_slice(&numberx);
                    m.cf.insert((s, t, st), v);
                }
            }
        }
    }
    assert_eq!(state(&db, &w), m, "after insert-call-forwarding");
    // Now every special facility has all three call forwardings: more inserts all fail.
    for s in 1..=3 {
        for t in 1..=4u8 {
            let ok = run_one(&db, &mut k, TatpInput { sf_type: t, start_time: 8, ..input(INSERT_CALL_FORWARDING, s) });
            count(INSERT_CALL_FORWARDING, ok);
            assert!(!ok);
        }
    }

    // delete-call-forwarding: removes the row if it exists.
    for s in (1..=p).step_by(2) {
        for t in 1..=4u8 {
            for st in [0u8, 16] {
                let i = TatpInput { sf_type: t, start_time: st, ..input(DELETE_CALL_FORWARDING, s) };
                let ok = run_one(&db, &mut k, i);
                count(DELETE_CALL_FORWARDING, ok);
                assert_eq!(ok, m.cf.remove(&(s, t, st)).is_some(), "delete-call-forwarding {i:?}");
            }
        }
    }
    // Deleting again finds nothing.
    assert!(!run_one(&db, &mut k, TatpInput { sf_type: 1, start_time: 0, ..input(DELETE_CALL_FORWARDING, 1) }));
    count(DELETE_CALL_FORWARDING, false);
    assert_eq!(state(&db, &w), m, "after delete-call-forwarding");

    // The worker's tallies reach the workload, and the check accepts the result.
    k.finish();
    let outcomes = w.outcomes();
    for ty in 0..7 {
        assert_eq!(outcomes[ty], (all_n[ty], ok_n[ty]), "{}", TYPES[ty]);
    }
    let cf0 = w.initial_counts().call_forwarding as i64;
    assert_eq!(cf0 + w.cf_delta(), m.cf.len() as i64);
    let ok = w.check_consistency(&db).unwrap();
    assert!(ok.contains(&format!("{} call_forwarding rows", m.cf.len())), "{ok}");
    assert!(ok.contains("update-location 100.0%"), "{ok}");
}

#[test]
fn a_missing_subscriber_is_an_invariant_error() {
    let (db, w) = loaded(cfg(5), 1);
    let mut k = w.worker(0, 1);
    for ty in [GET_SUBSCRIBER_DATA, UPDATE_LOCATION, INSERT_CALL_FORWARDING, DELETE_CALL_FORWARDING] {
        k.set_input(input(ty, 6));
        let e = run_txn(&db, &mut k, TxnOptions::new(Isolation::Snapshot), &mut AbortCounts::default()).unwrap_err();
        assert!(e.to_string().contains("subscriber 6 not found"), "{}: {e}", TYPES[ty]);
    }
}

// ---------------------------------------------------------------------------
// Generator, success rates, concurrency, the check
// ---------------------------------------------------------------------------

#[test]
fn the_generator_draws_valid_inputs_and_declares_them() {
    let (_db, w) = loaded(cfg(100), 1);
    let [sub, ai, sf, cf] = w.tables();
    let mut k = w.worker(0, 7);
    let mut by_type = [0u32; 7];
    let mut access = AccessSet::default();
    for _ in 0..50_000 {
        k.next_txn();
        let i = k.input();
        by_type[i.ty] += 1;
        assert_eq!(k.txn_type(), i.ty);
        assert!((1..=100).contains(&i.s_id));
        assert!((1..=4).contains(&i.sf_type) && (1..=4).contains(&i.ai_type));
        assert!(START_TIMES.contains(&i.start_time));
        match i.ty {
            GET_NEW_DESTINATION => assert!((1..=24).contains(&i.end_time)),
            INSERT_CALL_FORWARDING => {
                assert!((i.start_time + 1..=i.start_time + 8).contains(&i.end_time));
                assert!(i.numberx.iter().all(u8::is_ascii_digit));
            }
            UPDATE_LOCATION => assert_ne!(i.vlr, 0),
            _ => {}
        }
        let ro = k.options(TxnOptions::new(Isolation::Serializable)).read_only;
        assert_eq!(ro, matches!(i.ty, GET_SUBSCRIBER_DATA | GET_NEW_DESTINATION | GET_ACCESS_DATA));
        k.declare(&mut access);
        let s = i.s_id;
        let (reads, writes): (Vec<_>, Vec<_>) = match i.ty {
            GET_SUBSCRIBER_DATA => (vec![(sub, sub_key(s))], vec![]),
            GET_NEW_DESTINATION => {
                // The lookup by special facility reads every start time's
                // row (the query filters after): all are declared.
                let mut r = vec![(sf, sf_key(s, i.sf_type))];
                r.extend(START_TIMES.iter().map(|&st| (cf, cf_key(s, i.sf_type, st))));
                (r, vec![])
            }
            GET_ACCESS_DATA => (vec![(ai, ai_key(s, i.ai_type))], vec![]),
            UPDATE_SUBSCRIBER_DATA => {
                let rw = vec![(sf, sf_key(s, i.sf_type)), (sub, sub_key(s))];
                (rw.clone(), rw)
            }
            UPDATE_LOCATION => (vec![(sub, sub_key(s))], vec![(sub, sub_key(s))]),
            INSERT_CALL_FORWARDING => {
                let mut r = vec![(sub, sub_key(s))];
                r.extend((1..=4).map(|t| (sf, sf_key(s, t))));
                (r, vec![(cf, cf_key(s, i.sf_type, i.start_time))])
            }
            DELETE_CALL_FORWARDING => (vec![(sub, sub_key(s))], vec![(cf, cf_key(s, i.sf_type, i.start_time))]),
            _ => unreachable!(),
        };
        assert_eq!((&access.reads, &access.writes), (&reads, &writes), "{}", TYPES[i.ty]);
    }
    for (ty, n) in by_type.iter().enumerate() {
        let want = DEFAULT_PCT[ty] / 100.0 * 50_000.0;
        assert!((*n as f64 - want).abs() < 0.1 * want + 100.0, "{}: {n} of 50,000", TYPES[ty]);
    }
}

/// With every type at an equal share, each type's success rate matches the
/// specification's (and, for get-new-destination, the exact value under
/// the rules implemented: see the module docs).
#[test]
fn success_rates_match_the_specification() {
    let equal = Mix::parse(TYPES, "get-subscriber-data:10,get-new-destination:30,get-access-data:12,update-subscriber-data:12,update-location:12,insert-call-forwarding:12,delete-call-forwarding:12").unwrap();
    let (db, w) = loaded(TatpConfig { subscribers: 2000, mix: equal }, 2);
    let mut k = w.worker(0, 13);
    let mut aborts = AbortCounts::default();
    for _ in 0..20_000 {
        k.next_txn();
        run_txn(&db, &mut k, TxnOptions::new(Isolation::ReadCommitted), &mut aborts).unwrap();
    }
    k.finish();
    // get-new-destination: P(facility exists and is active) = 5/8 * 0.85; P(a
    // call forwarding qualifies) = 0.27836 (exactly 0.147876880787037 in all).
    let expected = [1.0, 0.1479, 0.625, 0.625, 1.0, 0.3125, 0.3125];
    for (ty, (c, s)) in w.outcomes().into_iter().enumerate() {
        let rate = s as f64 / c as f64;
        assert!((rate - expected[ty]).abs() < 0.035, "{}: {rate:.3} of {c}, expected {}", TYPES[ty], expected[ty]);
    }
    w.check_consistency(&db).unwrap();
}

/// Runs `threads` workers, `txns` transactions each, at `iso`; the check must pass.
fn concurrent(iso: Isolation, subscribers: u64, mix: &str, threads: usize, txns: u64) -> String {
    let (db, w) = loaded(TatpConfig { subscribers, mix: Mix::parse(TYPES, mix).unwrap() }, threads);
    let start = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        for i in 0..threads {
            let (db, w, start) = (&db, &w, &start);
            s.spawn(move || {
                let mut k = w.worker(i, 21);
                let mut aborts = AbortCounts::default();
                start.wait();
                for _ in 0..txns {
                    k.next_txn();
                    run_txn(db, &mut k, TxnOptions::new(iso), &mut aborts).unwrap();
                }
                k.finish();
            });
        }
    });
    let total: u64 = w.outcomes().iter().map(|(c, _)| c).sum();
    assert_eq!(total, threads as u64 * txns);
    w.check_consistency(&db).unwrap_or_else(|e| panic!("tatp check failed at {iso}: {e}"))
}

#[test]
fn concurrent_runs_keep_the_database_consistent() {
    // 30 subscribers and a write-heavy mix: inserts and deletes of the same
    // call forwardings collide; the row count must still add up.
    let writes = "get-new-destination:10,update-subscriber-data:15,update-location:25,\
                  insert-call-forwarding:25,delete-call-forwarding:25";
    for iso in Isolation::ALL {
        let ok = concurrent(iso, 30, writes, 2, 2_000);
        assert!(ok.contains("30 subscribers"), "{ok}");
    }
    // The specification's mix, a little larger.
    concurrent(Isolation::Snapshot, 500, &default_mix().to_string(), 2, 3_000);
    concurrent(Isolation::Serializable, 500, &default_mix().to_string(), 2, 3_000);
}

#[test]
fn the_check_catches_changes_behind_its_back() {
    let (db, w) = loaded(cfg(50), 1);
    w.check_consistency(&db).unwrap();
    let [sub, _, sf, cf] = w.tables();
    let m = population(50);
    // A call forwarding deleted without a transaction of the workload.
    let (&(s, t, st), _) = m.cf.iter().next().unwrap();
    db.run(Isolation::Snapshot, |x| x.delete(cf, cf_key(s, t, st))).unwrap();
    let e = w.check_consistency(&db).unwrap_err();
    assert!(e.contains("call_forwarding rows, but") && e.contains("0 inserted and 0 deleted"), "{e}");
    db.run(Isolation::Snapshot, |x| x.insert(cf, cf_key(s, t, st), &m.cf[&(s, t, st)])).unwrap();
    w.check_consistency(&db).unwrap();
    // A special facility deleted: the population no longer matches.
    let (&(s2, t2), _) = m.sf.iter().find(|(k, _)| !m.cf.keys().any(|c| (c.0, c.1) == **k)).unwrap();
    db.run(Isolation::Snapshot, |x| x.delete(sf, sf_key(s2, t2))).unwrap();
    let e = w.check_consistency(&db).unwrap_err();
    assert!(e.contains(&format!("subscriber {s2} has access_info types")), "{e}");
    db.run(Isolation::Snapshot, |x| x.insert(sf, sf_key(s2, t2), &m.sf[&(s2, t2)])).unwrap();
    // A call forwarding without its special facility.
    let lonely = (1..=50).find(|&s| !m.sf.contains_key(&(s, 4))).unwrap();
    db.run(Isolation::Snapshot, |x| x.insert(cf, cf_key(lonely, 4, 0), [3; CF_LEN])).unwrap();
    let e = w.check_consistency(&db).unwrap_err();
    assert!(e.contains("has no special_facility"), "{e}");
    db.run(Isolation::Snapshot, |x| x.delete(cf, cf_key(lonely, 4, 0))).unwrap();
    // A subscriber whose sub_nbr changed.
    let mut v = m.sub[&7].clone();
    v[..15].copy_from_slice(&sub_nbr(8));
    db.run(Isolation::Snapshot, |x| x.update(sub, sub_key(7), &v)).unwrap();
    let e = w.check_consistency(&db).unwrap_err();
    assert!(e.contains("subscriber 7 has sub_nbr 000000000000008"), "{e}");
}

#[test]
fn setup_refuses_impossible_configurations() {
    let db = Database::new(Options::default()).unwrap();
    let e = Tatp::setup(&db, cfg(0)).unwrap_err();
    assert!(e.contains("--subscribers must be at least 1"), "{e}");
    Tatp::setup(&db, cfg(5)).unwrap();
    let e = Tatp::setup(&db, cfg(5)).unwrap_err();
    assert!(e.contains("already exists"), "{e}");
}
