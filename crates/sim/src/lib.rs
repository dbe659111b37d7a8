//! fridge-sim: the trace-driven simulator.
//!
//! The simulator replays request traces through the real fridge engine on a virtual clock and,
//! next to it, through simple **reference cache policies**, so that the engine's hit ratio can be
//! compared with well-known algorithms and with the offline optimum on the same trace.
//!
//! ```text
//!  Source (trace file, stdin or seeded generator) ──► profile pass ──► jobs: one per
//!                                                      (cache size, policy), on --jobs threads
//!                      ┌──────────────────────┬──────────────┴───────────────┐
//!                      ▼                      ▼                              ▼
//!              FridgeCache (real engine,  reference policies          … each streams the
//!              inline cleaner, manual     (LRU, S3-FIFO, Belady, …)     source in chunks,
//!              clock)                          │                        timed per chunk
//!                      └──► per-tenant MissRatio (+ over time) ──► Report ──► CSV, JSON, PNG
//! ```
//!
//! Modules:
//!
//! - [`source`]: trace files (libCacheSim's oracleGeneral, CSV and txt, key-only traces with a
//!   size model; gzip, Zstandard or xz by extension; standard input, spooled once) and the
//!   generator presets, reopenable so each pass streams from the start.
//! - [`fridge`]: the engine as a simulated lookaside cache, with what an item costs in it,
//!   each rank function and a hitmap budget.
//! - [`sweep`]: the driver — profile, parallel (size, policy) jobs, request semantics, cache
//!   sizes in bytes or objects, size change on hit, miss ratio over time, timings.
//! - [`results`]: what a run produces (profile, rows, engine statistics, timings), shared by
//!   the driver and the writers so that neither imports the other.
//! - [`report`] and [`plot`]: CSV/JSON/text reports, PNG miss-ratio curves and miss ratio
//!   over time.
//! - [`memory`]: a model of the memory hierarchy under the engine (L2, L3, a DRAM cache with
//!   or without the stacked-DRAM thesis's priority lines, latencies), fed the lines each GET
//!   reads; the `fridge-memsim` binary runs it (`docs/memory-model.md`).
//! - [`progress`]: a progress bar on stderr.
//! - [`policy`]: the reference policies (exact LRU, FIFO, CLOCK, S3-FIFO, SIEVE, Redis's sampled
//!   LRU, a memcached slab + LRU model with and without slab automove, static per-tenant
//!   partitioning, Belady's offline MIN) behind one small [`policy::Policy`] trait, plus a
//!   [`policy::MissRatio`] accumulator and a [`policy::run`] helper.
//!
//! Goals: each reference policy is small, independent of the engine, deterministic (seeded),
//! and follows libCacheSim's request semantics so its numbers can be cross-checked there.
//! Non-goals for the reference policies: modelling the metadata overhead of real systems
//! (they count object bytes only, except the memcached model, whose slab layout is the
//! point), TTLs, deletes, concurrency. The engine runs as it does in the server, with one
//! worker and the cleaner inline, so it pays for its own metadata inside `max_memory`.
//!
//! "Cache size" therefore means different things per row, and every report says which: for
//! the engine, `max_memory` (items with their record headers; the index is outside and
//! reported as overhead bytes); for reference policies, bytes of objects, or objects with
//! `--capacity-unit objects` (the engine then gets a byte size derived from the objects, and
//! its row says exactly how).

#![forbid(unsafe_code)]

pub mod error;
pub mod fridge;
pub mod memory;
pub mod plot;
pub mod policy;
pub mod progress;
pub mod report;
pub mod results;
pub mod source;
pub mod sweep;

pub use error::Error;
