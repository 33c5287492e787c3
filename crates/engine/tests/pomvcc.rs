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
    let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    (db, t)
}

fn put(db: &Database, t: TableId, k: u64, v: u64, after: Option<u64>) -> Result<CommitInfo> {
    let mut tx = db.begin_with(TxnOptions { after, ..TxnOptions::new(Isolation::Serializable) })?;
    match tx.get(t, &Key::from(k))? {
        Some(_) => tx.update(t, &Key::from(k), &v.to_le_bytes())?,
        None => tx.insert(t, Key::from(k), &v.to_le_bytes())?,
    }
    tx.commit()
}

fn get(db: &Database, t: TableId, k: u64, after: Option<u64>) -> Option<u64> {
    let mut tx = db.begin_with(TxnOptions { after, ..TxnOptions::new(Isolation::Snapshot) }).unwrap();
    let v = tx.get(t, &Key::from(k)).unwrap().map(|v| u64::from_le_bytes(v[..8].try_into().unwrap()));
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
    a.insert(t, Key::from(1), &1u64.to_le_bytes()).unwrap();
    b.insert(t, Key::from(2), &2u64.to_le_bytes()).unwrap();
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
    x.update(t, &Key::from(1), &11u64.to_le_bytes()).unwrap();
    let cx = x.commit().unwrap();
    let e = y.update(t, &Key::from(1), &12u64.to_le_bytes()).unwrap_err();
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
