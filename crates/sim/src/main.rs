//! `fridge-sim`: replay a trace or a generated workload through the real engine and the
//! reference policies at several cache sizes, and write CSV, JSON and PNG reports.
//!
//! ```text
//! fridge-sim --trace ../shared/traces/cloudphysics/cloudPhysicsIO.oracleGeneral.bin \
//!            --policies all --fractions 0.001,0.01,0.1,0.5 --out out/cloudphysics
//! fridge-sim --trace ../shared/traces/cache2k/web07.trace.xz --format keyonly-i32 \
//!            --size-model fixed:16:100 --policies fridge,lru,s3fifo,belady --out out/web07
//! fridge-sim --generate facebook-etc --keys 1000000 --requests 10000000 --sizes 64MiB,256MiB
//! fridge-sim --trace w.oracleGeneral.bin.zst --capacity-unit objects --sizes 1000,10000 \
//!            --size-change keep --report-interval 100000 --jobs 2
//! zstdcat w.oracleGeneral.bin.zst | fridge-sim --trace - --format oracle --policies lru,fridge
//! fridge-sim --trace ids.txt --policies lru,s3fifo --capacity-unit objects --fractions 0.1
//! fridge-sim --trace cloudPhysicsIO.csv -t "time-col=2,obj-id-col=5,obj-size-col=4,\
//!            obj-id-is-num=1,has-header=true"
//! ```
//! Run with `--help` for every option.

#![forbid(unsafe_code)]

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use fridge_sim::Error;
use fridge_sim::progress::Progress;
use fridge_sim::report;
use fridge_sim::source::{self, GeneratorParams, Source, Spool};
use fridge_sim::sweep::{
    CapacityUnit, OpsMode, PolicySpec, Settings, SizeChange, SizeSpec, simulate,
};
use fridge_units::Size;
use fridge_workload::SizeDist;
use fridge_workload::trace::{
    Column, CsvFormat, KeyFormat, SizeModel, TimeUnit, inner_extension, open_input,
};

/// Trace-driven cache simulator: the real fridge engine next to reference policies.
///
/// "Cache size" means, for the engine (`fridge`), its max_memory: items with their
/// record headers (the index lives outside and is reported as overhead bytes); for reference
/// policies, bytes of objects (key + value), or objects with --capacity-unit objects; for the
/// memcached model, its memory limit. Every row of results.csv says which (size_meaning).
#[derive(Debug, Parser)]
#[command(name = "fridge-sim", version)]
struct Args {
    /// Trace file to replay, or `-` for standard input (copied once to a temporary file,
    /// since every pass rereads the trace; needs --format). A `.gz`, `.zst`/`.zstd` or `.xz`
    /// file is decompressed (standard input: by its first bytes). A trace that yields no
    /// request is an error.
    #[arg(long, conflicts_with = "generate")]
    trace: Option<PathBuf>,

    /// Trace format: oracle (libCacheSim oracleGeneral; also `oracleGeneral`), csv, txt
    /// (libCacheSim: one object id per line, 1-byte objects unless --size-model), keyonly-i32
    /// (cache2k), keyonly-i64 (scarab). Default: from the extension under any compression
    /// one (.bin → oracle, .csv → csv, .txt → txt).
    #[arg(long)]
    format: Option<String>,

    /// CSV layout in libCacheSim's `-t`/`--trace-type-params` syntax: `time-col`,
    /// `obj-id-col`, `obj-size-col`, `op-col`, `ttl-col`, `next-access-col`, `tenant-col`
    /// (1-based), `has-header`, `delimiter`, `obj-id-is-num`; e.g. `"time-col=2,obj-id-col=5,
    /// obj-size-col=4,obj-id-is-num=1,has-header=true"`. Replaces --csv-columns.
    #[arg(long, short = 't', conflicts_with_all = ["csv_columns", "csv_preset"])]
    trace_type_params: Option<String>,

    /// CSV preset: cloudphysics, twitter or fridge. Default: detected from the header.
    #[arg(long)]
    csv_preset: Option<String>,

    /// CSV columns by header name or 0-based index, e.g. `key=lbn,value_size=size,time=time,
    /// op=op`. Fields: key, key_size, value_size, time, op, ttl, tenant, next_access.
    /// (libCacheSim's 1-based `obj-id-col=5` is `key=4` here; see --trace-type-params.)
    #[arg(long)]
    csv_columns: Option<String>,

    /// Keys of CSV and txt traces: integer (libCacheSim's obj-id-is-num=1) or hashed (any
    /// text; obj-id-is-num=0).
    #[arg(long, alias = "csv-key-format", default_value = "integer")]
    key_format: String,

    /// CSV field separator (one character, `\t` for a tab) for --csv-columns.
    #[arg(long, default_value = ",")]
    csv_delimiter: String,

    /// CSV time unit: s, ms or us.
    #[arg(long, default_value = "s")]
    csv_time_unit: String,

    /// The CSV has no header line (columns must then be indices).
    #[arg(long)]
    csv_no_header: bool,

    /// Sizes for key-only and txt traces: fixed:KEY:VALUE, uniform:KEY:MIN:MAX, etc (Facebook
    /// ETC key and value sizes) or thesis (16 B keys, 10 B/300 B/1 MB values). Required for
    /// key-only traces; txt objects are 1 byte without it.
    #[arg(long)]
    size_model: Option<String>,

    /// Generator preset: zipf, uniform, hotspot, latest, facebook-etc, thesis, catalyst,
    /// twitter.
    #[arg(long)]
    generate: Option<String>,

    /// Requests to generate.
    #[arg(long, default_value_t = 1_000_000)]
    requests: u64,

    /// Keys of a single-tenant generator.
    #[arg(long, default_value_t = 100_000)]
    keys: u64,

    /// Zipf exponent of the generators that use one.
    #[arg(long, default_value_t = 0.99)]
    theta: f64,

    /// Tenants of the twitter mix.
    #[arg(long, default_value_t = 4)]
    tenants: usize,

    /// Twitter mix: fraction of each cluster's production working set.
    #[arg(long, default_value_t = 0.001)]
    key_scale: f64,

    /// Seed of the generator, the engine's cleaner and Redis's sampling.
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Stop after this many requests of the input.
    #[arg(long)]
    limit: Option<u64>,

    /// Policies, comma-separated: all, fridge (the engine, hitmap rank), fridge-lru,
    /// fridge-lfu, fridge-slru (the engine with that rank function), lru, fifo, clock, s3fifo,
    /// sieve, redis5, redis10, memcached, memcached-automove, belady,
    /// partitioned-<reference policy>. An engine policy may carry its own metadata budget:
    /// fridge@16, fridge-lru@0, fridge+queues@0 (the queues without their sketch).
    #[arg(long, default_value = "all")]
    policies: String,

    /// Engine eviction metadata bits per item, for engine policies without @BITS: the
    /// hitmap's (all levels and the set counter), or with +queues the frequency sketch's; 0
    /// runs without eviction metadata.
    #[arg(long, default_value_t = fridge_engine::EngineConfig::default().hitmap_bits_per_item)]
    hitmap_bits: usize,

    /// Where the engine's hitmap lives: cpu, gpu (an NVIDIA GPU; the run fails without one;
    /// +queues rows then keep a hitmap there instead of their sketch, and differ) or auto
    /// (a GPU where one is usable). The hitmap's results are the same either way.
    #[arg(long, default_value = "cpu")]
    metadata: fridge_engine::MetadataDevice,

    /// Items the engine's hitmap is sized for. Default: per cache size, max_memory /
    /// (mean object size of the input + the engine's record header).
    #[arg(long)]
    hitmap_items: Option<usize>,

    /// Engine segments per evicting cleaner pass (a pass also takes no more than the free
    /// segments and output heads it has, plus one).
    #[arg(long, default_value_t = fridge_engine::EngineConfig::default().cleaner_candidates)]
    cleaner_candidates: usize,

    /// Engine free segments below which the cleaner runs (0: the engine's rule, max(1% of
    /// segments, 3) with one writer).
    #[arg(long, default_value_t = 0)]
    free_watermark: usize,

    /// Absolute cache sizes, comma-separated, e.g. 4MiB,64m,1.5GiB: a number of bytes with an
    /// optional unit k/m/g/t (also kb/kib, …), binary (1gb = 1GiB = 2^30) and case-insensitive.
    /// With --capacity-unit objects, numbers of objects (same units: 10k = 10240).
    #[arg(long, conflicts_with = "fractions")]
    sizes: Option<String>,

    /// Cache sizes as fractions of the working set's bytes, comma-separated.
    #[arg(long, default_value = "0.001,0.01,0.05,0.1,0.2,0.5")]
    fractions: String,

    /// lookaside: every request is a GET that admits on miss (libCacheSim); trace: GETs are
    /// counted, SETs store, DELETEs delete (in the engine and the reference policies).
    #[arg(long, default_value = "lookaside")]
    ops: String,

    /// What a hit does when the request's size differs from the stored object's: update
    /// (reference policies take the new size and evict until it fits: older libCacheSim, and
    /// this simulator's behaviour before the option) or keep (the stored size stays: current
    /// libCacheSim). The engine never rewrites an item on a GET hit, in either mode.
    #[arg(long, default_value = "update")]
    size_change: String,

    /// What cache sizes count: bytes, or objects (libCacheSim's --ignore-obj-size: reference
    /// policies hold that many objects of any size; --fractions are then of the distinct
    /// objects). The engine and the memcached model are byte-based: they get objects x (mean
    /// object size + their per-item header) bytes, as the report's size_meaning says.
    #[arg(long, default_value = "bytes")]
    capacity_unit: String,

    /// Threads running (size, policy) jobs, each with its own pass over the input; results
    /// are identical for any value. Default: the number of cores.
    #[arg(long)]
    jobs: Option<usize>,

    /// Also record each cache's miss ratio every N counted requests: miss_ratio_over_time.csv
    /// and one miss_ratio_over_time_<size>.png per cache size.
    #[arg(long)]
    report_interval: Option<u64>,

    /// Engine segment size, e.g. 1MiB (units as in --sizes; default: chosen per cache size, see
    /// the docs).
    #[arg(long)]
    segment_size: Option<String>,

    /// Segments the engine's automatic segment size aims for (see the docs; the eviction
    /// study uses 512, closer to a server's cache of gigabytes).
    #[arg(long, default_value_t = fridge_sim::fridge::DEFAULT_TARGET_SEGMENTS)]
    target_segments: u64,

    /// Name of the source in reports and plot titles (default: from the file or generator).
    #[arg(long)]
    name: Option<String>,

    /// Output directory for results.csv, results.json, throughput.csv and PNG plots.
    #[arg(long, default_value = "sim-out")]
    out: PathBuf,

    /// Skip the PNG plots.
    #[arg(long)]
    no_plots: bool,

    /// Progress bar: auto (when stderr is a terminal), always or never.
    #[arg(long, default_value = "auto")]
    progress: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fridge-sim: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--metadata gpu` without a usable GPU fails before any input is read, naming why (each
/// engine point would otherwise be skipped with the same note); `auto` says where the
/// hitmap went. A small engine with Memshare's pass, which reads the hitmap, is opened to
/// find out (`+queues` rows keep their frequency sketch in host memory under `auto`).
fn check_metadata(device: fridge_engine::MetadataDevice) -> Result<(), Error> {
    use fridge_engine::{CleanerMode, Engine, EngineConfig, Eviction, ManualClock, MetadataDevice};
    if device == MetadataDevice::Cpu {
        return Ok(());
    }
    let config = EngineConfig {
        max_memory: 16 << 20,
        segment_size: 1 << 20,
        cleaner: CleanerMode::Inline,
        metadata_device: device,
        eviction: Eviction::Memshare,
        ..EngineConfig::default()
    };
    let engine = Engine::with_clock(config, std::sync::Arc::new(ManualClock::new(0)))
        .map_err(|e| Error::Config(format!("--metadata: {}", e.0)))?;
    match engine.metadata_note() {
        Some(note) => eprintln!("fridge-sim: {note}"),
        None => eprintln!("fridge-sim: hitmap on {}", engine.stats().metadata.device),
    }
    Ok(())
}

fn run(args: &Args) -> Result<(), Error> {
    check_metadata(args.metadata)?;
    let spool = match &args.trace {
        Some(p) if p.as_os_str() == "-" => {
            if args.format.is_none() {
                return Err(Error::Config("--trace - (standard input) needs --format".into()));
            }
            Some(source::spool_stdin(std::io::stdin().lock(), &std::env::temp_dir())?)
        }
        _ => None,
    };
    let mut source = build_source(args, spool.as_ref())?;
    source.limit = args.limit;
    if let Some(name) = &args.name {
        source.name.clone_from(name);
    }
    let settings = Settings {
        policies: PolicySpec::parse_list(&args.policies)?,
        sizes: match &args.sizes {
            Some(s) => list(s, |x| parse_bytes(x).map(SizeSpec::Bytes))?,
            None => list(&args.fractions, |x| {
                x.parse::<f64>()
                    .ok()
                    .filter(|f| *f > 0.0 && f.is_finite())
                    .map(SizeSpec::Fraction)
                    .ok_or_else(|| Error::Config(format!("bad fraction {x:?}")))
            })?,
        },
        ops: match args.ops.as_str() {
            "lookaside" => OpsMode::Lookaside,
            "trace" => OpsMode::Trace,
            o => return Err(Error::Config(format!("--ops {o:?}: lookaside or trace"))),
        },
        size_change: match args.size_change.as_str() {
            "update" => SizeChange::Update,
            "keep" => SizeChange::Keep,
            o => return Err(Error::Config(format!("--size-change {o:?}: update or keep"))),
        },
        capacity_unit: match args.capacity_unit.as_str() {
            "bytes" => CapacityUnit::Bytes,
            "objects" => CapacityUnit::Objects,
            o => return Err(Error::Config(format!("--capacity-unit {o:?}: bytes or objects"))),
        },
        jobs: match args.jobs {
            Some(0) => return Err(Error::Config("--jobs must be at least 1".into())),
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, usize::from),
        },
        report_interval: args.report_interval,
        seed: args.seed,
        segment_size: args
            .segment_size
            .as_deref()
            .map(parse_bytes)
            .transpose()?
            .map(|b| b as usize),
        target_segments: args.target_segments,
        hitmap_bits: args.hitmap_bits,
        metadata: args.metadata,
        hitmap_items: args.hitmap_items,
        cleaner_candidates: args.cleaner_candidates,
        free_watermark: args.free_watermark,
        ..Settings::default()
    };
    let show = match args.progress.as_str() {
        "auto" => std::io::stderr().is_terminal(),
        "always" => true,
        "never" => false,
        p => return Err(Error::Config(format!("--progress {p:?}: auto, always or never"))),
    };
    let mut progress = Progress::new(show);
    let report = simulate(&source, &settings, &mut progress)?;
    print!("{}", report::summary(&report));
    let written = report::write_all(&report, &args.out, !args.no_plots)?;
    for path in written {
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn list<T>(s: &str, f: impl Fn(&str) -> Result<T, Error>) -> Result<Vec<T>, Error> {
    s.split(',').map(str::trim).filter(|x| !x.is_empty()).map(f).collect()
}

/// Bytes by the workspace's one rule ([`fridge_units::Size`]): binary, case-insensitive units,
/// fractions rounded down.
fn parse_bytes(s: &str) -> Result<u64, Error> {
    s.parse::<Size>().map(|size| size.0).map_err(Error::Config)
}

fn build_source(args: &Args, spool: Option<&Spool>) -> Result<Source, Error> {
    if let Some(name) = &args.generate {
        let params = GeneratorParams {
            keys: args.keys,
            theta: args.theta,
            requests: args.requests,
            seed: args.seed,
            tenants: args.tenants,
            key_scale: args.key_scale,
        };
        return source::generator(name, &params);
    }
    let Some(path) = spool.map_or_else(|| args.trace.clone(), |s| Some(s.path.clone())) else {
        return Err(Error::Config("give --trace FILE or --generate PRESET".into()));
    };
    let format = match (&args.format, inner_extension(&path).as_str()) {
        (Some(f), _) => f.clone(),
        (None, "bin") => "oracle".into(),
        (None, "csv") => "csv".into(),
        (None, "txt") => "txt".into(),
        (None, _) => {
            return Err(Error::Config(format!(
                "cannot tell the format of {}: pass --format",
                path.display()
            )));
        }
    };
    let csv = if format == "csv" { Some(csv_format(args, &path)?) } else { None };
    let sizes = args.size_model.as_deref().map(size_model).transpose()?;
    let mut source = source::trace(path, &format, csv, key_format(args)?, sizes)?;
    if spool.is_some() {
        "stdin".clone_into(&mut source.name);
        source.description = source.description.replace(&source_file(spool), "standard input");
    }
    Ok(source)
}

fn source_file(spool: Option<&Spool>) -> String {
    spool.map(|s| s.path.display().to_string()).unwrap_or_default()
}

fn key_format(args: &Args) -> Result<KeyFormat, Error> {
    match args.key_format.as_str() {
        "integer" => Ok(KeyFormat::Integer),
        "hashed" => Ok(KeyFormat::Hashed),
        o => Err(Error::Config(format!("--key-format {o:?}: integer or hashed"))),
    }
}

/// A CSV layout from libCacheSim's `--trace-type-params` string (`cli_reader_utils.c`):
/// comma-separated `key=value` pairs with 1-based columns. `delimiter=,` is written
/// `delimiter=,,` inside the list (an empty value followed by an empty pair), or last;
/// `delimiter=\t` is a tab. Unknown keys are an error rather than ignored.
fn libcachesim_csv(params: &str, keys: KeyFormat) -> Result<CsvFormat, Error> {
    let bad = |m: String| Error::Config(format!("--trace-type-params: {m}"));
    let mut f = CsvFormat::with_key(0, keys);
    let mut key = None;
    let parts: Vec<&str> = params.split(',').map(str::trim).collect();
    let mut i = 0;
    while i < parts.len() {
        let part = parts[i];
        i += 1;
        if part.is_empty() {
            continue;
        }
        let (name, value) =
            part.split_once('=').ok_or_else(|| bad(format!("{part:?} is not KEY=VALUE")))?;
        let (name, value) = (name.trim(), value.trim());
        let col = || -> Result<Column, Error> {
            match value.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(Column::Index(n - 1)),
                _ => Err(bad(format!("{name}={value:?}: columns count from 1"))),
            }
        };
        let yes = || -> Result<bool, Error> {
            match value.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" => Ok(true),
                "0" | "false" | "no" => Ok(false),
                _ => Err(bad(format!("{name}={value:?}: true or false"))),
            }
        };
        match name {
            "time-col" => f.time = Some(col()?),
            "obj-id-col" => key = Some(col()?),
            "obj-size-col" => f.value_size = Some(col()?),
            "op-col" => f.op = Some(col()?),
            "ttl-col" => f.ttl_s = Some(col()?),
            "next-access-col" => f.next_access = Some(col()?),
            "tenant-col" => f.tenant = Some(col()?),
            "has-header" => f.header = yes()?,
            "obj-id-is-num" => {
                f.key_format = if yes()? { KeyFormat::Integer } else { KeyFormat::Hashed };
            }
            "delimiter" => {
                f.delimiter = match value {
                    "" => {
                        // `delimiter=,`: the comma split the value off.
                        if parts.get(i) == Some(&"") {
                            i += 1;
                        }
                        ','
                    }
                    "\\t" | "tab" => '\t',
                    v if v.chars().count() == 1 => v.chars().next().unwrap_or(','),
                    v => return Err(bad(format!("delimiter {v:?}: one character"))),
                };
            }
            o => return Err(bad(format!("unknown parameter {o:?}"))),
        }
    }
    f.key = key.ok_or_else(|| bad("obj-id-col is required".into()))?;
    Ok(f)
}

fn csv_format(args: &Args, path: &std::path::Path) -> Result<CsvFormat, Error> {
    if let Some(params) = &args.trace_type_params {
        return libcachesim_csv(params, key_format(args)?);
    }
    let preset = match &args.csv_preset {
        Some(p) => Some(p.clone()),
        None if args.csv_columns.is_none() => {
            let mut header = String::new();
            open_input(path)
                .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?
                .read_line(&mut header)
                .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
            match header.trim() {
                "version,time,op,size,lbn" => Some("cloudphysics".into()),
                h if h.starts_with("time_ms,tenant,key") => Some("fridge".into()),
                _ => {
                    return Err(Error::Config(
                        "unknown CSV header: pass --csv-preset or --csv-columns".into(),
                    ));
                }
            }
        }
        None => None,
    };
    if let Some(p) = preset {
        return match p.as_str() {
            "cloudphysics" => Ok(CsvFormat::cloudphysics()),
            "twitter" => Ok(CsvFormat::twitter()),
            "fridge" => Ok(CsvFormat::fridge()),
            o => Err(Error::Config(format!("unknown CSV preset {o:?}"))),
        };
    }
    let columns = args.csv_columns.as_deref().unwrap_or_default();
    let column = |v: &str| -> Column {
        v.parse::<usize>().map_or_else(|_| Column::Name(v.to_owned()), Column::Index)
    };
    let mut key = None;
    let mut f = CsvFormat::with_key(0, KeyFormat::Integer);
    for pair in columns.split(',').filter(|p| !p.is_empty()) {
        let (field, col) = pair
            .split_once('=')
            .ok_or_else(|| Error::Config(format!("--csv-columns: {pair:?} is not FIELD=COLUMN")))?;
        let col = column(col.trim());
        match field.trim() {
            "key" => key = Some(col),
            "key_size" => f.key_size = Some(col),
            "value_size" | "size" => f.value_size = Some(col),
            "time" => f.time = Some(col),
            "op" => f.op = Some(col),
            "ttl" => f.ttl_s = Some(col),
            "tenant" => f.tenant = Some(col),
            "next_access" => f.next_access = Some(col),
            o => return Err(Error::Config(format!("--csv-columns: unknown field {o:?}"))),
        }
    }
    f.key = key.ok_or_else(|| Error::Config("--csv-columns needs key=COLUMN".into()))?;
    f.header = !args.csv_no_header;
    f.key_format = key_format(args)?;
    f.delimiter = match args.csv_delimiter.as_str() {
        "\\t" => '\t',
        d if d.chars().count() == 1 => d.chars().next().unwrap_or(','),
        d => return Err(Error::Config(format!("--csv-delimiter {d:?}: one character"))),
    };
    f.time_unit = match args.csv_time_unit.as_str() {
        "s" => TimeUnit::Seconds,
        "ms" => TimeUnit::Millis,
        "us" => TimeUnit::Micros,
        o => return Err(Error::Config(format!("--csv-time-unit {o:?}: s, ms or us"))),
    };
    Ok(f)
}

fn size_model(s: &str) -> Result<(SizeModel, String), Error> {
    let bad = || Error::Config(format!("bad --size-model {s:?}"));
    let num = |x: &str| x.parse::<u32>().map_err(|_| bad());
    let parts: Vec<&str> = s.split(':').collect();
    Ok(match parts.as_slice() {
        ["fixed", k, v] => {
            (SizeModel::fixed(num(k)?, num(v)?), format!("fixed {k} B keys and {v} B values"))
        }
        ["uniform", k, lo, hi] => (
            SizeModel {
                key_size: SizeDist::Fixed(num(k)?),
                value_size: SizeDist::uniform(num(lo)?, num(hi)?)?,
                seed: 0,
            },
            format!("{k} B keys, values uniform in [{lo}, {hi}] B per key"),
        ),
        ["etc"] => (
            SizeModel {
                key_size: SizeDist::facebook_etc_key(),
                value_size: SizeDist::facebook_etc_value(),
                seed: 0,
            },
            "Facebook ETC key and value sizes per key (seed 0)".to_owned(),
        ),
        ["thesis"] => (
            SizeModel {
                key_size: SizeDist::Fixed(16),
                value_size: SizeDist::thesis_mix(),
                seed: 0,
            },
            "16 B keys, thesis values 10 B/300 B/1 MB (50/45/5%) per key (seed 0)".to_owned(),
        ),
        _ => return Err(bad()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_on_the_command_line_are_binary() {
        let args = Args::try_parse_from([
            "fridge-sim",
            "--generate",
            "facebook-etc",
            "--sizes",
            "1GiB, 64m,1gb",
            "--segment-size",
            "1.5MiB",
        ])
        .unwrap();
        let sizes = list(args.sizes.as_deref().unwrap(), parse_bytes).unwrap();
        assert_eq!(sizes, [1 << 30, 64 << 20, 1 << 30]);
        assert_eq!(parse_bytes(args.segment_size.as_deref().unwrap()).unwrap(), 3 << 19);
        assert!(parse_bytes("1 parsec").is_err());
    }
}
