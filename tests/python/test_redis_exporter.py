"""oliver006/redis_exporter scrapes fridge as it scrapes Redis: `redis_up 1` and the standard
series with fridge's figures (clients, commands per command, memory, keyspace hits and
misses, keys per database, latency percentiles and histograms), and on a server with tenants one
`redis_db_keys{db="db_<tenant>"}` series per tenant holding keys (fridge's INFO keyspace lines
for its tenants, docs/protocol.md).

The exporter is built by scripts/redis-exporter (from its Go module), or given as
REDIS_EXPORTER; where neither works the test is skipped with the reason."""

import re
import socket

from conftest import go_tool, launch, scrape_exporter, stop, tenants_toml
from test_redis_parity import Reader, encode


def exporter_binary():
    return go_tool("redis-exporter", "REDIS_EXPORTER")


def scrape(exporter, port, *extra):
    """Runs the exporter for the server on `port`, returns {series with labels: value}."""
    body = scrape_exporter([exporter, f"--redis.addr=redis://127.0.0.1:{port}", *extra])
    series = {}
    for line in body.splitlines():
        m = re.match(r"(redis_[a-z_]+(?:\{[^}]*\})?) (\S+)$", line)
        if m:
            series[m.group(1)] = float(m.group(2))
    return series


def run(port, *cmds, auth=None):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        r = Reader(s)
        if auth:
            s.sendall(encode(["AUTH", *auth]))
            assert r.reply() == b"+OK\r\n"
        s.sendall(b"".join(encode(c) for c in cmds))
        return [r.reply() for _ in cmds]


def test_exporter_scrapes_fridge_as_redis():
    exporter = exporter_binary()
    proc, port = launch()
    try:
        run(port, *[["SET", f"k{i}", "v"] for i in range(10)], ["SET", "t", "v", "EX", "100"],
            ["GET", "k1"], ["GET", "k2"], ["GET", "nope"])
        m = scrape(exporter, port)
    finally:
        stop(proc)
    assert m["redis_up"] == 1
    assert m["redis_connected_clients"] >= 1
    assert m['redis_commands_total{cmd="set"}'] == 11
    assert m['redis_commands_total{cmd="get"}'] == 3
    assert m["redis_memory_used_bytes"] > 0
    assert m["redis_keyspace_hits_total"] == 2 and m["redis_keyspace_misses_total"] == 1
    assert m['redis_db_keys{db="db0"}'] == 11 and m['redis_db_keys_expiring{db="db0"}'] == 1
    assert m['redis_latency_percentiles_usec{cmd="set",quantile="99"}'] > 0
    assert m['redis_latency_percentiles_usec_count{cmd="set"}'] == 11
    # From LATENCY HISTOGRAM.
    assert m['redis_commands_latencies_usec_count{cmd="set"}'] == 11
    assert m['redis_commands_latencies_usec_bucket{cmd="set",le="+Inf"}'] == 11
    assert m["redis_uptime_in_seconds"] >= 0
    assert any(k.startswith("redis_instance_info{") for k in m)


def test_exporter_reports_keys_per_tenant(tmp_path):
    exporter = exporter_binary()
    path = tmp_path / "tenants.toml"
    path.write_text(tenants_toml(
        {"default": ("root", []), "alice": ("pa", []), "bob": ("pb", [])}))
    proc, port = launch("--config", str(path))
    try:
        run(port, *[["SET", f"a{i}", "v"] for i in range(3)], auth=("alice", "pa"))
        run(port, ["SET", "b", "v", "EX", "100"], auth=("bob", "pb"))
        # The exporter logs in as the admin, who sees every tenant.
        m = scrape(exporter, port, "--redis.user=default", "--redis.password=root")
    finally:
        stop(proc)
    assert m["redis_up"] == 1
    assert m['redis_db_keys{db="db_alice"}'] == 3
    assert m['redis_db_keys{db="db_bob"}'] == 1
    assert m['redis_db_keys_expiring{db="db_bob"}'] == 1
