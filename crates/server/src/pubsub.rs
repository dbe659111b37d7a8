//! Pub/sub: the channel registry and the delivery of messages across worker threads.
//!
//! Redis's model (`src/pubsub.c`, <https://redis.io/docs/interact/pubsub/>): a client
//! subscribes to channels (`SUBSCRIBE`), to glob patterns over channel names (`PSUBSCRIBE`)
//! or to shard channels (`SSUBSCRIBE`); `PUBLISH` sends a message to every subscriber of the
//! channel and of every matching pattern, and answers how many received it. Here channels
//! live inside a tenant: a tenant's clients never see another tenant's channels.
//!
//! ```text
//!  publisher's worker                     subscriber's worker
//!  ──────────────────                     ───────────────────
//!  PUBLISH ch msg
//!   ├─ registry (read lock): ch's and the
//!   │  matching patterns' subscribers
//!   ├─ one Arc'd body per message    ──▶  mailbox[w] (mutex, a Vec of deliveries)
//!   └─ set mail[w]; wake w if it was clear    │
//!                                             ▼
//!                                     top of its loop: take the mailbox, append each
//!                                     message to its connection's output buffer
//! ```
//!
//! The publisher never waits for a subscriber: it appends to the subscriber's worker's
//! mailbox (a short mutex) and wakes that worker through its mio `Waker` only when the
//! mailbox goes from empty to not empty, so an idle server sleeps.
//!
//! **Slow subscribers** (Redis's `client-output-buffer-limit pubsub`): each subscriber's
//! bytes on their way — in mailboxes, not yet in its output buffer — are counted in an atomic
//! it shares with the registry. A publisher that would take them past `max_pubsub_output`
//! drops the message for that subscriber and marks it; its worker, when it delivers, also
//! checks the unsent bytes of its output buffer against the same limit. A marked or
//! overflowing subscriber is disconnected and counted
//! (`client_output_buffer_limit_disconnections` in `INFO stats`). A subscriber's memory is
//! thereby bounded by twice the limit, whatever publishers send.
//!
//! Costs: a message is copied once into an `Arc<[u8]>` (its channel and payload encoded as
//! two bulk strings); each receiver costs one `Delivery` (32 bytes) in a mailbox and one
//! reference count increment. Subscribing costs a hash map entry per (tenant, channel) and
//! one per subscriber of it.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use fridge_engine::TenantId;

use crate::resp::glob::glob_match;

/// The three kinds of subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// `SUBSCRIBE`: messages arrive as `message`.
    Channel,
    /// `PSUBSCRIBE`: messages arrive as `pmessage`, with the pattern.
    Pattern,
    /// `SSUBSCRIBE`: messages arrive as `smessage`; patterns do not see them.
    Shard,
}

/// What a subscriber's connection shares with the registry.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// Bytes of messages in mailboxes for this connection.
    pub queued: AtomicUsize,
    /// A message was dropped for it: the connection is to be closed.
    pub overflowed: AtomicBool,
    /// Its subscriptions' counts (`CLIENT LIST`'s `sub`, `psub`, `ssub`; `CLIENT KILL TYPE
    /// pubsub`), stored by its worker after each command.
    pub channels: AtomicUsize,
    pub patterns: AtomicUsize,
    pub shard_channels: AtomicUsize,
    /// Its last command's counter row plus one (`crate::cmdstats`; 0: none yet), for
    /// `CLIENT LIST`'s `cmd`.
    pub last_row: AtomicUsize,
    /// The database it selected (`CLIENT LIST`'s `db`), stored by `SELECT` and `RESET`.
    pub db: AtomicU8,
}

/// One subscribed connection, as the registry knows it.
#[derive(Clone, Debug)]
pub(crate) struct Subscriber {
    pub worker: usize,
    /// The connection's slot on its worker.
    pub slot: usize,
    /// The connection's id (a slot is reused by later connections).
    pub id: u64,
    pub pending: Arc<Pending>,
}

/// What a delivery is, which decides its frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    Message,
    PMessage,
    SMessage,
    /// A client-side caching invalidation (`crate::tracking`): RESP3 `invalidate` push, or
    /// in RESP2 a `message` on `__redis__:invalidate` (only to a subscribed connection).
    Invalidate,
    /// The connection a client redirected its invalidations to has gone (RESP3 only).
    RedirectBroken,
}

/// A message on its way to one connection.
#[derive(Debug)]
pub(crate) struct Delivery {
    pub slot: usize,
    pub id: u64,
    pub frame: Frame,
    /// For `pmessage`: the pattern, encoded as a bulk string.
    pub pattern: Option<Arc<[u8]>>,
    /// The channel and the payload, encoded as two bulk strings; for an invalidation, the
    /// keys (an array, or a null for a flush); for a broken redirect, the integer.
    pub body: Arc<[u8]>,
}

impl Delivery {
    /// Bytes this delivery counts against its subscriber's limit.
    pub fn len(&self) -> usize {
        self.body.len() + self.pattern.as_ref().map_or(0, |p| p.len())
    }

    /// Whether the connection still subscribes to what this message came through: a
    /// message published while it unsubscribed may arrive after the unsubscription's reply,
    /// and is then dropped (in RESP2 the client would take it for a reply).
    pub fn still_wanted(&self, subs: Option<&Subscriptions>) -> bool {
        let (kind, bulk) = match self.frame {
            Frame::Message => (Kind::Channel, &self.body[..]),
            Frame::SMessage => (Kind::Shard, &self.body[..]),
            Frame::PMessage => (Kind::Pattern, self.pattern.as_deref().unwrap_or_default()),
            Frame::Invalidate | Frame::RedirectBroken => return true,
        };
        let Some(subs) = subs else { return self.is_marker() };
        self.is_marker() || first_bulk(bulk).is_some_and(|name| subs.has(kind, name))
    }

    /// The empty delivery that tells a worker its subscriber overflowed (see
    /// [`Pending::overflowed`]).
    pub fn is_marker(&self) -> bool {
        self.body.is_empty()
    }

    /// Appends the message frame: `*3`/`>3` `message` ch msg, or `*4`/`>4` `pmessage` pat ch
    /// msg, or `smessage` (Redis's `addReplyPubsubMessage`/`addReplyPubsubPatMessage`).
    pub fn write(&self, out: &mut Vec<u8>, resp3: bool) {
        let head = if resp3 { b'>' } else { b'*' };
        match (self.frame, &self.pattern) {
            (Frame::PMessage, Some(p)) => {
                out.extend_from_slice(&[head, b'4', b'\r', b'\n']);
                out.extend_from_slice(b"$8\r\npmessage\r\n");
                out.extend_from_slice(p);
            }
            (Frame::SMessage, _) => {
                out.extend_from_slice(&[head, b'3', b'\r', b'\n']);
                out.extend_from_slice(b"$8\r\nsmessage\r\n");
            }
            (Frame::Invalidate, _) if resp3 => {
                out.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n")
            }
            (Frame::Invalidate, _) => {
                out.extend_from_slice(b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n");
            }
            (Frame::RedirectBroken, _) => {
                out.extend_from_slice(b">2\r\n$21\r\ntracking-redir-broken\r\n");
            }
            _ => {
                out.extend_from_slice(&[head, b'3', b'\r', b'\n']);
                out.extend_from_slice(b"$7\r\nmessage\r\n");
            }
        }
        out.extend_from_slice(&self.body);
    }
}

/// The contents of the bulk string `buf` starts with (`$<len>\r\n<bytes>\r\n`).
fn first_bulk(buf: &[u8]) -> Option<&[u8]> {
    let rest = buf.strip_prefix(b"$")?;
    let end = rest.iter().position(|&b| b == b'\r')?;
    let len: usize = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
    rest.get(end + 2..end + 2 + len)
}

/// Subscribers of one name (channel or pattern) of one kind.
#[derive(Debug, Default)]
struct Subscribers {
    /// For a pattern: the pattern, encoded as a bulk string, shared by its deliveries.
    encoded: Option<Arc<[u8]>>,
    subscribers: Vec<Subscriber>,
}

/// One tenant's channels.
#[derive(Debug, Default)]
struct TenantChannels {
    channels: HashMap<Box<[u8]>, Subscribers>,
    patterns: HashMap<Box<[u8]>, Subscribers>,
    shard: HashMap<Box<[u8]>, Subscribers>,
}

impl TenantChannels {
    fn map(&mut self, kind: Kind) -> &mut HashMap<Box<[u8]>, Subscribers> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    fn map_ref(&self, kind: Kind) -> &HashMap<Box<[u8]>, Subscribers> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard,
        }
    }

    fn is_empty(&self) -> bool {
        self.channels.is_empty() && self.patterns.is_empty() && self.shard.is_empty()
    }
}

/// A worker's mailbox.
#[derive(Debug, Default)]
struct Mailbox {
    deliveries: Mutex<Vec<Delivery>>,
    /// Set after a push; the worker clears it before it takes the deliveries.
    mail: AtomicBool,
}

/// The channel registry and the workers' mailboxes. Lock order: `registry`, then a mailbox.
#[derive(Debug)]
pub(crate) struct Hub {
    registry: RwLock<HashMap<TenantId, TenantChannels>>,
    mailboxes: Box<[Mailbox]>,
    /// Most bytes waiting for one subscriber (`max_pubsub_output`).
    pub limit: usize,
    /// Subscribers disconnected for falling too far behind.
    pub disconnections: AtomicU64,
}

/// A tenant's registry figures (`INFO stats`).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub channels: usize,
    pub patterns: usize,
    pub shard_channels: usize,
}

impl Hub {
    pub fn new(workers: usize, limit: usize) -> Self {
        Hub {
            registry: RwLock::default(),
            mailboxes: (0..workers).map(|_| Mailbox::default()).collect(),
            limit,
            disconnections: AtomicU64::new(0),
        }
    }

    /// Adds `sub` as a subscriber of `name`. The caller knows it was not one already.
    pub fn subscribe(&self, tenant: TenantId, kind: Kind, name: &[u8], sub: &Subscriber) {
        let mut reg = self.registry.write().unwrap_or_else(|e| e.into_inner());
        let map = reg.entry(tenant).or_default().map(kind);
        let entry = map.entry(name.into()).or_default();
        if kind == Kind::Pattern && entry.encoded.is_none() {
            let mut enc = Vec::with_capacity(name.len() + 16);
            fridge_proto::resp::write_bulk(&mut enc, name);
            entry.encoded = Some(enc.into());
        }
        entry.subscribers.push(sub.clone());
    }

    /// Removes the connection `id` from the subscribers of each of `names`.
    pub fn unsubscribe<'a>(
        &self,
        tenant: TenantId,
        kind: Kind,
        id: u64,
        names: impl Iterator<Item = &'a [u8]>,
    ) {
        let mut reg = self.registry.write().unwrap_or_else(|e| e.into_inner());
        let Some(t) = reg.get_mut(&tenant) else { return };
        let map = t.map(kind);
        for name in names {
            if let Entry::Occupied(mut e) = map.entry(name.into()) {
                e.get_mut().subscribers.retain(|s| s.id != id);
                if e.get().subscribers.is_empty() {
                    e.remove();
                }
            }
        }
        if t.is_empty() {
            reg.remove(&tenant);
        }
    }

    /// Sends `message` to the subscribers of `channel` (and, unless `kind` is
    /// [`Kind::Shard`], of the patterns matching it); returns how many there were. Never
    /// waits for a subscriber.
    pub fn publish(
        &self,
        tenant: TenantId,
        kind: Kind,
        channel: &[u8],
        message: &[u8],
        wake: impl Fn(usize),
    ) -> usize {
        let reg = self.registry.read().unwrap_or_else(|e| e.into_inner());
        let Some(t) = reg.get(&tenant) else { return 0 };
        let mut body: Option<Arc<[u8]>> = None;
        let mut encode = || {
            Arc::clone(body.get_or_insert_with(|| {
                let mut b = Vec::with_capacity(channel.len() + message.len() + 32);
                fridge_proto::resp::write_bulk(&mut b, channel);
                fridge_proto::resp::write_bulk(&mut b, message);
                b.into()
            }))
        };
        let mut receivers = 0;
        let mut woken = 0u64; // workers below 64 already woken by this publish
        if let Some(e) = t.map_ref(kind).get(channel) {
            let body = encode();
            let frame = if kind == Kind::Shard { Frame::SMessage } else { Frame::Message };
            for s in &e.subscribers {
                self.deliver(s, frame, None, &body, &wake, &mut woken);
                receivers += 1;
            }
        }
        if kind == Kind::Channel {
            for (pattern, e) in &t.patterns {
                if !glob_match(pattern, channel) {
                    continue;
                }
                let body = encode();
                for s in &e.subscribers {
                    let pattern = e.encoded.clone();
                    self.deliver(s, Frame::PMessage, pattern, &body, &wake, &mut woken);
                    receivers += 1;
                }
            }
        }
        receivers
    }

    /// Sends one frame to one connection (client-side caching's invalidations).
    pub fn send(&self, to: &Subscriber, frame: Frame, body: &Arc<[u8]>, wake: impl Fn(usize)) {
        self.deliver(to, frame, None, body, &wake, &mut 0);
    }

    fn deliver(
        &self,
        s: &Subscriber,
        frame: Frame,
        pattern: Option<Arc<[u8]>>,
        body: &Arc<[u8]>,
        wake: &impl Fn(usize),
        woken: &mut u64,
    ) {
        let d = Delivery { slot: s.slot, id: s.id, frame, pattern, body: Arc::clone(body) };
        let n = d.len();
        let Some(mb) = self.mailboxes.get(s.worker) else { return };
        if s.pending.queued.fetch_add(n, Ordering::Relaxed) + n > self.limit {
            s.pending.queued.fetch_sub(n, Ordering::Relaxed);
            if s.pending.overflowed.swap(true, Ordering::Relaxed) {
                return; // its worker was told already
            }
            // An empty delivery: its worker finds the connection and closes it.
            let marker = Delivery { body: Arc::from(&[][..]), pattern: None, ..d };
            mb.deliveries.lock().unwrap_or_else(|e| e.into_inner()).push(marker);
        } else {
            mb.deliveries.lock().unwrap_or_else(|e| e.into_inner()).push(d);
        }
        let bit = 1u64.checked_shl(s.worker as u32).unwrap_or(0);
        if !mb.mail.swap(true, Ordering::SeqCst) && *woken & bit == 0 {
            *woken |= bit;
            wake(s.worker);
        }
    }

    /// Worker `w`'s deliveries, moved into `into` (emptied first; its capacity is reused).
    /// Returns false, taking no lock, when there is no mail.
    pub fn take_mail(&self, w: usize, into: &mut Vec<Delivery>) -> bool {
        into.clear();
        let Some(mb) = self.mailboxes.get(w) else { return false };
        if !mb.mail.swap(false, Ordering::SeqCst) {
            return false;
        }
        std::mem::swap(&mut *mb.deliveries.lock().unwrap_or_else(|e| e.into_inner()), into);
        true
    }

    /// Channels with a subscriber (`kind` Channel or Shard) or patterns, of `tenant`, whose
    /// name matches `pattern` (all without one).
    pub fn names(&self, tenant: TenantId, kind: Kind, pattern: Option<&[u8]>) -> Vec<Box<[u8]>> {
        let reg = self.registry.read().unwrap_or_else(|e| e.into_inner());
        let Some(t) = reg.get(&tenant) else { return Vec::new() };
        t.map_ref(kind)
            .keys()
            .filter(|n| pattern.is_none_or(|p| glob_match(p, n)))
            .cloned()
            .collect()
    }

    /// How many connections subscribe to `name`.
    pub fn subscribers(&self, tenant: TenantId, kind: Kind, name: &[u8]) -> usize {
        let reg = self.registry.read().unwrap_or_else(|e| e.into_inner());
        reg.get(&tenant).and_then(|t| t.map_ref(kind).get(name)).map_or(0, |e| e.subscribers.len())
    }

    /// The registry's figures for `tenant`, or for every tenant.
    pub fn counts(&self, tenant: Option<TenantId>) -> Counts {
        let reg = self.registry.read().unwrap_or_else(|e| e.into_inner());
        let mut c = Counts::default();
        for (id, t) in reg.iter() {
            if tenant.is_none_or(|want| want == *id) {
                c.channels += t.channels.len();
                c.patterns += t.patterns.len();
                c.shard_channels += t.shard.len();
            }
        }
        c
    }
}

/// A connection's subscriptions (Redis's `c->pubsub_channels`, `pubsub_patterns`,
/// `pubsubshard_channels`), kept by its session.
#[derive(Debug)]
pub(crate) struct Subscriptions {
    /// The tenant they were made in.
    pub tenant: TenantId,
    pub channels: HashSet<Box<[u8]>>,
    pub patterns: HashSet<Box<[u8]>>,
    pub shard: HashSet<Box<[u8]>>,
    /// What [`Subscriptions::memory_bytes`] reports, kept as they change.
    bytes: usize,
}

impl Subscriptions {
    pub fn new(tenant: TenantId) -> Self {
        Subscriptions {
            tenant,
            channels: HashSet::new(),
            patterns: HashSet::new(),
            shard: HashSet::new(),
            bytes: 0,
        }
    }

    fn set(&mut self, kind: Kind) -> &mut HashSet<Box<[u8]>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    /// The count a (un)subscribe reply reports: channels and patterns, or for shard
    /// channels, those alone (Redis's `clientSubscriptionsCount` and
    /// `clientShardSubscriptionsCount`).
    pub fn count(&self, kind: Kind) -> usize {
        match kind {
            Kind::Shard => self.shard.len(),
            _ => self.channels.len() + self.patterns.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.channels.is_empty() && self.patterns.is_empty() && self.shard.is_empty()
    }

    /// Memory the subscriptions take, here and in the registry (counted in the connection's
    /// share of `max_client_memory`, so a client subscribing without end is disconnected
    /// like one with huge buffers): twice the names, plus about 96 bytes an entry.
    pub fn memory_bytes(&self) -> usize {
        self.bytes
    }

    fn entry_bytes(name: &[u8]) -> usize {
        2 * name.len() + 96
    }

    /// Adds a subscription; false if it was there.
    pub fn add(&mut self, kind: Kind, name: &[u8]) -> bool {
        if self.set(kind).contains(name) {
            return false;
        }
        self.set(kind).insert(name.into());
        self.bytes += Self::entry_bytes(name);
        true
    }

    /// Whether it subscribes to `name`.
    pub fn has(&self, kind: Kind, name: &[u8]) -> bool {
        match kind {
            Kind::Channel => self.channels.contains(name),
            Kind::Pattern => self.patterns.contains(name),
            Kind::Shard => self.shard.contains(name),
        }
    }

    /// Removes a subscription; false if there was none.
    pub fn remove(&mut self, kind: Kind, name: &[u8]) -> bool {
        let removed = self.set(kind).remove(name);
        if removed {
            self.bytes -= Self::entry_bytes(name);
        }
        removed
    }

    /// Removes every subscription of `kind`, returning them.
    pub fn take_all(&mut self, kind: Kind) -> Vec<Box<[u8]>> {
        let names: Vec<Box<[u8]>> = self.set(kind).drain().collect();
        self.bytes -= names.iter().map(|n| Self::entry_bytes(n)).sum::<usize>();
        names
    }

    /// Forgets them all, here and in the registry.
    pub fn clear(&mut self, id: u64, hub: &Hub) {
        hub.drop_all(id, self);
        self.channels.clear();
        self.patterns.clear();
        self.shard.clear();
        self.bytes = 0;
    }
}

impl Hub {
    /// Forgets every subscription of connection `id` (it closed, or ran `RESET`).
    pub fn drop_all(&self, id: u64, subs: &Subscriptions) {
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            let set = match kind {
                Kind::Channel => &subs.channels,
                Kind::Pattern => &subs.patterns,
                Kind::Shard => &subs.shard,
            };
            if !set.is_empty() {
                self.unsubscribe(subs.tenant, kind, id, set.iter().map(|n| &n[..]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(worker: usize, id: u64) -> Subscriber {
        Subscriber { worker, slot: id as usize, id, pending: Arc::default() }
    }

    #[test]
    fn publish_reaches_channel_and_pattern_subscribers_of_the_tenant_only() {
        let hub = Hub::new(2, 1 << 20);
        let (a, b, c) = (sub(0, 1), sub(1, 2), sub(1, 3));
        hub.subscribe(TenantId(0), Kind::Channel, b"news", &a);
        hub.subscribe(TenantId(0), Kind::Pattern, b"n*", &b);
        hub.subscribe(TenantId(1), Kind::Channel, b"news", &c);
        let woken = std::cell::RefCell::new(Vec::new());
        let n =
            hub.publish(TenantId(0), Kind::Channel, b"news", b"hi", |w| woken.borrow_mut().push(w));
        assert_eq!(n, 2);
        assert_eq!(*woken.borrow(), [0, 1], "each worker woken once");
        let mut mail = Vec::new();
        assert!(hub.take_mail(1, &mut mail));
        assert_eq!(mail.len(), 1, "tenant 1's subscriber sees nothing");
        let mut out = Vec::new();
        mail[0].write(&mut out, false);
        assert_eq!(out, b"*4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nhi\r\n");
        let mut subs = Subscriptions::new(TenantId(0));
        assert!(!mail[0].still_wanted(Some(&subs)), "unsubscribed: dropped");
        subs.add(Kind::Pattern, b"n*");
        assert!(mail[0].still_wanted(Some(&subs)));
        assert!(!hub.take_mail(1, &mut mail), "no mail twice");
        assert_eq!(hub.publish(TenantId(0), Kind::Shard, b"news", b"x", |_| {}), 0);
    }

    #[test]
    fn a_subscriber_past_the_limit_is_marked_and_its_message_dropped() {
        let hub = Hub::new(1, 40);
        let a = sub(0, 1);
        hub.subscribe(TenantId(0), Kind::Channel, b"c", &a);
        hub.publish(TenantId(0), Kind::Channel, b"c", &[b'x'; 20], |_| {});
        assert!(!a.pending.overflowed.load(Ordering::Relaxed));
        hub.publish(TenantId(0), Kind::Channel, b"c", &[b'x'; 20], |_| {});
        assert!(a.pending.overflowed.load(Ordering::Relaxed));
        hub.publish(TenantId(0), Kind::Channel, b"c", &[b'x'; 20], |_| {});
        let mut mail = Vec::new();
        hub.take_mail(0, &mut mail);
        assert_eq!(mail.len(), 2, "the message, then one marker");
        assert!(!mail[0].is_marker() && mail[1].is_marker());
    }

    #[test]
    fn subscriptions_count_their_memory_as_they_change() {
        let mut s = Subscriptions::new(TenantId(0));
        assert!(s.add(Kind::Channel, b"abc") && s.add(Kind::Pattern, b"a*"));
        assert!(!s.add(Kind::Channel, b"abc"), "once");
        assert_eq!(s.memory_bytes(), (6 + 96) + (4 + 96));
        assert!(s.remove(Kind::Pattern, b"a*") && !s.remove(Kind::Pattern, b"a*"));
        assert_eq!(s.take_all(Kind::Channel).len(), 1);
        assert_eq!(s.memory_bytes(), 0);
    }

    #[test]
    fn unsubscribing_the_last_subscriber_forgets_the_channel() {
        let hub = Hub::new(1, 1 << 20);
        hub.subscribe(TenantId(0), Kind::Channel, b"c", &sub(0, 1));
        assert_eq!(hub.names(TenantId(0), Kind::Channel, None).len(), 1);
        hub.unsubscribe(TenantId(0), Kind::Channel, 1, [&b"c"[..]].into_iter());
        assert!(hub.names(TenantId(0), Kind::Channel, None).is_empty());
        assert_eq!(hub.counts(None).channels, 0);
    }
}
