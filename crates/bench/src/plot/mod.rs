//! Charts of benchmark results, like the papers' figures, written as SVG and
//! PNG.
//!
//! The kind of chart follows from the x values, so that a chart never draws
//! a trend that is not there:
//!
//! - **numbers** (`1`, `0.5`, `1e3`, `500k`, `1M`: threads, theta, rows) are
//!   lines with markers, one per series. The points sit at their values, on a
//!   logarithmic axis when the sorted values grow by a factor of at least 1.5
//!   each step and 8 in all (`1,2,4,8`), on a linear one otherwise.
//! - **anything else** (isolation levels, protocols, mixes) is a category:
//!   grouped bars, one group per x value in the given order, one bar per
//!   series. A line between categories would suggest an order and a slope
//!   that mean nothing.
//!
//! Ticks are placed at the x values and labelled with them as given. Where a
//! point has a range (several runs), an error bar from its low to its high
//! value is drawn; the caller says what the range is in a note (compare:
//! "median of K runs; error bars: min–max").
//!
//! Two more charts serve single runs: [`time_series`] (per-second
//! throughput, one line per series) and [`breakdown`] (stacked horizontal
//! bars of where each transaction's time went, a fixed colour per
//! component).
//!
//! Drawing uses the `plotters` crate. The SVG keeps its text as `<text>`
//! elements (a viewer supplies the font). The PNG is drawn into an RGB buffer
//! with text rendered from an embedded font, `assets/DejaVuSans-subset.ttf`
//! (DejaVu Sans cut down to Latin-1, Greek lower case and some punctuation;
//! license and the script that made it beside it), so no system fonts or
//! fontconfig are needed; other characters draw as the font's empty box.
//! The buffer is encoded with the `png` crate.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Width and height of every image, in pixels.
pub const SIZE: (u32, u32) = (960, 600);

/// The font every text of a chart uses (registered under this family name).
const FONT: &str = "sans-serif";
static FONT_BYTES: &[u8] = include_bytes!("../../assets/DejaVuSans-subset.ttf");

/// Colors of the series, in order (then repeated, lighter): distinct hues
/// that stay apart in print.
pub const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(90, 90, 90),
];

/// The colour of series `i`: the palette, then every other round of it
/// lighter, so that bars (which have no markers) stay apart up to 16 series.
fn series_color(i: usize) -> RGBColor {
    let c = COLORS[i % COLORS.len()];
    if (i / COLORS.len()) % 2 == 1 {
        let lift = |v: u8| v + ((255 - v) as u16 * 45 / 100) as u8;
        RGBColor(lift(c.0), lift(c.1), lift(c.2))
    } else {
        c
    }
}

/// Components of a [`breakdown`] that have a colour of their own, so that
/// the same component looks the same in every chart, whatever its place.
const COMPONENT_COLORS: [(&str, RGBColor); 7] = [
    ("useful work", RGBColor(44, 160, 44)),
    ("abort", RGBColor(214, 39, 40)),
    ("validation", RGBColor(255, 127, 14)),
    ("lock wait", RGBColor(148, 103, 189)),
    ("index", RGBColor(31, 119, 180)),
    ("gc", RGBColor(140, 86, 75)),
    ("log wait", RGBColor(127, 127, 127)),
];

/// Colours of other components, picked by a hash of the name (so still
/// fixed per name).
const OTHER_COMPONENT_COLORS: [RGBColor; 6] = [
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(174, 199, 232),
    RGBColor(255, 187, 120),
    RGBColor(197, 176, 213),
];

/// The colour of a breakdown component, by its name (case and surrounding
/// space ignored).
pub fn component_color(name: &str) -> RGBColor {
    let key = name.trim().to_ascii_lowercase();
    if let Some((_, c)) = COMPONENT_COLORS.iter().find(|(n, _)| *n == key) {
        return *c;
    }
    // FNV-1a: stable across runs and builds (std's hasher is not).
    let h = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    OTHER_COMPONENT_COLORS[(h % OTHER_COMPONENT_COLORS.len() as u64) as usize]
}

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

/// One series of a chart (a line, or one bar of each group): a value (or
/// none) per x value.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<Option<Point>>,
}

/// A chart of values against x values: lines when x is numeric, grouped
/// bars otherwise (see the module's documentation).
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
    /// The series; each has one entry per x value.
    pub series: Vec<Series>,
}

/// Whether a chart of these x values draws bars (categories) or lines
/// (numbers).
pub fn is_categorical(x: &[String]) -> bool {
    positions(x).0 == Scale::Categorical
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

/// A linear axis over `lo..hi` with ticks exactly at `ticks` (and no light
/// mesh lines between them): the x axis of charts, the row axis of
/// breakdowns.
struct Axis {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Axis {
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

/// Creates the directory a file goes into, if needed (such as the default
/// `bench-out`), but never its missing parents.
fn make_parent(path: &Path) -> Result<(), String> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => crate::cli::create_output_dir("output directory", dir),
        None => Ok(()),
    }
}

/// What one image shows.
enum Figure<'a> {
    Chart(&'a Chart),
    TimeSeries { title: &'a str, subtitle: &'a str, series: &'a [(String, Vec<f64>)] },
    Breakdown { title: &'a str, subtitle: &'a str, unit: &'a str, rows: &'a [(String, Vec<(String, f64)>)] },
}

/// Writes the chart as `PREFIX.svg` and `PREFIX.png`, creating the directory
/// if needed; returns both paths.
pub fn write(chart: &Chart, prefix: &Path) -> Result<[PathBuf; 2], String> {
    make_parent(prefix)?;
    let svg = with_ext(prefix, "svg");
    let png = with_ext(prefix, "png");
    write_svg(chart, &svg)?;
    write_png(chart, &png)?;
    Ok([svg, png])
}

/// Writes the chart as an SVG file.
pub fn write_svg(chart: &Chart, path: &Path) -> Result<(), String> {
    save(path, &Figure::Chart(chart), "svg")
}

/// The chart as an SVG document.
pub fn svg_string(chart: &Chart) -> Result<String, String> {
    figure_svg(&Figure::Chart(chart))
}

/// Writes the chart as a PNG file (8-bit RGB).
pub fn write_png(chart: &Chart, path: &Path) -> Result<(), String> {
    let bytes = png_bytes(chart)?;
    make_parent(path)?;
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The chart as PNG file contents.
pub fn png_bytes(chart: &Chart) -> Result<Vec<u8>, String> {
    figure_png(&Figure::Chart(chart))
}

/// The throughput of one run, second by second: x is the second (the value
/// of second `i`, counted from 1, is drawn at `i`), y transactions per
/// second, one line per series (e.g. one per protocol, or "committed" and
/// "aborted"). Values that are not finite are left out. Written as SVG or
/// PNG by the extension of `path` (`.svg`, `.png`); `subtitle` may hold
/// several lines separated by `\n`.
pub fn time_series(path: &Path, title: &str, subtitle: &str, series: &[(String, Vec<f64>)]) -> Result<(), String> {
    save_by_ext(path, &Figure::TimeSeries { title, subtitle, series })
}

/// Where each transaction's time went: one stacked horizontal bar per row
/// (e.g. "silo / serializable"), one segment per component (e.g. "useful
/// work", "abort", "validation", "lock wait", "index", "gc", "log wait"),
/// each component in the same colour in every chart ([`component_color`]),
/// stacked in the order the components first appear. The unit is read
/// from the values: when every value is within 0..=1 and every row sums to
/// at most 1, they are shares of the time (axis "share of each
/// transaction's time", ticks in percent); otherwise nanoseconds per
/// transaction. [`breakdown_in`] names the unit instead. Written as SVG or
/// PNG by the extension of `path`.
pub fn breakdown(
    path: &Path,
    title: &str,
    subtitle: &str,
    rows: &[(String, Vec<(String, f64)>)],
) -> Result<(), String> {
    let unit = if fractions(rows) { "share of each transaction's time" } else { "ns per transaction" };
    breakdown_in(path, title, subtitle, unit, rows)
}

/// [`breakdown`] with the value axis named by the caller (`unit`, e.g.
/// "µs per transaction"); ticks are percentages when the values are
/// fractions (see [`breakdown`]).
pub fn breakdown_in(
    path: &Path,
    title: &str,
    subtitle: &str,
    unit: &str,
    rows: &[(String, Vec<(String, f64)>)],
) -> Result<(), String> {
    save_by_ext(path, &Figure::Breakdown { title, subtitle, unit, rows })
}

/// [`breakdown_in`] as an SVG document (for a page that inlines it).
pub fn breakdown_svg(
    title: &str,
    subtitle: &str,
    unit: &str,
    rows: &[(String, Vec<(String, f64)>)],
) -> Result<String, String> {
    figure_svg(&Figure::Breakdown { title, subtitle, unit, rows })
}

/// Whether a breakdown's values are shares of a whole.
fn fractions(rows: &[(String, Vec<(String, f64)>)]) -> bool {
    rows.iter().all(|(_, parts)| {
        parts.iter().all(|(_, v)| (0.0..=1.0).contains(v)) && parts.iter().map(|(_, v)| v).sum::<f64>() <= 1.0 + 1e-6
    })
}

/// Writes `fig` in the format `path`'s extension names.
fn save_by_ext(path: &Path, fig: &Figure) -> Result<(), String> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some(e @ ("svg" | "png")) => save(path, fig, e),
        _ => Err(format!("{}: a plot's file name ends in .svg or .png", path.display())),
    }
}

/// Writes `fig` to `path` as `format` ("svg" or "png").
fn save(path: &Path, fig: &Figure, format: &str) -> Result<(), String> {
    let bytes = if format == "svg" { figure_svg(fig)?.into_bytes() } else { figure_png(fig)? };
    make_parent(path)?;
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn figure_svg(fig: &Figure) -> Result<String, String> {
    font()?;
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, SIZE).into_drawing_area();
        draw_figure(&root, fig)?;
        root.present().map_err(|e| format!("cannot draw the SVG plot: {e}"))?;
    }
    Ok(text)
}

fn figure_png(fig: &Figure) -> Result<Vec<u8>, String> {
    font()?;
    let (w, h) = SIZE;
    let mut rgb = vec![255u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw_figure(&root, fig)?;
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

fn draw_figure<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    match fig {
        Figure::Chart(c) => draw(root, c),
        Figure::TimeSeries { title, subtitle, series } => draw_time_series(root, title, subtitle, series),
        Figure::Breakdown { title, subtitle, unit, rows } => draw_breakdown(root, title, subtitle, unit, rows),
    }
}

/// The message of a drawing error.
fn fail<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> String {
    format!("cannot draw the plot: {e}")
}

/// A white background, the title and the notes under it; returns the area
/// left for the chart.
fn header<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    notes: &[&str],
) -> Result<DrawingArea<DB, Shift>, String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(fail)?;
    // The top margin keeps the title's ascenders inside the bitmap.
    let mut area = root.margin(10, 0, 0, 0).titled(title, (FONT, 22).into_font().color(&BLACK)).map_err(fail)?;
    for note in notes {
        area = area.titled(note, (FONT, 14).into_font().color(&RGBColor(80, 80, 80))).map_err(fail)?;
    }
    Ok(area)
}

/// Room above the highest value for a legend of `entries` lines drawn in
/// the upper corner: the factor to apply to the highest value.
fn legend_headroom(entries: usize) -> f64 {
    1.12 + 0.07 * entries as f64
}

/// Draws `chart` on `root` (any backend): lines or grouped bars.
mod draw;
#[cfg(test)]
mod tests;

use draw::*;
