//! Measures how many requests per second each reference policy serves on one core.
//!
//! ```text
//! cargo run --release -p fridge-sim --example policy_throughput -- [requests] [keys] [alpha]
//! ```
//!
//! The stream: `requests` (default 10M) requests over `keys` (default 1M) keys whose
//! popularity follows Zipf(`alpha`, default 0.99), key ids scrambled by a hash so that
//! popular keys are not neighbours. It is generated before any timing starts, and
//! `next_access_vtime` is filled in for Belady. Two runs: unit-size objects with a cache of
//! 10% of the keys, and per-key sizes uniform in 50..=1000 bytes with a cache of 10% of the
//! working set's bytes. Each policy is timed over the whole stream, cold start included.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Instant;

use fridge_sim::policy::{
    Access, Automove, Belady, Clock, Fifo, Lru, Memcached, NEVER, Partitioned, Policy, RedisLru,
    S3Fifo, Sieve, run,
};

/// splitmix64, enough for a benchmark's stream.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    /// Uniform in [0, 1).
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Zipf-distributed ranks by inverse transform over the precomputed CDF.
fn zipf_stream(requests: usize, keys: usize, alpha: f64, seed: u64) -> Vec<u64> {
    let mut cdf = Vec::with_capacity(keys);
    let mut sum = 0.0;
    for rank in 1..=keys {
        sum += 1.0 / (rank as f64).powf(alpha);
        cdf.push(sum);
    }
    let mut rng = Rng(seed);
    (0..requests)
        .map(|_| {
            let u = rng.next_f64() * sum;
            let rank = cdf.partition_point(|&c| c < u).min(keys - 1);
            mix(rank as u64 ^ 0x5eed)
        })
        .collect()
}

fn trace(keys: &[u64], size_of: impl Fn(u64) -> u32) -> Vec<Access> {
    let mut out: Vec<Access> = keys
        .iter()
        .map(|&k| Access { tenant: (k % 2) as u16, ..Access::new(k, size_of(k)) })
        .collect();
    let mut next: HashMap<u64, i64> = HashMap::new();
    for (i, a) in out.iter_mut().enumerate().rev() {
        a.next_access_vtime = next.insert(a.key, i as i64).unwrap_or(NEVER);
    }
    out
}

fn policies(capacity: u64) -> Vec<Box<dyn Policy>> {
    vec![
        Box::new(Lru::new(capacity)),
        Box::new(Fifo::new(capacity)),
        Box::new(Clock::new(capacity)),
        Box::new(S3Fifo::new(capacity)),
        Box::new(Sieve::new(capacity)),
        Box::new(RedisLru::new(capacity, 5, 1)),
        Box::new(RedisLru::new(capacity, 10, 1)),
        Box::new(Partitioned::with_capacities(&[capacity / 2, capacity - capacity / 2], Lru::new)),
        Box::new(Belady::new(capacity)),
    ]
}

fn measure(title: &str, trace: &[Access], mut policies: Vec<Box<dyn Policy>>) {
    println!("\n{title}");
    println!("{:<28} {:>12} {:>10} {:>10}", "policy", "requests/s", "miss", "byte miss");
    for p in &mut policies {
        let start = Instant::now();
        let mr = run(p, trace.iter().copied());
        let secs = start.elapsed().as_secs_f64();
        black_box(&mr);
        println!(
            "{:<28} {:>12.0} {:>10.4} {:>10.4}",
            p.name(),
            trace.len() as f64 / secs,
            mr.miss_ratio(),
            mr.byte_miss_ratio()
        );
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let requests: usize = args.next().map_or(10_000_000, |s| s.parse().expect("requests"));
    let keys: usize = args.next().map_or(1_000_000, |s| s.parse().expect("keys"));
    let alpha: f64 = args.next().map_or(0.99, |s| s.parse().expect("alpha"));
    println!("{requests} requests, {keys} keys, Zipf alpha {alpha}");
    let stream = zipf_stream(requests, keys, alpha, 42);

    let unit = trace(&stream, |_| 1);
    let objects = (keys / 10) as u64;
    measure(&format!("unit sizes, cache {objects} objects"), &unit, policies(objects));

    let size_of = |k: u64| 50 + (mix(k) % 951) as u32;
    let sized = trace(&stream, size_of);
    let mut working_set: HashMap<u64, u32> = HashMap::new();
    for a in &sized {
        working_set.insert(a.key, a.size);
    }
    let bytes: u64 = working_set.values().map(|&s| u64::from(s)).sum::<u64>() / 10;
    let mut list = policies(bytes);
    list.insert(6, Box::new(Memcached::new(bytes, Automove::Off)));
    list.insert(7, Box::new(Memcached::new(bytes, Automove::Every { window: 100_000 })));
    measure(&format!("sizes 50..=1000 B, cache {bytes} B (10% of the working set)"), &sized, list);
}
