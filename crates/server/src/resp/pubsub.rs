//! Pub/sub commands: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their UNSUBSCRIBE forms, PUBLISH,
//! SPUBLISH and PUBSUB, as Redis 7.0's `src/pubsub.c`. The registry and the delivery across
//! workers are `crate::pubsub`.
//!
//! Replies to (un)subscriptions are push frames (`>3` in RESP3, `*3` in RESP2), one per
//! channel, each with the connection's subscription count after it. In RESP2 a connection
//! with any subscription may only run the commands [`allowed_in_subscriber_mode`] lists.

use fridge_proto::resp::{
    Command, Version, write_array_header, write_bulk, write_integer, write_null, write_push_header,
    write_simple, write_wrong_arity,
};

use super::{Spec, unknown_subcommand};
use crate::pubsub::{Kind, Subscriber, Subscriptions};
use crate::session::{Ctx, Session};

/// Whether a RESP2 connection with subscriptions may run `name` (lowercase).
pub(super) fn allowed_in_subscriber_mode(name: &str) -> bool {
    matches!(
        name,
        "subscribe"
            | "psubscribe"
            | "ssubscribe"
            | "unsubscribe"
            | "punsubscribe"
            | "sunsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}

/// Redis's refusal of any other command in RESP2 subscriber mode; `full` is the command's
/// full name (`get`, `client|id`).
pub(super) fn write_subscriber_mode_error(out: &mut Vec<u8>, full: &[u8]) {
    out.extend_from_slice(b"-ERR Can't execute '");
    out.extend_from_slice(full);
    out.extend_from_slice(
        b"': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this \
          context\r\n",
    );
}

fn kind_of(name: &str) -> Kind {
    match name {
        "psubscribe" | "punsubscribe" => Kind::Pattern,
        "ssubscribe" | "sunsubscribe" | "spublish" => Kind::Shard,
        _ => Kind::Channel,
    }
}

/// The connection's subscriptions, made in the tenant it runs as now: subscriptions made
/// in another tenant (before an `AUTH` as another user) are dropped.
fn subscriptions<'s>(s: &'s mut Session, ctx: &Ctx<'_>) -> &'s mut Subscriptions {
    let tenant = s.tenant;
    let subs = s.pubsub.get_or_insert_with(|| Box::new(Subscriptions::new(tenant)));
    if subs.tenant != tenant {
        subs.clear(s.id, &ctx.shared.pubsub);
        subs.tenant = tenant;
    }
    subs
}

fn write_confirmation(out: &mut Vec<u8>, v: Version, what: &str, name: Option<&[u8]>, n: usize) {
    write_push_header(out, v, 3);
    write_bulk(out, what.as_bytes());
    match name {
        Some(name) => write_bulk(out, name),
        None => write_null(out, v),
    }
    write_integer(out, n as i64);
}

/// `SUBSCRIBE`, `PSUBSCRIBE`, `SSUBSCRIBE`.
pub(super) fn subscribe(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let kind = kind_of(c.name);
    let (v, id, slot, worker) = (s.version, s.id, s.slot, ctx.worker);
    let pending = std::sync::Arc::clone(&s.pending);
    let subs = subscriptions(s, ctx);
    for name in cmd.iter().skip(1) {
        if subs.add(kind, name) {
            let sub = Subscriber { worker, slot, id, pending: pending.clone() };
            ctx.shared.pubsub.subscribe(subs.tenant, kind, name, &sub);
        }
        write_confirmation(out, v, c.name, Some(name), subs.count(kind));
    }
}

/// `UNSUBSCRIBE`, `PUNSUBSCRIBE`, `SUNSUBSCRIBE`: the channels named, or all of them.
pub(super) fn unsubscribe(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let kind = kind_of(c.name);
    let (v, id) = (s.version, s.id);
    let subs = subscriptions(s, ctx);
    let hub = &ctx.shared.pubsub;
    if cmd.len() == 1 {
        let names = subs.take_all(kind);
        if names.is_empty() {
            return write_confirmation(out, v, c.name, None, subs.count(kind));
        }
        hub.unsubscribe(subs.tenant, kind, id, names.iter().map(|n| &n[..]));
        let mut left = subs.count(kind) + names.len();
        for name in &names {
            left -= 1;
            write_confirmation(out, v, c.name, Some(name), left);
        }
        return;
    }
    for name in cmd.iter().skip(1) {
        if subs.remove(kind, name) {
            hub.unsubscribe(subs.tenant, kind, id, std::iter::once(name));
        }
        write_confirmation(out, v, c.name, Some(name), subs.count(kind));
    }
}

/// `PUBLISH`, `SPUBLISH`: how many subscribers the message was sent to.
pub(super) fn publish(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let kind = kind_of(c.name);
    let (channel, message) = (cmd.get(1).unwrap_or_default(), cmd.get(2).unwrap_or_default());
    let me = ctx.worker;
    let shared = ctx.shared;
    // The publisher's own worker delivers at the end of its turn: no need to wake it.
    let n = shared.pubsub.publish(s.tenant, kind, channel, message, |w| {
        if w != me {
            shared.wake(w);
        }
    });
    write_integer(out, n as i64);
}

const PUBSUB_HELP: [&str; 14] = [
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];

/// `PUBSUB CHANNELS|NUMSUB|NUMPAT|SHARDCHANNELS|SHARDNUMSUB|HELP`, over the tenant's
/// channels.
pub(super) fn pubsub(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let sub = cmd.get(1).unwrap_or_default();
    let n = cmd.len();
    let is = |name: &[u8]| sub.eq_ignore_ascii_case(name);
    let hub = &ctx.shared.pubsub;
    let t = s.tenant;
    let (list, count) = match () {
        _ if is(b"channels") => (Some(Kind::Channel), None),
        _ if is(b"shardchannels") => (Some(Kind::Shard), None),
        _ if is(b"numsub") => (None, Some(Kind::Channel)),
        _ if is(b"shardnumsub") => (None, Some(Kind::Shard)),
        _ if is(b"numpat") => {
            if n != 2 {
                return write_wrong_arity(out, b"pubsub|numpat");
            }
            return write_integer(out, hub.counts(Some(t)).patterns as i64);
        }
        _ if is(b"help") => {
            if n != 2 {
                return write_wrong_arity(out, b"pubsub|help");
            }
            write_array_header(out, PUBSUB_HELP.len());
            for line in PUBSUB_HELP {
                write_simple(out, line.as_bytes());
            }
            return;
        }
        _ => return unknown_subcommand(out, sub, b"PUBSUB"),
    };
    if let Some(kind) = list {
        if n > 3 {
            out.extend_from_slice(b"-ERR unknown subcommand or wrong number of arguments for '");
            out.extend(
                sub.iter().take(128).map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
            );
            return out.extend_from_slice(b"'. Try PUBSUB HELP.\r\n");
        }
        let names = hub.names(t, kind, cmd.get(2));
        write_array_header(out, names.len());
        for name in &names {
            write_bulk(out, name);
        }
    } else if let Some(kind) = count {
        write_array_header(out, (n - 2) * 2);
        for name in cmd.iter().skip(2) {
            write_bulk(out, name);
            write_integer(out, hub.subscribers(t, kind, name) as i64);
        }
    }
}
