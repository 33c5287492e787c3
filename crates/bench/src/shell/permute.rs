//! Permutation scripts, as PostgreSQL's isolation tester runs them: the
//! script names its sessions' steps, and the shell runs the steps in every
//! interleaving that keeps each session's own order (or in the listed
//! ones), each on a fresh database (docs/SHELL.md, "Permutations").
//!
//! ```text
//! setup 1=10 2=20
//! step b1 t1 begin serializable
//! step r1 t1 scan
//! step w1 t1 update 1 value - 20
//! step c1 t1 commit
//! step b2 t2 begin serializable
//! ...
//! permutation b1 r1 b2 r2 w1 w2 c1 c2   # optional; none: every interleaving
//! ```
//!
//! Lines that are neither `step` nor `permutation` (setup, observers) run
//! before the steps of every permutation, in script order.

use super::driver::Driver;
use super::session::Context;
use std::collections::HashMap;
use std::io::{self, Write};
use std::time::Duration;

/// Interleavings a script may ask for (each runs on its own database).
pub(crate) const MAX_PERMUTATIONS: usize = 10_000;

/// A permutation script, parsed.
pub(crate) struct Script {
    /// Lines run before the steps of every permutation.
    prologue: Vec<String>,
    /// Steps by declaration: name and the `SESSION COMMAND ...` line.
    steps: Vec<(String, String)>,
    /// The permutations to run, as step indexes.
    permutations: Vec<Vec<usize>>,
}

/// The first word of a line, comments aside (`None`: blank).
pub(crate) fn first_word(line: &str) -> Option<&str> {
    line.split('#').next().unwrap_or_default().split_whitespace().next()
}

impl Script {
    /// Parses the script; an error names the line at fault.
    pub(crate) fn parse(lines: &[String]) -> Result<Script, String> {
        let mut prologue = Vec::new();
        let mut steps: Vec<(String, String)> = Vec::new();
        let mut by_name = HashMap::new();
        let mut listed = Vec::new();
        for (n, line) in lines.iter().enumerate() {
            let at = |msg: String| format!("line {}: {msg}", n + 1);
            let code = line.split('#').next().unwrap_or_default();
            let words: Vec<&str> = code.split_whitespace().collect();
            match words.first() {
                Some(&"step") => {
                    let (Some(name), Some(_session), Some(_cmd)) = (words.get(1), words.get(2), words.get(3)) else {
                        return Err(at("a step is `step NAME SESSION COMMAND ...`".into()));
                    };
                    if by_name.insert(name.to_string(), steps.len()).is_some() {
                        return Err(at(format!("step {name} is declared twice")));
                    }
                    steps.push((name.to_string(), words[2..].join(" ")));
                }
                Some(&"permutation") => {
                    let names = &words[1..];
                    if names.is_empty() {
                        return Err(at("a permutation lists step names".into()));
                    }
                    listed.push((n, names.iter().map(|s| s.to_string()).collect::<Vec<_>>()));
                }
                _ => prologue.push(line.clone()),
            }
        }
        let mut permutations = Vec::new();
        for (n, names) in listed {
            let p = names
                .iter()
                .map(|s| by_name.get(s).copied().ok_or_else(|| format!("line {}: no step named {s}", n + 1)))
                .collect::<Result<Vec<_>, _>>()?;
            permutations.push(p);
        }
        if permutations.is_empty() {
            permutations = interleavings(&steps)?;
        }
        Ok(Script { prologue, steps, permutations })
    }

    /// Runs every permutation on a fresh database or store from `open`, printing a
    /// header line, each line's result and the final state, a blank line
    /// between permutations. Returns the number of error lines.
    pub(crate) fn run<W: Write>(
        &self,
        open: &dyn Fn() -> Result<Context, String>,
        grace: Duration,
        out: &mut W,
    ) -> Result<usize, String> {
        let mut errors = 0;
        for (i, p) in self.permutations.iter().enumerate() {
            let names: Vec<&str> = p.iter().map(|&s| self.steps[s].0.as_str()).collect();
            let head = format!("{}permutation {}", if i > 0 { "\n" } else { "" }, names.join(" "));
            writeln!(out, "{head}").map_err(output_error)?;
            let ctx = open()?;
            let mut driver = Driver::new(ctx, grace, &mut *out);
            let lines = self.prologue.iter().map(String::as_str).chain(p.iter().map(|&s| self.steps[s].1.as_str()));
            for (seq, line) in lines.enumerate() {
                driver.line(seq, line).map_err(output_error)?;
            }
            errors += driver.errors();
            driver.finish().map_err(output_error)?;
        }
        Ok(errors)
    }
}

/// Every interleaving of the steps that keeps each session's steps in
/// their declared order, in lexicographic order of the step sequence.
fn interleavings(steps: &[(String, String)]) -> Result<Vec<Vec<usize>>, String> {
    // The sessions, in order of first appearance, each with its steps.
    let mut sessions: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, (_, line)) in steps.iter().enumerate() {
        let session = line.split_whitespace().next().unwrap_or_default();
        match sessions.iter_mut().find(|(s, _)| *s == session) {
            Some((_, v)) => v.push(i),
            None => sessions.push((session, vec![i])),
        }
    }
    let queues: Vec<Vec<usize>> = sessions.into_iter().map(|(_, v)| v).collect();
    let mut out = Vec::new();
    let mut next = vec![0; queues.len()];
    let mut cur = Vec::with_capacity(steps.len());
    fn walk(
        queues: &[Vec<usize>],
        next: &mut [usize],
        cur: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
    ) -> Result<(), String> {
        if queues.iter().zip(next.iter()).all(|(q, &n)| n == q.len()) {
            if out.len() == MAX_PERMUTATIONS {
                return Err(format!(
                    "the steps have more than {MAX_PERMUTATIONS} interleavings: list the ones to run with `permutation`"
                ));
            }
            out.push(cur.clone());
            return Ok(());
        }
        for s in 0..queues.len() {
            if next[s] < queues[s].len() {
                cur.push(queues[s][next[s]]);
                next[s] += 1;
                walk(queues, next, cur, out)?;
                next[s] -= 1;
                cur.pop();
            }
        }
        Ok(())
    }
    walk(&queues, &mut next, &mut cur, &mut out)?;
    Ok(out)
}

fn output_error(e: io::Error) -> String {
    format!("cannot write output: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(String::from).collect()
    }

    /// Two sessions of two steps: the six interleavings that keep each
    /// session's order, and none other.
    #[test]
    fn every_interleaving_keeps_each_sessions_order() {
        let s =
            Script::parse(&lines("setup 1=1\nstep a t1 get 1\nstep b t1 commit\nstep c t2 get 1\nstep d t2 commit\n"))
                .unwrap();
        let names: Vec<String> =
            s.permutations.iter().map(|p| p.iter().map(|&i| s.steps[i].0.as_str()).collect::<String>()).collect();
        assert_eq!(names, ["abcd", "acbd", "acdb", "cabd", "cadb", "cdab"]);
        assert_eq!(s.prologue, ["setup 1=1"]);
    }

    /// Listed permutations replace the generated ones; bad lines are named.
    #[test]
    fn listed_permutations_and_errors() {
        let s = Script::parse(&lines("step a t1 get 1\nstep b t2 get 1\npermutation b a\n")).unwrap();
        assert_eq!(s.permutations, [vec![1, 0]]);
        let err = |t: &str| Script::parse(&lines(t)).err().unwrap();
        assert!(err("step a t1 get 1\npermutation a z\n").contains("line 2: no step named z"));
        assert!(err("step a t1 get 1\nstep a t2 get 1\n").contains("line 2: step a is declared twice"));
        assert!(err("step a t1\n").contains("line 1: a step is"));
        assert!(err("step a t1 get 1\npermutation\n").contains("line 2: a permutation lists"));
        // 8 sessions of 2 steps: 16!/2^8, far past the cap.
        let many: String = (0..16).map(|i| format!("step s{i} t{} get 1\n", i / 2)).collect();
        assert!(err(&many).contains("interleavings"));
    }
}
