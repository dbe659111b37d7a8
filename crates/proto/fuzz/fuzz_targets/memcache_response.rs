//! memcached response parser and encoders.
//!
//! - Raw bytes, parsed as a stream: each element consumes no more than it
//!   was given, re-encodes to bytes that parse back to the same element, and
//!   every strict prefix of its bytes is `Incomplete`.
//! - Structured responses built from `Arbitrary` values: encode → parse gives
//!   the same response.
#![no_main]

use arbitrary::Arbitrary;
use fridge_proto::memcache::{
    MetaStatus, RawFlags, Reply, Response, ResponseError, parse_response,
};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Op {
    Reply(u8),
    Value { key: u8, flags: u32, cas: Option<u64>, data: Vec<u8> },
    Number(u64),
    Stat { name: u8, value: u64 },
    Version(u16),
    Meta { status: u8, cas: Option<u64>, ttl: Option<i32>, data: Vec<u8> },
    Noop,
}

#[derive(Arbitrary, Debug)]
enum Input {
    Raw(Vec<u8>),
    Responses(Vec<Op>),
}

fuzz_target!(|input: Input| match input {
    Input::Raw(data) => check_raw(&data),
    Input::Responses(ops) => check_ops(&ops),
});

fn check_prefixes(bytes: &[u8]) {
    let n = bytes.len();
    let step = (n / 128).max(1);
    let mut i = 0;
    while i < n {
        assert_eq!(
            parse_response(&bytes[..i]).err(),
            Some(ResponseError::Incomplete),
            "prefix {i}"
        );
        i += if n - i <= 4 { 1 } else { step };
    }
}

fn check_raw(data: &[u8]) {
    let mut pos = 0;
    while pos < data.len() {
        let buf = &data[pos..];
        let Ok((response, n)) = parse_response(buf) else { break };
        assert!(n > 0 && n <= buf.len());
        let mut encoded = Vec::new();
        response.encode(&mut encoded);
        assert_eq!(parse_response(&encoded), Ok((response, encoded.len())));
        check_prefixes(&buf[..n]);
        pos += n;
    }
}

fn check_ops(ops: &[Op]) {
    const KEYS: [&[u8]; 4] = [b"a", b"key", b"k:1", b"VALUE"];
    const STATS: [&[u8]; 3] = [b"pid", b"curr_items", b"rusage_user"];
    // The text each op needs (stat value, version, meta flags), owned here
    // so the responses can borrow it.
    let texts: Vec<String> = ops
        .iter()
        .map(|op| match op {
            Op::Stat { value, .. } => value.to_string(),
            Op::Version(v) => format!("1.6.{v}"),
            Op::Meta { cas, ttl, .. } => {
                let cas = cas.map(|c| format!(" c{c}")).unwrap_or_default();
                let ttl = ttl.map(|t| format!(" t{t}")).unwrap_or_default();
                format!("{cas}{ttl}").trim_start().to_string()
            }
            _ => String::new(),
        })
        .collect();
    let mut expected = Vec::new();
    for (op, text) in ops.iter().zip(&texts) {
        let text = text.as_bytes();
        let response = match op {
            Op::Reply(r) => Response::Reply(
                [
                    Reply::Stored,
                    Reply::NotStored,
                    Reply::Exists,
                    Reply::NotFound,
                    Reply::Deleted,
                    Reply::Touched,
                    Reply::Ok,
                    Reply::End,
                    Reply::Error,
                    Reply::Reset,
                ][usize::from(*r) % 10],
            ),
            Op::Value { key, flags, cas, data } => Response::Value {
                key: KEYS[usize::from(*key) % KEYS.len()],
                flags: *flags,
                cas: *cas,
                data,
            },
            Op::Number(n) => Response::Number(*n),
            Op::Stat { name, .. } => {
                Response::Stat { name: STATS[usize::from(*name) % STATS.len()], value: text }
            }
            Op::Version(_) => Response::Version(text),
            Op::Meta { status, data, .. } => {
                let status = [
                    MetaStatus::Value,
                    MetaStatus::Header,
                    MetaStatus::Miss,
                    MetaStatus::NotFound,
                    MetaStatus::NotStored,
                    MetaStatus::Exists,
                ][usize::from(*status) % 6];
                let data = if status == MetaStatus::Value { &data[..] } else { &[][..] };
                Response::Meta { status, flags: RawFlags::new(text), data }
            }
            Op::Noop => Response::MetaNoop,
        };
        expected.push(response);
    }
    let mut wire = Vec::new();
    for response in &expected {
        response.encode(&mut wire);
    }
    let mut pos = 0;
    for response in &expected {
        let (parsed, n) = parse_response(&wire[pos..]).unwrap_or_else(|e| panic!("{e:?} at {pos}"));
        assert_eq!(&parsed, response);
        check_prefixes(&wire[pos..pos + n]);
        pos += n;
    }
    assert_eq!(pos, wire.len());
}
