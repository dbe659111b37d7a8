//! Engine operations against a model, with the engine's invariants checked after each one.
//!
//! An `Arbitrary` sequence of stores (plain, conditional, with past and future expiries,
//! keeping the TTL), reads, deletes, touches, flushes and clock steps runs on a small engine
//! whose inline cleaner works all the time. After every operation `Engine::validate` checks
//! the index, segment and tenant invariants. The model holds, per key, the last value
//! stored (or that the key is gone); the engine is a cache and may drop items, so a miss
//! proves nothing, but a hit must return exactly the model's value and flags, and a key the
//! model knows to be gone must miss.
#![no_main]

use std::collections::HashMap;
use std::sync::Arc;

use arbitrary::Arbitrary;
use fridge_engine::{
    CleanerMode, Clock, Condition, Engine, EngineConfig, Expiry, ManualClock, Store, StoreOutcome,
    TenantId,
};
use libfuzzer_sys::fuzz_target;

/// Operations per input: keeps each run short.
const MAX_OPS: usize = 2_000;

#[derive(Debug, Arbitrary)]
enum Op {
    Set { t: u8, k: u8, len: u16, ttl: Option<i16>, flags: u32 },
    SetKeepTtl { t: u8, k: u8, len: u16 },
    Add { t: u8, k: u8, len: u16 },
    Replace { t: u8, k: u8, len: u16 },
    Cas { t: u8, k: u8, stale: bool, len: u16 },
    Get { t: u8, k: u8 },
    Delete { t: u8, k: u8 },
    Touch { t: u8, k: u8, ttl: Option<u16> },
    Advance { ms: u16 },
    Flush { t: u8 },
}

/// What the model knows about a key.
#[derive(Debug, Clone, PartialEq)]
enum Known {
    /// Last stored: a hit must return exactly this.
    Value(Vec<u8>, u32),
    /// Deleted, flushed or stored already expired: the key must miss.
    Gone,
}

const TENANTS: u8 = 3;
const KEYS: u8 = 48;

fn key(k: u8) -> &'static [u8] {
    static NAMES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    &NAMES.get_or_init(|| (0..=255).map(|k| format!("key:{k}").into_bytes()).collect())
        [usize::from(k)]
}

/// A value that names its key and a sequence number, so a wrong hit shows.
fn value(k: u8, seq: u64, len: u16) -> Vec<u8> {
    let len = usize::from(len % 3000);
    (0..len).map(|i| (u64::from(k) * 131 + seq * 31 + i as u64) as u8).collect()
}

fn engine() -> (Engine, ManualClock) {
    let clock = ManualClock::new(1_700_000_000_000);
    let segment_size = 64 << 10;
    let config = EngineConfig {
        max_memory: 1 << 20,
        segment_size,
        max_item_size: segment_size,
        large_value_threshold: segment_size / 4,
        cleaner: CleanerMode::Inline,
        cleaner_candidates: 8,
        index_buckets: 16,
        ..EngineConfig::default()
    };
    let engine = Engine::with_clock(config, Arc::new(clock.clone())).expect("engine");
    (engine, clock)
}

fuzz_target!(|ops: Vec<Op>| {
    let (engine, clock) = engine();
    let mut w = engine.worker().expect("worker");
    let mut model: HashMap<(u8, u8), Known> = HashMap::new();
    for (seq, op) in ops.into_iter().take(MAX_OPS).enumerate() {
        let seq = seq as u64;
        let now = clock.now_ms();
        match op {
            Op::Set { t, k, len, ttl, flags } => {
                let (t, k) = (t % TENANTS, k % KEYS);
                let v = value(k, seq, len);
                let expiry = match ttl {
                    None => Expiry::Never,
                    Some(d) => Expiry::At(now.saturating_add_signed(i64::from(d))),
                };
                let req = Store { flags, expiry, ..Store::new(TenantId(t), key(k), &v) };
                match w.store(req) {
                    Ok(StoreOutcome::Stored) => {
                        let gone = matches!(expiry, Expiry::At(at) if at <= now);
                        let known = if gone { Known::Gone } else { Known::Value(v, flags) };
                        model.insert((t, k), known);
                    }
                    Ok(other) => panic!("an unconditional store answered {other:?}"),
                    Err(_) => {
                        model.remove(&(t, k));
                    }
                }
            }
            Op::SetKeepTtl { t, k, len } => {
                let (t, k) = (t % TENANTS, k % KEYS);
                let v = value(k, seq, len);
                let req = Store { expiry: Expiry::Keep, ..Store::new(TenantId(t), key(k), &v) };
                match w.store(req) {
                    Ok(StoreOutcome::Stored) => {
                        model.insert((t, k), Known::Value(v, 0));
                    }
                    Ok(_) => {}
                    Err(_) => {
                        model.remove(&(t, k));
                    }
                }
            }
            Op::Add { t, k, len } | Op::Replace { t, k, len } => {
                let (t, k) = (t % TENANTS, k % KEYS);
                let v = value(k, seq, len);
                let condition = if matches!(op, Op::Add { .. }) {
                    Condition::IfAbsent
                } else {
                    Condition::IfPresent
                };
                let req = Store { condition, ..Store::new(TenantId(t), key(k), &v) };
                match w.store(req) {
                    Ok(StoreOutcome::Stored) => {
                        model.insert((t, k), Known::Value(v, 0));
                    }
                    Ok(_) => {}
                    Err(_) => {
                        model.remove(&(t, k));
                    }
                }
            }
            Op::Cas { t, k, stale, len } => {
                let (t, k) = (t % TENANTS, k % KEYS);
                let Some(cas) = w.get(TenantId(t), key(k), |i| i.cas) else { continue };
                let cas = if stale { cas.wrapping_add(1) } else { cas };
                let v = value(k, seq, len);
                let req = Store {
                    condition: Condition::IfCas(cas),
                    ..Store::new(TenantId(t), key(k), &v)
                };
                match w.store(req) {
                    Ok(StoreOutcome::Stored) => {
                        assert!(!stale, "a stale CAS was stored");
                        model.insert((t, k), Known::Value(v, 0));
                    }
                    Ok(_) => {}
                    Err(_) => {
                        model.remove(&(t, k));
                    }
                }
            }
            Op::Get { t, k } => {
                let (t, k) = (t % TENANTS, k % KEYS);
                let got = w.get(TenantId(t), key(k), |i| (i.value.to_vec(), i.flags));
                match (got, model.get(&(t, k))) {
                    (Some(hit), Some(Known::Value(v, f))) => {
                        assert!(hit.0 == *v && hit.1 == *f, "({t},{k}) returned another value");
                    }
                    (Some(_), Some(Known::Gone)) => panic!("({t},{k}) is gone but hit"),
                    _ => {}
                }
            }
            Op::Delete { t, k } => {
                let (t, k) = (t % TENANTS, k % KEYS);
                w.delete(TenantId(t), key(k));
                model.insert((t, k), Known::Gone);
            }
            Op::Touch { t, k, ttl } => {
                let (t, k) = (t % TENANTS, k % KEYS);
                let at = ttl.map(|d| now + u64::from(d) + 1);
                let _ = w.set_expiry(TenantId(t), key(k), at);
            }
            Op::Advance { ms } => clock.advance(u64::from(ms)),
            Op::Flush { t } => {
                let t = t % TENANTS;
                w.flush(TenantId(t), 0);
                for k in 0..KEYS {
                    model.insert((t, k), Known::Gone);
                }
            }
        }
        engine.validate();
    }
});
