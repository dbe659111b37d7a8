//! The driver: replays one [`Source`] through a set of caches at each of a list of sizes and
//! collects per-tenant miss ratios, engine statistics and the simulator's own throughput.
//!
//! # Passes and jobs
//! ```text
//!  pass 0 (profile): count requests and bytes, the working set (distinct (tenant, key) and
//!                    their bytes) per tenant, the largest object, and — only when Belady runs
//!                    on an input without next-access times — each request's next access
//!  jobs:             one per (cache size, policy), each with its own cache and its own pass
//!                    over the source; `Settings::jobs` threads take them in order
//! ```
//! A job reads the source in chunks of [`Settings::chunk`] requests, so the time spent in its
//! cache is measured with two clock reads per chunk and memory stays bounded by the chunk
//! plus the cache, per thread. Outputs are assembled in job order (sizes ascending, policies
//! as given), so `results.csv` and `results.json` are the same bytes for any number of
//! threads. Reading the input once per job rather than once per size costs a decode per
//! policy; for traces that decode slowly (xz) and many policies, that is the price of
//! running caches on different cores. The profile keeps one map entry per distinct object;
//! the next-access table costs 8 bytes per request and is shared by every thread.
//!
//! # Cache sizes
//! [`CapacityUnit::Bytes`] (the default): every size is bytes, and each row says what its
//! cache counts in them. [`CapacityUnit::Objects`] (libCacheSim's `--ignore-obj-size`):
//! reference policies hold that many objects whatever their sizes (each access reaches them
//! with size 1; the counts of bytes requested and hit still use the real sizes); the engine
//! gets `objects × (max(mean object, 8 B key) + record header)` bytes of `max_memory` (the
//! inverse of the hitmap's item estimate), and the memcached model `objects × (mean object
//! + 48 B item header)` bytes; fractions are of the distinct objects.
//!
//! # Size change on a hit
//! [`SizeChange::Update`] (the default): a hit whose size differs from the stored one gives
//! the object the new size in reference policies (older libCacheSim). [`SizeChange::Keep`]:
//! the policy is handed the stored size ([`Policy::resident_size`]), as current libCacheSim
//! keeps it. Either way the request's own size is what the byte counts record, and the engine
//! does not rewrite an item on a GET hit (a lookaside GET writes nothing).
//!
//! # Miss ratio over time
//! With [`Settings::report_interval`] `n`, each job also records the miss ratio of every `n`
//! counted requests (and of the remainder at the end) next to the cumulative one.
//!
//! # Request semantics
//! - [`OpsMode::Lookaside`] (the default, libCacheSim's): every request, whatever its
//!   operation, is a GET that admits the object on a miss. Every request is counted.
//! - [`OpsMode::Trace`]: GET/GETS are counted lookaside GETs; storage operations store the
//!   object (the engine with the request's TTL; a reference policy through `access`) and are
//!   not counted; DELETE deletes, in the engine and in reference policies (`Policy::remove`).
//!   TTLs exist only in the engine.
//!
//! Keys of tenant 0 reach reference policies unchanged (so single-tenant results match
//! libCacheSim's); other tenants' keys are hashed with the tenant id, because reference
//! policies key on one `u64` (collision probability about `n² / 2^65` for `n` objects).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use fridge_engine::item::MAX_TENANTS;
use fridge_engine::{Eviction, Queues, RankKind};
use fridge_workload::{Op, Request, mix64};

use crate::error::Error;
use crate::fridge::{
    FridgeCache, FridgeOptions, KEY_LEN, RECORD_HEADER, auto_segment_size, hitmap_items,
};
use crate::policy::{
    Access, Automove, Belady, Clock, Fifo, Lru, Memcached, MissRatio, NEVER, Partitioned, Policy,
    RedisLru, S3Fifo, Sieve, SlabConfig,
};
use crate::progress::Progress;
use crate::results::bytes;
use crate::source::Source;

/// The result types live in [`crate::results`]; re-exported next to [`simulate`], which returns them.
pub use crate::results::{
    CapacityRow, CapacityUnit, EngineRow, MetadataRow, OpsMode, Profile, Report, Row,
    TenantProfile, TimePoint, Timing,
};

/// Memcached automove window, in requests.
const AUTOMOVE_WINDOW: u64 = 100_000;

/// A cache the simulator can run, by its command-line name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySpec {
    /// The real engine with a rank function (`fridge` = `hitmap`, `fridge-lru`, `fridge-lfu`,
    /// `fridge-slru`), optionally with S3-FIFO's queues for eviction (`fridge+queues`,
    /// `fridge-lru+queues`) and its own hitmap budget (`fridge@16`: 16 bits per item).
    Fridge {
        /// Every tenant's rank function.
        rank: RankKind,
        /// Hitmap bits per item; `None` takes [`Settings::hitmap_bits`].
        bits: Option<usize>,
        /// The engine evicts with `Eviction::Queues` (its defaults), not Memshare's pass.
        queues: bool,
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
        PolicySpec::Fridge { rank: RankKind::Hitmap, bits: None, queues: false }
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
            let (rank, queues) = match rank.strip_suffix("+queues") {
                Some(rank) => (rank, true),
                None => (rank, false),
            };
            let rank = match rank {
                "" => RankKind::Hitmap,
                r => r
                    .strip_prefix('-')
                    .ok_or_else(|| Error::Config(format!("unknown policy {name:?}")))?
                    .parse::<RankKind>()
                    .map_err(|e| Error::Config(format!("{name}: {e}")))?,
            };
            return Ok(PolicySpec::Fridge { rank, bits, queues });
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
                         fridge-slru (each optionally +queues and @BITS), lru, fifo, clock, s3fifo, sieve, \
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
            PolicySpec::Fridge { rank, bits, queues } => {
                let mut id = String::from("fridge");
                if *rank != RankKind::Hitmap {
                    id = format!("{id}-{}", rank.name());
                }
                if *queues {
                    id += "+queues";
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
                "engine max_memory: items incl. their record headers; index outside (overhead_bytes)"
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

/// A cache size: absolute, or a fraction of the input's working set, in the run's
/// [`CapacityUnit`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeSpec {
    /// This many bytes (or objects, with [`CapacityUnit::Objects`]).
    Bytes(u64),
    /// This fraction of the working set's bytes (or of its distinct objects), rounded down,
    /// at least 1.
    Fraction(f64),
}

/// What a hit does when the request's object size differs from the stored object's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SizeChange {
    /// Reference policies give the object the request's size and evict until it fits (older
    /// libCacheSim's `cache_check`; the simulator's behaviour before this option existed).
    #[default]
    Update,
    /// Reference policies keep the stored size (current libCacheSim): the hit is served
    /// with the size the object was admitted with.
    Keep,
}

impl SizeChange {
    /// `update` or `keep`.
    pub const fn name(self) -> &'static str {
        match self {
            SizeChange::Update => "update",
            SizeChange::Keep => "keep",
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Caches to run, each at every size.
    pub policies: Vec<PolicySpec>,
    /// Cache sizes.
    pub sizes: Vec<SizeSpec>,
    /// What the sizes count.
    pub capacity_unit: CapacityUnit,
    /// Operation semantics.
    pub ops: OpsMode,
    /// What a hit with a different size does (reference policies; the engine never rewrites
    /// an item on a GET hit).
    pub size_change: SizeChange,
    /// Seed of the engine's cleaner and of Redis's sampling.
    pub seed: u64,
    /// Engine segment size; `None` picks [`auto_segment_size`] per cache size.
    pub segment_size: Option<usize>,
    /// Segments [`auto_segment_size`] aims for.
    pub target_segments: u64,
    /// Engine hitmap bits per item, for `fridge` policies without their own `@BITS`.
    pub hitmap_bits: usize,
    /// Where the engine's hitmap lives.
    pub metadata: fridge_engine::MetadataDevice,
    /// Items the engine's hitmap is sized for; `None` estimates them per cache size with
    /// [`hitmap_items`] from the profile's mean object size.
    pub hitmap_items: Option<usize>,
    /// Engine segments per evicting cleaner pass.
    pub cleaner_candidates: usize,
    /// Engine free-segment watermark (0: the engine's default rule).
    pub free_watermark: usize,
    /// Requests per chunk.
    pub chunk: usize,
    /// Threads that run (size, policy) jobs; results do not depend on it.
    pub jobs: usize,
    /// Record the miss ratio every this many counted requests (`None`: off).
    pub report_interval: Option<u64>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            policies: PolicySpec::all(),
            sizes: [0.001, 0.01, 0.05, 0.1, 0.2, 0.5].map(SizeSpec::Fraction).to_vec(),
            capacity_unit: CapacityUnit::Bytes,
            ops: OpsMode::Lookaside,
            size_change: SizeChange::Update,
            seed: 1,
            segment_size: None,
            target_segments: crate::fridge::DEFAULT_TARGET_SEGMENTS,
            hitmap_bits: fridge_engine::EngineConfig::default().hitmap_bits_per_item,
            metadata: fridge_engine::MetadataDevice::Cpu,
            hitmap_items: None,
            cleaner_candidates: fridge_engine::EngineConfig::default().cleaner_candidates,
            free_watermark: 0,
            chunk: 1 << 16,
            jobs: 1,
            report_interval: None,
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

/// A cache built for one size: what it is, what its size means, and the bytes it was given.
struct Built {
    cache: Cache,
    detail: String,
    meaning: String,
    cache_bytes: u64,
    /// Whether the cache counts objects (every access has size 1 for it).
    counts_objects: bool,
}

/// Miss ratio per interval of counted requests.
struct Timeline {
    every: u64,
    window: MissRatio,
    total: MissRatio,
    points: Vec<(u64, u64, f64, f64)>,
}

impl Timeline {
    fn record(&mut self, a: &Access, hit: bool) {
        self.window.record(a, hit);
        self.total.record(a, hit);
        if self.window.requests == self.every {
            self.close();
        }
    }

    /// Ends the current interval (if it has requests).
    fn close(&mut self) {
        if self.window.requests > 0 {
            self.points.push((
                self.total.requests,
                self.window.requests,
                self.window.miss_ratio(),
                self.total.miss_ratio(),
            ));
            self.window = MissRatio::default();
        }
    }
}

struct Runner {
    spec: PolicySpec,
    built: Built,
    keep_size: bool,
    per_tenant: Vec<MissRatio>,
    timeline: Option<Timeline>,
    seconds: f64,
    requests: u64,
}

impl Runner {
    /// Serves `reqs` (with their `accs`), recording outcomes.
    fn serve(&mut self, reqs: &[Request], accs: &[Access], ops: OpsMode) {
        let start = Instant::now();
        for (r, a) in reqs.iter().zip(accs) {
            let counted = ops == OpsMode::Lookaside || r.op.is_read();
            let hit = match &mut self.built.cache {
                Cache::Reference(p) => {
                    if counted || r.op != Op::Delete {
                        // What the policy sees; the request itself is what is counted.
                        let mut seen = *a;
                        if self.built.counts_objects {
                            seen.size = 1;
                        } else if self.keep_size {
                            if let Some(size) = p.resident_size(a.key) {
                                seen.size = size;
                            }
                        }
                        p.access(&seen)
                    } else {
                        // A DELETE (trace mode): gone from the policy as from the engine.
                        p.remove(a);
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
                if let Some(t) = &mut self.timeline {
                    t.record(a, hit);
                }
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

/// What one (size, policy) job produced.
#[derive(Default)]
struct JobOutput {
    rows: Vec<Row>,
    timing: Option<Timing>,
    timeline: Vec<TimePoint>,
    note: Option<String>,
}

/// Profiles `source`, then runs every policy of `settings` at every size.
///
/// # Parallel jobs
/// Each (size, policy) pair is a job with its own cache and its own pass over the source;
/// [`Settings::jobs`] threads take jobs in order from a shared counter, and the outputs are
/// assembled in job order (sizes ascending, policies as given), so the report is the same
/// for any number of threads. Memory grows with the threads: each holds one cache and one
/// chunk of requests.
///
/// # Errors
/// Invalid settings, a trace error, or an input with no requests.
pub fn simulate(
    source: &Source,
    settings: &Settings,
    progress: &mut Progress,
) -> Result<Report, Error> {
    if settings.policies.is_empty() || settings.sizes.is_empty() {
        return Err(Error::Config("need at least one policy and one cache size".into()));
    }
    if settings.report_interval == Some(0) {
        return Err(Error::Config("the report interval must be at least 1 request".into()));
    }
    let belady = settings.policies.iter().any(|p| {
        matches!(p, PolicySpec::Belady)
            || matches!(p, PolicySpec::Partitioned(inner) if **inner == PolicySpec::Belady)
    });
    let compute_next = belady && !source.carries_next_access();
    let profile = profile(source, compute_next, progress)?;
    if profile.requests == 0 {
        return Err(Error::Input(format!(
            "{}: no requests ({}); an empty input, or one whose format does not match?",
            source.name, source.description
        )));
    }
    let mut notes = Vec::new();
    if compute_next {
        notes.push(format!(
            "belady: next-access times computed in a pre-pass ({})",
            bytes(profile.requests * 8)
        ));
    }
    let whole = match settings.capacity_unit {
        CapacityUnit::Bytes => profile.working_set_bytes,
        CapacityUnit::Objects => profile.objects,
    };
    let mut sizes: Vec<u64> = settings.sizes.iter().map(|&s| resolve_size(s, whole)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let jobs: Vec<(u64, &PolicySpec)> =
        sizes.iter().flat_map(|&size| settings.policies.iter().map(move |p| (size, p))).collect();
    let outputs = run_jobs(source, &profile, settings, &jobs, progress)?;
    progress.finish();
    let (mut rows, mut timings, mut timeline) = (Vec::new(), Vec::new(), Vec::new());
    for out in outputs {
        rows.extend(out.rows);
        timings.extend(out.timing);
        timeline.extend(out.timeline);
        notes.extend(out.note);
    }
    Ok(Report {
        source: source.name.clone(),
        description: source.description.clone(),
        ops: settings.ops,
        tenant_names: source.tenant_names(),
        policies: settings.policies.iter().map(PolicySpec::id).collect(),
        profile,
        rows,
        timings,
        timeline,
        capacity_unit: settings.capacity_unit,
        notes,
    })
}

/// Runs `jobs` on [`Settings::jobs`] threads; outputs in job order, or the first job's error
/// in job order.
fn run_jobs(
    source: &Source,
    profile: &Profile,
    settings: &Settings,
    jobs: &[(u64, &PolicySpec)],
    progress: &mut Progress,
) -> Result<Vec<JobOutput>, Error> {
    let n = jobs.len();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let total = profile.requests * n as u64;
    let progress = Mutex::new(progress);
    let results: Mutex<Vec<Option<Result<JobOutput, Error>>>> =
        Mutex::new((0..n).map(|_| None).collect());
    let work = || {
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(&(size, spec)) = jobs.get(i) else { break };
            let mut last = 0;
            let out = run_job(source, profile, settings, spec, size, |pos| {
                let sum = done.fetch_add(pos - last, Ordering::Relaxed) + pos - last;
                last = pos;
                // Another thread drawing the bar is fine: skip this update.
                if let Ok(mut p) = progress.try_lock() {
                    p.update(&format!("{n} jobs"), sum, Some(total));
                }
            });
            failed.fetch_or(out.is_err(), Ordering::Relaxed);
            results.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(out);
        }
    };
    let threads = settings.jobs.clamp(1, n.max(1));
    if threads == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(work);
            }
        });
    }
    let results = results.into_inner().unwrap_or_else(PoisonError::into_inner);
    let mut out = Vec::with_capacity(n);
    for r in results {
        match r {
            Some(r) => out.push(r?),
            // Jobs not started because an earlier one failed: that error was returned above.
            None => break,
        }
    }
    Ok(out)
}

/// Builds `spec` at `size`, replays the source through it and collects its rows.
fn run_job(
    source: &Source,
    profile: &Profile,
    settings: &Settings,
    spec: &PolicySpec,
    size: u64,
    on_chunk: impl FnMut(u64),
) -> Result<JobOutput, Error> {
    let tenants = profile.tenants.len().max(1);
    let built = match build(spec, size, tenants, profile, settings) {
        Ok(built) => built,
        Err(why) => {
            let unit = settings.capacity_unit.name();
            return Ok(JobOutput {
                note: Some(format!("{} at {size} {unit} skipped: {why}", spec.id())),
                ..JobOutput::default()
            });
        }
    };
    let mut runner = Runner {
        spec: spec.clone(),
        built,
        keep_size: settings.size_change == SizeChange::Keep,
        per_tenant: vec![MissRatio::default(); tenants],
        timeline: settings.report_interval.map(|every| Timeline {
            every,
            window: MissRatio::default(),
            total: MissRatio::default(),
            points: Vec::new(),
        }),
        seconds: 0.0,
        requests: 0,
    };
    run_pass(source, profile, settings, &mut runner, on_chunk)?;
    Ok(collect(runner, size, settings.capacity_unit, profile))
}

/// The mean object size of the working set (bytes over distinct objects).
fn mean_object(profile: &Profile) -> u64 {
    profile.working_set_bytes.checked_div(profile.objects).unwrap_or(0)
}

/// Whether `spec` counts objects when sizes are in objects: every reference policy but the
/// memcached model, whose slab layout is about bytes.
fn counts_objects(spec: &PolicySpec) -> bool {
    match spec {
        PolicySpec::Fridge { .. } | PolicySpec::Memcached { .. } => false,
        PolicySpec::Partitioned(inner) => counts_objects(inner),
        _ => true,
    }
}

fn build(
    spec: &PolicySpec,
    size: u64,
    tenants: usize,
    profile: &Profile,
    settings: &Settings,
) -> Result<Built, String> {
    let objects = settings.capacity_unit == CapacityUnit::Objects;
    let mean = mean_object(profile);
    match spec {
        PolicySpec::Fridge { rank, bits, queues } => {
            if tenants > MAX_TENANTS {
                return Err(format!(
                    "the engine has {MAX_TENANTS} tenant ids, the input has {tenants}"
                ));
            }
            // In objects, the engine gets room for `size` items of the mean object size: the
            // inverse of `hitmap_items`.
            let item = mean.max(KEY_LEN as u64) + RECORD_HEADER;
            let max_memory = if objects { size.saturating_mul(item) } else { size };
            let meaning = if objects {
                format!(
                    "engine max_memory = objects x {item} B (max(mean object {mean} B, 8 B key) \
                     + {RECORD_HEADER} B record header, 4 B more with a TTL); index outside \
                     (overhead_bytes)"
                )
            } else {
                format!(
                    "engine max_memory: items incl. {RECORD_HEADER} B record headers (4 B more \
                     with a TTL); index outside (overhead_bytes)"
                )
            };
            let segment_size = settings.segment_size.unwrap_or_else(|| {
                auto_segment_size(
                    max_memory,
                    mean,
                    profile.max_object_size,
                    settings.target_segments,
                )
            });
            let options = FridgeOptions {
                max_memory,
                segment_size,
                seed: settings.seed,
                rank: *rank,
                tenants,
                hitmap_bits_per_item: bits.unwrap_or(settings.hitmap_bits),
                hitmap_items: settings
                    .hitmap_items
                    .unwrap_or_else(|| hitmap_items(max_memory, mean)),
                cleaner_candidates: settings.cleaner_candidates,
                free_watermark: settings.free_watermark,
                eviction: if *queues {
                    Eviction::Queues(Queues::default())
                } else {
                    Eviction::Memshare
                },
                slb_bytes: 0,
                metadata_device: settings.metadata,
            };
            let cache = FridgeCache::new(options)?;
            let mut detail = format!(
                "fridge(segment {segment_size} B, rank {}, {} eviction, hitmap {} bits x {} items",
                rank.name(),
                if *queues { "queues" } else { "memshare" },
                options.hitmap_bits_per_item,
                options.hitmap_items
            );
            let defaults = FridgeOptions::new(max_memory, segment_size);
            if options.cleaner_candidates != defaults.cleaner_candidates {
                detail += &format!(", {} candidates", options.cleaner_candidates);
            }
            if options.free_watermark != defaults.free_watermark {
                detail += &format!(", watermark {}", options.free_watermark);
            }
            detail.push(')');
            Ok(Built {
                cache: Cache::Fridge(Box::new(cache), options),
                detail,
                meaning,
                cache_bytes: max_memory,
                counts_objects: false,
            })
        }
        _ if objects && counts_objects(spec) => {
            let p = spec.reference(size, tenants, settings.seed);
            let split = if matches!(spec, PolicySpec::Partitioned(_)) {
                ", split equally among tenants"
            } else {
                ""
            };
            Ok(Built {
                detail: p.name(),
                cache: Cache::Reference(p),
                meaning: format!(
                    "objects of any size (libCacheSim's ignore_obj_size){split}; cache_bytes = \
                     objects x {mean} B (mean object)"
                ),
                cache_bytes: size.saturating_mul(mean),
                counts_objects: true,
            })
        }
        _ => {
            // The memcached model (bytes by nature) gets, in objects, room for `size` items
            // of the mean object size with its item header (chunk rounding not included).
            let header = u64::from(SlabConfig::default().item_header);
            let capacity = if objects { size.saturating_mul(mean + header) } else { size };
            let meaning = if objects {
                format!(
                    "memcached memory limit = objects x {} B (mean object {mean} B + {header} B \
                     item header); 1 MiB slab pages",
                    mean + header
                )
            } else {
                spec.size_meaning().to_owned()
            };
            let p = spec.reference(capacity, tenants, settings.seed);
            Ok(Built {
                detail: p.name(),
                cache: Cache::Reference(p),
                meaning,
                cache_bytes: capacity,
                counts_objects: false,
            })
        }
    }
}

fn run_pass(
    source: &Source,
    profile: &Profile,
    settings: &Settings,
    runner: &mut Runner,
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
        runner.serve(&reqs, &accs, settings.ops);
        on_chunk(pos);
    }
}

fn collect(mut r: Runner, size: u64, unit: CapacityUnit, profile: &Profile) -> JobOutput {
    let id = r.spec.id();
    let cache_bytes = r.built.cache_bytes;
    let timing =
        Timing { policy: id.clone(), cache_bytes, requests: r.requests, seconds: r.seconds };
    let timeline = match &mut r.timeline {
        Some(t) => {
            t.close();
            t.points
                .iter()
                .map(|&(requests, interval_requests, interval, cumulative)| TimePoint {
                    policy: id.clone(),
                    cache_size: size,
                    requests,
                    interval_requests,
                    interval_miss_ratio: interval,
                    cumulative_miss_ratio: cumulative,
                })
                .collect()
        }
        None => Vec::new(),
    };
    let engine = match &mut r.built.cache {
        Cache::Fridge(f, options) => {
            let s = f.stats();
            let u = f.segment_usage();
            let capacity = CapacityRow {
                segments: u.segments,
                free_segments: u.free,
                open_segments: u.open.segments,
                open_unused_bytes: u.open.unused_bytes(u.segment_size),
                small_segments: u.small.segments,
                small_used_bytes: u.small.used_bytes,
                main_segments: u.main.segments,
                main_used_bytes: u.main.used_bytes,
                sealed_unused_bytes: u.small.unused_bytes(u.segment_size)
                    + u.main.unused_bytes(u.segment_size),
                dead_bytes: u.open.dead_bytes + u.small.dead_bytes + u.main.dead_bytes,
            };
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
                capacity,
            })
        }
        Cache::Reference(_) => None,
    };
    let whole = match unit {
        CapacityUnit::Bytes => profile.working_set_bytes,
        CapacityUnit::Objects => profile.objects,
    };
    let fraction = if whole == 0 { 0.0 } else { size as f64 / whole as f64 };
    let cache_objects = (unit == CapacityUnit::Objects).then_some(size);
    let row = |tenant: String, m: &MissRatio, engine: Option<EngineRow>| Row {
        policy: id.clone(),
        detail: r.built.detail.clone(),
        cache_bytes,
        cache_fraction: fraction,
        cache_objects,
        size_meaning: r.built.meaning.clone(),
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
    let mut rows = vec![row("all".to_owned(), &all, engine)];
    if r.per_tenant.len() > 1 {
        for (t, m) in r.per_tenant.iter().enumerate() {
            rows.push(row(t.to_string(), m, None));
        }
    }
    JobOutput { rows, timing: Some(timing), timeline, note: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_policies_name_their_rank_and_budget() {
        for (name, rank, bits, queues) in [
            ("fridge", RankKind::Hitmap, None, false),
            ("fridge-hitmap", RankKind::Hitmap, None, false),
            ("fridge-lru", RankKind::Lru, None, false),
            ("fridge-lfu@16", RankKind::Lfu, Some(16), false),
            ("fridge-slru", RankKind::Slru, None, false),
            ("fridge@0", RankKind::Hitmap, Some(0), false),
            ("fridge+queues", RankKind::Hitmap, None, true),
            ("fridge-lru+queues@8", RankKind::Lru, Some(8), true),
        ] {
            let spec = PolicySpec::parse(name).unwrap();
            assert_eq!(spec, PolicySpec::Fridge { rank, bits, queues }, "{name}");
            assert!(spec.is_fridge());
            let id = spec.id();
            assert_eq!(PolicySpec::parse(&id).unwrap(), spec, "{id} round-trips");
        }
        assert_eq!(PolicySpec::parse("fridge-hitmap").unwrap().id(), "fridge");
        for bad in ["fridge-mru", "fridge@x", "fridgelru", "partitioned-fridge-lru", "fridge+fifo"]
        {
            assert!(PolicySpec::parse(bad).is_err(), "{bad}");
        }
        let all = PolicySpec::parse_list("all,fridge-lru,fridge").unwrap();
        assert_eq!(all.iter().filter(|p| p.is_fridge()).count(), 2);
    }
}
