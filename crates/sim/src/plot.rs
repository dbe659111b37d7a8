//! PNG plots of miss ratio against cache size, one line per policy (all tenants).
//!
//! Drawn with `plotters`' bitmap backend. Text is rasterized by `ab_glyph` from DejaVu Sans
//! Mono, embedded in the binary (`assets/fonts/` at the repository root, Bitstream Vera
//! licence), so plotting needs no system fonts or fontconfig. The x axis is logarithmic (base 2, labelled in bytes). The same
//! report gives the same PNG bytes.

use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::error::Error;
use crate::results::{Report, bytes};

static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSansMono.ttf");
static REGISTER: Once = Once::new();

const SIZE: (u32, u32) = (820, 500);
/// Pixels at the right kept for the legend.
const LEGEND_WIDTH: u32 = 170;

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

fn register_font() {
    REGISTER.call_once(|| {
        // The embedded font is a valid TTF; if it were not, text would be missing, not wrong.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// Draws miss ratio (or byte miss ratio when `by_bytes`) against cache size into `path`.
///
/// # Errors
/// Nothing to plot, or the PNG cannot be drawn or written.
pub fn miss_ratio_curves(report: &Report, path: &Path, by_bytes: bool) -> Result<(), Error> {
    register_font();
    let err = |e: &dyn std::fmt::Display| Error::Output(format!("{}: {e}", path.display()));
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in report.rows.iter().filter(|r| r.tenant == "all") {
        let y = if by_bytes { r.byte_miss_ratio } else { r.miss_ratio };
        let point = ((r.cache_bytes.max(1) as f64).log2(), y);
        match series.iter_mut().find(|(p, _)| *p == r.policy) {
            Some((_, points)) => points.push(point),
            None => series.push((r.policy.clone(), vec![point])),
        }
    }
    series.sort_by_key(|(p, _)| report.policies.iter().position(|q| q == p));
    if series.is_empty() {
        return Err(Error::Output(format!("{}: no rows to plot", path.display())));
    }
    let xs = series.iter().flat_map(|(_, p)| p.iter().map(|&(x, _)| x));
    let (lo, hi) = xs.fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let pad = ((hi - lo) * 0.05).max(0.5);
    let (lo, hi) = (lo - pad, hi + pad);
    let ymax =
        series.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y)).fold(0.0f64, f64::max).max(0.01);
    let ymax = (ymax * 1.05).min(1.0);
    let ymin = series.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y)).fold(1.0f64, f64::min);
    // Start the y axis at the tenth below the lowest point, so flat curves stay readable.
    let ymin = (((ymin - 0.02) * 10.0).floor() / 10.0).max(0.0);

    let mut pixels = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    draw(report, &series, (lo, hi, ymin, ymax), by_bytes, &mut pixels).map_err(|e| err(&e))?;
    encode_png(&pixels, path).map_err(|e| err(&e))
}

/// Which colour a policy's line gets: fixed per known policy, so colours mean the same in
/// every plot.
fn color_of(policy: &str, index: usize) -> RGBColor {
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
    match (policy, KNOWN.iter().position(|k| *k == policy)) {
        ("belady", _) => BLACK,
        (_, Some(i)) => COLORS[i],
        (_, None) => COLORS[index % COLORS.len()],
    }
}

type Series = [(String, Vec<(f64, f64)>)];

fn draw(
    report: &Report,
    series: &Series,
    (lo, hi, ymin, ymax): (f64, f64, f64, f64),
    by_bytes: bool,
    pixels: &mut [u8],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = BitMapBackend::with_buffer(pixels, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let what = if by_bytes { "byte miss ratio" } else { "miss ratio" };
    let title = format!("{}: {what}", report.source);
    // The legend gets its own column at the right, so it never hides a curve.
    let (plot_area, legend_area) = root.split_horizontally(SIZE.0 - LEGEND_WIDTH);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(lo..hi, ymin..ymax)?;
    chart
        .configure_mesh()
        .x_desc("cache size, log scale (engine: max_memory; others: object bytes)")
        .y_desc(what)
        .x_label_formatter(&|x| bytes(x.exp2().round() as u64))
        .x_labels(8)
        .light_line_style(TRANSPARENT)
        .y_label_formatter(&|y| format!("{y:.2}"))
        .label_style(("sans-serif", 14))
        .draw()?;
    for (i, (policy, points)) in series.iter().enumerate() {
        let color = color_of(policy, i);
        let width = if policy.starts_with("fridge") { 3 } else { 1 };
        let style = ShapeStyle { color: color.to_rgba(), filled: true, stroke_width: width };
        chart.draw_series(LineSeries::new(points.iter().copied(), style).point_size(3))?;
        let y = 60 + 22 * i as i32;
        let key = ShapeStyle { stroke_width: 3, ..style };
        legend_area.draw(&PathElement::new(vec![(4, y), (28, y)], key))?;
        legend_area.draw(&Text::new(policy.as_str(), (34, y - 8), ("sans-serif", 14)))?;
    }
    root.present()?;
    Ok(())
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
