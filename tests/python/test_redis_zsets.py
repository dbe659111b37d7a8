"""Sorted sets, side by side with Debian's redis-server 7.0.15: the same requests, the same
reply bytes, in RESP2 and RESP3 (a sorted set's order is defined, so nearly every reply is
compared byte for byte). Skipped without redis-server."""

import pytest
import redis

from test_redis_parity import redis_server, same  # noqa: F401


def test_zadd_and_its_flags_answer_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["ZADD", "z", 1, "a", 2, "b", 3, "c"], ["ZADD", "z", 1, "a", 5, "d"],
        ["ZADD", "z", "CH", 10, "a", 2, "b"], ["ZADD", "z", "NX", 99, "a", 4, "e"],
        ["ZADD", "z", "XX", 7, "b", 8, "zz"], ["ZADD", "z", "XX", "CH", 7.5, "b"],
        ["ZADD", "z", "GT", "CH", 1, "a", 20, "c"], ["ZADD", "z", "LT", "CH", 1, "a", 30, "c"],
        ["ZADD", "z", "INCR", 2.5, "a"], ["ZADD", "z", "INCR", "NX", 1, "a"],
        ["ZADD", "z", "INCR", "XX", 1, "new"], ["ZADD", "z", "GT", "INCR", -1, "a"],
        ["ZRANGE", "z", 0, -1, "WITHSCORES"], ["ZCARD", "z"],
        ["ZADD", "z", "NX", "XX", 1, "a"], ["ZADD", "z", "GT", "LT", 1, "a"],
        ["ZADD", "z", "NX", "GT", 1, "a"], ["ZADD", "z", "INCR", 1, "a", 2, "b"],
        ["ZADD", "z", 1], ["ZADD", "z", "x", "a"], ["ZADD", "z", "nan", "a"],
        ["ZADD", "z", 1, "a", "x"], ["ZADD", "z", "CH"],
        ["ZADD", "z", "nx", "Ch", 3, "q"], ["ZADD", "z", "iNcR", "xX", 1, "q"],
        ["ZADD", "z", 1, "a", "x", "b"], ["ZADD", "z", "GT", "x", "a"],
        ["ZADD", "inf", "inf", "a", "-inf", "b", "+inf", "c"], ["ZRANGE", "inf", 0, -1, "WITHSCORES"],
        ["ZADD", "inf", "INCR", "-inf", "a"], ["ZADD", "xx", "XX", 1, "a"], ["EXISTS", "xx"],
        ["ZADD", "f", 0.1, "a", 1e20, "b", -0.0, "c", 1.5e-7, "d"], ["ZRANGE", "f", 0, -1, "WITHSCORES"],
        ["ZINCRBY", "f", 1, "a"], ["ZINCRBY", "f", 2, "new"], ["ZINCRBY", "f", "x", "a"],
        ["ZINCRBY", "inf", "-inf", "c"],
        ["ZSCORE", "f", "a"], ["ZSCORE", "f", "zz"], ["ZSCORE", "nope", "a"],
        ["ZMSCORE", "f", "a", "zz", "b"], ["ZMSCORE", "nope", "a", "b"],
        ["ZRANK", "f", "b"], ["ZREVRANK", "f", "b"], ["ZRANK", "f", "zz"], ["ZRANK", "nope", "a"],
        ["ZREM", "f", "a", "zz", "a"], ["ZREM", "nope", "a"], ["ZCARD", "nope"],
        ["ZREM", "f", "b", "c", "d", "new"], ["EXISTS", "f"],
    ])


def test_one_member_removals_past_the_index_threshold_answer_as_redis(fridge, redis_server):
    """A sorted set grown past 128 members (from where fridge's carry an index), then shrunk by
    one-member ZREMs (each an edit of the index, not a rebuild) back below it: every reply the
    same bytes, ranks and the whole set in order included."""
    commands = [["ZADD", "z", (i * 37) % 101, f"member:{i}"] for i in range(300)]
    commands += [["ZREM", "z", f"member:{i}"] for i in range(0, 330, 2)]
    commands += [["ZRANK", "z", f"member:{i}"] for i in range(0, 330, 7)]
    commands += [["ZREM", "z", f"member:{i}"] for i in range(1, 330, 3)]
    commands += [["ZSCORE", "z", f"member:{i}"] for i in range(0, 330, 5)]
    commands += [["ZCARD", "z"], ["ZRANGE", "z", 0, -1, "WITHSCORES"], ["ZREM", "z", "nope"]]
    same(fridge, redis_server, commands)


def test_a_large_sorted_set_answers_as_redis(fridge, redis_server):
    # From 128 members a sorted set carries an index (lookups, ranks and places through it,
    # rewritten by each one-member write): random writes and reads on a set growing to 400
    # members, with ties of score, answer as Redis's skiplist does.
    import random
    rnd = random.Random(7)
    cmds = [["ZADD", "big"] + [x for i in range(130) for x in (i % 7, f"m{i:03}")]]
    for _ in range(600):
        m, score = f"m{rnd.randrange(400):03}", rnd.choice([rnd.randrange(-50, 50), rnd.random() * 100])
        cmds.append(rnd.choice([
            ["ZADD", "big", score, m], ["ZADD", "big", "CH", score, m], ["ZADD", "big", "NX", score, m],
            ["ZADD", "big", "XX", "GT", score, m], ["ZADD", "big", "INCR", score, m],
            ["ZINCRBY", "big", score, m], ["ZINCRBY", "big", 0, m], ["ZSCORE", "big", m],
            ["ZRANK", "big", m], ["ZREVRANK", "big", m], ["ZMSCORE", "big", m, "m000", "zz"],
            ["ZREM", "big", m], ["ZCARD", "big"],
        ]))
    cmds += [["ZRANGE", "big", 0, -1, "WITHSCORES"], ["ZRANGE", "big", 100, 120],
             ["ZRANGE", "big", 10, 20, "BYSCORE", "LIMIT", 3, 5], ["OBJECT", "ENCODING", "big"]]
    same(fridge, redis_server, cmds)


def test_ranges_answer_as_redis(fridge, redis_server):
    members = [x for i, m in enumerate("abcdefg") for x in (i % 4, m)]
    same(fridge, redis_server, [
        ["ZADD", "z"] + members,
        ["ZRANGE", "z", 0, -1], ["ZRANGE", "z", 1, 3, "WITHSCORES"], ["ZRANGE", "z", -2, -1],
        ["ZRANGE", "z", 5, 1], ["ZRANGE", "z", 0, -1, "REV"], ["ZRANGE", "z", 0, 1, "REV", "WITHSCORES"],
        ["ZRANGE", "z", 1, 2, "BYSCORE"], ["ZRANGE", "z", "(1", 3, "BYSCORE", "WITHSCORES"],
        ["ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", 2, 3],
        ["ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", 1, 2],
        ["ZRANGE", "z", 3, "(1", "BYSCORE", "REV"], ["ZRANGE", "z", "[b", "(e", "BYLEX"],
        ["ZRANGE", "z", "-", "+", "BYLEX", "LIMIT", 1, 2], ["ZRANGE", "z", "+", "[c", "BYLEX", "REV"],
        ["ZRANGE", "z", 0, 1, "LIMIT", 0, 1], ["ZRANGE", "z", 0, 1, "LIMIT", 0, -1],
        ["ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"], ["ZRANGE", "z", "x", 1, "BYSCORE"],
        ["ZRANGE", "z", "a", "+", "BYLEX"], ["ZRANGE", "z", 0, 1, "BYSCORE", "BYLEX"],
        ["ZRANGE", "z", 0, 1, "REV", "REV"], ["ZRANGE", "z", "x", 1], ["ZRANGE", "nope", 0, -1],
        ["ZRANGE", "z", 0, -1, "BYSCORE", "LIMIT", -1, 2], ["ZRANGE", "z", 0, -1, "BYSCORE", "LIMIT", 0, 0],
        ["ZREVRANGE", "z", 0, 2, "WITHSCORES"], ["ZREVRANGE", "z", 0, 2, "REV"],
        ["ZRANGEBYSCORE", "z", 1, 2, "WITHSCORES", "LIMIT", 0, 2], ["ZRANGEBYSCORE", "z", 1, 2, "BYLEX"],
        ["ZREVRANGEBYSCORE", "z", 2, 1], ["ZREVRANGEBYSCORE", "z", "(2", "-inf", "WITHSCORES"],
        ["ZRANGEBYLEX", "z", "[a", "[c"], ["ZREVRANGEBYLEX", "z", "[c", "-", "LIMIT", 0, 2],
        ["ZRANGEBYLEX", "z", "a", "c"],
        ["ZCOUNT", "z", 1, 2], ["ZCOUNT", "z", "(1", "+inf"], ["ZCOUNT", "z", "x", 1], ["ZCOUNT", "nope", 0, 1],
        ["ZLEXCOUNT", "z", "-", "+"], ["ZLEXCOUNT", "z", "(a", "[c"], ["ZLEXCOUNT", "z", "a", "+"],
        ["ZRANGESTORE", "dst", "z", 1, 2, "BYSCORE"], ["ZRANGE", "dst", 0, -1, "WITHSCORES"],
        ["ZRANGESTORE", "dst", "z", 0, 0], ["ZRANGE", "dst", 0, -1],
        ["ZRANGESTORE", "dst", "nope", 0, -1], ["EXISTS", "dst"],
        ["ZRANGESTORE", "dst", "z", 0, 1, "WITHSCORES"],
    ])


def test_removals_and_pops_answer_as_redis(fridge, redis_server):
    members = [x for i, m in enumerate("abcdefgh") for x in (i, m)]
    same(fridge, redis_server, [
        ["ZADD", "z"] + members,
        ["ZREMRANGEBYRANK", "z", 0, 1], ["ZREMRANGEBYSCORE", "z", "(6", "+inf"],
        ["ZREMRANGEBYLEX", "z", "[c", "(e"], ["ZRANGE", "z", 0, -1, "WITHSCORES"],
        ["ZREMRANGEBYRANK", "z", "x", 1], ["ZREMRANGEBYSCORE", "z", "x", 1],
        ["ZREMRANGEBYLEX", "z", "x", "+"], ["ZREMRANGEBYRANK", "nope", 0, 1],
        ["ZPOPMIN", "z"], ["ZPOPMAX", "z"], ["ZADD", "z", 10, "x", 11, "y", 12, "w"],
        ["ZPOPMIN", "z", 2], ["ZPOPMAX", "z", 5], ["ZPOPMIN", "z"], ["EXISTS", "z"],
        ["ZPOPMIN", "nope"], ["ZPOPMIN", "nope", 2], ["ZPOPMIN", "z", -1], ["ZPOPMIN", "z", 0],
        ["ZPOPMIN", "z", "x"], ["ZPOPMIN", "z", 1, 2],
        ["ZADD", "a", 1, "x", 2, "y"], ["ZADD", "b", 3, "z"],
        ["ZMPOP", 2, "nope", "a", "MIN"], ["ZMPOP", 2, "nope", "a", "MAX", "COUNT", 5],
        ["ZMPOP", 1, "nope", "MIN"], ["ZMPOP", 0, "a", "MIN"], ["ZMPOP", 3, "a", "MIN"],
        ["ZMPOP", 1, "b", "UP"], ["ZMPOP", 1, "b", "MIN", "COUNT", 0], ["ZMPOP", 1, "b", "MIN", "FOO", 1],
        ["SET", "s", "x"], ["ZMPOP", 2, "s", "b", "MIN"], ["ZMPOP", 2, "b", "s", "MIN"],
    ])


def test_the_algebra_answers_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["ZADD", "a", 1, "x", 2, "y", 3, "z"], ["ZADD", "b", 10, "y", 20, "z", 30, "w"],
        ["SADD", "s", "x", "w", "q"],
        ["ZUNION", 2, "a", "b", "WITHSCORES"], ["ZUNION", 2, "a", "b", "WEIGHTS", 2, 0.5, "WITHSCORES"],
        ["ZUNION", 2, "a", "b", "AGGREGATE", "MAX", "WITHSCORES"], ["ZUNION", 3, "a", "b", "s"],
        ["ZINTER", 2, "a", "b", "WITHSCORES"], ["ZINTER", 2, "a", "b", "AGGREGATE", "MIN", "WITHSCORES"],
        ["ZINTER", 2, "a", "s", "WITHSCORES"], ["ZDIFF", 2, "a", "b", "WITHSCORES"], ["ZDIFF", 1, "b"],
        ["ZDIFF", 2, "a", "b", "WEIGHTS", 1, 1], ["ZUNION", 2, "a", "nope", "WITHSCORES"],
        ["ZINTER", 2, "a", "nope"], ["ZUNIONSTORE", "d", 2, "a", "b"], ["ZRANGE", "d", 0, -1, "WITHSCORES"],
        ["ZINTERSTORE", "d", 2, "a", "b", "WEIGHTS", 1, -1], ["ZRANGE", "d", 0, -1, "WITHSCORES"],
        ["ZDIFFSTORE", "d", 2, "a", "a"], ["EXISTS", "d"], ["ZINTERCARD", 2, "a", "b"],
        ["ZINTERCARD", 2, "a", "b", "LIMIT", 1], ["ZINTERCARD", 0, "a"], ["ZINTERCARD", 3, "a", "b"],
        ["ZINTERCARD", 2, "a", "b", "LIMIT", -1], ["ZUNION", 0, "a"], ["ZUNIONSTORE", "d", 0, "a"],
        ["ZUNION", 3, "a", "b"], ["ZUNION", 2, "a", "b", "WEIGHTS", 1], ["ZUNION", 2, "a", "b", "WEIGHTS", 1, "x"],
        ["ZUNION", 2, "a", "b", "AGGREGATE", "AVG"], ["ZUNIONSTORE", "d", 2, "a", "b", "WITHSCORES"],
        ["SET", "str", "v"], ["ZUNION", 2, "a", "str"], ["ZADD", "i", "inf", "p"], ["ZADD", "j", "-inf", "p"],
        ["ZUNION", 2, "i", "j", "WITHSCORES"], ["ZUNION", 2, "i", "j", "WEIGHTS", 0, 1, "WITHSCORES"],
    ])


def test_every_type_meets_wrongtype(fridge, redis_server):
    same(fridge, redis_server, [
        ["SET", "str", "v"], ["ZADD", "z", 1, "a"], ["ZADD", "str", 1, "a"], ["ZRANGE", "str", 0, 1],
        ["ZSCORE", "str", "a"], ["ZCARD", "str"], ["ZREM", "str", "a"], ["ZINCRBY", "str", 1, "a"],
        ["ZPOPMIN", "str"], ["ZRANDMEMBER", "str"], ["ZSCAN", "str", 0], ["ZRANGESTORE", "d", "str", 0, 1],
        ["GET", "z"], ["LPUSH", "z", "x"], ["SADD", "z", "x"], ["HSET", "z", "f", "v"], ["TYPE", "z"],
        ["OBJECT", "ENCODING", "z"], ["SORT", "z"], ["ZADD", "big"] + [x for i in range(129) for x in (i, f"m{i}")],
        ["OBJECT", "ENCODING", "big"], ["ZADD", "long", 1, "m" * 65], ["OBJECT", "ENCODING", "long"],
    ])


def test_sort_sorts_a_sorted_set_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["ZADD", "z", 3, "10", 1, "2", 2, "33"], ["SORT", "z"], ["SORT", "z", "DESC"],
        ["SORT", "z", "ALPHA"], ["SORT", "z", "BY", "nosort"], ["SORT", "z", "BY", "nosort", "DESC"],
        ["SORT", "z", "BY", "nosort", "LIMIT", 1, 1],
    ])


def test_unordered_replies_hold_redis_s_members(fridge, redis_server):
    for addr in (fridge, redis_server):
        for protocol in (2, 3):
            r = redis.Redis(*addr, protocol=protocol)
            r.flushall()
            r.zadd("z", {f"m{i}": i for i in range(300)})
            picked = r.zrandmember("z", 10, withscores=True)
            # Flat in RESP2 (redis-py leaves it so), pairs in RESP3.
            assert len(picked) == (20 if protocol == 2 else 10)
            assert len(r.zrandmember("z", -500)) == 500
            assert r.zrandmember("nope") is None and r.zrandmember("nope", 3) == []
            seen = dict(r.zscan_iter("z", count=20))
            assert seen == {f"m{i}".encode(): float(i) for i in range(300)}
            assert dict(r.zscan_iter("z", match="m29*")) == {b"m29": 29.0, **{f"m29{i}".encode(): 290.0 + i for i in range(10)}}


def test_dump_and_restore_carry_sorted_sets_both_ways(fridge, redis_server):
    ours, theirs = redis.Redis(*fridge), redis.Redis(*redis_server)
    for r in (ours, theirs):
        r.flushall()
    ours.zadd("z", {"a": 1.5, "b": -2, "c": 1e300})
    theirs.restore("z", 0, ours.dump("z"))
    assert theirs.zrange("z", 0, -1, withscores=True) == ours.zrange("z", 0, -1, withscores=True)
    theirs.zadd("big", {f"m{i}": i for i in range(200)})
    ours.restore("big", 0, theirs.dump("big"))
    assert ours.zrange("big", 0, -1, withscores=True) == theirs.zrange("big", 0, -1, withscores=True)
    # A small sorted set Redis keeps as a listpack (type 17): scores as integers or text.
    theirs.zadd("small", {"a": 1, "b": -2.5, "c": float("inf"), "d": 1e-5})
    assert theirs.object("encoding", "small") == b"listpack"
    ours.restore("small", 0, theirs.dump("small"))
    assert ours.zrange("small", 0, -1, withscores=True) == theirs.zrange("small", 0, -1, withscores=True)


def test_sorted_set_commands_publish_keyspace_events(fridge, redis_server):
    for addr in (fridge, redis_server):
        r = redis.Redis(*addr)
        r.flushall()
        r.config_set("notify-keyspace-events", "KEA")
        p = r.pubsub()
        p.psubscribe("__keyevent@0__:*")
        p.get_message(timeout=2)
        r.zadd("z", {"a": 1, "b": 2, "c": 3})
        r.zadd("z", {"a": 1})
        r.zincrby("z", 1, "a")
        r.zincrby("z", 0, "a")  # changes nothing: no event
        r.zrem("z", "a")
        r.zremrangebyscore("z", 0, 2)
        r.zrangestore("d", "z", 0, -1)
        r.zunionstore("u", ["z", "d"])
        r.zpopmin("z")
        r.zpopmax("u", 5)
        events = []
        while (m := p.get_message(timeout=1)) is not None:
            events.append((m["channel"].split(b":", 1)[1], m["data"]))
        r.config_set("notify-keyspace-events", "")
        p.close()
        assert events == [
            (b"zadd", b"z"), (b"zincr", b"z"), (b"zrem", b"z"), (b"zremrangebyscore", b"z"),
            (b"zrangestore", b"d"), (b"zunionstore", b"u"), (b"zpopmin", b"z"), (b"del", b"z"),
            (b"zpopmax", b"u"), (b"del", b"u"),
        ], addr
