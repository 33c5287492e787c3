//! The Zipfian generator against the exact distribution, and YCSB (BOHM
//! section 4.2) on tiny databases: loading, each transaction type's exact
//! accesses and effects, and the counters after concurrent runs.

mod common;

use common::spy_run;
use multiverse::protocol::bohm::{self, Done, Next, Outcome};
use multiverse::Protocol;
use multiverse::{AccessSet, Database, Isolation, Key, Options, TxnOptions};
use multiverse_workloads::ycsb::{
    decode, intact, Rmw, Ycsb, YcsbConfig, YcsbWorker, OP10, RMW10, RMW2_R8, SCAN, TYPES,
};
use multiverse_workloads::zipf::{scramble, zeta, Zipf, ZipfKind};
use multiverse_workloads::{run_txn, AbortCounts, Mix, Worker, WorkerProc, Workload};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::collections::HashSet;

// ---------------------------------------------------------------------------
// Zipf
// ---------------------------------------------------------------------------

/// Counts of each rank in `samples` draws (index 0 unused).
fn histogram(z: &Zipf, samples: u64, seed: u64) -> Vec<u64> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut h = vec![0u64; z.n() as usize + 1];
    for _ in 0..samples {
        let k = z.sample(&mut rng);
        assert!((1..=z.n()).contains(&k), "rank {k} out of 1..={}", z.n());
        h[k as usize] += 1;
    }
    h
}

/// Pearson's chi-square of `h` against Zipf(n, theta), with every rank whose
/// expected count is at least 30 in its own bin and the rest pooled in
/// bins of at least that much. Returns (statistic, degrees of freedom).
fn chi_square(h: &[u64], n: u64, theta: f64) -> (f64, usize) {
    let samples: u64 = h.iter().sum();
    let z = zeta(n, theta);
    let (mut chi, mut bins) = (0.0, 0usize);
    let (mut obs, mut exp) = (0.0, 0.0);
    for k in 1..=n {
        obs += h[k as usize] as f64;
        exp += samples as f64 * (k as f64).powf(-theta) / z;
        if exp >= 30.0 || k == n {
            chi += (obs - exp) * (obs - exp) / exp;
            bins += 1;
            (obs, exp) = (0.0, 0.0);
        }
    }
    (chi, bins - 1)
}

/// A chi-square this large has a probability far below 1e-6 for a correct
/// generator (about six standard deviations above the mean).
fn too_large(chi: f64, df: usize) -> bool {
    chi > df as f64 + 6.0 * (2.0 * df as f64).sqrt()
}

#[test]
fn zipf_frequencies_match_the_exact_distribution() {
    let n = 1000;
    for theta in [0.2, 0.5, 0.9, 0.99, 1.0, 1.2, 2.0] {
        let z = Zipf::new(n, theta).unwrap();
        let samples = 400_000;
        let h = histogram(&z, samples, 11);
        let (chi, df) = chi_square(&h, n, theta);
        assert!(!too_large(chi, df), "theta {theta}: chi-square {chi:.1} with {df} degrees of freedom");
        // The top ranks one by one, within five standard deviations.
        let zt = zeta(n, theta);
        for k in 1..=10u64 {
            let exp = samples as f64 * z.probability(k, zt);
            let dev = (h[k as usize] as f64 - exp).abs();
            assert!(dev < 5.0 * exp.sqrt() + 1.0, "theta {theta} rank {k}: {} draws, expected {exp:.0}", h[k as usize]);
        }
    }
}

#[test]
fn the_chi_square_test_rejects_a_slightly_wrong_distribution() {
    // The statistics above can fail: theta 0.85 drawn, 0.9 expected.
    let h = histogram(&Zipf::new(1000, 0.85).unwrap(), 400_000, 11);
    let (chi, df) = chi_square(&h, 1000, 0.9);
    assert!(too_large(chi, df), "chi-square {chi:.1} with {df} degrees of freedom");
    // And so would Gray et al.'s approximation, which draws rank 3 of
    // Zipf(1000, 0.9) with probability 0.0410 instead of 0.0354.
    let z = zeta(1000, 0.9);
    let exact3 = 3f64.powf(-0.9) / z;
    assert!((exact3 - 0.03535).abs() < 1e-4, "{exact3}");
    let exp = 400_000.0 * exact3;
    let gray = 400_000.0 * 0.0410;
    assert!((gray - exp) > 5.0 * exp.sqrt());
}

#[test]
fn zipf_over_a_million_ranks_matches_at_the_top() {
    let (n, theta) = (1_000_000, 0.9);
    let z = Zipf::new(n, theta).unwrap();
    let zt = zeta(n, theta);
    let samples = 300_000;
    let h = histogram(&z, samples, 5);
    for k in 1..=5u64 {
        let exp = samples as f64 * z.probability(k, zt);
        let dev = (h[k as usize] as f64 - exp).abs();
        assert!(dev < 5.0 * exp.sqrt(), "rank {k}: {} draws, expected {exp:.0}", h[k as usize]);
    }
    // Ranks above 1000 together.
    let tail: u64 = h[1001..].iter().sum();
    let exp_tail = samples as f64 * (1.0 - zeta(1000, theta) / zt);
    assert!((tail as f64 - exp_tail).abs() < 5.0 * exp_tail.sqrt(), "tail {tail}, expected {exp_tail:.0}");
}

#[test]
fn theta_zero_is_uniform() {
    let z = Zipf::new(100, 0.0).unwrap();
    let h = histogram(&z, 200_000, 3);
    let (chi, df) = chi_square(&h, 100, 0.0);
    assert_eq!(df, 99);
    assert!(!too_large(chi, df), "chi-square {chi:.1}");
    assert!(h[1..].iter().all(|&c| (1700..2300).contains(&c)), "{h:?}");
}

#[test]
fn zipf_values_stay_in_range() {
    for n in [1u64, 2, 3, 10, 1_000_000_000_000] {
        for theta in [0.0, 0.5, 0.9, 1.0, 3.0, 50.0, 100.0] {
            let z = Zipf::new(n, theta).unwrap();
            let mut rng = SmallRng::seed_from_u64(n ^ theta.to_bits());
            let (mut lo, mut hi) = (u64::MAX, 0);
            for _ in 0..20_000 {
                let k = z.sample(&mut rng);
                lo = lo.min(k);
                hi = hi.max(k);
            }
            assert!(lo >= 1 && hi <= n, "n {n} theta {theta}: {lo}..={hi}");
            if n <= 3 && theta <= 1.0 {
                assert_eq!((lo, hi), (1, n), "n {n} theta {theta}: every rank appears");
            }
        }
    }
    // Very steep: essentially always rank 1.
    let h = histogram(&Zipf::new(1000, 100.0).unwrap(), 10_000, 1);
    assert_eq!(h[1], 10_000);
}

#[test]
fn zipf_is_deterministic_per_seed() {
    let z = Zipf::new(1000, 0.9).unwrap();
    let draw = |seed| {
        let mut rng = SmallRng::seed_from_u64(seed);
        (0..100).map(|_| z.sample(&mut rng)).collect::<Vec<_>>()
    };
    assert_eq!(draw(1), draw(1));
    assert_ne!(draw(1), draw(2));
}

// ---------------------------------------------------------------------------
// YCSB
// ---------------------------------------------------------------------------

fn cfg(rows: u64, value_bytes: usize, theta: f64, mix: &str) -> YcsbConfig {
    YcsbConfig {
        rows,
        value_bytes,
        theta,
        scan_records: 50,
        mix: Mix::parse(TYPES, mix).unwrap(),
        prefetch: true,
        write_pct: 50,
        rmw: Default::default(),
        zipf: ZipfKind::Exact,
        scramble: false,
        allow_repeats: false,
    }
}

fn loaded(c: YcsbConfig, parts: usize) -> (Database, Ycsb) {
    let db = Database::new(Options::default()).unwrap();
    let w = Ycsb::setup(&db, c).unwrap();
    std::thread::scope(|s| {
        for p in 0..parts {
            let (db, w) = (&db, &w);
            s.spawn(move || w.load(db, p, parts, &|_: u64| {}).unwrap());
        }
    });
    (db, w)
}

/// Every record's counter (checking its layout).
fn counters(db: &Database, w: &Ycsb) -> Vec<u64> {
    let len = w.config().value_bytes;
    let mut t = db.begin(Isolation::Snapshot).unwrap();
    let v = (0..w.config().rows)
        .map(|k| {
            let v = t.get(w.table(), Key::from_u64(k)).unwrap().unwrap_or_else(|| panic!("record {k} missing"));
            let (key, c) = decode(&v, len).unwrap_or_else(|| panic!("record {k} damaged"));
            assert_eq!(key, k);
            c
        })
        .collect();
    t.commit().unwrap();
    v
}

#[test]
fn load_writes_every_record_once() {
    let (db, w) = loaded(cfg(1000, 100, 0.0, "10rmw:100"), 3);
    assert_eq!(counters(&db, &w), vec![0; 1000]);
    assert_eq!(db.stats().versions_alive, 1000);
    let mut t = db.begin(Isolation::Snapshot).unwrap();
    assert_eq!(t.get(w.table(), Key::from_u64(1000)).unwrap(), None, "keys are 0..rows");
    assert_eq!(t.get(w.table(), Key::from_u64(5)).unwrap().unwrap().len(), 100);
    t.commit().unwrap();
    assert_eq!(w.load_size(), 1000);
    assert!(w.estimated_bytes() >= 1000 * 100);
    assert_eq!(w.txn_types(), TYPES);
    assert_eq!(
        w.check_consistency(&db).unwrap(),
        "1000 records intact; their counters add up to the 0 committed read-modify-writes"
    );
}

#[test]
fn ten_rmw_increments_ten_distinct_records_once() {
    let (db, w) = loaded(cfg(100, 64, 0.9, "10rmw:100"), 1);
    let mut k = w.worker(0, 1);
    let mut want = vec![0u64; 100];
    for _ in 0..50 {
        k.next_txn();
        assert_eq!(k.txn_type(), RMW10);
        let keys = k.keys().to_vec();
        assert_eq!(keys.iter().collect::<HashSet<_>>().len(), 10, "distinct: {keys:?}");
        assert!(keys.iter().all(|&x| x < 100));
        assert!(!k.options(TxnOptions::new(Isolation::Snapshot)).read_only);
        let (r, wr) = spy_run("ycsb", &db, &mut k, Isolation::Serializable);
        assert!(r.is_empty(), "read-modify-writes only: {r:?}");
        assert_eq!(wr, keys);
        for x in keys {
            want[x as usize] += 1;
        }
    }
    assert_eq!(counters(&db, &w), want);
    assert_eq!(k.committed_rmws(), 500);
}

#[test]
fn two_rmw_eight_reads_modify_exactly_two() {
    let (db, w) = loaded(cfg(100, 1000, 0.0, "2rmw-8r:100"), 2);
    let mut k = w.worker(0, 2);
    let mut want = vec![0u64; 100];
    for _ in 0..50 {
        k.next_txn();
        assert_eq!(k.txn_type(), RMW2_R8);
        let keys = k.keys().to_vec();
        assert_eq!(keys.iter().collect::<HashSet<_>>().len(), 10);
        let (r, wr) = spy_run("ycsb", &db, &mut k, Isolation::Snapshot);
        assert_eq!((&r[..], &wr[..]), (&keys[2..], &keys[..2]), "eight reads, then two read-modify-writes");
        want[keys[0] as usize] += 1;
        want[keys[1] as usize] += 1;
    }
    assert_eq!(counters(&db, &w), want);
    assert_eq!(k.committed_rmws(), 100);
    assert_ne!(k.checksum(), 0, "reads saw the counters");
}

#[test]
fn scans_read_n_distinct_uniform_records_read_only() {
    let (db, w) = loaded(cfg(1000, 32, 0.9, "scan:100"), 1);
    let mut k = w.worker(0, 3);
    let mut hits = vec![0u32; 1000];
    for _ in 0..400 {
        k.next_txn();
        assert_eq!(k.txn_type(), SCAN);
        assert!(k.options(TxnOptions::new(Isolation::ReadCommitted)).read_only);
        let keys = k.scan_keys().to_vec();
        assert_eq!(keys.len(), 50);
        assert_eq!(keys.iter().collect::<HashSet<_>>().len(), 50, "distinct");
        let (r, wr) = spy_run("ycsb", &db, &mut k, Isolation::Serializable);
        assert_eq!(r, keys, "a scan reads its records, in order");
        assert!(wr.is_empty());
        for x in keys {
            hits[x as usize] += 1;
        }
    }
    // 20,000 reads over 1,000 records: about 20 each, uniform although theta is 0.9.
    assert!(hits.iter().all(|&h| (1..=50).contains(&h)), "{hits:?}");
    assert_eq!(counters(&db, &w), vec![0; 1000]);
    assert_eq!(k.committed_rmws(), 0);
    // A scan of the whole table reads every record once.
    let (db, w) = loaded(YcsbConfig { scan_records: 64, ..cfg(64, 16, 0.0, "scan:100") }, 1);
    let mut k = w.worker(1, 3);
    for _ in 0..5 {
        k.next_txn();
        let (mut r, _) = spy_run("ycsb", &db, &mut k, Isolation::Snapshot);
        r.sort_unstable();
        assert_eq!(r, (0..64).collect::<Vec<_>>());
    }
}

/// How often each of a 1,000-row table's keys is drawn by 2,000 short
/// transactions of one worker.
fn key_hits(w: &Ycsb) -> Vec<u32> {
    let mut k = w.worker(0, 4);
    let mut hits = vec![0u32; 1000];
    for _ in 0..2000 {
        k.next_txn();
        for &x in k.keys() {
            hits[x as usize] += 1;
        }
    }
    hits
}

#[test]
fn hot_records_are_the_low_keys() {
    let (_db, w) = loaded(cfg(1000, 16, 0.9, "10rmw:100"), 1);
    let hits = key_hits(&w);
    // Key 0 (p = 0.09 per draw) is in most transactions; the upper half is
    // cold (12% of the draws over 500 keys).
    assert!(hits[0] > 1000, "key 0 drawn {} times", hits[0]);
    let upper = hits[500..].iter().sum::<u32>() as f64 / 500.0;
    assert!(hits[0] as f64 > 50.0 * upper, "key 0 {} vs {upper} per key of the upper half", hits[0]);
    // Uniform: no key stands out.
    let (_db, w) = loaded(cfg(1000, 16, 0.0, "10rmw:100"), 1);
    let hits = key_hits(&w);
    assert!(hits.iter().all(|&h| h < 50), "max {}", hits.iter().max().unwrap());
}

#[test]
fn a_steep_distribution_on_ten_records_still_draws_them_all() {
    let (_db, w) = loaded(cfg(10, 16, 50.0, "10rmw:50,2rmw-8r:50"), 1);
    let mut k = w.worker(0, 5);
    for _ in 0..100 {
        k.next_txn();
        let mut keys = k.keys().to_vec();
        keys.sort_unstable();
        assert_eq!(keys, (0..10).collect::<Vec<_>>());
    }
}

#[test]
fn declared_access_sets_match_the_transactions() {
    let (_db, w) = loaded(cfg(500, 16, 0.5, "10rmw:34,2rmw-8r:33,scan:33"), 1);
    let mut k = w.worker(0, 6);
    let mut a = AccessSet::default();
    let mut seen = [false; 3];
    for _ in 0..60 {
        k.next_txn();
        seen[k.txn_type()] = true;
        k.declare(&mut a);
        let r: Vec<u64> = a.reads.iter().map(|(_, x)| x.to_u64().unwrap()).collect();
        let wr: Vec<u64> = a.writes.iter().map(|(_, x)| x.to_u64().unwrap()).collect();
        assert!(a.reads.iter().chain(&a.writes).all(|(t, _)| *t == w.table()));
        match k.txn_type() {
            RMW10 => assert_eq!((&r[..], &wr[..]), (k.keys(), k.keys()), "an RMW reads and writes"),
            RMW2_R8 => assert_eq!((&r[..], &wr[..]), (k.keys(), &k.keys()[..2])),
            _ => assert_eq!((&r[..], wr.len()), (k.scan_keys(), 0)),
        }
    }
    assert_eq!(seen, [true; 3]);
}

#[test]
fn sequential_mixed_runs_match_a_model_at_every_level() {
    for iso in Isolation::ALL {
        let (db, w) = loaded(cfg(200, 40, 0.9, "10rmw:40,2rmw-8r:40,scan:20"), 2);
        let mut k = w.worker(0, 7);
        let mut want = vec![0u64; 200];
        let mut types = [0u32; 3];
        let mut aborts = AbortCounts::default();
        for _ in 0..500 {
            k.next_txn();
            types[k.txn_type()] += 1;
            run_txn(&db, &mut k, TxnOptions::new(iso), &mut aborts).unwrap();
            let n = [10, 2, 0][k.txn_type()];
            for &x in &k.keys()[..n] {
                want[x as usize] += 1;
            }
        }
        assert_eq!(aborts.total(), 0, "no concurrency, no aborts at {iso}");
        assert!(types.iter().zip([200, 200, 100]).all(|(&t, e)| t.abs_diff(e) < 60), "{types:?}");
        assert_eq!(counters(&db, &w), want, "at {iso}");
        let total: u64 = want.iter().sum();
        assert_eq!(k.committed_rmws(), total);
        assert!(w.check_consistency(&db).is_err(), "the worker has not handed in its tally yet");
        k.finish();
        assert_eq!(w.committed_rmws(), total);
        let ok = w.check_consistency(&db).unwrap();
        assert!(ok.contains(&format!("the {total} committed")), "{ok}");
    }
}

#[test]
fn concurrent_runs_land_every_rmw_exactly_once() {
    for iso in [Isolation::ReadCommitted, Isolation::Snapshot, Isolation::Serializable] {
        // 30 hot records, three threads: conflicts, aborts and retries.
        let c = YcsbConfig { scan_records: 20, ..cfg(30, 24, 0.9, "10rmw:45,2rmw-8r:45,scan:10") };
        let (db, w) = loaded(c, 3);
        let aborts: u64 = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3)
                .map(|i| {
                    let (db, w) = (&db, &w);
                    s.spawn(move || {
                        let mut k = w.worker(i, 9);
                        let mut aborts = AbortCounts::default();
                        let opts = TxnOptions::new(iso);
                        for _ in 0..300 {
                            k.next_txn();
                            run_txn(db, &mut k, opts, &mut aborts).unwrap();
                        }
                        k.finish();
                        aborts.total()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(db.stats().aborted(), aborts, "every abort was counted by the driver");
        let sum: u64 = counters(&db, &w).iter().sum();
        assert_eq!(sum, w.committed_rmws(), "at {iso}");
        assert!(sum > 900, "about 5.4 RMWs per transaction committed: {sum}");
        w.check_consistency(&db).unwrap();
    }
}

#[test]
fn the_consistency_check_catches_lost_and_damaged_records() {
    let (db, w) = loaded(cfg(50, 40, 0.0, "10rmw:100"), 1);
    let mut k = w.worker(0, 8);
    let mut aborts = AbortCounts::default();
    for _ in 0..10 {
        k.next_txn();
        run_txn(&db, &mut k, TxnOptions::new(Isolation::Snapshot), &mut aborts).unwrap();
    }
    k.finish();
    w.check_consistency(&db).unwrap();
    // A counter bumped behind the workload's back: one update too many.
    let key = Key::from_u64(3);
    db.run(Isolation::Snapshot, |t| {
        t.update_with(w.table(), &key, |old, new| {
            new.extend_from_slice(old);
            new[8] = new[8].wrapping_add(1);
        })
    })
    .unwrap();
    let e = w.check_consistency(&db).unwrap_err();
    assert!(e.contains("add up to 101") && e.contains("100 read-modify-writes"), "{e}");
    // A damaged value.
    db.run(Isolation::Snapshot, |t| t.update(w.table(), &key, [0u8; 40])).unwrap();
    let e = w.check_consistency(&db).unwrap_err();
    assert!(e.contains("record 3 has a damaged value"), "{e}");
    // And the workload notices a damaged record it modifies.
    let mut k = w.worker(1, 8);
    let mut aborts = AbortCounts::default();
    let mut failed = None;
    for _ in 0..100 {
        k.next_txn();
        if let Err(e) = run_txn(&db, &mut k, TxnOptions::new(Isolation::Snapshot), &mut aborts) {
            failed = Some(e.to_string());
            break;
        }
    }
    let e = failed.expect("some transaction touched record 3");
    assert!(e.contains("record 3") && e.contains("damaged"), "{e}");
}

#[test]
fn setup_refuses_bad_configurations() {
    let db = Database::new(Options::default()).unwrap();
    let e = Ycsb::setup(&db, cfg(9, 16, 0.0, "10rmw:100")).unwrap_err();
    assert!(e.contains("only 9"), "{e}");
    let e = Ycsb::setup(&db, cfg(100, 16, -1.0, "10rmw:100")).unwrap_err();
    assert!(e.contains("--theta") && e.contains("out of range"), "{e}");
    let e = Ycsb::setup(&db, cfg(100, 8, 0.0, "10rmw:100")).unwrap_err();
    assert!(e.contains("--value-bytes 8"), "{e}");
    let e = Ycsb::setup(&db, YcsbConfig { scan_records: 101, ..cfg(100, 16, 0.0, "scan:100") }).unwrap_err();
    assert!(e.contains("only 100"), "{e}");
    let d = YcsbConfig::default();
    assert_eq!((d.rows, d.value_bytes, d.theta, d.scan_records), (1_000_000, 1000, 0.0, 10_000));
    assert_eq!(d.mix.to_string(), "10rmw:100");
    Ycsb::setup(&db, cfg(100, 16, 0.9, "10rmw:100")).unwrap();
    let e = Ycsb::setup(&db, cfg(100, 16, 0.9, "10rmw:100")).unwrap_err();
    assert!(e.contains("already exists"), "{e}");
}

/// CCBench's YCSB: ten distinct records, each read or blindly written
/// (`--write-pct`), values as small as 4 bytes; every protocol keeps the
/// records intact.
#[test]
fn ten_op_reads_or_blindly_writes_ten_distinct_records() {
    for protocol in [multiverse::Protocol::MvOcc, multiverse::Protocol::Silo] {
        let db = Database::new(Options { protocol, ..Options::default() }).unwrap();
        let w = Ycsb::setup(&db, cfg(200, 4, 0.9, "10op:100")).unwrap();
        w.load(&db, 0, 1, &|_: u64| {}).unwrap();
        let mut k = w.worker(0, 7);
        let iso = protocol.strongest();
        let (mut reads, mut writes) = (0, 0);
        for _ in 0..200 {
            k.next_txn();
            assert_eq!(k.txn_type(), OP10);
            let keys = k.keys().to_vec();
            assert_eq!(keys.iter().collect::<HashSet<_>>().len(), 10, "distinct: {keys:?}");
            let mut access = AccessSet::default();
            k.declare(&mut access);
            let (r, wr) = spy_run("ycsb", &db, &mut k, iso);
            assert_eq!(r.len() + wr.len(), 10, "each record once");
            let ids = |v: &[(multiverse::TableId, Key)]| v.iter().map(|(_, k)| k.to_u64().unwrap()).collect::<Vec<_>>();
            assert_eq!((ids(&access.reads), ids(&access.writes)), (r.clone(), wr.clone()), "declared as done");
            (reads, writes) = (reads + r.len(), writes + wr.len());
        }
        // 2,000 operations, half of them writes: far from all or none.
        assert!((800..1200).contains(&writes), "{writes} writes, {reads} reads");
        let msg = w.check_consistency(&db).unwrap();
        assert!(msg.contains("200 records intact"), "{msg}");
    }
    let mut v = Vec::new();
    multiverse_workloads::ycsb::initial_value(300, 4, &mut v);
    assert!(intact(&v, 300, 4) && !intact(&v, 301, 4) && !intact(&v[..3], 300, 4));
}

#[test]
fn small_values_and_write_shares_are_checked() {
    let db = Database::new(Options::default()).unwrap();
    let e = Ycsb::setup(&db, cfg(100, 4, 0.0, "10rmw:100")).unwrap_err();
    assert!(e.contains("--value-bytes 4 is out of range: 16 to"), "{e}");
    let e = Ycsb::setup(&db, cfg(100, 3, 0.0, "10op:100")).unwrap_err();
    assert!(e.contains("--value-bytes 3 is out of range: 4 to"), "{e}");
    let e = Ycsb::setup(&db, YcsbConfig { write_pct: 101, ..cfg(100, 8, 0.0, "10op:100") }).unwrap_err();
    assert!(e.contains("--write-pct 101"), "{e}");
}

// ---------------------------------------------------------------------------
// Keys as peers draw them: --zipf gray, --scramble, --allow-repeats
// ---------------------------------------------------------------------------

/// Gray et al.'s generator, scrambled, repeats allowed, at theta 0.99: a
/// hot table on which transactions often draw a record twice.
fn peer_cfg(rows: u64, mix: &str) -> YcsbConfig {
    YcsbConfig {
        zipf: ZipfKind::Gray,
        scramble: true,
        allow_repeats: true,
        scan_records: 10,
        ..cfg(rows, 24, 0.99, mix)
    }
}

fn ids(v: &[(multiverse::TableId, Key)]) -> Vec<u64> {
    v.iter().map(|(_, k)| k.to_u64().unwrap()).collect()
}

#[test]
fn with_allow_repeats_a_transaction_may_modify_a_record_twice() {
    let (db, w) = loaded(peer_cfg(20, "10rmw:100"), 1);
    let mut k = w.worker(0, 11);
    let mut want = vec![0u64; 20];
    let mut repeated = 0;
    for _ in 0..100 {
        k.next_txn();
        let keys = k.keys().to_vec();
        assert!(keys.iter().all(|&x| x < 20), "{keys:?}");
        if keys.iter().collect::<HashSet<_>>().len() < keys.len() {
            repeated += 1;
        }
        let mut a = AccessSet::default();
        k.declare(&mut a);
        assert_eq!((ids(&a.reads), ids(&a.writes)), (keys.clone(), keys.clone()), "declared, repeats included");
        let (r, wr) = spy_run("ycsb", &db, &mut k, Isolation::Serializable);
        assert!(r.is_empty(), "{r:?}");
        assert_eq!(wr, keys, "every draw modified, a repeated record once per draw");
        for x in keys {
            want[x as usize] += 1;
        }
    }
    // Ten draws over 20 keys, the hottest with p ≈ 0.28: nearly always a repeat.
    assert!(repeated > 80, "{repeated} of 100 transactions repeated a record");
    assert_eq!(counters(&db, &w), want, "a second read-modify-write of a record saw the first");
    k.finish();
    w.check_consistency(&db).unwrap();

    // The same draws without repeats: distinct, as by default.
    let (_db, w) = loaded(YcsbConfig { allow_repeats: false, ..peer_cfg(20, "10rmw:50,2rmw-8r:25,10op:25") }, 1);
    let mut k = w.worker(0, 11);
    for _ in 0..100 {
        k.next_txn();
        assert_eq!(k.keys().iter().collect::<HashSet<_>>().len(), 10, "distinct: {:?}", k.keys());
    }
}

#[test]
fn scrambled_hot_records_spread_over_the_table() {
    for zipf in [ZipfKind::Exact, ZipfKind::Gray] {
        let c = YcsbConfig { zipf, scramble: true, ..cfg(1000, 16, 0.9, "10rmw:100") };
        let (_db, w) = loaded(c, 1);
        let hits = key_hits(&w);
        // Rank 1 (p = 0.09 per draw) is now key scramble(0) (211), not key 0.
        let hot = scramble(0, 1000) as usize;
        assert_eq!(hot, 211);
        assert!(hits[hot] > 1000, "{zipf:?}: key {hot} drawn {} times", hits[hot]);
        assert!(hits[0] < 100, "{zipf:?}: key 0 drawn {} times", hits[0]);
        // The ten hottest ranks' keys are not neighbours.
        let top: Vec<u64> = (0..10).map(|r| scramble(r, 1000)).collect();
        assert!(top.iter().max().unwrap() - top.iter().min().unwrap() > 500, "{top:?}");
    }
}

/// A BOHM feed of `left` transactions over a pool of workers (one per
/// transaction in flight), as the bench harness runs them.
struct BohmFeed<'w> {
    pool: Vec<WorkerProc<YcsbWorker<'w>>>,
    left: u32,
    committed: u32,
    failure: Option<String>,
}

impl<'w> bohm::Feed<WorkerProc<YcsbWorker<'w>>> for BohmFeed<'w> {
    fn next(&mut self, _idle: bool) -> Next<WorkerProc<YcsbWorker<'w>>> {
        if self.left == 0 || self.failure.is_some() {
            return Next::Stop;
        }
        let Some(mut p) = self.pool.pop() else { return Next::Wait };
        self.left -= 1;
        p.worker.next_txn();
        p.ty = p.worker.txn_type();
        Next::Txn(p)
    }

    fn done(&mut self, d: Done<WorkerProc<YcsbWorker<'w>>>) {
        let mut p = d.proc;
        match d.outcome {
            Outcome::Committed => {
                p.worker.committed();
                self.committed += 1;
            }
            Outcome::Aborted(e) => self.failure = Some(e.to_string()),
            Outcome::Refused(e) => self.failure = Some(e.to_string()),
        }
        self.pool.push(p);
    }
}

/// Runs `txns` transactions of `w` on `db`: through BOHM's pipeline, or on
/// two threads at the protocol's strongest level. Every worker finishes,
/// and every commit is visible afterwards (POMVCC: not a given).
fn run_some(db: &Database, w: &Ycsb, txns: u32) {
    if db.protocol() == Protocol::Bohm {
        let cfg = bohm::Config { exec_threads: 2, batch_size: 16, batches_in_flight: 2, ..bohm::Config::default() };
        let pool = (0..48).map(|i| WorkerProc { worker: w.worker(i, 12), ty: 0 }).collect();
        let feed = BohmFeed { pool, left: txns, committed: 0, failure: None };
        let (mut feed, _) = db.bohm_run(cfg, feed).unwrap();
        assert_eq!(feed.failure, None);
        assert_eq!(feed.committed, txns, "every BOHM transaction commits");
        feed.pool.iter_mut().for_each(|p| p.worker.finish());
        return;
    }
    let opts = TxnOptions::new(db.protocol().strongest());
    std::thread::scope(|s| {
        for i in 0..2 {
            s.spawn(move || {
                let mut k = w.worker(i, 12);
                let mut aborts = AbortCounts::default();
                for _ in 0..txns / 2 {
                    k.next_txn();
                    let r = run_txn(db, &mut k, opts, &mut aborts);
                    let c = w.config();
                    let what = format!("{} {} {:?} {}", db.protocol(), c.mix, c.rmw, k.txn_type());
                    assert!(r.unwrap_or_else(|e| panic!("{what}: {e}, keys {:?}", k.keys())), "{what}");
                }
                k.finish();
            });
        }
    });
    db.sync_commits().unwrap();
}

/// Gray's keys, scrambled and repeating, under protocols of each family
/// and each read-modify-write style: every read-modify-write lands exactly
/// once (the counters add up), also when a transaction modifies a record
/// twice, and `10op`'s reads and blind writes keep every record intact.
#[test]
fn peer_key_draws_run_under_every_protocol_family() {
    let protocols = [
        Protocol::MvOcc,
        Protocol::MvLock,
        Protocol::OneVLock,
        Protocol::Silo,
        Protocol::TwoPlOrdered,
        Protocol::Ssi,
        Protocol::Pomvcc,
        Protocol::Bohm,
    ];
    for protocol in protocols {
        let on = |c: YcsbConfig| {
            let db = Database::new(Options { protocol, ..Options::default() }).unwrap();
            let w = Ycsb::setup(&db, c).unwrap();
            w.load(&db, 0, 1, &|_: u64| {}).unwrap();
            // The run sees every loaded row (POMVCC: not a given).
            db.sync_commits().unwrap();
            (db, w)
        };
        for rmw in [Rmw::Modify, Rmw::ReadUpdate, Rmw::ForUpdate] {
            let (db, w) = on(YcsbConfig { rmw, ..peer_cfg(30, "10rmw:40,2rmw-8r:30,scan-rmw:10,scan:20") });
            run_some(&db, &w, 200);
            // About 4.7 read-modify-writes per transaction.
            assert!(w.committed_rmws() > 600, "{protocol} {rmw:?}: {}", w.committed_rmws());
            let ok = w.check_consistency(&db).unwrap_or_else(|e| panic!("{protocol} {rmw:?}: {e}"));
            assert!(ok.contains("add up to the"), "{ok}");
        }
        let (db, w) = on(peer_cfg(30, "10op:100"));
        run_some(&db, &w, 200);
        let ok = w.check_consistency(&db).unwrap_or_else(|e| panic!("{protocol} 10op: {e}"));
        assert!(ok.contains("30 records intact"), "{ok}");
    }
}
