"""The memcached binary protocol through pylibmc (libmemcached with `binary=True`): every
call a client makes, run against fridge and, where Debian's memcached is installed, against
memcached too, with the same results (CAS values aside)."""

import shutil
import socket
import subprocess
import time

import pytest

from conftest import free_port, wait_port

pylibmc = pytest.importorskip("pylibmc")



@pytest.fixture(scope="module")
def memcached():
    """(host, port) of a real memcached, or None when it is not installed."""
    binary = shutil.which("memcached")
    if binary is None:
        yield None
        return
    port = free_port()
    proc = subprocess.Popen(
        [binary, "-u", "root", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", "64"]
    )
    wait_port(port)
    yield ("127.0.0.1", port)
    proc.terminate()
    proc.wait(timeout=10)


def client(addr):
    mc = pylibmc.Client([f"{addr[0]}:{addr[1]}"], binary=True, behaviors={"cas": True})
    mc.flush_all()
    return mc


def outcome(call):
    """The call's result, or the name of the exception it raised."""
    try:
        return call()
    except pylibmc.Error as e:
        return type(e).__name__


def script(mc):
    """Every binary-protocol call pylibmc makes; returns what each answered."""
    r = []
    r.append(mc.set("a", "hello"))
    r.append(mc.get("a"))
    r.append(mc.get("nope"))
    r.append(mc.set("n", 5))
    r.append(mc.incr("n", 3))
    r.append(mc.decr("n", 10))
    r.append(outcome(lambda: mc.incr("missing", 1)))
    # (INCR on a value that is not a number is left out: libmemcached then takes the
    # server for failed, with memcached as with fridge.)
    r.append(mc.add("a", "x"))
    r.append(mc.add("fresh", "x"))
    r.append(outcome(lambda: mc.replace("zz", "x")))
    r.append(mc.replace("a", "y"))
    r.append(mc.append("a", "!"))
    r.append(mc.prepend("a", "<"))
    r.append(outcome(lambda: mc.append("nothing", "!")))
    r.append(mc.get("a"))
    r.append(mc.get_multi(["a", "n", "missing", "fresh"]))
    r.append(mc.set_multi({"k1": b"v1", "k2": [1, 2], "k3": 3.5}))
    r.append(mc.get_multi(["k1", "k2", "k3"]))
    r.append(mc.delete("a"))
    r.append(mc.delete("a"))
    # (A TOUCH that hits is left out: libmemcached 1.1 waits out its timeout on the reply,
    # from memcached as from fridge; crates/server/tests/binary.rs checks its bytes.)
    r.append(mc.touch("nope", 100))
    value, cas = mc.gets("k1")
    r.append(value)
    r.append(mc.cas("k1", "new", cas))
    r.append(mc.cas("k1", "newer", cas))
    r.append(mc.get("k1"))
    r.append(mc.gets("nope"))
    r.append(mc.delete_multi(["k1", "k2", "nope"]))
    r.append(outcome(lambda: mc.set("big", b"x" * (2 << 20))))
    r.append(mc.get("big"))
    r.append(mc.get("k3"))
    r.append(mc.flush_all())
    r.append(mc.get_multi(["n", "k3", "fresh"]))
    return r


def test_pylibmc_binary_calls(fridge, memcached):
    got = script(client(fridge))
    assert got[:3] == [True, "hello", None]
    assert got[4:7] == [8, 0, "NotFound"]
    assert got[-4:] == [None, 3.5, True, {}]
    if memcached is None:
        pytest.skip("memcached is not installed: no side-by-side comparison")
    assert got == script(client(memcached))


def test_pylibmc_binary_stats_and_version(fridge):
    mc = client(fridge)
    (server, stats), = mc.get_stats()
    assert b"127.0.0.1" in server
    for name in ("pid", "uptime", "curr_items", "get_hits", "cmd_set", "version"):
        assert name in stats, name
    assert stats["version"].decode() == mc.get_stats()[0][1]["version"].decode()
