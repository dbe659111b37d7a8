//! RESP command parser.
//!
//! - Raw bytes under random limits, parsed as a pipeline: every command
//!   respects the limits, consumes no more than it was given, re-encodes (as
//!   multibulk) to bytes that parse back to the same arguments, and every
//!   strict prefix of its bytes is `Incomplete`; the keys `waiting_get_keys`
//!   finds ahead are those of the `GET` commands the parser reads there.
//! - Structured commands: multibulk `encode_command` → parse, plain inline
//!   words, and quoted inline arguments with every byte escaped, all give
//!   back the same arguments.
#![no_main]

use arbitrary::Arbitrary;
use fridge_proto::resp::{
    Args, Limits, ParseError, encode_command, parse_command, waiting_get_keys,
};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct FuzzLimits {
    multibulk: u8,
    bulk: u16,
    inline: u16,
}

#[derive(Arbitrary, Debug)]
enum Input {
    Raw { limits: Option<FuzzLimits>, data: Vec<u8> },
    Multibulk(Vec<Vec<u8>>),
    Inline(Vec<Vec<u8>>),
    Quoted { args: Vec<Vec<u8>>, single: bool },
}

const UNLIMITED: Limits =
    Limits { max_multibulk_len: usize::MAX, max_bulk_len: usize::MAX, max_inline_len: usize::MAX };

fuzz_target!(|input: Input| {
    let mut args = Args::new();
    match input {
        Input::Raw { limits, data } => {
            let limits = limits.map_or_else(Limits::default, |l| Limits {
                max_multibulk_len: usize::from(l.multibulk),
                max_bulk_len: usize::from(l.bulk),
                max_inline_len: usize::from(l.inline),
            });
            check_raw(&data, &limits, &mut args);
        }
        Input::Multibulk(expected) => {
            let refs: Vec<&[u8]> = expected.iter().map(Vec::as_slice).collect();
            let mut wire = Vec::new();
            encode_command(&mut wire, &refs);
            check_parses_to(&wire, &refs, &mut args);
        }
        Input::Inline(words) => {
            // Words of printable, non-space, non-quote bytes.
            let words: Vec<Vec<u8>> = words
                .into_iter()
                .map(|w| {
                    w.into_iter()
                        .filter(|c| c.is_ascii_graphic() && *c != b'"' && *c != b'\'')
                        .collect::<Vec<u8>>()
                })
                .filter(|w| !w.is_empty())
                .collect();
            // A request starting with `*` is multibulk, not inline.
            if words.first().is_some_and(|w| w[0] == b'*') {
                return;
            }
            let mut wire = words.join(&b' ');
            wire.extend_from_slice(b"\r\n");
            let refs: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
            check_parses_to(&wire, &refs, &mut args);
        }
        Input::Quoted { args: expected, single } => {
            let mut wire = Vec::new();
            for (i, arg) in expected.iter().enumerate() {
                if i > 0 {
                    wire.push(b' ');
                }
                if single {
                    // Single quotes only escape `'`; NUL would end the C string.
                    if arg.contains(&0) || arg.ends_with(b"\\") {
                        return;
                    }
                    wire.push(b'\'');
                    for &c in arg {
                        if c == b'\'' {
                            wire.extend_from_slice(b"\\'");
                        } else {
                            wire.push(c);
                        }
                    }
                    wire.push(b'\'');
                } else {
                    wire.push(b'"');
                    for &c in arg {
                        match c {
                            b'"' => wire.extend_from_slice(b"\\\""),
                            b'\\' => wire.extend_from_slice(b"\\\\"),
                            b'\n' => wire.extend_from_slice(b"\\n"),
                            b' '..=b'~' => wire.push(c),
                            _ => wire.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
                        }
                    }
                    wire.push(b'"');
                }
            }
            if single && wire.contains(&b'\n') {
                return;
            }
            wire.extend_from_slice(b"\r\n");
            let refs: Vec<&[u8]> = expected.iter().map(Vec::as_slice).collect();
            check_parses_to(&wire, &refs, &mut args);
        }
    }
});

fn check_prefixes(bytes: &[u8], limits: &Limits, args: &mut Args) {
    let n = bytes.len();
    let step = (n / 128).max(1);
    let mut i = 0;
    while i < n {
        assert_eq!(
            parse_command(&bytes[..i], limits, args),
            Err(ParseError::Incomplete),
            "prefix {i}"
        );
        i += if n - i <= 4 { 1 } else { step };
    }
}

fn check_parses_to(wire: &[u8], expected: &[&[u8]], args: &mut Args) {
    let n = parse_command(wire, &UNLIMITED, args)
        .unwrap_or_else(|e| panic!("{e:?}: {:?}", String::from_utf8_lossy(wire)));
    assert_eq!(n, wire.len());
    let got: Vec<&[u8]> = args.command(wire).iter().collect();
    assert_eq!(got, expected, "{:?}", String::from_utf8_lossy(wire));
    check_prefixes(wire, &UNLIMITED, args);
}

/// Each key found ahead in `buf` is the argument of the next command the parser reads (with
/// no limits: the look-ahead checks none), a `GET` of that key alone, of the same bytes.
fn check_waiting_gets(buf: &[u8], args: &mut Args) {
    let mut keys = waiting_get_keys(buf);
    let mut at = 0;
    while let Some(key) = keys.next() {
        let end = buf.len() - keys.remainder().len();
        let n = parse_command(&buf[at..], &UNLIMITED, args).expect("a whole GET parses");
        assert_eq!(n, end - at);
        let cmd = args.command(&buf[at..]);
        let got: Vec<&[u8]> = cmd.iter().collect();
        assert_eq!(got.len(), 2);
        assert!(got[0].eq_ignore_ascii_case(b"GET"));
        assert_eq!(got[1], key);
        at = end;
    }
}

fn check_raw(data: &[u8], limits: &Limits, args: &mut Args) {
    check_waiting_gets(data, args);
    let mut again = Args::new();
    let mut pos = 0;
    while pos < data.len() {
        let buf = &data[pos..];
        match parse_command(buf, limits, args) {
            Ok(n) => {
                assert!(n > 0 && n <= buf.len());
                let cmd = args.command(buf);
                let got: Vec<&[u8]> = cmd.iter().collect();
                assert_eq!(got.len(), cmd.len());
                if buf[0] == b'*' {
                    assert!(got.len() <= limits.max_multibulk_len);
                    assert!(got.iter().all(|a| a.len() <= limits.max_bulk_len));
                } else {
                    assert!(n <= limits.max_inline_len + 1);
                }
                let mut wire = Vec::new();
                encode_command(&mut wire, &got);
                if got.is_empty() {
                    assert_eq!(wire, b"*0\r\n");
                }
                assert_eq!(parse_command(&wire, &UNLIMITED, &mut again), Ok(wire.len()));
                let back: Vec<&[u8]> = again.command(&wire).iter().collect();
                assert_eq!(back, got);
                let consumed = &buf[..n];
                let snapshot: Vec<Vec<u8>> = got.iter().map(|a| a.to_vec()).collect();
                check_prefixes(consumed, limits, &mut again);
                assert_eq!(parse_command(consumed, limits, &mut again), Ok(n));
                let replay: Vec<Vec<u8>> =
                    again.command(consumed).iter().map(<[u8]>::to_vec).collect();
                assert_eq!(replay, snapshot, "parsing is deterministic");
                pos += n;
            }
            Err(ParseError::Incomplete) => break,
            Err(ParseError::Protocol(e)) => {
                let mut reply = Vec::new();
                e.write_reply(&mut reply);
                assert!(reply.starts_with(b"-ERR Protocol error: "));
                assert!(reply.ends_with(b"\r\n"));
                assert_eq!(reply.iter().filter(|&&c| c == b'\n').count(), 1);
                assert!(e.closes());
                break;
            }
        }
    }
}
