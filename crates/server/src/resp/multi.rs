//! Redis transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH (Redis 7.0's `src/multi.c`;
//! <https://redis.io/docs/manual/transactions/>).
//!
//! After `MULTI` a connection's commands are not run but queued, each answered `+QUEUED`;
//! `EXEC`, `DISCARD`, `MULTI`, `WATCH`, `QUIT` and `RESET` still run at once. A command
//! refused while queueing (unknown, wrong arity, not logged in, the queue over its bound)
//! flags the transaction, and its `EXEC` answers `EXECABORT`. `EXEC` runs the queue with
//! every worker's transaction gate held (`crate::transaction`), so no other client sees a
//! partial transaction, and answers the array of the commands' replies (errors included).
//!
//! WATCH remembers, per key, the item's CAS and expiry as it was (or that there was none).
//! The engine gives every stored value a new CAS, and a TTL change keeps the CAS but changes
//! the expiry, so `EXEC` — under the gates — looks each key up again and aborts (a null
//! array) if any differs: a write from any client on any worker, `EXPIRE`/`PERSIST`, and a key
//! that expired or was evicted since (it is gone) all count as changes, as in Redis.
//!
//! Memory: the queue is kept as RESP bytes in one buffer; the queue and the watched keys
//! together may take at most the clients' memory limit (`max_client_memory`); past it, the
//! command is refused with [`TOO_LARGE`] and the transaction flagged.

use fridge_proto::resp::{self as r, Command, write_array_header, write_error};

use super::{Spec, run_queued};
use crate::session::{Ctx, Session};
use crate::transaction::Watched;

const NESTED: &[u8] = b"ERR MULTI calls can not be nested";
const EXEC_WITHOUT: &[u8] = b"ERR EXEC without MULTI";
const DISCARD_WITHOUT: &[u8] = b"ERR DISCARD without MULTI";
const WATCH_INSIDE: &[u8] = b"ERR WATCH inside MULTI is not allowed";
const EXECABORT: &[u8] = b"EXECABORT Transaction discarded because of previous errors.";
/// A queued command or watched key past the queue's bound (see the module doc).
pub(super) const TOO_LARGE: &[u8] =
    b"ERR transaction too large: queued commands exceed the client memory limit";

/// Whether the connection is between MULTI and EXEC (its commands are queued).
#[inline]
pub(super) fn queueing(s: &Session) -> bool {
    s.tx.as_ref().is_some_and(|t| t.open)
}

/// Marks the open transaction as failed (a command was refused while queueing).
pub(super) fn flag(s: &mut Session) {
    if let Some(t) = s.tx.as_mut().filter(|t| t.open) {
        t.failed = true;
    }
}

/// Whether `spec` runs at once even inside MULTI (Redis's `processCommand`).
pub(super) fn runs_inside(spec: &Spec) -> bool {
    matches!(spec.name, "exec" | "discard" | "multi" | "watch" | "quit" | "reset")
}

/// Queues `cmd` (its arguments checked already) and answers `+QUEUED`.
pub(super) fn queue(cmd: &Command<'_>, out: &mut Vec<u8>, s: &mut Session, ctx: &Ctx<'_>) {
    let limit = ctx.shared.config.client_memory_limit();
    let Some(t) = s.tx.as_mut() else { return };
    let size: usize = cmd.iter().map(|a| a.len() + 24).sum::<usize>() + 16;
    if t.bytes() + size > limit {
        t.failed = true;
        return write_error(out, TOO_LARGE);
    }
    write_array_header(&mut t.queue, cmd.len());
    for a in cmd.iter() {
        r::write_bulk(&mut t.queue, a);
    }
    t.count += 1;
    out.extend_from_slice(b"+QUEUED\r\n");
}

/// EXEC refused before it runs (wrong arity, subscriber mode): Redis 7.0 (`rejectCommand` →
/// `execCommandAbort`) ends any transaction, unwatches, and answers EXECABORT with the
/// reason (`error`, an error reply whose `ERR ` prefix is dropped), in MULTI or not.
pub(super) fn exec_refused(out: &mut Vec<u8>, s: &mut Session, error: &[u8]) {
    s.tx = None;
    let reason = error.strip_prefix(b"-ERR ").unwrap_or(error);
    out.extend_from_slice(b"-EXECABORT Transaction discarded because of: ");
    out.extend_from_slice(reason);
}

pub(super) fn multi(
    _: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    _: &mut Ctx<'_>,
    _: &Spec,
) {
    let t = s.tx.get_or_insert_with(Box::default);
    if t.open {
        return write_error(out, NESTED);
    }
    t.open = true;
    t.writes = false;
    out.extend_from_slice(b"+OK\r\n");
}

pub(super) fn discard(
    _: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    _: &mut Ctx<'_>,
    _: &Spec,
) {
    if !queueing(s) {
        return write_error(out, DISCARD_WITHOUT);
    }
    s.tx = None;
    out.extend_from_slice(b"+OK\r\n");
}

pub(super) fn watch(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    if queueing(s) {
        return write_error(out, WATCH_INSIDE);
    }
    let limit = ctx.shared.config.client_memory_limit();
    let (tenant, db) = (s.tenant, s.db);
    let t = s.tx.get_or_insert_with(Box::default);
    for key in cmd.iter().skip(1) {
        if t.watched.iter().any(|w| w.tenant == tenant && w.db == db && *w.key == *key) {
            continue;
        }
        if t.bytes() + key.len() + std::mem::size_of::<Watched>() > limit {
            return write_error(out, TOO_LARGE);
        }
        let seen = ctx.engine.get_any(tenant, key, |i| (i.cas, i.expires_at_ms));
        t.watched_bytes += key.len() + std::mem::size_of::<Watched>();
        t.watched.push(Watched { tenant, db, key: key.into(), seen });
    }
    out.extend_from_slice(b"+OK\r\n");
}

pub(super) fn unwatch(
    _: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    _: &mut Ctx<'_>,
    _: &Spec,
) {
    if let Some(t) = s.tx.as_mut() {
        t.watched = Vec::new();
        t.watched_bytes = 0;
    }
    out.extend_from_slice(b"+OK\r\n");
}

/// EXEC: runs the queue under every worker's gate. (The dispatcher runs EXEC outside its own
/// worker's gate: see `Spec` flag `NO_GATE`.)
pub(super) fn exec(
    _: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    if !queueing(s) {
        return write_error(out, EXEC_WITHOUT);
    }
    // The transaction ends here whatever happens: the queue is run or dropped, and the
    // keys unwatched.
    let Some(t) = s.tx.take() else { return };
    if t.failed {
        return write_error(out, EXECABORT);
    }
    let shared = ctx.shared;
    let Ok(_gates) = shared.gates.enter_all_unless(|| shared.scripting.too_long()) else {
        return super::script::write_busy(out, shared);
    };
    let changed = t.watched.iter().any(|w| {
        ctx.engine.select(shared.databases.physical(w.tenant, w.db));
        w.seen != ctx.engine.get_any(w.tenant, &w.key, |i| (i.cas, i.expires_at_ms))
    });
    if changed {
        return r::write_null_array(out, s.version);
    }
    // A reply past `max_output_buffer` is dropped as it grows and the connection closed
    // (Redis's output buffer limit); the transaction still runs whole.
    let (from, mut limit, mut over) = (out.len(), shared.config.max_output_buffer.bytes(), false);
    write_array_header(out, t.count);
    let limits = shared.config.resp_limits();
    let mut args = r::Args::new();
    let mut pos = 0;
    s.deny_blocking = true;
    for _ in 0..t.count {
        let rest = t.queue.get(pos..).unwrap_or_default();
        match r::parse_command(rest, &limits, &mut args) {
            Ok(used) => {
                pos += used;
                if run_queued(&args.command(rest), out, s, ctx, from, limit) {
                    (limit, over) = (0, true);
                }
            }
            // The queue holds only requests this module encoded; never reached.
            Err(_) => write_error(out, b"ERR internal error: unreadable queued command"),
        }
    }
    s.deny_blocking = false;
    if over {
        out.truncate(from);
        s.closing = true;
    }
}
