//! The Redis protocol, RESP2 and RESP3, as Redis 7 speaks it.
//!
//! ```text
//!  server:  bytes ──parse_command──► Args (ranges into the bytes) ── dispatch ──► write_* ──► bytes
//!  client:  encode_command ──► bytes ──► server ──► bytes ──parse_frame / value_len──► Frame
//! ```
//!
//! Requests come in two forms, told apart by their first byte:
//! - multibulk, `*<n>\r\n` then `n` times `$<len>\r\n<bytes>\r\n`: what
//!   every client library sends;
//! - inline, a line of space-separated words (`PING\r\n`), with Redis's
//!   quoting rules (`"a b"`, `'x'`, `"\x00"`): what a person types into
//!   telnet.
//!
//! [`parse_command`] fills a caller's reusable [`Args`] with one range per
//! argument into the input (inline arguments with quotes are unescaped into
//! a scratch buffer inside `Args`), so a steady-state parse allocates
//! nothing. A request with no argument (`*0\r\n`, `*-1\r\n`, an empty line)
//! parses to empty `Args`: consume it and send nothing, as Redis does.
//!
//! Replies are written by the `write_*` functions for the protocol version
//! the connection negotiated with `HELLO`; RESP3-only types fall back to
//! their RESP2 forms the way Redis does (a map becomes a flat array, a
//! double a bulk string, a boolean an integer, `_` null becomes `$-1`).
//!
//! After a [`ProtocolError`] Redis answers the error and closes the
//! connection; the server must do the same.
//!
//! ```
//! use fridge_proto::resp::{self, Args, Limits, ParseError, Version};
//!
//! let limits = Limits::default();
//! let mut args = Args::new(); // one per connection, reused
//! let input = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n";
//! let mut pos = 0;
//! let mut out = Vec::new();
//! while pos < input.len() {
//!     let buf = &input[pos..];
//!     match resp::parse_command(buf, &limits, &mut args) {
//!         Ok(used) => {
//!             let cmd = args.command(buf);
//!             if cmd.is(b"get") {
//!                 assert_eq!(cmd.get(1), Some(&b"k"[..]));
//!                 resp::write_null(&mut out, Version::Resp2);
//!             } else if cmd.is(b"ping") {
//!                 resp::write_simple(&mut out, b"PONG");
//!             }
//!             pos += used;
//!         }
//!         Err(ParseError::Protocol(e)) => {
//!             e.write_reply(&mut out); // then close the connection
//!             break;
//!         }
//!         Err(ParseError::Incomplete) => break, // read more
//!     }
//! }
//! assert_eq!(out, b"$-1\r\n+PONG\r\n");
//! ```

mod request;
mod response;

pub use request::{
    Args, Command, GetArray, encode_command, eq_ignore_ascii_case, parse_command, waiting_get_keys,
};
pub use response::{
    Frame, FrameError, parse_frame, value_len, write_array_header, write_big_number,
    write_blob_error, write_boolean, write_bulk, write_bulk_header, write_double, write_error,
    write_integer, write_map_header, write_null, write_null_array, write_push_header,
    write_set_header, write_simple, write_unknown_command, write_verbatim, write_wrong_arity,
};

/// The protocol version of a connection: RESP2 until `HELLO 3`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Version {
    /// RESP2, the default.
    #[default]
    Resp2,
    /// RESP3, after `HELLO 3`.
    Resp3,
}

/// Hard limits on a request. One per listener; cheap to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most arguments in one multibulk request. Redis: 1024 × 1024.
    pub max_multibulk_len: usize,
    /// Longest single argument. Redis's `proto-max-bulk-len` is 512 MiB; the
    /// default here is a 1 MiB item plus 64 KiB of slack for the key and
    /// options, so that a client cannot make the server buffer more than an
    /// item it could store. See [`Limits::redis`].
    pub max_bulk_len: usize,
    /// Longest inline request, and longest `*<n>` / `$<len>` line.
    /// Redis: 64 KiB.
    pub max_inline_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_multibulk_len: 1024 * 1024,
            max_bulk_len: 1024 * 1024 + 64 * 1024,
            max_inline_len: 64 * 1024,
        }
    }
}

impl Limits {
    /// Redis 7's own defaults (512 MiB arguments).
    pub const fn redis() -> Self {
        Self {
            max_multibulk_len: 1024 * 1024,
            max_bulk_len: 512 * 1024 * 1024,
            max_inline_len: 64 * 1024,
        }
    }
}

/// A malformed request. Redis replies with the error and closes the
/// connection; every variant here does the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProtocolError {
    /// `*<n>` that is not a number, or more than the multibulk limit.
    InvalidMultibulkLength,
    /// `$<len>` that is not a number, negative, or over the bulk limit.
    InvalidBulkLength,
    /// Something other than `$` where an argument must start; the byte seen.
    ExpectedDollar(u8),
    /// An inline request with no newline within the inline limit.
    TooBigInline,
    /// A `*<n>` line with no `\r` within the inline limit.
    TooBigMultibulkCount,
    /// A `$<len>` line with no `\r` within the inline limit.
    TooBigBulkCount,
    /// An inline request with an unclosed quote, or a closing quote not
    /// followed by a space.
    UnbalancedQuotes,
}

impl ProtocolError {
    /// The message after `-ERR `, without the offending byte of
    /// [`ProtocolError::ExpectedDollar`].
    pub const fn message(self) -> &'static str {
        match self {
            Self::InvalidMultibulkLength => "Protocol error: invalid multibulk length",
            Self::InvalidBulkLength => "Protocol error: invalid bulk length",
            Self::ExpectedDollar(_) => "Protocol error: expected '$', got '",
            Self::TooBigInline => "Protocol error: too big inline request",
            Self::TooBigMultibulkCount => "Protocol error: too big mbulk count string",
            Self::TooBigBulkCount => "Protocol error: too big bulk count string",
            Self::UnbalancedQuotes => "Protocol error: unbalanced quotes in request",
        }
    }

    /// Appends the error reply Redis sends, e.g.
    /// `-ERR Protocol error: expected '$', got 'x'\r\n`. (The same in RESP2
    /// and RESP3.)
    pub fn write_reply(self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"-ERR ");
        out.extend_from_slice(self.message().as_bytes());
        if let Self::ExpectedDollar(byte) = self {
            // Redis replaces newlines in error messages so the reply stays
            // one line.
            out.push(if byte == b'\r' || byte == b'\n' { b' ' } else { byte });
            out.push(b'\'');
        }
        out.extend_from_slice(b"\r\n");
    }

    /// Always true: Redis closes the connection after a protocol error.
    pub const fn closes(self) -> bool {
        true
    }
}

/// Why [`parse_command`] returned no command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParseError {
    /// More input is needed; nothing was consumed.
    Incomplete,
    /// The request is malformed: reply and close.
    Protocol(ProtocolError),
}

const _: () = assert!(std::mem::size_of::<ParseError>() <= 4);
