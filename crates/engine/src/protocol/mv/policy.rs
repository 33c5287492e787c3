//! [`Policy`]: the switches one multi-version transaction runs with, decided
//! once at begin from the protocol, the transaction's mode and its
//! isolation level. The phases in `occ/`, `lock/`, `ssn/` and `pomvcc.rs`
//! read these switches and nothing else of the protocol or the level.

use super::ssn::{self, Cert};
use crate::protocol::core::Shape;
use crate::shared::Shared;
use crate::{Isolation, Mode, Protocol, TxnOptions};

/// The per-transaction switches of the multi-version family: what a
/// transaction adds to MV/O, chosen at begin from the protocol, its mode
/// and its isolation level, and fixed from then on. They combine freely:
/// a pessimistic SSN transaction, say, is a cell of the table below that
/// nobody asks for today but that would run as the switches say.
///
/// | protocol (mode) | level | track_reads | track_scans | pessimistic, lock_reads, lock_scans | honour_locks | cert | base_rc | po_occ |
/// | --- | --- | --- | --- | --- | --- | --- | --- | --- |
/// | mv-occ | RC / SI | - | - | - | - | off | - | - |
/// | mv-occ | RR | yes | - | - | - | off | - | - |
/// | mv-occ | SR | yes | yes | - | - | off | - | - |
/// | mv-lock (pessimistic) | RC / SI | - | - | yes, -, - | yes | off | - | - |
/// | mv-lock (pessimistic) | RR | - | - | yes, yes, - | yes | off | - | - |
/// | mv-lock (pessimistic) | SR | - | - | yes, yes, yes | yes | off | - | - |
/// | mv-lock / mv-mixed (optimistic) | as mv-occ | as mv-occ | as mv-occ | - | yes | off | - | - |
/// | ssn | SR over SI | - | yes | - | - | ssn | - | - |
/// | ssn | SR over RC | - | yes | - | - | ssn | yes | - |
/// | ssi | SR | - | yes | - | - | ssi | - | - |
/// | pomvcc (pessimistic) | as mv-occ | as mv-occ | as mv-occ | - | - | off | - | - |
/// | pomvcc (optimistic) | as mv-occ | as mv-occ | as mv-occ | - | - | off | - | yes |
///
/// Read-only transactions take no locks and track no reads (section 5.2.1);
/// a certified one still tracks its scans, and one that reads a safe
/// snapshot (section 5.2 of SSN) is not certified at all. Under mv-mixed
/// the default mode alternates with the id's generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Policy {
    /// ReadSet kept (repeatable read, serializable): reads are validated.
    pub(crate) track_reads: bool,
    /// ScanSet kept (serializable): scans are repeated for phantoms.
    pub(crate) track_scans: bool,
    /// MV/L (section 4): a pessimistic transaction; reads at the current
    /// time except under snapshot isolation, and locks instead of validating.
    pub(crate) pessimistic: bool,
    /// Read locks taken (pessimistic repeatable read and serializable).
    pub(crate) lock_reads: bool,
    /// Bucket and range locks taken (pessimistic serializable).
    pub(crate) lock_scans: bool,
    /// Other transactions may lock or impose wait-for dependencies on this
    /// one (mv-lock and mv-mixed; section 4.5), so it honours them.
    pub(crate) honour_locks: bool,
    /// SSN or SSI certifies this transaction (see `protocol::mv::ssn`).
    pub(crate) cert: Cert,
    /// SSN over read committed: reads at the current time.
    pub(crate) base_rc: bool,
    /// POMVCC's optimistic transaction (section V.D, Figure 13): writes wait
    /// in `TxnLocal::pending` and take their write locks at commit; off, a
    /// write takes its lock at update time (Figure 14's pessimistic scheme,
    /// and MV/O's own).
    pub(crate) po_occ: bool,
}

impl Policy {
    /// The switches of a transaction of `db`'s protocol with options `o`
    /// and id `id` (see the table above).
    #[inline]
    pub(super) fn of(db: &Shared, id: u64, o: &TxnOptions<'_>) -> Policy {
        let iso = o.isolation;
        let protocol = db.opts.protocol;
        let cert = match protocol {
            // A safe snapshot needs no certification (section 5.2).
            _ if ssn::uses_safe_snapshot(&db.opts, o) => Cert::Off,
            Protocol::Ssn => Cert::Ssn,
            Protocol::Ssi => Cert::Ssi,
            _ => Cert::Off,
        };
        let certified = cert != Cert::Off;
        // Read-only transactions read a snapshot without locks or validation
        // under either scheme (section 5.2.1: "the two MV schemes behave
        // identically"). Under mv-mixed the default alternates with the id's
        // generation, so every workload runs both kinds side by side.
        // POMVCC's modes choose when writes lock (see `po_occ`), not how reads
        // stay valid: its reads are always validated.
        let pessimistic = !o.read_only
            && protocol != Protocol::Pomvcc
            && match o.mode {
                Mode::Optimistic => false,
                Mode::Pessimistic => true,
                Mode::Default => match protocol {
                    Protocol::MvLock => true,
                    Protocol::MvMixed => (id >> crate::txn::table::SLOT_BITS) & 1 == 1,
                    _ => false,
                },
            };
        Policy {
            // SSN and SSI track reads their own way, read-only ones too.
            track_reads: !o.read_only && !pessimistic && !certified && iso >= Isolation::RepeatableRead,
            track_scans: (certified || !o.read_only) && !pessimistic && iso == Isolation::Serializable,
            pessimistic,
            lock_reads: pessimistic && iso >= Isolation::RepeatableRead,
            lock_scans: pessimistic && iso == Isolation::Serializable,
            honour_locks: !matches!(protocol, Protocol::MvOcc | Protocol::Ssn | Protocol::Ssi | Protocol::Pomvcc),
            cert,
            base_rc: cert == Cert::Ssn && db.opts.ssn_base == Isolation::ReadCommitted,
            po_occ: protocol == Protocol::Pomvcc && o.mode == Mode::Optimistic && !o.read_only,
        }
    }

    /// How the history classifies such a transaction: a pessimistic reader
    /// holds its read locks until its serialization point; SSN over read
    /// committed read at the current time, and its phantom detection keeps
    /// every absence it saw until its commit; the certified others read one
    /// snapshot.
    #[inline]
    pub(super) fn shape(&self, id: u64) -> Shape {
        Shape { id, locking: self.lock_reads || self.base_rc, snapshot: self.cert != Cert::Off && !self.base_rc }
    }
}
