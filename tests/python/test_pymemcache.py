"""memcached protocol through pymemcache: every storage, retrieval and admin command."""

import time

import pytest
from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheClientError, MemcacheIllegalInputError


@pytest.fixture
def mc(fridge):
    client = Client(fridge, connect_timeout=5, timeout=5)
    client.flush_all()
    yield client
    client.close()


def test_set_get_with_flags(mc):
    assert mc.set("a", b"hello", flags=7) is True
    assert mc.get("a") == b"hello"
    assert mc.get("missing") is None
    assert mc.get("missing", default=b"d") == b"d"


def test_get_many_and_set_many(mc):
    assert mc.set_many({"k1": b"1", "k2": b"2", "k3": b"3"}) == []
    assert mc.get_many(["k1", "k2", "k3", "nope"]) == {"k1": b"1", "k2": b"2", "k3": b"3"}
    mc.delete_many(["k1", "k2"])
    assert mc.get_many(["k1", "k2", "k3"]) == {"k3": b"3"}


def test_add_replace_append_prepend(mc):
    assert mc.add("a", b"1", noreply=False) is True
    assert mc.add("a", b"2", noreply=False) is False
    assert mc.replace("a", b"3", noreply=False) is True
    assert mc.replace("b", b"3", noreply=False) is False
    assert mc.append("a", b"4", noreply=False) is True
    assert mc.prepend("a", b"0", noreply=False) is True
    assert mc.get("a") == b"034"
    assert mc.append("nope", b"x", noreply=False) is False


def test_gets_and_cas(mc):
    mc.set("c", b"v1")
    value, cas = mc.gets("c")
    assert value == b"v1"
    assert mc.cas("c", b"v2", cas, noreply=False) is True
    assert mc.cas("c", b"v3", cas, noreply=False) is False
    assert mc.cas("nope", b"v", 1, noreply=False) is None
    assert mc.get("c") == b"v2"
    many = mc.gets_many(["c", "nope"])
    assert list(many) == ["c"] and many["c"][0] == b"v2"


def test_incr_decr(mc):
    mc.set("n", b"10")
    assert mc.incr("n", 5) == 15
    assert mc.decr("n", 20) == 0
    assert mc.incr("missing", 1) is None
    mc.set("s", b"text")
    with pytest.raises(MemcacheClientError):
        mc.incr("s", 1)


def test_delete_touch_and_expiry(mc):
    mc.set("d", b"x")
    assert mc.delete("d", noreply=False) is True
    assert mc.delete("d", noreply=False) is False
    mc.set("t", b"x", expire=100)
    assert mc.touch("t", 1, noreply=False) is True
    assert mc.touch("nope", 1, noreply=False) is False
    mc.set("gone", b"x", expire=1)
    assert mc.touch("t", 100, noreply=False) is True
    time.sleep(1.1)
    assert mc.get("gone") is None
    assert mc.get("t") == b"x"


def test_noreply_default_and_pipelining(mc):
    for i in range(200):
        mc.set(f"p{i}", str(i).encode())  # pymemcache's default is noreply
    assert mc.get_many([f"p{i}" for i in range(200)]) == {f"p{i}": str(i).encode() for i in range(200)}


def test_large_value(mc):
    value = bytes(range(256)) * 4000  # about 1 MB
    assert mc.set("big", value, noreply=False) is True
    assert mc.get("big") == value


def test_too_large_value_is_refused(mc):
    from pymemcache.exceptions import MemcacheServerError

    with pytest.raises(MemcacheServerError):
        mc.set("huge", b"x" * (2 << 20), noreply=False)
    assert mc.get("a") is None  # the connection is still usable


def test_bad_keys_are_refused_by_client(mc):
    with pytest.raises(MemcacheIllegalInputError):
        mc.set("k" * 300, b"x")


def test_flush_version_stats(mc):
    mc.set("f", b"x")
    mc.flush_all(noreply=False)
    assert mc.get("f") is None
    assert mc.version().startswith(b"1.6")
    stats = mc.stats()
    for field in (b"curr_items", b"total_items", b"get_hits", b"get_misses", b"evictions",
                  b"bytes", b"limit_maxbytes", b"curr_connections", b"cmd_get", b"cmd_set"):
        assert field in stats, field
    assert mc.stats("settings")[b"maxbytes"] == 64 << 20
    mc.set("i", b"x")
    assert b"items:1:number" in mc.stats("items")
    assert mc.quit() is None


def test_unicode_values_with_serde(fridge):
    from pymemcache import serde

    client = Client(fridge, serde=serde.pickle_serde)
    client.set("obj", {"a": [1, 2, 3]})
    assert client.get("obj") == {"a": [1, 2, 3]}
    client.close()


def test_cas_survives_a_touch(mc):
    """memcached keeps an item's CAS when only its TTL changes: gets, touch, cas stores."""
    assert mc.set("t", b"v1", noreply=False) is True
    assert mc.set("u", b"other", noreply=False) is True
    value, cas = mc.gets("t")
    assert value == b"v1"
    assert mc.gets("u")[1] != cas, "every item has its own CAS"
    assert mc.touch("t", 100, noreply=False) is True
    assert mc.set("u", b"changed", noreply=False) is True
    assert mc.gets("t") == (b"v1", cas)
    assert mc.cas("t", b"v2", cas, noreply=False) is True
    assert mc.cas("t", b"v3", cas, noreply=False) is False
    assert mc.get("t") == b"v2"
