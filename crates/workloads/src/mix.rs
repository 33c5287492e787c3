//! Transaction mixes: how often each transaction type of a workload runs.
//!
//! A mix is written `name:percent,name:percent,...` (`--mix
//! new-order:50,payment:50`). Types left out run 0% of the time; the
//! percentages must add up to 100. Drawing a type costs one comparison per
//! type against cumulative thresholds on a 64-bit random number: no division,
//! no allocation.

use std::fmt;

/// A mix over the transaction types `names` (indexes match the workload's
/// [`crate::Workload::txn_types`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Mix {
    names: &'static [&'static str],
    pct: Vec<f64>,
    /// `cum[i]`: type `i` is drawn when the random number is below it (and
    /// not below `cum[i - 1]`).
    cum: Vec<u64>,
    /// The last type with a share: it takes every number at or above the
    /// threshold before it (rounding remainders included).
    last: usize,
}

impl Mix {
    /// A mix with the given percentages (one per name; they must add up to 100).
    pub fn new(names: &'static [&'static str], pct: &[f64]) -> Result<Mix, String> {
        if names.is_empty() || pct.len() != names.len() {
            return Err(format!("a mix needs one percentage per type ({})", names.join(", ")));
        }
        for (n, p) in names.iter().zip(pct) {
            if !p.is_finite() || *p < 0.0 || *p > 100.0 {
                return Err(format!("mix: {n}:{p} is not a percentage between 0 and 100"));
            }
        }
        let sum: f64 = pct.iter().sum();
        if (sum - 100.0).abs() > 1e-6 {
            return Err(format!("mix percentages add up to {sum}, not 100"));
        }
        let mut cum = Vec::with_capacity(pct.len());
        let mut acc = 0.0;
        for p in pct {
            acc += p;
            cum.push((acc.min(100.0) / 100.0 * u64::MAX as f64) as u64);
        }
        let last = pct.iter().rposition(|p| *p > 0.0).unwrap_or(0);
        Ok(Mix { names, pct: pct.to_vec(), cum, last })
    }

    /// Parses `name:percent,...`; names must be among `names`, each at most once.
    pub fn parse(names: &'static [&'static str], s: &str) -> Result<Mix, String> {
        let mut pct = vec![0.0; names.len()];
        let mut seen = vec![false; names.len()];
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (n, p) = part
                .split_once(':')
                .ok_or_else(|| format!("mix: '{part}' is not name:percent (types: {})", names.join(", ")))?;
            let n = n.trim();
            let i = names
                .iter()
                .position(|k| *k == n)
                .ok_or_else(|| format!("mix: unknown transaction type '{n}' (types: {})", names.join(", ")))?;
            if seen[i] {
                return Err(format!("mix: '{n}' is given twice"));
            }
            seen[i] = true;
            pct[i] = p.trim().parse::<f64>().map_err(|_| format!("mix: '{}' is not a percentage", p.trim()))?;
        }
        if !seen.iter().any(|s| *s) {
            return Err(format!("mix: empty (write name:percent,... with types {})", names.join(", ")));
        }
        Mix::new(names, &pct)
    }

    /// The type drawn for the uniformly random number `r`.
    #[inline]
    pub fn draw(&self, r: u64) -> usize {
        let mut i = 0;
        while i < self.last && r >= self.cum[i] {
            i += 1;
        }
        i
    }

    /// The percentage of type `i`.
    pub fn pct(&self, i: usize) -> f64 {
        self.pct[i]
    }

    /// The type names.
    pub fn names(&self) -> &'static [&'static str] {
        self.names
    }

    /// True if only type `i` runs.
    pub fn only(&self, i: usize) -> bool {
        self.pct[i] >= 100.0
    }
}

impl fmt::Display for Mix {
    /// `a:50,b:50` (types with a share only).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (n, p) in self.names.iter().zip(&self.pct) {
            if *p > 0.0 {
                if !first {
                    f.write_str(",")?;
                }
                first = false;
                write!(f, "{n}:{p}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{RngCore, SeedableRng};

    const NAMES: &[&str] = &["a", "b", "c"];

    #[test]
    fn parses_and_prints() {
        let m = Mix::parse(NAMES, "a:50, c:50").unwrap();
        assert_eq!(m.to_string(), "a:50,c:50");
        assert_eq!(m.pct(1), 0.0);
        assert!(Mix::parse(NAMES, "b:100").unwrap().only(1));
    }

    #[test]
    fn bad_mixes_are_refused() {
        assert!(Mix::parse(NAMES, "a:50").unwrap_err().contains("not 100"));
        assert!(Mix::parse(NAMES, "d:100").unwrap_err().contains("unknown transaction type 'd'"));
        assert!(Mix::parse(NAMES, "a:50,a:50").unwrap_err().contains("twice"));
        assert!(Mix::parse(NAMES, "a50").unwrap_err().contains("name:percent"));
        assert!(Mix::parse(NAMES, "a:x,b:100").unwrap_err().contains("not a percentage"));
        assert!(Mix::parse(NAMES, "a:-10,b:110").is_err());
        assert!(Mix::parse(NAMES, "").unwrap_err().contains("empty"));
    }

    #[test]
    fn draws_match_the_percentages() {
        let m = Mix::parse(NAMES, "a:10,b:0,c:90").unwrap();
        let mut rng = SmallRng::seed_from_u64(7);
        let mut n = [0u64; 3];
        for _ in 0..100_000 {
            n[m.draw(rng.next_u64())] += 1;
        }
        assert_eq!(n[1], 0);
        assert!((9_000..11_000).contains(&n[0]), "{n:?}");
        assert_eq!(m.draw(u64::MAX), 2);
        assert_eq!(m.draw(0), 0);
        // A type with 0% at the end is never drawn, even for the largest number.
        let m = Mix::parse(NAMES, "a:40,b:60").unwrap();
        assert_eq!(m.draw(u64::MAX), 1);
    }
}
