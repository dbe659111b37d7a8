"""redis-cli's tools against fridge: --bigkeys, --memkeys, --hotkeys, --pipe (mass insertion,
RESP and inline), --latency and --stat. --bigkeys' summary is compared with Debian's
redis-server 7.0.15 holding the same keys. Skipped without redis-cli."""

import shutil
import socket
import subprocess
import time

import pytest

from test_redis_info import run_on_a_terminal
from test_redis_parity import Reader, encode, redis_server  # noqa: F401 (the fixture)

pytestmark = pytest.mark.skipif(not shutil.which("redis-cli"), reason="redis-cli is not installed")


def cli(addr, *args, stdin=None, timeout=30, status=0):
    result = subprocess.run(["redis-cli", "-h", addr[0], "-p", str(addr[1]), *args],
                            input=stdin, capture_output=True, timeout=timeout)
    assert result.returncode == status, result.stderr
    return result.stdout.decode()


def commands(addr, *cmds):
    with socket.create_connection(addr) as s:
        s.settimeout(10)
        r = Reader(s)
        s.sendall(b"".join(encode(c) for c in cmds))
        return [r.reply() for _ in cmds]


def summary(text):
    return text.split("-------- summary -------", 1)[1].strip()


@pytest.fixture
def keys(fridge, redis_server):  # noqa: F811
    """The same 30 string keys on both servers (key<i> holds i bytes), removed afterwards."""
    for addr in (fridge, redis_server):
        commands(addr, ["FLUSHALL"], *[["SET", f"key{i}", "v" * i] for i in range(1, 31)])
    yield
    for addr in (fridge, redis_server):
        commands(addr, ["FLUSHALL"])


def test_bigkeys_summary_is_redis_summary(fridge, redis_server, keys):  # noqa: F811
    ours, theirs = cli(fridge, "--bigkeys"), cli(redis_server, "--bigkeys")
    assert summary(ours) == summary(theirs)
    assert "Biggest string found '\"key30\"' has 30 bytes" in ours
    assert "30 strings with 465 bytes" in ours


def test_memkeys(fridge, keys):
    out = summary(cli(fridge, "--memkeys"))
    assert "Sampled 30 keys in the keyspace!" in out
    assert "Biggest string found '\"key30\"' has" in out
    biggest = int(out.split("Biggest string found '\"key30\"' has ")[1].split()[0])
    assert biggest > 30, "MEMORY USAGE counts the key, the value and their overhead"


def test_hotkeys(fridge, keys):
    # Reads reach the hitmap in batches (reference pools): enough of them to be applied.
    reads = b"GET key7\r\n" * 20000
    assert "errors: 0, replies: 20000" in cli(fridge, "--pipe", stdin=reads)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        out = cli(fridge, "--hotkeys")
        if 'keyname: "key7"' in out:
            break
        time.sleep(0.2)
    assert "Sampled 30 keys in the keyspace!" in out
    assert 'hot key found with counter: ' in out and 'keyname: "key7"' in out, out


def test_pipe_mass_insertion_resp_and_inline(fridge):
    resp = b"".join(encode(["SET", f"mass{i}", i]) for i in range(20000))
    out = cli(fridge, "--pipe", stdin=resp)
    assert "errors: 0, replies: 20000" in out, out
    inline = b"".join(b"INCR mass%d\r\n" % i for i in range(5000))
    out = cli(fridge, "--pipe", stdin=inline)
    assert "errors: 0, replies: 5000" in out, out
    assert commands(fridge, ["GET", "mass4999"], ["GET", "mass19999"], ["DBSIZE"])[:2] == \
        [b"$4\r\n5000\r\n", b"$5\r\n19999\r\n"]
    bad = encode(["SET", "x"]) + encode(["GET", "mass1"])
    assert "errors: 1, replies: 2" in cli(fridge, "--pipe", stdin=bad, status=1)
    commands(fridge, ["FLUSHALL"])


def test_latency_and_stat(fridge):
    host, port = fridge
    latency = subprocess.run(["redis-cli", "-h", host, "-p", str(port), "--latency", "-i", "0.2"],
                             capture_output=True, timeout=10, text=True, input="")
    lo, hi, avg, samples = latency.stdout.split()
    assert 0 <= int(lo) <= float(avg) <= int(hi) and int(samples) > 0, latency.stdout
    out = run_on_a_terminal(["redis-cli", "-h", host, "-p", str(port), "--stat", "-i", "0.2"], 1.5)
    assert "------- data ------" in out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert len(rows) >= 2 and all(len(r) >= 6 for r in rows), out
