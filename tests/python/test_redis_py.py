"""Redis protocol through redis-py: every supported command and option, RESP2 and RESP3."""

import time

import pytest
import redis


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(fridge, request):
    client = redis.Redis(host=fridge[0], port=fridge[1], protocol=request.param, socket_timeout=5)
    client.flushdb()
    yield client
    client.close()


def test_set_get_and_options(r):
    assert r.set("k", "v") is True
    assert r.get("k") == b"v"
    assert r.get("nope") is None
    assert r.set("k", "w", nx=True) is None
    assert r.set("k", "w", xx=True, get=True) == b"v"
    assert r.set("k", "x", ex=100) is True
    assert 99 <= r.ttl("k") <= 100
    assert r.set("k", "y", keepttl=True) is True
    assert r.ttl("k") > 0
    assert r.set("k", "z", px=100000) is True
    assert r.pttl("k") > 90000
    assert r.set("k", "z", exat=int(time.time()) + 100) is True
    assert r.set("k", "z", pxat=int(time.time() * 1000) + 100000) is True
    assert r.ttl("k") > 90
    with pytest.raises(redis.ResponseError, match="invalid expire time"):
        r.set("k", "v", ex=0)


def test_setnx_setex_psetex_getset(r):
    assert r.setnx("a", 1) is True
    assert r.setnx("a", 2) is False
    assert r.setex("b", 100, "v") is True
    assert r.psetex("c", 100000, "v") is True
    assert r.ttl("b") > 0 and r.pttl("c") > 0
    assert r.getset("a", 5) == b"1"
    assert r.get("a") == b"5"


def test_mget_mset_msetnx(r):
    assert r.mset({"a": 1, "b": 2}) is True
    assert r.mget("a", "b", "nope") == [b"1", b"2", None]
    assert r.msetnx({"a": 3, "z": 4}) is False
    assert r.msetnx({"y": 3, "z": 4}) is True


def test_getdel_getex(r):
    r.set("a", "v")
    assert r.getdel("a") == b"v"
    assert r.getdel("a") is None
    r.set("b", "v")
    assert r.getex("b", ex=100) == b"v"
    assert r.ttl("b") > 0
    assert r.getex("b", persist=True) == b"v"
    assert r.ttl("b") == -1
    assert r.getex("b", px=100000) == b"v"
    assert r.getex("nope") is None


def test_append_strlen(r):
    assert r.append("s", "hello") == 5
    assert r.append("s", " world") == 11
    assert r.strlen("s") == 11
    assert r.strlen("nope") == 0


def test_counters(r):
    assert r.incr("n") == 1
    assert r.incrby("n", 10) == 11
    assert r.decr("n") == 10
    assert r.decrby("n", 5) == 5
    assert r.incrbyfloat("f", 1.5) == 1.5
    assert r.incrbyfloat("f", 0.25) == 1.75
    r.set("s", "text")
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.incr("s")
    with pytest.raises(redis.ResponseError, match="not a valid float"):
        r.incrbyfloat("s", 1)


def test_keyspace(r):
    r.mset({"user:1": "a", "user:2": "b", "other": "c"})
    assert r.exists("user:1", "user:2", "nope") == 2
    assert r.type("user:1") == b"string"
    assert r.type("nope") == b"none"
    assert sorted(r.keys("user:*")) == [b"user:1", b"user:2"]
    assert sorted(r.scan_iter(match="user:*", count=1)) == [b"user:1", b"user:2"]
    assert r.dbsize() == 3
    assert r.touch("user:1", "nope") == 1
    assert r.delete("user:1", "nope") == 1
    assert r.unlink("user:2") == 1
    assert r.flushall() is True
    assert r.dbsize() == 0


def test_expiry(r):
    r.set("k", "v")
    assert r.ttl("k") == -1
    assert r.ttl("nope") == -2
    assert r.expire("k", 100) is True
    assert r.expire("k", 100, nx=True) is False
    assert r.expire("k", 200, xx=True) is True
    assert r.expire("k", 50, gt=True) is False
    assert r.expire("k", 50, lt=True) is True
    assert r.pexpire("k", 100000) is True
    assert r.persist("k") is True
    assert r.persist("k") is False
    assert r.expireat("k", int(time.time()) + 100) is True
    assert r.pexpireat("k", int(time.time() * 1000) + 100000) is True
    r.set("gone", "v", px=100)
    time.sleep(0.25)
    assert r.get("gone") is None
    assert r.expireat("k", 1) is True
    assert r.exists("k") == 0


def test_connection_commands(r):
    assert r.ping() is True
    assert r.echo("hi") == b"hi"
    assert r.select(0) is True
    with pytest.raises(redis.ResponseError):
        r.execute_command("SELECT", 16)
    assert r.client_setname("me") is True
    assert r.client_getname() in (b"me", "me")
    assert isinstance(r.client_id(), int)
    assert any(c["name"] == "me" for c in r.client_list())
    assert r.client_info()["name"] == "me"
    with pytest.raises(redis.ResponseError, match="unknown command"):
        r.execute_command("NOSUCHCOMMAND", "x")
    assert r.ping() is True


def test_client_kill(fridge):
    victim = redis.Redis(host=fridge[0], port=fridge[1])
    victim.client_setname("victim")
    killer = redis.Redis(host=fridge[0], port=fridge[1])
    vid = victim.client_id()
    assert killer.client_kill_filter(_id=vid) == 1
    time.sleep(0.5)
    assert not any(c["name"] == "victim" for c in killer.client_list())


def test_server_commands(r):
    r.set("a", 1)
    info = r.info()
    for field in ("redis_version", "arch_bits", "cluster_enabled", "used_memory", "maxmemory",
                  "keyspace_hits", "keyspace_misses", "evicted_keys", "expired_keys",
                  "connected_clients"):
        assert field in info, field
    assert info["db0"]["keys"] == 1
    assert "used_memory" in r.info("memory")
    assert r.config_get("maxmemory")["maxmemory"] == str(64 << 20)
    assert r.config_set("save", "") is True
    assert r.command_count() > 40
    assert r.dbsize() == 1


def test_pipeline(r):
    pipe = r.pipeline(transaction=False)
    for i in range(500):
        pipe.set(f"k{i}", i)
        pipe.get(f"k{i}")
    results = pipe.execute()
    assert results[1::2] == [str(i).encode() for i in range(500)]


def test_large_value(r):
    value = bytes(range(256)) * 4000
    assert r.set("big", value) is True
    assert r.get("big") == value
    with pytest.raises(redis.ResponseError):
        r.set("huge", b"x" * ((1 << 20) + 10))
    assert r.ping() is True


def test_hello(fridge):
    client = redis.Redis(host=fridge[0], port=fridge[1], protocol=3)
    hello = client.execute_command("HELLO", 3)
    hello = {k.decode() if isinstance(k, bytes) else k: v for k, v in hello.items()}
    assert hello["proto"] == 3
    assert hello["server"] in (b"redis", "redis")
