//! Memory bound: writing ten times `max_memory` of items keeps accounted item memory within
//! `max_memory`, and resident memory within `max_memory` plus the reported overhead.
//! (One test in its own binary, so resident memory is this test's alone.)

use std::sync::Arc;

use fridge_engine::{CleanerMode, Engine, EngineConfig, ManualClock, Store, TenantId};

fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("procfs");
    let pages: usize = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("statm");
    pages * 4096
}

#[test]
fn ten_times_max_memory_stays_within_bounds() {
    const MAX_MEMORY: usize = 64 << 20;
    let before = resident_bytes();
    let config = EngineConfig {
        max_memory: MAX_MEMORY,
        cleaner: CleanerMode::Inline,
        ..EngineConfig::default()
    };
    let engine = Engine::with_clock(config, Arc::new(ManualClock::new(1_000_000))).unwrap();
    let mut w = engine.worker().unwrap();
    let mut written = 0usize;
    let mut i = 0u64;
    let mut value = vec![0u8; 4096];
    while written < 10 * MAX_MEMORY {
        let len = 16 + (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize; // 16..4111 B
        value.resize(len, (i % 251) as u8);
        let key = format!("mem:{}", i % 200_000);
        w.store(Store::new(TenantId((i % 4) as u16), key.as_bytes(), &value)).unwrap();
        written += len + key.len();
        i += 1;
        if i % 50_000 == 0 {
            let s = engine.stats();
            assert!(s.item_bytes as usize <= MAX_MEMORY, "accounted {} > max_memory", s.item_bytes);
        }
    }
    let s = engine.stats();
    let grown = resident_bytes().saturating_sub(before);
    // Slack for the allocator, the test harness and the stack.
    let slack = 8 << 20;
    assert!(s.evictions > 0, "the bound was exercised: {s:?}");
    assert!(s.item_bytes as usize <= MAX_MEMORY);
    assert!(
        grown <= MAX_MEMORY + s.overhead_bytes + slack,
        "resident grew {grown} > max_memory {MAX_MEMORY} + overhead {} + slack",
        s.overhead_bytes
    );
    eprintln!(
        "wrote {written} bytes; resident +{grown}; items {} ({} bytes); overhead {}; index {}",
        s.items, s.item_bytes, s.overhead_bytes, s.index_bytes
    );
    engine.validate();
}
