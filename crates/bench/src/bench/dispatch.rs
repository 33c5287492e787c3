//! Which workload runs: for each [`Kind`] of the workloads crate, its flags
//! in [`BenchArgs`] and its runner in `wl/`. Every match here is over
//! [`Kind`], so the compiler names what a new workload must add.

use super::args::BenchArgs;
use super::wl::{self, Given};
use super::{Ctx, Host, Measurement};
use multiverse_workloads::Kind;

/// The flags of workload `k` given on the command line, as typed.
fn given(a: &BenchArgs, k: Kind) -> Vec<&'static str> {
    match k {
        Kind::Hekaton => a.hekaton.given(),
        Kind::Ycsb => a.ycsb.given(),
        Kind::SmallBank => a.smallbank.given(),
        Kind::Tatp => a.tatp.given(),
        Kind::Tpcc => a.tpcc.given(),
        Kind::Tpce | Kind::Tpceh => a.tpce.given(),
        Kind::Sibench => a.sibench.given(),
        Kind::Predicate => a.predicate.given(),
        Kind::ListAppend => a.list_append.given(),
    }
}

/// Refuses flags that belong to another workload than `workload`: a typo
/// or a mix-up should not silently run something else.
pub(crate) fn refuse_foreign_flags(a: &BenchArgs, workload: Kind) -> Result<(), String> {
    for k in Kind::ALL.into_iter().filter(|k| *k != workload) {
        if let Some(f) = given(a, k).into_iter().find(|f| !shared(f, k, workload)) {
            return Err(format!("{f} is a flag of workload {k}, not of {workload}"));
        }
    }
    Ok(())
}

/// Whether flag `f` of workload `k` is also one of `workload`'s: tpce and
/// tpceh have the same flags, and `--customers` is smallbank's, tpce's and
/// tpceh's scale (one flag, kept with smallbank's).
fn shared(f: &str, k: Kind, workload: Kind) -> bool {
    let tpce = |k| matches!(k, Kind::Tpce | Kind::Tpceh);
    tpce(workload) && (tpce(k) || f == "--customers")
}

/// Runs workload `k` with its flags from `a` on `db` (see `wl/`).
pub(crate) fn run<H: Host>(a: &BenchArgs, k: Kind, c: &Ctx, db: &H) -> Result<Measurement, String> {
    match k {
        Kind::Hekaton => wl::hekaton::run(&a.hekaton, c, db),
        Kind::Ycsb => wl::ycsb::run(&a.ycsb, c, db),
        Kind::SmallBank => wl::smallbank::run(&a.smallbank, c, db),
        Kind::Tatp => wl::tatp::run(&a.tatp, c, db),
        Kind::Tpcc => wl::tpcc::run(&a.tpcc, c, db),
        Kind::Tpce => wl::tpce::run(&a.tpce, a.smallbank.customers, false, c, db),
        Kind::Tpceh => wl::tpce::run(&a.tpce, a.smallbank.customers, true, c, db),
        Kind::Sibench => wl::sibench::run(&a.sibench, c, db),
        Kind::Predicate => wl::predicate::run(&a.predicate, c, db),
        Kind::ListAppend => wl::list_append::run(&a.list_append, c, db),
    }
}
