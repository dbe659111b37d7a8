//! memcached text commands, run against the engine; the meta commands are in `meta.rs`.
//!
//! Replies follow memcached 1.6 byte for byte (checked against memcached 1.6.18 and
//! libmemcached's `memccapable`). Values are copied from engine memory straight into the
//! connection's write buffer inside the engine's read callback.

use std::sync::atomic::Ordering;

use fridge_engine::{Condition, EngineError, Expiry, StoreOutcome, TenantId};
use fridge_proto::memcache::{
    self as mc, ArithmeticCommand, Reply, Request, Retrieval, SpaceSplit, Storage, StorageCommand,
};

use crate::counter::Counters;
use crate::keyspace::{GENERIC, STRING};
pub(crate) use crate::memcache_common::expiry;
use crate::memcache_common::{Now, append, counter_error, engine_error};
use crate::notify::changed;
use crate::output::{PIN_MIN, put_value};
use crate::session::{Ctx, KEYS_PER_RUN, READ_GROUP, Session};
use crate::stats;
use crate::watch::WatchEvents;
use crate::watch_events as watch;

/// Drops the stored value of the key of a `set` or `ms` at the head of `buf` that the parser
/// refused as too large, as memcached does (see [`mc::oversize_store_key`]).
pub(crate) fn drop_refused_store(
    buf: &[u8],
    user: Option<TenantId>,
    ctx: &mut Ctx<'_>,
    limits: &mc::Limits,
) {
    let Some((key, base64)) = mc::oversize_store_key(buf, limits) else { return };
    let mut decoded = [0u8; 512];
    let key = match base64 {
        false => key,
        true => match mc::base64_decode(key, &mut decoded) {
            Some(n) => &decoded[..n],
            None => return,
        },
    };
    let t = user.unwrap_or_else(|| ctx.tenants.route(key));
    if ctx.engine.delete(t, key) {
        changed(ctx, t, GENERIC, "del", key);
    }
}

/// Runs one parsed request, appending its reply (if any) to `out`.
pub(crate) fn execute(req: Request<'_>, out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    // A Redis EXEC on any worker holds every gate (`crate::transaction`).
    let shared = ctx.shared;
    let _gate = shared.gates.enter(ctx.worker);
    execute_in_gate(req, out, s, ctx);
}

/// [`execute`] with the worker's transaction gate held already (the binary protocol's
/// `stat`, which runs the text protocol's).
pub(crate) fn execute_in_gate(
    req: Request<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
) {
    // A logged-in connection uses its tenant; one that has not logged in (where that is
    // allowed) uses `default`, or the tenant its first key's prefix routes to.
    let t = match s.user {
        Some(t) => t,
        // A resumed multiget keeps the tenant its first run was routed to.
        None if s.resume.resuming => s.tenant,
        None => ctx.tenants.route(first_key(&req)),
    };
    s.tenant = t;
    let now = &Now::new(ctx.shared);
    match req {
        Request::Retrieval(r) => retrieval(r, out, s, t, ctx, now),
        Request::Storage(st) => storage(st, out, t, ctx, now),
        Request::Delete { key, noreply } => {
            let deleted = watch::delete(ctx, t, key, "delete");
            if deleted {
                changed(ctx, t, GENERIC, "del", key);
            }
            stats::inc(if deleted { &ctx.stats.delete_hits } else { &ctx.stats.delete_misses });
            if !noreply {
                mc::write_reply(out, if deleted { Reply::Deleted } else { Reply::NotFound });
            }
        }
        Request::Arithmetic { command, key, delta, noreply } => {
            let decr = command == ArithmeticCommand::Decr;
            match ctx.engine.incr_u64(t, key, delta, decr) {
                Ok(Some(n)) => {
                    changed(ctx, t, STRING, if decr { "decrby" } else { "incrby" }, key);
                    stats::inc(if decr { &ctx.stats.decr_hits } else { &ctx.stats.incr_hits });
                    if !noreply {
                        mc::write_number(out, n);
                    }
                }
                Ok(None) => {
                    let misses = if decr { &ctx.stats.decr_misses } else { &ctx.stats.incr_misses };
                    stats::inc(misses);
                    if !noreply {
                        mc::write_reply(out, Reply::NotFound);
                    }
                }
                Err(e) => {
                    if !noreply {
                        counter_error(out, e);
                    }
                }
            }
        }
        Request::Touch { key, exptime, noreply } => {
            stats::inc(&ctx.stats.cmd_touch);
            let found = matches!(ctx.engine.touch(t, key, now.expiry_ms(exptime)), Ok(Some(_)));
            if found {
                stats::inc(&ctx.stats.touch_hits);
                changed(ctx, t, GENERIC, "expire", key);
            }
            if !noreply {
                mc::write_reply(out, if found { Reply::Touched } else { Reply::NotFound });
            }
        }
        Request::FlushAll { delay, noreply } => {
            stats::inc(&ctx.stats.cmd_flush);
            let delay_ms = match delay.map(|d| now.expiry(d)) {
                Some(Expiry::At(at)) => at.saturating_sub(now.get()),
                _ => 0,
            };
            ctx.engine.flush(t, delay_ms);
            if delay_ms == 0 {
                crate::notify::flushed(ctx, t, s.id);
            }
            if !noreply {
                mc::write_reply(out, Reply::Ok);
            }
        }
        Request::Stats { args } => crate::mc_admin::stats(args, out, s, ctx),
        Request::LruCrawler { args } => crate::mc_admin::lru_crawler(args, out, s, ctx),
        Request::Version => mc::write_version(out, crate::shared::MEMCACHED_VERSION.as_bytes()),
        Request::Verbosity { level, noreply } => {
            // memcached's ceiling is 2; the server's log is the admin's to change.
            if s.is_admin(ctx.tenants) {
                ctx.shared.verbose.store(level.min(2) as u8, Ordering::Relaxed);
                log::set_max_level(crate::logging::level_of_verbosity(level.min(2) as u8));
                if !noreply {
                    mc::write_reply(out, Reply::Ok);
                }
            } else {
                mc::write_client_error(out, b"verbosity is for the admin");
            }
        }
        Request::Quit => s.closing = true,
        Request::CacheMemlimit { megabytes, noreply } => {
            crate::memlimit::cache_memlimit(megabytes, noreply, out, s, ctx);
        }
        Request::Watch { events } => watch::start(events, out, s, ctx),
        Request::Shutdown { args } => {
            if !ctx.shared.config.enable_shutdown || !s.is_admin(ctx.tenants) {
                out.extend_from_slice(b"ERROR: shutdown not enabled\r\n");
            } else if args.is_empty() || args == b"graceful" {
                // fridge's only shutdown is graceful: in-flight requests finish.
                ctx.shared.request_shutdown();
                s.closing = true;
            } else {
                mc::write_client_error(out, b"invalid shutdown mode");
            }
        }
        Request::Meta(m) => crate::meta::execute(m, out, s.user, t, ctx, now),
    }
}

/// The key a request's tenant is routed by (empty for keyless requests: `default`).
fn first_key<'a>(req: &Request<'a>) -> &'a [u8] {
    match req {
        Request::Storage(st) => st.key,
        Request::Retrieval(r) => r.keys.iter().next().unwrap_or_default(),
        Request::Delete { key, .. }
        | Request::Arithmetic { key, .. }
        | Request::Touch { key, .. } => key,
        Request::Meta(m) => m.key,
        _ => b"",
    }
}

/// `get`, `gets`, `gat`, `gats`: answered in steps (see [`Session::suspend`]) once the reply
/// reaches the output budget or [`KEYS_PER_RUN`] keys were looked up, so a multiget of any
/// size never sits whole in memory or holds the worker. A resumed run is given only the keys
/// not yet answered; the suspension records the bytes of the key list that were.
fn retrieval(
    r: Retrieval<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: &Now<'_>,
) {
    let raw = r.keys.as_bytes();
    let mut keys = r.keys.iter();
    let mut looked_up = 0;
    let suspend = |s: &mut Session, rest: &SpaceSplit<'_>| {
        s.resume.retrieval = Some((r.command, r.exptime));
        s.suspend(s.resume_at() + raw.len() - rest.remainder().len());
    };
    let with_cas = r.command.returns_cas();
    let watched = ctx.shared.watch.wants(WatchEvents::FETCHERS);
    let several = keys.clone().nth(1).is_some();
    if several && !with_cas && !r.command.touches() && !watched {
        // Plain `get` of several keys: batched engine calls, whose lookups overlap their
        // memory misses (one key takes the single lookup below: setting up the batch's
        // stages costs more than it overlaps). Once the reply reaches the budget, the group's
        // later keys are left for the next run.
        let limit = ctx.out_limit;
        loop {
            let group_start = keys.clone();
            let (mut asked, mut hits, mut stop) = (0, 0u64, None);
            let group = keys.by_ref().take(READ_GROUP).inspect(|_| asked += 1);
            ctx.engine.get_each(t, group, |j, key, item| {
                if stop.is_some() || out.len() >= limit {
                    stop = stop.or(Some(j));
                    return;
                }
                hits += 1;
                let get_hits = &ctx.stats.classes.get_hits;
                stats::count_class(get_hits, key.len(), item.flags, item.value.len());
                mc::write_value_header(out, key, item.flags, item.value.len(), None);
                mc::write_data(out, item.value);
            });
            if let Some(j) = stop {
                keys = group_start;
                keys.by_ref().take(j).for_each(drop);
            }
            let answered = stop.unwrap_or(asked);
            stats::tenant_lookups(ctx.stats, t, hits, answered as u64 - hits);
            looked_up += answered;
            if keys.clone().next().is_none() {
                return mc::write_reply(out, Reply::End);
            }
            if out.len() >= limit || looked_up >= KEYS_PER_RUN {
                return suspend(s, &keys);
            }
        }
    }
    while let Some(key) = keys.next() {
        let mut size = None;
        let pins = &mut s.out_pins;
        // A large value is written from its segment where the read pinned it
        // (`crate::output`); `gat`'s read gives no pin.
        let mut write = |item: fridge_engine::Item<'_>, pin| {
            size = Some(item.value.len());
            let get_hits = &ctx.stats.classes.get_hits;
            stats::count_class(get_hits, key.len(), item.flags, item.value.len());
            mc::write_value_header(
                out,
                key,
                item.flags,
                item.value.len(),
                with_cas.then_some(item.cas),
            );
            put_value(out, pins, item.value, pin);
            out.extend_from_slice(b"\r\n");
        };
        let hit = if r.command.touches() {
            stats::inc(&ctx.stats.cmd_touch);
            let at = now.expiry_ms(r.exptime);
            // The touch keeps the CAS, so `gats` reports the one its read sees.
            let touched = ctx.engine.get_and_touch(t, key, at, |item| write(item, None));
            let hit = matches!(touched, Ok(Some(())));
            if hit {
                stats::inc(&ctx.stats.touch_hits);
                changed(ctx, t, GENERIC, "expire", key);
            }
            hit
        } else {
            let read = ctx.engine.get_pinned(t, key, fridge_engine::Kind::STRING, PIN_MIN, write);
            matches!(read, Ok(Some(())))
        };
        stats::tenant_lookups(ctx.stats, t, u64::from(hit), u64::from(!hit));
        if watched {
            watch::fetched(ctx, t, key, size.filter(|_| hit));
        }
        looked_up += 1;
        let more = keys.clone().next().is_some();
        let unsent = out.len() + s.out_pins.bytes();
        if more && (unsent >= ctx.out_limit || looked_up >= KEYS_PER_RUN) {
            return suspend(s, &keys);
        }
    }
    mc::write_reply(out, Reply::End);
}

fn storage(st: Storage<'_>, out: &mut Vec<u8>, t: TenantId, ctx: &mut Ctx<'_>, now: &Now<'_>) {
    stats::inc(&ctx.stats.cmd_set);
    let count = |c| stats::count_class(c, st.key.len(), st.flags, st.data.len());
    count(&ctx.stats.classes.cmd_set);
    let result = match st.command {
        StorageCommand::Append | StorageCommand::Prepend => {
            let prepend = st.command == StorageCommand::Prepend;
            append(ctx, t, st.key, st.data, prepend)
        }
        command => {
            let condition = match command {
                StorageCommand::Add => Condition::IfAbsent,
                StorageCommand::Replace => Condition::IfPresent,
                StorageCommand::Cas => Condition::IfCas(st.cas),
                _ => Condition::Always,
            };
            ctx.engine.store(fridge_engine::Store {
                kind: fridge_engine::Kind::STRING,
                tenant: t,
                key: st.key,
                value: st.data,
                flags: st.flags,
                expiry: now.expiry(st.exptime),
                condition,
                cas: None,
                state: 0,
            })
        }
    };
    if let Ok(StoreOutcome::Stored) = result {
        let append = matches!(st.command, StorageCommand::Append | StorageCommand::Prepend);
        changed(ctx, t, STRING, if append { "append" } else { "set" }, st.key);
    }
    if ctx.shared.watch.wants(WatchEvents::MUTATIONS) {
        let (cmd, ttl) = (st.command.name(), watch::ttl(now.expiry(st.exptime), now.get()));
        watch::stored(ctx, t, st.key, &result, cmd, ttl, st.data.len());
    }
    if st.command == StorageCommand::Cas {
        stats::inc(match result {
            Ok(StoreOutcome::Stored) => &ctx.stats.cas_hits,
            Ok(StoreOutcome::Exists) => &ctx.stats.cas_badval,
            _ => &ctx.stats.cas_misses,
        });
        match result {
            Ok(StoreOutcome::Stored) => count(&ctx.stats.classes.cas_hits),
            Ok(StoreOutcome::Exists) => count(&ctx.stats.classes.cas_badval),
            _ => {}
        }
    }
    let reply = match result {
        Ok(StoreOutcome::Stored) => Reply::Stored,
        Ok(StoreOutcome::NotStored) => Reply::NotStored,
        Ok(StoreOutcome::Exists) => Reply::Exists,
        Ok(StoreOutcome::NotFound) => Reply::NotFound,
        Err(e) => {
            // memcached drops the old value when a set fails, so no stale data survives.
            if e == EngineError::TooLarge
                && st.command == StorageCommand::Set
                && ctx.engine.delete(t, st.key)
            {
                changed(ctx, t, GENERIC, "del", st.key);
            }
            if !st.noreply {
                engine_error(out, e);
            }
            return;
        }
    };
    if !st.noreply {
        mc::write_reply(out, reply);
    }
}
