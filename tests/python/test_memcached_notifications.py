"""Writes over the memcached protocols (text, meta, binary) reach Redis clients on the same
port like Redis writes do: keyspace notifications with the matching Redis event, and
client-side caching's invalidations (docs/protocol.md, "Keyspace notifications")."""

import socket
import struct

from test_redis_tracking import Raw, invalidate


def text(addr, line, data=None):
    """One memcached text request; returns the first reply line."""
    with socket.create_connection(addr, timeout=5) as s:
        s.sendall(line.encode() + b"\r\n" + (data + b"\r\n" if data is not None else b""))
        f = s.makefile("rb")
        reply = f.readline()
        f.close()
        return reply


def binary(addr, opcode, key, extras=b"", value=b""):
    """One memcached binary request; returns the reply's status."""
    header = struct.pack(">BBHBBHIIQ", 0x80, opcode, len(key), len(extras), 0, 0,
                         len(extras) + len(key) + len(value), 0, 0)
    with socket.create_connection(addr, timeout=5) as s:
        s.sendall(header + extras + key + value)
        reply = s.recv(24)
        return struct.unpack(">H", reply[6:8])[0]


def test_keyspace_events_for_memcached_writes(fridge):
    admin, sub = Raw(fridge), Raw(fridge)
    assert admin.call("CONFIG", "SET", "notify-keyspace-events", "KEA") == b"+OK\r\n"
    sub.call("PSUBSCRIBE", "__keyspace@0__:mc:*")
    steps = [
        (lambda: text(fridge, "set mc:a 0 0 1", b"1"), b"STORED\r\n", b"set"),
        (lambda: text(fridge, "append mc:a 0 0 1", b"2"), b"STORED\r\n", b"append"),
        (lambda: text(fridge, "incr mc:a 5"), b"17\r\n", b"incrby"),
        (lambda: text(fridge, "decr mc:a 1"), b"16\r\n", b"decrby"),
        (lambda: text(fridge, "touch mc:a 100"), b"TOUCHED\r\n", b"expire"),
        (lambda: text(fridge, "ms mc:a 1 T0", b"x"), b"HD\r\n", b"set"),
        (lambda: text(fridge, "md mc:a"), b"HD\r\n", b"del"),
        (lambda: text(fridge, "ma mc:b N0 J7"), b"HD\r\n", b"set"),
        (lambda: text(fridge, "ma mc:b"), b"HD\r\n", b"incrby"),
        (lambda: text(fridge, "delete mc:b"), b"DELETED\r\n", b"del"),
        (lambda: binary(fridge, 0x01, b"mc:c", struct.pack(">II", 0, 0), b"v"), 0, b"set"),
        (lambda: binary(fridge, 0x04, b"mc:c"), 0, b"del"),
    ]
    for run, reply, event in steps:
        assert run() == reply
        message = sub.frame()
        assert message.startswith(b"*4\r\n$8\r\npmessage\r\n"), message
        assert message.endswith(b"$%d\r\n%s\r\n" % (len(event), event)), (event, message)
    # Misses change nothing and publish nothing.
    assert text(fridge, "delete mc:none") == b"NOT_FOUND\r\n"
    assert text(fridge, "incr mc:none 1") == b"NOT_FOUND\r\n"
    assert sub.quiet()
    admin.call("CONFIG", "SET", "notify-keyspace-events", "")
    admin.close()
    sub.close()


def test_tracking_invalidated_by_memcached_writes(fridge):
    a = Raw(fridge, resp3=True)
    assert a.call("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
    for write in (
        lambda: text(fridge, "set mct:k 0 0 1", b"1"),
        lambda: text(fridge, "ms mct:k 1", b"2"),
        lambda: text(fridge, "incr mct:k 1"),
        lambda: binary(fridge, 0x04, b"mct:k"),
    ):
        a.call("GET", "mct:k")  # tracked from here
        write()
        assert a.s.recv(4096) == invalidate(b"mct:k")
    a.call("GET", "mct:k")
    assert text(fridge, "flush_all") == b"OK\r\n"
    assert a.s.recv(4096) == b">2\r\n$10\r\ninvalidate\r\n_\r\n"
    a.close()
