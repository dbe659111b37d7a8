//! fridge-proto: the wire protocols fridge speaks, as pure functions over
//! bytes.
//!
//! - [`memcache`]: the memcached text protocol and its meta commands
//!   (`get`/`set`/… and `mg`/`ms`/`md`/`ma`/`mn`/`me`), as memcached 1.6
//!   speaks them.
//! - [`binary`]: the memcached binary protocol (deprecated upstream, still
//!   used by older clients), as memcached 1.6 speaks it.
//! - [`resp`]: the Redis protocol, RESP2 and RESP3: multibulk and inline
//!   commands in, every reply type out, as Redis 7 speaks them.
//!
//! ```text
//!              parse_request            encode / write_*
//!   server:  &[u8] ─────────► Request   Response ─────────► Vec<u8>
//!   client:  Vec<u8> ◄─────── Request   &[u8] ────────────► Response
//!              encode                   parse_response
//! ```
//!
//! # Goals
//! - One crate for the server (parse requests, encode replies), the load
//!   generator (encode requests, parse replies) and the fuzzers.
//! - Byte-exact compatibility: the same replies, error strings included, as
//!   memcached 1.6 and Redis 7, so clients behave the same.
//! - No allocation per request: parsers borrow from the input buffer (RESP
//!   arguments are ranges into it, kept in a caller's reusable [`resp::Args`]);
//!   encoders append to a caller's reusable `Vec<u8>`; numbers are formatted
//!   through a stack buffer.
//! - Hard limits on everything a client controls (key, value, line, argument
//!   count and length), each with its protocol's own error.
//! - Never panic on client input: every parse returns a complete request,
//!   `Incomplete` (a prefix of a valid request always does), or a small
//!   `Copy` error that says what to reply, how many bytes to skip and whether
//!   to close.
//!
//! # Non-goals
//! - I/O, buffering, connection state: the server owns sockets and buffers
//!   and calls the parser again when more bytes arrive.
//! - Command semantics: the crate knows the shape of memcached commands, but
//!   for RESP only splits arguments; dispatch, argument checks and the engine
//!   calls live in the server. No engine type appears here.
//! - Redis cluster/replication streams.
//!
//! # Errors
//! Parse errors are small `Copy` enums carrying what the server needs:
//! [`memcache::ParseError`], [`binary::ParseError`] and [`resp::ParseError`].
//! [`memcache::RequestError::reply`] and [`resp::ProtocolError::write_reply`]
//! give the exact bytes the reference server sends.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod binary;
pub mod long_double;
pub mod memcache;
pub mod number;
pub mod resp;
pub mod waiting;
