"""Tenants through redis-py and pymemcache: logging in (and every way it fails), isolation of
keys, SCAN/KEYS, DBSIZE, FLUSHALL and stats, and reloading the configuration without losing
data."""

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
FAST = {"auth_failure_delay": '"1ms"'}


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
    return tenant_server(tenants_toml(TENANTS, **FAST))


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


def test_failed_logins_are_slowed_down(tenant_server):
    server = tenant_server(tenants_toml(TENANTS, auth_failure_delay='"200ms"'))
    client = rclient(server, username="beta", password="bpw")
    start = time.monotonic()
    with pytest.raises(redis.AuthenticationError):
        client.execute_command("AUTH", "alpha", "wrong")
    first = time.monotonic() - start
    start = time.monotonic()
    with pytest.raises(redis.AuthenticationError):
        client.execute_command("AUTH", "alpha", "wrong")
    second = time.monotonic() - start
    assert first >= 0.19
    assert second >= 0.39, "the delay doubles"
    # A right password still works afterwards.
    assert client.execute_command("AUTH", "alpha", "apw") in (b"OK", "OK", True)


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
    server = tenant_server(tenants_toml(TENANTS, **FAST))
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
    server.write(tenants_toml(tenants, **FAST))
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
    server.write(tenants_toml(tenants, **FAST))
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
