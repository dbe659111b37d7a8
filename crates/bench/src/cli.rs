//! The command line: `fridge-bench [run options]` runs a benchmark; `fridge-bench report`
//! compares saved JSON reports (see [`crate::compare`]).
//!
//! The options' doc comments are their `--help` text, written for a terminal: `<name>` there
//! is a placeholder, not an HTML tag.
#![allow(rustdoc::invalid_html_tags, reason = "doc comments here are --help text")]

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use fridge_units::Size;
use fridge_workload::Workload;

use crate::histogram::SizeClasses;
use crate::protocol::Protocol;
use crate::run::{RunConfig, TenantSpec};
use crate::schedule::Arrivals;
use crate::source::{KeySpace, TraceFormat, TraceSpec};
use crate::spec;

/// Load generator for memcached (text and meta) and RESP servers.
#[derive(Debug, Parser)]
#[command(name = "fridge-bench", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// `report`: compare saved runs. Without a subcommand: run a benchmark.
    #[command(subcommand)]
    pub command: Option<Cmd>,
    /// Benchmark options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Compare JSON reports of several servers: ratio tables (Markdown) and a PNG chart.
    Report(crate::compare::ReportArgs),
}

/// Options of a benchmark run.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Server address.
    #[arg(short, long, default_value = "127.0.0.1:11211")]
    pub server: String,
    /// Protocol.
    #[arg(short, long, value_enum, default_value = "text")]
    pub protocol: Protocol,
    /// Client threads.
    #[arg(short, long, default_value_t = 1)]
    pub threads: usize,
    /// Connections per tenant per thread.
    #[arg(short, long, default_value_t = 4)]
    pub conns: usize,
    /// Closed loop: requests in flight per connection (pipeline depth).
    #[arg(short, long, default_value_t = 1)]
    pub depth: usize,
    /// Open loop: total requests per second, latency measured from intended send times.
    #[arg(short, long)]
    pub rate: Option<f64>,
    /// Open loop: Poisson arrivals instead of even spacing.
    #[arg(long)]
    pub poisson: bool,
    /// Seconds of the run phase (after warm-up). Default 10, but no run phase by default when
    /// --requests or --trace is given, or --fill/--scan without --rate.
    #[arg(short = 'D', long)]
    pub duration: Option<f64>,
    /// Requests of the run phase over all threads (instead of a duration).
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// Seconds at the start of the run phase that are not recorded.
    #[arg(long, default_value_t = 0.0)]
    pub warmup: f64,
    /// Keys per tenant (ids 0..keys).
    #[arg(short, long, default_value_t = 100_000)]
    pub keys: u64,
    /// Fill: as many keys as make this many bytes of keys and values (e.g. 3× the server's
    /// memory for a capacity test); overrides --keys. A number of bytes with an optional unit
    /// k/m/g/t (also kb/kib, …), binary (1gb = 1GiB = 2^30) and case-insensitive, e.g. 768M,
    /// 1.5GiB.
    #[arg(long, value_name = "SIZE")]
    pub fill_bytes: Option<Size>,
    /// Key popularity: uniform, zipf:<theta>, zipf-ranked:<theta>, hotspot:<keys>:<ops>,
    /// latest:<theta>.
    #[arg(long, default_value = "zipf:0.99")]
    pub popularity: String,
    /// Key sizes: <bytes>, uniform:<min>:<max>, etc-key, sizes:<b>=<w>,… (at least 11).
    #[arg(long, default_value = "16")]
    pub key_size: String,
    /// Value sizes: <bytes>, uniform:<min>:<max>, etc (Facebook ETC), thesis (10 B / 300 B /
    /// 1 MB at 50/45/5%), sizes:<b>=<w>,…
    #[arg(long, default_value = "32")]
    pub value_size: String,
    /// Operations: a GET fraction (0.9) or get=<w>,set=<w>,delete=<w>.
    #[arg(long, default_value = "0.9")]
    pub ops: String,
    /// TTL of SETs: none, <seconds>, ttl:<s|none>=<w>,…
    #[arg(long, default_value = "none")]
    pub ttl: String,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Replay this trace in the run phase instead of synthetic requests.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Format of --trace.
    #[arg(long, value_enum, default_value = "oracle")]
    pub trace_format: TraceFormat,
    /// Tenants, each with its own key space (keys prefixed `<name>:`) and --conns connections
    /// per thread. Names t0, t1, … unless --tenant-names.
    #[arg(long, default_value_t = 1)]
    pub tenants: usize,
    /// Comma-separated tenant names.
    #[arg(long)]
    pub tenant_names: Option<String>,
    /// Credentials `user:password` per tenant, in tenant order (repeat the option): RESP
    /// `AUTH`, memcached `-Y`-style auth `set`.
    #[arg(long)]
    pub auth: Vec<String>,
    /// Before the run, SET every key once, pipelined (mass insertion).
    #[arg(long)]
    pub fill: bool,
    /// Pipeline depth of fill and scan.
    #[arg(long, default_value_t = 32)]
    pub fill_depth: usize,
    /// After the run, GET every key once and report how many are resident.
    #[arg(long)]
    pub scan: bool,
    /// Check the key id, length and checksum of every value returned; exit 1 on a mismatch.
    #[arg(long)]
    pub verify: bool,
    /// Upper bounds of value-size classes for latency histograms.
    #[arg(long, default_value = "64,1024,65536", value_delimiter = ',')]
    pub size_classes: Vec<u32>,
    /// Largest value written (larger sizes are clamped).
    #[arg(long, default_value_t = 1_000_000)]
    pub max_value_size: usize,
    /// Seconds to wait for outstanding replies at the end of a phase.
    #[arg(long, default_value_t = 10.0)]
    pub drain: f64,
    /// Write the report as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write latency rows as CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Label of the run in reports.
    #[arg(long, default_value = "")]
    pub label: String,
    /// Name of the server under test, for `report`.
    #[arg(long, default_value = "")]
    pub server_name: String,
    /// Name of the workload, for `report`.
    #[arg(long, default_value = "")]
    pub workload_name: String,
    /// No progress line.
    #[arg(short, long)]
    pub quiet: bool,
}

fn seconds(s: f64, what: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s).map_err(|_| format!("{what}: {s} is not a number of seconds"))
}

impl RunArgs {
    /// The run configuration these options describe.
    ///
    /// # Errors
    /// A message naming the bad option.
    pub fn config(&self) -> Result<RunConfig, String> {
        let addr: SocketAddr = self
            .server
            .to_socket_addrs()
            .map_err(|e| format!("--server {}: {e}", self.server))?
            .next()
            .ok_or_else(|| format!("--server {}: no address", self.server))?;
        let names: Vec<String> = match &self.tenant_names {
            Some(n) => n.split(',').map(str::to_owned).collect(),
            None if self.tenants > 1 => (0..self.tenants).map(|i| format!("t{i}")).collect(),
            None => vec!["default".into()],
        };
        let multi = names.len() > 1;
        let mut tenants = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let mut workload = Workload::new(
                self.keys,
                spec::popularity(&self.popularity)?,
                self.seed.wrapping_add(i as u64),
            );
            workload.key_size = spec::size(&self.key_size)?;
            workload.value_size = spec::size(&self.value_size)?;
            workload.ops = spec::ops(&self.ops)?;
            workload.ttl = spec::ttl(&self.ttl)?;
            let prefix = if multi { format!("{name}:") } else { String::new() };
            let mut space = KeySpace::new(workload, prefix);
            if let Some(bytes) = self.fill_bytes {
                space.workload.keys = space.keys_for_bytes(bytes.0);
            }
            let auth = match self.auth.get(i) {
                Some(a) => {
                    let (user, password) = a.split_once(':').ok_or("--auth wants user:password")?;
                    Some((user.to_owned(), password.to_owned()))
                }
                None => None,
            };
            tenants.push(TenantSpec { name: name.clone(), space, auth });
        }
        let first = tenants.remove(0);
        let mut cfg = RunConfig::new(addr, self.protocol, first.space.clone());
        cfg.tenants = std::iter::once(first).chain(tenants).collect();
        cfg.threads = self.threads;
        cfg.conns = self.conns;
        cfg.depth = self.depth;
        cfg.rate = self.rate;
        cfg.arrivals =
            if self.poisson { Arrivals::Poisson { seed: self.seed } } else { Arrivals::Constant };
        let only_phases = (self.fill || self.scan) && self.rate.is_none();
        cfg.duration = match self.duration {
            Some(d) => Some(seconds(d, "--duration")?),
            None if self.requests.is_some() || self.trace.is_some() || only_phases => None,
            None => Some(Duration::from_secs(10)),
        };
        cfg.requests = self.requests;
        cfg.warmup = seconds(self.warmup, "--warmup")?;
        cfg.trace = self.trace.clone().map(|path| TraceSpec { path, format: self.trace_format });
        cfg.fill = self.fill;
        cfg.fill_depth = self.fill_depth;
        cfg.scan = self.scan;
        cfg.verify = self.verify;
        cfg.classes = SizeClasses::new(self.size_classes.clone());
        cfg.max_value = self.max_value_size;
        cfg.drain = seconds(self.drain, "--drain")?;
        cfg.progress = !self.quiet;
        cfg.label = if self.label.is_empty() {
            format!("{}/{}", self.server_name, self.workload_name).trim_matches('/').to_owned()
        } else {
            self.label.clone()
        };
        cfg.server_name = self.server_name.clone();
        cfg.workload_name = self.workload_name.clone();
        cfg.seed = self.seed;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_bytes_are_binary() {
        let fill = |bytes: &str| {
            Cli::try_parse_from(["fridge-bench", "--fill-bytes", bytes]).map(|c| c.run.fill_bytes)
        };
        assert_eq!(fill("1GiB").unwrap(), Some(Size(1 << 30)));
        assert_eq!(fill("64m").unwrap(), Some(Size(64 << 20)));
        assert_eq!(fill("1gb").unwrap(), Some(Size(1 << 30)));
        assert_eq!(fill("768M").unwrap(), Some(Size(768 << 20)));
        assert_eq!(fill("1.5k").unwrap(), Some(Size(1536)));
        assert!(fill("lots").is_err());
    }

    #[test]
    fn options_make_a_config() {
        let cli = Cli::try_parse_from([
            "fridge-bench",
            "-s",
            "127.0.0.1:6379",
            "-p",
            "resp",
            "--tenants",
            "2",
            "--auth",
            "a:b",
            "--rate",
            "1000",
            "--value-size",
            "thesis",
            "--fill",
        ])
        .unwrap();
        let cfg = cli.run.config().unwrap();
        assert_eq!(cfg.tenants.len(), 2);
        assert_eq!(cfg.tenants[0].auth, Some(("a".into(), "b".into())));
        assert_eq!(cfg.tenants[1].space.prefix, "t1:");
        assert_eq!(cfg.duration, Some(Duration::from_secs(10)));
        assert!(cfg.fill && cfg.rate == Some(1000.0));
        let cli = Cli::try_parse_from(["fridge-bench", "--fill", "--scan"]).unwrap();
        assert_eq!(cli.run.config().unwrap().duration, None);
    }
}
