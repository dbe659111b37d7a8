//! Key commands that move or look at whole keys: RENAME, RENAMENX, COPY, RANDOMKEY,
//! EXPIRETIME, PEXPIRETIME and WAIT.
//!
//! RENAME is three engine steps (see `docs/protocol.md`, "RENAME and concurrent clients"):
//! copy the source out, publish it under the new name with the source's TTL, then delete the
//! source only if it still holds what was copied. A concurrent reader may see both names
//! holding the value between the second and third steps; at no moment does neither hold it.

use std::hash::{BuildHasher, Hasher};

use fridge_engine::{Condition, Expiry, Kind, Store, StoreOutcome, Update};
use fridge_proto::resp::{
    Command, write_bulk, write_error, write_integer, write_null, write_simple,
};

use super::{NOT_INTEGER, SYNTAX, Spec, engine_error, int_arg};
use crate::session::{Ctx, Session};

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.get(i).unwrap_or_default()
}

/// A copy of one item: value, flags, expiry, and its CAS (which names this very item).
struct Copied {
    value: Vec<u8>,
    flags: u32,
    expires_at_ms: Option<u64>,
    cas: u64,
    kind: Kind,
}

fn copy_out(ctx: &mut Ctx<'_>, s: &Session, key: &[u8]) -> Option<Copied> {
    ctx.engine.get_any(s.tenant, key, |i| Copied {
        value: i.value.to_vec(),
        flags: i.flags,
        expires_at_ms: i.expires_at_ms,
        cas: i.cas,
        kind: i.kind,
    })
}

/// Stores `c` under `key` with its TTL, if `condition` holds.
fn store_copy(
    ctx: &mut Ctx<'_>,
    s: &Session,
    key: &[u8],
    c: &Copied,
    condition: Condition,
) -> Result<StoreOutcome, fridge_engine::EngineError> {
    if key.len() > ctx.shared.config.max_resp_key_len {
        return Err(fridge_engine::EngineError::KeyTooLong);
    }
    let stored = ctx.engine.store(Store {
        tenant: s.tenant,
        key,
        value: &c.value,
        flags: c.flags,
        expiry: c.expires_at_ms.map_or(Expiry::Never, Expiry::At),
        condition,
        cas: None,
        state: 0,
        kind: c.kind,
    });
    if let Ok(StoreOutcome::Stored) = stored {
        super::fields::register_copied(ctx, s.tenant, key, c.kind, &c.value);
    }
    stored
}

/// `RENAME` and `RENAMENX`.
pub(super) fn rename(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let nx = c.name == "renamenx";
    let (src, dst) = (arg(cmd, 1), arg(cmd, 2));
    let Some(copied) = copy_out(ctx, s, src) else {
        return write_error(out, b"ERR no such key");
    };
    let done =
        |out: &mut Vec<u8>| if nx { write_integer(out, 1) } else { write_simple(out, b"OK") };
    if src == dst {
        return if nx { write_integer(out, 0) } else { write_simple(out, b"OK") };
    }
    let condition = if nx { Condition::IfAbsent } else { Condition::Always };
    match store_copy(ctx, s, dst, &copied, condition) {
        Ok(StoreOutcome::Stored) => {}
        Ok(_) => return write_integer(out, 0),
        Err(e) => return engine_error(out, e),
    }
    // Delete the source only if it still holds what was copied: a write that came in
    // between is ordered after the rename and is kept.
    let _ = ctx.engine.update_any(s.tenant, src, |cur, _| {
        Ok(match cur {
            // The same item (its CAS) with the same TTL (a TTL change keeps the CAS).
            Some(c) if c.cas == copied.cas && c.expires_at_ms == copied.expires_at_ms => {
                Update::Delete(())
            }
            _ => Update::Done(()),
        })
    });
    done(out);
}

/// `COPY source destination [DB n] [REPLACE]`.
pub(super) fn copy(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let mut replace = false;
    let (src_db, mut dst_db) = (ctx.engine.db(), ctx.engine.db());
    let mut j = 3;
    while j < cmd.len() {
        let o = arg(cmd, j);
        if o.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else if o.eq_ignore_ascii_case(b"db") && j + 1 < cmd.len() {
            match super::databases::db_arg(ctx, arg(cmd, j + 1)) {
                Ok(db) => dst_db = ctx.shared.databases.physical(s.tenant, db),
                Err(e) => return write_error(out, e),
            }
            j += 1;
        } else {
            return write_error(out, SYNTAX);
        }
        j += 1;
    }
    let (src, dst) = (arg(cmd, 1), arg(cmd, 2));
    if src == dst && src_db == dst_db {
        return write_error(out, super::databases::SAME_OBJECT);
    }
    let Some(copied) = copy_out(ctx, s, src) else { return write_integer(out, 0) };
    let condition = if replace { Condition::Always } else { Condition::IfAbsent };
    ctx.engine.select(dst_db);
    let stored = store_copy(ctx, s, dst, &copied, condition);
    if matches!(stored, Ok(StoreOutcome::Stored)) {
        super::notify(ctx, s.tenant, crate::keyspace::GENERIC, "copy_to", dst);
    }
    ctx.engine.select(src_db);
    match stored {
        Ok(StoreOutcome::Stored) => write_integer(out, 1),
        Ok(_) => write_integer(out, 0),
        Err(e) => engine_error(out, e),
    }
}

/// Index buckets RANDOMKEY visits at most before answering nil.
const RANDOMKEY_BUCKETS: usize = 1 << 16;

/// `RANDOMKEY`: a pass over the index from a random cursor to the first live key of the
/// tenant. Not uniform (a key after a run of empty buckets is likelier), as Redis's is not
/// either (it picks a random bucket, then a random key in its chain).
pub(super) fn randomkey(
    _: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let t = s.tenant;
    if ctx.shared.engine.db_stats(t)[usize::from(ctx.engine.db())].keys == 0 {
        return write_null(out, s.version);
    }
    let mut cursor = std::collections::hash_map::RandomState::new().build_hasher().finish();
    ctx.keys.clear();
    let mut left = RANDOMKEY_BUCKETS;
    let mut wrapped = false;
    while left > 0 {
        let step = left.min(1024);
        cursor = ctx.engine.scan_bounded(t, cursor, 1, step, ctx.keys);
        left -= step;
        if !ctx.keys.is_empty() {
            break;
        }
        if cursor == 0 {
            if wrapped {
                break;
            }
            wrapped = true;
        }
    }
    match ctx.keys.first() {
        Some(k) => write_bulk(out, k),
        None => write_null(out, s.version),
    }
    ctx.keys.clear();
}

/// `EXPIRETIME` and `PEXPIRETIME`: the absolute deadline, -1 without one, -2 for no key.
pub(super) fn expiretime(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    c: &Spec,
) {
    let exp = ctx.engine.get_any(s.tenant, arg(cmd, 1), |i| i.expires_at_ms);
    let reply = match exp {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) if c.name == "pexpiretime" => at as i64,
        Some(Some(at)) => ((at + 500) / 1000) as i64,
    };
    write_integer(out, reply);
}

/// `WAIT numreplicas timeout`: fridge has no replicas, so it answers 0 at once (Redis blocks
/// until the timeout when asked for more replicas than it has).
pub(super) fn wait(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    _: &mut Session,
    _: &mut Ctx<'_>,
    _: &Spec,
) {
    match int_arg(arg(cmd, 2)) {
        None => return write_error(out, b"ERR timeout is not an integer or out of range"),
        Some(t) if t < 0 => return write_error(out, b"ERR timeout is negative"),
        Some(_) => {}
    }
    if int_arg(arg(cmd, 1)).is_none() {
        return write_error(out, NOT_INTEGER);
    }
    write_integer(out, 0);
}
