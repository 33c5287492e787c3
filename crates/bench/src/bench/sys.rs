//! Facts about this process and machine, read from `/proc` (Linux); 0 where
//! they cannot be read.

/// Reads a `kB` field of a `/proc` file, in bytes.
fn proc_kb(file: &str, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(file).ok()?;
    let line = s.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    let kb: u64 = line[field.len() + 1..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// Peak resident set size of this process (`VmHWM`), in bytes.
pub fn peak_rss_bytes() -> u64 {
    proc_kb("/proc/self/status", "VmHWM").unwrap_or(0)
}

/// Resident set size of this process now (`VmRSS`), in bytes.
pub fn rss_bytes() -> u64 {
    proc_kb("/proc/self/status", "VmRSS").unwrap_or(0)
}

/// Memory the kernel says is available for new allocations, in bytes.
pub fn mem_available_bytes() -> Option<u64> {
    proc_kb("/proc/meminfo", "MemAvailable")
}

/// CPU time of the calling thread: (nanoseconds on a CPU, nanoseconds
/// runnable but waiting for one), from `/proc/thread-self/schedstat`.
pub fn thread_cpu_ns() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut f = s.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

/// The git commit the binary was built from (`unknown` outside a checkout).
pub const GIT_COMMIT: &str = env!("MULTIVERSE_GIT_COMMIT");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fields_parse() {
        if std::path::Path::new("/proc/self/status").exists() {
            assert!(rss_bytes() > 0);
            assert!(peak_rss_bytes() >= rss_bytes() / 2);
        }
        assert!(!GIT_COMMIT.is_empty());
    }
}
