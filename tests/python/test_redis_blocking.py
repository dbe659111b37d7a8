"""Blocking pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP), side by
side with Debian's redis-server 7.0.15: the same replies when there is something to pop, at
a timeout, inside MULTI and for bad arguments; and a waiting client served by a push from
another connection (on another worker), or given up at its timeout without holding its
worker. Skipped without redis-server."""

import threading
import time

import redis

from test_redis_parity import redis_server, same  # noqa: F401


def test_replies_answer_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["RPUSH", "l", "a", "b"], ["BLPOP", "nope", "l", 1], ["BRPOP", "l", "nope", 1],
        ["BLPOP", "nope", "l", "0.01"], ["BLMOVE", "nope", "d", "LEFT", "RIGHT", "0.01"],
        ["RPUSH", "m", "x", "y"], ["BLMOVE", "m", "d", "LEFT", "RIGHT", 0],
        ["BRPOPLPUSH", "m", "d", 0], ["LRANGE", "d", 0, -1], ["BRPOPLPUSH", "m", "d", "0.01"],
        ["RPUSH", "q", 1, 2, 3], ["BLMPOP", 1, 2, "nope", "q", "RIGHT", "COUNT", 2],
        ["BLMPOP", "0.01", 1, "nope", "LEFT"],
        ["ZADD", "z", 1, "a", 2, "b"], ["BZPOPMIN", "nope", "z", 1], ["BZPOPMAX", "z", 1],
        ["BZPOPMIN", "z", "0.01"], ["ZADD", "z", 3, "c", 4, "d"],
        ["BZMPOP", 1, 1, "z", "MAX", "COUNT", 5], ["BZMPOP", "0.01", 1, "z", "MIN"],
        ["BLPOP", "l", "x"], ["BLPOP", "l", -1], ["BLPOP", "l", "inf"],
        ["BLMOVE", "l", "d", "UP", "LEFT", 0], ["BLMPOP", 1, 0, "l", "LEFT"],
        ["SET", "s", "v"], ["BLPOP", "s", 0], ["BZPOPMIN", "s", 0], ["BLMOVE", "s", "d", "LEFT", "LEFT", 0],
        ["MULTI"], ["BLPOP", "empty", 0], ["BZPOPMIN", "empty", 0], ["BLMOVE", "empty", "d", "LEFT", "LEFT", 0],
        ["EXEC"], ["EVAL", "return redis.call('BLPOP', KEYS[1], 0)", 1, "empty"],
        ["EVAL", "return redis.call('BZPOPMIN', KEYS[1], 0)", 1, "empty"],
        ["EVAL", "return redis.call('BLMOVE', KEYS[1], KEYS[2], 'LEFT', 'LEFT', 0)", 2, "e", "f"],
    ])


def test_a_waiting_client_is_served_by_a_push_from_another(fridge, redis_server):
    for addr in (fridge, redis_server):
        waiter, pusher = redis.Redis(*addr), redis.Redis(*addr)
        waiter.flushall()
        got = {}

        def wait():
            started = time.monotonic()
            got["value"] = waiter.blpop(["a", "b"], timeout=5)
            got["took"] = time.monotonic() - started

        t = threading.Thread(target=wait)
        t.start()
        time.sleep(0.3)
        # The waiting connection's worker serves others meanwhile.
        assert pusher.ping()
        pusher.rpush("b", "hello")
        t.join(timeout=5)
        assert got["value"] == (b"b", b"hello"), addr
        assert got["took"] < 2, (addr, got)
        assert pusher.llen("b") == 0

        # The same for a sorted set, and a move that creates its destination.
        t = threading.Thread(target=lambda: got.update(z=waiter.bzpopmax("z", timeout=5)))
        t.start()
        time.sleep(0.2)
        pusher.zadd("z", {"m": 7})
        t.join(timeout=5)
        assert got["z"] == (b"z", b"m", 7.0), addr
        t = threading.Thread(target=lambda: got.update(m=waiter.blmove("src", "dst", 5)))
        t.start()
        time.sleep(0.2)
        pusher.lpush("src", "moved")
        t.join(timeout=5)
        assert got["m"] == b"moved" and pusher.lrange("dst", 0, -1) == [b"moved"], addr


def test_a_timeout_answers_nil_in_time(fridge, redis_server):
    for addr in (fridge, redis_server):
        r = redis.Redis(*addr)
        r.flushall()
        started = time.monotonic()
        assert r.blpop("nothing", timeout=0.3) is None
        took = time.monotonic() - started
        assert 0.25 < took < 1.5, (addr, took)
        started = time.monotonic()
        assert r.bzmpop(0.2, 1, ["nothing"], min=True) is None
        assert time.monotonic() - started < 1.5


def test_one_push_serves_one_waiter(fridge):
    waiters = [redis.Redis(*fridge) for _ in range(3)]
    pusher = redis.Redis(*fridge)
    pusher.flushall()
    results = []
    lock = threading.Lock()

    def wait(r):
        v = r.blpop("job", timeout=2)
        with lock:
            results.append(v)

    threads = [threading.Thread(target=wait, args=(w,)) for w in waiters]
    for t in threads:
        t.start()
    time.sleep(0.3)
    pusher.rpush("job", "1", "2")
    for t in threads:
        t.join(timeout=5)
    served = sorted(v[1] for v in results if v is not None)
    assert served == [b"1", b"2"] and results.count(None) == 1
