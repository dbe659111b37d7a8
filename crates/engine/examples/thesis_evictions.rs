//! Reproduces the thesis-mix setup of bench/compare inside the engine: 2,000 keys of
//! 10 B (50%), 300 B (45%) or 1 MB (5%) in 256 MiB with 2 MiB segments, then 10% overwrites.
//! Every key fits, so any eviction is the cleaner's doing.
//!
//! `cargo run --release -p fridge-engine --example thesis_evictions [-- --background]`
use std::sync::Arc;

use fridge_engine::{CleanerMode, Engine, EngineConfig, ManualClock, Store, TenantId};

fn main() {
    let config = EngineConfig {
        max_memory: 256 << 20,
        segment_size: 2 << 20,
        max_item_size: 2 << 20,
        workers_hint: 1,
        cleaner: if std::env::args().any(|a| a == "--background") {
            CleanerMode::Background
        } else {
            CleanerMode::Inline
        },
        ..EngineConfig::default()
    };
    let engine = Engine::with_clock(config, Arc::new(ManualClock::new(1))).expect("engine");
    let mut w = engine.worker().expect("worker");
    let size = |k: u64| match k.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 100 {
        0..=49 => 10,
        50..=94 => 300,
        _ => 1_000_000,
    };
    let value = vec![1u8; 1_000_000];
    for k in 0..2000u64 {
        w.store(Store::new(TenantId(0), &k.to_le_bytes(), &value[..size(k)])).expect("store");
    }
    let mut x = 7u64;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = x % 2000;
        w.store(Store::new(TenantId(0), &k.to_le_bytes(), &value[..size(k)])).expect("store");
    }
    let missing = (0..2000u64).filter(|k| !w.contains(TenantId(0), &k.to_le_bytes())).count();
    let s = engine.stats();
    println!(
        "missing {missing} evictions {} passes {} relocated {} ({} MB) fifo {}",
        s.evictions,
        s.cleaner_passes,
        s.relocated_items,
        s.relocated_bytes >> 20,
        s.fifo_evictions
    );
}
