//! Reports: CSV and JSON of the result rows, a throughput CSV, and a text summary.
//!
//! `results.csv` and `results.json` depend only on the input, the settings and the seed, so
//! two runs give identical bytes; timings go to `throughput.csv`, which naturally differs.
//! Every row says what its `cache_bytes` counts (`size_meaning`), and engine rows carry the
//! engine's memory outside the arena (`overhead_bytes`) so totals can be compared honestly.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Error;
use crate::results::{CapacityUnit, EngineRow, OpsMode, Profile, Report, Row, bytes};

/// Columns of `results.csv`.
const CSV_HEADER: &str = "source,policy,detail,cache_bytes,cache_fraction,cache_objects,size_meaning,tenant,\
requests,hits,miss_ratio,bytes_requested,bytes_hit,byte_miss_ratio,engine_segment_size,\
engine_overhead_bytes,engine_index_bytes,engine_items,engine_item_bytes,engine_evictions,\
engine_expired,engine_cleaner_passes,engine_relocated_items,engine_fifo_evictions,\
engine_refused,engine_store_errors,engine_rank,engine_hitmap_bits_per_item,\
engine_hitmap_items,engine_digests,engine_digests_applied,engine_compactions,\
engine_pools_dropped,engine_hitmap_bytes,engine_hitmap_bits_per_resident_item,engine_zones,\
engine_segments,engine_free_segments,engine_open_segments,engine_open_unused_bytes,\
engine_small_segments,engine_small_used_bytes,engine_main_segments,engine_main_used_bytes,\
engine_sealed_unused_bytes,engine_dead_bytes";

/// `results.csv`: one line per row.
pub fn csv(report: &Report) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for r in &report.rows {
        let _ = write!(
            out,
            "{},{},{},{},{:.6},{},{},{},{},{},{:.6},{},{},{:.6}",
            field(&report.source),
            r.policy,
            field(&r.detail),
            r.cache_bytes,
            r.cache_fraction,
            r.cache_objects.map(|n| n.to_string()).unwrap_or_default(),
            field(&r.size_meaning),
            r.tenant,
            r.requests,
            r.hits,
            r.miss_ratio,
            r.bytes_requested,
            r.bytes_hit,
            r.byte_miss_ratio
        );
        match &r.engine {
            Some(e) => {
                let _ = write!(
                    out,
                    ",{},{},{},{},{},{},{},{},{},{},{},{}",
                    e.segment_size,
                    e.overhead_bytes,
                    e.index_bytes,
                    e.items,
                    e.item_bytes,
                    e.evictions,
                    e.expired,
                    e.cleaner_passes,
                    e.relocated_items,
                    e.fifo_evictions,
                    e.refused,
                    e.store_errors
                );
                let m = &e.metadata;
                let zones: Vec<String> = m.zones.iter().map(u64::to_string).collect();
                let _ = write!(
                    out,
                    ",{},{},{},{},{},{},{},{},{:.3},{}",
                    e.rank,
                    m.bits_per_item,
                    m.sized_for_items,
                    m.digests,
                    m.applied,
                    m.compactions,
                    m.pools_dropped,
                    m.hitmap_bytes,
                    m.bits_per_resident_item,
                    zones.join(";")
                );
                let c = &e.capacity;
                let _ = write!(
                    out,
                    ",{},{},{},{},{},{},{},{},{},{}",
                    c.segments,
                    c.free_segments,
                    c.open_segments,
                    c.open_unused_bytes,
                    c.small_segments,
                    c.small_used_bytes,
                    c.main_segments,
                    c.main_used_bytes,
                    c.sealed_unused_bytes,
                    c.dead_bytes
                );
            }
            None => out.push_str(&",".repeat(32)),
        }
        out.push('\n');
    }
    out
}

/// Quotes a CSV field that holds a comma or a quote.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.into() }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    source: &'a str,
    description: &'a str,
    ops: &'static str,
    profile: &'a Profile,
    tenant_names: &'a [String],
    capacity_unit: &'static str,
    notes: &'a [String],
    rows: &'a [Row],
}

/// `results.json`: the source, its profile, notes and rows.
///
/// # Errors
/// Serialization failure (not expected).
pub fn json(report: &Report) -> Result<String, Error> {
    let j = JsonReport {
        source: &report.source,
        description: &report.description,
        ops: ops_name(report.ops),
        profile: &report.profile,
        tenant_names: &report.tenant_names,
        capacity_unit: report.capacity_unit.name(),
        notes: &report.notes,
        rows: &report.rows,
    };
    serde_json::to_string_pretty(&j).map_err(|e| Error::Output(e.to_string()))
}

fn ops_name(ops: OpsMode) -> &'static str {
    match ops {
        OpsMode::Lookaside => "lookaside: every request is a GET that admits on miss",
        OpsMode::Trace => "trace: GETs counted, SETs store, DELETEs delete",
    }
}

/// `miss_ratio_over_time.csv` (`--report-interval`): one line per cache, size and interval;
/// `cache_size` is in the run's capacity unit, `requests` counts the requests served up to the
/// end of the interval. Deterministic like `results.csv`.
pub fn timeline_csv(report: &Report) -> String {
    let mut out = String::from(
        "source,policy,cache_size,cache_unit,requests,interval_requests,interval_miss_ratio,\
         cumulative_miss_ratio\n",
    );
    for p in &report.timeline {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{:.6},{:.6}",
            field(&report.source),
            p.policy,
            p.cache_size,
            report.capacity_unit.name(),
            p.requests,
            p.interval_requests,
            p.interval_miss_ratio,
            p.cumulative_miss_ratio
        );
    }
    out
}

/// `throughput.csv`: time spent in each cache at each size, and requests per second.
pub fn throughput_csv(report: &Report) -> String {
    let mut out = String::from("source,policy,cache_bytes,requests,seconds,requests_per_s\n");
    for t in &report.timings {
        let _ = writeln!(
            out,
            "{},{},{},{},{:.6},{:.0}",
            field(&report.source),
            t.policy,
            t.cache_bytes,
            t.requests,
            t.seconds,
            t.requests_per_s()
        );
    }
    out
}

/// Requests per second of each policy over all sizes, in run order.
pub fn throughput_by_policy(report: &Report) -> Vec<(String, f64)> {
    let mut out: Vec<(String, u64, f64)> = Vec::new();
    for t in &report.timings {
        match out.iter_mut().find(|(p, _, _)| *p == t.policy) {
            Some(e) => {
                e.1 += t.requests;
                e.2 += t.seconds;
            }
            None => out.push((t.policy.clone(), t.requests, t.seconds)),
        }
    }
    out.into_iter().map(|(p, n, s)| (p, if s > 0.0 { n as f64 / s } else { 0.0 })).collect()
}

/// A text summary: the profile, a policy × size table of miss ratios (all tenants), and
/// throughput per policy.
pub fn summary(report: &Report) -> String {
    let p = &report.profile;
    let mut out = String::new();
    let _ = writeln!(out, "source: {} ({})", report.source, report.description);
    let _ = writeln!(
        out,
        "{} requests, {} bytes requested, {} objects, working set {} bytes ({}), {} tenant(s)",
        p.requests,
        p.bytes_requested,
        p.objects,
        p.working_set_bytes,
        bytes(p.working_set_bytes),
        p.tenants.len()
    );
    let _ = writeln!(out, "ops: {}", ops_name(report.ops));
    // Columns are cache sizes in the run's unit: bytes, or objects (then each policy's bytes
    // differ, and its "cache size means" says how they follow from the objects).
    let size_of = |r: &Row| r.cache_objects.unwrap_or(r.cache_bytes);
    let mut sizes: Vec<(u64, f64)> =
        report.rows.iter().map(|r| (size_of(r), r.cache_fraction)).collect();
    sizes.dedup_by_key(|s| s.0);
    let policies = &report.policies;
    let _ = write!(out, "\nmiss ratio{:>9}", "");
    for &(s, _) in &sizes {
        let shown = match report.capacity_unit {
            CapacityUnit::Bytes => bytes(s),
            CapacityUnit::Objects => format!("{s} obj"),
        };
        let _ = write!(out, " {shown:>10}");
    }
    let _ = write!(out, "\n{:<19}", "(fraction of WS)");
    for &(_, f) in &sizes {
        let _ = write!(out, " {f:>10.4}");
    }
    out.push('\n');
    for policy in policies {
        let _ = write!(out, "{policy:<19}");
        for &(s, _) in &sizes {
            match report
                .rows
                .iter()
                .find(|r| r.policy == *policy && size_of(r) == s && r.tenant == "all")
            {
                Some(r) => {
                    let _ = write!(out, " {:>10.4}", r.miss_ratio);
                }
                None => {
                    let _ = write!(out, " {:>10}", "-");
                }
            }
        }
        out.push('\n');
    }
    out.push_str("\nthroughput (requests/s, all sizes):\n");
    for (policy, rps) in throughput_by_policy(report) {
        let _ = writeln!(out, "  {policy:<19} {rps:>12.0}");
    }
    for n in &report.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// `results.md`: a Markdown table of miss ratios (all tenants), policy by cache size, with the
/// engine's memory outside the arena, and the throughput per policy.
pub fn markdown(report: &Report) -> String {
    let p = &report.profile;
    // Columns are cache sizes in the run's unit: bytes, or objects (then each policy's bytes
    // differ, and its "cache size means" says how they follow from the objects).
    let size_of = |r: &Row| r.cache_objects.unwrap_or(r.cache_bytes);
    let mut sizes: Vec<(u64, f64)> =
        report.rows.iter().map(|r| (size_of(r), r.cache_fraction)).collect();
    sizes.dedup_by_key(|s| s.0);
    let mut out = String::new();
    let _ = writeln!(out, "Source: {} — {}.\n", report.source, report.description);
    let _ = writeln!(
        out,
        "{} requests, {} bytes requested, {} objects, working set {} ({} bytes); {}.\n",
        p.requests,
        p.bytes_requested,
        p.objects,
        bytes(p.working_set_bytes),
        p.working_set_bytes,
        ops_name(report.ops)
    );
    out.push_str("| policy | cache size means |");
    for &(s, f) in &sizes {
        let shown = match report.capacity_unit {
            CapacityUnit::Bytes => bytes(s),
            CapacityUnit::Objects => format!("{s} objects"),
        };
        let _ = write!(out, " {shown} ({:.1}%) |", f * 100.0);
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---:|".repeat(sizes.len()));
    out.push('\n');
    let cell = |policy: &str, s: u64| {
        report.rows.iter().find(|r| r.policy == policy && size_of(r) == s && r.tenant == "all")
    };
    for policy in &report.policies {
        let Some(meaning) = report.rows.iter().find(|r| r.policy == *policy) else {
            continue;
        };
        let _ = write!(out, "| {policy} | {} |", meaning.size_meaning);
        for &(s, _) in &sizes {
            match cell(policy, s) {
                Some(r) => {
                    let _ = write!(out, " {:.4} |", r.miss_ratio);
                }
                None => out.push_str(" – |"),
            }
        }
        out.push('\n');
        if meaning.engine.is_some() {
            let engine_row = |out: &mut String, label: &str, f: &dyn Fn(&EngineRow) -> String| {
                let _ = write!(out, "| {policy}: {label} |");
                for &(s, _) in &sizes {
                    match cell(policy, s).and_then(|r| r.engine.as_ref()) {
                        Some(e) => {
                            let _ = write!(out, " {} |", f(e));
                        }
                        None => out.push_str(" – |"),
                    }
                }
                out.push('\n');
            };
            engine_row(
                &mut out,
                "memory outside max_memory | index + segment headers + hitmap",
                &|e| bytes(e.overhead_bytes as u64),
            );
            engine_row(&mut out, "hitmap | bytes, bits per resident item, compactions", &|e| {
                let m = &e.metadata;
                format!(
                    "{}, {:.1} b/item, {} compactions",
                    bytes(m.hitmap_bytes as u64),
                    m.bits_per_resident_item,
                    m.compactions
                )
            });
        }
    }
    out.push_str("\nSimulator throughput over all sizes (requests/s):");
    for (policy, rps) in throughput_by_policy(report) {
        let _ = write!(out, " {policy} {:.2}M;", rps / 1e6);
    }
    out.push('\n');
    for n in &report.notes {
        let _ = writeln!(out, "\nNote: {n}");
    }
    out
}

/// Writes `results.csv`, `results.json`, `results.md`, `throughput.csv`, with
/// `--report-interval` `miss_ratio_over_time.csv`, and the plots into `dir`, creating it;
/// returns the paths written.
///
/// # Errors
/// A file cannot be written or a plot cannot be drawn.
pub fn write_all(report: &Report, dir: &Path, plots: bool) -> Result<Vec<PathBuf>, Error> {
    std::fs::create_dir_all(dir).map_err(|e| Error::Output(format!("{}: {e}", dir.display())))?;
    let mut written = Vec::new();
    let mut put = |name: &str, text: String| -> Result<(), Error> {
        let path = dir.join(name);
        std::fs::write(&path, text)
            .map_err(|e| Error::Output(format!("{}: {e}", path.display())))?;
        written.push(path);
        Ok(())
    };
    put("results.csv", csv(report))?;
    put("results.json", json(report)?)?;
    put("results.md", markdown(report))?;
    put("throughput.csv", throughput_csv(report))?;
    if !report.timeline.is_empty() {
        put("miss_ratio_over_time.csv", timeline_csv(report))?;
    }
    if plots {
        let path = dir.join("miss_ratio.png");
        crate::plot::miss_ratio_curves(report, &path, false)?;
        written.push(path);
        let path = dir.join("byte_miss_ratio.png");
        crate::plot::miss_ratio_curves(report, &path, true)?;
        written.push(path);
        written.extend(crate::plot::miss_ratio_over_time(report, dir)?);
    }
    Ok(written)
}
