//! A tenant's key-count cap (`TenantPolicy::max_keys`): a write that would add a key past it
//! is refused with `EngineError::KeyLimit`, never more keys than the cap (not even for a
//! moment, with writers racing), while overwrites and deletes always work and other tenants
//! are unaffected. A lowered cap removes nothing; a raised one lets more in.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use fridge_engine::{
    CleanerMode, Clock, Condition, Engine, EngineConfig, EngineError, Expiry, ManualClock, Store,
    StoreOutcome, TenantId, TenantPolicy, Update,
};

const CAPPED: TenantId = TenantId(1);
const OTHER: TenantId = TenantId(2);

fn engine(clock: &ManualClock, mode: CleanerMode) -> Engine {
    let config = EngineConfig {
        max_memory: 64 << 20,
        segment_size: 256 << 10,
        max_item_size: 64 << 10,
        cleaner: mode,
        ..EngineConfig::default()
    };
    Engine::with_clock(config, Arc::new(clock.clone())).unwrap()
}

fn cap(engine: &Engine, tenant: TenantId, max_keys: Option<u64>) {
    engine.set_tenant_policy(tenant, TenantPolicy { max_keys, ..TenantPolicy::default() });
}

fn key(i: u64) -> [u8; 8] {
    i.to_le_bytes()
}

#[test]
fn new_keys_past_the_cap_are_refused_and_overwrites_and_deletes_work() {
    let clock = ManualClock::new(1_000_000);
    let engine = engine(&clock, CleanerMode::Inline);
    cap(&engine, CAPPED, Some(100));
    let mut w = engine.worker().unwrap();
    for i in 0..150u64 {
        let stored = w.store(Store::new(CAPPED, &key(i), b"v"));
        let other = w.store(Store::new(OTHER, &key(i), b"v"));
        assert_eq!(other, Ok(StoreOutcome::Stored), "another tenant is not capped");
        if i < 100 {
            assert_eq!(stored, Ok(StoreOutcome::Stored), "key {i}");
        } else {
            assert_eq!(stored, Err(EngineError::KeyLimit), "key {i}");
        }
    }
    let stats = engine.tenant_stats(CAPPED);
    assert_eq!((stats.items, stats.rejected_keys), (100, 50));
    assert_eq!(engine.tenant_stats(OTHER).items, 150);
    assert!(!w.contains(CAPPED, &key(120)), "a refused key was not stored");

    // At the cap: overwrites work, by every path; only new keys are refused.
    let (k1, k8, k500) = (key(1), key(8), key(500));
    assert_eq!(w.store(Store::new(CAPPED, &key(7), b"new")), Ok(StoreOutcome::Stored));
    assert_eq!(w.get(CAPPED, &key(7), |i| i.value.to_vec()), Some(b"new".to_vec()));
    assert_eq!(w.append(CAPPED, &key(7), b"er", false, true), Ok(Some(5)));
    let add = Store { condition: Condition::IfAbsent, ..Store::new(CAPPED, &k8, b"x") };
    assert_eq!(w.store(add), Ok(StoreOutcome::NotStored), "add of a present key: its own answer");
    let replace = Store { condition: Condition::IfPresent, ..Store::new(CAPPED, &k500, b"x") };
    assert_eq!(w.store(replace), Ok(StoreOutcome::NotStored), "replace of a missing key");
    let add_new = Store { condition: Condition::IfAbsent, ..Store::new(CAPPED, &k500, b"x") };
    assert_eq!(w.store(add_new), Err(EngineError::KeyLimit));
    // Updates that would create the key (Redis APPEND, INCR) are refused too; one that
    // leaves a missing key missing (memcached append) is not a write.
    assert_eq!(w.append(CAPPED, &key(501), b"x", false, true), Err(EngineError::KeyLimit));
    assert_eq!(w.append(CAPPED, &key(501), b"x", false, false), Ok(None));
    let incr = w.update(CAPPED, &key(502), |_, buf| {
        buf.extend_from_slice(b"1");
        Ok(Update::Write { flags: 0, expires_at_ms: None, result: () })
    });
    assert_eq!(incr, Err(EngineError::KeyLimit));
    assert_eq!(engine.tenant_stats(CAPPED).items, 100);

    // A delete frees a place for one new key.
    assert!(w.delete(CAPPED, &key(0)));
    assert_eq!(w.store(Store::new(CAPPED, &key(200), b"v")), Ok(StoreOutcome::Stored));
    assert_eq!(w.store(Store::new(CAPPED, &key(201), b"v")), Err(EngineError::KeyLimit));

    // A write over an expired item of its key replaces it (no key is added).
    let expiring =
        Store { expiry: Expiry::At(clock.now_ms() + 1_000), ..Store::new(CAPPED, &k1, b"v") };
    assert_eq!(w.store(expiring), Ok(StoreOutcome::Stored));
    clock.advance(2_000);
    assert_eq!(w.store(Store::new(CAPPED, &key(1), b"again")), Ok(StoreOutcome::Stored));
    assert_eq!(engine.tenant_stats(CAPPED).items, 100);
    engine.validate();
}

#[test]
fn a_lowered_cap_removes_nothing_and_a_raised_one_lets_more_in() {
    let clock = ManualClock::new(1_000_000);
    let engine = engine(&clock, CleanerMode::Inline);
    let mut w = engine.worker().unwrap();
    for i in 0..100u64 {
        w.store(Store::new(CAPPED, &key(i), b"v")).unwrap();
    }
    cap(&engine, CAPPED, Some(50));
    assert_eq!(engine.tenant_policy(CAPPED).max_keys, Some(50));
    assert_eq!(engine.tenant_stats(CAPPED).items, 100, "nothing is removed");
    assert_eq!(w.store(Store::new(CAPPED, &key(100), b"v")), Err(EngineError::KeyLimit));
    assert_eq!(w.store(Store::new(CAPPED, &key(3), b"w")), Ok(StoreOutcome::Stored));
    // Under the cap again only once enough keys have gone.
    for i in 0..50u64 {
        assert!(w.delete(CAPPED, &key(i)));
    }
    assert_eq!(w.store(Store::new(CAPPED, &key(100), b"v")), Err(EngineError::KeyLimit));
    assert!(w.delete(CAPPED, &key(50)));
    assert_eq!(w.store(Store::new(CAPPED, &key(100), b"v")), Ok(StoreOutcome::Stored));
    cap(&engine, CAPPED, Some(60));
    for i in 101..=110u64 {
        assert_eq!(w.store(Store::new(CAPPED, &key(i), b"v")), Ok(StoreOutcome::Stored));
    }
    assert_eq!(w.store(Store::new(CAPPED, &key(111), b"v")), Err(EngineError::KeyLimit));
    cap(&engine, CAPPED, None);
    assert_eq!(w.store(Store::new(CAPPED, &key(111), b"v")), Ok(StoreOutcome::Stored));
    assert_eq!(engine.tenant_stats(CAPPED).items, 61);
    engine.validate();
}

/// Writers race for the last places: the tenant's key count never passes the cap, not even
/// for a moment (a watcher reads it throughout), and ends exactly at it.
#[test]
fn racing_writers_never_take_the_tenant_past_its_cap() {
    const CAP: u64 = 2_000;
    const THREADS: u64 = 4;
    const KEYS_PER_THREAD: u64 = 3_000;
    let clock = ManualClock::new(1_000_000);
    let engine = engine(&clock, CleanerMode::Background);
    cap(&engine, CAPPED, Some(CAP));
    let done = AtomicBool::new(false);
    let (stored, refused) = (AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut most = 0;
            while !done.load(Ordering::Relaxed) {
                most = most.max(engine.tenant_stats(CAPPED).items);
            }
            most
        });
        let writers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (engine, stored, refused) = (&engine, &stored, &refused);
                s.spawn(move || {
                    let mut w = engine.worker().unwrap();
                    for i in 0..KEYS_PER_THREAD {
                        // Distinct keys per thread, and an overwrite of an earlier one now
                        // and then (which must always work).
                        match w.store(Store::new(CAPPED, &key(t << 32 | i), b"value")) {
                            Ok(StoreOutcome::Stored) => stored.fetch_add(1, Ordering::Relaxed),
                            Err(EngineError::KeyLimit) => refused.fetch_add(1, Ordering::Relaxed),
                            other => panic!("{other:?}"),
                        };
                        if i % 8 == 0 && w.contains(CAPPED, &key(t << 32)) {
                            let over = w.store(Store::new(CAPPED, &key(t << 32), b"again"));
                            assert_eq!(over, Ok(StoreOutcome::Stored), "an overwrite at the cap");
                        }
                        w.store(Store::new(OTHER, &key(t << 32 | i), b"value")).unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        let most = watcher.join().unwrap();
        assert!(most <= CAP, "the watcher saw {most} keys, over the cap of {CAP}");
    });
    let stats = engine.tenant_stats(CAPPED);
    assert_eq!(stats.evictions, 0, "64 MiB holds every key: no place was freed");
    assert_eq!(stats.items, CAP);
    assert_eq!(stored.load(Ordering::Relaxed), CAP);
    assert_eq!(refused.load(Ordering::Relaxed), THREADS * KEYS_PER_THREAD - CAP);
    assert_eq!(stats.rejected_keys, THREADS * KEYS_PER_THREAD - CAP);
    assert_eq!(engine.tenant_stats(OTHER).items, THREADS * KEYS_PER_THREAD);
    engine.validate();
}
