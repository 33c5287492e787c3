//! What the checker found: anomaly classes, examples, counts and the verdict.

use multiverse::Isolation;
use std::fmt;

/// A kind of anomaly the checker reports.
///
/// The first seven are Adya's phenomena (Adya, *Weak Consistency*, 1999),
/// listed from the most to the least severe; the snapshot classes are the two
/// extra rules of snapshot isolation; [`Class::Invalid`] covers histories that
/// cannot be explained at all (a read of a version nobody wrote, for example).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// A cycle of write-write dependencies (dirty write).
    G0,
    /// A committed transaction read a version written by an aborted one.
    G1a,
    /// A committed transaction read a version that its writer later overwrote
    /// itself (an intermediate version).
    G1b,
    /// A cycle of write-write and write-read dependencies.
    G1c,
    /// A cycle with exactly one anti-dependency (read skew, lost update).
    GSingle,
    /// A cycle with two or more anti-dependencies, all on items (write skew).
    G2Item,
    /// A cycle with two or more anti-dependencies, at least one of them a
    /// predicate (scan) anti-dependency (phantom).
    G2,
    /// Snapshot isolation read rule: a read did not return the latest version
    /// committed before the reader began (or its own write).
    SnapshotRead,
    /// Snapshot isolation first-committer-wins: two concurrent committed
    /// transactions wrote the same key.
    SnapshotWrite,
    /// The history is inconsistent with itself: a read of a version whose
    /// writer is unknown or never wrote that key or value, a transaction that
    /// did not see its own write, duplicate ids, missing timestamps.
    Invalid,
}

impl Class {
    /// Every class: Adya's, most severe first, then the snapshot rules and `invalid`.
    pub const ALL: [Class; 10] = [
        Class::G0,
        Class::G1a,
        Class::G1b,
        Class::G1c,
        Class::GSingle,
        Class::G2Item,
        Class::G2,
        Class::SnapshotRead,
        Class::SnapshotWrite,
        Class::Invalid,
    ];

    /// Number of classes.
    pub const COUNT: usize = Self::ALL.len();

    /// The name used in reports (`G0`, `G1a`, ..., `G-single`, `G2-item`).
    pub fn name(self) -> &'static str {
        match self {
            Class::G0 => "G0",
            Class::G1a => "G1a",
            Class::G1b => "G1b",
            Class::G1c => "G1c",
            Class::GSingle => "G-single",
            Class::G2Item => "G2-item",
            Class::G2 => "G2",
            Class::SnapshotRead => "SI-read",
            Class::SnapshotWrite => "SI-write",
            Class::Invalid => "invalid",
        }
    }

    /// True when a history that claims isolation level `level` must not
    /// contain this anomaly.
    ///
    /// | level | forbidden |
    /// | --- | --- |
    /// | read committed | G0, G1a, G1b, G1c |
    /// | snapshot | those, G-single, SI-read, SI-write |
    /// | repeatable read | G0, G1a, G1b, G1c, G-single, G2-item |
    /// | serializable | every cycle, G1a, G1b |
    ///
    /// `invalid` is forbidden everywhere. The snapshot rules are only checked
    /// when snapshot isolation is claimed.
    pub fn forbidden_at(self, level: Isolation) -> bool {
        match self {
            Class::G0 | Class::G1a | Class::G1b | Class::G1c | Class::Invalid => true,
            Class::GSingle => level >= Isolation::Snapshot,
            Class::G2Item => level >= Isolation::RepeatableRead,
            Class::G2 => level == Isolation::Serializable,
            Class::SnapshotRead | Class::SnapshotWrite => level == Isolation::Snapshot,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One reported anomaly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Anomaly {
    /// Its class.
    pub class: Class,
    /// Ids of the transactions involved (for a cycle: in cycle order).
    pub txns: Vec<u64>,
    /// One line: the cycle (`T17 -rw(t0/key 5)-> T23 -rw(t0/key 9)-> T17`)
    /// or what went wrong.
    pub summary: String,
    /// Further lines: for a cycle, what each edge means.
    pub details: Vec<String>,
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class, self.summary)?;
        for d in &self.details {
            write!(f, "\n    {d}")?;
        }
        Ok(())
    }
}

/// Size of the checked history and of its dependency graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Transactions in the history.
    pub txns: usize,
    /// Committed transactions.
    pub committed: usize,
    /// Aborted transactions.
    pub aborted: usize,
    /// Distinct (table, key) pairs mentioned.
    pub keys: usize,
    /// Dependency edges after merging duplicates, by kind: ww, wr, rw, predicate rw.
    pub edges: [usize; 4],
    /// Strongly connected components with more than one transaction.
    pub cyclic_components: usize,
    /// The bounded cycle search ran out of budget in some component: the
    /// class reported for it may be less severe than the worst cycle present.
    pub search_truncated: bool,
}

/// Limits on the work and output of one check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most examples kept per class (all are counted).
    pub examples_per_class: usize,
    /// Most edges the cycle searches may visit in total before settling for
    /// the cycles found so far.
    pub search_budget: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { examples_per_class: 10, search_budget: 50_000_000 }
    }
}

/// The result of [`crate::check`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The isolation level the history was checked against.
    pub claimed: Isolation,
    /// Examples, in class order (at most [`Limits::examples_per_class`] per class).
    pub anomalies: Vec<Anomaly>,
    /// How big the history and its graph were.
    pub stats: Stats,
    counts: [usize; Class::COUNT],
}

impl Report {
    /// True when the history shows no anomaly forbidden at the claimed level.
    pub fn ok(&self) -> bool {
        self.forbidden_count() == 0
    }

    /// How many anomalies of `class` were found (cycles count once per
    /// strongly connected component, direct checks once per read or pair).
    pub fn count(&self, class: Class) -> usize {
        self.counts[class.index()]
    }

    /// How many anomalies forbidden at the claimed level were found.
    pub fn forbidden_count(&self) -> usize {
        Class::ALL.iter().filter(|c| c.forbidden_at(self.claimed)).map(|&c| self.count(c)).sum()
    }

    /// The classes found, with their counts, in [`Class::ALL`] order.
    pub fn classes(&self) -> impl Iterator<Item = (Class, usize)> + '_ {
        Class::ALL.into_iter().map(|c| (c, self.count(c))).filter(|&(_, n)| n > 0)
    }

    /// The examples whose class is forbidden at the claimed level.
    pub fn forbidden(&self) -> impl Iterator<Item = &Anomaly> + '_ {
        self.anomalies.iter().filter(|a| a.class.forbidden_at(self.claimed))
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.forbidden_count();
        if n == 0 {
            writeln!(f, "{}: OK (no forbidden anomaly)", self.claimed)?;
        } else {
            writeln!(f, "{}: FAILED ({n} forbidden anomal{})", self.claimed, if n == 1 { "y" } else { "ies" })?;
        }
        let s = &self.stats;
        writeln!(
            f,
            "history: {} transactions ({} committed, {} aborted), {} keys; graph: ww {}, wr {}, rw {}, predicate rw {}; {} cyclic component{}{}",
            s.txns,
            s.committed,
            s.aborted,
            s.keys,
            s.edges[0],
            s.edges[1],
            s.edges[2],
            s.edges[3],
            s.cyclic_components,
            if s.cyclic_components == 1 { "" } else { "s" },
            if s.search_truncated { " (cycle search truncated)" } else { "" },
        )?;
        for (class, count) in self.classes() {
            let verdict = if class.forbidden_at(self.claimed) { "forbidden" } else { "allowed" };
            writeln!(f, "{class}: {count} ({verdict} at {})", self.claimed)?;
        }
        for a in &self.anomalies {
            writeln!(f, "  {a}")?;
        }
        Ok(())
    }
}

/// Collects anomalies while checking: counts every one, keeps a few examples.
pub(crate) struct Findings {
    counts: [usize; Class::COUNT],
    examples: Vec<Vec<Anomaly>>,
    cap: usize,
}

impl Findings {
    pub(crate) fn new(cap: usize) -> Findings {
        Findings { counts: [0; Class::COUNT], examples: vec![Vec::new(); Class::COUNT], cap }
    }

    /// Counts one anomaly; builds its description only if it is kept.
    pub(crate) fn add(&mut self, class: Class, make: impl FnOnce() -> Anomaly) {
        let i = class.index();
        self.counts[i] += 1;
        if self.examples[i].len() < self.cap {
            let mut a = make();
            a.class = class;
            self.examples[i].push(a);
        }
    }

    /// Counts one anomaly described by a single line.
    pub(crate) fn note(&mut self, class: Class, txns: &[u64], summary: impl FnOnce() -> String) {
        self.add(class, || Anomaly { class, txns: txns.to_vec(), summary: summary(), details: Vec::new() });
    }

    pub(crate) fn into_report(self, claimed: Isolation, stats: Stats) -> Report {
        let anomalies = self.examples.into_iter().flatten().collect();
        Report { claimed, anomalies, stats, counts: self.counts }
    }
}
