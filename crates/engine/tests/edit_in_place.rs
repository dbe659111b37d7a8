//! Edits in place (`crate::edit`): a spliced update of a collection that keeps its length is
//! written over the item, moved runs and all; anything else writes a new item; and readers,
//! other writers and the cleaner never see an edit half done or lose one.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::small_engine;
use fridge_engine::{
    CleanerMode, Engine, EngineConfig, Kind, Store, StoreOutcome, SystemClock, TenantId, Update,
    Worker,
};

const T: TenantId = TenantId(0);
const HASH: Kind = Kind(1);

fn write(flags: u32, expires_at_ms: Option<u64>) -> Update<()> {
    Update::Write { flags, expires_at_ms, result: () }
}

fn read(w: &mut Worker, key: &[u8]) -> Option<(Vec<u8>, u64)> {
    w.get_kind(T, key, HASH, |i| (i.value.to_vec(), i.cas)).unwrap()
}

#[test]
fn a_collection_splice_of_its_own_length_is_written_in_place() {
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let r = w.store(Store { kind: HASH, ..Store::new(T, b"h", b"aaaa-bbbb-cccc") });
    assert_eq!(r, Ok(StoreOutcome::Stored));
    let (_, cas0) = read(&mut w, b"h").unwrap();
    let bytes0 = engine.stats().item_bytes;

    // One run replaced where it stands.
    w.update_kind_spliced(T, b"h", HASH, |cur, buf, splice| {
        assert_eq!(cur.unwrap().value, b"aaaa-bbbb-cccc");
        buf.extend_from_slice(b"XXXX");
        splice.current(0..5);
        splice.buf(0..4);
        splice.current(9..14);
        Ok(write(0, None))
    })
    .unwrap();
    let (value, cas1) = read(&mut w, b"h").unwrap();
    assert_eq!(value, b"aaaa-XXXX-cccc");
    assert!(cas1 > cas0, "an edit gives the item a new CAS (WATCH sees it): {cas0} → {cas1}");
    let s = engine.stats();
    assert_eq!(s.edits_in_place, 1, "{s:?}");
    assert_eq!(s.item_bytes, bytes0, "the item kept its place and size");

    // Runs that move: the halves swapped, a byte between them from the buffer.
    w.update_kind_spliced(T, b"h", HASH, |_, buf, splice| {
        buf.push(b'|');
        splice.current(8..14); // "X-cccc"
        splice.buf(0..1);
        splice.current(1..8); // "aaa-XXX"
        Ok(write(0, None))
    })
    .unwrap();
    assert_eq!(read(&mut w, b"h").unwrap().0, b"X-cccc|aaa-XXX");
    assert_eq!(engine.stats().edits_in_place, 2);

    // A splice of another length is a new item.
    w.update_kind_spliced(T, b"h", HASH, |_, buf, splice| {
        buf.extend_from_slice(b"++");
        splice.current(0..14);
        splice.buf(0..2);
        Ok(write(0, None))
    })
    .unwrap();
    assert_eq!(read(&mut w, b"h").unwrap().0, b"X-cccc|aaa-XXX++");
    assert_eq!(engine.stats().edits_in_place, 2, "a longer value is written anew");

    // So is one that changes the flags or the expiry.
    w.update_kind_spliced(T, b"h", HASH, |_, buf, splice| {
        buf.extend_from_slice(b"ab");
        splice.current(0..14);
        splice.buf(0..2);
        Ok(write(7, None))
    })
    .unwrap();
    assert_eq!(w.get_kind(T, b"h", HASH, |i| i.flags).unwrap(), Some(7));
    assert_eq!(engine.stats().edits_in_place, 2, "new flags are a new item");
    engine.validate();
}

/// Random splices of a value's length — runs of the current value in any order, overlapping
/// or repeated, with buffer bytes between them — written in place give the value the splice
/// names, whether the moved runs go straight where they land or through the stash.
#[test]
fn any_splice_of_the_value_s_length_is_written_in_place_as_it_reads() {
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |below: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % below as u64) as usize
    };
    for round in 0..2_000 {
        let len = 1 + next(300);
        let value: Vec<u8> = (0..len).map(|_| next(256) as u8).collect();
        w.store(Store { kind: HASH, ..Store::new(T, b"h", &value) }).unwrap();
        // Pieces: (from the current value?, start, len), filling `len` bytes in all.
        let mut pieces = Vec::new();
        let mut left = len;
        while left > 0 {
            let n = 1 + next(left.min(1 + len / 3));
            if next(3) > 0 {
                pieces.push((true, next(len - n + 1), n));
            } else {
                pieces.push((false, 0, n));
            }
            left -= n;
        }
        let fresh: Vec<u8> = (0..len).map(|_| next(256) as u8).collect();
        let mut expected = Vec::new();
        for &(current, start, n) in &pieces {
            let bytes = if current { &value[start..start + n] } else { &fresh[start..start + n] };
            expected.extend_from_slice(bytes);
        }
        let before = engine.stats().edits_in_place;
        w.update_kind_spliced(T, b"h", HASH, |_, buf, splice| {
            buf.extend_from_slice(&fresh);
            for &(current, start, n) in &pieces {
                if current {
                    splice.current(start..start + n);
                } else {
                    splice.buf(start..start + n);
                }
            }
            Ok(write(0, None))
        })
        .unwrap();
        assert_eq!(read(&mut w, b"h").unwrap().0, expected, "round {round}: {pieces:?}");
        assert_eq!(engine.stats().edits_in_place, before + 1, "round {round}");
    }
    engine.validate();
}

#[test]
fn strings_and_unspliced_updates_are_never_edited_in_place() {
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    w.store(Store::new(T, b"s", b"0123456789")).unwrap();
    let pinned = w.get_pinned(T, b"s", Kind::STRING, 1, |_, pin| pin).unwrap().flatten();
    w.update_kind_spliced(T, b"s", Kind::STRING, |_, buf, splice| {
        buf.extend_from_slice(b"AB");
        splice.current(0..4);
        splice.buf(0..2);
        splice.current(6..10);
        Ok(write(0, None))
    })
    .unwrap();
    assert_eq!(w.get(T, b"s", |i| i.value.to_vec()), Some(b"0123AB6789".to_vec()));
    if let Some(pin) = pinned {
        assert_eq!(pin.bytes(), b"0123456789", "a pinned string's bytes never change");
    }
    w.store(Store { kind: HASH, ..Store::new(T, b"h", b"abcd") }).unwrap();
    w.update_kind(T, b"h", HASH, |_, buf| {
        buf.extend_from_slice(b"wxyz");
        Ok(write(0, None))
    })
    .unwrap();
    assert_eq!(read(&mut w, b"h").unwrap().0, b"wxyz");
    assert_eq!(engine.stats().edits_in_place, 0, "{:?}", engine.stats());
    engine.validate();
}

/// Readers on other threads read a collection while one writer edits it in place, other
/// writers fill the cache so that the background cleaner relocates (and may evict) it, and
/// the value is a sequence number repeated: a read must see one number throughout (no edit
/// half done), never older than one it saw before (no edit lost to a relocation copied
/// before it), and the last read the last number written.
#[test]
fn readers_writers_and_the_cleaner_never_see_an_edit_half_done_or_lose_one() {
    const WORDS: usize = 1024; // an 8 KiB collection
    const EDITS: u64 = 30_000;
    let config = EngineConfig {
        max_memory: 8 << 20,
        segment_size: 64 << 10,
        max_item_size: 64 << 10,
        cleaner: CleanerMode::Background,
        workers_hint: 5,
        ..EngineConfig::default()
    };
    let engine = Engine::with_clock(config, Arc::new(SystemClock)).unwrap();
    let value = |n: u64| -> Vec<u8> { (0..WORDS).flat_map(|_| n.to_le_bytes()).collect() };
    let number = |v: &[u8]| -> u64 {
        assert_eq!(v.len(), WORDS * 8);
        let first = u64::from_le_bytes(v[..8].try_into().unwrap());
        for w in v.chunks_exact(8) {
            assert_eq!(u64::from_le_bytes(w.try_into().unwrap()), first, "an edit half done");
        }
        first
    };
    engine.worker().unwrap().store(Store { kind: HASH, ..Store::new(T, b"h", &value(0)) }).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (engine, stop) = (engine.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut w = engine.worker().unwrap();
                let (mut last, mut reads) = (0, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    if let Some(n) = w.get_kind(T, b"h", HASH, |i| number(i.value)).unwrap() {
                        assert!(n >= last, "a read went back from {last} to {n}");
                        last = n;
                        reads += 1;
                    }
                }
                reads
            })
        })
        .collect();
    let fillers: Vec<_> = (0..2u64)
        .map(|t| {
            let (engine, stop) = (engine.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut w = engine.worker().unwrap();
                let payload = vec![b'x'; 2000];
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let key = ((t << 32) | (i % 20_000)).to_le_bytes();
                    w.store(Store::new(T, &key, &payload)).unwrap();
                    i += 1;
                }
            })
        })
        .collect();
    let mut w = engine.worker().unwrap();
    for n in 1..=EDITS {
        let new = value(n);
        w.update_kind_spliced(T, b"h", HASH, |cur, buf, splice| {
            if let Some(c) = cur {
                let old = number(c.value);
                assert_eq!(old, n - 1, "the writer's own edits are never lost");
            }
            buf.extend_from_slice(&new);
            splice.buf(0..new.len());
            Ok(write(0, None))
        })
        .unwrap();
    }
    let last = read(&mut w, b"h").map(|(v, _)| number(&v));
    stop.store(true, Ordering::Relaxed);
    let reads: u64 = readers.into_iter().map(|r| r.join().expect("a reader panicked")).sum();
    for f in fillers {
        f.join().expect("a filler panicked");
    }
    let s = engine.stats();
    assert_eq!(last, Some(EDITS), "{s:?}");
    assert!(reads > 0);
    assert!(s.edits_in_place > EDITS / 2, "most edits were in place: {s:?}");
    assert!(s.relocated_items > 0, "the cleaner ran: {s:?}");
    engine.validate();
}
