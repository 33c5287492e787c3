//! A transaction's operations on an execution thread ([`ExecTxn`],
//! section 3.3): reads through annotations or the placeholder's Prev
//! Pointer, writes into its own placeholders.

use super::*;
use crate::IntoKey;

/// Declared read and write sets up to this size are searched linearly.
/// In a larger read set, a read is first matched against the next declared
/// read (a long reader reads its records in the order it declared them); a
/// record out of that order, or in a large write set, is found through a
/// map built at the first such lookup.
pub(super) const LINEAR: usize = 16;

/// How many declared reads ahead a long reader's versions are prefetched
/// (see `ExecTxn::read_ahead`).
pub(super) const AHEAD: usize = 16;

/// Where a transaction finds a record: its own write, or a version.
#[derive(Clone, Copy)]
enum Seen {
    Own(usize),
    Version(*mut BVersion),
}

/// The operations a [`Procedure`] runs, on an execution thread: reads and
/// writes of the records it declared, at its timestamp.
pub struct ExecTxn<'a> {
    pub(super) pipe: *const u8,
    pub(super) produce: fn(*const u8, *mut BVersion, usize) -> bool,
    pub(super) depth: usize,
    pub(super) plan: &'a mut Plan,
    pub(super) max_value: usize,
    pub(super) blocked: bool,
    pub(super) refused: Option<Error>,
    /// The declared read expected next (see [`LINEAR`]).
    pub(super) cursor: usize,
}

impl ExecTxn<'_> {
    /// The transaction's timestamp (its log position).
    pub fn ts(&self) -> u64 {
        self.plan.ts
    }

    /// Where a record is declared: its first declared write (duplicates
    /// share a placeholder, and only the first position tracks what this
    /// run wrote), else its declared read. A record declared written is
    /// read through its placeholder, so its read position is not looked
    /// for (None).
    ///
    /// The declared writes are searched first (few, in every workload),
    /// then the read at the cursor: procedures mostly read in the order
    /// they declared, so a read is usually found at once. Records are
    /// compared by their hashes, a word each, and by key on a hash match.
    fn find(&mut self, table: TableId, key: &Key) -> (Option<usize>, Option<usize>) {
        let p = &*self.plan;
        let (a, h) = (&p.access, record_hash(table.0, key));
        if a.writes.len() <= LINEAR {
            let w = declared_at(&p.write_hash, &a.writes, h, table, key);
            let is = |i: usize| p.read_hash.get(i) == Some(&h) && a.reads[i].0 == table && a.reads[i].1 == *key;
            let c = self.cursor;
            if w.is_none() && is(c) {
                self.cursor = c + 1;
                if a.reads.len() > LINEAR {
                    self.read_ahead(c);
                }
                return (Some(c), None);
            }
            if w.is_some() {
                return (None, w);
            }
            if a.reads.len() <= LINEAR {
                let r = declared_at(&p.read_hash, &a.reads, h, table, key);
                if let Some(r) = r {
                    self.cursor = r + 1;
                }
                return (r, None);
            }
            // In a long read set, the read just matched (read twice) is
            // found without the map too; a duplicate read was annotated
            // with the same version as its first one.
            if c > 0 && is(c - 1) {
                return (Some(c - 1), None);
            }
        }
        let Plan { access: a, lookup, .. } = &mut *self.plan;
        if lookup.is_empty() {
            for (i, (t, k)) in a.reads.iter().enumerate() {
                lookup.entry(MapKey { table: t.0, key: k.clone() }).or_insert((0, 0)).0 = i as u32 + 1;
            }
            for (i, (t, k)) in a.writes.iter().enumerate() {
                let e = lookup.entry(MapKey { table: t.0, key: k.clone() }).or_insert((0, 0));
                if e.1 == 0 {
                    e.1 = i as u32 + 1;
                }
            }
        }
        match lookup.get(&MapKey { table: table.0, key: key.clone() }) {
            None => (None, None),
            Some(&(r, w)) => (r.checked_sub(1).map(|r| r as usize), w.checked_sub(1).map(|w| w as usize)),
        }
    }

    /// A long reader's versions are known before it reads them (section
    /// 3.2.3's annotations): while it reads in declared order, start
    /// loading the version [`AHEAD`] reads on, and the value of the one
    /// half as far, whose version was requested that many reads ago, so
    /// that the two dependent misses of each read overlap with others.
    #[inline]
    fn read_ahead(&self, c: usize) {
        let reads = &self.plan.reads;
        if let Some(v) = reads.get(c + AHEAD) {
            // Relaxed: published by the planner's Release on cc_done.
            let v = v.load(Ordering::Relaxed) as *const u8;
            prefetch(v);
            prefetch(v.wrapping_add(64));
        }
        if let Some(v) = reads.get(c + AHEAD / 2) {
            // Relaxed: as above.
            let v = v.load(Ordering::Relaxed);
            if !v.is_null() {
                // SAFETY: annotated for this unfinished transaction: alive
                // until its batch is finished (Condition 3, as in `ready`).
                let ver = unsafe { &*v };
                if ver.state() != PENDING {
                    // SAFETY: produced, so nobody writes it any more.
                    prefetch(unsafe { ver.data() }.as_ptr());
                }
            }
        }
    }

    /// Hints that the transaction is about to access these declared
    /// records (the workloads' prefetch, as under the other protocols). A
    /// record is three dependent misses away — its placeholder (for a
    /// write), the version to read, its value — so each step is issued for
    /// all the keys before the next, and their misses overlap. Only for
    /// declarations short enough to search linearly; changes nothing.
    pub fn prefetch(&self, table: impl Into<TableId>, keys: &[Key]) {
        let table = table.into();
        let a = &self.plan.access;
        if a.reads.len() > LINEAR || a.writes.len() > LINEAR {
            return;
        }
        let p = &*self.plan;
        let keys = &keys[..keys.len().min(LINEAR)];
        let mut seen = [Seen::Version(ptr::null_mut()); LINEAR];
        // As in `find`: writes first, then the read expected next.
        let mut next = 0;
        for (key, s) in keys.iter().zip(seen.iter_mut()) {
            let h = record_hash(table.0, key);
            if let Some(w) = declared_at(&p.write_hash, &a.writes, h, table, key) {
                // Relaxed: as in `placeholder`.
                prefetch(p.writes[w].load(Ordering::Relaxed) as *const u8);
                *s = Seen::Own(w);
                continue;
            }
            let at_next = p.read_hash.get(next) == Some(&h) && a.reads[next].0 == table && a.reads[next].1 == *key;
            let r = if at_next { Some(next) } else { declared_at(&p.read_hash, &a.reads, h, table, key) };
            let Some(r) = r else { continue };
            next = r + 1;
            // Relaxed: as in `seen`.
            *s = Seen::Version(p.reads[r].load(Ordering::Relaxed));
        }
        for s in seen[..keys.len()].iter_mut() {
            if let Seen::Own(w) = *s {
                // The version before the placeholder is the one to read.
                *s = Seen::Version(self.placeholder(w).prev);
            }
            if let Seen::Version(v) = *s {
                prefetch(v as *const u8);
            }
        }
        for s in &seen[..keys.len()] {
            let Seen::Version(v) = *s else { continue };
            if v.is_null() {
                continue;
            }
            // SAFETY: annotated for, or preceding a placeholder of, this
            // unfinished transaction: alive (Condition 3, as in `ready`).
            let ver = unsafe { &*v };
            if ver.state() == PRESENT {
                // SAFETY: produced, so nobody writes it any more.
                let data = unsafe { ver.data() };
                let first = data.as_ptr() as usize & !63;
                for line in (first..data.as_ptr() as usize + data.len()).step_by(64) {
                    prefetch(line as *const u8);
                }
            }
        }
    }

    /// Records an access outside the declaration: the transaction will be
    /// refused whatever its logic does with the error.
    #[cold]
    fn refuse(&mut self, what: &str, table: TableId, key: Option<&Key>) -> Error {
        let e = Error::NotDeclared(match key {
            Some(k) => format!("BOHM transaction {what} of key {k:?} in table #{}, which it did not declare", table.0),
            None => format!("BOHM transactions access declared records only; a {what} cannot be declared"),
        });
        if self.refused.is_none() {
            self.refused = Some(e.clone());
        }
        e
    }

    /// A value this transaction needs is not produced yet: it will be given
    /// back and run again (section 3.3.1). The error only unwinds the logic.
    #[cold]
    fn block(&mut self) -> Error {
        self.blocked = true;
        Error::Aborted(AbortReason::CommitDependency)
    }

    #[inline]
    fn placeholder(&self, w: usize) -> &BVersion {
        // SAFETY: planned before the batch was handed over; our own.
        // Relaxed: published by the planner's Release on cc_done.
        unsafe { &*self.plan.writes[w].load(Ordering::Relaxed) }
    }

    /// What this transaction sees of a record, or an error if undeclared.
    fn seen(&mut self, table: TableId, key: &Key, what: &str) -> Result<Seen> {
        match self.find(table, key) {
            (_, Some(w)) if self.plan.written[w] != UNWRITTEN => Ok(Seen::Own(w)),
            // The version before our placeholder is the one at our timestamp.
            (_, Some(w)) => Ok(Seen::Version(self.placeholder(w).prev)),
            // Relaxed: as for placeholders.
            (Some(r), None) => Ok(Seen::Version(self.plan.reads[r].load(Ordering::Relaxed))),
            (None, None) => Err(self.refuse(what, table, Some(key))),
        }
    }

    /// Makes sure `v` is produced (evaluating its producer if possible).
    #[inline]
    fn ready<'v>(&mut self, v: *mut BVersion) -> Result<Option<&'v BVersion>> {
        if v.is_null() {
            return Ok(None);
        }
        // SAFETY: a version annotated for, or preceding a placeholder of, an
        // unfinished transaction is alive until the transaction's batch is
        // finished (Condition 3), which outlasts this run of its logic.
        let ver = unsafe { &*v };
        if ver.state() == PENDING && !(self.produce)(self.pipe, v, self.depth) {
            return Err(self.block());
        }
        Ok(Some(ver))
    }

    /// Whether the record exists as this transaction sees it.
    fn exists(&mut self, seen: &Seen) -> Result<bool> {
        match *seen {
            Seen::Own(w) => Ok(self.plan.written[w] == PRESENT),
            Seen::Version(v) => Ok(self.ready(v)?.is_some_and(|v| v.state() == PRESENT)),
        }
    }

    /// Reads a declared record: its value, or `None` where it has no row.
    /// Keys and values take the forms of [`crate::Transaction`]'s
    /// operations (see [`IntoKey`]).
    pub fn get<'k>(&mut self, table: impl Into<TableId>, key: impl IntoKey<'k>) -> Result<Option<Vec<u8>>> {
        self.get_with(table, key, |v| v.to_vec())
    }

    /// Reads a declared record and passes its value to `f`.
    #[inline]
    pub fn get_with<'k, R>(
        &mut self,
        table: impl Into<TableId>,
        key: impl IntoKey<'k>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let table = table.into();
        key.with_key(|key| self.read(table, key, f))?
    }

    /// [`ExecTxn::get_with`] of a key as it is.
    fn read<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        match self.seen(table, key, "read")? {
            Seen::Own(w) => {
                if self.plan.written[w] != PRESENT {
                    return Ok(None);
                }
                // SAFETY: our own placeholder, written by this run.
                Ok(Some(f(unsafe { &*self.placeholder(w).data.get() })))
            }
            Seen::Version(v) => {
                let recording = self.plan.recording;
                let ver = self.ready(v)?;
                let found = match ver {
                    Some(ver) if ver.state() == PRESENT => {
                        // SAFETY: produced.
                        let (data, writer) = unsafe { (ver.data(), ver.writer()) };
                        Some((data, writer))
                    }
                    _ => None,
                };
                if recording {
                    let version = found.map(|(d, w)| (Writer::Committed(w), d.to_vec()));
                    self.plan.history.push(Op::Read { table: table.0, key: key.clone(), version });
                }
                Ok(found.map(|(d, _)| f(d)))
            }
        }
    }

    /// Writes a declared record: `fill(old, new)` produces the new value
    /// (None: delete) from the old one (None: no row).
    fn write(
        &mut self,
        table: TableId,
        key: &Key,
        kind: WriteKind,
        fill: impl FnOnce(Option<&[u8]>, &mut Vec<u8>),
    ) -> Result<()> {
        let w = match self.find(table, key) {
            (_, Some(w)) => w,
            _ => return Err(self.refuse("write", table, Some(key))),
        };
        let seen = self.seen(table, key, "write")?;
        let exists = self.exists(&seen)?;
        match (kind, exists) {
            (WriteKind::Insert, true) => return Err(Error::DuplicateKey),
            (WriteKind::Update | WriteKind::Delete, false) => return Err(Error::KeyNotFound),
            _ => {}
        }
        if self.plan.recording && exists {
            if let Seen::Version(v) = seen {
                // The version replaced, as the other protocols record it: the
                // checker's read-write edge for a read-modify-write.
                // SAFETY: produced (`exists` made it ready) and alive.
                let (writer, data) = unsafe { ((*v).writer(), (*v).data().to_vec()) };
                self.plan.history.push(Op::Read {
                    table: table.0,
                    key: key.clone(),
                    version: Some((Writer::Committed(writer), data)),
                });
            }
        }
        let ph = self.placeholder(w) as *const BVersion;
        // SAFETY: our own placeholder: nobody reads its data while PENDING.
        let data = unsafe { &mut *(*ph).data.get() };
        if kind == WriteKind::Delete {
            self.plan.written[w] = ABSENT;
            data.clear();
        } else {
            match seen {
                Seen::Own(_) => {
                    // Old and new in one buffer: build aside, then swap.
                    let mut new = Vec::with_capacity(data.len());
                    fill(Some(data), &mut new);
                    *data = new;
                }
                Seen::Version(v) => {
                    data.clear();
                    // SAFETY: produced (`exists` made it ready) and alive.
                    let old = if exists { Some(unsafe { (*v).data() }) } else { None };
                    fill(old, data);
                }
            }
            if data.len() > self.max_value {
                // The placeholder's buffer is spoilt: the transaction cannot
                // commit, whatever its logic does with the error.
                let e = Error::ValueTooLarge { len: data.len(), max: self.max_value };
                data.clear();
                self.refused.get_or_insert_with(|| e.clone());
                return Err(e);
            }
            self.plan.written[w] = PRESENT;
        }
        if self.plan.recording {
            let value = if kind == WriteKind::Delete { Vec::new() } else { data.clone() };
            self.plan.history.push(Op::Write { table: table.0, key: key.clone(), kind, value });
        }
        Ok(())
    }

    /// Inserts a declared record that has no row.
    pub fn insert<'k>(
        &mut self,
        table: impl Into<TableId>,
        key: impl IntoKey<'k>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        let (table, value) = (table.into(), value.as_ref());
        key.with_key(|key| self.write(table, key, WriteKind::Insert, |_, new| new.extend_from_slice(value)))?
    }

    /// Replaces the value of a declared record.
    pub fn update<'k>(
        &mut self,
        table: impl Into<TableId>,
        key: impl IntoKey<'k>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        let (table, value) = (table.into(), value.as_ref());
        key.with_key(|key| self.write(table, key, WriteKind::Update, |_, new| new.extend_from_slice(value)))?
    }

    /// Read-modify-write of a declared record: `f(old, new)` fills `new`.
    pub fn update_with<'k>(
        &mut self,
        table: impl Into<TableId>,
        key: impl IntoKey<'k>,
        f: impl FnOnce(&[u8], &mut Vec<u8>),
    ) -> Result<()> {
        let table = table.into();
        key.with_key(|key| self.write(table, key, WriteKind::Update, |old, new| f(old.unwrap_or(&[]), new)))?
    }

    /// Read-modify-write in place of a copy of the old value.
    pub fn modify<'k>(
        &mut self,
        table: impl Into<TableId>,
        key: impl IntoKey<'k>,
        f: impl FnOnce(&mut [u8]),
    ) -> Result<()> {
        let table = table.into();
        key.with_key(|key| {
            self.write(table, key, WriteKind::Update, |old, new| {
                new.extend_from_slice(old.unwrap_or(&[]));
                f(new)
            })
        })?
    }

    /// Deletes a declared record.
    pub fn delete<'k>(&mut self, table: impl Into<TableId>, key: impl IntoKey<'k>) -> Result<()> {
        let table = table.into();
        key.with_key(|key| self.write(table, key, WriteKind::Delete, |_, _| {}))?
    }

    /// Savepoints are refused ([`Error::Unsupported`]): a procedure's
    /// writes fill placeholders that the concurrency-control phase laid
    /// out before it ran (BOHM section 3), which cannot be taken back one
    /// by one. An interactive transaction (`Database::begin`) offers them.
    pub fn savepoint(&mut self) -> Result<crate::Savepoint> {
        Err(Error::Unsupported("a savepoint in a BOHM procedure (its writes were laid out before it ran)".into()))
    }

    /// Secondary-index lookups cannot be declared: refused.
    pub fn get_by(&mut self, index: IndexId, _key: &Key, _f: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        Err(self.refuse("secondary-index lookup", index.table(), None))
    }

    /// Scans cannot be declared: refused.
    pub fn scan(
        &mut self,
        index: IndexId,
        _range: impl RangeBounds<Key>,
        _filter: Option<&Filter>,
        _f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        Err(self.refuse("scan", index.table(), None))
    }
}
