//! What memcached's commands tell the log watchers (`watch.rs`): the `watch` command itself,
//! and the `item_get`, `item_store` and `deleted` lines of the requests the dispatcher
//! (`memcache.rs`) runs, in memcached's formats (its `logger.c`). Callers test
//! [`Hub::wants`](crate::watch::Hub::wants) first, so nothing here runs when nobody watches.
//! Also the slow ring's entry for both protocols ([`slow`]: `SLOWLOG` and `watch slow`),
//! called only for a request past `slowlog-log-slower-than`.

use std::io::Write as _;

use fridge_engine::{EngineError, Expiry, StoreOutcome, TenantId, Update};
use fridge_proto::memcache::WatchEvents;

use crate::session::{Ctx, Session};
use crate::watch::{self, Watcher};

/// `watch …`: registers the connection as a watcher of `events` and answers `OK`, or
/// memcached's `WATCHER_TOO_MANY`. The worker sees `Session::watcher` and from then on only
/// writes the watcher's lines (and reads only to notice the client leave).
pub(crate) fn start(events: WatchEvents, out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let worker = watch::lane();
    let waker = shared.wakers.lock().unwrap_or_else(|e| e.into_inner()).get(worker).cloned();
    let Some(waker) = waker else {
        out.extend_from_slice(b"WATCHER_FAILED failed to add log watcher\r\n");
        return;
    };
    let tenant = (!s.is_admin(ctx.tenants)).then_some(s.tenant);
    let watcher = Watcher::new(s.id, events, tenant, worker, waker, shared.workers.len());
    watcher.start_slow_at(shared.slowlog.next_id());
    match shared.watch.add(watcher) {
        Some(w) => {
            out.extend_from_slice(b"OK\r\n");
            s.watcher = Some(w);
        }
        None => out.extend_from_slice(b"WATCHER_TOO_MANY log watcher limit reached\r\n"),
    }
}

/// `type=item_get`, for a key a client read (`found`, with its value's size) or missed
/// (`not_found`).
pub(crate) fn fetched(ctx: &Ctx<'_>, t: TenantId, key: &[u8], size: Option<usize>) {
    ctx.shared.watch.emit(WatchEvents::FETCHERS, Some(t), |line| {
        line.extend_from_slice(b"type=item_get key=");
        watch::uri_encode(line, key);
        let status = if size.is_some() { "found" } else { "not_found" };
        let _ = write!(line, " status={status} cfd={} size={}", ctx.fd, size.unwrap_or(0));
    });
}

/// `type=item_store`: `cmd` is memcached's name for the store (`set`, `add`, `replace`,
/// `append`, `prepend`, `cas`), `ttl` the seconds it was given to live (0: forever), `size`
/// the bytes sent.
pub(crate) fn stored(
    ctx: &Ctx<'_>,
    t: TenantId,
    key: &[u8],
    result: &Result<StoreOutcome, EngineError>,
    cmd: &[u8],
    ttl: u32,
    size: usize,
) {
    let status = match result {
        Ok(StoreOutcome::Stored) => "stored",
        Ok(StoreOutcome::NotStored) => "not_stored",
        Ok(StoreOutcome::Exists) => "exists",
        Ok(StoreOutcome::NotFound) => "not_found",
        Err(EngineError::TooLarge) => "too_large",
        Err(_) => "no_memory",
    };
    ctx.shared.watch.emit(WatchEvents::MUTATIONS, Some(t), |line| {
        line.extend_from_slice(b"type=item_store key=");
        watch::uri_encode(line, key);
        line.extend_from_slice(b" status=");
        line.extend_from_slice(status.as_bytes());
        line.extend_from_slice(b" cmd=");
        line.extend_from_slice(cmd);
        let _ = write!(line, " ttl={ttl} cfd={} size={size}", ctx.fd);
    });
}

/// memcached's name for what an `ms` in mode `mode` (upper case) does.
pub(crate) fn meta_store_name(mode: u8, compare_cas: bool) -> &'static [u8] {
    match mode {
        _ if compare_cas => b"cas",
        b'E' => b"add",
        b'A' => b"append",
        b'P' => b"prepend",
        b'R' => b"replace",
        _ => b"set",
    }
}

/// `item_store`'s `ttl`: seconds from `now_ms` to the expiry, 0 for none (memcached's
/// unsigned difference, so an expiry in the past wraps as it does there).
pub(crate) fn ttl(expiry: Expiry, now_ms: u64) -> u32 {
    match expiry {
        Expiry::At(at) => ((at as i64 - now_ms as i64).div_euclid(1000)) as u32,
        _ => 0,
    }
}

/// Deletes `key` (`delete`, or `md` as `cmd`), with a `deleted` line if someone watches
/// deletions: the delete then learns the value's size as it removes it. Returns whether a
/// live item was deleted.
pub(crate) fn delete(ctx: &mut Ctx<'_>, t: TenantId, key: &[u8], cmd: &str) -> bool {
    if !ctx.shared.watch.wants(WatchEvents::DELETIONS) {
        return ctx.engine.delete(t, key);
    }
    let size = ctx.engine.update_any(t, key, |current, _| {
        Ok(match current {
            Some(item) => Update::Delete(Some(item.value.len())),
            None => Update::Done(None),
        })
    });
    let Ok(Some(size)) = size else { return false };
    deleted(ctx, t, key, cmd, size);
    true
}

/// `type=deleted`: `cmd` is `delete` or `md`.
pub(crate) fn deleted(ctx: &Ctx<'_>, t: TenantId, key: &[u8], cmd: &str, size: usize) {
    ctx.shared.watch.emit(WatchEvents::DELETIONS, Some(t), |line| {
        line.extend_from_slice(b"type=deleted key=");
        watch::uri_encode(line, key);
        let _ = write!(line, " cmd={cmd} size={size}");
    });
}

/// Logs a request that ran for `micros` in the slow ring (`crate::slowlog`: `SLOWLOG` and
/// `watch slow`), with its tenant and its client's address and name.
#[cold]
pub(crate) fn slow<'a>(
    args: impl ExactSizeIterator<Item = &'a [u8]>,
    micros: u64,
    tenant: TenantId,
    ctx: &Ctx<'_>,
) {
    let (addr, name) = {
        let clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
        clients
            .get(&ctx.client)
            .map_or_else(Default::default, |e| (e.peer.to_string(), e.name.clone()))
    };
    let client = crate::slowlog::Client { tenant, addr: &addr, name: &name };
    ctx.shared.watch.log_slow(&ctx.shared.slowlog, args, micros, client);
}

/// The words of a memcached request's command line (its data, if any, left out), as the slow
/// ring keeps a request's arguments.
pub(crate) fn command_words(request: &[u8]) -> impl ExactSizeIterator<Item = &[u8]> {
    let line = request.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let words: Vec<&[u8]> = line.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
    words.into_iter()
}
