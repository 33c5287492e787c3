//! The registry of workloads: [`Kind`] names each workload this crate
//! offers, in one list ([`Kind::ALL`]), with what a harness needs to know
//! about it before it builds one (whether it runs in memory only, whether
//! its values name their writers, whether it declares its accesses).
//! A harness matches on a `Kind` (every match is exhaustive), so a new
//! workload is added here and the compiler names every place that must
//! learn about it.

/// One of the workloads of this crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// [`crate::hekaton`]: section 5 of the Hekaton paper.
    Hekaton,
    /// [`crate::ycsb`]: the Yahoo! Cloud Serving Benchmark's core workloads.
    Ycsb,
    /// [`crate::smallbank`]: SmallBank.
    SmallBank,
    /// [`crate::tatp`]: the Telecom Application Transaction Processing benchmark.
    Tatp,
    /// [`crate::tpcc`]: TPC-C.
    Tpcc,
    /// [`crate::tpce`]: TPC-E (the ten transactions of the SSN paper's TPC-E).
    Tpce,
    /// [`crate::tpce`]: TPC-EH, TPC-E with Asset-Eval (SSN paper, section 8.1).
    Tpceh,
    /// [`crate::sibench`]: SIBench.
    Sibench,
    /// [`crate::predicate`]: range reads while others insert and delete
    /// inside the ranges (phantoms).
    Predicate,
    /// [`crate::list_append`]: lists of writer tags.
    ListAppend,
}

impl Kind {
    /// Every workload, in the order the command lists them.
    pub const ALL: [Kind; 10] = [
        Kind::Hekaton,
        Kind::Ycsb,
        Kind::SmallBank,
        Kind::Tatp,
        Kind::Tpcc,
        Kind::Tpce,
        Kind::Tpceh,
        Kind::Sibench,
        Kind::Predicate,
        Kind::ListAppend,
    ];

    /// The workload's name, as `--workload` takes it (and as
    /// [`crate::Workload::name`] gives it).
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Hekaton => "hekaton",
            Kind::Ycsb => "ycsb",
            Kind::SmallBank => "smallbank",
            Kind::Tatp => "tatp",
            Kind::Tpcc => "tpcc",
            Kind::Tpce => "tpce",
            Kind::Tpceh => "tpceh",
            Kind::Sibench => "sibench",
            Kind::Predicate => "predicate",
            Kind::ListAppend => "list-append",
        }
    }

    /// The names of every workload, in the order of [`Kind::ALL`].
    pub fn names() -> Vec<&'static str> {
        Kind::ALL.iter().map(|k| k.name()).collect()
    }

    /// The workload named `name`, if there is one.
    pub fn find(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The workload named `name`; the error lists the known ones.
    pub fn parse(name: &str) -> Result<Kind, String> {
        Kind::find(name)
            .ok_or_else(|| format!("unknown workload '{name}' (known workloads: {})", Kind::names().join(", ")))
    }

    /// Whether the workload runs in memory only (no data directory holds
    /// it): the two made for verifying isolation.
    pub fn in_memory_only(self) -> bool {
        matches!(self, Kind::Predicate | Kind::ListAppend)
    }

    /// Whether the workload's values name their writers, so that the
    /// history of a store without versions to record can be checked from
    /// outside (a black-box check).
    pub fn values_name_writers(self) -> bool {
        matches!(self, Kind::Predicate | Kind::ListAppend)
    }

    /// Whether the workload declares each transaction's accesses before it
    /// runs (see [`crate::Worker::declare`]), as protocols that lock or
    /// order before execution need.
    pub fn declares(self) -> bool {
        !matches!(self, Kind::Tpcc | Kind::Tpce | Kind::Tpceh)
    }

    /// Whether every declared access is by primary key, as BOHM needs (it
    /// cannot declare a lookup through a secondary index, which TATP's
    /// subscriber lookups are).
    pub fn declares_primary_keys_only(self) -> bool {
        self.declares() && !matches!(self, Kind::Tatp)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert_eq!(Kind::parse("hekaton"), Ok(Kind::Hekaton));
        assert_eq!(Kind::parse("tpcc"), Ok(Kind::Tpcc));
        let e = Kind::parse("tpc-x").unwrap_err();
        assert!(e.contains("unknown workload 'tpc-x'") && e.contains("hekaton") && e.contains("ycsb"), "{e}");
        for k in Kind::ALL {
            assert_eq!(Kind::find(k.name()), Some(k));
        }
    }
}
