//! memcached text and meta commands, run against the engine.
//!
//! Replies follow memcached 1.6 byte for byte (checked against memcached 1.6.18 and
//! libmemcached's `memccapable`). Values are copied from engine memory straight into the
//! connection's write buffer inside the engine's read callback.
//!
//! Known differences: the meta "stale/win" machinery (`mg N`/`R`, `md I`, `ms I` and the `W`
//! `X` `Z` reply flags) is not implemented — `md I` deletes, `N`/`R` are accepted and ignored;
//! `h` and `l` always report 0 (the engine keeps no per-item fetch bit or access time in
//! seconds).

use fridge_engine::{Condition, EngineError, Expiry, StoreOutcome, TenantId};
use fridge_proto::memcache::{
    self as mc, ArithmeticCommand, MetaCommand, MetaRequest, MetaStatus, Reply, Request, Retrieval,
    SpaceSplit, Storage, StorageCommand,
};
use fridge_proto::number::{MAX_DIGITS, u64_digits, write_i64};

use crate::counter::{CounterError, Counters};
use crate::session::{Ctx, KEYS_PER_RUN, READ_GROUP, Session};
use crate::stats;
use crate::watch::WatchEvents;
use crate::watch_events as watch;

/// memcached treats exptimes above 30 days as absolute Unix times.
const RELATIVE_EXPTIME_MAX: i64 = 60 * 60 * 24 * 30;

/// Converts a memcached exptime to an absolute expiry: 0 never, negative already expired,
/// up to 30 days relative seconds, beyond that an absolute Unix time. `now_ms` is the coarse
/// clock; relative deadlines count from the precise one ([`crate::shared::precise_now_ms`]), so an
/// item is never gone before its time.
pub(crate) fn expiry(exptime: i32, now_ms: u64) -> Expiry {
    let e = i64::from(exptime);
    if e == 0 {
        Expiry::Never
    } else if e < 0 {
        Expiry::At(now_ms.saturating_sub(1).max(1))
    } else if e > RELATIVE_EXPTIME_MAX {
        // An absolute Unix time; one in the past expires at once.
        Expiry::At(e as u64 * 1000)
    } else {
        Expiry::At(crate::shared::precise_now_ms(now_ms) + e as u64 * 1000)
    }
}

fn expiry_ms(exptime: i32, now_ms: u64) -> Option<u64> {
    match expiry(exptime, now_ms) {
        Expiry::At(at) => Some(at),
        _ => None,
    }
}

fn engine_error(out: &mut Vec<u8>, e: EngineError) {
    match e {
        EngineError::TooLarge => mc::write_server_error(out, b"object too large for cache"),
        EngineError::KeyTooLong => mc::write_client_error(out, b"bad command line format"),
        EngineError::OutOfMemory | EngineError::TooManyWorkers => {
            mc::write_server_error(out, b"out of memory storing object");
        }
    }
}

fn counter_error(out: &mut Vec<u8>, e: CounterError) {
    match e {
        CounterError::Engine(e) => engine_error(out, e),
        // memcached's counters fail only one way; the Redis reasons cannot arise here.
        _ => mc::write_client_error(out, b"cannot increment or decrement non-numeric value"),
    }
}

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
    ctx.engine.delete(t, key);
}

/// Runs one parsed request, appending its reply (if any) to `out`.
pub(crate) fn execute(req: Request<'_>, out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    // A logged-in connection uses its tenant; one that has not logged in (where that is
    // allowed) uses `default`, or the tenant its first key's prefix routes to.
    let t = match s.user {
        Some(t) => t,
        // A resumed multiget keeps the tenant its first run was routed to.
        None if s.resume.resuming => s.tenant,
        None => ctx.tenants.route(first_key(&req)),
    };
    s.tenant = t;
    let now = ctx.shared.now_ms();
    match req {
        Request::Retrieval(r) => retrieval(r, out, s, t, ctx, now),
        Request::Storage(st) => storage(st, out, t, ctx, now),
        Request::Delete { key, noreply } => {
            let deleted = watch::delete(ctx, t, key, "delete");
            stats::inc(if deleted { &ctx.stats.delete_hits } else { &ctx.stats.delete_misses });
            if !noreply {
                mc::write_reply(out, if deleted { Reply::Deleted } else { Reply::NotFound });
            }
        }
        Request::Arithmetic { command, key, delta, noreply } => {
            let decr = command == ArithmeticCommand::Decr;
            match ctx.engine.incr_u64(t, key, delta, decr) {
                Ok(Some(n)) => {
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
            let found =
                matches!(ctx.engine.set_expiry(t, key, expiry_ms(exptime, now)), Ok(Some(_)));
            if found {
                stats::inc(&ctx.stats.touch_hits);
            }
            if !noreply {
                mc::write_reply(out, if found { Reply::Touched } else { Reply::NotFound });
            }
        }
        Request::FlushAll { delay, noreply } => {
            stats::inc(&ctx.stats.cmd_flush);
            let delay_ms = match delay.map(|d| expiry(d, now)) {
                Some(Expiry::At(at)) => at.saturating_sub(now),
                _ => 0,
            };
            ctx.engine.flush(t, delay_ms);
            if !noreply {
                mc::write_reply(out, Reply::Ok);
            }
        }
        Request::Stats { args } => crate::mc_admin::stats(args, out, s, ctx),
        Request::LruCrawler { args } => crate::mc_admin::lru_crawler(args, out, s, ctx),
        Request::Version => mc::write_version(out, crate::shared::MEMCACHED_VERSION.as_bytes()),
        Request::Verbosity { noreply, .. } => {
            if !noreply {
                mc::write_reply(out, Reply::Ok);
            }
        }
        Request::Quit => s.closing = true,
        Request::CacheMemlimit { megabytes, noreply } => {
            crate::memlimit::cache_memlimit(megabytes, noreply, out, s, ctx);
        }
        Request::Watch { events } => watch::start(events, out, s, ctx),
        Request::Meta(m) => meta(m, out, s.user, t, ctx, now),
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
    now: u64,
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
    if !with_cas && !r.command.touches() && !watched {
        // Plain `get`: batched engine calls, whose lookups overlap their memory misses. Once
        // the reply reaches the budget, the group's later keys are left for the next run.
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
        let write = |item: fridge_engine::Item<'_>| {
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
            mc::write_data(out, item.value);
        };
        let hit = if r.command.touches() {
            stats::inc(&ctx.stats.cmd_touch);
            let at = expiry_ms(r.exptime, now);
            let hit = if with_cas {
                matches!(ctx.engine.set_expiry(t, key, at), Ok(Some(_)))
                    && ctx.engine.gets(t, key, write).is_some()
            } else {
                matches!(ctx.engine.get_and_touch(t, key, at, write), Ok(Some(())))
            };
            if hit {
                stats::inc(&ctx.stats.touch_hits);
            }
            hit
        } else if with_cas {
            ctx.engine.gets(t, key, write).is_some()
        } else {
            ctx.engine.get(t, key, write).is_some()
        };
        stats::tenant_lookups(ctx.stats, t, u64::from(hit), u64::from(!hit));
        if watched {
            watch::fetched(ctx, t, key, size.filter(|_| hit));
        }
        looked_up += 1;
        let more = keys.clone().next().is_some();
        if more && (out.len() >= ctx.out_limit || looked_up >= KEYS_PER_RUN) {
            return suspend(s, &keys);
        }
    }
    mc::write_reply(out, Reply::End);
}

fn storage(st: Storage<'_>, out: &mut Vec<u8>, t: TenantId, ctx: &mut Ctx<'_>, now: u64) {
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
                tenant: t,
                key: st.key,
                value: st.data,
                flags: st.flags,
                expiry: expiry(st.exptime, now),
                condition,
            })
        }
    };
    if ctx.shared.watch.wants(WatchEvents::MUTATIONS) {
        let (cmd, ttl) = (st.command.name(), watch::ttl(expiry(st.exptime, now), now));
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
            if e == EngineError::TooLarge && st.command == StorageCommand::Set {
                ctx.engine.delete(t, st.key);
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

/// `append`/`prepend` (text, and meta `MA`/`MP`). A result over the item size limit is not
/// stored and the old value stays: memcached 1.6.18 answers `NOT_STORED` (`NS`) there, not an
/// error. The binary protocol's APPEND/PREPEND use it too.
pub(crate) fn append(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    data: &[u8],
    prepend: bool,
) -> Result<StoreOutcome, EngineError> {
    match ctx.engine.append(t, key, data, prepend, false) {
        Ok(Some(_)) => Ok(StoreOutcome::Stored),
        Ok(None) | Err(EngineError::TooLarge) => Ok(StoreOutcome::NotStored),
        Err(e) => Err(e),
    }
}

/// Seconds left before `expires_at_ms`, memcached style: -1 for never. Counted from the
/// precise clock deadlines are set from (the coarse `now` may lag it and add a second).
fn ttl_secs(expires_at_ms: Option<u64>, now: u64) -> i64 {
    match expires_at_ms {
        None => -1,
        Some(at) => {
            let left = at.saturating_sub(crate::shared::precise_now_ms(now));
            i64::try_from(left.div_ceil(1000)).unwrap_or(i64::MAX)
        }
    }
}

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

fn meta(
    m: MetaRequest<'_>,
    out: &mut Vec<u8>,
    user: Option<TenantId>,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: u64,
) {
    // The parser checked that a `b` key is valid base64 within the key limit.
    let mut decoded = [0u8; 512];
    let mut heap_key = Vec::new();
    let key: &[u8] = if m.flags.base64_key() && m.command != MetaCommand::Noop {
        let len = mc::base64_decoded_len(m.key).unwrap_or(0);
        let dst = if len <= decoded.len() {
            &mut decoded[..]
        } else {
            heap_key.resize(len, 0);
            &mut heap_key[..]
        };
        match mc::base64_decode(m.key, dst) {
            Some(n) => &dst[..n],
            None => {
                mc::write_client_error(out, b"error decoding key");
                return;
            }
        }
    } else {
        m.key
    };
    // A base64 key is routed by its decoded bytes.
    let t = if user.is_none() && key != m.key { ctx.tenants.route(key) } else { t };
    let f = m.flags;
    match m.command {
        MetaCommand::Noop => mc::write_meta_noop(out),
        MetaCommand::Get => meta_get(&m, key, out, t, ctx, now),
        MetaCommand::Set => meta_set(&m, key, out, t, ctx, now),
        MetaCommand::Delete => {
            if let Some(cas) = f.compare_cas() {
                match ctx.engine.gets(t, key, |item| item.cas) {
                    None => return meta_status(out, MetaStatus::NotFound, &m),
                    Some(now_cas) if now_cas != cas => {
                        return meta_status(out, MetaStatus::Exists, &m);
                    }
                    Some(_) => {}
                }
            }
            if watch::delete(ctx, t, key, "md") {
                stats::inc(&ctx.stats.delete_hits);
                if !f.quiet() {
                    meta_status(out, MetaStatus::Header, &m);
                }
            } else {
                stats::inc(&ctx.stats.delete_misses);
                meta_status(out, MetaStatus::NotFound, &m);
            }
        }
        MetaCommand::Arithmetic => meta_arithmetic(&m, key, out, t, ctx, now),
        MetaCommand::Debug => {
            let found = ctx.engine.gets(t, key, |item| {
                out.extend_from_slice(b"ME ");
                out.extend_from_slice(m.key);
                out.extend_from_slice(b" exp=");
                write_i64(out, ttl_secs(item.expires_at_ms, now));
                out.extend_from_slice(b" la=0 cas=");
                write_i64(out, i64::try_from(item.cas).unwrap_or(i64::MAX));
                out.extend_from_slice(b" fetch=no cls=1 size=");
                write_i64(out, item.value.len() as i64 + m.key.len() as i64 + 48);
                out.extend_from_slice(b"\r\n");
            });
            if found.is_none() {
                mc::write_meta_header(out, MetaStatus::Miss, 0);
                mc::write_meta_end(out);
            }
        }
    }
}

fn meta_get(
    m: &MetaRequest<'_>,
    key: &[u8],
    out: &mut Vec<u8>,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: u64,
) {
    let f = m.flags;
    // With `T`, the item is returned as found and then touched; `t` reports the new TTL.
    let new_expiry = f.ttl().map(|ttl| expiry_ms(ttl, now));
    let mut size = 0;
    let write = |item: fridge_engine::Item<'_>| {
        size = item.value.len();
        let with_value = f.has(b'v');
        if with_value {
            mc::write_meta_header(out, MetaStatus::Value, item.value.len());
        } else {
            mc::write_meta_header(out, MetaStatus::Header, 0);
        }
        for flag in f.tokens() {
            match flag.letter {
                b'c' => mc::write_meta_flag_u64(out, b'c', item.cas),
                b'f' => mc::write_meta_flag_u64(out, b'f', u64::from(item.flags)),
                b'h' => mc::write_meta_flag(out, b'h', b"0"),
                b'l' => mc::write_meta_flag(out, b'l', b"0"),
                b's' => mc::write_meta_flag_u64(out, b's', item.value.len() as u64),
                b't' => {
                    let at = new_expiry.unwrap_or(item.expires_at_ms);
                    mc::write_meta_flag_i64(out, b't', ttl_secs(at, now));
                }
                letter => {
                    echo_flag(out, letter, flag.token, m);
                }
            }
        }
        mc::write_meta_end(out);
        if with_value {
            mc::write_data(out, item.value);
        }
    };
    let hit =
        if f.has(b'c') { ctx.engine.gets(t, key, write) } else { ctx.engine.get(t, key, write) };
    stats::tenant_lookups(ctx.stats, t, u64::from(hit.is_some()), u64::from(hit.is_none()));
    if ctx.shared.watch.wants(WatchEvents::FETCHERS) {
        watch::fetched(ctx, t, key, hit.map(|()| size));
    }
    if let (Some(()), Some(at)) = (hit, new_expiry) {
        stats::inc(&ctx.stats.cmd_touch);
        if matches!(ctx.engine.set_expiry(t, key, at), Ok(Some(_))) {
            stats::inc(&ctx.stats.touch_hits);
        }
    }
    if hit.is_none() && !f.quiet() {
        meta_status(out, MetaStatus::Miss, m);
    }
}

fn meta_set(
    m: &MetaRequest<'_>,
    key: &[u8],
    out: &mut Vec<u8>,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: u64,
) {
    stats::inc(&ctx.stats.cmd_set);
    let f = m.flags;
    let mode = f.mode().unwrap_or(b'S').to_ascii_uppercase();
    let result = match mode {
        b'A' | b'P' => append(ctx, t, key, m.data, mode == b'P'),
        _ => {
            let condition = match (f.compare_cas(), mode) {
                (Some(cas), _) => Condition::IfCas(cas),
                (None, b'E') => Condition::IfAbsent,
                (None, b'R') => Condition::IfPresent,
                _ => Condition::Always,
            };
            ctx.engine.store(fridge_engine::Store {
                tenant: t,
                key,
                value: m.data,
                flags: f.client_flags().unwrap_or(0),
                expiry: expiry(f.ttl().unwrap_or(0), now),
                condition,
            })
        }
    };
    if ctx.shared.watch.wants(WatchEvents::MUTATIONS) {
        let cmd = watch::meta_store_name(mode, f.compare_cas().is_some());
        let ttl = watch::ttl(expiry(f.ttl().unwrap_or(0), now), now);
        watch::stored(ctx, t, key, &result, cmd, ttl, m.data.len());
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
    let cas = if status == MetaStatus::Header && f.has(b'c') {
        ctx.engine.gets(t, key, |item| item.cas).unwrap_or(0)
    } else {
        0
    };
    mc::write_meta_header(out, status, 0);
    for flag in f.tokens() {
        match flag.letter {
            b'c' if status == MetaStatus::Header => mc::write_meta_flag_u64(out, b'c', cas),
            letter => {
                echo_flag(out, letter, flag.token, m);
            }
        }
    }
    mc::write_meta_end(out);
}

fn meta_arithmetic(
    m: &MetaRequest<'_>,
    key: &[u8],
    out: &mut Vec<u8>,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: u64,
) {
    let f = m.flags;
    let decr = matches!(f.mode(), Some(b'D' | b'd' | b'-'));
    let delta = f.delta().unwrap_or(1);
    if let Some(cas) = f.compare_cas() {
        match ctx.engine.gets(t, key, |item| item.cas) {
            None => return meta_status(out, MetaStatus::NotFound, m),
            Some(now_cas) if now_cas != cas => return meta_status(out, MetaStatus::Exists, m),
            Some(_) => {}
        }
    }
    let mut value = None;
    for _ in 0..3 {
        match ctx.engine.incr_u64(t, key, delta, decr) {
            Ok(Some(n)) => {
                stats::inc(&ctx.stats.incr_hits);
                value = Some(n);
                break;
            }
            Ok(None) => {
                let Some(ttl) = f.vivify_ttl() else { break };
                let initial = f.initial().unwrap_or(0);
                let mut buf = [0u8; MAX_DIGITS];
                let digits = u64_digits(initial, &mut buf);
                let stored = ctx.engine.store(fridge_engine::Store {
                    tenant: t,
                    key,
                    value: digits,
                    flags: 0,
                    expiry: expiry(ttl, now),
                    condition: Condition::IfAbsent,
                });
                match stored {
                    Ok(StoreOutcome::Stored) => {
                        value = Some(initial);
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
        stats::inc(&ctx.stats.incr_misses);
        return meta_status(out, MetaStatus::NotFound, m);
    };
    if let Some(ttl) = f.ttl() {
        let _ = ctx.engine.set_expiry(t, key, expiry_ms(ttl, now));
    }
    if f.quiet() {
        return;
    }
    let needs_item = f.has(b't') || f.has(b'c');
    let (cas, expires) = if needs_item {
        ctx.engine.gets(t, key, |item| (item.cas, item.expires_at_ms)).unwrap_or((0, None))
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
            b't' => mc::write_meta_flag_i64(out, b't', ttl_secs(expires, now)),
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
