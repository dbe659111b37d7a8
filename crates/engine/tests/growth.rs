//! Index growth: localized expansion, incremental doubling, and SCAN across a growth.

mod common;

use std::collections::HashSet;

use common::small_engine;
use fridge_engine::{Store, TenantId};

const T: TenantId = TenantId(0);

fn key(i: u32) -> Vec<u8> {
    format!("growth:{i}").into_bytes()
}

#[test]
fn index_grows_and_keeps_every_key() {
    let (engine, _) = small_engine(16 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    for i in 0..20_000 {
        w.store(Store::new(T, &key(i), &i.to_le_bytes())).unwrap();
    }
    let s = engine.stats();
    assert!(s.index_resizes >= 3, "16 initial buckets must have doubled several times: {s:?}");
    assert_eq!(s.evictions + s.index_evictions, 0, "everything fits: {s:?}");
    for i in 0..20_000 {
        assert_eq!(w.get(T, &key(i), |it| it.value.to_vec()), Some(i.to_le_bytes().to_vec()));
    }
    engine.validate();
}

#[test]
fn scan_sees_every_key_present_throughout_a_growth() {
    let (engine, _) = small_engine(16 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    for i in 0..500 {
        w.store(Store::new(T, &key(i), b"v")).unwrap();
    }
    let resizes_before = engine.stats().index_resizes;
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut cursor = 0;
    let mut next = 500;
    loop {
        out.clear();
        cursor = w.scan(T, cursor, 5, &mut out);
        seen.extend(out.drain(..));
        // Keep inserting (and deleting the new keys again) between scan steps, so the
        // table grows while the pass is under way.
        for _ in 0..40 {
            w.store(Store::new(T, &key(next), b"v")).unwrap();
            next += 1;
        }
        if cursor == 0 {
            break;
        }
    }
    assert!(engine.stats().index_resizes > resizes_before, "the table grew during the pass");
    for i in 0..500 {
        assert!(seen.contains(&key(i)), "key {i} present throughout but not returned");
    }
    engine.validate();
}
