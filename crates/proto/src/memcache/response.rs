//! memcached responses: encoders for the server (appending to a reused
//! `Vec<u8>`) and a borrowing parser for the load generator and tests.

use super::meta::RawFlags;
use crate::number::{parse_u64, write_i64, write_u64, write_usize};

/// The fixed one-line replies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reply {
    /// `STORED`
    Stored,
    /// `NOT_STORED`
    NotStored,
    /// `EXISTS`
    Exists,
    /// `NOT_FOUND`
    NotFound,
    /// `DELETED`
    Deleted,
    /// `TOUCHED`
    Touched,
    /// `OK`
    Ok,
    /// `END`, closing retrieval and stats replies.
    End,
    /// `ERROR`, for an unknown command.
    Error,
    /// `RESET`, for `stats reset`.
    Reset,
}

impl Reply {
    /// The line, `\r\n` included.
    pub const fn as_bytes(self) -> &'static [u8] {
        match self {
            Self::Stored => b"STORED\r\n",
            Self::NotStored => b"NOT_STORED\r\n",
            Self::Exists => b"EXISTS\r\n",
            Self::NotFound => b"NOT_FOUND\r\n",
            Self::Deleted => b"DELETED\r\n",
            Self::Touched => b"TOUCHED\r\n",
            Self::Ok => b"OK\r\n",
            Self::End => b"END\r\n",
            Self::Error => b"ERROR\r\n",
            Self::Reset => b"RESET\r\n",
        }
    }

    fn from_line(line: &[u8]) -> Option<Self> {
        Some(match line {
            b"STORED" => Self::Stored,
            b"NOT_STORED" => Self::NotStored,
            b"EXISTS" => Self::Exists,
            b"NOT_FOUND" => Self::NotFound,
            b"DELETED" => Self::Deleted,
            b"TOUCHED" => Self::Touched,
            b"OK" => Self::Ok,
            b"END" => Self::End,
            b"ERROR" => Self::Error,
            b"RESET" => Self::Reset,
            _ => return None,
        })
    }
}

/// The status code that starts a meta reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaStatus {
    /// `VA <size>`: a value follows.
    Value,
    /// `HD`: success, no value.
    Header,
    /// `EN`: miss (`mg`, `me`).
    Miss,
    /// `NF`: not found (`md`, `ma`, `ms` with some modes).
    NotFound,
    /// `NS`: not stored.
    NotStored,
    /// `EX`: CAS mismatch.
    Exists,
}

impl MetaStatus {
    /// The two-letter code.
    pub const fn code(self) -> &'static [u8] {
        match self {
            Self::Value => b"VA",
            Self::Header => b"HD",
            Self::Miss => b"EN",
            Self::NotFound => b"NF",
            Self::NotStored => b"NS",
            Self::Exists => b"EX",
        }
    }
}

/// Appends a fixed reply line.
pub fn write_reply(out: &mut Vec<u8>, reply: Reply) {
    out.extend_from_slice(reply.as_bytes());
}

/// Appends `VALUE <key> <flags> <len>[ <cas>]\r\n`, the header of one
/// retrieval hit; the data and its `\r\n` follow (see [`write_data`]).
pub fn write_value_header(out: &mut Vec<u8>, key: &[u8], flags: u32, len: usize, cas: Option<u64>) {
    out.extend_from_slice(b"VALUE ");
    out.extend_from_slice(key);
    out.push(b' ');
    write_u64(out, u64::from(flags));
    out.push(b' ');
    write_usize(out, len);
    if let Some(cas) = cas {
        out.push(b' ');
        write_u64(out, cas);
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends one whole retrieval hit: header, data, `\r\n`.
pub fn write_value(out: &mut Vec<u8>, key: &[u8], flags: u32, data: &[u8], cas: Option<u64>) {
    write_value_header(out, key, flags, data.len(), cas);
    write_data(out, data);
}

/// Appends a data block and its `\r\n`.
pub fn write_data(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// Appends the reply to `incr`/`decr`: the new value and `\r\n`.
pub fn write_number(out: &mut Vec<u8>, n: u64) {
    write_u64(out, n);
    out.extend_from_slice(b"\r\n");
}

/// Appends `STAT <name> <value>\r\n`.
pub fn write_stat(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(b"STAT ");
    out.extend_from_slice(name);
    out.push(b' ');
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Appends `STAT <name> <n>\r\n`.
pub fn write_stat_u64(out: &mut Vec<u8>, name: &[u8], n: u64) {
    out.extend_from_slice(b"STAT ");
    out.extend_from_slice(name);
    out.push(b' ');
    write_u64(out, n);
    out.extend_from_slice(b"\r\n");
}

/// Appends `VERSION <version>\r\n`.
pub fn write_version(out: &mut Vec<u8>, version: &[u8]) {
    out.extend_from_slice(b"VERSION ");
    out.extend_from_slice(version);
    out.extend_from_slice(b"\r\n");
}

/// Appends `CLIENT_ERROR <message>\r\n`.
pub fn write_client_error(out: &mut Vec<u8>, message: &[u8]) {
    out.extend_from_slice(b"CLIENT_ERROR ");
    out.extend_from_slice(message);
    out.extend_from_slice(b"\r\n");
}

/// Appends `SERVER_ERROR <message>\r\n`.
pub fn write_server_error(out: &mut Vec<u8>, message: &[u8]) {
    out.extend_from_slice(b"SERVER_ERROR ");
    out.extend_from_slice(message);
    out.extend_from_slice(b"\r\n");
}

/// Starts a meta reply: the status code, and for [`MetaStatus::Value`] the
/// value length (`value_len` is ignored otherwise). Returned flags follow
/// ([`write_meta_flag`] and friends, in request order), then
/// [`write_meta_end`], then for `VA` the data ([`write_data`]).
pub fn write_meta_header(out: &mut Vec<u8>, status: MetaStatus, value_len: usize) {
    out.extend_from_slice(status.code());
    if status == MetaStatus::Value {
        out.push(b' ');
        write_usize(out, value_len);
    }
}

/// Appends a returned flag: ` <letter><token>` (the token may be empty, as
/// for `W`, `X`, `Z`, `b`). The opaque is echoed as `write_meta_flag(out,
/// b'O', opaque)`.
pub fn write_meta_flag(out: &mut Vec<u8>, letter: u8, token: &[u8]) {
    out.push(b' ');
    out.push(letter);
    out.extend_from_slice(token);
}

/// Appends a returned numeric flag: ` <letter><n>` (`c`, `s`, `f`, `l`, `h`).
pub fn write_meta_flag_u64(out: &mut Vec<u8>, letter: u8, n: u64) {
    out.push(b' ');
    out.push(letter);
    write_u64(out, n);
}

/// Appends a returned signed flag: ` <letter><n>` (`t-1` for no expiry).
pub fn write_meta_flag_i64(out: &mut Vec<u8>, letter: u8, n: i64) {
    out.push(b' ');
    out.push(letter);
    write_i64(out, n);
}

/// Ends a meta reply line.
pub fn write_meta_end(out: &mut Vec<u8>) {
    out.extend_from_slice(b"\r\n");
}

/// Appends `MN\r\n`.
pub fn write_meta_noop(out: &mut Vec<u8>) {
    out.extend_from_slice(b"MN\r\n");
}

/// Appends `ME <key> <info>\r\n`, where `info` is memcached's
/// `exp=… la=… cas=… fetch=… cls=… size=…`.
pub fn write_meta_debug(out: &mut Vec<u8>, key: &[u8], info: &[u8]) {
    out.extend_from_slice(b"ME ");
    out.extend_from_slice(key);
    out.push(b' ');
    out.extend_from_slice(info);
    out.extend_from_slice(b"\r\n");
}

/// One response element as a client reads it. A retrieval reply is a
/// sequence of [`Response::Value`]s closed by `Reply(End)`; a stats reply a
/// sequence of [`Response::Stat`]s closed the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response<'a> {
    /// One of the fixed lines.
    Reply(Reply),
    /// `VALUE <key> <flags> <len> [<cas>]` and its data.
    Value {
        /// The key.
        key: &'a [u8],
        /// Client flags.
        flags: u32,
        /// The CAS unique, for `gets`/`gats`.
        cas: Option<u64>,
        /// The data, without `\r\n`.
        data: &'a [u8],
    },
    /// The decimal reply to `incr`/`decr`.
    Number(u64),
    /// `STAT <name> <value>`.
    Stat {
        /// The statistic's name.
        name: &'a [u8],
        /// Its value, the rest of the line.
        value: &'a [u8],
    },
    /// `VERSION <version>`.
    Version(&'a [u8]),
    /// `CLIENT_ERROR <message>`.
    ClientError(&'a [u8]),
    /// `SERVER_ERROR <message>`.
    ServerError(&'a [u8]),
    /// A meta reply: `VA`, `HD`, `EN`, `NF`, `NS`, `EX` with flags.
    Meta {
        /// The status code.
        status: MetaStatus,
        /// The returned flags.
        flags: RawFlags<'a>,
        /// The value of a `VA` reply; empty otherwise.
        data: &'a [u8],
    },
    /// `MN`.
    MetaNoop,
    /// `ME <key> <info>`.
    MetaDebug {
        /// The key.
        key: &'a [u8],
        /// The `name=value` pairs.
        info: &'a [u8],
    },
}

/// Why [`parse_response`] returned no response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResponseError {
    /// More input is needed.
    Incomplete,
    /// The bytes are not a memcached response.
    Invalid,
}

/// Splits `line` at its first space: (first word, rest).
fn split_word(line: &[u8]) -> (&[u8], &[u8]) {
    match line.iter().position(|&c| c == b' ') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (line, &[]),
    }
}

/// Reads a data block of `len` bytes plus `\r\n` starting at `at`.
fn data_at(buf: &[u8], at: usize, len: usize) -> Result<(&[u8], usize), ResponseError> {
    let end = at.checked_add(len).and_then(|e| e.checked_add(2)).ok_or(ResponseError::Invalid)?;
    let block = buf.get(at..end).ok_or(ResponseError::Incomplete)?;
    let (data, crlf) = block.split_at(len);
    if crlf != b"\r\n" {
        return Err(ResponseError::Invalid);
    }
    Ok((data, end))
}

/// Parses one response element from the start of `buf`, returning it and
/// the bytes it used.
pub fn parse_response(buf: &[u8]) -> Result<(Response<'_>, usize), ResponseError> {
    let newline = buf.iter().position(|&c| c == b'\n').ok_or(ResponseError::Incomplete)?;
    let line_len = newline + 1;
    let line = buf[..newline].strip_suffix(b"\r").ok_or(ResponseError::Invalid)?;
    if let Some(reply) = Reply::from_line(line) {
        return Ok((Response::Reply(reply), line_len));
    }
    let (word, rest) = split_word(line);
    let response = match word {
        b"VALUE" => {
            let mut fields = rest.split(|&c| c == b' ');
            let key = fields.next().filter(|k| !k.is_empty()).ok_or(ResponseError::Invalid)?;
            let mut number = || fields.next().and_then(parse_u64);
            let flags = number().and_then(|f| u32::try_from(f).ok());
            let len = number().and_then(|n| usize::try_from(n).ok());
            let (Some(flags), Some(len)) = (flags, len) else {
                return Err(ResponseError::Invalid);
            };
            let cas = match fields.next() {
                None => None,
                Some(cas) => Some(parse_u64(cas).ok_or(ResponseError::Invalid)?),
            };
            if fields.next().is_some() {
                return Err(ResponseError::Invalid);
            }
            let (data, end) = data_at(buf, line_len, len)?;
            return Ok((Response::Value { key, flags, cas, data }, end));
        }
        b"STAT" => {
            let (name, value) = split_word(rest);
            Response::Stat { name, value }
        }
        b"VERSION" => Response::Version(rest),
        b"CLIENT_ERROR" => Response::ClientError(rest),
        b"SERVER_ERROR" => Response::ServerError(rest),
        b"MN" if rest.is_empty() => Response::MetaNoop,
        b"ME" => {
            let (key, info) = split_word(rest);
            Response::MetaDebug { key, info }
        }
        b"VA" => {
            let (len, flags) = split_word(rest);
            let len = parse_u64(len)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or(ResponseError::Invalid)?;
            let (data, end) = data_at(buf, line_len, len)?;
            let flags = RawFlags::new(flags);
            return Ok((Response::Meta { status: MetaStatus::Value, flags, data }, end));
        }
        b"HD" | b"EN" | b"NF" | b"NS" | b"EX" => {
            let status = match word {
                b"HD" => MetaStatus::Header,
                b"EN" => MetaStatus::Miss,
                b"NF" => MetaStatus::NotFound,
                b"NS" => MetaStatus::NotStored,
                _ => MetaStatus::Exists,
            };
            Response::Meta { status, flags: RawFlags::new(rest), data: &[] }
        }
        // memcached may pad a decremented number with spaces.
        _ => match parse_u64(line.trim_ascii_end()) {
            Some(n) => Response::Number(n),
            None => return Err(ResponseError::Invalid),
        },
    };
    Ok((response, line_len))
}

impl Response<'_> {
    /// Appends the wire form of this response element.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Self::Reply(reply) => write_reply(out, reply),
            Self::Value { key, flags, cas, data } => write_value(out, key, flags, data, cas),
            Self::Number(n) => write_number(out, n),
            Self::Stat { name, value } => write_stat(out, name, value),
            Self::Version(v) => write_version(out, v),
            Self::ClientError(m) => write_client_error(out, m),
            Self::ServerError(m) => write_server_error(out, m),
            Self::Meta { status, flags, data } => {
                write_meta_header(out, status, data.len());
                for flag in flags.iter() {
                    write_meta_flag(out, flag.letter, flag.token);
                }
                write_meta_end(out);
                if status == MetaStatus::Value {
                    write_data(out, data);
                }
            }
            Self::MetaNoop => write_meta_noop(out),
            Self::MetaDebug { key, info } => write_meta_debug(out, key, info),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(mut buf: &[u8]) -> Vec<Response<'_>> {
        let mut out = Vec::new();
        while !buf.is_empty() {
            let (r, n) = parse_response(buf).unwrap();
            out.push(r);
            buf = &buf[n..];
        }
        out
    }

    #[test]
    fn encoders_write_memcached_bytes() {
        let mut out = Vec::new();
        write_value(&mut out, b"foo", 5, b"bar", None);
        write_value(&mut out, b"k", 0, b"", Some(42));
        write_reply(&mut out, Reply::End);
        assert_eq!(out, b"VALUE foo 5 3\r\nbar\r\nVALUE k 0 0 42\r\n\r\nEND\r\n");
        out.clear();
        write_number(&mut out, 18446744073709551615);
        write_stat_u64(&mut out, b"curr_items", 7);
        write_stat(&mut out, b"version", b"1.6.21");
        write_version(&mut out, b"1.6.21");
        write_client_error(&mut out, b"bad data chunk");
        write_server_error(&mut out, b"out of memory");
        assert_eq!(
            out,
            &b"18446744073709551615\r\nSTAT curr_items 7\r\nSTAT version 1.6.21\r\n\
               VERSION 1.6.21\r\nCLIENT_ERROR bad data chunk\r\nSERVER_ERROR out of memory\r\n"[..]
        );
        for (reply, text) in [
            (Reply::Stored, &b"STORED\r\n"[..]),
            (Reply::NotStored, b"NOT_STORED\r\n"),
            (Reply::Exists, b"EXISTS\r\n"),
            (Reply::NotFound, b"NOT_FOUND\r\n"),
            (Reply::Deleted, b"DELETED\r\n"),
            (Reply::Touched, b"TOUCHED\r\n"),
            (Reply::Ok, b"OK\r\n"),
        ] {
            assert_eq!(reply.as_bytes(), text);
        }
    }

    #[test]
    fn meta_replies_echo_flags_in_order() {
        let mut out = Vec::new();
        write_meta_header(&mut out, MetaStatus::Value, 2);
        write_meta_flag_i64(&mut out, b't', -1);
        write_meta_flag_u64(&mut out, b'c', 9);
        write_meta_flag(&mut out, b'O', b"op");
        write_meta_flag(&mut out, b'W', b"");
        write_meta_end(&mut out);
        write_data(&mut out, b"hi");
        write_meta_header(&mut out, MetaStatus::Header, 0);
        write_meta_end(&mut out);
        write_meta_header(&mut out, MetaStatus::Miss, 0);
        write_meta_end(&mut out);
        write_meta_noop(&mut out);
        assert_eq!(out, b"VA 2 t-1 c9 Oop W\r\nhi\r\nHD\r\nEN\r\nMN\r\n");
        let parsed = all(&out);
        let Response::Meta { status, flags, data } = parsed[0] else { panic!() };
        assert_eq!((status, data), (MetaStatus::Value, &b"hi"[..]));
        assert_eq!(flags.get(b'c'), Some(&b"9"[..]));
        assert_eq!(flags.get(b'O'), Some(&b"op"[..]));
        assert_eq!(flags.get(b'W'), Some(&b""[..]));
        assert_eq!(parsed[3], Response::MetaNoop);
    }

    #[test]
    fn responses_parse_and_round_trip() {
        let wire = b"VALUE foo 5 3\r\nbar\r\nVALUE k 0 4 42\r\n\r\n\r\n\r\nEND\r\n\
            STORED\r\nNOT_STORED\r\nEXISTS\r\nNOT_FOUND\r\nDELETED\r\nTOUCHED\r\nOK\r\nRESET\r\n\
            ERROR\r\n42\r\nSTAT pid 12\r\nSTAT rusage_user 0.1 2\r\nVERSION 1.6.21\r\n\
            CLIENT_ERROR bad data chunk\r\nSERVER_ERROR object too large for cache\r\n\
            VA 2 f1 c3\r\nhi\r\nHD\r\nEN\r\nNF Oab\r\nNS\r\nEX c1\r\nMN\r\n\
            ME foo exp=-1 la=2 cas=3 fetch=no cls=1 size=63\r\n";
        let parsed = all(wire);
        assert_eq!(parsed.len(), 26);
        assert_eq!(
            parsed[1],
            Response::Value { key: b"k", flags: 0, cas: Some(42), data: b"\r\n\r\n" }
        );
        assert_eq!(parsed[12], Response::Number(42));
        assert_eq!(parsed[14], Response::Stat { name: b"rusage_user", value: b"0.1 2" });
        let mut out = Vec::new();
        for r in &parsed {
            r.encode(&mut out);
        }
        assert_eq!(out, wire);
    }

    #[test]
    fn padded_numbers_parse() {
        assert_eq!(parse_response(b"9  \r\n"), Ok((Response::Number(9), 5)));
    }

    #[test]
    fn truncated_responses_are_incomplete() {
        let wire = b"VALUE foo 5 3 7\r\nbar\r\n";
        for i in 0..wire.len() {
            assert_eq!(parse_response(&wire[..i]), Err(ResponseError::Incomplete), "{i}");
        }
        let wire = b"VA 3 s3\r\nbar\r\n";
        for i in 0..wire.len() {
            assert_eq!(parse_response(&wire[..i]), Err(ResponseError::Incomplete), "{i}");
        }
    }

    #[test]
    fn garbage_is_invalid() {
        for bad in [
            &b"HELLO\r\n"[..],
            b"VALUE\r\n",
            b"VALUE k x 1\r\nx\r\n",
            b"VALUE k 0 1 2 3\r\nx\r\n",
            b"VALUE k 0 1\r\nxy\r\n",
            b"VA x\r\n",
            b"STORED\n",
            b"VALUE k 0 18446744073709551615\r\n",
        ] {
            assert_eq!(parse_response(bad), Err(ResponseError::Invalid), "{bad:?}");
        }
    }
}
