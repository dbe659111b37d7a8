//! The driver: replays one [`Source`] through a set of caches at each of a list of sizes and
//! collects per-tenant miss ratios, engine statistics and the simulator's own throughput.
//!
//! # Passes
//! ```text
//!  pass 0 (profile): count requests and bytes, the working set (distinct (tenant, key) and
//!                    their bytes) per tenant, the largest object, and — only when Belady runs
//!                    on an input without next-access times — each request's next access
//!  pass 1..=S:       one pass per cache size; every policy of the run serves every request
//! ```
//! A pass reads the source in chunks of [`Settings::chunk`] requests; each cache serves a
//! whole chunk before the next cache starts, so the time spent in each cache is measured with
//! two clock reads per chunk and memory stays bounded by the chunk plus the caches
//! themselves. The profile keeps one map entry per distinct object; the next-access table
//! costs 8 bytes per request.
//!
//! # Request semantics
//! - [`OpsMode::Lookaside`] (the default, libCacheSim's): every request, whatever its
//!   operation, is a GET that admits the object on a miss. Every request is counted.
//! - [`OpsMode::Trace`]: GET/GETS are counted lookaside GETs; storage operations store the
//!   object (the engine with the request's TTL; a reference policy through `access`) and are
//!   not counted; DELETE deletes in the engine and is ignored by reference policies, which
//!   have no delete. TTLs exist only in the engine.
//!
//! Keys of tenant 0 reach reference policies unchanged (so single-tenant results match
//! libCacheSim's); other tenants' keys are hashed with the tenant id, because reference
//! policies key on one `u64` (collision probability about `n² / 2^65` for `n` objects).

use std::collections::HashMap;
use std::time::Instant;

use fridge_engine::RankKind;
use fridge_workload::{Op, Request, mix64};

use crate::error::Error;
use crate::fridge::{FridgeCache, FridgeOptions, auto_segment_size, hitmap_items};
use crate::policy::{
    Access, Automove, Belady, Clock, Fifo, Lru, Memcached, MissRatio, NEVER, Partitioned, Policy,
    RedisLru, S3Fifo, Sieve,
};
use crate::progress::Progress;
use crate::results::bytes;
use crate::source::Source;

/// The result types live in [`crate::results`]; re-exported next to [`simulate`], which returns them.
pub use crate::results::{
    EngineRow, MetadataRow, OpsMode, Profile, Report, Row, TenantProfile, Timing,
};

/// Memcached automove window, in requests.
const AUTOMOVE_WINDOW: u64 = 100_000;

/// A cache the simulator can run, by its command-line name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySpec {
    /// The real engine with a rank function (`fridge` = `hitmap`, `fridge-lru`, `fridge-lfu`,
    /// `fridge-slru`), optionally with its own hitmap budget (`fridge@16`: 16 bits per item).
    Fridge {
        /// Every tenant's rank function.
        rank: RankKind,
        /// Hitmap bits per item; `None` takes [`Settings::hitmap_bits`].
        bits: Option<usize>,
    },
    /// Exact LRU (`lru`).
    Lru,
    /// FIFO (`fifo`).
    Fifo,
    /// CLOCK with one bit (`clock`).
    Clock,
    /// S3-FIFO (`s3fifo`).
    S3Fifo,
    /// SIEVE (`sieve`).
    Sieve,
    /// Redis sampled LRU with this many samples (`redis5`, `redis10`).
    Redis(usize),
    /// memcached slab model (`memcached`, `memcached-automove`).
    Memcached {
        /// Whether slab automove runs.
        automove: bool,
    },
    /// Belady's MIN (`belady`).
    Belady,
    /// Equal static per-tenant partitions of an inner reference policy (`partitioned-lru`, …).
    Partitioned(Box<PolicySpec>),
}

impl PolicySpec {
    /// The engine with its default rank (`hitmap`) and the run's hitmap budget: `fridge`.
    pub const fn fridge() -> PolicySpec {
        PolicySpec::Fridge { rank: RankKind::Hitmap, bits: None }
    }

    /// Whether this is the engine (any rank function).
    pub fn is_fridge(&self) -> bool {
        matches!(self, PolicySpec::Fridge { .. })
    }

    /// The reference policies and the engine, in report order (`all` on the command line).
    pub fn all() -> Vec<PolicySpec> {
        vec![
            PolicySpec::fridge(),
            PolicySpec::Lru,
            PolicySpec::Fifo,
            PolicySpec::Clock,
            PolicySpec::S3Fifo,
            PolicySpec::Sieve,
            PolicySpec::Redis(5),
            PolicySpec::Redis(10),
            PolicySpec::Memcached { automove: false },
            PolicySpec::Memcached { automove: true },
            PolicySpec::Belady,
        ]
    }

    /// Parses a comma-separated list of names, where `all` stands for [`PolicySpec::all`];
    /// duplicates are dropped.
    ///
    /// # Errors
    /// As [`PolicySpec::parse`].
    pub fn parse_list(s: &str) -> Result<Vec<PolicySpec>, Error> {
        let mut out: Vec<PolicySpec> = Vec::new();
        for name in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            let specs =
                if name == "all" { PolicySpec::all() } else { vec![PolicySpec::parse(name)?] };
            for spec in specs {
                if !out.contains(&spec) {
                    out.push(spec);
                }
            }
        }
        Ok(out)
    }

    /// Parses a command-line name.
    ///
    /// # Errors
    /// An unknown name, or a partitioned engine or partitioned partitioning.
    pub fn parse(name: &str) -> Result<PolicySpec, Error> {
        if let Some(rest) = name.strip_prefix("fridge") {
            let (rank, bits) = match rest.split_once('@') {
                Some((rank, bits)) => {
                    let bits = bits.parse::<usize>().map_err(|_| {
                        Error::Config(format!("{name}: hitmap bits per item after @"))
                    })?;
                    (rank, Some(bits))
                }
                None => (rest, None),
            };
            let rank = match rank {
                "" => RankKind::Hitmap,
                r => r
                    .strip_prefix('-')
                    .ok_or_else(|| Error::Config(format!("unknown policy {name:?}")))?
                    .parse::<RankKind>()
                    .map_err(|e| Error::Config(format!("{name}: {e}")))?,
            };
            return Ok(PolicySpec::Fridge { rank, bits });
        }
        Ok(match name {
            "lru" => PolicySpec::Lru,
            "fifo" => PolicySpec::Fifo,
            "clock" => PolicySpec::Clock,
            "s3fifo" => PolicySpec::S3Fifo,
            "sieve" => PolicySpec::Sieve,
            "redis5" => PolicySpec::Redis(5),
            "redis10" => PolicySpec::Redis(10),
            "memcached" => PolicySpec::Memcached { automove: false },
            "memcached-automove" => PolicySpec::Memcached { automove: true },
            "belady" => PolicySpec::Belady,
            _ => match name.strip_prefix("partitioned-") {
                Some(inner) => match PolicySpec::parse(inner)? {
                    PolicySpec::Fridge { .. } | PolicySpec::Partitioned(_) => {
                        return Err(Error::Config(format!(
                            "{name}: only reference policies can be partitioned"
                        )));
                    }
                    spec => PolicySpec::Partitioned(Box::new(spec)),
                },
                None => {
                    return Err(Error::Config(format!(
                        "unknown policy {name:?}; one of fridge, fridge-lru, fridge-lfu, \
                         fridge-slru (each optionally @BITS), lru, fifo, clock, s3fifo, sieve, \
                         redis5, redis10, memcached, memcached-automove, belady, \
                         partitioned-<reference policy>, all"
                    )));
                }
            },
        })
    }

    /// The command-line name.
    pub fn id(&self) -> String {
        match self {
            PolicySpec::Fridge { rank, bits } => {
                let mut id = String::from("fridge");
                if *rank != RankKind::Hitmap {
                    id = format!("{id}-{}", rank.name());
                }
                if let Some(b) = bits {
                    id = format!("{id}@{b}");
                }
                id
            }
            PolicySpec::Lru => "lru".into(),
            PolicySpec::Fifo => "fifo".into(),
            PolicySpec::Clock => "clock".into(),
            PolicySpec::S3Fifo => "s3fifo".into(),
            PolicySpec::Sieve => "sieve".into(),
            PolicySpec::Redis(n) => format!("redis{n}"),
            PolicySpec::Memcached { automove: false } => "memcached".into(),
            PolicySpec::Memcached { automove: true } => "memcached-automove".into(),
            PolicySpec::Belady => "belady".into(),
            PolicySpec::Partitioned(inner) => format!("partitioned-{}", inner.id()),
        }
    }

    /// What "cache size" means for this policy's rows.
    pub fn size_meaning(&self) -> &'static str {
        match self {
            PolicySpec::Fridge { .. } => {
                "engine max_memory: items incl. 12 B record headers; index outside (overhead_bytes)"
            }
            PolicySpec::Memcached { .. } => "memcached memory limit: 1 MiB slab pages",
            PolicySpec::Partitioned(_) => "object bytes, split equally among tenants",
            _ => "object bytes (key + value, no metadata)",
        }
    }

    fn reference(&self, capacity: u64, tenants: usize, seed: u64) -> Box<dyn Policy> {
        match self {
            PolicySpec::Lru => Box::new(Lru::new(capacity)),
            PolicySpec::Fifo => Box::new(Fifo::new(capacity)),
            PolicySpec::Clock => Box::new(Clock::new(capacity)),
            PolicySpec::S3Fifo => Box::new(S3Fifo::new(capacity)),
            PolicySpec::Sieve => Box::new(Sieve::new(capacity)),
            PolicySpec::Redis(n) => Box::new(RedisLru::new(capacity, *n, seed)),
            PolicySpec::Memcached { automove } => Box::new(Memcached::new(
                capacity,
                if *automove { Automove::Every { window: AUTOMOVE_WINDOW } } else { Automove::Off },
            )),
            PolicySpec::Belady => Box::new(Belady::new(capacity)),
            PolicySpec::Partitioned(inner) => {
                let n = tenants.max(1) as u64;
                let caps: Vec<u64> =
                    (0..n).map(|t| capacity / n + u64::from(t < capacity % n)).collect();
                Box::new(Partitioned::with_capacities(&caps, |c| inner.reference(c, 1, seed)))
            }
            PolicySpec::Fridge { .. } => unreachable!("the engine is not a reference policy"),
        }
    }
}

/// A cache size: absolute, or a fraction of the working set's bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeSpec {
    /// This many bytes.
    Bytes(u64),
    /// This fraction of the working set's bytes (rounded down, at least 1 byte).
    Fraction(f64),
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Caches to run, each at every size.
    pub policies: Vec<PolicySpec>,
    /// Cache sizes.
    pub sizes: Vec<SizeSpec>,
    /// Operation semantics.
    pub ops: OpsMode,
    /// Seed of the engine's cleaner and of Redis's sampling.
    pub seed: u64,
    /// Engine segment size; `None` picks [`auto_segment_size`] per cache size.
    pub segment_size: Option<usize>,
    /// Engine hitmap bits per item, for `fridge` policies without their own `@BITS`.
    pub hitmap_bits: usize,
    /// Items the engine's hitmap is sized for; `None` estimates them per cache size with
    /// [`hitmap_items`] from the profile's mean object size.
    pub hitmap_items: Option<usize>,
    /// Engine segments per evicting cleaner pass.
    pub cleaner_candidates: usize,
    /// Engine free-segment watermark (0: the engine's default rule).
    pub free_watermark: usize,
    /// Requests per chunk.
    pub chunk: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            policies: PolicySpec::all(),
            sizes: [0.001, 0.01, 0.05, 0.1, 0.2, 0.5].map(SizeSpec::Fraction).to_vec(),
            ops: OpsMode::Lookaside,
            seed: 1,
            segment_size: None,
            hitmap_bits: fridge_engine::EngineConfig::default().hitmap_bits_per_item,
            hitmap_items: None,
            cleaner_candidates: fridge_engine::EngineConfig::default().cleaner_candidates,
            free_watermark: 0,
            chunk: 1 << 16,
        }
    }
}

/// One pass over `source` that measures it (and computes next-access times if
/// `next_access`).
///
/// # Errors
/// A trace error.
pub fn profile(
    source: &Source,
    next_access: bool,
    progress: &mut Progress,
) -> Result<Profile, Error> {
    #[derive(Clone, Copy)]
    struct Seen {
        size: u64,
        last: u64,
    }
    let mut p = Profile::default();
    let mut seen: HashMap<(u16, u64), Seen> = HashMap::new();
    let mut next: Vec<i64> = Vec::new();
    let mut tenant_requests: Vec<u64> = Vec::new();
    for r in source.open()? {
        let r = r?;
        let pos = p.requests;
        p.requests += 1;
        let size = r.object_size();
        p.bytes_requested += size;
        p.max_object_size = p.max_object_size.max(size);
        let t = usize::from(r.tenant);
        if t >= tenant_requests.len() {
            tenant_requests.resize(t + 1, 0);
        }
        tenant_requests[t] += 1;
        if let Some(prev) = seen.insert((r.tenant, r.key), Seen { size, last: pos }) {
            if next_access {
                next[prev.last as usize] = pos as i64;
            }
        }
        if next_access {
            next.push(NEVER);
        }
        if pos % (1 << 16) == 0 {
            progress.update("profiling", pos, None);
        }
    }
    p.tenants = tenant_requests
        .iter()
        .map(|&requests| TenantProfile { requests, ..TenantProfile::default() })
        .collect();
    for (&(tenant, _), s) in &seen {
        let t = &mut p.tenants[usize::from(tenant)];
        t.objects += 1;
        t.working_set_bytes += s.size;
    }
    p.objects = seen.len() as u64;
    p.working_set_bytes = p.tenants.iter().map(|t| t.working_set_bytes).sum();
    p.next_access = next_access.then_some(next);
    Ok(p)
}

enum Cache {
    Reference(Box<dyn Policy>),
    Fridge(Box<FridgeCache>, FridgeOptions),
}

struct Runner {
    spec: PolicySpec,
    detail: String,
    cache: Cache,
    per_tenant: Vec<MissRatio>,
    seconds: f64,
    requests: u64,
}

impl Runner {
    /// Serves `reqs` (with their `accs`), recording outcomes.
    fn serve(&mut self, reqs: &[Request], accs: &[Access], ops: OpsMode) {
        let start = Instant::now();
        for (r, a) in reqs.iter().zip(accs) {
            let counted = ops == OpsMode::Lookaside || r.op.is_read();
            let hit = match &mut self.cache {
                Cache::Reference(p) => {
                    if counted || r.op != Op::Delete {
                        p.access(a)
                    } else {
                        false
                    }
                }
                Cache::Fridge(f, _) => {
                    if counted {
                        f.get(r)
                    } else if r.op == Op::Delete {
                        f.delete(r);
                        false
                    } else {
                        f.set(r);
                        false
                    }
                }
            };
            if counted {
                self.per_tenant[usize::from(r.tenant)].record(a, hit);
            }
        }
        self.seconds += start.elapsed().as_secs_f64();
        self.requests += reqs.len() as u64;
    }
}

/// The key a reference policy sees for `(tenant, key)`.
pub fn policy_key(tenant: u16, key: u64) -> u64 {
    if tenant == 0 { key } else { mix64(key ^ mix64(u64::from(tenant))) }
}

fn resolve_size(spec: SizeSpec, working_set: u64) -> u64 {
    match spec {
        SizeSpec::Bytes(b) => b,
        SizeSpec::Fraction(f) => ((working_set as f64 * f) as u64).max(1),
    }
}

/// Profiles `source`, then runs every policy of `settings` at every size.
///
/// # Errors
/// Invalid settings or a trace error.
pub fn simulate(
    source: &Source,
    settings: &Settings,
    progress: &mut Progress,
) -> Result<Report, Error> {
    if settings.policies.is_empty() || settings.sizes.is_empty() {
        return Err(Error::Config("need at least one policy and one cache size".into()));
    }
    let belady = settings.policies.iter().any(|p| {
        matches!(p, PolicySpec::Belady)
            || matches!(p, PolicySpec::Partitioned(inner) if **inner == PolicySpec::Belady)
    });
    let compute_next = belady && !source.carries_next_access();
    let profile = profile(source, compute_next, progress)?;
    let mut notes = Vec::new();
    if compute_next {
        notes.push(format!(
            "belady: next-access times computed in a pre-pass ({})",
            bytes(profile.requests * 8)
        ));
    }
    let tenants = profile.tenants.len().max(1);
    let mut sizes: Vec<u64> =
        settings.sizes.iter().map(|&s| resolve_size(s, profile.working_set_bytes)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut rows = Vec::new();
    let mut timings = Vec::new();
    let total = profile.requests * sizes.len() as u64;
    for (i, &size) in sizes.iter().enumerate() {
        let mut runners = Vec::new();
        for spec in &settings.policies {
            match build(spec, size, tenants, &profile, settings) {
                Ok((cache, detail)) => runners.push(Runner {
                    spec: spec.clone(),
                    detail,
                    cache,
                    per_tenant: vec![MissRatio::default(); tenants],
                    seconds: 0.0,
                    requests: 0,
                }),
                Err(why) => notes.push(format!("{} at {size} bytes skipped: {why}", spec.id())),
            }
        }
        run_pass(source, &profile, settings, &mut runners, |done| {
            progress.update(
                &format!("size {}/{}", i + 1, sizes.len()),
                i as u64 * profile.requests + done,
                Some(total),
            );
        })?;
        for r in runners {
            collect(r, size, &profile, &mut rows, &mut timings);
        }
    }
    progress.finish();
    Ok(Report {
        source: source.name.clone(),
        description: source.description.clone(),
        ops: settings.ops,
        tenant_names: source.tenant_names(),
        policies: settings.policies.iter().map(PolicySpec::id).collect(),
        profile,
        rows,
        timings,
        notes,
    })
}

fn build(
    spec: &PolicySpec,
    size: u64,
    tenants: usize,
    profile: &Profile,
    settings: &Settings,
) -> Result<(Cache, String), String> {
    match spec {
        PolicySpec::Fridge { rank, bits } => {
            if tenants > 256 {
                return Err(format!("the engine has 256 tenant ids, the input has {tenants}"));
            }
            let segment_size = settings
                .segment_size
                .unwrap_or_else(|| auto_segment_size(size, profile.max_object_size));
            let mean_object = profile.working_set_bytes.checked_div(profile.objects).unwrap_or(0);
            let options = FridgeOptions {
                max_memory: size,
                segment_size,
                seed: settings.seed,
                rank: *rank,
                hitmap_bits_per_item: bits.unwrap_or(settings.hitmap_bits),
                hitmap_items: settings
                    .hitmap_items
                    .unwrap_or_else(|| hitmap_items(size, mean_object)),
                cleaner_candidates: settings.cleaner_candidates,
                free_watermark: settings.free_watermark,
            };
            let cache = FridgeCache::new(options)?;
            let mut detail = format!(
                "fridge(segment {segment_size} B, rank {}, hitmap {} bits x {} items",
                rank.name(),
                options.hitmap_bits_per_item,
                options.hitmap_items
            );
            let defaults = FridgeOptions::new(size, segment_size);
            if options.cleaner_candidates != defaults.cleaner_candidates {
                detail += &format!(", {} candidates", options.cleaner_candidates);
            }
            if options.free_watermark != defaults.free_watermark {
                detail += &format!(", watermark {}", options.free_watermark);
            }
            detail.push(')');
            Ok((Cache::Fridge(Box::new(cache), options), detail))
        }
        _ => {
            let p = spec.reference(size, tenants, settings.seed);
            let name = p.name();
            Ok((Cache::Reference(p), name))
        }
    }
}

fn run_pass(
    source: &Source,
    profile: &Profile,
    settings: &Settings,
    runners: &mut [Runner],
    mut on_chunk: impl FnMut(u64),
) -> Result<(), Error> {
    let chunk = settings.chunk.max(1);
    let mut reqs: Vec<Request> = Vec::with_capacity(chunk);
    let mut accs: Vec<Access> = Vec::with_capacity(chunk);
    let mut stream = source.open()?;
    let mut pos: u64 = 0;
    loop {
        reqs.clear();
        accs.clear();
        for r in stream.by_ref().take(chunk) {
            let r = r?;
            let next = match &profile.next_access {
                Some(next) => next.get(pos as usize).copied().unwrap_or(NEVER),
                None => r.next_access.map_or(NEVER, |n| n as i64),
            };
            accs.push(Access {
                key: policy_key(r.tenant, r.key),
                size: u32::try_from(r.object_size()).unwrap_or(u32::MAX),
                next_access_vtime: next,
                tenant: r.tenant,
            });
            reqs.push(r);
            pos += 1;
        }
        if reqs.is_empty() {
            return Ok(());
        }
        for runner in runners.iter_mut() {
            runner.serve(&reqs, &accs, settings.ops);
        }
        on_chunk(pos);
    }
}

fn collect(
    mut r: Runner,
    size: u64,
    profile: &Profile,
    rows: &mut Vec<Row>,
    timings: &mut Vec<Timing>,
) {
    let id = r.spec.id();
    timings.push(Timing {
        policy: id.clone(),
        cache_bytes: size,
        requests: r.requests,
        seconds: r.seconds,
    });
    let engine = match &mut r.cache {
        Cache::Fridge(f, options) => {
            let s = f.stats();
            let m = &s.metadata;
            let metadata = MetadataRow {
                bits_per_item: options.hitmap_bits_per_item,
                sized_for_items: if m.bytes == 0 { 0 } else { options.hitmap_items },
                digests: s.digests,
                applied: m.applied,
                compactions: m.compactions,
                pools_dropped: m.pools_dropped,
                hitmap_bytes: m.bytes,
                bits_per_resident_item: if s.items == 0 {
                    0.0
                } else {
                    m.bytes as f64 * 8.0 / s.items as f64
                },
                zones: m.zones.clone(),
            };
            Some(EngineRow {
                rank: options.rank.name().to_owned(),
                segment_size: s.segment_size,
                overhead_bytes: s.overhead_bytes,
                index_bytes: s.index_bytes,
                items: s.items,
                item_bytes: s.item_bytes,
                evictions: s.evictions,
                expired: s.expired,
                cleaner_passes: s.cleaner_passes,
                relocated_items: s.relocated_items,
                fifo_evictions: s.fifo_evictions,
                refused: f.refused(),
                store_errors: f.store_errors(),
                metadata,
            })
        }
        Cache::Reference(_) => None,
    };
    let fraction = if profile.working_set_bytes == 0 {
        0.0
    } else {
        size as f64 / profile.working_set_bytes as f64
    };
    let row = |tenant: String, m: &MissRatio, engine: Option<EngineRow>| Row {
        policy: id.clone(),
        detail: r.detail.clone(),
        cache_bytes: size,
        cache_fraction: fraction,
        size_meaning: r.spec.size_meaning().to_owned(),
        tenant,
        requests: m.requests,
        hits: m.hits,
        miss_ratio: m.miss_ratio(),
        bytes_requested: m.bytes_requested,
        bytes_hit: m.bytes_hit,
        byte_miss_ratio: m.byte_miss_ratio(),
        engine,
    };
    let mut all = MissRatio::default();
    for m in &r.per_tenant {
        all.merge(m);
    }
    rows.push(row("all".to_owned(), &all, engine));
    if r.per_tenant.len() > 1 {
        for (t, m) in r.per_tenant.iter().enumerate() {
            rows.push(row(t.to_string(), m, None));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_policies_name_their_rank_and_budget() {
        for (name, rank, bits) in [
            ("fridge", RankKind::Hitmap, None),
            ("fridge-hitmap", RankKind::Hitmap, None),
            ("fridge-lru", RankKind::Lru, None),
            ("fridge-lfu@16", RankKind::Lfu, Some(16)),
            ("fridge-slru", RankKind::Slru, None),
            ("fridge@0", RankKind::Hitmap, Some(0)),
        ] {
            let spec = PolicySpec::parse(name).unwrap();
            assert_eq!(spec, PolicySpec::Fridge { rank, bits }, "{name}");
            assert!(spec.is_fridge());
            let id = spec.id();
            assert_eq!(PolicySpec::parse(&id).unwrap(), spec, "{id} round-trips");
        }
        assert_eq!(PolicySpec::parse("fridge-hitmap").unwrap().id(), "fridge");
        for bad in ["fridge-mru", "fridge@x", "fridgelru", "partitioned-fridge-lru"] {
            assert!(PolicySpec::parse(bad).is_err(), "{bad}");
        }
        let all = PolicySpec::parse_list("all,fridge-lru,fridge").unwrap();
        assert_eq!(all.iter().filter(|p| p.is_fridge()).count(), 2);
    }
}
