//! memcached binary-protocol request parser and response codec.
//!
//! - Raw bytes under random limits, parsed as a pipeline: every request respects the limits
//!   (key length, value size), consumes no more than it was given (an oversize value's
//!   request only its header, extras and key), re-encodes to bytes that parse back to the
//!   same request, and every strict prefix of its bytes is `Incomplete`; every error skips at
//!   least a header and its reply parses as a response with the error's status; a bad magic
//!   byte is refused before a whole header has arrived.
//! - Structured requests built from `Arbitrary` values: encode → parse gives the same
//!   request.
//! - Raw bytes as responses never panic the response parser; written responses parse back.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use fridge_proto::binary::{
    Command, HEADER_LEN, NO_CREATE, Opcode, ParseError, REQUEST_MAGIC, Request, Status,
    parse_request, parse_response, write_response,
};
use fridge_proto::memcache::Limits;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct FuzzLimits {
    key: u8,
    value: u16,
}

/// A key of 1 to 250 bytes (the binary protocol allows any byte).
#[derive(Debug)]
struct Key(Vec<u8>);

impl<'a> Arbitrary<'a> for Key {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let len = u.int_in_range(1..=250)?;
        let mut key = vec![0u8; len];
        u.fill_buffer(&mut key)?;
        Ok(Key(key))
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    Get { op: u8, key: Key, exptime: Option<u32> },
    Touch { key: Key, exptime: u32 },
    Store { op: u8, key: Key, flags: u32, exptime: u32, value: Vec<u8>, cas: u64 },
    Concat { op: u8, key: Key, value: Vec<u8>, cas: u64 },
    Delete { quiet: bool, key: Key, cas: u64 },
    Arithmetic { op: u8, key: Key, delta: u64, initial: u64, exptime: u32, no_create: bool },
    Flush { quiet: bool, exptime: u32 },
    Noop,
    Version,
    Quit { quiet: bool },
    Stat { group: Option<Key> },
    SaslListMechs,
    SaslAuth { step: bool, mechanism: Key, data: Vec<u8> },
}

#[derive(Arbitrary, Debug)]
enum Input {
    Raw {
        limits: Option<FuzzLimits>,
        data: Vec<u8>,
    },
    Requests(Vec<(u32, Op)>),
    Responses(Vec<u8>),
    Written {
        opcode: u8,
        status: u8,
        opaque: u32,
        cas: u64,
        extras: Vec<u8>,
        key: Vec<u8>,
        value: Vec<u8>,
    },
}

fuzz_target!(|input: Input| match input {
    Input::Raw { limits, data } => {
        let limits = limits.map_or_else(Limits::default, |l| Limits {
            max_key_len: usize::from(l.key),
            max_value_len: usize::from(l.value),
            ..Limits::default()
        });
        check_raw(&data, &limits);
    }
    Input::Requests(ops) => {
        for (opaque, op) in &ops {
            round_trip(request(*opaque, op));
        }
    }
    Input::Responses(data) => {
        let mut pos = 0;
        while let Some(Ok((r, n))) = parse_response(&data[pos..]) {
            assert!(n >= HEADER_LEN && n <= data.len() - pos);
            assert_eq!(r.extras.len() + r.key.len() + r.value.len(), n - HEADER_LEN);
            pos += n;
        }
    }
    Input::Written { opcode, status, opaque, cas, extras, key, value } => {
        let statuses = [Status::Success, Status::KeyNotFound, Status::TooLarge, Status::AuthError];
        let status = statuses[usize::from(status) % statuses.len()];
        let extras = &extras[..extras.len().min(255)];
        let key = &key[..key.len().min(usize::from(u16::MAX))];
        let mut out = Vec::new();
        write_response(&mut out, opcode, status, opaque, cas, extras, key, &value);
        let (r, n) = parse_response(&out).unwrap().unwrap();
        assert_eq!(n, out.len());
        assert_eq!(
            (r.header.opcode, r.header.status, r.header.opaque, r.header.cas),
            (opcode, status as u16, opaque, cas)
        );
        assert_eq!((r.extras, r.key, r.value), (extras, key, &value[..]));
    }
});

fn check_raw(data: &[u8], limits: &Limits) {
    let mut pos = 0;
    while pos < data.len() {
        let buf = &data[pos..];
        match parse_request(buf, limits) {
            Ok((request, n)) => {
                assert!(n >= HEADER_LEN && n <= buf.len());
                check_limits(&request, limits);
                let mut encoded = Vec::new();
                request.encode(&mut encoded);
                assert_eq!(parse_request(&encoded, limits), Ok((request, encoded.len())));
                check_prefixes(&buf[..n], limits);
                let skip = match request.command {
                    Command::TooLarge { value_len, .. } => value_len,
                    _ => 0,
                };
                pos = pos.saturating_add(n).saturating_add(skip);
            }
            Err(ParseError::Incomplete) => {
                assert!(buf.len() < HEADER_LEN || buf[0] == REQUEST_MAGIC);
                break;
            }
            Err(ParseError::BadMagic) => {
                assert_ne!(buf[0], REQUEST_MAGIC);
                break;
            }
            Err(ParseError::Invalid(e)) => {
                assert!(e.skip >= HEADER_LEN);
                let mut reply = Vec::new();
                e.write_reply(&mut reply);
                let (r, n) = parse_response(&reply).unwrap().unwrap();
                assert_eq!(
                    (n, r.header.status, r.value),
                    (reply.len(), e.status as u16, e.status.message())
                );
                if e.close {
                    break;
                }
                pos = pos.saturating_add(e.skip);
            }
        }
    }
}

fn check_limits(request: &Request<'_>, limits: &Limits) {
    let key_ok = |k: &[u8]| !k.is_empty() && k.len() <= limits.max_key_len;
    match request.command {
        Command::Get { key, .. }
        | Command::Touch { key, .. }
        | Command::Delete { key }
        | Command::Arithmetic { key, .. } => assert!(key_ok(key)),
        Command::Store { key, value, .. } | Command::Concat { key, value } => {
            assert!(key_ok(key) && value.len() <= limits.max_value_len);
        }
        Command::SaslAuth { mechanism, data } => {
            assert!(key_ok(mechanism) && data.len() <= limits.max_value_len);
        }
        Command::TooLarge { key, value_len } => {
            assert!(key_ok(key) && value_len > limits.max_value_len);
        }
        Command::Stat { group } => assert!(group.len() <= limits.max_key_len),
        _ => {}
    }
}

/// Every strict prefix of a request's bytes is `Incomplete`.
fn check_prefixes(bytes: &[u8], limits: &Limits) {
    let n = bytes.len();
    let step = (n / 64).max(1);
    let mut i = 0;
    while i < n {
        assert_eq!(parse_request(&bytes[..i], limits), Err(ParseError::Incomplete), "prefix {i}");
        i += if n - i <= 32 { 1 } else { step };
    }
}

fn pick(options: &[Opcode], i: u8) -> Opcode {
    options[usize::from(i) % options.len()]
}

fn request(opaque: u32, op: &Op) -> Request<'_> {
    use Opcode::*;
    let (opcode, cas, command) = match op {
        Op::Get { op, key, exptime: None } => {
            (pick(&[Get, GetQ, GetK, GetKQ], *op), 0, Command::Get { key: &key.0, exptime: None })
        }
        Op::Get { op, key, exptime } => (
            pick(&[Gat, GatQ, GatK, GatKQ], *op),
            0,
            Command::Get { key: &key.0, exptime: *exptime },
        ),
        Op::Touch { key, exptime } => (Touch, 0, Command::Touch { key: &key.0, exptime: *exptime }),
        Op::Store { op, key, flags, exptime, value, cas } => (
            pick(&[Set, Add, Replace, SetQ, AddQ, ReplaceQ], *op),
            *cas,
            Command::Store { key: &key.0, flags: *flags, exptime: *exptime, value },
        ),
        Op::Concat { op, key, value, cas } => (
            pick(&[Append, Prepend, AppendQ, PrependQ], *op),
            *cas,
            Command::Concat { key: &key.0, value },
        ),
        Op::Delete { quiet, key, cas } => {
            (if *quiet { DeleteQ } else { Delete }, *cas, Command::Delete { key: &key.0 })
        }
        Op::Arithmetic { op, key, delta, initial, exptime, no_create } => (
            pick(&[Increment, Decrement, IncrementQ, DecrementQ], *op),
            0,
            Command::Arithmetic {
                key: &key.0,
                delta: *delta,
                initial: *initial,
                exptime: if *no_create { NO_CREATE } else { *exptime },
            },
        ),
        Op::Flush { quiet, exptime } => {
            (if *quiet { FlushQ } else { Flush }, 0, Command::Flush { exptime: *exptime })
        }
        Op::Noop => (Noop, 0, Command::Noop),
        Op::Version => (Version, 0, Command::Version),
        Op::Quit { quiet } => (if *quiet { QuitQ } else { Quit }, 0, Command::Quit),
        Op::Stat { group } => {
            (Stat, 0, Command::Stat { group: group.as_ref().map_or(&[][..], |g| &g.0) })
        }
        Op::SaslListMechs => (SaslListMechs, 0, Command::SaslListMechs),
        Op::SaslAuth { step, mechanism, data } => (
            if *step { SaslStep } else { SaslAuth },
            0,
            Command::SaslAuth { mechanism: &mechanism.0, data },
        ),
    };
    Request { opcode, opaque, cas, command }
}

fn round_trip(request: Request<'_>) {
    let limits = Limits { max_value_len: usize::MAX, ..Limits::default() };
    let mut encoded = Vec::new();
    request.encode(&mut encoded);
    assert_eq!(parse_request(&encoded, &limits), Ok((request, encoded.len())));
    check_prefixes(&encoded, &limits);
}
