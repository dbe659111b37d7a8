"""CLIENT KILL's filters and CLIENT LIST's fields, next to Debian's redis-server 7.0.15 in the
same run where the replies agree (errors, counts). Skipped without redis-server."""

import time

import redis

from test_redis_parity import redis_server, same  # noqa: F401 (the fixture)


def test_client_kill_errors_as_redis(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["CLIENT", "KILL", "TYPE", "foo"],
        ["CLIENT", "KILL", "USER", "nosuch"],
        ["CLIENT", "KILL", "TYPE", "master"],
        ["CLIENT", "KILL", "TYPE", "replica"],
        ["CLIENT", "KILL", "LADDR", "1.2.3.4:5"],
        ["CLIENT", "KILL", "ID", "x"],
        ["CLIENT", "KILL", "ID", "0"],
        ["CLIENT", "KILL", "FOO", "bar"],
        ["CLIENT", "KILL", "SKIPME", "maybe"],
        ["CLIENT", "KILL", "1.2.3.4:5"],
        ["CLIENT", "KILL", "ADDR", "1.2.3.4:5", "SKIPME", "no"],
    ])


def connect(addr, name=None):
    r = redis.Redis(host=addr[0], port=addr[1], socket_timeout=10, decode_responses=True)
    if name:
        r.client_setname(name)
    return r


def wait_for(condition, seconds=10):
    """Polls `condition` until it holds (a request on another connection runs in its own
    time); fails after `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.02)


def names(r):
    return sorted(c["name"] for c in r.client_list() if c["name"])


def test_client_no_evict_setinfo_no_touch_as_redis_7_0(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["CLIENT", "NO-EVICT", "on"],
        ["CLIENT", "NO-EVICT", "OFF"],
        ["CLIENT", "NO-EVICT", "maybe"],
        ["CLIENT", "NO-EVICT"],
        ["CLIENT", "SETINFO", "lib-name", "x"],
        ["CLIENT", "NO-TOUCH", "on"],
    ])


def test_client_kill_filters(fridge):
    admin = connect(fridge, "admin")
    plain = connect(fridge, "plain")
    plain.ping()
    sub = connect(fridge)
    ps = sub.pubsub()
    ps.subscribe("ch")
    ps.psubscribe("p*")
    ps.get_message(timeout=5)
    ps.get_message(timeout=5)
    ps.connection.send_command("CLIENT", "SETNAME", "subscriber")
    wait_for(lambda: {"admin", "plain", "subscriber"} <= set(names(admin)))
    subscriber = next(c for c in admin.client_list() if c["name"] == "subscriber")
    assert (subscriber["sub"], subscriber["psub"], subscriber["flags"]) == ("1", "1", "P")
    assert subscriber["cmd"] == "client|setname"
    me = admin.client_info()
    assert me["cmd"] == "client|info" and me["flags"] == "N"
    # Filters that match nothing kill nothing.
    assert admin.execute_command("CLIENT", "KILL", "LADDR", "10.0.0.1:1") == 0
    assert admin.execute_command("CLIENT", "KILL", "MAXAGE", "100000") == 0
    # TYPE pubsub matches the subscriber, TYPE normal does not (ID: the server's other
    # clients are left alone).
    sub_id = subscriber["id"]
    assert admin.execute_command("CLIENT", "KILL", "ID", sub_id, "TYPE", "normal") == 0
    assert admin.execute_command("CLIENT", "KILL", "ID", sub_id, "TYPE", "pubsub") == 1
    # USER and LADDR match, with ID to leave the server's other clients alone.
    laddr, plain_id = me["laddr"], plain.client_id()
    assert admin.execute_command("CLIENT", "KILL", "USER", "default", "LADDR", "1.1.1.1:1",
                                 "ID", plain_id) == 0
    assert admin.execute_command("CLIENT", "KILL", "USER", "default", "LADDR", laddr,
                                 "ID", plain_id) == 1
    wait_for(lambda: not {"plain", "subscriber"} & set(names(admin)))
    plain.connection_pool.disconnect()
    ps.close()


def test_client_kill_type_normal_and_id(fridge):
    admin = connect(fridge, "admin2")
    other = connect(fridge, "other2")
    other_id = other.client_id()
    assert admin.execute_command("CLIENT", "KILL", "ID", other_id, "TYPE", "pubsub") == 0
    assert admin.execute_command("CLIENT", "KILL", "ID", other_id, "TYPE", "normal") == 1
    assert "other2" not in names(admin)


def pipelined(addr, commands):
    """The bytes that come back for `commands` sent at once, up to the final ECHO's reply."""
    import socket

    from test_redis_parity import encode
    end = b"$3\r\nend\r\n"
    with socket.create_connection(addr) as s:
        s.settimeout(10)
        s.sendall(b"".join(encode(c) for c in commands + [["ECHO", "end"]]))
        got = b""
        while not got.endswith(end):
            data = s.recv(65536)
            assert data, got
            got += data
    return got


def test_client_reply_as_redis(fridge, redis_server):  # noqa: F811
    commands = [
        ["SET", "k", "1"],
        ["CLIENT", "REPLY", "SKIP"], ["INCR", "k"], ["GET", "k"],
        ["CLIENT", "REPLY", "OFF"], ["INCR", "k"], ["GET", "k"], ["NOSUCH"],
        ["CLIENT", "REPLY", "ON"], ["GET", "k"],
        ["CLIENT", "REPLY", "MAYBE"], ["CLIENT", "REPLY"],
    ]
    assert pipelined(fridge, commands) == pipelined(redis_server, commands)
    same(fridge, redis_server, [["CLIENT", "REPLY", "ON"], ["CLIENT", "REPLY", "x"]])
