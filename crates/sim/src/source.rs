//! Where requests come from: a trace file (read again, streaming, for every pass) or a seeded
//! generator (regenerated, identically, for every pass).
//!
//! Standard input (`--trace -`) cannot be read twice, so [`spool_stdin`] copies it once to a
//! temporary file, named with the compression its first bytes show, and the passes read that.
//!
//! A [`Source`] is a description, not an open stream: [`Source::open`] starts a fresh stream
//! each time it is called, so the simulator can make one pass to profile the input and then
//! one pass per cache size while holding only a chunk of requests in memory.

use std::io::{Read, Write};
use std::path::PathBuf;

use fridge_workload::trace::{Compression, CsvFormat, Format, KeyFormat, KeyWidth, SizeModel};
use fridge_workload::{Popularity, Request, TenantMix, Workload, twitter_mix};

use crate::error::Error;

/// A stream of requests, each possibly a trace error.
pub type RequestStream = Box<dyn Iterator<Item = Result<Request, fridge_workload::Error>>>;

/// What a [`Source`] reads or generates.
#[derive(Debug, Clone)]
pub enum Input {
    /// A trace file in this format.
    Trace(PathBuf, Box<Format>),
    /// A single-tenant generator, `requests` long.
    Workload(Box<Workload>, u64),
    /// A multi-tenant generator, `requests` long.
    Mix(Box<TenantMix>, u64),
}

/// A named, reopenable request stream.
#[derive(Debug, Clone)]
pub struct Source {
    /// Short name, used in file names and plot titles (e.g. `cloudphysics`).
    pub name: String,
    /// What the input is, including the size model where sizes are synthetic.
    pub description: String,
    /// The input itself.
    pub input: Input,
    /// Stop after this many requests (all when `None`).
    pub limit: Option<u64>,
}

impl Source {
    /// A fresh stream from the first request.
    ///
    /// # Errors
    /// The trace cannot be opened, or the generator's description is invalid.
    pub fn open(&self) -> Result<RequestStream, Error> {
        let stream: RequestStream = match &self.input {
            Input::Trace(path, format) => format.open(path).map_err(|e| at(path, e))?,
            Input::Workload(w, n) => Box::new(w.requests()?.take(to_usize(*n)).map(Ok)),
            Input::Mix(m, n) => Box::new(m.requests()?.take(to_usize(*n)).map(Ok)),
        };
        Ok(match self.limit {
            Some(n) => Box::new(stream.take(to_usize(n))),
            None => stream,
        })
    }

    /// Whether requests carry `next_access` from the input itself (oracleGeneral), so Belady
    /// needs no pre-pass.
    pub fn carries_next_access(&self) -> bool {
        matches!(&self.input, Input::Trace(_, format) if format.carries_next_access())
    }

    /// Tenant names, where the input has them (multi-tenant generators).
    pub fn tenant_names(&self) -> Vec<String> {
        match &self.input {
            Input::Mix(m, _) => m.tenants.iter().map(|t| t.name.clone()).collect(),
            _ => Vec::new(),
        }
    }
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn at(path: &std::path::Path, e: fridge_workload::Error) -> Error {
    Error::Input(format!("{}: {e}", path.display()))
}

/// Parameters of the generator presets.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratorParams {
    /// Keys (per tenant for the Twitter mix: see `key_scale` there instead).
    pub keys: u64,
    /// Zipf exponent (zipf, latest, facebook-etc, thesis, catalyst).
    pub theta: f64,
    /// Requests to generate.
    pub requests: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// Tenants of the Twitter mix.
    pub tenants: usize,
    /// Fraction of each Twitter cluster's working set to model.
    pub key_scale: f64,
}

/// The generator presets the command line offers.
pub const GENERATORS: [&str; 8] =
    ["zipf", "uniform", "hotspot", "latest", "facebook-etc", "thesis", "catalyst", "twitter"];

/// Builds the named generator preset.
///
/// # Errors
/// An unknown name or invalid parameters.
pub fn generator(name: &str, p: &GeneratorParams) -> Result<Source, Error> {
    let zipf = Popularity::Zipf { theta: p.theta, scrambled: true };
    let single = |w: Workload, what: String| Source {
        name: name.to_owned(),
        description: format!("{what}, {} requests, seed {}", p.requests, p.seed),
        input: Input::Workload(Box::new(w), p.requests),
        limit: None,
    };
    let defaults = "16 B keys, 256 B values, GET:SET 30:1";
    Ok(match name {
        "zipf" => single(
            Workload::new(p.keys, zipf, p.seed),
            format!("Zipf({}) over {} keys, {defaults}", p.theta, p.keys),
        ),
        "uniform" => single(
            Workload::new(p.keys, Popularity::Uniform, p.seed),
            format!("uniform over {} keys, {defaults}", p.keys),
        ),
        "hotspot" => single(
            Workload::new(p.keys, Popularity::Hotspot { hot_keys: 0.2, hot_ops: 0.8 }, p.seed),
            format!("hotspot (80% of requests to 20% of {} keys), {defaults}", p.keys),
        ),
        "latest" => single(
            Workload {
                fresh_writes: 0.05,
                ..Workload::new(p.keys, Popularity::Latest { theta: p.theta }, p.seed)
            },
            format!("YCSB latest({}) over {} keys, 5% inserts, {defaults}", p.theta, p.keys),
        ),
        "facebook-etc" => single(
            Workload::facebook_etc(p.keys, p.theta, p.seed),
            format!(
                "Facebook ETC (GEV key sizes, GPareto value sizes), Zipf({}) over {} keys",
                p.theta, p.keys
            ),
        ),
        "thesis" => single(
            Workload::thesis(p.keys, p.theta, p.seed),
            format!("thesis mix (10 B/300 B/1 MB values), Zipf({}) over {} keys", p.theta, p.keys),
        ),
        "catalyst" => single(
            Workload::catalyst_mix(p.keys, p.theta, p.seed),
            format!(
                "Catalyst Mix: Zipf({}) GETs over {} keys 1:1 with one-time SETs",
                p.theta, p.keys
            ),
        ),
        "twitter" => {
            let mix = twitter_mix(p.tenants, p.key_scale, p.seed)?;
            Source {
                name: name.to_owned(),
                description: format!(
                    "Twitter cluster mix, {} tenants at {} of production working sets, {} \
                     requests, seed {}",
                    p.tenants, p.key_scale, p.requests, p.seed
                ),
                input: Input::Mix(Box::new(mix), p.requests),
                limit: None,
            }
        }
        other => {
            return Err(Error::Config(format!(
                "unknown generator {other:?}; one of {}",
                GENERATORS.join(", ")
            )));
        }
    })
}

/// The trace formats [`trace`] takes.
pub const TRACE_FORMATS: [&str; 5] = ["oracle", "csv", "txt", "keyonly-i32", "keyonly-i64"];

/// A trace source: `format` is `oracle` (also `oracleGeneral`), `csv` (with `csv_format`),
/// `txt` (with `key_format`; sizes 1 byte each, or from `sizes`), `keyonly-i32` or
/// `keyonly-i64` (with `sizes` and its description). Any of them may be compressed, as the
/// file's extension says ([`fridge_workload::trace::input`]).
///
/// # Errors
/// An unknown format, or a key-only trace without a size model.
pub fn trace(
    path: PathBuf,
    format: &str,
    csv_format: Option<CsvFormat>,
    key_format: KeyFormat,
    sizes: Option<(SizeModel, String)>,
) -> Result<Source, Error> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .map(|n| n.split('.').next().unwrap_or(n).to_owned())
        .unwrap_or_else(|| "trace".to_owned());
    let file = path.display().to_string();
    let (input, description) = match format {
        "oracle" | "oracleGeneral" => {
            (Input::Trace(path, Box::new(Format::Oracle)), format!("oracleGeneral trace {file}"))
        }
        "csv" => {
            let f = csv_format.ok_or_else(|| Error::Config("csv needs a column mapping".into()))?;
            (Input::Trace(path, Box::new(Format::Csv(f))), format!("CSV trace {file}"))
        }
        "txt" => {
            let what = sizes.as_ref().map_or("1 B objects (libCacheSim's txt default)", |s| &s.1);
            let what = format!("txt trace {file}, sizes: {what}");
            (Input::Trace(path, Box::new(Format::Txt(key_format, sizes.map(|s| s.0)))), what)
        }
        "keyonly-i32" | "keyonly-i64" => {
            let (model, what) = sizes.ok_or_else(|| {
                Error::Config(
                    "key-only traces carry no sizes: pass --size-model (e.g. fixed:16:100)".into(),
                )
            })?;
            let width = if format == "keyonly-i32" { KeyWidth::I32 } else { KeyWidth::I64 };
            (
                Input::Trace(path, Box::new(Format::KeyOnly(width, model))),
                format!("key-only trace {file}, sizes: {what}"),
            )
        }
        other => {
            return Err(Error::Config(format!(
                "unknown trace format {other:?}; one of {}",
                TRACE_FORMATS.join(", ")
            )));
        }
    };
    Ok(Source { name, description, input, limit: None })
}

/// A copy of standard input in a temporary file, removed when dropped.
#[derive(Debug)]
pub struct Spool {
    /// The file.
    pub path: PathBuf,
}

impl Drop for Spool {
    fn drop(&mut self) {
        // A leftover temporary file is harmless; there is nobody to tell at this point.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Copies `input` (standard input) into a file in `dir`, whose extension is the compression
/// that the first bytes show ([`Compression::sniff`]) so that it is read back decompressed.
///
/// # Errors
/// The file cannot be written, or `input` fails.
pub fn spool_stdin(mut input: impl Read, dir: &std::path::Path) -> Result<Spool, Error> {
    let io = |e: std::io::Error| Error::Input(format!("standard input: {e}"));
    let mut head = [0u8; 6];
    let mut n = 0;
    while n < head.len() {
        match input.read(&mut head[n..]).map_err(io)? {
            0 => break,
            k => n += k,
        }
    }
    let ext = Compression::sniff(&head[..n]).extension();
    let path = dir.join(format!("fridge-sim-stdin-{}{ext}", std::process::id()));
    let spool = Spool { path };
    let mut file = std::fs::File::create(&spool.path)
        .map_err(|e| Error::Input(format!("{}: {e}", spool.path.display())))?;
    file.write_all(&head[..n]).map_err(io)?;
    std::io::copy(&mut input, &mut file).map_err(io)?;
    Ok(spool)
}
