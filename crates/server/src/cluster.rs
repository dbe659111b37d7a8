//! Redis Cluster clients over a static slot map (`--cluster-config`).
//!
//! The Redis Cluster specification (<https://redis.io/docs/reference/cluster-spec/>) splits
//! the key space into 16384 hash slots: a key's slot is CRC16-XMODEM of the key modulo 16384,
//! or of its *hash tag* — the bytes between the first `{` and the first `}` after it, when
//! there are any — so that `{user1}.a` and `{user1}.b` share a slot. Each slot belongs to one
//! node; a node answers a command whose keys are in a slot of another node with
//! `-MOVED <slot> <host>:<port>`, and a command whose keys are in several slots with
//! `-CROSSSLOT`. Cluster clients (redis-py's `RedisCluster`, Jedis, go-redis…) read the map
//! with `CLUSTER SLOTS` or `CLUSTER SHARDS`, send each command to the node of its slot, and
//! follow `MOVED` by reading the map again.
//!
//! fridge has no cluster bus: nodes do not talk to each other, elect or fail over. The map is
//! a file every node is given (one line per node: id, address, slot ranges); a reload (SIGHUP
//! or `CONFIG RELOAD`) rereads it, publishes the new map, and then drops the keys of the slots
//! this node no longer serves (nothing is migrated: a cache refills from its source). So
//! there are never slots in migration: `ASK` is never sent, and `ASKING`, `READONLY` and
//! `READWRITE` only answer OK (there are no replicas). `docs/scale-out.md` describes the file
//! and what is and is not supported.
//!
//! Cost: with no `--cluster-config`, [`crate::shared::Shared::cluster`] is `None` and a RESP
//! command pays one predictable branch. With it, a command with keys hashes each key (a
//! table-driven CRC16: one load per byte) and loads the map's generation once: each
//! connection routes by its own copy of the map, refreshed under the lock only after a reload
//! ([`Cluster::current`]), so workers do not share a lock's line per command.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use fridge_engine::{Engine, TenantId};

/// The number of hash slots (the spec's `CLUSTER_SLOTS`).
pub const SLOTS: usize = 16384;

/// No node serves the slot (in [`SlotMap`]'s owner table).
const UNOWNED: u16 = u16::MAX;

/// CRC16-XMODEM's table (polynomial 0x1021, no reflection, initial value 0), as in the spec's
/// `crc16.c`, computed at compile time.
static CRC16_TABLE: [u16; 256] = crc16_table();

const fn crc16_table() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

/// CRC16-XMODEM of `data` (the spec's reference: `crc16("123456789") == 0x31C3`).
pub fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &b| (crc << 8) ^ CRC16_TABLE[usize::from(((crc >> 8) as u8) ^ b)])
}

/// The hash slot of `key` (the spec's `keyHashSlot`): of the hash tag if the key has a
/// non-empty one (`{` … the first `}` after it), else of the whole key.
pub fn key_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&c| c == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        rest.iter().position(|&c| c == b'}').filter(|&len| len > 0).map(|len| &rest[..len])
    });
    crc16(tagged.unwrap_or(key)) & (SLOTS as u16 - 1)
}

/// One node of the map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// 40 lowercase hexadecimal characters, as Redis's node ids.
    pub id: String,
    /// The address clients are sent to (`MOVED`, `CLUSTER SLOTS`): a name or an IP.
    pub host: String,
    pub port: u16,
    /// The slot ranges it serves, inclusive, in the file's order.
    pub ranges: Vec<(u16, u16)>,
}

/// A cluster map: the nodes, which one is this server, and each slot's owner.
#[derive(Debug)]
pub struct SlotMap {
    pub nodes: Vec<Node>,
    /// This server's index in `nodes`.
    pub myself: usize,
    /// Each slot's node index, [`UNOWNED`] for none: 32 KiB.
    owner: Box<[u16]>,
    /// Slots some node serves; the cluster is `ok` when all are.
    pub assigned: usize,
}

impl SlotMap {
    /// Parses a cluster-config file. This server is the node of the `myself <id>` line, or
    /// else the node whose port is one of `ports` and whose host is `listen` (or any host if
    /// `listen` is a wildcard address). See `docs/scale-out.md` for the format:
    ///
    /// ```text
    /// # comment
    /// myself 1111111111111111111111111111111111111111      (optional)
    /// node 1111111111111111111111111111111111111111 10.0.0.1:6379 0-5460
    /// node 2222222222222222222222222222222222222222 10.0.0.2:6379 5461-10922
    /// node 3333333333333333333333333333333333333333 10.0.0.3:6379 10923-16383
    /// ```
    pub fn parse(text: &str, listen: &str, ports: &[u16]) -> Result<SlotMap, String> {
        let mut nodes: Vec<Node> = Vec::new();
        let mut myself_id: Option<String> = None;
        let mut owner = vec![UNOWNED; SLOTS].into_boxed_slice();
        let mut assigned = 0;
        for (n, line) in text.lines().enumerate() {
            let at = |e: String| format!("line {}: {e}", n + 1);
            let line = line.split('#').next().unwrap_or("").trim();
            let mut words = line.split_whitespace();
            match words.next() {
                None => {}
                Some("myself") => {
                    let id = words.next().ok_or_else(|| at("myself needs a node id".into()))?;
                    if words.next().is_some() || myself_id.is_some() {
                        return Err(at("one `myself <id>` line, with one id".into()));
                    }
                    myself_id = Some(id.to_string());
                }
                Some("node") => {
                    let node = parse_node(&mut words).map_err(at)?;
                    if nodes.iter().any(|o| o.id == node.id) {
                        return Err(at(format!("node {} appears twice", node.id)));
                    }
                    let index =
                        u16::try_from(nodes.len()).map_err(|_| at("too many nodes".into()))?;
                    for &(from, to) in &node.ranges {
                        for slot in from..=to {
                            let o = &mut owner[usize::from(slot)];
                            if *o != UNOWNED {
                                return Err(at(format!(
                                    "slot {slot} is already served by {}",
                                    nodes[usize::from(*o)].id
                                )));
                            }
                            *o = index;
                            assigned += 1;
                        }
                    }
                    nodes.push(node);
                }
                Some(w) => return Err(at(format!("unknown word {w:?} (`node` or `myself`)"))),
            }
        }
        let wildcard = matches!(listen, "0.0.0.0" | "::" | "[::]" | "");
        let myself = match &myself_id {
            Some(id) => nodes
                .iter()
                .position(|n| &n.id == id)
                .ok_or_else(|| format!("myself {id}: no node line has this id"))?,
            None => {
                let mut mine = nodes.iter().enumerate().filter(|(_, n)| {
                    ports.contains(&n.port) && (wildcard || listen.split(',').any(|l| l == n.host))
                });
                match (mine.next(), mine.next()) {
                    (Some((i, _)), None) => i,
                    (None, _) => {
                        return Err(format!(
                            "no node line has this server's address ({listen} port {ports:?}); \
                             name it with `myself <id>`"
                        ));
                    }
                    (Some(_), Some(_)) => {
                        return Err(
                            "several node lines match this server's address; name it with \
                             `myself <id>`"
                                .into(),
                        );
                    }
                }
            }
        };
        Ok(SlotMap { nodes, myself, owner, assigned })
    }

    /// The node serving `slot`, `None` if none does.
    #[inline]
    pub fn owner(&self, slot: u16) -> Option<usize> {
        let o = *self.owner.get(usize::from(slot))?;
        (o != UNOWNED).then_some(usize::from(o))
    }

    /// Whether this server serves `slot`.
    #[inline]
    pub fn serves(&self, slot: u16) -> bool {
        self.owner(slot) == Some(self.myself)
    }

    /// Whether every slot is served (`cluster_state:ok`).
    pub fn ok(&self) -> bool {
        self.assigned == SLOTS
    }

    /// How many slots this server serves.
    pub fn served(&self) -> usize {
        (0..SLOTS as u16).filter(|&s| self.serves(s)).count()
    }

    /// This server's node.
    pub fn me(&self) -> &Node {
        &self.nodes[self.myself]
    }

    /// The runs of consecutive slots with the same owner, in slot order: `(from, to, node)`
    /// (`CLUSTER SLOTS`).
    pub fn runs(&self) -> Vec<(u16, u16, usize)> {
        let mut runs: Vec<(u16, u16, usize)> = Vec::new();
        for slot in 0..SLOTS as u16 {
            let Some(o) = self.owner(slot) else { continue };
            match runs.last_mut() {
                Some((_, to, n)) if *n == o && *to + 1 == slot => *to = slot,
                _ => runs.push((slot, slot, o)),
            }
        }
        runs
    }

    /// Decides where a command whose keys are all in `slot` runs (Redis's `getNodeByQuery`,
    /// `src/cluster.c`): here, or refused.
    #[inline]
    pub fn route(&self, slot: u16) -> Result<(), Refusal> {
        match self.owner(slot) {
            None => Err(Refusal::Unbound),
            Some(_) if !self.ok() => Err(Refusal::Down),
            Some(o) if o != self.myself => Err(Refusal::Moved(slot)),
            Some(_) => Ok(()),
        }
    }

    /// The refusal's error reply, as Redis writes it (`clusterRedirectClient`).
    pub fn write_refusal(&self, out: &mut Vec<u8>, why: Refusal) {
        match why {
            Refusal::CrossSlot => {
                out.extend_from_slice(
                    b"-CROSSSLOT Keys in request don't hash to the same slot\r\n",
                );
            }
            Refusal::Unbound => out.extend_from_slice(b"-CLUSTERDOWN Hash slot not served\r\n"),
            Refusal::Down => out.extend_from_slice(b"-CLUSTERDOWN The cluster is down\r\n"),
            Refusal::Moved(slot) => {
                let n = self.owner(slot).map(|o| &self.nodes[o]);
                let (host, port) = n.map_or(("", 0), |n| (n.host.as_str(), n.port));
                out.extend_from_slice(format!("-MOVED {slot} {host}:{port}\r\n").as_bytes());
            }
        }
    }
}

/// `node <id> <host>:<port> <range>…` less its first word.
fn parse_node<'a>(words: &mut impl Iterator<Item = &'a str>) -> Result<Node, String> {
    let id = words.next().ok_or("node needs an id, an address and slots")?;
    if id.len() != 40 || !id.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)) {
        return Err(format!("node id {id:?} is not 40 lowercase hex characters"));
    }
    let addr = words.next().ok_or("node needs an address host:port")?;
    let (host, port) = addr
        .rsplit_once(':')
        .filter(|(h, _)| !h.is_empty())
        .ok_or_else(|| format!("address {addr:?} is not host:port"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = port
        .parse()
        .ok()
        .filter(|&p| p != 0)
        .ok_or_else(|| format!("port {port:?} is not a port number"))?;
    let mut ranges = Vec::new();
    for w in words {
        let slot = |s: &str| {
            s.parse::<u16>()
                .ok()
                .filter(|&n| usize::from(n) < SLOTS)
                .ok_or_else(|| format!("slot {s:?} is not between 0 and {}", SLOTS - 1))
        };
        let (from, to) = match w.split_once('-') {
            Some((a, b)) => (slot(a)?, slot(b)?),
            None => (slot(w)?, slot(w)?),
        };
        if from > to {
            return Err(format!("slot range {w} runs backwards"));
        }
        ranges.push((from, to));
    }
    Ok(Node { id: id.to_string(), host: host.to_string(), port, ranges })
}

/// Why a command is not run here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its keys are in several slots.
    CrossSlot,
    /// Another node serves the slot.
    Moved(u16),
    /// No node serves the slot.
    Unbound,
    /// Some slot is not served: the cluster is down.
    Down,
}

/// The slot a command's keys share, gathered key by key as Redis's `getNodeByQuery` does: the
/// first key's slot must be served by some node, and every other key must be in the same
/// slot.
#[derive(Debug, Default, Clone, Copy)]
pub struct Slots {
    pub slot: Option<u16>,
}

impl Slots {
    /// Adds one key.
    #[inline]
    pub fn add(&mut self, map: &SlotMap, key: &[u8]) -> Result<(), Refusal> {
        self.add_slot(map, key_slot(key))
    }

    /// Adds one key by its slot.
    #[inline]
    pub fn add_slot(&mut self, map: &SlotMap, slot: u16) -> Result<(), Refusal> {
        match self.slot {
            None if map.owner(slot).is_none() => Err(Refusal::Unbound),
            None => {
                self.slot = Some(slot);
                Ok(())
            }
            Some(s) if s != slot => Err(Refusal::CrossSlot),
            Some(_) => Ok(()),
        }
    }

    /// Where the command runs once every key was added.
    #[inline]
    pub fn route(&self, map: &SlotMap) -> Result<(), Refusal> {
        self.slot.map_or(Ok(()), |s| map.route(s))
    }
}

/// The cluster mode of a server: the file and the map in force.
#[derive(Debug)]
pub struct Cluster {
    path: PathBuf,
    listen: String,
    ports: Vec<u16>,
    map: RwLock<Arc<SlotMap>>,
    /// Bumped after each map a reload publishes, so a connection's copy ([`Cluster::current`])
    /// is refreshed without the lock being taken per command.
    generation: AtomicU64,
}

/// A connection's copy of the map in force and the generation it was read at
/// ([`Cluster::current`]).
pub type CachedMap = Option<(u64, Arc<SlotMap>)>;

impl Cluster {
    /// Reads the map at start.
    pub fn load(path: PathBuf, listen: &str, ports: Vec<u16>) -> Result<Cluster, String> {
        let map = read(&path, listen, &ports)?;
        let map = RwLock::new(Arc::new(map));
        Ok(Cluster { path, listen: listen.to_string(), ports, map, generation: AtomicU64::new(0) })
    }

    /// The map in force, read through `cached`, a connection's copy: a command pays one load
    /// of the generation, and the lock is taken only after a reload published a new map.
    #[inline]
    pub fn current<'a>(&self, cached: &'a mut CachedMap) -> &'a SlotMap {
        let generation = self.generation.load(Ordering::Acquire);
        if cached.as_ref().is_some_and(|(seen, _)| *seen != generation) {
            *cached = None;
        }
        // A map read after the generation is at least as new as it says.
        &cached.get_or_insert_with(|| (generation, self.map())).1
    }

    /// The map in force.
    pub fn map(&self) -> Arc<SlotMap> {
        Arc::clone(&self.map.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Rereads the file and publishes the new map, then drops the keys (of every database of
    /// `tenant`) in the slots this server served and no longer does; returns how many it
    /// dropped. On error the map in force stays. Commands see the new map from the swap on, so
    /// a key of a dropped slot is refused (`MOVED`) while the pass runs; a write that was
    /// routed by the old map just before the swap may land behind the pass and stay, answered
    /// `MOVED`, until it expires or is evicted (`docs/scale-out.md`). The pass is one walk of
    /// the index per database: linear in the items, run on the reloading thread.
    pub fn reload(&self, engine: &Engine, tenant: TenantId, databases: u8) -> Result<u64, String> {
        let new = Arc::new(read(&self.path, &self.listen, &self.ports)?);
        let old = std::mem::replace(
            &mut *self.map.write().unwrap_or_else(|e| e.into_inner()),
            Arc::clone(&new),
        );
        self.generation.fetch_add(1, Ordering::Release);
        let lost = (0..SLOTS as u16).any(|s| old.serves(s) && !new.serves(s));
        if !lost {
            return Ok(0);
        }
        let mut w = engine.worker().map_err(|e| format!("cannot drop keys: {e}"))?;
        let mut dropped = 0;
        let mut keys = Vec::new();
        for db in 0..databases {
            w.select(db);
            let mut cursor = 0;
            loop {
                keys.clear();
                cursor = w.scan(tenant, cursor, 1024, &mut keys);
                for k in &keys {
                    let slot = key_slot(k);
                    if old.serves(slot) && !new.serves(slot) && w.delete(tenant, k) {
                        dropped += 1;
                    }
                }
                if cursor == 0 {
                    break;
                }
            }
        }
        Ok(dropped)
    }
}

/// Reads and parses the file.
fn read(path: &std::path::Path, listen: &str, ports: &[u16]) -> Result<SlotMap, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read cluster config {}: {e}", path.display()))?;
    SlotMap::parse(&text, listen, ports)
        .map_err(|e| format!("cluster config {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";

    #[test]
    fn crc16_is_xmodem() {
        assert_eq!(crc16(b"123456789"), 0x31C3, "the spec's check value");
        assert_eq!(crc16(b""), 0);
    }

    /// Slots redis-server 7.0.15 gave for these keys (`CLUSTER KEYSLOT`).
    #[test]
    fn key_slots_are_redis_slots() {
        for (key, slot) in [
            (&b"foo"[..], 12182),
            (b"bar", 5061),
            (b"{user1000}.following", 3443),
            (b"{user1000}.followers", 3443),
            (b"foo{}{bar}", 8363),
            (b"foo{{bar}}zap", 4015),
            (b"foo{bar}{zap}", 5061),
            (b"123456789", 12739),
            (b"", 0),
            (b"{}", 15257),
            (b"a{b", 13340),
        ] {
            assert_eq!(key_slot(key), slot, "{}", String::from_utf8_lossy(key));
        }
    }

    fn two_nodes(extra: &str) -> String {
        format!(
            "# test\nnode {A} 127.0.0.1:7001 0-8000\nnode {B} 127.0.0.1:7002 8001-16383 {extra}\n"
        )
    }

    #[test]
    fn myself_is_found_by_address_or_named() {
        let m = SlotMap::parse(&two_nodes(""), "127.0.0.1", &[7002]).unwrap();
        assert_eq!((m.myself, m.ok(), m.assigned), (1, true, SLOTS));
        assert_eq!(m.owner(8000), Some(0));
        assert_eq!(m.runs(), [(0, 8000, 0), (8001, 16383, 1)]);
        let named = SlotMap::parse(&format!("myself {A}\n{}", two_nodes("")), "x", &[1]).unwrap();
        assert_eq!(named.myself, 0);
        assert!(SlotMap::parse(&two_nodes(""), "127.0.0.1", &[7003]).is_err(), "no node is me");
        let any = SlotMap::parse(&two_nodes(""), "0.0.0.0", &[7001]).unwrap();
        assert_eq!(any.myself, 0, "a wildcard listen address matches any host");
    }

    #[test]
    fn bad_files_say_where() {
        let twice = format!("node {A} h:1 0-10\nnode {B} h:2 10\n");
        let e = SlotMap::parse(&twice, "h", &[1]).unwrap_err();
        assert!(e.starts_with("line 2: slot 10 is already served"), "{e}");
        for bad in [
            "node abc h:1 0".to_string(),
            format!("node {A} h 0"),
            format!("node {A} h:1 16384"),
            format!("node {A} h:1 9-3"),
            format!("nodes {A} h:1 0"),
        ] {
            assert!(SlotMap::parse(&bad, "h", &[1]).unwrap_err().starts_with("line 1:"), "{bad}");
        }
    }

    #[test]
    fn routing_follows_redis() {
        let m = SlotMap::parse(&two_nodes(""), "127.0.0.1", &[7001]).unwrap();
        let mut s = Slots::default();
        assert_eq!(s.add(&m, b"bar"), Ok(()));
        assert_eq!(s.add(&m, b"foo"), Err(Refusal::CrossSlot));
        assert_eq!(s.route(&m), Ok(()));
        assert_eq!(m.route(key_slot(b"foo")), Err(Refusal::Moved(12182)));
        let mut out = Vec::new();
        m.write_refusal(&mut out, Refusal::Moved(12182));
        assert_eq!(out, b"-MOVED 12182 127.0.0.1:7002\r\n");
        let half =
            SlotMap::parse(&format!("node {A} 127.0.0.1:7001 0-8000\n"), "127.0.0.1", &[7001])
                .unwrap();
        assert!(!half.ok());
        assert_eq!(Slots::default().add(&half, b"foo"), Err(Refusal::Unbound));
        assert_eq!(half.route(key_slot(b"bar")), Err(Refusal::Down), "served, but down");
    }
}
