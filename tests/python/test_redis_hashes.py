"""Hashes, side by side with Debian's redis-server 7.0.15: the same requests, the same reply
bytes, in RESP2 and RESP3 (`test_redis_parity.same`). Where Redis's order is its hash
table's (hashes past 128 fields), replies are compared as sets. Skipped without
redis-server."""

import socket

import pytest
import redis

from test_redis_parity import Reader, encode, redis_server, run, same  # noqa: F401


def test_hash_commands_answer_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["HSET", "h", "a", "1", "b", "2", "a", "3"], ["HGETALL", "h"], ["HLEN", "h"],
        ["HSET", "h", "c", "x", "a", "4"], ["HGETALL", "h"], ["HKEYS", "h"], ["HVALS", "h"],
        ["HGET", "h", "a"], ["HGET", "h", "zz"], ["HGET", "nope", "a"],
        ["HMGET", "h", "a", "zz", "c"], ["HMGET", "nope", "a", "b"],
        ["HEXISTS", "h", "b"], ["HEXISTS", "h", "zz"], ["HEXISTS", "nope", "a"],
        ["HSTRLEN", "h", "c"], ["HSTRLEN", "h", "zz"], ["HSTRLEN", "nope", "a"],
        ["HSETNX", "h", "a", "9"], ["HSETNX", "h", "d", "9"], ["HSETNX", "new", "f", "v"],
        ["HMSET", "h", "e", "5", "f", "6"], ["HGETALL", "h"],
        ["HDEL", "h", "a", "zz", "a", "b"], ["HGETALL", "h"], ["HDEL", "nope", "a"],
        ["HDEL", "new", "f"], ["EXISTS", "new"], ["HGETALL", "nope"], ["HKEYS", "nope"],
        ["HLEN", "nope"],
        ["HSET", "h"], ["HSET", "h", "a"], ["HSET", "h", "a", "1", "b"], ["HMSET", "h", "a"],
        ["HMSET", "h", "a", "1", "b"], ["HGET", "h"], ["HDEL", "h"], ["HSETNX", "h", "a"],
        ["HSET", "e", "", ""], ["HGETALL", "e"], ["HGET", "e", ""],
        ["HSET", "bin", b"\x00\xff", b"\r\n"], ["HGETALL", "bin"],
    ])


def test_hincrby_and_hincrbyfloat_answer_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["HINCRBY", "h", "n", 5], ["HINCRBY", "h", "n", -7], ["HGET", "h", "n"],
        ["HINCRBY", "h", "n", "x"], ["HINCRBY", "h", "n", "1.5"],
        ["HSET", "h", "s", "abc", "big", "9223372036854775800", "f", "1.5"],
        ["HINCRBY", "h", "s", 1], ["HINCRBY", "h", "big", 7], ["HINCRBY", "h", "big", 8],
        ["HINCRBY", "h", "f", 1], ["HINCRBY", "h", "n", "9223372036854775808"],
        ["HINCRBYFLOAT", "h", "f", "0.1"], ["HINCRBYFLOAT", "h", "g", "3"],
        ["HINCRBYFLOAT", "h", "n", "2.5e3"], ["HINCRBYFLOAT", "h", "s", 1],
        ["HINCRBYFLOAT", "h", "f", "x"], ["HINCRBYFLOAT", "h", "f", "inf"],
        ["HINCRBYFLOAT", "h", "f", "10.5"], ["HINCRBYFLOAT", "h", "f", "-0.25"],
        ["HGETALL", "h"], ["HINCRBY", "h"], ["HINCRBYFLOAT", "h", "f"],
    ])


def test_every_type_meets_wrongtype_as_in_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["SET", "s", "str"], ["HSET", "h", "f", "v"],
        ["HSET", "s", "f", "v"], ["HGET", "s", "f"], ["HMGET", "s", "f"], ["HGETALL", "s"],
        ["HDEL", "s", "f"], ["HLEN", "s"], ["HINCRBY", "s", "f", 1], ["HSCAN", "s", 0],
        ["HRANDFIELD", "s"], ["HEXISTS", "s", "f"], ["HSETNX", "s", "f", "v"],
        ["GET", "h"], ["STRLEN", "h"], ["APPEND", "h", "x"], ["INCR", "h"],
        ["INCRBYFLOAT", "h", 1], ["GETRANGE", "h", 0, 1], ["SETRANGE", "h", 0, "x"],
        ["GETBIT", "h", 0], ["SETBIT", "h", 0, 1], ["BITCOUNT", "h"], ["BITPOS", "h", 1],
        ["BITFIELD", "h", "GET", "u8", 0], ["BITFIELD_RO", "h", "GET", "u8", 0],
        ["BITOP", "AND", "d", "h", "s"], ["LCS", "h", "s"], ["GETDEL", "h"],
        ["GETEX", "h", "EX", 100], ["GETEX", "h"], ["GETSET", "h", "x"],
        ["SET", "h", "x", "GET"], ["SETNX", "h", "x"], ["MGET", "h", "s", "nope"],
        ["SORT", "h"], ["TYPE", "h"], ["TYPE", "s"], ["TYPE", "nope"],
        ["OBJECT", "ENCODING", "h"], ["EXISTS", "h", "s"],
        ["SET", "h", "now a string"], ["TYPE", "h"], ["GET", "h"],
        ["HSET", "h2", "f", "v"], ["SET", "h2", "x", "XX", "KEEPTTL"], ["GET", "h2"],
        ["DEL", "h2"], ["HSET", "h2", "f", "v"], ["DEL", "h2"], ["EXISTS", "h2"],
    ])


def test_generic_commands_work_on_hashes_as_in_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["HSET", "h", "a", "1", "b", "2"], ["EXPIRE", "h", 100], ["TTL", "h"],
        ["EXPIRE", "h", 50, "GT"], ["TTL", "h"], ["HSET", "h", "c", "3"], ["TTL", "h"],
        ["HDEL", "h", "c"], ["TTL", "h"], ["HINCRBY", "h", "a", 1], ["TTL", "h"],
        ["PERSIST", "h"], ["TTL", "h"], ["PEXPIRE", "h", 100000], ["PERSIST", "h"],
        ["RENAME", "h", "h2"], ["TYPE", "h"], ["HGETALL", "h2"], ["COPY", "h2", "h3"],
        ["HGETALL", "h3"], ["COPY", "h2", "h3"], ["SET", "s", "x"], ["COPY", "s", "h3", "REPLACE"],
        ["TYPE", "h3"], ["RENAMENX", "h2", "s"], ["MOVE", "h2", 1], ["SELECT", 1],
        ["HGETALL", "h2"], ["TYPE", "h2"], ["SELECT", 0], ["EXISTS", "h2"],
        ["TOUCH", "h3", "s"], ["UNLINK", "h3"], ["DBSIZE"],
        ["HSET", "gone", "f", "v"], ["EXPIRE", "gone", -1], ["EXISTS", "gone"],
    ])


def test_object_encoding_follows_redis_s_listpack_limits(fridge, redis_server):
    long_value = "v" * 65
    many = ["HSET", "many"] + [x for i in range(513) for x in (f"f{i}", i)]
    same(fridge, redis_server, [
        ["HSET", "small", "a", "1"], ["OBJECT", "ENCODING", "small"],
        ["HSET", "edge", "a", "v" * 64, "b" * 64, "1"], ["OBJECT", "ENCODING", "edge"],
        ["HSET", "longfield", "f" * 65, "1"], ["OBJECT", "ENCODING", "longfield"],
        ["HSET", "long", "a", long_value], ["OBJECT", "ENCODING", "long"],
        many, ["OBJECT", "ENCODING", "many"], ["HLEN", "many"],
    ])


def test_scan_type_finds_hashes(fridge, redis_server):
    commands = [["HSET", f"h{i}", "f", "v"] for i in range(20)]
    commands += [["SET", f"s{i}", "v"] for i in range(20)]
    for addr in (fridge, redis_server):
        r = redis.Redis(*addr)
        r.flushall()
        for c in commands:
            r.execute_command(*c)
        assert set(r.scan_iter(_type="hash")) == {f"h{i}".encode() for i in range(20)}
        assert set(r.scan_iter(_type="string")) == {f"s{i}".encode() for i in range(20)}
        assert set(r.scan_iter(_type="list")) == set()
        assert set(r.scan_iter(_type="nonsense")) == set()


def test_a_large_hash_holds_every_field(fridge, redis_server):
    """Past Redis's listpack limits (512 fields), its order is its hash table's: compare as sets, and
    HSCAN from either server must return every field present for the whole scan."""
    fields = {f"field:{i}".encode(): str(i * 7).encode() for i in range(5000)}
    for addr in (fridge, redis_server):
        r = redis.Redis(*addr)
        r.flushall()
        r.hset("big", mapping=fields)
        assert r.hlen("big") == 5000
        assert r.hgetall("big") == fields
        assert set(r.hkeys("big")) == set(fields)
        assert r.hmget("big", [b"field:1", b"nope", b"field:4999"]) == [b"7", None, b"34993"]
        seen, cursor, calls = {}, 0, 0
        while True:
            cursor, page = r.hscan("big", cursor, count=100)
            seen.update(page)
            calls += 1
            # Changes during the scan: fields added and removed that were not there at the
            # start must not hide those that were.
            r.hset("big", f"extra:{calls}", "x")
            if cursor == 0:
                break
        assert {k: v for k, v in seen.items() if k in fields} == fields
        matched = dict(r.hscan_iter("big", match="field:42*"))
        assert set(matched) == {k for k in fields if k.startswith(b"field:42")}
        assert r.hdel("big", *list(fields)[:4000]) == 4000
        assert r.hlen("big") == 1000 + calls


def test_one_field_writes_past_the_index_threshold_answer_as_redis(fridge, redis_server):
    """A hash grown one field at a time past 128 fields (from where fridge's hashes carry an
    index, edited by each one-field write), changed one field at a time (HSET of present
    fields, HSETNX, HINCRBY, HINCRBYFLOAT), then shrunk by one-field HDELs back below it: every
    reply the same bytes, and the same hash at the end."""
    commands = [["HSET", "h", f"field:{i}", i] for i in range(300)]
    commands += [["HSET", "h", f"field:{i}", "v" * (i % 70)] for i in range(0, 300, 7)]
    commands += [["HSETNX", "h", f"field:{i}", "nx"] for i in range(290, 310)]
    commands += [["HINCRBY", "h", f"field:{i}", 5] for i in range(1, 320, 11)]
    commands += [["HINCRBYFLOAT", "h", f"field:{i}", "0.5"] for i in range(3, 320, 13)]
    commands += [["HDEL", "h", f"field:{i}"] for i in range(0, 330, 2)]
    commands += [["HDEL", "h", f"field:{i}"] for i in range(1, 330, 3)]
    commands += [["HGET", "h", f"field:{i}"] for i in range(330)]
    commands += [["HLEN", "h"], ["HSTRLEN", "h", "field:7"], ["HEXISTS", "h", "field:8"]]
    same(fridge, redis_server, commands)
    contents = [redis.Redis(*addr).hgetall("h") for addr in (fridge, redis_server)]
    assert contents[0] == contents[1]
    assert 100 < len(contents[0]) < 128


def test_hrandfield_answers_in_redis_s_shapes(fridge, redis_server):
    for addr in (fridge, redis_server):
        r = redis.Redis(*addr, protocol=3)
        r.flushall()
        r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
        assert r.hrandfield("h") in (b"a", b"b", b"c")
        assert r.hrandfield("nope") is None
        assert sorted(r.hrandfield("h", 5)) == [b"a", b"b", b"c"]
        two = r.hrandfield("h", 2)
        assert len(two) == 2 and len(set(two)) == 2
        assert len(r.hrandfield("h", -7)) == 7
        assert r.hrandfield("h", 0) == []
        assert r.hrandfield("nope", 3) == []
        pairs = r.execute_command("HRANDFIELD", "h", -4, "WITHVALUES")
        assert len(pairs) == 4 and all(p[1] == {b"a": b"1", b"b": b"2", b"c": b"3"}[p[0]] for p in pairs)
    same(fridge, redis_server, [
        ["HSET", "h", "a", "1"], ["HRANDFIELD", "h", "x"], ["HRANDFIELD", "h", 1, "FOO"],
        ["HRANDFIELD", "h", 1, "WITHVALUES", "x"], ["HRANDFIELD", "h", 3, "WITHVALUES"],
        ["HRANDFIELD", "h", -2, "WITHVALUES"], ["HRANDFIELD", "h", -9223372036854775808],
        ["HRANDFIELD", "h", -2], ["HRANDFIELD", "nope", 2, "WITHVALUES"],
    ])


def test_hscan_of_a_small_hash_answers_as_redis(fridge, redis_server):
    same(fridge, redis_server, [
        ["HSET", "h", "a", "1", "b", "2", "ab", "3"], ["HSCAN", "h", 0],
        ["HSCAN", "h", 0, "MATCH", "a*"], ["HSCAN", "h", 0, "COUNT", 1], ["HSCAN", "h", 7],
        ["HSCAN", "h", "x"], ["HSCAN", "h", 0, "COUNT", 0], ["HSCAN", "h", 0, "COUNT", "x"],
        ["HSCAN", "h", 0, "FOO", "1"], ["HSCAN", "h", 0, "MATCH"], ["HSCAN", "nope", 0],
    ])


def test_dump_and_restore_carry_hashes_both_ways(fridge, redis_server):
    small = {b"a": b"1", b"long": b"z" * 100, b"n": b"-70000"}
    big = {f"f{i}".encode(): b"v" for i in range(600)}
    ours, theirs = redis.Redis(*fridge), redis.Redis(*redis_server)
    for r in (ours, theirs):
        r.flushall()
    ours.hset("small", mapping=small)
    ours.expire("small", 1000)
    payload = ours.dump("small")
    theirs.restore("small", 0, payload)
    assert theirs.hgetall("small") == small
    # Redis dumps a hash past its listpack limits in RDB's plain form, which fridge reads.
    theirs.hset("big", mapping=big)
    ours.restore("big", 0, theirs.dump("big"))
    assert ours.type("big") == b"hash" and ours.hgetall("big") == big
    ours.restore("small2", 0, payload, replace=True)
    assert ours.hgetall("small2") == small
    # A small hash Redis keeps as a listpack (type 16) dumps in that form, integers packed
    # in every width, which fridge reads too.
    lp = {b"a": b"1", b"neg": b"-300", b"mid": b"70000", b"wide": b"-5000000000", b"s": b"x" * 60}
    theirs.hset("lp", mapping=lp)
    assert theirs.object("encoding", "lp") == b"listpack"
    ours.restore("lp", 0, theirs.dump("lp"))
    assert ours.hgetall("lp") == lp and ours.hgetall("lp") == theirs.hgetall("lp")


def test_a_memcached_client_sees_a_hash_as_absent_and_cannot_change_it(fridge):
    r = redis.Redis(*fridge)
    r.flushall()
    r.hset("shared", "f", "v")
    with socket.create_connection(fridge) as s:
        s.settimeout(5)

        def ask(line):
            s.sendall(line)
            return s.recv(4096)

        assert ask(b"get shared\r\n") == b"END\r\n"
        assert ask(b"append shared 0 0 1\r\nx\r\n").startswith(b"CLIENT_ERROR WRONGTYPE")
        assert ask(b"incr shared 1\r\n").startswith(b"CLIENT_ERROR WRONGTYPE")
        assert ask(b"add shared 0 0 1\r\nx\r\n") == b"NOT_STORED\r\n"
    assert r.hgetall("shared") == {b"f": b"v"}


def test_hash_commands_publish_keyspace_events(fridge, redis_server):
    for addr in (fridge, redis_server):
        r = redis.Redis(*addr)
        r.flushall()
        r.config_set("notify-keyspace-events", "KEA")
        p = r.pubsub()
        p.psubscribe("__keyevent@0__:*")
        p.get_message(timeout=2)
        r.hset("h", "a", "1")
        r.hsetnx("h", "a", "2")
        r.hincrby("h", "n", 1)
        r.hincrbyfloat("h", "x", 1.5)
        r.hdel("h", "a", "n", "x")
        events = []
        while (m := p.get_message(timeout=1)) is not None:
            events.append((m["channel"].split(b":", 1)[1], m["data"]))
        r.config_set("notify-keyspace-events", "")
        p.close()
        assert events == [
            (b"hset", b"h"), (b"hincrby", b"h"), (b"hincrbyfloat", b"h"), (b"hdel", b"h"),
            (b"del", b"h"),
        ], addr


def test_hash_fields_expire_as_redis_7_4_documents(fridge):
    """Redis 7.4's field expiry (redis-server 7.0 has none to compare with): the reply codes
    of redis.io's HEXPIRE, HTTL, HEXPIRETIME and HPERSIST pages."""
    import time

    r = redis.Redis(*fridge)
    r.flushall()
    x = r.execute_command
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3", "d": "4"})
    assert x("HEXPIRE", "h", 100, "FIELDS", 2, "a", "zz") == [1, -2]
    assert x("HTTL", "h", "FIELDS", 3, "a", "b", "zz") == [100, -1, -2]
    assert 99_000 < x("HPTTL", "h", "FIELDS", 1, "a")[0] <= 100_000
    at = x("HEXPIRETIME", "h", "FIELDS", 1, "a")[0]
    assert abs(at - (time.time() + 100)) < 2
    assert abs(x("HPEXPIRETIME", "h", "FIELDS", 1, "a")[0] - at * 1000) < 2000
    # Conditions: NX only without a deadline, XX only with one, GT later, LT earlier (none is
    # infinite).
    assert x("HEXPIRE", "h", 50, "NX", "FIELDS", 2, "a", "b") == [0, 1]
    assert x("HEXPIRE", "h", 500, "XX", "FIELDS", 2, "a", "c") == [1, 0]
    assert x("HEXPIRE", "h", 10, "GT", "FIELDS", 2, "a", "c") == [0, 0]
    assert x("HEXPIRE", "h", 10, "LT", "FIELDS", 2, "a", "c") == [1, 1]
    assert x("HTTL", "h", "FIELDS", 3, "a", "b", "c") == [10, 50, 10]
    # HPERSIST: 1 removed, -1 had none, -2 no such field.
    assert x("HPERSIST", "h", "FIELDS", 3, "a", "d", "zz") == [1, -1, -2]
    # HSET replaces a field and its deadline; HINCRBY keeps the deadline.
    r.hset("h", "b", "20")
    assert x("HTTL", "h", "FIELDS", 1, "b") == [-1]
    r.hincrby("h", "c", 5)
    assert x("HTTL", "h", "FIELDS", 1, "c") == [10]
    # A field past its deadline is gone for every read.
    assert x("HPEXPIRE", "h", 60, "FIELDS", 1, "d") == [1]
    time.sleep(0.3)
    assert r.hget("h", "d") is None and not r.hexists("h", "d")
    assert r.hgetall("h") == {b"a": b"1", b"b": b"20", b"c": b"8"}
    assert r.hlen("h") == 3 and r.hstrlen("h", "d") == 0
    assert x("HTTL", "h", "FIELDS", 1, "d") == [-2]
    assert r.hset("h", "d", "new") == 1, "an expired field is created again"
    # A deadline already past deletes the field (2), and the last field the key.
    assert x("HEXPIRE", "h", 0, "FIELDS", 2, "a", "zz") == [2, -2]
    assert x("HPEXPIREAT", "h", 1, "FIELDS", 3, "b", "c", "d") == [2, 2, 2]
    assert r.exists("h") == 0
    # Missing keys and fields, wrong types and malformed calls.
    assert x("HEXPIRE", "nope", 10, "FIELDS", 2, "a", "b") == [-2, -2]
    assert x("HTTL", "nope", "FIELDS", 1, "a") == [-2]
    assert x("HPERSIST", "nope", "FIELDS", 1, "a") == [-2]
    r.set("s", "v")
    for bad, message in [
        (["HEXPIRE", "s", 10, "FIELDS", 1, "a"], "WRONGTYPE"),
        (["HTTL", "s", "FIELDS", 1, "a"], "WRONGTYPE"),
        (["HEXPIRE", "h", 10, "FIELD", 1, "a"], "FIELDS is missing"),
        (["HEXPIRE", "h", 10, "NX", "XX", "FIELDS", 1, "a"], "FIELDS is missing"),
        (["HEXPIRE", "h", 10, "FIELDS", 2, "a"], "must match"),
        (["HEXPIRE", "h", 10, "FIELDS", 0, "a"], "greater than 0"),
        (["HEXPIRE", "h", -1, "FIELDS", 1, "a"], "must be >= 0"),
        (["HEXPIRE", "h", "x", "FIELDS", 1, "a"], "not an integer"),
        (["HEXPIREAT", "h", 2**62, "FIELDS", 1, "a"], "invalid expire time"),
    ]:
        with pytest.raises(redis.ResponseError, match=message):
            x(*bad)
    # The deadline survives RENAME, and a DUMP leaves the expired fields out.
    r.hset("k", mapping={"keep": "1", "soon": "2"})
    x("HPEXPIRE", "k", 80, "FIELDS", 1, "soon")
    r.rename("k", "k2")
    assert x("HTTL", "k2", "FIELDS", 2, "keep", "soon")[0] == -1
    time.sleep(0.2)
    r.restore("k3", 0, r.dump("k2"))
    assert r.hgetall("k3") == {b"keep": b"1"}


def test_due_fields_go_without_a_client_touching_the_hash(fridge):
    """Active field expiry (Redis 7.4's): a due field goes with `hexpired`, and the key with
    `del` once its last field went, though nobody reads or writes the hash; a client tracking
    the key is told; hashes in other databases and many due at once all go."""
    import time

    r = redis.Redis(*fridge, socket_timeout=5)
    r.flushall()
    x = r.execute_command
    r.config_set("notify-keyspace-events", "KEA")
    p = redis.Redis(*fridge, socket_timeout=5).pubsub()
    p.psubscribe("__keyspace@*__:h*")
    assert p.get_message(timeout=2)["type"] == "psubscribe"
    from test_redis_tracking import Raw, invalidate

    tracker = Raw(fridge, resp3=True)
    assert tracker.call("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
    try:
        r.hset("h", mapping={"a": "1", "b": "2"})
        assert x("HPEXPIRE", "h", 150, "FIELDS", 1, "a") == [1]
        assert tracker.call("HGET", "h", "b") == b"$1\r\n2\r\n"  # now tracked
        events = []

        def wait_for(n):
            deadline = time.time() + 5
            while len(events) < n and time.time() < deadline:
                m = p.get_message(timeout=0.5)
                if m and m["type"] == "pmessage":
                    events.append((m["channel"].decode(), m["data"].decode()))
            return events

        assert wait_for(3) == [
            ("__keyspace@0__:h", "hset"), ("__keyspace@0__:h", "hexpire"),
            ("__keyspace@0__:h", "hexpired"),
        ]
        assert r.exists("h") == 1 and r.hgetall("h") == {b"b": b"2"}
        # The tracking client was told the key changed.
        assert tracker.frame() == invalidate(b"h")
        # The last field: the key goes too.
        del events[:]
        assert x("HPEXPIRE", "h", 100, "FIELDS", 1, "b") == [1]
        assert wait_for(3) == [
            ("__keyspace@0__:h", "hexpire"), ("__keyspace@0__:h", "hexpired"),
            ("__keyspace@0__:h", "del"),
        ]
        assert r.exists("h") == 0
        # A past deadline: one `hdel` event, as Redis 7.4 publishes (and `del` for the key).
        del events[:]
        r.hset("h", "a", "1")
        assert x("HEXPIRE", "h", 0, "FIELDS", 1, "a") == [2]
        assert wait_for(3) == [
            ("__keyspace@0__:h", "hset"), ("__keyspace@0__:h", "hdel"),
            ("__keyspace@0__:h", "del"),
        ]
        # Another database, and 300 hashes due at once (several batches).
        db3 = redis.Redis(*fridge, db=3, socket_timeout=5)
        db3.hset("h3", mapping={"a": "1", "keep": "2"})
        db3.execute_command("HPEXPIRE", "h3", 50, "FIELDS", 1, "a")
        pipe = r.pipeline(transaction=False)
        for i in range(300):
            pipe.hset(f"many:{i}", "f", "v")
            pipe.execute_command("HPEXPIRE", f"many:{i}", 100, "FIELDS", 1, "f")
        pipe.execute()
        # RENAME, COPY and MOVE keep the deadlines, and their copies expire too.
        for k in ("ren", "cp", "mv"):
            r.hset(k, "f", "v")
            x("HPEXPIRE", k, 100, "FIELDS", 1, "f")
        r.rename("ren", "ren2")
        r.copy("cp", "cp2", destination_db=3)
        r.move("mv", 3)
        deadline = time.time() + 5
        while time.time() < deadline and (r.dbsize() > 0 or db3.dbsize() > 1):
            time.sleep(0.05)
        assert r.dbsize() == 0, "every hash whose only field expired is gone"
        assert db3.keys() == [b"h3"], "the copy and the moved hash went too"
        assert db3.hgetall("h3") == {b"keep": b"2"}
        assert wait_for(6)[3:] == [
            ("__keyspace@3__:h3", "hset"), ("__keyspace@3__:h3", "hexpire"),
            ("__keyspace@3__:h3", "hexpired"),
        ]
        # Nothing is left registered.
        with socket.create_connection(fridge) as s:
            s.sendall(b"stats\r\n")
            reply = b""
            while not reply.endswith(b"END\r\n"):
                reply += s.recv(65536)
        stats = dict(line.split(b" ")[1:3] for line in reply.splitlines() if line.startswith(b"STAT "))
        assert stats[b"hash_field_deadlines"] == b"0"
        assert stats[b"hash_field_deadlines_dropped"] == b"0"
    finally:
        r.config_set("notify-keyspace-events", "")
        p.close()
        tracker.close()
