//! `Worker::walk_bounded`: every live item of the tenant asked for (or of all), with the
//! metadata a read sees, in steps of bounded work.

mod common;

use std::collections::HashMap;

use common::small_engine;
use fridge_engine::{Expiry, Store, TenantId};

const T: TenantId = TenantId(0);

#[test]
fn a_walk_sees_each_live_item_with_its_metadata() {
    let (engine, clock) = small_engine(8 << 20, 64 << 10);
    let now = fridge_engine::Clock::now_ms(&clock);
    let mut w = engine.worker().unwrap();
    for i in 0..500u32 {
        let key = format!("key{i}");
        let value = vec![b'v'; i as usize % 40];
        let expiry = if i % 2 == 0 { Expiry::At(now + 60_000) } else { Expiry::Never };
        w.store(Store { flags: i, expiry, ..Store::new(T, key.as_bytes(), &value) }).unwrap();
        w.store(Store::new(TenantId(2), format!("other{i}").as_bytes(), b"o")).unwrap();
    }
    w.store(Store { expiry: Expiry::At(now + 1_000), ..Store::new(T, b"gone", b"x") }).unwrap();
    clock.advance(2_000);

    let mut seen = HashMap::new();
    let mut cursor = 0;
    let mut steps = 0;
    loop {
        cursor = w.walk_bounded(Some(T), cursor, 4, |m| {
            assert_eq!(m.tenant, T);
            let old = seen.insert(m.key.to_vec(), (m.value_len, m.flags, m.expires_at_ms, m.cas));
            assert!(old.is_none(), "no duplicates without a concurrent move");
            assert!(m.size > m.key.len() + m.value_len);
        });
        steps += 1;
        if cursor == 0 {
            break;
        }
    }
    assert!(steps > 1, "the walk went in steps");
    assert_eq!(seen.len(), 500, "every live item, none expired, no other tenant's");
    for i in 0..500u32 {
        let key = format!("key{i}");
        let (len, flags, exp, cas) = seen[key.as_bytes()];
        assert_eq!((len, flags), (i as usize % 40, i));
        assert_eq!(exp.is_some(), i % 2 == 0);
        let read = w.get(T, key.as_bytes(), |item| (item.expires_at_ms, item.cas)).unwrap();
        assert_eq!(read, (exp, cas), "the CAS and expiry `gets` sees");
    }

    let mut all = 0;
    let mut cursor = 0;
    loop {
        cursor = w.walk_bounded(None, cursor, 64, |_| all += 1);
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(all, 1000, "both tenants' items");
}

/// A warm restart's snapshot reads each item's value and state bits from the walk, stores
/// them back with their CAS values, and raises the CAS counter above them.
#[test]
fn a_walk_copies_items_into_another_engine_whole() {
    let (engine, _clock) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    for i in 0..300u32 {
        let key = format!("key{i}");
        let value: Vec<u8> = (0..(i as usize * 13) % 700).map(|j| (j as u32 ^ i) as u8).collect();
        let state = if i % 3 == 0 { fridge_engine::item::STATE_KEY_BINARY } else { 0 };
        w.select((i % 4) as u8);
        let kind = fridge_engine::Kind((i % 3) as u8);
        w.store(Store { flags: i, state, kind, ..Store::new(T, key.as_bytes(), &value) }).unwrap();
    }
    let (copy, _) = small_engine(8 << 20, 64 << 10);
    let mut c = copy.worker().unwrap();
    let mut cursor = 0;
    let mut highest = 0;
    loop {
        cursor = w.walk_bounded(None, cursor, 64, |m| {
            c.select(m.db);
            let store = Store {
                flags: m.flags,
                cas: Some(m.cas),
                state: m.state,
                kind: m.kind,
                ..Store::new(m.tenant, m.key, m.value)
            };
            c.store(store).unwrap();
            highest = highest.max(m.cas);
        });
        if cursor == 0 {
            break;
        }
    }
    copy.raise_cas_floor(engine.cas_high());
    assert_eq!(copy.stats().items, 300);
    for i in 0..300u32 {
        let key = format!("key{i}");
        w.select((i % 4) as u8);
        c.select((i % 4) as u8);
        let read = |item: fridge_engine::Item<'_>| {
            (item.value.to_vec(), item.flags, item.cas, item.state, item.kind)
        };
        let original = w.get_any(T, key.as_bytes(), read).unwrap();
        assert_eq!(c.get_any(T, key.as_bytes(), read).unwrap(), original, "{key}");
    }
    assert_eq!(highest, engine.cas_high());
    c.store(Store::new(T, b"new", b"v")).unwrap();
    assert!(c.last_cas() > highest, "new CAS values start above the copied ones");
}

/// A delayed flush (memcached `flush_all N`) that fell due is applied by a walk over every
/// tenant before it sees an item, as a read would: a snapshot never carries flushed items.
#[test]
fn a_walk_over_every_tenant_applies_a_flush_that_fell_due() {
    let (engine, clock) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    for i in 0..100u32 {
        w.store(Store::new(TenantId(3), format!("k{i}").as_bytes(), b"v")).unwrap();
    }
    w.flush(TenantId(3), 1_000);
    let count = |w: &mut fridge_engine::Worker| {
        let (mut n, mut cursor) = (0, 0);
        loop {
            cursor = w.walk_bounded(None, cursor, 64, |_| n += 1);
            if cursor == 0 {
                return n;
            }
        }
    };
    assert_eq!(count(&mut w), 100, "not due yet");
    clock.advance(2_000);
    assert_eq!(count(&mut w), 0);
    assert_eq!(engine.item_count(TenantId(3)), 0);
}
