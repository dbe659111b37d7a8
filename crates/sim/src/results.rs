//! What a run produces: the input's [`Profile`], one [`Row`] per policy, size and tenant, the
//! engine's statistics on its rows, the [`Timing`]s, all gathered in a [`Report`].
//!
//! The driver ([`crate::sweep`]) fills these in; the writers ([`crate::report`] and
//! [`crate::plot`]) read them. Neither side imports the other.

use serde::Serialize;

/// How operations other than GET are treated (see [`crate::sweep`]'s docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpsMode {
    /// Every request is a lookaside GET.
    #[default]
    Lookaside,
    /// GETs are counted; SETs store; DELETEs delete.
    Trace,
}

/// One tenant's share of the input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TenantProfile {
    /// Requests.
    pub requests: u64,
    /// Distinct keys.
    pub objects: u64,
    /// Bytes of the distinct objects (each at its last requested size).
    pub working_set_bytes: u64,
}

/// What the profiling pass learned about the input.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Profile {
    /// Requests.
    pub requests: u64,
    /// Sum of object sizes over all requests.
    pub bytes_requested: u64,
    /// Distinct (tenant, key) pairs.
    pub objects: u64,
    /// Bytes of the distinct objects.
    pub working_set_bytes: u64,
    /// The largest object (key + value bytes).
    pub max_object_size: u64,
    /// Per tenant, by id (one entry per id up to the largest seen).
    pub tenants: Vec<TenantProfile>,
    /// Next-access position per request, when computed.
    #[serde(skip)]
    pub(crate) next_access: Option<Vec<i64>>,
}

/// Engine statistics at the end of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EngineRow {
    /// Rank function of every tenant (`hitmap`, `lru`, `lfu`, `slru`).
    pub rank: String,
    /// Segment size used.
    pub segment_size: usize,
    /// Bytes outside the arena (index tables, segment headers).
    pub overhead_bytes: usize,
    /// Of which index tables.
    pub index_bytes: usize,
    /// Live items at the end.
    pub items: u64,
    /// Bytes of live items (records + values) at the end.
    pub item_bytes: u64,
    /// Items evicted.
    pub evictions: u64,
    /// Items expired.
    pub expired: u64,
    /// Cleaner passes.
    pub cleaner_passes: u64,
    /// Items relocated by the cleaner.
    pub relocated_items: u64,
    /// Segments evicted whole because no cleaning pass was possible.
    pub fifo_evictions: u64,
    /// Objects refused as larger than a segment.
    pub refused: u64,
    /// Stores that failed otherwise (should be 0).
    pub store_errors: u64,
    /// Eviction metadata (the hitmap).
    pub metadata: MetadataRow,
    /// Where the arena's segments were at the end.
    pub capacity: CapacityRow,
}

/// Where the engine's arena was at the end of a run (`fridge_engine::SegmentUsage`): the
/// segments that held items and the room lost to free segments, open heads' and sealed
/// segments' unused ends and dead versions.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CapacityRow {
    /// Segments of the arena.
    pub segments: usize,
    /// Free segments (the cleaner's watermark and reserve).
    pub free_segments: usize,
    /// Open head segments (writers' and the cleaner's).
    pub open_segments: usize,
    /// Bytes the open heads have not filled yet.
    pub open_unused_bytes: usize,
    /// Sealed segments of the small queue (0 with Memshare's pass).
    pub small_segments: usize,
    /// Bytes written into them.
    pub small_used_bytes: usize,
    /// Sealed segments of the main queue (every sealed segment with Memshare's pass).
    pub main_segments: usize,
    /// Bytes written into them.
    pub main_used_bytes: usize,
    /// Bytes at the ends of sealed segments that the next item did not fit in.
    pub sealed_unused_bytes: usize,
    /// Bytes of dead versions (overwritten, deleted) in sealed and open segments.
    pub dead_bytes: usize,
}

/// The engine's eviction metadata at the end of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MetadataRow {
    /// Configured hitmap bits per item (0: no metadata).
    pub bits_per_item: usize,
    /// Items the hitmap was sized for.
    pub sized_for_items: usize,
    /// Access digests the workers produced.
    pub digests: u64,
    /// Digests applied to the hitmap.
    pub applied: u64,
    /// Rolling compactions.
    pub compactions: u64,
    /// Reference pools dropped because the metadata worker was behind (0 inline).
    pub pools_dropped: u64,
    /// Bytes of the hitmap (all levels and the set counter).
    pub hitmap_bytes: usize,
    /// Hitmap bits per item resident at the end of the run.
    pub bits_per_resident_item: f64,
    /// Survivors of the last cleaning pass per temperature zone (zone 0, the zombies, first).
    pub zones: Vec<u64>,
}

/// One line of a report: one policy at one size, for all tenants or one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Command-line name of the policy.
    pub policy: String,
    /// The policy's own name with its parameters.
    pub detail: String,
    /// Cache size in bytes.
    pub cache_bytes: u64,
    /// `cache_bytes` over the working set's bytes.
    pub cache_fraction: f64,
    /// The cache size in objects, when sizes are counted in objects (`--capacity-unit
    /// objects`); the same on every row of a size. `cache_bytes` is then what the cache was
    /// given in bytes (see `size_meaning`).
    pub cache_objects: Option<u64>,
    /// What `cache_bytes` counts for this policy.
    pub size_meaning: String,
    /// `all`, or a tenant id.
    pub tenant: String,
    /// Counted requests.
    pub requests: u64,
    /// Of which hits.
    pub hits: u64,
    /// Misses per request.
    pub miss_ratio: f64,
    /// Bytes requested.
    pub bytes_requested: u64,
    /// Bytes hit.
    pub bytes_hit: u64,
    /// Bytes missed per byte requested.
    pub byte_miss_ratio: f64,
    /// Engine statistics (fridge rows only, on the `all` row).
    pub engine: Option<EngineRow>,
}

/// Time spent in one cache at one size.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Command-line name of the policy.
    pub policy: String,
    /// Cache size in bytes.
    pub cache_bytes: u64,
    /// Requests served.
    pub requests: u64,
    /// Seconds spent serving them (reading the input excluded).
    pub seconds: f64,
}

impl Timing {
    /// Requests per second.
    pub fn requests_per_s(&self) -> f64 {
        if self.seconds > 0.0 { self.requests as f64 / self.seconds } else { 0.0 }
    }
}

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct Report {
    /// Short name of the source.
    pub source: String,
    /// What the source is, including any size model.
    pub description: String,
    /// Operation semantics used.
    pub ops: OpsMode,
    /// The input's profile.
    pub profile: Profile,
    /// Tenant names where the input has them.
    pub tenant_names: Vec<String>,
    /// Command-line names of the policies, in the order given.
    pub policies: Vec<String>,
    /// Result rows: by size, then policy, then `all` before each tenant.
    pub rows: Vec<Row>,
    /// Per policy and size; not deterministic, so kept apart from `rows`.
    pub timings: Vec<Timing>,
    /// Miss ratio over time (`--report-interval`), in (size, policy) order; empty when off.
    pub timeline: Vec<TimePoint>,
    /// The unit cache sizes were given in.
    pub capacity_unit: CapacityUnit,
    /// Policies skipped and why, and other remarks.
    pub notes: Vec<String>,
}

/// Human-readable bytes (binary units).
pub fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{b} B") } else { format!("{v:.1} {}", UNITS[unit]) }
}

/// The miss ratio of one cache over one interval of requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimePoint {
    /// Policy id.
    pub policy: String,
    /// Cache size, in the run's [`CapacityUnit`].
    pub cache_size: u64,
    /// Counted requests served so far, this interval included.
    pub requests: u64,
    /// Counted requests in this interval (the interval length, less at the end).
    pub interval_requests: u64,
    /// Misses per request in this interval.
    pub interval_miss_ratio: f64,
    /// Misses per request from the start to the end of this interval.
    pub cumulative_miss_ratio: f64,
}

/// What a cache size counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CapacityUnit {
    /// Bytes (the default).
    #[default]
    Bytes,
    /// Objects: reference policies hold this many objects whatever their sizes; byte-based
    /// caches (the engine, the memcached model) get a byte capacity derived from it.
    Objects,
}

impl CapacityUnit {
    /// `bytes` or `objects`.
    pub const fn name(self) -> &'static str {
        match self {
            CapacityUnit::Bytes => "bytes",
            CapacityUnit::Objects => "objects",
        }
    }
}
