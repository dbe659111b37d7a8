"""Redis's INFO as fridge writes it, next to Debian's redis-server 7.0.15 in the same run:
the same requests must give the same counts in `INFO commandstats` and `INFO errorstats`
(times differ), and every section the same field names in the same order (values differ).
Skipped without redis-server."""

import pytest
import redis

import os
import pty
import shutil
import socket
import subprocess
import time

from test_redis_parity import Reader, encode, redis_server  # noqa: F401 (the fixture)


def client(addr):
    return redis.Redis(host=addr[0], port=addr[1], socket_timeout=10)


def info_text(r, *args):
    """The text of `INFO args`, as the server wrote it."""
    kwargs = r.connection_pool.connection_kwargs
    with socket.create_connection((kwargs["host"], kwargs["port"])) as sock:
        sock.settimeout(10)
        sock.sendall(encode(["INFO", *args]))
        frame = Reader(sock).reply()
    return frame[frame.index(b"\r\n") + 2:-2].decode()


def section(r, name):
    """`INFO name` as a list of (field, value) in order, headers left out."""
    return [tuple(line.split(":", 1)) for line in info_text(r, name).split("\r\n")
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


def headers(r, *args):
    return [line for line in info_text(r, *args).split("\r\n") if line.startswith("#")]


SECTIONS = ["server", "clients", "memory", "persistence", "stats", "replication", "cpu",
            "errorstats", "cluster", "keyspace"]


@pytest.mark.parametrize("name", SECTIONS)
def test_section_fields_are_redis_fields_in_redis_order(fridge, redis_server, name):  # noqa: F811
    """Redis 7.0's field names in Redis's order, then fridge's own (`fridge_version`, …)."""
    ours_r, theirs_r = client(fridge), client(redis_server)
    for r in (ours_r, theirs_r):
        r.flushall()
        r.set("k", "v", ex=100)
        try:
            r.execute_command("NOSUCHCOMMAND")
        except redis.ResponseError:
            pass
    ours = [f for f, _ in section(ours_r, name)]
    theirs = [f for f, _ in section(theirs_r, name)]
    assert ours[:len(theirs)] == theirs


def test_section_order_is_redis_order(fridge, redis_server):  # noqa: F811
    for args in [(), ("default",), ("all",), ("everything",), ("server", "cpu")]:
        theirs = headers(client(redis_server), *args)
        ours = headers(client(fridge), *args)
        assert ours[:len(theirs)] == theirs, args


def test_values_are_fridge_figures(fridge):
    r = client(fridge)
    r.set("x", "y")
    info = r.info("everything")
    assert info["role"] == "master" and info["connected_slaves"] == 0
    assert info["loading"] == 0 and info["rdb_last_bgsave_status"] == "ok"
    assert info["used_memory"] > 0 and info["maxmemory"] > 0
    assert info["used_memory_peak"] >= info["used_memory"]
    assert info["total_commands_processed"] > 0
    assert info["used_cpu_user"] >= 0 and info["used_cpu_sys_main_thread"] >= 0
    assert info["db0"]["keys"] >= 1
    assert len(info["master_replid"]) == 40 and len(info["run_id"]) == 40


def run_on_a_terminal(args, seconds):
    """What `args` prints on a terminal in `seconds` (redis-cli's --stat buffers on a pipe)."""
    main, sub = pty.openpty()
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=sub, stderr=sub)
    os.close(sub)
    out, deadline = b"", time.monotonic() + seconds
    os.set_blocking(main, False)
    while time.monotonic() < deadline:
        try:
            out += os.read(main, 65536)
        except BlockingIOError:
            time.sleep(0.05)
        except OSError:
            break
    proc.terminate()
    proc.wait(timeout=10)
    os.close(main)
    return out.decode(errors="replace")


@pytest.mark.skipif(not shutil.which("redis-cli"), reason="redis-cli is not installed")
def test_redis_cli_stat_and_latency(fridge):
    host, port = fridge
    out = run_on_a_terminal(["redis-cli", "-h", host, "-p", str(port), "--stat", "-i", "0.2"], 1.5)
    assert "------- data ------" in out and "keys" in out
    lines = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert lines, out
    assert all(len(fields) >= 6 for fields in lines), out
    latency = subprocess.run(["redis-cli", "-h", host, "-p", str(port), "--latency", "-i", "0.2"],
                             capture_output=True, timeout=10, text=True, input="")
    # Not a terminal: one line "min max avg samples" after the first interval.
    fields = latency.stdout.split()
    assert len(fields) == 4 and int(fields[3]) > 0, latency.stdout + latency.stderr
