"""HyperLogLog, side by side with Debian's redis-server 7.0.15: the same requests, the same
reply bytes — the HyperLogLog's own bytes (`GET`) included, sparse and dense, so payloads move
between the servers unchanged. Skipped without redis-server."""

import redis

from test_redis_parity import redis_server, same  # noqa: F401


def test_pfadd_pfcount_and_the_bytes_answer_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["PFADD", "h", "a", "b", "c"], ["GET", "h"], ["PFCOUNT", "h"], ["GET", "h"],
        ["PFADD", "h", "a"], ["PFADD", "h", "d", "e"], ["GET", "h"], ["PFCOUNT", "h"],
        ["PFADD", "empty"], ["GET", "empty"], ["PFCOUNT", "empty"], ["GET", "empty"],
        ["PFADD", "empty"], ["PFCOUNT", "nope"], ["PFCOUNT", "h", "nope", "empty"],
        ["PFADD", "g", *[f"x{i}" for i in range(300)]], ["GET", "g"], ["PFCOUNT", "g"],
        ["PFCOUNT", "g", "h"], ["PFMERGE", "m", "g", "h"], ["GET", "m"], ["PFCOUNT", "m"],
        ["PFMERGE", "m2"], ["GET", "m2"], ["PFMERGE", "h", "g"], ["GET", "h"],
        ["SET", "s", "not an hll"], ["PFADD", "s", "a"], ["PFCOUNT", "s"], ["PFCOUNT", "h", "s"],
        ["PFMERGE", "s", "h"], ["PFMERGE", "m", "s"], ["HSET", "hash", "f", "v"],
        ["PFADD", "hash", "a"], ["PFCOUNT", "hash"], ["PFADD"], ["TYPE", "h"],
    ])


def test_dense_hyperloglogs_answer_as_redis(fridge, redis_server):
    # Enough elements to pass 3,000 sparse bytes, and a long run (a value over 32) from a
    # large set, both of which turn a HyperLogLog dense.
    big = [f"element:{i}" for i in range(5000)]
    cmds = [["PFADD", "d", *big[i:i + 500]] for i in range(0, 5000, 500)]
    cmds += [["GET", "d"], ["PFCOUNT", "d"], ["GET", "d"], ["PFADD", "s", "a", "b"],
             ["PFMERGE", "s", "d"], ["GET", "s"], ["PFCOUNT", "s", "d"], ["STRLEN", "d"]]
    same(fridge, redis_server, cmds, resp3=False)


def test_a_payload_moves_both_ways(fridge, redis_server):
    ours, theirs = redis.Redis(*fridge), redis.Redis(*redis_server)
    for r in (ours, theirs):
        r.flushall()
    theirs.pfadd("t", *[f"e{i}" for i in range(2000)])
    ours.set("t", theirs.get("t"))
    assert ours.pfcount("t") == theirs.pfcount("t")
    ours.pfadd("t", "new1", "new2")
    theirs.pfadd("t", "new1", "new2")
    assert ours.get("t") == theirs.get("t")
    theirs.restore("u", 0, ours.dump("t"))
    assert theirs.pfcount("u") == ours.pfcount("t")
