//! `fridge-bench report`: side-by-side tables and a chart from saved JSON reports.
//!
//! Each report names its server (`--server-name`) and workload (`--workload-name`). The tables
//! put servers side by side per workload, with ratios of the *subject* (default `fridge`) to
//! every other server, or, when the subject did not run, of every server to the first one:
//!
//! - throughput of the run phase, and GET latency percentiles;
//! - GET latency per value-size class, for workloads with more than one class (the thesis mix);
//! - capacity: keys written by the fill phase and how many the scan found resident.
//!
//! The PNG has one panel per measure (throughput, GET p99, resident keys), drawn with plotters'
//! bitmap backend and an embedded font, so it needs no system fonts.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::report::Report;

/// DejaVu Sans Mono, shared with fridge-sim (`assets/fonts/` at the repository root, Bitstream
/// Vera license).
const FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSansMono.ttf");

/// Options of `fridge-bench report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// JSON reports written by `fridge-bench --json`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The server the ratios are about.
    #[arg(long, default_value = "fridge")]
    pub subject: String,
    /// Write the Markdown tables here too (they always go to stdout).
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Write the chart here.
    #[arg(long)]
    pub png: Option<PathBuf>,
}

/// The reports, indexed by server and workload in first-seen order.
#[derive(Debug)]
pub struct Comparison {
    /// Servers, in order of first appearance (the subject first if present).
    pub servers: Vec<String>,
    /// Workloads, in order of first appearance.
    pub workloads: Vec<String>,
    reports: Vec<Report>,
    subject: String,
}

fn push_unique(list: &mut Vec<String>, name: &str) {
    if !list.iter().any(|n| n == name) {
        list.push(name.to_owned());
    }
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "–".into(), |r| format!("{r:.2}×"))
}

fn fmt_num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

impl Comparison {
    /// Indexes `reports`.
    pub fn new(reports: Vec<Report>, subject: &str) -> Self {
        let mut servers = Vec::new();
        let mut workloads = Vec::new();
        if reports.iter().any(|r| r.server == subject) {
            servers.push(subject.to_owned());
        }
        for r in &reports {
            push_unique(&mut servers, &r.server);
            push_unique(&mut workloads, &r.workload);
        }
        Self { servers, workloads, reports, subject: subject.to_owned() }
    }

    fn get(&self, server: &str, workload: &str) -> Option<&Report> {
        self.reports.iter().find(|r| r.server == server && r.workload == workload)
    }

    /// `(numerator, denominator)` pairs for ratio columns.
    fn ratio_pairs(&self) -> Vec<(String, String)> {
        let Some(reference) = self.servers.first() else { return Vec::new() };
        let others = self.servers.iter().skip(1);
        if *reference == self.subject {
            others.map(|o| (reference.clone(), o.clone())).collect()
        } else {
            others.map(|o| (o.clone(), reference.clone())).collect()
        }
    }

    fn throughput(&self, server: &str, workload: &str) -> Option<f64> {
        self.get(server, workload)?.phase("run").map(|p| p.ops_per_s)
    }

    fn get_p99(&self, server: &str, workload: &str) -> Option<f64> {
        Some(self.get(server, workload)?.phase("run")?.row("get", "all")?.summary.p99_us)
    }

    fn resident(&self, server: &str, workload: &str) -> Option<(u64, u64)> {
        let p = self.get(server, workload)?.phase("scan")?;
        Some((p.keys.unwrap_or(0), p.counts.hits))
    }

    fn run_workloads(&self) -> Vec<&String> {
        self.workloads
            .iter()
            .filter(|w| self.servers.iter().any(|s| self.throughput(s, w).is_some()))
            .collect()
    }

    fn capacity_workloads(&self) -> Vec<&String> {
        self.workloads
            .iter()
            .filter(|w| self.servers.iter().any(|s| self.resident(s, w).is_some()))
            .collect()
    }

    /// The Markdown tables.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let pairs = self.ratio_pairs();
        let header = |s: &mut String, first: &str, cols: &[String]| {
            let _ = writeln!(s, "| {first} | {} |", cols.join(" | "));
            let _ = writeln!(s, "|---|{}", "---:|".repeat(cols.len()));
        };
        // Throughput.
        let mut cols: Vec<String> = self.servers.iter().map(|x| format!("{x} ops/s")).collect();
        cols.extend(pairs.iter().map(|(a, b)| format!("{a}/{b}")));
        let _ = writeln!(s, "### Throughput (run phase, replies per second)\n");
        header(&mut s, "workload", &cols);
        for w in self.run_workloads() {
            let mut cells: Vec<String> =
                self.servers.iter().map(|x| fmt_num(self.throughput(x, w), 0)).collect();
            cells.extend(pairs.iter().map(|(a, b)| {
                fmt_ratio(self.throughput(a, w).zip(self.throughput(b, w)).map(|(a, b)| a / b))
            }));
            let _ = writeln!(s, "| {w} | {} |", cells.join(" | "));
        }
        // GET latency.
        let _ = writeln!(s, "\n### GET latency (µs): p50 / p99 / p99.9\n");
        let mut cols: Vec<String> = self.servers.clone();
        cols.extend(pairs.iter().map(|(a, b)| format!("p99 {a}/{b}")));
        header(&mut s, "workload", &cols);
        for w in self.run_workloads() {
            let mut cells: Vec<String> = self
                .servers
                .iter()
                .map(|x| {
                    let row = self.get(x, w).and_then(|r| r.phase("run")?.row("get", "all"));
                    latency_cell(row)
                })
                .collect();
            cells.extend(pairs.iter().map(|(a, b)| {
                fmt_ratio(self.get_p99(a, w).zip(self.get_p99(b, w)).map(|(a, b)| a / b))
            }));
            let _ = writeln!(s, "| {w} | {} |", cells.join(" | "));
        }
        // Size classes.
        for w in self.run_workloads() {
            let classes: BTreeSet<String> = self
                .servers
                .iter()
                .filter_map(|x| self.get(x, w)?.phase("run"))
                .flat_map(|p| p.latency.iter().filter(|r| r.op == "get" && r.class != "all"))
                .map(|r| r.class.clone())
                .collect();
            if classes.len() < 2 {
                continue;
            }
            let _ = writeln!(s, "\n### {w}: GET latency per value size (µs): p50 / p99 / p99.9\n");
            header(&mut s, "value bytes", &self.servers);
            let mut classes: Vec<String> = classes.into_iter().collect();
            classes.sort_by_key(|c| c.split(['-', '+']).next().and_then(|n| n.parse::<u64>().ok()));
            for class in classes {
                let cells: Vec<String> = self
                    .servers
                    .iter()
                    .map(|x| {
                        let row = self.get(x, w).and_then(|r| r.phase("run")?.row("get", &class));
                        latency_cell(row)
                    })
                    .collect();
                let _ = writeln!(s, "| {class} | {} |", cells.join(" | "));
            }
        }
        // Capacity.
        let capacity = self.capacity_workloads();
        if !capacity.is_empty() {
            let _ = writeln!(s, "\n### Capacity: keys written, keys still resident\n");
            let mut cols: Vec<String> =
                self.servers.iter().map(|x| format!("{x} resident")).collect();
            cols.extend(pairs.iter().map(|(a, b)| format!("{a}/{b}")));
            header(&mut s, "workload (keys written)", &cols);
            for w in capacity {
                let written =
                    self.servers.iter().find_map(|x| self.resident(x, w)).map_or(0, |r| r.0);
                let mut cells: Vec<String> = self
                    .servers
                    .iter()
                    .map(|x| match self.resident(x, w) {
                        Some((keys, hits)) => {
                            format!("{hits} ({:.1}%)", hits as f64 * 100.0 / keys.max(1) as f64)
                        }
                        None => "–".into(),
                    })
                    .collect();
                cells.extend(pairs.iter().map(|(a, b)| {
                    let r = self.resident(a, w).zip(self.resident(b, w));
                    fmt_ratio(r.map(|(a, b)| a.1 as f64 / b.1.max(1) as f64))
                }));
                let _ = writeln!(s, "| {w} ({written}) | {} |", cells.join(" | "));
            }
        }
        s
    }

    /// Draws the chart into `path`.
    ///
    /// # Errors
    /// The font or the PNG cannot be written.
    pub fn chart(&self, path: &std::path::Path) -> Result<(), String> {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
            .map_err(|_| "embedded font does not load".to_owned())?;
        let run: Vec<String> = self.run_workloads().into_iter().cloned().collect();
        let capacity: Vec<String> = self.capacity_workloads().into_iter().cloned().collect();
        let panels = 2 + usize::from(!capacity.is_empty());
        let root = BitMapBackend::new(path, (560 * panels as u32, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let areas = root.split_evenly((1, panels));
        let table = |f: &dyn Fn(&str, &str) -> Option<f64>,
                     workloads: &[String]|
         -> Vec<Vec<Option<f64>>> {
            workloads.iter().map(|w| self.servers.iter().map(|x| f(x, w)).collect()).collect()
        };
        let kops = table(&|x, w| self.throughput(x, w).map(|v| v / 1000.0), &run);
        bars(&areas[0], "throughput (k replies/s)", &run, &self.servers, &kops)?;
        let p99 = table(&|x, w| self.get_p99(x, w), &run);
        bars(&areas[1], "GET p99 latency (µs)", &run, &self.servers, &p99)?;
        if !capacity.is_empty() {
            let resident =
                table(&|x, w| self.resident(x, w).map(|r| r.1 as f64 / 1000.0), &capacity);
            bars(&areas[2], "resident keys (thousands)", &capacity, &self.servers, &resident)?;
        }
        root.present().map_err(|e| e.to_string())
    }
}

/// One panel of grouped bars: `values[group][series]`.
fn bars(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    title: &str,
    groups: &[String],
    series: &[String],
    values: &[Vec<Option<f64>>],
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<_>| e.to_string();
    let top = values.iter().flatten().flatten().fold(0.0f64, |m, &v| m.max(v));
    let top = if top > 0.0 { top * 1.2 } else { 1.0 };
    let n = groups.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..top)
        .map_err(err)?;
    let label = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            groups.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&label)
        .x_label_style(("sans-serif", 12))
        .y_label_style(("sans-serif", 12))
        .draw()
        .map_err(err)?;
    let width = 0.8 / series.len().max(1) as f64;
    for (si, name) in series.iter().enumerate() {
        let color = Palette99::pick(si).to_rgba();
        let rects = values.iter().enumerate().filter_map(move |(gi, row)| {
            let v = row.get(si).copied().flatten()?;
            let x0 = gi as f64 - 0.4 + si as f64 * width;
            Some(Rectangle::new([(x0, 0.0), (x0 + width * 0.9, v)], color.filled()))
        });
        chart
            .draw_series(rects)
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(err)
}

/// Runs `fridge-bench report`.
///
/// # Errors
/// A report that cannot be read or parsed, or an output that cannot be written.
pub fn main(args: &ReportArgs) -> Result<(), String> {
    let mut reports = Vec::new();
    for f in &args.files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        reports.push(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", f.display()))?);
    }
    let comparison = Comparison::new(reports, &args.subject);
    let md = comparison.markdown();
    print!("{md}");
    if let Some(path) = &args.markdown {
        std::fs::write(path, &md).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &args.png {
        comparison.chart(path)?;
        eprintln!("chart written to {}", path.display());
    }
    Ok(())
}

/// A table cell of GET latency percentiles, "p50 / p99 / p99.9" in µs, or "–" without data.
fn latency_cell(row: Option<&crate::report::LatencyRow>) -> String {
    row.map_or_else(
        || "–".into(),
        |r| format!("{:.0} / {:.0} / {:.0}", r.summary.p50_us, r.summary.p99_us, r.summary.p999_us),
    )
}
