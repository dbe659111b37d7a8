//! Databases (Redis `SELECT`): the database a worker selected is part of an item's identity,
//! counted per database where the tenant's items are, and flushed on its own.

mod common;

use common::small_engine;
use fridge_engine::{Clock, DbStats, Expiry, KeyEventKind, Store, TenantId, Worker};

const T: TenantId = TenantId(0);
const OTHER: TenantId = TenantId(1);

fn get(w: &mut Worker, t: TenantId, key: &[u8]) -> Option<Vec<u8>> {
    w.get(t, key, |i| i.value.to_vec())
}

fn scan_all(w: &mut Worker, t: TenantId) -> Vec<Vec<u8>> {
    let (mut keys, mut cursor) = (Vec::new(), 0);
    loop {
        cursor = w.scan(t, cursor, 100, &mut keys);
        if cursor == 0 {
            keys.sort();
            keys.dedup();
            return keys;
        }
    }
}

#[test]
fn equal_keys_of_two_databases_are_two_items() {
    let (engine, _) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    assert_eq!(w.db(), 0, "database 0 at first");
    w.store(Store::new(T, b"k", b"zero")).unwrap();
    w.select(5);
    assert_eq!(get(&mut w, T, b"k"), None, "database 5 does not see database 0's key");
    w.store(Store::new(T, b"k", b"five")).unwrap();
    w.store(Store::new(T, b"only5", b"x")).unwrap();
    assert_eq!(get(&mut w, T, b"k").as_deref(), Some(&b"five"[..]));
    assert_eq!(scan_all(&mut w, T), [b"k".to_vec(), b"only5".to_vec()]);
    assert_eq!(get(&mut w, OTHER, b"k"), None, "nor does another tenant's database 5");
    w.select(0);
    assert_eq!(get(&mut w, T, b"k").as_deref(), Some(&b"zero"[..]));
    assert!(!w.contains(T, b"only5"));
    assert_eq!(scan_all(&mut w, T), [b"k".to_vec()]);
    assert!(w.delete(T, b"k"));
    w.select(5);
    assert_eq!(get(&mut w, T, b"k").as_deref(), Some(&b"five"[..]), "deleting in 0 left 5's");
    assert_eq!(engine.item_count(T), 2);
    engine.validate();
}

#[test]
fn figures_are_kept_per_database_through_stores_deletes_and_expiry() {
    let (engine, clock) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let now = clock.now_ms();
    let ttl = |ms: u64| Expiry::At(now + ms);
    w.store(Store { expiry: ttl(10_000), ..Store::new(T, b"a", b"v") }).unwrap();
    w.store(Store::new(T, b"b", b"v")).unwrap();
    w.select(3);
    w.store(Store { expiry: ttl(100_000), ..Store::new(T, b"a", b"v") }).unwrap();
    w.store(Store { expiry: ttl(300_000), ..Store::new(T, b"c", b"v") }).unwrap();
    w.store(Store::new(T, b"d", b"v")).unwrap();
    let dbs = engine.db_stats(T);
    assert_eq!((dbs[0].keys, dbs[0].expires), (2, 1));
    assert_eq!((dbs[3].keys, dbs[3].expires), (3, 2));
    assert_eq!(dbs[1], DbStats::default());
    assert_eq!(dbs[0].avg_ttl_ms(now), 10_000);
    assert_eq!(dbs[3].avg_ttl_ms(now), 200_000, "the mean of 100 s and 300 s");
    assert_eq!(engine.item_count(T), 5);
    assert_eq!(engine.expiring_count(T), 3);
    engine.validate();

    // An overwrite without a TTL, a delete, and an expiry each move database 3's figures.
    w.store(Store::new(T, b"a", b"v2")).unwrap();
    assert!(w.delete(T, b"d"));
    let dbs = engine.db_stats(T);
    assert_eq!((dbs[3].keys, dbs[3].expires), (2, 1));
    assert_eq!(dbs[3].avg_ttl_ms(now), 300_000);
    clock.advance(300_001);
    engine.set_key_events(true);
    assert_eq!(engine.reclaim_expired(), 2, "database 0's a and database 3's c");
    let mut events: Vec<(u8, Vec<u8>)> = std::iter::from_fn(|| engine.pop_key_event())
        .map(|e| {
            assert_eq!(e.kind, KeyEventKind::Expired);
            (e.db, e.key.to_vec())
        })
        .collect();
    events.sort();
    assert_eq!(events, [(0, b"a".to_vec()), (3, b"c".to_vec())], "events name the database");
    let dbs = engine.db_stats(T);
    assert_eq!((dbs[0].keys, dbs[0].expires, dbs[0].avg_ttl_ms(now)), (1, 0, 0));
    assert_eq!((dbs[3].keys, dbs[3].expires), (1, 0));
    engine.validate();
}

#[test]
fn evictions_are_counted_in_the_database_of_the_evicted_item() {
    // Far more data than memory, spread over three databases: the cleaner evicts from each,
    // and the per-database figures stay equal to a count of the index (`validate`).
    let (engine, _) = small_engine(2 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let value = [7u8; 300];
    for i in 0u32..30_000 {
        w.select((i % 3) as u8 * 7);
        w.store(Store::new(T, &i.to_le_bytes(), &value)).unwrap();
    }
    let dbs = engine.db_stats(T);
    let total: u64 = dbs.iter().map(|d| d.keys).sum();
    assert_eq!(total, engine.item_count(T));
    assert!(total < 30_000, "some were evicted");
    for db in [0, 7, 14] {
        assert!(dbs[db].keys > 0 && dbs[db].keys < 10_000, "database {db}: {:?}", dbs[db]);
    }
    engine.validate();
}

#[test]
fn flushing_one_database_leaves_the_others() {
    let (engine, _) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    for db in [0, 1, 2] {
        w.select(db);
        for key in [&b"x"[..], b"y"] {
            w.store(Store::new(T, key, b"v")).unwrap();
        }
        w.store(Store::new(OTHER, b"x", b"v")).unwrap();
    }
    w.select(1);
    w.flush_db(T);
    assert_eq!(get(&mut w, T, b"x"), None);
    assert!(get(&mut w, OTHER, b"x").is_some(), "another tenant's database 1 stays");
    let dbs = engine.db_stats(T);
    assert_eq!([dbs[0].keys, dbs[1].keys, dbs[2].keys], [2, 0, 2]);
    w.select(2);
    assert!(get(&mut w, T, b"y").is_some());
    engine.validate();
    // A flush of the tenant takes every database.
    w.flush(T, 0);
    assert_eq!(engine.item_count(T), 0);
    assert_eq!(engine.db_stats(T), [DbStats::default(); 16]);
    assert_eq!(engine.item_count(OTHER), 3);
    engine.validate();
}
