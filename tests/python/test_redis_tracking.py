"""Client-side caching (CLIENT TRACKING): invalidations over RESP3 and, redirected, over
RESP2 pub/sub, side by side with redis-server 7.0.15 where the bytes must agree."""

import socket
import time

import pytest
import redis

from conftest import launch, stop
from test_redis_pubsub import encode, read_frame, redis_server  # noqa: F401 (fixture)


class Raw:
    """A raw RESP connection."""

    def __init__(self, addr, resp3=False):
        self.s = socket.create_connection(addr, timeout=5)
        self.f = self.s.makefile("rb")
        if resp3:
            self.call("HELLO", "3")

    def send(self, *args):
        self.s.sendall(encode(*args))

    def call(self, *args):
        self.send(*args)
        return read_frame(self.f)

    def frame(self):
        return read_frame(self.f)

    def quiet(self, wait=0.2):
        """Whether nothing arrives within `wait` seconds."""
        self.s.settimeout(wait)
        try:
            return self.s.recv(1, socket.MSG_PEEK) == b"" and False
        except TimeoutError:
            return True
        finally:
            self.s.settimeout(5)

    def close(self):
        self.f.close()  # the file holds the socket open too
        self.s.close()


def invalidate(*keys):
    body = b"*%d\r\n" % len(keys) + b"".join(b"$%d\r\n%s\r\n" % (len(k), k) for k in keys)
    return b">2\r\n$10\r\ninvalidate\r\n" + body


def scenario_default_mode(addr):
    a, w = Raw(addr, resp3=True), Raw(addr)
    out = [a.call("CLIENT", "TRACKING", "ON"), a.call("GET", "tr:k")]
    out.append(w.call("SET", "tr:k", "1"))
    out.append(a.frame())  # the invalidation, from another connection (another worker)
    out.append(w.call("SET", "tr:k", "2"))
    out.append(a.quiet())  # the key was forgotten: not read again, no second invalidation
    out += [a.call("MGET", "tr:k", "tr:j"), w.call("DEL", "tr:k", "tr:j")]
    out.append(a.frame())
    out += [a.call("CLIENT", "GETREDIR"), a.call("CLIENT", "TRACKINGINFO")]
    out += [a.call("CLIENT", "TRACKING", "OFF"), a.call("CLIENT", "GETREDIR")]
    a.close()
    w.close()
    return out


def scenario_redirect_to_resp2_subscriber(addr):
    a, b, w = Raw(addr), Raw(addr), Raw(addr)
    bid = b.call("CLIENT", "ID")[1:-2].decode()
    out = [b.call("SUBSCRIBE", "__redis__:invalidate")]
    out.append(a.call("CLIENT", "TRACKING", "ON", "REDIRECT", bid))
    out += [a.call("GET", "tr:r"), w.call("SET", "tr:r", "1")]
    out.append(b.frame())
    out += [a.call("GET", "tr:r"), w.call("FLUSHALL")]
    out.append(b.frame())  # a flush: a null key list
    out.append(a.call("CLIENT", "TRACKINGINFO").replace(b":" + bid.encode() + b"\r\n", b":<id>\r\n"))
    out.append(a.call("CLIENT", "GETREDIR").replace(b":" + bid.encode() + b"\r\n", b":<id>\r\n"))
    b.close()
    time.sleep(0.2)
    out.append(a.call("CLIENT", "TRACKINGINFO").replace(b":" + bid.encode() + b"\r\n", b":<id>\r\n"))
    a.close()
    w.close()
    return out


def scenario_bcast_optin_noloop(addr):
    c, w = Raw(addr, resp3=True), Raw(addr)
    out = [c.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p:", "NOLOOP")]
    out += [c.call("SET", "p:mine", "1"), w.call("SET", "q:1", "1"), w.call("SET", "p:1", "1")]
    out.append(c.frame())
    out.append(c.call("CLIENT", "TRACKINGINFO"))
    out += [c.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p")]
    out += [c.call("CLIENT", "TRACKING", "OFF")]
    out += [c.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "ab")]
    d = Raw(addr, resp3=True)
    out += [d.call("CLIENT", "TRACKING", "ON", "OPTIN"), d.call("GET", "tr:o1")]
    out += [d.call("CLIENT", "CACHING", "YES"), d.call("GET", "tr:o2"), d.call("GET", "tr:o3")]
    out += [w.call("SET", "tr:o1", "1"), w.call("SET", "tr:o3", "1"), w.call("SET", "tr:o2", "1")]
    out.append(d.frame())
    out.append(d.quiet())
    c.close()
    d.close()
    w.close()
    return out


def scenario_own_writes_in_a_pipeline(addr):
    """A connection's invalidations of its own writes come right after each write's reply
    (Redis's pending keys), also in a pipeline; a flush sends a null list."""
    a = Raw(addr, resp3=True)
    a.call("CLIENT", "TRACKING", "ON")
    pipeline = [("GET", "tr:p1"), ("GET", "tr:p2"), ("SET", "tr:p1", "1"), ("SET", "tr:p2", "2")]
    pipeline += [("GET", "tr:p1"), ("FLUSHDB",), ("PING",)]
    a.s.sendall(b"".join(encode(*req) for req in pipeline))
    out = [a.frame() for _ in range(10)]
    a.close()
    return out


def scenario_broken_redirect_in_resp3(addr):
    a, b, w = Raw(addr, resp3=True), Raw(addr), Raw(addr)
    bid = b.call("CLIENT", "ID")[1:-2]
    out = [a.call("CLIENT", "TRACKING", "ON", "REDIRECT", bid.decode()), a.call("GET", "tr:x")]
    b.close()
    time.sleep(0.2)
    out.append(a.call("CLIENT", "TRACKINGINFO").replace(b":" + bid + b"\r\n", b":<id>\r\n"))  # not known yet
    out.append(w.call("SET", "tr:x", "1"))
    out.append(a.frame().replace(b":" + bid + b"\r\n", b":<id>\r\n"))  # found out at the invalidation
    out.append(a.call("CLIENT", "TRACKINGINFO").replace(b":" + bid + b"\r\n", b":<id>\r\n"))
    a.close()
    w.close()
    return out


def scenario_errors(addr):
    a = Raw(addr)
    return [
        a.call("CLIENT", "TRACKING", "ON", "REDIRECT", "999999"),
        a.call("CLIENT", "TRACKING", "ON", "PREFIX", "a"),
        a.call("CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"),
        a.call("CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"),
        a.call("CLIENT", "TRACKING", "MAYBE"),
        a.call("CLIENT", "TRACKING", "ON", "FOO"),
        a.call("CLIENT", "TRACKING"),
        a.call("CLIENT", "CACHING", "YES"),
        a.call("CLIENT", "TRACKING", "ON", "OPTIN"),
        a.call("CLIENT", "CACHING", "NO"),
        a.call("CLIENT", "CACHING", "MAYBE"),
        a.call("CLIENT", "TRACKING", "ON", "OPTOUT"),
        a.call("CLIENT", "TRACKING", "ON", "BCAST"),
        a.call("CLIENT", "TRACKINGINFO"),
    ]


@pytest.mark.parametrize(
    "scenario",
    [scenario_default_mode, scenario_redirect_to_resp2_subscriber, scenario_bcast_optin_noloop,
     scenario_own_writes_in_a_pipeline, scenario_broken_redirect_in_resp3, scenario_errors],
)
def test_tracking_is_redis_bytes(fridge, redis_server, scenario):  # noqa: F811
    ours = scenario(fridge)
    theirs = scenario(redis_server)
    assert ours == theirs


def test_expiry_and_eviction_invalidate():
    proc, port = launch("--max-item-size", "64KiB", "--segment-size", "1MiB")
    try:
        a, w = Raw(("127.0.0.1", port), resp3=True), Raw(("127.0.0.1", port))
        assert a.call("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
        # Long enough that a loaded machine still reads it before it expires.
        w.call("SET", "tr:ttl", "1", "PX", "500")
        w.call("SET", "tr:old", "x" * 60000)
        assert a.call("GET", "tr:ttl") == b"$1\r\n1\r\n"
        assert a.call("GET", "tr:old").startswith(b"$60000")
        # Expiry: the sweep or a lookup reaps it, and the reader is told.
        time.sleep(0.6)
        assert w.call("GET", "tr:ttl") == b"$-1\r\n"
        assert a.frame() == invalidate(b"tr:ttl")
        # Eviction: 150 MB into 64 MiB evicts it. Its one read took it out of the small queue
        # on probation, which values never read would only pass through (S3-FIFO's scan
        # resistance), so each of these is read once too and they press the main queue.
        for batch in range(25):
            for i in range(batch * 100, batch * 100 + 100):
                w.send("SET", f"tr:fill:{i}", "v" * 60000)
                w.send("GET", f"tr:fill:{i}")
            for _ in range(200):
                w.frame()
        assert a.frame() == invalidate(b"tr:old")
        a.close()
        w.close()
    finally:
        stop(proc)


def test_the_tracking_table_is_bounded(fridge):
    admin = redis.Redis(host=fridge[0], port=fridge[1])
    assert admin.config_get("tracking-table-max-keys") == {"tracking-table-max-keys": "1000000"}
    admin.config_set("tracking-table-max-keys", 3)
    try:
        a = Raw(fridge, resp3=True)
        a.call("CLIENT", "TRACKING", "ON")
        for i in range(5):
            a.send("GET", f"tr:b{i}")
        frames = [a.frame() for _ in range(7)]
        # Five misses, and two keys dropped from the full table with their reader told.
        assert frames.count(b"_\r\n") == 5
        pushes = [f for f in frames if f != b"_\r\n"]
        assert len(pushes) == 2
        assert all(f.startswith(b">2\r\n$10\r\ninvalidate\r\n*1\r\n") for f in pushes)
        assert admin.info("stats")["tracking_total_keys"] == 3
        a.close()
    finally:
        admin.config_set("tracking-table-max-keys", 1000000)


def test_redis_py_client_side_cache(fridge):
    """redis-py's own RESP3 client-side cache, if this redis-py has one: a cached GET is
    answered locally until another client's write invalidates it."""
    try:
        from redis.cache import CacheConfig
    except ImportError:
        pytest.skip("this redis-py has no client-side cache")
    r = redis.Redis(host=fridge[0], port=fridge[1], protocol=3, cache_config=CacheConfig())
    w = redis.Redis(host=fridge[0], port=fridge[1])
    w.set("tr:py", "1")
    try:
        assert r.get("tr:py") == b"1"
    except redis.ConnectionError as e:
        # redis-py's cache refuses servers older than 7.4; fridge reports 7.0.
        pytest.skip(f"redis-py refuses its cache here: {e}")
    assert r.get("tr:py") == b"1"  # from the local cache
    w.set("tr:py", "2")
    deadline = time.time() + 5
    while r.get("tr:py") != b"2":
        assert time.time() < deadline, "the invalidation never arrived"
        time.sleep(0.01)
    r.close()
    w.close()
