//! Delimited-text traces with caller-mapped columns.
//!
//! A [`CsvFormat`] says which column holds which [`Request`] field, by header name or by
//! position. Presets cover the formats met so far:
//!
//! - [`CsvFormat::fridge`]: what [`CsvWriter`] writes, header
//!   `time_ms,tenant,key,key_size,value_size,op,ttl_s,next_access` (empty = none).
//! - [`CsvFormat::twitter`]: twitter/cache-trace, no header, columns `timestamp (s),
//!   anonymized key, key size, value size, client id, operation, TTL (s, 0 = none)`; keys are
//!   strings and are hashed to ids.
//! - [`CsvFormat::cloudphysics`]: libCacheSim's CloudPhysics CSV, header
//!   `version,time,op,size,lbn`, time in seconds, key = `lbn`, value size = `size`, SCSI
//!   opcodes `28` (READ(10)) → `get` and `2a` (WRITE(10)) → `set`.
//!
//! Non-goals: quoting and escaped delimiters (no cache trace seen uses them; a field is the
//! text between two delimiters), and column types beyond the ones listed.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use crate::error::Error;
use crate::request::{Op, Request};
use crate::rng::mix64;

/// Where a field is: a header name (needs a header line) or a 0-based position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Column {
    /// The column whose header is this name.
    Name(String),
    /// The column at this 0-based position.
    Index(usize),
}

impl From<&str> for Column {
    fn from(name: &str) -> Self {
        Self::Name(name.to_owned())
    }
}

impl From<usize> for Column {
    fn from(index: usize) -> Self {
        Self::Index(index)
    }
}

/// Unit of the time column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds.
    Seconds,
    /// Milliseconds.
    Millis,
    /// Microseconds.
    Micros,
}

/// How the key column becomes a `u64` id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyFormat {
    /// A decimal unsigned integer, used as is.
    Integer,
    /// Any text, hashed (64-bit FNV-1a, then mixed): distinct keys collide with probability
    /// about `n² / 2^65` for `n` distinct keys.
    Hashed,
}

/// The layout of a delimited trace. Fields left `None` get defaults: time 0, tenant 0, sizes
/// 0, `get`, no TTL, no next access.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvFormat {
    /// Field separator.
    pub delimiter: char,
    /// Whether the first line names the columns (needed for [`Column::Name`]).
    pub header: bool,
    /// Time column.
    pub time: Option<Column>,
    /// Unit of the time column.
    pub time_unit: TimeUnit,
    /// Key column (required).
    pub key: Column,
    /// How keys are parsed.
    pub key_format: KeyFormat,
    /// Key size column.
    pub key_size: Option<Column>,
    /// Value (object) size column.
    pub value_size: Option<Column>,
    /// Operation column.
    pub op: Option<Column>,
    /// Extra operation names tried before the memcached names (`"28"` → `get`, …).
    pub op_names: Vec<(String, Op)>,
    /// TTL column, seconds; an empty field means no TTL.
    pub ttl_s: Option<Column>,
    /// Whether a TTL of 0 also means no TTL (memcached's and Twitter's convention).
    pub ttl_zero_is_none: bool,
    /// Tenant column.
    pub tenant: Option<Column>,
    /// Next-access column (0-based position; empty or negative = none).
    pub next_access: Option<Column>,
}

/// Header written by [`CsvWriter`] and read by [`CsvFormat::fridge`].
const FRIDGE_HEADER: [&str; 8] =
    ["time_ms", "tenant", "key", "key_size", "value_size", "op", "ttl_s", "next_access"];

impl CsvFormat {
    /// A comma-separated format with a header and only a key column.
    #[must_use]
    pub fn with_key(key: impl Into<Column>, key_format: KeyFormat) -> Self {
        Self {
            delimiter: ',',
            header: true,
            time: None,
            time_unit: TimeUnit::Seconds,
            key: key.into(),
            key_format,
            key_size: None,
            value_size: None,
            op: None,
            op_names: Vec::new(),
            ttl_s: None,
            ttl_zero_is_none: false,
            tenant: None,
            next_access: None,
        }
    }

    /// The format [`CsvWriter`] writes: every [`Request`] field, by header name.
    #[must_use]
    pub fn fridge() -> Self {
        let [time, tenant, key, key_size, value_size, op, ttl, next] =
            FRIDGE_HEADER.map(Column::from);
        Self {
            time: Some(time),
            time_unit: TimeUnit::Millis,
            key_size: Some(key_size),
            value_size: Some(value_size),
            op: Some(op),
            ttl_s: Some(ttl),
            tenant: Some(tenant),
            next_access: Some(next),
            ..Self::with_key(key, KeyFormat::Integer)
        }
    }

    /// Twitter's cache-trace format (no header; the client id column is not used).
    #[must_use]
    pub fn twitter() -> Self {
        Self {
            header: false,
            time: Some(Column::Index(0)),
            key_size: Some(Column::Index(2)),
            value_size: Some(Column::Index(3)),
            op: Some(Column::Index(5)),
            ttl_s: Some(Column::Index(6)),
            ttl_zero_is_none: true,
            ..Self::with_key(Column::Index(1), KeyFormat::Hashed)
        }
    }

    /// libCacheSim's CloudPhysics block-I/O CSV (`version,time,op,size,lbn`).
    #[must_use]
    pub fn cloudphysics() -> Self {
        Self {
            time: Some("time".into()),
            value_size: Some("size".into()),
            op: Some("op".into()),
            op_names: vec![("28".to_owned(), Op::Get), ("2a".to_owned(), Op::Set)],
            ..Self::with_key("lbn", KeyFormat::Integer)
        }
    }

    fn resolve(&self, header: Option<&str>) -> Result<Resolved, Error> {
        let names: Vec<&str> =
            header.map(|h| h.split(self.delimiter).collect()).unwrap_or_default();
        let find = |c: &Column| -> Result<usize, Error> {
            match c {
                Column::Index(i) => Ok(*i),
                Column::Name(name) if header.is_none() => Err(Error::config(format!(
                    "column {name:?} named, but the format has no header"
                ))),
                Column::Name(name) => names
                    .iter()
                    .position(|h| h.trim() == name)
                    .ok_or_else(|| Error::parse(1, format!("no column named {name:?} in header"))),
            }
        };
        let opt = |c: &Option<Column>| c.as_ref().map(find).transpose();
        Ok(Resolved {
            time: opt(&self.time)?,
            key: find(&self.key)?,
            key_size: opt(&self.key_size)?,
            value_size: opt(&self.value_size)?,
            op: opt(&self.op)?,
            ttl_s: opt(&self.ttl_s)?,
            tenant: opt(&self.tenant)?,
            next_access: opt(&self.next_access)?,
        })
    }
}

/// Column positions after the header is read.
#[derive(Clone, Debug)]
struct Resolved {
    time: Option<usize>,
    key: usize,
    key_size: Option<usize>,
    value_size: Option<usize>,
    op: Option<usize>,
    ttl_s: Option<usize>,
    tenant: Option<usize>,
    next_access: Option<usize>,
}

/// Streaming reader of delimited traces. Blank lines are skipped; a line with too few
/// columns or an unparsable field is an [`Error::Parse`] with its line number.
#[derive(Debug)]
pub struct CsvReader<R> {
    reader: R,
    format: CsvFormat,
    cols: Resolved,
    /// The current line, reused.
    line: String,
    /// Byte ranges of the current line's fields, reused.
    fields: Vec<(usize, usize)>,
    line_no: u64,
    done: bool,
}

impl CsvReader<BufReader<File>> {
    /// Opens a trace file.
    ///
    /// # Errors
    /// As [`CsvReader::new`], and [`Error::Io`] if the file cannot be opened.
    pub fn open(path: impl AsRef<Path>, format: CsvFormat) -> Result<Self, Error> {
        Self::new(BufReader::with_capacity(1 << 16, File::open(path)?), format)
    }
}

impl<R: BufRead> CsvReader<R> {
    /// Reads the header (if the format has one) and resolves column names.
    ///
    /// # Errors
    /// [`Error::Parse`] for a missing header or a named column absent from it,
    /// [`Error::Config`] for a named column in a headerless format, [`Error::Io`].
    pub fn new(mut reader: R, format: CsvFormat) -> Result<Self, Error> {
        let mut line = String::new();
        let mut line_no = 0;
        let cols = if format.header {
            if reader.read_line(&mut line)? == 0 {
                return Err(Error::parse(1, "empty file: expected a header line"));
            }
            line_no = 1;
            format.resolve(Some(line.trim_end_matches(['\n', '\r'])))?
        } else {
            format.resolve(None)?
        };
        Ok(Self { reader, format, cols, line, fields: Vec::new(), line_no, done: false })
    }

    fn read_one(&mut self) -> Result<Option<Request>, Error> {
        loop {
            self.line.clear();
            if self.reader.read_line(&mut self.line)? == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            let text = self.line.trim_end_matches(['\n', '\r']);
            if !text.trim().is_empty() {
                break;
            }
        }
        let text = self.line.trim_end_matches(['\n', '\r']);
        self.fields.clear();
        let mut start = 0;
        for (i, c) in text.char_indices().filter(|&(_, c)| c == self.format.delimiter) {
            self.fields.push((start, i));
            start = i + c.len_utf8();
        }
        self.fields.push((start, text.len()));
        let line = Line { text, fields: &self.fields, no: self.line_no };
        parse_request(&line, &self.format, &self.cols).map(Some)
    }
}

impl<R: BufRead> Iterator for CsvReader<R> {
    type Item = Result<Request, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        // Requests until the end or the first error, then nothing.
        let item = if self.done { None } else { self.read_one().transpose() };
        self.done = !matches!(item, Some(Ok(_)));
        item
    }
}

/// One split line.
struct Line<'a> {
    text: &'a str,
    fields: &'a [(usize, usize)],
    no: u64,
}

impl Line<'_> {
    fn field(&self, col: usize) -> Result<&str, Error> {
        let &(a, b) = self.fields.get(col).ok_or_else(|| {
            Error::parse(self.no, format!("column {col} missing ({} columns)", self.fields.len()))
        })?;
        Ok(self.text[a..b].trim())
    }

    /// The field at `col` parsed as `T`, or `None` when the column is unmapped or the field
    /// is empty.
    fn parse<T: std::str::FromStr>(
        &self,
        col: Option<usize>,
        what: &str,
    ) -> Result<Option<T>, Error> {
        let Some(col) = col else { return Ok(None) };
        let s = self.field(col)?;
        if s.is_empty() {
            return Ok(None);
        }
        s.parse().map(Some).map_err(|_| Error::parse(self.no, format!("bad {what} {s:?}")))
    }
}

fn parse_request(line: &Line<'_>, format: &CsvFormat, cols: &Resolved) -> Result<Request, Error> {
    let key_text = line.field(cols.key)?;
    let key = match format.key_format {
        KeyFormat::Integer => key_text
            .parse()
            .map_err(|_| Error::parse(line.no, format!("bad integer key {key_text:?}")))?,
        KeyFormat::Hashed => hash_key(key_text.as_bytes()),
    };
    let time_ms = match cols.time {
        None => 0,
        Some(col) => parse_time(line.field(col)?, format.time_unit)
            .ok_or_else(|| Error::parse(line.no, format!("bad time {:?}", line.field(col))))?,
    };
    let op = match cols.op {
        None => Op::Get,
        Some(col) => {
            let name = line.field(col)?;
            format
                .op_names
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|&(_, op)| op)
                .or_else(|| Op::from_name(name))
                .ok_or_else(|| Error::parse(line.no, format!("unknown operation {name:?}")))?
        }
    };
    let ttl_s =
        line.parse::<u32>(cols.ttl_s, "TTL")?.filter(|&t| !(format.ttl_zero_is_none && t == 0));
    let next_access =
        line.parse::<i64>(cols.next_access, "next access")?.and_then(|n| u64::try_from(n).ok());
    Ok(Request {
        time_ms,
        tenant: line.parse(cols.tenant, "tenant")?.unwrap_or(0),
        key,
        key_size: line.parse(cols.key_size, "key size")?.unwrap_or(0),
        value_size: line.parse(cols.value_size, "value size")?.unwrap_or(0),
        op,
        ttl_s,
        next_access,
    })
}

/// Parses an integer or decimal time into milliseconds; `None` if malformed or negative.
fn parse_time(s: &str, unit: TimeUnit) -> Option<u64> {
    let (mul, div) = match unit {
        TimeUnit::Seconds => (1000, 1),
        TimeUnit::Millis => (1, 1),
        TimeUnit::Micros => (1, 1000),
    };
    if let Ok(t) = s.parse::<u64>() {
        return t.checked_mul(mul).map(|t| t / div);
    }
    let t: f64 = s.parse().ok()?;
    // `as` saturates on overflow; NaN and negatives are rejected first.
    (t.is_finite() && t >= 0.0).then(|| (t * mul as f64 / div as f64) as u64)
}

/// 64-bit FNV-1a, then [`mix64`] to spread FNV's weak low bits.
pub(super) fn hash_key(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01B3;
    mix64(bytes.iter().fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME)))
}

/// Writes requests in the [`CsvFormat::fridge`] layout.
#[derive(Debug)]
pub struct CsvWriter<W: Write> {
    writer: W,
}

impl CsvWriter<BufWriter<File>> {
    /// Creates (or truncates) a trace file and writes the header.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn create(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::new(BufWriter::with_capacity(1 << 16, File::create(path)?))
    }
}

impl<W: Write> CsvWriter<W> {
    /// Writes the header to `writer` (wrap unbuffered writers in a `BufWriter`).
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn new(mut writer: W) -> Result<Self, Error> {
        writeln!(writer, "{}", FRIDGE_HEADER.join(","))?;
        Ok(Self { writer })
    }

    /// Appends one request.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn write(&mut self, r: &Request) -> Result<(), Error> {
        write!(
            self.writer,
            "{},{},{},{},{},{},",
            r.time_ms,
            r.tenant,
            r.key,
            r.key_size,
            r.value_size,
            r.op.name()
        )?;
        if let Some(ttl) = r.ttl_s {
            write!(self.writer, "{ttl}")?;
        }
        self.writer.write_all(b",")?;
        if let Some(next) = r.next_access {
            write!(self.writer, "{next}")?;
        }
        self.writer.write_all(b"\n")?;
        Ok(())
    }

    /// Flushes and returns the inner writer.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn finish(mut self) -> Result<W, Error> {
        self.writer.flush()?;
        Ok(self.writer)
    }
}
