//! fridge-server: the fridge cache server — listeners, event loops, sessions, and the dispatch
//! of memcached (text + meta + binary) and Redis (RESP2/RESP3) requests to the engine.
//!
//! The binary `fridge` is a thin `main` over [`Server`]; tests start a server in-process on an
//! ephemeral port the same way (`port = 0`, then [`Server::local_addr`]).
//!
//! # Thread model
//!
//! ```text
//!   signal thread                 acceptor thread ("fridge-accept")
//!   SIGTERM/SIGINT ──shutdown──►  mio poll: listeners + waker
//!   SIGHUP ──reload tenants, certificates (and the cluster map)
//!                                   │ accept, count, round-robin
//!                                   ▼ mpsc channel + Waker, one per worker
//!   ┌───────────────────────┬───────────────────────┬─────
//!   ▼                       ▼                       ▼
//!  worker 0 ("fridge-w0")  worker 1                 …     one mio poll each, edge-triggered;
//!   connections (slab)      connections              owns its connections and one engine
//!   engine::Worker          engine::Worker           `Worker` handle for its whole life
//!   └──────────── engine (shared: index, segments) ─────────┘
//!                  cleaner thread ("fridge-cleaner"), metadata thread ("fridge-metadata"),
//!                  with `-U`, one "fridge-udp" thread per UDP socket (`udp.rs`)
//! ```
//!
//! - A connection lives on one worker from accept to close; nothing about it is shared except
//!   a registry entry (address, name, kill flag) that `CLIENT LIST`/`KILL` read, touched only
//!   on connect, `CLIENT SETNAME` and close.
//! - Each worker turn: poll, queue connections with events, then give each queued connection
//!   one bounded step — read at most [`READ_BUDGET`] bytes, run complete requests while fewer
//!   than [`OUTPUT_SOFT_LIMIT`] reply bytes wait, write at most 64 KiB. A connection with more
//!   to do goes to the back of the queue; one whose long reply goes on goes to a second queue,
//!   served a chunk of [`Config::write_chunk`] bytes (1 MiB) a turn after the first, so small
//!   requests go before the rest of large replies (`worker.rs`).
//! - Buffers are per connection and reused: requests are parsed in place (the proto crate
//!   borrows from the read buffer) and replies are encoded into the write buffer, values
//!   copied straight from engine memory. Steady state allocates nothing per request; buffers
//!   that grew for a large value shrink back on the housekeeping tick once empty.
//! - Statistics are per-worker counters with a single writer; `stats`/`INFO` sum them.
//! - The engine knows no protocol: what the protocols need beyond get/store/delete (memcached's
//!   and Redis's counters) is declared here and built on the engine's generic
//!   read-modify-write (`counter.rs`).
//! - Pub/sub, keyspace notifications and client-side caching cross workers through one
//!   mailbox per worker (`pubsub.rs`): a publisher appends and wakes the subscriber's worker,
//!   never waits for it; `notify.rs` publishes keyspace events (and the keys the engine
//!   expires or evicts, from its key-event queue), `tracking.rs` keeps the tracking table and
//!   sends invalidations the same way.
//! - Redis transactions (`transaction.rs`, `resp/multi.rs`): each worker holds its own gate
//!   (an uncontended mutex) while it runs one command; `EXEC` takes every gate in one order,
//!   so no client sees a partial transaction (`docs/threads.md`).
//! - Redis Cluster clients (`cluster.rs`, `resp/cluster.rs`): with `--cluster-config`, a RESP
//!   command's keys are routed by a static slot map (`MOVED`, `CROSSSLOT`); without it one
//!   predictable branch. A reload swaps the map and drops the keys of slots no longer served.
//! - Shutdown: the acceptor drops its listeners, workers stop reading, finish the requests
//!   already buffered, flush replies (for at most [`DRAIN_TIMEOUT`]), close, and exit; with
//!   `--restart-file` the acceptor then writes every item to the file, and the next start
//!   loads it before its workers run (a warm restart, `restart.rs`).
//!
//! Goals: drop-in compatibility (memcached's and Redis's exact replies), bounded memory per
//! connection whatever a client sends, no panics on client input. Non-goals here: persistence
//! beyond the warm restart's snapshot, replication, Redis data types other than strings and hashes (`types`).
//!
//! # Tenants
//!
//! Every request runs as one tenant (see [`tenants`] and `docs/tenants.md`): the one the
//! connection logged in as (`AUTH`, `HELLO … AUTH`, memcached's `set` carrying `user pass`,
//! the binary protocol's SASL `PLAIN`),
//! or, for clients that have not logged in where that is allowed, `default` or the tenant
//! whose key prefix matches. Workers read an immutable snapshot of the tenants; a reload
//! (SIGHUP, `CONFIG RELOAD`) publishes a new one and bumps a generation counter that each
//! worker checks once per turn, and fails closed: a file that does not parse, or that would
//! let clients in without a password where the running configuration makes them log in,
//! changes nothing. Every login is answered at once; failed logins are limited by token
//! buckets per client address and per user name, past which a login is refused unchecked
//! (see the `auth` module).

#![forbid(unsafe_code)]
mod admin;
mod auth;
mod binary;
mod blocking;
mod cli;
mod clientinfo;
mod cluster;
mod cmdstats;
mod config;
mod counter;
mod databases;
mod extended;
mod field_expiry;
mod hotkeys;
mod keyspace;
mod latency;
mod latencystats;
mod limits;
mod listen;
pub mod logging;
mod mc_admin;
mod memcache;
mod memcache_common;
mod memlimit;
mod meta;
mod notify;
mod output;
mod password;
mod pause;
mod ping;
pub mod process;
mod pubsub;
mod resp;
mod restart;
mod script;
mod server;
mod session;
mod shared;
mod size_class;
mod slowlog;
mod stats;
pub mod systemd;
pub mod tenants;
pub mod tls;
mod tracking;
mod transaction;
mod types;
mod udp;
mod watch;
mod watch_events;
mod worker;
mod worker_stats;

pub use cli::{Cli, MAX_ITEM_SIZE, Tool};
pub use config::TenantConfig;
pub use config::{Config, EvictionChoice, MetadataChoice, Millis, Protocol, Size};
pub use listen::Listeners;
pub use password::PasswordHash;
pub use ping::{PingTarget, ping};
pub use server::{ReloadHandle, Server, ShutdownHandle, SummaryHandle};
pub use shared::{DRAIN_TIMEOUT, MEMCACHED_VERSION, OUTPUT_SOFT_LIMIT, READ_BUDGET, REDIS_VERSION};
pub use worker_stats::WorkerStats;
