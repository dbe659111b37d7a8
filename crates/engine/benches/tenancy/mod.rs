//! The engine the tenant benchmarks share: 64 MiB in 1 MiB segments, the inline cleaner with
//! Memshare's pass, and tenants that each reserve an equal share of half the memory.

use std::sync::Arc;

use fridge_engine::{
    CleanerMode, Engine, EngineConfig, Eviction, ManualClock, TenantId, TenantPolicy,
};

/// Bytes of memory.
pub const MEMORY: usize = 64 << 20;

/// An engine with tenants `0..tenants`, each reserving `MEMORY / 2 / tenants` bytes.
pub fn reserving_engine(tenants: usize) -> Engine {
    let config = EngineConfig {
        max_memory: MEMORY,
        segment_size: 1 << 20,
        cleaner: CleanerMode::Inline,
        eviction: Eviction::Memshare,
        ..EngineConfig::default()
    };
    let engine = Engine::with_clock(config, Arc::new(ManualClock::new(1_700_000_000_000))).unwrap();
    let reserved = (MEMORY / 2 / tenants) as u64;
    for t in 0..tenants {
        let policy = TenantPolicy { reserved, ..TenantPolicy::default() };
        engine.set_tenant_policy(TenantId(t as u16), policy);
    }
    engine
}
