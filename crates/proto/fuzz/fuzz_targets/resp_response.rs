//! RESP reply encoders and frame parser.
//!
//! - Raw bytes: a parsed frame re-encodes to bytes that parse back to the
//!   same frame; `value_len` never claims more than it was given, and every
//!   strict prefix of a complete value is `Incomplete`.
//! - Structured replies written with the `write_*` encoders in either
//!   version: `value_len` finds exactly the bytes written, and doubles read
//!   back bit for bit.
#![no_main]

use arbitrary::Arbitrary;
use fridge_proto::resp::{
    Frame, FrameError, Version, parse_frame, value_len, write_array_header, write_big_number,
    write_blob_error, write_boolean, write_bulk, write_double, write_error, write_integer,
    write_map_header, write_null, write_null_array, write_push_header, write_set_header,
    write_simple, write_verbatim,
};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Reply {
    Simple(Vec<u8>),
    Error(Vec<u8>),
    Integer(i64),
    Bulk(Vec<u8>),
    Null,
    NullArray,
    Double(f64),
    Boolean(bool),
    Verbatim(Vec<u8>),
    BigNumber(i128),
    BlobError(Vec<u8>),
    Array(Vec<Reply>),
    Map(Vec<(Reply, Reply)>),
    Set(Vec<Reply>),
    Push(Vec<Reply>),
}

#[derive(Arbitrary, Debug)]
enum Input {
    Raw(Vec<u8>),
    Replies { resp3: bool, replies: Vec<Reply> },
}

fuzz_target!(|input: Input| match input {
    Input::Raw(data) => check_raw(&data),
    Input::Replies { resp3, replies } => {
        let version = if resp3 { Version::Resp3 } else { Version::Resp2 };
        for reply in &replies {
            let mut wire = Vec::new();
            write(&mut wire, version, reply);
            assert_eq!(value_len(&wire), Ok(wire.len()), "{:?}", String::from_utf8_lossy(&wire));
            check_prefixes(&wire);
        }
    }
});

fn check_prefixes(bytes: &[u8]) {
    let n = bytes.len();
    let step = (n / 128).max(1);
    let mut i = 0;
    while i < n {
        assert_eq!(value_len(&bytes[..i]), Err(FrameError::Incomplete), "prefix {i}");
        i += if n - i <= 4 { 1 } else { step };
    }
}

fn check_raw(data: &[u8]) {
    if let Ok((frame, n)) = parse_frame(data) {
        assert!(n > 0 && n <= data.len());
        let mut encoded = Vec::new();
        frame.encode(&mut encoded);
        assert_eq!(parse_frame(&encoded), Ok((frame, encoded.len())));
        if let Frame::Double(text) = frame {
            assert!(std::str::from_utf8(text).is_ok_and(|s| s.parse::<f64>().is_ok()));
        }
    }
    if let Ok(n) = value_len(data) {
        assert!(n > 0 && n <= data.len());
        check_prefixes(&data[..n]);
    }
}

fn write(out: &mut Vec<u8>, v: Version, reply: &Reply) {
    match reply {
        Reply::Simple(s) => write_simple(out, s),
        Reply::Error(s) => write_error(out, s),
        Reply::Integer(n) => write_integer(out, *n),
        Reply::Bulk(b) => write_bulk(out, b),
        Reply::Null => write_null(out, v),
        Reply::NullArray => write_null_array(out, v),
        Reply::Double(d) => {
            let start = out.len();
            write_double(out, v, *d);
            let (frame, _) = parse_frame(&out[start..]).expect("a double frame");
            let text = match frame {
                Frame::Double(text) | Frame::Bulk(text) => text,
                other => panic!("{other:?}"),
            };
            let back: f64 = std::str::from_utf8(text).unwrap().parse().unwrap();
            assert!(back.to_bits() == d.to_bits() || (back.is_nan() && d.is_nan()));
        }
        Reply::Boolean(b) => write_boolean(out, v, *b),
        Reply::Verbatim(t) => write_verbatim(out, v, b"txt", t),
        Reply::BigNumber(n) => write_big_number(out, v, n.to_string().as_bytes()),
        Reply::BlobError(m) => write_blob_error(out, v, m),
        Reply::Array(items) => {
            write_array_header(out, items.len());
            items.iter().for_each(|r| write(out, v, r));
        }
        Reply::Map(pairs) => {
            write_map_header(out, v, pairs.len());
            for (k, val) in pairs {
                write(out, v, k);
                write(out, v, val);
            }
        }
        Reply::Set(items) => {
            write_set_header(out, v, items.len());
            items.iter().for_each(|r| write(out, v, r));
        }
        Reply::Push(items) => {
            write_push_header(out, v, items.len());
            items.iter().for_each(|r| write(out, v, r));
        }
    }
}
