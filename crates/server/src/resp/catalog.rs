//! What Redis says about each command beyond the table's row: its documentation (`COMMAND
//! DOCS`), ACL categories, tips, key specifications and subcommands (`COMMAND INFO`'s last
//! four fields).
//!
//! `commands.resp3` holds two replies of redis-server 7.0, as it sent them over RESP3:
//! `COMMAND DOCS name…` and `COMMAND INFO name…` for the names of the command table.
//! `scripts/command-docs` writes it; a test fails while a row of the table has no entry.
//! The catalog is read once, at the first `COMMAND` that needs it, into slices of that text:
//! a reply copies them (RESP3) or rewrites their aggregate headers (RESP2, [`write_value`]).
//!
//! Key specifications (<https://redis.io/docs/reference/key-specs/>) find a command's keys
//! for `COMMAND GETKEYS`, as Redis's `getKeysUsingKeySpecs` (`src/db.c`) does.

use std::collections::HashMap;
use std::sync::OnceLock;

use fridge_proto::resp::{Frame, Version, parse_frame, value_len};

/// redis-server's replies (see the module doc).
static DATA: &[u8] = include_bytes!("commands.resp3");

/// One command or subcommand (`config|get`), lowercase.
#[derive(Debug, Default)]
pub(super) struct Entry {
    /// Redis's arity (a subcommand's is not in the table).
    pub arity: i64,
    /// `COMMAND DOCS`'s map for it (RESP3), empty if Redis has none.
    pub docs: &'static [u8],
    /// `COMMAND INFO`'s last four fields (RESP3): ACL categories, tips, key specifications,
    /// subcommands.
    pub info_tail: &'static [u8],
    /// Its ACL categories, `@read`….
    pub categories: Vec<&'static [u8]>,
    pub key_specs: Vec<KeySpec>,
    /// Its subcommands' names, in Redis's order.
    pub subcommands: Vec<&'static str>,
    /// A subcommand's whole `COMMAND INFO` array (RESP3); empty for a command.
    pub info: &'static [u8],
    /// Redis's `no_mandatory_keys` flag: a call may name no key (`EVAL s 0`).
    pub keys_optional: bool,
}

/// Where a command's keys are (one key specification).
#[derive(Debug)]
pub(super) struct KeySpec {
    /// `RW`, `access`, `update`, `not_key`… as Redis names them.
    pub flags: Vec<&'static [u8]>,
    pub begin: Begin,
    pub find: Find,
}

/// Where the search for keys begins.
#[derive(Debug)]
pub(super) enum Begin {
    /// At this argument.
    Index(i64),
    /// After this keyword, searched from `startfrom` (backwards from the end if negative).
    Keyword {
        keyword: &'static [u8],
        startfrom: i64,
    },
    Unknown,
}

/// Which arguments from there are keys.
#[derive(Debug)]
pub(super) enum Find {
    /// From the first to `lastkey` (relative; negative: from the end, or with `limit` a
    /// fraction of the rest), every `keystep`.
    Range {
        lastkey: i64,
        keystep: i64,
        limit: i64,
    },
    /// The argument at `keynumidx` counts the keys, which start `firstkey` after it.
    Keynum {
        keynumidx: i64,
        firstkey: i64,
        keystep: i64,
    },
    Unknown,
}

/// The catalog: entries by lowercase name.
pub(super) fn entry(name: &str) -> Option<&'static Entry> {
    static CATALOG: OnceLock<HashMap<&'static str, Entry>> = OnceLock::new();
    CATALOG.get_or_init(|| load(DATA)).get(name)
}

/// A parsed RESP3 value, borrowing the text.
#[derive(Debug)]
enum Node {
    Text(&'static [u8]),
    Int(i64),
    List(Vec<Node>),
    Map(Vec<(Node, Node)>),
    Other,
}

impl Node {
    fn text(&self) -> &'static [u8] {
        if let Node::Text(t) = self { t } else { b"" }
    }

    fn int(&self) -> i64 {
        if let Node::Int(n) = self { *n } else { 0 }
    }

    fn list(&self) -> &[Node] {
        if let Node::List(l) = self { l } else { &[] }
    }

    fn get(&self, key: &[u8]) -> Option<&Node> {
        let Node::Map(pairs) = self else { return None };
        pairs.iter().find(|(k, _)| k.text() == key).map(|(_, v)| v)
    }
}

/// Parses the value at `*pos`, moving `*pos` past it; `None` for text that is not RESP.
/// (The text is the compiled-in catalog, nested a few levels deep.)
fn node(buf: &'static [u8], pos: &mut usize) -> Option<Node> {
    let (frame, used) = parse_frame(buf.get(*pos..)?).ok()?;
    *pos += used;
    Some(match frame {
        Frame::Simple(t) | Frame::Bulk(t) => Node::Text(t),
        Frame::Integer(n) => Node::Int(n),
        Frame::Array(n) | Frame::Set(n) => {
            Node::List((0..n).map(|_| node(buf, pos)).collect::<Option<_>>()?)
        }
        Frame::Map(n) => Node::Map(
            (0..n).map(|_| Some((node(buf, pos)?, node(buf, pos)?))).collect::<Option<_>>()?,
        ),
        _ => Node::Other,
    })
}

/// The value at `*pos` as text, moving `*pos` past it.
fn raw(buf: &'static [u8], pos: &mut usize) -> Option<&'static [u8]> {
    let len = value_len(buf.get(*pos..)?).ok()?;
    let v = &buf[*pos..*pos + len];
    *pos += len;
    Some(v)
}

/// Reads both replies; what does not parse is left out (the test of the table finds it).
fn load(buf: &'static [u8]) -> HashMap<&'static str, Entry> {
    let mut entries = HashMap::new();
    let mut pos = 0;
    let _ = load_docs(buf, &mut pos, &mut entries)
        .and_then(|()| load_info(buf, &mut pos, &mut entries));
    entries
}

fn name(t: &'static [u8]) -> Option<&'static str> {
    std::str::from_utf8(t).ok()
}

/// The pairs of the map at `*pos`, moving `*pos` past it: each key's text and its value's.
fn pairs(buf: &'static [u8], pos: &mut usize) -> Option<Vec<(&'static [u8], &'static [u8])>> {
    let (Frame::Map(n), used) = parse_frame(buf.get(*pos..)?).ok()? else { return None };
    *pos += used;
    (0..n).map(|_| Some((node(buf, pos)?.text(), raw(buf, pos)?))).collect()
}

/// `COMMAND DOCS`: a map of name to doc map; a container's doc map holds `subcommands`, a
/// map of the same shape.
fn load_docs(
    buf: &'static [u8],
    pos: &mut usize,
    entries: &mut HashMap<&'static str, Entry>,
) -> Option<()> {
    for (command, docs) in pairs(buf, pos)? {
        entries.entry(name(command)?).or_default().docs = docs;
        let field = |f: &(&[u8], _)| f.0 == b"subcommands";
        let Some((_, subs)) = pairs(docs, &mut 0)?.into_iter().find(field) else { continue };
        for (sub, docs) in pairs(subs, &mut 0)? {
            entries.entry(name(sub)?).or_default().docs = docs;
        }
    }
    Some(())
}

/// `COMMAND INFO`: an array of ten-field arrays; the tenth, a set, holds the subcommands'.
fn load_info(
    buf: &'static [u8],
    pos: &mut usize,
    entries: &mut HashMap<&'static str, Entry>,
) -> Option<()> {
    let (Frame::Array(n), used) = parse_frame(buf.get(*pos..)?).ok()? else { return None };
    *pos += used;
    for _ in 0..n {
        info_entry(buf, pos, entries)?;
    }
    Some(())
}

fn info_entry(
    buf: &'static [u8],
    pos: &mut usize,
    entries: &mut HashMap<&'static str, Entry>,
) -> Option<&'static str> {
    let start = *pos;
    let (Frame::Array(10), used) = parse_frame(buf.get(*pos..)?).ok()? else {
        raw(buf, pos)?; // a null: a name Redis does not know
        return None;
    };
    *pos += used;
    let command = name(node(buf, pos)?.text())?;
    let arity = node(buf, pos)?.int();
    let keys_optional = node(buf, pos)?.list().iter().any(|f| f.text() == b"no_mandatory_keys");
    for _ in 0..3 {
        node(buf, pos)?; // first key, last key, step: the table's own
    }
    let tail_start = *pos;
    let categories = node(buf, pos)?.list().iter().map(Node::text).collect();
    node(buf, pos)?; // tips
    let key_specs = node(buf, pos)?.list().iter().map(key_spec).collect();
    let (Frame::Array(subs) | Frame::Set(subs), used) = parse_frame(buf.get(*pos..)?).ok()? else {
        return None;
    };
    *pos += used;
    let subcommands = (0..subs).filter_map(|_| info_entry(buf, pos, entries)).collect();
    let e = entries.entry(command).or_default();
    e.arity = arity;
    e.info_tail = &buf[tail_start..*pos];
    e.categories = categories;
    e.key_specs = key_specs;
    e.subcommands = subcommands;
    e.keys_optional = keys_optional;
    if command.contains('|') {
        e.info = &buf[start..*pos];
    }
    Some(command)
}

fn key_spec(spec: &Node) -> KeySpec {
    let flags = spec.get(b"flags").map_or(&[][..], Node::list).iter().map(Node::text).collect();
    let part = |field: &[u8]| {
        let p = spec.get(field);
        let kind = p.and_then(|p| p.get(b"type")).map_or(&b""[..], Node::text);
        let s = p.and_then(|p| p.get(b"spec"));
        let int = move |k: &[u8]| s.and_then(|s| s.get(k)).map_or(0, Node::int);
        (kind, s, int)
    };
    let (kind, s, int) = part(b"begin_search");
    let begin = match kind {
        b"index" => Begin::Index(int(b"index")),
        b"keyword" => Begin::Keyword {
            keyword: s.and_then(|s| s.get(b"keyword")).map_or(&b""[..], Node::text),
            startfrom: int(b"startfrom"),
        },
        _ => Begin::Unknown,
    };
    let (kind, _, int) = part(b"find_keys");
    let find = match kind {
        b"range" => {
            Find::Range { lastkey: int(b"lastkey"), keystep: int(b"keystep"), limit: int(b"limit") }
        }
        b"keynum" => Find::Keynum {
            keynumidx: int(b"keynumidx"),
            firstkey: int(b"firstkey"),
            keystep: int(b"keystep"),
        },
        _ => Find::Unknown,
    };
    KeySpec { flags, begin, find }
}

impl Entry {
    /// Whether a key specification names real keys (Redis's `doesCommandHaveKeys`).
    pub fn has_keys(&self) -> bool {
        self.key_specs.iter().any(|k| !k.flags.contains(&&b"not_key"[..]))
    }

    /// The positions of `args`' keys (the command name is argument 0) with their spec's
    /// flags. A specification that does not fit the arguments adds nothing (Redis's
    /// `GET_KEYSPEC_RETURN_PARTIAL`).
    pub fn keys(&self, args: &[&[u8]]) -> Vec<(usize, &[&'static [u8]])> {
        let argc = args.len() as i64;
        let mut found = Vec::new();
        for spec in self.key_specs.iter().filter(|k| !k.flags.contains(&&b"not_key"[..])) {
            let first = match spec.begin {
                Begin::Index(i) => i,
                Begin::Keyword { keyword, startfrom } => {
                    let at = |i: i64| args[i as usize].eq_ignore_ascii_case(keyword);
                    let hit = if startfrom > 0 {
                        (startfrom..argc).find(|&i| at(i))
                    } else {
                        (1..argc + startfrom + 1).rev().find(|&i| at(i))
                    };
                    match hit {
                        Some(i) => i + 1,
                        None => continue,
                    }
                }
                Begin::Unknown => continue,
            };
            let (first, last, step) = match spec.find {
                Find::Range { lastkey, keystep, limit } => {
                    let last = if lastkey >= 0 {
                        first + lastkey
                    } else if limit == 0 {
                        argc + lastkey
                    } else {
                        first + ((argc - first) / limit + lastkey)
                    };
                    (first, last, keystep)
                }
                Find::Keynum { keynumidx, firstkey, keystep } => {
                    let Some(count) = args.get((first + keynumidx) as usize) else { continue };
                    let Some(n) = fridge_proto::number::parse_redis_i64(count) else { continue };
                    if n < 0 {
                        continue;
                    }
                    let first = first + firstkey;
                    (first, first + n - 1, keystep)
                }
                Find::Unknown => continue,
            };
            if last >= argc || last < first || first >= argc || step < 1 {
                continue;
            }
            let mut i = first;
            while i <= last {
                found.push((i as usize, &spec.flags[..]));
                i += step;
            }
        }
        found
    }
}

/// Appends `value`, a RESP3 value from the catalog, as `version` writes it: RESP2 has no
/// map or set, so their headers become arrays (a map of `n` pairs: `2n` elements).
pub(super) fn write_value(out: &mut Vec<u8>, version: Version, value: &[u8]) {
    if version == Version::Resp3 {
        return out.extend_from_slice(value);
    }
    let mut pos = 0;
    while let Ok((frame, used)) = parse_frame(&value[pos..]) {
        match frame {
            Frame::Map(n) => Frame::Array(2 * n).encode(out),
            Frame::Set(n) => Frame::Array(n).encode(out),
            Frame::Null => Frame::NullBulk.encode(out),
            _ => out.extend_from_slice(&value[pos..pos + used]),
        }
        pos += used;
        if pos == value.len() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_catalog_parses() {
        let mut pos = 0;
        let docs = value_len(DATA).unwrap();
        pos += docs;
        let info = value_len(&DATA[pos..]).unwrap();
        assert_eq!(docs + info, DATA.len(), "two replies and nothing else");
        let get = entry("get").unwrap();
        assert_eq!(get.arity, 2);
        assert_eq!(get.categories, [&b"@read"[..], b"@string", b"@fast"]);
        assert!(entry("config|get").is_some_and(|e| !e.docs.is_empty() && e.arity == -3));
        assert!(entry("config").unwrap().subcommands.contains(&"config|get"));
    }

    #[test]
    fn resp2_has_arrays_where_resp3_has_maps_and_sets() {
        let mut out = Vec::new();
        write_value(&mut out, Version::Resp2, b"%1\r\n$1\r\na\r\n~2\r\n+x\r\n_\r\n");
        assert_eq!(out, b"*2\r\n$1\r\na\r\n*2\r\n+x\r\n$-1\r\n");
    }

    #[test]
    fn keys_by_specification() {
        let keys = |args: &[&str]| {
            let name = args[0];
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            entry(name).unwrap().keys(&args).into_iter().map(|(i, _)| i).collect::<Vec<_>>()
        };
        assert_eq!(keys(&["get", "k"]), [1]);
        assert_eq!(keys(&["mset", "a", "1", "b", "2"]), [1, 3]);
        assert_eq!(keys(&["del", "a", "b", "c"]), [1, 2, 3]);
        assert_eq!(keys(&["lcs", "a", "b", "LEN"]), [1, 2]);
        // SORT's STORE key has no specification (Redis finds it in code: `command.rs`).
        assert_eq!(keys(&["sort", "k", "BY", "w_*", "STORE", "dst"]), [1]);
        assert_eq!(keys(&["object", "encoding", "k"]), Vec::<usize>::new(), "the container");
        assert_eq!(keys(&["bitop", "and", "d", "a", "b"]), [2, 3, 4]);
    }
}
