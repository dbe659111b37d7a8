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
//! | key-only big-endian `i32`/`i64` streams, xz-compressed or not (cache2k, scarab) | [`KeyOnlyReader`] | — |
//!
//! [`Format`] names a file's format with what reading it needs, and [`Format::open`] picks the
//! reader: the one place where the simulator and the load generator turn a trace file into
//! requests.

mod csv;
mod keyonly;
mod oracle;

pub use csv::{Column, CsvFormat, CsvReader, CsvWriter, KeyFormat, TimeUnit};
pub use keyonly::{KeyOnlyReader, KeyWidth, SizeModel, XzFileReader};
pub use oracle::{OracleReader, OracleWriter, annotate_next_access, write_oracle_general};

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
    /// xz-compressed big-endian keys of this width, sizes from the model.
    KeyOnlyXz(KeyWidth, SizeModel),
}

impl Format {
    /// Opens `path` with this format's reader.
    ///
    /// # Errors
    /// The file cannot be opened, or its header (CSV) is bad.
    pub fn open(&self, path: &Path) -> Result<TraceStream, Error> {
        Ok(match self {
            Format::Oracle => Box::new(OracleReader::open(path)?),
            Format::Csv(format) => Box::new(CsvReader::open(path, format.clone())?),
            Format::KeyOnlyXz(width, sizes) => {
                Box::new(KeyOnlyReader::open_xz(path, *width, sizes.clone())?)
            }
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
