//! Memshare's multi-tenant experiment on the real engine: eight or more tenants shaped by
//! Twitter's production clusters share one cache, and the allocation policies are compared
//! on the same request stream (Memshare §6; `docs/results.md`).
//!
//! ```text
//! cargo run --release -p fridge-sim --example tenants -- [tenants] [requests] [cache fraction] [idle ms] [memshare|queues] [shadow KiB]
//! ```
//!
//! `shadow KiB`: what each tenant's shadow queue remembers (default 10 MiB, Memshare §6.1).
//!
//! The engine evicts with Memshare's pass, as the server does with tenants configured
//! (`--eviction auto`), or with S3-FIFO's queues (`queues`).
//!
//! Rows, all with the same total memory (`cache fraction` × the mix's working set):
//! - `static memcached`: each tenant its own memcached slab model (LRU per slab class) of its
//!   share, shares proportional to working-set bytes — today's partitioned deployment (64 KiB
//!   slab pages, so that small shares still hold whole pages);
//! - `static LRU`: each tenant its own exact LRU of its share (object bytes; no slab pages);
//! - `pooled LRU`: one exact LRU over all tenants' objects;
//! - `fridge R% reserved`: the engine with every tenant reserving R% of its share, the rest
//!   pooled and handed out by shadow-queue hits (Algorithm 2);
//! - `fridge R%, floors at 90%`: the same, with credits taken from tenants above 90% of their
//!   partition instead of 100% (the default, [`CreditPolicy::Floor`]);
//! - `fridge R%, Memshare's credits`: the same, credits taken from any holder (Memshare
//!   Algorithm 2) instead of only from tenants above their floors;
//! - `fridge 75%, credits by hit ratio` and `fridge 75%, Memshare's credits by hit ratio`:
//!   `fridge 75% reserved` and `fridge 75%, Memshare's credits` with each shadow-queue hit
//!   weighed by the tenant's request rate ([`CreditWeight::HitRatio`], Cliffhanger's gradient);
//! - `fridge 75%, shares by record bytes`: the same as `fridge 75% reserved`, with each
//!   tenant's share (and so its reservation and floor) in proportion to its working set as
//!   the engine stores it — keys × (object + the 25-byte record header of an item with a
//!   TTL) — instead of object
//!   bytes: a small-object tenant's share then holds the same fraction of its working set as
//!   a large-object tenant's;
//! - `fridge 75% + idle tax`: the same with a 50% idle tax on items unread for `idle ms`
//!   (default 250 ms of trace time: the cache turns over about every half second, so a
//!   longer idle time finds no idle items).
//!
//! Requests follow the simulator's `--ops trace` semantics: GET/GETS are counted lookaside
//! reads (a miss stores the object); storage operations store (the engine with the request's
//! TTL; reference policies through an access, and removed when next requested after the
//! deadline) and are not counted; DELETE deletes, in the engine and in the reference
//! policies (`Policy::remove`). The engine's memory holds its 25-byte record headers (21
//! and the TTL's 4) and
//! 8-byte keys; the memcached model charges its 48-byte headers and chunk rounding; the LRU
//! counts object bytes only. Before the table, a line says what the headers cost every tenant:
//! the engine's working set over the objects' bytes, and so the share of its LRU partition's
//! items a tenant's floor holds with shares by record bytes.

use std::collections::HashMap;
use std::sync::Arc;

use fridge_engine::{
    CleanerMode, CreditPolicy, CreditWeight, Engine, EngineConfig, Eviction, Expiry, IdleTax,
    ManualClock, Queues, Store, TenantId, TenantPolicy, Worker,
};
use fridge_sim::fridge::{DEFAULT_TARGET_SEGMENTS, auto_segment_size};
use fridge_sim::policy::{Access, Automove, Lru, Memcached, Policy, SlabConfig};
use fridge_sim::sweep::policy_key;
use fridge_workload::{Op, Request, SizeDist, twitter_mix};

const KEY_SCALE: f64 = 5e-3;
/// Bytes of the engine's record header for an item with a TTL, as every item of the Twitter
/// mix has (`fridge_engine::item::HEADER_LEN` and the expiry's code; one expiring more than
/// 12.4 days after its segment opened stores 8 bytes more, not counted here).
const RECORD_HEADER: u64 =
    (fridge_engine::item::HEADER_LEN + fridge_engine::item::EXPIRY_LEN) as u64;
/// The share of the arena the reservations divide: its usable part, without the cleaner's
/// free-segment watermark.
const USABLE: f64 = 0.97;
/// The memcached model's slab page (`-I`): small enough that every tenant's share holds pages.
const MEMCACHED_PAGE: u32 = 64 << 10;
const SEED: u64 = 42;

#[derive(Default, Clone, Copy)]
struct Count {
    gets: u64,
    hits: u64,
}

impl Count {
    fn hit_ratio(self) -> f64 {
        if self.gets == 0 { 0.0 } else { self.hits as f64 / self.gets as f64 }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let tenants: usize = args.first().map_or(8, |s| s.parse().expect("tenants"));
    let requests: usize = args.get(1).map_or(10_000_000, |s| s.parse().expect("requests"));
    let fraction: f64 = args.get(2).map_or(0.1, |s| s.parse().expect("cache fraction"));
    let idle_ms: u64 = args.get(3).map_or(250, |s| s.parse().expect("idle time, ms"));
    let shadow_bytes: u64 =
        args.get(5).map_or(fridge_engine::EngineConfig::default().shadow_bytes, |s| {
            s.parse::<u64>().expect("shadow KiB") << 10
        });
    let eviction = match args.get(4).map(String::as_str) {
        None | Some("memshare") => Eviction::Memshare,
        Some("queues") => Eviction::Queues(Queues::default()),
        Some(other) => panic!("eviction: queues or memshare, not {other}"),
    };

    let mix = twitter_mix(tenants, KEY_SCALE, SEED).expect("mix");
    let stream: Vec<Request> = mix.requests().expect("requests").take(requests).collect();
    let fixed = |d: &SizeDist| match *d {
        SizeDist::Fixed(n) => u64::from(n),
        _ => unreachable!("twitter_mix tenants have fixed sizes"),
    };
    let wss: Vec<u64> = mix
        .tenants
        .iter()
        .map(|t| t.workload.keys * (fixed(&t.workload.key_size) + fixed(&t.workload.value_size)))
        .collect();
    let total_wss: u64 = wss.iter().sum();
    let memory = (total_wss as f64 * fraction) as u64;
    let share = |t: usize| (memory as f64 * wss[t] as f64 / total_wss as f64) as u64;
    // The working sets as the engine stores them: each object with its record header.
    let stored: Vec<u64> = mix
        .tenants
        .iter()
        .zip(&wss)
        .map(|(t, &bytes)| bytes + t.workload.keys * RECORD_HEADER)
        .collect();
    let total_stored: u64 = stored.iter().sum();
    let record_share = |t: usize| (memory as f64 * stored[t] as f64 / total_stored as f64) as u64;
    println!(
        "{tenants} tenants, {requests} requests over {:.1} s, working set {:.1} MB, cache {:.1} MB ({:.0}%)",
        stream.last().map_or(0, |r| r.time_ms) as f64 / 1e3,
        total_wss as f64 / 1e6,
        memory as f64 / 1e6,
        fraction * 100.0
    );
    // What the record headers cost every tenant: with shares by record bytes, a tenant's
    // floor (its share of the `USABLE` memory the reservations divide) holds this fraction of
    // the items its LRU partition (object bytes only) holds, whatever the tenant.
    println!(
        "\nThe engine stores {:.3}× the objects' bytes ({RECORD_HEADER}-byte record headers): a \
         floor of a share by record bytes holds {:.1}% of the items of the tenant's LRU \
         partition.\n",
        total_stored as f64 / total_wss as f64,
        100.0 * USABLE * total_wss as f64 / total_stored as f64
    );

    let mut rows: Vec<(String, Vec<Count>)> = Vec::new();
    // Static partitions of the memcached model.
    let slabs = SlabConfig { page_size: MEMCACHED_PAGE, ..SlabConfig::default() };
    let mut parts: Vec<Memcached> =
        (0..tenants).map(|t| Memcached::with_config(share(t), slabs, Automove::Off)).collect();
    rows.push((
        "static memcached".into(),
        run_reference(&stream, tenants, |t, a, del| serve(&mut parts[t], a, del)),
    ));
    let mut lrus: Vec<Lru> = (0..tenants).map(|t| Lru::new(share(t))).collect();
    rows.push((
        "static LRU".into(),
        run_reference(&stream, tenants, |t, a, del| serve(&mut lrus[t], a, del)),
    ));
    let mut lru = Lru::new(memory);
    rows.push((
        "pooled LRU".into(),
        run_reference(&stream, tenants, |_, a, del| serve(&mut lru, a, del)),
    ));
    let (floor, memshare) = (CreditPolicy::default(), CreditPolicy::Memshare);
    let floor_90 = CreditPolicy::Floor { percent: 90 };
    let (hits, ratio) = (CreditWeight::Hits, CreditWeight::HitRatio);
    for (name, reserved, tax, credits, weight) in [
        ("fridge 100% reserved", 1.0, None, floor, hits),
        ("fridge 75% reserved", 0.75, None, floor, hits),
        ("fridge 50% reserved", 0.5, None, floor, hits),
        ("fridge 75% + idle tax", 0.75, Some(IdleTax { rate: 0.5, idle_ms }), floor, hits),
        ("fridge 75%, floors at 90%", 0.75, None, floor_90, hits),
        ("fridge 50%, floors at 90%", 0.5, None, floor_90, hits),
        ("fridge 75%, Memshare's credits", 0.75, None, memshare, hits),
        ("fridge 50%, Memshare's credits", 0.5, None, memshare, hits),
        ("fridge 75%, credits by hit ratio", 0.75, None, floor, ratio),
        ("fridge 75%, Memshare's credits by hit ratio", 0.75, None, memshare, ratio),
    ] {
        let tenancy = Tenancy { reserved, idle_tax: tax, credits, weight };
        rows.push((
            name.into(),
            run_fridge(&stream, tenants, memory, &share, tenancy, eviction, shadow_bytes),
        ));
    }
    let tenancy = Tenancy { reserved: 0.75, idle_tax: None, credits: floor, weight: hits };
    rows.push((
        "fridge 75%, shares by record bytes".into(),
        run_fridge(&stream, tenants, memory, &record_share, tenancy, eviction, shadow_bytes),
    ));

    let combined = |c: &[Count]| {
        let (g, h) = c.iter().fold((0, 0), |(g, h), c| (g + c.gets, h + c.hits));
        Count { gets: g, hits: h }
    };
    let static_row = rows[0].1.clone();
    let static_misses = combined(&static_row).gets - combined(&static_row).hits;
    let lru_row = rows[1].1.clone();
    let lru_misses = combined(&lru_row).gets - combined(&lru_row).hits;
    // The largest loss of one tenant's hit ratio against `base`, in points, and whose.
    let worst = |counts: &[Count], base: &[Count]| {
        counts
            .iter()
            .zip(base)
            .zip(&mix.tenants)
            .map(|((c, s), t)| ((c.hit_ratio() - s.hit_ratio()) * 100.0, t.name.as_str()))
            .fold((f64::INFINITY, ""), |a, b| if b.0 < a.0 { b } else { a })
    };
    let behind = |counts: &[Count], base: &[Count]| {
        counts.iter().zip(base).filter(|(c, s)| c.hit_ratio() < s.hit_ratio() - 0.01).count()
    };
    // Up to twelve tenants, a column each; more, only the summary.
    let columns = if tenants <= 12 { tenants } else { 0 };
    print!(
        "| policy | combined hit ratio | misses vs static memcached | worst tenant vs its \
         memcached partition (pts) | misses vs static LRU | worst tenant vs its LRU partition \
         (pts) | tenants > 1 pt behind their LRU partition |"
    );
    for t in &mix.tenants[..columns] {
        print!(" {} |", t.name);
    }
    println!();
    println!("|---|---:|---:|---:|---:|---:|---:|{}", "---:|".repeat(columns));
    for (name, counts) in &rows {
        let c = combined(counts);
        let misses = c.gets - c.hits;
        let (vs_static, vs_lru) = (worst(counts, &static_row), worst(counts, &lru_row));
        let named = |(points, who): (f64, &str)| {
            if points < 0.0 && columns == 0 {
                format!("{points:+.2} ({who})")
            } else {
                format!("{points:+.2}")
            }
        };
        print!(
            "| {name} | {:.4} | {:+.1}% | {} | {:+.1}% | {} | {} |",
            c.hit_ratio(),
            (misses as f64 / static_misses as f64 - 1.0) * 100.0,
            named(vs_static),
            (misses as f64 / lru_misses as f64 - 1.0) * 100.0,
            named(vs_lru),
            behind(counts, &lru_row),
        );
        for c in &counts[..columns] {
            print!(" {:.4} |", c.hit_ratio());
        }
        println!();
    }
}

fn access(r: &Request) -> Access {
    let key = policy_key(r.tenant, r.key);
    Access { tenant: r.tenant, ..Access::new(key, r.object_size() as u32) }
}

/// A request to a reference policy: a DELETE removes the key (a later GET misses), anything
/// else is an access.
fn serve(p: &mut impl Policy, a: &Access, delete: bool) -> bool {
    if delete { p.remove(a) } else { p.access(a) }
}

/// Runs `stream` through a reference policy: `serve(tenant, access, remove)` answers each
/// request (a hit, for reads) or removes its key. TTLs as the engine keeps them, lazily: a
/// key stored with a TTL is removed when it is next requested after its deadline (its bytes
/// stay taken until then, as in memcached without its crawler), so no policy hits an expired
/// item.
fn run_reference(
    stream: &[Request],
    tenants: usize,
    mut serve: impl FnMut(usize, &Access, bool) -> bool,
) -> Vec<Count> {
    let mut counts = vec![Count::default(); tenants];
    let mut deadlines: HashMap<u64, u64> = HashMap::new();
    for r in stream {
        let t = usize::from(r.tenant);
        let a = access(r);
        if deadlines.get(&a.key).is_some_and(|&at| r.time_ms > at) {
            deadlines.remove(&a.key);
            serve(t, &a, true);
        }
        let hit = serve(t, &a, r.op == Op::Delete);
        if r.op.is_read() {
            counts[t].gets += 1;
            counts[t].hits += u64::from(hit);
        } else if r.op == Op::Delete {
            deadlines.remove(&a.key);
        } else {
            match r.ttl_s {
                Some(s) => deadlines.insert(a.key, r.time_ms + u64::from(s) * 1000),
                None => deadlines.remove(&a.key),
            };
        }
    }
    counts
}

/// How the engine's tenants share memory in one row.
struct Tenancy {
    /// Share of each tenant's partition it reserves.
    reserved: f64,
    idle_tax: Option<IdleTax>,
    credits: CreditPolicy,
    /// What a shadow-queue hit is worth.
    weight: CreditWeight,
}

fn run_fridge(
    stream: &[Request],
    tenants: usize,
    memory: u64,
    share: &dyn Fn(usize) -> u64,
    tenancy: Tenancy,
    eviction: Eviction,
    shadow_bytes: u64,
) -> Vec<Count> {
    let Tenancy { reserved, idle_tax, credits, weight } = tenancy;
    let largest = stream.iter().map(Request::object_size).max().unwrap_or(0);
    let segment_size = auto_segment_size(memory, 0, largest, DEFAULT_TARGET_SEGMENTS);
    let clock = ManualClock::new(0);
    let config = EngineConfig {
        max_memory: memory as usize,
        segment_size,
        max_item_size: segment_size,
        large_value_threshold: segment_size / 4,
        cleaner: CleanerMode::Inline,
        workers_hint: 1,
        eviction,
        // Nobody reads the values: lay them out, do not copy them (as `fridge-sim`).
        copy_values: false,
        shadow_bytes,
        // The eviction metadata sized from the start, as in `fridge-sim` (the server's
        // frequency sketch, for the `queues` rows, would grow with the items held).
        hitmap_items: (memory as usize / 64).max(1),
        ..EngineConfig::default()
    };
    let engine = Engine::with_clock(config, Arc::new(clock.clone())).expect("engine");
    engine.set_credit_policy(credits);
    engine.set_credit_weight(weight);
    let usable = engine.stats().max_memory as f64 * USABLE;
    for t in 0..tenants {
        let r = (usable * share(t) as f64 / memory as f64 * reserved) as u64;
        engine.set_tenant_policy(
            tenant_id(t),
            TenantPolicy { reserved: r, idle_tax, ..TenantPolicy::default() },
        );
    }
    let mut w = engine.worker().expect("worker");
    let zeros = vec![0u8; segment_size];
    let mut counts = vec![Count::default(); tenants];
    for r in stream {
        clock.set(r.time_ms);
        let t = usize::from(r.tenant);
        if r.op.is_read() {
            let hit = w.get(tenant_id(t), &r.key.to_le_bytes(), |_| ()).is_some();
            if !hit {
                store(&mut w, r, &zeros, Expiry::Never);
            }
            counts[t].gets += 1;
            counts[t].hits += u64::from(hit);
        } else if r.op == Op::Delete {
            w.delete(tenant_id(t), &r.key.to_le_bytes());
        } else {
            let expiry =
                r.ttl_s.map_or(Expiry::Never, |s| Expiry::At(r.time_ms + u64::from(s) * 1000));
            store(&mut w, r, &zeros, expiry);
        }
    }
    counts
}

fn tenant_id(t: usize) -> TenantId {
    // Tenant 0 is the default tenant; the mix's tenants are configured ones.
    assert!(t + 1 < fridge_engine::item::MAX_TENANTS, "too many tenants for the engine's ids");
    TenantId((t + 1) as u16)
}

fn store(w: &mut Worker, r: &Request, zeros: &[u8], expiry: Expiry) {
    let value = (r.object_size() as usize).saturating_sub(8).min(zeros.len() - 64);
    let key = r.key.to_le_bytes();
    let req =
        Store { expiry, ..Store::new(tenant_id(usize::from(r.tenant)), &key, &zeros[..value]) };
    let _ = w.store(req);
}
