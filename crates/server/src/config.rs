//! Configuration: defaults, an optional TOML file, `FRIDGE_*` environment variables and
//! command-line flags, in increasing order of precedence.
//!
//! memcached's command-line flags are accepted as aliases (`-p -l -m -t -c -I -U -s -a -b -u
//! -P -d -v -A -o`, after `memcached -h` of 1.6.18), so an init script or a Debian
//! `memcached.conf` written for memcached starts fridge unchanged; `docs/deployment.md` lists
//! each flag and how far fridge honours it (the flags are read in `cli.rs`). Sizes are written `"1GiB"`,
//! `"64MiB"`, `"512k"`, `"1.5g"` or as a plain number of bytes; durations `"250ms"`, `"30s"`,
//! `"5m"`, `"1h"` or a plain number of seconds (the rule of [`fridge_units`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use fridge_engine::item::MAX_TENANTS;
use fridge_engine::{IdleTax, RankKind, TenantPolicy};
use serde::Deserialize;

use crate::password::PasswordHash;

/// Byte sizes and durations are read by the rule the simulator and the load generator share
/// (binary, case-insensitive units; fractions round down): see [`fridge_units`].
pub use fridge_units::{Millis, Size};

/// Which protocols the main port speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// The first byte decides: `*` is RESP, anything else memcached.
    #[default]
    Auto,
    /// memcached text and meta only.
    Memcache,
    /// RESP only (inline commands included, for telnet).
    Resp,
}

/// How the engine evicts once memory is full (`fridge_engine::Eviction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "lowercase")]
pub enum EvictionChoice {
    /// S3-FIFO's queues while only the default tenant is configured, Memshare's pass with
    /// other tenants: each gave fewer misses where it is chosen (`docs/design.md`).
    #[default]
    Auto,
    /// Memshare's cleaning pass: the best-ranked items of a sample of segments stay.
    Memshare,
    /// S3-FIFO's small and main queues, made of segments (`docs/design.md`).
    Queues,
}

/// What a shadow-queue hit is worth (`fridge_engine::CreditWeight`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "snake_case")]
pub enum CreditWeightChoice {
    /// A credit per hit (Memshare Algorithm 2).
    #[default]
    Hits,
    /// A credit per hit with probability mean GETs / the tenant's GETs.
    HitRatio,
}

impl CreditWeightChoice {
    /// The name in the configuration file and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            CreditWeightChoice::Hits => "hits",
            CreditWeightChoice::HitRatio => "hit_ratio",
        }
    }
}

/// Where the hitmap lives (`fridge_engine::MetadataDevice`, `docs/design.md`, "The hitmap on
/// a GPU").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, clap::ValueEnum, Default)]
#[serde(rename_all = "lowercase")]
pub enum MetadataChoice {
    /// Host memory, applied by a metadata thread.
    #[default]
    Cpu,
    /// GPU 0 (the CUDA driver and NVRTC loaded at run time); the server does not start
    /// without one.
    Gpu,
    /// GPU 0 where one is usable, else host memory; the log says which and why.
    Auto,
}

/// Whether TLS clients must show a certificate (Redis's `tls-auth-clients`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum TlsAuthClients {
    /// No client certificate is asked for.
    No,
    /// A client without a certificate the CA signed is refused during the handshake.
    Yes,
    /// A client may show none; one it shows must be signed by the CA.
    Optional,
}

impl TlsAuthClients {
    /// The name Redis gives the setting's value (`CONFIG GET tls-auth-clients`).
    pub fn name(self) -> &'static str {
        match self {
            TlsAuthClients::No => "no",
            TlsAuthClients::Yes => "yes",
            TlsAuthClients::Optional => "optional",
        }
    }
}

/// Everything the server needs to start. One struct, one `Default`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Addresses to listen on, comma-separated (memcached's `-l`, which may also repeat):
    /// `HOST`, `HOST:PORT`, `[V6]` or `[V6]:PORT`; an entry without a port takes `port`.
    pub listen: String,
    /// Main port (both protocols unless `protocol` pins one); 0 picks a free port.
    pub port: u16,
    /// Optional second port that speaks RESP only; 0 picks a free port.
    pub resp_port: Option<u16>,
    /// What the main port speaks.
    pub protocol: Protocol,
    /// memcached's UDP port (`-U`), serving `get` and `gets` on every listen address; 0: off.
    pub udp_port: u16,
    /// The admin HTTP port (`/metrics`, `/healthz`, `/readyz`; `crate::admin`); off unless
    /// set (0 picks a free port).
    pub admin_port: Option<u16>,
    /// The address the admin port listens on: loopback unless set, because the endpoint
    /// has no authentication and shows every tenant's figures.
    pub admin_address: String,
    /// A port that speaks TLS (Redis's `tls-port`): both protocols, told apart as on the main
    /// port; 0 picks a free port. Needs `tls_cert_file` and `tls_key_file` (`crate::tls`).
    #[serde(alias = "tls-port")]
    pub tls_port: Option<u16>,
    /// TLS on the main port instead (memcached's `-Z`, `--enable-ssl`).
    pub enable_ssl: bool,
    /// The server's certificate chain, PEM (Redis's `tls-cert-file`, memcached's
    /// `ssl_chain_cert`). Reread on SIGHUP and `CONFIG RELOAD`.
    #[serde(alias = "tls-cert-file")]
    pub tls_cert_file: Option<PathBuf>,
    /// Its private key, PEM (Redis's `tls-key-file`, memcached's `ssl_key`).
    #[serde(alias = "tls-key-file")]
    pub tls_key_file: Option<PathBuf>,
    /// The CA certificates that sign client certificates, PEM (Redis's `tls-ca-cert-file`,
    /// memcached's `ssl_ca_cert`).
    #[serde(alias = "tls-ca-cert-file")]
    pub tls_ca_cert_file: Option<PathBuf>,
    /// Whether clients must show a certificate the CA signed (Redis's `tls-auth-clients`,
    /// memcached's `ssl_verify_mode`). Unset: `yes` with a CA file, as Redis, else `no`.
    #[serde(alias = "tls-auth-clients")]
    pub tls_auth_clients: Option<TlsAuthClients>,
    /// A unix socket to listen on instead of TCP (memcached's `-s`): with it, the main TCP
    /// port is not opened. It speaks what the main port would.
    pub unix_socket: Option<PathBuf>,
    /// Permission bits of the unix socket (memcached's `-a`, octal; TOML `0o700`).
    pub unix_mask: u32,
    /// Listen backlog of every listening socket (memcached's `-b`).
    pub listen_backlog: u32,
    /// Whether memcached's `shutdown` command stops the server (memcached's `-A`).
    pub enable_shutdown: bool,
    /// Log level (memcached's `-v`, `-vv`, `-vvv`; `verbosity N` changes it at run time): 0
    /// startup and errors, 1 also warnings (refused connections), 2 and up also every
    /// accepted connection.
    pub verbose: u8,
    /// Log level by name (`error`, `warn`, `info`, `debug`, `trace`, or Redis's `warning`,
    /// `notice`, `verbose`, `debug`); unset: what `verbose` says (`crate::logging`).
    pub log_level: Option<String>,
    /// How log lines are written: `text` or `json` (one JSON object per line).
    pub log_format: crate::logging::LogFormat,
    /// Started as root: the user to become once the sockets are bound (memcached's `-u`).
    /// fridge refuses to run as root without it, as memcached does.
    pub user: Option<String>,
    /// File to write the process id to once serving (memcached's `-P`); removed on exit.
    pub pidfile: Option<PathBuf>,
    /// Detach from the terminal once the sockets are bound (memcached's `-d`).
    pub daemon: bool,
    /// Warm restart (`crate::restart`; memcached's `-e`): a graceful stop writes every item
    /// here (through `FILE.tmp`), the next start loads it and removes it.
    pub restart_file: Option<PathBuf>,
    /// Item memory (the engine's arena). The index, the hitmap and the rest of the engine's
    /// bookkeeping come on top unless `memory_includes_index` is set; connection buffers
    /// always do.
    pub memory: Size,
    /// Count the index and the engine's other bookkeeping (segment headers, hitmap, the
    /// cleaner's buffers) within `memory`, as memcached users expect of `-m`: fewer items
    /// fit, and the server's resident memory stays near `memory` plus connection buffers.
    pub memory_includes_index: bool,
    /// Worker threads (event loops); 0 = one per core.
    pub workers: usize,
    /// Most client connections at once; more are refused with the protocol's error.
    pub max_connections: usize,
    /// Largest value a client may store.
    pub max_item_size: Size,
    /// Longest memcached key (memcached: 250).
    pub max_key_len: usize,
    /// Longest RESP key (the engine's limit is 65535).
    pub max_resp_key_len: usize,
    /// Longest memcached command line (retrieval lines may be as long as the query buffer).
    pub max_line_len: usize,
    /// Most arguments in one RESP multibulk request.
    pub max_multibulk_len: usize,
    /// Longest RESP argument; 0 = the item size plus 64 KiB.
    pub max_bulk_len: Size,
    /// Most unprocessed request bytes buffered per connection.
    pub max_query_buffer: Size,
    /// Most reply bytes buffered per connection. Long replies are written in steps and never
    /// held whole (see `docs/protocol.md`); `KEYS` whose keys would take more is refused.
    pub max_output_buffer: Size,
    /// Most bytes of pub/sub messages waiting for one subscriber (Redis's
    /// `client-output-buffer-limit pubsub` hard limit): a subscriber that falls this far
    /// behind is disconnected (`client_output_buffer_limit_disconnections` in `INFO`).
    pub max_pubsub_output: Size,
    /// Seconds without traffic before a connection is closed; 0 = never.
    pub idle_timeout: u64,
    /// Redis databases each tenant has (`SELECT 0` to `databases - 1`), 1 to 16.
    pub databases: u8,
    /// How long a request may stay half-sent (begun, not complete) before its connection is
    /// closed; 0 = forever.
    pub partial_request_timeout: Millis,
    /// Most memory all client connections' buffers may take together (Redis's
    /// `maxmemory-clients`); past it the largest are disconnected first. Unset: a quarter of
    /// `memory`, at least 64 MiB.
    pub max_client_memory: Option<Size>,
    /// Most reply bytes written to one connection per event-loop turn of a long reply, before
    /// the other connections of its worker are served (its first turn writes at most 64 KiB;
    /// the rest goes out in chunks of this size, each after the small requests waiting then:
    /// `docs/design.md`, "Large replies").
    pub write_chunk: Size,
    /// Engine segment size; 0 = the smallest power of two holding the largest item, at least
    /// 1 MiB. Otherwise any multiple of 64 bytes up to 8 MiB (`EngineConfig::validate`).
    pub segment_size: Size,
    /// Eviction metadata bits per expected item: the hitmap's with Memshare's pass, the
    /// frequency sketch's with S3-FIFO's queues (`docs/design.md`, "Eviction metadata per
    /// item"); 0 turns either off. `None` (the default): 32; see [`Config::hitmap_bits`].
    pub hitmap_bits_per_item: Option<usize>,
    /// Bytes of the search lookaside buffer's cache table in front of the index (rounded down
    /// to a power of two of 64-byte buckets, at most 4 MiB; its admission log takes four times
    /// as much); 0, the default, for none (`docs/design.md`, "The SLB").
    pub slb_size: Size,
    /// With tenants: once the pooled memory is all won, credits come only from tenants above
    /// this percentage of their share of memory (in proportion to their reservations); 0
    /// takes them from any tenant holding one, as Memshare's Algorithm 2 (`docs/tenants.md`).
    pub credit_floor: u8,
    /// With tenants: what a shadow-queue hit is worth — a credit each (`hits`, Memshare), or
    /// a credit with probability mean GETs / the tenant's GETs (`hit_ratio`, Cliffhanger's
    /// gradient) (`docs/tenants.md`).
    pub credit_weight: CreditWeightChoice,
    /// How the engine evicts.
    pub eviction: EvictionChoice,
    /// Where the hitmap lives.
    pub metadata: MetadataChoice,
    /// Whether clients that have not authenticated may use the cache (as tenant `default`, or
    /// the tenant whose key prefix matches). Unset: yes only while nothing asks for a password
    /// (no tenant besides `default`, and `default` without a password).
    pub allow_unauthenticated: Option<bool>,
    /// Failed logins per second allowed, per client address and per user name: the refill
    /// rate of each token bucket (see `docs/tenants.md`).
    pub auth_failure_rate: f64,
    /// Failed logins allowed at once, per client address and per user name: each token
    /// bucket's size. Once a bucket is empty, logins are refused unchecked.
    pub auth_failure_burst: u32,
    /// Tenants (`[[tenants]]` tables). Without any, `default` owns all memory.
    pub tenants: Vec<TenantConfig>,
    /// Redis Cluster clients: the static slot map, one `node <id> <host:port> <slots>` line per
    /// node (`docs/scale-out.md`); SIGHUP and `CONFIG RELOAD` reread it. Not with tenants.
    pub cluster_config: Option<PathBuf>,
    /// The file the configuration came from; SIGHUP and `CONFIG RELOAD` reread its tenants.
    #[serde(skip)]
    pub config_file: Option<PathBuf>,
    /// The engine's cleaner runs in the worker that writes, not in its own thread: between
    /// two requests nothing changes the engine, so an in-process test can check its
    /// invariants (`Engine::validate`). No flag or setting: for tests only.
    #[serde(skip)]
    pub inline_cleaner: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: "127.0.0.1".into(),
            port: 11211,
            resp_port: None,
            protocol: Protocol::Auto,
            udp_port: 0,
            admin_port: None,
            admin_address: "127.0.0.1".into(),
            tls_port: None,
            enable_ssl: false,
            tls_cert_file: None,
            tls_key_file: None,
            tls_ca_cert_file: None,
            tls_auth_clients: None,
            unix_socket: None,
            unix_mask: 0o700,
            listen_backlog: 1024,
            enable_shutdown: false,
            verbose: 0,
            log_level: None,
            log_format: crate::logging::LogFormat::Text,
            user: None,
            pidfile: None,
            daemon: false,
            restart_file: None,
            memory: Size(1 << 30),
            memory_includes_index: false,
            workers: 0,
            max_connections: 1024,
            max_item_size: Size(1 << 20),
            max_key_len: 250,
            max_resp_key_len: 65535,
            max_line_len: 2048,
            max_multibulk_len: 1024 * 1024,
            max_bulk_len: Size(0),
            max_query_buffer: Size(4 << 20),
            max_output_buffer: Size(64 << 20),
            max_pubsub_output: Size(32 << 20),
            idle_timeout: 0,
            databases: 16,
            partial_request_timeout: Millis(30_000),
            max_client_memory: None,
            write_chunk: Size(1 << 20),
            segment_size: Size(0),
            hitmap_bits_per_item: None,
            slb_size: Size(0),
            credit_floor: 100,
            credit_weight: CreditWeightChoice::Hits,
            eviction: EvictionChoice::default(),
            metadata: MetadataChoice::default(),
            allow_unauthenticated: None,
            auth_failure_rate: 1.0,
            auth_failure_burst: 10,
            tenants: Vec::new(),
            inline_cleaner: false,
            cluster_config: None,
            config_file: None,
        }
    }
}

/// Bytes read from one connection per turn before others get theirs.
pub const READ_BUDGET: usize = 256 * 1024;
/// Requests stop being run on a connection while this many reply bytes wait to be sent.
pub const OUTPUT_SOFT_LIMIT: usize = 256 * 1024;

/// Room in the output buffer beyond one value: the replies written before a long reply
/// suspends (the soft limit) and one value's header.
pub(crate) const MIN_OUTPUT_ROOM: usize = OUTPUT_SOFT_LIMIT + 64 * 1024;

/// Largest per-item overhead (key record and key) added to a value's size.
pub(crate) const ITEM_OVERHEAD: usize = 1024;

impl Config {
    /// Worker threads to start: as configured, else one per core, but no more than the
    /// memory gives segments for (the engine wants 4 segments per worker besides 8 shared), so
    /// that a small `-m` such as Debian's 64 starts on a machine with many cores.
    pub fn worker_count(&self) -> usize {
        if self.workers > 0 {
            return self.workers;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let segments = self.memory.bytes() / self.engine_segment_size();
        cores.min((segments.saturating_sub(8) / 4).max(1))
    }

    /// The address of the main port (the first of [`Config::listen_addrs`]).
    pub fn addr(&self) -> Result<SocketAddr, String> {
        Ok(self.listen_addrs()?[0])
    }

    /// Every address the main port listens on: each entry of `listen`, each address a host
    /// name resolves to (as memcached binds them all), without repeats.
    pub fn listen_addrs(&self) -> Result<Vec<SocketAddr>, String> {
        use std::net::ToSocketAddrs;
        let mut addrs = Vec::new();
        for entry in self.listen.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (host, port) = host_port(entry, self.port)?;
            let resolved = (host, port)
                .to_socket_addrs()
                .map_err(|e| format!("bad listen address {entry:?}: {e}"))?;
            for a in resolved {
                if !addrs.contains(&a) {
                    addrs.push(a);
                }
            }
        }
        if addrs.is_empty() {
            return Err(format!("listen address {:?} names no address", self.listen));
        }
        Ok(addrs)
    }

    /// The settings that shape the server, on one line for the startup log (no passwords: a
    /// tenant by its name and reservation).
    pub fn summary(&self) -> String {
        let tenants: Vec<String> =
            self.tenants.iter().map(|t| format!("{}({})", t.name, t.reserved)).collect();
        let or_off = |p: Option<u16>| p.map_or("off".to_string(), |p| p.to_string());
        format!(
            "listen={} port={} resp_port={} udp_port={} unix_socket={} protocol={} memory={} \
             memory_includes_index={} workers={} max_connections={} max_item_size={} \
             eviction={} metadata={} hitmap_bits_per_item={} slb_size={} databases={} idle_timeout={}s \
             allow_unauthenticated={} tenants=[{}] admin_port={} admin_address={} log_level={} \
             log_format={} tls={}",
            self.listen,
            self.port,
            or_off(self.resp_port),
            self.udp_port,
            self.unix_socket.as_ref().map_or("none".into(), |p| p.display().to_string()),
            format!("{:?}", self.protocol).to_lowercase(),
            self.memory,
            self.memory_includes_index,
            self.worker_count(),
            self.max_connections,
            self.max_item_size,
            format!("{:?}", self.eviction).to_lowercase(),
            format!("{:?}", self.metadata).to_lowercase(),
            self.hitmap_bits(),
            self.slb_size,
            self.databases,
            self.idle_timeout,
            self.unauthenticated_allowed(),
            tenants.join(","),
            or_off(self.admin_port),
            self.admin_address,
            self.log_filter().map_or("?".into(), |l| l.as_str().to_ascii_lowercase()),
            format!("{:?}", self.log_format).to_lowercase(),
            self.tls_summary(),
        )
    }

    /// Where TLS is spoken, for the summary: `off`, or e.g. `port:6380+main,clients:yes`.
    fn tls_summary(&self) -> String {
        let mut on: Vec<String> = self.tls_port.map(|p| format!("port:{p}")).into_iter().collect();
        if self.enable_ssl {
            on.push("main".into());
        }
        if on.is_empty() {
            return "off".into();
        }
        format!("{},clients:{}", on.join("+"), self.tls_client_auth().name())
    }

    /// The log level in force at start: `log_level`, else what `verbose` stands for.
    pub fn log_filter(&self) -> Result<log::LevelFilter, String> {
        match &self.log_level {
            Some(name) => crate::logging::parse_level(name).ok_or_else(|| {
                format!(
                    "log level {name:?} is none of error, warn, info, debug, trace (or Redis's \
                     warning, notice, verbose)"
                )
            }),
            None => Ok(crate::logging::level_of_verbosity(self.verbose)),
        }
    }

    /// The admin port's address, if one is configured.
    pub fn admin_addr(&self) -> Result<Option<SocketAddr>, String> {
        let Some(port) = self.admin_port else { return Ok(None) };
        let host = self.admin_address.trim_start_matches('[').trim_end_matches(']');
        let ip: std::net::IpAddr =
            host.parse().map_err(|_| format!("admin address {:?} is not an IP address", host))?;
        Ok(Some(SocketAddr::new(ip, port)))
    }

    /// The address of the RESP-only port, if one is configured.
    /// It is on the first listen address.
    pub fn resp_addr(&self) -> Result<Option<SocketAddr>, String> {
        let Some(port) = self.resp_port else { return Ok(None) };
        let mut addr = self.addr()?;
        addr.set_port(port);
        Ok(Some(addr))
    }

    /// The address of the TLS port, if one is configured: on the first listen address.
    pub fn tls_addr(&self) -> Result<Option<SocketAddr>, String> {
        let Some(port) = self.tls_port else { return Ok(None) };
        let mut addr = self.addr()?;
        addr.set_port(port);
        Ok(Some(addr))
    }

    /// Whether clients must show a certificate: as configured, else `yes` with a CA file
    /// (Redis's default) and `no` without.
    pub fn tls_client_auth(&self) -> TlsAuthClients {
        self.tls_auth_clients.unwrap_or(match self.tls_ca_cert_file {
            Some(_) => TlsAuthClients::Yes,
            None => TlsAuthClients::No,
        })
    }

    /// Checks the TLS settings together: a TLS port needs a certificate and its key, client
    /// verification needs a CA, and certificate files with no port to use them are a
    /// mistake said aloud rather than a server silently without TLS.
    fn validate_tls(&self) -> Result<(), String> {
        let wanted = self.tls_port.is_some() || self.enable_ssl;
        if wanted && (self.tls_cert_file.is_none() || self.tls_key_file.is_none()) {
            return Err("TLS (tls_port, or -Z for the main port) needs tls_cert_file and \
                        tls_key_file (memcached: -o ssl_chain_cert=FILE,ssl_key=FILE)"
                .into());
        }
        let files = [&self.tls_cert_file, &self.tls_key_file, &self.tls_ca_cert_file];
        if !wanted && (files.iter().any(|f| f.is_some()) || self.tls_auth_clients.is_some()) {
            return Err("TLS files or tls_auth_clients are set but no port speaks TLS: set \
                        tls_port, or -Z for TLS on the main port"
                .into());
        }
        if self.enable_ssl && self.unix_socket.is_some() {
            return Err("-Z (TLS on the main port) is for TCP; the unix socket (-s) replaces \
                        the TCP port: use tls_port for a TLS port beside it"
                .into());
        }
        if self.tls_client_auth() != TlsAuthClients::No && self.tls_ca_cert_file.is_none() {
            return Err("tls_auth_clients = yes or optional needs tls_ca_cert_file, the CA that \
                        signs client certificates (memcached: ssl_ca_cert)"
                .into());
        }
        Ok(())
    }

    /// Reads a TOML configuration file (keys as in this struct). Errors are one line (they
    /// go to a log on SIGHUP, and into an error reply on `CONFIG RELOAD`).
    pub fn from_file(path: &std::path::Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        toml::from_str::<Config>(&text).map_err(|e| {
            let at = e.span().map(|span| position(&text, span.start)).unwrap_or_default();
            let message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
            let message = unsupported_tls_key(&message).unwrap_or(message);
            format!("bad config {}{at}: {message}", path.display())
        })
    }

    /// Whether unauthenticated clients are served: as configured, else only when nothing
    /// asks for a password (no tenant besides `default`, and `default` without one).
    pub fn unauthenticated_allowed(&self) -> bool {
        self.allow_unauthenticated.unwrap_or_else(|| {
            self.tenants.iter().all(|t| t.name == DEFAULT_TENANT && t.password_sha256.is_none())
        })
    }

    /// Idle timeout, if any.
    pub fn idle(&self) -> Option<Duration> {
        (self.idle_timeout > 0).then(|| Duration::from_secs(self.idle_timeout))
    }

    /// Segment size to give the engine.
    pub fn engine_segment_size(&self) -> usize {
        if self.segment_size.0 > 0 {
            return self.segment_size.bytes();
        }
        (self.max_item_size.bytes() + ITEM_OVERHEAD).next_power_of_two().max(1 << 20)
    }

    /// The engine configuration these settings imply.
    pub fn engine(&self) -> fridge_engine::EngineConfig {
        let segment_size = self.engine_segment_size();
        fridge_engine::EngineConfig {
            max_memory: self.memory.bytes(),
            segment_size,
            max_item_size: (self.max_item_size.bytes() + ITEM_OVERHEAD).min(segment_size),
            max_value_len: self.max_item_size.bytes(),
            workers_hint: self.worker_count(),
            cleaner: if self.inline_cleaner {
                fridge_engine::CleanerMode::Inline
            } else {
                fridge_engine::CleanerMode::Background
            },
            max_participants: self.worker_count() + 16,
            hitmap_bits_per_item: self.hitmap_bits(),
            slb_bytes: self.slb_size.bytes(),
            metadata_device: match self.metadata {
                MetadataChoice::Cpu => fridge_engine::MetadataDevice::Cpu,
                MetadataChoice::Gpu => fridge_engine::MetadataDevice::Gpu,
                MetadataChoice::Auto => fridge_engine::MetadataDevice::Auto,
            },
            credit_policy: match self.credit_floor {
                0 => fridge_engine::CreditPolicy::Memshare,
                percent => fridge_engine::CreditPolicy::Floor { percent },
            },
            credit_weight: match self.credit_weight {
                CreditWeightChoice::Hits => fridge_engine::CreditWeight::Hits,
                CreditWeightChoice::HitRatio => fridge_engine::CreditWeight::HitRatio,
            },
            memory_includes_index: self.memory_includes_index,
            eviction: self.engine_eviction(),
            ..fridge_engine::EngineConfig::default()
        }
    }

    /// The engine's eviction: `--eviction`, where `auto` is Memshare's pass once a tenant
    /// besides `default` is configured and S3-FIFO's queues until then.
    pub fn engine_eviction(&self) -> fridge_engine::Eviction {
        match self.eviction {
            EvictionChoice::Auto if self.tenants.iter().any(|t| t.name != DEFAULT_TENANT) => {
                fridge_engine::Eviction::Memshare
            }
            EvictionChoice::Memshare => fridge_engine::Eviction::Memshare,
            EvictionChoice::Auto | EvictionChoice::Queues => {
                fridge_engine::Eviction::Queues(Default::default())
            }
        }
    }

    /// Eviction metadata bits per item: as set, else the engine's 32 (the hitmap for
    /// Memshare's pass, the frequency sketch for S3-FIFO's queues). Without either the
    /// metadata worker still counts hot keys.
    pub fn hitmap_bits(&self) -> usize {
        self.hitmap_bits_per_item
            .unwrap_or(fridge_engine::EngineConfig::default().hitmap_bits_per_item)
    }

    /// memcached parser limits.
    pub fn memcache_limits(&self) -> fridge_proto::memcache::Limits {
        fridge_proto::memcache::Limits {
            max_key_len: self.max_key_len,
            max_value_len: self.max_item_size.bytes(),
            max_line_len: self.max_line_len,
            max_retrieval_line_len: self.max_query_buffer.bytes().max(self.max_line_len),
            max_cas: fridge_engine::item::MAX_CAS,
        }
    }

    /// RESP parser limits.
    pub fn resp_limits(&self) -> fridge_proto::resp::Limits {
        let bulk = if self.max_bulk_len.0 > 0 {
            self.max_bulk_len.bytes()
        } else {
            self.max_item_size.bytes() + 64 * 1024
        };
        fridge_proto::resp::Limits {
            max_multibulk_len: self.max_multibulk_len,
            max_bulk_len: bulk,
            max_inline_len: 64 * 1024,
        }
    }

    /// Most memory all client connections' buffers may take together.
    pub fn client_memory_limit(&self) -> usize {
        match self.max_client_memory {
            Some(limit) => limit.bytes(),
            None => (self.memory.bytes() / 4).max(64 << 20),
        }
    }

    /// Bytes of unprocessed input a connection may buffer: at least one whole request.
    pub fn query_buffer_limit(&self) -> usize {
        let one_request = self.resp_limits().max_bulk_len.max(self.max_item_size.bytes()) + 4096;
        self.max_query_buffer.bytes().max(one_request)
    }

    /// Checks the settings, explaining the first problem.
    pub fn validate(&self) -> Result<(), String> {
        self.addr()?;
        self.resp_addr()?;
        self.admin_addr()?;
        self.tls_addr()?;
        self.validate_tls()?;
        self.log_filter()?;
        if self.unix_mask > 0o777 {
            return Err(format!(
                "unix_mask {:o} is not a permission mask (at most 777)",
                self.unix_mask
            ));
        }
        if self.listen_backlog > i32::MAX as u32 {
            return Err(format!("listen_backlog must be at most {}", i32::MAX));
        }
        if self.max_connections == 0 {
            return Err("max_connections must be at least 1".into());
        }
        if self.credit_floor > 100 {
            return Err(format!(
                "credit_floor is a percentage of a tenant's share: 0 to 100, not {}",
                self.credit_floor
            ));
        }
        let slb = self.slb_size.bytes();
        if slb != 0 && !(64..=fridge_engine::SLB_MAX_BYTES).contains(&slb) {
            return Err(format!(
                "slb_size must be 0 (none) or from 64B to {}B, not {slb}B",
                fridge_engine::SLB_MAX_BYTES
            ));
        }
        if !(1..=fridge_engine::item::MAX_DBS).contains(&usize::from(self.databases)) {
            return Err(format!(
                "databases must be between 1 and {}",
                fridge_engine::item::MAX_DBS
            ));
        }
        if self.max_key_len == 0 || self.max_key_len > 65535 {
            return Err("max_key_len must be between 1 and 65535".into());
        }
        if self.max_resp_key_len == 0 || self.max_resp_key_len > 65535 {
            return Err("max_resp_key_len must be between 1 and 65535".into());
        }
        if self.max_line_len < 64 {
            return Err("max_line_len must be at least 64".into());
        }
        if self.max_item_size.0 == 0 {
            return Err("max_item_size must be positive".into());
        }
        if self.max_output_buffer.bytes() < self.max_item_size.bytes() + MIN_OUTPUT_ROOM {
            return Err(format!(
                "max_output_buffer must be at least max_item_size + {}: a reply of one value \
                 must fit",
                Size(MIN_OUTPUT_ROOM as u64)
            ));
        }
        if self.write_chunk.0 < 4096 {
            return Err("write_chunk must be at least 4KiB".into());
        }
        validate_tenants(self)?;
        if let Some(path) = &self.cluster_config {
            // One keyspace per node: a tenant's keys would need a slot map of their own.
            if !self.tenants.is_empty() {
                return Err("cluster_config cannot be combined with tenants".into());
            }
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read cluster config {}: {e}", path.display()))?;
            // Which node is this server is decided once the ports are bound (port 0).
            let ports: Vec<u16> = [self.port].into_iter().chain(self.resp_port).collect();
            if !ports.contains(&0) {
                crate::cluster::SlotMap::parse(&text, &self.listen, &ports)
                    .map_err(|e| format!("cluster config {}: {e}", path.display()))?;
            }
        }
        self.engine().validate().map_err(|e| e.0)
    }
}

/// A clearer refusal of a Redis TLS setting fridge does not have (`tls-protocols`,
/// `tls-ciphers`, `tls-replication`…) than serde's list of every key.
fn unsupported_tls_key(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let name = &rest[..rest.find('`')?];
    name.starts_with("tls").then(|| {
        format!(
            "{name}: fridge has no such TLS setting (it has tls-port, tls-cert-file, \
             tls-key-file, tls-ca-cert-file and tls-auth-clients; see docs/deployment.md)"
        )
    })
}

/// `, line L column C` of byte `offset` in `text`.
fn position(text: &str, offset: usize) -> String {
    let before = text.as_bytes().get(..offset).unwrap_or(text.as_bytes());
    let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
    let column = before.iter().rev().take_while(|&&c| c != b'\n').count() + 1;
    format!(", line {line} column {column}")
}

/// Splits one `-l` entry as memcached does: `[V6]:PORT` and `[V6]`, `HOST:PORT` (one colon),
/// or a bare host (a bare IPv6 address has several colons).
fn host_port(entry: &str, default_port: u16) -> Result<(&str, u16), String> {
    let bad_port = |p: &str| format!("bad port {p:?} in listen address {entry:?}");
    if let Some(rest) = entry.strip_prefix('[') {
        let (host, after) =
            rest.split_once(']').ok_or_else(|| format!("bad listen address {entry:?}"))?;
        return match after {
            "" => Ok((host, default_port)),
            _ => {
                let p = after.strip_prefix(':').ok_or_else(|| bad_port(after))?;
                Ok((host, p.parse().map_err(|_| bad_port(p))?))
            }
        };
    }
    match entry.split_once(':') {
        Some((host, p)) if !p.contains(':') => Ok((host, p.parse().map_err(|_| bad_port(p))?)),
        _ => Ok((entry, default_port)),
    }
}

// Tenants as the file configures them. The server's runtime view of them (ids, logins,
// key-prefix routes) is `tenants.rs`, built from these.

/// The name of tenant 0, which owns all memory when no tenants are configured.
pub const DEFAULT_TENANT: &str = "default";
/// Longest tenant name.
pub(crate) const MAX_NAME_LEN: usize = 64;

/// Memshare's idle tax as written in the file: `idle_tax = { rate = 0.5, idle_time = "60s" }`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IdleTaxConfig {
    /// Fraction of idle memory that may be taken away, 0–1 (Memshare: 0.5).
    #[serde(default = "default_tax_rate")]
    pub rate: f64,
    /// How long an item must go unread to count as idle.
    pub idle_time: Millis,
}

fn default_tax_rate() -> f64 {
    0.5
}

/// A rank function named in the file (`hitmap`, `lru`, `lfu`, `slru`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RankName(pub RankKind);

impl<'de> Deserialize<'de> for RankName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map(RankName).map_err(serde::de::Error::custom)
    }
}

/// One `[[tenants]]` table of the configuration file.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct TenantConfig {
    /// Login name; `default` configures tenant 0.
    pub name: String,
    /// `<salt hex>$<sha256(salt ‖ password) hex>`, as `fridge hash-password` prints it.
    /// Without one the tenant cannot log in (only key-prefix routing reaches it).
    pub password_sha256: Option<PasswordHash>,
    /// Memory the tenant keeps while it wants it.
    pub reserved: Size,
    /// Pooled memory one shadow-queue hit moves to the tenant.
    pub credit: Size,
    /// How the cleaner ranks the tenant's items.
    pub rank: RankName,
    /// Memshare's idle tax, off when absent.
    pub idle_tax: Option<IdleTaxConfig>,
    /// Memory the tenant may never exceed.
    pub hard_cap: Option<Size>,
    /// Keys (live items, all databases) the tenant may hold: a write that would add one
    /// more is refused; none when absent.
    pub max_keys: Option<u64>,
    /// Bytes of live items the tenant may hold: a write that would take it past them is
    /// refused; none when absent.
    pub max_bytes: Option<Size>,
    /// Keys starting with one of these go to this tenant when an unauthenticated client sends
    /// them (for clients that cannot authenticate; needs `allow_unauthenticated`).
    pub key_prefixes: Vec<String>,
    /// Connections logged in as the tenant at once (`crate::limits`); none when absent.
    pub max_connections: Option<u32>,
    /// Requests a second of the tenant's connections, one second's worth at once
    /// (`crate::limits`); none when absent.
    pub max_requests_per_second: Option<u32>,
}

impl Default for TenantConfig {
    fn default() -> Self {
        let p = TenantPolicy::default();
        TenantConfig {
            name: String::new(),
            password_sha256: None,
            reserved: Size(p.reserved),
            credit: Size(p.credit),
            rank: RankName(p.rank),
            idle_tax: None,
            hard_cap: None,
            max_keys: None,
            max_bytes: None,
            key_prefixes: Vec::new(),
            max_connections: None,
            max_requests_per_second: None,
        }
    }
}

impl TenantConfig {
    /// The engine policy this entry asks for.
    pub fn policy(&self) -> TenantPolicy {
        TenantPolicy {
            reserved: self.reserved.0,
            credit: self.credit.0,
            rank: self.rank.0,
            idle_tax: self
                .idle_tax
                .as_ref()
                .map(|t| IdleTax { rate: t.rate, idle_ms: t.idle_time.0 }),
            hard_cap: self.hard_cap.map(|c| c.0),
            max_keys: self.max_keys,
            max_bytes: self.max_bytes.map(|b| b.0),
        }
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
}

/// Checks the part of a configuration a reload rereads (tenants and the login settings),
/// explaining the first problem.
pub(crate) fn validate_tenants(config: &Config) -> Result<(), String> {
    let mut names = HashMap::new();
    let mut prefixes: HashMap<&str, &str> = HashMap::new();
    let mut reserved = 0u64;
    for t in &config.tenants {
        let name = t.name.as_str();
        if !valid_name(name) {
            return Err(format!(
                "tenant name {name:?}: use 1 to {MAX_NAME_LEN} letters, digits, '_', '-' or '.'"
            ));
        }
        if names.insert(name, ()).is_some() {
            return Err(format!("tenant {name:?} is configured twice"));
        }
        if t.credit.0 == 0 {
            return Err(format!("tenant {name:?}: credit must be positive"));
        }
        if let Some(tax) = &t.idle_tax {
            if !(0.0..=1.0).contains(&tax.rate) {
                return Err(format!("tenant {name:?}: idle_tax.rate must be between 0 and 1"));
            }
        }
        if let Some(cap) = t.hard_cap {
            if cap.0 < t.reserved.0 {
                return Err(format!("tenant {name:?}: hard_cap is below reserved"));
            }
        }
        if t.max_keys == Some(0) {
            return Err(format!(
                "tenant {name:?}: max_keys must be at least 1 (leave it out for no limit)"
            ));
        }
        if t.max_bytes == Some(Size(0)) {
            return Err(format!(
                "tenant {name:?}: max_bytes must be at least 1 (leave it out for no limit)"
            ));
        }
        let limited = t.max_connections.is_some() || t.max_requests_per_second.is_some();
        if name == DEFAULT_TENANT && limited {
            return Err("the default tenant is the admin, which is never limited; \
                        max_connections and max_requests_per_second do not apply to it"
                .into());
        }
        if t.max_connections == Some(0) || t.max_requests_per_second == Some(0) {
            return Err(format!(
                "tenant {name:?}: max_connections and max_requests_per_second must be at least 1 \
                 (leave one out for no limit)"
            ));
        }
        if name == DEFAULT_TENANT && !t.key_prefixes.is_empty() {
            return Err("the default tenant takes every key no other tenant's prefix matches; \
                        key_prefixes do not apply to it"
                .into());
        }
        for p in &t.key_prefixes {
            if p.is_empty() {
                return Err(format!("tenant {name:?}: an empty key prefix"));
            }
            if let Some(other) = prefixes.insert(p, name) {
                return Err(format!("key prefix {p:?} is given to both {other:?} and {name:?}"));
            }
        }
        reserved = reserved.saturating_add(t.reserved.0);
    }
    if names.len() > MAX_TENANTS {
        return Err(format!("at most {MAX_TENANTS} tenants, default included"));
    }
    if reserved > config.memory.0 {
        return Err(format!(
            "tenants reserve {} in all, more than the {} of memory",
            Size(reserved),
            config.memory
        ));
    }
    if !prefixes.is_empty() && !config.unauthenticated_allowed() {
        return Err(
            "key_prefixes route unauthenticated clients: set allow_unauthenticated = true".into()
        );
    }
    validate_logins(config)
}

/// Checks the failed-login limit, and that somebody can log in at all.
fn validate_logins(config: &Config) -> Result<(), String> {
    let rate = config.auth_failure_rate;
    if !rate.is_finite() || rate <= 0.0 {
        return Err(format!(
            "auth_failure_rate must be a positive number of failed logins per second, not {rate}"
        ));
    }
    if config.auth_failure_burst == 0 {
        return Err("auth_failure_burst must be at least 1".into());
    }
    if !config.unauthenticated_allowed()
        && config.tenants.iter().all(|t| t.password_sha256.is_none())
    {
        let why = if config.allow_unauthenticated == Some(false) {
            "allow_unauthenticated = false"
        } else {
            "tenants are configured, so allow_unauthenticated defaults to false"
        };
        return Err(format!(
            "nobody could log in: {why}, and no tenant has a password_sha256 (give one a \
             password, or set allow_unauthenticated = true)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!("1GiB".parse(), Ok(Size(1 << 30)));
        assert_eq!("64m".parse(), Ok(Size(64 << 20)));
        assert_eq!("512 KiB".parse(), Ok(Size(512 << 10)));
        assert_eq!("4096".parse(), Ok(Size(4096)));
        assert!("12 parsecs".parse::<Size>().is_err());
        assert!("".parse::<Size>().is_err());
        assert_eq!(Size(1 << 30).to_string(), "1GiB");
    }

    #[test]
    fn toml_file_with_sizes_and_unknown_keys() {
        let c: Config = toml::from_str("memory = \"64MiB\"\nport = 1234\nworkers = 2").unwrap();
        assert_eq!((c.memory, c.port, c.workers), (Size(64 << 20), 1234, 2));
        assert!(toml::from_str::<Config>("memroy = 1").is_err(), "unknown keys are refused");
    }

    #[test]
    fn the_credit_floor_chooses_the_arbiters_credit_policy() {
        use fridge_engine::CreditPolicy;
        assert_eq!(Config::default().engine().credit_policy, CreditPolicy::Floor { percent: 100 });
        let c: Config = toml::from_str("credit_floor = 90\n").unwrap();
        c.validate().unwrap();
        assert_eq!(c.engine().credit_policy, CreditPolicy::Floor { percent: 90 });
        let c: Config = toml::from_str("credit_floor = 0\n").unwrap();
        assert_eq!(c.engine().credit_policy, CreditPolicy::Memshare);
        let c: Config = toml::from_str("credit_floor = 101\n").unwrap();
        assert!(c.validate().unwrap_err().contains("credit_floor is a percentage"));
        assert_eq!(Config::default().engine().credit_weight, fridge_engine::CreditWeight::Hits);
        let c: Config = toml::from_str("credit_weight = \"hit_ratio\"\n").unwrap();
        assert_eq!(c.engine().credit_weight, fridge_engine::CreditWeight::HitRatio);
        assert!(toml::from_str::<Config>("credit_weight = \"requests\"\n").is_err());
    }

    #[test]
    fn a_segment_size_is_any_multiple_of_64_bytes_and_whole_pages_with_the_index_counted() {
        // 1,600 KiB (not a power of two) and 1,000,000 bytes (15,625 × 64).
        for good in ["segment_size = \"1600KiB\"", "segment_size = 1000000"] {
            let c: Config = toml::from_str(&format!("memory = \"64MiB\"\n{good}")).unwrap();
            c.validate().unwrap();
            assert_eq!(c.engine().segment_size, c.segment_size.bytes(), "{good}");
        }
        let c: Config = toml::from_str("memory = \"64MiB\"\nsegment_size = 1000001").unwrap();
        let e = c.validate().unwrap_err();
        assert!(e.contains("segment_size must be a multiple of 64 from 1 KiB to 8 MiB"), "{e}");
        // Segments lent to the index give their pages back: whole pages only.
        let text = "memory = \"64MiB\"\nmemory_includes_index = true\nsegment_size = 1000000";
        let e = toml::from_str::<Config>(text).unwrap().validate().unwrap_err();
        assert!(e.contains("needs segments of whole pages"), "{e}");
    }

    #[test]
    fn the_slb_size_reaches_the_engine_within_its_bounds() {
        let c: Config = toml::from_str("slb_size = \"256KiB\"\n").unwrap();
        c.validate().unwrap();
        assert_eq!(c.engine().slb_bytes, 256 << 10);
        assert_eq!(Config::default().engine().slb_bytes, 0, "none by default");
        for bad in ["slb_size = 32", "slb_size = \"8MiB\""] {
            let c: Config = toml::from_str(bad).unwrap();
            let e = c.validate().unwrap_err();
            assert!(e.contains("slb_size must be 0 (none) or from 64B to 4194304B"), "{bad}: {e}");
        }
    }

    #[test]
    fn tenants_parse_from_toml() {
        let hash = PasswordHash::new(b"s", b"pw");
        let text = format!(
            "memory = \"64MiB\"\nhitmap_bits_per_item = 16\neviction = \"memshare\"\nauth_failure_rate = 0.5\n\
             auth_failure_burst = 3\n\
             [[tenants]]\nname = \"billing\"\npassword_sha256 = \"{hash}\"\n\
             reserved = \"8MiB\"\ncredit = \"32KiB\"\nrank = \"slru\"\n\
             idle_tax = {{ rate = 0.25, idle_time = \"2m\" }}\nhard_cap = \"16MiB\"\n"
        );
        let c: Config = toml::from_str(&text).unwrap();
        c.validate().unwrap();
        assert_eq!(c.hitmap_bits_per_item, Some(16));
        assert_eq!(c.engine().hitmap_bits_per_item, 16);
        // Unset: 32, a hitmap for Memshare's pass, a frequency sketch for the queues.
        let unset = Config { hitmap_bits_per_item: None, ..c.clone() };
        assert_eq!(unset.engine().hitmap_bits_per_item, 32);
        let queues = Config { eviction: EvictionChoice::Queues, ..unset };
        assert_eq!(queues.engine().hitmap_bits_per_item, 32);
        assert_eq!(Config::default().engine().hitmap_bits_per_item, 32);
        assert_eq!(c.engine().eviction, fridge_engine::Eviction::Memshare);
        // By default, the queues without tenants and Memshare's pass with them.
        assert!(matches!(Config::default().engine().eviction, fridge_engine::Eviction::Queues(_)));
        let auto = Config { eviction: EvictionChoice::Auto, ..c.clone() };
        assert_eq!(auto.engine().eviction, fridge_engine::Eviction::Memshare);
        let queues = Config { eviction: EvictionChoice::Queues, ..c.clone() };
        assert!(matches!(queues.engine().eviction, fridge_engine::Eviction::Queues(_)));
        assert_eq!((c.auth_failure_rate, c.auth_failure_burst), (0.5, 3));
        assert!(!c.unauthenticated_allowed(), "tenants exist");
        let p = c.tenants[0].policy();
        assert_eq!((p.reserved, p.credit, p.hard_cap), (8 << 20, 32 << 10, Some(16 << 20)));
        assert_eq!(p.rank, fridge_engine::RankKind::Slru);
        let tax = p.idle_tax.unwrap();
        assert_eq!((tax.rate, tax.idle_ms), (0.25, 120_000));
        assert!(c.tenants[0].password_sha256.as_ref().unwrap().verify(b"pw"));
        let bad_rank = "[[tenants]]\nname = \"a\"\nrank = \"random\"\n";
        assert!(toml::from_str::<Config>(bad_rank).is_err());
        let path = std::env::temp_dir().join(format!("fridge-config-{}.toml", std::process::id()));
        std::fs::write(&path, bad_rank).unwrap();
        let err = Config::from_file(&path).unwrap_err();
        let _ = std::fs::remove_file(&path);
        assert!(!err.contains('\n'), "one line: {err}");
        assert!(err.contains(", line 3 column 8: "), "{err}");
        let unknown = "[[tenants]]\nname = \"a\"\npassword = \"plain\"\n";
        assert!(toml::from_str::<Config>(unknown).is_err(), "plain passwords are refused");
        assert_eq!("90".parse::<Millis>(), Ok(Millis(90_000)));
        assert_eq!("1h".parse::<Millis>(), Ok(Millis(3_600_000)));
        assert!("5 parsecs".parse::<Millis>().is_err());
    }

    #[test]
    fn listen_takes_memcacheds_address_list() {
        let c = |listen: &str| Config { listen: listen.into(), port: 11211, ..Config::default() };
        let addrs = |listen: &str| -> Vec<String> {
            c(listen).listen_addrs().unwrap().iter().map(ToString::to_string).collect()
        };
        assert_eq!(
            addrs("127.0.0.1, 127.0.0.2:99,[::1],[::1]:98,::1,127.0.0.1"),
            ["127.0.0.1:11211", "127.0.0.2:99", "[::1]:11211", "[::1]:98"],
            "ports where given, `port` elsewhere, repeats once"
        );
        assert!(c("127.0.0.1:x").listen_addrs().unwrap_err().contains("bad port"));
        assert!(c("[::1").listen_addrs().is_err());
        assert!(c(" , ").listen_addrs().is_err());
        let resp = Config { resp_port: Some(6379), ..c("127.0.0.2,127.0.0.3") };
        assert_eq!(resp.resp_addr().unwrap().unwrap().to_string(), "127.0.0.2:6379");
    }

    #[test]
    fn tls_settings_take_redis_names_and_are_checked() {
        let text = "tls-port = 6380\ntls-cert-file = \"c.pem\"\ntls-key-file = \"k.pem\"\n\
                    tls-ca-cert-file = \"ca.pem\"\n";
        let c: Config = toml::from_str(text).unwrap();
        assert_eq!(c.tls_port, Some(6380));
        assert_eq!(c.tls_client_auth(), TlsAuthClients::Yes, "Redis's default with a CA file");
        c.validate().unwrap();
        let snake: Config = toml::from_str(&text.replace('-', "_")).unwrap();
        assert_eq!(snake, c, "fridge's own names too");
        let optional: Config = toml::from_str("tls_auth_clients = \"optional\"").unwrap();
        assert_eq!(optional.tls_auth_clients, Some(TlsAuthClients::Optional));

        let no_key = Config { tls_key_file: None, ..c.clone() };
        assert!(no_key.validate().unwrap_err().contains("needs tls_cert_file and tls_key_file"));
        let no_ca = Config { tls_ca_cert_file: None, ..c.clone() };
        assert_eq!(no_ca.tls_client_auth(), TlsAuthClients::No);
        let yes_no_ca = Config { tls_auth_clients: Some(TlsAuthClients::Yes), ..no_ca };
        assert!(yes_no_ca.validate().unwrap_err().contains("needs tls_ca_cert_file"));
        let no_port = Config { tls_port: None, ..c.clone() };
        assert!(no_port.validate().unwrap_err().contains("no port speaks TLS"));
        let main = Config { tls_port: None, enable_ssl: true, ..c.clone() };
        main.validate().unwrap();
        let unix = Config { unix_socket: Some("/tmp/f.sock".into()), ..main };
        assert!(unix.validate().unwrap_err().starts_with("-Z (TLS on the main port) is for TCP"));

        let path = std::env::temp_dir().join(format!("fridge-tls-{}.toml", std::process::id()));
        std::fs::write(&path, "tls-protocols = \"TLSv1.3\"\n").unwrap();
        let err = Config::from_file(&path).unwrap_err();
        let _ = std::fs::remove_file(&path);
        assert!(err.contains("tls-protocols: fridge has no such TLS setting"), "{err}");
    }

    #[test]
    fn defaults_validate() {
        Config::default().validate().unwrap();
    }

    #[test]
    fn tenant_limits_parse_and_are_checked() {
        let hash = PasswordHash::new(b"s", b"pw");
        let file = |name: &str, extra: &str| {
            format!("[[tenants]]\nname = \"{name}\"\npassword_sha256 = \"{hash}\"\n{extra}\n")
        };
        let c: Config =
            toml::from_str(&file("a", "max_connections = 100\nmax_requests_per_second = 50000"))
                .unwrap();
        c.validate().unwrap();
        assert_eq!(c.tenants[0].max_connections, Some(100));
        assert_eq!(c.tenants[0].max_requests_per_second, Some(50_000));
        assert_eq!(TenantConfig::default().max_connections, None, "no limit by default");
        for zero in ["max_connections = 0", "max_requests_per_second = 0"] {
            let c: Config = toml::from_str(&file("a", zero)).unwrap();
            let err = c.validate().unwrap_err();
            assert!(err.contains("must be at least 1"), "{err}");
        }
        assert!(toml::from_str::<Config>(&file("a", "max_connections = -1")).is_err());
        let admin: Config = toml::from_str(&file("default", "max_connections = 5")).unwrap();
        let err = admin.validate().unwrap_err();
        assert!(err.contains("admin, which is never limited"), "{err}");
    }

    #[test]
    fn max_bytes_parses_as_a_size_and_is_checked() {
        let hash = PasswordHash::new(b"s", b"pw");
        let file = |extra: &str| {
            format!("[[tenants]]\nname = \"a\"\npassword_sha256 = \"{hash}\"\n{extra}\n")
        };
        let c: Config = toml::from_str(&file("max_bytes = \"64MiB\"")).unwrap();
        c.validate().unwrap();
        assert_eq!(c.tenants[0].policy().max_bytes, Some(64 << 20), "it reaches the engine");
        assert_eq!(TenantConfig::default().policy().max_bytes, None, "no quota by default");
        let zero: Config = toml::from_str(&file("max_bytes = 0")).unwrap();
        let err = zero.validate().unwrap_err();
        assert_eq!(err, "tenant \"a\": max_bytes must be at least 1 (leave it out for no limit)");
        assert!(toml::from_str::<Config>(&file("max_bytes = \"lots\"")).is_err());
    }

    #[test]
    fn max_keys_parses_and_is_checked() {
        let hash = PasswordHash::new(b"s", b"pw");
        let file = |name: &str, extra: &str| {
            format!("[[tenants]]\nname = \"{name}\"\npassword_sha256 = \"{hash}\"\n{extra}\n")
        };
        let c: Config = toml::from_str(&file("a", "max_keys = 1000000")).unwrap();
        c.validate().unwrap();
        assert_eq!(c.tenants[0].max_keys, Some(1_000_000));
        assert_eq!(c.tenants[0].policy().max_keys, Some(1_000_000), "it reaches the engine");
        assert_eq!(TenantConfig::default().policy().max_keys, None, "no cap by default");
        let zero: Config = toml::from_str(&file("a", "max_keys = 0")).unwrap();
        let err = zero.validate().unwrap_err();
        assert_eq!(err, "tenant \"a\": max_keys must be at least 1 (leave it out for no limit)");
        for bad in ["max_keys = -1", "max_keys = \"1k\"", "max_keys = 1.5", "max_key = 5"] {
            assert!(toml::from_str::<Config>(&file("a", bad)).is_err(), "{bad} is refused");
        }
        // A storage quota, like hard_cap: the default tenant may have one too.
        let admin: Config = toml::from_str(&file("default", "max_keys = 5")).unwrap();
        admin.validate().unwrap();
    }

    /// `config/example.toml` lists every key with its default, and its commented tenant table
    /// is valid once uncommented.
    #[test]
    fn the_example_file_is_the_defaults() {
        let text = include_str!("../../../config/example.toml");
        let parsed: Config = toml::from_str(text).unwrap();
        assert_eq!(parsed, Config::default());
        let hash = PasswordHash::new(b"s", b"pw").to_string();
        let tenant: String = text[text.find("# [[tenants]]").unwrap()..]
            .lines()
            .map(|l| l.trim_start_matches("# ").replace("<salt hex>$<hex>", &hash) + "\n")
            .collect();
        let with_tenant: Config = toml::from_str(&format!("{text}{tenant}")).unwrap();
        assert_eq!(with_tenant.tenants.len(), 1);
        let uncommented =
            toml::from_str::<Config>(&text.replace("# max_client_memory", "max_client_memory"));
        assert_eq!(uncommented.unwrap().max_client_memory, Some(Size(256 << 20)));
    }
}
