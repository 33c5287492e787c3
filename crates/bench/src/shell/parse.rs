//! Parsing of script lines into [`Line`]s.
//!
//! A line is `SESSION COMMAND [ARGS]`, `setup K=V [K=V...]`, a comment
//! (`# ...`, also after a command) or blank. Tokens are separated by
//! whitespace, operators included: `update 1 value + 5`, not `value+5`.
//! Parsing never fails as a whole: a bad line becomes [`Line::Bad`] with a
//! one-line message, which the shell prints before going on.

use multiverse::{Isolation, Mode};

/// Longest `sleep` accepted, in milliseconds.
pub(crate) const MAX_SLEEP_MS: u64 = 60_000;

/// The reserved first word of a setup line; it is also the name of the
/// internal session that runs it.
pub(crate) const SETUP: &str = "setup";

/// One parsed script line.
#[derive(Debug, PartialEq)]
pub(crate) enum Line {
    /// Blank or comment only.
    Empty,
    /// A command for a session. `echo` is the line as printed in the output
    /// (comment stripped, whitespace collapsed).
    Command { session: String, echo: String, cmd: Command },
    /// A line that does not parse.
    Bad { echo: String, msg: String },
}

/// A row predicate: `value = N` or `value % M = R`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pred {
    /// `value = N`.
    Eq(i64),
    /// `value % M = R` (the remainder takes the sign of the value, as in SQL).
    Mod { m: i64, r: i64 },
}

impl Pred {
    /// True if a row with this value matches.
    pub(crate) fn matches(self, value: i64) -> bool {
        match self {
            Pred::Eq(n) => value == n,
            // wrapping_rem: i64::MIN % -1 is 0 instead of an overflow.
            Pred::Mod { m, r } => value.wrapping_rem(m) == r,
        }
    }
}

/// The new value of an updated row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Assign {
    /// `N`.
    Set(i64),
    /// `value + D`.
    Add(i64),
    /// `value - D`.
    Sub(i64),
}

impl Assign {
    /// The new value computed from the old one; `None` on overflow.
    pub(crate) fn apply(self, old: i64) -> Option<i64> {
        match self {
            Assign::Set(n) => Some(n),
            Assign::Add(d) => old.checked_add(d),
            Assign::Sub(d) => old.checked_sub(d),
        }
    }
}

/// A shell command.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Command {
    /// `begin [ISOLATION] [optimistic|pessimistic] [after last|after TS]
    /// [reads K...] [writes K...]` (`None`: the protocol's strongest level;
    /// the mode defaults to the protocol's choice). `after` asks to see a
    /// commit (POMVCC's request-based avoidance of HISTORICAL READ): the
    /// session's last one, or a commit timestamp. `reads`/`writes` declare
    /// the keys the transaction will access (ordered 2PL locks them at begin).
    Begin(Option<Isolation>, Mode, Option<Declared>, Option<After>),
    /// `commit`.
    Commit,
    /// `abort`.
    Abort,
    /// `sleep MS`: the session waits (shows how `blocked` works).
    Sleep(u64),
    /// A statement: runs in the open transaction, or in one of its own.
    Stmt(Stmt),
}

/// What a `begin ... after` must see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum After {
    /// The session's last commit.
    Last,
    /// A commit timestamp.
    Ts(u64),
}

/// Keys a `begin` declares: (reads, writes).
pub(crate) type Declared = (Vec<i64>, Vec<i64>);

/// A statement over table `test`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Stmt {
    /// `get K [K...]`.
    Get(Vec<i64>),
    /// `put K V`: insert or update.
    Put(i64, i64),
    /// `insert K V`.
    Insert(i64, i64),
    /// `update K V`, `update K value + D`, `update K value - D`.
    Update(i64, Assign),
    /// `delete K`.
    Delete(i64),
    /// `scan` / `scan where PRED`.
    Scan(Option<Pred>),
    /// `update where PRED set value = ...`.
    UpdateWhere(Pred, Assign),
    /// `delete where PRED`.
    DeleteWhere(Pred),
    /// `setup K=V ...`: insert rows (in one committed transaction).
    Setup(Vec<(i64, i64)>),
}

/// The command names, for error messages.
const COMMANDS: &str = "begin, get, put, insert, update, delete, scan, commit, abort, sleep";

/// Parses one script line.
pub(crate) fn parse_line(text: &str) -> Line {
    let code = text.split('#').next().unwrap_or_default();
    let words: Vec<&str> = code.split_whitespace().collect();
    let Some((&first, rest)) = words.split_first() else {
        return Line::Empty;
    };
    let echo = words.join(" ");
    let parsed = if first == SETUP {
        parse_setup(rest)
    } else {
        match rest.split_first() {
            Some((&name, args)) => parse_command(name, args),
            None => Err("missing command".to_string()),
        }
    };
    match parsed {
        Ok(cmd) => Line::Command { session: first.to_string(), echo, cmd },
        Err(msg) => Line::Bad { echo, msg },
    }
}

type Parsed<T> = Result<T, String>;

fn parse_command(name: &str, args: &[&str]) -> Parsed<Command> {
    match name {
        "begin" => parse_begin(args),
        "get" if args.is_empty() => Err("get needs at least one key".into()),
        "get" => args.iter().map(|a| int(a)).collect::<Parsed<_>>().map(|ks| Command::Stmt(Stmt::Get(ks))),
        "put" => key_value(args, "put").map(|(k, v)| Command::Stmt(Stmt::Put(k, v))),
        "insert" => key_value(args, "insert").map(|(k, v)| Command::Stmt(Stmt::Insert(k, v))),
        "update" => parse_update(args).map(Command::Stmt),
        "delete" => parse_delete(args).map(Command::Stmt),
        "scan" => parse_scan(args).map(Command::Stmt),
        "commit" => no_args(args, Command::Commit),
        "abort" => no_args(args, Command::Abort),
        "sleep" => parse_sleep(args),
        other => Err(format!("unknown command '{other}' (expected one of: {COMMANDS})")),
    }
}

fn parse_begin(args: &[&str]) -> Parsed<Command> {
    // The declaration: everything from the first `reads` or `writes` on.
    let at = args.iter().position(|w| *w == "reads" || *w == "writes").unwrap_or(args.len());
    let (args, decl) = args.split_at(at);
    let declared = if decl.is_empty() {
        None
    } else {
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        let mut into: Option<&mut Vec<i64>> = None;
        for w in decl {
            match *w {
                "reads" => into = Some(&mut reads),
                "writes" => into = Some(&mut writes),
                k => into.as_mut().expect("the declaration starts with a keyword").push(int(k)?),
            }
        }
        Some((reads, writes))
    };
    let (args, after) = match args {
        [rest @ .., "after", "last"] => (rest, Some(After::Last)),
        [rest @ .., "after", ts] => match ts.parse::<u64>() {
            Ok(ts) => (rest, Some(After::Ts(ts))),
            Err(_) => return Err(format!("expected 'after last' or 'after TIMESTAMP', not 'after {ts}'")),
        },
        _ => (args, None),
    };
    let (args, mode) = match args {
        [rest @ .., "optimistic"] => (rest, Mode::Optimistic),
        [rest @ .., "pessimistic"] => (rest, Mode::Pessimistic),
        _ => (args, Mode::Default),
    };
    match args {
        [] => Ok(Command::Begin(None, mode, declared, after)),
        [level] => level
            .parse::<Isolation>()
            .map(|i| Command::Begin(Some(i), mode, declared, after))
            .map_err(|e| e.to_string()),
        [_, extra, ..] => Err(unexpected(extra)),
    }
}

fn parse_update(args: &[&str]) -> Parsed<Stmt> {
    match args {
        ["where", rest @ ..] => {
            let Some(at) = rest.iter().position(|w| *w == "set") else {
                return Err("expected 'update where PRED set value = ...'".into());
            };
            let pred = parse_pred(&rest[..at])?;
            let assign = parse_set(&rest[at + 1..])?;
            Ok(Stmt::UpdateWhere(pred, assign))
        }
        [k, expr @ ..] => Ok(Stmt::Update(int(k)?, parse_expr(expr)?)),
        [] => Err("expected 'update K V', 'update K value + D' or 'update where PRED set ...'".into()),
    }
}

fn parse_delete(args: &[&str]) -> Parsed<Stmt> {
    match args {
        ["where", pred @ ..] => parse_pred(pred).map(Stmt::DeleteWhere),
        [k] => int(k).map(Stmt::Delete),
        [] => Err("expected 'delete K' or 'delete where PRED'".into()),
        [_, extra, ..] => Err(unexpected(extra)),
    }
}

fn parse_scan(args: &[&str]) -> Parsed<Stmt> {
    match args {
        [] => Ok(Stmt::Scan(None)),
        ["where", pred @ ..] => parse_pred(pred).map(|p| Stmt::Scan(Some(p))),
        [other, ..] => Err(format!("expected 'scan' or 'scan where PRED', found '{other}'")),
    }
}

fn parse_sleep(args: &[&str]) -> Parsed<Command> {
    match args {
        [ms] => match ms.parse::<u64>() {
            Ok(ms) if ms <= MAX_SLEEP_MS => Ok(Command::Sleep(ms)),
            _ => Err(format!("bad duration '{ms}' (expected milliseconds, at most {MAX_SLEEP_MS})")),
        },
        [] => Err("expected 'sleep MS'".into()),
        [_, extra, ..] => Err(unexpected(extra)),
    }
}

fn parse_setup(args: &[&str]) -> Parsed<Command> {
    if args.is_empty() {
        return Err("setup needs at least one K=V".into());
    }
    let row = |a: &&str| -> Parsed<(i64, i64)> {
        let (k, v) = a.split_once('=').ok_or_else(|| format!("expected K=V, found '{a}'"))?;
        Ok((int(k)?, int(v)?))
    };
    args.iter().map(row).collect::<Parsed<_>>().map(|rows| Command::Stmt(Stmt::Setup(rows)))
}

/// `value = N` or `value % M = R`.
fn parse_pred(words: &[&str]) -> Parsed<Pred> {
    match words {
        ["value", "=", n] => Ok(Pred::Eq(int(n)?)),
        ["value", "%", m, "=", r] => match int(m)? {
            0 => Err("modulus must not be zero".into()),
            m => Ok(Pred::Mod { m, r: int(r)? }),
        },
        _ => Err(format!("bad predicate '{}' (expected 'value = N' or 'value % M = R')", words.join(" "))),
    }
}

/// `value = N` or `value = value + D` (after `set`).
fn parse_set(words: &[&str]) -> Parsed<Assign> {
    match words {
        ["value", "=", expr @ ..] => parse_expr(expr),
        _ => Err(format!("bad assignment '{}' (expected 'value = N' or 'value = value + D')", words.join(" "))),
    }
}

/// `N`, `value + D` or `value - D`.
fn parse_expr(words: &[&str]) -> Parsed<Assign> {
    match words {
        [n] => int(n).map(Assign::Set),
        ["value", "+", d] => int(d).map(Assign::Add),
        ["value", "-", d] => int(d).map(Assign::Sub),
        [] => Err("missing value".into()),
        _ => Err(format!("bad value '{}' (expected N, 'value + D' or 'value - D')", words.join(" "))),
    }
}

fn key_value(args: &[&str], cmd: &str) -> Parsed<(i64, i64)> {
    match args {
        [k, v] => Ok((int(k)?, int(v)?)),
        [_, _, extra, ..] => Err(unexpected(extra)),
        _ => Err(format!("expected '{cmd} K V'")),
    }
}

fn no_args(args: &[&str], cmd: Command) -> Parsed<Command> {
    match args.first() {
        None => Ok(cmd),
        Some(extra) => Err(unexpected(extra)),
    }
}

fn int(s: &str) -> Parsed<i64> {
    s.parse().map_err(|_| format!("bad number '{s}' (expected an integer)"))
}

fn unexpected(word: &str) -> String {
    format!("unexpected '{word}'")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(text: &str) -> Command {
        match parse_line(text) {
            Line::Command { cmd, .. } => cmd,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn bad(text: &str) -> String {
        match parse_line(text) {
            Line::Bad { msg, .. } => msg,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn stmt(text: &str) -> Stmt {
        match cmd(text) {
            Command::Stmt(s) => s,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn parses_every_command() {
        assert_eq!(cmd("t1 begin"), Command::Begin(None, Mode::Default, None, None));
        assert_eq!(cmd("t1 begin snapshot"), Command::Begin(Some(Isolation::Snapshot), Mode::Default, None, None));
        assert_eq!(cmd("t1 begin pessimistic"), Command::Begin(None, Mode::Pessimistic, None, None));
        assert_eq!(
            cmd("t1 begin rr optimistic"),
            Command::Begin(Some(Isolation::RepeatableRead), Mode::Optimistic, None, None)
        );
        assert_eq!(
            cmd("t1 begin serializable reads 1 2 writes 2 3"),
            Command::Begin(Some(Isolation::Serializable), Mode::Default, Some((vec![1, 2], vec![2, 3])), None)
        );
        assert_eq!(cmd("t1 begin writes 4"), Command::Begin(None, Mode::Default, Some((vec![], vec![4])), None));
        assert!(bad("t1 begin reads x").contains("'x'"));
        assert_eq!(cmd("t1 begin after last"), Command::Begin(None, Mode::Default, None, Some(After::Last)));
        assert_eq!(
            cmd("t1 begin snapshot after 42 reads 1"),
            Command::Begin(Some(Isolation::Snapshot), Mode::Default, Some((vec![1], vec![])), Some(After::Ts(42)))
        );
        assert!(bad("t1 begin after soon").contains("'after soon'"));
        assert_eq!(cmd("t1 commit"), Command::Commit);
        assert_eq!(cmd("t1 abort"), Command::Abort);
        assert_eq!(cmd("t1 sleep 10"), Command::Sleep(10));
        assert_eq!(stmt("t1 get 1 -2 3"), Stmt::Get(vec![1, -2, 3]));
        assert_eq!(stmt("t1 put 1 -5"), Stmt::Put(1, -5));
        assert_eq!(stmt("t1 insert 1 5"), Stmt::Insert(1, 5));
        assert_eq!(stmt("t1 update 1 5"), Stmt::Update(1, Assign::Set(5)));
        assert_eq!(stmt("t1 update 1 value + 5"), Stmt::Update(1, Assign::Add(5)));
        assert_eq!(stmt("t1 update 1 value - 5"), Stmt::Update(1, Assign::Sub(5)));
        assert_eq!(stmt("t1 delete 1"), Stmt::Delete(1));
        assert_eq!(stmt("t1 scan"), Stmt::Scan(None));
        assert_eq!(stmt("t1 scan where value = 3"), Stmt::Scan(Some(Pred::Eq(3))));
        assert_eq!(stmt("t1 scan where value % 3 = 1"), Stmt::Scan(Some(Pred::Mod { m: 3, r: 1 })));
        assert_eq!(
            stmt("t1 update where value = 3 set value = value + 1"),
            Stmt::UpdateWhere(Pred::Eq(3), Assign::Add(1))
        );
        assert_eq!(
            stmt("t1 update where value % 2 = 0 set value = 7"),
            Stmt::UpdateWhere(Pred::Mod { m: 2, r: 0 }, Assign::Set(7))
        );
        assert_eq!(stmt("t1 delete where value = 3"), Stmt::DeleteWhere(Pred::Eq(3)));
        assert_eq!(stmt("setup 1=10 -2=-20"), Stmt::Setup(vec![(1, 10), (-2, -20)]));
    }

    #[test]
    fn strips_comments_and_collapses_whitespace() {
        assert_eq!(parse_line("   "), Line::Empty);
        assert_eq!(parse_line("# a comment"), Line::Empty);
        assert_eq!(
            parse_line("  t1   get  1   # {1:10}"),
            Line::Command { session: "t1".into(), echo: "t1 get 1".into(), cmd: Command::Stmt(Stmt::Get(vec![1])) }
        );
    }

    #[test]
    fn reports_bad_lines() {
        assert!(bad("t1").contains("missing command"));
        assert!(bad("t1 frob").contains("unknown command 'frob'"));
        assert!(bad("t1 get x").contains("bad number 'x'"));
        assert!(bad("t1 get 99999999999999999999").contains("bad number"));
        assert!(bad("t1 begin sometimes").contains("unknown isolation level 'sometimes'"));
        assert!(bad("t1 commit now").contains("unexpected 'now'"));
        assert!(bad("t1 put 1").contains("expected 'put K V'"));
        assert!(bad("t1 scan where value > 3").contains("bad predicate"));
        assert!(bad("t1 scan where value % 0 = 0").contains("modulus"));
        assert!(bad("t1 update where value = 1").contains("set"));
        assert!(bad("t1 update 1 value * 2").contains("bad value"));
        assert!(bad("setup 1:10").contains("expected K=V"));
        assert!(bad("setup").contains("at least one"));
        assert!(bad("t1 sleep forever").contains("bad duration"));
    }

    #[test]
    fn predicates_and_assignments() {
        assert!(Pred::Mod { m: 3, r: 0 }.matches(30));
        assert!(Pred::Mod { m: 3, r: -1 }.matches(-4));
        assert!(Pred::Mod { m: -1, r: 0 }.matches(i64::MIN));
        assert!(!Pred::Eq(3).matches(4));
        assert_eq!(Assign::Add(1).apply(i64::MAX), None);
        assert_eq!(Assign::Sub(1).apply(5), Some(4));
        assert_eq!(Assign::Set(9).apply(5), Some(9));
    }
}
