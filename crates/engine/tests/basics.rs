//! Operation semantics, one behaviour per test.

mod common;

use common::small_engine;
use fridge_engine::{Condition, EngineError, Expiry, Store, StoreOutcome, TenantId, Update};

const T: TenantId = TenantId(0);

fn get(w: &mut fridge_engine::Worker, key: &[u8]) -> Option<Vec<u8>> {
    w.get(T, key, |item| item.value.to_vec())
}

#[test]
fn set_then_get_returns_value_and_flags() {
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let store = Store { flags: 7, ..Store::new(T, b"k", b"hello") };
    assert_eq!(w.store(store), Ok(StoreOutcome::Stored));
    assert_eq!(w.get(T, b"k", |i| (i.value.to_vec(), i.flags)), Some((b"hello".to_vec(), 7)));
    assert_eq!(get(&mut w, b"missing"), None);
    assert_eq!(engine.item_count(T), 1);
    engine.validate();
}

#[test]
fn tenants_do_not_see_each_other() {
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    w.store(Store::new(TenantId(1), b"k", b"one")).unwrap();
    w.store(Store::new(TenantId(2), b"k", b"two")).unwrap();
    assert_eq!(w.get(TenantId(1), b"k", |i| i.value.to_vec()), Some(b"one".to_vec()));
    assert_eq!(w.get(TenantId(2), b"k", |i| i.value.to_vec()), Some(b"two".to_vec()));
    w.flush(TenantId(1), 0);
    assert_eq!(w.get(TenantId(1), b"k", |i| i.value.to_vec()), None);
    assert_eq!(w.get(TenantId(2), b"k", |i| i.value.to_vec()), Some(b"two".to_vec()));
    assert_eq!((engine.item_count(TenantId(1)), engine.item_count(TenantId(2))), (0, 1));
    engine.validate();
}

#[test]
fn add_replace_and_cas_follow_memcached() {
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let cond = |c, v: &'static [u8]| Store { condition: c, ..Store::new(T, b"k", v) };
    assert_eq!(w.store(cond(Condition::IfPresent, b"r")), Ok(StoreOutcome::NotStored));
    assert_eq!(w.store(cond(Condition::IfAbsent, b"a")), Ok(StoreOutcome::Stored));
    assert_eq!(w.store(cond(Condition::IfAbsent, b"b")), Ok(StoreOutcome::NotStored));
    assert_eq!(w.store(cond(Condition::IfPresent, b"c")), Ok(StoreOutcome::Stored));
    let cas = w.get(T, b"k", |i| i.cas).unwrap();
    assert_ne!(cas, 0);
    assert_eq!(w.store(cond(Condition::IfCas(cas), b"d")), Ok(StoreOutcome::Stored));
    assert_eq!(w.store(cond(Condition::IfCas(cas), b"e")), Ok(StoreOutcome::Exists));
    assert_eq!(get(&mut w, b"k"), Some(b"d".to_vec()));
    assert!(w.delete(T, b"k"));
    assert_eq!(w.store(cond(Condition::IfCas(cas), b"f")), Ok(StoreOutcome::NotFound));
    engine.validate();
}

#[test]
fn cas_never_matches_a_modified_item() {
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    w.store(Store::new(T, b"k", b"1")).unwrap();
    let cas = w.get(T, b"k", |i| i.cas).unwrap();
    for modify in 0..4 {
        match modify {
            0 => assert_eq!(w.append(T, b"k", b"x", false, false), Ok(Some(2))),
            1 => assert!(w.set_expiry(T, b"k", Some(u64::MAX / 2)).unwrap().is_some()),
            2 => {
                w.store(Store::new(T, b"k", b"7")).unwrap();
            }
            _ => {
                // A read-modify-write (what the server's counters are made of).
                let r = w.update(T, b"k", |c, buf| {
                    let c = c.expect("present");
                    buf.extend_from_slice(b"8");
                    Ok(Update::Write { flags: c.flags, expires_at_ms: c.expires_at_ms, result: 8 })
                });
                assert_eq!(r, Ok(8));
            }
        }
        let cas_store = Store { condition: Condition::IfCas(cas), ..Store::new(T, b"k", b"no") };
        assert_eq!(w.store(cas_store), Ok(StoreOutcome::Exists), "after modification {modify}");
    }
}

#[test]
fn expiry_is_millisecond_precise_on_the_virtual_clock() {
    let (engine, clock) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let at = clock_now(&clock) + 1500;
    w.store(Store { expiry: Expiry::At(at), ..Store::new(T, b"k", b"v") }).unwrap();
    clock.advance(1500);
    assert_eq!(get(&mut w, b"k"), Some(b"v".to_vec()), "still there at its deadline (Redis)");
    assert_eq!(w.get(T, b"k", |i| i.expires_at_ms), Some(Some(at)));
    clock.advance(1);
    assert_eq!(get(&mut w, b"k"), None, "gone once the time is past it");
    assert_eq!(engine.item_count(T), 0, "the expired item is reclaimed when found");
    assert_eq!(engine.stats().expired, 1);
    engine.validate();
}

fn clock_now(clock: &fridge_engine::ManualClock) -> u64 {
    use fridge_engine::Clock;
    clock.now_ms()
}

#[test]
fn long_ttls_survive_and_report_their_expiry() {
    let (engine, clock) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let year = 365 * 86_400_000;
    let at = clock_now(&clock) + 20 * year;
    w.store(Store { expiry: Expiry::At(at), ..Store::new(T, b"k", b"v") }).unwrap();
    assert_eq!(w.get(T, b"k", |i| i.expires_at_ms), Some(Some(at)), "exact beyond 12 days");
    clock.advance(19 * year);
    assert_eq!(get(&mut w, b"k"), Some(b"v".to_vec()));
    for ttl in [1, 999, 20_000_000, 10_000_000_000, 86_400_000 * 13 + 7, u64::MAX / 2] {
        let at = clock_now(&clock).saturating_add(ttl);
        w.store(Store { expiry: Expiry::At(at), ..Store::new(T, b"t", b"v") }).unwrap();
        assert_eq!(w.get(T, b"t", |i| i.expires_at_ms), Some(Some(at)), "ttl {ttl} ms");
        w.set_expiry(T, b"t", Some(at + 1)).unwrap();
        assert_eq!(w.get(T, b"t", |i| i.expires_at_ms), Some(Some(at + 1)), "ttl {ttl} ms");
    }
}

#[test]
fn cas_is_per_item_and_kept_by_a_ttl_change() {
    let (engine, clock) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let mut seen = std::collections::HashSet::new();
    for k in 0..2000u32 {
        w.store(Store::new(T, &k.to_le_bytes(), b"v")).unwrap();
    }
    for k in 0..2000u32 {
        assert!(seen.insert(w.get(T, &k.to_le_bytes(), |i| i.cas).unwrap()), "CAS shared");
    }
    let cas = w.get(T, b"\0\0\0\0", |i| i.cas).unwrap();
    let later = clock_now(&clock) + 3_600_000;
    w.set_expiry(T, b"\0\0\0\0", Some(later)).unwrap();
    assert_eq!(w.get(T, b"\0\0\0\0", |i| i.cas), Some(cas), "touch keeps the CAS");
    let touched = w.get_and_touch(T, b"\0\0\0\0", None, |i| i.cas).unwrap();
    assert_eq!(touched, Some(cas), "get-and-touch keeps the CAS");
    // A neighbour's change does not change this item's CAS.
    w.store(Store::new(T, &1u32.to_le_bytes(), b"w")).unwrap();
    let cond = Store { condition: Condition::IfCas(cas), ..Store::new(T, b"\0\0\0\0", b"x") };
    assert_eq!(w.store(cond), Ok(StoreOutcome::Stored));
    let new = w.get(T, b"\0\0\0\0", |i| i.cas).unwrap();
    assert!(new > cas && !seen.contains(&new), "a new value gets a new, later CAS");
    assert_eq!(w.store(cond), Ok(StoreOutcome::Exists));
    let explicit = Store { cas: Some(7), ..Store::new(T, b"e", b"v") };
    w.store(explicit).unwrap();
    assert_eq!(w.get(T, b"e", |i| i.cas), Some(7), "an explicit CAS is kept");
    engine.validate();
}

#[test]
fn relocation_keeps_the_cas() {
    let (engine, _) = small_engine(1 << 20, 16 << 10);
    let mut w = engine.worker().unwrap();
    let far = 1u64 << 50;
    w.store(Store { expiry: Expiry::At(far), ..Store::new(T, b"kept", b"v") }).unwrap();
    let cas = w.get(T, b"kept", |i| i.cas).unwrap();
    let value = [3u8; 1000];
    let mut x = 12345u64;
    for _ in 0..30_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = (x % 600).to_le_bytes();
        w.store(Store::new(T, &k, &value)).unwrap();
    }
    let s = engine.stats();
    assert!(s.relocated_items > 0, "the cleaner moved items: {s:?}");
    assert_eq!(w.get(T, b"kept", |i| (i.cas, i.expires_at_ms)), Some((cas, Some(far))));
    engine.validate();
}

#[test]
fn already_expired_store_succeeds_and_leaves_nothing() {
    let (engine, clock) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    w.store(Store::new(T, b"k", b"v")).unwrap();
    let past = clock_now(&clock) - 1;
    let r = w.store(Store { expiry: Expiry::At(past), ..Store::new(T, b"k", b"w") });
    assert_eq!(r, Ok(StoreOutcome::Stored));
    assert_eq!(get(&mut w, b"k"), None);
    assert_eq!(engine.item_count(T), 0);
    engine.validate();
}

/// Stores `req` and returns the live value it replaced (empty if none), as Redis `SET … GET`
/// does through the public API: read the old value, then store (one thread, so nothing
/// changes in between).
fn store_returning_old(
    w: &mut fridge_engine::Worker,
    req: Store<'_>,
) -> (Result<StoreOutcome, EngineError>, Vec<u8>) {
    let old = w.get(req.tenant, req.key, |i| i.value.to_vec()).unwrap_or_default();
    (w.store(req), old)
}

#[test]
fn keep_ttl_and_old_value() {
    let (engine, clock) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let at = clock_now(&clock) + 10_000;
    w.store(Store { expiry: Expiry::At(at), ..Store::new(T, b"k", b"v1") }).unwrap();
    let keep = Store { expiry: Expiry::Keep, ..Store::new(T, b"k", b"v2") };
    assert_eq!(store_returning_old(&mut w, keep), (Ok(StoreOutcome::Stored), b"v1".to_vec()));
    assert_eq!(
        w.get(T, b"k", |i| (i.value.to_vec(), i.expires_at_ms)),
        Some((b"v2".to_vec(), Some(at)))
    );
    let (stored, old) = store_returning_old(&mut w, Store::new(T, b"k", b"v3"));
    assert_eq!((stored, old), (Ok(StoreOutcome::Stored), b"v2".to_vec()));
    assert_eq!(w.get(T, b"k", |i| i.expires_at_ms), Some(None), "a plain set clears the TTL");
}

#[test]
fn touch_persist_and_get_and_touch() {
    let (engine, clock) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    w.store(Store::new(T, b"k", b"v")).unwrap();
    let now = clock_now(&clock);
    assert_eq!(w.set_expiry(T, b"k", Some(now + 100)), Ok(Some(None)));
    assert_eq!(w.set_expiry(T, b"k", None), Ok(Some(Some(now + 100))), "persist");
    assert_eq!(w.set_expiry(T, b"nope", None), Ok(None));
    let got = w.get_and_touch(T, b"k", Some(now + 50), |i| i.value.to_vec()).unwrap();
    assert_eq!(got, Some(b"v".to_vec()));
    clock.advance(51);
    assert_eq!(get(&mut w, b"k"), None);
    engine.validate();
}

#[test]
fn append_and_prepend() {
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    assert_eq!(w.append(T, b"k", b"x", false, false), Ok(None));
    assert_eq!(w.append(T, b"k", b"mid", false, true), Ok(Some(3)));
    assert_eq!(w.append(T, b"k", b"<", true, false), Ok(Some(4)));
    assert_eq!(w.append(T, b"k", b">", false, false), Ok(Some(5)));
    assert_eq!(get(&mut w, b"k"), Some(b"<mid>".to_vec()));
}

#[test]
fn delayed_flush_takes_effect_on_time() {
    let (engine, clock) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    w.store(Store::new(T, b"a", b"1")).unwrap();
    w.flush(T, 2_000);
    clock.advance(1_999);
    assert_eq!(get(&mut w, b"a"), Some(b"1".to_vec()));
    clock.advance(1);
    assert_eq!(get(&mut w, b"a"), None);
    w.store(Store::new(T, b"b", b"2")).unwrap();
    assert_eq!(get(&mut w, b"b"), Some(b"2".to_vec()), "items set after the flush stay");
    engine.validate();
}

#[test]
fn too_large_items_fail_and_nothing_else_does() {
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let big = vec![0u8; 64 << 10];
    assert_eq!(w.store(Store::new(T, b"k", &big)), Err(EngineError::TooLarge));
    assert_eq!(
        w.store(Store::new(T, b"", b"empty key")),
        Ok(StoreOutcome::Stored),
        "Redis allows it"
    );
    assert_eq!(get(&mut w, b""), Some(b"empty key".to_vec()));
    assert_eq!(w.store(Store::new(T, &vec![b'k'; 65536], b"v")), Err(EngineError::KeyTooLong));
    let long_key = vec![b'k'; 1000];
    assert_eq!(w.store(Store::new(T, &long_key, b"v")), Ok(StoreOutcome::Stored));
    assert_eq!(get(&mut w, &long_key), Some(b"v".to_vec()));
}

#[test]
fn values_never_grow_past_max_value_len() {
    let clock = fridge_engine::ManualClock::new(1_700_000_000_000);
    let config = fridge_engine::EngineConfig {
        max_memory: 4 << 20,
        segment_size: 64 << 10,
        max_item_size: 64 << 10,
        max_value_len: 1000,
        cleaner: fridge_engine::CleanerMode::Inline,
        ..fridge_engine::EngineConfig::default()
    };
    let engine = fridge_engine::Engine::with_clock(config, std::sync::Arc::new(clock)).unwrap();
    let mut w = engine.worker().unwrap();
    assert_eq!(w.store(Store::new(T, b"k", &[b'a'; 1001])), Err(EngineError::TooLarge));
    assert_eq!(w.store(Store::new(T, b"k", &[b'a'; 1000])), Ok(StoreOutcome::Stored));
    assert_eq!(w.append(T, b"k", b"b", false, false), Err(EngineError::TooLarge));
    assert_eq!(w.append(T, b"k", b"b", true, true), Err(EngineError::TooLarge));
    assert_eq!(get(&mut w, b"k"), Some(vec![b'a'; 1000]), "a refused append changes nothing");
    w.store(Store::new(T, b"k", &[b'a'; 990])).unwrap();
    assert_eq!(w.append(T, b"k", &[b'b'; 10], false, false), Ok(Some(1000)), "exactly fits");
    assert_eq!(w.append(T, b"new", &[b'c'; 1001], false, true), Err(EngineError::TooLarge));
    assert_eq!(get(&mut w, b"new"), None, "Redis APPEND creating a key obeys it too");
    // Any update that writes a longer value.
    let r = w.update(T, b"k", |_, buf| {
        buf.resize(1001, b'z');
        Ok(fridge_engine::Update::Write { flags: 0, expires_at_ms: None, result: () })
    });
    assert_eq!(r, Err(EngineError::TooLarge));
    assert_eq!(w.get(T, b"k", |i| i.value.len()), Some(1000));
    engine.validate();
}

#[test]
fn scan_returns_every_key_once_per_pass_without_churn() {
    let (engine, _) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    for i in 0..2000u32 {
        w.store(Store::new(T, format!("key{i}").as_bytes(), b"v")).unwrap();
        w.store(Store::new(TenantId(3), format!("other{i}").as_bytes(), b"v")).unwrap();
    }
    let mut keys = Vec::new();
    let mut cursor = 0;
    loop {
        cursor = w.scan(T, cursor, 10, &mut keys);
        if cursor == 0 {
            break;
        }
    }
    keys.sort();
    let before = keys.len();
    keys.dedup();
    assert_eq!(before, keys.len(), "no duplicates without a concurrent resize");
    assert_eq!(keys.len(), 2000);
    assert!(keys.iter().all(|k| k.starts_with(b"key")));
}

#[test]
fn get_many_agrees_with_get() {
    let (engine, clock) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let keys: Vec<Vec<u8>> = (0..100u32).map(|i| format!("many:{i}").into_bytes()).collect();
    for (i, k) in keys.iter().enumerate() {
        match i % 3 {
            0 => {} // never stored: a miss
            1 => {
                w.store(Store { flags: i as u32, ..Store::new(T, k, k) }).unwrap();
            }
            _ => {
                let soon = clock_now(&clock) + 10;
                w.store(Store { expiry: Expiry::At(soon), ..Store::new(T, k, b"short") }).unwrap();
            }
        }
    }
    clock.advance(11); // the i % 3 == 2 items expire
    let mut got = Vec::new();
    w.get_many(T, &keys, |i, item| got.push((i, item.value.to_vec(), item.flags)));
    let want: Vec<_> = keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| w.get(T, k, |item| (i, item.value.to_vec(), item.flags)))
        .collect();
    assert_eq!(got, want);
    assert_eq!(got.len(), 33, "only the i % 3 == 1 keys are live");
}

#[test]
fn overwrites_never_evict_while_live_data_fits() {
    // 1 MiB of 16 KiB segments, about 300 KB live: overwrites make dead space the cleaner
    // must reclaim by compaction alone.
    let (engine, _) = small_engine(1 << 20, 16 << 10);
    let mut w = engine.worker().unwrap();
    common::overwrite_at_random(&mut w, 600, 30_000);
    let s = engine.stats();
    assert!(s.cleaner_passes > 100, "the cleaner ran: {s:?}");
    assert_eq!(s.evictions + s.index_evictions, 0, "nothing live was evicted: {s:?}");
    for k in 0..300u64 {
        assert!(w.contains(T, &k.to_le_bytes()), "key {k} lost");
    }
    engine.validate();
}

#[test]
fn get_each_handles_every_chunk_boundary() {
    let (engine, _) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let keys: Vec<Vec<u8>> = (0..60u32).map(|i| format!("each:{i}").into_bytes()).collect();
    for k in keys.iter().step_by(2) {
        w.store(Store::new(T, k, k)).unwrap();
    }
    for n in [0, 1, 15, 16, 17, 32, 33, 47, 48, 49, 60] {
        let mut got = Vec::new();
        w.get_each(T, keys[..n].iter().map(Vec::as_slice), |i, key, item| {
            assert_eq!(key, item.value, "the callback gets the key it looked up");
            got.push(i);
        });
        let want: Vec<usize> = (0..n).step_by(2).collect();
        assert_eq!(got, want, "{n} keys");
    }
}
