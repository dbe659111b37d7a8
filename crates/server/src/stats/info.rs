//! Redis's `INFO` (<https://redis.io/commands/info/>; Redis 7.0 `server.c`,
//! `genRedisInfoString`): every section Redis 7.0 writes by default, each with Redis 7.0's
//! field names in Redis's order and fridge's figures, then fridge's own fields; then fridge's
//! `tenants` and `hitmap` sections. Tools such as redis_exporter parse these by name.
//!
//! A field fridge has no figure for holds what Redis writes when the feature is idle (no
//! persistence: `loading:0`, `rdb_last_bgsave_status:ok`, …; no replica: `role:master`,
//! `connected_slaves:0`). `instantaneous_*` are rates over the interval between two `INFO`
//! calls at least a second apart (Redis samples every 100 ms); `used_memory_peak` is the
//! largest `used_memory` an `INFO` has seen.

use std::io::Write as _;
use std::sync::atomic::Ordering;

use super::{CommandTotals, Figures, REDIS_VERSION, Shared, View, command_totals_now, row};
use super::{hitmap_fields, row_fields};
use crate::shared::InfoSample as Sample;

/// Which `INFO` sections to write: `default` sections with no argument or `default`, every
/// one with `all` or `everything`.
fn wants(sections: &[&[u8]], name: &str, default: bool) -> bool {
    if sections.is_empty() {
        return default;
    }
    sections.iter().any(|s| {
        s.eq_ignore_ascii_case(name.as_bytes())
            || s.eq_ignore_ascii_case(b"all")
            || s.eq_ignore_ascii_case(b"everything")
            || (default && s.eq_ignore_ascii_case(b"default"))
    })
}

/// Bytes as Redis's `bytesToHuman` writes them: `512B`, `1.50K`, `64.00M`.
struct Human(u64);

impl std::fmt::Display for Human {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const UNITS: [&str; 5] = ["K", "M", "G", "T", "P"];
        let n = self.0;
        if n < 1024 {
            return write!(f, "{n}B");
        }
        let mut d = n as f64 / 1024.0;
        for unit in UNITS {
            if d < 1024.0 || unit == "P" {
                return write!(f, "{d:.2}{unit}");
            }
            d /= 1024.0;
        }
        Ok(())
    }
}

/// Appends the text of Redis's `INFO` for the given section names (empty = default);
/// `command_name` names a row of the Redis command table (for commandstats).
pub(crate) fn write_info(
    out: &mut Vec<u8>,
    shared: &Shared,
    sections: &[&[u8]],
    view: &View<'_>,
    command_name: impl Fn(usize) -> &'static str,
) {
    let f = Figures::of(shared, view);
    let commands = if view.admin {
        let base = shared.stats_baseline.lock().unwrap_or_else(|e| e.into_inner()).commands;
        command_totals_now(shared).since(&base)
    } else {
        CommandTotals::default()
    };
    if wants(sections, "server", true) {
        write_server(out, shared);
    }
    if wants(sections, "clients", true) {
        write_clients(out, shared, view, &f);
    }
    if wants(sections, "memory", true) {
        write_memory(out, shared, view, &f);
    }
    if wants(sections, "persistence", true) {
        write_persistence(out, shared);
    }
    if wants(sections, "stats", true) {
        write_stats(out, shared, view, &f, &commands);
    }
    if wants(sections, "replication", true) {
        write_replication(out, shared);
    }
    if wants(sections, "cpu", true) {
        write_cpu(out, view, &f);
    }
    if wants(sections, "modules", true) {
        out.extend_from_slice(b"# Modules\r\n\r\n");
    }
    if wants(sections, "commandstats", false) {
        out.extend_from_slice(b"# Commandstats\r\n");
        commands.write_commandstats(out, &command_name);
        out.extend_from_slice(b"\r\n");
    }
    if wants(sections, "errorstats", true) {
        out.extend_from_slice(b"# Errorstats\r\n");
        commands.write_errorstats(out);
        out.extend_from_slice(b"\r\n");
    }
    if wants(sections, "latencystats", false) {
        out.extend_from_slice(b"# Latencystats\r\n");
        if view.admin {
            let workers = shared.workers.iter().map(|w| &w.latency_by_row);
            shared.latency_tracking.write(out, workers, &command_name);
        }
        out.extend_from_slice(b"\r\n");
    }
    if wants(sections, "cluster", true) {
        let enabled = u8::from(shared.cluster.is_some());
        let _ = write!(out, "# Cluster\r\ncluster_enabled:{enabled}\r\n\r\n");
    }
    if wants(sections, "keyspace", true) {
        out.extend_from_slice(b"# Keyspace\r\n");
        // One line per database with keys, in the clients' numbering (after SWAPDBs).
        // `avg_ttl` is exact to the second (`fridge_engine::DbStats::avg_ttl_ms`).
        let dbs = shared.engine.db_stats(view.tenant);
        let map = shared.databases.map(view.tenant);
        let now = crate::shared::precise_now_ms(shared.now_ms());
        for db in 0..shared.databases.count() {
            let d = &dbs[usize::from(map[usize::from(db)])];
            if d.keys > 0 {
                let (keys, expires, ttl) = (d.keys, d.expires, d.avg_ttl_ms(now));
                let _ = write!(out, "db{db}:keys={keys},expires={expires},avg_ttl={ttl}\r\n");
            }
        }
        write_tenant_keyspace(out, shared, view);
        out.extend_from_slice(b"\r\n");
    }
    if wants(sections, "tenants", true) {
        write_tenants(out, shared, view);
    }
    if wants(sections, "hitmap", true) {
        out.extend_from_slice(b"# Hitmap\r\n");
        let _ = write!(out, "hitmap_bits_per_item_budget:{}\r\n", shared.config.hitmap_bits());
        for (name, value) in hitmap_fields(&f.engine) {
            let _ = write!(out, "{name}:{value}\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }
    while out.ends_with(b"\r\n\r\n") {
        out.truncate(out.len() - 2);
    }
}

fn write_server(out: &mut Vec<u8>, shared: &Shared) {
    let now_ms = shared.now_ms();
    let uptime = now_ms.saturating_sub(shared.started_ms) / 1000;
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let executable = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default();
    let _ = write!(
        out,
        "# Server\r\nredis_version:{REDIS_VERSION}\r\nredis_git_sha1:00000000\r\n\
         redis_git_dirty:0\r\nredis_build_id:{:016x}\r\nredis_mode:{}\r\n\
         os:{} {} {}\r\narch_bits:{}\r\nmonotonic_clock:POSIX clock_gettime\r\n\
         multiplexing_api:epoll\r\natomicvar_api:c11-builtin\r\ngcc_version:0.0.0\r\n\
         process_id:{}\r\nprocess_supervised:no\r\nrun_id:{:040x}\r\ntcp_port:{}\r\n\
         server_time_usec:{}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\nhz:10\r\n\
         configured_hz:10\r\nlru_clock:{}\r\nexecutable:{executable}\r\nconfig_file:\r\n\
         io_threads_active:0\r\nfridge_version:{}\r\n\r\n",
        fnv(env!("CARGO_PKG_VERSION").as_bytes()),
        if shared.cluster.is_some() { "cluster" } else { "standalone" },
        capitalized(std::env::consts::OS),
        release.trim(),
        std::env::consts::ARCH,
        usize::BITS,
        std::process::id(),
        shared.started_ms,
        shared.resp_port.unwrap_or(shared.main_port),
        unix_usec(),
        uptime / 86400,
        (unix_usec() / 1_000_000) & ((1 << 24) - 1),
        env!("CARGO_PKG_VERSION"),
    );
}

/// `linux` → `Linux`, as `uname` names it.
fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|first| first.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// FNV-1a: a stable build id from the version.
fn fnv(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

fn unix_usec() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

fn write_clients(out: &mut Vec<u8>, shared: &Shared, view: &View<'_>, f: &Figures) {
    // The largest buffers of a client this view may list (fridge counts a connection's
    // buffers together: under output).
    let clients = shared.clients.lock().unwrap_or_else(|e| e.into_inner());
    let largest =
        clients.iter().filter(|(id, e)| view.sees_client(**id, e)).map(|(_, e)| e.memory).max();
    drop(clients);
    let tracking = if view.admin { shared.tracking.clients() } else { 0 };
    // Blocked pops: the admin's count is everyone's; a tenant's, its own clients'.
    let blocked = match (view.admin, view.user) {
        (true, _) => shared.blocking.blocked_clients(None),
        (false, Some(t)) => shared.blocking.blocked_clients(Some(t)),
        (false, None) => 0,
    };
    let _ = write!(
        out,
        "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\n\
         client_recent_max_input_buffer:0\r\nclient_recent_max_output_buffer:{}\r\n\
         blocked_clients:{blocked}\r\ntracking_clients:{tracking}\r\nclients_in_timeout_table:0\r\n\r\n",
        f.curr_connections,
        shared.config.max_connections,
        largest.unwrap_or(0),
    );
}

fn write_memory(out: &mut Vec<u8>, shared: &Shared, view: &View<'_>, f: &Figures) {
    let e = &f.engine;
    let used = e.item_bytes + e.overhead_bytes as u64;
    let (rss, peak) = if view.admin {
        let peak = shared.memory_peak.fetch_max(used, Ordering::Relaxed).max(used);
        (resident_bytes(), peak)
    } else {
        (0, used)
    };
    let system = total_system_memory();
    let max = shared.engine.memory_limit() as u64;
    let percent = |part: u64, whole: u64| {
        if whole == 0 { 0.0 } else { part as f64 * 100.0 / whole as f64 }
    };
    let frag = if used == 0 { 0.0 } else { rss as f64 / used as f64 };
    // Scripting's figures are the asking tenant's (its own Lua state and caches).
    let sc = shared.scripting.counts(view.tenant);
    let lua = sc.lua_bytes;
    let _ = write!(
        out,
        "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\n\
         used_memory_rss_human:{}\r\nused_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\n\
         used_memory_peak_perc:{:.2}%\r\nused_memory_overhead:{}\r\nused_memory_startup:0\r\n\
         used_memory_dataset:{}\r\nused_memory_dataset_perc:{:.2}%\r\n\
         allocator_allocated:{used}\r\nallocator_active:{used}\r\nallocator_resident:{rss}\r\n\
         total_system_memory:{system}\r\ntotal_system_memory_human:{}\r\n\
         used_memory_lua:{lua}\r\nused_memory_vm_eval:{lua}\r\nused_memory_lua_human:{}\r\n\
         used_memory_scripts_eval:{}\r\nnumber_of_cached_scripts:{}\r\nnumber_of_functions:{}\r\n\
         number_of_libraries:{}\r\nused_memory_vm_functions:0\r\nused_memory_vm_total:{lua}\r\n\
         used_memory_vm_total_human:{}\r\nused_memory_functions:{}\r\nused_memory_scripts:{}\r\n\
         used_memory_scripts_human:{}\r\nmaxmemory:{max}\r\nmaxmemory_human:{}\r\n\
         maxmemory_policy:{}\r\nallocator_frag_ratio:1.00\r\nallocator_frag_bytes:0\r\n\
         allocator_rss_ratio:1.00\r\nallocator_rss_bytes:0\r\nrss_overhead_ratio:1.00\r\n\
         rss_overhead_bytes:0\r\nmem_fragmentation_ratio:{frag:.2}\r\n\
         mem_fragmentation_bytes:{}\r\nmem_not_counted_for_evict:0\r\n\
         mem_replication_backlog:0\r\nmem_total_replication_buffers:0\r\nmem_clients_slaves:0\r\n\
         mem_clients_normal:{}\r\nmem_cluster_links:0\r\nmem_aof_buffer:0\r\n\
         mem_allocator:fridge-segments\r\nactive_defrag_running:0\r\n\
         lazyfree_pending_objects:0\r\nlazyfreed_objects:0\r\nmaxmemory_clients:{}\r\n\r\n",
        Human(used),
        Human(rss),
        Human(peak),
        percent(used, peak),
        e.overhead_bytes,
        e.item_bytes,
        percent(e.item_bytes, used),
        Human(system),
        Human(lua as u64),
        sc.script_bytes,
        sc.scripts,
        sc.functions,
        sc.libraries,
        Human(lua as u64),
        sc.library_bytes,
        sc.script_bytes + sc.library_bytes,
        Human((sc.script_bytes + sc.library_bytes) as u64),
        Human(max),
        crate::memlimit::policy_name(shared.engine.tenant_policy(view.tenant).rank),
        rss as i64 - used as i64,
        f.client_memory,
        shared.config.client_memory_limit(),
    );
}

/// The process's resident memory (`/proc/self/statm`, pages of 4 KiB); 0 elsewhere.
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()).unwrap_or(0) * 4096
}

/// The machine's memory (`/proc/meminfo` `MemTotal`); 0 elsewhere.
fn total_system_memory() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

fn write_persistence(out: &mut Vec<u8>, shared: &Shared) {
    // No persistence: the figures of a Redis that has never saved (LASTSAVE: the start).
    let _ = write!(
        out,
        "# Persistence\r\nloading:0\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\n\
         current_cow_size:0\r\ncurrent_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\n\
         current_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\n\
         rdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\nrdb_last_save_time:{}\r\n\
         rdb_last_bgsave_status:ok\r\nrdb_last_bgsave_time_sec:-1\r\n\
         rdb_current_bgsave_time_sec:-1\r\nrdb_saves:0\r\nrdb_last_cow_size:0\r\n\
         rdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:0\r\naof_enabled:0\r\n\
         aof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\naof_last_rewrite_time_sec:-1\r\n\
         aof_current_rewrite_time_sec:-1\r\naof_last_bgrewrite_status:ok\r\naof_rewrites:0\r\n\
         aof_rewrites_consecutive_failures:0\r\naof_last_write_status:ok\r\n\
         aof_last_cow_size:0\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n\r\n",
        shared.started_ms / 1000,
    );
}

/// The `instantaneous_*` rates: recomputed when the last sample is a second old or more.
fn rates(shared: &Shared, f: &Figures) -> Sample {
    let now = shared.now_ms();
    let t = &f.totals;
    let mut s = shared.info_sample.lock().unwrap_or_else(|e| e.into_inner());
    let elapsed = now.saturating_sub(s.ms);
    if elapsed >= 1000 {
        let per_sec =
            |now: u64, then: u64| now.saturating_sub(then) as f64 * 1000.0 / elapsed as f64;
        *s = Sample {
            ms: now,
            commands: t.commands,
            bytes_in: t.bytes_read,
            bytes_out: t.bytes_written,
            ops_per_sec: if s.ms == 0 { 0 } else { per_sec(t.commands, s.commands) as u64 },
            input_kbps: if s.ms == 0 { 0.0 } else { per_sec(t.bytes_read, s.bytes_in) / 1024.0 },
            output_kbps: if s.ms == 0 {
                0.0
            } else {
                per_sec(t.bytes_written, s.bytes_out) / 1024.0
            },
        };
    }
    *s
}

fn write_stats(
    out: &mut Vec<u8>,
    shared: &Shared,
    view: &View<'_>,
    f: &Figures,
    commands: &CommandTotals,
) {
    let (e, t) = (&f.engine, &f.totals);
    let r = if view.admin { rates(shared, f) } else { Sample::default() };
    // A tenant counts its own channels; the admin, every tenant's.
    let ps = shared.pubsub.counts(if view.admin { None } else { Some(view.tenant) });
    let tracking_keys = if view.admin { shared.tracking.total_keys() } else { 0 };
    let errors: u64 = commands.errors.iter().sum();
    let _ = write!(
        out,
        "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
         instantaneous_ops_per_sec:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\n\
         total_net_repl_input_bytes:0\r\ntotal_net_repl_output_bytes:0\r\n\
         instantaneous_input_kbps:{:.2}\r\ninstantaneous_output_kbps:{:.2}\r\n\
         instantaneous_input_repl_kbps:0.00\r\ninstantaneous_output_repl_kbps:0.00\r\n\
         rejected_connections:{}\r\nsync_full:0\r\nsync_partial_ok:0\r\nsync_partial_err:0\r\n\
         expired_keys:{}\r\nexpired_stale_perc:0.00\r\nexpired_time_cap_reached_count:0\r\n\
         expire_cycle_cpu_milliseconds:0\r\nevicted_keys:{}\r\nevicted_clients:{}\r\n\
         total_eviction_exceeded_time:0\r\ncurrent_eviction_exceeded_time:0\r\n\
         keyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\n\
         pubsubshard_channels:{}\r\nlatest_fork_usec:0\r\ntotal_forks:0\r\n\
         migrate_cached_sockets:0\r\nslave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\n\
         active_defrag_misses:0\r\nactive_defrag_key_hits:0\r\nactive_defrag_key_misses:0\r\n\
         total_active_defrag_time:0\r\ncurrent_active_defrag_time:0\r\n\
         tracking_total_keys:{tracking_keys}\r\ntracking_total_items:0\r\n\
         tracking_total_prefixes:0\r\nunexpected_error_replies:0\r\ntotal_error_replies:{errors}\r\n\
         dump_payload_sanitizations:0\r\ntotal_reads_processed:{}\r\n\
         total_writes_processed:0\r\nio_threaded_reads_processed:0\r\n\
         io_threaded_writes_processed:0\r\nreply_buffer_shrinks:0\r\nreply_buffer_expands:0\r\n\
         total_writes:{}\r\nacl_access_denied_auth:{}\r\nauth_refused:{}\r\nreload_failures:{}\r\n\
         tls_handshakes:{}\r\ntls_handshake_errors:{}\r\n\
         client_output_buffer_limit_disconnections:{}\r\nkeyspace_events_dropped:{}\r\n\r\n",
        f.total_connections,
        t.commands,
        r.ops_per_sec,
        t.bytes_read,
        t.bytes_written,
        r.input_kbps,
        r.output_kbps,
        f.rejected_connections,
        e.expired,
        e.evictions,
        t.evicted_clients,
        e.hits,
        e.gets.saturating_sub(e.hits),
        ps.channels,
        ps.patterns,
        ps.shard_channels,
        t.commands,
        e.sets,
        t.auth_errors,
        t.auth_refused,
        f.reload_failures,
        f.tls_handshakes.0,
        f.tls_handshakes.1,
        if view.admin { shared.pubsub.disconnections.load(Ordering::Relaxed) } else { 0 },
        if view.admin { shared.engine.key_events_dropped() } else { 0 },
    );
}

fn write_replication(out: &mut Vec<u8>, shared: &Shared) {
    let _ = write!(
        out,
        "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\n\
         master_replid:{:040x}\r\nmaster_replid2:0000000000000000000000000000000000000000\r\n\
         master_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\n\
         repl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n\r\n",
        fnv(&shared.started_ms.to_le_bytes()),
    );
}

fn write_cpu(out: &mut Vec<u8>, view: &View<'_>, f: &Figures) {
    let (user, system) = f.cpu;
    let (main_user, main_system) = if view.admin {
        super::cpu_seconds(&format!("/proc/self/task/{}/stat", std::process::id()))
    } else {
        (0.0, 0.0)
    };
    let _ = write!(
        out,
        "# CPU\r\nused_cpu_sys:{system:.6}\r\nused_cpu_user:{user:.6}\r\n\
         used_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n\
         used_cpu_sys_main_thread:{main_system:.6}\r\nused_cpu_user_main_thread:{main_user:.6}\r\n\r\n",
    );
}

/// fridge's per-tenant keyspace lines, for the admin of a server with tenants: one
/// `db_<tenant>:keys=…,expires=…,avg_ttl=0` per tenant holding keys, after Redis's `db0`
/// (the asking connection's own tenant). Named `db…` so that tools that read Redis's
/// keyspace lines by their prefix (redis_exporter's `redis_db_keys{db="db_<tenant>"}`) read
/// them too; those that want `db<number>` pass over them.
fn write_tenant_keyspace(out: &mut Vec<u8>, shared: &Shared, view: &View<'_>) {
    if !view.admin || view.rows().nth(1).is_none() {
        return;
    }
    for (id, name) in view.rows() {
        let keys = shared.engine.item_count(id);
        if keys > 0 {
            let expires = shared.engine.expiring_count(id);
            let _ = write!(out, "db_{name}:keys={keys},expires={expires},avg_ttl=0\r\n");
        }
    }
}

fn write_tenants(out: &mut Vec<u8>, shared: &Shared, view: &View<'_>) {
    out.extend_from_slice(b"# Tenants\r\n");
    let name = view.tenants.name(view.tenant).unwrap_or_default();
    let _ = write!(out, "tenant:{name}\r\ntenant_id:{}\r\n", view.tenant.0);
    for (id, name) in view.rows() {
        let r = row(shared, view.tenants, id);
        let _ = write!(out, "tenant_{name}:id={},rank={}", id.0, r.rank);
        for (field, n) in row_fields(&r) {
            let _ = write!(out, ",{field}={n}");
        }
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}
