//! `multiverse report`: a tiny real comparison, its HTML page, and that
//! page rendered by a real headless browser (Debian's `chromium`), whose
//! screenshot must show the plots. Without chromium the test fails and
//! says how to install it: a report nobody has seen rendered is not tested.

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
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

/// Runs chromium headless on `page`, writing a screenshot to `png`; kills
/// it (and every process it started) after 60 s so a hang cannot stall CI.
fn screenshot(page: &Path, png: &Path, scratch: &Path) {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: install it with `apt-get update && apt-get install -y chromium` \
         (.ci/run does so) to run the report's rendering test"
    );
    let log = scratch.join("chromium.log");
    let log_file = std::fs::File::create(&log).unwrap();
    let mut child = Command::new(CHROMIUM)
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
        .expect("chromium starts");
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
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
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

    let shot = dir.path().join("shot.png");
    screenshot(&page, &shot, dir.path());
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
