"""Starts fridge servers (the binary cargo built) on ephemeral ports: one plain server for the
session, and servers with tenants from a configuration file for the tenant tests."""

import getpass
import hashlib
import os
import re
import socket
import queue
import subprocess
import threading
import time
import urllib.request

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fridge_binary():
    if os.environ.get("FRIDGE_BIN"):
        return os.environ["FRIDGE_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    return os.path.join(target, "debug", "fridge")


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on (for a reference server)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc=None, seconds=10):
    """Waits until something listens on `port` (and `proc`, if given, is still running)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc is None or proc.poll() is None, "the server exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {port}")


def launch(*args, workers=2, memory_mb=64):
    """Starts fridge with `args`; returns (process, port) once it serves."""
    # Started as root, fridge (like memcached) wants a user to become: this one. Through the
    # environment, which older builds (bench/hostile runs one) ignore.
    env = {**os.environ, "FRIDGE_USER": os.environ.get("FRIDGE_USER", getpass.getuser())}
    proc = subprocess.Popen(
        [fridge_binary(), "-p", "0", "-m", str(memory_mb), "-t", str(workers), *args],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = proc.stderr.readline()
    match = re.search(r"on 127\.0\.0\.1:(\d+)", line)
    assert match, f"unexpected startup line: {line!r}"
    drain(proc)
    return proc, int(match.group(1))


def drain(proc):
    """Reads the rest of `proc`'s standard error in the background into `proc.log_lines` (a
    queue a test may read): the server logs failed logins and its shutdown, and a full pipe
    would block it."""
    proc.log_lines = queue.Queue()

    def read():
        for line in proc.stderr:
            proc.log_lines.put(line)

    threading.Thread(target=read, daemon=True).start()


def stop(proc):
    proc.terminate()
    assert proc.wait(timeout=10) == 0, "graceful shutdown exits 0"


@pytest.fixture(scope="session")
def fridge():
    """Yields (host, port) of a running fridge; stops it afterwards."""
    proc, port = launch()
    yield ("127.0.0.1", port)
    stop(proc)


def password_line(password, salt=b"pytest-salt"):
    """The `password_sha256` value `fridge hash-password` would print, with a fixed salt."""
    digest = hashlib.sha256(salt + password.encode()).hexdigest()
    return f"{salt.hex()}${digest}"


def tenants_toml(tenants, **options):
    """A configuration file: `tenants` maps names to (password, extra TOML lines)."""
    lines = [f"{key} = {value}" for key, value in options.items()]
    for name, (password, extra) in tenants.items():
        lines.append("[[tenants]]")
        lines.append(f'name = "{name}"')
        if password is not None:
            lines.append(f'password_sha256 = "{password_line(password)}"')
        lines.extend(extra)
    return "\n".join(lines) + "\n"


class TenantServer:
    """A fridge started with `--config FILE`; `write` replaces the file (then reload it)."""

    def __init__(self, path, text):
        self.path = path
        self.write(text)
        self.proc, self.port = launch("--config", str(path))
        self.addr = ("127.0.0.1", self.port)

    def write(self, text):
        self.path.write_text(text)

    def sighup(self):
        self.proc.send_signal(1)  # SIGHUP


@pytest.fixture
def tenant_server(tmp_path):
    """A factory: tenant_server(toml_text) starts a server with that file; all are stopped
    after the test."""
    servers = []

    def start(text):
        server = TenantServer(tmp_path / f"fridge-{len(servers)}.toml", text)
        servers.append(server)
        return server

    yield start
    for server in servers:
        stop(server.proc)


def go_tool(script, env_var, timeout=600):
    """The path of a Go program the tests use: `$env_var` if set, else what `scripts/<script>`
    builds and prints; skips the test, saying why, when neither works."""
    if os.environ.get(env_var):
        return os.environ[env_var]
    run = subprocess.run([os.path.join(ROOT, "scripts", script)], capture_output=True, text=True,
                         timeout=timeout)
    if run.returncode != 0:
        pytest.skip(f"{script} could not be built: " + run.stderr.strip()[-300:])
    return run.stdout.strip()


def scrape_exporter(argv):
    """Starts a Prometheus exporter (`argv`, given a free `--web.listen-address`), returns the
    text of its `/metrics`, and stops it."""
    web = free_port()
    proc = subprocess.Popen([*argv, f"--web.listen-address=127.0.0.1:{web}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(web)
        return urllib.request.urlopen(f"http://127.0.0.1:{web}/metrics", timeout=10).read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
