"""Tenants through redis-py and pymemcache: logging in (and every way it fails, the limit on
failed logins included), isolation of keys, SCAN/KEYS, DBSIZE, FLUSHALL, clients and stats,
what clients that have not logged in may do, and reloading the configuration without losing
data (or authentication, when the file is bad)."""

import time

import pytest
import redis
from conftest import tenants_toml
from redis.backoff import NoBackoff
from redis.retry import Retry
from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheClientError

TENANTS = {
    "default": ("root", []),
    "alpha": ("apw", ['reserved = "4MiB"', 'rank = "lru"']),
    "beta": ("bpw", ['credit = "32KiB"', 'idle_tax = { rate = 0.5, idle_time = "60s" }']),
}
# Room for every failed login a test makes (the limit has a test of its own).
ROOMY = {"auth_failure_burst": "1000"}


def rclient(server, protocol=2, **kw):
    # No retries: redis-py takes a refused login for a connection error and would retry it.
    return redis.Redis(
        host="127.0.0.1",
        port=server.port,
        protocol=protocol,
        socket_timeout=5,
        retry=Retry(NoBackoff(), 0),
        **kw,
    )


def mclient(server):
    return Client(server.addr, connect_timeout=5, timeout=5)


def mc_login(server, user, password):
    m = mclient(server)
    assert m.set("auth", f"{user} {password}".encode(), noreply=False) is True
    return m


@pytest.fixture
def server(tenant_server):
    return tenant_server(tenants_toml(TENANTS, **ROOMY))


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_login_and_its_failures(server, protocol):
    anon = rclient(server, protocol=2)
    with pytest.raises(redis.AuthenticationError, match="NOAUTH|Authentication required"):
        anon.get("k")
    with pytest.raises(redis.AuthenticationError, match="invalid username-password pair"):
        rclient(server, protocol, username="alpha", password="wrong").ping()
    with pytest.raises(redis.AuthenticationError, match="invalid username-password pair"):
        rclient(server, protocol, username="nobody", password="apw").ping()
    with pytest.raises(redis.AuthenticationError, match="invalid username-password pair"):
        rclient(server, protocol, username="beta", password="apw").ping()
    with pytest.raises(redis.AuthenticationError, match="invalid username-password pair"):
        rclient(server, protocol, password="wrong").ping()  # AUTH <password>: default's
    alpha = rclient(server, protocol, username="alpha", password="apw")
    assert alpha.ping() is True
    assert alpha.acl_whoami() == "alpha" or alpha.acl_whoami() == b"alpha"
    # AUTH on an open connection: a failure leaves it logged in.
    with pytest.raises(redis.AuthenticationError):
        alpha.execute_command("AUTH", "alpha", "nope")
    assert alpha.set("k", "v") is True
    admin = rclient(server, protocol, password="root")
    assert admin.ping() is True
    info = admin.info("stats")
    assert info["acl_access_denied_auth"] >= 5


def test_memcache_login_and_its_failures(server):
    m = mclient(server)
    with pytest.raises(MemcacheClientError, match="unauthenticated"):
        m.get("k")
    m = mclient(server)
    with pytest.raises(MemcacheClientError, match="authentication failure"):
        m.set("auth", b"alpha wrong", noreply=False)
    with pytest.raises(MemcacheClientError, match="authentication failure"):
        m.set("auth", b"nobody apw", noreply=False)
    with pytest.raises(MemcacheClientError, match="bad authentication token format"):
        m.set("auth", b"justoneword", noreply=False)
    with pytest.raises(MemcacheClientError, match="unauthenticated"):
        m.add("auth", b"alpha apw", noreply=False)
    assert m.set("auth", b"alpha apw", noreply=False) is True
    assert m.set("k", b"v", noreply=False) is True
    assert m.get("k") == b"v"
    admin = mc_login(server, "default", "root")
    stats = admin.stats()
    assert stats[b"auth_errors"] >= 3
    assert stats[b"auth_cmds"] >= 5


def test_failed_logins_are_limited_not_delayed(tenant_server):
    server = tenant_server(
        tenants_toml(TENANTS, auth_failure_rate="0.01", auth_failure_burst="3"))
    beta = rclient(server, username="beta", password="bpw")
    assert beta.ping() is True
    for _ in range(3):
        start = time.monotonic()
        with pytest.raises(redis.AuthenticationError, match="invalid username-password pair"):
            rclient(server, username="alpha", password="wrong").ping()
        print(f"failed login answered in {(time.monotonic() - start) * 1000:.1f} ms")
    # The address's bucket is spent: refused unchecked, right password or not, and not as a
    # wrong password (redis-py raises a plain ResponseError, and does not retry it).
    for password in ["apw", "wrong"]:
        with pytest.raises(redis.ResponseError, match="too many failed login attempts") as e:
            rclient(server, username="alpha", password=password).ping()
        assert not isinstance(e.value, redis.AuthenticationError)
    with pytest.raises(MemcacheClientError, match="too many failed login attempts"):
        mclient(server).set("auth", b"alpha apw", noreply=False)
    # Connections logged in before go on.
    assert beta.set("k", "v") is True
    stats = beta.info("stats")
    assert stats["acl_access_denied_auth"] == 0, "beta sees its own failed logins only"


def test_keys_never_cross_tenants(server):
    alpha = rclient(server, username="alpha", password="apw")
    beta = rclient(server, username="beta", password="bpw")
    alpha.mset({"shared": "a", "a1": "1", "a2": "2"})
    beta.set("shared", "b")
    assert alpha.get("shared") == b"a"
    assert beta.get("shared") == b"b"
    assert beta.get("a1") is None
    assert beta.mget("a1", "a2", "shared") == [None, None, b"b"]
    assert beta.exists("a1", "a2") == 0
    assert alpha.dbsize() == 3
    assert beta.dbsize() == 1
    assert sorted(alpha.keys("*")) == [b"a1", b"a2", b"shared"]
    assert beta.keys("*") == [b"shared"]
    assert sorted(alpha.scan_iter(match="a*")) == [b"a1", b"a2"]
    assert list(beta.scan_iter()) == [b"shared"]
    # memcached connections of the same tenants see the same split.
    ma = mc_login(server, "alpha", "apw")
    mb = mc_login(server, "beta", "bpw")
    assert ma.get_many(["shared", "a1"]) == {"shared": b"a", "a1": b"1"}
    assert mb.get_many(["shared", "a1"]) == {"shared": b"b"}
    # Flushes are per tenant, in both protocols.
    assert beta.flushall() is True
    assert beta.dbsize() == 0
    assert alpha.dbsize() == 3
    mb.set("m", b"1", noreply=False)
    assert ma.flush_all(noreply=False) is True
    assert alpha.dbsize() == 0
    assert mb.get("m") == b"1"


def test_stats_per_tenant(server):
    alpha = rclient(server, username="alpha", password="apw")
    beta = rclient(server, username="beta", password="bpw")
    alpha.set("x", "1")
    alpha.get("x")
    alpha.get("nope")
    beta.get("x")
    info = alpha.info("tenants")
    row = info["tenant_alpha"]
    assert info["tenant"] == "alpha"
    assert (row["id"], row["rank"], row["reserved"]) == (1, "lru", 4 << 20)
    assert (row["items"], row["hits"], row["misses"]) == (1, 1, 1)
    for field in ["target", "bytes", "shadow_hits", "evictions", "credits_gained", "credits_lost"]:
        assert field in row
    assert "tenant_beta" not in info, "a tenant sees its own row only"
    assert alpha.info("stats")["keyspace_hits"] == 1
    assert beta.info("keyspace") == {}
    hitmap = alpha.info("hitmap")
    for field in ["hitmap_digests_applied", "hitmap_pools_dropped", "hitmap_compactions",
                  "hitmap_bytes", "hitmap_bits_per_item", "hitmap_zone_0", "hitmap_zombies"]:
        assert field in hitmap
    admin = rclient(server, password="root")
    rows = admin.info("tenants")
    assert {"tenant_default", "tenant_alpha", "tenant_beta"} <= set(rows)
    assert rows["tenant_beta"]["misses"] == 1
    # memcached: `stats` for the connection's tenant, `stats tenants` rows.
    mb = mc_login(server, "beta", "bpw")
    stats = mb.stats()
    assert stats[b"tenant"] == b"beta"
    assert stats[b"curr_items"] == 0
    assert stats[b"tenant_misses"] == 1
    assert b"hitmap_bytes" in stats
    assert set(mb.stats("tenants")) == {k for k in mb.stats("tenants") if k.startswith(b"beta:")}
    madmin = mc_login(server, "default", "root")
    rows = madmin.stats("tenants")
    assert rows[b"alpha:items"] == 1
    assert rows[b"alpha:id"] == 1


def test_reload_keeps_data(tenant_server):
    server = tenant_server(tenants_toml(TENANTS, **ROOMY))
    alpha = rclient(server, username="alpha", password="apw")
    alpha.set("kept", "yes")
    mc_login(server, "beta", "bpw").set("bkept", b"1", noreply=False)
    with pytest.raises(redis.exceptions.NoPermissionError):
        alpha.execute_command("CONFIG", "RELOAD")
    # alpha's password changes, gamma is new, beta is removed.
    tenants = dict(TENANTS)
    tenants["alpha"] = ("apw2", [])
    tenants["gamma"] = ("gpw", [])
    del tenants["beta"]
    server.write(tenants_toml(tenants, **ROOMY))
    admin = rclient(server, password="root")
    assert admin.execute_command("CONFIG", "RELOAD") in (b"OK", "OK", True)
    with pytest.raises(redis.AuthenticationError):
        rclient(server, username="alpha", password="apw").ping()
    assert rclient(server, username="alpha", password="apw2").get("kept") == b"yes"
    with pytest.raises(redis.AuthenticationError):
        rclient(server, username="beta", password="bpw").ping()
    gamma = rclient(server, username="gamma", password="gpw")
    assert gamma.get("kept") is None
    assert admin.info("tenants")["tenant_gamma"]["id"] == 3, "new names get new ids"
    assert admin.info("tenants")["tenant_alpha"]["id"] == 1, "kept names keep theirs"
    # SIGHUP does the same: beta comes back, with its id and its data.
    tenants["beta"] = ("bpw", [])
    server.write(tenants_toml(tenants, **ROOMY))
    server.sighup()
    deadline = time.monotonic() + 5
    while True:
        try:
            mb = mc_login(server, "beta", "bpw")
            break
        except MemcacheClientError:
            assert time.monotonic() < deadline, "SIGHUP did not reload"
            time.sleep(0.05)
    assert mb.get("bkept") == b"1"
    # A broken file changes nothing.
    server.write("[[tenants]]\nname = 'bad name'\n")
    with pytest.raises(redis.ResponseError, match="CONFIG RELOAD failed"):
        admin.execute_command("CONFIG", "RELOAD")
    assert gamma.ping() is True


def test_key_prefixes_for_clients_that_cannot_log_in(tenant_server):
    tenants = {"alpha": ("apw", ['key_prefixes = ["alpha:"]'])}
    server = tenant_server(tenants_toml(tenants, allow_unauthenticated="true"))
    anon = rclient(server)
    anon.set("alpha:1", "x")
    anon.set("other", "y")
    assert anon.dbsize() == 1, "keyless commands use the default tenant"
    m = mclient(server)
    assert m.get("alpha:1") == b"x"
    alpha = rclient(server, username="alpha", password="apw")
    assert alpha.keys("*") == [b"alpha:1"]


def stderr_line(server, timeout=5.0):
    """The server's next SIGHUP report on standard error (other lines, such as the startup
    configuration, are passed over)."""
    while True:
        line = server.proc.log_lines.get(timeout=timeout)
        if "SIGHUP" in line:
            return line


def test_bad_reloads_fail_closed(tenant_server):
    text = tenants_toml({"alpha": ("apw", []), "default": ("root", [])}, **ROOMY)
    server = tenant_server(text)
    admin = rclient(server, password="root")
    cut = text.index("password_sha256")
    bad_files = {
        "empty": ("", "configures no tenant"),
        "truncated in a hash": (text[: cut + 30], "bad config"),
        "truncated before a password": (text[:cut], "nobody could log in"),
        "garbage": ("\x00\x01 not toml [[[", "bad config"),
    }
    for what, (bad, why) in bad_files.items():
        server.write(bad)
        with pytest.raises(redis.ResponseError, match=f"CONFIG RELOAD failed: .*{why}"):
            admin.execute_command("CONFIG", "RELOAD")
        server.sighup()
        line = stderr_line(server)
        assert "SIGHUP: reload failed: tenants unchanged" in line and why in line, (what, line)
        # A login is still required, and the old passwords still work.
        with pytest.raises(redis.AuthenticationError):
            rclient(server).get("k")
        with pytest.raises(MemcacheClientError, match="unauthenticated"):
            mclient(server).get("k")
        assert rclient(server, username="alpha", password="apw").ping() is True
        assert mc_login(server, "default", "root").get("k") is None
    assert admin.info("stats")["reload_failures"] == 2 * len(bad_files)


def test_anonymous_clients_are_not_admin(tenant_server):
    tenants = {"default": ("root", []), "alpha": ("apw", ['key_prefixes = ["a:"]'])}
    server = tenant_server(tenants_toml(tenants, allow_unauthenticated="true", **ROOMY))
    alpha = rclient(server, username="alpha", password="apw")
    alpha.set("a:1", "x")
    alpha_id = alpha.client_id()
    alpha_addr = alpha.client_info()["addr"]
    anon = rclient(server)
    anon.set("plain", "1")
    # Another tenant's connection does not exist for it.
    assert anon.client_kill_filter(_id=alpha_id) == 0
    with pytest.raises(redis.ResponseError, match="No such client"):
        anon.client_kill(alpha_addr)
    assert alpha.ping() is True
    assert [c["id"] for c in anon.client_list()] == [str(anon.client_id())]
    with pytest.raises(redis.exceptions.NoPermissionError):
        anon.execute_command("CONFIG", "RELOAD")
    # Its figures are its routed tenant's (`default`), and only those.
    info = anon.info("tenants")
    assert info["tenant"] == "default"
    assert "tenant_alpha" not in info
    stats = mclient(server).stats()
    assert (stats[b"tenant"], stats[b"curr_items"]) == (b"default", 1)
    # The admin logs in for all that.
    admin = rclient(server, password="root")
    assert {c["user"] for c in admin.client_list()} >= {"alpha", "default"}
    assert admin.client_kill_filter(_id=alpha_id) == 1


def test_tenants_see_only_their_own_counters(server):
    alpha = rclient(server, username="alpha", password="apw")
    beta = rclient(server, username="beta", password="bpw")
    before = beta.info("stats")
    for i in range(20):
        alpha.set(f"k{i}", "v")
        alpha.get(f"k{i}")
    for _ in range(3):
        with pytest.raises(redis.AuthenticationError):
            rclient(server, username="alpha", password="wrong").ping()
    after = beta.info("stats")
    assert after == before, "beta's INFO moved with alpha's work"
    assert after["total_commands_processed"] == 0
    assert after["acl_access_denied_auth"] == 0
    stats = mc_login(server, "beta", "bpw").stats()
    for name in [b"auth_errors", b"cmd_set", b"get_hits", b"total_connections", b"bytes_read"]:
        assert stats[name] == 0, name
    assert alpha.info("stats")["acl_access_denied_auth"] == 3, "alpha sees logins naming it"
    assert rclient(server, password="root").info("stats")["acl_access_denied_auth"] == 3
