//! Prometheus's text exposition format (version 0.0.4,
//! <https://prometheus.io/docs/instrumenting/exposition_formats/>) of the figures `stats` and
//! `INFO` report, served at the admin port's `/metrics` (`crate::admin`).
//!
//! One source for all three: every number here is read from the lines memcached's `stats` and
//! `stats tenants` write ([`super::write_memcache_stats`]) and from the command counters and
//! latency histograms `INFO commandstats` and `INFO latencystats` read, all in the admin's view
//! and after `stats reset` / `CONFIG RESETSTAT` as they are. So a scrape and a `stats` taken
//! at one moment give the same numbers (`tests/python/test_metrics.py` checks it), and a
//! counter added to `stats` appears here with no second list to keep.
//!
//! Names: `fridge_` and the `stats` field's name; counters end in `_total` (`cmd_get` →
//! `fridge_cmd_get_total`), gauges keep the name. Per tenant, `fridge_tenant_<field>` with
//! label `tenant`; per command, `fridge_command_calls_total` (and `_failed_`, `_rejected_`)
//! with label `command`, and `fridge_command_duration_seconds`, a histogram (cumulative
//! buckets at powers of four from 1 µs to 16.8 s) folded from the workers' fine histograms
//! (`crate::latencystats`). Only commands called since the last reset appear.
//!
//! No crate: the exposition format is a few lines of text, and the values already live in
//! the workers' own counters (no locks, no allocation on the request path); a client crate's
//! registry would keep a second copy of each counter, updated on the request path, or need a
//! custom collector around these same reads. A scrape allocates its reply, off the request
//! path, in the admin thread.

use std::fmt::Write as _;

use crate::cmdstats::STAT_ROWS;
use crate::latencystats::{self, BUCKETS};
use crate::shared::Shared;

use super::View;

/// `stats` fields that only grow (between resets): Prometheus counters.
const COUNTERS: &[&str] = &[
    "total_connections",
    "rejected_connections",
    "cmd_get",
    "cmd_set",
    "cmd_flush",
    "cmd_touch",
    "get_hits",
    "get_misses",
    "get_expired",
    "get_flushed",
    "delete_misses",
    "delete_hits",
    "incr_misses",
    "incr_hits",
    "decr_misses",
    "decr_hits",
    "cas_misses",
    "cas_hits",
    "cas_badval",
    "touch_hits",
    "touch_misses",
    "auth_cmds",
    "auth_errors",
    "auth_refused",
    "reload_failures",
    "tls_handshakes",
    "tls_handshake_errors",
    "hash_field_deadlines_dropped",
    "bytes_read",
    "bytes_written",
    "listen_disabled_num",
    "time_in_listen_disabled_us",
    "conn_yields",
    "evicted_clients",
    "request_timeouts",
    "query_overflows",
    "output_overflows",
    "lru_crawler_starts",
    "total_items",
    "evictions",
    "reclaimed",
    "crawler_reclaimed",
    "crawler_items_checked",
    "expiry_sweep_passes",
    "cleaner_passes",
    "cleaner_relocated",
    "cleaner_relocated_bytes",
    "edits_in_place",
    "fifo_evictions",
    "index_evictions",
    "slb_hits",
    "slb_admissions",
    "hitmap_digests_applied",
    "hitmap_pools_dropped",
    "hitmap_compactions",
];

/// `stats` fields left out: text (`version`, `libevent`, the viewer's tenant name and rank),
/// the viewer's own tenant row (every tenant's is under `fridge_tenant_*`), the clock, and
/// the CPU seconds (`process_cpu_seconds_total`).
fn skipped(name: &str) -> bool {
    matches!(name, "version" | "libevent" | "time" | "rusage_user" | "rusage_system" | "pid")
        || name.starts_with("tenant")
}

/// What a `stats` field counts, for `# HELP` (the field's own name where nothing more needs
/// saying).
fn help(name: &str) -> String {
    let known = match name {
        "uptime" => "seconds since the server started",
        "pointer_size" => "bits of a pointer",
        "max_connections" => "most client connections at once",
        "curr_connections" => "client connections open now",
        "total_connections" => "client connections accepted",
        "rejected_connections" => "connections refused over max_connections",
        "tls_handshakes" => "TLS handshakes completed",
        "tls_handshake_errors" => "TLS handshakes that failed with a TLS error",
        "connection_structures" => "connection states allocated",
        "cmd_get" => "keys looked up by get-like commands of both protocols",
        "get_hits" | "get_misses" => "lookups that found / did not find their key",
        "bytes" => "bytes of live items (keys, values and record headers)",
        "curr_items" => "live items",
        "total_items" => "items stored",
        "edits_in_place" => "collection writes made over the item they changed (same length)",
        "evictions" => "live items evicted to make room",
        "reclaimed" => "expired items dropped when found",
        "limit_maxbytes" => "item memory (-m)",
        "threads" => "worker threads",
        "bytes_read" | "bytes_written" => "bytes received from / sent to clients",
        "client_memory" => "bytes of client connection buffers",
        "client_memory_limit" => "limit on all clients' buffers (0: none)",
        "segments" => "log segments in all",
        "cleaner_passes" => "cleaner passes over the log",
        "cleaner_relocated" => "items the cleaner copied to keep them",
        "cleaner_relocated_bytes" => "bytes the cleaner copied to keep items",
        "fifo_evictions" => {
            "whole segments evicted because the cleaner fell behind the writers (its lag)"
        }
        "segments_free" => "log segments free now (the cleaner keeps a few ahead of writers)",
        "overhead_bytes" => "engine bookkeeping outside the items",
        "index_bytes" => "bytes of the hash index",
        "slb_bytes" => "bytes of the search lookaside buffer's tables (in index_bytes)",
        "slb_hits" => "lookups the search lookaside buffer answered without the index",
        "slb_admissions" => "keys admitted to the search lookaside buffer",
        "hitmap_bytes" => "bytes of the hitmap (eviction metadata)",
        "shadow_queue_bytes" => "bytes of the tenants' shadow queues (recently evicted items)",
        "shadow_queue_items" => "recently evicted items the tenants' shadow queues remember",
        "ghost_bytes" => "bytes of the eviction queues' ghosts (recently evicted keys)",
        "hitmap_digests_applied" => "access digests the metadata worker applied to the hitmap",
        "hitmap_pools_dropped" => "reference pools dropped because the metadata worker was behind",
        _ => "",
    };
    if known.is_empty() {
        format!("memcached `stats` field {name}")
    } else {
        format!("{known} (`stats` {name})")
    }
}

/// What a `stats tenants` field counts.
fn tenant_help(field: &str) -> &'static str {
    match field {
        "reserved" => "bytes reserved for the tenant",
        "target" => "the arbiter's byte target for the tenant",
        "bytes" => "bytes of the tenant's live items",
        "items" => "the tenant's live items",
        "hits" | "misses" => "the tenant's lookups that found / did not find their key",
        "shadow_hits" => {
            "misses that the tenant's shadow queue held (would have hit with more memory)"
        }
        "evictions" => "the tenant's items evicted",
        "credits_gained" | "credits_lost" => "bytes of memory credit the arbiter gave / took",
        "connections" => "connections logged in as the tenant",
        "max_connections" => "the tenant's max_connections (0: no limit)",
        "rejected_connections" => "logins refused because max_connections were logged in",
        "max_requests_per_second" => "the tenant's max_requests_per_second (0: no limit)",
        "throttled_requests" => "requests refused over max_requests_per_second",
        "max_keys" => "the tenant's max_keys (0: no limit)",
        "rejected_keys" => "writes refused because they would add a key past max_keys",
        "max_bytes" => "the tenant's max_bytes (0: no limit)",
        "rejected_bytes" => "writes refused because they would take the tenant past max_bytes",
        _ => "a `stats tenants` field",
    }
}

/// `stats tenants` fields that only grow.
fn tenant_counter(field: &str) -> bool {
    matches!(
        field,
        "hits"
            | "misses"
            | "shadow_hits"
            | "evictions"
            | "credits_gained"
            | "credits_lost"
            | "rejected_connections"
            | "throttled_requests"
            | "rejected_keys"
            | "rejected_bytes"
    )
}

/// The `/metrics` reply body.
pub(crate) fn write_metrics(out: &mut String, shared: &Shared) {
    let tenants = shared.tenants();
    let view = admin_view(&tenants);

    let mut stats = Vec::new();
    super::write_memcache_stats(&mut stats, shared, &view);
    let mut zones = Vec::new();
    let (mut device, mut gpu) = ("none", "");
    for (name, value) in stat_lines(&stats) {
        match name {
            "hitmap_device" => device = value,
            "hitmap_gpu" => gpu = value,
            _ => {}
        }
        if skipped(name) || value.parse::<f64>().is_err() {
            continue;
        }
        if let Some(zone) = name.strip_prefix("hitmap_zone_") {
            zones.push((zone.to_string(), value.to_string()));
            continue;
        }
        let counter = COUNTERS.contains(&name);
        let metric =
            if counter { format!("fridge_{name}_total") } else { format!("fridge_{name}") };
        header(out, &metric, &help(name), if counter { "counter" } else { "gauge" });
        let _ = writeln!(out, "{metric} {value}");
    }
    header(out, "fridge_hitmap_device_info", "where the hitmap lives (cpu, gpu, none)", "gauge");
    let (device, gpu) = (label(device), label(gpu));
    let _ = writeln!(out, "fridge_hitmap_device_info{{device=\"{device}\",name=\"{gpu}\"}} 1");
    header(out, "fridge_hitmap_zone_items", "items per hitmap zone (zone 0: zombies)", "gauge");
    for (zone, value) in &zones {
        let _ = writeln!(out, "fridge_hitmap_zone_items{{zone=\"{zone}\"}} {value}");
    }

    write_tenants(out, shared, &view);
    write_commands(out, shared);
    write_process(out, shared);
}

/// The same figures as one JSON object, for the dashboard (`/stats.json`): `time_ms`,
/// `stats` (every numeric `stats` field by name), `tenants` (each tenant's `stats tenants`
/// row by field), `commands` (per RESP command called since the last reset: `calls`,
/// `failed`, and, while latency tracking is on, `p50_us`, `p99_us`, `p999_us`), `hotkeys`
/// (`/hotkeys`'s object).
pub(crate) fn write_json(out: &mut String, shared: &Shared) {
    let tenants = shared.tenants();
    let view = admin_view(&tenants);
    let mut stats = Vec::new();
    super::write_memcache_stats(&mut stats, shared, &view);
    let _ = write!(out, "{{\"time_ms\":{},\"stats\":{{", shared.now_ms());
    let mut first = true;
    for (name, value) in stat_lines(&stats) {
        if skipped(name) || value.parse::<f64>().is_err() {
            continue;
        }
        let _ = write!(out, "{}\"{name}\":{value}", if first { "" } else { "," });
        first = false;
    }
    out.push_str("},\"tenants\":{");
    let mut rows = Vec::new();
    super::write_memcache_tenants(&mut rows, shared, &view);
    let mut current: Option<String> = None;
    for (name, value) in stat_lines(&rows) {
        let Some((tenant, field)) = name.rsplit_once(':') else { continue };
        if value.parse::<f64>().is_err() {
            continue;
        }
        if current.as_deref() != Some(tenant) {
            if current.is_some() {
                out.push_str("},");
            }
            crate::logging::push_json_string(out, tenant);
            out.push_str(":{");
            current = Some(tenant.to_string());
        } else {
            out.push(',');
        }
        let _ = write!(out, "\"{field}\":{value}");
    }
    if current.is_some() {
        out.push('}');
    }
    out.push_str("},\"commands\":{");
    let base = shared.stats_baseline.lock().unwrap_or_else(|e| e.into_inner()).commands;
    let totals = super::command_totals_now(shared).since(&base);
    let sums = shared
        .latency_tracking
        .on()
        .then(|| shared.latency_tracking.merged(shared.workers.iter().map(|w| &w.latency_by_row)));
    let mut first = true;
    for r in (0..STAT_ROWS).filter(|&r| totals.calls[r] > 0) {
        let name = row_name(r);
        let _ = write!(
            out,
            "{}\"{name}\":{{\"calls\":{},\"failed\":{}",
            if first { "" } else { "," },
            totals.calls[r],
            totals.failed[r]
        );
        first = false;
        if let Some(sums) = &sums {
            let h = latencystats::row(sums, r);
            let count: u64 = h.iter().sum();
            for (key, p) in [("p50_us", 50.0), ("p99_us", 99.0), ("p999_us", 99.9)] {
                let ns = latencystats::value_at(h, count, p);
                let _ = write!(out, ",\"{key}\":{:.3}", ns as f64 / 1000.0);
            }
        }
        out.push('}');
    }
    out.push_str("},\"hotkeys\":");
    crate::hotkeys::write_json(out, shared);
    out.push('}');
}

/// The admin's view (every tenant, server-wide figures), whose `stats` the exports read.
fn admin_view(tenants: &crate::tenants::Tenants) -> View<'_> {
    View::new(fridge_engine::TenantId(0), true, 0, None, tenants)
}

/// The name of counter row `r` (a command, or a container's subcommand).
fn row_name(r: usize) -> &'static str {
    crate::cmdstats::row_name(r, |i| crate::resp::COMMANDS.get(i).map_or("", |c| c.name))
        .unwrap_or("")
}

/// Every tenant's `stats tenants` row.
fn write_tenants(out: &mut String, shared: &Shared, view: &View<'_>) {
    let mut rows = Vec::new();
    super::write_memcache_tenants(&mut rows, shared, view);
    // (field, [(tenant, value)]) in the order the rows give the fields.
    let mut fields: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for (name, value) in stat_lines(&rows) {
        let Some((tenant, field)) = name.rsplit_once(':') else { continue };
        if value.parse::<f64>().is_err() {
            continue;
        }
        let at = match fields.iter().position(|(f, _)| f == field) {
            Some(i) => i,
            None => {
                fields.push((field.to_string(), Vec::new()));
                fields.len() - 1
            }
        };
        fields[at].1.push((tenant.to_string(), value.to_string()));
    }
    for (field, values) in &fields {
        let counter = tenant_counter(field);
        let metric = if counter {
            format!("fridge_tenant_{field}_total")
        } else {
            format!("fridge_tenant_{field}")
        };
        header(out, &metric, tenant_help(field), if counter { "counter" } else { "gauge" });
        for (tenant, value) in values {
            let _ = writeln!(out, "{metric}{{tenant=\"{}\"}} {value}", label(tenant));
        }
    }
}

/// Upper bounds (ns) of the duration histogram's buckets: powers of four from 1 µs.
const LE_NANOS: [u64; 13] = {
    let mut b = [0u64; 13];
    let mut i = 0;
    while i < 13 {
        b[i] = 1000 << (2 * i);
        i += 1;
    }
    b
};

/// Per command: calls, failed and rejected calls, and the latency histogram.
fn write_commands(out: &mut String, shared: &Shared) {
    let base = shared.stats_baseline.lock().unwrap_or_else(|e| e.into_inner()).commands;
    let totals = super::command_totals_now(shared).since(&base);
    let rows: Vec<usize> =
        (0..STAT_ROWS).filter(|&r| totals.calls[r] > 0 || totals.rejected[r] > 0).collect();
    for (metric, what, counts) in [
        (
            "fridge_command_calls_total",
            "RESP commands run (INFO commandstats calls)",
            &totals.calls,
        ),
        (
            "fridge_command_failed_calls_total",
            "RESP commands that ran and answered an error (INFO commandstats failed_calls)",
            &totals.failed,
        ),
        (
            "fridge_command_rejected_calls_total",
            "RESP commands refused before they ran (INFO commandstats rejected_calls)",
            &totals.rejected,
        ),
    ] {
        header(out, metric, what, "counter");
        for &r in &rows {
            let _ = writeln!(out, "{metric}{{command=\"{}\"}} {}", row_name(r), counts[r]);
        }
    }

    let metric = "fridge_command_duration_seconds";
    header(
        out,
        metric,
        "time RESP commands took in their handler, while latency-tracking is on (INFO latencystats)",
        "histogram",
    );
    if !shared.latency_tracking.on() {
        return;
    }
    let sums = shared.latency_tracking.merged(shared.workers.iter().map(|w| &w.latency_by_row));
    for r in 0..STAT_ROWS {
        let h = latencystats::row(&sums, r);
        let count: u64 = h.iter().sum();
        if count == 0 {
            continue;
        }
        let command = row_name(r);
        // A bucket of the fine histogram counts toward every bound at or above its highest
        // value.
        let mut cumulative = [0u64; LE_NANOS.len()];
        for (i, &n) in h.iter().enumerate().take(BUCKETS) {
            let highest = latencystats::bucket_highest(i);
            for (c, &le) in cumulative.iter_mut().zip(&LE_NANOS) {
                if highest <= le {
                    *c += n;
                }
            }
        }
        for (c, &le) in cumulative.iter().zip(&LE_NANOS) {
            let le = le as f64 / 1e9;
            let _ = writeln!(out, "{metric}_bucket{{command=\"{command}\",le=\"{le}\"}} {c}");
        }
        let _ = writeln!(out, "{metric}_bucket{{command=\"{command}\",le=\"+Inf\"}} {count}");
        let seconds = totals.nanos[r] as f64 / 1e9;
        let _ = writeln!(out, "{metric}_sum{{command=\"{command}\"}} {seconds}");
        let _ = writeln!(out, "{metric}_count{{command=\"{command}\"}} {count}");
    }
}

/// The standard process metrics Prometheus's own client libraries export.
fn write_process(out: &mut String, shared: &Shared) {
    let (user, system) = super::rusage();
    header(
        out,
        "process_cpu_seconds_total",
        "user and system CPU time spent in seconds",
        "counter",
    );
    let _ = writeln!(out, "process_cpu_seconds_total {}", user + system);
    let rss = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4096);
    header(out, "process_resident_memory_bytes", "resident memory size in bytes", "gauge");
    let _ = writeln!(out, "process_resident_memory_bytes {rss}");
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let up = shared.now_ms().saturating_sub(shared.started_ms) as f64 / 1000.0;
    header(
        out,
        "process_start_time_seconds",
        "start time of the process since the Unix epoch in seconds",
        "gauge",
    );
    let _ = writeln!(out, "process_start_time_seconds {:.3}", now_s - up);
}

fn header(out: &mut String, metric: &str, help: &str, kind: &str) {
    let help = help.replace('\\', "\\\\").replace('\n', "\\n");
    let _ = writeln!(out, "# HELP {metric} {help}\n# TYPE {metric} {kind}");
}

/// A label value, escaped as the format asks (backslash, double quote, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The `(name, value)` of each `STAT name value` line.
fn stat_lines(text: &[u8]) -> impl Iterator<Item = (&str, &str)> {
    std::str::from_utf8(text).unwrap_or_default().split("\r\n").filter_map(|line| {
        let rest = line.strip_prefix("STAT ")?;
        rest.split_once(' ')
    })
}

#[cfg(test)]
mod tests {
    use super::{LE_NANOS, label, stat_lines};

    #[test]
    fn stat_lines_and_labels() {
        let got: Vec<_> = stat_lines(b"STAT a 1\r\nSTAT b:c x y\r\nEND\r\n").collect();
        assert_eq!(got, [("a", "1"), ("b:c", "x y")]);
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!((LE_NANOS[0], LE_NANOS[12]), (1000, 1000 << 24));
    }
}
