//! MV/O: Hekaton's optimistic multi-version concurrency control
//! (Larson et al., VLDB 2011, section 3; thesis section 4.4).
//!
//! A transaction goes through the phases of section 2.4:
//!
//! 1. **Begin**: take a begin timestamp (a clock reading), become Active.
//! 2. **Normal processing** (section 3.1): reads check visibility (Tables 1
//!    and 2, in `txn::visibility`) as of the logical read time — the
//!    current time under read committed, the begin timestamp otherwise.
//!    Serializable and repeatable-read transactions record the versions they
//!    read in their **ReadSet**; serializable ones record every scan in their
//!    **ScanSet**. Updates and deletes check updatability and install the
//!    transaction id in the old version's End word by compare-and-swap (the
//!    write lock, first writer wins); new versions carry the id in their
//!    Begin word and are linked into every index at once. Nothing blocks.
//! 3. **Precommit**: take the end timestamp and become Preparing.
//! 4. **Preparation** (section 3.2): read validation (every ReadSet version
//!    still visible as of the end timestamp), phantom detection (repeat every
//!    ScanSet scan as of the end timestamp and look for versions that came
//!    into existence during the transaction's lifetime), then wait until
//!    CommitDepCounter is zero or AbortNow is set; then write the new versions
//!    to the log (a redo record appended to the thread's stream) and, under
//!    sync durability, wait for its round, still Preparing, so that only
//!    durable commits become visible (`wal::log`, "Durable
//!    visibility"). Then become Committed or Aborted.
//! 5. **Postprocessing** (section 3.3): stamp the end timestamp into the new
//!    versions' Begin and the old versions' End words — or, on abort, set the
//!    new versions' Begin to infinity and reset the old versions' End words —
//!    then report the outcome to the transactions in CommitDepSet, hand the
//!    garbage to the collector, and terminate.
//!
//! The transaction (`MvTxn`) is also the pessimistic transaction of MV/L (section 4):
//! the phases, visibility and postprocessing are the same; reads that lock
//! instead of being validated, wait-for dependencies and deadlock detection
//! are in [`super::lock`], and the places here that call into it are
//! guarded by `lock_reads`, `lock_scans` and `honour_locks` (all false under
//! `mv-occ`, which runs exactly the optimistic scheme).
//!
//! Deliberate differences from the paper, all conservative or equivalent:
//!
//! * A point lookup of a unique primary key that finds a visible version
//!   records only the version in the ReadSet, not a ScanSet entry: a new
//!   version of that key can only appear after the one read has ended, which
//!   read validation already catches. Lookups that find nothing, and all
//!   secondary and range scans, are recorded in the ScanSet.
//! * A transaction that reaches commit with an empty WriteSet is serialized at
//!   its begin timestamp: all its reads were as of that time, so it needs no
//!   end timestamp and no validation (only its commit dependencies are
//!   awaited). Section 3.4 recommends exactly this for read-only transactions.
//! * A ReadSet version whose End word holds this transaction's own id (it
//!   read, then updated the version) passes validation: the write lock kept
//!   anybody else from replacing it.
//! * Between taking the end timestamp and publishing it, the state word reads
//!   "Preparing, timestamp pending"; a reader that sees it spins for those
//!   few instructions, so that no reader with a later read time can miss a
//!   transaction that commits before it (the paper treats the two as one
//!   atomic step).
//! * The begin timestamp is a reading of the clock (the odd time just past
//!   every stamp handed out), not an increment (section 2.4 draws both
//!   timestamps by read-and-increment). Only end timestamps must be unique:
//!   they order the committed transactions, and the correctness argument of
//!   the thesis (section 4.4.5) rests on them alone.
//! * Read committed reads at the current time, but reads the clock only when
//!   a version word holds a transaction id: with timestamps in both words the
//!   answer is the same for every "now" (see `visible_at`); a lookup that
//!   finds nothing is repeated with a clock reading taken before its walk.
//! * Inserts enforce primary-key uniqueness: an insert fails with
//!   `DuplicateKey` if the key has a visible row, and aborts with a write
//!   conflict if another transaction inserted or changed the key concurrently
//!   (checked before and again after linking the new version).
//!
//! Files: `read.rs` (reads and scans), `write.rs` (writes), `intent.rs`
//! (`get_for_update`'s write claims), `commit.rs` (commit and abort). The
//! transaction struct they extend, `MvTxn`, its state and
//! the helpers every phase uses are the family's, in [`super`].

mod commit;
mod intent;
mod read;
mod write;
