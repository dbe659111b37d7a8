//! Runs GET hits on a loaded engine for profiling (`perf record` / `valgrind --tool=callgrind`).
//!
//! `cargo run --release -p fridge-engine --example get_profile -- [keys] [gets]`
use std::sync::Arc;

use fridge_engine::{CleanerMode, Engine, EngineConfig, ManualClock, Store, TenantId};

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().expect("number"));
    let keys = args.next().unwrap_or(1_000_000);
    let gets = args.next().unwrap_or(20_000_000);
    let config = EngineConfig {
        max_memory: 1 << 30,
        cleaner: CleanerMode::Inline,
        ..EngineConfig::default()
    };
    let engine = Engine::with_clock(config, Arc::new(ManualClock::new(1))).expect("engine");
    let mut w = engine.worker().expect("worker");
    let key = |id: u64| {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&id.to_le_bytes());
        k
    };
    for id in 0..keys {
        w.store(Store::new(TenantId(0), &key(id), &[7u8; 32])).expect("store");
    }
    let mut out = [0u8; 32];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let start = std::time::Instant::now();
    for _ in 0..gets {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        w.get(TenantId(0), &key(x % keys), |i| out.copy_from_slice(i.value));
    }
    let secs = start.elapsed().as_secs_f64();
    println!("{:.2} M GET/s ({out:?})", gets as f64 / secs / 1e6);
}
