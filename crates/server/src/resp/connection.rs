//! Connection commands: PING, ECHO, QUIT, HELLO, AUTH, ACL WHOAMI and RESET.

use fridge_proto::resp::{
    Command, Version, write_array_header, write_bulk, write_error, write_integer, write_map_header,
    write_simple, write_wrong_arity,
};

use super::{SYNTAX, Spec, int_arg, unknown_subcommand};
use crate::session::{Ctx, Session};
use crate::tenants::Login;

const WRONGPASS: &[u8] = b"WRONGPASS invalid username-password pair or user is disabled.";
/// A login refused unchecked (see `auth`). Deliberately not `WRONGPASS`: nothing was checked,
/// and clients (redis-py) raise a plain error for it rather than an authentication failure.
const REFUSED: &[u8] = b"ERR too many failed login attempts; try again later";
/// A right password for a tenant whose `max_connections` are all logged in
/// (`crate::limits`); after Redis's `-ERR max number of clients reached`.
const TENANT_FULL: &[u8] = b"ERR max number of clients reached for this tenant";
const NO_DEFAULT_PASSWORD: &[u8] = b"ERR AUTH <password> called without any password configured \
    for the default user. Are you sure your configuration is correct?";
const HELLO_NOAUTH: &[u8] = b"NOAUTH HELLO must be called with the client already \
    authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate \
    the client and select the RESP protocol version at the same time";
pub(super) fn ping(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    _: &mut Ctx<'_>,
    c: &Spec,
) {
    match cmd.get(1) {
        _ if cmd.len() > 2 => write_wrong_arity(out, c.name.as_bytes()),
        // In RESP2 subscriber mode, a push-shaped reply (Redis's `pingCommand`).
        message if s.version == Version::Resp2 && s.subscribed() => {
            write_array_header(out, 2);
            write_bulk(out, b"pong");
            write_bulk(out, message.unwrap_or_default());
        }
        Some(message) => write_bulk(out, message),
        None => write_simple(out, b"PONG"),
    }
}

pub(super) fn echo(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    _: &mut Session,
    _: &mut Ctx<'_>,
    _: &Spec,
) {
    write_bulk(out, cmd.get(1).unwrap_or_default());
}

pub(super) fn quit(_: &Command<'_>, out: &mut Vec<u8>, s: &mut Session, _: &mut Ctx<'_>, _: &Spec) {
    write_simple(out, b"OK");
    s.closing = true;
}

pub(super) fn auth(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let n = cmd.len();
    if n > 3 {
        return write_error(out, SYNTAX);
    }
    let (user, password) = if n == 2 { (None, arg(1)) } else { (Some(arg(1)), arg(2)) };
    match crate::auth::attempt(s, ctx, user, password) {
        Ok(Login::Ok(_)) => write_simple(out, b"OK"),
        Ok(Login::Denied) => write_error(out, WRONGPASS),
        Ok(Login::NoDefaultPassword) => write_error(out, NO_DEFAULT_PASSWORD),
        Err(crate::auth::Refused::Failures) => write_error(out, REFUSED),
        Err(crate::auth::Refused::Full) => write_error(out, TENANT_FULL),
    }
}

/// `ACL WHOAMI`, the one `ACL` subcommand.
pub(super) fn acl(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    if super::help::answer(cmd, out, "acl") {
        return;
    }
    let sub = cmd.get(1).unwrap_or_default();
    if !sub.eq_ignore_ascii_case(b"whoami") {
        return unknown_subcommand(out, sub, b"ACL");
    }
    if cmd.len() != 2 {
        return write_wrong_arity(out, c.name.as_bytes());
    }
    let name = ctx.tenants.name(s.user.unwrap_or(s.tenant)).unwrap_or_default();
    write_bulk(out, name.as_bytes());
}

/// Redis's RESET also logs the client out (back to `default`, or to nothing).
pub(super) fn reset(
    _: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    s.version = Version::Resp2;
    s.tx = None;
    super::databases::set_db(s, 0);
    super::monitor::stop(s, ctx);
    if let Some(subs) = &mut s.pubsub {
        subs.clear(s.id, &ctx.shared.pubsub);
    }
    if s.tracking.take().is_some() {
        ctx.shared.tracking.disable(s.id);
        crate::notify::update_engine_events(ctx.shared);
    }
    crate::auth::logged_out(s, ctx);
    write_simple(out, b"RESET");
}

pub(super) fn hello(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let mut version = s.version;
    let mut i = 1;
    if cmd.len() >= 2 {
        match int_arg(arg(1)) {
            Some(2) => version = Version::Resp2,
            Some(3) => version = Version::Resp3,
            Some(_) => return write_error(out, b"NOPROTO unsupported protocol version"),
            None => {
                return write_error(out, b"ERR Protocol version is not an integer or out of range");
            }
        }
        i = 2;
    }
    let mut name = None;
    let mut login = None;
    while i < cmd.len() {
        let o = arg(i);
        if o.eq_ignore_ascii_case(b"auth") && i + 2 < cmd.len() {
            login = Some((arg(i + 1), arg(i + 2)));
            i += 3;
        } else if o.eq_ignore_ascii_case(b"setname") && i + 1 < cmd.len() {
            name = Some(arg(i + 1));
            i += 2;
        } else {
            out.extend_from_slice(b"-ERR Syntax error in HELLO option '");
            out.extend_from_slice(o);
            return out.extend_from_slice(b"'\r\n");
        }
    }
    match login {
        Some((user, password)) => match crate::auth::attempt(s, ctx, Some(user), password) {
            Ok(Login::Ok(_)) => {}
            Ok(Login::Denied | Login::NoDefaultPassword) => return write_error(out, WRONGPASS),
            Err(crate::auth::Refused::Failures) => return write_error(out, REFUSED),
            Err(crate::auth::Refused::Full) => return write_error(out, TENANT_FULL),
        },
        None if s.must_login(ctx.tenants) => return write_error(out, HELLO_NOAUTH),
        None => {}
    }
    if let Some(name) = name {
        if !set_client_name(ctx, s.id, name) {
            return write_error(out, BAD_NAME);
        }
    }
    s.version = version;
    write_map_header(out, version, 7);
    write_bulk(out, b"server");
    write_bulk(out, b"redis");
    write_bulk(out, b"version");
    write_bulk(out, crate::shared::REDIS_VERSION.as_bytes());
    write_bulk(out, b"proto");
    write_integer(out, if version == Version::Resp3 { 3 } else { 2 });
    write_bulk(out, b"id");
    write_integer(out, i64::try_from(s.id).unwrap_or(i64::MAX));
    write_bulk(out, b"mode");
    write_bulk(out, if ctx.shared.cluster.is_some() { b"cluster" } else { b"standalone" });
    write_bulk(out, b"role");
    write_bulk(out, b"master");
    write_bulk(out, b"modules");
    write_array_header(out, 0);
}

pub(super) const BAD_NAME: &[u8] =
    b"ERR Client names cannot contain spaces, newlines or special characters.";

pub(super) fn set_client_name(ctx: &Ctx<'_>, id: u64, name: &[u8]) -> bool {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return false;
    }
    let mut clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = clients.get_mut(&id) {
        e.name = String::from_utf8_lossy(name).into_owned();
    }
    true
}
