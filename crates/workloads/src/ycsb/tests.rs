//! Tests of YCSB's value layout, scans and configuration.

use super::*;

#[test]
fn values_round_trip() {
    let mut b = Vec::new();
    for len in [16, 23, 24, 1000] {
        initial_value(42, len, &mut b);
        assert_eq!(b.len(), len);
        assert_eq!(decode(&b, len), Some((42, 0)));
        assert_eq!(decode(&b, len + 1), None);
    }
    initial_value(7, 100, &mut b);
    b[50] = 0;
    assert_eq!(decode(&b, 100), None, "damaged filler");
    initial_value(7, 100, &mut b);
    b[99] = 9;
    assert_eq!(decode(&b, 100), None, "damaged trailing key");
}

/// Scans of workers that share a thread (BOHM's workers all draw on
/// the sequencer) each get distinct records in range, every record can
/// be drawn, and a worker keeps a scan's keys only while it is current.
#[test]
fn scans_draw_distinct_records() {
    let db = multiverse::Database::new(multiverse::Options::default()).unwrap();
    let mix = Mix::new(TYPES, &[50.0, 0.0, 50.0, 0.0, 0.0]).unwrap();
    let cfg = YcsbConfig { rows: 300, scan_records: 200, value_bytes: 16, mix, ..YcsbConfig::default() };
    let y = Ycsb::setup(&db, cfg).unwrap();
    let mut ws: Vec<_> = (0..3).map(|i| y.worker(i, 9)).collect();
    let mut hit = vec![false; 300];
    let (mut scans, mut others) = (0, 0);
    for round in 0..60 {
        let w = &mut ws[round % 3];
        w.next_txn();
        if w.txn_type() != SCAN {
            assert_eq!(w.scan_keys.capacity(), 0, "a short transaction holds no scan keys");
            others += 1;
            continue;
        }
        scans += 1;
        let mut keys = w.scan_keys().to_vec();
        keys.iter().for_each(|&k| hit[k as usize] = true);
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 200, "distinct");
        assert!(keys.iter().all(|&k| k < 300));
    }
    assert!(scans > 10 && others > 10);
    assert!(hit.iter().all(|&h| h), "every record is drawn sometimes");
    SEEN.with_borrow(|seen| assert!(seen.iter().all(|&w| w == 0), "the bitmap is clear between draws"));
}

#[test]
fn config_is_validated() {
    assert!(YcsbConfig::default().validate().is_ok());
    let c = |f: fn(&mut YcsbConfig)| {
        let mut c = YcsbConfig::default();
        f(&mut c);
        c.validate()
    };
    assert!(c(|c| c.rows = 0).is_err());
    assert!(c(|c| c.rows = 9).unwrap_err().contains("only 9"));
    assert!(c(|c| c.value_bytes = 15).unwrap_err().contains("--value-bytes"));
    assert!(c(|c| c.theta = -1.0).unwrap_err().contains("--theta"));
    assert!(c(|c| c.theta = 1.0).is_ok());
    // Gray et al.'s generator stops short of 1; the exact one does not.
    assert!(c(|c| (c.zipf, c.theta) = (ZipfKind::Gray, 0.99)).is_ok());
    let e = c(|c| (c.zipf, c.theta) = (ZipfKind::Gray, 1.0)).unwrap_err();
    assert!(e.starts_with("--theta with --zipf gray: theta 1 is out of range"), "{e}");
    // Repeats let a short transaction run on fewer than ten records.
    assert!(c(|c| c.rows = 3).unwrap_err().contains("--allow-repeats"));
    assert!(c(|c| (c.rows, c.allow_repeats) = (3, true)).is_ok());
    assert!(c(|c| (c.rows, c.allow_repeats, c.scramble) = (1, true, true)).is_ok());
    assert!(c(|c| c.scan_records = 0).is_err());
    let scan = Mix::new(TYPES, &[50.0, 0.0, 50.0, 0.0, 0.0]).unwrap();
    let e = YcsbConfig { rows: 100, scan_records: 101, mix: scan.clone(), ..YcsbConfig::default() }.validate();
    assert!(e.unwrap_err().contains("only 100"));
    // scan-rmw needs its records too.
    let rm = Mix::new(TYPES, &[0.0, 0.0, 0.0, 0.0, 100.0]).unwrap();
    let e = YcsbConfig { rows: 100, scan_records: 101, mix: rm, ..YcsbConfig::default() }.validate();
    assert!(e.unwrap_err().contains("only 100"));
    // A scan-only mix needs no ten records.
    let only = Mix::new(TYPES, &[0.0, 0.0, 100.0, 0.0, 0.0]).unwrap();
    assert!(YcsbConfig { rows: 5, scan_records: 5, mix: only, ..YcsbConfig::default() }.validate().is_ok());
}
