//! What the engine tells an observer about the items it evicts, for a server's event streams
//! (memcached's `watch evictions`, its `doc/protocol.txt` "Watchers" and `logger.c`).
//!
//! The observer is set once ([`crate::Engine::set_eviction_observer`]) and called for each
//! live item the engine drops to make room, with the record still readable: by the cleaner
//! (on the background thread, or inside a writer running the inline cleaner) for a pass's or
//! a whole-segment eviction, and by a writer whose insert made the index drop an item (after
//! it unlocked the index root). An engine with no observer pays one load per evicted item.
//! The observer must not block: it may run while the cleaner holds its lock, and pinned.

use crate::tenant::TenantId;

/// An item the engine evicted.
#[derive(Debug, Clone, Copy)]
pub struct Evicted<'a> {
    /// The tenant the item belonged to.
    pub tenant: TenantId,
    /// The item's database (as stored: the server maps it to the database clients see).
    pub db: u8,
    /// The item's key.
    pub key: &'a [u8],
    /// The value's length in bytes.
    pub value_len: usize,
    /// When the item would have expired (Unix ms), if it had an expiry.
    pub expires_at_ms: Option<u64>,
    /// When the item was last read or written (Unix ms; as precise as the engine's recency
    /// clock, which advances as segments fill).
    pub last_access_ms: u64,
}

/// Called for each evicted item (see the module doc).
pub type EvictionObserver = Box<dyn Fn(&Evicted<'_>) + Send + Sync>;
