//! `Worker::inspect`: an item's size, last access and hitmap zone, without counting a read.

mod common;

use common::{small_config, small_engine, small_engine_from};
use fridge_engine::item::ExpiryField;
use fridge_engine::{
    Clock, EngineConfig, Eviction, Expiry, INDEX_SLOT_BYTES, Queues, Store, TenantId,
};

const T: TenantId = TenantId(0);

#[test]
fn inspect_reports_the_item_without_touching_it() {
    let (engine, clock) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    w.store(Store::new(T, b"key", &[b'v'; 100])).unwrap();
    let now = clock.now_ms();
    let info = w.inspect(T, b"key").unwrap();
    assert_eq!(info.value_len, 100);
    // The key record (header and key), the value.
    let record = fridge_engine::item::record_len(3, false, ExpiryField::None, false);
    assert_eq!(record, 21 + 3, "a 21-byte record header");
    assert_eq!(info.size, record + 100);
    assert_eq!(info.size + INDEX_SLOT_BYTES, 132, "MEMORY USAGE: the item and its slot");
    // Written in the current recency tick: its last access may be now.
    assert_eq!(info.last_access_ms, now);
    assert!(info.zone.is_some(), "the default engine keeps a hitmap");
    let gets = engine.stats().gets;
    w.inspect(T, b"key").unwrap();
    assert_eq!(engine.stats().gets, gets, "inspect counts no read");

    assert!(w.inspect(T, b"missing").is_none());
    assert!(w.inspect(TenantId(1), b"key").is_none(), "another tenant's key is not seen");
    w.store(Store { expiry: Expiry::At(now + 1_000), ..Store::new(T, b"short", b"x") }).unwrap();
    let expiring = w.inspect(T, b"short").unwrap();
    assert_eq!(expiring.size, 21 + 4 + 5 + 1, "an expiry adds its 4-byte code");
    clock.advance(2_000);
    assert!(w.inspect(T, b"short").is_none(), "an expired item is not seen");
    assert_eq!(w.now_ms(), now + 2_000);
}

#[test]
fn without_a_hitmap_the_queues_report_reads_since_the_item_entered_its_queue() {
    let config = small_config(8 << 20, 64 << 10, 64, Eviction::Queues(Queues::default()));
    let (engine, _clock) = small_engine_from(EngineConfig { hitmap_bits_per_item: 0, ..config });
    let mut w = engine.worker().unwrap();
    w.store(Store::new(T, b"key", b"v")).unwrap();
    assert_eq!(w.inspect(T, b"key").unwrap().zone, Some(0), "not read yet");
    for reads in 1..=5u8 {
        assert!(w.get(T, b"key", |_| ()).is_some());
        assert_eq!(w.inspect(T, b"key").unwrap().zone, Some(reads.min(3)), "capped at 3");
    }
    // Memshare's pass keeps no such count: without a hitmap, nothing to report.
    let config = small_config(8 << 20, 64 << 10, 64, Eviction::Memshare);
    let (engine, _clock) = small_engine_from(EngineConfig { hitmap_bits_per_item: 0, ..config });
    let mut w = engine.worker().unwrap();
    w.store(Store::new(T, b"key", b"v")).unwrap();
    assert_eq!(w.inspect(T, b"key").unwrap().zone, None);
}
