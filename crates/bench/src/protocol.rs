//! The three wire protocols, as the load generator uses them: requests are encoded and replies
//! parsed by `fridge-proto` (the server's own codec), never by a second implementation here.
//! This module only picks the command for each operation and classifies the reply.
//!
//! | operation | memcached text | memcached meta | RESP |
//! |---|---|---|---|
//! | get | `get k` → `VALUE …` `END` / `END` | `mg k v` → `VA n` / `EN` | `GET k` → `$n` / `$-1` |
//! | set | `set k 0 <ttl> n` → `STORED` | `ms k n [T<ttl>]` → `HD` | `SET k v [EX ttl]` → `+OK` |
//! | delete | `delete k` → `DELETED` / `NOT_FOUND` | `md k` → `HD` / `NF` | `DEL k` → `:1` / `:0` |
//! | auth | `set auth 0 0 n` + `user pass` (memcached `-Y`) → `STORED` | same | `AUTH user pass` → `+OK` |

use fridge_proto::memcache::{
    self, MetaCommand, MetaStatus, Reply as McReply, Request, Response, RetrievalCommand, Storage,
    StorageCommand,
};
use fridge_proto::number::write_u64;
use fridge_proto::resp::{self, Frame};
use serde::{Deserialize, Serialize};

/// Which protocol a run speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// memcached text protocol (`get`/`set`/`delete`).
    Text,
    /// memcached meta protocol (`mg`/`ms`/`md`).
    Meta,
    /// Redis RESP2 (`GET`/`SET`/`DEL`).
    Resp,
}

/// What a request does. The index orders histograms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Command {
    /// Read a value.
    Get,
    /// Store a value.
    Set,
    /// Remove a key.
    Delete,
}

impl Command {
    /// Every command, in index order.
    pub const ALL: [Command; 3] = [Command::Get, Command::Set, Command::Delete];

    /// Position in [`Command::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::Set => "set",
            Self::Delete => "delete",
        }
    }
}

/// How a server answered one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A GET found the key.
    Hit,
    /// A GET found nothing.
    Miss,
    /// A SET was stored.
    Stored,
    /// A SET was refused without an error (`NOT_STORED`, `NS`, a null reply).
    NotStored,
    /// A DELETE removed the key.
    Deleted,
    /// A DELETE found nothing.
    NotFound,
    /// An error reply (`SERVER_ERROR`, `CLIENT_ERROR`, `ERROR`, `-ERR`, `-OOM` …).
    Error,
}

/// One parsed reply. `value` borrows the receive buffer (a GET hit's data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply<'a> {
    /// The classified answer.
    pub outcome: Outcome,
    /// The value of a hit.
    pub value: Option<&'a [u8]>,
    /// Bytes of the buffer this reply used.
    pub consumed: usize,
}

/// The bytes are not a valid reply to the request in flight; the connection is unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadReply;

impl Protocol {
    /// Appends a GET of `key`.
    pub fn encode_get(self, out: &mut Vec<u8>, key: &[u8]) {
        match self {
            Self::Text => memcache::encode_retrieval(out, RetrievalCommand::Get, None, [key]),
            Self::Meta => memcache::encode_meta(out, MetaCommand::Get, key, b"v", &[]),
            Self::Resp => resp::encode_command(out, &[b"GET", key]),
        }
    }

    /// Appends a SET of `key` to `value`, expiring after `ttl_s` seconds if given.
    pub fn encode_set(self, out: &mut Vec<u8>, key: &[u8], value: &[u8], ttl_s: Option<u32>) {
        let mut ttl = Vec::new();
        match self {
            Self::Text => {
                let exptime = ttl_s.map_or(0, |t| i32::try_from(t).unwrap_or(i32::MAX));
                let set = Storage {
                    command: StorageCommand::Set,
                    key,
                    flags: 0,
                    exptime,
                    cas: 0,
                    noreply: false,
                    data: value,
                };
                Request::Storage(set).encode(out);
            }
            Self::Meta => {
                if let Some(t) = ttl_s {
                    ttl.push(b'T');
                    write_u64(&mut ttl, u64::from(t));
                }
                memcache::encode_meta(out, MetaCommand::Set, key, &ttl, value);
            }
            Self::Resp => match ttl_s {
                Some(t) => {
                    write_u64(&mut ttl, u64::from(t));
                    resp::encode_command(out, &[b"SET", key, value, b"EX", &ttl]);
                }
                None => resp::encode_command(out, &[b"SET", key, value]),
            },
        }
    }

    /// Appends a DELETE of `key`.
    pub fn encode_delete(self, out: &mut Vec<u8>, key: &[u8]) {
        match self {
            Self::Text => Request::Delete { key, noreply: false }.encode(out),
            Self::Meta => memcache::encode_meta(out, MetaCommand::Delete, key, b"", &[]),
            Self::Resp => resp::encode_command(out, &[b"DEL", key]),
        }
    }

    /// Appends an authentication request (the hook for tenants): RESP `AUTH user pass`, or
    /// for memcached protocols the text `set` that memcached's `-Y` authfile mode reads as
    /// credentials. Its reply parses as a SET's: [`Outcome::Stored`] means accepted.
    pub fn encode_auth(self, out: &mut Vec<u8>, user: &str, password: &str) {
        match self {
            Self::Text | Self::Meta => {
                let credentials = format!("{user} {password}");
                Self::Text.encode_set(out, b"auth", credentials.as_bytes(), None);
            }
            Self::Resp => {
                resp::encode_command(out, &[b"AUTH", user.as_bytes(), password.as_bytes()]);
            }
        }
    }

    /// Parses the reply to a `command` at the start of `buf`: `Ok(None)` until it is complete.
    ///
    /// # Errors
    /// [`BadReply`] for bytes that are not a reply to `command` in this protocol.
    pub fn parse_reply(self, command: Command, buf: &[u8]) -> Result<Option<Reply<'_>>, BadReply> {
        match self {
            Self::Text => parse_text(command, buf),
            Self::Meta => parse_meta(command, buf),
            // An auth on a memcached connection is a text `set`, also in meta mode.
            Self::Resp => parse_resp(command, buf),
        }
    }
}

fn done(
    outcome: Outcome,
    value: Option<&[u8]>,
    consumed: usize,
) -> Result<Option<Reply<'_>>, BadReply> {
    Ok(Some(Reply { outcome, value, consumed }))
}

/// memcached's error lines, which answer any command.
fn memcache_error(response: &Response<'_>) -> bool {
    matches!(
        response,
        Response::Reply(McReply::Error) | Response::ClientError(_) | Response::ServerError(_)
    )
}

fn parse_text(command: Command, buf: &[u8]) -> Result<Option<Reply<'_>>, BadReply> {
    let mut pos = 0;
    let mut value = None;
    loop {
        let (response, used) = match memcache::parse_response(&buf[pos..]) {
            Ok(parsed) => parsed,
            Err(memcache::ResponseError::Incomplete) => return Ok(None),
            Err(memcache::ResponseError::Invalid) => return Err(BadReply),
        };
        pos += used;
        if memcache_error(&response) {
            return done(Outcome::Error, None, pos);
        }
        let outcome = match (command, response) {
            (Command::Get, Response::Value { data, .. }) if value.is_none() => {
                value = Some(data);
                continue;
            }
            (Command::Get, Response::Reply(McReply::End)) => {
                if value.is_some() {
                    Outcome::Hit
                } else {
                    Outcome::Miss
                }
            }
            (Command::Set, Response::Reply(McReply::Stored)) => Outcome::Stored,
            (
                Command::Set,
                Response::Reply(McReply::NotStored | McReply::Exists | McReply::NotFound),
            ) => Outcome::NotStored,
            (Command::Delete, Response::Reply(McReply::Deleted)) => Outcome::Deleted,
            (Command::Delete, Response::Reply(McReply::NotFound)) => Outcome::NotFound,
            _ => return Err(BadReply),
        };
        return done(outcome, value, pos);
    }
}

fn parse_meta(command: Command, buf: &[u8]) -> Result<Option<Reply<'_>>, BadReply> {
    let (response, used) = match memcache::parse_response(buf) {
        Ok(parsed) => parsed,
        Err(memcache::ResponseError::Incomplete) => return Ok(None),
        Err(memcache::ResponseError::Invalid) => return Err(BadReply),
    };
    if memcache_error(&response) {
        return done(Outcome::Error, None, used);
    }
    let Response::Meta { status, data, .. } = response else {
        // The reply to an auth `set`, sent in text form on a meta connection.
        return match (command, response) {
            (Command::Set, Response::Reply(McReply::Stored)) => done(Outcome::Stored, None, used),
            _ => Err(BadReply),
        };
    };
    let (outcome, value) = match (command, status) {
        (Command::Get, MetaStatus::Value) => (Outcome::Hit, Some(data)),
        (Command::Get, MetaStatus::Miss) => (Outcome::Miss, None),
        (Command::Set, MetaStatus::Header) => (Outcome::Stored, None),
        (Command::Set, MetaStatus::NotStored | MetaStatus::Exists | MetaStatus::NotFound) => {
            (Outcome::NotStored, None)
        }
        (Command::Delete, MetaStatus::Header) => (Outcome::Deleted, None),
        (Command::Delete, MetaStatus::NotFound) => (Outcome::NotFound, None),
        _ => return Err(BadReply),
    };
    done(outcome, value, used)
}

fn parse_resp(command: Command, buf: &[u8]) -> Result<Option<Reply<'_>>, BadReply> {
    let (frame, used) = match resp::parse_frame(buf) {
        Ok(parsed) => parsed,
        Err(resp::FrameError::Incomplete) => return Ok(None),
        Err(resp::FrameError::Invalid) => return Err(BadReply),
    };
    let (outcome, value) = match (command, frame) {
        (_, Frame::Error(_) | Frame::BlobError(_)) => (Outcome::Error, None),
        (Command::Get, Frame::Bulk(data)) => (Outcome::Hit, Some(data)),
        (Command::Get, Frame::NullBulk | Frame::Null) => (Outcome::Miss, None),
        (Command::Set, Frame::Simple(_)) => (Outcome::Stored, None),
        (Command::Set, Frame::NullBulk | Frame::Null) => (Outcome::NotStored, None),
        (Command::Delete, Frame::Integer(n)) => {
            (if n > 0 { Outcome::Deleted } else { Outcome::NotFound }, None)
        }
        _ => return Err(BadReply),
    };
    done(outcome, value, used)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Protocol; 3] = [Protocol::Text, Protocol::Meta, Protocol::Resp];

    fn set_bytes(p: Protocol, ttl: Option<u32>) -> Vec<u8> {
        let mut out = Vec::new();
        p.encode_set(&mut out, b"k1", b"hello", ttl);
        out
    }

    #[test]
    fn requests_are_what_the_server_parser_reads() {
        let limits = memcache::Limits::default();
        for p in [Protocol::Text, Protocol::Meta] {
            let out = set_bytes(p, Some(60));
            let (req, used) = memcache::parse_request(&out, &limits).unwrap();
            assert_eq!(used, out.len());
            match req {
                Request::Storage(s) => {
                    assert_eq!((s.key, s.data, s.exptime), (&b"k1"[..], &b"hello"[..], 60))
                }
                Request::Meta(m) => {
                    assert_eq!(
                        (m.command, m.key, m.data),
                        (MetaCommand::Set, &b"k1"[..], &b"hello"[..])
                    );
                    assert_eq!(m.flags.raw().get(b'T'), Some(&b"60"[..]));
                }
                other => panic!("{other:?}"),
            }
        }
        let out = set_bytes(Protocol::Resp, Some(60));
        let mut args = resp::Args::new();
        let used = resp::parse_command(&out, &resp::Limits::default(), &mut args).unwrap();
        assert_eq!(used, out.len());
        let args: Vec<&[u8]> = args.command(&out).iter().collect();
        assert_eq!(args, [&b"SET"[..], b"k1", b"hello", b"EX", b"60"]);
    }

    #[test]
    fn replies_are_classified() {
        type Case = (Protocol, Command, &'static [u8], Outcome, Option<&'static [u8]>);
        let cases: [Case; 14] = [
            (
                Protocol::Text,
                Command::Get,
                b"VALUE k 0 2\r\nhi\r\nEND\r\n",
                Outcome::Hit,
                Some(b"hi"),
            ),
            (Protocol::Text, Command::Get, b"END\r\n", Outcome::Miss, None),
            (Protocol::Text, Command::Set, b"STORED\r\n", Outcome::Stored, None),
            (Protocol::Text, Command::Set, b"SERVER_ERROR out of memory\r\n", Outcome::Error, None),
            (Protocol::Text, Command::Delete, b"NOT_FOUND\r\n", Outcome::NotFound, None),
            (Protocol::Meta, Command::Get, b"VA 2\r\nhi\r\n", Outcome::Hit, Some(b"hi")),
            (Protocol::Meta, Command::Get, b"EN\r\n", Outcome::Miss, None),
            (Protocol::Meta, Command::Set, b"HD\r\n", Outcome::Stored, None),
            (Protocol::Meta, Command::Delete, b"HD\r\n", Outcome::Deleted, None),
            (Protocol::Resp, Command::Get, b"$2\r\nhi\r\n", Outcome::Hit, Some(b"hi")),
            (Protocol::Resp, Command::Get, b"$-1\r\n", Outcome::Miss, None),
            (Protocol::Resp, Command::Set, b"+OK\r\n", Outcome::Stored, None),
            (Protocol::Resp, Command::Set, b"-OOM command not allowed\r\n", Outcome::Error, None),
            (Protocol::Resp, Command::Delete, b":1\r\n", Outcome::Deleted, None),
        ];
        for (p, c, bytes, outcome, value) in cases {
            let reply = p.parse_reply(c, bytes).unwrap().unwrap();
            assert_eq!((reply.outcome, reply.value, reply.consumed), (outcome, value, bytes.len()));
            // Every strict prefix is incomplete, never an error.
            for n in 0..bytes.len() {
                assert_eq!(p.parse_reply(c, &bytes[..n]), Ok(None), "{p:?} {:?}", &bytes[..n]);
            }
        }
        assert_eq!(Protocol::Text.parse_reply(Command::Get, b"STORED\r\n"), Err(BadReply));
        assert_eq!(Protocol::Resp.parse_reply(Command::Get, b"*1\r\n"), Err(BadReply));
        for p in ALL {
            let mut out = Vec::new();
            p.encode_get(&mut out, b"k");
            p.encode_delete(&mut out, b"k");
            p.encode_auth(&mut out, "u", "p");
            assert!(!out.is_empty());
        }
    }
}
