//! fridge-server: the fridge cache server — listeners, event loops, sessions, and the dispatch
//! of memcached (text + meta) and Redis (RESP2/RESP3) requests to the engine.
//!
//! The binary `fridge` is a thin `main` over [`Server`]; tests start a server in-process on an
//! ephemeral port the same way (`port = 0`, then [`Server::local_addr`]).
//!
//! # Thread model
//!
//! ```text
//!   signal thread                 acceptor thread ("fridge-accept")
//!   SIGTERM/SIGINT ──shutdown──►  mio poll: listeners + waker
//!   SIGHUP ──reload tenants
//!                                   │ accept, count, round-robin
//!                                   ▼ mpsc channel + Waker, one per worker
//!   ┌───────────────────────┬───────────────────────┬─────
//!   ▼                       ▼                       ▼
//!  worker 0 ("fridge-w0")  worker 1                 …     one mio poll each, edge-triggered;
//!   connections (slab)      connections              owns its connections and one engine
//!   engine::Worker          engine::Worker           `Worker` handle for its whole life
//!   └──────────── engine (shared: index, segments) ─────────┘
//!                  cleaner thread ("fridge-cleaner"), clock ticker ("fridge-clock")
//! ```
//!
//! - A connection lives on one worker from accept to close; nothing about it is shared except
//!   a registry entry (address, name, kill flag) that `CLIENT LIST`/`KILL` read, touched only
//!   on connect, `CLIENT SETNAME` and close.
//! - Each worker turn: poll, queue connections with events, then give each queued connection
//!   one bounded step — read at most [`READ_BUDGET`] bytes, run complete requests while fewer
//!   than [`OUTPUT_SOFT_LIMIT`] reply bytes wait, write at most [`Config::write_chunk`] bytes
//!   (128 KiB). A connection with more to do goes to the back of the queue, so a 1 MB reply is
//!   written in chunks between other connections' small requests.
//! - Buffers are per connection and reused: requests are parsed in place (the proto crate
//!   borrows from the read buffer) and replies are encoded into the write buffer, values
//!   copied straight from engine memory. Steady state allocates nothing per request; buffers
//!   that grew for a large value shrink back on the housekeeping tick once empty.
//! - Statistics are per-worker counters with a single writer; `stats`/`INFO` sum them.
//! - The engine knows no protocol: what the protocols need beyond get/store/delete (memcached's
//!   and Redis's counters) is declared here and built on the engine's generic
//!   read-modify-write (`counter.rs`).
//! - Shutdown: the acceptor drops its listeners, workers stop reading, finish the requests
//!   already buffered, flush replies (for at most [`DRAIN_TIMEOUT`]), close, and exit.
//!
//! Goals: drop-in compatibility (memcached's and Redis's exact replies), bounded memory per
//! connection whatever a client sends, no panics on client input. Non-goals here: persistence,
//! replication, Redis data types other than strings.
//!
//! # Tenants
//!
//! Every request runs as one tenant (see [`tenants`] and `docs/tenants.md`): the one the
//! connection logged in as (`AUTH`, `HELLO … AUTH`, memcached's `set` carrying `user pass`),
//! or, for clients that have not logged in where that is allowed, `default` or the tenant
//! whose key prefix matches. Workers read an immutable snapshot of the tenants; a reload
//! (SIGHUP, `CONFIG RELOAD`) publishes a new one and bumps a generation counter that each
//! worker checks once per turn, and fails closed: a file that does not parse, or that would
//! let clients in without a password where the running configuration makes them log in,
//! changes nothing. Every login is answered at once; failed logins are limited by token
//! buckets per client address and per user name, past which a login is refused unchecked
//! (see the `auth` module).

#![forbid(unsafe_code)]

mod auth;
mod config;
mod counter;
mod memcache;
mod password;
mod resp;
mod session;
mod stats;
pub mod tenants;
mod worker;

use std::cell::Cell;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use fridge_engine::{Clock, CoarseClock, Engine, SystemClock, TenantId};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

pub use config::TenantConfig;
pub use config::{Cli, Config, Millis, Protocol, Size, Tool};
pub use password::PasswordHash;
pub use stats::WorkerStats;

/// Bytes read from one connection per turn before others get theirs.
pub const READ_BUDGET: usize = 256 * 1024;
/// Requests stop being run on a connection while this many reply bytes wait to be sent.
pub const OUTPUT_SOFT_LIMIT: usize = 256 * 1024;
/// How long shutdown waits for replies to drain.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// The version memcached clients see (`version`, `stats`).
pub const MEMCACHED_VERSION: &str = concat!("1.6.0-fridge-", env!("CARGO_PKG_VERSION"));
/// The version Redis clients see (`INFO`, `HELLO`).
pub const REDIS_VERSION: &str = "7.0.0";

/// A connection handed from the acceptor to a worker.
#[derive(Debug)]
pub(crate) struct NewConn {
    pub stream: TcpStream,
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
    pub shutdown: AtomicBool,
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
    /// Reloads refused (SIGHUP or `CONFIG RELOAD`).
    pub reload_failures: AtomicU64,
}

impl Shared {
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
    pub(crate) fn reload(&self) -> Result<Arc<tenants::Tenants>, String> {
        let result = self.try_reload();
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
                let largest = clients.values_mut().filter(|e| !e.killed).max_by_key(|e| e.memory);
                let Some(e) = largest.filter(|e| e.memory > 0) else { break };
                e.killed = true;
                leaving += e.memory;
                workers.push(e.worker);
                stats::inc(&stats.evicted_clients);
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

thread_local! {
    /// Whether this thread serves a server whose clock was given to it.
    static INJECTED_CLOCK: Cell<bool> = const { Cell::new(false) };
}

const ACCEPT_WAKER: Token = Token(usize::MAX);
const MAIN_LISTENER: Token = Token(0);
const RESP_LISTENER: Token = Token(1);
/// Connections over the limit that may wait at once for their refusal to be sent.
const MAX_REJECTING: usize = 64;

/// A running server. Dropping it does not stop it: call [`Server::shutdown`] or keep a
/// [`ShutdownHandle`].
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    resp_addr: Option<SocketAddr>,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
    accept_waker: Arc<Waker>,
}

/// Asks a server to shut down gracefully; cheap to clone, usable from any thread.
#[derive(Debug, Clone)]
pub struct ShutdownHandle {
    shared: Arc<Shared>,
    accept_waker: Arc<Waker>,
}

impl ShutdownHandle {
    /// Starts a graceful shutdown: stop accepting, finish in-flight requests, close.
    pub fn shutdown(&self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        let _ = self.accept_waker.wake();
    }
}

/// Rereads the tenant and login settings of the configuration file: existing names keep their
/// ids and their cached data, new names get new ids, removed tenants can no longer log in
/// (their open connections are closed at their next request). Other settings need a restart.
/// A file that fails to parse or validate, or that would let clients in without a password
/// where a login is required now, is refused and the running configuration stays.
#[derive(Debug, Clone)]
pub struct ReloadHandle {
    shared: Arc<Shared>,
}

impl ReloadHandle {
    /// Reloads; on error (unreadable, invalid or unsafe file, explained) the tenants in force
    /// stay.
    pub fn reload(&self) -> Result<(), String> {
        self.shared.reload().map(drop)
    }
}

impl Server {
    /// Binds the listeners and starts the engine, the workers and the acceptor. When this
    /// returns, the ports accept connections.
    pub fn start(config: Config) -> io::Result<Server> {
        let clock: Arc<dyn Clock> = Arc::new(CoarseClock::start()?);
        Server::start_inner(config, clock, false)
    }

    /// [`Server::start`] with the clock every thread reads time from, expiry deadlines
    /// included (the real server reads the system clock for those), so a test can move time
    /// with a `ManualClock` instead of sleeping.
    pub fn start_with_clock(config: Config, clock: Arc<dyn Clock>) -> io::Result<Server> {
        Server::start_inner(config, clock, true)
    }

    fn start_inner(
        config: Config,
        clock: Arc<dyn Clock>,
        injected_clock: bool,
    ) -> io::Result<Server> {
        config.validate().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
        let addr = config.addr().map_err(invalid)?;
        let resp_addr = config.resp_addr().map_err(invalid)?;
        let mut listener = TcpListener::bind(addr)?;
        let mut resp_listener = resp_addr.map(TcpListener::bind).transpose()?;
        let addr = listener.local_addr()?;
        let resp_addr = resp_listener.as_ref().map(TcpListener::local_addr).transpose()?;

        let engine = Engine::with_clock(config.engine(), Arc::clone(&clock))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.0))?;
        let n = config.worker_count();
        let mut registry = tenants::Registry::new();
        let table = registry.apply(&config, &engine).map_err(invalid)?;
        let shared = Arc::new(Shared {
            tenants_generation: AtomicU64::new(table.generation),
            tenants: RwLock::new(table),
            registry: Mutex::new(registry),
            auth_failures: Mutex::new(auth::FailureLog::default()),
            reload_failures: AtomicU64::new(0),
            started_ms: clock.now_ms(),
            clock,
            injected_clock,
            engine,
            shutdown: AtomicBool::new(false),
            connections: AtomicUsize::new(0),
            rejecting: AtomicUsize::new(0),
            total_connections: AtomicU64::new(0),
            rejected_connections: AtomicU64::new(0),
            next_client_id: AtomicU64::new(1),
            clients: Mutex::new(HashMap::new()),
            client_memory: AtomicUsize::new(0),
            workers: (0..n).map(|_| WorkerStats::default()).collect(),
            kill_pending: (0..n).map(|_| AtomicBool::new(false)).collect(),
            wakers: Mutex::new(Vec::new()),
            main_port: addr.port(),
            resp_port: resp_addr.map(|a| a.port()),
            config,
        });

        let mut senders = Vec::with_capacity(n);
        let mut handles = Vec::with_capacity(n);
        for i in 0..n {
            let poll = Poll::new()?;
            let waker = Arc::new(Waker::new(poll.registry(), worker::WAKER)?);
            let (tx, rx) = mpsc::channel();
            let engine_worker = shared
                .engine
                .worker()
                .map_err(|e| io::Error::other(format!("engine worker: {e}")))?;
            shared.wakers.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::clone(&waker));
            let sh = Arc::clone(&shared);
            let handle =
                std::thread::Builder::new().name(format!("fridge-w{i}")).spawn(move || {
                    INJECTED_CLOCK.set(sh.injected_clock);
                    worker::run(i, poll, rx, engine_worker, sh);
                })?;
            senders.push((tx, waker));
            handles.push(handle);
        }

        let poll = Poll::new()?;
        let accept_waker = Arc::new(Waker::new(poll.registry(), ACCEPT_WAKER)?);
        poll.registry().register(&mut listener, MAIN_LISTENER, Interest::READABLE)?;
        if let Some(l) = resp_listener.as_mut() {
            poll.registry().register(l, RESP_LISTENER, Interest::READABLE)?;
        }
        let sh = Arc::clone(&shared);
        let acceptor =
            std::thread::Builder::new().name("fridge-accept".into()).spawn(move || {
                accept_loop(poll, listener, resp_listener, &senders, &sh);
                // Listeners are closed now; tell the workers to drain and wait for them.
                sh.shutdown.store(true, Ordering::SeqCst);
                for (_, waker) in &senders {
                    let _ = waker.wake();
                }
                drop(senders);
                for h in handles {
                    let _ = h.join();
                }
            })?;
        Ok(Server { addr, resp_addr, shared, acceptor: Some(acceptor), accept_waker })
    }

    /// The main port's address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The RESP-only port's address, if one was opened.
    pub fn resp_addr(&self) -> Option<SocketAddr> {
        self.resp_addr
    }

    /// The engine behind the server (for tests and embedding).
    pub fn engine(&self) -> &Engine {
        &self.shared.engine
    }

    /// Rereads the tenants from the configuration file (what SIGHUP does); see
    /// [`ReloadHandle`].
    pub fn reload(&self) -> Result<(), String> {
        self.shared.reload().map(drop)
    }

    /// A handle that reloads the tenants from another thread (a signal handler).
    pub fn reload_handle(&self) -> ReloadHandle {
        ReloadHandle { shared: Arc::clone(&self.shared) }
    }

    /// A handle that can shut the server down from another thread (a signal handler).
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle {
            shared: Arc::clone(&self.shared),
            accept_waker: Arc::clone(&self.accept_waker),
        }
    }

    /// Blocks until the server has shut down (after [`ShutdownHandle::shutdown`]).
    pub fn wait(mut self) {
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
    }

    /// Shuts down gracefully and waits for every thread to finish.
    pub fn shutdown(self) {
        self.shutdown_handle().shutdown();
        self.wait();
    }
}

type WorkerSender = (mpsc::Sender<NewConn>, Arc<Waker>);

fn accept_loop(
    mut poll: Poll,
    main: TcpListener,
    resp: Option<TcpListener>,
    workers: &[WorkerSender],
    shared: &Shared,
) {
    let mut events = Events::with_capacity(64);
    let mut next = 0usize;
    let main_protocol = shared.config.protocol;
    while !shared.shutdown.load(Ordering::SeqCst) {
        if let Err(e) = poll.poll(&mut events, Some(Duration::from_millis(500))) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            eprintln!("fridge: accept poll failed: {e}");
            return;
        }
        for event in &events {
            let (listener, protocol) = match event.token() {
                MAIN_LISTENER => (&main, main_protocol),
                RESP_LISTENER => match &resp {
                    Some(l) => (l, Protocol::Resp),
                    None => continue,
                },
                _ => continue,
            };
            loop {
                let (stream, peer) = match listener.accept() {
                    Ok(s) => s,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        // Out of descriptors and the like: back off briefly.
                        eprintln!("fridge: accept failed: {e}");
                        std::thread::sleep(Duration::from_millis(10));
                        break;
                    }
                };
                let _ = stream.set_nodelay(true);
                let local = stream.local_addr().unwrap_or(peer);
                let live = shared.connections.load(Ordering::Relaxed);
                let reject = live >= shared.config.max_connections;
                if reject {
                    shared.rejected_connections.fetch_add(1, Ordering::Relaxed);
                    if shared.rejecting.load(Ordering::Relaxed) >= MAX_REJECTING {
                        continue; // dropped: closes at once
                    }
                    shared.rejecting.fetch_add(1, Ordering::Relaxed);
                } else {
                    shared.connections.fetch_add(1, Ordering::Relaxed);
                    shared.total_connections.fetch_add(1, Ordering::Relaxed);
                }
                let id = shared.next_client_id.fetch_add(1, Ordering::Relaxed);
                let (tx, waker) = &workers[next % workers.len()];
                next = next.wrapping_add(1);
                let conn = NewConn { stream, peer, local, protocol, reject, id };
                if tx.send(conn).is_ok() {
                    let _ = waker.wake();
                }
            }
        }
    }
}
