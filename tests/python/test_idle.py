"""An idle server sleeps: with no clients, every thread of fridge together wakes at most 10
times a second (memcached wakes about 5 times), counted from each thread's
`voluntary_ctxt_switches` in `/proc/<pid>/task/*/status` over a few seconds. Then it still
serves: the sleeping threads wake for a client."""

import os
import socket
import time

import redis
from conftest import launch, stop

SECONDS = 4


def switches(pid):
    """{thread name (with its id): voluntary context switches so far}."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                fields = dict(line.split(":\t", 1) for line in f if ":\t" in line)
        except FileNotFoundError:
            continue  # a thread that ended
        out[f"{fields['Name'].strip()}/{tid}"] = int(fields["voluntary_ctxt_switches"])
    return out


def test_an_idle_server_wakes_at_most_ten_times_a_second():
    proc, port = launch("--admin-port", "0", workers=4)
    try:
        # A client came and went (the workers and the engine's threads have had work).
        r = redis.Redis(port=port)
        for i in range(2000):
            r.set(f"k{i}", "v", ex=3600)
            r.get(f"k{i}")
        r.close()
        time.sleep(1.5)
        before = switches(proc.pid)
        time.sleep(SECONDS)
        after = switches(proc.pid)
        per_thread = {t: (after[t] - before.get(t, 0)) / SECONDS for t in after}
        total = sum(per_thread.values())
        assert total <= 10, f"{total:.1f} wake-ups/s: {per_thread}"
        # Asleep, not stuck: a new client is served at once, and so is a hot-key report
        # (the metadata worker wakes for the pools).
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"get k1\r\n")
            assert s.recv(100).startswith(b"VALUE k1 0 1\r\n")
        r = redis.Redis(port=port)
        assert r.get("k2") == b"v"
        assert r.ttl("k3") > 3500
    finally:
        stop(proc)
