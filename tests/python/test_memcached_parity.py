"""Raw bytes sent to fridge and to Debian's memcached 1.6 in the same run: the two must answer
alike (reply bytes, and whether the connection stays open). Skipped without memcached."""

import shutil
import socket
import subprocess
import time

import pytest

MEMCACHED = shutil.which("memcached")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def memcached():
    if not MEMCACHED:
        pytest.skip("memcached is not installed")
    port = free_port()
    proc = subprocess.Popen([MEMCACHED, "-u", "root", "-l", "127.0.0.1", "-p", str(port), "-U", "0"])
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "memcached did not start"
            time.sleep(0.05)
    yield ("127.0.0.1", port)
    proc.terminate()
    proc.wait(timeout=10)


def exchange(addr, request, wait=0.5):
    """Sends `request`; returns what came back and whether the server closed the connection
    (an open connection is seen by the reply's end: nothing more for `wait` seconds)."""
    with socket.create_connection(addr) as s:
        s.sendall(request)
        s.settimeout(wait)
        out = b""
        while True:
            try:
                data = s.recv(4096)
            except socket.timeout:
                return out, "open"
            except ConnectionResetError:
                return out, "closed"
            if not data:
                return out, "closed"
            out += data


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
    assert exchange(fridge, request_bytes) == exchange(memcached, request_bytes)
