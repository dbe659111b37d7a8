"""Tools for the hostile-client tests (`test_hostile_*.py`): the server's resident memory, a
bystander client whose latency is recorded while an attack runs, and raw sockets.

Every attack is bounded in time and bytes and talks to 127.0.0.0/8 only. A test asserts what
the server must do (answer, refuse, stay within memory, keep serving the bystander); the
bystander's latencies are printed for the record (`pytest -s` shows them), and asserted only
as liveness: every bystander request is answered, none waits longer than `STALL_S`.
"""

import socket
import statistics
import threading
import time

# A bystander request unanswered this long means the server stalled (not a timing figure).
STALL_S = 1.0


def rss_bytes(pid):
    """Resident set size of process `pid` (Linux /proc)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid):
    """User + system CPU time of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    import os

    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def connect(port, host="127.0.0.1", source=None, timeout=5.0):
    """A blocking socket to the server, optionally from another loopback `source` address."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if source:
        s.bind((source, 0))
    s.connect((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_until(sock, end, limit=1 << 30):
    """Reads until the received bytes end with `end`; returns them."""
    buf = bytearray()
    while not buf.endswith(end):
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError(f"closed after {len(buf)} bytes")
        buf += chunk
        if len(buf) > limit:
            raise AssertionError(f"more than {limit} bytes")
    return bytes(buf)


def read_exactly(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(1 << 20, n - len(buf)))
        if not chunk:
            raise ConnectionError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def is_closed(sock, wait=2.0):
    """Whether the server closed `sock` (reads what is pending, up to `wait` seconds)."""
    sock.settimeout(wait)
    try:
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                return True
    except (socket.timeout, TimeoutError):
        return False
    except ConnectionError:
        return True


class Bystander:
    """A well-behaved memcached client that sets and gets one small key in a loop on its own
    connection while an attack runs, recording each round trip's latency.

        with Bystander(port) as b:
            attack()
        b.report("name")   # prints median / p99 / max; asserts it was served, never stalled

    On a server that requires a login, pass `login=(user, password)`: the bystander logs in
    with memcached's `set` carrying them before its first request. `source` picks the loopback
    address it connects from; `ready` is set once its first request was answered.
    """

    def __init__(self, port, host="127.0.0.1", key=b"bystander", pause=0.002, login=None,
                 source=None):
        self.port, self.host, self.key, self.pause = port, host, key, pause
        self.login, self.source = login, source
        self.latencies = []
        self.errors = []
        self.ready = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _log_in(self, sock):
        data = ("%s %s" % self.login).encode()
        sock.sendall(b"set auth 0 0 %d\r\n%s\r\n" % (len(data), data))
        reply = read_until(sock, b"\r\n")
        if reply != b"STORED\r\n":
            raise AssertionError(f"login refused: {reply!r}")

    def _run(self):
        try:
            sock = connect(self.port, self.host, source=self.source, timeout=STALL_S * 5)
            if self.login:
                self._log_in(sock)
            value = b"v" * 32
            sock.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (self.key, len(value), value))
            read_until(sock, b"\r\n")
            expected = b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (self.key, len(value), value)
            while not self._stop.is_set():
                start = time.monotonic()
                sock.sendall(b"get %s\r\n" % self.key)
                reply = read_until(sock, b"END\r\n")
                self.latencies.append(time.monotonic() - start)
                self.ready.set()
                if reply != expected:
                    self.errors.append(f"unexpected reply {reply[:80]!r}")
                    return
                time.sleep(self.pause)
            sock.close()
        except Exception as e:  # noqa: BLE001 - reported by report()
            self.errors.append(repr(e))

    def __enter__(self):
        # The attack starts once the bystander is being served, so a stall shows in its
        # latencies rather than in its setup.
        self._thread.start()
        self.ready.wait(STALL_S * 5)
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=STALL_S * 10)

    def summary(self):
        lat = sorted(self.latencies)
        if not lat:
            return {"requests": 0}
        return {
            "requests": len(lat),
            "median_ms": round(statistics.median(lat) * 1000, 3),
            "p99_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000, 3),
            "max_ms": round(lat[-1] * 1000, 3),
        }

    def report(self, name):
        """Prints the figures; asserts the bystander was served throughout and never stalled."""
        s = self.summary()
        print(f"\n[hostile] {name}: bystander {s}")
        assert not self.errors, f"bystander failed: {self.errors}"
        assert s["requests"] > 0, "the bystander was never served"
        assert s["max_ms"] < STALL_S * 1000, f"the bystander stalled: {s}"
        return s
