"""Redis scripting through redis-py and side by side with redis-server 7.0.15: EVAL/EVALSHA,
register_script, redis-py's Lock (its acquire/release/extend are scripts), FUNCTION LOAD and
FCALL, RESP2 and RESP3, SCRIPT KILL of an endless script, and tenants' separate scripts and
keys. fridge's deliberate differences (keys must be declared in KEYS) are in
docs/protocol.md and are not sent to the reference server."""

import socket
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from conftest import launch, stop, tenants_toml
from test_redis_parity import encode, redis_server, same  # noqa: F401 (a fixture)


@pytest.fixture(params=[2, 3])
def r(fridge, request):
    client = redis.Redis(host=fridge[0], port=fridge[1], protocol=request.param)
    client.flushall()
    client.script_flush()
    client.function_flush()
    yield client
    client.close()


def test_eval_and_evalsha(r):
    assert r.eval("return redis.call('set', KEYS[1], ARGV[1])", 1, "k", "v") == b"OK"
    assert r.eval("return redis.call('get', KEYS[1])", 1, "k") == b"v"
    assert r.eval("return {1, 2.9, 'x', false}", 0) == [1, 2, b"x", None]
    sha = r.script_load("return ARGV[1] .. '!'")
    assert r.evalsha(sha, 0, "hi") == b"hi!"
    assert r.script_exists(sha, "0" * 40) == [True, False]
    r.script_flush()
    with pytest.raises(redis.exceptions.NoScriptError):
        r.evalsha(sha, 0, "hi")
    with pytest.raises(redis.exceptions.ResponseError, match="greater than number of args"):
        r.eval("return 1", 3, "a")
    with pytest.raises(redis.exceptions.ResponseError, match="undeclared key"):
        r.eval("return redis.call('get', 'elsewhere')", 0)
    with pytest.raises(redis.exceptions.ResponseError, match="read-only scripts"):
        r.eval_ro("return redis.call('set', KEYS[1], 'x')", 1, "k")


def test_register_script(r):
    incr_by = r.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
    assert incr_by(keys=["n"], args=[5]) == 5
    assert incr_by(keys=["n"], args=[2]) == 7
    r.script_flush()
    # redis-py loads it again after NOSCRIPT.
    assert incr_by(keys=["n"], args=[1]) == 8


def test_lock(r):
    lock = r.lock("resource", timeout=10)
    assert lock.acquire(blocking=False)
    assert not r.lock("resource", timeout=10).acquire(blocking=False)
    assert lock.extend(5)
    assert 10 < r.ttl("resource") <= 15
    assert lock.owned()
    lock.release()
    assert r.get("resource") is None
    # The release script finds another token (or none): not owned.
    assert lock.acquire(blocking=False)
    r.set("resource", "someone else")
    assert not lock.owned()
    with pytest.raises(redis.exceptions.LockNotOwnedError):
        lock.release()
    with pytest.raises(redis.exceptions.LockNotOwnedError):
        lock.local.token = b"mine"
        lock.extend(5)


def test_functions(r):
    code = (
        "#!lua name=mylib\n"
        "redis.register_function('echo_key', function(keys, args) return keys[1] end)\n"
        "redis.register_function{function_name='ro', callback=function(keys, args)"
        " return redis.call('get', keys[1]) end, flags={'no-writes'}}\n"
    )
    assert r.function_load(code) == b"mylib"
    assert r.function_load(code, replace=True) == b"mylib"
    assert r.fcall("echo_key", 1, "abc") == b"abc"
    r.set("k", "v")
    assert r.fcall_ro("ro", 1, "k") == b"v"
    with pytest.raises(redis.exceptions.ResponseError, match="write flag"):
        r.fcall_ro("echo_key", 1, "k")
    listed = r.function_list()
    assert len(listed) == 1
    r.function_delete("mylib")
    assert r.function_list() == []


SCRIPTS = [
    ["EVAL", "return {1,2,3.7,'x',nil,4}", 0],
    ["EVAL", "return {ok='fine'}", 0],
    ["EVAL", "return {err='My error'}", 0],
    ["EVAL", "return redis.error_reply('x')", 0],
    ["EVAL", "return redis.status_reply('S')", 0],
    ["EVAL", "return true", 0],
    ["EVAL", "return false", 0],
    ["EVAL", "return nil", 0],
    ["EVAL", "return 3.99", 0],
    ["EVAL", "return {double=3.5}", 0],
    ["EVAL", "redis.setresp(3); return true", 0],
    ["EVAL", "redis.setresp(3); return {map={a=1}}", 0],
    ["EVAL", "redis.setresp(3); return {set={a=true}}", 0],
    ["EVAL", "return redis.call('set', KEYS[1], 'v')", 1, "k"],
    ["EVAL", "return redis.call('get', KEYS[1])", 1, "k"],
    ["EVAL", "return redis.call('get', KEYS[1])", 1, "missing"],
    ["EVAL", "redis.setresp(3); return redis.call('get', KEYS[1])", 1, "missing"],
    ["EVAL", "return redis.call('incr', KEYS[1])", 1, "k"],
    ["EVAL", "return redis.pcall('incr', KEYS[1])", 1, "k"],
    ["EVAL", "local r = redis.pcall('incr', KEYS[1]); return r.err", 1, "k"],
    ["EVAL", "return redis.call('nosuch')", 0],
    ["EVAL", "return redis.call('get')", 0],
    ["EVAL", "return redis.pcall('get')", 0],
    ["EVAL", "return redis.call('multi')", 0],
    ["EVAL", "return redis.call()", 0],
    ["EVAL", "return redis.call('echo', {})", 0],
    ["EVAL", "return redis.call('echo', 1.5)", 0],
    ["EVAL_RO", "return redis.call('set', KEYS[1], 'x')", 1, "k"],
    ["EVAL", "error('boom')", 0],
    ["EVAL", "x = 1", 0],
    ["EVAL", "string.x = 1", 0],
    ["EVAL", "return os", 0],
    ["EVAL", "return print", 0],
    ["EVAL", "return _G.x", 0],
    ["EVAL", "syntax error here", 0],
    ["EVAL", "return redis.setresp(4)", 0],
    ["EVAL", "return redis.sha1hex('abc')", 0],
    ["EVAL", "return 1", 2, "a"],
    ["EVAL", "return 1", -1],
    ["EVAL", "return 1", "x"],
    ["EVALSHA", "abc", 0],
    ["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", 0],
    ["SCRIPT", "LOAD", "return 1"],
    ["SCRIPT", "EXISTS", "a", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"],
    ["EVALSHA", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", 0],
    ["SCRIPT", "FLUSH"],
    ["SCRIPT", "EXISTS", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"],
    ["SCRIPT", "FLUSH", "ASYNC"],
    ["SCRIPT", "FLUSH", "foo"],
    ["SCRIPT", "KILL"],
    ["SCRIPT", "HELP"],
    ["SCRIPT", "LOAD"],
    ["SCRIPT", "nosuch"],
    # The bit library (LuaBitOp) and the sandbox's edges.
    ["EVAL", "return {bit.band(0xff, 0x0f, 0x3), bit.bor(1,2,4), bit.bxor(5,3), bit.bnot(0),"
     " bit.tobit(0xffffffff), bit.tobit(2^32+5), bit.lshift(1, 31), bit.rshift(-1, 28),"
     " bit.arshift(-256, 4), bit.rol(0x12345678, 8), bit.ror(0x12345678, 8),"
     " bit.bswap(0x12345678), bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1.5)}", 0],
    ["EVAL", "return {bit.tohex(1), bit.tohex(-1), bit.tohex(0xabcd, 2), bit.tohex(0xabcd, -4),"
     " bit.tohex(0xabcd, 12)}", 0],
    ["EVAL", "bit.x = 1", 0],
    ["EVAL", "return redis.acl_check_cmd('get', 'x')", 0],
    ["EVAL", "return redis.acl_check_cmd('nosuch')", 0],
    ["EVAL", "return redis.acl_check_cmd()", 0],
    ["EVAL", "return redis.breakpoint()", 0],
    ["EVAL", "return getfenv", 0],
    ["EVAL", "return type(load)", 0],
    ["EVAL", "return loadstring(string.dump(function() return 1 end))", 0],
    ["EVAL", "return _VERSION", 0],
]


def test_scripts_match_redis(fridge, redis_server):
    same(fridge, redis_server, SCRIPTS)


def test_select_in_a_script_is_the_scripts_own(fridge, redis_server):
    # Redis 7: the script starts in the caller's database, and its SELECT does not outlive it.
    same(fridge, redis_server, [
        ["SELECT", 2],
        ["EVAL", "redis.call('SELECT', 1); redis.call('SET', KEYS[1], 'x'); "
                 "return redis.call('GET', KEYS[1])", 1, "k"],
        ["GET", "k"], ["DBSIZE"], ["SELECT", 1], ["GET", "k"],
        ["EVAL", "return redis.call('GET', KEYS[1])", 1, "k"],
    ])


LIBRARY = (
    "#!lua name=lib1\n"
    "redis.register_function('f1', function(keys, args) return keys[1] end)\n"
    "redis.register_function{function_name='f2', callback=function() "
    "return redis.call('set','x','1') end, flags={'no-writes'}}"
)

FUNCTIONS = [
    ["FUNCTION", "FLUSH"],
    ["FUNCTION", "LOAD", "return 1"],
    ["FUNCTION", "LOAD", LIBRARY],
    ["FUNCTION", "LOAD", LIBRARY],
    ["FUNCTION", "LOAD", "#!lua name=lib2\nlocal x = 1"],
    ["FUNCTION", "LOAD", "#!lua name=lib2\nredis.register_function('f1', function() return 1 end)"],
    ["FUNCTION", "LOAD", "#!lua name=lib2 foo=bar\nredis.register_function('g', function() end)"],
    ["FUNCTION", "LOAD", "#!py name=lib2\nx"],
    ["FUNCTION", "LOAD", "#!lua name=lib2\nredis.call('ping')"],
    ["FUNCTION", "LOAD", "#!lua name=lib2\nx = 1"],
    ["FUNCTION", "LOAD", "#!lua name=lib2\nsyntax error"],
    ["FCALL", "f1", 1, "kk"],
    ["FCALL", "f2", 0],
    ["FCALL_RO", "f1", 0],
    ["FCALL", "nosuch", 0],
    ["FCALL", "f1", 5],
    ["FCALL", "f1", "x"],
    ["FUNCTION", "STATS"],
    ["FUNCTION", "KILL"],
    ["FUNCTION", "HELP"],
    ["FUNCTION", "DELETE", "nosuch"],
    ["FUNCTION", "DELETE", "lib1"],
    ["FUNCTION", "LIST"],
    # One function a library: Redis lists a library's functions in its hash table's order.
    ["FUNCTION", "LOAD", "#!lua name=lib3\nredis.register_function{function_name='g', "
     "callback=function() return 1 end, flags={'no-writes', 'allow-oom'}, description='hi'}"],
    ["FUNCTION", "LOAD", "#!lua name=lib4\nredis.register_function('h', function() end)"],
    ["FUNCTION", "LIST", "LIBRARYNAME", "lib3"],
    ["FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "lib4"],
    ["FUNCTION", "LIST", "LIBRARYNAME", "nope"],
    ["FCALL_RO", "g", 0],
    ["FCALL", "h", 0],
    ["FUNCTION", "STATS"],
]


def test_functions_match_redis(fridge, redis_server):
    same(fridge, redis_server, FUNCTIONS)


def test_endless_script_is_busy_then_killed():
    proc, port = launch(workers=2)
    try:
        admin = redis.Redis(port=port)
        admin.config_set("busy-reply-threshold", 100)
        assert admin.config_get("lua-time-limit") == {"lua-time-limit": "100"}
        runner = socket.create_connection(("127.0.0.1", port))
        runner.sendall(encode(["EVAL", "local i = 0 while true do i = i + 1 end", 0]))
        replies, waiting = [], []
        deadline = time.monotonic() + 30
        # A connection on the script's worker waits for the script's end; one on the other
        # worker is answered NOTBUSY (not started yet), BUSY, then killed.
        while b"+OK\r\n" not in replies and time.monotonic() < deadline:
            s = socket.create_connection(("127.0.0.1", port))
            s.settimeout(0.5)
            s.sendall(encode(["GET", "k"]) + encode(["SCRIPT", "KILL"]))
            try:
                data = b""
                while data.count(b"\r\n") < 2:
                    data += s.recv(1024)
                replies.extend(line + b"\r\n" for line in data.split(b"\r\n")[:2])
            except socket.timeout:
                waiting.append(s)
        assert b"+OK\r\n" in replies
        assert any(x.startswith(b"-BUSY Redis is busy running a script.") for x in replies)
        runner.settimeout(10)
        assert runner.recv(1024).startswith(b"-ERR Script killed by user with SCRIPT KILL...")
        assert admin.ping()
        for s in waiting + [runner]:
            s.close()
    finally:
        stop(proc)


def test_a_script_that_wrote_cannot_be_killed():
    proc, port = launch(workers=2)
    try:
        admin = redis.Redis(port=port)
        admin.config_set("busy-reply-threshold", 50)
        runner = socket.create_connection(("127.0.0.1", port))
        # Writes, then loops for a while, then ends by itself.
        runner.sendall(encode([
            "EVAL", "redis.call('set', KEYS[1], 'x') local i = 0 while i < 2e8 do i = i + 1 end"
            " return i", 1, "w"]))
        runner.settimeout(0.01)
        seen, reply = set(), b""
        deadline = time.monotonic() + 60
        while not reply and time.monotonic() < deadline:
            s = socket.create_connection(("127.0.0.1", port))
            s.settimeout(0.5)
            s.sendall(encode(["SCRIPT", "KILL"]))
            try:
                seen.add(s.recv(1024))
            except socket.timeout:
                pass
            s.close()
            try:
                reply = runner.recv(1024)
            except socket.timeout:
                pass
        assert reply == b":200000000\r\n", "the script ran to its end"
        assert b"+OK\r\n" not in seen
        assert (
            b"-UNKILLABLE Sorry the script already executed write commands against the dataset."
            b" You can either wait the script termination or kill the server in a hard way using"
            b" the SHUTDOWN NOSAVE command.\r\n"
        ) in seen
    finally:
        stop(proc)


def answer(port, command):
    """Sends `command` on new connections until one is answered (a connection on the running
    script's worker waits for the script's end); returns the first reply's bytes."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        s = socket.create_connection(("127.0.0.1", port))
        s.settimeout(0.5)
        s.sendall(encode(command))
        try:
            return s.recv(4096)
        except socket.timeout:
            pass
    raise TimeoutError(command)


@pytest.mark.parametrize("body", [
    "while true do end",
    "while true do pcall(function() while true do end end) end",
    "while true do xpcall(function() while true do end end, function() return 1 end) end",
    "local co = coroutine.create(function() while true do end end)"
    " while true do coroutine.resume(co) end",
    "coroutine.wrap(function() while true do end end)()",
    "local function f() return f() end return f()",
])
def test_any_endless_script_is_killed(body):
    """pcall, xpcall and coroutines cannot catch the kill (Redis: its hook fires on every
    line once killed; fridge: they raise it again), and a coroutine inherits the hook."""
    proc, port = launch(workers=2)
    try:
        redis.Redis(port=port).config_set("busy-reply-threshold", 20)
        runner = socket.create_connection(("127.0.0.1", port))
        runner.sendall(encode(["EVAL", body, 0]))
        while (reply := answer(port, ["SCRIPT", "KILL"])) != b"+OK\r\n":
            assert reply.startswith(b"-NOTBUSY"), reply
        runner.settimeout(10)
        assert runner.recv(1024).startswith(b"-ERR Script killed by user with SCRIPT KILL...")
        assert redis.Redis(port=port).eval("return 1", 0) == 1
    finally:
        stop(proc)


def test_hostile_scripts_fail_cleanly(r):
    """Memory and stack exhaustion end the script with an error; the server and the tenant's
    Lua state carry on."""
    for body in [
        "return string.rep('x', 2^30)",
        "local t = {} for i = 1, 1e9 do t[i] = i end",
        "local s = 'x' while true do s = s .. s end",
        "local function f() return 1 + f() end return f()",
        "return unpack({}, 1, 1e8)",
        "local t = {} setmetatable(t, {__index = function(t, k) return t[k + 1] end}) return t[1]",
        "error({foo = 1})",
    ]:
        with pytest.raises(redis.exceptions.ResponseError):
            r.eval(body, 0)
    assert r.eval("return 'still here'", 0) == b"still here"


def test_endless_function_is_shown_in_stats_and_killed():
    proc, port = launch(workers=2)
    try:
        admin = redis.Redis(port=port)
        admin.config_set("busy-reply-threshold", 50)
        admin.function_load(
            "#!lua name=spin\nredis.register_function('spin', function() while true do end end)")
        runner = socket.create_connection(("127.0.0.1", port))
        runner.sendall(encode(["FCALL", "spin", 0]))
        busy = b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN"
        while not (reply := answer(port, ["GET", "k"])).startswith(b"-BUSY"):
            assert reply == b"$-1\r\n"
        assert reply.startswith(busy)
        assert answer(port, ["SCRIPT", "KILL"]).startswith(busy)
        stats = answer(port, ["FUNCTION", "STATS"])
        assert stats.startswith(
            b"*4\r\n$14\r\nrunning_script\r\n*6\r\n$4\r\nname\r\n$4\r\nspin\r\n"
            b"$7\r\ncommand\r\n*3\r\n$5\r\nFCALL\r\n$4\r\nspin\r\n$1\r\n0\r\n"
            b"$11\r\nduration_ms\r\n:"), stats
        # Redis's allow-busy commands run beside the script; others are BUSY.
        assert answer(port, ["HELLO", "2"]).startswith(b"*14\r\n$6\r\nserver\r\n")
        assert answer(port, ["PING"]).startswith(busy)
        assert answer(port, ["FUNCTION", "KILL"]) == b"+OK\r\n"
        runner.settimeout(10)
        assert runner.recv(1024) == (
            b"-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.\r\n")
        assert answer(port, ["FUNCTION", "KILL"]).startswith(b"-NOTBUSY")
    finally:
        stop(proc)


TENANTS = {
    "default": ("root", []),
    "alpha": ("apw", []),
    "beta": ("bpw", []),
}


def test_tenants_have_their_own_scripts_and_keys(tenant_server):
    server = tenant_server(tenants_toml(TENANTS))

    def client(user, password):
        return redis.Redis(host="127.0.0.1", port=server.port, username=user,
                           password=password, retry=Retry(NoBackoff(), 0))

    alpha, beta = client("alpha", "apw"), client("beta", "bpw")
    alpha.set("k", "alpha's")
    beta.set("k", "beta's")
    assert alpha.eval("return redis.call('get', KEYS[1])", 1, "k") == b"alpha's"
    assert beta.eval("return redis.call('get', KEYS[1])", 1, "k") == b"beta's"
    sha = alpha.script_load("return 'a'")
    assert alpha.script_exists(sha) == [True]
    assert beta.script_exists(sha) == [False]
    beta.script_flush()
    assert alpha.evalsha(sha, 0) == b"a"
    alpha.function_load("#!lua name=l\nredis.register_function('who', function() return 'alpha' end)")
    with pytest.raises(redis.exceptions.ResponseError, match="Function not found"):
        beta.fcall("who", 0)
    assert alpha.fcall("who", 0) == b"alpha"
    # Lua state left behind by one tenant's script is not seen by another's.
    assert alpha.eval("rawset(_G, 'leak', 1) return leak", 0) == 1
    with pytest.raises(redis.exceptions.ResponseError, match="nonexistent global"):
        beta.eval("return leak", 0)
