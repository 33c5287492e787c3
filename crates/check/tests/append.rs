//! The list-append cross-check: the version order the values imply must
//! match the commit-timestamp order.

mod common;

use common::*;
use multiverse::research::history::{History, Op, Writer};
use multiverse::Key;
use multiverse_check::check_appends;

/// A value made of 8-byte tags.
fn list(tags: &[u64]) -> Vec<u8> {
    tags.iter().flat_map(|t| t.to_be_bytes()).collect()
}

fn set_value(mut h: History, txn: usize, op: usize, value: Vec<u8>) -> History {
    match &mut h.txns[txn].ops[op] {
        Op::Write { value: v, .. } | Op::Read { version: Some((_, v)), .. } => *v = value,
        _ => panic!("not a write or a read with a version"),
    }
    h
}

/// T1 appends 1, T2 appends 2, T3 reads; values as given.
fn appends(v1: &[u64], v2: &[u64], read: (Writer, &[u64])) -> History {
    let h = history(vec![txn(1, 2, 4).w(7, 0), txn(2, 5, 6).w(7, 0), txn(3, 8, 8).r(7, read.0, 0)]);
    let h = set_value(h, 0, 0, list(v1));
    let h = set_value(h, 1, 0, list(v2));
    set_value(h, 2, 0, list(read.1))
}

#[test]
fn consistent_lists_pass() {
    assert!(check_appends(&appends(&[1], &[1, 2], (c(6), &[1, 2]))).is_empty());
    // Reads of earlier versions are prefixes too.
    assert!(check_appends(&appends(&[9, 1], &[9, 1, 2], (c(4), &[9, 1]))).is_empty());
}

#[test]
fn order_mismatch_is_reported() {
    // The values say T2's append came first, the timestamps say T1's.
    let m = check_appends(&appends(&[2, 1], &[2], (c(4), &[2, 1])));
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m[0].key, Key::from(7));
    assert_eq!(
        m[0].to_string(),
        "t0/key 7: commit order puts T1 (commit 4) at version 1, but the values put T2 (commit 6) there"
    );
}

#[test]
fn divergent_lists_are_reported() {
    // Both appended to the same base: one append was lost.
    let m = check_appends(&appends(&[1], &[2], (c(6), &[2])));
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].message.contains("neither value extends the other"), "{}", m[0]);
}

#[test]
fn reads_outside_the_list_are_reported() {
    let m = check_appends(&appends(&[1], &[1, 2], (c(6), &[1, 3])));
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].message.contains("T3 read"), "{}", m[0]);
}

#[test]
fn deleted_keys_are_skipped() {
    let h = history(vec![txn(1, 2, 4).w(7, 1).del(7).ins(7, 5), txn(2, 5, 6).w(7, 9)]);
    assert!(check_appends(&h).is_empty());
}
