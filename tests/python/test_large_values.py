"""Large values written from their segments (`crate::output`): GET replies of values of 32 KiB
or more name the value's bytes in the cache instead of copying them. Every byte must arrive
in order whatever the socket takes per write, while the item is overwritten and the cache
rewritten under a reader that does not read, through both protocols, in pipelines, with
`CLIENT REPLY OFF`, in scripts and in transactions; and pins must all be released."""

import socket
import time

import redis

from conftest import launch, stop


def stats(port):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"stats\r\n")
        reply = b""
        while not reply.endswith(b"END\r\n"):
            reply += s.recv(65536)
    return {
        k.decode(): v.decode()
        for k, v in (line.split(b" ")[1:3] for line in reply.splitlines() if line.startswith(b"STAT "))
    }


def value(seed, n):
    return bytes((seed + i * 7) % 251 for i in range(n))


def read_exactly(sock, n):
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(min(1 << 20, n - len(data)))
        assert chunk, "connection closed early"
        data += chunk
    return bytes(data)


def test_large_gets_arrive_whole_in_order_through_both_protocols():
    proc, port = launch(memory_mb=256)
    try:
        r = redis.Redis(port=port, socket_timeout=20)
        values = {f"big:{i}": value(i, 40_000 + i * 100_000) for i in range(6)}
        values["small"] = b"tiny"
        for k, v in values.items():
            r.set(k, v)
        # Text: one pipelined request of every key several times, read slowly.
        with socket.create_connection(("127.0.0.1", port)) as s:
            keys = list(values) * 3
            request = b"".join(f"get {k}\r\n".encode() for k in keys) + b"gets big:1 small big:2\r\n"
            s.sendall(request)
            for k in keys:
                v = values[k]
                expected = f"VALUE {k} 0 {len(v)}\r\n".encode() + v + b"\r\nEND\r\n"
                assert read_exactly(s, len(expected)) == expected, k
            head = read_exactly(s, len(b"VALUE big:1 0 140000 "))
            assert head.startswith(b"VALUE big:1 0 140000 ")
        # RESP: a pipeline of GETs, and MGET (copied) beside them.
        p = r.pipeline(transaction=False)
        for k in values:
            p.get(k)
        p.mget(list(values))
        got = p.execute()
        assert got[:-1] == list(values.values())
        assert got[-1] == list(values.values())
        deadline = time.time() + 5
        while stats(port)["value_pins"] != "0" and time.time() < deadline:
            time.sleep(0.05)
        assert stats(port)["value_pins"] == "0", "every pin was released"
    finally:
        stop(proc)


def test_a_reader_that_does_not_read_holds_its_bytes_and_writers_go_on():
    """A client asks for large values and reads nothing while the same keys are overwritten
    and the whole cache is written over several times: writers never fail, the stalled
    client then reads exactly the values as they were, and its pins go when it is done."""
    proc, port = launch("--max-item-size", "1MiB", memory_mb=64, workers=1)
    try:
        r = redis.Redis(port=port, socket_timeout=20)
        old = {f"k{i}": value(i, 900_000) for i in range(4)}
        for k, v in old.items():
            r.set(k, v)
        stalled = socket.create_connection(("127.0.0.1", port))
        # More than the kernel's socket buffers take: the rest waits in pinned segments.
        asked = list(old) * 5
        stalled.sendall(b"".join(f"*2\r\n$3\r\nGET\r\n${len(k)}\r\n{k}\r\n".encode() for k in asked))
        time.sleep(0.3)
        held = int(stats(port)["value_pins"])
        assert held >= 1, "the stalled reply is written from pinned segments"
        fill = value(99, 900_000)
        for round_ in range(3):
            for i in range(80):  # 72 MB into 64 MiB, three times
                r.set(f"fill:{round_}:{i}", fill)
            for k in old:
                r.set(k, b"new")
        s = stats(port)
        assert int(s["evictions"]) > 0
        # The GETs run before the overwrites answer the old values, byte for byte (the first
        # at least: its reply was pinned); those run after, `new`.
        seen_new = False
        for n, k in enumerate(asked):
            header = b""
            while not header.endswith(b"\r\n"):
                header += read_exactly(stalled, 1)
            got = read_exactly(stalled, int(header[1:-2]) + 2)[:-2]
            if got == b"new":
                seen_new = True
                assert n > 0, "the first GET ran before the overwrites"
            else:
                assert not seen_new and got == old[k], f"reply {n} ({k}) is the old value"
        stalled.close()
        deadline = time.time() + 5
        while stats(port)["value_pins"] != "0" and time.time() < deadline:
            time.sleep(0.05)
        assert stats(port)["value_pins"] == "0"
        assert r.get("k0") == b"new"
    finally:
        stop(proc)


def test_dropped_replies_scripts_and_transactions():
    proc, port = launch(memory_mb=128)
    try:
        r = redis.Redis(port=port, socket_timeout=20)
        big = value(5, 300_000)
        r.set("big", big)
        with socket.create_connection(("127.0.0.1", port)) as s:
            # CLIENT REPLY OFF drops the GET's reply, pinned value included; ON answers again.
            s.sendall(b"CLIENT REPLY OFF\r\nGET big\r\nCLIENT REPLY ON\r\nGET big\r\n")
            expected = b"+OK\r\n" + f"${len(big)}\r\n".encode() + big + b"\r\n"
            assert read_exactly(s, len(expected)) == expected
            # A client closing with a pinned reply unsent releases it.
            s.sendall(b"GET big\r\n" * 20)
        assert r.eval("return redis.call('GET', KEYS[1])", 1, "big") == big
        p = r.pipeline(transaction=True)
        p.get("big")
        p.strlen("big")
        assert p.execute() == [big, len(big)]
        deadline = time.time() + 5
        while stats(port)["value_pins"] != "0" and time.time() < deadline:
            time.sleep(0.05)
        assert stats(port)["value_pins"] == "0"
    finally:
        stop(proc)
