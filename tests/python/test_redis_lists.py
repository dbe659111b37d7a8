"""Lists, side by side with Debian's redis-server 7.0.15: the same requests, the same reply
bytes, in RESP2 and RESP3 (a list's order is defined, so every reply is compared byte for
byte). Skipped without redis-server."""

import pytest
import redis

from test_redis_parity import redis_server, same  # noqa: F401


def test_push_pop_and_reads_answer_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["LPUSH", "l", "a", "b", "c"], ["RPUSH", "l", "x", "y"], ["LRANGE", "l", 0, -1],
        ["LLEN", "l"], ["LLEN", "nope"], ["LPUSHX", "nope", "a"], ["RPUSHX", "nope", "a"],
        ["EXISTS", "nope"], ["LPUSHX", "l", "p"], ["RPUSHX", "l", "q", "r"],
        ["LRANGE", "l", 0, -1], ["LRANGE", "l", -3, -2], ["LRANGE", "l", 5, 100],
        ["LRANGE", "l", 100, 200], ["LRANGE", "l", -100, 1], ["LRANGE", "l", 3, 1],
        ["LRANGE", "l", "x", 1], ["LRANGE", "nope", 0, -1],
        ["LINDEX", "l", 0], ["LINDEX", "l", -1], ["LINDEX", "l", 99], ["LINDEX", "l", -99],
        ["LINDEX", "nope", 0], ["LINDEX", "l", "x"],
        ["LPOP", "l"], ["RPOP", "l"], ["LPOP", "l", 2], ["RPOP", "l", 2], ["LRANGE", "l", 0, -1],
        ["LPOP", "l", 0], ["LPOP", "nope"], ["LPOP", "nope", 2], ["LPOP", "nope", 0],
        ["LPOP", "l", -1], ["LPOP", "l", "x"], ["LPOP", "l", 1, 2], ["RPOP", "l", 99],
        ["EXISTS", "l"], ["LPUSH", "l"], ["RPOP"],
    ])


def test_edits_answer_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["RPUSH", "l", "a", "b", "a", "c", "a", "d"],
        ["LSET", "l", 1, "B"], ["LSET", "l", -1, "D"], ["LSET", "l", 99, "x"],
        ["LSET", "nope", 0, "x"], ["LSET", "l", "x", "y"], ["LRANGE", "l", 0, -1],
        ["LREM", "l", 1, "a"], ["LRANGE", "l", 0, -1], ["LREM", "l", -1, "a"],
        ["LRANGE", "l", 0, -1], ["RPUSH", "l", "a", "a"], ["LREM", "l", 0, "a"],
        ["LRANGE", "l", 0, -1], ["LREM", "l", 0, "zz"], ["LREM", "nope", 0, "a"],
        ["LREM", "l", "x", "a"],
        ["LINSERT", "l", "BEFORE", "c", "1"], ["LINSERT", "l", "after", "c", "2"],
        ["LINSERT", "l", "AFTER", "zz", "3"], ["LINSERT", "nope", "AFTER", "a", "3"],
        ["LINSERT", "l", "MIDDLE", "c", "3"], ["LRANGE", "l", 0, -1],
        ["LTRIM", "l", 1, -2], ["LRANGE", "l", 0, -1], ["LTRIM", "l", 0, 0],
        ["LRANGE", "l", 0, -1], ["LTRIM", "nope", 0, 1], ["LTRIM", "l", "x", 1],
        ["LTRIM", "l", 5, 1], ["EXISTS", "l"],
    ])


def test_lpos_answers_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["RPUSH", "l", "a", "b", "c", "1", "2", "3", "c", "c"],
        ["LPOS", "l", "c"], ["LPOS", "l", "c", "RANK", 2], ["LPOS", "l", "c", "RANK", -1],
        ["LPOS", "l", "c", "RANK", -2], ["LPOS", "l", "c", "COUNT", 2],
        ["LPOS", "l", "c", "COUNT", 0], ["LPOS", "l", "c", "COUNT", 0, "RANK", -1],
        ["LPOS", "l", "c", "MAXLEN", 3], ["LPOS", "l", "c", "COUNT", 0, "MAXLEN", 7],
        ["LPOS", "l", "c", "RANK", -1, "MAXLEN", 1], ["LPOS", "l", "zz"],
        ["LPOS", "l", "zz", "COUNT", 1], ["LPOS", "nope", "a"], ["LPOS", "nope", "a", "COUNT", 1],
        ["LPOS", "l", "c", "RANK", 0], ["LPOS", "l", "c", "COUNT", -1],
        ["LPOS", "l", "c", "MAXLEN", -1], ["LPOS", "l", "c", "RANK"],
        ["LPOS", "l", "c", "FOO", 1], ["LPOS", "l", "c", "RANK", "x"],
        ["LPOS", "l", "c", "RANK", -9223372036854775808], ["LPOS", "l", "c", "RANK", 99],
    ])


def test_moves_answer_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["RPUSH", "a", "1", "2", "3"], ["LMOVE", "a", "b", "LEFT", "RIGHT"],
        ["LMOVE", "a", "b", "RIGHT", "LEFT"], ["LRANGE", "a", 0, -1], ["LRANGE", "b", 0, -1],
        ["LMOVE", "a", "a", "LEFT", "RIGHT"], ["RPUSH", "a", "4", "5"],
        ["LMOVE", "a", "a", "LEFT", "RIGHT"], ["LRANGE", "a", 0, -1],
        ["LMOVE", "a", "a", "RIGHT", "LEFT"], ["LRANGE", "a", 0, -1],
        ["LMOVE", "nope", "a", "LEFT", "LEFT"], ["LMOVE", "a", "b", "UP", "LEFT"],
        ["SET", "s", "x"], ["LMOVE", "a", "s", "LEFT", "LEFT"], ["LMOVE", "s", "a", "LEFT", "LEFT"],
        ["LMOVE", "nope", "s", "LEFT", "LEFT"], ["LRANGE", "a", 0, -1],
        ["LMOVE", "s", "s", "LEFT", "RIGHT"], ["RPOPLPUSH", "s", "s"], ["GET", "s"],
        ["RPOPLPUSH", "nope", "nope"], ["LMOVE", "nope", "nope", "LEFT", "LEFT"],
        ["EXISTS", "nope"],
        ["RPOPLPUSH", "a", "c"], ["RPOPLPUSH", "a", "c"], ["RPOPLPUSH", "a", "c"],
        ["RPOPLPUSH", "a", "c"], ["EXISTS", "a"], ["LRANGE", "c", 0, -1],
        ["LMPOP", 2, "nope", "c", "LEFT"], ["LMPOP", 2, "nope", "c", "RIGHT", "COUNT", 2],
        ["LMPOP", 1, "nope", "LEFT"], ["LMPOP", 2, "s", "c", "LEFT"],
        ["LMPOP", 2, "c", "s", "LEFT", "COUNT", 10], ["LMPOP", 0, "c", "LEFT"],
        ["LMPOP", 3, "c", "LEFT"], ["LMPOP", 1, "c", "UP"], ["LMPOP", 1, "c", "LEFT", "COUNT", 0],
        ["LMPOP", 1, "c", "LEFT", "COUNT"], ["LMPOP", 1, "c", "LEFT", "FOO", 1],
        ["LMPOP", "x", "c", "LEFT"],
    ])


def test_every_type_meets_wrongtype(fridge, redis_server):
    same(fridge, redis_server, [
        ["SET", "str", "v"], ["RPUSH", "l", "a"], ["LPUSH", "str", "x"], ["RPUSHX", "str", "x"],
        ["LPOP", "str"], ["LPOP", "str", 0], ["LLEN", "str"], ["LRANGE", "str", 0, 1],
        ["LINDEX", "str", 0], ["LSET", "str", 0, "x"], ["LTRIM", "str", 0, 1],
        ["LREM", "str", 0, "x"], ["LINSERT", "str", "BEFORE", "a", "b"], ["LPOS", "str", "a"],
        ["GET", "l"], ["HGET", "l", "a"], ["SADD", "l", "a"], ["TYPE", "l"],
        ["OBJECT", "ENCODING", "l"], ["SORT", "str"],
    ])


def test_dump_and_restore_carry_lists_to_redis(fridge, redis_server):
    ours, theirs = redis.Redis(*fridge), redis.Redis(*redis_server)
    for r in (ours, theirs):
        r.flushall()
    ours.rpush("l", "a", "b", "a", 12, "long" * 30)
    theirs.restore("l", 0, ours.dump("l"))
    assert theirs.lrange("l", 0, -1) == ours.lrange("l", 0, -1)
    ours.restore("l2", 0, ours.dump("l"))
    assert ours.lrange("l2", 0, -1) == ours.lrange("l", 0, -1)
    # Redis 7.0 dumps a list as a quicklist (type 18) of listpack nodes, which fridge reads
    # (plain nodes, for elements of 1 GB, are checked in `resp/dump.rs`).
    theirs.rpush("q", "x", 7, -1000, *[f"e{i}" for i in range(3000)])
    theirs.rpush("q", "big" * 4000, "after")
    ours.restore("q", 0, theirs.dump("q"))
    assert ours.lrange("q", 0, -1) == theirs.lrange("q", 0, -1)
    assert ours.llen("q") == 3005


def test_list_commands_publish_keyspace_events(fridge, redis_server):
    for addr in (fridge, redis_server):
        r = redis.Redis(*addr)
        r.flushall()
        r.config_set("notify-keyspace-events", "KEA")
        p = r.pubsub()
        p.psubscribe("__keyevent@0__:*")
        p.get_message(timeout=2)
        r.lpush("l", "a", "b")
        r.rpush("l", "c")
        r.lset("l", 0, "x")
        r.linsert("l", "BEFORE", "x", "w")
        r.lrem("l", 0, "w")
        r.ltrim("l", 0, 1)
        r.lmove("l", "m", "LEFT", "RIGHT")
        r.rpop("l")
        r.lmpop(1, "m", direction="LEFT")
        events = []
        while (m := p.get_message(timeout=1)) is not None:
            events.append((m["channel"].split(b":", 1)[1], m["data"]))
        r.config_set("notify-keyspace-events", "")
        p.close()
        assert events == [
            (b"lpush", b"l"), (b"rpush", b"l"), (b"lset", b"l"), (b"linsert", b"l"),
            (b"lrem", b"l"), (b"ltrim", b"l"), (b"rpush", b"m"), (b"lpop", b"l"),
            (b"rpop", b"l"), (b"del", b"l"), (b"lpop", b"m"), (b"del", b"m"),
        ], addr


def test_sort_answers_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["RPUSH", "l", "3", "1", "2", "10", "-1.5"], ["SORT", "l"], ["SORT", "l", "DESC"],
        ["SORT", "l", "ALPHA"], ["SORT", "l", "ALPHA", "DESC"], ["SORT", "l", "LIMIT", 1, 2],
        ["SORT", "l", "LIMIT", -5, 2], ["SORT", "l", "LIMIT", 3, -1], ["SORT", "l", "LIMIT", 9, 2],
        ["SORT", "l", "LIMIT", 0, 0], ["SORT", "l", "BY", "nosort"],
        ["SORT", "l", "BY", "nosort", "LIMIT", 1, 2],
        ["MSET", "w_3", "1", "w_1", "3", "w_2", "2", "w_10", "0", "o_3", "three", "o_1", "one"],
        ["SORT", "l", "BY", "w_*"], ["SORT", "l", "BY", "w_*", "DESC"],
        ["SORT", "l", "BY", "w_*", "GET", "o_*", "GET", "#"], ["SORT", "l", "GET", "o_*"],
        ["HSET", "h_3", "f", "30"], ["HSET", "h_1", "f", "10"], ["HSET", "h_2", "f", "20"],
        ["HSET", "h_10", "f", "5"], ["HSET", "h_-1.5", "f", "1"],
        ["SORT", "l", "BY", "h_*->f"], ["SORT", "l", "BY", "h_*->f", "GET", "h_*->f"],
        ["SORT", "l", "BY", "w_*", "STORE", "dst"], ["LRANGE", "dst", 0, -1], ["TYPE", "dst"],
        ["SORT", "l", "GET", "o_*", "STORE", "dst"], ["LRANGE", "dst", 0, -1],
        ["RPUSH", "bad", "1", "x"], ["SORT", "bad"], ["SORT", "bad", "ALPHA"],
        ["SORT", "bad", "BY", "nosort"],
        ["SADD", "s", "5", "2", "9"], ["SORT", "s"], ["SORT", "s", "DESC", "LIMIT", 0, 2],
        ["SORT", "s", "BY", "nosort", "STORE", "dst2"], ["LRANGE", "dst2", 0, -1],
        ["SORT_RO", "s"], ["SORT_RO", "s", "STORE", "x"], ["RPUSH", "e", ""],
        ["SORT", "e"], ["SET", "str", "x"], ["SORT", "str"], ["HSET", "h", "a", "1"],
        ["SORT", "h"], ["SORT", "nope", "STORE", "dst"], ["EXISTS", "dst"],
    ])
