//! The running server: starting the engine, the workers and the acceptor over bound
//! listeners ([`Server::serve`]; [`Server::start`] binds them too), the acceptor's loop, and
//! the handles that shut it down or reload its tenants from other threads.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use fridge_engine::{Clock, CoarseClock, Engine};
use mio::net::{TcpListener, UnixListener};
use mio::{Events, Interest, Poll, Token, Waker};

use crate::config::{Config, Protocol};
use crate::listen::{Listeners, Stream};
use crate::shared::{NewConn, Shared};
use crate::stats::WorkerStats;
use crate::{auth, tenants, worker};

const ACCEPT_WAKER: Token = Token(usize::MAX);
/// Connections over the limit that may wait at once for their refusal to be sent.
const MAX_REJECTING: usize = 64;

/// A running server. Dropping it does not stop it: call [`Server::shutdown`] or keep a
/// [`ShutdownHandle`].
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    addrs: Vec<SocketAddr>,
    resp_addr: Option<SocketAddr>,
    admin_addr: Option<SocketAddr>,
    tls_addr: Option<SocketAddr>,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

/// Describes a server's life so far (see [`Server::summary_handle`]).
#[derive(Debug, Clone)]
pub struct SummaryHandle {
    shared: Arc<Shared>,
}

impl SummaryHandle {
    /// Uptime, connections, commands, hits and misses, items held and evictions, on one line.
    pub fn summary(&self) -> String {
        let s = &self.shared;
        let up = s.now_ms().saturating_sub(s.started_ms) / 1000;
        let t = crate::stats::totals(s);
        let e = s.engine.stats();
        format!(
            "up {up} s, {} connections, {} gets ({} hits), {} sets, {} items held, {} evicted",
            s.total_connections.load(Ordering::Relaxed),
            e.gets,
            e.hits,
            t.cmd_set,
            e.items,
            e.evictions,
        )
    }
}

/// Asks a server to shut down gracefully; cheap to clone, usable from any thread.
#[derive(Debug, Clone)]
pub struct ShutdownHandle {
    shared: Arc<Shared>,
}

impl ShutdownHandle {
    /// Starts a graceful shutdown: stop accepting, finish in-flight requests, close.
    pub fn shutdown(&self) {
        self.shared.request_shutdown();
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
        Server::serve(Listeners::bind(config)?)
    }

    /// Starts the engine, the workers and the acceptor on listeners already bound (the
    /// binary binds, then detaches and drops privileges, then serves).
    pub fn serve(listeners: Listeners) -> io::Result<Server> {
        let clock: Arc<dyn Clock> = Arc::new(CoarseClock);
        Server::start_inner(listeners, clock, false)
    }

    /// [`Server::start`] with the clock every thread reads time from, expiry deadlines
    /// included (the real server reads the system clock for those), so a test can move time
    /// with a `ManualClock` instead of sleeping.
    pub fn start_with_clock(config: Config, clock: Arc<dyn Clock>) -> io::Result<Server> {
        Server::start_inner(Listeners::bind(config)?, clock, true)
    }

    fn start_inner(
        listeners: Listeners,
        clock: Arc<dyn Clock>,
        injected_clock: bool,
    ) -> io::Result<Server> {
        let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
        let addr = listeners.local_addr();
        let addrs = listeners.tcp.iter().map(TcpListener::local_addr).collect::<io::Result<_>>()?;
        let resp_addr = listeners.resp.as_ref().map(TcpListener::local_addr).transpose()?;
        let admin_addr = listeners.admin.as_ref().map(TcpListener::local_addr).transpose()?;
        let tls_addr = listeners.tls_port.as_ref().map(TcpListener::local_addr).transpose()?;
        let Listeners { config, tcp, unix, resp, udp, admin, tls_port, tls } = listeners;

        let engine = Engine::with_clock(config.engine(), Arc::clone(&clock))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.0))?;
        match engine.metadata_note() {
            Some(note) => log::warn!("fridge: {note}"),
            None if config.metadata != crate::config::MetadataChoice::Cpu => {
                log::info!("fridge: hitmap on {}", engine.stats().metadata.device)
            }
            None => {}
        }
        let n = config.worker_count();
        let mut registry = tenants::Registry::new();
        let table = registry.apply(&config, &engine).map_err(invalid)?;
        let ports: Vec<u16> =
            std::iter::once(addr.port()).chain(resp_addr.map(|a| a.port())).collect();
        let cluster = config
            .cluster_config
            .as_ref()
            .map(|path| crate::cluster::Cluster::load(path.clone(), &config.listen, ports))
            .transpose()
            .map_err(invalid)?;
        let watch = Arc::new(crate::watch::Hub::new(n, Arc::clone(&clock)));
        let observer = Arc::clone(&watch);
        engine.set_eviction_observer(Box::new(move |ev| observer.eviction(ev)));
        let shared = Arc::new(Shared {
            watch,
            gates: crate::transaction::Gates::new(n + udp.len()),
            tenants_generation: AtomicU64::new(table.generation),
            tenants: RwLock::new(table),
            registry: Mutex::new(registry),
            auth_failures: Mutex::new(auth::FailureLog::default()),
            limits: crate::limits::TenantLimits::default(),
            reload_failures: AtomicU64::new(0),
            stats_baseline: Mutex::default(),
            memory_peak: AtomicU64::new(0),
            info_sample: Mutex::default(),
            slowlog: Default::default(),
            hot_top_k: AtomicUsize::new(crate::hotkeys::DEFAULT_TOP_K),
            latency: Default::default(),
            started_ms: clock.now_ms(),
            clock,
            injected_clock,
            engine,
            shutdown: AtomicBool::new(false),
            restart_nosave: AtomicBool::new(false),
            accept_waker: std::sync::OnceLock::new(),
            verbose: AtomicU8::new(config.verbose),
            connections: AtomicUsize::new(0),
            rejecting: AtomicUsize::new(0),
            total_connections: AtomicU64::new(0),
            rejected_connections: AtomicU64::new(0),
            next_client_id: AtomicU64::new(1),
            clients: Mutex::new(HashMap::new()),
            client_memory: AtomicUsize::new(0),
            workers: (0..n).map(|_| WorkerStats::default()).collect(),
            kill_pending: (0..n).map(|_| AtomicBool::new(false)).collect(),
            pubsub: crate::pubsub::Hub::new(n, config.max_pubsub_output.bytes()),
            notify: crate::keyspace::KeyspaceEvents::default(),
            scripting: crate::script::Scripting::default(),
            pause: Default::default(),
            blocking: crate::blocking::Blocking::new(n),
            field_deadlines: crate::field_expiry::FieldDeadlines::for_memory(config.memory.bytes()),
            latency_tracking: Default::default(),
            tracking: crate::tracking::Tracking::default(),
            databases: crate::databases::Databases::new(config.databases),
            wakers: Mutex::new(Vec::new()),
            cluster,
            main_port: addr.port(),
            resp_port: resp_addr.map(|a| a.port()),
            tls_port: tls_addr.map(|a| a.port()),
            tls: tls.map(Arc::new),
            config,
        });

        if let Some(path) = &shared.config.restart_file {
            // Before any worker runs: the cache is whole when the first client is served.
            crate::restart::restore(&shared, path);
        }

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
                    crate::shared::use_injected_clock(sh.injected_clock);
                    worker::run(i, poll, rx, engine_worker, sh);
                })?;
            senders.push((tx, waker));
            handles.push(handle);
        }

        for (i, socket) in udp.into_iter().enumerate() {
            let engine_worker = shared
                .engine
                .worker()
                .map_err(|e| io::Error::other(format!("engine worker: {e}")))?;
            let sh = Arc::clone(&shared);
            let handle = std::thread::Builder::new()
                .name(format!("fridge-udp{i}"))
                .spawn(move || crate::udp::serve(socket, sh, engine_worker, n + i))?;
            handles.push(handle);
        }

        let admin = admin.map(|l| crate::admin::spawn(l, Arc::clone(&shared))).transpose()?;

        let poll = Poll::new()?;
        let accept_waker = Arc::new(Waker::new(poll.registry(), ACCEPT_WAKER)?);
        let _ = shared.accept_waker.set(accept_waker);
        let main_protocol = shared.config.protocol;
        // With memcached's `-Z`, the main port's TCP sockets speak TLS.
        let main_tls = shared.config.enable_ssl;
        let mut all: Vec<(Listener, Protocol, bool)> =
            tcp.into_iter().map(|l| (Listener::Tcp(l), main_protocol, main_tls)).collect();
        let unix_path = unix.map(|(l, path)| {
            all.push((Listener::Unix(l), main_protocol, false));
            path
        });
        all.extend(resp.map(|l| (Listener::Tcp(l), Protocol::Resp, false)));
        all.extend(tls_port.map(|l| (Listener::Tcp(l), Protocol::Auto, true)));
        for (i, (listener, _, _)) in all.iter_mut().enumerate() {
            match listener {
                Listener::Tcp(l) => poll.registry().register(l, Token(i), Interest::READABLE)?,
                Listener::Unix(l) => poll.registry().register(l, Token(i), Interest::READABLE)?,
            }
        }
        let sh = Arc::clone(&shared);
        let acceptor =
            std::thread::Builder::new().name("fridge-accept".into()).spawn(move || {
                accept_loop(poll, &all, &senders, &sh);
                drop(all);
                if let Some(path) = unix_path {
                    let _ = std::fs::remove_file(path);
                }
                // Listeners are closed now; tell the workers to drain and wait for them.
                sh.shutdown.store(true, Ordering::SeqCst);
                for (_, waker) in &senders {
                    let _ = waker.wake();
                }
                if let Some((waker, handle)) = admin {
                    let _ = waker.wake();
                    let _ = handle.join();
                }
                drop(senders);
                for h in handles {
                    let _ = h.join();
                }
                // Nothing writes now: the cache can be written whole.
                match &sh.config.restart_file {
                    Some(path) if !sh.restart_nosave.load(Ordering::SeqCst) => {
                        crate::restart::store(&sh, path);
                    }
                    Some(path) => log::info!(
                        "fridge: warm restart: SHUTDOWN NOSAVE: {} not written, the next start \
                         will be empty",
                        path.display()
                    ),
                    None => {}
                }
            })?;
        Ok(Server {
            addr,
            addrs,
            resp_addr,
            admin_addr,
            tls_addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// The main port's (first) address; `0.0.0.0:0` when only a unix socket is open.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every address the main port listens on (none when only a unix socket is open).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The RESP-only port's address, if one was opened.
    pub fn resp_addr(&self) -> Option<SocketAddr> {
        self.resp_addr
    }

    /// The TLS port's address, if one was opened (`crate::tls`).
    pub fn tls_addr(&self) -> Option<SocketAddr> {
        self.tls_addr
    }

    /// A handle that describes the server's life so far in one line (the shutdown log's
    /// summary), usable after [`Server::wait`].
    pub fn summary_handle(&self) -> SummaryHandle {
        SummaryHandle { shared: Arc::clone(&self.shared) }
    }

    /// The admin HTTP port's address, if one was opened (`crate::admin`).
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr
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
        ShutdownHandle { shared: Arc::clone(&self.shared) }
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

/// A listening socket of either kind.
enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl Listener {
    /// Accepts one connection: the stream, the client's address and the local one (both
    /// `0.0.0.0:0` on a unix socket, whose clients have no address).
    fn accept(&self) -> io::Result<(Stream, SocketAddr, SocketAddr)> {
        match self {
            Listener::Tcp(l) => {
                let (stream, peer) = l.accept()?;
                let _ = stream.set_nodelay(true);
                let local = stream.local_addr().unwrap_or(peer);
                Ok((Stream::Tcp(stream), peer, local))
            }
            Listener::Unix(l) => {
                let (stream, _) = l.accept()?;
                let none = SocketAddr::from(([0, 0, 0, 0], 0));
                Ok((Stream::Unix(stream), none, none))
            }
        }
    }
}

fn accept_loop(
    mut poll: Poll,
    listeners: &[(Listener, Protocol, bool)],
    workers: &[WorkerSender],
    shared: &Shared,
) {
    let mut events = Events::with_capacity(64);
    let mut next = 0usize;
    // No timeout: a shutdown, from a signal or a client's command, wakes the poll
    // (`Shared::request_shutdown`), so an idle server's acceptor never wakes.
    while !shared.shutdown.load(Ordering::SeqCst) {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            log::error!("fridge: accept poll failed: {e}");
            return;
        }
        for event in &events {
            let Some((listener, protocol, tls)) = listeners.get(event.token().0) else { continue };
            let protocol = *protocol;
            let tls = shared.tls.as_ref().filter(|_| *tls);
            loop {
                let (stream, peer, local) = match listener.accept() {
                    Ok(s) => s,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        // Out of descriptors and the like: back off briefly.
                        log::error!("fridge: accept failed: {e}");
                        std::thread::sleep(Duration::from_millis(10));
                        break;
                    }
                };
                let live = shared.connections.load(Ordering::Relaxed);
                let reject = live >= shared.config.max_connections;
                if reject {
                    log::debug!("fridge: too many open connections ({live}): refusing {peer}");
                } else {
                    log::debug!("fridge: new client connection from {peer} on {local}");
                }
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
                let stream = match (tls, stream) {
                    (Some(tls), Stream::Tcp(tcp)) => match tls.accept(tcp) {
                        Ok(s) => Stream::Tls(Box::new(s)),
                        Err(e) => {
                            log::error!("fridge: cannot begin TLS with {peer}: {e}");
                            if reject {
                                shared.rejecting.fetch_sub(1, Ordering::Relaxed);
                            } else {
                                shared.connections.fetch_sub(1, Ordering::Relaxed);
                            }
                            continue;
                        }
                    },
                    (_, stream) => stream,
                };
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
