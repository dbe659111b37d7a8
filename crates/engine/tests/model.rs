//! Property test: random operation sequences against a simple model (a map with expiry).
//!
//! Memory is small so the cleaner runs all the time. The engine is a cache, so it may drop
//! items: the model tracks which items are *certain* (written after the last eviction). A
//! read of a certain item must hit with the model's value; any hit must return exactly the
//! model's value; a miss of an uncertain item drops it from the model. `validate()` checks the
//! engine's invariants after every step.
//!
//! A model "space" `t` is a tenant and a database (Redis `SELECT`): tenant `t % TENANTS`,
//! database [`db_of`]`(t)`, so equal keys of one tenant's two databases are checked apart.

mod common;

use std::collections::HashMap;

use common::{small_config, small_engine_from};
use fridge_engine::{
    Clock, Condition, Engine, EngineConfig, EngineError, Eviction, Expiry, ManualClock, Queues,
    Store, StoreOutcome, TenantId, Update, Worker,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Set { t: u8, k: u8, len: u16, ttl: Option<u16>, flags: u32 },
    Add { t: u8, k: u8, len: u16 },
    Replace { t: u8, k: u8, len: u16 },
    Cas { t: u8, k: u8, stale: bool },
    Append { t: u8, k: u8, len: u8, prepend: bool },
    Counter { t: u8, k: u8, by: u8, create: bool },
    Delete { t: u8, k: u8 },
    Touch { t: u8, k: u8, ttl: Option<u16> },
    Get { t: u8, k: u8 },
    Advance { ms: u16 },
    Flush { t: u8, delay: u16 },
    FlushDb { t: u8 },
}

/// Tenants the model uses.
const TENANTS: u8 = 3;

/// The database of model space `t`: 0 or 5.
fn db_of(t: u8) -> u8 {
    t / TENANTS * 5
}

/// The tenant of model space `t`: ids 0, 1 and 0x301, the last two with the same low byte
/// (the record keeps it apart from the high byte).
fn tenant(t: u8) -> TenantId {
    TenantId([0, 1, 0x301][usize::from(t % TENANTS)])
}

impl Op {
    /// The model space the operation names, if any.
    fn space(&self) -> Option<u8> {
        match *self {
            Op::Set { t, .. }
            | Op::Add { t, .. }
            | Op::Replace { t, .. }
            | Op::Cas { t, .. }
            | Op::Append { t, .. }
            | Op::Counter { t, .. }
            | Op::Delete { t, .. }
            | Op::Touch { t, .. }
            | Op::Get { t, .. }
            | Op::Flush { t, .. }
            | Op::FlushDb { t } => Some(t),
            Op::Advance { .. } => None,
        }
    }
}

fn op() -> impl Strategy<Value = Op> {
    let t = 0u8..2 * TENANTS;
    let k = 0u8..40;
    prop_oneof![
        6 => (t.clone(), k.clone(), 0u16..1500, proptest::option::of(1u16..20000), any::<u32>())
            .prop_map(|(t, k, len, ttl, flags)| Op::Set { t, k, len, ttl, flags }),
        1 => (t.clone(), k.clone(), 0u16..500).prop_map(|(t, k, len)| Op::Add { t, k, len }),
        1 => (t.clone(), k.clone(), 0u16..500).prop_map(|(t, k, len)| Op::Replace { t, k, len }),
        1 => (t.clone(), k.clone(), any::<bool>()).prop_map(|(t, k, stale)| Op::Cas { t, k, stale }),
        1 => (t.clone(), k.clone(), 0u8..50, any::<bool>())
            .prop_map(|(t, k, len, prepend)| Op::Append { t, k, len, prepend }),
        1 => (t.clone(), k.clone(), any::<u8>(), any::<bool>())
            .prop_map(|(t, k, by, create)| Op::Counter { t, k, by, create }),
        1 => (t.clone(), k.clone()).prop_map(|(t, k)| Op::Delete { t, k }),
        1 => (t.clone(), k.clone(), proptest::option::of(1u16..5000))
            .prop_map(|(t, k, ttl)| Op::Touch { t, k, ttl }),
        6 => (t.clone(), k.clone()).prop_map(|(t, k)| Op::Get { t, k }),
        1 => (0u16..1000).prop_map(|ms| Op::Advance { ms }),
        1 => (t.clone(), prop_oneof![1 => Just(0u16), 3 => 1u16..60000]).prop_map(|(t, delay)| Op::Flush { t, delay }),
        1 => t.prop_map(|t| Op::FlushDb { t }),
    ]
}

#[derive(Debug, Clone)]
struct ModelItem {
    value: Vec<u8>,
    flags: u32,
    expires_at: Option<u64>,
    certain: bool,
}

struct Model {
    items: HashMap<(u8, u8), ModelItem>,
    flush_at: HashMap<u8, u64>,
    clock: ManualClock,
    engine: Engine,
    seen_evictions: u64,
}

impl Model {
    fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Applies due flushes and expiry for tenant `t`, then returns the live item of (t, k).
    fn live(&mut self, t: u8, k: u8) -> Option<&mut ModelItem> {
        // An eviction (even one caused by the operation being checked) makes every item
        // written before it uncertain.
        let e = evictions(&self.engine);
        if e != self.seen_evictions {
            self.seen_evictions = e;
            self.items.values_mut().for_each(|i| i.certain = false);
        }
        let now = self.now();
        let tn = t % TENANTS;
        if self.flush_at.get(&tn).is_some_and(|&at| now >= at) {
            self.flush_at.remove(&tn);
            self.items.retain(|&(tt, _), _| tt % TENANTS != tn);
        }
        // Redis's rule: an item is gone once the time is past its deadline.
        if self.items.get(&(t, k)).is_some_and(|i| i.expires_at.is_some_and(|at| now > at)) {
            self.items.remove(&(t, k));
        }
        self.items.get_mut(&(t, k))
    }
}

fn key(k: u8) -> &'static [u8] {
    static KEYS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    &KEYS.get_or_init(|| (0..=255).map(|k| format!("key:{k}").into_bytes()).collect())[k as usize]
}

fn value(seed: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seed as usize + i * 31) as u8).collect()
}

/// A value a [`counter`] reads as a number: a non-negative decimal without leading zeros.
fn counter_value(v: &[u8]) -> Option<u64> {
    let n = std::str::from_utf8(v).ok()?.parse::<u64>().ok()?;
    (v.first().is_some_and(u8::is_ascii_digit) && (v[0] != b'0' || v == b"0")).then_some(n)
}

/// Why a [`counter`] gave up: its own reason, returned through the update's result.
#[derive(Debug, PartialEq, Eq)]
struct NotANumber;

/// A counter built on the engine's read-modify-write, as the server builds its own: adds `by`
/// to the value; a missing key counts as 0 with `create` and is left missing without.
fn counter(
    w: &mut Worker,
    t: u8,
    k: u8,
    by: u64,
    create: bool,
) -> Result<Result<Option<u64>, NotANumber>, EngineError> {
    w.update(tenant(t), key(k), |current, buf| {
        let (n, flags, expires_at_ms) = match current {
            None if !create => return Ok(Update::Done(Ok(None))),
            None => (0, 0, None),
            Some(c) => match counter_value(c.value) {
                Some(n) => (n, c.flags, c.expires_at_ms),
                None => return Ok(Update::Done(Err(NotANumber))),
            },
        };
        let n = n.checked_add(by).expect("model counters stay small");
        buf.extend_from_slice(n.to_string().as_bytes());
        Ok(Update::Write { flags, expires_at_ms, result: Ok(Some(n)) })
    })
}

fn evictions(engine: &Engine) -> u64 {
    let s = engine.stats();
    s.evictions + s.index_evictions
}

/// Checks an engine answer about presence against the model: certain items must agree;
/// uncertain ones are synced to the engine.
fn presence(model: &mut Model, t: u8, k: u8, engine_present: bool) {
    let present = model.live(t, k).map(|i| i.certain);
    match (present, engine_present) {
        (Some(true), false) => panic!("certain item ({t},{k}) missing"),
        (Some(false), false) => {
            model.items.remove(&(t, k));
        }
        (None, true) => panic!("engine has ({t},{k}) which the model does not"),
        _ => {}
    }
}

fn run(ops: &[Op], max_memory: usize, inline_value_max: usize, eviction: Eviction) {
    run_with_slb(ops, max_memory, inline_value_max, eviction, 0);
}

/// [`run`] with an SLB of `slb_bytes` in front of the index.
fn run_with_slb(
    ops: &[Op],
    max_memory: usize,
    inline_value_max: usize,
    eviction: Eviction,
    slb_bytes: usize,
) {
    let config = small_config(max_memory, 4 << 10, inline_value_max, eviction);
    run_config(ops, EngineConfig { slb_bytes, ..config });
}

/// The values of `op` shortened so that every item fits in a segment of 1 KiB: stores of at
/// most 400 bytes, appends of at most 7 (a value would need about 80 appends in a row to
/// outgrow the segment).
fn fit_small_segments(op: Op) -> Op {
    match op {
        Op::Set { t, k, len, ttl, flags } => Op::Set { t, k, len: len % 400, ttl, flags },
        Op::Add { t, k, len } => Op::Add { t, k, len: len % 400 },
        Op::Replace { t, k, len } => Op::Replace { t, k, len: len % 400 },
        Op::Append { t, k, len, prepend } => Op::Append { t, k, len: len % 8, prepend },
        op => op,
    }
}

/// Runs `ops` against an engine of `config` and the model.
fn run_config(ops: &[Op], config: EngineConfig) {
    let (engine, clock) = small_engine_from(config);
    let mut w: Worker = engine.worker().unwrap();
    let mut model = Model {
        items: HashMap::new(),
        flush_at: HashMap::new(),
        clock,
        engine: engine.clone(),
        seen_evictions: 0,
    };
    for (step, op) in ops.iter().enumerate() {
        let now = model.now();
        if let Some(t) = op.space() {
            w.select(db_of(t));
        }
        match *op {
            Op::Set { t, k, len, ttl, flags } => {
                let v = value(step as u64, len as usize);
                let expires_at = ttl.map(|ms| now + u64::from(ms));
                let expiry = expires_at.map_or(Expiry::Never, Expiry::At);
                let r = w.store(Store { flags, expiry, ..Store::new(tenant(t), key(k), &v) });
                assert_eq!(r, Ok(StoreOutcome::Stored));
                model.live(t, k);
                model
                    .items
                    .insert((t, k), ModelItem { value: v, flags, expires_at, certain: true });
            }
            Op::Add { t, k, len } | Op::Replace { t, k, len } => {
                let add = matches!(op, Op::Add { .. });
                let v = value(step as u64, len as usize);
                let condition = if add { Condition::IfAbsent } else { Condition::IfPresent };
                let r = w.store(Store { condition, ..Store::new(tenant(t), key(k), &v) }).unwrap();
                let stored = r == StoreOutcome::Stored;
                // add stores iff absent; replace iff present.
                presence(&mut model, t, k, stored != add);
                if stored {
                    model.items.insert(
                        (t, k),
                        ModelItem { value: v, flags: 0, expires_at: None, certain: true },
                    );
                }
            }
            Op::Cas { t, k, stale } => {
                let cas = w.get(tenant(t), key(k), |i| i.cas);
                presence(&mut model, t, k, cas.is_some());
                if let Some(cas) = cas {
                    let v = value(step as u64, 10);
                    if stale {
                        let old = model.live(t, k).unwrap().clone();
                        let e = old.expires_at.map_or(Expiry::Never, Expiry::At);
                        let again = Store {
                            flags: old.flags,
                            expiry: e,
                            ..Store::new(tenant(t), key(k), &old.value)
                        };
                        assert_eq!(w.store(again), Ok(StoreOutcome::Stored));
                        if old.expires_at.is_some_and(|at| at <= now) {
                            // A new deadline at or before now is already past (Redis's
                            // `checkAlreadyExpired`): the re-store deleted the item, in the
                            // millisecond that reads still return it.
                            model.items.remove(&(t, k));
                            let s = Store {
                                condition: Condition::IfCas(cas),
                                ..Store::new(tenant(t), key(k), &v)
                            };
                            assert_eq!(w.store(s), Ok(StoreOutcome::NotFound));
                            engine.validate();
                            continue;
                        }
                    }
                    let s = Store {
                        condition: Condition::IfCas(cas),
                        ..Store::new(tenant(t), key(k), &v)
                    };
                    let want = if stale { StoreOutcome::Exists } else { StoreOutcome::Stored };
                    let before = evictions(&engine);
                    let got = w.store(s);
                    // An eviction caused by the store's own allocation may drop the item
                    // (NotFound), or move another item of its index tree up, which bumps the
                    // CAS the tree's keys share (Exists for a current token).
                    let evicted = evictions(&engine) > before;
                    match got {
                        Ok(StoreOutcome::NotFound) if evicted => {
                            model.items.remove(&(t, k));
                        }
                        Ok(StoreOutcome::Exists) if evicted && !stale => {}
                        _ => {
                            assert_eq!(got, Ok(want), "cas stale={stale}");
                            if !stale {
                                model.items.insert(
                                    (t, k),
                                    ModelItem {
                                        value: v,
                                        flags: 0,
                                        expires_at: None,
                                        certain: true,
                                    },
                                );
                            }
                        }
                    }
                }
            }
            Op::Append { t, k, len, prepend } => {
                let data = value(step as u64, len as usize);
                let r = w.append(tenant(t), key(k), &data, prepend, false).unwrap();
                presence(&mut model, t, k, r.is_some());
                if let Some(item) = model.live(t, k) {
                    if prepend {
                        item.value.splice(0..0, data.iter().copied());
                    } else {
                        item.value.extend_from_slice(&data);
                    }
                    assert_eq!(r, Some(item.value.len()));
                }
            }
            Op::Counter { t, k, by, create } => check_counter(&mut w, &mut model, t, k, by, create),
            Op::Delete { t, k } => {
                let deleted = w.delete(tenant(t), key(k));
                presence(&mut model, t, k, deleted);
                model.items.remove(&(t, k));
            }
            Op::Touch { t, k, ttl } => {
                let expires_at = ttl.map(|ms| now + u64::from(ms));
                let r = w.set_expiry(tenant(t), key(k), expires_at).unwrap();
                presence(&mut model, t, k, r.is_some());
                if let Some(item) = model.live(t, k) {
                    item.expires_at = expires_at;
                }
            }
            Op::Get { t, k } => {
                let got =
                    w.get(tenant(t), key(k), |i| (i.value.to_vec(), i.flags, i.expires_at_ms));
                presence(&mut model, t, k, got.is_some());
                if let (Some(got), Some(item)) = (got, model.live(t, k)) {
                    assert_eq!(
                        got,
                        (item.value.clone(), item.flags, item.expires_at),
                        "get ({t},{k})"
                    );
                }
            }
            Op::Advance { ms } => model.clock.advance(u64::from(ms)),
            Op::Flush { t, delay } => {
                // Every database of the tenant.
                w.flush(tenant(t), u64::from(delay));
                let tn = t % TENANTS;
                if delay == 0 {
                    model.flush_at.remove(&tn);
                    model.items.retain(|&(tt, _), _| tt % TENANTS != tn);
                } else {
                    model.flush_at.insert(tn, now + u64::from(delay));
                }
            }
            Op::FlushDb { t } => {
                w.flush_db(tenant(t));
                model.items.retain(|&(tt, _), _| tt != t);
            }
        }
        engine.validate();
    }
    let s = engine.stats();
    if std::env::var_os("MODEL_STATS").is_some() {
        eprintln!(
            "ops {} passes {} evictions {} relocated {} expired {} fifo {} resizes {} buckets {}",
            ops.len(),
            s.cleaner_passes,
            s.evictions,
            s.relocated_items,
            s.expired,
            s.fifo_evictions,
            s.index_resizes,
            s.index_buckets
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Roomy enough that evictions are rare, small enough that overwrites keep the cleaner busy.
    /// Every value apart from its key.
    #[test]
    fn engine_agrees_with_model(ops in proptest::collection::vec(op(), 1..2500)) {
        run(&ops, 256 << 10, 0, Eviction::Memshare);
    }

    /// So small that the cleaner must evict: every hit must still be exact. Values up to 400
    /// bytes inline, after their keys.
    #[test]
    fn engine_agrees_with_model_under_eviction(ops in proptest::collection::vec(op(), 1..2500)) {
        run(&ops, 64 << 10, 400, Eviction::Memshare);
    }

    /// The same with S3-FIFO's queues: what is kept differs, every hit must still be exact.
    #[test]
    fn engine_agrees_with_model_under_queue_eviction(
        ops in proptest::collection::vec(op(), 1..2500)
    ) {
        run(&ops, 64 << 10, 400, Eviction::Queues(Queues::default()));
    }

    /// In 48 small segments, with either eviction: of 1 KiB, the smallest
    /// (`MIN_SEGMENT_SIZE`, smaller than a page), or of 1,920 bytes (30 cache lines, a size
    /// that is not a power of two: `SEGMENT_GRID`).
    #[test]
    fn engine_agrees_with_model_in_small_segments(
        ops in proptest::collection::vec(op().prop_map(fit_small_segments), 1..2500),
        queues in any::<bool>(),
        segment in prop_oneof![Just(fridge_engine::MIN_SEGMENT_SIZE), Just(1920)],
    ) {
        let eviction = if queues { Eviction::Queues(Queues::default()) } else { Eviction::Memshare };
        run_config(&ops, small_config(48 * segment, segment, 200, eviction));
    }

    /// With an SLB of 8 buckets (56 entries) in front of the index: overwrites, deletes,
    /// flushes, expiry, the cleaner's relocations and evictions, and the index's own moves
    /// all change slots it may cache; every read must still be exact, and `validate()`
    /// checks after each step that every cached location is still indexed.
    #[test]
    fn engine_agrees_with_model_with_an_slb(ops in proptest::collection::vec(op(), 1..2500)) {
        run_with_slb(&ops, 64 << 10, 400, Eviction::Queues(Queues::default()), 8 * 64);
    }
}

/// A counter step (the protocols' incr, built on `update`) checked against the model: a certain
/// item's result is exact; an uncertain one survived or was made anew.
fn check_counter(w: &mut Worker, model: &mut Model, t: u8, k: u8, by: u8, create: bool) {
    let numeric = model.live(t, k).map(|i| counter_value(&i.value));
    let r = counter(w, t, k, u64::from(by), create);
    let by = u64::from(by);
    if create {
        match numeric {
            None => {
                // absent in the model: the engine may still hold nothing either way.
                let n = r.expect("a counter of a missing key creates it");
                assert_eq!(n, Ok(Some(by)));
                model.items.insert(
                    (t, k),
                    ModelItem {
                        value: by.to_string().into_bytes(),
                        flags: 0,
                        expires_at: None,
                        certain: true,
                    },
                );
            }
            Some(Some(n)) => match r {
                Ok(Ok(Some(got))) => {
                    let item = model.live(t, k).unwrap();
                    if item.certain {
                        assert_eq!(got, n + by);
                    } else {
                        // It survived, or was evicted and the increment made it anew.
                        assert!(got == n + by || got == by, "{got} after {n}");
                    }
                    item.value = got.to_string().into_bytes();
                    item.certain = true;
                }
                r => panic!("a counter of a number failed: {r:?}"),
            },
            Some(None) => {
                if let Ok(Ok(Some(got))) = r {
                    // It was evicted and recreated.
                    assert!(!model.live(t, k).unwrap().certain);
                    model.items.insert(
                        (t, k),
                        ModelItem {
                            value: got.to_string().into_bytes(),
                            flags: 0,
                            expires_at: None,
                            certain: true,
                        },
                    );
                } else {
                    assert_eq!(r, Ok(Err(NotANumber)));
                }
            }
        }
    } else {
        match (numeric, r) {
            (None, Ok(Ok(None))) => {}
            (Some(Some(n)), Ok(Ok(Some(got)))) => {
                assert_eq!(got, n + by);
                model.live(t, k).unwrap().value = got.to_string().into_bytes();
            }
            (Some(None), Ok(Err(NotANumber))) => {}
            (Some(_), Ok(Ok(None))) => presence(model, t, k, false),
            (m, r) => panic!("counter: model {m:?}, engine {r:?}"),
        }
    }
}

/// A stale CAS in the item's last millisecond: the step re-stores the item with its own
/// deadline, which is now (already expired, Redis's rule for a new deadline), so the re-store
/// deletes it and the CAS finds nothing.
#[test]
fn a_stale_cas_at_the_deadline_finds_nothing() {
    let ops = [
        Op::Set { t: 1, k: 2, len: 10, ttl: Some(5), flags: 0 },
        Op::Advance { ms: 5 },
        Op::Cas { t: 1, k: 2, stale: true },
        Op::Get { t: 1, k: 2 },
    ];
    run(&ops, 256 << 10, 0, Eviction::Memshare);
}
