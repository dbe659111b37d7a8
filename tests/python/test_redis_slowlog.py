"""SLOWLOG and its CONFIG settings, next to Debian's redis-server 7.0.15 in the same run: the
same requests give the same reply bytes where the replies hold no times (errors, HELP, LEN,
RESET, CONFIG GET/SET), and entries of the same shape with the same arguments otherwise.
Skipped without redis-server."""

import redis

from test_redis_parity import redis_server, same  # noqa: F401 (the fixture)


def test_slowlog_replies_as_redis(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["SLOWLOG", "HELP"],
        ["SLOWLOG"],
        ["SLOWLOG", "FOO"],
        ["SLOWLOG", "LEN", "x"],
        ["SLOWLOG", "RESET", "x"],
        ["SLOWLOG", "HELP", "x"],
        ["SLOWLOG", "GET", "1", "2"],
        ["SLOWLOG", "GET", "-2"],
        ["SLOWLOG", "GET", "abc"],
        ["CONFIG", "GET", "slowlog-max-len"],
        ["CONFIG", "GET", "slowlog-log-slower-than"],
        ["CONFIG", "SET", "slowlog-log-slower-than", "abc"],
        ["CONFIG", "SET", "slowlog-log-slower-than", "-5"],
        ["CONFIG", "SET", "slowlog-log-slower-than", "-1", "slowlog-max-len", "3"],
        ["CONFIG", "GET", "slowlog-max-len"],
        ["CONFIG", "GET", "slowlog-log-slower-than"],
        ["SLOWLOG", "RESET"],
        ["SET", "k", "v"],
        ["SLOWLOG", "LEN"],
        ["SLOWLOG", "GET"],
        ["CONFIG", "SET", "slowlog-log-slower-than", "10000", "slowlog-max-len", "128"],
    ])


def entries(addr):
    r = redis.Redis(host=addr[0], port=addr[1], socket_timeout=10)
    r.config_set("slowlog-log-slower-than", 0)
    r.config_set("slowlog-max-len", 4)
    r.slowlog_reset()
    r.client_setname("logged")
    r.set("k", "v" * 200)
    r.execute_command("MSET", *[f"k{i}" for i in range(40)])
    r.get("k")
    got = r.execute_command("SLOWLOG", "GET", "-1")
    length = r.slowlog_len()
    r.config_set("slowlog-log-slower-than", 10000)
    r.config_set("slowlog-max-len", 128)
    return got, length, r.client_id()


def test_slowlog_entries_as_redis(fridge, redis_server):  # noqa: F811
    ours, our_len, _ = entries(fridge)
    theirs, their_len, _ = entries(redis_server)
    assert our_len == their_len == 4
    assert len(ours) == len(theirs) == 4
    for a, b in zip(ours, theirs):
        assert len(a) == len(b) == 6
        # Same arguments (cut at 32 arguments and 128 bytes), same client name.
        assert a[3] == b[3]
        assert a[5] == b[5] == b"logged"
        assert a[4].startswith(b"127.0.0.1:")
        assert isinstance(a[0], int) and isinstance(a[1], int) and isinstance(a[2], int)
    assert ours[0][0] > ours[1][0] > ours[2][0]
    assert ours[0][3] == [b"GET", b"k"]
    assert ours[1][3][31] == b"... (10 more arguments)"
    assert ours[2][3][2].endswith(b"... (72 more bytes)")


def test_slowlog_max_len_is_bounded(fridge):
    """fridge's deliberate difference: at most 10,000 entries (Redis: no limit)."""
    r = redis.Redis(host=fridge[0], port=fridge[1], socket_timeout=10)
    for bad in ("-1", "10001"):
        try:
            r.config_set("slowlog-max-len", bad)
            raise AssertionError("accepted")
        except redis.ResponseError as e:
            assert "argument must be between 0 and 10000 inclusive" in str(e)
    assert r.config_get("slowlog-max-len") == {"slowlog-max-len": "128"}


def test_slowlog_is_off_when_negative(fridge):
    r = redis.Redis(host=fridge[0], port=fridge[1], socket_timeout=10)
    r.config_set("slowlog-log-slower-than", -1)
    r.slowlog_reset()
    r.set("a", "b")
    assert r.slowlog_len() == 0
    r.config_set("slowlog-log-slower-than", 10000)
