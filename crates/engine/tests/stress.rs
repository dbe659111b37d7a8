//! Concurrency stress: threads overwrite, read and delete overlapping keys with checksummed
//! values while the background cleaner runs. Every read must return a value some SET wrote
//! for that key — never a torn or foreign one. Bounded in operations; a deadlock shows up
//! as the test timing out.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use fridge_engine::{
    CleanerMode, Engine, EngineConfig, Eviction, Queues, Store, SystemClock, TenantId, Update,
};

const THREADS: u64 = 4;
const OPS_PER_THREAD: u64 = 150_000;
const KEYS: u64 = 3_000;

fn checksum(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// value = key id (8) | writer (8) | sequence (8) | payload | checksum of all before (8)
fn make_value(key: u64, writer: u64, seq: u64, len: usize, buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(&key.to_le_bytes());
    buf.extend_from_slice(&writer.to_le_bytes());
    buf.extend_from_slice(&seq.to_le_bytes());
    buf.extend((0..len).map(|i| (seq as usize * 7 + i) as u8));
    let sum = checksum(buf);
    buf.extend_from_slice(&sum.to_le_bytes());
}

fn check_value(key: u64, v: &[u8]) {
    assert!(v.len() >= 32, "short value for key {key}: {} bytes", v.len());
    let (body, sum) = v.split_at(v.len() - 8);
    assert_eq!(
        checksum(body),
        u64::from_le_bytes(sum.try_into().unwrap()),
        "torn value, key {key}"
    );
    assert_eq!(
        u64::from_le_bytes(body[..8].try_into().unwrap()),
        key,
        "foreign value for key {key}"
    );
}

#[test]
fn concurrent_readers_and_writers_never_see_torn_values() {
    readers_and_writers(Eviction::Memshare, 0);
}

/// The same with S3-FIFO's queues: promotions, reinsertions and the ghost's admissions race
/// with readers and writers.
#[test]
fn concurrent_readers_and_writers_never_see_torn_values_with_queues() {
    readers_and_writers(Eviction::Queues(Queues::default()), 0);
}

/// The same with a small SLB in front of the index (64 buckets for 3,000 keys, so entries are
/// replaced all the time): a location cached while its item is overwritten, deleted,
/// relocated or evicted and its segment reused would show as a foreign or torn value.
#[test]
fn concurrent_readers_and_writers_never_see_torn_values_with_an_slb() {
    readers_and_writers(Eviction::Queues(Queues::default()), 64 * 64);
}

fn readers_and_writers(eviction: Eviction, slb_bytes: usize) {
    let config = EngineConfig {
        slb_bytes,
        eviction,
        max_memory: 8 << 20,
        segment_size: 64 << 10,
        max_item_size: 64 << 10,
        large_value_threshold: 16 << 10,
        cleaner: CleanerMode::Background,
        cleaner_candidates: 16,
        workers_hint: THREADS as usize,
        index_buckets: 64,
        ..EngineConfig::default()
    };
    let engine = Engine::with_clock(config, Arc::new(SystemClock)).unwrap();
    let hits = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..THREADS)
        .map(|writer| {
            let engine = engine.clone();
            let hits = Arc::clone(&hits);
            std::thread::spawn(move || {
                let mut w = engine.worker().unwrap();
                let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ writer;
                let mut buf = Vec::new();
                for seq in 0..OPS_PER_THREAD {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let key = rng % KEYS;
                    let k = key.to_le_bytes();
                    match rng >> 60 {
                        0..=5 => {
                            let len =
                                if rng % 97 == 0 { 20_000 } else { (rng >> 20) as usize % 3000 };
                            make_value(key, writer, seq, len, &mut buf);
                            w.store(Store::new(TenantId((key % 3) as u16), &k, &buf)).unwrap();
                        }
                        6 => {
                            w.delete(TenantId((key % 3) as u16), &k);
                        }
                        _ => {
                            if w.get(TenantId((key % 3) as u16), &k, |i| check_value(key, i.value))
                                .is_some()
                            {
                                hits.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a worker thread panicked");
    }
    let s = engine.stats();
    assert!(s.cleaner_passes > 0 && s.relocated_items > 0, "the cleaner must have run: {s:?}");
    assert!(s.index_resizes > 0, "the index must have grown under load: {s:?}");
    assert!(hits.load(Ordering::Relaxed) > 0);
    assert_eq!(s.slb_hits > 0, slb_bytes > 0, "the SLB answers lookups iff it is on: {s:?}");
    engine.validate();
}

/// Keys stored once and never touched again must be found by every lookup, while other keys
/// churn through the same bucket trees (deletes move items up the trees) and the index grows.
#[test]
fn stable_keys_are_never_missed_while_others_churn() {
    stable_keys_while_others_churn(0);
}

/// The same with an SLB: the stable keys are hot and cached, while the churn moves slots
/// around their trees and migrates them to new tables.
#[test]
fn stable_keys_are_never_missed_while_others_churn_with_an_slb() {
    stable_keys_while_others_churn(256 * 64);
}

fn stable_keys_while_others_churn(slb_bytes: usize) {
    const STABLE: u64 = 2_000;
    let config = EngineConfig {
        slb_bytes,
        max_memory: 64 << 20,
        segment_size: 256 << 10,
        max_item_size: 256 << 10,
        cleaner: CleanerMode::Background,
        index_buckets: 16,
        workers_hint: 4,
        ..EngineConfig::default()
    };
    let engine = Engine::with_clock(config, Arc::new(SystemClock)).unwrap();
    let mut w = engine.worker().unwrap();
    for k in 0..STABLE {
        w.store(Store::new(TenantId(0), &k.to_le_bytes(), b"stable")).unwrap();
    }
    let churners: Vec<_> = (0..2u64)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let mut w = engine.worker().unwrap();
                for i in 0..200_000u64 {
                    let k = (1 << 32 | t << 24 | (i % 5_000)).to_le_bytes();
                    if i % 3 == 2 {
                        w.delete(TenantId(0), &k);
                    } else {
                        w.store(Store::new(TenantId(0), &k, b"churn")).unwrap();
                    }
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2u64)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let mut w = engine.worker().unwrap();
                for i in 0..300_000u64 {
                    let k = ((i * 7 + t) % STABLE).to_le_bytes();
                    let hit = w.get(TenantId(0), &k, |it| it.value == b"stable");
                    assert_eq!(hit, Some(true), "stable key {} missed", (i * 7 + t) % STABLE);
                }
            })
        })
        .collect();
    for t in churners.into_iter().chain(readers) {
        t.join().expect("thread panicked");
    }
    let s = engine.stats();
    assert_eq!(s.evictions + s.index_evictions, 0, "nothing may be evicted here: {s:?}");
    assert!(s.index_resizes > 0, "the index grew during the test: {s:?}");
    assert_eq!(s.slb_hits > 0, slb_bytes > 0, "the SLB answers lookups iff it is on: {s:?}");
    engine.validate();
}

/// A writer that outpaces the background cleaner must wait for cleaning rather than evict
/// whole segments of live items, as long as every item fits (the thesis's 10 B / 300 B / 1 MB
/// mix, scaled down).
#[test]
fn a_fast_writer_never_loses_items_that_fit() {
    let config = EngineConfig {
        max_memory: 64 << 20,
        segment_size: 1 << 20,
        max_item_size: 1 << 20,
        workers_hint: 1,
        cleaner: CleanerMode::Background,
        ..EngineConfig::default()
    };
    let engine = Engine::with_clock(config, Arc::new(SystemClock)).unwrap();
    let mut w = engine.worker().unwrap();
    let size = |k: u64| match k.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 100 {
        0..=49 => 10,
        50..=94 => 300,
        _ => 400_000,
    };
    let value = vec![1u8; 400_000];
    let mut x = 7u64;
    for i in 0..60_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = if i < 1000 { i } else { x % 1000 };
        w.store(Store::new(TenantId(0), &k.to_le_bytes(), &value[..size(k)])).unwrap();
    }
    let missing: Vec<u64> =
        (0..1000u64).filter(|k| !w.contains(TenantId(0), &k.to_le_bytes())).collect();
    let s = engine.stats();
    assert!(missing.is_empty(), "lost {} keys: {s:?}", missing.len());
    assert_eq!(s.fifo_evictions, 0, "{s:?}");
}

/// An update that deletes (a pop that empties a list) applies only to the version it read:
/// racing appends and take-alls on one key lose or duplicate nothing. (A delete decided on a
/// stale read once reported success without deleting: elements were taken twice.)
#[test]
fn a_delete_decided_on_a_stale_read_goes_again() {
    let engine =
        Arc::new(Engine::with_clock(EngineConfig::default(), Arc::new(SystemClock)).unwrap());
    const PUSHES: u64 = 20_000;
    let pusher = {
        let engine = Arc::clone(&engine);
        std::thread::spawn(move || {
            let mut w = engine.worker().unwrap();
            for _ in 0..PUSHES {
                w.update(TenantId(0), b"list", |cur, buf| {
                    buf.extend_from_slice(cur.map_or(&[][..], |c| c.value));
                    buf.push(b'e');
                    Ok(Update::Write { flags: 0, expires_at_ms: None, result: () })
                })
                .unwrap();
            }
        })
    };
    let mut w = engine.worker().unwrap();
    let mut taken = 0u64;
    while !pusher.is_finished() {
        taken += w
            .update(TenantId(0), b"list", |cur, _| {
                Ok(match cur {
                    Some(c) => Update::Delete(c.value.len() as u64),
                    None => Update::Done(0),
                })
            })
            .unwrap();
    }
    pusher.join().unwrap();
    let left = w.get(TenantId(0), b"list", |i| i.value.len() as u64).unwrap_or(0);
    assert_eq!(taken + left, PUSHES, "every element taken once or left");
}
