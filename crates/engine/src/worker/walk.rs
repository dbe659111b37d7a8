//! A walk over the keys with each item's metadata, in bounded steps: what memcached's
//! `lru_crawler metadump`, `stats cachedump` and the size histogram of `stats items` read.

use super::Worker;
use crate::cache::is_expired;
use crate::item::{Kind, MAX_TENANTS};
use crate::tenant::TenantId;

/// What a walk sees of one live item. Borrowed for the callback only.
#[derive(Debug, Clone, Copy)]
pub struct ItemMeta<'a> {
    /// The tenant that owns the item.
    pub tenant: TenantId,
    /// The database the item is stored in ([`Worker::select`]).
    pub db: u8,
    /// Key bytes.
    pub key: &'a [u8],
    /// Value length in bytes.
    pub value_len: usize,
    /// Bytes the item occupies in its segment (key record plus value).
    pub size: usize,
    /// Client flags.
    pub flags: u32,
    /// Absolute expiry (ms since the Unix epoch), `None` for never.
    pub expires_at_ms: Option<u64>,
    /// The CAS value `gets` returns for the item now.
    pub cas: u64,
    /// What the value encodes.
    pub kind: Kind,
    /// Value bytes (a warm restart's snapshot writes them; the other walks read only the
    /// metadata, and this costs them nothing: the bytes are not touched unless read).
    pub value: &'a [u8],
    /// The item's state bits (`item::STATE_*`, the meta protocol's).
    pub state: u8,
}

impl Worker {
    /// One step of a resumable pass over the live items of `tenant` (of every tenant for
    /// `None`), visiting at most `max_buckets` index positions: `f` sees each live item met.
    /// A delayed flush of the tenant (of any, for `None`) that fell due is applied first.
    /// Start with cursor 0; returns the next cursor, 0 when the pass is complete. As with
    /// [`Worker::scan`], an item present for the whole pass is seen at least once; one the
    /// cleaner moved during the pass may be seen twice. Counts no GET and touches no
    /// recency.
    pub fn walk_bounded(
        &mut self,
        tenant: Option<TenantId>,
        mut cursor: u64,
        max_buckets: usize,
        mut f: impl FnMut(ItemMeta<'_>),
    ) -> u64 {
        let inner = &*self.inner;
        match tenant {
            Some(t) => inner.check_flush(&self.slot, t),
            // A flush that fell due (memcached `flush_all N`) is applied before any item is
            // seen, as a read of the tenant would: a snapshot must not carry flushed items.
            None => {
                (0..MAX_TENANTS as u16).for_each(|t| inner.check_flush(&self.slot, TenantId(t)))
            }
        }
        let guard = inner.epochs.pin(&self.slot);
        let rehash = |l| inner.rehash(&guard, l);
        let mut on_evict = |l| inner.unlinked(&guard, l);
        let now = inner.now_ms();
        for _ in 0..max_buckets.max(1) {
            cursor = inner.index.scan(&guard, cursor, &rehash, &mut on_evict, &mut |_, _, loc| {
                let rec = inner.record(&guard, loc);
                if tenant.is_some_and(|t| rec.tenant() != t.0) {
                    return;
                }
                let expires_at_ms = inner.expires_at(&rec, loc);
                if is_expired(expires_at_ms, || now) {
                    return;
                }
                f(ItemMeta {
                    tenant: TenantId(rec.tenant()),
                    db: rec.db(),
                    key: rec.key(),
                    value_len: rec.value_len(),
                    size: rec.size(),
                    flags: rec.flags(),
                    expires_at_ms,
                    cas: rec.cas(),
                    kind: rec.kind(),
                    value: rec.value(),
                    state: rec.state(),
                });
            });
            if cursor == 0 {
                break;
            }
        }
        cursor
    }
}
