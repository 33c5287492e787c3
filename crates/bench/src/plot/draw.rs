//! Drawing a figure: a chart's lines or grouped bars with markers and
//! error bars, the per-second series, and the breakdown's stacked bars.

use super::*;

pub(super) fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart) -> Result<(), String>
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
pub(super) fn error_bar<DB: DrawingBackend>(
    c: &mut Cart<'_, DB>,
    x: f64,
    p: &Point,
    color: RGBColor,
) -> Result<(), String>
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
pub(super) fn draw_lines<'a, DB: DrawingBackend + 'a>(
    c: &mut Cart<'a, DB>,
    chart: &Chart,
    pos: &[f64],
) -> Result<(), String>
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
pub(super) fn draw_bars<'a, DB: DrawingBackend + 'a>(
    c: &mut Cart<'a, DB>,
    chart: &Chart,
    pos: &[f64],
) -> Result<(), String>
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
pub(super) fn marker<DB: DrawingBackend>(
    i: usize,
    at: (i32, i32),
    color: RGBColor,
) -> DynElement<'static, DB, (i32, i32)> {
    let (x, y) = at;
    match (i / COLORS.len() + i) % 4 {
        0 => Circle::new((x, y), 4, color.filled()).into_dyn(),
        1 => TriangleMarker::new((x, y), 6, color.filled()).into_dyn(),
        2 => Rectangle::new([(x - 4, y - 4), (x + 4, y + 4)], color.filled()).into_dyn(),
        _ => Cross::new((x, y), 5, color.stroke_width(2)).into_dyn(),
    }
}

/// The subtitle's lines (empty ones dropped).
pub(super) fn subtitle_lines(subtitle: &str) -> Vec<&str> {
    subtitle.lines().map(str::trim).filter(|l| !l.is_empty()).collect()
}

pub(super) fn draw_time_series<DB: DrawingBackend>(
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

pub(super) fn draw_breakdown<DB: DrawingBackend>(
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
