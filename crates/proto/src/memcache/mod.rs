//! The memcached text protocol and its meta commands, as memcached 1.6 speaks
//! them.
//!
//! ```text
//!  server:  bytes ──parse_request──► Request ── engine ──► write_* ──► bytes
//!  client:  Request ──encode──► bytes ──► server ──► bytes ──parse_response──► Response
//! ```
//!
//! A request is one line (`\n` ends it; a `\r` before the `\n` is dropped)
//! split on single spaces, followed by a data block for the storage commands
//! and `ms`. Parsing borrows everything from the input buffer; nothing is
//! copied or allocated.
//!
//! # What a parse returns
//! - `Ok((request, consumed))`: the request and the bytes it used, data block
//!   included.
//! - `Err(ParseError::Incomplete)`: more bytes are needed; nothing was
//!   consumed. A prefix of a valid request always gives this.
//! - `Err(ParseError::Invalid(e))`: the request is bad. Send `e.reply()`
//!   (unless `e.noreply`), discard `e.skip` bytes from the start of the input
//!   (which may be more than the buffer holds yet: the rest of a data block
//!   that is still arriving), and close the connection if `e.closes()`.
//!
//! ```
//! use fridge_proto::memcache::{self, Limits, ParseError, Reply, Request};
//!
//! let limits = Limits::default();
//! let mut input: &[u8] = b"set k 0 0 2\r\nhi\r\nbogus\r\nget k\r\n";
//! let mut out = Vec::new();
//! loop {
//!     match memcache::parse_request(input, &limits) {
//!         Ok((request, used)) => {
//!             match request {
//!                 Request::Storage(s) => {
//!                     assert_eq!((s.key, s.data), (&b"k"[..], &b"hi"[..]));
//!                     memcache::write_reply(&mut out, Reply::Stored);
//!                 }
//!                 Request::Retrieval(r) => {
//!                     for key in r.keys {
//!                         memcache::write_value(&mut out, key, 0, b"hi", None);
//!                     }
//!                     memcache::write_reply(&mut out, Reply::End);
//!                 }
//!                 _ => unreachable!(),
//!             }
//!             input = &input[used..];
//!         }
//!         Err(ParseError::Invalid(e)) => {
//!             if !e.noreply {
//!                 out.extend_from_slice(e.reply());
//!             }
//!             // `skip` may exceed what is buffered: a server then keeps
//!             // discarding as the rest arrives.
//!             input = &input[e.skip.min(input.len())..];
//!         }
//!         Err(ParseError::Incomplete) => break,
//!     }
//! }
//! assert_eq!(out, b"STORED\r\nERROR\r\nVALUE k 0 2\r\nhi\r\nEND\r\n");
//! ```
//!
//! # Where fridge differs from memcached on purpose
//! - When a storage line is bad (key too long, bad flags…) but its byte count
//!   parsed, the data block is swallowed with it. memcached swallows only for
//!   "object too large" and otherwise reads the data block as a command, so a
//!   value such as `flush_all` would run; keeping the stream in sync is safer
//!   and a client sees one reply per request either way.
//! - A line longer than [`Limits::max_line_len`] without a newline is answered
//!   with `CLIENT_ERROR line too long` before the close; memcached closes
//!   silently. Retrieval lines (`get`, `gets`, `gat`, `gats`) may be as long
//!   as [`Limits::max_retrieval_line_len`], as memcached lets multigets grow.
//! - `gat <exptime>` with no key is `ERROR` (memcached answers `END`).
//!
//! Meta flags are accepted by every meta command in the union memcached's
//! parser knows (it ignores the ones that do not apply); see [`MetaFlags`].

mod meta;
mod request;
mod response;
mod tokens;

pub use meta::{
    FlagToken, FlagTokens, MetaCommand, MetaFlags, MetaRequest, RawFlags, base64_decode,
    base64_decoded_len, base64_encode, encode_meta,
};
pub use request::{
    ArithmeticCommand, GetLine, Keys, Request, Retrieval, RetrievalCommand, SpaceSplit, Storage,
    StorageCommand, WatchEvents, encode_retrieval, oversize_store_key, parse_request,
    parse_request_resumable, waiting_get_keys,
};
pub use response::{
    MetaStatus, Reply, Response, ResponseError, parse_response, write_client_error, write_data,
    write_meta_debug, write_meta_end, write_meta_flag, write_meta_flag_i64, write_meta_flag_u64,
    write_meta_header, write_meta_noop, write_number, write_reply, write_server_error, write_stat,
    write_stat_u64, write_value, write_value_header, write_version,
};

/// Hard limits on what a client may send. One per listener; cheap to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest key, in bytes as sent (base64 form for meta `b` keys).
    /// memcached: 250.
    pub max_key_len: usize,
    /// Largest data block of a storage command or `ms` (the item size).
    /// Larger ones are answered `SERVER_ERROR object too large for cache`
    /// and swallowed. memcached `-I`: 1 MiB.
    pub max_value_len: usize,
    /// Longest command line, terminator included, for everything but
    /// retrieval commands. memcached: 2048.
    pub max_line_len: usize,
    /// Longest `get`/`gets`/`gat`/`gats` line (multigets carry many keys).
    pub max_retrieval_line_len: usize,
    /// Largest CAS value a client may give an item (meta `E`); a larger one is a bad token.
    /// memcached: `u64::MAX`.
    pub max_cas: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_key_len: 250,
            max_value_len: 1024 * 1024,
            max_line_len: 2048,
            max_retrieval_line_len: 1024 * 1024,
            max_cas: u64::MAX,
        }
    }
}

/// Why a request was refused. Each maps to memcached's exact reply line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Unknown command, or a known one with the wrong number of tokens.
    UnknownCommand,
    /// A token that does not parse where the line's shape wants a number.
    BadFormat,
    /// A key longer than [`Limits::max_key_len`]; memcached says "bad
    /// command line format".
    KeyTooLong,
    /// `touch`, `gat`, `flush_all` with a bad exptime.
    InvalidExptime,
    /// `incr`/`decr` with a delta that is not a `u64`.
    InvalidDelta,
    /// `delete` with arguments other than the legacy `0` and `noreply`.
    DeleteUsage,
    /// A data block larger than [`Limits::max_value_len`] (swallowed).
    TooLarge,
    /// The data block is not followed by `\r\n`.
    BadDataChunk,
    /// No newline within the line limit; the connection is closed.
    LineTooLong,
    /// `ms`, `md`, `ma` with more than memcached's 20 tokens.
    OptionsTooLong,
    /// `mg` with more than memcached's 20 tokens (its wording differs).
    GetOptionsTooLong,
    /// A meta flag given twice (or a byte ≥ 127 where a flag should be).
    DuplicateFlag,
    /// A meta flag memcached does not know.
    InvalidFlag,
    /// Any flag error in `md` and `ma`, which memcached reports as one.
    InvalidOrDuplicateFlag,
    /// A meta `T`, `N`, `R`, `C`, `E` token that is not a number.
    BadToken,
    /// A meta `M` flag whose token is not exactly one character.
    ModeTokenLength,
    /// An `ma` `J` token that is not a `u64`.
    InvalidInitial,
    /// An `ma` `D` token that is not a `u64`.
    InvalidMetaDelta,
    /// A `b` key that is not valid base64.
    KeyDecode,
    /// An `O` token longer than 32 bytes (letter included).
    OpaqueTooLong,
    /// An `ms` mode other than `E A P R S`.
    InvalidSetMode,
    /// An `ma` mode other than `I + D -`.
    InvalidArithmeticMode,
    /// An unknown command whose last token starts with `HTTP/`: an HTTP request line, sent
    /// here by a browser or by a cross-protocol attack. memcached closes the connection
    /// without a reply; so does fridge.
    HttpRequest,
}

impl ErrorKind {
    /// The reply line memcached sends, `\r\n` included.
    pub const fn reply(self) -> &'static [u8] {
        match self {
            Self::UnknownCommand => b"ERROR\r\n",
            Self::BadFormat | Self::KeyTooLong => b"CLIENT_ERROR bad command line format\r\n",
            Self::InvalidExptime => b"CLIENT_ERROR invalid exptime argument\r\n",
            Self::InvalidDelta => b"CLIENT_ERROR invalid numeric delta argument\r\n",
            Self::DeleteUsage => {
                b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"
            }
            Self::TooLarge => b"SERVER_ERROR object too large for cache\r\n",
            Self::BadDataChunk => b"CLIENT_ERROR bad data chunk\r\n",
            Self::LineTooLong => b"CLIENT_ERROR line too long\r\n",
            Self::OptionsTooLong => b"CLIENT_ERROR options flags too long\r\n",
            Self::GetOptionsTooLong => b"CLIENT_ERROR options flags are too long\r\n",
            Self::DuplicateFlag => b"CLIENT_ERROR duplicate flag\r\n",
            Self::InvalidFlag => b"CLIENT_ERROR invalid flag\r\n",
            Self::InvalidOrDuplicateFlag => b"CLIENT_ERROR invalid or duplicate flag\r\n",
            Self::BadToken => b"CLIENT_ERROR bad token in command line format\r\n",
            Self::ModeTokenLength => b"CLIENT_ERROR incorrect length for M token\r\n",
            Self::InvalidInitial => b"CLIENT_ERROR invalid numeric initial value\r\n",
            Self::InvalidMetaDelta => b"CLIENT_ERROR invalid numeric delta value\r\n",
            Self::KeyDecode => b"CLIENT_ERROR error decoding key\r\n",
            Self::OpaqueTooLong => b"CLIENT_ERROR opaque token too long\r\n",
            Self::InvalidSetMode => b"CLIENT_ERROR invalid mode for ms M token\r\n",
            Self::InvalidArithmeticMode => b"CLIENT_ERROR invalid mode for ma M token\r\n",
            Self::HttpRequest => b"",
        }
    }
}

/// A refused request: what to answer, how much input to drop, and whether
/// the answer is suppressed. Small and `Copy`: it is returned on the hot path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestError {
    /// Why; [`ErrorKind::reply`] gives the line to send.
    pub kind: ErrorKind,
    /// Bytes to discard from the start of the input: the line, plus the data
    /// block when its length was known. May exceed the bytes buffered so far.
    pub skip: usize,
    /// The line ended in `noreply`, so memcached sends nothing back.
    pub noreply: bool,
}

impl RequestError {
    /// The reply line, `\r\n` included.
    pub const fn reply(&self) -> &'static [u8] {
        self.kind.reply()
    }

    /// Whether the server must close the connection after replying.
    pub const fn closes(&self) -> bool {
        matches!(self.kind, ErrorKind::LineTooLong | ErrorKind::HttpRequest)
    }
}

/// Why [`parse_request`] returned no request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// More input is needed; nothing was consumed.
    Incomplete,
    /// The request is malformed or over a limit.
    Invalid(RequestError),
}

const _: () = assert!(std::mem::size_of::<ParseError>() <= 24);
