//! Database commands: SELECT, SWAPDB and MOVE (Redis 7.0 `db.c`: `selectCommand`,
//! `swapdbCommand`, `moveCommand`; <https://redis.io/commands/select/>,
//! <https://redis.io/commands/swapdb/>, <https://redis.io/commands/move/>). The databases
//! themselves, and how SWAPDB swaps them for every client at once, are `crate::databases`.

use std::sync::atomic::Ordering;

use fridge_engine::{Condition, Expiry, Store, StoreOutcome, Update};
use fridge_proto::resp::{Command, write_error, write_integer, write_simple};

use super::{NOT_INTEGER, Spec, engine_error, int_arg, notify};
use crate::keyspace::GENERIC;
use crate::session::{Ctx, Session};

pub(super) const OUT_OF_RANGE: &[u8] = b"ERR DB index is out of range";
pub(super) const SAME_OBJECT: &[u8] = b"ERR source and destination objects are the same";

/// A database argument as Redis reads one (`getIntFromObjectOrReply` into an `int`, then
/// `selectDb`): `Err` with the error to answer for what is no integer, an integer past an
/// `int`, or a number that names no database.
pub(super) fn db_arg(ctx: &Ctx<'_>, a: &[u8]) -> Result<u8, &'static [u8]> {
    let n = int_arg(a).ok_or(NOT_INTEGER)?;
    i32::try_from(n).map_err(|_| NOT_INT32)?;
    ctx.shared.databases.index(n).ok_or(OUT_OF_RANGE)
}

/// Redis 7's error for an integer past C's `int` (`getRangeLongFromObjectOrReply`).
const NOT_INT32: &[u8] =
    b"ERR value is out of range, value must between -2147483648 and 2147483647";

/// An argument that is an integer in C's `int` range.
fn int32(a: &[u8]) -> Option<i64> {
    int_arg(a).filter(|n| i32::try_from(*n).is_ok())
}

/// Makes `db` the connection's database, where `CLIENT LIST` shows it.
pub(super) fn set_db(s: &mut Session, db: u8) {
    s.db = db;
    s.pending.db.store(db, Ordering::Relaxed);
}

pub(super) fn select(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    match db_arg(ctx, cmd.get(1).unwrap_or_default()) {
        // Redis Cluster has database 0 only.
        Ok(db) if db != 0 && ctx.shared.cluster.is_some() => {
            write_error(out, b"ERR SELECT is not allowed in cluster mode");
        }
        Ok(db) => {
            set_db(s, db);
            write_simple(out, b"OK");
        }
        Err(e) => write_error(out, e),
    }
}

/// `SWAPDB index1 index2`: every client, those that selected either database included, sees
/// the other's keys from the next command on. O(1): one compare-and-swap of the tenant's map.
pub(super) fn swapdb(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    if ctx.shared.cluster.is_some() {
        return write_error(out, b"ERR SWAPDB is not allowed in cluster mode");
    }
    let (first, second) = (cmd.get(1).unwrap_or_default(), cmd.get(2).unwrap_or_default());
    let Some(first) = int32(first) else { return write_error(out, b"ERR invalid first DB index") };
    let Some(second) = int32(second) else {
        return write_error(out, b"ERR invalid second DB index");
    };
    let databases = &ctx.shared.databases;
    match (databases.index(first), databases.index(second)) {
        (Some(a), Some(b)) => {
            databases.swap(s.tenant, a, b);
            write_simple(out, b"OK");
        }
        _ => write_error(out, OUT_OF_RANGE),
    }
}

/// `MOVE key db`: 1 if the key moved, 0 if it is not in this database or already in the
/// other. Three engine steps, as RENAME's (`keyspace.rs`): copy out, store in the target
/// database only if the key is absent there, then delete the source only if it still holds
/// what was copied.
pub(super) fn move_(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    if ctx.shared.cluster.is_some() {
        return write_error(out, b"ERR MOVE is not allowed in cluster mode");
    }
    let key = cmd.get(1).unwrap_or_default();
    let target = match db_arg(ctx, cmd.get(2).unwrap_or_default()) {
        Ok(db) => db,
        Err(e) => return write_error(out, e),
    };
    let databases = &ctx.shared.databases;
    let (src, dst) = (ctx.engine.db(), databases.physical(s.tenant, target));
    if src == dst {
        return write_error(out, SAME_OBJECT);
    }
    let t = s.tenant;
    let Some((value, flags, expires_at_ms, cas, kind)) =
        ctx.engine.get_any(t, key, |i| (i.value.to_vec(), i.flags, i.expires_at_ms, i.cas, i.kind))
    else {
        return write_integer(out, 0);
    };
    ctx.engine.select(dst);
    let stored = ctx.engine.store(Store {
        tenant: t,
        key,
        value: &value,
        flags,
        expiry: expires_at_ms.map_or(Expiry::Never, Expiry::At),
        condition: Condition::IfAbsent,
        cas: None,
        state: 0,
        kind,
    });
    if let Ok(StoreOutcome::Stored) = stored {
        super::fields::register_copied(ctx, t, key, kind, &value);
    }
    ctx.engine.select(src);
    match stored {
        Ok(StoreOutcome::Stored) => {}
        Ok(_) => return write_integer(out, 0),
        Err(e) => return engine_error(out, e),
    }
    let _ = ctx.engine.update_any(t, key, |cur, _| {
        Ok(match cur {
            Some(c) if c.cas == cas && c.expires_at_ms == expires_at_ms => Update::Delete(()),
            _ => Update::Done(()),
        })
    });
    notify(ctx, t, GENERIC, "move_from", key);
    ctx.engine.select(dst);
    notify(ctx, t, GENERIC, "move_to", key);
    ctx.engine.select(src);
    write_integer(out, 1);
}
