//! GET throughput with the eviction-metadata worker on and off, on the same request stream in
//! the same run.
//!
//! ```text
//! taskset -c 1 cargo bench -p fridge-engine --bench get_metadata -- [keys] [ops]
//!                                          (default: 1M keys, 10M GETs per round)
//! ```
//!
//! Two engines, identical but for `hitmap_bits_per_item`: 32 ("on": every GET logs its
//! digest in the worker's reference pool, full pools go through the lock-free queue to the
//! metadata thread, which applies them to the hitmap) and 0 ("off": no metadata; the pool is
//! still filled and handed to a backend that drops it). Both use `CleanerMode::Background`;
//! the hitmap is sized for `keys` items. Each engine is loaded with every key (16-byte keys,
//! 32-byte values, memory for all: the GETs all hit, no cleaning), then rounds alternate
//! off, on, off, on, …: one thread GETs a pre-generated Zipf(0.99) stream of keys, one call
//! per key, copying the value out; then the same with `get_many` in chunks of 64. The median
//! of the rounds is printed with the ratio on / off.
//!
//! Under `taskset -c 1` the metadata thread shares the measuring thread's core, so "on" pays
//! for applying the digests too (the whole CPU cost of the metadata); the pools the
//! metadata thread could not take in time are dropped and counted, and the figure says so.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use fridge_engine::{CleanerMode, Engine, EngineConfig, ManualClock, Store, TenantId, Worker};
use fridge_workload::{Rng, Zipf, render_key};

mod common;
use common::{arg, median};

const KEY_LEN: usize = 16;
const VALUE_LEN: usize = 32;
const ROUNDS: usize = 5;
const CHUNK: usize = 64;
const T: TenantId = TenantId(0);

type Key = [u8; KEY_LEN];

fn key(id: u64) -> Key {
    let mut k = [0u8; KEY_LEN];
    render_key(id, &mut k);
    k
}

fn engine(keys: u64, bits: usize) -> (Engine, Worker) {
    let config = EngineConfig {
        max_memory: ((keys as usize * 120).next_power_of_two()).max(256 << 20),
        cleaner: CleanerMode::Background,
        hitmap_bits_per_item: bits,
        hitmap_items: keys as usize,
        ..EngineConfig::default()
    };
    let engine =
        Engine::with_clock(config, Arc::new(ManualClock::new(1_700_000_000_000))).expect("engine");
    let mut worker = engine.worker().expect("worker");
    let value = [7u8; VALUE_LEN];
    for id in 0..keys {
        worker.store(Store::new(T, &key(id), &value)).expect("store");
    }
    (engine, worker)
}

/// GETs per second over `stream`, one call per key or `get_many` by chunks.
fn round(worker: &mut Worker, stream: &[Key], batched: bool) -> (f64, usize) {
    let mut out = [0u8; VALUE_LEN];
    let mut hits = 0;
    let start = Instant::now();
    if batched {
        for chunk in stream.chunks(CHUNK) {
            worker.get_many(T, chunk, |_, item| {
                out.copy_from_slice(item.value);
                hits += 1;
            });
        }
    } else {
        for k in stream {
            hits += usize::from(worker.get(T, k, |item| out.copy_from_slice(item.value)).is_some());
        }
    }
    let s = start.elapsed().as_secs_f64();
    black_box(&out);
    (stream.len() as f64 / s, hits)
}

fn main() {
    let keys = arg(0, 1_000_000) as u64;
    let ops = arg(1, 10_000_000);
    let zipf = Zipf::new(keys, 0.99).expect("zipf");
    let mut rng = Rng::new(42);
    let stream: Vec<Key> = (0..ops)
        .map(|_| key(zipf.sample(&mut rng).wrapping_mul(0x9E37_79B9_7F4A_7C15) % keys))
        .collect();
    let (off_engine, mut off) = engine(keys, 0);
    let (on_engine, mut on) = engine(keys, 32);
    println!(
        "# get_metadata: one GET thread, Zipf(0.99) over {keys} keys, 16 B keys, 32 B values, \
         {ops} GETs per round, {ROUNDS} rounds each, background cleaner; hitmap {} KiB",
        on_engine.stats().metadata.bytes >> 10
    );
    println!();
    println!(
        "| GET call | metadata off Mops/s | metadata on Mops/s | on / off | digests applied (on) | pools dropped (on) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for batched in [false, true] {
        let before = on_engine.stats().metadata;
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let (r, hits) = round(&mut off, &stream, batched);
            assert_eq!(hits, ops, "every key is loaded");
            a.push(r);
            let (r, hits) = round(&mut on, &stream, batched);
            assert_eq!(hits, ops, "every key is loaded");
            b.push(r);
        }
        // Let the metadata thread finish what is queued before reading its counters.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let after = on_engine.stats().metadata;
        let (a, b) = (median(a), median(b));
        println!(
            "| {} | {:.2} | {:.2} | {:.3} | {} | {} |",
            if batched { "`get_many` (chunks of 64)" } else { "`get`" },
            a / 1e6,
            b / 1e6,
            b / a,
            after.applied - before.applied,
            after.pools_dropped - before.pools_dropped
        );
    }
    println!();
    println!(
        "digests produced (on): {}, metadata off engine digests: {}",
        on_engine.stats().digests,
        off_engine.stats().digests
    );
}
