//! `HOTKEYS` GET, RESET, HELP in Valkey 9.2's shape (<https://valkey.io/commands/hotkeys/>):
//! always on, over windows (`hotkeys-window-seconds`), at most `hotkeys-top-k` keys
//! (`crate::hotkeys`). `GET` answers an array of maps `key`, `db`, `qps`, most referenced
//! first, and fridge's `count` (references in the window) and `freq` (`OBJECT FREQ`, absent
//! once the key is gone); the admin's entries also name their `tenant`. An empty array when
//! the views are off (`hotkeys-top-k 0`) or the engine counts no hot keys (its inline
//! cleaner without a hitmap, never the server's).
//!
//! Redis 8.6 chose another form for the same name — sessions (`START`/`STOP`) measuring each
//! key's CPU time and network bytes — which fridge does not measure: `START` and `STOP` get
//! an error saying so, never an `OK`.

use fridge_proto::resp::{
    Command, write_array_header, write_bulk, write_error, write_integer, write_map_header,
};

use super::object::{help, sub_arity};
use super::{Spec, no_permission, unknown_subcommand};
use crate::session::{Ctx, Session};

const HOTKEYS_HELP: [&str; 9] = [
    "HOTKEYS <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET",
    "    Return the hottest keys of the last completed window (the current one before any",
    "    completed), most referenced first: key, db, qps, count, freq.",
    "RESET",
    "    Clear all collected hot key statistics.",
    "HELP",
    "    Prints this help.",
    "(Redis 8.6's START and STOP sessions are not served: keys are always counted.)",
];

pub(super) fn hotkeys(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let sub = cmd.get(1).unwrap_or_default();
    let is = |w: &[u8]| sub.eq_ignore_ascii_case(w);
    if is(b"start") || is(b"stop") {
        return write_error(
            out,
            b"ERR HOTKEYS START and STOP (Redis 8.6's CPU and network sessions) are not \
              served: fridge counts every key's references all the time; use HOTKEYS GET",
        );
    }
    if !(is(b"help") || is(b"get") || is(b"reset")) {
        return unknown_subcommand(out, sub, b"HOTKEYS");
    }
    if cmd.len() != 2 {
        return sub_arity(out, "hotkeys", sub);
    }
    if is(b"help") {
        return help(out, &HOTKEYS_HELP);
    }
    let viewer = crate::hotkeys::viewer(s, ctx);
    if is(b"reset") {
        if viewer.is_some() {
            return no_permission(out, b"hotkeys|reset");
        }
        ctx.shared.engine.reset_hot_keys();
        return out.extend_from_slice(b"+OK\r\n");
    }
    let Some(report) = crate::hotkeys::report(ctx.shared, viewer) else {
        return write_array_header(out, 0);
    };
    let tenants = ctx.shared.tenants();
    write_array_header(out, report.keys.len());
    for h in &report.keys {
        let freq = crate::hotkeys::freq(ctx, h.tenant, h.db, &h.key);
        let fields = 4 + usize::from(freq.is_some()) + usize::from(viewer.is_none());
        write_map_header(out, s.version, fields);
        write_bulk(out, b"key");
        write_bulk(out, &h.key);
        write_bulk(out, b"db");
        write_integer(out, i64::from(h.db));
        write_bulk(out, b"qps");
        write_integer(out, report.per_second(h.count) as i64);
        write_bulk(out, b"count");
        write_integer(out, h.count as i64);
        if let Some(z) = freq {
            write_bulk(out, b"freq");
            write_integer(out, i64::from(z));
        }
        if viewer.is_none() {
            write_bulk(out, b"tenant");
            write_bulk(out, tenants.name(h.tenant).unwrap_or("?").as_bytes());
        }
    }
}
