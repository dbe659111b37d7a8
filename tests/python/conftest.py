"""Starts one fridge server (the binary cargo built) on an ephemeral port for the session."""

import os
import re
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fridge_binary():
    if os.environ.get("FRIDGE_BIN"):
        return os.environ["FRIDGE_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    return os.path.join(target, "debug", "fridge")


@pytest.fixture(scope="session")
def fridge():
    """Yields (host, port) of a running fridge; stops it afterwards."""
    proc = subprocess.Popen(
        [fridge_binary(), "-p", "0", "-m", "64", "-t", "2"],
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stderr.readline()
    match = re.search(r"on 127\.0\.0\.1:(\d+)", line)
    assert match, f"unexpected startup line: {line!r}"
    port = int(match.group(1))
    yield ("127.0.0.1", port)
    proc.terminate()
    assert proc.wait(timeout=10) == 0, "graceful shutdown exits 0"
