//! The data directory as the command reads and writes it: the workload
//! file (`DIR/workload`, written by `bench --durability ... --data-dir`,
//! read by `recover`, `export` and `backup`), which records the workload,
//! its parameters and how far its initial load got; and, in `files`, what
//! the directory holds by the names recovery gives its files.
//!
//! The workload file is a few `key=value` lines (`workload=NAME`, one line
//! per parameter, `load=started` or `load=finished`); the files of earlier
//! versions hold one word, the workload's name, and are still read.

use multiverse_workloads::{Kind, Mix, Param};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

mod files;
#[cfg(test)]
mod tests;

pub(crate) use files::{data_files, lock_holder, recorded_spec, Survey};

/// The name of the file that records the workload in a data directory.
pub(crate) const WORKLOAD_FILE: &str = "workload";
/// A workload file is a few short lines; anything longer is not one.
const MAX_WORKLOAD_FILE_BYTES: u64 = 64 << 10;

/// Writes `dir/workload`: the workload's name and its parameters, one
/// `key=value` a line (what `recover` needs to rebuild the schema and the
/// check), and `load=started`, which [`record_loaded`] turns into
/// `load=finished`.
pub(crate) fn record_workload(dir: &Path, name: &str, params: &[(&'static str, Param)]) -> Result<(), String> {
    let mut text = String::from("# written by `multiverse bench`, read by `multiverse recover`\n");
    text += &format!("workload={name}\n");
    for (k, v) in params {
        let v = match v {
            Param::Int(n) => n.to_string(),
            Param::Str(s) => s.clone(),
            Param::Bool(b) => b.to_string(),
        };
        text += &format!("{k}={v}\n");
    }
    text += "load=started\n";
    write_atomically(dir, WORKLOAD_FILE, &text)
}

/// Marks `dir/workload` `load=finished`: the checkpoint after loading is
/// durable, so the directory holds the whole initial data set and the
/// workload's invariants hold from here on.
pub(crate) fn record_loaded(dir: &Path) -> Result<(), String> {
    let path = dir.join(WORKLOAD_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let done = text.replace("\nload=started\n", "\nload=finished\n");
    if done == text {
        return Err(format!("{}: no load=started line to mark finished", path.display()));
    }
    write_atomically(dir, WORKLOAD_FILE, &done)
}

/// Replaces `dir/name` with `text` as one step (a crash leaves the old file
/// or the new one, never a part), and makes it durable.
fn write_atomically(dir: &Path, name: &str, text: &str) -> Result<(), String> {
    let path = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp"));
    let err = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut f = std::fs::File::create(&tmp).map_err(err)?;
    f.write_all(text.as_bytes()).and_then(|()| f.sync_all()).map_err(err)?;
    drop(f);
    std::fs::rename(&tmp, &path).map_err(err)?;
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(err)
}

/// `s` with its control characters escaped, for a one-line report.
pub(crate) fn escape(s: &str) -> String {
    let mut q = String::new();
    for c in s.chars() {
        if c.is_control() {
            q.extend(c.escape_default());
        } else {
            q.push(c);
        }
    }
    q
}

/// `s` for a one-line message: escaped, cut after 60 characters.
pub(crate) fn quote(s: &str) -> String {
    const MAX: usize = 60;
    let mut q = String::new();
    for (i, c) in s.char_indices() {
        let e = escape(&s[i..i + c.len_utf8()]);
        if q.chars().count() + e.chars().count() > MAX {
            q.push_str("...");
            break;
        }
        q.push_str(&e);
    }
    q
}

/// How far the initial load of a recorded workload got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Load {
    /// Begun; its rows are a prefix of the load until it is marked finished.
    Started,
    /// Loaded, and the checkpoint after loading durable.
    Finished,
}

/// The contents of `dir/workload`.
#[derive(Debug, PartialEq)]
pub(crate) struct Recorded {
    /// The file, for messages.
    pub(crate) path: PathBuf,
    pub(crate) workload: String,
    /// In file order.
    pub(crate) params: Vec<(String, String)>,
    /// False for the one-word file of earlier versions, which recorded
    /// only the name.
    pub(crate) described: bool,
    /// `None` in the files of earlier versions, which did not say.
    pub(crate) load: Option<Load>,
}

impl Recorded {
    /// Reads `dir/workload`; `None` if there is none.
    pub(crate) fn read(dir: &Path) -> Result<Option<Recorded>, String> {
        let path = dir.join(WORKLOAD_FILE);
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        if !meta.is_file() {
            return Err(format!("{}: not a regular file", path.display()));
        }
        if meta.len() > MAX_WORKLOAD_FILE_BYTES {
            return Err(format!(
                "{}: {} bytes is not a workload file (a few lines, at most {MAX_WORKLOAD_FILE_BYTES} bytes)",
                path.display(),
                meta.len()
            ));
        }
        let data = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let text = String::from_utf8(data).map_err(|e| {
            format!("{}: not text (invalid UTF-8 at byte {})", path.display(), e.utf8_error().valid_up_to())
        })?;
        Recorded::parse(path, &text).map(Some)
    }

    fn parse(path: PathBuf, text: &str) -> Result<Recorded, String> {
        let lines: Vec<(usize, &str)> =
            text.lines().map(str::trim).enumerate().filter(|(_, l)| !l.is_empty() && !l.starts_with('#')).collect();
        if let [(_, word)] = lines[..] {
            if !word.contains('=') {
                let workload = Kind::find(word)
                    .ok_or_else(|| format!("{}: unknown workload '{}'", path.display(), quote(word)))?;
                return Ok(Recorded {
                    path,
                    workload: workload.name().to_string(),
                    params: Vec::new(),
                    described: false,
                    load: None,
                });
            }
        }
        let mut params: Vec<(String, String)> = Vec::new();
        for (i, line) in lines {
            let Some((k, v)) = line.split_once('=') else {
                return Err(format!("{} line {}: '{}' is not key=value", path.display(), i + 1, quote(line)));
            };
            let k = k.trim();
            if params.iter().any(|(seen, _)| seen == k) {
                return Err(format!("{} line {}: {} is given twice", path.display(), i + 1, quote(k)));
            }
            params.push((k.to_string(), v.trim().to_string()));
        }
        let Some(at) = params.iter().position(|(k, _)| k == "workload") else {
            return Err(format!("{}: no workload= line", path.display()));
        };
        let workload = params.remove(at).1;
        if workload.is_empty() {
            return Err(format!("{}: workload= names no workload", path.display()));
        }
        let load = match params.iter().position(|(k, _)| k == "load") {
            None => None,
            Some(at) => match params.remove(at).1.as_str() {
                "started" => Some(Load::Started),
                "finished" => Some(Load::Finished),
                other => {
                    return Err(format!("{}: load={} is neither started nor finished", path.display(), quote(other)))
                }
            },
        };
        Ok(Recorded { path, workload, params, described: true, load })
    }

    /// The recorded value of `key`.
    pub(crate) fn value(&self, key: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of `key`, or `default` if it is not recorded.
    pub(crate) fn get<T: FromStr>(&self, key: &str, default: T) -> Result<T, String> {
        if self.value(key).is_some() {
            self.need(key)
        } else {
            Ok(default)
        }
    }

    /// The value of `key`, which must be recorded.
    pub(crate) fn need<T: FromStr>(&self, key: &str) -> Result<T, String> {
        match self.value(key) {
            None => Err(format!("{}: no {key}= line (the {} schema needs it)", self.path.display(), self.workload)),
            Some(v) => {
                v.parse().map_err(|_| format!("{}: {key}={} is not a valid value", self.path.display(), quote(v)))
            }
        }
    }

    /// The recorded mix over `types`, or `default`.
    pub(crate) fn mix(&self, types: &'static [&'static str], default: Mix) -> Result<Mix, String> {
        match self.value("mix") {
            None => Ok(default),
            Some(m) => Mix::parse(types, m).map_err(|e| format!("{}: mix={}: {e}", self.path.display(), quote(m))),
        }
    }

    /// `key=value` as recorded, for messages.
    pub(crate) fn shown(&self, key: &str) -> String {
        format!("{}: {key}={}", self.path.display(), quote(self.value(key).unwrap_or_default()))
    }
}
