//! The read path of [`Worker`]: single-key reads, membership, and the software-pipelined
//! multi-key lookup.

use std::sync::Arc;

use super::{BATCH, Worker};
use crate::cache::{Inner, is_expired};
use crate::epoch::{self, Guard};
use crate::error::EngineError;
use crate::hash::key_hash_in;
use crate::item::{Kind, Record, STATE_FETCHED, seconds_since, touched_stamp};
use crate::ops::Item;
use crate::pin::ValuePin;
use crate::tenant::TenantId;

impl Worker {
    /// Reads `key`'s string. `f` sees the item while it is pinned in memory; its result is
    /// returned. A key holding a value of another [`Kind`] reads as absent (as Redis's `MGET`
    /// answers nil for it; [`Worker::get_kind`] tells the two apart).
    pub fn get<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        f: impl FnOnce(Item<'_>) -> R,
    ) -> Option<R> {
        self.read(tenant, key, true, Some(Kind::STRING), f).unwrap_or(None)
    }

    /// [`Worker::get_kind`], giving `f` for a value of at least `min_len` bytes a
    /// [`ValuePin`] that keeps the value's bytes readable after the call (a reply written
    /// from the segment: `crate::pin`). No pin where the pin budget is spent: `f` copies
    /// from the item then, as after a plain read.
    pub fn get_pinned<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        kind: Kind,
        min_len: usize,
        f: impl FnOnce(Item<'_>, Option<ValuePin>) -> R,
    ) -> Result<Option<R>, EngineError> {
        self.read_pinning(tenant, key, true, Some(kind), min_len, f)
    }

    /// Reads `key` without counting as an access: its recency, fetched bit and last-access
    /// time stay as they are, and the eviction metadata is not told (memcached meta `mg u`,
    /// `me`). Counted as a GET. Strings only, as [`Worker::get`].
    pub fn peek<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        f: impl FnOnce(Item<'_>) -> R,
    ) -> Option<R> {
        self.read(tenant, key, false, Some(Kind::STRING), f).unwrap_or(None)
    }

    /// Reads `key`'s value of `kind`: `Ok(None)` if the key has no live item,
    /// [`EngineError::WrongKind`] if it holds another kind (and `f` is not called).
    pub fn get_kind<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        kind: Kind,
        f: impl FnOnce(Item<'_>) -> R,
    ) -> Result<Option<R>, EngineError> {
        self.read(tenant, key, true, Some(kind), f)
    }

    /// Reads `key`'s value whatever its kind ([`Item::kind`] tells): what Redis's commands
    /// that work on every type (`TTL`, `COPY`, `DUMP`, `WATCH`) read.
    pub fn get_any<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        f: impl FnOnce(Item<'_>) -> R,
    ) -> Option<R> {
        self.read(tenant, key, true, None, f).unwrap_or(None)
    }

    /// The kind of `key`'s live item, `None` if it has none; counts no GET and touches no
    /// recency (Redis's `TYPE`; the reason a string read missed).
    pub fn kind(&mut self, tenant: TenantId, key: &[u8]) -> Option<Kind> {
        let (inner, db) = (&*self.inner, self.db);
        let hash = key_hash_in(tenant, db, key);
        inner.check_flush(&self.slot, tenant);
        let guard = inner.epochs.pin(&self.slot);
        let loc = inner.index.find_hot(
            &guard,
            hash,
            |l| inner.key_matches(&guard, l, tenant, db, key),
            &mut self.slb,
            &inner.epochs.counters(&self.slot).slb_hits,
        )?;
        let rec = inner.record(&guard, loc);
        (!is_expired(inner.expires_at(&rec, loc), || inner.now_ms())).then(|| rec.kind())
    }

    /// Whether `key` has a live item, without counting a GET or touching recency.
    pub fn contains(&mut self, tenant: TenantId, key: &[u8]) -> bool {
        self.contains_hashed(tenant, key_hash_in(tenant, self.db, key), key)
    }

    /// [`Worker::contains`] with the key's hash already computed.
    pub(super) fn contains_hashed(&mut self, tenant: TenantId, hash: u64, key: &[u8]) -> bool {
        let (inner, db) = (&*self.inner, self.db);
        inner.check_flush(&self.slot, tenant);
        let guard = inner.epochs.pin(&self.slot);
        let Some(loc) = inner.index.find_hot(
            &guard,
            hash,
            |l| inner.key_matches(&guard, l, tenant, db, key),
            &mut self.slb,
            &inner.epochs.counters(&self.slot).slb_hits,
        ) else {
            return false;
        };
        let rec = inner.record(&guard, loc);
        !is_expired(inner.expires_at(&rec, loc), || inner.now_ms())
    }

    /// Looks up many keys at once, calling `f(i, item)` for each key `keys[i]` that has a
    /// live item (in order). See [`Worker::get_each`].
    pub fn get_many<K: AsRef<[u8]>>(
        &mut self,
        tenant: TenantId,
        keys: &[K],
        mut f: impl FnMut(usize, Item<'_>),
    ) {
        self.get_each(tenant, keys.iter().map(AsRef::as_ref), |i, _, item| f(i, item));
    }

    /// Starts loading what GETs of `keys` (the first [`BATCH`]) in `tenant` and this handle's
    /// database will read — each key's index bucket, then the record that bucket most likely
    /// points to — so that single-key requests answered one by one after this find those
    /// lines in the CPU cache: their memory misses overlap here instead of following one
    /// another (the batched lookups' prefetching, for requests that come pipelined rather than
    /// in one multiget). A hint: it counts nothing and changes nothing; a key that is absent,
    /// or changes meanwhile, costs only the lines it loaded.
    pub fn prefetch_gets<'k>(&mut self, tenant: TenantId, keys: impl Iterator<Item = &'k [u8]>) {
        let (inner, db) = (&*self.inner, self.db);
        let guard = inner.epochs.pin(&self.slot);
        let mut hashes = [0u64; BATCH];
        let mut n = 0;
        for key in keys.take(BATCH) {
            let h = key_hash_in(tenant, db, key);
            inner.index.prefetch_root(&guard, h);
            hashes[n] = h;
            n += 1;
        }
        for &h in &hashes[..n] {
            prefetch_likely_record(inner, &guard, h);
        }
    }

    /// Looks up every key the iterator yields, calling `f(i, key, item)` for the `i`-th key if
    /// it has a live string (in order; a value of another kind is a miss). Lookups are software-pipelined in chunks of [`BATCH`]
    /// keys: while one chunk's keys are compared, the next chunk's likely records and the
    /// chunk after that's buckets are already being loaded, so memory misses overlap. Keys
    /// are held three chunks at a time on the stack (no allocation). Expired items are
    /// reported as misses and left for the cleaner. The call stays pinned throughout, so
    /// callers pass a request's or a pipeline's worth of keys, not whole key spaces.
    pub fn get_each<'k>(
        &mut self,
        tenant: TenantId,
        mut keys: impl Iterator<Item = &'k [u8]>,
        mut f: impl FnMut(usize, &'k [u8], Item<'_>),
    ) {
        let (inner, db) = (Arc::clone(&self.inner), self.db);
        inner.check_flush(&self.slot, tenant);
        let counters = inner.epochs.counters(&self.slot);
        let guard = inner.epochs.pin(&self.slot);
        let recency = inner.recency();
        let now_ms = inner.now_ms();
        let touched = touched_stamp(now_ms);
        // A ring of three chunks: [c % 3] holds chunk c's keys, hashes and length.
        let mut ring_keys: [[&'k [u8]; BATCH]; 3] = [[&[]; BATCH]; 3];
        let mut ring_hashes = [[0u64; BATCH]; 3];
        let mut ring_len = [0usize; 3];
        // Stage 1: take a chunk of keys, hash them and start loading their buckets. Returns
        // whether the chunk has any keys.
        let stage_buckets = |c: usize,
                             keys: &mut dyn Iterator<Item = &'k [u8]>,
                             ring_keys: &mut [[&'k [u8]; BATCH]; 3],
                             ring_hashes: &mut [[u64; BATCH]; 3],
                             ring_len: &mut [usize; 3]| {
            let slot = c % 3;
            let mut n = 0;
            while n < BATCH {
                let Some(key) = keys.next() else { break };
                let h = key_hash_in(tenant, db, key);
                inner.index.prefetch_root(&guard, h);
                ring_keys[slot][n] = key;
                ring_hashes[slot][n] = h;
                n += 1;
            }
            ring_len[slot] = n;
            n > 0
        };
        // Stage 2: start loading the record each bucket most likely points to.
        let stage_records = |slot: usize, ring_hashes: &[[u64; BATCH]; 3], len: usize| {
            for &h in &ring_hashes[slot][..len] {
                prefetch_likely_record(&inner, &guard, h);
            }
        };
        let mut filled = [false; 3];
        filled[0] = stage_buckets(0, &mut keys, &mut ring_keys, &mut ring_hashes, &mut ring_len);
        filled[1] = filled[0]
            && stage_buckets(1, &mut keys, &mut ring_keys, &mut ring_hashes, &mut ring_len);
        if filled[0] {
            stage_records(0, &ring_hashes, ring_len[0]);
        }
        let mut c = 0;
        while filled[c % 3] {
            let next2 = (c + 2) % 3;
            filled[next2] = filled[(c + 1) % 3]
                && stage_buckets(c + 2, &mut keys, &mut ring_keys, &mut ring_hashes, &mut ring_len);
            if filled[(c + 1) % 3] {
                stage_records((c + 1) % 3, &ring_hashes, ring_len[(c + 1) % 3]);
            }
            // Stage 3: compare keys and hand out values.
            let slot = c % 3;
            for j in 0..ring_len[slot] {
                epoch::bump(&counters.gets);
                self.count_read(tenant);
                let (key, h) = (ring_keys[slot][j], ring_hashes[slot][j]);
                let Some(loc) = inner.index.find_hot(
                    &guard,
                    h,
                    |l| inner.key_matches(&guard, l, tenant, db, key),
                    &mut self.slb,
                    &counters.slb_hits,
                ) else {
                    inner.missed(tenant, h);
                    continue;
                };
                let rec = inner.record(&guard, loc);
                let expires_at_ms = inner.expires_at(&rec, loc);
                if is_expired(expires_at_ms, || inner.now_ms()) || rec.kind() != Kind::STRING {
                    continue;
                }
                rec.touch_access(recency);
                rec.bump_freq();
                epoch::bump(&counters.hits);
                self.note_access(h, false, tenant, key);
                let item = hit(&rec, expires_at_ms, now_ms, touched);
                f(c * BATCH + j, key, item);
            }
            filled[slot] = false;
            c += 1;
        }
    }

    /// A single-key read; `access`: whether it counts as an access of the item; `kind`: the
    /// only kind it reads (another is [`EngineError::WrongKind`]), `None` for any.
    fn read<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        access: bool,
        kind: Option<Kind>,
        f: impl FnOnce(Item<'_>) -> R,
    ) -> Result<Option<R>, EngineError> {
        self.read_pinning(tenant, key, access, kind, usize::MAX, |item, _| f(item))
    }

    /// [`Worker::read`], giving `f` a pin of a value of at least `pin_min` bytes. Inline: it
    /// is every single-key read's body, and a server's GET handler calling it out of line
    /// ran 2.5% more instructions per RESP GET (`bench/cachegrind`).
    #[inline]
    fn read_pinning<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        access: bool,
        kind: Option<Kind>,
        pin_min: usize,
        f: impl FnOnce(Item<'_>, Option<ValuePin>) -> R,
    ) -> Result<Option<R>, EngineError> {
        let db = self.db;
        let hash = key_hash_in(tenant, db, key);
        self.count_read(tenant);
        let inner = &*self.inner;
        inner.check_flush(&self.slot, tenant);
        let counters = inner.epochs.counters(&self.slot);
        epoch::bump(&counters.gets);
        let guard = inner.epochs.pin(&self.slot);
        let Some(loc) = inner.index.find_hot(
            &guard,
            hash,
            |l| inner.key_matches(&guard, l, tenant, db, key),
            &mut self.slb,
            &counters.slb_hits,
        ) else {
            inner.missed(tenant, hash);
            return Ok(None);
        };
        let rec = inner.record(&guard, loc);
        let expires_at_ms = inner.expires_at(&rec, loc);
        if is_expired(expires_at_ms, || inner.now_ms()) {
            drop(guard);
            self.remove_if_at(tenant, hash, key, loc, true);
            return Ok(None);
        }
        let item_kind = rec.kind();
        if kind.is_some_and(|k| k != item_kind) {
            return Err(EngineError::WrongKind);
        }
        // A collection may be edited in place: its read holds the edit lock (`crate::edit`).
        let reading = (item_kind != Kind::STRING).then(|| inner.edits.read(hash));
        epoch::bump(&counters.hits);
        let now_ms = inner.now_ms();
        if !access {
            let result = f(
                Item {
                    value: rec.value(),
                    flags: rec.flags(),
                    expires_at_ms,
                    cas: rec.cas(),
                    state: rec.state(),
                    idle_s: seconds_since(rec.touched(), now_ms),
                    state_cell: Some(rec.state_cell()),
                    kind: rec.kind(),
                },
                None,
            );
            return Ok(Some(result));
        }
        rec.touch_access(inner.recency());
        rec.bump_freq();
        let item = hit(&rec, expires_at_ms, now_ms, touched_stamp(now_ms));
        // Under the guard, as `ValuePin::new` requires; strings only, whose bytes never change
        // (a pinned value is read after the edit lock is gone).
        let pin = (item.value.len() >= pin_min && reading.is_none())
            .then(|| ValuePin::new(&self.inner, item.value));
        let result = f(item, pin.flatten());
        drop(reading);
        drop(guard);
        // Only hits reach the eviction metadata: a miss has no item to warm, and a lookaside
        // miss followed by its SET must count as one access, not two.
        self.note_access(hash, false, tenant, key);
        Ok(Some(result))
    }
}

/// The item a read hit returns, noting the access on the record: fetched, and touched now.
#[inline]
fn hit<'g>(rec: &Record<'g>, expires_at_ms: Option<u64>, now_ms: u64, touched: u32) -> Item<'g> {
    let idle_s = seconds_since(rec.touched(), now_ms);
    rec.touch_touched(touched);
    Item {
        value: rec.value(),
        flags: rec.flags(),
        expires_at_ms,
        cas: rec.cas(),
        state: rec.set_state(STATE_FETCHED),
        idle_s,
        state_cell: Some(rec.state_cell()),
        kind: rec.kind(),
    }
}

/// Starts loading the record `hash`'s root bucket most likely points to (its first slot of a
/// matching tag; keys are not compared), for a lookup about to run.
#[inline]
fn prefetch_likely_record(inner: &Inner, guard: &Guard<'_>, hash: u64) {
    if let Some(loc) = inner.index.probable(guard, hash) {
        let segment = inner.arena.segment_ptr(loc.segment);
        crate::index::prefetch(segment.wrapping_add(loc.offset as usize));
    }
}
