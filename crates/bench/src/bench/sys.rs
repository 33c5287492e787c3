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

/// Resident set size of this process now, in bytes: `VmRSS` less
/// `RssShmem`, the pages of shared memory and tmpfs files mapped in (another
/// store's files on `/dev/shm` are counted once, as files: see
/// `multiverse_peers::Peer::memory_files_bytes`).
pub fn rss_bytes() -> u64 {
    let status = "/proc/self/status";
    proc_kb(status, "VmRSS").unwrap_or(0).saturating_sub(proc_kb(status, "RssShmem").unwrap_or(0))
}

/// Minor page faults of this process so far (field 10 of `/proc/self/stat`).
pub fn minor_faults() -> u64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else { return 0 };
    // The command name (field 2) may hold spaces: count fields after its ')'.
    let Some(rest) = s.rfind(')').map(|i| &s[i + 1..]) else { return 0 };
    rest.split_whitespace().nth(7).and_then(|x| x.parse().ok()).unwrap_or(0)
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

/// CPU time of the whole process so far, in nanoseconds (user and system,
/// fields 14 and 15 of `/proc/self/stat`, in clock ticks of 10 ms).
pub fn process_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11).map(|x| x.parse::<u64>().ok());
    let (u, k) = (f.next()??, f.next()??);
    Some((u + k) * 10_000_000)
}

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_e` of
/// mimalloc 3, which the `mimalloc` crate builds; the constant is not
/// exported by the bindings). A test checks the index by its default.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Touches `bytes` of fresh memory through the allocator and frees it again,
/// keeping it in the allocator for the allocations that follow; returns how
/// long that took.
///
/// On a virtual machine the first write to a page of guest memory is slow:
/// the host backs it only then (this machine's measurement: 320-600 MB/s for
/// never-touched memory against 2-8 GB/s for memory touched before), and a
/// workload whose tables grow pays it on every new page. Silo's and ERMIA's
/// benchmarks pre-fault their memory pools for the same reason. Purging is
/// turned off first (mimalloc would otherwise hand freed pages back to the
/// kernel after a delay, and the host would reclaim them), so memory the run
/// frees stays with the process too.
pub fn prefault(bytes: u64) -> std::time::Duration {
    const BLOCK: usize = 16 << 10;
    let t = std::time::Instant::now();
    // SAFETY: setting an option is a plain store into mimalloc's option
    // table; the call happens on one thread before any worker starts.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    let n = (bytes as usize).div_ceil(BLOCK);
    let mut blocks: Vec<Box<[u8]>> = Vec::with_capacity(n);
    for _ in 0..n {
        // Written, not just mapped: `vec!` of non-zero bytes touches every page.
        blocks.push(vec![1u8; BLOCK].into_boxed_slice());
    }
    std::hint::black_box(&blocks);
    drop(blocks);
    t.elapsed()
}

/// The git commit the binary was built from (`unknown` outside a checkout).
pub const GIT_COMMIT: &str = env!("MULTIVERSE_GIT_COMMIT");

/// The compiler that built the binary (`rustc --version`).
pub const RUSTC: &str = env!("MULTIVERSE_RUSTC");

/// The machine a run is on, for the benchmark record: what Linux shows in
/// /proc, /sys and /etc/os-release (a field it does not show is `unknown`,
/// the governor null).
pub fn machine() -> serde_json::Value {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let field = |text: &Option<String>, key: &str| -> Option<String> {
        text.as_deref()?.lines().find_map(|l| {
            let (k, v) = l.split_once(':').or_else(|| l.split_once('='))?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
        })
    };
    let cpuinfo = read("/proc/cpuinfo");
    let meminfo = read("/proc/meminfo");
    let memory = field(&meminfo, "MemTotal")
        .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024);
    let unknown = || "unknown".to_string();
    serde_json::json!({
        "cpu_model": field(&cpuinfo, "model name").unwrap_or_else(unknown),
        "logical_cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "memory_bytes": memory,
        "os": field(&read("/etc/os-release"), "PRETTY_NAME").unwrap_or_else(|| std::env::consts::OS.to_string()),
        "kernel": read("/proc/sys/kernel/osrelease").map_or_else(unknown, |s| s.trim().to_string()),
        "arch": std::env::consts::ARCH,
        "governor": read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").map(|s| s.trim().to_string()),
    })
}

/// How the binary was built, for the benchmark record.
pub fn build() -> serde_json::Value {
    serde_json::json!({
        "profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        "rustc": RUSTC,
        "version": env!("CARGO_PKG_VERSION"),
        "git_commit": GIT_COMMIT,
        "target": format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fields_parse() {
        if std::path::Path::new("/proc/self/status").exists() {
            assert!(rss_bytes() > 0);
            assert!(peak_rss_bytes() >= rss_bytes() / 2);
            let before = minor_faults();
            let v = std::hint::black_box(vec![1u8; 8 << 20]);
            assert!(minor_faults() > before, "touching 8 MiB of fresh memory faults");
            drop(v);
        }
        assert!(!GIT_COMMIT.is_empty());
        assert!(RUSTC.starts_with("rustc "), "{RUSTC}");
        let m = machine();
        assert!(m["logical_cpus"].as_u64().unwrap() >= 1);
        if std::path::Path::new("/proc/meminfo").exists() {
            assert!(m["memory_bytes"].as_u64().unwrap() > 1 << 20, "{m}");
            assert_ne!(m["kernel"], "unknown");
        }
        assert_eq!(build()["profile"], if cfg!(debug_assertions) { "debug" } else { "release" });
    }

    /// The option index used by `prefault` is mimalloc's purge delay: its
    /// default is 1,000 ms in mimalloc 3 (unless the environment sets it).
    #[test]
    fn purge_delay_option_is_the_right_one() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            // SAFETY: reading an option is a plain load.
            assert_eq!(unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }, 1000);
        }
    }
}
