//! Server commands: INFO, CONFIG, CLIENT, TIME and LASTSAVE.

use std::io::Write as _;
use std::sync::atomic::Ordering::Relaxed;

use fridge_engine::TenantId;
use fridge_engine::hotkeys::DEFAULT_WINDOW_MS as DEFAULT_HOT_WINDOW_MS;
use fridge_proto::number::{self, MAX_DIGITS, u64_digits};
use fridge_proto::resp::{
    self as r, Command, Version, write_array_header, write_bulk, write_error, write_integer,
    write_map_header, write_null, write_simple, write_wrong_arity,
};

use super::connection::{BAD_NAME, set_client_name};
use super::glob::glob_match_nocase;
use super::{COMMANDS, SYNTAX, Spec, no_permission, unknown_subcommand};
use crate::blocking::Unblock;
use crate::session::{Ctx, Session};
use crate::stats;

pub(super) fn info(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let sections: [&[u8]; 8] = std::array::from_fn(|i| cmd.get(i + 1).unwrap_or_default());
    let count = (cmd.len() - 1).min(sections.len());
    ctx.scratch.clear();
    let view = s.view(ctx.tenants);
    stats::write_info(ctx.scratch, ctx.shared, &sections[..count], &view, |row| {
        COMMANDS.get(row).map_or("", |c| c.name)
    });
    r::write_verbatim(out, s.version, b"txt", ctx.scratch);
}

pub(super) fn lastsave(
    _: &Command<'_>,
    out: &mut Vec<u8>,
    _: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    write_integer(out, (ctx.shared.started_ms / 1000) as i64);
}

pub(super) fn time(
    _: &Command<'_>,
    out: &mut Vec<u8>,
    _: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let now = ctx.shared.now_ms();
    write_array_header(out, 2);
    let mut buf = [0u8; MAX_DIGITS];
    write_bulk(out, u64_digits(now / 1000, &mut buf));
    write_bulk(out, u64_digits((now % 1000) * 1000, &mut buf));
}

/// Parameters `CONFIG GET` reports, with their values.
fn config_params(ctx: &Ctx<'_>, tenant: TenantId) -> Vec<(&'static str, String)> {
    let c = &ctx.shared.config;
    vec![
        ("maxmemory", ctx.shared.engine.memory_limit().to_string()),
        ("memory-includes-index", if c.memory_includes_index { "yes" } else { "no" }.into()),
        ("maxmemory-policy", super::maxmemory::policy(ctx, tenant).into()),
        ("maxclients", c.max_connections.to_string()),
        ("timeout", c.idle_timeout.to_string()),
        ("port", ctx.shared.resp_port.unwrap_or(ctx.shared.main_port).to_string()),
        ("bind", c.listen.clone()),
        ("databases", ctx.shared.databases.count().to_string()),
        ("save", String::new()),
        ("appendonly", "no".into()),
        ("proto-max-bulk-len", c.resp_limits().max_bulk_len.to_string()),
        ("client-query-buffer-limit", c.query_buffer_limit().to_string()),
        ("io-threads", ctx.shared.workers.len().to_string()),
        ("notify-keyspace-events", ctx.shared.notify.get()),
        ("tracking-table-max-keys", ctx.shared.tracking.max_keys().to_string()),
        ("slowlog-log-slower-than", ctx.shared.slowlog.slower_than().to_string()),
        ("slowlog-max-len", ctx.shared.slowlog.max_len().to_string()),
        ("latency-monitor-threshold", ctx.shared.latency.threshold().to_string()),
        ("busy-reply-threshold", ctx.shared.scripting.threshold_ms.load(Relaxed).to_string()),
        ("lua-time-limit", ctx.shared.scripting.threshold_ms.load(Relaxed).to_string()),
        ("latency-tracking", if ctx.shared.latency_tracking.on() { "yes" } else { "no" }.into()),
        ("latency-tracking-info-percentiles", ctx.shared.latency_tracking.percentiles_text()),
        ("loglevel", crate::logging::redis_level_name().into()),
        ("hotkeys-top-k", ctx.shared.hot_top_k.load(Relaxed).to_string()),
        ("tls-port", ctx.shared.tls_port.unwrap_or(0).to_string()),
        ("tls-cert-file", path_text(&c.tls_cert_file)),
        ("tls-key-file", path_text(&c.tls_key_file)),
        ("tls-ca-cert-file", path_text(&c.tls_ca_cert_file)),
        ("tls-auth-clients", c.tls_client_auth().name().into()),
        (
            "hotkeys-window-seconds",
            (ctx.shared.engine.hot_window().unwrap_or(DEFAULT_HOT_WINDOW_MS) / 1000).to_string(),
        ),
    ]
}

/// A file setting as `CONFIG GET` shows it: the path, or empty when unset.
fn path_text(path: &Option<std::path::PathBuf>) -> String {
    path.as_ref().map_or(String::new(), |p| p.display().to_string())
}

/// An integer setting's value for `CONFIG SET`, in `min..=max`; otherwise writes Redis's
/// error for `name` and answers `None`.
fn ranged(out: &mut Vec<u8>, name: &str, value: &[u8], min: i64, max: i64) -> Option<i64> {
    let n = super::int_arg(value);
    if n.is_some_and(|n| (min..=max).contains(&n)) {
        return n;
    }
    let _ = write!(out, "-ERR CONFIG SET failed (possibly related to argument '{name}') - ");
    match n {
        None => out.extend_from_slice(b"argument couldn't be parsed into an integer\r\n"),
        Some(_) => {
            let _ = write!(out, "argument must be between {min} and {max} inclusive\r\n");
        }
    }
    None
}

/// `latency-tracking-info-percentiles`'s value: percentiles between 0 and 100, separated by
/// spaces (none: an empty list); otherwise Redis's reason.
fn parse_percentiles(value: &[u8]) -> Result<Vec<f64>, &'static str> {
    const INVALID: &str = "Invalid latency-tracking-info-percentiles parameters";
    let text = std::str::from_utf8(value).map_err(|_| INVALID)?;
    let mut list = Vec::new();
    for word in text.split_ascii_whitespace() {
        let p: f64 = word.parse().map_err(|_| INVALID)?;
        if !(0.0..=100.0).contains(&p) {
            return Err(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
            );
        }
        list.push(p);
    }
    Ok(list)
}

/// `CONFIG SET` (the caller checked the admin): every parameter parsed before any is set,
/// so a refused `CONFIG SET` changes nothing.
fn config_set(cmd: &Command<'_>, out: &mut Vec<u8>, ctx: &mut Ctx<'_>) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    if cmd.len() < 4 || cmd.len() % 2 != 0 {
        return write_wrong_arity(out, b"config|set");
    }
    // Persistence settings are accepted only as they are: no snapshots, no append-only file.
    const AS_THEY_ARE: [(&str, &str); 2] = [("save", ""), ("appendonly", "no")];
    let (mut maxmemory, mut rank, mut latency) = (None, None, None);
    let (mut events, mut max_keys, mut slower, mut slow_len) = (None, None, None, None);
    let mut busy_ms = None;
    let (mut tracking, mut percentiles) = (None, None);
    let mut loglevel = None;
    let (mut hot_k, mut hot_window) = (None, None);
    for i in (2..cmd.len()).step_by(2) {
        let p = arg(i);
        if p.eq_ignore_ascii_case(b"notify-keyspace-events") {
            events = Some(arg(i + 1));
        } else if p.eq_ignore_ascii_case(b"tracking-table-max-keys") {
            match super::int_arg(arg(i + 1)).and_then(|n| usize::try_from(n).ok()) {
                Some(n) => max_keys = Some(n),
                None => {
                    out.extend_from_slice(
                        b"-ERR CONFIG SET failed (possibly related to argument \
                          'tracking-table-max-keys') - argument couldn't be parsed into an \
                          integer\r\n",
                    );
                    return;
                }
            }
        } else if p.eq_ignore_ascii_case(b"maxmemory") {
            match super::maxmemory::parse_maxmemory(out, arg(i + 1)) {
                Some(n) => maxmemory = Some(n),
                None => return,
            }
        } else if p.eq_ignore_ascii_case(b"maxmemory-policy") {
            match super::maxmemory::parse_policy(out, arg(i + 1)) {
                Some(r) => rank = Some(r),
                None => return,
            }
        } else if p.eq_ignore_ascii_case(b"slowlog-log-slower-than") {
            match ranged(out, "slowlog-log-slower-than", arg(i + 1), -1, i64::MAX) {
                Some(n) => slower = Some(n),
                None => return,
            }
        } else if p.eq_ignore_ascii_case(b"latency-monitor-threshold") {
            match ranged(out, "latency-monitor-threshold", arg(i + 1), 0, i64::MAX) {
                Some(n) => latency = Some(n as u64),
                None => return,
            }
        } else if p.eq_ignore_ascii_case(b"slowlog-max-len") {
            let max = crate::slowlog::MAX_LEN as i64;
            match ranged(out, "slowlog-max-len", arg(i + 1), 0, max) {
                Some(n) => slow_len = Some(n as usize),
                None => return,
            }
        } else if p.eq_ignore_ascii_case(b"busy-reply-threshold")
            || p.eq_ignore_ascii_case(b"lua-time-limit")
        {
            let name = if p.eq_ignore_ascii_case(b"lua-time-limit") {
                "lua-time-limit"
            } else {
                "busy-reply-threshold"
            };
            match ranged(out, name, arg(i + 1), 0, i64::MAX) {
                Some(n) => busy_ms = Some(n as u64),
                None => return,
            }
        } else if p.eq_ignore_ascii_case(b"latency-tracking") {
            tracking = Some(match arg(i + 1) {
                v if v.eq_ignore_ascii_case(b"yes") => true,
                v if v.eq_ignore_ascii_case(b"no") => false,
                _ => {
                    out.extend_from_slice(
                        b"-ERR CONFIG SET failed (possibly related to argument \
                          'latency-tracking') - argument must be 'yes' or 'no'\r\n",
                    );
                    return;
                }
            });
        } else if p.eq_ignore_ascii_case(b"hotkeys-top-k") {
            let max = crate::hotkeys::MAX_TOP_K as i64;
            match ranged(out, "hotkeys-top-k", arg(i + 1), 0, max) {
                Some(n) => hot_k = Some(n as usize),
                None => return,
            }
        } else if p.eq_ignore_ascii_case(b"hotkeys-window-seconds") {
            let max = crate::hotkeys::MAX_WINDOW_SECONDS as i64;
            match ranged(out, "hotkeys-window-seconds", arg(i + 1), 1, max) {
                Some(n) => hot_window = Some(n as u64 * 1000),
                None => return,
            }
        } else if p.eq_ignore_ascii_case(b"loglevel") {
            // Redis's four names only (this server's own names are for its command line).
            let v = std::str::from_utf8(arg(i + 1)).unwrap_or_default();
            match crate::logging::redis_level(v) {
                Some(level) => loglevel = Some(level),
                None => {
                    out.extend_from_slice(
                        b"-ERR CONFIG SET failed (possibly related to argument 'loglevel') - \
                          argument(s) must be one of the following: debug, verbose, notice, \
                          warning\r\n",
                    );
                    return;
                }
            }
        } else if p.eq_ignore_ascii_case(b"latency-tracking-info-percentiles") {
            match parse_percentiles(arg(i + 1)) {
                Ok(list) => percentiles = Some(list),
                Err(why) => {
                    let _ = write!(
                        out,
                        "-ERR CONFIG SET failed (possibly related to argument \
                         'latency-tracking-info-percentiles') - {why}\r\n"
                    );
                    return;
                }
            }
        } else if let Some((name, wanted)) =
            AS_THEY_ARE.iter().find(|(n, _)| p.eq_ignore_ascii_case(n.as_bytes()))
        {
            if !arg(i + 1).eq_ignore_ascii_case(wanted.as_bytes()) {
                let _ = write!(
                    out,
                    "-ERR CONFIG SET failed (possibly related to argument '{name}') - fridge has \
                     no persistence\r\n"
                );
                return;
            }
        } else if p.get(..4).is_some_and(|t| t.eq_ignore_ascii_case(b"tls-")) {
            // Redis changes its TLS settings at run time; fridge rereads the same files.
            out.extend_from_slice(b"-ERR CONFIG SET failed (possibly related to argument '");
            out.extend_from_slice(p);
            return out.extend_from_slice(
                b"') - fridge reads TLS settings at start; SIGHUP or CONFIG RELOAD rereads the \
                  certificate files\r\n",
            );
        } else {
            out.extend_from_slice(b"-ERR Unknown option or number of arguments for CONFIG SET - '");
            out.extend_from_slice(p);
            return out.extend_from_slice(b"'\r\n");
        }
    }
    // The two settings that can still fail: the first undone if the second fails, so
    // that a refused CONFIG SET changes nothing.
    let events_before = ctx.shared.notify.get();
    if let Some(value) = events {
        if crate::notify::configure(ctx.shared, value).is_err() {
            return write_error(out, crate::keyspace::INVALID);
        }
    }
    if let Some(bytes) = maxmemory {
        if !super::maxmemory::set_maxmemory(out, ctx, bytes) {
            if events.is_some() {
                let _ = crate::notify::configure(ctx.shared, events_before.as_bytes());
            }
            return;
        }
    }
    if let Some(r) = rank {
        super::maxmemory::set_policy(ctx, r);
    }
    if let Some(n) = max_keys {
        ctx.shared.tracking.set_max_keys(n);
    }
    if let Some(ms) = latency {
        ctx.shared.latency.set_threshold(ms);
    }
    if let Some(n) = slower {
        ctx.shared.slowlog.set_slower_than(n);
    }
    if let Some(ms) = busy_ms {
        ctx.shared.scripting.threshold_ms.store(ms, Relaxed);
    }
    if let Some(n) = slow_len {
        ctx.shared.watch.set_slow_len(&ctx.shared.slowlog, n);
    }
    if let Some(on) = tracking {
        ctx.shared.latency_tracking.set_on(on);
    }
    if let Some(list) = percentiles {
        ctx.shared.latency_tracking.set_percentiles(list);
    }
    if let Some(level) = loglevel {
        log::set_max_level(level);
    }
    if let Some(k) = hot_k {
        ctx.shared.hot_top_k.store(k, Relaxed);
    }
    if let Some(ms) = hot_window {
        ctx.shared.engine.set_hot_window(ms);
    }
    write_simple(out, b"OK");
}

pub(super) fn config(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    if super::help::answer(cmd, out, "config") {
        return;
    }
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let v = s.version;
    let sub = arg(1);
    if sub.eq_ignore_ascii_case(b"reload") {
        // fridge's own: reread the tenants from the configuration file (as SIGHUP does).
        if cmd.len() != 2 {
            return write_wrong_arity(out, b"config|reload");
        }
        if !s.is_admin(ctx.tenants) {
            return no_permission(out, b"config|reload");
        }
        match ctx.shared.reload() {
            Ok(table) => {
                *ctx.tenants = table;
                write_simple(out, b"OK");
            }
            Err(e) => {
                out.extend_from_slice(b"-ERR CONFIG RELOAD failed: ");
                out.extend(e.bytes().map(|c| if c == b'\r' || c == b'\n' { b' ' } else { c }));
                out.extend_from_slice(b"\r\n");
            }
        }
    } else if sub.eq_ignore_ascii_case(b"set") && !s.is_admin(ctx.tenants) {
        no_permission(out, b"config|set");
    } else if sub.eq_ignore_ascii_case(b"get") {
        if cmd.len() < 3 {
            return write_wrong_arity(out, b"config|get");
        }
        let params = config_params(ctx, s.tenant);
        let matched: Vec<&(&str, String)> = params
            .iter()
            .filter(|(name, _)| (2..cmd.len()).any(|i| glob_match_nocase(arg(i), name.as_bytes())))
            .collect();
        write_map_header(out, v, matched.len());
        for (name, value) in matched {
            write_bulk(out, name.as_bytes());
            write_bulk(out, value.as_bytes());
        }
    } else if sub.eq_ignore_ascii_case(b"set") {
        config_set(cmd, out, ctx);
    } else if sub.eq_ignore_ascii_case(b"resetstat") {
        if cmd.len() != 2 {
            return write_wrong_arity(out, b"config|resetstat");
        }
        if !s.is_admin(ctx.tenants) {
            return no_permission(out, b"config|resetstat");
        }
        crate::stats::reset(ctx.shared);
        ctx.shared.pubsub.disconnections.store(0, std::sync::atomic::Ordering::Relaxed);
        let workers = ctx.shared.workers.iter().map(|w| &w.latency_by_row);
        ctx.shared.latency_tracking.reset(workers);
        write_simple(out, b"OK");
    } else if sub.eq_ignore_ascii_case(b"rewrite") {
        if cmd.len() != 2 {
            return write_wrong_arity(out, b"config|rewrite");
        }
        if !s.is_admin(ctx.tenants) {
            return no_permission(out, b"config|rewrite");
        }
        // fridge's file (TOML, `--config`) holds none of the settings CONFIG SET changes
        // (they last until a restart): nothing to rewrite there.
        if ctx.shared.config.config_file.is_none() {
            write_error(out, b"ERR The server is running without a config file");
        } else {
            write_error(
                out,
                b"ERR Rewriting config file: fridge's configuration file holds no setting \
                  CONFIG SET changes",
            );
        }
    } else if cmd.len() < 2 {
        write_wrong_arity(out, b"config");
    } else {
        unknown_subcommand(out, sub, b"CONFIG");
    }
}

/// The name of a connection's last command, as `CLIENT LIST`'s `cmd` gives it (`get`,
/// `client|list`; `NULL` before its first).
fn last_command(e: &crate::shared::ClientEntry) -> &'static str {
    let row = e.pending.last_row.load(std::sync::atomic::Ordering::Relaxed);
    let name = |r: usize| COMMANDS.get(r).map_or("NULL", |c| c.name);
    row.checked_sub(1).and_then(|r| crate::cmdstats::row_name(r, name)).unwrap_or("NULL")
}

/// A connection's subscriptions: channels, patterns, shard channels.
fn subscription_counts(e: &crate::shared::ClientEntry) -> (usize, usize, usize) {
    let load = |a: &std::sync::atomic::AtomicUsize| a.load(std::sync::atomic::Ordering::Relaxed);
    let p = &e.pending;
    (load(&p.channels), load(&p.patterns), load(&p.shard_channels))
}

fn client_line(
    out: &mut Vec<u8>,
    id: u64,
    e: &crate::shared::ClientEntry,
    user: &str,
    now: u64,
    resp: u8,
) {
    let (sub, psub, ssub) = subscription_counts(e);
    let b = &e.pending.buffers;
    let _ = write!(
        out,
        "id={id} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={sub} \
         psub={psub} ssub={ssub} ",
        e.peer,
        e.local,
        b.fd.load(std::sync::atomic::Ordering::Relaxed),
        e.name,
        now.saturating_sub(e.created_ms) / 1000,
        now.saturating_sub(e.last_command_ms.load(std::sync::atomic::Ordering::Relaxed)) / 1000,
        b.flags(sub + psub + ssub > 0, e.no_evict),
        e.pending.db.load(std::sync::atomic::Ordering::Relaxed),
    );
    b.write_fields(out);
    let _ = writeln!(
        out,
        " tot-mem={} events={} cmd={} user={user} redir=-1 resp={resp} watch={}",
        e.memory,
        b.events(),
        last_command(e),
        b.watch.load(std::sync::atomic::Ordering::Relaxed),
    );
}

pub(super) fn client(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    if super::help::answer(cmd, out, "client") {
        return;
    }
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let n = cmd.len();
    if n < 2 {
        return write_wrong_arity(out, b"client");
    }
    let sub = arg(1);
    let is = |name: &[u8]| sub.eq_ignore_ascii_case(name);
    let now = ctx.shared.now_ms();
    let resp = if s.version == Version::Resp3 { 3 } else { 2 };
    if is(b"id") {
        write_integer(out, i64::try_from(s.id).unwrap_or(i64::MAX));
    } else if is(b"setname") {
        if n != 3 {
            return write_wrong_arity(out, b"client|setname");
        }
        if set_client_name(ctx, s.id, arg(2)) {
            write_simple(out, b"OK");
        } else {
            write_error(out, BAD_NAME);
        }
    } else if is(b"getname") {
        let clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
        match clients.get(&s.id).map(|e| e.name.as_str()) {
            Some(name) if !name.is_empty() => write_bulk(out, name.as_bytes()),
            _ => write_null(out, s.version),
        }
    } else if is(b"info") || is(b"list") {
        ctx.scratch.clear();
        {
            let view = s.view(ctx.tenants);
            let clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
            let mut ids: Vec<&u64> = clients.keys().collect();
            ids.sort_unstable();
            for id in ids {
                if is(b"info") && *id != s.id {
                    continue;
                }
                // A killed connection is gone for Redis at once; here its worker closes it
                // at its next turn: not listed meanwhile.
                if let Some(e) = clients.get(id).filter(|e| !e.killed && view.sees_client(*id, e)) {
                    let user = ctx.tenants.name(e.tenant).unwrap_or_default();
                    client_line(ctx.scratch, *id, e, user, now, resp);
                }
            }
        }
        r::write_verbatim(out, s.version, b"txt", ctx.scratch);
    } else if is(b"reply") {
        if n != 3 {
            return write_wrong_arity(out, b"client|reply");
        }
        let mode = arg(2);
        if mode.eq_ignore_ascii_case(b"on") {
            (s.reply_off, s.reply_skip) = (false, 0);
            write_simple(out, b"OK");
        } else if mode.eq_ignore_ascii_case(b"off") {
            s.reply_off = true;
        } else if mode.eq_ignore_ascii_case(b"skip") {
            // Its own reply is none; the next command's is dropped.
            s.reply_skip = 2;
        } else {
            write_error(out, SYNTAX);
        }
    } else if is(b"kill") {
        client_kill(cmd, out, s, ctx);
    } else if is(b"unblock") {
        client_unblock(cmd, out, s, ctx);
    } else if is(b"tracking") {
        super::tracking::client_tracking(cmd, out, s, ctx);
    } else if is(b"caching") {
        super::tracking::client_caching(cmd, out, s);
    } else if is(b"getredir") {
        super::tracking::client_getredir(out, s);
    } else if is(b"trackinginfo") {
        super::tracking::client_trackinginfo(out, s, ctx);
    } else if is(b"pause") || is(b"unpause") {
        client_pause(cmd, out, s, ctx);
    } else if is(b"no-evict") {
        // Redis 7.0's client eviction protection; SETINFO and NO-TOUCH are Redis 7.2's
        // (7.0.15 answers them as unknown subcommands, and so does fridge).
        if n != 3 {
            return write_wrong_arity(out, b"client|no-evict");
        }
        let on = match arg(2) {
            a if a.eq_ignore_ascii_case(b"on") => true,
            a if a.eq_ignore_ascii_case(b"off") => false,
            _ => return write_error(out, SYNTAX),
        };
        let mut clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = clients.get_mut(&s.id) {
            e.no_evict = on;
        }
        write_simple(out, b"OK");
    } else {
        unknown_subcommand(out, sub, b"CLIENT");
    }
}

/// `CLIENT PAUSE timeout [WRITE|ALL]` and `CLIENT UNPAUSE` (see `crate::pause`); the
/// admin's only, as Redis flags them `admin`.
fn client_pause(cmd: &Command<'_>, out: &mut Vec<u8>, s: &Session, ctx: &Ctx<'_>) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let n = cmd.len();
    let unpause = arg(1).eq_ignore_ascii_case(b"unpause");
    let full: &[u8] = if unpause { b"client|unpause" } else { b"client|pause" };
    if (unpause && n != 2) || (!unpause && n < 3) {
        return write_wrong_arity(out, full);
    }
    if n > 4 {
        out.extend_from_slice(b"-ERR unknown subcommand or wrong number of arguments for '");
        out.extend(
            arg(1).iter().take(128).map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
        );
        return out.extend_from_slice(b"'. Try CLIENT HELP.\r\n");
    }
    if !s.is_admin(ctx.tenants) {
        return no_permission(out, full);
    }
    let pause = &ctx.shared.pause;
    if unpause {
        pause.unpause();
        for w in 0..ctx.shared.workers.len() {
            ctx.shared.wake(w);
        }
        return write_simple(out, b"OK");
    }
    let all = match cmd.get(3) {
        None => true,
        Some(m) if m.eq_ignore_ascii_case(b"all") => true,
        Some(m) if m.eq_ignore_ascii_case(b"write") => false,
        Some(_) => return write_error(out, b"ERR CLIENT PAUSE mode must be WRITE or ALL"),
    };
    let now = ctx.shared.now_ms();
    let end = match super::int_arg(arg(2)) {
        None => return write_error(out, b"ERR timeout is not an integer or out of range"),
        Some(t) if t < 0 => return write_error(out, b"ERR timeout is negative"),
        Some(0) => 0,
        Some(t) => match (t as u64).checked_add(now).filter(|&e| e <= i64::MAX as u64) {
            Some(end) => end,
            None => return write_error(out, b"ERR timeout is out of range"),
        },
    };
    pause.pause(now, end, all);
    write_simple(out, b"OK");
}

/// `CLIENT UNBLOCK client-id [TIMEOUT|ERROR]` (Redis 7.0's errors, the reason checked
/// before the id): `1` if the client was blocked in a blocking pop, which then answers as at
/// its timeout or with `-UNBLOCKED`; `0` otherwise. As for `CLIENT KILL`, a client the
/// session may not see is no client at all. The blocked client's worker is woken at once
/// (`crate::blocking`).
fn client_unblock(cmd: &Command<'_>, out: &mut Vec<u8>, s: &Session, ctx: &Ctx<'_>) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    match cmd.len() {
        2 => return write_wrong_arity(out, b"client|unblock"),
        3 | 4 => {}
        _ => {
            out.extend_from_slice(b"-ERR unknown subcommand or wrong number of arguments for '");
            out.extend(
                arg(1).iter().take(128).map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
            );
            return out.extend_from_slice(b"'. Try CLIENT HELP.\r\n");
        }
    }
    let how = match cmd.get(3) {
        None => Unblock::Timeout,
        Some(r) if r.eq_ignore_ascii_case(b"timeout") => Unblock::Timeout,
        Some(r) if r.eq_ignore_ascii_case(b"error") => Unblock::Error,
        Some(_) => {
            return write_error(out, b"ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
        }
    };
    let Some(id) = super::int_arg(arg(2)) else {
        return write_error(out, b"ERR value is not an integer or out of range");
    };
    let visible = u64::try_from(id).is_ok_and(|id| {
        let view = s.view(ctx.tenants);
        let clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
        clients.get(&id).is_some_and(|e| !e.killed && view.sees_client(id, e))
    });
    let shared = ctx.shared;
    let unblocked = visible && shared.blocking.unblock(id as u64, how, |w| shared.wake(w));
    write_integer(out, i64::from(unblocked));
}

/// `CLIENT KILL`'s connection types: replication connections fridge has none of.
#[derive(Debug, Clone, Copy, PartialEq)]
enum KillType {
    Normal,
    Pubsub,
    Replication,
}

/// `CLIENT KILL`'s filters (`None`: any).
#[derive(Debug, Default)]
struct KillFilter<'a> {
    id: Option<u64>,
    addr: Option<&'a [u8]>,
    laddr: Option<&'a [u8]>,
    user: Option<TenantId>,
    max_age: Option<u64>,
    kind: Option<KillType>,
    skipme: bool,
}

impl KillFilter<'_> {
    fn matches(&self, id: u64, e: &crate::shared::ClientEntry, now_ms: u64) -> bool {
        let (sub, psub, ssub) = subscription_counts(e);
        let kind = if sub + psub + ssub > 0 { KillType::Pubsub } else { KillType::Normal };
        self.id.is_none_or(|want| want == id)
            && self.addr.is_none_or(|a| e.peer.to_string().as_bytes() == a)
            && self.laddr.is_none_or(|a| e.local.to_string().as_bytes() == a)
            && self.user.is_none_or(|t| t == e.tenant)
            // Redis 7.4's MAXAGE: older than `secs` seconds; 0, no filter.
            && self.max_age.is_none_or(|secs| {
                secs == 0 || now_ms.saturating_sub(e.created_ms) / 1000 > secs
            })
            && self.kind.is_none_or(|k| k == kind)
    }
}

fn client_kill(cmd: &Command<'_>, out: &mut Vec<u8>, s: &mut Session, ctx: &mut Ctx<'_>) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let n = cmd.len();
    // Old form: CLIENT KILL ip:port. New form: filters, all of which must match.
    let mut f = KillFilter { skipme: true, ..KillFilter::default() };
    if n == 3 {
        f.addr = Some(arg(2));
    } else if n >= 4 && n % 2 == 0 {
        for i in (2..n).step_by(2) {
            let (name, val) = (arg(i), arg(i + 1));
            let is = |w: &[u8]| name.eq_ignore_ascii_case(w);
            if is(b"id") {
                match number::parse_u64(val).filter(|&id| id > 0) {
                    Some(id) => f.id = Some(id),
                    None => return write_error(out, b"ERR client-id should be greater than 0"),
                }
            } else if is(b"addr") {
                f.addr = Some(val);
            } else if is(b"laddr") {
                f.laddr = Some(val);
            } else if is(b"user") {
                match ctx.tenants.find(val) {
                    Some(t) => f.user = Some(t),
                    None => {
                        out.extend_from_slice(b"-ERR No such user '");
                        out.extend(val.iter().take(128).map(|&c| if c < b' ' { b' ' } else { c }));
                        return out.extend_from_slice(b"'\r\n");
                    }
                }
            } else if is(b"skipme") && val.eq_ignore_ascii_case(b"yes") {
                f.skipme = true;
            } else if is(b"skipme") && val.eq_ignore_ascii_case(b"no") {
                f.skipme = false;
            } else if is(b"maxage") {
                match number::parse_u64(val) {
                    Some(secs) => f.max_age = Some(secs),
                    None => return write_error(out, SYNTAX),
                }
            } else if is(b"type") {
                let t = |w: &[u8]| val.eq_ignore_ascii_case(w);
                f.kind = Some(if t(b"normal") {
                    KillType::Normal
                } else if t(b"pubsub") {
                    KillType::Pubsub
                } else if t(b"master") || t(b"replica") || t(b"slave") {
                    KillType::Replication
                } else {
                    out.extend_from_slice(b"-ERR Unknown client type '");
                    out.extend(val.iter().take(128).map(|&c| if c < b' ' { b' ' } else { c }));
                    return out.extend_from_slice(b"'\r\n");
                });
            } else {
                return write_error(out, SYNTAX);
            }
        }
    } else {
        return write_error(out, SYNTAX);
    }
    let now = ctx.shared.now_ms();
    // A client the session may not see (another tenant's, or anyone else's for a client that
    // has not logged in) does not exist for it: `No such client`, or 0 killed.
    let mut killed = 0;
    let mut workers = Vec::new();
    {
        let view = s.view(ctx.tenants);
        let mut clients = ctx.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
        for (id, e) in clients.iter_mut() {
            let me = *id == s.id;
            if !e.killed
                && view.sees_client(*id, e)
                && f.matches(*id, e, now)
                && !(me && f.skipme && n != 3)
            {
                killed += 1;
                if me {
                    s.closing = true;
                } else {
                    e.killed = true;
                    workers.push(e.worker);
                }
            }
        }
    }
    for w in workers {
        if let Some(flag) = ctx.shared.kill_pending.get(w) {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        ctx.shared.wake(w);
    }
    if n == 3 {
        if killed == 0 {
            write_error(out, b"ERR No such client");
        } else {
            write_simple(out, b"OK");
        }
    } else {
        write_integer(out, killed);
    }
}
