//! YCSB's transactions: one thread's generator of keys (Zipfian, or
//! uniform for scans) and the bodies of the five types ([`YcsbWorker`]).

use super::*;

/// The error for a record that should exist but was not found (an engine bug).
#[cold]
fn missing(k: u64, op: &str) -> TxnError {
    TxnError::Invariant(format!(
        "record {k} of table '{TABLE}' is missing: {op} found no visible version, though records are never deleted (an engine bug)"
    ))
}

/// The error for a value whose layout is damaged.
#[cold]
fn damaged(k: u64, len: usize) -> TxnError {
    TxnError::Invariant(format!(
        "record {k} of table '{TABLE}' has a damaged value (expected {len} bytes with its key)"
    ))
}

/// One thread's generator for YCSB.
pub struct YcsbWorker<'w> {
    pub(super) w: &'w Ycsb,
    pub(super) rng: SmallRng,
    /// The current transaction's type.
    pub(super) ty: usize,
    /// `10rmw`/`2rmw-8r`: the records (for `2rmw-8r` the first two are modified).
    pub(super) keys: [u64; OPS],
    /// The same as index keys.
    pub(super) ikeys: [Key; OPS],
    /// `10op`: bit `i` set if operation `i` is a blind write.
    pub(super) writes: u16,
    /// `10op`: the value a blind write writes.
    pub(super) blind: Vec<u8>,
    /// `scan`: the records to read (empty, unallocated, otherwise).
    pub(super) scan_keys: Vec<u64>,
    /// Read-modify-writes of this worker's committed transactions.
    pub(super) rmws: u64,
    /// Folds every value read, so reads cannot be optimized away.
    pub(super) checksum: u64,
    /// `--rmw read-update` and `for-update`: the value read, then written
    /// (taken and put back by `read_then_update`, which takes `&self`).
    pub(super) buf: std::cell::Cell<Vec<u8>>,
}

impl YcsbWorker<'_> {
    /// The records of the current `10rmw`, `2rmw-8r` or `10op` transaction
    /// (distinct unless `allow_repeats`; `scan-rmw` modifies the first).
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// The records of the current `scan`.
    pub fn scan_keys(&self) -> &[u64] {
        &self.scan_keys
    }

    /// Read-modify-writes of this worker's committed transactions so far.
    pub fn committed_rmws(&self) -> u64 {
        self.rmws
    }

    /// A fold of every counter read (meaningless; keeps reads observable).
    pub fn checksum(&self) -> u64 {
        self.checksum
    }

    /// Read-modify-writes of the current transaction.
    #[inline]
    fn rmws_now(&self) -> u64 {
        match self.ty {
            RMW10 => OPS as u64,
            RMW2_R8 => RMWS_2R8 as u64,
            SCAN_RMW => 1,
            _ => 0,
        }
    }

    /// Draws the ten Zipfian records of a short transaction: distinct, or
    /// independent with `allow_repeats`.
    #[inline]
    fn draw_short(&mut self) {
        let n = self.w.cfg.rows;
        let gen = &self.w.keys;
        for i in 0..OPS {
            let mut k = gen.key(&mut self.rng);
            let mut redraws = 0;
            while !self.w.cfg.allow_repeats && self.keys[..i].contains(&k) {
                if redraws < MAX_REDRAWS {
                    k = gen.key(&mut self.rng);
                    redraws += 1;
                } else {
                    // Too steep to find a new key by drawing: take the next free one.
                    k = if k + 1 == n { 0 } else { k + 1 };
                }
            }
            self.keys[i] = k;
            self.ikeys[i] = Key::from_u64(k);
        }
    }

    /// Draws the distinct uniform records of a scan (Floyd's algorithm: one
    /// draw per record, every subset of the size equally likely).
    fn draw_scan(&mut self) {
        let n = self.w.cfg.rows;
        let m = self.w.cfg.scan_records;
        self.scan_keys.clear();
        self.scan_keys.reserve_exact(m as usize);
        SEEN.with_borrow_mut(|seen| {
            if seen.len() < n.div_ceil(64) as usize {
                seen.resize(n.div_ceil(64) as usize, 0);
            }
            for j in n - m..n {
                // Uniform in 0..=j.
                let t = ((self.rng.next_u64() as u128 * (j as u128 + 1)) >> 64) as u64;
                let pick = if seen[(t / 64) as usize] & (1 << (t % 64)) != 0 { j } else { t };
                seen[(pick / 64) as usize] |= 1 << (pick % 64);
                self.scan_keys.push(pick);
            }
            for &k in &self.scan_keys {
                seen[(k / 64) as usize] = 0;
            }
        });
    }

    /// Read-modify-write of record `k`: increments its counter.
    #[inline]
    fn rmw<T: Txn>(&self, t: &mut T, k: u64, ik: &Key) -> Result<(), TxnError> {
        let len = self.w.cfg.value_bytes;
        if self.w.cfg.rmw != Rmw::Modify {
            return self.read_then_update(t, k, ik);
        }
        let mut ok = true;
        let r = t.modify(self.w.table, ik, |v| {
            if v.len() == len && v[0..8] == k.to_le_bytes() {
                let c = u64::from_le_bytes(v[8..16].try_into().unwrap());
                v[8..16].copy_from_slice(&c.wrapping_add(1).to_le_bytes());
            } else {
                ok = false;
            }
        });
        match r {
            Err(Error::KeyNotFound) => Err(missing(k, "a read-modify-write")),
            Err(e) => Err(e.into()),
            Ok(()) if !ok => Err(damaged(k, len)),
            Ok(()) => Ok(()),
        }
    }

    /// [`Self::rmw`] as an application writes it (`--rmw read-update` or
    /// `for-update`): the record is read (for update), its counter
    /// incremented in the transaction's buffer and the value written back.
    fn read_then_update<T: Txn>(&self, t: &mut T, k: u64, ik: &Key) -> Result<(), TxnError> {
        let len = self.w.cfg.value_bytes;
        let mut buf = self.buf.take();
        let copy = |v: &[u8]| {
            buf.clear();
            buf.extend_from_slice(v);
        };
        let r = if self.w.cfg.rmw == Rmw::ForUpdate {
            t.get_for_update_with(self.w.table, ik, copy)
        } else {
            t.get_with(self.w.table, ik, copy)
        };
        let r = match r {
            Ok(None) => Err(missing(k, "a read-modify-write")),
            Err(e) => Err(e.into()),
            Ok(Some(())) if buf.len() != len || buf[0..8] != k.to_le_bytes() => Err(damaged(k, len)),
            Ok(Some(())) => {
                let c = u64::from_le_bytes(buf[8..16].try_into().unwrap());
                buf[8..16].copy_from_slice(&c.wrapping_add(1).to_le_bytes());
                t.update(self.w.table, ik, &buf).map_err(TxnError::from)
            }
        };
        self.buf.set(buf);
        r
    }

    /// Reads record `k`, returning its counter.
    #[inline]
    fn read<T: Txn>(&self, t: &mut T, k: u64, ik: &Key) -> Result<u64, TxnError> {
        let len = self.w.cfg.value_bytes;
        let v = t.get_with(self.w.table, ik, |v| {
            (v.len() == len && v[0..8] == k.to_le_bytes()).then(|| u64::from_le_bytes(v[8..16].try_into().unwrap()))
        })?;
        v.ok_or_else(|| missing(k, "a read"))?.ok_or_else(|| damaged(k, len))
    }
}

impl Worker for YcsbWorker<'_> {
    #[inline]
    fn next_txn(&mut self) {
        let mix = &self.w.cfg.mix;
        self.ty = if mix.only(RMW10) { RMW10 } else { mix.draw(self.rng.next_u64()) };
        if self.ty == SCAN || self.ty == SCAN_RMW {
            self.draw_scan();
        } else if self.scan_keys.capacity() > 0 {
            self.scan_keys = Vec::new();
        }
        if self.ty != SCAN {
            // scan-rmw modifies the first of these.
            self.draw_short();
        }
        if self.ty == OP10 {
            let pct = self.w.cfg.write_pct as u64;
            self.writes = (0..OPS).filter(|_| crate::below(&mut self.rng, 100) < pct).fold(0, |m, i| m | 1 << i);
        }
    }

    #[inline]
    fn execute<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        let table = self.w.table;
        let mut sum = self.checksum;
        match self.ty {
            RMW10 => {
                if self.w.cfg.prefetch {
                    t.prefetch(table, &self.ikeys);
                }
                for (&k, ik) in self.keys.iter().zip(&self.ikeys) {
                    self.rmw(t, k, ik)?;
                }
            }
            RMW2_R8 => {
                if self.w.cfg.prefetch {
                    t.prefetch(table, &self.ikeys);
                }
                for (&k, ik) in self.keys[RMWS_2R8..].iter().zip(&self.ikeys[RMWS_2R8..]) {
                    sum = sum.wrapping_add(self.read(t, k, ik)?);
                }
                for (&k, ik) in self.keys[..RMWS_2R8].iter().zip(&self.ikeys[..RMWS_2R8]) {
                    self.rmw(t, k, ik)?;
                }
            }
            OP10 => {
                if self.w.cfg.prefetch {
                    t.prefetch(table, &self.ikeys);
                }
                let len = self.w.cfg.value_bytes;
                for i in 0..OPS {
                    let (k, ik) = (self.keys[i], &self.ikeys[i]);
                    if self.writes & (1 << i) != 0 {
                        initial_value(k, len, &mut self.blind);
                        match t.update(table, ik, &self.blind) {
                            Err(Error::KeyNotFound) => return Err(missing(k, "a blind write")),
                            r => r?,
                        }
                    } else {
                        match t.get_with(table, ik, |v| intact(v, k, len))? {
                            None => return Err(missing(k, "a read")),
                            Some(false) => return Err(damaged(k, len)),
                            Some(true) => sum = sum.wrapping_add(1),
                        }
                    }
                }
            }
            _ => {
                let mut chunk = [Key::EMPTY; SCAN_CHUNK];
                for keys in self.scan_keys.chunks(SCAN_CHUNK) {
                    for (ik, &k) in chunk.iter_mut().zip(keys) {
                        *ik = Key::from_u64(k);
                    }
                    let chunk = &chunk[..keys.len()];
                    if self.w.cfg.prefetch {
                        t.prefetch(table, chunk);
                    }
                    for (&k, ik) in keys.iter().zip(chunk) {
                        sum = sum.wrapping_add(self.read(t, k, ik)?);
                    }
                }
                if self.ty == SCAN_RMW {
                    self.rmw(t, self.keys[0], &self.ikeys[0])?;
                }
            }
        }
        self.checksum = sum;
        Ok(())
    }

    #[inline]
    fn txn_type(&self) -> usize {
        self.ty
    }

    #[inline]
    fn options(&self, run: TxnOptions<'static>) -> TxnOptions<'static> {
        if self.ty == SCAN {
            TxnOptions { read_only: true, ..run }
        } else {
            run
        }
    }

    #[inline]
    fn committed(&mut self) {
        self.rmws += self.rmws_now();
    }

    fn finish(&mut self) {
        // Relaxed: the harness joins the workers before the check reads it.
        self.w.rmws.fetch_add(self.rmws, Ordering::Relaxed);
        self.rmws = 0;
    }

    /// A read-modify-write both reads and writes its record.
    fn declare(&self, access: &mut AccessSet) -> bool {
        access.reads.clear();
        access.writes.clear();
        let t = self.w.table;
        match self.ty {
            RMW10 => {
                access.reads.extend(self.ikeys.iter().map(|k| (t, k.clone())));
                access.writes.extend(self.ikeys.iter().map(|k| (t, k.clone())));
            }
            RMW2_R8 => {
                access.reads.extend(self.ikeys.iter().map(|k| (t, k.clone())));
                access.writes.extend(self.ikeys[..RMWS_2R8].iter().map(|k| (t, k.clone())));
            }
            OP10 => {
                for (i, k) in self.ikeys.iter().enumerate() {
                    if self.writes & (1 << i) != 0 {
                        access.writes.push((t, k.clone()));
                    } else {
                        access.reads.push((t, k.clone()));
                    }
                }
            }
            _ => {
                access.reads.extend(self.scan_keys.iter().map(|&k| (t, Key::from_u64(k))));
                if self.ty == SCAN_RMW {
                    access.reads.push((t, self.ikeys[0].clone()));
                    access.writes.push((t, self.ikeys[0].clone()));
                }
            }
        }
        true
    }
}
