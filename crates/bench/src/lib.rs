//! # fridge-bench
//!
//! A load generator for cache servers that speak the memcached text or meta protocol or
//! RESP: fridge, memcached, Redis. It measures throughput and latency (HDR histograms, per
//! operation and per value-size class), can check every value it reads back (`--verify`), and
//! puts several servers side by side (`fridge-bench report`, driven by `bench/compare`).
//!
//! ```text
//!  cli ──► RunConfig ──► run: fill ─► run ─► scan           (phases, one after the other)
//!                          │  per thread: WorkerPlan
//!                          ▼
//!  source (fridge-workload: keys, sizes, ops, TTLs, traces) ──► worker (mio, closed/open loop)
//!                                  protocol (fridge-proto encoders/parsers) ◄──┘   │
//!                                  value (self-checking values) ◄──────────────────┤
//!                                  histogram (HDR) ◄───────────────────────────────┘
//!                          ▼
//!                        report (text, JSON, CSV) ──► compare (Markdown tables, PNG chart)
//! ```
//!
//! ## Goals
//! - **One codec**: requests are encoded and replies parsed by `fridge-proto`, the crate the
//!   server uses, so the load generator cannot disagree with the server about the protocol.
//! - **Honest latency**: in open loop (`--rate`) latency counts from each request's *intended*
//!   send time, so a stalled server shows up as latency rather than as fewer requests
//!   ([`schedule`]). Closed loop (`--depth`) measures from the moment a request is queued.
//! - **A load test too**: with `--verify` every value carries its key id, length and a
//!   checksum ([`value`]) and every GET hit is checked, so a wrong value fails the run.
//! - **Cheap per request**: one thread per core with its own connections, buffers and
//!   histograms; no locks or allocation per request; replies are parsed in place.
//!
//! ## Non-goals
//! - Client-side sharding, cluster protocols, TLS.
//! - Commands beyond GET/SET/DELETE: other workload operations are sent as SETs
//!   ([`source::command_of`]).
//! - Latency below the loop's own resolution: open loop spins when the next send is less than
//!   2 ms away and reports how late it was (`send_lag`); a lag near the latency means the
//!   client, not the server, was the bottleneck.

#![forbid(unsafe_code)]

pub mod cli;
pub mod compare;
pub mod histogram;
pub mod protocol;
pub mod report;
pub mod run;
pub mod schedule;
pub mod source;
pub mod spec;
pub mod value;
pub mod worker;
