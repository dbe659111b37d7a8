//! Active expiry of hash fields (Redis 7.4's field deadlines): which hashes hold a field due
//! when, so that a due field goes — with its `hexpired` event, and the key with a `del` event
//! once its last field went — without waiting for a client to touch the hash.
//!
//! Redis keeps every hash with field deadlines in a global structure ordered by the hash's
//! earliest deadline (its "ebuckets"), and its active-expiry cycle visits the due ones. This
//! is the same idea on fridge's terms: [`FieldDeadlines`] maps (tenant, database, key) to the
//! earliest deadline a command registered for it, ordered by deadline. Commands register a
//! deadline when they set one (`HEXPIRE` and its forms) or store a hash that has some
//! (`RENAME`, `COPY`, `MOVE`); worker 0 sleeps until the earliest is due (its poll timeout,
//! so an idle server with no field deadline still never wakes), takes the due entries 64 at
//! a time and rewrites each hash (`resp::fields::expire_due`), which drops every expired
//! field and registers the hash's next deadline, if any.
//!
//! An entry is a hint, not the truth: the hash may have been deleted, overwritten, evicted or
//! had its deadlines changed since; the rewrite looks at the hash as it is, so a stale entry
//! costs one lookup. Readers never depend on it either — they skip an expired field at once
//! (`types::hash`), so what a client reads is exact whether or not the entry was processed.
//!
//! Memory is bounded: entries take at most a budget of 1/64 of `--memory`, at least 1 MiB
//! (the key plus [`ENTRY_OVERHEAD`] bytes each). Past it, the entry with the latest deadline
//! is dropped (counted in `hash_field_deadlines_dropped`): that hash's fields then expire
//! lazily — hidden from readers at once, their bytes reclaimed at the hash's next write.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use fridge_engine::TenantId;

/// What an entry costs besides its key's bytes (stored once, shared by the two maps): the
/// maps' nodes and the shared allocation's header, an estimate, for the budget.
pub(crate) const ENTRY_OVERHEAD: usize = 96;

/// A hash's identity: tenant, physical database, key (one allocation, shared by both maps).
type Id = (u16, u8, Arc<[u8]>);

/// The hashes with field deadlines, by their earliest registered deadline (module doc).
#[derive(Debug)]
pub(crate) struct FieldDeadlines {
    inner: Mutex<Inner>,
    /// The earliest registered deadline (ms), `u64::MAX` when none: read without the lock by
    /// worker 0 to decide its poll timeout.
    next: AtomicU64,
    /// Bytes the entries may take.
    budget: usize,
    /// Entries dropped for the budget.
    dropped: AtomicU64,
}

#[derive(Debug, Default)]
struct Inner {
    by_time: BTreeSet<(u64, Id)>,
    by_id: HashMap<Id, u64>,
    bytes: usize,
}

impl FieldDeadlines {
    /// The budget for a cache of `memory` bytes: 1/64 of it, at least 1 MiB (an entry takes
    /// its key's bytes plus [`ENTRY_OVERHEAD`], whatever the hash's size).
    pub(crate) fn for_memory(memory: usize) -> Self {
        Self::new((memory / 64).max(1 << 20))
    }

    /// Room for entries of `budget` bytes.
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            next: AtomicU64::new(u64::MAX),
            budget,
            dropped: AtomicU64::new(0),
        }
    }

    /// The earliest registered deadline (ms), `u64::MAX` when none.
    #[inline]
    pub(crate) fn next_ms(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    /// Entries dropped so far because the budget was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The number of hashes registered.
    pub(crate) fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `key` of `tenant`'s physical database `db` holds a field due at `deadline` (ms).
    /// Keeps the earlier of this and a deadline already registered. Returns whether the
    /// earliest deadline of all moved earlier (then worker 0 must be woken to shorten its
    /// sleep).
    pub(crate) fn register(&self, tenant: TenantId, db: u8, key: &[u8], deadline: u64) -> bool {
        let mut inner = self.lock();
        let id: Id = (tenant.0, db, key.into());
        match inner.by_id.get(&id) {
            Some(&at) if at <= deadline => return false,
            Some(&at) => {
                let old = (at, id.clone());
                inner.by_time.remove(&old);
            }
            None => {
                let cost = key.len() + ENTRY_OVERHEAD;
                if inner.bytes + cost > self.budget {
                    // Full: the latest deadline gives way (it may be this one).
                    match inner.by_time.last() {
                        Some((last, _)) if *last > deadline => {
                            let (_, victim) = inner.by_time.pop_last().expect("checked");
                            inner.by_id.remove(&victim);
                            inner.bytes -= victim.2.len() + ENTRY_OVERHEAD;
                            self.dropped.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            self.dropped.fetch_add(1, Ordering::Relaxed);
                            return false;
                        }
                    }
                }
                inner.bytes += cost;
            }
        }
        inner.by_id.insert(id.clone(), deadline);
        inner.by_time.insert((deadline, id));
        let earlier = deadline < self.next.load(Ordering::Acquire);
        if earlier {
            self.next.store(deadline, Ordering::Release);
        }
        earlier
    }

    /// Appends up to `max` entries due at `now_ms` to `due` (tenant, physical database, key),
    /// earliest first.
    pub(crate) fn take_due(
        &self,
        now_ms: u64,
        max: usize,
        due: &mut Vec<(TenantId, u8, Arc<[u8]>)>,
    ) {
        let mut inner = self.lock();
        let start = due.len();
        while due.len() - start < max {
            match inner.by_time.first() {
                Some((at, _)) if *at <= now_ms => {}
                _ => break,
            }
            let (_, id) = inner.by_time.pop_first().expect("checked");
            inner.by_id.remove(&id);
            inner.bytes -= id.2.len() + ENTRY_OVERHEAD;
            due.push((TenantId(id.0), id.1, id.2));
        }
        let next = inner.by_time.first().map_or(u64::MAX, |(at, _)| *at);
        self.next.store(next, Ordering::Release);
    }

    /// Checks the invariants (tests).
    #[cfg(test)]
    fn validate(&self) {
        let inner = self.lock();
        assert_eq!(inner.by_time.len(), inner.by_id.len());
        for (at, id) in &inner.by_time {
            assert_eq!(inner.by_id.get(id), Some(at));
        }
        let bytes: usize = inner.by_id.keys().map(|id| id.2.len() + ENTRY_OVERHEAD).sum();
        assert_eq!(bytes, inner.bytes);
        assert!(inner.bytes <= self.budget);
        let first = inner.by_time.first().map_or(u64::MAX, |(at, _)| *at);
        assert!(self.next_ms() <= first, "next is never later than the earliest entry");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn due(d: &FieldDeadlines, now: u64) -> Vec<(u16, u8, Vec<u8>)> {
        let mut v = Vec::new();
        d.take_due(now, usize::MAX, &mut v);
        v.into_iter().map(|(t, db, k)| (t.0, db, k.to_vec())).collect()
    }

    #[test]
    fn keeps_the_earliest_deadline_per_hash_and_hands_them_out_in_order() {
        let d = FieldDeadlines::new(1 << 20);
        assert_eq!(d.next_ms(), u64::MAX);
        assert!(d.register(TenantId(0), 0, b"a", 300));
        assert!(d.register(TenantId(0), 0, b"b", 100));
        assert!(!d.register(TenantId(0), 0, b"a", 400), "a later deadline changes nothing");
        assert!(!d.register(TenantId(0), 0, b"a", 200), "earlier for a, not for all");
        assert!(!d.register(TenantId(1), 0, b"b", 150), "another tenant's b is its own");
        assert!(!d.register(TenantId(0), 3, b"b", 160), "so is another database's");
        d.validate();
        assert_eq!(d.len(), 4);
        assert_eq!(d.next_ms(), 100);
        assert_eq!(due(&d, 99), vec![]);
        assert_eq!(due(&d, 150), vec![(0, 0, b"b".to_vec()), (1, 0, b"b".to_vec())]);
        assert_eq!(d.next_ms(), 160);
        let mut two = Vec::new();
        d.take_due(1000, 1, &mut two);
        assert_eq!(two.len(), 1, "at most max at a time");
        assert_eq!(&*two[0].2, b"b");
        assert_eq!(d.next_ms(), 200);
        assert_eq!(due(&d, 1000), vec![(0, 0, b"a".to_vec())]);
        assert_eq!(d.next_ms(), u64::MAX);
        d.validate();
    }

    #[test]
    fn a_full_budget_drops_the_latest_deadlines() {
        let cost = 1 + ENTRY_OVERHEAD;
        let d = FieldDeadlines::new(3 * cost);
        for (k, at) in [(b"a", 10), (b"b", 30), (b"c", 20)] {
            d.register(TenantId(0), 0, k, at);
        }
        assert_eq!(d.dropped(), 0);
        d.register(TenantId(0), 0, b"d", 5);
        assert_eq!(d.dropped(), 1, "b, the latest, gave way");
        d.register(TenantId(0), 0, b"e", 99);
        assert_eq!(d.dropped(), 2, "e is later than all: not kept");
        d.validate();
        assert_eq!(
            due(&d, 100),
            vec![(0, 0, b"d".to_vec()), (0, 0, b"a".to_vec()), (0, 0, b"c".to_vec())]
        );
        d.validate();
    }

    #[test]
    fn random_operations_keep_the_invariants() {
        let d = FieldDeadlines::new(40 * (2 + ENTRY_OVERHEAD));
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        let mut taken = Vec::new();
        for step in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 5 == 0 {
                let before = taken.len();
                d.take_due(step, 8, &mut taken);
                assert!(taken.len() - before <= 8);
                if taken.len() - before < 8 {
                    assert!(d.next_ms() > step, "nothing due is left behind");
                }
            } else {
                let key = [(x >> 8) as u8 % 64, (x >> 16) as u8 % 2];
                d.register(TenantId((x >> 24) as u16 % 3), 0, &key, step + (x >> 32) % 500);
            }
            if step % 512 == 0 {
                d.validate();
            }
        }
        d.validate();
    }
}
