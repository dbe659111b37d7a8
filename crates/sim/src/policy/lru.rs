//! Exact LRU: evict the object whose last access is the oldest.
//!
//! One queue ordered by last access: a hit moves the object to the newest end, a miss inserts
//! it there, and eviction takes the oldest end. The queue is an intrusive doubly linked list
//! in a `Vec` arena ([`super::list`]) and a hash map finds a key's node, so every operation is
//! O(1): a hit is one map lookup and four link writes. Memory: a 24-byte node plus a map slot
//! (~16 bytes at load factor 7/8) per object. As libCacheSim's `LRU.c`.

use super::list::{Arena, List};
use super::queue::{QueuePolicy, QueueRule};

/// Exact LRU over a byte capacity.
pub type Lru = QueuePolicy<LruRule>;

/// LRU's rule: a hit moves the object to the newest end; evict the oldest.
#[derive(Debug, Clone, Copy, Default)]
pub struct LruRule;

impl Lru {
    /// An empty cache holding at most `capacity` bytes of objects.
    pub fn new(capacity: u64) -> Self {
        Self::with_rule(capacity, LruRule)
    }
}

impl QueueRule for LruRule {
    fn name(&self) -> String {
        "LRU".to_owned()
    }

    fn on_hit(&mut self, queue: &mut List, arena: &mut Arena, idx: u32) {
        queue.move_to_newest(arena, idx);
    }

    fn victim(&mut self, queue: &mut List, _arena: &mut Arena) -> u32 {
        queue.oldest
    }
}

#[cfg(test)]
mod tests {
    use super::Lru;
    use crate::policy::testutil::{assert_resident, expect_sized, expect_unit};

    #[test]
    fn unit_sizes() {
        let mut c = Lru::new(3);
        // 1 2 3 fill the cache (newest first: 3 2 1). The hit on 1 makes it newest: 1 3 2.
        // 4 evicts 2, the least recently used: 4 1 3. 2 misses and evicts 3: 2 4 1.
        // 1 and 4 hit; 3 misses and evicts 2 (oldest after 1 and 4 were touched).
        expect_unit(&mut c, &[1, 2, 3, 1, 4, 2, 1, 4, 3], "MMM H M M HH M");
        assert_eq!(c.queue.keys(&c.arena), [3, 4, 1]);
        assert_resident(&c, &[1, 3, 4]);
    }

    #[test]
    fn byte_sizes() {
        let mut c = Lru::new(100);
        // 1(40) 2(30) 3(30) fill 100 bytes exactly. 4(50) evicts 1 (→ 60 bytes used), still
        // does not fit, evicts 2 (→ 30), then fits (→ 80). 3 hits. 5(101) is larger than the cache: miss, nothing changes.
        // 6(20) fits without eviction (80 + 20 = 100).
        expect_sized(
            &mut c,
            &[(1, 40), (2, 30), (3, 30), (4, 50), (3, 30), (5, 101), (6, 20)],
            "MMM M H M M",
        );
        assert_resident(&c, &[3, 4, 6]);
        assert_eq!(c.queue.bytes, 100);
    }

    #[test]
    fn size_change_on_hit() {
        let mut c = Lru::new(100);
        // 1(30) 2(30) 3(30). 1 grows to 60 on a hit and becomes newest: 30+30+60 = 120 > 100,
        // so the oldest, 2, is evicted (90 bytes). 3 hits. 2 misses again.
        expect_sized(&mut c, &[(1, 30), (2, 30), (3, 30), (1, 60), (3, 30)], "MMM H H");
        assert_resident(&c, &[1, 3]);
        assert_eq!(c.queue.bytes, 90);
        // 1 grows past the whole cache: the hit is counted, then 3 and 1 itself are evicted.
        expect_sized(&mut c, &[(1, 150)], "H");
        assert_resident(&c, &[]);
    }
}
