//! TATP's consistency checks: what the rows alone imply, read from every
//! table and each second index.

use super::*;

impl Tatp {
    /// What the rows alone imply (see the checks below), and every
    /// subscriber loaded present.
    pub(super) fn check<S: Store>(&self, db: &S) -> std::result::Result<Counts, String> {
        let n = self.check_rows(db)?;
        if n.subscribers != self.initial.subscribers {
            return Err(format!("{} subscribers, loaded {}", n.subscribers, self.initial.subscribers));
        }
        Ok(n)
    }

    fn check_rows<S: Store>(&self, db: &S) -> std::result::Result<Counts, String> {
        let p = self.cfg.subscribers;
        let mut t = snapshot(db)?;
        let es = |e: Error| e.to_string();
        let mut n = Counts::default();
        let mut bad: Option<String> = None;
        // SUBSCRIBER: ids 1..=P, sub_nbr matching.
        t.scan(db.primary(self.sub), .., None, |k, v| {
            n.subscribers += 1;
            let id = k.to_u64().unwrap_or(0);
            if !(1..=p).contains(&id) || v.len() != SUB_LEN {
                bad = Some(format!("subscriber row {id} is malformed ({} bytes)", v.len()));
            } else if v[..15] != sub_nbr(id) {
                bad = Some(format!("subscriber {id} has sub_nbr {}, not its own", String::from_utf8_lossy(&v[..15])));
            }
            bad.is_none()
        })
        .map_err(es)?;
        // ACCESS_INFO and SPECIAL_FACILITY: exactly the populated keys.
        let mut ai = vec![0u8; p as usize + 1];
        let mut sf = vec![0u8; p as usize + 1];
        for (table, masks, len, name) in
            [(self.ai, &mut ai, AI_LEN, "access_info"), (self.sf, &mut sf, SF_LEN, "special_facility")]
        {
            t.scan(db.primary(table), .., None, |k, v| {
                let b = k.as_bytes();
                let (id, ty) = (k.u32_at(0).unwrap_or(0) as u64, b.get(4).copied().unwrap_or(0));
                if b.len() != 5 || !(1..=p).contains(&id) || !(1..=4).contains(&ty) || v.len() != len {
                    bad = Some(format!("{name} row {b:?} is malformed"));
                } else if masks[id as usize] & (1 << ty) != 0 {
                    bad = Some(format!("{name} row ({id}, {ty}) appears twice"));
                } else {
                    masks[id as usize] |= 1 << ty;
                }
                bad.is_none()
            })
            .map_err(es)?;
            if let Some(b) = bad.take() {
                return Err(b);
            }
        }
        // CALL_FORWARDING: valid times, and a special facility for each.
        t.scan(db.primary(self.cf), .., None, |k, v| {
            n.call_forwarding += 1;
            let b = k.as_bytes();
            let (id, ty, st) =
                (k.u32_at(0).unwrap_or(0) as u64, b.get(4).copied().unwrap_or(0), b.get(5).copied().unwrap_or(1));
            if b.len() != 6 || !(1..=p).contains(&id) || !START_TIMES.contains(&st) || v.len() != CF_LEN {
                bad = Some(format!("call_forwarding row {b:?} is malformed"));
            } else if sf[id as usize] & (1 << ty) == 0 {
                bad = Some(format!("call_forwarding row ({id}, {ty}, {st}) has no special_facility ({id}, {ty})"));
            } else if !(st + 1..=st + 8).contains(&v[0]) {
                bad = Some(format!("call_forwarding row ({id}, {ty}, {st}) ends at {}", v[0]));
            }
            bad.is_none()
        })
        .map_err(es)?;
        if let Some(b) = bad {
            return Err(b);
        }
        for s_id in 1..=p {
            let sh = shape(s_id);
            if ai[s_id as usize] != sh.ai || sf[s_id as usize] != sh.sf {
                return Err(format!(
                    "subscriber {s_id} has access_info types {:#06b} and special_facility types {:#06b}, \
                     populated {:#06b} and {:#06b} (never changed by the transactions)",
                    ai[s_id as usize] >> 1,
                    sf[s_id as usize] >> 1,
                    sh.ai >> 1,
                    sh.sf >> 1
                ));
            }
            n.access_info += sh.ai.count_ones() as u64;
            n.special_facility += sh.sf.count_ones() as u64;
            // The sub_nbr index leads to this subscriber, and only to it.
            let (mut hits, mut other) = (0, None);
            t.get_by(self.sub_nbr_ix, &sub_nbr_key(s_id), |pk, _| {
                hits += 1;
                if pk.to_u64() != Some(s_id) {
                    other = pk.to_u64();
                }
                true
            })
            .map_err(es)?;
            if hits != 1 || other.is_some() {
                return Err(format!(
                    "sub_nbr {} finds {hits} subscribers (another: {other:?}), expected subscriber {s_id} alone",
                    String::from_utf8_lossy(&sub_nbr(s_id))
                ));
            }
        }
        t.commit().map_err(es)?;
        Ok(n)
    }
}
