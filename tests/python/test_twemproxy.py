"""fridge behind the proxies and clients that spread a keyspace over several memcached or Redis
servers: twemproxy (nutcracker 0.5.0, Debian's package) with one memcached pool and one Redis
pool over three fridge nodes, ketama distribution, fnv1a_64 hash, auto-ejection of a dead node;
and pymemcache's HashClient, hashing on the client.

twemproxy's placement is reproduced here from its sources (nc_ketama.c, nc_fnv.c of 0.5.0) so
the test can say on which node each key must be, and read it there directly: 160 points per
server of equal weight, 40 MD5 digests of "<name>-<i>" giving 4 points each, a key's 32-bit
fnv1a_64 hash (twemproxy computes it in 32 bits: the 64-bit offset basis and prime truncated)
served by the first point at or after it. See docs/scale-out.md."""

import bisect
import hashlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
import redis
from pymemcache.client.base import Client
from pymemcache.client.hash import HashClient
from pymemcache.exceptions import MemcacheError

from conftest import drain, fridge_binary, free_port, wait_port

NUTCRACKER = shutil.which("nutcracker") or "/usr/sbin/nutcracker"
pytestmark = pytest.mark.skipif(
    not os.path.exists(NUTCRACKER),
    reason="nutcracker (twemproxy) is not installed: apt-get install nutcracker "
    "(scripts/test installs it)",
)

NODES = 3
RETRY_MS = 1500  # server_retry_timeout: how long an ejected node stays out


def start_node(port):
    """A fridge on `port` (a fixed port, so a restarted node is the same server to the proxy)."""
    env = {**os.environ, "FRIDGE_USER": os.environ.get("FRIDGE_USER", "nobody")}
    proc = subprocess.Popen(
        [fridge_binary(), "-p", str(port), "-m", "64", "-t", "1"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    drain(proc)
    wait_port(port, proc)
    return proc


def kill(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


def ketama_points(names):
    """twemproxy's continuum for servers of weight 1: sorted (point, server index)."""
    points = []
    per_server = 160 * len(names) // len(names)  # floor(pct * 160 / 4 * n) * 4, pct = 1/n
    for index, name in enumerate(names):
        for i in range(per_server // 4):
            digest = hashlib.md5(f"{name}-{i}".encode()).digest()
            for a in range(4):
                d = digest[a * 4 : a * 4 + 4]
                points.append((int.from_bytes(d, "little"), index))
    points.sort()
    return points


def fnv1a_64(key):
    """twemproxy's hash_fnv1a_64: FNV-1a over 32-bit arithmetic."""
    h = 0xCBF29CE484222325 & 0xFFFFFFFF
    for byte in key.encode():
        h ^= byte
        h = (h * (0x100000001B3 & 0xFFFFFFFF)) & 0xFFFFFFFF
    return h


class Ketama:
    def __init__(self, names):
        self.points = ketama_points(names)
        self.values = [p for p, _ in self.points]

    def node(self, key):
        i = bisect.bisect_left(self.values, fnv1a_64(key))
        return self.points[i % len(self.points)][1]


class Proxy:
    """Three fridge nodes and nutcracker in front of them: `mc_port` (memcached pool) and
    `redis_port` (Redis pool), both over the same nodes."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="fridge-twemproxy-")
        self.ports = [free_port() for _ in range(NODES)]
        self.names = [f"node{i}" for i in range(NODES)]
        self.procs = []
        self.nutcracker = None
        self.ketama = Ketama(self.names)
        for port in self.ports:
            self.procs.append(start_node(port))
        self.mc_port, self.redis_port, self.stats_port = free_port(), free_port(), free_port()
        servers = "\n".join(
            f"    - 127.0.0.1:{port}:1 {name}" for port, name in zip(self.ports, self.names)
        )
        pool = f"""  hash: fnv1a_64
  distribution: ketama
  timeout: 2000
  auto_eject_hosts: true
  server_retry_timeout: {RETRY_MS}
  server_failure_limit: 1
  servers:
{servers}
"""
        conf = os.path.join(self.dir, "nutcracker.yml")
        with open(conf, "w") as f:
            f.write(f"mc:\n  listen: 127.0.0.1:{self.mc_port}\n  redis: false\n{pool}")
            f.write(f"rd:\n  listen: 127.0.0.1:{self.redis_port}\n  redis: true\n{pool}")
        check = subprocess.run([NUTCRACKER, "-t", "-c", conf], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        self.log = os.path.join(self.dir, "nutcracker.log")
        self.nutcracker = subprocess.Popen(
            [NUTCRACKER, "-c", conf, "-s", str(self.stats_port), "-i", "100", "-o", self.log]
        )
        wait_port(self.mc_port, self.nutcracker)
        wait_port(self.redis_port, self.nutcracker)

    def stop(self):
        if self.nutcracker is not None:
            kill(self.nutcracker)
        for proc in self.procs:
            kill(proc)
        shutil.rmtree(self.dir, ignore_errors=True)

    def stats(self):
        """nutcracker's statistics (JSON on its stats port)."""
        with socket.create_connection(("127.0.0.1", self.stats_port), timeout=5) as s:
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        return json.loads(data)

    def node_mc(self, i):
        return Client(("127.0.0.1", self.ports[i]), connect_timeout=2, timeout=2)

    def node_redis(self, i):
        return redis.Redis(port=self.ports[i], socket_timeout=2)


@pytest.fixture
def proxy():
    p = Proxy()
    try:
        yield p
    finally:
        p.stop()


def proxied_redis(proxy):
    """redis-py through twemproxy, which closes the connection on CLIENT SETINFO (redis-py's
    greeting, left out by lib_name=None) and on HELLO (RESP2 it is): it closes a connection on
    any command it does not shard."""
    return redis.Redis(
        port=proxy.redis_port, socket_timeout=5, protocol=2, lib_name=None, lib_version=None
    )


def eventually(what, check, seconds=20):
    """Polls `check` (exceptions count as not yet) until it returns true."""
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as e:  # the proxy answers errors while it ejects or retries a node
            last = e
        time.sleep(0.05)
    raise AssertionError(f"timed out: {what} (last error: {last!r})")


# Keys that fnv1a_64 spreads: twemproxy's 32-bit version of it puts 270 of "user:0".."user:299"
# on one node of three and none on another (docs/scale-out.md).
KEYS = [hashlib.sha1(str(i).encode()).hexdigest()[:16] for i in range(300)]


def test_memcached_pool_spreads_keys_by_ketama(proxy):
    mc = Client(("127.0.0.1", proxy.mc_port), connect_timeout=2, timeout=5)
    for key in KEYS:
        assert mc.set(key, f"v-{key}".encode(), noreply=False)
    got = mc.get_many(KEYS)
    assert got == {k: f"v-{k}".encode() for k in KEYS}, "a multi-get across the three nodes"
    mc.set("counter", b"10", noreply=False)
    assert mc.incr("counter", 5) == 15
    assert mc.delete("counter", noreply=False)
    assert mc.get("counter") is None
    counts = [int(proxy.node_mc(i).stats()[b"curr_items"]) for i in range(NODES)]
    assert all(c > 0 for c in counts), f"every node holds keys: {counts}"
    assert sum(counts) == len(KEYS), counts
    for key in KEYS:
        home = proxy.ketama.node(key)
        for i in range(NODES):
            value = proxy.node_mc(i).get(key)
            assert (value is not None) == (i == home), f"{key} on node {i}, ketama says {home}"


def test_redis_pool_spreads_keys_by_ketama(proxy):
    r = proxied_redis(proxy)
    for key in KEYS:
        assert r.set(key, f"v-{key}")
    assert r.mget(KEYS) == [f"v-{k}".encode() for k in KEYS], "MGET is split over the nodes"
    assert r.incr("hits") == 1 and r.incrby("hits", 9) == 10
    assert r.delete("hits") == 1 and r.get("hits") is None
    sizes = [proxy.node_redis(i).dbsize() for i in range(NODES)]
    assert all(s > 0 for s in sizes), f"every node holds keys: {sizes}"
    assert sum(sizes) == len(KEYS), sizes
    for key in KEYS:
        home = proxy.ketama.node(key)
        found = [proxy.node_redis(i).exists(key) for i in range(NODES)]
        assert found == [int(i == home) for i in range(NODES)], f"{key}: {found}, ketama {home}"


def test_a_dead_node_is_ejected_and_used_again_once_back(proxy):
    r = proxied_redis(proxy)
    mc = Client(("127.0.0.1", proxy.mc_port), connect_timeout=2, timeout=5)
    for key in KEYS:
        r.set(key, "r")
        mc.set("mc:" + key, b"m", noreply=False)
    dead = 1
    of_dead = [k for k in KEYS if proxy.ketama.node(k) == dead]
    of_live = [k for k in KEYS if proxy.ketama.node(k) != dead]
    mc_of_dead = [k for k in ("mc:" + k for k in KEYS) if proxy.ketama.node(k) == dead]
    assert of_dead and of_live and mc_of_dead
    kill(proxy.procs[dead])

    # The first request for a key of the dead node fails, or the proxy saw its connections to
    # the node close first: either is a failure, and one (server_failure_limit: 1) ejects the
    # node, as the proxy's stats say (redis-py may retry a request once the node is ejected).
    for request in (lambda: r.get(of_dead[0]), lambda: mc.get(mc_of_dead[0])):
        try:
            request()
        except (redis.RedisError, MemcacheError, OSError):
            pass

    def ejected():
        stats = proxy.stats()
        return all(
            stats[pool]["server_ejects"] >= 1
            and stats[pool][proxy.names[dead]]["server_ejected_at"] > 0
            and all(
                stats[pool][proxy.names[i]]["server_ejected_at"] == 0
                for i in range(NODES)
                if i != dead
            )
            for pool in ("mc", "rd")
        )

    eventually("the dead node ejected from both pools, and only it", ejected)
    # The other nodes' keys are untouched by the ejection: ketama moves only the dead node's.
    assert [r.get(k) for k in of_live] == [b"r"] * len(of_live)

    # The dead node's keys now live elsewhere: a miss, then a write that sticks.
    def rerouted():
        key = of_dead[0]
        if r.get(key) is not None:
            return False
        r.set(key, "moved")
        return r.get(key) == b"moved"

    eventually("the dead node's keys re-routed (redis pool)", rerouted)

    def mc_rerouted():
        key = mc_of_dead[0]
        if mc.get(key) is not None:
            return False
        mc.set(key, b"moved", noreply=False)
        return mc.get(key) == b"moved"

    eventually("the dead node's keys re-routed (memcached pool)", mc_rerouted)
    moved_to = [i for i in range(NODES) if i != dead and proxy.node_redis(i).get(of_dead[0])]
    assert len(moved_to) == 1, "the key was written on one surviving node"

    # Back on the same port (empty): after server_retry_timeout the proxy sends it its keys.
    proxy.procs[dead] = start_node(proxy.ports[dead])
    node = proxy.node_redis(dead)

    def home_again():
        r.set(of_dead[1], "home")
        return node.get(of_dead[1]) == b"home"

    eventually("the restarted node serving its keys again", home_again)
    node_mc = proxy.node_mc(dead)

    def mc_home_again():
        mc.set(mc_of_dead[1], b"home", noreply=False)
        return node_mc.get(mc_of_dead[1]) == b"home"

    eventually("the restarted node serving its keys again (memcached pool)", mc_home_again)
    assert [r.get(k) for k in of_live] == [b"r"] * len(of_live), "the others kept theirs"


def test_pymemcache_hash_client_over_three_nodes_with_one_restarted():
    ports = [free_port() for _ in range(NODES)]
    procs = [start_node(p) for p in ports]
    try:
        servers = [("127.0.0.1", p) for p in ports]
        client = HashClient(
            servers,
            connect_timeout=1,
            timeout=2,
            retry_attempts=1,
            retry_timeout=0,
            dead_timeout=2,
            ignore_exc=False,
        )
        for key in KEYS:
            assert client.set(key, key.encode(), noreply=False)
        assert client.get_many(KEYS) == {k: k.encode() for k in KEYS}
        direct = [Client(s, connect_timeout=2, timeout=2) for s in servers]
        counts = [int(d.stats()[b"curr_items"]) for d in direct]
        assert all(c > 0 for c in counts) and sum(counts) == len(KEYS), counts
        names = [f"127.0.0.1:{p}" for p in ports]  # HashClient's node names
        home = {k: names.index(client.hasher.get_node(k)) for k in KEYS}
        for key in KEYS:
            for i in range(NODES):
                found = direct[i].get(key) is not None
                assert found == (i == home[key]), f"{key} on node {i}, the hash says {home[key]}"

        dead = 2
        kill(procs[dead])
        of_dead = [k for k in KEYS if home[k] == dead]
        of_live = [k for k in KEYS if home[k] != dead]
        assert of_dead and of_live
        with pytest.raises((MemcacheError, OSError)):
            client.get(of_dead[0])

        def rerouted():
            key = of_dead[0]
            if client.get(key) is not None:
                return False
            client.set(key, b"moved", noreply=False)
            return client.get(key) == b"moved"

        eventually("HashClient routing around the dead node", rerouted)
        assert all(client.get(k) == k.encode() for k in of_live), "the others kept theirs"

        procs[dead] = start_node(ports[dead])
        back = Client(servers[dead], connect_timeout=2, timeout=2)

        def home_again():
            client.set(of_dead[1], b"home", noreply=False)
            return back.get(of_dead[1]) == b"home"

        eventually("HashClient using the restarted node after dead_timeout", home_again)
    finally:
        for proc in procs:
            kill(proc)
