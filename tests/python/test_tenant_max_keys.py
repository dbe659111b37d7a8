"""The per-tenant key cap (`max_keys`) through redis-py and raw memcached text, meta and
binary sockets: a write that would add a key past the cap is refused with the protocol's
error and not done, overwrites and deletes work at the cap, every database counts, other
tenants are unaffected, the refusals are counted in `INFO tenants`, `stats tenants` and
`/metrics`, and a reload lowers (removing nothing) and raises the cap."""

import socket
import time

import pytest
import redis
from conftest import stop, tenants_toml
from test_metrics import launch_with_admin, scrape
from test_tenants import rclient

# redis-py takes Redis's `-OOM …` error class for an OutOfMemoryError, less the prefix.
KEY_LIMIT = "command not allowed when the tenant holds 'max_keys' keys."
MC_KEY_LIMIT = b"SERVER_ERROR too many keys for this tenant\r\n"

TENANTS = {
    "default": ("root", []),
    "small": ("spw", ["max_keys = 5"]),
    "smallmc": ("mpw", ["max_keys = 3"]),
    "other": ("opw", []),
}


@pytest.fixture
def server(tenant_server):
    return tenant_server(tenants_toml(TENANTS, auth_failure_burst="1000"))


def refused(call, reason=KEY_LIMIT):
    """`call` fails with Redis's `-OOM` class and the tenant limit's `reason`."""
    with pytest.raises(redis.exceptions.OutOfMemoryError) as e:
        call()
    assert str(e.value) == reason, str(e.value)


def row(server, name):
    return rclient(server, password="root").info("tenants")[f"tenant_{name}"]


def raw_login(server, user, password):
    s = socket.create_connection(server.addr, timeout=5)
    token = f"{user} {password}".encode()
    s.sendall(b"set auth 0 0 %d\r\n%s\r\n" % (len(token), token))
    assert read_lines(s, 1) == [b"STORED"]
    return s


def read_lines(s, count):
    data = b""
    while data.count(b"\r\n") < count:
        chunk = s.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    return data.split(b"\r\n")[:count]


def ask(s, request, count=1):
    s.sendall(request)
    return read_lines(s, count)


def packet(opcode, key=b"", value=b"", extras=b""):
    """A binary-protocol request."""
    header = bytes([0x80, opcode]) + len(key).to_bytes(2, "big") + bytes([len(extras), 0])
    header += b"\0\0" + (len(extras) + len(key) + len(value)).to_bytes(4, "big") + b"\0" * 12
    return header + extras + key + value


def test_redis_writes_past_the_cap_are_refused(server):
    small = rclient(server, username="small", password="spw")
    for i in range(5):
        assert small.set(f"k{i}", "v")
    refused(lambda: small.set("k5", "v"))
    assert small.get("k5") is None, "a refused write is not done"
    # Overwrites of every kind work at the cap.
    assert small.set("k0", "again")
    assert small.append("k0", "!") == 6
    assert small.set("k1", "1") and small.incr("k1") == 2
    assert small.expire("k2", 100)
    # Anything that would create a key is refused, whatever its kind.
    refused(lambda: small.incr("n"))
    refused(lambda: small.append("a", "x"))
    refused(lambda: small.hset("h", "f", "v"))
    refused(lambda: small.rpush("l", "x"))
    refused(lambda: small.sadd("s", "x"))
    refused(lambda: small.rename("k3", "renamed"))
    assert small.get("k3") == b"v", "the refused rename left its source"
    refused(lambda: small.mset({"m1": "v", "m2": "v"}))
    assert small.dbsize() == 5
    # Every database counts: the cap is the tenant's.
    small.execute_command("SELECT", "1")
    refused(lambda: small.set("k0", "v"))
    small.execute_command("SELECT", "0")
    # A delete frees a place for one new key.
    assert small.delete("k4") == 1
    assert small.set("k5", "v")
    refused(lambda: small.set("k6", "v"))
    # Another tenant is unaffected.
    other = rclient(server, username="other", password="opw")
    assert other.mset({f"o{i}": "v" for i in range(20)})
    assert other.dbsize() == 20
    r = row(server, "small")
    assert (r["max_keys"], r["items"]) == (5, 5)
    assert r["rejected_keys"] == 10
    assert (row(server, "other")["max_keys"], row(server, "other")["rejected_keys"]) == (0, 0)
    own = small.info("tenants")
    assert own["tenant_small"]["rejected_keys"] == 10, "a tenant sees its own figures"


def test_memcached_text_meta_and_binary_writes_past_the_cap_are_refused(server):
    s = raw_login(server, "smallmc", "mpw")
    for key in (b"a", b"b", b"c"):
        assert ask(s, b"set %s 0 0 1\r\nv\r\n" % key) == [b"STORED"]
    assert ask(s, b"set d 0 0 1\r\nv\r\n") == [MC_KEY_LIMIT.rstrip(b"\r\n")]
    assert ask(s, b"add d 0 0 1\r\nv\r\n") == [MC_KEY_LIMIT.rstrip(b"\r\n")]
    assert ask(s, b"get d\r\n") == [b"END"]
    # Overwrites work at the cap; commands that never create a key answer as usual.
    assert ask(s, b"set a 0 0 3\r\nnew\r\n") == [b"STORED"]
    assert ask(s, b"append b 0 0 1\r\n!\r\n") == [b"STORED"]
    assert ask(s, b"add a 0 0 1\r\nv\r\n") == [b"NOT_STORED"]
    assert ask(s, b"append d 0 0 1\r\n!\r\n") == [b"NOT_STORED"]
    assert ask(s, b"incr d 1\r\n") == [b"NOT_FOUND"]
    assert ask(s, b"ms d 1\r\nv\r\n") == [MC_KEY_LIMIT.rstrip(b"\r\n")]
    assert ask(s, b"ms a 1\r\nw\r\n") == [b"HD"]
    # Meta's quiet mode leaves out successes, not errors.
    assert ask(s, b"ms d 1 q\r\nv\r\nmn\r\n", 2) == [MC_KEY_LIMIT.rstrip(b"\r\n"), b"MN"]
    # The binary protocol (a connection of its own, logged in by SASL): memcached's
    # out-of-memory status, with the reason.
    b = socket.create_connection(server.addr, timeout=5)
    b.sendall(packet(0x21, b"PLAIN", b"\0smallmc\0mpw"))
    assert b.recv(1024)[6:8] == b"\0\0", "authenticated"
    b.sendall(packet(0x01, b"bin", b"v", extras=b"\0" * 8))  # SET
    reply = b.recv(1024)
    assert int.from_bytes(reply[6:8], "big") == 0x82
    assert reply[24:] == b"Too many keys for this tenant."
    b.sendall(packet(0x01, b"a", b"v", extras=b"\0" * 8))
    assert b.recv(1024)[6:8] == b"\0\0", "an overwrite is stored"
    # A delete frees a place.
    assert ask(s, b"delete c\r\n") == [b"DELETED"]
    assert ask(s, b"set d 0 0 1\r\nv\r\n") == [b"STORED"]
    rootmc = raw_login(server, "default", "root")
    rootmc.sendall(b"stats tenants\r\n")
    data = b""
    while not data.endswith(b"END\r\n"):
        data += rootmc.recv(65536)
    stats = dict(line.split(b" ")[1:3] for line in data.split(b"\r\n") if line.startswith(b"STAT "))
    assert stats[b"smallmc:max_keys"] == b"3"
    assert stats[b"smallmc:items"] == b"3"
    assert stats[b"smallmc:rejected_keys"] == b"5"  # set, add, ms and ms q; binary SET
    assert stats[b"small:rejected_keys"] == b"0"


def test_reload_lowers_and_raises_the_cap(tenant_server):
    tenants = dict(TENANTS)
    server = tenant_server(tenants_toml(tenants))
    admin = rclient(server, password="root")
    small = rclient(server, username="small", password="spw")
    for i in range(5):
        assert small.set(f"k{i}", "v")
    mc = raw_login(server, "smallmc", "mpw")
    for key in (b"a", b"b", b"c"):
        assert ask(mc, b"set %s 0 0 1\r\nv\r\n" % key) == [b"STORED"]
    # Lowered: nothing is removed, overwrites work, new keys wait until enough have gone.
    tenants["small"] = ("spw", ["max_keys = 2"])
    tenants["smallmc"] = ("mpw", ["max_keys = 1"])
    server.write(tenants_toml(tenants))
    assert admin.execute_command("CONFIG", "RELOAD") in (b"OK", True)
    assert row(server, "small")["max_keys"] == 2
    assert ask(mc, b"set a 0 0 1\r\nw\r\n") == [b"STORED"]
    assert ask(mc, b"set z 0 0 1\r\nv\r\n") == [MC_KEY_LIMIT.rstrip(b"\r\n")]
    assert ask(mc, b"get b c\r\n", 5) == [b"VALUE b 0 1", b"v", b"VALUE c 0 1", b"v", b"END"]
    assert small.dbsize() == 5
    assert small.set("k0", "again")
    refused(lambda: small.set("new", "v"))
    assert small.delete("k1", "k2", "k3") == 3
    refused(lambda: small.set("new", "v"))
    assert small.delete("k4") == 1
    assert small.set("new", "v")
    refused(lambda: small.set("newer", "v"))
    # Raised (by SIGHUP this time): more keys go in, up to the new cap.
    tenants["small"] = ("spw", ["max_keys = 4"])
    server.write(tenants_toml(tenants))
    server.sighup()
    deadline = time.monotonic() + 10
    while row(server, "small")["max_keys"] != 4:
        assert time.monotonic() < deadline, "the reload did not happen"
        time.sleep(0.05)
    assert small.set("newer", "v") and small.set("newest", "v")
    refused(lambda: small.set("one-more", "v"))
    # A bad cap is refused whole; the running one stays.
    tenants["small"] = ("spw", ["max_keys = 0"])
    server.write(tenants_toml(tenants))
    with pytest.raises(redis.ResponseError, match="max_keys must be at least 1"):
        admin.execute_command("CONFIG", "RELOAD")
    assert row(server, "small")["max_keys"] == 4
    # Removing the key lifts the cap.
    tenants["small"] = ("spw", [])
    server.write(tenants_toml(tenants))
    assert admin.execute_command("CONFIG", "RELOAD") in (b"OK", True)
    assert small.set("one-more", "v")
    assert row(server, "small")["max_keys"] == 0


def test_metrics_show_the_cap_and_its_refusals(tmp_path):
    path = tmp_path / "max_keys.toml"
    path.write_text(tenants_toml({"default": ("root", []), "small": ("spw", ["max_keys = 1"])}))
    proc, port, admin = launch_with_admin("--config", str(path))
    try:
        small = redis.Redis(port=port, username="small", password="spw")
        assert small.set("a", "1")
        refused(lambda: small.set("b", "1"))
        samples, families = scrape(admin)
        assert samples[("fridge_tenant_max_keys", (("tenant", "small"),))] == 1
        assert samples[("fridge_tenant_rejected_keys_total", (("tenant", "small"),))] == 1
        assert samples[("fridge_tenant_max_keys", (("tenant", "default"),))] == 0
        kinds = {f.name: f.type for f in families}
        assert kinds["fridge_tenant_rejected_keys"] == "counter"
        assert kinds["fridge_tenant_max_keys"] == "gauge"
    finally:
        stop(proc)
