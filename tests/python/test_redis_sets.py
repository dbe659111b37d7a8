"""Sets, side by side with Debian's redis-server 7.0.15: the same requests, the same reply
bytes in RESP2 and RESP3 where the reply's order is defined, the same members (compared as
sets, through redis-py) where it is Redis's hash table's. Skipped without redis-server."""

import pytest
import redis

from test_redis_parity import redis_server, same  # noqa: F401


def test_set_commands_answer_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["SADD", "s", "1", "2", "3", "2"], ["SADD", "s", "3", "4"], ["SCARD", "s"],
        ["SISMEMBER", "s", "2"], ["SISMEMBER", "s", "9"], ["SISMEMBER", "nope", "1"],
        ["SMISMEMBER", "s", "1", "9", "4"], ["SMISMEMBER", "nope", "1", "2"],
        ["SMEMBERS", "s"], ["SMEMBERS", "nope"], ["SCARD", "nope"],
        ["SREM", "s", "1", "9", "1"], ["SMEMBERS", "s"], ["SREM", "nope", "a"],
        ["SREM", "s", "2", "3", "4"], ["EXISTS", "s"],
        ["SADD", "one", "x"], ["SMEMBERS", "one"], ["SPOP", "one"], ["EXISTS", "one"],
        ["SPOP", "nope"], ["SPOP", "nope", 3], ["SPOP", "one", -1], ["SPOP", "one", "x"],
        ["SPOP", "one", 1, 2], ["SADD", "one", "y"], ["SPOP", "one", 0], ["SPOP", "one", 5],
        ["EXISTS", "one"],
        ["SRANDMEMBER", "nope"], ["SRANDMEMBER", "nope", 3], ["SRANDMEMBER", "nope", -3],
        ["SADD", "r", "a"], ["SRANDMEMBER", "r"], ["SRANDMEMBER", "r", 3],
        ["SRANDMEMBER", "r", -3], ["SRANDMEMBER", "r", 0], ["SRANDMEMBER", "r", "x"],
        ["SRANDMEMBER", "r", 1, 2], ["SRANDMEMBER", "r", -9223372036854775808],
        ["SADD", "s"], ["SREM", "s"], ["SISMEMBER", "s"], ["SMISMEMBER", "s"],
        ["TYPE", "r"], ["OBJECT", "ENCODING", "r"],
        ["SADD", "ints", "1", "2", "-3"], ["OBJECT", "ENCODING", "ints"],
        ["SADD", "ints", "007"], ["OBJECT", "ENCODING", "ints"],
    ])


def test_smove_and_the_algebra_answer_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["SADD", "a", "1"], ["SADD", "b", "2"], ["SMOVE", "a", "b", "1"], ["EXISTS", "a"],
        ["SCARD", "b"], ["SMOVE", "b", "b", "1"], ["SMOVE", "b", "b", "9"],
        ["SMOVE", "nope", "b", "1"], ["SMOVE", "b", "c", "9"], ["SET", "str", "x"],
        ["SMOVE", "b", "str", "1"], ["SMOVE", "str", "b", "1"], ["SMOVE", "nope", "str", "1"],
        ["SMOVE", "b", "c", "2"], ["SISMEMBER", "c", "2"],
        ["SADD", "x", "1", "2", "3"], ["SADD", "y", "2", "3", "4"], ["SADD", "z", "3"],
        ["SINTERCARD", 2, "x", "y"], ["SINTERCARD", 3, "x", "y", "z"],
        ["SINTERCARD", 2, "x", "y", "LIMIT", 1], ["SINTERCARD", 2, "x", "y", "LIMIT", 0],
        ["SINTERCARD", 2, "x", "nope"], ["SINTERCARD", 0, "x"], ["SINTERCARD", 3, "x", "y"],
        ["SINTERCARD", 2, "x", "y", "LIMIT", -1], ["SINTERCARD", 2, "x", "y", "FOO", 1],
        ["SINTERCARD", 2, "x", "str"], ["SINTERCARD", "x", "x"],
        ["SINTERSTORE", "d", "x", "y"], ["SCARD", "d"], ["SUNIONSTORE", "d", "x", "y"],
        ["SCARD", "d"], ["SDIFFSTORE", "d", "x", "y"], ["SMEMBERS", "d"],
        ["SINTERSTORE", "d", "x", "nope"], ["EXISTS", "d"], ["SDIFFSTORE", "d", "nope", "x"],
        ["SINTER", "x", "str"], ["SUNION", "nope", "str"], ["SDIFF", "str"],
        ["SINTERSTORE", "d", "x", "str"], ["SINTER", "nope", "x"], ["SDIFF", "nope", "x"],
        ["SET", "d", "string"], ["SUNIONSTORE", "d", "z"], ["TYPE", "d"], ["SMEMBERS", "d"],
        ["SINTER", "z"], ["SUNION", "z", "z"], ["SDIFF", "z", "z"],
    ])


def test_one_member_writes_past_the_index_threshold_answer_as_redis(fridge, redis_server):
    """A set grown one member at a time past 128 members (from where fridge's sets carry an
    index, edited by each one-member write), shrunk by one-member SREMs and SMOVEs back below
    it: every reply the same bytes (integers), and the same members at the end."""
    commands = [["SADD", "s", f"member:{i}"] for i in range(300)]
    commands += [["SADD", "s", f"member:{i}"] for i in range(0, 320, 9)]
    commands += [["SISMEMBER", "s", f"member:{i}"] for i in range(0, 330, 7)]
    commands += [["SREM", "s", f"member:{i}"] for i in range(0, 330, 2)]
    commands += [["SMOVE", "s", "t", f"member:{i}"] for i in range(1, 330, 5)]
    commands += [["SREM", "s", f"member:{i}"] for i in range(3, 330, 4)]
    commands += [["SMISMEMBER", "s"] + [f"member:{i}" for i in range(330)]]
    commands += [["SCARD", "s"], ["SCARD", "t"]]
    same(fridge, redis_server, commands)
    contents = [redis.Redis(*addr).smembers("s") for addr in (fridge, redis_server)]
    assert contents[0] == contents[1]
    assert 40 < len(contents[0]) < 128


def test_every_type_meets_wrongtype(fridge, redis_server):
    same(fridge, redis_server, [
        ["SET", "str", "v"], ["HSET", "h", "f", "v"], ["SADD", "s", "m"],
        ["SADD", "str", "m"], ["SADD", "h", "m"], ["SMEMBERS", "h"], ["SCARD", "str"],
        ["SISMEMBER", "h", "f"], ["SPOP", "str"], ["SRANDMEMBER", "h"], ["SREM", "str", "m"],
        ["SSCAN", "h", 0], ["HSET", "s", "f", "v"], ["GET", "s"], ["HGETALL", "s"],
        ["TYPE", "s"], ["RENAME", "s", "s2"], ["TYPE", "s2"], ["SMEMBERS", "s2"],
    ])


def test_unordered_replies_hold_redis_s_members(fridge, redis_server):
    for addr in (fridge, redis_server):
        for protocol in (2, 3):
            r = redis.Redis(*addr, protocol=protocol)
            r.flushall()
            r.sadd("a", *[f"m{i}" for i in range(50)])
            r.sadd("b", *[f"m{i}" for i in range(25, 80)])
            assert set(r.smembers("a")) == {f"m{i}".encode() for i in range(50)}
            assert set(r.sinter("a", "b")) == {f"m{i}".encode() for i in range(25, 50)}
            assert set(r.sunion("a", "b")) == {f"m{i}".encode() for i in range(80)}
            assert set(r.sdiff("a", "b")) == {f"m{i}".encode() for i in range(25)}
            picked = r.srandmember("a", 10)
            assert len(picked) == 10 and len(set(picked)) == 10 and set(picked) <= set(r.smembers("a"))
            assert len(r.srandmember("a", -100)) == 100
            popped = r.spop("a", 5)
            assert len(popped) == 5 and r.scard("a") == 45
            assert not set(popped) & set(r.smembers("a"))
            seen = set()
            for m in r.sscan_iter("b", count=7):
                seen.add(m)
            assert seen == {f"m{i}".encode() for i in range(25, 80)}
            assert set(r.sscan_iter("b", match="m3*")) == {f"m{i}".encode() for i in range(30, 40)}


def test_a_large_set_scans_whole_while_it_changes(fridge, redis_server):
    for addr in (fridge, redis_server):
        r = redis.Redis(*addr)
        r.flushall()
        members = {f"member:{i}".encode() for i in range(3000)}
        r.sadd("big", *members)
        seen, cursor, calls = set(), 0, 0
        while True:
            cursor, page = r.sscan("big", cursor, count=50)
            seen.update(page)
            calls += 1
            r.sadd("big", f"extra:{calls}")
            if cursor == 0:
                break
        assert members <= seen
        assert r.smismember("big", ["member:1", "nope", "member:2999"]) == [1, 0, 1]


def test_dump_and_restore_carry_sets_both_ways(fridge, redis_server):
    ours, theirs = redis.Redis(*fridge), redis.Redis(*redis_server)
    for r in (ours, theirs):
        r.flushall()
    words = {b"apple", b"pear", b"fig"}
    ours.sadd("s", *words)
    theirs.restore("s", 0, ours.dump("s"))
    assert theirs.smembers("s") == words
    theirs.sadd("t", *words, b"plum")
    ours.restore("t", 0, theirs.dump("t"))
    assert ours.type("t") == b"set" and ours.smembers("t") == words | {b"plum"}
    # Redis dumps a set of integers as an intset (type 11), which fridge reads too.
    theirs.sadd("ints", 1, -2, 3, 2**40)
    assert theirs.object("encoding", "ints") == b"intset"
    ours.restore("ints", 0, theirs.dump("ints"))
    assert ours.smembers("ints") == theirs.smembers("ints")


def test_set_commands_publish_keyspace_events(fridge, redis_server):
    for addr in (fridge, redis_server):
        r = redis.Redis(*addr)
        r.flushall()
        r.config_set("notify-keyspace-events", "KEA")
        p = r.pubsub()
        p.psubscribe("__keyevent@0__:*")
        p.get_message(timeout=2)
        r.sadd("s", "a", "b")
        r.sadd("s", "a")
        r.srem("s", "a")
        r.sadd("t", "x")
        r.smove("s", "t", "b")
        r.sinterstore("d", "t", "t")
        r.sunionstore("d", "nope")
        r.spop("t", 2)
        events = []
        while (m := p.get_message(timeout=1)) is not None:
            events.append((m["channel"].split(b":", 1)[1], m["data"]))
        r.config_set("notify-keyspace-events", "")
        p.close()
        assert events == [
            (b"sadd", b"s"), (b"srem", b"s"), (b"sadd", b"t"), (b"srem", b"s"), (b"del", b"s"),
            (b"sadd", b"t"), (b"sinterstore", b"d"), (b"del", b"d"), (b"spop", b"t"),
            (b"del", b"t"),
        ], addr
