//! `multiverse shell`: the multi-session script shell (DESIGN.md, "The
//! script shell"; user documentation in docs/SHELL.md).
//!
//! A script drives several sessions against one table
//! `test(id integer key, value integer)`:
//!
//! ```text
//! setup 1=10 2=20
//! t1 begin snapshot
//! t2 begin snapshot
//! t1 get 1              # -> {1:10}
//! t2 update 1 12
//! t2 commit
//! t1 get 1              # still {1:10}: t1 reads as of its begin
//! ```
//!
//! Every session runs on its own thread and owns its transaction, so a
//! command that has to wait does not stop the others. Each finished command
//! prints `SESSION COMMAND ARGS -> RESULT`; the last line is the committed
//! state, `final -> {1:12, 2:20}`.
//!
//! Modules: [`parse`] (script lines to commands), [`rows`] (the encoding of
//! `test` and the printed form of rows), [`session`] (the session threads,
//! which talk to the engine), [`driver`] (the ordering of the output),
//! [`waiting`] (whether a session's thread waits), [`permute`] (scripts of
//! steps run in every interleaving), [`store`] (the sessions on another
//! embedded store), [`matrix`] (the anomaly tables of docs/ISOLATION.md and
//! docs/ISOLATION-PEERS.md).

mod driver;
mod matrix;
mod parse;
mod permute;
mod rows;
mod session;
mod store;
mod waiting;

use driver::Driver;
use multiverse::Protocol;
use std::io::{self, BufRead, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Arguments of `multiverse shell`.
#[derive(clap::Args)]
pub struct ShellArgs {
    /// Concurrency-control protocol, or another embedded store
    /// (surrealmx, rocksdb-optimistic, rocksdb-pessimistic, fjall, redb,
    /// sqlite; built with `--features peers`).
    #[arg(long, default_value = "mv-occ")]
    protocol: String,

    /// Script file; standard input when absent or "-". A file, or standard
    /// input that is not a terminal, is read whole and refused (one line
    /// naming the first byte that is not text) if it is not UTF-8 text,
    /// before anything runs; on a terminal each line runs as it is typed,
    /// after a `multiverse> ` prompt on standard error.
    script: Option<PathBuf>,

    /// Milliseconds a single-version locking transaction waits for a lock
    /// before it aborts (lock-timeout; how 1v-lock breaks deadlocks); on a
    /// store, how long a RocksDB pessimistic transaction waits for a lock
    /// and an SQLite writer for the write lock.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    lock_timeout_ms: u64,

    /// ssn: the concurrency control SSN certifies, rc (read committed) or
    /// si (snapshot isolation) [default: si].
    #[arg(long, value_name = "B")]
    base: Option<String>,

    /// pomvcc: milliseconds between the periodic advances of the commit
    /// timestamp (section VI.C). Long by default, so that a script shows
    /// HISTORICAL READ the same way every run: a commit becomes visible to
    /// later transactions when a conflict or `begin ... after` moves the
    /// timestamps, or this long after it.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pomvcc_interval_ms: u64,

    /// Milliseconds a command may take before it is reported as blocked
    /// (if its session's thread also shows that it waits) [default: 100;
    /// with --matrix, 500].
    #[arg(long, hide = true, value_name = "MS")]
    grace_ms: Option<u64>,

    /// Exit non-zero if any line's result is an error (a bad line, an
    /// unknown session, a session that cannot start).
    #[arg(long)]
    check: bool,

    /// Run the Hermitage anomaly set against every protocol at every level
    /// it claims and print the table of docs/ISOLATION.md (which is this
    /// output); takes no script.
    #[arg(long, conflicts_with_all = ["script", "expect", "protocol"])]
    matrix: bool,

    /// With --matrix: run the anomaly set against the other embedded
    /// stores, every store at every level it offers, and print
    /// docs/ISOLATION-PEERS.md (needs every store compiled in).
    #[arg(long, requires = "matrix")]
    stores: bool,

    /// Compare the output with this file (an earlier run's output, such as
    /// the `.out` files in examples/scripts) and exit non-zero where they
    /// differ. Error lines the file expects are no failure (add --check to
    /// fail on any error line as well).
    #[arg(long, value_name = "FILE")]
    expect: Option<PathBuf>,
}

/// Standard output, and a copy of it when it is to be compared.
struct Tee<W: Write> {
    out: W,
    copy: Option<Vec<u8>>,
}

impl<W: Write> Write for Tee<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        if let Some(c) = &mut self.copy {
            c.extend_from_slice(&buf[..n]);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// `multiverse shell`.
pub fn run(a: ShellArgs) -> Result<(), String> {
    if a.matrix {
        let base = matrix::base_options();
        let grace = Duration::from_millis(a.grace_ms.unwrap_or(MATRIX_GRACE_MS));
        let doc = if a.stores {
            matrix::stores_document(&matrix::run(&matrix::store_columns()?, &base, grace)?)
        } else {
            matrix::document(&matrix::run(&matrix::columns(), &base, grace)?)
        };
        print!("{doc}");
        return Ok(());
    }
    // A store or a protocol: refused in one line before anything runs.
    let store = crate::bench::peers::is_peer(&a.protocol);
    let protocol = if store {
        crate::bench::peers::resolve_level(&a.protocol, None)?;
        None
    } else {
        Some(available_protocol(&a.protocol)?)
    };
    // Read first: a missing expected file is an error before anything runs.
    let expected = match &a.expect {
        Some(p) => Some(std::fs::read_to_string(p).map_err(|e| format!("cannot read '{}': {e}", p.display()))?),
        None => None,
    };
    let (name, mut input) = open_script(a.script.as_deref(), io::stdin().is_terminal())?;
    let lock_timeout = Duration::from_millis(a.lock_timeout_ms);
    // Opens a fresh database or store (one per permutation).
    let open: Box<dyn Fn() -> Result<session::Context, String>> = match protocol {
        None => {
            if a.base.is_some() {
                return Err(format!("--base does not apply to store {} (it is a setting of ssn)", a.protocol));
            }
            let name = a.protocol.clone();
            Box::new(move || store::open(&name, lock_timeout))
        }
        Some(protocol) => {
            let ssn_base = crate::bench::parse_base(a.base.as_deref(), protocol)?;
            let opts = multiverse::Options {
                protocol,
                lock_timeout,
                ssn_base,
                pomvcc_interval: Duration::from_millis(a.pomvcc_interval_ms),
                ..multiverse::Options::default()
            };
            Box::new(move || session::Context::open(opts.clone()))
        }
    };
    let grace = Duration::from_millis(a.grace_ms.unwrap_or(GRACE_MS));
    let mut out = Tee { out: io::stdout().lock(), copy: expected.as_ref().map(|_| Vec::new()) };
    let mut read = || input.next().map_err(|e| format!("cannot read script {name}: {e}"));
    // The lines before the first command or step (setup, comments) are held
    // back: a script whose first is a step is a permutation script, read
    // whole; any other runs line by line as it is read.
    let mut head = Vec::new();
    let mut first = None;
    while let Some(line) = read()? {
        if matches!(permute::first_word(&line), None | Some(parse::SETUP)) {
            head.push(line);
        } else {
            first = Some(line);
            break;
        }
    }
    let errors = if first.as_deref().and_then(permute::first_word) == Some("step") {
        let mut lines = head;
        lines.extend(first);
        while let Some(line) = read()? {
            lines.push(line);
        }
        let script = permute::Script::parse(&lines).map_err(|e| format!("script {name}: {e}"))?;
        script.run(&*open, grace, &mut out)?
    } else {
        let ctx = open()?;
        let mut driver = Driver::new(ctx, grace, &mut out);
        let mut seq = 0;
        for line in head.into_iter().chain(first) {
            driver.line(seq, &line).map_err(output_error)?;
            seq += 1;
        }
        while let Some(line) = read()? {
            driver.line(seq, &line).map_err(output_error)?;
            seq += 1;
        }
        let errors = driver.errors();
        driver.finish().map_err(output_error)?;
        errors
    };
    if let (Some(want), Some(got), Some(path)) = (&expected, &out.copy, &a.expect) {
        let got = String::from_utf8_lossy(got);
        if let Some(diff) = first_difference(&got, want) {
            return Err(format!("the output differs from '{}' {diff}", path.display()));
        }
    }
    if a.check && errors > 0 {
        let lines = if errors == 1 { "line" } else { "lines" };
        return Err(format!("{errors} {lines} of the script gave an error"));
    }
    Ok(())
}

/// Where `got` first differs from `want`, line by line, as words for an
/// error message; `None` if they are equal (line endings aside).
fn first_difference(got: &str, want: &str) -> Option<String> {
    let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
    let at = g.iter().zip(&w).position(|(a, b)| a != b).unwrap_or(g.len().min(w.len()));
    match (g.get(at), w.get(at)) {
        (None, None) => None,
        (Some(a), Some(b)) => Some(format!("at line {}: expected `{b}`, got `{a}`", at + 1)),
        (Some(a), None) => Some(format!("at line {}: expected the end, got `{a}`", at + 1)),
        (None, Some(b)) => Some(format!("at line {}: expected `{b}`, got the end", at + 1)),
    }
}

/// The grace period of a script (ms).
const GRACE_MS: u64 = 100;
/// The grace period of `--matrix` runs (ms): they run 23 at once.
const MATRIX_GRACE_MS: u64 = 500;

/// Parses a protocol name (every protocol is built in).
fn available_protocol(name: &str) -> Result<Protocol, String> {
    name.parse().map_err(|e: multiverse::Error| e.to_string())
}

/// The prompt shown (on standard error) before each line typed on a terminal.
const PROMPT: &str = "multiverse> ";

/// The prompt for a script read from standard input: [`PROMPT`] when it is
/// a terminal (someone types the script), none when it is a pipe or a file
/// (the output is then the results alone, as the `.out` files hold them).
fn prompt(stdin_is_terminal: bool) -> Option<&'static str> {
    stdin_is_terminal.then_some(PROMPT)
}

/// Where a script's lines come from.
enum Input {
    /// A file, or standard input that is not a terminal: read whole and
    /// checked to be text before anything runs.
    Text(std::vec::IntoIter<String>),
    /// A terminal: each line as it is typed, after the prompt.
    Typed(Typed<io::StdinLock<'static>, io::Stderr>),
}

impl Input {
    /// The next line without its line ending.
    fn next(&mut self) -> io::Result<Option<String>> {
        match self {
            Input::Text(lines) => Ok(lines.next()),
            Input::Typed(t) => t.next(),
        }
    }
}

/// Lines read one at a time, each after a prompt, if there is one.
struct Typed<R, W> {
    reader: R,
    prompt: Option<(&'static str, W)>,
}

impl<R: BufRead, W: Write> Typed<R, W> {
    /// The next line; the prompt is written before it is read, and a line
    /// end after the last (end of input typed at the prompt), so that the
    /// final state starts a line of its own. A prompt that cannot be
    /// written is left out: the script still runs.
    fn next(&mut self) -> io::Result<Option<String>> {
        if let Some((p, w)) = &mut self.prompt {
            let _ = w.write_all(p.as_bytes()).and_then(|()| w.flush());
        }
        let line = next_line(&mut self.reader)?;
        if let (None, Some((_, w))) = (&line, &mut self.prompt) {
            let _ = writeln!(w);
        }
        Ok(line)
    }
}

/// The script's display name and its lines: a file, or standard input that
/// is not a terminal, read whole and refused unless it is text; a terminal
/// line by line, with a prompt.
fn open_script(path: Option<&Path>, stdin_is_terminal: bool) -> Result<(String, Input), String> {
    let stdin = "from standard input".to_string();
    let (name, bytes) = match path {
        Some(p) if p.as_os_str() != "-" => {
            let name = format!("'{}'", p.display());
            let bytes = std::fs::read(p).map_err(|e| format!("cannot read script {name}: {e}"))?;
            (name, bytes)
        }
        _ if stdin_is_terminal => {
            let typed = Typed { reader: io::stdin().lock(), prompt: prompt(true).map(|p| (p, io::stderr())) };
            return Ok((stdin, Input::Typed(typed)));
        }
        _ => {
            let mut bytes = Vec::new();
            io::stdin().lock().read_to_end(&mut bytes).map_err(|e| format!("cannot read script {stdin}: {e}"))?;
            (stdin, bytes)
        }
    };
    let lines = text_lines(&bytes).map_err(|e| format!("script {name} is not text: {e}; nothing was run"))?;
    Ok((name, Input::Text(lines.into_iter())))
}

/// The lines of a script, without their line endings, if it is text: UTF-8
/// without control characters other than tab, line feed, form feed and
/// carriage return. Otherwise the first byte that is not, as words.
fn text_lines(bytes: &[u8]) -> Result<Vec<String>, String> {
    let at = |offset: usize| {
        let line = bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
        format!("at byte offset {offset} (line {line})")
    };
    // The first byte that is not text, whichever kind it is.
    let utf8 = std::str::from_utf8(bytes);
    let valid = utf8.as_ref().map_or_else(|e| e.valid_up_to(), |t| t.len());
    let control = |b: &u8| b.is_ascii_control() && !matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r');
    if let Some(offset) = bytes[..valid].iter().position(control) {
        return Err(format!("control byte 0x{:02x} {}", bytes[offset], at(offset)));
    }
    let text = utf8.map_err(|_| format!("byte 0x{:02x} {} is not UTF-8", bytes[valid], at(valid)))?;
    Ok(text.split_inclusive('\n').map(|l| l.trim_end_matches(['\n', '\r']).to_string()).collect())
}

/// The next line without its line ending; bytes that are not UTF-8 (typed
/// on a terminal) become U+FFFD, and the line is then reported as a bad
/// line, not a failure.
fn next_line(r: &mut dyn BufRead) -> io::Result<Option<String>> {
    let mut buf = Vec::new();
    if r.read_until(b'\n', &mut buf)? == 0 {
        return Ok(None);
    }
    while matches!(buf.last(), Some(b'\n' | b'\r')) {
        buf.pop();
    }
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

fn output_error(e: io::Error) -> String {
    format!("cannot write output: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads every line of `input` as a terminal (`true`) or a pipe
    /// (`false`) would be read; returns the lines and what was prompted.
    fn typed(input: &str, stdin_is_terminal: bool) -> (Vec<String>, String) {
        let mut t = Typed { reader: input.as_bytes(), prompt: prompt(stdin_is_terminal).map(|p| (p, Vec::new())) };
        let mut lines = Vec::new();
        while let Some(line) = t.next().expect("reads") {
            lines.push(line);
        }
        let shown = t.prompt.map(|(_, w)| String::from_utf8(w).expect("UTF-8")).unwrap_or_default();
        (lines, shown)
    }

    #[test]
    fn a_terminal_gets_a_prompt_before_each_line_and_a_pipe_none() {
        let (lines, shown) = typed("t1 get 1\nt1 put 1 2\n", true);
        assert_eq!(lines, ["t1 get 1", "t1 put 1 2"]);
        assert_eq!(shown, "multiverse> multiverse> multiverse> \n", "a prompt per read, a line end at the end");
        let (lines, shown) = typed("t1 get 1\nt1 put 1 2\n", false);
        assert_eq!(lines, ["t1 get 1", "t1 put 1 2"]);
        assert_eq!(shown, "");
    }

    #[test]
    fn text_is_split_into_lines_as_it_would_be_read() {
        assert_eq!(text_lines(b"a\r\n\nb\tc\x0cd\r\r\ne").unwrap(), ["a", "", "b\tc\x0cd", "e"]);
        assert_eq!(text_lines(b"").unwrap(), Vec::<String>::new());
        assert_eq!(text_lines("é 1\n".as_bytes()).unwrap(), ["é 1"]);
    }

    #[test]
    fn bytes_that_are_not_text_are_named_with_their_offset_and_line() {
        assert_eq!(
            text_lines(b"t1 get 1\nt1 put 1 \xff\n").unwrap_err(),
            "byte 0xff at byte offset 18 (line 2) is not UTF-8"
        );
        assert_eq!(text_lines(b"\x89PNG\r\n").unwrap_err(), "byte 0x89 at byte offset 0 (line 1) is not UTF-8");
        // A sequence cut short at the end.
        assert_eq!(text_lines(b"a\n\xc3").unwrap_err(), "byte 0xc3 at byte offset 2 (line 2) is not UTF-8");
        assert_eq!(text_lines(b"a\nb\nc\0d").unwrap_err(), "control byte 0x00 at byte offset 5 (line 3)");
        assert_eq!(text_lines(b"\x1b[A").unwrap_err(), "control byte 0x1b at byte offset 0 (line 1)");
        // An executable: its first byte (DEL), not its first byte past UTF-8.
        assert_eq!(text_lines(b"\x7fELF\x02\x01\x94").unwrap_err(), "control byte 0x7f at byte offset 0 (line 1)");
    }
}
