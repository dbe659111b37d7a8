//! Client-side caching: the tracking table and the invalidations (Redis's `src/tracking.c`,
//! <https://redis.io/docs/manual/client-side-caching/>).
//!
//! A connection with `CLIENT TRACKING ON` is told when a key it may have cached changes:
//!
//! - **Default mode**: the keys it reads are remembered in the tracking table (key → the
//!   ids of the connections that read it); a change to a key sends each of them one
//!   invalidation and forgets the key (a connection reads it again to be told again).
//!   `OPTIN` remembers only reads after `CLIENT CACHING YES`, `OPTOUT` all but those after
//!   `CLIENT CACHING NO`.
//! - **Broadcast mode** (`BCAST`, `PREFIX`): nothing is remembered; a change to any key
//!   starting with one of its prefixes (any key, without one) is sent to it.
//!
//! A change is a write by a Redis command, a key the engine expires or evicts (its key-event
//! queue), or a flush (an invalidation with a null key list to every tracking connection of
//! the tenant). `NOLOOP` skips the connection's own changes. Invalidations go to the
//! connection itself as RESP3 `invalidate` pushes, or to the `REDIRECT` connection: a RESP3
//! push, or for a RESP2 connection subscribed to `__redis__:invalidate` a pub/sub message.
//! They travel like pub/sub messages (`crate::pubsub`'s mailboxes: the writer never waits).
//! Tables are per tenant: a key's invalidations reach only its tenant's connections.
//!
//! **Memory**: the table holds at most `tracking-table-max-keys` keys (default 1,000,000, as
//! Redis; `CONFIG SET` changes it, 0 = no limit). Past it, keys are dropped from the table
//! — their readers are sent an invalidation, as Redis does — before a new one is added.
//! A key costs its bytes plus about 80 bytes (the map entry and a vector of 8-byte
//! connection ids), plus 8 bytes per connection that read it. A closed connection's ids
//! are dropped lazily, when their key changes or is evicted from the table (Redis does the
//! same).
//!
//! Cost for everyone else: while no connection tracks, a change costs one relaxed load.
//! While some do, a change takes the table's mutex for a hash lookup.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use fridge_engine::TenantId;

use crate::pubsub::{Frame, Hub, Subscriber};

/// Redis's default `tracking-table-max-keys`.
pub(crate) const DEFAULT_MAX_KEYS: usize = 1_000_000;

/// A connection's tracking options (`CLIENT TRACKING ON …`), kept by its session.
#[derive(Debug, Default, Clone)]
pub(crate) struct ClientTracking {
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// The connection invalidations go to; 0: itself.
    pub redirect: u64,
    pub prefixes: Vec<Box<[u8]>>,
    /// `CLIENT CACHING YES|NO` was sent, for the next command.
    pub caching: bool,
}

impl ClientTracking {
    /// Whether a read now is remembered (Redis's `trackingRememberKeys`).
    pub fn remembers(&self) -> bool {
        let opted_out = if self.optin { !self.caching } else { self.optout && self.caching };
        !self.bcast && !opted_out
    }
}

/// A tracking connection, as the table knows it.
#[derive(Debug)]
struct Client {
    tenant: TenantId,
    /// Where its invalidations go.
    target: Subscriber,
    /// The redirect connection's id (0: none); whether it has gone; whether an invalidation
    /// found it gone (Redis's `CLIENT_TRACKING_BROKEN_REDIR`).
    redirect: u64,
    gone: bool,
    broken: bool,
    /// The tracking connection itself (told when its redirect breaks).
    own: Subscriber,
    own_resp3: bool,
    bcast: bool,
    noloop: bool,
    prefixes: Vec<Box<[u8]>>,
    /// The null a flush sends, in the tracking connection's protocol (`$-1` or `_`).
    null: &'static [u8],
}

#[derive(Debug, Default)]
struct Table {
    /// The tenant's id byte, then the key → the connections that read it.
    keys: HashMap<Box<[u8]>, Vec<u64>>,
    clients: HashMap<u64, Client>,
    /// Where a lookup's tenant and key are put together (no allocation per change).
    scratch: Vec<u8>,
}

/// `scratch` set to the table's key for `key` of `tenant`.
fn entry_key<'a>(scratch: &'a mut Vec<u8>, tenant: TenantId, key: &[u8]) -> &'a [u8] {
    scratch.clear();
    scratch.extend_from_slice(&tenant.0.to_le_bytes());
    scratch.extend_from_slice(key);
    scratch
}

/// The tracking table and the tracking connections.
#[derive(Debug)]
pub(crate) struct Tracking {
    /// Tracking connections (0: a change has nothing to do).
    active: AtomicUsize,
    max_keys: AtomicUsize,
    table: Mutex<Table>,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking {
            active: AtomicUsize::new(0),
            max_keys: AtomicUsize::new(DEFAULT_MAX_KEYS),
            table: Mutex::default(),
        }
    }
}

/// What `enable` needs to know of the connection.
pub(crate) struct Enable<'a> {
    pub id: u64,
    pub tenant: TenantId,
    pub own: Subscriber,
    pub resp3: bool,
    pub options: &'a ClientTracking,
    /// The redirect connection, looked up by the caller.
    pub target: Option<Subscriber>,
}

impl Tracking {
    /// Whether any connection tracks.
    /// How many connections track keys (`INFO` `tracking_clients`).
    pub fn clients(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed) > 0
    }

    pub fn max_keys(&self) -> usize {
        self.max_keys.load(Ordering::Relaxed)
    }

    pub fn set_max_keys(&self, n: usize) {
        self.max_keys.store(n, Ordering::Relaxed);
    }

    /// Keys in the table (`INFO stats` `tracking_total_keys`).
    pub fn total_keys(&self) -> usize {
        self.lock().keys.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Turns tracking on for a connection, or changes its options.
    pub fn enable(&self, e: Enable<'_>) {
        let o = e.options;
        let client = Client {
            tenant: e.tenant,
            target: e.target.unwrap_or_else(|| e.own.clone()),
            redirect: o.redirect,
            gone: false,
            broken: false,
            own: e.own,
            own_resp3: e.resp3,
            bcast: o.bcast,
            noloop: o.noloop,
            prefixes: o.prefixes.clone(),
            null: if e.resp3 { b"_\r\n" } else { b"$-1\r\n" },
        };
        if self.lock().clients.insert(e.id, client).is_none() {
            self.active.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Turns tracking off for connection `id` (`CLIENT TRACKING OFF`, or it closed).
    pub fn disable(&self, id: u64) {
        if self.lock().clients.remove(&id).is_some() {
            self.active.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Whether connection `id`'s redirect has gone.
    pub fn broken(&self, id: u64) -> bool {
        self.lock().clients.get(&id).is_some_and(|c| c.broken)
    }

    /// Connection `id` closed: the connections redirecting to it learn it at their next
    /// invalidation (see [`send`]).
    pub fn closed(&self, id: u64) {
        if !self.active() {
            return;
        }
        let mut table = self.lock();
        for c in table.clients.values_mut().filter(|c| c.redirect == id) {
            c.gone = true;
        }
    }

    /// Remembers that connection `id` read `keys` (default mode). Drops keys from a full
    /// table first, sending their invalidations.
    pub fn remember<'k>(
        &self,
        id: u64,
        tenant: TenantId,
        keys: impl Iterator<Item = &'k [u8]>,
        hub: &Hub,
        wake: impl Fn(usize),
    ) {
        let max = self.max_keys();
        let mut guard = self.lock();
        let table = &mut *guard;
        for key in keys {
            let k = entry_key(&mut table.scratch, tenant, key);
            if let Some(ids) = table.keys.get_mut(k) {
                if !ids.contains(&id) {
                    ids.push(id);
                }
                continue;
            }
            let k: Box<[u8]> = k.into();
            while max > 0 && table.keys.len() >= max {
                let Some(victim) = table.keys.keys().next().cloned() else { break };
                let ids = table.keys.remove(&victim).unwrap_or_default();
                let victim_tenant = TenantId(u16::from_le_bytes([victim[0], victim[1]]));
                send_keys(&mut table.clients, hub, &ids, victim_tenant, &victim[2..], 0, &wake);
            }
            table.keys.insert(k, vec![id]);
        }
    }

    /// `key` of `tenant` changed (by connection `by`; 0: the engine): tells the connections
    /// that read it and the broadcast connections whose prefixes match. An invalidation for
    /// `by` itself (a RESP3 connection that read the key, not redirecting) is appended to
    /// `own`, for the caller to write after the command's reply (Redis's
    /// `tracking_pending_keys`); the others travel through the mailboxes.
    pub fn invalidate(
        &self,
        tenant: TenantId,
        key: &[u8],
        by: u64,
        own: &mut Vec<u8>,
        hub: &Hub,
        wake: impl Fn(usize),
    ) {
        if !self.active() {
            return;
        }
        let mut guard = self.lock();
        let table = &mut *guard;
        let mut ids =
            table.keys.remove(entry_key(&mut table.scratch, tenant, key)).unwrap_or_default();
        if let Some(at) = ids.iter().position(|id| *id == by) {
            let mine = table.clients.get(&by);
            if mine.is_some_and(|c| c.tenant == tenant && c.target.id == by && c.own_resp3) {
                ids.swap_remove(at);
                if mine.is_some_and(|c| !c.noloop) {
                    own.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n*1\r\n");
                    fridge_proto::resp::write_bulk(own, key);
                }
            }
        }
        send_keys(&mut table.clients, hub, &ids, tenant, key, by, &wake);
        let bcast: Vec<u64> = table
            .clients
            .iter()
            .filter(|(_, c)| c.bcast && c.tenant == tenant)
            .filter(|(_, c)| c.prefixes.is_empty() || c.prefixes.iter().any(|p| key.starts_with(p)))
            .map(|(id, _)| *id)
            .collect();
        send_keys(&mut table.clients, hub, &bcast, tenant, key, by, &wake);
    }

    /// The tenant's keys were flushed (by connection `by`): every tracking connection of the
    /// tenant gets an invalidation with a null key list, and the tenant's tracked keys are
    /// forgotten. `by`'s own (RESP3, not redirecting) is appended to `own`, as in
    /// [`Tracking::invalidate`].
    pub fn flush(
        &self,
        tenant: TenantId,
        by: u64,
        own: &mut Vec<u8>,
        hub: &Hub,
        wake: impl Fn(usize),
    ) {
        if !self.active() {
            return;
        }
        let mut table = self.lock();
        table.keys.retain(|k, _| !k.starts_with(&tenant.0.to_le_bytes()));
        for (id, c) in table.clients.iter_mut().filter(|(_, c)| c.tenant == tenant) {
            if *id == by && c.target.id == by && c.own_resp3 {
                own.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n_\r\n");
            } else {
                send(c, hub, &Arc::from(c.null), &wake);
            }
        }
    }
}

/// Sends an invalidation of `key` to each of the connections `ids` still tracking in
/// `tenant`, but not to `by` if it asked for `NOLOOP`.
fn send_keys(
    clients: &mut HashMap<u64, Client>,
    hub: &Hub,
    ids: &[u64],
    tenant: TenantId,
    key: &[u8],
    by: u64,
    wake: &impl Fn(usize),
) {
    let mut body: Option<Arc<[u8]>> = None;
    for id in ids {
        let Some(c) = clients.get_mut(id) else { continue };
        if c.tenant != tenant || (c.noloop && *id == by) {
            continue;
        }
        let body = body.get_or_insert_with(|| {
            let mut b = Vec::with_capacity(key.len() + 16);
            b.extend_from_slice(b"*1\r\n");
            fridge_proto::resp::write_bulk(&mut b, key);
            b.into()
        });
        send(c, hub, body, wake);
    }
}

/// Sends an invalidation to where `c`'s go; if that connection has gone, marks `c`'s
/// redirect broken and, in RESP3, tells `c` so instead (Redis's `sendTrackingMessage`).
fn send(c: &mut Client, hub: &Hub, body: &Arc<[u8]>, wake: &impl Fn(usize)) {
    if !c.gone {
        return hub.send(&c.target, Frame::Invalidate, body, wake);
    }
    c.broken = true;
    if c.own_resp3 {
        let mut id = Vec::with_capacity(24);
        fridge_proto::resp::write_integer(&mut id, c.redirect as i64);
        hub.send(&c.own, Frame::RedirectBroken, &id.into(), wake);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(id: u64) -> Subscriber {
        Subscriber { worker: 0, slot: id as usize, id, pending: Arc::default() }
    }

    fn enable(t: &Tracking, id: u64, options: &ClientTracking) {
        t.enable(Enable {
            id,
            tenant: TenantId(0),
            own: sub(id),
            resp3: true,
            options,
            target: None,
        });
    }

    fn mail(hub: &Hub) -> Vec<(u64, Vec<u8>)> {
        let mut m = Vec::new();
        hub.take_mail(0, &mut m);
        m.iter().map(|d| (d.id, d.body.to_vec())).collect()
    }

    #[test]
    fn a_read_key_is_invalidated_once_then_forgotten() {
        let (t, hub) = (Tracking::default(), Hub::new(1, 1 << 20));
        enable(&t, 1, &ClientTracking::default());
        t.remember(1, TenantId(0), [&b"k"[..]].into_iter(), &hub, |_| {});
        t.invalidate(TenantId(1), b"k", 0, &mut Vec::new(), &hub, |_| {});
        assert!(mail(&hub).is_empty(), "another tenant's key");
        t.invalidate(TenantId(0), b"k", 0, &mut Vec::new(), &hub, |_| {});
        assert_eq!(mail(&hub), [(1, b"*1\r\n$1\r\nk\r\n".to_vec())]);
        t.invalidate(TenantId(0), b"k", 0, &mut Vec::new(), &hub, |_| {});
        assert!(mail(&hub).is_empty());
        assert_eq!(t.total_keys(), 0);
    }

    #[test]
    fn the_table_is_bounded_and_dropped_keys_are_invalidated() {
        let (t, hub) = (Tracking::default(), Hub::new(1, 1 << 20));
        t.set_max_keys(2);
        enable(&t, 1, &ClientTracking::default());
        let keys: [&[u8]; 3] = [b"a", b"b", b"c"];
        t.remember(1, TenantId(0), keys.into_iter(), &hub, |_| {});
        assert_eq!(t.total_keys(), 2);
        assert_eq!(mail(&hub).len(), 1, "one key dropped, its reader told");
    }

    #[test]
    fn broadcast_matches_prefixes_and_noloop_skips_the_writer() {
        let (t, hub) = (Tracking::default(), Hub::new(1, 1 << 20));
        let options = ClientTracking {
            bcast: true,
            noloop: true,
            prefixes: vec![b"p:"[..].into()],
            ..ClientTracking::default()
        };
        enable(&t, 1, &options);
        t.invalidate(TenantId(0), b"q", 0, &mut Vec::new(), &hub, |_| {});
        t.invalidate(TenantId(0), b"p:1", 1, &mut Vec::new(), &hub, |_| {});
        assert!(mail(&hub).is_empty());
        t.invalidate(TenantId(0), b"p:1", 2, &mut Vec::new(), &hub, |_| {});
        assert_eq!(mail(&hub).len(), 1);
        t.flush(TenantId(0), 0, &mut Vec::new(), &hub, |_| {});
        assert_eq!(mail(&hub), [(1, b"_\r\n".to_vec())]);
    }
}
