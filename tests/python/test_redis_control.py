"""Redis's server control next to Debian's redis-server 7.0.15 where it has one: CLIENT PAUSE
and UNPAUSE, MONITOR, CONFIG RESETSTAT and REWRITE, SHUTDOWN. Paused commands are checked by
what they answer and when relative to other commands, never by how long they took."""

import socket
import time

import pytest

from conftest import launch, stop, tenants_toml
from test_redis_parity import Reader, encode, redis_server, same  # noqa: F401 (the fixture)


def connect(addr):
    s = socket.create_connection(addr)
    s.settimeout(10)
    return s, Reader(s)


def call(conn, *args):
    s, r = conn
    s.sendall(encode(args))
    return r.reply()


def silent(conn, wait=0.3):
    """Nothing arrives on `conn` for `wait` seconds (a paused command has no reply yet)."""
    s, r = conn
    s.settimeout(wait)
    try:
        data = s.recv(1 << 16)
    except socket.timeout:
        return True
    finally:
        s.settimeout(10)
    r.buf += data
    return False


def eventually(check, seconds=5):
    """Whether `check()` holds within `seconds` (asked again every 20 ms)."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_client_pause_errors_as_redis(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["CLIENT", "PAUSE"], ["CLIENT", "PAUSE", "abc"], ["CLIENT", "PAUSE", "-1"],
        ["CLIENT", "PAUSE", "10", "foo"], ["CLIENT", "PAUSE", "10", "write", "x"],
        ["CLIENT", "PAUSE", "99999999999999999999"], ["CLIENT", "UNPAUSE", "x"],
        ["CLIENT", "PAUSE", "0"], ["CLIENT", "PAUSE", "0", "WRITE"], ["CLIENT", "UNPAUSE"],
    ])


@pytest.mark.parametrize("server", ["fridge", "redis"])
def test_write_pause_parks_writes_only(server, fridge, redis_server):  # noqa: F811
    addr = fridge if server == "fridge" else redis_server
    admin, writer, reader = connect(addr), connect(addr), connect(addr)
    assert call(admin, "SET", "pk", "before") == b"+OK\r\n"
    assert call(admin, "CLIENT", "PAUSE", "60000", "WRITE") == b"+OK\r\n"
    writer[0].sendall(encode(["SET", "pk", "after"]) + encode(["GET", "pk"]))
    assert silent(writer), "a write waits while paused, and the requests behind it too"
    assert call(reader, "GET", "pk") == b"$6\r\nbefore\r\n", "reads go on"
    if server == "fridge":
        # (CLIENT LIST shows a connection as of the end of its last turn.)
        assert eventually(lambda: "flags=b" in call(reader, "CLIENT", "LIST").decode().split())
    assert call(reader, "MULTI") == b"+OK\r\n"
    reader[0].sendall(encode(["INCR", "n"]))
    assert silent(reader), "a write is paused before MULTI queues it"
    assert call(admin, "CLIENT", "UNPAUSE") == b"+OK\r\n"
    assert writer[1].reply() == b"+OK\r\n"
    assert writer[1].reply() == b"$5\r\nafter\r\n", "then it runs, and what follows it"
    assert reader[1].reply() == b"+QUEUED\r\n"
    assert call(reader, "EXEC") == b"*1\r\n:1\r\n"
    call(admin, "DEL", "pk", "n")
    for c in (admin, writer, reader):
        c[0].close()


@pytest.mark.parametrize("server", ["fridge", "redis"])
def test_all_pause_parks_everything_until_its_deadline(server, fridge, redis_server):  # noqa: F811
    addr = fridge if server == "fridge" else redis_server
    admin, other = connect(addr), connect(addr)
    assert call(admin, "CLIENT", "PAUSE", "500") == b"+OK\r\n"
    other[0].sendall(encode(["PING"]))
    admin[0].sendall(encode(["CLIENT", "UNPAUSE"]))
    assert silent(other, 0.1) and silent(admin, 0.1), "ALL parks even CLIENT UNPAUSE"
    # The pause ends by itself at its deadline: both go on.
    assert other[1].reply() == b"+PONG\r\n"
    assert admin[1].reply() == b"+OK\r\n"
    # A write pause covers PUBLISH (Redis flags it may-replicate) and EXEC of writes.
    assert call(admin, "MULTI") == b"+OK\r\n"
    assert call(admin, "SET", "x", "1") == b"+QUEUED\r\n"
    assert call(other, "CLIENT", "PAUSE", "60000", "WRITE") == b"+OK\r\n"
    admin[0].sendall(encode(["EXEC"]))
    other[0].sendall(encode(["PUBLISH", "ch", "m"]))
    assert silent(admin) and silent(other)
    third = connect(addr)
    assert call(third, "CLIENT", "UNPAUSE") == b"+OK\r\n"
    assert admin[1].reply() == b"*1\r\n+OK\r\n"
    assert other[1].reply() == b":0\r\n"
    call(third, "DEL", "x")
    for c in (admin, other, third):
        c[0].close()


def monitor_lines(addr, commands, count):
    """The lines a monitor on `addr` receives while another connection runs `commands`
    (lines of other clients of the shared server are left out)."""
    mon, other = connect(addr), connect(addr)
    assert call(mon, "MONITOR") == b"+OK\r\n"
    assert eventually(lambda: b"flags=O " in call(other, "CLIENT", "LIST"))
    for c in commands:
        call(other, *c)
    call(other, "ECHO", "end-of-test")
    port = other[0].getsockname()[1]
    ours = b" 127.0.0.1:%d] " % port
    lines = []
    while True:
        line = mon[1].reply()
        if ours not in line:
            continue
        if line.endswith(b'"ECHO" "end-of-test"\r\n'):
            break
        lines.append(line)
    assert len(lines) == count, lines
    mon[0].sendall(encode(["RESET"]))
    while (reply := mon[1].reply()) != b"+RESET\r\n":
        assert ours not in reply, reply
    call(other, "SET", "after", "reset")
    assert silent(mon, 0.2), "RESET ends monitoring"
    mon[0].close()
    other[0].close()
    out = []
    for line in lines:
        assert line.startswith(b"+") and line.endswith(b"\r\n"), line
        ts, rest = line[1:-2].split(b" ", 1)
        assert float(ts) > 1.7e9
        db, rest = rest.split(b"] ", 1)
        # The database the command left the client in, then the command.
        out.append(rest if db.startswith(b"[0 ") else db.split(b" ")[0] + b"] " + rest)
    return out


def test_monitor_lines_as_redis(fridge, redis_server):  # noqa: F811
    commands = [
        ["SET", "k", "v"], ["GET", "k"], ["SET", "q", b'a "b"\\\n\r\t\x07\x08\x00\xff~'],
        ["NOSUCH", "x"], ["GET"], ["CONFIG", "GET", "maxmemory"], ["AUTH", "pw"],
        ["AUTH", "user", "pw"], ["HELLO", "2", "AUTH", "default", "pw", "SETNAME", "n"],
        ["CLIENT", "LIST"], ["CLIENT", "ID"], ["MULTI"], ["SET", "m", 1], ["EXEC"],
        ["INCR", "k"], ["DEL", "k", "q", "m"], ["PING"],
        ["SELECT", "1"], ["SET", "k1", "v"], ["SELECT", "0"], ["DEL", "k1"],
    ]
    ours = monitor_lines(fridge, commands, 17)
    theirs = monitor_lines(redis_server, commands, 17)
    assert ours == theirs
    assert ours[0] == b'"SET" "k" "v"'
    assert b'"AUTH" "(redacted)"' in ours
    assert b'[1] "SET" "k1" "v"' in ours, "the line names the client's database"


def test_monitor_sees_its_tenant_only(tenant_server):
    server = tenant_server(tenants_toml({"alice": ("pa", []), "bob": ("pb", [])}))
    alice_mon, alice, bob = connect(server.addr), connect(server.addr), connect(server.addr)
    for conn, user, pw in [(alice_mon, "alice", "pa"), (alice, "alice", "pa"), (bob, "bob", "pb")]:
        assert call(conn, "AUTH", user, pw) == b"+OK\r\n"
    assert call(alice_mon, "MONITOR") == b"+OK\r\n"
    call(bob, "SET", "b", "1")
    call(alice, "SET", "a", "1")
    line = alice_mon[1].reply()
    assert line.endswith(b'"SET" "a" "1"\r\n'), line
    assert silent(alice_mon, 0.2), "bob's commands are not alice's to see"
    # The monitor runs commands of its own meanwhile.
    assert call(alice_mon, "GET", "a") == b"$1\r\n1\r\n"
    assert alice_mon[1].reply().endswith(b'"GET" "a"\r\n'), "and sees them after their reply"


def test_config_resetstat_rewrite_and_shutdown_errors_as_redis(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        ["CONFIG", "RESETSTAT", "x"], ["CONFIG", "REWRITE", "x"], ["CONFIG", "REWRITE"],
        ["SHUTDOWN", "foo"], ["SHUTDOWN", "SAVE", "NOSAVE"], ["SHUTDOWN", "ABORT"],
        ["SHUTDOWN", "NOSAVE", "ABORT"], ["SHUTDOWN", "NOW", "ABORT"],
        ["MULTI"], ["MONITOR"], ["SET", "a", "b"], ["EXEC"],
        ["MULTI"], ["SHUTDOWN", "NOSAVE"], ["EXEC"], ["DEL", "a"],
    ])


def test_config_resetstat_counts_from_zero(fridge):
    conn = connect(fridge)
    call(conn, "SET", "rs", "1")
    call(conn, "GET", "rs")
    call(conn, "NOSUCHCOMMAND")
    assert call(conn, "CONFIG", "RESETSTAT") == b"+OK\r\n"
    info = call(conn, "INFO", "commandstats").decode()
    assert "cmdstat_get" not in info and "cmdstat_set" not in info, info
    assert "errorstat_ERR" not in call(conn, "INFO", "errorstats").decode()
    stats = call(conn, "INFO", "stats").decode()
    assert "keyspace_hits:0\r\n" in stats and "total_error_replies:0\r\n" in stats, stats
    conn[0].close()


def test_shutdown_stops_the_server_gracefully():
    proc, port = launch()
    try:
        conn, other = connect(("127.0.0.1", port)), connect(("127.0.0.1", port))
        assert call(conn, "SET", "k", "v") == b"+OK\r\n"
        assert call(conn, "SHUTDOWN", "SAVE") == b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n"
        assert call(conn, "GET", "k") == b"$1\r\nv\r\n", "a refused SHUTDOWN changes nothing"
        conn[0].sendall(encode(["SHUTDOWN", "NOSAVE"]))
        assert conn[0].recv(100) == b"", "no reply: the connection closes"
        assert other[0].recv(100) == b"", "and every other one"
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            stop(proc)


def test_latency_tracking_config_as_redis(fridge, redis_server):  # noqa: F811
    same(fridge, redis_server, [
        # (One each: Redis's order for a pattern changes from run to run.)
        ["CONFIG", "GET", "latency-tracking"],
        ["CONFIG", "GET", "latency-tracking-info-percentiles"],
        ["CONFIG", "SET", "latency-tracking-info-percentiles", "50 abc"],
        ["CONFIG", "SET", "latency-tracking-info-percentiles", "50 101"],
        ["CONFIG", "SET", "latency-tracking", "maybe"],
        ["CONFIG", "SET", "latency-tracking-info-percentiles", "99.99 50 0"],
        ["CONFIG", "GET", "latency-tracking-info-percentiles"],
        ["CONFIG", "SET", "latency-tracking-info-percentiles", "50 99 99.9"],
    ], resp3=False)


def latencystats(conn):
    text = call(conn, "INFO", "latencystats").decode()
    body = text.split("\r\n", 1)[1]
    assert "# Latencystats\r\n" in body, text
    lines = [line for line in body.split("\r\n")[1:] if line]
    return dict(line.split(":", 1) for line in lines)


def test_info_latencystats(fridge):
    conn = connect(fridge)
    assert call(conn, "CONFIG", "RESETSTAT") == b"+OK\r\n"
    for i in range(50):
        call(conn, "SET", f"lat{i}", "v")
    call(conn, "CONFIG", "GET", "maxmemory")
    stats = latencystats(conn)
    assert set(stats) >= {"latency_percentiles_usec_set", "latency_percentiles_usec_config|get"}
    fields = dict(f.split("=") for f in stats["latency_percentiles_usec_set"].split(","))
    assert list(fields) == ["p50", "p99", "p99.9"]
    p50, p99, p999 = (float(fields[k]) for k in ("p50", "p99", "p99.9"))
    assert 0 < p50 <= p99 <= p999
    assert "# Latencystats" not in call(conn, "INFO").decode(), "not a default section"
    call(conn, "CONFIG", "SET", "latency-tracking-info-percentiles", "0 100")
    fields = latencystats(conn)["latency_percentiles_usec_set"]
    assert fields.startswith("p0=") and ",p100=" in fields
    call(conn, "CONFIG", "SET", "latency-tracking", "no")
    assert latencystats(conn) == {}, "nothing while tracking is off"
    call(conn, "CONFIG", "SET", "latency-tracking", "yes",
         "latency-tracking-info-percentiles", "50 99 99.9")
    assert call(conn, "CONFIG", "RESETSTAT") == b"+OK\r\n"
    assert set(latencystats(conn)) == {"latency_percentiles_usec_config|resetstat"}
    conn[0].close()


def client_fields(conn, *args):
    line = call(conn, "CLIENT", *args).split(b"\r\n", 1)[1].decode().strip()
    return dict(kv.split("=", 1) for kv in line.split(" "))


def test_client_list_fields_are_redis_fields(fridge, redis_server):  # noqa: F811
    ours, theirs = connect(fridge), connect(redis_server)
    a = list(client_fields(ours, "INFO"))
    b = list(client_fields(theirs, "INFO"))
    assert a[:len(b)] == b and a[len(b):] == ["watch"], (a, b)


def test_client_list_shows_real_buffers(fridge):
    me, other = connect(fridge), connect(fridge)
    call(other, "CLIENT", "SETNAME", "other")
    call(other, "WATCH", "w1", "w2")
    call(other, "MULTI")
    call(other, "SET", "a", "1")
    call(other, "SET", "b", "2")
    # A request that has not all arrived sits in the query buffer.
    other[0].sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$10\r\n12345")
    silent(other, 0.2)
    lines = call(me, "CLIENT", "LIST").split(b"\r\n", 1)[1].decode().strip().split("\n")
    f = next(dict(kv.split("=", 1) for kv in line.split(" ")) for line in lines
             if "name=other" in line)
    assert f["multi"] == "2" and "x" in f["flags"], f
    assert f["watch"] == "2"
    assert int(f["qbuf"]) == len(b"*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$10\r\n12345")
    assert int(f["qbuf-free"]) > 0 and int(f["multi-mem"]) > 0 and int(f["fd"]) > 0
    assert int(f["tot-mem"]) >= int(f["qbuf"]) and f["events"] == "r"
    mine = client_fields(me, "INFO")
    assert mine["multi"] == "-1" and mine["flags"] == "N" and mine["cmd"] == "client|info"
    other[0].sendall(b"67890\r\n")
    assert other[1].reply() == b"+QUEUED\r\n"
    call(other, "DISCARD")


def flat_map(reply):
    """A RESP2 map reply read into a dict (nested maps too)."""
    def parse(buf, pos):
        kind, end = buf[pos:pos + 1], buf.index(b"\r\n", pos)
        head = buf[pos + 1:end]
        if kind == b":":
            return int(head), end + 2
        if kind == b"$":
            n = int(head)
            return buf[end + 2:end + 2 + n].decode(), end + 4 + n
        items, pos = [], end + 2
        for _ in range(int(head)):
            item, pos = parse(buf, pos)
            items.append(item)
        return dict(zip(items[::2], items[1::2])), pos
    return parse(reply, 0)[0]


def test_latency_histogram(fridge, redis_server):  # noqa: F811
    for addr in (fridge, redis_server):
        conn = connect(addr)
        call(conn, "CONFIG", "RESETSTAT")
        for i in range(20):
            call(conn, "SET", f"h{i}", "v")
        call(conn, "CONFIG", "GET", "maxmemory")
        h = flat_map(call(conn, "LATENCY", "HISTOGRAM", "set", "nosuch", "config"))
        assert set(h) == {"set", "config|get", "config|resetstat"}, h
        assert h["set"]["calls"] == 20
        levels = list(h["set"]["histogram_usec"].items())
        assert levels and levels[-1][1] == 20, levels
        assert all(a[0] < b[0] and a[1] < b[1] for a, b in zip(levels, levels[1:]))
        # HdrHistogram's levels: 1024 ns doubling, each named by its highest value in µs.
        names = [((1024 << k) + ((1024 << k) >> 7) - 1) // 1000 for k in range(40)]
        assert all(m in names for m, _ in levels), levels
        assert "get" not in flat_map(call(conn, "LATENCY", "HISTOGRAM")), "not called"
        for i in range(20):
            call(conn, "DEL", f"h{i}")
        conn[0].close()
