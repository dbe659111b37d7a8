"""`COMMAND` against Debian's redis-server 7.0.15 in the same run: DOCS and GETKEYS answer the
same bytes, INFO the same fields (flags: the ones fridge reports, all Redis's), LIST FILTERBY
the same names among the commands fridge has. Skipped without redis-server."""

import socket

from test_redis_parity import Reader, encode, redis_server, same  # noqa: F401


def parse(buf, pos=0):
    """A RESP reply as Python values (maps as lists of pairs), and where it ends."""
    end = buf.index(b"\r\n", pos)
    kind, head, after = buf[pos:pos + 1], buf[pos + 1:end], end + 2
    if kind in b"+-":
        return head, after
    if kind == b":":
        return int(head), after
    if kind == b"$":
        n = int(head)
        return (None, after) if n < 0 else (buf[after:after + n], after + n + 2)
    if kind == b"_":
        return None, after
    if kind in b"*~%":
        n = int(head) * (2 if kind == b"%" else 1)
        items = []
        for _ in range(max(n, 0)):
            v, after = parse(buf, after)
            items.append(v)
        if kind == b"%":
            items = list(zip(items[::2], items[1::2]))
        return items, after
    raise AssertionError(f"bad frame {buf[pos:pos + 20]!r}")


def ask(addr, *commands, resp3=False):
    with socket.create_connection(addr) as s:
        s.settimeout(10)
        r = Reader(s)
        if resp3:
            s.sendall(encode(["HELLO", "3"]))
            r.reply()
        out = []
        for c in commands:
            s.sendall(encode(c))
            out.append(r.reply())
        return out


# Redis gives the shard channels of SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH as key positions
# (Redis Cluster routes them by slot); fridge, with no cluster, reports no keys for them
# (docs/protocol.md).
SHARD_CHANNELS = (b"ssubscribe", b"sunsubscribe", b"spublish")


# Commands newer than Redis 7.0 (7.4's hash field expiry, Valkey 9.2's HOTKEYS): redis-server
# 7.0.15 knows nothing to compare them with; `scripts/command-docs` describes them.
FIELD_EXPIRY = {"hexpire", "hpexpire", "hexpireat", "hpexpireat", "httl", "hpttl", "hexpiretime",
                "hpexpiretime", "hpersist"}
NEWER = FIELD_EXPIRY | {"hotkeys"}


def names(fridge):
    """The command table's names that Redis 7.0 has too."""
    (reply,) = ask(fridge, ["COMMAND", "INFO"])
    return [n for n in (entry[0].decode() for entry in parse(reply)[0]) if n not in NEWER]


def test_newer_commands_describe_themselves(fridge):
    for n in sorted(FIELD_EXPIRY):
        (docs,) = ask(fridge, ["COMMAND", "DOCS", n])
        (info,) = ask(fridge, ["COMMAND", "INFO", n])
        docs, info = parse(docs)[0], parse(info)[0]
        assert docs[0] == n.encode() and b"7.4.0" in docs[1], n
        assert info[0][0] == n.encode() and info[0][1] in (-5, -6), n
    (docs,) = ask(fridge, ["COMMAND", "DOCS", "hotkeys"])
    (info,) = ask(fridge, ["COMMAND", "INFO", "hotkeys"])
    docs, info = parse(docs)[0], parse(info)[0]
    assert docs[0] == b"hotkeys" and b"9.2.0" in docs[1]
    assert info[0][:6] == [b"hotkeys", -2, [], 0, 0, 0]
    (keys,) = ask(fridge, ["COMMAND", "GETKEYS", "HEXPIRE", "h", "10", "FIELDS", "1", "f"])
    assert parse(keys)[0] == [b"h"]


def unordered_subcommands(reply, resp3):
    """A DOCS reply parsed, each container's subcommands sorted (Redis lists them in its hash
    table's order, which differs from run to run)."""
    def pairs(x):  # RESP2 writes a map as a flat array
        return x if resp3 else list(zip(x[::2], x[1::2]))

    def doc(d):
        return [(k, sorted((n, pairs(sub)) for n, sub in pairs(v)) if k == b"subcommands" else v)
                for k, v in pairs(d)]

    return [(name, doc(d)) for name, d in pairs(parse(reply)[0])]


def test_docs_are_redis_bytes_for_every_command(fridge, redis_server):  # noqa: F811
    every = names(fridge)
    assert len(every) > 80
    for resp3 in (False, True):
        for n in every:
            (ours,) = ask(fridge, ["COMMAND", "DOCS", n], resp3=resp3)
            (theirs,) = ask(redis_server, ["COMMAND", "DOCS", n], resp3=resp3)
            if ours != theirs:  # only a container's subcommands may come in another order
                assert unordered_subcommands(ours, resp3) == unordered_subcommands(theirs, resp3), n
    same(fridge, redis_server, [
        ["COMMAND", "DOCS", "get", "nosuch", "config|get", "SET"],
        ["COMMAND", "DOCS", "nosuch"],
    ])


def test_info_fields_match_redis(fridge, redis_server):  # noqa: F811
    for resp3 in (False, True):
        every = names(fridge)
        ours = ask(fridge, ["COMMAND", "INFO", *every, "nosuch"], resp3=resp3)[0]
        theirs = ask(redis_server, ["COMMAND", "INFO", *every, "nosuch"], resp3=resp3)[0]
        ours, theirs = parse(ours)[0], parse(theirs)[0]
        assert ours[-1] is None and theirs[-1] is None
        for a, b in zip(ours[:-1], theirs[:-1]):
            name = a[0]
            assert a[:2] == b[:2], name
            assert set(a[2]) <= set(b[2]), (name, a[2], b[2])
            if name not in SHARD_CHANNELS:
                assert a[3:6] == b[3:6], name
            assert a[6:9] == b[6:9], name
            assert sorted(a[9]) == sorted(b[9]), name  # subcommands, in hash-table order
    same(fridge, redis_server, [["COMMAND", "INFO", "config|get"], ["COMMAND", "COUNT", "x"]])


def test_getkeys_answers_as_redis(fridge, redis_server):  # noqa: F811
    cases = [
        ["get", "k"], ["set", "k", "v", "EX", "10"], ["mset", "a", "1", "b", "2"], ["mset", "a"],
        ["del", "a", "b", "c"], ["mget", "a", "b"], ["lcs", "a", "b"], ["copy", "a", "b", "REPLACE"],
        ["bitop", "AND", "d", "a", "b"], ["sort", "k", "BY", "w_*", "LIMIT", "0", "1", "STORE", "d"],
        ["sort", "k", "STORE"], ["sort_ro", "k"], ["object", "encoding", "k"], ["object", "nosuch", "k"],
        ["memory", "usage", "k"], ["rename", "a", "b"], ["getex", "k", "PERSIST"], ["watch", "a", "b"],
        ["ping"], ["ping", "x"], ["config", "get", "x"], ["nosuch", "k"], ["get"], ["get", "a", "b"],
        ["restore", "k", "0", "x"], ["touch", "a", "b"], ["set", "k", "v", "get"],
        ["bitfield", "k", "GET", "u8", "0"], ["bitfield", "k", "OVERFLOW", "SAT", "INCRBY", "u8", "0", "1"],
        ["bitfield", "k", "GET", "u8"], ["bitfield_ro", "k", "GET", "u8", "0"],
    ]
    same(fridge, redis_server, [["COMMAND", "GETKEYS", *c] for c in cases])
    same(fridge, redis_server, [["COMMAND", "GETKEYSANDFLAGS", *c] for c in cases])
    same(fridge, redis_server, [["COMMAND", "GETKEYS"], ["COMMAND", "GETKEYSANDFLAGS"]])


def test_list_and_its_filters(fridge, redis_server):  # noqa: F811
    def listed(addr, *filt):
        (reply,) = ask(addr, ["COMMAND", "LIST", *filt])
        return parse(reply)[0]

    ours = [n for n in listed(fridge) if n.decode() not in NEWER]
    assert len(ours) == len(set(ours))
    assert set(ours) <= set(listed(redis_server))
    assert b"config|get" in ours and b"get" in ours
    for filt in (["ACLCAT", "string"], ["ACLCAT", "KEYSPACE"], ["ACLCAT", "nosuch"],
                 ["PATTERN", "get*"], ["PATTERN", "CONFIG|*"], ["MODULE", "x"]):
        want = set(listed(redis_server, "FILTERBY", *filt)) & set(ours)
        got = {n for n in listed(fridge, "FILTERBY", *filt) if n.decode() not in NEWER}
        assert got == want, filt
    same(fridge, redis_server, [
        ["COMMAND", "LIST", "x"], ["COMMAND", "LIST", "FILTERBY"],
        ["COMMAND", "LIST", "FILTERBY", "bogus", "x"], ["COMMAND", "LIST", "FILTERBY", "MODULE", "x"],
    ])
