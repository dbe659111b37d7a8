//! Trace readers and writers.
//!
//! Readers stream: they hold one record (and a read buffer) in memory, never the trace, and
//! yield `Result<Request, Error>`. After the first error a reader yields `None`, so a `for`
//! loop over a broken trace ends instead of spinning. Trace bytes are external input: a
//! malformed record is an [`Error::Parse`](crate::Error::Parse), never a panic.
//!
//! | format | reader | writer |
//! |---|---|---|
//! | libCacheSim oracleGeneral (binary, 24-byte records) | [`OracleReader`] | [`OracleWriter`], [`write_oracle_general`] |
//! | CSV with caller-mapped columns (incl. Twitter's and CloudPhysics's) | [`CsvReader`] | [`CsvWriter`] |
//! | key-only big-endian `i32`/`i64` streams, xz-compressed or not (cache2k, scarab) | [`KeyOnlyReader`] | — |

mod csv;
mod keyonly;
mod oracle;

pub use csv::{Column, CsvFormat, CsvReader, CsvWriter, KeyFormat, TimeUnit};
pub use keyonly::{KeyOnlyReader, KeyWidth, SizeModel, XzFileReader};
pub use oracle::{OracleReader, OracleWriter, annotate_next_access, write_oracle_general};

use std::collections::HashMap;
use std::io::{self, Read};

use crate::request::Request;

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
