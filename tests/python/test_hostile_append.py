"""A value never grows past the item size limit: APPEND/PREPEND (memcached text and meta,
Redis) that would take a value over `-I` are refused and leave the value as it was. The same
requests go to fridge, to memcached (`-I 1m`) and to redis-server (`proto-max-bulk-len
1048576`) side by side, and the replies must be the same bytes. Skipped where the reference
servers are not installed (scripts/test installs them)."""

import getpass
import shutil
import socket
import subprocess
import time

import pytest

from hostile import connect

from conftest import free_port, wait_port

LIMIT = 1 << 20




@pytest.fixture
def reference():
    """Starts memcached or redis-server on a free port: reference(name) -> port."""
    procs = []

    def start(name):
        port = free_port()
        if name == "memcached":
            args = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-I", "1m",
                    "-u", getpass.getuser()]
        else:
            args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--proto-max-bulk-len", str(LIMIT)]
        if not shutil.which(args[0]):
            pytest.skip(f"{args[0]} is not installed")
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        wait_port(port, proc)
        return port

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


def replies(port, requests):
    """Sends each request on one connection and returns the replies: each request is
    followed by a marker whose reply ends the read (`mn` for memcached, PING for RESP)."""
    sock = connect(port)
    out = []
    for req, marker, end in requests:
        sock.sendall(req + marker)
        buf = b""
        while not buf.endswith(end):
            chunk = sock.recv(1 << 20)
            assert chunk, f"connection closed after {buf!r}"
            buf += chunk
        out.append(buf[: -len(end)])
    sock.close()
    return out


def mc(line, data=None):
    req = line.encode() + b"\r\n"
    if data is not None:
        req += data + b"\r\n"
    return (req, b"mn\r\n", b"MN\r\n")


def resp(*args):
    req = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        req += b"$%d\r\n%s\r\n" % (len(a), a)
    return (req, b"*1\r\n$4\r\nPING\r\n", b"+PONG\r\n")


START = LIMIT - 576  # fits memcached's 1 MiB item with room to spare

MEMCACHE = [
    mc(f"set k 0 0 {START}", b"a" * START),
    mc("append k 0 0 1000", b"b" * 1000),
    mc("mg k s"),
    mc("prepend k 0 0 1000", b"b" * 1000),
    mc("mg k s"),
    mc("ms k 1000 MA", b"b" * 1000),
    mc("ms k 1000 MP", b"b" * 1000),
    mc("ms k 1000 MA q", b"b" * 1000),
    mc("append k 0 0 1000 noreply", b"b" * 1000),
    mc("mg k s"),
    mc("append nope 0 0 3", b"abc"),
]

REDIS = [
    resp("SET", "k", b"a" * START),
    resp("APPEND", "k", b"b" * 1000),
    resp("STRLEN", "k"),
    resp("APPEND", "k", b"b" * 576),
    resp("APPEND", "k", b"b"),
    resp("STRLEN", "k"),
    resp("GET", "k"),
]


def test_memcached_append_over_the_limit_matches_memcached(fridge, reference):
    want = replies(reference("memcached"), MEMCACHE)
    got = replies(fridge[1], MEMCACHE)
    assert want[1] == b"NOT_STORED\r\n" and want[2] == b"HD s%d\r\n" % START
    assert got == want


def test_redis_append_over_the_limit_matches_redis(fridge, reference):
    want = replies(reference("redis"), REDIS)
    got = replies(fridge[1], REDIS)
    assert want[1] == b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"
    assert got == want
