"""The per-tenant byte quota (`max_bytes`) through redis-py and raw memcached text: a write
that would take the tenant's live bytes past the quota is refused with the protocol's error
and not done, writes that do not grow the tenant and deletes work at the quota, other tenants
are unaffected, and the refusals are counted in `INFO tenants` and `stats tenants`."""

import pytest
import redis
from conftest import tenants_toml
from test_tenant_max_keys import ask, raw_login, refused, row
from test_tenants import rclient

# redis-py takes Redis's `-OOM …` error class for an OutOfMemoryError, less the prefix.
BYTE_LIMIT = "command not allowed when the tenant would hold more than 'max_bytes' bytes."
MC_BYTE_LIMIT = b"SERVER_ERROR too many bytes for this tenant"

TENANTS = {
    "default": ("root", []),
    "small": ("spw", ['max_bytes = "2KiB"']),
    "other": ("opw", []),
}


@pytest.fixture
def server(tenant_server):
    return tenant_server(tenants_toml(TENANTS, auth_failure_burst="1000"))


def test_writes_past_the_quota_are_refused_and_others_work(server):
    small = rclient(server, username="small", password="spw")
    other = rclient(server, username="other", password="opw")
    stored = 0
    while True:
        try:
            small.set(f"k{stored}", "v" * 100)
        except redis.exceptions.OutOfMemoryError as e:
            assert str(e) == BYTE_LIMIT, str(e)
            break
        stored += 1
        assert stored < 100, "the quota never refused a write"
    # 2 KiB hold fifteen items of about 136 bytes (header, key, value).
    assert 10 <= stored <= 20, stored
    assert small.get(f"k{stored}") is None, "a refused write is not done"
    assert row(server, "small")["bytes"] <= 2048
    assert other.set("big", "x" * 10_000), "another tenant has no quota"
    # At the quota: an overwrite that does not grow works, one that grows past it does not.
    assert small.set("k0", "w" * 100)
    assert small.set("k1", "s")
    refused(lambda: small.set("k2", "g" * 1000), BYTE_LIMIT)
    assert small.get("k2") == b"v" * 100, "the old value stays"
    refused(lambda: small.append("k3", "z" * 1000), BYTE_LIMIT)
    refused(lambda: small.hset("h", "f", "v" * 1000), BYTE_LIMIT)
    # A delete makes room.
    assert small.delete("k4", "k5") == 2
    assert small.set("new", "v" * 100)
    r = row(server, "small")
    assert r["max_bytes"] == 2048
    assert r["rejected_bytes"] == 4
    assert row(server, "other")["rejected_bytes"] == 0


def test_memcached_writes_past_the_quota_are_refused(server):
    s = raw_login(server, "small", "spw")
    replies = [ask(s, b"set m%d 0 0 100\r\n%s\r\n" % (i, b"v" * 100))[0] for i in range(30)]
    assert MC_BYTE_LIMIT in replies
    first = replies.index(MC_BYTE_LIMIT)
    assert replies[:first] == [b"STORED"] * first and 10 <= first <= 20, replies
    assert ask(s, b"get m%d\r\n" % first) == [b"END"], "a refused write is not done"
    assert ask(s, b"set m0 0 0 5\r\nsmall\r\n") == [b"STORED"], "shrinking works"
    assert ask(s, b"stats tenants\r\n", 1)[0].startswith(b"STAT ")
