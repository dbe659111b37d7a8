"""Hostile clients against the server's limits: replies that stream within the output
buffer, requests parsed in linear time, KEYS in bounded steps, a cap on all clients' buffers
together, and half-sent requests that time out. Each test measures the server's RSS and a
bystander's latency during the attack (printed; `pytest -s` shows them)."""

import socket
import time

import pytest
import redis
from conftest import launch, stop
from hostile import Bystander, connect, cpu_seconds, is_closed, read_exactly, read_until, rss_bytes

MB = 1 << 20
BIG = 1_000_000  # a value under the 1 MiB item limit


@pytest.fixture
def server():
    # One worker: the bystander shares it with the attacker, so a request that held the
    # worker would stall the bystander.
    proc, port = launch(workers=1)
    yield proc, port
    stop(proc)


def fill_big(port, keys):
    s = connect(port)
    for k in keys:
        s.sendall(b"set %s 0 0 %d noreply\r\n" % (k, BIG) + b"x" * BIG + b"\r\n")
    s.sendall(b"mn\r\n")
    assert read_until(s, b"MN\r\n") == b"MN\r\n"
    s.close()


def test_a_multiget_of_large_values_streams_within_the_output_buffer(server):
    proc, port = server
    fill_big(port, [b"big"])
    base = rss_bytes(proc.pid)
    # 4,000 copies of a 1 MB key in one 16 KB request, never read: 4 GB of reply.
    with Bystander(port) as b:
        attackers = []
        for wire in (b"get" + b" big" * 4000 + b"\r\n", None):
            s = connect(port)
            if wire is None:  # the same through RESP MGET
                args = [b"MGET"] + [b"big"] * 4000
                wire = b"*%d\r\n" % len(args) + b"".join(
                    b"$%d\r\n%s\r\n" % (len(a), a) for a in args
                )
            s.sendall(wire)
            attackers.append(s)
        time.sleep(1.5)
        grown = rss_bytes(proc.pid) - base
        for s in attackers:
            s.close()
    b.report("4,000 x 1 MB multiget, unread")
    print(f"[hostile] RSS grew {grown / MB:.1f} MiB")
    assert grown < 64 * MB, f"RSS grew {grown / MB:.0f} MiB for replies nobody reads"


def test_a_normal_client_gets_all_of_a_100_mb_reply(server):
    proc, port = server
    distinct = [b"v%d" % i for i in range(25)]  # 25 MB: fits in the server's 64 MiB
    fill_big(port, distinct)
    keys = distinct * 4
    s = connect(port, timeout=30)
    s.sendall(b"get " + b" ".join(keys) + b"\r\n")
    f = s.makefile("rb")
    for k in keys:
        assert f.readline() == b"VALUE %s 0 %d\r\n" % (k, BIG)
        assert f.read(BIG + 2) == b"x" * BIG + b"\r\n"
    assert f.readline() == b"END\r\n"
    # And through RESP: MGET of the same 100 values.
    r = redis.Redis(port=port, socket_timeout=30)
    values = r.mget(keys)
    assert len(values) == 100 and all(v == b"x" * BIG for v in values)
    assert rss_bytes(proc.pid) < 512 * MB


def test_a_trickled_request_is_parsed_once(server):
    proc, port = server
    cpu_before = cpu_seconds(proc.pid)
    with Bystander(port) as b:
        # A 2 MB multiget line, 2 KiB per send, then its end: each byte is searched once.
        line = b"get" + b" k" * (MB)
        s = connect(port, timeout=30)
        for i in range(0, len(line), 2048):
            s.sendall(line[i : i + 2048])
            time.sleep(0.0002)
        s.sendall(b"\r\n")
        assert read_until(s, b"END\r\n") == b"END\r\n"
        # A RESP request of 100,000 arguments, trickled the same way.
        args = [b"MGET"] + [b"k"] * 100_000
        wire = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
        r = connect(port, timeout=30)
        for i in range(0, len(wire), 1024):
            r.sendall(wire[i : i + 1024])
            time.sleep(0.0002)
        reply = read_until(r, b"$-1\r\n" * 100_000)
        assert reply.startswith(b"*100000\r\n")
    b.report("trickled 2 MB line and 100k-argument request")
    print(f"[hostile] server CPU for the trickles: {cpu_seconds(proc.pid) - cpu_before:.2f} s")


def test_keys_is_linear_and_yields_to_other_clients(server):
    proc, port = server
    r = redis.Redis(port=port, socket_timeout=60)
    n = 400_000
    pipe = r.pipeline(transaction=False)
    for i in range(0, n, 1000):
        pipe.mset({f"key:{j}": "v" for j in range(i, i + 1000)})
    pipe.execute()
    assert r.dbsize() == n
    with Bystander(port) as b:
        start = time.monotonic()
        keys = r.keys("key:*")
        took = time.monotonic() - start
        assert len(keys) == n and len(set(keys)) == n
        assert len(r.keys("key:3999*")) == 111
        assert r.keys("nomatch*") == []
    b.report(f"KEYS over {n} keys")
    print(f"[hostile] KEYS over {n} keys took {took * 1000:.0f} ms")


def resp_partial(nargs):
    """An unfinished RESP request announcing a million arguments and sending `nargs`."""
    return b"*1000000\r\n" + b"$1\r\na\r\n" * nargs


def test_argument_bookkeeping_counts_against_the_query_buffer_limit(server):
    _, port = server
    # 300,000 one-byte arguments: 2.1 MB on the wire, 4.8 MB of argument ranges.
    s = connect(port)
    s.sendall(resp_partial(300_000))
    reply = read_until(s, b"\r\n")
    assert reply == b"-ERR Protocol error: query buffer limit exceeded\r\n"
    assert is_closed(s)


def test_all_clients_buffers_are_capped_largest_first():
    proc, port = launch("--max-client-memory", "24MiB")
    try:
        r = redis.Redis(port=port, socket_timeout=10)
        base = rss_bytes(proc.pid)
        with Bystander(port) as b:
            hogs = []
            for _ in range(12):
                s = connect(port)
                s.sendall(resp_partial(100_000))  # ~0.7 MB of input, ~3 MB held
                hogs.append(s)
            time.sleep(1.0)
            grown = rss_bytes(proc.pid) - base
            closed = sum(is_closed(s, wait=0.2) for s in hogs)
            info = r.info()
        b.report("12 connections with unfinished 100k-argument requests")
        print(f"[hostile] RSS grew {grown / MB:.1f} MiB; {closed} of 12 hogs closed; "
              f"clients' memory {info['mem_clients_normal'] / MB:.1f} MiB")
        assert closed > 0 and info["evicted_clients"] == closed
        assert info["mem_clients_normal"] <= 24 * MB
        assert r.ping() is True, "small clients are not evicted"
        for s in hogs:
            s.close()
    finally:
        stop(proc)


def test_client_no_evict_spares_a_connection_from_the_clients_memory_limit():
    proc, port = launch("--max-client-memory", "24MiB")
    try:
        r = redis.Redis(port=port, socket_timeout=10)
        # The largest connection, protected: without NO-EVICT it would be closed first.
        kept = connect(port)
        kept.sendall(b"*3\r\n$6\r\nCLIENT\r\n$8\r\nNO-EVICT\r\n$2\r\non\r\n")
        assert read_until(kept, b"\r\n") == b"+OK\r\n"
        kept.sendall(resp_partial(125_000))  # under the 4 MiB query limit, above the others
        hogs = []
        for _ in range(10):
            s = connect(port)
            s.sendall(resp_partial(100_000))
            hogs.append(s)
        time.sleep(1.0)
        closed = sum(is_closed(s, wait=0.2) for s in hogs)
        assert closed > 0, "the limit closed other connections"
        assert not is_closed(kept, wait=0.2), "the protected connection stays"
        assert r.info()["evicted_clients"] == closed
        for s in hogs + [kept]:
            s.close()
    finally:
        stop(proc)


def test_a_half_sent_request_times_out():
    proc, port = launch("--partial-request-timeout", "1s")
    try:
        half = connect(port)
        half.sendall(b"set k 0 0 1000000\r\n" + b"x" * 1000)
        idle = connect(port)  # no request at all: not timed out
        idle.sendall(b"version\r\n")
        read_until(idle, b"\r\n")
        resp_half = connect(port)
        resp_half.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nabc")
        time.sleep(2.0)
        assert is_closed(half, wait=1.0)
        assert is_closed(resp_half, wait=1.0)
        idle.sendall(b"stats\r\n")
        stats = read_until(idle, b"END\r\n")
        assert b"STAT request_timeouts 2\r\n" in stats
    finally:
        stop(proc)
