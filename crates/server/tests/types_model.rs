//! Model-based tests of the value types: random commands on hashes (with per-field expiry on
//! a manual clock), lists, sets and sorted sets, each checked against a plain model, while
//! large strings written beside them keep the cleaner evicting and relocating, and the engine's
//! invariants are checked after every step (`Engine::validate`; the cleaner runs inline, so
//! nothing moves between requests).
//!
//! Eviction is the one thing the model cannot predict: a key may vanish at any moment. So each
//! step accepts exactly two histories — the key lived through the step (the model's reply and
//! state), or it was evicted just before (the reply and state of the command on no key) — and
//! after either, the key may be gone; the server's state then becomes the model's.

mod common;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::start_with_clock;
use fridge_engine::Clock;
use fridge_proto::resp::{Frame, parse_frame};
use fridge_server::{Config, Size};

/// An owned reply.
#[derive(Debug, Clone, PartialEq)]
enum Reply {
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Status(Vec<u8>),
    Error(Vec<u8>),
    List(Vec<Reply>),
}

struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn call(&mut self, args: &[&[u8]]) -> Reply {
        self.stream.write_all(&common::cmd(args)).unwrap();
        loop {
            if let Some((reply, used)) = parse(&self.buf) {
                self.buf.drain(..used);
                return reply;
            }
            let mut chunk = [0u8; 65536];
            let n = self.stream.read(&mut chunk).unwrap();
            assert!(n > 0, "connection closed");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// One whole reply at the start of `buf`, and its length.
fn parse(buf: &[u8]) -> Option<(Reply, usize)> {
    let (frame, mut used) = parse_frame(buf).ok()?;
    let reply = match frame {
        Frame::Integer(n) => Reply::Int(n),
        Frame::Bulk(b) => Reply::Bulk(b.to_vec()),
        Frame::NullBulk | Frame::NullArray | Frame::Null => Reply::Nil,
        Frame::Simple(s) => Reply::Status(s.to_vec()),
        Frame::Error(e) => Reply::Error(e.to_vec()),
        Frame::Double(d) => Reply::Bulk(d.to_vec()),
        Frame::Array(n) | Frame::Set(n) => {
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                let (item, more) = parse(&buf[used..])?;
                used += more;
                items.push(item);
            }
            Reply::List(items)
        }
        other => panic!("unexpected frame {other:?}"),
    };
    Some((reply, used))
}

/// The model of one key.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    /// Field → (value, deadline in ms; 0 for none).
    Hash(BTreeMap<Vec<u8>, (Vec<u8>, u64)>),
    List(VecDeque<Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    /// Member → score (integers, so the model's sums are exact).
    Zset(BTreeMap<Vec<u8>, i64>),
}

/// A key's state as both sides can show it: its type and its live content, in a fixed order.
type State = Option<(&'static str, Vec<Vec<u8>>)>;

fn state_of(v: Option<&Value>, now: u64) -> State {
    let (name, content): (&'static str, Vec<Vec<u8>>) = match v? {
        Value::Hash(h) => {
            let live: Vec<Vec<u8>> = h
                .iter()
                .filter(|(_, (_, d))| *d == 0 || *d > now)
                .flat_map(|(f, (v, _))| [f.clone(), v.clone()])
                .collect();
            ("hash", live)
        }
        Value::List(l) => ("list", l.iter().cloned().collect()),
        Value::Set(s) => ("set", s.iter().cloned().collect()),
        Value::Zset(z) => {
            let mut by_score: Vec<(&i64, &Vec<u8>)> = z.iter().map(|(m, s)| (s, m)).collect();
            by_score.sort();
            (
                "zset",
                by_score
                    .iter()
                    .flat_map(|(s, m)| [(*m).clone(), s.to_string().into_bytes()])
                    .collect(),
            )
        }
    };
    // A collection with nothing live is no key (a hash whose fields all expired reads empty).
    (!content.is_empty()).then_some((name, content))
}

fn server_state(c: &mut Client, key: &[u8]) -> State {
    let Reply::Status(t) = c.call(&[b"TYPE", key]) else { panic!("TYPE") };
    let flat = |r: Reply| match r {
        Reply::List(items) => items
            .into_iter()
            .map(|i| match i {
                Reply::Bulk(b) => b,
                other => panic!("element {other:?}"),
            })
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    let (name, content) = match &t[..] {
        b"none" => return None,
        b"hash" => {
            let pairs = flat(c.call(&[b"HGETALL", key]));
            let mut sorted: Vec<(Vec<u8>, Vec<u8>)> =
                pairs.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect();
            sorted.sort();
            ("hash", sorted.into_iter().flat_map(|(f, v)| [f, v]).collect())
        }
        b"list" => ("list", flat(c.call(&[b"LRANGE", key, b"0", b"-1"]))),
        b"set" => {
            let mut m = flat(c.call(&[b"SMEMBERS", key]));
            m.sort();
            ("set", m)
        }
        b"zset" => ("zset", flat(c.call(&[b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"]))),
        other => panic!("type {other:?}"),
    };
    (!content.is_empty()).then_some((name, content))
}

/// The value a server state stands for (to take the server's state into the model).
fn value_of(state: &State, old: Option<&Value>) -> Option<Value> {
    let (name, content) = state.as_ref()?;
    Some(match *name {
        "hash" => {
            let old = match old {
                Some(Value::Hash(h)) => h.clone(),
                _ => BTreeMap::new(),
            };
            Value::Hash(
                content
                    .chunks(2)
                    .map(|p| {
                        let deadline =
                            old.get(&p[0]).filter(|(v, _)| *v == p[1]).map_or(0, |e| e.1);
                        (p[0].clone(), (p[1].clone(), deadline))
                    })
                    .collect(),
            )
        }
        "list" => Value::List(content.iter().cloned().collect()),
        "set" => Value::Set(content.iter().cloned().collect()),
        _ => Value::Zset(
            content
                .chunks(2)
                .map(|p| (p[0].clone(), std::str::from_utf8(&p[1]).unwrap().parse().unwrap()))
                .collect(),
        ),
    })
}

/// What a command does to a model value at a time: its reply and the value after.
type Apply = dyn Fn(Option<Value>, u64) -> (Reply, Option<Value>);

/// One random command on one key: its arguments, and what it does to a model value (its
/// reply, and the value after, `None` for no key).
struct Op {
    args: Vec<Vec<u8>>,
    apply: Box<Apply>,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn b(s: impl AsRef<[u8]>) -> Vec<u8> {
    s.as_ref().to_vec()
}

fn empty_or_gone(v: Value) -> Option<Value> {
    let empty = match &v {
        Value::Hash(h) => h.is_empty(),
        Value::List(l) => l.is_empty(),
        Value::Set(s) => s.is_empty(),
        Value::Zset(z) => z.is_empty(),
    };
    (!empty).then_some(v)
}

fn hash_op(rng: &mut Rng, key: &[u8]) -> Op {
    let field = b(format!("f{}", rng.below(8)));
    let fill = b'a' + rng.below(26) as u8;
    let value = vec![fill; rng.below(300) as usize];
    let live =
        |h: &BTreeMap<Vec<u8>, (Vec<u8>, u64)>, now: u64| -> BTreeMap<Vec<u8>, (Vec<u8>, u64)> {
            h.iter()
                .filter(|(_, (_, d))| *d == 0 || *d > now)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
    let hash = move |v: Option<Value>, now: u64| match v {
        Some(Value::Hash(h)) => live(&h, now),
        _ => BTreeMap::new(),
    };
    match rng.below(4) {
        0 => {
            let (f, val) = (field.clone(), value.clone());
            Op {
                args: vec![b("HSET"), b(key), field, value],
                apply: Box::new(move |v, now| {
                    let mut h = hash(v, now);
                    let created = h.insert(f.clone(), (val.clone(), 0)).is_none();
                    (Reply::Int(i64::from(created)), Some(Value::Hash(h)))
                }),
            }
        }
        1 => {
            let f = field.clone();
            Op {
                args: vec![b("HDEL"), b(key), field],
                apply: Box::new(move |v, now| {
                    let mut h = hash(v, now);
                    let gone = h.remove(&f).is_some();
                    (Reply::Int(i64::from(gone)), empty_or_gone(Value::Hash(h)))
                }),
            }
        }
        2 => {
            let ms = rng.below(100);
            let f = field.clone();
            Op {
                args: vec![b("HPEXPIRE"), b(key), b(ms.to_string()), b("FIELDS"), b("1"), field],
                apply: Box::new(move |v, now| {
                    let mut h = hash(v, now);
                    let code = match h.get_mut(&f) {
                        None => -2,
                        Some(_) if ms == 0 => {
                            h.remove(&f);
                            2
                        }
                        Some(e) => {
                            e.1 = now + ms;
                            1
                        }
                    };
                    (Reply::List(vec![Reply::Int(code)]), empty_or_gone(Value::Hash(h)))
                }),
            }
        }
        _ => {
            let f = field.clone();
            Op {
                args: vec![b("HGET"), b(key), field],
                apply: Box::new(move |v, now| {
                    let h = hash(v.clone(), now);
                    (h.get(&f).map_or(Reply::Nil, |(val, _)| Reply::Bulk(val.clone())), v)
                }),
            }
        }
    }
}

fn list_op(rng: &mut Rng, key: &[u8]) -> Op {
    let e = b(format!("e{}", rng.below(6)));
    let list = |v: Option<Value>| match v {
        Some(Value::List(l)) => l,
        _ => VecDeque::new(),
    };
    match rng.below(8) {
        7 => {
            let (i, n) = (rng.below(7) as i64 - 3, rng.below(4) as i64);
            Op {
                args: vec![b("LRANGE"), b(key), b(i.to_string()), b((i + n).to_string())],
                apply: Box::new(move |v, _| {
                    let l = list(v.clone());
                    let len = l.len() as i64;
                    let (a, z) = (if i < 0 { (len + i).max(0) } else { i }, i + n);
                    let z = if z < 0 { len + z } else { z.min(len - 1) };
                    let got = (a..=z).filter_map(|k| l.get(k as usize).cloned());
                    (Reply::List(got.map(Reply::Bulk).collect()), v)
                }),
            }
        }
        5 => {
            // A rotation: LMOVE of the list onto itself, from either end to either end.
            let (from, to) = (rng.below(2) == 0, rng.below(2) == 0);
            let side = |left: bool| b(if left { "LEFT" } else { "RIGHT" });
            Op {
                args: vec![b("LMOVE"), b(key), b(key), side(from), side(to)],
                apply: Box::new(move |v, _| {
                    let mut l = list(v);
                    let Some(got) = (if from { l.pop_front() } else { l.pop_back() }) else {
                        return (Reply::Nil, None);
                    };
                    if to {
                        l.push_front(got.clone())
                    } else {
                        l.push_back(got.clone())
                    }
                    (Reply::Bulk(got), Some(Value::List(l)))
                }),
            }
        }
        6 => {
            let (left, n) = (rng.below(2) == 0, 1 + rng.below(4) as usize);
            Op {
                args: vec![b(if left { "LPOP" } else { "RPOP" }), b(key), b(n.to_string())],
                apply: Box::new(move |v, _| {
                    let mut l = list(v);
                    if l.is_empty() {
                        return (Reply::Nil, None);
                    }
                    let got: Vec<Reply> = (0..n)
                        .map_while(|_| if left { l.pop_front() } else { l.pop_back() })
                        .map(Reply::Bulk)
                        .collect();
                    (Reply::List(got), empty_or_gone(Value::List(l)))
                }),
            }
        }
        0 | 1 => {
            let left = rng.below(2) == 0;
            let el = e.clone();
            Op {
                args: vec![b(if left { "LPUSH" } else { "RPUSH" }), b(key), e],
                apply: Box::new(move |v, _| {
                    let mut l = list(v);
                    if left {
                        l.push_front(el.clone())
                    } else {
                        l.push_back(el.clone())
                    }
                    (Reply::Int(l.len() as i64), Some(Value::List(l)))
                }),
            }
        }
        2 => {
            let left = rng.below(2) == 0;
            Op {
                args: vec![b(if left { "LPOP" } else { "RPOP" }), b(key)],
                apply: Box::new(move |v, _| {
                    let mut l = list(v);
                    let got = if left { l.pop_front() } else { l.pop_back() };
                    (got.map_or(Reply::Nil, Reply::Bulk), empty_or_gone(Value::List(l)))
                }),
            }
        }
        3 => {
            let el = e.clone();
            Op {
                args: vec![b("LREM"), b(key), b("0"), e],
                apply: Box::new(move |v, _| {
                    let l = list(v);
                    let before = l.len();
                    let kept: VecDeque<Vec<u8>> = l.into_iter().filter(|x| *x != el).collect();
                    (Reply::Int((before - kept.len()) as i64), empty_or_gone(Value::List(kept)))
                }),
            }
        }
        _ => {
            let n = rng.below(5) as usize;
            Op {
                args: vec![b("LTRIM"), b(key), b("0"), b(n.to_string())],
                apply: Box::new(move |v, _| {
                    let mut l = list(v);
                    l.truncate(n + 1);
                    (Reply::Status(b("OK")), empty_or_gone(Value::List(l)))
                }),
            }
        }
    }
}

fn set_op(rng: &mut Rng, key: &[u8]) -> Op {
    let m = b(format!("m{}", rng.below(10)));
    let set = |v: Option<Value>| match v {
        Some(Value::Set(s)) => s,
        _ => BTreeSet::new(),
    };
    let mm = m.clone();
    match rng.below(3) {
        0 => Op {
            args: vec![b("SADD"), b(key), m],
            apply: Box::new(move |v, _| {
                let mut s = set(v);
                let added = s.insert(mm.clone());
                (Reply::Int(i64::from(added)), Some(Value::Set(s)))
            }),
        },
        1 => Op {
            args: vec![b("SREM"), b(key), m],
            apply: Box::new(move |v, _| {
                let mut s = set(v);
                let gone = s.remove(&mm);
                (Reply::Int(i64::from(gone)), empty_or_gone(Value::Set(s)))
            }),
        },
        _ => Op {
            args: vec![b("SISMEMBER"), b(key), m],
            apply: Box::new(move |v, _| {
                let s = set(v.clone());
                (Reply::Int(i64::from(s.contains(&mm))), v)
            }),
        },
    }
}

fn zset_op(rng: &mut Rng, key: &[u8]) -> Op {
    let m = b(format!("m{}", rng.below(10)));
    let score = rng.below(200) as i64 - 100;
    zset_op_of(rng.below(4), key, m, score)
}

/// ZADD (0), ZINCRBY (1), ZREM (2) or ZPOPMIN (3) of member `m` with `score`.
fn zset_op_of(which: u64, key: &[u8], m: Vec<u8>, score: i64) -> Op {
    let zset = |v: Option<Value>| match v {
        Some(Value::Zset(z)) => z,
        _ => BTreeMap::new(),
    };
    let mm = m.clone();
    match which {
        0 => Op {
            args: vec![b("ZADD"), b(key), b(score.to_string()), m],
            apply: Box::new(move |v, _| {
                let mut z = zset(v);
                let added = z.insert(mm.clone(), score).is_none();
                (Reply::Int(i64::from(added)), Some(Value::Zset(z)))
            }),
        },
        1 => Op {
            args: vec![b("ZINCRBY"), b(key), b(score.to_string()), m],
            apply: Box::new(move |v, _| {
                let mut z = zset(v);
                let s = z.entry(mm.clone()).or_insert(0);
                *s += score;
                let reply = Reply::Bulk(s.to_string().into_bytes());
                (reply, Some(Value::Zset(z)))
            }),
        },
        2 => Op {
            args: vec![b("ZREM"), b(key), m],
            apply: Box::new(move |v, _| {
                let mut z = zset(v);
                let gone = z.remove(&mm).is_some();
                (Reply::Int(i64::from(gone)), empty_or_gone(Value::Zset(z)))
            }),
        },
        _ => Op {
            args: vec![b("ZPOPMIN"), b(key)],
            apply: Box::new(move |v, _| {
                let mut z = zset(v);
                let first = z.iter().map(|(m, s)| (*s, m.clone())).min();
                let reply = match &first {
                    Some((s, m)) => {
                        z.remove(m);
                        Reply::List(vec![
                            Reply::Bulk(m.clone()),
                            Reply::Bulk(s.to_string().into_bytes()),
                        ])
                    }
                    None => Reply::List(Vec::new()),
                };
                (reply, empty_or_gone(Value::Zset(z)))
            }),
        },
    }
}

/// Random ZADD, ZINCRBY, ZREM, ZSCORE, ZRANK and ZPOPMIN on a sorted set of up to 400
/// members, mostly growing it: large enough to carry an index (from 128 members).
fn large_zset_op(rng: &mut Rng, key: &[u8]) -> Op {
    let m = b(format!("member:{:04}", rng.below(400)));
    let score = rng.below(2000) as i64 - 1000;
    let zset = |v: Option<Value>| match v {
        Some(Value::Zset(z)) => z,
        _ => BTreeMap::new(),
    };
    let mm = m.clone();
    match rng.below(20) {
        0..=7 => zset_op_of(0, key, m, score),
        8..=10 => zset_op_of(1, key, m, score),
        11..=12 => zset_op_of(2, key, m, score),
        13 => zset_op_of(3, key, m, score),
        14..=16 => Op {
            args: vec![b("ZSCORE"), b(key), m],
            apply: Box::new(move |v, _| {
                let reply = match zset(v.clone()).get(&mm) {
                    Some(s) => Reply::Bulk(s.to_string().into_bytes()),
                    None => Reply::Nil,
                };
                (reply, v)
            }),
        },
        _ => Op {
            args: vec![b("ZRANK"), b(key), m],
            apply: Box::new(move |v, _| {
                let mut by_score: Vec<(i64, Vec<u8>)> =
                    zset(v.clone()).into_iter().map(|(m, s)| (s, m)).collect();
                by_score.sort();
                let reply = match by_score.iter().position(|(_, m)| *m == mm) {
                    Some(r) => Reply::Int(r as i64),
                    None => Reply::Nil,
                };
                (reply, v)
            }),
        },
    }
}

#[test]
fn every_type_agrees_with_its_model_while_the_cleaner_evicts_and_relocates() {
    // Six keys of each type, interleaved (h0 l0 s0 z0 h1 …) so that any twelve in a row hold
    // three of each.
    let names: Vec<Vec<u8>> =
        (0..6).flat_map(|i| "hlsz".bytes().map(move |t| vec![t, b'0' + i])).collect();
    // The keys in use slide: twelve at a time, four more every 500 steps. A key is left alone
    // for 1,500 steps, more than twice the ~660 steps memory takes to turn over with the
    // strings, and so goes with them; it comes back later, to a fresh key or a kept one.
    let choose = |rng: &mut Rng, step: usize| (step / 500 * 4 + rng.below(12) as usize) % 24;
    let pick = |rng: &mut Rng, key: &[u8]| match key[0] {
        b'h' => hash_op(rng, key),
        b'l' => list_op(rng, key),
        b's' => set_op(rng, key),
        _ => zset_op(rng, key),
    };
    let (evicted_keys, _) = agree_with_models(&names, 6000, choose, pick);
    // Collections went with the strings: the model's tolerance was exercised.
    assert!(evicted_keys > 0, "no collection was evicted");
}

#[test]
fn large_sorted_sets_agree_with_their_model_while_the_cleaner_evicts_and_relocates() {
    // Two sets growing to hundreds of members, read and written through their index (one
    // member's write edits it, the others' rebuild it).
    let names = vec![b("Z0"), b("Z1")];
    let choose = |rng: &mut Rng, _| rng.below(2) as usize;
    let (_, largest) = agree_with_models(&names, 4000, choose, large_zset_op);
    assert!(largest >= 250, "the sets grew past the index's threshold: {largest}");
}

/// Runs `steps` random commands against a server and the model (at each step `choose` gives
/// the index in `names` of the key and `pick` a command for it), strings written beside them
/// keeping the cleaner evicting and relocating: how often a key was found evicted, and the
/// most members or fields a key's state had.
fn agree_with_models(
    names: &[Vec<u8>],
    steps: usize,
    choose: impl Fn(&mut Rng, usize) -> usize,
    pick: impl Fn(&mut Rng, &[u8]) -> Op,
) -> (usize, usize) {
    let config = Config {
        port: 0,
        memory: Size(16 << 20),
        max_item_size: Size(256 << 10),
        workers: 1,
        inline_cleaner: true,
        ..Config::default()
    };
    let (server, clock) = start_with_clock(config);
    let stream = TcpStream::connect(server.local_addr()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut c = Client { stream, buf: Vec::new() };
    let keys: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
    let mut model: BTreeMap<Vec<u8>, Value> = BTreeMap::new();
    let mut rng = Rng(0x5EED_CAFE_F00D_1234);
    let (mut evicted_keys, mut fillers, mut largest) = (0, 0u64, 0);
    for step in 0..steps {
        // Strings beside the collections keep memory full: the cleaner evicts and relocates.
        if rng.below(2) == 0 {
            let filler = vec![b'x'; 20_000 + rng.below(60_000) as usize];
            fillers += 1;
            let name = format!("filler{}", fillers % 400);
            assert_eq!(c.call(&[b"SET", name.as_bytes(), &filler]), Reply::Status(b("OK")));
        }
        if rng.below(10) == 0 {
            clock.advance(rng.below(60));
        }
        let key = keys[choose(&mut rng, step)];
        let op = pick(&mut rng, key);
        let now = clock.now_ms();
        let before = model.get(key).cloned();
        let lived = (op.apply)(before.clone(), now);
        let evicted = (op.apply)(None, now);
        let args: Vec<&[u8]> = op.args.iter().map(Vec::as_slice).collect();
        let reply = c.call(&args);
        let state = server_state(&mut c, key);
        largest = largest.max(state.as_ref().map_or(0, |(_, content)| content.len() / 2));
        let matches = |(r, v): &(Reply, Option<Value>)| {
            *r == reply && (state == state_of(v.as_ref(), now) || state.is_none())
        };
        assert!(
            matches(&lived) || matches(&evicted),
            "step {step}: {:?}\nserver: {reply:?} {state:?}\nmodel: {:?} {:?}\nif evicted: {:?}",
            String::from_utf8_lossy(&args.join(&b' ')),
            lived.0,
            state_of(lived.1.as_ref(), now),
            state_of(evicted.1.as_ref(), now),
        );
        if !matches(&lived) || (state.is_none() && state_of(lived.1.as_ref(), now).is_some()) {
            evicted_keys += 1;
        }
        let old = if matches(&lived) { lived.1 } else { evicted.1 };
        match value_of(&state, old.as_ref()) {
            Some(v) => model.insert(b(key), v),
            None => model.remove(key),
        };
        server.engine().validate();
    }
    let stats = server.engine().stats();
    assert!(stats.relocated_items > 0, "the cleaner relocated items: {stats:?}");
    assert!(stats.evictions > 0, "the cleaner evicted items: {stats:?}");
    assert!(
        stats.edits_in_place > 0,
        "writes of a collection's length were made in place: {stats:?}"
    );
    server.shutdown();
    (evicted_keys, largest)
}
