"""redis-py over RESP2 and RESP3 for issue 15's string and key commands (ranges, LCS, bits,
BITFIELD, RENAME, COPY, RANDOMKEY, OBJECT, MEMORY, DUMP/RESTORE, WAIT, SORT), and the
Redis tools that send inline commands to the shared port (redis-cli --pipe, redis-benchmark)."""

import shutil
import subprocess
import threading
import time

import pytest
import redis


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(fridge, request):
    client = redis.Redis(host=fridge[0], port=fridge[1], protocol=request.param, socket_timeout=5)
    client.flushdb()
    yield client
    client.close()


def test_ranges_and_lcs(r):
    r.set("k", "Hello, World")
    assert r.getrange("k", 0, 4) == b"Hello"
    assert r.substr("k", -5, -1) == b"World"
    assert r.setrange("k", 7, "Redis") == 12
    assert r.get("k") == b"Hello, Redis"
    assert r.setrange("pad", 2, "x") == 3 and r.get("pad") == b"\x00\x00x"
    r.mset({"a": "ohmytext", "b": "mynewtext"})
    assert r.lcs("a", "b") == b"mytext"
    assert r.lcs("a", "b", len=True) == 6
    idx = r.lcs("a", "b", idx=True, minmatchlen=4, withmatchlen=True)
    if isinstance(idx, list):  # RESP2: a flat list of pairs
        idx = dict(zip(idx[::2], idx[1::2]))
    matches = idx.get(b"matches", idx.get("matches"))
    assert [list(m) for m in matches] == [[[4, 7], [5, 8], 4]]
    with pytest.raises(redis.ResponseError, match="LCS inputs too large"):
        r.set("big1", "a" * 5000)
        r.set("big2", "b" * 5000)
        r.lcs("big1", "big2")


def test_bits(r):
    assert r.setbit("b", 7, 1) == 0
    assert r.getbit("b", 7) == 1
    assert r.get("b") == b"\x01"
    r.set("s", "foobar")
    assert r.bitcount("s") == 26
    assert r.bitcount("s", 1, 1) == 6
    assert r.bitcount("s", 5, 30, "BIT") == 17
    assert r.bitpos("s", 1) == 1
    assert r.bitpos("s", 0, 2, -1) == 16
    r.set("x", "abc")
    assert r.bitop("XOR", "dest", "s", "x") == 6
    assert r.bitop("NOT", "dest", "x") == 3
    assert r.get("dest") == bytes(~c & 0xFF for c in b"abc")
    bf = r.bitfield("f")
    bf.set("i8", 0, 100).incrby("i8", 0, 50).get("u4", 0)
    assert bf.execute() == [0, -106, 9]
    bf = r.bitfield("f", default_overflow="SAT")
    assert bf.incrby("u8", "#1", 300).execute() == [255]
    bf = r.bitfield("f", default_overflow="FAIL")
    assert bf.incrby("u8", "#1", 1).execute() == [None]
    assert r.bitfield_ro("f", "u8", 8, items=[("u8", 0)]) == [255, 150]
    r.set("t", "v", ex=100)
    r.setbit("t", 20, 1)
    assert r.ttl("t") > 0, "a bit write keeps the TTL"


def test_rename_copy_randomkey_expiretime(r):
    r.set("a", "1", ex=1000)
    assert r.rename("a", "b") is True
    assert r.get("a") is None and r.get("b") == b"1"
    assert 990 <= r.ttl("b") <= 1000, "RENAME keeps the TTL"
    assert abs(r.expiretime("b") - (time.time() + 1000)) < 5
    assert abs(r.pexpiretime("b") - (time.time() + 1000) * 1000) < 5000
    assert r.expiretime("nope") == -2
    r.set("c", "2")
    assert r.expiretime("c") == -1
    assert r.renamenx("b", "c") is False
    with pytest.raises(redis.ResponseError, match="no such key"):
        r.rename("nope", "x")
    assert r.copy("b", "d") is True
    assert r.copy("b", "d") is False
    assert r.copy("c", "d", replace=True) is True and r.get("d") == b"2"
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        r.copy("c", "e", destination_db=16)
    assert r.randomkey() in {b"b", b"c", b"d"}
    r.flushdb()
    assert r.randomkey() is None


def test_object_memory(r):
    r.set("i", 123)
    r.set("s", "hello")
    r.set("raw", "x" * 100)
    assert r.object("encoding", "i") == b"int"
    assert r.object("encoding", "s") == b"embstr"
    assert r.object("encoding", "raw") == b"raw"
    assert r.object("refcount", "s") == 1
    assert r.object("idletime", "s") >= 0
    assert r.object("freq", "s") >= 0
    assert r.object("encoding", "nope") is None
    usage = r.memory_usage("raw")
    # The item's bytes in its segment (21-byte header, the key, the value) and its index slot.
    assert 100 + 3 + 21 + 8 <= usage <= 100 + 3 + 21 + 8 + 8
    r.expire("raw", 100)
    assert r.memory_usage("raw") == usage + 4, "an expiry adds its 4-byte code"
    assert r.memory_usage("nope") is None
    stats = r.memory_stats()
    assert stats["keys.count"] == 3 and stats["dataset.bytes"] > 100
    assert b"Sam" in r.execute_command("MEMORY", "DOCTOR")
    assert r.execute_command("OBJECT", "HELP")[0].startswith(b"OBJECT <subcommand>")


def test_dump_restore_wait_sort(r):
    r.set("k", "hello", ex=100)
    payload = r.dump("k")
    assert payload == b"\x00\x05hello\x0a\x00\x63\x72\xdf\x76\x65\x34\x20\x0a"
    assert r.restore("k2", 0, payload) == b"OK"
    assert r.get("k2") == b"hello" and r.ttl("k2") == -1
    with pytest.raises(redis.ResponseError, match="BUSYKEY"):
        r.restore("k2", 0, payload)
    assert r.restore("k2", 5000, payload, replace=True, idletime=3) == b"OK"
    assert 0 < r.pttl("k2") <= 5000
    with pytest.raises(redis.ResponseError, match="checksum"):
        r.restore("k3", 0, payload[:-1] + b"\x00")
    assert r.wait(0, 0) == 0
    assert r.wait(1, 100) == 0, "no replicas: 0 at once"
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.sort("k")
    assert r.sort("nope") == []
    assert r.sort_ro("nope", alpha=True) == []
    assert r.type("k") == b"string"


def test_rename_under_concurrent_readers(fridge):
    """RENAMEs while readers look at the source, then at the destination: a reader never
    finds the value under neither name (the destination is published before the source is
    deleted; docs/protocol.md). The reads are two commands, source first: once the source is
    gone, the destination is there."""
    host, port = fridge
    w = redis.Redis(host=host, port=port)
    current = [-1]
    stop = threading.Event()
    missing = []

    def reader():
        c = redis.Redis(host=host, port=port)
        while not stop.is_set():
            i = current[0]
            if i < 0:
                continue
            src = c.get(f"src{i}")
            dst = c.get(f"dst{i}")
            if src is None and dst is None:
                missing.append(i)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(1000):
        w.set(f"src{i}", "v", ex=1000)
        current[0] = i
        assert w.rename(f"src{i}", f"dst{i}") is True
    stop.set()
    for t in threads:
        t.join()
    assert not missing
    assert w.exists("src999") == 0 and w.get("dst999") == b"v" and w.ttl("dst999") > 0


@pytest.mark.skipif(not shutil.which("redis-cli"), reason="redis-cli is not installed")
def test_redis_cli_pipe_inline_on_the_main_port(fridge):
    host, port = fridge
    data = "".join(f"SET pipe:{i} {i}\r\n" for i in range(100)) + "PING\r\nINCR pipe:1\r\n"
    out = subprocess.run(["redis-cli", "-h", host, "-p", str(port), "--pipe"], input=data.encode(),
                         capture_output=True, timeout=30)
    assert b"errors: 0, replies: 102" in out.stdout, out.stdout
    assert redis.Redis(host=host, port=port).get("pipe:1") == b"2"


@pytest.mark.skipif(not shutil.which("redis-benchmark"), reason="redis-benchmark is not installed")
def test_redis_benchmark_inline_on_the_main_port(fridge):
    host, port = fridge
    out = subprocess.run(["redis-benchmark", "-h", host, "-p", str(port), "-t", "ping_inline,set,get",
                          "-n", "2000", "-q"], capture_output=True, timeout=60)
    text = out.stdout.decode()
    for test in ["PING_INLINE", "SET", "GET"]:
        assert f"{test}: " in text and "requests per second" in text, text
