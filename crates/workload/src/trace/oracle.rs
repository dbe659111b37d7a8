//! libCacheSim's *oracleGeneral* binary format.
//!
//! A headerless sequence of 24-byte little-endian records:
//!
//! ```text
//!  0        4                12        16                        24
//!  ├────────┼────────────────┼─────────┼─────────────────────────┤
//!  │ time_s │     obj_id     │obj_size │    next_access_vtime    │
//!  │  u32   │      u64       │  u32    │          i64            │
//! ```
//!
//! `next_access_vtime` is the 1-based position of the next request for the same object, or
//! -1 if there is none (checked against the CloudPhysics sample: record `i`, counted from 0,
//! whose object recurs at record `j` stores `j + 1`). [`Request::next_access`] is 0-based, so
//! the reader subtracts one and the writer adds it back.
//!
//! Mapping to [`Request`]: `time_ms = time_s · 1000`, `key = obj_id`, `value_size = obj_size`,
//! `key_size = 0` (unknown), `op = Get`, tenant 0, no TTL. The writer stores `key_size +
//! value_size` as `obj_size` and drops the tenant, the operation and the TTL, which the
//! format cannot hold.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use super::{next_access_positions, read_full};
use crate::error::Error;
use crate::request::{Op, Request};

/// Bytes per record.
const RECORD_LEN: usize = 24;
const TIME_AT: usize = 0;
const ID_AT: usize = 4;
const SIZE_AT: usize = 12;
const NEXT_AT: usize = 16;
/// `next_access_vtime` of an object never requested again.
const NEVER: i64 = -1;

/// Streaming reader of oracleGeneral records.
#[derive(Debug)]
pub struct OracleReader<R> {
    reader: R,
    /// Records read so far.
    record: u64,
    done: bool,
}

impl OracleReader<BufReader<File>> {
    /// Opens a trace file.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Ok(Self::new(BufReader::with_capacity(1 << 16, File::open(path)?)))
    }
}

impl<R: Read> OracleReader<R> {
    /// Reads records from `reader` (wrap unbuffered readers in a `BufReader`).
    pub fn new(reader: R) -> Self {
        Self { reader, record: 0, done: false }
    }

    fn read_one(&mut self) -> Result<Option<Request>, Error> {
        let mut buf = [0u8; RECORD_LEN];
        let n = read_full(&mut self.reader, &mut buf)?;
        if n == 0 {
            return Ok(None);
        }
        self.record += 1;
        if n < RECORD_LEN {
            return Err(Error::parse(self.record, format!("truncated record: {n} of 24 bytes")));
        }
        let time_s = u32::from_le_bytes(field(&buf, TIME_AT));
        let obj_id = u64::from_le_bytes(field(&buf, ID_AT));
        let obj_size = u32::from_le_bytes(field(&buf, SIZE_AT));
        let next_vtime = i64::from_le_bytes(field(&buf, NEXT_AT));
        let next_access = match next_vtime {
            NEVER | i64::MAX => None,
            v if v >= 1 => Some(v as u64 - 1),
            v => return Err(Error::parse(self.record, format!("next_access_vtime {v}"))),
        };
        Ok(Some(Request {
            time_ms: u64::from(time_s) * 1000,
            tenant: 0,
            key: obj_id,
            key_size: 0,
            value_size: obj_size,
            op: Op::Get,
            ttl_s: None,
            next_access,
        }))
    }
}

/// The `N` bytes of `buf` starting at `at`.
fn field<const N: usize>(buf: &[u8; RECORD_LEN], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&buf[at..at + N]);
    out
}

impl<R: Read> Iterator for OracleReader<R> {
    type Item = Result<Request, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        // Requests until the end or the first error, then nothing.
        let item = if self.done { None } else { self.read_one().transpose() };
        self.done = !matches!(item, Some(Ok(_)));
        item
    }
}

/// Writes requests as oracleGeneral records, with their `next_access` as given.
#[derive(Debug)]
pub struct OracleWriter<W: Write> {
    writer: W,
    record: u64,
}

impl OracleWriter<BufWriter<File>> {
    /// Creates (or truncates) a trace file.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be created.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, Error> {
        Ok(Self::new(BufWriter::with_capacity(1 << 16, File::create(path)?)))
    }
}

impl<W: Write> OracleWriter<W> {
    /// Writes records to `writer` (wrap unbuffered writers in a `BufWriter`).
    pub fn new(writer: W) -> Self {
        Self { writer, record: 0 }
    }

    /// Appends one record.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Parse`] if the time in seconds or the object size does not fit
    /// 32 bits, or the next access does not fit 63.
    pub fn write(&mut self, r: &Request) -> Result<(), Error> {
        self.record += 1;
        let too_big = |what: &str| Error::parse(self.record, format!("{what} does not fit"));
        let time_s = u32::try_from(r.time_ms / 1000).map_err(|_| too_big("time_s"))?;
        let size = u32::try_from(r.object_size()).map_err(|_| too_big("obj_size"))?;
        let next = match r.next_access {
            None => NEVER,
            Some(p) => i64::try_from(p + 1).map_err(|_| too_big("next_access_vtime"))?,
        };
        let mut buf = [0u8; RECORD_LEN];
        buf[TIME_AT..ID_AT].copy_from_slice(&time_s.to_le_bytes());
        buf[ID_AT..SIZE_AT].copy_from_slice(&r.key.to_le_bytes());
        buf[SIZE_AT..NEXT_AT].copy_from_slice(&size.to_le_bytes());
        buf[NEXT_AT..].copy_from_slice(&next.to_le_bytes());
        self.writer.write_all(&buf)?;
        Ok(())
    }

    /// Flushes and returns the inner writer.
    ///
    /// # Errors
    /// [`Error::Io`] if the flush fails.
    pub fn finish(mut self) -> Result<W, Error> {
        self.writer.flush()?;
        Ok(self.writer)
    }
}

/// Sets every request's `next_access` to the position of the next request for the same
/// `(tenant, key)` in `requests` (one backward pass with a hash map of positions).
pub fn annotate_next_access(requests: &mut [Request]) {
    let next = next_access_positions(requests);
    for (r, n) in requests.iter_mut().zip(next) {
        r.next_access = n;
    }
}

/// Writes `requests` as oracleGeneral with `next_access_vtime` computed from the sequence
/// itself (each request's own `next_access` is ignored). Keys are matched by `(tenant, key)`,
/// but the file stores only the key. Output is buffered internally. Returns the records
/// written.
///
/// # Errors
/// As [`OracleWriter::write`].
pub fn write_oracle_general(writer: impl Write, requests: &[Request]) -> Result<u64, Error> {
    let next = next_access_positions(requests);
    let mut out = OracleWriter::new(BufWriter::new(writer));
    for (r, n) in requests.iter().zip(next) {
        out.write(&Request { next_access: n, ..*r })?;
    }
    out.finish()?;
    Ok(requests.len() as u64)
}
