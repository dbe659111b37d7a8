//! The hitmap: compact access-frequency metadata (Catalyst §3.1).
//!
//! Instead of per-item recency lists, accesses are recorded in `M` levels of Bloom-like bit
//! arrays ("hash counters"). A key is marked in a level when all its bit positions there are
//! set. An access marks the lowest level where the key is not yet marked (Algorithm 2), so a
//! key marked up to level `m` has been accessed at least `m` times since it last cooled down:
//! the highest such level is its temperature *zone* (0 = cold … `M` = hot).
//!
//! ```text
//!  level M  ████████████████████████████████  (2^(M−1) × level-1 bits)
//!  …
//!  level 2  ████████████████
//!  level 1  ████████          set counter ████████   (SETs since the last compaction)
//! ```
//!
//! **Inverted pyramid** (§3.1.3): each level is twice the size of the one below. A key's bit
//! positions are derived once from its hash as 64-bit numbers; each level uses them modulo its
//! size (a power of two). So position `p` in level `m` and position `p mod size(m−1)` in level
//! `m−1` belong to the same keys, and **rolling compaction** (§3.1.4, Algorithm 1) can move
//! level `m` down by OR-ing its two halves, without rehashing anything: every key loses one
//! level, the top level is cleared, and history is kept. It runs when fewer than 5% of keys
//! would test unmarked at level 1 (level 1 is too full to tell hot from cold); the fill rate
//! is counted exactly as bits are set ([`Hitmap::saturated`]).
//!
//! **New items and zombies** (§3.1.5–6): a SET that marks level 1 also marks the *set
//! counter*, which compaction merges into the new level 1 and then clears. A new item thus
//! survives one compaction without being read; an item still unmarked everywhere after the
//! next one was never read again since it was stored — a zombie, evicted first.
//!
//! Hash counters never have false negatives (a marked key stays marked until compaction); they
//! have false positives, which grow with the fill rate — the reason for compaction.
//!
//! **A pool is one step** ([`Hitmap::record_pool`]): the zones of a reference pool's keys
//! are read before any of its marks are made, and a key that occurs `k` times in the pool
//! climbs `k` levels from its zone. Every mark is an OR of bits chosen from that snapshot and
//! from the pool's multiset of keys, so the order of the digests inside a pool cannot change
//! the result — the property that lets a GPU apply a pool with thousands of threads at once
//! and still match this code bit for bit (`metadata/gpu.rs`). One access at a time
//! ([`Hitmap::record`], Algorithm 2 as written) differs only where two keys of one pool share
//! bits: there a key's mark could raise another's zone within the pool.
//!
//! Costs: `M` levels plus the set counter take `2^M` times level 1's bits (16 × for `M` = 4).
//! An update touches up to `M × 3` bits; a zone query likewise.

use crate::arena::Words;

/// Bit positions per key in each level.
const POSITIONS: usize = 3;
/// How far ahead [`Hitmap::record_batch`] prefetches.
const PREFETCH_DISTANCE: usize = 8;
/// Default number of levels (Catalyst §4.3).
pub const DEFAULT_LEVELS: usize = 4;
/// Compaction runs when fewer than this fraction of sampled keys are unmarked at level 1.
pub const COMPACTION_THRESHOLD: f64 = 0.05;

/// A bit array whose length is a power of two, in a mapping advised for transparent huge
/// pages ([`Words`]): a pool's keys mark random blocks of every level, and in 4 KiB pages
/// each of those misses missed the TLB too (`docs/benchmarks.md`, "Hitmap digest updates per
/// second").
#[derive(Debug)]
struct Bits {
    words: Words,
    mask: u64,
}

impl Bits {
    fn new(bits: usize) -> std::io::Result<Bits> {
        debug_assert!(bits.is_power_of_two() && bits >= 64);
        Ok(Bits { words: Words::zeroed(bits / 64)?, mask: bits as u64 - 1 })
    }

    fn try_clone(&self) -> std::io::Result<Bits> {
        Ok(Bits { words: self.words.try_clone()?, mask: self.mask })
    }

    #[inline]
    fn get(&self, p: u64) -> bool {
        let i = p & self.mask;
        self.words[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    #[inline]
    fn set(&mut self, p: u64) {
        let i = p & self.mask;
        self.words[(i / 64) as usize] |= 1 << (i % 64);
    }

    fn marked(&self, positions: &[u64; POSITIONS]) -> bool {
        positions.iter().all(|&p| self.get(p))
    }

    fn mark(&mut self, positions: &[u64; POSITIONS]) {
        positions.iter().for_each(|&p| self.set(p));
    }

    /// Marks the positions; returns how many bits were newly set.
    fn mark_counting(&mut self, positions: &[u64; POSITIONS]) -> u64 {
        let mut new = 0;
        for &p in positions {
            new += u64::from(!self.get(p));
            self.set(p);
        }
        new
    }

    /// Overwrites this array, half the size of `above`, with `above` folded: bit `j` becomes
    /// bit `j` OR bit `j + len/2` of `above`. In place, so a compaction maps nothing.
    fn fold_from(&mut self, above: &Bits) {
        let half = above.words.len() / 2;
        assert_eq!(self.words.len(), half, "a level folds into the one below it");
        let (low, high) = above.words.split_at(half);
        for ((w, a), b) in self.words.iter_mut().zip(low).zip(high) {
            *w = a | b;
        }
    }

    #[inline]
    fn prefetch(&self, p: u64) {
        let i = p & self.mask;
        crate::index::prefetch(&self.words[(i / 64) as usize]);
    }

    fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }

    fn ones(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }
}

/// The three bit positions of a key, from its 32-bit access digest (the SET bit, bit 0, is
/// ignored). They are the same in every level, taken modulo the level's size.
///
/// The three share one 512-bit block (a cache line): a *blocked* Bloom filter, so that marking
/// or testing a key costs one cache miss per level instead of three. Folding keeps blocks
/// whole (bit `j` of a block maps to bit `j` of the block `b mod half`), so rolling compaction
/// is unchanged. Measured with `cargo bench -p fridge-engine --bench hitmap_update`: see
/// `docs/benchmarks.md`.
#[inline]
pub fn positions(digest: u32) -> [u64; POSITIONS] {
    let d = u64::from(digest >> 1);
    let h = (d ^ 0xD6E8_FEB8_6659_FD93).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let h = (h ^ h >> 29).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let h = h ^ h >> 32;
    // High bits choose the block, three 9-bit fields of the low bits the bits within it.
    let block = h >> 27 << BLOCK_SHIFT;
    [block | h & BLOCK_MASK, block | h >> 9 & BLOCK_MASK, block | h >> 18 & BLOCK_MASK]
}

/// Bits per block: one 64-byte cache line.
const BLOCK_SHIFT: u32 = 9;
const BLOCK_MASK: u64 = (1 << BLOCK_SHIFT) - 1;

/// Level 1's bits as [`Hitmap::new`] rounds them: a power of two, at least one block.
pub(crate) fn round_level1(bits: usize) -> usize {
    bits.next_power_of_two().max(1 << BLOCK_SHIFT)
}

/// The bits [`Hitmap::for_items`] asks level 1 for: the budget over `2^levels` (levels and
/// set counter together are `2^levels` times level 1).
pub(crate) fn level1_bits(items: usize, bits_per_item: usize, levels: usize) -> usize {
    let total_bits = items.max(1).saturating_mul(bits_per_item.max(1));
    (total_bits >> levels.max(1)).max(64)
}

/// The fewest set bits of a level 1 of `bits` bits at which fewer than
/// [`COMPACTION_THRESHOLD`] (5%) of keys test unmarked: `1 − fill³ < 0.05`, i.e.
/// `20 · ones³ > 19 · bits³`, in exact integers, so that a GPU takes the same decision as
/// this code (a floating-point cube can round differently where a compiler fuses it).
pub(crate) fn saturation_ones(bits: u64) -> u64 {
    let over = |ones: u64| 20 * u128::from(ones).pow(3) > 19 * u128::from(bits).pow(3);
    // The least `ones` in 0..=bits that is over (`bits` itself is: 20 > 19).
    let (mut lo, mut hi) = (0u64, bits);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if over(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The hitmap.
#[derive(Debug)]
pub struct Hitmap {
    /// `levels[0]` is level 1.
    levels: Vec<Bits>,
    set_counter: Bits,
    compactions: u64,
    /// Set bits in level 1 (kept as they are set, for the fill-rate trigger).
    level1_ones: u64,
    /// [`saturation_ones`] of level 1, computed once.
    saturate_at: u64,
    /// [`Hitmap::record_pool`]'s table of a pool's keys and its used slots, kept to avoid
    /// allocating.
    scratch: Vec<u64>,
    used: Vec<u32>,
}

/// A hitmap's footprint and fill.
#[derive(Debug, Clone, PartialEq)]
pub struct HitmapStats {
    /// Bytes of all levels and the set counter.
    pub bytes: usize,
    /// Completed compactions.
    pub compactions: u64,
    /// Fraction of set bits, per level (level 1 first).
    pub fill: Vec<f64>,
}

impl Hitmap {
    /// A hitmap of `levels` levels whose level 1 has `level1_bits` bits (rounded up to a power
    /// of two, at least one 512-bit block); an error if its levels cannot be mapped.
    pub fn new(level1_bits: usize, levels: usize) -> std::io::Result<Hitmap> {
        let base = round_level1(level1_bits);
        let levels = levels.clamp(1, 64);
        Ok(Hitmap {
            saturate_at: saturation_ones(base as u64),
            levels: (0..levels).map(|m| Bits::new(base << m)).collect::<Result<_, _>>()?,
            set_counter: Bits::new(base)?,
            compactions: 0,
            level1_ones: 0,
            scratch: Vec::new(),
            used: Vec::new(),
        })
    }

    /// A hitmap for about `items` items at `bits_per_item` bits of metadata each (all levels
    /// and the set counter together), with `levels` levels. Level 1 is rounded up to a power
    /// of two, so the footprint is within twice the budget. An error if it cannot be mapped.
    pub fn for_items(items: usize, bits_per_item: usize, levels: usize) -> std::io::Result<Hitmap> {
        Hitmap::new(level1_bits(items, bits_per_item, levels), levels)
    }

    /// A copy of the hitmap (benchmarks start each run from one); an error if it cannot be
    /// mapped.
    pub fn try_clone(&self) -> std::io::Result<Hitmap> {
        Ok(Hitmap {
            levels: self.levels.iter().map(Bits::try_clone).collect::<Result<_, _>>()?,
            set_counter: self.set_counter.try_clone()?,
            scratch: Vec::new(),
            used: Vec::new(),
            ..*self
        })
    }

    /// Number of levels (`M`).
    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// Records one access (Algorithm 2): marks the lowest level where the key is not marked;
    /// a SET (digest bit 0 set) that marks level 1 marks the set counter too.
    #[inline]
    pub fn record(&mut self, digest: u32) {
        let p = positions(digest);
        let set = digest & 1 == 1;
        for (i, level) in self.levels.iter_mut().enumerate() {
            if !level.marked(&p) {
                if i == 0 {
                    self.level1_ones += level.mark_counting(&p);
                    if set {
                        self.set_counter.mark(&p);
                    }
                } else {
                    level.mark(&p);
                }
                return;
            }
        }
    }

    /// Records a batch of accesses in order, prefetching the key's block in every level for
    /// the access `PREFETCH_DISTANCE` ahead, so the cache misses of many keys overlap.
    pub fn record_batch(&mut self, digests: &[u32]) {
        for (i, &d) in digests.iter().enumerate() {
            if let Some(&ahead) = digests.get(i + PREFETCH_DISTANCE) {
                let p = positions(ahead)[0];
                for level in &self.levels {
                    level.prefetch(p);
                }
            }
            self.record(d);
        }
    }

    /// Records one reference pool as one step, whatever the order of its digests:
    ///
    /// 1. every digest's zone `z` is read before any mark is made (a snapshot);
    /// 2. a key (a digest without its SET bit) that occurs `k` times in the pool is marked in
    ///    levels `z + 1 ..= min(z + k, M)` — what `k` accesses one at a time would do if no
    ///    other key of the pool shared its bits;
    /// 3. a SET of a key whose zone was 0 marks the set counter (its level-1 mark is new).
    ///
    /// Level 1's set bits are counted exactly as they are set. Applying the pool then checks
    /// [`Hitmap::saturated`] once (the caller compacts). A pool's keys are grouped in an
    /// open-addressing table twice the pool's length (a sort of the pool cost 19% of the
    /// update rate; the table about 6%: `docs/benchmarks.md`); nothing is allocated after
    /// the first pool of a size.
    pub fn record_pool(&mut self, digests: &[u32]) {
        let slots = (2 * digests.len()).next_power_of_two().max(64);
        let mut table = std::mem::take(&mut self.scratch);
        let mut used = std::mem::take(&mut self.used);
        table.clear();
        table.resize(slots, 0);
        used.clear();
        let shift = 64 - slots.trailing_zeros();
        // A slot: (key + 1) << 32 | set << 16 | occurrences (at most 255) << 8 | zone.
        for (i, &d) in digests.iter().enumerate() {
            if let Some(&ahead) = digests.get(i + PREFETCH_DISTANCE) {
                let p = positions(ahead)[0];
                for level in &self.levels {
                    level.prefetch(p);
                }
            }
            let key = u64::from(d >> 1) + 1;
            let mut slot = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
            loop {
                let entry = table[slot];
                if entry == 0 {
                    table[slot] = key << 32 | 1 << 8 | u64::from(self.zone(d));
                    used.push(slot as u32);
                    break;
                }
                if entry >> 32 == key {
                    let count = (entry >> 8 & 0xFF).min(254) + 1;
                    table[slot] = entry & !(0xFF << 8) | count << 8;
                    break;
                }
                slot = (slot + 1) & (slots - 1);
            }
            table[slot] |= u64::from(d & 1) << 16;
        }
        let top = self.levels.len();
        for &slot in &used {
            let entry = table[slot as usize];
            let p = positions(((entry >> 32) - 1) as u32 * 2);
            let (zone, count) = ((entry & 0xFF) as usize, (entry >> 8 & 0xFF) as usize);
            for level in zone..(zone + count).min(top) {
                if level == 0 {
                    self.level1_ones += self.levels[0].mark_counting(&p);
                } else {
                    self.levels[level].mark(&p);
                }
            }
            if zone == 0 && entry >> 16 & 1 == 1 {
                self.set_counter.mark(&p);
            }
        }
        self.scratch = table;
        self.used = used;
    }

    /// The key's temperature zone: how many levels, from level 1 up, mark it (0 = cold).
    pub fn zone(&self, digest: u32) -> u8 {
        let p = positions(digest);
        self.levels.iter().take_while(|level| level.marked(&p)).count() as u8
    }

    /// Whether the key is a zombie: marked in no level and not in the set counter, so it was
    /// not read since it was stored, through at least one compaction. The set counter only
    /// ever holds level-1 bits, so this is zone 0.
    pub fn is_zombie(&self, digest: u32) -> bool {
        self.zone(digest) == 0
    }

    /// Whether level 1 is so full that fewer than [`COMPACTION_THRESHOLD`] of all keys would
    /// test unmarked there (a random key is marked with probability `fill³`). This is
    /// Algorithm 1's trigger with the fill rate known exactly instead of estimated from a
    /// sample of resident keys (see `docs/design.md`: resident keys were mostly stored
    /// recently, so a sample of them reads as "full" long before false positives matter).
    pub fn saturated(&self) -> bool {
        self.level1_ones >= self.saturate_at
    }

    /// Rolling compaction (Algorithm 1, §3.1.5): every level moves one down by folding, the
    /// set counter is merged into the new level 1 and cleared, and the top level is cleared.
    pub fn compact(&mut self) {
        let m = self.levels.len();
        for i in 1..m {
            let (below, above) = self.levels.split_at_mut(i);
            below[i - 1].fold_from(&above[0]);
        }
        for (w, s) in self.levels[0].words.iter_mut().zip(self.set_counter.words.iter()) {
            *w |= s;
        }
        self.set_counter.clear();
        self.levels[m - 1].clear();
        self.level1_ones = self.levels[0].ones();
        self.compactions += 1;
    }

    /// Bytes of all levels and the set counter (their sizes only: no scan).
    pub fn bytes(&self) -> usize {
        (self.levels.iter().map(|l| l.words.len()).sum::<usize>() + self.set_counter.words.len())
            * 8
    }

    /// Levels and completed compactions (no scan: what a server's `stats` asks for, under
    /// the hitmap's lock, many times a minute).
    pub fn shape(&self) -> (usize, u64) {
        (self.levels.len(), self.compactions)
    }

    /// Level `m`'s words (level 1 is `m` = 0), or the set counter's for `m` = `levels()`
    /// (comparisons with another backend's copy).
    pub fn level_words(&self, m: usize) -> &[u64] {
        &self.levels.get(m).unwrap_or(&self.set_counter).words
    }

    /// Every level's words (level 1 first), then the set counter's; level 1's set bits as
    /// counted; compactions: everything a pool's application writes (tests compare them
    /// with another copy's).
    #[cfg(test)]
    pub(crate) fn state(&self) -> (Vec<Vec<u64>>, u64, u64) {
        let words = (0..=self.levels()).map(|m| self.level_words(m).to_vec()).collect();
        (words, self.level1_ones, self.compactions)
    }

    /// Level 1's set bits as counted (what [`Hitmap::saturated`] compares).
    pub fn level1_count(&self) -> u64 {
        self.level1_ones
    }

    /// Footprint and fill rates (the fill counts every bit: a scan of the whole hitmap, 2 ms
    /// for a 256 MiB cache's; tests and studies only).
    pub fn stats(&self) -> HitmapStats {
        let bytes = self.bytes();
        let fill =
            self.levels.iter().map(|l| l.ones() as f64 / (l.words.len() * 64) as f64).collect();
        HitmapStats { bytes, compactions: self.compactions, fill }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Digests of distinct keys, as GETs (bit 0 clear).
    fn hashes(n: u64, salt: u64) -> Vec<u32> {
        (0..n)
            .map(|i| {
                let hash = crate::hash::key_hash(
                    crate::tenant::TenantId(0),
                    &(i ^ salt << 32).to_le_bytes(),
                );
                crate::hash::digest_of(hash) & !1
            })
            .collect()
    }

    #[test]
    fn no_false_negatives() {
        let mut h = Hitmap::new(1 << 12, DEFAULT_LEVELS).unwrap();
        let keys = hashes(5_000, 1);
        for (i, &k) in keys.iter().enumerate() {
            for _ in 0..=i % 4 {
                h.record(k);
            }
        }
        for (i, &k) in keys.iter().enumerate() {
            assert!(h.zone(k) as usize > i % 4, "key {i} accessed {} times", i % 4 + 1);
        }
    }

    #[test]
    fn folding_preserves_membership() {
        let mut h = Hitmap::new(1 << 10, DEFAULT_LEVELS).unwrap();
        for &k in &hashes(3_000, 2) {
            h.record(k);
            h.record(k);
            h.record(k);
        }
        for (m, level) in h.levels.iter().enumerate().skip(1) {
            let mut folded = Bits::new((level.words.len() / 2) * 64).unwrap();
            folded.fold_from(level);
            for &k in &hashes(3_000, 2) {
                if level.marked(&positions(k)) {
                    assert!(folded.marked(&positions(k)), "level {} fold lost a key", m + 1);
                }
            }
        }
    }

    #[test]
    fn compaction_lowers_each_key_by_one_level() {
        // Sparse enough that false positives do not blur zones.
        let mut h = Hitmap::new(1 << 16, DEFAULT_LEVELS).unwrap();
        let keys = hashes(200, 3);
        for (i, &k) in keys.iter().enumerate() {
            for _ in 0..i % 5 {
                h.record(k); // zones 0..=4
            }
        }
        let before: Vec<u8> = keys.iter().map(|&k| h.zone(k)).collect();
        h.compact();
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(h.zone(k), before[i].saturating_sub(1), "key {i}");
        }
        assert_eq!(h.stats().fill[DEFAULT_LEVELS - 1], 0.0, "the top level is cleared");
    }

    #[test]
    fn the_set_counter_protects_an_item_stored_just_before_a_compaction() {
        let mut h = Hitmap::new(1 << 16, DEFAULT_LEVELS).unwrap();
        let [stored, read_once] = [hashes(1, 4)[0], hashes(1, 5)[0]];
        h.record(stored | 1);
        h.record(read_once);
        h.compact();
        assert!(h.zone(stored) >= 1, "a new item keeps level 1 through one compaction");
        assert_eq!(h.zone(read_once), 0, "a GET alone does not");
    }

    #[test]
    fn zombies_are_found_after_two_compactions() {
        let mut h = Hitmap::new(1 << 16, DEFAULT_LEVELS).unwrap();
        let [zombie, reread] = [hashes(1, 6)[0], hashes(1, 7)[0]];
        h.record(zombie | 1);
        h.record(reread | 1);
        h.compact();
        assert!(!h.is_zombie(zombie), "one compaction is the grace period");
        h.record(reread);
        h.compact();
        assert!(h.is_zombie(zombie), "stored, never read, two compactions");
        assert!(!h.is_zombie(reread));
    }

    #[test]
    fn level_one_saturates_only_when_most_keys_would_test_marked() {
        let mut h = Hitmap::new(1 << 10, DEFAULT_LEVELS).unwrap();
        assert!(!h.saturated(), "empty hitmap");
        let keys = hashes(4_000, 8);
        // 1,000 keys fill 1 − e^(−3000/1024) ≈ 95% of level 1's bits: a random key tests
        // marked with probability ≈ 0.86, so not yet saturated.
        keys[..1_000].iter().for_each(|&k| h.record(k));
        assert!(!h.saturated(), "fill {:?}", h.stats().fill);
        let more = keys[1_000..].iter().position(|&k| {
            h.record(k);
            h.saturated()
        });
        assert!(more.is_some(), "fill {:?}", h.stats().fill);
        h.compact();
        assert!(!h.saturated(), "compaction empties level 1 of one-time keys");
    }

    #[test]
    fn batches_record_exactly_what_single_records_do() {
        let (mut one, mut batch) =
            (Hitmap::new(1 << 12, 4).unwrap(), Hitmap::new(1 << 12, 4).unwrap());
        let stream: Vec<u32> = hashes(3_000, 9).iter().cycle().take(9_000).copied().collect();
        stream.iter().for_each(|&d| one.record(d));
        batch.record_batch(&stream);
        assert_eq!(one.stats(), batch.stats());
        assert!(stream.iter().all(|&d| one.zone(d) == batch.zone(d)));
    }

    #[test]
    fn a_pools_order_does_not_change_what_it_records() {
        // Dense enough (3,000 keys in 1,024 level-1 bits) that keys share bits, with repeats
        // and SETs, through compactions.
        let keys = hashes(3_000, 10);
        let mut rng = fridge_workload::Rng::new(3);
        let (mut ordered, mut shuffled) =
            (Hitmap::new(1 << 10, 4).unwrap(), Hitmap::new(1 << 10, 4).unwrap());
        for round in 0..40 {
            let mut pool: Vec<u32> = (0..1024)
                .map(|_| {
                    keys[(rng.next_u64() % (keys.len() as u64)) as usize]
                        | u32::from((rng.next_u64() % (8)) == 0)
                })
                .collect();
            ordered.record_pool(&pool);
            // Fisher–Yates.
            for i in (1..pool.len()).rev() {
                pool.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            shuffled.record_pool(&pool);
            for h in [&mut ordered, &mut shuffled] {
                if h.saturated() {
                    h.compact();
                }
            }
            assert_eq!(ordered.state(), shuffled.state(), "round {round}");
        }
        assert!(ordered.compactions >= 2, "{}", ordered.compactions);
    }

    #[test]
    fn a_pool_records_what_single_accesses_do_when_keys_share_no_bits() {
        // 300 keys in 2^20 level-1 bits: no two share a bit, so the snapshot changes nothing.
        // GETs only: a SET in the pool marks the set counter wherever the key's zone was 0,
        // one at a time only where it is the key's first access (tested below).
        let keys = hashes(300, 11);
        let (mut one, mut pool) =
            (Hitmap::new(1 << 20, 4).unwrap(), Hitmap::new(1 << 20, 4).unwrap());
        let stream: Vec<u32> = (0..3_000).map(|i: usize| keys[i * 7 % (1 + i % 300)]).collect();
        for chunk in stream.chunks(1024) {
            chunk.iter().for_each(|&d| one.record(d));
            pool.record_pool(chunk);
        }
        assert_eq!(one.state(), pool.state());
        assert!(keys.iter().any(|&k| pool.zone(k) == 4), "some key reached the top");
    }

    #[test]
    fn a_repeated_key_climbs_one_level_per_occurrence_from_its_snapshot() {
        let mut h = Hitmap::new(1 << 16, 4).unwrap();
        let [k, other] = [hashes(1, 12)[0], hashes(1, 13)[0]];
        h.record_pool(&[k, other, k]);
        assert_eq!((h.zone(k), h.zone(other)), (2, 1));
        h.record_pool(&[k, k, k, k, k]);
        assert_eq!(h.zone(k), 4, "capped at the top level");
        // A SET marks the set counter only where the key's zone was 0.
        h.record_pool(&[other | 1]);
        h.compact();
        assert_eq!(h.zone(other), 1, "level 2 folded down; the set counter added nothing");
        let fresh = hashes(1, 14)[0];
        h.record_pool(&[fresh, fresh | 1]);
        h.compact();
        assert_eq!(h.zone(fresh), 1, "two accesses, one level lost, the set counter keeps it");
    }

    #[test]
    fn the_saturation_point_is_the_least_fill_with_fewer_than_five_percent_unmarked() {
        for bits in [512u64, 1 << 12, 1 << 20, 1 << 31, 1 << 35] {
            let at = saturation_ones(bits);
            let unmarked = |ones: u64| 1.0 - (ones as f64 / bits as f64).powi(3);
            assert!(unmarked(at) < COMPACTION_THRESHOLD + 1e-9, "{bits}: {at}");
            assert!(unmarked(at - 1) >= COMPACTION_THRESHOLD - 1e-9, "{bits}: {at}");
        }
    }

    #[test]
    fn sizing_follows_the_bit_budget() {
        let h = Hitmap::for_items(1 << 20, 32, DEFAULT_LEVELS).unwrap();
        let s = h.stats();
        // 32 bits per item over 1M items: level 1 gets 2^21 bits, all levels and the set
        // counter 16 times that, 4 MiB.
        assert_eq!(s.bytes, 4 << 20);
        assert_eq!(h.levels(), DEFAULT_LEVELS);
    }

    #[test]
    fn a_copy_starts_equal_and_goes_its_own_way() {
        let mut h = Hitmap::new(1 << 12, DEFAULT_LEVELS).unwrap();
        for pool in hashes(4_000, 5).chunks(512) {
            h.record_pool(pool);
        }
        h.compact();
        let mut copy = h.try_clone().unwrap();
        assert_eq!(copy.state(), h.state());
        let before = h.state();
        for pool in hashes(4_000, 6).chunks(512) {
            copy.record_pool(pool);
        }
        assert_eq!(h.state(), before, "marking the copy leaves the original as it was");
        assert_ne!(copy.state(), before);
    }
}
