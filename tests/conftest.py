"""Shared fixtures: leak checks after every test, paths to peers and test servers."""

from __future__ import annotations

import http.server
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

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


# Every folder of tests/ is a layer of the library, and its marker (pyproject.toml lists
# them): ``python -m pytest -m unit``, ``-m "not places and not interop"``.
LAYERS = ("unit", "transports", "client", "manager", "toolbox", "cli", "auth", "security",
          "faults", "interop", "places", "project")


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    tests = Path(__file__).resolve().parent
    for item in items:
        layer = item.path.resolve().relative_to(tests).parts[0]
        assert layer in LAYERS, f"{item.nodeid}: a test module lives in a layer's folder"
        item.add_marker(getattr(pytest.mark, layer))


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


def fake_server_for(era: str) -> List[str]:
    """The scriptable stdio test server's command line for a protocol era: stateless
    (``--stateless``) for 2026-07-28, sessions for the versions before it."""
    return fake_server_command(*(["--stateless"] if era == "2026-07-28" else []))


@pytest.fixture
def fake_command() -> List[str]:
    return fake_server_command()


def require_everything() -> Path:
    """server-everything's entry point; fails (never skips) when it is not installed."""
    assert EVERYTHING.exists(), (
        f"{EVERYTHING} is missing: install the peers with `bash .ci/install-peers`"
    )
    return EVERYTHING


@pytest.fixture
def schema_host() -> Iterator[Dict[str, Any]]:
    """A local HTTP server that would serve a JSON schema (``url``), and notes every
    request it gets (``requests``): a client that never fetches leaves it empty."""
    requests: List[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            body = json.dumps({"type": "string"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="schema-host", daemon=True)
    thread.start()
    try:
        yield {"url": f"http://127.0.0.1:{server.server_address[1]}/string.json",
               "requests": requests}
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10.0)
