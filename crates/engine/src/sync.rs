//! The seam between the lock-free state machines and the atomics they run on.
//!
//! The small modules that hold the engine's lock-free pieces — the End
//! word's record lock ([`crate::storage::word`]), the wait-for word
//! ([`crate::txn::wait_for`]), the bucket word's LockCount
//! ([`crate::index::bucket`]), 1V's key locks ([`crate::index::key_locks`]),
//! SSN's stamp words and POMVCC's timestamp
//! counters — take their atomics and their spin-wait from here, as
//! `crate::sync::…`, and name nothing else of the crate but each other.
//! Every other atomic of the engine is named through here too, so that any
//! piece can be brought under a model test by giving it the seam's names.
//! In the engine this is `std` and crossbeam. The model tests
//! (`tests/loom_models.rs`, `tests/shuttle_models.rs`) compile the same source
//! files into a test crate whose own `sync` module maps these names to `loom`
//! or `shuttle`, so the model checker
//! explores every interleaving of the real code (see docs on schedules).

pub(crate) mod atomic {
    pub(crate) use std::sync::atomic::{
        fence, AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
    };
}

/// Exponential backoff for the short waits inside the lock-free pieces (a
/// word being rewritten by a transaction that has just finished). The model
/// tests replace it with a yield to the model checker's scheduler.
pub(crate) use crossbeam_utils::Backoff;
