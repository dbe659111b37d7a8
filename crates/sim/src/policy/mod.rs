//! Reference cache policies: simple, independent implementations of well-known eviction
//! algorithms that the simulator runs next to the real engine on the same trace.
//!
//! # Request semantics (libCacheSim's)
//!
//! Every policy implements [`Policy::access`] as libCacheSim's `cache_get_base` does:
//!
//! ```text
//! access(a):
//!   if a.key is resident:  update the policy's metadata; return HIT
//!   if a.size > capacity:  return MISS (never admitted)
//!   while used + a.size > capacity: evict one object (policy's choice)
//!   insert a; return MISS
//! ```
//!
//! - **Cache size means bytes of objects.** `capacity`, `used` and every size are the object
//!   sizes given by the trace; no per-object metadata is charged (libCacheSim's default,
//!   `consider_obj_metadata = false`). The one exception is the [`Memcached`] model, whose
//!   capacity is its memory limit and which charges slab chunks, because that is what it models.
//! - **A hit whose size differs from the stored one** counts as a hit and the object takes the
//!   new size (older libCacheSim's `cache_check` did this; the current one keeps the old size).
//!   If the cache is now over capacity, the policy evicts in its normal order until it fits
//!   again, which can evict the object just hit when it alone no longer fits. So
//!   `used() <= capacity()` always holds after `access` returns. The simulator's
//!   `--size-change keep` gets current libCacheSim's behaviour from any policy without
//!   changing it: the driver asks [`Policy::resident_size`] and hands a hit the stored size.
//! - Policies may refuse admission where their model says so (S3-FIFO: objects larger than
//!   its small queue; memcached: no chunk for the slab class). That counts as a miss.
//!
//! # The policies
//!
//! | type | algorithm | per access |
//! |---|---|---|
//! | [`Lru`] | exact LRU | O(1) |
//! | [`Fifo`] | FIFO, hits do not reorder | O(1) |
//! | [`Clock`] | CLOCK / FIFO-reinsertion with an n-bit counter (1 bit by default) | O(1) amortised |
//! | [`S3Fifo`] | S3-FIFO: small FIFO, main FIFO, ghost FIFO | O(1) amortised |
//! | [`Sieve`] | SIEVE | O(1) amortised |
//! | [`RedisLru`] | Redis `allkeys-lru`: sample N keys into a 16-entry eviction pool | O(N) per eviction |
//! | [`Memcached`] | memcached 1.4-style slab classes with per-class LRU, optional automove | O(1) + O(classes) per automove window |
//! | [`Partitioned`] | static per-tenant partitions, one inner policy each | inner's |
//! | [`Belady`] | Belady's MIN (offline): evict the object reused furthest in the future | O(log n) |
//!
//! [`Lru`], [`Fifo`], [`Clock`] and [`Sieve`] are one [`QueuePolicy`] each: one queue and a key
//! map that serve requests the same way, with a rule that says what a hit does and which object
//! an eviction takes (`queue.rs`).

mod belady;
mod clock;
mod fifo;
mod hash;
mod list;
mod lru;
mod memcached;
mod partition;
mod queue;
mod redis;
mod s3fifo;
mod sieve;

#[cfg(test)]
mod testutil;

pub use belady::Belady;
pub use clock::{Clock, ClockRule};
pub use fifo::{Fifo, FifoRule};
pub use lru::{Lru, LruRule};
pub use memcached::{Automove, Memcached, SlabConfig};
pub use partition::Partitioned;
pub use queue::QueuePolicy;
pub use redis::RedisLru;
pub use s3fifo::S3Fifo;
pub use sieve::{Sieve, SieveRule};

/// One request of a trace, as the reference policies see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Access {
    /// The object's id.
    pub key: u64,
    /// The object's size in bytes.
    pub size: u32,
    /// The index (virtual time, counted in requests) of the next request for the same key, or
    /// [`NEVER`] (any negative value) if there is none. Only [`Belady`] reads it.
    pub next_access_vtime: i64,
    /// The tenant that issued the request. Only [`Partitioned`] reads it.
    pub tenant: u16,
}

/// `next_access_vtime` of a request whose key is never requested again.
pub const NEVER: i64 = -1;

impl Access {
    /// A request of tenant 0 with no future knowledge (`next_access_vtime = NEVER`).
    pub const fn new(key: u64, size: u32) -> Self {
        Self { key, size, next_access_vtime: NEVER, tenant: 0 }
    }
}

/// A cache policy driven one request at a time.
pub trait Policy {
    /// A short name for reports, including the parameters that matter (e.g. `Redis-LRU-5`).
    fn name(&self) -> String;

    /// Serves one request. Returns `true` on a hit. On a miss the object is admitted if the
    /// policy can ever hold it, after evicting as needed ("get, and on miss set").
    fn access(&mut self, a: &Access) -> bool;

    /// Removes `a.key` (of `a.tenant`, in [`Partitioned`]) if it is resident, as a DELETE
    /// does: its bytes are free and a later request misses. Returns whether it was resident.
    /// Changes no other object's place, and remembers nothing of it (a ghost keeps only
    /// evicted keys).
    fn remove(&mut self, a: &Access) -> bool;

    /// The capacity in bytes of objects (for [`Memcached`]: its memory limit).
    fn capacity(&self) -> u64;

    /// Bytes of objects resident. Always `<= capacity()` between calls.
    fn used(&self) -> u64;

    /// Objects resident.
    fn len(&self) -> usize;

    /// Whether no object is resident.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `key` is resident (for any tenant, in [`Partitioned`]). Does not count as an
    /// access and changes nothing.
    fn contains(&self, key: u64) -> bool;

    /// The size `key` is stored with, if it is resident (for any tenant, in
    /// [`Partitioned`]). Does not count as an access and changes nothing.
    fn resident_size(&self, key: u64) -> Option<u32>;

    /// Checks internal invariants (list links, byte and object counts); panics if broken.
    #[cfg(test)]
    fn validate(&self);
}

impl<P: Policy + ?Sized> Policy for Box<P> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn access(&mut self, a: &Access) -> bool {
        (**self).access(a)
    }
    fn remove(&mut self, a: &Access) -> bool {
        (**self).remove(a)
    }
    fn capacity(&self) -> u64 {
        (**self).capacity()
    }
    fn used(&self) -> u64 {
        (**self).used()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
    fn contains(&self, key: u64) -> bool {
        (**self).contains(key)
    }
    fn resident_size(&self, key: u64) -> Option<u32> {
        (**self).resident_size(key)
    }
    #[cfg(test)]
    fn validate(&self) {
        (**self).validate();
    }
}

/// Counts requests and hits, in objects and in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MissRatio {
    /// Requests seen.
    pub requests: u64,
    /// Requests that hit.
    pub hits: u64,
    /// Bytes of the objects requested.
    pub bytes_requested: u64,
    /// Bytes of the objects that hit.
    pub bytes_hit: u64,
}

impl MissRatio {
    /// Counts one request.
    pub fn record(&mut self, a: &Access, hit: bool) {
        self.requests += 1;
        self.bytes_requested += u64::from(a.size);
        if hit {
            self.hits += 1;
            self.bytes_hit += u64::from(a.size);
        }
    }

    /// Requests that missed.
    pub fn misses(&self) -> u64 {
        self.requests - self.hits
    }

    /// Misses per request; 0 when there were no requests.
    pub fn miss_ratio(&self) -> f64 {
        ratio(self.misses(), self.requests)
    }

    /// Bytes missed per byte requested; 0 when nothing was requested.
    pub fn byte_miss_ratio(&self) -> f64 {
        ratio(self.bytes_requested - self.bytes_hit, self.bytes_requested)
    }

    /// Adds another accumulator's counts (e.g. to total per-tenant results).
    pub fn merge(&mut self, other: &MissRatio) {
        self.requests += other.requests;
        self.hits += other.hits;
        self.bytes_requested += other.bytes_requested;
        self.bytes_hit += other.bytes_hit;
    }
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 { 0.0 } else { num as f64 / den as f64 }
}

/// Replays `trace` through `policy` and returns the counts.
pub fn run<P, I>(policy: &mut P, trace: I) -> MissRatio
where
    P: Policy + ?Sized,
    I: IntoIterator<Item = Access>,
{
    let mut mr = MissRatio::default();
    for a in trace {
        let hit = policy.access(&a);
        mr.record(&a, hit);
    }
    mr
}

#[cfg(test)]
mod tests;
