//! `SLOWLOG` GET, LEN, RESET, HELP (<https://redis.io/commands/slowlog/>), over the log in
//! `crate::slowlog`; its settings are `CONFIG`'s `slowlog-log-slower-than` and
//! `slowlog-max-len`. The log is server-wide: the admin's only.

use fridge_proto::resp::{Command, write_array_header, write_bulk, write_error, write_integer};

use super::object::{help, sub_arity};
use super::{Spec, no_permission, unknown_subcommand};
use crate::session::{Ctx, Session};

const SLOWLOG_HELP: [&str; 12] = [
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Prints this help.",
];

pub(super) fn slowlog(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let sub = cmd.get(1).unwrap_or_default();
    let is = |w: &[u8]| sub.eq_ignore_ascii_case(w);
    let n = cmd.len();
    if is(b"help") {
        return if n == 2 { help(out, &SLOWLOG_HELP) } else { sub_arity(out, "slowlog", sub) };
    }
    if !(is(b"get") || is(b"len") || is(b"reset")) {
        return unknown_subcommand(out, sub, b"SLOWLOG");
    }
    if !is(b"get") && n != 2 {
        return sub_arity(out, "slowlog", sub);
    }
    if !s.is_admin(ctx.tenants) {
        let mut full = b"slowlog|".to_vec();
        full.extend(sub.iter().map(u8::to_ascii_lowercase));
        return no_permission(out, &full);
    }
    let log = &ctx.shared.slowlog;
    if is(b"len") {
        return write_integer(out, log.len() as i64);
    }
    if is(b"reset") {
        log.reset();
        return out.extend_from_slice(b"+OK\r\n");
    }
    if n > 3 {
        out.extend_from_slice(b"-ERR unknown subcommand or wrong number of arguments for '");
        out.extend(sub.iter().take(128).map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }));
        return out.extend_from_slice(b"'. Try SLOWLOG HELP.\r\n");
    }
    let count = match cmd.get(2).map(super::int_arg) {
        None => Some(10),
        Some(Some(-1)) => None,
        Some(Some(c)) if c >= 0 => Some(usize::try_from(c).unwrap_or(usize::MAX)),
        Some(_) => return write_error(out, b"ERR count should be greater than or equal to -1"),
    };
    let entries = log.newest(count);
    write_array_header(out, entries.len());
    for e in entries {
        write_array_header(out, 6);
        write_integer(out, e.id as i64);
        write_integer(out, e.time() as i64);
        write_integer(out, e.micros as i64);
        write_array_header(out, e.args().len());
        for a in e.args() {
            write_bulk(out, a);
        }
        write_bulk(out, e.addr.as_bytes());
        write_bulk(out, e.name.as_bytes());
    }
}
