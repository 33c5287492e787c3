//! Concurrency-control protocols, one module per protocol, each naming the
//! paper section it implements.

pub mod bohm;
pub(crate) mod core;
pub(crate) mod deadlock;
pub(crate) mod family;
pub mod iter;
pub mod lock_1v;
pub mod mv;
pub mod ordered_2pl;
pub mod savepoint;
pub(crate) mod sets;
pub mod silo;
pub(crate) mod single;
pub mod transaction;
