//! memcached meta commands (`mg` `ms` `md` `ma` `mn` `me`), run against the engine, with
//! memcached 1.6's stale-while-revalidate machinery (`doc/protocol.txt` "Meta Get", "Meta
//! Set", "Meta Delete", "Meta Arithmetic"; `doc/new_lru.txt`).
//!
//! Each item carries three state bits (`fridge_engine::item::STATE_*`): *stale* (`md I`, or an
//! `ms I` whose CAS was older than the item's), *win token sent* and *fetched*, plus its last
//! access in seconds. The anti-stampede protocol:
//!
//! ```text
//!  mg k N30 (miss) ──► create an empty item (TTL 30), token sent ──► reply W (you recache)
//!  mg k R30 (TTL left < 30, no token yet) ──► claim the token ─────► W; later readers Z
//!  md k I [T30] ──► stale, new CAS, token cleared ──► next mg: X W, then X Z, …
//!  ms k S C<cas> I ──► CAS matches: store; CAS older than the item's: store as stale (X)
//! ```
//!
//! The token is claimed by an atomic bit-set on the published item ([`StateCell::set`]), and
//! a vivifying miss creates its item with the token already sent through an update that
//! publishes only if the key is still absent, so of any number of concurrent clients exactly
//! one is told `W`. A TTL change (`mg T`, `touch`) rewrites the item and carries its state
//! bits over as they are when the copy is published; a reader that found the old copy just
//! before and claims the token on it just after is the one case where a second client can
//! still win (a window of one lookup).
//!
//! Differences from memcached 1.6.18, which predates them: `E` (explicit CAS) and `md x`
//! (drop the value, keep the item) are implemented as later 1.6 releases document them, where
//! 1.6.18 answers `CLIENT_ERROR invalid flag`.

use fridge_engine::item::{
    STATE_FETCHED, STATE_KEY_BINARY, STATE_STALE, STATE_WIN_SENT, StateCell,
};
use fridge_engine::{Condition, Current, Item, StoreOutcome, TenantId, Update};
use fridge_proto::memcache::{self as mc, MetaCommand, MetaFlags, MetaRequest, MetaStatus};
use fridge_proto::number::{MAX_DIGITS, u64_digits, write_i64};

use crate::counter::Counters;
use crate::keyspace::{GENERIC, STRING};
use crate::memcache_common::{Now, append, counter_error, engine_error, ttl_secs};
use crate::notify::changed;
use crate::session::Ctx;
use crate::stats;
use crate::watch::WatchEvents;
use crate::watch_events as watch;

/// The returned flags every meta command echoes: `O`, `k` (with ` b` for base64 keys).
fn echo_flag(out: &mut Vec<u8>, letter: u8, token: &[u8], m: &MetaRequest<'_>) -> bool {
    match letter {
        b'O' => mc::write_meta_flag(out, b'O', token),
        b'k' => {
            mc::write_meta_flag(out, b'k', m.key);
            if m.flags.base64_key() {
                mc::write_meta_flag(out, b'b', b"");
            }
        }
        _ => return false,
    }
    true
}

fn write_echoes(out: &mut Vec<u8>, m: &MetaRequest<'_>) {
    for f in m.flags.tokens() {
        echo_flag(out, f.letter, f.token, m);
    }
}

/// A meta reply with no value: the status, echoed flags, end of line.
fn meta_status(out: &mut Vec<u8>, status: MetaStatus, m: &MetaRequest<'_>) {
    mc::write_meta_header(out, status, 0);
    write_echoes(out, m);
    mc::write_meta_end(out);
}

/// Runs one meta request for tenant `t` (`user`: the connection's login, if any).
pub(crate) fn execute(
    m: MetaRequest<'_>,
    out: &mut Vec<u8>,
    user: Option<TenantId>,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: &Now<'_>,
) {
    if m.flags.base64_key() && m.command != MetaCommand::Noop {
        execute_base64(m, out, user, t, ctx, now);
    } else {
        execute_key(&m, m.key, out, t, ctx, now);
    }
}

/// [`execute`] for a base64 key (`b`), decoded first; kept apart so that other requests do
/// not pay for zeroing the buffer it decodes into.
#[inline(never)]
fn execute_base64(
    m: MetaRequest<'_>,
    out: &mut Vec<u8>,
    user: Option<TenantId>,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: &Now<'_>,
) {
    // The parser checked that a `b` key is valid base64 within the key limit.
    let mut decoded = [0u8; 512];
    let mut heap_key = Vec::new();
    let len = mc::base64_decoded_len(m.key).unwrap_or(0);
    let dst = if len <= decoded.len() {
        &mut decoded[..]
    } else {
        heap_key.resize(len, 0);
        &mut heap_key[..]
    };
    let Some(n) = mc::base64_decode(m.key, dst) else {
        mc::write_client_error(out, b"error decoding key");
        return;
    };
    let key = &dst[..n];
    // A base64 key is routed by its decoded bytes.
    let t = if user.is_none() && key != m.key { ctx.tenants.route(key) } else { t };
    execute_key(&m, key, out, t, ctx, now);
}

/// [`execute`] with the key as stored (decoded where it came in base64).
fn execute_key(
    m: &MetaRequest<'_>,
    key: &[u8],
    out: &mut Vec<u8>,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: &Now<'_>,
) {
    match m.command {
        MetaCommand::Noop => mc::write_meta_noop(out),
        MetaCommand::Get => meta_get(m, key, out, t, ctx, now),
        MetaCommand::Set => meta_set(m, key, out, t, ctx, now),
        MetaCommand::Delete => meta_delete(m, key, out, t, ctx, now),
        MetaCommand::Arithmetic => meta_arithmetic(m, key, out, t, ctx, now),
        MetaCommand::Debug => {
            let found = ctx.engine.peek(t, key, |item| {
                out.extend_from_slice(b"ME ");
                out.extend_from_slice(m.key);
                out.extend_from_slice(b" exp=");
                write_i64(out, ttl_secs(item.expires_at_ms, now.get()));
                out.extend_from_slice(b" la=");
                write_i64(out, i64::from(item.idle_s));
                out.extend_from_slice(b" cas=");
                write_i64(out, i64::try_from(item.cas).unwrap_or(i64::MAX));
                let fetched = item.state & STATE_FETCHED != 0;
                out.extend_from_slice(if fetched { b" fetch=yes" } else { b" fetch=no" });
                // memcached's item size: a 48-byte header, the CAS, the key and its NUL, the
                // value and its CRLF, and the client flags when not zero.
                out.extend_from_slice(b" cls=1 size=");
                let flags_len = if item.flags != 0 { 4 } else { 0 };
                write_i64(out, (48 + 8 + key.len() + 1 + item.value.len() + 2 + flags_len) as i64);
                out.extend_from_slice(b"\r\n");
            });
            if found.is_none() {
                mc::write_meta_header(out, MetaStatus::Miss, 0);
                mc::write_meta_end(out);
            }
        }
    }
}

/// How a hit stands in the stale-while-revalidate protocol, decided once per reply.
#[derive(Debug, Clone, Copy)]
struct Revalidation {
    /// `Z`: a client was already handed the win token.
    token_sent: bool,
    /// `X`: the item is stale.
    stale: bool,
    /// `W`: this client won the token.
    won: bool,
}

impl Revalidation {
    /// Decides for `item`, as memcached's `mg` does: a vivified item (`created`) is won; a
    /// stale item, or one whose TTL left was under the `R` token (`recache`), is won by the
    /// first reader to claim the token (an atomic bit-set, so exactly one).
    fn of(item: &Item<'_>, recache: bool, created: bool) -> Revalidation {
        let stale = item.state & STATE_STALE != 0;
        if created {
            return Revalidation { token_sent: false, stale, won: true };
        }
        let mut token_sent = item.state & STATE_WIN_SENT != 0;
        let mut won = false;
        if !token_sent && (stale || recache) {
            match item.state_cell.map(|cell: StateCell<'_>| cell.set(STATE_WIN_SENT)) {
                Some(before) if before & STATE_WIN_SENT == 0 => won = true,
                _ => token_sent = true,
            }
        }
        Revalidation { token_sent, stale, won }
    }

    fn write(self, out: &mut Vec<u8>) {
        if self.token_sent {
            mc::write_meta_flag(out, b'Z', b"");
        }
        if self.stale {
            mc::write_meta_flag(out, b'X', b"");
        }
        if self.won {
            mc::write_meta_flag(out, b'W', b"");
        }
    }
}

/// The state bit recording that the request's key came base64-encoded.
fn key_state(f: MetaFlags<'_>) -> u8 {
    if f.base64_key() { STATE_KEY_BINARY } else { 0 }
}

/// Writes `mg`'s reply for a hit on `key` (decoded).
fn write_hit(
    out: &mut Vec<u8>,
    m: &MetaRequest<'_>,
    key: &[u8],
    item: &Item<'_>,
    new_expiry: Option<Option<u64>>,
    created: bool,
    now: &Now<'_>,
) {
    let f = m.flags;
    let with_value = f.has(b'v');
    if with_value {
        mc::write_meta_header(out, MetaStatus::Value, item.value.len());
    } else {
        mc::write_meta_header(out, MetaStatus::Header, 0);
    }
    // Flags act in order, as memcached's: `t` reports the expiry as the `T` and `N` before it
    // left it, and `R` compares against that same expiry.
    // (A vivified item starts with none: memcached creates it without one and `N` sets it.)
    let mut expiry = if created { None } else { item.expires_at_ms };
    let mut recache = false;
    for flag in f.tokens() {
        match flag.letter {
            b'T' => expiry = new_expiry.unwrap_or(expiry),
            // A vivified item's expiry is the `N` TTL it was created with.
            b'N' if created => expiry = item.expires_at_ms,
            b'R' => {
                let r = f.recache_ttl().map_or(0, i64::from);
                recache = !created && expiry.is_some() && ttl_secs(expiry, now.get()) < r;
            }
            b'c' => mc::write_meta_flag_u64(out, b'c', item.cas),
            b'f' => mc::write_meta_flag_u64(out, b'f', u64::from(item.flags)),
            b'h' => {
                let fetched = item.state & STATE_FETCHED != 0;
                mc::write_meta_flag(out, b'h', if fetched { b"1" } else { b"0" });
            }
            b'l' => mc::write_meta_flag_u64(out, b'l', u64::from(item.idle_s)),
            b's' => mc::write_meta_flag_u64(out, b's', item.value.len() as u64),
            b't' => mc::write_meta_flag_i64(out, b't', ttl_secs(expiry, now.get())),
            // The key as the item was stored: base64 (with ` b`) only if it was sent so.
            b'k' if item.state & STATE_KEY_BINARY != 0 => {
                out.extend_from_slice(b" k");
                mc::base64_encode(key, out);
                mc::write_meta_flag(out, b'b', b"");
            }
            b'k' => mc::write_meta_flag(out, b'k', key),
            letter => {
                echo_flag(out, letter, flag.token, m);
            }
        }
    }
    Revalidation::of(item, recache, created).write(out);
    mc::write_meta_end(out);
    if with_value {
        mc::write_data(out, item.value);
    }
}

/// A read that counts as an access of the item, or (`peek`) one that does not.
fn read(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    peek: bool,
    f: impl FnOnce(Item<'_>),
) -> Option<()> {
    if peek { ctx.engine.peek(t, key, f) } else { ctx.engine.get(t, key, f) }
}

fn meta_get(
    m: &MetaRequest<'_>,
    key: &[u8],
    out: &mut Vec<u8>,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: &Now<'_>,
) {
    let f = m.flags;
    // With `T`, the item is returned as found and then touched; `t` reports the new TTL.
    let new_expiry = f.ttl().map(|ttl| now.expiry_ms(ttl));
    // `u`: the read does not count as an access (no fetched bit, no last-access time).
    let peek = f.has(b'u');
    let (mut size, mut flags) = (0, 0);
    let mut hit = read(ctx, t, key, peek, |item| {
        (size, flags) = (item.value.len(), item.flags);
        write_hit(out, m, key, &item, new_expiry, false, now);
    });
    let mut vivified = false;
    if hit.is_none() {
        if let Some(ttl) = f.vivify_ttl() {
            // Vivify: create an empty item whose token is already sent, only if the key is
            // still missing; whoever created it has won.
            let created = ctx.engine.update(t, key, |current, _| {
                Ok(match current {
                    Some(_) => Update::Done(false),
                    None => Update::WriteWith {
                        flags: 0,
                        expires_at_ms: now.expiry_ms(ttl),
                        cas: f.new_cas(),
                        state: STATE_WIN_SENT,
                        result: true,
                    },
                })
            });
            match created {
                Ok(created) => {
                    vivified = created;
                    if created {
                        changed(ctx, t, STRING, "set", key);
                    }
                    hit = read(ctx, t, key, peek, |item| {
                        (size, flags) = (item.value.len(), item.flags);
                        write_hit(out, m, key, &item, new_expiry, created, now);
                    });
                }
                Err(e) => return engine_error(out, e),
            }
        }
    }
    stats::tenant_lookups(ctx.stats, t, u64::from(hit.is_some()), u64::from(hit.is_none()));
    if ctx.shared.watch.wants(WatchEvents::FETCHERS) {
        watch::fetched(ctx, t, key, hit.map(|()| size));
    }
    if hit.is_some() {
        stats::count_class(&ctx.stats.classes.get_hits, key.len(), flags, size);
    }
    // On a vivified item the later of `T` and `N` sets the TTL, as in memcached's flag loop.
    let n_last = vivified
        && f.tokens().filter(|t| matches!(t.letter, b'T' | b'N')).last().map(|t| t.letter)
            == Some(b'N');
    if let (Some(()), Some(at), false) = (hit, new_expiry, n_last) {
        stats::inc(&ctx.stats.cmd_touch);
        if matches!(ctx.engine.set_expiry(t, key, at), Ok(Some(_))) {
            stats::inc(&ctx.stats.touch_hits);
            changed(ctx, t, GENERIC, "expire", key);
        }
    }
    if hit.is_none() && !f.quiet() {
        meta_status(out, MetaStatus::Miss, m);
    }
}

/// `ms` with `I` and a compare CAS (memcached's invalidation store): a matching CAS stores as
/// usual; a CAS older than the item's stores the value anyway, marked stale, keeping the
/// item's TTL and its win token; a newer one is refused.
fn store_invalidating(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    m: &MetaRequest<'_>,
    compare: u64,
    now: &Now<'_>,
) -> Result<StoreOutcome, fridge_engine::EngineError> {
    let f = m.flags;
    ctx.engine.update(t, key, |current: Option<Current<'_>>, buf| {
        let Some(c) = current else { return Ok(Update::Done(StoreOutcome::NotFound)) };
        let (expires_at_ms, state) = if c.cas == compare {
            (now.expiry_ms(f.ttl().unwrap_or(0)), key_state(f))
        } else if compare < c.cas {
            (c.expires_at_ms, STATE_STALE | c.state & STATE_WIN_SENT | key_state(f))
        } else {
            return Ok(Update::Done(StoreOutcome::Exists));
        };
        buf.extend_from_slice(m.data);
        Ok(Update::WriteWith {
            flags: f.client_flags().unwrap_or(0),
            expires_at_ms,
            cas: f.new_cas(),
            state,
            result: StoreOutcome::Stored,
        })
    })
}

/// `ms` in append or prepend mode with a compare CAS: memcached's simplified check, `EX`
/// unless the item's CAS is the one given (`NS` when there is no item).
fn append_if_cas(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    data: &[u8],
    prepend: bool,
    compare: u64,
) -> Result<StoreOutcome, fridge_engine::EngineError> {
    let r = ctx.engine.update(t, key, |current, buf| {
        let Some(c) = current else { return Ok(Update::Done(StoreOutcome::NotStored)) };
        if c.cas != compare {
            return Ok(Update::Done(StoreOutcome::Exists));
        }
        let (first, second) = if prepend { (data, c.value) } else { (c.value, data) };
        buf.extend_from_slice(first);
        buf.extend_from_slice(second);
        Ok(Update::Write {
            flags: c.flags,
            expires_at_ms: c.expires_at_ms,
            result: StoreOutcome::Stored,
        })
    });
    // As for `append`: a result over the size limit is not stored.
    match r {
        Err(fridge_engine::EngineError::TooLarge) => Ok(StoreOutcome::NotStored),
        r => r,
    }
}

fn meta_set(
    m: &MetaRequest<'_>,
    key: &[u8],
    out: &mut Vec<u8>,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: &Now<'_>,
) {
    stats::inc(&ctx.stats.cmd_set);
    let f = m.flags;
    let mode = f.mode().unwrap_or(b'S').to_ascii_uppercase();
    let result = match (mode, f.compare_cas()) {
        (b'A' | b'P', Some(compare)) => append_if_cas(ctx, t, key, m.data, mode == b'P', compare),
        (b'A' | b'P', None) => append(ctx, t, key, m.data, mode == b'P'),
        (b'S' | b'R', Some(compare)) if f.has(b'I') => {
            store_invalidating(ctx, t, key, m, compare, now)
        }
        _ => {
            let condition = match (f.compare_cas(), mode) {
                (Some(cas), b'S' | b'R') => Condition::IfCas(cas),
                (_, b'E') => Condition::IfAbsent,
                (_, b'R') => Condition::IfPresent,
                _ => Condition::Always,
            };
            ctx.engine.store(fridge_engine::Store {
                kind: fridge_engine::Kind::STRING,
                tenant: t,
                key,
                value: m.data,
                flags: f.client_flags().unwrap_or(0),
                expiry: now.expiry(f.ttl().unwrap_or(0)),
                condition,
                cas: f.new_cas(),
                state: key_state(f),
            })
        }
    };
    if let Ok(StoreOutcome::Stored) = result {
        changed(ctx, t, STRING, if matches!(mode, b'A' | b'P') { "append" } else { "set" }, key);
    }
    if ctx.shared.watch.wants(WatchEvents::MUTATIONS) {
        let cmd = watch::meta_store_name(mode, f.compare_cas().is_some());
        let ttl = watch::ttl(now.expiry(f.ttl().unwrap_or(0)), now.get());
        watch::stored(ctx, t, key, &result, cmd, ttl, m.data.len());
    }
    let count = |c| stats::count_class(c, key.len(), f.client_flags().unwrap_or(0), m.data.len());
    count(&ctx.stats.classes.cmd_set);
    if f.compare_cas().is_some() {
        match result {
            Ok(StoreOutcome::Stored) => count(&ctx.stats.classes.cas_hits),
            Ok(StoreOutcome::Exists) => count(&ctx.stats.classes.cas_badval),
            _ => {}
        }
    }
    let status = match result {
        Ok(StoreOutcome::Stored) => MetaStatus::Header,
        Ok(StoreOutcome::NotStored) => MetaStatus::NotStored,
        Ok(StoreOutcome::Exists) => MetaStatus::Exists,
        Ok(StoreOutcome::NotFound) => MetaStatus::NotFound,
        Err(e) => return engine_error(out, e),
    };
    if status == MetaStatus::Header && f.quiet() {
        return;
    }
    // Appends report the CAS they wrote too: every write goes through this handle. A store
    // that did not happen reports `c0`, as memcached does.
    let cas = if status == MetaStatus::Header { ctx.engine.last_cas() } else { 0 };
    mc::write_meta_header(out, status, 0);
    for flag in f.tokens() {
        match flag.letter {
            b'c' => mc::write_meta_flag_u64(out, b'c', cas),
            letter => {
                echo_flag(out, letter, flag.token, m);
            }
        }
    }
    mc::write_meta_end(out);
}

/// What `md` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deleted {
    Done,
    Missing,
    CasMismatch,
}

fn meta_delete(
    m: &MetaRequest<'_>,
    key: &[u8],
    out: &mut Vec<u8>,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: &Now<'_>,
) {
    let f = m.flags;
    let (invalidate, drop_value) = (f.has(b'I'), f.has(b'x'));
    let new_ttl = f.ttl().map(|ttl| now.expiry_ms(ttl));
    // One update, so the CAS check and the change are atomic.
    let mut removed = None;
    let result = ctx.engine.update_any(t, key, |current, _| {
        let Some(c) = current else { return Ok(Update::Done(Deleted::Missing)) };
        if f.compare_cas().is_some_and(|cas| cas != c.cas) {
            return Ok(Update::Done(Deleted::CasMismatch));
        }
        let expires_at_ms =
            if invalidate { new_ttl.unwrap_or(c.expires_at_ms) } else { c.expires_at_ms };
        // Invalidation marks the item stale and clears the token, so the next reader wins.
        let state = if invalidate { (c.state | STATE_STALE) & !STATE_WIN_SENT } else { c.state };
        Ok(match (invalidate, drop_value) {
            (false, false) => {
                removed = Some(c.value.len());
                Update::Delete(Deleted::Done)
            }
            (_, true) => {
                // The buffer is left empty: the value is dropped.
                Update::WriteWith {
                    flags: c.flags,
                    expires_at_ms,
                    cas: f.new_cas(),
                    state,
                    result: Deleted::Done,
                }
            }
            (true, false) => {
                Update::Rewrite { expires_at_ms, cas: f.new_cas(), state, result: Deleted::Done }
            }
        })
    });
    let status = match result {
        Ok(Deleted::Done) => {
            stats::inc(&ctx.stats.delete_hits);
            // Deleted, or (`I`, `x`) marked stale or emptied: a change either way.
            changed(ctx, t, GENERIC, if removed.is_some() { "del" } else { "set" }, key);
            if let Some(size) = removed.filter(|_| ctx.shared.watch.wants(WatchEvents::DELETIONS)) {
                watch::deleted(ctx, t, key, "md", size);
            }
            if f.quiet() {
                return;
            }
            MetaStatus::Header
        }
        Ok(Deleted::Missing) => {
            stats::inc(&ctx.stats.delete_misses);
            MetaStatus::NotFound
        }
        Ok(Deleted::CasMismatch) => {
            stats::inc(&ctx.stats.delete_misses);
            MetaStatus::Exists
        }
        Err(e) => return engine_error(out, e),
    };
    meta_status(out, status, m);
}

fn meta_arithmetic(
    m: &MetaRequest<'_>,
    key: &[u8],
    out: &mut Vec<u8>,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: &Now<'_>,
) {
    let f = m.flags;
    let decr = matches!(f.mode(), Some(b'D' | b'd' | b'-'));
    let delta = f.delta().unwrap_or(1);
    if let Some(cas) = f.compare_cas() {
        match ctx.engine.peek(t, key, |item| item.cas) {
            None => return meta_status(out, MetaStatus::NotFound, m),
            Some(now_cas) if now_cas != cas => return meta_status(out, MetaStatus::Exists, m),
            Some(_) => {}
        }
    }
    let (mut value, mut created) = (None, false);
    for _ in 0..3 {
        match ctx.engine.incr_u64_with_cas(t, key, delta, decr, f.new_cas()) {
            Ok(Some(n)) => {
                stats::inc(if decr { &ctx.stats.decr_hits } else { &ctx.stats.incr_hits });
                changed(ctx, t, STRING, if decr { "decrby" } else { "incrby" }, key);
                value = Some(n);
                break;
            }
            Ok(None) => {
                let Some(ttl) = f.vivify_ttl() else { break };
                let initial = f.initial().unwrap_or(0);
                let mut buf = [0u8; MAX_DIGITS];
                let digits = u64_digits(initial, &mut buf);
                let stored = ctx.engine.store(fridge_engine::Store {
                    kind: fridge_engine::Kind::STRING,
                    tenant: t,
                    key,
                    value: digits,
                    flags: 0,
                    expiry: now.expiry(ttl),
                    condition: Condition::IfAbsent,
                    cas: f.new_cas(),
                    state: 0,
                });
                match stored {
                    Ok(StoreOutcome::Stored) => {
                        changed(ctx, t, STRING, "set", key);
                        (value, created) = (Some(initial), true);
                        break;
                    }
                    Ok(_) => {} // someone created it meanwhile: increment that
                    Err(e) => return engine_error(out, e),
                }
            }
            Err(e) => return counter_error(out, e),
        }
    }
    let Some(n) = value else {
        stats::inc(if decr { &ctx.stats.decr_misses } else { &ctx.stats.incr_misses });
        return meta_status(out, MetaStatus::NotFound, m);
    };
    if let Some(ttl) = f.ttl() {
        if let Ok(Some(_)) = ctx.engine.set_expiry(t, key, now.expiry_ms(ttl)) {
            changed(ctx, t, GENERIC, "expire", key);
        }
    }
    // memcached's `q` hides the nominal reply of an increment, not of a vivifying one.
    if f.quiet() && !created {
        return;
    }
    let needs_item = f.has(b't') || f.has(b'c');
    let (cas, expires) = if needs_item {
        ctx.engine.peek(t, key, |item| (item.cas, item.expires_at_ms)).unwrap_or((0, None))
    } else {
        (0, None)
    };
    let mut buf = [0u8; MAX_DIGITS];
    let digits = u64_digits(n, &mut buf);
    let with_value = f.has(b'v');
    if with_value {
        mc::write_meta_header(out, MetaStatus::Value, digits.len());
    } else {
        mc::write_meta_header(out, MetaStatus::Header, 0);
    }
    for flag in f.tokens() {
        match flag.letter {
            b'c' => mc::write_meta_flag_u64(out, b'c', cas),
            b't' => mc::write_meta_flag_i64(out, b't', ttl_secs(expires, now.get())),
            letter => {
                echo_flag(out, letter, flag.token, m);
            }
        }
    }
    mc::write_meta_end(out);
    if with_value {
        mc::write_data(out, digits);
    }
}
