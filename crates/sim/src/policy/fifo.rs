//! FIFO: evict the object that was inserted first; hits change nothing.
//!
//! One queue in insertion order; a miss inserts at the newest end, eviction takes the oldest
//! end, and a hit leaves the order alone. As libCacheSim's `FIFO.c`. Same structure and costs
//! as [`super::Lru`], minus the relinking on a hit.

use super::list::{Arena, List};
use super::queue::{QueuePolicy, QueueRule};

/// FIFO over a byte capacity.
pub type Fifo = QueuePolicy<FifoRule>;

/// FIFO's rule: a hit changes nothing; evict the oldest.
#[derive(Debug, Clone, Copy, Default)]
pub struct FifoRule;

impl Fifo {
    /// An empty cache holding at most `capacity` bytes of objects.
    pub fn new(capacity: u64) -> Self {
        Self::with_rule(capacity, FifoRule)
    }
}

impl QueueRule for FifoRule {
    fn name(&self) -> String {
        "FIFO".to_owned()
    }

    fn on_hit(&mut self, _queue: &mut List, _arena: &mut Arena, _idx: u32) {}

    fn victim(&mut self, queue: &mut List, _arena: &mut Arena) -> u32 {
        queue.oldest
    }
}

#[cfg(test)]
mod tests {
    use super::Fifo;
    use crate::policy::testutil::{assert_resident, expect_sized, expect_unit};

    #[test]
    fn unit_sizes() {
        let mut c = Fifo::new(3);
        // 1 2 3 fill the cache. The hit on 1 does not reorder, so 4 evicts 1 (first in),
        // and 1 then misses and evicts 2. 3 and 4 hit. 2 misses and evicts 3.
        expect_unit(&mut c, &[1, 2, 3, 1, 4, 1, 3, 4, 2], "MMM H M M HH M");
        assert_eq!(c.queue.keys(&c.arena), [2, 1, 4]);
        assert_resident(&c, &[1, 2, 4]);
    }

    #[test]
    fn byte_sizes() {
        let mut c = Fifo::new(100);
        // 1(60) 2(40) fill the cache; 3(50) evicts 1 (→ 40 + 50 = 90). 2 hits. 4(20) evicts 2
        // (the oldest, though just hit) → 70. 5(200) never fits: miss, no change.
        expect_sized(
            &mut c,
            &[(1, 60), (2, 40), (3, 50), (2, 40), (4, 20), (5, 200)],
            "MM M H M M",
        );
        assert_resident(&c, &[3, 4]);
        assert_eq!(c.queue.bytes, 70);
    }

    #[test]
    fn growing_hit_can_evict_itself() {
        let mut c = Fifo::new(100);
        // 1(40) 2(40). 1 grows to 70 on a hit: 110 > 100, so FIFO evicts its oldest object,
        // which is 1 itself (hits do not reorder). The request still counts as a hit.
        // 1(70) then misses and evicts 2 to fit.
        expect_sized(&mut c, &[(1, 40), (2, 40), (1, 70), (1, 70)], "MM H M");
        assert_resident(&c, &[1]);
    }
}
