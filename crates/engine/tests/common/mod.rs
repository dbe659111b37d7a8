//! Helpers shared by the engine's integration tests.

// Each test binary uses a different subset of these helpers; `expect` would fail in the
// binaries that do use them all.
#![allow(dead_code, reason = "shared by test binaries that each use a subset")]

use std::sync::Arc;

use fridge_engine::{CleanerMode, Engine, EngineConfig, Eviction, ManualClock};

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
    let clock = ManualClock::new(1_700_000_000_000);
    let config = EngineConfig {
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
    };
    let engine = Engine::with_clock(config, Arc::new(clock.clone())).expect("engine");
    (engine, clock)
}
