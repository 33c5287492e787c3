//! Line charts of comparisons, like the papers' figures: throughput (y) against
//! a swept parameter (x), one line with markers per protocol, written as SVG
//! and PNG.
//!
//! Drawing uses the `plotters` crate. The SVG keeps its text as `<text>`
//! elements (a viewer supplies the font). The PNG is drawn into an RGB buffer
//! with text rendered from an embedded font, `assets/DejaVuSans-subset.ttf`
//! (DejaVu Sans cut down to Latin-1, Greek lower case and some punctuation;
//! license and the script that made it beside it), so no system fonts or
//! fontconfig are needed; other characters draw as the font's empty box.
//! The buffer is encoded with the `png` crate.
//!
//! The x axis: when every x value is a number (`1`, `0.5`, `1e3`, `500k`,
//! `1M`) the points sit at their values, on a logarithmic axis when the
//! sorted values grow by a factor of at least 1.5 each step and 8 in all
//! (`1,2,4,8`), on a linear one otherwise; other values (isolation levels,
//! names) are evenly spaced in the given order. Ticks are placed at the x
//! values and labelled with them as given. Where a point has a range
//! (several runs), a whisker from its low to its high value is drawn.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Width and height of both images, in pixels.
pub const SIZE: (u32, u32) = (960, 600);

/// The font every text of a chart uses (registered under this family name).
const FONT: &str = "sans-serif";
static FONT_BYTES: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");

/// Colors of the lines, in order (then repeated): distinct hues that stay
/// apart in print.
const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(90, 90, 90),
];

/// One plotted value: `y`, and the range `lo..=hi` it summarizes (equal to
/// `y` for a single run).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub y: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Point {
    /// A single value, no range.
    pub fn single(y: f64) -> Point {
        Point { y, lo: y, hi: y }
    }
}

/// One line of a chart: a value (or none) per x value.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<Option<Point>>,
}

/// A line chart.
#[derive(Clone, Debug)]
pub struct Chart {
    /// The title, at the top.
    pub title: String,
    /// Smaller lines under the title (parameters, commit).
    pub notes: Vec<String>,
    /// What x is (the swept parameter).
    pub x_name: String,
    /// What y is, with its unit.
    pub y_name: String,
    /// The x values, as labelled.
    pub x: Vec<String>,
    /// The lines; each has one entry per x value.
    pub series: Vec<Series>,
}

/// Where the x values go on the axis.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scale {
    /// Numbers at their values.
    Linear,
    /// Positive numbers, geometrically spaced: at their logarithms.
    Log,
    /// Anything else: 0, 1, 2, ... in the given order.
    Categorical,
}

/// The x axis: linear over `lo..hi`, with ticks exactly at the x values
/// (and no light mesh lines between them).
struct XAxis {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for XAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let share = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (share * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// A number as the x values write them: `0.5`, `1e3`, `500k`, `10M`, `1_000`.
fn number(s: &str) -> Option<f64> {
    let t: String = s.trim().chars().filter(|c| *c != '_').collect();
    let (num, mul) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1e3),
        'm' | 'M' => (&t[..t.len() - 1], 1e6),
        'g' | 'G' => (&t[..t.len() - 1], 1e9),
        _ => (&t[..], 1.0),
    };
    let v: f64 = num.parse().ok()?;
    (v.is_finite()).then_some(v * mul)
}

/// The scale of `x` and each value's position on it.
fn positions(x: &[String]) -> (Scale, Vec<f64>) {
    let categorical = (Scale::Categorical, (0..x.len()).map(|i| i as f64).collect());
    let Some(nums) = x.iter().map(|s| number(s)).collect::<Option<Vec<f64>>>() else {
        return categorical;
    };
    let mut sorted = nums.clone();
    sorted.sort_by(f64::total_cmp);
    if sorted.windows(2).any(|w| w[0] == w[1]) {
        return categorical;
    }
    let geometric = sorted.len() >= 3
        && sorted[0] > 0.0
        && sorted[sorted.len() - 1] / sorted[0] >= 8.0
        && sorted.windows(2).all(|w| w[1] / w[0] >= 1.5);
    if geometric {
        (Scale::Log, nums.iter().map(|v| v.ln()).collect())
    } else {
        (Scale::Linear, nums)
    }
}

/// `950`, `12.5K`, `1.25M`: a throughput for an axis label.
pub fn si(v: f64) -> String {
    let a = v.abs();
    let (div, unit) = if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "K")
    } else {
        (1.0, "")
    };
    let s = format!("{:.2}", v / div);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{unit}")
}

/// The default directory of plots and comparison results:
/// `$MULTIVERSE_OUT_DIR`, or `bench-out` (relative to the working directory).
pub fn out_dir() -> PathBuf {
    match std::env::var_os("MULTIVERSE_OUT_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from("bench-out"),
    }
}

/// Registers the embedded font with plotters, once.
fn font() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES)
                .map_err(|_| "the embedded plot font cannot be read".to_string())
        })
        .clone()
}

/// `PREFIX.svg` and `PREFIX.png` (the extension is appended to the whole prefix).
fn with_ext(prefix: &Path, ext: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// Writes the chart as `PREFIX.svg` and `PREFIX.png`, creating the directory
/// if needed; returns both paths.
pub fn write(chart: &Chart, prefix: &Path) -> Result<[PathBuf; 2], String> {
    if let Some(dir) = prefix.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let svg = with_ext(prefix, "svg");
    let png = with_ext(prefix, "png");
    write_svg(chart, &svg)?;
    write_png(chart, &png)?;
    Ok([svg, png])
}

/// Writes the chart as an SVG file.
pub fn write_svg(chart: &Chart, path: &Path) -> Result<(), String> {
    let text = svg_string(chart)?;
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The chart as an SVG document.
pub fn svg_string(chart: &Chart) -> Result<String, String> {
    font()?;
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, SIZE).into_drawing_area();
        draw(&root, chart)?;
        root.present().map_err(|e| format!("cannot draw the SVG plot: {e}"))?;
    }
    Ok(text)
}

/// Writes the chart as a PNG file (8-bit RGB).
pub fn write_png(chart: &Chart, path: &Path) -> Result<(), String> {
    let bytes = png_bytes(chart)?;
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The chart as PNG file contents.
pub fn png_bytes(chart: &Chart) -> Result<Vec<u8>, String> {
    font()?;
    let (w, h) = SIZE;
    let mut rgb = vec![255u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw(&root, chart)?;
        root.present().map_err(|e| format!("cannot draw the PNG plot: {e}"))?;
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(|e| format!("cannot encode the PNG plot: {e}"))?;
    writer.write_image_data(&rgb).map_err(|e| format!("cannot encode the PNG plot: {e}"))?;
    writer.finish().map_err(|e| format!("cannot encode the PNG plot: {e}"))?;
    Ok(out)
}

/// Draws `chart` on `root` (any backend).
fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let fail = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("cannot draw the plot: {e}");
    if chart.x.is_empty() {
        return Err("nothing to plot: no x values".into());
    }
    if let Some(s) = chart.series.iter().find(|s| s.points.len() != chart.x.len()) {
        return Err(format!("plot series '{}' has {} points for {} x values", s.name, s.points.len(), chart.x.len()));
    }
    root.fill(&WHITE).map_err(fail)?;
    // The top margin keeps the title's ascenders inside the bitmap.
    let mut area = root.margin(10, 0, 0, 0).titled(&chart.title, (FONT, 22).into_font().color(&BLACK)).map_err(fail)?;
    for note in &chart.notes {
        area = area.titled(note, (FONT, 14).into_font().color(&RGBColor(80, 80, 80))).map_err(fail)?;
    }

    let (scale, pos) = positions(&chart.x);
    let (lo, hi) = pos.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &p| (a.min(p), b.max(p)));
    let pad = if hi > lo { (hi - lo) * 0.06 } else { 1.0 };
    let pad = if scale == Scale::Categorical { 0.5 } else { pad };
    let points = || chart.series.iter().flat_map(|s| s.points.iter().flatten());
    let y_top = points().map(|p| p.hi.max(p.y)).fold(0.0, f64::max);
    // Room above the highest point for the legend.
    let y_max = if y_top > 0.0 { y_top * (1.12 + 0.07 * chart.series.len() as f64) } else { 1.0 };

    let labels: Vec<(f64, String)> = pos.iter().copied().zip(chart.x.iter().cloned()).collect();
    let label_of = |v: &f64| {
        labels
            .iter()
            .find(|(p, _)| (p - v).abs() <= 1e-9 * p.abs().max(1.0))
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    };
    let x_name = if scale == Scale::Log { format!("{} (log scale)", chart.x_name) } else { chart.x_name.clone() };

    let mut c = ChartBuilder::on(&area)
        .margin(18)
        .x_label_area_size(52)
        .y_label_area_size(78)
        .build_cartesian_2d(XAxis { lo: lo - pad, hi: hi + pad, ticks: pos.clone() }, 0.0..y_max)
        .map_err(fail)?;
    c.configure_mesh()
        .x_labels(pos.len())
        .y_labels(8)
        .x_label_formatter(&label_of)
        .y_label_formatter(&|v| si(*v))
        .x_desc(x_name)
        .y_desc(chart.y_name.as_str())
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(220, 220, 220))
        .draw()
        .map_err(fail)?;

    for (i, s) in chart.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut pts: Vec<(f64, Point)> = pos.iter().zip(&s.points).filter_map(|(&x, p)| p.map(|p| (x, p))).collect();
        if scale != Scale::Categorical {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let line = color.stroke_width(2);
        c.draw_series(LineSeries::new(pts.iter().map(|(x, p)| (*x, p.y)), line))
            .map_err(fail)?
            .label(s.name.as_str())
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (24, 0)], color.stroke_width(2))
                    + marker(i, (12, 0), color)
            });
        // Whiskers: low to high over several runs.
        for (x, p) in pts.iter().filter(|(_, p)| p.hi > p.lo) {
            c.draw_series(std::iter::once(PathElement::new(vec![(*x, p.lo), (*x, p.hi)], color.stroke_width(1))))
                .map_err(fail)?;
            for v in [p.lo, p.hi] {
                c.draw_series(std::iter::once(
                    EmptyElement::at((*x, v)) + PathElement::new(vec![(-4, 0), (4, 0)], color.stroke_width(1)),
                ))
                .map_err(fail)?;
            }
        }
        c.draw_series(pts.iter().map(|(x, p)| EmptyElement::at((*x, p.y)) + marker(i, (0, 0), color))).map_err(fail)?;
    }

    // The legend goes where the lines are low: top left when they rise.
    let rising = chart.series.iter().filter(|s| {
        let ys: Vec<f64> = s.points.iter().flatten().map(|p| p.y).collect();
        ys.len() >= 2 && ys[ys.len() - 1] > ys[0]
    });
    let position = if scale != Scale::Categorical && rising.count() * 2 > chart.series.len() {
        SeriesLabelPosition::UpperLeft
    } else {
        SeriesLabelPosition::UpperRight
    };
    c.configure_series_labels()
        .position(position)
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(160, 160, 160))
        .draw()
        .map_err(fail)?;
    Ok(())
}

/// The marker of line `i` at pixel offset `at`: circle, triangle, square,
/// diamond-ish cross, then again, so lines stay apart without color.
fn marker<DB: DrawingBackend>(i: usize, at: (i32, i32), color: RGBColor) -> DynElement<'static, DB, (i32, i32)> {
    let (x, y) = at;
    match (i / COLORS.len() + i) % 4 {
        0 => Circle::new((x, y), 4, color.filled()).into_dyn(),
        1 => TriangleMarker::new((x, y), 6, color.filled()).into_dyn(),
        2 => Rectangle::new([(x - 4, y - 4), (x + 4, y + 4)], color.filled()).into_dyn(),
        _ => Cross::new((x, y), 5, color.stroke_width(2)).into_dyn(),
    }
}

#[cfg(test)]
mod tests {
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
                    name: "mv-occ@snapshot".into(),
                    points: vec![Some(Point { y: 1.0e6, lo: 0.9e6, hi: 1.1e6 }), Some(Point::single(1.9e6)), None]
                        [..x.len()]
                        .to_vec(),
                },
                Series {
                    name: "mv-occ@serializable".into(),
                    points: vec![Some(Point::single(0.8e6)), Some(Point::single(1.5e6)), Some(Point::single(2.0e6))]
                        [..x.len()]
                        .to_vec(),
                },
            ],
        }
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
            for s in ["mv-occ@snapshot", "mv-occ@serializable", "throughput (txn/s)", "Throughput vs threads"] {
                assert!(text.contains(s), "{s} missing from the SVG");
            }
            let texts: Vec<&str> = text.split("<text").skip(1).filter_map(|t| t.split('>').nth(1)).collect();
            for s in x {
                assert!(texts.iter().any(|t| t.trim_end_matches("</text").trim() == *s), "tick {s} missing: {texts:?}");
            }
            let bytes = std::fs::read(&png).unwrap();
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            assert_eq!(&bytes[12..16], b"IHDR");
            let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
            let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
            assert_eq!((w, h), SIZE);
        }
    }

    /// The PNG's text is really drawn: the title row has dark pixels, and
    /// removing the title leaves that row blank.
    #[test]
    fn png_text_is_rendered() {
        let dark_in_title_band = |c: &Chart| {
            font().unwrap();
            let (w, _) = SIZE;
            let mut rgb = vec![255u8; (w * SIZE.1 * 3) as usize];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
                draw(&root, c).unwrap();
                root.present().unwrap();
            }
            // The top 24 rows hold the title only.
            rgb[..(w * 24 * 3) as usize].chunks(3).filter(|p| p.iter().all(|&v| v < 100)).count()
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
}
