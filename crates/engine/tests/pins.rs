//! Value pins (`crate::pin`): a pinned value's bytes stay what the read saw while its item is
//! overwritten, relocated and evicted and its segment retired; the segment is freed once the
//! pin goes; pins are bounded and never make writers wait.

use std::sync::Arc;

use fridge_engine::{CleanerMode, Engine, EngineConfig, Kind, ManualClock, Store, TenantId};

const T: TenantId = TenantId(0);

fn engine() -> Engine {
    let config = EngineConfig {
        max_memory: 16 << 20,
        cleaner: CleanerMode::Inline,
        ..EngineConfig::default()
    };
    Engine::with_clock(config, Arc::new(ManualClock::new(1))).unwrap()
}

fn value(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| seed.wrapping_add((i % 251) as u8)).collect()
}

#[test]
fn a_pinned_value_outlives_its_item_and_its_segment_is_freed_after() {
    let engine = engine();
    let mut w = engine.worker().unwrap();
    let first = value(1, 200_000);
    w.store(Store::new(T, b"big", &first)).unwrap();
    let got = w.get_pinned(T, b"big", Kind::STRING, 100_000, |i, p| (i.value.len(), p));
    let (len, pin) = got.unwrap().unwrap();
    let pin = pin.expect("a large value is pinned");
    assert_eq!(len, first.len());
    assert_eq!(engine.stats().value_pins, 1);
    // Overwrite it, then write the cache over four times: the old item's segment is cleaned
    // and retired, but not reused while pinned.
    w.store(Store::new(T, b"big", &value(2, 200_000))).unwrap();
    for i in 0..400u32 {
        w.store(Store::new(T, &i.to_le_bytes(), &value(i as u8, 200_000))).unwrap();
        assert!(pin.bytes() == &first[..], "the pinned bytes changed after {i} stores");
    }
    let s = engine.stats();
    assert!(s.evictions > 0, "the cache filled: {s:?}");
    assert_eq!(s.segments_held, 1, "the pinned segment was retired and is held: {s:?}");
    drop(pin);
    // The next cleaning frees it.
    for i in 400..500u32 {
        w.store(Store::new(T, &i.to_le_bytes(), &value(i as u8, 200_000))).unwrap();
    }
    let s = engine.stats();
    assert_eq!((s.value_pins, s.segments_held), (0, 0), "{s:?}");
    engine.validate();
}

#[test]
fn small_values_and_misses_take_no_pin() {
    let engine = engine();
    let mut w = engine.worker().unwrap();
    w.store(Store::new(T, b"small", b"abc")).unwrap();
    let got = w.get_pinned(T, b"small", Kind::STRING, 1024, |i, p| (i.value.to_vec(), p.is_none()));
    assert_eq!(got.unwrap(), Some((b"abc".to_vec(), true)));
    assert_eq!(w.get_pinned(T, b"nope", Kind::STRING, 0, |_, _| ()).unwrap(), None);
    assert_eq!(engine.stats().value_pins, 0);
}

#[test]
fn pins_are_bounded_and_writers_never_wait_for_them() {
    let engine = engine();
    let mut w = engine.worker().unwrap();
    let segments = engine.stats().segments;
    let mut pins = Vec::new();
    for i in 0..segments as u32 {
        let key = i.to_le_bytes();
        w.store(Store::new(T, &key, &value(i as u8, 100_000))).unwrap();
        let pin = w.get_pinned(T, &key, Kind::STRING, 1, |_, p| p).unwrap().unwrap();
        pins.extend(pin);
    }
    let max = (segments / 8).max(1);
    assert_eq!(pins.len(), max, "an eighth of the segments may be pinned, then no more");
    // With every allowed pin held, the cache is written over several times without a
    // failed store.
    for i in 0..1000u32 {
        w.store(Store::new(T, &(i + 1_000_000).to_le_bytes(), &value(3, 100_000))).unwrap();
    }
    assert!(engine.stats().segments_held <= max);
    for (i, pin) in pins.iter().enumerate() {
        assert!(pin.bytes() == &value(i as u8, 100_000)[..], "pin {i} kept its bytes");
    }
    drop(pins);
    assert_eq!(engine.stats().value_pins, 0);
    engine.validate();
}
