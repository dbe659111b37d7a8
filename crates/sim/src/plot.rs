//! PNG plots: miss ratio against cache size, one line per policy (all tenants), and, with
//! `--report-interval`, miss ratio over time, one plot per cache size.
//!
//! Drawn with `plotters`' bitmap backend. Text is rasterized by `ab_glyph` from DejaVu Sans
//! Mono, embedded in the binary (`assets/fonts/` at the repository root, Bitstream Vera
//! licence), so plotting needs no system fonts or fontconfig. The same report gives the same
//! PNG bytes.
//!
//! # Reading a plot
//! - **Every policy has its own colour, line style and marker**, fixed per known policy, so
//!   curves stay apart in grey-scale print and where colours are hard to tell apart.
//! - **The engine is emphasised**: thick solid red lines with large filled markers, drawn on
//!   top of the reference policies; Belady (the offline optimum) is black.
//! - **Reference policies whose curves coincide** (the same value at every point, e.g. LRU,
//!   CLOCK and SIEVE when the cache holds everything) are drawn once, labelled with every
//!   name (`lru = clock`), and a note under the legend says so. The engine is never merged.
//! - **A truncated axis is marked**: when the y axis does not start at 0, a break mark (two
//!   slanted strokes) sits at its foot and a note gives where it starts.
//! - The miss-ratio-curve x axis is logarithmic (base 2), in bytes, or in objects with
//!   `--capacity-unit objects`; the over-time x axis is linear, in requests.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::error::Error;
use crate::results::{CapacityUnit, Report, bytes};

static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSansMono.ttf");
static REGISTER: Once = Once::new();

const SIZE: (u32, u32) = (900, 520);
/// Pixels at the right kept for the legend and notes.
const LEGEND_WIDTH: u32 = 230;

/// Line colours: red for the engine, then distinct print-friendly ones (Tableau 10 and two
/// darker shades); Belady is black.
const COLORS: [RGBColor; 12] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 128),
    RGBColor(128, 128, 0),
];

/// Policies with a fixed look, in the order of [`COLORS`].
const KNOWN: [&str; 11] = [
    "fridge",
    "lru",
    "fifo",
    "clock",
    "s3fifo",
    "sieve",
    "redis5",
    "redis10",
    "memcached",
    "memcached-automove",
    "partitioned-lru",
];

fn register_font() {
    REGISTER.call_once(|| {
        // The embedded font is a valid TTF; if it were not, text would be missing, not wrong.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// How a line is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dash {
    Solid,
    Dashed,
    Dotted,
    Long,
}

/// A point marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Marker {
    Circle,
    Square,
    Triangle,
    Cross,
    Diamond,
    None,
}

/// What a policy's line looks like.
#[derive(Clone, Copy, Debug)]
struct Look {
    color: RGBColor,
    dash: Dash,
    marker: Marker,
    width: u32,
    emphasised: bool,
}

/// The look of `policy` (the `index`-th series): fixed per known policy, so a policy looks
/// the same in every plot; engine policies are thick and solid, Belady black.
fn look_of(policy: &str, index: usize) -> Look {
    const DASHES: [Dash; 4] = [Dash::Dashed, Dash::Dotted, Dash::Long, Dash::Solid];
    const MARKERS: [Marker; 5] =
        [Marker::Square, Marker::Triangle, Marker::Cross, Marker::Diamond, Marker::Circle];
    if policy.starts_with("fridge") {
        // The default engine is solid red; other rank functions and budgets are dashed, in
        // darker or warmer reds.
        const VARIANTS: [RGBColor; 3] =
            [RGBColor(140, 0, 0), RGBColor(240, 100, 0), RGBColor(110, 50, 50)];
        let default = policy == "fridge";
        return Look {
            color: if default { COLORS[0] } else { VARIANTS[index % VARIANTS.len()] },
            dash: if default { Dash::Solid } else { Dash::Dashed },
            marker: Marker::Circle,
            width: 3,
            emphasised: true,
        };
    }
    let i = KNOWN.iter().position(|k| *k == policy).unwrap_or(index + KNOWN.len());
    let color = if policy == "belady" { BLACK } else { COLORS[i % COLORS.len()] };
    let (dash, marker) = if policy == "belady" {
        (Dash::Dotted, Marker::None)
    } else {
        (DASHES[i % DASHES.len()], MARKERS[i % MARKERS.len()])
    };
    Look { color, dash, marker, width: 1, emphasised: false }
}

/// One line: its label (several names when curves coincide), look and points.
struct Line {
    /// Position of the (first) policy in the report, for the legend's order.
    index: usize,
    label: String,
    look: Look,
    points: Vec<(f64, f64)>,
}

/// Merges reference-policy series with identical points into one line each; returns the
/// lines (engine ones last, so they are drawn on top) and a note per merged group.
fn merge_coinciding(series: Vec<(String, Vec<(f64, f64)>)>) -> (Vec<Line>, Vec<String>) {
    // (names, position of the first, points)
    type Group = (Vec<String>, usize, Vec<(f64, f64)>);
    let mut lines: Vec<Group> = Vec::new();
    for (i, (policy, points)) in series.into_iter().enumerate() {
        let same = |other: &[(f64, f64)]| {
            other.len() == points.len()
                && other.iter().zip(&points).all(|(a, b)| a.0 == b.0 && (a.1 - b.1).abs() < 1e-9)
        };
        let mergeable = !policy.starts_with("fridge");
        match lines
            .iter_mut()
            .find(|(names, _, p)| mergeable && !names[0].starts_with("fridge") && same(p))
        {
            Some((names, _, _)) => names.push(policy),
            None => lines.push((vec![policy], i, points)),
        }
    }
    let mut notes = Vec::new();
    let mut out: Vec<Line> = lines
        .into_iter()
        .map(|(names, i, points)| {
            if names.len() > 1 {
                notes.push(format!("{} coincide: drawn once", names.join(", ")));
            }
            Line { index: i, label: names.join(" = "), look: look_of(&names[0], i), points }
        })
        .collect();
    out.sort_by_key(|l| l.look.emphasised);
    (out, notes)
}

/// Draws miss ratio (or byte miss ratio when `by_bytes`) against cache size into `path`.
///
/// # Errors
/// Nothing to plot, or the PNG cannot be drawn or written.
pub fn miss_ratio_curves(report: &Report, path: &Path, by_bytes: bool) -> Result<(), Error> {
    let objects = report.capacity_unit == CapacityUnit::Objects;
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in report.rows.iter().filter(|r| r.tenant == "all") {
        let y = if by_bytes { r.byte_miss_ratio } else { r.miss_ratio };
        let x = if objects { r.cache_objects.unwrap_or(r.cache_bytes) } else { r.cache_bytes };
        let point = ((x.max(1) as f64).log2(), y);
        match series.iter_mut().find(|(p, _)| *p == r.policy) {
            Some((_, points)) => points.push(point),
            None => series.push((r.policy.clone(), vec![point])),
        }
    }
    series.sort_by_key(|(p, _)| report.policies.iter().position(|q| q == p));
    let what = if by_bytes { "byte miss ratio" } else { "miss ratio" };
    let x_desc = if objects {
        "cache size in objects, log scale (engine, memcached: bytes for that many mean objects)"
    } else {
        "cache size, log scale (engine: max_memory; others: object bytes)"
    };
    let chart = Chart {
        title: format!("{}: {what}", report.source),
        x_desc,
        y_desc: what,
        log_x: true,
        objects,
    };
    plot(&chart, series, path)
}

/// Draws the interval miss ratio over time, one PNG per cache size, into `dir`
/// (`miss_ratio_over_time_<size><B|obj>.png`); nothing when the report has no timeline.
///
/// # Errors
/// A PNG cannot be drawn or written.
pub fn miss_ratio_over_time(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let objects = report.capacity_unit == CapacityUnit::Objects;
    let mut sizes: Vec<u64> = report.timeline.iter().map(|p| p.cache_size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut written = Vec::new();
    for size in sizes {
        let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for p in report.timeline.iter().filter(|p| p.cache_size == size) {
            let point = (p.requests as f64, p.interval_miss_ratio);
            match series.iter_mut().find(|(q, _)| *q == p.policy) {
                Some((_, points)) => points.push(point),
                None => series.push((p.policy.clone(), vec![point])),
            }
        }
        series.sort_by_key(|(p, _)| report.policies.iter().position(|q| q == p));
        let (name, shown) = if objects {
            (format!("{size}obj"), format!("{size} objects"))
        } else {
            (format!("{size}B"), bytes(size))
        };
        let path = dir.join(format!("miss_ratio_over_time_{name}.png"));
        let chart = Chart {
            title: format!("{}: miss ratio over time, cache {shown}", report.source),
            x_desc: "requests served (each point: the interval ending there)",
            y_desc: "interval miss ratio",
            log_x: false,
            objects,
        };
        plot(&chart, series, &path)?;
        written.push(path);
    }
    Ok(written)
}

/// What a plot shows.
struct Chart {
    title: String,
    x_desc: &'static str,
    y_desc: &'static str,
    /// x values are log2 of sizes (labelled as sizes) rather than plain numbers.
    log_x: bool,
    /// Sizes are object counts rather than bytes.
    objects: bool,
}

fn plot(chart: &Chart, series: Vec<(String, Vec<(f64, f64)>)>, path: &Path) -> Result<(), Error> {
    register_font();
    let err = |e: &dyn std::fmt::Display| Error::Output(format!("{}: {e}", path.display()));
    if series.is_empty() {
        return Err(Error::Output(format!("{}: no rows to plot", path.display())));
    }
    let (lines, mut notes) = merge_coinciding(series);
    let xs = lines.iter().flat_map(|l| l.points.iter().map(|&(x, _)| x));
    let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let pad = if chart.log_x { ((hi - lo) * 0.05).max(0.5) } else { (hi - lo) * 0.03 };
    let (lo, hi) = (if chart.log_x { lo - pad } else { 0.0 }, hi + pad.max(1.0));
    let ys = || lines.iter().flat_map(|l| l.points.iter().map(|&(_, y)| y));
    let ymax = (ys().fold(0.0f64, f64::max).max(0.01) * 1.05).min(1.0);
    // Start the y axis at the tenth below the lowest point, so flat curves stay readable; a
    // y axis that does not start at 0 is marked as truncated.
    let ymin = ((((ys().fold(1.0f64, f64::min)) - 0.02) * 10.0).floor() / 10.0).max(0.0);
    if ymin > 0.0 {
        notes.push(format!("y axis truncated: starts at {ymin:.1}"));
    }
    let mut pixels = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    draw(chart, &lines, &notes, (lo, hi, ymin, ymax), &mut pixels).map_err(|e| err(&e))?;
    encode_png(&pixels, path).map_err(|e| err(&e))
}

fn draw(
    chart: &Chart,
    lines: &[Line],
    notes: &[String],
    (lo, hi, ymin, ymax): (f64, f64, f64, f64),
    pixels: &mut [u8],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = BitMapBackend::with_buffer(pixels, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    // The legend gets its own column at the right, so it never hides a curve.
    let (plot_area, legend_area) = root.split_horizontally(SIZE.0 - LEGEND_WIDTH);
    let mut ctx = ChartBuilder::on(&plot_area)
        .caption(&chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(lo..hi, ymin..ymax)?;
    let size_label = |x: &f64| {
        let n = x.exp2().round() as u64;
        if chart.objects { count(n) } else { bytes(n) }
    };
    let plain_label = |x: &f64| count(x.round().max(0.0) as u64);
    let x_fmt: &dyn Fn(&f64) -> String = if chart.log_x { &size_label } else { &plain_label };
    ctx.configure_mesh()
        .x_desc(chart.x_desc)
        .y_desc(chart.y_desc)
        .x_label_formatter(x_fmt)
        .x_labels(8)
        .light_line_style(TRANSPARENT)
        .y_label_formatter(&|y| format!("{y:.2}"))
        .label_style(("sans-serif", 13))
        .draw()?;
    if ymin > 0.0 {
        // An axis break at the foot of the y axis: two parallel slanted strokes.
        let (x0, y0) = ctx.backend_coord(&(lo, ymin));
        for dy in [-10, -4] {
            let stroke = [(x0 - 6, y0 + dy + 4), (x0 + 6, y0 + dy - 4)];
            plot_area.draw(&PathElement::new(stroke.to_vec(), BLACK.stroke_width(2)))?;
        }
    }
    for line in lines {
        let look = line.look;
        let style =
            ShapeStyle { color: look.color.to_rgba(), filled: true, stroke_width: look.width };
        let pts = line.points.iter().copied();
        match look.dash {
            Dash::Solid => {
                ctx.draw_series(LineSeries::new(pts, style))?;
            }
            Dash::Dashed => {
                ctx.draw_series(DashedLineSeries::new(pts, 10, 6, style))?;
            }
            Dash::Dotted => {
                ctx.draw_series(DashedLineSeries::new(pts, 2, 4, style))?;
            }
            Dash::Long => {
                ctx.draw_series(DashedLineSeries::new(pts, 18, 5, style))?;
            }
        }
        let r = if look.emphasised { 5 } else { 4 };
        for &p in &line.points {
            let at = ctx.backend_coord(&p);
            draw_marker(&plot_area, look.marker, at, r, style)?;
        }
    }
    // The legend: engine lines first, then the others in report order.
    let mut legend: Vec<&Line> = lines.iter().collect();
    legend.sort_by_key(|l| (!l.look.emphasised, l.index));
    let mut y = 50;
    for line in legend {
        let look = line.look;
        let style = ShapeStyle {
            color: look.color.to_rgba(),
            filled: true,
            stroke_width: look.width.max(2),
        };
        let seg = vec![(4, y), (40, y)];
        match look.dash {
            Dash::Solid => legend_area.draw(&PathElement::new(seg, style))?,
            Dash::Dashed => legend_area.draw(&DashedPathElement::new(seg, 8, 4, style))?,
            Dash::Dotted => legend_area.draw(&DashedPathElement::new(seg, 2, 4, style))?,
            Dash::Long => legend_area.draw(&DashedPathElement::new(seg, 14, 4, style))?,
        }
        draw_marker(&legend_area, look.marker, (22, y), 4, style)?;
        for (k, part) in wrap(&line.label, 22).iter().enumerate() {
            let size = if look.emphasised { 15 } else { 13 };
            legend_area.draw(&Text::new(
                part.clone(),
                (46, y - 7 + 15 * k as i32),
                ("sans-serif", size),
            ))?;
            if k > 0 {
                y += 15;
            }
        }
        y += 22;
    }
    y += 10;
    for note in notes {
        for part in wrap(note, 30) {
            legend_area.draw(&Text::new(part, (4, y), ("sans-serif", 12)))?;
            y += 15;
        }
        y += 4;
    }
    root.present()?;
    Ok(())
}

fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    marker: Marker,
    (x, y): (i32, i32),
    r: i32,
    style: ShapeStyle,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let hollow = ShapeStyle { filled: false, stroke_width: 2, ..style };
    match marker {
        Marker::None => Ok(()),
        Marker::Circle => area.draw(&Circle::new((x, y), r, style)),
        Marker::Square => area.draw(&Rectangle::new([(x - r, y - r), (x + r, y + r)], hollow)),
        Marker::Triangle => area.draw(&TriangleMarker::new((x, y), r + 1, style)),
        Marker::Cross => area.draw(&Cross::new((x, y), r, hollow)),
        Marker::Diamond => area.draw(&Polygon::new(
            vec![(x, y - r - 1), (x + r + 1, y), (x, y + r + 1), (x - r - 1, y)],
            style,
        )),
    }
}

/// `n` with k/M/G suffixes (decimal), for object and request counts.
fn count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1}M", n as f64 / 1e6),
        _ => format!("{:.1}G", n as f64 / 1e9),
    }
}

/// Splits `text` into lines of at most `width` characters at spaces (a longer word stays
/// whole).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(last) if last.len() + 1 + word.len() <= width => {
                last.push(' ');
                last.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    lines
}

/// Writes RGB `pixels` as a PNG with the strongest compression (plots are mostly flat
/// colour, so this keeps them around tens of kilobytes).
fn encode_png(pixels: &[u8], path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut encoder = png::Encoder::new(file, SIZE.0, SIZE.1);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Best);
    encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(pixels)?;
    writer.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coinciding_reference_curves_merge_but_the_engine_stays_apart() {
        let a = vec![(1.0, 0.5), (2.0, 0.25)];
        let b = vec![(1.0, 0.6), (2.0, 0.3)];
        let series = vec![
            ("fridge".to_owned(), a.clone()),
            ("lru".to_owned(), a.clone()),
            ("clock".to_owned(), a.clone()),
            ("fifo".to_owned(), b),
            ("sieve".to_owned(), a),
        ];
        let (lines, notes) = merge_coinciding(series);
        let labels: Vec<&str> = lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["lru = clock = sieve", "fifo", "fridge"], "engine drawn last");
        assert_eq!(notes, ["lru, clock, sieve coincide: drawn once"]);
    }

    #[test]
    fn every_known_policy_has_its_own_look() {
        let mut seen = Vec::new();
        for (i, p) in KNOWN.iter().chain(&["belady"]).enumerate() {
            let l = look_of(p, i);
            let key = (l.color, l.dash, l.marker);
            assert!(!seen.contains(&key), "{p} looks like another policy");
            seen.push(key);
        }
        let engine = look_of("fridge", 0);
        assert!(engine.emphasised && engine.width > look_of("lru", 1).width);
        assert!(look_of("fridge-lru", 3).emphasised);
    }

    #[test]
    fn labels_wrap_and_counts_shorten() {
        assert_eq!(wrap("lru = clock = sieve = fifo", 12), ["lru = clock", "= sieve =", "fifo"]);
        assert_eq!(count(999), "999");
        assert_eq!(count(1500), "1.5k");
        assert_eq!(count(2_000_000), "2.0M");
    }
}
