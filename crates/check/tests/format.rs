//! The history text format: exact output, round trips, and parse errors.

mod common;

use common::*;
use multiverse::research::history::{History, Op, Outcome, TxnRecord, WriteKind, Writer};
use multiverse::{AbortReason, Isolation, Key};
use multiverse_check::{check, read_history, write_history, ParseError};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::ops::Bound;

fn to_text(h: &History) -> String {
    let mut out = Vec::new();
    write_history(h, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn parse(text: &str) -> Result<History, ParseError> {
    read_history(text.as_bytes())
}

fn sample() -> History {
    history(vec![
        txn(7, 10, 14).r(1, c(4), 10).r_none(6).upd(5, t(3), 1, 11).del(9).scan(1, 9, &[(5, t(7), 11)]).scan_filtered(
            0,
            2,
            &[],
        ),
        txn(8, 12, 0).iso(SI).w(1, 2).aborted(AbortReason::WriteConflict),
    ])
}

#[test]
fn writes_the_documented_format() {
    let expected = "\
multiverse-history 1
txn 7 serializable begin=10 commit=14 committed
  r 0 0000000000000001 c:4 000000000000000a
  r 0 0000000000000006 none
  r 0 0000000000000005 t:3 0000000000000001
  w 0 0000000000000005 update 000000000000000b
  w 0 0000000000000009 delete -
  s 0 0 [0000000000000001 (0000000000000009 plain
    row 0000000000000005 t:7 000000000000000b
  s 0 0 [0000000000000000 (0000000000000002 filtered
txn 8 snapshot begin=12 commit=- aborted:write-conflict
  w 0 0000000000000001 update 0000000000000002
end 2
";
    assert_eq!(to_text(&sample()), expected);
    assert_eq!(parse(expected).unwrap(), sample());
}

#[test]
fn reads_hand_written_histories() {
    let text = "
# a comment before the header
multiverse-history 1

# isolation short names (rc) are accepted; comments are whole lines
txn 1 rc begin=2 commit=3 committed
	w 4294967295 ABCD insert -
  s 3 1 * [ filtered
    row - c:0 -
  s 3 0 (- * plain
txn 2 read-committed begin=0 commit=- aborted:user
end 2

# comments and blank lines may follow the trailer
";
    let h = parse(text).unwrap();
    assert_eq!(h.txns.len(), 2);
    let t = &h.txns[0];
    assert_eq!(t.isolation, Isolation::ReadCommitted);
    assert_eq!(
        t.ops[0],
        Op::Write {
            table: u32::MAX,
            key: Key::from_bytes(&[0xab, 0xcd]).unwrap(),
            kind: WriteKind::Insert,
            value: vec![]
        }
    );
    assert_eq!(
        t.ops[1],
        Op::Scan {
            table: 3,
            index: 1,
            lo: Bound::Unbounded,
            hi: Bound::Included(Key::EMPTY),
            filtered: true,
            rows: vec![(Key::EMPTY, Writer::Committed(0), vec![])],
        }
    );
    assert!(
        matches!(&t.ops[2], Op::Scan { lo: Bound::Excluded(k), hi: Bound::Unbounded, rows, .. } if k.is_empty() && rows.is_empty())
    );
    assert_eq!(h.txns[1].outcome, Outcome::Aborted(AbortReason::User));
}

#[test]
fn empty_history_round_trips() {
    let h = History::default();
    assert_eq!(to_text(&h), "multiverse-history 1\nend 0\n");
    assert_eq!(parse(&to_text(&h)).unwrap(), h);
}

#[test]
fn a_history_cut_anywhere_is_refused() {
    // Every prefix that ends at a line boundary parsed before the trailer
    // existed: a truncated file checked OK. Only the whole file parses now.
    let text = to_text(&sample());
    let ends: Vec<usize> = text.match_indices('\n').map(|(i, _)| i + 1).collect();
    assert_eq!(ends.len(), 13);
    for &end in &ends[..ends.len() - 1] {
        let e = err(&text[..end]);
        assert!(e.message.contains("without its trailer 'end N'") && e.message.contains("truncated"), "{end}: {e}");
        assert_eq!(e.line, text[..end].lines().count(), "{e}");
    }
    assert_eq!(parse(&text).unwrap(), sample());
    // Cut inside the trailer line itself.
    let e = err(text.strip_suffix(" 2\n").unwrap());
    assert!(e.message.contains("expected 'end N'"), "{e}");
}

#[test]
fn the_trailer_must_count_the_transactions_and_close_the_file() {
    let two = "multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\ntxn 2 si begin=1 commit=3 committed\n";
    assert_eq!(parse(&format!("{two}end 2\n")).unwrap().txns.len(), 2);
    // A transaction line dropped from the middle, or one added.
    let e = err(&format!("{two}end 3\n"));
    assert_eq!(e.line, 4);
    assert!(e.message.contains("the trailer counts 3 transactions but the history holds 2: some are missing"), "{e}");
    let e = err(&format!("{two}end 1\n"));
    assert!(e.message.contains("counts 1 transactions but the history holds 2"), "{e}");
    // Only comments and blank lines may follow it.
    let e = err(&format!("{two}end 2\n# fine\n\ntxn 3 si begin=1 commit=4 committed\n"));
    assert_eq!(e.line, 7);
    assert!(e.message.contains("a line after the trailer"), "{e}");
    let e = err(&format!("{two}end 2\nend 2\n"));
    assert!(e.message.contains("a line after the trailer"), "{e}");
    // Two histories glued together.
    let e = err(&format!("{two}end 2\n{two}end 2\n"));
    assert_eq!(e.line, 5);
    for (bad, msg) in [("end\n", "got 0 fields"), ("end 2 2\n", "got 2 fields"), ("end two\n", "bad transaction count")]
    {
        let e = err(&format!("{two}{bad}"));
        assert_eq!(e.line, 4, "{bad:?}");
        assert!(e.message.contains(msg), "{bad:?}: {e}");
    }
}

fn err(text: &str) -> ParseError {
    parse(text).expect_err("should not parse")
}

#[test]
fn parse_errors_name_the_line() {
    let h = "multiverse-history 1\n";
    let cases: &[(&str, usize, &str)] = &[
        ("", 1, "empty history"),
        ("# only a comment\n", 1, "empty history"),
        ("hello\n", 1, "not a Multiverse history"),
        ("multiverse-history 2\n", 1, "unsupported history format version '2'"),
        ("multiverse-history 1\n  r 0 00 none\n", 2, "before the first 'txn' line"),
        ("multiverse-history 1\ntxn 1 serializable begin=1 commit=2\n", 2, "expected 'txn ID ISOLATION"),
        ("multiverse-history 1\ntxn x serializable begin=1 commit=2 committed\n", 2, "bad transaction id 'x'"),
        ("multiverse-history 1\ntxn 1 chaos begin=1 commit=2 committed\n", 2, "unknown isolation level 'chaos'"),
        ("multiverse-history 1\ntxn 1 si start=1 commit=2 committed\n", 2, "missing begin="),
        ("multiverse-history 1\ntxn 1 si begin=1 end=2 committed\n", 2, "missing commit="),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=-5 committed\n", 2, "bad commit timestamp"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 done\n", 2, "unknown outcome 'done'"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 aborted:bored\n", 2, "unknown abort reason 'bored'"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  x 0\n", 3, "unknown line type 'x'"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  r 0 00\n", 3, "expected 'r TABLE KEYHEX"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  r 0 0g none\n", 3, "bad key hex '0g'"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  r 0 000 none\n", 3, "odd number of digits"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  r -1 00 none\n", 3, "bad table number '-1'"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  r 0 00 q:1 00\n", 3, "bad version 'q:1'"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  r 0 00 c:1 0\n", 3, "bad value hex"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  w 0 00 upsert 00\n", 3, "unknown write kind 'upsert'"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  w 0 00 insert\n", 3, "expected 'w TABLE KEYHEX"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  s 0 0 * * sorted\n", 3, "unknown scan mode 'sorted'"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  s 0 256 * * plain\n", 3, "bad index number '256'"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  s 0 0 <00 * plain\n", 3, "bad scan bound '<00'"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  row 00 c:1 00\n", 3, "does not follow an 's'"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  s 0 0 * * plain\n  r 0 00 none\n  row 00 c:1 00\n", 5, "does not follow an 's'"),
        ("multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n  s 0 0 * * plain\n  row 00 c:1\n", 4, "expected 'row KEYHEX WRITER VALUEHEX'"),
    ];
    for &(text, line, msg) in cases {
        let e = err(text);
        assert_eq!(e.line, line, "{text:?} -> {e}");
        assert!(e.message.contains(msg), "{text:?} -> {e}");
        assert!(!e.message.contains('\n'), "one-line message: {e}");
    }
    let long_key = format!("{h}txn 1 si begin=1 commit=2 committed\n  r 0 {} none\n", "00".repeat(1025));
    let e = err(&long_key);
    assert_eq!((e.line, e.message.as_str()), (3, "key of 1025 bytes is longer than the 1024-byte maximum"));
    assert_eq!(e.to_string(), "line 3: key of 1025 bytes is longer than the 1024-byte maximum");
    let huge = format!("{h}txn {} si begin=1 commit=2 committed\n", "9".repeat(30));
    assert!(err(&huge).message.contains("out of range"));
}

#[test]
fn invalid_utf8_is_an_error() {
    let mut bytes = b"multiverse-history 1\ntxn 1 si begin=1 commit=2 committed\n".to_vec();
    bytes.extend_from_slice(b"  r 0 \xff\xfe none\n");
    let e = read_history(&bytes[..]).unwrap_err();
    assert_eq!(e.line, 3);
    assert!(e.message.contains("cannot read"), "{e}");
}

// ----------------------------------------------------------------------
// Random round trips and garbage
// ----------------------------------------------------------------------

fn random_key(rng: &mut SmallRng) -> Key {
    let len = rng.gen_range(0..=32);
    let bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
    Key::from_bytes(&bytes).unwrap()
}

fn random_bytes(rng: &mut SmallRng) -> Vec<u8> {
    let len = if rng.gen_bool(0.1) { 0 } else { rng.gen_range(0..40) };
    (0..len).map(|_| rng.gen()).collect()
}

fn random_writer(rng: &mut SmallRng) -> Writer {
    if rng.gen() {
        Writer::Committed(rng.gen())
    } else {
        Writer::Txn(rng.gen())
    }
}

fn random_bound(rng: &mut SmallRng) -> Bound<Key> {
    match rng.gen_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(random_key(rng)),
        _ => Bound::Excluded(random_key(rng)),
    }
}

fn random_op(rng: &mut SmallRng) -> Op {
    let table = if rng.gen() { rng.gen_range(0..4) } else { rng.gen() };
    match rng.gen_range(0..4) {
        0 => Op::Read { table, key: random_key(rng), version: None },
        1 => Op::Read { table, key: random_key(rng), version: Some((random_writer(rng), random_bytes(rng))) },
        2 => {
            let kind = [WriteKind::Insert, WriteKind::Update, WriteKind::Delete][rng.gen_range(0..3)];
            Op::Write { table, key: random_key(rng), kind, value: random_bytes(rng) }
        }
        _ => Op::Scan {
            table,
            index: rng.gen(),
            lo: random_bound(rng),
            hi: random_bound(rng),
            filtered: rng.gen(),
            rows: (0..rng.gen_range(0..4)).map(|_| (random_key(rng), random_writer(rng), random_bytes(rng))).collect(),
        },
    }
}

pub fn random_history(rng: &mut SmallRng) -> History {
    let txns = (0..rng.gen_range(0..12))
        .map(|_| TxnRecord {
            id: rng.gen(),
            isolation: Isolation::ALL[rng.gen_range(0..4)],
            begin_ts: rng.gen(),
            commit_ts: if rng.gen() { Some(rng.gen()) } else { None },
            outcome: if rng.gen() {
                Outcome::Committed
            } else {
                Outcome::Aborted(AbortReason::ALL[rng.gen_range(0..AbortReason::COUNT)])
            },
            locking: rng.gen(),
            snapshot: rng.gen(),
            ops: (0..rng.gen_range(0..8)).map(|_| random_op(rng)).collect(),
        })
        .collect();
    History { txns }
}

#[test]
fn random_histories_round_trip() {
    let mut rng = SmallRng::seed_from_u64(1);
    for _ in 0..2000 {
        let h = random_history(&mut rng);
        let text = to_text(&h);
        assert_eq!(parse(&text).unwrap(), h, "{text}");
    }
}

#[test]
fn mangled_input_never_panics() {
    let mut rng = SmallRng::seed_from_u64(2);
    let alphabet = b" \n\t#[(*-:0123456789abcdefgxyzrwstxnrow";
    for _ in 0..3000 {
        let mut bytes = to_text(&random_history(&mut rng)).into_bytes();
        for _ in 0..rng.gen_range(1..6) {
            if bytes.is_empty() {
                break;
            }
            let at = rng.gen_range(0..bytes.len());
            match rng.gen_range(0..3) {
                0 => {
                    bytes.remove(at);
                }
                1 => bytes[at] = alphabet[rng.gen_range(0..alphabet.len())],
                _ => bytes.insert(at, rng.gen()),
            }
        }
        // Whatever it is, it parses or fails with a line number inside the input.
        if let Err(e) = read_history(&bytes[..]) {
            let lines = bytes.split(|&b| b == b'\n').count();
            assert!(e.line >= 1 && e.line <= lines.max(1), "line {} of {lines}: {e}", e.line);
        }
    }
}

/// Small domains, so that ids, timestamps and keys collide and every
/// resolution path of the checker is taken.
fn tangled_history(rng: &mut SmallRng) -> History {
    let small_writer = |rng: &mut SmallRng| {
        if rng.gen() {
            Writer::Committed(rng.gen_range(0..12))
        } else {
            Writer::Txn(rng.gen_range(0..12))
        }
    };
    let small_key = |rng: &mut SmallRng| Key::from(rng.gen_range(0..6u64));
    let small_bound = |rng: &mut SmallRng| match rng.gen_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(Key::from(rng.gen_range(0..6u64))),
        _ => Bound::Excluded(Key::from(rng.gen_range(0..6u64))),
    };
    let value = |rng: &mut SmallRng| vec![rng.gen_range(0..3u8)];
    let txns = (0..rng.gen_range(0..10))
        .map(|_| TxnRecord {
            id: rng.gen_range(0..12),
            isolation: Isolation::ALL[rng.gen_range(0..4)],
            begin_ts: rng.gen_range(0..12),
            commit_ts: if rng.gen_bool(0.8) { Some(rng.gen_range(0..12)) } else { None },
            outcome: if rng.gen_bool(0.8) { Outcome::Committed } else { Outcome::Aborted(AbortReason::User) },
            locking: false,
            snapshot: false,
            ops: (0..rng.gen_range(0..8))
                .map(|_| match rng.gen_range(0..4) {
                    0 => Op::Read { table: 0, key: small_key(rng), version: None },
                    1 => Op::Read { table: 0, key: small_key(rng), version: Some((small_writer(rng), value(rng))) },
                    2 => {
                        let kind = [WriteKind::Insert, WriteKind::Update, WriteKind::Delete][rng.gen_range(0..3)];
                        Op::Write { table: 0, key: small_key(rng), kind, value: value(rng) }
                    }
                    _ => Op::Scan {
                        table: 0,
                        index: rng.gen_range(0..2),
                        lo: small_bound(rng),
                        hi: small_bound(rng),
                        filtered: rng.gen(),
                        rows: (0..rng.gen_range(0..4))
                            .map(|_| (small_key(rng), small_writer(rng), value(rng)))
                            .collect(),
                    },
                })
                .collect(),
        })
        .collect();
    History { txns }
}

#[test]
fn arbitrary_histories_never_panic_the_checker() {
    let mut rng = SmallRng::seed_from_u64(3);
    for i in 0..3000 {
        let h = if i % 2 == 0 { tangled_history(&mut rng) } else { random_history(&mut rng) };
        for level in Isolation::ALL {
            let r = check(&h, level);
            let _ = r.to_string();
        }
        let _ = multiverse_check::check_appends(&h);
    }
}
