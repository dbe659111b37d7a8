"""Hot keys: on a workload with a known (Zipf) distribution, Valkey's `HOTKEYS GET` names each
tenant's ten most requested keys, in order, with their counts; memcached's `stats hotkeys`
and the admin port's `/hotkeys` show the same report; each key's `freq` is its `OBJECT FREQ`;
`hotkeys-top-k` and `hotkeys-window-seconds` are set through CONFIG; Redis 8.6's session form
is refused, not answered OK."""

import json
import random
import socket
import urllib.request
from urllib.parse import unquote

import pytest
import redis
from conftest import stop, tenants_toml
from test_metrics import launch_with_admin

SHOP_N, BLOG_N = 20_000, 6_000


def zipf_requests(prefix, n, keys, seed):
    """Key `prefix:i` (i from 1) requested round(n / i) times, shuffled: {key: count}, order."""
    counts = {f"{prefix}:{i}": round(n / i) for i in range(1, keys + 1)}
    order = [k for k, c in counts.items() for _ in range(c)]
    random.Random(seed).shuffle(order)
    return counts, order


def run(client, keys, order):
    for k in keys:
        client.set(k, "v")
    pipe = client.pipeline(transaction=False)
    for i, k in enumerate(order, 1):
        pipe.get(k)
        if i % 2000 == 0:
            pipe.execute()
    pipe.execute()


def top(counts, n=10):
    return sorted(counts, key=lambda k: (-counts[k], k))[:n]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """Two tenants under Zipf load: (main port, admin port, {tenant: exact counts})."""
    path = tmp_path_factory.mktemp("hot") / "fridge.toml"
    path.write_text(tenants_toml({"default": ("root", []), "shop": ("pw1", []),
                                  "blog": ("pw2", [])}))
    proc, port, admin = launch_with_admin("--config", str(path))
    try:
        shop = redis.Redis(port=port, username="shop", password="pw1")
        blog = redis.Redis(port=port, username="blog", password="pw2")
        # Long enough that the whole load falls in one window.
        redis.Redis(port=port, password="root").config_set("hotkeys-window-seconds", 3600)
        shop_counts, shop_order = zipf_requests("item", SHOP_N, 2_000, 1)
        blog_counts, blog_order = zipf_requests("post", BLOG_N, 500, 2)
        run(shop, shop_counts, shop_order)
        run(blog, blog_counts, blog_order)
        # Each SET is a reference too.
        exact = {"shop": {k: c + 1 for k, c in shop_counts.items()},
                 "blog": {k: c + 1 for k, c in blog_counts.items()}}
        yield port, admin, exact
    finally:
        # Also when the setup fails: a server left running would load later benchmarks.
        stop(proc)


def entries(reply):
    return [{(k.decode() if isinstance(k, bytes) else k): v for k, v in
             (e.items() if isinstance(e, dict) else zip(e[::2], e[1::2]))} for e in reply]


def test_each_tenant_sees_its_ten_most_requested_keys(loaded):
    port, _, exact = loaded
    for name, password in [("shop", "pw1"), ("blog", "pw2")]:
        r = redis.Redis(port=port, username=name, password=password)
        got = entries(r.execute_command("HOTKEYS", "GET"))
        keys = [e["key"].decode() for e in got]
        assert keys == top(exact[name]), name
        for e in got:
            truth = exact[name][e["key"].decode()]
            # Never below the truth (less the references still in workers' unsent pools),
            # above it by at most the count-min sketch's error when the key took its counter.
            assert truth - 2 * 1024 <= e["count"] <= truth + 32, (e, truth)
            assert e["db"] == 0 and e["qps"] >= 0 and "tenant" not in e


def test_freq_is_object_freq(loaded):
    port, _, exact = loaded
    r = redis.Redis(port=port, username="shop", password="pw1")
    got = entries(r.execute_command("HOTKEYS", "GET"))
    freqs = {k: r.object("freq", k) for k in exact["shop"]}
    for e in got:
        assert e["freq"] == freqs[e["key"].decode()]
        assert e["freq"] == max(freqs.values())


def test_memcached_and_http_show_the_same_report(loaded):
    port, admin, exact = loaded
    with urllib.request.urlopen(f"http://127.0.0.1:{admin}/hotkeys", timeout=5) as resp:
        report = json.load(resp)
    assert report["live"] is True and report["references"] > SHOP_N
    by_tenant = {}
    for k in report["keys"]:
        by_tenant.setdefault(k["tenant"], []).append(k["key"])
    # The admin sees every tenant: the ten hottest of all, here all the shop's.
    assert [k["key"] for k in report["keys"]] == top({**exact["shop"], **exact["blog"]})
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        # memcached's text login (a `set` of `auth`), then the admin's view.
        s.sendall(b"set auth 0 0 12\r\ndefault root\r\n")
        assert s.recv(100) == b"STORED\r\n"
        s.sendall(b"stats hotkeys\r\n")
        data = b""
        while not data.endswith(b"END\r\n"):
            data += s.recv(65536)
    stats = dict(line.split(" ", 2)[1:] for line in data.decode().split("\r\n")
                 if line.startswith("STAT "))
    # Keys are URI-encoded, as memcached's `watch` writes them.
    assert [unquote(stats[f"{i}:key"]) for i in range(1, 11)] == [k["key"] for k in report["keys"]]
    assert stats["1:key"] == "item%3A1"
    assert [int(stats[f"{i}:count"]) for i in range(1, 11)] == [k["count"] for k in report["keys"]]
    assert stats["1:tenant"] == "shop" and stats["1:db"] == "0"


def test_settings_reset_and_the_session_form(loaded):
    port, _, _ = loaded
    admin = redis.Redis(port=port, password="root")
    shop = redis.Redis(port=port, username="shop", password="pw1")
    admin.config_set("hotkeys-top-k", 3)
    assert len(shop.execute_command("HOTKEYS", "GET")) == 3
    admin.config_set("hotkeys-top-k", 0)
    assert shop.execute_command("HOTKEYS", "GET") == []
    admin.config_set("hotkeys-top-k", 10)
    assert admin.config_get("hotkeys-*") == {"hotkeys-top-k": "10",
                                             "hotkeys-window-seconds": "3600"}
    with pytest.raises(redis.ResponseError, match="between 1 and 3600"):
        admin.config_set("hotkeys-window-seconds", 0)
    with pytest.raises(redis.ResponseError, match="between 0 and 256"):
        admin.config_set("hotkeys-top-k", 257)
    with pytest.raises(redis.ResponseError, match="not served"):
        admin.execute_command("HOTKEYS", "START", "METRICS", "1", "CPU")
    with pytest.raises(redis.ResponseError, match="not served"):
        admin.execute_command("HOTKEYS", "STOP")
    with pytest.raises(redis.ResponseError, match="unknown subcommand"):
        admin.execute_command("HOTKEYS", "NOPE")
    assert any(b"GET" in line for line in admin.execute_command("HOTKEYS", "HELP"))
    with pytest.raises(redis.exceptions.NoPermissionError, match="hotkeys|reset"):
        shop.execute_command("HOTKEYS", "RESET")
    assert admin.execute_command("HOTKEYS", "RESET") == b"OK"
    assert shop.execute_command("HOTKEYS", "GET") == []


def test_resp3_answers_maps(loaded):
    port, _, _ = loaded
    r = redis.Redis(port=port, password="root", protocol=3)
    r.set("solo", "1")
    for _ in range(3000):
        r.get("solo")
    got = r.execute_command("HOTKEYS", "GET")
    assert isinstance(got[0], dict) and got[0][b"key"] == b"solo", got
