//! Measures the expiry sweep on a loaded index: a full pass, and what one background step of
//! it costs (the background thread spreads a pass over steps of a bounded amount of work: a
//! root bucket or a key record read is one unit; see `crates/engine/src/expiry.rs`).
//!
//! `cargo run --release -p fridge-engine --example expiry_sweep -- [keys]`
//!
//! 16-byte keys and 32-byte values in 1 GiB, three shapes: every item expires in an hour but
//! one (the pass skips every segment but one by its header); every thousandth item expires
//! within a millisecond (every segment is past its earliest expiry: the first pass reads every
//! record, the next ones only what it could not rule out); and no item expires.
use std::sync::Arc;

use fridge_engine::{
    CleanerMode, Clock, Engine, EngineConfig, Expiry, ManualClock, Store, TenantId,
};

/// The background step's budget for an index of `roots` roots (as `expiry::work_per_step`).
fn budget(roots: usize) -> usize {
    (roots / 100).clamp(256, 16 << 10)
}

fn pass(engine: &Engine, what: &str) {
    let before = engine.stats();
    let start = std::time::Instant::now();
    let reclaimed = engine.reclaim_expired();
    let secs = start.elapsed().as_secs_f64();
    let after = engine.stats();
    let roots = after.index_buckets;
    let checked = after.sweep_checked - before.sweep_checked;
    let work = roots as u64 + checked;
    let steps = work.div_ceil(budget(roots) as u64).max(1);
    println!(
        "{what}: {:.1} ms over {roots} roots, {checked} records read, {reclaimed} reclaimed; \
         as background steps: {steps} × {:.2} ms",
        secs * 1e3,
        secs * 1e3 / steps as f64
    );
}

fn main() {
    let keys: u64 = std::env::args().nth(1).map_or(10_000_000, |a| a.parse().expect("number"));
    for short_every in [keys, 1000] {
        let clock = ManualClock::new(1_700_000_000_000);
        let config = EngineConfig {
            max_memory: 1 << 30,
            cleaner: CleanerMode::Inline,
            ..EngineConfig::default()
        };
        let engine = Engine::with_clock(config, Arc::new(clock.clone())).expect("engine");
        let mut w = engine.worker().expect("worker");
        let now = clock.now_ms();
        for id in 0..keys {
            let mut key = [0u8; 16];
            key[..8].copy_from_slice(&id.to_le_bytes());
            let at = if id % short_every == short_every / 2 { now + 1 } else { now + 3_600_000 };
            let store = Store { expiry: Expiry::At(at), ..Store::new(TenantId(0), &key, &[7; 32]) };
            w.store(store).expect("store");
        }
        println!("{} items, 1 in {short_every} expiring first", engine.stats().items);
        clock.advance(2);
        pass(&engine, "  first pass");
        // One more item per segment's worth expires; the pass reads only what it must.
        let mut key = [1u8; 16];
        key[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        let store =
            Store { expiry: Expiry::At(clock.now_ms() + 1), ..Store::new(TenantId(0), &key, b"x") };
        w.store(store).expect("store");
        clock.advance(2);
        pass(&engine, "  next pass");
    }
}
