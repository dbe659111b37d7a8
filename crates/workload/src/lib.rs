//! # fridge-workload
//!
//! Synthetic workloads and real traces for fridge's simulator (`fridge-sim`) and load
//! generator (`fridge-bench`): both consume the same stream of [`Request`]s, so a run in the
//! simulator and a run against a live server can be fed identical requests.
//!
//! ```text
//!   Popularity ─┐                        ┌─ Workload::requests() ──► Requests ─┐
//!   SizeDist  ──┤                        │                                     │
//!   OpMix     ──┼─► Workload ────────────┤                                     ├─► Iterator<Item = Request>
//!   TtlDist   ──┤   (one tenant)         └─ TenantMix::requests() ─► MixRequests┘
//!   Arrivals  ──┘   TenantMix, twitter_mix (many tenants)
//!
//!   oracleGeneral / CSV / key-only xz files ─► readers ─► Iterator<Item = Result<Request>>
//!   &[Request] ─► writers ─► oracleGeneral (next access computed) / CSV
//! ```
//!
//! ## Goals
//! - **Reproducible**: every random choice comes from a seeded [`Rng`]; the same description
//!   and seed give the same requests, bit for bit, on every platform.
//! - **Exact and scalable distributions**: Zipf by rejection-inversion in `O(1)` per sample
//!   with no tables, for key spaces up to 2^53 ([`Zipf`]); YCSB's uniform, hotspot and latest
//!   shapes; GEV, generalized Pareto, empirical and mixed sizes, with the Facebook ETC fit and
//!   the stacked-DRAM thesis mix as presets ([`SizeDist`]).
//! - **Realistic tenants**: per-key sizes, TTL and operation mixes, and multi-tenant mixes,
//!   including a preset built from Twitter's published cluster statistics ([`twitter_mix`])
//!   and Catalyst's *Mix* of hot reads and one-time writes ([`Workload::catalyst_mix`]).
//! - **Streaming traces**: readers hold one record in memory and turn malformed input into
//!   [`Error`]s, never panics.
//!
//! ## Non-goals
//! - Generating key or value *bytes* beyond [`render_key`]: callers fill values themselves.
//! - Closed-loop behaviour (think times, retries on miss): that is the load generator's job.
//! - Modelling what the tables do not give: one-hit-wonder ratios, diurnal cycles, size
//!   drift, correlation between size and popularity (sizes are independent of rank).
//! - Quoted CSV fields, zstd-compressed traces, and libCacheSim formats other than
//!   oracleGeneral.
//!
//! ## Costs
//! A generated request costs a few random draws (Zipf: about one uniform plus two `exp`/`ln`
//! on average; per-key sizes: one generator seeding and one draw). A [`Request`] is 56 bytes.
//! Memory is constant in the number of requests; [`write_oracle_general`] and
//! [`annotate_next_access`] are the exceptions, with one map entry per distinct key.

#![forbid(unsafe_code)]

mod arrivals;
mod discrete;
mod error;
mod mix;
mod ops;
mod popularity;
mod request;
mod rng;
mod size;
pub mod trace;
mod twitter;
mod workload;

pub use arrivals::{Arrivals, Clock};
pub use discrete::Discrete;
pub use error::Error;
pub use mix::{MixRequests, Tenant, TenantMix};
pub use ops::{OpMix, TtlDist};
pub use popularity::{KeySampler, Permutation, Popularity, Zipf};
pub use request::{KEY_ID_DIGITS, Op, Request, render_key};
pub use rng::{Rng, mix64};
pub use size::{Continuous, ETC_MAX_VALUE_SIZE, MAX_KEY_SIZE, SizeDist};
pub use trace::{annotate_next_access, write_oracle_general};
pub use twitter::{CLUSTERS, Cluster, twitter_mix};
pub use workload::{Requests, Workload};
