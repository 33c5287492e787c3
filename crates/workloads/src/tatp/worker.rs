//! TATP's transactions: one thread's generator of the seven types' inputs
//! ([`TatpInput`]) and their bodies ([`TatpWorker`]).

use super::*;

/// The inputs of one TATP transaction (fields a type does not use are ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TatpInput {
    /// The type (index into [`TYPES`]).
    pub ty: usize,
    /// The subscriber (found by `sub_nbr` in the types that use it).
    pub s_id: u64,
    /// `ai_type` (get-access-data), 1..=4.
    pub ai_type: u8,
    /// `sf_type`, 1..=4.
    pub sf_type: u8,
    /// `start_time`, one of [`START_TIMES`].
    pub start_time: u8,
    /// `end_time`: 1..=24 (get-new-destination) or `start_time + 1..=8` (insert).
    pub end_time: u8,
    /// The new `bit_1` (update-subscriber-data).
    pub bit: bool,
    /// The new `data_a` (update-subscriber-data).
    pub data_a: u8,
    /// The new `vlr_location` (update-location).
    pub vlr: u32,
    /// The new `numberx` (insert-call-forwarding).
    pub numberx: [u8; 15],
}

impl Default for TatpInput {
    fn default() -> TatpInput {
        TatpInput {
            ty: GET_SUBSCRIBER_DATA,
            s_id: 1,
            ai_type: 1,
            sf_type: 1,
            start_time: 0,
            end_time: 1,
            bit: false,
            data_a: 0,
            vlr: 1,
            numberx: [b'0'; 15],
        }
    }
}

/// One thread's generator for TATP.
pub struct TatpWorker<'w> {
    pub(super) w: &'w Tatp,
    pub(super) rng: SmallRng,
    pub(super) input: TatpInput,
    pub(super) sub_key: Key,
    pub(super) nbr_key: Key,
    pub(super) sid_key: Key,
    pub(super) ai_key: Key,
    pub(super) sf_key: Key,
    pub(super) cf_key: Key,
    /// The last execution succeeded (not an expected failure).
    pub(super) ok: bool,
    /// Rows the last get-new-destination found.
    pub(super) found: u32,
    /// The last row read by get-subscriber-data / get-access-data (prefix).
    pub(super) last: [u8; SUB_LEN],
    /// Folds every value read, so reads cannot be optimized away.
    pub(super) checksum: u64,
    /// Call-forwarding rows the last successful execution added (+1) or removed (-1).
    pub(super) cf_pending: i64,
    pub(super) committed: [u64; NTYPES],
    pub(super) succeeded: [u64; NTYPES],
    pub(super) cf_delta: i64,
}

#[cold]
fn missing_subscriber(s_id: u64, how: &str) -> TxnError {
    TxnError::Invariant(format!(
        "tatp: subscriber {s_id} not found {how}, though subscribers are never deleted (an engine bug)"
    ))
}

#[cold]
fn malformed(what: &str, s_id: u64) -> TxnError {
    TxnError::Invariant(format!("tatp: a {what} row of subscriber {s_id} has the wrong length"))
}

#[inline]
fn fold(h: u64, b: &[u8]) -> u64 {
    b.iter().fold(h, |h, &x| h.rotate_left(5) ^ x as u64)
}

impl TatpWorker<'_> {
    /// The current transaction's inputs.
    pub fn input(&self) -> TatpInput {
        self.input
    }

    /// Replaces the current transaction's inputs (tests drive exact cases with it).
    pub fn set_input(&mut self, i: TatpInput) {
        self.input = i;
        self.sub_key = sub_key(i.s_id);
        self.nbr_key = sub_nbr_key(i.s_id);
        self.sid_key = s_id_key(i.s_id);
        self.ai_key = ai_key(i.s_id, i.ai_type);
        self.sf_key = sf_key(i.s_id, i.sf_type);
        self.cf_key = cf_key(i.s_id, i.sf_type, i.start_time);
    }

    /// Whether the last execution succeeded (false: an expected failure).
    pub fn succeeded(&self) -> bool {
        self.ok
    }

    /// Call forwardings the last get-new-destination returned.
    pub fn found(&self) -> u32 {
        self.found
    }

    /// The row the last get-subscriber-data (all [`SUB_LEN`] bytes) or
    /// get-access-data (the first [`AI_LEN`] bytes) read.
    pub fn last_read(&self) -> &[u8; SUB_LEN] {
        &self.last
    }

    /// A fold of every value read (meaningless; keeps reads observable).
    pub fn checksum(&self) -> u64 {
        self.checksum
    }

    #[inline]
    fn draw(&mut self, n: u64) -> u64 {
        below(&mut self.rng, n)
    }

    /// Finds the subscriber by `sub_nbr`; its primary key.
    #[inline]
    fn by_sub_nbr<T: Txn>(&self, t: &mut T) -> Result<Key, TxnError> {
        let (mut pk, mut hits) = (Key::EMPTY, 0u32);
        t.get_by(self.w.sub_nbr_ix, &self.nbr_key, |k, _| {
            pk = k.clone();
            hits += 1;
            true
        })?;
        let s_id = self.input.s_id;
        if hits != 1 || pk.to_u64() != Some(s_id) {
            return Err(missing_subscriber(s_id, &format!("once by its sub_nbr ({hits} rows)")));
        }
        Ok(pk)
    }
}

impl Worker for TatpWorker<'_> {
    #[inline]
    fn next_txn(&mut self) {
        let ty = self.w.cfg.mix.draw(self.rng.next_u64());
        let s_id = self.w.ids.sample(&mut self.rng);
        let mut i = TatpInput { ty, s_id, ..self.input };
        match ty {
            GET_NEW_DESTINATION => {
                i.sf_type = 1 + self.draw(4) as u8;
                i.start_time = START_TIMES[self.draw(3) as usize];
                i.end_time = 1 + self.draw(24) as u8;
            }
            GET_ACCESS_DATA => i.ai_type = 1 + self.draw(4) as u8,
            UPDATE_SUBSCRIBER_DATA => {
                i.bit = self.draw(2) == 1;
                i.sf_type = 1 + self.draw(4) as u8;
                i.data_a = self.draw(256) as u8;
            }
            UPDATE_LOCATION => i.vlr = 1 + self.draw(u32::MAX as u64) as u32,
            INSERT_CALL_FORWARDING => {
                i.sf_type = 1 + self.draw(4) as u8;
                i.start_time = START_TIMES[self.draw(3) as usize];
                i.end_time = i.start_time + 1 + self.draw(8) as u8;
                digits(&mut self.rng, &mut i.numberx);
            }
            DELETE_CALL_FORWARDING => {
                i.sf_type = 1 + self.draw(4) as u8;
                i.start_time = START_TIMES[self.draw(3) as usize];
            }
            _ => {}
        }
        self.set_input(i);
    }

    #[inline]
    fn execute<T: Txn>(&mut self, t: &mut T) -> Result<(), TxnError> {
        self.ok = false;
        self.cf_pending = 0;
        let w = self.w;
        let i = self.input;
        let mut h = self.checksum;
        match i.ty {
            GET_SUBSCRIBER_DATA => {
                let last = &mut self.last;
                let len = t.get_with(w.sub, &self.sub_key, |v| {
                    let n = v.len().min(SUB_LEN);
                    last[..n].copy_from_slice(&v[..n]);
                    h = fold(h, v);
                    v.len()
                })?;
                match len {
                    Some(SUB_LEN) => self.ok = true,
                    Some(_) => return Err(malformed("subscriber", i.s_id)),
                    None => return Err(missing_subscriber(i.s_id, "by its s_id")),
                }
            }
            GET_NEW_DESTINATION => {
                self.found = 0;
                let active = t.get_with(w.sf, &self.sf_key, |v| v.first().copied())?;
                if active == Some(Some(1)) {
                    let mut found = 0;
                    t.get_by(w.cf_sf_ix, &self.sf_key, |k, v| {
                        let st = k.as_bytes().get(5).copied().unwrap_or(u8::MAX);
                        if st <= i.start_time && v.first().is_some_and(|&end| i.end_time < end) {
                            found += 1;
                            h = fold(h, &v[1..]);
                        }
                        true
                    })?;
                    self.found = found;
                    self.ok = found > 0;
                }
            }
            GET_ACCESS_DATA => {
                let last = &mut self.last;
                let len = t.get_with(w.ai, &self.ai_key, |v| {
                    let n = v.len().min(AI_LEN);
                    last[..n].copy_from_slice(&v[..n]);
                    h = fold(h, v);
                    v.len()
                })?;
                match len {
                    Some(AI_LEN) => self.ok = true,
                    Some(_) => return Err(malformed("access_info", i.s_id)),
                    None => {}
                }
            }
            UPDATE_SUBSCRIBER_DATA => {
                // The special facility first: if it is missing, nothing is written.
                let mut len = SF_LEN;
                let r = t.update_with(w.sf, &self.sf_key, |old, new| {
                    new.extend_from_slice(old);
                    len = old.len();
                    if len == SF_LEN {
                        new[SF_DATA_A] = i.data_a;
                    }
                });
                match r {
                    Err(Error::KeyNotFound) => {}
                    r => {
                        r?;
                        if len != SF_LEN {
                            return Err(malformed("special_facility", i.s_id));
                        }
                        let mut len = SUB_LEN;
                        let r = t.update_with(w.sub, &self.sub_key, |old, new| {
                            new.extend_from_slice(old);
                            len = old.len();
                            if len == SUB_LEN {
                                new[SUB_BITS] = (new[SUB_BITS] & !1) | i.bit as u8;
                            }
                        });
                        match r {
                            Err(Error::KeyNotFound) => return Err(missing_subscriber(i.s_id, "by its s_id")),
                            r => r?,
                        }
                        if len != SUB_LEN {
                            return Err(malformed("subscriber", i.s_id));
                        }
                        self.ok = true;
                    }
                }
            }
            UPDATE_LOCATION => {
                let pk = self.by_sub_nbr(t)?;
                let mut len = SUB_LEN;
                let r = t.update_with(w.sub, &pk, |old, new| {
                    new.extend_from_slice(old);
                    len = old.len();
                    if len == SUB_LEN {
                        new[SUB_VLR..SUB_VLR + 4].copy_from_slice(&i.vlr.to_le_bytes());
                    }
                });
                match r {
                    Err(Error::KeyNotFound) => return Err(missing_subscriber(i.s_id, "by its s_id")),
                    r => r?,
                }
                if len != SUB_LEN {
                    return Err(malformed("subscriber", i.s_id));
                }
                self.ok = true;
            }
            INSERT_CALL_FORWARDING => {
                self.by_sub_nbr(t)?;
                let mut types = 0u8;
                t.get_by(w.sf_sid_ix, &self.sid_key, |k, _| {
                    types |= 1 << (k.as_bytes().get(4).copied().unwrap_or(0) & 7);
                    true
                })?;
                if types & (1 << i.sf_type) != 0 {
                    let mut v = [0u8; CF_LEN];
                    v[0] = i.end_time;
                    v[1..].copy_from_slice(&i.numberx);
                    match t.insert(w.cf, self.cf_key.clone(), &v) {
                        Err(Error::DuplicateKey) => {}
                        r => {
                            r?;
                            self.ok = true;
                            self.cf_pending = 1;
                        }
                    }
                }
            }
            DELETE_CALL_FORWARDING => {
                self.by_sub_nbr(t)?;
                match t.delete(w.cf, &self.cf_key) {
                    Err(Error::KeyNotFound) => {}
                    r => {
                        r?;
                        self.ok = true;
                        self.cf_pending = -1;
                    }
                }
            }
            ty => return Err(TxnError::Invariant(format!("tatp: no transaction type {ty}"))),
        }
        self.checksum = h;
        Ok(())
    }

    #[inline]
    fn txn_type(&self) -> usize {
        self.input.ty
    }

    #[inline]
    fn options(&self, run: TxnOptions<'static>) -> TxnOptions<'static> {
        TxnOptions { read_only: self.input.ty <= GET_ACCESS_DATA, ..run }
    }

    #[inline]
    fn committed(&mut self) {
        let ty = self.input.ty;
        self.committed[ty] += 1;
        self.succeeded[ty] += self.ok as u64;
        self.cf_delta += self.cf_pending;
    }

    fn finish(&mut self) {
        let w = self.w;
        // Relaxed: read after every worker was joined.
        for ty in 0..NTYPES {
            w.committed[ty].fetch_add(std::mem::take(&mut self.committed[ty]), Ordering::Relaxed);
            w.succeeded[ty].fetch_add(std::mem::take(&mut self.succeeded[ty]), Ordering::Relaxed);
        }
        w.cf_delta.fetch_add(std::mem::take(&mut self.cf_delta), Ordering::Relaxed);
    }

    /// Rows reached through a second index are declared by their primary
    /// keys (the workload knows them: `sub_nbr` is a function of `s_id` and is
    /// never updated; a lookup of the call forwardings of a special facility
    /// reads all of its start times). Read-modify-written rows appear in both sets.
    fn declare(&self, access: &mut AccessSet) -> bool {
        access.reads.clear();
        access.writes.clear();
        let w = self.w;
        let i = self.input;
        match i.ty {
            GET_SUBSCRIBER_DATA => access.reads.push((w.sub, self.sub_key.clone())),
            GET_NEW_DESTINATION => {
                access.reads.push((w.sf, self.sf_key.clone()));
                // The lookup by special facility reads every call forwarding
                // of it, whatever its start time; the query filters after.
                for st in START_TIMES {
                    access.reads.push((w.cf, cf_key(i.s_id, i.sf_type, st)));
                }
            }
            GET_ACCESS_DATA => access.reads.push((w.ai, self.ai_key.clone())),
            UPDATE_SUBSCRIBER_DATA => {
                access.reads.extend([(w.sf, self.sf_key.clone()), (w.sub, self.sub_key.clone())]);
                access.writes.extend([(w.sf, self.sf_key.clone()), (w.sub, self.sub_key.clone())]);
            }
            UPDATE_LOCATION => {
                access.reads.push((w.sub, self.sub_key.clone()));
                access.writes.push((w.sub, self.sub_key.clone()));
            }
            INSERT_CALL_FORWARDING => {
                access.reads.push((w.sub, self.sub_key.clone()));
                access.reads.extend((1..=4).map(|ty| (w.sf, sf_key(i.s_id, ty))));
                access.writes.push((w.cf, self.cf_key.clone()));
            }
            DELETE_CALL_FORWARDING => {
                access.reads.push((w.sub, self.sub_key.clone()));
                access.writes.push((w.cf, self.cf_key.clone()));
            }
            _ => {}
        }
        true
    }
}
