//! What the engine knows about one item without reading it as a client would: its size in
//! its segment, its last-access stamp and its hitmap temperature (Redis's `OBJECT` and
//! `MEMORY USAGE` read these).

use super::Worker;
use crate::cache::is_expired;
use crate::hash::{digest_of, key_hash_in};
use crate::item::Kind;
use crate::tenant::TenantId;

/// Bytes one index slot takes (a packed location in an `AtomicU64`).
pub const INDEX_SLOT_BYTES: usize = 8;

/// One live item's bookkeeping, as [`Worker::inspect`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemInfo {
    /// Bytes the item occupies in its segment (key record plus value).
    pub size: usize,
    /// Value length in bytes.
    pub value_len: usize,
    /// The latest time (ms since the Unix epoch) the item may have been read or written, as
    /// the coarse recency clock knows it: the end of the tick its access stamp names (now,
    /// for the current tick). Idle times measured from it are lower bounds.
    pub last_access_ms: u64,
    /// Its hitmap zone: 0 for a key not read since the last compaction, up to the number of
    /// levels for the hottest (1 for every key while a compaction runs). Without a hitmap,
    /// under S3-FIFO's queues, its reads since it entered its queue (0 to 3, the counter its
    /// record keeps); `None` when the engine keeps neither.
    pub zone: Option<u8>,
    /// What the value encodes.
    pub kind: Kind,
}

impl Worker {
    /// `key`'s bookkeeping, or `None` if it has no live item. Counts no access and touches no
    /// recency (so that looking at an item does not warm it).
    pub fn inspect(&mut self, tenant: TenantId, key: &[u8]) -> Option<ItemInfo> {
        let db = self.db;
        let hash = key_hash_in(tenant, db, key);
        let inner = &*self.inner;
        inner.check_flush(&self.slot, tenant);
        let (size, value_len, access, kind, freq) = {
            let guard = inner.epochs.pin(&self.slot);
            let loc = inner
                .index
                .find(&guard, hash, |l| inner.key_matches(&guard, l, tenant, db, key))?;
            let rec = inner.record(&guard, loc);
            if is_expired(inner.expires_at(&rec, loc), || inner.now_ms()) {
                return None;
            }
            (rec.size(), rec.value_len(), rec.access(), rec.kind(), rec.freq())
        };
        let zone = if inner.config.hitmap_bits_per_item > 0 {
            let mut temps = Vec::with_capacity(1);
            inner.metadata.temperatures(&[digest_of(hash)], &mut temps);
            Some(temps.first().map_or(1, |t| t.zone))
        } else {
            matches!(inner.config.eviction, crate::config::Eviction::Queues(_)).then_some(freq)
        };
        let last_access_ms = if access == inner.recency() {
            inner.now_ms()
        } else {
            inner.tick_time_ms(access.wrapping_add(1))
        };
        Some(ItemInfo { size, value_len, last_access_ms, zone, kind })
    }

    /// The engine's clock (ms since the Unix epoch), for idle times measured against
    /// [`ItemInfo::last_access_ms`].
    pub fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }
}
