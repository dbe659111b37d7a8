"""Prometheus's memcached_exporter scrapes fridge as it scrapes memcached 1.6.18: it reports
`memcached_up 1`, and every metric it exports for memcached it exports for fridge too, but
for the ones listed below, which come from memcached figures fridge leaves out (see
docs/protocol.md, "memcached stats").

The exporter is built by scripts/memcached-exporter (`go install` from its module), or given
as MEMCACHED_EXPORTER; where neither works the test is skipped with the reason. The rules it
parses by are also checked without it in test_memcached_stats.py."""

import getpass
import re
import shutil
import socket
import subprocess

import pytest

from conftest import free_port, go_tool, launch, scrape_exporter, stop, wait_port

# Metrics exported for memcached and not for fridge, by the memcached figure each comes from.
NOT_FOR_FRIDGE = {
    "memcached_item_too_large_total",  # store_too_large: not counted
    "memcached_item_no_memory_total",  # store_no_memory: not counted
    "memcached_direct_reclaims_total",  # memcached's LRU internals
    "memcached_lru_crawler_moves_to_cold_total",
    "memcached_lru_crawler_moves_to_warm_total",
    "memcached_lru_crawler_moves_within_lru_total",
    # `stats settings` lru_crawler and its knobs: fridge has no LRU crawler to configure.
    "memcached_lru_crawler_enabled",
    "memcached_lru_crawler_sleep",
    "memcached_lru_crawler_to_crawl",
    "memcached_lru_crawler_maintainer_thread",
    "memcached_lru_crawler_hot_percent",
    "memcached_lru_crawler_warm_percent",
    "memcached_lru_crawler_hot_max_factor",
    "memcached_lru_crawler_warm_max_factor",
    # `stats items`: memcached's per-class LRU state.
    "memcached_slab_items_age_seconds",
    "memcached_slab_lru_hits_total",
    "memcached_slab_items_crawler_reclaimed_total",
    "memcached_slab_items_evicted_total",
    "memcached_slab_items_evicted_nonzero_total",
    "memcached_slab_items_evicted_time_seconds",
    "memcached_slab_items_evicted_unfetched_total",
    "memcached_slab_items_expired_unfetched_total",
    "memcached_slab_items_outofmemory_total",
    "memcached_slab_items_reclaimed_total",
    "memcached_slab_items_tailrepairs_total",
    "memcached_slab_items_moves_to_cold",
    "memcached_slab_items_moves_to_warm",
    "memcached_slab_items_moves_within_lru",
    "memcached_slab_hot_items",
    "memcached_slab_warm_items",
    "memcached_slab_cold_items",
    "memcached_slab_temporary_items",
    "memcached_slab_hot_age_seconds",
    "memcached_slab_warm_age_seconds",
    # `stats slabs`: the free chunks at the end of a page.
    "memcached_slab_chunks_free_end",
}


def exporter_binary():
    return go_tool("memcached-exporter", "MEMCACHED_EXPORTER", timeout=300)


def scrape(exporter, port):
    """Runs the exporter for the server on `port`, returns {metric name: [lines]}."""
    body = scrape_exporter([exporter, f"--memcached.address=127.0.0.1:{port}"])
    metrics = {}
    for line in body.splitlines():
        m = re.match(r"(memcached_[a-z_]+)[{ ]", line)
        if m:
            metrics.setdefault(m.group(1), []).append(line)
    return metrics


def fill(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"set a 0 0 1\r\nx\r\nset b 0 100 300\r\n" + b"y" * 300 + b"\r\nget a\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            buf += s.recv(4096)


def test_exporter_scrapes_fridge_as_memcached():
    exporter = exporter_binary()
    if not shutil.which("memcached"):
        pytest.skip("memcached is not installed")
    mport = free_port()
    mc = subprocess.Popen(
        ["memcached", "-u", getpass.getuser(), "-l", "127.0.0.1", "-p", str(mport), "-U", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    proc, fport = launch()
    try:
        wait_port(mport)
        fill(mport)
        fill(fport)
        theirs = scrape(exporter, mport)
        ours = scrape(exporter, fport)
    finally:
        stop(proc)
        mc.terminate()
        mc.wait(timeout=10)
    assert theirs["memcached_up"] == ["memcached_up 1"]
    assert ours["memcached_up"] == ["memcached_up 1"], "fridge's stats did not parse"
    missing = sorted(set(theirs) - set(ours) - NOT_FOR_FRIDGE)
    assert not missing, f"exported for memcached, not for fridge: {missing}"
    per_slab_set = [l for l in ours["memcached_slab_commands_total"] if 'command="set"' in l]
    assert per_slab_set, "per-class set counts"
