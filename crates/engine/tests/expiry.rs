//! The expiry sweep: expired items that nothing reads leave the counts, on a virtual clock.

mod common;

use common::small_engine;
use fridge_engine::{Clock, Expiry, Store, TenantId};

const T: TenantId = TenantId(0);

fn store_with_ttl(w: &mut fridge_engine::Worker, key: &[u8], at: Option<u64>) {
    let expiry = at.map_or(Expiry::Never, Expiry::At);
    w.store(Store { expiry, ..Store::new(T, key, b"value") }).unwrap();
}

#[test]
fn sweep_drops_expired_items_from_the_counts() {
    let (engine, clock) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let now = clock.now_ms();
    for i in 0..3000u32 {
        // A third never expire, a third at +1 s, a third at +2 s.
        let at = match i % 3 {
            0 => None,
            1 => Some(now + 1_000),
            _ => Some(now + 2_000),
        };
        store_with_ttl(&mut w, format!("k{i}").as_bytes(), at);
    }
    assert_eq!(engine.item_count(T), 3000);
    assert_eq!(engine.expiring_count(T), 2000);
    assert_eq!(engine.reclaim_expired(), 0, "nothing is due yet");
    assert_eq!(engine.stats().sweep_passes, 0, "and no pass ran");

    clock.advance(1_000);
    assert_eq!(engine.reclaim_expired(), 0, "at its deadline an item is still live (Redis)");
    clock.advance(1);
    assert_eq!(engine.item_count(T), 3000, "nothing reads the expired items: still counted");
    assert_eq!(engine.reclaim_expired(), 1000);
    assert_eq!(engine.item_count(T), 2000);
    assert_eq!(engine.expiring_count(T), 1000);
    let s = engine.stats();
    assert_eq!((s.items, s.expired, s.expired_swept), (2000, 1000, 1000));
    engine.validate();

    // The bound is the next expiry: no pass until it is due.
    let passes = engine.stats().sweep_passes;
    clock.advance(500);
    assert_eq!(engine.reclaim_expired(), 0);
    assert_eq!(engine.stats().sweep_passes, passes, "not due: the sweep sleeps");
    clock.advance(500);
    assert_eq!(engine.reclaim_expired(), 1000);
    assert_eq!((engine.item_count(T), engine.expiring_count(T)), (1000, 0));
    for i in (0..3000u32).step_by(3) {
        assert!(w.contains(T, format!("k{i}").as_bytes()), "items without expiry stay");
    }
    engine.validate();
}

#[test]
fn items_stored_after_a_pass_lower_the_bound() {
    let (engine, clock) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let now = clock.now_ms();
    store_with_ttl(&mut w, b"late", Some(now + 60_000));
    store_with_ttl(&mut w, b"soon", Some(now + 10));
    clock.advance(11);
    assert_eq!(engine.reclaim_expired(), 1);
    // The bound is now `late`'s expiry; an earlier one must lower it.
    store_with_ttl(&mut w, b"sooner", Some(clock.now_ms() + 5));
    w.set_expiry(T, b"late", Some(clock.now_ms() + 7)).unwrap();
    engine.validate();
    clock.advance(8);
    assert_eq!(engine.reclaim_expired(), 2);
    assert_eq!((engine.item_count(T), engine.expiring_count(T)), (0, 0));
    engine.validate();
}

#[test]
fn overwrites_deletes_and_touches_keep_the_expiring_count() {
    let (engine, clock) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let at = Some(clock.now_ms() + 1_000);
    store_with_ttl(&mut w, b"a", at);
    store_with_ttl(&mut w, b"a", None);
    store_with_ttl(&mut w, b"b", None);
    w.set_expiry(T, b"b", at).unwrap();
    store_with_ttl(&mut w, b"c", at);
    w.delete(T, b"c");
    w.append(T, b"b", b"+", false, false).unwrap();
    assert_eq!((engine.item_count(T), engine.expiring_count(T)), (2, 1));
    engine.validate();
    w.flush(T, 0);
    assert_eq!(engine.expiring_count(T), 0);
    engine.validate();
}

#[test]
fn later_passes_read_only_segments_with_something_due() {
    let (engine, clock) = small_engine(16 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let now = clock.now_ms();
    // Every segment gets an early item, so the first pass must read them all.
    for i in 0..20_000u32 {
        let at = if i % 500 == 0 { now + 1 } else { now + 60_000 + u64::from(i) };
        store_with_ttl(&mut w, format!("k{i}").as_bytes(), Some(at));
    }
    clock.advance(2);
    assert_eq!(engine.reclaim_expired(), 40);
    let first = engine.stats().sweep_checked;
    assert!(first >= 19_960, "the first pass reads every record: {first}");
    // One more item expires: the next pass reads its segment only.
    store_with_ttl(&mut w, b"late", Some(clock.now_ms() + 1));
    clock.advance(2);
    assert_eq!(engine.reclaim_expired(), 1);
    let second = engine.stats().sweep_checked - first;
    // (That segment is the head `late` went into: about 2,800 items of 64 KiB, of the eight
    // segments the first pass read.)
    assert!(second < first / 4, "the next pass skips segments with nothing due: {second}");
    // Time moves past the first of the long expiries: they go, and nothing else.
    clock.set(now + 60_000 + 100);
    assert_eq!(engine.reclaim_expired(), 99, "keys 1 to 99 (key 0 expired early)");
    engine.validate();
}

/// Stores race with passes: whatever the interleaving, the bound stays below every live
/// item's expiry (checked by `validate`), so the last pass reclaims everything. Run with room
/// to spare, then in 1 MiB of 16 KiB segments, where the cleaner copies items under the
/// passes, and the index grows from 16 roots in both.
#[test]
fn concurrent_stores_never_escape_the_sweep() {
    for (memory, segment) in [(32 << 20, 64 << 10), (1 << 20, 16 << 10)] {
        concurrent_stores_and_sweeps(memory, segment);
    }
}

fn concurrent_stores_and_sweeps(memory: usize, segment: usize) {
    let (engine, clock) = small_engine(memory, segment);
    let start = clock.now_ms();
    let writers: Vec<_> = (0..2u32)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let mut w = engine.worker().unwrap();
                for i in 0..20_000u32 {
                    let at = start + 1 + u64::from(i % 97);
                    let key = format!("w{t}:{}", i % 5000);
                    store_with_ttl(&mut w, key.as_bytes(), Some(at));
                }
            })
        })
        .collect();
    let sweeper = {
        let engine = engine.clone();
        let clock = clock.clone();
        std::thread::spawn(move || {
            for _ in 0..200 {
                clock.advance(1);
                engine.reclaim_expired();
            }
        })
    };
    for w in writers {
        w.join().unwrap();
    }
    sweeper.join().unwrap();
    engine.validate();
    clock.set(start + 1_000);
    engine.reclaim_expired();
    assert_eq!((engine.item_count(T), engine.expiring_count(T)), (0, 0));
    engine.validate();
}

/// Passes run a little at a time between stores while compactions copy items into segments
/// taken after the pass began (whose copies the cleaner reports to the bound itself). One key
/// expires well before all others and is copied over and over; after every pass, the bound
/// must not pass over it (`validate`).
#[test]
fn items_the_cleaner_copies_mid_pass_stay_under_the_bound() {
    let (engine, clock) = small_engine(1 << 20, 16 << 10);
    let mut w = engine.worker().unwrap();
    let start = clock.now_ms();
    store_with_ttl(&mut w, b"early", Some(start + 1_000_000));
    let late = Some(start + 2_000_000);
    let value = [9u8; 200];
    let (mut passes, mut x) = (0, 1u64);
    for i in 0..40_000u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = format!("churn{}", x % 2000);
        let expiry = late.map_or(Expiry::Never, Expiry::At);
        w.store(Store { expiry, ..Store::new(T, key.as_bytes(), &value) }).unwrap();
        if i % 400 == 0 {
            // Something is always due, so passes keep running, a little at a time. (Rarely
            // enough that most segments hold only late items: their bounds let the pass skip.)
            store_with_ttl(&mut w, format!("instant{i}").as_bytes(), Some(clock.now_ms() + 1));
            clock.advance(2);
        }
        if i % 10 == 0 {
            let (_, in_pass) = engine.reclaim_expired_step(16);
            if !in_pass {
                passes += 1;
                engine.validate();
            }
        }
    }
    let s = engine.stats();
    assert!(s.relocated_items > 10_000, "compactions copied items: {s:?}");
    assert!(passes > 20, "passes completed: {passes}");
    assert!(w.contains(T, b"early"));
}

/// At exactly its deadline an item is still live, for reads and for updates that keep its
/// deadline alike (Redis: `now > when` expires; APPEND or INCR in that millisecond find the
/// key). An update used to count the kept deadline as passed and deleted the key while
/// reporting success (found by the model test).
#[test]
fn an_update_at_exactly_the_deadline_keeps_the_item() {
    let (engine, clock) = small_engine(8 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let t = TenantId(0);
    let at = clock.now_ms() + 1_000;
    store_with_ttl(&mut w, b"k", Some(at));
    clock.set(at);
    assert_eq!(w.append(t, b"k", b"+", false, false).unwrap(), Some(6), "value+");
    assert_eq!(w.get(t, b"k", |i| i.expires_at_ms), Some(Some(at)), "live, deadline kept");
    clock.set(at + 1);
    assert!(w.get(t, b"k", |_| ()).is_none(), "gone a millisecond later");
}
