//! RESP replies: encoders for both protocol versions (the server), and a
//! frame parser (the load generator and tests).
//!
//! Encoders append to a caller's `Vec<u8>`. Aggregates are written as a
//! header followed by their elements, so nothing is built in memory first.

use std::io::Write as _;

use super::Version;
use super::request::Command;
use crate::number::{parse_i64, write_i64, write_usize};

/// Appends `bytes` with `\r` and `\n` replaced by spaces, so a status or
/// error line can never break the framing (Redis does the same for errors).
fn push_line(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend(bytes.iter().map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }));
}

fn header(out: &mut Vec<u8>, kind: u8, n: usize) {
    out.push(kind);
    write_usize(out, n);
    out.extend_from_slice(b"\r\n");
}

/// Appends a simple string: `+OK\r\n`.
pub fn write_simple(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'+');
    push_line(out, s);
    out.extend_from_slice(b"\r\n");
}

/// Appends an error: `-<message>\r\n`. `message` starts with its code, as in
/// Redis: `ERR unknown command 'foo'…`, `WRONGTYPE …`.
pub fn write_error(out: &mut Vec<u8>, message: &[u8]) {
    out.push(b'-');
    push_line(out, message);
    out.extend_from_slice(b"\r\n");
}

/// Appends an integer: `:<n>\r\n`.
pub fn write_integer(out: &mut Vec<u8>, n: i64) {
    out.push(b':');
    write_i64(out, n);
    out.extend_from_slice(b"\r\n");
}

/// Appends a bulk string's header, `$<len>\r\n`: the data and its `\r\n` follow.
pub fn write_bulk_header(out: &mut Vec<u8>, len: usize) {
    header(out, b'$', len);
}

/// Appends a bulk string: `$<len>\r\n<data>\r\n`.
pub fn write_bulk(out: &mut Vec<u8>, data: &[u8]) {
    header(out, b'$', data.len());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// Appends a null: `$-1\r\n` in RESP2 (the null bulk string), `_\r\n` in
/// RESP3.
pub fn write_null(out: &mut Vec<u8>, version: Version) {
    out.extend_from_slice(match version {
        Version::Resp2 => b"$-1\r\n",
        Version::Resp3 => b"_\r\n",
    });
}

/// Appends a null array: `*-1\r\n` in RESP2, `_\r\n` in RESP3.
pub fn write_null_array(out: &mut Vec<u8>, version: Version) {
    out.extend_from_slice(match version {
        Version::Resp2 => b"*-1\r\n",
        Version::Resp3 => b"_\r\n",
    });
}

/// Appends an array header: `*<n>\r\n`; `n` elements follow.
pub fn write_array_header(out: &mut Vec<u8>, n: usize) {
    header(out, b'*', n);
}

/// Appends a map header: `%<n>\r\n` in RESP3, `*<2n>\r\n` in RESP2; `n`
/// key-value pairs follow.
pub fn write_map_header(out: &mut Vec<u8>, version: Version, n: usize) {
    match version {
        Version::Resp2 => header(out, b'*', n.saturating_mul(2)),
        Version::Resp3 => header(out, b'%', n),
    }
}

/// Appends a set header: `~<n>\r\n` in RESP3, `*<n>\r\n` in RESP2.
pub fn write_set_header(out: &mut Vec<u8>, version: Version, n: usize) {
    match version {
        Version::Resp2 => header(out, b'*', n),
        Version::Resp3 => header(out, b'~', n),
    }
}

/// Appends a push header: `><n>\r\n` in RESP3, `*<n>\r\n` in RESP2.
pub fn write_push_header(out: &mut Vec<u8>, version: Version, n: usize) {
    match version {
        Version::Resp2 => header(out, b'*', n),
        Version::Resp3 => header(out, b'>', n),
    }
}

/// Appends a double: `,<v>\r\n` in RESP3, a bulk string in RESP2. The text
/// is the shortest decimal that reads back as `v`; infinities are `inf` and
/// `-inf`, NaN is `nan`.
pub fn write_double(out: &mut Vec<u8>, version: Version, v: f64) {
    // The longest `Display` form of an `f64` (the smallest subnormal written
    // out in full) is under 330 bytes.
    let mut buf = [0u8; 400];
    let len = {
        let mut cursor = &mut buf[..];
        let before = cursor.len();
        let written = if v.is_nan() {
            cursor.write_all(b"nan")
        } else if v.is_infinite() {
            cursor.write_all(if v > 0.0 { b"inf" } else { b"-inf" })
        } else {
            write!(cursor, "{v}")
        };
        // Writing into a 400-byte buffer cannot run out of room.
        debug_assert!(written.is_ok());
        before - cursor.len()
    };
    let text = &buf[..len];
    match version {
        Version::Resp2 => write_bulk(out, text),
        Version::Resp3 => {
            out.push(b',');
            out.extend_from_slice(text);
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// Appends a boolean: `#t\r\n`/`#f\r\n` in RESP3, `:1\r\n`/`:0\r\n` in RESP2.
pub fn write_boolean(out: &mut Vec<u8>, version: Version, b: bool) {
    out.extend_from_slice(match (version, b) {
        (Version::Resp2, true) => b":1\r\n",
        (Version::Resp2, false) => b":0\r\n",
        (Version::Resp3, true) => b"#t\r\n",
        (Version::Resp3, false) => b"#f\r\n",
    });
}

/// Appends a verbatim string: `=<len>\r\n<fmt>:<text>\r\n` in RESP3 (`fmt`
/// is `txt` or `mkd`), a bulk string of `text` alone in RESP2.
pub fn write_verbatim(out: &mut Vec<u8>, version: Version, format: &[u8; 3], text: &[u8]) {
    match version {
        Version::Resp2 => write_bulk(out, text),
        Version::Resp3 => {
            header(out, b'=', text.len() + 4);
            out.extend_from_slice(format);
            out.push(b':');
            out.extend_from_slice(text);
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// Appends a big number: `(<digits>\r\n` in RESP3, a bulk string in RESP2.
pub fn write_big_number(out: &mut Vec<u8>, version: Version, digits: &[u8]) {
    match version {
        Version::Resp2 => write_bulk(out, digits),
        Version::Resp3 => {
            out.push(b'(');
            push_line(out, digits);
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// Appends a blob error: `!<len>\r\n<message>\r\n` in RESP3, a plain error
/// line in RESP2.
pub fn write_blob_error(out: &mut Vec<u8>, version: Version, message: &[u8]) {
    match version {
        Version::Resp2 => write_error(out, message),
        Version::Resp3 => {
            header(out, b'!', message.len());
            out.extend_from_slice(message);
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// Appends Redis 7's reply to an unknown command:
/// `-ERR unknown command '<name>', with args beginning with: '<a1>' '<a2>' \r\n`
/// (the name cut at 128 bytes, the quoted arguments at about 128 bytes in
/// all, a trailing space after each, newlines replaced by spaces).
pub fn write_unknown_command(out: &mut Vec<u8>, command: &Command<'_>) {
    /// `%.Ns` in C stops at a NUL as well as at N bytes.
    fn c_str(s: &[u8], max: usize) -> &[u8] {
        let s = &s[..s.len().min(max)];
        s.iter().position(|&c| c == 0).map_or(s, |nul| &s[..nul])
    }
    out.extend_from_slice(b"-ERR unknown command '");
    push_line(out, c_str(command.name(), 128));
    out.extend_from_slice(b"', with args beginning with: ");
    let mut args_len = 0;
    for arg in command.iter().skip(1) {
        if args_len >= 128 {
            break;
        }
        let arg = c_str(arg, 128 - args_len);
        out.push(b'\'');
        push_line(out, arg);
        out.extend_from_slice(b"' ");
        args_len += arg.len() + 3;
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends Redis 7's arity error:
/// `-ERR wrong number of arguments for '<name>' command\r\n`, with the name
/// in lower case as Redis prints it.
pub fn write_wrong_arity(out: &mut Vec<u8>, name: &[u8]) {
    out.extend_from_slice(b"-ERR wrong number of arguments for '");
    let start = out.len();
    push_line(out, name);
    out[start..].make_ascii_lowercase();
    out.extend_from_slice(b"' command\r\n");
}

/// One RESP frame: a whole scalar, or the header of an aggregate whose
/// elements are the next frames (a map's `n` counts pairs; an attribute
/// precedes the value it annotates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// `+…`
    Simple(&'a [u8]),
    /// `-…`
    Error(&'a [u8]),
    /// `:…`
    Integer(i64),
    /// `$<len>` and its data.
    Bulk(&'a [u8]),
    /// `$-1`, RESP2's null.
    NullBulk,
    /// `*-1`, RESP2's null array.
    NullArray,
    /// `_`, RESP3's null.
    Null,
    /// `,…`, kept as text (it always parses as an `f64`).
    Double(&'a [u8]),
    /// `#t` / `#f`.
    Boolean(bool),
    /// `!<len>` and its message.
    BlobError(&'a [u8]),
    /// `=<len>` with its three-byte format and its text.
    Verbatim {
        /// `txt` or `mkd`.
        format: &'a [u8],
        /// The text after `fmt:`.
        text: &'a [u8],
    },
    /// `(…`, an integer of any size.
    BigNumber(&'a [u8]),
    /// `*<n>`: `n` elements follow.
    Array(usize),
    /// `%<n>`: `n` key-value pairs follow.
    Map(usize),
    /// `~<n>`: `n` elements follow.
    Set(usize),
    /// `|<n>`: `n` key-value pairs follow, then the annotated value.
    Attribute(usize),
    /// `><n>`: `n` elements follow.
    Push(usize),
}

/// Why [`parse_frame`] or [`value_len`] returned nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameError {
    /// More input is needed.
    Incomplete,
    /// The bytes are not RESP.
    Invalid,
}

/// Reads `len` bytes of data and their `\r\n` starting at `at`.
fn blob(buf: &[u8], at: usize, len: usize) -> Result<(&[u8], usize), FrameError> {
    let end = at.checked_add(len).and_then(|e| e.checked_add(2)).ok_or(FrameError::Invalid)?;
    let block = buf.get(at..end).ok_or(FrameError::Incomplete)?;
    let (data, crlf) = block.split_at(len);
    if crlf != b"\r\n" {
        return Err(FrameError::Invalid);
    }
    Ok((data, end))
}

/// Parses one frame from the start of `buf`, returning it and the bytes it
/// used. Aggregates return only their header.
pub fn parse_frame(buf: &[u8]) -> Result<(Frame<'_>, usize), FrameError> {
    let newline = buf.iter().position(|&c| c == b'\n').ok_or(FrameError::Incomplete)?;
    let line = buf[..newline].strip_suffix(b"\r").ok_or(FrameError::Invalid)?;
    let (&kind, body) = line.split_first().ok_or(FrameError::Invalid)?;
    let line_len = newline + 1;
    let number = || parse_i64(body).ok_or(FrameError::Invalid);
    // A length: -1 for null, else non-negative.
    let length = || -> Result<Option<usize>, FrameError> {
        match number()? {
            -1 => Ok(None),
            n => usize::try_from(n).map(Some).map_err(|_| FrameError::Invalid),
        }
    };
    let count = || length()?.ok_or(FrameError::Invalid);
    let frame = match kind {
        b'+' => Frame::Simple(body),
        b'-' => Frame::Error(body),
        b':' => Frame::Integer(number()?),
        b'$' => match length()? {
            None => Frame::NullBulk,
            Some(len) => {
                let (data, end) = blob(buf, line_len, len)?;
                return Ok((Frame::Bulk(data), end));
            }
        },
        b'!' => {
            let (data, end) = blob(buf, line_len, count()?)?;
            return Ok((Frame::BlobError(data), end));
        }
        b'=' => {
            let (data, end) = blob(buf, line_len, count()?)?;
            let (format, text) = match data {
                [_, _, _, b':', ..] => (&data[..3], &data[4..]),
                _ => return Err(FrameError::Invalid),
            };
            return Ok((Frame::Verbatim { format, text }, end));
        }
        b'*' => match length()? {
            None => Frame::NullArray,
            Some(n) => Frame::Array(n),
        },
        b'_' if body.is_empty() => Frame::Null,
        b',' => {
            let valid = std::str::from_utf8(body).is_ok_and(|s| s.parse::<f64>().is_ok());
            if !valid {
                return Err(FrameError::Invalid);
            }
            Frame::Double(body)
        }
        b'#' => match body {
            b"t" => Frame::Boolean(true),
            b"f" => Frame::Boolean(false),
            _ => return Err(FrameError::Invalid),
        },
        b'(' => {
            let digits = body.strip_prefix(b"-").unwrap_or(body);
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return Err(FrameError::Invalid);
            }
            Frame::BigNumber(body)
        }
        b'%' => Frame::Map(count()?),
        b'~' => Frame::Set(count()?),
        b'|' => Frame::Attribute(count()?),
        b'>' => Frame::Push(count()?),
        _ => return Err(FrameError::Invalid),
    };
    Ok((frame, line_len))
}

/// The length in bytes of the complete value at the start of `buf`, nested
/// aggregates and attributes included: how a client knows a whole reply has
/// arrived. Iterative, so deep nesting cannot overflow the stack.
pub fn value_len(buf: &[u8]) -> Result<usize, FrameError> {
    let mut pos = 0;
    // Values still to read.
    let mut pending: usize = 1;
    while pending > 0 {
        let (frame, n) = parse_frame(&buf[pos..])?;
        pos += n;
        pending -= 1;
        let more = match frame {
            Frame::Array(k) | Frame::Set(k) | Frame::Push(k) => Some(k),
            Frame::Map(k) => k.checked_mul(2),
            // The attribute's pairs, then the value it annotates.
            Frame::Attribute(k) => k.checked_mul(2).and_then(|k| k.checked_add(1)),
            _ => Some(0),
        };
        pending = more.and_then(|m| pending.checked_add(m)).ok_or(FrameError::Invalid)?;
    }
    Ok(pos)
}

impl Frame<'_> {
    /// Appends the wire form of this frame (aggregates: the header only).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let line = |out: &mut Vec<u8>, kind: u8, body: &[u8]| {
            out.push(kind);
            out.extend_from_slice(body);
            out.extend_from_slice(b"\r\n");
        };
        match *self {
            Self::Simple(s) => line(out, b'+', s),
            Self::Error(s) => line(out, b'-', s),
            Self::Integer(n) => write_integer(out, n),
            Self::Bulk(data) => write_bulk(out, data),
            Self::NullBulk => out.extend_from_slice(b"$-1\r\n"),
            Self::NullArray => out.extend_from_slice(b"*-1\r\n"),
            Self::Null => out.extend_from_slice(b"_\r\n"),
            Self::Double(text) => line(out, b',', text),
            Self::Boolean(b) => write_boolean(out, Version::Resp3, b),
            Self::BlobError(m) => write_blob_error(out, Version::Resp3, m),
            Self::Verbatim { format, text } => {
                header(out, b'=', text.len() + format.len() + 1);
                out.extend_from_slice(format);
                out.push(b':');
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            }
            Self::BigNumber(digits) => line(out, b'(', digits),
            Self::Array(n) => header(out, b'*', n),
            Self::Map(n) => header(out, b'%', n),
            Self::Set(n) => header(out, b'~', n),
            Self::Attribute(n) => header(out, b'|', n),
            Self::Push(n) => header(out, b'>', n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(mut buf: &[u8]) -> Vec<Frame<'_>> {
        let mut out = Vec::new();
        while !buf.is_empty() {
            let (f, n) = parse_frame(buf).unwrap();
            out.push(f);
            buf = &buf[n..];
        }
        out
    }

    #[test]
    fn scalars_encode_like_redis() {
        let mut out = Vec::new();
        write_simple(&mut out, b"OK");
        write_error(&mut out, b"ERR unknown command 'x'");
        write_integer(&mut out, -42);
        write_bulk(&mut out, b"hi");
        write_bulk(&mut out, b"");
        assert_eq!(out, b"+OK\r\n-ERR unknown command 'x'\r\n:-42\r\n$2\r\nhi\r\n$0\r\n\r\n");
        out.clear();
        write_error(&mut out, b"ERR a\r\nb");
        assert_eq!(out, b"-ERR a  b\r\n", "newlines cannot break the framing");
    }

    #[test]
    fn unknown_command_has_redis_7_wording() {
        let input = b"*3\r\n$3\r\nFOO\r\n$1\r\na\r\n$3\r\nb\nc\r\n";
        let mut args = super::super::Args::new();
        super::super::parse_command(input, &super::super::Limits::default(), &mut args).unwrap();
        let mut out = Vec::new();
        write_unknown_command(&mut out, &args.command(input));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "-ERR unknown command 'FOO', with args beginning with: 'a' 'b c' \r\n"
        );
        let input = b"*1\r\n$3\r\nFOO\r\n";
        super::super::parse_command(input, &super::super::Limits::default(), &mut args).unwrap();
        let mut out = Vec::new();
        write_unknown_command(&mut out, &args.command(input));
        assert_eq!(out, b"-ERR unknown command 'FOO', with args beginning with: \r\n");
        let long = vec![b'x'; 300];
        let input = [&b"*3\r\n$3\r\nFOO\r\n$300\r\n"[..], &long, b"\r\n$1\r\ny\r\n"].concat();
        super::super::parse_command(&input, &super::super::Limits::default(), &mut args).unwrap();
        let mut out = Vec::new();
        write_unknown_command(&mut out, &args.command(&input));
        let expected = format!(
            "-ERR unknown command 'FOO', with args beginning with: '{}' \r\n",
            "x".repeat(128)
        );
        assert_eq!(String::from_utf8(out).unwrap(), expected, "arguments stop after 128 bytes");
        let mut out = Vec::new();
        write_wrong_arity(&mut out, b"GET");
        assert_eq!(out, b"-ERR wrong number of arguments for 'get' command\r\n");
    }

    #[test]
    fn resp2_falls_back_like_redis() {
        let v = Version::Resp2;
        let mut out = Vec::new();
        write_null(&mut out, v);
        write_null_array(&mut out, v);
        write_map_header(&mut out, v, 2);
        write_set_header(&mut out, v, 3);
        write_push_header(&mut out, v, 1);
        write_boolean(&mut out, v, true);
        write_boolean(&mut out, v, false);
        write_double(&mut out, v, 1.5);
        write_verbatim(&mut out, v, b"txt", b"info");
        write_big_number(&mut out, v, b"123");
        write_blob_error(&mut out, v, b"ERR x");
        assert_eq!(
            out,
            &b"$-1\r\n*-1\r\n*4\r\n*3\r\n*1\r\n:1\r\n:0\r\n$3\r\n1.5\r\n$4\r\ninfo\r\n\
               $3\r\n123\r\n-ERR x\r\n"[..]
        );
    }

    #[test]
    fn resp3_types_encode() {
        let v = Version::Resp3;
        let mut out = Vec::new();
        write_null(&mut out, v);
        write_null_array(&mut out, v);
        write_map_header(&mut out, v, 2);
        write_set_header(&mut out, v, 3);
        write_push_header(&mut out, v, 1);
        write_boolean(&mut out, v, true);
        write_boolean(&mut out, v, false);
        write_double(&mut out, v, 1.5);
        write_double(&mut out, v, f64::INFINITY);
        write_double(&mut out, v, f64::NEG_INFINITY);
        write_double(&mut out, v, f64::NAN);
        write_double(&mut out, v, 3.0);
        write_verbatim(&mut out, v, b"txt", b"info");
        write_big_number(&mut out, v, b"-123");
        write_blob_error(&mut out, v, b"ERR x");
        assert_eq!(
            out,
            &b"_\r\n_\r\n%2\r\n~3\r\n>1\r\n#t\r\n#f\r\n,1.5\r\n,inf\r\n,-inf\r\n,nan\r\n,3\r\n\
               =8\r\ntxt:info\r\n(-123\r\n!5\r\nERR x\r\n"[..]
        );
    }

    #[test]
    fn extreme_doubles_fit_the_stack_buffer() {
        for v in [f64::MIN_POSITIVE, 5e-324, f64::MAX, f64::MIN, -0.0, 0.1 + 0.2] {
            let mut out = Vec::new();
            write_double(&mut out, Version::Resp3, v);
            let (Frame::Double(text), _) = parse_frame(&out).unwrap() else { panic!() };
            let back: f64 = std::str::from_utf8(text).unwrap().parse().unwrap();
            assert_eq!(back.to_bits(), v.to_bits());
        }
    }

    #[test]
    fn frames_parse_and_round_trip() {
        let wire = b"+OK\r\n-ERR x\r\n:7\r\n$3\r\nabc\r\n$-1\r\n*-1\r\n_\r\n,1.5\r\n#t\r\n\
            !3\r\nbad\r\n=8\r\ntxt:info\r\n(12345678901234567890\r\n*2\r\n%1\r\n~0\r\n|1\r\n>2\r\n";
        let parsed = frames(wire);
        assert_eq!(parsed[3], Frame::Bulk(b"abc"));
        assert_eq!(parsed[10], Frame::Verbatim { format: b"txt", text: b"info" });
        assert_eq!(parsed[12], Frame::Array(2));
        let mut out = Vec::new();
        for f in &parsed {
            f.encode(&mut out);
        }
        assert_eq!(out, wire);
    }

    #[test]
    fn value_len_spans_nested_aggregates() {
        let wire = b"*2\r\n%1\r\n+k\r\n*1\r\n:1\r\n|1\r\n+a\r\n+b\r\n$1\r\nx\r\n+next\r\n";
        let len = wire.len() - b"+next\r\n".len();
        assert_eq!(value_len(wire), Ok(len));
        for i in 0..len {
            assert_eq!(value_len(&wire[..i]), Err(FrameError::Incomplete), "{i}");
        }
        assert_eq!(value_len(b"*0\r\n"), Ok(4));
        assert_eq!(
            value_len(b"*9223372036854775807\r\n%9223372036854775807\r\n"),
            Err(FrameError::Invalid)
        );
    }

    #[test]
    fn garbage_frames_are_invalid() {
        for bad in [
            &b"OK\r\n"[..],
            b"\r\n",
            b"+OK\n",
            b":x\r\n",
            b"$-2\r\n",
            b"$3\r\nabcd\r\n",
            b"*-2\r\n",
            b"%-1\r\n",
            b",abc\r\n",
            b"#x\r\n",
            b"(12a\r\n",
            b"=3\r\ntxt\r\n",
            b"_x\r\n",
        ] {
            assert_eq!(parse_frame(bad), Err(FrameError::Invalid), "{bad:?}");
        }
    }
}
