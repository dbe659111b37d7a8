//! Belady's MIN, the offline optimum: evict the object whose next request is furthest in the
//! future (objects never requested again first).
//!
//! Every request carries `next_access_vtime`, the position in the trace of the next request
//! for the same key (negative: never). The policy keeps, for each resident object, its next
//! request time, and a max-heap of `(next request, key, stamp)`. To evict, pop the heap's top;
//! an entry whose stamp no longer matches the object's (the object was hit since, or evicted)
//! is stale and skipped (lazy deletion). A hit pushes a fresh entry. The heap is rebuilt from
//! the live objects when stale entries outnumber them, so its size stays O(resident objects).
//! Costs: O(log n) per hit and per eviction, amortised.
//!
//! Like libCacheSim's `Belady.c`, every missed object is admitted (after evicting, so the new
//! object is never the victim even when it is never requested again). For unit sizes this is
//! the optimal demand-paging policy: no policy that admits every miss gets more hits. With
//! byte sizes it is only a heuristic bound: the optimum with variable sizes is NP-hard, and it
//! is neither libCacheSim's `BeladySize` (which evicts the sampled object with the largest
//! `size × time to next request`) nor an upper bound for policies that may decline admission.

use std::collections::BinaryHeap;

use super::hash::KeyMap;
use super::{Access, Policy};

#[derive(Debug, Clone, Copy)]
struct Object {
    size: u32,
    /// Matches the object's one live heap entry.
    stamp: u64,
}

/// Belady's MIN over a byte capacity; needs `next_access_vtime` on every request.
#[derive(Debug)]
pub struct Belady {
    capacity: u64,
    used: u64,
    map: KeyMap<Object>,
    /// (next request time, key, stamp); never-again is `i64::MAX`, so it pops first.
    heap: BinaryHeap<(i64, u64, u64)>,
    next_stamp: u64,
}

/// Maps the trace's "never" (any negative value) above every real time.
const fn next_time(next_access_vtime: i64) -> i64 {
    if next_access_vtime < 0 { i64::MAX } else { next_access_vtime }
}

impl Belady {
    /// An empty cache holding at most `capacity` bytes of objects.
    pub fn new(capacity: u64) -> Self {
        Self { capacity, used: 0, map: KeyMap::default(), heap: BinaryHeap::new(), next_stamp: 0 }
    }

    fn push(&mut self, key: u64, next_access_vtime: i64) -> u64 {
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        self.heap.push((next_time(next_access_vtime), key, stamp));
        stamp
    }

    fn evict_one(&mut self) {
        while let Some((_, key, stamp)) = self.heap.pop() {
            if self.map.get(&key).is_some_and(|o| o.stamp == stamp) {
                let o = self.map.remove(&key).expect("just found");
                self.used -= u64::from(o.size);
                return;
            }
        }
        unreachable!("evict_one on an empty cache");
    }

    fn shrink_to_fit(&mut self, incoming: u64) {
        while self.used + incoming > self.capacity && !self.map.is_empty() {
            self.evict_one();
        }
    }

    /// Drops stale heap entries once they outnumber live ones.
    fn maybe_compact(&mut self) {
        if self.heap.len() > 2 * self.map.len() + 1024 {
            let map = &self.map;
            self.heap.retain(|&(_, key, stamp)| map.get(&key).is_some_and(|o| o.stamp == stamp));
        }
    }
}

impl Policy for Belady {
    fn name(&self) -> String {
        "Belady".to_owned()
    }

    fn access(&mut self, a: &Access) -> bool {
        if self.map.contains_key(&a.key) {
            let stamp = self.push(a.key, a.next_access_vtime);
            let o = self.map.get_mut(&a.key).expect("just found");
            o.stamp = stamp;
            if o.size != a.size {
                self.used = self.used - u64::from(o.size) + u64::from(a.size);
                o.size = a.size;
                self.shrink_to_fit(0);
            }
            self.maybe_compact();
            return true;
        }
        if u64::from(a.size) > self.capacity {
            return false;
        }
        self.shrink_to_fit(u64::from(a.size));
        let stamp = self.push(a.key, a.next_access_vtime);
        self.map.insert(a.key, Object { size: a.size, stamp });
        self.used += u64::from(a.size);
        false
    }

    fn remove(&mut self, a: &Access) -> bool {
        let Some(o) = self.map.remove(&a.key) else { return false };
        // Its heap entry goes stale (its stamp no longer matches a resident object).
        self.used -= u64::from(o.size);
        true
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn used(&self) -> u64 {
        self.used
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn contains(&self, key: u64) -> bool {
        self.map.contains_key(&key)
    }

    fn resident_size(&self, key: u64) -> Option<u32> {
        self.map.get(&key).map(|o| o.size)
    }

    #[cfg(test)]
    fn validate(&self) {
        let bytes: u64 = self.map.values().map(|o| u64::from(o.size)).sum();
        assert_eq!(bytes, self.used);
        assert!(self.used <= self.capacity);
        let live = self
            .heap
            .iter()
            .filter(|&&(_, k, s)| self.map.get(&k).is_some_and(|o| o.stamp == s))
            .count();
        assert_eq!(live, self.map.len(), "one live heap entry per object");
    }
}

#[cfg(test)]
mod tests {
    use super::Belady;
    use crate::policy::Policy;
    use crate::policy::testutil::{assert_resident, with_next_access};

    #[test]
    fn textbook_min() {
        // The textbook reference string (Silberschatz et al., "Operating System Concepts"),
        // 3 frames: the optimal algorithm takes 9 page faults.
        let keys = [7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1];
        let trace = with_next_access(&keys, 1);
        let mut c = Belady::new(3);
        let got: String = trace
            .iter()
            .map(|a| {
                let hit = c.access(a);
                c.validate();
                if hit { 'H' } else { 'M' }
            })
            .collect();
        // 7 0 1 miss. 2: evict 7 (next at 17, furthest). 0 hit. 3: evict 1 (next at 13).
        // 0 hit. 4: evict 0 (next at 10; 2 at 8, 3 at 9). 2 3 hit. 0: evict 4 (never).
        // 3 2 hit. 1: evict 3 (never). 2 0 1 hit. 7: evict 2 (never again). 0 1 hit.
        assert_eq!(got, "MMMMHMHMHHMHHMHHHMHH");
        assert_eq!(got.matches('M').count(), 9);
        assert_resident(&c, &[7, 0, 1]);
    }

    #[test]
    fn heap_stays_bounded() {
        let keys: Vec<u64> = (0..100_000).map(|i| i % 10).collect();
        let mut c = Belady::new(10);
        for a in with_next_access(&keys, 1) {
            c.access(&a);
        }
        assert!(c.heap.len() <= 2 * c.map.len() + 1025);
        c.validate();
    }

    #[test]
    fn sizes_are_ignored_when_choosing() {
        // Capacity 10. 1 (6 B, next at 3), 2 (4 B, next at 4), 3 (5 B, never again).
        // 3 needs 5 B: evict 2 (reused furthest, at 4): 6 + 5 > 10 still, evict 1. Evicting
        // only 1 would have kept 2 for a hit: by-time Belady is not optimal with sizes.
        // 1: evict 3 (never), 6 B fit. 2: 6 + 4 = 10 fits.
        let mut trace = with_next_access(&[1, 2, 3, 1, 2], 1);
        for (a, size) in trace.iter_mut().zip([6, 4, 5, 6, 4]) {
            a.size = size;
        }
        let mut c = Belady::new(10);
        let hits: Vec<bool> = trace.iter().map(|a| c.access(a)).collect();
        assert_eq!(hits, [false; 5]);
        assert_resident(&c, &[1, 2]);
        c.validate();
    }
}
