//! Key-only traces: a stream of big-endian integer keys, one per request, usually
//! xz-compressed (cache2k's traces hold `i32` keys, scarab's `i64`; both come from Caffeine's
//! simulator resources).
//!
//! Such traces carry no sizes, times or operations, so the reader takes an explicit
//! [`SizeModel`]: every key gets its sizes from [`SizeDist::sample_for_key`], so the same key
//! always has the same size, and the model must be stated with any result. Requests are
//! `get`s of tenant 0 at time 0 with no TTL ([`Request::get`]).
//!
//! Keys keep their bit pattern: an `i32` key is reinterpreted as `u32` and widened (cache2k
//! keeps an object type in bits 27–31), an `i64` key as `u64`.
//!
//! Decompression uses liblzma (the `liblzma` crate, built from bundled sources): about
//! 0.15 s for the 1.2M-request scarab trace in a release build (`examples/trace_speed.rs`).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use liblzma::read::XzDecoder;

use super::read_full;
use crate::error::Error;
use crate::request::Request;
use crate::size::SizeDist;

/// Width of each big-endian key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyWidth {
    /// 4-byte signed keys (cache2k).
    I32,
    /// 8-byte signed keys (scarab).
    I64,
}

impl KeyWidth {
    const fn bytes(self) -> usize {
        match self {
            Self::I32 => 4,
            Self::I64 => 8,
        }
    }
}

/// Sizes for traces that have none, drawn per key.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeModel {
    /// Key size per key.
    pub key_size: SizeDist,
    /// Value size per key.
    pub value_size: SizeDist,
    /// Seed of the per-key draws.
    pub seed: u64,
}

impl SizeModel {
    /// Every key has the same key and value size.
    #[must_use]
    pub fn fixed(key_size: u32, value_size: u32) -> Self {
        Self {
            key_size: SizeDist::Fixed(key_size),
            value_size: SizeDist::Fixed(value_size),
            seed: 0,
        }
    }

    pub(super) fn sizes(&self, key: u64) -> (u32, u32) {
        const KEY_SALT: u64 = 0x4B4F_4B53_0000_0001;
        (
            self.key_size.sample_for_key(key, self.seed ^ KEY_SALT),
            self.value_size.sample_for_key(key, self.seed),
        )
    }
}

/// Streaming reader of key-only traces.
#[derive(Debug)]
pub struct KeyOnlyReader<R> {
    reader: R,
    width: KeyWidth,
    sizes: SizeModel,
    record: u64,
    done: bool,
}

/// The reader type [`KeyOnlyReader::open_xz`] returns.
pub type XzFileReader = BufReader<XzDecoder<BufReader<File>>>;

impl KeyOnlyReader<XzFileReader> {
    /// Opens an xz-compressed key-only trace (concatenated xz streams are read in sequence).
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened; corrupt xz data surfaces as an
    /// [`Error::Io`] item while reading.
    pub fn open_xz(
        path: impl AsRef<Path>,
        width: KeyWidth,
        sizes: SizeModel,
    ) -> Result<Self, Error> {
        let file = BufReader::with_capacity(1 << 16, File::open(path)?);
        let decoder = XzDecoder::new_multi_decoder(file);
        Ok(Self::new(BufReader::with_capacity(1 << 16, decoder), width, sizes))
    }
}

impl<R: Read> KeyOnlyReader<R> {
    /// Reads uncompressed keys from `reader` (wrap unbuffered readers in a `BufReader`).
    pub fn new(reader: R, width: KeyWidth, sizes: SizeModel) -> Self {
        Self { reader, width, sizes, record: 0, done: false }
    }

    fn read_one(&mut self) -> Result<Option<Request>, Error> {
        let mut buf = [0u8; 8];
        let len = self.width.bytes();
        let n = read_full(&mut self.reader, &mut buf[..len])?;
        if n == 0 {
            return Ok(None);
        }
        self.record += 1;
        if n < len {
            return Err(Error::parse(self.record, format!("truncated key: {n} of {len} bytes")));
        }
        let key = match self.width {
            KeyWidth::I32 => u64::from(u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]])),
            KeyWidth::I64 => u64::from_be_bytes(buf),
        };
        let (key_size, value_size) = self.sizes.sizes(key);
        Ok(Some(Request { key_size, ..Request::get(key, value_size) }))
    }
}

impl<R: Read> Iterator for KeyOnlyReader<R> {
    type Item = Result<Request, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        // Requests until the end or the first error, then nothing.
        let item = if self.done { None } else { self.read_one().transpose() };
        self.done = !matches!(item, Some(Ok(_)));
        item
    }
}
