//! fridge-engine: the storage engine of the fridge cache server.
//!
//! It holds items in a log-structured arena of fixed segments (Memshare), finds them through
//! an index of 64-byte tagged buckets (Cavast), keeps keys apart from values inside segments
//! (Cavast), and makes room with a cleaner that relocates the best items of a few segments and
//! evicts the rest (Memshare). Every operation names a tenant, and works in the database
//! (Redis `SELECT`) its handle selected.
//!
//! ```text
//!  Worker (one per thread) ── get ──► index (64-B buckets) ──► key record ──► value
//!     │ set: append to own head segment, then lock bucket, publish slot
//!     ▼
//!  segments: free ─► head ─► sealed ─► cleaner (n → n−1) ─► retired ─(epoch)─► free
//! ```
//!
//! Goals: lock-free reads; writes that lock one bucket only to publish; no allocation per
//! request; little metadata per small item (a 21-byte key-record header, 8 bytes of it the
//! item's CAS and 4 the meta protocol's state, and 4 more for an expiry, plus its share of the
//! index: nominally one 8-byte slot, measured 19.1 bytes at the index's real load, 40.1 bytes
//! in all, 44.1 with an expiry); deterministic behaviour when the cleaner runs inline on a
//! virtual clock.
//!
//! Non-goals: sockets, protocols, persistence. The engine never reads the system clock: it is
//! given a [`Clock`].
//!
//! Memory: item memory is exactly the arena, `max_memory` bytes (rounded down to whole
//! segments), mapped once and touched lazily. Outside it: the index tables (64 bytes per root
//! bucket plus a pool a quarter that size; they grow by doubling), one 64-byte header per
//! segment, the eviction metadata (the hitmap, or the queues' frequency sketch and ghosts),
//! and a few fixed structures; [`EngineStats::overhead_bytes`] reports
//! them. With [`EngineConfig::memory_includes_index`] the arena lends segments to all of that
//! instead, so the whole stays within `max_memory` (`budget.rs`).
//!
//! `unsafe` lives in `arena.rs` (the mapping), [`item`] (reading and writing records),
//! `index.rs` (zeroed tables, table pointers under epochs), `cache.rs` (viewing a published
//! record under an epoch guard, writing an item into a segment its writer owns),
//! `cleaner.rs` (walking the records of a segment it owns or of a sealed one), `worker.rs` (an
//! edit in place of a collection, under its root and edit locks: `edit.rs`), `pin.rs` (a
//! pinned value's bytes, past the read's guard), `clock.rs` (reading the kernel's coarse
//! clock) and [`bytes`] (SSE2 byte compares); `worker/read.rs` and the other modules have
//! none. Each block names its invariant.
//!
//! Visibility: the public surface is the re-exports below plus [`item`]'s layout constants,
//! [`hash`], [`hitmap`], [`sketch`] and [`hotkeys`] (the benchmarks drive them directly),
//! and [`bytes`] (byte searches for the packed collections above the engine); every
//! other module is
//! internal to the engine.
//!
//! Errors: operations return the small `Copy` enum [`EngineError`]; construction returns a
//! [`ConfigError`] with a message.

mod arbiter;
mod arena;
mod budget;
pub mod bytes;
mod cache;
mod cleaner;
mod clock;
mod config;
mod edit;
mod engine;
mod epoch;
mod error;
mod events;
mod expiry;
mod ghost;
pub mod hash;
pub mod hitmap;
pub mod hotkeys;
mod index;
pub mod item;
mod metadata;
mod observe;
mod ops;
mod pin;
mod rank;
mod segment;
pub mod sketch;
mod stats;
mod tenant;
mod worker;

pub use arbiter::{CreditPolicy, CreditWeight};
pub use budget::LimitError;
pub use clock::{Clock, CoarseClock, ManualClock, SystemClock};
pub use config::{
    CleanerMode, EngineConfig, Eviction, MIN_SEGMENT_SIZE, MetadataDevice, Queues, SEGMENT_GRID,
};
pub use engine::Engine;
pub use error::{ConfigError, EngineError};
pub use events::{KeyEvent, KeyEventKind};
pub use hotkeys::{HotKey, HotKeys, TopK};
pub use index::SLB_MAX_BYTES;
pub use item::Kind;
pub use metadata::{
    CpuHitmap, HotKeysOnly, MetadataBackend, MetadataStats, NoHitmap, NoMetadata, Pooled,
    Structure, Temperature,
};
#[cfg(feature = "gpu")]
pub use metadata::{GpuHitmap, GpuMemory};
pub use observe::{Evicted, EvictionObserver};
pub use ops::{Condition, Current, Expiry, Item, Splice, Store, StoreOutcome, Update};
pub use pin::ValuePin;
pub use rank::{Rank, RankInput, RankKind, Recency};
pub use stats::{EngineStats, QueueUsage, SegmentUsage};
pub use tenant::{DbStats, IdleTax, TenantId, TenantPolicy, TenantStats};
pub use worker::inspect::{INDEX_SLOT_BYTES, ItemInfo};
pub use worker::lines::{LookupLines, Span};
pub use worker::walk::ItemMeta;
pub use worker::{BATCH, Worker};
