//! fridge-sim: the trace-driven simulator.
//!
//! The simulator replays request traces through the real fridge engine on a virtual clock and,
//! next to it, through simple **reference cache policies**, so that the engine's hit ratio can be
//! compared with well-known algorithms and with the offline optimum on the same trace.
//!
//! What lives here so far:
//!
//! - [`policy`]: the reference policies (exact LRU, FIFO, CLOCK, S3-FIFO, SIEVE, Redis's sampled
//!   LRU, a memcached slab + LRU model with and without slab automove, static per-tenant
//!   partitioning, Belady's offline MIN) behind one small [`policy::Policy`] trait, plus a
//!   [`policy::MissRatio`] accumulator and a [`policy::run`] helper.
//!
//! Goals: each reference policy is small, independent of the engine, deterministic (seeded),
//! and follows libCacheSim's request semantics so its numbers can be cross-checked there.
//! Non-goals: modelling the metadata overhead of real systems (policies count object bytes only,
//! except the memcached model, whose slab layout is the point), TTLs, deletes, concurrency.

pub mod policy;
