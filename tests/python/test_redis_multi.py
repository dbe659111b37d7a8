"""Redis transactions (issue 15, point 1): MULTI/EXEC/DISCARD/WATCH/UNWATCH byte for byte
against redis-server 7.0.15, redis-py pipelines, and WATCH retry loops and a stress run of many
clients on several workers.

redis-py's `lock()` needs EVALSHA (scripting), which fridge does not have yet: not tested here."""

import threading

import pytest
import redis

from conftest import launch, stop
from test_redis_parity import redis_server, same  # noqa: F401 (the fixture)


def test_multi_exec_discard(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["EXEC"], ["DISCARD"],
        ["MULTI"], ["SET", "k", 1], ["INCR", "k"], ["GET", "k"], ["EXEC"], ["GET", "k"],
        ["MULTI"], ["SET", "k", 5], ["DISCARD"], ["GET", "k"],
        ["MULTI"], ["MULTI"], ["WATCH", "k"], ["INCR", "k"], ["EXEC"],
        ["MULTI"], ["EXEC"],
        ["SET", "s", "abc"],
        ["MULTI"], ["INCR", "s"], ["SET", "t", 1], ["EXEC"], ["GET", "t"],
        ["MULTI"], ["PING"], ["ECHO", "x"], ["MGET", "k", "t", "none"], ["EXEC"],
    ])


def test_queue_time_errors_abort(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["MULTI"], ["SET", "k", 1], ["NOSUCHCOMMAND", "a"], ["SET", "j", 2], ["EXEC"],
        ["EXISTS", "k", "j"],
        ["MULTI"], ["SET", "k"], ["EXEC"], ["EXISTS", "k"],
        ["MULTI"], ["GET"], ["DISCARD"], ["EXEC"],
        ["EXEC", "x"], ["DISCARD", "x"],
        ["MULTI"], ["EXEC", "x"], ["EXEC"],
        ["WATCH", "k"], ["MULTI"], ["EXEC", "x"], ["SET", "k", 1], ["MULTI"], ["EXEC"],
        ["MULTI"], ["WATCH"], ["EXEC"], ["MULTI"], ["MULTI", "x"], ["EXEC"],
    ])


def test_commands_inside_multi(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["MULTI"], ["SUBSCRIBE", "ch"], ["EXEC"],
        ["MULTI"], ["KEYS", "*"], ["SET", "a", "1"], ["DBSIZE"], ["EXEC"],
        ["MULTI"], ["AUTH", "x"], ["EXEC"],
        ["MULTI"], ["UNWATCH"], ["SELECT", "0"], ["WAIT", 0, 0], ["EXEC"],
        ["MULTI"], ["CLIENT", "TRACKING", "on"], ["SET", "t", 1], ["EXEC"],
        ["MULTI"], ["PUBLISH", "c", "m"], ["INFO", "nosuch"], ["EXEC"],
    ])


def test_watch(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["SET", "w", 1], ["WATCH", "w"], ["SET", "w", 2], ["MULTI"], ["GET", "w"], ["EXEC"],
        ["WATCH", "w"], ["MULTI"], ["INCR", "w"], ["EXEC"], ["GET", "w"],
        ["WATCH", "w"], ["UNWATCH"], ["SET", "w", 9], ["MULTI"], ["GET", "w"], ["EXEC"],
        ["WATCH", "w", "nope"], ["SET", "nope", 1], ["MULTI"], ["PING"], ["EXEC"],
        ["WATCH", "w"], ["EXPIRE", "w", 100], ["MULTI"], ["PING"], ["EXEC"],
        ["WATCH", "w"], ["GET", "w"], ["MULTI"], ["PING"], ["EXEC"],
        ["WATCH", "w"], ["MULTI"], ["PING"], ["DISCARD"], ["SET", "w", 1], ["MULTI"], ["EXEC"],
        ["WATCH", "gone"], ["MULTI"], ["EXEC"],
        ["WATCH", "w"], ["PEXPIREAT", "w", 1], ["MULTI"], ["PING"], ["EXEC"],
        ["SET", "w", 1, "EX", 100], ["WATCH", "w"], ["PERSIST", "w"], ["MULTI"], ["EXEC"],
        ["WATCH"],
    ])


def test_reset_ends_a_transaction(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["MULTI"], ["SET", "r", 1], ["RESET"], ["EXEC"], ["EXISTS", "r"],
    ], resp3=False)


def test_watched_key_changed_by_another_client(fridge):
    a, b = redis.Redis(*fridge), redis.Redis(*fridge)
    a.set("x", 1)
    p = a.pipeline()
    p.watch("x")
    b.set("x", 2)
    p.multi()
    p.incr("x")
    with pytest.raises(redis.WatchError):
        p.execute()
    assert b.get("x") == b"2"


def test_redis_py_pipelines():
    proc, port = launch()
    try:
        for protocol in (2, 3):
            r = redis.Redis("127.0.0.1", port, protocol=protocol)
            r.flushall()
            for transaction in (True, False):
                p = r.pipeline(transaction=transaction)
                p.set("a", 1).incr("a").get("a").delete("a").exists("a")
                assert p.execute() == [True, 2, b"2", 1, 0]
            p = r.pipeline()
            p.set("s", "x").incr("s").set("y", 1)
            res = p.execute(raise_on_error=False)
            assert res[0] is True and isinstance(res[1], redis.ResponseError) and res[2] is True
    finally:
        stop(proc)


def incr_loop(port, keys, rounds, errors):
    r = redis.Redis("127.0.0.1", port)
    try:
        for i in range(rounds):
            key = keys[i % len(keys)]
            while True:
                with r.pipeline() as p:
                    try:
                        p.watch(key)
                        v = int(p.get(key) or 0)
                        p.multi()
                        p.set(key, v + 1)
                        p.execute()
                        break
                    except redis.WatchError:
                        continue
    except Exception as e:  # reported by the test
        errors.append(e)


def test_watch_retry_loops_count_exactly():
    proc, port = launch(workers=4)
    try:
        keys = ["c0", "c1", "c2"]
        errors, threads = [], []
        for _ in range(8):
            t = threading.Thread(target=incr_loop, args=(port, keys, 150, errors))
            threads.append(t)
            t.start()
        for t in threads:
            t.join(timeout=120)
            assert not t.is_alive(), "a client is stuck"
        assert not errors
        r = redis.Redis("127.0.0.1", port)
        assert sum(int(r.get(k)) for k in keys) == 8 * 150
        assert [int(r.get(k)) for k in keys] == [400, 400, 400]
    finally:
        stop(proc)


def mixed(port, n, seed, errors):
    r = redis.Redis("127.0.0.1", port)
    try:
        for i in range(n):
            k = f"k{(i * 7 + seed) % 50}"
            if i % 3 == 0:
                p = r.pipeline()
                p.set(k, "v" * 2000).incr(f"n{seed}").get(k)
                assert p.execute()[1] >= 1
            else:
                r.set(k, "w" * 3000)
                r.get(k)
            # Values that push the small cache to evict.
            r.set(f"fill{seed}:{i}", "x" * 60000)
    except Exception as e:  # reported by the test
        errors.append(e)


def test_transactions_and_plain_writes_under_eviction():
    proc, port = launch(workers=4, memory_mb=48)
    try:
        errors, threads = [], []
        for seed in range(6):
            t = threading.Thread(target=mixed, args=(port, 400, seed, errors))
            threads.append(t)
            t.start()
        for t in threads:
            t.join(timeout=120)
            assert not t.is_alive(), "a client is stuck (deadlock?)"
        assert not errors, errors[:3]
        r = redis.Redis("127.0.0.1", port)
        assert r.ping()
        assert r.info("stats")["evicted_keys"] > 0, "the cleaner evicted during the run"
        counts = [r.get(f"n{s}") for s in range(6)]
        assert all(c is None or int(c) <= 134 for c in counts)
    finally:
        stop(proc)


def test_no_client_sees_a_partial_transaction():
    """Writers set two keys to one value in a transaction; readers on other workers read both
    with one MGET (one command, so one moment) and must never see them differ."""
    proc, port = launch(workers=4)
    try:
        errors, stop_flag = [], threading.Event()

        def writer(seed):
            r = redis.Redis("127.0.0.1", port)
            for i in range(300):
                p = r.pipeline()
                p.set("pa", f"{seed}:{i}").set("pb", f"{seed}:{i}")
                p.execute()

        def reader():
            r = redis.Redis("127.0.0.1", port)
            while not stop_flag.is_set():
                a, b = r.mget("pa", "pb")
                if a != b:
                    errors.append((a, b))
                    return

        readers = [threading.Thread(target=reader) for _ in range(3)]
        writers = [threading.Thread(target=writer, args=(s,)) for s in range(3)]
        for t in readers + writers:
            t.start()
        for t in writers:
            t.join(timeout=120)
            assert not t.is_alive()
        stop_flag.set()
        for t in readers:
            t.join(timeout=30)
        assert not errors, errors[:3]
    finally:
        stop(proc)


def test_queue_is_bounded_by_client_memory():
    """A queue past the clients' memory limit ends the transaction (its EXEC answers
    EXECABORT) or, over the clients' total, closes the connection; nothing queued runs."""
    import socket

    from test_redis_parity import Reader, encode

    proc, port = launch("--max-client-memory", "24MiB")
    try:
        s = socket.create_connection(("127.0.0.1", port))
        s.settimeout(10)
        r = Reader(s)
        s.sendall(encode(["MULTI"]))
        assert r.reply() == b"+OK\r\n"
        value = b"v" * 100_000
        outcome = None
        try:
            for i in range(400):
                s.sendall(encode(["SET", f"q{i}", value]))
                reply = r.reply()
                if reply != b"+QUEUED\r\n":
                    assert reply.startswith(b"-ERR transaction too large"), reply
                    s.sendall(encode(["EXEC"]))
                    assert r.reply().startswith(b"-EXECABORT"), "the transaction was flagged"
                    outcome = "refused"
                    break
        except OSError:
            outcome = "closed"
        except AssertionError as e:
            assert "connection closed" in str(e), e
            outcome = "closed"
        # With the queue counted in the connection's memory, client eviction closes it first.
        assert outcome in ("refused", "closed")
        c = redis.Redis("127.0.0.1", port)
        assert c.exists("q0") == 0 and c.ping()
    finally:
        stop(proc)


def test_exec_reply_past_the_output_limit_closes_the_connection():
    """An EXEC reply longer than `max_output_buffer` is not built whole: the connection is
    closed (Redis's output buffer limit), and the transaction still ran whole."""
    import socket

    from test_redis_parity import Reader, encode

    proc, port = launch("--max-output-buffer", "2MiB")
    try:
        c = redis.Redis("127.0.0.1", port)
        c.set("big", b"b" * 900_000)
        s = socket.create_connection(("127.0.0.1", port))
        s.settimeout(10)
        r = Reader(s)
        s.sendall(encode(["MULTI"]))
        assert r.reply() == b"+OK\r\n"
        for _ in range(4):
            s.sendall(encode(["GET", "big"]))
            assert r.reply() == b"+QUEUED\r\n"
        s.sendall(encode(["SET", "after", 1]))
        assert r.reply() == b"+QUEUED\r\n"
        s.sendall(encode(["EXEC"]))
        assert s.recv(1 << 20) == b"", "closed without a reply"
        assert c.get("after") == b"1"
    finally:
        stop(proc)
