//! What a run reports: per phase, the counts, the throughput, and latency percentiles per
//! operation and per value-size class; written as text (stdout), JSON and CSV.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::histogram::Summary;
use crate::worker::Counts;

/// A whole run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Report {
    /// Free-form label (`--label`).
    pub label: String,
    /// Name of the server under test (`--server-name`), for comparisons.
    pub server: String,
    /// Name of the workload (`--workload-name`), for comparisons.
    pub workload: String,
    /// Address of the server.
    pub addr: String,
    /// Protocol spoken.
    pub protocol: String,
    /// Client threads.
    pub threads: usize,
    /// Connections per tenant per thread.
    pub conns: usize,
    /// Closed-loop pipeline depth.
    pub depth: usize,
    /// Open-loop request rate, if any.
    pub rate: Option<f64>,
    /// Number of tenants.
    pub tenants: usize,
    /// Whether values were verified.
    pub verify: bool,
    /// The phases that ran, in order (`fill`, `run`, `scan`).
    pub phases: Vec<PhaseReport>,
}

/// One phase.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PhaseReport {
    /// `fill`, `run` or `scan`.
    pub name: String,
    /// Measured seconds (after warm-up, to the last reply).
    pub seconds: f64,
    /// Replies per second over `seconds`.
    pub ops_per_s: f64,
    /// Hits / (hits + misses).
    pub hit_ratio: f64,
    /// Fill and scan: keys swept.
    pub keys: Option<u64>,
    /// Outcome counts.
    pub counts: Counts,
    /// Latency per operation: the `all` class first, then each size class with samples.
    pub latency: Vec<LatencyRow>,
    /// Per tenant, when there are several.
    pub tenants: Vec<TenantRow>,
    /// Open loop: lateness of sends behind their intended times (the client's own lag).
    pub send_lag: Option<Summary>,
    /// The first failures, in words.
    pub failures: Vec<String>,
}

/// Latency of one operation in one size class.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LatencyRow {
    /// `get`, `set`, `delete`.
    pub op: String,
    /// `all`, or a size class such as `65-1024`.
    pub class: String,
    /// The percentiles.
    #[serde(flatten)]
    pub summary: Summary,
}

/// One tenant's share of a phase.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TenantRow {
    /// Tenant name.
    pub name: String,
    /// Replies per second.
    pub ops_per_s: f64,
    /// Hit ratio.
    pub hit_ratio: f64,
    /// Counts.
    pub counts: Counts,
    /// Latency over all operations.
    pub latency: Summary,
}

impl PhaseReport {
    /// The latency row of `op` in `class`.
    pub fn row(&self, op: &str, class: &str) -> Option<&LatencyRow> {
        self.latency.iter().find(|r| r.op == op && r.class == class)
    }
}

impl Report {
    /// The phase called `name`.
    pub fn phase(&self, name: &str) -> Option<&PhaseReport> {
        self.phases.iter().find(|p| p.name == name)
    }

    /// A human-readable summary.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for p in &self.phases {
            let c = &p.counts;
            let _ = writeln!(
                s,
                "{} {}: {} replies in {:.2}s = {:.0} ops/s; hits {} misses {} (hit ratio {:.3}); \
                 stored {} not stored {}; deleted {} not found {}; errors {} unanswered {} \
                 verify failures {}{}",
                self.label,
                p.name,
                c.completed,
                p.seconds,
                p.ops_per_s,
                c.hits,
                c.misses,
                p.hit_ratio,
                c.stored,
                c.not_stored,
                c.deleted,
                c.not_found,
                c.errors,
                c.unanswered,
                c.verify_failures,
                p.keys.map(|k| format!("; {k} keys")).unwrap_or_default(),
            );
            let _ = writeln!(
                s,
                "  {:<7} {:<11} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  (µs)",
                "op", "class", "count", "mean", "p50", "p90", "p99", "p99.9", "max"
            );
            for r in &p.latency {
                let m = &r.summary;
                let _ = writeln!(
                    s,
                    "  {:<7} {:<11} {:>10} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
                    r.op,
                    r.class,
                    m.count,
                    m.mean_us,
                    m.p50_us,
                    m.p90_us,
                    m.p99_us,
                    m.p999_us,
                    m.max_us
                );
            }
            if let Some(lag) = &p.send_lag {
                let _ = writeln!(
                    s,
                    "  open-loop send lag behind schedule: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
                    lag.p50_us, lag.p99_us, lag.max_us
                );
            }
            for t in &p.tenants {
                let _ = writeln!(
                    s,
                    "  tenant {:<10} {:>10.0} ops/s  hit ratio {:.3}  p50 {:.1} µs  p99 {:.1} µs  errors {}",
                    t.name,
                    t.ops_per_s,
                    t.hit_ratio,
                    t.latency.p50_us,
                    t.latency.p99_us,
                    t.counts.errors
                );
            }
            for f in &p.failures {
                let _ = writeln!(s, "  failure: {f}");
            }
        }
        s
    }

    /// One CSV row per (phase, operation, class), with a header.
    pub fn csv(&self) -> String {
        let mut s = String::from(
            "label,server,workload,phase,op,class,count,ops_per_s,mean_us,p50_us,p90_us,p99_us,p999_us,max_us\n",
        );
        for p in &self.phases {
            for r in &p.latency {
                let m = &r.summary;
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{:.1},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2}",
                    self.label,
                    self.server,
                    self.workload,
                    p.name,
                    r.op,
                    r.class,
                    m.count,
                    p.ops_per_s,
                    m.mean_us,
                    m.p50_us,
                    m.p90_us,
                    m.p99_us,
                    m.p999_us,
                    m.max_us
                );
            }
        }
        s
    }
}
