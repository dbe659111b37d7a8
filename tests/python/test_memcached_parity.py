"""Raw bytes sent to fridge and to Debian's memcached 1.6 in the same run: the two must answer
alike (reply bytes, and whether the connection stays open). Skipped without memcached."""

import shutil
import socket
import subprocess
import time

import pytest

from conftest import free_port, wait_port

MEMCACHED = shutil.which("memcached")



@pytest.fixture(scope="module")
def memcached():
    if not MEMCACHED:
        pytest.skip("memcached is not installed")
    port = free_port()
    proc = subprocess.Popen([MEMCACHED, "-u", "root", "-l", "127.0.0.1", "-p", str(port), "-U", "0"])
    wait_port(port)
    yield ("127.0.0.1", port)
    proc.terminate()
    proc.wait(timeout=10)


def read_reply(s):
    """Reads up to the `MN` that answers the `mn` sent after a request (so the reply's end is
    known without waiting), or to the server's close."""
    out = b""
    while not out.endswith(b"MN\r\n"):
        try:
            data = s.recv(1 << 20)
        except ConnectionResetError:
            data = b""
        if not data:
            return out + b"<closed>"
        out += data
    return out[: -len(b"MN\r\n")]


def session(addr, requests):
    """Sends each request on one connection in turn, each followed by `mn`; returns the
    replies (a closed connection shows as `<closed>`)."""
    replies = []
    with socket.create_connection(addr) as s:
        s.settimeout(10)
        for request in requests:
            s.sendall(request + b"mn\r\n")
            replies.append(read_reply(s))
            if replies[-1].endswith(b"<closed>"):
                break
    return replies


# Unknown commands whose last token starts with HTTP/ close the connection at once, without a
# reply; everything else is an ordinary command or an ordinary ERROR.
HTTP_LINES = [
    b"GET / HTTP/1.1\r\n",
    b"POST /x HTTP/1.0\r\n",
    b"PUT / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"HEAD / HTTP/1.1\r\n",
    b"OPTIONS * HTTP/1.1\r\n",
    b"GET / HTTP/1.1\n",
    b"FOO bar HTTP/2\r\n",
    b"HTTP/1.1\r\n",
    b"FOO HTTP/\r\n",
    b"get / HTTP/1.1\r\n",
    b"GET /\r\n",
    b"x HTTP/1\r\n",
    b"x y z HTTP/1.1\r\n",
    b"PUT / http/1.1\r\n",
    b"FOO HTTP/ x\r\n",
    b"set / HTTP/1.1\r\n",
]


@pytest.mark.parametrize("request_bytes", HTTP_LINES, ids=lambda r: r.decode().strip())
def test_http_request_lines_answer_as_memcached(fridge, memcached, request_bytes):
    assert session(fridge, [request_bytes]) == session(memcached, [request_bytes])


BIG = b"x" * (2 << 20)  # over both servers' default 1 MiB item limit


@pytest.mark.parametrize(
    "store",
    [
        b"set k 0 0 %d\r\n" % len(BIG),
        b"set k 0 0 %d noreply\r\n" % len(BIG),
        b"add k 0 0 %d\r\n" % len(BIG),
        b"replace k 0 0 %d\r\n" % len(BIG),
        b"append k 0 0 %d\r\n" % len(BIG),
        b"prepend k 0 0 %d\r\n" % len(BIG),
        b"cas k 0 0 %d 1\r\n" % len(BIG),
        b"ms k %d\r\n" % len(BIG),
        b"ms k %d MR q\r\n" % len(BIG),
        b"ms k %d MA\r\n" % len(BIG),
        b"ms aw== %d b\r\n" % len(BIG),
    ],
    ids=lambda r: r.decode().split("\r")[0],
)
def test_a_store_refused_as_too_large_drops_the_old_value_as_memcached(fridge, memcached, store):
    # `set` and `ms` drop the old value (no stale data survives a failed set); the others keep it.
    requests = [b"set k 0 0 1\r\na\r\n", store + BIG + b"\r\n", b"get k\r\n"]
    assert session(fridge, requests) == session(memcached, requests)
