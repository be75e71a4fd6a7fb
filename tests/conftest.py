"""Shared fixtures: leak checks after every test, paths to peers and test servers."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Iterator, List

import pytest

from mcp_sync.client import forget_protocol_eras

# The process measurements live with the workloads, which bench/ imports without pytest.
from .faults.workloads import child_pids

ROOT = Path(__file__).resolve().parents[1]
SERVERS = Path(__file__).resolve().parent / "servers"
PEERS = ROOT / ".peers"
EVERYTHING = (
    PEERS / "everything" / "node_modules" / "@modelcontextprotocol" / "server-everything"
    / "dist" / "index.js"
)
PY = sys.executable


def mcp_threads() -> List[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcp-sync")]


@pytest.fixture(autouse=True)
def no_leaks() -> Iterator[None]:
    """Fail a test that leaves an mcp-sync* thread or a child process behind."""
    children_before = set(child_pids())
    yield
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        threads = mcp_threads()
        children = set(child_pids()) - children_before
        if not threads and not children:
            return
        for thread in threads:
            thread.join(max(0.0, min(0.1, deadline - time.monotonic())))
        if not threads:
            time.sleep(0.05)  # children: nothing to wait on but the clock
    assert not mcp_threads(), f"threads outlived the test: {[t.name for t in mcp_threads()]}"
    assert not set(child_pids()) - children_before, "child processes outlived the test"


@pytest.fixture(autouse=True)
def fresh_era_cache() -> Iterator[None]:
    """Every test starts with no protocol era remembered: a server on a port that an
    earlier test's server used is probed like any new one."""
    forget_protocol_eras()
    yield
    forget_protocol_eras()


def fake_server_command(*args: str) -> List[str]:
    """The command line of the project's scriptable stdio test server."""
    return [PY, str(SERVERS / "fake_stdio.py"), *args]


@pytest.fixture
def fake_command() -> List[str]:
    return fake_server_command()


def require_everything() -> Path:
    """server-everything's entry point; fails (never skips) when it is not installed."""
    assert EVERYTHING.exists(), (
        f"{EVERYTHING} is missing: install the peers with `bash .ci/install-peers`"
    )
    return EVERYTHING
