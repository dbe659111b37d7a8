"""A thousand tenants on one server: ids past a byte (tenants 1 and 257 share an id's low byte)
keep their keys apart through Redis and memcached clients, each tenant sees its own counters,
the admin sees every tenant, a warm restart gives each its items back, and a file with more
tenants than the server has ids is refused at start, saying so."""

import subprocess

import redis
from conftest import ROOT, fridge_binary, tenants_toml
from test_restart import Fridge
from test_tenant_max_keys import raw_login, read_lines

# 999 configured tenants and `default`: ids 0 (default) and 1 ..= 999 in the file's order.
MANY = 999
WATCHED = [1, 2, 255, 256, 257, 513, 999]


def config(count=MANY):
    tenants = {"default": ("root", [])}
    tenants.update({f"t{i}": (f"pw{i}", []) for i in range(1, count + 1)})
    return tenants_toml(tenants, auth_failure_burst="100000")


def login(port, i, **kw):
    return redis.Redis(host="127.0.0.1", port=port, username=f"t{i}", password=f"pw{i}",
                       socket_timeout=5, **kw)


def test_a_thousand_tenants_keep_their_keys_apart(tenant_server):
    server = tenant_server(config())
    for i in WATCHED:
        r = login(server.port, i)
        r.set("k", f"value of t{i}")
        r.set(f"only-t{i}", "x")
    for i in WATCHED:
        r = login(server.port, i, protocol=3)
        assert r.get("k") == f"value of t{i}".encode(), f"t{i}"
        assert r.dbsize() == 2, f"t{i}"
        assert sorted(r.keys("*")) == sorted([b"k", f"only-t{i}".encode()]), f"t{i}"
    # memcached text over the login key: the same items.
    for i in (257, 999):
        s = raw_login(server, f"t{i}", f"pw{i}")
        s.sendall(b"get k\r\n")
        value = f"value of t{i}".encode()
        assert read_lines(s, 3) == [b"VALUE k 0 %d" % len(value), value, b"END"]
        s.close()
    # A delete in tenant 1 leaves tenant 257 (same low byte) alone.
    assert login(server.port, 1).delete("k") == 1
    assert login(server.port, 257).get("k") == b"value of t257"

    admin = redis.Redis(host="127.0.0.1", port=server.port, password="root", socket_timeout=5)
    info = admin.info("tenants")
    rows = {k[len("tenant_"):]: v for k, v in info.items()
            if k.startswith("tenant_") and isinstance(v, dict)}
    assert len(rows) == MANY + 1, "every tenant has a row"
    assert rows["t1"]["items"] == 1 and rows["t257"]["items"] == 2 and rows["t999"]["items"] == 2
    assert rows["t3"]["items"] == 0
    own = login(server.port, 999).info("tenants")
    assert [k for k, v in own.items() if isinstance(v, dict)] == ["tenant_t999"], "itself only"


def test_wide_ids_survive_a_warm_restart(tmp_path):
    path = tmp_path / "cache.snapshot"
    conf = tmp_path / "fridge.toml"
    conf.write_text(config(300))
    first = Fridge(path, "--config", str(conf))
    try:
        for i in (1, 257, 300):
            login(first.port, i).set("k", f"value of t{i}", ex=3600)
    finally:
        first.term()
    second = Fridge(path, "--config", str(conf))
    try:
        assert "restored 3 items" in second.restore_line(), second.restore_line()
        for i in (1, 257, 300):
            r = login(second.port, i)
            assert r.get("k") == f"value of t{i}".encode() and r.dbsize() == 1, f"t{i}"
        assert login(second.port, 2).dbsize() == 0
    finally:
        second.term()


def test_more_tenants_than_ids_are_refused_at_start(tmp_path):
    conf = tmp_path / "fridge.toml"
    conf.write_text(config(1024))  # 1,025 with default
    run = subprocess.run([fridge_binary(), "-p", "0", "--config", str(conf)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "at most 1024 tenants, default included" in run.stderr, run.stderr
