"""Every value type through the machinery around the commands, side by side with Debian's
redis-server 7.0.15 where Redis answers: transactions (MULTI/EXEC, WATCH), scripts, client-side
caching invalidations, databases, TTLs, and a memcached client beside them. Skipped without
redis-server."""

import redis

from test_redis_parity import redis_server, same  # noqa: F401
from test_redis_tracking import Raw


def test_transactions_and_scripts_run_every_type(fridge, redis_server):
    script = ("redis.call('HSET', KEYS[1], 'f', ARGV[1]); redis.call('RPUSH', KEYS[2], ARGV[1]); "
              "redis.call('SADD', KEYS[3], ARGV[1]); redis.call('ZADD', KEYS[4], 5, ARGV[1]); "
              "return {redis.call('HGET', KEYS[1], 'f'), redis.call('LLEN', KEYS[2]), "
              "redis.call('SCARD', KEYS[3]), redis.call('ZSCORE', KEYS[4], ARGV[1]), "
              "redis.call('TYPE', KEYS[4])}")
    same(fridge, redis_server, [
        ["MULTI"], ["HSET", "h", "a", "1"], ["LPUSH", "l", "x", "y"], ["SADD", "s", "m"],
        ["ZADD", "z", 1, "m"], ["PFADD", "p", "e"], ["HGETALL", "h"], ["LRANGE", "l", 0, -1],
        ["ZRANGE", "z", 0, -1, "WITHSCORES"], ["GET", "h"], ["EXEC"],
        ["EVAL", script, 4, "h", "l", "s", "z", "v"],
        ["EVAL", "return redis.pcall('GET', KEYS[1])", 1, "h"],
        ["EVAL", "return redis.call('LPOP', KEYS[1], 5)", 1, "l"],
    ])


def test_watch_sees_a_change_of_any_type(fridge, redis_server):
    for addr in (fridge, redis_server):
        a, b = redis.Redis(*addr), redis.Redis(*addr)
        a.flushall()
        for key, change in [("h", lambda: b.hset("h", "f", "2")), ("l", lambda: b.rpush("l", "x")),
                            ("s", lambda: b.sadd("s", "y")), ("z", lambda: b.zincrby("z", 1, "m"))]:
            b.hset("h", "f", "1")
            b.rpush("l", "a")
            b.sadd("s", "x")
            b.zadd("z", {"m": 1})
            with a.pipeline() as p:
                p.watch(key)
                change()
                p.multi()
                p.set("ran", "yes")
                try:
                    p.execute()
                    ran = True
                except redis.WatchError:
                    ran = False
            assert not ran, (addr, key)


def test_client_side_caching_invalidates_every_type(fridge, redis_server):
    def scenario(addr):
        a, w = Raw(addr, resp3=True), Raw(addr)
        w.call("FLUSHALL")
        out = [a.call("CLIENT", "TRACKING", "ON")]
        for read, write in [
            (["HGET", "h", "f"], ["HSET", "h", "f", "v"]),
            (["LRANGE", "l", "0", "-1"], ["RPUSH", "l", "x"]),
            (["SMEMBERS", "s"], ["SADD", "s", "m"]),
            (["ZRANGE", "z", "0", "-1"], ["ZADD", "z", "1", "m"]),
            (["PFCOUNT", "p"], ["PFADD", "p", "e"]),
        ]:
            out += [a.call(*read), w.call(*write), a.frame()]
        a.close()
        w.close()
        return out

    assert scenario(fridge) == scenario(redis_server)


def test_databases_and_expiry_hold_every_type(fridge, redis_server):
    same(fridge, redis_server, [
        ["SELECT", 2], ["HSET", "h", "f", "v"], ["SADD", "s", "m"], ["ZADD", "z", 1, "m"],
        ["RPUSH", "l", "x"], ["DBSIZE"], ["SELECT", 0], ["DBSIZE"], ["TYPE", "h"], ["SELECT", 2],
        ["SWAPDB", 0, 2], ["TYPE", "h"], ["SELECT", 0], ["TYPE", "h"], ["ZSCORE", "z", "m"],
        ["PEXPIRE", "l", 100000], ["TTL", "l"], ["FLUSHDB"], ["DBSIZE"],
    ])
