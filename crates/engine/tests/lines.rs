//! `Worker::lookup_lines`: where a GET reads (index buckets, key records, the value), without
//! counting a read, and the same answer while nothing changes.

mod common;

use common::small_engine;
use fridge_engine::{LookupLines, Store, TenantId};

const T: TenantId = TenantId(0);

/// The address of `key`'s value as a GET sees it.
fn value_addr(w: &mut fridge_engine::Worker, key: &[u8]) -> usize {
    w.get(T, key, |item| item.value.as_ptr() as usize).unwrap()
}

#[test]
fn lines_name_the_record_and_value_a_get_reads() {
    let (engine, _clock) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    w.store(Store::new(T, b"small", &[b's'; 20])).unwrap();
    w.store(Store::new(T, b"large", &[b'l'; 1_000])).unwrap();
    let mut lines = LookupLines::default();

    assert!(w.lookup_lines(T, b"small", &mut lines));
    let info = w.inspect(T, b"small").unwrap();
    let record = *lines.records.last().unwrap();
    let value = lines.value.unwrap();
    assert_eq!(value.len, 20);
    assert_eq!(record.len + value.len, info.size, "record and value make the item's size");
    assert!(lines.inline, "a 20-byte value follows its record");
    assert_eq!(value.addr, record.addr + record.len);
    assert_eq!(value.addr, value_addr(&mut w, b"small"), "the value a GET returns");
    assert!(!lines.buckets.is_empty());
    assert!(lines.buckets.iter().all(|b| b % 64 == 0), "buckets are cache lines");
    assert!(lines.segment_header.is_some());

    assert!(w.lookup_lines(T, b"large", &mut lines));
    let record = *lines.records.last().unwrap();
    let value = lines.value.unwrap();
    assert_eq!(value.len, 1_000);
    assert_eq!(record.len + value.len, w.inspect(T, b"large").unwrap().size);
    assert!(!lines.inline, "a 1,000-byte value lies at the segment's high end");
    assert!(value.addr > record.addr + record.len);
    assert_eq!(value.addr, value_addr(&mut w, b"large"));
}

#[test]
fn lines_are_stable_and_count_nothing() {
    let (engine, _clock) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    for i in 0..2_000u32 {
        w.store(Store::new(T, &i.to_le_bytes(), &[b'v'; 40])).unwrap();
    }
    let gets = engine.stats().gets;
    let mut first = LookupLines::default();
    let mut again = LookupLines::default();
    for i in 0..2_000u32 {
        let key = i.to_le_bytes();
        let before = w.inspect(T, &key).unwrap();
        assert!(w.lookup_lines(T, &key, &mut first));
        assert!(w.lookup_lines(T, &key, &mut again));
        assert_eq!(first, again, "nothing changed, nor do the lines");
        assert_eq!(w.inspect(T, &key).unwrap(), before, "no recency touched");
    }
    assert_eq!(engine.stats().gets, gets, "lookup_lines counts no read");

    let mut missing = LookupLines::default();
    assert!(!w.lookup_lines(T, b"missing", &mut missing));
    assert!(!missing.buckets.is_empty(), "a miss still reads the root");
    assert_eq!(missing.value, None);
    // A miss reads its path; the records it compares are other keys' (tag collisions).
    assert!(missing.records.len() <= missing.buckets.len() * 7);
}

/// With an SLB, its bucket is the first line a lookup reads, and a key it holds is reported
/// from there without the index's buckets; a key it does not hold reads both.
#[test]
fn with_an_slb_its_bucket_comes_first_and_a_cached_key_skips_the_index() {
    let config = common::small_config(8 << 20, 64 << 10, 64, fridge_engine::Eviction::Memshare);
    let (engine, _clock) =
        common::small_engine_from(fridge_engine::EngineConfig { slb_bytes: 64 << 10, ..config });
    let mut w = engine.worker().unwrap();
    w.store(Store::new(T, b"hot", b"value")).unwrap();
    let mut lines = LookupLines::default();
    assert!(w.lookup_lines(T, b"hot", &mut lines));
    assert_eq!(lines.buckets.len(), 2, "not cached yet: the SLB's bucket, then the root");
    let slb_bucket = lines.buckets[0];
    // A GET admits the key (its bucket has room), and the next lookup stops at the SLB.
    assert!(w.get(T, b"hot", |_| ()).is_some());
    assert_eq!(engine.stats().slb_admissions, 1);
    assert!(w.lookup_lines(T, b"hot", &mut lines));
    assert_eq!(lines.buckets, vec![slb_bucket], "the SLB's bucket alone");
    assert_eq!(lines.value.unwrap().addr, value_addr(&mut w, b"hot"));
    assert_eq!(engine.stats().slb_hits, 1, "reporting warmed nothing and counted nothing");
}
