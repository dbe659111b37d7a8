//! The search lookaside buffer (SLB; Wu et al., "Search Lookaside Buffer", SoCC '17, §3): a
//! small table of the hottest lookups' results, consulted before the index, so that a hot key
//! costs one line of a table that stays in the CPU cache instead of its index bucket, whose
//! other six slots are cold keys (the paper's "false spatial locality", §2.2).
//!
//! ```text
//! cache bucket (64 B):  │ slot │ slot │ slot │ slot │ slot │ slot │ slot │ counters │
//!
//! slot (u64):           │ 63 .... 48 │ 47 ........................ 0 │   (0 = empty)
//!                       │ DISCRIMINANT │ the index slot's location bits │
//!
//! counters (u64):       │ byte 7: unused │ bytes 6..0: one per slot │
//!
//! log bucket (64 B):    │ head │ 15 four-byte tags, a circular log │
//! ```
//!
//! **Choosing a bucket by the index tag.** A key's cache bucket is chosen by its 16-bit index
//! tag, and a slot keeps the location bits of the key's index slot. So whoever changes an
//! index slot can find the SLB entry that names it from the slot alone, without the key or its
//! hash: that is what lets [`super::Locked`] keep the SLB true for every change, scans and
//! migrations included. A slot's top 16 bits are other hash bits (the discriminant), compared
//! on lookup before the key is. Since the tag chooses the bucket, the table has at most 2¹⁶
//! buckets (4 MiB, 458,752 entries) — more than a CPU cache, which is where an SLB belongs.
//!
//! **Replacement** (§3.3.1): a hit adds one to its slot's counter; a counter at 255 instead
//! takes one from another non-zero counter of the bucket, so relative temperatures stay
//! within the line. An admitted key replaces the slot with the smallest counter. Departure:
//! one hit in eight is counted, not every one — the engine never writes a hot key's record
//! on a read that changes nothing, and a counter written on every hit would make the SLB line
//! the one line that every core writes.
//!
//! **Admission** (§3.3.2–3.3.3): an index hit that missed the SLB is logged — a 4-byte tag
//! appended to the circular log of its log bucket (the log table has four times the cache
//! table's buckets) — and the key is admitted once its tag occurs three times in that log.
//! Logging is sampled (one hit in 20) once the key's cache bucket is full; while it has an
//! empty slot the key is admitted at once (the paper lifts sampling until the table is full;
//! here a bucket is the unit).
//!
//! **Consistency** (§3.1.2–3.1.3). The invariant: *a slot names a location only while the
//! index maps a key with the slot's tag to it.* Entries are added only under the key's root
//! lock, after seeing the index hold the location ([`super::Index::admit`]); every change of
//! an index slot happens under its root's lock and takes the slot's entry out first
//! ([`Slb::take`]), then, for a relocation or an overwrite, puts the new location in its place
//! after publishing it ([`Slb::put_back`]). So a reader never finds in the SLB a location the
//! index no longer has — which the epoch rule needs, since a segment is retired once the index
//! stops naming it — and never an older value than the index gives (taking the entry out
//! before the index changes, not after, keeps reads linearizable). The root lock is the
//! paper's per-key SLB lock: no lock of the SLB's own.
//!
//! Costs: the cache table's bytes plus four times as many for the log table; both are counted
//! in the index's overhead. One hit in eight writes its bucket's counter word.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::{Loc, TAG_SHIFT};
use crate::arena::Mapping;
use crate::hash::tag_of;

/// Slots per cache bucket.
const SLOTS: usize = 7;
/// Tags per log bucket (word 0 is the log's head).
const LOG_ENTRIES: usize = 15;
/// Log buckets per cache bucket (SLB §3.3.3: four times the cache table).
const LOG_RATIO: usize = 4;
/// Sightings in a log that admit a key (SLB §3.3.2).
const ADMIT_AFTER: usize = 3;
/// One index hit in this many is logged once the key's bucket is full (SLB §3.3.3: 5%).
const SAMPLE_ONE_IN: u32 = 20;
/// Lookups a reader counts before it decides again whether the SLB pays.
const WINDOW: u32 = 1024;
/// Hits per [`WINDOW`] below which a reader goes to the index directly: a miss costs about
/// a fifth of what a hit saves (`docs/design.md`, "The SLB"), so below a fifth of lookups
/// hitting the SLB costs more than it saves.
const PAYS_FROM: u32 = WINDOW / 5;
/// While bypassing, one lookup in this many still goes through the SLB, to notice when it
/// would pay again (and to go on admitting hot keys).
const BYPASS_PROBE_ONE_IN: u32 = 32;
/// One hit in this many warms its slot's counter: a counter is written by every reader of a
/// hot key, and a line that every core writes on every hit would bounce between their
/// caches; sampled, the counters keep their order (SLB §3.3.1 counts every hit).
const WARM_ONE_IN: u32 = 8;
/// The most cache buckets: the 16-bit tag chooses the bucket.
const MAX_BUCKETS: usize = 1 << 16;
/// The largest cache table, in bytes.
pub const MAX_BYTES: usize = MAX_BUCKETS * 64;
/// The location bits of a slot (the index slot's segment and offset).
const LOC_BITS: u64 = (1 << TAG_SHIFT) - 1;

#[repr(C, align(64))]
struct CacheBucket {
    slots: [AtomicU64; SLOTS],
    counters: AtomicU64,
}

#[repr(C, align(64))]
struct LogBucket {
    head: AtomicU32,
    tags: [AtomicU32; LOG_ENTRIES],
}

const _: () = assert!(std::mem::size_of::<CacheBucket>() == 64);
const _: () = assert!(std::mem::size_of::<LogBucket>() == 64);

/// One reader's SLB state: its random state for sampling, and whether the SLB pays for the
/// lookups it makes. A reader (a worker) whose recent lookups hit the SLB less than a fifth of
/// the time goes to the index directly, but for one lookup in 32 that goes through the SLB as
/// before and keeps the count; so a workload without hot keys costs the SLB almost nothing,
/// and the SLB comes back when keys get hot.
#[derive(Debug, Clone)]
pub struct SlbProbe {
    rng: u32,
    lookups: u32,
    hits: u32,
    bypass: bool,
}

impl Default for SlbProbe {
    fn default() -> Self {
        SlbProbe { rng: 0x2545_f491, lookups: 0, hits: 0, bypass: false }
    }
}

impl SlbProbe {
    /// Whether this lookup goes through the SLB.
    #[inline]
    pub(crate) fn consults(&mut self) -> bool {
        !self.bypass || self.next_random() % BYPASS_PROBE_ONE_IN == 0
    }

    /// Counts a lookup made through the SLB; at the end of a window decides whether the SLB
    /// pays.
    #[inline]
    pub(crate) fn counted(&mut self, hit: bool) {
        self.lookups += 1;
        self.hits += u32::from(hit);
        if self.lookups == WINDOW {
            self.bypass = self.hits < PAYS_FROM;
            self.lookups = 0;
            self.hits = 0;
        }
    }

    /// Whether this reader goes to the index directly, but for its sampled lookups.
    pub(crate) fn bypassing(&self) -> bool {
        self.bypass
    }

    /// Xorshift32.
    #[inline]
    fn next_random(&mut self) -> u32 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        x
    }
}

/// The SLB's two tables.
pub(crate) struct Slb {
    cache: Mapping,
    cache_mask: usize,
    log: Mapping,
    log_mask: usize,
    /// Keys admitted (counted for stats; admissions are rare).
    admissions: AtomicU64,
}

impl std::fmt::Debug for Slb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slb").field("buckets", &(self.cache_mask + 1)).finish_non_exhaustive()
    }
}

/// The discriminant: hash bits that neither the bucket (the tag) nor the index root (the low
/// bits) use.
#[inline]
const fn discriminant(hash: u64) -> u64 {
    (hash >> 32) & 0xffff
}

/// The log's 4-byte tag of `hash` (never 0, which an empty entry holds).
#[inline]
const fn log_tag(hash: u64) -> u32 {
    (hash >> 20) as u32 | 1
}

impl Slb {
    /// An SLB of at most `bytes` of cache table (rounded down to a power of two of buckets, at
    /// most [`MAX_BUCKETS`]); `None` for less than one bucket or if the tables cannot be
    /// mapped.
    pub(crate) fn new(bytes: usize) -> Option<Slb> {
        let buckets = bytes / 64;
        if buckets == 0 {
            return None;
        }
        let buckets = (1usize << buckets.ilog2()).min(MAX_BUCKETS);
        let cache = Mapping::new(buckets * 64).ok()?;
        let log = Mapping::new(buckets * LOG_RATIO * 64).ok()?;
        Some(Slb {
            cache,
            cache_mask: buckets - 1,
            log,
            log_mask: buckets * LOG_RATIO - 1,
            admissions: AtomicU64::new(0),
        })
    }

    /// Bytes of both tables.
    pub(crate) fn bytes(&self) -> usize {
        (self.cache_mask + 1) * 64 * (1 + LOG_RATIO)
    }

    /// Keys admitted so far.
    pub(crate) fn admissions(&self) -> u64 {
        self.admissions.load(Ordering::Relaxed)
    }

    #[inline]
    fn bucket(&self, tag: u16) -> &CacheBucket {
        let i = tag as usize & self.cache_mask;
        // SAFETY: the cache mapping is page-aligned, zero-filled and `cache_mask + 1` buckets
        // long, `i` is within it, an all-zero bucket is valid (atomics only), and the
        // reference borrows `self`, which owns the mapping.
        unsafe { &*self.cache.as_ptr().cast::<CacheBucket>().add(i) }
    }

    #[inline]
    fn log_bucket(&self, hash: u64) -> &LogBucket {
        let i = hash as usize & self.log_mask;
        // SAFETY: as in `bucket`: the log mapping is zeroed, aligned, `log_mask + 1` buckets
        // long and owned by `self`; `i` is within it.
        unsafe { &*self.log.as_ptr().cast::<LogBucket>().add(i) }
    }

    /// The location of `hash`'s key if it is cached: the first slot whose discriminant
    /// matches and whose location `is_key` accepts. One hit in [`WARM_ONE_IN`] warms its slot.
    #[inline]
    pub(crate) fn find(
        &self,
        hash: u64,
        is_key: &mut impl FnMut(Loc) -> bool,
        probe: &mut SlbProbe,
    ) -> Option<Loc> {
        let (i, loc) = self.slot_of(hash, is_key)?;
        if probe.next_random() % WARM_ONE_IN == 0 {
            warm(self.bucket(tag_of(hash)), i, hash);
        }
        Some(loc)
    }

    /// [`Slb::find`] without warming: what a lookup would find (the simulator's memory
    /// model).
    pub(crate) fn peek(&self, hash: u64, is_key: &mut impl FnMut(Loc) -> bool) -> Option<Loc> {
        self.slot_of(hash, is_key).map(|(_, loc)| loc)
    }

    /// The slot and location of `hash`'s key: the first slot whose discriminant matches and
    /// whose location `is_key` accepts.
    #[inline]
    fn slot_of(&self, hash: u64, is_key: &mut impl FnMut(Loc) -> bool) -> Option<(usize, Loc)> {
        let disc = discriminant(hash);
        self.bucket(tag_of(hash)).slots.iter().enumerate().find_map(|(i, slot)| {
            let s = slot.load(Ordering::Acquire);
            (s != 0 && s >> TAG_SHIFT == disc && is_key(Loc::unpack(s)))
                .then(|| (i, Loc::unpack(s)))
        })
    }

    /// The address of the cache bucket a lookup of `hash` reads.
    pub(crate) fn bucket_addr(&self, hash: u64) -> usize {
        std::ptr::from_ref(self.bucket(tag_of(hash))) as usize
    }

    /// Notes an index hit on `hash`'s key that the SLB missed; returns whether the key is to
    /// be admitted. `probe` is the caller's own state.
    #[inline]
    pub(crate) fn sighted(&self, hash: u64, probe: &mut SlbProbe) -> bool {
        let bucket = self.bucket(tag_of(hash));
        if bucket.slots.iter().any(|s| s.load(Ordering::Relaxed) == 0) {
            return true;
        }
        if probe.next_random() % SAMPLE_ONE_IN != 0 {
            return false;
        }
        // The log is approximate by design: racing appends may lose an entry.
        let log = self.log_bucket(hash);
        let tag = log_tag(hash);
        let head = log.head.load(Ordering::Relaxed) as usize % LOG_ENTRIES;
        log.head.store(((head + 1) % LOG_ENTRIES) as u32, Ordering::Relaxed);
        log.tags[head].store(tag, Ordering::Relaxed);
        log.tags.iter().filter(|t| t.load(Ordering::Relaxed) == tag).count() >= ADMIT_AFTER
    }

    /// Caches `loc` for `hash`'s key. The caller MUST hold the key's root lock and have seen
    /// the index map the key to `loc` under it. Takes an empty slot, else the coldest; gives
    /// up if another key's admission takes the slot first.
    pub(crate) fn insert(&self, hash: u64, loc: Loc) {
        let bucket = self.bucket(tag_of(hash));
        let bits = loc.pack(0) & LOC_BITS;
        let mut victim = 0;
        let mut coldest = u64::MAX;
        let counters = bucket.counters.load(Ordering::Relaxed);
        for (i, slot) in bucket.slots.iter().enumerate() {
            let s = slot.load(Ordering::Relaxed);
            if s & LOC_BITS == bits {
                return;
            }
            let heat = if s == 0 { 0 } else { 1 + (counters >> (8 * i) & 0xff) };
            if heat < coldest {
                (victim, coldest) = (i, heat);
            }
        }
        let current = bucket.slots[victim].load(Ordering::Relaxed);
        let new = discriminant(hash) << TAG_SHIFT | bits;
        if bucket.slots[victim]
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            let counters = bucket.counters.load(Ordering::Relaxed);
            bucket.counters.store(counters & !(0xff << (8 * victim)), Ordering::Relaxed);
            self.admissions.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Takes out the entry naming the location of `index_slot` (an index slot's value about
    /// to change), if any; returns what [`Slb::put_back`] needs. The caller MUST hold the
    /// root lock of the slot's tree.
    #[inline]
    pub(crate) fn take(&self, index_slot: u64) -> Option<Taken> {
        if index_slot == 0 {
            return None;
        }
        let bucket = self.bucket((index_slot >> TAG_SHIFT) as u16);
        let bits = index_slot & LOC_BITS;
        for (i, slot) in bucket.slots.iter().enumerate() {
            let s = slot.load(Ordering::Relaxed);
            if s != 0
                && s & LOC_BITS == bits
                && slot.compare_exchange(s, 0, Ordering::AcqRel, Ordering::Relaxed).is_ok()
            {
                return Some(Taken { slot: i, disc: s >> TAG_SHIFT });
            }
        }
        None
    }

    /// Puts an entry taken out by [`Slb::take`] back, naming the location of `index_slot`
    /// (the key's slot after the change, published), unless its slot was taken meanwhile.
    #[inline]
    pub(crate) fn put_back(&self, taken: Taken, index_slot: u64) {
        let bucket = self.bucket((index_slot >> TAG_SHIFT) as u16);
        let new = taken.disc << TAG_SHIFT | index_slot & LOC_BITS;
        let _ =
            bucket.slots[taken.slot].compare_exchange(0, new, Ordering::AcqRel, Ordering::Relaxed);
    }

    /// Calls `f(fits, loc)` for every cached location, where `fits(hash)` says whether the
    /// entry is where a key of that hash would be cached (its bucket and discriminant).
    pub(crate) fn for_each_entry(&self, mut f: impl FnMut(&dyn Fn(u64) -> bool, Loc)) {
        for b in 0..=self.cache_mask {
            // Buckets are chosen by the tag's low bits: `b` is such a tag.
            for slot in &self.bucket(b as u16).slots {
                let s = slot.load(Ordering::Relaxed);
                if s != 0 {
                    let fits = |hash: u64| {
                        tag_of(hash) as usize & self.cache_mask == b
                            && discriminant(hash) == s >> TAG_SHIFT
                    };
                    f(&fits, Loc::unpack(s));
                }
            }
        }
    }

    /// Every cached location (tests).
    #[cfg(test)]
    fn entries(&self) -> Vec<Loc> {
        let mut all = Vec::new();
        self.for_each_entry(|_, loc| all.push(loc));
        all
    }

    /// The bucket a tag chooses (tests).
    #[cfg(test)]
    fn bucket_of(&self, tag: u16) -> usize {
        tag as usize & self.cache_mask
    }
}

/// An entry [`Slb::take`] took out: its slot and discriminant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Taken {
    slot: usize,
    disc: u64,
}

/// Adds one to slot `i`'s counter, or at 255 takes one from another non-zero counter of the
/// bucket, chosen from the hash's bits (SLB §3.3.1). Racing hits may lose a count.
#[inline]
fn warm(bucket: &CacheBucket, i: usize, hash: u64) {
    let c = bucket.counters.load(Ordering::Relaxed);
    let mine = c >> (8 * i) & 0xff;
    if mine < 255 {
        bucket.counters.store(c + (1 << (8 * i)), Ordering::Relaxed);
        return;
    }
    let start = (hash >> 8) as usize;
    for k in 0..SLOTS {
        let j = (start + k) % SLOTS;
        if j != i && c >> (8 * j) & 0xff != 0 {
            bucket.counters.store(c - (1 << (8 * j)), Ordering::Relaxed);
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(tag: u16, disc: u16, low: u32) -> u64 {
        u64::from(tag) << 48 | u64::from(disc) << 32 | u64::from(low)
    }

    fn loc(segment: u32, offset: u32) -> Loc {
        Loc { segment, offset }
    }

    fn probe() -> SlbProbe {
        SlbProbe::default()
    }

    #[test]
    fn a_cached_location_is_found_by_its_hash_and_the_key_check() {
        let slb = Slb::new(64 * 16).unwrap();
        let h = hash(0x1234, 7, 99);
        slb.insert(h, loc(3, 640));
        assert_eq!(slb.find(h, &mut |_| true, &mut probe()), Some(loc(3, 640)));
        assert_eq!(slb.find(h, &mut |_| false, &mut probe()), None, "the key check decides");
        let other_disc = hash(0x1234, 8, 99);
        assert_eq!(slb.find(other_disc, &mut |_| true, &mut probe()), None, "another discriminant");
        slb.insert(h, loc(3, 640));
        assert_eq!(slb.entries().len(), 1, "inserted once");
    }

    #[test]
    fn taking_an_index_slots_entry_out_and_putting_it_back_follows_the_key() {
        let slb = Slb::new(64 * 16).unwrap();
        let h = hash(0xbeef, 1, 5);
        let (old, new) = (loc(1, 64), loc(9, 128));
        slb.insert(h, old);
        let taken = slb.take(old.pack(tag_of(h))).expect("cached");
        assert_eq!(
            slb.find(h, &mut |_| true, &mut probe()),
            None,
            "taken out before the index changes"
        );
        slb.put_back(taken, new.pack(tag_of(h)));
        assert_eq!(slb.find(h, &mut |_| true, &mut probe()), Some(new));
        assert!(slb.take(old.pack(tag_of(h))).is_none(), "the old location is gone");
        assert!(slb.take(0).is_none());
    }

    #[test]
    fn a_full_bucket_replaces_its_coldest_entry() {
        let slb = Slb::new(64).unwrap();
        let hashes: Vec<u64> = (0..SLOTS as u16).map(|i| hash(i, i + 1, 0)).collect();
        for (i, &h) in hashes.iter().enumerate() {
            slb.insert(h, loc(i as u32, 0));
        }
        // Warm every entry but the fourth (one hit in eight warms: 200 hits are about 25).
        let mut reader = probe();
        for (i, &h) in hashes.iter().enumerate() {
            if i != 3 {
                for _ in 0..200 {
                    assert!(slb.find(h, &mut |_| true, &mut reader).is_some());
                }
            }
        }
        let newcomer = hash(100, 100, 0);
        slb.insert(newcomer, loc(50, 0));
        assert_eq!(slb.find(hashes[3], &mut |_| true, &mut probe()), None, "the cold entry went");
        assert_eq!(slb.find(newcomer, &mut |_| true, &mut probe()), Some(loc(50, 0)));
        for (i, &h) in hashes.iter().enumerate().filter(|&(i, _)| i != 3) {
            assert_eq!(
                slb.find(h, &mut |_| true, &mut probe()),
                Some(loc(i as u32, 0)),
                "warm entry {i}"
            );
        }
    }

    #[test]
    fn a_saturated_counter_cools_its_neighbours_instead() {
        let slb = Slb::new(64).unwrap();
        let (a, b) = (hash(1, 1, 0), hash(2, 2, 0));
        slb.insert(a, loc(1, 0));
        slb.insert(b, loc(2, 0));
        // An empty bucket fills from its first slot: `a` in slot 0, `b` in slot 1.
        let bucket = slb.bucket(0);
        warm(bucket, 1, b);
        for _ in 0..300 {
            warm(bucket, 0, a);
        }
        let c = slb.bucket(0).counters.load(Ordering::Relaxed);
        assert_eq!(c & 0xff, 255, "a's counter saturated");
        assert_eq!(c >> 8 & 0xff, 0, "b's counter was taken down instead of a's going up");
    }

    #[test]
    fn a_key_is_admitted_at_once_into_room_and_after_three_sampled_sightings_when_full() {
        let slb = Slb::new(64).unwrap();
        let h = hash(9, 9, 77);
        let mut sampler = SlbProbe::default();
        assert!(slb.sighted(h, &mut sampler), "an empty bucket admits at once");
        for i in 0..SLOTS as u16 {
            slb.insert(hash(i, i + 1, 0), loc(u32::from(i), 0));
        }
        let mut sightings = 0;
        while !slb.sighted(h, &mut sampler) {
            sightings += 1;
            assert!(sightings < 10_000, "admitted eventually");
        }
        // Three logged sightings at one in 20: around 60; far more than 3 and far fewer than
        // a thousand for any reasonable sampler.
        assert!((3..1000).contains(&sightings), "{sightings} sightings");
    }

    #[test]
    fn a_reader_bypasses_an_slb_that_rarely_hits_and_comes_back_when_it_would() {
        let mut probe = SlbProbe::default();
        for _ in 0..WINDOW {
            assert!(probe.consults(), "every lookup goes through the SLB at first");
            probe.counted(false);
        }
        assert!(probe.bypassing());
        let consulted = (0..32 * WINDOW).filter(|_| probe.consults()).count();
        assert!((512..2048).contains(&consulted), "about one in 32: {consulted}");
        // Hot keys: the sampled lookups hit.
        for _ in 0..WINDOW {
            probe.counted(true);
        }
        assert!(!probe.bypassing(), "back through the SLB");
        for i in 0..WINDOW {
            probe.counted(i < PAYS_FROM);
        }
        assert!(!probe.bypassing(), "a fifth of lookups hitting still pays");
    }

    #[test]
    fn tables_are_sized_in_whole_buckets_up_to_the_tags_reach() {
        assert!(Slb::new(63).is_none());
        assert_eq!(Slb::new(64 * 100).unwrap().cache_mask + 1, 64);
        assert_eq!(Slb::new(1 << 30).unwrap().cache_mask + 1, MAX_BUCKETS);
        assert_eq!(Slb::new(64 * 64).unwrap().bytes(), 64 * 64 * 5);
        assert_eq!(Slb::new(64).unwrap().bucket_of(0x1234), 0);
    }
}
