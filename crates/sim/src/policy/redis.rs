//! Redis's approximated LRU (`maxmemory-policy allkeys-lru`), after `evict.c`.
//!
//! Redis keeps no LRU list. Each object records the time of its last access, and to evict,
//! Redis samples a few keys and evicts the one idle longest. Since Redis 3.0 the samples feed
//! an **eviction pool** of 16 entries that persists across evictions, which makes the
//! approximation much closer to true LRU:
//!
//! ```text
//! evict():
//!   loop:
//!     populate(pool): sample N keys (maxmemory-samples: 5 by default, 10 for "better");
//!       for each, idle = now - last_access; insert (key, idle) into the pool, which is
//!       sorted by idle ascending: if the pool is full and the sample idles less than every
//!       entry, drop the sample; if the pool is full otherwise, the entry with the least
//!       idle time is pushed out on the left.
//!     for k = 15 down to 0 (most idle first): if pool[k] is set, clear it; if its key is
//!       still resident, evict it and return; otherwise (a "ghost") try the next entry.
//! ```
//!
//! Modelled as in `evictionPoolPopulate` / `performEvictions`, with these differences:
//! - The clock is the access count (one tick per request), not Redis's 1-second LRU clock
//!   (`LRU_CLOCK_RESOLUTION`, 24 bits), so idle times are exact and ties rarer.
//! - Samples are drawn uniformly (with replacement) from the resident keys by a seeded
//!   splitmix64, where Redis's `dictGetSomeKeys` walks a run of consecutive hash buckets from a
//!   random start. When N or fewer keys are resident, all of them are the sample.
//! - Pool entries keep the idle time they were sampled with, as in Redis: a key touched after
//!   it entered the pool can still be evicted on its stale idle time.
//! - Memory is object bytes and eviction makes room before the insert (libCacheSim's
//!   semantics); Redis evicts before running a command until `used_memory` (with all its
//!   overheads) is under `maxmemory`, so it can overshoot by one write.
//!
//! Costs: a hit is one map lookup and one store; an eviction is N random picks plus an
//! insertion into a 16-entry array. Memory per object: a 24-byte entry plus a map slot.

use super::hash::{KeyMap, SplitMix64};
use super::{Access, Policy};

/// `EVPOOL_SIZE` in Redis.
const POOL_SIZE: usize = 16;

#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u64,
    size: u32,
    last_access: u64,
}

#[derive(Debug, Clone, Copy)]
struct PoolEntry {
    key: u64,
    idle: u64,
}

/// Redis `allkeys-lru` over a byte capacity.
#[derive(Debug)]
pub struct RedisLru {
    capacity: u64,
    used: u64,
    samples: usize,
    /// Resident objects, densely packed so a uniform sample is one random index.
    entries: Vec<Entry>,
    /// key → index in `entries`.
    map: KeyMap<u32>,
    /// Sorted by idle time, ascending; `None` entries are at the right end (Redis: key NULL).
    pool: [Option<PoolEntry>; POOL_SIZE],
    clock: u64,
    rng: SplitMix64,
}

impl RedisLru {
    /// `samples` keys per eviction (Redis: `maxmemory-samples`, default 5), random choices
    /// seeded by `seed`.
    pub fn new(capacity: u64, samples: usize, seed: u64) -> Self {
        assert!(samples > 0, "at least one sample");
        Self {
            capacity,
            used: 0,
            samples,
            entries: Vec::new(),
            map: KeyMap::default(),
            pool: [None; POOL_SIZE],
            clock: 0,
            rng: SplitMix64::new(seed),
        }
    }

    /// Redis's `evictionPoolPopulate` for one sampled entry.
    fn pool_insert(&mut self, key: u64, idle: u64) {
        let pool = &mut self.pool;
        // The first empty slot or the first entry that idles at least as long as this one.
        let mut k = 0;
        while k < POOL_SIZE && pool[k].is_some_and(|e| e.idle < idle) {
            k += 1;
        }
        if k == 0 && pool[POOL_SIZE - 1].is_some() {
            // Idles less than everything in a full pool.
            return;
        } else if k < POOL_SIZE && pool[k].is_none() {
            // An empty slot: insert right there.
        } else if pool[POOL_SIZE - 1].is_none() {
            // Room on the right: shift k.. one to the right (the last slot, empty, wraps to k).
            pool[k..].rotate_right(1);
        } else {
            // Full: drop the least idle entry on the left, shift 1..k left, insert at k - 1.
            k -= 1;
            pool[..=k].rotate_left(1);
        }
        pool[k] = Some(PoolEntry { key, idle });
    }

    fn populate(&mut self) {
        let n = self.entries.len();
        if n <= self.samples {
            for i in 0..n {
                let e = self.entries[i];
                self.pool_insert(e.key, self.clock - e.last_access);
            }
        } else {
            for _ in 0..self.samples {
                let e = self.entries[self.rng.below(n)];
                self.pool_insert(e.key, self.clock - e.last_access);
            }
        }
    }

    fn evict_one(&mut self) {
        loop {
            self.populate();
            for k in (0..POOL_SIZE).rev() {
                let Some(entry) = self.pool[k].take() else {
                    continue;
                };
                if let Some(idx) = self.map.remove(&entry.key) {
                    self.remove_at(idx as usize);
                    return;
                }
            }
        }
    }

    /// Removes `entries[idx]` (already gone from the map) by swapping in the last entry.
    fn remove_at(&mut self, idx: usize) {
        let gone = self.entries.swap_remove(idx);
        self.used -= u64::from(gone.size);
        if let Some(moved) = self.entries.get(idx) {
            self.map.insert(moved.key, idx as u32);
        }
    }

    fn shrink_to_fit(&mut self, incoming: u64) {
        while self.used + incoming > self.capacity && !self.entries.is_empty() {
            self.evict_one();
        }
    }
}

impl Policy for RedisLru {
    fn name(&self) -> String {
        format!("Redis-LRU-{}", self.samples)
    }

    fn access(&mut self, a: &Access) -> bool {
        self.clock += 1;
        if let Some(&idx) = self.map.get(&a.key) {
            let e = &mut self.entries[idx as usize];
            e.last_access = self.clock;
            if e.size != a.size {
                self.used = self.used - u64::from(e.size) + u64::from(a.size);
                e.size = a.size;
                self.shrink_to_fit(0);
            }
            return true;
        }
        if u64::from(a.size) > self.capacity {
            return false;
        }
        self.shrink_to_fit(u64::from(a.size));
        let idx = u32::try_from(self.entries.len()).expect("fewer than 2^32 objects");
        self.entries.push(Entry { key: a.key, size: a.size, last_access: self.clock });
        self.map.insert(a.key, idx);
        self.used += u64::from(a.size);
        false
    }

    fn remove(&mut self, a: &Access) -> bool {
        let Some(idx) = self.map.remove(&a.key) else { return false };
        // A pool entry of the key stays; eviction skips keys no longer in the map.
        self.remove_at(idx as usize);
        true
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn used(&self) -> u64 {
        self.used
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn contains(&self, key: u64) -> bool {
        self.map.contains_key(&key)
    }

    fn resident_size(&self, key: u64) -> Option<u32> {
        self.map.get(&key).map(|&idx| self.entries[idx as usize].size)
    }

    #[cfg(test)]
    fn validate(&self) {
        assert_eq!(self.map.len(), self.entries.len());
        for (i, e) in self.entries.iter().enumerate() {
            assert_eq!(self.map[&e.key] as usize, i);
        }
        let bytes: u64 = self.entries.iter().map(|e| u64::from(e.size)).sum();
        assert_eq!(bytes, self.used);
        assert!(self.used <= self.capacity);
        // The pool is sorted by idle time with its empty slots on the right.
        let filled: Vec<u64> = self.pool.iter().map_while(|e| e.map(|e| e.idle)).collect();
        assert!(filled.is_sorted());
        assert!(self.pool[filled.len()..].iter().all(Option::is_none));
    }
}

#[cfg(test)]
mod tests {
    use super::{POOL_SIZE, RedisLru};
    use crate::policy::testutil::{assert_resident, expect_unit};

    #[test]
    fn exact_lru_when_everything_is_sampled() {
        // With at least as many samples as resident keys, every key is sampled on each
        // eviction, so the pool's most idle entry is the least recently used key: exact LRU.
        // Same sequence and outcome as the LRU test.
        let mut c = RedisLru::new(3, 5, 1);
        expect_unit(&mut c, &[1, 2, 3, 1, 4, 2, 1, 4, 3], "MMM H M M HH M");
        assert_resident(&c, &[1, 3, 4]);
    }

    #[test]
    fn stale_pool_entries() {
        let mut c = RedisLru::new(3, 5, 1);
        // 1 2 3 at clock 1 2 3. 4 (clock 4): sample all; idles 3, 2, 1; the pool holds
        // [3:1, 2:2, 1:3] (key:idle) and 1, the most idle, is evicted → pool [3:1, 2:2].
        expect_unit(&mut c, &[1, 2, 3, 4], "MMMM");
        assert_resident(&c, &[2, 3, 4]);
        // 2 hits at clock 5. 5 (clock 6): sample 3 (idle 3), 2 (idle 1), 4 (idle 2); the
        // pool's most idle entry is 3: evict 3. 6 (clock 7): sample 4 (idle 3), 2 (idle 2),
        // 5 (idle 1): evict 4.
        expect_unit(&mut c, &[2, 5, 6], "HMM");
        assert_resident(&c, &[2, 5, 6]);
        // The pool still holds entries for 2 with the idle times they were sampled with.
        // Plant an old one, as if 2 had been sampled long ago, then touch 2 (clock 8): 7
        // (clock 9) evicts 2 on its stale idle time although it is the most recently used.
        c.pool_insert(2, 100);
        expect_unit(&mut c, &[2, 7], "HM");
        assert_resident(&c, &[5, 6, 7]);
    }

    #[test]
    fn pool_insertion_matches_redis() {
        let mut c = RedisLru::new(100, 5, 1);
        // Fill the pool with idles 10, 20, …, 160.
        for i in 1..=POOL_SIZE as u64 {
            c.pool_insert(i, i * 10);
        }
        // Less idle than everything in a full pool: dropped.
        c.pool_insert(99, 5);
        assert_eq!(c.pool[0].map(|e| e.key), Some(1));
        // Idle 55 in a full pool: the least idle (key 1) falls off the left, 55 lands
        // between 50 and 60.
        c.pool_insert(55, 55);
        let idles: Vec<u64> = c.pool.iter().map(|e| e.unwrap().idle).collect();
        assert_eq!(&idles[..6], &[20, 30, 40, 50, 55, 60]);
        assert_eq!(idles[15], 160);
    }
}
