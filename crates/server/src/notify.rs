//! Keyspace notifications (Redis's `src/notify.c`,
//! <https://redis.io/docs/manual/keyspace-notifications/>): after a command changes a key,
//! the server publishes the event to `__keyspace@<db>__:<key>` (message: the event's name)
//! and to `__keyevent@<db>__:<event>` (message: the key), in the key's tenant, for the classes
//! `notify-keyspace-events` enables.
//!
//! The setting is server-wide (`CONFIG SET`, admin only), the channels are per tenant. With
//! it off — the default — an event costs one relaxed load. Items the engine reaps (`expired`)
//! or evicts (`evicted`) come from the engine's key-event queue (see
//! [`fridge_engine::KeyEvent`]), drained by the workers; the engine fills that queue only
//! while `KeyspaceEvents::wants_engine_events` says someone listens.

use std::io::Write as _;
use std::sync::atomic::Ordering;

use fridge_engine::{KeyEventKind, TenantId};

use crate::keyspace::{EVICTED, EXPIRED, KEYEVENT, KEYSPACE};
use crate::session::Ctx;
use crate::shared::Shared;

/// Applies a `notify-keyspace-events` value (`CONFIG SET`), and turns the engine's key-event
/// queue on while expiries or evictions are published.
pub(crate) fn configure(shared: &Shared, value: &[u8]) -> Result<(), ()> {
    shared.notify.set(value)?;
    update_engine_events(shared);
    Ok(())
}

/// Whether the keys the engine drops matter: for `expired`/`evicted` notifications, or for
/// client-side caching's invalidations.
fn wants_engine_events(shared: &Shared) -> bool {
    shared.notify.wants_engine_events() || shared.tracking.active()
}

/// Turns the engine's key-event queue on or off as [`wants_engine_events`] says (after the
/// setting changes, or a connection turns tracking on or off).
pub(crate) fn update_engine_events(shared: &Shared) {
    shared.engine.set_key_events(wants_engine_events(shared));
}

/// Key events a worker publishes per turn: the rest wait for its next turn (at most the
/// worker's housekeeping period, 250 ms, on an idle server).
const ENGINE_EVENTS_PER_TURN: usize = 1024;

/// Publishes the keys the engine expired or evicted (`expired`, `evicted`). Called by every
/// worker once per turn; one load when notifications of them are off.
pub(crate) fn drain_engine_events(shared: &Shared, worker: usize) {
    if !wants_engine_events(shared) {
        return;
    }
    let wake = |w: usize| {
        if w != worker {
            shared.wake(w);
        }
    };
    for _ in 0..ENGINE_EVENTS_PER_TURN {
        let Some(e) = shared.engine.pop_key_event() else { break };
        let (class, event) = match e.kind {
            KeyEventKind::Expired => (EXPIRED, "expired"),
            KeyEventKind::Evicted => (EVICTED, "evicted"),
        };
        let db = shared.databases.logical(e.tenant, e.db);
        key_event(shared, worker, e.tenant, db, class, event, &e.key);
        shared.tracking.invalidate(e.tenant, &e.key, 0, &mut Vec::new(), &shared.pubsub, wake);
    }
}

/// A command changed `key` of `tenant`, whatever its protocol (Redis, memcached text, meta or
/// binary): publishes the keyspace notification `event` (the Redis command's name for the
/// change: `set`, `append`, `incrby`, `expire`, `del`…) and sends client-side caching's
/// invalidations (`crate::tracking`). One relaxed load each when no one listens.
#[inline]
pub(crate) fn changed(ctx: &mut Ctx<'_>, tenant: TenantId, class: u32, event: &str, key: &[u8]) {
    let (shared, me) = (ctx.shared, ctx.worker);
    if shared.notify.wants(class) {
        // The key is in the database the engine handle has selected (0 for memcached).
        let db = shared.databases.logical(tenant, ctx.engine.db());
        key_event(shared, me, tenant, db, class, event, key);
    }
    shared.tracking.invalidate(tenant, key, ctx.client, ctx.pushes, &shared.pubsub, |w| {
        if w != me {
            shared.wake(w);
        }
    });
}

/// Every key of `tenant` went (FLUSHALL, memcached `flush_all`): client-side caching's
/// invalidation of everything the tenant's clients track. `by` is the connection that
/// flushed (`NOLOOP`).
pub(crate) fn flushed(ctx: &mut Ctx<'_>, tenant: TenantId, by: u64) {
    let (shared, me) = (ctx.shared, ctx.worker);
    shared.tracking.flush(tenant, by, ctx.pushes, &shared.pubsub, |w| {
        if w != me {
            shared.wake(w);
        }
    });
}

/// Publishes `event` on `key` of `tenant`'s (logical) database `db` if its class is enabled.
/// `worker` is the calling worker (not woken: it delivers at the end of its turn).
pub(crate) fn key_event(
    shared: &Shared,
    worker: usize,
    tenant: TenantId,
    db: u8,
    class: u32,
    event: &str,
    key: &[u8],
) {
    let events = &shared.notify;
    if !events.wants(class) {
        return;
    }
    let flags = events.flags.load(Ordering::Relaxed);
    let wake = |w: usize| {
        if w != worker {
            shared.wake(w);
        }
    };
    let mut channel = Vec::with_capacity(16 + key.len().max(event.len()));
    let kind = crate::pubsub::Kind::Channel;
    if flags & KEYSPACE != 0 {
        let _ = write!(channel, "__keyspace@{db}__:");
        channel.extend_from_slice(key);
        shared.pubsub.publish(tenant, kind, &channel, event.as_bytes(), wake);
    }
    if flags & KEYEVENT != 0 {
        channel.clear();
        let _ = write!(channel, "__keyevent@{db}__:");
        channel.extend_from_slice(event.as_bytes());
        shared.pubsub.publish(tenant, kind, &channel, key, wake);
    }
}
