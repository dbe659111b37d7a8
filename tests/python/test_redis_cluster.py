"""Redis Cluster clients over a static slot map (`--cluster-config`, docs/scale-out.md): three
fridge nodes on 127.0.0.1 share one cluster-config file, redis-py's `RedisCluster` talks to
them, and direct connections check the redirections (`MOVED`, `CROSSSLOT`, `CLUSTERDOWN`).
Where redis-server 7.0.15 is installed, `CLUSTER KEYSLOT` is compared with a redis-server in
cluster mode, and the shapes of `CLUSTER SLOTS/SHARDS/NODES/INFO` with a real three-node
Redis cluster started in the same run."""

import getpass
import hashlib
import os
import re
import shutil
import socket
import subprocess
import time

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

from conftest import drain, fridge_binary, free_port, stop, wait_port
from test_redis_command import ask, parse
from test_redis_parity import Reader, encode

REDIS = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")
RANGES = [(0, 5460), (5461, 10922), (10923, 16383)]


def node_id(name):
    return hashlib.sha1(name.encode()).hexdigest()


def cluster_config(ports, ranges):
    """The file: one `node` line per node (`ranges`: a list of slot-range lists per node)."""
    lines = ["# three fridge nodes on 127.0.0.1"]
    for i, (port, rs) in enumerate(zip(ports, ranges)):
        slots = " ".join(f"{a}-{b}" if a != b else str(a) for a, b in rs)
        lines.append(f"node {node_id(f'n{i}')} 127.0.0.1:{port} {slots}".rstrip())
    return "\n".join(lines) + "\n"


def start_node(port, path):
    env = {**os.environ, "FRIDGE_USER": os.environ.get("FRIDGE_USER", getpass.getuser())}
    proc = subprocess.Popen(
        [fridge_binary(), "-p", str(port), "-m", "64", "-t", "2", "--cluster-config", str(path)],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = proc.stderr.readline()
    assert f"127.0.0.1:{port}" in line, f"unexpected startup line: {line!r}"
    drain(proc)
    return proc


class Cluster:
    def __init__(self, path):
        self.path = path
        self.ports = [free_port() for _ in range(3)]
        self.write([[r] for r in RANGES])
        self.procs = []

    def start(self):
        for p in self.ports:
            self.procs.append(start_node(p, self.path))

    def write(self, ranges):
        self.path.write_text(cluster_config(self.ports, ranges))

    def ask(self, i, *command, resp3=False):
        with socket.create_connection(("127.0.0.1", self.ports[i])) as s:
            s.settimeout(10)
            r = Reader(s)
            if resp3:
                s.sendall(encode(["HELLO", "3"]))
                r.reply()
            s.sendall(encode(list(command)))
            return r.reply()

    def direct(self, i):
        return redis.Redis(port=self.ports[i])

    def client(self):
        return RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", p) for p in self.ports])

    def node_of(self, slot):
        return next(i for i, (a, b) in enumerate(RANGES) if a <= slot <= b)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path / "cluster.conf")
    try:
        c.start()
        yield c
    finally:
        for p in c.procs:
            if p.poll() is None:
                stop(p)


def keyslot(key):
    """The spec's slot (CRC16-XMODEM of the hash tag or key, mod 16384), in Python."""
    k = key.encode() if isinstance(key, str) else key
    open_ = k.find(b"{")
    if open_ >= 0:
        close = k.find(b"}", open_ + 1)
        if close > open_ + 1:
            k = k[open_ + 1:close]
    crc = 0
    for byte in k:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc % 16384


def test_redis_py_cluster_spreads_keys_over_the_nodes(cluster):
    rc = cluster.client()
    keys = [f"key:{i}" for i in range(300)]
    for k in keys:
        assert rc.set(k, k.upper())
    assert [rc.get(k) for k in keys] == [k.upper().encode() for k in keys]
    sizes = [cluster.direct(i).dbsize() for i in range(3)]
    assert sum(sizes) == 300 and all(n > 50 for n in sizes), sizes
    for k in keys[:30]:
        slot = rc.keyslot(k)
        assert slot == keyslot(k)
        assert cluster.direct(cluster.node_of(slot)).get(k) == k.upper().encode()

    pipe = rc.pipeline()
    for i in range(100):
        pipe.set(f"p:{i}", i)
    assert pipe.execute() == [True] * 100
    pipe = rc.pipeline()
    for i in range(100):
        pipe.incr(f"p:{i}")
    assert pipe.execute() == list(range(1, 101))

    rc.mset_nonatomic({f"m:{i}": i for i in range(50)})
    assert rc.mget_nonatomic([f"m:{i}" for i in range(50)]) == [str(i).encode() for i in range(50)]

    # Hash tags keep multi-key commands on one node.
    assert rc.mset({"{u1}.a": "1", "{u1}.b": "2"})
    assert rc.mget("{u1}.a", "{u1}.b") == [b"1", b"2"]
    rc.sadd("{u1}.s1", "x", "y")
    rc.sadd("{u1}.s2", "y", "z")
    assert rc.sinterstore("{u1}.s3", ["{u1}.s1", "{u1}.s2"]) == 1
    assert rc.rename("{u1}.a", "{u1}.c")
    assert rc.eval("return redis.call('get', KEYS[1])", 1, "{u1}.c") == b"1"
    with pytest.raises(redis.exceptions.RedisClusterException):
        rc.mget("a", "b")  # redis-py refuses keys of several slots itself
    rc.close()


def test_wrong_node_answers_moved_and_crossslot(cluster):
    slot = keyslot("foo")  # 12182: the third node's
    assert slot == 12182
    moved = f"-MOVED 12182 127.0.0.1:{cluster.ports[2]}\r\n".encode()
    assert cluster.ask(0, "GET", "foo") == moved
    assert cluster.ask(0, "SET", "foo", "1") == moved
    assert cluster.ask(0, "EVAL", "return 1", "1", "foo") == moved
    assert cluster.ask(0, "OBJECT", "ENCODING", "foo") == moved
    assert cluster.ask(2, "SET", "foo", "1") == b"+OK\r\n"
    crossslot = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    assert cluster.ask(0, "MGET", "bar", "foo") == crossslot
    assert cluster.ask(0, "MSET", "bar", "1", "{bar}x", "2") == b"+OK\r\n"
    assert cluster.ask(0, "ZUNIONSTORE", "bar", "2", "bar", "foo") == crossslot
    # Keyless commands run anywhere.
    assert cluster.ask(0, "PING") == b"+PONG\r\n"
    assert cluster.ask(0, "SELECT", "1") == b"-ERR SELECT is not allowed in cluster mode\r\n"

    # In MULTI: a key of another node flags the transaction; keys of two slots this node
    # serves make EXEC answer CROSSSLOT.
    with socket.create_connection(("127.0.0.1", cluster.ports[0])) as s:
        r = Reader(s)
        replies = []
        for c in (["MULTI"], ["GET", "foo"], ["EXEC"],
                  ["MULTI"], ["SET", "bar", "1"], ["SET", "b", "1"], ["EXEC"],
                  ["MULTI"], ["SET", "bar", "2"], ["GET", "{bar}x"], ["EXEC"]):
            s.sendall(encode(c))
            replies.append(r.reply())
    assert replies == [
        b"+OK\r\n", moved,
        b"-EXECABORT Transaction discarded because of previous errors.\r\n",
        b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", crossslot,
        b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", b"*2\r\n+OK\r\n$1\r\n2\r\n",
    ]

    # Counted as Redis 7.0 counts them: rejected calls, errors by prefix.
    stats = cluster.ask(0, "INFO", "errorstats").decode()
    assert "errorstat_MOVED:count=" in stats and "errorstat_CROSSSLOT:count=" in stats
    assert "cmdstat_mget:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1," in \
        cluster.ask(0, "INFO", "commandstats").decode()

    # A plain (not cluster) redis-py client reads the redirection as MovedError.
    with pytest.raises(redis.exceptions.MovedError, match=f"12182 127.0.0.1:{cluster.ports[2]}"):
        cluster.direct(1).get("foo")


def test_cluster_subcommands(cluster):
    ids = [node_id(f"n{i}") for i in range(3)]
    assert cluster.ask(1, "CLUSTER", "MYID") == b"$40\r\n" + ids[1].encode() + b"\r\n"
    assert cluster.ask(0, "CLUSTER", "KEYSLOT", "{user1000}.following") == b":3443\r\n"
    info = cluster.ask(0, "CLUSTER", "INFO").decode()
    assert "cluster_state:ok\r\n" in info and "cluster_slots_assigned:16384\r\n" in info
    assert "cluster_known_nodes:3\r\n" in info and "cluster_size:3\r\n" in info
    nodes = parse(cluster.ask(0, "CLUSTER", "NODES"))[0].decode().splitlines()
    assert nodes[0].startswith(f"{ids[0]} 127.0.0.1:{cluster.ports[0]}@0 myself,master - ")
    assert nodes[2].endswith(" connected 10923-16383")
    slots = parse(cluster.ask(2, "CLUSTER", "SLOTS"))[0]
    assert slots == [[a, b, [b"127.0.0.1", p, i.encode(), []]]
                     for (a, b), p, i in zip(RANGES, cluster.ports, ids)]
    assert b"INFO" in cluster.ask(0, "CLUSTER", "HELP")
    assert cluster.ask(0, "CLUSTER", "REPLICAS", ids[2]) == b"*0\r\n"
    assert cluster.ask(0, "CLUSTER", "REPLICAS", "nosuch") == b"-ERR Unknown node nosuch\r\n"
    for sub in (["MEET", "127.0.0.1", "7000"], ["ADDSLOTS", "1"], ["FAILOVER"], ["RESET"],
                ["SETSLOT", "1", "STABLE"], ["SAVECONFIG"], ["FORGET", ids[1]]):
        reply = cluster.ask(0, "CLUSTER", *sub)
        assert reply.startswith(b"-ERR CLUSTER " + sub[0].encode() + b" is not supported"), reply
    for c in ("ASKING", "READONLY", "READWRITE"):
        assert cluster.ask(0, c) == b"+OK\r\n"
    assert b"cluster_enabled:1\r\n" in cluster.ask(0, "INFO", "cluster")
    assert b"redis_mode:cluster\r\n" in cluster.ask(0, "INFO", "server")

    c0 = cluster.direct(0)
    for i in range(20):
        c0.set(f"{{bar}}{i}", i)
    c0.set("bar", "x")
    assert c0.execute_command("CLUSTER", "COUNTKEYSINSLOT", 5061) == 21
    assert c0.execute_command("CLUSTER", "COUNTKEYSINSLOT", 5062) == 0
    assert len(c0.execute_command("CLUSTER", "GETKEYSINSLOT", 5061, 5)) == 5
    assert set(c0.execute_command("CLUSTER", "GETKEYSINSLOT", 5061, 100)) == \
        {b"bar"} | {f"{{bar}}{i}".encode() for i in range(20)}
    assert cluster.ask(0, "CLUSTER", "COUNTKEYSINSLOT", "16384") == b"-ERR Invalid slot\r\n"
    assert cluster.ask(0, "CLUSTER", "GETKEYSINSLOT", "1", "-1") == \
        b"-ERR Invalid slot or number of keys\r\n"

    # The memcached protocols know nothing of slots.
    with socket.create_connection(("127.0.0.1", cluster.ports[0])) as s:
        s.sendall(b"set foo 0 0 2\r\nhi\r\nget foo\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            buf += s.recv(4096)
        assert buf == b"STORED\r\nVALUE foo 0 2\r\nhi\r\nEND\r\n"


def test_without_cluster_config_cluster_is_disabled(fridge):
    disabled = b"-ERR This instance has cluster support disabled\r\n"
    replies = ask(fridge, ["CLUSTER", "INFO"], ["ASKING"], ["READONLY"], ["READWRITE"])
    assert replies == [disabled] * 4
    (reply,) = ask(fridge, ["CLUSTER", "NOSUCH"])
    assert reply == b"-ERR unknown subcommand 'NOSUCH'. Try CLUSTER HELP.\r\n"
    (reply,) = ask(fridge, ["CLUSTER", "KEYSLOT"])
    assert reply == b"-ERR wrong number of arguments for 'cluster|keyslot' command\r\n"
    (info,) = ask(fridge, ["INFO", "cluster"])
    assert b"cluster_enabled:0\r\n" in info


def test_tenants_and_bad_maps_are_refused_at_check(tmp_path):
    path = tmp_path / "cluster.conf"
    port = free_port()
    path.write_text(f"node {node_id('a')} 127.0.0.1:{port} 0-16383\n")
    toml = tmp_path / "fridge.toml"
    toml.write_text(f'cluster_config = "{path}"\nallow_unauthenticated = true\n'
                    '[[tenants]]\nname = "t1"\n')
    check = [fridge_binary(), "--check-config", "-p", str(port), "-u", getpass.getuser()]

    def run(*args):
        return subprocess.run([*check, *args], capture_output=True, text=True)

    ok = run("--cluster-config", str(path))
    assert ok.returncode == 0, ok.stderr
    both = run("--config", str(toml))
    assert both.returncode == 1 and "cannot be combined with tenants" in both.stderr, both.stderr
    path.write_text(f"node {node_id('a')} 127.0.0.1:{port} 0-100\n"
                    f"node {node_id('b')} 127.0.0.1:{port + 1} 50-16383\n")
    bad = run("--cluster-config", str(path))
    assert bad.returncode == 1 and "line 2: slot 50 is already served by" in bad.stderr, bad.stderr


def test_node_restart(cluster):
    rc = cluster.client()
    keys = [f"r:{i}" for i in range(60)]
    for k in keys:
        rc.set(k, k)
    on_second = [k for k in keys if cluster.node_of(keyslot(k)) == 1]
    elsewhere = [k for k in keys if cluster.node_of(keyslot(k)) != 1]
    assert on_second and elsewhere
    stop(cluster.procs[1])
    with pytest.raises((redis.exceptions.ConnectionError, redis.exceptions.ClusterError)):
        rc.get(on_second[0])
    assert rc.get(elsewhere[0]) == elsewhere[0].encode()
    cluster.procs[1] = start_node(cluster.ports[1], cluster.path)
    deadline = time.monotonic() + 30
    while True:  # the client reconnects at its own pace; no bound on it is asserted
        try:
            assert rc.get(on_second[0]) is None  # a cache: the restarted node is empty
            break
        except (redis.exceptions.ConnectionError, redis.exceptions.ClusterError):
            assert time.monotonic() < deadline, "the client did not recover"
            time.sleep(0.2)
    assert rc.set(on_second[0], "again") and rc.get(on_second[0]) == b"again"
    assert rc.get(elsewhere[0]) == elsewhere[0].encode()
    rc.close()


def sighup_all(cluster):
    for p in cluster.procs:
        p.send_signal(1)


def wait_log(proc, pattern, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            line = proc.log_lines.get(timeout=0.5)
        except Exception:
            continue
        m = re.search(pattern, line)
        if m:
            return m
    raise AssertionError(f"no log line matching {pattern!r}")


def test_reload_with_a_changed_map_drops_keys(cluster):
    rc = cluster.client()
    keys = [f"d:{i}" for i in range(400)]
    for k in keys:
        rc.set(k, "v")
    moving = [k for k in keys if 2001 <= keyslot(k) <= 5460]
    staying = [k for k in keys if 0 <= keyslot(k) <= 2000]
    assert moving and staying
    # Node 0 gives slots 2001-5460 to node 1.
    cluster.write([[(0, 2000)], [(2001, 10922)], [(10923, 16383)]])
    sighup_all(cluster)
    m = wait_log(cluster.procs[0], r"cluster config reloaded: (\d+) slots served here, (\d+) keys")
    assert m.groups() == ("2001", str(len(moving)))
    for p in cluster.procs[1:]:
        wait_log(p, r"cluster config reloaded")
    c0 = cluster.direct(0)
    assert c0.dbsize() == len(staying)
    slot = keyslot(moving[0])
    moved = f"-MOVED {slot} 127.0.0.1:{cluster.ports[1]}\r\n".encode()
    assert cluster.ask(0, "GET", moving[0]) == moved
    assert cluster.ask(1, "GET", moving[0]) == b"$-1\r\n", "dropped, not migrated"
    # The client follows MOVED to the new map.
    assert rc.get(moving[0]) is None and rc.get(staying[0]) == b"v"
    assert rc.set(moving[0], "w") and cluster.direct(1).get(moving[0]) == b"w"

    # A map that leaves slots unserved: the cluster is down.
    cluster.write([[(0, 2000)], [(2001, 10922)], [(10923, 16000)]])
    sighup_all(cluster)
    for p in cluster.procs:
        wait_log(p, r"cluster config reloaded")
    assert b"cluster_state:fail\r\n" in cluster.ask(0, "CLUSTER", "INFO")
    assert keyslot("u50") == 16331
    assert cluster.ask(2, "GET", "u50") == b"-CLUSTERDOWN Hash slot not served\r\n"
    assert cluster.ask(0, "GET", staying[0]) == b"-CLUSTERDOWN The cluster is down\r\n"

    # A file that does not parse changes nothing.
    cluster.path.write_text("node nonsense\n")
    cluster.procs[0].send_signal(1)
    wait_log(cluster.procs[0], r"reload failed")
    assert b"cluster_slots_assigned:16001\r\n" in cluster.ask(0, "CLUSTER", "INFO")
    rc.close()


# --- Compared with redis-server 7.0.15 in cluster mode ------------------------------------


def bus_port_pair():
    """A free port whose cluster bus port (10000 more) is free too."""
    while True:
        p = free_port()
        if p + 10000 < 65536:
            try:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p + 10000))
                return p
            except OSError:
                pass


def start_redis_cluster(tmp_path, n):
    ports = [bus_port_pair() for _ in range(n)]
    procs = []
    try:
        for p in ports:
            d = tmp_path / f"redis-{p}"
            d.mkdir()
            procs.append(subprocess.Popen(
                [REDIS, "--port", str(p), "--cluster-enabled", "yes", "--cluster-config-file",
                 str(d / "nodes.conf"), "--save", "", "--appendonly", "no", "--dir", str(d)],
                stdout=subprocess.DEVNULL))
        for p in ports:
            wait_port(p)
    except BaseException:
        stop_redis(procs)
        raise
    return ports, procs


def stop_redis(procs):
    for p in procs:
        if p.poll() is None:
            p.terminate()
            p.wait(timeout=10)


@pytest.fixture
def redis_cluster(tmp_path):
    if not (REDIS and REDIS_CLI):
        pytest.skip("redis-server is not installed")
    ports, procs = start_redis_cluster(tmp_path, 3)
    try:
        subprocess.run([REDIS_CLI, "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports],
                        "--cluster-replicas", "0", "--cluster-yes"],
                       check=True, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not _cluster_ok(ports):
            assert time.monotonic() < deadline, "the redis cluster did not come up"
            time.sleep(0.2)
        yield ports
    finally:
        stop_redis(procs)


def _cluster_ok(ports):
    for p in ports:
        info = redis.Redis(port=p).execute_command("CLUSTER", "INFO")
        info = info.decode() if isinstance(info, bytes) else info
        if "cluster_state:ok" not in info:
            return False
    return True


def value(reply):
    """A reply as Python values; a RESP3 verbatim string (`=`) as its text."""
    if reply.startswith(b"="):
        head = reply.index(b"\r\n")
        return reply[head + 2 + 4:head + 2 + int(reply[1:head])]
    return parse(reply)[0]


def shape(v):
    """A reply's structure: types and lengths of aggregates, not the values."""
    if isinstance(v, list):
        return [shape(x) for x in v]
    if isinstance(v, tuple):
        return tuple(shape(x) for x in v)
    return type(v).__name__


def test_keyslot_matches_redis(tmp_path):
    if not REDIS:
        pytest.skip("redis-server is not installed")
    (port,), procs = start_redis_cluster(tmp_path, 1)
    try:
        with socket.create_connection(("127.0.0.1", port)) as s:
            keys = ["", "foo", "bar", "{}", "{", "}", "a{b", "a{}b", "{a}", "x{a}y{b}z", "{{a}}",
                    "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "123456789", "\u00e9t\u00e9",
                    *[f"key:{i}" for i in range(200)], *[f"{{tag{i}}}.x" for i in range(50)]]
            r = Reader(s)
            theirs = []
            for k in keys:
                s.sendall(encode(["CLUSTER", "KEYSLOT", k]))
                theirs.append(r.reply())
    finally:
        stop_redis(procs)
    path = tmp_path / "one.conf"
    fport = free_port()
    path.write_text(f"node {node_id('one')} 127.0.0.1:{fport} 0-16383\n")
    proc = start_node(fport, path)
    try:
        with socket.create_connection(("127.0.0.1", fport)) as s:
            r = Reader(s)
            ours = []
            for k in keys:
                s.sendall(encode(["CLUSTER", "KEYSLOT", k]))
                ours.append(r.reply())
    finally:
        stop(proc)
    assert ours == theirs
    assert [int(x[1:-2]) for x in ours] == [keyslot(k) for k in keys]


def test_cluster_replies_have_redis_shapes(cluster, redis_cluster):
    def both(*command, resp3=False):
        ours = value(cluster.ask(0, *command, resp3=resp3))
        with socket.create_connection(("127.0.0.1", redis_cluster[0])) as s:
            r = Reader(s)
            if resp3:
                s.sendall(encode(["HELLO", "3"]))
                r.reply()
            s.sendall(encode(list(command)))
            theirs = value(r.reply())
        return ours, theirs

    for resp3 in (False, True):
        ours, theirs = both("CLUSTER", "SLOTS", resp3=resp3)
        assert shape(ours) == shape(theirs)
        assert sorted(x[:2] for x in ours) == sorted(x[:2] for x in theirs), "the same ranges"
        ours, theirs = both("CLUSTER", "SHARDS", resp3=resp3)
        key = (lambda sh: sh[0][1]) if resp3 else (lambda sh: sh[1])
        assert shape(sorted(ours, key=key)) == shape(sorted(theirs, key=key))
        if resp3:
            assert [k for k, _ in ours[0]] == [k for k, _ in theirs[0]]
            assert [k for k, _ in ours[0][1][1][0]] == [k for k, _ in theirs[0][1][1][0]]
        else:
            assert ours[0][::2] == theirs[0][::2]
            assert ours[0][3][0][::2] == theirs[0][3][0][::2]
        for sub in ("INFO", "NODES"):
            ours, theirs = both("CLUSTER", sub, resp3=resp3)
            assert type(ours) is type(theirs), sub
        ours, theirs = both("CLUSTER", "MYID", resp3=resp3)
        assert len(ours) == len(theirs) == 40

    ours, theirs = both("CLUSTER", "INFO")
    fields = lambda t: [line.split(":")[0] for line in t.decode().split("\r\n")  # noqa: E731
                        if line and "_messages_" not in line]
    assert fields(ours) == fields(theirs)
    ours, theirs = both("CLUSTER", "NODES")
    ours_lines = sorted(line.split(" ") for line in ours.decode().splitlines())
    theirs_lines = sorted(line.split(" ") for line in theirs.decode().splitlines())
    assert [len(x) for x in ours_lines] == [len(x) for x in theirs_lines]
    assert sorted(x[2] for x in ours_lines) == sorted(x[2] for x in theirs_lines), "flags"
    assert sorted(x[8] for x in ours_lines) == sorted(x[8] for x in theirs_lines), "slots"

    for command in (["GET", "foo"], ["MGET", "foo", "bar"], ["CLUSTER", "KEYSLOT"],
                    ["CLUSTER", "NOSUCH"], ["CLUSTER", "COUNTKEYSINSLOT", "16384"],
                    ["CLUSTER", "COUNTKEYSINSLOT", "x"], ["CLUSTER", "GETKEYSINSLOT", "1", "-1"],
                    ["ASKING"], ["READONLY"], ["READWRITE"], ["SELECT", "1"], ["SWAPDB", "0", "1"],
                    ["CLUSTER", "KEYSLOT", "{user1000}.following"]):
        ours, theirs = both(*command)
        if command == ["GET", "foo"]:  # MOVED to the node of slot 12182: another port
            ours, theirs = ours.rsplit(b":", 1)[0], theirs.rsplit(b":", 1)[0]
        assert ours == theirs, command
