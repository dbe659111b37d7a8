"""Redis databases (SELECT, MOVE, SWAPDB, FLUSHDB, DBSIZE, COPY … DB, INFO keyspace) through
redis-py, and reply for reply against redis-server 7.0.15 where both can answer alike.

A fridge of its own: SWAPDB changes what every later client sees, so these tests do not share
the session's server."""

import re

import pytest
import redis

from conftest import launch, stop
from test_redis_parity import redis_server, same  # noqa: F401  (a fixture, and the helper)


@pytest.fixture(scope="module")
def dbs_fridge():
    proc, port = launch()
    yield ("127.0.0.1", port)
    stop(proc)


@pytest.fixture
def client(dbs_fridge):
    """A redis-py client factory; everything is flushed and unswapped first."""
    made = []

    def make(db=0, **kw):
        r = redis.Redis(host=dbs_fridge[0], port=dbs_fridge[1], db=db, **kw)
        made.append(r)
        return r

    make().flushall()
    yield make
    for r in made:
        r.close()


def test_redis_py_db_argument_selects_and_databases_are_isolated(client):
    r0, r1 = client(), client(db=1)
    r0.set("k", "zero")
    assert r1.get("k") is None, "redis-py sends SELECT 1 on connect"
    r1.set("k", "one")
    r1.set("only1", "x", ex=100)
    assert (r0.get("k"), r1.get("k")) == (b"zero", b"one")
    assert (r0.dbsize(), r1.dbsize()) == (1, 2)
    assert sorted(r1.keys("*")) == [b"k", b"only1"]
    assert sorted(r1.scan_iter()) == [b"k", b"only1"]
    assert r0.keys("*") == [b"k"]
    assert r1.ttl("only1") == 100
    assert r0.exists("only1") == 0
    assert client(db=15).dbsize() == 0
    assert r1.client_info()["db"] == 1
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        client(db=16).ping()


def test_move_and_copy_between_databases(client):
    r0, r2 = client(), client(db=2)
    r0.set("k", "v", ex=100)
    assert r0.move("k", 2) is True
    assert r0.exists("k") == 0 and r2.get("k") == b"v" and r2.ttl("k") == 100
    r0.set("k", "other")
    assert r0.move("k", 2) is False, "already in the target"
    assert r0.get("k") == b"other"
    with pytest.raises(redis.ResponseError, match="source and destination objects are the same"):
        r0.move("k", 0)
    assert r0.copy("k", "copied", destination_db=2) is True
    assert r2.get("copied") == b"other" and r0.exists("copied") == 0


def test_swapdb_is_seen_by_a_connection_already_on_that_database(client):
    r3, r4 = client(db=3), client(db=4)
    r3.set("k", "three")
    r4.set("k", "four")
    assert r3.swapdb(3, 4) is True
    # r3 did not SELECT again: it sees database 4's former keys.
    assert (r3.get("k"), r4.get("k")) == (b"four", b"three")
    assert client(db=3).get("k") == b"four"
    assert r3.swapdb(4, 3) is True
    assert r3.get("k") == b"three"


def test_flushdb_vs_flushall(client):
    r0, r5, r6 = client(), client(db=5), client(db=6)
    for r in (r0, r5, r6):
        r.set("a", 1)
        r.set("b", 2)
    assert r5.flushdb() is True
    assert (r0.dbsize(), r5.dbsize(), r6.dbsize()) == (2, 0, 2)
    assert r6.flushall() is True
    assert (r0.dbsize(), r5.dbsize(), r6.dbsize()) == (0, 0, 0)


def test_info_keyspace_fields(client):
    r0, r9 = client(), client(db=9)
    r0.set("a", 1)
    r9.set("a", 1, ex=100)
    r9.set("b", 1, ex=300)
    r9.set("c", 1)
    info = r0.info("keyspace")
    assert info["db0"] == {"keys": 1, "expires": 0, "avg_ttl": 0}
    assert set(info) == {"db0", "db9"}
    db9 = info["db9"]
    assert (db9["keys"], db9["expires"]) == (3, 2)
    # The mean TTL left, in ms: 200 s at the time of the writes, to the second.
    assert 190_000 <= db9["avg_ttl"] <= 201_000, db9
    assert r0.config_get("databases") == {"databases": "16"}


def shape(reply):
    """A reply with the numbers of `avg_ttl=` (and so the bulk's length) blanked: Redis
    estimates them lazily, from its active expiry's samples."""
    return re.sub(rb"avg_ttl=\d+", b"avg_ttl=N", re.sub(rb"^[$=]\d+\r\n", b"", reply))


def test_replies_and_errors_match_redis(dbs_fridge, redis_server):  # noqa: F811
    same(dbs_fridge, redis_server, [
        ["SELECT", 1], ["SELECT", 16], ["SELECT", -1], ["SELECT", "x"],
        ["SELECT", "99999999999"], ["SELECT", "1.5"],
        ["SET", "k", "v1"], ["SELECT", 3], ["SET", "k", "v3"], ["EXPIRE", "k", 100],
        ["DBSIZE"], ["SELECT", 1],
        ["MOVE", "k", 3], ["MOVE", "k", 1], ["MOVE", "k", 16], ["MOVE", "k", -1],
        ["MOVE", "k", "x"], ["MOVE", "k", "99999999999"], ["MOVE", "nokey", 2],
        ["SET", "m", "mv"], ["MOVE", "m", 2], ["GET", "m"], ["SELECT", 2], ["GET", "m"],
        ["SWAPDB", 2, 3], ["GET", "m"], ["GET", "k"], ["TTL", "k"],
        ["SWAPDB", "a", 1], ["SWAPDB", 1, "b"], ["SWAPDB", 1, 16], ["SWAPDB", 16, "b"],
        ["SWAPDB", -1, 0], ["SWAPDB", "99999999999", 1], ["SWAPDB", 1, 1],
        ["SWAPDB", 1], ["SWAPDB", 1, 2, 3], ["MOVE", "k"],
        ["COPY", "k", "k2", "DB", 5], ["COPY", "k", "k"], ["COPY", "k", "k", "DB", 2],
        ["COPY", "k", "k", "DB", 7], ["COPY", "k", "k", "DB", 7], ["COPY", "k", "k", "DB", 20],
        ["COPY", "k", "k", "DB", "x"], ["COPY", "k", "k", "DB", "99999999999"],
        ["COPY", "k", "k", "DB", 7, "REPLACE"],
        ["FLUSHDB", "x"], ["FLUSHDB", "ASYNC", "x"], ["FLUSHDB"], ["DBSIZE"], ["SELECT", 0],
        ["SET", "z", 1], ["DBSIZE"], ["CONFIG", "GET", "databases"],
        # Back as they were: the servers are shared with the next test.
        ["SWAPDB", 2, 3], ["FLUSHALL"], ["DBSIZE"], ["INFO", "keyspace"],
    ])


def test_info_keyspace_lines_match_redis_in_shape(dbs_fridge, redis_server):  # noqa: F811
    from test_redis_parity import run
    cmds = [
        ["SET", "a", 1], ["SET", "b", 1, "EX", 100], ["SELECT", 4], ["SET", "a", 1],
        ["SELECT", 12], ["SET", "x", 1, "PX", 500000], ["SWAPDB", 4, 5],
        ["INFO", "keyspace"], ["SWAPDB", 4, 5],
    ]
    for resp3 in (False, True):
        ours, theirs = run(dbs_fridge, cmds, resp3), run(redis_server, cmds, resp3)
        for c, a, b in zip(cmds, ours, theirs):
            assert shape(a) == shape(b), f"{c}: fridge {a!r}, redis {b!r}"
    assert b"db5:keys=1,expires=0,avg_ttl=0\r\n" in ours[7]
    assert b"db12:keys=1,expires=1,avg_ttl=" in ours[7]


def test_reset_multi_and_watch_match_redis(dbs_fridge, redis_server):  # noqa: F811
    same(dbs_fridge, redis_server, [
        ["SELECT", 7], ["SET", "k", "seven"], ["RESET"], ["GET", "k"],
        ["MULTI"], ["SET", "k", "zero"], ["SELECT", 8], ["SET", "k", "eight"], ["SELECT", 99],
        ["GET", "k"], ["EXEC"], ["GET", "k"], ["SELECT", 0], ["GET", "k"],
        ["WATCH", "k"], ["SELECT", 8], ["SET", "k", "changed"], ["SELECT", 0], ["MULTI"],
        ["GET", "k"], ["EXEC"],
        ["WATCH", "k"], ["SWAPDB", 0, 8], ["MULTI"], ["GET", "k"], ["EXEC"], ["SWAPDB", 0, 8],
        ["FLUSHALL"],
    ])


def test_multi_with_select_through_redis_py(client):
    p = client().pipeline(transaction=True)
    p.set("k", "zero").execute_command("SELECT", 8).set("k", "eight")
    assert p.execute() == [True, True, True]
    assert client(db=8).get("k") == b"eight"
    assert client().get("k") == b"zero"
