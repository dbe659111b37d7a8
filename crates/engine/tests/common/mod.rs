//! Helpers shared by the engine's integration tests.

// Each test binary uses a different subset of these helpers; `expect` would fail in the
// binaries that do use them all.
#![allow(dead_code, reason = "shared by test binaries that each use a subset")]

use std::sync::Arc;

use fridge_engine::{
    CleanerMode, Engine, EngineConfig, Eviction, ManualClock, Store, TenantId, Worker,
};

/// A small engine with an inline cleaner on a manual clock, so that the cleaner runs often
/// and everything is deterministic.
pub fn small_engine(max_memory: usize, segment_size: usize) -> (Engine, ManualClock) {
    small_engine_with(max_memory, segment_size, EngineConfig::default().inline_value_max)
}

/// [`small_engine`] with a chosen `inline_value_max`.
pub fn small_engine_with(
    max_memory: usize,
    segment_size: usize,
    inline_value_max: usize,
) -> (Engine, ManualClock) {
    small_engine_evicting(max_memory, segment_size, inline_value_max, Eviction::Memshare)
}

/// [`small_engine_with`] with a chosen eviction.
pub fn small_engine_evicting(
    max_memory: usize,
    segment_size: usize,
    inline_value_max: usize,
    eviction: Eviction,
) -> (Engine, ManualClock) {
    small_engine_from(small_config(max_memory, segment_size, inline_value_max, eviction))
}

/// The settings of [`small_engine_evicting`], for a test to change before
/// [`small_engine_from`].
pub fn small_config(
    max_memory: usize,
    segment_size: usize,
    inline_value_max: usize,
    eviction: Eviction,
) -> EngineConfig {
    EngineConfig {
        max_memory,
        segment_size,
        max_item_size: segment_size,
        large_value_threshold: segment_size / 4,
        cleaner: CleanerMode::Inline,
        cleaner_candidates: 8,
        index_buckets: 16,
        inline_value_max,
        eviction,
        ..EngineConfig::default()
    }
}

/// An engine of `config` on a manual clock.
pub fn small_engine_from(config: EngineConfig) -> (Engine, ManualClock) {
    let clock = ManualClock::new(1_700_000_000_000);
    let engine = Engine::with_clock(config, Arc::new(clock.clone())).expect("engine");
    (engine, clock)
}

/// Stores a 1,000-byte value `stores` times under keys drawn at random (xorshift, a fixed seed)
/// from `keys` little-endian ids, for tenant 0: a working set overwritten in place.
pub fn overwrite_at_random(w: &mut Worker, keys: u64, stores: usize) {
    let value = [3u8; 1000];
    let mut x = 12345u64;
    for _ in 0..stores {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = (x % keys).to_le_bytes();
        w.store(Store::new(TenantId(0), &k, &value)).unwrap();
    }
}
