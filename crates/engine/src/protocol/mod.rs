//! Concurrency-control protocols, one module per protocol, each naming the
//! paper section it implements.

pub mod mv_lock;
pub mod mv_occ;
pub mod silo;
