"""Redis's INFO as fridge writes it, next to Debian's redis-server 7.0.15 in the same run:
the same requests must give the same counts in `INFO commandstats` and `INFO errorstats`
(times differ), and every section the same field names in the same order (values differ).
Skipped without redis-server."""

import redis

from test_redis_parity import redis_server  # noqa: F401 (the fixture)


def client(addr):
    return redis.Redis(host=addr[0], port=addr[1], socket_timeout=10)


def section(r, name):
    """`INFO name` as a list of (field, value) in order, headers left out."""
    conn = r.connection_pool.get_connection("INFO")
    try:
        conn.send_command("INFO", name)
        text = conn.read_response().decode()
    finally:
        r.connection_pool.release(conn)
    return [tuple(line.split(":", 1)) for line in text.split("\r\n")
            if line and not line.startswith("#")]


def counts(fields):
    """commandstats' and errorstats' lines without the times: name -> {field: value}."""
    out = {}
    for name, value in fields:
        parts = dict(p.split("=") for p in value.split(","))
        for timing in ("usec", "usec_per_call"):
            parts.pop(timing, None)
        out[name] = parts
    return out


def exercise(r):
    r.set("k", "v")
    r.get("k")
    r.get("missing")
    for bad in (["GET"], ["NOSUCHCOMMAND", "x"], ["INCR", "k"], ["SET", "k", "v", "EX", "0"]):
        try:
            r.execute_command(*bad)
        except redis.ResponseError:
            pass


def test_commandstats_and_errorstats_count_as_redis(fridge, redis_server):  # noqa: F811
    results = []
    for addr in (fridge, redis_server):
        r = client(addr)
        r.config_resetstat()
        exercise(r)
        results.append((counts(section(r, "commandstats")), counts(section(r, "errorstats"))))
    ours, theirs = results
    assert ours == theirs
    assert ours[0]["cmdstat_get"] == {"calls": "2", "rejected_calls": "1", "failed_calls": "0"}
    assert ours[0]["cmdstat_set"]["failed_calls"] == "1"
    assert ours[1] == {"errorstat_ERR": {"count": "4"}}


def test_commandstats_times_and_reset(fridge):
    r = client(fridge)
    r.set("a", "1")
    fields = dict(section(r, "commandstats"))
    parts = dict(p.split("=") for p in fields["cmdstat_set"].split(","))
    assert list(parts) == ["calls", "usec", "usec_per_call", "rejected_calls", "failed_calls"]
    assert float(parts["usec_per_call"]) >= 0
    r.config_resetstat()
    assert [name for name, _ in section(r, "commandstats")] == ["cmdstat_config|resetstat"]
    assert section(r, "errorstats") == []
