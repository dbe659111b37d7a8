"""Redis pub/sub: redis-py over RESP2 and RESP3 against fridge, and the raw replies side by
side with redis-server 7.0.15 (Debian) started in the same run."""

import shutil
import socket
import subprocess
import time

import pytest
import redis

from conftest import free_port, launch, stop, tenants_toml, wait_port



@pytest.fixture(scope="module")
def redis_server():
    """Yields (host, port) of a redis-server; skipped where none is installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    wait_port(port)
    yield ("127.0.0.1", port)
    proc.terminate()
    proc.wait(timeout=10)


def encode(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def read_frame(f):
    """One RESP2/RESP3 frame from a file-like socket reader, as its raw bytes."""
    line = f.readline()
    assert line, "connection closed"
    kind, rest = line[:1], line[1:-2]
    if kind in b"$=!":
        n = int(rest)
        return line if n < 0 else line + f.read(n + 2)
    if kind in b"*>~%|":
        n = int(rest)
        count = n * 2 if kind in b"%|" else n
        return line + b"".join(read_frame(f) for _ in range(max(count, 0)))
    return line


def session(addr, requests):
    """Sends each request (a tuple of arguments, or (args, replies expected)) and returns the
    replies' raw bytes, in order."""
    s = socket.create_connection(addr, timeout=5)
    f = s.makefile("rb")
    out = []
    try:
        for req in requests:
            args, n = (req[0], req[1]) if isinstance(req[0], tuple) else (req, 1)
            s.sendall(encode(*args))
            out.append(b"".join(read_frame(f) for _ in range(n)))
    finally:
        s.close()
    return out


# Requests whose replies must be the same bytes from both servers: each case is one
# connection's session. (args, n) expects n frames.
SAME_BYTES = {
    "subscribe_and_counts": [
        (("SUBSCRIBE", "a", "b", "a"), 3),
        (("PSUBSCRIBE", "x*", "y?"), 2),
        (("SSUBSCRIBE", "s1", "s2"), 2),
        (("UNSUBSCRIBE", "a", "nope"), 2),
        (("PUNSUBSCRIBE", "x*"), 1),
        (("SUNSUBSCRIBE", "s1"), 1),
    ],
    "unsubscribe_without_subscriptions": [
        ("UNSUBSCRIBE",),
        ("PUNSUBSCRIBE",),
        ("SUNSUBSCRIBE",),
        ("UNSUBSCRIBE", "a"),
    ],
    "subscriber_mode_in_resp2": [
        ("SUBSCRIBE", "a"),
        ("GET", "x"),
        ("SET", "x", "1"),
        ("CLIENT", "ID"),
        ("CONFIG", "GET", "maxmemory"),
        ("PUBLISH", "a", "m"),
        ("PING",),
        ("PING", "hi"),
        ("UNSUBSCRIBE",),
        ("PING",),
    ],
    "reset_leaves_subscriber_mode": [
        ("SUBSCRIBE", "a"),
        ("PSUBSCRIBE", "b*"),
        ("RESET",),
        ("PING",),
        ("GET", "nothing-here"),
    ],
    "resp3_pushes_and_other_commands": [
        ("HELLO", "3", "SETNAME", "c"),
        ("SUBSCRIBE", "a"),
        ("GET", "nothing-here"),
        ("PING",),
        (("UNSUBSCRIBE", "a", "b"), 2),
        ("UNSUBSCRIBE",),
    ],
    "pubsub_introspection": [
        ("PUBSUB", "HELP"),
        ("PUBSUB", "NUMSUB"),
        ("PUBSUB", "NUMSUB", "zz1", "zz2"),
        ("PUBSUB", "SHARDNUMSUB", "zz1"),
        ("PUBSUB", "NUMPAT"),
        ("PUBSUB", "CHANNELS", "zz*"),
        ("PUBSUB", "SHARDCHANNELS", "zz*"),
        ("PUBLISH", "zz-none", "m"),
        ("SPUBLISH", "zz-none", "m"),
    ],
    "errors": [
        ("PUBSUB",),
        ("PUBSUB", "FOO"),
        ("PUBSUB", "CHANNELS", "a", "b"),
        ("PUBSUB", "SHARDCHANNELS", "a", "b"),
        ("PUBSUB", "NUMPAT", "x"),
        ("PUBSUB", "HELP", "x"),
        ("PUBLISH", "a"),
        ("SPUBLISH", "a", "b", "c"),
        ("SUBSCRIBE",),
        ("PSUBSCRIBE",),
        ("SSUBSCRIBE",),
    ],
}


def normalize(reply):
    """HELLO's map names the server's version and the client id, which differ."""
    if reply.startswith(b"%7\r\n$6\r\nserver"):
        return b"<hello>"
    return reply


@pytest.mark.parametrize("case", sorted(SAME_BYTES))
def test_replies_are_redis_bytes(fridge, redis_server, case):
    ours = [normalize(r) for r in session(fridge, SAME_BYTES[case])]
    theirs = [normalize(r) for r in session(redis_server, SAME_BYTES[case])]
    assert ours == theirs


@pytest.mark.parametrize("protocol", [2, 3])
def test_messages_reach_subscribers_on_every_worker(fridge, redis_server, protocol):
    """Connections are spread over the workers round-robin: among four subscribers two
    workers are covered. Each gets the message, the pattern message, and the same frames
    as from redis-server."""
    for addr, name in [(fridge, "fridge"), (redis_server, "redis")]:
        subs = []
        for _ in range(4):
            s = socket.create_connection(addr, timeout=5)
            f = s.makefile("rb")
            if protocol == 3:
                s.sendall(encode("HELLO", "3"))
                read_frame(f)
            s.sendall(encode("SUBSCRIBE", "news") + encode("PSUBSCRIBE", "n*"))
            read_frame(f)
            read_frame(f)
            subs.append((s, f))
        pub = redis.Redis(host=addr[0], port=addr[1], protocol=protocol, socket_timeout=5)
        assert pub.publish("news", "hello") == 8, name
        assert pub.publish("other", "x") == 0, name
        head = b">" if protocol == 3 else b"*"
        for s, f in subs:
            assert read_frame(f) == head + b"3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
            assert read_frame(f) == (
                head + b"4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
            )
            s.close()
        pub.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_pubsub(fridge, protocol):
    r = redis.Redis(host=fridge[0], port=fridge[1], protocol=protocol, socket_timeout=5)
    p = redis.Redis(host=fridge[0], port=fridge[1], protocol=protocol).pubsub()
    p.subscribe("chat")
    p.psubscribe("ch*")
    p.ssubscribe("shard")
    kinds = [p.get_message(timeout=2)["type"] for _ in range(3)]
    assert kinds == ["subscribe", "psubscribe", "ssubscribe"]
    assert r.pubsub_numsub("chat") == [(b"chat", 1)]
    assert r.pubsub_numpat() == 1
    assert b"chat" in r.pubsub_channels()
    assert r.pubsub_shardchannels() == [b"shard"]
    assert r.publish("chat", "hi") == 2
    assert r.spublish("shard", "s") == 1
    got = [p.get_message(timeout=2) for _ in range(3)]
    assert {(m["type"], m["channel"], m["data"]) for m in got} == {
        ("message", b"chat", b"hi"),
        ("pmessage", b"chat", b"hi"),
        ("smessage", b"shard", b"s"),
    }
    p.unsubscribe()
    p.punsubscribe()
    p.sunsubscribe()
    p.close()
    # Once the subscriber closes, its channels are forgotten.
    deadline = time.time() + 5
    while r.pubsub_numsub("chat") != [(b"chat", 0)]:
        assert time.time() < deadline
        time.sleep(0.02)
    assert r.pubsub_numpat() == 0
    r.close()


def test_subscriber_mode_error_through_redis_py(fridge):
    c = redis.Redis(host=fridge[0], port=fridge[1], protocol=2, single_connection_client=True)
    c.execute_command("SUBSCRIBE", "a")
    with pytest.raises(redis.ResponseError, match="only \\(P\\|S\\)SUBSCRIBE"):
        c.execute_command("GET", "x")
    c.close()


def test_channels_are_per_tenant(tenant_server):
    server = tenant_server(tenants_toml({"alice": ("pa", []), "bob": ("pb", [])}))
    host, port = server.addr
    a_sub = redis.Redis(host=host, port=port, username="alice", password="pa").pubsub()
    a_sub.subscribe("news")
    assert a_sub.get_message(timeout=2)["type"] == "subscribe"
    bob = redis.Redis(host=host, port=port, username="bob", password="pb")
    alice = redis.Redis(host=host, port=port, username="alice", password="pa")
    assert bob.publish("news", "from bob") == 0
    assert bob.pubsub_channels() == []
    assert alice.pubsub_channels() == [b"news"]
    assert alice.publish("news", "from alice") == 1
    m = a_sub.get_message(timeout=2)
    assert (m["type"], m["data"]) == ("message", b"from alice")
    assert a_sub.get_message(timeout=0.2) is None, "nothing from bob"
    a_sub.close()


def test_a_slow_subscriber_is_disconnected_and_the_others_keep_receiving():
    """A subscriber that never reads falls behind max_pubsub_output and is disconnected; a
    reading subscriber gets every message, and INFO counts the disconnection."""
    proc, port = launch("--max-pubsub-output", "256KiB")
    try:
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(("127.0.0.1", port))
        slow.sendall(encode("SUBSCRIBE", "firehose"))
        fast = redis.Redis(port=port, socket_timeout=10).pubsub()
        fast.subscribe("firehose")
        assert fast.get_message(timeout=2)["type"] == "subscribe"
        pub = redis.Redis(port=port, socket_timeout=10)
        while pub.pubsub_numsub("firehose") != [(b"firehose", 2)]:
            time.sleep(0.01)
        payload = b"x" * 16384
        received = 0
        for i in range(200):
            pub.publish("firehose", payload)
            m = fast.get_message(timeout=5)
            assert m["type"] == "message" and m["data"] == payload, i
            received += 1
        assert received == 200
        deadline = time.time() + 10
        while pub.pubsub_numsub("firehose") != [(b"firehose", 1)]:
            assert time.time() < deadline, "the slow subscriber is still subscribed"
            time.sleep(0.02)
        assert pub.info("stats")["client_output_buffer_limit_disconnections"] == 1
        # The slow connection was closed: reading drains what was sent, then EOF.
        slow.settimeout(5)
        while slow.recv(65536):
            pass
        slow.close()
        fast.close()
        pub.close()
    finally:
        stop(proc)


def keyspace_events(addr, commands, flags="KEA"):
    """Enables notifications, runs `commands(client)`, and returns the (channel, message)
    pairs a pattern subscriber saw, in order."""
    r = redis.Redis(host=addr[0], port=addr[1], socket_timeout=5)
    r.config_set("notify-keyspace-events", flags)
    p = redis.Redis(host=addr[0], port=addr[1], socket_timeout=5).pubsub()
    p.psubscribe("__key*__:*")
    assert p.get_message(timeout=2)["type"] == "psubscribe"
    try:
        commands(r)
        events = []
        while (m := p.get_message(timeout=0.5)) is not None:
            events.append((m["channel"].decode(), m["data"].decode()))
        return events
    finally:
        r.config_set("notify-keyspace-events", "")
        p.close()
        r.close()


def string_and_key_commands(r):
    r.delete("ks:a", "ks:b", "ks:m1", "ks:m2", "ks:t")
    r.set("ks:a", "1")
    r.set("ks:a", "2", ex=100)
    r.setnx("ks:a", "3")
    r.setnx("ks:b", "1")
    r.incr("ks:b")
    r.decrby("ks:b", 2)
    r.incrbyfloat("ks:b", 1.5)
    r.append("ks:b", "x")
    r.getdel("ks:b")
    r.getdel("ks:b")
    r.expire("ks:a", 50)
    r.expire("ks:none", 50)
    r.persist("ks:a")
    r.persist("ks:a")
    r.delete("ks:a", "ks:zz")
    r.mset({"ks:m1": "1", "ks:m2": "2"})
    r.getset("ks:m1", "x")
    r.set("ks:m1", "y", get=True)
    r.set("ks:m1", "z", nx=True)
    r.execute_command("SETEX", "ks:m1", 100, "v")
    r.getex("ks:m1", ex=10)
    r.getex("ks:m1", persist=True)
    r.pexpire("ks:m2", -1)
    r.set("ks:t", "1", px=30)
    time.sleep(0.2)
    assert r.get("ks:t") is None  # the lookup reaps it: `expired`


def test_keyspace_notifications_are_redis_events(fridge, redis_server):
    ours = keyspace_events(fridge, string_and_key_commands)
    theirs = keyspace_events(redis_server, string_and_key_commands)
    assert ours == theirs
    assert ("__keyevent@0__:expired", "ks:t") in ours


@pytest.mark.parametrize("flags", ["E$", "Kg", "Ex", "KEA"])
def test_keyspace_notification_classes_select_events(fridge, redis_server, flags):
    def commands(r):
        r.set("ks:c", "1", px=30)
        r.delete("ks:d")
        r.set("ks:d", "1")
        r.delete("ks:d")
        time.sleep(0.2)
        r.get("ks:c")

    assert keyspace_events(fridge, commands, flags) == keyspace_events(
        redis_server, commands, flags
    )


def test_key_misses_are_published_with_m(fridge, redis_server):
    def commands(r):
        r.set("ks:hit", "1")
        r.get("ks:miss1")
        r.mget("ks:hit", "ks:miss2", "ks:miss3")
        r.strlen("ks:miss4")
        r.ttl("ks:miss5")
        r.type("ks:miss6")
        r.getex("ks:miss7", ex=5)
        r.get("ks:hit")

    for flags in ["Km", "Em", "KEA"]:
        ours = keyspace_events(fridge, commands, flags)
        assert ours == keyspace_events(redis_server, commands, flags), flags


def test_notify_keyspace_events_setting_reads_back_as_redis(fridge, redis_server):
    for addr in (fridge, redis_server):
        assert session(
            addr,
            [
                ("CONFIG", "SET", "notify-keyspace-events", "KEA"),
                ("CONFIG", "GET", "notify-keyspace-events"),
                ("CONFIG", "SET", "notify-keyspace-events", "g$lshzxetdnKEm"),
                ("CONFIG", "GET", "notify-keyspace-events"),
                ("CONFIG", "SET", "notify-keyspace-events", "nxE"),
                ("CONFIG", "GET", "notify-keyspace-events"),
                ("CONFIG", "SET", "notify-keyspace-events", "Q"),
                ("CONFIG", "GET", "notify-keyspace-events"),
                ("CONFIG", "SET", "notify-keyspace-events", ""),
                ("CONFIG", "GET", "notify-keyspace-events"),
            ],
        ) == [
            b"+OK\r\n",
            b"*2\r\n$22\r\nnotify-keyspace-events\r\n$3\r\nAKE\r\n",
            b"+OK\r\n",
            b"*2\r\n$22\r\nnotify-keyspace-events\r\n$4\r\nAKEm\r\n",
            b"+OK\r\n",
            b"*2\r\n$22\r\nnotify-keyspace-events\r\n$3\r\nxnE\r\n",
            b"-ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
            b"Invalid event class character. Use 'Ag$lshzxeKEtmdn'.\r\n",
            b"*2\r\n$22\r\nnotify-keyspace-events\r\n$3\r\nxnE\r\n",
            b"+OK\r\n",
            b"*2\r\n$22\r\nnotify-keyspace-events\r\n$0\r\n\r\n",
        ], addr


def test_the_expiry_sweep_publishes_expired_without_a_lookup(fridge):
    r = redis.Redis(host=fridge[0], port=fridge[1], socket_timeout=5)
    r.config_set("notify-keyspace-events", "Ex")
    p = redis.Redis(host=fridge[0], port=fridge[1], socket_timeout=5).pubsub()
    p.subscribe("__keyevent@0__:expired")
    assert p.get_message(timeout=2)["type"] == "subscribe"
    try:
        r.set("ks:swept", "1", px=20)
        m = p.get_message(timeout=10)  # the background sweep reaps it within a second or two
        assert (m["channel"], m["data"]) == (b"__keyevent@0__:expired", b"ks:swept")
    finally:
        r.config_set("notify-keyspace-events", "")
        p.close()
        r.close()


def test_evictions_are_published():
    """A small cache filled past its memory evicts; each eviction is an `evicted` event."""
    proc, port = launch("--max-item-size", "64KiB", "--segment-size", "1MiB")
    try:
        r = redis.Redis(port=port, socket_timeout=10)
        r.config_set("notify-keyspace-events", "Ee")
        p = redis.Redis(port=port, socket_timeout=10).pubsub()
        p.subscribe("__keyevent@0__:evicted")
        assert p.get_message(timeout=2)["type"] == "subscribe"
        value = b"v" * 60000
        pipe = r.pipeline(transaction=False)
        for i in range(2500):  # 150 MB into 64 MiB
            pipe.set(f"ev:{i}", value)
            if i % 100 == 99:
                pipe.execute()
        pipe.execute()
        m = p.get_message(timeout=10)
        assert m["type"] == "message" and m["data"].startswith(b"ev:")
        assert r.exists(m["data"].decode()) == 0, "the evicted key is gone"
        p.close()
        r.close()
    finally:
        stop(proc)


def test_subscriptions_count_against_the_clients_memory_limit():
    """A client subscribing without end is disconnected like one with huge buffers; the
    others stay."""
    proc, port = launch("--max-client-memory", "2MiB")
    try:
        other = redis.Redis(port=port, socket_timeout=5)
        assert other.ping()
        hog = socket.create_connection(("127.0.0.1", port), timeout=10)
        f = hog.makefile("rb")
        closed = False
        for batch in range(100):
            names = [f"ch:{batch}:{i}:" + "x" * 100 for i in range(500)]
            try:
                hog.sendall(encode("SUBSCRIBE", *names))
                for _ in names:
                    read_frame(f)
            except (AssertionError, OSError):
                closed = True
                break
        assert closed, "the subscribing client was never disconnected"
        assert other.ping(), "the other client stays"
        assert other.info("stats")["evicted_clients"] >= 1
        deadline = time.time() + 5
        while other.pubsub_numsub("ch:0:0:" + "x" * 100)[0][1] != 0:
            assert time.time() < deadline, "its subscriptions were not forgotten"
            time.sleep(0.02)
        other.close()
    finally:
        stop(proc)
