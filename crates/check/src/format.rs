//! The history text format: one line per transaction or operation, easy to
//! read, diff and write by hand (full description in `docs/CHECKER.md`).
//!
//! ```text
//! multiverse-history 1
//! # comment
//! txn 7 serializable begin=10 commit=14 committed
//!   r 0 0000000000000005 c:4 000000000000000a
//!   r 0 0000000000000006 none
//!   w 0 0000000000000005 update 000000000000000b
//!   s 0 0 [0000000000000001 (0000000000000009 plain
//!     row 0000000000000005 t:7 000000000000000b
//! txn 8 snapshot begin=12 commit=- aborted:write-conflict
//! end 2
//! ```
//!
//! Keys and values are lower-case hex (`-` when empty); versions are named
//! `c:TS` (committed with that timestamp) or `t:ID` (by transaction id);
//! scan bounds are `[KEY` (included), `(KEY` (excluded) or `*` (unbounded).
//! Indentation, blank lines and `#` comment lines are ignored. The trailer
//! `end N` (the number of transactions) closes the history: a file cut
//! short, even at a line boundary, lacks it and is refused.

use multiverse::research::history::{History, Op, Outcome, TxnRecord, WriteKind, Writer};
use multiverse::{AbortReason, Isolation, Key, KEY_MAX};
use std::fmt;
use std::io::{self, BufRead, BufWriter, Write};
use std::ops::Bound;

/// The first line of every history file.
pub const FORMAT_HEADER: &str = "multiverse-history 1";

/// The first word of the trailer line, `end N`, that closes every history
/// file (`N`: the number of transactions).
pub const FORMAT_TRAILER: &str = "end";

/// A history file that could not be read: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong, in one line.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

// ----------------------------------------------------------------------
// Writing
// ----------------------------------------------------------------------

/// Writes `history` in the text format (buffered internally).
pub fn write_history(history: &History, out: impl Write) -> io::Result<()> {
    let mut out = BufWriter::new(out);
    let mut line = String::new();
    writeln!(out, "{FORMAT_HEADER}")?;
    for t in &history.txns {
        line.clear();
        txn_line(t, &mut line);
        out.write_all(line.as_bytes())?;
        for op in &t.ops {
            line.clear();
            op_lines(op, &mut line);
            out.write_all(line.as_bytes())?;
        }
    }
    writeln!(out, "{FORMAT_TRAILER} {}", history.txns.len())?;
    out.flush()
}

fn txn_line(t: &TxnRecord, s: &mut String) {
    use fmt::Write as _;
    let commit = t.commit_ts.map_or("-".to_string(), |c| c.to_string());
    let outcome = match t.outcome {
        Outcome::Committed => "committed".to_string(),
        Outcome::Aborted(r) => format!("aborted:{}", r.name()),
    };
    let locking = if t.locking { " locking" } else { "" };
    let snapshot = if t.snapshot { " snapshot" } else { "" };
    let _ = writeln!(
        s,
        "txn {} {} begin={} commit={commit} {outcome}{locking}{snapshot}",
        t.id,
        t.isolation.name(),
        t.begin_ts
    );
}

fn op_lines(op: &Op, s: &mut String) {
    use fmt::Write as _;
    match op {
        Op::Read { table, key, version } => {
            let _ = write!(s, "  r {table} ");
            push_hex(s, key.as_bytes());
            match version {
                None => s.push_str(" none"),
                Some((w, v)) => {
                    s.push(' ');
                    push_writer(s, *w);
                    s.push(' ');
                    push_hex(s, v);
                }
            }
            s.push('\n');
        }
        Op::Write { table, key, kind, value } => {
            let _ = write!(s, "  w {table} ");
            push_hex(s, key.as_bytes());
            s.push_str(match kind {
                WriteKind::Insert => " insert ",
                WriteKind::Update => " update ",
                WriteKind::Delete => " delete ",
            });
            push_hex(s, value);
            s.push('\n');
        }
        Op::Scan { table, index, lo, hi, filtered, rows } => {
            let _ = write!(s, "  s {table} {index} ");
            push_bound(s, lo);
            s.push(' ');
            push_bound(s, hi);
            s.push_str(if *filtered { " filtered\n" } else { " plain\n" });
            for (key, w, v) in rows {
                s.push_str("    row ");
                push_hex(s, key.as_bytes());
                s.push(' ');
                push_writer(s, *w);
                s.push(' ');
                push_hex(s, v);
                s.push('\n');
            }
        }
    }
}

fn push_hex(s: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    if bytes.is_empty() {
        s.push('-');
    }
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
}

fn push_writer(s: &mut String, w: Writer) {
    use fmt::Write as _;
    let _ = match w {
        Writer::Committed(ts) => write!(s, "c:{ts}"),
        Writer::Txn(id) => write!(s, "t:{id}"),
    };
}

/// `[KEY`, `(KEY` or `*`; lower and upper bounds use the same brackets
/// (the position tells which is which).
fn push_bound(s: &mut String, b: &Bound<Key>) {
    match b {
        Bound::Included(k) => {
            s.push('[');
            push_hex(s, k.as_bytes());
        }
        Bound::Excluded(k) => {
            s.push('(');
            push_hex(s, k.as_bytes());
        }
        Bound::Unbounded => s.push('*'),
    }
}

// ----------------------------------------------------------------------
// Reading
// ----------------------------------------------------------------------

/// Reads a history in the text format. Never panics; the error names the
/// first offending line. A history without its trailer `end N`, or whose
/// trailer counts another number of transactions, is refused: it is
/// truncated (or was edited).
pub fn read_history(mut input: impl BufRead) -> Result<History, ParseError> {
    let mut parser = Parser { history: History::default(), current: None, seen_header: false, ended: false };
    let mut buf = String::new();
    let mut line = 0usize;
    loop {
        buf.clear();
        line += 1;
        let n = input
            .read_line(&mut buf)
            .map_err(|e| ParseError { line, message: format!("cannot read the history: {e}") })?;
        if n == 0 {
            break;
        }
        parser.line(&buf).map_err(|message| ParseError { line, message })?;
    }
    if !parser.seen_header {
        let message = format!("empty history: expected the header '{FORMAT_HEADER}'");
        return Err(ParseError { line: line.saturating_sub(1).max(1), message });
    }
    if !parser.ended {
        let n = parser.history.txns.len() + parser.current.is_some() as usize;
        let message = format!(
            "the history ends without its trailer '{FORMAT_TRAILER} N' after {n} transactions: the file is truncated"
        );
        return Err(ParseError { line: line.saturating_sub(1).max(1), message });
    }
    Ok(parser.finish())
}

struct Parser {
    history: History,
    current: Option<TxnRecord>,
    seen_header: bool,
    /// The trailer has been read: only comments and blank lines may follow.
    ended: bool,
}

type Parsed<T> = Result<T, String>;

impl Parser {
    fn line(&mut self, text: &str) -> Parsed<()> {
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            return Ok(());
        }
        if !self.seen_header {
            return self.header(text);
        }
        if self.ended {
            return Err(format!(
                "a line after the trailer '{FORMAT_TRAILER} N' (only comments and blank lines may follow it)"
            ));
        }
        let mut words = text.split_ascii_whitespace();
        let verb = words.next().unwrap_or_default();
        let args: Vec<&str> = words.collect();
        match verb {
            "txn" => self.txn(&args),
            "r" => self.op(parse_read(&args)?),
            "w" => self.op(parse_write(&args)?),
            "s" => self.op(parse_scan(&args)?),
            "row" => self.row(&args),
            FORMAT_TRAILER => self.trailer(&args),
            other => Err(format!("unknown line type '{}' (expected txn, r, w, s, row or end)", clip(other))),
        }
    }

    /// `end N`: the history is complete, and holds `N` transactions.
    fn trailer(&mut self, args: &[&str]) -> Parsed<()> {
        let [n] = args else {
            return Err(format!(
                "expected '{FORMAT_TRAILER} N' (N: the number of transactions), got {} fields after '{FORMAT_TRAILER}'",
                args.len()
            ));
        };
        let n = parse_u64(n, "transaction count")?;
        if let Some(t) = self.current.take() {
            self.history.txns.push(t);
        }
        let have = self.history.txns.len() as u64;
        if n != have {
            let why = if n > have { "some are missing" } else { "it holds more than were written" };
            return Err(format!("the trailer counts {n} transactions but the history holds {have}: {why}"));
        }
        self.ended = true;
        Ok(())
    }

    fn header(&mut self, text: &str) -> Parsed<()> {
        if text == FORMAT_HEADER {
            self.seen_header = true;
            return Ok(());
        }
        match text.strip_prefix("multiverse-history ") {
            Some(v) => Err(format!("unsupported history format version '{}' (this reader knows 1)", clip(v))),
            None => Err(format!("not a Multiverse history: expected the header '{FORMAT_HEADER}'")),
        }
    }

    fn txn(&mut self, args: &[&str]) -> Parsed<()> {
        const SHAPE: &str =
            "expected 'txn ID ISOLATION begin=TS commit=TS|- committed|aborted:REASON [locking] [snapshot]'";
        let (args, snapshot) = match args {
            [rest @ .., "snapshot"] => (rest, true),
            _ => (args, false),
        };
        let (args, locking) = match args {
            [rest @ .., "locking"] => (rest, true),
            _ => (args, false),
        };
        let [id, iso, begin, commit, outcome] = args else {
            return Err(format!(
                "{SHAPE}, got {} fields after 'txn'",
                args.len() + locking as usize + snapshot as usize
            ));
        };
        let id = parse_u64(id, "transaction id")?;
        let isolation: Isolation = iso.parse().map_err(|_| {
            let names: Vec<_> = Isolation::ALL.iter().map(|i| i.name()).collect();
            format!("unknown isolation level '{}' (expected one of: {})", clip(iso), names.join(", "))
        })?;
        let begin = begin.strip_prefix("begin=").ok_or_else(|| format!("{SHAPE}: missing begin="))?;
        let begin_ts = parse_u64(begin, "begin timestamp")?;
        let commit = commit.strip_prefix("commit=").ok_or_else(|| format!("{SHAPE}: missing commit="))?;
        let commit_ts = if commit == "-" { None } else { Some(parse_u64(commit, "commit timestamp")?) };
        let outcome = parse_outcome(outcome)?;
        if let Some(t) = self.current.take() {
            self.history.txns.push(t);
        }
        self.current =
            Some(TxnRecord { id, isolation, begin_ts, commit_ts, outcome, locking, snapshot, ops: Vec::new() });
        Ok(())
    }

    fn op(&mut self, op: Op) -> Parsed<()> {
        let t = self.current.as_mut().ok_or("an operation before the first 'txn' line")?;
        t.ops.push(op);
        Ok(())
    }

    fn row(&mut self, args: &[&str]) -> Parsed<()> {
        let [key, writer, value] = args else {
            return Err(format!("expected 'row KEYHEX WRITER VALUEHEX', got {} fields after 'row'", args.len()));
        };
        let row = (parse_key(key)?, parse_writer(writer)?, parse_hex(value, "value")?);
        match self.current.as_mut().and_then(|t| t.ops.last_mut()) {
            Some(Op::Scan { rows, .. }) => {
                rows.push(row);
                Ok(())
            }
            _ => Err("a 'row' line that does not follow an 's' (scan) line or its rows".into()),
        }
    }

    fn finish(mut self) -> History {
        if let Some(t) = self.current.take() {
            self.history.txns.push(t);
        }
        self.history
    }
}

fn parse_outcome(s: &str) -> Parsed<Outcome> {
    if s == "committed" {
        return Ok(Outcome::Committed);
    }
    let Some(reason) = s.strip_prefix("aborted:") else {
        return Err(format!("unknown outcome '{}' (expected committed or aborted:REASON)", clip(s)));
    };
    AbortReason::ALL.into_iter().find(|r| r.name() == reason).map(Outcome::Aborted).ok_or_else(|| {
        let names: Vec<_> = AbortReason::ALL.iter().map(|r| r.name()).collect();
        format!("unknown abort reason '{}' (expected one of: {})", clip(reason), names.join(", "))
    })
}

fn parse_read(args: &[&str]) -> Parsed<Op> {
    match args {
        [table, key, none] if *none == "none" => {
            Ok(Op::Read { table: parse_table(table)?, key: parse_key(key)?, version: None })
        }
        [table, key, writer, value] => Ok(Op::Read {
            table: parse_table(table)?,
            key: parse_key(key)?,
            version: Some((parse_writer(writer)?, parse_hex(value, "value")?)),
        }),
        _ => Err(format!(
            "expected 'r TABLE KEYHEX WRITER VALUEHEX' or 'r TABLE KEYHEX none', got {} fields after 'r'",
            args.len()
        )),
    }
}

fn parse_write(args: &[&str]) -> Parsed<Op> {
    let [table, key, kind, value] = args else {
        return Err(format!(
            "expected 'w TABLE KEYHEX insert|update|delete VALUEHEX', got {} fields after 'w'",
            args.len()
        ));
    };
    let kind = match *kind {
        "insert" => WriteKind::Insert,
        "update" => WriteKind::Update,
        "delete" => WriteKind::Delete,
        other => return Err(format!("unknown write kind '{}' (expected insert, update or delete)", clip(other))),
    };
    Ok(Op::Write { table: parse_table(table)?, key: parse_key(key)?, kind, value: parse_hex(value, "value")? })
}

fn parse_scan(args: &[&str]) -> Parsed<Op> {
    let [table, index, lo, hi, mode] = args else {
        return Err(format!("expected 's TABLE INDEX LO HI filtered|plain', got {} fields after 's'", args.len()));
    };
    let index: u8 = index.parse().map_err(|_| format!("bad index number '{}' (expected 0 to 255)", clip(index)))?;
    let filtered = match *mode {
        "filtered" => true,
        "plain" => false,
        other => return Err(format!("unknown scan mode '{}' (expected filtered or plain)", clip(other))),
    };
    Ok(Op::Scan {
        table: parse_table(table)?,
        index,
        lo: parse_bound(lo)?,
        hi: parse_bound(hi)?,
        filtered,
        rows: Vec::new(),
    })
}

fn parse_table(s: &str) -> Parsed<u32> {
    s.parse().map_err(|_| format!("bad table number '{}'", clip(s)))
}

fn parse_u64(s: &str, what: &str) -> Parsed<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("bad {what} '{}' (expected a non-negative integer)", clip(s)));
    }
    s.parse().map_err(|_| format!("{what} '{}' is out of range", clip(s)))
}

fn parse_writer(s: &str) -> Parsed<Writer> {
    if let Some(ts) = s.strip_prefix("c:") {
        return Ok(Writer::Committed(parse_u64(ts, "version timestamp")?));
    }
    if let Some(id) = s.strip_prefix("t:") {
        return Ok(Writer::Txn(parse_u64(id, "writer transaction id")?));
    }
    Err(format!("bad version '{}' (expected c:TIMESTAMP or t:TXNID)", clip(s)))
}

fn parse_bound(s: &str) -> Parsed<Bound<Key>> {
    if s == "*" {
        return Ok(Bound::Unbounded);
    }
    let key = |rest: &str| if rest.is_empty() { Ok(Key::EMPTY) } else { parse_key(rest) };
    if let Some(rest) = s.strip_prefix('[') {
        return Ok(Bound::Included(key(rest)?));
    }
    if let Some(rest) = s.strip_prefix('(') {
        return Ok(Bound::Excluded(key(rest)?));
    }
    Err(format!("bad scan bound '{}' (expected [KEYHEX, (KEYHEX or *)", clip(s)))
}

fn parse_key(s: &str) -> Parsed<Key> {
    let bytes = parse_hex(s, "key")?;
    if bytes.len() > KEY_MAX {
        return Err(format!("key of {} bytes is longer than the {KEY_MAX}-byte maximum", bytes.len()));
    }
    Key::from_bytes(&bytes).map_err(|e| e.to_string())
}

fn parse_hex(s: &str, what: &str) -> Parsed<Vec<u8>> {
    if s == "-" {
        return Ok(Vec::new());
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let b = s.as_bytes();
    if b.len() % 2 != 0 {
        return Err(format!("bad {what} hex '{}': odd number of digits", clip(s)));
    }
    b.chunks(2)
        .map(|p| match (digit(p[0]), digit(p[1])) {
            (Some(h), Some(l)) => Ok(h << 4 | l),
            _ => Err(format!("bad {what} hex '{}': not a hex digit", clip(s))),
        })
        .collect()
}

/// A token for an error message, shortened if long.
fn clip(s: &str) -> String {
    const MAX: usize = 40;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(MAX).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips() {
        let mut s = String::new();
        push_hex(&mut s, &[0, 1, 0xab, 0xff]);
        assert_eq!(s, "0001abff");
        assert_eq!(parse_hex(&s, "value").unwrap(), vec![0, 1, 0xab, 0xff]);
        assert_eq!(parse_hex("ABff", "value").unwrap(), vec![0xab, 0xff]);
        assert_eq!(parse_hex("-", "value").unwrap(), Vec::<u8>::new());
        assert!(parse_hex("abc", "value").unwrap_err().contains("odd"));
        assert!(parse_hex("zz", "value").unwrap_err().contains("not a hex digit"));
        assert!(parse_hex("é1", "value").is_err());
    }

    #[test]
    fn bounds_and_writers() {
        assert_eq!(parse_bound("*").unwrap(), Bound::Unbounded);
        assert_eq!(parse_bound("[").unwrap(), Bound::Included(Key::EMPTY));
        assert_eq!(parse_bound("(-").unwrap(), Bound::Excluded(Key::EMPTY));
        assert_eq!(parse_bound("[0000000000000005").unwrap(), Bound::Included(Key::from(5)));
        assert!(parse_bound("{00").is_err());
        assert_eq!(parse_writer("c:12").unwrap(), Writer::Committed(12));
        assert_eq!(parse_writer("t:7").unwrap(), Writer::Txn(7));
        assert!(parse_writer("x:7").is_err());
        assert!(parse_writer("c:-1").is_err());
        assert!(parse_writer("c:+1").is_err());
        assert!(parse_u64("99999999999999999999999", "id").unwrap_err().contains("out of range"));
    }
}
