//! memcached requests: the classic commands
//! by shape (storage, retrieval, arithmetic, the rest), and their encoders.
//! Meta commands live in `meta.rs`, the line reader and tokenizer in `tokens.rs`.

use super::meta::{self, MetaRequest};
use super::tokens::{Tokens, data_block, invalid, is_retrieval_prefix, parse_data_len, read_line};
use super::{ErrorKind, Limits, ParseError};
use crate::number::{parse_i32, parse_u32, parse_u64, write_i64, write_u64, write_usize};
use crate::waiting::{GetRequest, WaitingGets};

/// One request: a command line and, for storage commands and `ms`, the data
/// block that followed it. Every slice borrows from the parsed buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// `set add replace append prepend cas`.
    Storage(Storage<'a>),
    /// `get gets gat gats`.
    Retrieval(Retrieval<'a>),
    /// `delete <key> [0] [noreply]` (the legacy `0` is accepted and dropped).
    Delete {
        /// The key.
        key: &'a [u8],
        /// Send no reply.
        noreply: bool,
    },
    /// `incr`/`decr <key> <delta> [noreply]`.
    Arithmetic {
        /// Increment or decrement.
        command: ArithmeticCommand,
        /// The key.
        key: &'a [u8],
        /// Amount, a `u64`.
        delta: u64,
        /// Send no reply.
        noreply: bool,
    },
    /// `touch <key> <exptime> [noreply]`.
    Touch {
        /// The key.
        key: &'a [u8],
        /// New expiration, memcached's exptime (relative ≤ 30 days, else
        /// absolute; negative expires at once).
        exptime: i32,
        /// Send no reply.
        noreply: bool,
    },
    /// `flush_all [delay] [noreply]`.
    FlushAll {
        /// Seconds (or absolute time) before the flush takes effect.
        delay: Option<i32>,
        /// Send no reply.
        noreply: bool,
    },
    /// `stats [args…]`; `args` is the rest of the line, empty for plain
    /// `stats`.
    Stats {
        /// Everything after `stats `, e.g. `settings` or `detail dump`.
        args: &'a [u8],
    },
    /// `lru_crawler [args…]`; `args` is the rest of the line, e.g. `metadump all`.
    LruCrawler {
        /// Everything after `lru_crawler `.
        args: &'a [u8],
    },
    /// `version`.
    Version,
    /// `verbosity <level> [noreply]`.
    Verbosity {
        /// The level.
        level: u32,
        /// Send no reply.
        noreply: bool,
    },
    /// `quit`: close the connection, no reply.
    Quit,
    /// `watch [event…]`: turn the connection into a log watcher (memcached's
    /// `doc/protocol.txt`, "Watchers"). No event names means `fetchers`.
    Watch {
        /// The event streams asked for (never empty). A last token `noreply`
        /// is no event name: memcached answers nothing and the connection
        /// stays as it was.
        events: WatchEvents,
    },
    /// `cache_memlimit <megabytes> [noreply]` (`doc/protocol.txt`, "Memory
    /// limit"). As memcached reads it: an unsigned decimal taken modulo 2^32.
    CacheMemlimit {
        /// The new limit in megabytes.
        megabytes: u32,
        /// Send no reply.
        noreply: bool,
    },
    /// `shutdown [graceful]` (memcached 1.6, with `-A`).
    Shutdown {
        /// Everything after `shutdown `: empty or `graceful` are its modes.
        args: &'a [u8],
    },
    /// `mg ms md ma mn me`.
    Meta(MetaRequest<'a>),
}

/// The event streams a `watch` asks for, as a bit set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WatchEvents(u8);

impl WatchEvents {
    /// `fetchers`: `item_get` lines, one per key read.
    pub const FETCHERS: WatchEvents = WatchEvents(1);
    /// `mutations`: `item_store` lines, one per store attempted.
    pub const MUTATIONS: WatchEvents = WatchEvents(1 << 1);
    /// `evictions`: `eviction` lines.
    pub const EVICTIONS: WatchEvents = WatchEvents(1 << 2);
    /// `connevents`: `conn_new` and `conn_close` lines.
    pub const CONNEVENTS: WatchEvents = WatchEvents(1 << 3);
    /// `deletions`: `deleted` lines (memcached 1.6.19 and later).
    pub const DELETIONS: WatchEvents = WatchEvents(1 << 4);
    /// Redis's `MONITOR`: a line per command run (not a `watch` stream; not in [`Self::ALL`]).
    pub const MONITOR: WatchEvents = WatchEvents(1 << 5);
    /// `slow`: the slow requests, as `SLOWLOG` keeps them (fridge's stream).
    pub const SLOW: WatchEvents = WatchEvents(1 << 6);
    /// Every stream, in the order their names are written.
    pub const ALL: [(WatchEvents, &'static [u8]); 6] = [
        (Self::FETCHERS, b"fetchers"),
        (Self::MUTATIONS, b"mutations"),
        (Self::EVICTIONS, b"evictions"),
        (Self::CONNEVENTS, b"connevents"),
        (Self::DELETIONS, b"deletions"),
        (Self::SLOW, b"slow"),
    ];

    /// The set with no stream.
    pub const fn empty() -> WatchEvents {
        WatchEvents(0)
    }

    /// The set as bits (each constant is one bit).
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// The set of `bits` a `watch` command can name ([`Self::ALL`]'s; other bits, and
    /// [`Self::MONITOR`], dropped).
    pub const fn from_bits(bits: u8) -> WatchEvents {
        WatchEvents(bits & !Self::MONITOR.0 & 0x7f)
    }

    /// Whether every stream of `other` is in the set.
    pub const fn contains(self, other: WatchEvents) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union of two sets.
    #[must_use]
    pub const fn with(self, other: WatchEvents) -> WatchEvents {
        WatchEvents(self.0 | other.0)
    }

    /// The stream a name given to `watch` stands for.
    pub fn from_name(name: &[u8]) -> Option<WatchEvents> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(e, _)| *e)
    }
}

/// The storage commands, which differ only in the condition they store on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StorageCommand {
    /// Store unconditionally.
    Set,
    /// Store only if absent.
    Add,
    /// Store only if present.
    Replace,
    /// Append to an existing value (flags and exptime ignored).
    Append,
    /// Prepend to an existing value (flags and exptime ignored).
    Prepend,
    /// Store only if the CAS unique still matches.
    Cas,
}

impl StorageCommand {
    /// The command name on the wire.
    pub const fn name(self) -> &'static [u8] {
        match self {
            Self::Set => b"set",
            Self::Add => b"add",
            Self::Replace => b"replace",
            Self::Append => b"append",
            Self::Prepend => b"prepend",
            Self::Cas => b"cas",
        }
    }
}

/// `<command> <key> <flags> <exptime> <bytes> [<cas unique>] [noreply]`
/// followed by the data block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Storage<'a> {
    /// Which storage command.
    pub command: StorageCommand,
    /// The key.
    pub key: &'a [u8],
    /// Opaque client flags, 32 bits.
    pub flags: u32,
    /// memcached exptime.
    pub exptime: i32,
    /// The CAS unique; meaningful for `cas` only, 0 otherwise.
    pub cas: u64,
    /// Send no reply.
    pub noreply: bool,
    /// The data block, without its `\r\n`.
    pub data: &'a [u8],
}

/// The retrieval commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetrievalCommand {
    /// Values.
    Get,
    /// Values with CAS uniques.
    Gets,
    /// Values, and touch.
    Gat,
    /// Values with CAS uniques, and touch.
    Gats,
}

impl RetrievalCommand {
    /// The command name on the wire.
    pub const fn name(self) -> &'static [u8] {
        match self {
            Self::Get => b"get",
            Self::Gets => b"gets",
            Self::Gat => b"gat",
            Self::Gats => b"gats",
        }
    }

    /// Whether `VALUE` lines carry the CAS unique.
    pub const fn returns_cas(self) -> bool {
        matches!(self, Self::Gets | Self::Gats)
    }

    /// Whether the command takes an exptime and touches what it finds.
    pub const fn touches(self) -> bool {
        matches!(self, Self::Gat | Self::Gats)
    }
}

/// `get <key>+`, `gat <exptime> <key>+` and their `s` forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retrieval<'a> {
    /// Which retrieval command.
    pub command: RetrievalCommand,
    /// For `gat`/`gats`, the new exptime; 0 otherwise.
    pub exptime: i32,
    /// One or more keys, each within the key limit.
    pub keys: Keys<'a>,
}

/// `incr` or `decr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArithmeticCommand {
    /// Add, wrapping at 2^64.
    Incr,
    /// Subtract, stopping at 0.
    Decr,
}

impl ArithmeticCommand {
    /// The command name on the wire.
    pub const fn name(self) -> &'static [u8] {
        match self {
            Self::Incr => b"incr",
            Self::Decr => b"decr",
        }
    }
}

/// The keys of a retrieval command, kept as the space-separated bytes of the
/// line so that a multiget of any size costs no allocation. Equality compares
/// the keys, not the spacing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Keys<'a> {
    raw: &'a [u8],
    /// `raw` is known to be one key (no space, not empty): iterating it looks for no space.
    /// A `get` walks its key list several times (routing, the one-key check, the lookup,
    /// the check for more), and nearly every `get` names one key.
    one: bool,
}

impl<'a> Keys<'a> {
    /// Wraps space-separated keys (runs of spaces are one separator).
    pub const fn new(raw: &'a [u8]) -> Self {
        Self { raw, one: false }
    }

    /// Wraps what is either one key or space-separated keys, looking for a space once.
    pub fn scan(raw: &'a [u8]) -> Self {
        Self { raw, one: !raw.is_empty() && memchr::memchr(b' ', raw).is_none() }
    }

    /// The keys in order.
    pub fn iter(&self) -> SpaceSplit<'a> {
        SpaceSplit { rest: self.raw, one: self.one }
    }

    /// How many keys there are.
    pub fn count(&self) -> usize {
        self.iter().count()
    }

    /// Whether there is no key at all.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// The bytes as they appeared on the line.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }
}

impl PartialEq for Keys<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Keys<'_> {}

impl<'a> IntoIterator for Keys<'a> {
    type Item = &'a [u8];
    type IntoIter = SpaceSplit<'a>;
    fn into_iter(self) -> SpaceSplit<'a> {
        self.iter()
    }
}

/// Iterator over the non-empty, space-separated tokens of a byte string.
#[derive(Clone, Debug)]
pub struct SpaceSplit<'a> {
    rest: &'a [u8],
    /// `rest` is one key, not yet yielded.
    one: bool,
}

impl<'a> SpaceSplit<'a> {
    /// The bytes not yet split (a server answering a multiget in steps resumes from them).
    pub const fn remainder(&self) -> &'a [u8] {
        self.rest
    }
}

impl<'a> Iterator for SpaceSplit<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.one {
            self.one = false;
            let (key, end) = self.rest.split_at(self.rest.len());
            self.rest = end;
            return Some(key);
        }
        let start = self.rest.iter().position(|&c| c != b' ')?;
        let rest = &self.rest[start..];
        // A key's end found a vector at a time: every `get` walks its key list several times
        // (routing, the one-key check, the lookups), and keys run to 250 bytes.
        let end = memchr::memchr(b' ', rest).unwrap_or(rest.len());
        self.rest = &rest[end..];
        Some(&rest[..end])
    }
}

/// Parses one request from the start of `buf`.
///
/// Returns the request and the number of bytes it used, or
/// [`ParseError::Incomplete`] when `buf` holds only part of it, or
/// [`ParseError::Invalid`] with memcached's reply and how much to skip.
pub fn parse_request<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<(Request<'a>, usize), ParseError> {
    let (line, line_len) = read_line(buf, limits)?;
    if let Some(request) = fast_retrieval(line, limits) {
        return Ok((request, line_len));
    }
    if let Some(parsed) = fast_set(line, buf, line_len, limits) {
        return parsed;
    }
    if let Some(get) = meta::fast_get(line, limits) {
        return Ok((Request::Meta(get), line_len));
    }
    if let Some(parsed) = meta::fast_set(line, buf, line_len, limits) {
        return parsed.map(|(set, consumed)| (Request::Meta(set), consumed));
    }
    if let Some(meta) = meta::fast_delete_or_arithmetic(line, limits) {
        return Ok((Request::Meta(meta), line_len));
    }
    let t = Tokens::new(line);
    let command = t.get(0);
    let unknown = Err(invalid(ErrorKind::UnknownCommand, line_len, false));
    if command.len() < 2 {
        return unknown;
    }
    let n = t.len();
    let request = match command {
        b"get" => retrieval(RetrievalCommand::Get, &t, line_len, limits)?,
        b"gets" => retrieval(RetrievalCommand::Gets, &t, line_len, limits)?,
        b"gat" => retrieval(RetrievalCommand::Gat, &t, line_len, limits)?,
        b"gats" => retrieval(RetrievalCommand::Gats, &t, line_len, limits)?,
        b"set" => return storage(StorageCommand::Set, &t, buf, line_len, limits),
        b"add" => return storage(StorageCommand::Add, &t, buf, line_len, limits),
        b"replace" => return storage(StorageCommand::Replace, &t, buf, line_len, limits),
        b"append" => return storage(StorageCommand::Append, &t, buf, line_len, limits),
        b"prepend" => return storage(StorageCommand::Prepend, &t, buf, line_len, limits),
        b"cas" => return storage(StorageCommand::Cas, &t, buf, line_len, limits),
        b"delete" => delete(&t, line_len, limits)?,
        b"incr" => arithmetic(ArithmeticCommand::Incr, &t, line_len, limits)?,
        b"decr" => arithmetic(ArithmeticCommand::Decr, &t, line_len, limits)?,
        b"touch" => {
            if !(3..=4).contains(&n) {
                return unknown;
            }
            let noreply = t.noreply();
            let key = checked_key(t.get(1), line_len, noreply, limits)?;
            let exptime = parse_i32(t.get(2))
                .ok_or_else(|| invalid(ErrorKind::InvalidExptime, line_len, noreply))?;
            Request::Touch { key, exptime, noreply }
        }
        b"flush_all" => {
            if n > 3 {
                return unknown;
            }
            let noreply = t.noreply();
            let delay = if n != if noreply { 2 } else { 1 } {
                let delay = parse_i32(t.get(1))
                    .ok_or_else(|| invalid(ErrorKind::InvalidExptime, line_len, noreply))?;
                Some(delay)
            } else {
                None
            };
            Request::FlushAll { delay, noreply }
        }
        b"stats" => Request::Stats { args: t.rest(1) },
        b"lru_crawler" => Request::LruCrawler { args: t.rest(1) },
        b"version" => Request::Version,
        b"quit" => Request::Quit,
        b"shutdown" => Request::Shutdown { args: t.rest(1) },
        b"verbosity" => {
            if !(2..=3).contains(&n) {
                return unknown;
            }
            let noreply = t.noreply();
            // memcached's safe_strtoul takes any unsigned long and keeps its low 32 bits.
            let level = parse_u64(t.get(1))
                .map(|n| n as u32)
                .ok_or_else(|| invalid(ErrorKind::BadFormat, line_len, noreply))?;
            Request::Verbosity { level, noreply }
        }
        b"watch" => {
            let noreply = t.noreply();
            let mut events = WatchEvents::empty();
            for x in 1..n {
                let e = WatchEvents::from_name(t.get(x))
                    .ok_or_else(|| invalid(ErrorKind::UnknownCommand, line_len, noreply))?;
                events = events.with(e);
            }
            if n == 1 {
                events = WatchEvents::FETCHERS;
            }
            Request::Watch { events }
        }
        b"cache_memlimit" => {
            if !(2..=3).contains(&n) {
                return unknown;
            }
            let noreply = t.noreply();
            // memcached's `safe_strtoul` into a `uint32_t`: digits, an optional `+`, then the
            // value modulo 2^32; anything else (a sign `-`, overflow) is `ERROR`.
            let digits = t.get(1).strip_prefix(b"+").unwrap_or(t.get(1));
            let value = parse_u64(digits)
                .ok_or_else(|| invalid(ErrorKind::UnknownCommand, line_len, noreply))?;
            Request::CacheMemlimit { megabytes: value as u32, noreply }
        }
        [b'm', _] => {
            let (meta, consumed) = meta::parse(&t, buf, line_len, limits)?;
            return Ok((Request::Meta(meta), consumed));
        }
        // memcached's last check for a command it does not know (`proto_text.c`).
        _ if t.get(n - 1).starts_with(b"HTTP/") => {
            return Err(invalid(ErrorKind::HttpRequest, line_len, false));
        }
        _ => return unknown,
    };
    Ok((request, line_len))
}

/// [`parse_request`] for a buffer that grows between calls (a connection's
/// read buffer, from the request's first byte): `scanned` carries, from one
/// call to the next, how many bytes were already searched for the line's end
/// without finding it, so a long line arriving in many reads is searched
/// once, not once per read. Start with 0; it is 0 again after any result
/// but `Incomplete`.
#[inline]
pub fn parse_request_resumable<'a>(
    buf: &'a [u8],
    limits: &Limits,
    scanned: &mut usize,
) -> Result<(Request<'a>, usize), ParseError> {
    let from = (*scanned).min(buf.len());
    if from > 0 && !buf[from..].contains(&b'\n') {
        // Still no line, and none too long: wait (what `parse_request` would say).
        if buf.len() < limits.max_line_len
            || (is_retrieval_prefix(buf) && buf.len() < limits.max_retrieval_line_len)
        {
            *scanned = buf.len();
            return Err(ParseError::Incomplete);
        }
    }
    let result = parse_request(buf, limits);
    *scanned = match result {
        // No line yet: all of `buf` was searched. (With a line, a storage command waits
        // for its data block; its line is short and is parsed again.)
        Err(ParseError::Incomplete) if !buf.contains(&b'\n') => buf.len(),
        _ => 0,
    };
    result
}

fn checked_key<'a>(
    key: &'a [u8],
    skip: usize,
    noreply: bool,
    limits: &Limits,
) -> Result<&'a [u8], ParseError> {
    if key.len() > limits.max_key_len {
        Err(invalid(ErrorKind::KeyTooLong, skip, noreply))
    } else {
        Ok(key)
    }
}

/// `get` and `gets` (the commonest requests) without the tokenizer, which zeroes a table of
/// spans and splits the whole line into words first: the same request [`retrieval`] makes of
/// the line, or `None` for every other line and for lines the general path refuses (no key,
/// a key too long), so that it gives their errors.
#[inline]
fn fast_retrieval<'a>(line: &'a [u8], limits: &Limits) -> Option<Request<'a>> {
    let (command, rest) = if let Some(rest) = line.strip_prefix(b"get ") {
        (RetrievalCommand::Get, rest)
    } else {
        (RetrievalCommand::Gets, line.strip_prefix(b"gets ")?)
    };
    // What `Tokens::rest(1)` gives: from the first key to the last non-space byte.
    let first = rest.iter().position(|&c| c != b' ')?;
    let last = rest.iter().rposition(|&c| c != b' ')?;
    let keys = Keys::scan(&rest[first..=last]);
    if keys.iter().any(|k| k.len() > limits.max_key_len) {
        return None;
    }
    Some(Request::Retrieval(Retrieval { command, exptime: 0, keys }))
}

/// `set` with single spaces (the commonest write) without the tokenizer, the same way:
/// what [`storage`] makes of the line and its data block, or `None` for every other line and
/// for lines whose fields the general path refuses or reads differently (a key too long, a
/// field that is no number, a value too large, runs of spaces, a sixth word other than
/// `noreply`), so that it gives their errors.
#[inline]
fn fast_set<'a>(
    line: &'a [u8],
    buf: &'a [u8],
    line_len: usize,
    limits: &Limits,
) -> Option<Result<(Request<'a>, usize), ParseError>> {
    let mut words = line.strip_prefix(b"set ")?.split(|&c| c == b' ');
    let key = words.next().filter(|k| !k.is_empty() && k.len() <= limits.max_key_len)?;
    let flags = parse_u32(words.next()?)?;
    let exptime = parse_i32(words.next()?)?;
    let len = parse_data_len(words.next()?).filter(|&len| len <= limits.max_value_len)?;
    let noreply = match words.next() {
        None => false,
        Some(b"noreply") if words.next().is_none() => true,
        Some(_) => return None,
    };
    let command = StorageCommand::Set;
    Some(data_block(buf, line_len, len, noreply).map(|(data, consumed)| {
        let set = Storage { command, key, flags, exptime, cas: 0, noreply, data };
        (Request::Storage(set), consumed)
    }))
}

/// The keys of the one-key `get`/`gets` lines waiting whole at the start of `buf`, in order
/// ([`crate::waiting`]). A key's end is looked for within 250 bytes (memcached's longest
/// key), so that a long line still arriving is not read again at every look.
pub fn waiting_get_keys(buf: &[u8]) -> WaitingGets<'_, GetLine> {
    WaitingGets::new(buf)
}

/// memcached's longest key: [`waiting_get_keys`] looks no further for a key's end.
const MAX_KEY_LEN: usize = 250;

/// A one-key `get` or `gets` line ([`waiting_get_keys`]).
#[derive(Debug)]
pub struct GetLine;

impl GetRequest for GetLine {
    fn next_get(buf: &[u8]) -> Option<(&[u8], &[u8])> {
        let after = buf.strip_prefix(b"get ").or_else(|| buf.strip_prefix(b"gets "))?;
        // The key runs to the line's end (`\r\n` or `\n`); a space means another key or
        // trailing spaces, which the look-ahead leaves to the parser.
        let window = &after[..after.len().min(MAX_KEY_LEN + 1)];
        let len = memchr::memchr3(b' ', b'\r', b'\n', window)?;
        let (key, tail) = after.split_at(len);
        let tail = tail.strip_prefix(b"\r").unwrap_or(tail);
        Some((key, tail.strip_prefix(b"\n").filter(|_| !key.is_empty())?))
    }
}

fn retrieval<'a>(
    command: RetrievalCommand,
    t: &Tokens<'a>,
    line_len: usize,
    limits: &Limits,
) -> Result<Request<'a>, ParseError> {
    let (exptime, first_key) = if command.touches() {
        if t.len() < 3 {
            return Err(invalid(ErrorKind::UnknownCommand, line_len, false));
        }
        let exptime = parse_i32(t.get(1))
            .ok_or_else(|| invalid(ErrorKind::InvalidExptime, line_len, false))?;
        (exptime, 2)
    } else {
        if t.len() < 2 {
            return Err(invalid(ErrorKind::UnknownCommand, line_len, false));
        }
        (0, 1)
    };
    let keys = Keys::new(t.rest(first_key));
    if keys.iter().any(|k| k.len() > limits.max_key_len) {
        return Err(invalid(ErrorKind::KeyTooLong, line_len, false));
    }
    Ok(Request::Retrieval(Retrieval { command, exptime, keys }))
}

fn storage<'a>(
    command: StorageCommand,
    t: &Tokens<'a>,
    buf: &'a [u8],
    line_len: usize,
    limits: &Limits,
) -> Result<(Request<'a>, usize), ParseError> {
    let with_cas = usize::from(command == StorageCommand::Cas);
    let n = t.len();
    if n != 5 + with_cas && n != 6 + with_cas {
        return Err(invalid(ErrorKind::UnknownCommand, line_len, false));
    }
    let noreply = t.noreply();
    let len = parse_data_len(t.get(4));
    // Once the data length is known, every error swallows the block too.
    let skip = len.map_or(line_len, |len| line_len + len + 2);
    let key = checked_key(t.get(1), skip, noreply, limits)?;
    let bad = || invalid(ErrorKind::BadFormat, skip, noreply);
    let flags = parse_u32(t.get(2)).ok_or_else(bad)?;
    let exptime = parse_i32(t.get(3)).ok_or_else(bad)?;
    let len = len.ok_or_else(bad)?;
    let cas = if with_cas == 1 { parse_u64(t.get(5)).ok_or_else(bad)? } else { 0 };
    if len > limits.max_value_len {
        return Err(invalid(ErrorKind::TooLarge, skip, noreply));
    }
    let (data, consumed) = data_block(buf, line_len, len, noreply)?;
    Ok((Request::Storage(Storage { command, key, flags, exptime, cas, noreply, data }), consumed))
}

fn delete<'a>(t: &Tokens<'a>, line_len: usize, limits: &Limits) -> Result<Request<'a>, ParseError> {
    let n = t.len();
    if !(2..=4).contains(&n) {
        return Err(invalid(ErrorKind::UnknownCommand, line_len, false));
    }
    // memcached looks for `noreply` only when there is more than a key.
    let noreply = n > 2 && t.noreply();
    if n > 2 {
        let hold_is_zero = t.get(2) == b"0";
        let valid = (n == 3 && (hold_is_zero || noreply)) || (n == 4 && hold_is_zero && noreply);
        if !valid {
            return Err(invalid(ErrorKind::DeleteUsage, line_len, noreply));
        }
    }
    let key = checked_key(t.get(1), line_len, noreply, limits)?;
    Ok(Request::Delete { key, noreply })
}

fn arithmetic<'a>(
    command: ArithmeticCommand,
    t: &Tokens<'a>,
    line_len: usize,
    limits: &Limits,
) -> Result<Request<'a>, ParseError> {
    if !(3..=4).contains(&t.len()) {
        return Err(invalid(ErrorKind::UnknownCommand, line_len, false));
    }
    let noreply = t.noreply();
    let key = checked_key(t.get(1), line_len, noreply, limits)?;
    let delta =
        parse_u64(t.get(2)).ok_or_else(|| invalid(ErrorKind::InvalidDelta, line_len, noreply))?;
    Ok(Request::Arithmetic { command, key, delta, noreply })
}

fn push_noreply(out: &mut Vec<u8>, noreply: bool) {
    if noreply {
        out.extend_from_slice(b" noreply");
    }
}

impl Request<'_> {
    /// Appends the canonical wire form of this request (single spaces,
    /// `\r\n` endings). Parsing the output gives back an equal request.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Self::Storage(s) => {
                out.extend_from_slice(s.command.name());
                out.push(b' ');
                out.extend_from_slice(s.key);
                out.push(b' ');
                write_u64(out, u64::from(s.flags));
                out.push(b' ');
                write_i64(out, i64::from(s.exptime));
                out.push(b' ');
                write_usize(out, s.data.len());
                if s.command == StorageCommand::Cas {
                    out.push(b' ');
                    write_u64(out, s.cas);
                }
                push_noreply(out, s.noreply);
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(s.data);
                out.extend_from_slice(b"\r\n");
            }
            Self::Retrieval(r) => {
                let exptime = r.command.touches().then_some(r.exptime);
                encode_retrieval(out, r.command, exptime, r.keys);
            }
            Self::Delete { key, noreply } => {
                out.extend_from_slice(b"delete ");
                out.extend_from_slice(key);
                push_noreply(out, noreply);
                out.extend_from_slice(b"\r\n");
            }
            Self::Arithmetic { command, key, delta, noreply } => {
                out.extend_from_slice(command.name());
                out.push(b' ');
                out.extend_from_slice(key);
                out.push(b' ');
                write_u64(out, delta);
                push_noreply(out, noreply);
                out.extend_from_slice(b"\r\n");
            }
            Self::Touch { key, exptime, noreply } => {
                out.extend_from_slice(b"touch ");
                out.extend_from_slice(key);
                out.push(b' ');
                write_i64(out, i64::from(exptime));
                push_noreply(out, noreply);
                out.extend_from_slice(b"\r\n");
            }
            Self::FlushAll { delay, noreply } => {
                out.extend_from_slice(b"flush_all");
                if let Some(delay) = delay {
                    out.push(b' ');
                    write_i64(out, i64::from(delay));
                }
                push_noreply(out, noreply);
                out.extend_from_slice(b"\r\n");
            }
            Self::Stats { args } => {
                out.extend_from_slice(b"stats");
                if !args.is_empty() {
                    out.push(b' ');
                    out.extend_from_slice(args);
                }
                out.extend_from_slice(b"\r\n");
            }
            Self::LruCrawler { args } => {
                out.extend_from_slice(b"lru_crawler");
                if !args.is_empty() {
                    out.push(b' ');
                    out.extend_from_slice(args);
                }
                out.extend_from_slice(b"\r\n");
            }
            Self::Version => out.extend_from_slice(b"version\r\n"),
            Self::Verbosity { level, noreply } => {
                out.extend_from_slice(b"verbosity ");
                write_u64(out, u64::from(level));
                push_noreply(out, noreply);
                out.extend_from_slice(b"\r\n");
            }
            Self::Quit => out.extend_from_slice(b"quit\r\n"),
            Self::Watch { events } => {
                out.extend_from_slice(b"watch");
                for (e, name) in WatchEvents::ALL {
                    if events.contains(e) {
                        out.push(b' ');
                        out.extend_from_slice(name);
                    }
                }
                out.extend_from_slice(b"\r\n");
            }
            Self::CacheMemlimit { megabytes, noreply } => {
                out.extend_from_slice(b"cache_memlimit ");
                write_u64(out, u64::from(megabytes));
                push_noreply(out, noreply);
                out.extend_from_slice(b"\r\n");
            }
            Self::Shutdown { args } => {
                out.extend_from_slice(b"shutdown");
                if !args.is_empty() {
                    out.push(b' ');
                    out.extend_from_slice(args);
                }
                out.extend_from_slice(b"\r\n");
            }
            Self::Meta(m) => m.encode(out),
        }
    }
}

/// Appends a retrieval request for `keys`: `get k1 k2\r\n`, or
/// `gat <exptime> k1 k2\r\n` when `exptime` is given (it should be exactly
/// when `command.touches()`).
pub fn encode_retrieval<'k>(
    out: &mut Vec<u8>,
    command: RetrievalCommand,
    exptime: Option<i32>,
    keys: impl IntoIterator<Item = &'k [u8]>,
) {
    out.extend_from_slice(command.name());
    if let Some(exptime) = exptime {
        out.push(b' ');
        write_i64(out, i64::from(exptime));
    }
    for key in keys {
        out.push(b' ');
        out.extend_from_slice(key);
    }
    out.extend_from_slice(b"\r\n");
}

/// For a request refused with [`ErrorKind::TooLarge`] at the start of `buf`: the key whose
/// stored value memcached drops with the refusal, so that no stale value outlives a failed
/// `set` (`proto_text.c`), and whether that key is base64 (`ms … b`). `set` and `ms` (any mode)
/// drop it; `add`, `replace`, `append`, `prepend` and `cas` keep it (checked against memcached
/// 1.6.18).
pub fn oversize_store_key<'a>(buf: &'a [u8], limits: &Limits) -> Option<(&'a [u8], bool)> {
    let (line, _) = read_line(buf, limits).ok()?;
    let t = Tokens::new(line);
    match t.get(0) {
        b"set" => Some((t.get(1), false)),
        b"ms" => Some((t.get(1), (3..t.len()).any(|i| t.get(i) == b"b"))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::RequestError;
    use super::*;

    #[test]
    fn waiting_get_keys_are_those_of_the_whole_one_key_get_lines_first_in_the_buffer() {
        fn keys(buf: &[u8]) -> Vec<&[u8]> {
            waiting_get_keys(buf).collect()
        }
        let want: [&[u8]; 3] = [b"a", b"bb", b"c"];
        assert_eq!(keys(b"get a\r\ngets bb\nget c\r\nget d"), want, "the last line is not whole");
        assert_eq!(keys(b"get a\r\nget x y\r\nget c\r\n"), [b"a"], "a multiget ends the run");
        assert_eq!(keys(b"get a\r\nset b 0 0 1\r\nget c\r\n"), [b"a"], "so does a store");
        assert_eq!(keys(b"get a \r\n"), Vec::<&[u8]>::new(), "a key is never more than the line");
        let longest = [&b"get "[..], &[b'k'; MAX_KEY_LEN], b"\r\n"].concat();
        assert_eq!(keys(&longest).len(), 1);
        let longer = [&b"get "[..], &[b'k'; MAX_KEY_LEN + 1], b"\r\n"].concat();
        assert_eq!(keys(&longer).len(), 0, "not looked at past the longest key");
        let mut it = waiting_get_keys(b"get a\r\nset b 0 0 1\r\n");
        assert_eq!((it.next(), it.next(), it.next()), (Some(&b"a"[..]), None, None));
        assert_eq!(it.remainder(), b"set b 0 0 1\r\n", "the first line not taken");
        for none in [&b"get \r\n"[..], b"get", b"mg a v\r\n", b"", b"\r\n", b" get a\r\n"] {
            assert_eq!(keys(none), Vec::<&[u8]>::new(), "{:?}", String::from_utf8_lossy(none));
        }
        // Every yielded key is one the parser takes from its line.
        let buf = b"get k1\r\ngets k2\r\nget k3\r\n";
        let (mut at, limits) = (0, Limits::default());
        for key in waiting_get_keys(buf) {
            let (req, used) = parse_request(&buf[at..], &limits).expect("parses");
            let Request::Retrieval(r) = req else { panic!("a retrieval") };
            assert_eq!(r.keys.iter().collect::<Vec<_>>(), [key]);
            at += used;
        }
        assert_eq!(at, buf.len());
    }

    #[test]
    fn get_and_gets_parse_as_the_tokenizer_parses_them() {
        let limits = Limits::default();
        let long = [b'k'; 251];
        let at_limit = [&b"get a "[..], &long[..250]].concat();
        let over = [&b"gets a "[..], &long[..]].concat();
        // Each line, and whether the fast path takes it.
        let lines: [(&[u8], bool); 16] = [
            (b"get a", true),
            (b"gets a", true),
            (b"get a\x01", true),
            (b"get  a", true),
            (b"get a ", true),
            (b"get a b  c ", true),
            (&at_limit, true),
            (&over, false),
            (b"get ", false),
            (b"get   ", false),
            (b"get", false),
            (b" get a", false),
            (b"gat 0 a", false),
            (b"getx a", false),
            (b"get\ta", false),
            (b"GET a", false),
        ];
        for (line, fast) in lines {
            let got = fast_retrieval(line, &limits);
            assert_eq!(got.is_some(), fast, "{:?}", line.escape_ascii());
            if let Some(Request::Retrieval(r)) = got {
                let general = retrieval(r.command, &Tokens::new(line), 9, &limits).unwrap();
                let Request::Retrieval(g) = general else { panic!("{general:?}") };
                assert_eq!(
                    (r, r.keys.as_bytes()),
                    (g, g.keys.as_bytes()),
                    "{:?}",
                    line.escape_ascii()
                );
            }
        }
        let (fast, used) = parse(b"get key\r\nget key2\r\n").unwrap();
        assert_eq!(used, 9);
        let Request::Retrieval(r) = fast else { panic!("{fast:?}") };
        assert_eq!(
            (r.command, r.exptime, r.keys.as_bytes()),
            (RetrievalCommand::Get, 0, &b"key"[..])
        );
    }

    #[test]
    fn set_parses_as_the_tokenizer_parses_it() {
        let limits = Limits { max_value_len: 100, ..Limits::default() };
        let long = [b'k'; 251];
        let at_limit = [&b"set "[..], &long[..250], b" 0 0 2"].concat();
        let over = [&b"set "[..], &long[..], b" 0 0 2"].concat();
        // Each line, and whether the fast path takes it.
        let lines: [(&[u8], bool); 25] = [
            (b"set k 0 0 2", true),
            (b"set k 4294967295 -1 2 noreply", true),
            (b"set k 1 2147483647 0", true),
            (b"set k\x01 0 0 2", true),
            (&at_limit, true),
            (&over, false),
            (b"set k 4294967296 0 2", false),
            (b"set k 0 2147483648 2", false),
            (b"set k 0 0 -1", false),
            (b"set k 0 0 101", false),
            (b"set k 0 0 2 noreplyx", false),
            (b"set k 0 0 2 x", false),
            (b"set k 0 0 2 noreply x", false),
            (b"set k 0 0 2 ", false),
            (b"set  k 0 0 2", false),
            (b"set k 0 0", false),
            (b"set k 0 0 x", false),
            (b"set k a 0 2", false),
            (b"set k 0 0 +2", false),
            (b"set ", false),
            (b"set", false),
            (b" set k 0 0 2", false),
            (b"SET k 0 0 2", false),
            (b"setx k 0 0 2", false),
            (b"add k 0 0 2", false),
        ];
        for (line, fast) in lines {
            for block in [&b"ab\r\n"[..], b"ab", b"abc\r\n", b""] {
                let buf = [line, b"\r\n", block].concat();
                let line_len = line.len() + 2;
                let got = fast_set(line, &buf, line_len, &limits);
                assert_eq!(got.is_some(), fast, "{:?}", line.escape_ascii().to_string());
                if let Some(got) = got {
                    let general =
                        storage(StorageCommand::Set, &Tokens::new(line), &buf, line_len, &limits);
                    assert_eq!(got, general, "{:?}", buf.escape_ascii().to_string());
                    assert_eq!(got, parse(&buf), "{:?}", buf.escape_ascii().to_string());
                }
            }
        }
    }

    #[test]
    fn scanned_keys_split_as_plain_keys_do() {
        for raw in [&b"key"[..], b"a b", b"a  b ", b" a", b"", b" ", b"k\x01y"] {
            let (scanned, plain) = (Keys::scan(raw), Keys::new(raw));
            assert_eq!(scanned.one, !raw.is_empty() && !raw.contains(&b' '), "{raw:?}");
            let (mut a, mut b) = (scanned.iter(), plain.iter());
            loop {
                let (x, y) = (a.next(), b.next());
                assert_eq!(x, y, "{raw:?}");
                // Where a resumed multiget would go on from: the same place in the line.
                assert_eq!(a.remainder().as_ptr_range(), b.remainder().as_ptr_range());
                if x.is_none() {
                    break;
                }
            }
            assert_eq!(scanned.count(), plain.count());
        }
    }

    #[test]
    fn watch_events_from_bits_are_the_nameable_streams() {
        let all = WatchEvents::from_bits(u8::MAX);
        assert!(!all.contains(WatchEvents::MONITOR), "MONITOR is no `watch` stream");
        assert!(WatchEvents::ALL.iter().all(|&(e, _)| all.contains(e)));
    }

    fn parse(input: &[u8]) -> Result<(Request<'_>, usize), ParseError> {
        parse_request(input, &Limits::default())
    }

    fn ok(input: &[u8]) -> Request<'_> {
        match parse(input) {
            Ok((r, n)) => {
                assert_eq!(n, input.len(), "consumed all of {:?}", String::from_utf8_lossy(input));
                r
            }
            Err(e) => panic!("{:?}: {e:?}", String::from_utf8_lossy(input)),
        }
    }

    #[test]
    fn a_resumed_line_search_starts_where_the_last_stopped() {
        let limits = Limits::default();
        let mut scanned = 0;
        // A long multiget line arriving in pieces: each piece is searched once.
        let mut line = b"get".to_vec();
        for i in 0..2000 {
            line.extend_from_slice(format!(" key{i}").as_bytes());
            let r = parse_request_resumable(&line, &limits, &mut scanned);
            assert_eq!(r.unwrap_err(), ParseError::Incomplete);
            assert_eq!(scanned, line.len());
        }
        // Proof that old bytes are not searched again: a newline planted among them is
        // not seen; the one that arrives is.
        line[10] = b'\n';
        assert_eq!(
            parse_request_resumable(&line, &limits, &mut scanned),
            Err(ParseError::Incomplete)
        );
        line.extend_from_slice(b"\r\n");
        let (req, used) = parse_request_resumable(&line, &limits, &mut scanned).unwrap();
        assert_eq!((used, scanned), (11, 0), "parsed whole, up to the planted newline");
        assert!(matches!(req, Request::Retrieval(_)));
        // A storage command waits for its block, then parses like `parse_request`.
        let wire = b"set k 0 0 5\r\nhello\r\n";
        for cut in 1..wire.len() {
            let mut scanned = 0;
            for end in 1..=cut {
                let r = parse_request_resumable(&wire[..end], &limits, &mut scanned);
                assert_eq!(r.unwrap_err(), ParseError::Incomplete);
            }
            let whole = parse_request_resumable(wire, &limits, &mut scanned);
            assert_eq!(whole, parse_request(wire, &limits));
        }
        // Too long a line still gets memcached's error.
        let mut scanned = 0;
        let long = vec![b'x'; limits.max_line_len + 1];
        let r = parse_request_resumable(&long, &limits, &mut scanned);
        assert!(matches!(r, Err(ParseError::Invalid(_))));
    }

    fn err(input: &[u8]) -> RequestError {
        match parse(input) {
            Err(ParseError::Invalid(e)) => e,
            other => {
                panic!("{:?}: expected an error, got {other:?}", String::from_utf8_lossy(input))
            }
        }
    }

    /// Every strict prefix of a complete request is `Incomplete`.
    fn assert_prefixes_incomplete(input: &[u8]) {
        for i in 0..input.len() {
            assert_eq!(
                parse(&input[..i]).err(),
                Some(ParseError::Incomplete),
                "prefix {i} of {:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    /// Parses, re-encodes, re-parses: same request, canonical bytes stable.
    fn assert_round_trip(input: &[u8]) {
        let request = ok(input);
        let mut encoded = Vec::new();
        request.encode(&mut encoded);
        assert_eq!(ok(&encoded), request, "{:?}", String::from_utf8_lossy(&encoded));
        let mut again = Vec::new();
        ok(&encoded).encode(&mut again);
        assert_eq!(again, encoded);
    }

    #[test]
    fn set_parses_with_its_data_block() {
        let r = ok(b"set foo 5 100 3\r\nbar\r\n");
        assert_eq!(
            r,
            Request::Storage(Storage {
                command: StorageCommand::Set,
                key: b"foo",
                flags: 5,
                exptime: 100,
                cas: 0,
                noreply: false,
                data: b"bar",
            })
        );
    }

    #[test]
    fn every_storage_command_parses() {
        for (name, command) in [
            ("set", StorageCommand::Set),
            ("add", StorageCommand::Add),
            ("replace", StorageCommand::Replace),
            ("append", StorageCommand::Append),
            ("prepend", StorageCommand::Prepend),
        ] {
            let line = format!("{name} k 0 0 2 noreply\r\nhi\r\n");
            let Request::Storage(s) = ok(line.as_bytes()) else { panic!("{name}") };
            assert_eq!((s.command, s.noreply, s.data), (command, true, &b"hi"[..]));
        }
        let Request::Storage(s) = ok(b"cas k 1 2 2 99\r\nhi\r\n") else { panic!() };
        assert_eq!((s.command, s.cas, s.noreply), (StorageCommand::Cas, 99, false));
        let Request::Storage(s) = ok(b"cas k 1 2 2 99 noreply\r\nhi\r\n") else { panic!() };
        assert!(s.noreply);
    }

    #[test]
    fn data_may_hold_crlf_and_be_empty() {
        let Request::Storage(s) = ok(b"set k 0 0 4\r\n\r\n\r\n\r\n") else { panic!() };
        assert_eq!(s.data, b"\r\n\r\n");
        let Request::Storage(s) = ok(b"set k 0 0 0\r\n\r\n") else { panic!() };
        assert_eq!(s.data, b"");
    }

    #[test]
    fn trailing_spaces_dont_matter() {
        assert_eq!(ok(b"get foo   \r\n"), ok(b"get foo\r\n"));
        assert_eq!(ok(b"set  k  0 0   1  \r\nx\r\n"), ok(b"set k 0 0 1\r\nx\r\n"));
        assert_eq!(ok(b"  delete k\r\n"), ok(b"delete k\r\n"));
    }

    #[test]
    fn bare_newline_ends_a_line() {
        assert_eq!(ok(b"get foo\n"), ok(b"get foo\r\n"));
        assert_eq!(ok(b"set k 0 0 1\nx\r\n"), ok(b"set k 0 0 1\r\nx\r\n"));
    }

    #[test]
    fn negative_exptime_and_32_bit_flags_are_fine() {
        let Request::Storage(s) = ok(b"set k 4294967295 -1 1\r\nx\r\n") else { panic!() };
        assert_eq!((s.flags, s.exptime), (u32::MAX, -1));
    }

    #[test]
    fn unknown_noreply_position_is_ignored_like_memcached() {
        // memcached only looks at the last token; anything else there is ignored.
        let Request::Storage(s) = ok(b"set k 0 0 1 bogus\r\nx\r\n") else { panic!() };
        assert!(!s.noreply);
    }

    #[test]
    fn retrieval_takes_many_keys() {
        let Request::Retrieval(r) = ok(b"get a bb ccc\r\n") else { panic!() };
        assert_eq!(r.command, RetrievalCommand::Get);
        assert_eq!(r.keys.iter().collect::<Vec<_>>(), [&b"a"[..], b"bb", b"ccc"]);
        let Request::Retrieval(r) = ok(b"gats 300 a b\r\n") else { panic!() };
        assert_eq!((r.command, r.exptime, r.keys.count()), (RetrievalCommand::Gats, 300, 2));
        let Request::Retrieval(r) = ok(b"gets a\r\n") else { panic!() };
        assert!(r.command.returns_cas());
        let Request::Retrieval(r) = ok(b"gat -1 a\r\n") else { panic!() };
        assert_eq!(r.exptime, -1);
    }

    #[test]
    fn other_commands_parse() {
        assert_eq!(ok(b"delete k\r\n"), Request::Delete { key: b"k", noreply: false });
        assert_eq!(ok(b"delete k 0\r\n"), Request::Delete { key: b"k", noreply: false });
        assert_eq!(ok(b"delete k noreply\r\n"), Request::Delete { key: b"k", noreply: true });
        assert_eq!(ok(b"delete k 0 noreply\r\n"), Request::Delete { key: b"k", noreply: true });
        assert_eq!(
            ok(b"delete noreply\r\n"),
            Request::Delete { key: b"noreply", noreply: false },
            "a key named noreply is a key"
        );
        assert_eq!(
            ok(b"incr k 18446744073709551615\r\n"),
            Request::Arithmetic {
                command: ArithmeticCommand::Incr,
                key: b"k",
                delta: u64::MAX,
                noreply: false
            }
        );
        assert_eq!(
            ok(b"decr k 1 noreply\r\n"),
            Request::Arithmetic {
                command: ArithmeticCommand::Decr,
                key: b"k",
                delta: 1,
                noreply: true
            }
        );
        assert_eq!(
            ok(b"touch k 10\r\n"),
            Request::Touch { key: b"k", exptime: 10, noreply: false }
        );
        assert_eq!(ok(b"flush_all\r\n"), Request::FlushAll { delay: None, noreply: false });
        assert_eq!(ok(b"flush_all 5\r\n"), Request::FlushAll { delay: Some(5), noreply: false });
        assert_eq!(ok(b"flush_all noreply\r\n"), Request::FlushAll { delay: None, noreply: true });
        assert_eq!(
            ok(b"flush_all 0 noreply\r\n"),
            Request::FlushAll { delay: Some(0), noreply: true }
        );
        assert_eq!(ok(b"stats\r\n"), Request::Stats { args: b"" });
        assert_eq!(ok(b"stats detail dump \r\n"), Request::Stats { args: b"detail dump" });
        assert_eq!(
            ok(b"lru_crawler metadump all\r\n"),
            Request::LruCrawler { args: b"metadump all" }
        );
        assert_eq!(ok(b"version\r\n"), Request::Version);
        assert_eq!(ok(b"quit\r\n"), Request::Quit);
        assert_eq!(ok(b"verbosity 1\r\n"), Request::Verbosity { level: 1, noreply: false });
        assert_eq!(ok(b"verbosity 1 noreply\r\n"), Request::Verbosity { level: 1, noreply: true });
        assert_eq!(
            ok(b"verbosity 99999999999999\r\n"),
            Request::Verbosity { level: 99999999999999u64 as u32, noreply: false },
            "as memcached: any unsigned long, truncated"
        );
        assert_eq!(ok(b"shutdown\r\n"), Request::Shutdown { args: b"" });
        assert_eq!(ok(b"shutdown graceful \r\n"), Request::Shutdown { args: b"graceful" });
    }

    #[test]
    fn pipelined_requests_parse_one_at_a_time() {
        let input = b"get a\r\nset b 0 0 1\r\nx\r\ndelete c\r\n";
        let (first, n1) = parse(input).unwrap();
        assert!(matches!(first, Request::Retrieval(_)));
        let (second, n2) = parse(&input[n1..]).unwrap();
        assert!(matches!(second, Request::Storage(_)));
        let (third, n3) = parse(&input[n1 + n2..]).unwrap();
        assert!(matches!(third, Request::Delete { .. }));
        assert_eq!(n1 + n2 + n3, input.len());
    }

    #[test]
    fn http_request_lines_close_without_a_reply() {
        for line in
            [&b"GET / HTTP/1.1\r\n"[..], b"POST /x HTTP/1.0\n", b"HTTP/1.1\r\n", b"FOO HTTP/\r\n"]
        {
            let Err(ParseError::Invalid(e)) = parse(line) else { panic!("{line:?} parsed") };
            assert_eq!((e.kind, e.reply(), e.closes()), (ErrorKind::HttpRequest, &b""[..], true));
        }
        // A known command, a one-byte command, or no HTTP/ at the end: ordinary answers.
        assert!(parse(b"get / HTTP/1.1\r\n").is_ok());
        for line in [&b"x HTTP/1\r\n"[..], b"FOO HTTP/ x\r\n", b"PUT / http/1.1\r\n"] {
            let Err(ParseError::Invalid(e)) = parse(line) else { panic!("{line:?} parsed") };
            assert_eq!(e.kind, ErrorKind::UnknownCommand);
        }
    }

    #[test]
    fn unknown_or_misshapen_commands_are_error() {
        for input in [
            &b"bogus\r\n"[..],
            b"\r\n",
            b"\n",
            b"g\r\n",
            b"GET foo\r\n",
            b"get\r\n",
            b"gat 10\r\n",
            b"set k 0 0\r\n",
            b"set k 0 0 1 noreply extra\r\n",
            b"cas k 0 0 1\r\n",
            b"delete\r\n",
            b"delete a b c d\r\n",
            b"incr k\r\n",
            b"touch k\r\n",
            b"flush_all 1 2 3\r\n",
            b"verbosity\r\n",
            b"mz k\r\n",
            b"mg\r\n",
        ] {
            let e = err(input);
            assert_eq!(e.kind, ErrorKind::UnknownCommand, "{:?}", String::from_utf8_lossy(input));
            assert_eq!(e.reply(), b"ERROR\r\n");
            assert_eq!(e.skip, input.len());
            assert!(!e.closes());
        }
    }

    #[test]
    fn bad_numbers_have_memcached_wording() {
        let e = err(b"set k x 0 1\r\nx\r\n");
        assert_eq!(e.reply(), b"CLIENT_ERROR bad command line format\r\n");
        assert_eq!(e.skip, 16, "the data block is swallowed too");
        let e = err(b"set k 0 0 -1\r\n");
        assert_eq!((e.kind, e.skip), (ErrorKind::BadFormat, 14));
        let e = err(b"cas k 0 0 1 x\r\nx\r\n");
        assert_eq!((e.kind, e.skip), (ErrorKind::BadFormat, 18));
        assert_eq!(err(b"touch k x\r\n").reply(), b"CLIENT_ERROR invalid exptime argument\r\n");
        assert_eq!(err(b"gat x k\r\n").reply(), b"CLIENT_ERROR invalid exptime argument\r\n");
        assert_eq!(err(b"flush_all x\r\n").kind, ErrorKind::InvalidExptime);
        assert_eq!(
            err(b"incr k -1\r\n").reply(),
            b"CLIENT_ERROR invalid numeric delta argument\r\n"
        );
        assert_eq!(err(b"decr k 18446744073709551616\r\n").kind, ErrorKind::InvalidDelta);
        assert_eq!(err(b"verbosity x\r\n").kind, ErrorKind::BadFormat);
        assert_eq!(
            err(b"delete k 1\r\n").reply(),
            &b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"[..]
        );
    }

    #[test]
    fn errors_after_noreply_stay_quiet() {
        let e = err(b"incr k x noreply\r\n");
        assert!(e.noreply);
        let e = err(b"set k x 0 1 noreply\r\nx\r\n");
        assert!(e.noreply);
        assert!(!err(b"bogus noreply\r\n").noreply);
    }

    #[test]
    fn long_keys_are_refused() {
        let limits = Limits::default();
        let key = "k".repeat(limits.max_key_len);
        ok(format!("get {key}\r\n").as_bytes());
        let long = "k".repeat(limits.max_key_len + 1);
        for line in [
            format!("get a {long}\r\n"),
            format!("delete {long}\r\n"),
            format!("incr {long} 1\r\n"),
            format!("touch {long} 1\r\n"),
            format!("mg {long} v\r\n"),
        ] {
            let e = err(line.as_bytes());
            assert_eq!(e.kind, ErrorKind::KeyTooLong);
            assert_eq!(e.reply(), b"CLIENT_ERROR bad command line format\r\n");
            assert_eq!(e.skip, line.len());
        }
        let line = format!("set {long} 0 0 5\r\nhello\r\n");
        let e = err(line.as_bytes());
        assert_eq!((e.kind, e.skip), (ErrorKind::KeyTooLong, line.len()));
    }

    #[test]
    fn too_large_values_are_swallowed() {
        let limits = Limits { max_value_len: 4, ..Limits::default() };
        // The error comes as soon as the line is read, before the data arrives.
        let e = match parse_request(b"set k 0 0 5\r\n", &limits) {
            Err(ParseError::Invalid(e)) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(e.reply(), b"SERVER_ERROR object too large for cache\r\n");
        assert_eq!(e.skip, 13 + 5 + 2);
        assert!(parse_request(b"set k 0 0 4\r\nabcd\r\n", &limits).is_ok());
    }

    fn encoded(r: &Request<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        r.encode(&mut out);
        out
    }

    #[test]
    fn watch_names_its_streams() {
        let w = |e| Request::Watch { events: e };
        // No names: fetchers, as memcached.
        assert_eq!(ok(b"watch\r\n"), w(WatchEvents::FETCHERS));
        assert_eq!(
            ok(b"watch mutations  evictions mutations\r\n"),
            w(WatchEvents::MUTATIONS.with(WatchEvents::EVICTIONS))
        );
        assert_eq!(
            encoded(&ok(b"watch deletions connevents\r\n")),
            b"watch connevents deletions\r\n"
        );
        // Unknown names, names memcached knows and fridge does not serve, and case: ERROR.
        for line in [&b"watch bogus\r\n"[..], b"watch rawcmds\r\n", b"watch Fetchers\r\n"] {
            let e = err(line);
            assert_eq!((e.kind, e.noreply, e.skip), (ErrorKind::UnknownCommand, false, line.len()));
        }
        // `noreply` is no stream: an error kept silent.
        assert!(err(b"watch fetchers noreply\r\n").noreply);
    }

    #[test]
    fn cache_memlimit_reads_as_safe_strtoul() {
        let m = |megabytes, noreply| Request::CacheMemlimit { megabytes, noreply };
        assert_eq!(ok(b"cache_memlimit 64\r\n"), m(64, false));
        assert_eq!(ok(b"cache_memlimit 64 noreply\r\n"), m(64, true));
        // A second token other than `noreply` is ignored, as memcached does.
        assert_eq!(ok(b"cache_memlimit 64 x\r\n"), m(64, false));
        assert_eq!(ok(b"cache_memlimit +8\r\n"), m(8, false));
        // Truncated to 32 bits, as `safe_strtoul` into a `uint32_t`.
        assert_eq!(ok(b"cache_memlimit 4294967296\r\n"), m(0, false));
        assert_eq!(ok(b"cache_memlimit 99999999999\r\n"), m(1_215_752_191, false));
        for line in [
            &b"cache_memlimit\r\n"[..],
            b"cache_memlimit abc\r\n",
            b"cache_memlimit -5\r\n",
            b"cache_memlimit 12abc\r\n",
            b"cache_memlimit 99999999999999999999\r\n",
            b"cache_memlimit 1 noreply x\r\n",
        ] {
            assert_eq!(err(line).kind, ErrorKind::UnknownCommand, "{line:?}");
        }
        assert!(err(b"cache_memlimit x noreply\r\n").noreply);
        assert_eq!(encoded(&m(64, true)), b"cache_memlimit 64 noreply\r\n");
    }

    #[test]
    fn bad_data_chunk_consumes_the_block() {
        let e = err(b"set k 0 0 3\r\nabcde\r\n");
        assert_eq!(e.reply(), b"CLIENT_ERROR bad data chunk\r\n");
        assert_eq!(e.skip, 13 + 3 + 2);
    }

    #[test]
    fn overlong_lines_close_the_connection() {
        let limits = Limits::default();
        let junk = vec![b'x'; limits.max_line_len];
        let e = err(&junk);
        assert_eq!(e.kind, ErrorKind::LineTooLong);
        assert!(e.closes());
        assert_eq!(parse(&junk[..limits.max_line_len - 1]), Err(ParseError::Incomplete));
        // Multigets may be longer.
        let mut get = b"get".to_vec();
        while get.len() < limits.max_line_len * 2 {
            get.extend_from_slice(b" key");
        }
        assert_eq!(parse(&get), Err(ParseError::Incomplete));
        get.extend_from_slice(b"\r\n");
        let Request::Retrieval(r) = ok(&get) else { panic!() };
        assert!(r.keys.count() > 500);
        let small = Limits { max_retrieval_line_len: 4096, ..limits };
        let long_get = [&b"get "[..], &vec![b'k'; 5000]].concat();
        assert!(matches!(
            parse_request(&long_get, &small),
            Err(ParseError::Invalid(RequestError { kind: ErrorKind::LineTooLong, .. }))
        ));
    }

    #[test]
    fn truncated_input_is_incomplete_at_every_byte() {
        for input in [
            &b"set foo 1 2 5\r\nhello\r\n"[..],
            b"cas foo 1 2 5 77 noreply\r\nhel\r\n\r\n",
            b"get a b c\r\n",
            b"gat 1 a\r\n",
            b"delete k 0 noreply\r\n",
            b"incr k 5\r\n",
            b"touch k 5\r\n",
            b"flush_all 5 noreply\r\n",
            b"stats items\r\n",
            b"version\r\n",
            b"verbosity 1\r\n",
            b"quit\r\n",
        ] {
            assert_prefixes_incomplete(input);
        }
    }

    #[test]
    fn requests_round_trip() {
        for input in [
            &b"set foo 1 2 5\r\nhello\r\n"[..],
            b"append  foo 0 0 1 noreply\r\nx\r\n",
            b"cas foo 1 -2 5 77 noreply\r\nhel\r\n\r\n",
            b"get a  b c\r\n",
            b"gats 1 a\r\n",
            b"delete k 0 noreply\r\n",
            b"decr k 5 noreply\r\n",
            b"touch k -5\r\n",
            b"flush_all\r\n",
            b"flush_all 5 noreply\r\n",
            b"stats\r\n",
            b"stats slabs\r\n",
            b"version\r\n",
            b"verbosity 1 noreply\r\n",
            b"quit\r\n",
        ] {
            assert_round_trip(input);
        }
    }

    #[test]
    fn encode_retrieval_from_a_key_list() {
        let mut out = Vec::new();
        encode_retrieval(&mut out, RetrievalCommand::Gat, Some(9), [&b"a"[..], b"b"]);
        assert_eq!(out, b"gat 9 a b\r\n");
    }

    #[test]
    fn nul_ends_the_line_like_in_c() {
        let Request::Retrieval(r) = ok(b"get a\0b\r\n") else { panic!() };
        assert_eq!(r.keys.iter().collect::<Vec<_>>(), [&b"a"[..]]);
    }
}
