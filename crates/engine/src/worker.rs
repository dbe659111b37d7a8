//! The per-thread handle, [`Worker`], which carries every operation, and the allocation of
//! the segments it writes to.
//!
//! Every operation takes a [`TenantId`] and works in the database the handle selected
//! ([`Worker::select`], Redis `SELECT`; 0 unless changed). Reads take no lock: they pin an
//! epoch, read one bucket line, follow a tag match to a key record, validate the key and copy
//! the value out.
//! Writes append the new item to the worker's own head segment first (no lock), then lock the
//! key's root bucket only to publish it — so a write holds a lock for a few loads and one
//! store. Operations whose result depends on the current value (append, a server's counters
//! through [`Worker::update`], conditional stores that keep a TTL) read, compute, write, and publish only if the item did not change in
//! between; otherwise they go again.
//!
//! Accounting: an item's size is its key record plus its value. A tenant's bytes are the sizes
//! of its live items; a segment's dead bytes are the sizes of its unreachable ones.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::cache::{Inner, is_expired};
use crate::cleaner;
use crate::config::{CleanerMode, Eviction};
use crate::epoch::{self, Guard, Slot};
use crate::error::EngineError;
use crate::hash::{digest_of, key_hash_in};
use crate::hotkeys::{self, NAMES_PER_POOL, SAMPLE_EVERY};
use crate::index::{Loc, Locked, SlbProbe};
use crate::item::{self, Kind, NewItem};
use crate::metadata::POOL_LEN;
use crate::ops::{Condition, Current, Expiry, Item, Source, Splice, Store, StoreOutcome, Update};
use crate::segment::{CLEANER_RESERVE, MAIN, SMALL};
use crate::stats::Counters;
use crate::tenant::{NO_FLUSH, TenantId};

pub(crate) mod inspect;
pub(crate) mod lines;
mod read;
pub(crate) mod walk;

/// Keys whose lookups [`Worker::get_many`] overlaps.
pub const BATCH: usize = 16;
/// Pieces of a [`Splice`] written as they are (a splice of more is joined first).
const SPLICE_PARTS: usize = 8;
/// Yields a writer waits for a segment before reporting `OutOfMemory` (about a second).
const MAX_SEGMENT_WAITS: u32 = 1_000_000;

/// One thread's handle: its own head segments, reference pool and scratch buffer.
#[derive(Debug)]
pub struct Worker {
    inner: Arc<Inner>,
    slot: Slot,
    /// Head segments for small and large values.
    /// Head segments by queue (`Eviction::Queues`: small, main) and value size (small, large).
    heads: [Option<u32>; 4],
    scratch: Vec<u8>,
    /// A spliced update's pieces ([`Worker::update_kind_spliced`]) and, where they cannot be
    /// written while the current item is pinned, the value joined from them.
    splice: Splice,
    joined: Vec<u8>,
    refs: Vec<u32>,
    /// Name samples for the hot keys, sent with `refs` (`hotkeys.rs`).
    names: Vec<u8>,
    /// Xorshift state choosing the references that are named.
    sampler: u32,
    /// This reader's SLB state.
    slb: SlbProbe,
    /// The CAS value of the last item this handle published.
    last_cas: u64,
    /// The database every key operation names ([`Worker::select`]).
    db: u8,
    /// GETs per tenant not yet added to the tenants' counts (only while the arbiter weighs
    /// credits by request rate), the tenants among them, and how many in all.
    reads: Vec<u32>,
    read_tenants: Vec<u16>,
    reads_pending: u32,
}

/// GETs a worker counts before adding them to the tenants' counts.
const READS_BATCH: u32 = 64;

impl Worker {
    /// A handle pinning as `slot`, which the caller registered for it.
    pub(crate) fn new(inner: Arc<Inner>, slot: Slot) -> Worker {
        Worker {
            inner,
            slot,
            heads: [None; 4],
            scratch: Vec::new(),
            splice: Splice::default(),
            joined: Vec::new(),
            refs: Vec::with_capacity(POOL_LEN),
            names: Vec::with_capacity(NAMES_PER_POOL),
            sampler: 0x9e37_79b9,
            slb: SlbProbe::default(),
            last_cas: 0,
            db: 0,
            reads: Vec::new(),
            read_tenants: Vec::new(),
            reads_pending: 0,
        }
    }

    /// Makes `db` (below [`item::MAX_DBS`]) the database that this handle's key operations
    /// name from now on, until the next call: with the tenant and the key it is an item's
    /// identity (Redis `SELECT`), so equal keys of two databases are two items. A server
    /// selects a client's database before running its command. Database 0 is the default
    /// and costs nothing: its keys hash and compare as they would without databases.
    #[inline]
    pub fn select(&mut self, db: u8) {
        debug_assert!(usize::from(db) < item::MAX_DBS);
        self.db = db;
    }

    /// The database [`Worker::select`] chose.
    #[inline]
    pub fn db(&self) -> u8 {
        self.db
    }

    #[cfg(test)]
    pub(crate) fn slot(&self) -> &Slot {
        &self.slot
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        for seg in self.heads.iter_mut().filter_map(Option::take) {
            crate::cleaner::seal(&self.inner, seg);
        }
        self.flush_references();
        self.inner.epochs.unregister(std::mem::replace(&mut self.slot, Slot::DETACHED));
    }
}

impl Worker {
    /// Adds a reference to the pool, and one in [`SAMPLE_EVERY`] (at random) with its name.
    #[inline]
    fn note_access(&mut self, hash: u64, set: bool, tenant: TenantId, key: &[u8]) {
        let digest = digest_of(hash) & !1;
        self.refs.push(digest | u32::from(set));
        // Xorshift32: a few instructions; its low bits pick the samples.
        let mut x = self.sampler;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.sampler = x;
        if x % SAMPLE_EVERY == 0 {
            hotkeys::push_name(&mut self.names, digest, tenant, self.db, key);
        }
        if self.refs.len() == POOL_LEN {
            self.flush_references();
        }
    }

    /// Counts a GET of `tenant` for the arbiter, when it weighs credits by request rate
    /// (one load otherwise).
    #[inline]
    fn count_read(&mut self, tenant: TenantId) {
        if self.inner.arbiter.counts_reads() {
            self.count_read_batched(tenant);
        }
    }

    fn count_read_batched(&mut self, tenant: TenantId) {
        if self.reads.is_empty() {
            self.reads = vec![0; item::MAX_TENANTS];
        }
        let t = usize::from(tenant.0);
        if self.reads[t] == 0 {
            self.read_tenants.push(tenant.0);
        }
        self.reads[t] += 1;
        self.reads_pending += 1;
        if self.reads_pending >= READS_BATCH {
            let inner = &*self.inner;
            for &t in &self.read_tenants {
                let n = std::mem::take(&mut self.reads[usize::from(t)]);
                inner.arbiter.add_reads(&inner.tenants, t, u64::from(n));
            }
            self.read_tenants.clear();
            self.reads_pending = 0;
        }
    }

    fn flush_references(&mut self) {
        if !self.refs.is_empty() {
            self.inner.metadata.submit(&self.refs, &self.names);
            Counters::add(&self.inner.counters.digests, self.refs.len() as u64);
            self.refs.clear();
            self.names.clear();
        }
    }

    /// Hands the partly filled reference pool to the metadata sink now (the simulator calls
    /// this to make metadata effects deterministic at chosen points).
    pub fn flush_reference_pool(&mut self) {
        self.flush_references();
    }

    /// Removes `key`'s item if it is still the one at `loc` (expired-item reclamation).
    fn remove_if_at(&mut self, tenant: TenantId, hash: u64, key: &[u8], loc: Loc, expired: bool) {
        let (inner, db) = (&*self.inner, self.db);
        let guard = inner.epochs.pin(&self.slot);
        let locked = inner.lock_key(&guard, hash);
        if let Some((slot, found)) = locked.find(|l| inner.key_matches(&guard, l, tenant, db, key))
        {
            if found == loc {
                inner.unlinked(&guard, loc);
                locked.remove(slot);
                locked.bump_cas();
                if expired {
                    Counters::add(&inner.counters.expired, 1);
                    inner.key_events.note(tenant.0, db, crate::events::KeyEventKind::Expired, key);
                }
            }
        }
    }

    /// Removes `key`'s item if it is still the one an update read: at `loc`, with nothing
    /// changed under its root since (`version`, the root's change counter then). Returns
    /// whether it did; false means the key changed in between (the caller goes again).
    fn remove_seen(
        &mut self,
        tenant: TenantId,
        hash: u64,
        key: &[u8],
        loc: Loc,
        version: Option<u64>,
    ) -> bool {
        let (inner, db) = (&*self.inner, self.db);
        let guard = inner.epochs.pin(&self.slot);
        let locked = inner.lock_key(&guard, hash);
        let found = locked.find(|l| inner.key_matches(&guard, l, tenant, db, key));
        match found {
            Some((slot, at)) if at == loc && Some(locked.cas()) == version => {
                inner.unlinked(&guard, loc);
                locked.remove(slot);
                locked.bump_cas();
                true
            }
            _ => false,
        }
    }

    /// Appends an item to this worker's head segment (unpublished). The caller must not be
    /// pinned.
    fn write_item(
        &mut self,
        item: &NewItem<'_>,
        value: &[&[u8]],
        queue: u8,
    ) -> Result<(Loc, usize), EngineError> {
        let inner = &*self.inner;
        if let Some(written) = append_to_head(inner, &mut self.heads, item, value, queue) {
            return written;
        }
        let large =
            value.iter().map(|v| v.len()).sum::<usize>() >= inner.config.large_value_threshold;
        let head = &mut self.heads[usize::from(queue) * 2 + usize::from(large)];
        loop {
            if let Some(seg) = *head {
                if let Some(written) = inner.append_to(seg, item, value) {
                    return Ok(written);
                }
                crate::cleaner::seal(inner, seg);
                *head = None;
            }
            *head = Some(inner.acquire_segment(&self.slot, queue)?);
        }
    }

    /// Stores an item.
    pub fn store(&mut self, req: Store<'_>) -> Result<StoreOutcome, EngineError> {
        let hash = key_hash_in(req.tenant, self.db, req.key);
        self.note_access(hash, true, req.tenant, req.key);
        self.inner.check_flush(&self.slot, req.tenant);
        epoch::bump(&self.inner.epochs.counters(&self.slot).sets);
        if req.expiry == Expiry::Keep {
            return self.store_keeping_ttl(req, hash);
        }
        let expires_at_ms = match req.expiry {
            Expiry::At(at) => Some(at),
            _ => None,
        };
        if expires_at_ms.is_some_and(|at| at <= self.inner.now_ms()) {
            // Already expired: the store succeeds and leaves nothing behind (memcached's
            // negative exptime). Conditions still apply.
            return self.store_expired(req, hash);
        }
        // A cheap early answer for conditions that already fail (no write wasted).
        if let Some(outcome) = self.precheck(req, hash) {
            return Ok(outcome);
        }
        if self.refuses_new_key(req.tenant, hash, req.key) {
            return Err(EngineError::KeyLimit);
        }
        let at_least = (item::HEADER_LEN + req.key.len() + req.value.len()) as u64;
        if self.refuses_bytes(req.tenant, hash, req.key, at_least) {
            return Err(EngineError::ByteLimit);
        }
        let (tenant, db) = (req.tenant, self.db);
        let item = NewItem {
            tenant: tenant.0,
            db,
            key: req.key,
            flags: req.flags,
            expires_at_ms,
            cas: req.cas.unwrap_or_else(|| self.inner.new_cas()),
            access: self.inner.recency(),
            state: req.state,
            touched: item::touched_stamp(self.inner.now_ms()),
            freq: 0,
            kind: req.kind,
        };
        let bytes = (req.key.len() + req.value.len()) as u64;
        let queue = self.inner.queue_for_write(hash, bytes);
        let (new, size) = self.write_item(&item, &[req.value], queue)?;
        let inner = &*self.inner;
        let guard = inner.epochs.pin(&self.slot);
        inner.maintain_index(&guard);
        let locked = inner.lock_key(&guard, hash);
        let found = locked.find(|l| inner.key_matches(&guard, l, tenant, db, req.key));
        let live = found.filter(|&(_, l)| {
            let rec = inner.record(&guard, l);
            !is_expired(inner.expires_at(&rec, l), || inner.now_ms())
        });
        let outcome = match (req.condition, live) {
            (Condition::Always, _) => StoreOutcome::Stored,
            (Condition::IfAbsent, None) | (Condition::IfPresent, Some(_)) => StoreOutcome::Stored,
            (Condition::IfAbsent, Some(_)) | (Condition::IfPresent, None) => {
                StoreOutcome::NotStored
            }
            (Condition::IfCas(_), None) => StoreOutcome::NotFound,
            (Condition::IfCas(cas), Some((_, l))) if cas == inner.record(&guard, l).cas() => {
                StoreOutcome::Stored
            }
            (Condition::IfCas(_), Some(_)) => StoreOutcome::Exists,
        };
        if outcome != StoreOutcome::Stored {
            inner.segments.header(new.segment).add_dead(size);
            return Ok(outcome);
        }
        let replaced_expired = found.is_some() && live.is_none();
        let space = (tenant, db);
        publish(inner, &guard, locked, found, new, replaced_expired, space, size, expires_at_ms)?;
        self.last_cas = item.cas;
        Ok(StoreOutcome::Stored)
    }

    /// Whether a write of `key` is refused before anything is written: `tenant` holds its
    /// `max_keys` keys and the key has no slot (a write over an expired item of the key
    /// replaces it, and so adds no key). Counted as a refusal. A tenant without a cap pays
    /// one load; [`publish`] decides for writes this lets through.
    fn refuses_new_key(&mut self, tenant: TenantId, hash: u64, key: &[u8]) -> bool {
        let (inner, db) = (&*self.inner, self.db);
        let t = &inner.tenants[usize::from(tenant.0)];
        if !t.at_max_keys() {
            return false;
        }
        let guard = inner.epochs.pin(&self.slot);
        let found =
            inner.index.find(&guard, hash, |l| inner.key_matches(&guard, l, tenant, db, key));
        if found.is_some() {
            return false;
        }
        t.rejected_keys.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Whether a store of at least `size` bytes of `key` is refused before anything is
    /// written: it would take `tenant` past its `max_bytes`, counting the item of the key it
    /// would replace as freed. Counted as a refusal. A tenant without a cap, or far enough
    /// below it, pays one load; [`publish`] decides for writes this lets through (with the
    /// item's exact size).
    fn refuses_bytes(&mut self, tenant: TenantId, hash: u64, key: &[u8], size: u64) -> bool {
        let (inner, db) = (&*self.inner, self.db);
        let t = &inner.tenants[usize::from(tenant.0)];
        if !t.over_max_bytes(size) {
            return false;
        }
        let guard = inner.epochs.pin(&self.slot);
        let found =
            inner.index.find(&guard, hash, |l| inner.key_matches(&guard, l, tenant, db, key));
        let freed = found.map_or(0, |l| inner.record(&guard, l).size() as u64);
        if size <= freed || !t.over_max_bytes(size - freed) {
            return false;
        }
        t.rejected_bytes.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Answers conditional stores whose condition already fails, without writing.
    fn precheck(&mut self, req: Store<'_>, hash: u64) -> Option<StoreOutcome> {
        let present = match req.condition {
            Condition::Always => return None,
            Condition::IfCas(cas) => {
                let (inner, db) = (&*self.inner, self.db);
                let guard = inner.epochs.pin(&self.slot);
                let found = inner
                    .index
                    .find(&guard, hash, |l| inner.key_matches(&guard, l, req.tenant, db, req.key));
                return match found {
                    None => Some(StoreOutcome::NotFound),
                    Some(loc) => {
                        let rec = inner.record(&guard, loc);
                        if is_expired(inner.expires_at(&rec, loc), || inner.now_ms()) {
                            Some(StoreOutcome::NotFound)
                        } else if rec.kind() == Kind::STRING && rec.cas() != cas {
                            // (A collection's CAS may be changing under an edit in place:
                            // it is compared under the root lock, below.)
                            Some(StoreOutcome::Exists)
                        } else {
                            None
                        }
                    }
                };
            }
            _ => self.contains_hashed(req.tenant, hash, req.key),
        };
        match (req.condition, present) {
            (Condition::IfAbsent, true) | (Condition::IfPresent, false) => {
                Some(StoreOutcome::NotStored)
            }
            _ => None,
        }
    }

    /// A store whose expiry has already passed: it deletes the current item, if the
    /// condition holds.
    fn store_expired(&mut self, req: Store<'_>, hash: u64) -> Result<StoreOutcome, EngineError> {
        self.update_hashed(req.tenant, hash, req.key, Access::Replace(req.kind), |current, _, _| {
            let outcome = match (req.condition, current) {
                (Condition::IfAbsent, Some(_)) | (Condition::IfPresent, None) => {
                    StoreOutcome::NotStored
                }
                (Condition::IfCas(_), None) => StoreOutcome::NotFound,
                _ => StoreOutcome::Stored,
            };
            Ok(match (outcome, current) {
                (StoreOutcome::Stored, Some(_)) => Update::Delete(outcome),
                _ => Update::Done(outcome),
            })
        })
    }

    /// A store that keeps the current item's expiry (Redis `SET … KEEPTTL`).
    fn store_keeping_ttl(
        &mut self,
        req: Store<'_>,
        hash: u64,
    ) -> Result<StoreOutcome, EngineError> {
        self.update_hashed(
            req.tenant,
            hash,
            req.key,
            Access::Replace(req.kind),
            |current, buf, _| {
                let fails = match (req.condition, current) {
                    (Condition::IfAbsent, Some(_)) | (Condition::IfPresent, None) => {
                        Some(StoreOutcome::NotStored)
                    }
                    (Condition::IfCas(_), _) => Some(StoreOutcome::Exists),
                    _ => None,
                };
                if let Some(outcome) = fails {
                    return Ok(Update::Done(outcome));
                }
                buf.extend_from_slice(req.value);
                Ok(Update::Write {
                    flags: req.flags,
                    expires_at_ms: current.and_then(|c| c.expires_at_ms),
                    result: StoreOutcome::Stored,
                })
            },
        )
    }

    /// Read-modify-write of one key. `f` sees the current live item (or `None`) and a cleared
    /// buffer; to write, it fills the buffer with the new value and returns
    /// [`Update::Write`]. The new item is published only if the key still holds the item `f`
    /// saw; otherwise `f` runs again on the newer item. The buffer is the worker's own, reused
    /// from call to call, so an update allocates nothing once it has grown. An `Err` from `f`
    /// is the engine's (append's [`EngineError::TooLarge`]); a caller with reasons of its own
    /// to give up (a value that is not a number) returns them in its result, as
    /// `Update::Done(Err(reason))` with `R = Result<T, ItsError>`.
    ///
    /// For the eviction metadata an update is a reference to the key (as a SET) when it
    /// writes or leaves a live item as it was; one that deletes the item, or finds no item and
    /// writes none, is not (a DEL, or a DEL of a missing key, raises no key's frequency).
    ///
    /// The value is a string's ([`Kind::STRING`]): a key holding another kind is
    /// [`EngineError::WrongKind`], and `f` is not called.
    pub fn update<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        f: impl FnMut(Option<Current<'_>>, &mut Vec<u8>) -> Result<Update<R>, EngineError>,
    ) -> Result<R, EngineError> {
        self.update_kind(tenant, key, Kind::STRING, f)
    }

    /// [`Worker::update`] of a value of `kind`: `f` sees only an item of that kind (a key
    /// holding another is [`EngineError::WrongKind`]), and what it writes is of that kind.
    pub fn update_kind<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        kind: Kind,
        f: impl FnMut(Option<Current<'_>>, &mut Vec<u8>) -> Result<Update<R>, EngineError>,
    ) -> Result<R, EngineError> {
        let mut f = f;
        let hash = key_hash_in(tenant, self.db, key);
        self.update_hashed(tenant, hash, key, Access::Only(kind), |c, buf, _| f(c, buf))
    }

    /// [`Worker::update_kind`] whose closure may give the new value as a [`Splice`]: runs of
    /// the current value and of the buffer, which are copied straight into the new item (one
    /// copy of the runs it keeps, not two). A closure that leaves the splice empty writes the
    /// buffer, as [`Worker::update_kind`]'s does; the splice counts only for
    /// [`Update::Write`] and [`Update::WriteWith`], and is empty each time `f` is called.
    pub fn update_kind_spliced<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        kind: Kind,
        f: impl FnMut(Option<Current<'_>>, &mut Vec<u8>, &mut Splice) -> Result<Update<R>, EngineError>,
    ) -> Result<R, EngineError> {
        self.update_hashed(tenant, key_hash_in(tenant, self.db, key), key, Access::Only(kind), f)
    }

    /// [`Worker::update`] with the key's hash already computed, of the kinds `access` allows.
    fn update_hashed<R>(
        &mut self,
        tenant: TenantId,
        hash: u64,
        key: &[u8],
        access: Access,
        mut f: impl FnMut(
            Option<Current<'_>>,
            &mut Vec<u8>,
            &mut Splice,
        ) -> Result<Update<R>, EngineError>,
    ) -> Result<R, EngineError> {
        self.inner.check_flush(&self.slot, tenant);
        let db = self.db;
        let mut buf = std::mem::take(&mut self.scratch);
        let mut splice = std::mem::take(&mut self.splice);
        let mut joined = std::mem::take(&mut self.joined);
        // Cleared for the next try where an edit in place could not be made (`Edit::NotNow`).
        let mut may_edit = true;
        let result = loop {
            buf.clear();
            splice.clear();
            let inner = Arc::clone(&self.inner);
            let guard = inner.epochs.pin(&self.slot);
            let found = inner
                .index
                .find_with_cas(&guard, hash, |l| inner.key_matches(&guard, l, tenant, db, key));
            let seen = found.map(|(loc, _)| loc);
            // The root's change counter: the item is published only if nothing changed
            // under the root since it was read.
            let seen_version = found.map(|(_, version)| version);
            // A collection may be edited in place: it is read, and its runs copied, under its
            // edit lock (`crate::edit`), released before any other lock is taken.
            let mut reading = None;
            let current = found.and_then(|(loc, _)| {
                let rec = inner.record(&guard, loc);
                let expires_at_ms = inner.expires_at(&rec, loc);
                if rec.kind() != Kind::STRING {
                    reading = Some(inner.edits.read(hash));
                }
                (!is_expired(expires_at_ms, || inner.now_ms())).then(|| Current {
                    value: rec.value(),
                    flags: rec.flags(),
                    expires_at_ms,
                    cas: rec.cas(),
                    state: rec.state(),
                    kind: rec.kind(),
                })
            });
            if let (Access::Only(kind), Some(c)) = (access, current)
                && c.kind != kind
            {
                break Err(EngineError::WrongKind);
            }
            let step = match f(current, &mut buf, &mut splice) {
                Ok(step) => step,
                Err(e) => break Err(e),
            };
            let spliced = !splice.is_empty()
                && matches!(step, Update::Write { .. } | Update::WriteWith { .. });
            let step = Step::of(step, current, access.kind(), &mut buf);
            if seen.is_none() && matches!(step, Step::Write { .. }) {
                // A new key: refused before anything is written where the tenant holds its
                // `max_keys` keys (`publish` decides for writes this lets through).
                let t = &inner.tenants[usize::from(tenant.0)];
                if t.at_max_keys() {
                    t.rejected_keys.fetch_add(1, Ordering::Relaxed);
                    break Err(EngineError::KeyLimit);
                }
            }
            // A splice that gives a collection a value of its length, keeping its flags,
            // expiry and kind, is written over the current item where it lies.
            if let (true, Some(c), Some(at), Some(version)) =
                (may_edit, current, seen, seen_version)
                && let Step::Write { flags, expires_at_ms, cas, state, carry, kind, .. } = step
                && spliced
                && c.kind != Kind::STRING
                && (kind, flags, expires_at_ms) == (c.kind, c.flags, c.expires_at_ms)
                && splice.len() == c.value.len()
            {
                let apart = splice.moves_apart();
                if !apart {
                    splice.stash_moved(c.value, &mut joined);
                }
                drop(reading);
                let seen = Seen { tenant, db, key, hash, at, version };
                match edit_in_place(
                    &inner,
                    &guard,
                    seen,
                    (&splice, &buf, (!apart).then_some(&joined[..])),
                    cas,
                    state,
                    carry,
                ) {
                    Edit::Done(cas) => {
                        epoch::bump(&inner.epochs.counters(&self.slot).edits_in_place);
                        drop(guard);
                        let Step::Write { result, .. } = step else { unreachable!() };
                        self.last_cas = cas;
                        self.note_access(hash, true, tenant, key);
                        break Ok(result);
                    }
                    Edit::Changed => continue,
                    Edit::NotNow => {
                        may_edit = false;
                        continue;
                    }
                }
            }
            // A spliced value is written now, while the current item its runs come from is
            // pinned, if the head segment has room (appending waits for nothing); otherwise
            // its pieces are joined into one buffer, written below as any other value.
            let mut early = None;
            if let (true, Step::Write { flags, expires_at_ms, cas, state, kind, .. }) =
                (spliced, &step)
            {
                let cur = current.map_or(&[][..], |c| c.value);
                let mut parts = [&[][..]; SPLICE_PARTS];
                let pieces = splice.pieces();
                for (part, piece) in parts.iter_mut().zip(pieces) {
                    *part = piece.of(cur, &buf).expect("a splice piece within its bytes");
                }
                // The rule every read uses (`is_expired`): a kept deadline of exactly now is
                // still live, as Redis's APPEND or INCR finds the key at that millisecond.
                let expired = is_expired(*expires_at_ms, || inner.now_ms());
                if pieces.len() <= SPLICE_PARTS && !expired {
                    let item = NewItem {
                        tenant: tenant.0,
                        db,
                        key,
                        flags: *flags,
                        expires_at_ms: *expires_at_ms,
                        cas: cas.unwrap_or_else(|| inner.new_cas()),
                        access: inner.recency(),
                        state: *state,
                        touched: item::touched_stamp(inner.now_ms()),
                        freq: 0,
                        kind: *kind,
                    };
                    let parts = &parts[..pieces.len()];
                    early = append_to_head(&inner, &mut self.heads, &item, parts, SMALL)
                        .map(|written| (written, item.cas));
                }
                if early.is_none() {
                    splice.join(cur, &buf, &mut joined);
                    std::mem::swap(&mut buf, &mut joined);
                }
            }
            let existed = current.is_some();
            drop(reading);
            drop(guard);
            let (new, result, expires_at_ms, cas, carry) = match step {
                Step::Done(r) => {
                    // A live item that `f` read and left as it was (SADD of a member the set
                    // holds, SET NX over a key that has one) was referenced; a missing key
                    // that stayed missing was not.
                    if existed {
                        self.note_access(hash, true, tenant, key);
                    }
                    break Ok(r);
                }
                Step::Delete(r) => {
                    // Only the very item `f` saw: if the key changed in between, `f`'s
                    // decision (a pop that emptied a list…) is stale: go again.
                    if let Some(loc) = seen
                        && !self.remove_seen(tenant, hash, key, loc, seen_version)
                    {
                        continue;
                    }
                    break Ok(r);
                }
                Step::Write { flags, expires_at_ms, cas, state, carry, kind, result } => {
                    if let Some((written, cas)) = early {
                        match written {
                            Ok(new) => (new, result, expires_at_ms, cas, carry),
                            Err(e) => break Err(e),
                        }
                    } else {
                        if is_expired(expires_at_ms, || inner.now_ms()) {
                            if let Some(loc) = seen
                                && !self.remove_seen(tenant, hash, key, loc, seen_version)
                            {
                                continue;
                            }
                            break Ok(result);
                        }
                        let item = NewItem {
                            tenant: tenant.0,
                            db,
                            key,
                            flags,
                            expires_at_ms,
                            cas: cas.unwrap_or_else(|| inner.new_cas()),
                            access: inner.recency(),
                            state,
                            touched: item::touched_stamp(inner.now_ms()),
                            freq: 0,
                            kind,
                        };
                        match self.write_item(&item, &[&buf], SMALL) {
                            Ok(new) => (new, result, expires_at_ms, item.cas, carry),
                            Err(e) => break Err(e),
                        }
                    }
                }
            };
            let (new, size) = new;
            let guard = inner.epochs.pin(&self.slot);
            inner.maintain_index(&guard);
            let locked = inner.lock_key(&guard, hash);
            let found = locked.find(|l| inner.key_matches(&guard, l, tenant, db, key));
            // Publish only over the very item `f` saw: same location and no change under
            // the root since (which also rules out the location being reused).
            if found.map(|(_, l)| l) != seen
                || (seen.is_some() && Some(locked.cas()) != seen_version)
            {
                // Someone changed the key in between: this copy is dead; go again.
                inner.segments.header(new.segment).add_dead(size);
                continue;
            }
            let replaced_expired =
                found.is_some_and(|(_, old)| current_was_expired(&inner, &guard, old));
            if let Some((_, old)) = found.filter(|_| carry != 0) {
                // State bits readers set on the old record since `f` read it (a win token
                // claimed meanwhile) carry over; the new record is not yet visible.
                inner.record(&guard, new).set_state(inner.record(&guard, old).state() & carry);
            }
            let published = publish(
                &inner,
                &guard,
                locked,
                found,
                new,
                replaced_expired,
                (tenant, db),
                size,
                expires_at_ms,
            );
            if let Err(e) = published {
                break Err(e);
            }
            self.last_cas = cas;
            self.note_access(hash, true, tenant, key);
            break Ok(result);
        };
        self.scratch = buf;
        self.splice = splice;
        self.joined = joined;
        result
    }

    /// The CAS value of the last item this handle stored (by [`Worker::store`] or an update
    /// that wrote), 0 before the first: what memcached returns for `ms … c` without a second
    /// lookup.
    pub fn last_cas(&self) -> u64 {
        self.last_cas
    }

    /// Deletes `key`, whatever its kind. Returns whether a live item was deleted.
    pub fn delete(&mut self, tenant: TenantId, key: &[u8]) -> bool {
        self.update_any(tenant, key, |current, _| {
            Ok(if current.is_some() { Update::Delete(true) } else { Update::Done(false) })
        })
        .unwrap_or(false)
    }

    /// [`Worker::update`] of whatever kind `key` holds ([`Current::kind`] tells), for steps
    /// that retime, rewrite or delete an item of any kind (Redis's `EXPIRE`, `RENAME`'s
    /// removal of the source): those keep the value's kind. A [`Update::Write`] or
    /// [`Update::WriteWith`] writes a string, whatever the key held.
    pub fn update_any<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        f: impl FnMut(Option<Current<'_>>, &mut Vec<u8>) -> Result<Update<R>, EngineError>,
    ) -> Result<R, EngineError> {
        let mut f = f;
        let hash = key_hash_in(tenant, self.db, key);
        self.update_hashed(tenant, hash, key, Access::Replace(Kind::STRING), |c, buf, _| f(c, buf))
    }

    /// Sets a live item's expiry (Redis `EXPIRE`/`PERSIST`, memcached meta `T`), keeping its
    /// value, flags, CAS and state, whatever its kind. Returns the previous expiry, or `None` if there is no live
    /// item.
    pub fn set_expiry(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        expires_at_ms: Option<u64>,
    ) -> Result<Option<Option<u64>>, EngineError> {
        self.retime(tenant, key, expires_at_ms, 0)
    }

    /// memcached `touch`: [`Worker::set_expiry`] that also counts as a fetch of the item (its
    /// `STATE_FETCHED` bit, memcached meta `h`).
    pub fn touch(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        expires_at_ms: Option<u64>,
    ) -> Result<Option<Option<u64>>, EngineError> {
        self.retime(tenant, key, expires_at_ms, item::STATE_FETCHED)
    }

    /// Sets a live item's expiry and state `bits`, keeping the rest (no write if nothing
    /// changes).
    fn retime(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        expires_at_ms: Option<u64>,
        bits: u8,
    ) -> Result<Option<Option<u64>>, EngineError> {
        self.update_any(tenant, key, |current, _| {
            let Some(c) = current else { return Ok(Update::Done(None)) };
            let result = Some(c.expires_at_ms);
            if c.expires_at_ms == expires_at_ms && c.state & bits == bits {
                return Ok(Update::Done(result));
            }
            let (cas, state) = (Some(c.cas), c.state | bits);
            Ok(Update::Rewrite { expires_at_ms, cas, state, result })
        })
    }

    /// Reads `key` and sets its expiry in one step (memcached `gat`, Redis `GETEX`).
    pub fn get_and_touch<R>(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        expires_at_ms: Option<u64>,
        f: impl FnOnce(Item<'_>) -> R,
    ) -> Result<Option<R>, EngineError> {
        let mut f = Some(f);
        let inner = Arc::clone(&self.inner);
        epoch::bump(&inner.epochs.counters(&self.slot).gets);
        let out = self.update(tenant, key, |current, _| {
            let Some(c) = current else { return Ok(Update::Done(None)) };
            let item = Item {
                value: c.value,
                flags: c.flags,
                expires_at_ms,
                cas: c.cas,
                state: c.state,
                idle_s: 0,
                state_cell: None,
                kind: c.kind,
            };
            let r = f.take().map(|f| f(item));
            // A fetch: the item is marked fetched (memcached's `gat` bumps it).
            if c.expires_at_ms == expires_at_ms && c.state & item::STATE_FETCHED != 0 {
                return Ok(Update::Done(r));
            }
            let (cas, state) = (Some(c.cas), c.state | item::STATE_FETCHED);
            Ok(Update::Rewrite { expires_at_ms, cas, state, result: r })
        })?;
        if out.is_some() {
            epoch::bump(&inner.epochs.counters(&self.slot).hits);
        }
        Ok(out)
    }

    /// Appends (or prepends) `data` to a live item. With `create`, a missing key is created
    /// with `data` as its value (Redis `APPEND`); without, it is left missing (memcached).
    /// Returns the new length, or `None` if nothing was stored. A result longer than
    /// `max_value_len` (or an item over `max_item_size`) is [`EngineError::TooLarge`], and the
    /// item is left as it was.
    pub fn append(
        &mut self,
        tenant: TenantId,
        key: &[u8],
        data: &[u8],
        prepend: bool,
        create: bool,
    ) -> Result<Option<usize>, EngineError> {
        let max = self.inner.config.max_value_len;
        self.update(tenant, key, |current, buf| match current {
            None if !create => Ok(Update::Done(None)),
            _ if max > 0 && current.map_or(0, |c| c.value.len()) + data.len() > max => {
                // Refused before copying anything.
                Err(EngineError::TooLarge)
            }
            None => {
                buf.extend_from_slice(data);
                Ok(Update::Write { flags: 0, expires_at_ms: None, result: Some(data.len()) })
            }
            Some(c) => {
                if prepend {
                    buf.extend_from_slice(data);
                    buf.extend_from_slice(c.value);
                } else {
                    buf.extend_from_slice(c.value);
                    buf.extend_from_slice(data);
                }
                let len = buf.len();
                Ok(Update::Write {
                    flags: c.flags,
                    expires_at_ms: c.expires_at_ms,
                    result: Some(len),
                })
            }
        })
    }

    /// Schedules a flush of every item `tenant` holds: now (`delay_ms == 0`) or when the clock
    /// reaches now + `delay_ms` (memcached `flush_all N`). A later call replaces an earlier
    /// schedule.
    pub fn flush(&mut self, tenant: TenantId, delay_ms: u64) {
        let inner = &*self.inner;
        if delay_ms == 0 {
            // memcached notes the CAS value a flush happened at; taking one keeps the two
            // servers' CAS sequences alike.
            inner.new_cas();
            inner.tenants[usize::from(tenant.0)].flush_at_ms.store(NO_FLUSH, Ordering::Relaxed);
            inner.flush_now(&self.slot, tenant, None);
        } else {
            let at = inner.now_ms().saturating_add(delay_ms);
            inner.tenants[usize::from(tenant.0)].flush_at_ms.store(at, Ordering::Relaxed);
        }
    }

    /// Drops every item of `tenant` in the selected database now (Redis `FLUSHDB`): one pass
    /// over the whole index, as a flush of the whole tenant is (it locks each root in turn,
    /// so it costs in proportion to every tenant's items, not the database's). A delayed
    /// flush of the tenant ([`Worker::flush`]) stays scheduled.
    pub fn flush_db(&mut self, tenant: TenantId) {
        let inner = &*self.inner;
        inner.new_cas();
        inner.flush_now(&self.slot, tenant, Some(self.db));
    }

    /// One step of a resumable pass over `tenant`'s live keys (Redis `SCAN`). Start with
    /// cursor 0; keys are appended to `out` until about `count` were found or the pass ends;
    /// returns the next cursor, 0 when the pass is complete. A key present for the whole pass
    /// is returned at least once, even while the cleaner moves items and the index grows.
    pub fn scan(
        &mut self,
        tenant: TenantId,
        cursor: u64,
        count: usize,
        out: &mut Vec<Vec<u8>>,
    ) -> u64 {
        self.scan_bounded(tenant, cursor, count, usize::MAX, out)
    }

    /// [`scan`](Self::scan) that visits at most `max_buckets` index buckets, so one call's
    /// work is bounded even where `tenant` owns few of the keys: it may return fewer than
    /// `count` keys, or none, with a cursor that is not 0 (as Redis's `SCAN` may).
    pub fn scan_bounded(
        &mut self,
        tenant: TenantId,
        mut cursor: u64,
        count: usize,
        max_buckets: usize,
        out: &mut Vec<Vec<u8>>,
    ) -> u64 {
        let (inner, db) = (&*self.inner, self.db);
        inner.check_flush(&self.slot, tenant);
        let guard = inner.epochs.pin(&self.slot);
        let rehash = |l| inner.rehash(&guard, l);
        let mut on_evict = |l| inner.unlinked(&guard, l);
        let target = out.len() + count.max(1);
        let now = inner.now_ms();
        for _ in 0..max_buckets.max(1) {
            cursor = inner.index.scan(&guard, cursor, &rehash, &mut on_evict, &mut |_, _, loc| {
                let rec = inner.record(&guard, loc);
                if rec.tenant() == tenant.0
                    && rec.db() == db
                    && !is_expired(inner.expires_at(&rec, loc), || now)
                {
                    out.push(rec.key().to_vec());
                }
            });
            if cursor == 0 || out.len() >= target {
                break;
            }
        }
        cursor
    }
}

/// An [`Update`] with its writes brought to one form.
enum Step<R> {
    Done(R),
    Delete(R),
    /// `carry`: state bits of the replaced record, as they are when the new one is published,
    /// that the new one takes on too.
    Write {
        flags: u32,
        expires_at_ms: Option<u64>,
        cas: Option<u64>,
        state: u8,
        carry: u8,
        kind: Kind,
        result: R,
    },
}

/// The kinds an update may see and what it writes.
#[derive(Debug, Clone, Copy)]
enum Access {
    /// Only an item of this kind is seen (another is [`EngineError::WrongKind`]); writes are
    /// of it.
    Only(Kind),
    /// An item of any kind is seen; new values are written as this kind.
    Replace(Kind),
}

impl Access {
    /// The kind a new value is written as.
    fn kind(self) -> Kind {
        match self {
            Access::Only(k) | Access::Replace(k) => k,
        }
    }
}

impl<R> Step<R> {
    /// The step `update` asks for on `current`, a new value being of `kind`; a retime copies
    /// the current value, and its kind, into `buf`.
    fn of(
        update: Update<R>,
        current: Option<Current<'_>>,
        kind: Kind,
        buf: &mut Vec<u8>,
    ) -> Step<R> {
        match (update, current) {
            (Update::Done(r), _) => Step::Done(r),
            (Update::Delete(r), _) => Step::Delete(r),
            (Update::Write { flags, expires_at_ms, result }, _) => {
                Step::Write { flags, expires_at_ms, cas: None, state: 0, carry: 0, kind, result }
            }
            (Update::WriteWith { flags, expires_at_ms, cas, state, result }, _) => {
                Step::Write { flags, expires_at_ms, cas, state, carry: 0, kind, result }
            }
            (Update::Retime { expires_at_ms, result }, Some(c)) => {
                buf.clear();
                buf.extend_from_slice(c.value);
                let (flags, cas, state, kind) = (c.flags, Some(c.cas), c.state, c.kind);
                Step::Write { flags, expires_at_ms, cas, state, carry: u8::MAX, kind, result }
            }
            (Update::Rewrite { expires_at_ms, cas, state, result }, Some(c)) => {
                buf.clear();
                buf.extend_from_slice(c.value);
                // Bits the rewrite clears stay cleared; any other a reader sets meanwhile
                // carries over.
                let carry = state | !c.state;
                let (flags, kind) = (c.flags, c.kind);
                Step::Write { flags, expires_at_ms, cas, state, carry, kind, result }
            }
            (Update::Retime { result, .. } | Update::Rewrite { result, .. }, None) => {
                Step::Done(result)
            }
        }
    }
}

/// The item an update read: its key, where it lay and its root's change counter then.
#[derive(Clone, Copy)]
struct Seen<'k> {
    tenant: TenantId,
    db: u8,
    key: &'k [u8],
    hash: u64,
    at: Loc,
    version: u64,
}

/// What an edit in place came to.
enum Edit {
    /// Written; the item's new CAS.
    Done(u64),
    /// The key changed since it was read: read it again.
    Changed,
    /// Not to be edited in place this time (it expired meanwhile, or the edit would clear a
    /// state bit other than `FETCHED`): write a new item instead.
    NotNow,
}

/// Writes an update's splice over the item it read (`crate::edit`): under the key's root
/// lock, only if nothing changed under the root since the read, and under the edit lock, which
/// keeps readers of the item's value and CAS out. `pieces`: the splice, the update's buffer and
/// the stash of the runs it moves ([`Splice::stash_moved`]; `None` where they move apart and
/// are moved where they lie, [`Splice::moves_apart`]), whose bytes make a value of the current
/// one's length. The item keeps its place, size, flags and expiry; it takes a new CAS
/// (or `cas`), the state an update would give it (`state` and, of the current bits, those in
/// `carry`), and counts as referenced now (its access stamps and read count; the caller
/// tells the eviction metadata, as for any write).
fn edit_in_place(
    inner: &Inner,
    guard: &Guard<'_>,
    seen: Seen<'_>,
    (splice, buf, stash): (&Splice, &[u8], Option<&[u8]>),
    cas: Option<u64>,
    state: u8,
    carry: u8,
) -> Edit {
    inner.maintain_index(guard);
    let locked = inner.lock_key(guard, seen.hash);
    let found = locked.find(|l| inner.key_matches(guard, l, seen.tenant, seen.db, seen.key));
    if found.map(|(_, l)| l) != Some(seen.at) || locked.cas() != seen.version {
        return Edit::Changed;
    }
    let rec = inner.record(guard, seen.at);
    if is_expired(inner.expires_at(&rec, seen.at), || inner.now_ms()) {
        return Edit::NotNow;
    }
    let before = rec.state();
    let after = state | (before & carry);
    if before & !after & !item::STATE_FETCHED != 0 {
        return Edit::NotNow;
    }
    let cas = cas.unwrap_or_else(|| inner.new_cas());
    {
        let _editing = inner.edits.edit(seen.hash);
        let stashed = stash.is_some();
        // Runs moved where they lie first: the other pieces may land on bytes they come from.
        for (place, source) in splice.moved(stashed) {
            if let Source::Current(r) = source {
                // SAFETY: the item is the key's current one, not a string (the caller checked
                // its kind), and this thread holds its root lock and its edit lock; the pieces
                // make a value of its length, so every place and run lies inside it.
                unsafe { rec.move_in_value(r.start, place, r.len()) };
            }
        }
        for (place, source) in splice.moved(stashed) {
            let bytes = match source {
                Source::Current(_) => continue,
                Source::Stash(r) => &stash.expect("a stash where runs are stashed")[r],
                Source::Buf(r) => &buf[r],
            };
            // SAFETY: as above.
            unsafe { rec.overwrite_value(place, bytes) };
        }
        // SAFETY: as above; new CAS values never pass `MAX_CAS`.
        unsafe { rec.overwrite_cas(cas) };
    }
    if after & !before != 0 {
        rec.set_state(after & !before);
    }
    if before & !after != 0 {
        rec.clear_fetched();
    }
    // The item stays where it lies rather than starting over at a head: the write counts as
    // a reference to it (its recency and, under S3-FIFO's queues, a read of its two-bit
    // count, as S3-FIFO counts every request that finds its object).
    rec.touch_access(inner.recency());
    rec.touch_touched(item::touched_stamp(inner.now_ms()));
    rec.bump_freq();
    // An update that read the item before the edit publishes nothing over it.
    locked.bump_cas();
    Edit::Done(cas)
}

/// Publishes a written item under its locked root: over the item `found` (counted as an
/// expiry when `replaced_expired`), or in a new slot (which may evict another); then the
/// accounting, the CAS bump, and — once the root is unlocked — the expiry bound.
///
/// A new slot is a new key of the tenant, counted against its `max_keys` before anything is
/// published: where the tenant holds that many, the written copy is dead and the answer is
/// [`EngineError::KeyLimit`]. An overwrite leaves the tenant's key count as it is (it
/// never dips meanwhile, so a new key elsewhere cannot take the place this key holds).
/// Every write's bytes, less those of the item it replaces, are counted against the
/// tenant's `max_bytes` the same way ([`EngineError::ByteLimit`]).
#[expect(clippy::too_many_arguments, reason = "one publish step, called from two writers")]
fn publish(
    inner: &Inner,
    guard: &Guard<'_>,
    locked: Locked<'_>,
    found: Option<(&AtomicU64, Loc)>,
    new: Loc,
    replaced_expired: bool,
    (tenant, db): (TenantId, u8),
    size: usize,
    expires_at_ms: Option<u64>,
) -> Result<(), EngineError> {
    let mut index_evicted = None;
    let freed = found.map_or(0, |(_, old)| inner.record(guard, old).size());
    let space = (size, freed);
    if let Err(e) = inner.linked(tenant, db, space, expires_at_ms, found.is_none()) {
        drop(locked);
        inner.segments.header(new.segment).add_dead(size);
        return Err(e);
    }
    match found {
        Some((slot, old_loc)) => {
            if replaced_expired {
                Counters::add(&inner.counters.expired, 1);
                let old = inner.record(guard, old_loc);
                inner.key_events.note(
                    old.tenant(),
                    old.db(),
                    crate::events::KeyEventKind::Expired,
                    old.key(),
                );
            }
            if !replaced_expired {
                inner.carry_reads(guard, old_loc, new);
            }
            inner.replaced(guard, old_loc);
            locked.replace(slot, new);
        }
        None => {
            index_evicted = locked.insert(new);
            if let Some(evicted) = index_evicted {
                // A full bucket dropped another key's slot.
                let old = inner.record(guard, evicted);
                inner.key_events.note(
                    old.tenant(),
                    old.db(),
                    crate::events::KeyEventKind::Evicted,
                    old.key(),
                );
                inner.unlinked(guard, evicted);
            }
        }
    }
    locked.bump_cas();
    drop(locked);
    inner.note_expiry(expires_at_ms);
    if let Some(evicted) = index_evicted {
        // Outside the root's lock; the record stays readable while pinned.
        inner.observe_eviction(guard, evicted);
    }
    Ok(())
}

fn current_was_expired(inner: &Inner, guard: &Guard<'_>, loc: Loc) -> bool {
    let rec = inner.record(guard, loc);
    is_expired(inner.expires_at(&rec, loc), || inner.now_ms())
}

impl Inner {
    /// With queues, an overwrite counts as an access of the key, as S3-FIFO counts a request
    /// for an object it holds: the new record, not yet published, starts with the old one's
    /// reads plus one, and at least the reads that promote it where the old one was in the
    /// main queue, so that a hot key written often keeps its place in the main queue (it is
    /// promoted again at the small queue's next pass) instead of starting over on probation.
    fn carry_reads(&self, guard: &Guard<'_>, old: Loc, new: Loc) {
        let Eviction::Queues(q) = self.config.eviction else { return };
        let mut reads = self.record(guard, old).freq() + 1;
        if self.segments.header(old.segment).queue.load(Ordering::Relaxed) == MAIN {
            reads = reads.max(q.promote_reads);
        }
        let new = self.record(guard, new);
        for _ in 0..reads.min(item::MAX_FREQ) {
            new.bump_freq();
        }
    }

    /// A free segment to become a head, cleaning or evicting as needed. The caller must not
    /// be pinned (it may wait for other readers to leave their epochs).
    fn acquire_segment(&self, slot: &Slot, queue: u8) -> Result<u32, EngineError> {
        let mut waits = 0u32;
        let mut cleans = 0;
        loop {
            if self.segments.free_count() <= self.watermark {
                self.segments.reclaim(&self.epochs);
                match self.config.cleaner {
                    CleanerMode::Inline => cleaner::clean_until_watermark(self),
                    CleanerMode::Background => self.wake_background(),
                }
            }
            if let Some(seg) = self.segments.take_free(self.now_ms(), CLEANER_RESERVE) {
                self.segments.header(seg).queue.store(queue, Ordering::Relaxed);
                self.note_segment_fill();
                return Ok(seg);
            }
            if self.segments.reclaim(&self.epochs) > 0 {
                continue;
            }
            // Nothing free. In order of preference: wait for retired segments (readers leave
            // their epochs within one operation); clean here (waiting for a pass under way,
            // if any); and only then evict a whole segment, which drops live items regardless
            // of their rank.
            if self.segments.retired_count() == 0 {
                if cleans < 2 {
                    cleans += 1;
                    cleaner::clean_until_watermark(self);
                    continue;
                }
                if cleaner::evict_oldest(self, slot) {
                    continue;
                }
            }
            // Still nothing: a pass holds its candidates, or readers hold retired segments.
            // Give up only if this lasts (then every segment is some writer's head: memory is
            // too small for the workers).
            waits += 1;
            if waits > MAX_SEGMENT_WAITS {
                return Err(EngineError::OutOfMemory);
            }
            std::thread::yield_now();
        }
    }
}

/// Appends an item to the head segment of its queue and size if that head has room: `None`
/// where there is no head or it is full (the caller then takes a new one, unpinned); the
/// item's limits are checked first. It waits for nothing, so a pinned caller may call it.
fn append_to_head(
    inner: &Inner,
    heads: &mut [Option<u32>; 4],
    item: &NewItem<'_>,
    value: &[&[u8]],
    queue: u8,
) -> Option<Result<(Loc, usize), EngineError>> {
    let value_len: usize = value.iter().map(|v| v.len()).sum();
    if item.key.len() > item::MAX_KEY_LEN {
        return Some(Err(EngineError::KeyTooLong));
    }
    // The record is 8 bytes longer in a segment where the expiry needs its wide field;
    // the item limit is judged on the compact form, the segment's room on the widest. (An
    // item without an expiry has one length whatever the time: the clock is not read.)
    let now_ms = if item.expires_at_ms.is_some() { inner.now_ms() } else { 0 };
    let size = item.record_len(now_ms) + value_len;
    if size > inner.config.max_item_size
        || item.max_record_len() + value_len > inner.config.segment_size
        || !inner.value_fits(value_len)
    {
        return Some(Err(EngineError::TooLarge));
    }
    let large = value_len >= inner.config.large_value_threshold;
    let seg = heads[usize::from(queue) * 2 + usize::from(large)]?;
    inner.append_to(seg, item, value).map(Ok)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::publish;
    use crate::clock::{Clock, ManualClock};
    use crate::hash::key_hash_in;
    use crate::item::{self, Kind, NewItem};
    use crate::ops::{Expiry, Store};
    use crate::tenant::TenantId;
    use crate::{CleanerMode, Engine, EngineConfig};

    const T: TenantId = TenantId(0);

    /// A store writes its record before an expiry pass begins and links it after the pass
    /// has gone by its root, so the pass neither sees it nor learns its expiry for the head
    /// segment. The next pass must read that segment all the same (`crate::expiry`).
    #[test]
    fn an_item_linked_behind_a_pass_is_swept_by_the_next() {
        let config = EngineConfig {
            max_memory: 1 << 20,
            segment_size: 64 << 10,
            max_item_size: 64 << 10,
            cleaner: CleanerMode::Inline,
            ..EngineConfig::default()
        };
        let clock = Arc::new(ManualClock::new(1_000_000));
        let engine = Engine::with_clock(config, clock.clone()).unwrap();
        let mut w = engine.worker().unwrap();
        let now = clock.now_ms();
        let at = |ms| Expiry::At(now + ms);
        w.store(Store { expiry: at(100_000), ..Store::new(T, b"late", b"v") }).unwrap();
        w.store(Store { expiry: at(1), ..Store::new(T, b"soon", b"v") }).unwrap();
        // `behind` is written into the same head, unlinked.
        let key = b"behind";
        let item = NewItem {
            tenant: T.0,
            db: 0,
            key,
            flags: 0,
            expires_at_ms: Some(now + 50),
            cas: engine.inner().new_cas(),
            access: engine.inner().recency(),
            state: 0,
            touched: item::touched_stamp(now),
            freq: 0,
            kind: Kind::STRING,
        };
        let hash = key_hash_in(T, 0, key);
        let queue = engine.inner().queue_for_write(hash, 7);
        let (new, size) = w.write_item(&item, &[b"v"], queue).unwrap();
        // A whole pass: `soon` goes; the head's earliest live expiry seen is `late`'s.
        clock.advance(2);
        assert_eq!(engine.reclaim_expired(), 1);
        // Now the store links its item.
        {
            let inner = engine.inner();
            let guard = inner.epochs.pin(&w.slot);
            let locked = inner.lock_key(&guard, hash);
            assert!(locked.find(|_| true).is_none());
            publish(inner, &guard, locked, None, new, false, (T, 0), size, item.expires_at_ms)
                .unwrap();
        }
        assert!(w.contains(T, key));
        clock.set(now + 60);
        assert_eq!(engine.reclaim_expired(), 1, "the next pass reads the head and finds it");
        assert_eq!((engine.item_count(T), engine.expiring_count(T)), (1, 1), "`late` stays");
        engine.validate();
    }
}
