//! Tenant ids wider than a byte: the record keeps an id's low byte in its word and its high
//! byte in the CAS field's top byte. Tenants whose ids share a low byte are different tenants
//! (items, counters, flushes, CAS values), and a thousand tenants under memory pressure keep
//! exact per-tenant counts while the cleaner evicts and relocates their items.

use std::sync::Arc;

use fridge_engine::item::{MAX_CAS, MAX_TENANTS};
use fridge_engine::{
    CleanerMode, Engine, EngineConfig, ManualClock, Store, StoreOutcome, TenantId, TenantPolicy,
};

fn engine(clock: &ManualClock, max_memory: usize) -> Engine {
    let config = EngineConfig {
        max_memory,
        segment_size: 64 << 10,
        max_item_size: 64 << 10,
        cleaner: CleanerMode::Inline,
        ..EngineConfig::default()
    };
    Engine::with_clock(config, Arc::new(clock.clone())).unwrap()
}

#[test]
fn tenants_whose_ids_share_a_low_byte_are_apart() {
    let clock = ManualClock::new(1_000_000);
    let engine = engine(&clock, 16 << 20);
    let mut w = engine.worker().unwrap();
    let last = MAX_TENANTS as u16 - 1;
    let ids = [1, 0x101, 0x201, last & 0xFF, last];
    for &t in &ids {
        let value = format!("value of {t}");
        assert_eq!(
            w.store(Store::new(TenantId(t), b"k", value.as_bytes())),
            Ok(StoreOutcome::Stored)
        );
    }
    for &t in &ids {
        let got = w.get(TenantId(t), b"k", |i| i.value.to_vec());
        assert_eq!(got, Some(format!("value of {t}").into_bytes()), "tenant {t:#x}");
        assert_eq!(engine.tenant_stats(TenantId(t)).items, 1, "tenant {t:#x}");
    }
    // CAS values stay whole beside a high byte of the id.
    let cas = w.get(TenantId(0x201), b"k", |i| i.cas).unwrap();
    assert!(cas > 0 && cas <= MAX_CAS);
    let big = Store { cas: Some(MAX_CAS), ..Store::new(TenantId(0x201), b"big", b"v") };
    assert_eq!(w.store(big), Ok(StoreOutcome::Stored));
    assert_eq!(w.get(TenantId(0x201), b"big", |i| i.cas), Some(MAX_CAS));
    assert_eq!(w.get(TenantId(0x201), b"k", |i| i.cas), Some(cas));

    assert!(w.delete(TenantId(0x101), b"k"));
    w.flush(TenantId(last), 0);
    for &t in &ids {
        let present = w.contains(TenantId(t), b"k");
        assert_eq!(present, t != 0x101 && t != last, "tenant {t:#x}");
    }
    assert_eq!(engine.tenant_stats(TenantId(0x101)).items, 0);
    assert_eq!(engine.tenant_stats(TenantId(1)).items, 1);
    assert_eq!(engine.tenant_stats(TenantId(0x201)).items, 2);
    engine.validate();
}

#[test]
fn a_thousand_tenants_keep_exact_counts_while_the_cleaner_evicts_and_relocates() {
    const TENANTS: u16 = 1000;
    let clock = ManualClock::new(1_000_000);
    // Room for about half of what is written: passes evict and relocate all along.
    let engine = engine(&clock, 24 << 20);
    for t in 1..=TENANTS {
        let policy = TenantPolicy { reserved: 8 << 10, ..TenantPolicy::default() };
        engine.set_tenant_policy(TenantId(t), policy);
    }
    let mut w = engine.worker().unwrap();
    let value = [7u8; 200];
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..200_000u64 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let t = TenantId(1 + (rng % u64::from(TENANTS)) as u16);
        let key = (rng >> 32) % 200;
        // Each value names its tenant, so a read finds out whose item it got.
        let mut v = value;
        v[..2].copy_from_slice(&t.0.to_le_bytes());
        if i % 4 == 0 {
            if let Some(got) = w.get(t, &key.to_le_bytes(), |i| i.value[..2].to_vec()) {
                assert_eq!(got, t.0.to_le_bytes(), "a read of tenant {} found another's item", t.0);
            }
        } else {
            w.store(Store::new(t, &key.to_le_bytes(), &v)).unwrap();
        }
    }
    let stats = engine.stats();
    assert!(stats.evictions > 0, "memory was short: {stats:?}");
    // A thousand tenants' shadow queues share 1/32 of memory, and the stats count them.
    assert!(stats.shadow_items > 0, "{stats:?}");
    assert!(stats.shadow_bytes <= stats.max_memory / 32, "{stats:?}");
    let per_tenant: u64 = (0..=TENANTS).map(|t| engine.tenant_stats(TenantId(t)).items).sum();
    assert_eq!(per_tenant, stats.items, "every item is counted under one tenant");
    assert!(
        (1..=TENANTS).filter(|&t| engine.tenant_stats(TenantId(t)).items > 0).count() > 900,
        "most tenants hold items"
    );
    // `validate` counts each tenant's items by the id in their records.
    engine.validate();
}
