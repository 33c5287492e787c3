//! `bench --config FILE`: every bench parameter from a file, and the
//! effective parameters of a run in its JSON record (`config`), so that a
//! record reproduces its run.
//!
//! A config is a flat table from flag names (`rows`, `theta`, `isolation`;
//! `_` and `-` alike) to values: a boolean switches a flag on or off, any
//! other value is the flag's value as it would be typed. It comes as TOML,
//! or as the JSON record of an earlier run (its `config` object). The file's
//! flags go first and the command line's after them, so a flag typed on the
//! command line overrides the file.
//!
//! ```text
//! # ycsb.toml
//! workload = "ycsb"
//! protocol = "silo"
//! isolation = "serializable"
//! rows = "1M"
//! theta = 0.9
//! threads = 2
//! duration = 10
//! ```

use super::BenchCli;
use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};
use serde_json::{Map, Value};
use std::ffi::OsString;
use std::path::Path;

/// `multiverse bench`'s flags as a command of their own, to parse a config
/// and the command line together.
#[derive(Parser)]
#[command(name = "multiverse bench", args_override_self = true)]
struct BenchCmd {
    #[command(flatten)]
    args: BenchCli,
}

/// Flags that name where results go, not what runs: left out of a run's
/// `config`.
const OUTPUTS: [&str; 5] = ["config", "json", "history", "latency_log", "plot"];

/// The command-line arguments after `bench`.
fn typed_args() -> Vec<OsString> {
    std::env::args_os().skip(1).skip_while(|a| a != "bench").skip(1).collect()
}

/// The flags of a config file, as command-line arguments.
fn file_args(path: &Path) -> Result<Vec<OsString>, String> {
    let fail = |e: &dyn std::fmt::Display| format!("--config {}: {e}", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| fail(&e))?;
    let table: Vec<(String, Value)> = if path.extension().is_some_and(|e| e == "json") {
        let v: Value = serde_json::from_str(&text).map_err(|e| fail(&e))?;
        match v.get("config") {
            Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            _ => return Err(fail(&"no \"config\" object (a JSON record of `multiverse bench --json`)")),
        }
    } else {
        let t: toml::Table = text.parse().map_err(|e: toml::de::Error| fail(&e.message().to_string()))?;
        let mut out = Vec::new();
        for (k, v) in t {
            let v = match v {
                toml::Value::Boolean(b) => Value::Bool(b),
                toml::Value::Integer(n) => Value::from(n),
                toml::Value::Float(f) => Value::from(f),
                toml::Value::String(s) => Value::String(s),
                _ => return Err(fail(&format!("'{k}': give a number, a string or a boolean"))),
            };
            out.push((k, v));
        }
        out
    };
    let mut args = Vec::new();
    for (key, v) in table {
        let flag = format!("--{}", key.replace('_', "-"));
        if key.replace('-', "_") == "config" {
            return Err(fail(&"a config cannot name another config"));
        }
        match v {
            Value::Bool(true) => args.push(flag.into()),
            Value::Bool(false) => {}
            Value::String(s) => args.extend([flag.into(), s.into()]),
            Value::Number(n) => args.extend([flag.into(), n.to_string().into()]),
            _ => return Err(fail(&format!("'{key}': give a number, a string or a boolean"))),
        }
    }
    Ok(args)
}

/// The bench arguments of this process: the command line's, after the
/// config file's when `--config` is given, and the run's effective
/// parameters (every flag that has a value, given or default) for its
/// JSON record.
pub(crate) fn resolve(typed: BenchCli) -> Result<(BenchCli, Value), String> {
    let cli = typed_args();
    let mut argv: Vec<OsString> = vec!["bench".into()];
    if let Some(path) = &typed.out.config {
        argv.extend(file_args(path)?);
    }
    argv.extend(cli);
    let cmd = crate::cli::negative_values(BenchCmd::command());
    let m = cmd.clone().try_get_matches_from(&argv).map_err(|e| {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or("").trim_start_matches("error: ").to_string();
        match &typed.out.config {
            Some(p) => format!("--config {}: {first}", p.display()),
            None => first,
        }
    })?;
    let args = BenchCmd::from_arg_matches(&m).map_err(|e| e.to_string())?.args;
    let mut config = Map::new();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if OUTPUTS.contains(&id) || arg.is_hide_set() {
            continue;
        }
        let Some(long) = arg.get_long() else { continue };
        let Some(raw) = m.get_raw(id) else { continue };
        let raw: Vec<String> = raw.map(|v| v.to_string_lossy().into_owned()).collect();
        let value = match arg.get_action() {
            ArgAction::SetTrue | ArgAction::SetFalse => Value::Bool(raw.first().is_some_and(|v| v == "true")),
            _ => match raw.as_slice() {
                [one] => Value::String(one.clone()),
                _ => continue,
            },
        };
        config.insert(long.to_string(), value);
    }
    Ok((args, Value::Object(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn files_become_flags() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "a.toml",
            "workload = \"ycsb\"\ntheta = 0.9\nthreads = 2\nverify = true\nycsb_no_prefetch = false\n",
        );
        let args: Vec<String> = file_args(&p).unwrap().into_iter().map(|a| a.into_string().unwrap()).collect();
        // In key order (a TOML table is sorted; the order of flags does not matter).
        assert_eq!(args, ["--theta", "0.9", "--threads", "2", "--verify", "--workload", "ycsb"]);
        let j = write(dir.path(), "r.json", r#"{"throughput_tps": 5, "config": {"rows": "10M", "verify": false}}"#);
        let args: Vec<String> = file_args(&j).unwrap().into_iter().map(|a| a.into_string().unwrap()).collect();
        assert_eq!(args, ["--rows", "10M"]);
        for (name, text, says) in [
            ("b.toml", "rows = [1, 2]", "give a number"),
            ("c.toml", "rows = ", "--config"),
            ("d.json", "{}", "no \"config\" object"),
            ("e.toml", "config = \"x.toml\"", "another config"),
        ] {
            let e = file_args(&write(dir.path(), name, text)).unwrap_err();
            assert!(e.contains(says) && e.starts_with("--config"), "{name}: {e}");
        }
        assert!(file_args(&dir.path().join("missing.toml")).unwrap_err().contains("missing.toml"));
    }
}
