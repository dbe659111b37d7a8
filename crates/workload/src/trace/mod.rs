//! Trace readers and writers.
//!
//! Readers stream: they hold one record (and a read buffer) in memory, never the trace, and
//! yield `Result<Request, Error>`. After the first error a reader yields `None`, so a `for`
//! loop over a broken trace ends instead of spinning. Trace bytes are external input: a
//! malformed record is an [`Error::Parse`], never a panic.
//!
//! | format | reader | writer |
//! |---|---|---|
//! | libCacheSim oracleGeneral (binary, 24-byte records) | [`OracleReader`] | [`OracleWriter`], [`write_oracle_general`] |
//! | CSV with caller-mapped columns (incl. Twitter's and CloudPhysics's) | [`CsvReader`] | [`CsvWriter`] |
//! | key-only big-endian `i32`/`i64` streams (cache2k, scarab) | [`KeyOnlyReader`] | — |
//! | libCacheSim txt: one object id per line | [`TxtReader`] | — |
//!
//! [`Format`] names a file's format with what reading it needs, and [`Format::open`] picks the
//! reader: the one place where the simulator and the load generator turn a trace file into
//! requests. Any format may be gzip-, Zstandard- or xz-compressed; the file name's extension
//! says which ([`input`]).

mod csv;
pub mod input;
mod keyonly;
mod oracle;
mod txt;

pub use csv::{Column, CsvFormat, CsvReader, CsvWriter, KeyFormat, TimeUnit};
pub use input::{Compression, TraceInput, inner_extension, open_input};
pub use keyonly::{KeyOnlyReader, KeyWidth, SizeModel, XzFileReader};
pub use oracle::{OracleReader, OracleWriter, annotate_next_access, write_oracle_general};
pub use txt::TxtReader;

use std::collections::HashMap;
use std::io::{self, Read};
use std::path::Path;

use crate::error::Error;
use crate::request::Request;

/// A stream of trace requests; the first error ends it.
pub type TraceStream = Box<dyn Iterator<Item = Result<Request, Error>> + Send>;

/// A trace file's format, with what reading it needs.
#[derive(Debug, Clone)]
pub enum Format {
    /// libCacheSim oracleGeneral binary: sizes and next-access times included.
    Oracle,
    /// Delimited text with this column mapping.
    Csv(CsvFormat),
    /// Big-endian keys of this width, sizes from the model (cache2k's and scarab's traces
    /// are xz-compressed: `.xz`).
    KeyOnly(KeyWidth, SizeModel),
    /// One object id per line (libCacheSim's `txt`), sizes 1 byte each or from the model.
    Txt(KeyFormat, Option<SizeModel>),
}

impl Format {
    /// Opens `path` with this format's reader, decompressing as its extension says
    /// ([`open_input`]).
    ///
    /// # Errors
    /// The file cannot be opened, or its header (CSV) is bad.
    pub fn open(&self, path: &Path) -> Result<TraceStream, Error> {
        self.read(open_input(path)?)
    }

    /// Reads `input` (already decompressed) with this format's reader.
    ///
    /// # Errors
    /// A bad header (CSV).
    pub fn read(&self, input: TraceInput) -> Result<TraceStream, Error> {
        Ok(match self {
            Format::Oracle => Box::new(OracleReader::new(input)),
            Format::Csv(format) => Box::new(CsvReader::new(input, format.clone())?),
            Format::KeyOnly(width, sizes) => {
                Box::new(KeyOnlyReader::new(input, *width, sizes.clone()))
            }
            Format::Txt(keys, sizes) => Box::new(TxtReader::new(input, *keys, sizes.clone())),
        })
    }

    /// Whether requests carry `next_access` from the file itself (oracleGeneral).
    pub fn carries_next_access(&self) -> bool {
        matches!(self, Format::Oracle)
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read (less than
/// `buf.len()` only at the end of input). Retries on `Interrupted`.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// For each request, the position of the next request for the same `(tenant, key)`.
///
/// One backward pass with a map from key to the last position seen: `O(n)` time, memory for
/// the result plus one map entry per distinct key.
fn next_access_positions(requests: &[Request]) -> Vec<Option<u64>> {
    let mut next = vec![None; requests.len()];
    let mut seen: HashMap<(u16, u64), u64> = HashMap::new();
    for (i, r) in requests.iter().enumerate().rev() {
        next[i] = seen.insert((r.tenant, r.key), i as u64);
    }
    next
}

#[cfg(test)]
mod tests;
