//! `multiverse report`: a tiny real comparison, its HTML page, and that
//! page rendered by a real headless browser (Chromium or Chrome), whose
//! screenshot must show the plots.
//!
//! Without a browser the rendering is skipped with a notice on standard
//! error and standard output (the page's text checks still run), so that
//! `cargo test --workspace` passes on a machine with only a Rust toolchain.
//! Where [`REQUIRE_BROWSER`] is set to `1` (`.ci/run` sets it after
//! installing Chromium) a missing browser fails the test instead: a report
//! nobody has seen rendered is not tested.

use std::ffi::OsStr;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that turns a missing browser into a failure.
const REQUIRE_BROWSER: &str = "MULTIVERSE_REQUIRE_BROWSER";
/// The browsers looked for in `PATH`, in this order.
const BROWSERS: [&str; 4] = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];
/// The browser window, and so the screenshot, in pixels.
const WINDOW: (u32, u32) = (1200, 1600);
/// The first series' colour of every plot (plot.rs, COLORS[0]).
const PLOT_BLUE: [u8; 3] = [31, 119, 180];

fn multiverse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_multiverse")).args(args).output().expect("the multiverse binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The first of [`BROWSERS`] found as an executable file in the
/// directories of `path` (a `PATH` value).
fn find_browser(path: Option<&OsStr>) -> Option<PathBuf> {
    let dirs: Vec<PathBuf> = path.map(|p| std::env::split_paths(p).collect()).unwrap_or_default();
    BROWSERS.iter().flat_map(|b| dirs.iter().map(move |d| d.join(b))).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The browser to render with: `Ok(None)` (skip the rendering) when there
/// is none and `require` (the value of [`REQUIRE_BROWSER`]) is not `1`;
/// `Err` (fail) when there is none and it is.
fn browser(path: Option<&OsStr>, require: Option<&OsStr>) -> Result<Option<PathBuf>, String> {
    match find_browser(path) {
        Some(b) => Ok(Some(b)),
        None if require == Some(OsStr::new("1")) => Err(format!(
            "no browser ({}) in PATH, and {REQUIRE_BROWSER}=1 requires one: install it with \
             `apt-get update && apt-get install -y chromium`",
            BROWSERS.join(", ")
        )),
        None => Ok(None),
    }
}

/// Runs `browser` headless on `page`, writing a screenshot to `png`; kills
/// it (and every process it started) after 60 s so a hang cannot stall CI.
fn screenshot(browser: &Path, page: &Path, png: &Path, scratch: &Path) {
    let log = scratch.join("chromium.log");
    let log_file = std::fs::File::create(&log).unwrap();
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            // Without these it waits for the network, which this machine lacks.
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", scratch.join("chromium-profile").display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("--window-size={},{}", WINDOW.0, WINDOW.1))
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file)
        // A process group of its own: a timeout ends the browser's helpers too.
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{} does not start: {e}", browser.display()));
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.wait();
            panic!(
                "chromium did not finish within 60 s; its log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        status.success() && png.exists(),
        "chromium failed ({status}); its log:\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
}

/// The screenshot's size and RGB pixels.
fn decode(png: &Path) -> ((u32, u32), Vec<[u8; 3]>) {
    let mut r = png::Decoder::new(std::fs::File::open(png).unwrap()).read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).unwrap();
    assert_eq!(info.bit_depth, png::BitDepth::Eight, "an 8-bit screenshot");
    let step = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected screenshot colour type {other:?}"),
    };
    let px = buf[..info.buffer_size()].chunks(step).map(|p| [p[0], p[1], p[2]]).collect();
    ((info.width, info.height), px)
}

#[test]
fn report_renders_in_a_browser() {
    // First, so that a CI run without its browser fails at once.
    let browser = browser(std::env::var_os("PATH").as_deref(), std::env::var_os(REQUIRE_BROWSER).as_deref())
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    // compare creates its files, never their directory.
    std::fs::create_dir(&results).unwrap();
    let o = multiverse(&[
        "compare",
        "--workload",
        "hekaton",
        "--rows",
        "1000",
        "--duration",
        "0.2",
        "--protocols",
        "mv-occ@snapshot,mv-occ@serializable",
        "--sweep",
        "threads=1,2",
        "--repeat",
        "2",
        "--out",
        results.join("threads").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "compare: {}", text(&o.stderr));

    let o = multiverse(&["report", results.to_str().unwrap()]);
    assert!(o.status.success(), "report: {}", text(&o.stderr));
    let page = results.join("report.html");
    assert!(text(&o.stdout).contains(&page.display().to_string()), "{}", text(&o.stdout));
    let html = std::fs::read_to_string(&page).unwrap();
    for s in [
        "<title>Multiverse benchmark report</title>",
        "mv-occ / snapshot",
        "mv-occ / serializable",
        "Throughput, median over 2 runs (txn/s)",
        "Throughput, min over 2 runs (txn/s)",
        "Throughput, max over 2 runs (txn/s)",
        "Aborted share of attempts, median (%)",
        "Latency p99, median (µs)",
        "error bars: min–max of the runs",
        "Machine and build",
    ] {
        assert!(html.contains(s), "{s} missing from the page");
    }
    assert!(html.matches("<svg").count() >= 2, "inline plots");
    // Nothing to fetch (the SVGs' xmlns names a namespace, not a resource).
    for bad in ["<script", "<link", "<img", "src=", "href=\"http", "@import", "url("] {
        assert!(!html.contains(bad), "the page is self-contained: {bad}");
    }
    // `--out`, and a single JSON file as the input.
    let single = dir.path().join("single.html");
    let o = multiverse(&["report", results.join("threads.json").to_str().unwrap(), "--out", single.to_str().unwrap()]);
    assert!(o.status.success() && single.exists(), "{}", text(&o.stderr));

    let Some(browser) = browser else {
        // Both streams: cargo shows a passing test's output only with
        // --nocapture, and a reader may look at either.
        let notice = format!(
            "report_renders_in_a_browser: SKIPPED the rendering: no browser ({}) in PATH; install \
             chromium, or set {REQUIRE_BROWSER}=1 to make this a failure",
            BROWSERS.join(", ")
        );
        eprintln!("{notice}");
        println!("{notice}");
        return;
    };
    let shot = dir.path().join("shot.png");
    screenshot(&browser, &page, &shot, dir.path());
    let (size, px) = decode(&shot);
    assert_eq!(size, WINDOW, "the screenshot is the window");
    let white = px.iter().filter(|p| p.iter().all(|&c| c >= 250)).count();
    let inked = px.len() - white;
    assert!(inked * 100 > px.len() * 3, "the page is not blank: {inked} of {} pixels are not white", px.len());
    let mut colours = px.clone();
    colours.sort_unstable();
    colours.dedup();
    assert!(colours.len() > 50, "text, tables and plots: only {} distinct colours", colours.len());
    let near = |p: &[u8; 3]| p.iter().zip(PLOT_BLUE).all(|(a, b)| a.abs_diff(b) <= 3);
    let blue = px.iter().filter(|p| near(p)).count();
    assert!(blue > 200, "the first plot's first series is drawn: {blue} pixels of its colour");
}

/// Runs this test binary's `report_renders_in_a_browser` alone, with a
/// `PATH` of one empty directory (no browser) and [`REQUIRE_BROWSER`] as
/// given.
fn rendering_test_without_a_browser(require: Option<&str>) -> Output {
    let empty = tempfile::tempdir().unwrap();
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "report_renders_in_a_browser", "--nocapture", "--test-threads=1"]).env("PATH", empty.path());
    match require {
        Some(v) => c.env(REQUIRE_BROWSER, v),
        None => c.env_remove(REQUIRE_BROWSER),
    };
    c.output().expect("the test binary runs")
}

/// On a machine without a browser the rendering test passes and says it
/// skipped the rendering (the README's test command passes on a fresh
/// machine); where CI requires a browser, it fails and says how to install
/// one.
#[test]
fn a_missing_browser_skips_the_rendering_unless_required() {
    let o = rendering_test_without_a_browser(None);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "without a browser the test passes: {out}{err}");
    assert!(err.contains("SKIPPED the rendering") && out.contains("SKIPPED the rendering"), "a notice: {out}{err}");
    assert!(out.contains("1 passed"), "the test ran: {out}");

    let o = rendering_test_without_a_browser(Some("1"));
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(!o.status.success(), "{REQUIRE_BROWSER}=1 makes a missing browser a failure: {out}{err}");
    assert!(err.contains("apt-get install -y chromium"), "it says how to install one: {err}");
}

/// The browser is looked for by name in every directory of `PATH`, not
/// at one fixed path; a file that is not executable does not count.
#[test]
fn the_browser_is_found_in_path() {
    use std::os::unix::fs::PermissionsExt as _;
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let path = std::env::join_paths([a.path(), b.path()]).unwrap();
    assert_eq!(browser(Some(&path), None), Ok(None), "nothing there: skip");
    assert!(browser(Some(&path), Some(OsStr::new("1"))).is_err(), "nothing there, and required");
    assert_eq!(browser(None, None), Ok(None), "no PATH at all");
    let chrome = b.path().join("google-chrome");
    std::fs::write(&chrome, "#!/bin/sh\n").unwrap();
    assert_eq!(find_browser(Some(&path)), None, "not executable");
    std::fs::set_permissions(&chrome, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(browser(Some(&path), Some(OsStr::new("1"))), Ok(Some(chrome.clone())));
    let chromium = b.path().join("chromium-browser");
    std::fs::write(&chromium, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&chromium, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(find_browser(Some(&path)), Some(chromium), "chromium first");
}

/// Bad input: one line, a non-zero exit, no panic, nothing written.
#[test]
fn bad_report_input_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let check = |args: &[&str], want: &str| {
        let o = multiverse(args);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(!err.contains("panicked") && err.contains(want), "{args:?}: expected '{want}' in: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
    };
    let d = dir.path().to_str().unwrap();
    check(&["report", &format!("{d}/missing")], "missing");
    check(&["report", d], "holds no benchmark records");
    std::fs::write(dir.path().join("a.json"), "[{\"protocol\": ").unwrap();
    check(&["report", d], "a.json: not valid JSON");
    std::fs::write(dir.path().join("a.json"), "[]").unwrap();
    check(&["report", d], "no benchmark records");
    std::fs::write(dir.path().join("a.json"), "[{\"protocol\": \"silo\", \"isolation\": \"serializable\"}]").unwrap();
    check(&["report", d], "a.json: record 1 of 1: no workload");
    assert!(!dir.path().join("report.html").exists());
}
