//! [`PeerTxn`]: the workloads' [`Txn`] over a store's own transaction,
//! with the key encoding of tables and secondary indexes (the crate's
//! module docs) and the recording of what a transaction observed.

use crate::{KvStore, KvTxn, Observed, Recorded, TableInfo};
use multiverse::{Error, Filter, IndexId, Key, Result, TableId};
use multiverse_workloads::{StoreTxn, Txn};
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// A transaction of a [`Peer`](crate::Peer): the workloads' [`Txn`] over the store's.
pub struct PeerTxn<'s, K: KvStore + 's> {
    tx: K::Tx<'s>,
    tables: Arc<Vec<TableInfo>>,
    /// Store keys are built here (reused across operations).
    key: Vec<u8>,
    /// A second key buffer (secondary entries, range ends).
    aux: Vec<u8>,
    /// While recording: this transaction's observations, and where they go
    /// when it commits.
    rec: Option<(Vec<Observed>, &'s Recorded)>,
}

/// The first five bytes of every key of index `index` of `table`.
#[inline]
fn put_prefix(buf: &mut Vec<u8>, table: u32, index: u8) {
    buf.clear();
    buf.extend_from_slice(&table.to_be_bytes());
    buf.push(index);
}

/// Appends the order-preserving, prefix-free encoding of `k` (module docs).
fn put_escaped(buf: &mut Vec<u8>, k: &[u8]) {
    for &b in k {
        buf.push(b);
        if b == 0 {
            buf.push(0xFF);
        }
    }
    buf.extend_from_slice(&[0, 0]);
}

/// Splits an escaped secondary key off the front of `b`: (the key, the rest).
fn split_escaped(b: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (0, Some(0)) => return Some((out, &b[i + 2..])),
            (0, Some(0xFF)) => {
                out.push(0);
                i += 2;
            }
            (0, _) => return None,
            (x, _) => {
                out.push(x);
                i += 1;
            }
        }
    }
    None
}

fn key_of(b: &[u8]) -> Result<Key> {
    Key::from_bytes(b).map_err(|e| Error::Corrupt(format!("a stored key: {e}")))
}

impl<'s, K: KvStore> PeerTxn<'s, K> {
    /// A transaction over the store's `tx`, with the schema `tables`; while
    /// recording, `rec` is where its observations go when it commits.
    pub(crate) fn new(tx: K::Tx<'s>, tables: Arc<Vec<TableInfo>>, rec: Option<&'s Recorded>) -> Self {
        PeerTxn { tx, tables, key: Vec::new(), aux: Vec::new(), rec: rec.map(|to| (Vec::new(), to)) }
    }

    /// Records an observation (while recording).
    #[inline]
    fn note(&mut self, op: impl FnOnce() -> Observed) {
        if let Some((ops, _)) = &mut self.rec {
            ops.push(op());
        }
    }

    fn info(&self, table: TableId) -> Result<&TableInfo> {
        self.tables.get(table.raw() as usize).ok_or_else(|| Error::UnknownTable(format!("#{}", table.raw())))
    }

    /// Builds the store key of row `pk` of `table` in `self.key`.
    #[inline]
    fn row_key(&mut self, table: TableId, pk: &[u8]) {
        put_prefix(&mut self.key, table.raw(), 0);
        self.key.extend_from_slice(pk);
    }

    /// Writes (or, with `add` false, removes) the secondary entries of row
    /// `pk` with value `value`; with `other`, only those whose key differs
    /// from the entry `other` (the row's other value) gives.
    fn secondary_entries(
        &mut self,
        table: TableId,
        pk: &Key,
        value: &[u8],
        other: Option<&[u8]>,
        add: bool,
    ) -> Result<()> {
        let tables = self.tables.clone();
        let info = tables.get(table.raw() as usize).ok_or_else(|| Error::UnknownTable(format!("#{}", table.raw())))?;
        for (i, (_, f)) in info.secondary.iter().enumerate() {
            let sk = f(pk, value);
            if other.is_some_and(|o| f(pk, o) == sk) {
                continue;
            }
            put_prefix(&mut self.aux, table.raw(), i as u8 + 1);
            put_escaped(&mut self.aux, sk.as_bytes());
            self.aux.extend_from_slice(pk.as_bytes());
            if add {
                self.tx.put(&self.aux, &[])?;
            } else {
                self.tx.delete(&self.aux)?;
            }
        }
        Ok(())
    }

    /// The store-key range of `range` over index `index` (`lo`, `hi` in
    /// `self.key`, `self.aux`).
    fn range_keys(&mut self, index: IndexId, range: &impl RangeBounds<Key>) {
        let (t, i) = (index.table().raw(), index.index_no());
        let enc = |buf: &mut Vec<u8>, k: &Key| {
            if i == 0 {
                buf.extend_from_slice(k.as_bytes())
            } else {
                put_escaped(buf, k.as_bytes())
            }
        };
        put_prefix(&mut self.key, t, i);
        match range.start_bound() {
            Bound::Unbounded => {}
            // An excluded start is filtered by the caller.
            Bound::Included(k) | Bound::Excluded(k) => enc(&mut self.key, k),
        }
        put_prefix(&mut self.aux, t, i);
        match range.end_bound() {
            Bound::Unbounded => {
                // The next index's prefix.
                self.aux.truncate(4);
                self.aux.push(i + 1);
                if i == u8::MAX {
                    self.aux.truncate(0);
                    self.aux.extend_from_slice(&(t + 1).to_be_bytes());
                }
            }
            Bound::Excluded(k) => enc(&mut self.aux, k),
            Bound::Included(k) => {
                if i == 0 {
                    // The least key above `k`.
                    self.aux.extend_from_slice(k.as_bytes());
                    self.aux.push(0);
                } else {
                    // Every entry of `k` begins with esc(k) and its 0x00 0x00
                    // end; 0x00 0x01 is above all of them and below the next key.
                    put_escaped(&mut self.aux, k.as_bytes());
                    let n = self.aux.len();
                    self.aux[n - 1] = 1;
                }
            }
        }
    }
}

impl<'s, K: KvStore> StoreTxn for PeerTxn<'s, K> {
    fn commit(self) -> Result<()> {
        self.tx.commit()?;
        if let Some((ops, to)) = self.rec {
            to.lock().push(ops);
        }
        Ok(())
    }
}

impl<'s, K: KvStore> Txn for PeerTxn<'s, K> {
    fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.row_key(table, key.as_bytes());
        if self.rec.is_none() {
            return self.tx.get(&self.key, f);
        }
        let r = self.tx.get(&self.key, |v| (f(v), v.to_vec()))?;
        self.note(|| Observed::Read { table: table.raw(), key: key.clone(), value: r.as_ref().map(|x| x.1.clone()) });
        Ok(r.map(|x| x.0))
    }

    fn get_for_update_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.row_key(table, key.as_bytes());
        if self.rec.is_none() {
            return self.tx.get_for_update(&self.key, f);
        }
        let r = self.tx.get_for_update(&self.key, |v| (f(v), v.to_vec()))?;
        self.note(|| Observed::Read { table: table.raw(), key: key.clone(), value: r.as_ref().map(|x| x.1.clone()) });
        Ok(r.map(|x| x.0))
    }

    fn update(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<()> {
        if self.info(table)?.secondary.is_empty() {
            // A blind write (module docs).
            self.row_key(table, key.as_bytes());
            self.tx.put(&self.key, value)?;
            self.note(|| Observed::Write { table: table.raw(), key: key.clone(), value: value.to_vec() });
            return Ok(());
        }
        self.update_with(table, key, |_, new| new.extend_from_slice(value))
    }

    fn insert(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        self.row_key(table, key.as_bytes());
        let recording = self.rec.is_some();
        let found = self.tx.get_for_update(&self.key, |v| recording.then(|| v.to_vec()))?;
        self.note(|| Observed::Read { table: table.raw(), key: key.clone(), value: found.clone().flatten() });
        if found.is_some() {
            return Err(Error::DuplicateKey);
        }
        self.tx.put(&self.key, value)?;
        self.note(|| Observed::Write { table: table.raw(), key: key.clone(), value: value.to_vec() });
        self.secondary_entries(table, &key, value, None, true)
    }

    fn update_with(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()> {
        let indexed = !self.info(table)?.secondary.is_empty();
        let recording = self.rec.is_some();
        self.row_key(table, key.as_bytes());
        let mut new = Vec::new();
        let old = self.tx.get_for_update(&self.key, |old| {
            f(old, &mut new);
            (indexed || recording).then(|| old.to_vec())
        })?;
        self.note(|| Observed::Read { table: table.raw(), key: key.clone(), value: old.clone().flatten() });
        let Some(old) = old else { return Err(Error::KeyNotFound) };
        self.tx.put(&self.key, &new)?;
        self.note(|| Observed::Write { table: table.raw(), key: key.clone(), value: new.clone() });
        let old = old.filter(|_| indexed);
        if let Some(old) = old {
            self.secondary_entries(table, key, &old, Some(&new), false)?;
            self.secondary_entries(table, key, &new, Some(&old), true)?;
        }
        Ok(())
    }

    fn delete(&mut self, table: TableId, key: &Key) -> Result<()> {
        self.row_key(table, key.as_bytes());
        let found = self.tx.get_for_update(&self.key, |v| v.to_vec())?;
        self.note(|| Observed::Read { table: table.raw(), key: key.clone(), value: found.clone() });
        let Some(old) = found else { return Err(Error::KeyNotFound) };
        self.tx.delete(&self.key)?;
        self.note(|| Observed::Delete { table: table.raw(), key: key.clone() });
        self.secondary_entries(table, key, &old, None, false)
    }

    fn get_by(&mut self, index: IndexId, key: &Key, mut f: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        if index.index_no() == 0 {
            let t = index.table();
            return self.get_with(t, key, |v| f(key, v)).map(drop);
        }
        self.scan(index, key.clone()..=key.clone(), None, f)
    }

    fn scan(
        &mut self,
        index: IndexId,
        range: impl RangeBounds<Key>,
        filter: Option<&Filter>,
        mut f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        self.range_keys(index, &range);
        let (lo, hi) = (std::mem::take(&mut self.key), std::mem::take(&mut self.aux));
        let table = index.table();
        let excluded = match range.start_bound() {
            Bound::Excluded(k) => Some(k.clone()),
            _ => None,
        };
        let r = if index.index_no() == 0 {
            let mut err = None;
            // While recording, an unfiltered scan's rows (a filtered one
            // says nothing of the rows it left out, and is not recorded).
            let mut seen = (self.rec.is_some() && filter.is_none()).then(Vec::new);
            let mut stopped = false;
            let r = self.tx.scan(&lo, &hi, |k, v| match key_of(&k[5..]) {
                Ok(pk) => {
                    if excluded.as_ref() == Some(&pk) || filter.is_some_and(|p| !p(&pk, v)) {
                        return true;
                    }
                    let go = f(&pk, v);
                    if let Some(s) = &mut seen {
                        s.push((pk, v.to_vec()));
                    }
                    stopped = !go;
                    go
                }
                Err(e) => {
                    err = Some(e);
                    false
                }
            });
            if let Some(rows) = seen.filter(|_| r.is_ok() && err.is_none()) {
                // A scan stopped early read up to its last row.
                let hi = match rows.last() {
                    Some((k, _)) if stopped => Bound::Included(k.clone()),
                    _ => range.end_bound().cloned(),
                };
                self.note(|| Observed::Scan { table: table.raw(), lo: range.start_bound().cloned(), hi, rows });
            }
            r.and(err.map_or(Ok(()), Err))
        } else {
            // Collect the entries' primary keys, then read each row (the
            // store's scan borrows the transaction).
            let mut pks = Vec::new();
            let mut bad = false;
            self.tx.scan(&lo, &hi, |k, _| {
                match split_escaped(&k[5..]) {
                    Some((sk, pk)) => {
                        if excluded.as_ref().is_none_or(|x| x.as_bytes() != sk.as_slice()) {
                            pks.push(pk.to_vec());
                        }
                    }
                    None => bad = true,
                }
                !bad
            })?;
            if bad {
                return Err(Error::Corrupt("a secondary-index entry that does not decode".into()));
            }
            let mut r = Ok(());
            for pk in pks {
                let pk = key_of(&pk)?;
                self.row_key(table, pk.as_bytes());
                let go = self.tx.get(&self.key, |v| filter.is_none_or(|p| p(&pk, v)).then(|| f(&pk, v)))?;
                match go {
                    None => {
                        r = Err(Error::Corrupt(format!("a secondary-index entry of a missing row {pk:?}")));
                        break;
                    }
                    Some(Some(false)) => break,
                    Some(_) => {}
                }
            }
            r
        };
        self.key = lo;
        self.aux = hi;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_keys_keep_their_order_and_split_back() {
        let keys: [&[u8]; 7] = [b"", b"\0", b"\0\0", b"\0\x01", b"a", b"a\0", b"ab"];
        let enc: Vec<Vec<u8>> = keys
            .iter()
            .map(|k| {
                let mut b = Vec::new();
                put_escaped(&mut b, k);
                b.extend_from_slice(b"pk");
                b
            })
            .collect();
        for w in enc.windows(2) {
            assert!(w[0] < w[1], "{:?} < {:?}", w[0], w[1]);
        }
        for (k, e) in keys.iter().zip(&enc) {
            let (sk, rest) = split_escaped(e).unwrap();
            assert_eq!((sk.as_slice(), rest), (*k, &b"pk"[..]));
        }
        assert!(split_escaped(b"a\0\x05").is_none());
    }
}
