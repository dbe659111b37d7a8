//! Value kinds: an operation meant for one kind neither reads nor overwrites a value of
//! another, a store replaces whatever the key held, and the kind survives every way an item
//! is rewritten (TTL changes, the cleaner's relocation).

mod common;

use common::small_engine;
use fridge_engine::{
    Clock, Condition, EngineError, Expiry, Kind, Store, StoreOutcome, TenantId, Update, item,
};

const T: TenantId = TenantId(0);
const HASH: Kind = Kind(1);
const LIST: Kind = Kind(2);

fn store_kind(w: &mut fridge_engine::Worker, key: &[u8], value: &[u8], kind: Kind) {
    let r = w.store(Store { kind, ..Store::new(T, key, value) });
    assert_eq!(r, Ok(StoreOutcome::Stored));
}

#[test]
fn string_reads_see_another_kind_as_absent_and_kind_reads_tell_it_apart() {
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    store_kind(&mut w, b"h", b"packed", HASH);
    w.store(Store::new(T, b"s", b"plain")).unwrap();

    assert_eq!(w.get(T, b"h", |i| i.value.to_vec()), None, "GET of a hash is no string");
    assert_eq!(w.peek(T, b"h", |i| i.value.to_vec()), None);
    let mut seen = Vec::new();
    w.get_many(T, &[&b"h"[..], b"s"], |i, item| seen.push((i, item.value.to_vec())));
    assert_eq!(seen, vec![(1, b"plain".to_vec())], "MGET skips the hash");

    assert_eq!(w.get_kind(T, b"h", HASH, |i| i.value.to_vec()), Ok(Some(b"packed".to_vec())));
    assert_eq!(w.get_kind(T, b"h", LIST, |i| i.value.len()), Err(EngineError::WrongKind));
    assert_eq!(w.get_kind(T, b"s", HASH, |i| i.value.len()), Err(EngineError::WrongKind));
    assert_eq!(w.get_kind(T, b"none", HASH, |i| i.value.len()), Ok(None));
    assert_eq!(w.get_any(T, b"h", |i| i.kind), Some(HASH));
    assert_eq!(
        w.get_any(T, b"s", |i| (i.kind, i.value.to_vec())),
        Some((Kind::STRING, b"plain".to_vec()))
    );
    assert!(w.contains(T, b"h"), "membership sees every kind");
    assert_eq!(w.inspect(T, b"h").map(|i| i.kind), Some(HASH));
    engine.validate();
}

#[test]
fn an_update_of_one_kind_refuses_another_and_changes_nothing() {
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    store_kind(&mut w, b"h", b"packed", HASH);
    let mut called = false;
    let r = w.update(T, b"h", |_, buf| {
        called = true;
        buf.extend_from_slice(b"1");
        Ok(Update::Write { flags: 0, expires_at_ms: None, result: () })
    });
    assert_eq!(r, Err(EngineError::WrongKind));
    assert!(!called, "the closure never sees a value of another kind");
    assert_eq!(w.append(T, b"h", b"x", false, true), Err(EngineError::WrongKind));
    assert_eq!(w.get_kind(T, b"h", HASH, |i| i.value.to_vec()), Ok(Some(b"packed".to_vec())));

    // An update of the key's own kind sees it and writes that kind; on a missing key it
    // creates one.
    let r = w.update_kind(T, b"h", HASH, |cur, buf| {
        let c = cur.expect("the hash");
        assert_eq!(c.kind, HASH);
        buf.extend_from_slice(c.value);
        buf.extend_from_slice(b"+");
        Ok(Update::Write { flags: 0, expires_at_ms: c.expires_at_ms, result: () })
    });
    assert_eq!(r, Ok(()));
    assert_eq!(
        w.get_any(T, b"h", |i| (i.kind, i.value.to_vec())),
        Some((HASH, b"packed+".to_vec()))
    );
    let r = w.update_kind(T, b"l", LIST, |cur, buf| {
        assert!(cur.is_none());
        buf.extend_from_slice(b"new");
        Ok(Update::Write { flags: 0, expires_at_ms: None, result: () })
    });
    assert_eq!(r, Ok(()));
    assert_eq!(w.get_any(T, b"l", |i| i.kind), Some(LIST));
    engine.validate();
}

#[test]
fn a_spliced_update_writes_its_pieces_in_order_whether_or_not_the_head_has_room() {
    // Values of 10 KB in 64 KiB segments: most updates are written from their pieces while
    // the current item is pinned, and every few the head is full and the pieces are joined
    // first. Each replaces a run in the middle, keeps the runs around it and adds a byte.
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    let mut model: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    w.update_kind(T, b"h", HASH, |_, buf| {
        buf.extend_from_slice(&model);
        Ok(Update::Write { flags: 0, expires_at_ms: None, result: () })
    })
    .unwrap();
    for round in 0..60usize {
        let at = (round * 997) % 9_000;
        let r = w.update_kind_spliced(T, b"h", HASH, |cur, buf, splice| {
            let c = cur.expect("the value");
            assert_eq!(c.value, &model[..]);
            buf.extend_from_slice(&[round as u8; 7]);
            splice.current(0..at);
            splice.buf(0..7);
            splice.current(at + 5..c.value.len());
            splice.buf(0..1);
            Ok(Update::Write { flags: 7, expires_at_ms: None, result: round })
        });
        assert_eq!(r, Ok(round));
        let mut next = model[..at].to_vec();
        next.extend_from_slice(&[round as u8; 7]);
        next.extend_from_slice(&model[at + 5..]);
        next.push(round as u8);
        model = next;
        assert_eq!(
            w.get_kind(T, b"h", HASH, |i| (i.flags, i.value.to_vec())),
            Ok(Some((7, model.clone())))
        );
        engine.validate();
    }
    // An empty splice writes the buffer; a splice with a delete is ignored.
    let r = w.update_kind_spliced(T, b"h", HASH, |_, buf, _| {
        buf.extend_from_slice(b"whole");
        Ok(Update::Write { flags: 0, expires_at_ms: None, result: () })
    });
    assert_eq!(r, Ok(()));
    assert_eq!(w.get_kind(T, b"h", HASH, |i| i.value.to_vec()), Ok(Some(b"whole".to_vec())));
    let r = w.update_kind_spliced(T, b"h", HASH, |_, _, splice| {
        splice.current(0..2);
        Ok(Update::Delete(()))
    });
    assert_eq!(r, Ok(()));
    assert_eq!(w.get_kind(T, b"h", HASH, |i| i.value.to_vec()), Ok(None));
    engine.validate();
}

#[test]
fn a_store_replaces_any_kind_and_its_conditions_see_every_kind() {
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    store_kind(&mut w, b"h", b"packed", HASH);
    let nx = Store { condition: Condition::IfAbsent, ..Store::new(T, b"h", b"s") };
    assert_eq!(w.store(nx), Ok(StoreOutcome::NotStored), "SETNX: the key exists");
    let xx = Store { condition: Condition::IfPresent, ..Store::new(T, b"h", b"s") };
    assert_eq!(w.store(xx), Ok(StoreOutcome::Stored), "SET XX replaces the hash");
    assert_eq!(
        w.get_any(T, b"h", |i| (i.kind, i.value.to_vec())),
        Some((Kind::STRING, b"s".to_vec()))
    );
    store_kind(&mut w, b"h", b"again", HASH);
    assert_eq!(w.get_any(T, b"h", |i| i.kind), Some(HASH), "and a hash replaces a string");
    assert_eq!(engine.item_count(T), 1);
    engine.validate();
}

#[test]
fn expiry_changes_and_deletes_work_on_every_kind_and_keep_it() {
    let (engine, clock) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    store_kind(&mut w, b"h", b"packed", HASH);
    let at = clock.now_ms() + 60_000;
    assert_eq!(w.set_expiry(T, b"h", Some(at)), Ok(Some(None)));
    assert_eq!(w.get_any(T, b"h", |i| (i.kind, i.expires_at_ms)), Some((HASH, Some(at))));
    assert_eq!(w.touch(T, b"h", None), Ok(Some(Some(at))));
    assert_eq!(w.get_any(T, b"h", |i| (i.kind, i.expires_at_ms)), Some((HASH, None)));
    let keep = Store { expiry: Expiry::Keep, ..Store::new(T, b"h", b"s") };
    assert_eq!(w.store(keep), Ok(StoreOutcome::Stored), "SET KEEPTTL replaces any kind");
    assert_eq!(w.get(T, b"h", |i| i.value.to_vec()), Some(b"s".to_vec()));
    store_kind(&mut w, b"h", b"packed", HASH);
    assert!(w.delete(T, b"h"));
    assert!(!w.contains(T, b"h"));
    engine.validate();
}

#[test]
fn a_kind_costs_one_byte_of_record_and_only_when_not_a_string() {
    let (engine, _) = small_engine(4 << 20, 64 << 10);
    let mut w = engine.worker().unwrap();
    store_kind(&mut w, b"h", b"v", HASH);
    w.store(Store::new(T, b"s", b"v")).unwrap();
    let size = |w: &mut fridge_engine::Worker, k: &[u8]| w.inspect(T, k).unwrap().size;
    assert_eq!(size(&mut w, b"s"), item::record_len(1, false, item::ExpiryField::None, false) + 1);
    assert_eq!(size(&mut w, b"h"), size(&mut w, b"s") + 1);
    engine.validate();
}

#[test]
fn relocation_keeps_the_kind() {
    let (engine, _) = small_engine(1 << 20, 16 << 10);
    let mut w = engine.worker().unwrap();
    let kinds = [Kind::STRING, HASH, LIST, Kind(255)];
    for (i, kind) in kinds.iter().enumerate() {
        store_kind(&mut w, format!("kept{i}").as_bytes(), &[i as u8; 40], *kind);
    }
    let value = [3u8; 1000];
    let mut written = std::collections::HashMap::new();
    let mut x = 12345u64;
    for round in 0..30_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = x % 600;
        let kind = kinds[round % 4];
        w.store(Store { kind, ..Store::new(T, &k.to_le_bytes(), &value) }).unwrap();
        written.insert(k, kind);
        // Keep the four items read so that they survive the cleaner's passes.
        if round % 64 == 0 {
            for (i, kind) in kinds.iter().enumerate() {
                w.get_any(T, format!("kept{i}").as_bytes(), |_| ());
                let _ = w.get_kind(T, format!("kept{i}").as_bytes(), *kind, |_| ());
            }
        }
    }
    assert!(engine.stats().relocated_items > 0, "the cleaner moved items");
    for (i, kind) in kinds.iter().enumerate() {
        let got = w.get_any(T, format!("kept{i}").as_bytes(), |it| (it.kind, it.value.to_vec()));
        if let Some(got) = got {
            assert_eq!(got, (*kind, vec![i as u8; 40]), "item {i}");
        }
    }
    // Every live item still has the kind it was written with.
    let mut cursor = 0;
    let mut seen = 0;
    loop {
        cursor = w.walk_bounded(Some(T), cursor, 64, |m| {
            if m.key.len() == 8 {
                let k = u64::from_le_bytes(m.key.try_into().unwrap());
                assert_eq!(Some(&m.kind), written.get(&k), "key {k}");
                assert_eq!(m.value_len, 1000);
                seen += 1;
            }
        });
        if cursor == 0 {
            break;
        }
    }
    assert!(seen > 0);
    engine.validate();
}
