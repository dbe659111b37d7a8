//! Redis Cluster's commands over fridge's static slot map (`crate::cluster`): `CLUSTER` INFO,
//! NODES, SLOTS, SHARDS, MYID, KEYSLOT, COUNTKEYSINSLOT, GETKEYSINSLOT, REPLICAS, SLAVES,
//! COUNT-FAILURE-REPORTS, LINKS and HELP; `ASKING`, `READONLY`, `READWRITE`; and [`refused`],
//! the check [`super::dispatch`] makes of a command's keys in cluster mode (Redis 7.0's
//! `getNodeByQuery` and `clusterRedirectClient`, `src/cluster.c`;
//! <https://redis.io/docs/reference/cluster-spec/>).
//!
//! Replies are Redis 7.0.15's shapes. Without `--cluster-config` every one of these commands
//! answers `ERR This instance has cluster support disabled`, as Redis does. The subcommands
//! that act on a cluster bus (MEET, ADDSLOTS, FAILOVER, SETSLOT, …) answer an error: the map
//! changes only by editing the file and reloading.

use std::io::Write as _;

use fridge_proto::resp::{
    Command, Version, write_array_header, write_bulk, write_error, write_integer, write_map_header,
    write_simple, write_verbatim,
};

use super::object::{help, sub_arity};
use super::{MORE_KEYS, NOT_INTEGER, Spec, int_arg, multi, unknown_subcommand};
use crate::cluster::{Cluster, Refusal, SLOTS, SlotMap, Slots, key_slot};
use crate::session::{Ctx, Session};

const DISABLED: &[u8] = b"ERR This instance has cluster support disabled";

/// Whether cluster mode refuses `cmd` here; if so its error reply is written to `out`. A
/// command queued in MULTI adds its slot to the transaction's, and EXEC is judged by the
/// whole queue's keys, as Redis does.
pub(super) fn refused(
    c: &Spec,
    cmd: &Command<'_>,
    s: &mut Session,
    cluster: &Cluster,
    out: &mut Vec<u8>,
) -> bool {
    // The connection's copy of the map, out of the session while the session is used.
    let mut cached = s.cluster_map.take();
    let refused = {
        let map = cluster.current(&mut cached);
        let mut slots = Slots::default();
        let result = if c.name == "exec" && multi::queueing(s) {
            match s.tx.as_ref() {
                Some(t) if t.cross_slot => Err(Refusal::CrossSlot),
                Some(t) => t.slot.map_or(Ok(()), |slot| map.route(slot)),
                None => Ok(()),
            }
        } else {
            keys(c, cmd, map, &mut slots).and_then(|()| slots.route(map))
        };
        match result {
            Err(why) => {
                map.write_refusal(out, why);
                true
            }
            Ok(()) => {
                if let (Some(slot), Some(t)) = (slots.slot, s.tx.as_mut()) {
                    if t.open && !multi::runs_inside(c) {
                        match t.slot {
                            None => t.slot = Some(slot),
                            Some(other) => t.cross_slot |= other != slot,
                        }
                    }
                }
                false
            }
        }
    };
    s.cluster_map = cached;
    refused
}

/// Adds the slots of `cmd`'s keys: by the row's key positions where they say it all, else by
/// Redis's key specifications (`COMMAND GETKEYS`: `EVAL`'s `numkeys`, `ZUNIONSTORE`'s,
/// `OBJECT ENCODING key`, `SPUBLISH`'s shard channel…).
fn keys(c: &Spec, cmd: &Command<'_>, map: &SlotMap, slots: &mut Slots) -> Result<(), Refusal> {
    if c.first_key > 0 && c.flags & MORE_KEYS == 0 {
        let last = if c.last_key < 0 { cmd.len() as i64 + c.last_key } else { c.last_key };
        let mut i = c.first_key;
        while i <= last {
            slots.add(map, cmd.get(i as usize).unwrap_or_default())?;
            i += c.step;
        }
        return Ok(());
    }
    let movable =
        super::catalog::entry(c.name).is_some_and(|e| e.has_keys() || !e.subcommands.is_empty());
    if movable {
        let args: Vec<&[u8]> = cmd.iter().collect();
        for (i, _) in super::command::command_keys(c, &args).unwrap_or_default() {
            slots.add(map, args[i])?;
        }
    }
    Ok(())
}

/// `ASKING`, `READONLY`, `READWRITE`: OK in cluster mode. No slot is ever migrating (so no
/// `ASK` is sent and `ASKING` changes nothing) and there are no replicas (so `READONLY` has
/// nothing to allow).
pub(super) fn asking(
    _: &Command<'_>,
    out: &mut Vec<u8>,
    _: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    if ctx.shared.cluster.is_none() {
        return write_error(out, DISABLED);
    }
    write_simple(out, b"OK");
}

/// The subcommands Redis 7.0 has: `(name, arity)` with Redis's arity (the container's name
/// counted).
const SUBCOMMANDS: [(&str, i64); 27] = [
    ("addslots", -3),
    ("addslotsrange", -4),
    ("bumpepoch", 2),
    ("count-failure-reports", 3),
    ("countkeysinslot", 3),
    ("delslots", -3),
    ("delslotsrange", -4),
    ("failover", -2),
    ("flushslots", 2),
    ("forget", 3),
    ("getkeysinslot", 4),
    ("help", 2),
    ("info", 2),
    ("keyslot", 3),
    ("links", 2),
    ("meet", -4),
    ("myid", 2),
    ("nodes", 2),
    ("replicas", 3),
    ("replicate", 3),
    ("reset", -2),
    ("saveconfig", 2),
    ("set-config-epoch", 3),
    ("setslot", -4),
    ("shards", 2),
    ("slaves", 3),
    ("slots", 2),
];

/// `CLUSTER <subcommand> [argument …]`: Redis's arity check per subcommand, then the
/// subcommand (or its error).
pub(super) fn cluster(
    cmd: &Command<'_>,
    out: &mut Vec<u8>,
    s: &mut Session,
    ctx: &mut Ctx<'_>,
    _: &Spec,
) {
    let arg = |i: usize| cmd.get(i).unwrap_or_default();
    let sub = arg(1).to_ascii_lowercase();
    let Some(&(name, arity)) = SUBCOMMANDS.iter().find(|(n, _)| n.as_bytes() == sub.as_slice())
    else {
        return unknown_subcommand(out, arg(1), b"CLUSTER");
    };
    let n = cmd.len() as i64;
    if (arity > 0 && n != arity) || n < -arity {
        return sub_arity(out, "cluster", arg(1));
    }
    let Some(cluster) = ctx.shared.cluster.as_ref() else {
        return write_error(out, DISABLED);
    };
    let map = cluster.map();
    let v = s.version;
    match name {
        "help" => help(out, &CLUSTER_HELP),
        "info" => write_verbatim(out, v, b"txt", &info(&map)),
        "nodes" => write_verbatim(out, v, b"txt", &nodes(&map)),
        "myid" => write_bulk(out, map.me().id.as_bytes()),
        "slots" => slots(out, v, &map),
        "shards" => shards(out, v, &map),
        "keyslot" => write_integer(out, i64::from(key_slot(arg(2)))),
        "countkeysinslot" => {
            let Some(slot) = int_arg(arg(2)) else { return write_error(out, NOT_INTEGER) };
            let Some(slot) = u16::try_from(slot).ok().filter(|&s| usize::from(s) < SLOTS) else {
                return write_error(out, b"ERR Invalid slot");
            };
            let count = keys_in_slot(s, ctx, slot, usize::MAX, |_| {});
            write_integer(out, count as i64);
        }
        "getkeysinslot" => {
            let Some(slot) = int_arg(arg(2)) else { return write_error(out, NOT_INTEGER) };
            let Some(max) = int_arg(arg(3)) else { return write_error(out, NOT_INTEGER) };
            let (Some(slot), Ok(max)) = (
                u16::try_from(slot).ok().filter(|&s| usize::from(s) < SLOTS),
                usize::try_from(max),
            ) else {
                return write_error(out, b"ERR Invalid slot or number of keys");
            };
            let mut keys = Vec::new();
            keys_in_slot(s, ctx, slot, max, |k| keys.push(k));
            write_array_header(out, keys.len());
            for k in keys {
                write_bulk(out, &k);
            }
        }
        "replicas" | "slaves" => {
            if map.nodes.iter().any(|n| n.id.as_bytes() == arg(2)) {
                write_array_header(out, 0);
            } else {
                unknown_node(out, arg(2));
            }
        }
        "count-failure-reports" => {
            if map.nodes.iter().any(|n| n.id.as_bytes() == arg(2)) {
                write_integer(out, 0);
            } else {
                unknown_node(out, arg(2));
            }
        }
        // No cluster bus: no links between nodes.
        "links" => write_array_header(out, 0),
        _ => {
            let mut msg = b"ERR CLUSTER ".to_vec();
            msg.extend(name.bytes().map(|c| c.to_ascii_uppercase()));
            msg.extend_from_slice(
                b" is not supported: the slot map is static (--cluster-config); edit the file \
                  and reload",
            );
            write_error(out, &msg);
        }
    }
}

fn unknown_node(out: &mut Vec<u8>, id: &[u8]) {
    out.extend_from_slice(b"-ERR Unknown node ");
    out.extend(id.iter().take(128).map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }));
    out.extend_from_slice(b"\r\n");
}

/// Hands `each` up to `max` keys of the client's database in `slot` and returns how many:
/// one pass over the whole index (its cost is `KEYS`'s: linear in the items, on this worker),
/// stopped once `max` are found.
fn keys_in_slot(
    s: &Session,
    ctx: &mut Ctx<'_>,
    slot: u16,
    max: usize,
    mut each: impl FnMut(Vec<u8>),
) -> usize {
    let (mut found, mut cursor) = (0, 0);
    while found < max {
        ctx.keys.clear();
        cursor = ctx.engine.scan(s.tenant, cursor, 1024, ctx.keys);
        for k in ctx.keys.drain(..) {
            if found < max && key_slot(&k) == slot {
                each(k);
                found += 1;
            }
        }
        if cursor == 0 {
            break;
        }
    }
    found
}

/// A node's config epoch: its place in the file, from 1 (the map has no elections).
fn epoch(i: usize) -> usize {
    i + 1
}

/// `CLUSTER INFO`, as Redis 7.0 writes it for a cluster with no replicas and no bus traffic.
fn info(map: &SlotMap) -> Vec<u8> {
    let size = map.nodes.iter().filter(|n| !n.ranges.is_empty()).count();
    let mut t = Vec::new();
    let _ = write!(
        t,
        "cluster_state:{}\r\ncluster_slots_assigned:{}\r\ncluster_slots_ok:{}\r\n\
         cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:{}\r\n\
         cluster_size:{size}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{}\r\n\
         cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n\
         total_cluster_links_buffer_limit_exceeded:0\r\n",
        if map.ok() { "ok" } else { "fail" },
        map.assigned,
        map.assigned,
        map.nodes.len(),
        map.nodes.len(),
        epoch(map.myself),
    );
    t
}

/// `CLUSTER NODES`: `<id> <ip:port@cport> <flags> <master> <ping-sent> <pong-recv>
/// <config-epoch> <link-state> <slot>…`, one line per node in the file's order; the bus port
/// is 0 (there is no bus).
fn nodes(map: &SlotMap) -> Vec<u8> {
    let mut t = Vec::new();
    for (i, n) in map.nodes.iter().enumerate() {
        let flags = if i == map.myself { "myself,master" } else { "master" };
        let _ = write!(t, "{} {}:{}@0 {flags} - 0 0 {} connected", n.id, n.host, n.port, epoch(i));
        for &(from, to) in &n.ranges {
            let _ = if from == to { write!(t, " {from}") } else { write!(t, " {from}-{to}") };
        }
        t.push(b'\n');
    }
    t
}

/// `CLUSTER SLOTS`: per run of slots of one node, `[from, to, [host, port, id, {}]]`, in slot
/// order.
fn slots(out: &mut Vec<u8>, v: Version, map: &SlotMap) {
    let runs = map.runs();
    write_array_header(out, runs.len());
    for (from, to, n) in runs {
        let node = &map.nodes[n];
        write_array_header(out, 3);
        write_integer(out, i64::from(from));
        write_integer(out, i64::from(to));
        write_array_header(out, 4);
        write_bulk(out, node.host.as_bytes());
        write_integer(out, i64::from(node.port));
        write_bulk(out, node.id.as_bytes());
        write_map_header(out, v, 0);
    }
}

/// `CLUSTER SHARDS`: one shard per node (no replicas), in the file's order.
fn shards(out: &mut Vec<u8>, v: Version, map: &SlotMap) {
    write_array_header(out, map.nodes.len());
    for n in &map.nodes {
        write_map_header(out, v, 2);
        write_bulk(out, b"slots");
        write_array_header(out, 2 * n.ranges.len());
        for &(from, to) in &n.ranges {
            write_integer(out, i64::from(from));
            write_integer(out, i64::from(to));
        }
        write_bulk(out, b"nodes");
        write_array_header(out, 1);
        write_map_header(out, v, 7);
        write_bulk(out, b"id");
        write_bulk(out, n.id.as_bytes());
        write_bulk(out, b"port");
        write_integer(out, i64::from(n.port));
        write_bulk(out, b"ip");
        write_bulk(out, n.host.as_bytes());
        write_bulk(out, b"endpoint");
        write_bulk(out, n.host.as_bytes());
        write_bulk(out, b"role");
        write_bulk(out, b"master");
        write_bulk(out, b"replication-offset");
        write_integer(out, 0);
        write_bulk(out, b"health");
        write_bulk(out, b"online");
    }
}

/// Redis 7.0.15's `CLUSTER HELP`, byte for byte.
const CLUSTER_HELP: [&str; 56] = [
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
    "HELP",
    "    Prints this help.",
];
