//! What a durable database keeps of its data directory: the directory's
//! lock, its generation, and the checkpointer thread. Opening the
//! directory, checkpoints and recovery are `durability`'s, above this; the
//! log is the database's own (`Shared::log`).

use crate::sync::atomic::AtomicU64;
use crate::Error;
use parking_lot::Mutex;

/// A durable database's directory and checkpointer (its log is the
/// database's, `Shared::log`).
pub(crate) struct Durable {
    /// The directory's lock file, locked while this database owns it.
    pub(crate) _lock: std::fs::File,
    pub(crate) dir: std::path::PathBuf,
    pub(crate) generation: u64,
    /// One checkpoint at a time.
    pub(crate) checkpointing: Mutex<()>,
    /// Checkpoints written since the open (the open's own not counted).
    pub(crate) checkpoints: AtomicU64,
    /// The last failure of a checkpoint that fell due (see
    /// [`crate::Database::checkpoint_error`]).
    pub(crate) checkpoint_failed: Mutex<Option<Error>>,
    /// The checkpointer thread, and its stop flag.
    pub(crate) checkpointer: Mutex<Option<std::thread::JoinHandle<()>>>,
    pub(crate) stop: (Mutex<bool>, parking_lot::Condvar),
}

impl Durable {
    /// Stops the checkpointer (after the checkpoint it is writing, if any).
    pub(crate) fn stop_checkpointer(&self) {
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
        if let Some(t) = self.checkpointer.lock().take() {
            let _ = t.join();
        }
    }
}
