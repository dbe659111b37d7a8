"""Slow requests: one ring that Redis's SLOWLOG reads and memcached's `watch slow` streams; a
tenant's watcher sees its own tenant's requests only, the admin's every tenant's."""

import socket

import redis
from conftest import stop, tenants_toml
from test_metrics import launch_with_admin


def mc_login(port, user, password):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    cred = f"{user} {password}".encode()
    s.sendall(b"set auth 0 0 %d\r\n%s\r\n" % (len(cred), cred))
    assert s.recv(100) == b"STORED\r\n"
    return s


def watch_slow(port, user, password):
    s = mc_login(port, user, password)
    s.sendall(b"watch slow\r\n")
    stream = s.makefile("rb")
    assert stream.readline() == b"OK\r\n"
    return stream


def args_until(stream, last):
    """The `args=` of each `type=slow` line up to the one whose args are `last` (less the
    watches themselves and the client library's own CLIENT commands on connecting)."""
    got = []
    while True:
        line = stream.readline().decode().rstrip("\n")
        fields = dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
        assert fields["type"] == "slow", line
        if not fields["args"].startswith(("watch", "CLIENT,")):
            got.append(fields["args"])
        if fields["args"] == last:
            return got


def test_each_watcher_sees_its_tenants_slow_requests(tmp_path):
    path = tmp_path / "fridge.toml"
    path.write_text(tenants_toml({"default": ("root", []), "shop": ("pw1", []),
                                  "blog": ("pw2", [])}))
    proc, port, _ = launch_with_admin("--config", str(path))
    try:
        admin = redis.Redis(port=port, password="root")
        admin.config_set("slowlog-log-slower-than", 0)
        shop_watch = watch_slow(port, "shop", "pw1")
        all_watch = watch_slow(port, "default", "root")
        shop = mc_login(port, "shop", "pw1")
        blog = redis.Redis(port=port, username="blog", password="pw2")
        blog.set("post", "1")
        shop.sendall(b"get cart\r\n")
        assert shop.recv(100) == b"END\r\n"
        blog.get("post")
        assert args_until(shop_watch, "get,cart") == ["get,cart"]
        assert args_until(all_watch, "GET,post") == ["SET,post,1", "get,cart", "GET,post"]
        # SLOWLOG (the admin's) reads the same ring.
        entries = [(e["command"], e["id"]) for e in admin.slowlog_get(3)]
        assert [c for c, _ in entries] == [b"GET post", b"get cart", b"SET post 1"]
    finally:
        stop(proc)
