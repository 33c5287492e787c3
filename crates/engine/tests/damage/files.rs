//! The files of a data directory (their listing, snapshots, quarantine
//! folders), and damage to them: the hits (truncate, flip, delete, duplicate,
//! swap) and the damages each kind draws.

use super::*;

/// Parses `log-<g>-<stream>-<seq>.mvl`.
fn log_name(name: &str) -> Option<(u64, u32, u32)> {
    let rest = name.strip_prefix("log-")?.strip_suffix(".mvl")?;
    let mut it = rest.split('-');
    let g = it.next()?.parse().ok()?;
    let s = it.next()?.parse().ok()?;
    let q = it.next()?.parse().ok()?;
    it.next().is_none().then_some((g, s, q))
}

#[derive(Debug, Default)]
pub(super) struct Listing {
    /// The newest generation's log files per stream, in sequence order:
    /// (seq, name, size).
    pub(super) logs: BTreeMap<u32, Vec<(u32, String, u64)>>,
    generation: u64,
    checkpoints: Vec<(String, u64)>,
    manifests: Vec<(String, u64)>,
}

pub(super) fn listing(dir: &Path) -> Listing {
    let mut l = Listing::default();
    let mut logs = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        let size = e.metadata().unwrap().len();
        if let Some((g, s, q)) = log_name(&name) {
            logs.push((g, s, q, name, size));
        } else if name.starts_with("checkpoint-") && name.ends_with(".mvc") {
            l.checkpoints.push((name, size));
        } else if name.starts_with("manifest") {
            l.manifests.push((name, size));
        }
    }
    l.generation = logs.iter().map(|f| f.0).max().unwrap_or(0);
    logs.sort();
    for (g, s, q, name, size) in logs {
        if g == l.generation {
            l.logs.entry(s).or_default().push((q, name, size));
        }
    }
    l.checkpoints.sort();
    l.manifests.sort();
    l
}

pub(super) fn describe_dir(dir: &Path) -> String {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            format!("{} ({} B)", e.file_name().to_string_lossy(), e.metadata().map(|m| m.len()).unwrap_or(0))
        })
        .collect();
    v.sort();
    v.join(", ")
}

/// Every file of a directory (not of its folders) and its bytes.
pub(super) fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// The quarantine folders of a directory.
pub(super) fn quarantines(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("quarantine-"))
        .collect();
    v.sort();
    v
}

/// Checks that nothing of the damaged directory `before` was deleted by
/// the open that reported `rep` on `dir` (see the module docs).
pub(super) fn nothing_deleted(
    dir: &Path,
    before: &BTreeMap<String, Vec<u8>>,
    rep: &RecoveryReport,
) -> std::result::Result<(), String> {
    let folders = quarantines(dir);
    if !rep.damaged {
        return match (&rep.quarantine, folders.is_empty()) {
            (None, true) => Ok(()),
            _ => Err(format!("no damage, yet a quarantine: {:?}, folders {folders:?}", rep.quarantine)),
        };
    }
    let Some(q) = &rep.quarantine else { return Err("damaged, but no quarantine folder reported".into()) };
    let qname = q.file_name().unwrap().to_string_lossy().into_owned();
    if q.parent() != Some(dir) || !folders.contains(&qname) {
        return Err(format!("the quarantine {} is not a folder of {} ({folders:?})", q.display(), dir.display()));
    }
    let kept = snapshot(q);
    for (name, data) in before.iter().filter(|(n, _)| is_data(n)) {
        let here = snapshot(dir);
        if kept.get(name) != Some(data) && here.get(name) != Some(data) {
            return Err(format!("{name} ({} bytes) is gone: neither in the directory nor in {qname}", data.len()));
        }
    }
    let readme = std::fs::read_to_string(q.join("README.txt")).map_err(|e| format!("{qname}/README.txt: {e}"))?;
    match rep.dropped.iter().find(|l| !readme.contains(l.as_str())) {
        Some(l) => Err(format!("{qname}/README.txt lacks the dropped line {l:?}")),
        None => Ok(()),
    }
}

/// A file that holds data (not a lock file, say).
fn is_data(name: &str) -> bool {
    name.starts_with("log-") || name.starts_with("checkpoint-") || name.starts_with("manifest")
}

/// What changed in the data files between two snapshots; empty when
/// nothing did.
pub(super) fn changes(before: &BTreeMap<String, Vec<u8>>, after: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, data) in before.iter().filter(|(n, _)| is_data(n)) {
        match after.get(name) {
            None => out.push(format!("{name} removed")),
            Some(d) if d != data => out.push(format!("{name} changed")),
            _ => {}
        }
    }
    for name in after.keys().filter(|n| is_data(n) && !before.contains_key(*n)) {
        out.push(format!("{name} created"));
    }
    out
}

pub(super) fn copy_dir(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.path().join(e.file_name())).unwrap();
    }
    to
}

/// One change to one file.
#[derive(Clone, Debug)]
pub(super) enum Hit {
    Truncate {
        file: String,
        at: u64,
    },
    Flip {
        file: String,
        at: u64,
        mask: u8,
    },
    Delete {
        file: String,
    },
    /// Copy `file` as `to`.
    Duplicate {
        file: String,
        to: String,
    },
    /// Exchange the names of two files.
    Swap {
        a: String,
        b: String,
    },
}

impl Hit {
    /// Applies the hit to `dir`; a file an earlier hit removed is skipped
    /// (returned as a note).
    pub(super) fn apply(&self, dir: &Path) -> Option<String> {
        let p = |n: &str| dir.join(n);
        let missing = |n: &str| (!p(n).exists()).then(|| format!("{n} is gone, {self:?} skipped"));
        match self {
            Hit::Truncate { file, at } => {
                if let Some(m) = missing(file) {
                    return Some(m);
                }
                let f = std::fs::OpenOptions::new().write(true).open(p(file)).unwrap();
                f.set_len(*at).unwrap();
            }
            Hit::Flip { file, at, mask } => {
                if let Some(m) = missing(file) {
                    return Some(m);
                }
                let mut data = std::fs::read(p(file)).unwrap();
                if data.is_empty() {
                    return Some(format!("{file} is empty, {self:?} skipped"));
                }
                let at = (*at as usize).min(data.len() - 1);
                data[at] ^= mask;
                std::fs::write(p(file), data).unwrap();
            }
            Hit::Delete { file } => {
                if let Some(m) = missing(file) {
                    return Some(m);
                }
                std::fs::remove_file(p(file)).unwrap();
            }
            Hit::Duplicate { file, to } => {
                if let Some(m) = missing(file) {
                    return Some(m);
                }
                std::fs::copy(p(file), p(to)).unwrap();
            }
            Hit::Swap { a, b } => {
                if let Some(m) = missing(a).or_else(|| missing(b)) {
                    return Some(m);
                }
                let tmp = p("swap.tmp");
                std::fs::rename(p(a), &tmp).unwrap();
                std::fs::rename(p(b), p(a)).unwrap();
                std::fs::rename(&tmp, p(b)).unwrap();
            }
        }
        None
    }
}

/// A damage: what it is, its hits, and whether a loss it causes is one
/// that a crash cannot explain (so `damaged` must be set).
#[derive(Clone, Debug)]
pub(super) struct Damage {
    pub(super) what: String,
    pub(super) hits: Vec<Hit>,
    pub(super) unexplainable: bool,
}

pub(super) const KINDS: usize = 16;

/// Where the frames of a file begin (after its 8-byte magic, each frame
/// is a u32 length, a u32 CRC and the body), up to the first that does
/// not fit: the clean cuts between records.
fn frame_starts(data: &[u8]) -> Vec<u64> {
    let mut at = 8usize;
    let mut out = Vec::new();
    while at + 8 <= data.len() {
        out.push(at as u64);
        let len = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        match at.checked_add(8 + len) {
            Some(next) if next <= data.len() => at = next,
            _ => break,
        }
    }
    out
}

/// A file of a stream: the last one 40% of the time, else any; returns
/// (stream, index in the stream).
fn pick_log(l: &Listing, rng: &mut SmallRng) -> (u32, usize) {
    // Streams that rotated are where the interesting damage is.
    let busy: Vec<u32> = l.logs.iter().filter(|(_, f)| f.len() >= 2).map(|(&s, _)| s).collect();
    let all: Vec<u32> = l.logs.keys().copied().collect();
    let from = if !busy.is_empty() && rng.gen_bool(0.8) { &busy } else { &all };
    let s = from[rng.gen_range(0..from.len())];
    let n = l.logs[&s].len();
    let i = if rng.gen_bool(0.4) { n - 1 } else { rng.gen_range(0..n) };
    (s, i)
}

/// A stream with at least `n` files, if any (a busy one preferably).
fn stream_with(l: &Listing, n: usize, rng: &mut SmallRng) -> Option<u32> {
    let v: Vec<u32> = l.logs.iter().filter(|(_, f)| f.len() >= n).map(|(&s, _)| s).collect();
    (!v.is_empty()).then(|| v[rng.gen_range(0..v.len())])
}

pub(super) fn choose(kind: usize, dir: &Path, l: &Listing, rng: &mut SmallRng) -> Damage {
    let file = |s: u32, i: usize| l.logs[&s][i].1.clone();
    let last = |s: u32, i: usize| i + 1 == l.logs[&s].len();
    let one = |what: String, hit: Hit, unexplainable: bool| Damage { what, hits: vec![hit], unexplainable };
    match kind {
        0 => {
            let (s, i) = pick_log(l, rng);
            let at = rng.gen_range(0..l.logs[&s][i].2.max(1));
            let what = format!("truncate {} at {at} ({})", file(s, i), if last(s, i) { "last" } else { "not last" });
            one(what, Hit::Truncate { file: file(s, i), at }, !last(s, i))
        }
        1 | 2 => {
            let (s, i) = pick_log(l, rng);
            let at = rng.gen_range(0..l.logs[&s][i].2.max(1));
            let mask = if kind == 1 { rng.gen_range(1..=255u8) } else { 1 << rng.gen_range(0..8) };
            let what = format!(
                "xor byte {at} of {} with {mask:#04x} ({})",
                file(s, i),
                if last(s, i) { "last" } else { "not last" }
            );
            one(what, Hit::Flip { file: file(s, i), at, mask }, !last(s, i))
        }
        3..=5 => {
            let (s, i) = match kind {
                3 => (stream_with(l, 2, rng).unwrap_or(0), 0),
                4 => match stream_with(l, 3, rng) {
                    Some(s) => (s, rng.gen_range(1..l.logs[&s].len() - 1)),
                    None => (0, 0),
                },
                _ => {
                    let s = stream_with(l, 2, rng).unwrap_or(0);
                    (s, l.logs[&s].len() - 1)
                }
            };
            let pos = if i == 0 {
                "first"
            } else if last(s, i) {
                "last"
            } else {
                "a middle one"
            };
            one(format!("delete {} ({pos} of stream {s})", file(s, i)), Hit::Delete { file: file(s, i) }, true)
        }
        6 => {
            let all: Vec<u32> = l.logs.keys().copied().collect();
            let s = all[rng.gen_range(0..all.len())];
            let hits = l.logs[&s].iter().map(|f| Hit::Delete { file: f.1.clone() }).collect();
            Damage { what: format!("delete every file of stream {s}"), hits, unexplainable: true }
        }
        7 => {
            let (s, i) = pick_log(l, rng);
            let next = l.logs[&s].last().unwrap().0 + 1;
            let to = format!("log-{:08}-{s:03}-{next:06}.mvl", l.generation);
            one(format!("copy {} as {to}", file(s, i)), Hit::Duplicate { file: file(s, i), to }, true)
        }
        8 => {
            let s = stream_with(l, 2, rng).unwrap_or(0);
            let n = l.logs[&s].len();
            if n < 2 {
                return one(
                    format!("delete {} (no stream has two files)", file(s, 0)),
                    Hit::Delete { file: file(s, 0) },
                    true,
                );
            }
            let i = rng.gen_range(0..n - 1);
            let j = if rng.gen_bool(0.5) { i + 1 } else { rng.gen_range(i + 1..n) };
            one(format!("swap {} and {}", file(s, i), file(s, j)), Hit::Swap { a: file(s, i), b: file(s, j) }, true)
        }
        9 => match l.manifests.first() {
            None => {
                // No manifest (an engine from before manifests): a log file instead.
                let (s, i) = pick_log(l, rng);
                let at = rng.gen_range(0..l.logs[&s][i].2.max(1));
                one(
                    format!("no manifest; truncate {} at {at}", file(s, i)),
                    Hit::Truncate { file: file(s, i), at },
                    !last(s, i),
                )
            }
            Some((m, size)) => {
                let m = m.clone();
                let at = rng.gen_range(0..(*size).max(1));
                match rng.gen_range(0..3) {
                    0 => one(format!("delete {m}"), Hit::Delete { file: m }, true),
                    1 => one(format!("truncate {m} at {at}"), Hit::Truncate { file: m, at }, true),
                    _ => {
                        let mask = rng.gen_range(1..=255u8);
                        one(format!("xor byte {at} of {m} with {mask:#04x}"), Hit::Flip { file: m, at, mask }, true)
                    }
                }
            }
        },
        10 => {
            let (c, size) = l.checkpoints.last().expect("a checkpoint").clone();
            let at = rng.gen_range(0..size.max(1));
            match rng.gen_range(0..3) {
                0 => one(format!("delete {c}"), Hit::Delete { file: c }, true),
                1 => one(format!("truncate {c} at {at}"), Hit::Truncate { file: c, at }, true),
                _ => {
                    let mask = 1 << rng.gen_range(0..8);
                    one(format!("xor byte {at} of {c} with {mask:#04x}"), Hit::Flip { file: c, at, mask }, true)
                }
            }
        }
        11 => {
            // A clean cut between two records: no checksum sees it.
            let (s, i) = pick_log(l, rng);
            let data = std::fs::read(dir.join(file(s, i))).unwrap();
            let starts = frame_starts(&data);
            let at = if starts.len() > 1 { starts[rng.gen_range(1..starts.len())] } else { data.len() as u64 / 2 };
            let what = format!(
                "cut {} at {at}, between two records ({})",
                file(s, i),
                if last(s, i) { "last" } else { "not last" }
            );
            one(what, Hit::Truncate { file: file(s, i), at }, !last(s, i))
        }
        12 => {
            // What a crash does: every stream's last file torn somewhere
            // after its header.
            let mut hits = Vec::new();
            for files in l.logs.values() {
                let (_, name, size) = files.last().unwrap();
                let data = std::fs::read(dir.join(name)).unwrap();
                let header_end = frame_starts(&data).get(1).copied().unwrap_or(*size);
                hits.push(Hit::Truncate { file: name.clone(), at: rng.gen_range(header_end..=*size) });
            }
            Damage { what: format!("torn tails in every stream: {hits:?}"), hits, unexplainable: false }
        }
        13 => {
            // Another stream's file in this one's place (or as its next).
            let (s, i) = pick_log(l, rng);
            let others: Vec<u32> = l.logs.keys().copied().filter(|&o| o != s).collect();
            let o = others[rng.gen_range(0..others.len())];
            let q = l.logs[&s][i].0;
            let to = match l.logs[&o].iter().find(|f| f.0 == q) {
                Some(f) => f.1.clone(),
                None => format!("log-{:08}-{o:03}-{:06}.mvl", l.generation, l.logs[&o].last().unwrap().0 + 1),
            };
            one(
                format!("copy {} over {to} (another stream's)", file(s, i)),
                Hit::Duplicate { file: file(s, i), to },
                true,
            )
        }
        14 => {
            // A stray file of another generation (a backup restored over
            // the directory, say): it must neither be replayed nor mix
            // with the generations to come.
            let (s, i) = pick_log(l, rng);
            let g = if rng.gen_bool(0.7) { l.generation + 1 } else { l.generation.saturating_sub(1) };
            let seq = if rng.gen_bool(0.5) { l.logs[&s][i].0 } else { rng.gen_range(0..4) };
            let to = format!("log-{g:08}-{s:03}-{seq:06}.mvl");
            one(format!("copy {} as {to}", file(s, i)), Hit::Duplicate { file: file(s, i), to }, false)
        }
        _ => {
            let a = choose(rng.gen_range(0..KINDS - 1), dir, l, rng);
            let b = choose(rng.gen_range(0..KINDS - 1), dir, l, rng);
            Damage {
                what: format!("{}, then {}", a.what, b.what),
                hits: a.hits.into_iter().chain(b.hits).collect(),
                unexplainable: a.unexplainable || b.unexplainable,
            }
        }
    }
}
