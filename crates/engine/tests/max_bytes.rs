//! A tenant's byte quota (`TenantPolicy::max_bytes`): a write that would take the tenant's
//! live bytes past it is refused with `EngineError::ByteLimit` and changes nothing — never
//! more bytes than the quota, not even with writers racing — while writes that do not grow
//! the tenant, deletes and other tenants are unaffected. A lowered quota removes nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use fridge_engine::{
    CleanerMode, Engine, EngineConfig, EngineError, ManualClock, Store, StoreOutcome, TenantId,
    TenantPolicy, Update,
};

const CAPPED: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);

fn engine(mode: CleanerMode) -> Engine {
    let config = EngineConfig {
        max_memory: 64 << 20,
        segment_size: 256 << 10,
        max_item_size: 64 << 10,
        cleaner: mode,
        ..EngineConfig::default()
    };
    Engine::with_clock(config, Arc::new(ManualClock::new(1_000_000))).unwrap()
}

fn quota(engine: &Engine, tenant: TenantId, max_bytes: Option<u64>) {
    engine.set_tenant_policy(tenant, TenantPolicy { max_bytes, ..TenantPolicy::default() });
}

fn key(i: u64) -> [u8; 8] {
    i.to_le_bytes()
}

#[test]
fn writes_past_the_quota_are_refused_and_writes_that_do_not_grow_work() {
    let engine = engine(CleanerMode::Inline);
    let mut w = engine.worker().unwrap();
    // Measure one item's bytes (header, key, value) on another tenant.
    w.store(Store::new(OTHER, &key(0), &[7; 100])).unwrap();
    let item = engine.tenant_stats(OTHER).bytes;
    quota(&engine, CAPPED, Some(10 * item + item / 2));
    for i in 0..15u64 {
        let stored = w.store(Store::new(CAPPED, &key(i), &[1; 100]));
        let want = if i < 10 { Ok(StoreOutcome::Stored) } else { Err(EngineError::ByteLimit) };
        assert_eq!(stored, want, "key {i}");
        assert_eq!(w.store(Store::new(OTHER, &key(i + 1), &[1; 100])), Ok(StoreOutcome::Stored));
    }
    let s = engine.tenant_stats(CAPPED);
    assert_eq!((s.items, s.bytes, s.rejected_bytes), (10, 10 * item, 5));
    assert!(!w.contains(CAPPED, &key(12)), "a refused write stores nothing");

    // At the quota: an overwrite of the same size or smaller works; a larger one by more
    // than the room left does not, and leaves the old value.
    assert_eq!(w.store(Store::new(CAPPED, &key(3), &[2; 100])), Ok(StoreOutcome::Stored));
    assert_eq!(w.store(Store::new(CAPPED, &key(4), &[2; 10])), Ok(StoreOutcome::Stored));
    assert_eq!(engine.tenant_stats(CAPPED).bytes, 10 * item - 90);
    assert_eq!(
        w.store(Store::new(CAPPED, &key(5), &vec![3; 100 + 91 + item as usize / 2])),
        Err(EngineError::ByteLimit)
    );
    assert_eq!(w.get(CAPPED, &key(5), |i| i.value.len()), Some(100), "the old value stays");
    assert_eq!(w.store(Store::new(CAPPED, &key(5), &[3; 150])), Ok(StoreOutcome::Stored));
    // Updates are counted too: an append that grows past the quota is refused.
    let grown = w.append(CAPPED, &key(6), &[4; 1000], false, true);
    assert_eq!(grown, Err(EngineError::ByteLimit));
    let incr = w.update(CAPPED, &key(600), |_, buf| {
        buf.extend_from_slice(&[5; 2000]);
        Ok(Update::Write { flags: 0, expires_at_ms: None, result: () })
    });
    assert_eq!(incr, Err(EngineError::ByteLimit));
    assert!(engine.tenant_stats(CAPPED).bytes <= 10 * item + item / 2);

    // A delete makes room; a lowered quota removes nothing and refuses growth, while a
    // write that shrinks the tenant still works.
    assert!(w.delete(CAPPED, &key(0)));
    assert_eq!(w.store(Store::new(CAPPED, &key(20), &[1; 100])), Ok(StoreOutcome::Stored));
    quota(&engine, CAPPED, Some(item));
    let before = engine.tenant_stats(CAPPED);
    assert_eq!(before.items, 10, "nothing removed");
    assert_eq!(w.store(Store::new(CAPPED, &key(21), b"x")), Err(EngineError::ByteLimit));
    assert_eq!(w.store(Store::new(CAPPED, &key(1), b"x")), Ok(StoreOutcome::Stored), "shrinks");
    quota(&engine, CAPPED, None);
    assert_eq!(w.store(Store::new(CAPPED, &key(21), b"x")), Ok(StoreOutcome::Stored));
}

#[test]
fn racing_writers_never_take_a_tenant_past_its_quota() {
    let engine = engine(CleanerMode::Background);
    let mut probe = engine.worker().unwrap();
    probe.store(Store::new(OTHER, &key(0), &[0; 64])).unwrap();
    let item = engine.tenant_stats(OTHER).bytes;
    let max = 500 * item;
    quota(&engine, CAPPED, Some(max));
    let stop = AtomicBool::new(false);
    let seen_over = AtomicU64::new(0);
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..4u64)
            .map(|t| {
                let engine = &engine;
                s.spawn(move || {
                    let mut w = engine.worker().unwrap();
                    for i in 0..5_000u64 {
                        // New keys, overwrites of growing and shrinking size, and deletes.
                        let k = key((t << 32) | (i % 900));
                        let len = 32 + (i * 7 + t) as usize % 64;
                        if i % 5 == 4 {
                            w.delete(CAPPED, &k);
                            continue;
                        }
                        let r = w.store(Store::new(CAPPED, &k, &vec![1; len]));
                        let fine =
                            matches!(r, Ok(StoreOutcome::Stored) | Err(EngineError::ByteLimit));
                        assert!(fine, "{r:?}");
                    }
                })
            })
            .collect();
        let watcher = s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let b = engine.tenant_stats(CAPPED).bytes;
                seen_over.fetch_max(b.saturating_sub(max), Ordering::Relaxed);
            }
        });
        for h in writers {
            h.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        watcher.join().unwrap();
    });
    let s = engine.tenant_stats(CAPPED);
    assert!(s.bytes <= max, "{} > {max}", s.bytes);
    assert!(s.rejected_bytes > 0, "the quota was reached");
    // An overwrite's new copy is counted before its old one goes: the count may pass the
    // quota by at most what the writers replace at that moment (4 items), never more.
    let over = seen_over.load(Ordering::Relaxed);
    assert!(over <= 4 * (item + 64), "passed the quota by {over} bytes");
}
