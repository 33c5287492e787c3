//! A durable `bench` run on a disk that fills up (a file size limit,
//! `RLIMIT_FSIZE`, with `SIGXFSZ` ignored, so the log's `write` fails with
//! `EFBIG`): the run stops with one line naming the OS error and a
//! non-zero status (fail-stop), and `multiverse recover` afterwards opens
//! the directory, shows the durable prefix and checks the workload's
//! invariants on it.

use std::process::Command;

/// The file size limit in KiB (bash's `ulimit -f`): room for the load of
/// 2,000 YCSB records of 1 KB and a little of the run.
const FSIZE_KIB: u64 = 6000;

#[test]
fn a_full_disk_stops_bench_with_one_line_and_recover_shows_the_prefix() {
    for protocol in ["mv-occ", "silo"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!("trap '' XFSZ; ulimit -f {FSIZE_KIB} && exec \"$@\""))
            .arg("bash")
            .arg(env!("CARGO_BIN_EXE_multiverse"))
            .args(["bench", "--protocol", protocol, "--workload", "ycsb", "--rows", "2k", "--threads", "2"])
            .args(["--duration", "60", "--durability", "sync", "--log-streams", "1", "--data-dir"])
            .arg(&dir)
            .output()
            .expect("bash runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{protocol}: {stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{protocol}: one line expected:\n{stderr}");
        assert!(
            lines[0].starts_with("multiverse: ") && lines[0].contains("os error 27") && lines[0].contains("reopen"),
            "{protocol}: {}",
            lines[0]
        );
        let rec = Command::new(env!("CARGO_BIN_EXE_multiverse")).arg("recover").arg(&dir).output().unwrap();
        let stdout = String::from_utf8_lossy(&rec.stdout);
        assert_eq!(rec.status.code(), Some(0), "{protocol}: {stdout}{}", String::from_utf8_lossy(&rec.stderr));
        assert!(stdout.contains("table      ycsb: 2000 rows"), "{protocol}: {stdout}");
        assert!(stdout.contains("check      passed"), "{protocol}: {stdout}");
    }
}
