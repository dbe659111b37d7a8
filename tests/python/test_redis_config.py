"""CONFIG GET/SET that change what they claim, and the HELP subcommands that errors point to,
next to Debian's redis-server 7.0.15 in the same run. Skipped without redis-server."""

import redis

from test_redis_parity import redis_server, same  # noqa: F401 (the fixture)


def test_help_subcommands_as_redis(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["CONFIG", "HELP"], ["CONFIG", "HELP", "x"],
        ["CLIENT", "HELP"], ["CLIENT", "HELP", "x"],
        ["COMMAND", "HELP"], ["COMMAND", "HELP", "x"],
        ["ACL", "HELP"], ["ACL", "HELP", "x"],
        ["SLOWLOG", "HELP"], ["OBJECT", "HELP"], ["MEMORY", "HELP"], ["PUBSUB", "HELP"],
        ["CONFIG", "NOSUCH"], ["CLIENT", "NOSUCH"], ["COMMAND", "NOSUCH"],
    ])


def test_maxmemory_errors_as_redis(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["CONFIG", "SET", "maxmemory", "abc"],
        ["CONFIG", "SET", "maxmemory", "-1"],
        ["CONFIG", "SET", "maxmemory", "12xb"],
    ])


def client(addr):
    return redis.Redis(host=addr[0], port=addr[1], socket_timeout=10, decode_responses=True)


def test_maxmemory_moves_the_memory_limit(fridge):
    r = client(fridge)
    start = int(r.config_get("maxmemory")["maxmemory"])
    assert r.config_set("maxmemory", "32mb")
    assert r.config_get("maxmemory") == {"maxmemory": str(32 << 20)}
    assert r.info("memory")["maxmemory"] == 32 << 20
    # Beyond the memory mapped at start: refused, and nothing changed.
    try:
        r.config_set("maxmemory", "1000gb")
        raise AssertionError("accepted")
    except redis.ResponseError as e:
        assert "the memory mapped at start" in str(e)
    assert r.config_get("maxmemory") == {"maxmemory": str(32 << 20)}
    # 0, Redis's "no limit": all the memory mapped at start.
    assert r.config_set("maxmemory", 0)
    assert int(r.config_get("maxmemory")["maxmemory"]) == start


def test_maxmemory_policy_maps_to_rank_functions(fridge):
    r = client(fridge)
    assert r.config_get("maxmemory-policy") == {"maxmemory-policy": "hitmap"}
    for name in ("allkeys-lfu", "allkeys-lru", "slru", "gdsf", "hitmap"):
        assert r.config_set("maxmemory-policy", name)
        assert r.config_get("maxmemory-policy") == {"maxmemory-policy": name}
        assert r.info("memory")["maxmemory_policy"] == name
    for refused in ("noeviction", "volatile-lru", "allkeys-random", "volatile-ttl", "x"):
        try:
            r.config_set("maxmemory-policy", refused)
            raise AssertionError(f"{refused} accepted")
        except redis.ResponseError as e:
            assert "must be one of the following: allkeys-lru, allkeys-lfu, hitmap, slru, gdsf" in str(e)
    assert r.config_get("maxmemory-policy") == {"maxmemory-policy": "hitmap"}


def test_a_refused_config_set_changes_nothing(fridge):
    r = client(fridge)
    before = r.config_get("*")
    try:
        r.execute_command("CONFIG", "SET", "notify-keyspace-events", "KEA", "maxmemory", "1000gb")
        raise AssertionError("accepted")
    except redis.ResponseError:
        pass
    try:
        r.execute_command("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu", "nosuch", "1")
        raise AssertionError("accepted")
    except redis.ResponseError:
        pass
    assert r.config_get("*") == before


def test_role_as_redis(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [["ROLE"], ["ROLE", "x"], ["DEBUG"]])


def test_debug_sleep_is_bounded(fridge):
    r = client(fridge)
    assert r.execute_command("DEBUG", "SLEEP", "0") == "OK"
    assert r.execute_command("DEBUG", "SLEEP", "0.05") == "OK"
    assert r.execute_command("DEBUG", "SLEEP", "abc") == "OK"
    for bad, message in [(["SLEEP", "6"], "at most 5 seconds"),
                         (["FOO"], "unknown subcommand 'FOO'. Try DEBUG HELP."),
                         (["SLEEP"], "wrong number of arguments for 'debug|sleep'")]:
        try:
            r.execute_command("DEBUG", *bad)
            raise AssertionError(f"{bad} accepted")
        except redis.ResponseError as e:
            assert message in str(e)
    assert r.execute_command("DEBUG", "HELP")[1] == "SLEEP <seconds>"


def test_persistence_settings_only_as_they_are(fridge):
    r = client(fridge)
    assert r.config_set("save", "")
    assert r.config_set("appendonly", "no")
    for name, value in [("save", "900 1"), ("appendonly", "yes"), ("appendfsync", "always"),
                        ("maxmemory-samples", "10")]:
        try:
            r.config_set(name, value)
            raise AssertionError(f"{name} {value} accepted")
        except redis.ResponseError:
            pass
