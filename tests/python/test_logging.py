"""The server's log: levels (`--log-level`, `-vv`, memcached's `verbosity`, Redis's `CONFIG SET
loglevel`), text and JSON lines (`--log-format json`), connections at debug, failed logins at
info, the effective configuration at startup and a summary at shutdown."""

import getpass
import json
import os
import queue
import re
import socket
import subprocess

import pytest
import redis
from conftest import drain, fridge_binary, password_line, tenants_toml
from test_redis_parity import redis_server, same  # noqa: F401 (the fixture)


@pytest.fixture
def logged():
    """A factory of `Logged` servers, every one killed after the test."""
    servers = []

    def start(*args):
        servers.append(Logged(*args))
        return servers[-1]

    yield start
    for s in servers:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


class Logged:
    """A fridge whose standard error is read line by line in the background."""

    def __init__(self, *args):
        env = {**os.environ, "FRIDGE_USER": os.environ.get("FRIDGE_USER", getpass.getuser())}
        self.proc = subprocess.Popen(
            [fridge_binary(), "-p", "0", "-m", "64", "-t", "2", *args],
            stderr=subprocess.PIPE, text=True, env=env,
        )
        drain(self.proc)
        first = self.next()
        match = re.search(r"on 127\.0\.0\.1:(\d+)", first)
        assert match, first
        self.port = int(match.group(1))
        self.first = first

    def next(self, timeout=10):
        return self.proc.log_lines.get(timeout=timeout).rstrip("\n")

    def until(self, pattern, timeout=10):
        """The lines up to and including the first that matches `pattern`."""
        seen = []
        while True:
            line = self.next(timeout)
            seen.append(line)
            if re.search(pattern, line):
                return seen

    def quiet(self, seconds=0.3):
        """Whether no line arrives within `seconds`."""
        try:
            line = self.proc.log_lines.get(timeout=seconds)
        except queue.Empty:
            return True
        raise AssertionError(f"unexpected log line: {line}")

    def stop(self):
        self.proc.terminate()
        assert self.proc.wait(timeout=10) == 0


def test_json_lines_carry_connections_logins_configuration_and_the_summary(tmp_path, logged):
    path = tmp_path / "log.toml"
    path.write_text(tenants_toml({"shop": ("right", [])}, allow_unauthenticated="true"))
    server = logged("--config", str(path), "--log-format", "json", "--log-level", "debug")
    lines = [server.first] + server.until("configuration:")
    records = [json.loads(line) for line in lines]
    for r in records:
        assert set(r) == {"time", "level", "thread", "message"}, r
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r["time"]), r
    assert records[0]["level"] == "info" and "serving memcached and RESP" in records[0]["message"]
    config = records[-1]["message"]
    assert config.startswith("configuration: listen=127.0.0.1") and "tenants=[shop(0)]" in config and "log_format=json" in config, config
    assert "password" not in config and password_line("right") not in config

    r = redis.Redis(port=server.port)
    r.ping()
    opened = json.loads(server.until("new client connection")[-1])
    assert opened["level"] == "debug" and opened["thread"] == "fridge-accept"
    with pytest.raises(redis.AuthenticationError):
        r.execute_command("AUTH", "shop", "wrong")
    failed = json.loads(server.until("login as")[-1])
    assert failed["level"] == "info" and re.fullmatch(
        r"login as shop from 127\.0\.0\.1 failed", failed["message"]), failed
    r.close()
    closed = json.loads(server.until("closed")[-1])
    assert closed["level"] == "debug" and closed["thread"].startswith("fridge-w"), closed
    server.proc.terminate()
    assert server.proc.wait(timeout=10) == 0
    last = json.loads(server.until("shut down")[-1])
    assert re.fullmatch(r"shut down: up \d+ s, \d+ connections, \d+ gets \(\d+ hits\), \d+ sets, "
                        r"\d+ items held, \d+ evicted", last["message"]), last


def test_levels_change_at_run_time_through_either_protocol(logged):
    server = logged()  # text, info: the startup line and the configuration, no connections
    assert server.first.startswith("fridge 0.1.0: serving memcached and RESP on 127.0.0.1:")
    assert server.next().startswith("fridge: configuration: ")
    r = redis.Redis(port=server.port, decode_responses=True)
    assert r.config_get("loglevel") == {"loglevel": "notice"}
    assert server.quiet()
    assert r.config_set("loglevel", "verbose")
    assert r.config_get("loglevel") == {"loglevel": "verbose"}
    other = redis.Redis(port=server.port)
    other.ping()
    assert "fridge: new client connection from 127.0.0.1:" in server.next()
    other.close()
    assert re.search(r"fridge: client connection from 127\.0\.0\.1:\d+ closed", server.next())
    # memcached's `verbosity 1`: back to info, connections unlogged.
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"verbosity 1\r\n")
        assert s.recv(100) == b"OK\r\n"
    assert server.next().startswith("fridge: new client connection")  # opened at `verbose`
    assert r.config_get("loglevel") == {"loglevel": "notice"}
    redis.Redis(port=server.port).ping()
    assert server.quiet()
    server.stop()


def test_config_set_loglevel_answers_as_redis(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["CONFIG", "SET", "loglevel", "loud"],
        ["CONFIG", "SET", "loglevel", "warning"],
        ["CONFIG", "GET", "loglevel"],
        ["CONFIG", "SET", "loglevel", "notice"],
        ["CONFIG", "GET", "loglevel"],
    ])


def test_a_bad_log_level_stops_the_start_with_a_clear_line():
    proc = subprocess.run([fridge_binary(), "-p", "0", "--log-level", "loud"],
                          capture_output=True, text=True, timeout=10,
                          env={**os.environ, "FRIDGE_USER": getpass.getuser()})
    assert proc.returncode == 2
    assert 'log level "loud" is none of error, warn, info, debug, trace' in proc.stderr
