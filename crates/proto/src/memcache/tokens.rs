//! The memcached command line, as memcached's `proto_parser.c` and `tokenize_command` see it:
//! finding the line (and how long it may grow), splitting it into tokens, and reading the
//! data block that follows a storage command. Shared by the classic commands (`request.rs`)
//! and the meta commands (`meta.rs`).

use super::{ErrorKind, Limits, ParseError, RequestError};
use crate::number::parse_i32;

/// memcached's tokenizer stops splitting after 23 tokens; we keep the first
/// 24 spans and count the rest, which is all any command shape needs.
pub(super) const MAX_TOKENS: usize = 24;

/// A command line split on spaces the way memcached's `tokenize_command`
/// splits it: runs of spaces separate, nothing else does.
pub(super) struct Tokens<'a> {
    line: &'a [u8],
    spans: [(usize, usize); MAX_TOKENS],
    /// Total number of tokens on the line, which may exceed `MAX_TOKENS`.
    count: usize,
}

impl<'a> Tokens<'a> {
    pub(super) fn new(line: &'a [u8]) -> Self {
        let mut spans = [(0, 0); MAX_TOKENS];
        let mut count = 0;
        let mut i = 0;
        while i < line.len() {
            if line[i] == b' ' {
                i += 1;
                continue;
            }
            let start = i;
            while i < line.len() && line[i] != b' ' {
                i += 1;
            }
            if let Some(span) = spans.get_mut(count) {
                *span = (start, i);
            }
            count += 1;
        }
        Self { line, spans, count }
    }

    /// Number of tokens on the line.
    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// Token `i`, or empty past the end.
    pub(super) fn get(&self, i: usize) -> &'a [u8] {
        match self.spans.get(i) {
            Some(&(s, e)) if i < self.count => &self.line[s..e],
            _ => &[],
        }
    }

    /// The line from token `i` to its last token, or empty past the end.
    pub(super) fn rest(&self, i: usize) -> &'a [u8] {
        match self.spans.get(i) {
            Some(&(s, _)) if i < self.count => {
                let end = self.line.iter().rposition(|&c| c != b' ').map_or(s, |e| e + 1);
                &self.line[s..end]
            }
            _ => &[],
        }
    }

    /// Whether the last token is `noreply` (memcached's `set_noreply_maybe`).
    pub(super) fn noreply(&self) -> bool {
        self.count > 1 && self.get(self.count - 1) == b"noreply"
    }
}

pub(super) fn invalid(kind: ErrorKind, skip: usize, noreply: bool) -> ParseError {
    ParseError::Invalid(RequestError { kind, skip, noreply })
}

/// Finds the command line at the start of `buf`. Returns the line without
/// its terminator and the bytes it occupies with it.
pub(super) fn read_line<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<(&'a [u8], usize), ParseError> {
    if buf.is_empty() {
        return Err(ParseError::Incomplete);
    }
    // `memchr`: the line's end found a vector at a time (a byte-at-a-time search was 4% of a
    // pipelined GET's time, docs/design.md).
    let window = &buf[..buf.len().min(limits.max_line_len)];
    let newline = match memchr::memchr(b'\n', window) {
        Some(i) => i,
        None if buf.len() < limits.max_line_len => return Err(ParseError::Incomplete),
        None if is_retrieval_prefix(buf) => {
            let window = &buf[..buf.len().min(limits.max_retrieval_line_len)];
            match memchr::memchr(b'\n', window) {
                Some(i) => i,
                None if buf.len() < limits.max_retrieval_line_len => {
                    return Err(ParseError::Incomplete);
                }
                None => return Err(invalid(ErrorKind::LineTooLong, buf.len(), false)),
            }
        }
        None => return Err(invalid(ErrorKind::LineTooLong, buf.len(), false)),
    };
    let mut line = &buf[..newline];
    // memcached drops a `\r` before the `\n` only when something precedes it.
    if line.len() > 1 && line.last() == Some(&b'\r') {
        line = &line[..line.len() - 1];
    }
    // The C tokenizer sees a NUL as the end of the line.
    if let Some(nul) = memchr::memchr(0, line) {
        line = &line[..nul];
    }
    Ok((line, newline + 1))
}

/// memcached lets a line grow past 2 KiB only for multigets: at most 100
/// leading spaces, then a retrieval command.
pub(super) fn is_retrieval_prefix(buf: &[u8]) -> bool {
    let spaces = buf.iter().take(101).take_while(|&&c| c == b' ').count();
    if spaces > 100 {
        return false;
    }
    let rest = &buf[spaces..];
    [&b"get "[..], b"gets ", b"gat ", b"gats "].iter().any(|p| rest.starts_with(p))
}

/// Parses a data length the way memcached does (`safe_strtol`, then
/// `0 <= vlen <= INT_MAX - 2`).
pub(super) fn parse_data_len(token: &[u8]) -> Option<usize> {
    let len = parse_i32(token)?;
    if (0..=i32::MAX - 2).contains(&len) { usize::try_from(len).ok() } else { None }
}

/// Reads the data block after a line of `line_len` bytes, `len` bytes long.
/// `noreply` applies to the bad-chunk error.
pub(super) fn data_block(
    buf: &[u8],
    line_len: usize,
    len: usize,
    noreply: bool,
) -> Result<(&[u8], usize), ParseError> {
    let total = line_len + len + 2;
    let Some(block) = buf.get(line_len..total) else {
        return Err(ParseError::Incomplete);
    };
    let (data, end) = block.split_at(len);
    if end != b"\r\n" {
        return Err(invalid(ErrorKind::BadDataChunk, total, noreply));
    }
    Ok((data, total))
}
