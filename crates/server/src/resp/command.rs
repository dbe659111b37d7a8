//! `COMMAND` and its subcommands (<https://redis.io/commands/command/>): what a client or a
//! proxy learns about the commands fridge has. The table's rows give each command's name,
//! arity, flags and legacy key positions; Redis's catalog (`catalog.rs`) gives the rest:
//! documentation, ACL categories, tips, key specifications and subcommands.
//!
//! `COMMAND COUNT` counts commands; `COMMAND LIST` names subcommands too (`config|get`), as
//! Redis 7 does.

use fridge_proto::resp::{
    Command, Version, write_array_header, write_bulk, write_error, write_integer, write_map_header,
    write_null, write_set_header, write_simple, write_wrong_arity,
};

use super::catalog::{self, Entry};
use super::glob::glob_match_nocase;
use super::{COMMANDS, REPORTED_FLAGS, SYNTAX, Spec, find, unknown_subcommand};
use crate::session::{Ctx, Session};

const NO_SUCH: &[u8] = b"ERR Invalid command specified";
const NO_KEYS: &[u8] = b"ERR The command has no key arguments";
const BAD_COUNT: &[u8] = b"ERR Invalid number of arguments specified for command";
/// The flags of SORT's `STORE` key (Redis's `sortGetKeys`), and of a key overwritten or
/// read and updated by SET and BITFIELD.
const STORE_FLAGS: [&[u8]; 2] = [b"OW", b"update"];
const UPDATE_FLAGS: [&[u8]; 3] = [b"RW", b"access", b"update"];
const READ_FLAGS: [&[u8]; 2] = [b"RO", b"access"];
const BAD_ARGS: &[u8] = b"ERR Invalid arguments specified for command";

pub(super) fn command(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    _: &mut Ctx<'_>,
    _: &Spec,
) {
    if super::help::answer(cmd, out, "command") {
        return;
    }
    let v = s.version;
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let sub = arg(1);
    let full = [b"command|", sub].concat();
    if let Some(e) = std::str::from_utf8(&full).ok().and_then(|f| subcommand(f.as_bytes())) {
        let n = cmd.len() as i64;
        if (e.arity > 0 && n != e.arity) || n < -e.arity {
            return write_wrong_arity(out, &full);
        }
    }
    if cmd.len() == 1 || (sub.eq_ignore_ascii_case(b"info") && cmd.len() == 2) {
        write_array_header(out, COMMANDS.len());
        for c in &COMMANDS {
            write_info(out, v, c);
        }
    } else if sub.eq_ignore_ascii_case(b"count") {
        write_integer(out, COMMANDS.len() as i64);
    } else if sub.eq_ignore_ascii_case(b"list") {
        list(cmd, out);
    } else if sub.eq_ignore_ascii_case(b"info") {
        write_array_header(out, cmd.len() - 2);
        for i in 2..cmd.len() {
            match find(arg(i)) {
                Some(c) => write_info(out, v, c),
                None => match subcommand(arg(i)) {
                    Some(e) => catalog::write_value(out, v, e.info),
                    None => write_null(out, v),
                },
            }
        }
    } else if sub.eq_ignore_ascii_case(b"docs") {
        docs(cmd, out, v);
    } else if sub.eq_ignore_ascii_case(b"getkeys") || sub.eq_ignore_ascii_case(b"getkeysandflags") {
        getkeys(cmd, out, v, sub.len() > 7);
    } else {
        unknown_subcommand(out, sub, b"COMMAND");
    }
}

/// The catalog entry of a table row.
fn entry(c: &Spec) -> Option<&'static Entry> {
    catalog::entry(c.name)
}

/// A subcommand of a table row, `container|sub` in any case.
fn subcommand(name: &[u8]) -> Option<&'static Entry> {
    let name = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
    let (container, _) = name.split_once('|')?;
    find(container.as_bytes())?;
    catalog::entry(&name).filter(|e| !e.info.is_empty())
}

/// `COMMAND INFO`'s ten fields for a row: the table's six, then the catalog's four (four
/// empty arrays for a command Redis does not have).
fn write_info(out: &mut Vec<u8>, v: Version, c: &Spec) {
    write_array_header(out, 10);
    write_bulk(out, c.name.as_bytes());
    write_integer(out, c.arity);
    let flags = || REPORTED_FLAGS.iter().filter(|(bit, _)| c.flags & bit != 0);
    write_set_header(out, v, flags().count());
    for (_, f) in flags() {
        write_simple(out, f.as_bytes());
    }
    write_integer(out, c.first_key);
    write_integer(out, c.last_key);
    write_integer(out, c.step);
    match entry(c) {
        Some(e) if !e.info_tail.is_empty() => catalog::write_value(out, v, e.info_tail),
        _ => (0..4).for_each(|_| write_array_header(out, 0)),
    }
}

/// `COMMAND DOCS [name…]`: a map of name to documentation; names fridge lacks are left out.
fn docs(cmd: &Command<'_>, out: &mut Vec<u8>, v: Version) {
    let names: Vec<(&[u8], &Entry)> = if cmd.len() == 2 {
        COMMANDS.iter().filter_map(|c| Some((c.name.as_bytes(), entry(c)?))).collect()
    } else {
        cmd.iter()
            .skip(2)
            .filter_map(|n| {
                let e = find(n).and_then(entry).or_else(|| subcommand(n))?;
                Some((n, e))
            })
            .collect()
    };
    write_map_header(out, v, names.len());
    for (name, e) in names {
        let lower = name.to_ascii_lowercase();
        write_bulk(out, &lower);
        if e.docs.is_empty() {
            write_map_header(out, v, 0);
        } else {
            catalog::write_value(out, v, e.docs);
        }
    }
}

/// `COMMAND LIST`'s filter.
enum Filter<'a> {
    All,
    /// `MODULE name`: fridge loads no modules.
    Module,
    /// `ACLCAT category`
    Category(&'a [u8]),
    /// `PATTERN pattern`, a glob of the name in any case.
    Pattern(&'a [u8]),
}

impl Filter<'_> {
    fn keeps(&self, name: &str) -> bool {
        match *self {
            Filter::All => true,
            Filter::Module => false,
            Filter::Category(want) => catalog::entry(name).is_some_and(|e| {
                e.categories
                    .iter()
                    .any(|c| c.strip_prefix(b"@").is_some_and(|c| c.eq_ignore_ascii_case(want)))
            }),
            Filter::Pattern(p) => glob_match_nocase(p, name.as_bytes()),
        }
    }
}

/// `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]`.
fn list(cmd: &Command<'_>, out: &mut Vec<u8>) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let filter = match cmd.len() {
        2 => Filter::All,
        5 if arg(2).eq_ignore_ascii_case(b"filterby") => {
            match arg(3).to_ascii_lowercase().as_slice() {
                b"module" => Filter::Module,
                b"aclcat" => Filter::Category(arg(4)),
                b"pattern" => Filter::Pattern(arg(4)),
                _ => return write_error(out, SYNTAX),
            }
        }
        _ => return write_error(out, SYNTAX),
    };
    let subcommands = |c: &Spec| entry(c).map_or(&[][..], |e| &e.subcommands[..]);
    let names: Vec<&str> = COMMANDS
        .iter()
        .flat_map(|c| std::iter::once(&c.name).chain(subcommands(c)))
        .copied()
        .filter(|n| filter.keeps(n))
        .collect();
    write_array_header(out, names.len());
    for n in names {
        write_bulk(out, n.as_bytes());
    }
}

/// A key's flags as Redis names them (`RW`, `access`, `update`…).
pub(super) type KeyFlags = &'static [&'static [u8]];

/// Why a call has no keys to report (`COMMAND GETKEYS`'s errors).
pub(super) enum NoKeys {
    /// The command (or its subcommand) does not exist.
    Unknown,
    /// It takes no keys.
    Keyless,
    /// Its arity is wrong.
    Arity,
    /// Its arguments name no key where one is required.
    Invalid,
}

/// The keys of a call (`args[0]` is the command's name) with their flags, as Redis finds
/// them: by the key specifications of the command or, for a container, of its subcommand,
/// with SORT's `STORE` key and SET's and BITFIELD's flags found in code as Redis does.
pub(super) fn command_keys(row: &Spec, args: &[&[u8]]) -> Result<Vec<(usize, KeyFlags)>, NoKeys> {
    let mut e = entry(row);
    let mut arity = row.arity;
    if let Some(sub) = args.get(1).filter(|_| e.is_some_and(|e| !e.subcommands.is_empty())) {
        let full = [args[0], b"|", sub].concat();
        match subcommand(&full) {
            Some(s) => (e, arity) = (Some(s), s.arity),
            None => return Err(NoKeys::Unknown),
        }
    }
    let Some(e) = e.filter(|e| e.has_keys()) else { return Err(NoKeys::Keyless) };
    let n = args.len() as i64;
    if (arity > 0 && arity != n) || n < -arity {
        return Err(NoKeys::Arity);
    }
    let mut keys = e.keys(args);
    if row.name == "sort" {
        keys.extend(sort_store_key(args).map(|i| (i, &STORE_FLAGS[..])));
    }
    if let (Some(flags), [(_, f)]) = (call_flags(row.name, args), &mut keys[..]) {
        *f = flags;
    }
    if keys.is_empty() && !e.keys_optional {
        return Err(NoKeys::Invalid);
    }
    Ok(keys)
}

/// `COMMAND GETKEYS command arg…` and `GETKEYSANDFLAGS`: the keys the key specifications find
/// (for a container, its subcommand's), with Redis's errors.
fn getkeys(cmd: &Command<'_>, out: &mut Vec<u8>, v: Version, with_flags: bool) {
    let args: Vec<&[u8]> = cmd.iter().skip(2).collect();
    let Some(row) = args.first().and_then(|name| find(name)) else {
        return write_error(out, NO_SUCH);
    };
    let keys = match command_keys(row, &args) {
        Ok(keys) => keys,
        Err(NoKeys::Unknown) => return write_error(out, NO_SUCH),
        Err(NoKeys::Keyless) => return write_error(out, NO_KEYS),
        Err(NoKeys::Arity) => return write_error(out, BAD_COUNT),
        Err(NoKeys::Invalid) => return write_error(out, BAD_ARGS),
    };
    write_array_header(out, keys.len());
    for (i, flags) in keys {
        if with_flags {
            write_array_header(out, 2);
        }
        write_bulk(out, args[i]);
        if with_flags {
            write_set_header(out, v, flags.len());
            for f in flags {
                write_simple(out, f);
            }
        }
    }
}

/// SORT's `STORE destination` key, which no key specification describes: the argument after
/// the last `STORE`, skipping `LIMIT`'s, `GET`'s and `BY`'s arguments (Redis's `sortGetKeys`,
/// `src/db.c`).
fn sort_store_key(args: &[&[u8]]) -> Option<usize> {
    let (mut i, mut found) = (2, None);
    while i < args.len() {
        let a = args[i];
        if a.eq_ignore_ascii_case(b"limit") {
            i += 2;
        } else if a.eq_ignore_ascii_case(b"get") || a.eq_ignore_ascii_case(b"by") {
            i += 1;
        } else if a.eq_ignore_ascii_case(b"store") && i + 1 < args.len() {
            found = Some(i + 1);
            i += 1;
        }
        i += 1;
    }
    found
}

/// The flags of the key of a command whose specification says `variable_flags`: they depend
/// on the arguments (Redis's `setGetKeys` and `bitfieldGetKeys`, `src/db.c`).
fn call_flags(name: &str, args: &[&[u8]]) -> Option<&'static [&'static [u8]]> {
    let is = |a: &[u8], word: &[u8]| a.eq_ignore_ascii_case(word);
    match name {
        "set" if args.iter().skip(3).any(|a| is(a, b"get")) => Some(&UPDATE_FLAGS),
        "set" => Some(&STORE_FLAGS),
        "bitfield" => {
            let mut i = 2;
            while i < args.len() {
                let rest = args.len() - i - 1;
                match args[i] {
                    a if is(a, b"get") && rest >= 2 => i += 2,
                    a if is(a, b"overflow") && rest >= 1 => i += 1,
                    _ => return Some(&UPDATE_FLAGS), // a write, or an error: not read-only
                }
                i += 1;
            }
            Some(&READ_FLAGS)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row added to the table needs `scripts/command-docs` run again.
    #[test]
    fn every_row_has_redis_documentation_and_key_specifications() {
        for c in &COMMANDS {
            let e = entry(c).unwrap_or_else(|| panic!("{}: run scripts/command-docs", c.name));
            assert!(!e.docs.is_empty() && !e.info_tail.is_empty(), "{}", c.name);
            assert_eq!(e.arity, c.arity, "{}: Redis's arity", c.name);
            if c.has_keys() {
                assert!(e.has_keys(), "{}: keys without a key specification", c.name);
            }
        }
    }
}
