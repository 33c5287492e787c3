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
static FONT_BYTES: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");

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

/// Creates the directory a file goes into, if needed.
fn make_parent(path: &Path) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    Ok(())
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
fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    if chart.x.is_empty() {
        return Err("nothing to plot: no x values".into());
    }
    if let Some(s) = chart.series.iter().find(|s| s.points.len() != chart.x.len()) {
        return Err(format!("plot series '{}' has {} points for {} x values", s.name, s.points.len(), chart.x.len()));
    }
    let notes: Vec<&str> = chart.notes.iter().map(String::as_str).collect();
    let area = header(root, &chart.title, &notes)?;

    let (scale, pos) = positions(&chart.x);
    let bars = scale == Scale::Categorical;
    let (lo, hi) = pos.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &p| (a.min(p), b.max(p)));
    let pad = if hi > lo { (hi - lo) * 0.06 } else { 1.0 };
    let pad = if bars { 0.5 } else { pad };
    let points = || chart.series.iter().flat_map(|s| s.points.iter().flatten());
    let y_top = points().map(|p| p.hi.max(p.y)).fold(0.0, f64::max);
    let y_max = if y_top > 0.0 { y_top * legend_headroom(chart.series.len()) } else { 1.0 };

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
        .build_cartesian_2d(Axis { lo: lo - pad, hi: hi + pad, ticks: pos.clone() }, 0.0..y_max)
        .map_err(fail)?;
    let mut mesh = c.configure_mesh();
    mesh.x_labels(pos.len())
        .y_labels(8)
        .x_label_formatter(&label_of)
        .y_label_formatter(&|v| si(*v))
        .x_desc(x_name)
        .y_desc(chart.y_name.as_str())
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(220, 220, 220));
    if bars {
        // Vertical grid lines would cut through the bars' groups.
        mesh.disable_x_mesh();
    }
    mesh.draw().map_err(fail)?;

    if bars {
        draw_bars(&mut c, chart, &pos)?;
    } else {
        draw_lines(&mut c, chart, &pos)?;
    }

    // The legend goes where the values are low: top left when lines rise.
    let rising = chart.series.iter().filter(|s| {
        let ys: Vec<f64> = s.points.iter().flatten().map(|p| p.y).collect();
        ys.len() >= 2 && ys[ys.len() - 1] > ys[0]
    });
    let position = if !bars && rising.count() * 2 > chart.series.len() {
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

type Cart<'a, DB> = ChartContext<'a, DB, Cartesian2d<Axis, plotters::coord::types::RangedCoordf64>>;

/// An error bar from `lo` to `hi` at `x`, with caps.
fn error_bar<DB: DrawingBackend>(c: &mut Cart<'_, DB>, x: f64, p: &Point, color: RGBColor) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    c.draw_series(std::iter::once(PathElement::new(vec![(x, p.lo), (x, p.hi)], color.stroke_width(1))))
        .map_err(fail)?;
    for v in [p.lo, p.hi] {
        c.draw_series(std::iter::once(
            EmptyElement::at((x, v)) + PathElement::new(vec![(-4, 0), (4, 0)], color.stroke_width(1)),
        ))
        .map_err(fail)?;
    }
    Ok(())
}

/// One line with markers per series, error bars where a point has a range.
fn draw_lines<'a, DB: DrawingBackend + 'a>(c: &mut Cart<'a, DB>, chart: &Chart, pos: &[f64]) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    for (i, s) in chart.series.iter().enumerate() {
        let color = series_color(i);
        let mut pts: Vec<(f64, Point)> = pos.iter().zip(&s.points).filter_map(|(&x, p)| p.map(|p| (x, p))).collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        c.draw_series(LineSeries::new(pts.iter().map(|(x, p)| (*x, p.y)), color.stroke_width(2)))
            .map_err(fail)?
            .label(s.name.as_str())
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (24, 0)], color.stroke_width(2))
                    + marker(i, (12, 0), color)
            });
        for (x, p) in pts.iter().filter(|(_, p)| p.hi > p.lo) {
            error_bar(c, *x, p, color)?;
        }
        c.draw_series(pts.iter().map(|(x, p)| EmptyElement::at((*x, p.y)) + marker(i, (0, 0), color))).map_err(fail)?;
    }
    Ok(())
}

/// Grouped bars: one group per x value (0, 1, 2, ...), one bar per series
/// in series order; error bars over the bars where a point has a range.
fn draw_bars<'a, DB: DrawingBackend + 'a>(c: &mut Cart<'a, DB>, chart: &Chart, pos: &[f64]) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    // A group fills 80% of its slot; bars leave a small gap between them.
    let n = chart.series.len().max(1) as f64;
    let slot = 0.8 / n;
    let span = |x: f64, j: usize| {
        let x0 = x - 0.4 + j as f64 * slot;
        (x0 + slot * 0.06, x0 + slot * 0.94)
    };
    for (j, s) in chart.series.iter().enumerate() {
        let color = series_color(j);
        let bars = pos.iter().zip(&s.points).filter_map(|(&x, p)| p.map(|p| (x, p))).map(|(x, p)| {
            let (x0, x1) = span(x, j);
            Rectangle::new([(x0, 0.0), (x1, p.y)], color.filled())
        });
        c.draw_series(bars)
            .map_err(fail)?
            .label(s.name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 18, y + 6)], color.filled()));
    }
    // After every bar, so no bar hides another's error bar.
    let ink = RGBColor(30, 30, 30);
    for (j, s) in chart.series.iter().enumerate() {
        for (&x, p) in pos.iter().zip(&s.points) {
            if let Some(p) = p.filter(|p| p.hi > p.lo) {
                let (x0, x1) = span(x, j);
                error_bar(c, (x0 + x1) / 2.0, &p, ink)?;
            }
        }
    }
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

/// The subtitle's lines (empty ones dropped).
fn subtitle_lines(subtitle: &str) -> Vec<&str> {
    subtitle.lines().map(str::trim).filter(|l| !l.is_empty()).collect()
}

fn draw_time_series<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: &str,
    series: &[(String, Vec<f64>)],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let seconds = series.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    if seconds == 0 {
        return Err("nothing to plot: no per-second values".into());
    }
    let area = header(root, title, &subtitle_lines(subtitle))?;
    let finite = |v: &f64| v.is_finite();
    let top = series.iter().flat_map(|(_, v)| v.iter().filter(|v| finite(v))).fold(0.0, |a: f64, &b| a.max(b));
    let y_max = if top > 0.0 { top * legend_headroom(series.len()) } else { 1.0 };
    let mut c = ChartBuilder::on(&area)
        .margin(18)
        .x_label_area_size(52)
        .y_label_area_size(78)
        .build_cartesian_2d(0.0..seconds as f64, 0.0..y_max)
        .map_err(fail)?;
    c.configure_mesh()
        // One label per second while they fit, so none falls between seconds.
        .x_labels((seconds + 1).min(12))
        .y_labels(8)
        .x_label_formatter(&|v| si(*v))
        .y_label_formatter(&|v| si(*v))
        .x_desc("second of the run")
        .y_desc("throughput (txn/s)")
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(220, 220, 220))
        .draw()
        .map_err(fail)?;
    // Markers only while they stay apart.
    let markers = seconds <= 40;
    for (i, (name, values)) in series.iter().enumerate() {
        let color = series_color(i);
        let pts: Vec<(f64, f64)> =
            values.iter().enumerate().filter(|(_, v)| finite(v)).map(|(s, v)| ((s + 1) as f64, *v)).collect();
        c.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(fail)?
            .label(name.as_str())
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (24, 0)], color.stroke_width(2))
                    + marker(i, (12, 0), color)
            });
        if markers {
            c.draw_series(pts.iter().map(|&p| EmptyElement::at(p) + marker(i, (0, 0), color))).map_err(fail)?;
        }
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(160, 160, 160))
        .draw()
        .map_err(fail)?;
    Ok(())
}

fn draw_breakdown<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: &str,
    unit: &str,
    rows: &[(String, Vec<(String, f64)>)],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    if rows.is_empty() {
        return Err("nothing to plot: no rows".into());
    }
    if let Some((row, (part, v))) =
        rows.iter().flat_map(|(r, parts)| parts.iter().map(move |p| (r, p))).find(|(_, (_, v))| v.is_nan() || *v < 0.0)
    {
        return Err(format!("breakdown row '{row}': component '{part}' is {v}, not a number of at least 0"));
    }
    let shares = fractions(rows);
    // Components in order of first appearance: that is the stacking order.
    let mut parts: Vec<&str> = Vec::new();
    for (_, ps) in rows {
        for (p, _) in ps {
            if !parts.contains(&p.as_str()) {
                parts.push(p);
            }
        }
    }
    let area = header(root, title, &subtitle_lines(subtitle))?;

    // The legend: a strip on the right, one swatch and name per component.
    let label_font = TextStyle::from((FONT, 14).into_font());
    let width = |s: &str| area.estimate_text_size(s, &label_font).map(|(w, _)| w as i32).unwrap_or(8);
    let (aw, _) = area.dim_in_pixel();
    let legend_w = (parts.iter().map(|p| width(p)).max().unwrap_or(0) + 44).min(aw as i32 / 3);
    let (plot_area, legend) = area.split_horizontally(aw as i32 - legend_w);
    for (k, p) in parts.iter().enumerate() {
        let y = 24 + 22 * k as i32;
        let swatch = Rectangle::new([(8, y - 7), (22, y + 7)], component_color(p).filled());
        legend.draw(&swatch).map_err(fail)?;
        let text = Text::new(p.to_string(), (30, y), label_font.clone().pos(Pos::new(HPos::Left, VPos::Center)));
        legend.draw(&text).map_err(fail)?;
    }

    let total = |ps: &[(String, f64)]| ps.iter().map(|(_, v)| v).sum::<f64>();
    let top = rows.iter().map(|(_, ps)| total(ps)).fold(0.0, f64::max);
    // Room right of the longest bar for its total.
    let x_max = if shares {
        1.15
    } else if top > 0.0 {
        top * 1.15
    } else {
        1.0
    };
    let label_w = (rows.iter().map(|(r, _)| width(r)).max().unwrap_or(0) + 16).min(aw as i32 / 3);
    let n = rows.len();
    // Row i sits at n-1-i, so the first row is at the top.
    let at = |i: usize| (n - 1 - i) as f64;
    let names: Vec<(f64, String)> = rows.iter().enumerate().map(|(i, (r, _))| (at(i), r.clone())).collect();
    let name_of =
        |v: &f64| names.iter().find(|(p, _)| (p - v).abs() < 1e-9).map(|(_, s)| s.clone()).unwrap_or_default();
    let value_text = |v: f64| if shares { format!("{:.0}%", v * 100.0) } else { si(v) };
    let mut c = ChartBuilder::on(&plot_area)
        .margin(18)
        .x_label_area_size(52)
        .y_label_area_size(label_w as u32)
        .build_cartesian_2d(
            0.0..x_max,
            Axis { lo: -0.5, hi: n as f64 - 0.5, ticks: names.iter().map(|(p, _)| *p).collect() },
        )
        .map_err(fail)?;
    c.configure_mesh()
        .x_labels(8)
        .y_labels(n)
        .x_label_formatter(&|v| value_text(*v))
        .y_label_formatter(&name_of)
        .x_desc(unit)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(220, 220, 220))
        .disable_y_mesh()
        .draw()
        .map_err(fail)?;
    // A bar fills 70% of its row.
    for p in &parts {
        let color = component_color(p);
        let mut segs = Vec::new();
        for (i, (_, ps)) in rows.iter().enumerate() {
            // A component given twice in a row is stacked twice.
            let mut start = 0.0;
            for (q, v) in ps {
                if q == p && *v > 0.0 {
                    segs.push(Rectangle::new([(start, at(i) - 0.35), (start + v, at(i) + 0.35)], color.filled()));
                }
                start += v;
            }
        }
        c.draw_series(segs).map_err(fail)?;
    }
    let ink = (FONT, 13).into_font().color(&RGBColor(60, 60, 60)).pos(Pos::new(HPos::Left, VPos::Center));
    c.draw_series(rows.iter().enumerate().map(|(i, (_, ps))| {
        EmptyElement::at((total(ps), at(i))) + Text::new(value_text(total(ps)), (6, 0), ink.clone())
    }))
    .map_err(fail)?;
    Ok(())
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
        for s in ["silo / serializable", "mv-occ / snapshot", "tpcc: throughput per second", "4 threads", "commit abc"]
        {
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
        for s in [
            "silo / serializable",
            "mv-lock / serializable",
            "useful work",
            "validation",
            "abort",
            "lock wait",
            "fsync",
        ] {
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
}
