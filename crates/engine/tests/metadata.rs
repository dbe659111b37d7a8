//! Eviction metadata end to end: under Memshare's evicting pass, the hitmap rank keeps a hot
//! working set through a scan of one-time keys that exact LRU (and the engine's own recency
//! rank) lets it be evicted by. S3-FIFO's queues keep it with either rank (their read
//! counts decide what stays).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use fridge_engine::{
    CleanerMode, Engine, EngineConfig, Eviction, ManualClock, Queues, RankKind, Store,
    StoreOutcome::Stored, TenantId, TenantPolicy, Update, Worker,
};

const T: TenantId = TenantId(0);
const VALUE: [u8; 100] = [7; 100];
/// Items of ~120 bytes (12 B record + 8 B key + 100 B value) in 4 MiB: about 30k resident.
const MEMORY: usize = 4 << 20;
const HOT: u64 = 12_000;
const WARMUP_ROUNDS: u64 = 4;
/// Scan inserts per hot access in the measured phase.
const SCAN_PER_HOT: u64 = 3;
const MEASURED_HOT_ACCESSES: u64 = 120_000;

fn engine(rank: RankKind, eviction: Eviction) -> Engine {
    let config = EngineConfig {
        max_memory: MEMORY,
        segment_size: 64 << 10,
        max_item_size: 64 << 10,
        cleaner: CleanerMode::Inline,
        cleaner_candidates: 16,
        hitmap_items: MEMORY / 120,
        eviction,
        ..EngineConfig::default()
    };
    let engine = Engine::with_clock(config, Arc::new(ManualClock::new(1))).unwrap();
    engine.set_tenant_policy(T, TenantPolicy { rank, ..TenantPolicy::default() });
    engine
}

/// The request stream: warm the hot set, then one hot access per `SCAN_PER_HOT` one-time keys.
/// Yields (key, measured).
fn requests() -> impl Iterator<Item = (u64, bool)> {
    let warm = (0..WARMUP_ROUNDS * HOT).map(|i| (i % HOT, false));
    let mixed = (0..MEASURED_HOT_ACCESSES).flat_map(|i| {
        let scan = (0..SCAN_PER_HOT).map(move |j| (1_000_000 + i * SCAN_PER_HOT + j, false));
        std::iter::once((i * 7_919 % HOT, true)).chain(scan)
    });
    warm.chain(mixed)
}

/// Hit ratio of the measured hot accesses through the engine, lookaside (a miss stores).
fn engine_hot_hit_ratio(rank: RankKind, eviction: Eviction) -> f64 {
    let engine = engine(rank, eviction);
    let mut w = engine.worker().unwrap();
    let (mut hits, mut total) = (0u64, 0u64);
    for (key, measured) in requests() {
        let k = key.to_le_bytes();
        let hit = w.get(T, &k, |_| ()).is_some();
        if !hit {
            w.store(Store::new(T, &k, &VALUE)).unwrap();
        }
        if measured {
            total += 1;
            hits += u64::from(hit);
        }
    }
    engine.validate();
    hits as f64 / total as f64
}

/// The same through exact LRU holding as many items as the engine held at its fullest.
fn exact_lru_hot_hit_ratio(capacity: usize) -> f64 {
    let (mut by_key, mut by_time) = (HashMap::new(), BTreeMap::new());
    let (mut hits, mut total) = (0u64, 0u64);
    for (tick, (key, measured)) in requests().enumerate() {
        let hit = match by_key.insert(key, tick) {
            Some(old) => {
                by_time.remove(&old);
                true
            }
            None => false,
        };
        by_time.insert(tick, key);
        if by_key.len() > capacity {
            let (_, victim) = by_time.pop_first().unwrap();
            by_key.remove(&victim);
        }
        if measured {
            total += 1;
            hits += u64::from(hit);
        }
    }
    hits as f64 / total as f64
}

#[test]
fn a_scan_does_not_evict_the_hot_set_under_the_hitmap_rank() {
    let hitmap = engine_hot_hit_ratio(RankKind::Hitmap, Eviction::Memshare);
    let recency = engine_hot_hit_ratio(RankKind::Lru, Eviction::Memshare);
    // The arena holds about MEMORY / 120 items; exact LRU gets the same number of slots.
    let lru = exact_lru_hot_hit_ratio(MEMORY / 120);
    eprintln!("hot-set hit ratio: hitmap {hitmap:.3}, engine lru {recency:.3}, exact lru {lru:.3}");
    assert!(lru < 0.1, "the scan evicts the hot set under exact LRU: {lru}");
    assert!(recency < 0.2, "and under the engine's recency rank: {recency}");
    assert!(hitmap > 0.9, "the hitmap keeps it: {hitmap}");
}

#[test]
fn a_scan_does_not_evict_the_hot_set_from_the_queues() {
    for rank in [RankKind::Hitmap, RankKind::Lru] {
        let queues = engine_hot_hit_ratio(rank, Eviction::Queues(Queues::default()));
        assert!(queues > 0.9, "the queues keep it under the {rank:?} rank: {queues}");
    }
}

#[test]
fn only_accesses_that_find_or_leave_an_item_feed_the_metadata() {
    let engine = engine(RankKind::Hitmap, Eviction::Memshare);
    let mut w = engine.worker().unwrap();
    // References handed to the metadata by `step`.
    let counted = |w: &mut Worker, step: &dyn Fn(&mut Worker)| {
        w.flush_reference_pool();
        let before = engine.stats().digests;
        step(w);
        w.flush_reference_pool();
        engine.stats().digests - before
    };
    let keep = |w: &mut Worker, key: &[u8]| w.update(T, key, |c, _| Ok(Update::Done(c.is_some())));
    let store = |w: &mut Worker| assert_eq!(w.store(Store::new(T, b"k", b"v")), Ok(Stored));
    let hit = |w: &mut Worker| assert_eq!(w.get(T, b"k", |i| i.value.to_vec()), Some(b"v".into()));
    let write = |w: &mut Worker| {
        let wrote = w.update(T, b"k", |_, buf| {
            buf.extend_from_slice(b"v");
            Ok(Update::Write { flags: 0, expires_at_ms: None, result: 1 })
        });
        assert_eq!(wrote, Ok(1));
    };
    assert_eq!(counted(&mut w, &store), 1, "a store");
    assert_eq!(counted(&mut w, &hit), 1, "a hit");
    assert_eq!(counted(&mut w, &write), 1, "an update that writes");
    let left = |w: &mut Worker| assert_eq!(keep(w, b"k"), Ok(true));
    assert_eq!(counted(&mut w, &left), 1, "an update that reads the item and leaves it");
    let missing = |w: &mut Worker| assert_eq!(keep(w, b"none"), Ok(false));
    assert_eq!(counted(&mut w, &missing), 0, "an update of a missing key that writes nothing");
    assert_eq!(counted(&mut w, &|w| assert!(!w.delete(T, b"none"))), 0, "a DEL of a missing key");
    assert_eq!(counted(&mut w, &|w| assert!(w.delete(T, b"k"))), 0, "a DEL");
    engine.validate();
}
