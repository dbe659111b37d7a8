//! What every thread of the server shares: the configuration, the engine, the connection
//! registry, the tenants snapshot, the per-worker counters ([`Shared`]), and the limits and
//! versions the dispatchers use.

use std::cell::Cell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use fridge_engine::{Clock, Engine, SystemClock, TenantId};
use mio::Waker;

use crate::config::{Config, Protocol};
use crate::listen::Stream;
use crate::worker_stats::{Baseline, WorkerStats};
use crate::{auth, tenants};

pub use crate::config::{OUTPUT_SOFT_LIMIT, READ_BUDGET};
/// How long shutdown waits for replies to drain.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// The version memcached clients see (`version`, `stats`).
pub const MEMCACHED_VERSION: &str = concat!("1.6.0-fridge-", env!("CARGO_PKG_VERSION"));
/// The version Redis clients see (`INFO`, `HELLO`).
pub const REDIS_VERSION: &str = "7.0.0";

/// A connection handed from the acceptor to a worker.
#[derive(Debug)]
pub(crate) struct NewConn {
    pub stream: Stream,
    /// The client's address (`0.0.0.0:0` on the unix socket).
    pub peer: SocketAddr,
    pub local: SocketAddr,
    /// Speak RESP only (the `--resp-port`, or `protocol = "resp"`).
    pub protocol: Protocol,
    /// Over the connection limit: answer the first request with the protocol's error, close.
    pub reject: bool,
    pub id: u64,
}

/// What `CLIENT LIST` knows about a connection.
#[derive(Debug, Clone)]
pub(crate) struct ClientEntry {
    pub peer: SocketAddr,
    pub local: SocketAddr,
    pub name: String,
    pub created_ms: u64,
    pub worker: usize,
    pub killed: bool,
    /// The tenant the connection runs as (`default` until it logs in).
    pub tenant: TenantId,
    /// Bytes the connection's buffers take, as last reported by its worker.
    pub memory: usize,
    /// When the connection's last command arrived (ms on the coarse clock: the time of the
    /// read that brought it); stored by its worker, one relaxed store per command.
    pub last_command_ms: Arc<AtomicU64>,
    /// The connection's slot on its worker, and its pub/sub bytes in flight: where
    /// invalidations redirected to it go.
    pub slot: usize,
    pub pending: Arc<crate::pubsub::Pending>,
    /// `CLIENT NO-EVICT on`: the clients' memory limit closes other connections first.
    pub no_evict: bool,
}

/// The rates `INFO` shows as `instantaneous_*`, and the counts and time (ms) they were
/// taken at.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct InfoSample {
    pub ms: u64,
    pub commands: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub ops_per_sec: u64,
    pub input_kbps: f64,
    pub output_kbps: f64,
}

/// State shared by every thread. Written rarely: counters on the request path are per worker.
#[derive(Debug)]
pub(crate) struct Shared {
    pub config: Config,
    pub engine: Engine,
    pub clock: Arc<dyn Clock>,
    /// Whether `clock` was given to the server ([`Server::start_with_clock`]) rather than
    /// started by it; see [`precise_now_ms`].
    pub injected_clock: bool,
    pub started_ms: u64,
    /// Set once a graceful shutdown has begun; see [`Shared::request_shutdown`].
    pub shutdown: AtomicBool,
    /// Set by Redis's `SHUTDOWN NOSAVE`: the graceful stop writes no restart file.
    pub restart_nosave: AtomicBool,
    /// The acceptor's waker (set once it exists): a shutdown wakes it, so it sleeps without a
    /// timeout in between.
    pub accept_waker: std::sync::OnceLock<Arc<Waker>>,
    /// The log level: `-v` at start, memcached's `verbosity` command later.
    pub verbose: AtomicU8,
    /// Live client connections (rejected ones excluded).
    pub connections: AtomicUsize,
    /// Connections waiting to be told they are over the limit.
    pub rejecting: AtomicUsize,
    pub total_connections: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub next_client_id: AtomicU64,
    pub clients: Mutex<HashMap<u64, ClientEntry>>,
    pub workers: Box<[WorkerStats]>,
    /// Per worker: set when a client of that worker was killed.
    pub kill_pending: Box<[AtomicBool]>,
    pub wakers: Mutex<Vec<Arc<Waker>>>,
    pub main_port: u16,
    pub resp_port: Option<u16>,
    /// The TLS port, if one is open.
    pub tls_port: Option<u16>,
    /// The certificates and TLS counters, when a port speaks TLS (`crate::tls`).
    pub tls: Option<Arc<crate::tls::Tls>>,
    /// Tenant names and ids; locked on reload only.
    pub registry: Mutex<tenants::Registry>,
    /// The current tenants snapshot; workers copy the `Arc` when the generation changes.
    pub tenants: RwLock<Arc<tenants::Tenants>>,
    /// The current snapshot's generation (read once per worker turn).
    pub tenants_generation: AtomicU64,
    /// Bytes all client connections' buffers take (each worker adds its connections' changes).
    pub client_memory: AtomicUsize,
    /// Recent failed logins per client address and per user name; locked once or twice per
    /// login attempt, never per request.
    pub auth_failures: Mutex<auth::FailureLog>,
    /// Per tenant: connections logged in, and the shared request buckets
    /// (`crate::limits`); a login takes a slot, a batch of requests takes tokens.
    pub limits: crate::limits::TenantLimits,
    /// Reloads refused (SIGHUP or `CONFIG RELOAD`).
    pub reload_failures: AtomicU64,
    /// The counters at the last stats reset; locked by `stats` and its reset only.
    pub stats_baseline: Mutex<Baseline>,
    /// The largest `used_memory` an `INFO` has seen (`used_memory_peak`).
    pub memory_peak: AtomicU64,
    /// The counts `INFO`'s `instantaneous_*` rates were last taken from.
    pub info_sample: Mutex<InfoSample>,
    /// Redis's slow log and its settings.
    pub slowlog: crate::slowlog::SlowLog,
    /// How many hot keys the views show (`hotkeys-top-k`, at most the engine's counters).
    pub hot_top_k: AtomicUsize,
    /// Redis's latency monitor.
    pub latency: crate::latency::Latency,
    /// The log watchers (`watch`), shared with the engine's eviction observer.
    pub watch: Arc<crate::watch::Hub>,
    /// One transaction gate per worker (see `crate::transaction`).
    pub gates: crate::transaction::Gates,
    /// Pub/sub channels and the workers' mailboxes.
    pub pubsub: crate::pubsub::Hub,
    /// Client-side caching's tracking table.
    pub tracking: crate::tracking::Tracking,
    /// The `notify-keyspace-events` setting.
    pub notify: crate::keyspace::KeyspaceEvents,
    /// Redis databases: how many, and each tenant's `SWAPDB` map.
    pub databases: crate::databases::Databases,
    /// Scripting's Lua states and the running script (`crate::script`).
    pub scripting: crate::script::Scripting,
    /// `CLIENT PAUSE`.
    pub pause: crate::pause::Pause,
    /// Blocking pops' wait queues and wake-ups.
    pub blocking: crate::blocking::Blocking,
    /// Hashes with field deadlines, for worker 0's active field expiry.
    pub field_deadlines: crate::field_expiry::FieldDeadlines,
    /// `INFO latencystats`'s settings and reset baseline.
    pub latency_tracking: crate::latencystats::LatencyTracking,
    /// Cluster mode's slot map (`--cluster-config`); `None` without it.
    pub cluster: Option<crate::cluster::Cluster>,
}

impl Shared {
    /// Begins a graceful shutdown: sets the flag and wakes the acceptor, which closes the
    /// listeners and tells the workers to drain.
    pub fn request_shutdown(&self) {
        self.shutdown.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(w) = self.accept_waker.get() {
            let _ = w.wake();
        }
    }

    /// The current tenants snapshot.
    pub(crate) fn tenants(&self) -> Arc<tenants::Tenants> {
        Arc::clone(&self.tenants.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Rereads the configuration file's tenant settings (`tenants`, `allow_unauthenticated`,
    /// `auth_failure_rate`, `auth_failure_burst`) and publishes them; the rest of the file
    /// needs a restart. Cached data stays. On error nothing changes, and the failure is
    /// counted: the file cannot be read or parsed, does not validate (as at start), or would
    /// let clients in without a password where the running configuration makes them log in
    /// ([`tenants::check_reload`]).
    ///
    /// With TLS on, the certificate files are read again first (`crate::tls`): new handshakes
    /// use them, open connections keep theirs, and a file that does not load leaves the
    /// certificates in use (the error is returned, the rest still reloaded). In cluster mode
    /// the cluster-config file is reread too, and the keys of slots this server no longer
    /// serves are dropped ([`crate::cluster::Cluster::reload`]). Without `--config`, a TLS or
    /// cluster server's reload is its certificates and its map alone.
    pub(crate) fn reload(&self) -> Result<Arc<tenants::Tenants>, String> {
        let certificates = match &self.tls {
            Some(tls) => tls.reload().map_err(|e| format!("certificates not reloaded: {e}")),
            None => Ok(()),
        };
        let map = match &self.cluster {
            Some(c) => c.reload(&self.engine, TenantId(0), self.config.databases).map(|dropped| {
                log::info!(
                    "fridge: cluster config reloaded: {} slots served here, {dropped} keys of \
                     slots no longer served dropped",
                    c.map().served()
                );
            }),
            None => Ok(()),
        }
        .map_err(|e| format!("cluster map unchanged: {e}"));
        let file_only = self.tls.is_some() || self.cluster.is_some();
        let tenants = match file_only && self.config.config_file.is_none() {
            true => Ok(self.tenants()),
            false => self.try_reload().map_err(|e| format!("tenants unchanged: {e}")),
        };
        let errors: Vec<String> = [tenants.as_ref().err().cloned(), map.err(), certificates.err()]
            .into_iter()
            .flatten()
            .collect();
        let result = match errors.is_empty() {
            true => tenants,
            false => Err(errors.join("; ")),
        };
        if result.is_err() {
            self.reload_failures.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    fn try_reload(&self) -> Result<Arc<tenants::Tenants>, String> {
        let path = self
            .config
            .config_file
            .as_deref()
            .ok_or("the server was started without --config: there is no file to reload")?;
        let file = Config::from_file(path)?;
        let config = Config {
            tenants: file.tenants,
            allow_unauthenticated: file.allow_unauthenticated,
            auth_failure_rate: file.auth_failure_rate,
            auth_failure_burst: file.auth_failure_burst,
            ..self.config.clone()
        };
        // Under the registry lock, so two reloads cannot both judge against the same snapshot.
        let mut registry = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        tenants::check_reload(&self.tenants(), &config)?;
        let table = registry.apply(&config, &self.engine)?;
        *self.tenants.write().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&table);
        self.tenants_generation.store(table.generation, Ordering::Release);
        Ok(table)
    }

    /// The coarse clock: one load, may lag real time (its ticker can be descheduled), never
    /// leads it. Expiry checks use it, so a key is never gone before its deadline.
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Asks the workers to close client connections, largest buffers first, until the
    /// clients' memory is back under `max_client_memory` (Redis's client eviction). Called by
    /// a worker whose connection's buffers grew past the limit; counts the evictions in
    /// `stats`. The owners close the connections at their next turn.
    pub(crate) fn evict_clients(&self, stats: &WorkerStats) {
        let limit = self.config.client_memory_limit();
        let mut workers = Vec::new();
        {
            let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
            // Connections already told to close still count until their worker closes them.
            let mut leaving: usize = clients.values().filter(|e| e.killed).map(|e| e.memory).sum();
            while self.client_memory.load(Ordering::Relaxed).saturating_sub(leaving) > limit {
                let largest = clients
                    .values_mut()
                    .filter(|e| !e.killed && !e.no_evict)
                    .max_by_key(|e| e.memory);
                let Some(e) = largest.filter(|e| e.memory > 0) else { break };
                e.killed = true;
                leaving += e.memory;
                workers.push(e.worker);
                crate::worker_stats::inc(&stats.evicted_clients);
            }
        }
        workers.sort_unstable();
        workers.dedup();
        for w in workers {
            self.kill_pending[w].store(true, Ordering::SeqCst);
            self.wake(w);
        }
    }

    /// Wakes worker `i` (after a kill or at shutdown).
    pub(crate) fn wake(&self, i: usize) {
        let wakers = self.wakers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = wakers.get(i) {
            let _ = w.wake();
        }
    }
}

/// The time a relative expiry counts from: the system clock, read only by requests that set
/// an expiry (GETs never pay for it), and never below the coarse reading `coarse_ms` the
/// request already has. The coarse clock may lag real time by a tick or more under load; a
/// deadline counted from it would come early by that lag.
///
/// A server started with its clock given ([`Server::start_with_clock`]) counts from that clock
/// alone: it is the only time there is (a test's `ManualClock`). The dialect code asks with
/// the coarse reading only, so which applies is a property of the worker thread, set once when
/// it starts.
pub(crate) fn precise_now_ms(coarse_ms: u64) -> u64 {
    if INJECTED_CLOCK.get() { coarse_ms } else { SystemClock.now_ms().max(coarse_ms) }
}

/// Marks the calling thread as serving a server whose clock was given to it (see
/// [`precise_now_ms`]).
pub(crate) fn use_injected_clock(injected: bool) {
    INJECTED_CLOCK.set(injected);
}

thread_local! {
    /// Whether this thread serves a server whose clock was given to it.
    static INJECTED_CLOCK: Cell<bool> = const { Cell::new(false) };
}
