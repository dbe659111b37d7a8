//! Redis's `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`
//! (<https://redis.io/commands/shutdown/>; Redis 7.0 `server.c`, `shutdownCommand` and
//! `prepareForShutdown`).
//!
//! fridge stops as on SIGTERM: it stops accepting, runs what each connection had sent,
//! writes the replies and closes (see `docs/threads.md`); the asking connection gets no
//! reply, as Redis's sees its connection close. fridge's only persistence is the warm
//! restart's file (`--restart-file`, `crate::restart`), written at every graceful stop: with
//! one configured, `SAVE` stops as no option does and `NOSAVE` stops without writing it (the
//! next start is empty); without one, `SAVE` (which makes Redis write a snapshot even without
//! save points) fails as a failed save does in Redis, `-ERR Errors trying to SHUTDOWN. Check
//! logs.`, unless `FORCE` (Redis then exits anyway), and `NOSAVE` and no option stop at once.
//! `NOW` changes nothing (there are no replicas to wait for), and `ABORT` finds no shutdown to
//! abort. The admin's only.

use fridge_proto::resp::{Command, write_error};

use super::{SYNTAX, Spec, no_permission};
use crate::session::{Ctx, Session};

pub(super) fn shutdown(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let (mut nosave, mut save, mut abort, mut other) = (false, false, false, false);
    let mut force = false;
    for a in cmd.iter().skip(1) {
        let is = |w: &[u8]| a.eq_ignore_ascii_case(w);
        if is(b"nosave") {
            nosave = true;
        } else if is(b"save") {
            save = true;
        } else if is(b"now") {
            other = true;
        } else if is(b"force") {
            (force, other) = (true, true);
        } else if is(b"abort") {
            abort = true;
        } else {
            return write_error(out, SYNTAX);
        }
    }
    if (abort && (nosave || save || other)) || (nosave && save) {
        return write_error(out, SYNTAX);
    }
    if !s.is_admin(ctx.tenants) {
        return no_permission(out, b"shutdown");
    }
    if abort {
        return write_error(out, b"ERR No shutdown in progress.");
    }
    if save && !force && ctx.shared.config.restart_file.is_none() {
        return write_error(out, b"ERR Errors trying to SHUTDOWN. Check logs.");
    }
    if nosave {
        ctx.shared.restart_nosave.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    ctx.shared.request_shutdown();
    for w in 0..ctx.shared.workers.len() {
        ctx.shared.wake(w);
    }
    s.closing = true;
}
