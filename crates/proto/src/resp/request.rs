//! RESP requests: the multibulk and inline parsers, the argument holder, and
//! the command encoder.

use std::ops::Range;

use super::{Limits, ParseError, ProtocolError};
use crate::number::{parse_redis_i64, parse_u64, write_usize};
use crate::waiting::{GetRequest, WaitingGets};

/// Redis never reserves room for more arguments than this up front, however
/// many a `*<n>` line announces; the vector grows as arguments arrive.
const INITIAL_ARGS: usize = 1024;

/// The arguments of the last parsed command, as ranges into the parsed
/// buffer (or, for inline arguments with quotes, into an internal scratch
/// buffer). Keep one per connection and reuse it: after warm-up a parse
/// allocates nothing.
///
/// While a request is incomplete, `Args` also remembers how far the parse
/// got (see [`parse_command`]), so a request that arrives in many small
/// reads is parsed in time linear in its length, not quadratic.
#[derive(Clone, Debug, Default)]
pub struct Args {
    ranges: Vec<Range<usize>>,
    /// Unescaped inline arguments, when the line had quotes.
    scratch: Vec<u8>,
    /// Whether `ranges` index `scratch` rather than the parsed buffer.
    in_scratch: bool,
    /// Where the last call stopped, when it answered `Incomplete`.
    partial: Option<Partial>,
}

/// How far an incomplete request was parsed. Offsets are from the start of
/// the request.
#[derive(Clone, Copy, Debug, Default)]
struct Partial {
    /// The argument count of a multibulk request, once its header was read.
    count: Option<usize>,
    /// Where the next unparsed header line (or the inline line) starts.
    pos: usize,
    /// Bytes from `pos` already searched without finding the line's end.
    scanned: usize,
}

impl Args {
    /// An empty holder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets the arguments and any partly parsed request: the next
    /// [`parse_command`] starts afresh.
    pub fn clear(&mut self) {
        self.ranges.clear();
        self.scratch.clear();
        self.in_scratch = false;
        self.partial = None;
    }

    /// Bytes of bookkeeping the arguments parsed so far take (their ranges
    /// and unescaped inline copies): a request's cost beyond its own bytes.
    pub fn arg_bytes(&self) -> usize {
        self.ranges.len() * std::mem::size_of::<Range<usize>>() + self.scratch.len()
    }

    /// Bytes of heap the holder keeps (what it grew to for the largest
    /// request since the last [`shrink`](Self::shrink)).
    pub fn heap_bytes(&self) -> usize {
        self.ranges.capacity() * std::mem::size_of::<Range<usize>>() + self.scratch.capacity()
    }

    /// Gives back the memory of a large request, unless one is partly
    /// parsed.
    pub fn shrink(&mut self) {
        if self.partial.is_none() && self.heap_bytes() > INITIAL_ARGS * 16 {
            *self = Args::default();
        }
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
/// An empty `args` after `Ok` means the request had no argument: consume it
/// and reply nothing. On [`ParseError::Incomplete`] nothing is consumed and
/// `args` keeps how far the parse got: the next call **must** pass the same
/// request again, with more bytes after it (a connection's read buffer from
/// the request's first byte), and resumes there, so each byte is examined
/// about once however the request is split into reads. To parse something
/// else after `Incomplete`, call [`Args::clear`] first. `Ok` and protocol
/// errors leave no partial state.
pub fn parse_command(buf: &[u8], limits: &Limits, args: &mut Args) -> Result<usize, ParseError> {
    let resume = args.partial.take();
    if resume.is_none() {
        args.clear();
    }
    let result = match buf.first() {
        None => Err(ParseError::Incomplete),
        Some(b'*') => parse_multibulk(buf, limits, args, resume.unwrap_or_default()),
        Some(_) => parse_inline(buf, limits, args, resume.map_or(0, |p| p.scanned)),
    };
    if !matches!(result, Err(ParseError::Incomplete)) {
        args.partial = None;
    }
    result
}

/// Finds the `\r` that ends a header line starting at `start`, the way Redis
/// does (`strchr(…, '\r')`, then trusting the next byte to be `\n`). The
/// first `scanned` bytes of the line are known to hold no `\r`. Returns its
/// index; `Incomplete` while the line may still arrive; `too_big` once more
/// than `max` bytes have come without one.
fn header_end(
    buf: &[u8],
    start: usize,
    scanned: usize,
    max: usize,
    too_big: ProtocolError,
) -> Result<usize, ParseError> {
    let rest = &buf[start..];
    let window = &rest[..rest.len().min(max.saturating_add(1))];
    let from = scanned.min(window.len());
    match window[from..].iter().position(|&c| c == b'\r') {
        Some(i) if start + from + i + 1 < buf.len() => Ok(start + from + i),
        Some(_) => Err(ParseError::Incomplete),
        None if rest.len() > max => Err(ParseError::Protocol(too_big)),
        None => Err(ParseError::Incomplete),
    }
}

/// Bytes of the line at `start` that a later call need not search again:
/// all but the last (which may be a `\r` whose `\n` has not come yet).
fn searched(buf: &[u8], start: usize) -> usize {
    buf.len().saturating_sub(start).saturating_sub(1)
}

/// A header's number of one to three digits (`*2`, `$3`, `$16`: nearly every header a client
/// sends) read in one pass: the number and the index of the `\r` ending its line, if the
/// line is whole (a byte follows the `\r`) and within `max` bytes (`max_inline_len`). Anything
/// else — more digits, a sign, a leading zero, another byte, a line not yet whole or too long —
/// is `None`, and left to [`header_end`] and `parse_redis_i64`, which decide as Redis does;
/// where this answers, they answer the same (`short_headers_read_as_the_general_reading_does`).
#[inline]
fn short_header(buf: &[u8], pos: usize, max: usize) -> Option<(usize, usize)> {
    let line = buf.get(pos + 1..)?;
    let mut n = 0;
    for (i, &c) in line.iter().take(4).enumerate() {
        match c {
            b'0'..=b'9' if i < 3 => n = n * 10 + usize::from(c - b'0'),
            b'\r' if i > 0 && (i == 1 || line[0] != b'0') && i < max => {
                let cr = pos + 1 + i;
                return (cr + 1 < buf.len()).then_some((n, cr));
            }
            _ => return None,
        }
    }
    None
}

fn parse_multibulk(
    buf: &[u8],
    limits: &Limits,
    args: &mut Args,
    resume: Partial,
) -> Result<usize, ParseError> {
    let (count, mut pos, mut scanned) = match resume.count {
        Some(count) => (count, resume.pos, resume.scanned),
        None if resume.scanned == 0
            && let Some((count, cr)) = short_header(buf, 0, limits.max_inline_len)
            && count <= limits.max_multibulk_len =>
        {
            args.ranges.reserve(count.min(INITIAL_ARGS));
            (count, cr + 2, 0)
        }
        None => {
            let max = limits.max_inline_len;
            let cr = match header_end(
                buf,
                0,
                resume.scanned,
                max,
                ProtocolError::TooBigMultibulkCount,
            ) {
                Err(ParseError::Incomplete) => {
                    args.partial = Some(Partial { scanned: searched(buf, 0), ..resume });
                    return Err(ParseError::Incomplete);
                }
                other => other?,
            };
            let count = match parse_redis_i64(&buf[1..cr]) {
                Some(n) if n <= i64::try_from(limits.max_multibulk_len).unwrap_or(i64::MAX) => n,
                _ => return Err(ParseError::Protocol(ProtocolError::InvalidMultibulkLength)),
            };
            // `*0` and `*-1` are requests with no argument.
            let count = usize::try_from(count).unwrap_or(0);
            args.ranges.reserve(count.min(INITIAL_ARGS));
            (count, cr + 2, 0)
        }
    };
    while args.ranges.len() < count {
        let incomplete = |args: &mut Args, pos: usize, scanned: usize| {
            args.partial = Some(Partial { count: Some(count), pos, scanned });
            Err(ParseError::Incomplete)
        };
        if pos >= buf.len() {
            return incomplete(args, pos, 0);
        }
        if buf[pos] == b'$'
            && let Some((len, cr)) = short_header(buf, pos, limits.max_inline_len)
            && len <= limits.max_bulk_len
        {
            // An argument not yet whole is left to the general reading, which waits for it.
            let (start, end) = (cr + 2, cr + 2 + len + 2);
            if end <= buf.len() {
                args.ranges.push(start..start + len);
                pos = end;
                scanned = 0;
                continue;
            }
        }
        let max = limits.max_inline_len;
        let cr = match header_end(buf, pos, scanned, max, ProtocolError::TooBigBulkCount) {
            Err(ParseError::Incomplete) => return incomplete(args, pos, searched(buf, pos)),
            other => other?,
        };
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
            // The header is parsed again when the argument has come (a few bytes).
            return incomplete(args, pos, 0);
        }
        args.ranges.push(start..start + len);
        pos = end;
        scanned = 0;
    }
    Ok(pos)
}

/// C's `isspace`, which Redis's `sdssplitargs` skips between arguments.
const fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn parse_inline(
    buf: &[u8],
    limits: &Limits,
    args: &mut Args,
    scanned: usize,
) -> Result<usize, ParseError> {
    let window = &buf[..buf.len().min(limits.max_inline_len.saturating_add(1))];
    let from = scanned.min(window.len());
    let newline = match window[from..].iter().position(|&c| c == b'\n') {
        Some(i) => from + i,
        None if buf.len() > limits.max_inline_len => {
            return Err(ParseError::Protocol(ProtocolError::TooBigInline));
        }
        None => {
            args.partial = Some(Partial { count: None, pos: 0, scanned: window.len() });
            return Err(ParseError::Incomplete);
        }
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

/// The keys of the `GET key` commands (arrays of two bulk strings) waiting whole at the start
/// of `buf`, in order ([`crate::waiting`]).
pub fn waiting_get_keys(buf: &[u8]) -> WaitingGets<'_, GetArray> {
    WaitingGets::new(buf)
}

/// A `GET key` array ([`waiting_get_keys`]).
#[derive(Debug)]
pub struct GetArray;

impl GetRequest for GetArray {
    fn next_get(buf: &[u8]) -> Option<(&[u8], &[u8])> {
        let name = buf.strip_prefix(b"*2\r\n$3\r\n")?;
        if !name.get(..3)?.eq_ignore_ascii_case(b"GET") {
            return None;
        }
        let len_field = name[3..].strip_prefix(b"\r\n$")?;
        // The key's length: at most 10 digits, then CRLF.
        let digits = len_field.iter().take(11).take_while(|c| c.is_ascii_digit()).count();
        if digits > 10 {
            return None;
        }
        let len = usize::try_from(parse_u64(&len_field[..digits])?).ok()?;
        let key_start = len_field[digits..].strip_prefix(b"\r\n")?;
        let key = key_start.get(..len)?;
        Some((key, key_start[len..].strip_prefix(b"\r\n")?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_headers_read_as_the_general_reading_does() {
        // Every line of up to five bytes after the `$` over these bytes, whole or cut short.
        const BYTES: &[u8] = b"0159-+\r\nx";
        let mut taken = 0;
        let mut line = Vec::new();
        for len in 0..=5u32 {
            for mut code in 0..BYTES.len().pow(len) {
                line.clear();
                line.push(b'$');
                for _ in 0..len {
                    line.push(BYTES[code % BYTES.len()]);
                    code /= BYTES.len();
                }
                for max in [0, 1, 2, 3, 4, 64] {
                    let Some((n, cr)) = short_header(&line, 0, max) else { continue };
                    taken += 1;
                    let general =
                        header_end(&line, 0, 0, max, ProtocolError::TooBigBulkCount).ok().and_then(
                            |cr| Some((usize::try_from(parse_redis_i64(&line[1..cr])?).ok()?, cr)),
                        );
                    let at = line.escape_ascii().to_string();
                    assert_eq!(Some((n, cr)), general, "{at:?}, max_inline_len {max}");
                }
            }
        }
        // "0\r", "5\r", "10\r", "999\r"… each followed by any byte.
        assert!(taken > 500, "{taken}");
        assert_eq!(short_header(b"$12\r\n", 0, 2), None, "longer than max_inline_len");
        assert_eq!(short_header(b"$01\r\n", 0, 64), None, "a leading zero: Redis's error");
        assert_eq!(short_header(b"$1000\r\n", 0, 64), None, "four digits: the general reading");
        assert_eq!(short_header(b"$12\r", 0, 64), None, "the line's last byte has not come");
    }

    #[test]
    fn waiting_get_keys_are_those_of_the_whole_get_commands_first_in_the_buffer() {
        fn keys(buf: &[u8]) -> Vec<&[u8]> {
            waiting_get_keys(buf).collect()
        }
        let buf = b"*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nget\r\n$2\r\nbb\r\n*2\r\n$3\r\nGET\r\n$1\r\n";
        assert_eq!(keys(buf), [b"a".as_slice(), b"bb"], "the last command is not whole");
        let set = b"*2\r\n$3\r\nGET\r\n$1\r\na\r\n*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$1\r\nc\r\n";
        let mut it = waiting_get_keys(set);
        assert_eq!((it.next(), it.next(), it.next()), (Some(&b"a"[..]), None, None));
        assert_eq!(it.remainder(), &set[20..], "the first command not taken");
        for none in [
            &b"*2\r\n$3\r\nGET\r\n$2\r\nabc\r\n"[..], // the length does not match
            b"*2\r\n$3\r\nGET\r\n$\r\n\r\n",
            b"*2\r\n$3\r\nGET\r\n$99999999999\r\n",
            b"*2\r\n$3\r\nDEL\r\n$1\r\na\r\n",
            b"GET a\r\n",
            b"",
        ] {
            assert_eq!(keys(none), Vec::<&[u8]>::new(), "{:?}", String::from_utf8_lossy(none));
        }
        // Every yielded key is the command's key as the parser takes it.
        let (mut at, limits, mut args) = (0, Limits::default(), Args::new());
        let mut it = waiting_get_keys(buf);
        for key in it.by_ref() {
            let used = parse_command(&buf[at..], &limits, &mut args).expect("parses");
            let cmd = args.command(&buf[at..]);
            assert_eq!(cmd.iter().nth(1), Some(key));
            at += used;
        }
        assert_eq!(at, buf.len() - it.remainder().len());
    }

    /// Feeds `wire` in pieces of `step` bytes, as reads from a socket would,
    /// reusing one `Args`; returns the parsed arguments.
    fn parse_in_pieces(wire: &[u8], step: usize) -> Vec<Vec<u8>> {
        let mut args = Args::new();
        let limits = Limits::default();
        let mut end = 0;
        loop {
            end = (end + step).min(wire.len());
            match parse_command(&wire[..end], &limits, &mut args) {
                Ok(n) => {
                    assert_eq!(n, wire.len());
                    return args.command(wire).iter().map(<[u8]>::to_vec).collect();
                }
                Err(ParseError::Incomplete) => assert!(end < wire.len(), "complete at {end}"),
                Err(e) => panic!("{e:?}"),
            }
        }
    }

    #[test]
    fn a_request_split_into_reads_parses_as_a_whole() {
        let values: Vec<Vec<u8>> = (0..300).map(|i| vec![b'a' + (i % 26) as u8; i]).collect();
        let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        let mut wire = Vec::new();
        encode_command(&mut wire, &refs);
        for step in [1, 2, 3, 7, 64, 1000, wire.len()] {
            assert_eq!(parse_in_pieces(&wire, step), values, "step {step}");
        }
        let inline = b"set key some-value\r\n";
        for step in 1..inline.len() {
            assert_eq!(parse_in_pieces(inline, step), [&b"set"[..], b"key", b"some-value"]);
        }
    }

    #[test]
    fn a_resumed_parse_does_not_search_old_bytes_again() {
        // Proof by construction: bytes already searched are changed before the
        // next call; a parse that started over would see the change.
        let limits = Limits::default();
        let mut args = Args::new();
        let mut line = b"get aaaaaaaa".to_vec();
        assert_eq!(parse_command(&line, &limits, &mut args), Err(ParseError::Incomplete));
        line[5] = b'\n'; // searched already: not seen again
        line.extend_from_slice(b"bb\n");
        assert_eq!(parse_command(&line, &limits, &mut args), Ok(line.len()));
        // Multibulk: arguments parsed before are kept, not parsed again.
        let mut wire = b"*3\r\n$3\r\nget\r\n$1\r\nk\r\n$".to_vec();
        assert_eq!(parse_command(&wire, &limits, &mut args), Err(ParseError::Incomplete));
        wire[5] = b'9'; // `$3` of `get`, parsed already: a fresh parse would fail
        wire.extend_from_slice(b"2\r\nk2\r\n");
        assert_eq!(parse_command(&wire, &limits, &mut args), Ok(wire.len()));
        let got: Vec<&[u8]> = args.command(&wire).iter().collect();
        assert_eq!(got, [&b"get"[..], b"k", b"k2"], "ranges kept");
        // `clear` starts afresh.
        assert_eq!(
            parse_command(b"*2\r\n$3\r\nget\r\n", &limits, &mut args),
            Err(ParseError::Incomplete)
        );
        args.clear();
        assert_eq!(parse_command(b"ping\r\n", &limits, &mut args), Ok(6));
        assert_eq!(args.len(), 1);
    }

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
