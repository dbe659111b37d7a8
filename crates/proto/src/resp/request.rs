//! RESP requests: the multibulk and inline parsers, the argument holder, and
//! the command encoder.

use std::ops::Range;

use super::{Limits, ParseError, ProtocolError};
use crate::number::{parse_redis_i64, write_usize};

/// Redis never reserves room for more arguments than this up front, however
/// many a `*<n>` line announces; the vector grows as arguments arrive.
const INITIAL_ARGS: usize = 1024;

/// The arguments of the last parsed command, as ranges into the parsed
/// buffer (or, for inline arguments with quotes, into an internal scratch
/// buffer). Keep one per connection and reuse it: after warm-up a parse
/// allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct Args {
    ranges: Vec<Range<usize>>,
    /// Unescaped inline arguments, when the line had quotes.
    scratch: Vec<u8>,
    /// Whether `ranges` index `scratch` rather than the parsed buffer.
    in_scratch: bool,
}

impl Args {
    /// An empty holder.
    pub fn new() -> Self {
        Self::default()
    }

    fn clear(&mut self) {
        self.ranges.clear();
        self.scratch.clear();
        self.in_scratch = false;
    }

    /// Number of arguments, the command name included.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether the last request had no argument (nothing to run).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The arguments, resolved against `buf`, which must be the buffer given
    /// to the [`parse_command`] call that filled them.
    pub fn command<'a>(&'a self, buf: &'a [u8]) -> Command<'a> {
        let src = if self.in_scratch { &self.scratch[..] } else { buf };
        Command { src, ranges: &self.ranges }
    }
}

/// A parsed command: its arguments, borrowed. `get(0)` is the name.
#[derive(Clone, Copy, Debug)]
pub struct Command<'a> {
    src: &'a [u8],
    ranges: &'a [Range<usize>],
}

impl<'a> Command<'a> {
    /// Number of arguments, the name included.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether there is no argument.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Argument `i` (0 is the command name).
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        self.ranges.get(i).and_then(|r| self.src.get(r.clone()))
    }

    /// The command name, empty if there is none.
    pub fn name(&self) -> &'a [u8] {
        self.get(0).unwrap_or_default()
    }

    /// Whether the command name is `name`, ignoring ASCII case.
    pub fn is(&self, name: &[u8]) -> bool {
        eq_ignore_ascii_case(self.name(), name)
    }

    /// The arguments in order, the name first.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let src = self.src;
        self.ranges.iter().map(move |r| src.get(r.clone()).unwrap_or_default())
    }
}

/// ASCII case-insensitive comparison, for command names and options.
pub fn eq_ignore_ascii_case(a: &[u8], b: &[u8]) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// Parses one request from the start of `buf` into `args`, returning the
/// bytes it used.
///
/// `args` is cleared first. An empty `args` after `Ok` means the request had
/// no argument: consume it and reply nothing. On
/// [`ParseError::Incomplete`] nothing is consumed and `args` is unspecified.
pub fn parse_command(buf: &[u8], limits: &Limits, args: &mut Args) -> Result<usize, ParseError> {
    args.clear();
    match buf.first() {
        None => Err(ParseError::Incomplete),
        Some(b'*') => parse_multibulk(buf, limits, args),
        Some(_) => parse_inline(buf, limits, args),
    }
}

/// Finds the `\r` that ends a header line starting at `start`, the way Redis
/// does (`strchr(…, '\r')`, then trusting the next byte to be `\n`). Returns
/// its index; `Incomplete` while the line may still arrive; `too_big` once
/// more than `max` bytes have come without one.
fn header_end(
    buf: &[u8],
    start: usize,
    max: usize,
    too_big: ProtocolError,
) -> Result<usize, ParseError> {
    let rest = &buf[start..];
    let window = &rest[..rest.len().min(max.saturating_add(1))];
    match window.iter().position(|&c| c == b'\r') {
        Some(i) if start + i + 1 < buf.len() => Ok(start + i),
        Some(_) => Err(ParseError::Incomplete),
        None if rest.len() > max => Err(ParseError::Protocol(too_big)),
        None => Err(ParseError::Incomplete),
    }
}

fn parse_multibulk(buf: &[u8], limits: &Limits, args: &mut Args) -> Result<usize, ParseError> {
    let cr = header_end(buf, 0, limits.max_inline_len, ProtocolError::TooBigMultibulkCount)?;
    let count = match parse_redis_i64(&buf[1..cr]) {
        Some(n) if n <= i64::try_from(limits.max_multibulk_len).unwrap_or(i64::MAX) => n,
        _ => return Err(ParseError::Protocol(ProtocolError::InvalidMultibulkLength)),
    };
    let mut pos = cr + 2;
    // `*0` and `*-1` are requests with no argument.
    let count = usize::try_from(count).unwrap_or(0);
    args.ranges.reserve(count.min(INITIAL_ARGS));
    for _ in 0..count {
        if pos >= buf.len() {
            return Err(ParseError::Incomplete);
        }
        let cr = header_end(buf, pos, limits.max_inline_len, ProtocolError::TooBigBulkCount)?;
        if buf[pos] != b'$' {
            return Err(ParseError::Protocol(ProtocolError::ExpectedDollar(buf[pos])));
        }
        let len = parse_redis_i64(&buf[pos + 1..cr])
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n <= limits.max_bulk_len)
            .ok_or(ParseError::Protocol(ProtocolError::InvalidBulkLength))?;
        let start = cr + 2;
        // Like Redis, the two bytes after the argument are skipped unchecked.
        let end = start + len + 2;
        if end > buf.len() {
            return Err(ParseError::Incomplete);
        }
        args.ranges.push(start..start + len);
        pos = end;
    }
    Ok(pos)
}

/// C's `isspace`, which Redis's `sdssplitargs` skips between arguments.
const fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn parse_inline(buf: &[u8], limits: &Limits, args: &mut Args) -> Result<usize, ParseError> {
    let window = &buf[..buf.len().min(limits.max_inline_len.saturating_add(1))];
    let newline = match window.iter().position(|&c| c == b'\n') {
        Some(i) => i,
        None if buf.len() > limits.max_inline_len => {
            return Err(ParseError::Protocol(ProtocolError::TooBigInline));
        }
        None => return Err(ParseError::Incomplete),
    };
    let mut line = &buf[..newline];
    if let Some(stripped) = line.strip_suffix(b"\r") {
        line = stripped;
    }
    // `sdssplitargs` works on a C string: a NUL ends the line.
    if let Some(nul) = line.iter().position(|&c| c == 0) {
        line = &line[..nul];
    }
    if line.iter().any(|&c| c == b'"' || c == b'\'') {
        split_quoted(line, args)?;
    } else {
        split_plain(line, args);
    }
    Ok(newline + 1)
}

/// Splits an inline line without quotes: ranges point into the line, which
/// starts at offset 0 of the parsed buffer.
fn split_plain(line: &[u8], args: &mut Args) {
    let mut p = 0;
    loop {
        while p < line.len() && is_space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return;
        }
        let start = p;
        while p < line.len() && !matches!(line[p], b' ' | b'\n' | b'\r' | b'\t') {
            p += 1;
        }
        args.ranges.push(start..p);
    }
}

const fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Splits an inline line with quotes the way Redis's `sdssplitargs` does,
/// unescaping into `args.scratch`.
fn split_quoted(line: &[u8], args: &mut Args) -> Result<(), ParseError> {
    let unbalanced = Err(ParseError::Protocol(ProtocolError::UnbalancedQuotes));
    args.in_scratch = true;
    let at = |i: usize| line.get(i).copied();
    let mut p = 0;
    loop {
        while at(p).is_some_and(is_space) {
            p += 1;
        }
        if p >= line.len() {
            return Ok(());
        }
        let start = args.scratch.len();
        let (mut in_double, mut in_single) = (false, false);
        loop {
            let c = at(p);
            if in_double {
                match c {
                    None => return unbalanced,
                    Some(b'\\') if at(p + 1) == Some(b'x') => {
                        match (at(p + 2).and_then(hex_value), at(p + 3).and_then(hex_value)) {
                            (Some(hi), Some(lo)) => {
                                args.scratch.push(hi * 16 + lo);
                                p += 3;
                            }
                            _ => {
                                args.scratch.push(b'x');
                                p += 1;
                            }
                        }
                    }
                    Some(b'\\') if p + 1 < line.len() => {
                        p += 1;
                        args.scratch.push(match line[p] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                    }
                    Some(b'"') => {
                        // A closing quote must be followed by a space or the end.
                        if at(p + 1).is_some_and(|n| !is_space(n)) {
                            return unbalanced;
                        }
                        p += 1;
                        break;
                    }
                    Some(other) => args.scratch.push(other),
                }
            } else if in_single {
                match c {
                    None => return unbalanced,
                    Some(b'\\') if at(p + 1) == Some(b'\'') => {
                        p += 1;
                        args.scratch.push(b'\'');
                    }
                    Some(b'\'') => {
                        if at(p + 1).is_some_and(|n| !is_space(n)) {
                            return unbalanced;
                        }
                        p += 1;
                        break;
                    }
                    Some(other) => args.scratch.push(other),
                }
            } else {
                match c {
                    None => break,
                    Some(b' ' | b'\n' | b'\r' | b'\t') => {
                        p += 1;
                        break;
                    }
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(other) => args.scratch.push(other),
                }
            }
            p += 1;
        }
        args.ranges.push(start..args.scratch.len());
    }
}

/// Appends a command as a multibulk request: `*<n>\r\n` then each argument
/// as `$<len>\r\n<bytes>\r\n`.
pub fn encode_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.push(b'*');
    write_usize(out, args.len());
    out.extend_from_slice(b"\r\n");
    for arg in args {
        out.push(b'$');
        write_usize(out, arg.len());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_with(input: &[u8], limits: &Limits) -> Result<(Vec<Vec<u8>>, usize), ParseError> {
        let mut args = Args::new();
        let n = parse_command(input, limits, &mut args)?;
        Ok((args.command(input).iter().map(<[u8]>::to_vec).collect(), n))
    }

    fn parse(input: &[u8]) -> Result<(Vec<Vec<u8>>, usize), ParseError> {
        parse_with(input, &Limits::default())
    }

    fn words(input: &[u8]) -> Vec<String> {
        let (args, n) = parse(input).unwrap();
        assert_eq!(n, input.len());
        args.into_iter().map(|a| String::from_utf8_lossy(&a).into_owned()).collect()
    }

    fn protocol_error(input: &[u8]) -> ProtocolError {
        match parse(input) {
            Err(ParseError::Protocol(e)) => e,
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
        }
    }

    fn reply(e: ProtocolError) -> String {
        let mut out = Vec::new();
        e.write_reply(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn multibulk_parses() {
        assert_eq!(words(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n"), ["SET", "k", "hello"]);
        assert_eq!(words(b"*1\r\n$0\r\n\r\n"), [""]);
        let binary = b"*2\r\n$3\r\nGET\r\n$4\r\n\r\n\0\xff\r\n";
        let (args, _) = parse(binary).unwrap();
        assert_eq!(args[1], b"\r\n\0\xff");
    }

    #[test]
    fn empty_multibulk_is_no_command() {
        for input in [&b"*0\r\n"[..], b"*-1\r\n", b"*-5\r\n"] {
            assert_eq!(parse(input), Ok((vec![], input.len())));
        }
    }

    #[test]
    fn inline_commands_parse() {
        assert_eq!(words(b"PING\r\n"), ["PING"]);
        assert_eq!(words(b"PING\n"), ["PING"]);
        assert_eq!(words(b"  set  k\tv  \r\n"), ["set", "k", "v"]);
        assert_eq!(words(b"\r\n"), Vec::<String>::new());
        assert_eq!(words(b"\n"), Vec::<String>::new());
    }

    #[test]
    fn inline_quotes_follow_sdssplitargs() {
        assert_eq!(words(b"set \"a b\" 'c d'\r\n"), ["set", "a b", "c d"]);
        assert_eq!(words(b"set \"\\x41\\n\\t\\\\\\\"\" x\r\n"), ["set", "A\n\t\\\"", "x"]);
        assert_eq!(words(b"set 'it\\'s' \"\"\r\n"), ["set", "it's", ""]);
        assert_eq!(words(b"set a\"b c\" x\r\n"), ["set", "ab c", "x"]);
        assert_eq!(words(b"echo \"\\xZZ\"\r\n"), ["echo", "xZZ"]);
    }

    #[test]
    fn unbalanced_quotes_are_protocol_errors() {
        for input in [&b"set \"abc\r\n"[..], b"set 'abc\r\n", b"set \"a\"b\r\n", b"set 'a'b\r\n"] {
            assert_eq!(protocol_error(input), ProtocolError::UnbalancedQuotes);
        }
        assert_eq!(
            reply(ProtocolError::UnbalancedQuotes),
            "-ERR Protocol error: unbalanced quotes in request\r\n"
        );
    }

    #[test]
    fn bad_lengths_have_redis_wording() {
        for input in [&b"*x\r\n"[..], b"*01\r\n", b"*+1\r\n", b"*\r\n", b"*1048577\r\n"] {
            assert_eq!(protocol_error(input), ProtocolError::InvalidMultibulkLength, "{input:?}");
        }
        assert_eq!(
            reply(ProtocolError::InvalidMultibulkLength),
            "-ERR Protocol error: invalid multibulk length\r\n"
        );
        for input in
            [&b"*1\r\n$x\r\n"[..], b"*1\r\n$-1\r\n", b"*1\r\n$\r\n", b"*1\r\n$99999999\r\n"]
        {
            assert_eq!(protocol_error(input), ProtocolError::InvalidBulkLength, "{input:?}");
        }
        assert_eq!(
            reply(ProtocolError::InvalidBulkLength),
            "-ERR Protocol error: invalid bulk length\r\n"
        );
        assert_eq!(protocol_error(b"*1\r\nx3\r\n"), ProtocolError::ExpectedDollar(b'x'));
        assert_eq!(
            reply(ProtocolError::ExpectedDollar(b'x')),
            "-ERR Protocol error: expected '$', got 'x'\r\n"
        );
        assert_eq!(
            reply(ProtocolError::ExpectedDollar(b'\r')),
            "-ERR Protocol error: expected '$', got ' '\r\n"
        );
        assert!(ProtocolError::ExpectedDollar(b'x').closes());
    }

    #[test]
    fn limits_are_enforced() {
        let limits = Limits { max_multibulk_len: 2, max_bulk_len: 3, max_inline_len: 16 };
        assert!(parse_with(b"*2\r\n$3\r\nabc\r\n$0\r\n\r\n", &limits).is_ok());
        assert_eq!(
            parse_with(b"*3\r\n", &limits),
            Err(ParseError::Protocol(ProtocolError::InvalidMultibulkLength))
        );
        assert_eq!(
            parse_with(b"*1\r\n$4\r\n", &limits),
            Err(ParseError::Protocol(ProtocolError::InvalidBulkLength))
        );
        let long = [b'a'; 17];
        assert_eq!(
            parse_with(&long, &limits),
            Err(ParseError::Protocol(ProtocolError::TooBigInline))
        );
        assert_eq!(parse_with(&long[..16], &limits), Err(ParseError::Incomplete));
        let mut line = long[..16].to_vec();
        line.push(b'\n');
        assert!(parse_with(&line, &limits).is_ok(), "a line of exactly the limit is fine");
        let star = [&b"*"[..], &[b'1'; 17]].concat();
        assert_eq!(
            parse_with(&star, &limits),
            Err(ParseError::Protocol(ProtocolError::TooBigMultibulkCount))
        );
        let dollar = [&b"*1\r\n$"[..], &[b'1'; 17]].concat();
        assert_eq!(
            parse_with(&dollar, &limits),
            Err(ParseError::Protocol(ProtocolError::TooBigBulkCount))
        );
        assert_eq!(
            reply(ProtocolError::TooBigInline),
            "-ERR Protocol error: too big inline request\r\n"
        );
    }

    #[test]
    fn truncated_input_is_incomplete_at_every_byte() {
        for input in [
            &b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n"[..],
            b"*1\r\n$0\r\n\r\n",
            b"*0\r\n",
            b"PING\r\n",
            b"set \"a b\" 'c'\r\n",
        ] {
            for i in 0..input.len() {
                assert_eq!(
                    parse(&input[..i]),
                    Err(ParseError::Incomplete),
                    "prefix {i} of {input:?}"
                );
            }
        }
    }

    #[test]
    fn pipelined_commands_parse_one_at_a_time() {
        let input = b"*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n";
        let mut args = Args::new();
        let mut pos = 0;
        let mut names = Vec::new();
        while pos < input.len() {
            pos += parse_command(&input[pos..], &Limits::default(), &mut args).unwrap();
            names.push(args.len());
        }
        assert_eq!(names, [1, 1, 2]);
    }

    #[test]
    fn encoded_commands_round_trip() {
        let cmd: [&[u8]; 3] = [b"SET", b"k\r\n", b""];
        let mut out = Vec::new();
        encode_command(&mut out, &cmd);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$0\r\n\r\n");
        let (args, n) = parse(&out).unwrap();
        assert_eq!(n, out.len());
        assert_eq!(args, cmd.iter().map(|a| a.to_vec()).collect::<Vec<_>>());
    }

    #[test]
    fn command_names_match_case_insensitively() {
        let input = b"*1\r\n$4\r\npInG\r\n";
        let mut args = Args::new();
        parse_command(input, &Limits::default(), &mut args).unwrap();
        let cmd = args.command(input);
        assert!(cmd.is(b"PING"));
        assert!(!cmd.is(b"PONG"));
        assert_eq!(cmd.get(1), None);
        assert!(eq_ignore_ascii_case(b"ex", b"EX"));
    }
}
