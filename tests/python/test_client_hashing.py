"""fridge under libmemcached's consistent hashing (ketama), through pylibmc, its Python binding:
three fridge nodes, one stopped and brought back on the same port, over the text and the
binary protocol. (pymemcache's HashClient is tested the same way in test_twemproxy.py.)

libmemcached's behaviours that make a dead node leave the continuum and come back:
`remove_failed` (auto-eject) with `failure_limit` 1 (eject after one failure; libmemcached
1.0's `remove_failed` N sets the limit to N, 1.1's leaves it at 5), and `retry_timeout` 1 /
`dead_timeout` 1 (an ejected node is tried again after a second, and put back in the
continuum once it answers). Passes with the libmemcached 1.0.16 that pylibmc's wheel bundles
and with Debian's 1.1.4 (pylibmc built from source).

With `ketama_weighted` (libketama-compatible: what PHP's OPT_LIBKETAMA_COMPATIBLE sets) the
placement is that of libketama, reproduced here: 160 points per server of equal weight, 40 MD5
digests of "host:port-i" giving 4 points each (test_twemproxy.ketama_points), a key's hash the
first 4 bytes of its MD5, little-endian, served by the first point at or after it. Plain
`ketama` (libmemcached's own continuum and key hash) is checked by where the keys are found
only. See docs/scale-out.md."""

import bisect
import hashlib

import pytest
from pymemcache.client.base import Client

from conftest import free_port, stop
from test_twemproxy import KEYS, eventually, ketama_points, kill, start_node

pylibmc = pytest.importorskip("pylibmc")

NODES = 3
FAILOVER = {"remove_failed": 1, "failure_limit": 1, "retry_timeout": 1, "dead_timeout": 1,
            "connect_timeout": 1000, "_poll_timeout": 1000}


class Libketama:
    """libketama's continuum over `names` (servers of weight 1)."""

    def __init__(self, names):
        self.points = ketama_points(names)
        self.values = [p for p, _ in self.points]

    def node(self, key):
        h = int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "little")
        i = bisect.bisect_left(self.values, h)
        return self.points[i % len(self.points)][1]


def direct(port):
    return Client(("127.0.0.1", port), connect_timeout=2, timeout=2)


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
@pytest.mark.parametrize("distribution", ["ketama_weighted", "ketama"])
def test_libmemcached_ketama_over_three_nodes_with_one_restarted(binary, distribution):
    ports = [free_port() for _ in range(NODES)]
    procs = [start_node(p) for p in ports]
    try:
        names = [f"127.0.0.1:{p}" for p in ports]
        mc = pylibmc.Client(names, binary=binary, behaviors={distribution: True, **FAILOVER})
        assert mc.behaviors["auto_eject"] and mc.behaviors["failure_limit"] == 1
        for key in KEYS:
            assert mc.set(key, key.encode())
        assert mc.get_multi(KEYS) == {k: k.encode() for k in KEYS}, "a multi-get over 3 nodes"

        # Each key on exactly one node, every node holding some, the counts adding up.
        nodes = [direct(p) for p in ports]
        counts = [int(n.stats()[b"curr_items"]) for n in nodes]
        assert all(c > 0 for c in counts) and sum(counts) == len(KEYS), counts
        home = {}
        for key in KEYS:
            found = [i for i in range(NODES) if nodes[i].get(key) is not None]
            assert len(found) == 1, f"{key} found on nodes {found}"
            home[key] = found[0]
        if distribution == "ketama_weighted":
            ketama = Libketama(names)
            wrong = [k for k in KEYS if home[k] != ketama.node(k)]
            assert not wrong, f"placed other than libketama says: {wrong[:5]}"

        dead = 1
        of_dead = [k for k in KEYS if home[k] == dead]
        of_live = [k for k in KEYS if home[k] != dead]
        assert len(of_dead) >= 2 and of_live
        stop(procs[dead])

        # The other nodes' keys keep working throughout (ketama moves only the dead node's).
        assert mc.get_multi(of_live) == {k: k.encode() for k in of_live}
        for key in of_live[:20]:
            assert mc.set(key, key.encode()) and mc.get(key) == key.encode()

        # Once the failure ejects the node, its keys go to the survivors: a miss, then a set
        # that sticks. (An operation on the dead node may raise, or its get return None,
        # until then: exceptions count as not yet.)
        moved = of_dead[0]

        def rerouted():
            if mc.get(moved) is not None:
                return False
            mc.set(moved, b"moved")
            return mc.get(moved) == b"moved"

        eventually("libmemcached routing around the dead node", rerouted)
        on = [i for i in range(NODES) if i != dead and nodes[i].get(moved) == b"moved"]
        assert len(on) == 1, f"the moved key is on one survivor: {on}"
        if distribution == "ketama_weighted":
            live = [i for i in range(NODES) if i != dead]
            assert on[0] == live[Libketama([names[i] for i in live]).node(moved)]
        assert mc.get_multi(of_live) == {k: k.encode() for k in of_live}, "the others kept theirs"

        # Back on the same port (empty): after dead_timeout the client tries it again and it
        # serves its keys once more.
        procs[dead] = start_node(ports[dead])
        back = direct(ports[dead])

        def home_again():
            mc.set(of_dead[1], b"home")
            return back.get(of_dead[1]) == b"home"

        eventually("libmemcached using the restarted node after dead_timeout", home_again)
        # The moved key is routed home again, to the empty node: a miss (the copy left on the
        # survivor is stale and unreachable).
        assert mc.get(moved) is None
        # Every key is placed as before the node died.
        for key in KEYS:
            assert mc.set(key, b"again")
        for key in KEYS:
            node = back if home[key] == dead else nodes[home[key]]
            assert node.get(key) == b"again", f"{key} back on node {home[key]}"
        assert int(back.stats()[b"curr_items"]) == len(of_dead)
        assert mc.get_multi(KEYS) == {k: b"again" for k in KEYS}
    finally:
        for proc in procs:
            kill(proc)
