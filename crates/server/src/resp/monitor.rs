//! Redis's `MONITOR` (<https://redis.io/commands/monitor/>; Redis 7.0 `replication.c`,
//! `replicationFeedMonitors`): the connection is answered `OK`, then receives one line per
//! command any client runs, as Redis writes it:
//!
//! ```text
//! +1700000000.123456 [0 127.0.0.1:50000] "set" "k" "v"
//! ```
//!
//! Unix time in microseconds, the database (0) and the client's address, then each argument
//! as Redis's `sdscatrepr` quotes it (`\"`, `\\`, `\n`, `\r`, `\t`, `\a`, `\b`, printable ASCII
//! as is, any other byte `\xhh`). As in Redis: a command is shown once it ran (a rejected one
//! — unknown, wrong arity, `NOAUTH` — is not; commands queued by `MULTI` are shown as `EXEC`
//! runs them, before `exec`), the commands Redis flags `admin` or `skip-monitor` are not
//! shown (`CONFIG`, `DEBUG`, `SLOWLOG`, `LATENCY`, `MONITOR`, `SHUTDOWN`, `CLIENT KILL|LIST|
//! PAUSE|UNPAUSE|NO-EVICT`, `EVAL`…), and `AUTH`'s arguments and `HELLO`'s `AUTH` user and
//! password are written `"(redacted)"`. A monitor still runs its own commands (`RESET` ends
//! monitoring, `QUIT` closes).
//!
//! fridge's own rules: a tenant's monitor sees its tenant's commands only (the admin sees
//! every one); memcached-protocol commands are not shown (memcached's `watch` streams are
//! theirs). The lines travel through the log watchers' lanes (`crate::watch`): a producer
//! pays one relaxed load when nobody monitors, formats the line once otherwise and copies it
//! into each monitor's lane for its thread; a monitor's lanes hold at most
//! `max_pubsub_output` bytes together, and a monitor that falls behind so far that a line
//! would be dropped is disconnected (counted in `client_output_buffer_limit_disconnections`),
//! as Redis disconnects a client past its output buffer limit.

use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use fridge_proto::resp::{Command, write_error, write_simple};

use super::Spec;
use crate::session::{Ctx, Session};
use crate::watch::{self, Watcher};

/// Commands Redis 7.0 flags `admin` or `skip-monitor`, and the admin subcommands of the
/// containers (`name|sub`): not shown to monitors.
const NOT_SHOWN: [&str; 12] = [
    "config",
    "debug",
    "slowlog",
    "latency",
    "monitor",
    "shutdown",
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
];
const NOT_SHOWN_CLIENT: [&[u8]; 6] =
    [b"kill", b"list", b"pause", b"unpause", b"no-evict", b"unblock"];

/// `MONITOR`.
pub(super) fn monitor(
    _: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    if s.watcher.is_some() {
        return; // already a monitor: ignored, as Redis does
    }
    let shared = ctx.shared;
    let worker = watch::lane();
    let waker = shared.wakers.lock().unwrap_or_else(|e| e.into_inner()).get(worker).cloned();
    let tenant = (!s.is_admin(ctx.tenants)).then_some(s.tenant);
    let limit = shared.config.max_pubsub_output.bytes();
    let added = waker.and_then(|waker| {
        let w = Watcher::monitor(s.id, tenant, worker, waker, shared.workers.len(), limit);
        shared.watch.add(w)
    });
    match added {
        Some(w) => {
            s.watcher = Some(w);
            write_simple(out, b"OK");
        }
        None => write_error(out, b"ERR max number of monitors and log watchers reached"),
    }
}

/// `RESET` on a monitor: it stops monitoring.
pub(super) fn stop(s: &mut Session, ctx: &Ctx<'_>) {
    if let Some(w) = s.watcher.take() {
        ctx.shared.watch.remove(&w);
    }
}

/// Whether the command `c` ran as `cmd` is shown to monitors.
fn shown(c: &Spec, cmd: &Command<'_>) -> bool {
    if NOT_SHOWN.contains(&c.name) {
        return false;
    }
    match cmd.get(1) {
        Some(sub) if c.name == "client" => {
            !NOT_SHOWN_CLIENT.iter().any(|n| sub.eq_ignore_ascii_case(n))
        }
        Some(sub) if c.name == "acl" => [b"cat".as_slice(), b"whoami", b"genpass", b"help"]
            .iter()
            .any(|n| sub.eq_ignore_ascii_case(n)),
        _ => true,
    }
}

/// Arguments written `(redacted)`: all of `AUTH`'s, and the user and password after
/// `HELLO`'s `AUTH`.
fn redacted(c: &Spec, cmd: &Command<'_>, i: usize) -> bool {
    match c.name {
        "auth" => i >= 1,
        "hello" => is_hello_auth_arg(cmd, i),
        _ => false,
    }
}

/// Whether argument `i` of `HELLO` is the user or the password after its `AUTH` option.
fn is_hello_auth_arg(cmd: &Command<'_>, i: usize) -> bool {
    // HELLO [protover [AUTH user pass] [SETNAME name]]: options start at argument 2.
    let mut j = 2;
    while j < cmd.len() {
        let opt = cmd.get(j).unwrap_or_default();
        if opt.eq_ignore_ascii_case(b"auth") && j + 2 < cmd.len() {
            if i == j + 1 || i == j + 2 {
                return true;
            }
            j += 3;
        } else {
            j += if opt.eq_ignore_ascii_case(b"setname") { 2 } else { 1 };
        }
    }
    false
}

/// Shows a command that ran to the monitors, if any watch (the caller tested
/// `Hub::wants(MONITOR)`, one relaxed load).
#[cold]
pub(super) fn feed(c: &Spec, cmd: &Command<'_>, s: &Session, ctx: &Ctx<'_>) {
    if !shown(c, cmd) {
        return;
    }
    ctx.shared.watch.monitor(s.tenant, |line| {
        let ts = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        // The client's database as the command left it, as Redis writes it.
        let _ = write!(line, "+{}.{:06} [{} ", ts.as_secs(), ts.subsec_micros(), s.db);
        match s.peer {
            std::net::IpAddr::V4(ip) => {
                let _ = write!(line, "{ip}:{}] ", s.port);
            }
            std::net::IpAddr::V6(ip) => {
                let _ = write!(line, "{ip}:{}] ", s.port);
            }
        }
        for i in 0..cmd.len() {
            if i > 0 {
                line.push(b' ');
            }
            if redacted(c, cmd, i) {
                line.extend_from_slice(b"\"(redacted)\"");
            } else {
                repr(line, cmd.get(i).unwrap_or_default());
            }
        }
        line.extend_from_slice(b"\r\n");
    });
}

/// Redis's `sdscatrepr`: `bytes` quoted, escaped as Redis escapes them.
pub(crate) fn repr(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::repr;

    #[test]
    fn arguments_are_quoted_as_redis_sdscatrepr() {
        let mut out = Vec::new();
        repr(&mut out, b"a \"b\"\\\n\r\t\x07\x08\x00\xff~");
        assert_eq!(out, b"\"a \\\"b\\\"\\\\\\n\\r\\t\\a\\b\\x00\\xff~\"");
    }
}
