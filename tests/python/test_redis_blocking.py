"""Blocking pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP), side by
side with Debian's redis-server 7.0.15: the same replies when there is something to pop, at
a timeout, inside MULTI and for bad arguments; a waiting client served by a push from
another connection (on another worker), or given up at its timeout without holding its
worker; clients blocked on one key served first come, first served, whichever worker each
is on; and CLIENT UNBLOCK. Skipped without redis-server."""

import re
import socket
import threading
import time

import pytest
import redis

from conftest import launch, stop, tenants_toml
from test_redis_parity import Reader, encode, redis_server, same  # noqa: F401


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


class Conn:
    """A raw RESP connection: replies as the bytes the server sent."""

    def __init__(self, addr, resp3=False):
        self.sock = socket.create_connection(addr)
        self.sock.settimeout(10)
        self.reader = Reader(self.sock)
        if resp3:
            self.call("HELLO", "3")

    def send(self, *args):
        self.sock.sendall(encode(list(args)))

    def reply(self):
        return self.reader.reply()

    def call(self, *args):
        self.send(*args)
        return self.reply()

    def id(self):
        return int(self.call("CLIENT", "ID")[1:-2])

    def close(self):
        self.sock.close()


def wait_blocked(ctl, n):
    """Waits until the server counts `n` blocked clients (INFO's `blocked_clients`), asked on
    the one connection `ctl`: a new connection would shift the workers fridge deals the next
    ones out to."""
    deadline = time.monotonic() + 5
    while True:
        found = int(re.search(rb"blocked_clients:(\d+)", ctl.call("INFO", "clients")).group(1))
        if found == n:
            return
        assert time.monotonic() < deadline, f"{found} blocked clients, not {n}"
        time.sleep(0.01)


def served(addr, waits, pushes, after=(), setup=(), resp3=False):
    """Flushes and runs `setup`; sends each of `waits` on a connection of its own once the one
    before is blocked (fridge deals connections out to its workers in turn, so neighbours are
    on different workers); pipelines `pushes` on another connection. Returns the pushes'
    replies, the waiters' (in the order they blocked), then those of `after`."""
    ctl = Conn(addr, resp3)
    ctl.call("FLUSHALL")
    for c in setup:
        ctl.call(*c)
    waiters = []
    for n, w in enumerate(waits, 1):
        waiters.append(Conn(addr, resp3))
        waiters[-1].send(*w)
        wait_blocked(ctl, n)
    for p in pushes:
        ctl.send(*p)
    replies = [ctl.reply() for _ in pushes] + [w.reply() for w in waiters]
    replies += [ctl.call(*c) for c in after]
    for c in [ctl, *waiters]:
        c.close()
    return replies


@pytest.fixture(scope="module")
def fridge3():
    """A fridge with three workers: three waiters in a row are each on a worker of its own."""
    proc, port = launch(workers=3)
    yield ("127.0.0.1", port)
    stop(proc)


FIFO_CASES = {
    # One push of three elements: each waiter its own, in the order they blocked.
    "one push": ([["BLPOP", "job", 5]] * 3, [["LPUSH", "job", "a", "b", "c"]], [["EXISTS", "job"]]),
    # Three pushes of one element each, pipelined (their replies are not compared: Redis
    # serves the waiters before the next push runs, fridge on the waiters' workers meanwhile).
    "three pushes": (
        [["BLPOP", "job", 5]] * 3,
        [["RPUSH", "job", "x"], ["RPUSH", "job", "y"], ["RPUSH", "job", "z"]],
        [["EXISTS", "job"]],
    ),
    # Different commands in one queue; a sorted set's waiter on the key neither holds up the
    # lists' nor is served (it times out).
    "mixed": (
        [["BLPOP", "k", 5], ["BZPOPMIN", "k", "0.5"], ["BLMPOP", 5, 1, "k", "RIGHT", "COUNT", 2],
         ["BRPOPLPUSH", "k", "dst", 5], ["BLMOVE", "k", "dst", "LEFT", "RIGHT", "0.5"]],
        [["RPUSH", "k", 1, 2, 3, 4, 5]],
        [["LRANGE", "k", 0, -1], ["LRANGE", "dst", 0, -1]],
    ),
    "sorted sets": (
        [["BZPOPMIN", "z", 5], ["BZPOPMAX", "z", 5], ["BZMPOP", 5, 1, "z", "MIN", "COUNT", 5]],
        [["ZADD", "z", 1, "a", 2, "b", 3, "c", 4, "d"]],
        [["EXISTS", "z"]],
    ),
    # More waiters than elements: the last ones wait on, and time out.
    "fewer elements": ([["BLPOP", "job", "0.5"]] * 3, [["RPUSH", "job", "only"]], []),
    # A client blocked on several keys is served by the key that received data first.
    "first key pushed": (
        [["BLPOP", "key1", "key2", 5]],
        [["MULTI"], ["RPUSH", "key2", 1, 2, 3, 4], ["RPUSH", "key1", 5, 6, 7], ["EXEC"]],
        [["LRANGE", "key1", 0, -1], ["LRANGE", "key2", 0, -1]],
    ),
    "earlier waiter drains it": (
        [["BLPOP", "key2", 5], ["BLPOP", "key1", "key2", 5]],
        [["MULTI"], ["RPUSH", "key2", "x"], ["RPUSH", "key1", "y"], ["EXEC"]],
        [["EXISTS", "key1", "key2"]],
    ),
    "its turn on the first key": (
        [["BLPOP", "key1", "key2", 5], ["BLPOP", "key2", "0.5"]],
        [["MULTI"], ["RPUSH", "key2", "x"], ["RPUSH", "key1", "y"], ["EXEC"]],
        [["LRANGE", "key1", 0, -1]],
    ),
    # The first waiter cannot take it (its destination holds another type): WRONGTYPE for
    # it, and the element goes to the next.
    "the first cannot take it": (
        [["BLMOVE", "k", "str", "LEFT", "LEFT", 5], ["BLPOP", "k", 5]],
        [["RPUSH", "k", "e"]],
        [["EXISTS", "k"]],
    ),
}


@pytest.mark.parametrize("case", FIFO_CASES)
def test_waiters_are_served_first_come_first_served(fridge, fridge3, redis_server, case):
    waits, pushes, after = FIFO_CASES[case]
    setup = [["SET", "str", "v"]]
    theirs = served(redis_server, waits, pushes, after, setup)
    skip = len(pushes) if case == "three pushes" else 0
    for addr in (fridge, fridge3):
        ours = served(addr, waits, pushes, after, setup)
        assert ours[skip:] == theirs[skip:], (case, addr)
    if case == "one push":
        assert theirs[1:4] == [b"*2\r\n$3\r\njob\r\n$1\r\n%s\r\n" % e for e in [b"c", b"b", b"a"]]


def test_fifo_in_resp3(fridge, redis_server):
    waits, pushes, after = FIFO_CASES["mixed"]
    assert served(fridge, waits, pushes, after, resp3=True) == served(
        redis_server, waits, pushes, after, resp3=True
    )


def test_a_key_that_changes_type_keeps_its_waiters(fridge, redis_server):
    # Redis 7.0 leaves them blocked; each is served once the key holds its type again.
    results = []
    for addr in (fridge, redis_server):
        ctl = Conn(addr)
        ctl.call("FLUSHALL")
        lists, zsets = Conn(addr), Conn(addr)
        lists.send("BLPOP", "k", 5)
        wait_blocked(ctl, 1)
        zsets.send("BZPOPMIN", "k", 5)
        wait_blocked(ctl, 2)
        ctl.call("SET", "k", "string")
        time.sleep(0.3)  # past a housekeeping tick: both have looked again
        wait_blocked(ctl, 2)
        ctl.call("DEL", "k")
        ctl.call("ZADD", "k", 1, "m")
        got = [zsets.reply()]
        ctl.call("RPUSH", "k", "x")
        got.append(lists.reply())
        results.append(got)
        for c in (ctl, lists, zsets):
            c.close()
    assert results[0] == results[1] == [
        b"*3\r\n$1\r\nk\r\n$1\r\nm\r\n$1\r\n1\r\n",
        b"*2\r\n$1\r\nk\r\n$1\r\nx\r\n",
    ]


UNBLOCKED = [
    ["BLPOP", "k", 0], ["BRPOP", "nope", "k", 10], ["BZPOPMIN", "z", 0], ["BZPOPMAX", "z", 0],
    ["BLMOVE", "k", "d", "LEFT", "LEFT", 0], ["BRPOPLPUSH", "k", "d", 0],
    ["BLMPOP", 0, 1, "k", "LEFT"], ["BZMPOP", 0, 2, "z", "y", "MIN", "COUNT", 3],
]


def unblock_replies(addr, resp3):
    """CLIENT UNBLOCK of each blocking command, as at its timeout (the default and TIMEOUT) and
    with ERROR, from another connection (every other one on another worker): the replies of
    both sides, and how long the blocked client took to answer."""
    ctl = Conn(addr, resp3)
    ctl.call("FLUSHALL")
    replies = []
    for wait in UNBLOCKED:
        for how in ([], ["TIMEOUT"], ["error"]):
            w = Conn(addr, resp3)
            wid = w.id()
            w.send(*wait)
            wait_blocked(ctl, 1)
            replies.append(ctl.call("CLIENT", "UNBLOCK", wid, *how))
            replies.append(w.reply())
            wait_blocked(ctl, 0)
            # No longer blocked: 0; and the connection goes on.
            replies += [ctl.call("CLIENT", "UNBLOCK", wid, *how), w.call("PING")]
            w.close()
    # Clients that are not blocked: itself, one that does not exist, and no id at all.
    replies += [ctl.call("CLIENT", "UNBLOCK", ctl.id()), ctl.call("CLIENT", "UNBLOCK", 10**9)]
    replies += [ctl.call("CLIENT", "UNBLOCK", -1, "ERROR"), ctl.call("CLIENT", "UNBLOCK", 0)]
    ctl.close()
    return replies


@pytest.mark.parametrize("resp3", [False, True])
def test_client_unblock(fridge, redis_server, resp3):
    ours = unblock_replies(fridge, resp3)
    theirs = unblock_replies(redis_server, resp3)
    assert ours == theirs
    assert b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n" in ours
    assert (b"_\r\n" if resp3 else b"*-1\r\n") in ours


def test_client_unblock_errors(fridge, redis_server):
    same(fridge, redis_server, [
        ["CLIENT", "UNBLOCK"], ["CLIENT", "UNBLOCK", "abc"], ["CLIENT", "UNBLOCK", "abc", "foo"],
        ["CLIENT", "UNBLOCK", 1, "foo"], ["CLIENT", "UNBLOCK", 1, "error", "x"],
        ["CLIENT", "unBlock", 1, "timeout", "x"], ["CLIENT", "UNBLOCK", "1.5"],
        ["CLIENT", "UNBLOCK", "-0"], ["CLIENT", "UNBLOCK", "+5"],
        ["CLIENT", "UNBLOCK", "99999999999999999999"], ["CLIENT", "UNBLOCK", 5, "TimeOut"],
    ])


def test_a_waiter_that_leaves_hands_its_turn_on(fridge, fridge3, redis_server):
    """The first waiters time out, disconnect, are killed, are unblocked, or cannot take
    what comes: the next one in the queue is served at once all the same."""
    for addr in (fridge, fridge3, redis_server):
        ctl = Conn(addr)
        ctl.call("FLUSHALL")
        ctl.call("SET", "str", "v")
        conns = [Conn(addr) for _ in range(5)]
        ids = [c.id() for c in conns]
        waits = [["BLPOP", "k", "0.3"], ["BLPOP", "k", 0], ["BLPOP", "k", 0], ["BLPOP", "k", 0],
                 ["BLPOP", "k", 5]]
        for n, (c, w) in enumerate(zip(conns, waits), 1):
            c.send(*w)
            wait_blocked(ctl, n)
        conns[1].close()
        assert ctl.call("CLIENT", "KILL", "ID", ids[2]) == b":1\r\n"
        assert ctl.call("CLIENT", "UNBLOCK", ids[3]) == b":1\r\n"
        assert conns[3].reply() == b"*-1\r\n"
        assert conns[0].reply() == b"*-1\r\n", addr  # its timeout
        wait_blocked(ctl, 1)
        assert ctl.call("RPUSH", "k", "e") == b":1\r\n"
        assert conns[4].reply() == b"*2\r\n$1\r\nk\r\n$1\r\ne\r\n", addr
        for c in [ctl, *conns]:
            c.close()


def test_tenants_unblock_only_their_own(tenant_server):
    tenants = {"default": ("root", []), "alpha": ("apw", []), "beta": ("bpw", [])}
    server = tenant_server(tenants_toml(tenants, auth_failure_burst="1000"))

    def login(user, password):
        c = Conn(server.addr)
        assert c.call("AUTH", user, password) == b"+OK\r\n"
        return c

    alpha, alpha2, beta, admin = (login("alpha", "apw"), login("alpha", "apw"),
                                  login("beta", "bpw"), login("default", "root"))
    alpha_id = alpha.id()
    alpha.send("BLPOP", "k", 5)
    wait_blocked(admin, 1)
    # Another tenant sees neither the client nor its wait; its own key is another key.
    assert re.search(rb"blocked_clients:0\r", beta.call("INFO", "clients"))
    assert re.search(rb"blocked_clients:1\r", alpha2.call("INFO", "clients"))
    assert beta.call("CLIENT", "UNBLOCK", alpha_id) == b":0\r\n"
    assert beta.call("RPUSH", "k", "beta's") == b":1\r\n"
    time.sleep(0.1)
    wait_blocked(admin, 1)
    # Its own tenant may unblock it.
    assert alpha2.call("CLIENT", "UNBLOCK", alpha_id, "ERROR") == b":1\r\n"
    assert alpha.reply() == b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    assert beta.call("LLEN", "k") == b":1\r\n"
    for c in (alpha, alpha2, beta, admin):
        c.close()
