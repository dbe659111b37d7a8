//! Properties every policy must have, checked on random traces.

use super::hash::SplitMix64;
use super::testutil::with_next_access;
use super::{
    Access, Automove, Belady, Clock, Fifo, Lru, Memcached, MissRatio, Partitioned, Policy,
    RedisLru, S3Fifo, Sieve, SlabConfig, run,
};

/// 1 KiB pages: with unit-size objects (49-byte items), 10 fit a page.
fn small_pages() -> SlabConfig {
    SlabConfig { page_size: 1024, ..SlabConfig::default() }
}

/// Every policy, each holding at most `capacity` bytes (`capacity / 10` pages for memcached,
/// which with unit sizes also holds at most `capacity` objects).
fn all_policies(capacity: u64) -> Vec<Box<dyn Policy>> {
    vec![
        Box::new(Lru::new(capacity)),
        Box::new(Fifo::new(capacity)),
        Box::new(Clock::new(capacity)),
        Box::new(Clock::with_bits(capacity, 2)),
        Box::new(S3Fifo::new(capacity)),
        Box::new(Sieve::new(capacity)),
        Box::new(RedisLru::new(capacity, 5, 7)),
        Box::new(RedisLru::new(capacity, 10, 7)),
        Box::new(Memcached::with_config(capacity / 10 * 1024, small_pages(), Automove::Off)),
        Box::new(Memcached::with_config(
            capacity / 10 * 1024,
            small_pages(),
            Automove::Every { window: 50 },
        )),
        Box::new(Partitioned::with_capacities(&[capacity / 2, capacity - capacity / 2], Lru::new)),
        Box::new(Belady::new(capacity)),
    ]
}

/// Keys drawn from a skewed distribution (the minimum of two uniform draws, so low keys are
/// more popular), with `size(rng)` bytes and tenant `key % 2`.
fn random_trace(
    n: usize,
    keys: u64,
    seed: u64,
    mut size: impl FnMut(&mut SplitMix64) -> u32,
) -> Vec<Access> {
    let mut rng = SplitMix64::new(seed);
    let ks: Vec<u64> = (0..n)
        .map(|_| {
            let a = rng.below(keys as usize) as u64;
            let b = rng.below(keys as usize) as u64;
            a.min(b)
        })
        .collect();
    let mut trace = with_next_access(&ks, 1);
    for a in &mut trace {
        a.size = size(&mut rng);
        a.tenant = (a.key % 2) as u16;
    }
    trace
}

#[test]
fn invariants_under_random_traces() {
    // Sizes 1..=120 bytes; one request in eight changes its key's size, which exercises the
    // size-change path on hits. Memcached charges 48 bytes of header per item: objects up to
    // 120 B land in the 96- to 192-byte classes.
    for seed in 0..4 {
        let trace = random_trace(20_000, 400, seed, |rng| 1 + rng.below(120) as u32);
        for mut p in all_policies(3_000) {
            let name = p.name();
            for (i, a) in trace.iter().enumerate() {
                let was_resident = p.contains(a.key);
                let hit = p.access(a);
                // A hit is exactly a request for a resident key (tenants hold disjoint keys
                // here, since the tenant is key % 2).
                assert_eq!(hit, was_resident, "{name}: request {i}");
                if i % 97 == 0 {
                    p.validate();
                }
                assert!(p.used() <= p.capacity(), "{name}: used > capacity at {i}");
            }
            p.validate();
            assert!(!p.is_empty(), "{name} holds nothing");
        }
    }
}

#[test]
fn a_removed_key_is_gone_and_its_bytes_free() {
    // Random traces with one request in five a DELETE of its key, every policy: a removal
    // reports whether the key was resident, frees exactly its bytes, leaves every other
    // object resident, and the next request for the key misses.
    for seed in 0..4 {
        let trace = random_trace(20_000, 400, seed, |rng| 1 + rng.below(120) as u32);
        let mut rng = SplitMix64::new(seed + 100);
        for mut p in all_policies(3_000) {
            let name = p.name();
            for (i, a) in trace.iter().enumerate() {
                if rng.below(5) == 0 {
                    let size = p.resident_size(a.key);
                    let (used, len) = (p.used(), p.len());
                    assert_eq!(p.remove(a), size.is_some(), "{name}: remove at {i}");
                    assert!(!p.contains(a.key), "{name}: removed key resident at {i}");
                    let freed = size.map_or(0, u64::from);
                    assert_eq!(p.used(), used - freed, "{name}: bytes at {i}");
                    assert_eq!(p.len(), len - usize::from(size.is_some()), "{name}: at {i}");
                    assert!(!p.access(a), "{name}: a removed key hit at {i}");
                } else {
                    p.access(a);
                }
                if i % 97 == 0 {
                    p.validate();
                }
            }
            p.validate();
        }
    }
}

#[test]
fn always_admitting_policies_admit() {
    // Policies without admission limits hold every missed object right after the miss,
    // objects larger than the cache excepted. (After a hit that grows the object, it may be
    // gone: the policy evicts in its own order, and FIFO's oldest may be the object hit.)
    let trace = random_trace(5_000, 300, 42, |rng| 1 + rng.below(400) as u32);
    let policies: Vec<Box<dyn Policy>> = vec![
        Box::new(Lru::new(2_000)),
        Box::new(Fifo::new(2_000)),
        Box::new(Clock::new(2_000)),
        Box::new(Sieve::new(2_000)),
        Box::new(RedisLru::new(2_000, 5, 1)),
        Box::new(Belady::new(2_000)),
        Box::new(S3Fifo::new(4_000)), // S = 400 bytes: every object fits
    ];
    for mut p in policies {
        for a in &trace {
            if !p.access(a) {
                assert!(p.contains(a.key), "{}: key {} not admitted", p.name(), a.key);
            }
        }
        // Larger than the whole cache: never admitted.
        let huge = Access::new(u64::MAX, u32::MAX);
        assert!(!p.access(&huge) && !p.contains(u64::MAX));
    }
}

#[test]
fn belady_beats_everyone_on_unit_sizes() {
    for seed in 0..5 {
        let trace = random_trace(30_000, 1_000, seed, |_| 1);
        let capacity = 100;
        let mut results: Vec<(String, MissRatio)> = all_policies(capacity)
            .into_iter()
            .map(|mut p| (p.name(), run(&mut p, trace.iter().copied())))
            .collect();
        let (name, belady) = results.pop().expect("Belady is last");
        assert_eq!(name, "Belady");
        for (name, mr) in &results {
            assert!(
                belady.hits >= mr.hits,
                "seed {seed}: Belady {} < {name} {}",
                belady.hits,
                mr.hits
            );
        }
        // And by a clear margin over LRU on this trace.
        assert!(belady.hits > results[0].1.hits);
    }
}

#[test]
fn deterministic() {
    // The same trace and seed give the same result (Redis samples with a seeded RNG).
    let trace = random_trace(10_000, 500, 3, |rng| 1 + rng.below(100) as u32);
    let a: Vec<MissRatio> =
        all_policies(2_000).iter_mut().map(|p| run(p, trace.iter().copied())).collect();
    let b: Vec<MissRatio> =
        all_policies(2_000).iter_mut().map(|p| run(p, trace.iter().copied())).collect();
    assert_eq!(a, b);
}

#[test]
fn miss_ratio_counts() {
    let mut lru = Lru::new(100);
    let trace = [(1, 10), (2, 30), (1, 10), (3, 70), (2, 30)].map(|(k, s)| Access::new(k, s));
    // 1 2 miss, 1 hits, 3 evicts 2 (LRU; 1 was just used... 1 is newer) then 2 misses.
    let mr = run(&mut lru, trace);
    assert_eq!(mr, MissRatio { requests: 5, hits: 1, bytes_requested: 150, bytes_hit: 10 });
    assert_eq!(mr.misses(), 4);
    assert!((mr.miss_ratio() - 0.8).abs() < 1e-12);
    assert!((mr.byte_miss_ratio() - 140.0 / 150.0).abs() < 1e-12);
    let mut total = MissRatio::default();
    total.merge(&mr);
    total.merge(&mr);
    assert_eq!(total.requests, 10);
    assert_eq!(MissRatio::default().miss_ratio(), 0.0);
}
