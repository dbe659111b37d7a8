//! A connection's protocol state and what a command runs against: the types the dispatchers
//! (`memcache`, `resp`) and the login checks (`auth`) share with the worker that calls them.
//!
//! The worker owns the connections and calls the dispatchers; the dispatchers see only this
//! module's types, never the worker's.

use std::collections::HashMap;
use std::collections::hash_map::{DefaultHasher, Entry};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use fridge_engine::{TenantId, Worker};
use fridge_proto::{memcache, resp};

use crate::pubsub::{Pending, Subscriptions};
use crate::shared::Shared;
use crate::size_class::Histogram;
use crate::stats::{View, WorkerStats};
use crate::tenants::Tenants;
use crate::tracking::ClientTracking;

/// Keys a multi-key read looks up per engine call before it checks how long its reply has
/// grown.
pub(crate) const READ_GROUP: usize = 64;
/// Keys a multi-key read looks up in one run before it lets the worker's other connections
/// have a turn (see [`Session::suspend`]).
pub(crate) const KEYS_PER_RUN: usize = 4096;

/// Per-connection protocol state the dispatchers read and change.
#[derive(Debug)]
pub(crate) struct Session {
    pub id: u64,
    /// The client's address (failed logins are limited per address).
    pub peer: std::net::IpAddr,
    /// The client's port (`MONITOR`'s lines).
    pub port: u16,
    /// The tenant the request being run uses: the logged-in tenant, or for a client that has
    /// not logged in, `default` or the tenant its key's prefix routes to.
    pub tenant: TenantId,
    /// The tenant the connection logged in as (it holds one of the tenant's connection
    /// slots, `crate::limits`, until it logs out or closes).
    pub user: Option<TenantId>,
    /// Its tenant has a request rate (`crate::limits`): each request spends a token. Set at
    /// login and on reload ([`Session::refresh_limits`]), so a tenant without a rate pays
    /// one branch per request.
    pub rate_limited: bool,
    /// The database it selected (Redis `SELECT`; logical, see `crate::databases`). Always 0
    /// for memcached.
    pub db: u8,
    /// The tenants generation last checked (a removed tenant's connections are closed).
    pub generation: u64,
    /// Cluster mode: the slot map this connection routes by (`crate::cluster::Cluster::current`).
    pub cluster_map: crate::cluster::CachedMap,
    pub version: resp::Version,
    /// Close once the pending replies are written (`quit`, protocol errors, `CLIENT KILL`).
    pub closing: bool,
    /// A request answered in steps.
    pub resume: Resume,
    /// The socket's descriptor (`cfd=` in watchers' lines).
    pub fd: i32,
    /// Set by `watch`: the connection now only receives log lines (see `watch.rs`).
    pub watcher: Option<Arc<crate::watch::Watcher>>,
    /// The connection's slot on its worker (pub/sub deliveries find it there).
    pub slot: usize,
    /// Its pub/sub subscriptions, once it has subscribed.
    pub pubsub: Option<Box<Subscriptions>>,
    /// Bytes of pub/sub messages and invalidations on their way to it.
    pub pending: Arc<Pending>,
    /// Its client-side caching mode, while `CLIENT TRACKING` is on.
    pub tracking: Option<Box<ClientTracking>>,
    /// Its transaction state (MULTI's queue, WATCH's keys), once it has used either.
    pub tx: Option<Box<crate::transaction::Transaction>>,
    /// `CLIENT REPLY OFF`: replies are dropped.
    pub reply_off: bool,
    /// `CLIENT REPLY SKIP`: 2 while the SKIP itself runs, 1 while the command whose reply is
    /// dropped runs, then 0.
    pub reply_skip: u8,
    /// Commands run inside `EXEC` or a script: a blocking pop may not wait (Redis's
    /// `CLIENT_DENY_BLOCKING`).
    pub deny_blocking: bool,
    /// Large values of replies written from their segments, not yet sent (`crate::output`).
    pub out_pins: crate::output::Pins,
}

/// A request whose reply is written in steps: a multi-key read whose reply outgrew the
/// output budget, or KEYS yielding to the worker's other connections. The command calls
/// [`Session::suspend`]; the worker then leaves the request in the read buffer and runs it
/// again — parsed anew, with this state — at the connection's next step, once the client
/// has read enough of what is written (or, with nothing written, after the other
/// connections' turns). Requests after it wait, so replies stay in order.
#[derive(Debug, Default)]
pub(crate) struct Resume {
    /// Set by a command that stopped before its end.
    pub suspended: bool,
    /// The request being run was run before and goes on.
    pub resuming: bool,
    /// Where the command goes on: for `MGET`, the first argument not yet answered; for a
    /// memcached multiget, the bytes of its key list already answered.
    pub next: usize,
    /// A memcached multiget's command and exptime: a resumed run is not parsed again.
    pub retrieval: Option<(memcache::RetrievalCommand, i32)>,
    /// KEYS's state between its steps.
    pub keys: Option<Box<KeysJob>>,
    /// A memcached walk's state between its steps (`lru_crawler metadump`, `stats items`…).
    pub walk: Option<Box<WalkJob>>,
    /// The command did not run: `CLIENT PAUSE` covers it (`crate::pause`). Its worker
    /// leaves the connection off the run queue until the pause ends.
    pub parked: bool,
    /// The parked command is a blocking pop waiting for a push (`crate::blocking`).
    pub blocked: bool,
    /// A blocking pop registered as a waiter (`crate::blocking`): its deadline (ms;
    /// `u64::MAX` for none). Set from its registration until it answers; its connection
    /// leaves the wait queues when it closes with it set.
    pub block: Option<u64>,
}

impl Session {
    /// Whether the connection must log in before anything else.
    #[inline]
    pub fn must_login(&self, tenants: &Tenants) -> bool {
        self.user.is_none() && !tenants.allow_unauthenticated
    }

    /// Whether the connection is the admin — sees every tenant's figures and every client,
    /// may kill any client and reload the configuration: it logged in as `default`, or it
    /// has not logged in on a plain single-user server (no tenant besides `default`, which
    /// has no password), like any client of a Redis without `requirepass`.
    #[inline]
    pub fn is_admin(&self, tenants: &Tenants) -> bool {
        match self.user {
            Some(t) => t == TenantId(0),
            None => tenants.anonymous_admin,
        }
    }

    /// What the connection may see of the figures and the clients (see [`View`]).
    #[inline]
    pub fn view<'a>(&self, tenants: &'a Tenants) -> View<'a> {
        View::new(self.tenant, self.is_admin(tenants), self.id, self.user, tenants)
    }

    /// Stops the running command here, to go on from `next` (not 0) when it runs again.
    #[inline]
    pub fn suspend(&mut self, next: usize) {
        self.resume.suspended = true;
        self.resume.next = next;
    }

    /// Parks the command before it runs, for as long as `CLIENT PAUSE` covers it (see
    /// `crate::pause`): it runs again from its start once the pause ends.
    #[inline]
    pub fn park(&mut self) {
        self.suspend(0);
        self.resume.parked = true;
    }

    /// Parks a blocking pop until a push or its deadline (`crate::blocking`).
    #[inline]
    pub fn block(&mut self) {
        self.park();
        self.resume.blocked = true;
    }

    /// Where a resumed command goes on; 0 for a command run the first time.
    #[inline]
    pub fn resume_at(&self) -> usize {
        if self.resume.resuming { self.resume.next } else { 0 }
    }

    /// After a command ran: whether it suspended (keep the request for another run);
    /// otherwise any state of an earlier run is dropped.
    #[inline]
    pub fn keep_for_later(&mut self) -> bool {
        if self.resume.suspended {
            self.resume.suspended = false;
            self.resume.resuming = true;
            return true;
        }
        if self.resume.resuming {
            self.resume = Resume::default();
        }
        false
    }

    /// Whether the connection is in Redis's subscriber context (any subscription).
    #[inline]
    pub fn subscribed(&self) -> bool {
        self.pubsub.as_ref().is_some_and(|p| !p.is_empty())
    }

    /// Notices a reload: a connection whose tenant was removed is closed, and a changed
    /// request rate applies.
    #[inline]
    pub fn check_generation(&mut self, tenants: &Tenants) {
        if self.generation != tenants.generation {
            self.generation = tenants.generation;
            if self.user.is_some_and(|t| !tenants.is_live(t)) {
                self.closing = true;
            }
            self.refresh_limits(tenants);
        }
    }

    /// Whether its requests spend tokens, by the tenant it logged in as.
    #[inline]
    pub fn refresh_limits(&mut self, tenants: &Tenants) {
        self.rate_limited = self.user.is_some_and(|t| tenants.rate(t).is_some());
    }

    /// Whether the request at hand may run: a token of the tenant it logged in as is spent
    /// (`crate::limits`). Called only where [`Session::rate_limited`] holds. A refusal is
    /// counted in the tenant's `throttled_requests`; the caller answers it with the
    /// protocol's error and does not run the request.
    #[inline]
    pub(crate) fn admit(&self, ctx: &mut Ctx<'_>) -> bool {
        let Some(tenant) = self.user else { return true };
        let Some(rate) = ctx.tenants.rate(tenant) else { return true };
        let now = crate::limits::now_ns(ctx.shared.now_ms());
        if ctx.tokens.admit(&ctx.shared.limits, tenant, rate, now) {
            return true;
        }
        crate::stats::inc(&ctx.stats.tenants.throttled_requests[usize::from(tenant.0)]);
        false
    }
}

/// Everything a dispatcher needs from the worker besides the connection.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    pub shared: &'a Shared,
    /// The worker's index.
    pub worker: usize,
    /// The id of the connection whose request runs (`NOLOOP` tracking skips it).
    pub client: u64,
    /// Invalidations for the running connection itself, written after its command's reply.
    pub pushes: &'a mut Vec<u8>,
    pub engine: &'a mut Worker,
    pub stats: &'a WorkerStats,
    /// Reusable scratch for values the engine copies out (GETSET, INCRBYFLOAT, SCAN…).
    pub scratch: &'a mut Vec<u8>,
    pub keys: &'a mut Vec<Vec<u8>>,
    /// The tenants snapshot in force (replaced by `CONFIG RELOAD`).
    pub tenants: &'a mut Arc<Tenants>,
    /// The worker's request tokens per tenant (`crate::limits`).
    pub tokens: &'a mut crate::limits::LocalTokens,
    /// A command whose reply can be long suspends once the write buffer is this long (its
    /// unsent bytes at [`OUTPUT_SOFT_LIMIT`](crate::shared::OUTPUT_SOFT_LIMIT)); see
    /// [`Session::suspend`].
    pub out_limit: usize,
    /// The connection's socket descriptor (`cfd=` in watchers' lines).
    pub fd: i32,
}

/// A memcached walk over the keys between its steps (`lru_crawler metadump|mgdump`,
/// `stats cachedump`, and the size histogram of `stats items|slabs`): its memory is
/// fixed, whatever the key space, since lines are written as the walk finds them.
#[derive(Debug, Default)]
pub(crate) struct WalkJob {
    /// Where the pass over the index goes on.
    pub cursor: u64,
    /// Items written so far (`stats cachedump`'s limit).
    pub written: u64,
    /// Bytes written so far (`stats cachedump`'s 2 MB bound).
    pub bytes: usize,
    /// Items per size class seen so far.
    pub classes: Histogram,
}

/// KEYS between its steps: the pass over the index, then the reply being written.
#[derive(Debug, Default)]
pub(crate) struct KeysJob {
    pub cursor: u64,
    /// Matching keys found so far.
    pub keys: Vec<Box<[u8]>>,
    /// The keys' hashes, each to the index of a key with that hash: a key the index moved
    /// during the pass may be seen twice, and is kept once. (Hashes, not keys, so growing
    /// the map rehashes eight bytes per key; a hash shared by two different keys keeps both.)
    pub seen: HashMap<u64, u32>,
    /// Bytes the keys take.
    pub bytes: usize,
    /// Once the pass is over: how many keys are written.
    pub written: Option<usize>,
}

impl KeysJob {
    /// Memory the job holds, for the clients' memory limit.
    pub(crate) fn memory_bytes(&self) -> usize {
        let per_key = std::mem::size_of::<Box<[u8]>>() + 16;
        self.bytes + self.keys.capacity() * per_key
    }

    pub fn add(&mut self, key: Vec<u8>) {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        let index = u32::try_from(self.keys.len()).unwrap_or(u32::MAX);
        match self.seen.entry(h.finish()) {
            Entry::Occupied(e) if *self.keys[*e.get() as usize] == key[..] => return,
            Entry::Occupied(_) => {}
            Entry::Vacant(e) => {
                e.insert(index);
            }
        }
        self.bytes += key.len();
        self.keys.push(key.into_boxed_slice());
    }
}
