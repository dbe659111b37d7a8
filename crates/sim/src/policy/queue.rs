//! The skeleton of the one-queue policies: LRU, FIFO, CLOCK and SIEVE.
//!
//! These four keep every object in one queue ([`super::list`]) with a map from key to node,
//! and serve a request the same way (the module docs of [`super`] give the semantics):
//!
//! ```text
//! access(a):
//!   hit:   rule.on_hit(node); take the new size; evict (rule.victim) until it fits; HIT
//!   miss:  too big → MISS; evict (rule.victim) until it fits; push at the newest end; MISS
//! ```
//!
//! They differ only in what a hit does to the queue and which object an eviction takes, so
//! that is all a [`QueueRule`] says: LRU moves a hit to the newest end and evicts the oldest;
//! FIFO does nothing on a hit; CLOCK counts hits and gives counted objects another lap;
//! SIEVE sets a visited bit and evicts at a moving hand. Costs are the list's and the map's:
//! a 24-byte node plus a map slot (~16 bytes at load factor 7/8) per object.

use super::hash::KeyMap;
use super::list::{Arena, List};
use super::{Access, Policy};

/// What distinguishes one one-queue policy from another.
pub(crate) trait QueueRule: std::fmt::Debug {
    /// The policy's name for reports.
    fn name(&self) -> String;

    /// Updates the metadata of `idx`, a resident object that was just requested.
    fn on_hit(&mut self, queue: &mut List, arena: &mut Arena, idx: u32);

    /// Chooses the object to evict from the non-empty `queue`, reordering or clearing
    /// metadata on the way as the policy does, and returns it still linked.
    fn victim(&mut self, queue: &mut List, arena: &mut Arena) -> u32;

    /// Called before `idx` is unlinked by a removal (not an eviction), so a rule that points
    /// at objects (SIEVE's hand) can move off it.
    fn on_remove(&mut self, _queue: &List, _arena: &Arena, _idx: u32) {}

    /// Checks the rule's own state against the queue; panics if broken.
    #[cfg(test)]
    fn validate(&self, _map: &KeyMap<u32>, _arena: &Arena) {}
}

/// One queue of objects over a byte capacity, ordered and evicted by the rule `R`.
#[derive(Debug)]
pub struct QueuePolicy<R> {
    pub(super) capacity: u64,
    pub(super) map: KeyMap<u32>,
    pub(super) arena: Arena,
    pub(super) queue: List,
    pub(super) rule: R,
}

impl<R> QueuePolicy<R> {
    /// An empty cache holding at most `capacity` bytes of objects.
    pub(super) fn with_rule(capacity: u64, rule: R) -> Self {
        Self { capacity, map: KeyMap::default(), arena: Arena::new(), queue: List::default(), rule }
    }
}

/// Evicts the rule's victims until `incoming` more bytes fit (or the queue is empty).
fn shrink_to_fit<R: QueueRule>(p: &mut QueuePolicy<R>, incoming: u64) {
    while p.queue.bytes + incoming > p.capacity && p.queue.len > 0 {
        let idx = p.rule.victim(&mut p.queue, &mut p.arena);
        p.queue.unlink(&mut p.arena, idx);
        p.map.remove(&p.arena[idx].key);
        p.arena.free(idx);
    }
}

impl<R: QueueRule> Policy for QueuePolicy<R> {
    fn name(&self) -> String {
        self.rule.name()
    }

    fn access(&mut self, a: &Access) -> bool {
        if let Some(&idx) = self.map.get(&a.key) {
            self.rule.on_hit(&mut self.queue, &mut self.arena, idx);
            if self.arena[idx].size != a.size {
                self.queue.set_size(&mut self.arena, idx, a.size);
                shrink_to_fit(self, 0);
            }
            return true;
        }
        if u64::from(a.size) > self.capacity {
            return false;
        }
        shrink_to_fit(self, u64::from(a.size));
        let idx = self.arena.alloc(a.key, a.size);
        self.queue.push_newest(&mut self.arena, idx);
        self.map.insert(a.key, idx);
        false
    }

    fn remove(&mut self, a: &Access) -> bool {
        let Some(idx) = self.map.remove(&a.key) else { return false };
        self.rule.on_remove(&self.queue, &self.arena, idx);
        self.queue.unlink(&mut self.arena, idx);
        self.arena.free(idx);
        true
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn used(&self) -> u64 {
        self.queue.bytes
    }

    fn len(&self) -> usize {
        self.queue.len
    }

    fn contains(&self, key: u64) -> bool {
        self.map.contains_key(&key)
    }

    fn resident_size(&self, key: u64) -> Option<u32> {
        self.map.get(&key).map(|&idx| self.arena[idx].size)
    }

    #[cfg(test)]
    fn validate(&self) {
        self.queue.validate(&self.arena);
        assert_eq!(self.map.len(), self.queue.len);
        assert_eq!(self.arena.live(), self.queue.len);
        assert!(self.queue.bytes <= self.capacity);
        self.rule.validate(&self.map, &self.arena);
    }
}
