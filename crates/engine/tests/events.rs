//! Key events: the keys the engine drops on its own reach the queue, only while it is on.

mod common;

use std::collections::HashSet;

use common::small_engine;
use fridge_engine::{Clock, Expiry, KeyEvent, KeyEventKind, Store, TenantId};

const T: TenantId = TenantId(0);

fn drain(engine: &fridge_engine::Engine) -> Vec<KeyEvent> {
    std::iter::from_fn(|| engine.pop_key_event()).collect()
}

#[test]
fn expiries_are_queued_from_lookups_and_the_sweep_only_while_on() {
    let (engine, clock) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let at = clock.now_ms() + 100;
    for key in [&b"read"[..], b"swept", b"before"] {
        w.store(Store { expiry: Expiry::At(at), ..Store::new(T, key, b"v") }).unwrap();
    }
    clock.advance(101);
    assert!(w.get(T, b"before", |_| ()).is_none());
    assert!(drain(&engine).is_empty(), "off: nothing queued");

    engine.set_key_events(true);
    assert!(w.get(T, b"read", |_| ()).is_none(), "a lookup reaps it");
    assert_eq!(engine.reclaim_expired(), 1, "the sweep reaps the other");
    let got: HashSet<(Vec<u8>, KeyEventKind)> =
        drain(&engine).into_iter().map(|e| (e.key.to_vec(), e.kind)).collect();
    let want: HashSet<(Vec<u8>, KeyEventKind)> =
        [(b"read".to_vec(), KeyEventKind::Expired), (b"swept".to_vec(), KeyEventKind::Expired)]
            .into();
    assert_eq!(got, want);
    assert_eq!(engine.key_events_dropped(), 0);
}

#[test]
fn evictions_are_queued_with_their_keys() {
    let (engine, _clock) = small_engine(4 << 20, 64 << 10);
    engine.set_key_events(true);
    let mut w = engine.worker().unwrap();
    let value = vec![b'v'; 1000];
    for i in 0..20_000u32 {
        w.store(Store::new(T, format!("k{i}").as_bytes(), &value)).unwrap();
    }
    let events = drain(&engine);
    let evicted: Vec<&KeyEvent> =
        events.iter().filter(|e| e.kind == KeyEventKind::Evicted).collect();
    assert!(!evicted.is_empty(), "20 MB into 4 MiB evicts");
    for e in evicted.iter().take(100) {
        assert_eq!(e.tenant, T);
        assert!(e.key.starts_with(b"k"));
        assert!(w.get(T, &e.key, |_| ()).is_none(), "an evicted key is gone");
    }
}
