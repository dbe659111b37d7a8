//! Hot keys for operators: the engine's counts (`fridge_engine::hotkeys`: a count-min sketch
//! and exact counters over the reference pools, in the metadata worker, named from sampled
//! references) shown as
//! Valkey 9.2's `HOTKEYS GET` (`resp/hotkeys.rs`), memcached `stats hotkeys`, the admin
//! port's `/hotkeys` and the dashboard.
//!
//! Every view reads the same report: the last completed window (`hotkeys-window-seconds`,
//! 10 s unless set), or the live one before any window completed, its keys most referenced
//! first, at most `hotkeys-top-k` of them (Valkey's setting; 0 turns the views off). A
//! tenant's connection sees its own keys; the admin sees every tenant's. `db` is the
//! database the key's data is in (the engine's; it differs from the client's number only
//! after a `SWAPDB`). `qps` is a key's
//! references (reads that hit, and stores) over the window's length. Each key's `freq` is
//! `OBJECT FREQ`'s answer, read from the hitmap when the report is written, so the two agree.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use fridge_engine::{HotKeys, TenantId};
use fridge_proto::memcache as mc;

use crate::session::{Ctx, Session};
use crate::shared::Shared;

/// Keys a report shows unless `hotkeys-top-k` says otherwise (Valkey's and Redis's 10).
pub(crate) const DEFAULT_TOP_K: usize = 10;
/// The most a report can show: the engine's counters.
pub(crate) const MAX_TOP_K: usize = fridge_engine::hotkeys::CAPACITY;
/// The longest window `hotkeys-window-seconds` accepts (an hour).
pub(crate) const MAX_WINDOW_SECONDS: u64 = 3600;

/// The report `tenant` sees (`None`: every tenant's keys), or `None` when the views are off
/// (`hotkeys-top-k 0`) or the engine counts no hot keys (its inline cleaner without a hitmap).
pub(crate) fn report(shared: &Shared, tenant: Option<TenantId>) -> Option<HotKeys> {
    let k = shared.hot_top_k.load(Ordering::Relaxed);
    if k == 0 {
        return None;
    }
    let mut r = shared.engine.hot_keys()?;
    r.keys.retain(|h| tenant.is_none_or(|t| h.tenant == t));
    r.keys.truncate(k);
    Some(r)
}

/// The tenant a session's views are limited to: its own, or none for the admin.
pub(crate) fn viewer(s: &Session, ctx: &Ctx<'_>) -> Option<TenantId> {
    (!s.is_admin(ctx.tenants)).then_some(s.tenant)
}

/// A key's `OBJECT FREQ` (its hitmap zone) in its engine database, if it is still there.
pub(crate) fn freq(ctx: &mut Ctx<'_>, tenant: TenantId, db: u8, key: &[u8]) -> Option<u8> {
    let selected = ctx.engine.db();
    ctx.engine.select(db);
    let zone = ctx.engine.inspect(tenant, key).and_then(|i| i.zone);
    ctx.engine.select(selected);
    zone
}

/// `stats hotkeys`: the window (`window_ms`, `references`, `live`) and per key, by rank from
/// 1, `<rank>:key` (URI-encoded, as `watch` writes keys), `:tenant`, `:db`, `:count`, `:qps`
/// and `:freq` (absent when the key is gone). Off: only `END`.
pub(crate) fn write_memcache(out: &mut Vec<u8>, s: &Session, ctx: &mut Ctx<'_>) {
    let Some(r) = report(ctx.shared, viewer(s, ctx)) else { return };
    mc::write_stat_u64(out, b"window_ms", r.duration_ms);
    mc::write_stat_u64(out, b"references", r.references);
    mc::write_stat_u64(out, b"live", u64::from(r.live));
    let tenants = ctx.shared.tenants();
    for (rank, h) in (1..).zip(&r.keys) {
        let mut key = Vec::with_capacity(h.key.len());
        crate::watch::uri_encode(&mut key, &h.key);
        mc::write_stat(out, format!("{rank}:key").as_bytes(), &key);
        let name = tenants.name(h.tenant).unwrap_or("?");
        mc::write_stat(out, format!("{rank}:tenant").as_bytes(), name.as_bytes());
        mc::write_stat_u64(out, format!("{rank}:db").as_bytes(), u64::from(h.db));
        mc::write_stat_u64(out, format!("{rank}:count").as_bytes(), h.count);
        mc::write_stat_u64(out, format!("{rank}:qps").as_bytes(), r.per_second(h.count));
        if let Some(z) = freq(ctx, h.tenant, h.db, &h.key) {
            mc::write_stat_u64(out, format!("{rank}:freq").as_bytes(), u64::from(z));
        }
    }
}

/// `/hotkeys` (and `/stats.json`'s `hotkeys`): `{"window_ms":…,"references":…,"live":…,
/// "keys":[{"tenant":…,"db":…,"key":…,"count":…,"qps":…}]}`, every tenant's keys; a key
/// that is not UTF-8 has its other bytes replaced (U+FFFD). `null` when off.
pub(crate) fn write_json(out: &mut String, shared: &Shared) {
    let Some(r) = report(shared, None) else {
        out.push_str("null");
        return;
    };
    let tenants = shared.tenants();
    let _ = write!(
        out,
        "{{\"window_ms\":{},\"references\":{},\"live\":{},\"keys\":[",
        r.duration_ms, r.references, r.live
    );
    for (i, h) in r.keys.iter().enumerate() {
        out.push_str(if i == 0 { "{\"tenant\":" } else { ",{\"tenant\":" });
        crate::logging::push_json_string(out, tenants.name(h.tenant).unwrap_or("?"));
        let _ = write!(out, ",\"db\":{},\"key\":", h.db);
        crate::logging::push_json_string(out, &String::from_utf8_lossy(&h.key));
        let _ = write!(out, ",\"count\":{},\"qps\":{}}}", h.count, r.per_second(h.count));
    }
    out.push_str("]}");
}
