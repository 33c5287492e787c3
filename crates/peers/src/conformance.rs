//! What every adapter must do, as tests each adapter's module runs on its store.

use super::*;
use multiverse::{IndexKind, Key};
use multiverse_workloads::{Retry, Txn};
use std::ops::{Bound, RangeBounds};

fn by_value(_: &Key, v: &[u8]) -> Key {
    Key::from_bytes(&v[..1]).unwrap()
}

/// Opens an in-memory store with table "t" (a secondary index on the
/// value's first byte) holding keys 1..=10 with values "a".."j".
pub fn loaded<K: KvStore>() -> (Peer<K>, TableId) {
    let p = Peer::<K>::open(&PeerOptions { threads: 2, ..PeerOptions::default() }).unwrap();
    let t = p.create_table(TableSpec::ordered("t").secondary("v", IndexKind::Ordered, by_value)).unwrap();
    assert!(matches!(p.create_table(TableSpec::ordered("t")), Err(Error::TableExists(_))));
    p.load_txn(|x| (1..=10u64).try_for_each(|k| x.insert(t, Key::from(k), &[b'a' + k as u8 - 1]))).unwrap();
    (p, t)
}

fn keys<T: Txn>(x: &mut T, index: IndexId, r: impl RangeBounds<Key>) -> Vec<u64> {
    let mut out = vec![];
    x.scan(index, r, None, |k, _| {
        out.push(k.to_u64().unwrap());
        true
    })
    .unwrap();
    out
}

/// A transaction's operations: reads, ranges, secondary lookups,
/// inserts, updates, deletes, their errors, and a rollback.
pub fn operations<K: KvStore>() {
    let (p, t) = loaded::<K>();
    let (pk, sec) = (p.primary(t), p.index(t, "v").unwrap());
    assert!(matches!(p.index(t, "nope"), Err(Error::UnknownIndex(_))));
    p.check_txn(|x| {
        assert_eq!(x.get_with(t, &Key::from(3), |v| v.to_vec())?, Some(b"c".to_vec()));
        assert_eq!(x.get_with(t, &Key::from(11), |v| v.to_vec())?, None);
        assert_eq!(keys(x, pk, Key::from(3)..Key::from(6)), [3, 4, 5]);
        assert_eq!(keys(x, pk, (Bound::Excluded(Key::from(8)), Bound::Unbounded)), [9, 10]);
        assert_eq!(keys(x, pk, ..=Key::from(2)), [1, 2]);
        assert_eq!(keys(x, sec, Key::from_bytes(b"b").unwrap()..=Key::from_bytes(b"d").unwrap()), [2, 3, 4]);
        let mut found = vec![];
        x.get_by(sec, &Key::from_bytes(b"e").unwrap(), |k, v| {
            found.push((k.to_u64().unwrap(), v.to_vec()));
            true
        })?;
        assert_eq!(found, [(5, b"e".to_vec())]);
        Ok(())
    })
    .unwrap();
    p.load_txn(|x| {
        assert!(matches!(x.insert(t, Key::from(1), b"z"), Err(Error::DuplicateKey)));
        Ok(())
    })
    .ok();
    let level = *K::LEVELS.last().unwrap();
    let mut x = p.begin(level, false).unwrap();
    x.update(t, &Key::from(1), b"x").unwrap();
    x.update_with(t, &Key::from(2), |old, new| {
        new.extend_from_slice(old);
        new.push(b'!')
    })
    .unwrap();
    x.delete(t, &Key::from(3)).unwrap();
    x.insert(t, Key::from(11), b"k").unwrap();
    assert!(matches!(x.update_with(t, &Key::from(12), |_, _| ()), Err(Error::KeyNotFound)));
    x.commit().unwrap();
    let mut x = p.begin(level, false).unwrap();
    x.update(t, &Key::from(4), b"never").unwrap();
    drop(x); // rolled back
    p.check_txn(|x| {
        assert_eq!(keys(x, pk, ..), [1, 2, 4, 5, 6, 7, 8, 9, 10, 11]);
        assert_eq!(x.get_with(t, &Key::from(2), |v| v.to_vec())?, Some(b"b!".to_vec()));
        assert_eq!(x.get_with(t, &Key::from(4), |v| v.to_vec())?, Some(b"d".to_vec()));
        // The secondary index followed: x is 1's new value, c is gone.
        assert_eq!(keys(x, sec, Key::from_bytes(b"x").unwrap()..), [1]);
        assert_eq!(keys(x, sec, Key::from_bytes(b"c").unwrap()..=Key::from_bytes(b"c").unwrap()), Vec::<u64>::new());
        assert_eq!(keys(x, sec, Key::from_bytes(b"k").unwrap()..=Key::from_bytes(b"k").unwrap()), [11]);
        Ok(())
    })
    .unwrap();
}

/// A worker that adds one to row 0 of its table.
pub struct Increment(pub TableId);

impl Worker for Increment {
    fn next_txn(&mut self) {}
    fn execute<T: Txn>(&mut self, t: &mut T) -> std::result::Result<(), TxnError> {
        t.update_with(self.0, &Key::from(0), |old, new| {
            let n = u64::from_be_bytes(old.try_into().unwrap());
            new.extend_from_slice(&(n + 1).to_be_bytes());
        })?;
        Ok(())
    }
}

/// Concurrent increments of one row at every level the store offers
/// at or above snapshot isolation: none is lost, the aborts among them
/// were retried. Returns the aborts counted.
pub fn increments<K: KvStore>(threads: usize, each: u64) -> u64 {
    let p = Peer::<K>::open(&PeerOptions { threads, ..PeerOptions::default() }).unwrap();
    let t = p.create_table(TableSpec::ordered("c")).unwrap();
    p.load_txn(|x| x.insert(t, Key::from(0), &0u64.to_be_bytes())).unwrap();
    let mut aborted = 0;
    for (round, &level) in K::LEVELS.iter().filter(|l| **l >= Isolation::Snapshot).enumerate() {
        let counts: Vec<AbortCounts> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut a = AbortCounts::default();
                        let mut w = Increment(t);
                        for _ in 0..each {
                            assert!(p.run_txn(&mut w, TxnOptions::new(level), Retry::UntilCommit, &mut a).unwrap());
                        }
                        a
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        aborted += counts.iter().map(|a| a.total()).sum::<u64>();
        let n = p.check_txn(|x| x.get_with(t, &Key::from(0), |v| u64::from_be_bytes(v.try_into().unwrap()))).unwrap();
        assert_eq!(n, Some(threads as u64 * each * (round as u64 + 1)), "{} at {}", K::NAME, level.name());
    }
    aborted
}

/// Refuses a level the store does not offer, naming those it does.
pub fn levels<K: KvStore>() {
    let p = Peer::<K>::open(&PeerOptions::default()).unwrap();
    for l in Isolation::ALL {
        match p.begin(l, true) {
            Ok(_) => assert!(K::LEVELS.contains(&l)),
            Err(e) => {
                assert!(!K::LEVELS.contains(&l));
                assert!(e.to_string().contains("it offers"), "{e}");
            }
        }
    }
}

/// The store's memory is counted: files in a tmpfs directory of its own
/// (`files`) add their blocks, a store held in the process adds none.
pub fn memory_counted<K: KvStore>(files: bool) {
    let (p, _) = loaded::<K>();
    match p.kv().memory_dir() {
        Some(d) => {
            assert!(files, "{} keeps no files", K::NAME);
            assert!(d.starts_with("/dev/shm"), "{}", d.display());
            assert!(p.memory_files_bytes() > 0);
        }
        None => {
            assert!(!files, "{} keeps its files in memory", K::NAME);
            assert_eq!(p.memory_files_bytes(), 0);
        }
    }
}
