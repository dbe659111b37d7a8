//! The crate's one error type.
//!
//! Policy: nothing in this crate panics on external input. Invalid parameters are
//! [`Error::Config`] when a distribution or workload is built (never while sampling), I/O
//! failures are [`Error::Io`], and malformed trace data is [`Error::Parse`] with the record
//! number (1-based: a CSV line number counts the header, a binary record number does not) so
//! a bad trace can be found and fixed.

use std::fmt;
use std::io;

/// What went wrong building a workload or reading or writing a trace.
#[derive(Debug)]
pub enum Error {
    /// An invalid parameter (negative weight, zero keys, unknown column, …).
    Config(String),
    /// An I/O error from the underlying reader or writer.
    Io(io::Error),
    /// Malformed trace data.
    Parse {
        /// 1-based record (binary traces) or line (CSV) number.
        record: u64,
        /// What was wrong with it.
        reason: String,
    },
}

impl Error {
    /// An [`Error::Config`] with the given message.
    pub fn config(msg: impl Into<String>) -> Self {
        Self::Config(msg.into())
    }

    /// An [`Error::Parse`] at `record`.
    pub fn parse(record: u64, reason: impl Into<String>) -> Self {
        Self::Parse { record, reason: reason.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(msg) => write!(f, "invalid workload configuration: {msg}"),
            Self::Io(e) => write!(f, "trace I/O error: {e}"),
            Self::Parse { record, reason } => write!(f, "bad trace record {record}: {reason}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}
