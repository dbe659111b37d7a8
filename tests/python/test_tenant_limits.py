"""Per-tenant limits through redis-py, pymemcache and raw sockets: max_connections (the
login past it refused with each protocol's error, other tenants unaffected, a closed
connection's slot given back, counted in stats), max_requests_per_second (a pipelined burst
partly refused and counted, other tenants unaffected, requests passing again once the bucket
refills), and reloads that change both without dropping connections. The assertions are on
behaviour, never on timing precision."""

import socket
import time

import pytest
import redis
from conftest import tenants_toml
from pymemcache.exceptions import MemcacheServerError
from test_tenants import mc_login, mclient, rclient

FULL = "max number of clients reached for this tenant"
THROTTLED = "max requests per second reached for this tenant"
MC_THROTTLED = b"SERVER_ERROR too many requests per second for this tenant\r\n"

TENANTS = {
    "default": ("root", []),
    "alpha": ("apw", ["max_connections = 2"]),
    "beta": ("bpw", []),
    "slow": ("spw", ["max_requests_per_second = 50"]),
    "slowmc": ("mpw", ["max_requests_per_second = 50"]),
}


@pytest.fixture
def server(tenant_server):
    return tenant_server(tenants_toml(TENANTS, auth_failure_burst="1000"))


def eventually(check, seconds=5.0):
    """Polls `check` until it returns a true value (the server notices a closed socket when
    it reads it, not when the client closes)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            value = check()
            if value:
                return value
        except (redis.ResponseError, MemcacheServerError):
            pass
        assert time.monotonic() < deadline, "did not happen in time"
        time.sleep(0.05)


def admin_rows(server):
    return rclient(server, password="root").info("tenants")


def raw(server):
    s = socket.create_connection(server.addr, timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_until(s, end, count=1):
    data = b""
    while data.count(end) < count:
        chunk = s.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    return data


def test_connection_limit_with_redis(server):
    a1 = rclient(server, username="alpha", password="apw")
    a2 = rclient(server, username="alpha", password="apw")
    assert a1.ping() and a2.ping()
    with pytest.raises(redis.ResponseError, match=FULL):
        rclient(server, username="alpha", password="apw").ping()
    # A wrong password is still a wrong password: the limit reveals nothing without it.
    with pytest.raises(redis.AuthenticationError):
        rclient(server, username="alpha", password="wrong").ping()
    # Another tenant is unaffected.
    betas = [rclient(server, username="beta", password="bpw") for _ in range(4)]
    assert all(b.ping() for b in betas)
    # The refused connection stays open and logged out.
    s = raw(server)
    s.sendall(b"AUTH alpha apw\r\n")
    assert read_until(s, b"\r\n") == f"-ERR {FULL}\r\n".encode()
    s.sendall(b"PING\r\n")
    assert read_until(s, b"\r\n").startswith(b"-NOAUTH")
    # Logging in again as the tenant it is keeps its slot.
    assert a1.execute_command("AUTH", "alpha", "apw") in (b"OK", True)
    row = admin_rows(server)["tenant_alpha"]
    assert (row["connections"], row["max_connections"]) == (2, 2)
    assert row["rejected_connections"] == 2
    assert admin_rows(server)["tenant_beta"]["max_connections"] == 0, "0: no limit"
    # Closing one frees a slot; RESET (logging out) too.
    a1.close()
    a3 = rclient(server, username="alpha", password="apw")
    assert eventually(a3.ping)
    assert a2.execute_command("RESET") in (b"RESET", "RESET")
    s.sendall(b"AUTH alpha apw\r\nPING\r\n")
    assert read_until(s, b"\r\n", 2) == b"+OK\r\n+PONG\r\n"
    # A tenant sees its own row.
    own = a3.info("tenants")
    assert own["tenant_alpha"]["connections"] == 2
    assert "tenant_beta" not in own


def test_connection_limit_with_memcache(server):
    m1 = mc_login(server, "alpha", "apw")
    m2 = mc_login(server, "alpha", "apw")
    with pytest.raises(MemcacheServerError, match="too many connections for this tenant"):
        mclient(server).set("auth", b"alpha apw", noreply=False)
    # The slots are shared by both protocols.
    with pytest.raises(redis.ResponseError, match=FULL):
        rclient(server, username="alpha", password="apw").ping()
    mc_login(server, "beta", "bpw")
    rows = mc_login(server, "default", "root").stats("tenants")
    assert rows[b"alpha:connections"] == 2
    assert rows[b"alpha:rejected_connections"] == 2
    assert rows[b"alpha:max_connections"] == 2
    assert m2.stats()[b"tenant_rejected_connections"] == 2, "the tenant's own figures"
    m1.close()
    eventually(lambda: mc_login(server, "alpha", "apw"))


def test_request_rate_with_redis(server):
    slow = rclient(server, username="slow", password="spw")
    beta = rclient(server, username="beta", password="bpw")
    pipe = slow.pipeline(transaction=False)
    for _ in range(200):
        pipe.get("k")
    replies = pipe.execute(raise_on_error=False)
    refused = [r for r in replies if isinstance(r, redis.ResponseError)]
    assert all(THROTTLED in str(r) for r in refused)
    passed = len(replies) - len(refused)
    assert refused and passed, "some refused, some passed"
    # Another tenant is unaffected.
    pipe = beta.pipeline(transaction=False)
    for _ in range(200):
        pipe.get("k")
    assert pipe.execute() == [None] * 200
    rows = admin_rows(server)
    assert rows["tenant_slow"]["throttled_requests"] == len(refused)
    assert rows["tenant_slow"]["max_requests_per_second"] == 50
    assert rows["tenant_beta"]["throttled_requests"] == 0
    # A refused command did not run.
    eventually(lambda: slow.set("written", "1"))
    pipe = slow.pipeline(transaction=False)
    for i in range(200):
        pipe.set(f"k{i}", "v")
    replies = pipe.execute(raise_on_error=False)
    first_refused = next(i for i, r in enumerate(replies) if isinstance(r, redis.ResponseError))
    # Once refilled, requests pass again.
    assert eventually(lambda: slow.get(f"k{first_refused}") is None)
    assert eventually(slow.ping)


def test_request_rate_with_memcache(server):
    s = raw(server)
    s.sendall(b"set auth 0 0 10\r\nslowmc mpw\r\n")
    assert read_until(s, b"\r\n") == b"STORED\r\n"
    s.sendall(b"get k\r\n" * 200)
    replies = read_until(s, b"\r\n", 200).split(b"\r\n")[:-1]
    assert len(replies) == 200
    refused = replies.count(MC_THROTTLED.rstrip(b"\r\n"))
    assert refused + replies.count(b"END") == 200
    assert refused and refused < 200
    rows = mc_login(server, "default", "root").stats("tenants")
    assert rows[b"slowmc:throttled_requests"] == refused
    assert rows[b"slow:throttled_requests"] == 0, "each tenant its own bucket"
    # After the bucket refills, requests pass again.
    def passes():
        s.sendall(b"get k\r\n")
        return read_until(s, b"\r\n") == b"END\r\n"
    eventually(passes)
    # `quit` is never refused.
    s.sendall(b"get k\r\n" * 200 + b"quit\r\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    assert MC_THROTTLED in data, "closed after the refusals"


def test_request_rate_with_binary(server):
    def packet(opcode, key=b"", value=b""):
        header = bytes([0x80, opcode]) + len(key).to_bytes(2, "big") + b"\0\0\0\0"
        header += (len(key) + len(value)).to_bytes(4, "big") + b"\0" * 12
        return header + key + value

    s = raw(server)
    s.sendall(packet(0x21, b"PLAIN", b"\0slowmc\0mpw"))
    reply = s.recv(1024)
    assert reply[6:8] == b"\0\0", "authenticated"
    s.sendall(packet(0x0A) * 200)  # NOOP
    statuses = []
    data = b""
    while len(statuses) < 200:
        chunk = s.recv(65536)
        assert chunk
        data += chunk
        while len(data) >= 24:
            body = int.from_bytes(data[8:12], "big")
            if len(data) < 24 + body:
                break
            statuses.append((int.from_bytes(data[6:8], "big"), data[24:24 + body]))
            data = data[24 + body:]
    refused = [b for status, b in statuses if status == 0x86]
    assert refused and len(refused) < 200
    assert set(refused) == {b"Too many requests per second for this tenant."}


def test_reload_changes_limits(tenant_server):
    tenants = dict(TENANTS)
    tenants["alpha"] = ("apw", ["max_connections = 1"])
    server = tenant_server(tenants_toml(tenants))
    admin = rclient(server, password="root")
    a1 = rclient(server, username="alpha", password="apw")
    assert a1.ping()
    beta = rclient(server, username="beta", password="bpw")
    assert beta.ping()
    with pytest.raises(redis.ResponseError, match=FULL):
        rclient(server, username="alpha", password="apw").ping()
    # Raised: more logins pass.
    tenants["alpha"] = ("apw", ["max_connections = 3"])
    tenants["beta"] = ("bpw", ["max_requests_per_second = 50"])
    server.write(tenants_toml(tenants))
    assert admin.execute_command("CONFIG", "RELOAD") in (b"OK", True)
    more = [rclient(server, username="alpha", password="apw") for _ in range(2)]
    assert all(a.ping() for a in more)
    with pytest.raises(redis.ResponseError, match=FULL):
        rclient(server, username="alpha", password="apw").ping()
    # Lowered: connections already open stay, new logins are refused.
    tenants["alpha"] = ("apw", ["max_connections = 1"])
    server.write(tenants_toml(tenants))
    assert admin.execute_command("CONFIG", "RELOAD") in (b"OK", True)
    assert a1.ping() and all(a.ping() for a in more)
    with pytest.raises(redis.ResponseError, match=FULL):
        rclient(server, username="alpha", password="apw").ping()
    assert admin.info("tenants")["tenant_alpha"]["connections"] == 3
    # beta's new rate applies to its connection opened before the reload.
    pipe = beta.pipeline(transaction=False)
    for _ in range(200):
        pipe.get("k")
    assert any(isinstance(r, redis.ResponseError) for r in pipe.execute(raise_on_error=False))
    # And removing it lifts it.
    tenants["beta"] = ("bpw", [])
    server.write(tenants_toml(tenants))
    assert admin.execute_command("CONFIG", "RELOAD") in (b"OK", True)
    pipe = beta.pipeline(transaction=False)
    for _ in range(200):
        pipe.get("k")
    assert pipe.execute() == [None] * 200
    # Bad limits are refused, and the running ones stay.
    for bad in ["max_connections = 0", "max_requests_per_second = 0",
                "max_connections = -1", 'max_connections = "many"']:
        tenants["alpha"] = ("apw", [bad])
        server.write(tenants_toml(tenants))
        with pytest.raises(redis.ResponseError, match="CONFIG RELOAD failed"):
            admin.execute_command("CONFIG", "RELOAD")
    tenants["alpha"] = ("apw", [])
    tenants["default"] = ("root", ["max_connections = 5"])
    server.write(tenants_toml(tenants))
    with pytest.raises(redis.ResponseError, match="admin, which is never limited"):
        admin.execute_command("CONFIG", "RELOAD")
    with pytest.raises(redis.ResponseError, match=FULL):
        rclient(server, username="alpha", password="apw").ping()


def test_a_transaction_with_a_refused_command_is_aborted(server):
    s = raw(server)
    s.sendall(b"AUTH slow spw\r\n")
    assert read_until(s, b"\r\n") == b"+OK\r\n"
    # Spend the bucket, then a transaction: MULTI and EXEC pay nothing, and a SET refused
    # while queueing aborts the whole transaction.
    queued = b"".join(b"SET tx%d 1\r\n" % i for i in range(20))
    s.sendall(b"GET k\r\n" * 200 + b"MULTI\r\n" + queued + b"EXEC\r\n")
    lines = read_until(s, b"\r\n", 200 + 1 + 20 + 1).split(b"\r\n")[:-1]
    assert len(lines) == 222
    assert lines[200] == b"+OK", "MULTI is never refused"
    assert f"-ERR {THROTTLED}".encode() in lines[201:221]
    assert lines[221].startswith(b"-EXECABORT")
    slow = rclient(server, username="slow", password="spw")
    assert eventually(lambda: slow.exists(*[f"tx{i}" for i in range(20)]) == 0)
