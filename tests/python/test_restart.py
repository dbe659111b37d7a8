"""Warm restart (`-e`/`--restart-file`): a SIGTERM writes the cache to the file and the next
start reads it back, every item byte for byte with its flags, CAS, kind, database, tenant and
its TTL's deadline; a SIGKILL, a damaged file or other settings start empty, with a log line
that says why."""

import getpass
import os
import random
import re
import socket
import subprocess
import time

import pytest
import redis
from conftest import drain, free_port, fridge_binary, tenants_toml
from pymemcache.client.base import Client

SERVING = re.compile(r"on 127\.0\.0\.1:(\d+)")


class Fridge:
    """A fridge with a restart file; `lines` holds what it logged before it served."""

    def __init__(self, restart_file, *args, memory_mb=64, workers=2, port=0):
        env = {**os.environ, "FRIDGE_USER": os.environ.get("FRIDGE_USER", getpass.getuser())}
        self.proc = subprocess.Popen(
            [fridge_binary(), "-p", str(port), "-m", str(memory_mb), "-t", str(workers),
             "-e", str(restart_file), *args],
            stderr=subprocess.PIPE, text=True, env=env,
        )
        self.lines = []
        while True:
            line = self.proc.stderr.readline()
            assert line, f"the server exited: {''.join(self.lines)}"
            match = SERVING.search(line)
            if match:
                break
            self.lines.append(line)
        self.port = int(match.group(1))
        drain(self.proc)

    def restore_line(self):
        found = [l for l in self.lines if "warm restart" in l]
        assert len(found) == 1, self.lines
        return found[0]

    def mc(self):
        return Client(("127.0.0.1", self.port), connect_timeout=5, timeout=5)

    def redis(self, db=0, **kw):
        return redis.Redis(host="127.0.0.1", port=self.port, db=db, socket_timeout=5, **kw)

    def term(self):
        """SIGTERM; returns the log lines of the shutdown."""
        self.proc.terminate()
        assert self.proc.wait(timeout=60) == 0, "graceful shutdown exits 0"
        lines = []
        # The last line is the shutdown summary (the reader thread may still be behind).
        while not lines or "shut down" not in lines[-1]:
            lines.append(self.proc.log_lines.get(timeout=10))
        return lines

    def kill(self):
        self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def servers():
    started = []

    def start(*args, **kw):
        server = Fridge(*args, **kw)
        started.append(server)
        return server

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.kill()


def fill(server, rng):
    """Stores items of every kind over both protocols; returns what to expect."""
    mc = server.mc()
    items = {}
    for i in range(300):
        key = f"mc:{i}"
        value = rng.randbytes(rng.choice([0, 1, 10, 100, 1000, 5000, 60_000]))
        flags = rng.randrange(1 << 32)
        expire = rng.choice([0, 0, 3600])
        assert mc.set(key, value, expire=expire, flags=flags, noreply=False)
        items[key] = (value, flags)
    cas = {key: mc.gets(key)[1] for key in items}
    r = server.redis()
    r.set("s:ttl", b"\x00binary\xff" * 10, ex=3600)
    r.set("s:plain", "plain")
    r.set("s:short", "gone by the restart", px=300)
    r.hset("h", mapping={"a": "1", "b": b"\x01\x02", "c": "x" * 500})
    r.hexpire("h", 3600, "a")
    r.rpush("l", "one", "two", b"\x00three", "four")
    r.sadd("st", "x", "y", "z")
    r.zadd("z", {"m1": 1.5, "m2": -3, "m3": 1e9})
    r1 = server.redis(db=1)
    r1.set("in:db1", "db one", ex=3600)
    r1.hset("h1", "f", "v")
    expected = {
        "items": items,
        "cas": cas,
        "ttl": {"s:ttl": r.ttl("s:ttl"), "in:db1": r1.ttl("in:db1")},
        "dbsize": (r.dbsize() - 1, r1.dbsize()),  # s:short goes
    }
    return expected


def gets(sock_file, key):
    """`gets key` over a raw connection: (flags, value, cas), or None."""
    sock_file.write(f"gets {key}\r\n".encode())
    sock_file.flush()
    header = sock_file.readline().split()
    if header == [b"END"]:
        return None
    assert header[:2] == [b"VALUE", key.encode()], header
    value = sock_file.read(int(header[3]) + 2)[:-2]
    assert sock_file.readline() == b"END\r\n"
    return int(header[2]), value, header[4]


def mc_stat(server, name):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        f = sock.makefile("rwb")
        f.write(b"stats\r\n")
        f.flush()
        for line in iter(f.readline, b"END\r\n"):
            _, key, value = line.decode().split()
            if key == name:
                return int(value)
    raise KeyError(name)


def check(server, expected):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        f = sock.makefile("rwb")
        for key, (value, flags) in expected["items"].items():
            assert gets(f, key) == (flags, value, expected["cas"][key]), key
    r = server.redis()
    assert r.get("s:ttl") == b"\x00binary\xff" * 10
    assert r.get("s:plain") == b"plain" and r.ttl("s:plain") == -1
    assert r.get("s:short") is None
    assert r.hgetall("h") == {b"a": b"1", b"b": b"\x01\x02", b"c": b"x" * 500}
    assert 0 < r.httl("h", "a", "b")[0] <= 3600 and r.httl("h", "a", "b")[1] == -1
    assert r.lrange("l", 0, -1) == [b"one", b"two", b"\x00three", b"four"]
    assert r.smembers("st") == {b"x", b"y", b"z"}
    assert r.zrange("z", 0, -1, withscores=True) == [(b"m2", -3.0), (b"m1", 1.5), (b"m3", 1e9)]
    assert r.type("h") == b"hash" and r.type("z") == b"zset" and r.type("st") == b"set"
    r1 = server.redis(db=1)
    assert r1.get("in:db1") == b"db one" and r1.hgetall("h1") == {b"f": b"v"}
    assert r.get("in:db1") is None
    for key, before in expected["ttl"].items():
        after = (r1 if key == "in:db1" else r).ttl(key)
        # The deadline is kept: the TTL only went down, by the downtime (well under an hour).
        assert 0 < after <= before and before - after < 600, (key, before, after)
    assert (r.dbsize(), r1.dbsize()) == expected["dbsize"]
    # The hash with a field deadline is back in the active field expiry's index.
    assert mc_stat(server, "hash_field_deadlines") == 1


def test_sigterm_then_start_keeps_every_item(servers, tmp_path):
    path = tmp_path / "cache.snapshot"
    rng = random.Random(7)
    first = servers(path)
    assert "no restart file" in first.restore_line()
    expected = fill(first, rng)
    time.sleep(0.4)  # s:short's deadline passes before the snapshot (it is not saved)
    log = "".join(first.term())
    assert re.search(r"warm restart: saved \d+ items", log), log
    assert path.exists() and not (tmp_path / "cache.snapshot.tmp").exists()

    second = servers(path)
    assert re.search(r"restored \d+ items", second.restore_line())
    assert not path.exists(), "the file is removed once loaded"
    check(second, expected)

    # The old CAS still works, and new CAS values are above every restored one.
    mc = second.mc()
    assert mc.cas("mc:1", b"swapped", expected["cas"]["mc:1"], noreply=False) is True
    assert mc.cas("mc:2", b"stale", int(expected["cas"]["mc:2"]) + 1, noreply=False) is False
    _, new_cas = mc.gets("mc:1")
    assert int(new_cas) > max(int(c) for c in expected["cas"].values())

    # A second restart keeps the changes made after the first.
    expected["items"]["mc:1"] = (b"swapped", 0)  # a cas without flags sets 0
    expected["cas"]["mc:1"] = new_cas
    second.term()
    third = servers(path)
    check(third, expected)


def test_sigkill_starts_empty(servers, tmp_path):
    path = tmp_path / "cache.snapshot"
    first = servers(path)
    first.mc().set("k", b"v", noreply=False)
    first.term()
    second = servers(path)
    assert second.mc().get("k") == b"v"
    second.mc().set("later", b"x", noreply=False)
    second.kill()  # no snapshot: the one loaded at start was removed then
    third = servers(path)
    assert "no restart file" in third.restore_line()
    r = third.redis()
    assert r.dbsize() == 0 and r.get("k") is None and r.get("later") is None
    assert r.set("k", "new") and r.get("k") == b"new"


def test_a_damaged_file_starts_empty(servers, tmp_path):
    path = tmp_path / "cache.snapshot"
    first = servers(path)
    mc = first.mc()
    for i in range(2000):
        mc.set(f"k{i}", b"v" * 1000, noreply=False)
    first.term()
    data = bytearray(path.read_bytes())
    data[len(data) * 2 // 3] ^= 0x01
    path.write_bytes(bytes(data))
    second = servers(path)
    line = second.restore_line()
    assert "damaged" in line and "starts empty" in line, line
    assert second.redis().dbsize() == 0
    assert not path.exists()


def test_other_settings_start_empty(servers, tmp_path):
    path = tmp_path / "cache.snapshot"
    first = servers(path, "-I", "1m")
    first.mc().set("k", b"v", noreply=False)
    first.term()
    second = servers(path, "-I", "2m")
    line = second.restore_line()
    assert "other settings" in line and "max_item_size" in line, line
    assert second.mc().get("k") is None and second.redis().dbsize() == 0


def tenant_rows(server):
    """`stats tenants` as the admin (`default`) sees it: {"name:field": value}."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        f = sock.makefile("rwb")
        f.write(b"set auth 0 0 12\r\ndefault root\r\nstats tenants\r\n")
        f.flush()
        assert f.readline() == b"STORED\r\n"
        rows = {}
        for line in iter(f.readline, b"END\r\n"):
            _, key, value = line.decode().split()
            rows[key] = value
        return rows


def test_tenants_keep_their_items(servers, tmp_path):
    path = tmp_path / "cache.snapshot"
    config = tmp_path / "fridge.toml"
    config.write_text(tenants_toml({"default": ("root", []), "acme": ("apw", [])}))
    first = servers(path, "--config", str(config))
    acme = first.redis(username="acme", password="apw")
    acme.set("mine", "acme's", ex=3600)
    acme.rpush("list", "a", "b")
    root = first.redis(password="root")
    root.set("mine", "root's")
    before = tenant_rows(first)
    first.term()

    second = servers(path, "--config", str(config))
    acme = second.redis(username="acme", password="apw")
    root = second.redis(password="root")
    assert acme.get("mine") == b"acme's" and 0 < acme.ttl("mine") <= 3600
    assert acme.lrange("list", 0, -1) == [b"a", b"b"]
    assert acme.dbsize() == 2 and root.dbsize() == 1 and root.get("mine") == b"root's"
    # Each tenant's accounts are rebuilt by the load: the same items and bytes.
    after = tenant_rows(second)
    for name in ("acme", "default"):
        for field in ("items", "bytes"):
            assert after[f"{name}:{field}"] == before[f"{name}:{field}"], (name, field)
    assert int(after["acme:items"]) == 2


def test_less_memory_loads_what_fits(servers, tmp_path):
    path = tmp_path / "cache.snapshot"
    first = servers(path, memory_mb=96)
    mc = first.mc()
    value = b"y" * 4000
    for i in range(15_000):  # about 60 MB
        mc.set(f"k{i}", value, noreply=True)
    assert mc.get("k0") == value
    first.term()
    second = servers(path, memory_mb=32, workers=1)
    line = second.restore_line()
    dropped = int(re.search(r"(\d+) dropped for lack of memory", line).group(1))
    restored = int(re.search(r"restored (\d+) items", line).group(1))
    assert dropped > 0 and restored > 0, line
    mc = second.mc()
    found = mc.get_many([f"k{i}" for i in range(15_000)])
    assert all(v == value for v in found.values())
    assert 0 < len(found) < 15_000


def shutdown(server, *args):
    """Redis's SHUTDOWN with `args`; waits for the exit (status 0)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        words = ["SHUTDOWN", *args]
        sock.sendall(f"*{len(words)}\r\n".encode()
                     + b"".join(f"${len(w)}\r\n{w}\r\n".encode() for w in words))
        assert sock.recv(100) == b"", "the connection closes without a reply"
    assert server.proc.wait(timeout=60) == 0


def test_redis_shutdown_save_and_nosave(servers, tmp_path):
    path = tmp_path / "cache.snapshot"
    first = servers(path)
    first.redis().set("k", "v")
    shutdown(first, "SAVE")
    assert path.exists()
    second = servers(path)
    assert second.redis().get("k") == b"v"
    shutdown(second, "NOSAVE")
    assert not path.exists()
    third = servers(path)
    assert third.redis().dbsize() == 0
    # memcached's `shutdown` (with -A) writes it as SIGTERM does.
    third.redis().set("k", "again")
    third.term()
    fourth = servers(path, "-A")
    with socket.create_connection(("127.0.0.1", fourth.port), timeout=5) as sock:
        sock.sendall(b"shutdown\r\n")
        sock.recv(100)
    assert fourth.proc.wait(timeout=60) == 0
    fifth = servers(path)
    assert fifth.redis().get("k") == b"again"


def test_cluster_mode_keeps_only_the_slots_still_served(servers, tmp_path):
    from test_redis_cluster import keyslot, node_id

    path = tmp_path / "cache.snapshot"
    port, other = free_port(), free_port()
    slots = tmp_path / "cluster.conf"
    slots.write_text(f"node {node_id('a')} 127.0.0.1:{port} 0-16383\n")
    first = servers(path, "--cluster-config", str(slots), port=port)
    keys = [f"key:{i}" for i in range(100)]
    r = first.redis()
    for key in keys:
        r.set(key, key)
    first.term()
    # Now this node serves the lower half of the slots only.
    slots.write_text(f"node {node_id('a')} 127.0.0.1:{port} 0-8191\n"
                     f"node {node_id('b')} 127.0.0.1:{other} 8192-16383\n")
    second = servers(path, "--cluster-config", str(slots), port=port)
    kept = [k for k in keys if keyslot(k) < 8192]
    assert 0 < len(kept) < len(keys)
    line = second.restore_line()
    assert f"restored {len(kept)} items" in line, line
    assert f"{len(keys) - len(kept)} of tenants, databases or cluster slots" in line, line
    r = second.redis()
    assert r.dbsize() == len(kept)
    assert all(r.get(k) == k.encode() for k in kept)
