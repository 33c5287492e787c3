//! The parsers of numeric flag values (threads, counts, sizes, seconds),
//! shared by bench's flags and each workload's, and the memory checks of
//! the data sets they ask for. Every error is one line.

use super::{sys, units};

/// Most worker threads accepted (transaction-table slots are 1024 by default).
pub(crate) const MAX_THREADS: usize = 1024;
/// Conservative estimate of resident bytes per Hekaton row (version record,
/// allocator overhead, hash bucket), used to refuse loads that cannot fit.
pub(crate) const EST_BYTES_PER_ROW: u64 = 128;

pub(crate) fn parse_threads(s: &str) -> Result<usize, String> {
    let n: i128 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of threads"))?;
    if !(1..=MAX_THREADS as i128).contains(&n) {
        return Err(format!("out of range: must be between 1 and {MAX_THREADS}"));
    }
    Ok(n as usize)
}

/// Refuses a negative number given to a flag that counts (`what`: what it
/// counts, e.g. "a count"), as out of range rather than as text that is not
/// a number.
pub(crate) fn refuse_negative(s: &str, what: &str) -> Result<(), String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v < 0.0 => Err(format!("out of range: {what} cannot be negative")),
        _ => Ok(()),
    }
}

/// A parser of a whole number from `lo` to `hi` that calls a negative
/// number out of range (clap's own unsigned parsers call it "an invalid
/// digit").
pub(crate) fn whole(lo: u64, hi: u64) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let n: i128 = s.trim().parse().map_err(|_| format!("'{s}' is not a whole number"))?;
        if n >= lo as i128 && n <= hi as i128 {
            Ok(n as u64)
        } else if hi == u64::MAX {
            Err(format!("out of range: must be {lo} or more"))
        } else {
            Err(format!("out of range: must be from {lo} to {hi}"))
        }
    }
}

/// A count (see [`parse_count`]) that fits a `usize`.
pub(crate) fn parse_usize(s: &str) -> Result<usize, String> {
    usize::try_from(parse_count(s)?).map_err(|_| format!("'{s}' is too large"))
}

/// Parses `--warmup`: seconds, 0 or more.
pub(crate) fn parse_warmup(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=86_400.0).contains(&v) => Ok(v),
        Ok(v) if !v.is_nan() => Err("out of range: must be from 0 to 86400 seconds".into()),
        _ => Err(format!("'{s}' is not a number of seconds from 0 to 86400")),
    }
}

pub(crate) fn parse_seconds(s: &str) -> Result<f64, String> {
    let d: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !d.is_finite() || d <= 0.0 || d > 86_400.0 {
        return Err("out of range: must be more than 0 and at most 86400 seconds".into());
    }
    Ok(d)
}

/// A count such as `10000000`, `10_000_000`, `10,000,000`, `10M` or `500k`.
pub(crate) fn parse_count(s: &str) -> Result<u64, String> {
    refuse_negative(s, "a count")?;
    let t: String = s.trim().chars().filter(|c| *c != '_' && *c != ',').collect();
    let (num, mul) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1_000),
        Some('m' | 'M') => (&t[..t.len() - 1], 1_000_000),
        Some('g' | 'G' | 'b' | 'B') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (&t[..], 1),
    };
    let n: u64 = num.parse().map_err(|_| format!("'{s}' is not a count (try 1000000 or 1M)"))?;
    n.checked_mul(mul).ok_or_else(|| format!("'{s}' is too large"))
}

/// A memory size such as `1073741824`, `512M`, `2G` or `64K` (binary units).
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    refuse_negative(s, "a size")?;
    let t = s.trim().trim_end_matches(['b', 'B']).trim_end_matches(['i', 'I']);
    let (num, shift) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n: u64 = num.trim().parse().map_err(|_| format!("'{s}' is not a size (try 512M or 2G)"))?;
    n.checked_mul(1 << shift).ok_or_else(|| format!("'{s}' is too large"))
}

/// Refuses a table that clearly cannot fit in memory (instead of dying in the allocator).
pub(crate) fn check_memory(rows: u64) -> Result<(), String> {
    check_bytes(rows.saturating_mul(EST_BYTES_PER_ROW), &format!("--rows {}", units::int(rows)))
}

/// Refuses a data set of about `need` bytes when less memory is available;
/// `what` names the flag or workload that asked for it.
pub(crate) fn check_bytes(need: u64, what: &str) -> Result<(), String> {
    match sys::mem_available_bytes() {
        Some(avail) if need > avail => Err(format!(
            "{what} needs about {} of memory, but only {} is available",
            units::bytes(need),
            units::bytes(avail)
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse() {
        assert_eq!(parse_count("10000000"), Ok(10_000_000));
        assert_eq!(parse_count("10_000_000"), Ok(10_000_000));
        assert_eq!(parse_count("10M"), Ok(10_000_000));
        assert_eq!(parse_count("500k"), Ok(500_000));
        assert!(parse_count("ten").is_err());
        assert!(parse_count("99999999999999999999").is_err());
        assert!(parse_count("99999999999999G").is_err());
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("2gb"), Ok(2 << 30));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("-1G").is_err());
        assert!(parse_size("99999999999999G").unwrap_err().contains("too large"));
    }
}
