"""The admin port (`--admin-port`): `/metrics` in Prometheus's text format, read by Prometheus's
own Python parser (`prometheus_client`), agreeing with memcached's `stats` and Redis's `INFO`
taken around it; `/healthz`, `/readyz`, and HTTP errors."""

import getpass
import os
import re
import socket
import subprocess
import urllib.error
import urllib.request

import pytest
import redis
from conftest import drain, fridge_binary, stop, tenants_toml
from prometheus_client.parser import text_string_to_metric_families


def launch_with_admin(*args):
    """Starts fridge with an admin port: (process, main port, admin port)."""
    env = {**os.environ, "FRIDGE_USER": os.environ.get("FRIDGE_USER", getpass.getuser())}
    proc = subprocess.Popen(
        [fridge_binary(), "-p", "0", "-m", "64", "-t", "2", "--admin-port", "0", *args],
        stderr=subprocess.PIPE, text=True, env=env,
    )
    line = proc.stderr.readline()
    main = re.search(r"on 127\.0\.0\.1:(\d+)", line)
    admin = re.search(r"admin \(HTTP /metrics\) on 127\.0\.0\.1:(\d+)", line)
    assert main and admin, f"unexpected startup line: {line!r}"
    drain(proc)
    return proc, int(main.group(1)), int(admin.group(1))


@pytest.fixture
def server():
    proc, port, admin = launch_with_admin()
    yield port, admin
    stop(proc)


def get(admin, path, method="GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{admin}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def scrape(admin):
    """{(name, labels): value} of every sample, and the families as the parser saw them."""
    status, headers, text = get(admin, "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = list(text_string_to_metric_families(text))
    samples = {}
    for f in families:
        for s in f.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples, families


def memcache_stats(port, what=""):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"stats {what}\r\n".encode())
        data = b""
        while not data.endswith(b"END\r\n"):
            data += s.recv(65536)
    return dict(line.split(" ", 2)[1:] for line in data.decode().split("\r\n") if line.startswith("STAT "))


def test_prometheus_parses_every_family_with_help_and_type(server):
    port, admin = server
    r = redis.Redis(port=port)
    r.set("k", "v")
    r.get("k")
    _, families = scrape(admin)
    names = {f.name for f in families}
    for f in families:
        assert f.documentation, f"{f.name} has no HELP"
        assert f.type in ("counter", "gauge", "histogram"), f.name
    for expected in ["fridge_cmd_get", "fridge_curr_items", "fridge_evictions", "fridge_tenant_bytes",
                     "fridge_command_calls", "fridge_command_duration_seconds", "fridge_cleaner_passes",
                     "fridge_hitmap_zone_items", "process_resident_memory_bytes"]:
        assert expected in names, expected


def test_metrics_agree_with_stats_and_info_taken_around_them(server):
    port, admin = server
    r = redis.Redis(port=port)
    for i in range(50):
        r.set(f"k{i}", "v" * i)
    for i in range(80):
        r.get(f"k{i}")
    r.delete("k1")
    before = memcache_stats(port)
    samples, _ = scrape(admin)
    after = memcache_stats(port)
    info = r.info()
    checked = 0
    for name, value in before.items():
        if name.startswith("tenant") or name in ("pid", "time", "uptime", "rusage_user", "rusage_system"):
            continue
        try:
            low, high = sorted((float(value), float(after[name])))
        except ValueError:
            continue  # text
        if name in ("curr_connections", "connection_structures"):
            low -= 1  # the `stats` connection itself, open only while it asks
        if name == "client_memory":
            low -= 32768  # and its buffers (16 KiB each way), counted only while it asks
        got = samples.get((f"fridge_{name}_total", ()), samples.get((f"fridge_{name}", ())))
        if name.startswith("hitmap_zone_"):
            got = samples[("fridge_hitmap_zone_items", (("zone", name.rsplit("_", 1)[1]),))]
        assert got is not None, f"stats {name} has no metric"
        assert low <= got <= high, f"{name}: stats {low}..{high}, metrics {got}"
        checked += 1
    assert checked > 50
    assert samples[("fridge_get_hits_total", ())] == 50
    assert samples[("fridge_get_misses_total", ())] == 30
    assert samples[("fridge_curr_items", ())] == 49
    # INFO's names for the same figures, from the same counters.
    assert info["keyspace_hits"] == samples[("fridge_get_hits_total", ())]
    assert info["keyspace_misses"] == samples[("fridge_get_misses_total", ())]
    assert info["evicted_keys"] == samples[("fridge_evictions_total", ())]
    # The tenant's row is `stats tenants`'s.
    rows = memcache_stats(port, "tenants")
    assert samples[("fridge_tenant_items", (("tenant", "default"),))] == float(rows["default:items"])
    assert samples[("fridge_tenant_hits_total", (("tenant", "default"),))] == float(rows["default:hits"])


def test_command_calls_and_latency_histogram(server):
    port, admin = server
    r = redis.Redis(port=port)
    for _ in range(25):
        r.get("nope")
    samples, _ = scrape(admin)
    cmd = (("command", "get"),)
    assert samples[("fridge_command_calls_total", cmd)] == 25
    assert samples[("fridge_command_duration_seconds_count", cmd)] == 25
    inf = samples[("fridge_command_duration_seconds_bucket", (("command", "get"), ("le", "+Inf")))]
    assert inf == 25
    buckets = sorted(
        (float(dict(labels)["le"]), v) for (n, labels), v in samples.items()
        if n == "fridge_command_duration_seconds_bucket" and dict(labels)["command"] == "get"
    )
    counts = [v for _, v in buckets]
    assert counts == sorted(counts), "cumulative"
    assert 0 < samples[("fridge_command_duration_seconds_sum", cmd)] < 25
    info = r.info("commandstats")
    assert info["cmdstat_get"]["calls"] == 25


def test_every_tenant_has_its_row(tenant_server, tmp_path):
    toml = tenants_toml({"shop": ("pw1", []), "blog": ("pw2", ['reserved = "1MiB"'])},
                        allow_unauthenticated="true", admin_port=0)
    path = tmp_path / "admin.toml"
    path.write_text(toml)
    proc, port, admin = launch_with_admin("--config", str(path))
    try:
        shop = redis.Redis(port=port, username="shop", password="pw1")
        shop.set("a", "1")
        shop.get("a")
        shop.get("b")
        samples, _ = scrape(admin)
        assert samples[("fridge_tenant_items", (("tenant", "shop"),))] == 1
        assert samples[("fridge_tenant_hits_total", (("tenant", "shop"),))] == 1
        assert samples[("fridge_tenant_misses_total", (("tenant", "shop"),))] == 1
        assert samples[("fridge_tenant_reserved", (("tenant", "blog"),))] == 1 << 20
        assert samples[("fridge_tenant_items", (("tenant", "blog"),))] == 0
    finally:
        stop(proc)


def test_health_readiness_and_http_errors(server):
    _, admin = server
    assert get(admin, "/healthz")[0::2] == (200, "ok\n")
    assert get(admin, "/readyz")[0::2] == (200, "ready\n")
    status, headers, body = get(admin, "/metrics", method="HEAD")
    assert status == 200 and body == "" and int(headers["Content-Length"]) > 1000
    assert get(admin, "/nope")[0] == 404
    status, headers, _ = get(admin, "/metrics", method="POST")
    assert status == 405 and headers["Allow"] == "GET, HEAD"
    # A request head past 8 KiB is refused, not buffered without bound.
    with socket.create_connection(("127.0.0.1", admin), timeout=5) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"x" * 10000)
        reply = s.recv(100)
    assert reply.startswith(b"HTTP/1.1 431")


def test_the_admin_port_listens_on_loopback_only_unless_told(server):
    _, admin = server
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.2", admin), timeout=1).close()
