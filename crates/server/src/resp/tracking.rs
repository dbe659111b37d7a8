//! Client-side caching commands: CLIENT TRACKING, CLIENT CACHING, CLIENT GETREDIR and CLIENT
//! TRACKINGINFO, as Redis 7.0's `clientCommand` (`src/networking.c`). The table and the
//! invalidations are `crate::tracking`.

use std::sync::Arc;

use fridge_proto::resp::{
    Command, Version, write_array_header, write_bulk, write_error, write_integer, write_map_header,
    write_set_header, write_simple, write_wrong_arity,
};

use super::{SYNTAX, Spec};
use crate::pubsub::Subscriber;
use crate::session::{Ctx, Session};
use crate::tracking::{ClientTracking, Enable};

/// The connection as a destination of its own invalidations.
fn own(s: &Session, ctx: &Ctx<'_>) -> Subscriber {
    Subscriber { worker: ctx.worker, slot: s.slot, id: s.id, pending: Arc::clone(&s.pending) }
}

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p]… [BCAST] [OPTIN] [OPTOUT] [NOLOOP]`.
pub(super) fn client_tracking(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &Ctx<'_>,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    if cmd.len() < 3 {
        return write_wrong_arity(out, b"client|tracking");
    }
    let mut o = ClientTracking::default();
    let mut i = 3;
    while i < cmd.len() {
        let a = arg(i);
        let is = |n: &[u8]| a.eq_ignore_ascii_case(n);
        let more = i + 1 < cmd.len();
        if is(b"redirect") && more {
            i += 1;
            if o.redirect != 0 {
                return write_error(
                    out,
                    b"ERR A client can only redirect to a single other client",
                );
            }
            match super::int_arg(arg(i)).and_then(|n| u64::try_from(n).ok()) {
                Some(id) if id > 0 => o.redirect = id,
                _ => {
                    return write_error(
                        out,
                        b"ERR The client ID you want redirect to does not exist",
                    );
                }
            }
        } else if is(b"bcast") {
            o.bcast = true;
        } else if is(b"optin") {
            o.optin = true;
        } else if is(b"optout") {
            o.optout = true;
        } else if is(b"noloop") {
            o.noloop = true;
        } else if is(b"prefix") && more {
            i += 1;
            o.prefixes.push(arg(i).into());
        } else {
            return write_error(out, SYNTAX);
        }
        i += 1;
    }
    let on = arg(2);
    if on.eq_ignore_ascii_case(b"off") {
        if s.tracking.take().is_some() {
            ctx.shared.tracking.disable(s.id);
            crate::notify::update_engine_events(ctx.shared);
        }
        return write_simple(out, b"OK");
    }
    if !on.eq_ignore_ascii_case(b"on") {
        return write_error(out, SYNTAX);
    }
    if let Err(e) = check(&o, s.tracking.as_deref(), out) {
        return e;
    }
    let target = if o.redirect == 0 {
        None
    } else {
        let clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
        match clients.get(&o.redirect).filter(|e| !e.killed && e.tenant == s.tenant) {
            Some(e) => Some(Subscriber {
                worker: e.worker,
                slot: e.slot,
                id: o.redirect,
                pending: Arc::clone(&e.pending),
            }),
            None => {
                return write_error(out, b"ERR The client ID you want redirect to does not exist");
            }
        }
    };
    // Turning it on again keeps the prefixes given before (Redis adds to them).
    if let Some(old) = s.tracking.as_deref() {
        let mut all = old.prefixes.clone();
        all.append(&mut o.prefixes);
        o.prefixes = all;
    }
    ctx.shared.tracking.enable(Enable {
        id: s.id,
        tenant: s.tenant,
        own: own(s, ctx),
        resp3: s.version == Version::Resp3,
        options: &o,
        target,
    });
    s.tracking = Some(Box::new(o));
    crate::notify::update_engine_events(ctx.shared);
    write_simple(out, b"OK");
}

/// Redis's checks of `CLIENT TRACKING ON`'s options; the error is written.
fn check(o: &ClientTracking, old: Option<&ClientTracking>, out: &mut Vec<u8>) -> Result<(), ()> {
    let fail = |out: &mut Vec<u8>, m: &[u8]| {
        write_error(out, m);
        Err(())
    };
    if !o.bcast && !o.prefixes.is_empty() {
        return fail(out, b"ERR PREFIX option requires BCAST mode to be enabled");
    }
    if let Some(old) = old {
        if old.bcast != o.bcast {
            return fail(
                out,
                b"ERR You can't switch BCAST mode on/off before disabling tracking for this \
                  client, and then re-enabling it with a different mode.",
            );
        }
    }
    if o.optin && o.optout {
        return fail(out, b"ERR You can't specify both OPTIN mode and OPTOUT mode");
    }
    if (o.optin && old.is_some_and(|t| t.optout)) || (o.optout && old.is_some_and(|t| t.optin)) {
        return fail(
            out,
            b"ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, \
              and then re-enabling it with a different mode.",
        );
    }
    if o.bcast && (o.optin || o.optout) {
        return fail(out, b"ERR OPTIN and OPTOUT are not compatible with BCAST");
    }
    // Prefixes must not overlap, among themselves or with those given before.
    let given: &[Box<[u8]>] = old.map_or(&[], |t| &t.prefixes[..]);
    for (i, p) in o.prefixes.iter().enumerate() {
        let overlaps = |q: &[u8]| p.starts_with(q) || q.starts_with(p);
        if let Some(q) = given.iter().find(|q| overlaps(q) && q[..] != p[..]) {
            return fail_overlap(out, p, q, b"an existing prefix");
        }
        if let Some(q) = o.prefixes[i + 1..].iter().find(|q| overlaps(q)) {
            return fail_overlap(out, p, q, b"another provided prefix");
        }
    }
    Ok(())
}

fn fail_overlap(out: &mut Vec<u8>, p: &[u8], q: &[u8], what: &[u8]) -> Result<(), ()> {
    out.extend_from_slice(b"-ERR Prefix '");
    out.extend_from_slice(p);
    out.extend_from_slice(b"' overlaps with ");
    out.extend_from_slice(what);
    out.extend_from_slice(b" '");
    out.extend_from_slice(q);
    out.extend_from_slice(b"'. Prefixes for a single client must not overlap.\r\n");
    Err(())
}

/// `CLIENT CACHING YES|NO`: whether the next command's reads are remembered (OPTIN/OPTOUT).
pub(super) fn client_caching(cmd: &Command<'_>, out: &mut Vec<u8>, s: &mut Session) {
    if cmd.len() != 3 {
        return write_wrong_arity(out, b"client|caching");
    }
    let Some(t) = s.tracking.as_deref_mut().filter(|t| t.optin || t.optout) else {
        return write_error(
            out,
            b"ERR CLIENT CACHING can be called only when the client is in tracking mode with \
              OPTIN or OPTOUT mode enabled",
        );
    };
    let v = cmd.get(2).unwrap_or_default();
    if v.eq_ignore_ascii_case(b"yes") {
        if !t.optin {
            return write_error(
                out,
                b"ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            );
        }
    } else if v.eq_ignore_ascii_case(b"no") {
        if !t.optout {
            return write_error(
                out,
                b"ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            );
        }
    } else {
        return write_error(out, SYNTAX);
    }
    t.caching = true;
    write_simple(out, b"OK");
}

/// `CLIENT GETREDIR`: -1 not tracking, 0 tracking without a redirect, else its id.
pub(super) fn client_getredir(out: &mut Vec<u8>, s: &Session) {
    let n = s.tracking.as_deref().map_or(-1, |t| t.redirect as i64);
    write_integer(out, n);
}

/// `CLIENT TRACKINGINFO`: flags, redirect and prefixes.
pub(super) fn client_trackinginfo(out: &mut Vec<u8>, s: &Session, ctx: &Ctx<'_>) {
    let v = s.version;
    write_map_header(out, v, 3);
    write_bulk(out, b"flags");
    match s.tracking.as_deref() {
        None => {
            write_set_header(out, v, 1);
            write_bulk(out, b"off");
        }
        Some(t) => {
            let broken = t.redirect != 0 && ctx.shared.tracking.broken(s.id);
            let caching: &[u8] = if t.optin { b"caching-yes" } else { b"caching-no" };
            let flags: [(bool, &[u8]); 7] = [
                (true, b"on"),
                (t.bcast, b"bcast"),
                (t.optin, b"optin"),
                (t.optout, b"optout"),
                (t.caching, caching),
                (t.noloop, b"noloop"),
                (broken, b"broken_redirect"),
            ];
            write_set_header(out, v, flags.iter().filter(|f| f.0).count());
            for (_, name) in flags.iter().filter(|f| f.0) {
                write_bulk(out, name);
            }
        }
    }
    write_bulk(out, b"redirect");
    write_integer(out, s.tracking.as_deref().map_or(-1, |t| t.redirect as i64));
    write_bulk(out, b"prefixes");
    let mut prefixes: Vec<&[u8]> =
        s.tracking.as_deref().map_or(Vec::new(), |t| t.prefixes.iter().map(|p| &p[..]).collect());
    prefixes.sort_unstable();
    write_array_header(out, prefixes.len());
    for p in prefixes {
        write_bulk(out, p);
    }
}

/// After a command: a tracking connection's reads are remembered (default mode), and a
/// `CLIENT CACHING` given for this command is spent.
pub(super) fn after_command(cmd: &Command<'_>, s: &mut Session, ctx: &Ctx<'_>, c: &Spec) {
    let Some(t) = s.tracking.as_deref_mut() else { return };
    if c.flags & super::READONLY != 0 && c.first_key > 0 && t.remembers() {
        let last = if c.last_key < 0 { cmd.len() as i64 + c.last_key } else { c.last_key };
        let keys = (c.first_key..=last)
            .step_by(c.step.max(1) as usize)
            .filter_map(|i| cmd.get(i as usize));
        let (shared, me) = (ctx.shared, ctx.worker);
        shared.tracking.remember(s.id, s.tenant, keys, &shared.pubsub, |w| {
            if w != me {
                shared.wake(w);
            }
        });
    }
    if c.name != "client" {
        t.caching = false;
    }
}
