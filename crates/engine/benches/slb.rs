//! GET-hit throughput with the search lookaside buffer (SLB §4) on and off, one thread, one
//! call per key.
//!
//! ```text
//! cargo bench -p fridge-engine --bench slb -- [keys] [ops] [rounds]   (default: 10M 5M 3)
//! cargo bench -p fridge-engine --bench slb -- 100_000_000 5_000_000 3 --sizes=1048576
//! taskset -c 1 cargo bench ...                                        (pin to one core)
//! ```
//!
//! For each SLB size (256 KiB, 1 MiB and 4 MiB of cache table, or `--sizes=` in bytes) an
//! engine stores `keys` items of 16-byte keys and 32-byte values, warms its SLB up with one
//! pass of the Zipf stream, then times (in the thread's CPU time) the same pre-generated GET
//! streams — Zipf(0.99) over the keys (ids scrambled so popular keys are spread), and uniform
//! — with lookups through the SLB and straight to the index ([`Engine::use_slb`]), alternating
//! on the same engine so that memory and layout are the same for both; each GET copies its
//! value out. The table shows the median round of each, their ratio, and the share of GETs
//! the SLB answered; the range of each round's on / off shows the spread behind the ratio.

use std::hint::black_box;
use std::sync::Arc;

use fridge_engine::{CleanerMode, Engine, EngineConfig, ManualClock, Store, TenantId, Worker};
use fridge_workload::{Rng, Zipf, render_key};

mod common;
use common::{arg, median};

const KEY_LEN: usize = 16;
const VALUE_LEN: usize = 32;
const T: TenantId = TenantId(0);
/// Cache-table sizes compared unless `--sizes=` says otherwise.
const SLB_SIZES: [usize; 3] = [256 << 10, 1 << 20, 4 << 20];

/// `--sizes=a,b,...` in bytes, or [`SLB_SIZES`].
fn sizes() -> Vec<usize> {
    match std::env::args().find_map(|a| a.strip_prefix("--sizes=").map(str::to_string)) {
        Some(list) => list.split(',').map(|s| s.parse().expect("--sizes=: bytes")).collect(),
        None => SLB_SIZES.to_vec(),
    }
}

type Key = [u8; KEY_LEN];

fn key(id: u64) -> Key {
    let mut k = [0u8; KEY_LEN];
    render_key(id, &mut k);
    k
}

fn scramble(rank: u64, n: u64) -> u64 {
    rank.wrapping_mul(0x9E37_79B9_7F4A_7C15) % n
}

fn streams(keys: u64, ops: usize) -> [(&'static str, Vec<Key>); 2] {
    let zipf = Zipf::new(keys, 0.99).expect("zipf");
    let mut rng = Rng::new(7);
    let skewed = (0..ops).map(|_| key(scramble(zipf.sample(&mut rng), keys))).collect();
    let mut rng = Rng::new(8);
    let uniform = (0..ops).map(|_| key(rng.below(keys))).collect();
    [("zipf 0.99", skewed), ("uniform", uniform)]
}

fn engine(keys: u64, slb_bytes: usize) -> (Engine, Worker) {
    // Room for every item (a record of 21 bytes, key and value: 69 bytes; 96 with slack).
    let max_memory = ((keys as usize * 96) + (64 << 20)).next_power_of_two();
    let config = EngineConfig {
        max_memory,
        cleaner: CleanerMode::Inline,
        slb_bytes,
        hitmap_bits_per_item: 0,
        ..EngineConfig::default()
    };
    let engine =
        Engine::with_clock(config, Arc::new(ManualClock::new(1_700_000_000_000))).expect("engine");
    let mut w = engine.worker().expect("worker");
    let value = [7u8; VALUE_LEN];
    for id in 0..keys {
        w.store(Store::new(T, &key(id), &value)).expect("store");
    }
    assert_eq!(engine.stats().items, keys, "every key fits");
    (engine, w)
}

/// This thread's CPU time in seconds (steadier than the wall clock on a shared machine).
fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Mops per CPU-second of one pass over `stream`.
fn run(w: &mut Worker, stream: &[Key]) -> f64 {
    let mut out = [0u8; VALUE_LEN];
    let start = thread_cpu_secs();
    let mut hits = 0u64;
    for k in stream {
        if w.get(T, k, |item| out.copy_from_slice(item.value)).is_some() {
            hits += 1;
        }
        black_box(&out);
    }
    let secs = thread_cpu_secs() - start;
    assert_eq!(hits, stream.len() as u64, "every GET hits");
    stream.len() as f64 / secs / 1e6
}

fn main() {
    let keys = arg(0, 10_000_000) as u64;
    let ops = arg(1, 5_000_000);
    let rounds = arg(2, 3).max(1);
    eprintln!("generating {ops} GETs per stream over {keys} keys");
    let streams = streams(keys, ops);
    println!(
        "GET hit, one call per key, {keys} keys of 16 B + 32 B values, {ops} GETs per round, \
         median of {rounds} rounds (SLB on and off alternating on the same engine)"
    );
    println!(
        "| SLB cache table | stream | Mops per CPU-s, off | on | on / off | rounds' on / off | \
         SLB hit rate |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    for size in sizes() {
        eprintln!("loading the engine with an SLB of {size} B");
        let (engine, mut w) = engine(keys, size);
        // Warm-up: the SLB admits the hot keys.
        run(&mut w, &streams[0].1);
        for (name, stream) in &streams {
            let (mut off, mut on) = (Vec::new(), Vec::new());
            let hits_before = engine.stats().slb_hits;
            for round in 0..rounds {
                // Alternate which goes first, so that neither always follows the other.
                for turn in 0..2 {
                    let slb = (round + turn) % 2 == 1;
                    engine.use_slb(slb);
                    let figure = run(&mut w, stream);
                    if slb { on.push(figure) } else { off.push(figure) }
                }
            }
            engine.use_slb(true);
            let hit_rate = (engine.stats().slb_hits - hits_before) as f64 / (rounds * ops) as f64;
            // Each round's on / off, to show the spread behind the medians' ratio.
            let per_round: Vec<f64> = on.iter().zip(&off).map(|(a, b)| a / b).collect();
            let low = per_round.iter().copied().fold(f64::INFINITY, f64::min);
            let high = per_round.iter().copied().fold(0.0, f64::max);
            let (off, on) = (median(off), median(on));
            let label = format!("{} KiB", size >> 10);
            println!(
                "| {label} | {name} | {off:.2} | {on:.2} | {:.2} | {low:.2}–{high:.2} | {:.0}% |",
                on / off,
                100.0 * hit_rate
            );
        }
    }
}
