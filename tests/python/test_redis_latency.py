"""LATENCY and latency-monitor-threshold, next to Debian's redis-server 7.0.15 in the same run
where the replies hold no times. Skipped without redis-server."""

import redis

from test_redis_parity import redis_server, same  # noqa: F401 (the fixture)


def test_latency_replies_as_redis(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["LATENCY", "RESET"],
        ["LATENCY", "LATEST"],
        ["LATENCY", "HISTORY", "command"],
        ["LATENCY", "DOCTOR"],
        ["LATENCY", "FOO"],
        ["LATENCY"],
        ["LATENCY", "HISTORY"],
        ["LATENCY", "LATEST", "x"],
        ["LATENCY", "RESET", "command", "x"],
        ["CONFIG", "GET", "latency-monitor-threshold"],
        ["CONFIG", "SET", "latency-monitor-threshold", "-1"],
        ["CONFIG", "SET", "latency-monitor-threshold", "abc"],
        ["CONFIG", "SET", "latency-monitor-threshold", "1000"],
        ["LATENCY", "DOCTOR"],
        ["LATENCY", "LATEST"],
        ["CONFIG", "SET", "latency-monitor-threshold", "0"],
    ])


def test_slow_commands_are_latency_samples(fridge):
    r = redis.Redis(host=fridge[0], port=fridge[1], socket_timeout=10, decode_responses=True)
    r.latency_reset()
    r.config_set("latency-monitor-threshold", 1)
    r.execute_command("DEBUG", "SLEEP", "0.05")
    latest = r.execute_command("LATENCY", "LATEST")
    assert [e[0] for e in latest] == ["command"]
    assert latest[0][2] >= 1 and latest[0][3] >= latest[0][2]
    history = r.execute_command("LATENCY", "HISTORY", "command")
    assert len(history) == 1 and history[0][1] >= 1
    assert "command: 1 latency spikes" in r.execute_command("LATENCY", "DOCTOR")
    assert r.execute_command("LATENCY", "RESET", "command") == 1
    assert r.execute_command("LATENCY", "LATEST") == []
    r.config_set("latency-monitor-threshold", 0)
