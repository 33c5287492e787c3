//! BOHM's public entry points on [`Database`]: running the pipeline over a
//! feed or as a server (`protocol::bohm`, section 3), and taking the store
//! for an interactive transaction.

use crate::protocol::bohm::{Config, Feed, Procedure, RunStats, Server, Store};
use crate::{Database, Error, Result};

impl Database {
    pub(crate) fn bohm_store(&self) -> Result<&Store> {
        self.globals.bohm().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "the BOHM pipeline needs a database opened with protocol bohm, not {}",
                self.opts.protocol
            ))
        })
    }

    /// Runs BOHM's pipeline over a stream of transactions (section 3): the
    /// calling thread is the sequencer, `cfg.cc_threads` and
    /// `cfg.exec_threads` more threads plan and execute. Returns when the
    /// feed has stopped and everything it gave has finished (each handed
    /// back through [`Feed::done`]). Waits first for interactive
    /// transactions and other runs to end; they wait for this one.
    pub fn bohm_run<P: Procedure, F: Feed<P>>(&self, cfg: Config, feed: F) -> Result<(F, RunStats)> {
        self.bohm_store()?.run(&self.shared, cfg, feed)
    }

    /// Runs BOHM's pipeline as a server for the duration of `f`: any thread
    /// may call [`Server::execute`], which blocks until its transaction has
    /// run. When `f` returns, the server stops taking transactions,
    /// finishes those it took, and stops.
    pub fn bohm_serve<P: Procedure, R>(&self, cfg: Config, f: impl FnOnce(&Server<P>) -> R) -> Result<R> {
        self.bohm_store()?.serve(&self.shared, cfg, f)
    }

    /// Takes the store for an interactive transaction (see `Store::enter`).
    pub(crate) fn bohm_enter(&self) -> u64 {
        self.globals.bohm().expect("bohm databases have a store").enter()
    }
}
