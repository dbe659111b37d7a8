//! `ROLE` (<https://redis.io/commands/role/>) and `DEBUG SLEEP`
//! (<https://redis.io/commands/debug/>, Redis 7.0 `debug.c`).
//!
//! fridge has no replication: `ROLE` answers a master with no replicas at offset 0.
//! `DEBUG` has `SLEEP` and `HELP` only, for the admin only (Redis 7.0 refuses every `DEBUG`
//! by default, `enable-debug-command`). `DEBUG SLEEP <seconds>` sleeps as Redis's does,
//! holding the connection's worker — that worker's other connections wait, as all of
//! Redis's do — so it is bounded: at most [`MAX_SLEEP_SECS`] seconds.

use fridge_proto::resp::{Command, write_array_header, write_bulk, write_error, write_integer};

use super::object::{help, sub_arity};
use super::{Spec, no_permission, unknown_subcommand};
use crate::session::{Ctx, Session};

/// The longest `DEBUG SLEEP`.
const MAX_SLEEP_SECS: f64 = 5.0;

const DEBUG_HELP: [&str; 5] = [
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed (at most 5 seconds).",
    "HELP",
    "    Prints this help.",
];

pub(super) fn role(_: &Command<'_>, out: &mut Vec<u8>, _: &mut Session, _: &mut Ctx<'_>, _: &Spec) {
    write_array_header(out, 3);
    write_bulk(out, b"master");
    write_integer(out, 0);
    write_array_header(out, 0);
}

pub(super) fn debug(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let sub = cmd.get(1).unwrap_or_default();
    let is = |w: &[u8]| sub.eq_ignore_ascii_case(w);
    if is(b"help") {
        return if cmd.len() == 2 { help(out, &DEBUG_HELP) } else { sub_arity(out, "debug", sub) };
    }
    if !is(b"sleep") {
        return unknown_subcommand(out, sub, b"DEBUG");
    }
    if cmd.len() != 3 {
        return sub_arity(out, "debug", sub);
    }
    if !s.is_admin(ctx.tenants) {
        return no_permission(out, b"debug");
    }
    // As Redis's `strtod`: what does not read as a number sleeps 0.
    let secs = std::str::from_utf8(cmd.get(2).unwrap_or_default())
        .ok()
        .and_then(|t| t.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite())
        .unwrap_or(0.0);
    if secs > MAX_SLEEP_SECS {
        return write_error(out, b"ERR DEBUG SLEEP takes at most 5 seconds");
    }
    if secs > 0.0 {
        std::thread::sleep(std::time::Duration::from_secs_f64(secs));
    }
    out.extend_from_slice(b"+OK\r\n");
}
