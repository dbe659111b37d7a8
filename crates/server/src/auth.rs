//! Logging in: what both protocols share (recording a login, pausing a connection after a
//! failure) and memcached's text-protocol authentication.
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
//! | `set` whose data has fewer than two words | `CLIENT_ERROR bad authentication token format` |
//! | `set` whose data block does not end in `\r\n` | `CLIENT_ERROR bad command line termination` |
//! | anything else | `CLIENT_ERROR unauthenticated` |
//!
//! One difference: `quit` closes the connection (memcached answers it `unauthenticated`).
//!
//! A failed login (wrong pair or malformed token) pauses its connection: nothing more of it is
//! read, run or written — the failure's own reply included — until a delay has passed that
//! starts at `auth_failure_delay` and doubles with each further failure (at most 64 times).
//! The worker serves its other connections meanwhile. Failures are counted per connection and
//! per client address (over the last [`FAILURE_WINDOW_MS`]), the larger count deciding, so
//! reconnecting after each try does not reset the delay.

use std::collections::HashMap;
use std::net::IpAddr;

use fridge_engine::TenantId;

use crate::stats;
use crate::worker::{Ctx, Session};

/// Largest memcached login data block read; a larger one is refused and skipped.
const MAX_LOGIN_DATA: usize = 1024;
/// Doublings of the failure delay at most.
const MAX_DELAY_SHIFT: u32 = 6;
/// An address's failures are forgotten after this long without one.
pub(crate) const FAILURE_WINDOW_MS: u64 = 10 * 60 * 1000;
/// Addresses remembered at most (the log is emptied of stale entries, or cleared, beyond).
const FAILURE_LOG_LEN: usize = 4096;

/// Recent failed logins per client address: (failures, time of the last one in ms).
#[derive(Debug, Default)]
pub(crate) struct FailureLog {
    by_addr: HashMap<IpAddr, (u32, u64)>,
}

impl FailureLog {
    /// Counts a failure from `addr` at `now`; returns the address's recent failures.
    fn record(&mut self, addr: IpAddr, now: u64) -> u32 {
        if self.by_addr.len() >= FAILURE_LOG_LEN && !self.by_addr.contains_key(&addr) {
            self.by_addr.retain(|_, (_, last)| now.saturating_sub(*last) < FAILURE_WINDOW_MS);
            if self.by_addr.len() >= FAILURE_LOG_LEN {
                self.by_addr.clear();
            }
        }
        let e = self.by_addr.entry(addr).or_insert((0, now));
        if now.saturating_sub(e.1) >= FAILURE_WINDOW_MS {
            e.0 = 0;
        }
        e.0 = e.0.saturating_add(1);
        e.1 = now;
        e.0
    }
}

/// Records a successful login: the session now runs as `tenant`.
pub(crate) fn logged_in(s: &mut Session, ctx: &Ctx<'_>, tenant: TenantId) {
    stats::inc(&ctx.stats.auth_cmds);
    s.user = Some(tenant);
    s.tenant = tenant;
    s.auth_failures = 0;
    let mut clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = clients.get_mut(&s.id) {
        e.tenant = tenant;
    }
}

/// Records a failed login: counts it and pauses the connection.
pub(crate) fn failed(s: &mut Session, ctx: &Ctx<'_>) {
    stats::inc(&ctx.stats.auth_cmds);
    stats::inc(&ctx.stats.auth_errors);
    s.auth_failures = s.auth_failures.saturating_add(1);
    let now = ctx.shared.now_ms();
    let from_addr = {
        let mut log = ctx.shared.auth_failures.lock().unwrap_or_else(|e| e.into_inner());
        log.record(s.peer, now)
    };
    let shift = (s.auth_failures.max(from_addr) - 1).min(MAX_DELAY_SHIFT);
    let delay = ctx.tenants.auth_failure_delay_ms.saturating_mul(1 << shift);
    if delay > 0 {
        s.paused_until_ms = now.saturating_add(delay).max(1);
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
    let size = (first == b"set")
        .then(|| w.nth(3))
        .flatten()
        .and_then(|s| std::str::from_utf8(s).ok()?.parse::<u32>().ok());
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

    #[test]
    fn failures_are_remembered_per_address_for_a_while() {
        let mut log = FailureLog::default();
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        assert_eq!(log.record(a, 1000), 1);
        assert_eq!(log.record(a, 2000), 2);
        assert_eq!(log.record(b, 2000), 1);
        assert_eq!(log.record(a, 2000 + FAILURE_WINDOW_MS), 1, "forgotten after the window");
        for i in 0..FAILURE_LOG_LEN as u32 {
            log.record(IpAddr::from(i.to_be_bytes()), 5000);
        }
        assert!(log.by_addr.len() <= FAILURE_LOG_LEN, "bounded");
    }

    #[test]
    fn credentials_are_the_first_two_words() {
        assert_eq!(split_credentials(b"u p"), Some((&b"u"[..], &b"p"[..])));
        assert_eq!(split_credentials(b"u   p extra"), Some((&b"u"[..], &b"p"[..])));
        assert_eq!(split_credentials(b"u"), None);
        assert_eq!(split_credentials(b""), None);
    }
}
