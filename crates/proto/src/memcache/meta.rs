//! memcached meta commands and their flags.
//!
//! ```text
//! mg <key> <flag>*\r\n
//! ms <key> <datalen> <flag>*\r\n<data>\r\n
//! md <key> <flag>*\r\n
//! ma <key> <flag>*\r\n
//! mn\r\n
//! me <key> [b]\r\n
//! ```
//!
//! A flag is one letter, optionally followed by a token (`T30`, `Oabc`).
//! Replies carry the returned flags in the order the request gave them, so
//! [`MetaFlags`] keeps the raw flag bytes (for in-order iteration) next to
//! the values it parsed and validated (for direct use).
//!
//! Flags known here (the union memcached's parser accepts for every meta
//! command; a command ignores the ones that do not apply to it):
//!
//! | flag | token | meaning |
//! |---|---|---|
//! | `b` | – | key is base64; decode with [`base64_decode`] |
//! | `c` `f` `h` `k` `l` `s` `t` | – | return CAS, client flags, hit-before, key, last access, size, TTL |
//! | `v` | – | return the value |
//! | `q` | – | quiet: suppress the nominal reply (`EN`, `HD`, `NF` for `md`) |
//! | `u` | – | do not bump the item in the LRU |
//! | `I` | – | invalidate: `md` marks stale, `ms` with CAS may write over stale |
//! | `x` | – | `md`: remove the value but keep the item |
//! | `O` `P` `L` | any | opaque (echoed), proxy hints (ignored) |
//! | `T` `N` `R` | `i32` | new TTL, vivify-on-miss TTL, recache threshold |
//! | `F` | `u32` | client flags (`ms`) |
//! | `C` `E` | `u64` | compare CAS, explicit new CAS |
//! | `D` `J` | `u64` | `ma` delta and initial value |
//! | `M` | 1 char | mode: `ms` `E A P R S`, `ma` `I + D -` |

use super::tokens::{Tokens, data_block, invalid, parse_data_len};
use super::{ErrorKind, Limits, ParseError};
use crate::number::{parse_i32, parse_u32, parse_u64, write_usize};

/// memcached refuses meta lines with more than 20 tokens (its count includes
/// a terminal empty token, hence 19 real ones).
const MAX_META_TOKENS: usize = 19;

/// memcached's limit on an `O` token, letter included.
const MAX_OPAQUE_LEN: usize = 32;

/// Which meta command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaCommand {
    /// `mg`: get, touch, or any mix of returned metadata.
    Get,
    /// `ms`: set (or add, replace, append, prepend by mode).
    Set,
    /// `md`: delete or invalidate.
    Delete,
    /// `ma`: increment or decrement, optionally auto-creating.
    Arithmetic,
    /// `mn`: no-op, answered `MN`; marks the end of a pipeline.
    Noop,
    /// `me`: debug dump of one item's metadata.
    Debug,
}

impl MetaCommand {
    /// The two-letter command name.
    pub const fn name(self) -> &'static [u8] {
        match self {
            Self::Get => b"mg",
            Self::Set => b"ms",
            Self::Delete => b"md",
            Self::Arithmetic => b"ma",
            Self::Noop => b"mn",
            Self::Debug => b"me",
        }
    }
}

/// A meta request. `key` is as sent: base64 when `flags.has(b'b')`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaRequest<'a> {
    /// Which command.
    pub command: MetaCommand,
    /// The key as sent; empty for `mn`.
    pub key: &'a [u8],
    /// The flags, parsed and validated. For `me` only `b` is kept.
    pub flags: MetaFlags<'a>,
    /// The data block of `ms`; empty otherwise.
    pub data: &'a [u8],
}

/// One flag as it appeared: its letter and whatever followed the letter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlagToken<'a> {
    /// The flag letter.
    pub letter: u8,
    /// The bytes after the letter (e.g. `30` in `T30`), possibly empty.
    pub token: &'a [u8],
}

/// Space-separated flags, unparsed: the flags of a meta reply, or the raw
/// form of a request's [`MetaFlags`]. Equality compares the flags, not the
/// spacing.
#[derive(Clone, Copy, Debug, Default)]
pub struct RawFlags<'a> {
    raw: &'a [u8],
}

impl<'a> RawFlags<'a> {
    /// Wraps space-separated flag bytes.
    pub const fn new(raw: &'a [u8]) -> Self {
        Self { raw }
    }

    /// The flags in order.
    pub fn iter(&self) -> FlagTokens<'a> {
        FlagTokens { rest: self.raw }
    }

    /// The token of the first flag with this letter, if present.
    pub fn get(&self, letter: u8) -> Option<&'a [u8]> {
        self.iter().find(|f| f.letter == letter).map(|f| f.token)
    }

    /// The bytes as they appeared.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }
}

impl PartialEq for RawFlags<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for RawFlags<'_> {}

/// Iterator over [`FlagToken`]s.
#[derive(Clone, Debug)]
pub struct FlagTokens<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for FlagTokens<'a> {
    type Item = FlagToken<'a>;
    fn next(&mut self) -> Option<FlagToken<'a>> {
        let start = self.rest.iter().position(|&c| c != b' ')?;
        let rest = &self.rest[start..];
        let end = rest.iter().position(|&c| c == b' ').unwrap_or(rest.len());
        self.rest = &rest[end..];
        let (&letter, token) = rest[..end].split_first()?;
        Some(FlagToken { letter, token })
    }
}

/// Bit of a flag letter in [`MetaFlags`]'s presence mask: `a`–`z` are bits
/// 0–25, `A`–`Z` bits 26–51.
const fn letter_bit(letter: u8) -> Option<u64> {
    match letter {
        b'a'..=b'z' => Some(1 << (letter - b'a')),
        b'A'..=b'Z' => Some(1 << (letter - b'A' + 26)),
        _ => None,
    }
}

/// The flags of a meta request, validated: every letter known, none twice,
/// every numeric token in range, the key decodable when `b` is set.
///
/// Numeric accessors return `None` when the flag is absent. [`Self::tokens`]
/// walks the flags in request order, which is the order a reply must echo
/// returned flags in.
#[derive(Clone, Copy, Debug, Default)]
pub struct MetaFlags<'a> {
    raw: RawFlags<'a>,
    present: u64,
    ttl: i32,
    vivify_ttl: i32,
    recache_ttl: i32,
    client_flags: u32,
    compare_cas: u64,
    new_cas: u64,
    delta: u64,
    initial: u64,
    mode: u8,
    opaque: &'a [u8],
}

impl PartialEq for MetaFlags<'_> {
    fn eq(&self, other: &Self) -> bool {
        // Every other field is a function of the raw flags.
        self.raw == other.raw
    }
}

impl Eq for MetaFlags<'_> {}

impl<'a> MetaFlags<'a> {
    /// Whether the flag `letter` was given.
    pub const fn has(&self, letter: u8) -> bool {
        match letter_bit(letter) {
            Some(bit) => self.present & bit != 0,
            None => false,
        }
    }

    /// The flags in request order.
    pub fn tokens(&self) -> FlagTokens<'a> {
        self.raw.iter()
    }

    /// The flags as given (space-separated).
    pub const fn raw(&self) -> RawFlags<'a> {
        self.raw
    }

    const fn when<T: Copy>(&self, letter: u8, value: T) -> Option<T> {
        if self.has(letter) { Some(value) } else { None }
    }

    /// `q`: suppress nominal replies.
    pub const fn quiet(&self) -> bool {
        self.has(b'q')
    }

    /// `b`: the key is base64.
    pub const fn base64_key(&self) -> bool {
        self.has(b'b')
    }

    /// `T`: new TTL (memcached exptime).
    pub const fn ttl(&self) -> Option<i32> {
        self.when(b'T', self.ttl)
    }

    /// `N`: auto-create on miss with this TTL.
    pub const fn vivify_ttl(&self) -> Option<i32> {
        self.when(b'N', self.vivify_ttl)
    }

    /// `R`: win the recache token if the TTL is below this.
    pub const fn recache_ttl(&self) -> Option<i32> {
        self.when(b'R', self.recache_ttl)
    }

    /// `F`: client flags to store.
    pub const fn client_flags(&self) -> Option<u32> {
        self.when(b'F', self.client_flags)
    }

    /// `C`: compare-and-swap against this CAS.
    pub const fn compare_cas(&self) -> Option<u64> {
        self.when(b'C', self.compare_cas)
    }

    /// `E`: use this as the item's new CAS.
    pub const fn new_cas(&self) -> Option<u64> {
        self.when(b'E', self.new_cas)
    }

    /// `D`: `ma` delta (memcached's default is 1).
    pub const fn delta(&self) -> Option<u64> {
        self.when(b'D', self.delta)
    }

    /// `J`: `ma` initial value on auto-create (default 0).
    pub const fn initial(&self) -> Option<u64> {
        self.when(b'J', self.initial)
    }

    /// `M`: the mode character.
    pub const fn mode(&self) -> Option<u8> {
        self.when(b'M', self.mode)
    }

    /// `O`: the opaque bytes (without the letter), echoed in the reply as
    /// ` O<opaque>`.
    pub const fn opaque(&self) -> Option<&'a [u8]> {
        if self.has(b'O') { Some(self.opaque) } else { None }
    }

    /// Parses and validates space-separated flags `raw` for `key` the way
    /// memcached's `_meta_flag_preparse` does. Unknown and repeated letters
    /// fail at once; for bad tokens the last error wins, as in memcached.
    /// (`md` and `ma` report every failure as
    /// [`ErrorKind::InvalidOrDuplicateFlag`]; the request parser does that
    /// mapping.)
    pub fn parse(raw: &'a [u8], key: &[u8]) -> Result<Self, ErrorKind> {
        let mut flags = Self { raw: RawFlags::new(raw), ..Self::default() };
        let mut error = None;
        for FlagToken { letter, token } in flags.raw.iter() {
            let Some(bit) = letter_bit(letter) else {
                return Err(if letter >= 127 {
                    ErrorKind::DuplicateFlag
                } else {
                    ErrorKind::InvalidFlag
                });
            };
            if flags.present & bit != 0 {
                return Err(ErrorKind::DuplicateFlag);
            }
            flags.present |= bit;
            let bad_token = ErrorKind::BadToken;
            match letter {
                b'b' => {
                    if base64_decoded_len(key).is_none_or(|n| n == 0) {
                        error = Some(ErrorKind::KeyDecode);
                    }
                }
                b'c' | b'f' | b'h' | b'k' | b'l' | b's' | b't' | b'u' | b'v' | b'q' | b'x'
                | b'I' | b'P' | b'L' => {}
                b'O' => flags.opaque = token,
                b'T' => match parse_i32(token) {
                    Some(v) => flags.ttl = v,
                    None => error = Some(bad_token),
                },
                b'N' => match parse_i32(token) {
                    Some(v) => flags.vivify_ttl = v,
                    None => error = Some(bad_token),
                },
                b'R' => match parse_i32(token) {
                    Some(v) => flags.recache_ttl = v,
                    None => error = Some(bad_token),
                },
                b'F' => match parse_u32(token) {
                    Some(v) => flags.client_flags = v,
                    // memcached flags the error without changing the message.
                    None => error = Some(error.unwrap_or(ErrorKind::BadFormat)),
                },
                b'C' => match parse_u64(token) {
                    Some(v) => flags.compare_cas = v,
                    None => error = Some(bad_token),
                },
                b'E' => match parse_u64(token) {
                    Some(v) => flags.new_cas = v,
                    None => error = Some(bad_token),
                },
                b'D' => match parse_u64(token) {
                    Some(v) => flags.delta = v,
                    None => error = Some(ErrorKind::InvalidMetaDelta),
                },
                b'J' => match parse_u64(token) {
                    Some(v) => flags.initial = v,
                    None => error = Some(ErrorKind::InvalidInitial),
                },
                b'M' => match token {
                    [mode] => flags.mode = *mode,
                    _ => error = Some(ErrorKind::ModeTokenLength),
                },
                _ => return Err(ErrorKind::InvalidFlag),
            }
        }
        match error {
            Some(kind) => Err(kind),
            None => Ok(flags),
        }
    }
}

/// Parses a meta command whose tokens `t` came from a line of `line_len`
/// bytes at the start of `buf`.
pub(super) fn parse<'a>(
    t: &Tokens<'a>,
    buf: &'a [u8],
    line_len: usize,
    limits: &Limits,
) -> Result<(MetaRequest<'a>, usize), ParseError> {
    let command = match t.get(0) {
        b"mg" => MetaCommand::Get,
        b"ms" => MetaCommand::Set,
        b"md" => MetaCommand::Delete,
        b"ma" => MetaCommand::Arithmetic,
        b"mn" => MetaCommand::Noop,
        b"me" => MetaCommand::Debug,
        _ => return Err(invalid(ErrorKind::UnknownCommand, line_len, false)),
    };
    let done =
        |key, flags, data, consumed| Ok((MetaRequest { command, key, flags, data }, consumed));
    let key = t.get(1);
    match command {
        MetaCommand::Noop => return done(&[], MetaFlags::default(), &[], line_len),
        MetaCommand::Debug => {
            let bad = invalid(ErrorKind::BadFormat, line_len, false);
            if t.len() < 2 || key.len() > limits.max_key_len {
                return Err(bad);
            }
            let mut flags = MetaFlags::default();
            if t.get(2) == b"b" {
                if base64_decoded_len(key).is_none_or(|n| n == 0) {
                    return Err(bad);
                }
                flags = MetaFlags::parse(b"b", key).map_err(|_| bad)?;
            }
            return done(key, flags, &[], line_len);
        }
        _ => {}
    }
    if t.len() < 2 {
        return Err(invalid(ErrorKind::UnknownCommand, line_len, false));
    }
    // For `ms`, learn the data length first so that every error can swallow
    // the data block and keep the stream in sync.
    let (len, skip, first_flag) = if command == MetaCommand::Set {
        let len = parse_data_len(t.get(2));
        (len, len.map_or(line_len, |len| line_len + len + 2), 3)
    } else {
        (None, line_len, 2)
    };
    let fail = |kind| Err(invalid(kind, skip, false));
    if key.len() > limits.max_key_len {
        return fail(ErrorKind::KeyTooLong);
    }
    if command == MetaCommand::Set && t.len() == 2 {
        return fail(ErrorKind::BadFormat);
    }
    if t.len() > MAX_META_TOKENS {
        return fail(if command == MetaCommand::Get {
            ErrorKind::GetOptionsTooLong
        } else {
            ErrorKind::OptionsTooLong
        });
    }
    if command == MetaCommand::Set && len.is_none() {
        return fail(ErrorKind::BadFormat);
    }
    let flags = match MetaFlags::parse(t.rest(first_flag), key) {
        Ok(flags) => flags,
        Err(_) if matches!(command, MetaCommand::Delete | MetaCommand::Arithmetic) => {
            return fail(ErrorKind::InvalidOrDuplicateFlag);
        }
        Err(kind) => return fail(kind),
    };
    if flags.opaque().is_some_and(|o| o.len() + 1 > MAX_OPAQUE_LEN) {
        return fail(ErrorKind::OpaqueTooLong);
    }
    // A CAS value the store cannot hold is refused as one that does not parse.
    if flags.new_cas().is_some_and(|cas| cas > limits.max_cas) {
        return fail(match command {
            MetaCommand::Delete | MetaCommand::Arithmetic => ErrorKind::InvalidOrDuplicateFlag,
            _ => ErrorKind::BadToken,
        });
    }
    match (command, flags.mode()) {
        (MetaCommand::Set, Some(mode)) if !b"EAPRSeaprs".contains(&mode) => {
            return fail(ErrorKind::InvalidSetMode);
        }
        (MetaCommand::Arithmetic, Some(mode)) if !b"I+D-id".contains(&mode) => {
            return fail(ErrorKind::InvalidArithmeticMode);
        }
        _ => {}
    }
    match (command, len) {
        (MetaCommand::Set, Some(len)) => {
            if len > limits.max_value_len {
                return fail(ErrorKind::TooLarge);
            }
            let (data, consumed) = data_block(buf, line_len, len, false)?;
            done(key, flags, data, consumed)
        }
        _ => done(key, flags, &[], line_len),
    }
}

/// `mg` with single spaces (the meta protocol's commonest request) without the tokenizer,
/// which zeroes a table of spans and splits the whole line first: the request [`parse`] makes
/// of the line, or `None` for every other line and for every line it refuses or might read
/// differently (runs of spaces, more tokens than memcached takes, a flag it rejects), so that
/// it gives their errors.
#[inline]
pub(super) fn fast_get<'a>(line: &'a [u8], limits: &Limits) -> Option<MetaRequest<'a>> {
    let (key, flags) = split_word(line.strip_prefix(b"mg ")?);
    let flags = fast_flags(line, key, flags, 2, limits)?;
    Some(MetaRequest { command: MetaCommand::Get, key, flags, data: &[] })
}

/// `md` and `ma` the same way.
#[inline]
pub(super) fn fast_delete_or_arithmetic<'a>(
    line: &'a [u8],
    limits: &Limits,
) -> Option<MetaRequest<'a>> {
    let (command, rest) = match line.strip_prefix(b"md ") {
        Some(rest) => (MetaCommand::Delete, rest),
        None => (MetaCommand::Arithmetic, line.strip_prefix(b"ma ")?),
    };
    let (key, flags) = split_word(rest);
    let flags = fast_flags(line, key, flags, 2, limits)?;
    if command == MetaCommand::Arithmetic
        && flags.mode().is_some_and(|mode| !b"I+D-id".contains(&mode))
    {
        return None;
    }
    Some(MetaRequest { command, key, flags, data: &[] })
}

/// `ms` the same way: what [`parse`] makes of the line and its data block, or `None`.
#[inline]
pub(super) fn fast_set<'a>(
    line: &'a [u8],
    buf: &'a [u8],
    line_len: usize,
    limits: &Limits,
) -> Option<Result<(MetaRequest<'a>, usize), ParseError>> {
    let (key, rest) = split_word(line.strip_prefix(b"ms ")?);
    let (len, flags) = split_word(rest);
    let len = parse_data_len(len).filter(|&len| len <= limits.max_value_len)?;
    let flags = fast_flags(line, key, flags, 3, limits)?;
    if flags.mode().is_some_and(|mode| !b"EAPRSeaprs".contains(&mode)) {
        return None;
    }
    Some(data_block(buf, line_len, len, false).map(|(data, consumed)| {
        (MetaRequest { command: MetaCommand::Set, key, flags, data }, consumed)
    }))
}

/// The flags of a line whose first `fixed` tokens (command, key, …) the caller split off,
/// checked as [`parse`] checks them, or `None` for anything it might judge differently: a
/// key it refuses, runs of spaces or a trailing one, too many tokens, a flag it rejects.
#[inline]
fn fast_flags<'a>(
    line: &[u8],
    key: &[u8],
    flags: &'a [u8],
    fixed: usize,
    limits: &Limits,
) -> Option<MetaFlags<'a>> {
    if key.is_empty() || key.len() > limits.max_key_len || line.last() == Some(&b' ') {
        return None;
    }
    // Every flag one token between single spaces, as the tokenizer would count them.
    let mut tokens = fixed;
    if !flags.is_empty() {
        for flag in flags.split(|&c| c == b' ') {
            if flag.is_empty() {
                return None;
            }
            tokens += 1;
        }
    }
    if tokens > MAX_META_TOKENS {
        return None;
    }
    let flags = MetaFlags::parse(flags, key).ok()?;
    let refused = flags.opaque().is_some_and(|o| o.len() + 1 > MAX_OPAQUE_LEN)
        || flags.new_cas().is_some_and(|cas| cas > limits.max_cas);
    (!refused).then_some(flags)
}

/// The first word of `s` and what follows the space after it (empty where there is none).
fn split_word(s: &[u8]) -> (&[u8], &[u8]) {
    match memchr::memchr(b' ', s) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &s[s.len()..]),
    }
}

impl MetaRequest<'_> {
    /// Appends the canonical wire form of this request.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.command.name());
        if self.command != MetaCommand::Noop {
            out.push(b' ');
            out.extend_from_slice(self.key);
        }
        if self.command == MetaCommand::Set {
            out.push(b' ');
            write_usize(out, self.data.len());
        }
        for flag in self.flags.tokens() {
            out.push(b' ');
            out.push(flag.letter);
            out.extend_from_slice(flag.token);
        }
        out.extend_from_slice(b"\r\n");
        if self.command == MetaCommand::Set {
            out.extend_from_slice(self.data);
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// Appends a meta request built from raw parts (for the load generator):
/// `<cmd> <key>[ <datalen>] <flags>\r\n[<data>\r\n]`. `flags` is
/// space-separated (`b"v t c"`); `key` and `data` are ignored where the
/// command takes none (`mn`; `data` outside `ms`).
pub fn encode_meta(out: &mut Vec<u8>, command: MetaCommand, key: &[u8], flags: &[u8], data: &[u8]) {
    let data = if command == MetaCommand::Set { data } else { &[] };
    let key = if command == MetaCommand::Noop { &[][..] } else { key };
    let flags = RawFlags::new(flags);
    MetaRequest { command, key, flags: MetaFlags { raw: flags, ..MetaFlags::default() }, data }
        .encode(out);
}

const BASE64_ALPHABET: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

const fn base64_value(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// The decoded length of padded, standard-alphabet base64 `src`, or `None`
/// when it is not valid base64.
pub fn base64_decoded_len(src: &[u8]) -> Option<usize> {
    if src.len() % 4 != 0 {
        return None;
    }
    let padding = src.iter().rev().take_while(|&&c| c == b'=').count();
    if padding > 2 {
        return None;
    }
    let body = &src[..src.len() - padding];
    if !body.iter().all(|&c| base64_value(c).is_some()) {
        return None;
    }
    Some(src.len() / 4 * 3 - padding)
}

/// Decodes padded, standard-alphabet base64 `src` into `dst`, returning the
/// decoded length; `None` when `src` is invalid or `dst` too small. A key
/// of 250 base64 bytes decodes into at most 187 bytes.
pub fn base64_decode(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    let len = base64_decoded_len(src)?;
    let dst = dst.get_mut(..len)?;
    let mut bits: u32 = 0;
    let mut nbits = 0;
    let mut out = 0;
    for &c in src {
        let Some(v) = base64_value(c) else { break };
        bits = (bits << 6) | u32::from(v);
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            if let Some(slot) = dst.get_mut(out) {
                // The shifted value is masked to 8 bits.
                *slot = ((bits >> nbits) & 0xff) as u8;
            }
            out += 1;
        }
    }
    Some(len)
}

/// Appends the padded, standard-alphabet base64 form of `src` (for binary
/// keys returned with `k` and `b`).
pub fn base64_encode(src: &[u8], out: &mut Vec<u8>) {
    for chunk in src.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64_ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Request, RequestError, parse_request};
    use super::*;

    fn parse(input: &[u8]) -> Result<(Request<'_>, usize), ParseError> {
        parse_request(input, &Limits::default())
    }

    fn meta(input: &[u8]) -> MetaRequest<'_> {
        match parse(input) {
            Ok((Request::Meta(m), n)) => {
                assert_eq!(n, input.len());
                m
            }
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
        }
    }

    fn err(input: &[u8]) -> RequestError {
        match parse(input) {
            Err(ParseError::Invalid(e)) => e,
            other => {
                panic!("{:?}: expected an error, got {other:?}", String::from_utf8_lossy(input))
            }
        }
    }

    #[test]
    fn mg_ms_md_and_ma_parse_as_the_tokenizer_parses_them() {
        let limits = Limits { max_cas: 1000, max_value_len: 100, ..Limits::default() };
        let long = [b'k'; 251];
        let at_limit = [&b"mg "[..], &long[..250], b" v"].concat();
        let over = [&b"mg "[..], &long[..], b" v"].concat();
        // 19 tokens, memcached's most, and 20.
        let many = b"mg k c f h k l s t u v q x I P L T1 N1 R1";
        let too_many = b"mg k c f h k l s t u v q x I P L T1 N1 R1 F1";
        let ms_many = b"ms k 2 c f h k l s t u v q x I P L T1 N1";
        let ms_too_many = b"ms k 2 c f h k l s t u v q x I P L T1 N1 R1";
        let long_opaque = [&b"mg k v O"[..], &[b'o'; 31]].concat();
        let over_opaque = [&b"mg k v O"[..], &[b'o'; 32]].concat();
        // Each line, and whether a fast path takes it.
        let lines: [(&[u8], bool); 65] = [
            (b"mg k", true),
            (b"mg k v", true),
            (b"mg k s v f t c k h l O123 q", true),
            (b"mg k v T30 N10 R5", true),
            (b"mg k\x01 v", true),
            (b"mg a2V5 b v", true),
            (b"mg k E1000", true),
            (&at_limit, true),
            (many, true),
            (&long_opaque, true),
            (b"mg k ME", true),
            (b"mg k MX", true),
            (&over, false),
            (too_many, false),
            (&over_opaque, false),
            (b"mg k E1001", false),
            (b"mg k v v", false),
            (b"mg k v T", false),
            (b"mg k v Tx", false),
            (b"mg k v !", false),
            (b"mg k b", false),
            (b"mg k M", false),
            (b"mg k MEE", false),
            (b"mg k  v", false),
            (b"mg k v ", false),
            (b"mg k ", false),
            (b"mg  k v", false),
            (b"mg ", false),
            (b"mg", false),
            (b" mg k v", false),
            (b"MG k v", false),
            (b"mgk v", false),
            (b"ms k 2", true),
            (b"ms k 2 T30 F5 c I q", true),
            (b"ms k 0 MA", true),
            (b"ms k 100 Ms", true),
            (b"ms k 2 C7 E1000", true),
            (ms_many, true),
            (ms_too_many, false),
            (b"ms k 101", false),
            (b"ms k -1", false),
            (b"ms k x", false),
            (b"ms k 2 MX", false),
            (b"ms k 2 E1001", false),
            (b"ms k 2 T", false),
            (b"ms k 2 v v", false),
            (b"ms k", false),
            (b"ms k ", false),
            (b"ms k 2 ", false),
            (b"ms k  2", false),
            (b"ms k 2  v", false),
            (b"ms", false),
            (b"md k", true),
            (b"md k q I x T30 C5 O1", true),
            (b"md k E1001", false),
            (b"md k v v", false),
            (b"md k  q", false),
            (b"ma k", true),
            (b"ma k D5 J10 N30 MD q", true),
            (b"ma k M+", true),
            (b"ma k MX", false),
            (b"ma k Dx", false),
            (b"ma k D1 ", false),
            (b"mn", false),
            (b"me k", false),
        ];
        // Each data block: whole, cut short, not ended by CRLF.
        for data in [&b"hi\r\n"[..], b"h", b"hi!!"] {
            for (line, fast) in lines {
                let buf = [line, b"\r\n", data].concat();
                let line_len = line.len() + 2;
                let no_data = fast_get(line, &limits)
                    .or_else(|| fast_delete_or_arithmetic(line, &limits))
                    .map(|m| Ok((m, line_len)));
                let got = no_data.or_else(|| fast_set(line, &buf, line_len, &limits));
                assert_eq!(got.is_some(), fast, "{}", line.escape_ascii());
                let Some(got) = got else { continue };
                let general = super::parse(&Tokens::new(line), &buf, line_len, &limits);
                // Every field, the parsed values of the flags included, or the same error.
                let (got, general) = (format!("{got:?}"), format!("{general:?}"));
                assert_eq!(got, general, "{} {}", line.escape_ascii(), data.escape_ascii());
            }
        }
        // Through the whole parser, a fast line and the same line the general way agree.
        let (fast, used) = parse_request(b"mg key v t\r\nmg x\r\n", &limits).unwrap();
        let (slow, _) = parse_request(b"mg key  v t\r\n", &limits).unwrap();
        assert_eq!((fast, used), (slow, 12));
        let (fast, used) = parse_request(b"ms key 2 T9\r\nhi\r\n", &limits).unwrap();
        let (slow, _) = parse_request(b"ms key 2  T9\r\nhi\r\n", &limits).unwrap();
        assert_eq!((fast, used), (slow, 17));
    }

    #[test]
    fn mg_flags_parse_in_order() {
        let m = meta(b"mg foo s v t c f k Oab12 q T30 N10 R5 h l u\r\n");
        assert_eq!(m.command, MetaCommand::Get);
        assert_eq!(m.key, b"foo");
        for letter in *b"svtcfkqhlu" {
            assert!(m.flags.has(letter), "{}", letter as char);
        }
        assert!(!m.flags.has(b'b'));
        assert_eq!(m.flags.opaque(), Some(&b"ab12"[..]));
        assert_eq!(
            (m.flags.ttl(), m.flags.vivify_ttl(), m.flags.recache_ttl()),
            (Some(30), Some(10), Some(5))
        );
        assert!(m.flags.quiet());
        let order: Vec<u8> = m.flags.tokens().map(|f| f.letter).collect();
        assert_eq!(order, b"svtcfkOqTNRhlu");
    }

    #[test]
    fn ms_reads_its_data_block_and_mode() {
        let m = meta(b"ms foo 2 T90 MA c\r\nhi\r\n");
        assert_eq!((m.command, m.data, m.flags.mode()), (MetaCommand::Set, &b"hi"[..], Some(b'A')));
    }

    #[test]
    fn ms_flags_are_typed() {
        let m = meta(b"ms Zm9v 2 T90 F1 C5 E6 I MA c k b\r\nhi\r\n");
        assert_eq!(m.flags.ttl(), Some(90));
        assert_eq!(m.flags.client_flags(), Some(1));
        assert_eq!(m.flags.compare_cas(), Some(5));
        assert_eq!(m.flags.new_cas(), Some(6));
        assert_eq!(m.flags.mode(), Some(b'A'));
        assert!(m.flags.base64_key() && m.flags.has(b'I'));
        let mut key = [0u8; 8];
        let n = base64_decode(m.key, &mut key).unwrap();
        assert_eq!(&key[..n], b"foo");
    }

    #[test]
    fn a_new_cas_past_the_limit_is_a_bad_token_and_its_data_is_swallowed() {
        let limits = Limits { max_cas: 1000, ..Limits::default() };
        let ok = parse_request(b"ms k 1 E1000\r\nx\r\n", &limits);
        assert!(matches!(ok, Ok((Request::Meta(m), 17)) if m.flags.new_cas() == Some(1000)));
        for (input, reply) in [
            (
                &b"ms k 1 E1001\r\nx\r\n"[..],
                &b"CLIENT_ERROR bad token in command line format\r\n"[..],
            ),
            (b"mg k E1001\r\n", b"CLIENT_ERROR bad token in command line format\r\n"),
            (b"md k E1001\r\n", b"CLIENT_ERROR invalid or duplicate flag\r\n"),
            (b"ma k E1001\r\n", b"CLIENT_ERROR invalid or duplicate flag\r\n"),
        ] {
            match parse_request(input, &limits) {
                Err(ParseError::Invalid(e)) => {
                    assert_eq!(e.kind.reply(), reply, "{}", String::from_utf8_lossy(input));
                    assert_eq!(e.skip, input.len(), "the line and its data are skipped");
                }
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(input)),
            }
        }
    }

    #[test]
    fn md_ma_mn_me_parse() {
        let m = meta(b"md foo q I T30 x C7\r\n");
        assert_eq!((m.command, m.flags.compare_cas()), (MetaCommand::Delete, Some(7)));
        let m = meta(b"ma foo N0 J13 D5 MD v t c\r\n");
        assert_eq!(m.command, MetaCommand::Arithmetic);
        assert_eq!((m.flags.initial(), m.flags.delta()), (Some(13), Some(5)));
        assert_eq!(m.flags.mode(), Some(b'D'));
        assert_eq!(meta(b"ma foo\r\n").flags.delta(), None);
        let m = meta(b"mn\r\n");
        assert_eq!((m.command, m.key), (MetaCommand::Noop, &b""[..]));
        let m = meta(b"me foo\r\n");
        assert_eq!((m.command, m.key), (MetaCommand::Debug, &b"foo"[..]));
        let m = meta(b"me Zm9v b\r\n");
        assert!(m.flags.base64_key());
    }

    #[test]
    fn meta_errors_have_memcached_wording() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"mg foo v v\r\n", b"CLIENT_ERROR duplicate flag\r\n"),
            (b"mg foo !\r\n", b"CLIENT_ERROR invalid flag\r\n"),
            (b"mg foo z\r\n", b"CLIENT_ERROR invalid flag\r\n"),
            (b"mg foo \x80\r\n", b"CLIENT_ERROR duplicate flag\r\n"),
            (b"mg foo Tx\r\n", b"CLIENT_ERROR bad token in command line format\r\n"),
            (b"mg foo b\r\n", b"CLIENT_ERROR error decoding key\r\n"),
            (b"mg foo MAB\r\n", b"CLIENT_ERROR incorrect length for M token\r\n"),
            (b"md foo v v\r\n", b"CLIENT_ERROR invalid or duplicate flag\r\n"),
            (b"ma foo Dx\r\n", b"CLIENT_ERROR invalid or duplicate flag\r\n"),
            (b"ma foo MX\r\n", b"CLIENT_ERROR invalid mode for ma M token\r\n"),
            (
                b"mg foo O123456789012345678901234567890123\r\n",
                b"CLIENT_ERROR opaque token too long\r\n",
            ),
            (b"ms foo\r\n", b"CLIENT_ERROR bad command line format\r\n"),
            (b"ms foo x\r\n", b"CLIENT_ERROR bad command line format\r\n"),
            (b"me\r\n", b"CLIENT_ERROR bad command line format\r\n"),
            (b"me foo b\r\n", b"CLIENT_ERROR bad command line format\r\n"),
            (b"mg\r\n", b"ERROR\r\n"),
            (
                b"mg k a b c d e f g h i j k l m n o p q r\r\n",
                b"CLIENT_ERROR options flags are too long\r\n",
            ),
            (
                b"md k a b c d e f g h i j k l m n o p q r\r\n",
                b"CLIENT_ERROR options flags too long\r\n",
            ),
        ];
        for (input, reply) in cases {
            let e = err(input);
            assert_eq!(
                e.reply(),
                *reply,
                "{:?} gave {:?}",
                String::from_utf8_lossy(input),
                String::from_utf8_lossy(e.reply())
            );
            assert!(!e.noreply, "meta errors are always sent");
            assert_eq!(e.skip, input.len());
        }
        assert_eq!(err(b"ma foo Jx\r\n").kind, ErrorKind::InvalidOrDuplicateFlag);
        assert_eq!(err(b"mg foo Jx\r\n").kind, ErrorKind::InvalidInitial);
        assert_eq!(err(b"mg foo Dx\r\n").kind, ErrorKind::InvalidMetaDelta);
        assert_eq!(err(b"mg foo Fx\r\n").kind, ErrorKind::BadFormat);
    }

    #[test]
    fn ms_errors_swallow_the_data_block() {
        let input = b"ms foo 2 MX\r\nhi\r\n";
        let e = err(input);
        assert_eq!(e.reply(), b"CLIENT_ERROR invalid mode for ms M token\r\n");
        assert_eq!(e.skip, input.len());
        let e = err(b"ms foo 2 T1\r\nhiX\r\n");
        assert_eq!((e.kind, e.skip), (ErrorKind::BadDataChunk, 17));
        let limits = Limits { max_value_len: 1, ..Limits::default() };
        let e = parse_request(b"ms foo 2 T1\r\n", &limits);
        assert_eq!(
            e,
            Err(ParseError::Invalid(RequestError {
                kind: ErrorKind::TooLarge,
                skip: 17,
                noreply: false
            }))
        );
    }

    #[test]
    fn meta_requests_round_trip() {
        for input in [
            &b"mg foo s v t c f k Oab12 q T30 N10 R5 h l u\r\n"[..],
            b"ms Zm9v 2 T90  F1 C5 E6 I MA c k b\r\nhi\r\n",
            b"ms foo 0\r\n\r\n",
            b"md foo q I T30 x C7\r\n",
            b"ma foo N0 J13 D5 MD v t c\r\n",
            b"mn\r\n",
            b"me foo\r\n",
            b"me Zm9v b\r\n",
        ] {
            let request = meta(input);
            let mut out = Vec::new();
            request.encode(&mut out);
            assert_eq!(meta(&out), request, "{:?}", String::from_utf8_lossy(&out));
            for i in 0..input.len() {
                assert_eq!(parse(&input[..i]).err(), Some(ParseError::Incomplete), "prefix {i}");
            }
        }
    }

    #[test]
    fn encode_meta_builds_requests() {
        let mut out = Vec::new();
        encode_meta(&mut out, MetaCommand::Set, b"k", b"T10  c", b"hi");
        encode_meta(&mut out, MetaCommand::Get, b"k", b"v", b"ignored");
        encode_meta(&mut out, MetaCommand::Noop, b"ignored", b"", b"");
        assert_eq!(out, b"ms k 2 T10 c\r\nhi\r\nmg k v\r\nmn\r\n");
        let flags = MetaFlags::parse(b"T10 c", b"k").unwrap();
        assert_eq!(flags.ttl(), Some(10));
        assert_eq!(MetaFlags::parse(b"c c", b"k"), Err(ErrorKind::DuplicateFlag));
    }

    #[test]
    fn base64_round_trips() {
        for src in [&b""[..], b"f", b"fo", b"foo", b"foob", b"fooba", b"foobar", b"\x00\xff\x80"] {
            let mut enc = Vec::new();
            base64_encode(src, &mut enc);
            let mut dec = [0u8; 16];
            let n = base64_decode(&enc, &mut dec).unwrap();
            assert_eq!(&dec[..n], src);
        }
        let mut enc = Vec::new();
        base64_encode(b"foobar", &mut enc);
        assert_eq!(enc, b"Zm9vYmFy");
        for bad in [&b"Zm9"[..], b"Zm9v=", b"Z===", b"Zm!v", b"=Zm9"] {
            assert_eq!(base64_decoded_len(bad), None, "{bad:?}");
        }
        assert_eq!(base64_decode(b"Zm9vYmFy", &mut [0u8; 5]), None, "dst too small");
    }
}
