//! `fridge-memsim`: a workload through the real engine, and the lines each GET reads through
//! a model of the memory hierarchy (`fridge_sim::memory`): L2 and L3, optionally a DRAM cache
//! (direct-mapped Alloy-style or N-way, with or without priority lines), memory. Prints a
//! Markdown table per value-size class: hit rate per level, lines and cache-line fetches per
//! GET, latency percentiles.
//!
//! ```text
//! fridge-memsim --generate facebook-etc --keys 100000 --requests 1000000
//! fridge-memsim --generate thesis --keys 4000 --memory-model dram-direct,dram-direct-priority \
//!     --dram-size 16MiB,32MiB,48MiB
//! fridge-memsim --engine-only ...    # the engine alone, reading values: for cachegrind
//! fridge-memsim --workload-only ...  # the requests alone: what to subtract from it
//! ```

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use fridge_engine::{Eviction, Queues};
use fridge_sim::fridge::{DEFAULT_TARGET_SEGMENTS, FridgeCache, FridgeOptions, auto_segment_size};
use fridge_sim::memory::CpuCaches;
use fridge_sim::memory::latency::Latency;
use fridge_sim::memory::replay::{ModelSpec, Replay, ReplayOptions, report};
use fridge_units::Size;
use fridge_workload::{MAX_KEY_SIZE, Request, Workload};

/// A workload through the fridge engine and a model of the memory hierarchy under it.
#[derive(Parser, Debug)]
#[command(name = "fridge-memsim", version)]
struct Cli {
    /// The workload: `facebook-etc` (ETC key and value sizes, GET:SET 30:1) or `thesis` (10 B
    /// / 300 B / 1 MB values for 50/45/5% of keys, GET:SET 30:1).
    #[arg(long, default_value = "facebook-etc")]
    generate: String,
    /// Distinct keys.
    #[arg(long, default_value_t = 100_000)]
    keys: u64,
    /// Zipf exponent of key popularity.
    #[arg(long, default_value_t = 0.99)]
    theta: f64,
    /// Requests in all (warm-up included).
    #[arg(long, default_value_t = 1_000_000)]
    requests: u64,
    /// Requests before statistics start (default: a fifth of `--requests`).
    #[arg(long)]
    warmup: Option<u64>,
    /// Seed of the workload and the arrivals.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The engine's item memory (`max_memory`); values are laid out, not written.
    #[arg(long, default_value = "1GiB")]
    memory: Size,
    /// A search lookaside buffer of this many bytes of cache table in front of the index (the
    /// server's `--slb-size`; 0: none). Its bucket line is then read first on every lookup.
    #[arg(long, default_value = "0")]
    slb_size: Size,
    /// The engine's eviction: `queues` (S3-FIFO's queues in the log, the default) or
    /// `memshare` (Memshare's ranked pass, which relocates more of what it keeps).
    #[arg(long, default_value = "queues", value_parser = ["queues", "memshare"])]
    eviction: String,
    /// Hierarchies, comma-separated: `cpu` (L2, L3, memory), `dram-direct` (an Alloy-style
    /// direct-mapped DRAM cache in front of memory), `dram-Nway` (N-way set-associative),
    /// each DRAM cache with `-priority` for the thesis's priority lines; every `dram-*`
    /// model is built at every `--dram-size`.
    #[arg(long, value_delimiter = ',', default_value = "cpu")]
    memory_model: Vec<String>,
    /// DRAM-cache sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "128MiB")]
    dram_size: Vec<Size>,
    /// Values of at least this many bytes are priority lines (the thesis: 1 MB and more; on
    /// its mix any threshold between 300 B and 1 MB picks the same values).
    #[arg(long, default_value = "64KiB")]
    priority_min: Size,
    /// Upper bounds (bytes) of the value-size classes, comma-separated (default: 64,1024 for
    /// facebook-etc, 100,10000 for thesis).
    #[arg(long, value_delimiter = ',')]
    classes: Option<Vec<u64>>,
    /// L2 size.
    #[arg(long, default_value = "1MiB")]
    l2: Size,
    /// L2 ways.
    #[arg(long, default_value_t = 16)]
    l2_ways: usize,
    /// L3 size.
    #[arg(long, default_value = "32MiB")]
    l3: Size,
    /// L3 ways.
    #[arg(long, default_value_t = 16)]
    l3_ways: usize,
    /// Mean gap (ns) between Poisson arrivals at one FIFO server: adds a p90 response time
    /// (wait plus service) per class.
    #[arg(long)]
    arrival_ns: Option<f64>,
    /// Copy each hit's value into a ring of this many bytes (0: off), as a kernel copies
    /// replies into socket buffers: non-priority traffic beside the engine's own lines.
    #[arg(long, default_value = "0")]
    reply_ring: Size,
    /// Run the engine alone, GETs reading one byte of each 64 of their values, and print the
    /// number of GETs: for `valgrind --tool=cachegrind`, to compare with the model.
    #[arg(long)]
    engine_only: bool,
    /// Generate the requests and nothing else (what `--engine-only` costs besides the engine,
    /// to subtract under cachegrind).
    #[arg(long, conflicts_with = "engine_only")]
    workload_only: bool,
}

fn workload(cli: &Cli) -> Result<Workload, String> {
    match cli.generate.as_str() {
        "facebook-etc" => Ok(Workload::facebook_etc(cli.keys, cli.theta, cli.seed)),
        "thesis" => Ok(Workload::thesis(cli.keys, cli.theta, cli.seed)),
        other => Err(format!("unknown workload {other:?} (facebook-etc or thesis)")),
    }
}

fn requests(cli: &Cli) -> Result<impl Iterator<Item = Request>, String> {
    let w = workload(cli)?;
    Ok(w.requests().map_err(|e| e.to_string())?.take(cli.requests as usize))
}

fn run(cli: &Cli) -> Result<(), String> {
    // Segments sized as `fridge-sim` sizes them, from a sample's mean and the preset's largest.
    let sample: Vec<Request> = requests(cli)?.take(20_000).collect();
    let mean = sample.iter().map(Request::object_size).sum::<u64>() / sample.len().max(1) as u64;
    let max = 1_000_000 + u64::from(MAX_KEY_SIZE);
    let memory = cli.memory.0;
    let segment = auto_segment_size(memory, mean, max, DEFAULT_TARGET_SEGMENTS);
    let eviction = match cli.eviction.as_str() {
        "memshare" => Eviction::Memshare,
        _ => Eviction::Queues(Queues::default()),
    };
    let options = FridgeOptions {
        slb_bytes: cli.slb_size.bytes(),
        eviction,
        ..FridgeOptions::new(memory, segment)
    };
    let mut cache = FridgeCache::new(options)?;
    let start = Instant::now();
    if cli.workload_only {
        let (mut gets, mut sum) = (0u64, 0u64);
        for r in requests(cli)? {
            gets += u64::from(r.op.is_read());
            sum = sum.wrapping_add(r.key ^ u64::from(r.value_size));
        }
        println!("GETs: {gets} (request sum {sum})");
        return Ok(());
    }
    if cli.engine_only {
        let (mut gets, mut sum) = (0u64, 0u64);
        for r in requests(cli)? {
            if r.op.is_read() {
                gets += 1;
                sum = sum.wrapping_add(cache.get_reading(&r).1);
            } else {
                cache.set(&r);
            }
        }
        println!("GETs: {gets} (value byte sum {sum})");
        return Ok(());
    }
    let mut models = Vec::new();
    for name in &cli.memory_model {
        if name == "cpu" {
            models.push(ModelSpec::parse(name, 0)?);
        } else {
            for size in &cli.dram_size {
                models.push(ModelSpec::parse(name, size.0)?);
            }
        }
    }
    let classes = cli.classes.clone().unwrap_or_else(|| match cli.generate.as_str() {
        "thesis" => vec![100, 10_000],
        _ => vec![64, 1024],
    });
    let options = ReplayOptions {
        models,
        cpu: CpuCaches {
            l2_bytes: cli.l2.0,
            l2_ways: cli.l2_ways,
            l3_bytes: cli.l3.0,
            l3_ways: cli.l3_ways,
        },
        latency: Latency::default(),
        priority_min: cli.priority_min.bytes(),
        classes: classes.clone(),
        warmup: cli.warmup.unwrap_or(cli.requests / 5),
        arrival_ns: cli.arrival_ns,
        seed: cli.seed,
        reply_ring: cli.reply_ring.0,
    };
    let mut replay = Replay::new(options);
    for r in requests(cli)? {
        replay.request(&mut cache, &r);
    }
    let path = replay.path();
    let results = replay.finish();
    println!(
        "{} over {} keys, Zipf {}, {} requests ({} warm-up); engine {} MiB in {} KiB segments; \
         L2 {} KiB {}-way, L3 {} MiB {}-way",
        cli.generate,
        cli.keys,
        cli.theta,
        cli.requests,
        cli.warmup.unwrap_or(cli.requests / 5),
        memory >> 20,
        segment >> 10,
        cli.l2.0 >> 10,
        cli.l2_ways,
        cli.l3.0 >> 20,
        cli.l3_ways
    );
    println!();
    print!("{}", report(&results, &classes, cli.arrival_ns.is_some()));
    let per = |n: u64| n as f64 / path.gets.max(1) as f64;
    println!(
        "per GET: {:.3} index buckets, {:.3} key records compared; {:.4} of GETs compared another key's record",
        per(path.buckets),
        per(path.records),
        per(path.collisions)
    );
    for m in &results {
        if m.spec.dram.is_some_and(|d| d.2) {
            println!(
                "{}: priority benefit counter (thesis Figure 4.13) {}, non-priority misses not cached {}",
                m.spec.label(),
                m.benefit,
                m.bypassed
            );
        }
    }
    eprintln!("{:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fridge-memsim: {e}");
            ExitCode::FAILURE
        }
    }
}
