//! memcached request parser.
//!
//! - Raw bytes under random limits, parsed as a pipeline: every request
//!   respects the limits, consumes no more than it was given, re-encodes to
//!   bytes that parse back to the same request, and every strict prefix of
//!   its bytes is `Incomplete`; every error skips at least one byte; fed in
//!   growing pieces, the resumable parser answers what the plain one does;
//!   the keys `waiting_get_keys` finds ahead lie in their own lines, in
//!   order, and are the keys the parser takes from those lines.
//! - Structured requests (classic and meta) built from `Arbitrary` values:
//!   encode → parse gives the same request, the typed meta accessors return
//!   what was put in, and the canonical bytes are stable.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use fridge_proto::memcache::{
    ArithmeticCommand, Keys, Limits, MetaCommand, ParseError, Request, Retrieval, RetrievalCommand,
    Storage, StorageCommand, WatchEvents, base64_decoded_len, base64_encode, parse_request,
    parse_request_resumable, waiting_get_keys,
};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct FuzzLimits {
    key: u8,
    value: u16,
    line: u16,
    retrieval: u16,
}

impl FuzzLimits {
    fn limits(&self) -> Limits {
        Limits {
            max_key_len: usize::from(self.key),
            max_value_len: usize::from(self.value),
            max_line_len: usize::from(self.line),
            max_retrieval_line_len: usize::from(self.line) + usize::from(self.retrieval),
            max_cas: if self.key % 2 == 0 { u64::MAX } else { (1 << 56) - 1 },
        }
    }
}

/// A valid key: 1 to 250 printable, non-space bytes.
#[derive(Debug)]
struct Key(Vec<u8>);

impl<'a> Arbitrary<'a> for Key {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let len = u.int_in_range(1..=250)?;
        let mut key = Vec::with_capacity(len);
        for _ in 0..len {
            key.push(u.int_in_range(0x21..=0x7e)?);
        }
        Ok(Key(key))
    }
}

#[derive(Arbitrary, Debug)]
enum MetaFlagOp {
    Bare(u8),
    Opaque(u8, u32),
    Ttl(i32),
    Vivify(i32),
    Recache(i32),
    ClientFlags(u32),
    CompareCas(u64),
    NewCas(u64),
    Delta(u64),
    Initial(u64),
    Mode(u8),
    Base64,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Storage {
        command: u8,
        key: Key,
        flags: u32,
        exptime: i32,
        cas: u64,
        noreply: bool,
        data: Vec<u8>,
    },
    Retrieval {
        command: u8,
        exptime: i32,
        first: Key,
        more: Vec<Key>,
    },
    Delete {
        key: Key,
        noreply: bool,
    },
    Arithmetic {
        incr: bool,
        key: Key,
        delta: u64,
        noreply: bool,
    },
    Touch {
        key: Key,
        exptime: i32,
        noreply: bool,
    },
    FlushAll {
        delay: Option<i32>,
        noreply: bool,
    },
    Stats {
        args: Option<Key>,
    },
    LruCrawler {
        args: Option<Key>,
    },
    Version,
    Verbosity {
        level: u32,
        noreply: bool,
    },
    Quit,
    Watch {
        events: u8,
    },
    CacheMemlimit {
        megabytes: u32,
        noreply: bool,
    },
    Meta {
        command: u8,
        key: Key,
        flags: Vec<MetaFlagOp>,
        data: Vec<u8>,
    },
}

#[derive(Arbitrary, Debug)]
enum Input {
    Raw { limits: Option<FuzzLimits>, data: Vec<u8> },
    Requests(Vec<Op>),
}

fuzz_target!(|input: Input| match input {
    Input::Raw { limits, data } => {
        let limits = limits.map_or_else(Limits::default, |l| l.limits());
        check_raw(&data, &limits);
    }
    Input::Requests(ops) => {
        for op in &ops {
            check_op(op);
        }
    }
});

/// Strict prefixes of a complete request's bytes must all be `Incomplete`
/// (all of them for short requests, a sample for long ones).
fn check_prefixes(bytes: &[u8], limits: &Limits) {
    let n = bytes.len();
    let step = (n / 128).max(1);
    let mut i = 0;
    while i < n {
        assert_eq!(
            parse_request(&bytes[..i], limits).err(),
            Some(ParseError::Incomplete),
            "prefix {i} of {:?}",
            String::from_utf8_lossy(bytes)
        );
        i += if n - i <= 4 { 1 } else { step };
    }
}

fn check_limits(request: &Request<'_>, limits: &Limits) {
    let key_ok = |k: &[u8]| !k.is_empty() && k.len() <= limits.max_key_len && !k.contains(&b' ');
    match request {
        Request::Storage(s) => {
            assert!(key_ok(s.key));
            assert!(s.data.len() <= limits.max_value_len);
        }
        Request::Retrieval(r) => {
            assert!(!r.keys.is_empty());
            assert!(r.keys.iter().all(key_ok));
        }
        Request::Delete { key, .. }
        | Request::Arithmetic { key, .. }
        | Request::Touch { key, .. } => assert!(key_ok(key)),
        Request::Meta(m) => {
            if m.command != MetaCommand::Noop {
                assert!(key_ok(m.key));
            }
            assert!(m.data.len() <= limits.max_value_len);
            if m.command != MetaCommand::Set {
                assert!(m.data.is_empty());
            }
            if let Some(opaque) = m.flags.opaque() {
                assert!(opaque.len() < 32);
            }
            if m.flags.base64_key() {
                assert!(base64_decoded_len(m.key).is_some_and(|n| n > 0));
            }
        }
        _ => {}
    }
}

/// `parse_request_resumable`, given growing prefixes of `buf` (as reads fill
/// a connection's buffer), answers each exactly as `parse_request` does.
fn check_resumable(buf: &[u8], limits: &Limits) {
    let mut scanned = 0;
    let mut end = 0;
    let mut piece = 1;
    while end < buf.len() {
        end = (end + piece).min(buf.len());
        piece = piece % 7 + 1;
        let prefix = &buf[..end];
        let resumed = parse_request_resumable(prefix, limits, &mut scanned);
        assert_eq!(resumed, parse_request(prefix, limits), "prefix {end}");
        if resumed != Err(ParseError::Incomplete) {
            assert_eq!(scanned, 0);
            return;
        }
    }
}

/// The keys found ahead in `buf` each lie in the next line, in order, and where the parser
/// (without size limits, which the look-ahead does not check) takes that line, it is a
/// retrieval of that key alone, of the same bytes.
fn check_waiting_gets(buf: &[u8]) {
    let relaxed = Limits {
        max_key_len: usize::MAX,
        max_line_len: usize::MAX,
        max_retrieval_line_len: usize::MAX,
        ..Limits::default()
    };
    let mut keys = waiting_get_keys(buf);
    let mut at = 0;
    while let Some(key) = keys.next() {
        let end = buf.len() - keys.remainder().len();
        let start = key.as_ptr() as usize - buf.as_ptr() as usize;
        assert!(at < start && start + key.len() < end, "the key lies in its line");
        if let Ok((request, n)) = parse_request(&buf[at..], &relaxed) {
            let Request::Retrieval(r) = request else { panic!("not a retrieval: {request:?}") };
            assert_eq!(r.keys.iter().collect::<Vec<_>>(), [key]);
            assert_eq!(n, end - at);
        }
        at = end;
    }
}

fn check_raw(data: &[u8], limits: &Limits) {
    check_waiting_gets(data);
    // The canonical form may be a byte longer per line (`\n` becomes `\r\n`).
    let relaxed =
        Limits { max_line_len: usize::MAX, max_retrieval_line_len: usize::MAX, ..*limits };
    let mut pos = 0;
    while pos < data.len() {
        let buf = &data[pos..];
        check_resumable(buf, limits);
        match parse_request(buf, limits) {
            Ok((request, n)) => {
                assert!(n > 0 && n <= buf.len());
                check_limits(&request, limits);
                let mut encoded = Vec::new();
                request.encode(&mut encoded);
                assert_eq!(parse_request(&encoded, &relaxed), Ok((request, encoded.len())));
                check_prefixes(&buf[..n], limits);
                pos += n;
            }
            Err(ParseError::Incomplete) => break,
            Err(ParseError::Invalid(e)) => {
                assert!(e.skip > 0);
                assert!(e.reply().ends_with(b"\r\n"));
                if e.closes() {
                    break;
                }
                pos = pos.saturating_add(e.skip);
            }
        }
    }
}

/// Encodes `request`, parses it back, and checks prefixes.
fn round_trip(request: Request<'_>) {
    let limits = Limits::default();
    let mut encoded = Vec::new();
    request.encode(&mut encoded);
    let parsed = parse_request(&encoded, &limits);
    assert_eq!(parsed, Ok((request, encoded.len())), "{:?}", String::from_utf8_lossy(&encoded));
    check_prefixes(&encoded, &limits);
}

fn check_op(op: &Op) {
    match op {
        Op::Storage { command, key, flags, exptime, cas, noreply, data } => {
            let command = [
                StorageCommand::Set,
                StorageCommand::Add,
                StorageCommand::Replace,
                StorageCommand::Append,
                StorageCommand::Prepend,
                StorageCommand::Cas,
            ][usize::from(*command) % 6];
            let cas = if command == StorageCommand::Cas { *cas } else { 0 };
            round_trip(Request::Storage(Storage {
                command,
                key: &key.0,
                flags: *flags,
                exptime: *exptime,
                cas,
                noreply: *noreply,
                data,
            }));
        }
        Op::Retrieval { command, exptime, first, more } => {
            let command = [
                RetrievalCommand::Get,
                RetrievalCommand::Gets,
                RetrievalCommand::Gat,
                RetrievalCommand::Gats,
            ][usize::from(*command) % 4];
            let mut joined = first.0.clone();
            for key in more {
                joined.push(b' ');
                joined.extend_from_slice(&key.0);
            }
            let exptime = if command.touches() { *exptime } else { 0 };
            round_trip(Request::Retrieval(Retrieval {
                command,
                exptime,
                keys: Keys::new(&joined),
            }));
        }
        Op::Delete { key, noreply } => {
            round_trip(Request::Delete { key: &key.0, noreply: *noreply })
        }
        Op::Arithmetic { incr, key, delta, noreply } => round_trip(Request::Arithmetic {
            command: if *incr { ArithmeticCommand::Incr } else { ArithmeticCommand::Decr },
            key: &key.0,
            delta: *delta,
            noreply: *noreply,
        }),
        Op::Touch { key, exptime, noreply } => {
            round_trip(Request::Touch { key: &key.0, exptime: *exptime, noreply: *noreply });
        }
        Op::FlushAll { delay, noreply } => {
            round_trip(Request::FlushAll { delay: *delay, noreply: *noreply });
        }
        Op::Stats { args } => {
            round_trip(Request::Stats { args: args.as_ref().map_or(&[], |k| &k.0) })
        }
        Op::LruCrawler { args } => {
            round_trip(Request::LruCrawler { args: args.as_ref().map_or(&[], |k| &k.0) })
        }
        Op::Version => round_trip(Request::Version),
        Op::Verbosity { level, noreply } => {
            round_trip(Request::Verbosity { level: *level, noreply: *noreply });
        }
        Op::Quit => round_trip(Request::Quit),
        Op::Watch { events } => {
            // A parsed `watch` names at least one stream (none means `fetchers`).
            let events = WatchEvents::from_bits(*events);
            if events != WatchEvents::empty() {
                round_trip(Request::Watch { events });
            }
        }
        Op::CacheMemlimit { megabytes, noreply } => {
            round_trip(Request::CacheMemlimit { megabytes: *megabytes, noreply: *noreply });
        }
        Op::Meta { command, key, flags, data } => check_meta(*command, key, flags, data),
    }
}

/// Builds a canonical meta line from typed flags, parses it, checks every
/// accessor, and checks that re-encoding gives the same bytes.
fn check_meta(command: u8, key: &Key, ops: &[MetaFlagOp], data: &[u8]) {
    let command = [
        MetaCommand::Get,
        MetaCommand::Set,
        MetaCommand::Delete,
        MetaCommand::Arithmetic,
        MetaCommand::Noop,
        MetaCommand::Debug,
    ][usize::from(command) % 6];
    let modes: &[u8] = match command {
        MetaCommand::Set => b"EAPRS",
        MetaCommand::Arithmetic => b"I+D-",
        _ => b"EAPRSI+D-",
    };
    let mut key = key.0.clone();
    let mut flags: Vec<Vec<u8>> = Vec::new();
    let mut seen = Vec::new();
    let mut expect = Expected::default();
    for op in ops.iter().take(16) {
        let mut token = Vec::new();
        match op {
            MetaFlagOp::Bare(i) => token.push(b"cfhklstuvqxI"[usize::from(*i) % 12]),
            MetaFlagOp::Opaque(len, seed) => {
                token.push(b'O');
                for j in 0..usize::from(*len) % 32 {
                    token.push(
                        b"abcdefghijklmnopqrstuvwxyz0123456789"[(*seed as usize + j * 7) % 36],
                    );
                }
            }
            MetaFlagOp::Ttl(v) => token.extend_from_slice(format!("T{v}").as_bytes()),
            MetaFlagOp::Vivify(v) => token.extend_from_slice(format!("N{v}").as_bytes()),
            MetaFlagOp::Recache(v) => token.extend_from_slice(format!("R{v}").as_bytes()),
            MetaFlagOp::ClientFlags(v) => token.extend_from_slice(format!("F{v}").as_bytes()),
            MetaFlagOp::CompareCas(v) => token.extend_from_slice(format!("C{v}").as_bytes()),
            MetaFlagOp::NewCas(v) => token.extend_from_slice(format!("E{v}").as_bytes()),
            MetaFlagOp::Delta(v) => token.extend_from_slice(format!("D{v}").as_bytes()),
            MetaFlagOp::Initial(v) => token.extend_from_slice(format!("J{v}").as_bytes()),
            MetaFlagOp::Mode(m) => {
                token.push(b'M');
                token.push(modes[usize::from(*m) % modes.len()]);
            }
            MetaFlagOp::Base64 => token.push(b'b'),
        }
        let letter = token[0];
        if seen.contains(&letter) {
            continue;
        }
        if letter == b'b' {
            let mut encoded = Vec::new();
            base64_encode(&key, &mut encoded);
            if encoded.len() > 250 {
                continue;
            }
            key = encoded;
        }
        seen.push(letter);
        expect.record(op, &token);
        flags.push(token);
    }
    let mut line = command.name().to_vec();
    match command {
        MetaCommand::Noop => {
            flags.clear();
            expect = Expected::default();
        }
        MetaCommand::Debug => {
            line.push(b' ');
            line.extend_from_slice(&key);
            let b64 = flags.iter().any(|f| f == b"b");
            flags.retain(|f| f == b"b");
            expect = Expected { base64: b64, ..Expected::default() };
        }
        _ => {
            line.push(b' ');
            line.extend_from_slice(&key);
        }
    }
    if command == MetaCommand::Set {
        line.push(b' ');
        line.extend_from_slice(data.len().to_string().as_bytes());
    }
    for flag in &flags {
        line.push(b' ');
        line.extend_from_slice(flag);
    }
    line.extend_from_slice(b"\r\n");
    if command == MetaCommand::Set {
        line.extend_from_slice(data);
        line.extend_from_slice(b"\r\n");
    }
    let limits = Limits::default();
    let (request, n) = match parse_request(&line, &limits) {
        Ok(ok) => ok,
        Err(e) => panic!("{:?}: {e:?}", String::from_utf8_lossy(&line)),
    };
    assert_eq!(n, line.len());
    let Request::Meta(m) = request else { panic!("not meta: {request:?}") };
    assert_eq!(m.command, command);
    if command == MetaCommand::Set {
        assert_eq!(m.data, data);
    }
    expect.check(&m.flags);
    assert_eq!(m.flags.tokens().count(), flags.len());
    let mut encoded = Vec::new();
    request.encode(&mut encoded);
    assert_eq!(encoded, line, "canonical meta bytes are stable");
    check_prefixes(&line, &limits);
}

#[derive(Default)]
struct Expected {
    base64: bool,
    opaque: Option<Vec<u8>>,
    ttl: Option<i32>,
    vivify: Option<i32>,
    recache: Option<i32>,
    client_flags: Option<u32>,
    compare_cas: Option<u64>,
    new_cas: Option<u64>,
    delta: Option<u64>,
    initial: Option<u64>,
    mode: Option<u8>,
    bare: Vec<u8>,
}

impl Expected {
    fn record(&mut self, op: &MetaFlagOp, token: &[u8]) {
        match op {
            MetaFlagOp::Bare(_) => self.bare.push(token[0]),
            MetaFlagOp::Opaque(..) => self.opaque = Some(token[1..].to_vec()),
            MetaFlagOp::Ttl(v) => self.ttl = Some(*v),
            MetaFlagOp::Vivify(v) => self.vivify = Some(*v),
            MetaFlagOp::Recache(v) => self.recache = Some(*v),
            MetaFlagOp::ClientFlags(v) => self.client_flags = Some(*v),
            MetaFlagOp::CompareCas(v) => self.compare_cas = Some(*v),
            MetaFlagOp::NewCas(v) => self.new_cas = Some(*v),
            MetaFlagOp::Delta(v) => self.delta = Some(*v),
            MetaFlagOp::Initial(v) => self.initial = Some(*v),
            MetaFlagOp::Mode(_) => self.mode = Some(token[1]),
            MetaFlagOp::Base64 => self.base64 = true,
        }
    }

    fn check(&self, flags: &fridge_proto::memcache::MetaFlags<'_>) {
        assert_eq!(flags.base64_key(), self.base64);
        assert_eq!(flags.opaque().map(<[u8]>::to_vec), self.opaque);
        assert_eq!(flags.ttl(), self.ttl);
        assert_eq!(flags.vivify_ttl(), self.vivify);
        assert_eq!(flags.recache_ttl(), self.recache);
        assert_eq!(flags.client_flags(), self.client_flags);
        assert_eq!(flags.compare_cas(), self.compare_cas);
        assert_eq!(flags.new_cas(), self.new_cas);
        assert_eq!(flags.delta(), self.delta);
        assert_eq!(flags.initial(), self.initial);
        assert_eq!(flags.mode(), self.mode);
        for &letter in &self.bare {
            assert!(flags.has(letter));
        }
        assert_eq!(flags.quiet(), self.bare.contains(&b'q'));
    }
}
