//! A run: up to three phases, each spread over worker threads, merged into a [`Report`].
//!
//! ```text
//!  fill (--fill)   SET every key of every tenant once, in order, pipelined (mass insertion)
//!  run             the workload (or a trace), closed loop or open loop, for a duration or
//!                  a request count
//!  scan (--scan)   GET every key once, in order: how many are still resident
//! ```
//!
//! Threads are plain OS threads (scoped); each owns its connections (`conns` per tenant) and
//! its histograms, so nothing is shared on the request path but one cache line of progress
//! counters per thread. The calling thread prints the progress line and merges the results.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::histogram::{Latency, SizeClasses};
use crate::protocol::{Command, Protocol};
use crate::report::{LatencyRow, PhaseReport, Report, TenantRow};
use crate::schedule::{Arrivals, Schedule};
use crate::source::{KeySpace, Source, TraceSpec};
use crate::value::Pool;
use crate::worker::{self, Counts, Pacing, Progress, WorkerPlan, WorkerStats};

/// One tenant: its key space, its connections' credentials.
#[derive(Clone, Debug)]
pub struct TenantSpec {
    /// Name in reports.
    pub name: String,
    /// Its requests.
    pub space: KeySpace,
    /// `user`, `password` sent on every connection before the first request.
    pub auth: Option<(String, String)>,
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Server address.
    pub addr: SocketAddr,
    /// Protocol.
    pub protocol: Protocol,
    /// Client threads.
    pub threads: usize,
    /// Connections per tenant per thread.
    pub conns: usize,
    /// Closed-loop pipeline depth of the run phase.
    pub depth: usize,
    /// Open loop: total requests per second (closed loop when `None`).
    pub rate: Option<f64>,
    /// Open-loop arrivals.
    pub arrivals: Arrivals,
    /// Length of the run phase (after warm-up).
    pub duration: Option<Duration>,
    /// Requests of the run phase, over all threads.
    pub requests: Option<u64>,
    /// Run-phase time not recorded at the start.
    pub warmup: Duration,
    /// The tenants (at least one).
    pub tenants: Vec<TenantSpec>,
    /// Replay this trace instead of the first tenant's synthetic requests.
    pub trace: Option<TraceSpec>,
    /// Run the fill phase.
    pub fill: bool,
    /// Pipeline depth of fill and scan.
    pub fill_depth: usize,
    /// Run the scan phase.
    pub scan: bool,
    /// Check every GET hit's value.
    pub verify: bool,
    /// Histogram size classes.
    pub classes: SizeClasses,
    /// Largest value written (larger sizes are clamped).
    pub max_value: usize,
    /// Closed loop: bytes in flight per connection before it waits.
    pub max_inflight_bytes: usize,
    /// How long to wait for outstanding replies at the end of a phase.
    pub drain: Duration,
    /// Print the progress line on stderr.
    pub progress: bool,
    /// Labels for reports.
    pub label: String,
    /// Server name for comparisons.
    pub server_name: String,
    /// Workload name for comparisons.
    pub workload_name: String,
    /// Seed of value bytes and arrivals.
    pub seed: u64,
}

impl RunConfig {
    /// One tenant, one thread, one connection, closed loop of depth 1, no phases chosen yet.
    pub fn new(addr: SocketAddr, protocol: Protocol, space: KeySpace) -> Self {
        Self {
            addr,
            protocol,
            threads: 1,
            conns: 1,
            depth: 1,
            rate: None,
            arrivals: Arrivals::Constant,
            duration: None,
            requests: None,
            warmup: Duration::ZERO,
            tenants: vec![TenantSpec { name: "default".into(), space, auth: None }],
            trace: None,
            fill: false,
            fill_depth: 32,
            scan: false,
            verify: false,
            classes: SizeClasses::default(),
            max_value: 1_000_000,
            max_inflight_bytes: 4 << 20,
            drain: Duration::from_secs(10),
            progress: false,
            label: String::new(),
            server_name: String::new(),
            workload_name: String::new(),
            seed: 1,
        }
    }

    fn has_run_phase(&self) -> bool {
        self.duration.is_some() || self.requests.is_some() || self.trace.is_some()
    }
}

/// Which phase a plan is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Fill,
    Run,
    Scan,
}

impl Phase {
    const fn name(self) -> &'static str {
        match self {
            Self::Fill => "fill",
            Self::Run => "run",
            Self::Scan => "scan",
        }
    }
}

/// Runs every phase the configuration asks for.
///
/// # Errors
/// Bad configuration, a connection or authentication failure, a trace that cannot be opened.
pub fn run(cfg: &RunConfig) -> Result<Report, String> {
    if cfg.threads == 0 || cfg.conns == 0 || cfg.depth == 0 || cfg.fill_depth == 0 {
        return Err("threads, conns, depth and fill depth must be at least 1".into());
    }
    if cfg.tenants.is_empty() {
        return Err("at least one tenant".into());
    }
    if cfg.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        return Err("--rate must be positive".into());
    }
    let pool = Arc::new(Pool::new(cfg.max_value, cfg.seed));
    let mut report = Report {
        label: cfg.label.clone(),
        server: cfg.server_name.clone(),
        workload: cfg.workload_name.clone(),
        addr: cfg.addr.to_string(),
        protocol: format!("{:?}", cfg.protocol).to_lowercase(),
        threads: cfg.threads,
        conns: cfg.conns,
        depth: cfg.depth,
        rate: cfg.rate,
        tenants: cfg.tenants.len(),
        verify: cfg.verify,
        phases: Vec::new(),
    };
    let phases =
        [(Phase::Fill, cfg.fill), (Phase::Run, cfg.has_run_phase()), (Phase::Scan, cfg.scan)];
    for (phase, wanted) in phases {
        if wanted {
            report.phases.push(run_phase(cfg, phase, &pool)?);
        }
    }
    Ok(report)
}

fn run_phase(cfg: &RunConfig, phase: Phase, pool: &Arc<Pool>) -> Result<PhaseReport, String> {
    let spaces: Arc<Vec<KeySpace>> =
        Arc::new(cfg.tenants.iter().map(|t| t.space.clone()).collect());
    let auth: Vec<_> = cfg.tenants.iter().map(|t| t.auth.clone()).collect();
    let progress = Arc::new(Progress::new(cfg.threads));
    let clock = Instant::now();
    let warmup_ns = if phase == Phase::Run { cfg.warmup.as_nanos() as u64 } else { 0 };
    let deadline_ns = match phase {
        Phase::Run => cfg.duration.map(|d| warmup_ns + d.as_nanos() as u64),
        _ => None,
    };
    let mut plans = Vec::with_capacity(cfg.threads);
    for thread in 0..cfg.threads {
        let mut sources = Vec::with_capacity(spaces.len());
        for space in spaces.iter() {
            sources.push(match phase {
                Phase::Fill => {
                    Source::sweep(Command::Set, space.workload.keys, cfg.threads, thread)
                }
                Phase::Scan => {
                    Source::sweep(Command::Get, space.workload.keys, cfg.threads, thread)
                }
                Phase::Run => match &cfg.trace {
                    Some(trace) => Source::Trace {
                        reader: trace.open(space).map_err(|e| format!("trace: {e}"))?,
                        stride: cfg.threads as u64,
                        offset: thread as u64,
                        read: 0,
                        error: None,
                    },
                    None => Source::synthetic(space, thread).map_err(|e| e.to_string())?,
                },
            });
            if phase == Phase::Run && cfg.trace.is_some() {
                // A trace is one stream: it feeds the first tenant only.
                break;
            }
        }
        let tenants_used = sources.len();
        let pacing = match (phase, cfg.rate) {
            (Phase::Run, Some(rate)) => Pacing::Open(Schedule::new(
                rate,
                cfg.threads,
                thread,
                match cfg.arrivals {
                    Arrivals::Constant => Arrivals::Constant,
                    Arrivals::Poisson { seed } => Arrivals::Poisson { seed: seed ^ cfg.seed },
                },
            )),
            (Phase::Run, None) => Pacing::Closed { depth: cfg.depth },
            _ => Pacing::Closed { depth: cfg.fill_depth },
        };
        let per_thread =
            |n: u64| n / cfg.threads as u64 + u64::from((thread as u64) < n % cfg.threads as u64);
        plans.push(WorkerPlan {
            addr: cfg.addr,
            protocol: cfg.protocol,
            conns: (0..tenants_used).flat_map(|t| std::iter::repeat_n(t, cfg.conns)).collect(),
            auth: auth.clone(),
            spaces: Arc::clone(&spaces),
            sources,
            pacing,
            deadline_ns,
            max_requests: if phase == Phase::Run { cfg.requests.map(per_thread) } else { None },
            record_from_ns: warmup_ns,
            drain: cfg.drain,
            max_inflight_bytes: cfg.max_inflight_bytes,
            verify: cfg.verify,
            classes: cfg.classes.clone(),
            max_value: cfg.max_value,
            pool: Arc::clone(pool),
            progress: Arc::clone(&progress),
            thread,
            clock,
        });
    }
    let results: Vec<Result<WorkerStats, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            plans.into_iter().map(|plan| scope.spawn(move || worker::run(plan))).collect();
        if cfg.progress {
            show_progress(phase, &progress, clock, &handles);
        }
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("worker thread panicked".into())))
            .collect()
    });
    let stats = results.into_iter().collect::<Result<Vec<_>, _>>()?;
    if let Some(e) = stats.iter().find_map(|s| s.trace_error.clone()) {
        return Err(format!("trace: {e}"));
    }
    let mut report = merge(cfg, phase, &stats, warmup_ns);
    if phase != Phase::Run {
        report.keys = Some(spaces.iter().map(|s| s.workload.keys).sum());
    }
    Ok(report)
}

fn show_progress<T>(
    phase: Phase,
    progress: &Progress,
    clock: Instant,
    handles: &[std::thread::ScopedJoinHandle<'_, T>],
) {
    let tty = std::io::stderr().is_terminal();
    let mut last = (0u64, clock.elapsed());
    let mut next_print = Duration::from_secs(1);
    while !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(50));
        let now = clock.elapsed();
        if now < next_print {
            continue;
        }
        next_print += Duration::from_secs(1);
        let [completed, hits, misses, errors, inflight] = progress.totals();
        let rate = (completed - last.0) as f64 / (now - last.1).as_secs_f64();
        last = (completed, now);
        let hit =
            if hits + misses > 0 { hits as f64 / (hits + misses) as f64 * 100.0 } else { 0.0 };
        let line = format!(
            "[{} {:6.1}s] {completed:>11} replies {rate:>11.0}/s  hit {hit:5.1}%  errors {errors}  in flight {inflight}",
            phase.name(),
            now.as_secs_f64()
        );
        let mut err = std::io::stderr().lock();
        let _ = if tty { write!(err, "\r{line}\x1b[K") } else { writeln!(err, "{line}") };
    }
    if tty {
        let _ = writeln!(std::io::stderr());
    }
}

fn merge(cfg: &RunConfig, phase: Phase, stats: &[WorkerStats], warmup_ns: u64) -> PhaseReport {
    let classes = cfg.classes.len();
    let mut latency = vec![Latency::new(); Command::ALL.len() * classes];
    let mut tenant_latency = vec![Latency::new(); cfg.tenants.len()];
    let mut tenant_counts = vec![Counts::default(); cfg.tenants.len()];
    let mut counts = Counts::default();
    let mut send_lag = Latency::new();
    let mut failures = Vec::new();
    let mut last_ns = 0;
    for s in stats {
        for (into, from) in latency.iter_mut().zip(&s.latency) {
            into.merge(from);
        }
        for (into, from) in tenant_latency.iter_mut().zip(&s.tenant_latency) {
            into.merge(from);
        }
        for (into, from) in tenant_counts.iter_mut().zip(&s.tenant_counts) {
            into.add(from);
        }
        counts.add(&s.counts);
        send_lag.merge(&s.send_lag);
        failures.extend(s.failures.iter().cloned());
        last_ns = last_ns.max(s.last_reply_ns);
    }
    failures.truncate(20);
    let seconds = last_ns.saturating_sub(warmup_ns) as f64 / 1e9;
    let per_s = |n: u64| if seconds > 0.0 { n as f64 / seconds } else { 0.0 };
    let hit_ratio = |c: &Counts| {
        if c.hits + c.misses > 0 { c.hits as f64 / (c.hits + c.misses) as f64 } else { 0.0 }
    };
    let mut rows = Vec::new();
    for command in Command::ALL {
        let per_class = &latency[command.index() * classes..(command.index() + 1) * classes];
        let mut all = Latency::new();
        for h in per_class {
            all.merge(h);
        }
        if all.count() == 0 {
            continue;
        }
        let row = |class: String, h: &Latency| LatencyRow {
            op: command.name().into(),
            class,
            summary: h.summary(),
        };
        rows.push(row("all".into(), &all));
        for (class, h) in per_class.iter().enumerate() {
            if h.count() > 0 {
                rows.push(row(cfg.classes.name(class), h));
            }
        }
    }
    let tenants = if cfg.tenants.len() > 1 {
        cfg.tenants
            .iter()
            .zip(tenant_counts.iter().zip(&tenant_latency))
            .map(|(t, (c, h))| TenantRow {
                name: t.name.clone(),
                ops_per_s: per_s(c.completed),
                hit_ratio: hit_ratio(c),
                counts: *c,
                latency: h.summary(),
            })
            .collect()
    } else {
        Vec::new()
    };
    PhaseReport {
        name: phase.name().into(),
        seconds,
        ops_per_s: per_s(counts.completed),
        hit_ratio: hit_ratio(&counts),
        keys: None,
        counts,
        latency: rows,
        tenants,
        send_lag: (send_lag.count() > 0).then(|| send_lag.summary()),
        failures,
    }
}
