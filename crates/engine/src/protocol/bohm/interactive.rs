//! Interactive transactions under `bohm`: each runs alone, at the next log
//! position, reading and writing the latest versions directly (module docs
//! of `protocol::bohm`, "Using it").

use super::*;

/// One write of an interactive transaction: the record's latest version
/// before (null: none) and after.
pub(crate) struct Undo {
    pub(super) part: usize,
    pub(super) key: MapKey,
    old: *mut BVersion,
    pub(super) new: *mut BVersion,
}

// SAFETY: the versions an undo entry points to belong to the store, which
// the transaction holding them holds alone (its gate) wherever it runs; the
// entry moves with the transaction and is used by one thread at a time.
unsafe impl Send for Undo {}

impl Store {
    /// Takes the store for an interactive transaction (module docs): waits
    /// for the gate; the matching release is `bohm_release`. Returns the
    /// transaction's timestamp.
    pub(crate) fn enter(&self) -> u64 {
        std::mem::forget(self.gate.lock());
        // Relaxed: only the gate's holder advances it.
        self.next_ts.fetch_add(1, Ordering::Relaxed)
    }
}

/// An interactive transaction of `bohm` (module docs, "Using it"): alone
/// on the store, at the next log position, writing the latest versions
/// directly, with the slot's undo log to roll back.
pub(crate) struct BohmTxn<'db> {
    pub(crate) core: TxnCore<'db>,
    /// The store, which this transaction holds alone (its gate).
    pub(crate) store: &'db Store,
    /// The undo log: the writes to roll back.
    undo: Vec<Undo>,
}

impl<'db> BohmTxn<'db> {
    #[inline]
    pub(crate) fn new(mut core: TxnCore<'db>, store: &'db Store) -> Self {
        // BOHM names every transaction by its log position.
        core.shape.id = core.begin_ts;
        BohmTxn { core, store, undo: Vec::new() }
    }
}

impl<'db> BohmTxn<'db> {
    #[inline]
    pub(super) fn store(&self) -> &'db Store {
        self.store
    }

    /// Gives the gate back (commit or rollback).
    fn bohm_release(&self) {
        // SAFETY: taken by `Store::enter` when this transaction began
        // (`Globals::begin`) and forgotten;
        // released exactly once, as the transaction ends.
        unsafe { self.store().gate.force_unlock() };
    }

    pub(crate) fn bo_enter(&self) -> Result<()> {
        match self.core.status {
            Status::Aborted(r) => Err(Error::TransactionClosed(Some(r))),
            Status::Active => Ok(()),
        }
    }

    /// The latest version of a record if it holds a row.
    fn bo_latest(&self, table: TableId, key: &Key) -> Result<(usize, MapKey, *mut BVersion)> {
        self.core.db.table_ref(table)?;
        let mk = MapKey { table: table.0, key: key.clone() };
        let p = partition_of(table.0, key);
        // SAFETY: the gate makes us the only user of every partition.
        let v = unsafe { self.store().part(p) }.latest.get(table.0, key);
        Ok((p, mk, v))
    }

    pub(crate) fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.bo_enter()?;
        let (_, _, v) = self.bo_latest(table, key)?;
        // SAFETY: the latest version is alive and produced (no run is going on).
        let found = (!v.is_null()).then(|| unsafe { &*v }).filter(|v| v.state() == PRESENT);
        if self.core.recording {
            // SAFETY: produced.
            let version = found.map(|v| unsafe { (Writer::Committed(v.writer()), v.data().to_vec()) });
            self.core.record(Op::Read { table: table.0, key: key.clone(), version });
        }
        // SAFETY: as above.
        Ok(found.map(|v| f(unsafe { v.data() })))
    }

    /// Writes a record: `fill(old, new)` makes the new value from the old
    /// (None: no row); `kind` says which rows are acceptable.
    pub(crate) fn write(
        &mut self,
        table: TableId,
        key: &Key,
        kind: WriteKind,
        fill: impl FnOnce(Option<&[u8]>, &mut Vec<u8>),
    ) -> Result<()> {
        self.bo_enter()?;
        let (p, mk, old) = self.bo_latest(table, key)?;
        // SAFETY: as in get_with.
        let present = !old.is_null() && unsafe { &*old }.state() == PRESENT;
        match (kind, present) {
            (WriteKind::Insert, true) => return Err(Error::DuplicateKey),
            (WriteKind::Update | WriteKind::Delete, false) => return Err(Error::KeyNotFound),
            _ => {}
        }
        let store = self.store();
        // SAFETY: the gate makes us the only user of every partition.
        let part = unsafe { store.part(p) };
        let state = if kind == WriteKind::Delete { ABSENT } else { PRESENT };
        let init =
            BInit { begin: self.core.begin_ts, txn: ptr::null(), prev: old, state, table: table.0, key: key.clone() };
        let new = store.alloc(p, part, init);
        if kind != WriteKind::Delete {
            // SAFETY: fresh, ours alone; `old` is a different, produced version.
            let data = unsafe { &mut *(*new).data.get() };
            // SAFETY: `old` is produced (present) and alive while we run.
            fill(present.then(|| unsafe { (*old).data() }), data);
            if data.len() > self.core.db.opts.max_value_size {
                let e = Error::ValueTooLarge { len: data.len(), max: self.core.db.opts.max_value_size };
                store.free(p, part, new);
                return Err(e);
            }
            store.filled(new);
        }
        if !old.is_null() {
            // Relaxed: nobody else runs.
            // SAFETY: the latest version of its record: alive.
            unsafe { &*old }.end.store(self.core.begin_ts, Ordering::Relaxed);
        }
        part.latest.set(new);
        self.undo.push(Undo { part: p, key: mk, old, new });
        if self.core.recording {
            // SAFETY: ours.
            let value = if kind == WriteKind::Delete { Vec::new() } else { unsafe { (*(*new).data.get()).clone() } };
            self.core.record(Op::Write { table: table.0, key: key.clone(), kind, value });
        }
        Ok(())
    }

    /// A scan (or a secondary-index lookup, as a one-key range) over the
    /// latest versions, in key order (`rev`: descending).
    pub(crate) fn scan(
        &mut self,
        index: IndexId,
        lo: Bound<Key>,
        hi: Bound<Key>,
        filter: Option<&Filter>,
        rev: bool,
        mut f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        self.bo_enter()?;
        let (_, ix) = self.core.index_ref(index)?;
        let key_fn = ix.key_fn;
        let store = self.store();
        let mut rows: Vec<(Key, Key, *mut BVersion)> = Vec::new();
        for p in 0..PARTITIONS {
            // SAFETY: the gate makes us the only user of every partition.
            for v in unsafe { store.part(p) }.latest.versions() {
                // SAFETY: latest versions are alive and produced.
                let ver = unsafe { &*v };
                if ver.table != index.table || ver.state() != PRESENT {
                    continue;
                }
                let ik = match key_fn {
                    // SAFETY: produced (PRESENT), so its data is final.
                    Some(kf) => kf(&ver.key, unsafe { ver.data() }),
                    None => ver.key.clone(),
                };
                if (lo.as_ref(), hi.as_ref()).contains(&ik) {
                    rows.push((ik, ver.key.clone(), v));
                }
            }
        }
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        if rev {
            rows.reverse();
        }
        let mut seen = Vec::new();
        let (mut lo, mut hi) = (lo, hi);
        for (ik, pk, v) in rows {
            // SAFETY: as above.
            let (data, writer) = unsafe { ((*v).data(), (*v).writer()) };
            if filter.is_some_and(|fl| !fl(&pk, data)) {
                continue;
            }
            if self.core.recording {
                seen.push((pk.clone(), Writer::Committed(writer), data.to_vec()));
            }
            if !f(&pk, data) {
                // Stopped: the history claims the range only up to here
                // (an iterator's batch), as the other families' scans do.
                if rev {
                    lo = Bound::Included(ik);
                } else {
                    hi = Bound::Included(ik);
                }
                break;
            }
        }
        if self.core.recording {
            self.core.record_scan(index, lo, hi, filter.is_some(), seen);
        }
        Ok(())
    }

    pub(crate) fn commit(&mut self) -> Result<CommitInfo> {
        self.bo_enter()?;
        let store = self.store();
        let undo = std::mem::take(&mut self.undo);
        // Logging, as in the pipeline: the versions written, in order (before
        // the superseded ones are freed).
        let epoch = match &self.core.db.log {
            Some(log) if !undo.is_empty() => {
                Some(log.append(self.core.begin_ts, &mut self.core.local.get().log_buf, |r| {
                    for u in &undo {
                        // SAFETY: the gate makes us the only user of the store;
                        // our versions are produced and alive until it opens.
                        let v = unsafe { &*u.new };
                        // SAFETY: as above; a present version's data is final.
                        let value = (v.state() == PRESENT).then(|| unsafe { v.data() });
                        r.put(v.table, v.key.as_bytes(), value);
                    }
                    undo.len() as u32
                }))
            }
            _ => None,
        };
        for u in &undo {
            // SAFETY: the gate makes us the only user of every partition.
            let part = unsafe { store.part(u.part) };
            if !u.old.is_null() {
                // Superseded, and nobody else can reach it: free at once.
                store.free(u.part, part, u.old);
            }
        }
        // A deleted record keeps no version (deleted in order, so a later
        // write's version is what remains).
        for u in &undo {
            // SAFETY: the gate makes us the only user of every partition;
            // `u.new` is dereferenced only while it is the latest (alive).
            let part = unsafe { store.part(u.part) };
            // SAFETY: (of the dereference) `u.new` is the latest version, so alive.
            if part.latest.get(u.key.table, &u.key.key) == u.new && unsafe { &*u.new }.state() == ABSENT {
                part.latest.remove(u.key.table, &u.key.key);
                store.free(u.part, part, u.new);
            }
        }
        let writes = undo.len();
        let ts = self.core.begin_ts;
        self.undo = undo;
        if self.core.recording {
            self.core.record_end(Some(ts), HOutcome::Committed);
        }
        self.bohm_release();
        self.core.terminate();
        self.core.db.wait_durable(epoch)?;
        Ok(CommitInfo { commit_ts: ts, writes })
    }

    pub(crate) fn abort_with(&mut self, reason: AbortReason) -> Error {
        self.undo_to(0);
        self.bohm_release();
        self.core.aborted(reason)
    }

    /// Entries in the undo log (a savepoint's mark).
    pub(crate) fn undo_len(&self) -> usize {
        self.undo.len()
    }

    /// Rolls back the writes after the first `mark` of the undo log, newest
    /// first; returns the (table, key) pairs they wrote.
    pub(crate) fn undo_to(&mut self, mark: usize) -> Vec<(u32, Key)> {
        let store = self.store();
        let mut undo = std::mem::take(&mut self.undo);
        let keys = undo[mark..].iter().map(|u| (u.key.table, u.key.key.clone())).collect();
        for u in undo.drain(mark..).rev() {
            // SAFETY: the gate makes us the only user of every partition.
            let part = unsafe { store.part(u.part) };
            if u.old.is_null() {
                part.latest.remove(u.key.table, &u.key.key);
            } else {
                // Relaxed: nobody else runs.
                // SAFETY: superseded by us and not freed before commit.
                unsafe { &*u.old }.end.store(INFINITY, Ordering::Relaxed);
                part.latest.set(u.old);
            }
            store.free(u.part, part, u.new);
        }
        self.undo = undo;
        keys
    }
}

impl BohmTxn<'_> {
    /// A savepoint's mark: how far the undo log goes.
    pub(crate) fn savepoint_mark(&mut self) -> Result<crate::protocol::core::Mark> {
        self.bo_enter()?;
        let history = self.core.history_mark();
        Ok(crate::protocol::core::Mark { writes: self.undo_len(), replaced: 0, history })
    }

    /// Replays the undo log down to the mark.
    pub(crate) fn rollback_to(&mut self, mark: crate::protocol::core::Mark) -> Result<()> {
        self.bo_enter()?;
        let keys = self.undo_to(mark.writes);
        self.core.rollback_history(mark.history, &keys);
        Ok(())
    }
}
