//! `memory_includes_index`: the arena lends segments to the index and the engine's other
//! structures, so that all of them together stay within `max_memory` while small items fill
//! the cache many times over. (One test in its own binary, so resident memory is this
//! test's alone.)

use std::sync::Arc;

use fridge_engine::{CleanerMode, Engine, EngineConfig, EngineStats, ManualClock, Store, TenantId};

const MAX_MEMORY: usize = 32 << 20;

fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("procfs");
    let pages: usize = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("statm");
    pages * 4096
}

/// Fills an engine with 16-byte keys and 32-byte values, `passes` times what fits, checking
/// `check` on the stats every 10,000 stores. Returns the final stats.
fn fill(engine: &Engine, keys: u64, check: impl Fn(&EngineStats)) -> EngineStats {
    let mut w = engine.worker().unwrap();
    let value = [7u8; 32];
    for i in 0..keys {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&i.to_le_bytes());
        w.store(Store::new(TenantId(0), &key, &value)).unwrap();
        if i % 10_000 == 0 {
            check(&engine.stats());
        }
    }
    engine.stats()
}

fn config(includes_index: bool) -> EngineConfig {
    EngineConfig {
        max_memory: MAX_MEMORY,
        cleaner: CleanerMode::Inline,
        memory_includes_index: includes_index,
        ..EngineConfig::default()
    }
}

#[test]
fn arena_and_index_stay_within_max_memory() {
    let before = resident_bytes();
    let engine = Engine::with_clock(config(true), Arc::new(ManualClock::new(1))).unwrap();
    // About three times what fits (60 bytes per item in the arena, some 20 in the index).
    let keys = 3 * MAX_MEMORY as u64 / 60;
    let s = fill(&engine, keys, |s| {
        assert!(
            s.arena_bytes + s.overhead_bytes <= s.max_memory,
            "arena {} + index and the rest {} > max_memory {}",
            s.arena_bytes,
            s.overhead_bytes,
            s.max_memory
        );
    });
    assert!(s.evictions > 0, "the cache filled: {s:?}");
    assert!(s.index_resizes > 0 && s.segments_lent > 0, "the index grew into lent segments: {s:?}");
    assert!(s.arena_bytes + s.overhead_bytes <= s.max_memory);
    engine.validate();
    // What the engine holds: the allocator's free pages (buffers the cleaner grew out of, its
    // sort's scratch) are the allocator's to keep or not, so they are given back first.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory the allocator holds free.
    unsafe {
        libc::malloc_trim(0);
    }
    let grown = resident_bytes().saturating_sub(before);
    eprintln!(
        "with the index counted: {} items, {} segments lent, index {} B, outside the arena {} \
         B, resident +{grown} B",
        s.items, s.segments_lent, s.index_bytes, s.overhead_bytes
    );
    // Slack for the allocator, the test harness and the stack; the index is not on top.
    assert!(grown <= MAX_MEMORY + (8 << 20), "resident grew {grown} > max_memory + slack");

    // The same fill without the setting holds more items, with the index on top.
    drop(engine);
    let engine = Engine::with_clock(config(false), Arc::new(ManualClock::new(1))).unwrap();
    let without = fill(&engine, keys, |_| {});
    eprintln!(
        "index on top: {} items, outside the arena {} B",
        without.items, without.overhead_bytes
    );
    assert_eq!(without.segments_lent, 0);
    assert!(without.items > s.items, "counting the index leaves less room for items");
    assert!(without.arena_bytes + without.overhead_bytes > without.max_memory);
}
