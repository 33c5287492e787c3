//! The campaign's grid: the protocol lines ([`Line`]: a protocol and the
//! flags of one of its variants, or another store), which workloads each
//! runs, and the points (line, level, workload, threads) the arguments
//! select, with each point's bench command line and seed.

use super::*;

/// A protocol as the campaign runs it: the protocol and the bench flags that
/// pick one of its variants.
#[derive(Clone, Debug)]
pub(super) struct Line {
    pub(super) name: String,
    /// The protocol (a placeholder when `peer` is set).
    pub(super) protocol: Protocol,
    flags: Vec<&'static str>,
    /// Another embedded store (`bench --protocol surrealmx`, ...), checked
    /// as a black box: list-append and predicate only.
    pub(super) peer: Option<&'static str>,
}

impl Line {
    /// The levels the line runs at.
    pub(super) fn levels(&self) -> &'static [Isolation] {
        match self.peer {
            Some(p) => multiverse_peers::levels_of(p).unwrap_or(&[]),
            None => self.protocol.isolation_levels(),
        }
    }

    /// Whether the line runs workload `w`: another store's history can be
    /// checked from outside on list-append and predicate only (their values
    /// name their writers).
    pub(super) fn runs(&self, w: Kind) -> bool {
        match self.peer {
            Some(_) => w.values_name_writers(),
            None => runs(self.protocol, w),
        }
    }

    /// The name `bench --protocol` takes.
    fn bench_name(&self) -> &'static str {
        self.peer.unwrap_or(self.protocol.name())
    }
}

/// Every line this build runs: one per protocol, except SSN (over each base,
/// and over snapshot isolation with safe snapshots for its read-only
/// transactions), SSI (also with safe snapshots) and POMVCC (pessimistic, its
/// default, and optimistic writes).
pub(super) fn all_lines() -> Vec<Line> {
    let mut lines = Vec::new();
    for p in Protocol::available() {
        let mut add = |suffix: &str, flags: &[&'static str]| {
            lines.push(Line { name: format!("{}{suffix}", p.name()), protocol: p, flags: flags.to_vec(), peer: None })
        };
        match p {
            Protocol::Ssn => {
                add("+rc", &["--base", "rc"]);
                add("+si", &["--base", "si"]);
                add("+si+safe", &["--base", "si", "--safe-snapshot-us", "100"]);
            }
            Protocol::Ssi => {
                add("", &[]);
                add("+safe", &["--safe-snapshot-us", "100"]);
            }
            Protocol::Pomvcc => {
                add("", &[]);
                add("+occ", &["--mode", "optimistic"]);
            }
            _ => add("", &[]),
        }
    }
    // The other stores compiled into this build (`--features peers`).
    for &name in multiverse_peers::names().iter().filter(|n| multiverse_peers::levels_of(n).is_some()) {
        lines.push(Line { name: name.to_string(), protocol: Protocol::MvOcc, flags: vec![], peer: Some(name) });
    }
    lines
}

/// Each workload's size in the campaign: small, so loading takes a fraction
/// of a second, and hot, so that conflicts (and anomalies) are frequent.
/// Predicate and list-append run at bench's defaults (a few dozen hot keys
/// already).
fn size_flags(workload: Kind) -> &'static [&'static str] {
    match workload {
        Kind::Hekaton => &["--rows", "2000"],
        // Skewed, with read-only reads (2rmw-8r) and blind writes (10op)
        // beside the read-modify-writes.
        Kind::Ycsb => {
            &["--rows", "10000", "--value-bytes", "16", "--theta", "0.9", "--mix", "10rmw:40,2rmw-8r:40,10op:20"]
        }
        Kind::SmallBank => &["--customers", "1000"],
        Kind::Tatp => &["--subscribers", "1000"],
        // One warehouse: every worker's home, the contended case.
        Kind::Tpcc => &["--warehouses", "1"],
        // A few dozen customers over one trade day; Asset-Eval values a
        // tenth of their accounts (about twenty).
        Kind::Tpce => &["--customers", "40", "--trade-days", "1"],
        Kind::Tpceh => &["--customers", "40", "--trade-days", "1", "--asset-eval-fraction", "0.1"],
        Kind::Sibench => &["--rows", "500"],
        Kind::Predicate | Kind::ListAppend => &[],
    }
}

/// Whether protocol `p` runs workload `w`. The protocols that take a
/// transaction's declared accesses before it runs (2pl-ordered, bohm) run
/// only the workloads that declare them (README, [`Kind::declares`]): tpcc
/// does not, and tatp looks subscribers up through a secondary index, which
/// bohm cannot declare. bench refuses the other pairs only when the first
/// transaction starts, after loading, with an error a real failure could
/// also print; so the rule is kept here, and a refusal of a pair this rule
/// lets through is a finding (`REFUSED`): the rule cannot silently hide a
/// workload.
pub(super) fn runs(p: Protocol, w: Kind) -> bool {
    match p {
        Protocol::TwoPlOrdered => w.declares(),
        Protocol::Bohm => w.declares_primary_keys_only(),
        _ => true,
    }
}

/// One point of the grid.
#[derive(Clone, Debug)]
pub(super) struct Point {
    pub(super) line: Line,
    pub(super) isolation: Isolation,
    pub(super) workload: Kind,
    pub(super) threads: usize,
}

impl Point {
    /// A name for files: `ssn+rc-serializable-tpcc-t8`.
    pub(super) fn file_stem(&self, round: u32) -> String {
        format!("{}-{}-{}-t{}-r{round}", self.line.name, self.isolation.name(), self.workload, self.threads)
    }

    /// The bench arguments of a run of this point (without the files).
    pub(super) fn bench_args(&self, duration: &str, seed: u64, every_run: &[String]) -> Vec<String> {
        let mut a: Vec<String> = vec!["--protocol".into(), self.line.bench_name().into()];
        a.extend(self.line.flags.iter().map(|s| s.to_string()));
        a.extend([
            "--isolation".into(),
            self.isolation.name().into(),
            "--workload".into(),
            self.workload.name().into(),
        ]);
        a.extend(size_flags(self.workload).iter().map(|s| s.to_string()));
        a.extend([
            "--threads".into(),
            self.threads.to_string(),
            "--duration".into(),
            duration.into(),
            "--seed".into(),
            seed.to_string(),
            "--verify".into(),
        ]);
        a.extend(every_run.iter().cloned());
        a
    }

    /// The run's seed: `seed` mixed with the point's identity and the round.
    pub(super) fn seed(&self, seed: u64, round: u32) -> u64 {
        let id = format!("{}/{}/{}/{}/{round}", self.line.name, self.isolation.name(), self.workload, self.threads);
        // FNV-1a of the identity, then one splitmix64 step with the seed.
        let h = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3));
        let mut z = seed ^ h;
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The grid the arguments select, in run order (workload by workload, so a
/// workload's overhead is soon measured).
pub(super) fn grid(a: &VerifyArgs) -> Result<Vec<Point>, String> {
    let all = all_lines();
    let lines: Vec<Line> = if a.protocols.is_empty() {
        all.clone()
    } else {
        let mut chosen: Vec<Line> = Vec::new();
        for want in &a.protocols {
            let want = want.trim();
            let found: Vec<&Line> =
                all.iter().filter(|l| l.name == want || (l.peer.is_none() && l.protocol.name() == want)).collect();
            if found.is_empty() {
                let names: Vec<&str> = all.iter().map(|l| l.name.as_str()).collect();
                return Err(format!(
                    "unknown protocol line '{want}' (expected a protocol or one of: {})",
                    names.join(", ")
                ));
            }
            for l in found {
                if !chosen.iter().any(|c| c.name == l.name) {
                    chosen.push(l.clone());
                }
            }
        }
        // The lines in the order of the full list.
        all.iter().filter(|l| chosen.iter().any(|c| c.name == l.name)).cloned().collect()
    };
    let workloads: Vec<Kind> = if a.workloads.is_empty() {
        Kind::ALL.to_vec()
    } else {
        let mut w = Vec::new();
        for name in &a.workloads {
            let n = Kind::parse(name.trim())?;
            if !w.contains(&n) {
                w.push(n);
            }
        }
        w
    };
    let levels: Vec<Isolation> = if a.isolations.is_empty() {
        Isolation::ALL.to_vec()
    } else {
        let mut ls = Vec::new();
        for s in &a.isolations {
            let l: Isolation = s.trim().parse().map_err(|e: multiverse::Error| e.to_string())?;
            if !ls.contains(&l) {
                ls.push(l);
            }
        }
        ls
    };
    let threads: Vec<usize> = if a.threads.is_empty() { DEFAULT_THREADS.to_vec() } else { dedup(&a.threads) };
    let mut points = Vec::new();
    if a.quick {
        // Line k runs the workload met least so far among those it can
        // run, the first from workload k on (in turn) among equals, so that
        // a line that cannot run its turn's workload does not leave it out;
        // at thread count k + k / workloads (in turn, shifted every time the
        // workloads come round, so each workload meets each count).
        let mut k = 0;
        let n = workloads.len();
        let mut met = vec![0usize; n];
        for line in &lines {
            let Some(&isolation) = line.levels().iter().rev().find(|l| levels.contains(l)) else {
                continue;
            };
            let turn = (0..n).map(|i| (k + i) % n).filter(|&i| line.runs(workloads[i]));
            let Some(i) = turn.min_by_key(|&i| met[i]) else {
                continue;
            };
            met[i] += 1;
            let workload = workloads[i];
            let t = threads[(k + k / n) % threads.len()];
            points.push(Point { line: line.clone(), isolation, workload, threads: t });
            k += 1;
        }
    }
    for &workload in workloads.iter().filter(|_| !a.quick) {
        for line in &lines {
            if !line.runs(workload) {
                continue;
            }
            for &isolation in line.levels() {
                if !levels.contains(&isolation) {
                    continue;
                }
                for &t in &threads {
                    points.push(Point { line: line.clone(), isolation, workload, threads: t });
                }
            }
        }
    }
    if points.is_empty() {
        return Err(
            "the grid is empty: no chosen protocol offers a chosen isolation level on a workload it can run".into()
        );
    }
    Ok(points)
}

pub(super) fn dedup(v: &[usize]) -> Vec<usize> {
    unique(v.iter().copied())
}

/// The distinct items, in the order they first appear.
pub(super) fn unique<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for x in items {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}
