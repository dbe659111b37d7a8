//! The command line: memcached's flags (`memcached -h` of 1.6.18) and fridge's own long
//! options over the configuration ([`Cli::into_config`]), with memcached's checks and messages
//! for the flags it shares (`-c`, `-I`, `-m`, `-o`; `docs/deployment.md`).

use std::path::PathBuf;

use clap::Parser;

use crate::config::{
    Config, EvictionChoice, ITEM_OVERHEAD, MIN_OUTPUT_ROOM, MetadataChoice, Millis, Protocol, Size,
    TlsAuthClients,
};
use crate::extended::{self, Effect};

/// The command line. Every option can also be set by a `FRIDGE_*` environment variable or in
/// the TOML file given with `--config` (the file's keys are the long option names with `_`
/// for `-`); the command line wins over the environment, which wins over the file.
#[derive(Parser, Debug, Default)]
#[command(
    name = "fridge",
    version,
    about = "fridge: a multi-tenant in-memory cache speaking memcached (text + meta) and Redis \
             (RESP2/3) on one port",
    after_help = "memcached compatibility: -p -l -s -a -b -u -P -d -v -A -m -t -c -I -o -Z and -U \
                  mean what they mean to memcached 1.6, with its messages; as root, fridge \
                  wants -u USER, as memcached does. docs/deployment.md lists every memcached \
                  flag and -o option and how far fridge honours it. Sizes take binary, case-insensitive units (64MiB = 64m = 64mb, 1.5g, \
                  512k) or bytes; durations 250ms, 30s, 5m, 1h, or seconds.\n\n\
                  Memory: --memory (-m) is item memory. On top of it come the index (13-26 \
                  bytes per item, about 19 with small items), the eviction metadata (with \
                  S3-FIFO's queues, the default, two ghosts of 10-20 bits per item held and a \
                  frequency sketch of --hitmap-bits-per-item bits per item held, at most per \
                  64 bytes of memory; with Memshare's pass, once tenants are configured, \
                  the hitmap of those bits per 64 bytes of memory: 1/16 of it at 32), a \
                  64-byte header per segment, the cleaner's buffers (about 40 bytes per item of \
                  a cleaning pass), and for each connection 32 KiB of buffers, growing with \
                  large requests and replies up to --max-query-buffer and --max-output-buffer. \
                  Measured at -m 256 filled with 16-byte keys and 32-byte values: 1.42x the \
                  setting. With \
                  --memory-includes-index the index, hitmap, headers and cleaner buffers come \
                  out of --memory instead (fewer items fit; connection buffers still come on \
                  top). See docs/design.md.\n\n\
                  Tenants are configured in the --config file, one [[tenants]] table each: \
                  name, password_sha256 (print one with `fridge hash-password`), reserved, \
                  credit, rank (hitmap, lru, lfu, slru), idle_tax = { rate, idle_time }, \
                  hard_cap, max_keys, max_bytes, key_prefixes, max_connections, \
                  max_requests_per_second. Clients log in with AUTH user pass, HELLO 3 AUTH user \
                  pass, or memcached's `set <any> 0 0 <n>` carrying `user pass`. Failed logins \
                  are limited per client address and per user name (--auth-failure-rate, \
                  --auth-failure-burst); past the limit a login is refused unchecked. SIGHUP \
                  or CONFIG RELOAD rereads the tenants and login settings (and the TLS \
                  certificate files) without losing cached data; a file that does not parse, or that would let clients in \
                  without a password where one is required now, is refused and the running \
                  configuration stays. See docs/tenants.md."
)]
pub struct Cli {
    /// A tool instead of the server.
    #[command(subcommand)]
    pub command: Option<Tool>,
    /// Check the configuration (file, environment and flags, as a start would read them),
    /// print the effective settings and exit: 0 if it is valid, 1 with the reason if not.
    /// Binds nothing.
    #[arg(long)]
    pub check_config: bool,
    /// TOML configuration file (keys as in `Config`, e.g. `memory = "4GiB"`).
    #[arg(long, env = "FRIDGE_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Addresses to listen on: a comma list, and the flag may repeat; each HOST, HOST:PORT,
    /// or an IPv6 address in brackets, with :PORT or not (memcached's -l) [default: 127.0.0.1].
    #[arg(short = 'l', long, env = "FRIDGE_LISTEN", value_name = "ADDR")]
    pub listen: Vec<String>,
    /// Main port, serving memcached and RESP (0 = any free port) [default: 11211].
    #[arg(short = 'p', long, env = "FRIDGE_PORT")]
    pub port: Option<u16>,
    /// Also open a RESP-only port (e.g. 6379).
    #[arg(long, env = "FRIDGE_RESP_PORT")]
    pub resp_port: Option<u16>,
    /// Also open a TLS port serving both protocols (Redis's tls-port; 0 = any free port).
    #[arg(long, env = "FRIDGE_TLS_PORT", value_name = "PORT")]
    pub tls_port: Option<u16>,
    /// TLS on the main port (memcached's -Z; the certificate as for --tls-port).
    #[arg(short = 'Z', long, env = "FRIDGE_ENABLE_SSL")]
    pub enable_ssl: bool,
    /// The server's certificate chain, PEM (Redis's tls-cert-file, memcached's
    /// ssl_chain_cert); reread on SIGHUP and CONFIG RELOAD.
    #[arg(long, env = "FRIDGE_TLS_CERT_FILE", value_name = "FILE")]
    pub tls_cert_file: Option<PathBuf>,
    /// Its private key, PEM (Redis's tls-key-file, memcached's ssl_key).
    #[arg(long, env = "FRIDGE_TLS_KEY_FILE", value_name = "FILE")]
    pub tls_key_file: Option<PathBuf>,
    /// CA certificates that sign client certificates, PEM (Redis's tls-ca-cert-file,
    /// memcached's ssl_ca_cert).
    #[arg(long, env = "FRIDGE_TLS_CA_CERT_FILE", value_name = "FILE")]
    pub tls_ca_cert_file: Option<PathBuf>,
    /// Whether TLS clients must show a certificate the CA signed; one naming a tenant logs in
    /// as it (Redis's tls-auth-clients) [default: yes with --tls-ca-cert-file, else no].
    #[arg(long, env = "FRIDGE_TLS_AUTH_CLIENTS", value_enum)]
    pub tls_auth_clients: Option<TlsAuthClients>,
    /// Protocol of the main port [default: auto].
    #[arg(long, env = "FRIDGE_PROTOCOL", value_enum)]
    pub protocol: Option<Protocol>,
    /// Listen on this unix socket instead of TCP, speaking what the main port would
    /// (memcached's -s).
    #[arg(short = 's', long, env = "FRIDGE_UNIX_SOCKET", value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,
    /// Permissions of the unix socket, octal (memcached's -a) [default: 700].
    #[arg(short = 'a', long, env = "FRIDGE_UNIX_MASK", value_name = "OCTAL", value_parser = octal)]
    pub unix_mask: Option<u32>,
    /// Listen backlog of each listening socket (memcached's -b) [default: 1024].
    #[arg(short = 'b', long, env = "FRIDGE_LISTEN_BACKLOG", value_name = "N")]
    pub listen_backlog: Option<u32>,
    /// Let memcached's `shutdown` command stop the server (memcached's -A).
    #[arg(short = 'A', long, env = "FRIDGE_ENABLE_SHUTDOWN")]
    pub enable_shutdown: bool,
    /// More logging; repeat for more (-v warnings, -vv every connection).
    #[arg(short = 'v', long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// When started as root: become this user once the sockets are bound (memcached's -u).
    #[arg(short = 'u', long, env = "FRIDGE_USER", value_name = "USER")]
    pub user: Option<String>,
    /// Write the process id to this file (memcached's -P).
    #[arg(
        short = 'P',
        long,
        visible_alias = "pid-file",
        env = "FRIDGE_PIDFILE",
        value_name = "FILE"
    )]
    pub pidfile: Option<PathBuf>,
    /// Warm restart: a graceful stop (SIGTERM, SIGINT, shutdown) writes every item to FILE,
    /// the next start loads it (TTLs keep their deadlines, CAS values are kept) and removes
    /// it; a missing, damaged or mismatched file starts empty (memcached's -e, whose memory
    /// file this replaces).
    #[arg(
        short = 'e',
        long,
        visible_alias = "memory-file",
        env = "FRIDGE_RESTART_FILE",
        value_name = "FILE"
    )]
    pub restart_file: Option<PathBuf>,
    /// Run in the background once the sockets are bound (memcached's -d).
    #[arg(short = 'd', long, env = "FRIDGE_DAEMON")]
    pub daemon: bool,
    /// memcached's extended options, comma-separated; the flag may repeat. Honoured:
    /// idle_timeout=N, read_buf_mem_limit=MB, and those asking for what fridge always does
    /// (maxconns_fast, modern, slab_reassign, slab_automove, lru_crawler, lru_maintainer);
    /// the rest are refused with the reason (docs/deployment.md).
    #[arg(short = 'o', long, value_name = "OPTIONS")]
    pub extended: Vec<String>,
    /// Item memory [default: 1GiB]. The index, hitmap and other bookkeeping come on top
    /// (about 0.5× more with small items) unless --memory-includes-index; see below.
    #[arg(long, env = "FRIDGE_MEMORY", value_name = "SIZE")]
    pub memory: Option<Size>,
    /// Item memory in megabytes (memcached's -m).
    #[arg(short = 'm', long = "memory-mb", value_name = "MB", conflicts_with = "memory")]
    pub memory_mb: Option<u64>,
    /// Count the index and the engine's other bookkeeping within --memory, so the server's
    /// memory stays near it (plus connection buffers); fewer items fit [default: false].
    #[arg(
        long,
        env = "FRIDGE_MEMORY_INCLUDES_INDEX",
        value_name = "BOOL",
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub memory_includes_index: Option<bool>,
    /// Redis Cluster clients: serve the slots a static slot map gives this server and answer
    /// MOVED for the others (one `node <id> <host:port> <slots>` line per node; SIGHUP
    /// rereads it and drops the keys of slots no longer served; docs/scale-out.md).
    #[arg(long, env = "FRIDGE_CLUSTER_CONFIG", value_name = "FILE")]
    pub cluster_config: Option<PathBuf>,
    /// Worker threads, 0 = one per core (memcached's -t) [default: 0].
    #[arg(short = 't', long, visible_alias = "threads", env = "FRIDGE_WORKERS")]
    pub workers: Option<usize>,
    /// Most simultaneous connections (memcached's -c) [default: 1024].
    #[arg(short = 'c', long, env = "FRIDGE_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Largest value (memcached's -I) [default: 1MiB].
    #[arg(short = 'I', long, env = "FRIDGE_MAX_ITEM_SIZE", value_name = "SIZE")]
    pub max_item_size: Option<Size>,
    /// memcached's UDP port, serving get and gets (memcached's -U) [default: 0, off].
    #[arg(short = 'U', long = "udp-port", env = "FRIDGE_UDP_PORT", value_name = "PORT")]
    pub udp_port: Option<u16>,
    /// Log level: error, warn, info, debug, trace (or Redis's warning, notice, verbose)
    /// [default: info; -vv debug, -vvv trace].
    #[arg(long, env = "FRIDGE_LOG_LEVEL", value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Log line format [default: text].
    #[arg(long, env = "FRIDGE_LOG_FORMAT", value_enum)]
    pub log_format: Option<crate::logging::LogFormat>,
    /// Admin HTTP port serving /metrics (Prometheus), /healthz and /readyz [default: off].
    #[arg(long, env = "FRIDGE_ADMIN_PORT", value_name = "PORT")]
    pub admin_port: Option<u16>,
    /// Address of the admin port: it has no authentication [default: 127.0.0.1].
    #[arg(long, env = "FRIDGE_ADMIN_ADDRESS", value_name = "IP")]
    pub admin_address: Option<String>,
    /// Longest memcached key [default: 250].
    #[arg(long, env = "FRIDGE_MAX_KEY_LEN")]
    pub max_key_len: Option<usize>,
    /// Longest RESP key [default: 65535].
    #[arg(long, env = "FRIDGE_MAX_RESP_KEY_LEN")]
    pub max_resp_key_len: Option<usize>,
    /// Longest memcached command line, except multigets [default: 2048].
    #[arg(long, env = "FRIDGE_MAX_LINE_LEN")]
    pub max_line_len: Option<usize>,
    /// Most arguments of one RESP command [default: 1048576].
    #[arg(long, env = "FRIDGE_MAX_MULTIBULK_LEN")]
    pub max_multibulk_len: Option<usize>,
    /// Longest RESP argument [default: item size + 64KiB].
    #[arg(long, env = "FRIDGE_MAX_BULK_LEN", value_name = "SIZE")]
    pub max_bulk_len: Option<Size>,
    /// Most unprocessed request bytes per connection (at least one whole request)
    /// [default: 4MiB].
    #[arg(long, env = "FRIDGE_MAX_QUERY_BUFFER", value_name = "SIZE")]
    pub max_query_buffer: Option<Size>,
    /// Most unsent reply bytes per connection; long replies are written in steps, never held
    /// whole [default: 64MiB].
    #[arg(long, env = "FRIDGE_MAX_OUTPUT_BUFFER", value_name = "SIZE")]
    pub max_output_buffer: Option<Size>,
    /// Most bytes of pub/sub messages waiting for one subscriber; past it the subscriber is
    /// disconnected [default: 32MiB].
    #[arg(long, env = "FRIDGE_MAX_PUBSUB_OUTPUT", value_name = "SIZE")]
    pub max_pubsub_output: Option<Size>,
    /// Close connections idle this many seconds, 0 = never [default: 0].
    #[arg(long, env = "FRIDGE_IDLE_TIMEOUT", value_name = "SECONDS")]
    pub idle_timeout: Option<u64>,
    /// Redis databases per tenant (`SELECT 0` to N-1), 1 to 16 [default: 16].
    #[arg(long, env = "FRIDGE_DATABASES", value_name = "N")]
    pub databases: Option<u8>,
    /// Close a connection whose request stays half-sent this long, 0 = never [default: 30s].
    #[arg(long, env = "FRIDGE_PARTIAL_REQUEST_TIMEOUT", value_name = "DURATION")]
    pub partial_request_timeout: Option<Millis>,
    /// Most memory all connections' buffers may take together; past it the largest
    /// connections are closed first [default: a quarter of --memory, at least 64MiB].
    #[arg(long, env = "FRIDGE_MAX_CLIENT_MEMORY", value_name = "SIZE")]
    pub max_client_memory: Option<Size>,
    /// Most reply bytes of a long reply written to one connection per event-loop turn (after a
    /// first turn of at most 64KiB), at least 4KiB; smaller chunks answer small requests sooner
    /// beside large values, at some throughput [default: 1MiB].
    #[arg(long, env = "FRIDGE_WRITE_CHUNK", value_name = "SIZE")]
    pub write_chunk: Option<Size>,
    /// Engine segment size [default: fits the largest item, at least 1MiB].
    #[arg(long, env = "FRIDGE_SEGMENT_SIZE", value_name = "SIZE")]
    pub segment_size: Option<Size>,
    /// Eviction metadata bits per expected item (the hitmap with Memshare's pass, the
    /// frequency sketch with S3-FIFO's queues), 0 = none [default: 32].
    #[arg(long, env = "FRIDGE_HITMAP_BITS_PER_ITEM", value_name = "BITS")]
    pub hitmap_bits_per_item: Option<usize>,
    /// Search lookaside buffer in front of the index: bytes of its cache table, up to 4MiB,
    /// 0 = none [default: 0].
    #[arg(long, env = "FRIDGE_SLB_SIZE", value_name = "SIZE")]
    pub slb_size: Option<Size>,
    /// With tenants: credits of pooled memory come only from tenants above this percentage of
    /// their share; 0 = from any tenant holding one (Memshare) [default: 100].
    #[arg(long, env = "FRIDGE_CREDIT_FLOOR", value_name = "PERCENT")]
    pub credit_floor: Option<u8>,
    /// With tenants: what a shadow-queue hit is worth: hits (a credit each, Memshare) or
    /// hit_ratio (weighed by the tenant's request rate) [default: hits].
    #[arg(long, env = "FRIDGE_CREDIT_WEIGHT", value_name = "WEIGHT")]
    pub credit_weight: Option<crate::config::CreditWeightChoice>,
    /// How the engine evicts: queues (S3-FIFO's small and main queues), memshare (a sample of
    /// segments, best-ranked items kept) or auto (queues without tenants, memshare with
    /// them) [default: auto].
    #[arg(long, env = "FRIDGE_EVICTION", value_name = "KIND")]
    pub eviction: Option<EvictionChoice>,
    /// Where the hitmap lives: cpu, gpu (an NVIDIA GPU; fails without one; under S3-FIFO's
    /// queues a hitmap there instead of their frequency sketch) or auto (a GPU where one is
    /// usable, else the CPU; the queues keep their sketch) [default: cpu].
    #[arg(long, env = "FRIDGE_METADATA", value_name = "WHERE")]
    pub metadata: Option<MetadataChoice>,
    /// Serve clients that have not authenticated, as tenant `default` (or by key prefix)
    /// [default: true unless a tenant besides `default` is configured or `default` has a
    /// password].
    #[arg(long, env = "FRIDGE_ALLOW_UNAUTHENTICATED", value_name = "BOOL")]
    pub allow_unauthenticated: Option<bool>,
    /// Failed logins per second allowed per client address and per user name, once the
    /// burst is spent; further logins are refused unchecked [default: 1.0].
    #[arg(long, env = "FRIDGE_AUTH_FAILURE_RATE", value_name = "PER_SECOND")]
    pub auth_failure_rate: Option<f64>,
    /// Failed logins allowed at once per client address and per user name [default: 10].
    #[arg(long, env = "FRIDGE_AUTH_FAILURE_BURST", value_name = "COUNT")]
    pub auth_failure_burst: Option<u32>,
}

/// memcached's `-a`: permission bits in octal.
fn octal(text: &str) -> Result<u32, String> {
    u32::from_str_radix(text, 8)
        .ok()
        .filter(|m| *m <= 0o777)
        .ok_or_else(|| format!("{text:?} is not an octal permission mask (000 to 777)"))
}

/// Tools run instead of the server.
#[derive(clap::Subcommand, Debug)]
pub enum Tool {
    /// Prints the `password_sha256 = "…"` line of a tenant's password (salted SHA-256) to
    /// paste into a `[[tenants]]` table. Without PASSWORD, reads one line from standard input.
    HashPassword {
        /// The password (prefer standard input: arguments show up in `ps`).
        password: Option<String>,
    },
    /// Asks a running server for its version (memcached's `version`, or RESP `PING` with
    /// --resp) and exits 0 if it answers (a login refusal is an answer too), 1 if not: a
    /// health check needing no other client.
    Ping {
        /// Host to connect to.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Port to connect to (FRIDGE_PORT when set, as the server reads it).
        #[arg(short = 'p', long, env = "FRIDGE_PORT", default_value_t = 11211)]
        port: u16,
        /// Connect to this unix socket instead (the server's -s).
        #[arg(short = 's', long, value_name = "PATH")]
        unix_socket: Option<PathBuf>,
        /// Send RESP's PING instead of memcached's version (a RESP-only port).
        #[arg(long)]
        resp: bool,
        /// Give up on connecting, and on the reply, after this long.
        #[arg(long, default_value = "3s", value_name = "DURATION")]
        timeout: Millis,
    },
}

impl Cli {
    /// Builds the configuration: defaults, then the file, then environment and flags.
    pub fn into_config(self) -> Result<Config, String> {
        let mut c = match &self.config {
            Some(path) => Config::from_file(path)?,
            None => Config::default(),
        };
        macro_rules! take {
            ($($field:ident),*) => { $( if let Some(v) = self.$field { c.$field = v; } )* };
        }
        if self.max_connections == Some(0) {
            return Err("Maximum connections must be greater than 0".into());
        }
        let item_flag = self.max_item_size.is_some();
        let output_flag = self.max_output_buffer.is_some();
        take!(
            port,
            protocol,
            memory,
            workers,
            max_connections,
            max_item_size,
            max_key_len,
            max_resp_key_len,
            max_line_len,
            max_multibulk_len,
            max_bulk_len,
            max_query_buffer,
            max_output_buffer,
            max_pubsub_output,
            idle_timeout,
            databases,
            partial_request_timeout,
            write_chunk,
            segment_size,
            slb_size,
            credit_floor,
            credit_weight,
            eviction,
            metadata,
            auth_failure_rate,
            auth_failure_burst
        );
        if let Some(v) = self.allow_unauthenticated {
            c.allow_unauthenticated = Some(v);
        }
        if let Some(v) = self.hitmap_bits_per_item {
            c.hitmap_bits_per_item = Some(v);
        }
        if let Some(v) = self.max_client_memory {
            c.max_client_memory = Some(v);
        }
        if let Some(v) = self.memory_includes_index {
            c.memory_includes_index = v;
        }
        c.config_file = self.config.clone();
        if let Some(path) = &self.cluster_config {
            c.cluster_config = Some(path.clone());
        }
        if let Some(p) = self.resp_port {
            c.resp_port = Some(p);
        }
        if let Some(mb) = self.memory_mb {
            c.memory = Size(mb.checked_mul(1 << 20).ok_or("-m is too large")?);
        }
        self.memcached_flags(&mut c)?;
        // `-d` moves to `/`: paths given relative to where fridge was started must stay right.
        let paths = [
            &mut c.config_file,
            &mut c.pidfile,
            &mut c.unix_socket,
            &mut c.cluster_config,
            &mut c.restart_file,
        ];
        let tls = [&mut c.tls_cert_file, &mut c.tls_key_file, &mut c.tls_ca_cert_file];
        for path in paths.into_iter().chain(tls).flatten() {
            *path = std::path::absolute(&*path)
                .map_err(|e| format!("cannot resolve {}: {e}", path.display()))?;
        }
        if item_flag {
            memcached_item_size(&c)?;
            if !output_flag {
                // memcached needs no such setting: make room for a reply of one value.
                let room = c.max_item_size.0 + MIN_OUTPUT_ROOM as u64;
                c.max_output_buffer = c.max_output_buffer.max(Size(room));
            }
        }
        if let Some(mb) = self.memory_mb {
            memcached_memory(&c, mb)?;
        }
        c.validate()?;
        Ok(c)
    }

    /// The settings only memcached's flags (and their long names) set: listening, process
    /// identity, logging, and `-o`.
    fn memcached_flags(&self, c: &mut Config) -> Result<(), String> {
        if !self.listen.is_empty() {
            c.listen = self.listen.join(",");
        }
        if let Some(port) = self.udp_port {
            c.udp_port = port;
        }
        if let Some(level) = &self.log_level {
            c.log_level = Some(level.clone());
        }
        if let Some(f) = self.log_format {
            c.log_format = f;
        }
        if let Some(port) = self.admin_port {
            c.admin_port = Some(port);
        }
        if let Some(a) = &self.admin_address {
            c.admin_address = a.clone();
        }
        if let Some(path) = &self.unix_socket {
            c.unix_socket = Some(path.clone());
        }
        if let Some(mask) = self.unix_mask {
            c.unix_mask = mask;
        }
        if let Some(n) = self.listen_backlog {
            c.listen_backlog = n;
        }
        if let Some(user) = &self.user {
            c.user = Some(user.clone());
        }
        if let Some(path) = &self.pidfile {
            c.pidfile = Some(path.clone());
        }
        if let Some(path) = &self.restart_file {
            c.restart_file = Some(path.clone());
        }
        if let Some(port) = self.tls_port {
            c.tls_port = Some(port);
        }
        c.enable_ssl |= self.enable_ssl;
        for (flag, setting) in [
            (&self.tls_cert_file, &mut c.tls_cert_file),
            (&self.tls_key_file, &mut c.tls_key_file),
            (&self.tls_ca_cert_file, &mut c.tls_ca_cert_file),
        ] {
            if let Some(path) = flag {
                *setting = Some(path.clone());
            }
        }
        if let Some(mode) = self.tls_auth_clients {
            c.tls_auth_clients = Some(mode);
        }
        c.enable_shutdown |= self.enable_shutdown;
        c.daemon |= self.daemon;
        c.verbose = c.verbose.max(self.verbose);
        for list in &self.extended {
            for effect in extended::parse(list)? {
                match effect {
                    Effect::IdleTimeout(secs) => c.idle_timeout = secs,
                    Effect::ReadBufMemLimitMb(0) => c.max_client_memory = Some(Size(u64::MAX)),
                    Effect::ReadBufMemLimitMb(mb) => {
                        let bytes =
                            mb.checked_mul(1 << 20).ok_or("read_buf_mem_limit is too large")?;
                        c.max_client_memory = Some(Size(bytes));
                    }
                    Effect::SslChainCert(path) => c.tls_cert_file = Some(path),
                    Effect::SslKey(path) => c.tls_key_file = Some(path),
                    Effect::SslCaCert(path) => c.tls_ca_cert_file = Some(path),
                    Effect::SslVerifyMode(mode) => c.tls_auth_clients = Some(mode),
                    Effect::Nothing => {}
                }
            }
        }
        Ok(())
    }
}

/// `-m` below what the engine needs, said in `-m`'s terms: (4 × workers + 8) segments, each
/// holding one largest item (memcached's minimum is twice `-I`).
fn memcached_memory(c: &Config, mb: u64) -> Result<(), String> {
    if c.memory_includes_index {
        return Ok(()); // the index comes out of it too: the engine explains
    }
    let workers = c.worker_count();
    let segments = 4 * workers + 8;
    let segment = c.engine_segment_size();
    let min = (segments * segment) as u64;
    if c.memory.0 < min {
        return Err(format!(
            "-m {mb} is below fridge's minimum of {} for items up to {} (-I) and {workers} \
             worker(s): {segments} segments of {} (memcached's minimum is twice -I)",
            min >> 20,
            c.max_item_size,
            Size(segment as u64)
        ));
    }
    Ok(())
}

/// The largest value fridge can store: one item must fit in one segment of at most
/// [`fridge_engine::item::MAX_SEGMENT_SIZE`] (8 MiB) with its key and header.
pub const MAX_ITEM_SIZE: u64 = (fridge_engine::item::MAX_SEGMENT_SIZE - ITEM_OVERHEAD) as u64;

/// memcached's checks of `-I`, with its messages (memcached 1.6.18: at least 1 KiB, at most
/// half of `-m`, at most a gigabyte), and fridge's own ceiling below memcached's gigabyte.
fn memcached_item_size(c: &Config) -> Result<(), String> {
    let item = c.max_item_size.0;
    if item < 1024 {
        return Err("Item max size cannot be less than 1024 bytes.".into());
    }
    if item > c.memory.0 / 2 {
        return Err("Cannot set item size limit higher than 1/2 of memory max.".into());
    }
    if item > 1 << 30 {
        return Err("Cannot set item size limit higher than a gigabyte.".into());
    }
    if item > MAX_ITEM_SIZE {
        return Err(format!(
            "Cannot set item size limit higher than {MAX_ITEM_SIZE} bytes: fridge stores an item \
             in one segment of at most 8 MiB (memcached's limit is a gigabyte)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcached_flags_are_aliases() {
        let cli = Cli::try_parse_from([
            "fridge",
            "-p",
            "0",
            "-l",
            "127.0.0.1",
            "-m",
            "64",
            "-t",
            "1",
            "-c",
            "10",
            "-I",
            "2m",
            "-U",
            "0",
        ])
        .unwrap();
        let c = cli.into_config().unwrap();
        assert_eq!(c.memory, Size(64 << 20));
        assert_eq!((c.port, c.workers, c.max_connections), (0, 1, 10));
        assert_eq!(c.max_item_size, Size(2 << 20));
        assert_eq!(c.engine_segment_size(), 4 << 20);
        let udp = Cli::try_parse_from(["fridge", "-U", "11211"]).unwrap();
        assert_eq!(udp.into_config().unwrap().udp_port, 11211, "memcached's UDP port");
    }

    #[test]
    fn memcached_tls_options_are_aliases() {
        let cli = Cli::try_parse_from([
            "fridge",
            "-Z",
            "-o",
            "ssl_chain_cert=c.pem,ssl_key=/k.pem",
            "-o",
            "ssl_ca_cert=ca.pem,ssl_verify_mode=1",
        ])
        .unwrap();
        let c = cli.into_config().unwrap();
        assert!(c.enable_ssl);
        assert!(c.tls_cert_file.as_ref().is_some_and(|p| p.is_absolute() && p.ends_with("c.pem")));
        assert_eq!(c.tls_key_file, Some("/k.pem".into()));
        assert_eq!(c.tls_auth_clients, Some(TlsAuthClients::Optional));
        let redis = Cli::try_parse_from([
            "fridge",
            "--tls-port",
            "6380",
            "--tls-cert-file",
            "c.pem",
            "--tls-key-file",
            "k.pem",
            "--tls-auth-clients",
            "no",
        ])
        .unwrap();
        let c = redis.into_config().unwrap();
        assert_eq!((c.tls_port, c.tls_client_auth()), (Some(6380), TlsAuthClients::No));
        let bare = Cli::try_parse_from(["fridge", "-Z"]).unwrap();
        assert!(bare.into_config().unwrap_err().contains("needs tls_cert_file"));
    }

    #[test]
    fn write_chunk_is_set_and_checked() {
        let cli = Cli::try_parse_from(["fridge", "--write-chunk", "64KiB"]).unwrap();
        let c = cli.into_config().unwrap();
        assert_eq!(c.write_chunk, Size(64 << 10));
        c.validate().unwrap();
        let from_file: Config = toml::from_str("write_chunk = \"16KiB\"\n").unwrap();
        assert_eq!(from_file.write_chunk, Size(16 << 10));
        let tiny = Config { write_chunk: Size(512), ..Config::default() };
        assert_eq!(tiny.validate().unwrap_err(), "write_chunk must be at least 4KiB");
    }

    #[test]
    fn login_limits_are_set_and_checked() {
        let cli = Cli::try_parse_from([
            "fridge",
            "--auth-failure-rate",
            "0.25",
            "--auth-failure-burst",
            "4",
        ])
        .unwrap();
        let c = cli.into_config().unwrap();
        assert_eq!((c.auth_failure_rate, c.auth_failure_burst), (0.25, 4));
        let whole: Config = toml::from_str("auth_failure_rate = 2\n").unwrap();
        assert_eq!(whole.auth_failure_rate, 2.0, "a whole number is a rate too");
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let bad = Config { auth_failure_rate: rate, ..Config::default() };
            assert!(bad.validate().unwrap_err().starts_with("auth_failure_rate must be"), "{rate}");
        }
        let bad = Config { auth_failure_burst: 0, ..Config::default() };
        assert_eq!(bad.validate().unwrap_err(), "auth_failure_burst must be at least 1");
        let old = toml::from_str::<Config>("auth_failure_delay = \"100ms\"\n");
        assert!(old.is_err(), "the pause after a failed login is gone");
    }

    #[test]
    fn memory_includes_index_from_flag_and_file() {
        assert!(!Config::default().memory_includes_index);
        let cli = Cli::try_parse_from(["fridge", "-m", "64", "--memory-includes-index"]).unwrap();
        let c = cli.into_config().unwrap();
        assert!(c.memory_includes_index && c.engine().memory_includes_index);
        let cli = Cli::try_parse_from(["fridge", "--memory-includes-index", "false"]).unwrap();
        assert!(!cli.into_config().unwrap().memory_includes_index);
        let file: Config = toml::from_str("memory_includes_index = true\n").unwrap();
        assert!(file.memory_includes_index);
        file.validate().unwrap();
    }
}
