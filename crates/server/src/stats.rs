//! Server counters and their two exports: memcached `stats` and Redis `INFO`.
//!
//! Each worker owns a [`WorkerStats`] in its own cache lines and is its only writer, so a
//! count is a plain load and store, not a locked add. Readers sum all workers; a snapshot may
//! be a few requests stale, which both reference servers allow too. A reset (memcached
//! `stats reset`, Redis `CONFIG RESETSTAT`) records the sums as a [`Baseline`] that the
//! admin's figures subtract (see [`reset`]). Hits, misses and login
//! attempts are also counted per tenant there (arrays of 2 KiB per worker, indexed by tenant
//! id).
//!
//! What a connection sees depends on who asks ([`View`]). The admin (see
//! `Session::is_admin`) sees the server-wide figures, every tenant's row and every client.
//! Any other view is built from zero ([`Figures::of`]), so a counter added later stays
//! hidden until it is given a tenant's value: it holds the settings and the process's public
//! facts (version, pid, uptime, ports, limits, memory size), the tenant's own items, bytes,
//! lookups and evictions, the login attempts naming the user it logged in as, and the
//! connections it may list. Every other counter — commands, bytes on the wire, connections
//! received, other tenants' logins, the cleaner's and the hitmap's work, CPU time — is
//! server-wide activity and reads 0, under memcached's and Redis's own names so tools still
//! parse the reply.

use std::sync::atomic::{AtomicU64, Ordering};

use fridge_engine::item::MAX_TENANTS;
use fridge_engine::{EngineStats, TenantId, TenantStats};
use fridge_proto::memcache;

use crate::cmdstats::CommandTotals;
use crate::shared::{ClientEntry, MEMCACHED_VERSION, REDIS_VERSION, Shared};
use crate::tenants::Tenants;

mod info;
mod metrics;
pub(crate) use crate::worker_stats::{
    Baseline, ClassTotals, LoginCount, TenantCounters, Totals, WorkerStats, add, count_class,
    count_login, inc, tenant_lookups,
};
pub(crate) use info::write_info;
pub(crate) use metrics::{write_json, write_metrics};

/// Hits and misses of `tenant`, summed over workers.
pub(crate) fn tenant_hits_misses(shared: &Shared, tenant: TenantId) -> (u64, u64) {
    let i = usize::from(tenant.0);
    shared.workers.iter().fold((0, 0), |(h, m), w| {
        (
            h + w.tenants.hits[i].load(Ordering::Relaxed),
            m + w.tenants.misses[i].load(Ordering::Relaxed),
        )
    })
}

/// Whose figures a stats request reports, and which clients a connection may list or kill.
#[derive(Debug)]
pub(crate) struct View<'a> {
    /// The tenant the request runs as (logged in, or routed).
    pub tenant: TenantId,
    /// Server-wide figures, every tenant and every client; else only its own.
    pub admin: bool,
    /// The asking connection.
    pub session: u64,
    /// The tenant the connection logged in as.
    pub user: Option<TenantId>,
    pub tenants: &'a Tenants,
}

impl<'a> View<'a> {
    /// The view of the connection `session`, running a request as `tenant`, logged in as
    /// `user` (see `Session::view`).
    pub fn new(
        tenant: TenantId,
        admin: bool,
        session: u64,
        user: Option<TenantId>,
        tenants: &'a Tenants,
    ) -> View<'a> {
        View { tenant, admin, session, user, tenants }
    }

    /// Whether client `id` is visible: every client to the admin; to others, the connection
    /// itself and those logged in as the tenant it logged in as (a client that has not
    /// logged in sees only itself). An invisible client is, to the asker, no client at all.
    pub fn sees_client(&self, id: u64, e: &ClientEntry) -> bool {
        self.admin || id == self.session || self.user.is_some_and(|u| u == e.tenant)
    }

    /// The tenants whose rows this view shows.
    fn rows(&self) -> impl Iterator<Item = (TenantId, &str)> {
        self.tenants
            .iter()
            .filter(|(id, _)| self.admin || *id == self.tenant)
            .map(|(id, e)| (id, e.name.as_str()))
    }
}

/// One tenant's row: the engine's figures, the server's lookup counts and its limits
/// (`crate::limits`).
#[derive(Debug, Clone, Copy)]
struct Row {
    engine: TenantStats,
    hits: u64,
    misses: u64,
    rank: &'static str,
    /// The tenant's `max_keys`, 0 for none.
    max_keys: u64,
    /// The tenant's `max_bytes`, 0 for none.
    max_bytes: u64,
    limits: LimitFigures,
}

/// A tenant's limits and what they refused; a limit of 0 is none.
#[derive(Debug, Clone, Copy, Default)]
struct LimitFigures {
    connections: u64,
    max_connections: u64,
    rejected_connections: u64,
    max_requests_per_second: u64,
    throttled_requests: u64,
}

fn row(shared: &Shared, tenants: &Tenants, tenant: TenantId) -> Row {
    let (hits, misses) = tenant_hits_misses(shared, tenant);
    let i = usize::from(tenant.0);
    let sum = |pick: fn(&WorkerStats) -> &[AtomicU64; MAX_TENANTS]| -> u64 {
        shared.workers.iter().map(|w| pick(w)[i].load(Ordering::Relaxed)).sum()
    };
    let entry = tenants.entry(tenant);
    let policy = shared.engine.tenant_policy(tenant);
    Row {
        engine: shared.engine.tenant_stats(tenant),
        hits,
        misses,
        rank: policy.rank.name(),
        max_keys: policy.max_keys.unwrap_or(0),
        max_bytes: policy.max_bytes.unwrap_or(0),
        limits: LimitFigures {
            connections: u64::from(shared.limits.connections(tenant)),
            max_connections: entry.and_then(|e| e.max_connections).map_or(0, u64::from),
            rejected_connections: sum(|w| &w.tenants.rejected_connections),
            max_requests_per_second: entry.and_then(|e| e.rate).map_or(0, |r| r.per_second.into()),
            throttled_requests: sum(|w| &w.tenants.throttled_requests),
        },
    }
}

/// The row's fields, in the order both exports list them.
fn row_fields(r: &Row) -> [(&'static str, u64); 19] {
    let e = &r.engine;
    let l = &r.limits;
    [
        ("reserved", e.reserved),
        ("target", e.target),
        ("bytes", e.bytes),
        ("items", e.items),
        ("hits", r.hits),
        ("misses", r.misses),
        ("shadow_hits", e.shadow_hits),
        ("evictions", e.evictions),
        ("credits_gained", e.credits_gained),
        ("credits_lost", e.credits_lost),
        ("connections", l.connections),
        ("max_connections", l.max_connections),
        ("rejected_connections", l.rejected_connections),
        ("max_requests_per_second", l.max_requests_per_second),
        ("throttled_requests", l.throttled_requests),
        ("max_keys", r.max_keys),
        ("rejected_keys", e.rejected_keys),
        ("max_bytes", r.max_bytes),
        ("rejected_bytes", e.rejected_bytes),
    ]
}

/// Hitmap bits per live item (`bytes × 8 / items`), 0 when empty.
fn hitmap_bits_per_item(e: &EngineStats) -> f64 {
    if e.items == 0 { 0.0 } else { e.metadata.bytes as f64 * 8.0 / e.items as f64 }
}

/// Where the hitmap lives (`cpu`, `gpu`, `none`; `sketch`: S3-FIFO's queues keep a
/// frequency sketch instead, in host memory) and the GPU's name, from
/// `MetadataStats::device` (`cpu`, `sketch` or `gpu: <name>`, empty without either).
pub(crate) fn hitmap_device(device: &str) -> (&str, Option<&str>) {
    match device.split_once(": ") {
        Some((kind, name)) => (kind, Some(name)),
        None if device.is_empty() => ("none", None),
        None => (device, None),
    }
}

/// The eviction metadata's figures as `(name, value)` pairs, zone histogram included.
fn hitmap_fields(e: &EngineStats) -> Vec<(String, String)> {
    let m = &e.metadata;
    let mut v = vec![
        ("hitmap_digests_applied".to_string(), m.applied.to_string()),
        ("hitmap_pools_dropped".into(), m.pools_dropped.to_string()),
        ("hitmap_compactions".into(), m.compactions.to_string()),
        ("hitmap_bytes".into(), m.bytes.to_string()),
        ("hitmap_levels".into(), m.levels.to_string()),
        // `cpu`, `gpu` or `none`; the GPU's name, spaces as `_`, only with a GPU.
        ("hitmap_device".into(), hitmap_device(&m.device).0.to_string()),
        ("hitmap_bits_per_item".into(), format!("{:.2}", hitmap_bits_per_item(e))),
    ];
    if let (_, Some(name)) = hitmap_device(&m.device) {
        v.push(("hitmap_gpu".into(), name.replace(' ', "_")));
    }
    // `zones` holds one count per zone; zone 0 (in no level and not in the set counter) is
    // Catalyst's zombies, also reported under that name.
    for (i, n) in m.zones.iter().enumerate() {
        v.push((format!("hitmap_zone_{i}"), n.to_string()));
    }
    v.push(("hitmap_zombies".into(), m.zones.first().copied().unwrap_or(0).to_string()));
    v
}

/// Sums of every worker's counters, as they are (not less the reset baseline).
pub(crate) fn totals(shared: &Shared) -> Totals {
    let mut t = Totals::default();
    for w in shared.workers.iter() {
        t.add(w);
    }
    t
}

/// Per-class command counts summed over workers, less the reset baseline; all zero for a
/// tenant's view (they are server-wide activity, see the module doc).
pub(crate) fn class_totals(shared: &Shared, view: &View<'_>) -> ClassTotals {
    let mut c = ClassTotals::default();
    if !view.admin {
        return c;
    }
    for w in shared.workers.iter() {
        c.add(&w.classes);
    }
    c.since(&shared.stats_baseline.lock().unwrap_or_else(|e| e.into_inner()).classes)
}

/// Takes the reset baseline (memcached `stats reset`, Redis `CONFIG RESETSTAT`): from now on
/// the exports count from zero the counters memcached's `stats reset` clears — commands,
/// hits and misses, bytes on the wire, connections received and rejected, evictions,
/// expiries, logins. Gauges (items, bytes, connections now, memory) and the per-tenant rows
/// are untouched.
pub(crate) fn reset(shared: &Shared) {
    let e = shared.engine.stats();
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let mut classes = ClassTotals::default();
    for w in shared.workers.iter() {
        classes.add(&w.classes);
    }
    let base = Baseline {
        totals: totals(shared),
        classes,
        gets: e.gets,
        hits: e.hits,
        sets: e.sets,
        evictions: e.evictions,
        expired: e.expired,
        expired_swept: e.expired_swept,
        sweep_checked: e.sweep_checked,
        total_connections: load(&shared.total_connections),
        rejected_connections: load(&shared.rejected_connections),
        commands: command_totals_now(shared),
    };
    *shared.stats_baseline.lock().unwrap_or_else(|e| e.into_inner()) = base;
}

/// Redis's per-command and error counts, summed over workers, since no reset.
fn command_totals_now(shared: &Shared) -> CommandTotals {
    CommandTotals::of(shared.workers.iter().map(|w| &w.commands_by_row))
}

/// The counters a non-admin view shows: the login attempts naming the tenant `user` logged
/// in as (none for a client that has not logged in); every other counter 0.
fn user_totals(shared: &Shared, user: Option<TenantId>) -> Totals {
    let Some(i) = user.map(|t| usize::from(t.0)) else { return Totals::default() };
    let sum = |pick: fn(&TenantCounters) -> &[AtomicU64; MAX_TENANTS]| -> u64 {
        shared.workers.iter().map(|w| pick(&w.tenants)[i].load(Ordering::Relaxed)).sum()
    };
    Totals {
        auth_cmds: sum(|c| &c.auth_cmds),
        auth_errors: sum(|c| &c.auth_errors),
        auth_refused: sum(|c| &c.auth_refused),
        ..Totals::default()
    }
}

/// Everything the two exports print, as one [`View`] may see it.
#[derive(Debug)]
struct Figures {
    engine: EngineStats,
    totals: Totals,
    /// The viewer's tenant's row.
    own: Row,
    curr_connections: u64,
    total_connections: u64,
    rejected_connections: u64,
    reload_failures: u64,
    /// TLS handshakes completed and failed (`crate::tls`; 0 without TLS).
    tls_handshakes: (u64, u64),
    /// Hashes registered for active field expiry, and registrations dropped for its budget
    /// (`crate::field_expiry`).
    field_deadlines: (u64, u64),
    /// Bytes all clients' buffers take.
    client_memory: u64,
    /// User and system CPU seconds.
    cpu: (f64, f64),
}

impl Figures {
    /// The admin's figures as they are; anyone else's built from zero (see the module doc).
    fn of(shared: &Shared, view: &View<'_>) -> Figures {
        let own = row(shared, view.tenants, view.tenant);
        let all = shared.engine.stats();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        if view.admin {
            let base = *shared.stats_baseline.lock().unwrap_or_else(|e| e.into_inner());
            let since = |now: u64, then: u64| now.saturating_sub(then);
            let engine = EngineStats {
                gets: since(all.gets, base.gets),
                hits: since(all.hits, base.hits),
                sets: since(all.sets, base.sets),
                evictions: since(all.evictions, base.evictions),
                expired: since(all.expired, base.expired),
                expired_swept: since(all.expired_swept, base.expired_swept),
                sweep_checked: since(all.sweep_checked, base.sweep_checked),
                ..all
            };
            return Figures {
                engine,
                totals: totals(shared).since(&base.totals),
                own,
                curr_connections: shared.connections.load(Ordering::Relaxed) as u64,
                total_connections: since(load(&shared.total_connections), base.total_connections),
                rejected_connections: since(
                    load(&shared.rejected_connections),
                    base.rejected_connections,
                ),
                reload_failures: load(&shared.reload_failures),
                tls_handshakes: shared
                    .tls
                    .as_ref()
                    .map_or((0, 0), |tls| (load(&tls.handshakes), load(&tls.handshake_errors))),
                field_deadlines: (
                    shared.field_deadlines.len() as u64,
                    shared.field_deadlines.dropped(),
                ),
                client_memory: shared.client_memory.load(Ordering::Relaxed) as u64,
                cpu: rusage(),
            };
        }
        let clients = shared.clients.lock().unwrap_or_else(|e| e.into_inner());
        let visible = clients.iter().filter(|(id, e)| view.sees_client(**id, e)).count();
        drop(clients);
        Figures {
            engine: tenant_engine(&all, &own),
            totals: user_totals(shared, view.user),
            own,
            curr_connections: visible as u64,
            total_connections: 0,
            rejected_connections: 0,
            reload_failures: 0,
            tls_handshakes: (0, 0),
            field_deadlines: (0, 0),
            client_memory: 0,
            cpu: (0.0, 0.0),
        }
    }
}

/// The engine figures of one tenant's view: the memory's size and shape (settings), the
/// tenant's own items, bytes, lookups and evictions, and nothing else.
fn tenant_engine(all: &EngineStats, own: &Row) -> EngineStats {
    EngineStats {
        max_memory: all.max_memory,
        segment_size: all.segment_size,
        segments: all.segments,
        items: own.engine.items,
        item_bytes: own.engine.bytes,
        hits: own.hits,
        gets: own.hits + own.misses,
        evictions: own.engine.evictions,
        metadata: fridge_engine::MetadataStats {
            zones: vec![0; all.metadata.zones.len()],
            ..fridge_engine::MetadataStats::default()
        },
        ..EngineStats::default()
    }
}

fn rusage() -> (f64, f64) {
    cpu_seconds("/proc/self/stat")
}

/// User and system CPU seconds from a `/proc/…/stat` file: getrusage would need libc; /proc
/// is enough on Linux and costs nothing elsewhere.
fn cpu_seconds(path: &str) -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string(path) else { return (0.0, 0.0) };
    let fields: Vec<&str> =
        stat.rsplit_once(')').map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) / 100.0, ticks(12) / 100.0)
}

/// Appends memcached's `stats` reply (without the closing `END`).
pub(crate) fn write_memcache_stats(out: &mut Vec<u8>, shared: &Shared, view: &View<'_>) {
    let f = Figures::of(shared, view);
    let (e, t, own) = (&f.engine, &f.totals, &f.own);
    let now_ms = shared.now_ms();
    let uptime = now_ms.saturating_sub(shared.started_ms) / 1000;
    let (user, system) = f.cpu;
    let mut num = |name: &str, n: u64| memcache::write_stat_u64(out, name.as_bytes(), n);
    num("pid", u64::from(std::process::id()));
    num("uptime", uptime);
    num("time", now_ms / 1000);
    let text = |out: &mut Vec<u8>, name: &str, value: &str| {
        memcache::write_stat(out, name.as_bytes(), value.as_bytes());
    };
    text(out, "version", MEMCACHED_VERSION);
    text(out, "libevent", "mio");
    text(out, "pointer_size", &(usize::BITS).to_string());
    text(out, "rusage_user", &format!("{user:.6}"));
    text(out, "rusage_system", &format!("{system:.6}"));
    let mut num = |name: &str, n: u64| memcache::write_stat_u64(out, name.as_bytes(), n);
    num("max_connections", shared.config.max_connections as u64);
    num("curr_connections", f.curr_connections);
    num("total_connections", f.total_connections);
    num("rejected_connections", f.rejected_connections);
    num("connection_structures", f.curr_connections);
    num("cmd_get", e.gets);
    num("cmd_set", t.cmd_set);
    num("cmd_flush", t.cmd_flush);
    num("cmd_touch", t.cmd_touch);
    num("get_hits", e.hits);
    num("get_misses", e.gets.saturating_sub(e.hits));
    num("get_expired", e.expired);
    num("get_flushed", e.flushed);
    num("delete_misses", t.delete_misses);
    num("delete_hits", t.delete_hits);
    num("incr_misses", t.incr_misses);
    num("incr_hits", t.incr_hits);
    num("decr_misses", t.decr_misses);
    num("decr_hits", t.decr_hits);
    num("cas_misses", t.cas_misses);
    num("cas_hits", t.cas_hits);
    num("cas_badval", t.cas_badval);
    num("touch_hits", t.touch_hits);
    num("touch_misses", t.cmd_touch.saturating_sub(t.touch_hits));
    num("auth_cmds", t.auth_cmds);
    num("auth_errors", t.auth_errors);
    num("auth_refused", t.auth_refused);
    num("reload_failures", f.reload_failures);
    num("tls_handshakes", f.tls_handshakes.0);
    num("tls_handshake_errors", f.tls_handshakes.1);
    num("hash_field_deadlines", f.field_deadlines.0);
    num("hash_field_deadlines_dropped", f.field_deadlines.1);
    num("bytes_read", t.bytes_read);
    num("bytes_written", t.bytes_written);
    num("limit_maxbytes", shared.engine.memory_limit() as u64);
    // fridge never stops accepting: a connection over the limit is accepted, told, closed.
    num("accepting_conns", 1);
    num("listen_disabled_num", 0);
    num("time_in_listen_disabled_us", 0);
    num("threads", shared.workers.len() as u64);
    num("conn_yields", 0);
    num("client_memory", f.client_memory);
    num("client_memory_limit", shared.config.client_memory_limit() as u64);
    num("evicted_clients", t.evicted_clients);
    num("request_timeouts", t.request_timeouts);
    num("query_overflows", t.query_overflows);
    num("output_overflows", t.output_overflows);
    // fridge's expiry sweep is its LRU crawler: a pass starts when an item may have expired.
    num("lru_crawler_starts", e.sweep_passes);
    num("bytes", e.item_bytes);
    num("curr_items", e.items);
    num("total_items", e.sets);
    num("evictions", e.evictions);
    num("reclaimed", e.expired);
    num("crawler_reclaimed", e.expired_swept);
    num("crawler_items_checked", e.sweep_checked);
    num("expiry_sweep_passes", e.sweep_passes);
    num("segments", e.segments as u64);
    num("segments_free", e.segments_free as u64);
    num("cleaner_passes", e.cleaner_passes);
    num("cleaner_relocated", e.relocated_items);
    num("cleaner_relocated_bytes", e.relocated_bytes);
    num("edits_in_place", e.edits_in_place);
    num("fifo_evictions", e.fifo_evictions);
    num("small_queue_target", e.small_queue_target);
    num("index_evictions", e.index_evictions);
    num("overhead_bytes", e.overhead_bytes as u64);
    num("index_bytes", e.index_bytes as u64);
    num("slb_bytes", e.slb_bytes as u64);
    num("slb_hits", e.slb_hits);
    num("slb_admissions", e.slb_admissions);
    num("shadow_queue_bytes", e.shadow_bytes as u64);
    num("shadow_queue_items", e.shadow_items as u64);
    num("ghost_bytes", e.ghost_bytes as u64);
    num("segments_lent", e.segments_lent as u64);
    num("value_pins", e.value_pins as u64);
    num("segments_held", e.segments_held as u64);
    for (name, value) in hitmap_fields(e) {
        memcache::write_stat(out, name.as_bytes(), value.as_bytes());
    }
    let name = view.tenants.name(view.tenant).unwrap_or_default();
    memcache::write_stat(out, b"tenant", name.as_bytes());
    memcache::write_stat_u64(out, b"tenant_id", u64::from(view.tenant.0));
    memcache::write_stat(out, b"tenant_rank", own.rank.as_bytes());
    for (field, n) in row_fields(own) {
        memcache::write_stat_u64(out, format!("tenant_{field}").as_bytes(), n);
    }
}

/// Appends `stats tenants` (without `END`): `STAT <name>:<field> <value>` per visible tenant.
pub(crate) fn write_memcache_tenants(out: &mut Vec<u8>, shared: &Shared, view: &View<'_>) {
    for (id, name) in view.rows() {
        let r = row(shared, view.tenants, id);
        memcache::write_stat_u64(out, format!("{name}:id").as_bytes(), u64::from(id.0));
        memcache::write_stat(out, format!("{name}:rank").as_bytes(), r.rank.as_bytes());
        for (field, n) in row_fields(&r) {
            memcache::write_stat_u64(out, format!("{name}:{field}").as_bytes(), n);
        }
    }
}

/// Appends `stats conns` (without `END`): per visible client connection, memcached's
/// `<id>:addr`, `<id>:listen_addr` and `<id>:secs_since_last_cmd`. fridge numbers
/// connections by client id (as `CLIENT LIST`), not by file descriptor; memcached's `state`
/// (its connection state machine) and its listening sockets' rows are left out.
pub(crate) fn write_memcache_conns(out: &mut Vec<u8>, shared: &Shared, view: &View<'_>) {
    let now = shared.now_ms();
    let clients = shared.clients.lock().unwrap_or_else(|e| e.into_inner());
    let mut rows: Vec<_> = clients.iter().filter(|(id, e)| view.sees_client(**id, e)).collect();
    rows.sort_by_key(|(id, _)| **id);
    for (id, e) in rows {
        let addr = format!("tcp:{}", e.peer);
        memcache::write_stat(out, format!("{id}:addr").as_bytes(), addr.as_bytes());
        let listen = format!("tcp:{}", e.local);
        memcache::write_stat(out, format!("{id}:listen_addr").as_bytes(), listen.as_bytes());
        let idle = now.saturating_sub(e.last_command_ms.load(Ordering::Relaxed)) / 1000;
        memcache::write_stat_u64(out, format!("{id}:secs_since_last_cmd").as_bytes(), idle);
    }
}

/// Appends `stats settings` (without `END`): memcached's settings that fridge has, in
/// memcached's order, then fridge's own.
pub(crate) fn write_memcache_settings(out: &mut Vec<u8>, shared: &Shared, tenants: &Tenants) {
    let c = &shared.config;
    let num = |out: &mut Vec<u8>, name: &str, n: u64| {
        memcache::write_stat_u64(out, name.as_bytes(), n);
    };
    let text = |out: &mut Vec<u8>, name: &str, value: &[u8]| {
        memcache::write_stat(out, name.as_bytes(), value);
    };
    num(out, "maxbytes", shared.engine.memory_limit() as u64);
    num(out, "maxconns", c.max_connections as u64);
    num(out, "tcpport", u64::from(shared.main_port));
    num(out, "udpport", u64::from(c.udp_port));
    text(out, "inter", c.listen.as_bytes());
    num(out, "verbosity", u64::from(shared.verbose.load(Ordering::Relaxed)));
    text(out, "evictions", b"on");
    let socket = c.unix_socket.as_ref().map(|p| p.display().to_string());
    text(out, "domain_socket", socket.as_deref().unwrap_or("NULL").as_bytes());
    text(out, "umask", format!("{:o}", c.unix_mask).as_bytes());
    text(out, "shutdown_command", if c.enable_shutdown { b"yes" } else { b"no" });
    num(out, "num_threads", shared.workers.len() as u64);
    // fridge keeps no per-prefix figures (`stats detail`).
    text(out, "detail_enabled", b"no");
    text(out, "cas_enabled", b"yes");
    num(out, "tcp_backlog", u64::from(c.listen_backlog));
    text(out, "binding_protocol", b"ascii");
    num(out, "item_size_max", c.max_item_size.0);
    num(out, "idle_timeout", c.idle_timeout);
    // memcached's TLS settings that fridge has (`crate::tls`): PEM keys, TLS 1.2 at least,
    // rustls's session cache; its ciphers, buffer size and kernel TLS are not settable.
    let tls = c.tls_port.is_some() || c.enable_ssl;
    text(out, "ssl_enabled", if tls { b"yes" } else { b"no" });
    let path = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string());
    text(out, "ssl_chain_cert", path(&c.tls_cert_file).as_deref().unwrap_or("NULL").as_bytes());
    text(out, "ssl_key", path(&c.tls_key_file).as_deref().unwrap_or("NULL").as_bytes());
    let verify = match c.tls_client_auth() {
        crate::config::TlsAuthClients::No => 0,
        crate::config::TlsAuthClients::Optional => 1,
        crate::config::TlsAuthClients::Yes => 2,
    };
    num(out, "ssl_verify_mode", verify);
    num(out, "ssl_keyformat", 1);
    text(out, "ssl_ca_cert", path(&c.tls_ca_cert_file).as_deref().unwrap_or("NULL").as_bytes());
    text(out, "ssl_session_cache", if tls { b"yes" } else { b"no" });
    text(out, "ssl_min_version", b"tlsv1.2");
    num(out, "key_max_len", c.max_key_len as u64);
    num(out, "write_chunk", c.write_chunk.0);
    num(out, "segment_size", c.engine_segment_size() as u64);
    num(out, "hitmap_bits_per_item", c.hitmap_bits() as u64);
    num(out, "slb_size", c.slb_size.0);
    num(out, "credit_floor", u64::from(c.credit_floor));
    text(out, "credit_weight", c.credit_weight.name().as_bytes());
    num(out, "auth_failure_burst", u64::from(tenants.failure_limit.burst));
    let rate = tenants.failure_limit.rate.to_string();
    text(out, "auth_failure_rate", rate.as_bytes());
    let includes = if c.memory_includes_index { b"yes" as &[u8] } else { b"no" };
    text(out, "memory_includes_index", includes);
}
