"""Hostile clients against logging in: password guessing over Redis AUTH and memcached's
login `set`, from one address, the way a guesser tries to beat a limit — one client that
reconnects for every guess and 50 connections guessing in parallel, for about three seconds.

The server must
- check no more guesses than the limit allows: `burst + rate × elapsed`, plus one per worker
  (two attempts checked at the same moment on two workers may share a bucket's last token);
- let a legitimate client from another address (127.0.0.2) log in as the attacked user, at
  once, while the attack goes on;
- hold no slot for a client that left (`curr_connections` falls back once the attackers go);
- keep serving a bystander.

The figures (guesses sent, checked and refused, the legitimate logins' times, the bystander's
latency, the server's memory) are printed for the record (`pytest -s`)."""

import threading
import time

import pytest
from conftest import tenants_toml
from hostile import Bystander, connect, rss_bytes

RATE = 2.0
BURST = 5
WORKERS = 2  # conftest's `launch` starts fridge with -t 2
ATTACK_S = 3.0
PARALLEL = 50
TENANTS = {"default": ("root", []), "alpha": ("apw", []), "beta": ("bpw", [])}
CONFIG = {"auth_failure_rate": str(RATE), "auth_failure_burst": str(BURST)}


class Protocol:
    """One protocol's login request and its replies."""

    def __init__(self, name, request, ok, wrong, refused):
        self.name, self.request = name, request
        self.ok, self.wrong, self.refused = ok, wrong, refused

    def login(self, user, password):
        return self.request(user, password)


def resp_auth(user, password):
    args = [b"AUTH", user.encode(), password.encode()]
    return b"*3\r\n" + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def mc_auth(user, password):
    data = f"{user} {password}".encode()
    return b"set auth 0 0 %d\r\n%s\r\n" % (len(data), data)


PROTOCOLS = {
    "resp": Protocol(
        "resp",
        resp_auth,
        ok=b"+OK\r\n",
        wrong=b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
        refused=b"-ERR too many failed login attempts; try again later\r\n",
    ),
    "memcache": Protocol(
        "memcache",
        mc_auth,
        ok=b"STORED\r\n",
        wrong=b"CLIENT_ERROR authentication failure\r\n",
        refused=b"CLIENT_ERROR too many failed login attempts\r\n",
    ),
}


def read_line(sock):
    buf = bytearray()
    while not buf.endswith(b"\r\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise ConnectionError(f"closed after {bytes(buf)!r}")
        buf += chunk
    return bytes(buf)


class Tally:
    """Replies the attackers got, by kind (shared by their threads)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {"checked": 0, "refused": 0, "accepted": 0, "other": 0}

    def add(self, kind):
        with self.lock:
            self.counts[kind] += 1


def classify(proto, reply):
    if reply == proto.wrong:
        return "checked"
    if reply == proto.refused:
        return "refused"
    if reply == proto.ok:
        return "accepted"
    return "other"


def reconnecting_guesser(port, proto, tally, deadline):
    """A new connection for every guess: what a pause per connection could not stop."""
    n = 0
    while time.monotonic() < deadline:
        sock = connect(port)
        sock.sendall(proto.login("alpha", f"fast-{n}"))
        tally.add(classify(proto, read_line(sock)))
        sock.close()
        n += 1


def parallel_guesser(port, proto, tally, deadline, index):
    """One of many connections guessing as fast as their replies come."""
    sock = connect(port)
    n = 0
    while time.monotonic() < deadline:
        sock.sendall(proto.login("alpha", f"par-{index}-{n}"))
        tally.add(classify(proto, read_line(sock)))
        n += 1
    sock.close()


def legitimate_login(port, proto):
    """Logs in as the attacked user from another address; returns the seconds it took."""
    start = time.monotonic()
    sock = connect(port, source="127.0.0.2")
    sock.sendall(proto.login("alpha", "apw"))
    reply = read_line(sock)
    took = time.monotonic() - start
    sock.close()
    assert reply == proto.ok, f"the legitimate client was turned away: {reply!r}"
    return took


def admin_figures(port, proto, sock):
    """(checked failures, refusals, current connections) as the admin sees them."""
    if proto.name == "resp":
        sock.sendall(b"*2\r\n$4\r\nINFO\r\n$10\r\neverything\r\n")
        header = read_line(sock)
        body = b""
        while len(body) < int(header[1:]) + 2:
            body += sock.recv(65536)
        fields = dict(
            line.split(":", 1) for line in body.decode().split("\r\n") if ":" in line
        )
        names = ("acl_access_denied_auth", "auth_refused", "connected_clients")
    else:
        sock.sendall(b"stats\r\n")
        text = b""
        while not text.endswith(b"END\r\n"):
            text += sock.recv(65536)
        fields = dict(
            line.split(" ")[1:3] for line in text.decode().split("\r\n") if line.startswith("STAT")
        )
        names = ("auth_errors", "auth_refused", "curr_connections")
    return tuple(int(fields[n]) for n in names)


@pytest.mark.parametrize("protocol", ["resp", "memcache"])
def test_guessing_is_limited_and_legitimate_clients_get_in(tenant_server, protocol):
    proto = PROTOCOLS[protocol]
    server = tenant_server(tenants_toml(TENANTS, **CONFIG))
    port = server.port
    # The admin and the bystander log in before the attack (from 127.0.0.1, like it).
    admin = connect(port)
    admin.sendall(proto.login("default", "root"))
    assert read_line(admin) == proto.ok
    rss_before = rss_bytes(server.proc.pid)
    tally = Tally()
    legit = []
    with Bystander(port, login=("beta", "bpw")) as bystander:
        assert bystander.ready.wait(5), "the bystander never got going"
        _, _, baseline = admin_figures(port, proto, admin)
        start = time.monotonic()
        deadline = start + ATTACK_S
        threads = [threading.Thread(target=reconnecting_guesser,
                                    args=(port, proto, tally, deadline))]
        threads += [
            threading.Thread(target=parallel_guesser, args=(port, proto, tally, deadline, i))
            for i in range(PARALLEL)
        ]
        for t in threads:
            t.start()
        # Mid-attack (the buckets are long spent): the real alpha logs in from elsewhere.
        for at in (0.5, 1.5, 2.5):
            time.sleep(max(0.0, start + at - time.monotonic()))
            legit.append(legitimate_login(port, proto))
        _, _, during = admin_figures(port, proto, admin)
        rss_during = rss_bytes(server.proc.pid)
        for t in threads:
            t.join()
        elapsed = time.monotonic() - start
    bystander.report(f"login guessing over {protocol}")
    checked_server, refused_server, _ = admin_figures(port, proto, admin)
    bound = BURST + RATE * elapsed + WORKERS
    print(
        f"\n[hostile] login guessing over {protocol}: {sum(tally.counts.values())} guesses in "
        f"{elapsed:.2f} s: {tally.counts}; server counted {checked_server} checked, "
        f"{refused_server} refused (bound {bound:.1f}); legitimate logins from 127.0.0.2 took "
        f"{[round(t * 1000, 1) for t in legit]} ms; {during} connections during the attack; "
        f"RSS {rss_before >> 20} MiB before, {rss_during >> 20} MiB during"
    )
    assert tally.counts["accepted"] == 0 and tally.counts["other"] == 0, tally.counts
    assert tally.counts["refused"] > 0, "the attack never reached the limit"
    assert tally.counts["checked"] <= bound, (tally.counts, bound)
    assert checked_server == tally.counts["checked"], "every checked guess was seen"
    assert refused_server >= tally.counts["refused"]
    assert all(t < 1.0 for t in legit), legit
    # Once the attackers have gone, their slots are free again.
    settle = time.monotonic() + 5
    while True:
        _, _, now = admin_figures(port, proto, admin)
        if now <= baseline:
            break
        assert time.monotonic() < settle, f"{now} connections held, {baseline} before"
        time.sleep(0.05)
    assert rss_bytes(server.proc.pid) - rss_before < 64 << 20, "memory grew with the attack"
    admin.close()
