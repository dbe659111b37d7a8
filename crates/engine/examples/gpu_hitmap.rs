//! The hitmap on a GPU against the hitmap on one CPU core: digests applied per second end to
//! end, the latency of a cleaner's temperature batch, and the equality of the two at scale.
//!
//! ```text
//! cargo build --release -p fridge-engine --example gpu_hitmap
//! target/release/examples/gpu_hitmap [digests] [items,…]   (default 20M; 25M,200M,800M)
//! ```
//!
//! For hitmaps of 128 MiB, 1 GiB and 4 GiB (25M, 200M and 800M items at 32 bits), a stream of
//! digests drawn from Zipf(0.99) over twice as many keys as items, one in ten a SET, is
//! applied in reference pools of 1024 — once to warm up (every page touched, a steady fill),
//! then timed:
//!
//! - **gpu, B pools**: `GpuMemory::append` of every pool, staged in pinned buffers and
//!   applied B pools per batch (copy, snapshot, marks, compaction steps), then `flush` and a
//!   read of the counters, which waits for the device: digests per second from the first
//!   append to the device's last kernel.
//! - **cpu**: `Hitmap::record_pool` and the compaction check on one core, the same pools.
//!
//! Then the temperatures of batches of 1,000, 10,000 and 100,000 digests (a cleaner pass's
//! survivors): the median time of 21 queries, GPU (copy in, kernel, copy back) and CPU.
//!
//! Last, equality at scale: the 128 MiB hitmap fed the first 2M digests one pool per batch on
//! the GPU and on the CPU, every word compared.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use fridge_engine::TenantId;
use fridge_engine::hash::{digest_of, key_hash};
use fridge_engine::hitmap::{DEFAULT_LEVELS, Hitmap};
use fridge_engine::{GpuMemory, Structure, Temperature};
use fridge_workload::{Rng, Zipf};

const POOL: usize = 1024;
const BITS: usize = 32;

fn stream(keys: u64, n: usize) -> Vec<u32> {
    let zipf = Zipf::new(keys, 0.99).expect("zipf");
    let mut rng = Rng::new(7);
    (0..n)
        .map(|i| {
            let id = zipf.sample(&mut rng);
            digest_of(key_hash(TenantId(0), &id.to_le_bytes())) & !1 | u32::from(i % 10 == 0)
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn gpu_rate(items: usize, pools: usize, digests: &[u32]) -> Result<(f64, String), String> {
    let mut g = GpuMemory::new(items, BITS, pools * POOL)?;
    let never = AtomicBool::new(false);
    for pool in digests.chunks(POOL) {
        g.append(pool, &never);
    }
    g.flush();
    let _ = g.shape();
    let start = Instant::now();
    for pool in digests.chunks(POOL) {
        g.append(pool, &never);
    }
    g.flush();
    let (bytes, _, compactions) = g.shape(); // waits for the device
    let rate = digests.len() as f64 / start.elapsed().as_secs_f64();
    Ok((rate, format!("{} MiB, {compactions} compactions, {}", bytes >> 20, g.device())))
}

fn cpu_rate(items: usize, digests: &[u32]) -> (f64, Hitmap) {
    let mut h = Hitmap::for_items(items, BITS, DEFAULT_LEVELS).expect("maps the hitmap");
    let never = AtomicBool::new(false);
    for pool in digests.chunks(POOL) {
        h.append(pool, &never);
    }
    let start = Instant::now();
    for pool in digests.chunks(POOL) {
        h.append(pool, &never);
    }
    (digests.len() as f64 / start.elapsed().as_secs_f64(), h)
}

fn main() -> Result<(), String> {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(Ok(20_000_000), |a| a.parse())
        .map_err(|e| format!("digests: {e}"))?;
    let sizes: Vec<usize> = match std::env::args().nth(2) {
        Some(list) => list
            .split(',')
            .map(|s| s.parse().map_err(|e| format!("items: {e}")))
            .collect::<Result<_, _>>()?,
        None => vec![25_000_000, 200_000_000, 800_000_000],
    };
    println!("# gpu_hitmap: {n} digests, Zipf(0.99) over 2 x items keys, pools of {POOL}");
    println!(
        "| hitmap | items | cpu (1 core) M/s | gpu 16 pools M/s | gpu 64 pools M/s | gpu 256 pools M/s | gpu 64 / cpu |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut first_cpu = None;
    for &items in &sizes {
        let digests = stream(2 * items as u64, n);
        let (cpu, h) = cpu_rate(items, &digests);
        let mut row = Vec::new();
        let mut what = String::new();
        for pools in [16, 64, 256] {
            let (rate, w) = gpu_rate(items, pools, &digests)?;
            row.push(rate);
            what = w;
        }
        println!(
            "| {} MiB | {items} | {:.1} | {:.0} | {:.0} | {:.0} | {:.0} |",
            h.bytes() >> 20,
            cpu / 1e6,
            row[0] / 1e6,
            row[1] / 1e6,
            row[2] / 1e6,
            row[1] / cpu
        );
        eprintln!("  ({what})");
        if first_cpu.is_none() {
            first_cpu = Some((items, h, digests));
        }
    }

    let (items, mut h, digests) = first_cpu.expect("one size");
    let mut g = GpuMemory::new(items, BITS, 64 * POOL)?;
    let never = AtomicBool::new(false);
    for pool in digests.chunks(POOL) {
        g.append(pool, &never);
    }
    g.flush();
    println!();
    println!("| temperature batch | gpu median µs | cpu median µs |");
    println!("|---:|---:|---:|");
    for batch in [1_000usize, 10_000, 100_000] {
        let probe = &digests[..batch];
        let (mut out, mut gt, mut ct) = (Vec::<Temperature>::new(), Vec::new(), Vec::new());
        for _ in 0..21 {
            let t = Instant::now();
            g.zones(probe, &mut out);
            gt.push(t.elapsed().as_secs_f64() * 1e6);
            let t = Instant::now();
            h.zones(probe, &mut out);
            ct.push(t.elapsed().as_secs_f64() * 1e6);
        }
        println!("| {batch} | {:.0} | {:.0} |", median(gt), median(ct));
    }

    let check = &digests[..digests.len().min(2_000_000)];
    let mut g = GpuMemory::new(items, BITS, POOL)?;
    let mut c = Hitmap::for_items(items, BITS, DEFAULT_LEVELS).expect("maps the hitmap");
    for pool in check.chunks(POOL) {
        g.append(pool, &never);
        g.flush();
        c.append(pool, &never);
    }
    let (words, ones, compactions) = g.download()?;
    let equal = (0..=c.levels()).all(|m| words[m] == c.level_words(m))
        && ones == c.level1_count()
        && compactions == c.shape().1;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    g.zones(check, &mut a);
    c.zones(check, &mut b);
    println!();
    println!(
        "equality at scale ({} MiB, {} digests, one pool per batch): words {}, zones {}",
        c.bytes() >> 20,
        check.len(),
        if equal { "equal" } else { "DIFFERENT" },
        if a == b { "equal" } else { "DIFFERENT" }
    );
    if !equal || a != b {
        return Err("the GPU hitmap differs from the CPU's".into());
    }
    Ok(())
}
