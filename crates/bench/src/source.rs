//! Where requests come from: a tenant's synthetic key space, a sequential sweep over it (the
//! fill and scan phases), or a trace file.
//!
//! Every worker thread has one [`Source`] per tenant; its connections pull from their tenant's
//! source. Synthetic sources compose `fridge-workload`'s generators: keys from a
//! [`KeySampler`], operations from an [`OpMix`](fridge_workload::OpMix), TTLs from a
//! [`TtlDist`](fridge_workload::TtlDist), and key and value sizes per key
//! ([`SizeDist::sample_for_key`](fridge_workload::SizeDist::sample_for_key)), so every request
//! for a key, in every phase and thread, sees the same sizes.

use std::path::PathBuf;

use fridge_workload::trace::{CsvFormat, Format, KeyWidth, SizeModel, TraceStream};
use fridge_workload::{KEY_ID_DIGITS, KeySampler, Op, Rng, Workload, mix64};

use crate::protocol::Command;

/// Salts that give key sizes, value sizes and each thread's draws their own streams.
const KEY_SIZE_SALT: u64 = 0x6B65_796C_656E_0001;
const VALUE_SIZE_SALT: u64 = 0x7661_6C6C_656E_0001;
const THREAD_SALT: u64 = 0x7468_7265_6164_0001;

/// Longest key memcached accepts, tenant prefix included.
pub const MAX_KEY_LEN: usize = 250;

/// One request as the load generator sends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchRequest {
    /// What to do.
    pub command: Command,
    /// Key id; [`KeySpace::render_key`] makes the bytes.
    pub key: u64,
    /// Key length in bytes (before any tenant prefix).
    pub key_len: u32,
    /// Value length: what a SET writes, what a GET expects on a hit.
    pub value_len: u32,
    /// Expiry of a SET.
    pub ttl_s: Option<u32>,
}

/// A tenant's synthetic key space: the [`Workload`] that describes its requests, and the
/// prefix that keeps its keys apart from other tenants'.
///
/// Of the workload, the load generator uses the keys, popularity, key and value sizes,
/// operation mix, TTLs and seed. Its `arrivals` and `fresh_writes` are not used: `--rate` and
/// `--poisson` pace the run, and every key is one of `0..keys`. Key and value sizes are drawn
/// with this crate's own salts (not [`Workload`]'s), so a key has the same sizes as it had
/// before the two types were merged and reports stay comparable.
#[derive(Clone, Debug)]
pub struct KeySpace {
    /// Keys, popularity, sizes, operations, TTLs and seed.
    pub workload: Workload,
    /// Prefix of every key (`t3:` in multi-tenant runs), so tenants never share keys.
    pub prefix: String,
}

/// Maps a workload operation onto the three commands the load generator sends.
pub fn command_of(op: Op) -> Command {
    match op {
        Op::Get | Op::Gets => Command::Get,
        Op::Delete => Command::Delete,
        // add/replace/cas/append/prepend/incr/decr are sent as sets of the whole value.
        _ => Command::Set,
    }
}

impl KeySpace {
    /// `workload`'s keys, each prefixed with `prefix`.
    pub fn new(workload: Workload, prefix: impl Into<String>) -> Self {
        Self { workload, prefix: prefix.into() }
    }

    /// Key length of `key`.
    pub fn key_len(&self, key: u64) -> u32 {
        self.workload.key_size.sample_for_key(key, self.workload.seed ^ KEY_SIZE_SALT)
    }

    /// Value length of `key`.
    pub fn value_len(&self, key: u64) -> u32 {
        self.workload.value_size.sample_for_key(key, self.workload.seed ^ VALUE_SIZE_SALT)
    }

    /// The request for `key` with `command`.
    pub fn request(&self, command: Command, key: u64, ttl_s: Option<u32>) -> BenchRequest {
        BenchRequest {
            command,
            key,
            key_len: self.key_len(key),
            value_len: self.value_len(key),
            ttl_s: if command == Command::Set { ttl_s } else { None },
        }
    }

    /// The smallest number of keys whose keys and values add up to at least `bytes`.
    pub fn keys_for_bytes(&self, bytes: u64) -> u64 {
        let mut total = 0u64;
        let mut key = 0;
        while total < bytes {
            total += u64::from(self.key_len(key)) + u64::from(self.value_len(key));
            key += 1;
        }
        key
    }

    /// Writes the key bytes of `key` (`prefix` + [`fridge_workload::render_key`] over
    /// `max(len, 11)` bytes, at most 250 in all) into `out`, replacing its contents.
    pub fn render_key(&self, key: u64, len: u32, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(self.prefix.as_bytes());
        let len = (len as usize).max(KEY_ID_DIGITS).min(MAX_KEY_LEN - out.len());
        let start = out.len();
        out.resize(start + len, 0);
        fridge_workload::render_key(key, &mut out[start..]);
    }
}

/// Trace formats `--trace-format` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// libCacheSim oracleGeneral binary.
    Oracle,
    /// The CSV `fridge-workload` writes (header `time_ms,tenant,key,…`).
    Csv,
    /// Twitter's cache-trace CSV.
    Twitter,
    /// Key-only big-endian i32 keys, xz-compressed (cache2k); sizes from `--value-size`.
    KeysI32Xz,
    /// Key-only big-endian i64 keys, xz-compressed (scarab); sizes from `--value-size`.
    KeysI64Xz,
}

impl TraceFormat {
    /// The workload crate's reader for this format, with sizes from `space` for formats
    /// that carry none.
    pub fn reader(self, space: &KeySpace) -> Format {
        let sizes = || SizeModel {
            key_size: space.workload.key_size.clone(),
            value_size: space.workload.value_size.clone(),
            seed: space.workload.seed,
        };
        match self {
            TraceFormat::Oracle => Format::Oracle,
            TraceFormat::Csv => Format::Csv(CsvFormat::fridge()),
            TraceFormat::Twitter => Format::Csv(CsvFormat::twitter()),
            TraceFormat::KeysI32Xz => Format::KeyOnly(KeyWidth::I32, sizes()),
            TraceFormat::KeysI64Xz => Format::KeyOnly(KeyWidth::I64, sizes()),
        }
    }
}

/// A trace to replay.
#[derive(Clone, Debug)]
pub struct TraceSpec {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: TraceFormat,
}

impl TraceSpec {
    /// Opens the trace, with sizes from `space` for formats that carry none.
    ///
    /// # Errors
    /// The file cannot be opened or its header is bad.
    pub fn open(&self, space: &KeySpace) -> Result<TraceStream, fridge_workload::Error> {
        self.format.reader(space).open(&self.path)
    }
}

/// The requests of one tenant on one thread.
pub enum Source {
    /// Random requests from the key space.
    Synthetic {
        /// Key chooser.
        sampler: KeySampler,
        /// This thread's random stream.
        rng: Rng,
    },
    /// `command` on keys `next..end`, in order (fill: SET, scan: GET).
    Sweep {
        /// Next key.
        next: u64,
        /// One past the last key.
        end: u64,
        /// What to send.
        command: Command,
    },
    /// Every `stride`-th request of a trace, starting at `offset`.
    Trace {
        /// The reader.
        reader: TraceStream,
        /// Threads sharing the trace.
        stride: u64,
        /// This thread's index.
        offset: u64,
        /// Records read so far.
        read: u64,
        /// The first error, which ends the trace.
        error: Option<String>,
    },
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Synthetic { .. } => f.write_str("Synthetic"),
            Self::Sweep { next, end, command } => write!(f, "Sweep({command:?} {next}..{end})"),
            Self::Trace { read, .. } => write!(f, "Trace(read {read})"),
        }
    }
}

impl Source {
    /// Random requests of `space` for thread `thread`.
    ///
    /// # Errors
    /// The key space's popularity is invalid.
    pub fn synthetic(space: &KeySpace, thread: usize) -> Result<Self, fridge_workload::Error> {
        Ok(Self::Synthetic {
            sampler: KeySampler::new(
                &space.workload.popularity,
                space.workload.keys,
                space.workload.seed,
            )?,
            rng: Rng::new(mix64(space.workload.seed ^ THREAD_SALT ^ thread as u64)),
        })
    }

    /// Thread `thread` of `threads`'s share of keys `0..keys`.
    pub fn sweep(command: Command, keys: u64, threads: usize, thread: usize) -> Self {
        let share = |t: usize| keys * t as u64 / threads as u64;
        Self::Sweep { next: share(thread), end: share(thread + 1), command }
    }

    /// The next request, or `None` when the source is exhausted.
    pub fn next(&mut self, space: &KeySpace) -> Option<BenchRequest> {
        match self {
            Self::Synthetic { sampler, rng } => {
                let command = command_of(space.workload.ops.sample(rng));
                let ttl =
                    if command == Command::Set { space.workload.ttl.sample(rng) } else { None };
                Some(space.request(command, sampler.sample(rng), ttl))
            }
            Self::Sweep { next, end, command } => {
                if next >= end {
                    return None;
                }
                *next += 1;
                Some(space.request(*command, *next - 1, None))
            }
            Self::Trace { reader, stride, offset, read, error } => loop {
                let record = match reader.next()? {
                    Ok(r) => r,
                    Err(e) => {
                        *error = Some(e.to_string());
                        return None;
                    }
                };
                *read += 1;
                if (*read - 1) % *stride != *offset {
                    continue;
                }
                let key_len = if record.key_size == 0 { 16 } else { record.key_size };
                return Some(BenchRequest {
                    command: command_of(record.op),
                    key: record.key,
                    key_len,
                    value_len: record.value_size,
                    ttl_s: record.ttl_s,
                });
            },
        }
    }

    /// The error that ended a trace, if any.
    pub fn error(&self) -> Option<&str> {
        match self {
            Self::Trace { error, .. } => error.as_deref(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use fridge_workload::{OpMix, Popularity, SizeDist, TtlDist};

    use super::*;

    const PINNED: [(u32, u32); 6] =
        [(27, 300), (23, 10), (47, 300), (31, 300), (25, 300), (37, 10)];

    fn space() -> KeySpace {
        let mut workload = Workload::new(1000, Popularity::Uniform, 1);
        workload.key_size = SizeDist::facebook_etc_key();
        workload.value_size = SizeDist::thesis_mix();
        workload.ops = OpMix::get_set(0.9).unwrap();
        workload.ttl = TtlDist::Fixed(30);
        KeySpace::new(workload, "t1:")
    }

    #[test]
    fn sizes_keep_the_load_generators_salts() {
        // Pinned: a key's sizes must not change between versions, or saved reports stop
        // being comparable.
        let s = space();
        let sizes: Vec<(u32, u32)> = (0..6).map(|k| (s.key_len(k), s.value_len(k))).collect();
        assert_eq!(sizes, PINNED);
    }

    #[test]
    fn sizes_are_per_key_and_keys_are_distinct() {
        let s = space();
        let mut src = Source::synthetic(&s, 0).unwrap();
        let mut sets = 0;
        for _ in 0..10_000 {
            let r = src.next(&s).unwrap();
            assert!(r.key < 1000);
            assert_eq!((r.key_len, r.value_len), (s.key_len(r.key), s.value_len(r.key)));
            sets += usize::from(r.command == Command::Set);
            assert_eq!(r.ttl_s.is_some(), r.command == Command::Set);
        }
        assert!((800..1200).contains(&sets), "{sets}");
        let mut seen = std::collections::HashSet::new();
        let mut key = Vec::new();
        for id in 0..1000 {
            s.render_key(id, 1, &mut key);
            assert!(key.starts_with(b"t1:") && key.len() == 3 + KEY_ID_DIGITS);
            assert!(seen.insert(key.clone()));
        }
    }

    #[test]
    fn sweeps_split_keys_between_threads() {
        let s = space();
        let mut all = Vec::new();
        for t in 0..3 {
            let mut src = Source::sweep(Command::Set, 10, 3, t);
            while let Some(r) = src.next(&s) {
                assert_eq!(r.command, Command::Set);
                all.push(r.key);
            }
        }
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        let n = s.keys_for_bytes(1_000_000);
        let total: u64 = (0..n).map(|k| u64::from(s.key_len(k) + s.value_len(k))).sum();
        assert!(total >= 1_000_000);
    }
}
