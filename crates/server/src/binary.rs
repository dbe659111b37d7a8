//! memcached binary-protocol requests, run against the engine with the calls the text
//! protocol makes (`memcache.rs`), answered as memcached 1.6.18's `proto_bin.c` answers them:
//! the same statuses, error bodies, extras and CAS values, the opaque echoed, quiet commands
//! silent on success (a GETQ/GETKQ/GATQ/GATKQ hit is still sent, a miss is not).
//!
//! A connection speaks the binary protocol when its first byte is the request magic `0x80`;
//! every later request must start with it too, or the connection closes without a reply (see
//! `fridge_proto::binary` for the framing rules and what closes a connection).
//!
//! # Authentication
//! SASL with the `PLAIN` mechanism logs a connection in as a tenant, with the tenant's name
//! and password (`\0user\0password`; an authorization id, if given, must be the user).
//! Where logging in is required, every request but VERSION and the SASL ones is answered
//! `Auth failure.` and the connection closes (memcached `-S`); on a server without logins the
//! SASL commands are unknown, as in memcached without `-S`. PLAIN takes one step: AUTH with
//! no data answers "continue" and the credentials may follow in a STEP; a STEP is checked the
//! same way whether or not an AUTH came before it (memcached refuses a STEP without one). A
//! login refused by the failed-login limit (see the `auth` module) is `Auth failure.` with
//! the body `Too many failed login attempts.`; a right one past the tenant's
//! `max_connections` is status `0x86` (temporary failure) with the body `Too many
//! connections for this tenant.`, and so is a request over the tenant's request rate with
//! `Too many requests per second for this tenant.` (`crate::limits`).
//!
//! # Differences
//! - CAS values in replies to storage commands and INCR/DECR are read back just after the
//!   write (the engine's store does not return it), so a concurrent write to the same key may
//!   be what they report.
//! - STAT groups are the text protocol's (`stats <group>`), one packet per `STAT` line; a
//!   group the text protocol refuses (`ERROR`, `CLIENT_ERROR`, `SERVER_ERROR`) is `Not found`,
//!   as memcached does for an unknown group.
//! - VERSION answers fridge's version string, as the text `version` does.

use fridge_engine::{Condition, EngineError, Expiry, StoreOutcome, TenantId};
use fridge_proto::binary::{self as bin, Command, NO_CREATE, Opcode, Request, Status};
use fridge_proto::memcache;
use fridge_proto::number::{MAX_DIGITS, u64_digits};

use crate::auth::{self, Refused};
use crate::counter::{CounterError, Counters};
use crate::keyspace::{GENERIC, STRING};
use crate::notify::changed;
use crate::session::{Ctx, Session};
use crate::stats;
use crate::tenants::Login;

/// The only SASL mechanism offered.
const MECHANISM: &[u8] = b"PLAIN";
/// The body of a failed login refused by the failure limit.
const REFUSED: &[u8] = b"Too many failed login attempts.";
/// The body of a login past the tenant's `max_connections` (`crate::limits`).
const TENANT_FULL: &[u8] = b"Too many connections for this tenant.";

/// A memcached exptime as the binary protocol carries it (unsigned): up to `i32::MAX` as the
/// text protocol reads it, beyond that an absolute Unix time.
fn expiry(exptime: u32, now_ms: u64) -> Expiry {
    match i32::try_from(exptime) {
        Ok(e) => crate::memcache::expiry(e, now_ms),
        Err(_) => Expiry::At(u64::from(exptime) * 1000),
    }
}

fn expiry_ms(exptime: u32, now_ms: u64) -> Option<u64> {
    match expiry(exptime, now_ms) {
        Expiry::At(at) => Some(at),
        _ => None,
    }
}

/// One request's reply context: the opcode and opaque every packet echoes.
struct Reply<'o> {
    out: &'o mut Vec<u8>,
    opcode: Opcode,
    opaque: u32,
}

impl Reply<'_> {
    fn error(&mut self, status: Status) {
        bin::write_error(self.out, self.opcode as u8, status, self.opaque);
    }

    fn error_body(&mut self, status: Status, body: &[u8]) {
        let op = self.opcode as u8;
        bin::write_response(self.out, op, status, self.opaque, 0, b"", b"", body);
    }

    /// A success reply, left out for a quiet command.
    fn success(&mut self, cas: u64, extras: &[u8], value: &[u8]) {
        if !self.opcode.quiet() {
            let op = self.opcode as u8;
            bin::write_response(
                self.out,
                op,
                Status::Success,
                self.opaque,
                cas,
                extras,
                b"",
                value,
            );
        }
    }

    fn engine_error(&mut self, e: EngineError) {
        self.error(match e {
            EngineError::TooLarge => Status::TooLarge,
            EngineError::KeyTooLong => Status::InvalidArguments,
            EngineError::OutOfMemory | EngineError::TooManyWorkers => Status::OutOfMemory,
            // A Redis collection under the key: memcached's commands do not change it.
            EngineError::WrongKind => Status::NotStored,
            // memcached's status for a store it has no room for, with the tenant's reason.
            EngineError::KeyLimit => {
                return self.error_body(Status::OutOfMemory, b"Too many keys for this tenant.");
            }
            EngineError::ByteLimit => {
                return self.error_body(Status::OutOfMemory, b"Too many bytes for this tenant.");
            }
        });
    }
}

/// Runs one parsed request, appending its reply (if any) to `out`. Returns the bytes of
/// input still to drop after the request (the value of a refused oversize request).
pub(crate) fn execute(
    req: Request<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
) -> usize {
    // A Redis EXEC on any worker holds every gate (`crate::transaction`).
    let shared = ctx.shared;
    let _gate = shared.gates.enter(ctx.worker);
    let mut r = Reply { out, opcode: req.opcode, opaque: req.opaque };
    let sasl = matches!(req.opcode, Opcode::SaslListMechs | Opcode::SaslAuth | Opcode::SaslStep);
    if s.must_login(ctx.tenants) && !sasl && req.opcode != Opcode::Version {
        r.error(Status::AuthError);
        s.closing = true;
        return 0;
    }
    // Over its tenant's request rate: refused, not run (`crate::limits`).
    if s.rate_limited && !s.admit(ctx) {
        r.error_body(Status::TemporaryFailure, crate::limits::BINARY_THROTTLED);
        return 0;
    }
    let t = match s.user {
        Some(t) => t,
        None => ctx.tenants.route(key_of(&req.command)),
    };
    s.tenant = t;
    let now = ctx.shared.now_ms();
    match req.command {
        Command::Get { key, exptime } => get(&mut r, key, exptime, t, ctx, now),
        Command::Touch { key, exptime } => {
            stats::inc(&ctx.stats.cmd_touch);
            let touched =
                matches!(ctx.engine.set_expiry(t, key, expiry_ms(exptime, now)), Ok(Some(_)));
            if touched {
                changed(ctx, t, GENERIC, "expire", key);
            }
            let item = touched.then(|| ctx.engine.get(t, key, |i| (i.flags, i.cas))).flatten();
            match item {
                Some((flags, cas)) => {
                    stats::inc(&ctx.stats.touch_hits);
                    r.success(cas, &flags.to_be_bytes(), b"");
                }
                None => r.error(Status::KeyNotFound),
            }
        }
        Command::Store { key, flags, exptime, value } => {
            store(&mut r, req.cas, key, flags, exptime, value, t, ctx, now);
        }
        Command::Concat { key, value } => concat(&mut r, req.cas, key, value, t, ctx),
        Command::Delete { key } => delete(&mut r, req.cas, key, t, ctx),
        Command::Arithmetic { key, delta, initial, exptime } => {
            let decr = req.opcode.loud() == Opcode::Decrement;
            arithmetic(&mut r, req.cas, key, delta, decr, initial, exptime, t, ctx, now);
        }
        Command::Flush { exptime } => {
            stats::inc(&ctx.stats.cmd_flush);
            let delay_ms = match exptime {
                0 => 0,
                e => expiry_ms(e, now).map_or(0, |at| at.saturating_sub(now)),
            };
            ctx.engine.flush(t, delay_ms);
            if delay_ms == 0 {
                crate::notify::flushed(ctx, t, s.id);
            }
            r.success(0, b"", b"");
        }
        Command::Noop => r.success(0, b"", b""),
        Command::Version => {
            r.success(0, b"", crate::shared::MEMCACHED_VERSION.as_bytes());
        }
        Command::Quit => {
            r.success(0, b"", b"");
            s.closing = true;
        }
        Command::Stat { group } => stat(&mut r, group, s, ctx),
        Command::SaslListMechs | Command::SaslAuth { .. } if ctx.tenants.anonymous_admin => {
            r.error(Status::UnknownCommand);
        }
        Command::SaslListMechs => r.success(0, b"", MECHANISM),
        Command::SaslAuth { mechanism, data } => sasl_auth(&mut r, mechanism, data, s, ctx),
        Command::TooLarge { key, value_len } => {
            // memcached drops the old value when a SET is refused, so no stale data survives.
            if req.opcode.loud() == Opcode::Set && ctx.engine.delete(t, key) {
                changed(ctx, t, GENERIC, "del", key);
            }
            r.error(Status::TooLarge);
            return value_len;
        }
    }
    0
}

/// The key a request's tenant is routed by (empty for keyless requests: `default`).
fn key_of<'a>(c: &Command<'a>) -> &'a [u8] {
    match *c {
        Command::Get { key, .. }
        | Command::Touch { key, .. }
        | Command::Store { key, .. }
        | Command::Concat { key, .. }
        | Command::Delete { key }
        | Command::Arithmetic { key, .. }
        | Command::TooLarge { key, .. } => key,
        _ => b"",
    }
}

/// GET, GETK, GAT, GATK and their quiet forms: flags in the extras, the key for the K forms.
fn get(
    r: &mut Reply<'_>,
    key: &[u8],
    exptime: Option<u32>,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: u64,
) {
    let with_key = r.opcode.returns_key();
    if let Some(e) = exptime {
        stats::inc(&ctx.stats.cmd_touch);
        if !matches!(ctx.engine.set_expiry(t, key, expiry_ms(e, now)), Ok(Some(_))) {
            stats::tenant_lookups(ctx.stats, t, 0, 1);
            return miss(r, key, with_key);
        }
        stats::inc(&ctx.stats.touch_hits);
        changed(ctx, t, GENERIC, "expire", key);
    }
    let (op, opaque) = (r.opcode as u8, r.opaque);
    let out = &mut *r.out;
    let hit = ctx.engine.get(t, key, |item| {
        let key = if with_key { key } else { b"" };
        bin::write_response_header(
            out,
            op,
            Status::Success,
            opaque,
            item.cas,
            4,
            key.len(),
            item.value.len(),
        );
        out.extend_from_slice(&item.flags.to_be_bytes());
        out.extend_from_slice(key);
        out.extend_from_slice(item.value);
    });
    stats::tenant_lookups(ctx.stats, t, u64::from(hit.is_some()), u64::from(hit.is_none()));
    if hit.is_none() {
        miss(r, key, with_key);
    }
}

/// A GET-family miss: nothing for the quiet forms, the key alone for the K forms.
fn miss(r: &mut Reply<'_>, key: &[u8], with_key: bool) {
    if r.opcode.quiet() {
        return;
    }
    if with_key {
        let op = r.opcode as u8;
        bin::write_response(r.out, op, Status::KeyNotFound, r.opaque, 0, b"", key, b"");
    } else {
        r.error(Status::KeyNotFound);
    }
}

/// DELETE: with a request CAS, only the item that has it.
fn delete(r: &mut Reply<'_>, cas: u64, key: &[u8], t: TenantId, ctx: &mut Ctx<'_>) {
    if cas != 0 && ctx.engine.get(t, key, |i| i.cas).is_some_and(|now| now != cas) {
        return r.error(Status::KeyExists);
    }
    if ctx.engine.delete(t, key) {
        stats::inc(&ctx.stats.delete_hits);
        changed(ctx, t, GENERIC, "del", key);
        r.success(0, b"", b"");
    } else {
        stats::inc(&ctx.stats.delete_misses);
        r.error(Status::KeyNotFound);
    }
}

/// The item's CAS just after a write (see the module doc), for the reply.
fn cas_of(ctx: &mut Ctx<'_>, t: TenantId, key: &[u8]) -> u64 {
    ctx.engine.get(t, key, |i| i.cas).unwrap_or(0)
}

/// SET, ADD, REPLACE: a request CAS makes any of them a compare-and-swap (as memcached).
#[expect(clippy::too_many_arguments, reason = "the request's fields")]
fn store(
    r: &mut Reply<'_>,
    cas: u64,
    key: &[u8],
    flags: u32,
    exptime: u32,
    value: &[u8],
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: u64,
) {
    stats::inc(&ctx.stats.cmd_set);
    let command = r.opcode.loud();
    let condition = match (cas, command) {
        (0, Opcode::Add) => Condition::IfAbsent,
        (0, Opcode::Replace) => Condition::IfPresent,
        (0, _) => Condition::Always,
        (cas, _) => Condition::IfCas(cas),
    };
    let expiry = expiry(exptime, now);
    let result = ctx.engine.store(fridge_engine::Store {
        kind: fridge_engine::Kind::STRING,
        tenant: t,
        key,
        value,
        flags,
        expiry,
        condition,
        cas: None,
        state: 0,
    });
    if cas != 0 {
        stats::inc(match result {
            Ok(StoreOutcome::Stored) => &ctx.stats.cas_hits,
            Ok(StoreOutcome::Exists) => &ctx.stats.cas_badval,
            _ => &ctx.stats.cas_misses,
        });
    }
    match result {
        Ok(StoreOutcome::Stored) => {
            changed(ctx, t, STRING, "set", key);
            let cas = if r.opcode.quiet() { 0 } else { cas_of(ctx, t, key) };
            r.success(cas, b"", b"");
        }
        Ok(StoreOutcome::Exists) => r.error(Status::KeyExists),
        Ok(StoreOutcome::NotFound) => r.error(Status::KeyNotFound),
        // memcached: a refused ADD exists, a refused REPLACE is not found.
        Ok(StoreOutcome::NotStored) => r.error(match command {
            Opcode::Add => Status::KeyExists,
            Opcode::Replace => Status::KeyNotFound,
            _ => Status::NotStored,
        }),
        Err(e) => {
            if e == EngineError::TooLarge && command == Opcode::Set && ctx.engine.delete(t, key) {
                changed(ctx, t, GENERIC, "del", key);
            }
            r.engine_error(e);
        }
    }
}

/// APPEND, PREPEND: a missing key, or a result over the item size, is not stored.
fn concat(r: &mut Reply<'_>, cas: u64, key: &[u8], value: &[u8], t: TenantId, ctx: &mut Ctx<'_>) {
    stats::inc(&ctx.stats.cmd_set);
    if cas != 0 {
        match ctx.engine.get(t, key, |i| i.cas) {
            None => return r.error(Status::NotStored),
            Some(now) if now != cas => return r.error(Status::KeyExists),
            Some(_) => {}
        }
    }
    let prepend = r.opcode.loud() == Opcode::Prepend;
    match crate::memcache_common::append(ctx, t, key, value, prepend) {
        Ok(StoreOutcome::Stored) => {
            changed(ctx, t, STRING, "append", key);
            let cas = if r.opcode.quiet() { 0 } else { cas_of(ctx, t, key) };
            r.success(cas, b"", b"");
        }
        Ok(_) => r.error(Status::NotStored),
        Err(e) => r.engine_error(e),
    }
}

/// INCREMENT, DECREMENT: the new value as 8 bytes; a missing counter is created with
/// `initial` unless the expiration is [`NO_CREATE`].
#[expect(clippy::too_many_arguments, reason = "the request's fields")]
fn arithmetic(
    r: &mut Reply<'_>,
    cas: u64,
    key: &[u8],
    delta: u64,
    decr: bool,
    initial: u64,
    exptime: u32,
    t: TenantId,
    ctx: &mut Ctx<'_>,
    now: u64,
) {
    if cas != 0 {
        match ctx.engine.get(t, key, |i| i.cas) {
            Some(now_cas) if now_cas != cas => return r.error(Status::KeyExists),
            _ => {}
        }
    }
    let mut value = None;
    // A counter created by another client between the miss and the create is incremented.
    for _ in 0..3 {
        match ctx.engine.incr_u64(t, key, delta, decr) {
            Ok(Some(n)) => {
                stats::inc(&ctx.stats.incr_hits);
                changed(ctx, t, STRING, if decr { "decrby" } else { "incrby" }, key);
                value = Some(n);
                break;
            }
            Ok(None) if exptime == NO_CREATE => break,
            Ok(None) => {
                let mut buf = [0u8; MAX_DIGITS];
                let stored = ctx.engine.store(fridge_engine::Store {
                    kind: fridge_engine::Kind::STRING,
                    tenant: t,
                    key,
                    value: u64_digits(initial, &mut buf),
                    flags: 0,
                    expiry: expiry(exptime, now),
                    condition: Condition::IfAbsent,
                    cas: None,
                    state: 0,
                });
                match stored {
                    Ok(StoreOutcome::Stored) => {
                        changed(ctx, t, STRING, "set", key);
                        value = Some(initial);
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => return r.engine_error(e),
                }
            }
            Err(CounterError::Engine(e)) => return r.engine_error(e),
            Err(_) => return r.error(Status::DeltaBadValue),
        }
    }
    let Some(n) = value else {
        stats::inc(&ctx.stats.incr_misses);
        return r.error(Status::KeyNotFound);
    };
    let cas = if r.opcode.quiet() { 0 } else { cas_of(ctx, t, key) };
    r.success(cas, b"", &n.to_be_bytes());
}

/// STAT: the text protocol's `stats <group>`, one packet per `STAT name value` line, then
/// an empty packet.
fn stat(r: &mut Reply<'_>, group: &[u8], s: &mut Session, ctx: &mut Ctx<'_>) {
    let mut text = std::mem::take(ctx.scratch);
    text.clear();
    crate::memcache::execute_in_gate(memcache::Request::Stats { args: group }, &mut text, s, ctx);
    let (op, opaque) = (r.opcode as u8, r.opaque);
    let mut lines = text.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    // `ERROR` (an unknown group) or a `CLIENT_ERROR`/`SERVER_ERROR` line: memcached's
    // binary STAT answers those `Not found`.
    let is_error = |line: &[u8]| {
        line == b"ERROR" || line.starts_with(b"CLIENT_ERROR") || line.starts_with(b"SERVER_ERROR")
    };
    let found = lines.clone().next().is_some_and(|first| !is_error(first));
    if found {
        for line in lines.by_ref() {
            let Some(stat) = line.strip_prefix(b"STAT ") else { continue };
            let at = stat.iter().position(|&b| b == b' ').unwrap_or(stat.len());
            let (name, value) = (&stat[..at], stat.get(at + 1..).unwrap_or_default());
            bin::write_response(r.out, op, Status::Success, opaque, 0, b"", name, value);
        }
        bin::write_response(r.out, op, Status::Success, opaque, 0, b"", b"", b"");
    } else {
        r.error(Status::KeyNotFound);
    }
    *ctx.scratch = text;
}

/// SASL AUTH and STEP with `PLAIN` (see the module doc).
fn sasl_auth(r: &mut Reply<'_>, mechanism: &[u8], data: &[u8], s: &mut Session, ctx: &mut Ctx<'_>) {
    if mechanism != MECHANISM {
        let _ = auth::malformed(s, ctx);
        return r.error(Status::AuthError);
    }
    if data.is_empty() && r.opcode == Opcode::SaslAuth {
        return r.error_body(Status::AuthContinue, b"");
    }
    let mut parts = data.splitn(3, |&b| b == 0);
    let (authzid, user, password) = (parts.next(), parts.next(), parts.next());
    let credentials = match (authzid, user, password) {
        (Some(z), Some(u), Some(p)) if z.is_empty() || z == u => Some((u, p)),
        _ => None,
    };
    let Some((user, password)) = credentials else {
        return match auth::malformed(s, ctx) {
            Ok(()) => r.error(Status::AuthError),
            Err(_) => r.error_body(Status::AuthError, REFUSED),
        };
    };
    match auth::attempt(s, ctx, Some(user), password) {
        Ok(Login::Ok(_)) => {
            let op = r.opcode as u8;
            bin::write_response(
                r.out,
                op,
                Status::Success,
                r.opaque,
                0,
                b"",
                b"",
                b"Authenticated",
            );
        }
        Ok(Login::Denied | Login::NoDefaultPassword) => r.error(Status::AuthError),
        Err(Refused::Failures) => r.error_body(Status::AuthError, REFUSED),
        Err(Refused::Full) => r.error_body(Status::TemporaryFailure, TENANT_FULL),
    }
}
