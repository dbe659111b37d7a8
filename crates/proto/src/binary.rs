//! The memcached binary protocol, as memcached 1.6 speaks it (`doc/protocol-binary.xml`,
//! the "Binary Protocol Revamped" wiki, and `proto_bin.c` for the exact behaviour).
//!
//! Every packet is a 24-byte header followed by a body of extras, key and value:
//!
//! ```text
//!  byte │    0     │    1     │    2     │    3     │
//!  ─────┼──────────┼──────────┼──────────┴──────────┤
//!    0  │  magic   │  opcode  │     key length      │
//!    4  │ ext. len │ datatype │ vbucket / status    │
//!    8  │          total body length                │
//!   12  │          opaque (echoed back)             │
//!   16  │          CAS (8 bytes)                    │
//!   24  │ extras │ key │ value                      │
//! ```
//!
//! All numbers are big-endian. A request has magic [`REQUEST_MAGIC`], a response
//! [`RESPONSE_MAGIC`]; the value length is the body length less the key and extras lengths.
//!
//! # What a parse returns
//! [`parse_request`] looks at the header first and decides from it alone whenever it can, so
//! re-parsing an incomplete request costs a constant amount of work:
//! - `Ok((request, consumed))`: a complete request, borrowing its key and value from the
//!   input. For [`Command::TooLarge`], `consumed` covers the header, extras and key only; the
//!   value that follows is to be dropped as it arrives (see there).
//! - `Err(ParseError::Incomplete)`: more bytes are needed. A prefix of a valid request
//!   always gives this.
//! - `Err(ParseError::BadMagic)`: the packet does not start with [`REQUEST_MAGIC`];
//!   memcached closes the connection without a reply.
//! - `Err(ParseError::Invalid(e))`: write `e`'s error packet ([`RequestError::write_reply`]),
//!   drop `e.skip` bytes (possibly more than are buffered yet), and close if `e.close`.
//!
//! Shape rules, as `dispatch_bin_command` checks them, in order:
//! 1. key length + extras length > body length: `Unknown command`, then close;
//! 2. key longer than [`Limits::max_key_len`] (memcached: 250): `Invalid arguments`, close;
//! 3. each opcode's fixed extras length and key/body relation (e.g. GET: no extras, a key,
//!    no value): `Invalid arguments`, close;
//! 4. an opcode memcached does not know: `Unknown command`, and the packet is skipped.
//!
//! # Where fridge differs from memcached on purpose
//! - An unknown opcode's packet is skipped exactly. memcached swallows `body length` bytes
//!   after the extras and key it already consumed, so it eats the start of the next request
//!   (and for a packet with extras, such as VERBOSITY, waits for bytes that never come).
//! - STAT with a value (body longer than its key) is `Invalid arguments` and closes;
//!   memcached reads the value as the next header, which closes the connection too.
//! - A value larger than [`Limits::max_value_len`] is [`Command::TooLarge`] for SASL too
//!   (memcached: `Out of memory`).

use crate::memcache::Limits;

/// The first byte of every request.
pub const REQUEST_MAGIC: u8 = 0x80;
/// The first byte of every response.
pub const RESPONSE_MAGIC: u8 = 0x81;
/// Bytes in a packet header.
pub const HEADER_LEN: usize = 24;

const KEY_LEN_AT: usize = 2;
const EXTRAS_LEN_AT: usize = 4;
const DATA_TYPE_AT: usize = 5;
const STATUS_AT: usize = 6;
const BODY_LEN_AT: usize = 8;
const OPAQUE_AT: usize = 12;
const CAS_AT: usize = 16;

/// SET, ADD, REPLACE extras: flags and expiration.
const STORE_EXTRAS: u8 = 8;
/// INCREMENT, DECREMENT extras: delta, initial value, expiration.
const ARITHMETIC_EXTRAS: u8 = 20;
/// TOUCH, GAT, FLUSH extras: expiration.
const EXPIRATION_EXTRAS: u8 = 4;

/// The INCREMENT/DECREMENT expiration that means "do not create a missing counter".
pub const NO_CREATE: u32 = 0xffff_ffff;

/// The opcodes memcached 1.6 answers. The `Q` forms are quiet: their success replies are
/// not sent (a GETQ/GETKQ/GATQ/GATKQ hit still is; a miss is not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[expect(missing_docs, reason = "the names are the protocol's own")]
pub enum Opcode {
    Get = 0x00,
    Set = 0x01,
    Add = 0x02,
    Replace = 0x03,
    Delete = 0x04,
    Increment = 0x05,
    Decrement = 0x06,
    Quit = 0x07,
    Flush = 0x08,
    GetQ = 0x09,
    Noop = 0x0a,
    Version = 0x0b,
    GetK = 0x0c,
    GetKQ = 0x0d,
    Append = 0x0e,
    Prepend = 0x0f,
    Stat = 0x10,
    SetQ = 0x11,
    AddQ = 0x12,
    ReplaceQ = 0x13,
    DeleteQ = 0x14,
    IncrementQ = 0x15,
    DecrementQ = 0x16,
    QuitQ = 0x17,
    FlushQ = 0x18,
    AppendQ = 0x19,
    PrependQ = 0x1a,
    Touch = 0x1c,
    Gat = 0x1d,
    GatQ = 0x1e,
    SaslListMechs = 0x20,
    SaslAuth = 0x21,
    SaslStep = 0x22,
    GatK = 0x23,
    GatKQ = 0x24,
}

impl Opcode {
    /// Every opcode, for tests and fuzzers.
    pub const ALL: [Opcode; 35] = [
        Self::Get,
        Self::Set,
        Self::Add,
        Self::Replace,
        Self::Delete,
        Self::Increment,
        Self::Decrement,
        Self::Quit,
        Self::Flush,
        Self::GetQ,
        Self::Noop,
        Self::Version,
        Self::GetK,
        Self::GetKQ,
        Self::Append,
        Self::Prepend,
        Self::Stat,
        Self::SetQ,
        Self::AddQ,
        Self::ReplaceQ,
        Self::DeleteQ,
        Self::IncrementQ,
        Self::DecrementQ,
        Self::QuitQ,
        Self::FlushQ,
        Self::AppendQ,
        Self::PrependQ,
        Self::Touch,
        Self::Gat,
        Self::GatQ,
        Self::SaslListMechs,
        Self::SaslAuth,
        Self::SaslStep,
        Self::GatK,
        Self::GatKQ,
    ];

    /// The opcode with this byte, if memcached knows it (VERBOSITY, 0x1b, it does not).
    pub const fn from_u8(b: u8) -> Option<Opcode> {
        let i = match b {
            0x00..=0x1a => b as usize,
            0x1c..=0x1e => b as usize - 1,
            0x20..=0x24 => b as usize - 2,
            _ => return None,
        };
        Some(Self::ALL[i])
    }

    /// Whether success replies are left out.
    pub const fn quiet(self) -> bool {
        matches!(
            self,
            Self::GetQ
                | Self::GetKQ
                | Self::SetQ
                | Self::AddQ
                | Self::ReplaceQ
                | Self::DeleteQ
                | Self::IncrementQ
                | Self::DecrementQ
                | Self::QuitQ
                | Self::FlushQ
                | Self::AppendQ
                | Self::PrependQ
                | Self::GatQ
                | Self::GatKQ
        )
    }

    /// Whether a GET-family reply carries the key (GETK, GETKQ, GATK, GATKQ).
    pub const fn returns_key(self) -> bool {
        matches!(self, Self::GetK | Self::GetKQ | Self::GatK | Self::GatKQ)
    }

    /// The command without its quiet flag (SETQ → SET…).
    pub const fn loud(self) -> Opcode {
        match self {
            Self::GetQ => Self::Get,
            Self::GetKQ => Self::GetK,
            Self::SetQ => Self::Set,
            Self::AddQ => Self::Add,
            Self::ReplaceQ => Self::Replace,
            Self::DeleteQ => Self::Delete,
            Self::IncrementQ => Self::Increment,
            Self::DecrementQ => Self::Decrement,
            Self::QuitQ => Self::Quit,
            Self::FlushQ => Self::Flush,
            Self::AppendQ => Self::Append,
            Self::PrependQ => Self::Prepend,
            Self::GatQ => Self::Gat,
            Self::GatKQ => Self::GatK,
            other => other,
        }
    }
}

/// Response status codes, with the error bodies memcached 1.6 sends for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Status {
    /// No error.
    Success = 0x0000,
    /// Key not found.
    KeyNotFound = 0x0001,
    /// Key exists (or CAS mismatch).
    KeyExists = 0x0002,
    /// Value too large.
    TooLarge = 0x0003,
    /// Invalid arguments (a malformed packet; the connection closes).
    InvalidArguments = 0x0004,
    /// Item not stored.
    NotStored = 0x0005,
    /// INCREMENT/DECREMENT on a value that is not a number.
    DeltaBadValue = 0x0006,
    /// Authentication failed, or required.
    AuthError = 0x0020,
    /// SASL: another step is needed.
    AuthContinue = 0x0021,
    /// Unknown command.
    UnknownCommand = 0x0081,
    /// Out of memory.
    OutOfMemory = 0x0082,
    /// Temporary failure: try again later (memcached's `ETMPFAIL`).
    TemporaryFailure = 0x0086,
}

impl Status {
    /// The error body memcached sends with this status (empty for success and continue).
    pub const fn message(self) -> &'static [u8] {
        match self {
            Self::Success | Self::AuthContinue => b"",
            Self::KeyNotFound => b"Not found",
            Self::KeyExists => b"Data exists for key.",
            Self::TooLarge => b"Too large.",
            Self::InvalidArguments => b"Invalid arguments",
            Self::NotStored => b"Not stored.",
            Self::DeltaBadValue => b"Non-numeric server-side value for incr or decr",
            Self::AuthError => b"Auth failure.",
            Self::UnknownCommand => b"Unknown command",
            Self::OutOfMemory => b"Out of memory",
            Self::TemporaryFailure => b"Temporary failure",
        }
    }
}

/// A packet header, decoded (numbers in host order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// [`REQUEST_MAGIC`] or [`RESPONSE_MAGIC`].
    pub magic: u8,
    /// The opcode byte (responses echo the request's).
    pub opcode: u8,
    /// Key length.
    pub key_len: u16,
    /// Extras length.
    pub extras_len: u8,
    /// Data type (0: raw bytes).
    pub data_type: u8,
    /// vbucket id in a request, status in a response.
    pub status: u16,
    /// Extras, key and value together.
    pub body_len: u32,
    /// Opaque, echoed in the response.
    pub opaque: u32,
    /// CAS.
    pub cas: u64,
}

impl Header {
    /// Decodes the first [`HEADER_LEN`] bytes of `b`, which must hold them.
    pub fn decode(b: &[u8; HEADER_LEN]) -> Header {
        let u16_at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Header {
            magic: b[0],
            opcode: b[1],
            key_len: u16_at(KEY_LEN_AT),
            extras_len: b[EXTRAS_LEN_AT],
            data_type: b[DATA_TYPE_AT],
            status: u16_at(STATUS_AT),
            body_len: u32_at(BODY_LEN_AT),
            opaque: u32_at(OPAQUE_AT),
            cas: u64::from(u32_at(CAS_AT)) << 32 | u64::from(u32_at(CAS_AT + 4)),
        }
    }

    /// Appends the 24 header bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[self.magic, self.opcode]);
        out.extend_from_slice(&self.key_len.to_be_bytes());
        out.extend_from_slice(&[self.extras_len, self.data_type]);
        out.extend_from_slice(&self.status.to_be_bytes());
        out.extend_from_slice(&self.body_len.to_be_bytes());
        out.extend_from_slice(&self.opaque.to_be_bytes());
        out.extend_from_slice(&self.cas.to_be_bytes());
    }

    /// The whole packet's length.
    pub const fn packet_len(&self) -> usize {
        HEADER_LEN + self.body_len as usize
    }
}

/// One request: the opcode (whose quiet and key-returning forms share a [`Command`]), the
/// opaque to echo, the CAS it carries, and its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// The opcode.
    pub opcode: Opcode,
    /// Echoed in every reply to it.
    pub opaque: u32,
    /// The request's CAS: for storage, DELETE and arithmetic, the CAS the item must have
    /// (0: any).
    pub cas: u64,
    /// What it asks.
    pub command: Command<'a>,
}

/// A request's arguments, grouped by shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command<'a> {
    /// GET, GETQ, GETK, GETKQ (`exptime` `None`) and GAT, GATQ, GATK, GATKQ.
    Get {
        /// The key.
        key: &'a [u8],
        /// GAT's new expiration.
        exptime: Option<u32>,
    },
    /// TOUCH.
    Touch {
        /// The key.
        key: &'a [u8],
        /// New expiration.
        exptime: u32,
    },
    /// SET, ADD, REPLACE and their quiet forms.
    Store {
        /// The key.
        key: &'a [u8],
        /// Client flags.
        flags: u32,
        /// Expiration (memcached exptime, unsigned).
        exptime: u32,
        /// The value.
        value: &'a [u8],
    },
    /// APPEND, PREPEND and their quiet forms.
    Concat {
        /// The key.
        key: &'a [u8],
        /// What to add.
        value: &'a [u8],
    },
    /// DELETE(Q).
    Delete {
        /// The key.
        key: &'a [u8],
    },
    /// INCREMENT, DECREMENT and their quiet forms.
    Arithmetic {
        /// The key.
        key: &'a [u8],
        /// Amount.
        delta: u64,
        /// The value a missing counter is created with.
        initial: u64,
        /// The created counter's expiration; [`NO_CREATE`]: a missing counter is not found.
        exptime: u32,
    },
    /// FLUSH(Q): with a delay (memcached exptime), or 0 for now.
    Flush {
        /// When (0: now). Encoded as extras only when not 0.
        exptime: u32,
    },
    /// NOOP.
    Noop,
    /// VERSION.
    Version,
    /// QUIT(Q).
    Quit,
    /// STAT, with a group name (the key) or none for all.
    Stat {
        /// The group (`settings`, `items`…), empty for the general statistics.
        group: &'a [u8],
    },
    /// SASL LIST MECHS.
    SaslListMechs,
    /// SASL AUTH and SASL STEP.
    SaslAuth {
        /// The mechanism (the key).
        mechanism: &'a [u8],
        /// The mechanism's data (the value).
        data: &'a [u8],
    },
    /// A storage or SASL request whose value is larger than [`Limits::max_value_len`]. The
    /// parse consumed its header, extras and key; the `value_len` bytes after them are to be
    /// dropped. memcached answers `Too large.` and, for SET, removes the key's old value.
    TooLarge {
        /// The key.
        key: &'a [u8],
        /// The refused value's length.
        value_len: usize,
    },
}

impl Request<'_> {
    /// Appends the request's packet (the inverse of [`parse_request`]; for
    /// [`Command::TooLarge`] only the header, extras and key).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut extras = [0u8; ARITHMETIC_EXTRAS as usize];
        let (key, extras_len, value, value_len): (&[u8], usize, &[u8], usize) = match self.command {
            Command::Get { key, exptime: None } | Command::Delete { key } => (key, 0, b"", 0),
            Command::Get { key, exptime: Some(exptime) } | Command::Touch { key, exptime } => {
                extras[..4].copy_from_slice(&exptime.to_be_bytes());
                (key, 4, b"", 0)
            }
            Command::Store { key, flags, exptime, value } => {
                extras[..4].copy_from_slice(&flags.to_be_bytes());
                extras[4..8].copy_from_slice(&exptime.to_be_bytes());
                (key, 8, value, value.len())
            }
            Command::Concat { key, value } => (key, 0, value, value.len()),
            Command::Arithmetic { key, delta, initial, exptime } => {
                extras[..8].copy_from_slice(&delta.to_be_bytes());
                extras[8..16].copy_from_slice(&initial.to_be_bytes());
                extras[16..].copy_from_slice(&exptime.to_be_bytes());
                (key, 20, b"", 0)
            }
            Command::Flush { exptime: 0 }
            | Command::Noop
            | Command::Version
            | Command::Quit
            | Command::SaslListMechs => (b"", 0, b"", 0),
            Command::Flush { exptime } => {
                extras[..4].copy_from_slice(&exptime.to_be_bytes());
                (b"", 4, b"", 0)
            }
            Command::Stat { group } => (group, 0, b"", 0),
            Command::SaslAuth { mechanism, data } => (mechanism, 0, data, data.len()),
            Command::TooLarge { key, value_len } => {
                let extras_len =
                    if matches!(self.opcode.loud(), Opcode::Set | Opcode::Add | Opcode::Replace) {
                        8
                    } else {
                        0
                    };
                (key, extras_len, b"", value_len)
            }
        };
        Header {
            magic: REQUEST_MAGIC,
            opcode: self.opcode as u8,
            key_len: key.len() as u16,
            extras_len: extras_len as u8,
            data_type: 0,
            status: 0,
            body_len: (extras_len + key.len() + value_len) as u32,
            opaque: self.opaque,
            cas: self.cas,
        }
        .encode(out);
        out.extend_from_slice(&extras[..extras_len]);
        out.extend_from_slice(key);
        out.extend_from_slice(value);
    }
}

/// A refused request: the error packet to send, the bytes to drop, whether to close.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestError {
    /// The request's opcode byte, echoed.
    pub opcode: u8,
    /// The request's opaque, echoed.
    pub opaque: u32,
    /// Why.
    pub status: Status,
    /// Bytes to drop from the start of the input (the whole packet); may exceed what is
    /// buffered.
    pub skip: usize,
    /// Close the connection after the reply (a malformed packet).
    pub close: bool,
}

impl RequestError {
    /// Appends the error packet memcached sends.
    pub fn write_reply(&self, out: &mut Vec<u8>) {
        write_error(out, self.opcode, self.status, self.opaque);
    }
}

/// Why [`parse_request`] returned no request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// More input is needed; nothing was consumed.
    Incomplete,
    /// The packet does not start with [`REQUEST_MAGIC`]: close without a reply.
    BadMagic,
    /// The request is malformed or unknown.
    Invalid(RequestError),
}

const _: () = assert!(std::mem::size_of::<ParseError>() <= 32);

/// Parses one request from the start of `buf` (see the module doc).
pub fn parse_request<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<(Request<'a>, usize), ParseError> {
    let Some(head) = buf.first_chunk::<HEADER_LEN>() else {
        return if buf.first().is_some_and(|&m| m != REQUEST_MAGIC) {
            Err(ParseError::BadMagic)
        } else {
            Err(ParseError::Incomplete)
        };
    };
    let h = Header::decode(head);
    if h.magic != REQUEST_MAGIC {
        return Err(ParseError::BadMagic);
    }
    let (key_len, extras_len, body_len) =
        (usize::from(h.key_len), usize::from(h.extras_len), h.body_len as usize);
    let refuse = |status: Status, close: bool| {
        Err(ParseError::Invalid(RequestError {
            opcode: h.opcode,
            opaque: h.opaque,
            status,
            skip: h.packet_len(),
            close,
        }))
    };
    if key_len + extras_len > body_len {
        return refuse(Status::UnknownCommand, true);
    }
    if key_len > limits.max_key_len.min(usize::from(u16::MAX)) {
        return refuse(Status::InvalidArguments, true);
    }
    let Some(opcode) = Opcode::from_u8(h.opcode) else {
        return refuse(Status::UnknownCommand, false);
    };
    let value_len = body_len - key_len - extras_len;
    let no_value = value_len == 0;
    let shape_ok = match opcode.loud() {
        Opcode::Get | Opcode::GetK | Opcode::Delete => extras_len == 0 && key_len > 0 && no_value,
        Opcode::Set | Opcode::Add | Opcode::Replace => {
            extras_len == usize::from(STORE_EXTRAS) && key_len > 0
        }
        Opcode::Append | Opcode::Prepend => extras_len == 0 && key_len > 0,
        Opcode::Increment | Opcode::Decrement => {
            extras_len == usize::from(ARITHMETIC_EXTRAS) && key_len > 0 && no_value
        }
        Opcode::Touch | Opcode::Gat | Opcode::GatK => {
            extras_len == usize::from(EXPIRATION_EXTRAS) && key_len > 0 && no_value
        }
        Opcode::Flush => key_len == 0 && no_value && (extras_len == 0 || extras_len == 4),
        Opcode::Stat => extras_len == 0 && no_value,
        Opcode::SaslAuth | Opcode::SaslStep => extras_len == 0 && key_len > 0,
        // NOOP, VERSION, QUIT, SASL LIST MECHS: an empty body.
        _ => body_len == 0,
    };
    if !shape_ok {
        return refuse(Status::InvalidArguments, true);
    }
    let key_at = HEADER_LEN + extras_len;
    let value_at = key_at + key_len;
    if value_len > limits.max_value_len {
        let Some(key) = buf.get(key_at..value_at) else { return Err(ParseError::Incomplete) };
        let request = Request {
            opcode,
            opaque: h.opaque,
            cas: h.cas,
            command: Command::TooLarge { key, value_len },
        };
        return Ok((request, value_at));
    }
    let Some(packet) = buf.get(..h.packet_len()) else { return Err(ParseError::Incomplete) };
    let extras = &packet[HEADER_LEN..key_at];
    let key = &packet[key_at..value_at];
    let value = &packet[value_at..];
    let u32_at =
        |i: usize| u32::from_be_bytes([extras[i], extras[i + 1], extras[i + 2], extras[i + 3]]);
    let u64_at = |i: usize| u64::from(u32_at(i)) << 32 | u64::from(u32_at(i + 4));
    let command = match opcode.loud() {
        Opcode::Get | Opcode::GetK => Command::Get { key, exptime: None },
        Opcode::Gat | Opcode::GatK => Command::Get { key, exptime: Some(u32_at(0)) },
        Opcode::Touch => Command::Touch { key, exptime: u32_at(0) },
        Opcode::Set | Opcode::Add | Opcode::Replace => {
            Command::Store { key, flags: u32_at(0), exptime: u32_at(4), value }
        }
        Opcode::Append | Opcode::Prepend => Command::Concat { key, value },
        Opcode::Delete => Command::Delete { key },
        Opcode::Increment | Opcode::Decrement => {
            Command::Arithmetic { key, delta: u64_at(0), initial: u64_at(8), exptime: u32_at(16) }
        }
        Opcode::Flush => Command::Flush { exptime: if extras.is_empty() { 0 } else { u32_at(0) } },
        Opcode::Noop => Command::Noop,
        Opcode::Version => Command::Version,
        Opcode::Quit => Command::Quit,
        Opcode::Stat => Command::Stat { group: key },
        Opcode::SaslListMechs => Command::SaslListMechs,
        _ => Command::SaslAuth { mechanism: key, data: value },
    };
    Ok((Request { opcode, opaque: h.opaque, cas: h.cas, command }, packet.len()))
}

/// Appends a response header; the caller appends `extras_len` bytes of extras, `key_len`
/// of key and `value_len` of value after it.
#[expect(clippy::too_many_arguments, reason = "the header's own fields")]
pub fn write_response_header(
    out: &mut Vec<u8>,
    opcode: u8,
    status: Status,
    opaque: u32,
    cas: u64,
    extras_len: u8,
    key_len: usize,
    value_len: usize,
) {
    Header {
        magic: RESPONSE_MAGIC,
        opcode,
        key_len: key_len as u16,
        extras_len,
        data_type: 0,
        status: status as u16,
        body_len: (usize::from(extras_len) + key_len + value_len) as u32,
        opaque,
        cas,
    }
    .encode(out);
}

/// Appends a whole response.
#[expect(clippy::too_many_arguments, reason = "the packet's own parts")]
pub fn write_response(
    out: &mut Vec<u8>,
    opcode: u8,
    status: Status,
    opaque: u32,
    cas: u64,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
) {
    write_response_header(
        out,
        opcode,
        status,
        opaque,
        cas,
        extras.len() as u8,
        key.len(),
        value.len(),
    );
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
}

/// Appends an error response: the status and its message (CAS 0).
pub fn write_error(out: &mut Vec<u8>, opcode: u8, status: Status, opaque: u32) {
    write_response(out, opcode, status, opaque, 0, b"", b"", status.message());
}

/// A response, borrowing from the input (for clients and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response<'a> {
    /// The header (its `status` field is the status code).
    pub header: Header,
    /// Extras.
    pub extras: &'a [u8],
    /// Key.
    pub key: &'a [u8],
    /// Value.
    pub value: &'a [u8],
}

/// Parses one response from the start of `buf`: `None` while it is incomplete, `Some(Err)`
/// for a packet that is not a response (bad magic, or lengths that do not add up).
pub fn parse_response(buf: &[u8]) -> Option<Result<(Response<'_>, usize), Header>> {
    let h = Header::decode(buf.first_chunk::<HEADER_LEN>()?);
    let (key_len, extras_len) = (usize::from(h.key_len), usize::from(h.extras_len));
    if h.magic != RESPONSE_MAGIC || key_len + extras_len > h.body_len as usize {
        return Some(Err(h));
    }
    let packet = buf.get(..h.packet_len())?;
    let (extras, rest) = packet[HEADER_LEN..].split_at(extras_len);
    let (key, value) = rest.split_at(key_len);
    Some(Ok((Response { header: h, extras, key, value }, packet.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(r: Request<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        r.encode(&mut out);
        out
    }

    fn req(opcode: Opcode, command: Command<'_>) -> Request<'_> {
        Request { opcode, opaque: 0xdead_beef, cas: 0, command }
    }

    fn raw(opcode: u8, extras: &[u8], key: &[u8], value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        Header {
            magic: REQUEST_MAGIC,
            opcode,
            key_len: key.len() as u16,
            extras_len: extras.len() as u8,
            body_len: (extras.len() + key.len() + value.len()) as u32,
            opaque: 7,
            ..Header::default()
        }
        .encode(&mut out);
        out.extend_from_slice(extras);
        out.extend_from_slice(key);
        out.extend_from_slice(value);
        out
    }

    #[test]
    fn every_opcode_byte_round_trips() {
        for (i, op) in Opcode::ALL.iter().enumerate() {
            assert_eq!(Opcode::from_u8(*op as u8), Some(*op), "{i}");
        }
        assert_eq!(Opcode::from_u8(0x1b), None, "VERBOSITY is unknown to memcached 1.6");
        assert_eq!(Opcode::from_u8(0x1f), None);
        assert_eq!(Opcode::from_u8(0x25), None);
        assert!(Opcode::GatKQ.quiet() && Opcode::GatKQ.returns_key());
        assert_eq!(Opcode::GatKQ.loud(), Opcode::GatK);
    }

    #[test]
    fn requests_round_trip_and_prefixes_are_incomplete() {
        let limits = Limits::default();
        let requests = [
            req(Opcode::GetKQ, Command::Get { key: b"k", exptime: None }),
            req(Opcode::Gat, Command::Get { key: b"k", exptime: Some(9) }),
            req(Opcode::Touch, Command::Touch { key: b"k", exptime: 1 }),
            req(Opcode::SetQ, Command::Store { key: b"k", flags: 5, exptime: 0, value: b"val" }),
            req(Opcode::Prepend, Command::Concat { key: b"k", value: b"" }),
            req(Opcode::DeleteQ, Command::Delete { key: b"k" }),
            req(
                Opcode::Decrement,
                Command::Arithmetic { key: b"n", delta: 3, initial: 9, exptime: NO_CREATE },
            ),
            req(Opcode::Flush, Command::Flush { exptime: 0 }),
            req(Opcode::FlushQ, Command::Flush { exptime: 30 }),
            req(Opcode::Noop, Command::Noop),
            req(Opcode::Version, Command::Version),
            req(Opcode::QuitQ, Command::Quit),
            req(Opcode::Stat, Command::Stat { group: b"" }),
            req(Opcode::Stat, Command::Stat { group: b"items" }),
            req(Opcode::SaslListMechs, Command::SaslListMechs),
            req(Opcode::SaslAuth, Command::SaslAuth { mechanism: b"PLAIN", data: b"\0u\0p" }),
        ];
        for r in requests {
            let bytes = encode(r);
            assert_eq!(parse_request(&bytes, &limits), Ok((r, bytes.len())), "{r:?}");
            for i in 0..bytes.len() {
                assert_eq!(parse_request(&bytes[..i], &limits), Err(ParseError::Incomplete));
            }
        }
    }

    #[test]
    fn malformed_headers_are_refused_as_memcached_does() {
        let limits = Limits::default();
        let invalid = |bytes: &[u8]| match parse_request(bytes, &limits) {
            Err(ParseError::Invalid(e)) => (e.status, e.close, e.skip),
            other => panic!("{other:?}"),
        };
        assert_eq!(parse_request(b"\x81", &limits), Err(ParseError::BadMagic));
        assert_eq!(parse_request(&[0x81; 24], &limits), Err(ParseError::BadMagic));
        // GET with a value.
        assert_eq!(invalid(&raw(0x00, b"", b"a", b"x")), (Status::InvalidArguments, true, 26));
        // SET without a key, or with 4 bytes of extras.
        assert_eq!(invalid(&raw(0x01, &[0; 8], b"", b"x")).0, Status::InvalidArguments);
        assert_eq!(invalid(&raw(0x01, &[0; 4], b"k", b"x")).0, Status::InvalidArguments);
        assert_eq!(invalid(&raw(0x08, &[0; 2], b"", b"")).0, Status::InvalidArguments);
        assert_eq!(invalid(&raw(0x10, b"", b"", b"zz")).0, Status::InvalidArguments);
        // A key over 250 bytes.
        assert_eq!(
            invalid(&raw(0x00, b"", &[b'a'; 251], b"")),
            (Status::InvalidArguments, true, 275)
        );
        // Key and extras longer than the body: decided on the header alone.
        let mut bad = raw(0x00, b"", b"abc", b"");
        bad[BODY_LEN_AT + 3] = 2;
        assert_eq!(invalid(&bad[..HEADER_LEN]), (Status::UnknownCommand, true, 26));
        // An unknown opcode is skipped whole, without closing.
        let unknown = raw(0x1b, &[0, 0, 0, 1], b"", b"");
        assert_eq!(invalid(&unknown[..HEADER_LEN]), (Status::UnknownCommand, false, 28));
        let mut out = Vec::new();
        RequestError {
            opcode: 0x50,
            opaque: 7,
            status: Status::UnknownCommand,
            skip: 0,
            close: false,
        }
        .write_reply(&mut out);
        let (resp, n) = parse_response(&out).unwrap().unwrap();
        assert_eq!(n, out.len());
        assert_eq!((resp.header.opcode, resp.header.status, resp.header.opaque), (0x50, 0x81, 7));
        assert_eq!(resp.value, b"Unknown command");
    }

    #[test]
    fn an_oversized_value_is_decided_once_the_key_is_in() {
        let limits = Limits { max_value_len: 4, ..Limits::default() };
        let bytes = raw(0x01, &[0; 8], b"key", b"12345");
        assert_eq!(parse_request(&bytes[..HEADER_LEN + 10], &limits), Err(ParseError::Incomplete));
        let (r, n) = parse_request(&bytes[..HEADER_LEN + 11], &limits).unwrap();
        assert_eq!(r.command, Command::TooLarge { key: b"key", value_len: 5 });
        assert_eq!(n, HEADER_LEN + 11);
        let fits = raw(0x01, &[0; 8], b"key", b"1234");
        assert!(matches!(
            parse_request(&fits, &limits),
            Ok((Request { command: Command::Store { .. }, .. }, _))
        ));
    }
}
