"""Commands that fill one collection anew, for redis-cli --pipe (bench/types, bench/types_cpu).

Usage: python3 bench/fill_collection.py KIND SIZE | redis-cli -p PORT --pipe
KIND is h, l, s or z; the key is KIND:SIZE, its members f:000000000000 ... (redis-benchmark's
__rand_int__ is 12 digits), hash values and list elements 8 bytes.
"""
import sys
kind, n = sys.argv[1], int(sys.argv[2])
out = sys.stdout
def send(args):
    out.write(f"*{len(args)}\r\n" + "".join(f"${len(a)}\r\n{a}\r\n" for a in args))
send(["DEL", f"{kind}:{n}"])
for start in range(0, n, 1000):
    ids = [f"f:{i:012d}" for i in range(start, min(n, start + 1000))]
    if kind == "h":
        send(["HSET", f"h:{n}"] + [x for i in ids for x in (i, "vvvvvvvv")])
    elif kind == "l":
        send(["RPUSH", f"l:{n}"] + ["vvvvvvvv"] * len(ids))
    elif kind == "s":
        send(["SADD", f"s:{n}"] + ids)
    else:
        send(["ZADD", f"z:{n}"] + [x for k, i in enumerate(ids) for x in (str(start + k), i)])
