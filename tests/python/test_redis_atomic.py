"""Commands that write several keys run whole, as in Redis: a command on another worker never
sees one half done (`MSET`, `RENAME`, `SMOVE`, `LMOVE`, the `*STORE`s take every worker's
transaction gate, as `EXEC` does)."""

import threading

import redis

from conftest import launch, stop


def test_multi_key_writes_are_never_seen_half_done():
    proc, port = launch(workers=3)
    try:
        w = redis.Redis(port=port, socket_timeout=20)
        w.mset({"a": 0, "b": 0})
        w.sadd("s1", *range(50))
        w.rpush("l1", *range(50))
        stop_flag = threading.Event()
        seen = []

        def read():
            # Readers on other workers (connections are spread over the workers).
            rs = [redis.Redis(port=port, socket_timeout=20) for _ in range(3)]
            while not stop_flag.is_set():
                for r in rs:
                    a, b = r.mget("a", "b")
                    if a != b:
                        seen.append(("mget", a, b))
                    n = r.eval(
                        "return {redis.call('SCARD', KEYS[1]) + redis.call('SCARD', KEYS[2]),"
                        " redis.call('LLEN', KEYS[3]) + redis.call('LLEN', KEYS[4])}",
                        4, "s1", "s2", "l1", "l2")
                    if n != [50, 50]:
                        seen.append(("sizes", n))

        readers = [threading.Thread(target=read) for _ in range(2)]
        for t in readers:
            t.start()
        try:
            writers = [redis.Redis(port=port, socket_timeout=20) for _ in range(3)]
            for i in range(1, 3000):
                x = writers[i % 3]
                x.mset({"a": i, "b": i})
                x.smove("s1", "s2", i % 50) if i % 2 else x.smove("s2", "s1", (i - 1) % 50)
                x.lmove("l1", "l2") if i % 4 < 2 else x.lmove("l2", "l1")
        finally:
            stop_flag.set()
            for t in readers:
                t.join()
        assert seen == []
        assert w.scard("s1") + w.scard("s2") == 50
    finally:
        stop(proc)
