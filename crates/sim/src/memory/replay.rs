//! Requests through the real engine and, for each GET, the lines it reads through several
//! memory hierarchies at once (the engine runs once; every hierarchy sees the same lines),
//! with statistics per value-size class and a Markdown report.
//!
//! Per GET, in order, each a dependent step ([`Hierarchy::range`]): every index bucket on the
//! key's path, every key record compared (the key's own last), the segment header (read
//! beside the key's record: the step costs the slower of the two), then the value (its
//! lines priority lines when it has at least [`ReplayOptions::priority_min`] bytes). A GET
//! that misses in the engine reads its path only; the store a lookaside client then makes,
//! and SETs, go to the engine but are not replayed (writes are outside the model).
//!
//! **Queueing.** With [`ReplayOptions::arrival_ns`], requests arrive as a Poisson process of
//! that mean gap at one server that serves them in order (Redis, as the thesis ran it, is
//! single-threaded; §3.2 explains its small values' gains by waiting behind large ones), and
//! a request's *response* time is its wait plus its service (Lindley's recursion).
//!
//! **Reply copies.** With [`ReplayOptions::reply_ring`], a hit's value is also copied, as a
//! kernel copies a reply into socket buffers, into the next bytes of a ring of that size at
//! addresses of its own (never priority lines): non-priority traffic in proportion to the
//! values served, which fridge's own lines (small index and records) do not provide. The
//! copy is one more step of the GET; its lines count in the levels' hits and the memory
//! fetches, not in the lines the GET reads of the engine.

use fridge_engine::LookupLines;
use fridge_workload::{Op, Request, Rng};

use super::dram::DramCache;
use super::latency::Latency;
use super::{CpuCaches, Hierarchy, LevelCounts, lines_spanned};
use crate::fridge::FridgeCache;

/// One hierarchy to replay into: CPU caches alone, or with a DRAM cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSpec {
    /// The DRAM cache: bytes, ways (1: direct-mapped) and whether priority lines are on.
    pub dram: Option<(u64, usize, bool)>,
}

impl ModelSpec {
    /// Parses one `--memory-model` name: `cpu`, `dram-direct`, `dram-direct-priority`,
    /// `dram-Nway`, `dram-Nway-priority` (N ways), the DRAM cache of `dram_bytes`.
    pub fn parse(name: &str, dram_bytes: u64) -> Result<ModelSpec, String> {
        if name == "cpu" {
            return Ok(ModelSpec { dram: None });
        }
        let rest = name.strip_prefix("dram-").ok_or_else(|| format!("unknown model {name:?}"))?;
        let (kind, priority) = match rest.strip_suffix("-priority") {
            Some(k) => (k, true),
            None => (rest, false),
        };
        let ways = if kind == "direct" {
            1
        } else {
            kind.strip_suffix("way")
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| n >= 1)
                .ok_or_else(|| format!("unknown model {name:?}"))?
        };
        Ok(ModelSpec { dram: Some((dram_bytes, ways, priority)) })
    }

    /// The model's name as [`ModelSpec::parse`] reads it, with the DRAM cache's size.
    pub fn label(&self) -> String {
        match self.dram {
            None => "cpu".to_string(),
            Some((bytes, ways, priority)) => {
                let kind = if ways == 1 { "direct".to_string() } else { format!("{ways}way") };
                let p = if priority { "-priority" } else { "" };
                format!("dram-{kind}{p} {} MiB", bytes >> 20)
            }
        }
    }
}

/// What a replay needs besides the engine and the requests.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The hierarchies.
    pub models: Vec<ModelSpec>,
    /// The CPU caches of every hierarchy.
    pub cpu: CpuCaches,
    /// Per-level costs.
    pub latency: Latency,
    /// Values of at least this many bytes are priority lines in a DRAM cache that has them.
    pub priority_min: usize,
    /// Upper bounds of the value-size classes, ascending (a last class takes the rest).
    pub classes: Vec<u64>,
    /// Requests served before statistics start (they warm the engine and every cache).
    pub warmup: u64,
    /// Mean gap between arrivals (ns) for the queueing model; `None`: service times only.
    pub arrival_ns: Option<f64>,
    /// Seed of the arrivals.
    pub seed: u64,
    /// Bytes of the ring a hit's value is copied into (0: no copies).
    pub reply_ring: u64,
}

/// Where the reply ring's addresses start: far above any address the engine's mappings get.
const REPLY_RING_BASE: u64 = 1 << 46;

/// Statistics of one value-size class in one hierarchy.
#[derive(Debug, Clone, Default)]
pub struct ClassStats {
    /// GETs counted.
    pub gets: u64,
    /// GETs that hit in the engine.
    pub engine_hits: u64,
    /// Line accesses per level.
    pub levels: LevelCounts,
    /// Lines the GETs read (each distinct line of a GET once).
    pub touched: u64,
    /// Cavast's count of cache-line fetches (§6, "Cache-friendly hash indexing"): one per
    /// bucket read, ⌈size / 64⌉ per item read (the record alone for a key compared and
    /// rejected, record and value for the key's own item).
    pub cavast_clf: u64,
    /// Service times (ns).
    pub service: Vec<f32>,
    /// Response times with queueing (ns); empty without arrivals.
    pub response: Vec<f32>,
}

/// One hierarchy's results.
#[derive(Debug, Clone)]
pub struct ModelResult {
    /// What was modelled.
    pub spec: ModelSpec,
    /// Per class, in [`ReplayOptions::classes`] order, then the last class.
    pub classes: Vec<ClassStats>,
    /// The thesis's benefit counter (Figure 4.13), with priority lines.
    pub benefit: u64,
    /// Non-priority misses the priority rule left uncached.
    pub bypassed: u64,
}

/// A replay in progress.
#[derive(Debug)]
pub struct Replay {
    options: ReplayOptions,
    models: Vec<(Hierarchy, Vec<ClassStats>, f64)>,
    lines: LookupLines,
    rng: Rng,
    seen: u64,
    /// Service time of the previous request per hierarchy (for Lindley's recursion).
    previous: Vec<f64>,
    /// Offset of the reply ring's next copy.
    ring_at: u64,
    /// GETs counted, index buckets and key records they read (the same in every hierarchy).
    path: PathCounts,
}

/// What the counted GETs read of the index, whatever the hierarchy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathCounts {
    /// GETs counted.
    pub gets: u64,
    /// Index buckets they read.
    pub buckets: u64,
    /// Key records they compared (their own and tag collisions).
    pub records: u64,
    /// GETs that compared a record other than their key's (a tag collision).
    pub collisions: u64,
}

impl Replay {
    /// Hierarchies for `options.models`, all empty.
    pub fn new(options: ReplayOptions) -> Replay {
        let classes = options.classes.len() + 1;
        let models = options
            .models
            .iter()
            .map(|m| {
                let dram = m.dram.map(|(bytes, ways, p)| DramCache::new(bytes, ways, p));
                let h = Hierarchy::new(options.cpu, dram, options.latency);
                (h, vec![ClassStats::default(); classes], 0.0)
            })
            .collect();
        let previous = vec![0.0; options.models.len()];
        let rng = Rng::new(options.seed);
        Replay {
            options,
            models,
            lines: LookupLines::default(),
            rng,
            seen: 0,
            previous,
            ring_at: 0,
            path: PathCounts::default(),
        }
    }

    fn class_of(&self, value_size: u64) -> usize {
        self.options
            .classes
            .iter()
            .position(|&b| value_size <= b)
            .unwrap_or(self.options.classes.len())
    }

    /// Serves `r` in `cache`, replaying a GET's lines into every hierarchy first.
    pub fn request(&mut self, cache: &mut FridgeCache, r: &Request) {
        self.seen += 1;
        let counted = self.seen > self.options.warmup;
        if !r.op.is_read() {
            if r.op == Op::Delete {
                cache.delete(r);
            } else {
                cache.set(r);
            }
            return;
        }
        let hit = cache.lookup_lines(r, &mut self.lines);
        let gap = match self.options.arrival_ns {
            Some(mean) => -mean * (1.0 - self.rng.next_f64()).ln(),
            None => 0.0,
        };
        let class = self.class_of(u64::from(r.value_size));
        let lines = &self.lines;
        let (touched, clf) = counts_of(lines);
        if counted {
            self.path.gets += 1;
            self.path.buckets += lines.buckets.len() as u64;
            self.path.records += lines.records.len() as u64;
            let own = usize::from(lines.value.is_some());
            self.path.collisions += u64::from(lines.records.len() > own);
        }
        let priority = lines.value.is_some_and(|v| v.len >= self.options.priority_min);
        let ring = self.options.reply_ring;
        let reply = match lines.value {
            Some(v) if ring > 0 && hit => {
                let len = v.len as u64;
                if self.ring_at + len > ring {
                    self.ring_at = 0;
                }
                let at = REPLY_RING_BASE + self.ring_at;
                self.ring_at += len;
                Some((at as usize, v.len))
            }
            _ => None,
        };
        for (i, (h, stats, wait)) in self.models.iter_mut().enumerate() {
            let mut levels = LevelCounts::default();
            let ns = replay_get(h, lines, priority, reply, &mut levels);
            if self.options.arrival_ns.is_some() {
                *wait = (*wait + self.previous[i] - gap).max(0.0);
                self.previous[i] = ns;
            }
            if counted {
                let s = &mut stats[class];
                s.gets += 1;
                s.engine_hits += u64::from(hit);
                s.levels.merge(&levels);
                s.touched += touched;
                s.cavast_clf += clf;
                s.service.push(ns as f32);
                if self.options.arrival_ns.is_some() {
                    s.response.push((*wait + ns) as f32);
                }
            }
        }
        cache.get(r);
    }

    /// What the counted GETs read of the index so far.
    pub fn path(&self) -> PathCounts {
        self.path
    }

    /// The results, each class's times sorted.
    pub fn finish(self) -> Vec<ModelResult> {
        self.options
            .models
            .iter()
            .zip(self.models)
            .map(|(spec, (h, mut classes, _))| {
                for c in &mut classes {
                    c.service.sort_by(f32::total_cmp);
                    c.response.sort_by(f32::total_cmp);
                }
                let (benefit, bypassed) = h.dram().map_or((0, 0), |d| (d.benefit(), d.bypassed()));
                ModelResult { spec: *spec, classes, benefit, bypassed }
            })
            .collect()
    }
}

/// Lines a GET reads (distinct within the GET) and Cavast's count for it.
fn counts_of(lines: &LookupLines) -> (u64, u64) {
    let clf_of = |bytes: usize| (bytes as u64).div_ceil(64).max(1);
    let buckets = lines.buckets.len() as u64;
    let mut touched = buckets + u64::from(lines.segment_header.is_some());
    let mut clf = buckets;
    let own = lines.value.map(|_| lines.records.len() - 1);
    for (i, r) in lines.records.iter().enumerate() {
        match (Some(i) == own, lines.value) {
            (true, Some(v)) => {
                clf += clf_of(r.len + v.len);
                touched += if lines.inline {
                    lines_spanned(r.addr, r.len + v.len)
                } else {
                    lines_spanned(r.addr, r.len) + lines_spanned(v.addr, v.len)
                };
            }
            _ => {
                clf += clf_of(r.len);
                touched += lines_spanned(r.addr, r.len);
            }
        }
    }
    (touched, clf)
}

/// Replays one GET's lines into `h`; returns its service time (ns).
fn replay_get(
    h: &mut Hierarchy,
    lines: &LookupLines,
    priority: bool,
    reply: Option<(usize, usize)>,
    levels: &mut LevelCounts,
) -> f64 {
    let mut ns = 0.0;
    for &b in &lines.buckets {
        ns += h.range(b, 64, false, levels);
    }
    let last = lines.records.len().saturating_sub(1);
    for (i, r) in lines.records.iter().enumerate() {
        let rec = h.range(r.addr, r.len, false, levels);
        ns += match lines.segment_header {
            Some(header) if i == last => rec.max(h.range(header, 64, false, levels)),
            _ => rec,
        };
    }
    if let Some(v) = lines.value {
        ns += h.range(v.addr, v.len, priority, levels);
    }
    if let Some((at, len)) = reply {
        ns += h.range(at, len, false, levels);
    }
    ns
}

/// The `p`-quantile (0–1) of sorted `xs` by nearest rank; 0 when empty.
pub fn percentile(xs: &[f32], p: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let rank = ((p * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
    f64::from(xs[rank - 1])
}

/// The names of the classes of `bounds` (`≤ b` each, then `> last`).
pub fn class_names(bounds: &[u64]) -> Vec<String> {
    let mut names: Vec<String> = bounds.iter().map(|b| format!("≤ {b} B")).collect();
    names.push(match bounds.last() {
        Some(b) => format!("> {b} B"),
        None => "all".to_string(),
    });
    names
}

/// A Markdown table of `results`: a row per model and class (classes without GETs left
/// out), then one for all classes.
pub fn report(results: &[ModelResult], bounds: &[u64], queueing: bool) -> String {
    let names = class_names(bounds);
    let mut out = String::from(
        "| model | values | GETs | engine hit | L2 hit | L3 hit | DRAM$ hit | lines/GET | Cavast CLF/GET | memory fetches/GET | mean ns | p50 ns | p90 ns | p99 ns |",
    );
    if queueing {
        out.push_str(" p90 response ns |");
    }
    out.push('\n');
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    if queueing {
        out.push_str("---:|");
    }
    out.push('\n');
    for m in results {
        let mut all = ClassStats::default();
        for c in &m.classes {
            all.gets += c.gets;
            all.engine_hits += c.engine_hits;
            all.levels.merge(&c.levels);
            all.touched += c.touched;
            all.cavast_clf += c.cavast_clf;
            all.service.extend_from_slice(&c.service);
            all.response.extend_from_slice(&c.response);
        }
        all.service.sort_by(f32::total_cmp);
        all.response.sort_by(f32::total_cmp);
        let rows = m.classes.iter().zip(&names).filter(|(c, _)| c.gets > 0);
        for (c, name) in rows.chain(std::iter::once((&all, &"all".to_string()))) {
            out.push_str(&row(&m.spec, c, name, queueing));
        }
    }
    out
}

fn row(spec: &ModelSpec, c: &ClassStats, name: &str, queueing: bool) -> String {
    let l = &c.levels;
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let per = |a: u64| ratio(a, c.gets);
    let dram = if spec.dram.is_some() {
        format!("{:.3}", ratio(l.dram_cache, l.dram_cache + l.memory))
    } else {
        "–".to_string()
    };
    let mut s = format!(
        "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {} | {:.1} | {:.1} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} |",
        spec.label(),
        name,
        c.gets,
        per(c.engine_hits),
        ratio(l.l2, l.total()),
        ratio(l.l3, l.total() - l.l2),
        dram,
        per(c.touched),
        per(c.cavast_clf),
        per(l.memory),
        c.service.iter().map(|&x| f64::from(x)).sum::<f64>() / c.gets.max(1) as f64,
        percentile(&c.service, 0.5),
        percentile(&c.service, 0.9),
        percentile(&c.service, 0.99),
    );
    if queueing {
        s.push_str(&format!(" {:.0} |", percentile(&c.response, 0.9)));
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_parse() {
        assert_eq!(ModelSpec::parse("cpu", 1 << 20).unwrap().dram, None);
        assert_eq!(ModelSpec::parse("dram-direct", 8).unwrap().dram, Some((8, 1, false)));
        assert_eq!(ModelSpec::parse("dram-4way-priority", 8).unwrap().dram, Some((8, 4, true)));
        assert!(ModelSpec::parse("dram-0way", 8).is_err());
        assert!(ModelSpec::parse("l4", 8).is_err());
        assert_eq!(ModelSpec::parse("dram-8way", 256 << 20).unwrap().label(), "dram-8way 256 MiB");
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let xs: Vec<f32> = (1..=10).map(|x| x as f32).collect();
        assert_eq!(percentile(&xs, 0.5), 5.0);
        assert_eq!(percentile(&xs, 0.9), 9.0);
        assert_eq!(percentile(&xs, 0.99), 10.0);
        assert_eq!(percentile(&[], 0.9), 0.0);
    }

    #[test]
    fn a_repeated_get_is_served_from_l2() {
        let mut cache = FridgeCache::new(crate::fridge::FridgeOptions::new(8 << 20, 64 << 10))
            .expect("a small engine");
        let options = ReplayOptions {
            models: vec![ModelSpec { dram: None }],
            cpu: CpuCaches::default(),
            latency: Latency::default(),
            priority_min: 1 << 16,
            classes: vec![64],
            warmup: 1,
            arrival_ns: None,
            seed: 1,
            reply_ring: 0,
        };
        let mut replay = Replay::new(options);
        let r = Request::get(7, 1_000);
        // The first GET misses in the engine and stores the item (warm-up); the next three
        // read bucket, record, segment header and value, all in L2 after the first of them.
        for _ in 0..4 {
            replay.request(&mut cache, &r);
        }
        let results = replay.finish();
        let large = &results[0].classes[1];
        assert_eq!(large.gets, 3);
        assert_eq!(large.engine_hits, 3);
        // 1 bucket + 1 record line + 1 header + 16 value lines (1,000 bytes, 64-aligned or not).
        assert!(large.touched / 3 >= 18, "lines per GET: {}", large.touched / 3);
        // The warm-up's miss read the bucket: the first counted GET fetches the rest.
        assert_eq!(large.levels.memory, large.touched / 3 - 1, "only the first GET fetches");
        assert_eq!(large.levels.l2, large.touched - large.levels.memory);
    }

    #[test]
    fn a_reply_copy_reads_the_value_again_elsewhere() {
        let mut plain = FridgeCache::new(crate::fridge::FridgeOptions::new(8 << 20, 64 << 10))
            .expect("a small engine");
        let mut copying = FridgeCache::new(crate::fridge::FridgeOptions::new(8 << 20, 64 << 10))
            .expect("a small engine");
        let options = |reply_ring| ReplayOptions {
            models: vec![ModelSpec { dram: None }],
            cpu: CpuCaches::default(),
            latency: Latency::default(),
            priority_min: 1 << 16,
            classes: vec![],
            warmup: 1,
            arrival_ns: None,
            seed: 1,
            reply_ring,
        };
        let (mut a, mut b) = (Replay::new(options(0)), Replay::new(options(4096)));
        let r = Request::get(7, 1_000);
        for _ in 0..2 {
            a.request(&mut plain, &r);
            b.request(&mut copying, &r);
        }
        let (a, b) = (&a.finish()[0].classes[0], &b.finish()[0].classes[0]);
        // The copy's 1,000 bytes at the ring's start: 16 lines, from memory the first time.
        assert_eq!(b.levels.total(), a.levels.total() + 16);
        assert_eq!(b.levels.memory, a.levels.memory + 16);
        assert_eq!(b.touched, a.touched, "lines/GET counts the engine's lines only");
    }
}
