//! Logging in: what both protocols share — the limit on failed logins, running one login
//! attempt, recording a login — and memcached's text-protocol authentication.
//!
//! # Failed logins
//!
//! Every login attempt is answered at once, and a success costs what a failure costs (one
//! salted hash; an unknown user name hashes a decoy), so the time of a reply tells nothing
//! about the password or the user. Guessing is limited instead by token buckets of *failed*
//! logins: one per client address (an IPv6 address counts by its /64, the block one host is
//! usually given) and one per user name, unknown names included, so guessing names is
//! limited too. Each bucket holds `auth_failure_burst` tokens and regains
//! `auth_failure_rate` a second; a checked attempt that fails takes one token from each of
//! its two buckets. Before the password is looked at, an attempt is refused — unchecked,
//! answered with an error of its own — when
//!
//! 1. its address's bucket is empty, or
//! 2. its user's bucket is empty and its address has failed a login within the last
//!    [`FAILURE_WINDOW_MS`].
//!
//! The decision depends on history only, never on this attempt's password, so a refusal
//! tells nothing about it either; a success refills nothing (logging in to one's own account
//! between guesses gains nothing). Rule 2 lets a client from a clean address log in while
//! its user is attacked from elsewhere. The price: against one user, an attacker gets
//! `burst + rate × t` checked guesses, plus one for each of its addresses that has not failed
//! within the window — with A addresses, at most A more per ten minutes.
//!
//! Memory is bounded. Configured tenants' buckets sit in an array indexed by tenant id (at
//! most 256, never forgotten, so a flood of made-up names cannot refill a real user's
//! bucket). Other names, and addresses, go to maps of at most [`USER_NAMES`] and
//! [`ADDRESSES`] entries (16 bytes of bucket each, plus the key): when one is full, entries
//! whose bucket is full again and whose last failure has left the window are dropped; if
//! none has, the one with the oldest failure goes (an address forgotten that way counts as
//! clean again). Names longer than any tenant's share buckets by their first
//! [`NAME_KEY_LEN`] bytes.
//!
//! Workers check and record under one mutex (`Shared::auth_failures`), taken per login
//! attempt and never per request. The check and the record are two steps around the hash,
//! so attempts checked at the same moment on different workers may each pass on a bucket's
//! last token: at most one failure per worker beyond the limit.
//!
//! # memcached
//!
//! memcached (1.5.15 and later, started with `-Y authfile`) has clients authenticate with a
//! storage command: until a connection has logged in, the only request it accepts is
//! `set <key> <flags> <exptime> <bytes>` whose data block is `<user> <password>` (the key,
//! flags and expiry are ignored, and so is `noreply`). Replies, as memcached 1.6 sends them:
//!
//! | request | reply |
//! |---|---|
//! | `set` with a valid `user password` | `STORED` |
//! | `set` with a wrong pair or an unknown user | `CLIENT_ERROR authentication failure` |
//! | `set` past the failure limit (fridge's own: see above) | `CLIENT_ERROR too many failed login attempts` |
//! | `set` with a valid pair past the tenant's `max_connections` (fridge's own) | `SERVER_ERROR too many connections for this tenant` |
//! | `set` whose data has fewer than two words | `CLIENT_ERROR bad authentication token format` |
//! | `set` whose data block does not end in `\r\n` | `CLIENT_ERROR bad command line termination` |
//! | anything else | `CLIENT_ERROR unauthenticated` |
//!
//! One difference: `quit` closes the connection (memcached answers it `unauthenticated`).

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;

use fridge_engine::TenantId;
use fridge_engine::item::MAX_TENANTS;
use fridge_proto::number;

use crate::config::{DEFAULT_TENANT, MAX_NAME_LEN};
use crate::session::{Ctx, Session};
use crate::stats::{self, LoginCount};
use crate::tenants::{FailureLimit, Login};

/// Largest memcached login data block read; a larger one is refused and skipped.
const MAX_LOGIN_DATA: usize = 1024;
/// How long an address that failed a login stays suspect for rule 2 (see the module doc).
const FAILURE_WINDOW_MS: u64 = 10 * 60 * 1000;
/// Client addresses remembered at most.
const ADDRESSES: usize = 4096;
/// Names that are no configured tenant's remembered at most.
const USER_NAMES: usize = 4096;
/// Bytes of a user name that pick its bucket: one more than the longest tenant name, so no
/// two names that could be tenants share one.
const NAME_KEY_LEN: usize = MAX_NAME_LEN + 1;

/// The memcached reply to a refused login.
pub(crate) const MC_REFUSED: &[u8] = b"CLIENT_ERROR too many failed login attempts\r\n";
/// The memcached reply to a login past the tenant's `max_connections` (`crate::limits`).
pub(crate) const MC_FULL: &[u8] = b"SERVER_ERROR too many connections for this tenant\r\n";

/// A token bucket of failed logins, kept as the time it will be full again (GCRA's
/// "theoretical arrival time"): with one token regained per `interval`, it holds
/// `burst − (full_at − now) / interval` tokens, so it is empty once `full_at` is more than
/// `burst − 1` intervals ahead. Taking a token moves `full_at` one interval later.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// When the bucket is full again, in µs of the server clock.
    full_at_us: u64,
    /// The last failure taken from it, in ms.
    last_failure_ms: u64,
}

const _: () = assert!(std::mem::size_of::<Bucket>() == 16);

fn micros(ms: u64) -> u64 {
    ms.saturating_mul(1000)
}

impl Bucket {
    /// A bucket no failure has been taken from yet (only ever stored with one taken).
    const FULL: Bucket = Bucket { full_at_us: 0, last_failure_ms: 0 };

    fn is_empty(&self, now_ms: u64, limit: FailureLimit) -> bool {
        self.full_at_us.saturating_sub(micros(now_ms)) > limit.slack_us()
    }

    fn take(&mut self, now_ms: u64, limit: FailureLimit) {
        self.full_at_us = self.full_at_us.max(micros(now_ms)).saturating_add(limit.interval_us());
        self.last_failure_ms = now_ms;
    }

    fn failed_lately(&self, now_ms: u64) -> bool {
        now_ms.saturating_sub(self.last_failure_ms) < FAILURE_WINDOW_MS
    }

    /// Full again and out of the window: forgetting it changes nothing.
    fn is_stale(&self, now_ms: u64) -> bool {
        self.full_at_us <= micros(now_ms) && !self.failed_lately(now_ms)
    }
}

/// The address whose bucket a client uses: IPv4 as is (IPv4-mapped IPv6 too), IPv6 by /64.
fn source(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V4(_) => addr,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !(u128::MAX >> 64)).into()),
        },
    }
}

/// Whose bucket a login's user name uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum User<'a> {
    /// A configured tenant.
    Tenant(TenantId),
    /// Any other name: by its first [`NAME_KEY_LEN`] bytes.
    Unknown(&'a [u8]),
}

impl<'a> User<'a> {
    /// The bucket owner of the name `user`, a tenant if `tenant` says so.
    pub fn of(user: &'a [u8], tenant: Option<TenantId>) -> User<'a> {
        match tenant {
            Some(t) => User::Tenant(t),
            None => User::Unknown(&user[..user.len().min(NAME_KEY_LEN)]),
        }
    }
}

/// Recent failed logins: a token bucket per client address and per user name (see the
/// module doc). Lives behind `Shared::auth_failures`.
#[derive(Debug)]
pub(crate) struct FailureLog {
    by_addr: HashMap<IpAddr, Bucket>,
    by_tenant: Box<[Option<Bucket>]>,
    by_name: HashMap<Vec<u8>, Bucket>,
}

impl Default for FailureLog {
    fn default() -> Self {
        FailureLog {
            by_addr: HashMap::new(),
            by_tenant: vec![None; MAX_TENANTS].into_boxed_slice(),
            by_name: HashMap::new(),
        }
    }
}

impl FailureLog {
    fn user(&self, user: User<'_>) -> Option<&Bucket> {
        match user {
            User::Tenant(t) => self.by_tenant.get(usize::from(t.0))?.as_ref(),
            User::Unknown(name) => self.by_name.get(name),
        }
    }

    /// Whether a login from `addr` as `user` (`None`: a malformed one, naming nobody) may be
    /// checked at `now_ms`. Depends on earlier failures only.
    pub fn admits(
        &self,
        addr: IpAddr,
        user: Option<User<'_>>,
        now_ms: u64,
        limit: FailureLimit,
    ) -> bool {
        let from = self.by_addr.get(&source(addr));
        if from.is_some_and(|b| b.is_empty(now_ms, limit)) {
            return false;
        }
        let user_spent = user.and_then(|u| self.user(u)).is_some_and(|b| b.is_empty(now_ms, limit));
        !(user_spent && from.is_some_and(|b| b.failed_lately(now_ms)))
    }

    /// Counts a checked login from `addr` as `user` that failed.
    pub fn record(
        &mut self,
        addr: IpAddr,
        user: Option<User<'_>>,
        now_ms: u64,
        limit: FailureLimit,
    ) {
        take_token(&mut self.by_addr, &source(addr), ADDRESSES, now_ms, limit);
        match user {
            Some(User::Tenant(t)) => {
                if let Some(slot) = self.by_tenant.get_mut(usize::from(t.0)) {
                    slot.get_or_insert(Bucket::FULL).take(now_ms, limit);
                }
            }
            Some(User::Unknown(name)) => {
                take_token(&mut self.by_name, name, USER_NAMES, now_ms, limit);
            }
            None => {}
        }
    }
}

/// Takes a token from `key`'s bucket in `map`, adding the bucket (full) if it is not there,
/// after making room if the map holds `cap` buckets.
fn take_token<K, Q>(
    map: &mut HashMap<K, Bucket>,
    key: &Q,
    cap: usize,
    now_ms: u64,
    limit: FailureLimit,
) where
    K: Borrow<Q> + Hash + Eq,
    Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
{
    if let Some(b) = map.get_mut(key) {
        return b.take(now_ms, limit);
    }
    if map.len() >= cap {
        map.retain(|_, b| !b.is_stale(now_ms));
    }
    if map.len() >= cap {
        let oldest = map.iter().min_by_key(|(_, b)| b.last_failure_ms).map(|(k, _)| k);
        if let Some(k) = oldest.map(|k| k.borrow().to_owned()) {
            map.remove(k.borrow());
        }
    }
    map.entry(key.to_owned()).or_insert(Bucket::FULL).take(now_ms, limit);
}

/// A login attempt turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Unchecked: its address, or its user while its address has failed lately, may fail
    /// no more for now.
    Failures,
    /// The credentials were right, but the tenant has `max_connections` connections logged
    /// in already (`crate::limits`): the connection stays as it was.
    Full,
}

/// Runs one login attempt: as `user`, or as `default` for Redis's `AUTH <password>` (`None`).
/// Refuses it unchecked past the failure limit; otherwise checks the password, records the
/// login or the failure, and counts the attempt. A right password for a tenant whose
/// connection slots are all taken is refused too ([`Refused::Full`]), after the check, so
/// the refusal tells nothing to someone without the password.
pub(crate) fn attempt(
    s: &mut Session,
    ctx: &Ctx<'_>,
    user: Option<&[u8]>,
    password: &[u8],
) -> Result<Login, Refused> {
    let name = user.unwrap_or(DEFAULT_TENANT.as_bytes());
    let named = ctx.tenants.find(name);
    let bucket = User::of(name, named);
    let now = ctx.shared.now_ms();
    if !failure_log(ctx).admits(s.peer, Some(bucket), now, ctx.tenants.failure_limit) {
        stats::count_login(ctx.stats, named, LoginCount::Refused);
        log::debug!(
            "fridge: login as {} from {} refused unchecked (too many failures)",
            crate::logging::printable(name),
            s.peer
        );
        return Err(Refused::Failures);
    }
    let login = match user {
        Some(user) => ctx.tenants.login(user, password),
        None => ctx.tenants.login_default(password),
    };
    match login {
        Login::Ok(t) => {
            stats::count_login(ctx.stats, named, LoginCount::Answered);
            logged_in(s, ctx, t)?;
        }
        Login::Denied => {
            stats::count_login(ctx.stats, named, LoginCount::Failed);
            // Bounded by the failure limit: past it, attempts are refused unchecked (and
            // logged only at debug, below).
            log::info!(
                "fridge: login as {} from {} failed",
                crate::logging::printable(name),
                s.peer
            );
            failed(s, ctx, Some(bucket), now);
        }
        // Not a guess: Redis's answer to a configuration where `AUTH <password>` means nothing.
        Login::NoDefaultPassword => stats::count_login(ctx.stats, named, LoginCount::Answered),
    }
    Ok(login)
}

/// A memcached login whose token is malformed: a failure of the address (it names no user),
/// or refused like any other attempt once the address may fail no more.
pub(crate) fn malformed(s: &Session, ctx: &Ctx<'_>) -> Result<(), Refused> {
    let now = ctx.shared.now_ms();
    if !failure_log(ctx).admits(s.peer, None, now, ctx.tenants.failure_limit) {
        stats::count_login(ctx.stats, None, LoginCount::Refused);
        return Err(Refused::Failures);
    }
    stats::count_login(ctx.stats, None, LoginCount::Failed);
    failed(s, ctx, None, now);
    Ok(())
}

fn failure_log<'a>(ctx: &'a Ctx<'_>) -> std::sync::MutexGuard<'a, FailureLog> {
    ctx.shared.auth_failures.lock().unwrap_or_else(|e| e.into_inner())
}

/// Takes a token from the buckets of the session's address and of `user`.
fn failed(s: &Session, ctx: &Ctx<'_>, user: Option<User<'_>>, now: u64) {
    failure_log(ctx).record(s.peer, user, now, ctx.tenants.failure_limit);
}

/// A TLS client whose verified certificate names a tenant (`crate::tls`) is logged in as
/// that tenant, as a password login would log it in; a name that is no tenant's changes
/// nothing. The certificate is the credential: no password, no failure bucket.
pub(crate) fn certificate_login(s: &mut Session, ctx: &Ctx<'_>, name: &str) {
    if let Some(tenant) = ctx.tenants.find(name.as_bytes()) {
        log::debug!(
            "fridge: {} logged in as {} by its TLS certificate",
            s.peer,
            crate::logging::printable(name.as_bytes())
        );
        // Past the tenant's connection limit the connection stays logged out: there is no
        // request to answer yet, so its first ones get what a logged-out client gets.
        let _ = logged_in(s, ctx, tenant);
    }
}

/// Records a successful login — the session now runs as `tenant` — once it has a connection
/// slot of the tenant (`crate::limits`): the one it holds already if it was logged in as
/// `tenant`, else a new one, the slot of the tenant it was logged in as given back. With
/// every slot taken, nothing changes and the refusal is counted.
fn logged_in(s: &mut Session, ctx: &Ctx<'_>, tenant: TenantId) -> Result<(), Refused> {
    if s.user != Some(tenant) {
        let max = ctx.tenants.entry(tenant).and_then(|e| e.max_connections);
        if ctx.shared.limits.connect(tenant, max).is_err() {
            stats::inc(&ctx.stats.tenants.rejected_connections[usize::from(tenant.0)]);
            log::info!(
                "fridge: login as {} from {} refused: max_connections reached",
                ctx.tenants.name(tenant).unwrap_or_default(),
                s.peer
            );
            return Err(Refused::Full);
        }
        if let Some(old) = s.user {
            ctx.shared.limits.disconnect(old);
        }
    }
    s.user = Some(tenant);
    s.tenant = tenant;
    s.refresh_limits(ctx.tenants);
    let mut clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = clients.get_mut(&s.id) {
        e.tenant = tenant;
    }
    Ok(())
}

/// Logs the session out (Redis's `RESET`), giving back its tenant's connection slot.
pub(crate) fn logged_out(s: &mut Session, ctx: &Ctx<'_>) {
    if let Some(old) = s.user.take() {
        ctx.shared.limits.disconnect(old);
        s.rate_limited = false;
        let mut clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = clients.get_mut(&s.id) {
            e.tenant = TenantId(0);
        }
    }
}

/// A request of a memcached connection that must log in first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum McLogin<'a> {
    /// `set …` with a well-formed data block: the block, without its `\r\n`.
    Attempt(&'a [u8]),
    /// `set …` whose block does not end in `\r\n`.
    BadTermination,
    /// `set …` announcing a block larger than a login needs: refused, and this many bytes
    /// (the block) are skipped.
    TooLarge(usize),
    /// `quit`.
    Quit,
    /// Anything else.
    Other,
    /// A line longer than the limit with no end in sight.
    LineTooLong,
}

fn words(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&c| c == b' ').filter(|w| !w.is_empty())
}

/// Parses one request of a connection that has not logged in. Returns the request and the
/// bytes it used (for [`McLogin::TooLarge`], the command line only), or `None` while it is
/// incomplete.
pub(crate) fn parse_memcache_login(buf: &[u8], max_line: usize) -> Option<(McLogin<'_>, usize)> {
    let Some(nl) = buf.iter().position(|&c| c == b'\n') else {
        return (buf.len() > max_line).then_some((McLogin::LineTooLong, buf.len()));
    };
    let line_len = nl + 1;
    let line = buf[..nl].strip_suffix(b"\r").unwrap_or(&buf[..nl]);
    let mut w = words(line);
    let first = w.next().unwrap_or_default();
    if first == b"quit" {
        return Some((McLogin::Quit, line_len));
    }
    let size = (first == b"set").then(|| w.nth(3)).flatten().and_then(number::parse_u32);
    let Some(size) = size.map(|s| s as usize) else { return Some((McLogin::Other, line_len)) };
    if size > MAX_LOGIN_DATA {
        return Some((McLogin::TooLarge(size + 2), line_len));
    }
    let end = line_len + size + 2;
    let block = buf.get(line_len..end)?;
    match block.strip_suffix(b"\r\n") {
        Some(data) => Some((McLogin::Attempt(data), end)),
        None => Some((McLogin::BadTermination, end)),
    }
}

/// The user and password of a login block: its first two space-separated words.
pub(crate) fn split_credentials(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut w = words(data);
    Some((w.next()?, w.next()?))
}

/// Runs one request of a memcached connection that must log in first.
pub(crate) fn memcache_login(
    req: McLogin<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
) {
    match req {
        McLogin::Attempt(data) => {
            stats::inc(&ctx.stats.commands);
            let Some((user, password)) = split_credentials(data) else {
                return out.extend_from_slice(match malformed(s, ctx) {
                    Ok(()) => b"CLIENT_ERROR bad authentication token format\r\n",
                    Err(_) => MC_REFUSED,
                });
            };
            out.extend_from_slice(match attempt(s, ctx, Some(user), password) {
                Ok(Login::Ok(_)) => b"STORED\r\n",
                Ok(Login::Denied | Login::NoDefaultPassword) => {
                    b"CLIENT_ERROR authentication failure\r\n"
                }
                Err(Refused::Failures) => MC_REFUSED,
                Err(Refused::Full) => MC_FULL,
            });
        }
        McLogin::TooLarge(_) => out.extend_from_slice(match malformed(s, ctx) {
            Ok(()) => b"CLIENT_ERROR bad authentication token format\r\n",
            Err(_) => MC_REFUSED,
        }),
        McLogin::BadTermination => {
            out.extend_from_slice(b"CLIENT_ERROR bad command line termination\r\n");
        }
        McLogin::Quit => s.closing = true,
        McLogin::Other => out.extend_from_slice(b"CLIENT_ERROR unauthenticated\r\n"),
        McLogin::LineTooLong => {
            out.extend_from_slice(b"CLIENT_ERROR unauthenticated\r\n");
            s.closing = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcache_login_requests_parse_like_memcached() {
        let p = |b: &'static [u8]| parse_memcache_login(b, 2048);
        assert_eq!(p(b"set a 0 0 5\r\nu pw1\r\n"), Some((McLogin::Attempt(b"u pw1"), 20)));
        assert_eq!(p(b"set a 0 0 5 noreply\r\nu pw1\r\n").unwrap().0, McLogin::Attempt(b"u pw1"));
        assert_eq!(p(b"set a 0 0 5\r\nu pw"), None, "incomplete block");
        assert_eq!(p(b"set a 0 0 5\r\nu pw1xx"), Some((McLogin::BadTermination, 20)));
        assert_eq!(p(b"get a\r\n"), Some((McLogin::Other, 7)));
        assert_eq!(p(b"add a 0 0 5\r\n"), Some((McLogin::Other, 13)));
        assert_eq!(p(b"set a 0 0\r\n"), Some((McLogin::Other, 11)));
        assert_eq!(p(b"set a 0 0 x\r\n"), Some((McLogin::Other, 13)));
        assert_eq!(p(b"quit\r\n"), Some((McLogin::Quit, 6)));
        assert_eq!(p(b"get a"), None);
        assert_eq!(p(b"set a 0 0 99999\r\n"), Some((McLogin::TooLarge(100_001), 17)));
        assert_eq!(parse_memcache_login(&[b'x'; 100], 64).unwrap().0, McLogin::LineTooLong);
    }

    const LIMIT: FailureLimit = FailureLimit { rate: 2.0, burst: 5 };
    const ALPHA: User<'static> = User::Tenant(TenantId(1));
    const BETA: User<'static> = User::Tenant(TenantId(2));

    fn v4(last: u8) -> IpAddr {
        [10, 0, 0, last].into()
    }

    #[test]
    fn an_address_may_fail_burst_times_then_rate_per_second() {
        let mut log = FailureLog::default();
        let a = v4(1);
        let t = 1_000_000;
        for i in 0..LIMIT.burst {
            assert!(log.admits(a, Some(ALPHA), t, LIMIT), "failure {i} is within the burst");
            // Each guess at another name: only the address's bucket runs dry.
            let name = format!("user{i}");
            log.record(a, Some(User::of(name.as_bytes(), None)), t, LIMIT);
        }
        assert!(!log.admits(a, Some(BETA), t, LIMIT), "burst spent, whatever the user");
        assert!(!log.admits(a, None, t, LIMIT), "malformed logins too");
        assert!(!log.admits(a, Some(ALPHA), t + 499, LIMIT), "not a token back yet");
        assert!(log.admits(a, Some(ALPHA), t + 500, LIMIT), "one token per 1/rate s");
        log.record(a, None, t + 500, LIMIT);
        assert!(!log.admits(a, None, t + 500, LIMIT), "and it is spent again");
        assert!(log.admits(v4(2), Some(ALPHA), t, LIMIT), "other addresses are untouched");
        // Full again after burst / rate seconds: burst failures in a row once more.
        let later = t + 500 + 2500;
        for _ in 0..LIMIT.burst {
            assert!(log.admits(a, None, later, LIMIT));
            log.record(a, None, later, LIMIT);
        }
        assert!(!log.admits(a, None, later, LIMIT));
    }

    #[test]
    fn a_spent_user_refuses_only_addresses_that_failed_lately() {
        let slow = FailureLimit { rate: 0.001, burst: 3 };
        let mut log = FailureLog::default();
        let t = 1_000_000;
        // Three addresses fail once each as alpha: alpha's bucket is spent, theirs are not.
        for i in 1..=3 {
            log.record(v4(i), Some(ALPHA), t, slow);
        }
        assert!(!log.admits(v4(1), Some(ALPHA), t, slow), "failed lately, user spent");
        assert!(log.admits(v4(1), Some(BETA), t, slow), "another user is fine");
        assert!(log.admits(v4(9), Some(ALPHA), t, slow), "a clean address may still try");
        // An address that failed at another user, or a malformed login, is suspect too.
        log.record(v4(4), Some(BETA), t, slow);
        log.record(v4(5), None, t, slow);
        assert!(!log.admits(v4(4), Some(ALPHA), t, slow));
        assert!(!log.admits(v4(5), Some(ALPHA), t, slow));
        // Until the failure leaves the window (alpha's bucket is still spent then).
        let after = t + FAILURE_WINDOW_MS;
        assert!(!log.admits(v4(4), Some(ALPHA), after - 1, slow));
        assert!(log.admits(v4(4), Some(ALPHA), after, slow));
    }

    #[test]
    fn unknown_names_have_buckets_and_long_names_share_one() {
        let mut log = FailureLog::default();
        let t = 1_000_000;
        let ghost = User::of(b"ghost", None);
        for i in 0..LIMIT.burst {
            log.record(v4(i as u8), Some(ghost), t, LIMIT);
        }
        assert!(!log.admits(v4(0), Some(ghost), t, LIMIT), "guessing names is limited too");
        assert!(log.admits(v4(0), Some(User::of(b"ghost2", None)), t, LIMIT));
        let long_a = [b'x'; 200];
        let mut long_b = long_a;
        long_b[150] = b'y';
        assert_eq!(User::of(&long_a, None), User::of(&long_b, None));
        assert_ne!(User::of(&long_a[..NAME_KEY_LEN - 1], None), User::of(&long_a, None));
        assert_eq!(User::of(b"alpha", Some(TenantId(1))), ALPHA, "tenants by id");
    }

    #[test]
    fn ipv6_counts_per_64_and_mapped_ipv4_as_ipv4() {
        let mut log = FailureLog::default();
        let t = 1_000_000;
        let host: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let same_64: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let next_64: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        for _ in 0..LIMIT.burst {
            log.record(host, None, t, LIMIT);
        }
        assert!(!log.admits(same_64, None, t, LIMIT));
        assert!(log.admits(next_64, None, t, LIMIT));
        let mapped: IpAddr = "::ffff:10.0.0.7".parse().unwrap();
        for _ in 0..LIMIT.burst {
            log.record(mapped, None, t, LIMIT);
        }
        assert!(!log.admits(v4(7), None, t, LIMIT));
    }

    #[test]
    fn the_maps_are_bounded_and_tenants_are_never_forgotten() {
        let mut log = FailureLog::default();
        let t = 1_000_000;
        for _ in 0..LIMIT.burst {
            log.record(v4(1), Some(ALPHA), t, LIMIT);
        }
        // A flood of addresses and made-up names, each failing once.
        for i in 0..(2 * ADDRESSES.max(USER_NAMES)) as u32 {
            let name = format!("made-up-{i}");
            let addr = IpAddr::from((0x0b00_0000 + i).to_be_bytes());
            log.record(addr, Some(User::of(name.as_bytes(), None)), t + 1, LIMIT);
        }
        assert!(log.by_addr.len() <= ADDRESSES && log.by_name.len() <= USER_NAMES, "bounded");
        assert!(log.user(ALPHA).is_some_and(|b| b.is_empty(t + 1, LIMIT)), "alpha stays spent");
        assert!(!log.by_addr.contains_key(&v4(1)), "the oldest address made room");
        // Once stale (full again, out of the window), entries are dropped first.
        let much_later = t + FAILURE_WINDOW_MS + 10_000;
        log.record(v4(2), None, much_later, LIMIT);
        assert_eq!(log.by_addr.len(), 1, "every stale address went at once");
    }

    #[test]
    fn buckets_saturate_instead_of_overflowing() {
        let tiny = FailureLimit { rate: 1e-300, burst: u32::MAX };
        let mut b = Bucket::FULL;
        b.take(u64::MAX / 1000, tiny);
        b.take(u64::MAX, tiny);
        assert!(!b.is_empty(u64::MAX, tiny), "saturated, not wrapped");
    }

    #[test]
    fn credentials_are_the_first_two_words() {
        assert_eq!(split_credentials(b"u p"), Some((&b"u"[..], &b"p"[..])));
        assert_eq!(split_credentials(b"u   p extra"), Some((&b"u"[..], &b"p"[..])));
        assert_eq!(split_credentials(b"u"), None);
        assert_eq!(split_credentials(b""), None);
    }
}
