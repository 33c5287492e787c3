//! Commit dependencies through the public API (Hekaton VLDB 2011 section
//! 2.7). A reader may speculatively read the version of a writer that is
//! still Preparing; if that writer then aborts, the reader must not commit.
//! The deterministic, row-by-row tests of this mechanism (speculative read,
//! speculative ignore, cascading aborts) live in
//! `src/txn/visibility_tests.rs`, which can hold a writer in Preparing; here
//! the same guarantee is checked as an end-to-end property under real races:
//!
//! *no committed transaction ever observed a value written by a transaction
//! that did not commit.*
//!
//! Writers run at serializable and often fail validation while Preparing
//! (their read of a hot row is invalidated by a churner), which is exactly
//! when readers may have speculatively read their new version.

mod common;

use common::{stress, RaiseOnDrop};
use multiverse::*;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn u(v: &[u8]) -> u64 {
    u64::from_le_bytes(v.try_into().expect("8-byte value"))
}

const HOT: u64 = 0; // churned row the writers read
const B: u64 = 1; // row the writers write and the readers read
const FILLER: u64 = 400;

#[test]
fn committed_readers_never_observe_values_of_aborted_writers() {
    let db = Database::new(Options::default()).unwrap();
    let data = db.create_table(TableSpec::hash("data", 16)).unwrap();
    let written = db.create_table(TableSpec::hash("written", 1024)).unwrap();
    let observed = db.create_table(TableSpec::hash("observed", 1024)).unwrap();
    // Rows every writer reads before HOT: validating them keeps the writer in
    // Preparing long enough for readers to meet it there.
    let filler = db.create_table(TableSpec::hash("filler", 512)).unwrap();
    db.run(Isolation::Serializable, |x| {
        for k in 0..FILLER {
            x.insert(filler, Key::from(k), b"f")?;
        }
        Ok(())
    })
    .unwrap();
    db.run(Isolation::Serializable, |x| {
        x.insert(data, Key::from(HOT), 0u64.to_le_bytes())?;
        x.insert(data, Key::from(B), 0u64.to_le_bytes())
    })
    .unwrap();
    let stop = AtomicBool::new(false);
    let next_value = AtomicU64::new(1);
    let next_obs = AtomicU64::new(0);
    let duration = Duration::from_millis(400 * stress());
    std::thread::scope(|s| {
        let _stop = RaiseOnDrop(&stop);
        // Churner: keeps invalidating the writers' read of HOT.
        s.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Ordering::Acquire) {
                i += 1;
                let _ = db.run(Isolation::Snapshot, |x| x.update(data, Key::from(HOT), i.to_le_bytes()));
                std::thread::sleep(Duration::from_micros(20));
            }
        });
        // Writer: read HOT, write B := fresh value, record the value as written.
        s.spawn(|| {
            while !stop.load(Ordering::Acquire) {
                let v = next_value.fetch_add(1, Ordering::Relaxed);
                let mut x = db.begin(Isolation::Serializable).unwrap();
                let r = (|| {
                    x.scan(db.primary(filler), .., None, |_, _| true)?;
                    x.get(data, Key::from(HOT))?;
                    x.update(data, Key::from(B), v.to_le_bytes())?;
                    x.insert(written, Key::from(v), b"")
                })();
                if r.is_ok() {
                    let _ = x.commit();
                }
            }
        });
        // Readers: read B and record what they saw, in the same transaction.
        for iso in [Isolation::Snapshot, Isolation::Serializable] {
            let (db, stop, next_obs) = (&db, &stop, &next_obs);
            s.spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    let mut x = db.begin(iso).unwrap();
                    let r = (|| {
                        let seen = u(&x.get(data, Key::from(B))?.expect("B always exists"));
                        let k = next_obs.fetch_add(1, Ordering::Relaxed);
                        x.insert(observed, Key::from(k), seen.to_le_bytes())
                    })();
                    if r.is_ok() {
                        let _ = x.commit();
                    }
                }
            });
        }
        let end = Instant::now() + duration;
        while Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
    });

    let mut x = db.begin(Isolation::Snapshot).unwrap();
    let mut committed_values = HashSet::from([0u64]);
    x.scan(db.primary(written), .., None, |k, _| {
        committed_values.insert(k.to_u64().unwrap());
        true
    })
    .unwrap();
    let mut observations = 0;
    x.scan(db.primary(observed), .., None, |_, v| {
        let seen = u(v);
        assert!(committed_values.contains(&seen), "a committed reader observed {seen}, written by an aborted writer");
        observations += 1;
        true
    })
    .unwrap();
    let final_b = u(&x.get(data, Key::from(B)).unwrap().unwrap());
    assert!(committed_values.contains(&final_b), "B holds a value of an aborted writer");
    x.commit().unwrap();
    let st = db.stats();
    assert!(observations > 0 && committed_values.len() > 1, "the workload made progress: {st:?}");
    eprintln!(
        "commit_deps: {} writer commits, {observations} observations, aborts by reason: {:?}",
        committed_values.len() - 1,
        st.aborts_by_reason().collect::<Vec<_>>()
    );
}
