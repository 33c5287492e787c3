use super::*;

fn chart(x: &[&str]) -> Chart {
    Chart {
        title: "Throughput vs threads: hekaton".into(),
        notes: vec!["rows=1000 reads=10 writes=2; commit abc1234".into()],
        x_name: "threads".into(),
        y_name: "throughput (txn/s)".into(),
        x: x.iter().map(|s| s.to_string()).collect(),
        series: vec![
            Series {
                name: "mv-occ / snapshot".into(),
                points: vec![Some(Point { y: 1.0e6, lo: 0.9e6, hi: 1.1e6 }), Some(Point::single(1.9e6)), None]
                    [..x.len()]
                    .to_vec(),
            },
            Series {
                name: "mv-occ / serializable".into(),
                points: vec![Some(Point::single(0.8e6)), Some(Point::single(1.5e6)), Some(Point::single(2.0e6))]
                    [..x.len()]
                    .to_vec(),
            },
        ],
    }
}

/// `#1F77B4`: a colour as the SVG writes it.
fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// The SVG elements named `tag` whose attributes contain `attr`.
fn count(svg: &str, tag: &str, attr: &str) -> usize {
    svg.split(&format!("<{tag} ")).skip(1).filter(|e| e.split('>').next().unwrap_or("").contains(attr)).count()
}

/// The texts of an SVG's `<text>` elements.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| t.split('>').nth(1))
        .map(|t| t.trim_end_matches("</text").trim().to_string())
        .collect()
}

/// PNG signature and size.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |r: std::ops::Range<usize>| u32::from_be_bytes(bytes[r].try_into().unwrap());
    (be(16..20), be(20..24))
}

/// The decoded RGB pixels of a PNG.
fn pixels(bytes: &[u8]) -> Vec<[u8; 3]> {
    let mut r = png::Decoder::new(bytes).read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf[..info.buffer_size()].chunks(3).map(|p| [p[0], p[1], p[2]]).collect()
}

#[test]
fn scales() {
    let s = |v: &[&str]| positions(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>()).0;
    assert_eq!(s(&["1", "2", "4", "8", "16"]), Scale::Log);
    assert_eq!(s(&["1", "4", "8", "12", "16"]), Scale::Linear);
    assert_eq!(s(&["0", "0.5", "0.9", "0.99"]), Scale::Linear);
    assert_eq!(s(&["100k", "1M", "10M"]), Scale::Log);
    assert_eq!(s(&["1", "2"]), Scale::Linear);
    assert_eq!(s(&["1", "1.0"]), Scale::Categorical);
    assert_eq!(s(&["read-committed", "snapshot"]), Scale::Categorical);
    assert_eq!(number("1_000"), Some(1000.0));
    assert_eq!(number("nan"), None);
    assert_eq!(number(""), None);
    assert!(is_categorical(&["a:50,b:50".to_string(), "a:10,b:90".to_string()]));
    assert!(!is_categorical(&["0.5".to_string()]));
}

#[test]
fn throughput_labels() {
    assert_eq!(si(0.0), "0");
    assert_eq!(si(950.0), "950");
    assert_eq!(si(12_500.0), "12.5K");
    assert_eq!(si(250_000.0), "250K");
    assert_eq!(si(1_250_000.0), "1.25M");
    assert_eq!(si(2_000_000_000.0), "2G");
}

#[test]
fn writes_svg_and_png() {
    let dir = tempfile::tempdir().unwrap();
    for x in [&["1", "2", "4"][..], &["read-committed", "snapshot"][..], &["7"][..]] {
        let c = chart(x);
        let [svg, png] = write(&c, &dir.path().join("sub/plot")).unwrap();
        assert!(svg.ends_with("sub/plot.svg") && png.ends_with("sub/plot.png"));
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"), "{text}");
        for s in ["mv-occ / snapshot", "mv-occ / serializable", "throughput (txn/s)", "Throughput vs threads"] {
            assert!(text.contains(s), "{s} missing from the SVG");
        }
        let texts = texts(&text);
        for s in x {
            assert!(texts.iter().any(|t| t == s), "tick {s} missing: {texts:?}");
        }
        assert_eq!(png_size(&std::fs::read(&png).unwrap()), SIZE);
    }
}

/// Numbers are lines with markers; categories are grouped bars, never
/// joined by a line. Error bars appear exactly where a point has a range.
#[test]
fn categories_are_bars_and_numbers_are_lines() {
    let blue = hex(COLORS[0]);
    let lines = svg_string(&chart(&["1", "2", "4"])).unwrap();
    assert!(count(&lines, "polyline", &format!("stroke=\"{blue}\"")) >= 1, "a line per series");
    assert_eq!(count(&lines, "rect", &format!("fill=\"{blue}\"")), 0, "no bars (its marker is a circle)");

    let bars = svg_string(&chart(&["read-committed", "snapshot", "serializable"])).unwrap();
    assert_eq!(count(&bars, "polyline", &format!("stroke=\"{blue}\"")), 0, "no line joins categories");
    // Series 0 has two values (one is missing) and a legend swatch;
    // series 1 three values and a swatch.
    assert_eq!(count(&bars, "rect", &format!("fill=\"{blue}\"")), 3);
    assert_eq!(count(&bars, "rect", &format!("fill=\"{}\"", hex(COLORS[1]))), 4);
    // One error bar (series 0 at x 0): a whisker and two caps, in ink.
    let ink = "stroke=\"#1E1E1E\"";
    assert_eq!(count(&bars, "polyline", ink), 3, "{bars}");
    let mut single = chart(&["read-committed", "snapshot", "serializable"]);
    single.series[0].points[0] = Some(Point::single(1.0e6));
    assert_eq!(count(&svg_string(&single).unwrap(), "polyline", ink), 0, "no error bar for a single run");

    // The bars' colours really are drawn in the PNG.
    let px = pixels(&png_bytes(&chart(&["a", "b"])).unwrap());
    assert_eq!(px.len(), (SIZE.0 * SIZE.1) as usize);
    let c = COLORS[1];
    assert!(px.iter().filter(|p| **p == [c.0, c.1, c.2]).count() > 2000, "the bars are filled");
}

/// The PNG's text is really drawn: the title row has dark pixels, and
/// removing the title leaves that row blank.
#[test]
fn png_text_is_rendered() {
    let dark_in_title_band = |c: &Chart| {
        let px = pixels(&png_bytes(c).unwrap());
        // The top 24 rows hold the title only.
        px[..(SIZE.0 * 24) as usize].iter().filter(|p| p.iter().all(|&v| v < 100)).count()
    };
    let mut c = chart(&["1", "2"]);
    assert!(dark_in_title_band(&c) > 200, "the title's glyphs are drawn");
    c.title = String::new();
    assert_eq!(dark_in_title_band(&c), 0);
}

#[test]
fn bad_charts_are_errors() {
    let mut c = chart(&["1", "2"]);
    c.series[0].points.pop();
    assert!(svg_string(&c).unwrap_err().contains("has 1 points for 2"));
    c.x.clear();
    assert!(png_bytes(&c).unwrap_err().contains("no x values"));
}

#[test]
fn time_series_in_both_formats() {
    let dir = tempfile::tempdir().unwrap();
    let series = vec![
        ("silo / serializable".to_string(), vec![1.0e6, 1.2e6, 1.1e6, f64::NAN, 1.15e6]),
        ("mv-occ / snapshot".to_string(), vec![0.8e6, 0.9e6, 0.85e6]),
    ];
    let svg = dir.path().join("a/ts.svg");
    time_series(&svg, "tpcc: throughput per second", "4 threads\ncommit abc", &series).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    for s in ["silo / serializable", "mv-occ / snapshot", "tpcc: throughput per second", "4 threads", "commit abc"] {
        assert!(texts(&text).iter().any(|t| t == s), "{s} missing: {:?}", texts(&text));
    }
    assert!(text.contains("second of the run") && text.contains("throughput (txn/s)"));
    assert!(count(&text, "polyline", &format!("stroke=\"{}\"", hex(COLORS[1]))) >= 1);
    let png = dir.path().join("ts.PNG");
    time_series(&png, "t", "", &series).unwrap();
    assert_eq!(png_size(&std::fs::read(&png).unwrap()), SIZE);

    assert!(time_series(&dir.path().join("ts.jpg"), "t", "", &series).unwrap_err().contains(".svg or .png"));
    assert!(time_series(&svg, "t", "", &[]).unwrap_err().contains("nothing to plot"));
    assert!(time_series(&svg, "t", "", &[("x".into(), vec![])]).unwrap_err().contains("nothing to plot"));
}

#[test]
fn breakdown_in_both_formats() {
    let dir = tempfile::tempdir().unwrap();
    let part = |n: &str, v: f64| (n.to_string(), v);
    let rows = vec![
        (
            "silo / serializable".to_string(),
            vec![part("useful work", 800.0), part("validation", 150.0), part("abort", 50.0)],
        ),
        (
            "mv-lock / serializable".to_string(),
            vec![part("useful work", 900.0), part("lock wait", 400.0), part("fsync", 30.0)],
        ),
    ];
    let svg = dir.path().join("b.svg");
    breakdown(&svg, "Where the time goes", "tpcc, 4 threads", &rows).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    let t = texts(&text);
    for s in
        ["silo / serializable", "mv-lock / serializable", "useful work", "validation", "abort", "lock wait", "fsync"]
    {
        assert!(t.iter().any(|x| x == s), "{s} missing: {t:?}");
    }
    assert!(text.contains("ns per transaction"), "the unit is stated");
    assert!(t.iter().any(|x| x == "1.33K"), "each bar's total: {t:?}");
    // Fixed colours: "useful work" is green in both rows and the legend,
    // "lock wait" purple once plus the legend.
    assert_eq!(count(&text, "rect", &format!("fill=\"{}\"", hex(component_color("useful work")))), 3);
    assert_eq!(count(&text, "rect", &format!("fill=\"{}\"", hex(RGBColor(148, 103, 189)))), 2);
    assert_eq!(component_color(" Lock Wait"), component_color("lock wait"));
    assert_eq!(component_color("fsync"), component_color("fsync"));

    let png = dir.path().join("b.png");
    breakdown(&png, "Where the time goes", "", &rows).unwrap();
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(png_size(&bytes), SIZE);
    let g = component_color("useful work");
    assert!(pixels(&bytes).iter().filter(|p| **p == [g.0, g.1, g.2]).count() > 2000, "segments are filled");

    // Shares of the time: percentages.
    let shares = vec![("ssn / serializable".to_string(), vec![part("useful work", 0.7), part("gc", 0.3)])];
    breakdown(&svg, "Shares", "", &shares).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("share of each transaction") && texts(&text).iter().any(|t| t == "100%"), "{text}");
    breakdown_in(&svg, "Shares", "", "µs per transaction", &rows).unwrap();
    assert!(std::fs::read_to_string(&svg).unwrap().contains("µs per transaction"));

    assert!(breakdown(&svg, "t", "", &[]).unwrap_err().contains("nothing to plot"));
    let bad = vec![("r".to_string(), vec![part("gc", -1.0)])];
    assert!(breakdown(&svg, "t", "", &bad).unwrap_err().contains("'gc' is -1"));
    assert!(breakdown(&dir.path().join("b"), "t", "", &rows).unwrap_err().contains(".svg or .png"));
}
