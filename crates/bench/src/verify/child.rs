//! One run of the campaign: `multiverse bench --verify` as a child process
//! of its own, watched with a time limit, and its verdict ([`Verdict`])
//! read from its exit status, its output and its JSON record.

use super::*;

/// What a run found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The checker found nothing forbidden and every check passed.
    Ok,
    /// The checker found a forbidden anomaly.
    Anomaly,
    /// The workload's consistency check (or the list-append check) failed.
    Inconsistent,
    /// The run panicked, aborted or was killed by a signal.
    Crash,
    /// The run did not finish in time and was killed.
    Hang,
    /// bench refused to run the point (a pair the grid thinks runnable).
    Refused,
    /// Any other failure (the message says which).
    Failed,
}

impl Verdict {
    pub(super) fn name(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Anomaly => "ANOMALY",
            Verdict::Inconsistent => "INCONSISTENT",
            Verdict::Crash => "CRASH",
            Verdict::Hang => "HANG",
            Verdict::Refused => "REFUSED",
            Verdict::Failed => "FAILED",
        }
    }
}

/// One finished run.
pub(super) struct Outcome {
    pub(super) verdict: Verdict,
    /// What went wrong, in one line (empty when ok).
    pub(super) detail: String,
    pub(super) committed: Option<u64>,
    pub(super) aborted: Option<u64>,
    /// Cyclic components and predicate anti-dependency edges, from the
    /// checker's report.
    pub(super) cycles: Option<u64>,
    pub(super) prw: Option<u64>,
    pub(super) wall: Duration,
    /// The output of a failing run (kept with --keep).
    pub(super) output: String,
}

/// The number right after `label` in `s` (`predicate rw 12` → 12).
pub(super) fn number_after(s: &str, label: &str) -> Option<u64> {
    let rest = &s[s.find(label)? + label.len()..];
    let digits: String = rest.trim_start().chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// The number right before `label` in `s` (`3 cyclic components` → 3).
pub(super) fn number_before(s: &str, label: &str) -> Option<u64> {
    let head = s[..s.find(label)?].trim_end();
    let start = head.rfind(|c: char| !c.is_ascii_digit()).map_or(0, |i| i + 1);
    head[start..].parse().ok()
}

/// Reads a run's verdict from its exit and output.
pub(super) fn judge(code: Option<i32>, stdout: &str, stderr: &str) -> (Verdict, String) {
    // The error line: bench's one-line error, or the first line of an
    // argument error (the parser adds a usage hint after it), or else the
    // last line written.
    let last_err = stderr
        .lines()
        .find(|l| l.starts_with("multiverse: ") || l.starts_with("error: "))
        .or_else(|| stderr.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("")
        .trim()
        .trim_start_matches("multiverse: ")
        .to_string();
    // The checker's verdict (`verify: serializable: OK ...`), and those of
    // the workload's own cross-checks (`verify: list-append: ...`).
    let is_level = |v: &&str| Isolation::ALL.iter().any(|l| v.starts_with(&format!("{}: ", l.name())));
    let verify_line = stdout.lines().filter_map(|l| l.strip_prefix("verify: ")).find(is_level);
    let other_check = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("verify: "))
        .find(|v| !is_level(v) && (v.contains("mismatch") || v.contains("FAILED")));
    if stderr.contains("panicked at") || code.is_none() || code == Some(101) || code == Some(134) {
        let first = stderr.lines().find(|l| l.contains("panicked at")).map(str::trim);
        let how = match code {
            None => "killed by a signal".to_string(),
            Some(c) => format!("exit status {c}"),
        };
        let detail = match first {
            Some(p) => {
                let msg = stderr.lines().skip_while(|l| !l.contains("panicked at")).nth(1).unwrap_or("").trim();
                format!("{p} {msg}")
            }
            None if last_err.is_empty() => how,
            None => format!("{how}: {last_err}"),
        };
        return (Verdict::Crash, detail);
    }
    if code == Some(0) && other_check.is_none() {
        return match verify_line {
            Some(v) if v.contains(": OK") => (Verdict::Ok, String::new()),
            Some(v) => (Verdict::Failed, format!("exit status 0 with the verdict '{v}'")),
            None => (Verdict::Failed, "exit status 0 without a verdict from the checker".into()),
        };
    }
    if let Some(v) = verify_line.filter(|v| v.contains("FAILED")) {
        // The classes the claimed level forbids, from the report's lines.
        let classes: Vec<&str> = stdout.lines().filter(|l| l.contains("(forbidden at")).map(str::trim).collect();
        let detail = if classes.is_empty() { v.to_string() } else { format!("{v}: {}", classes.join("; ")) };
        return (Verdict::Anomaly, detail);
    }
    if let Some(v) = other_check {
        return (Verdict::Inconsistent, v.to_string());
    }
    if last_err.contains("consistency check failed") {
        return (Verdict::Inconsistent, last_err);
    }
    if last_err.contains("does not declare") || last_err.contains("not declared") || last_err.contains("cannot run") {
        return (Verdict::Refused, last_err);
    }
    let detail = if last_err.is_empty() { format!("exit status {}", code.unwrap_or(-1)) } else { last_err };
    (Verdict::Failed, detail)
}

/// Runs `bench` with `args` as a child process, killed after `limit`.
pub(super) fn run_child(args: &[String], json: &Path, history: Option<&Path>, limit: Duration) -> Outcome {
    let start = Instant::now();
    let fail = |verdict, detail: String| Outcome {
        verdict,
        detail,
        committed: None,
        aborted: None,
        cycles: None,
        prw: None,
        wall: start.elapsed(),
        output: String::new(),
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(Verdict::Failed, format!("cannot find the multiverse executable: {e}")),
    };
    let mut cmd = Command::new(exe);
    cmd.arg("bench").args(args).arg(format!("--json={}", json.display()));
    // Faults come from --fault only, never from the environment.
    cmd.env_remove("MULTIVERSE_FAULTS");
    if let Some(h) = history {
        cmd.arg(format!("--history={}", h.display()));
    }
    let mut child = match cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => return fail(Verdict::Failed, format!("cannot start a bench run: {e}")),
    };
    // Drain both pipes while waiting, so a chatty run cannot block on them.
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut s);
            }
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let mut hung = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() > limit => {
                hung = true;
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let (verdict, detail) = if hung {
        (Verdict::Hang, format!("still running after {:.0} s; killed", limit.as_secs_f64()))
    } else {
        judge(status.and_then(|s| s.code()), &stdout, &stderr)
    };
    let history_line = stdout.lines().find(|l| l.starts_with("history: ")).unwrap_or("");
    let rec: Option<serde_json::Value> = std::fs::read_to_string(json).ok().and_then(|t| serde_json::from_str(&t).ok());
    let _ = std::fs::remove_file(json);
    let field = |name: &str| rec.as_ref().and_then(|r| r[name].as_u64());
    Outcome {
        verdict,
        detail,
        committed: field("committed"),
        aborted: field("aborted"),
        cycles: number_before(history_line, "cyclic component"),
        prw: number_after(history_line, "predicate rw"),
        wall: start.elapsed(),
        output: if verdict == Verdict::Ok { String::new() } else { format!("{stdout}\n--- stderr ---\n{stderr}") },
    }
}

/// `multiverse bench ...` as a shell command line.
pub(super) fn command_line(args: &[String]) -> String {
    let mut s = String::from("multiverse bench");
    for a in args {
        let plain = a.chars().all(|c| c.is_ascii_alphanumeric() || "-_.,:+/=@".contains(c));
        if plain && !a.is_empty() {
            let _ = write!(s, " {a}");
        } else {
            let _ = write!(s, " '{}'", a.replace('\'', r"'\''"));
        }
    }
    s
}
