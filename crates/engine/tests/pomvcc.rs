//! POMVCC on the multi-version store (`pomvcc-2018.txt` sections IV and
//! VI): independent commits share a timestamp, a lost update at one
//! timestamp aborts the later writer and advances CTs, and the HISTORICAL
//! READ anomaly happens without the request-based `after` and not with it.

use multiverse::*;

fn open() -> (Database, TableId) {
    // No periodic advance during a test: timestamps move only as the
    // protocol makes them.
    let opts = Options {
        protocol: Protocol::Pomvcc,
        pomvcc_interval: std::time::Duration::from_secs(3600),
        ..Options::default()
    };
    let db = Database::new(opts).unwrap();
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap().table();
    (db, t)
}

fn put(db: &Database, t: TableId, k: u64, v: u64, after: Option<u64>) -> Result<CommitInfo> {
    let mut tx = db.begin_with(TxnOptions { after, ..TxnOptions::new(Isolation::Serializable) })?;
    match tx.get(t, Key::from(k))? {
        Some(_) => tx.update(t, Key::from(k), v.to_le_bytes())?,
        None => tx.insert(t, Key::from(k), v.to_le_bytes())?,
    }
    tx.commit()
}

fn get(db: &Database, t: TableId, k: u64, after: Option<u64>) -> Option<u64> {
    let mut tx = db.begin_with(TxnOptions { after, ..TxnOptions::new(Isolation::Snapshot) }).unwrap();
    let v = tx.get(t, Key::from(k)).unwrap().map(|v| u64::from_le_bytes(v[..8].try_into().unwrap()));
    tx.commit().unwrap();
    v
}

/// D4: transactions that write different records commit at one timestamp.
#[test]
fn independent_commits_share_a_timestamp() {
    let (db, t) = open();
    let a = db.begin(Isolation::Snapshot).unwrap();
    let b = db.begin(Isolation::Snapshot).unwrap();
    let (mut a, mut b) = (a, b);
    a.insert(t, Key::from(1), 1u64.to_le_bytes()).unwrap();
    b.insert(t, Key::from(2), 2u64.to_le_bytes()).unwrap();
    let (ca, cb) = (a.commit().unwrap(), b.commit().unwrap());
    assert_eq!(ca.commit_ts, cb.commit_ts, "no conflict: one timestamp");
}

/// Table V, W1[X] W2[X]: the later writer of a record at one timestamp
/// aborts, CTs advances (D5), and its retry after the first commit wins.
#[test]
fn a_lost_update_aborts_and_advances_the_timestamp() {
    let (db, t) = open();
    let c0 = put(&db, t, 1, 10, None).unwrap();
    // Both begin where key 1 = 10 is visible.
    let mut x =
        db.begin_with(TxnOptions { after: Some(c0.commit_ts), ..TxnOptions::new(Isolation::Snapshot) }).unwrap();
    let mut y = db.begin(Isolation::Snapshot).unwrap();
    x.update(t, Key::from(1), 11u64.to_le_bytes()).unwrap();
    let cx = x.commit().unwrap();
    let e = y.update(t, Key::from(1), 12u64.to_le_bytes()).unwrap_err();
    assert_eq!(e, Error::Aborted(AbortReason::WriteConflict));
    // The retry, begun after the winner's commit, reads it and succeeds.
    let cy = put(&db, t, 1, 12, Some(cx.commit_ts)).unwrap();
    assert!(cy.commit_ts > cx.commit_ts, "the retry commits at a later timestamp");
    assert_eq!(get(&db, t, 1, Some(cy.commit_ts)), Some(12));
}

/// Section IV.C-D: a commit is not yet visible to the next transaction of
/// the same client (HISTORICAL READ) unless it begins after the commit's
/// timestamp (Figure 8).
#[test]
fn historical_read_and_its_avoidance() {
    let (db, t) = open();
    let c = put(&db, t, 1, 10, None).unwrap();
    // Right after the commit, its timestamp is still open: not visible.
    assert_eq!(get(&db, t, 1, None), None, "HISTORICAL READ: the previous commit is not seen");
    assert_eq!(get(&db, t, 1, Some(c.commit_ts)), Some(10), "begun after it: seen");
    let c2 = put(&db, t, 1, 20, Some(c.commit_ts)).unwrap();
    assert_eq!(get(&db, t, 1, Some(c2.commit_ts)), Some(20));
}

/// Asking to see a commit that has not happened yet is a clear error, not a
/// wait for ever.
#[test]
fn begin_after_the_future_is_refused() {
    let (db, t) = open();
    let c = put(&db, t, 1, 10, None).unwrap();
    let e = db.begin_with(TxnOptions { after: Some(c.commit_ts + 1_000_000), ..TxnOptions::new(Isolation::Snapshot) });
    assert!(matches!(e.err(), Some(Error::InvalidArgument(m)) if m.contains("no transaction has committed")));
    // The database goes on.
    assert_eq!(get(&db, t, 1, Some(c.commit_ts)), Some(10));
}

// ----------------------------------------------------------------------
// Mixed OCC/PCC (section V.D, Figures 13 and 14)
// ----------------------------------------------------------------------

fn begin(db: &Database, mode: Mode) -> Transaction<'_> {
    db.begin_with(TxnOptions { mode, ..TxnOptions::new(Isolation::Snapshot) }).unwrap()
}

fn val(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[..8].try_into().unwrap())
}

/// An optimistic write takes no lock until commit: a pessimistic writer of
/// the same row after it goes ahead and commits first, and the optimistic
/// one aborts at its commit (Figure 13, step 3), advancing CTs.
#[test]
fn an_optimistic_write_locks_at_commit() {
    let (db, t) = open();
    let c0 = put(&db, t, 1, 10, None).unwrap();
    db.sync_commits().unwrap();
    let mut occ = begin(&db, Mode::Optimistic);
    occ.update(t, Key::from(1), 11u64.to_le_bytes()).unwrap();
    assert_eq!(occ.get(t, Key::from(1)).unwrap().map(|v| val(&v)), Some(11), "a transaction reads its own write");
    let mut pcc = begin(&db, Mode::Pessimistic);
    pcc.update(t, Key::from(1), 12u64.to_le_bytes()).unwrap();
    let won = pcc.commit().unwrap();
    assert!(won.commit_ts > c0.commit_ts);
    assert_eq!(occ.commit().unwrap_err(), Error::Aborted(AbortReason::WriteConflict));
    assert_eq!(get(&db, t, 1, Some(won.commit_ts)), Some(12));
    assert_eq!(db.stats().aborts[AbortReason::WriteConflict], 1);
}

/// A pessimistic write locks at update time (Figure 14): a long
/// transaction keeps its row, and the optimistic writer that comes later
/// and commits first is the one that aborts.
#[test]
fn a_pessimistic_write_locks_at_update_time() {
    let (db, t) = open();
    put(&db, t, 1, 10, None).unwrap();
    db.sync_commits().unwrap();
    let mut long = begin(&db, Mode::Pessimistic);
    long.update(t, Key::from(1), 20u64.to_le_bytes()).unwrap();
    let mut short = begin(&db, Mode::Optimistic);
    short.update(t, Key::from(1), 30u64.to_le_bytes()).unwrap(); // no lock yet
    assert_eq!(short.commit().unwrap_err(), Error::Aborted(AbortReason::WriteConflict));
    let c = long.commit().unwrap();
    assert_eq!(get(&db, t, 1, Some(c.commit_ts)), Some(20));
    // Two pessimistic writers: the second aborts at its update.
    let mut a = begin(&db, Mode::Pessimistic);
    let mut b = begin(&db, Mode::Pessimistic);
    a.update(t, Key::from(1), 1u64.to_le_bytes()).unwrap();
    assert_eq!(b.update(t, Key::from(1), 2u64.to_le_bytes()).unwrap_err(), Error::Aborted(AbortReason::WriteConflict));
    a.commit().unwrap();
}

/// Optimistic inserts, updates and deletes of one row in one transaction
/// read their own pending versions and commit as their net effect; a
/// duplicate is refused at once; an abort leaves nothing behind.
#[test]
fn optimistic_writes_read_their_own_pending_versions() {
    let (db, t) = open();
    put(&db, t, 1, 10, None).unwrap();
    db.sync_commits().unwrap();
    let mut x = begin(&db, Mode::Optimistic);
    let (k1, k2) = (Key::from(1), Key::from(2));
    assert_eq!(x.insert(t, k1.clone(), 0u64.to_le_bytes()).unwrap_err(), Error::DuplicateKey);
    x.insert(t, k2.clone(), 5u64.to_le_bytes()).unwrap();
    assert_eq!(x.insert(t, k2.clone(), 6u64.to_le_bytes()).unwrap_err(), Error::DuplicateKey);
    x.modify(t, &k2, |v| v[0] += 1).unwrap();
    x.update_with(t, &k1, |old, new| new.extend_from_slice(&(val(old) + 1).to_le_bytes())).unwrap();
    x.update_with(t, &k1, |old, new| new.extend_from_slice(&(val(old) + 1).to_le_bytes())).unwrap();
    assert_eq!(x.get(t, &k1).unwrap().map(|v| val(&v)), Some(12));
    assert_eq!(x.get(t, &k2).unwrap().map(|v| val(&v)), Some(6));
    x.delete(t, &k1).unwrap();
    assert_eq!(x.get(t, &k1).unwrap(), None);
    assert_eq!(x.delete(t, &k1).unwrap_err(), Error::KeyNotFound);
    assert_eq!(x.update(t, &k1, 1u64.to_le_bytes()).unwrap_err(), Error::KeyNotFound);
    x.insert(t, k1.clone(), 40u64.to_le_bytes()).unwrap(); // the delete becomes an update
    x.insert(t, Key::from(3), 3u64.to_le_bytes()).unwrap();
    x.delete(t, Key::from(3)).unwrap(); // an insert deleted again: nothing
                                        // Nobody else sees a pending write.
    let mut other = begin(&db, Mode::Pessimistic);
    assert_eq!(other.get(t, &k1).unwrap().map(|v| val(&v)), Some(10));
    assert_eq!(other.get(t, &k2).unwrap(), None);
    other.commit().unwrap();
    let c = x.commit().unwrap();
    assert_eq!(c.writes, 4, "key 1 updated, key 2 inserted, key 3 inserted and deleted");
    assert_eq!(get(&db, t, 1, Some(c.commit_ts)), Some(40));
    assert_eq!(get(&db, t, 2, Some(c.commit_ts)), Some(6));
    assert_eq!(get(&db, t, 3, Some(c.commit_ts)), None);
    // An abort frees the pending versions and changes nothing.
    let mut y = begin(&db, Mode::Optimistic);
    y.update(t, &k1, 50u64.to_le_bytes()).unwrap();
    y.insert(t, Key::from(4), 4u64.to_le_bytes()).unwrap();
    y.abort();
    db.sync_commits().unwrap();
    assert_eq!(get(&db, t, 1, None), Some(40));
    assert_eq!(get(&db, t, 4, None), None);
}

/// A scan cannot merge private versions: it connects the pending writes
/// first (they lock then), and sees them like any own write.
#[test]
fn a_scan_connects_the_pending_writes() {
    let opts = Options {
        protocol: Protocol::Pomvcc,
        pomvcc_interval: std::time::Duration::from_secs(3600),
        ..Options::default()
    };
    let db = Database::new(opts).unwrap();
    let t = db.create_table(TableSpec::ordered("o")).unwrap();
    let c = put(&db, t, 1, 10, None).unwrap();
    db.sync_commits().unwrap();
    let mut x = begin(&db, Mode::Optimistic);
    x.update(t, Key::from(1), 11u64.to_le_bytes()).unwrap();
    x.insert(t, Key::from(2), 2u64.to_le_bytes()).unwrap();
    let mut rows = Vec::new();
    x.scan(db.primary(t), .., None, |_, v| {
        rows.push(val(v));
        true
    })
    .unwrap();
    assert_eq!(rows, [11, 2]);
    // Connected: a pessimistic writer now finds the row locked.
    let mut y = db.begin_with(TxnOptions { after: Some(c.commit_ts), ..TxnOptions::new(Isolation::Snapshot) }).unwrap();
    assert_eq!(y.update(t, Key::from(1), 0u64.to_le_bytes()).unwrap_err(), Error::Aborted(AbortReason::WriteConflict));
    // Writes after the scan are pending again; the commit connects them.
    x.update(t, Key::from(2), 3u64.to_le_bytes()).unwrap();
    let c = x.commit().unwrap();
    assert_eq!(get(&db, t, 2, Some(c.commit_ts)), Some(3));
}

/// Two optimistic inserts of one key: both are accepted at insert time;
/// the first to commit wins, the other aborts with a write conflict.
#[test]
fn racing_optimistic_inserts_conflict_at_commit() {
    let (db, t) = open();
    let mut a = begin(&db, Mode::Optimistic);
    let mut b = begin(&db, Mode::Optimistic);
    a.insert(t, Key::from(7), 1u64.to_le_bytes()).unwrap();
    b.insert(t, Key::from(7), 2u64.to_le_bytes()).unwrap();
    let c = b.commit().unwrap();
    assert_eq!(a.commit().unwrap_err(), Error::Aborted(AbortReason::WriteConflict));
    assert_eq!(get(&db, t, 7, Some(c.commit_ts)), Some(2));
}
